// residual(layer): Y = X + layer(X) (thinc/layers/residual.py), for Floats2d (any float
// array), Ragged (the data summed, the lengths kept), Padded (all the data summed, as Thinc)
// and List (item by item). The layer must map its input type to itself (E024) and keep the
// width: a compile error (E025) where nO and nI are both static and differ, a run-time error
// (tenon-E162) where they are known only then. The backward pass is dX = dY + layer's dX.
#pragma once
#include <cstddef>
#include <functional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "tenon/combinators/detail/parallel.hpp"

namespace tenon {

namespace check {
// E024: residual(layer) of a layer whose output data type is not its input type.
template <class Layer, class Expects, class Produces>
struct residual_types {
    static_assert(always_false<Layer>,
                  "[tenon-E024] residual(layer): Y = X + layer(X), so the layer's output type must be its input "
                  "type, one that can be summed (float arrays, Ragged, Padded, List of float arrays) "
                  "(expects_type<T> but produces_type<U>: see the instantiation line)");
};
// E025: residual(layer) of a layer whose static output width is not its static input width.
template <class Layer, class Expects, class Produces>
struct residual_widths {
    static_assert(always_false<Layer>,
                  "[tenon-E025] residual(layer): Y = X + layer(X), so the layer's output width must be its input "
                  "width (expects_width<W> but produces_width<V>: see the instantiation line)");
};
template <class L, extent_t NI = widths::static_nI<L>(), extent_t NO = widths::static_nO<L>()>
using residual_check = std::conditional_t<
    !std::is_same_v<typename L::In, typename L::Out> || !detail::summable<typename L::In>,
    residual_types<L, expects_type<name_t<typename L::In>>, produces_type<name_t<typename L::Out>>>,
    std::conditional_t<NI != dyn && NO != dyn && NI != NO, residual_widths<L, expects_width<NI>, produces_width<NO>>,
                       ok>>;
}  // namespace check

template <Model L>
class Residual : public Layer<Residual<L>, typename L::In, typename L::In> {
    static_assert(sizeof(check::residual_check<L>) > 0);  // E024, E025
    using Base = Layer<Residual<L>, typename L::In, typename L::In>;
    friend Base;

public:
    using typename Base::In;
    using typename Base::InView;
    using typename Base::Out;
    using typename Base::OutView;
    // One width in and out: the layer's static nI or nO, whichever is known.
    static constexpr extent_t static_nI =
        widths::static_nI<L>() != dyn ? widths::static_nI<L>() : widths::static_nO<L>();
    static constexpr extent_t static_nO = static_nI;
    static constexpr bool nO_is_nI = true;
    template <extent_t W>
    using with_nI = Residual<typename widths::rebind_nI<L, W>::type>;
    template <extent_t W>
    using nested_failure = widths::nested_failure_t<L, W>;

    explicit Residual(L layer)
        : Base("residual(" + layer.name() + ")", {{"nO", as_dim(static_nO)}, {"nI", as_dim(static_nI)}}, {}),
          layer_(std::move(layer)) {
        // The width the layer already knows (from its options, where the type leaves it dyn),
        // for the models around this one to read before initialize.
        if (static_nI == dyn || layer_.is_initialized()) sync_dims();
        if (layer_.is_initialized()) this->mark_initialized();
    }
    template <class U>
        requires(!std::is_same_v<U, L>)
    explicit Residual(Residual<U>&& other) : Residual(L(std::move(other).layer())) {}

    L& layer() & noexcept { return layer_; }
    const L& layer() const& noexcept { return layer_; }
    L&& layer() && noexcept { return std::move(layer_); }

    void for_each_child(const std::function<void(Node&)>& f) override { f(layer_); }

