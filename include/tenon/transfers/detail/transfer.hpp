// What the transfer layers (list2ragged(), ragged2list(), ...) and the wrappers
// (with_array(), with_padded(), ...) share: traits over the sequence types, Thinc's
// flatten/unflatten (with `pad` rows), layout checks on gradients, the compile-time checks
// of the wrappers (tenon-E030..E039) and a base class for a model that wraps one layer.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <functional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "tenon/lower/lowered_as.hpp"
#include "tenon/model/diagnostics.hpp"
#include "tenon/model/layer.hpp"
#include "tenon/model/widths.hpp"
#include "tenon/types/sequences.hpp"

namespace tenon {

namespace detail::xfer {

// Which kind of data a type is.
template <class T>
inline constexpr bool is_tarray_v = false;
template <class T, extent_t... E>
inline constexpr bool is_tarray_v<Array<T, E...>> = true;
template <class T>
inline constexpr bool is_list_v = false;
template <class A>
inline constexpr bool is_list_v<List<A>> = true;
template <class T>
inline constexpr bool is_ragged_v = false;
template <class A>
inline constexpr bool is_ragged_v<BasicRagged<A>> = true;
template <class T>
inline constexpr bool is_padded_v = false;
template <class A>
inline constexpr bool is_padded_v<BasicPadded<A>> = true;

// The array type of a sequence type (List<A>, BasicRagged<A>: A; BasicPadded<A3>: A3).
template <class T>
struct element_of {
    using type = void;
};
template <class A>
struct element_of<List<A>> {
    using type = A;
};
template <class A>
struct element_of<BasicRagged<A>> {
    using type = A;
};
template <class A>
struct element_of<BasicPadded<A>> {
    using type = A;
};
template <class T>
using element_t = typename element_of<T>::type;

template <class A>
inline constexpr bool is_tarray2d_v = [] {
    if constexpr (is_tarray_v<A>) return A::rank == 2; else return false;
}();
template <class A>
using add_axis_t = typename add_axis<A>::type;
template <class A>
using drop_axis_t = typename drop_axis<A>::type;

// A pointer to what a layer's initialize_from takes for a data type (the view type for
// arrays, the type itself otherwise).
template <class T>
using sample_ptr = const std::remove_reference_t<input_view_t<T>>*;

// "[1, 2, 3]" (the messages of the checks below; these are in src/transfer.cpp).
std::string ints_str(const Ints1d& v);

// Run-time checks of the transfers (ids tenon-E170..E179, docs/diagnostics.md).
// E170: a gradient whose layout (number of sequences, lengths, padding) is not the layout of
// the output it is the gradient of.
[[noreturn]] void throw_layout(const std::string& who, const std::string& what, const std::string& expected,
                               const std::string& found);
void check_lengths(const std::string& who, const Ints1d& expected, const Ints1d& found);
// The rows of each array of a list (its lengths).
template <class A>
Ints1d lengths_of(const List<A>& xs) {
    Ints1d l({xs.size()}, uninitialized);
    for (std::size_t i = 0; i < xs.size(); ++i) l[i] = static_cast<std::int32_t>(xs[i].shape(0));
    return l;
}
template <class A>
void check_list_lengths(const std::string& who, const Ints1d& expected, const List<A>& dY) {
    const Ints1d found = lengths_of(dY);
    if (found.size() != expected.size() || !std::equal(expected.begin(), expected.end(), found.begin()))
        throw_layout(who, "a list of arrays with rows", ints_str(expected), ints_str(found));
}
// (Compiled once, in the library, for the common data types: src/instances.cpp.)
extern template Ints1d lengths_of<Floats2d>(const List<Floats2d>&);
extern template Ints1d lengths_of<Ints2d>(const List<Ints2d>&);
extern template void check_list_lengths<Floats2d>(const std::string&, const Ints1d&, const List<Floats2d>&);
// A Padded layout (steps, size_at_t, lengths, indices), kept by a backprop to check and
// rebuild gradients.
struct PaddedLayout {
    // (Special members out of line, src/transfer.cpp: not compiled in every model's file.)
    PaddedLayout();
    ~PaddedLayout();
    PaddedLayout(const PaddedLayout&);
    PaddedLayout(PaddedLayout&&) noexcept;
    PaddedLayout& operator=(const PaddedLayout&);
    PaddedLayout& operator=(PaddedLayout&&) noexcept;

