// The lifecycle every model type offers (Thinc's Model API in C++): initialize, predict,
// begin_update / operator() returning (Y, backprop), finish_update. A layer derives from
// Layer<Self, In, Out> and supplies three functions:
//   void init_impl(sample_ptr_t<InView> X, sample_ptr_t<OutView> Y);  // resolve dims, create params
//   Out predict_impl(InView X) const;                         // inference, no randomness
//   std::pair<Out, Backprop> forward_impl(InView X, bool is_train);
// where Backprop is a default-constructible callable `InOwned(OutView dY)` that returns dX
// and *adds* to the parameter gradients. Everything a call needs besides the parameters
// lives in the returned Backprop, never in the model, so predict is const and thread-safe.
#pragma once
#include <array>
#include <concepts>
#include <cstddef>
#include <type_traits>
#include <typeinfo>
#include <utility>

#include "tenon/lower/engine.hpp"
#include "tenon/model/diagnostics.hpp"
#include "tenon/model/finite.hpp"
#include "tenon/model/memory_check.hpp"
#include "tenon/types/list.hpp"
#include "tenon/model/node.hpp"
#include "tenon/optim/optimizer.hpp"

namespace tenon {

// The read-only view type a layer takes for a data type (a view of an array, or the type
// itself for non-array data).
template <class T>
struct input_view {
    using type = const T&;
};
template <class T, extent_t... E>
struct input_view<Array<T, E...>> {
    using type = ArrayView<const T, E...>;
};
template <class T>
using input_view_t = typename input_view<T>::type;
// How init_impl and initialize_from receive an optional sample: a pointer to the viewed data
// (the view is a reference for non-array data such as Ragged, and there is no pointer to a
// reference).
template <class View>
using sample_ptr_t = const std::remove_reference_t<View>*;

namespace detail {
// A batch of no sequences (a List of no arrays, a Ragged or Padded of none) given to predict:
// the model's output is made without running its layers, which could not say it (an empty
// List carries no width, and a layer after list2ragged needs one): an empty List, or no rows
// of the model's nO columns, as a batch of 0 rows of a Floats2d model gives (0, nO).
template <class X>
concept sequence_batch = requires { typename X::array_type; } || requires(const X& x) {
    typename X::data_type;
    x.lengths();
};
template <class Out>
bool empty_output(const Node& model, Out& Y);
// A batch of no sequences (a List or Ragged of size 0): Y = the model's output for it, true.
template <class XV, class Out>
bool empty_batch_output(const Node& model, const XV& X, Out& Y) {
    if constexpr (sequence_batch<std::remove_cvref_t<XV>>) return X.size() == 0 && empty_output(model, Y);
    else return false;
}
// The rows of an input: an array's, a Ragged's, a List's arrays' together.
template <class X>
std::size_t input_rows(const X& x) {
    if constexpr (requires { x.rows(); }) return x.rows();
    else if constexpr (requires { x.shape(0); }) return x.shape(0);
    else return list_rows(x, "input");
}
template <class Out>
bool empty_output(const Node& model, Out& Y) {
    if constexpr (requires { typename Out::array_type; }) {
        Y = Out{};
        return true;
    } else if constexpr (requires { typename Out::data_type; } &&
                         requires { Out(typename Out::data_type(), Ints1d({0})); }) {
        using D = typename Out::data_type;
        if constexpr (D::rank == 2) {
            if (!model.has_dim("nO")) return false;
            Y = Out(D(std::array<std::size_t, 2>{0, model.get_dim("nO")}), Ints1d({0}));
            return true;
        }
        return false;
    } else if constexpr (requires { typename Out::data_type; } &&
                         requires { Out(typename Out::data_type(), Ints1d(), Ints1d(), Ints1d()); }) {
        using D = typename Out::data_type;  // Padded: (0 steps, 0 sequences, nO)
        if constexpr (D::rank == 3) {
            if (!model.has_dim("nO")) return false;
            Y = Out(D(std::array<std::size_t, 3>{0, 0, model.get_dim("nO")}), Ints1d({0}), Ints1d({0}), Ints1d({0}));
            return true;
        }
        return false;
    } else if constexpr (requires { Out::rank; } && !requires { typename Out::data_type; }) {
        if constexpr (Out::rank == 2) {
            if (!model.has_dim("nO")) return false;
            Y = Out(std::array<std::size_t, 2>{0, model.get_dim("nO")});
            return true;
        }
        return false;
    } else {
        return false;
    }
}
}  // namespace detail

namespace detail {
// The static extent of an array type's last dimension (dyn for any other type).
template <class X>
inline constexpr extent_t static_last_extent_of = dyn;
template <class T, extent_t... E>
inline constexpr extent_t static_last_extent_of<Array<T, E...>> = sizeof...(E) ? std::array<extent_t, sizeof...(E) + 1>{E..., 0}[sizeof...(E) - 1] : extent_t{dyn};
template <class T, extent_t... E>
inline constexpr extent_t static_last_extent_of<ArrayView<T, E...>> = sizeof...(E) ? std::array<extent_t, sizeof...(E) + 1>{E..., 0}[sizeof...(E) - 1] : extent_t{dyn};
template <class X>
inline constexpr extent_t static_last_extent = static_last_extent_of<std::remove_cvref_t<X>>;
// E017's condition: X's type and the model's type both fix the input width, differently.
template <class X, class M>
concept static_width_differs = requires { M::static_nI; } && static_last_extent<X> != dyn &&
                               M::static_nI != dyn && static_last_extent<X> != M::static_nI;
// E057's condition: dY's type and the model's type both fix the output width, differently.
template <class D, class M>
concept static_out_width_differs = requires { M::static_nO; } && static_last_extent<D> != dyn &&
                                   M::static_nO != dyn && static_last_extent<D> != M::static_nO;
}  // namespace detail

// What begin_update and model(X, is_train) return as the backprop callback: the layer's
// Backprop, which also names the mistake (E011) when called with dY of another data type than
// the model's output. It converts to M::Backprop (combinators keep their children's).
// It also runs in the memory of the model that made it (the arrays its backprop makes are
// made there: docs/cuda.md), whoever calls it.
template <class M>
struct CheckedBackprop : M::Backprop {
    using Base = typename M::Backprop;
    Memory tenon_memory_ = detail::current_memory();  // the model's: made inside its entry point
    // The model's life when begin_update was called on it (the model the user called, not the
    // layers inside): a backprop called after the model was destroyed, moved, assigned or
    // re-initialised refuses with tenon-E172 (detail::NodeLife).
    detail::LifeWatch tenon_life_{};
    // (The OutView form also takes a braced list: backprop({dY0, dY1}) for a pair.)
    decltype(auto) operator()(typename M::OutView dY) const
        requires std::is_invocable_v<const Base&, typename M::OutView>
    {
        tenon_life_.check();
        const detail::MemoryScope scope(tenon_memory_);
        return Base::operator()(dY);
    }
    template <class D>
        requires(std::is_invocable_v<const Base&, const D&> && !detail::static_out_width_differs<D, M>)
    decltype(auto) operator()(const D& dY) const {
        tenon_life_.check();
        const detail::MemoryScope scope(tenon_memory_);
        return Base::operator()(dY);
    }
    // The parameters' gradients alone, where the model's backprop has them (a plan's).
    template <class D>
        requires requires(const Base& b, const D& d) { b.params_only(d); }
    void params_only(const D& dY) const {
        tenon_life_.check();
        const detail::MemoryScope scope(tenon_memory_);
        Base::params_only(dY);
    }
    // dY of the output's type whose type fixes another width than the model's nO: E057.
    template <class D>
        requires(std::is_invocable_v<const Base&, const D&> && detail::static_out_width_differs<D, M>)
    auto operator()(const D&) const {
        check::report<check::gradient_static_width<check::expects_width<M::static_nO>,
                                                   check::given_width<detail::static_last_extent<D>>>>();
        return check::never<decltype(std::declval<const Base&>()(std::declval<typename M::OutView>()))>();
    }
    template <class D>
        requires(!std::is_invocable_v<const Base&, const D&>)
    auto operator()(const D&) const {
        check::report<check::backprop_input<check::expects_type<check::name_t<typename M::Out>>,
                                            check::given_type<check::name_t<D>>>>();
        return check::never<decltype(std::declval<const Base&>()(std::declval<typename M::OutView>()))>();
    }
};

// The backprop type begin_update returns for a model type M: CheckedBackprop<M> where the
// layer's Backprop is a class that can be derived from, else M::Backprop itself.
template <class M>
using backprop_t = std::conditional_t<std::is_class_v<typename M::Backprop> && !std::is_final_v<typename M::Backprop>,
                                      CheckedBackprop<M>, typename M::Backprop>;

namespace detail {
// How many public entry points (initialize, predict, begin_update, operator()) this thread is
// inside: the outermost one names the node of an error by its path.
inline constinit thread_local int entry_depth = 0;
struct EntryCall {
    EntryCall() noexcept { ++entry_depth; }
    ~EntryCall() { --entry_depth; }
    EntryCall(const EntryCall&) = delete;
    EntryCall& operator=(const EntryCall&) = delete;
};
// Marks `e` as seen first by `node` (the innermost entry point) and, at the outermost entry
// point (`node` is then the model called), rewrites the message's leading node name into the
// node's path from there (src/model_api.cpp).
void note_entry_error(Error& e, const Node& node);
}  // namespace detail


namespace detail {
// A model type with plans of its own (a chain): its engine slot, and its Backprop's `engine`
// where the plan's backprop goes (lower/engine.hpp).
template <class D>
concept runs_plan = requires(const D& c, typename D::Backprop& bp) {
    { c.engine_slot() } -> std::same_as<lowering::EngineSlot&>;
    bp.engine;
};
// A model that runs only its plan (lowering::plan_only, lower.hpp: chain.hpp includes it).
template <class D>
constexpr bool runs_only_plan() {
    if constexpr (runs_plan<D>) return lowering::plan_only<D>::value;
    else return false;
}
}  // namespace detail

template <class Derived, class InT, class OutT>
class Layer : public Node {
public:
    using In = InT;
    using Out = OutT;
    using InView = input_view_t<InT>;
    using OutView = input_view_t<OutT>;

