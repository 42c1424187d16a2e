// reduce_max(): Ragged -> Floats2d, the maximum of each column within each sequence
// (thinc/layers/reduce_max.py, NumpyOps.reduce_max: ties keep the first row). The gradient
// goes to the row that held the maximum. A sequence of length 0 has no maximum: tenon-E190
// names it (Thinc raises "all sequence lengths must be > 0"); a batch of no sequences gives a
// (0, width) array (Thinc's NumpyOps asserts there).
#pragma once
#include "tenon/reduce/detail/reduction.hpp"

namespace tenon {

class ReduceMax : public detail::Reduction<ReduceMax> {
public:
    static constexpr const char* layer_name = "reduce_max";
    static constexpr Reduce kind = Reduce::max;
    static constexpr const char* why_nonempty = "the maximum of no rows is undefined";
    static constexpr bool needs_which = true, nonempty = true;
    ReduceMax() : Reduction(layer_name) {}
};

inline ReduceMax reduce_max() { return {}; }

}  // namespace tenon
