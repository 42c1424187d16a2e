// DynChain<In, Out>: a chain whose children and their number are chosen at run time (a
// config's chain.v1). chain<A, B, C> spells its children in its type; a config's chain cannot,
// and its children's data types may differ from one another (List[Floats2d] -> Ragged ->
// Floats2d), so a DynChain holds each child as a type-erased step: the model itself (its node
// is in the tree, as a chain's child) behind a virtual interface that takes and returns data as
// std::any. The children's types are checked against each other when the chain is made
// (tenon-E315), the first's input and the last's output against In and Out (E316), so nothing
// is cast blindly later.
//
// What it costs against a typed chain: one virtual call per child per call, a std::any per
// intermediate result, and a std::function per child's backprop; no lowered plan across the
// children (each child runs as if called directly, its own plan where it has one). The loops
// are compiled once, in the library (src/registry.cpp).
#pragma once
#include <any>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

#include "tenon/model/any_model.hpp"
#include "tenon/model/layer.hpp"
#include "tenon/model/widths.hpp"
#include "tenon/types/array.hpp"
#include "tenon/types/sequences.hpp"

namespace tenon {

namespace config::detail {
template <class T>
inline constexpr bool always_false = false;
template <class T>
inline constexpr bool is_optional = false;
template <class T>
inline constexpr bool is_optional<std::optional<T>> = true;
template <class T>
inline constexpr bool is_vector = false;
template <class T, class A>
inline constexpr bool is_vector<std::vector<T, A>> = true;

template <class T>
inline constexpr bool is_list = false;
template <class A>
inline constexpr bool is_list<::tenon::List<A>> = true;

// A data type's name as Thinc writes it in its type hints.
std::string data_type_name(const std::type_info& t);
template <class T>
std::string data_type_name() {
    if constexpr (is_list<T>)
        return "List[" + data_type_name<typename T::value_type>() + "]";
    else
        return data_type_name(typeid(T));
}

// Data in flight between steps: an owned T (what a step returns), or a pointer to the view of
// a T (what the chain's caller gave: sample_ptr_t<input_view_t<T>>).
template <class T>
using ViewPtr = sample_ptr_t<input_view_t<T>>;
[[noreturn]] void throw_step_data(const std::string& step, const std::string& expected);

// The view of a T in a std::any, as a layer's sample pointer (nullptr for an empty any).
template <class T>
class ViewOf {
public:
    ViewOf(const std::any* x, const std::string& who) {
        if (!x || !x->has_value()) return;
        if (const T* owned = std::any_cast<T>(x)) {
            if constexpr (std::is_reference_v<input_view_t<T>>) {
                ptr_ = owned;
            } else {
                view_.emplace(*owned);
                ptr_ = &*view_;
            }
        } else if (const ViewPtr<T>* p = std::any_cast<ViewPtr<T>>(x)) {
            ptr_ = *p;
        } else {
            throw_step_data(who, data_type_name<T>());
        }
    }
    ViewPtr<T> ptr() const noexcept { return ptr_; }

private:
    using Stored = std::conditional_t<std::is_reference_v<input_view_t<T>>, char, std::remove_cvref_t<input_view_t<T>>>;
    std::optional<Stored> view_;
    ViewPtr<T> ptr_ = nullptr;
};

// A backprop over erased data: dY (an owned Out or a view pointer) -> dX (an owned In); with
// `params_only`, the parameters' gradients alone (the model's params_only where it has one)
// and an empty result.
using ErasedBackprop = std::function<std::any(const std::any&, bool params_only)>;

// One model of a run-time chain behind erased data.
class DynStep {
public:
    virtual ~DynStep() = default;
    virtual Node& node() noexcept = 0;
    virtual std::unique_ptr<DynStep> clone() const = 0;
    virtual const std::type_info& in_type() const noexcept = 0;
    virtual const std::type_info& out_type() const noexcept = 0;
    virtual std::string in_name() const = 0;
    virtual std::string out_name() const = 0;
    // Whether the model keeps the width and declares no dims (a transfer, Dropout): a chain's
    // nI and nO are its first and last other step's, as a typed chain's (widths::flow).
    virtual bool keeps_width() const noexcept = 0;
    virtual void init(const std::any* X, const std::any* Y) = 0;
    virtual std::any predict(const std::any& X) const = 0;
    virtual std::any forward(const std::any& X, bool is_train, ErasedBackprop& bp) = 0;
    std::string path;  // where in the config it was built ("model.*.relu1"), for messages
    std::string code;  // the C++ expression that makes the same model (`tenon codegen`)
};

// A step whose types are A -> B: it can give its model up as an AnyModel<A, B>.
template <class A, class B>
class TypedStep : public DynStep {
public:
    const std::type_info& in_type() const noexcept final { return typeid(A); }
    const std::type_info& out_type() const noexcept final { return typeid(B); }
    std::string in_name() const final { return data_type_name<A>(); }
    std::string out_name() const final { return data_type_name<B>(); }
    virtual AnyModel<A, B> take() = 0;
};

template <class M>
class StepOf final : public TypedStep<typename M::In, typename M::Out> {
    using A = typename M::In;
    using B = typename M::Out;

public:
    template <class U>
    explicit StepOf(U&& model) : model_(std::forward<U>(model)) {}

