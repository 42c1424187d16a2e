// Relu: Y = max(X W^T + b, 0); options `dropout` and `normalize` as in thinc/layers/relu.py
// (LayerNorm after the activation, then Dropout).
#pragma once
#include "tenon/layers/detail/dense.hpp"

namespace tenon {

template <extent_t NO = dyn, extent_t NI = dyn>
class Relu : public detail::Dense<Relu<NO, NI>, NO, NI> {
    using Base = detail::Dense<Relu<NO, NI>, NO, NI>;
    // E012: a static width of 0.
    static_assert(sizeof(check::width_check<NO, Relu, check::nO>) + sizeof(check::width_check<NI, Relu, check::nI>) > 0);

public:
    // The same layer with a static nI (chain's width propagation rebinds a dyn nI).
    template <extent_t N2>
        requires(valid_width(NO))  // not for a layer that fails E012
    using with_nI = Relu<NO, N2>;
    template <extent_t N2>
        requires(NI != N2)
    explicit Relu(Relu<NO, N2>&& other) : Base(std::move(other)) {}
    // The activation (fn::Relu: the gradient passes where the output is positive, as Thinc's
    // dY * (Y > 0)); lower(): a product, then bias and relu over each row (lower/lowered_as.hpp).
    static constexpr lowering::DenseStage lowered_as{"relu", Activation::relu};

    // Thinc's positional widths (Relu(64, 32)): tenon-E056, the one error (the layer is made
    // without them, so that the rest of the program adds none).
    explicit Relu(check::thinc_width, check::thinc_width = check::thinc_width(0)) : Relu() {
        static_assert(sizeof(check::widths_as_arguments<Relu>) > 0);
    }
    // Without options: out of line (see DenseOptions), so that a caller's long chain of
    // Relu() makes no options object per layer.
    [[gnu::noinline]] explicit Relu() : Relu(DenseOptions{}) {}
    explicit Relu(DenseOptions o)
        : Base("relu", o.nO, o.nI, o.init_W ? o.init_W : Init(glorot_uniform_init), o.init_b, o.normalize,
               o.dropout) {}
};

}  // namespace tenon
