// array_getitem<A>(index...), floats_getitem(index...), ints_getitem(index...): A -> A[index],
// numpy's X[index] as a layer (thinc/layers/array_getitem.py). One entry per axis, from the
// first; axes left out are taken whole (as numpy's trailing `:`):
//   an integer      X[2]        picks one position and drops the axis (negative counts from the end)
//   Slice(...)      X[0:3]      Slice(stop), Slice(start, stop), Slice(start, stop, step); an
//                               open end is std::nullopt: Slice(1, std::nullopt) is `1:`,
//                               Slice() is `:`; clamped to the extent, as numpy
//   Index{...}      X[[1, 4]]   these positions, in this order (repeats allowed); keeps the axis
// so floats_getitem(Slice(), Index{1, 4}) is X[:, [1, 4]] and floats_getitem(0) is X[0]. The
// output has the input's rank less one per integer entry, every extent dyn; the positions
// follow numpy, including its one reordering: where integers and the Index list are
// separated by a slice (X[0, :, [1, 2]]), the list's axis comes first.
//
// The input type: floats_getitem / ints_getitem default to a float (int32) array with one
// axis per entry; name it for more axes or other types: floats_getitem<Floats3d>(Slice(), 0),
// ints_getitem<Keys2d>(...), array_getitem<Floats2d>(...). At most one Index list (numpy
// would pair several lists element by element: chain two getitems for a grid).
//
// Backprop scatters dY into zeros of X's shape, *adding* where an index repeats (numpy's
// add.at; Thinc's `dX[index] = dY` keeps only the last of repeated rows). Out-of-range
// integers and list entries: tenon-E180 naming the axis, the index and the extent. An empty
// input is indexed like any other (Thinc returns it unindexed).
#pragma once
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "tenon/model/diagnostics.hpp"
#include "tenon/model/layer.hpp"

namespace tenon {

// One axis of an index: numpy's start:stop:step.
struct Slice {
    std::optional<std::ptrdiff_t> start, stop;
    std::ptrdiff_t step = 1;

    Slice() = default;
    explicit Slice(std::optional<std::ptrdiff_t> stop_) : stop(stop_) {}
    Slice(std::optional<std::ptrdiff_t> start_, std::optional<std::ptrdiff_t> stop_, std::ptrdiff_t step_ = 1)
        : start(start_), stop(stop_), step(step_) {}
};

// One axis of an index: a list of positions (numpy's integer-array index).
struct Index {
    std::vector<std::ptrdiff_t> ids;