    // Infers the dims that are still dyn from sample data and initialises the parameters.
    Derived& initialize() {
        return entry([&]() -> Derived& {
            self().init_impl(nullptr, nullptr);
            return self();
        });
    }
    Derived& initialize(InView X) {
        return entry([&]() -> Derived& {
            self().init_impl(&X, nullptr);
            return self();
        });
    }
    Derived& initialize(InView X, OutView Y) {
        return entry([&]() -> Derived& {
            check_sample_rows(&X, &Y);
            self().init_impl(&X, &Y);
            return self();
        });
    }
    // A sample whose type fixes another width than the model's: E017.
    template <class X>
        requires(std::is_convertible_v<const X&, InView> && detail::static_width_differs<X, Derived>)
    auto& initialize(const X&) {
        check::report<check::input_static_width<check::expects_width<Derived::static_nI>,
                                                check::given_width<detail::static_last_extent<X>>>>();
        return self();
    }
    template <class X, class Y>
        requires(std::is_convertible_v<const X&, InView> && std::is_convertible_v<const Y&, OutView> &&
                 detail::static_width_differs<X, Derived>)
    auto& initialize(const X&, const Y&) {
        check::report<check::input_static_width<check::expects_width<Derived::static_nI>,
                                                check::given_width<detail::static_last_extent<X>>>>();
        return self();
    }
    // A sample Y whose type fixes another width than the model's output width: E057.
    template <class X, class Y>
        requires(std::is_convertible_v<const X&, InView> && std::is_convertible_v<const Y&, OutView> &&
                 !detail::static_width_differs<X, Derived> && detail::static_out_width_differs<Y, Derived>)
    auto& initialize(const X&, const Y&) {
        check::report<check::gradient_static_width<check::expects_width<Derived::static_nO>,
                                                   check::given_width<detail::static_last_extent<Y>>>>();
        return self();
    }
    // A sample of another data type: E010 (the overloads above take the model's types).
    template <class X>
        requires(!std::is_convertible_v<const X&, InView>)
    auto& initialize(const X&) {
        check::report<check::initialize_sample<check::expects_type<check::name_t<In>>,
                                               check::given_type<check::name_t<X>>>>();
        return self();
    }
    template <class X, class Y>
        requires(!std::is_convertible_v<const X&, InView> || !std::is_convertible_v<const Y&, OutView>)
    auto& initialize(const X&, const Y&) {
        check::report<check::initialize_sample<check::expects_type<check::name_t<In>>,
                                               check::given_type<check::name_t<X>>,
                                               check::expects_type<check::name_t<Out>>,
                                               check::given_type<check::name_t<Y>>>>();
        return self();
    }
    // The pointer form, for combinators that may or may not have a sample.
    Derived& initialize_from(sample_ptr_t<InView> X, sample_ptr_t<OutView> Y) {
        return entry([&]() -> Derived& {
            check_sample_rows(X, Y);
            self().init_impl(X, Y);
            return self();
        });
    }