    std::size_t steps = 0;
    Ints1d size_at_t, lengths, indices;
    template <class P>
    static PaddedLayout of(const P& p) {
        PaddedLayout l;
        l.steps = p.steps();
        l.size_at_t = p.size_at_t();
        l.lengths = p.lengths();
        l.indices = p.indices();
        return l;
    }
    template <class P>
    void check(const std::string& who, const P& dY) const {
        auto same = [](const Ints1d& a, const Ints1d& b) {
            return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin());
        };
        if (dY.steps() != steps || !same(dY.lengths(), lengths) || !same(dY.indices(), indices))
            throw_layout(who, "a Padded with steps " + std::to_string(steps) + ", lengths",
                         ints_str(lengths) + " and indices " + ints_str(indices),
                         "steps " + std::to_string(dY.steps()) + ", lengths " + ints_str(dY.lengths()) +
                             " and indices " + ints_str(dY.indices()));
    }
    // Arrays of a list (original order) placed in this layout: column b holds list item
    // indices[b]. (Thinc's list2padded sorts again; for a layout that list2padded made, the
    // result is the same.)
    template <class A>
    BasicPadded<add_axis_t<A>> pad(const std::string& who, const List<A>& xs,
                                   const typename A::shape_type& fallback) const {
        const std::size_t B = lengths.size();
        check_list_lengths_by_index(who, xs);
        typename add_axis_t<A>::shape_type shape{};
        shape[0] = steps;
        shape[1] = B;
        std::size_t inner = 1;
        for (std::size_t d = 1; d < A::rank; ++d) {
            shape[d + 1] = xs.empty() ? fallback[d] : xs[0].shape(d);
            inner *= shape[d + 1];
        }
        add_axis_t<A> data(shape);
        for (std::size_t b = 0; b < B; ++b) {
            const auto& x = xs[static_cast<std::size_t>(indices[b])];
            for (std::size_t t = 0; t < x.shape(0); ++t)  // (on a device, the backend's copies)
                detail::copy_bytes(data.data() + (t * B + b) * inner, data.memory(), x.data() + t * inner, x.memory(),
                                   inner * sizeof(typename A::value_type));
        }
        return BasicPadded<add_axis_t<A>>(std::move(data), size_at_t, lengths, indices);
    }
    // A list in the original order must have, at position indices[b], lengths[b] rows.
    template <class A>
    void check_list_lengths_by_index(const std::string& who, const List<A>& xs) const {
        Ints1d expected({lengths.size()}, uninitialized);
        for (std::size_t b = 0; b < lengths.size(); ++b) expected[static_cast<std::size_t>(indices[b])] = lengths[b];
        check_list_lengths(who, expected, xs);
    }
};

// E171: the wrapped layer returned another number of rows (or sequences) than it was given,
// so its output cannot be split back into the input's sequences.
[[noreturn]] void throw_rows(const std::string& who, const std::string& what, std::size_t expected,
                             std::size_t found);

// E171 also: a wrapped layer that changed the sequences' lengths where the wrapper needs them.
void check_kept_lengths(const std::string& who, const Ints1d& expected, const Ints1d& found);

// Thinc's ops.flatten(xs, pad): the arrays one after another, with `pad` zero rows before,
// between and after the non-empty ones; an empty list gives `fallback`'s shape with 0 rows.
template <class A>
A flatten(const List<A>& xs, std::size_t pad, const char* who,
          typename A::shape_type fallback = typename A::shape_type{}) {
    typename A::shape_type shape = fallback;
    const std::size_t rows = list_rows(xs, who, &shape);
    std::size_t nonempty = 0;
    for (const auto& x : xs) nonempty += x.size() != 0;
    shape[0] = rows + (pad && nonempty ? (nonempty + 1) * pad : 0);
    A out(shape, uninitialized);
    const std::size_t inner = row_size(shape);
    using T = typename A::value_type;
    T* dst = out.data();
    // (out is where the program makes arrays now: on a device, the backend's fill and copies)
    auto zeros = [&] {
        if (pad && inner && out.memory() == Memory::host) std::memset(static_cast<void*>(dst), 0, pad * inner * sizeof(T));
        else if (pad && inner) detail::zero_bytes_device(dst, pad * inner * sizeof(T));
        dst += pad * inner;
    };
    for (const auto& x : xs) {
        if (x.size() == 0) continue;
        zeros();
        detail::copy_bytes(dst, out.memory(), x.data(), x.memory(), x.size() * sizeof(T));
        dst += x.size();
    }
    if (nonempty) zeros();
    return out;
}
extern template Floats2d flatten<Floats2d>(const List<Floats2d>&, std::size_t, const char*, Floats2d::shape_type);
extern template Ints2d flatten<Ints2d>(const List<Ints2d>&, std::size_t, const char*, Ints2d::shape_type);
// The total rows that flatten() gives for these lengths and pad.
inline std::size_t flat_rows(const Ints1d& lengths, std::size_t pad) {
    std::size_t rows = 0, nonempty = 0;
    for (auto l : lengths) {
        rows += static_cast<std::size_t>(l);
        nonempty += l > 0;
    }
    return rows + (pad && nonempty ? (nonempty + 1) * pad : 0);
}
// Thinc's ops.unflatten(X, lengths, pad): the inverse of flatten (the pad rows dropped).
// The caller checks X's rows (flat_rows).
template <class A, class V>
List<A> unflatten(const V& X, const Ints1d& lengths, std::size_t pad) {
    const std::size_t inner = row_size(X.shape());
    List<A> out;
    out.reserve(lengths.size());
    std::size_t row = 0;
    for (std::size_t i = 0; i < lengths.size(); ++i) {
        const auto n = static_cast<std::size_t>(lengths[i]);
        if (n) row += pad;
        typename A::shape_type shape = X.shape();
        shape[0] = n;
        A x(shape, uninitialized);
        if (n != 0 && inner != 0)
            detail::copy_bytes(x.data(), x.memory(), X.data() + row * inner, detail::memory_of(X.data()),
                               n * inner * sizeof(typename A::value_type));
        row += n;
        out.push_back(std::move(x));
    }
    return out;
}
extern template List<Floats2d> unflatten<Floats2d, Floats2d>(const Floats2d&, const Ints1d&, std::size_t);

// A list as a Ragged, keeping `fallback`'s width when the list is empty.
template <class A>
BasicRagged<A> ragged_of(const List<A>& xs, const char* who, const typename A::shape_type& fallback) {
    return BasicRagged<A>(flatten(xs, 0, who, fallback), lengths_of(xs));
}

// The shape after the rows of an array (a zero row count in front), for empty batches.
template <class S>
S zero_rows(S shape) {
    shape[0] = 0;
    return shape;
}

// A model that wraps one layer (with_array, with_padded, ...): the child, its dims (nO, nI,
// static where the child's are, copied from the child after initialisation, as Thinc's

// What a wrapper's node needs of its child, for every wrapper type (src/transfer.cpp; its
// node: Node::wrapper_node): the child's widths copied into it (initialize, or a wrapper made
// of an initialised layer); a width given to the wrapper passed on to a child that has none.
void take_child_dims(Node& wrapper, const Node& child);
void give_child_width(const Node& wrapper, Node& child);

// wrappers do) and the static widths chain reads.
// The same wrapper type over another layer (width propagation rebinds the layer inside).
template <class W, class L2>
struct with_layer;
template <template <class, class...> class D, class L, class... R, class L2>
struct with_layer<D<L, R...>, L2> {
    using type = D<L2, R...>;
};
template <template <class, class, bool> class D, class L, class K, bool B, class L2>
struct with_layer<D<L, K, B>, L2> {
    using type = D<L2, K, B>;
};
template <class Derived, class L, class InT, class OutT>
class Wrapper : public Layer<Derived, InT, OutT> {
    using Base = Layer<Derived, InT, OutT>;
    template <class, class, class, class>
    friend class Wrapper;

public:
    static constexpr extent_t static_nO = widths::static_nO<L>();
    static constexpr extent_t static_nI = widths::static_nI<L>();
    static constexpr bool width_preserving = widths::width_preserving<L>;
    static constexpr bool nO_is_nI = widths::nO_is_nI<L>;
    static constexpr extent_t nO_per_nI = widths::nO_per_nI<L>, nO_plus_nI = widths::nO_plus_nI<L>;
    using wrapped = L;  // (the checks look through a wrapper: a residual in with_array is E025)
    // Chain's width propagation: the wrapper with its layer's nI made W (and that layer's
    // own layers, rebind_nI), and what fails inside when W reaches it.
    template <extent_t W, class LL = L>
        requires(widths::rebindable<LL>)
    using with_nI = typename with_layer<Derived, typename widths::rebind_nI<LL, W>::type>::type;
    template <extent_t W>
    using nested_failure = widths::nested_failure_t<L, W>;

