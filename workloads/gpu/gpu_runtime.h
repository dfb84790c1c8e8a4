/* SPDX-License-Identifier: Apache-2.0 */
/* The one portability header between CUDA and HIP. GPU sources include only this, use the gpu*
 * names below, and build unchanged with nvcc (CUDA) and hipcc (ROCm). Anything vendor-specific
 * beyond the runtime (BLAS, management libraries) sits behind its own small interface. */
#ifndef FB_GPU_RUNTIME_H
#define FB_GPU_RUNTIME_H

#if defined(__HIP_PLATFORM_AMD__) || defined(__HIPCC__)
#include <hip/hip_runtime.h>
#define FB_GPU_VENDOR "amd"
#define gpuError_t hipError_t
#define gpuSuccess hipSuccess
#define gpuGetErrorString hipGetErrorString
#define gpuGetLastError hipGetLastError
#define gpuGetDeviceCount hipGetDeviceCount
#define gpuSetDevice hipSetDevice
#define gpuGetDevice hipGetDevice
#define gpuDeviceProp hipDeviceProp_t
#define gpuGetDeviceProperties hipGetDeviceProperties
#define gpuDeviceGetAttribute hipDeviceGetAttribute
#define gpuDeviceGetPCIBusId hipDeviceGetPCIBusId
#define gpuDeviceSynchronize hipDeviceSynchronize
#define gpuDeviceReset hipDeviceReset
#define gpuMalloc hipMalloc
#define gpuFree hipFree
#define gpuMallocHost hipHostMalloc
#define gpuFreeHost hipHostFree
#define gpuMemGetInfo hipMemGetInfo
#define gpuMemcpy hipMemcpy
#define gpuMemcpyAsync hipMemcpyAsync
#define gpuMemcpyPeerAsync hipMemcpyPeerAsync
#define gpuMemset hipMemset
#define gpuMemsetAsync hipMemsetAsync
#define gpuMemcpyHostToDevice hipMemcpyHostToDevice
#define gpuMemcpyDeviceToHost hipMemcpyDeviceToHost
#define gpuMemcpyDeviceToDevice hipMemcpyDeviceToDevice
#define gpuMemcpyDefault hipMemcpyDefault
#define gpuStream_t hipStream_t
#define gpuStreamCreate hipStreamCreate
#define gpuStreamCreateWithFlags hipStreamCreateWithFlags
#define gpuStreamNonBlocking hipStreamNonBlocking
#define gpuStreamDestroy hipStreamDestroy
#define gpuStreamSynchronize hipStreamSynchronize
#define gpuStreamWaitEvent hipStreamWaitEvent
#define gpuEvent_t hipEvent_t
#define gpuEventCreate hipEventCreate
#define gpuEventDestroy hipEventDestroy
#define gpuEventRecord hipEventRecord
#define gpuEventSynchronize hipEventSynchronize
#define gpuEventElapsedTime hipEventElapsedTime
#define gpuDeviceCanAccessPeer hipDeviceCanAccessPeer
#define gpuDeviceEnablePeerAccess hipDeviceEnablePeerAccess
#define gpuDeviceDisablePeerAccess hipDeviceDisablePeerAccess
#define gpuErrorPeerAccessAlreadyEnabled hipErrorPeerAccessAlreadyEnabled
#define gpuDevAttrClockRate hipDeviceAttributeClockRate
#define gpuDevAttrMultiProcessorCount hipDeviceAttributeMultiprocessorCount
/* gpuburn */
#define FB_GPU_HIP 1
#define gpuEventCreateWithFlags hipEventCreateWithFlags
#define gpuEventBlockingSync hipEventBlockingSync
#define gpuEventDisableTiming hipEventDisableTiming
#define gpuDevAttrComputeCapabilityMajor hipDeviceAttributeComputeCapabilityMajor
#define gpuDevAttrComputeCapabilityMinor hipDeviceAttributeComputeCapabilityMinor
#define gpuDeviceGetP2PAttribute hipDeviceGetP2PAttribute
#define gpuDevP2PAttrPerformanceRank hipDevP2PAttrPerformanceRank
#define gpuDevP2PAttrAccessSupported hipDevP2PAttrAccessSupported
#define gpuDevP2PAttrNativeAtomicSupported hipDevP2PAttrNativeAtomicSupported
/* gpuburn's checksums and SDC probe */
#define gpuErrorMemoryAllocation hipErrorOutOfMemory
#define gpuFuncSetAttribute hipFuncSetAttribute
#define gpuFuncAttributeMaxDynamicSharedMemorySize hipFuncAttributeMaxDynamicSharedMemorySize
#define gpuDevAttrMaxSharedMemoryPerMultiprocessor hipDeviceAttributeMaxSharedMemoryPerMultiprocessor
/* Shuffles within groups of `width` lanes (a wavefront holds two groups of 32). */
#define gpu_shfl_xor(v, mask, width) __shfl_xor((v), (mask), (width))
/* The compute unit the calling wavefront runs on (HW_ID's CU field; unique within an SE). */
#define gpu_smid() ((unsigned)__smid())
/* Loads that should not stay in the cache (data read once). */
#define gpu_load_streaming(p) (*(p))
/* Link between two GPUs; type gpuLinkTypeXgmi is Infinity Fabric (HSA_AMD_LINK_INFO_TYPE_XGMI). */
#define gpuExtGetLinkTypeAndHopCount hipExtGetLinkTypeAndHopCount
#define gpuLinkTypeXgmi 4u
#else
#include <cuda_runtime.h>
#define FB_GPU_VENDOR "nvidia"
#define gpuError_t cudaError_t
#define gpuSuccess cudaSuccess
#define gpuGetErrorString cudaGetErrorString
#define gpuGetLastError cudaGetLastError
#define gpuGetDeviceCount cudaGetDeviceCount
#define gpuSetDevice cudaSetDevice
#define gpuGetDevice cudaGetDevice
#define gpuDeviceProp cudaDeviceProp
#define gpuGetDeviceProperties cudaGetDeviceProperties
#define gpuDeviceGetAttribute cudaDeviceGetAttribute
#define gpuDeviceGetPCIBusId cudaDeviceGetPCIBusId
#define gpuDeviceSynchronize cudaDeviceSynchronize
#define gpuDeviceReset cudaDeviceReset
#define gpuMalloc cudaMalloc
#define gpuFree cudaFree
#define gpuMallocHost cudaMallocHost
#define gpuFreeHost cudaFreeHost
#define gpuMemGetInfo cudaMemGetInfo
#define gpuMemcpy cudaMemcpy
#define gpuMemcpyAsync cudaMemcpyAsync
#define gpuMemcpyPeerAsync cudaMemcpyPeerAsync
#define gpuMemset cudaMemset
#define gpuMemsetAsync cudaMemsetAsync
#define gpuMemcpyHostToDevice cudaMemcpyHostToDevice
#define gpuMemcpyDeviceToHost cudaMemcpyDeviceToHost
#define gpuMemcpyDeviceToDevice cudaMemcpyDeviceToDevice
#define gpuMemcpyDefault cudaMemcpyDefault
#define gpuStream_t cudaStream_t
#define gpuStreamCreate cudaStreamCreate
#define gpuStreamCreateWithFlags cudaStreamCreateWithFlags
#define gpuStreamNonBlocking cudaStreamNonBlocking
#define gpuStreamDestroy cudaStreamDestroy
#define gpuStreamSynchronize cudaStreamSynchronize
#define gpuStreamWaitEvent cudaStreamWaitEvent
#define gpuEvent_t cudaEvent_t
#define gpuEventCreate cudaEventCreate
#define gpuEventDestroy cudaEventDestroy
#define gpuEventRecord cudaEventRecord
#define gpuEventSynchronize cudaEventSynchronize
#define gpuEventElapsedTime cudaEventElapsedTime
#define gpuDeviceCanAccessPeer cudaDeviceCanAccessPeer
#define gpuDeviceEnablePeerAccess cudaDeviceEnablePeerAccess
#define gpuDeviceDisablePeerAccess cudaDeviceDisablePeerAccess
#define gpuErrorPeerAccessAlreadyEnabled cudaErrorPeerAccessAlreadyEnabled
#define gpuDevAttrClockRate cudaDevAttrClockRate
#define gpuDevAttrMultiProcessorCount cudaDevAttrMultiProcessorCount
/* gpuburn */
#define FB_GPU_HIP 0
#define gpuEventCreateWithFlags cudaEventCreateWithFlags
#define gpuEventBlockingSync cudaEventBlockingSync
#define gpuEventDisableTiming cudaEventDisableTiming
#define gpuDevAttrComputeCapabilityMajor cudaDevAttrComputeCapabilityMajor
#define gpuDevAttrComputeCapabilityMinor cudaDevAttrComputeCapabilityMinor
#define gpuDeviceGetP2PAttribute cudaDeviceGetP2PAttribute
#define gpuDevP2PAttrPerformanceRank cudaDevP2PAttrPerformanceRank
#define gpuDevP2PAttrAccessSupported cudaDevP2PAttrAccessSupported
#define gpuDevP2PAttrNativeAtomicSupported cudaDevP2PAttrNativeAtomicSupported
/* gpuburn's checksums and SDC probe */
#define gpuErrorMemoryAllocation cudaErrorMemoryAllocation
#define gpuFuncSetAttribute cudaFuncSetAttribute
#define gpuFuncAttributeMaxDynamicSharedMemorySize cudaFuncAttributeMaxDynamicSharedMemorySize
#define gpuDevAttrMaxSharedMemoryPerMultiprocessor cudaDevAttrMaxSharedMemoryPerMultiprocessor
#define gpu_shfl_xor(v, mask, width) __shfl_xor_sync(0xffffffffu, (v), (mask), (width))
#ifdef __CUDACC__
/* The multiprocessor the calling thread runs on (%smid). */
static __device__ __forceinline__ unsigned gpu_smid(void)
{
    unsigned id;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
    return id;
}
#endif
/* Loads that should not stay in the cache (data read once): ld.global.cs. */
#define gpu_load_streaming(p) __ldcs(p)
/* CUDA has no link-type query (p2p.cu tells NVLink by native peer atomics): never xGMI. */
static inline cudaError_t gpuExtGetLinkTypeAndHopCount(int a, int b, unsigned *type, unsigned *hops)
{
    (void)a;
    (void)b;
    *type = *hops = 0;
    return cudaErrorNotSupported;
}
#define gpuLinkTypeXgmi 4u
#endif

/* Evaluates a runtime call; on failure records "what: error string" as the result's error and
 * jumps to the label `fail` of the calling function. */
#define GPU_TRY(ctx, call, what)                                                                   \
    do {                                                                                           \
        gpuError_t gpu_try_err_ = (call);                                                          \
        if (gpu_try_err_ != gpuSuccess) {                                                          \
            fb_result_set_error(worker_result(ctx), "%s: %s", (what),                              \
                                gpuGetErrorString(gpu_try_err_));                                  \
            goto fail;                                                                             \
        }                                                                                          \
    } while (0)

#endif
