// Thinc's optimizer step, in the same order: L2 (as gradient term), clip, Adam or SGD,
// weight decay, moving average; everything after the clipping norm is one pass.
#include "tenon/optim/optimizer.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "cpu/kernels.hpp"
#include "tenon/backend/cpu/threads.hpp"
#include "tenon/io/state.hpp"
#include "tenon/model/finite.hpp"
#include "tenon/model/node.hpp"

namespace tenon {

namespace {
// The sum of squares of g and, in `bad`, how many of its values are NaN or inf: one pass on
// the normal path (the clipping norm's), a second only when the sum is not finite.
double checked_sum_squares(const Ops& ops, const float* g, std::size_t n, std::size_t& bad) {
    bad = 0;
    if (n == 0) return 0.0;
    const double s = ops.sum_squares(g, n);
    if (!std::isfinite(s)) bad = ops.count_nonfinite(g, n);
    return s;
}

std::string number(double v) { return detail::number_str(v); }

[[noreturn]] void bad_option(const char* name, double value, const char* rule) {
    throw Error(std::string("Optimizer: ") + name + " = " + number(value) + " is out of range: " + rule,
                "tenon-E251");
}

void validate(const OptimizerOptions& o) {
    if (!std::isfinite(o.learn_rate) || o.learn_rate < 0.0)
        bad_option("learn_rate", o.learn_rate, "it must be finite and >= 0");
    if (!std::isfinite(o.L2) || o.L2 < 0.0) bad_option("L2", o.L2, "it must be finite and >= 0");
    if (!(o.beta1 >= 0.0 && o.beta1 < 1.0)) bad_option("beta1", o.beta1, "it must be in [0, 1)");
    if (!(o.beta2 >= 0.0 && o.beta2 < 1.0)) bad_option("beta2", o.beta2, "it must be in [0, 1)");
    if (!std::isfinite(o.eps) || !(o.eps > 0.0)) bad_option("eps", o.eps, "it must be finite and > 0");
    // (The step computes in float: a value that is 0 or inf as a float is the same mistake.)
    if (!(static_cast<float>(o.eps) > 0.0f) || !std::isfinite(static_cast<float>(o.eps)))
        bad_option("eps", o.eps, "it must be a float > 0 (at least about 1.4e-45; Adam's default is 1e-8)");
    if (!std::isfinite(static_cast<float>(o.learn_rate)))
        bad_option("learn_rate", o.learn_rate, "it must be finite as a float (below about 3.4e38)");
    if (!std::isfinite(static_cast<float>(o.L2))) bad_option("L2", o.L2, "it must be finite as a float (below about 3.4e38)");
    if (!(o.grad_clip >= 0.0)) bad_option("grad_clip", o.grad_clip, "it must be >= 0 (0: no clipping)");
    if (o.on_nonfinite != NonFinite::raise && o.on_nonfinite != NonFinite::skip)
        bad_option("on_nonfinite", static_cast<double>(o.on_nonfinite), "it must be NonFinite::raise or skip");
}

[[noreturn]] void throw_nonfinite(const std::string& where, std::size_t count, std::size_t others) {
    std::string msg = where + ": " + std::to_string(count) + " non-finite gradient value" + (count == 1 ? "" : "s") +
                      " (NaN or inf): the optimizer refused the step and changed no parameter, moment or gradient";
    if (others)
        msg += " (" + std::to_string(others) + " other parameter" + (others == 1 ? " has" : "s have") +
               " non-finite gradients too)";
    msg += "; a NaN loss, a learning rate too high or non-finite data are the usual causes "
           "(OptimizerOptions::on_nonfinite = NonFinite::skip skips such steps instead)";
    throw Error(msg, "tenon-E250");
}
}  // namespace

Optimizer::Optimizer(OptimizerOptions o) : opts_(o) { validate(opts_); }
Optimizer::~Optimizer() = default;
Optimizer::Optimizer(const Optimizer&) = default;
Optimizer::Optimizer(Optimizer&&) noexcept = default;
Optimizer& Optimizer::operator=(const Optimizer&) = default;
Optimizer& Optimizer::operator=(Optimizer&&) noexcept = default;

void Optimizer::set_learn_rate(double lr) {
    OptimizerOptions o = opts_;
    o.learn_rate = lr;
    validate(o);
    opts_.learn_rate = lr;
}

Optimizer& Optimizer::schedule(const std::string& option, Schedule sch) {
    static const std::pair<const char*, double OptimizerOptions::*> fields[] = {
        {"learn_rate", &OptimizerOptions::learn_rate}, {"L2", &OptimizerOptions::L2},
        {"beta1", &OptimizerOptions::beta1},           {"b1", &OptimizerOptions::beta1},
        {"beta2", &OptimizerOptions::beta2},           {"b2", &OptimizerOptions::beta2},
        {"eps", &OptimizerOptions::eps},               {"grad_clip", &OptimizerOptions::grad_clip}};
    double OptimizerOptions::*field = nullptr;
    for (const auto& [name, f] : fields)
        if (option == name) field = f;
    if (!field)
        throw Error("Optimizer::schedule: no option '" + option + "' takes a schedule (" + sch.name() +
                        "); the options are learn_rate, L2, beta1 (b1), beta2 (b2), eps and grad_clip",
                    "tenon-E253");
    Scheduled s{option, field, std::move(sch)};
    take_next(s);  // the first value, checked before the schedule is kept
    for (auto& old : schedules_)
        if (old.field == field) {
            old = std::move(s);
            return *this;
        }
    schedules_.push_back(std::move(s));
    return *this;
}

void Optimizer::take_next(Scheduled& s) {
    OptimizerOptions o = opts_;
    const double v = s.schedule.next();
    o.*s.field = v;
    try {
        validate(o);
    } catch (const Error& e) {
        throw Error(e.message() + " (the value of " + s.schedule.name() + " for " + s.option + ")", "tenon-E251");
    }
    opts_ = o;
}

void Optimizer::step_schedules() {
    for (auto& s : schedules_) take_next(s);
}

void Optimizer::update(std::uint64_t node_id, const std::string& name, Floats1dView w, Floats1dView g,
                       bool zero_grad) {
    const std::size_t n = w.size();
    if (g.size() != n)
        throw ShapeError("Optimizer::update: parameter " + name + ": the gradient has " + std::to_string(g.size()) +
                             " values but the weights have " + std::to_string(n) + "; they must be the same size",
                         "tenon-E108");
    if (n == 0) return;
    std::size_t bad = 0;
    const double ssq = checked_sum_squares(cpu_ops(), g.data(), n, bad);
    if (bad != 0) {
        if (opts_.on_nonfinite == NonFinite::raise) throw_nonfinite("parameter " + name, bad, 0);
        ++skipped_;
        if (zero_grad) std::fill(g.data(), g.data() + n, 0.0f);
        return;
    }
    step(cpu_ops(), state_[{node_id, name}], w, g, zero_grad, ssq);
}

void Optimizer::begin_step() noexcept {
    pending_.clear();  // (a step that threw before its end)
    sums_.clear();
    cursor_ = 0;
    bad_count_ = 0;
    bad_params_ = 0;
    bad_where_.clear();
}

void Optimizer::check_gradient(const Node& root, const Node& node, const std::string& name, Floats1dView g,
                               bool known_zero) {
    std::size_t bad = 0;
    const double ssq = known_zero ? 0.0 : checked_sum_squares(node.ops(), g.data(), g.size(), bad);
    sums_.push_back(ssq);
    if (bad == 0) return;
    if (bad_params_++ == 0) {
        bad_count_ = bad;
        bad_where_ = node_path(root, node) + ": parameter " + name;
    }
}

bool Optimizer::commit_step() {
    if (opts_.beta2 > 0.0 && !(opts_.beta1 > 0.0))  // before any parameter changes
        throw Error("Optimizer: beta2 > 0 with beta1 == 0 is not a supported optimizer; use Adam() or SGD()",
                    "tenon-E120");
    if (bad_params_ == 0) return true;
    if (opts_.on_nonfinite == NonFinite::raise) throw_nonfinite(bad_where_, bad_count_, bad_params_ - 1);
    ++skipped_;
    return false;
}

void Optimizer::apply_checked(const Node& node, const std::string& name, Floats1dView w, Floats1dView g,
                              bool zero_grad) {
    const double ssq = cursor_ < sums_.size() ? sums_[cursor_++] : -1.0;  // check_gradient's, in the same order
    if (w.size() == 0) return;
    step(node.ops(), state_[{node.id(), name}], w, g, zero_grad, ssq, /*fuse=*/true);
}

void Optimizer::queue(const Ops& ops, bool adam, float b1, float b2, float eps, float wd) {
    if (!pending_.empty() && (pending_ops_ != &ops || pending_adam_ != adam || pending_b1_ != b1 ||
                              pending_b2_ != b2 || pending_eps_ != eps || pending_wd_ != wd))
        end_step();
    pending_ops_ = &ops;
    pending_adam_ = adam;
    pending_b1_ = b1;
    pending_b2_ = b2;
    pending_eps_ = eps;
    pending_wd_ = wd;
}

void Optimizer::end_step() {
    if (pending_.empty()) return;
    const Ops& ops = *pending_ops_;
    std::vector<OptSegment> segs;
    segs.swap(pending_);  // (empty again even if the pass throws)
    if (pending_adam_)
        ops.adam_segments(segs.data(), segs.size(), pending_b1_, pending_b2_, pending_eps_, pending_wd_);
    else
        ops.sgd_segments(segs.data(), segs.size(), pending_wd_);
    segs.clear();
    pending_.swap(segs);  // keep the capacity: the next step lists as many
}

namespace {
void move_array(Floats1d& a, Memory m) {
    if (a.memory() == m) return;
    Floats1d t(a.shape(), uninitialized, m);
    detail::copy_bytes(t.data(), m, a.data(), a.memory(), a.size() * sizeof(float));
    a = std::move(t);
}
}  // namespace

void Optimizer::move_state(const Node& model, Memory m) {
    for (const Node* node : model.walk())
        for (const auto& name : node->param_names()) {
            auto it = state_.find({node->id(), name});
            if (it == state_.end()) continue;
            move_array(it->second.mom1, m);
            move_array(it->second.mom2, m);
            move_array(it->second.average, m);
        }
}

// One step for one parameter whose gradient is finite; ssq: its sum of squares (< 0: not known).
void Optimizer::step(const Ops& ops, State& s, Floats1dView w, Floats1dView g, bool zero_grad, double ssq, bool fuse) {
    const std::size_t n = w.size();
    if (opts_.beta2 > 0.0 && !(opts_.beta1 > 0.0))
        throw Error("Optimizer: beta2 > 0 with beta1 == 0 is not a supported optimizer; use Adam() or SGD()",
                    "tenon-E120");
    const int t = ++s.nr_update;
    float* W = w.data();
    float* G = g.data();

    // L2 as a gradient term (when it is not weight decay) comes before clipping, as in Thinc.
    if (opts_.L2 != 0.0 && !opts_.L2_is_weight_decay) {
        ops.axpy(static_cast<float>(opts_.L2), W, G, n);  // (on the parameter's backend)
        ssq = -1.0;
    }
    float gscale = 1.0f;
    if (opts_.grad_clip > 0.0) {
        std::size_t bad = 0;
        if (ssq < 0.0) ssq = checked_sum_squares(ops, G, n, bad);
        const double norm = std::sqrt(ssq);
        if (norm >= opts_.grad_clip) gscale = static_cast<float>(opts_.grad_clip / norm);
    }
    const auto wd = static_cast<float>(opts_.L2 != 0.0 && opts_.L2_is_weight_decay ? 1.0 - opts_.learn_rate * opts_.L2
                                                                                     : 1.0);
    // The state lives where the parameter's backend keeps its arrays (made there, or moved
    // there when the model moved without its optimizer).
    const Memory mem = ops.memory();
    float* A = nullptr;
    if (opts_.use_averages) {
        if (s.average.size() != n) s.average = Floats1d({n}, mem);
        move_array(s.average, mem);
        A = s.average.data();
    }
    const auto decay = static_cast<float>(std::min((1.0 + t) / (10.0 + t), 0.9999));

    if (opts_.beta1 > 0.0 && opts_.beta2 > 0.0) {
        if (s.mom1.size() != n) {
            s.mom1 = Floats1d({n}, mem);
            s.mom2 = Floats1d({n}, mem);
        }
        move_array(s.mom1, mem);
        move_array(s.mom2, mem);
        // Thinc folds the bias corrections into the learning rate.
        const double fix1 = 1.0 - std::pow(opts_.beta1, t), fix2 = 1.0 - std::pow(opts_.beta2, t);
        const auto b1 = static_cast<float>(opts_.beta1), b2 = static_cast<float>(opts_.beta2);
        const auto lr_t = static_cast<float>(opts_.learn_rate * std::sqrt(fix2) / fix1);
        const auto eps = static_cast<float>(opts_.eps);
        float *M1 = s.mom1.data(), *M2 = s.mom2.data();
        if (fuse && ops.fuses_optimizer()) {
            queue(ops, true, b1, b2, eps, wd);
            pending_.push_back(OptSegment{W, G, M1, M2, A, n, gscale, lr_t, decay, zero_grad});
        } else {
            ops.adam(W, G, M1, M2, A, n, gscale, b1, b2, lr_t, eps, decay, wd, zero_grad);
        }
    } else if (opts_.beta2 > 0.0) {
        throw Error("Optimizer: beta2 > 0 with beta1 == 0 is not a supported optimizer; use Adam() or SGD()",
                    "tenon-E120");
    } else {
        const auto lr = static_cast<float>(opts_.learn_rate);
        if (fuse && ops.fuses_optimizer()) {
            queue(ops, false, 0.0f, 0.0f, 0.0f, wd);
            pending_.push_back(OptSegment{W, G, nullptr, nullptr, A, n, gscale, lr, decay, zero_grad});
        } else {
            ops.sgd(W, G, A, n, gscale, lr, decay, wd, zero_grad);
        }
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

std::size_t detail::count_nonfinite(const float* x, std::size_t n) noexcept { return cpu::count_nonfinite(x, n); }
std::size_t detail::first_nonfinite(const float* x, std::size_t n) noexcept {
    std::size_t i = 0;
    while (i < n && std::isfinite(x[i])) ++i;
    return i;
}

std::size_t detail::count_nonfinite_on(const Ops* ops, const float* x, std::size_t n) {
    if (ops && ops->memory() == Memory::device) return n ? ops->count_nonfinite(x, n) : 0;
    return cpu::count_nonfinite(x, n);
}

void detail::throw_nonfinite_input(const char* prefix, const std::string& who, const char* call, const char* what, std::size_t count,
                                   const std::size_t* shape, std::size_t rank, long item, const float* data) {
    std::size_t size = 1;
    for (std::size_t d = 0; d < rank; ++d) size *= shape[d];
    // (device data is read here from a host copy: this is the error's path, not the check's)
    Floats1d staged;
    if (size && detail::memory_of(data) == Memory::device) {
        staged = Floats1d({size}, uninitialized, Memory::host);
        detail::copy_bytes(staged.data(), Memory::host, data, Memory::device, size * sizeof(float));
        data = staged.data();
    }
    const std::size_t first = detail::first_nonfinite(data, size);
    std::size_t index[8] = {};
    for (std::size_t d = rank, rest = first; d-- > 0;) {
        index[d] = shape[d] ? rest % shape[d] : 0;
        rest = shape[d] ? rest / shape[d] : 0;
    }
    std::string pos = "[";
    for (std::size_t d = 0; d < rank && d < 8; ++d) pos += (d ? ", " : "") + std::to_string(index[d]);
    pos += "]";
    std::string where = "the input";
    if (*what) where += std::string("'s ") + what;
    if (item >= 0) where += "'s array " + std::to_string(item);
    throw Error(prefix + who + ": " + call + ": " + where + " holds " + std::to_string(count) + " non-finite value" +
                    (count == 1 ? "" : "s") + " (NaN or inf), the first at " + pos + " (" +
                    (first < size ? number(data[first]) : std::string("?")) +
                    "); check the data, or turn this check off with set_check_finite_inputs(false)",
                "tenon-E252");
}

UseAverages::UseAverages(Node& model, Optimizer& optimizer) : params_(model, averages_of(model, optimizer)) {}
UseAverages::~UseAverages() = default;

}  // namespace tenon
