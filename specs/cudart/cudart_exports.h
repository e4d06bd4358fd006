/*
 * Functions libcudart.so.13 exports besides those cuda_runtime_api.h
 * declares: the registration and launch entry points nvcc's generated code
 * calls, the per-thread-default-stream variants (_ptsz/_ptds, same
 * signatures as the base functions; generated from cuda_runtime_api.h),
 * graphics interop and the profiler. A guest libcudart.so.13 must export
 * them all (with the version node libcudart.so.13); cava remotes what the
 * headers a spec includes declare, so they are declared here. Interop
 * handles (GL, EGL, VDPAU objects) are declared with plain C types of the
 * same size: those functions are not remoted.
 */
#ifndef AVA_CUDART_EXPORTS_H
#define AVA_CUDART_EXPORTS_H

#include <cuda_runtime_api.h>

/* Registration and launch (crt/host_runtime.h, crt/device_functions.h). */
extern void **__cudaRegisterFatBinary(void *fatCubin);
extern void __cudaRegisterFatBinaryEnd(void **fatCubinHandle);
extern void __cudaUnregisterFatBinary(void **fatCubinHandle);
extern void __cudaRegisterFunction(void **fatCubinHandle, const char *hostFun, char *deviceFun,
				   const char *deviceName, int thread_limit, uint3 *tid, uint3 *bid,
				   dim3 *bDim, dim3 *gDim, int *wSize);
extern void __cudaRegisterVar(void **fatCubinHandle, char *hostVar, char *deviceAddress,
			      const char *deviceName, int ext, size_t size, int constant,
			      int global);
extern void __cudaRegisterManagedVar(void **fatCubinHandle, void **hostVarPtrAddress,
				     char *deviceAddress, const char *deviceName, int ext,
				     size_t size, int constant, int global);
/* Not in the toolkit's headers; only the first argument is relied on. */
extern void __cudaRegisterHostVar(void **fatCubinHandle);
extern void __cudaRegisterUnifiedTable(void **fatCubinHandle);
extern char __cudaInitModule(void **fatCubinHandle);
extern unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem,
					    struct CUstream_st *stream);
extern cudaError_t __cudaPopCallConfiguration(dim3 *gridDim, dim3 *blockDim, size_t *sharedMem,
					      void *stream);
extern cudaError_t __cudaGetKernel(cudaKernel_t *kernel, const void *hostFun);
extern cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void **args,
				      size_t sharedMem, cudaStream_t stream);
extern cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim,
					   void **args, size_t sharedMem, cudaStream_t stream);
extern cudaError_t __cudaGetProcAddress(const char *symbol, void **funcPtr, int cudaVersion,
					unsigned long long flags, void *symbolStatus);

