// Sigmoid: Y = sigmoid(X W^T + b), the input to the sigmoid clipped to [-20, 20] as in Thinc.
// After thinc/layers/sigmoid.py.
#pragma once
#include <cmath>

#include "tenon/layers/detail/dense.hpp"

namespace tenon {

template <extent_t NO = dyn, extent_t NI = dyn>
class Sigmoid : public detail::Dense<Sigmoid<NO, NI>, NO, NI> {
    using Base = detail::Dense<Sigmoid<NO, NI>, NO, NI>;
    // E012: a static width of 0.
    static_assert(sizeof(check::width_check<NO, Sigmoid, check::nO>) + sizeof(check::width_check<NI, Sigmoid, check::nI>) > 0);

public:
    // The same layer with a static nI (chain's width propagation rebinds a dyn nI).
    template <extent_t N2>
        requires(valid_width(NO))  // not for a layer that fails E012
    using with_nI = Sigmoid<NO, N2>;
    template <extent_t N2>
        requires(NI != N2)
    explicit Sigmoid(Sigmoid<NO, N2>&& other) : Base(std::move(other)) {}
    // The activation (fn::Sigmoid: its input clipped to [-20, 20]); lower(): a product, then
    // bias and sigmoid over each row (lower/lowered_as.hpp).
    static constexpr lowering::DenseStage lowered_as{"sigmoid", Activation::sigmoid};

    // Thinc's positional widths (Sigmoid(64, 32)): tenon-E056, the one error (the layer is made
    // without them, so that the rest of the program adds none).
    explicit Sigmoid(check::thinc_width, check::thinc_width = check::thinc_width(0)) : Sigmoid() {
        static_assert(sizeof(check::widths_as_arguments<Sigmoid>) > 0);
    }
    // Without options: out of line (see DenseOptions), so that a caller's long chain of
    // Sigmoid() makes no options object per layer.
    [[gnu::noinline]] explicit Sigmoid() : Sigmoid(LinearOptions{}) {}
    explicit Sigmoid(LinearOptions o)
        : Base("sigmoid", o.nO, o.nI, o.init_W ? o.init_W : Init(zero_init), o.init_b, false, {}) {}
};

}  // namespace tenon
