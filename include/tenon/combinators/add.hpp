// add(a, b, ...) (also a + b): every layer gets the same input and their outputs are summed,
// Y = a(X) + b(X) + ... (thinc/layers/add.py). The layers are one flat pack: a + b + c and
// add(add(a, b), c) are one Add of three. They must take the same input type and produce the
// same output type (E020), one that can be summed (E023), with equal widths: a compile error
// where the widths are static (E021 for outputs, E028 for inputs), a run-time error
// (tenon-E160) where they are known only then. The backward pass sums the layers' dX.
#pragma once
#include <array>
#include <cstddef>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "tenon/combinators/detail/parallel.hpp"
#include "tenon/lower/lowered_as.hpp"

namespace tenon {

namespace check {
// E020: the layers of add() differ in their input or output data type.
template <class LayerAt, class Expects, class Produces, class LayerAt0, class Expects0, class Produces0>
struct add_types {
    static_assert(always_false<LayerAt>,
                  "[tenon-E020] add(a, b, ...) / a + b: every layer must take the same input type and produce the "
                  "same output type as the first (layer<I> expects_type<T>, produces_type<U> but layer<0> "
                  "expects_type<T0>, produces_type<U0>: see the instantiation line)");
};
// E021: two layers of add() with different static output widths.
template <class LayerAt, class Produces, class LayerAt2, class Produces2>
struct add_widths {
    static_assert(always_false<LayerAt>,
                  "[tenon-E021] add(a, b, ...) / a + b: the layers' outputs are summed, so their output widths must "
                  "be equal (layer<I> produces_width<W> but layer<J> produces_width<V>: see the instantiation line)");
};

// The check for add(Ls...): `ok` when all is well, else the first failure's check.
template <class... Ls>
struct add_check_of {
    using L0 = type_at_t<0, Ls...>;
    static constexpr std::size_t bad_type = detail::first_types_mismatch<Ls...>();
    static constexpr std::size_t n = sizeof...(Ls);
    static constexpr detail::width_clash in_clash = [] {
        const extent_t w[] = {widths::static_nI_v<Ls>..., dyn};
        return detail::first_width_clash(w, n);
    }();
    static constexpr detail::width_clash out_clash = [] {
        const extent_t w[] = {widths::static_nO_v<Ls>..., dyn};
        return detail::first_width_clash(w, n);
    }();
    template <std::size_t I>
    using types_failure = add_types<layer<I>, expects_type<name_t<typename type_at_t<I, Ls...>::In>>,
                                    produces_type<name_t<typename type_at_t<I, Ls...>::Out>>, layer<0>,
                                    expects_type<name_t<typename L0::In>>, produces_type<name_t<typename L0::Out>>>;
    using type = typename std::conditional_t<
        (bad_type < n), std::type_identity<types_failure<(bad_type < n ? bad_type : 0)>>,
        std::conditional_t<
            !detail::summable<typename L0::Out>,
            std::type_identity<combine_output<add_combinator, produces_type<name_t<typename L0::Out>>>>,
            std::conditional_t<
                (in_clash.at < n),
                std::type_identity<input_widths<add_combinator, layer<in_clash.at>, expects_width<in_clash.a>,
                                                layer<in_clash.with>, expects_width<in_clash.b>>>,
                std::conditional_t<(out_clash.at < n),
                                   std::type_identity<add_widths<layer<out_clash.at>, produces_width<out_clash.a>,
                                                                 layer<out_clash.with>, produces_width<out_clash.b>>>,
                                   std::type_identity<ok>>>>>::type;
};
template <class... Ls>
using add_check = typename add_check_of<Ls...>::type;
}  // namespace check

template <Model... Ls>
    requires(sizeof...(Ls) >= 1)
class Add : public detail::Parallel<Add<Ls...>, Ls...> {
    static_assert(sizeof(check::add_check<Ls...>) > 0);  // E020, E021, E023, E028
    using P = detail::Parallel<Add<Ls...>, Ls...>;
    using typename P::Base;
    friend Base;
    using P::N;

