/*
 * ava spec of OpenCL 3.0 (CL/cl.h) as PoCL implements it: the guest library
 * answers to libOpenCL.so.1 with the ICD loader's exports and symbol
 * versions. See include/ava/spec.h for the language.
 *
 * Where OpenCL hides handles or guest memory inside data, the spec does the
 * work in code: property lists and image descriptors carry handles (the
 * worker translates them), kernel arguments may be cl_mem or cl_sampler
 * handles (the worker recognises ids; ids carry a random tag so a by-value
 * argument is not mistaken for one), info queries return handles (the worker
 * turns them into ids), arrays of strings and binaries are flattened by the
 * guest, and mapping is done in the guest with reads and writes.
 */
#define CL_TARGET_OPENCL_VERSION 300
#define CL_USE_DEPRECATED_OPENCL_1_0_APIS
#define CL_USE_DEPRECATED_OPENCL_1_1_APIS
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#define CL_USE_DEPRECATED_OPENCL_2_0_APIS
#define CL_USE_DEPRECATED_OPENCL_2_1_APIS
#define CL_USE_DEPRECATED_OPENCL_2_2_APIS
#include <pthread.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <ava/spec.h>

#include <CL/cl.h>
#include "icd_exports.h"

/* The worker's check of PoCL binaries: code of the spec, not API. */
ava_begin_utility;
#include "poclbin.h"
ava_end_utility;

ava_name("opencl");
ava_version("3.0");
ava_identifier(opencl);
ava_number(2);
ava_soname("libOpenCL.so.1");
ava_libs("-lOpenCL");

ava_type(cl_platform_id) { ava_handle; }
ava_type(cl_device_id) { ava_handle; }
ava_type(cl_context) { ava_handle; }
ava_type(cl_command_queue) { ava_handle; }
ava_type(cl_mem) { ava_handle; }
ava_type(cl_program) { ava_handle; }
ava_type(cl_kernel) { ava_handle; }
ava_type(cl_event) { ava_handle; }
ava_type(cl_sampler) { ava_handle; }
/* A call that cannot reach the worker fails as if the host ran out of resources. */
ava_type(cl_int) {
	ava_success(CL_SUCCESS);
	ava_error(CL_OUT_OF_RESOURCES);
}

/* The spec proper, in parts (cava reads "*.spec.inc" as spec text). */
#include "opencl_util.spec.inc"
#include "opencl_keep.spec.inc"
#include "opencl_staged.spec.inc"
#include "opencl_heap.spec.inc"
#include "opencl_guest.spec.inc"
#include "opencl_platform.spec.inc"
#include "opencl_memory.spec.inc"
#include "opencl_program.spec.inc"
#include "opencl_enqueue.spec.inc"
#include "opencl_svm.spec.inc"
#include "opencl_ext.spec.inc"

/* The symbol versions of ocl-icd's libOpenCL.so.1. */
ava_export_version("OPENCL_1.0", clBuildProgram, clCreateBuffer, clCreateCommandQueue,
		   clCreateContext, clCreateContextFromType, clCreateEventFromEGLSyncKHR,
		   clCreateFromEGLImageKHR, clCreateFromGLBuffer, clCreateFromGLRenderbuffer,
		   clCreateFromGLTexture2D, clCreateFromGLTexture3D, clCreateImage2D,
		   clCreateImage3D, clCreateKernel, clCreateKernelsInProgram,
		   clCreateProgramWithBinary, clCreateProgramWithSource, clCreateSampler,
		   clEnqueueAcquireEGLObjectsKHR, clEnqueueAcquireGLObjects, clEnqueueBarrier,
		   clEnqueueCopyBuffer, clEnqueueCopyBufferToImage, clEnqueueCopyImage,
		   clEnqueueCopyImageToBuffer, clEnqueueMapBuffer, clEnqueueMapImage,
		   clEnqueueMarker, clEnqueueNDRangeKernel, clEnqueueNativeKernel,
		   clEnqueueReadBuffer, clEnqueueReadImage, clEnqueueReleaseEGLObjectsKHR,
		   clEnqueueReleaseGLObjects, clEnqueueTask, clEnqueueUnmapMemObject,
		   clEnqueueWaitForEvents, clEnqueueWriteBuffer, clEnqueueWriteImage, clFinish,
		   clFlush, clGetCommandQueueInfo, clGetContextInfo, clGetDeviceIDs,
		   clGetDeviceInfo, clGetEventInfo, clGetEventProfilingInfo,
		   clGetExtensionFunctionAddress, clGetGLContextInfoKHR, clGetGLObjectInfo,
		   clGetGLTextureInfo, clGetImageInfo, clGetKernelInfo, clGetKernelWorkGroupInfo,
		   clGetMemObjectInfo, clGetPlatformIDs, clGetPlatformInfo, clGetProgramBuildInfo,
		   clGetProgramInfo, clGetSamplerInfo, clGetSupportedImageFormats,
		   clReleaseCommandQueue, clReleaseContext, clReleaseEvent, clReleaseKernel,
		   clReleaseMemObject, clReleaseProgram, clReleaseSampler, clRetainCommandQueue,
		   clRetainContext, clRetainEvent, clRetainKernel, clRetainMemObject,
		   clRetainProgram, clRetainSampler, clSetCommandQueueProperty, clSetKernelArg,
		   clUnloadCompiler, clWaitForEvents);
ava_export_version("OPENCL_1.1", clCreateEventFromGLsyncKHR, clCreateSubBuffer,
		   clCreateSubDevicesEXT, clCreateUserEvent, clEnqueueCopyBufferRect,
		   clEnqueueReadBufferRect, clEnqueueWriteBufferRect, clReleaseDeviceEXT,
		   clRetainDeviceEXT, clSetEventCallback, clSetMemObjectDestructorCallback,
		   clSetUserEventStatus);
ava_export_version("OPENCL_1.2", clCompileProgram, clCreateFromGLTexture, clCreateImage,
		   clCreateProgramWithBuiltInKernels, clCreateSubDevices,
		   clEnqueueBarrierWithWaitList, clEnqueueFillBuffer, clEnqueueFillImage,
		   clEnqueueMarkerWithWaitList, clEnqueueMigrateMemObjects,
		   clGetExtensionFunctionAddressForPlatform, clGetKernelArgInfo, clLinkProgram,
		   clReleaseDevice, clRetainDevice, clUnloadPlatformCompiler);
ava_export_version("OPENCL_2.0", clCreateCommandQueueWithProperties, clCreatePipe,
		   clCreateSamplerWithProperties, clEnqueueSVMFree, clEnqueueSVMMap,
		   clEnqueueSVMMemFill, clEnqueueSVMMemcpy, clEnqueueSVMUnmap,
		   clGetKernelSubGroupInfoKHR, clGetPipeInfo, clSVMAlloc, clSVMFree,
		   clSetKernelArgSVMPointer, clSetKernelExecInfo);
ava_export_version("OPENCL_2.1", clCloneKernel, clCreateProgramWithIL, clEnqueueSVMMigrateMem,
		   clGetDeviceAndHostTimer, clGetHostTimer, clGetKernelSubGroupInfo,
		   clSetDefaultDeviceCommandQueue);
ava_export_version("OPENCL_2.2", clSetProgramReleaseCallback, clSetProgramSpecializationConstant);
ava_export_version("OPENCL_3.0", clCreateBufferWithProperties, clCreateImageWithProperties,
		   clSetContextDestructorCallback);
