// The passes of the dense layers (Linear, Relu, Sigmoid, Mish, Gelu, Swish, HardSwish,
// Softmax: layers/detail/dense.hpp), for every width and activation.
#include <string>
#include <utility>

#include "tenon/layers/detail/dense.hpp"

namespace tenon::detail {

DenseBackprop::DenseBackprop() = default;
DenseBackprop::DenseBackprop(const DenseBackprop&) = default;
DenseBackprop::DenseBackprop(DenseBackprop&&) noexcept = default;
DenseBackprop& DenseBackprop::operator=(const DenseBackprop&) = default;
DenseBackprop& DenseBackprop::operator=(DenseBackprop&&) noexcept = default;
DenseBackprop::~DenseBackprop() = default;

Floats2d DenseBackprop::operator()(Floats2dCView dY) const {
    Floats2d dX({X.shape(0), X.shape(1)}, uninitialized);
    run(dY, dX.data());
    return dX;
}

void DenseBackprop::params_only(Floats2dCView dY) const { run(dY, nullptr); }

void DenseBackprop::run(Floats2dCView dY, float* dX) const { DenseCore::backward(*this, dY, dX); }

void DenseCore::backward(const DenseBackprop& bp, Floats2dCView dY, float* dX) {
    if (bp.refused) throw Error(bp.refused, "tenon-E117");
    Node& layer = *bp.layer;
    const std::size_t rows = bp.X.shape(0), nO = layer.dim(0);
    check_same_shape(layer, dY, rows, nO);  // before the tail, so the error names this layer
    Floats2d d = bp.tail->backward(dY, bp.tail_bp);
    const Ops& ops = layer.ops();
    ops.activation_backward(bp.act, d.data(), bp.Y.data(), bp.Z.data(), rows, nO);
    if (bp.softmax)
        if (const float k = softmax_inv_temperature(layer); k != 1.0f) ops.scale(d.data(), d.size(), k);
    affine_backward(ops, d.data(), bp.X, layer.param(0).value.data(), nO, layer.grad_data(0), layer.grad_data(1), dX);
}

void DenseCore::init(Node& layer, const Init& init_W, const Init& init_b, NormDropout& tail, const Floats2dCView* X,
                     const Floats2dCView* Y) {
    if (X) layer.resolve_dim(1, X->shape(1));
    if (Y) layer.resolve_dim(0, Y->shape(1));
    const std::size_t nO = layer.require_dim(0), nI = layer.require_dim(1);
    layer.allocate_param(0, {nO, nI});
    layer.allocate_param(1, {nO});
    detail::run_init(init_W, layer, "W");
    detail::run_init(init_b, layer, "b");
    tail.initialize(nO);
    layer.mark_initialized();
}

void DenseCore::activate(const Node& layer, Activation act, bool softmax_rows, Floats2dCView X, float* Y, float* Z) {
    const Ops& ops = layer.ops();
    const std::size_t rows = X.shape(0), nO = layer.dim(0);
    const float* W = layer.param(0).value.data();
    const float* b = layer.param(1).value.data();
    // Bias and activation in the product's epilogue where the backend has one (Ops::gemm_bias_act).
    if (!Z && !softmax_rows && ops.gemm_bias_act(act, rows, nO, X.shape(1), X.data(), W, nullptr, b, Y)) return;
    affine_product(ops, X, W, nO, Y);
    ops.bias_activate(act, Y, b, rows, nO, Z);
    if (softmax_rows) ops.softmax_rows(Y, rows, nO, softmax_inv_temperature(layer));
}

Floats2d DenseCore::predict(const Node& layer, const NormDropout& tail, Activation act, bool softmax, Floats2dCView X) {
    check_width(layer, X, layer.dim(1));
    Floats2d Y({X.shape(0), layer.dim(0)}, uninitialized);
    activate(layer, act, softmax, X, Y.data(), nullptr);
    return tail.predict(std::move(Y));
}

std::pair<Floats2d, DenseBackprop> DenseCore::forward(Node& layer, NormDropout& tail, Activation act, bool softmax,
                                                      Floats2dCView X, bool is_train) {
    check_width(layer, X, layer.dim(1));
    const std::size_t rows = X.shape(0), nO = layer.dim(0);
    DenseBackprop bp;
    bp.layer = &layer;
    bp.tail = &tail;
    bp.act = act;
    bp.softmax = softmax;
    bp.X = Floats2d(X);
    bp.Y = Floats2d({rows, nO}, uninitialized);
    const bool keep_z = fn::grad_reads_z(act);
    if (keep_z) bp.Z = Floats2d({rows, nO}, uninitialized);
    activate(layer, act, softmax, X, bp.Y.data(), keep_z ? bp.Z.data() : nullptr);
    Floats2d out = tail.has_norm() || tail.has_dropout() ? tail.forward(bp.Y, is_train, bp.tail_bp) : bp.Y;
    return {std::move(out), std::move(bp)};
}

void check_softmax_temperature(double t) {
    if (!(t > 0.0)) throw Error("softmax: the temperature must be > 0, found " + detail::number_str(t), "tenon-E113");
}

float softmax_inv_temperature(const Node& layer) {
    const double t = layer.attr_as<double>("softmax_temperature");
    check_softmax_temperature(t);
    return t != 1.0 ? static_cast<float>(1.0 / t) : 1.0f;
}

}  // namespace tenon::detail
