// failed_model: what a combinator or wrapper gives back when its compile-time check failed.
//
// The check's static_assert is the one error the user must read. A user's program does not
// stop at the line that builds the model: it initialises it, trains it and predicts with it.
// If the failed call returned a half-built model (or nothing usable), each of those lines
// would add errors of its own from deep inside tenon (a false "X is not of the model's input
// type", "no matching function for call to residual(...)", ...). Instead it returns a
// failed_model, which every tenon entry point and every common use accepts silently:
//   - the combinators and wrappers (>>, |, +, chain, add, concatenate, residual, clone, ...)
//     given a failed_model return one, instantiating nothing else;
//   - its members (initialize, predict, begin_update, finish_update, to_bytes, get_param,
//     ...) take any arguments; begin_update gives a pair, so `auto [Y, backprop] = ...` works;
//   - it converts to any type (Floats2d P = model.predict(X), a loss's argument, a Node&),
//     and arithmetic with it gives a failed_model.
// A failed_model exists only in a program that does not compile (it is returned right after
// a failing static_assert), so its conversions are declared and never defined.
#pragma once
#include <cstddef>
#include <type_traits>
#include <utility>

namespace tenon {

class failed_model {
public:
    using In = failed_model;
    using Out = failed_model;
    using Backprop = failed_model;
    // A named model type derived from a failed chain (struct Tagger : decltype(layers()) {
    // Tagger() : Chain(layers()) {} }, docs/diagnostics.md) names its base so.
    using Chain = failed_model;

    // Converts to anything: a value, a view, a Node& (one template: a second one for values
    // would make copy-initialisation ambiguous).
    template <class T>
    operator T&() const noexcept;

    // The lifecycle and a backprop's call; the first argument may also be a braced list
    // (a pair's two arrays, `model.predict({A, B})`), which a template cannot deduce.
    struct braced {
        template <class... T> braced(T&&...) noexcept {}
    };
    template <class... A> failed_model operator()(A&&...) const noexcept { return {}; }
    template <class... A> failed_model operator()(braced, A&&...) const noexcept { return {}; }
    template <class... A> failed_model initialize(A&&...) noexcept { return {}; }
    template <class... A> failed_model initialize(braced, A&&...) noexcept { return {}; }
    template <class... A> failed_model predict(A&&...) const noexcept { return {}; }
    template <class... A> failed_model predict(braced, A&&...) const noexcept { return {}; }
    template <class... A> std::pair<failed_model, failed_model> begin_update(A&&...) noexcept { return {}; }
    template <class... A> std::pair<failed_model, failed_model> begin_update(braced, A&&...) noexcept { return {}; }
    template <class... A> failed_model finish_update(A&&...) noexcept { return {}; }
    template <class... A> failed_model params_only(A&&...) const noexcept { return {}; }

    // Files, parameters, dims, attributes, refs, the tree.
    template <class... A> failed_model to_bytes(A&&...) const noexcept { return {}; }
    template <class... A> failed_model from_bytes(A&&...) noexcept { return {}; }
    template <class... A> failed_model can_from_bytes(A&&...) const noexcept { return {}; }
    template <class... A> failed_model to_disk(A&&...) const noexcept { return {}; }
    template <class... A> failed_model from_disk(A&&...) noexcept { return {}; }
    template <class... A> failed_model get_param(A&&...) const noexcept { return {}; }
    template <class... A> failed_model set_param(A&&...) noexcept { return {}; }
    template <class... A> failed_model has_param(A&&...) const noexcept { return {}; }
    template <class... A> failed_model get_grad(A&&...) const noexcept { return {}; }
    template <class... A> failed_model set_grad(A&&...) noexcept { return {}; }
    template <class... A> failed_model has_grad(A&&...) const noexcept { return {}; }
    template <class... A> failed_model get_dim(A&&...) const noexcept { return {}; }
    template <class... A> failed_model set_dim(A&&...) noexcept { return {}; }
    template <class... A> failed_model has_dim(A&&...) const noexcept { return {}; }
    template <class T = failed_model, class... A> failed_model attr_as(A&&...) const noexcept { return {}; }
    template <class... A> failed_model get_attr(A&&...) const noexcept { return {}; }
    template <class... A> failed_model set_attr(A&&...) noexcept { return {}; }
    template <class... A> failed_model has_attr(A&&...) const noexcept { return {}; }
    template <class... A> failed_model get_ref(A&&...) const noexcept { return {}; }
    template <class... A> failed_model set_ref(A&&...) noexcept { return {}; }
    template <class... A> failed_model has_ref(A&&...) const noexcept { return {}; }
    template <class... A> failed_model name(A&&...) const noexcept { return {}; }
    template <class... A> failed_model id(A&&...) const noexcept { return {}; }
    template <class... A> failed_model describe(A&&...) const noexcept { return {}; }
    template <class... A> failed_model walk(A&&...) const noexcept { return {}; }
    template <class... A> failed_model layers(A&&...) const noexcept { return {}; }
    template <std::size_t I = 0, class... A> failed_model layer(A&&...) const noexcept { return {}; }
    template <class... A> failed_model is_initialized(A&&...) const noexcept { return {}; }
    template <class... A> failed_model uses_plan(A&&...) const noexcept { return {}; }

