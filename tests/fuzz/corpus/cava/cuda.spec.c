/*
 * ava spec of the CUDA driver API (cuda.h, CUDA 13): the guest library
 * answers to libcuda.so.1. See include/ava/spec.h for the language.
 *
 * Handles (contexts, modules, functions, streams, events) are ids; device
 * pointers (CUdeviceptr) are the device's own values, which the worker
 * checks against the guest's own memory (cuda_ranges.spec.inc). Module
 * images travel with cuModuleLoadData* (the guest finds their size: fat
 * binary, cubin ELF or PTX text); launches flatten kernelParams by the
 * layout the driver reports (cuFuncGetParamInfo), which the worker checks
 * again.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ava/spec.h>

#include <cuda.h>
#include "cuda_exports.h"

/* ava's fat binary parser: code of the spec, not API. */
ava_begin_utility;
#include "fatbin.h"
ava_end_utility;

ava_name("cuda");
ava_version("13.0");
ava_identifier(cuda);
ava_number(4);
ava_soname("libcuda.so.1");
ava_libs("-lcuda");

ava_type(CUcontext) { ava_handle; }
ava_type(CUmodule) { ava_handle; }
ava_type(CUfunction) { ava_handle; }
/* The legacy and per-thread default streams are values of the driver, not objects. */
ava_type(CUstream) {
	ava_handle;
	ava_handle_value(CU_STREAM_LEGACY);
	ava_handle_value(CU_STREAM_PER_THREAD);
}
ava_type(CUevent) { ava_handle; }
/* A call that cannot reach the worker fails as an unknown error. */
ava_type(CUresult) {
	ava_success(CUDA_SUCCESS);
	ava_error(CUDA_ERROR_UNKNOWN);
}

/* The spec proper, in parts (cava reads "*.spec.inc" as spec text). */
#include "cuda_ranges.spec.inc"
#include "cuda_errors.spec.inc"
#include "cuda_modules.spec.inc"
#include "cuda_api.spec.inc"
