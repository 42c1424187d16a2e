// Maxout's passes (layers/maxout.hpp), for every width.
#include <utility>

#include "tenon/layers/maxout.hpp"

namespace tenon::detail {

MaxoutBackprop::MaxoutBackprop() = default;
MaxoutBackprop::MaxoutBackprop(const MaxoutBackprop&) = default;
MaxoutBackprop::MaxoutBackprop(MaxoutBackprop&&) noexcept = default;
MaxoutBackprop& MaxoutBackprop::operator=(const MaxoutBackprop&) = default;
MaxoutBackprop& MaxoutBackprop::operator=(MaxoutBackprop&&) noexcept = default;
MaxoutBackprop::~MaxoutBackprop() = default;

Floats2d MaxoutBackprop::operator()(Floats2dCView dY) const { return MaxoutCore::backward(*this, dY); }

Floats2d MaxoutCore::backward(const MaxoutBackprop& bp, Floats2dCView dY) {
    Node* layer = bp.layer;
    const Floats2d& X = bp.X;
    const std::size_t rows = X.shape(0), nO = layer->dim(0), nP = layer->dim(2);
    check_same_shape(*layer, dY, rows, nO);  // before the tail, so the error names this layer
    Floats2d d = bp.tail->backward(dY, bp.tail_bp);
    const Ops& ops = layer->ops();
    Floats2d dZ({rows, nO * nP}, uninitialized);  // zero except at the winners
    ops.maxout_backward(d.data(), bp.which.data(), rows, nO, nP, dZ.data());
    Floats2d dX({rows, X.shape(1)}, uninitialized);
    affine_backward(ops, dZ.data(), X, layer->param(0).value.data(), nO * nP, layer->grad_data(0), layer->grad_data(1),
                    dX.data());
    return dX;
}

void MaxoutCore::init(Node& layer, const Init& init_W, const Init& init_b, NormDropout& tail, const Floats2dCView* X,
                      const Floats2dCView* Y) {
    if (X) layer.resolve_dim(1, X->shape(1));
    if (Y) layer.resolve_dim(0, Y->shape(1));
    const std::size_t nO = layer.require_dim(0), nI = layer.require_dim(1), nP = layer.require_dim(2);
    layer.allocate_param(0, {nO, nP, nI});
    layer.allocate_param(1, {nO, nP});
    detail::run_init(init_W, layer, "W");
    detail::run_init(init_b, layer, "b");
    tail.initialize(nO);
    layer.mark_initialized();
}

// Z = X W^T over all nO * nP pieces, then the max of Z + b per output (and its index).
Floats2d MaxoutCore::pieces(const Node& layer, Floats2dCView X, std::int32_t* which) {
    check_width(layer, X, layer.dim(1));
    const std::size_t rows = X.shape(0), nO = layer.dim(0), nP = layer.dim(2);
    const Ops& ops = layer.ops();
    Floats2d Z({rows, nO * nP}, uninitialized);
    affine_product(ops, X, layer.param(0).value.data(), nO * nP, Z.data());
    Floats2d best({rows, nO}, uninitialized);
    ops.maxout(Z.data(), layer.param(1).value.data(), rows, nO, nP, best.data(), which);
    return best;
}

Floats2d MaxoutCore::predict(const Node& layer, const NormDropout& tail, Floats2dCView X) {
    return tail.predict(pieces(layer, X, nullptr));
}

std::pair<Floats2d, MaxoutBackprop> MaxoutCore::forward(Node& layer, NormDropout& tail, Floats2dCView X,
                                                        bool is_train) {
    MaxoutBackprop bp;
    bp.layer = &layer;
    bp.tail = &tail;
    bp.X = Floats2d(X);
    bp.which = Array<std::int32_t, dyn, dyn>({X.shape(0), layer.dim(0)}, uninitialized, layer.ops().memory());  // the pass's
    Floats2d Y = tail.forward(pieces(layer, X, bp.which.data()), is_train, bp.tail_bp);
    return {std::move(Y), std::move(bp)};
}

}  // namespace tenon::detail
