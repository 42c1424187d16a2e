// AnyModel<In, Out>: a model whose type is chosen at run time. It holds any tenon model that
// maps In to Out (a chain, a layer, a combinator, another AnyModel's model) on the heap behind
// a small virtual interface, so that one variable, member, function result or chain slot can
// hold models of different types:
//
//   AnyModel<Floats2d, Floats2d> head = wide ? AnyModel<Floats2d, Floats2d>(Relu<256>() >> Softmax<10>())
//                                            : AnyModel<Floats2d, Floats2d>(Softmax<10>());
//   auto model = Relu<64>() >> head;          // a chain with an AnyModel in it
//
// It is a node like a wrapper (with_debug, residual): its one child is the held model, so
// walk(), describe(), the dims, parameters and attributes, finish_update, the files, copy() and
// the tree edits see the held model's tree under an "any(...)" node. Its widths are dyn in the
// type (they are the held model's, read at run time: Node::dim_owner), so the widths of the
// models around it are checked at initialize. Another signature is a compile error (E018).
//
// The held model runs as if the user had called it: its own entry point at depth 1, so a
// chain in an AnyModel runs its lowered plan (lower/engine.hpp) and gives the same numbers as
// the same chain called directly. What that costs: one virtual call per predict, forward and
// init, and one function-pointer call per backprop; the held model's Backprop is kept in a
// block of tenon's per-thread block cache (EngineBackprop's box), so a training step makes no
// heap allocation after warm-up.
#pragma once
#include <concepts>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <typeinfo>
#include <utility>

#include "tenon/lower/engine.hpp"
#include "tenon/model/diagnostics.hpp"
#include "tenon/model/layer.hpp"
#include "tenon/model/widths.hpp"

namespace tenon {

template <class In, class Out>
class AnyModel;

namespace detail {
template <class T>
inline constexpr bool is_any_model = false;
template <class In, class Out>
inline constexpr bool is_any_model<AnyModel<In, Out>> = true;

// tenon-E118: an AnyModel whose model was moved into another one, used; or a copy of one that
// holds a model type that cannot be copied; or a default-constructed backprop called.
[[noreturn]] inline void throw_any_model_empty(const std::string& name, const char* what) {
    throw Error((name.empty() ? std::string("AnyModel") : name) + ": " + what, "tenon-E118");  // (moved from: no name)
}

// Runs the held model as the model called: this thread's entry depth is 0 while it runs (its
// own entry point then counts 1, as when a user calls it directly), so that a chain in it runs
// its plan and its errors are named from it, then again from each model around it (the path
// is rebuilt from the node that threw at every level: src/model_api.cpp). The input's NaN/inf
// check is off inside: the AnyModel's own entry point (or the model around it) made it.
class AsModelCalled {
public:
    AsModelCalled() noexcept : saved_(entry_depth) { entry_depth = 0; }
    ~AsModelCalled() { entry_depth = saved_; }
    AsModelCalled(const AsModelCalled&) = delete;
    AsModelCalled& operator=(const AsModelCalled&) = delete;

private:
    int saved_;
    FiniteCheckOff no_check_;
};

// The held model's Backprop in the box of an EngineBackprop (its storage comes from the block
// cache; copies share it).
template <class B, class OutView>
struct ErasedBackprop {
    B bp{};
    auto operator()(OutView dY) const { return bp(dY); }
    void params_only(OutView dY) const {
        if constexpr (requires { bp.params_only(dY); }) bp.params_only(dY);
        else (void)bp(dY);
    }
};

// The virtual interface over a held model of any type with this signature.
template <class In, class Out>
class AnyModelHolder {
public:
    using InView = input_view_t<In>;
    using OutView = input_view_t<Out>;
    using HeldBackprop = lowering::EngineBackprop<In, OutView>;

    virtual ~AnyModelHolder() = default;
    Node& node() noexcept { return *node_; }
    const Node& node() const noexcept { return *node_; }

