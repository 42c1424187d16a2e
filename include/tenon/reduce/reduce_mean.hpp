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
    static constexpr Reduce kind = Reduce::mean;
    static constexpr bool needs_which = false, nonempty = false;
    ReduceMean() : Reduction(layer_name) {}
};

inline ReduceMean reduce_mean() { return {}; }

}  // namespace tenon