    // The output width equals the input width where some layer keeps it (add(noop(), f)).
    static constexpr bool keeps_some_width =
        any_true<(widths::width_preserving<Ls> || widths::nO_is_nI<Ls>)...>;

public:
    using typename P::In;
    using typename P::InView;
    using typename P::Out;
    using typename P::OutView;
    static constexpr extent_t static_nI = detail::common_static_nI<Ls...>;
    static constexpr extent_t static_nO = [] {
        const extent_t w[] = {widths::static_nO_v<Ls>..., dyn};
        const extent_t o = detail::common_width(w, N);
        return o == dyn && keeps_some_width ? static_nI : o;
    }();
    static constexpr bool width_preserving = all_true<widths::width_preserving<Ls>...>;
    static constexpr bool nO_is_nI = keeps_some_width;
    // The same layers with a static nI (chain's width propagation).
    template <extent_t W>
    using with_nI = Add<typename widths::rebind_nI<Ls, W>::type...>;
    template <extent_t W>
    using nested_failure = widths::first_failure_t<widths::nested_failure_t<Ls, W>...>;

    template <class... Us>
        requires(sizeof...(Us) == N)
    explicit Add(std::tuple<Us...>&& parts) : P(std::move(parts), static_nO, static_nI) {
        this->name_ = "add";
        // The output width a layer already knows from its options (where the types leave it
        // dyn), for the models around this one to read before initialize.
        if constexpr (static_nO == dyn) {
            std::size_t nO = dyn;
            for (std::size_t w : this->children_nO())
                if (nO == dyn) nO = w;
            if (nO != dyn) this->set_dim("nO", nO, true);
        }
    }
    // lower(): every layer's stages from the same boundary, then a stage that sums their
    // outputs in the layers' order (as forward_impl below: the same bits).
    static constexpr lowering::ConcatBranches lowered_as{.sum = true};

    // From an Add whose layers convert to these (a dyn nI made static).
    template <class... Us>
        requires(!std::is_same_v<Add<Us...>, Add>)
    explicit Add(Add<Us...>&& other) : Add(std::move(other).layers()) {}

    struct Backprop {
        const Add* model = nullptr;
        std::tuple<typename Ls::Backprop...> bps;
        detail::Layout layout;  // the output's, which dY must have
        In operator()(OutView dY) const {
            if (model && detail::layout_of(dY) != layout)
                throw ShapeError("add: backprop: expected a gradient shaped like the output, " +
                                     detail::layout_vec_str(layout, detail::layout_kind_of<std::remove_cvref_t<decltype(dY)>>()) +
                                     ", but found " + detail::layout_str(dY),
                                 "tenon-E160");
            In dX = std::get<0>(bps)(dY);
            [&]<std::size_t... I>(std::index_sequence<I...>) {
                (detail::add_into(dX, In(std::get<I + 1>(bps)(dY)), "add: backprop", "tenon-E160"), ...);
            }(std::make_index_sequence<N - 1>{});
            return dX;
        }
    };

private:
    void init_impl(const std::remove_reference_t<InView>* X, const std::remove_reference_t<OutView>* Y) {
        // The width every layer must produce: Y's, this node's, a layer's, or (where a layer
        // keeps the width) the input's. Layers whose nO is still unknown get it.
        std::size_t nO = Y ? detail::width_of(*Y) : dyn;
        if (nO == dyn && this->has_dim("nO")) nO = this->get_dim("nO");
        for (std::size_t w : this->children_nO())
            if (nO == dyn) nO = w;
        if (nO == dyn && keeps_some_width) {
            nO = detail::sample_width(X);
            if (nO == dyn && this->has_dim("nI")) nO = this->get_dim("nI");
        }
        this->init_children(X, Y, nO);
        const auto outs = this->children_nO();
        const auto nodes = this->child_nodes();
        for (std::size_t i = 0; i < N; ++i) {
            if (outs[i] == dyn) continue;
            if (nO != dyn && outs[i] != nO)
                throw ShapeError("add: the layers' outputs are summed, so their widths must be equal, but layer " +
                                     std::to_string(i) + " (" + nodes[i]->name() + ") has nO=" +
                                     std::to_string(outs[i]) + " where " + std::to_string(nO) + " was expected",
                                 "tenon-E160");
            nO = outs[i];
        }
        if (nO != dyn) this->set_dim("nO", nO, true);
        this->mark_initialized();
    }

