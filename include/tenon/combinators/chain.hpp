// chain(a, b, c) (also a >> b >> c): feed each layer's output to the next. The children are
// one flat pack: chain(chain(a, b), c) and chain(a, chain(b, c)) have the type of
// chain(a, b, c), so deep models compile in time linear in their length.
//
// Compile time (bench/compile/run.py measures a 500-layer chain): nothing here recurses
// over the layers or folds over them (clang nests a fold as deep as its pack and stops at
// 256). The layers live in a ChainStore (detail/chain_store.hpp: each layer on the heap behind
// a table of its type's operations; the store's special members are compiled once, in the
// library, and `chain >> layer` takes over the chain's store, so each step of a >> b >> ...
// compiles a constant amount of code); the checks and width propagation are constexpr loops
// over plain arrays; a new chain's layers are moved or copied through a table of per-type
// functions; initialize, predict, the forward pass and the
// backprop of a chain whose layers all output one data type (every dense stack) are
// run-time loops over tables with one function per distinct layer *type*, not per
// position: a 500-layer chain of five layer types compiles five small functions and a
// loop, and no function grows with the number of layers (the optimiser's cost is
// superlinear in a function's size). Only a chain whose data type changes along the way
// (e.g. an embedding before dense layers) walks its layers by a recursion of templates.
#pragma once
#include <array>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "tenon/model/diagnostics.hpp"
#include "tenon/model/layer.hpp"
#include "tenon/model/widths.hpp"
#include "tenon/lower/engine.hpp"  // after the model headers: a diagnostic's include trace stays short
#include "tenon/combinators/detail/chain_store.hpp"
#include "tenon/util/flat_tuple.hpp"  // the backprops of the layers
#include "tenon/util/pack.hpp"

