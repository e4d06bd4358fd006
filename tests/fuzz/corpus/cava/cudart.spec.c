/*
 * ava spec of the CUDA runtime API 13 (cuda_runtime_api.h): the guest library
 * answers to libcudart.so.13 with the toolkit's exports (version node
 * libcudart.so.13). See include/ava/spec.h for the language.
 *
 * What nvcc's generated code does at startup (registering fat binaries and
 * kernels) and at each <<<...>>> launch is handled in the guest: the fat
 * binary is parsed there (specs/cudart/fatbin), shipped to the worker the
 * first time one of its kernels runs, and registered with the real runtime
 * there; a launch flattens its arguments by the kernel's parameter layout
 * and travels without waiting. Device pointers are the device's own values
 * (ava_opaque): kernels and copies use them as they are, once the worker has
 * found them in the guest's own memory (cudart_ranges.spec.inc).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <ava/spec.h>

#include <cuda_runtime_api.h>
#include "cudart_exports.h"

/* ava's fat binary parser: code of the spec, not API. */
ava_begin_utility;
#include "fatbin.h"
ava_end_utility;

ava_name("cudart");
ava_version("13.0");
ava_identifier(cudart);
ava_number(3);
ava_soname("libcudart.so.13");
ava_libs("-lcudart");

/* The legacy and per-thread default streams are values of the runtime, not objects. */
ava_type(cudaStream_t) {
	ava_handle;
	ava_handle_value(cudaStreamLegacy);
	ava_handle_value(cudaStreamPerThread);
}
ava_type(cudaEvent_t) { ava_handle; }
/* A call that cannot reach the worker fails as an unknown error. */
ava_type(cudaError_t) {
	ava_success(cudaSuccess);
	ava_error(cudaErrorUnknown);
}

/* The spec proper, in parts (cava reads "*.spec.inc" as spec text). */
#include "cudart_ranges.spec.inc"
#include "cudart_errors.spec.inc"
#include "cudart_launch.spec.inc"
#include "cudart_api.spec.inc"

