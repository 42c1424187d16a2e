// What add() and concatenate() share: a flat pack of children that all take the same input,
// held in a std::tuple (a few children, not hundreds: no need for chain's FlatTuple), the
// compile-time facts about them (the first child whose data types differ from the first's,
// the common static input width), the flattening of nested combinators of the same kind
// (add(add(a, b), c) is add(a, b, c)), and the initialisation of the children from one
// sample.
#pragma once
#include <array>
#include <cstddef>
#include <functional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "tenon/combinators/detail/data_ops.hpp"
#include "tenon/model/diagnostics.hpp"
#include "tenon/model/layer.hpp"
#include "tenon/model/widths.hpp"
#include "tenon/util/pack.hpp"

namespace tenon::check {
// Names of the combinators in the checks shared by several of them.
struct add_combinator {};
struct concatenate_combinator {};
struct bidirectional_combinator {};

// E023: add()/concatenate() of layers whose output type cannot be summed / concatenated.
template <class Combinator, class Produces>
struct combine_output {
    static_assert(always_false<Combinator>,
                  "[tenon-E023] add() / concatenate(): the layers' output data type cannot be summed (add) or "
                  "joined along the last axis (concatenate); both take float arrays, Ragged, Padded and List of "
                  "float arrays, concatenate of rank >= 2 (combine_output<Combinator, produces_type<T>>: see the "
                  "instantiation line)");
};

// E028: layers that all take one input (add, concatenate, bidirectional) with different
// static input widths.
template <class Combinator, class LayerAt, class Expects, class LayerAt2, class Expects2>
struct input_widths {
    static_assert(always_false<Combinator>,
                  "[tenon-E028] add() / concatenate() / bidirectional(): every layer gets the same input, so their "
                  "static input widths must be equal (layer<I> expects_width<W> but layer<J> expects_width<V>: see "
                  "the instantiation line)");
};

// E029: a | x, a + x (or x | a, x + a) where one operand is a tenon model and the other is not.
template <class Operand>
struct combinator_operand {
    static_assert(always_false<Operand>,
                  "[tenon-E029] a | b, a + b: both operands must be tenon models (layers, combinators or named "
                  "model types); one is not_a_model<T>: see the instantiation line");
};
}  // namespace tenon::check

namespace tenon::detail {

template <class T>
inline constexpr char parallel_tag = 0;

// The first child (>= 1) whose In or Out is not the first child's, or N.
template <class L0, class... Ls>
constexpr std::size_t first_types_mismatch() {
    const void* ins[] = {&parallel_tag<typename Ls::In>..., nullptr};
    const void* outs[] = {&parallel_tag<typename Ls::Out>..., nullptr};
    for (std::size_t i = 0; i < sizeof...(Ls); ++i)
        if (ins[i] != &parallel_tag<typename L0::In> || outs[i] != &parallel_tag<typename L0::Out>) return i + 1;
    return sizeof...(Ls) + 1;
}

// The first pair (i, j), i < j, of static widths that differ, as {j, i}, or {n, n}.
struct width_clash {
    std::size_t at, with;
    extent_t a, b;
};
template <std::size_t N>
constexpr width_clash first_width_clash(const extent_t (&w)[N], std::size_t n) {
    for (std::size_t j = 0; j < n; ++j)
        for (std::size_t i = 0; i < j; ++i)
            if (w[i] != dyn && w[j] != dyn && w[i] != w[j]) return {j, i, w[j], w[i]};
    return {n, n, 0, 0};
}
// The common static width of some children (the first static one), or dyn.
template <std::size_t N>
constexpr extent_t common_width(const extent_t (&w)[N], std::size_t n) {
    for (std::size_t i = 0; i < n; ++i)
        if (w[i] != dyn) return w[i];
    return dyn;
}
template <class... Ls>
inline constexpr extent_t common_static_nI = [] {
    const extent_t w[] = {widths::static_nI_v<Ls>..., dyn};
    return common_width(w, sizeof...(Ls));
}();

// Whether a node declares a dim (known or not); gives a child a dim it declares but does not
// know yet (a width its parent knows). (widths::declares, widths::offer.)
inline bool declares_dim(const Node& n, const char* dim) { return widths::declares(n, dim); }
inline void offer_dim(Node& n, const char* dim, std::size_t v) { widths::offer(n, dim, v); }

// The width of an input sample (dyn where there is none to read).
template <class V>
std::size_t sample_width(const V* X) {
    return X ? width_of(*X) : dyn;
}

template <class Derived, class... Ls>
class Parallel : public Layer<Derived, typename type_at_t<0, Ls...>::In, typename type_at_t<0, Ls...>::Out> {
protected:
    using Base = Layer<Derived, typename type_at_t<0, Ls...>::In, typename type_at_t<0, Ls...>::Out>;
    static constexpr std::size_t N = sizeof...(Ls);

public:
    using typename Base::In;
    using typename Base::InView;
    using typename Base::Out;
    using typename Base::OutView;
    using Children = std::tuple<Ls...>;

