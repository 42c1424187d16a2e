// What a model type says about its widths at compile time, read through traits so that
// every model type can leave any of them out:
//   static_nO, static_nI     a width, or dyn
//   width_preserving         true for layers that keep the width and declare no dims
//                            (Dropout, noop, sigmoid_activation)
//   with_nI<W>               the same layer with a static nI (chain's width propagation)
//   nO_is_nI                 true when the output width is the input width (LayerNorm)
//   nO_per_nI, nO_plus_nI    k and c when the output width is k times the input width plus c
//                            (expand_window: 2 * window + 1 and 0; concatenate(noop(), Relu<4>()):
//                            1 and 4)
// and, at run time, how a combinator hands a width it knows to a child that does not
// (offer, known): how initialize() without sample data reaches every layer whose widths
// the types (or the options) fix.
#pragma once
#include <array>
#include <cstddef>
#include <tuple>
#include <type_traits>

#include "tenon/model/node.hpp"
#include "tenon/types/array.hpp"
#include "tenon/util/pack.hpp"

namespace tenon::widths {

template <class L>
constexpr extent_t static_nO() {
    if constexpr (requires { L::static_nO; }) return L::static_nO; else return dyn;
}
template <class L>
constexpr extent_t static_nI() {
    if constexpr (requires { L::static_nI; }) return L::static_nI; else return dyn;
}
template <class L>
inline constexpr bool width_preserving = [] {
    if constexpr (requires { L::width_preserving; }) return bool(L::width_preserving); else return false;
}();
// (Probed with dyn, which names the type itself: a probe with a width would make a new type
// of each combinator and chain, and instantiate it, a chain with a mismatch at that width
// included. A type that with_nI<dyn> does not name is not rebound: a layer whose nI the type
// already fixes, or a user's model type derived from a chain, which inherits Chain's.)
template <class L>
inline constexpr bool rebindable = [] {
    if constexpr (requires { typename L::template with_nI<dyn>; })
        return std::is_same_v<typename L::template with_nI<dyn>, L>;
    else
        return false;
}();
// Whether L holds layers that a width given to it reaches (a combinator: chain, residual,
// clone, with_array, ...): it names what would fail inside it (nested_failure, below). Probed
// by name: an alias template given as a template argument is not instantiated.
template <template <extent_t> class>
struct template_probe {};
template <class L>
inline constexpr bool has_inside = requires { typename template_probe<L::template nested_failure>; };
template <class L>
inline constexpr bool nO_is_nI = [] {
    if constexpr (requires { L::nO_is_nI; }) return bool(L::nO_is_nI); else return false;
}();
// k where the output width is k times the input width (expand_window: 2 * window + 1), else 0.
template <class L>
inline constexpr extent_t nO_per_nI = [] {
    if constexpr (requires { L::nO_per_nI; }) return extent_t(L::nO_per_nI); else return extent_t(0);
}();
// c where the output width is k times the input width plus c (nO_per_nI), else 0.
template <class L>
inline constexpr extent_t nO_plus_nI = [] {
    if constexpr (requires { L::nO_plus_nI; }) return extent_t(L::nO_plus_nI); else return extent_t(0);
}();

// The same as variables (computed once per layer type: cheaper in flow's tables).
template <class L>
inline constexpr extent_t static_nO_v = static_nO<L>();
template <class L>
inline constexpr extent_t static_nI_v = static_nI<L>();

// All of a layer type's width traits, as one variable (flow reads one table of them: a single
// pack expansion per chain type instead of one per trait).
struct Traits {
    extent_t nO = dyn, nI = dyn;
    bool keeps = false, rebind = false, follows = false, inside = false;
    extent_t per = 0, plus = 0;  // nO_per_nI, nO_plus_nI
};
template <class L>
inline constexpr Traits traits_v{static_nO<L>(), static_nI<L>(), width_preserving<L>, rebindable<L>,
                                 nO_is_nI<L>, has_inside<L>, nO_per_nI<L>, nO_plus_nI<L>};

// What fails inside L when width W reaches it: void when nothing does, else the failing check
// (instantiating it gives the error), e.g. expand_window<1>() >> Maxout<96, 96>() in a
// residual after a 96-wide layer (3 * 96 reach the Maxout). Asked only where W rebinds L
// (rebind_nI): a combinator's names its layers' (Chain's: its own check after the width
// flowed through it), so that the chain around it can say so where it is made, rather than
// fail deep inside the computation of its type.
template <class L, extent_t W>
struct nested_failure {
    using type = void;
};
template <class L, extent_t W>
    requires(W != dyn && has_inside<L> && (static_nI<L>() == dyn || static_nI<L>() == W))
struct nested_failure<L, W> {
    using type = typename L::template nested_failure<W>;
};
template <class L, extent_t W>
using nested_failure_t = typename nested_failure<L, W>::type;

// The first of some failures that is not void (void when all are): a constexpr search, not a
// recursion over the pack.
template <bool Found, std::size_t I, class... F>
struct failure_at {
    using type = void;
};
template <std::size_t I, class... F>
struct failure_at<true, I, F...> {
    using type = type_at_t<I, F...>;
};
template <class... F>
struct first_failure {
    static constexpr std::size_t at = [] {
        const bool is_void[] = {std::is_void_v<F>..., false};
        std::size_t i = 0;
        while (i < sizeof...(F) && is_void[i]) ++i;
        return i;
    }();
    using type = typename failure_at<(at < sizeof...(F)), at, F...>::type;
};
template <class... F>
using first_failure_t = typename first_failure<F...>::type;

// L with its dyn nI made W, where L can be rebound; otherwise L. Also where L's nI is already
// W: a layer stays as it is, a combinator (residual, clone, ...) whose width its layer's nO
// fixes hands W on to the layers inside it that do not know it (expand_window in a residual).
template <class L, extent_t W>
struct rebind_nI {
    using type = L;
};
template <class L, extent_t W>
    requires(W != dyn && rebindable<L> && (static_nI<L>() == dyn || static_nI<L>() == W) &&
             std::is_void_v<nested_failure_t<L, W>>)
struct rebind_nI<L, W> {
    using type = typename L::template with_nI<W>;
};

// How static widths flow through a sequence of layers (chain): the width reaching each
// layer, and the first place where two static widths meet and differ. A constexpr loop
// over tables of the layers' traits, not a recursive instantiation.
// What widths::flow finds (below).
struct FlowResult {
    std::size_t bad = 0;  // first mismatching layer, or the number of layers
    extent_t expects = 0;
    std::size_t producer = 0;
    extent_t produces = 0;
    extent_t outgoing = dyn;  // the static width of the sequence's output, or dyn
    extent_t first_in = dyn;  // the static input width of the sequence, or dyn
    bool rebinds = false;        // whether some layer gets a static nI (rebind_nI)
    // The first and the last layer that change the width (0 and the last changer, or 0,
    // when none does): a chain's nI and nO are theirs.
    std::size_t first_changer = 0, last_changer = 0;
    bool all_keep = true;  // every layer keeps the width (LayerNorm, Dropout, ...)
    bool any_inside = false;  // some layer holds layers (has_inside): nested_failure may apply
    // Every layer passes its width on (Dropout) or takes its output width from its input
    // (LayerNorm, residual) without knowing it, and one at least has a width: a layer of static
    // nI appended after them fixes it (backward_width), so `>>` cannot only append.
    bool open_start = false;
};
// The static width that reaches the first layers from the first layer after them that knows
// its nI, where every layer before it passes its width on or takes its output width from its
// input without knowing it (LayerNorm<>() >> Relu<8, 4>(): the LayerNorm is 4 wide); dyn where
// none does. `open`: whether the walk met no such layer and some of the layers do follow.
// (Not through a layer that makes a multiple of its width, expand_window: in
// residual(expand_window<1>() >> Maxout<96, 96>()) the window would get 32, and the mistake,
// 288 reaching the Maxout once the 96 before the residual flows in, would read as the
// residual's, E025 with a width the user never wrote, rather than E001 where it is.)
constexpr extent_t backward_width(const Traits* t, std::size_t n, bool* open) {
    constexpr extent_t unknown = dyn;
    bool follows = false;
    for (std::size_t i = 0; i < n; ++i) {
        if (t[i].keeps) continue;
        if (t[i].follows && t[i].rebind && t[i].nI == unknown && t[i].nO == unknown) {
            follows = true;
            continue;
        }
        *open = false;
        return follows ? t[i].nI : unknown;
    }
    *open = follows;
    return unknown;
}
// The walk over n layers' traits; `incoming`, when given, gets the static width reaching
// each layer (or dyn). One function for every sequence of layers (not a member of flow: its
// body is then not instantiated again for each chain type).
// `w0`: the static width reaching the first layer (a sequence nested in another model, rebound
// to the width before it: Chain::with_nI), or dyn.
constexpr FlowResult walk_widths(const Traits* t, std::size_t n, extent_t* incoming, extent_t w0 = dyn) {
    // (dyn as a plain extent_t: a comparison with dyn itself is a call of dyn_t's operator== to
    // the constant evaluator, 36 MB of the compiler's memory over the 500 steps of a >> chain.)
    constexpr extent_t unknown = dyn;
    FlowResult r;
    r.bad = n;
    // (With no width given, the first layers may take theirs from a later one: backward_width.)
    extent_t w = w0 != unknown ? w0 : backward_width(t, n, &r.open_start);
    std::size_t from = 0;
    bool seen_width_changer = false;
    for (std::size_t i = 0; i < n; ++i) {
        if (incoming) incoming[i] = w;
        if (t[i].inside) r.any_inside = true;
        extent_t in = t[i].nI;
        if (in == unknown && t[i].rebind) {
            in = w;
            if (w != unknown) r.rebinds = true;
        }
        if (!t[i].keeps) {
            if (!seen_width_changer) r.first_changer = i;
            r.last_changer = i;
            r.all_keep = false;
        }
        if (!seen_width_changer && !t[i].keeps) {
            seen_width_changer = true;
            r.first_in = in;
        }
        if (w != unknown && in != unknown && in != w && r.bad == n) {
            r.bad = i;
            r.expects = in;
            r.producer = from;
            r.produces = w;
        }
        extent_t out = t[i].nO;
        if (out == unknown && t[i].follows) out = in;
        if (out == unknown && t[i].per != 0 && in != unknown) out = t[i].per * in + t[i].plus;
        if (out != unknown) {
            w = out;
            from = i;
        } else if (!t[i].keeps) {
            w = unknown;
        }
    }
    r.outgoing = w;
    return r;
}

// How static widths flow through a sequence of layers (chain): walk_widths over a constant
// table of the layers' traits, not a recursive instantiation.
template <class... Ls>
struct flow {
    static constexpr std::size_t N = sizeof...(Ls);
    // (Plain arrays: GCC's constant evaluator takes several times the time and memory over
    // std::array's operator[], which counts in a chain of hundreds. One element more than
    // the layers, so that no array is empty.)
    static constexpr Traits table[] = {traits_v<Ls>..., Traits{}};
    static constexpr FlowResult value = walk_widths(table, N, nullptr);
    // The static width reaching each layer: only chain(...)'s width propagation reads it.
    struct Incoming {
        extent_t at[N ? N : 1]{};
    };
    static constexpr Incoming incoming = [] {
        Incoming in;
        (void)walk_widths(table, N, in.at);
        return in;
    }();
    // The same when width W reaches the first layer (Chain::with_nI).
    template <extent_t W>
    static constexpr Incoming incoming_from = [] {
        Incoming in;
        (void)walk_widths(table, N, in.at, W);
        return in;
    }();
};

// ---- run time ---------------------------------------------------------------------------
// A node's dim, or dyn where it is unknown or not declared.
inline std::size_t known(const Node& n, const char* dim) {
    return n.has_dim(dim) ? n.get_dim(dim) : dyn;
}
// Whether a node declares a dim (known or not). (src/node.cpp)
bool declares(const Node& n, const char* dim);
// Gives a node a dim it declares but does not know yet (a width its parent knows); a known
// dim is left as it is (a contradiction is the node's own check to make, with its name).
void offer(Node& n, const char* dim, std::size_t v);

}  // namespace tenon::widths