    Out predict_impl(InView X) const {
        Out Y = std::get<0>(this->children_).predict_inner(X);
        [&]<std::size_t... I>(std::index_sequence<I...>) {
            (detail::add_into(Y, std::get<I + 1>(this->children_).predict_inner(X), "add", "tenon-E160"), ...);
        }(std::make_index_sequence<N - 1>{});
        return Y;
    }

    std::pair<Out, Backprop> forward_impl(InView X, bool is_train) {
        Backprop bp;
        bp.model = this;
        // (No structured binding: clang 14 cannot capture one in the lambda below.)
        auto first = std::get<0>(this->children_).update_inner(X, is_train);
        Out Y = std::move(first.first);
        std::get<0>(bp.bps) = std::move(first.second);
        [&]<std::size_t... I>(std::index_sequence<I...>) {
            (step<I + 1>(X, is_train, Y, bp), ...);
        }(std::make_index_sequence<N - 1>{});
        bp.layout = detail::layout_of(Y);
        return {std::move(Y), std::move(bp)};
    }
    template <std::size_t I>
    void step(InView X, bool is_train, Out& Y, Backprop& bp) {
        auto [y, b] = std::get<I>(this->children_).update_inner(X, is_train);
        std::get<I>(bp.bps) = std::move(b);
        detail::add_into(Y, y, "add", "tenon-E160");
    }
};

namespace detail {
// add(ms...) / a + b: the flat list of layers (Adds among the arguments spliced in), checked,
// with a dyn nI made the layers' common static nI.
template <class... Ms>
auto make_add(Ms&&... ms) {
    auto parts = std::tuple_cat(parts_of<Add>(std::forward<Ms>(ms))...);
    using Parts = decltype(parts);
    using Check = typename std::remove_cvref_t<decltype(std::apply(
        [](auto&... p) { return std::type_identity<check::add_check<std::remove_cvref_t<decltype(p)>...>>{}; },
        parts))>::type;
    if constexpr (!std::is_same_v<Check, check::ok>) {
        check::report<Check>();  // E020, E021, E023, E028: said here, at the call
        return failed_model{};
    } else {
        return typename parallel_type<Add, Parts>::type(std::move(parts));
    }
}
}  // namespace detail

// add(a, b, ...): at least two layers, as Thinc's add(layer1, layer2, *layers).
template <class... Ms>
    requires(sizeof...(Ms) >= 2 && all_true<Model<Ms>...>)
auto add(Ms&&... ms) {
    return detail::make_add(std::forward<Ms>(ms)...);
}
template <Model A, Model B>
auto operator+(A&& a, B&& b) {
    return detail::make_add(std::forward<A>(a), std::forward<B>(b));
}
// a + x, x + a where x is not a model: E029 (never taken from two non-models).
template <class A, class B>
    requires(Model<A> != Model<B> && !any_failed_model<A, B>)
auto operator+(A&&, B&&) {
    using NotAModel = std::conditional_t<Model<A>, B, A>;
    check::report<check::combinator_operand<check::not_a_model<check::name_t<NotAModel>>>>();
    return failed_model{};
}
// With a failed model (its error is already said): a failed model (model/failed_model.hpp).
template <class... Ms>
    requires(any_failed_model<Ms...>)
failed_model add(Ms&&...) noexcept {
    return {};
}
template <class A, class B>
    requires(any_failed_model<A, B>)
failed_model operator+(A&&, B&&) noexcept {
    return {};
}

}  // namespace tenon
