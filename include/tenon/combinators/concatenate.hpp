// concatenate(a, b, ...) (also a | b): every layer gets the same input and their outputs are
// joined along the last (feature) axis, Y = hstack(a(X), b(X), ...) (thinc/layers/
// concatenate.py): for Floats2d, for Ragged (the data joined, the lengths kept), for List
// (item by item) and, beyond Thinc, for Padded. The layers are one flat pack: a | b | c is one
// Concatenate of three. They must take the same input type and produce the same output type
// (E022), one that can be concatenated (E023), with equal static input widths (E028). The
// output width is the sum of theirs (static_nO where all are static). The backward pass
// splits dY by the widths and sums the layers' dX.
#pragma once
#include <array>
#include <cstddef>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "tenon/combinators/detail/parallel.hpp"
#include "tenon/combinators/noop.hpp"
#include "tenon/lower/lowered_as.hpp"

namespace tenon {

namespace check {
// E022: the layers of concatenate() differ in their input or output data type.
template <class LayerAt, class Expects, class Produces, class LayerAt0, class Expects0, class Produces0>
struct concatenate_types {
    static_assert(always_false<LayerAt>,
                  "[tenon-E022] concatenate(a, b, ...) / a | b: every layer must take the same input type and "
                  "produce the same output type as the first (layer<I> expects_type<T>, produces_type<U> but "
                  "layer<0> expects_type<T0>, produces_type<U0>: see the instantiation line)");
};

template <class... Ls>
struct concatenate_check_of {
    using L0 = type_at_t<0, Ls...>;
    static constexpr std::size_t bad_type = detail::first_types_mismatch<Ls...>();
    static constexpr std::size_t n = sizeof...(Ls);
    static constexpr detail::width_clash in_clash = [] {
        const extent_t w[] = {widths::static_nI_v<Ls>..., dyn};
        return detail::first_width_clash(w, n);
    }();
    template <std::size_t I>
    using types_failure =
        concatenate_types<layer<I>, expects_type<name_t<typename type_at_t<I, Ls...>::In>>,
                          produces_type<name_t<typename type_at_t<I, Ls...>::Out>>, layer<0>,
                          expects_type<name_t<typename L0::In>>, produces_type<name_t<typename L0::Out>>>;
    using type = typename std::conditional_t<
        (bad_type < n), std::type_identity<types_failure<(bad_type < n ? bad_type : 0)>>,
        std::conditional_t<
            !detail::concatenable<typename L0::Out>,
            std::type_identity<combine_output<concatenate_combinator, produces_type<name_t<typename L0::Out>>>>,
            std::conditional_t<(in_clash.at < n),
                               std::type_identity<input_widths<concatenate_combinator, layer<in_clash.at>,
                                                               expects_width<in_clash.a>, layer<in_clash.with>,
                                                               expects_width<in_clash.b>>>,
                               std::type_identity<ok>>>>::type;
};
template <class... Ls>
using concatenate_check = typename concatenate_check_of<Ls...>::type;
}  // namespace check

template <Model... Ls>
    requires(sizeof...(Ls) >= 1)
class Concatenate : public detail::Parallel<Concatenate<Ls...>, Ls...> {
    static_assert(sizeof(check::concatenate_check<Ls...>) > 0);  // E022, E023, E028
    using P = detail::Parallel<Concatenate<Ls...>, Ls...>;
    using typename P::Base;
    friend Base;
    using P::N;

public:
    using typename P::In;
    using typename P::InView;
    using typename P::Out;
    using typename P::OutView;
    static constexpr extent_t static_nI = detail::common_static_nI<Ls...>;
    // The output width: the sum of the layers' static output widths, where a layer that keeps
    // its width without knowing it (noop, Dropout, a reduction, LayerNorm<>) gives the input's;
    // `per` of those and the `fixed` sum of the others, `open` where some other knows none.
    struct OutWidths {
        extent_t per = 0, fixed = 0;
        bool open = false;
    };
    // Which layers keep their width (the type's rule above, and sync_nO's at run time).
    static constexpr bool keeps_width[] = {(widths::width_preserving<Ls> || widths::nO_is_nI<Ls>)..., false};
    static constexpr OutWidths out_widths = [] {
        const extent_t w[] = {widths::static_nO_v<Ls>..., dyn};
        const auto& keeps = keeps_width;
        OutWidths r;
        for (std::size_t i = 0; i < N; ++i) {
            if (w[i] != dyn) r.fixed += w[i];
            else if (keeps[i]) ++r.per;
            else r.open = true;
        }
        return r;
    }();
    static constexpr extent_t static_nO = out_widths.open             ? extent_t{dyn}
                                          : out_widths.per == 0        ? out_widths.fixed
                                          : static_nI != dyn           ? out_widths.per * static_nI + out_widths.fixed
                                                                       : extent_t{dyn};
    // (Where the input width is not in the type: nO = per * nI + fixed, for the chain's flow.)
    static constexpr extent_t nO_per_nI = out_widths.open ? 0 : out_widths.per;
    static constexpr extent_t nO_plus_nI = out_widths.fixed;
    template <extent_t W>
    using with_nI = Concatenate<typename widths::rebind_nI<Ls, W>::type...>;
    template <extent_t W>
    using nested_failure = widths::first_failure_t<widths::nested_failure_t<Ls, W>...>;
    // lower(): each branch's stages from the same boundary, then a concat stage.
    static constexpr lowering::ConcatBranches lowered_as{};

