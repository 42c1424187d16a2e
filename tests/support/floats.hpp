// The float values of any tenon data value (arrays, Ragged, Padded, List, pairs and
// tuples of them), as a flat list of pointers in a fixed order: what the generic gradient
// checker perturbs and compares. Integer arrays contribute nothing; a Padded contributes
// only its live positions (t < length), since padding is not data.
#pragma once
#include <cstddef>
#include <tuple>
#include <utility>
#include <vector>

#include "tenon/tenon.hpp"
#include "tenon/types/sequences.hpp"

namespace tenon::testing {

template <class T, extent_t... E>
void collect_floats(Array<T, E...>& a, std::vector<float*>& out) {
    if constexpr (std::is_same_v<T, float>)
        for (float& v : a) out.push_back(&v);
}
template <class A>
void collect_floats(BasicRagged<A>& r, std::vector<float*>& out) {
    if constexpr (std::is_same_v<typename A::value_type, float>)
        for (float& v : r.values()) out.push_back(&v);
}
template <class A>
void collect_floats(BasicPadded<A>& p, std::vector<float*>& out) {
    if constexpr (std::is_same_v<typename A::value_type, float>) {
        auto v = p.values();
        const std::size_t T = v.shape(0), B = v.shape(1), inner = (T > 0 && B > 0) ? v.size() / (T * B) : 0;
        for (std::size_t t = 0; t < T; ++t)
            for (std::size_t b = 0; b < B; ++b)
                if (static_cast<std::size_t>(p.lengths()[b]) > t)
                    for (std::size_t k = 0; k < inner; ++k) out.push_back(&v[(t * B + b) * inner + k]);
    }
}
// SparseFeatures: its values (the keys and lengths are integers).
inline void collect_floats(SparseFeatures& s, std::vector<float*>& out) {
    for (float& v : s.values_view()) out.push_back(&v);
}
template <class A>
void collect_floats(List<A>& xs, std::vector<float*>& out) {
    for (auto& x : xs) collect_floats(x, out);
}
// A batch of lists (with_flatten's NestedList<A>).
template <class A>
void collect_floats(std::vector<List<A>>& xss, std::vector<float*>& out) {
    for (auto& xs : xss) collect_floats(xs, out);
}
template <class A, class B>
void collect_floats(std::pair<A, B>& p, std::vector<float*>& out) {
    collect_floats(p.first, out);
    collect_floats(p.second, out);
}
template <class... Ts>
void collect_floats(std::tuple<Ts...>& t, std::vector<float*>& out) {
    std::apply([&](auto&... xs) { (collect_floats(xs, out), ...); }, t);
}

template <class X>
std::vector<float*> floats_of(X& x) {
    std::vector<float*> out;
    collect_floats(x, out);
    return out;
}

// A copy of y whose float values are random in [-1, 1) (padding stays zero): a fixed dL/dY.
template <class Y>
Y random_like(const Y& y, std::uint64_t seed) {
    Y g = y;
    Rng rng(seed);
    if constexpr (requires { collect_floats(g, std::declval<std::vector<float*>&>()); }) {
        if constexpr (requires(Y& p) { p.size_at_t(); })
            for (float& v : g.values()) v = 0.0f;
        for (float* v : floats_of(g)) *v = static_cast<float>(rng.uniform(-1.0, 1.0));
    }
    return g;
}

}  // namespace tenon::testing
