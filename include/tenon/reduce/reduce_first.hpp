// reduce_first(): Ragged -> Floats2d, the first row of each sequence
// (thinc/layers/reduce_first.py); the gradient goes to that row. A sequence of length 0 has
// no first row: tenon-E190 names it (Thinc raises "all sequence lengths must be > 0"); a
// batch of no sequences gives a (0, width) array, as in Thinc.
#pragma once
#include <cstring>

#include "tenon/reduce/detail/reduction.hpp"

namespace tenon {

class ReduceFirst : public detail::Reduction<ReduceFirst> {
public:
    static constexpr const char* layer_name = "reduce_first";
    static constexpr const char* why_nonempty = "an empty sequence has no first row";
    static constexpr bool needs_which = false, nonempty = true;
    ReduceFirst() : Reduction(layer_name) {}

    static void reduce(const float* X, const Ints1d& lengths, std::size_t n, float* Y, Ints2d*) {
        for (std::size_t b = 0; b < lengths.size(); ++b, Y += n) {
            std::memcpy(Y, X, n * sizeof(float));
            X += static_cast<std::size_t>(lengths[b]) * n;
        }
    }
    static void backward(const float* dY, const Ints1d& lengths, const Ints2d&, std::size_t n, float* dX) {
        for (std::size_t b = 0; b < lengths.size(); ++b, dY += n) {
            std::memcpy(dX, dY, n * sizeof(float));
            dX += static_cast<std::size_t>(lengths[b]) * n;
        }
    }
};

inline ReduceFirst reduce_first() { return {}; }

}  // namespace tenon
