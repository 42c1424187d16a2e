// The CPU matrix product every dense layer uses. Row-major; C = alpha*op(A)*op(B) + beta*C.
// Compiled once per instruction-set target (generic x86-64 and x86-64-v3: AVX2+FMA) and
// chosen at run time, so the default build needs no -march=native (src/cpu/).
#pragma once
#include <cstddef>

namespace tenon::cpu {

void sgemm(bool trans_a, bool trans_b, std::size_t m, std::size_t n, std::size_t k, float alpha,
           const float* a, std::size_t lda, const float* b, std::size_t ldb, float beta, float* c,
           std::size_t ldc);

// The target the dispatcher chose ("x86-64-v3" or "generic"); TENON_GEMM_TARGET=generic
// in the environment forces the generic kernel.
const char* gemm_target();

}  // namespace tenon::cpu