    L& layer() noexcept { return layer_; }
    const L& layer() const noexcept { return layer_; }
    void for_each_child(const std::function<void(Node&)>& f) override { f(layer_); }

protected:
    Wrapper(const char* name, L layer)
        : Base(Node::wrapper_node(name, layer, static_nO, static_nI)), layer_(std::move(layer)) {
        // A wrapper of an initialised (e.g. trained) layer is ready to use.
        if (layer_.is_initialized()) {
            take_child_dims(*this, layer_);
            this->mark_initialized();
        }
    }
    // From the same wrapper over the child before chain's width propagation rebound its nI.
    template <class D2, class L2>
    explicit Wrapper(Wrapper<D2, L2, InT, OutT>&& o) : Base(static_cast<Node&&>(o)), layer_(std::move(o.layer_)) {
        if constexpr (static_nI != dyn) this->fix_dim(1, static_nI);
    }

    // Initialises the child on the converted samples (either may be null).
    void init_child(const typename L::In* X, const typename L::Out* Y) {
        give_child_width(*this, layer_);
        if constexpr (is_tarray_v<typename L::In>) {
            typename L::InView vx;
            if (X) vx = typename L::InView(*X);
            init_child_y(X ? &vx : nullptr, Y);
        } else {
            init_child_y(X, Y);
        }
        take_child_dims(*this, layer_);
        this->mark_initialized();
    }

