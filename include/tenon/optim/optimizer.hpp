// Optimizers after thinc/optimizers.py: one Optimizer class; Adam() and SGD() configure it
// with Thinc's defaults (Adam: lr 0.001, beta1 0.9, beta2 0.999, eps 1e-8, L2 0 as weight
// decay, grad_clip 1.0 per parameter array, moving averages of the weights kept).
// State (moments, averages, step counts) is keyed by (node id, parameter name).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include "tenon/model/use_params.hpp"
#include "tenon/types/array.hpp"

namespace tenon {

class Node;
namespace detail {
struct OptimizerAccess;  // optimizer_to_bytes / from_bytes (src/serialize.cpp)
}

struct OptimizerOptions {
    double learn_rate = 0.001;
    double L2 = 0.0;
    double beta1 = 0.9;
    double beta2 = 0.999;
    double eps = 1e-8;
    double grad_clip = 1.0;  // 0 disables clipping
    bool L2_is_weight_decay = true;
    bool use_averages = true;
};

class Optimizer {
public:
    explicit Optimizer(OptimizerOptions o = {}) : opts_(o) {}

    // One step for one parameter: clips the gradient, updates the weights and the moving
    // average, and zeroes the gradient (as Thinc's optimizer). Called by finish_update for
    // every parameter of a model.
    // zero_grad = false leaves the gradient as it was (Node::apply_optimizer marks it zero
    // instead, which spares the pass a write and the next product a read).
    void update(std::uint64_t node_id, const std::string& name, Floats1dView weights, Floats1dView gradient,
                bool zero_grad = true);

    double learn_rate() const noexcept { return opts_.learn_rate; }
    void set_learn_rate(double lr) noexcept { opts_.learn_rate = lr; }
    const OptimizerOptions& options() const noexcept { return opts_; }
    // The moving average of a parameter, or nullptr before its first update.
    Floats1d* average(std::uint64_t node_id, const std::string& name);
    // Number of updates applied to a parameter so far.
    int nr_update(std::uint64_t node_id, const std::string& name) const;

private:
    struct State {
        int nr_update = 0;
        Floats1d mom1, mom2, average;
    };
    OptimizerOptions opts_;
    std::map<std::pair<std::uint64_t, std::string>, State> state_;
    friend struct detail::OptimizerAccess;
};

// Thinc's Adam: Adam(0.001) or Adam({.learn_rate = 0.001, .grad_clip = 0}).
inline Optimizer Adam(double learn_rate = 0.001) {
    OptimizerOptions o;
    o.learn_rate = learn_rate;
    return Optimizer(o);
}
inline Optimizer Adam(OptimizerOptions o) { return Optimizer(o); }

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