    template <class... Us>
        requires(sizeof...(Us) == N)
    explicit Concatenate(std::tuple<Us...>&& parts) : P(std::move(parts), static_nO, static_nI) {
        for (const Node* n : this->child_nodes()) this->name_ += (this->name_.empty() ? "" : "|") + n->name();
        sync_nO();  // where every layer knows its nO (its type or options)
    }
    template <class... Us>
        requires(!std::is_same_v<Concatenate<Us...>, Concatenate>)
    explicit Concatenate(Concatenate<Us...>&& other) : Concatenate(std::move(other).layers()) {}

    struct Backprop {
        const Concatenate* model = nullptr;
        std::tuple<typename Ls::Backprop...> bps;
        std::array<std::size_t, N> widths{};  // each layer's output width, to split dY
        detail::Layout layout;      // the output's, which dY must have
        In operator()(OutView dY) const {
            if (model && detail::layout_of(dY) != layout)
                throw ShapeError(model->name() + ": backprop: expected a gradient shaped like the output, " +
                                     detail::layout_vec_str(layout, detail::layout_kind_of<std::remove_cvref_t<decltype(dY)>>()) +
                                     ", but found " + detail::layout_str(dY),
                                 "tenon-E161");
            std::array<std::size_t, N> start{};
            for (std::size_t i = 1; i < N; ++i) start[i] = start[i - 1] + widths[i - 1];
            In dX = std::get<0>(bps)(detail::slice_value<Out>(dY, 0, widths[0]));
            [&]<std::size_t... I>(std::index_sequence<I...>) {
                (detail::add_into(dX, In(std::get<I + 1>(bps)(detail::slice_value<Out>(dY, start[I + 1], widths[I + 1]))),
                                  "concatenate: backprop", "tenon-E161"),
                 ...);
            }(std::make_index_sequence<N - 1>{});
            return dX;
        }
    };

private:
    // Y is not given to the layers: each produces only a part of it (Thinc passes it on).
    void init_impl(const std::remove_reference_t<InView>* X, const std::remove_reference_t<OutView>*) {
        this->init_children(X, nullptr, dyn);
        sync_nO();
        this->mark_initialized();
    }
    void sync_nO() {
        // (A layer that keeps its width and declares none gives the input's.)
        const auto& keeps = keeps_width;
        const std::size_t nI = widths::known(*this, "nI");
        std::size_t sum = 0, i = 0;
        for (std::size_t w : this->children_nO()) {
            if (w == dyn && keeps[i]) w = nI;
            ++i;
            if (w == dyn) return;
            sum += w;
        }
        this->set_dim("nO", sum, true);
    }