    struct Backprop {
        const Residual* model = nullptr;
        typename L::Backprop bp;
        detail::Layout layout;  // the output's, which dY must have
        In operator()(OutView dY) const {
            if (model && detail::layout_of(dY) != layout)
                throw ShapeError(model->name() + ": backprop: expected a gradient shaped like the output, " +
                                     detail::layout_vec_str(layout, detail::layout_kind_of<std::remove_cvref_t<decltype(dY)>>()) +
                                     ", but found " + detail::layout_str(dY),
                                 "tenon-E162");
            In dX = bp(dY);
            if (model) detail::add_into(dX, In(dY), model->name(), "tenon-E162", ": backprop");
            else detail::add_into(dX, In(dY), "residual", "tenon-E162");
            return dX;
        }
    };

private:
    void init_impl(const std::remove_reference_t<InView>* X, const std::remove_reference_t<OutView>* Y) {
        // The one width: the sample's, else this node's (given by the model around it), else
        // the layer's nI or nO (from its type or options), so that initialize() without a
        // sample reaches the layer wherever the types fix the width.
        std::size_t n = detail::sample_width(X);
        if (n == dyn && this->has_dim("nI")) n = this->get_dim("nI");
        if (n == dyn && this->has_dim("nO")) n = this->get_dim("nO");
        if (n == dyn && layer_.has_dim("nI")) n = layer_.get_dim("nI");
        if (n == dyn && layer_.has_dim("nO")) n = layer_.get_dim("nO");
        // The width is known: the layer's nI and nO are both it.
        detail::offer_dim(layer_, "nI", n);
        detail::offer_dim(layer_, "nO", n);
        layer_.initialize_from(X, Y);
        if (layer_.has_dim("nI") && layer_.has_dim("nO") && layer_.get_dim("nI") != layer_.get_dim("nO"))
            throw ShapeError(this->name() + ": Y = X + layer(X) needs the layer's output width to be its input "
                                            "width, but " + layer_.name() + " has nI=" +
                                 std::to_string(layer_.get_dim("nI")) + " and nO=" +
                                 std::to_string(layer_.get_dim("nO")),
                             "tenon-E162");
        sync_dims();
        this->mark_initialized();
    }
    void sync_dims() {
        std::size_t n = layer_.has_dim("nI") ? layer_.get_dim("nI") : layer_.has_dim("nO") ? layer_.get_dim("nO") : dyn;
        if (n != dyn) {
            this->set_dim("nI", n, true);
            this->set_dim("nO", n, true);
        }
    }

    void check_same(const InView& X, const Out& Y) const {
        if (detail::layout_of(X) != detail::layout_of(Y))
            throw ShapeError(this->name() + ": Y = X + layer(X) needs the layer's output shaped like its input, "
                                            "but the input is " + detail::layout_str(X) + " and " + layer_.name() +
                                 "'s output is " + detail::layout_str(Y),
                             "tenon-E162");
    }
    static void add_input(Out& Y, const InView& X) {
        if constexpr (requires { X.shape(); }) {
            detail::add_floats(Y.data(), X.data(), Y.size());
        } else {
            detail::add_into(Y, X, "residual", "tenon-E162");
        }
    }

    Out predict_impl(InView X) const {
        Out Y = layer_.predict_inner(X);
        check_same(X, Y);
        add_input(Y, X);
        return Y;
    }
    std::pair<Out, Backprop> forward_impl(InView X, bool is_train) {
        auto [Y, b] = layer_.update_inner(X, is_train);
        check_same(X, Y);
        add_input(Y, X);
        Backprop bp;
        bp.model = this;
        bp.bp = std::move(b);
        bp.layout = detail::layout_of(Y);
        return {std::move(Y), std::move(bp)};
    }

    L layer_;
};

template <class M>
    requires Model<M>
auto residual(M&& layer) {
    using D = std::remove_cvref_t<M>;
    if constexpr (!std::is_same_v<check::residual_check<D>, check::ok>) {
        check::report<check::residual_check<D>>();  // E024, E025: said here, at the call
        return failed_model{};
    } else if constexpr (widths::static_nI<D>() == dyn && widths::static_nO<D>() != dyn &&
                         !std::is_same_v<typename widths::rebind_nI<D, widths::static_nO<D>()>::type, D>) {
        // Y = X + layer(X): the input width is the layer's nO, so the layer gets it now (its
        // widths worked out once, not again when the residual is chained).
        using R = typename widths::rebind_nI<D, widths::static_nO<D>()>::type;
        return Residual<R>(R(D(std::forward<M>(layer))));
    } else {
        return Residual<D>(D(std::forward<M>(layer)));
    }
}

// With a failed model (its error is already said): a failed model (model/failed_model.hpp).
template <class... A>
    requires(any_failed_model<A...>)
failed_model residual(A&&...) noexcept {
    return {};
}

}  // namespace tenon
