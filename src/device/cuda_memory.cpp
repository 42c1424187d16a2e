// The GPU's memory under tenon's device allocator (checked only on a GPU: docs/cuda.md). The
// caching, the cap, the statistics and the errors are src/device_memory.cpp's, shared with the
// device-host build; here only the raw calls, all on the legacy default stream (stream 0), the
// stream Thrust's and cuBLAS's calls of the device backend use, so that a block freed after a
// pass is reused only by work ordered after it:
// - alloc: cudaMallocAsync from the device's default memory pool, whose release threshold is
//   raised to "keep everything" (the caching allocator above decides what to give back);
// - free: cudaFreeAsync; - trim (release_device_memory): cudaMemPoolTrimTo(pool, 0); - copy: cudaMemcpyAsync, then cudaStreamSynchronize, so that a copy is
//   complete when it returns (to_host's result is readable at once); - zero: cudaMemsetAsync.
#define TENON_DEVICE_NS device_cuda
#define TENON_DEVICE_CUDA 1

#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "device_ops.hpp"
#include "tenon/error.hpp"
#include "tenon/types/device_memory.hpp"

namespace tenon::device_cuda {
namespace {
[[noreturn]] void cuda_failed(const char* what, cudaError_t e) {
    throw Error(std::string("device memory: ") + what + " failed: " + cudaGetErrorString(e), "tenon-E341");
}

void* cuda_alloc(std::size_t bytes) noexcept {
    static const bool pool_ready = [] {
        int dev = 0;
        cudaMemPool_t pool{};
        if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetDefaultMemPool(&pool, dev) != cudaSuccess) return false;
        std::uint64_t keep = UINT64_MAX;  // the caching allocator above releases, not the pool
        cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep);
        return true;
    }();
    (void)pool_ready;
    void* p = nullptr;
    if (cudaMallocAsync(&p, bytes, cudaStream_t{0}) != cudaSuccess) {
        (void)cudaGetLastError();  // clear the sticky-free error of a failed allocation
        return nullptr;
    }
    return p;
}
void cuda_free(void* p) noexcept {
    cudaFreeAsync(p, cudaStream_t{0});
}
void cuda_copy(void* dst, const void* src, std::size_t n, bool to_device, bool from_device) {
    const cudaMemcpyKind kind = to_device ? (from_device ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice)
                                          : (from_device ? cudaMemcpyDeviceToHost : cudaMemcpyHostToHost);
    if (cudaError_t e = cudaMemcpyAsync(dst, src, n, kind, cudaStream_t{0}); e != cudaSuccess)
        cuda_failed("cudaMemcpyAsync", e);
    if (cudaError_t e = cudaStreamSynchronize(cudaStream_t{0}); e != cudaSuccess)
        cuda_failed("cudaStreamSynchronize", e);
}
void cuda_zero(void* p, std::size_t n) {
    if (cudaError_t e = cudaMemsetAsync(p, 0, n, cudaStream_t{0}); e != cudaSuccess) cuda_failed("cudaMemsetAsync", e);
}
// release_device_memory: the pool's kept memory back to the device too.
void cuda_trim() noexcept {
    int dev = 0;
    cudaMemPool_t pool{};
    if (cudaGetDevice(&dev) == cudaSuccess && cudaDeviceGetDefaultMemPool(&pool, dev) == cudaSuccess) {
        cudaStreamSynchronize(cudaStream_t{0});
        cudaMemPoolTrimTo(pool, 0);
    }
}
const detail::DeviceMemoryProvider provider{"cuda", cuda_alloc, cuda_free, cuda_copy, cuda_zero, cuda_trim};
}  // namespace

const detail::DeviceMemoryProvider& cuda_memory() noexcept { return provider; }
}  // namespace tenon::device_cuda
