// HardSwish: Y = z * clip(0.2 z + 0.5, 0, 1), z = X W^T + b (Thinc's hard_swish: Y = 0 below
// -2.5, Y = z above 2.5); W from he_normal_init; options `dropout` and `normalize` as Relu.
// After thinc/layers/hard_swish.py and Ops.hard_swish / backprop_hard_swish.
#pragma once
#include "tenon/layers/detail/dense.hpp"

namespace tenon {

template <extent_t NO = dyn, extent_t NI = dyn>
class HardSwish : public detail::Dense<HardSwish<NO, NI>, NO, NI> {
    using Base = detail::Dense<HardSwish<NO, NI>, NO, NI>;
    // E012: a static width of 0.
    static_assert(sizeof(check::width_check<NO, HardSwish, check::nO>) +
                      sizeof(check::width_check<NI, HardSwish, check::nI>) >
                  0);

public:
    // The same layer with a static nI (chain's width propagation rebinds a dyn nI).
    template <extent_t N2>
        requires(valid_width(NO))  // not for a layer that fails E012
    using with_nI = HardSwish<NO, N2>;
    template <extent_t N2>
        requires(NI != N2)
    explicit HardSwish(HardSwish<NO, N2>&& other) : Base(std::move(other)) {}
    // The activation (fn::HardSwish: its gradient from the pre-activation z, which the
    // forward pass keeps); lower(): a product, then bias and hardswish over each row
    // (lower/lowered_as.hpp).
    static constexpr lowering::DenseStage lowered_as{"hardswish", Activation::hard_swish};

    // Thinc's positional widths (HardSwish(64, 32)): tenon-E056, the one error (the layer is made
    // without them, so that the rest of the program adds none).
    explicit HardSwish(check::thinc_width, check::thinc_width = check::thinc_width(0)) : HardSwish() {
        static_assert(sizeof(check::widths_as_arguments<HardSwish>) > 0);
    }
    // Without options: out of line (see DenseOptions), so that a caller's long chain of
    // HardSwish() makes no options object per layer.
    [[gnu::noinline]] explicit HardSwish() : HardSwish(DenseOptions{}) {}
    explicit HardSwish(DenseOptions o)
        : Base("hardswish", o.nO, o.nI, o.init_W ? o.init_W : Init(he_normal_init), o.init_b, o.normalize,
               o.dropout) {}
};

}  // namespace tenon