/* Per-thread default stream variants. */
extern cudaError_t cudaEventRecordWithFlags_ptsz(cudaEvent_t event, cudaStream_t stream , unsigned int flags );
extern cudaError_t cudaEventRecord_ptsz(cudaEvent_t event, cudaStream_t stream );
extern cudaError_t cudaFreeAsync_ptsz(void *devPtr, cudaStream_t hStream);
extern cudaError_t cudaGetDriverEntryPointByVersion_ptsz(const char *symbol, void **funcPtr, unsigned int cudaVersion, unsigned long long flags, enum cudaDriverEntryPointQueryResult *driverStatus);
extern cudaError_t cudaGetDriverEntryPoint_ptsz(const char *symbol, void **funcPtr, unsigned long long flags, enum cudaDriverEntryPointQueryResult *driverStatus);
extern cudaError_t cudaGraphInstantiateWithParams_ptsz(cudaGraphExec_t *pGraphExec, cudaGraph_t graph, cudaGraphInstantiateParams *instantiateParams);
extern cudaError_t cudaGraphLaunch_ptsz(cudaGraphExec_t graphExec, cudaStream_t stream);
extern cudaError_t cudaGraphUpload_ptsz(cudaGraphExec_t graphExec, cudaStream_t stream);
extern cudaError_t cudaLaunchCooperativeKernel_ptsz(const void *func, dim3 gridDim, dim3 blockDim, void **args, size_t sharedMem, cudaStream_t stream);
extern cudaError_t cudaLaunchHostFunc_ptsz(cudaStream_t stream, cudaHostFn_t fn, void *userData);
extern cudaError_t cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t *config, const void *func, void **args);
extern cudaError_t cudaLaunchKernel_ptsz(const void *func, dim3 gridDim, dim3 blockDim, void **args, size_t sharedMem, cudaStream_t stream);
extern cudaError_t cudaMallocAsync_ptsz(void **devPtr, size_t size, cudaStream_t hStream);
extern cudaError_t cudaMallocFromPoolAsync_ptsz(void **ptr, size_t size, cudaMemPool_t memPool, cudaStream_t stream);
extern cudaError_t cudaMemDiscardAndPrefetchBatchAsync_ptsz(void **dptrs, size_t *sizes, size_t count, struct cudaMemLocation *prefetchLocs, size_t *prefetchLocIdxs, size_t numPrefetchLocs, unsigned long long flags, cudaStream_t stream);
extern cudaError_t cudaMemDiscardBatchAsync_ptsz(void **dptrs, size_t *sizes, size_t count, unsigned long long flags, cudaStream_t stream);
extern cudaError_t cudaMemPrefetchAsync_ptsz(const void *devPtr, size_t count, struct cudaMemLocation location, unsigned int flags, cudaStream_t stream );
extern cudaError_t cudaMemPrefetchBatchAsync_ptsz(void **dptrs, size_t *sizes, size_t count, struct cudaMemLocation *prefetchLocs, size_t *prefetchLocIdxs, size_t numPrefetchLocs, unsigned long long flags, cudaStream_t stream);
extern cudaError_t cudaMemcpy2DArrayToArray_ptds(cudaArray_t dst, size_t wOffsetDst, size_t hOffsetDst, cudaArray_const_t src, size_t wOffsetSrc, size_t hOffsetSrc, size_t width, size_t height, enum cudaMemcpyKind kind );
extern cudaError_t cudaMemcpy2DAsync_ptsz(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height, enum cudaMemcpyKind kind, cudaStream_t stream );
extern cudaError_t cudaMemcpy2DFromArrayAsync_ptsz(void *dst, size_t dpitch, cudaArray_const_t src, size_t wOffset, size_t hOffset, size_t width, size_t height, enum cudaMemcpyKind kind, cudaStream_t stream );
extern cudaError_t cudaMemcpy2DFromArray_ptds(void *dst, size_t dpitch, cudaArray_const_t src, size_t wOffset, size_t hOffset, size_t width, size_t height, enum cudaMemcpyKind kind);
extern cudaError_t cudaMemcpy2DToArrayAsync_ptsz(cudaArray_t dst, size_t wOffset, size_t hOffset, const void *src, size_t spitch, size_t width, size_t height, enum cudaMemcpyKind kind, cudaStream_t stream );
extern cudaError_t cudaMemcpy2DToArray_ptds(cudaArray_t dst, size_t wOffset, size_t hOffset, const void *src, size_t spitch, size_t width, size_t height, enum cudaMemcpyKind kind);
extern cudaError_t cudaMemcpy2D_ptds(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height, enum cudaMemcpyKind kind);
extern cudaError_t cudaMemcpy3DAsync_ptsz(const struct cudaMemcpy3DParms *p, cudaStream_t stream );
extern cudaError_t cudaMemcpy3DBatchAsync_ptsz(size_t numOps, struct cudaMemcpy3DBatchOp *opList, unsigned long long flags, cudaStream_t stream);
extern cudaError_t cudaMemcpy3DPeerAsync_ptsz(const struct cudaMemcpy3DPeerParms *p, cudaStream_t stream );
extern cudaError_t cudaMemcpy3DPeer_ptds(const struct cudaMemcpy3DPeerParms *p);
extern cudaError_t cudaMemcpy3D_ptds(const struct cudaMemcpy3DParms *p);
extern cudaError_t cudaMemcpyArrayToArray_ptds(cudaArray_t dst, size_t wOffsetDst, size_t hOffsetDst, cudaArray_const_t src, size_t wOffsetSrc, size_t hOffsetSrc, size_t count, enum cudaMemcpyKind kind );
extern cudaError_t cudaMemcpyAsync_ptsz(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind, cudaStream_t stream );
extern cudaError_t cudaMemcpyBatchAsync_ptsz(void *const *dsts, const void *const *srcs, const size_t *sizes, size_t count, struct cudaMemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs, cudaStream_t stream);
extern cudaError_t cudaMemcpyFromArrayAsync_ptsz(void *dst, cudaArray_const_t src, size_t wOffset, size_t hOffset, size_t count, enum cudaMemcpyKind kind, cudaStream_t stream );
extern cudaError_t cudaMemcpyFromArray_ptds(void *dst, cudaArray_const_t src, size_t wOffset, size_t hOffset, size_t count, enum cudaMemcpyKind kind);
extern cudaError_t cudaMemcpyFromSymbolAsync_ptsz(void *dst, const void *symbol, size_t count, size_t offset, enum cudaMemcpyKind kind, cudaStream_t stream );
extern cudaError_t cudaMemcpyFromSymbol_ptds(void *dst, const void *symbol, size_t count, size_t offset , enum cudaMemcpyKind kind );
extern cudaError_t cudaMemcpyToArrayAsync_ptsz(cudaArray_t dst, size_t wOffset, size_t hOffset, const void *src, size_t count, enum cudaMemcpyKind kind, cudaStream_t stream );
extern cudaError_t cudaMemcpyToArray_ptds(cudaArray_t dst, size_t wOffset, size_t hOffset, const void *src, size_t count, enum cudaMemcpyKind kind);
extern cudaError_t cudaMemcpyToSymbolAsync_ptsz(const void *symbol, const void *src, size_t count, size_t offset, enum cudaMemcpyKind kind, cudaStream_t stream );
extern cudaError_t cudaMemcpyToSymbol_ptds(const void *symbol, const void *src, size_t count, size_t offset , enum cudaMemcpyKind kind );
extern cudaError_t cudaMemcpy_ptds(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind);
extern cudaError_t cudaMemset2DAsync_ptsz(void *devPtr, size_t pitch, int value, size_t width, size_t height, cudaStream_t stream );
extern cudaError_t cudaMemset2D_ptds(void *devPtr, size_t pitch, int value, size_t width, size_t height);
extern cudaError_t cudaMemset3DAsync_ptsz(struct cudaPitchedPtr pitchedDevPtr, int value, struct cudaExtent extent, cudaStream_t stream );
extern cudaError_t cudaMemset3D_ptds(struct cudaPitchedPtr pitchedDevPtr, int value, struct cudaExtent extent);
extern cudaError_t cudaMemsetAsync_ptsz(void *devPtr, int value, size_t count, cudaStream_t stream );
extern cudaError_t cudaMemset_ptds(void *devPtr, int value, size_t count);
extern cudaError_t cudaSignalExternalSemaphoresAsync_ptsz(const cudaExternalSemaphore_t *extSemArray, const struct cudaExternalSemaphoreSignalParams *paramsArray, unsigned int numExtSems, cudaStream_t stream );
extern cudaError_t cudaStreamAddCallback_ptsz(cudaStream_t stream, cudaStreamCallback_t callback, void *userData, unsigned int flags);
extern cudaError_t cudaStreamAttachMemAsync_ptsz(cudaStream_t stream, void *devPtr, size_t length , unsigned int flags);
extern cudaError_t cudaStreamBeginCaptureToGraph_ptsz(cudaStream_t stream, cudaGraph_t graph, const cudaGraphNode_t *dependencies, const cudaGraphEdgeData *dependencyData, size_t numDependencies, enum cudaStreamCaptureMode mode);
extern cudaError_t cudaStreamBeginCapture_ptsz(cudaStream_t stream, enum cudaStreamCaptureMode mode);
extern cudaError_t cudaStreamCopyAttributes_ptsz(cudaStream_t dst, cudaStream_t src);
extern cudaError_t cudaStreamEndCapture_ptsz(cudaStream_t stream, cudaGraph_t *pGraph);
extern cudaError_t cudaStreamGetAttribute_ptsz( cudaStream_t hStream, cudaLaunchAttributeID attr, cudaLaunchAttributeValue *value_out);
extern cudaError_t cudaStreamGetCaptureInfo_ptsz(cudaStream_t stream, enum cudaStreamCaptureStatus *captureStatus_out, unsigned long long *id_out , cudaGraph_t *graph_out , const cudaGraphNode_t **dependencies_out , const cudaGraphEdgeData **edgeData_out , size_t *numDependencies_out );
extern cudaError_t cudaStreamGetDevice_ptsz(cudaStream_t hStream, int *device);
extern cudaError_t cudaStreamGetFlags_ptsz(cudaStream_t hStream, unsigned int *flags);
extern cudaError_t cudaStreamGetId_ptsz(cudaStream_t hStream, unsigned long long *streamId);
extern cudaError_t cudaStreamGetPriority_ptsz(cudaStream_t hStream, int *priority);
extern cudaError_t cudaStreamIsCapturing_ptsz(cudaStream_t stream, enum cudaStreamCaptureStatus *pCaptureStatus);
extern cudaError_t cudaStreamQuery_ptsz(cudaStream_t stream);
extern cudaError_t cudaStreamSetAttribute_ptsz( cudaStream_t hStream, cudaLaunchAttributeID attr, const cudaLaunchAttributeValue *value);
extern cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream);
extern cudaError_t cudaStreamUpdateCaptureDependencies_ptsz(cudaStream_t stream, cudaGraphNode_t *dependencies, const cudaGraphEdgeData *dependencyData, size_t numDependencies, unsigned int flags );
extern cudaError_t cudaStreamWaitEvent_ptsz(cudaStream_t stream, cudaEvent_t event, unsigned int flags );
extern cudaError_t cudaWaitExternalSemaphoresAsync_ptsz(const cudaExternalSemaphore_t *extSemArray, const struct cudaExternalSemaphoreWaitParams *paramsArray, unsigned int numExtSems, cudaStream_t stream );

