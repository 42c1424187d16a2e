// Softmax: Y = softmax((X W^T + b) / temperature) over each row; W and b zero-initialised
// (Thinc's default). As in thinc/layers/softmax.py, backprop treats dY as the gradient of the
// logits (dY / temperature), without the softmax Jacobian: it is meant for
// CategoricalCrossentropy, whose gradient P - Y is already the logits' gradient. With another
// loss, put the Jacobian in the loss or use Linear and a loss on logits.
// normalize_outputs = false makes predict return the raw logits (training still normalises).
#pragma once
#include <cmath>
#include <utility>
#include <variant>

#include "tenon/layers/detail/dense.hpp"

namespace tenon {

struct SoftmaxOptions {
    std::size_t nO = dyn;
    std::size_t nI = dyn;
    Init init_W = {};  // empty: zero_init
    Init init_b = {};  // empty: zero_init
    bool normalize_outputs = true;
    double temperature = 1.0;
};

template <extent_t NO = dyn, extent_t NI = dyn>
class Softmax : public detail::Dense<Softmax<NO, NI>, NO, NI> {
    using Base = detail::Dense<Softmax<NO, NI>, NO, NI>;
    friend Layer<Softmax<NO, NI>, Floats2d, Floats2d>;
    // E012: a static width of 0.
    static_assert(sizeof(check::width_check<NO, Softmax, check::nO>) +
                      sizeof(check::width_check<NI, Softmax, check::nI>) >
                  0);

public:
    // The same layer with a static nI (chain's width propagation rebinds a dyn nI).
    template <extent_t N2>
        requires(valid_width(NO))  // not for a layer that fails E012
    using with_nI = Softmax<NO, N2>;
    template <extent_t N2>
        requires(NI != N2)
    explicit Softmax(Softmax<NO, N2>&& other) : Base(std::move(other)) {}
    // No elementwise activation, then a softmax over each row (fn::softmax_row, with the
    // temperature); lower(): a product, then bias and the softmax (lower/lowered_as.hpp).
    static constexpr lowering::DenseStage lowered_as{"softmax", Activation::identity, true};

    // Thinc's positional widths (Softmax(64, 32)): tenon-E056, the one error (the layer is made
    // without them, so that the rest of the program adds none).
    explicit Softmax(check::thinc_width, check::thinc_width = check::thinc_width(0)) : Softmax() {
        static_assert(sizeof(check::widths_as_arguments<Softmax>) > 0);
    }
    // Without options: out of line (see DenseOptions), so that a caller's long chain of
    // Softmax() makes no options object per layer.
    [[gnu::noinline]] explicit Softmax() : Softmax(SoftmaxOptions{}) {}
    explicit Softmax(SoftmaxOptions o)
        : Base("softmax", o.nO, o.nI, o.init_W ? o.init_W : Init(zero_init), o.init_b, false, {}) {
        check_temperature(o.temperature);
        this->set_attr("softmax_normalize", o.normalize_outputs);
        this->set_attr("softmax_temperature", o.temperature);
    }

    double temperature() const {
        const double t = this->template attr_as<double>("softmax_temperature");
        check_temperature(t);
        return t;
    }
    bool normalize_outputs() const { return this->template attr_as<bool>("softmax_normalize"); }

    // 1 / temperature, as the plan computes it (the softmax's input scale, and the gradient's).
    float inv_temperature() const { return detail::softmax_inv_temperature(*this); }

private:
    static void check_temperature(double t) { detail::check_softmax_temperature(t); }

    // Outside training with normalize_outputs off, the output is the logits and there is no
    // backward pass (Thinc's semantics).
    std::pair<Floats2d, typename Base::Backprop> forward_impl(Floats2dCView X, bool is_train) {
        if (is_train || normalize_outputs()) return Base::forward_impl(X, is_train);
        typename Base::Backprop bp;
        bp.layer = this;
        bp.refused = "softmax: backprop is not supported for an unnormalized Softmax (normalize_outputs = false "
                     "and is_train = false)";
        return {predict_impl(X), std::move(bp)};
    }

    // Prediction skips the normalisation when normalize_outputs is off (Thinc's semantics).
    Floats2d predict_impl(Floats2dCView X) const {
        if (normalize_outputs()) return Base::predict_impl(X);
        detail::check_width(*this, X, this->dim(1));
        Floats2d Y({X.shape(0), this->dim(0)}, uninitialized);
        detail::DenseCore::activate(*this, Base::act(), /*softmax_rows=*/false, X, Y.data(), nullptr);
        return Y;
    }
};

}  // namespace tenon
