// The device backend compiled as host code (docs/cuda.md, "Checked without a GPU"): the same
// source as the CUDA build's (device_ops.inl, device_stage.inl), its Thrust passes on Thrust's
// CPP device system (meson sets THRUST_DEVICE_SYSTEM and uses Debian's Thrust, not CUDA's),
// its cuBLAS calls answered by a host cuBLAS over the CPU backend's product. The test suite
// runs on it with TENON_TEST_OPS=device-host (tests/catch_main.cpp).
#define TENON_DEVICE_NS device_host
#define TENON_DEVICE_NAME "device-host"

#include "tenon/backend/device.hpp"

#include "device_ops.inl"
#include "device_stage.inl"
#include "tenon/error.hpp"

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

namespace tenon {
const Ops& device_host_ops() noexcept {
    static const device_host::DeviceOps ops;
    return ops;
}
}  // namespace tenon