    Out join(const std::array<Out, N>& ys) const {
        std::array<const Out*, N> ptrs;
        for (std::size_t i = 0; i < N; ++i) ptrs[i] = &ys[i];
        return detail::concat_last<Out>(ptrs, this->name(), "tenon-E161");
    }

    Out predict_impl(InView X) const {
        return std::apply([&](const auto&... c) { return join(std::array<Out, N>{c.predict_inner(X)...}); },
                          this->children_);
    }

    std::pair<Out, Backprop> forward_impl(InView X, bool is_train) {
        Backprop bp;
        bp.model = this;
        std::array<Out, N> ys;
        [&]<std::size_t... I>(std::index_sequence<I...>) {
            (step<I>(X, is_train, ys[I], bp), ...);
        }(std::make_index_sequence<N>{});
        for (std::size_t i = 0; i < N; ++i) {
            const std::size_t w = detail::width_of(ys[i]);
            bp.widths[i] = w == dyn ? 0 : w;
        }
        Out Y = join(ys);
        bp.layout = detail::layout_of(Y);
        return {std::move(Y), std::move(bp)};
    }
    template <std::size_t I>
    void step(InView X, bool is_train, Out& y, Backprop& bp) {
        auto [yi, b] = std::get<I>(this->children_).update_inner(X, is_train);
        std::get<I>(bp.bps) = std::move(b);
        y = std::move(yi);
    }
};

namespace detail {
template <class... Ms>
auto make_concatenate(Ms&&... ms) {
    auto parts = std::tuple_cat(parts_of<Concatenate>(std::forward<Ms>(ms))...);
    using Parts = decltype(parts);
    using Check = typename std::remove_cvref_t<decltype(std::apply(
        [](auto&... p) {
            return std::type_identity<check::concatenate_check<std::remove_cvref_t<decltype(p)>...>>{};
        },
        parts))>::type;
    if constexpr (!std::is_same_v<Check, check::ok>) {
        check::report<Check>();  // E022, E023, E028: said here, at the call
        return failed_model{};
    } else {
        return typename parallel_type<Concatenate, Parts>::type(std::move(parts));
    }
}
}  // namespace detail

// concatenate(a, b, ...). As in Thinc, concatenate(a) is a itself and concatenate() is noop().
template <class... Ms>
    requires(all_true<Model<Ms>...>)
auto concatenate(Ms&&... ms) {
    if constexpr (sizeof...(Ms) == 0) return noop();
    else if constexpr (sizeof...(Ms) == 1) return (std::remove_cvref_t<Ms>(std::forward<Ms>(ms)), ...);
    else return detail::make_concatenate(std::forward<Ms>(ms)...);
}
template <Model A, Model B>
auto operator|(A&& a, B&& b) {
    return detail::make_concatenate(std::forward<A>(a), std::forward<B>(b));
}
// a | x, x | a where x is not a model: E029.
template <class A, class B>
    requires(Model<A> != Model<B> && !any_failed_model<A, B>)
auto operator|(A&&, B&&) {
    using NotAModel = std::conditional_t<Model<A>, B, A>;
    check::report<check::combinator_operand<check::not_a_model<check::name_t<NotAModel>>>>();
    return failed_model{};
}
// With a failed model (its error is already said): a failed model (model/failed_model.hpp).
template <class... Ms>
    requires(any_failed_model<Ms...>)
failed_model concatenate(Ms&&...) noexcept {
    return {};
}
template <class A, class B>
    requires(any_failed_model<A, B>)
failed_model operator|(A&&, B&&) noexcept {
    return {};
}

}  // namespace tenon
