// Optimizers after thinc/optimizers.py: one Optimizer class; Adam() and SGD() configure it
// with Thinc's defaults (Adam: lr 0.001, beta1 0.9, beta2 0.999, eps 1e-8, L2 0 as weight
// decay, grad_clip 1.0 per parameter array, moving averages of the weights kept).
// State (moments, averages, step counts) is keyed by (node id, parameter name).
// Non-finite gradients (docs/reliability.md, "Non-finite numbers"): finish_update checks every
// gradient of the model before it changes any parameter, in the pass that computes the
// clipping norms; a NaN or inf refuses the step (tenon-E250) or skips it (NonFinite::skip).
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "tenon/backend/ops.hpp"
#include "tenon/model/use_params.hpp"
#include "tenon/optim/schedules.hpp"
#include "tenon/types/array.hpp"

namespace tenon {

class Node;
namespace detail {
struct OptimizerAccess;  // optimizer_to_bytes / from_bytes (src/serialize.cpp)
}

// What a step does when a gradient holds NaN or inf: raise (tenon-E250, nothing changed) or
// skip the step, zero the gradients and count it (Optimizer::skipped_steps), as the loss
// scaling of mixed-precision training does.
enum class NonFinite { raise, skip };

// Checked when the optimizer is made (tenon-E251): learn_rate finite and >= 0, L2 finite and
// >= 0, beta1 and beta2 in [0, 1), eps finite and > 0, grad_clip >= 0 (inf: never clips).
struct OptimizerOptions {
    double learn_rate = 0.001;
    double L2 = 0.0;
    double beta1 = 0.9;
    double beta2 = 0.999;
    double eps = 1e-8;
    double grad_clip = 1.0;  // 0 disables clipping
    bool L2_is_weight_decay = true;
    bool use_averages = true;
    NonFinite on_nonfinite = NonFinite::raise;
};

class Optimizer {
public:
    // Throws tenon-E251 (naming the option and its value) for options out of range.
    explicit Optimizer(OptimizerOptions o = {});
    // (Out of line, src/optimizer.cpp: not compiled again in every training program.)
    ~Optimizer();
    Optimizer(const Optimizer&);
    Optimizer(Optimizer&&) noexcept;
    Optimizer& operator=(const Optimizer&);
    Optimizer& operator=(Optimizer&&) noexcept;

    // One step for one parameter: clips the gradient, updates the weights and the moving
    // average, and zeroes the gradient (as Thinc's optimizer). A gradient with NaN or inf is
    // refused (tenon-E250, naming `name`) or skipped (on_nonfinite) before anything changes.
    // zero_grad = false leaves the gradient as it was (Node::apply_optimizer marks it zero
    // instead, which spares the pass a write and the next product a read).
    void update(std::uint64_t node_id, const std::string& name, Floats1dView weights, Floats1dView gradient,
                bool zero_grad = true);

    // finish_update's step over a whole model (Node::apply_optimizer_tree), in two walks over
    // the same parameters in the same order: check_gradient for each (the clipping norm and
    // the finiteness check in one pass; nothing changes), then commit_step, which throws
    // tenon-E250 for the first parameter with a NaN or inf (named by its path from `root`,
    // with the count) or, with NonFinite::skip, counts the step and returns false; when it
    // returns true, apply_checked for each parameter.
    void begin_step() noexcept;
    void check_gradient(const Node& root, const Node& node, const std::string& name, Floats1dView gradient,
                        bool known_zero);
    bool commit_step();
    void apply_checked(const Node& node, const std::string& name, Floats1dView weights, Floats1dView gradient,
                       bool zero_grad = true);
    // The end of finish_update's step: on a backend that fuses the optimizer (the device
    // backend: Ops::fuses_optimizer), apply_checked only lists each parameter's segment and
    // this runs them all in one pass (Ops::adam_segments / sgd_segments).
    void end_step();
    // Moves this optimizer's state for `model`'s parameters (moments, averages) to memory `m`
    // (to_gpu / to_cpu with the optimizer do it). A step also moves a parameter's state to its
    // backend's memory when it finds it elsewhere.
    void move_state(const Node& model, Memory m);

