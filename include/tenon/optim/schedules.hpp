// Thinc's schedules (thinc/schedules.py): endless series of values, one per step, for an
// optimizer's options (Optimizer::schedule, step_schedules: a learning rate that warms up and
// decays) and for batch sizes (minibatch, minibatch_by_words: batches that grow). As in
// Thinc each is a generator: next() gives the next value, the first call the first one; a
// copy goes on from where the original was. Values are computed as Thinc computes them, in
// double precision, step by step (compounding multiplies the previous value, so a batch size
// reaches an integer at the same step as Thinc's).
//
//   Optimizer opt = Adam(warmup_linear(0.001, 250, 10000));   // then opt.step_schedules() per step
//   for (auto& batch : minibatch(compounding(4.0, 32.0, 1.001), docs, shuffle)) ...
#pragma once
#include <cstddef>
#include <functional>
#include <string>
#include <utility>

namespace tenon {

class Schedule {
public:
    // A function that gives the next value at each call, and a name for messages
    // ("warmup_linear(0.001, 250, 10000)").
    // (No function, or a schedule moved from: tenon-E253 at the call that needs a value.)
    Schedule(std::string name, std::function<double()> next) : name_(std::move(name)), next_(std::move(next)) {}
    double next() {
        if (!next_) [[unlikely]]
            throw_empty(name_);
        return next_();
    }
    const std::string& name() const noexcept { return name_; }

private:
    [[noreturn]] static void throw_empty(const std::string& name);  // (src/schedules.cpp)
    std::string name_;
    std::function<double()> next_;
};

// `rate` at every step (constant.v1).
Schedule constant(double rate);
// `rate` for `steps` steps, then the values of `then` (constant_then.v1).
Schedule constant_then(double rate, std::size_t steps, Schedule then);
// base_rate / (1 + decay * t), t = t0, t0 + 1, ... (decaying.v1).
Schedule decaying(double base_rate, double decay, std::size_t t0 = 0);
// start, start * compound, start * compound^2, ... clipped at stop (compounding.v1).
Schedule compounding(double start, double stop, double compound);
// Howard and Ruder's slanted triangular rates (slanted_triangular.v1).
Schedule slanted_triangular(double max_rate, std::size_t num_steps, double cut_frac = 0.1, double ratio = 32.0,
                            double t0 = 0.0);
// From 0 up to initial_rate over warmup_steps, then down to 0 at total_steps (warmup_linear.v1).
Schedule warmup_linear(double initial_rate, std::size_t warmup_steps, std::size_t total_steps);
// Between min_lr and max_lr and back, a triangle of 2 * period steps (cyclic_triangular.v1).
Schedule cyclic_triangular(double min_lr, double max_lr, std::size_t period);

}  // namespace tenon