    // The layer on its input: predict for a const wrapper, the training call otherwise (the
    // layer's backprop kept in bp->inner).
    template <class Self, class V, class BP>
    static typename L::Out call(Self& self, const V& v, bool is_train, BP* bp) {
        if constexpr (std::is_const_v<Self>) {
            return self.layer_.predict_inner(v);
        } else {
            auto [y, b] = self.layer_.update_inner(v, is_train);
            bp->inner = std::move(b);
            return std::move(y);
        }
    }

    // predict and the training call, for a Derived whose static apply(self, X, is_train, bp)
    // runs the layer (bp null for predict) and whose Backprop holds the layer's and `model`.
    OutT predict_impl(typename Base::InView X) const {
        return Derived::apply(static_cast<const Derived&>(*this), X, false, nullptr);
    }
    auto forward_impl(typename Base::InView X, bool is_train) {
        typename Derived::Backprop bp;
        bp.model = static_cast<const Derived*>(this);
        OutT Y = Derived::apply(static_cast<Derived&>(*this), X, is_train, &bp);
        return std::pair<OutT, typename Derived::Backprop>{std::move(Y), std::move(bp)};
    }

    L layer_;

private:
    void init_child_y(sample_ptr<typename L::In> X, const typename L::Out* Y) {
        if constexpr (is_tarray_v<typename L::Out>) {
            typename L::OutView vy;
            if (Y) vy = typename L::OutView(*Y);
            layer_.initialize_from(X, Y ? &vy : nullptr);
        } else {
            layer_.initialize_from(X, Y);
        }
    }
};

// The transfer layers without parameters (list2ragged, ...): ready at once, keep widths.
template <class Derived, class InT, class OutT>
class Transfer : public Layer<Derived, InT, OutT> {
    using Base = Layer<Derived, InT, OutT>;

public:
    static constexpr bool width_preserving = true;

protected:
    explicit Transfer(const char* name) : Base(name, {}, {}) { this->mark_initialized(); }
};

// The input kind a wrapper was not given: with_array(layer) rather than with_array<Ragged>(layer).
// (Named in check::, as the compiler prints it on the user's call: Kind = check::kind_not_given.)
using no_kind = check::kind_not_given;

}  // namespace detail::xfer

