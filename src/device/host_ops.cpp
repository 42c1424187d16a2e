// The device backend compiled as host code (docs/cuda.md, "Checked without a GPU"): the same
// source as the CUDA build's (device_ops.inl, device_stage.inl), its Thrust passes on Thrust's
// CPP device system (meson sets THRUST_DEVICE_SYSTEM and uses Debian's Thrust, not CUDA's),
// its cuBLAS calls answered by a host cuBLAS over the CPU backend's product. The test suite
// runs on it with TENON_TEST_OPS=device-host (tests/catch_main.cpp).
#define TENON_DEVICE_NS device_host
#define TENON_DEVICE_NAME "device-host"

#include "tenon/backend/device.hpp"

#include <cstring>
#include <new>

#include "device_ops.inl"
#include "device_stage.inl"
#include "tenon/error.hpp"
#include "upload.inl"

namespace tenon::device_host {

// cuBLAS's SGEMM, column-major: C (m x n, ldc) = alpha op(A) op(B) + beta C, with cuBLAS's
// checks of the sizes and leading dimensions. The column-major C is the row-major C^T =
// op(B)^T op(A)^T (n x m): the CPU's row-major product with the operands swapped.
cublasStatus_t cublasSgemm(cublasHandle_t, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,
                           const float* alpha, const float* A, int lda, const float* B, int ldb, const float* beta,
                           float* C, int ldc) {
    const auto at_least = [](int ld, int rows) { return ld >= (rows > 1 ? rows : 1); };
    const bool ta = transa != CUBLAS_OP_N, tb = transb != CUBLAS_OP_N;
    if (m < 0 || n < 0 || k < 0 || !at_least(lda, ta ? k : m) || !at_least(ldb, tb ? n : k) || !at_least(ldc, m))
        return CUBLAS_STATUS_INVALID_VALUE;
    if (m == 0 || n == 0) return CUBLAS_STATUS_SUCCESS;
    const auto z = [](int v) { return static_cast<std::size_t>(v); };
    cpu_ops().gemm(tb, ta, z(n), z(m), z(k), *alpha, B, z(ldb), A, z(lda), *beta, C, z(ldc));
    return CUBLAS_STATUS_SUCCESS;
}

void* blas_handle() { return nullptr; }
void blas_failed(int status) {
    throw Error("tenon: the device backend's cuBLAS call failed (status " + std::to_string(status) + ")");
}

}  // namespace tenon::device_host

namespace tenon::device_host {
namespace {
// The device-host build's "device memory": host memory, 256-byte aligned as cudaMalloc's,
// handed out through the same caching allocator (src/device_memory.cpp) as a GPU's, so that
// the allocator, the memory tags and every transfer rule are checked without a GPU.
void* host_device_alloc(std::size_t bytes) noexcept {
    return ::operator new(bytes, std::align_val_t{256}, std::nothrow);
}
void host_device_free(void* p) noexcept { ::operator delete(p, std::align_val_t{256}); }
void host_device_copy(void* dst, const void* src, std::size_t n, bool, bool) { std::memcpy(dst, src, n); }
void host_device_zero(void* p, std::size_t n) { std::memset(p, 0, n); }
const detail::DeviceMemoryProvider host_device_memory{"device-host", host_device_alloc, host_device_free,
                                                      host_device_copy, host_device_zero, nullptr};
}  // namespace
}  // namespace tenon::device_host

namespace tenon {
const Ops& device_host_ops() noexcept {
    static const device_host::DeviceOps ops;
    // The first use registers the backend's memory: device arrays then come from it.
    static const bool registered = [] {
        try {
            detail::set_device_memory_provider(device_host::host_device_memory);
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
