// reduce_first(): Ragged -> Floats2d, the first row of each sequence
// (thinc/layers/reduce_first.py); the gradient goes to that row. A sequence of length 0 has
// no first row: tenon-E190 names it (Thinc raises "all sequence lengths must be > 0"); a
// batch of no sequences gives a (0, width) array, as in Thinc.
#pragma once
#include "tenon/reduce/detail/reduction.hpp"

namespace tenon {

class ReduceFirst : public detail::Reduction<ReduceFirst> {
public:
    static constexpr const char* layer_name = "reduce_first";
    static constexpr Reduce kind = Reduce::first;
    static constexpr const char* why_nonempty = "an empty sequence has no first row";
    static constexpr bool needs_which = false, nonempty = true;
    ReduceFirst() : Reduction(layer_name) {}
};

inline ReduceFirst reduce_first() { return {}; }

}  // namespace tenon