    virtual std::unique_ptr<AnyModelHolder> clone() const = 0;
    virtual void init(sample_ptr_t<InView> X, sample_ptr_t<OutView> Y) = 0;
    virtual Out predict(InView X) const = 0;
    virtual Out forward(InView X, bool is_train, HeldBackprop& bp) = 0;

protected:
    AnyModelHolder() = default;
    AnyModelHolder(const AnyModelHolder&) = delete;
    AnyModelHolder& operator=(const AnyModelHolder&) = delete;
    Node* node_ = nullptr;  // the held model (the holder stays where it is: the pointer too)
};

template <class M>
class AnyModelOf final : public AnyModelHolder<typename M::In, typename M::Out> {
    using Base = AnyModelHolder<typename M::In, typename M::Out>;

public:
    using typename Base::HeldBackprop;
    using typename Base::InView;
    using typename Base::OutView;
    using Out = typename M::Out;

    template <class U>
    explicit AnyModelOf(U&& model) : model_(std::forward<U>(model)) {
        this->node_ = &model_;
    }
    M& model() noexcept { return model_; }

    std::unique_ptr<Base> clone() const override {
        if constexpr (std::is_copy_constructible_v<M>)
            return std::make_unique<AnyModelOf>(model_);
        else
            throw_any_model_empty(model_.name(), "this AnyModel holds a model type that cannot be copied");
    }
    void init(sample_ptr_t<InView> X, sample_ptr_t<OutView> Y) override {
        AsModelCalled called;
        model_.initialize_from(X, Y);
    }
    Out predict(InView X) const override {
        AsModelCalled called;
        return model_.predict(X);
    }
    Out forward(InView X, bool is_train, HeldBackprop& bp) override {
        AsModelCalled called;
        auto [Y, b] = model_(X, is_train);
        using B = std::remove_cvref_t<decltype(b)>;
        bp.template emplace<ErasedBackprop<B, OutView>>().bp = std::move(b);
        return std::move(Y);
    }

private:
    M model_;
};
}  // namespace detail

template <class InT, class OutT>
class AnyModel : public Layer<AnyModel<InT, OutT>, InT, OutT> {
    using Base = Layer<AnyModel<InT, OutT>, InT, OutT>;
    using Holder = detail::AnyModelHolder<InT, OutT>;
    friend Base;

    template <class M>
    static constexpr bool same_signature =
        std::is_same_v<typename M::In, InT> && std::is_same_v<typename M::Out, OutT>;
    // A model to hold (not an AnyModel of this type, which is copied or moved instead).
    template <class M>
    static constexpr bool other_model = Model<M> && !std::derived_from<std::remove_cvref_t<M>, AnyModel>;

public:
    using typename Base::In;
    using typename Base::InView;
    using typename Base::Out;
    using typename Base::OutView;
    // The widths are the held model's, known at run time only.
    static constexpr extent_t static_nI = dyn;
    static constexpr extent_t static_nO = dyn;

    // From any model that maps In to Out, moved or copied in (implicit, as std::function's
    // constructor: `AnyModel<Floats2d, Floats2d> m = Relu<64>() >> Softmax<10>();`).
    template <class M>
        requires(other_model<M> && same_signature<std::remove_cvref_t<M>>)
    AnyModel(M&& model)  // NOLINT(google-explicit-constructor)
        : Base("any(" + model.name() + ")", {{"nO", dyn}, {"nI", dyn}}, {}),
          held_(std::make_unique<detail::AnyModelOf<std::remove_cvref_t<M>>>(std::forward<M>(model))) {
        if (held_->node().is_initialized()) this->mark_initialized();
    }
    // A model of another signature: E018.
    template <class M>
        requires(other_model<M> && !same_signature<std::remove_cvref_t<M>>)
    AnyModel(M&&)  // NOLINT(google-explicit-constructor)
        : Base("any", {{"nO", dyn}, {"nI", dyn}}, {}) {
        using D = std::remove_cvref_t<M>;
        static_assert(
            sizeof(check::any_model_signature<
                   check::expects_type<check::signature<check::name_t<InT>, check::name_t<OutT>>>,
                   check::given_type<check::signature<check::name_t<typename D::In>, check::name_t<typename D::Out>>>>) > 0);
    }