/* Graphics interop (cuda_gl_interop.h, cuda_egl_interop.h, cuda_vdpau_interop.h). */
extern cudaError_t cudaGLGetDevices(unsigned int *pCudaDeviceCount, int *pCudaDevices,
				    unsigned int cudaDeviceCount, int deviceList);
extern cudaError_t cudaGraphicsGLRegisterImage(struct cudaGraphicsResource **resource,
					       unsigned int image, unsigned int target,
					       unsigned int flags);
extern cudaError_t cudaGraphicsGLRegisterBuffer(struct cudaGraphicsResource **resource,
						unsigned int buffer, unsigned int flags);
extern cudaError_t cudaGLSetGLDevice(int device);
extern cudaError_t cudaGLRegisterBufferObject(unsigned int bufObj);
extern cudaError_t cudaGLMapBufferObject(void **devPtr, unsigned int bufObj);
extern cudaError_t cudaGLUnmapBufferObject(unsigned int bufObj);
extern cudaError_t cudaGLUnregisterBufferObject(unsigned int bufObj);
extern cudaError_t cudaGLSetBufferObjectMapFlags(unsigned int bufObj, unsigned int flags);
extern cudaError_t cudaGLMapBufferObjectAsync(void **devPtr, unsigned int bufObj,
					      cudaStream_t stream);
