// cuBLAS's SGEMM and cuBLASLt's matmul with an epilogue, as the device backend calls them: the
// real ones under nvcc (TENON_DEVICE_CUDA), else a host cuBLAS and a host cuBLASLt of the same
// signatures and semantics (column-major; the operands' shapes and leading dimensions checked as
// cuBLAS checks them; cuBLASLt's bias broadcast along D's rows, then the ReLU) whose product is
// the CPU backend's, reached by the inverse of the backend's row-major -> column-major
// translation (host_ops.cpp). A wrong transposition, shape or leading dimension in
// device_ops.inl therefore fails the host tests.
#pragma once
#if defined(TENON_DEVICE_CUDA)
#include <cublasLt.h>
#include <cublas_v2.h>
#else
#include <cstddef>
#include <cstdint>

namespace tenon::device_host {
enum cublasOperation_t { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1, CUBLAS_OP_C = 2 };
enum cublasStatus_t { CUBLAS_STATUS_SUCCESS = 0, CUBLAS_STATUS_INVALID_VALUE = 7, CUBLAS_STATUS_NOT_SUPPORTED = 15 };
struct cublasContext;
using cublasHandle_t = cublasContext*;
cublasStatus_t cublasSgemm(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
                           int k, const float* alpha, const float* A, int lda, const float* B, int ldb,
                           const float* beta, float* C, int ldc);

// The part of cuBLASLt the backend uses (cublasLt.h's names and values).
enum cudaDataType_t { CUDA_R_32F = 0 };
enum cublasComputeType_t { CUBLAS_COMPUTE_32F = 68 };
enum cublasLtMatmulDescAttributes_t {
    CUBLASLT_MATMUL_DESC_TRANSA = 3,
    CUBLASLT_MATMUL_DESC_TRANSB = 4,
    CUBLASLT_MATMUL_DESC_EPILOGUE = 7,
    CUBLASLT_MATMUL_DESC_BIAS_POINTER = 8
};
enum cublasLtEpilogue_t : std::uint32_t {
    CUBLASLT_EPILOGUE_DEFAULT = 1,
    CUBLASLT_EPILOGUE_RELU = 2,
    CUBLASLT_EPILOGUE_BIAS = 4,
    CUBLASLT_EPILOGUE_RELU_BIAS = 6
};
struct cublasLtContext;
using cublasLtHandle_t = cublasLtContext*;
struct cublasLtMatmulDescOpaque_t;
using cublasLtMatmulDesc_t = cublasLtMatmulDescOpaque_t*;
struct cublasLtMatrixLayoutOpaque_t;
using cublasLtMatrixLayout_t = cublasLtMatrixLayoutOpaque_t*;
struct cublasLtMatmulAlgo_t;
struct CUstream_st;
using cudaStream_t = CUstream_st*;
cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* desc, cublasComputeType_t compute, cudaDataType_t scale);
cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t desc);
cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr,
                                              const void* buf, std::size_t bytes);
cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* layout, cudaDataType_t type, std::uint64_t rows,
                                          std::uint64_t cols, std::int64_t ld);
cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t layout);
cublasStatus_t cublasLtMatmul(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, const void* alpha, const void* A,
                              cublasLtMatrixLayout_t Adesc, const void* B, cublasLtMatrixLayout_t Bdesc,
                              const void* beta, const void* C, cublasLtMatrixLayout_t Cdesc, void* D,
                              cublasLtMatrixLayout_t Ddesc, const cublasLtMatmulAlgo_t* algo, void* workspace,
                              std::size_t workspace_bytes, cudaStream_t stream);
// How many matmuls with an epilogue the host cuBLASLt ran (tests: the plan reaches it).
std::size_t lt_matmul_calls() noexcept;
}  // namespace tenon::device_host
#endif
