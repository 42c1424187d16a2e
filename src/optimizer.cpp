// Thinc's optimizer step, in the same order: L2 (as gradient term), clip, Adam or SGD,
// weight decay, moving average.
#include "tenon/optim/optimizer.hpp"

#include <algorithm>
#include <cmath>

#include "tenon/model/node.hpp"

namespace tenon {

void Optimizer::update(std::uint64_t node_id, const std::string& name, Floats1dView w, Floats1dView g) {
    const std::size_t n = w.size();
    if (n == 0) return;
    State& s = state_[{node_id, name}];
    const int t = ++s.nr_update;
    float* W = w.data();
    float* G = g.data();
    const auto lr = static_cast<float>(opts_.learn_rate);

    if (opts_.L2 != 0.0 && !opts_.L2_is_weight_decay)
        for (std::size_t i = 0; i < n; ++i) G[i] += static_cast<float>(opts_.L2) * W[i];
    if (opts_.grad_clip > 0.0) {
        double sq = 0.0;
        for (std::size_t i = 0; i < n; ++i) sq += double(G[i]) * G[i];
        const double norm = std::sqrt(sq);
        if (norm >= opts_.grad_clip) {
            const auto scale = static_cast<float>(opts_.grad_clip / norm);
            for (std::size_t i = 0; i < n; ++i) G[i] *= scale;
        }
    }
    if (opts_.beta1 > 0.0 && opts_.beta2 > 0.0) {
        if (s.mom1.size() != n) {
            s.mom1 = Floats1d({n});
            s.mom2 = Floats1d({n});
        }
        const auto b1 = static_cast<float>(opts_.beta1), b2 = static_cast<float>(opts_.beta2);
        const double fix1 = 1.0 - std::pow(opts_.beta1, t), fix2 = 1.0 - std::pow(opts_.beta2, t);
        const auto lr_t = static_cast<float>(opts_.learn_rate * std::sqrt(fix2) / fix1);
        const auto eps = static_cast<float>(opts_.eps);
        float* m1 = s.mom1.data();
        float* m2 = s.mom2.data();
        for (std::size_t i = 0; i < n; ++i) {
            m1[i] = b1 * m1[i] + (1.0f - b1) * G[i];
            m2[i] = b2 * m2[i] + (1.0f - b2) * G[i] * G[i];
            W[i] -= lr_t * m1[i] / (std::sqrt(m2[i]) + eps);
        }
    } else if (opts_.beta2 > 0.0) {
        throw Error("Optimizer: beta2 > 0 with beta1 == 0 is not a supported optimizer; use Adam() or SGD()",
                    "tenon-E120");
    } else {
        for (std::size_t i = 0; i < n; ++i) W[i] -= lr * G[i];
    }
    if (opts_.L2 != 0.0 && opts_.L2_is_weight_decay) {
        const auto k = static_cast<float>(1.0 - opts_.learn_rate * opts_.L2);
        for (std::size_t i = 0; i < n; ++i) W[i] *= k;
    }
    if (opts_.use_averages) {
        if (s.average.size() != n) s.average = Floats1d({n});
        const auto decay = static_cast<float>(std::min((1.0 + t) / (10.0 + t), 0.9999));
        float* A = s.average.data();
        for (std::size_t i = 0; i < n; ++i) A[i] -= (1.0f - decay) * (A[i] - W[i]);
    }
}

Floats1d* Optimizer::average(std::uint64_t node_id, const std::string& name) {
    auto it = state_.find({node_id, name});
    if (it == state_.end() || it->second.average.size() == 0) return nullptr;
    return &it->second.average;
}

int Optimizer::nr_update(std::uint64_t node_id, const std::string& name) const {
    auto it = state_.find({node_id, name});
    return it == state_.end() ? 0 : it->second.nr_update;
}

UseAverages::UseAverages(Node& model, Optimizer& optimizer) : model_(model), optimizer_(optimizer) { swap(); }
UseAverages::~UseAverages() { swap(); }

void UseAverages::swap() {
    for (Node* node : model_.walk())
        for (const auto& name : node->param_names()) {
            if (!node->has_param(name)) continue;
            Floats1d* avg = optimizer_.average(node->id(), name);
            if (!avg) continue;
            ParamView p = node->get_param(name);
            std::swap_ranges(p.begin(), p.end(), avg->data());
        }
}

}  // namespace tenon