    double learn_rate() const noexcept { return opts_.learn_rate; }
    // Throws tenon-E251 for a learning rate that is NaN, inf or negative.
    void set_learn_rate(double lr);
    const OptimizerOptions& options() const noexcept { return opts_; }
    // Thinc's schedules for an option: "learn_rate", "L2", "beta1" (Thinc's "b1"), "beta2"
    // ("b2"), "eps" or "grad_clip" takes the schedule's first value now and its next one at
    // each step_schedules() (Thinc's optimizer.step_schedules(), once per training step, after
    // finish_update). A value out of the option's range is tenon-E251 naming the schedule; an
    // unknown option tenon-E253. A second schedule for an option replaces the first. An
    // optimizer's file (optimizer_to_bytes) keeps the options' values, not the schedules.
    Optimizer& schedule(const std::string& option, Schedule s);
    void step_schedules();
    // Steps skipped for a NaN or inf gradient (NonFinite::skip).
    std::size_t skipped_steps() const noexcept { return skipped_; }
    // The moving average of a parameter, or nullptr before its first update.
    Floats1d* average(std::uint64_t node_id, const std::string& name);
    // Number of updates applied to a parameter so far.
    int nr_update(std::uint64_t node_id, const std::string& name) const;

private:
    struct State {
        int nr_update = 0;
        Floats1d mom1, mom2, average;
    };
    // The passes run on the parameter's backend (its node's ops(); update(): the CPU's).
    void step(const Ops& ops, State& s, Floats1dView w, Floats1dView g, bool zero_grad, double sum_squares,
              bool fuse = false);
    // A segment of another backend or other shared values than those listed runs them first.
    void queue(const Ops& ops, bool adam, float b1, float b2, float eps, float wd);
    // The segments of the step in progress on a fusing backend (end_step runs them).
    std::vector<OptSegment> pending_;
    const Ops* pending_ops_ = nullptr;
    bool pending_adam_ = true;
    float pending_b1_ = 0, pending_b2_ = 0, pending_eps_ = 0, pending_wd_ = 0;

    struct Scheduled {
        std::string option;
        double OptimizerOptions::*field;
        Schedule schedule;
    };
    void take_next(Scheduled& s);

    OptimizerOptions opts_;
    std::vector<Scheduled> schedules_;
    std::map<std::pair<std::uint64_t, std::string>, State> state_;
    std::size_t skipped_ = 0;
    // The step in progress (finish_update): each parameter's sum of squared gradients, in
    // walk order, and the first parameter with non-finite values (its path, its count).
    std::vector<double> sums_;
    std::size_t cursor_ = 0;
    std::size_t bad_count_ = 0, bad_params_ = 0;
    std::string bad_where_;
    friend struct detail::OptimizerAccess;
};

// Thinc's Adam: Adam(0.001) or Adam({.learn_rate = 0.001, .grad_clip = 0}).
inline Optimizer Adam(double learn_rate = 0.001) {
    OptimizerOptions o;
    o.learn_rate = learn_rate;
    return Optimizer(o);
}
inline Optimizer Adam(OptimizerOptions o) { return Optimizer(o); }
// Adam with a learning-rate schedule: Adam(warmup_linear(0.001, 250, 10000)).
inline Optimizer Adam(Schedule learn_rate) {
    Optimizer o{OptimizerOptions{}};
    o.schedule("learn_rate", std::move(learn_rate));
    return o;
}

// Thinc's SGD: plain gradient descent (beta1 = beta2 = 0), grad_clip 1.0, averages kept.
inline Optimizer SGD(double learn_rate, double L2 = 0.0, double grad_clip = 1.0, bool use_averages = true) {
    OptimizerOptions o;
    o.learn_rate = learn_rate;
    o.L2 = L2;
    o.beta1 = 0.0;
    o.beta2 = 0.0;
    o.grad_clip = grad_clip;
    o.use_averages = use_averages;
    return Optimizer(o);
}
inline Optimizer SGD(Schedule learn_rate, double L2 = 0.0, double grad_clip = 1.0, bool use_averages = true) {
    Optimizer o = SGD(0.0, L2, grad_clip, use_averages);
    o.schedule("learn_rate", std::move(learn_rate));
    return o;
}

// Swaps the optimizer's moving averages into a model for as long as it lives (Thinc's
// `with model.use_params(optimizer.averages)`): evaluate with the averaged weights.
// It is use_params (tenon/model/use_params.hpp) with the averages: averages of another size
// than the parameter (the model was re-initialised with other widths) are tenon-E235.
class UseAverages {
public:
    UseAverages(Node& model, Optimizer& optimizer);
    ~UseAverages();
    UseAverages(const UseAverages&) = delete;
    UseAverages& operator=(const UseAverages&) = delete;

private:
    UseParams params_;
};

}  // namespace tenon
