// Mish: Y = z * tanh(softplus(z)), z = X W^T + b, and Y = z for z >= 20 (Thinc's threshold);
// options `dropout` and `normalize` as Relu. After thinc/layers/mish.py and Thinc's CPU kernel.
#pragma once
#include <cmath>

#include "tenon/layers/detail/dense.hpp"

namespace tenon {

template <extent_t NO = dyn, extent_t NI = dyn>
class Mish : public detail::Dense<Mish<NO, NI>, NO, NI> {
    using Base = detail::Dense<Mish<NO, NI>, NO, NI>;
    // E012: a static width of 0.
    static_assert(sizeof(check::width_check<NO, Mish, check::nO>) + sizeof(check::width_check<NI, Mish, check::nI>) > 0);

public:
    // The same layer with a static nI (chain's width propagation rebinds a dyn nI).
    template <extent_t N2>
        requires(valid_width(NO))  // not for a layer that fails E012
    using with_nI = Mish<NO, N2>;
    template <extent_t N2>
        requires(NI != N2)
    explicit Mish(Mish<NO, N2>&& other) : Base(std::move(other)) {}
    // The activation (fn::Mish: the identity from z >= 20, its gradient from the
    // pre-activation z, which the forward pass keeps); lower(): a product, then bias and mish
    // over each row (lower/lowered_as.hpp).
    static constexpr lowering::DenseStage lowered_as{"mish", Activation::mish};

    // Thinc's positional widths (Mish(64, 32)): tenon-E056, the one error (the layer is made
    // without them, so that the rest of the program adds none).
    explicit Mish(check::thinc_width, check::thinc_width = check::thinc_width(0)) : Mish() {
        static_assert(sizeof(check::widths_as_arguments<Mish>) > 0);
    }
    // Without options: out of line (see DenseOptions), so that a caller's long chain of
    // Mish() makes no options object per layer.
    [[gnu::noinline]] explicit Mish() : Mish(DenseOptions{}) {}
    explicit Mish(DenseOptions o)
        : Base("mish", o.nO, o.nI, o.init_W ? o.init_W : Init(glorot_uniform_init), o.init_b, o.normalize,
               o.dropout) {}
};

}  // namespace tenon
