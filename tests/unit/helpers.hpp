// Small helpers shared by the unit tests.
#pragma once
#include <cstdint>

#include "tenon/tenon.hpp"

namespace tenon::testing {

// A (rows, cols) array of uniform values in [lo, hi), the same for the same seed.
inline Floats2d random_array(std::size_t rows, std::size_t cols, std::uint64_t seed, double lo = -1.0,
                             double hi = 1.0) {
    Rng rng(seed);
    Floats2d a({rows, cols}, uninitialized);
    for (float& v : a) v = static_cast<float>(rng.uniform(lo, hi));
    return a;
}

}  // namespace tenon::testing