/* Every export of the toolkit's libcudart.so.13, all in its one version node. */
ava_export_version("libcudart.so.13", __cudaGetKernel, __cudaGetProcAddress, __cudaInitModule,
		   __cudaLaunchKernel, __cudaLaunchKernel_ptsz, __cudaPopCallConfiguration,
		   __cudaPushCallConfiguration, __cudaRegisterFatBinary, __cudaRegisterFatBinaryEnd,
		   __cudaRegisterFunction, __cudaRegisterHostVar, __cudaRegisterManagedVar,
		   __cudaRegisterUnifiedTable, __cudaRegisterVar, __cudaUnregisterFatBinary, cudaArrayGetInfo,
		   cudaArrayGetMemoryRequirements, cudaArrayGetPlane, cudaArrayGetSparseProperties,
		   cudaChooseDevice, cudaCreateChannelDesc, cudaCreateSurfaceObject, cudaCreateTextureObject,
		   cudaCtxResetPersistingL2Cache, cudaDestroyExternalMemory, cudaDestroyExternalSemaphore,
		   cudaDestroySurfaceObject, cudaDestroyTextureObject, cudaDeviceCanAccessPeer,
		   cudaDeviceDisablePeerAccess, cudaDeviceEnablePeerAccess, cudaDeviceFlushGPUDirectRDMAWrites,
		   cudaDeviceGetAttribute, cudaDeviceGetByPCIBusId, cudaDeviceGetCacheConfig,
		   cudaDeviceGetDefaultMemPool, cudaDeviceGetGraphMemAttribute,
		   cudaDeviceGetHostAtomicCapabilities, cudaDeviceGetLimit, cudaDeviceGetMemPool,
		   cudaDeviceGetNvSciSyncAttributes, cudaDeviceGetP2PAtomicCapabilities,
		   cudaDeviceGetP2PAttribute, cudaDeviceGetPCIBusId, cudaDeviceGetSharedMemConfig,
		   cudaDeviceGetStreamPriorityRange, cudaDeviceGetTexture1DLinearMaxWidth,
		   cudaDeviceGraphMemTrim, cudaDeviceRegisterAsyncNotification, cudaDeviceReset,
		   cudaDeviceSetCacheConfig, cudaDeviceSetGraphMemAttribute, cudaDeviceSetLimit,
		   cudaDeviceSetMemPool, cudaDeviceSetSharedMemConfig, cudaDeviceSynchronize,
		   cudaDeviceUnregisterAsyncNotification, cudaDriverGetVersion,
		   cudaEGLStreamConsumerAcquireFrame, cudaEGLStreamConsumerConnect,
		   cudaEGLStreamConsumerConnectWithFlags, cudaEGLStreamConsumerDisconnect,
		   cudaEGLStreamConsumerReleaseFrame, cudaEGLStreamProducerConnect,
		   cudaEGLStreamProducerDisconnect, cudaEGLStreamProducerPresentFrame,
		   cudaEGLStreamProducerReturnFrame, cudaEventCreate, cudaEventCreateFromEGLSync,
		   cudaEventCreateWithFlags, cudaEventDestroy, cudaEventElapsedTime, cudaEventQuery,
		   cudaEventRecord, cudaEventRecordWithFlags, cudaEventRecordWithFlags_ptsz,
		   cudaEventRecord_ptsz, cudaEventSynchronize, cudaExternalMemoryGetMappedBuffer,
		   cudaExternalMemoryGetMappedMipmappedArray, cudaFree, cudaFreeArray, cudaFreeAsync,
		   cudaFreeAsync_ptsz, cudaFreeHost, cudaFreeMipmappedArray, cudaFuncGetAttributes,
		   cudaFuncGetName, cudaFuncGetParamInfo, cudaFuncSetAttribute, cudaFuncSetCacheConfig,
		   cudaFuncSetSharedMemConfig, cudaGLGetDevices, cudaGLMapBufferObject,
		   cudaGLMapBufferObjectAsync, cudaGLRegisterBufferObject, cudaGLSetBufferObjectMapFlags,
		   cudaGLSetGLDevice, cudaGLUnmapBufferObject, cudaGLUnmapBufferObjectAsync,
		   cudaGLUnregisterBufferObject, cudaGetChannelDesc, cudaGetDevice, cudaGetDeviceCount,
		   cudaGetDeviceFlags, cudaGetDeviceProperties, cudaGetDriverEntryPoint,
		   cudaGetDriverEntryPointByVersion, cudaGetDriverEntryPointByVersion_ptsz,
		   cudaGetDriverEntryPoint_ptsz, cudaGetErrorName, cudaGetErrorString, cudaGetExportTable,
		   cudaGetFuncBySymbol, cudaGetKernel, cudaGetLastError, cudaGetMipmappedArrayLevel,
		   cudaGetSurfaceObjectResourceDesc, cudaGetSymbolAddress, cudaGetSymbolSize,
		   cudaGetTextureObjectResourceDesc, cudaGetTextureObjectResourceViewDesc,
		   cudaGetTextureObjectTextureDesc, cudaGraphAddChildGraphNode, cudaGraphAddDependencies,
		   cudaGraphAddEmptyNode, cudaGraphAddEventRecordNode, cudaGraphAddEventWaitNode,
		   cudaGraphAddExternalSemaphoresSignalNode, cudaGraphAddExternalSemaphoresWaitNode,
		   cudaGraphAddHostNode, cudaGraphAddKernelNode, cudaGraphAddMemAllocNode,
		   cudaGraphAddMemFreeNode, cudaGraphAddMemcpyNode, cudaGraphAddMemcpyNode1D,
		   cudaGraphAddMemcpyNodeFromSymbol, cudaGraphAddMemcpyNodeToSymbol, cudaGraphAddMemsetNode,
		   cudaGraphAddNode, cudaGraphChildGraphNodeGetGraph, cudaGraphClone,
		   cudaGraphConditionalHandleCreate, cudaGraphCreate, cudaGraphDebugDotPrint, cudaGraphDestroy,
		   cudaGraphDestroyNode, cudaGraphEventRecordNodeGetEvent, cudaGraphEventRecordNodeSetEvent,
		   cudaGraphEventWaitNodeGetEvent, cudaGraphEventWaitNodeSetEvent,
		   cudaGraphExecChildGraphNodeSetParams, cudaGraphExecDestroy,
		   cudaGraphExecEventRecordNodeSetEvent, cudaGraphExecEventWaitNodeSetEvent,
		   cudaGraphExecExternalSemaphoresSignalNodeSetParams,
		   cudaGraphExecExternalSemaphoresWaitNodeSetParams, cudaGraphExecGetFlags,
		   cudaGraphExecHostNodeSetParams, cudaGraphExecKernelNodeSetParams,
		   cudaGraphExecMemcpyNodeSetParams, cudaGraphExecMemcpyNodeSetParams1D,
		   cudaGraphExecMemcpyNodeSetParamsFromSymbol, cudaGraphExecMemcpyNodeSetParamsToSymbol,
		   cudaGraphExecMemsetNodeSetParams, cudaGraphExecNodeSetParams, cudaGraphExecUpdate,
		   cudaGraphExternalSemaphoresSignalNodeGetParams,
		   cudaGraphExternalSemaphoresSignalNodeSetParams, cudaGraphExternalSemaphoresWaitNodeGetParams,
		   cudaGraphExternalSemaphoresWaitNodeSetParams, cudaGraphGetEdges, cudaGraphGetNodes,
		   cudaGraphGetRootNodes, cudaGraphHostNodeGetParams, cudaGraphHostNodeSetParams,
		   cudaGraphInstantiate, cudaGraphInstantiateWithFlags, cudaGraphInstantiateWithParams,
		   cudaGraphInstantiateWithParams_ptsz, cudaGraphKernelNodeCopyAttributes,
		   cudaGraphKernelNodeGetAttribute, cudaGraphKernelNodeGetParams,
		   cudaGraphKernelNodeSetAttribute, cudaGraphKernelNodeSetParams, cudaGraphLaunch,
		   cudaGraphLaunch_ptsz, cudaGraphMemAllocNodeGetParams, cudaGraphMemFreeNodeGetParams,
		   cudaGraphMemcpyNodeGetParams, cudaGraphMemcpyNodeSetParams, cudaGraphMemcpyNodeSetParams1D,
		   cudaGraphMemcpyNodeSetParamsFromSymbol, cudaGraphMemcpyNodeSetParamsToSymbol,
		   cudaGraphMemsetNodeGetParams, cudaGraphMemsetNodeSetParams, cudaGraphNodeFindInClone,
		   cudaGraphNodeGetDependencies, cudaGraphNodeGetDependentNodes, cudaGraphNodeGetEnabled,
		   cudaGraphNodeGetType, cudaGraphNodeSetEnabled, cudaGraphNodeSetParams,
		   cudaGraphReleaseUserObject, cudaGraphRemoveDependencies, cudaGraphRetainUserObject,
		   cudaGraphUpload, cudaGraphUpload_ptsz, cudaGraphicsEGLRegisterImage,
		   cudaGraphicsGLRegisterBuffer, cudaGraphicsGLRegisterImage, cudaGraphicsMapResources,
		   cudaGraphicsResourceGetMappedEglFrame, cudaGraphicsResourceGetMappedMipmappedArray,
		   cudaGraphicsResourceGetMappedPointer, cudaGraphicsResourceSetMapFlags,
		   cudaGraphicsSubResourceGetMappedArray, cudaGraphicsUnmapResources,
		   cudaGraphicsUnregisterResource, cudaGraphicsVDPAURegisterOutputSurface,
		   cudaGraphicsVDPAURegisterVideoSurface, cudaHostAlloc, cudaHostGetDevicePointer,
		   cudaHostGetFlags, cudaHostRegister, cudaHostUnregister, cudaImportExternalMemory,
		   cudaImportExternalSemaphore, cudaInitDevice, cudaIpcCloseMemHandle, cudaIpcGetEventHandle,
		   cudaIpcGetMemHandle, cudaIpcOpenEventHandle, cudaIpcOpenMemHandle,
		   cudaKernelSetAttributeForDevice, cudaLaunchCooperativeKernel,
		   cudaLaunchCooperativeKernel_ptsz, cudaLaunchHostFunc, cudaLaunchHostFunc_ptsz,
		   cudaLaunchKernel, cudaLaunchKernelExC, cudaLaunchKernelExC_ptsz, cudaLaunchKernel_ptsz,
		   cudaLibraryEnumerateKernels, cudaLibraryGetGlobal, cudaLibraryGetKernel,
		   cudaLibraryGetKernelCount, cudaLibraryGetManaged, cudaLibraryGetUnifiedFunction,
		   cudaLibraryLoadData, cudaLibraryLoadFromFile, cudaLibraryUnload, cudaLogsCurrent,
		   cudaLogsDumpToFile, cudaLogsDumpToMemory, cudaLogsRegisterCallback,
		   cudaLogsUnregisterCallback, cudaMalloc, cudaMalloc3D, cudaMalloc3DArray, cudaMallocArray,
		   cudaMallocAsync, cudaMallocAsync_ptsz, cudaMallocFromPoolAsync, cudaMallocFromPoolAsync_ptsz,
		   cudaMallocHost, cudaMallocManaged, cudaMallocMipmappedArray, cudaMallocPitch, cudaMemAdvise,
		   cudaMemDiscardAndPrefetchBatchAsync, cudaMemDiscardAndPrefetchBatchAsync_ptsz,
		   cudaMemDiscardBatchAsync, cudaMemDiscardBatchAsync_ptsz, cudaMemGetDefaultMemPool,
		   cudaMemGetInfo, cudaMemGetMemPool, cudaMemPoolCreate, cudaMemPoolDestroy,
		   cudaMemPoolExportPointer, cudaMemPoolExportToShareableHandle, cudaMemPoolGetAccess,
		   cudaMemPoolGetAttribute, cudaMemPoolImportFromShareableHandle, cudaMemPoolImportPointer,
		   cudaMemPoolSetAccess, cudaMemPoolSetAttribute, cudaMemPoolTrimTo, cudaMemPrefetchAsync,
		   cudaMemPrefetchAsync_ptsz, cudaMemPrefetchBatchAsync, cudaMemPrefetchBatchAsync_ptsz,
		   cudaMemRangeGetAttribute, cudaMemRangeGetAttributes, cudaMemSetMemPool, cudaMemcpy,
		   cudaMemcpy2D, cudaMemcpy2DArrayToArray, cudaMemcpy2DArrayToArray_ptds, cudaMemcpy2DAsync,
		   cudaMemcpy2DAsync_ptsz, cudaMemcpy2DFromArray, cudaMemcpy2DFromArrayAsync,
		   cudaMemcpy2DFromArrayAsync_ptsz, cudaMemcpy2DFromArray_ptds, cudaMemcpy2DToArray,
		   cudaMemcpy2DToArrayAsync, cudaMemcpy2DToArrayAsync_ptsz, cudaMemcpy2DToArray_ptds,
		   cudaMemcpy2D_ptds, cudaMemcpy3D, cudaMemcpy3DAsync, cudaMemcpy3DAsync_ptsz,
		   cudaMemcpy3DBatchAsync, cudaMemcpy3DBatchAsync_ptsz, cudaMemcpy3DPeer, cudaMemcpy3DPeerAsync,
		   cudaMemcpy3DPeerAsync_ptsz, cudaMemcpy3DPeer_ptds, cudaMemcpy3D_ptds, cudaMemcpyArrayToArray,
		   cudaMemcpyArrayToArray_ptds, cudaMemcpyAsync, cudaMemcpyAsync_ptsz, cudaMemcpyBatchAsync,
		   cudaMemcpyBatchAsync_ptsz, cudaMemcpyFromArray, cudaMemcpyFromArrayAsync,
		   cudaMemcpyFromArrayAsync_ptsz, cudaMemcpyFromArray_ptds, cudaMemcpyFromSymbol,
		   cudaMemcpyFromSymbolAsync, cudaMemcpyFromSymbolAsync_ptsz, cudaMemcpyFromSymbol_ptds,
		   cudaMemcpyPeer, cudaMemcpyPeerAsync, cudaMemcpyToArray, cudaMemcpyToArrayAsync,
		   cudaMemcpyToArrayAsync_ptsz, cudaMemcpyToArray_ptds, cudaMemcpyToSymbol,
		   cudaMemcpyToSymbolAsync, cudaMemcpyToSymbolAsync_ptsz, cudaMemcpyToSymbol_ptds,
		   cudaMemcpy_ptds, cudaMemset, cudaMemset2D, cudaMemset2DAsync, cudaMemset2DAsync_ptsz,
		   cudaMemset2D_ptds, cudaMemset3D, cudaMemset3DAsync, cudaMemset3DAsync_ptsz,
		   cudaMemset3D_ptds, cudaMemsetAsync, cudaMemsetAsync_ptsz, cudaMemset_ptds,
		   cudaMipmappedArrayGetMemoryRequirements, cudaMipmappedArrayGetSparseProperties,
		   cudaOccupancyAvailableDynamicSMemPerBlock, cudaOccupancyMaxActiveBlocksPerMultiprocessor,
		   cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags, cudaOccupancyMaxActiveClusters,
		   cudaOccupancyMaxPotentialClusterSize, cudaPeekAtLastError, cudaPointerGetAttributes,
		   cudaProfilerStart, cudaProfilerStop, cudaRuntimeGetVersion, cudaSetDevice,
		   cudaSetDeviceFlags, cudaSetValidDevices, cudaSignalExternalSemaphoresAsync,
		   cudaSignalExternalSemaphoresAsync_ptsz, cudaStreamAddCallback, cudaStreamAddCallback_ptsz,
		   cudaStreamAttachMemAsync, cudaStreamAttachMemAsync_ptsz, cudaStreamBeginCapture,
		   cudaStreamBeginCaptureToGraph, cudaStreamBeginCaptureToGraph_ptsz,
		   cudaStreamBeginCapture_ptsz, cudaStreamCopyAttributes, cudaStreamCopyAttributes_ptsz,
		   cudaStreamCreate, cudaStreamCreateWithFlags, cudaStreamCreateWithPriority, cudaStreamDestroy,
		   cudaStreamEndCapture, cudaStreamEndCapture_ptsz, cudaStreamGetAttribute,
		   cudaStreamGetAttribute_ptsz, cudaStreamGetCaptureInfo, cudaStreamGetCaptureInfo_ptsz,
		   cudaStreamGetDevice, cudaStreamGetDevice_ptsz, cudaStreamGetFlags, cudaStreamGetFlags_ptsz,
		   cudaStreamGetId, cudaStreamGetId_ptsz, cudaStreamGetPriority, cudaStreamGetPriority_ptsz,
		   cudaStreamIsCapturing, cudaStreamIsCapturing_ptsz, cudaStreamQuery, cudaStreamQuery_ptsz,
		   cudaStreamSetAttribute, cudaStreamSetAttribute_ptsz, cudaStreamSynchronize,
		   cudaStreamSynchronize_ptsz, cudaStreamUpdateCaptureDependencies,
		   cudaStreamUpdateCaptureDependencies_ptsz, cudaStreamWaitEvent, cudaStreamWaitEvent_ptsz,
		   cudaThreadExchangeStreamCaptureMode, cudaUserObjectCreate, cudaUserObjectRelease,
		   cudaUserObjectRetain, cudaVDPAUGetDevice, cudaVDPAUSetVDPAUDevice,
		   cudaWaitExternalSemaphoresAsync, cudaWaitExternalSemaphoresAsync_ptsz);