    // Inference: const, no dropout, allocates only its result.
    // The model called (not its layers) refuses an input with NaN or inf: tenon-E252
    // (tenon/model/finite.hpp; set_check_finite_inputs(false) turns the check off).
    // The model the user calls runs through its plan where it has one (a chain: lower/engine.hpp).
    Out predict(InView X) const { return predict_call<true>(X); }
    // (Y, backprop) for training; backprop(dY) returns dX and adds to the gradients.
    auto begin_update(InView X) { return update_call<true>(X, true); }
    auto operator()(InView X, bool is_train) { return update_call<true>(X, is_train); }
    // The same calls from a model on one inside it (combinators, wrappers, the plan's layer
    // stages): a model inside another runs its layers, never a plan of its own (the outer plan
    // walks into it), so a nested chain's plan code is not even compiled.
    Out predict_inner(InView X) const { return predict_call<false>(X); }
    auto update_inner(InView X, bool is_train) { return update_call<false>(X, is_train); }
    // The same calls with an array whose type fixes another width than the model's: E017.
    template <class X>
        requires(std::is_convertible_v<const X&, InView> && detail::static_width_differs<X, Derived>)
    auto predict(const X&) const {
        check::report<check::input_static_width<check::expects_width<Derived::static_nI>,
                                                check::given_width<detail::static_last_extent<X>>>>();
        return check::never<Out>();
    }
    template <class X>
        requires(std::is_convertible_v<const X&, InView> && detail::static_width_differs<X, Derived>)
    auto begin_update(const X&) {
        check::report<check::input_static_width<check::expects_width<Derived::static_nI>,
                                                check::given_width<detail::static_last_extent<X>>>>();
        return check::never<std::pair<Out, backprop_t<Derived>>>();
    }
    template <class X>
        requires(std::is_convertible_v<const X&, InView> && detail::static_width_differs<X, Derived>)
    auto operator()(const X&, bool) {
        check::report<check::input_static_width<check::expects_width<Derived::static_nI>,
                                                check::given_width<detail::static_last_extent<X>>>>();
        return check::never<std::pair<Out, backprop_t<Derived>>>();
    }
    // The same calls with X of another data type than the model's input: E008, E009.
    template <class X>
        requires(!std::is_convertible_v<const X&, InView>)
    auto predict(const X&) const {
        check::report<check::predict_input<check::expects_type<check::name_t<In>>,
                                           check::given_type<check::name_t<X>>>>();
        return check::never<Out>();
    }
    template <class X>
        requires(!std::is_convertible_v<const X&, InView>)
    auto begin_update(const X&) {
        check::report<check::update_input<check::expects_type<check::name_t<In>>,
                                          check::given_type<check::name_t<X>>>>();
        return check::never<std::pair<Out, backprop_t<Derived>>>();
    }
    template <class X>
        requires(!std::is_convertible_v<const X&, InView>)
    auto operator()(const X&, bool) {
        check::report<check::update_input<check::expects_type<check::name_t<In>>,
                                          check::given_type<check::name_t<X>>>>();
        return check::never<std::pair<Out, backprop_t<Derived>>>();
    }
    // More than one input (siamese.predict(A, B)): E008, E009. A model takes one input; a pair
    // model's is a std::pair, a batch of arrays a List.
    template <class A, class B, class... R>
    auto predict(const A&, const B&, const R&...) const {
        check::report<check::predict_arguments<check::expects_type<check::name_t<In>>,
                                               check::given_arguments<check::name_t<A>, check::name_t<B>,
                                                                      check::name_t<R>...>>>();
        return check::never<Out>();
    }
    template <class A, class B, class... R>
    auto begin_update(const A&, const B&, const R&...) {
        check::report<check::update_arguments<check::expects_type<check::name_t<In>>,
                                              check::given_arguments<check::name_t<A>, check::name_t<B>,
                                                                     check::name_t<R>...>>>();
        return check::never<std::pair<Out, backprop_t<Derived>>>();
    }
    template <class A, class B, class... R>
        requires(sizeof...(R) > 0 || !std::is_convertible_v<const B&, bool>)
    auto operator()(const A&, const B&, const R&...) {
        check::report<check::update_arguments<check::expects_type<check::name_t<In>>,
                                              check::given_arguments<check::name_t<A>, check::name_t<B>,
                                                                     check::name_t<R>...>>>();
        return check::never<std::pair<Out, backprop_t<Derived>>>();
    }

