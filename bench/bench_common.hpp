// What every benchmark program of `make bench` shares: the clock, the JSON record a figure is
// printed as (bench/run.py reads one per line), a median, and the SplitMix64 stream the Python
// anchors (bench/tok2vec_data.py, lstm_anchors.py, sparselinear_thinc.py) draw the same data from.
#pragma once
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace tenon::bench {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

inline double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// {"figure": ..., "system": "tenon", "value": ..., "unit": ...} on one line; `extra` is added
// inside the braces as it is (", \"key\": value").
inline void emit(const std::string& figure, double value, const char* unit, const char* extra = "") {
    std::printf("{\"figure\": \"%s\", \"system\": \"tenon\", \"value\": %.6g, \"unit\": \"%s\"%s}\n", figure.c_str(),
                value, unit, extra);
    std::fflush(stdout);
}

struct SplitMix64 {
    std::uint64_t state;
    std::uint64_t next() {
        state += 0x9E3779B97F4A7C15ull;
        std::uint64_t z = state;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }
};

}  // namespace tenon::bench
