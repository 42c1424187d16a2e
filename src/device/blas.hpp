// cuBLAS's SGEMM as the device backend calls it: the real one under nvcc (TENON_DEVICE_CUDA),
// else a host cuBLAS of the same signature and semantics (column-major; the operands' leading
// dimensions checked as cuBLAS checks them) whose product is the CPU backend's, reached by the
// inverse of the backend's row-major -> column-major translation (host_ops.cpp). A wrong
// transposition or leading dimension in device_ops.inl therefore fails the host tests.
#pragma once
#if defined(TENON_DEVICE_CUDA)
#include <cublas_v2.h>
#else
namespace tenon::device_host {
enum cublasOperation_t { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1, CUBLAS_OP_C = 2 };
enum cublasStatus_t { CUBLAS_STATUS_SUCCESS = 0, CUBLAS_STATUS_INVALID_VALUE = 7 };
struct cublasContext;
using cublasHandle_t = cublasContext*;
cublasStatus_t cublasSgemm(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
                           int k, const float* alpha, const float* A, int lda, const float* B, int ldb,
                           const float* beta, float* C, int ldc);
}  // namespace tenon::device_host
#endif
