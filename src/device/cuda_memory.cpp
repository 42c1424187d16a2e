// The GPU's memory under tenon's device allocator (checked only on a GPU: docs/cuda.md). The
// caching, the cap, the statistics and the errors are src/device_memory.cpp's, shared with the
// device-host build; here only the raw calls, all on the legacy default stream (stream 0), the
// stream Thrust's and cuBLAS's calls of the device backend use, so that a block freed after a
// pass is reused only by work ordered after it:
// - alloc: cudaMallocAsync from the device's default memory pool, whose release threshold is
//   raised to "keep everything" (the caching allocator above decides what to give back);
// - free: cudaFreeAsync; - trim (release_device_memory): cudaMemPoolTrimTo(pool, 0); - copy: cudaMemcpyAsync, then cudaStreamSynchronize, so that a copy is
//   complete when it returns (to_host's result is readable at once); - zero: cudaMemsetAsync.
// With TENON_CUDA_MANAGED=1 in the environment (read at the first allocation; the GPU run of
// the test suite, make test-gpu, sets it): blocks are managed memory (cudaMallocManaged,
// cudaFree), which host code may read and write too, since the tests' own code fills and reads
// device arrays on the host (their inputs, their comparisons). The backend's calls are the
// same; only where the pages live moves. Not for serving: each host touch migrates pages.
#define TENON_DEVICE_NS device_cuda
#define TENON_DEVICE_CUDA 1

#include <cuda_runtime.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "device_ops.hpp"
#include "tenon/error.hpp"
#include "tenon/types/device_memory.hpp"

namespace tenon::device_cuda {
namespace {
[[noreturn]] void cuda_failed(const char* what, cudaError_t e) {
    throw Error(std::string("device memory: ") + what + " failed: " + cudaGetErrorString(e), "tenon-E341");
}

bool managed() noexcept {
    static const bool on = [] {
        const char* v = std::getenv("TENON_CUDA_MANAGED");
        return v && *v && std::strcmp(v, "0") != 0;
    }();
    return on;
}

void* cuda_alloc(std::size_t bytes) noexcept {
    void* p = nullptr;
    if (managed()) {
        if (cudaMallocManaged(&p, bytes) != cudaSuccess) {
            (void)cudaGetLastError();
            return nullptr;
        }
        return p;
    }
    static const bool pool_ready = [] {
        int dev = 0;
        cudaMemPool_t pool{};
        if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetDefaultMemPool(&pool, dev) != cudaSuccess) return false;
        std::uint64_t keep = UINT64_MAX;  // the caching allocator above releases, not the pool
        cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep);
        return true;
    }();
    (void)pool_ready;
    if (cudaMallocAsync(&p, bytes, cudaStream_t{0}) != cudaSuccess) {
        (void)cudaGetLastError();  // clear the sticky-free error of a failed allocation
        return nullptr;
    }
    return p;
}
void cuda_free(void* p) noexcept {
    if (managed())
        cudaFree(p);  // (waits for the device's work on it)
    else
        cudaFreeAsync(p, cudaStream_t{0});
}
void cuda_copy(void* dst, const void* src, std::size_t n, bool to_device, bool from_device) {
    const cudaMemcpyKind kind = managed() ? cudaMemcpyDefault  // (the driver tells where managed pages are)
                                : to_device ? (from_device ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice)
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
bool cuda_managed_memory() noexcept { return managed(); }
void cuda_managed_access(bool host_may_touch) noexcept {
    if (host_may_touch) (void)cudaDeviceSynchronize();  // (an error shows at the next call)
}
}  // namespace tenon::device_cuda
