// Body of tenon's own single-thread SGEMM for one x86 target, included by
// sgemm_avx2.cpp (compiled with -march=x86-64-v3) and sgemm_avx512.cpp (-march=x86-64-v4),
// which define TENON_SGEMM_FN and TENON_SGEMM_AVX512 (0/1).
//
// Row-major C(m x n) = alpha * op(A)(m x k) * op(B)(k x n) + beta * C. The classic
// blocked scheme (Goto / BLIS): a KC x NC block of op(B) is packed into panels NR columns
// wide, an MC x KC block of op(A) into panels MR rows high, and a register-blocked
// micro-kernel computes each MR x NR tile of C with one fused multiply-add per element and
// step of k, loading NR/VL vectors of B and broadcasting MR values of A. The sum over k
// runs in the same order for every tile and every split of the work, so the result does not
// depend on how the caller splits C across threads.
//
// Small m (a batch of 1-4 rows: serving) skips the packing: dot products of rows
// (op(B) = B^T, the dense layers' forward) or scaled row sums (op(B) = B), streaming B once.
//
// op(B) may also come packed in advance (a plan's frozen weights: docs/lowering.md, "Frozen
// weights"): TENON_SGEMM_PACK_FN writes all of op(B) in pack_b's own layout, each block of KC
// rows (from row 0, as the product steps through k) as the panels of the whole width side by
// side, so panel jp of the block at row pc starts at pc * npad + jp * kc * NR (npad: n rounded
// up to NR). The product then reads its panels there instead of packing them: the
// micro-kernel sees the same values in the same order, so the result is the same bits, for
// any split of C by rows or by columns at multiples of NR. With it, 1-4 rows take the panels
// too (few_rows_prepacked): the packed path's sums, skipping the steps whose inputs are all
// zero, so a row of a frozen plan's batch of one is the same bits as inside a larger batch.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "tenon/backend/cpu/gemm.hpp"

namespace tenon::cpu {
namespace {

#if TENON_SGEMM_AVX512
using V = __m512;
constexpr std::size_t VL = 16;
constexpr std::size_t MR = 12;
inline V vload(const float* p) { return _mm512_loadu_ps(p); }
inline void vstore(float* p, V v) { _mm512_storeu_ps(p, v); }
inline V vset1(float x) { return _mm512_set1_ps(x); }
inline V vzero() { return _mm512_setzero_ps(); }
inline V vfma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
inline V vmul(V a, V b) { return _mm512_mul_ps(a, b); }
inline float vsum(V v) {  // (not _mm512_reduce_add_ps or the 512->256 cast: GCC 12 warns inside them)
    const __m256 h = _mm256_add_ps(_mm512_extractf32x8_ps(v, 0), _mm512_extractf32x8_ps(v, 1));
    const __m128 s = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    const __m128 t = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(t, _mm_shuffle_ps(t, t, 1)));
}
#else
using V = __m256;
constexpr std::size_t VL = 8;
constexpr std::size_t MR = 6;
inline V vload(const float* p) { return _mm256_loadu_ps(p); }
inline void vstore(float* p, V v) { _mm256_storeu_ps(p, v); }
inline V vset1(float x) { return _mm256_set1_ps(x); }
inline V vzero() { return _mm256_setzero_ps(); }
inline V vfma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
inline V vmul(V a, V b) { return _mm256_mul_ps(a, b); }
inline float vsum(V v) {
    const __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    const __m128 t = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(t, _mm_shuffle_ps(t, t, 1)));
}
#endif
constexpr std::size_t NV = 2;  // vectors per row of a tile
constexpr std::size_t NR = NV * VL;
constexpr std::size_t KC = 256;           // a B panel (KC x NR) stays in L1
constexpr std::size_t MC = MR * (120 / MR);  // an A block (MC x KC) stays in L2
constexpr std::size_t NC = NR * 64;       // a B block (KC x NC) stays in L2

