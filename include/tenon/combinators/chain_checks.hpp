// The calls of chain() and >> that chain.hpp's overloads do not take, each answered with its
// diagnostic (docs/diagnostics.md) instead of "no matching function":
//   chain()                      E004  no layer
//   chain(a, x, ...)             E006  an argument that is not a model
//   a >> x, x >> a               E005  an operand that is not a model
// Their constraints exclude every call that chain.hpp's overloads take, so they never compete
// with them, and `stream >> x` keeps its meaning (see has_member_extractor).
#pragma once
#include <cstddef>
#include <tuple>
#include <type_traits>

#include "tenon/combinators/chain.hpp"
#include "tenon/model/diagnostics.hpp"
#include "tenon/model/layer.hpp"

namespace tenon {

namespace check {
// The position of the first argument that is not a model.
template <class... Ms>
inline constexpr std::size_t first_non_model = [] {
    const bool is_model[] = {Model<Ms>...};
    for (std::size_t i = 0; i < sizeof...(Ms); ++i)
        if (!is_model[i]) return i;
    return sizeof...(Ms);
}();
// A left operand with a member operator>> (a std::istream, a cereal input archive) keeps it:
// E005 must not take `stream >> x` away from the stream.
template <class... Ms>
constexpr std::size_t count_models() {
    const bool is_model[] = {false, Model<Ms>...};
    std::size_t n = 0;
    for (bool m : is_model) n += m;
    return n;
}
template <class A>
inline constexpr bool has_member_extractor = requires(std::remove_reference_t<A>& a, int& i) { a.operator>>(i); };
}  // namespace check

// chain() with no layer: E004. (Preferred to chain.hpp's variadic chain(Ms&&...) for an empty
// call: a template without a parameter pack is the more specialised.)
template <int None = 0>
auto chain() {
    static_assert(None != 0, "[tenon-E004] chain(): needs at least one layer");
    return failed_model{};
}

// chain(...) with at least one model and at least one argument that is not: E006.
// (Counted with a table, not a fold: clang limits fold expressions to 256 arguments.)
template <class... Ms>
    requires(check::count_models<Ms...>() > 0 && check::count_models<Ms...>() < sizeof...(Ms) &&
             !any_failed_model<Ms...>)
auto chain(Ms&&...) {
    constexpr std::size_t i = check::first_non_model<Ms...>;
    using NotAModel = std::remove_cvref_t<std::tuple_element_t<i, std::tuple<Ms...>>>;
    check::report<check::chain_argument<check::argument<i>, check::not_a_model<check::name_t<NotAModel>>>>();
    return failed_model{};
}

// a >> x or x >> a where x is not a model: E005. Taken only when exactly one side is a tenon
// model, and never from a left operand that has its own operator>> (streams, archives).
template <class A, class B>
    requires(Model<A> != Model<B> && !check::has_member_extractor<A> && !any_failed_model<A, B>)
auto operator>>(A&&, B&&) {
    using NotAModel = std::conditional_t<Model<A>, B, A>;
    check::report<check::chain_operand<check::not_a_model<check::name_t<NotAModel>>>>();
    return failed_model{};
}

// A failed model (a check above already said what is wrong) chained to anything: a failed
// model again, with nothing more to say (model/failed_model.hpp).
template <class... Ms>
    requires(any_failed_model<Ms...>)
failed_model chain(Ms&&...) noexcept {
    return {};
}
template <class A, class B>
    requires(any_failed_model<A, B>)
failed_model operator>>(A&&, B&&) noexcept {
    return {};
}

}  // namespace tenon