    // A copy holds a copy of the model (new nodes, new ids: Node); a move takes it over (the
    // moved-from AnyModel holds none: its entry points say so, tenon-E118).
    AnyModel(const AnyModel& other) : Base(other), held_(other.held_ ? other.held_->clone() : nullptr) {}
    AnyModel(AnyModel&&) noexcept = default;
    AnyModel& operator=(const AnyModel& other) {
        if (this != &other) {
            auto held = other.held_ ? other.held_->clone() : nullptr;  // may throw: nothing changed yet
            Base::operator=(other);
            held_ = std::move(held);
        }
        return *this;
    }
    AnyModel& operator=(AnyModel&&) noexcept = default;
    ~AnyModel() override = default;

    // The held model as a node (its own tree, files and names: model().to_bytes() is the file
    // the same model writes when it is not held); tenon-E118 when none is held.
    Node& model() { return require_held().node(); }
    const Node& model() const { return require_held().node(); }
    // The held model as its type, or nullptr when it is another type (std::function::target).
    template <class M>
    M* target() noexcept {
        auto* of = dynamic_cast<detail::AnyModelOf<M>*>(held_.get());
        return of ? &of->model() : nullptr;
    }
    template <class M>
    const M* target() const noexcept {
        return const_cast<AnyModel*>(this)->template target<M>();
    }

    void for_each_child(const std::function<void(Node&)>& f) override {
        if (held_) f(held_->node());
    }

    struct Backprop {
        typename Holder::HeldBackprop held;  // the held model's Backprop (empty: default-constructed)
        In operator()(OutView dY) const {
            if (!held) detail::throw_any_model_empty("AnyModel", "backprop: this backprop holds no call");
            return held(dY);
        }
        // The parameters' gradients alone (the held model's params_only where it has one).
        void params_only(OutView dY) const {
            if (!held) detail::throw_any_model_empty("AnyModel", "backprop: this backprop holds no call");
            held.params_only(dY);
        }
    };

private:
    // nO and nI are the held model's wherever it knows them; a width set on this node (by the
    // model around it, or set_dim) stands until initialize hands it over (Node::follow_dim).
    Node* dim_owner(std::string_view) noexcept override { return held_ ? &held_->node() : nullptr; }
    void require_contents() const override { (void)require_held(); }
    bool contents_initialized() const noexcept override { return held_ && held_->node().is_initialized(); }

    Holder& require_held() const {
        if (!held_)
            detail::throw_any_model_empty(this->name(), "this AnyModel holds no model: it was moved into another "
                                                        "(by std::move); assign a model to it to use it again");
        return *held_;
    }

    void init_impl(sample_ptr_t<InView> X, sample_ptr_t<OutView> Y) {
        Holder& h = require_held();
        Node& m = h.node();
        // Widths given to this node reach the held model as a sample's would; one that
        // contradicts what the held model knows is the run-time form of a width mismatch.
        for (const char* d : {"nI", "nO"}) {
            const std::size_t mine = widths::known(*this, d);
            if (mine == dyn) continue;
            if (m.has_dim(d) && m.get_dim(d) != mine)
                throw ShapeError(this->name() + ": the model around it gives width " + std::to_string(mine) + " as " +
                                     d + " but the held model, " + m.name() + ", has " + d + "=" +
                                     std::to_string(m.get_dim(d)),
                                 "tenon-E101");
            widths::offer(m, d, mine);
        }
        h.init(X, Y);
        this->follow_dim("nI");
        this->follow_dim("nO");
        this->mark_initialized();
    }
    Out predict_impl(InView X) const { return std::as_const(require_held()).predict(X); }
    std::pair<Out, Backprop> forward_impl(InView X, bool is_train) {
        Backprop bp;
        Out Y = require_held().forward(X, is_train, bp.held);
        return {std::move(Y), std::move(bp)};
    }

    std::unique_ptr<Holder> held_;
};

// AnyModel m(Relu<64>() >> Softmax<10>()): the signature is the model's.
template <class M>
    requires(Model<M> && !detail::is_any_model<std::remove_cvref_t<M>>)
AnyModel(M&&) -> AnyModel<typename std::remove_cvref_t<M>::In, typename std::remove_cvref_t<M>::Out>;

}  // namespace tenon