    Node& node() noexcept override { return model_; }
    bool keeps_width() const noexcept override { return widths::width_preserving<M>; }
    std::unique_ptr<DynStep> clone() const override {
        if constexpr (std::is_copy_constructible_v<M>) {
            auto c = std::make_unique<StepOf>(model_);
            c->path = this->path;
            c->code = this->code;
            return c;
        } else {
            ::tenon::detail::throw_any_model_empty(model_.name(), "this model type cannot be copied");
        }
    }
    AnyModel<A, B> take() override { return AnyModel<A, B>(std::move(model_)); }

    // Each runs the model as if the user had called it (as AnyModel does): its own plan, its
    // errors named from it.
    void init(const std::any* X, const std::any* Y) override {
        const ViewOf<A> x(X, model_.name());
        const ViewOf<B> y(Y, model_.name());
        ::tenon::detail::AsModelCalled called;
        model_.initialize_from(x.ptr(), y.ptr());
    }
    std::any predict(const std::any& X) const override {
        const ViewOf<A> x(&X, model_.name());
        ::tenon::detail::AsModelCalled called;
        return std::any(model_.predict(*x.ptr()));
    }
    std::any forward(const std::any& X, bool is_train, ErasedBackprop& bp) override {
        const ViewOf<A> x(&X, model_.name());
        ::tenon::detail::AsModelCalled called;
        auto [Y, b] = model_(*x.ptr(), is_train);
        using Bp = std::remove_cvref_t<decltype(b)>;
        bp = [b = std::make_shared<Bp>(std::move(b)), name = model_.name()](const std::any& dY,
                                                                          bool params_only) -> std::any {
            const ViewOf<B> d(&dY, name);
            if (params_only) {
                if constexpr (requires { b->params_only(*d.ptr()); }) {
                    b->params_only(*d.ptr());
                    return {};
                }
            }
            return std::any(A((*b)(*d.ptr())));
        };
        return std::any(B(std::move(Y)));
    }

private:
    M model_;
};

// The loops of a DynChain over its steps (src/registry.cpp).
using Steps = std::vector<std::unique_ptr<DynStep>>;
void check_steps(const Steps& steps, const std::type_info& in, const std::type_info& out, const std::string& in_name,
                 const std::string& out_name);
void chain_init(Node& chain, Steps& steps, const std::any* X, const std::any* Y);
Node* chain_dim_owner(const Steps& steps, std::string_view name) noexcept;
std::any chain_predict(const Steps& steps, std::any X);
std::any chain_forward(Steps& steps, std::any X, bool is_train, std::vector<ErasedBackprop>& bps);
std::any chain_backprop(const std::vector<ErasedBackprop>& bps, std::any dY, bool params_only = false);
std::string chain_name(const Steps& steps);
Steps clone_steps(const Steps& steps);
}  // namespace config::detail

template <class InT, class OutT>
class DynChain : public Layer<DynChain<InT, OutT>, InT, OutT> {
    using Base = Layer<DynChain<InT, OutT>, InT, OutT>;
    friend Base;

public:
    using typename Base::In;
    using typename Base::InView;
    using typename Base::Out;
    using typename Base::OutView;
    static constexpr extent_t static_nI = dyn;
    static constexpr extent_t static_nO = dyn;