    // Applies the optimizer to every parameter of this model and its descendants, then
    // zeroes the gradients (Thinc's finish_update).
    void finish_update(Optimizer& optimizer) {
        this->apply_optimizer_tree(optimizer);
    }
    // Anything else (a temporary optimizer, a learning rate): E015.
    template <class O>
        requires(!std::is_convertible_v<O&&, Optimizer&>)
    auto finish_update(O&&) {
        check::report<check::optimizer_argument<check::given_type<O&&>>>();
    }

protected:
    using Layer::Node::Node;
    // For converting constructors between layer types that differ only in static widths.
    explicit Layer(Node&& node) noexcept : Node(std::move(node)) {}
    Derived& self() noexcept { return static_cast<Derived&>(*this); }
    const Derived& self() const noexcept { return static_cast<const Derived&>(*this); }

private:
    template <bool Plan>
    Out predict_call(InView X) const {
        return entry([&]() -> Out {
            require_initialized();
            check_input_finite(X, "predict");
            if constexpr (Plan && detail::sequence_batch<std::remove_cvref_t<InView>>) {
                if (X.size() == 0 && detail::entry_depth == 1) {
                    Out Y;
                    if (detail::empty_output(*this, Y)) return Y;
                }
            }
            if constexpr (Plan && detail::runs_plan<Derived>) {
                if (detail::entry_depth == 1) {
                    Out Y;
                    if (lowering::engine_predict(self(), self().engine_slot(), X, Y)) return Y;
                }
            }
            return self().predict_impl(X);
        });
    }
    template <bool Plan>
    auto update_call(InView X, bool is_train) {
        return entry([&] {
            require_initialized();
            check_input_finite(X, "begin_update");
            if constexpr (Plan && detail::runs_only_plan<Derived>()) {
                // Only the plan: the layers' training path is not compiled (lowering::plan_only).
                std::pair<Out, typename Derived::Backprop> r;
                lowering::engine_train(self(), self().engine_slot(), X, is_train, r.first, r.second.engine);
                return watched<Plan>(checked(std::move(r)));
            } else {
                if constexpr (Plan && detail::runs_plan<Derived>) {
                    if (detail::entry_depth == 1) {
                        std::pair<Out, typename Derived::Backprop> r;
                        if (lowering::engine_empty_batch(self(), X, r.first, r.second.engine))
                            return watched<Plan>(checked(std::move(r)));
                        if (!is_train) self().engine_slot().note_ran(false);  // (model(X, false): the layers)
                        if (is_train && lowering::engine_forward(self(), self().engine_slot(), X, r.first, r.second.engine))
                            return watched<Plan>(checked(std::move(r)));
                    }
                }
                return watched<Plan>(checked(self().forward_impl(X, is_train)));
            }
        });
    }
    // The backprop the user gets watches the model's life (CheckedBackprop::tenon_life_); the
    // ones combinators keep of their children need not (the model called is watched).
    template <bool Plan, class P>
    P watched(P&& r) const {
        if constexpr (Plan && requires { r.second.tenon_life_; })  // (the public calls: Plan)
            if (detail::entry_depth == 1) r.second.tenon_life_ = this->life_watch();
        return std::forward<P>(r);
    }

