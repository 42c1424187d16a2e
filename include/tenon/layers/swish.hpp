// Swish: Y = z * sigmoid(z), z = X W^T + b (the sigmoid's input clipped to [-20, 20], as
// Thinc's); W from he_normal_init; options `dropout` and `normalize` as Relu. After
// thinc/layers/swish.py and Ops.swish / backprop_swish.
#pragma once
#include "tenon/layers/detail/dense.hpp"

namespace tenon {

template <extent_t NO = dyn, extent_t NI = dyn>
class Swish : public detail::Dense<Swish<NO, NI>, NO, NI> {
    using Base = detail::Dense<Swish<NO, NI>, NO, NI>;
    // E012: a static width of 0.
    static_assert(sizeof(check::width_check<NO, Swish, check::nO>) + sizeof(check::width_check<NI, Swish, check::nI>) > 0);

public:
    // The same layer with a static nI (chain's width propagation rebinds a dyn nI).
    template <extent_t N2>
        requires(valid_width(NO))  // not for a layer that fails E012
    using with_nI = Swish<NO, N2>;
    template <extent_t N2>
        requires(NI != N2)
    explicit Swish(Swish<NO, N2>&& other) : Base(std::move(other)) {}
    // The activation (fn::Swish: its gradient from the pre-activation z, which the forward
    // pass keeps); lower(): a product, then bias and swish over each row
    // (lower/lowered_as.hpp).
    static constexpr lowering::DenseStage lowered_as{"swish", Activation::swish};

    // Thinc's positional widths (Swish(64, 32)): tenon-E056, the one error (the layer is made
    // without them, so that the rest of the program adds none).
    explicit Swish(check::thinc_width, check::thinc_width = check::thinc_width(0)) : Swish() {
        static_assert(sizeof(check::widths_as_arguments<Swish>) > 0);
    }
    // Without options: out of line (see DenseOptions), so that a caller's long chain of
    // Swish() makes no options object per layer.
    [[gnu::noinline]] explicit Swish() : Swish(DenseOptions{}) {}
    explicit Swish(DenseOptions o)
        : Base("swish", o.nO, o.nI, o.init_W ? o.init_W : Init(he_normal_init), o.init_b, o.normalize,
               o.dropout) {}
};

}  // namespace tenon
