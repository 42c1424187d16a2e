// Relu: Y = max(X W^T + b, 0); options `dropout` and `normalize` as in thinc/layers/relu.py
// (LayerNorm after the activation, then Dropout).
#pragma once
#include "tenon/layers/detail/dense.hpp"

namespace tenon {

template <std::size_t NO = dyn, std::size_t NI = dyn>
class Relu : public detail::Dense<Relu<NO, NI>, NO, NI> {
    using Base = detail::Dense<Relu<NO, NI>, NO, NI>;
    // E012: a static width of 0.
    static_assert(sizeof(check::width_check<NO, Relu, check::nO>) + sizeof(check::width_check<NI, Relu, check::nI>) > 0);

public:
    // The same layer with a static nI (chain's width propagation rebinds a dyn nI).
    template <std::size_t N2>
        requires(NO != 0)  // not for a layer that fails E012
    using with_nI = Relu<NO, N2>;
    template <std::size_t N2>
        requires(NI != N2)
    explicit Relu(Relu<NO, N2>&& other) : Base(std::move(other)) {}
    static constexpr bool keeps_preactivation = false;
    // lower(): a product, then bias and activate() over each row (lower/lowered_as.hpp).
    static constexpr lowering::DenseStage lowered_as{"relu", true};

    // Without options: out of line (see DenseOptions), so that a caller's long chain of
    // Relu() makes no options object per layer.
    [[gnu::noinline]] explicit Relu() : Relu(DenseOptions{}) {}
    explicit Relu(DenseOptions o)
        : Base("relu", o.nO, o.nI, o.init_W ? o.init_W : Init(glorot_uniform_init), o.init_b, o.normalize,
               o.dropout) {}

    void activate(float* Y, const float* b, std::size_t rows, std::size_t n, float* Z) const {
        Base::bias_map(Y, b, rows, n, Z, [](float v) { return v > 0.0f ? v : 0.0f; });
    }
    // The gradient passes where the output is positive (Thinc: dY * (Y > 0)).
    void activate_backward(float* d, const float* Y, const float*, std::size_t rows, std::size_t n) const {
        for (std::size_t i = 0, e = rows * n; i < e; ++i) d[i] = Y[i] > 0.0f ? d[i] : 0.0f;
    }
};

}  // namespace tenon
