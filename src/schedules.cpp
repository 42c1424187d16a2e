// Thinc's schedules (include/tenon/optim/schedules.hpp), each a generator over its own state,
// written after thinc/schedules.py: the same arithmetic in the same order, in double
// precision, so the values equal Thinc's (tests/unit/test_schedules.cpp compares them).
#include "tenon/optim/schedules.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "tenon/error.hpp"

namespace tenon {
namespace {
std::string num(double v) {
    char buf[48];
    std::snprintf(buf, sizeof buf, "%g", v);
    return buf;
}
std::string call(const char* fn, std::initializer_list<std::string> args) {
    std::string s = std::string(fn) + "(";
    bool first = true;
    for (const auto& a : args) {
        s += (first ? "" : ", ") + a;
        first = false;
    }
    return s + ")";
}
[[noreturn]] void bad(const std::string& what, const char* rule) {
    throw Error(what + ": " + rule, "tenon-E253");
}
}  // namespace

void Schedule::throw_empty(const std::string& name) {
    throw Error("schedule " + (name.empty() ? std::string("(no name)") : "'" + name + "'") +
                    ": it has no function to give values (made with none, or moved from): make it with one of the "
                    "schedule functions (constant, compounding, warmup_linear, ...) or a callable",
                "tenon-E253");
}

Schedule constant(double rate) {
    return Schedule(call("constant", {num(rate)}), [rate] { return rate; });
}

Schedule constant_then(double rate, std::size_t steps, Schedule then) {
    std::string name = call("constant_then", {num(rate), std::to_string(steps), then.name()});
    return Schedule(std::move(name), [rate, steps, then = std::move(then), i = std::size_t{0}]() mutable {
        if (i < steps) {
            ++i;
            return rate;
        }
        return then.next();
    });
}

Schedule decaying(double base_rate, double decay, std::size_t t0) {
    return Schedule(call("decaying", {num(base_rate), num(decay), std::to_string(t0)}),
                    [base_rate, decay, t = static_cast<double>(t0)]() mutable {
                        const double v = base_rate * (1.0 / (1.0 + decay * t));
                        t += 1.0;
                        return v;
                    });
}

Schedule compounding(double start, double stop, double compound) {
    const std::string name = call("compounding", {num(start), num(stop), num(compound)});
    if (!(compound > 0.0) || !std::isfinite(compound)) bad(name, "the compound factor must be finite and > 0");
    return Schedule(name, [start, stop, compound, cur = start]() mutable {
        // Clipped at stop, from below or from above (a series that shrinks).
        const double v = start > stop ? std::max(cur, stop) : std::min(cur, stop);
        cur *= compound;
        return v;
    });
}

Schedule slanted_triangular(double max_rate, std::size_t num_steps, double cut_frac, double ratio, double t0) {
    const std::string name = call("slanted_triangular", {num(max_rate), std::to_string(num_steps), num(cut_frac), num(ratio)});
    const auto cut = static_cast<double>(static_cast<long long>(static_cast<double>(num_steps) * cut_frac));
    if (!(cut >= 1.0)) bad(name, "num_steps * cut_frac must be at least 1 (the steps of the rise)");
    return Schedule(name, [max_rate, cut_frac, ratio, cut, t = t0]() mutable {
        t += 1.0;
        const double p = t < cut ? t / cut : 1.0 - ((t - cut) / (cut * (1.0 / cut_frac - 1.0)));
        return max_rate * (1.0 + p * (ratio - 1.0)) * (1.0 / ratio);
    });
}

Schedule warmup_linear(double initial_rate, std::size_t warmup_steps, std::size_t total_steps) {
    return Schedule(call("warmup_linear", {num(initial_rate), std::to_string(warmup_steps), std::to_string(total_steps)}),
                    [initial_rate, w = static_cast<double>(warmup_steps), total = static_cast<double>(total_steps),
                     step = 0.0]() mutable {
                        const double factor = step < w ? step / std::max(1.0, w)
                                                       : std::max(0.0, (total - step) / std::max(1.0, total - w));
                        step += 1.0;
                        return factor * initial_rate;
                    });
}

Schedule cyclic_triangular(double min_lr, double max_lr, std::size_t period) {
    const std::string name = call("cyclic_triangular", {num(min_lr), num(max_lr), std::to_string(period)});
    if (period == 0) bad(name, "the period must be at least 1 step");
    return Schedule(name, [min_lr, max_lr, p = static_cast<double>(period), it = 1.0]() mutable {
        const double cycle = std::floor(1.0 + it / (2.0 * p));
        const double x = std::abs(it / p - 2.0 * cycle + 1.0);
        const double relative = std::max(0.0, 1.0 - x);
        it += 1.0;
        return min_lr + (max_lr - min_lr) * relative;
    });
}

}  // namespace tenon
