// The CPU matrix product every dense layer uses. Row-major; C = alpha*op(A)*op(B) + beta*C.
// Compiled once per instruction-set target (generic x86-64 and x86-64-v3: AVX2+FMA) and
// chosen at run time, so the default build needs no -march=native (src/cpu/).
#pragma once
#include <cstddef>

namespace tenon::cpu {

void sgemm(bool trans_a, bool trans_b, std::size_t m, std::size_t n, std::size_t k, float alpha,
           const float* a, std::size_t lda, const float* b, std::size_t ldb, float beta, float* c,
           std::size_t ldc);

// op(B) (k x n; op(B) = B^T when trans_b) packed in advance in the chosen kernel's panel
// layout (a plan's frozen weights: docs/lowering.md, "Frozen weights"). sgemm_packed_size:
// the floats it takes, 0 when the kernel does not prepack (generic, eigen-v3: then
// sgemm_prepacked is sgemm). sgemm_prepacked(.., b, ldb, packed, ..) computes what
// sgemm(.., b, ldb, ..) computes, bit for bit, on any number of threads, reading its panels
// from `packed` (sgemm_pack_b of the same b, k and n, in this process); b is still read by
// the small-batch path (m <= 4).
std::size_t sgemm_packed_size(std::size_t k, std::size_t n);
void sgemm_pack_b(bool trans_b, std::size_t k, std::size_t n, const float* b, std::size_t ldb, float* packed);
void sgemm_prepacked(bool trans_a, bool trans_b, std::size_t m, std::size_t n, std::size_t k, float alpha,
                     const float* a, std::size_t lda, const float* b, std::size_t ldb, const float* packed,
                     float beta, float* c, std::size_t ldc);

// An epilogue: f(ctx, c, ldc, rows, cols, j0) on a block of C (rows x cols, its first column
// being column j0 of the whole C) once the block's sums are complete, while it is in cache.
// Run by the thread that computed the block; blocks do not overlap and cover C once.
struct Epilogue {
    void (*fn)(const void* ctx, float* c, std::size_t ldc, std::size_t rows, std::size_t cols, std::size_t j0);
    const void* ctx;
};
// C = op(A) op(B) (alpha 1, beta 0) followed by epi over all of C, block by block (a dense
// layer's bias and activation in the product: Ops::gemm_bias_act). packed: op(B) prepacked by
// sgemm_pack_b, or null. C's values before the epilogue are sgemm's, bit for bit.
void sgemm_epilogue(bool trans_a, bool trans_b, std::size_t m, std::size_t n, std::size_t k, const float* a,
                    std::size_t lda, const float* b, std::size_t ldb, const float* packed, float* c, std::size_t ldc,
                    const Epilogue& epi);

// The target the dispatcher chose ("x86-64-v3" or "generic"); TENON_GEMM_TARGET=generic
// in the environment forces the generic kernel.
const char* gemm_target();

}  // namespace tenon::cpu
