// What the combinators that merge their children's outputs (add, concatenate, residual,
// bidirectional) do to data of any type: sum two values of the same layout, concatenate
// along the last axis and split again, describe a value's layout for error messages, read
// an input's width, reverse Padded sequences within their lengths. One overload per data
// type (float arrays of any rank, Ragged, Padded, List, std::pair), so each combinator is
// written once for all of them.
#pragma once
#include <cstddef>
#include <cstring>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "tenon/backend/ops.hpp"
#include "tenon/error.hpp"
#include "tenon/model/diagnostics.hpp"
#include "tenon/types/device_memory.hpp"
#include "tenon/types/list.hpp"
#include "tenon/types/padded.hpp"
#include "tenon/types/ragged.hpp"

namespace tenon::check {
// std::pair<A, B> in a check's arguments (siamese, CauchySimilarity): pair<Floats2d, Floats2d>.
template <class A, class B>
struct pair {};
template <class A, class B>
struct name_of<std::pair<A, B>> {
    using type = check::pair<name_t<A>, name_t<B>>;
};
}  // namespace tenon::check

namespace tenon::detail {

template <class T>
inline constexpr bool is_float_array = false;
template <extent_t... E>
inline constexpr bool is_float_array<Array<float, E...>> = true;
template <class T>
inline constexpr bool is_list = false;
template <class A>
inline constexpr bool is_list<List<A>> = true;
template <class T>
inline constexpr bool is_pair = false;
template <class A, class B>
inline constexpr bool is_pair<std::pair<A, B>> = true;

// Data that add() and residual() can sum: float arrays, and Ragged, Padded, List of them.
template <class T>
inline constexpr bool summable = is_float_array<T>;
template <class A>
inline constexpr bool summable<BasicRagged<A>> = is_float_array<A>;
template <class A>
inline constexpr bool summable<BasicPadded<A>> = is_float_array<A>;
template <class A>
inline constexpr bool summable<List<A>> = is_float_array<A>;
// Data that concatenate() can join along the last (feature) axis: the same, of rank >= 2.
template <class T>
inline constexpr bool concatenable = false;
template <extent_t... E>
inline constexpr bool concatenable<Array<float, E...>> = sizeof...(E) >= 2;
template <class A>
inline constexpr bool concatenable<BasicRagged<A>> = concatenable<A>;
template <class A>
inline constexpr bool concatenable<BasicPadded<A>> = concatenable<A>;
template <class A>
inline constexpr bool concatenable<List<A>> = concatenable<A>;

// ---- layout: the shapes (and lengths) that must agree for two values to be summed -------
// (Its buffer from the block cache: a combinator's backprop keeps its output's layout.)
using Layout = std::vector<std::size_t, CacheAllocator<std::size_t>>;
template <class S>
void append_shape(Layout& out, const S& shape) {
    out.push_back(shape.size());
    for (auto d : shape) out.push_back(d);
}
extern template void append_shape<std::array<std::size_t, 2>>(Layout&, const std::array<std::size_t, 2>&);
template <class T>
void append_layout(Layout& out, const T& x) {
    if constexpr (requires { x.shape(); }) {
        append_shape(out, x.shape());
    } else if constexpr (requires { x.size_at_t(); }) {
        append_shape(out, x.data().shape());
        for (auto l : x.lengths()) out.push_back(static_cast<std::size_t>(l));
    } else if constexpr (requires { x.lengths(); }) {
        append_shape(out, x.data().shape());
        for (auto l : x.lengths()) out.push_back(static_cast<std::size_t>(l));
    } else if constexpr (is_list<T>) {
        out.push_back(x.size());
        for (const auto& a : x) append_layout(out, a);
    } else if constexpr (is_pair<T>) {
        append_layout(out, x.first);
        append_layout(out, x.second);
    }
}
template <class T>
Layout layout_of(const T& x) {
    Layout out;
    append_layout(out, x);
    return out;
}
// The same in words: "(4, 3)", "Ragged (5, 3) lengths [2, 3]", "List of 2 [(2, 3), (3, 3)]".
template <class T>
std::string layout_str(const T& x) {
    if constexpr (requires { x.shape(); }) {
        return shape_str(x.shape());
    } else if constexpr (requires { x.lengths(); }) {
        std::string s = (requires { x.size_at_t(); } ? "Padded " : "Ragged ") + shape_str(x.data().shape()) +
                        " lengths [";
        for (std::size_t i = 0; i < x.lengths().size(); ++i) s += (i ? ", " : "") + std::to_string(x.lengths()[i]);
        return s + "]";
    } else if constexpr (is_list<T>) {
        std::string s = "List of " + std::to_string(x.size()) + " [";
        for (std::size_t i = 0; i < x.size(); ++i) s += (i ? ", " : "") + layout_str(x[i]);
        return s + "]";
    } else if constexpr (is_pair<T>) {
        return "(" + layout_str(x.first) + ", " + layout_str(x.second) + ")";
    } else {
        return "value";
    }
}

// A stored layout in words (for "expected ... but found ..."), as layout_str says the value:
// "(4, 3)", "Padded (3, 2, 8) lengths [3, 2]", "List of 2 [(2, 3), (3, 3)]" (the kind of value
// from its type, layout_kind_of; `other`: the bare numbers). (src/instances.cpp)
enum class LayoutKind : unsigned char { other, array, ragged, padded, list_of_arrays };
std::string layout_vec_str(const Layout& v, LayoutKind kind = LayoutKind::other);
template <class T>
constexpr LayoutKind layout_kind_of() {
    if constexpr (requires(const T& x) { x.shape(); }) return LayoutKind::array;
    else if constexpr (requires(const T& x) { x.size_at_t(); }) return LayoutKind::padded;
    else if constexpr (requires(const T& x) { x.lengths(); }) return LayoutKind::ragged;
    else if constexpr (is_list<T>) {
        if constexpr (requires(const T& x) { x[0].shape(); }) return LayoutKind::list_of_arrays;
        else return LayoutKind::other;
    } else return LayoutKind::other;
}

// A call's scratch list (pointers, widths): its buffer from the block cache.
template <class T>
using scratch_vector = std::vector<T, CacheAllocator<T>>;

// ---- float work on device arrays ---------------------------------------------------------
// The combinators' own float work outside a plan (sums of gradients and residuals,
// concatenations, slices) over device memory runs on the device backend that holds it (one per
// process, docs/cuda.md: host code must not touch it); over host memory, the host loops.
inline const Ops* device_backend_of(const void* p) noexcept {
    return memory_of(p) == Memory::device ? static_cast<const Ops*>(device_ops_hint()) : nullptr;
}
// y[i] += x[i] for n values.
inline void add_floats(float* y, const float* x, std::size_t n) {
    if (n == 0) return;
    if (const Ops* ops = device_backend_of(y)) return ops->elementwise(Binary::add_into, x, nullptr, y, n);
    for (std::size_t i = 0; i < n; ++i) y[i] += x[i];
}
// rows x w values from `from` (rows from_ld apart) to `to` (rows to_ld apart).
inline void copy_float_rows(const float* from, std::size_t from_ld, float* to, std::size_t to_ld, std::size_t rows,
                            std::size_t w) {
    if (rows == 0 || w == 0) return;
    if (const Ops* ops = device_backend_of(to)) return ops->copy_rows(from, from_ld, to, to_ld, rows, w, false);
    for (std::size_t r = 0; r < rows; ++r) std::memcpy(to + r * to_ld, from + r * from_ld, w * sizeof(float));
}

// ---- sums ---------------------------------------------------------------------------------
// acc += x, elementwise; `who` (and `what`, appended) name the combinator and `id` the error
// when the layouts differ (views: the message is only built when there is an error).
// Integer data (ids) carries no gradient: its "sum" is the first value.
template <class T>
void add_into(T& acc, const T& x, std::string_view who, const char* id, std::string_view what = {}) {
    if constexpr (is_float_array<T> || summable<T> || is_pair<T>) {
        if (layout_of(acc) != layout_of(x))
            throw ShapeError(std::string(who) + std::string(what) + ": expected values of the same shape to sum, but found " +
                                 layout_str(acc) + " and " + layout_str(x),
                             id);
    }
    if constexpr (is_float_array<T>) {
        add_floats(acc.data(), x.data(), acc.size());
    } else if constexpr (requires { acc.values(); x.data(); } && summable<T>) {
        auto a = acc.values();
        add_floats(a.data(), x.data().data(), a.size());
    } else if constexpr (is_list<T>) {
        for (std::size_t i = 0; i < acc.size(); ++i) add_into(acc[i], x[i], who, id, what);
    } else if constexpr (is_pair<T>) {
        add_into(acc.first, x.first, who, id, what);
        add_into(acc.second, x.second, who, id, what);
    }
}
// (Compiled once, in the library, for the common data types: src/instances.cpp.)
extern template void add_into<Floats2d>(Floats2d&, const Floats2d&, std::string_view, const char*, std::string_view);

// ---- widths -------------------------------------------------------------------------------
// The width (last axis) of a value, or dyn where it has none to read (an empty list).
template <class T>
std::size_t width_of(const T& x) {
    if constexpr (requires { x.shape(); }) {
        return x.shape().size() >= 2 ? x.shape()[x.shape().size() - 1] : dyn;
    } else if constexpr (requires { x.lengths(); }) {
        const auto& s = x.data().shape();
        return s[s.size() - 1];
    } else if constexpr (is_list<T>) {
        return x.empty() ? dyn : width_of(x[0]);
    } else {
        return dyn;
    }
}

// ---- concatenation along the last axis ----------------------------------------------------
// out (rows, sum w) from parts (rows, w_i), row-major.
inline void concat_rows(float* out, std::size_t rows, std::span<const float* const> parts,
                        std::span<const std::size_t> widths) {
    std::size_t total = 0;
    for (auto w : widths) total += w;
    for (std::size_t k = 0, at = 0; k < parts.size(); at += widths[k], ++k)
        copy_float_rows(parts[k], widths[k], out + at, total, rows, widths[k]);
}
// The array part [start, start + w) of the last axis of a float array (or view) as an array.
template <class A, class V>
A slice_last(const V& x, std::size_t start, std::size_t w) {
    auto shape = x.shape();
    const std::size_t total = shape[shape.size() - 1];
    std::size_t rows = 1;
    for (std::size_t d = 0; d + 1 < shape.size(); ++d) rows *= shape[d];
    shape[shape.size() - 1] = w;
    A out(shape, uninitialized);
    copy_float_rows(x.data() + start, total, out.data(), w, rows, w);
    return out;
}
extern template Floats2d slice_last<Floats2d, Floats2dCView>(const Floats2dCView&, std::size_t, std::size_t);
extern template Floats2d slice_last<Floats2d, Floats2d>(const Floats2d&, std::size_t, std::size_t);

// Concatenates values of one type along the last axis; `who`/`id` name the error when their
// other extents (rows, lengths, list sizes) differ.
template <class T>
T concat_last(std::span<const T* const> xs, std::string_view who, const char* id) {
    auto mismatch = [&](std::size_t k) {
        throw ShapeError(std::string(who) + ": the outputs must agree in everything but their last axis to be concatenated, "
                               "but output 0 is " + layout_str(*xs[0]) + " and output " + std::to_string(k) +
                             " is " + layout_str(*xs[k]),
                         id);
    };
    if constexpr (is_float_array<T>) {
        auto shape = xs[0]->shape();
        const std::size_t R = shape.size();
        scratch_vector<const float*> parts;
        scratch_vector<std::size_t> widths;
        std::size_t total = 0;
        for (std::size_t k = 0; k < xs.size(); ++k) {
            for (std::size_t d = 0; d + 1 < R; ++d)
                if (xs[k]->shape(d) != shape[d]) mismatch(k);
            parts.push_back(xs[k]->data());
            widths.push_back(xs[k]->shape(R - 1));
            total += widths.back();
        }
        std::size_t rows = 1;
        for (std::size_t d = 0; d + 1 < R; ++d) rows *= shape[d];
        shape[R - 1] = total;
        T out(shape, uninitialized);
        concat_rows(out.data(), rows, parts, widths);
        return out;
    } else if constexpr (requires { xs[0]->size_at_t(); }) {
        scratch_vector<const typename T::data_type*> data;
        for (std::size_t k = 0; k < xs.size(); ++k) {
            if (layout_of(xs[k]->lengths()) != layout_of(xs[0]->lengths()) ||
                layout_of(xs[k]->indices()) != layout_of(xs[0]->indices()))
                mismatch(k);
            for (std::size_t i = 0; i < xs[0]->lengths().size(); ++i)
                if (xs[k]->lengths()[i] != xs[0]->lengths()[i] || xs[k]->indices()[i] != xs[0]->indices()[i])
                    mismatch(k);
            data.push_back(&xs[k]->data());
        }
        return xs[0]->with_data(concat_last<typename T::data_type>(data, who, id));
    } else if constexpr (requires { xs[0]->lengths(); }) {
        scratch_vector<const typename T::data_type*> data;
        for (std::size_t k = 0; k < xs.size(); ++k) {
            if (xs[k]->size() != xs[0]->size()) mismatch(k);
            for (std::size_t i = 0; i < xs[0]->size(); ++i)
                if (xs[k]->lengths()[i] != xs[0]->lengths()[i]) mismatch(k);
            data.push_back(&xs[k]->data());
        }
        return xs[0]->with_data(concat_last<typename T::data_type>(data, who, id));
    } else {
        static_assert(is_list<T>);
        T out;
        for (std::size_t k = 0; k < xs.size(); ++k)
            if (xs[k]->size() != xs[0]->size()) mismatch(k);
        for (std::size_t i = 0; i < xs[0]->size(); ++i) {
            scratch_vector<const typename T::array_type*> items;
            for (auto* x : xs) items.push_back(&(*x)[i]);
            out.push_back(concat_last<typename T::array_type>(items, who, id));
        }
        return out;
    }
}

extern template Floats2d concat_last<Floats2d>(std::span<const Floats2d* const>, std::string_view, const char*);

template <class T>
T concat_last(std::initializer_list<const T*> xs, std::string_view who, const char* id) {
    return concat_last<T>(std::span<const T* const>(xs.begin(), xs.size()), who, id);
}

// The part [start, start + w) of the last axis of a value (a gradient to split).
template <class T, class V>
T slice_value(const V& x, std::size_t start, std::size_t w) {
    if constexpr (is_float_array<T>) {
        return slice_last<T>(x, start, w);
    } else if constexpr (requires { x.lengths(); }) {
        return x.with_data(slice_last<typename T::data_type>(x.data(), start, w));
    } else {
        static_assert(is_list<T>);
        T out;
        for (const auto& a : x) out.push_back(slice_last<typename T::array_type>(a, start, w));
        return out;
    }
}

// ---- Padded -------------------------------------------------------------------------------
// Each sequence reversed within its length (step t of column b becomes step len_b - 1 - t);
// the padding stays where it is. Its own inverse.
template <class A>
BasicPadded<A> reverse_in_lengths(const BasicPadded<A>& p) {
    const auto& d = p.data();
    const std::size_t T = d.shape(0), B = d.shape(1), inner = (T && B) ? d.size() / (T * B) : 0;
    A out(d);
    for (std::size_t b = 0; b < B; ++b) {
        const auto len = static_cast<std::size_t>(p.lengths()[b]);
        for (std::size_t t = 0; t < len; ++t)  // (device data: the backend's copies)
            copy_bytes(out.data() + (t * B + b) * inner, out.memory(), d.data() + ((len - 1 - t) * B + b) * inner,
                       d.memory(), inner * sizeof(typename A::value_type));
    }
    return p.with_data(std::move(out));
}

}  // namespace tenon::detail