    // Runs a public entry point. A tenon::Error from inside gets the path of the node that
    // threw, from the model the user called (detail::note_entry_error, only when throwing);
    // the normal path costs one thread_local increment and decrement.
    template <class F>
    decltype(auto) entry(F&& f) const {
        try {
            detail::EntryCall call;
            const detail::MemoryScope memory(this->ops().memory());  // the call's arrays: the model's memory
            return f();
        } catch (Error& e) {
            detail::note_entry_error(e, *this);
            throw;
        }
    }

    // The outermost entry point's input check (the layers inside see what the model computed).
    // Also where the input lives: the model's backend's memory (tenon-E342).
    void check_input_finite(const InView& X, const char* call) const {
        if (detail::entry_depth == 1) {
            detail::check_input_memory(this->ops(), this->name(), call, X);
            detail::check_finite_input("", this->name(), call, X, &this->ops());
        }
    }

    // forward_impl's (Y, backprop) with the backprop wrapped to check its argument's type.
    // (A forward_impl that returns anything else is passed through as it is.)
    template <class P>
    static auto checked(P&& r) {
        using B = typename Derived::Backprop;
        using R = backprop_t<Derived>;
        if constexpr (std::is_same_v<std::remove_cvref_t<P>, std::pair<Out, B>> && !std::is_same_v<R, B>)
            return std::pair<Out, R>(std::move(r.first), R{std::move(r.second)});
        else
            return std::forward<P>(r);
    }

