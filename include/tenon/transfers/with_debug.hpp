// with_debug(layer, {.name, .on_init, .on_forward, .on_backprop}): the layer, unchanged, with
// callbacks run on initialize, on the forward pass (predict too, with is_train false) and on
// backprop, each with what that step receives (thinc/layers/with_debug.py):
//   on_init(layer, X, Y)          X, Y: pointers to the samples, null where none is given
//   on_forward(layer, X, is_train)
//   on_backprop(dY)
// The signature, the widths and the parameters are the layer's. Thinc replaces the layer's
// callbacks in place and returns the same model; tenon wraps it (a node named after the
// layer, or `name`, whose one child is the layer). on_forward receives the layer as const,
// since predict is const and may run on many threads.
#pragma once
#include <algorithm>
#include <functional>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include "tenon/model/layer.hpp"
#include "tenon/model/widths.hpp"
#include "tenon/transfers/layer_argument.hpp"

namespace tenon {

template <class L>
struct DebugCallbacks {
    using XPtr = const std::remove_cvref_t<typename L::InView>*;
    using YPtr = const std::remove_cvref_t<typename L::OutView>*;
    std::optional<std::string> name = {};
    std::function<void(L& layer, XPtr X, YPtr Y)> on_init = {};
    std::function<void(const L& layer, typename L::InView X, bool is_train)> on_forward = {};
    std::function<void(typename L::OutView dY)> on_backprop = {};
};

template <Model L>
class WithDebug : public Layer<WithDebug<L>, typename L::In, typename L::Out> {
    using Base = Layer<WithDebug<L>, typename L::In, typename L::Out>;
    friend Base;

public:
    using typename Base::In;
    using typename Base::InView;
    using typename Base::Out;
    using typename Base::OutView;
    static constexpr extent_t static_nO = widths::static_nO<L>();
    static constexpr extent_t static_nI = widths::static_nI<L>();
    static constexpr bool width_preserving = widths::width_preserving<L>;
    static constexpr bool nO_is_nI = widths::nO_is_nI<L>;

    WithDebug(L layer, DebugCallbacks<L> callbacks)
        : Base("with_debug", {{"nO", dyn}, {"nI", dyn}}, {}), layer_(std::move(layer)), callbacks_(std::move(callbacks)) {
        this->name_ = callbacks_.name ? *callbacks_.name : layer_.name();
        sync_dims();
        if (layer_.is_initialized()) this->mark_initialized();
    }

    L& layer() noexcept { return layer_; }
    const L& layer() const noexcept { return layer_; }
    void for_each_child(const std::function<void(Node&)>& f) override { f(layer_); }

    struct Backprop {
        typename L::Backprop bp;
        std::function<void(OutView)> on_backprop;
        In operator()(OutView dY) const {
            if (on_backprop) on_backprop(dY);
            return bp(dY);
        }
    };

private:
    // The layer's widths, as this model's (chain reads nO, and gives a width it knows as nI).
    void sync_dims() {
        if (layer_.has_dim("nO")) this->set_dim("nO", layer_.get_dim("nO"));
        if (layer_.has_dim("nI")) this->set_dim("nI", layer_.get_dim("nI"));
    }
    template <class XP, class YP>
    void init_impl(XP X, YP Y) {
        // Without a sample Y, a width given to this model as nO (by the model around it) reaches
        // the layer, as Y would.
        bool no_y = true;
        if constexpr (!std::is_null_pointer_v<YP>) no_y = !Y;
        if (no_y) widths::offer(layer_, "nO", widths::known(*this, "nO"));
        if (this->has_dim("nI") && !layer_.has_dim("nI")) {
            const auto names = layer_.dim_names();
            if (std::find(names.begin(), names.end(), "nI") != names.end()) layer_.set_dim("nI", this->get_dim("nI"));
        }
        typename DebugCallbacks<L>::XPtr x = nullptr;
        typename DebugCallbacks<L>::YPtr y = nullptr;
        if constexpr (!std::is_null_pointer_v<XP>) x = X;
        if constexpr (!std::is_null_pointer_v<YP>) y = Y;
        if (callbacks_.on_init) callbacks_.on_init(layer_, x, y);
        layer_.initialize_from(x, y);
        sync_dims();
        this->mark_initialized();
    }
    Out predict_impl(InView X) const {
        if (callbacks_.on_forward) callbacks_.on_forward(layer_, X, false);
        return layer_.predict_inner(X);
    }
    std::pair<Out, Backprop> forward_impl(InView X, bool is_train) {
        if (callbacks_.on_forward) callbacks_.on_forward(layer_, X, is_train);
        auto [Y, b] = layer_.update_inner(X, is_train);
        return {std::move(Y), Backprop{std::move(b), callbacks_.on_backprop}};
    }

    L layer_;
    DebugCallbacks<L> callbacks_;
};

// with_debug(layer, {.on_forward = [](const auto& layer, auto X, bool is_train) {...}}): the
// callbacks are DebugCallbacks<L>, every one optional (Thinc's keyword arguments).
template <class L>
    requires Model<std::remove_cvref_t<L>>
auto with_debug(L&& layer, DebugCallbacks<std::remove_cvref_t<L>> callbacks = {}) {
    using D = std::remove_cvref_t<L>;
    return WithDebug<D>(std::forward<L>(layer), std::move(callbacks));
}
// A first argument that is not a model: E049.
template <class L>
    requires(!Model<std::remove_cvref_t<L>>)
auto with_debug(L&&) {
    if constexpr (!is_failed_model<L>)  // a failed model's error is already said
    check::report<check::transfer_layer_argument<check::combinator<check::with_debug_>,
                                                 check::not_a_model<check::name_t<L>>>>();
    return failed_model{};
}

}  // namespace tenon