namespace tenon {

template <Model L>
class Residual;
template <extent_t NO, extent_t NI, extent_t NP>
class Maxout;

namespace check {
template <class Layer, class Expects, class Produces>
struct residual_widths;  // E025, combinators/residual.hpp
// A width mismatch at a residual (Relu<8, 4>() >> residual(Relu<16>())): the residual would
// get 8 and its layer make 16, and Y = X + layer(X) cannot add them, so the mistake is the
// residual's (E025), not the chain's. (residual() gives its layer the width of its nO where
// the layer leaves its nI open: Residual<Relu<16, 16>> here.)
template <class At, extent_t Expects, extent_t Produces>
struct residual_at {
    static constexpr bool is = false;
};
// (Through the clones and wrappers around it: with_array(clone(residual(...), n)).)
template <class At, extent_t Expects, extent_t Produces>
    requires requires { typename At::wrapped; }
struct residual_at<At, Expects, Produces> : residual_at<typename At::wrapped, Expects, Produces> {};
template <class L, extent_t Expects, extent_t Produces>
struct residual_at<Residual<L>, Expects, Produces> {
    static constexpr bool is = widths::static_nO<L>() != dyn;
    using type = residual_widths<L, expects_width<Produces>, produces_width<widths::static_nO<L>()>>;
};

// The check to instantiate for a chain: `ok` arguments when all is well, the numbers (or
// types) of the first mismatch otherwise.
template <std::size_t Bad, class... Ls>
struct chain_type_check {
    using type = chain_types<ok, ok, ok, ok>;
};
template <std::size_t Bad, class... Ls>
    requires(Bad < sizeof...(Ls))
struct chain_type_check<Bad, Ls...> {
    using type = chain_types<layer<Bad>, expects_type<name_t<typename type_at_t<Bad, Ls...>::In>>, layer<Bad - 1>,
                             produces_type<name_t<typename type_at_t<Bad - 1, Ls...>::Out>>>;
};
template <bool Bad, std::size_t I, extent_t Expects, std::size_t J, extent_t Produces>
struct chain_width_check {
    using type = chain_widths<ok, ok, ok, ok>;
};
template <std::size_t I, extent_t Expects, std::size_t J, extent_t Produces>
struct chain_width_check<true, I, Expects, J, Produces> {
    using type = chain_widths<layer<I>, expects_width<Expects>, layer<J>, produces_width<Produces>>;
};
// At a Maxout<nO, nI> with a small nI and no nP: E001 saying that the pieces are the third
// argument (Maxout<64, 3> is an easy mistake for "3 pieces").
template <class At>
inline constexpr bool maxout_pieces_mistake = false;
template <extent_t NO, extent_t NI>
inline constexpr bool maxout_pieces_mistake<Maxout<NO, NI, dyn>> = NI <= 8;
// The check for a width mismatch at layer I: E025 at a residual (above), the Maxout hint, or
// E001.
template <bool Bad, std::size_t I, extent_t Expects, std::size_t J, extent_t Produces, class... Ls>
struct chain_width_check_at : chain_width_check<Bad, I, Expects, J, Produces> {};
template <std::size_t I, extent_t Expects, std::size_t J, extent_t Produces, class... Ls>
    requires(residual_at<type_at_t<I, Ls...>, Expects, Produces>::is)
struct chain_width_check_at<true, I, Expects, J, Produces, Ls...> {
    using type = typename residual_at<type_at_t<I, Ls...>, Expects, Produces>::type;
};
template <std::size_t I, extent_t Expects, std::size_t J, extent_t Produces, class... Ls>
    requires(maxout_pieces_mistake<type_at_t<I, Ls...>>)
struct chain_width_check_at<true, I, Expects, J, Produces, Ls...> {
    using type = chain_widths_maxout<layer<I>, expects_width<Expects>, layer<J>, produces_width<Produces>>;
};

}  // namespace check

namespace detail {
// One address per type, so that a constexpr loop can compare types.
template <class T>
inline constexpr char type_tag = 0;

// A layer type's input and output data types, as one variable (one pack expansion below).
struct io_tags {
    const void* in;
    const void* out;
};
template <class L>
inline constexpr io_tags io_tags_v{&type_tag<typename L::In>, &type_tag<typename L::Out>};

// The first layer whose input data type is not the output type of the layer before it, or
// N if none (a constexpr loop over a constant table, not a recursive instantiation; read
// in place, not copied into the evaluation: see widths::flow).
template <class... Ls>
inline constexpr io_tags io_table[] = {io_tags_v<Ls>..., io_tags{}};
template <class... Ls>
constexpr std::size_t first_type_mismatch() {
    constexpr std::size_t n = sizeof...(Ls);
    if constexpr (n < 2) {
        return n;
    } else {
        const auto& tags = io_table<Ls...>;
        for (std::size_t i = 1; i < n; ++i)
            if (tags[i].in != tags[i - 1].out) return i;
        return n;
    }
}

template <class L>
inline constexpr bool width_preserving = widths::width_preserving<L>;

// The data types at the two ends of a chain (placeholders for an empty one, which E004
// refuses).
struct no_layers {};
template <class... Ls>
struct chain_ends {
    using In = no_layers;
    using Out = no_layers;
    static constexpr bool homogeneous = false;
};
template <class L0, class... Ls>
struct chain_ends<L0, Ls...> {
    using In = typename L0::In;
    using Out = typename last_t<L0, Ls...>::Out;
    // Every layer outputs the same data type (so, type-checked, every layer after the
    // first takes it too): the chain runs as a loop.
    static constexpr bool homogeneous = all_true<std::is_same_v<typename Ls::Out, typename L0::Out>...>;
};

// Whether a sample of type V has a width (columns): an array of rank 2 or more (shape(1) of
// an Ints1d would read past its shape: found by make test-sanitize), or another type with
// shape(1).
template <class V>
constexpr bool has_columns() {
    if constexpr (!requires(const V& v) { v.shape(1); }) return false;
    else if constexpr (requires { V::rank; }) return V::rank >= 2;
    else return true;
}

// Shared by every chain, per layer type: initialize, predict, forward and backprop of one
// layer behind a plain function pointer, for the loops of a homogeneous chain.
template <class L, class XV, class YV>
void chain_init_layer(L& l, const XV* X, const YV* y, std::size_t& width) {
    // The run-time counterpart of E001, for widths that are dyn in the types: a width
    // mismatch found at run time, so tenon-E101 (E001 is the compile-time check's id).
    std::size_t produced = dyn;
    if constexpr (has_columns<XV>()) produced = X ? X->shape(1) : width;
    ChainOps::before_init(l, produced, width, X != nullptr);
    l.initialize_from(X, y);
    ChainOps::after_init(l, width, width_preserving<L>);
}

template <class Out, class View>
struct chain_step {
    // Initialises the layer (on X when not null), and writes its output on X to *next when
    // next is not null.
    using init_fn = void (*)(void* l, sample_ptr_t<View> X, sample_ptr_t<View> Y, std::size_t& width, Out* next);
    using predict_fn = Out (*)(const void* l, View X);
    using forward_fn = Out (*)(void* l, View X, bool is_train, void* bp);
    using backprop_fn = Out (*)(const void* bp, View dY);

