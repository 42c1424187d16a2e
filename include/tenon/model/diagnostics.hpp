// Compile-time diagnostics. Every check has an id and a sentence (docs/diagnostics.md).
// Compilers print no computed values in a static_assert message, so each check is a class
// template whose arguments carry the numbers and types of the failure; the compiler shows
// them on the line that names the instantiation, e.g.
//   In instantiation of 'struct tenon::check::chain_widths<tenon::check::layer<3>,
//     tenon::check::expects_width<256>, tenon::check::layer<2>, tenon::check::produces_width<512>>'
//   error: static assertion failed: [tenon-E001] chain(): a layer's input width differs ...
#pragma once
#include "tenon/model/failed_model.hpp"
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "tenon/types/extent.hpp"

namespace tenon {
template <class T, extent_t... Ext>
class Array;
template <class T, extent_t... Ext>
class ArrayView;
class Optimizer;
}  // namespace tenon

namespace tenon::check {

// Named wrappers, so the numbers in a diagnostic say what they are.
template <std::size_t I>
struct layer {};
template <extent_t W>
struct expects_width {};
template <extent_t W>
struct produces_width {};
template <class T>
struct expects_type {};
template <class T>
struct produces_type {};

template <class T>
struct given_type {};
template <extent_t W>
struct given_width {};
template <std::size_t I>
struct argument {};
template <class T>
struct not_a_model {};
template <class M>
struct model {};
struct kind_not_given {};  // with_array(layer) without its <Kind>, for E037
struct nO {};  // which static dim, for E012
struct nI {};
struct nP {};

// How a data type is spelt in a check's arguments: the array aliases by their names
// (check::Floats2d rather than Array<float, -1, -1>), other arrays with
// their extents spelt out (array<float, dyn_extent, extent<4>>), anything else as itself.
struct dyn_extent {};
template <extent_t E>
struct extent {};
template <class T, class... Extents>
struct array {};
template <class T, class... Extents>
struct view {};
struct Floats1d {};
struct Floats2d {};
struct Floats3d {};
struct Floats4d {};
struct Ints1d {};
struct Ints2d {};
struct Keys1d {};
struct Keys2d {};
struct Floats1dView {};
struct Floats2dView {};
struct Floats3dView {};
struct Floats1dCView {};
struct Floats2dCView {};
struct Floats3dCView {};
struct Ints1dCView {};
struct Ints2dCView {};

template <extent_t E>
using extent_name = std::conditional_t<E == dyn, dyn_extent, extent<E>>;
template <class T>
struct name_of {
    using type = T;
};
template <class T, extent_t... E>
struct name_of<tenon::Array<T, E...>> {
    using type = array<T, extent_name<E>...>;
};
template <class T, extent_t... E>
struct name_of<tenon::ArrayView<T, E...>> {
    using type = view<T, extent_name<E>...>;
};
// clang-format off
template <> struct name_of<tenon::Array<float, dyn>> { using type = Floats1d; };
template <> struct name_of<tenon::Array<float, dyn, dyn>> { using type = Floats2d; };
template <> struct name_of<tenon::Array<float, dyn, dyn, dyn>> { using type = Floats3d; };
template <> struct name_of<tenon::Array<float, dyn, dyn, dyn, dyn>> { using type = Floats4d; };
template <> struct name_of<tenon::Array<std::int32_t, dyn>> { using type = Ints1d; };
template <> struct name_of<tenon::Array<std::int32_t, dyn, dyn>> { using type = Ints2d; };
template <> struct name_of<tenon::Array<std::uint64_t, dyn>> { using type = Keys1d; };
template <> struct name_of<tenon::Array<std::uint64_t, dyn, dyn>> { using type = Keys2d; };
template <> struct name_of<tenon::ArrayView<float, dyn>> { using type = Floats1dView; };
template <> struct name_of<tenon::ArrayView<float, dyn, dyn>> { using type = Floats2dView; };
template <> struct name_of<tenon::ArrayView<float, dyn, dyn, dyn>> { using type = Floats3dView; };
template <> struct name_of<tenon::ArrayView<const float, dyn>> { using type = Floats1dCView; };
template <> struct name_of<tenon::ArrayView<const float, dyn, dyn>> { using type = Floats2dCView; };
template <> struct name_of<tenon::ArrayView<const float, dyn, dyn, dyn>> { using type = Floats3dCView; };
template <> struct name_of<tenon::ArrayView<const std::int32_t, dyn>> { using type = Ints1dCView; };
template <> struct name_of<tenon::ArrayView<const std::int32_t, dyn, dyn>> { using type = Ints2dCView; };
// clang-format on
// A std::vector of arrays where a List is expected (E008, E009, E010), shortly.
template <class T>
struct std_vector {};
template <class T, class A>
struct name_of<std::vector<T, A>> {
    using type = std_vector<typename name_of<T>::type>;
};
template <class T>
using name_t = typename name_of<std::remove_cvref_t<T>>::type;

// The result when all is well: instantiating a check with `ok` arguments asserts nothing.
struct ok {};

template <class... Failure>
inline constexpr bool always_false = false;

// A factory (chain, residual, clone, a transfer, ...) or a wrong-call overload says a failed
// check at the user's call through report<Failure>() and returns a failed model. The check
// fails inside this function's body (constexpr: instantiated at once, with the whole chain of
// calls), not in the caller's, so the caller's deduced return type stays well-formed. Asserted
// in the factory's own body, the error makes clang++ drop the call (a deduction failure), and
// every later call of it with the same types becomes a second error ("no matching function",
// "invalid operands", a base class of decltype(...) gone).
template <class Failure>
constexpr void report() {
    static_assert(sizeof(Failure) > 0);
}

// E001: two static widths meet in a chain and differ.
template <class LayerAt, class Expects, class ProducerAt, class Produces>
struct chain_widths {
    static_assert(always_false<LayerAt>,
                  "[tenon-E001] chain(): a layer's input width differs from the output width of the layer "
                  "before it (layer<I> expects_width<W> but layer<J> produces_width<V>: see the instantiation line)");
};
template <>
struct chain_widths<ok, ok, ok, ok> {};
// E001 at a Maxout<nO, nI> whose nI is small, where Maxout<64, 3> was likely meant as 3 pieces.
template <class LayerAt, class Expects, class ProducerAt, class Produces>
struct chain_widths_maxout {
    static_assert(always_false<LayerAt>,
                  "[tenon-E001] chain(): a layer's input width differs from the output width of the layer "
                  "before it (layer<I> expects_width<W> but layer<J> produces_width<V>: see the instantiation line). "
                  "The layer is Maxout<nO, nI, nP>: its second argument is the input width and the pieces are the "
                  "third (Maxout<64, dyn, 3>, or Maxout<64>({.nP = 3}))");
};

// E002: a layer's input data type is not the output type of the layer before it.
template <class LayerAt, class Expects, class ProducerAt, class Produces>
struct chain_types {
    static_assert(always_false<LayerAt>,
                  "[tenon-E002] chain(): a layer's input data type is not the output type of the layer "
                  "before it (layer<I> expects_type<T> but layer<J> produces_type<U>: see the instantiation line)");
};
template <>
struct chain_types<ok, ok, ok, ok> {};

// E003: clone(layer, n) of a layer whose output data type is not its input type.
template <class Layer, class Expects, class Produces>
struct clone_types {
    static_assert(always_false<Layer>,
                  "[tenon-E003] clone(layer, n): the layer's output type must be its input type to chain copies of "
                  "it (expects_type<T> but produces_type<U>: see the instantiation line)");
};

// E004 (chain() with no layer) is a one-line check in combinators/chain_checks.hpp.

// The value a wrong call's overload "returns" after its check has failed: declared only,
// as such a body never compiles.
template <class T>
T never() noexcept;
// A wrong call's return type that says its check: `-> typename check::failing<Wrong, Check,
// R>::type`, with Wrong the overload's own condition. Its error is then the check's alone,
// made while the call's type is worked out, and the call still has a type (R) whatever the
// compiler does next: clang, given a function whose body failed, gives the call the type of
// another overload (tenon-E011 after E019). (Wrong, because clang works out the return type of
// an overload before it checks the overload's requires-clause.)
// (failing_as: another type than failed_model, a loss's double; two templates rather than a
// default argument, which g++ would print in the instantiation line.)
template <bool Wrong, class Check, class R>
struct failing_as {
    using type = R;
};
template <class Check, class R>
struct failing_as<true, Check, R> {
    static_assert(sizeof(Check) > 0);
    using type = R;
};
template <bool Wrong, class Check>
struct failing {
    using type = failed_model;
};
template <class Check>
struct failing<true, Check> {
    static_assert(sizeof(Check) > 0);
    using type = failed_model;
};

// The checks below fail whenever they are instantiated: the overload or branch that names
// one is taken only for a wrong call. `static_assert(sizeof(check::...<...>) > 0)` shows the
// check's arguments on the line before its sentence.

// E005: a >> b where one side is a tenon model and the other is not.
template <class Operand>
struct chain_operand {
    static_assert(always_false<Operand>,
                  "[tenon-E005] a >> b: both operands must be tenon models (layers, combinators or named model "
                  "types); one is not_a_model<T>: see the instantiation line");
};

// E006: chain(...) with an argument that is not a tenon model.
template <class Argument, class Operand>
struct chain_argument {
    static_assert(always_false<Argument>,
                  "[tenon-E006] chain(...): every argument must be a tenon model (argument<I> is not_a_model<T>: "
                  "see the instantiation line)");
};

// E007: clone(n, layer): the first argument is not a tenon model but the second is.
template <class Operand>
struct clone_argument {
    static_assert(always_false<Operand>,
                  "[tenon-E007] clone(layer, n): the layer comes first, then the number of copies (as Thinc's "
                  "clone(orig, n)); the first argument is not_a_model<T>: see the instantiation line");
};

// E008: model.predict(X) with X of another data type than the model's input.
template <class Expects, class Given>
struct predict_input {
    static_assert(always_false<Expects>,
                  "[tenon-E008] model.predict(X): X is not of the model's input type (expects_type<T> but "
                  "given_type<U>: see the instantiation line; a std::vector of arrays is List<T>(std::move(v)))");
};

// E017: initialize / predict / begin_update / model(X, is_train) with an array whose static
// width (the extent of its last dimension in its type) is not the model's static input width.
template <class Expects, class Given>
struct input_static_width {
    static_assert(always_false<Expects>,
                  "[tenon-E017] model.predict(X) / begin_update(X) / initialize(X): X's type fixes its width, and it is not the "
                  "model's input width (expects_width<W> but given_width<V>: see the instantiation line)");
};

// E009: model.begin_update(X) or model(X, is_train) with X of another data type.
template <class Expects, class Given>
struct update_input {
    static_assert(always_false<Expects>,
                  "[tenon-E009] model.begin_update(X) / model(X, is_train): X is not of the model's input type "
                  "(expects_type<T> but given_type<U>: see the instantiation line; a std::vector of arrays is "
                  "List<T>(std::move(v)))");
};

// E008, E009: predict / begin_update / model(...) given several inputs (siamese.predict(A, B)).
template <class... Given>
struct given_arguments {};
template <class Expects, class Given>
struct predict_arguments {
    static_assert(always_false<Expects>,
                  "[tenon-E008] model.predict(X): a model takes one input X, here several were given (expects_type<T> "
                  "but given_arguments<U...>: see the instantiation line); a pair model (siamese) takes "
                  "std::pair{A, B}, a batch of arrays List<T>");
};
template <class Expects, class Given>
struct update_arguments {
    static_assert(always_false<Expects>,
                  "[tenon-E009] model.begin_update(X) / model(X, is_train): a model takes one input X, here several "
                  "were given (expects_type<T> but given_arguments<U...>: see the instantiation line); a pair model "
                  "(siamese) takes std::pair{A, B}, a batch of arrays List<T>");
};

// E010: model.initialize(X[, Y]) with a sample of another data type than the model's input
// (X) or output (Y).
template <class... ExpectsGiven>
struct initialize_sample {
    static_assert(always_false<ExpectsGiven...>,
                  "[tenon-E010] model.initialize(X, Y): X must be of the model's input type and Y of its output "
                  "type (expects_type<T> but given_type<U>: see the instantiation line; a std::vector of arrays "
                  "is List<T>(std::move(v)))");
};

// E011: backprop(dY) with dY of another data type than the model's output.
template <class Expects, class Given>
struct backprop_input {
    static_assert(always_false<Expects>,
                  "[tenon-E011] backprop(dY): dY must be of the model's output type, the gradient of Y "
                  "(expects_type<T> but given_type<U>: see the instantiation line)");
};

// E057: backprop(dY) or initialize(X, Y) with dY or Y whose type fixes another width than the
// model's output width.
template <class Expects, class Given>
struct gradient_static_width {
    static_assert(always_false<Expects>,
                  "[tenon-E057] backprop(dY) / initialize(X, Y): dY's or Y's type fixes its width, and it is not "
                  "the model's output width (expects_width<W> but given_width<V>: see the instantiation line)");
};

// E012: a static width of 0, or below 0 and not dyn (Relu<0>, Linear<0, 5>, Maxout<10, 5, 0>,
// LayerNorm<0>, Relu<-5>).
template <class Layer, class Dim>
struct width_below_1 {
    static_assert(always_false<Layer>,
                  "[tenon-E012] a layer's static width is 0 or negative: give a width >= 1, or leave it dyn (the "
                  "default) for initialize() to infer (width_below_1<Layer, Dim>: see the instantiation line)");
};
template <extent_t W, class Layer, class Dim>
using width_check = std::conditional_t<!valid_width(W), width_below_1<Layer, Dim>, ok>;

// E013: an explicit conversion between arrays or views whose static extents differ.
template <class To, class From>
struct array_extents {
    static_assert(always_false<To>,
                  "[tenon-E013] array conversion: a static extent of the target differs from the source's "
                  "(array_extents<Target, Source>: see the instantiation line); make the extent dyn to check it at "
                  "run time");
};

// E014: minibatch/multibatch with an argument that is not an array.
template <class Argument, class Given>
struct batch_argument {
    static_assert(always_false<Argument>,
                  "[tenon-E014] minibatch/multibatch(size, arrays..., [shuffle]): the batch size comes first, then tenon "
                  "arrays (argument<I> is given_type<T>: see the instantiation line)");
};

// E015: model.finish_update(x) where x is not an Optimizer variable.
template <class Given>
struct optimizer_argument {
    static_assert(always_false<Given>,
                  "[tenon-E015] model.finish_update(optimizer): pass an Optimizer variable that is not const "
                  "(Optimizer opt = Adam(0.001);: each step changes its state), not a temporary, which would "
                  "forget its state every step, nor a learning rate (given_type<T>: see the instantiation line)");
};

// E016: clone(layer, n) of a layer whose static output width is not its input width.
template <class Layer, class Expects, class Produces>
struct clone_widths {
    static_assert(always_false<Layer>,
                  "[tenon-E016] clone(layer, n): the layer's output width differs from its input width, so its "
                  "copies cannot be chained (expects_width<W> but produces_width<V>: see the instantiation line)");
};
template <>
struct clone_widths<ok, ok, ok> {};
// The same at a Maxout<nO, nI> with a small nI and no nP (Maxout<64, 3>: 3 meant as pieces).
template <class Layer, class Expects, class Produces>
struct clone_widths_maxout {
    static_assert(always_false<Layer>,
                  "[tenon-E016] clone(layer, n): the layer's output width differs from its input width, so its "
                  "copies cannot be chained (expects_width<W> but produces_width<V>: see the instantiation line). "
                  "The layer is Maxout<nO, nI, nP>: its second argument is the input width and the pieces are the "
                  "third (Maxout<64, dyn, 3>, or Maxout<64>({.nP = 3}))");
};

// E018: AnyModel<In, Out> made from a model of another signature (its input type is not In or
// its output type is not Out).
template <class In, class Out>
struct signature {};
template <class Expects, class Given>
struct any_model_signature {
    static_assert(always_false<Expects>,
                  "[tenon-E018] AnyModel<In, Out>(model): the model's input type must be In and its output type "
                  "Out (expects_type<signature<In, Out>> but given_type<signature<U, V>>: see the instantiation "
                  "line)");
};

// E019: a loss called with guesses or truths of other types than it takes (a List of documents
// given to CategoricalCrossentropy, one Floats2d to SequenceCategoricalCrossentropy, ...).
template <class Loss, class Guesses, class Truths>
struct loss_arguments {
    static_assert(always_false<Loss>,
                  "[tenon-E019] loss(guesses, truths): CategoricalCrossentropy takes one Floats2d of guesses and "
                  "its truths (an Ints1d of labels, a Floats2d of rows or the classes' names), L2Distance one "
                  "Floats2d of guesses and a Floats2d of truths; a sequence model's List of documents takes "
                  "SequenceCategoricalCrossentropy (a List<Floats2d> and one Ints1d or Floats2d per document) "
                  "(loss_arguments<Loss, given_type<G>, given_type<T>>: see the instantiation line)");
};

// E055: model.from_bytes(x) / can_from_bytes(x) with x that is not bytes (a file's path).
template <class Given>
struct bytes_argument {
    static_assert(always_false<Given>,
                  "[tenon-E055] model.from_bytes(bytes): takes the bytes to_bytes() gave (a "
                  "std::vector<std::uint8_t> or std::span<const std::uint8_t>); a file's path is "
                  "model.from_disk(path) (given_type<T>: see the instantiation line)");
};

// E056: a layer made as in Thinc, with its widths as the constructor's first arguments
// (Relu(64, 32)), where tenon takes them as template arguments or options.
// (A number given where a layer's constructor takes its options; one constructor, not a
// template, so that it adds little to a compiler's list of candidates for other mistakes.)
struct thinc_width {
    template <class T>
        requires std::is_arithmetic_v<T>
    constexpr thinc_width(T) noexcept {}  // NOLINT: Relu(64, 32)
};
template <class Layer>
struct widths_as_arguments {
    static_assert(always_false<Layer>,
                  "[tenon-E056] Layer(nO, nI): Thinc's positional widths; in tenon the widths are the layer "
                  "type's template arguments (Relu<64, 32>(), or Relu<64>() and the chain gives nI) or fields of "
                  "its options (Relu<>({.nO = 64})), and a constructor's first argument is the options "
                  "(LSTM<>({}, 64, 32)); a number alone is no other option either: a dropout rate is "
                  "Relu<64>({.dropout = 0.2}), Maxout's pieces Maxout<32, 16, 3>() or Maxout<32>({.nP = 3}) "
                  "(widths_as_arguments<Layer>: see the instantiation line)");
};

}  // namespace tenon::check
