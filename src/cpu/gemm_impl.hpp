// Body of one per-target GEMM kernel. Included by gemm_<target>.cpp after it renames the
// Eigen namespace (so each target's Eigen instantiations are distinct symbols and the
// linker cannot mix an AVX2 instantiation into the generic path) and names the function.
#include <Eigen/Core>

#include <cstddef>

namespace tenon::cpu {

void TENON_GEMM_FN(bool trans_a, bool trans_b, std::size_t m, std::size_t n, std::size_t k, float alpha,
                   const float* a, std::size_t lda, const float* b, std::size_t ldb, float beta, float* c,
                   std::size_t ldc) {
    using Stride = Eigen::OuterStride<>;
    using RowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    using ColMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::ColMajor>;
    const auto M = static_cast<Eigen::Index>(m), N = static_cast<Eigen::Index>(n), K = static_cast<Eigen::Index>(k);
    Eigen::Map<RowMat, Eigen::Unaligned, Stride> C(c, M, N, Stride(static_cast<Eigen::Index>(ldc)));
    if (m == 0 || n == 0) return;
    if (k == 0) {
        if (beta == 0.0f) C.setZero(); else C *= beta;
        return;
    }
    // op(A) is (m, k): a row-major (m, k) matrix, or the transpose of a row-major (k, m) one,
    // which is a column-major (m, k) matrix with the same leading dimension.
    auto run = [&](const auto& A, const auto& B) {
        if (beta == 0.0f) {
            if (alpha == 1.0f) C.noalias() = A * B; else C.noalias() = alpha * (A * B);
        } else {
            if (beta != 1.0f) C *= beta;
            if (alpha == 1.0f) C.noalias() += A * B; else C.noalias() += alpha * (A * B);
        }
    };
    const auto la = static_cast<Eigen::Index>(lda), lb = static_cast<Eigen::Index>(ldb);
    if (!trans_a && !trans_b)
        run(Eigen::Map<const RowMat, 0, Stride>(a, M, K, Stride(la)), Eigen::Map<const RowMat, 0, Stride>(b, K, N, Stride(lb)));
    else if (!trans_a && trans_b)
        run(Eigen::Map<const RowMat, 0, Stride>(a, M, K, Stride(la)), Eigen::Map<const ColMat, 0, Stride>(b, K, N, Stride(lb)));
    else if (trans_a && !trans_b)
        run(Eigen::Map<const ColMat, 0, Stride>(a, M, K, Stride(la)), Eigen::Map<const RowMat, 0, Stride>(b, K, N, Stride(lb)));
    else
        run(Eigen::Map<const ColMat, 0, Stride>(a, M, K, Stride(la)), Eigen::Map<const ColMat, 0, Stride>(b, K, N, Stride(lb)));
}

}  // namespace tenon::cpu