// n rounded up to whole panels: the width of each block of a packed op(B).
constexpr std::size_t padded(std::size_t n) { return (n + NR - 1) / NR * NR; }

struct Operands {
    bool ta, tb;
    const float* a;
    std::size_t lda;
    const float* b;
    std::size_t ldb;
    float at(bool t, const float* p, std::size_t ld, std::size_t r, std::size_t c) const {
        return t ? p[c * ld + r] : p[r * ld + c];
    }
};

// dst[q * ldd + r] = src[r * lds + q] for an 8 x 8 block (AVX: unpack, shuffle, permute).
inline void transpose8x8(const float* src, std::size_t lds, float* dst, std::size_t ldd) {
    __m256 r[8], t[8];
    for (std::size_t i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(src + i * lds);
    for (std::size_t i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
    for (std::size_t i = 0; i < 8; i += 4) {
        r[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
        r[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);
        r[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
        r[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
    }
    for (std::size_t i = 0; i < 4; ++i) {
        _mm256_storeu_ps(dst + i * ldd, _mm256_permute2f128_ps(r[i], r[i + 4], 0x20));
        _mm256_storeu_ps(dst + (i + 4) * ldd, _mm256_permute2f128_ps(r[i], r[i + 4], 0x31));
    }
}

// dst[q * ldd + r] = src[r * lds + q] for r < 4, q < 8 (4 rows of 8 side by side).
inline void transpose4x8(const float* src, std::size_t lds, float* dst, std::size_t ldd) {
    const __m256 r0 = _mm256_loadu_ps(src), r1 = _mm256_loadu_ps(src + lds), r2 = _mm256_loadu_ps(src + 2 * lds),
                 r3 = _mm256_loadu_ps(src + 3 * lds);
    const __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1), t2 = _mm256_unpacklo_ps(r2, r3),
                 t3 = _mm256_unpackhi_ps(r2, r3);
    const __m256 u[4] = {_mm256_shuffle_ps(t0, t2, 0x44), _mm256_shuffle_ps(t0, t2, 0xEE),
                         _mm256_shuffle_ps(t1, t3, 0x44), _mm256_shuffle_ps(t1, t3, 0xEE)};
    for (std::size_t q = 0; q < 4; ++q) {
        _mm_storeu_ps(dst + q * ldd, _mm256_castps256_ps128(u[q]));
        _mm_storeu_ps(dst + (q + 4) * ldd, _mm256_extractf128_ps(u[q], 1));
    }
}

// op(A)[i0 + r, p0 + p] for r < mc, p < kc, as panels of MR rows (zero rows past mc).
void pack_a(const Operands& o, std::size_t i0, std::size_t mc, std::size_t p0, std::size_t kc, float* dst) {
    for (std::size_t r0 = 0; r0 < mc; r0 += MR) {
        const std::size_t rows = std::min(MR, mc - r0);
        if (o.ta) {
            // op(A) = A^T: the MR values for a step p are contiguous in A.
            for (std::size_t p = 0; p < kc; ++p) {
                const float* src = o.a + (p0 + p) * o.lda + i0 + r0;
                float* d = dst + p * MR;
                std::size_t r = 0;
                for (; r < rows; ++r) d[r] = src[r];
                for (; r < MR; ++r) d[r] = 0.0f;
            }
        } else {
            const float* rowp[MR];
            for (std::size_t r = 0; r < MR; ++r) rowp[r] = r < rows ? o.a + (i0 + r0 + r) * o.lda + p0 : nullptr;
            std::size_t p = 0;
            if (rows == MR)  // a full panel: 4 rows x 8 steps at a time, transposed in registers
                for (; p + 8 <= kc; p += 8) {
                    std::size_t r = 0;
                    for (; r + 4 <= MR; r += 4) transpose4x8(rowp[r] + p, o.lda, dst + p * MR + r, MR);
                    for (; r < MR; ++r)
                        for (std::size_t q = 0; q < 8; ++q) dst[(p + q) * MR + r] = rowp[r][p + q];
                }
            for (; p < kc; ++p) {
                float* d = dst + p * MR;
                for (std::size_t r = 0; r < MR; ++r) d[r] = rowp[r] ? rowp[r][p] : 0.0f;
            }
        }
        dst += kc * MR;
    }
}

// op(B)[p0 + p, j0 + c] for p < kc, c < nc, as panels of NR columns (zero columns past nc).
void pack_b(const Operands& o, std::size_t p0, std::size_t kc, std::size_t j0, std::size_t nc, float* dst) {
    for (std::size_t c0 = 0; c0 < nc; c0 += NR) {
        const std::size_t cols = std::min(NR, nc - c0);
        if (!o.tb) {
            for (std::size_t p = 0; p < kc; ++p) {
                const float* src = o.b + (p0 + p) * o.ldb + j0 + c0;
                float* d = dst + p * NR;
                if (cols == NR) {
                    for (std::size_t v = 0; v < NV; ++v) vstore(d + v * VL, vload(src + v * VL));
                } else {
                    std::size_t c = 0;
                    for (; c < cols; ++c) d[c] = src[c];
                    for (; c < NR; ++c) d[c] = 0.0f;
                }
            }
        } else {
            // op(B) = B^T (a dense layer's W): NR rows of B read side by side, transposed
            // 8 x 8 at a time in registers.
            std::size_t c = 0;
            if (cols == NR)
                for (; c + 8 <= NR; c += 8) {
                    const float* src = o.b + (j0 + c0 + c) * o.ldb + p0;
                    std::size_t p = 0;
                    for (; p + 8 <= kc; p += 8) transpose8x8(src + p, o.ldb, dst + p * NR + c, NR);
                    for (; p < kc; ++p)
                        for (std::size_t q = 0; q < 8; ++q) dst[p * NR + c + q] = src[q * o.ldb + p];
                }
            for (; c < NR; ++c) {
                if (c < cols) {
                    const float* src = o.b + (j0 + c0 + c) * o.ldb + p0;
                    for (std::size_t p = 0; p < kc; ++p) dst[p * NR + c] = src[p];
                } else {
                    for (std::size_t p = 0; p < kc; ++p) dst[p * NR + c] = 0.0f;
                }
            }
        }
        dst += kc * NR;
    }
}

// One row of a tile's sums into C[0:cols] (cols <= NR): alpha * sums, + C when `accumulate`.
// A partial row gets the same arithmetic on a copy of its valid part, so that a value does not
// depend on whether its tile is full (i.e. on how the caller split C).
inline void store_sums(float* c, const V (&acc)[NV], std::size_t cols, V va, bool accumulate) {
    if (cols == NR) {
        for (std::size_t v = 0; v < NV; ++v)
            vstore(c + v * VL, accumulate ? vfma(va, acc[v], vload(c + v * VL)) : vmul(va, acc[v]));
        return;
    }
    alignas(64) float t[NR] = {};
    if (accumulate) std::memcpy(t, c, cols * sizeof(float));
    for (std::size_t v = 0; v < NV; ++v)
        vstore(t + v * VL, accumulate ? vfma(va, acc[v], vload(t + v * VL)) : vmul(va, acc[v]));
    std::memcpy(c, t, cols * sizeof(float));
}

// C[0:rows, 0:cols] = alpha * Ap * Bp (+ C when `accumulate`: a later block of k, or
// beta != 0, which the caller has applied already) for one MR x NR tile.
inline void micro_kernel(std::size_t kc, const float* __restrict Ap, const float* __restrict Bp, float* C,
                         std::size_t ldc, float alpha, bool accumulate, std::size_t rows, std::size_t cols) {
    V acc[MR][NV];
    for (std::size_t i = 0; i < MR; ++i)
        for (std::size_t v = 0; v < NV; ++v) acc[i][v] = vzero();
    for (std::size_t p = 0; p < kc; ++p) {
        V b[NV];
        for (std::size_t v = 0; v < NV; ++v) b[v] = vload(Bp + p * NR + v * VL);
#pragma GCC unroll 16
        for (std::size_t i = 0; i < MR; ++i) {
            const V a = vset1(Ap[p * MR + i]);
            for (std::size_t v = 0; v < NV; ++v) acc[i][v] = vfma(a, b[v], acc[i][v]);
        }
    }
    const V va = vset1(alpha);
    for (std::size_t i = 0; i < rows; ++i) store_sums(C + i * ldc, acc[i], cols, va, accumulate);
}

// Per-thread packing buffers: allocated at the first call, reused after (no allocation).
float* buffer(std::vector<float>& v, std::size_t n) {
    if (v.size() < n) v.resize(n);
    return v.data();
}

void scale_c(std::size_t m, std::size_t n, float beta, float* c, std::size_t ldc) {
    for (std::size_t i = 0; i < m; ++i) {
        float* row = c + i * ldc;
        if (beta == 0.0f) std::fill(row, row + n, 0.0f);
        else if (beta != 1.0f)
            for (std::size_t j = 0; j < n; ++j) row[j] *= beta;
    }
}

// m <= 4 without packing. op(B) = B^T: C[i, j] = dot(op(A) row i, B row j).
void small_m(const Operands& o, std::size_t m, std::size_t n, std::size_t k, float alpha, float beta, float* c,
             std::size_t ldc) {
    static thread_local std::vector<float> arows;
    const float* A[4];
    if (o.ta) {  // gather op(A)'s rows (columns of A) once
        float* buf = buffer(arows, m * k);
        for (std::size_t i = 0; i < m; ++i) {
            for (std::size_t p = 0; p < k; ++p) buf[i * k + p] = o.a[p * o.lda + i];
            A[i] = buf + i * k;
        }
    } else {
        for (std::size_t i = 0; i < m; ++i) A[i] = o.a + i * o.lda;
    }
    auto finish = [&](float& out, float sum) { out = beta == 0.0f ? alpha * sum : alpha * sum + beta * out; };
    if (o.tb) {
        std::size_t j = 0;
        for (; j + 4 <= n; j += 4) {  // 4 rows of B against every row of op(A)
            const float* B0 = o.b + j * o.ldb;
            for (std::size_t i = 0; i < m; ++i) {
                V s0 = vzero(), s1 = vzero(), s2 = vzero(), s3 = vzero();
                std::size_t p = 0;
                for (; p + VL <= k; p += VL) {
                    const V x = vload(A[i] + p);
                    s0 = vfma(x, vload(B0 + p), s0);
                    s1 = vfma(x, vload(B0 + o.ldb + p), s1);
                    s2 = vfma(x, vload(B0 + 2 * o.ldb + p), s2);
                    s3 = vfma(x, vload(B0 + 3 * o.ldb + p), s3);
                }
                float t[4] = {vsum(s0), vsum(s1), vsum(s2), vsum(s3)};
                for (; p < k; ++p)
                    for (std::size_t q = 0; q < 4; ++q) t[q] += A[i][p] * B0[q * o.ldb + p];
                for (std::size_t q = 0; q < 4; ++q) finish(c[i * ldc + j + q], t[q]);
            }
        }
        for (; j < n; ++j) {
            const float* Bj = o.b + j * o.ldb;
            for (std::size_t i = 0; i < m; ++i) {
                V s = vzero();
                std::size_t p = 0;
                for (; p + VL <= k; p += VL) s = vfma(vload(A[i] + p), vload(Bj + p), s);
                float t = vsum(s);
                for (; p < k; ++p) t += A[i][p] * Bj[p];
                finish(c[i * ldc + j], t);
            }
        }
        return;
    }
    // op(B) = B: row i of C is the sum over p of op(A)[i, p] * B row p.
    scale_c(m, n, beta, c, ldc);
    for (std::size_t i = 0; i < m; ++i) {
        float* ci = c + i * ldc;
        for (std::size_t p = 0; p < k; ++p) {
            const float s = alpha * A[i][p];
            const float* Bp = o.b + p * o.ldb;
            const V vs = vset1(s);
            std::size_t j = 0;
            for (; j + VL <= n; j += VL) vstore(ci + j, vfma(vs, vload(Bp + j), vload(ci + j)));
            for (; j < n; ++j) ci[j] += s * Bp[j];
        }
    }
}

// Whether every value of a prepacked op(B) is finite: TENON_SGEMM_PACK_FN writes it after the
// panels (at k * npad; the packed size has room for it).
constexpr std::size_t kFlagFloats = VL;
bool packed_finite(const float* pb, std::size_t k, std::size_t pb_n) {
    return pb[k * padded(pb_n)] == 1.0f;
}

// Rows i < M of C against G panels of a prepacked block (kc rows of op(B), panels side by side,
// kc * NR values each), reading only the steps in `steps` (the block's steps where some row's
// input is non-zero); the micro-kernel's sums and stores otherwise.
template <std::size_t M, std::size_t G>
void sparse_tile(std::size_t nsteps, const std::uint16_t* steps, const float* xs, const float* panels,
                 std::size_t kc, float* c, std::size_t ldc, float alpha, bool accumulate, std::size_t cols) {
    V acc[M][G][NV];
    for (std::size_t i = 0; i < M; ++i)
        for (std::size_t g = 0; g < G; ++g)
            for (std::size_t v = 0; v < NV; ++v) acc[i][g][v] = vzero();
    for (std::size_t s = 0; s < nsteps; ++s) {
        const float* row = panels + std::size_t{steps[s]} * NR;
#pragma GCC unroll 4
        for (std::size_t i = 0; i < M; ++i) {
            const V x = vset1(xs[s * M + i]);
#pragma GCC unroll 4
            for (std::size_t g = 0; g < G; ++g)
#pragma GCC unroll 2
                for (std::size_t v = 0; v < NV; ++v)
                    acc[i][g][v] = vfma(x, vload(row + g * kc * NR + v * VL), acc[i][g][v]);
        }
    }
    const V va = vset1(alpha);
    for (std::size_t i = 0; i < M; ++i)
        for (std::size_t g = 0; g < G && g * NR < cols; ++g)
            store_sums(c + i * ldc + g * NR, acc[i][g], std::min(NR, cols - g * NR), va, accumulate);
}

// m <= 4 rows against a prepacked op(B) that is all finite (a frozen plan serving): the packed
// path's sums (each block of KC steps summed from zero in order, then added to C), reading only
// the rows of op(B) at the steps where an input is non-zero. Skipping a zero input changes no
// bit: it would add x * w = +-0 (w finite) to a sum that is never -0 (it starts at +0, and a
// sum that cancels to zero rounds to +0). So a row's result is the same bits as inside a
// batch of any size, and a batch of one reads only the weights its input uses: a ReLU
// network's hidden values and an image's background are mostly zeros.
template <std::size_t M>
void few_rows_packed(const Operands& o, std::size_t n, std::size_t k, float alpha, float beta, float* c,
                     std::size_t ldc, const float* pb, std::size_t pb_n, std::size_t pb_j0) {
    constexpr std::size_t G = M == 1 ? 4 : M == 2 ? 2 : 1;  // panels at a time: 8 sums in registers
    if (beta != 0.0f && beta != 1.0f) scale_c(M, n, beta, c, ldc);
    const std::size_t npad = padded(pb_n);
    std::uint16_t steps[KC];
    float xs[KC * M];
    for (std::size_t pc = 0; pc < k; pc += KC) {
        const std::size_t kc = std::min(KC, k - pc);
        std::size_t nsteps = 0;
        for (std::size_t p = 0; p < kc; ++p) {
            bool any = false;
            for (std::size_t i = 0; i < M; ++i) {
                const float x = o.at(o.ta, o.a, o.lda, i, pc + p);
                xs[nsteps * M + i] = x;
                any = any || x != 0.0f;
            }
            if (any) steps[nsteps++] = static_cast<std::uint16_t>(p);
        }
        const bool accumulate = pc > 0 || beta != 0.0f;
        const float* block = pb + pc * npad + pb_j0 * kc;  // the panel of column pb_j0 onwards
        std::size_t j = 0;
        for (; j + G * NR <= n; j += G * NR)
            sparse_tile<M, G>(nsteps, steps, xs, block + j * kc, kc, c + j, ldc, alpha, accumulate, G * NR);
        for (; j < n; j += NR)
            sparse_tile<M, 1>(nsteps, steps, xs, block + j * kc, kc, c + j, ldc, alpha, accumulate,
                              std::min(NR, n - j));
    }
}

bool few_rows_prepacked(const Operands& o, std::size_t m, std::size_t n, std::size_t k, float alpha, float beta,
                        float* c, std::size_t ldc, const float* pb, std::size_t pb_n, std::size_t pb_j0) {
    if (!pb || m == 0 || m > 4 || n == 0 || k == 0 || alpha == 0.0f || !packed_finite(pb, k, pb_n))
        return false;
    switch (m) {
    case 1: few_rows_packed<1>(o, n, k, alpha, beta, c, ldc, pb, pb_n, pb_j0); break;
    case 2: few_rows_packed<2>(o, n, k, alpha, beta, c, ldc, pb, pb_n, pb_j0); break;
    case 3: few_rows_packed<3>(o, n, k, alpha, beta, c, ldc, pb, pb_n, pb_j0); break;
    default: few_rows_packed<4>(o, n, k, alpha, beta, c, ldc, pb, pb_n, pb_j0); break;
    }
    return true;
}

// The packed path (m > 4). This call computes the columns of the whole C (pb_n wide) from
// pb_j0 on. pb: op(B) prepacked for the whole width (pb_j0 then a multiple of NR), or null:
// pack here. epi (or null): run on each tile after its last block of k (its columns counted
// in the whole C).
void blocked(const Operands& o, std::size_t m, std::size_t n, std::size_t k, float alpha, float beta, float* c,
             std::size_t ldc, const float* pb, std::size_t pb_n, std::size_t pb_j0, const Epilogue* epi) {
    if (beta != 0.0f && beta != 1.0f) scale_c(m, n, beta, c, ldc);
    static thread_local std::vector<float> abuf, bbuf;
    float* Ap = buffer(abuf, MC * KC);
    float* Bp = buffer(bbuf, KC * NC);
    const std::size_t pb_npad = padded(pb_n);
    for (std::size_t jc = 0; jc < n; jc += NC) {
        const std::size_t nc = std::min(NC, n - jc);
        for (std::size_t pc = 0; pc < k; pc += KC) {
            const std::size_t kc = std::min(KC, k - pc);
            const bool accumulate = pc > 0 || beta != 0.0f;
            const Epilogue* last = pc + kc >= k ? epi : nullptr;  // the tiles' sums end here
            const float* B = Bp;
            if (pb) B = pb + pc * pb_npad + (pb_j0 + jc) * kc;  // panel (pb_j0 + jc) / NR of the block
            else pack_b(o, pc, kc, jc, nc, Bp);
            for (std::size_t ic = 0; ic < m; ic += MC) {
                const std::size_t mc = std::min(MC, m - ic);
                pack_a(o, ic, mc, pc, kc, Ap);
                for (std::size_t jr = 0; jr < nc; jr += NR)
                    for (std::size_t ir = 0; ir < mc; ir += MR) {
                        float* tile = c + (ic + ir) * ldc + jc + jr;
                        const std::size_t rows = std::min(MR, mc - ir), cols = std::min(NR, nc - jr);
                        micro_kernel(kc, Ap + ir * kc, B + jr * kc, tile, ldc, alpha, accumulate, rows, cols);
                        if (last) last->fn(last->ctx, tile, ldc, rows, cols, pb_j0 + jc + jr);
                    }
            }
        }
    }
}

// What every entry does before the packed path: the empty and trivial products, and m <= 4
// (no packing: reads b itself). True when the product is done.
bool trivial(const Operands& o, std::size_t m, std::size_t n, std::size_t k, float alpha, float beta, float* c,
             std::size_t ldc) {
    if (m == 0 || n == 0) return true;
    if (k == 0 || alpha == 0.0f) {
        scale_c(m, n, beta, c, ldc);
        return true;
    }
    if (m <= 4) {
        small_m(o, m, n, k, alpha, beta, c, ldc);
        return true;
    }
    return false;
}

}  // namespace

void TENON_SGEMM_FN(bool trans_a, bool trans_b, std::size_t m, std::size_t n, std::size_t k, float alpha,
                    const float* a, std::size_t lda, const float* b, std::size_t ldb, float beta, float* c,
                    std::size_t ldc) {
    const Operands o{trans_a, trans_b, a, lda, b, ldb};
    if (trivial(o, m, n, k, alpha, beta, c, ldc)) return;
    blocked(o, m, n, k, alpha, beta, c, ldc, nullptr, n, 0, nullptr);
}

std::size_t TENON_SGEMM_PACKED_SIZE_FN(std::size_t k, std::size_t n) {
    return k * padded(n) + kFlagFloats;
}

void TENON_SGEMM_PACK_FN(bool trans_b, std::size_t k, std::size_t n, const float* b, std::size_t ldb,
                         float* packed) {
    const Operands o{false, trans_b, nullptr, 0, b, ldb};
    const std::size_t npad = padded(n);
    for (std::size_t pc = 0; pc < k; pc += KC) pack_b(o, pc, std::min(KC, k - pc), 0, n, packed + pc * npad);
    bool finite = true;
    for (std::size_t i = 0; i < k * npad && finite; ++i) finite = std::isfinite(packed[i]);
    std::fill(packed + k * npad, packed + k * npad + kFlagFloats, 0.0f);
    packed[k * npad] = finite ? 1.0f : 0.0f;  // (few_rows_prepacked's condition)
}

// As TENON_SGEMM_FN, with op(B) also prepacked (TENON_SGEMM_PACK_FN of all pb_n columns of
// op(B), of which this call computes those from pb_j0 on; b points at the same columns) or
// not (pb null), and with an epilogue (or null) run on C's tiles as they are finished (its
// columns numbered from pb_j0).
void TENON_SGEMM_PREPACKED_FN(bool trans_a, bool trans_b, std::size_t m, std::size_t n, std::size_t k, float alpha,
                              const float* a, std::size_t lda, const float* b, std::size_t ldb, const float* pb,
                              std::size_t pb_n, std::size_t pb_j0, float beta, float* c, std::size_t ldc,
                              const Epilogue* epi) {
    const Operands o{trans_a, trans_b, a, lda, b, ldb};
    if (pb && (pb_j0 % NR != 0 || pb_j0 + n > pb_n)) pb = nullptr;  // (not a split this layout serves: pack here)
    if (few_rows_prepacked(o, m, n, k, alpha, beta, c, ldc, pb, pb_n, pb_j0) ||
        trivial(o, m, n, k, alpha, beta, c, ldc)) {
        if (epi && m && n) epi->fn(epi->ctx, c, ldc, m, n, pb_j0);  // (the small-m rows are in cache)
        return;
    }
    blocked(o, m, n, k, alpha, beta, c, ldc, pb, pb_n, pb_j0, epi);
}

}  // namespace tenon::cpu
