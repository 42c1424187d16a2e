// reduce_last(): Ragged -> Floats2d, the last row of each sequence
// (thinc/layers/reduce_last.py); the gradient goes to that row. A sequence of length 0 has no
// last row: tenon-E190 names it (Thinc raises "all sequence lengths must be > 0"); a batch of
// no sequences gives a (0, width) array, as in Thinc.
#pragma once
#include <cstring>

#include "tenon/reduce/detail/reduction.hpp"

namespace tenon {

class ReduceLast : public detail::Reduction<ReduceLast> {
public:
    static constexpr const char* layer_name = "reduce_last";
    static constexpr const char* why_nonempty = "an empty sequence has no last row";
    static constexpr bool needs_which = false, nonempty = true;
    ReduceLast() : Reduction(layer_name) {}

    static void reduce(const float* X, const Ints1d& lengths, std::size_t n, float* Y, Ints2d*) {
        for (std::size_t b = 0; b < lengths.size(); ++b, Y += n) {
            X += static_cast<std::size_t>(lengths[b]) * n;
            std::memcpy(Y, X - n, n * sizeof(float));
        }
    }
    static void backward(const float* dY, const Ints1d& lengths, const Ints2d&, std::size_t n, float* dX) {
        for (std::size_t b = 0; b < lengths.size(); ++b, dY += n) {
            dX += static_cast<std::size_t>(lengths[b]) * n;
            std::memcpy(dX - n, dY, n * sizeof(float));
        }
    }
};

inline ReduceLast reduce_last() { return {}; }

}  // namespace tenon
