// Padded: a batch of sequences padded to one length, time-major (Thinc's Padded): `data` is
// (T, B, ...) with the sequences sorted by decreasing length; `size_at_t[t]` is how many
// sequences are still running at step t (so data[t, :size_at_t[t]] is the live part);
// `lengths[b]` is the length of column b; `indices[b]` is the position column b had in the
// original batch. Padded is BasicPadded<Floats3d>.
//
// The invariant (checked when a Padded is made, tenon-E154): size_at_t has T entries,
// lengths and indices B; the lengths are non-increasing and <= T; size_at_t[t] is the
// number of lengths > t; indices is a permutation of 0..B-1. Every layer relies on it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "tenon/types/array.hpp"

namespace tenon {

template <class Data>
class BasicPadded {
    static_assert(requires { Data::rank; } && Data::rank >= 3,
                  "tenon BasicPadded<Data>: Data is a tenon array of rank >= 3 (steps, batch, ...)");

public:
    using data_type = Data;
    using value_type = typename Data::value_type;
    static constexpr std::size_t rank = Data::rank;

    BasicPadded() = default;
    BasicPadded(Data data, Ints1d size_at_t, Ints1d lengths, Ints1d indices)
        : data_(std::move(data)), size_at_t_(std::move(size_at_t)), lengths_(std::move(lengths)),
          indices_(std::move(indices)) {
        check();
    }

    const Data& data() const& noexcept { return data_; }
    Data&& data() && noexcept { return std::move(data_); }
    typename Data::view_type values() noexcept { return data_.view(); }
    const Ints1d& size_at_t() const noexcept { return size_at_t_; }
    const Ints1d& lengths() const noexcept { return lengths_; }
    const Ints1d& indices() const noexcept { return indices_; }

    // The number of sequences (Thinc's len(padded)) and of steps.
    std::size_t size() const noexcept { return lengths_.size(); }
    std::size_t steps() const noexcept { return data_.shape(0); }
    bool empty() const noexcept { return size() == 0; }

    // The same layout with other data (a layer's output, a gradient): only the data's first
    // two extents are checked.
    template <class D2>
    BasicPadded<D2> with_data(D2 data) const {
        return BasicPadded<D2>(std::move(data), size_at_t_, lengths_, indices_);
    }

private:
    void check() const {
        const std::size_t T = data_.shape(0), B = data_.shape(1);
        auto fail = [&](const std::string& what) {
            throw ShapeError("Padded: " + what + " (data " + detail::shape_str(data_.shape()) + ")", "tenon-E154");
        };
        if (size_at_t_.size() != T)
            fail("size_at_t must have one entry per step: expected " + std::to_string(T) + " but found " +
                 std::to_string(size_at_t_.size()));
        if (lengths_.size() != B || indices_.size() != B)
            fail("lengths and indices must have one entry per sequence: expected " + std::to_string(B) +
                 " but found " + std::to_string(lengths_.size()) + " and " + std::to_string(indices_.size()));
        std::vector<bool> seen(B, false);
        for (std::size_t b = 0; b < B; ++b) {
            const auto len = lengths_[b];
            if (len < 0 || static_cast<std::size_t>(len) > T)
                fail("length " + std::to_string(b) + " is " + std::to_string(len) + "; lengths must be in [0, " +
                     std::to_string(T) + "]");
            if (b > 0 && len > lengths_[b - 1])
                fail("the sequences must be sorted by decreasing length, but length " + std::to_string(b) + " (" +
                     std::to_string(len) + ") exceeds length " + std::to_string(b - 1) + " (" +
                     std::to_string(lengths_[b - 1]) + ")");
            const auto ix = indices_[b];
            if (ix < 0 || static_cast<std::size_t>(ix) >= B || seen[static_cast<std::size_t>(ix)])
                fail("indices must be a permutation of 0.." + std::to_string(B ? B - 1 : 0) + ", but index " +
                     std::to_string(b) + " is " + std::to_string(ix));
            seen[static_cast<std::size_t>(ix)] = true;
        }
        std::size_t live = B;
        for (std::size_t t = 0; t < T; ++t) {
            while (live > 0 && static_cast<std::size_t>(lengths_[live - 1]) <= t) --live;
            if (size_at_t_[t] != static_cast<std::int32_t>(live))
                fail("size_at_t[" + std::to_string(t) + "] must be the number of sequences longer than " +
                     std::to_string(t) + ", " + std::to_string(live) + ", but is " + std::to_string(size_at_t_[t]));
        }
    }

    Data data_;
    Ints1d size_at_t_, lengths_, indices_;
};

using Padded = BasicPadded<Floats3d>;

}  // namespace tenon

namespace tenon::check {
struct Padded {};
template <class D>
struct BasicPadded {};
template <class D>
struct name_of<tenon::BasicPadded<D>> {
    using type = check::BasicPadded<name_t<D>>;
};
template <>
struct name_of<tenon::BasicPadded<tenon::Floats3d>> {
    using type = check::Padded;
};
}  // namespace tenon::check
