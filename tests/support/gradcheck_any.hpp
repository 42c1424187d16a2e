// The finite-difference gradient check for a model of any data types (after dlib's
// test_layer; tests/unit/test_gradcheck.cpp has the dense-layer table): for the objective
// L = sum(G * Y) with a fixed random G (so dL/dY = G), central differences of L over every
// float of X and of every parameter must match backprop's dX and parameter gradients;
// backprop must add into the gradients (a second call doubles them; +inf pre-filled stays
// +inf) and give a finite dX. Use: REQUIRE_GRADIENTS(model, X) after model.initialize(...).
#pragma once
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "support/floats.hpp"

namespace tenon::testing {

struct AnyCheckOptions {
    double eps = 1e-3, rtol = 1e-2, atol = 2e-3;
    std::uint64_t mask_seed = 0xD50;  // fix_random_seed before every forward (dropout masks)
};

struct AnyGradReport {
    std::size_t entries = 0, kinks = 0, mismatches = 0;
    bool finite = true, adds_twice = true, inf_kept = true, same_structure = true;
    std::string text;
    bool ok() const {
        return same_structure && mismatches == 0 && kinks <= std::max<std::size_t>(1, entries / 50) && finite &&
               adds_twice && inf_kept;
    }
};

template <class M, class X>
AnyGradReport gradcheck_any(M& model, const X& x0, AnyCheckOptions opt = {}) {
    AnyGradReport rep;
    std::ostringstream text;
    X x = x0;
    auto forward = [&] {
        fix_random_seed(opt.mask_seed);
        return model(x, true).first;
    };
    auto Y0 = forward();
    const auto G = random_like(Y0, 777);
    auto Gc = G;
    const std::vector<float*> g_vals = floats_of(Gc);
    auto L = [&] {
        auto y = forward();
        const auto yv = floats_of(y);
        double s = 0;
        for (std::size_t i = 0; i < yv.size() && i < g_vals.size(); ++i) s += double(*yv[i]) * double(*g_vals[i]);
        return s;
    };
    std::vector<std::pair<Node*, std::string>> params;
    for (Node* n : model.walk())
        for (const auto& p : n->param_names())
            if (n->has_param(p)) params.emplace_back(n, p);
    auto fill_grads = [&](float v) {
        for (auto& [n, p] : params)
            for (float& g : n->get_grad(p)) g = v;
    };

    fill_grads(0.0f);
    fix_random_seed(opt.mask_seed);
    auto [Y, backprop] = model(x, true);
    auto dX = backprop(G);
    const auto xv = floats_of(x);
    const auto dxv = floats_of(dX);
    if (xv.size() != dxv.size()) {
        rep.same_structure = false;
        text << "dX has " << dxv.size() << " float values but X has " << xv.size() << "\n";
    }
    std::vector<std::vector<float>> g0;
    for (auto& [n, p] : params) {
        auto g = n->get_grad(p);
        g0.emplace_back(g.begin(), g.end());
    }
    for (float* v : dxv)
        if (!std::isfinite(*v)) rep.finite = false;

    auto close = [&](double a, double b) {
        return std::abs(a - b) <= opt.atol + opt.rtol * std::max(std::abs(a), std::abs(b));
    };
    auto check_entry = [&](float* p, double analytic, const std::string& what, std::size_t i) {
        ++rep.entries;
        const float saved = *p;
        auto fd_at = [&](double h) {
            *p = static_cast<float>(saved + h);
            const double hp = double(*p) - saved;
            const double lp = L();
            *p = static_cast<float>(saved - h);
            const double hm = saved - double(*p);
            const double lm = L();
            *p = saved;
            return (lp - lm) / (hp + hm);
        };
        const double fd = fd_at(opt.eps);
        if (close(analytic, fd)) return;
        if (!close(fd, fd_at(opt.eps / 4))) {
            ++rep.kinks;
            return;
        }
        if (rep.mismatches++ < 8)
            text << what << "[" << i << "]: backprop " << analytic << " vs finite difference " << fd << "\n";
    };
    for (std::size_t i = 0; i < xv.size() && i < dxv.size(); ++i) check_entry(xv[i], *dxv[i], "dX", i);
    for (std::size_t k = 0; k < params.size(); ++k) {
        auto w = params[k].first->get_param(params[k].second);
        const std::string what = "d" + params[k].first->name() + "." + params[k].second;
        for (std::size_t i = 0; i < w.size(); ++i) check_entry(w.data + i, g0[k][i], what, i);
    }

    // A second backprop adds the same gradients again.
    backprop(G);
    for (std::size_t k = 0; k < params.size(); ++k) {
        auto g = params[k].first->get_grad(params[k].second);
        for (std::size_t i = 0; i < g.size(); ++i)
            if (!(std::abs(g.data[i] - 2.0 * g0[k][i]) <= 1e-6 + 1e-5 * std::abs(2.0 * g0[k][i])))
                rep.adds_twice = false;
    }
    // Gradients pre-filled with +inf stay +inf: every entry is added to, none overwritten.
    fill_grads(std::numeric_limits<float>::infinity());
    {
        fix_random_seed(opt.mask_seed);
        auto [Y3, bp3] = model(x, true);
        auto dX3 = bp3(G);
        for (float* v : floats_of(dX3))
            if (!std::isfinite(*v)) rep.finite = false;
        for (auto& [n, p] : params)
            for (float g : n->get_grad(p))
                if (!(std::isinf(g) && g > 0)) rep.inf_kept = false;
    }
    fill_grads(0.0f);
    text << "entries checked: " << rep.entries << ", kinks skipped: " << rep.kinks << "\n";
    rep.text = text.str();
    return rep;
}

// Runs the check and reports each property (the model must be initialised).
template <class M, class X>
void require_gradients(M& model, const X& x, AnyCheckOptions opt = {}) {
    const AnyGradReport r = gradcheck_any(model, x, opt);
    INFO(model.name() << ": " << r.text);
    CHECK(r.same_structure);
    CHECK(r.mismatches == 0);
    CHECK(r.kinks <= std::max<std::size_t>(1, r.entries / 50));
    CHECK(r.finite);
    CHECK(r.adds_twice);
    CHECK(r.inf_kept);
}

// Random parameters everywhere (several layers start at zero, which would hide errors).
template <class M>
void randomize_params(M& model, std::uint64_t seed) {
    for (Node* n : model.walk())
        for (const auto& p : n->param_names())
            if (n->has_param(p)) {
                Rng rng(seed++);
                for (float& v : n->get_param(p)) v = static_cast<float>(rng.uniform(-1.0, 1.0));
            }
}

}  // namespace tenon::testing