    // What a result is used as: an array (shape, size, rows, elements), a list (size,
    // indexing, iteration).
    template <class... A> failed_model shape(A&&...) const noexcept { return {}; }
    template <class... A> failed_model size(A&&...) const noexcept { return {}; }
    template <class... A> failed_model data(A&&...) const noexcept { return {}; }
    template <class... A> failed_model row(A&&...) const noexcept { return {}; }
    template <class... A> failed_model view(A&&...) const noexcept { return {}; }
    template <class I> failed_model operator[](I&&) const noexcept { return {}; }
    const failed_model* begin() const noexcept { return this; }
    const failed_model* end() const noexcept { return this; }
};

// A layer type whose own check failed where the user named it (HashEmbed<64, Floats2d>: E052)
// says so (`tenon_failed_layer`): it is then no Model, and counts as a failed model, so that
// the combinators around it add nothing.
template <class T>
concept failed_layer = requires { requires T::tenon_failed_layer; };
// (A user's type derived from a failed chain, struct Head : decltype(layers()), is one too.)
template <class T>
inline constexpr bool is_failed_model =
    std::is_base_of_v<failed_model, std::remove_cvref_t<T>> || failed_layer<std::remove_cvref_t<T>>;
// Any of the arguments: the combinators return a failed_model at once.
// (A table, not a fold: clang refuses fold expressions over more than 256 arguments.)
template <class... Ts>
inline constexpr bool any_failed_model = [] {
    const bool failed[] = {false, is_failed_model<Ts>...};
    for (bool f : failed)
        if (f) return true;
    return false;
}();

// Arithmetic on a failed model's results (Yh - Y, a loss scaled by a number).
#define TENON_FAILED_MODEL_OPERATOR(op)                                                \
    template <class A, class B>                                                        \
        requires(is_failed_model<A> || is_failed_model<B>)                             \
    failed_model operator op(A&&, B&&) noexcept {                                      \
        return {};                                                                     \
    }
TENON_FAILED_MODEL_OPERATOR(-)
TENON_FAILED_MODEL_OPERATOR(*)
TENON_FAILED_MODEL_OPERATOR(/)
TENON_FAILED_MODEL_OPERATOR(-=)
TENON_FAILED_MODEL_OPERATOR(+=)
TENON_FAILED_MODEL_OPERATOR(*=)
TENON_FAILED_MODEL_OPERATOR(/=)
#undef TENON_FAILED_MODEL_OPERATOR
// Comparisons with a failed model's results (an accuracy loop's P(i, t) > P(i, best), a
// shape's check): a bool, nothing more to say.
#define TENON_FAILED_MODEL_COMPARISON(op)                                              \
    template <class A, class B>                                                        \
        requires(is_failed_model<A> || is_failed_model<B>)                             \
    bool operator op(A&&, B&&) noexcept {                                              \
        return false;                                                                  \
    }
TENON_FAILED_MODEL_COMPARISON(==)
TENON_FAILED_MODEL_COMPARISON(!=)
TENON_FAILED_MODEL_COMPARISON(<)
TENON_FAILED_MODEL_COMPARISON(>)
TENON_FAILED_MODEL_COMPARISON(<=)
TENON_FAILED_MODEL_COMPARISON(>=)
#undef TENON_FAILED_MODEL_COMPARISON
// (+, | and >> of models are the combinators' operators: add.hpp, concatenate.hpp, chain.hpp.)

}  // namespace tenon
