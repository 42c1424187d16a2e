// reduce_last(): Ragged -> Floats2d, the last row of each sequence
// (thinc/layers/reduce_last.py); the gradient goes to that row. A sequence of length 0 has no
// last row: tenon-E190 names it (Thinc raises "all sequence lengths must be > 0"); a batch of
// no sequences gives a (0, width) array, as in Thinc.
#pragma once
#include "tenon/reduce/detail/reduction.hpp"

namespace tenon {

class ReduceLast : public detail::Reduction<ReduceLast> {
public:
    static constexpr const char* layer_name = "reduce_last";
    static constexpr Reduce kind = Reduce::last;
    static constexpr const char* why_nonempty = "an empty sequence has no last row";
    static constexpr bool needs_which = false, nonempty = true;
    ReduceLast() : Reduction(layer_name) {}
};

inline ReduceLast reduce_last() { return {}; }

}  // namespace tenon