    Index(std::initializer_list<std::ptrdiff_t> i) : ids(i) {}
    // From any range of integers (std::vector<int>, Ints1d, ...).
    template <class R>
        requires requires(const R& r) {
            r.begin();
            r.end();
            requires std::is_integral_v<std::remove_cvref_t<decltype(*r.begin())>>;
        }
    explicit Index(const R& r) : ids(r.begin(), r.end()) {}
};

namespace check {
template <std::size_t N>
struct index_entries {};
template <std::size_t R>
struct array_rank {};
template <class A>
struct array_type {};
struct floats_getitem_ {};
struct ints_getitem_ {};
struct array_getitem_ {};
template <class Which>
struct function {};

// E040: more index entries than the array has axes.
template <class Array, class Rank, class Entries>
struct getitem_too_long {
    static_assert(always_false<Array>,
                  "[tenon-E040] array_getitem(index...): the index has more entries than the input array has axes "
                  "(array_rank<R> but index_entries<N>: see the instantiation line); name a higher-rank input type, e.g. "
                  "floats_getitem<Floats3d>(...)");
};
// E041: an integer for every axis: the result would be a scalar, which no tenon array is.
template <class Array, class Entries>
struct getitem_scalar {
    static_assert(always_false<Array>,
                  "[tenon-E041] array_getitem(index...): the index picks one position on every axis, so the "
                  "result would be a scalar (array_type<A>: see the instantiation line); keep an axis with "
                  "Slice(i, i + 1) or Index{i}");
};
// E042: several Index lists (numpy pairs them element by element, not as a grid).
template <class Array, class Lists>
struct getitem_lists {
    static_assert(always_false<Array>,
                  "[tenon-E042] array_getitem(index...): at most one Index{...} list per index (numpy pairs "
                  "several lists element by element); chain two getitems to select a grid "
                  "(index_entries<N> lists: see the instantiation line)");
};
// E043: an index entry that is neither an integer, a Slice nor an Index.
template <class Argument, class Given>
struct getitem_entry {
    static_assert(always_false<Argument>,
                  "[tenon-E043] array_getitem(index...): each index entry is an integer, a Slice(...) or an "
                  "Index{...} (argument<I> is given_type<T>: see the instantiation line)");
};
// E044: the input type is not an array of the kind the function takes.
template <class Function, class Given>
struct getitem_input {
    static_assert(always_false<Function>,
                  "[tenon-E044] floats_getitem<A> takes a float array type, ints_getitem<A> an integer array type, "
                  "array_getitem<A> any tenon array type, which it must be given: array_getitem<Floats2d>(...) "
                  "(function<F> given_type<A>: see the instantiation line)");
};
}  // namespace check

namespace detail {
// Each entry's kind: std::ptrdiff_t for an integer, Slice, Index, or void (E043).
template <class T>
struct getitem_entry {
    using type = void;
};
template <class T>
    requires(std::is_integral_v<T> && !std::is_same_v<T, bool>)
struct getitem_entry<T> {
    using type = std::ptrdiff_t;
};
template <>
struct getitem_entry<Slice> {
    using type = Slice;
};
template <>
struct getitem_entry<Index> {
    using type = Index;
};
template <class T>
using getitem_entry_t = typename getitem_entry<std::remove_cvref_t<T>>::type;

template <class A>
struct getitem_array {
    static constexpr bool is_array = false;
};
template <class T, extent_t... E>
struct getitem_array<Array<T, E...>> {
    static constexpr bool is_array = true;
    static constexpr std::size_t rank = sizeof...(E);
    using value_type = T;
    template <std::size_t R, class Seq = std::make_index_sequence<R>>
    struct out;
    template <std::size_t R, std::size_t... I>
    struct out<R, std::index_sequence<I...>> {
        using type = Array<T, always_dyn<I>...>;
    };
};

// One entry, as the run-time plan reads it.
struct GetitemEntry {
    enum Kind { at, slice, list } kind = slice;
    std::ptrdiff_t at_ = 0;
    Slice slice_;
    const std::vector<std::ptrdiff_t>* ids = nullptr;
};
inline GetitemEntry getitem_entry_of(std::ptrdiff_t i) { return {GetitemEntry::at, i, {}, nullptr}; }
inline GetitemEntry getitem_entry_of(const Slice& s) { return {GetitemEntry::slice, 0, s, nullptr}; }
inline GetitemEntry getitem_entry_of(const Index& x) { return {GetitemEntry::list, 0, {}, &x.ids}; }

// Where each output element comes from: the offset of the dropped axes' positions, and for
// each output axis the offsets (in X's row-major data) of the positions it takes.
struct GetitemPlan {
    std::size_t base = 0;
    std::vector<std::vector<std::size_t>> offsets;

