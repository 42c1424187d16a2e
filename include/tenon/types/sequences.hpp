// The sequence data types (List, Ragged, Padded) and the conversions between them, with
// Thinc's semantics (ops.list2ragged, ops.list2padded, ops.padded2list, ...):
//   to_ragged(List<A>)    concatenate the arrays, lengths = their rows
//   to_list(Ragged)       split the data at the lengths (copies)
//   to_padded(List<A2>)   sort by decreasing length (ties: the later sequence first, as
//                         Thinc's sort of (length, index) pairs), pad, make time-major
//   to_list(Padded)       the live rows of each column, back in the original order
//   to_padded(Ragged), to_ragged(Padded): through the list form, without the copies.
// The transfer layers (list2ragged(), with_padded(...), ...) are built on these.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <numeric>
#include <utility>
#include <vector>

#include "tenon/types/list.hpp"
#include "tenon/types/padded.hpp"
#include "tenon/types/ragged.hpp"

namespace tenon {

namespace detail {
// The array type with one more (dyn) leading axis, and with one fewer.
template <class A>
struct add_axis;
template <class T, extent_t... E>
struct add_axis<Array<T, E...>> {
    using type = Array<T, dyn, E...>;
};
template <class A>
struct drop_axis;
template <class T, extent_t E0, extent_t... E>
struct drop_axis<Array<T, E0, E...>> {
    using type = Array<T, E...>;
};
// Elements per row of an array (the product of the extents after the first).
template <class S>
std::size_t row_size(const S& shape) {
    std::size_t n = 1;
    for (std::size_t d = 1; d < shape.size(); ++d) n *= shape[d];
    return n;
}
// Where each sequence's rows start in data ordered as `order` (a permutation of the lengths'
// positions), for the list <-> padded conversions.
// order[b]: the sequence in column b. Thinc sorts (length, index) pairs in reverse: longer
// first, and for equal lengths the larger index first. The same order keeps Padded's indices
// identical to Thinc's (and the plan's steps space uses it: src/plan.cpp).
template <class Len, class Idx>
void padded_order(const Len* lengths, std::size_t n, Idx* order) {
    for (std::size_t i = 0; i < n; ++i) order[i] = static_cast<Idx>(i);
    std::sort(order, order + n, [&](Idx a, Idx b) { return lengths[a] != lengths[b] ? lengths[a] > lengths[b] : a > b; });
}
inline std::vector<std::size_t> sorted_by_length(const std::vector<std::size_t>& lengths) {
    std::vector<std::size_t> order(lengths.size());
    padded_order(lengths.data(), lengths.size(), order.data());
    return order;
}
// Builds a Padded (T, B, ...) from B sequences given as (pointer to rows, rows) in the
// original order, each row `inner` elements (the shape after the rows is `tail`).
template <class A3, class T, std::size_t R>
BasicPadded<A3> make_padded(const std::vector<std::pair<const T*, std::size_t>>& seqs,
                            const std::array<std::size_t, R>& tail_shape) {
    const std::size_t B = seqs.size();
    std::vector<std::size_t> lens(B);
    for (std::size_t b = 0; b < B; ++b) lens[b] = seqs[b].second;
    const auto order = sorted_by_length(lens);
    const std::size_t steps = B ? lens[order[0]] : 0;
    typename A3::shape_type shape{};
    shape[0] = steps;
    shape[1] = B;
    std::size_t inner = 1;
    for (std::size_t d = 1; d < R; ++d) {
        shape[d + 1] = tail_shape[d];
        inner *= tail_shape[d];
    }
    A3 data(shape);  // zero padding
    Ints1d size_at_t({steps}, uninitialized), lengths({B}, uninitialized), indices({B}, uninitialized);
    for (std::size_t b = 0; b < B; ++b) {
        const auto& [src, n] = seqs[order[b]];
        lengths[b] = static_cast<std::int32_t>(n);
        indices[b] = static_cast<std::int32_t>(order[b]);
        const Memory from = memory_of(src);  // (device data: the backend's copies)
        for (std::size_t t = 0; t < n; ++t)
            copy_bytes(data.data() + (t * B + b) * inner, data.memory(), src + t * inner, from, inner * sizeof(T));
    }
    std::size_t live = B;
    for (std::size_t t = 0; t < steps; ++t) {
        while (live > 0 && static_cast<std::size_t>(lengths[live - 1]) <= t) --live;
        size_at_t[t] = static_cast<std::int32_t>(live);
    }
    return BasicPadded<A3>(std::move(data), std::move(size_at_t), std::move(lengths), std::move(indices));
}
// Copies column b of a Padded (its first `n` steps) to `dst`, rows contiguous.
template <class P, class T>
void copy_padded_column(const P& p, std::size_t b, std::size_t n, T* dst) {
    const std::size_t B = p.data().shape(1), inner = row_size(p.data().shape()) / B;
    const Memory to = memory_of(dst);  // (device data: the backend's copies)
    for (std::size_t t = 0; t < n; ++t)
        copy_bytes(dst + t * inner, to, p.data().data() + (t * B + b) * inner, p.data().memory(), inner * sizeof(T));
}
}  // namespace detail

// List -> Ragged: one copy of every row.
template <class A>
BasicRagged<A> to_ragged(const List<A>& xs) {
    typename A::shape_type shape{};
    const std::size_t rows = detail::list_rows(xs, "to_ragged(list)", &shape);
    shape[0] = rows;
    A data(shape, uninitialized);
    Ints1d lengths({xs.size()}, uninitialized);
    std::size_t off = 0;
    for (std::size_t i = 0; i < xs.size(); ++i) {
        detail::copy_bytes(data.data() + off, data.memory(), xs[i].data(), xs[i].memory(),
                           xs[i].size() * sizeof(typename A::value_type));  // (device data: the backend's copy)
        off += xs[i].size();
        lengths[i] = static_cast<std::int32_t>(xs[i].shape(0));
    }
    return BasicRagged<A>(std::move(data), std::move(lengths));
}

// Ragged -> List: one array per sequence.
template <class A>
List<A> to_list(const BasicRagged<A>& r) {
    List<A> out;
    out.reserve(r.size());
    for (std::size_t i = 0; i < r.size(); ++i) out.emplace_back(r[i]);
    return out;
}
// (Compiled once, in the library, for the common data types: src/instances.cpp.)
extern template BasicRagged<Floats2d> to_ragged<Floats2d>(const List<Floats2d>&);
extern template BasicRagged<Ints2d> to_ragged<Ints2d>(const List<Ints2d>&);
extern template List<Floats2d> to_list<Floats2d>(const BasicRagged<Floats2d>&);
extern template List<Ints2d> to_list<Ints2d>(const BasicRagged<Ints2d>&);

// List -> Padded (rank-2 arrays: a (length, width) array per sequence).
template <class A>
    requires(A::rank == 2)
auto to_padded(const List<A>& xs) {
    using A3 = typename detail::add_axis<A>::type;
    using T = typename A::value_type;
    typename A::shape_type shape{};
    detail::list_rows(xs, "to_padded(list)", &shape);
    std::vector<std::pair<const T*, std::size_t>> seqs;
    seqs.reserve(xs.size());
    for (const auto& x : xs) seqs.emplace_back(x.data(), x.shape(0));
    return detail::make_padded<A3>(seqs, shape);
}

// Ragged -> Padded: as to_padded(to_list(r)), reading the rows in place.
template <class A>
    requires(A::rank == 2)
auto to_padded(const BasicRagged<A>& r) {
    using A3 = typename detail::add_axis<A>::type;
    using T = typename A::value_type;
    const auto off = r.offsets();
    const std::size_t inner = detail::row_size(r.data().shape());
    std::vector<std::pair<const T*, std::size_t>> seqs;
    seqs.reserve(r.size());
    for (std::size_t i = 0; i < r.size(); ++i)
        seqs.emplace_back(r.data().data() + off[i] * inner, off[i + 1] - off[i]);
    return detail::make_padded<A3>(seqs, r.data().shape());
}

// Padded -> List, in the original order.
template <class A3>
auto to_list(const BasicPadded<A3>& p) {
    using A = typename detail::drop_axis<A3>::type;
    const std::size_t B = p.size();
    List<A> out(B);
    for (std::size_t b = 0; b < B; ++b) {
        const auto n = static_cast<std::size_t>(p.lengths()[b]);
        typename A::shape_type shape{};
        shape[0] = n;
        for (std::size_t d = 1; d < A::rank; ++d) shape[d] = p.data().shape(d + 1);
        A x(shape, uninitialized);
        detail::copy_padded_column(p, b, n, x.data());
        out[static_cast<std::size_t>(p.indices()[b])] = std::move(x);
    }
    return out;
}

// Padded -> Ragged, in the original order.
template <class A3>
auto to_ragged(const BasicPadded<A3>& p) {
    using A = typename detail::drop_axis<A3>::type;
    const std::size_t B = p.size();
    std::vector<std::size_t> len_of(B), col_of(B);
    for (std::size_t b = 0; b < B; ++b) {
        const auto i = static_cast<std::size_t>(p.indices()[b]);
        len_of[i] = static_cast<std::size_t>(p.lengths()[b]);
        col_of[i] = b;
    }
    typename A::shape_type shape{};
    shape[0] = std::accumulate(len_of.begin(), len_of.end(), std::size_t{0});
    for (std::size_t d = 1; d < A::rank; ++d) shape[d] = p.data().shape(d + 1);
    A data(shape, uninitialized);
    Ints1d lengths({B}, uninitialized);
    const std::size_t inner = detail::row_size(shape);
    std::size_t row = 0;
    for (std::size_t i = 0; i < B; ++i) {
        detail::copy_padded_column(p, col_of[i], len_of[i], data.data() + row * inner);
        row += len_of[i];
        lengths[i] = static_cast<std::int32_t>(len_of[i]);
    }
    return BasicRagged<A>(std::move(data), std::move(lengths));
}

}  // namespace tenon