extern cudaError_t cudaGLUnmapBufferObjectAsync(unsigned int bufObj, cudaStream_t stream);
extern cudaError_t cudaGraphicsEGLRegisterImage(struct cudaGraphicsResource **pCudaResource,
						void *image, unsigned int flags);
extern cudaError_t cudaEGLStreamConsumerConnect(void *conn, void *eglStream);
extern cudaError_t cudaEGLStreamConsumerConnectWithFlags(void *conn, void *eglStream,
							 unsigned int flags);
extern cudaError_t cudaEGLStreamConsumerDisconnect(void *conn);
extern cudaError_t cudaEGLStreamConsumerAcquireFrame(void *conn, void *pCudaResource,
						     void *pStream, unsigned int timeout);
extern cudaError_t cudaEGLStreamConsumerReleaseFrame(void *conn, void *pCudaResource,
						     void *pStream);
extern cudaError_t cudaEGLStreamProducerConnect(void *conn, void *eglStream, int width,
						int height);
extern cudaError_t cudaEGLStreamProducerDisconnect(void *conn);
extern cudaError_t cudaEGLStreamProducerPresentFrame(void *conn, void *eglframe, void *pStream);
extern cudaError_t cudaEGLStreamProducerReturnFrame(void *conn, void *eglframe, void *pStream);
extern cudaError_t cudaGraphicsResourceGetMappedEglFrame(void *eglFrame,
							 struct cudaGraphicsResource *resource,
							 unsigned int index, unsigned int mipLevel);
extern cudaError_t cudaEventCreateFromEGLSync(cudaEvent_t *phEvent, void *eglSync,
					      unsigned int flags);
extern cudaError_t cudaVDPAUGetDevice(int *device, unsigned int vdpDevice,
				      void *vdpGetProcAddress);
extern cudaError_t cudaVDPAUSetVDPAUDevice(int device, unsigned int vdpDevice,
					   void *vdpGetProcAddress);
extern cudaError_t cudaGraphicsVDPAURegisterVideoSurface(struct cudaGraphicsResource **resource,
							 unsigned int vdpSurface,
							 unsigned int flags);
extern cudaError_t cudaGraphicsVDPAURegisterOutputSurface(struct cudaGraphicsResource **resource,
							  unsigned int vdpSurface,
							  unsigned int flags);

/* Profiler (cuda_profiler_api.h). */
extern cudaError_t cudaProfilerStart(void);
extern cudaError_t cudaProfilerStop(void);

#endif /* AVA_CUDART_EXPORTS_H */
