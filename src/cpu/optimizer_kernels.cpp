// The optimizer's passes over a parameter, compiled for generic x86-64 and x86-64-v3
// (target_clones picks at load time). meson builds this file with -O3 -fno-math-errno so
// that the loops vectorise (sqrt of m2 >= 0 never sets errno): the optimizer touches every
// weight every step, which at batch 32 costs as much as the matrix products.
#include <cmath>
#include <cstddef>

#include "kernels.hpp"
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

// One pass: the (already scaled) gradient updates the moments and the weights, then the
// moving average; the gradient is zeroed on the way (finish_update would zero it next).
TENON_CLONES void adam_pass(float* __restrict W, float* __restrict G, float* __restrict m1, float* __restrict m2,
                            float* __restrict A, std::size_t n, float gscale, float b1, float b2, float lr_t,
                            float eps, float decay_keep, float wd) {
    const FlushSubnormals flush;
    // Two loops rather than a test per element, so each vectorises.
    if (A) {
        for (std::size_t i = 0; i < n; ++i) {
            const float g = G[i] * gscale;
            const float u = b1 * m1[i] + (1.0f - b1) * g, v = b2 * m2[i] + (1.0f - b2) * g * g;
            const float w = (W[i] - lr_t * u / (std::sqrt(v) + eps)) * wd;
            m1[i] = u;
            m2[i] = v;
            W[i] = w;
            G[i] = 0.0f;
            A[i] -= (1.0f - decay_keep) * (A[i] - w);
        }
    } else {
        for (std::size_t i = 0; i < n; ++i) {
            const float g = G[i] * gscale;
            const float u = b1 * m1[i] + (1.0f - b1) * g, v = b2 * m2[i] + (1.0f - b2) * g * g;
            m1[i] = u;
            m2[i] = v;
            W[i] = (W[i] - lr_t * u / (std::sqrt(v) + eps)) * wd;
            G[i] = 0.0f;
        }
    }
}

TENON_CLONES void sgd_pass(float* __restrict W, float* __restrict G, float* __restrict A, std::size_t n, float gscale,
                           float lr, float decay_keep, float wd) {
    const FlushSubnormals flush;
    if (A) {
        for (std::size_t i = 0; i < n; ++i) {
            const float w = (W[i] - lr * (G[i] * gscale)) * wd;
            W[i] = w;
            G[i] = 0.0f;
            A[i] -= (1.0f - decay_keep) * (A[i] - w);
        }
    } else {
        for (std::size_t i = 0; i < n; ++i) {
            W[i] = (W[i] - lr * (G[i] * gscale)) * wd;
            G[i] = 0.0f;
        }
    }
}

}  // namespace tenon::cpu
