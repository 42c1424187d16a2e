// chain(a, b, c) (also a >> b >> c): feed each layer's output to the next. The children are
// one flat pack: chain(chain(a, b), c) and chain(a, chain(b, c)) have the type of
// chain(a, b, c), so deep models compile in time linear in their length.
#pragma once
#include <algorithm>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "tenon/model/diagnostics.hpp"
#include "tenon/model/layer.hpp"
#include "tenon/model/widths.hpp"

namespace tenon {

namespace check {
// The check to instantiate for a chain: `ok` arguments when all is well, the numbers (or
// types) of the first mismatch otherwise.
template <std::size_t Bad, class... Ls>
struct chain_type_check {
    using type = chain_types<ok, ok, ok, ok>;
};
template <std::size_t Bad, class... Ls>
    requires(Bad < sizeof...(Ls))
struct chain_type_check<Bad, Ls...> {
    using T = std::tuple<Ls...>;
    using type = chain_types<layer<Bad>, expects_type<typename std::tuple_element_t<Bad, T>::In>,
                                    layer<Bad - 1>,
                                    produces_type<typename std::tuple_element_t<Bad - 1, T>::Out>>;
};
template <bool Bad, std::size_t I, std::size_t Expects, std::size_t J, std::size_t Produces>
struct chain_width_check {
    using type = chain_widths<ok, ok, ok, ok>;
};
template <std::size_t I, std::size_t Expects, std::size_t J, std::size_t Produces>
struct chain_width_check<true, I, Expects, J, Produces> {
    using type = chain_widths<layer<I>, expects_width<Expects>, layer<J>,
                                     produces_width<Produces>>;
};

}  // namespace check

namespace detail {
// The first layer whose input data type is not the output type of the layer before it, or
// N if none (a constexpr loop over a table, not a recursive instantiation).
template <class... Ls>
constexpr std::size_t first_type_mismatch() {
    constexpr std::size_t n = sizeof...(Ls);
    if constexpr (n < 2) {
        return n;
    } else {
        using Tup = std::tuple<Ls...>;
        constexpr auto find = []<std::size_t... I>(std::index_sequence<I...>) {
            const bool same[] = {std::is_same_v<typename std::tuple_element_t<I, Tup>::Out,
                                                typename std::tuple_element_t<I + 1, Tup>::In>...};
            for (std::size_t i = 0; i < sizeof...(I); ++i)
                if (!same[i]) return i + 1;
            return sizeof...(I) + 1;
        };
        return find(std::make_index_sequence<n - 1>{});
    }
}

template <class L>
inline constexpr bool width_preserving = widths::width_preserving<L>;

template <class... Ls>
inline constexpr bool chain_is_homogeneous = [] {
    using First = std::tuple_element_t<0, std::tuple<Ls...>>;
    return (std::is_same_v<typename Ls::Out, typename First::Out> && ...);
}();
}  // namespace detail

template <Model... Ls>
class Chain : public Layer<Chain<Ls...>, typename std::tuple_element_t<0, std::tuple<Ls...>>::In,
                           typename std::tuple_element_t<sizeof...(Ls) - 1, std::tuple<Ls...>>::Out> {
    static_assert(sizeof...(Ls) >= 1, "[tenon-E004] chain(): needs at least one layer");
    static constexpr std::size_t N = sizeof...(Ls);
    // The checks: instantiating them with the numbers of a mismatch fails with its id.
    static constexpr std::size_t bad_type = detail::first_type_mismatch<Ls...>();
    static constexpr auto flow = widths::flow<Ls...>::value;
    static_assert(sizeof(typename check::chain_type_check<bad_type, Ls...>::type) > 0);
    static_assert(sizeof(typename check::chain_width_check<bad_type == N && flow.bad < N, flow.bad, flow.expects,
                                                      flow.producer, flow.produces>::type) > 0);

    using First = std::tuple_element_t<0, std::tuple<Ls...>>;
    using Last = std::tuple_element_t<N - 1, std::tuple<Ls...>>;
    using Base = Layer<Chain<Ls...>, typename First::In, typename Last::Out>;
    friend Base;
    static constexpr bool homogeneous = detail::chain_is_homogeneous<Ls...>;

public:
    using typename Base::In;
    using typename Base::InView;
    using typename Base::Out;
    using typename Base::OutView;
    using Layers = std::tuple<Ls...>;
    static constexpr std::size_t static_nI = flow.first_in;
    static constexpr std::size_t static_nO = flow.outgoing;
    static constexpr bool width_preserving = (detail::width_preserving<Ls> && ...);

    // From the layers, or from layers that convert to them (the same layers before static
    // width propagation rebound their nI).
    template <class... Us>
        requires(sizeof...(Us) == N)
    explicit Chain(std::tuple<Us...>&& layers)
        : Base("", {{"nO", static_nO}, {"nI", static_nI}}, {}), layers_(std::move(layers)) {
        this->name_ = std::apply(
            [](const auto&... l) {
                std::string s;
                ((s += (s.empty() ? "" : ">>") + l.name()), ...);
                return s;
            },
            layers_);
        // A chain of initialised layers (e.g. trained ones) is ready to use: initialize()
        // would draw new weights.
        if (std::apply([](const auto&... l) { return (l.is_initialized() && ...); }, layers_)) {
            sync_dims();
            this->mark_initialized();
        }
    }

    // The i-th child, typed.
    template <std::size_t I>
    auto& layer() noexcept {
        return std::get<I>(layers_);
    }
    template <std::size_t I>
    const auto& layer() const noexcept {
        return std::get<I>(layers_);
    }
    static constexpr std::size_t size() noexcept { return N; }
    Layers& layers() & noexcept { return layers_; }
    const Layers& layers() const& noexcept { return layers_; }
    Layers&& layers() && noexcept { return std::move(layers_); }

    void for_each_child(const std::function<void(Node&)>& f) override {
        std::apply([&](auto&... l) { (f(l), ...); }, layers_);
    }

    struct Backprop {
        std::tuple<typename Ls::Backprop...> bps;
        In operator()(OutView dY) const {
            if constexpr (homogeneous && std::is_same_v<In, Out>) {
                Out d = std::get<N - 1>(bps)(dY);
                [&]<std::size_t... I>(std::index_sequence<I...>) {
                    ((d = std::get<N - 2 - I>(bps)(d)), ...);
                }(std::make_index_sequence<N - 1>{});
                return d;
            } else {
                return backward_from<N - 1>(dY);
            }
        }

    private:
        template <std::size_t I, class D>
        auto backward_from(const D& d) const {
            auto dX = std::get<I>(bps)(d);
            if constexpr (I == 0) return dX; else return backward_from<I - 1>(dX);
        }
    };

private:
    // Thinc's inference without its guesses: each layer is initialised on the output of the
    // ones before it (or, without a sample, on the last known width); Y reaches only the last
    // layer that changes the width and the width-preserving ones after it (e.g. a final
    // Dropout), never a hidden layer.
    static constexpr std::size_t y_from = [] {
        const bool keeps[] = {detail::width_preserving<Ls>...};
        std::size_t k = 0;
        for (std::size_t i = 0; i < N; ++i)
            if (!keeps[i]) k = i;
        return k;
    }();
    static constexpr std::size_t nI_from = [] {
        const bool keeps[] = {detail::width_preserving<Ls>...};
        for (std::size_t i = 0; i < N; ++i)
            if (!keeps[i]) return i;
        return std::size_t{0};
    }();

    void init_impl(const InView* X, const OutView* Y) {
        std::size_t width = dyn;
        init_from<0>(X, Y, width);
        sync_dims();
        this->mark_initialized();
    }
    // The chain's nI is its first width-changing layer's nI; its nO the last one's nO.
    void sync_dims() {
        const Node& first = std::get<nI_from>(layers_);
        const Node& last = std::get<y_from>(layers_);
        if (first.has_dim("nI")) this->set_dim("nI", first.get_dim("nI"), true);
        if (last.has_dim("nO")) this->set_dim("nO", last.get_dim("nO"), true);
    }

    template <std::size_t I, class XV>
    void init_from(const XV* X, const OutView* Y, std::size_t& width) {
        auto& l = std::get<I>(layers_);
        using L = std::remove_reference_t<decltype(l)>;
        const OutView* y = nullptr;
        if constexpr (std::is_same_v<typename L::OutView, OutView>) y = I >= y_from ? Y : nullptr;
        if (!X && width != dyn && !l.has_dim("nI")) {
            const auto names = l.dim_names();
            if (std::find(names.begin(), names.end(), "nI") != names.end()) l.set_dim("nI", width);
        }
        l.initialize_from(X, y);
        if (l.has_dim("nO")) width = l.get_dim("nO");
        else if (!detail::width_preserving<L>) width = dyn;
        if constexpr (I + 1 < N) {
            using Next = std::tuple_element_t<I + 1, Layers>;
            if (X) {
                auto out = l.predict(*X);
                const typename Next::InView v = out;
                init_from<I + 1>(&v, Y, width);
            } else {
                init_from<I + 1>(static_cast<const typename Next::InView*>(nullptr), Y, width);
            }
        }
    }

    Out predict_impl(InView X) const {
        if constexpr (homogeneous) {
            return [&]<std::size_t... I>(std::index_sequence<I...>) {
                Out cur = std::get<0>(layers_).predict(X);
                ((cur = std::get<I + 1>(layers_).predict(cur)), ...);
                return cur;
            }(std::make_index_sequence<N - 1>{});
        } else {
            return predict_from<0>(X);
        }
    }
    template <std::size_t I, class XV>
    auto predict_from(const XV& x) const {
        auto y = std::get<I>(layers_).predict(x);
        if constexpr (I + 1 == N) return y; else return predict_from<I + 1>(y);
    }

    std::pair<Out, Backprop> forward_impl(InView X, bool is_train) {
        Backprop bp;
        if constexpr (homogeneous) {
            Out cur = [&]<std::size_t... I>(std::index_sequence<I...>) {
                auto [y0, b0] = std::get<0>(layers_)(X, is_train);
                std::get<0>(bp.bps) = std::move(b0);
                Out c = std::move(y0);
                ((step<I + 1>(c, is_train, bp)), ...);
                return c;
            }(std::make_index_sequence<N - 1>{});
            return {std::move(cur), std::move(bp)};
        } else {
            auto y = forward_from<0>(X, is_train, bp);
            return {std::move(y), std::move(bp)};
        }
    }
    template <std::size_t I>
    void step(Out& cur, bool is_train, Backprop& bp) {
        auto [y, b] = std::get<I>(layers_)(cur, is_train);
        std::get<I>(bp.bps) = std::move(b);
        cur = std::move(y);
    }
    template <std::size_t I, class XV>
    auto forward_from(const XV& x, bool is_train, Backprop& bp) {
        auto [y, b] = std::get<I>(layers_)(x, is_train);
        std::get<I>(bp.bps) = std::move(b);
        if constexpr (I + 1 == N) return std::move(y); else return forward_from<I + 1>(y, is_train, bp);
    }

    Layers layers_;
};

// True for the type of a chain (not for user types derived from one).
template <class T>
inline constexpr bool is_chain_v = false;
template <class... Ls>
inline constexpr bool is_chain_v<Chain<Ls...>> = true;

// chain_parts(m): a chain's layers as a tuple (moved out of an rvalue), or a tuple of m.
template <class M>
auto chain_parts(M&& m) {
    using D = std::remove_cvref_t<M>;
    if constexpr (is_chain_v<D>) {
        if constexpr (std::is_rvalue_reference_v<M&&>) return std::move(m).layers();
        else return typename D::Layers(m.layers());
    } else {
        return std::tuple<D>(std::forward<M>(m));
    }
}

namespace widths {
// The chain type of some layers after static width propagation.
template <class Seq, class... Ls>
struct rebound_chain;
template <std::size_t... I, class... Ls>
struct rebound_chain<std::index_sequence<I...>, Ls...> {
    static constexpr auto flow = widths::flow<Ls...>::value;
    using type = Chain<typename widths::rebind_nI<Ls, flow.incoming[I]>::type...>;
};
}  // namespace widths

// chain_from(tuple of layers): the chain of those layers, each whose nI is dyn rebound to
// the static width that reaches it (Relu<512>() after a 784-wide layer is Relu<512, 784>).
template <class... Ls>
auto chain_from(std::tuple<Ls...>&& layers) {
    return typename widths::rebound_chain<std::index_sequence_for<Ls...>, Ls...>::type(std::move(layers));
}

// chain(a, b, ...): layers are copied or moved in; nested chains are flattened.
template <Model... Ms>
auto chain(Ms&&... ms) {
    return chain_from(std::tuple_cat(chain_parts(std::forward<Ms>(ms))...));
}

// a >> b is chain(a, b); a >> b >> c is one flat chain of three.
template <Model A, Model B>
auto operator>>(A&& a, B&& b) {
    return chain_from(std::tuple_cat(chain_parts(std::forward<A>(a)), chain_parts(std::forward<B>(b))));
}

}  // namespace tenon
