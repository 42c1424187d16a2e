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
// Every parameter's value (or gradient), copied, in walk order.
inline std::vector<std::vector<float>> all_params(Node& model, bool grads = false) {
    std::vector<std::vector<float>> out;
    for (Node* n : model.walk())
        for (const auto& name : n->param_names())
            if (n->has_param(name)) {
                auto v = grads ? n->get_grad(name) : n->get_param(name);
                out.emplace_back(v.begin(), v.end());
            }
    return out;
}
inline std::vector<std::vector<float>> all_grads(Node& model) { return all_params(model, true); }
// The same shape and values (==: -0 equals 0).
inline bool same(const Floats2d& a, const Floats2d& b) {
    return a.shape() == b.shape() && std::equal(a.begin(), a.end(), b.begin());
}

// The model's own call (plans: through its plan where it has one) or its layers' (unfused).
template <class M, class X>
auto predict_via(bool plans, M& model, const X& x) {
    return plans ? model.predict(x) : unfused(model).predict(x);
}
template <class M, class X>
auto update_via(bool plans, M& model, const X& x) {
    return plans ? model.begin_update(x) : unfused(model).begin_update(x);
}
}  // namespace tenon::testing
