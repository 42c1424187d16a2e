// with_reshape(layer): Floats3d -> Floats3d through a Floats2d -> Floats2d layer
// (thinc/layers/with_reshape.py): X of shape (B, T, nI) is seen as (B * T, nI) (no copy),
// the layer runs on it, and its (B * T, nO) output is reshaped to (B, T, nO). backprop
// reshapes dY to (B * T, nO), runs the layer's backprop and returns dX as (B, T, nI).
// (Thinc's backprop reshapes dY to X's shape and hands the layer a 3-d array, which fails for
// every layer; tenon does the reshape the forward pass implies.) The static widths are the
// layer's, so chain's width checks see through with_reshape.
#pragma once
#include <algorithm>
#include <array>
#include <cstring>
#include <optional>
#include <functional>
#include <string>
#include <type_traits>
#include <utility>

#include "tenon/model/diagnostics.hpp"
#include "tenon/model/layer.hpp"
#include "tenon/model/widths.hpp"
#include "tenon/transfers/layer_argument.hpp"

namespace tenon {

namespace check {
// E047: with_reshape's layer must map Floats2d to Floats2d.
template <class Layer, class Expects, class Given>
struct with_reshape_layer {
    static_assert(always_false<Layer>,
                  "[tenon-E047] with_reshape(layer): the layer must map Floats2d to Floats2d (it runs on the "
                  "(B * T, N) rows of a Floats3d) (expects_type<Floats2d> -> produces_type<Floats2d>, but the layer "
                  "given_type<In -> Out>: see the instantiation line)");
};
template <class In, class Out>
struct maps {};
}  // namespace check

template <Model L>
class WithReshape : public Layer<WithReshape<L>, Floats3d, Floats3d> {
    using Base = Layer<WithReshape<L>, Floats3d, Floats3d>;
    friend Base;
    static_assert(std::is_same_v<typename L::In, Floats2d> && std::is_same_v<typename L::Out, Floats2d>);

public:
    static constexpr extent_t static_nO = widths::static_nO<L>();
    static constexpr extent_t static_nI = widths::static_nI<L>();
    static constexpr bool width_preserving = widths::width_preserving<L>;
    static constexpr bool nO_is_nI = widths::nO_is_nI<L>;
    // chain's width propagation: the layer with a static nI, inside.
    template <extent_t W>
        requires widths::rebindable<L>
    using with_nI = WithReshape<typename widths::rebind_nI<L, W>::type>;
    template <extent_t W>
    using nested_failure = widths::nested_failure_t<L, W>;
    template <class L2>
        requires(!std::is_same_v<L2, L> && std::is_constructible_v<L, L2 &&>)
    explicit WithReshape(WithReshape<L2>&& other)
        : Base("with_reshape", {{"nO", dyn}, {"nI", dyn}}, {}), layer_(std::move(other.layer_)) {
        this->name_ = other.name_;
        sync_dims();
        if (layer_.is_initialized()) this->mark_initialized();
    }

    explicit WithReshape(L layer) : Base("with_reshape", {{"nO", dyn}, {"nI", dyn}}, {}), layer_(std::move(layer)) {
        this->name_ = "with_reshape(" + layer_.name() + ")";
        sync_dims();
        if (layer_.is_initialized()) this->mark_initialized();
    }

    L& layer() noexcept { return layer_; }
    const L& layer() const noexcept { return layer_; }
    void for_each_child(const std::function<void(Node&)>& f) override { f(layer_); }

    struct Backprop {
        const WithReshape* model = nullptr;
        typename L::Backprop bp;
        std::array<std::size_t, 3> x_shape{}, y_shape{};
        Floats3d operator()(Floats3dCView dY) const {
            if (dY.shape() != y_shape)
                throw ShapeError(model->name() + ": backprop: expected a gradient of shape " +
                                     detail::shape_str(y_shape) + " like the output, but found " +
                                     detail::shape_str(dY.shape()),
                                 "tenon-E185");
            const Floats2dCView d2(dY.data(), {y_shape[0] * y_shape[1], y_shape[2]});
            Floats2d dX2 = bp(d2);
            return to3d(dX2, x_shape, *model);
        }
    };

private:
    template <Model>
    friend class WithReshape;

