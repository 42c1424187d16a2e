// Small helpers shared by the unit tests.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

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

// A parameter's (or gradient's) values, copied.
inline std::vector<float> values(CParamView p) { return {p.begin(), p.end()}; }
// Whether a gradient holds anything but zeros.
inline bool nonzero(CParamView g) {
    return std::any_of(g.begin(), g.end(), [](float v) { return v != 0.0f; });
}
// The same shape and values (==: -0 equals 0).
inline bool same(const Floats2d& a, const Floats2d& b) {
    return a.shape() == b.shape() && std::equal(a.begin(), a.end(), b.begin());
}

}  // namespace tenon::testing
