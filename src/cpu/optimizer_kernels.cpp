// The optimizer's passes over a parameter, compiled for generic x86-64 and x86-64-v3
// (target_clones picks at load time). meson builds this file with -O3 -fno-math-errno so
// that the loops vectorise (sqrt of m2 >= 0 never sets errno): the optimizer touches every
// weight every step, which at batch 32 costs as much as the matrix products.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels.hpp"
#include "tenon/backend/functors.hpp"
#include "subnormals.hpp"

namespace tenon::cpu {

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define TENON_CLONES __attribute__((target_clones("default", "arch=x86-64-v3")))
#else
#define TENON_CLONES
#endif

// Sixteen independent partial sums, so the loop vectorises without reassociating one sum.
TENON_CLONES double sum_squares(const float* __restrict g, std::size_t n) {
    float acc[16] = {};
    std::size_t i = 0;
    for (; i + 16 <= n; i += 16)
        for (std::size_t j = 0; j < 16; ++j) acc[j] += g[i + j] * g[i + j];
    double s = 0.0;
    for (; i < n; ++i) s += double(g[i]) * double(g[i]);
    for (float a : acc) s += a;
    return s;
}

// NaN and inf are the floats whose exponent bits are all ones: an integer test and an integer
// sum, which vectorise without reassociating float arithmetic. 32-bit counters per block of
// 2^16 values (they cannot overflow), added into the size_t total between blocks.
TENON_CLONES std::size_t count_nonfinite(const float* __restrict x, std::size_t n) {
    std::size_t total = 0;
    for (std::size_t b = 0; b < n; b += std::size_t{1} << 16) {
        const std::size_t e = std::min(n, b + (std::size_t{1} << 16));
        std::uint32_t c = 0;
        for (std::size_t i = b; i < e; ++i) {
            std::uint32_t u;
            std::memcpy(&u, x + i, sizeof u);
            c += (u & 0x7f800000u) == 0x7f800000u;
        }
        total += c;
    }
    return total;
}

namespace {
// The loops, one per combination, so that each vectorises without a test per element
// (inlined into each target clone below).
template <bool kAvg, bool kZero>
[[gnu::always_inline]] inline void adam_loop(float* __restrict W, float* __restrict G, float* __restrict m1,
                                             float* __restrict m2, float* __restrict A, std::size_t n, float gscale,
                                             float b1, float b2, float lr_t, float eps, float decay_keep, float wd) {
    for (std::size_t i = 0; i < n; ++i) {
        const float w = fn::adam_one(W[i], G[i] * gscale, m1[i], m2[i], b1, b2, lr_t, eps, wd);
        W[i] = w;
        if constexpr (kZero) G[i] = 0.0f;
        if constexpr (kAvg) fn::average_one(A[i], w, decay_keep);
    }
}
template <bool kAvg, bool kZero>
[[gnu::always_inline]] inline void sgd_loop(float* __restrict W, float* __restrict G, float* __restrict A,
                                            std::size_t n, float gscale, float lr, float decay_keep, float wd) {
    for (std::size_t i = 0; i < n; ++i) {
        const float w = fn::sgd_one(W[i], G[i] * gscale, lr, wd);
        W[i] = w;
        if constexpr (kZero) G[i] = 0.0f;
        if constexpr (kAvg) fn::average_one(A[i], w, decay_keep);
    }
}
}  // namespace

// One pass: the (already scaled) gradient updates the moments and the weights, then the
// moving average; the gradient is zeroed on the way when zero_g (Node::apply_optimizer
// passes false and marks the gradient zero instead: one stream less).
TENON_CLONES void adam_pass(float* __restrict W, float* __restrict G, float* __restrict m1, float* __restrict m2,
                            float* __restrict A, std::size_t n, float gscale, float b1, float b2, float lr_t,
                            float eps, float decay_keep, float wd, bool zero_g) {
    const FlushSubnormals flush;
    if (A && zero_g) adam_loop<true, true>(W, G, m1, m2, A, n, gscale, b1, b2, lr_t, eps, decay_keep, wd);
    else if (A) adam_loop<true, false>(W, G, m1, m2, A, n, gscale, b1, b2, lr_t, eps, decay_keep, wd);
    else if (zero_g) adam_loop<false, true>(W, G, m1, m2, A, n, gscale, b1, b2, lr_t, eps, decay_keep, wd);
    else adam_loop<false, false>(W, G, m1, m2, A, n, gscale, b1, b2, lr_t, eps, decay_keep, wd);
}

TENON_CLONES void sgd_pass(float* __restrict W, float* __restrict G, float* __restrict A, std::size_t n, float gscale,
                           float lr, float decay_keep, float wd, bool zero_g) {
    const FlushSubnormals flush;
    if (A && zero_g) sgd_loop<true, true>(W, G, A, n, gscale, lr, decay_keep, wd);
    else if (A) sgd_loop<true, false>(W, G, A, n, gscale, lr, decay_keep, wd);
    else if (zero_g) sgd_loop<false, true>(W, G, A, n, gscale, lr, decay_keep, wd);
    else sgd_loop<false, false>(W, G, A, n, gscale, lr, decay_keep, wd);
}

}  // namespace tenon::cpu