    void sync_dims() {
        if (layer_.has_dim("nO")) this->set_dim("nO", layer_.get_dim("nO"));
        if (layer_.has_dim("nI")) this->set_dim("nI", layer_.get_dim("nI"));
    }
    static Floats2dCView as2d(Floats3dCView X) { return Floats2dCView(X.data(), {X.shape(0) * X.shape(1), X.shape(2)}); }
    // The (B * T, N) rows back as (B, T, N); the layer must give one row per input row.
    static Floats3d to3d(const Floats2d& Y2, std::array<std::size_t, 3> shape, const Node& model) {
        if (Y2.shape(0) != shape[0] * shape[1])
            throw ShapeError(model.name() + ": the layer must give one row per input row: expected " +
                                 std::to_string(shape[0] * shape[1]) + " rows (" + std::to_string(shape[0]) + " x " +
                                 std::to_string(shape[1]) + ") but it gave " + std::to_string(Y2.shape(0)),
                             "tenon-E186");
        shape[2] = Y2.shape(1);
        Floats3d Y(shape, uninitialized);
        detail::copy_bytes(Y.data(), Y.memory(), Y2.data(), Y2.memory(), Y.size() * sizeof(float));  // (device: the backend's)
        return Y;
    }

    template <class XP, class YP>
    void init_impl(XP X, YP Y) {
        // Without a sample Y, a width given to this model as nO (by the model around it) reaches
        // the layer, as Y would.
        bool no_y = true;
        if constexpr (!std::is_null_pointer_v<YP>) no_y = !Y;
        if (no_y) widths::offer(layer_, "nO", widths::known(*this, "nO"));
        // A width given to this model (chain's propagation) reaches the layer.
        if (this->has_dim("nI") && !layer_.has_dim("nI")) {
            const auto names = layer_.dim_names();
            if (std::find(names.begin(), names.end(), "nI") != names.end()) layer_.set_dim("nI", this->get_dim("nI"));
        }
        std::optional<Floats2dCView> x, y;
        if constexpr (!std::is_null_pointer_v<XP>)
            if (X) x = as2d(*X);
        if constexpr (!std::is_null_pointer_v<YP>)
            if (Y) y = as2d(*Y);
        layer_.initialize_from(x ? &*x : nullptr, y ? &*y : nullptr);
        sync_dims();
        this->mark_initialized();
    }
    Floats3d predict_impl(Floats3dCView X) const { return to3d(layer_.predict_inner(as2d(X)), X.shape(), *this); }
    std::pair<Floats3d, Backprop> forward_impl(Floats3dCView X, bool is_train) {
        auto [Y2, b] = layer_.update_inner(as2d(X), is_train);
        Backprop bp{this, std::move(b), X.shape(), {}};
        Floats3d Y = to3d(Y2, X.shape(), *this);
        bp.y_shape = Y.shape();
        return {std::move(Y), std::move(bp)};
    }

    L layer_;
};

template <class L>
auto with_reshape(L&& layer) {
    using D = std::remove_cvref_t<L>;
    if constexpr (is_failed_model<D>) {
        return failed_model{};  // its error is already said
    } else if constexpr (!Model<D>) {
        check::report<check::transfer_layer_argument<check::combinator<check::with_reshape_>,
                                                     check::not_a_model<check::name_t<D>>>>();
        return failed_model{};
    } else if constexpr (!std::is_same_v<typename D::In, Floats2d> || !std::is_same_v<typename D::Out, Floats2d>) {
        check::report<check::with_reshape_layer<check::model<D>, check::expects_type<check::Floats2d>,
                                                check::given_type<check::maps<check::name_t<typename D::In>,
                                                check::name_t<typename D::Out>>>>>();
        return failed_model{};
    } else {
        return WithReshape<D>(std::forward<L>(layer));
    }
}

}  // namespace tenon
