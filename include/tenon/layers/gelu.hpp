// Gelu: Y = z * Phi(z), z = X W^T + b, the exact GELU with Thinc's gaussian_cdf (not the tanh
// approximation); W from he_normal_init; options `dropout` and `normalize` as Relu. After
// thinc/layers/gelu.py and Ops.gelu / backprop_gelu.
#pragma once
#include "tenon/layers/detail/dense.hpp"

namespace tenon {

template <extent_t NO = dyn, extent_t NI = dyn>
class Gelu : public detail::Dense<Gelu<NO, NI>, NO, NI> {
    using Base = detail::Dense<Gelu<NO, NI>, NO, NI>;
    // E012: a static width of 0.
    static_assert(sizeof(check::width_check<NO, Gelu, check::nO>) + sizeof(check::width_check<NI, Gelu, check::nI>) > 0);

public:
    // The same layer with a static nI (chain's width propagation rebinds a dyn nI).
    template <extent_t N2>
        requires(valid_width(NO))  // not for a layer that fails E012
    using with_nI = Gelu<NO, N2>;
    template <extent_t N2>
        requires(NI != N2)
    explicit Gelu(Gelu<NO, N2>&& other) : Base(std::move(other)) {}
    // The activation (fn::Gelu: its gradient Phi(z) + z phi(z) from the pre-activation z,
    // which the forward pass keeps); lower(): a product, then bias and gelu over each row
    // (lower/lowered_as.hpp).
    static constexpr lowering::DenseStage lowered_as{"gelu", Activation::gelu};

    // Thinc's positional widths (Gelu(64, 32)): tenon-E056, the one error (the layer is made
    // without them, so that the rest of the program adds none).
    explicit Gelu(check::thinc_width, check::thinc_width = check::thinc_width(0)) : Gelu() {
        static_assert(sizeof(check::widths_as_arguments<Gelu>) > 0);
    }
    // Without options: out of line (see DenseOptions), so that a caller's long chain of
    // Gelu() makes no options object per layer.
    [[gnu::noinline]] explicit Gelu() : Gelu(DenseOptions{}) {}
    explicit Gelu(DenseOptions o)
        : Base("gelu", o.nO, o.nI, o.init_W ? o.init_W : Init(he_normal_init), o.init_b, o.normalize,
               o.dropout) {}
};

}  // namespace tenon
