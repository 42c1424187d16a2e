// Operations on template parameter packs that neither recurse nor fold, so they cost the same
// for 500 elements as for 5: a fold expression over a pack of N is an expression nested N
// deep, and clang refuses more than 256 (-fbracket-depth); a recursion over N instantiates
// N templates and counts against -ftemplate-depth.
//   type_at_t<I, Ts...>      the I-th type
//   all_true<B...>, any_true<B...>
#pragma once
#include <cstddef>
#include <type_traits>
#include <utility>

namespace tenon {

namespace detail {
template <std::size_t I, class T>
struct indexed_type {};
template <class Seq, class... Ts>
struct indexed_types;
template <std::size_t... I, class... Ts>
struct indexed_types<std::index_sequence<I...>, Ts...> : indexed_type<I, Ts>... {};
template <std::size_t I, class T>
std::type_identity<T> type_at_lookup(const indexed_type<I, T>*);

template <bool...>
struct bools {};
}  // namespace detail

// The I-th type of a pack: clang's builtin, or one overload resolution among indexed bases.
#if defined(__has_builtin)
#if __has_builtin(__type_pack_element)
#define TENON_HAVE_TYPE_PACK_ELEMENT 1
#endif
#endif
#ifdef TENON_HAVE_TYPE_PACK_ELEMENT
template <std::size_t I, class... Ts>
using type_at_t = __type_pack_element<I, Ts...>;
#else
template <std::size_t I, class... Ts>
using type_at_t = typename decltype(detail::type_at_lookup<I>(
    static_cast<const detail::indexed_types<std::index_sequence_for<Ts...>, Ts...>*>(nullptr)))::type;
#endif

// Whether every (some) B is true; all_true<> is true, any_true<> false.
template <bool... B>
inline constexpr bool all_true = std::is_same_v<detail::bools<true, B...>, detail::bools<B..., true>>;
template <bool... B>
inline constexpr bool any_true = !std::is_same_v<detail::bools<false, B...>, detail::bools<B..., false>>;

}  // namespace tenon
