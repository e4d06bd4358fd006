/* SPDX-License-Identifier: MIT */
/*
 * ocl_quota: runs in the test guest under a 1 MiB device-memory quota
 * (`avactl policy all mem-quota 1048576`). Buffers are charged while they
 * live (clCreateBuffer's ava_allocates_resource): a 2 MiB buffer is refused,
 * two of 512 KiB fit, a third byte does not, and a release (the last one of
 * a retained buffer) makes room again. Prints one line per step; exit 0 when
 * each went as the quota says.
 */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <stdio.h>

static int failures;

static cl_mem create(cl_context ctx, size_t size, int want_ok, const char *what)
{
	cl_int err = CL_SUCCESS;
	cl_mem m = clCreateBuffer(ctx, CL_MEM_READ_WRITE, size, NULL, &err);
	int ok = m != NULL && err == CL_SUCCESS;
	/* a refusal is NULL with an error code, never NULL with CL_SUCCESS */
	int refused = m == NULL && err != CL_SUCCESS;

	printf("%s (%zu bytes): %s (%d)%s\n", what, size, ok ? "created" : "refused", err,
	       (want_ok ? ok : refused) ? "" : " UNEXPECTED");
	failures += want_ok ? !ok : !refused;
	return m;
}

int main(void)
{
	cl_platform_id platform;
	cl_device_id device;
	cl_int err;
	cl_context ctx;
	cl_mem a, b;

	if (clGetPlatformIDs(1, &platform, NULL) != CL_SUCCESS ||
	    clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, NULL) != CL_SUCCESS) {
		fprintf(stderr, "ocl_quota: no OpenCL device\n");
		return 2;
	}
	ctx = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
	if (!ctx) {
		fprintf(stderr, "ocl_quota: clCreateContext: %d\n", err);
		return 2;
	}
	create(ctx, 2u << 20, 0, "over the quota");
	a = create(ctx, 512u << 10, 1, "first half");
	b = create(ctx, 512u << 10, 1, "second half");
	create(ctx, 1, 0, "one byte more");
	/* a retained buffer stays charged until its last release */
	clRetainMemObject(a);
	clReleaseMemObject(a);
	create(ctx, 1, 0, "one byte more after a release that is not the last");
	clReleaseMemObject(a);
	a = create(ctx, 512u << 10, 1, "after the last release");
	clReleaseMemObject(a);
	clReleaseMemObject(b);
	clReleaseContext(ctx);
	return failures ? 1 : 0;
}
