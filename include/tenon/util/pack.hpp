// Operations on template parameter packs that neither recurse nor fold on clang, so they cost
// the same for 500 elements as for 5: a fold expression over a pack of N is an expression
// nested N deep, and clang refuses more than 256 (-fbracket-depth); a recursion over N
// instantiates N templates and counts against -ftemplate-depth. (GCC has no such limit:
// last_t folds there, where it is cheaper than GCC's indexing.)
//   type_at_t<I, Ts...>      the I-th type
//   last_t<Ts...>            the last type
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

// The last type of a pack: clang's builtin, or a comma fold over type_identity (a chain's
// output type, the layer `chain >> layer` appends). On GCC (no __type_pack_element before
// 14), type_at_t makes a class of N bases and an overload resolution among them: at each step
// of `l0 >> l1 >> ...` over all the layers before it, 78 MB of a 500-layer expression's 2 GB.
#ifdef TENON_HAVE_TYPE_PACK_ELEMENT
template <class... Ts>
using last_t = __type_pack_element<sizeof...(Ts) - 1, Ts...>;
#else
template <class... Ts>
using last_t = typename decltype((std::type_identity<Ts>{}, ...))::type;
#endif

// Whether every (some) B is true; all_true<> is true, any_true<> false.
template <bool... B>
inline constexpr bool all_true = std::is_same_v<detail::bools<true, B...>, detail::bools<B..., true>>;
template <bool... B>
inline constexpr bool any_true = !std::is_same_v<detail::bools<false, B...>, detail::bools<B..., false>>;

}  // namespace tenon