    // The steps, checked: each one's output type is the next one's input type (E315), the
    // first takes In and the last gives Out (E316).
    explicit DynChain(config::detail::Steps steps)
        : Base("chain", {{"nO", dyn}, {"nI", dyn}}, {}), steps_(std::move(steps)) {
        config::detail::check_steps(steps_, typeid(In), typeid(Out), config::detail::data_type_name<In>(),
                                    config::detail::data_type_name<Out>());
        this->name_ = config::detail::chain_name(steps_);
        sync_dims();
        bool all = true;
        for (auto& s : steps_) all = all && s->node().is_initialized();
        if (all) this->mark_initialized();
    }
    DynChain(const DynChain& other) : Base(other), steps_(config::detail::clone_steps(other.steps_)) {}
    DynChain(DynChain&&) noexcept = default;
    DynChain& operator=(const DynChain& other) {
        if (this != &other) {
            auto steps = config::detail::clone_steps(other.steps_);  // may throw: nothing changed yet
            Base::operator=(other);
            steps_ = std::move(steps);
        }
        return *this;
    }
    DynChain& operator=(DynChain&&) noexcept = default;
    ~DynChain() override = default;

    std::size_t size() const noexcept { return steps_.size(); }
    Node& operator[](std::size_t i) noexcept { return steps_[i]->node(); }
    // The config path each child was built from ("model.*.relu1").
    const std::string& path_of(std::size_t i) const noexcept { return steps_[i]->path; }

    void for_each_child(const std::function<void(Node&)>& f) override {
        for (auto& s : steps_) f(s->node());
    }
    Node* dim_owner(std::string_view name) noexcept override { return config::detail::chain_dim_owner(steps_, name); }

    struct Backprop {
        std::vector<config::detail::ErasedBackprop> bps;
        In operator()(OutView dY) const {
            return std::any_cast<In>(config::detail::chain_backprop(bps, std::any(config::detail::ViewPtr<Out>(&dY))));
        }
        // The parameters' gradients alone: the first child's input gradient is not computed
        // (its params_only, where it has one), as a typed chain's.
        void params_only(OutView dY) const {
            config::detail::chain_backprop(bps, std::any(config::detail::ViewPtr<Out>(&dY)), true);
        }
    };

private:
    void init_impl(sample_ptr_t<InView> X, sample_ptr_t<OutView> Y) {
        std::any x, y;
        if (X) x = X;
        if (Y) y = Y;
        config::detail::chain_init(*this, steps_, X ? &x : nullptr, Y ? &y : nullptr);
        sync_dims();
        this->mark_initialized();
    }
    Out predict_impl(InView X) const {
        return std::any_cast<Out>(config::detail::chain_predict(steps_, std::any(config::detail::ViewPtr<In>(&X))));
    }
    std::pair<Out, Backprop> forward_impl(InView X, bool is_train) {
        Backprop bp;
        Out Y = std::any_cast<Out>(
            config::detail::chain_forward(steps_, std::any(config::detail::ViewPtr<In>(&X)), is_train, bp.bps));
        return {std::move(Y), std::move(bp)};
    }

    // The chain's own widths follow their owners again (a typed chain's sync_dims).
    void sync_dims() {
        this->follow_dim("nI");
        this->follow_dim("nO");
    }

    config::detail::Steps steps_;
};

}  // namespace tenon
