// Compile-time diagnostics. Every check has an id and a sentence (docs/diagnostics.md).
// Compilers print no computed values in a static_assert message, so each check is a class
// template whose arguments carry the numbers and types of the failure; the compiler shows
// them on the line that names the instantiation, e.g.
//   In instantiation of 'struct tenon::check::chain_widths<tenon::check::layer<3>,
//     tenon::check::expects_width<256>, tenon::check::layer<2>, tenon::check::produces_width<512>>'
//   error: static assertion failed: [tenon-E001] chain(): a layer's input width differs ...
#pragma once
#include <cstddef>
#include <type_traits>

namespace tenon::check {

// Named wrappers, so the numbers in a diagnostic say what they are.
template <std::size_t I>
struct layer {};
template <std::size_t W>
struct expects_width {};
template <std::size_t W>
struct produces_width {};
template <class T>
struct expects_type {};
template <class T>
struct produces_type {};

// The result when all is well: instantiating a check with `ok` arguments asserts nothing.
struct ok {};

template <class... Failure>
inline constexpr bool always_false = false;

// E001: two static widths meet in a chain and differ.
template <class LayerAt, class Expects, class ProducerAt, class Produces>
struct chain_widths {
    static_assert(always_false<LayerAt>,
                  "[tenon-E001] chain(): a layer's input width differs from the output width of the layer "
                  "before it (layer<I> expects_width<W> but layer<J> produces_width<V>: see the line above)");
};
template <>
struct chain_widths<ok, ok, ok, ok> {};

// E002: a layer's input data type is not the output type of the layer before it.
template <class LayerAt, class Expects, class ProducerAt, class Produces>
struct chain_types {
    static_assert(always_false<LayerAt>,
                  "[tenon-E002] chain(): a layer's input data type is not the output type of the layer "
                  "before it (layer<I> expects_type<T> but layer<J> produces_type<U>: see the line above)");
};
template <>
struct chain_types<ok, ok, ok, ok> {};

}  // namespace tenon::check
