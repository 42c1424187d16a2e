// The math of each row and elementwise operation, written once: activations and their
// derivatives, softmax, the max over maxout's pieces, layer norm. Every path uses these:
// the layers (through their Ops, backend/ops.hpp), the CPU backend's fused row passes of a
// plan (src/plan.cpp) and, in the CUDA backend, the kernels instantiated from the same
// functors. So nothing here may allocate, throw or touch the model: plain functions of
// pointers and numbers, callable on the host and, under nvcc, on the device (TENON_HD).
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define TENON_HD __host__ __device__
#else
#define TENON_HD
#endif

namespace tenon {

// The activation of a dense stage (a closed set: a backend instantiates a kernel for each).
enum class Activation : std::uint8_t { identity, relu, sigmoid, mish, gelu, swish, hard_swish };
// The reductions of a sequence's rows to one row (reduce_sum, reduce_mean, ...).
enum class Reduce : std::uint8_t { sum, mean, max, first, last };
// Elementwise operations of two arrays (fn::elementwise): y = a + b, y = a * b, y += a (b
// unused), y += a * b.
enum class Binary : std::uint8_t { add, mul, add_into, mul_add_into };

namespace fn {

// Each activation: y = f(z) and the gradient of z given dy, y = f(z) and z (only what the
// flags say is read: a layer keeps y for `grad_reads_y`, the pre-activation for `grad_reads_z`).
struct Identity {
    static constexpr Activation kind = Activation::identity;
    static constexpr bool grad_reads_y = false, grad_reads_z = false;
    TENON_HD float operator()(float z) const { return z; }
    TENON_HD float grad(float dy, float, float) const { return dy; }
};

// Thinc: 0 where z <= 0, else z (a NaN stays NaN: a NaN input must not come out as a plausible 0);
// the gradient dY * (Y > 0).
struct Relu {
    static constexpr Activation kind = Activation::relu;
    static constexpr bool grad_reads_y = true, grad_reads_z = false;
    TENON_HD float operator()(float z) const { return z <= 0.0f ? 0.0f : z; }
    TENON_HD float grad(float dy, float y, float) const { return y > 0.0f ? dy : 0.0f; }
};

// The input clipped to [-20, 20] as in Thinc; the gradient from the output, y (1 - y).
struct Sigmoid {
    static constexpr Activation kind = Activation::sigmoid;
    static constexpr bool grad_reads_y = true, grad_reads_z = false;
    TENON_HD float operator()(float z) const {
        z = z < -20.0f ? -20.0f : (z > 20.0f ? 20.0f : z);
        return 1.0f / (1.0f + std::exp(-z));
    }
    TENON_HD float grad(float dy, float y, float) const { return dy * (y * (1.0f - y)); }
};

// z * tanh(softplus(z)), the identity from z >= 20 (Thinc's threshold); in double, as Thinc.
struct Mish {
    static constexpr Activation kind = Activation::mish;
    static constexpr bool grad_reads_y = false, grad_reads_z = true;
    static constexpr float threshold = 20.0f;
    TENON_HD float operator()(float z) const {
        if (z >= threshold) return z;
        return static_cast<float>(z * std::tanh(std::log1p(std::exp(double(z)))));
    }
    TENON_HD float grad(float dy, float, float z) const {
        if (z >= threshold) return dy;
        const double x = z, e = std::exp(x), e2 = e * e;
        const double omega = 4.0 * (x + 1.0) + 4.0 * e2 + e2 * e + e * (4.0 * x + 6.0);
        const double delta = 2.0 * e + e2 + 2.0;
        return static_cast<float>(dy * e * omega / (delta * delta));
    }
};

// GELU, the exact x * Phi(x) (not the tanh approximation), with Thinc's gaussian_cdf: Phi(x) =
// (1 + erf(x / sqrt 2)) / 2, erf by Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7), the
// approximation thinc/backends/ops.py uses; the gradient Phi(x) + x phi(x) with the exact
// density phi, as Thinc's backprop_gelu. In double, then rounded.
struct Gelu {
    static constexpr Activation kind = Activation::gelu;
    static constexpr bool grad_reads_y = false, grad_reads_z = true;
    TENON_HD static double erf(double x) {
        const double a = x < 0.0 ? -x : x;
        const double t = 1.0 / (1.0 + 0.3275911 * a);
        const double poly =
            ((((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t;
        const double y = 1.0 - poly * std::exp(-a * a);
        return x < 0.0 ? -y : (x > 0.0 ? y : 0.0);
    }
    TENON_HD static double cdf(double x) { return 0.5 * (1.0 + erf(x * 0.70710678118654752440)); }
    TENON_HD static double pdf(double x) { return 0.39894228040143267794 * std::exp(-0.5 * x * x); }
    TENON_HD float operator()(float z) const { return static_cast<float>(double(z) * cdf(z)); }
    TENON_HD float grad(float dy, float, float z) const {
        const double x = z;
        return static_cast<float>(dy * (cdf(x) + x * pdf(x)));
    }
};

// Swish (SiLU): z * sigmoid(z), the sigmoid's input clipped to [-20, 20] as Thinc's; the
// gradient Thinc's way, y + sigmoid(z) (1 - y), with y recomputed from z (so only z is kept).
struct Swish {
    static constexpr Activation kind = Activation::swish;
    static constexpr bool grad_reads_y = false, grad_reads_z = true;
    TENON_HD float operator()(float z) const { return z * Sigmoid{}(z); }
    TENON_HD float grad(float dy, float, float z) const {
        const float s = Sigmoid{}(z), y = z * s;
        return dy * (y + s * (1.0f - y));
    }
};

// Thinc's hard_swish: z * hard_sigmoid(z), hard_sigmoid(z) = clip(0.2 z + 0.5, 0, 1), so the
// identity above 2.5 and 0 below -2.5; the gradient 0.4 z + 0.5, 1 for z > 2.5 and 0 for
// z < -2.5 (at exactly +-2.5 the inner formula, as Thinc's backprop_hard_swish). In float,
// as Thinc computes it.
struct HardSwish {
    static constexpr Activation kind = Activation::hard_swish;
    static constexpr bool grad_reads_y = false, grad_reads_z = true;
    TENON_HD float operator()(float z) const {
        float h = z * 0.2f + 0.5f;
        h = h < 0.0f ? 0.0f : (h > 1.0f ? 1.0f : h);
        return z * h;
    }
    TENON_HD float grad(float dy, float, float z) const {
        if (z > 2.5f) return dy;
        if (z < -2.5f) return 0.0f;
        return dy * (z * 0.4f + 0.5f);
    }
};

// Calls f with the functor of activation a (the one switch over the closed set).
template <class F>
TENON_HD inline decltype(auto) with_activation(Activation a, F&& f) {
    switch (a) {
        case Activation::relu: return f(Relu{});
        case Activation::sigmoid: return f(Sigmoid{});
        case Activation::mish: return f(Mish{});
        case Activation::gelu: return f(Gelu{});
        case Activation::swish: return f(Swish{});
        case Activation::hard_swish: return f(HardSwish{});
        case Activation::identity: break;
    }
    return f(Identity{});
}

inline constexpr bool grad_reads_y(Activation a) {
    return a == Activation::relu || a == Activation::sigmoid;
}
inline constexpr bool grad_reads_z(Activation a) {
    return a == Activation::mish || a == Activation::gelu || a == Activation::swish || a == Activation::hard_swish;
}

// y = act(y + b) over one row, keeping the pre-activation in z when z is not null.
template <class A>
TENON_HD inline void bias_activate_row(A act, float* y, const float* b, std::size_t n, float* z) {
    for (std::size_t i = 0; i < n; ++i) {
        const float v = y[i] + b[i];
        if (z) z[i] = v;
        y[i] = act(v);
    }
}
// d <- the gradient of the pre-activation over one row, in place (y, z: read only where the
// activation's flags say so).
template <class A>
TENON_HD inline void activation_backward_row(A act, float* d, const float* y, const float* z, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) d[i] = act.grad(d[i], A::grad_reads_y ? y[i] : 0.0f, A::grad_reads_z ? z[i] : 0.0f);
}

// Softmax of y / t over one row, shifted by the row's maximum for stability (inv_t = 1 / t).
TENON_HD inline void softmax_row(float* y, std::size_t n, float inv_t) {
    if (inv_t != 1.0f)
        for (std::size_t i = 0; i < n; ++i) y[i] *= inv_t;
    float mx = y[0];
    for (std::size_t i = 1; i < n; ++i) mx = y[i] > mx ? y[i] : mx;
    float sum = 0.0f;
    for (std::size_t i = 0; i < n; ++i) sum += (y[i] = std::exp(y[i] - mx));
    const float inv = 1.0f / sum;
    for (std::size_t i = 0; i < n; ++i) y[i] *= inv;
}

// Maxout over one row, its pieces NP known at compile time (0: nP at run time), so that the
// loop over a few pieces is unrolled (maxout_row below picks it).
template <std::size_t NP>
TENON_HD inline void maxout_row_pieces(const float* z, const float* b, std::size_t nO, std::size_t nP, float* y,
                                       std::int32_t* which) {
    if constexpr (NP != 0) nP = NP;
    for (std::size_t o = 0; o < nO; ++o) {
        const float* zo = z + o * nP;
        const float* bo = b ? b + o * nP : nullptr;
        std::size_t arg = 0;
        float best = zo[0] + (bo ? bo[0] : 0.0f);
        for (std::size_t p = 1; p < nP; ++p) {
            const float v = zo[p] + (bo ? bo[p] : 0.0f);
            if (v > best) {
                best = v;
                arg = p;
            }
        }
        y[o] = best;
        if (which) which[o] = static_cast<std::int32_t>(arg);
    }
}
// Maxout over one row: y[o] = max_p (z[o, p] + b[o, p]) (b may be null: z already holds it),
// ties to the first piece; which[o] = the winning piece when which is not null.
TENON_HD inline void maxout_row(const float* z, const float* b, std::size_t nO, std::size_t nP, float* y,
                                std::int32_t* which) {
    switch (nP) {
        case 2: return maxout_row_pieces<2>(z, b, nO, nP, y, which);
        case 3: return maxout_row_pieces<3>(z, b, nO, nP, y, which);  // (spaCy's Maxout layers)
        case 4: return maxout_row_pieces<4>(z, b, nO, nP, y, which);
        default: return maxout_row_pieces<0>(z, b, nO, nP, y, which);
    }
}
// Its backward: dz (nO * nP) gets dy at the winning pieces and 0 elsewhere.
TENON_HD inline void maxout_row_backward(const float* dy, const std::int32_t* which, std::size_t nO, std::size_t nP,
                                         float* dz) {
    for (std::size_t o = 0; o < nO; ++o) {
        float* d = dz + o * nP;
        for (std::size_t p = 0; p < nP; ++p) d[p] = 0.0f;
        d[static_cast<std::size_t>(which[o])] = dy[o];
    }
}

// expand_window (Thinc's seq2col): row j of a sequence of rows [start, end) (width n) as its
// window of 2 nW + 1 rows, rows j - nW .. j + nW in that order, zeros where a row is outside
// the sequence. X: all the rows; out_row: (2 nW + 1) * n values, every one written.
TENON_HD inline void seq2col_row(const float* X, std::size_t j, std::size_t start, std::size_t end, std::size_t nW,
                                 std::size_t n, float* out_row) {
    for (std::size_t k = 0; k < 2 * nW + 1; ++k) {
        float* o = out_row + k * n;
        const std::size_t r = j + k;  // the row held by slot k, plus nW
        if (r < start + nW || r >= end + nW) {
            for (std::size_t i = 0; i < n; ++i) o[i] = 0.0f;
        } else {
            const float* x = X + (r - nW) * n;
            for (std::size_t i = 0; i < n; ++i) o[i] = x[i];
        }
    }
}
// Its backward for row x of [start, end): dx_row += x's slot in each window that holds it,
// windows j = x - nW .. x + nW in that order (NumpyOps' backprop_seq2col adds them so).
TENON_HD inline void backprop_seq2col_row(const float* dY, std::size_t x, std::size_t start, std::size_t end,
                                          std::size_t nW, std::size_t n, float* dx_row) {
    const std::size_t nF = 2 * nW + 1;
    const std::size_t j0 = x >= start + nW ? x - nW : start, j1 = x + nW + 1 < end ? x + nW + 1 : end;
    for (std::size_t j = j0; j < j1; ++j) {
        const float* d = dY + (j * nF + (x + nW - j)) * n;
        for (std::size_t i = 0; i < n; ++i) dx_row[i] += d[i];
    }
}

// One sequence of len rows of width n (len >= 1 for max, first, last): y (zero on entry)
// = its reduction; which[j] = the row of column j's maximum (ties: the first), for max.
TENON_HD inline void segment_reduce_one(Reduce r, const float* x, std::size_t len, std::size_t n, float* y,
                                        std::int32_t* which) {
    switch (r) {
        case Reduce::sum:
            for (std::size_t t = 0; t < len; ++t, x += n)
                for (std::size_t j = 0; j < n; ++j) y[j] += x[j];
            break;
        case Reduce::mean: {
            const auto scale = static_cast<float>(1.0 / double(len));
            for (std::size_t t = 0; t < len; ++t, x += n)
                for (std::size_t j = 0; j < n; ++j) y[j] += scale * x[j];
            break;
        }
        case Reduce::max:
            for (std::size_t j = 0; j < n; ++j) y[j] = x[j];
            if (which)
                for (std::size_t j = 0; j < n; ++j) which[j] = 0;
            x += n;
            for (std::size_t t = 1; t < len; ++t, x += n)
                for (std::size_t j = 0; j < n; ++j)
                    if (x[j] > y[j]) {
                        y[j] = x[j];
                        if (which) which[j] = static_cast<std::int32_t>(t);
                    }
            break;
        case Reduce::first:
            for (std::size_t j = 0; j < n; ++j) y[j] = x[j];
            break;
        case Reduce::last:
            x += (len - 1) * n;
            for (std::size_t j = 0; j < n; ++j) y[j] = x[j];
            break;
    }
}
// Its backward: dx (len x n, zero on entry) from dy (one row).
TENON_HD inline void segment_reduce_one_backward(Reduce r, const float* dy, std::size_t len, std::size_t n,
                                                 const std::int32_t* which, float* dx) {
    switch (r) {
        case Reduce::sum:  // every row gets the sequence's gradient
            for (std::size_t t = 0; t < len; ++t, dx += n)
                for (std::size_t j = 0; j < n; ++j) dx[j] = dy[j];
            break;
        case Reduce::mean: {
            const auto scale = static_cast<float>(1.0 / double(len));
            for (std::size_t t = 0; t < len; ++t, dx += n)
                for (std::size_t j = 0; j < n; ++j) dx[j] = scale * dy[j];
            break;
        }
        case Reduce::max:  // to the row that held the maximum
            for (std::size_t j = 0; j < n; ++j) dx[static_cast<std::size_t>(which[j]) * n + j] = dy[j];
            break;
        case Reduce::first:
            for (std::size_t j = 0; j < n; ++j) dx[j] = dy[j];
            break;
        case Reduce::last:
            dx += (len - 1) * n;
            for (std::size_t j = 0; j < n; ++j) dx[j] = dy[j];
            break;
    }
}

// CauchySimilarity (Chen 2013; thinc/layers/cauchysimilarity.py), one row of width n:
// diff = x1 - x2 (kept for the backward pass when not null), total = sum_j W_j diff_j^2 in j
// order (kept when not null); returns the similarity 1 / (1 + total).
TENON_HD inline float cauchy_row(const float* x1, const float* x2, const float* W, std::size_t n, float* diff,
                                 float* total) {
    float s = 0.0f;
    for (std::size_t j = 0; j < n; ++j) {
        const float d = x1[j] - x2[j];
        if (diff) diff[j] = d;
        s += W[j] * d * d;
    }
    if (total) *total = s;
    return 1.0f / (1.0f + s);
}
// The gradient of a row's total from its similarity's: d_sim * -1 / (1 + total)^2.
TENON_HD inline float cauchy_d_total(float d_sim, float total) {
    const float t1 = total + 1.0f;
    return d_sim * (-1.0f / (t1 * t1));
}
// A row's input gradients: dx1 = 2 W d_total diff, dx2 = -dx1.
TENON_HD inline void cauchy_backward_row(float d_total, const float* diff, const float* W, std::size_t n, float* dx1,
                                         float* dx2) {
    for (std::size_t j = 0; j < n; ++j) {
        const float g = 2.0f * W[j] * d_total * diff[j];
        dx1[j] = g;
        dx2[j] = -g;
    }
}
// One row's term of dW_j: d_total diff_j^2 (summed over the rows in row order).
TENON_HD inline float cauchy_dW_term(float d_total, float d) { return d_total * d * d; }

// Softmax over the rows of one sequence (len rows of width n), column by column, in place:
// x[t, j] = exp(x[t, j] - max_t x[t, j]) / sum_t exp(...) (ParametricAttention's weights,
// Thinc's ops.softmax_sequences). A sequence of no rows is nothing to do.
TENON_HD inline void softmax_sequence_one(float* x, std::size_t len, std::size_t n) {
    if (len == 0) return;
    for (std::size_t j = 0; j < n; ++j) {
        float mx = x[j];
        for (std::size_t t = 1; t < len; ++t) mx = x[t * n + j] > mx ? x[t * n + j] : mx;
        float sum = 0.0f;
        for (std::size_t t = 0; t < len; ++t) sum += (x[t * n + j] = std::exp(x[t * n + j] - mx));
        const float inv = 1.0f / sum;
        for (std::size_t t = 0; t < len; ++t) x[t * n + j] *= inv;
    }
}
// Its backward over one sequence: dx = y * (dy - sum_t y * dy), column by column (dx may be dy).
TENON_HD inline void backprop_softmax_sequence_one(const float* dy, const float* y, std::size_t len, std::size_t n,
                                                   float* dx) {
    for (std::size_t j = 0; j < n; ++j) {
        float s = 0.0f;
        for (std::size_t t = 0; t < len; ++t) s += y[t * n + j] * dy[t * n + j];
        for (std::size_t t = 0; t < len; ++t) dx[t * n + j] = y[t * n + j] * dy[t * n + j] - y[t * n + j] * s;
    }
}
// One row scaled by k: y = k * x, or y += k * x (y may be x when not adding).
TENON_HD inline void scale_row(const float* x, float k, std::size_t n, float* y, bool add) {
    if (add)
        for (std::size_t i = 0; i < n; ++i) y[i] += k * x[i];
    else
        for (std::size_t i = 0; i < n; ++i) y[i] = k * x[i];
}
// The dot product of two rows.
TENON_HD inline float row_dot(const float* a, const float* b, std::size_t n) {
    float s = 0.0f;
    for (std::size_t i = 0; i < n; ++i) s += a[i] * b[i];
    return s;
}

inline constexpr float layernorm_epsilon = 1e-8f;

// The sum over i < n of term(i) (a double) as four partial sums (i mod 4) added pairwise at
// the end: a layer norm's row sums are four short chains of additions, not one of n dependent
// ones (each waits ~4 cycles for the last), in an order that depends on n alone.
template <class Term>
TENON_HD inline double sum4(std::size_t n, Term term) {
    double s[4] = {0.0, 0.0, 0.0, 0.0};
    std::size_t i = 0;
    for (; i + 4 <= n; i += 4)
        for (std::size_t j = 0; j < 4; ++j) s[j] += term(i + j);
    for (; i < n; ++i) s[0] += term(i);
    return (s[0] + s[1]) + (s[2] + s[3]);
}

// One row of LayerNorm: y = G * (x - mean) / sqrt(var + eps) + b (eps 1e-8, as Thinc),
// keeping the normalised row (xh) and 1/std (rstd) when asked. x may be y (in place).
TENON_HD inline void layernorm_row(const float* x, float* y, std::size_t n, const float* G, const float* b, float* xh,
                                   float* rstd) {
    const double mean = sum4(n, [&](std::size_t i) { return double(x[i]); }) / double(n);
    const double var = sum4(n, [&](std::size_t i) { return (x[i] - mean) * (x[i] - mean); }) / double(n);
    const auto rs = static_cast<float>(1.0 / std::sqrt(var + double(layernorm_epsilon)));
    const auto mu = static_cast<float>(mean);
    for (std::size_t i = 0; i < n; ++i) {
        const float h = (x[i] - mu) * rs;
        if (xh) xh[i] = h;
        y[i] = h * G[i] + b[i];
    }
    if (rstd) *rstd = rs;
}

// Its backward on one row, in two parts a device backend runs as separate passes (the
// parameters' gradients summed over the rows column by column, in row order, then each row's
// dx): adds dy to db and dy * xh to dG ...
TENON_HD inline void layernorm_row_param_grads(const float* dy, const float* xh, std::size_t n, float* dG,
                                               float* db) {
    for (std::size_t i = 0; i < n; ++i) {
        db[i] += dy[i];
        dG[i] += dy[i] * xh[i];
    }
}
// ... and writes dx (dy may be dx: in place).
TENON_HD inline void layernorm_row_dx(const float* dy, float* dx, const float* xh, float rs, std::size_t n,
                                      const float* G) {
    for (std::size_t i = 0; i < n; ++i) dx[i] = dy[i] * G[i];
    const double sum_d = sum4(n, [&](std::size_t i) { return double(dx[i]); }),
                 sum_dx = sum4(n, [&](std::size_t i) { return double(dx[i]) * xh[i]; });
    const float k = rs / static_cast<float>(n), sd = static_cast<float>(sum_d), sdx = static_cast<float>(sum_dx),
                fn = static_cast<float>(n);
    for (std::size_t i = 0; i < n; ++i) dx[i] = k * (fn * dx[i] - sd - xh[i] * sdx);
}
// Both: adds to dG and db and writes dx (dy may be dx: in place).
TENON_HD inline void layernorm_row_backward(const float* dy, float* dx, const float* xh, float rs, std::size_t n,
                                            const float* G, float* dG, float* db) {
    layernorm_row_param_grads(dy, xh, n, dG, db);
    layernorm_row_dx(dy, dx, xh, rs, n, G);
}

// The elementwise operations of two arrays (Ops::elementwise; Binary above): the LSTM's
// masked weights and summed biases, its gradients' sums, a column mask row by row.
// y += alpha x over n values (the optimizer's L2 as a gradient term).
TENON_HD inline void axpy(float alpha, const float* x, float* y, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) y[i] += alpha * x[i];
}
TENON_HD inline void elementwise(Binary op, const float* a, const float* b, float* y, std::size_t n) {
    switch (op) {
        case Binary::add:
            for (std::size_t i = 0; i < n; ++i) y[i] = a[i] + b[i];
            break;
        case Binary::mul:
            for (std::size_t i = 0; i < n; ++i) y[i] = a[i] * b[i];
            break;
        case Binary::add_into:
            for (std::size_t i = 0; i < n; ++i) y[i] += a[i];
            break;
        case Binary::mul_add_into:
            for (std::size_t i = 0; i < n; ++i) y[i] += a[i] * b[i];
            break;
    }
}

// The threshold on dropout's 24 bits for a rate: ceil(rate * 2^24), kept where the bits are
// >= it (random.hpp's dropout_mask; host code).
inline std::uint64_t dropout_threshold(double rate) noexcept {
    return static_cast<std::uint64_t>(std::ceil(static_cast<double>(static_cast<float>(rate)) * 16777216.0));
}

// Dropout's mask for elements first .. first + n - 1 of a call with key `key` (random.hpp's
// dropout_mask: a counter-based stream, splitmix64 of key + (j + 1) * golden ratio; kept where
// the top 24 bits are >= kt; a kept value is `keep`, whose bits are kb).
TENON_HD inline void dropout_mask_bits(std::uint64_t key, std::uint64_t first, float* m, std::size_t n,
                                       std::uint64_t kt, std::uint32_t kb) {
    std::uint64_t c = key + first * 0x9E3779B97F4A7C15ull;
    for (std::size_t j = 0; j < n; ++j) {
        c += 0x9E3779B97F4A7C15ull;
        std::uint64_t z = c;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        z ^= z >> 31;
        const std::uint32_t sel = 0u - static_cast<std::uint32_t>((z >> 40) >= kt);
        const std::uint32_t bits = kb & sel;
        std::memcpy(m + j, &bits, sizeof bits);
    }
}

// The optimizer's update of one value (Thinc's Adam and SGD; optimizer_kernels.cpp's loops and
// a device backend's pass): g is the scaled gradient; returns the new weight.
TENON_HD inline float adam_one(float w, float g, float& m1, float& m2, float b1, float b2, float lr_t, float eps,
                               float wd) {
    const float u = b1 * m1 + (1.0f - b1) * g, v = b2 * m2 + (1.0f - b2) * g * g;
    m1 = u;
    m2 = v;
    return (w - lr_t * u / (std::sqrt(v) + eps)) * wd;
}
TENON_HD inline float sgd_one(float w, float g, float lr, float wd) { return (w - lr * g) * wd; }
// The moving average's update towards the new weight w.
TENON_HD inline void average_one(float& a, float w, float decay_keep) { a -= (1.0f - decay_keep) * (a - w); }

// One step of an LSTM cell (Thinc's NumpyOps LSTM), for one hidden unit: gf, gi, go, gc are
// its four gate pre-activations (forget, input, output, candidate) and become the activated
// gates (sigmoid, sigmoid, sigmoid, tanh: what the backward reads); c = f * cprev + i * cand,
// h = tanh(c) * o. The sigmoid is unclipped, as Thinc's LSTM kernel (1 / (1 + exp(-x)) is 0 or
// 1 at the extremes, never NaN).
TENON_HD inline void lstm_cell_one(float& gf, float& gi, float& go, float& gc, float cprev, float& c, float& h) {
    gf = 1.0f / (1.0f + std::exp(-gf));
    gi = 1.0f / (1.0f + std::exp(-gi));
    go = 1.0f / (1.0f + std::exp(-go));
    gc = std::tanh(gc);
    c = gf * cprev + gi * gc;
    h = std::tanh(c) * go;
}
// Its backward for one hidden unit: dh (the hidden's gradient), dc (the gradient the cell gets
// from the next step), the activated gates, the cell c and the previous cell give the four
// pre-activations' gradients and the previous cell's (dcprev).
TENON_HD inline void lstm_cell_one_backward(float dh, float dc, float f, float i, float o, float cand, float c,
                                            float cprev, float& dgf, float& dgi, float& dgo, float& dgc,
                                            float& dcprev) {
    const float tc = std::tanh(c);
    const float d_o = dh * tc;
    const float dct = dc + dh * o * (1.0f - tc * tc);
    dcprev = dct * f;
    dgf = dct * cprev * f * (1.0f - f);
    dgi = dct * cand * i * (1.0f - i);
    dgo = d_o * o * (1.0f - o);
    dgc = dct * i * (1.0f - cand * cand);
}
// A row: g holds the 4 nH pre-activations in Thinc's gate order in blocks of nH; hidden units
// [k0, k1) (a backend's vector loop does the rest).
TENON_HD inline void lstm_cell_row(float* g, const float* cprev, float* c, float* h, std::size_t nH,
                                   std::size_t k0 = 0, std::size_t k1 = ~std::size_t{0}) {
    for (std::size_t k = k0; k < (k1 < nH ? k1 : nH); ++k)
        lstm_cell_one(g[k], g[nH + k], g[2 * nH + k], g[3 * nH + k], cprev[k], c[k], h[k]);
}
TENON_HD inline void lstm_cell_row_backward(const float* dh, const float* dc, const float* g, const float* c,
                                            const float* cprev, float* dg, float* dcprev, std::size_t nH,
                                            std::size_t k0 = 0, std::size_t k1 = ~std::size_t{0}) {
    for (std::size_t k = k0; k < (k1 < nH ? k1 : nH); ++k)
        lstm_cell_one_backward(dh[k], dc[k], g[k], g[nH + k], g[2 * nH + k], g[3 * nH + k], c[k], cprev[k], dg[k],
                               dg[nH + k], dg[2 * nH + k], dg[3 * nH + k], dcprev[k]);
}

}  // namespace fn
}  // namespace tenon