namespace check {
// Named arguments of the transfer checks.
template <class T>
struct inner_input {};
template <class T>
struct inner_output {};
template <class... Kinds>
struct accepts {};
struct with_array {};
struct with_array2d {};
struct with_padded {};
struct with_ragged {};
struct with_list {};
struct with_flatten {};
struct list2array {};
struct list2ragged {};
struct list2padded {};
struct ragged2list {};
struct padded2list {};

// E030..E035: the wrapped layer's signature is not the one the wrapper needs.
template <class InnerIn, class InnerOut>
struct with_array_layer {
    static_assert(always_false<InnerIn>,
                  "[tenon-E030] with_array(layer): the layer must take an array and return an array (e.g. Relu: "
                  "Floats2d -> Floats2d); it has inner_input<T> and inner_output<U>: see the instantiation line");
};
template <class InnerIn, class InnerOut>
struct with_array2d_layer {
    static_assert(always_false<InnerIn>,
                  "[tenon-E031] with_array2d(layer): the layer must take a 2d array and return a 2d array (e.g. "
                  "Relu: Floats2d -> Floats2d); it has inner_input<T> and inner_output<U>: see the instantiation line");
};
template <class InnerIn, class InnerOut>
struct with_padded_layer {
    static_assert(always_false<InnerIn>,
                  "[tenon-E032] with_padded(layer): the layer must take a Padded and return a Padded; it has "
                  "inner_input<T> and inner_output<U>: see the instantiation line");
};
template <class InnerIn, class InnerOut>
struct with_ragged_layer {
    static_assert(always_false<InnerIn>,
                  "[tenon-E033] with_ragged(layer): the layer must take a Ragged and return a Ragged; it has "
                  "inner_input<T> and inner_output<U>: see the instantiation line");
};
template <class InnerIn, class InnerOut>
struct with_list_layer {
    static_assert(always_false<InnerIn>,
                  "[tenon-E034] with_list(layer): the layer must take a List of arrays and return a List of arrays "
                  "(e.g. List<Floats2d> -> List<Floats2d>); it has inner_input<T> and inner_output<U>: see the "
                  "instantiation line");
};
template <class InnerIn, class InnerOut>
struct with_flatten_layer {
    static_assert(always_false<InnerIn>,
                  "[tenon-E035] with_flatten(layer): the layer must take a List of arrays and return a List of "
                  "arrays (one per item); it has inner_input<T> and inner_output<U>: see the instantiation line");
};
// E036: the input kind named is not one the wrapper takes for this layer.
template <class Wrapper, class Given, class Accepts>
struct transfer_kind {
    static_assert(always_false<Wrapper>,
                  "[tenon-E036] with_...<Kind>(layer): Kind, the model's input type, is not one this wrapper "
                  "takes for this layer (given_type<Kind>; accepts<...> lists the types it takes: see the instantiation "
                  "line)");
};
// E037: no input kind named.
template <class Wrapper, class Accepts>
struct transfer_kind_missing {
    static_assert(always_false<Wrapper>,
                  "[tenon-E037] with_...(layer): name the model's input type, e.g. with_array<Ragged>(layer) or "
                  "with_list<Padded>(layer); the output is of the same kind (accepts<...> lists the types this "
                  "layer allows: see the instantiation line)");
};
// E038: the argument is not a tenon model.
template <class Wrapper, class Argument>
struct transfer_argument {
    static_assert(always_false<Wrapper>,
                  "[tenon-E038] with_...(layer): the argument must be a tenon model (layer, combinator or named "
                  "model type); it is not_a_model<T>: see the instantiation line");
};
// E039: a transfer layer's element type is not one it converts.
template <class Transfer, class Given, class Expects>
struct transfer_element {
    static_assert(always_false<Transfer>,
                  "[tenon-E039] list2array<A>(), list2ragged<A>(), list2padded<A>(), ragged2list<A>(), "
                  "padded2list<A>(): A is the array type of one sequence (given_type<A>, expects_type<...>: see "
                  "the instantiation line)");
};
}  // namespace check

namespace detail::xfer {
// The wrapper a signature struct (with_array_sig, ...) is for: the check:: name its
// diagnostics use (specialised next to each).
template <template <class> class Sig>
struct wrapper_name;

// Whether a wrapper's creation function can build the wrapper over D for the input Kind
// (Sig<D> is read only for a model) ...
template <template <class> class Sig, class D, class Kind>
constexpr bool wrapper_ok() {
    if constexpr (!Model<D>) return false;
    else if constexpr (!Sig<D>::layer_ok || std::is_same_v<Kind, no_kind>) return false;
    else return Sig<D>::template kind_ok<Kind>;
}
// ... and, where it cannot, the first check that fails, in order: E038 (not a model), the
// layer's signature (E030..E034), E037 (no kind named), E036 (a kind the wrapper does not
// take for this layer).
template <template <class> class Sig, class D, class Kind>
auto wrapper_failure() {
    using Which = typename wrapper_name<Sig>::type;
    if constexpr (is_failed_model<D>) {
        // a failed model's error is already said (model/failed_model.hpp)
    } else if constexpr (!Model<D>)
        check::report<check::transfer_argument<Which, check::not_a_model<check::name_t<D>>>>();
    else if constexpr (!Sig<D>::layer_ok)
        check::report<typename Sig<D>::layer_check>();
    else if constexpr (std::is_same_v<Kind, no_kind>)
        check::report<check::transfer_kind_missing<Which, typename Sig<D>::accepts>>();
    else
        check::report<check::transfer_kind<Which, check::given_type<check::name_t<Kind>>, typename Sig<D>::accepts>>();
    return failed_model{};
}
}  // namespace detail::xfer

}  // namespace tenon