    template <std::size_t I>
    auto& layer() noexcept {
        return std::get<I>(children_);
    }
    template <std::size_t I>
    const auto& layer() const noexcept {
        return std::get<I>(children_);
    }
    static constexpr std::size_t size() noexcept { return N; }
    Children& layers() & noexcept { return children_; }
    const Children& layers() const& noexcept { return children_; }
    Children&& layers() && noexcept { return std::move(children_); }

    void for_each_child(const std::function<void(Node&)>& f) override {
        std::apply([&](auto&... c) { (f(c), ...); }, children_);
    }

protected:
    // From children that convert to Ls (the same layers before their nI was made static).
    template <class... Us>
    Parallel(std::tuple<Us...>&& parts, extent_t static_nO, extent_t static_nI)
        : Base("", {{"nO", as_dim(static_nO)}, {"nI", as_dim(static_nI)}}, {}),
          children_(make_children(std::move(parts), std::index_sequence_for<Us...>{})) {
        bool all_initialized = true;
        std::apply([&](auto&... c) { ((all_initialized = all_initialized && c.is_initialized()), ...); },
                   children_);
        // Initialised children (trained ones) make a ready model, as in chain. Otherwise the
        // input width the children already know from their options (where the types leave
        // it dyn), for the models around this one to read before initialize.
        if (all_initialized || static_nI == dyn) sync_nI();
        if (all_initialized) this->mark_initialized();
    }

    // Resolves the input width (from X, or this node's nI) and gives it to the children,
    // then `nO` (where known) to the children that declare it, then initialises each on X
    // (and Y where given).
    void init_children(const std::remove_reference_t<InView>* X, const std::remove_reference_t<OutView>* Y, std::size_t nO) {
        std::size_t nI = sample_width(X);
        if (nI == dyn && this->has_dim("nI")) nI = this->get_dim("nI");
        offer_dim(*this, "nI", nI);  // (X's width is this node's too, as Thinc's init sets it)
        std::apply(
            [&](auto&... c) {
                (offer_dim(c, "nI", nI), ...);
                (offer_dim(c, "nO", nO), ...);
                (c.initialize_from(X, Y), ...);
            },
            children_);
        sync_nI();
    }
    // This node's nI: the children's, where one knows it.
    void sync_nI() {
        std::size_t nI = dyn;
        std::apply([&](auto&... c) { ((nI = nI == dyn && c.has_dim("nI") ? c.get_dim("nI") : nI), ...); },
                   children_);
        if (nI != dyn) this->set_dim("nI", nI, true);
    }
    // Every child's nO (dyn where one has none), in order.
    std::array<std::size_t, N> children_nO() const {
        std::array<std::size_t, N> out{};
        std::size_t i = 0;
        std::apply([&](const auto&... c) { ((out[i++] = c.has_dim("nO") ? c.get_dim("nO") : dyn), ...); },
                   children_);
        return out;
    }
    // The children as Nodes (for messages).
    std::array<const Node*, N> child_nodes() const {
        return std::apply([](const auto&... c) { return std::array<const Node*, N>{&c...}; }, children_);
    }

    Children children_;

private:
    template <class... Us, std::size_t... I>
    static Children make_children(std::tuple<Us...>&& parts, std::index_sequence<I...>) {
        return Children(Ls(std::move(std::get<I>(parts)))...);
    }
};

// ---- flattening and building -------------------------------------------------------------
template <template <class...> class C, class T>
inline constexpr bool is_instance = false;
template <template <class...> class C, class... Ls>
inline constexpr bool is_instance<C, C<Ls...>> = true;

// The children an argument contributes: a combinator C's own children, or the argument.
template <template <class...> class C, class M>
auto parts_of(M&& m) {
    using D = std::remove_cvref_t<M>;
    if constexpr (is_instance<C, D>) {
        if constexpr (std::is_rvalue_reference_v<M&&> && !std::is_const_v<std::remove_reference_t<M>>)
            return std::move(m).layers();
        else
            return typename D::Children(m.layers());
    } else {
        return std::tuple<D>(std::forward<M>(m));
    }
}

// C<Ls...> with each child's dyn nI made the children's common static nI, where one has it.
template <template <class...> class C, class Tuple>
struct parallel_type;
template <template <class...> class C, class... Ls>
struct parallel_type<C, std::tuple<Ls...>> {
    static constexpr extent_t W = common_static_nI<Ls...>;
    using type = C<typename widths::rebind_nI<Ls, W>::type...>;
};

}  // namespace tenon::detail