    std::size_t size() const {
        std::size_t n = 1;
        for (const auto& o : offsets) n *= o.size();
        return n;
    }
    // f(output position, input offset) for every output element, in row-major order.
    template <class F>
    void for_each(F&& f) const {
        const std::size_t n = size(), R = offsets.size();
        if (n == 0) return;
        std::vector<std::size_t> c(R, 0);
        std::size_t off = base;
        for (const auto& o : offsets) off += o[0];
        for (std::size_t i = 0; i < n; ++i) {
            f(i, off);
            for (std::size_t k = R; k-- > 0;) {
                off -= offsets[k][c[k]];
                if (++c[k] < offsets[k].size()) {
                    off += offsets[k][c[k]];
                    break;
                }
                c[k] = 0;
                off += offsets[k][0];
            }
        }
    }
};

inline std::ptrdiff_t getitem_position(const std::string& layer, std::ptrdiff_t i, std::size_t axis,
                                       std::size_t extent, const std::string& where, const std::string& shape) {
    const auto n = static_cast<std::ptrdiff_t>(extent);
    const std::ptrdiff_t j = i < 0 ? i + n : i;
    if (j < 0 || j >= n)
        throw ShapeError(layer + ": index " + std::to_string(i) + where + " is out of range for axis " +
                             std::to_string(axis) + " of extent " + std::to_string(extent) + " (input shape " +
                             shape + ")",
                         "tenon-E180");
    return j;
}

// Python's slice.indices(n): the positions start, start + step, ... within [0, n).
inline std::vector<std::size_t> getitem_slice(const Slice& s, std::size_t extent) {
    const auto n = static_cast<std::ptrdiff_t>(extent);
    std::vector<std::size_t> out;
    const std::ptrdiff_t step = s.step;
    auto clamp = [&](std::ptrdiff_t v, std::ptrdiff_t lo, std::ptrdiff_t hi) {
        if (v < 0) v += n;
        return v < lo ? lo : v > hi ? hi : v;
    };
    if (step > 0) {
        const std::ptrdiff_t b = s.start ? clamp(*s.start, 0, n) : 0, e = s.stop ? clamp(*s.stop, 0, n) : n;
        for (std::ptrdiff_t i = b; i < e; i += step) out.push_back(static_cast<std::size_t>(i));
    } else {
        const std::ptrdiff_t b = s.start ? clamp(*s.start, -1, n - 1) : n - 1,
                             e = s.stop ? clamp(*s.stop, -1, n - 1) : -1;
        for (std::ptrdiff_t i = b; i > e; i += step) out.push_back(static_cast<std::size_t>(i));
    }
    return out;
}

inline GetitemPlan getitem_plan(const std::string& layer, const std::vector<GetitemEntry>& index,
                                const std::size_t* shape, std::size_t rank) {
    std::vector<std::size_t> stride(rank, 1);
    for (std::size_t d = rank; d-- > 1;) stride[d - 1] = stride[d] * shape[d];
    std::string shape_s = "(";
    for (std::size_t d = 0; d < rank; ++d) shape_s += (d ? ", " : "") + std::to_string(shape[d]);
    shape_s += ")";
    GetitemPlan p;
    std::size_t list_axis = rank, first_adv = rank, last_adv = 0, n_adv = 0;
    bool any_at = false;
    for (std::size_t d = 0; d < rank; ++d) {
        const GetitemEntry e = d < index.size() ? index[d] : GetitemEntry{};
        std::vector<std::size_t> pos;
        if (e.kind == GetitemEntry::at) {
            p.base += static_cast<std::size_t>(getitem_position(layer, e.at_, d, shape[d], "", shape_s)) * stride[d];
            any_at = true;
        } else if (e.kind == GetitemEntry::slice) {
            pos = getitem_slice(e.slice_, shape[d]);
        } else {
            for (std::size_t k = 0; k < e.ids->size(); ++k)
                pos.push_back(static_cast<std::size_t>(getitem_position(
                    layer, (*e.ids)[k], d, shape[d], " (entry " + std::to_string(k) + " of the Index list)", shape_s)));
            list_axis = p.offsets.size();
        }
        if (e.kind != GetitemEntry::slice) {
            first_adv = std::min(first_adv, d);
            last_adv = d;
            ++n_adv;
        }
        if (e.kind != GetitemEntry::at) {
            for (auto& v : pos) v *= stride[d];
            p.offsets.push_back(std::move(pos));
        }
    }
    // numpy: integers and a list are "advanced" indices together; separated by a slice,
    // their (broadcast) axis goes first.
    if (list_axis < p.offsets.size() && any_at && last_adv - first_adv + 1 != n_adv) {
        auto l = std::move(p.offsets[list_axis]);
        p.offsets.erase(p.offsets.begin() + static_cast<std::ptrdiff_t>(list_axis));
        p.offsets.insert(p.offsets.begin(), std::move(l));
    }
    return p;
}

inline std::string getitem_text(const std::vector<GetitemEntry>& index) {
    auto opt = [](const std::optional<std::ptrdiff_t>& v) { return v ? std::to_string(*v) : std::string(); };
    std::string s = "[";
    for (std::size_t d = 0; d < index.size(); ++d) {
        if (d) s += ", ";
        const auto& e = index[d];
        if (e.kind == GetitemEntry::at) {
            s += std::to_string(e.at_);
        } else if (e.kind == GetitemEntry::slice) {
            s += opt(e.slice_.start) + ":" + opt(e.slice_.stop);
            if (e.slice_.step != 1) {  // (two appends: GCC 12 warns -Wrestrict on ":" + to_string(...))
                s += ":";
                s += std::to_string(e.slice_.step);
            }
        } else {
            s += "[";
            for (std::size_t k = 0; k < e.ids->size(); ++k) s += (k ? ", " : "") + std::to_string((*e.ids)[k]);
            s += "]";
        }
    }
    return s + "]";
}

template <class... Ax>
inline constexpr std::size_t getitem_ints = (std::size_t{0} + ... + std::size_t(std::is_same_v<Ax, std::ptrdiff_t>));
template <class... Ax>
inline constexpr std::size_t getitem_lists = (std::size_t{0} + ... + std::size_t(std::is_same_v<Ax, Index>));
template <class... Args>
constexpr std::size_t getitem_first_bad_entry() {
    const bool bad[] = {std::is_void_v<getitem_entry_t<Args>>..., true};
    std::size_t i = 0;
    while (!bad[i]) ++i;
    return i;
}
// Whether A is an array of the kind the function takes (floats, ints, any).
template <class Which, class A>
constexpr bool getitem_kind_ok_f() {
    if constexpr (!getitem_array<A>::is_array) {
        return false;
    } else {
        using T = typename getitem_array<A>::value_type;
        if constexpr (std::is_same_v<Which, check::floats_getitem_>) return std::is_floating_point_v<T>;
        else if constexpr (std::is_same_v<Which, check::ints_getitem_>) return std::is_integral_v<T>;
        else return true;
    }
}
template <class Which, class A>
inline constexpr bool getitem_kind_ok = getitem_kind_ok_f<Which, A>();
template <std::size_t I, class... Args>
using getitem_arg_t = std::tuple_element_t<I, std::tuple<Args..., void>>;
}  // namespace detail

namespace check {
// The checks of a getitem over input A with entries Args (in the order E043, E044, E040,
// E041, E042), `ok` when it is well formed. Which: floats_getitem_, ints_getitem_, array_getitem_.
template <class Which, class A, class... Args>
constexpr auto getitem_check_of() {
    constexpr std::size_t bad = detail::getitem_first_bad_entry<Args...>();
    using G = detail::getitem_array<A>;
    if constexpr (bad < sizeof...(Args)) {
        return getitem_entry<argument<bad>, given_type<name_t<detail::getitem_arg_t<bad, Args...>>>>{};
    } else if constexpr (!detail::getitem_kind_ok<Which, A>) {
        return getitem_input<function<Which>, given_type<name_t<A>>>{};
    } else if constexpr (sizeof...(Args) > G::rank) {
        return getitem_too_long<array_type<name_t<A>>, array_rank<G::rank>, index_entries<sizeof...(Args)>>{};
    } else if constexpr (detail::getitem_ints<detail::getitem_entry_t<Args>...> == G::rank) {
        return getitem_scalar<array_type<name_t<A>>, index_entries<sizeof...(Args)>>{};
    } else if constexpr (detail::getitem_lists<detail::getitem_entry_t<Args>...> > 1) {
        return getitem_lists<array_type<name_t<A>>, index_entries<detail::getitem_lists<detail::getitem_entry_t<Args>...>>>{};
    } else {
        return ok{};
    }
}
template <class Which, class A, class... Args>
using getitem_check = decltype(getitem_check_of<Which, A, Args...>());
}  // namespace check

template <class A, class... Ax>
class ArrayGetitem
    : public Layer<ArrayGetitem<A, Ax...>, A,
                   typename detail::getitem_array<A>::template out<A::rank - detail::getitem_ints<Ax...>>::type> {
    static_assert(((std::is_same_v<Ax, std::ptrdiff_t> || std::is_same_v<Ax, Slice> || std::is_same_v<Ax, Index>) &&
                   ...));
    using Base = Layer<ArrayGetitem<A, Ax...>, A,
                       typename detail::getitem_array<A>::template out<A::rank - detail::getitem_ints<Ax...>>::type>;
    friend Base;

public:
    using typename Base::In;
    using typename Base::InView;
    using typename Base::Out;
    using typename Base::OutView;

    ArrayGetitem(std::string name, Ax... index) : Base(std::move(name), {}, {}), index_(std::move(index)...) {
        for (std::size_t d = 0; d < entries().size(); ++d)
            if (entries()[d].kind == detail::GetitemEntry::slice && entries()[d].slice_.step == 0)
                throw Error(this->name_ + ": the Slice on axis " + std::to_string(d) + " has step 0", "tenon-E182");
        this->set_fixed_attr("index", detail::getitem_text(entries()));
        this->mark_initialized();
    }

    const std::tuple<Ax...>& index() const noexcept { return index_; }

    struct Backprop {
        const ArrayGetitem* layer = nullptr;
        detail::GetitemPlan plan;
        typename In::shape_type shape{};
        std::array<std::size_t, Out::rank> out_shape{};
        In operator()(OutView dY) const {
            if (dY.shape() != out_shape)
                throw ShapeError(layer->name() + ": backprop: expected a gradient of shape " +
                                     detail::shape_str(out_shape) + " like the output, but found " +
                                     detail::shape_str(dY.shape()),
                                 "tenon-E181");
            In dX(shape);
            if constexpr (on_backend) {  // the backend's scatter-add, in output order as below
                layer->ops().scatter_add_rows(dX.data(), 1, offsets.data(), offsets.size(), 1, dY.data(), nullptr);
            } else {
                auto* d = dX.data();
                const auto* g = dY.data();
                plan.for_each([&](std::size_t i, std::size_t off) { d[off] += g[i]; });  // add.at: repeats add up
            }
            return dX;
        }
        Array<std::uint32_t, dyn> offsets;  // (floats) each output value's offset in X, in the backend's memory
    };

private:
    std::vector<detail::GetitemEntry> entries() const {
        return std::apply([](const auto&... e) { return std::vector<detail::GetitemEntry>{detail::getitem_entry_of(e)...}; },
                          index_);
    }
    detail::GetitemPlan plan(InView X) const {
        return detail::getitem_plan(this->name_, entries(), X.shape().data(), In::rank);
    }
    // Float arrays are gathered and scatter-added by the model's backend (they may be device
    // memory), one value per row; integer arrays are host memory (docs/cuda.md) and indexed here.
    static constexpr bool on_backend = std::is_same_v<typename In::value_type, float>;

    // Each output value's offset in X, in output order, where the backend reads it (floats;
    // none for integer arrays, indexed by the plan on the host).
    Array<std::uint32_t, dyn> offsets_of(InView X, const detail::GetitemPlan& p) const {
        if constexpr (!on_backend) return {};
        if (X.size() > 0xffffffffu)
            throw ShapeError(this->name_ + ": the input has " + std::to_string(X.size()) +
                                 " values; a float array indexed by this layer may have at most 2^32 - 1",
                             "tenon-E180");
        Array<std::uint32_t, dyn> off({p.size()}, uninitialized, Memory::host);
        std::uint32_t* o = off.data();
        p.for_each([&](std::size_t i, std::size_t at) { o[i] = static_cast<std::uint32_t>(at); });
        return detail::in_memory(std::move(off), this->ops().memory());
    }
    Out gather(InView X, const detail::GetitemPlan& p, const Array<std::uint32_t, dyn>& offsets) const {
        std::array<std::size_t, Out::rank> shape{};
        for (std::size_t k = 0; k < Out::rank; ++k) shape[k] = p.offsets[k].size();
        Out Y(shape, uninitialized);
        if constexpr (on_backend) {
            if (Y.size()) this->ops().gather_add_rows(X.data(), 1, offsets.data(), Y.size(), 1, Y.data());
        } else {
            auto* y = Y.data();
            const auto* x = X.data();
            p.for_each([&](std::size_t i, std::size_t off) { y[i] = x[off]; });
        }
        return Y;
    }

    template <class XP, class YP>
    void init_impl(XP, YP) {}
    Out predict_impl(InView X) const {
        const detail::GetitemPlan p = plan(X);
        return gather(X, p, offsets_of(X, p));
    }
    std::pair<Out, Backprop> forward_impl(InView X, bool) {
        Backprop bp;
        bp.layer = this;
        bp.plan = plan(X);
        bp.shape = X.shape();
        bp.offsets = offsets_of(X, bp.plan);
        Out Y = gather(X, bp.plan, bp.offsets);
        bp.out_shape = Y.shape();
        return {std::move(Y), std::move(bp)};
    }

    std::tuple<Ax...> index_;
};

namespace detail {
template <class T, std::size_t R, class Seq = std::make_index_sequence<R ? R : 1>>
struct getitem_default;
template <class T, std::size_t R, std::size_t... I>
struct getitem_default<T, R, std::index_sequence<I...>> {
    using type = Array<T, always_dyn<I>...>;
};
}  // namespace detail

// X[index] for float arrays; the input type defaults to a float array with one axis per entry.
template <class A = void, class... Args>
auto floats_getitem(Args&&... index) {
    using In = std::conditional_t<std::is_void_v<A>, typename detail::getitem_default<float, sizeof...(Args)>::type, A>;
    using C = check::getitem_check<check::floats_getitem_, In, Args...>;
    if constexpr (!std::is_same_v<C, check::ok>) {
        check::report<C>();  // E040-E044, said here
        return failed_model{};
    } else {
        return ArrayGetitem<In, detail::getitem_entry_t<Args>...>(
            "floats-getitem", detail::getitem_entry_t<Args>(std::forward<Args>(index))...);
    }
}
// X[index] for integer arrays (Ints, Keys); the input defaults to an int32 array.
template <class A = void, class... Args>
auto ints_getitem(Args&&... index) {
    using In =
        std::conditional_t<std::is_void_v<A>, typename detail::getitem_default<std::int32_t, sizeof...(Args)>::type, A>;
    using C = check::getitem_check<check::ints_getitem_, In, Args...>;
    if constexpr (!std::is_same_v<C, check::ok>) {
        check::report<C>();  // E040-E044, said here
        return failed_model{};
    } else {
        return ArrayGetitem<In, detail::getitem_entry_t<Args>...>(
            "ints-getitem", detail::getitem_entry_t<Args>(std::forward<Args>(index))...);
    }
}
// X[index] for any array type, which is named: array_getitem<Floats2d>(Slice(), Index{0, 2}).
template <class A = void, class... Args>
auto array_getitem(Args&&... index) {
    using C = check::getitem_check<check::array_getitem_, A, Args...>;
    if constexpr (!std::is_same_v<C, check::ok>) {
        check::report<C>();  // E040-E044, said here
        return failed_model{};
    } else {
        return ArrayGetitem<A, detail::getitem_entry_t<Args>...>(
            "array-getitem", detail::getitem_entry_t<Args>(std::forward<Args>(index))...);
    }
}

}  // namespace tenon
