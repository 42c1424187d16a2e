// reduce_sum(): Ragged -> Floats2d, the sum of each sequence's rows (thinc/layers/reduce_sum.py,
// NumpyOps.reduce_sum). A sequence of length 0 gives a row of zeros, as in Thinc; a batch of
// no sequences gives a (0, width) array (Thinc's NumpyOps asserts there).
#pragma once
#include "tenon/reduce/detail/reduction.hpp"

namespace tenon {

class ReduceSum : public detail::Reduction<ReduceSum> {
public:
    static constexpr const char* layer_name = "reduce_sum";
    static constexpr Reduce kind = Reduce::sum;
    static constexpr bool needs_which = false, nonempty = false;
    ReduceSum() : Reduction(layer_name) {}
};

inline ReduceSum reduce_sum() { return {}; }

}  // namespace tenon
