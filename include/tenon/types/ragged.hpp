// Ragged: a batch of sequences of different lengths, concatenated (Thinc's Ragged): `data`
// holds the rows of every sequence one after another, `lengths` how many rows each has.
// No padding, so layers that work row by row (with_array, dense layers) run on `data` as it
// is. Typed by the data's array type: Ragged is BasicRagged<Floats2d>; BasicRagged<Ints1d>
// holds ids, BasicRagged<Floats3d> rows of rank 2.
//
// The invariant (checked when a Ragged is made, tenon-E151/E152): every length is >= 0 and
// the lengths sum to data's rows. Layers rely on it; that is why the members are private
// and only the values (not the shapes) can be written in place.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "tenon/types/array.hpp"

namespace tenon {

namespace detail {
// A Ragged's lengths against its data (one body for every data type, src/instances.cpp):
// tenon-E151 for a negative length, tenon-E152 when they do not sum to the data's rows.
void check_ragged(const std::int32_t* lengths, std::size_t n, const std::size_t* data_shape, std::size_t rank);
}  // namespace detail

template <class Data>
class BasicRagged {
    static_assert(requires { Data::rank; } && Data::rank >= 1,
                  "tenon BasicRagged<Data>: Data is a tenon array type of rank >= 1 (Floats2d, Ints1d, ...)");

public:
    using data_type = Data;
    using value_type = typename Data::value_type;
    static constexpr std::size_t rank = Data::rank;

    BasicRagged() = default;
    BasicRagged(Data data, Ints1d lengths) : data_(std::move(data)), lengths_(std::move(lengths)) { check(); }
    // From lengths written out: Ragged(X, {2, 0, 3}).
    BasicRagged(Data data, std::initializer_list<std::int32_t> lengths)
        : BasicRagged(std::move(data), Ints1d({lengths.size()}, lengths)) {}

    const Data& data() const& noexcept { return data_; }
    Data&& data() && noexcept { return std::move(data_); }
    // The values, writable in place (the shape is part of the invariant).
    typename Data::view_type values() noexcept { return data_.view(); }
    const Ints1d& lengths() const& noexcept { return lengths_; }
    Ints1d&& lengths() && noexcept { return std::move(lengths_); }

    // The number of sequences (Thinc's len(ragged)) and of rows in all.
    std::size_t size() const noexcept { return lengths_.size(); }
    std::size_t rows() const noexcept { return data_.shape(0); }
    bool empty() const noexcept { return size() == 0; }
    // Row offsets: sequence i is rows [offsets[i], offsets[i + 1]).
    std::vector<std::size_t> offsets() const {
        std::vector<std::size_t> o(size() + 1, 0);
        for (std::size_t i = 0; i < size(); ++i) o[i + 1] = o[i] + static_cast<std::size_t>(lengths_[i]);
        return o;
    }
    // Sequence i as a view of its rows (tenon-E153 when i is out of range).
    auto operator[](std::size_t i) const {
        if (i >= size())
            throw Error("Ragged: sequence " + std::to_string(i) + " requested but there are " +
                            std::to_string(size()),
                        "tenon-E153");
        std::size_t start = 0;
        for (std::size_t k = 0; k < i; ++k) start += static_cast<std::size_t>(lengths_[k]);
        return rows_view(start, static_cast<std::size_t>(lengths_[i]));
    }

    // A Ragged with the same lengths and other data (the gradient of this one, a layer's
    // output): no check of the lengths again, only of the rows.
    template <class D2>
    BasicRagged<D2> with_data(D2 data) const {
        return BasicRagged<D2>(std::move(data), lengths_);
    }

private:
    template <class D2>
    friend class BasicRagged;

    void check() const {
        detail::check_ragged(lengths_.data(), lengths_.size(), data_.shape().data(), rank);
    }
    // Rows [start, start + n) as a view of the same rank.
    auto rows_view(std::size_t start, std::size_t n) const {
        auto shape = data_.shape();
        std::size_t stride = 1;
        for (std::size_t d = 1; d < rank; ++d) stride *= shape[d];
        shape[0] = n;
        return typename Data::const_view_type(data_.data() + start * stride, shape);
    }

    Data data_;
    Ints1d lengths_;
};

using Ragged = BasicRagged<Floats2d>;

}  // namespace tenon

namespace tenon::check {
struct Ragged {};
template <class D>
struct BasicRagged {};
template <class D>
struct name_of<tenon::BasicRagged<D>> {
    using type = check::BasicRagged<name_t<D>>;
};
template <>
struct name_of<tenon::BasicRagged<tenon::Floats2d>> {
    using type = check::Ragged;
};
}  // namespace tenon::check
