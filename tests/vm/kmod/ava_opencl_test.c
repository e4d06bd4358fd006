// SPDX-License-Identifier: GPL-2.0
/*
 * ava_opencl_test.ko: kernel code running an OpenCL vector add through
 * ava_opencl.ko (cava's kernel backend of specs/opencl) and ava.ko's kernel
 * connection to the OpenCL worker (PoCL) on the host. At init it gets the
 * platform and device, creates a context and a queue, builds the program
 * from source, fills two buffers (one at creation, one by a write), runs the
 * kernel over T_N elements, reads the sum back, checks every element here,
 * releases every object and reports one line to the kernel log:
 *
 *   ava_opencl_test: PASS vector add of <n> elements on <device>    or
 *   ava_opencl_test: FAIL <step>: <details>
 *
 * Init succeeds either way, so the module can be unloaded; nothing it
 * created outlives init. Integers only: no floating point in the kernel.
 */
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "opencl_kern.h"

#define T_NAME "ava_opencl_test"
#define T_N 4096u
#define T_GROUP 64u

static const char t_source[] =
	"__kernel void vadd(__global const int *a, __global const int *b, __global int *c)\n"
	"{\n"
	"\tsize_t i = get_global_id(0);\n"
	"\tc[i] = a[i] + b[i];\n"
	"}\n";

struct t_cl {
	cl_platform_id platform;
	cl_device_id device;
	cl_context context;
	cl_command_queue queue;
	cl_program program;
	cl_kernel kernel;
	cl_mem a, b, c;
	int32_t *ha, *hb, *hc;
	char device_name[256];
};

/* The first failure, reported once: later steps are skipped. */
static int t_failed;

