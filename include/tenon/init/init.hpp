// Parameter initialisers, after thinc/initializers.py. An initialiser fills a parameter of a
// given shape; shape[0] and shape[1] are (fan_out, fan_in) as in Thinc's (nO, nI) layout.
#pragma once
#include <cmath>
#include <functional>

#include "tenon/model/node.hpp"
#include "tenon/random.hpp"

namespace tenon {

// What the layers' init_W / init_b options hold.
using Init = std::function<void(ParamView)>;

namespace detail {
// A parameter's first values, written by host code (the initialisers draw from global_rng() on
// the host): straight into a host array; for a device model's, into host memory first and then
// copied to the device at once (src/node.cpp). Every layer's initialize goes through these.
void init_on_host(Floats1d& value, const std::function<void(float*)>& fill);
void run_init(const Init& init, Node& node, std::string_view param);
}  // namespace detail

namespace detail {
inline std::size_t fan(const ParamView& p, std::size_t i) { return i < p.rank ? p.shape[i] : 1; }
}  // namespace detail

// Uniform in +-sqrt(6 / (shape[0] + shape[1])) (Glorot & Bengio 2010).
struct GlorotUniformInit {
    void operator()(ParamView p) const {
        const double scale = std::sqrt(6.0 / double(detail::fan(p, 0) + detail::fan(p, 1)));
        for (float& v : p) v = static_cast<float>(global_rng().uniform(-scale, scale));
    }
};
inline constexpr GlorotUniformInit glorot_uniform_init{};

// Normal with mean 0 and standard deviation sqrt(2 / shape[1]) (He et al. 2015; Thinc's
// he_normal_init, the default W of Gelu, Swish and HardSwish).
struct HeNormalInit {
    void operator()(ParamView p) const {
        const std::size_t fan_in = detail::fan(p, 1);
        const double sd = std::sqrt(2.0 / double(fan_in ? fan_in : 1));
        for (float& v : p) v = static_cast<float>(sd * global_rng().normal());
    }
};
inline constexpr HeNormalInit he_normal_init{};

struct ZeroInit {
    void operator()(ParamView p) const {
        for (float& v : p) v = 0.0f;
    }
};
inline constexpr ZeroInit zero_init{};

// Uniform in [lo, hi); uniform_init(lo, hi) makes one with other bounds.
struct UniformInit {
    double lo = -0.1, hi = 0.1;
    void operator()(ParamView p) const {
        for (float& v : p) v = static_cast<float>(global_rng().uniform(lo, hi));
    }
    constexpr UniformInit operator()(double new_lo, double new_hi) const { return {new_lo, new_hi}; }
};
inline constexpr UniformInit uniform_init{};

// Normal with the given mean and standard deviation sqrt(1 / fan_in) (fan_in = shape[1],
// or shape[0] for a vector). Thinc 8.1's normal_init passes `mean` as the standard
// deviation, so its default draws all zeros; tenon uses the mean as a mean.
struct NormalInit {
    double mean = 0.0;
    void operator()(ParamView p) const {
        const std::size_t fan_in = p.rank >= 2 ? p.shape[p.rank - 1] : detail::fan(p, 0);
        const double sd = std::sqrt(1.0 / double(fan_in ? fan_in : 1));
        for (float& v : p) v = static_cast<float>(mean + sd * global_rng().normal());
    }
    constexpr NormalInit operator()(double new_mean) const { return {new_mean}; }
};
inline constexpr NormalInit normal_init{};

}  // namespace tenon