    // Sample X and Y are rows of the same examples: a different count means a mix-up that
    // would otherwise go unnoticed (the layers only read the widths).
    void check_sample_rows(sample_ptr_t<InView> X, sample_ptr_t<OutView> Y) const {
        if constexpr (requires { X->shape(0); Y->shape(0); }) {
            if (X && Y && X->shape(0) != Y->shape(0)) detail::throw_sample_rows(*this, X->shape(0), Y->shape(0));
        }
    }
};

// What every tenon model type is: a Node with a typed forward and backward.
template <class M>
concept Model = std::derived_from<std::remove_cvref_t<M>, Node> && requires {
    typename std::remove_cvref_t<M>::In;
    typename std::remove_cvref_t<M>::Out;
    typename std::remove_cvref_t<M>::Backprop;
} && !failed_layer<std::remove_cvref_t<M>>;

// unfused(model): the same model with each layer running by itself, not through the model's
// plan: the reference the plan is checked against (the tests), or a way to look at the layers'
// own behaviour. Results equal the plan's up to rounding. It compiles the layers' training
// path for that model, which a model's own calls may not (lowering::plan_only, docs/lowering.md
// "The layers' path"). The view refers to the model: keep the model alive while using it.
template <class M>
class Unfused {
public:
    using In = typename M::In;
    using Out = typename M::Out;
    explicit Unfused(M& model) noexcept : m_(&model) {}
    Out predict(typename M::InView X) const {
        ran_layers();
        Out Y;  // (no sequences: the model's empty output, as its own predict gives)
        if (detail::empty_batch_output(*m_, X, Y)) return Y;
        return m_->predict_inner(X);
    }
    auto begin_update(typename M::InView X) {
        ran_layers();
        return m_->update_inner(X, true);
    }
    auto operator()(typename M::InView X, bool is_train) {
        ran_layers();
        return m_->update_inner(X, is_train);
    }
    M& model() const noexcept { return *m_; }

private:
    void ran_layers() const {  // (the model's uses_plan() says the last call ran its layers)
        if constexpr (detail::runs_plan<M>)
            if (m_->is_initialized()) m_->engine_slot().note_ran(false);
    }
    M* m_;
};
template <class M>
    requires Model<M>
Unfused<M> unfused(M& model) noexcept {
    return Unfused<M>(model);
}

// Helpers for layer code: the width checks every layer makes on its inputs.
namespace detail {
// An input of width 0 is refused (tenon-E260) even where nI is 0 (a layer's dims never are:
// set_dim and initialize refuse it), before the width comparison (tenon-E101).
// The throws are out of line (error.hpp): every layer type calls the same ones.
template <class V>
void check_width(const Node& layer, const V& X, std::size_t nI, const char* what = "input") {
    if (X.shape(1) != nI || nI == 0) [[unlikely]] {
        if (X.shape(1) == 0) throw_zero_width(layer, what, X.shape(0), nI);
        throw_width(layer.name(), what, nI, X.shape(1));
    }
}
template <class V>
void check_same_shape(const Node& layer, const V& dY, std::size_t rows, std::size_t cols) {
    if (dY.shape(0) != rows || dY.shape(1) != cols) [[unlikely]]
        throw_gradient_shape(layer, rows, cols, dY.shape(0), dY.shape(1));
}
}  // namespace detail

}  // namespace tenon