    template <class L>
    static void init(void* l, sample_ptr_t<View> X, sample_ptr_t<View> Y, std::size_t& width, Out* next) {
        L& layer = *static_cast<L*>(l);
        chain_init_layer(layer, X, Y, width);
        if (X && next) *next = layer.predict_inner(*X);
    }
    template <class L>
    static Out predict(const void* l, View X) {
        return static_cast<const L*>(l)->predict_inner(X);
    }
    template <class L>
    static Out forward(void* l, View X, bool is_train, void* bp) {
        auto [y, b] = static_cast<L*>(l)->update_inner(X, is_train);
        *static_cast<typename L::Backprop*>(bp) = std::move(b);
        return std::move(y);
    }
    template <class B>
    static Out backprop(const void* bp, View dY) {
        return (*static_cast<const B*>(bp))(dY);
    }
};

// Making the layers of a new chain, from the layers given to chain(): layer T from S at
// `from`, moved or copied (a copy is a new node with a new id), and converted to T where
// width propagation rebound S's nI. One function per (T, S, Move), shared by every position
// and every chain.
template <class T, class S, bool Move>
LayerEntry chain_make_layer(void* from) {
    S& s = *static_cast<S*>(from);
    if constexpr (Move) return make_layer_entry<T>(std::move(s));
    else if constexpr (std::is_same_v<S, T>) return make_layer_entry<T>(std::as_const(s));
    else return make_layer_entry<T>(S(std::as_const(s)));
}
using chain_make_fn = LayerEntry (*)(void*);

template <class... Ts>
struct type_list {};

// The table of chain_make_layer for layers Ts made from Ss, Flags::move[i] saying whether
// layer i is moved.
template <class Flags, class Ts, class Ss, class Seq = void>
struct chain_make_table;
template <class Flags, class... Ts, class... Ss>
struct chain_make_table<Flags, type_list<Ts...>, type_list<Ss...>, void>
    : chain_make_table<Flags, type_list<Ts...>, type_list<Ss...>, std::index_sequence_for<Ts...>> {};
template <class Flags, class... Ts, class... Ss, std::size_t... I>
struct chain_make_table<Flags, type_list<Ts...>, type_list<Ss...>, std::index_sequence<I...>> {
    static constexpr std::array<chain_make_fn, sizeof...(Ts)> value{&chain_make_layer<Ts, Ss, Flags::move[I]>...};
};
struct chain_all_moved {
    struct All {
        constexpr bool operator[](std::size_t) const noexcept { return true; }
    };
    static constexpr All move{};
};

// The layers of a new chain: layer i is make[i](from[i]).
template <std::size_t N>
struct chain_source {
    const chain_make_fn* make;
    std::array<void*, N> from;
    LayerEntry entry(std::size_t i) const { return make[i](from[i]); }
};
// The chain constructors that make each layer from a source (chain(...)), and that append one
// layer to another chain's layers (chain >> layer).
struct from_source_t {
    explicit from_source_t() = default;
};
inline constexpr from_source_t from_source{};
struct append_t {
    explicit append_t() = default;
};
inline constexpr append_t append{};

// The tables of a homogeneous chain: entry i is for layer i + 1 (the first layer, which may
// take another data type, is called directly).
template <class Out, class View, class L0, class... Ls>
struct chain_tables {
    using S = chain_step<Out, View>;
    static constexpr typename S::init_fn init[] = {&S::template init<Ls>..., nullptr};
    static constexpr typename S::predict_fn predict[] = {&S::template predict<Ls>..., nullptr};
    static constexpr typename S::forward_fn forward[] = {&S::template forward<Ls>..., nullptr};
    static constexpr typename S::backprop_fn backprop[] = {&S::template backprop<typename Ls::Backprop>...,
                                                           nullptr};
};
}  // namespace detail

namespace detail {
// The checks of a chain of these layers, made before the Chain type is instantiated: when one
// fails, make_chain says so and returns a failed_model, so the rest of the user's program
// adds no error of its own (model/failed_model.hpp). The Chain class asserts the same.
template <class List>
struct chain_check_of;
// What fails inside the layers (widths::nested_failure) at the widths that reach them.
template <class Seq, class... Ls>
struct chain_nested_at;
template <std::size_t... I, class... Ls>
struct chain_nested_at<std::index_sequence<I...>, Ls...> {
    using type = widths::first_failure_t<widths::nested_failure_t<Ls, widths::flow<Ls...>::incoming.at[I]>...>;
};
template <class... Ls>
struct chain_check_of<type_list<Ls...>> {
    static constexpr std::size_t N = sizeof...(Ls);
    static constexpr std::size_t bad_type = first_type_mismatch<Ls...>();
    static constexpr auto flow = widths::flow<Ls...>::value;
    // What the checks find: 0 nothing, 1 a layer's data type (E002), 2 a width along the chain
    // (E001, E025), 3 nothing along the chain, but some layer holds layers that the widths reach
    // (a chain in a residual or a clone), which are asked in turn (chain_failure_of).
    static constexpr int found = bad_type < N ? 1 : flow.bad < N ? 2 : flow.any_inside ? 3 : 0;
};
// The failing check of a chain (instantiating it gives the error), or void. Computed only
// where something may fail: the failing check's template-id spells every layer, and every
// expression over the chain's flow a chain type evaluates counts at each step of
// `l0 >> l1 >> ...` (GCC keeps what one full-expression allocates until its end: as members
// of chain_check_of, these took 330 MB of the compiler's memory over 500 steps).
template <class Check, class List, int Found = Check::found>
struct chain_failure_of {
    using type = void;
};
template <class Check, class... Ls>
struct chain_failure_of<Check, type_list<Ls...>, 1> {
    using type = typename check::chain_type_check<Check::bad_type, Ls...>::type;
};
template <class Check, class... Ls>
struct chain_failure_of<Check, type_list<Ls...>, 2> {
    using type = typename check::chain_width_check_at<true, Check::flow.bad, Check::flow.expects, Check::flow.producer,
                                                      Check::flow.produces, Ls...>::type;
};
template <class Check, class... Ls>
struct chain_failure_of<Check, type_list<Ls...>, 3> : chain_nested_at<std::index_sequence_for<Ls...>, Ls...> {};
template <class List>
using chain_failure_t = typename chain_failure_of<chain_check_of<List>, List>::type;
// Instantiates a failing check (its static_assert gives the error); nothing for void.
template <class Failure>
inline constexpr bool chain_asserted = sizeof(Failure) > 0;
template <>
inline constexpr bool chain_asserted<void> = true;

}  // namespace detail

namespace widths {
// The chain of layers Ls when width W reaches the first one: each layer whose nI is dyn
// rebound to the static width that reaches it (Chain::with_nI, below the class).
template <extent_t W, class Seq, class... Ls>
struct rebound_chain_from;
// What fails inside or along the chain of layers Ls when width W reaches the first one (void:
// nothing): Chain::nested_failure, below the class.
template <extent_t W, class Seq, class... Ls>
struct chain_failure_from;
}  // namespace widths

// Its layers are models: chain(), >> and chain_from check that where a chain is made (the
// class itself does not check it again: at each step of `l0 >> l1 >> ...` that check went
// over every layer before it, and the front end keeps what it allocates until the end of the
// expression: 32 MB of 500 layers' 2.1 GB).
template <class... Ls>
class Chain : public Layer<Chain<Ls...>, typename detail::chain_ends<Ls...>::In,
                           typename detail::chain_ends<Ls...>::Out> {
    static_assert(sizeof...(Ls) >= 1, "[tenon-E004] chain(): needs at least one layer");
    static constexpr std::size_t N = sizeof...(Ls);
    // The checks: instantiating them with the numbers of a mismatch fails with its id.
    // (The same class as make_chain's check, so the work is done once.)
    using Checks = detail::chain_check_of<detail::type_list<Ls...>>;
    static constexpr std::size_t bad_type = Checks::bad_type;
    static constexpr auto flow = Checks::flow;
    static_assert(detail::chain_asserted<detail::chain_failure_t<detail::type_list<Ls...>>>);  // E002, E001, E025, ...

    using Base = Layer<Chain<Ls...>, typename detail::chain_ends<Ls...>::In, typename detail::chain_ends<Ls...>::Out>;
    friend Base;
    static constexpr bool homogeneous = detail::chain_ends<Ls...>::homogeneous && bad_type == N;

public:
    using typename Base::In;
    using typename Base::InView;
    using typename Base::Out;
    using typename Base::OutView;
    // The layers, tuple-like: get<I>(layers), auto& [a, b] = layers.
    using Layers = ChainLayers<Ls...>;
    static constexpr extent_t static_nI = flow.first_in;
    static constexpr extent_t static_nO = flow.outgoing;
    static constexpr bool width_preserving = flow.all_keep;
    // The same chain nested in another model (residual, clone, with_array, ...) after a layer of
    // static width W: the width flows into its layers, so a mismatch inside it is found at
    // compile time wherever it is nested (and its layers know their widths without data).
    template <extent_t W>
    using with_nI = typename widths::rebound_chain_from<W, std::index_sequence_for<Ls...>, Ls...>::type;
    template <extent_t W>
    using nested_failure = typename widths::chain_failure_from<W, std::index_sequence_for<Ls...>, Ls...>::type;

    // From the layers, or from layers that convert to them (the same layers before static
    // width propagation rebound their nI).
    template <class... Us>
        requires(sizeof...(Us) == N)
    explicit Chain(std::tuple<Us...>&& layers)
        : Chain(detail::from_source, [&]<std::size_t... I>(std::index_sequence<I...>) {
              return detail::chain_source<N>{
                  detail::chain_make_table<detail::chain_all_moved, detail::type_list<Ls...>,
                                           detail::type_list<Us...>>::value.data(),
                  {static_cast<void*>(&std::get<I>(layers))...}};
          }(std::make_index_sequence<N>{})) {}

    // From the same layers before a width reached them (with_nI): each moved in, converted.
    template <class... Us>
        requires(sizeof...(Us) == N && !std::is_same_v<Chain<Us...>, Chain>)
    explicit Chain(Chain<Us...>&& other) : Chain(detail::from_source, source_of(other)) {}

    // Layer i is src.entry(i) (how chain() builds a chain).
    template <class Src>
    Chain(detail::from_source_t, const Src& src)
        : Base("", {{"nO", as_dim(static_nO)}, {"nI", as_dim(static_nI)}}, {}), layers_(N) {
        for (std::size_t i = 0; i < N; ++i) layers_.push(src.entry(i));
        finish_construction();
    }
    // `prefix`'s layers, taken over (it is left empty), then `last` moved or copied in as the
    // last layer's type (chain >> layer: a constant amount of code per step).
    template <class... Ps, class M>
    Chain(detail::append_t, ChainLayers<Ps...>&& prefix, M&& last)
        : Base("", {{"nO", as_dim(static_nO)}, {"nI", as_dim(static_nI)}}, {}), layers_(std::move(prefix), 1) {
        constexpr bool move = std::is_rvalue_reference_v<M&&> && !std::is_const_v<std::remove_reference_t<M>>;
        using S = std::remove_cvref_t<M>;
        layers_.push(detail::chain_make_layer<last_t<Ls...>, S, move>(
            const_cast<void*>(static_cast<const void*>(std::addressof(last)))));
        finish_construction();
    }

    // The i-th child, typed.
    template <std::size_t I>
    auto& layer() noexcept {
        return get<I>(layers_);
    }
    template <std::size_t I>
    const auto& layer() const noexcept {
        return get<I>(layers_);
    }
    static constexpr std::size_t size() noexcept { return N; }
    Layers& layers() & noexcept { return layers_; }
    const Layers& layers() const& noexcept { return layers_; }
    Layers&& layers() && noexcept { return std::move(layers_); }

    void for_each_child(const std::function<void(Node&)>& f) override {
        for (std::size_t i = 0; i < layers_.count(); ++i) f(*layers_.node(i));
    }

    // Whether the last predict / begin_update ran through the model's plan (lower/engine.hpp).
    bool uses_plan() const noexcept { return engine_.ran.load(std::memory_order_relaxed); }
    // Serving: the plans of this model's own calls keep its dense and maxout weights packed
    // (docs/lowering.md, "Frozen weights"): predict gives the same bits without packing each W
    // at every call, and still sees every write of the weights. A set-up call (not while other
    // threads predict); copies of the model keep the setting. freeze_weights says whether the
    // model runs a plan now (false: it runs its layers, and nothing is kept); frozen_values is
    // what the held plan keeps, in floats (0 where the backend does not prepack).
    bool freeze_weights() { return lowering::engine_freeze(*this, engine_, true); }
    void thaw_weights() { (void)lowering::engine_freeze(*this, engine_, false); }
    bool weights_frozen() const noexcept { return engine_.frozen.load(std::memory_order_acquire); }
    std::size_t frozen_values() const { return lowering::engine_frozen_values(*this, engine_); }

    struct Backprop {
        FlatTuple<typename Ls::Backprop...> bps;
        lowering::EngineBackprop<In, OutView> engine;  // set when the plan ran the forward pass
        // The layers' backward pass, set by the layers' forward pass (forward_impl): compiled
        // only where that is, so a model that runs only its plan compiles neither.
        In (*layers_backward)(const Backprop&, OutView) = nullptr;
        In operator()(OutView dY) const {
            if (engine) return engine(dY);
            if (!layers_backward) [[unlikely]]
                detail::throw_empty_backprop();
            return layers_backward(*this, dY);
        }
        // The parameters' gradients alone, for a training loop that discards dX: through the
        // plan, the product that makes dX is skipped (as large as the first layer's forward).
        void params_only(OutView dY) const {
            if (engine) engine.params_only(dY);
            else (void)(*this)(dY);
        }

    private:
        friend Chain;
        static In backward(const Backprop& b, OutView dY) {
            if constexpr (homogeneous) {
                using T = detail::chain_tables<Out, OutView, Ls...>;
                if constexpr (N == 1) {
                    return get<0>(b.bps)(dY);
                } else {
                    Out d = T::backprop[N - 2](b.bps.address(N - 1), dY);
                    for (std::size_t i = N - 2; i > 0; --i) d = T::backprop[i - 1](b.bps.address(i), d);
                    return get<0>(b.bps)(d);
                }
            } else {
                return b.backward_from<N - 1>(dY);
            }
        }
        template <std::size_t I, class D>
        auto backward_from(const D& d) const {
            auto dX = get<I>(bps)(d);
            if constexpr (I == 0) return dX; else return backward_from<I - 1>(dX);
        }
    };

    // The model's plans (lower/engine.hpp): Layer's public predict / begin_update run the plan
    // through it when the chain is the model called; a chain inside another model runs its
    // layers (the outer plan walks into it), and that code is not compiled for it. (A member
    // without the chain's types in its signature: a declaration per chain type costs nothing,
    // which matters for `a >> b >> ...`, a chain type per step.)
    lowering::EngineSlot& engine_slot() const {
        require_layers();
        return engine_;
    }

private:
    // The layers of a chain of the same length, to be moved in and converted (with_nI).
    template <class... Us>
    static detail::chain_source<N> source_of(Chain<Us...>& other) {
        if (other.layers().empty()) detail::throw_moved_chain(other.name());
        detail::chain_source<N> src{
            detail::chain_make_table<detail::chain_all_moved, detail::type_list<Ls...>, detail::type_list<Us...>>::value
                .data(),
            {}};
        for (std::size_t i = 0; i < N; ++i) src.from[i] = other.layers().address(i);
        return src;
    }

    // The children as Nodes, in order (a chain whose layers were moved out has none: E118).
    std::array<Node*, N> children() {
        require_layers();
        std::array<Node*, N> nodes;
        for (std::size_t i = 0; i < N; ++i) nodes[i] = layers_.node(i);
        return nodes;
    }
    void require_layers() const {
        if (layers_.empty()) [[unlikely]]
            detail::throw_moved_chain(this->name());
    }
    void require_contents() const override { require_layers(); }
    // The name (the layers' names joined by >>) and the widths the layers already know
    // (src/chain_store.cpp: the same code for every chain type).
    void finish_construction() {
        detail::ChainOps::finish(*this, layers_, nI_from, y_from, static_nI == dyn, static_nO == dyn);
    }

    // Thinc's inference without its guesses: each layer is initialised on the output of the
    // ones before it (or, without a sample, on the last known width); Y reaches only the last
    // layer that changes the width and the width-preserving ones after it (e.g. a final
    // Dropout), never a hidden layer.
    static constexpr std::size_t y_from = flow.last_changer;
    static constexpr std::size_t nI_from = flow.first_changer;

    void init_impl(sample_ptr_t<InView> X, sample_ptr_t<OutView> Y) {
        const auto nodes = children();
        // Without a sample, the chain's own widths (given by the model around it, set_dim, or
        // read from its layers) stand in for it: nI flows from the first layer on as a
        // sample's width would, nO reaches the last layer that changes the width (as Y would).
        std::size_t width = dyn;
        if (!X && this->has_dim("nI")) {
            width = this->get_dim("nI");
            const Node& first = *nodes[nI_from];
            if (first.has_dim("nI") && first.get_dim("nI") != width)
                throw ShapeError(this->name() + ": the chain's input width is " + std::to_string(width) +
                                     " but its first layer, " + first.name() + ", expects input width " +
                                     std::to_string(first.get_dim("nI")),
                                 "tenon-E101");
        }
        if (!Y) widths::offer(*nodes[y_from], "nO", widths::known(*this, "nO"));
        if constexpr (homogeneous) {
            // Layer 0 takes In; the others take Out. At most one activation is alive at a time.
            auto& l0 = get<0>(layers_);
            detail::chain_init_layer(l0, X, 0 >= y_from ? Y : nullptr, width);
            if constexpr (N > 1) {
                using T = detail::chain_tables<Out, OutView, Ls...>;
                std::optional<Out> cur;
                if (X) cur = l0.predict_inner(*X);
                for (std::size_t i = 1; i < N; ++i) {
                    sample_ptr_t<OutView> y = i >= y_from ? Y : nullptr;
                    if (cur) {
                        const OutView v = *cur;
                        Out next;
                        T::init[i - 1](layers_.address(i), &v, y, width, i + 1 < N ? &next : nullptr);
                        if (i + 1 < N) cur = std::move(next);
                    } else {
                        T::init[i - 1](layers_.address(i), nullptr, y, width, nullptr);
                    }
                }
            }
        } else {
            init_from<0>(X, Y, width);
        }
        sync_dims();
        this->mark_initialized();
    }
    // The chain's nI is its first width-changing layer's nI; its nO the last one's nO. They
    // are read from those layers whenever the layers know them (Node::dim_owner), so a
    // layer's forced set_dim is the chain's new width at once. A width set on the chain
    // itself (set_dim, or the model around it) stands until sync_dims: initialize compares it
    // with the layer's (tenon-E101) and then the chain follows its layers again.
    Node* dim_owner(std::string_view name) noexcept override {
        if (layers_.empty()) return nullptr;
        if (name == "nI") return layers_.node(nI_from);
        if (name == "nO") return layers_.node(y_from);
        return nullptr;
    }
    void sync_dims() { detail::ChainOps::sync_dims(*this, layers_, nI_from, y_from, true, true); }

    // The recursive walk, for chains whose data type changes along the way.
    template <std::size_t I, class XV>
    void init_from(const XV* X, sample_ptr_t<OutView> Y, std::size_t& width) {
        auto& l = get<I>(layers_);
        using L = std::remove_reference_t<decltype(l)>;
        sample_ptr_t<typename L::OutView> y = nullptr;
        if constexpr (std::is_same_v<typename L::OutView, OutView>) y = I >= y_from ? Y : nullptr;
        detail::chain_init_layer(l, X, y, width);
        if constexpr (I + 1 < N) {
            using Next = type_at_t<I + 1, Ls...>;
            if (X) {
                auto out = l.predict_inner(*X);
                const typename Next::InView v = out;
                init_from<I + 1>(&v, Y, width);
            } else {
                init_from<I + 1>(static_cast<sample_ptr_t<typename Next::InView>>(nullptr), Y, width);
            }
        }
    }

    Out predict_impl(InView X) const {
        require_layers();
        if constexpr (homogeneous) {
            Out cur = get<0>(layers_).predict_inner(X);
            if constexpr (N > 1) {
                using T = detail::chain_tables<Out, OutView, Ls...>;
                for (std::size_t i = 1; i < N; ++i) cur = T::predict[i - 1](layers_.address(i), cur);
            }
            return cur;
        } else {
            return predict_from<0>(X);
        }
    }
    template <std::size_t I, class XV>
    auto predict_from(const XV& x) const {
        auto y = get<I>(layers_).predict_inner(x);
        if constexpr (I + 1 == N) return y; else return predict_from<I + 1>(y);
    }

    std::pair<Out, Backprop> forward_impl(InView X, bool is_train) {
        require_layers();
        Backprop bp;
        bp.layers_backward = &Backprop::backward;
        if constexpr (homogeneous) {
            auto [y0, b0] = get<0>(layers_).update_inner(X, is_train);
            get<0>(bp.bps) = std::move(b0);
            Out cur = std::move(y0);
            if constexpr (N > 1) {
                using T = detail::chain_tables<Out, OutView, Ls...>;
                for (std::size_t i = 1; i < N; ++i)
                    cur = T::forward[i - 1](layers_.address(i), cur, is_train, bp.bps.address(i));
            }
            return {std::move(cur), std::move(bp)};
        } else {
            auto y = forward_from<0>(X, is_train, bp);
            return {std::move(y), std::move(bp)};
        }
    }
    template <std::size_t I, class XV>
    auto forward_from(const XV& x, bool is_train, Backprop& bp) {
        auto [y, b] = get<I>(layers_).update_inner(x, is_train);
        get<I>(bp.bps) = std::move(b);
        if constexpr (I + 1 == N) return std::move(y); else return forward_from<I + 1>(y, is_train, bp);
    }

    Layers layers_;
    mutable lowering::EngineSlot engine_;
};

// True for the type of a chain (not for user types derived from one).
template <class T>
inline constexpr bool is_chain_v = false;
template <class... Ls>
inline constexpr bool is_chain_v<Chain<Ls...>> = true;

namespace widths {
// The chain type of some layers after static width propagation.
template <class Seq, class... Ls>
struct rebound_chain;
template <std::size_t... I, class... Ls>
struct rebound_chain<std::index_sequence<I...>, Ls...> {
    using type = Chain<typename widths::rebind_nI<Ls, widths::flow<Ls...>::incoming.at[I]>::type...>;
};
template <extent_t W, std::size_t... I, class... Ls>
struct rebound_chain_from<W, std::index_sequence<I...>, Ls...> {
    using type =
        Chain<typename widths::rebind_nI<Ls, widths::flow<Ls...>::template incoming_from<W>.at[I]>::type...>;
};
// (The layers' own failures first; then the check of the layers rebound to the widths.)
template <class Inner, class Rebound>
struct chain_failure_or_check {
    using type = Inner;
};
template <class... Ls>
struct chain_failure_or_check<void, detail::type_list<Ls...>> {
    using type = detail::chain_failure_t<detail::type_list<Ls...>>;
};
template <extent_t W, std::size_t... I, class... Ls>
struct chain_failure_from<W, std::index_sequence<I...>, Ls...> {
    using type = typename chain_failure_or_check<
        first_failure_t<nested_failure_t<Ls, flow<Ls...>::template incoming_from<W>.at[I]>...>,
        detail::type_list<typename rebind_nI<Ls, flow<Ls...>::template incoming_from<W>.at[I]>::type...>>::type;
};
}  // namespace widths

// chain_from(tuple of layers): the chain of those layers, each whose nI is dyn rebound to
// the static width that reaches it (Relu<512>() after a 784-wide layer is Relu<512, 784>).
template <class... Ls>
    requires(all_true<Model<Ls>...>)
auto chain_from(std::tuple<Ls...>&& layers) {
    return typename widths::rebound_chain<std::index_sequence_for<Ls...>, Ls...>::type(std::move(layers));
}

namespace detail {
template <class... A, class... B>
type_list<A..., B...> operator+(type_list<A...>, type_list<B...>);

// The layers an argument of chain() contributes: a chain's layers, or itself.
template <class M>
struct chain_parts_of {
    static constexpr std::size_t count = 1;
    using list = type_list<M>;
};
template <class... Ls>
struct chain_parts_of<Chain<Ls...>> {
    static constexpr std::size_t count = sizeof...(Ls);
    using list = type_list<Ls...>;
};
// The address of part k of an argument of chain(): a chain's layer k, or the argument.
template <class D>
void* chain_part_address(void* arg, std::size_t k) noexcept {
    if constexpr (is_chain_v<D>) return static_cast<D*>(arg)->layers().address(k); else return arg;
}

// The flat list of layers of chain(ms...): usually no argument is a chain and it is the
// arguments' types; otherwise a fold over the few arguments (clang nests a fold as deep as
// its pack, and refuses more than 256).
template <bool AnyChain, class... Ms>
struct chain_flatten {
    using type = type_list<Ms...>;
};
template <class... Ms>
struct chain_flatten<true, Ms...> {
    using type = decltype((type_list<>{} + ... + typename chain_parts_of<Ms>::list{}));
};

template <class List>
struct rebound_chain_of;
template <class... Ls>
struct rebound_chain_of<type_list<Ls...>> {
    using type = typename widths::rebound_chain<std::index_sequence_for<Ls...>, Ls...>::type;
};

// The type of chain(ms...): the flat list of layers after width propagation. For
// `chain >> layer` (each step of a >> b >> c >> ...), the chain's layers keep their types
// (width propagation has already run over them) and only the new layer is rebound, to the
// chain's output width: this avoids a propagation over the whole list at every step.
template <class Args, class... Ds>
struct chain_type_of {
    using type = typename rebound_chain_of<typename Args::List>::type;
};
template <class Args, class... Ls, class D>
    requires(!is_chain_v<D> && !widths::flow<Ls...>::value.rebinds && !widths::flow<Ls...>::value.open_start)
struct chain_type_of<Args, Chain<Ls...>, D> {
    using type = Chain<Ls..., typename widths::rebind_nI<D, Chain<Ls...>::static_nO>::type>;
};

template <class C>
struct chain_layers;
template <class... Ls>
struct chain_layers<Chain<Ls...>> {
    using list = type_list<Ls...>;
};

// The arguments of chain() as deduced (T for an rvalue, T& or const T& for an lvalue): for
// layer i of the new chain, the argument it comes from, its index there, and whether it is
// moved (from a non-const rvalue) or copied. (Plain arrays: see widths::flow.)
template <class... Ms>
struct chain_args {
    static constexpr std::size_t K = sizeof...(Ms);
    static constexpr std::size_t N = [] {
        const std::size_t counts[] = {chain_parts_of<std::remove_cvref_t<Ms>>::count..., 0};
        std::size_t n = 0;
        for (std::size_t c : counts) n += c;
        return n;
    }();
    struct Index {
        std::size_t arg[N ? N : 1]{}, part[N ? N : 1]{};
        bool move[N ? N : 1]{};
    };
    static constexpr Index index = [] {
        const std::size_t counts[] = {chain_parts_of<std::remove_cvref_t<Ms>>::count..., 0};
        const bool moved[] = {(!std::is_reference_v<Ms> && !std::is_const_v<Ms>)..., false};
        Index t;
        std::size_t i = 0;
        for (std::size_t j = 0; j < K; ++j)
            for (std::size_t k = 0; k < counts[j]; ++k, ++i) {
                t.arg[i] = j;
                t.part[i] = k;
                t.move[i] = moved[j];
            }
        return t;
    }();
    static constexpr const bool* move = index.move;
    using List = typename chain_flatten<any_true<is_chain_v<std::remove_cvref_t<Ms>>...>,
                                        std::remove_cvref_t<Ms>...>::type;
};

// The chain C of the arguments (their layers moved or copied into it).
template <class Args, class C, class... Ms>
C make_checked_chain(Ms&&... ms) {
    using Make = chain_make_table<Args, typename chain_layers<C>::list, typename Args::List>;
    static constexpr std::array<void* (*)(void*, std::size_t) noexcept, Args::K> part{
        &chain_part_address<std::remove_cvref_t<Ms>>...};
    const std::array<void*, Args::K> args{const_cast<void*>(static_cast<const void*>(std::addressof(ms)))...};
    chain_source<Args::N> src{Make::value.data(), {}};
    for (std::size_t i = 0; i < Args::N; ++i) {
        const std::size_t j = Args::index.arg[i];
        src.from[i] = part[j](args[j], Args::index.part[i]);
    }
    return C(from_source, src);
}

// chain(rvalue chain, layer), each step of a >> b >> c >> ...: the new chain takes the old
// one's store over and appends the layer (no table over the layers, no per-layer code).
template <class... Ms>
inline constexpr bool chain_appends = false;
template <class... Ls, class M>
    requires(!is_chain_v<std::remove_cvref_t<M>> && !widths::flow<Ls...>::value.rebinds &&
             !widths::flow<Ls...>::value.open_start)
inline constexpr bool chain_appends<Chain<Ls...>, M> = true;

// (Not inlined: `l0 >> l1 >> ... >> l99` is one full-expression whose temporaries live to its
// end; inlined, every step's code lands in the caller, and GCC's points-to analysis is
// superlinear in a function's size: 85 s instead of 26 s for 100 layers at -O2.)
template <class... Ms>
[[gnu::noinline]] auto make_chain(Ms&&... ms) {
    using Args = chain_args<Ms...>;
    using C = typename chain_type_of<Args, std::remove_cvref_t<Ms>...>::type;
    using Failure = chain_failure_t<typename chain_layers<C>::list>;
    if constexpr (!std::is_void_v<Failure>) {
        check::report<Failure>();  // E002, E001, E025, or a layer's inside: its own id
        return failed_model{};
    } else if constexpr (chain_appends<Ms...>) {
        return [](auto&& prefix, auto&& last) {
            return C(append, std::move(prefix).layers(), std::forward<decltype(last)>(last));
        }(std::forward<Ms>(ms)...);
    } else {
        return make_checked_chain<Args, C>(std::forward<Ms>(ms)...);
    }
}

}  // namespace detail

// chain(a, b, ...): layers are copied or moved in; nested chains are flattened.
template <class... Ms>
    requires(all_true<Model<Ms>...>)
auto chain(Ms&&... ms) {
    return detail::make_chain(std::forward<Ms>(ms)...);
}

// a >> b is chain(a, b); a >> b >> c is one flat chain of three.
template <Model A, Model B>
auto operator>>(A&& a, B&& b) {
    return detail::make_chain(std::forward<A>(a), std::forward<B>(b));
}

}  // namespace tenon

// The calls that no overload above takes (chain(), a non-model operand): E004, E005, E006.
#include "tenon/combinators/chain_checks.hpp"
// The plan (the engine's entry functions are defined there).
#include "tenon/lower/lower.hpp"
