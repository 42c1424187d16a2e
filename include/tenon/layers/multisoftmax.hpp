// MultiSoftmax<nI>(nOs): several softmaxes side by side (thinc/layers/multisoftmax.py), one
// layer that predicts several class attributes at once: Y = X W^T + b, then a softmax over
// each group of columns, [0, nOs[0]), [nOs[0], nOs[0] + nOs[1]), ... (6 classes of one
// attribute and 5 of another: 11 columns, two distributions). As Thinc's, backprop takes dY
// as the gradient of the logits (a cross-entropy over each group gives P - T there), and W
// and b start at zero. dims nO = the sum of nOs (from the groups, not the type) and nI (static
// or dyn); the groups are a fixed attribute ("nOs" = "6,5") that a file must agree with. A
// plan runs it as a layer stage (no lowering declaration). Errors: tenon-E197 (no groups, a
// group of no columns).
#pragma once
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "tenon/layers/detail/affine.hpp"
#include "tenon/model/layer.hpp"

namespace tenon {

namespace detail {
// The sum of the groups' widths (tenon-E197 for no groups or an empty one), and their text.
std::size_t multisoftmax_width(const std::vector<std::size_t>& nOs);
std::string multisoftmax_groups(const std::vector<std::size_t>& nOs);
}  // namespace detail

template <extent_t NI = dyn>
class MultiSoftmax : public Layer<MultiSoftmax<NI>, Floats2d, Floats2d> {
    using Base = Layer<MultiSoftmax<NI>, Floats2d, Floats2d>;
    friend Base;
    static_assert(sizeof(check::width_check<NI, MultiSoftmax, check::nI>) > 0);  // E012

public:
    static constexpr extent_t static_nI = usable_width(NI);
    static constexpr extent_t static_nO = dyn;  // the groups' sum: a run-time value

    explicit MultiSoftmax(std::vector<std::size_t> nOs, std::size_t nI = dyn)
        : Base(Node::dense_node("multisoftmax", dyn, NI, detail::multisoftmax_width(nOs), nI)), nOs_(std::move(nOs)) {
        this->set_fixed_attr("nOs", detail::multisoftmax_groups(nOs_));
        this->fix_dim(0, this->dim(0));  // nO is the groups' sum: set_dim cannot change it (tenon-E101)
    }

    const std::vector<std::size_t>& nOs() const noexcept { return nOs_; }

    struct Backprop {
        MultiSoftmax* layer = nullptr;
        Floats2d X;  // the input (for dW)
        Floats2d operator()(Floats2dCView dY) const {
            const std::size_t rows = X.shape(0), nO = layer->dim(0);
            detail::check_same_shape(*layer, dY, rows, nO);
            Floats2d dX({rows, X.shape(1)}, uninitialized);
            detail::affine_backward(layer->ops(), dY.data(), X, layer->param(0).value.data(), nO, layer->grad_data(0),
                                    layer->grad_data(1), dX.data());
            return dX;
        }
    };

private:
    void init_impl(const Floats2dCView* X, const Floats2dCView* Y) {
        if (X) this->resolve_dim(1, X->shape(1));
        if (Y) this->resolve_dim(0, Y->shape(1));  // (the groups fix nO: another width is tenon-E101)
        const std::size_t nO = this->require_dim(0), nI = this->require_dim(1);
        this->allocate_param(0, {nO, nI});  // zeros, as Thinc's
        this->allocate_param(1, {nO});
        this->mark_initialized();
    }
    // The logits, then a softmax over each group's columns (copied out to contiguous rows and
    // back: every step is an entry of the layer's backend).
    Floats2d run(Floats2dCView X) const {
        detail::check_width(*this, X, this->dim(1));
        const std::size_t rows = X.shape(0), nO = this->dim(0);
        const Ops& ops = this->ops();
        Floats2d Y({rows, nO}, uninitialized);
        detail::affine_product(ops, X, this->param(0).value.data(), nO, Y.data());
        ops.bias_activate(Activation::identity, Y.data(), this->param(1).value.data(), rows, nO, nullptr);
        std::size_t widest = 0;
        for (std::size_t n : nOs_) widest = n > widest ? n : widest;
        Floats2d group({rows, widest}, uninitialized);
        std::size_t c0 = 0;
        for (std::size_t n : nOs_) {
            ops.copy_rows(Y.data() + c0, nO, group.data(), n, rows, n, false);
            ops.softmax_rows(group.data(), rows, n, 1.0f);
            ops.copy_rows(group.data(), n, Y.data() + c0, nO, rows, n, false);
            c0 += n;
        }
        return Y;
    }
    Floats2d predict_impl(Floats2dCView X) const { return run(X); }
    std::pair<Floats2d, Backprop> forward_impl(Floats2dCView X, bool) {
        Floats2d Y = run(X);
        return {std::move(Y), Backprop{this, Floats2d(X)}};
    }

    std::vector<std::size_t> nOs_;
};

}  // namespace tenon
