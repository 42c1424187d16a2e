// The CUDA build's host side (checked only on a GPU: docs/cuda.md): the plan's stages resolved
// for kernels/device_ops.cu (device_stage.inl, g++), the cuBLAS and cuBLASLt handles per host thread, and
// cuda_ops(). Compiled by g++ against CUDA's headers and linked with cudart, cuBLAS and cuBLASLt.
#define TENON_DEVICE_NS device_cuda
#define TENON_DEVICE_CUDA 1

#include <cuda_runtime.h>

#include <string>

#include "blas.hpp"
#include "device_ops.hpp"
#include "device_stage.inl"
#include "tenon/backend/device.hpp"
#include "tenon/error.hpp"
#include "tenon/types/device_memory.hpp"
#include "upload.inl"

namespace tenon::device_cuda {
namespace {
struct Handle {
    cublasHandle_t h = nullptr;
    Handle() {
        if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) throw Error("tenon: cublasCreate failed (no usable GPU?)");
    }
    ~Handle() {
        if (h) cublasDestroy(h);
    }
};
struct LtHandle {
    cublasLtHandle_t h = nullptr;
    LtHandle() {
        if (cublasLtCreate(&h) != CUBLAS_STATUS_SUCCESS) throw Error("tenon: cublasLtCreate failed (no usable GPU?)");
    }
    ~LtHandle() {
        if (h) cublasLtDestroy(h);
    }
};
}  // namespace

void* blas_handle() {
    thread_local Handle handle;
    return handle.h;
}
void* lt_handle() {
    thread_local LtHandle handle;
    return handle.h;
}
void blas_failed(int status) {
    throw Error("tenon: a cuBLAS / cuBLASLt call failed (status " + std::to_string(status) + ")");
}
}  // namespace tenon::device_cuda

namespace tenon {
bool cuda_device_present() noexcept {
    int count = 0;
    return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}
const Ops& cuda_ops() noexcept {
    static const device_cuda::DeviceOps ops;
    // The first use registers the GPU's memory (cuda_memory.cpp): device arrays then come from it.
    static const bool registered = [] {
        try {
            detail::set_device_memory_provider(device_cuda::cuda_memory());
            // Managed memory (the tests' GPU run): the call scopes of the strict mode mark where
            // host code reads results, and there the device is waited for.
            if (device_cuda::cuda_managed_memory()) detail::enable_strict_device_host(device_cuda::cuda_managed_access);
        } catch (...) {
            return false;  // another device backend's memory is in use (tenon-E343 at its arrays)
        }
        detail::set_device_ops_hint(&ops);
        return true;
    }();
    (void)registered;
    return ops;
}
}  // namespace tenon
