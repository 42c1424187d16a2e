// reduce_max(): Ragged -> Floats2d, the maximum of each column within each sequence
// (thinc/layers/reduce_max.py, NumpyOps.reduce_max: ties keep the first row). The gradient
// goes to the row that held the maximum. A sequence of length 0 has no maximum: tenon-E190
// names it (Thinc raises "all sequence lengths must be > 0"); a batch of no sequences gives a
// (0, width) array (Thinc's NumpyOps asserts there).
#pragma once
#include <cstring>

#include "tenon/reduce/detail/reduction.hpp"

namespace tenon {

class ReduceMax : public detail::Reduction<ReduceMax> {
public:
    static constexpr const char* layer_name = "reduce_max";
    static constexpr const char* why_nonempty = "the maximum of no rows is undefined";
    static constexpr bool needs_which = true, nonempty = true;
    ReduceMax() : Reduction(layer_name) {}

    static void reduce(const float* X, const Ints1d& lengths, std::size_t n, float* Y, Ints2d* which) {
        std::int32_t* w = which->data();
        for (std::size_t b = 0; b < lengths.size(); ++b, Y += n, w += n) {
            std::memcpy(Y, X, n * sizeof(float));
            X += n;
            for (std::int32_t r = 1; r < lengths[b]; ++r, X += n)
                for (std::size_t j = 0; j < n; ++j)
                    if (X[j] > Y[j]) {
                        Y[j] = X[j];
                        w[j] = r;
                    }
        }
    }
    static void backward(const float* dY, const Ints1d& lengths, const Ints2d& which, std::size_t n, float* dX) {
        const std::int32_t* w = which.data();
        for (std::size_t b = 0; b < lengths.size(); ++b, dY += n, w += n) {
            for (std::size_t j = 0; j < n; ++j) dX[static_cast<std::size_t>(w[j]) * n + j] = dY[j];
            dX += static_cast<std::size_t>(lengths[b]) * n;
        }
    }
};

inline ReduceMax reduce_max() { return {}; }

}  // namespace tenon
