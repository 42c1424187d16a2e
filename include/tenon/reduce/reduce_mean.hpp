// reduce_mean(): Ragged -> Floats2d, the mean of each sequence's rows (thinc/layers/reduce_mean.py,
// NumpyOps.reduce_mean: the rows scaled by 1/length and summed, in that order). A sequence of
// length 0 gives a row of zeros and no gradient, as in Thinc; a batch of no sequences gives a
// (0, width) array (Thinc's NumpyOps asserts there, and its backward pass fails when no
// sequence has a row).
#pragma once
#include "tenon/reduce/detail/reduction.hpp"

namespace tenon {

class ReduceMean : public detail::Reduction<ReduceMean> {
public:
    static constexpr const char* layer_name = "reduce_mean";
    static constexpr bool needs_which = false, nonempty = false;
    ReduceMean() : Reduction(layer_name) {}

    static void reduce(const float* X, const Ints1d& lengths, std::size_t n, float* Y, Ints2d*) {
        for (std::size_t b = 0; b < lengths.size(); ++b, Y += n) {
            const auto scale = static_cast<float>(1.0 / lengths[b]);
            for (std::int32_t r = 0; r < lengths[b]; ++r, X += n)
                for (std::size_t j = 0; j < n; ++j) Y[j] += scale * X[j];
        }
    }
    static void backward(const float* dY, const Ints1d& lengths, const Ints2d&, std::size_t n, float* dX) {
        for (std::size_t b = 0; b < lengths.size(); ++b, dY += n) {
            const auto scale = static_cast<float>(1.0 / lengths[b]);
            for (std::int32_t r = 0; r < lengths[b]; ++r, dX += n)
                for (std::size_t j = 0; j < n; ++j) dX[j] = scale * dY[j];
        }
    }
};

inline ReduceMean reduce_mean() { return {}; }

}  // namespace tenon