#define T_STEP(call, fmt, ...)                                                            \
	({                                                                                \
		cl_int t_rc_ = t_failed ? CL_SUCCESS : (call);                            \
		if (!t_failed && t_rc_ != CL_SUCCESS) {                                   \
			t_failed = 1;                                                     \
			pr_err(T_NAME ": FAIL " fmt ": cl error %d\n", ##__VA_ARGS__, t_rc_); \
		}                                                                         \
		t_rc_;                                                                    \
	})

static void t_build_log(struct t_cl *t)
{
	size_t n = 0;
	char *log;

	if (ava_clGetProgramBuildInfo(t->program, t->device, CL_PROGRAM_BUILD_LOG, 0, NULL, &n) !=
		    CL_SUCCESS ||
	    n == 0 || n > 65536)
		return;
	log = kvzalloc(n + 1, GFP_KERNEL);
	if (!log)
		return;
	if (ava_clGetProgramBuildInfo(t->program, t->device, CL_PROGRAM_BUILD_LOG, n, log, NULL) ==
	    CL_SUCCESS)
		pr_err(T_NAME ": build log:\n%s\n", log);
	kvfree(log);
}

static void t_setup(struct t_cl *t)
{
	cl_uint n = 0;
	cl_int err = CL_SUCCESS;

	T_STEP(ava_clGetPlatformIDs(1, &t->platform, &n), "clGetPlatformIDs");
	if (!t_failed && n == 0) {
		t_failed = 1;
		pr_err(T_NAME ": FAIL clGetPlatformIDs: no platform\n");
	}
	T_STEP(ava_clGetDeviceIDs(t->platform, CL_DEVICE_TYPE_ALL, 1, &t->device, &n),
	       "clGetDeviceIDs");
	T_STEP(ava_clGetDeviceInfo(t->device, CL_DEVICE_NAME, sizeof(t->device_name) - 1,
				   t->device_name, NULL),
	       "clGetDeviceInfo(CL_DEVICE_NAME)");
	if (t_failed)
		return;
	t->context = ava_clCreateContext(NULL, 1, &t->device, NULL, NULL, &err);
	T_STEP(t->context ? err : (err ? err : CL_INVALID_CONTEXT), "clCreateContext");
	if (t_failed)
		return;
	t->queue = ava_clCreateCommandQueueWithProperties(t->context, t->device, NULL, &err);
	T_STEP(t->queue ? err : (err ? err : CL_INVALID_COMMAND_QUEUE),
	       "clCreateCommandQueueWithProperties");
	if (t_failed)
		return;
	/* clCreateProgramWithSource joins strings in user space; one string goes straight. */
	t->program = ava_ava_cl_create_program_with_source(t->context, t_source,
							   sizeof(t_source) - 1, &err);
	T_STEP(t->program ? err : (err ? err : CL_INVALID_PROGRAM), "create program from source");
	if (t_failed)
		return;
	if (T_STEP(ava_clBuildProgram(t->program, 1, &t->device, "", NULL, NULL),
		   "clBuildProgram") != CL_SUCCESS) {
		t_build_log(t);
		return;
	}
	t->kernel = ava_clCreateKernel(t->program, "vadd", &err);
	T_STEP(t->kernel ? err : (err ? err : CL_INVALID_KERNEL), "clCreateKernel(vadd)");
}

static void t_run(struct t_cl *t)
{
	const size_t bytes = T_N * sizeof(int32_t);
	const size_t global = T_N, local = T_GROUP;
	cl_int err = CL_SUCCESS;
	unsigned int i, bad = 0;

	for (i = 0; i < T_N; i++) {
		t->ha[i] = (int32_t)(i * 3u) - 5000;
		t->hb[i] = (int32_t)(i * i % 7919u) + 17;
		t->hc[i] = -1;
	}
	t->a = ava_clCreateBuffer(t->context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, bytes, t->ha,
				  &err);
	T_STEP(t->a ? err : (err ? err : CL_INVALID_MEM_OBJECT), "clCreateBuffer(a, COPY_HOST_PTR)");
	if (t_failed)
		return;
	t->b = ava_clCreateBuffer(t->context, CL_MEM_READ_ONLY, bytes, NULL, &err);
	T_STEP(t->b ? err : (err ? err : CL_INVALID_MEM_OBJECT), "clCreateBuffer(b)");
	if (t_failed)
		return;
	t->c = ava_clCreateBuffer(t->context, CL_MEM_WRITE_ONLY, bytes, NULL, &err);
	T_STEP(t->c ? err : (err ? err : CL_INVALID_MEM_OBJECT), "clCreateBuffer(c)");
	T_STEP(ava_clEnqueueWriteBuffer(t->queue, t->b, CL_TRUE, 0, bytes, t->hb, 0, NULL, NULL),
	       "clEnqueueWriteBuffer(b)");
	T_STEP(ava_clSetKernelArg(t->kernel, 0, sizeof(t->a), &t->a), "clSetKernelArg(0)");
	T_STEP(ava_clSetKernelArg(t->kernel, 1, sizeof(t->b), &t->b), "clSetKernelArg(1)");
	T_STEP(ava_clSetKernelArg(t->kernel, 2, sizeof(t->c), &t->c), "clSetKernelArg(2)");
	T_STEP(ava_clEnqueueNDRangeKernel(t->queue, t->kernel, 1, NULL, &global, &local, 0, NULL,
					  NULL),
	       "clEnqueueNDRangeKernel");
	T_STEP(ava_clEnqueueReadBuffer(t->queue, t->c, CL_TRUE, 0, bytes, t->hc, 0, NULL, NULL),
	       "clEnqueueReadBuffer(c)");
	T_STEP(ava_clFinish(t->queue), "clFinish");
	if (t_failed)
		return;
	for (i = 0; i < T_N; i++) {
		const int32_t want = t->ha[i] + t->hb[i];

		if (t->hc[i] == want)
			continue;
		if (bad++ < 8)
			pr_err(T_NAME ": c[%u] = %d, want %d + %d = %d\n", i, t->hc[i], t->ha[i],
			       t->hb[i], want);
	}
	if (bad) {
		t_failed = 1;
		pr_err(T_NAME ": FAIL result check: %u of %u elements wrong\n", bad, T_N);
	}
}

/* Every object that exists is released, after a failure too; a failed release fails the test. */
static void t_released(cl_int rc, const char *what)
{
	if (rc == CL_SUCCESS)
		return;
	t_failed = 1;
	pr_err(T_NAME ": FAIL %s: cl error %d\n", what, rc);
}

static void t_release(struct t_cl *t)
{
	if (t->c)
		t_released(ava_clReleaseMemObject(t->c), "clReleaseMemObject(c)");
	if (t->b)
		t_released(ava_clReleaseMemObject(t->b), "clReleaseMemObject(b)");
	if (t->a)
		t_released(ava_clReleaseMemObject(t->a), "clReleaseMemObject(a)");
	if (t->kernel)
		t_released(ava_clReleaseKernel(t->kernel), "clReleaseKernel");
	if (t->program)
		t_released(ava_clReleaseProgram(t->program), "clReleaseProgram");
	if (t->queue)
		t_released(ava_clReleaseCommandQueue(t->queue), "clReleaseCommandQueue");
	if (t->context)
		t_released(ava_clReleaseContext(t->context), "clReleaseContext");
}

static int __init ava_opencl_test_init(void)
{
	struct t_cl *t = kzalloc(sizeof(*t), GFP_KERNEL);

	if (!t) {
		pr_err(T_NAME ": FAIL setup: out of memory\n");
		return 0;
	}
	t->ha = kvmalloc_array(T_N, sizeof(int32_t), GFP_KERNEL);
	t->hb = kvmalloc_array(T_N, sizeof(int32_t), GFP_KERNEL);
	t->hc = kvmalloc_array(T_N, sizeof(int32_t), GFP_KERNEL);
	if (!t->ha || !t->hb || !t->hc) {
		t_failed = 1;
		pr_err(T_NAME ": FAIL setup: out of memory\n");
	}
	t_setup(t);
	t_run(t);
	t_release(t);
	if (!t_failed)
		pr_info(T_NAME ": PASS vector add of %u elements on %s\n", T_N, t->device_name);
	kvfree(t->ha);
	kvfree(t->hb);
	kvfree(t->hc);
	kfree(t);
	return 0;
}

static void __exit ava_opencl_test_exit(void)
{
}

module_init(ava_opencl_test_init);
module_exit(ava_opencl_test_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("ava: an OpenCL vector add from kernel space through ava_opencl.ko");
MODULE_SOFTDEP("pre: ava_opencl");
