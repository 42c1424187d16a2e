// Mish: Y = z * tanh(softplus(z)), z = X W^T + b, and Y = z for z >= 20 (Thinc's threshold);
// options `dropout` and `normalize` as Relu. After thinc/layers/mish.py and Thinc's CPU kernel.
#pragma once
#include <cmath>

#include "tenon/layers/detail/dense.hpp"

namespace tenon {

template <std::size_t NO = dyn, std::size_t NI = dyn>
class Mish : public detail::Dense<Mish<NO, NI>, NO, NI> {
    using Base = detail::Dense<Mish<NO, NI>, NO, NI>;
    // E012: a static width of 0.
    static_assert(sizeof(check::width_check<NO, Mish, check::nO>) + sizeof(check::width_check<NI, Mish, check::nI>) > 0);

public:
    // The same layer with a static nI (chain's width propagation rebinds a dyn nI).
    template <std::size_t N2>
        requires(NO != 0)  // not for a layer that fails E012
    using with_nI = Mish<NO, N2>;
    template <std::size_t N2>
        requires(NI != N2)
    explicit Mish(Mish<NO, N2>&& other) : Base(std::move(other)) {}
    static constexpr bool keeps_preactivation = true;  // the backward pass needs z
    // lower(): a product, then bias and activate() over each row (lower/lowered_as.hpp).
    static constexpr lowering::DenseStage lowered_as{"mish", false};
    static constexpr float threshold = 20.0f;

    // Without options: out of line (see DenseOptions), so that a caller's long chain of
    // Mish() makes no options object per layer.
    [[gnu::noinline]] explicit Mish() : Mish(DenseOptions{}) {}
    explicit Mish(DenseOptions o)
        : Base("mish", o.nO, o.nI, o.init_W ? o.init_W : Init(glorot_uniform_init), o.init_b, o.normalize,
               o.dropout) {}

    static float mish(float z) {
        if (z >= threshold) return z;
        return static_cast<float>(z * std::tanh(std::log1p(std::exp(double(z)))));
    }
    void activate(float* Y, const float* b, std::size_t rows, std::size_t n, float* Z) const {
        Base::bias_map(Y, b, rows, n, Z, mish);
    }
    void activate_backward(float* d, const float*, const float* Z, std::size_t rows, std::size_t n) const {
        for (std::size_t i = 0; i < rows * n; ++i) {
            const double x = Z[i];
            if (x >= threshold) continue;  // above the threshold mish is the identity
            const double e = std::exp(x), e2 = e * e;
            const double omega = 4.0 * (x + 1.0) + 4.0 * e2 + e2 * e + e * (4.0 * x + 6.0);
            const double delta = 2.0 * e + e2 + 2.0;
            d[i] = static_cast<float>(d[i] * e * omega / (delta * delta));
        }
    }
};

}  // namespace tenon
