// Thinc's optimizer step, in the same order: L2 (as gradient term), clip, Adam or SGD,
// weight decay, moving average; everything after the clipping norm is one pass.
#include "tenon/optim/optimizer.hpp"

#include <algorithm>
#include <cmath>

#include "cpu/kernels.hpp"
#include "tenon/backend/cpu/threads.hpp"
#include "tenon/model/node.hpp"

namespace tenon {

namespace {
// The passes run over fixed chunks of a parameter, spread over the worker threads. The
// chunks do not depend on the thread count, and the clipping norm adds the chunks' sums in
// chunk order, so a step gives the same bits on any number of threads.
constexpr std::size_t kChunk = std::size_t{1} << 14;

// Each thread takes a contiguous run of chunks (cpu::parallel_ranges), as the matrix
// products split their output: a core tends to find its part of the gradient, the weights
// and the moments in its own cache from the previous step.
template <class F>
void over_chunks(std::size_t n, F&& f) {
    const std::size_t chunks = (n + kChunk - 1) / kChunk;
    cpu::parallel_ranges(chunks, [&](std::size_t c0, std::size_t c1) {
        for (std::size_t c = c0; c < c1; ++c) {
            const std::size_t begin = c * kChunk;
            f(begin, std::min(n, begin + kChunk) - begin);
        }
    });
}

double chunked_sum_squares(const float* g, std::size_t n) {
    constexpr std::size_t kMaxChunks = 256;
    const std::size_t chunks = (n + kChunk - 1) / kChunk;
    if (chunks > kMaxChunks) {  // a parameter of more than 4M values: serial, in chunk order
        double s = 0;
        for (std::size_t b = 0; b < n; b += kChunk) s += cpu::sum_squares(g + b, std::min(kChunk, n - b));
        return s;
    }
    double part[kMaxChunks];
    over_chunks(n, [&](std::size_t b, std::size_t len) { part[b / kChunk] = cpu::sum_squares(g + b, len); });
    double s = 0;
    for (std::size_t c = 0; c < chunks; ++c) s += part[c];
    return s;
}
}  // namespace

void Optimizer::update(std::uint64_t node_id, const std::string& name, Floats1dView w, Floats1dView g,
                       bool zero_grad) {
    const std::size_t n = w.size();
    if (n == 0) return;
    State& s = state_[{node_id, name}];
    const int t = ++s.nr_update;
    float* W = w.data();
    float* G = g.data();

    // L2 as a gradient term (when it is not weight decay) comes before clipping, as in Thinc.
    if (opts_.L2 != 0.0 && !opts_.L2_is_weight_decay)
        for (std::size_t i = 0; i < n; ++i) G[i] += static_cast<float>(opts_.L2) * W[i];
    float gscale = 1.0f;
    if (opts_.grad_clip > 0.0) {
        const double norm = std::sqrt(chunked_sum_squares(G, n));
        if (norm >= opts_.grad_clip) gscale = static_cast<float>(opts_.grad_clip / norm);
    }
    const auto wd = static_cast<float>(opts_.L2 != 0.0 && opts_.L2_is_weight_decay ? 1.0 - opts_.learn_rate * opts_.L2
                                                                                     : 1.0);
    float* A = nullptr;
    if (opts_.use_averages) {
        if (s.average.size() != n) s.average = Floats1d({n});
        A = s.average.data();
    }
    const auto decay = static_cast<float>(std::min((1.0 + t) / (10.0 + t), 0.9999));

    if (opts_.beta1 > 0.0 && opts_.beta2 > 0.0) {
        if (s.mom1.size() != n) {
            s.mom1 = Floats1d({n});
            s.mom2 = Floats1d({n});
        }
        // Thinc folds the bias corrections into the learning rate.
        const double fix1 = 1.0 - std::pow(opts_.beta1, t), fix2 = 1.0 - std::pow(opts_.beta2, t);
        const auto b1 = static_cast<float>(opts_.beta1), b2 = static_cast<float>(opts_.beta2);
        const auto lr_t = static_cast<float>(opts_.learn_rate * std::sqrt(fix2) / fix1);
        const auto eps = static_cast<float>(opts_.eps);
        float *M1 = s.mom1.data(), *M2 = s.mom2.data();
        over_chunks(n, [&](std::size_t b, std::size_t len) {
            cpu::adam_pass(W + b, G + b, M1 + b, M2 + b, A ? A + b : nullptr, len, gscale, b1, b2, lr_t, eps, decay, wd,
                           zero_grad);
        });
    } else if (opts_.beta2 > 0.0) {
        throw Error("Optimizer: beta2 > 0 with beta1 == 0 is not a supported optimizer; use Adam() or SGD()",
                    "tenon-E120");
    } else {
        const auto lr = static_cast<float>(opts_.learn_rate);
        over_chunks(n, [&](std::size_t b, std::size_t len) {
            cpu::sgd_pass(W + b, G + b, A ? A + b : nullptr, len, gscale, lr, decay, wd, zero_grad);
        });
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

namespace {
ParamValues averages_of(Node& model, Optimizer& optimizer) {
    ParamValues out;
    for (Node* node : model.walk())
        for (const auto& name : node->param_names())
            if (Floats1d* avg = optimizer.average(node->id(), name))
                out.emplace(ParamKey{node->id(), name}, CParamView{avg->data(), {avg->size()}, 1});
    return out;
}
}  // namespace

UseAverages::UseAverages(Node& model, Optimizer& optimizer) : params_(model, averages_of(model, optimizer)) {}
UseAverages::~UseAverages() = default;

}  // namespace tenon
