// reduce_sum(): Ragged -> Floats2d, the sum of each sequence's rows (thinc/layers/reduce_sum.py,
// NumpyOps.reduce_sum). A sequence of length 0 gives a row of zeros, as in Thinc; a batch of
// no sequences gives a (0, width) array (Thinc's NumpyOps asserts there).
#pragma once
#include "tenon/reduce/detail/reduction.hpp"

namespace tenon {

class ReduceSum : public detail::Reduction<ReduceSum> {
public:
    static constexpr const char* layer_name = "reduce_sum";
    static constexpr bool needs_which = false, nonempty = false;
    ReduceSum() : Reduction(layer_name) {}

    static void reduce(const float* X, const Ints1d& lengths, std::size_t n, float* Y, Ints2d*) {
        for (std::size_t b = 0; b < lengths.size(); ++b, Y += n)
            for (std::int32_t r = 0; r < lengths[b]; ++r, X += n)
                for (std::size_t j = 0; j < n; ++j) Y[j] += X[j];
    }
    // Every row of a sequence gets the sequence's gradient.
    static void backward(const float* dY, const Ints1d& lengths, const Ints2d&, std::size_t n, float* dX) {
        for (std::size_t b = 0; b < lengths.size(); ++b, dY += n)
            for (std::int32_t r = 0; r < lengths[b]; ++r, dX += n)
                for (std::size_t j = 0; j < n; ++j) dX[j] = dY[j];
    }
};

inline ReduceSum reduce_sum() { return {}; }

}  // namespace tenon
