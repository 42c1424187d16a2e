// Linear: Y = X W^T + b, W (nO, nI) initialised with glorot_uniform_init, b with zero_init.
// After thinc/layers/linear.py.
#pragma once
#include "tenon/layers/detail/dense.hpp"

namespace tenon {

template <extent_t NO = dyn, extent_t NI = dyn>
class Linear : public detail::Dense<Linear<NO, NI>, NO, NI> {
    using Base = detail::Dense<Linear<NO, NI>, NO, NI>;
    // E012: a static width of 0.
    static_assert(sizeof(check::width_check<NO, Linear, check::nO>) + sizeof(check::width_check<NI, Linear, check::nI>) > 0);

public:
    // The same layer with a static nI (chain's width propagation rebinds a dyn nI).
    template <extent_t N2>
        requires(valid_width(NO))  // not for a layer that fails E012
    using with_nI = Linear<NO, N2>;
    template <extent_t N2>
        requires(NI != N2)
    explicit Linear(Linear<NO, N2>&& other) : Base(std::move(other)) {}
    // No activation; lower(): a product, then the bias over each row (lower/lowered_as.hpp).
    static constexpr lowering::DenseStage lowered_as{"linear", Activation::identity};

    // Thinc's positional widths (Linear(64, 32)): tenon-E056, the one error (the layer is made
    // without them, so that the rest of the program adds none).
    explicit Linear(check::thinc_width, check::thinc_width = check::thinc_width(0)) : Linear() {
        static_assert(sizeof(check::widths_as_arguments<Linear>) > 0);
    }
    // Without options: out of line (see DenseOptions), so that a caller's long chain of
    // Linear() makes no options object per layer.
    [[gnu::noinline]] explicit Linear() : Linear(LinearOptions{}) {}
    explicit Linear(LinearOptions o)
        : Base("linear", o.nO, o.nI, o.init_W ? o.init_W : Init(glorot_uniform_init), o.init_b, false, {}) {}
};

}  // namespace tenon
