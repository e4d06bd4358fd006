/*
 * Functions the driver library libcuda.so.1 exports besides those cuda.h
 * declares (older ABI versions of functions cuda.h now maps to _v2.._vN,
 * and per-thread-stream variants). A guest libcuda.so.1 must export them for
 * programs linked against older toolkits; none is remoted, so a prototype
 * without parameters is enough: the stub ignores its arguments. The list is
 * the toolkit stub library's exports (lib64/stubs/libcuda.so) minus cuda.h,
 * minus the old ABI names cuda.h turns into macros (cuMemAlloc ->
 * cuMemAlloc_v2): those cannot be defined next to cuda.h and are not
 * exported (programs built with a CUDA 12/13 toolkit never ask for them).
 */
#ifndef AVA_CUDA_EXPORTS_H
#define AVA_CUDA_EXPORTS_H

#include <cuda.h>

extern CUresult cuCtxCreate_v2(void);
extern CUresult cuCtxCreate_v3(void);
extern CUresult cuEventRecordWithFlags_ptsz(void);
extern CUresult cuEventRecord_ptsz(void);
extern CUresult cuGraphInstantiateWithParams_ptsz(void);
extern CUresult cuGraphInstantiate_v2(void);
extern CUresult cuGraphLaunch_ptsz(void);
extern CUresult cuGraphUpload_ptsz(void);
extern CUresult cuGraphicsMapResources_ptsz(void);
extern CUresult cuGraphicsUnmapResources_ptsz(void);
extern CUresult cuLaunchCooperativeKernel_ptsz(void);
extern CUresult cuLaunchHostFunc_ptsz(void);
extern CUresult cuLaunchKernelEx_ptsz(void);
extern CUresult cuLaunchKernel_ptsz(void);
extern CUresult cuMemAllocAsync_ptsz(void);
extern CUresult cuMemAllocFromPoolAsync_ptsz(void);
extern CUresult cuMemBatchDecompressAsync_ptsz(void);
extern CUresult cuMemDiscardAndPrefetchBatchAsync_ptsz(void);
extern CUresult cuMemDiscardBatchAsync_ptsz(void);
extern CUresult cuMemFreeAsync_ptsz(void);
extern CUresult cuMemMapArrayAsync_ptsz(void);
extern CUresult cuMemPrefetchAsync_ptsz(void);
extern CUresult cuMemPrefetchAsync_v2_ptsz(void);
extern CUresult cuMemPrefetchBatchAsync_ptsz(void);
extern CUresult cuMemcpy2DAsync_v2_ptsz(void);
extern CUresult cuMemcpy2DUnaligned_v2_ptds(void);
extern CUresult cuMemcpy2D_v2_ptds(void);
extern CUresult cuMemcpy3DAsync_v2_ptsz(void);
extern CUresult cuMemcpy3DBatchAsync_ptsz(void);
extern CUresult cuMemcpy3DBatchAsync_v2_ptsz(void);
extern CUresult cuMemcpy3DPeerAsync_ptsz(void);
extern CUresult cuMemcpy3DPeer_ptds(void);
extern CUresult cuMemcpy3D_v2_ptds(void);
extern CUresult cuMemcpyAsync_ptsz(void);
extern CUresult cuMemcpyAtoA_v2_ptds(void);
extern CUresult cuMemcpyAtoD_v2_ptds(void);
extern CUresult cuMemcpyAtoHAsync_v2_ptsz(void);
extern CUresult cuMemcpyAtoH_v2_ptds(void);
extern CUresult cuMemcpyBatchAsync_ptsz(void);
extern CUresult cuMemcpyBatchAsync_v2_ptsz(void);
extern CUresult cuMemcpyDtoA_v2_ptds(void);
extern CUresult cuMemcpyDtoDAsync_v2_ptsz(void);
extern CUresult cuMemcpyDtoD_v2_ptds(void);
extern CUresult cuMemcpyDtoHAsync_v2_ptsz(void);
extern CUresult cuMemcpyDtoH_v2_ptds(void);
extern CUresult cuMemcpyHtoAAsync_v2_ptsz(void);
extern CUresult cuMemcpyHtoA_v2_ptds(void);
extern CUresult cuMemcpyHtoDAsync_v2_ptsz(void);
extern CUresult cuMemcpyHtoD_v2_ptds(void);
extern CUresult cuMemcpyPeerAsync_ptsz(void);
extern CUresult cuMemcpyPeer_ptds(void);
extern CUresult cuMemcpy_ptds(void);
extern CUresult cuMemsetD16Async_ptsz(void);
extern CUresult cuMemsetD16_v2_ptds(void);
extern CUresult cuMemsetD2D16Async_ptsz(void);
extern CUresult cuMemsetD2D16_v2_ptds(void);
extern CUresult cuMemsetD2D32Async_ptsz(void);
extern CUresult cuMemsetD2D32_v2_ptds(void);
extern CUresult cuMemsetD2D8Async_ptsz(void);
extern CUresult cuMemsetD2D8_v2_ptds(void);
extern CUresult cuMemsetD32Async_ptsz(void);
extern CUresult cuMemsetD32_v2_ptds(void);
extern CUresult cuMemsetD8Async_ptsz(void);
extern CUresult cuMemsetD8_v2_ptds(void);
extern CUresult cuProfilerInitialize(void);
extern CUresult cuProfilerStart(void);
extern CUresult cuProfilerStop(void);
extern CUresult cuSignalExternalSemaphoresAsync_ptsz(void);
extern CUresult cuStreamAddCallback_ptsz(void);
extern CUresult cuStreamAttachMemAsync_ptsz(void);
extern CUresult cuStreamBatchMemOp_ptsz(void);
extern CUresult cuStreamBatchMemOp_v2_ptsz(void);
extern CUresult cuStreamBeginCaptureToGraph_ptsz(void);
extern CUresult cuStreamBeginCapture_ptsz(void);
extern CUresult cuStreamBeginCapture_v2_ptsz(void);
extern CUresult cuStreamCopyAttributes_ptsz(void);
extern CUresult cuStreamEndCapture_ptsz(void);
extern CUresult cuStreamGetAttribute_ptsz(void);
extern CUresult cuStreamGetCaptureInfo_ptsz(void);
extern CUresult cuStreamGetCaptureInfo_v2(void);
extern CUresult cuStreamGetCaptureInfo_v2_ptsz(void);
extern CUresult cuStreamGetCaptureInfo_v3_ptsz(void);
extern CUresult cuStreamGetCtx_ptsz(void);
extern CUresult cuStreamGetCtx_v2_ptsz(void);
extern CUresult cuStreamGetDevice_ptsz(void);
extern CUresult cuStreamGetFlags_ptsz(void);
extern CUresult cuStreamGetId_ptsz(void);
extern CUresult cuStreamGetPriority_ptsz(void);
extern CUresult cuStreamIsCapturing_ptsz(void);
extern CUresult cuStreamQuery_ptsz(void);
extern CUresult cuStreamSetAttribute_ptsz(void);
extern CUresult cuStreamSynchronize_ptsz(void);
extern CUresult cuStreamUpdateCaptureDependencies_ptsz(void);
extern CUresult cuStreamUpdateCaptureDependencies_v2_ptsz(void);
extern CUresult cuStreamWaitEvent_ptsz(void);
extern CUresult cuStreamWaitValue32_ptsz(void);
extern CUresult cuStreamWaitValue32_v2_ptsz(void);
extern CUresult cuStreamWaitValue64_ptsz(void);
extern CUresult cuStreamWaitValue64_v2_ptsz(void);
extern CUresult cuStreamWriteValue32_ptsz(void);
extern CUresult cuStreamWriteValue32_v2_ptsz(void);
extern CUresult cuStreamWriteValue64_ptsz(void);
extern CUresult cuStreamWriteValue64_v2_ptsz(void);
extern CUresult cuTexRefSetAddress2D_v2(void);
extern CUresult cuWaitExternalSemaphoresAsync_ptsz(void);

#endif /* AVA_CUDA_EXPORTS_H */
