// The registry (tenon/config/registry.hpp): DynChain's loops, DynModel, Args, the registries
// and the built-in factories (Thinc's and spaCy's names). Compiled once here, so that a user
// who builds models from configs compiles none of the layers' code for it.
#include "tenon/config/registry.hpp"

#include <algorithm>
#include <cmath>
#include <cctype>
#include <charconv>
#include <cstring>
#include <cxxabi.h>

#include "tenon/combinators/add.hpp"
#include "tenon/combinators/chain.hpp"
#include "tenon/combinators/clone.hpp"
#include "tenon/combinators/concatenate.hpp"
#include "tenon/combinators/residual.hpp"
#include "tenon/layers/dropout.hpp"
#include "tenon/layers/embed.hpp"
#include "tenon/layers/expand_window.hpp"
#include "tenon/layers/hashembed.hpp"
#include "tenon/layers/layernorm.hpp"
#include "tenon/layers/linear.hpp"
#include "tenon/layers/lstm.hpp"
#include "tenon/layers/maxout.hpp"
#include "tenon/layers/mish.hpp"
#include "tenon/layers/gelu.hpp"
#include "tenon/layers/swish.hpp"
#include "tenon/layers/hard_swish.hpp"
#include "tenon/layers/relu.hpp"
#include "tenon/layers/sigmoid_activation.hpp"
#include "tenon/layers/sigmoid.hpp"
#include "tenon/layers/softmax.hpp"
#include "tenon/layers/multisoftmax.hpp"
#include "tenon/layers/sparselinear.hpp"
#include "tenon/layers/staticvectors.hpp"
#include "tenon/layers/parametricattention.hpp"
#include "tenon/model/widths.hpp"
#include "tenon/reduce/reduce_max.hpp"
#include "tenon/reduce/reduce_mean.hpp"
#include "tenon/reduce/reduce_sum.hpp"
#include "tenon/transfers/list2ragged.hpp"
#include "tenon/transfers/ragged2list.hpp"
#include "tenon/transfers/with_array.hpp"
#include "tenon/transfers/with_padded.hpp"

namespace tenon {
namespace config {

namespace {
[[noreturn]] void fail(const std::string& id, const std::string& msg) { throw Error(msg, id); }

std::string lower(std::string_view s) {
    std::string out(s);
    for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
    std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        cur[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j)
            cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
        std::swap(prev, cur);
    }
    return prev[b.size()];
}

// The (up to) three names nearest to `name`, case-insensitively: "a, b, c".
std::string nearest(std::string_view name, const std::vector<std::string>& names) {
    std::vector<std::pair<std::size_t, std::string>> d;
    for (const auto& n : names) d.emplace_back(edit_distance(lower(name), lower(n)), n);
    std::stable_sort(d.begin(), d.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
    std::string out;
    for (std::size_t i = 0; i < d.size() && i < 3; ++i) out += (i ? ", " : "") + d[i].second;
    return out;
}

std::string field(const std::string& path, std::string_view name) {
    return where(path, name);
}
}  // namespace

// ---- DynChain's loops ----------------------------------------------------------------------
namespace detail {

std::string data_type_name(const std::type_info& t) {
    if (t == typeid(Floats1d)) return "Floats1d";
    if (t == typeid(Floats2d)) return "Floats2d";
    if (t == typeid(Floats3d)) return "Floats3d";
    if (t == typeid(Ints1d)) return "Ints1d";
    if (t == typeid(Ints2d)) return "Ints2d";
    if (t == typeid(Keys1d)) return "Keys1d";
    if (t == typeid(Keys2d)) return "Keys2d";
    if (t == typeid(Ragged)) return "Ragged";
    if (t == typeid(Padded)) return "Padded";
    if (t == typeid(SparseFeatures)) return "SparseFeatures";
    int status = 0;
    char* d = abi::__cxa_demangle(t.name(), nullptr, nullptr, &status);
    std::string out = status == 0 && d ? d : t.name();
    std::free(d);
    return out;
}

void throw_step_data(const std::string& step, const std::string& expected) {
    fail("tenon-E315", step + ": a run-time chain passed data of another type than " + expected);
}

std::string step_name(const DynStep& s) {
    std::string n = s.path.empty() ? std::string() : where(s.path) + " ";
    return n + "(" + const_cast<DynStep&>(s).node().name() + ")";
}
namespace {
void check_links(const Steps& steps) {
    for (std::size_t i = 0; i + 1 < steps.size(); ++i)
        if (steps[i]->out_type() != steps[i + 1]->in_type())
            fail("tenon-E315", "chain: " + step_name(*steps[i]) + " outputs " + steps[i]->out_name() + ", the next, " +
                                   step_name(*steps[i + 1]) + ", expects " + steps[i + 1]->in_name());
}
}  // namespace

void check_steps(const Steps& steps, const std::type_info& in, const std::type_info& out, const std::string& in_name,
                 const std::string& out_name) {
    if (steps.empty()) fail("tenon-E311", "chain: a chain needs at least one layer");
    check_links(steps);
    if (steps.front()->in_type() != in || steps.back()->out_type() != out)
        fail("tenon-E316", "chain: a chain from " + steps.front()->in_name() + " to " + steps.back()->out_name() +
                               " cannot be a model from " + in_name + " to " + out_name);
}

Node* chain_dim_owner(const Steps& steps, std::string_view name) noexcept {
    if (steps.empty() || (name != "nI" && name != "nO")) return nullptr;
    // The first (nI) or last (nO) step that changes the width; the first step when none does.
    std::size_t at = 0;
    bool seen = false;
    for (std::size_t i = 0; i < steps.size(); ++i)
        if (!steps[i]->keeps_width() && (name == "nO" || !seen)) {
            at = i;
            seen = true;
        }
    return &steps[at]->node();
}



void chain_init(Node& chain, Steps& steps, const std::any* X, const std::any* Y) {
    std::any cur;
    const bool have = X != nullptr;
    std::size_t width = widths::known(chain, "nI");
    for (std::size_t i = 0; i < steps.size(); ++i) {
        const bool last = i + 1 == steps.size();
        Node& c = steps[i]->node();
        if (!have) {
            // Without a sample the widths flow as chain hands them on: one child's nO is the
            // next one's nI.
            if (i > 0 && width != dyn && c.has_dim("nI") && c.get_dim("nI") != width)
                throw ShapeError(chain.name() + ": " + step_name(*steps[i]) + " expects input width " +
                                     std::to_string(c.get_dim("nI")) + " but " + step_name(*steps[i - 1]) +
                                     " produces " + std::to_string(width),
                                 "tenon-E101");
            widths::offer(c, "nI", width);
        }
        if (last && !Y) widths::offer(c, "nO", widths::known(chain, "nO"));
        const std::any* xi = i == 0 ? X : (have ? &cur : nullptr);
        steps[i]->init(xi, last ? Y : nullptr);
        if (!last && have) cur = steps[i]->predict(*xi);
        width = widths::known(c, "nO");
    }
}

std::any chain_predict(const Steps& steps, std::any X) {
    std::any cur = std::move(X);
    for (const auto& s : steps) cur = s->predict(cur);
    return cur;
}

std::any chain_forward(Steps& steps, std::any X, bool is_train, std::vector<ErasedBackprop>& bps) {
    bps.clear();
    bps.reserve(steps.size());
    std::any cur = std::move(X);
    for (auto& s : steps) {
        // Each step's input lives as long as its backprop (which may view it).
        auto in = std::make_shared<std::any>(std::move(cur));
        ErasedBackprop bp;
        cur = s->forward(*in, is_train, bp);
        bps.push_back([in, bp = std::move(bp)](const std::any& dY, bool params_only) { return bp(dY, params_only); });
    }
    return cur;
}

std::any chain_backprop(const std::vector<ErasedBackprop>& bps, std::any dY, bool params_only) {
    if (bps.empty()) fail("tenon-E118", "chain: backprop: this backprop holds no call");
    std::any d = std::move(dY);
    for (std::size_t i = bps.size(); i-- > 0;) d = bps[i](d, params_only && i == 0);
    return d;
}

std::string chain_name(const Steps& steps) {
    std::string n;
    for (const auto& s : steps) n += (n.empty() ? "" : ">>") + s->node().name();
    return n;
}

Steps clone_steps(const Steps& steps) {
    Steps out;
    for (const auto& s : steps) out.push_back(s->clone());
    return out;
}
}  // namespace detail

// ---- DynModel ------------------------------------------------------------------------------
namespace {
std::vector<detail::Steps> clone_alts(const std::vector<detail::Steps>& alts) {
    std::vector<detail::Steps> out;
    for (const auto& a : alts) out.push_back(detail::clone_steps(a));
    return out;
}
std::string names_of(const std::vector<detail::Steps>& alts, bool input) {
    std::vector<std::string> seen;
    std::string out;
    for (const auto& a : alts) {
        const std::string n = input ? a.front()->in_name() : a.back()->out_name();
        if (std::find(seen.begin(), seen.end(), n) != seen.end()) continue;
        seen.push_back(n);
        out += (out.empty() ? "" : " | ") + n;
    }
    return out.empty() ? "nothing" : out;
}
// "a model from Ragged to Ragged", or for several forms "a model from List[Floats2d] to
// List[Floats2d], from Ragged to Ragged, ...".
std::string signatures(const std::vector<detail::Steps>& alts) {
    std::string out;
    for (const auto& a : alts)
        out += std::string(out.empty() ? "a model" : ",") + " from " + a.front()->in_name() + " to " +
               a.back()->out_name();
    return out;
}
}  // namespace

DynModel::DynModel(const DynModel& other) : alts_(clone_alts(other.alts_)), path_(other.path_) {}
DynModel& DynModel::operator=(const DynModel& other) {
    if (this != &other) {
        alts_ = clone_alts(other.alts_);
        path_ = other.path_;
    }
    return *this;
}
DynModel::~DynModel() = default;

DynModel DynModel::chain(std::vector<DynModel> parts, const std::string& path) {
    const std::string at = path.empty() ? std::string("chain") : where(path);
    std::vector<detail::Steps> cur;
    bool first = true;
    for (auto& p : parts) {
        if (p.empty()) continue;
        if (first) {
            cur = std::move(p.alts_);
            first = false;
            continue;
        }
        // Each form so far goes on with the form of p that takes what it outputs (a form of p
        // used twice is copied: the models are not initialised yet, so a copy is cheap).
        // (Which form each goes on with is found first: a form is moved at its last use only.)
        std::vector<detail::Steps> next;
        std::vector<std::size_t> match(cur.size(), p.alts_.size()), uses(p.alts_.size(), 0);
        for (std::size_t j = 0; j < cur.size(); ++j)
            for (std::size_t k = 0; k < p.alts_.size(); ++k)
                if (p.alts_[k].front()->in_type() == cur[j].back()->out_type()) {
                    match[j] = k;
                    ++uses[k];
                    break;
                }
        for (std::size_t j = 0; j < cur.size(); ++j) {
            const std::size_t k = match[j];
            if (k == p.alts_.size()) continue;
            detail::Steps more = --uses[k] > 0 ? detail::clone_steps(p.alts_[k]) : std::move(p.alts_[k]);
            for (auto& s : more) cur[j].push_back(std::move(s));
            next.push_back(std::move(cur[j]));
        }
        if (next.empty()) {
            const detail::DynStep& last = *cur.front().back();
            const detail::DynStep& head = *p.alts_.front().front();
            fail("tenon-E315", "chain: " + detail::step_name(last) + " outputs " + names_of(cur, false) + ", the next, " +
                                   detail::step_name(head) + ", expects " + names_of(p.alts_, true));
        }
        cur = std::move(next);
    }
    if (cur.empty())
        fail("tenon-E311", at + ": chain.v1 needs at least one layer (its [" + (path.empty() ? "model" : path) +
                               ".*.name] sections)");
    DynModel out;
    out.alts_ = std::move(cur);
    out.path_ = path;
    return out;
}

DynModel DynModel::one_of(std::vector<DynModel> forms) {
    DynModel out;
    for (auto& f : forms)
        for (auto& a : f.alts_) {
            for (const auto& b : out.alts_)
                if (b.front()->in_type() == a.front()->in_type())
                    fail("tenon-E318", "one_of: two forms take " + a.front()->in_name());
            out.alts_.push_back(std::move(a));
        }
    return out;
}

DynModel&& DynModel::with_code(std::string code) && {
    for (auto& a : alts_) {
        if (a.size() != 1)
            fail("tenon-E318", "with_code: a model of " + std::to_string(a.size()) +
                                   " steps has its steps' code (give each step its own)");
        a.front()->code = code;
    }
    return std::move(*this);
}

namespace {
std::string steps_code(const detail::Steps& steps) {
    if (steps.size() == 1) return steps.front()->code;
    std::string out = "chain(";
    for (std::size_t i = 0; i < steps.size(); ++i) out += (i ? ", " : "") + steps[i]->code;
    return out + ")";
}
}  // namespace

std::string DynModel::code_of(const std::type_info& in, const std::type_info& out) const {
    for (const auto& a : alts_)
        if (a.front()->in_type() == in && a.back()->out_type() == out) return steps_code(a);
    return {};
}

std::vector<DynModel::Form> DynModel::forms() const {
    std::vector<Form> out;
    for (const auto& a : alts_) out.push_back({a.front()->in_name(), a.back()->out_name(), steps_code(a)});
    return out;
}

std::vector<const Node*> DynModel::step_nodes() const {
    std::vector<const Node*> out;
    if (!alts_.empty())
        for (const auto& st : alts_.front()) out.push_back(&st->node());
    return out;
}

std::string DynModel::in_name() const { return names_of(alts_, true); }
std::string DynModel::out_name() const { return names_of(alts_, false); }

void DynModel::mark_uncoded(const std::string& mark) {
    for (auto& a : alts_)
        for (auto& st : a)
            if (st->code.empty()) st->code = mark;
}

void DynModel::set_path(std::string path) {
    for (auto& a : alts_)
        for (auto& s : a)
            if (s->path.empty()) s->path = path;
    path_ = std::move(path);
}

bool DynModel::has(const std::type_info& in, const std::type_info& out) const {
    for (const auto& a : alts_)
        if (a.front()->in_type() == in && a.back()->out_type() == out) return true;
    return false;
}

detail::Steps DynModel::pick(const std::type_info& in, const std::type_info& out, const std::string& in_name,
                             const std::string& out_name) {
    const std::string at = path_.empty() ? std::string("the model") : where(path_);
    if (empty()) fail("tenon-E316", at + ": this DynModel holds no model (it was taken)");
    for (auto& a : alts_)
        if (a.front()->in_type() == in && a.back()->out_type() == out) {
            detail::Steps steps = std::move(a);
            alts_.clear();
            return steps;
        }
    fail("tenon-E316", at + " is " + signatures(alts_) + "; the program asks for a model from " + in_name + " to " +
                           out_name);
}

// ---- Args ----------------------------------------------------------------------------------
Args::Args(const Section& section, std::string path, std::string ref)
    : section_(&section), path_(std::move(path)), ref_(std::move(ref)) {}

bool Args::has(std::string_view name) const {
    for (const auto& [k, v] : *section_)
        if (k == name) return !v.is_null();
    return false;
}

const Value* Args::take(std::string_view name) {
    asked_.emplace_back(name);
    for (const auto& [k, v] : *section_)
        if (k == name) {
            used_.emplace_back(name);
            return v.is_null() ? nullptr : &v;
        }
    return nullptr;
}

const Value& Args::require(std::string_view name) {
    if (const Value* v = take(name)) return *v;
    fail("tenon-E311", field(path_, name) + ": missing argument" + (ref_.empty() ? "" : " of " + ref_));
}

std::size_t Args::dim(std::string_view name) {
    const Value* v = take(name);
    if (!v) return dyn;
    if (!v->is_int() || v->as_int() < 1)
        fail(v->is_int() ? "tenon-E314" : "tenon-E313",
             field(path_, name) + ": expected a positive integer (a width) or null, found " + v->dump());
    return static_cast<std::size_t>(v->as_int());
}

std::vector<DynModel> Args::positional() {
    asked_.emplace_back("*");
    for (const auto& [k, v] : *section_)
        if (k == "*") {
            used_.emplace_back("*");
            return models(v, "*");
        }
    return {};
}

std::vector<DynModel> Args::models(const Value& v, std::string_view name) {
    std::vector<DynModel> out;
    const std::string at = path_ + "." + std::string(name);
    if (v.is_section()) {
        // [model.layers.*.a], [model.layers.*.b]: a section that holds only positional children.
        const Section& s = v.as_section();
        if (s.size() == 1 && s.front().first == "*" && s.front().second.is_section()) {
            for (const auto& [k, sub] : s.front().second.as_section()) out.push_back(build(sub, at + ".*." + k));
            return out;
        }
        for (const auto& [k, sub] : s) out.push_back(build(sub, at + "." + k));
        return out;
    }
    if (v.is_list()) {
        const ValueList& l = v.as_list();
        for (std::size_t i = 0; i < l.size(); ++i) out.push_back(build(l[i], at + "[" + std::to_string(i) + "]"));
        return out;
    }
    fail("tenon-E313", field(path_, name) + ": expected models (sections with @layers), found " + v.dump());
}

void Args::finish() const {
    for (const auto& [k, v] : *section_) {
        if (!k.empty() && k[0] == '@') continue;
        if (std::find(used_.begin(), used_.end(), k) != used_.end()) continue;
        std::vector<std::string> known = asked_;
        std::sort(known.begin(), known.end());
        known.erase(std::unique(known.begin(), known.end()), known.end());
        std::string takes;
        for (const auto& n : known)
            if (n != "*") takes += (takes.empty() ? "" : ", ") + n;
        fail("tenon-E312", field(path_, k) + ": unknown argument" + (ref_.empty() ? "" : " of " + ref_) +
                               (known.empty() ? std::string(" (it takes no arguments)")
                                              : " (did you mean " + nearest(k, known) + "? it takes: " + takes + ")"));
    }
}

bool Args::as_bool(const Value& v, std::string_view name) const {
    if (!v.is_bool()) fail("tenon-E313", field(path_, name) + ": expected true or false, found " + v.dump());
    return v.as_bool();
}
long double Args::as_int(const Value& v, std::string_view name, long double lo, long double hi) const {
    if (!v.is_int()) fail("tenon-E313", field(path_, name) + ": expected an integer, found " + v.dump());
    const auto i = static_cast<long double>(v.as_int());
    if (i < lo || i > hi)
        fail("tenon-E314", field(path_, name) + ": " + v.dump() + " is out of range [" +
                               std::to_string(static_cast<long long>(lo)) + ", " +
                               (hi > 9.2e18L ? std::string("2^63") : std::to_string(static_cast<long long>(hi))) + "]");
    return i;
}
double Args::as_number(const Value& v, std::string_view name, double max) const {
    if (!v.is_number()) fail("tenon-E313", field(path_, name) + ": expected a number, found " + v.dump());
    const double d = v.as_number();
    if (std::isfinite(d) && std::fabs(d) > max)
        fail("tenon-E314", field(path_, name) + ": " + v.dump() + " is out of range: this argument is a float (at most " +
                               tenon::detail::number_str(max) + " in magnitude)");
    return d;
}
std::string Args::as_string(const Value& v, std::string_view name) const {
    if (!v.is_string()) fail("tenon-E313", field(path_, name) + ": expected a string, found " + v.dump());
    return v.as_string();
}
const ValueList& Args::as_list(const Value& v, std::string_view name) const {
    if (!v.is_list()) fail("tenon-E313", field(path_, name) + ": expected a list, found " + v.dump());
    return v.as_list();
}
DynModel Args::model(const Value& v, std::string_view name) const {
    if (!v.is_section())
        fail("tenon-E313", field(path_, name) + ": expected a model (a [" + path_ + "." + std::string(name) +
                               "] section with @layers), found " + v.dump());
    return build(v, path_ + "." + std::string(name));
}

Schedule Args::schedule(const Value& v, std::string_view name) const {
    return build_schedule(v, path_ + "." + std::string(name));
}

// ---- Schedules -----------------------------------------------------------------------------
std::vector<std::string> schedule_names() {
    return {"compounding.v1", "constant.v1", "constant_then.v1", "cyclic_triangular.v1", "decaying.v1",
            "slanted_triangular.v1", "warmup_linear.v1"};
}

Schedule build_schedule(const Value& v, const std::string& path) {
    if (v.is_number()) return constant(v.as_number());
    if (!v.is_section())
        fail("tenon-E313", where(path) + ": expected a number or a schedule (a section with @schedules), found " +
                               v.dump());
    const Value* ref = v.find("@schedules");
    if (!ref)
        fail("tenon-E317", where(path) + ": no @schedules reference: which schedule? (compounding.v1, constant.v1, "
                                         "constant_then.v1, cyclic_triangular.v1, decaying.v1, slanted_triangular.v1, "
                                         "warmup_linear.v1)");
    if (!ref->is_string())
        fail("tenon-E313", where(path, "@schedules") + ": expected a registered name (a string), found " + ref->dump());
    const std::string& name = ref->as_string();
    Args a(v.as_section(), path, name);
    auto make = [&]() -> Schedule {
        if (name == "constant.v1") return constant(a.get<double>("rate"));
        if (name == "constant_then.v1") {
            const double rate = a.get<double>("rate");
            const auto steps = a.get<std::size_t>("steps");
            return constant_then(rate, steps, a.get<Schedule>("schedule"));
        }
        if (name == "decaying.v1") {
            const double base = a.get<double>("base_rate"), decay = a.get<double>("decay");
            return decaying(base, decay, a.get<std::size_t>("t", 0));
        }
        if (name == "compounding.v1") {
            const double start = a.get<double>("start"), stop = a.get<double>("stop");
            const double compound = a.get<double>("compound");
            if (a.get<double>("t", 0.0) != 0.0)  // (Thinc's compounding takes t and never reads it)
                fail("tenon-E314", where(path, "t") + ": compounding.v1 does not use t; leave it out");
            return compounding(start, stop, compound);
        }
        if (name == "slanted_triangular.v1") {
            const double max_rate = a.get<double>("max_rate");
            const auto num_steps = a.get<std::size_t>("num_steps");
            const double cut_frac = a.get<double>("cut_frac", 0.1), ratio = a.get<double>("ratio", 32.0);
            return slanted_triangular(max_rate, num_steps, cut_frac, ratio, a.get<double>("t", 0.0));
        }
        if (name == "warmup_linear.v1") {
            const double rate = a.get<double>("initial_rate");
            const auto warmup = a.get<std::size_t>("warmup_steps");
            return warmup_linear(rate, warmup, a.get<std::size_t>("total_steps"));
        }
        if (name == "cyclic_triangular.v1") {
            const double lo = a.get<double>("min_lr"), hi = a.get<double>("max_lr");
            return cyclic_triangular(lo, hi, a.get<std::size_t>("period"));
        }
        fail("tenon-E310", where(path, "@schedules") + ": no schedule is registered as \"" + name +
                               "\"; the nearest registered names: " + nearest(name, schedule_names()));
    };
    Schedule out = [&] {
        try {
            return make();
        } catch (Error& e) {  // a schedule's own (tenon-E253) gets the config path
            if (e.message().empty() || e.message()[0] != '[') e.set_message(where(path) + " " + name + ": " + e.message());
            throw;
        }
    }();
    a.finish();
    return out;
}

// ---- Registry ------------------------------------------------------------------------------
void Registry::add(const std::string& name, Factory factory) {
    if (!factory) fail("tenon-E319", "registry @" + kind_ + ": the factory for " + name + " is empty");
    if (factories_.count(name))
        fail("tenon-E319", "registry @" + kind_ + ": " + name + " is registered already (register a new version, " +
                               "e.g. " + name.substr(0, name.rfind(".v")) + ".v" + "N, instead)");
    factories_.emplace(name, std::move(factory));
}

bool Registry::has(std::string_view name) const { return factories_.find(name) != factories_.end(); }

std::vector<std::string> Registry::names() const {
    std::vector<std::string> out;
    for (const auto& [k, f] : factories_) out.push_back(k);
    return out;
}

const Factory& Registry::get(std::string_view name, std::string_view where) const {
    if (auto it = factories_.find(name); it != factories_.end()) return it->second;
    Registry& other = kind_ == "layers" ? architectures() : layers();
    const std::string hint = other.has(name) ? " (it is an @" + other.kind() + " name)" : "";
    fail("tenon-E310", std::string(where) + ": no " + kind_ + " factory is registered as \"" + std::string(name) +
                           "\"" + hint + "; the nearest registered names: " + nearest(name, names()));
}

// ---- building ------------------------------------------------------------------------------
// (Models nest at most this deep: each level is a few calls here, and 3000 levels of
// residual.v1 overflowed the stack.)
static constexpr int max_model_depth = 200;
static thread_local int model_depth = 0;

DynModel build(const Value& section, const std::string& path) {
    struct Depth {
        Depth() { ++model_depth; }
        ~Depth() { --model_depth; }
    } const depth;
    if (model_depth > max_model_depth)
        fail("tenon-E313", where(path) + ": models nested more than " + std::to_string(max_model_depth) +
                               " levels deep (a model section inside a model section ...)");
    if (!section.is_section())
        fail("tenon-E313", where(path) + ": expected a model section (with @layers), found " + section.dump());
    const Section& s = section.as_section();
    const std::pair<std::string, Value>* ref = nullptr;
    for (const auto& kv : s)
        if (!kv.first.empty() && kv.first[0] == '@') {
            if (ref)
                fail("tenon-E317", where(path) + ": two references (" + ref->first + " and " + kv.first +
                                       "): a section builds one model");
            ref = &kv;
        }
    if (!ref) fail("tenon-E317", where(path) + ": no @layers or @architectures reference: which model to build?");
    Registry* reg = ref->first == "@layers" ? &layers() : ref->first == "@architectures" ? &architectures() : nullptr;
    if (!reg)
        fail("tenon-E317", where(path, ref->first) + ": tenon builds models from @layers and @architectures only");
    if (!ref->second.is_string())
        fail("tenon-E313", where(path, ref->first) + ": expected a registered name (a string), found " +
                               ref->second.dump());
    const std::string& name = ref->second.as_string();
    const Factory& factory = reg->get(name, where(path, ref->first));
    Args args(s, path, name);
    DynModel m;
    try {
        m = factory(args);
    } catch (Error& e) {
        // An error of a layer's own (a bad width, a rate out of range) gets the config path.
        if (e.message().empty() || e.message()[0] != '[') e.set_message(where(path) + " " + name + ": " + e.message());
        throw;
    }
    args.finish();
    if (m.empty()) fail("tenon-E318", where(path) + ": the factory of " + name + " returned no model");
    m.set_path(path);
    m.mark_uncoded("@" + where(path) + " " + name + "@");
    return m;
}

DynModel build(const Config& config, std::string_view path) { return build(config.at(path), std::string(path)); }

// ---- codegen -------------------------------------------------------------------------------
namespace {
// An expression laid out over lines: a call longer than fits has one argument per line.
std::string layout(const std::string& e, std::size_t indent) {
    constexpr std::size_t fits = 100;
    const std::size_t open = e.find('(');
    if (indent + e.size() <= fits || open == std::string::npos || e.back() != ')') return e;
    std::vector<std::string> args;
    int depth = 0;
    std::size_t from = open + 1;
    for (std::size_t i = from; i + 1 < e.size(); ++i) {
        const char c = e[i];
        if (c == '(' || c == '<' || c == '{' || c == '[') ++depth;
        else if (c == ')' || c == '>' || c == '}' || c == ']') --depth;
        else if (c == ',' && depth == 0) {
            args.push_back(e.substr(from, i - from));
            from = i + 1;
        }
    }
    args.push_back(e.substr(from, e.size() - 1 - from));
    std::string out = e.substr(0, open + 1) + "\n";
    const std::string pad(indent + 4, ' ');
    for (std::size_t i = 0; i < args.size(); ++i) {
        std::string a = args[i];
        a.erase(0, a.find_first_not_of(' '));
        out += pad + layout(a, indent + 4) + (i + 1 < args.size() ? ",\n" : ")");
    }
    return out;
}
// A data type's C++ name from Thinc's ("List[Ints2d]" -> "tenon::List<tenon::Ints2d>"), or ""
// for one that has no such plain name.
std::string cpp_type(const std::string& thinc) {
    std::string out, word;
    auto flush = [&] {
        if (!word.empty()) out += "tenon::" + word;
        word.clear();
    };
    for (char c : thinc) {
        if (std::isalnum(static_cast<unsigned char>(c))) {
            word += c;
        } else if (c == '[' || c == ']') {
            flush();
            out += c == '[' ? '<' : '>';
        } else {
            return {};
        }
    }
    flush();
    return out;
}
bool identifier(const std::string& s) {
    if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
    for (char c : s)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
    // Not a keyword, not std or tenon (the generated header uses both), not reserved (__x, _X).
    static const char* const taken[] = {
        "alignas", "alignof", "and", "and_eq", "asm", "auto", "bitand", "bitor", "bool", "break", "case", "catch",
        "char", "char8_t", "char16_t", "char32_t", "class", "compl", "concept", "const", "consteval", "constexpr",
        "constinit", "const_cast", "continue", "co_await", "co_return", "co_yield", "decltype", "default", "delete",
        "do", "double", "dynamic_cast", "else", "enum", "explicit", "export", "extern", "false", "float", "for",
        "friend", "goto", "if", "inline", "int", "long", "mutable", "namespace", "new", "noexcept", "not", "not_eq",
        "nullptr", "operator", "or", "or_eq", "private", "protected", "public", "register", "reinterpret_cast",
        "requires", "return", "short", "signed", "sizeof", "static", "static_assert", "static_cast", "struct",
        "switch", "template", "this", "thread_local", "throw", "true", "try", "typedef", "typeid", "typename",
        "union", "unsigned", "using", "virtual", "void", "volatile", "wchar_t", "while", "xor", "xor_eq", "std",
        "tenon"};
    for (const char* k : taken)
        if (s == k) return false;
    if (s.find("__") != std::string::npos || (s[0] == '_' && s.size() > 1 && std::isupper(static_cast<unsigned char>(s[1]))))
        return false;
    return true;
}
}  // namespace

std::string codegen(const Config& config, std::string_view path, const std::string& ns, const std::string& source) {
    if (!identifier(ns)) fail("tenon-E328", "codegen: the namespace '" + ns +
                                                "' is not a C++ identifier the header can use (a keyword, std, tenon, or a "
                                                "reserved name are not)");
    const DynModel m = build(config, path);
    const auto forms = m.forms();
    const std::string at = where(std::string(path));
    if (forms.size() != 1) {
        std::string sigs;
        for (const auto& f : forms) sigs += (sigs.empty() ? "" : ", ") + f.in + " -> " + f.out;
        fail("tenon-E328", at + ": the model has " + std::to_string(forms.size()) + " signatures (" + sigs +
                               "); codegen writes one type: put it in a chain.v1 whose first layer fixes the input type");
    }
    const DynModel::Form& f = forms.front();
    if (const auto mark = f.code.find('@'); mark != std::string::npos) {
        const auto end = f.code.find('@', mark + 1);
        fail("tenon-E328", f.code.substr(mark + 1, end - mark - 1) +
                               ": its factory gives no C++ code for codegen (a factory of your own: return "
                               "DynModel(model).with_code(\"YourLayer<...>(...)\"), docs/configs.md)");
    }
    const std::string in = cpp_type(f.in), out = cpp_type(f.out);
    std::string h;
    h += "// Generated by `tenon codegen" + (source.empty() ? std::string() : " " + source) + "` from the config's [" +
         std::string(path) + "]\n";
    h += "// (docs/configs.md, \"From a config back to a type\"): the model as a static tenon type, " + f.in +
         " -> " + f.out + ".\n";
    h += "// make_model() builds it with the config's values (untrained); the file `tenon train` wrote loads\n";
    h += "// into it: `auto model = " + ns + "::make_model(); model.from_disk(\"DIR/model.tenon\");`.\n";
    h += "// Generate it again after changing the config; do not edit it.\n";
    h += "#pragma once\n#include <type_traits>\n\n#include <tenon/tenon.hpp>\n\nnamespace " + ns + " {\n\n";
    h += "inline auto make_model() {\n    using namespace tenon;\n    return " + layout(f.code, 4) + ";\n}\n\n";
    h += "using Model = decltype(make_model());\n";
    if (!in.empty() && !out.empty())
        h += "static_assert(std::is_same_v<Model::In, " + in + "> && std::is_same_v<Model::Out, " + out +
             ">, \"the config's signature\");\n";
    h += "\n}  // namespace " + ns + "\n";
    return h;
}

// ---- the built-in factories ----------------------------------------------------------------
// Each factory reads its arguments once and gives both the model and its C++ code (what
// `tenon codegen` writes: the same layer with the config's widths as template arguments).
namespace {
std::string width(std::size_t w) { return w == dyn ? "dyn" : std::to_string(w); }
// A template's width arguments, the trailing unknown ones left out: "<128, dyn, 3>", "<>".
std::string widths(std::initializer_list<std::size_t> ws) {
    std::vector<std::size_t> v(ws);
    while (!v.empty() && v.back() == dyn) v.pop_back();
    std::string out = "<";
    for (std::size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + width(v[i]);
    return out + ">";
}
// A double as a C++ literal that reads back as the same double (the shortest such).
std::string real(double x) {
    char buf[64];
    const auto r = std::to_chars(buf, buf + sizeof buf, x);
    std::string out(buf, r.ptr);
    if (out.find_first_of(".e") == std::string::npos) out += ".0";
    return out;
}
// An options aggregate with the fields that differ from its defaults: "DenseOptions{.normalize
// = true}", or "" when none does (the layer's default constructor).
std::string options(const char* type, const std::vector<std::string>& fields) {
    if (fields.empty()) return {};
    std::string out = std::string(type) + "{";
    for (std::size_t i = 0; i < fields.size(); ++i) out += (i ? ", " : "") + fields[i];
    return out + "}";
}
std::string dropout_field(const std::optional<double>& d) {
    return d ? ".dropout = " + real(*d) : std::string();
}
std::vector<std::string> nonempty(std::initializer_list<std::string> fs) {
    std::vector<std::string> out;
    for (const auto& f : fs)
        if (!f.empty()) out.push_back(f);
    return out;
}

DenseOptions dense(Args& a, bool activation) {
    DenseOptions o;
    o.nO = a.dim("nO");
    o.nI = a.dim("nI");
    if (activation) {
        o.dropout = a.get<std::optional<double>>("dropout", std::nullopt);
        o.normalize = a.get<bool>("normalize", false);
    }
    return o;
}
std::string dense_code(const char* layer, const DenseOptions& o) {
    return layer + widths({o.nO, o.nI}) + "(" +
           options("DenseOptions", nonempty({dropout_field(o.dropout), o.normalize ? ".normalize = true" : ""})) +
           ")";
}
LinearOptions linear(Args& a) {
    LinearOptions o;
    o.nO = a.dim("nO");
    o.nI = a.dim("nI");
    return o;
}
std::string maxout_code(const MaxoutOptions& o) {
    return "Maxout" + widths({o.nO, o.nI, o.nP}) + "(" +
           options("MaxoutOptions",
                   nonempty({dropout_field(o.dropout), o.normalize ? ".normalize = true" : ""})) +
           ")";
}
std::string softmax_code(const SoftmaxOptions& o) {
    return "Softmax" + widths({o.nO, o.nI}) + "(" +
           options("SoftmaxOptions", nonempty({o.normalize_outputs ? "" : ".normalize_outputs = false",
                                               o.temperature == 1.0 ? "" : ".temperature = " + real(o.temperature)})) +
           ")";
}
std::string hash_embed_code(std::size_t nV, const HashEmbedOptions& o) {
    const std::string opts = options(
        "HashEmbedOptions", nonempty({o.seed ? ".seed = " + std::to_string(*o.seed) + "u" : "",
                                      o.column ? ".column = " + std::to_string(o.column) : "", dropout_field(o.dropout)}));
    return "HashEmbed" + widths({o.nO}) + "(" + std::to_string(nV) + (opts.empty() ? "" : ", " + opts) + ")";
}

using F2d = AnyModel<Floats2d, Floats2d>;

// A combinator that takes layers from Floats2d to Floats2d (this first slice's only type for
// residual, clone, concatenate and add): E318 names the layer and what it maps. `code` gets the
// layer's code.
F2d floats2d(DynModel& m, const std::string& who, const std::string& path, std::string& code) {
    if (!m.is<Floats2d, Floats2d>())
        fail("tenon-E318", where(path) + " " + who + ": takes layers from Floats2d to Floats2d; " +
                               (m.path().empty() ? std::string("a layer") : where(m.path())) + " maps " + m.in_name() +
                               " to " + m.out_name());
    code = m.code<Floats2d, Floats2d>();
    return m.take<Floats2d, Floats2d>();
}

// concatenate.v1 / add.v1 with any number of layers: the typed combinators of two, nested
// from the left (a | b | c is concatenate(concatenate(a, b), c): the same columns in the same
// order, and the same file as the flat concatenate(a, b, c) its code writes; a + b + c sums in
// the same order).
template <class Combine>
DynModel fold(Args& a, const char* who, const char* fn, Combine combine) {
    std::vector<DynModel> parts = a.positional();
    if (parts.empty()) fail("tenon-E311", where(a.path()) + " " + who + ": needs at least one layer");
    std::string code, one;
    F2d acc = floats2d(parts[0], who, a.path(), code);
    for (std::size_t i = 1; i < parts.size(); ++i) {
        acc = F2d(combine(std::move(acc), floats2d(parts[i], who, a.path(), one)));
        code += ", " + one;
    }
    return DynModel(std::move(acc)).with_code(parts.size() == 1 ? code : std::string(fn) + "(" + code + ")");
}

void register_layers(Registry& r) {
    r.add("Linear.v1", Factory([](Args& a) {
              const LinearOptions o = linear(a);
              return DynModel(Linear<>(o)).with_code("Linear" + widths({o.nO, o.nI}) + "()");
          }));
    r.add("Relu.v1", Factory([](Args& a) {
              const DenseOptions o = dense(a, true);
              return DynModel(Relu<>(o)).with_code(dense_code("Relu", o));
          }));
    r.add("Mish.v1", Factory([](Args& a) {
              const DenseOptions o = dense(a, true);
              return DynModel(Mish<>(o)).with_code(dense_code("Mish", o));
          }));
    r.add("Gelu.v1", Factory([](Args& a) {
              const DenseOptions o = dense(a, true);
              return DynModel(Gelu<>(o)).with_code(dense_code("Gelu", o));
          }));
    r.add("Swish.v1", Factory([](Args& a) {
              const DenseOptions o = dense(a, true);
              return DynModel(Swish<>(o)).with_code(dense_code("Swish", o));
          }));
    r.add("HardSwish.v1", Factory([](Args& a) {
              const DenseOptions o = dense(a, true);
              return DynModel(HardSwish<>(o)).with_code(dense_code("HardSwish", o));
          }));
    r.add("Sigmoid.v1", Factory([](Args& a) {
              const LinearOptions o = linear(a);
              return DynModel(Sigmoid<>(o)).with_code("Sigmoid" + widths({o.nO, o.nI}) + "()");
          }));
    r.add("Logistic.v1", Factory([](Args&) { return DynModel(SigmoidActivation()).with_code("SigmoidActivation()"); }));
    r.add("Maxout.v1", Factory([](Args& a) {
              MaxoutOptions o;
              o.nO = a.dim("nO");
              o.nI = a.dim("nI");
              const auto nP = a.get<std::int64_t>("nP", 3);
              if (nP < 1)
                  fail("tenon-E314", where(a.path(), "nP") + ": expected a positive integer (the pieces), found " +
                                         std::to_string(nP));
              o.nP = static_cast<std::size_t>(nP);
              o.dropout = a.get<std::optional<double>>("dropout", std::nullopt);
              o.normalize = a.get<bool>("normalize", false);
              return DynModel(Maxout<>(o)).with_code(maxout_code(o));
          }));
    r.add("Softmax.v1", Factory([](Args& a) {
              SoftmaxOptions o;
              o.nO = a.dim("nO");
              o.nI = a.dim("nI");
              return DynModel(Softmax<>(o)).with_code(softmax_code(o));
          }));
    r.add("Softmax.v2", Factory([](Args& a) {
              SoftmaxOptions o;
              o.nO = a.dim("nO");
              o.nI = a.dim("nI");
              o.normalize_outputs = a.get<bool>("normalize_outputs", true);
              o.temperature = a.get<double>("temperature", 1.0);
              return DynModel(Softmax<>(o)).with_code(softmax_code(o));
          }));
    r.add("MultiSoftmax.v1", Factory([](Args& a) {
              const auto nOs = a.get<std::vector<std::size_t>>("nOs");
              const std::size_t nI = a.dim("nI");
              std::string groups;
              for (std::size_t n : nOs) {
                  if (!groups.empty()) groups += ", ";
                  groups += std::to_string(n);
              }
              return DynModel(MultiSoftmax<>(nOs, nI))
                  .with_code("MultiSoftmax" + widths({nI}) + "({" + groups + "})");
          }));
    r.add("LayerNorm.v1", Factory([](Args& a) {
              const std::size_t nI = a.dim("nI");
              return DynModel(LayerNorm<>(nI)).with_code("LayerNorm" + widths({nI}) + "()");
          }));
    r.add("Dropout.v1", Factory([](Args& a) {
              const double rate = a.get<double>("rate", 0.0);
              return DynModel(Dropout(rate)).with_code("Dropout(" + real(rate) + ")");
          }));

    r.add("chain.v1", Factory([](Args& a) { return DynModel::chain(a.positional(), a.path()); }));
    r.add("residual.v1", Factory([](Args& a) {
              DynModel layer = a.get<DynModel>("layer");
              std::string code;
              F2d l = floats2d(layer, "residual.v1", a.path(), code);
              return DynModel(residual(std::move(l))).with_code("residual(" + code + ")");
          }));
    r.add("clone.v1", Factory([](Args& a) {
              DynModel orig = a.get<DynModel>("orig");
              const auto n = a.get<std::size_t>("n");
              std::string code;
              F2d l = floats2d(orig, "clone.v1", a.path(), code);
              return DynModel(clone(std::move(l), n)).with_code("clone(" + code + ", " + std::to_string(n) + ")");
          }));
    r.add("concatenate.v1", Factory([](Args& a) {
              return fold(a, "concatenate.v1", "concatenate",
                          [](F2d x, F2d y) { return concatenate(std::move(x), std::move(y)); });
          }));
    r.add("add.v1", Factory([](Args& a) {
              return fold(a, "add.v1", "add", [](F2d x, F2d y) { return add(std::move(x), std::move(y)); });
          }));

    r.add("HashEmbed.v1", Factory([](Args& a) {
              HashEmbedOptions o;
              o.nO = a.dim("nO");
              const std::size_t nV = a.dim("nV");
              if (nV == dyn) fail("tenon-E311", where(a.path(), "nV") + ": missing argument of HashEmbed.v1");
              o.seed = a.get<std::optional<std::uint32_t>>("seed", std::nullopt);
              o.column = a.get<std::size_t>("column", 0);
              o.dropout = a.get<std::optional<double>>("dropout", std::nullopt);
              return DynModel(HashEmbed<>(nV, o)).with_code(hash_embed_code(nV, o));
          }));
    r.add("Embed.v1", Factory([](Args& a) {
              EmbedOptions o;
              o.nO = a.dim("nO");
              const std::size_t nV = a.dim("nV");
              if (nV == dyn) fail("tenon-E311", where(a.path(), "nV") + ": missing argument of Embed.v1");
              o.column = a.get<std::size_t>("column", 0);
              o.dropout = a.get<std::optional<double>>("dropout", std::nullopt);
              const std::string opts =
                  options("EmbedOptions",
                          nonempty({o.column ? ".column = " + std::to_string(o.column) : "", dropout_field(o.dropout)}));
              return DynModel(Embed<>(nV, o))
                  .with_code("Embed" + widths({o.nO}) + "(" + std::to_string(nV) + (opts.empty() ? "" : ", " + opts) +
                             ")");
          }));
    // SparseLinear.v1 is Thinc's defective v1 indexing (kept for its models), .v2 the right one.
    for (const bool v1 : {true, false}) {
        r.add(v1 ? "SparseLinear.v1" : "SparseLinear.v2", Factory([v1](Args& a) {
                  SparseLinearOptions o;
                  o.nO = a.dim("nO");
                  o.length = a.get<std::size_t>("length", o.length);
                  o.v1_indexing = v1;
                  const std::string opts =
                      o.length == SparseLinearOptions{}.length ? "" : "{.length = " + std::to_string(o.length) + "}";
                  return DynModel(SparseLinear<>(o)).with_code(std::string(v1 ? "SparseLinear_v1" : "SparseLinear") +
                                                                widths({o.nO}) + "(" + opts + ")");
              }));
    }
    // StaticVectors.v1: the table from a file (`vectors`: a .npy or a text file of one vector per
    // line, read by load_vectors), the ids from an Ints2d's column.
    r.add("StaticVectors.v1", Factory([](Args& a) {
              StaticVectorsOptions o;
              o.nO = a.dim("nO");
              const std::size_t nM = a.dim("nM");
              const auto path = a.get<std::optional<std::string>>("vectors", std::nullopt);
              if (!path) fail("tenon-E311", where(a.path(), "vectors") + ": missing argument of StaticVectors.v1 (a .npy "
                                                                        "or text file of the table)");
              o.column = a.get<std::size_t>("column", 0);
              o.dropout = a.get<std::optional<double>>("dropout", std::nullopt);
              std::string quoted = "\"";
              for (char ch : *path) {
                  if (ch == '"' || ch == '\\') quoted += '\\';
                  quoted += ch;
              }
              quoted += '"';
              StaticVectors<> layer(o);
              if (nM != dyn) layer.set_dim("nM", nM);
              layer.set_vectors(load_vectors(*path));
              const std::string opts = options(
                  "StaticVectorsOptions",
                  nonempty({o.column ? ".column = " + std::to_string(o.column) : "", dropout_field(o.dropout)}));
              return DynModel(std::move(layer))
                  .with_code("StaticVectors" + widths({o.nO, nM}) + "(load_vectors(" + quoted + ")" +
                             (opts.empty() ? "" : ", " + opts) + ")");
          }));
    // The layers that take several data types, as Thinc's: one form per type (DynModel::one_of).
    r.add("expand_window.v1", Factory([](Args& a) {
              const auto w = a.get<std::size_t>("window_size", 1);
              std::vector<DynModel> forms;
              forms.push_back(DynModel(expand_window<Floats2d>(w)).with_code("expand_window<" + std::to_string(w) + ", Floats2d>()"));
              forms.push_back(DynModel(expand_window<Ragged>(w)).with_code("expand_window<" + std::to_string(w) + ", Ragged>()"));
              return DynModel::one_of(std::move(forms));
          }));
    r.add("with_array.v1", Factory([](Args& a) {
              DynModel layer = a.get<DynModel>("layer");
              const auto pad = a.get<std::size_t>("pad", 0);
              std::string code;
              const F2d l = floats2d(layer, "with_array.v1", a.path(), code);
              code += pad ? ", " + std::to_string(pad) + ")" : ")";
              std::vector<DynModel> forms;
              forms.push_back(DynModel(with_array<List<Floats2d>>(F2d(l), pad)).with_code("with_array<List<Floats2d>>(" + code));
              forms.push_back(DynModel(with_array<Ragged>(F2d(l), pad)).with_code("with_array<Ragged>(" + code));
              forms.push_back(DynModel(with_array<Padded>(F2d(l), pad)).with_code("with_array<Padded>(" + code));
              forms.push_back(DynModel(with_array<Floats2d>(F2d(l), pad)).with_code("with_array<Floats2d>(" + code));
              return DynModel::one_of(std::move(forms));
          }));
    // Thinc's native LSTM (LSTM.v1: nO, nI, bi, depth, dropout) on Padded; with_padded.v1 runs
    // it over lists of arrays or a Ragged too.
    r.add("LSTM.v1", Factory([](Args& a) {
              const std::size_t nO = a.dim("nO"), nI = a.dim("nI");
              LSTMOptions o;
              o.bi = a.get<bool>("bi", false);
              o.depth = a.get<std::size_t>("depth", 1);
              o.dropout = a.get<double>("dropout", 0.0);
              const std::string opts =
                  options("LSTMOptions", nonempty({o.bi ? ".bi = true" : "",
                                                   o.depth != 1 ? ".depth = " + std::to_string(o.depth) : "",
                                                   o.dropout != 0.0 ? ".dropout = " + real(o.dropout) : ""}));
              return DynModel(LSTM<>(o, nO, nI)).with_code("LSTM" + widths({nO, nI}) + "(" + opts + ")");
          }));
    r.add("with_padded.v1", Factory([](Args& a) {
              DynModel layer = a.get<DynModel>("layer");
              if (!layer.is<Padded, Padded>())
                  fail("tenon-E318", where(a.path()) + " with_padded.v1: takes a layer from Padded to Padded; " +
                                         (layer.path().empty() ? std::string("a layer") : where(layer.path())) +
                                         " maps " + layer.in_name() + " to " + layer.out_name());
              const std::string code = layer.code<Padded, Padded>() + ")";
              const AnyModel<Padded, Padded> l = layer.take<Padded, Padded>();
              std::vector<DynModel> forms;
              forms.push_back(DynModel(with_padded<List<Floats2d>>(AnyModel<Padded, Padded>(l)))
                                  .with_code("with_padded<List<Floats2d>>(" + code));
              forms.push_back(DynModel(with_padded<Ragged>(AnyModel<Padded, Padded>(l))).with_code("with_padded<Ragged>(" + code));
              forms.push_back(DynModel(with_padded<Padded>(AnyModel<Padded, Padded>(l))).with_code("with_padded<Padded>(" + code));
              return DynModel::one_of(std::move(forms));
          }));
    r.add("list2ragged.v1", Factory([](Args&) { return DynModel(list2ragged<Floats2d>()).with_code("list2ragged<Floats2d>()"); }));
    r.add("ragged2list.v1", Factory([](Args&) { return DynModel(ragged2list<Floats2d>()).with_code("ragged2list<Floats2d>()"); }));
    r.add("reduce_mean.v1", Factory([](Args&) { return DynModel(reduce_mean()).with_code("reduce_mean()"); }));
    r.add("reduce_sum.v1", Factory([](Args&) { return DynModel(reduce_sum()).with_code("reduce_sum()"); }));
    r.add("reduce_max.v1", Factory([](Args&) { return DynModel(reduce_max()).with_code("reduce_max()"); }));
    r.add("ParametricAttention.v1", Factory([](Args& a) {
              const std::size_t nO = a.dim("nO");
              return DynModel(ParametricAttention<>(nO)).with_code("ParametricAttention" + widths({nO}) + "()");
          }));
    // key_transform: a model from Floats2d to Floats2d (E318 otherwise), or none (v1's math).
    r.add("ParametricAttention.v2", Factory([](Args& a) {
              auto key = a.get<std::optional<DynModel>>("key_transform", std::nullopt);
              const std::size_t nO = a.dim("nO");
              const std::string fn = "ParametricAttention_v2" + widths({nO});
              if (!key) return DynModel(ParametricAttention<>(nO)).with_code(fn + "()");
              std::string code;
              F2d k = floats2d(*key, "ParametricAttention.v2", a.path(), code);
              return DynModel(ParametricAttention_v2(std::move(k), nO)).with_code(fn + "(" + code + ")");
          }));
}
}  // namespace

Registry& layers() {
    static Registry r = [] {
        Registry reg("layers");
        register_layers(reg);
        return reg;
    }();
    return r;
}

namespace {
// spaCy's architectures (spacy/ml/models/tok2vec.py, tagger.py, textcat.py) over tenon's data:
// a document is its (tokens, features) id matrix (what spaCy's FeatureExtractor makes from the
// attrs), so the embedding takes List[Ints2d] where spaCy takes List[Doc].

// MultiHashEmbed: one HashEmbed per attr (seeds 8, 9, ... as spaCy), concatenated, then
// Maxout(nP = 3, normalize). List[Ints2d] -> List[Floats2d]. Four steps of a chain (so that a
// chain around it is one flat chain, as the static chain its code writes).
DynModel multi_hash_embed(const std::string& path, std::size_t width, const std::vector<std::size_t>& rows) {
    using Embed1 = AnyModel<Ints2d, Floats2d>;
    std::string code;
    auto table = [&](std::size_t i) {
        if (rows[i] == 0) fail("tenon-E314", where(path, "rows") + ": a table of 0 rows");
        const HashEmbedOptions o{.nO = width,
                                 .seed = static_cast<std::uint32_t>(8 + i),
                                 .column = i,
                                 .initializer = {},
                                 .dropout = 0.0};
        code += (i ? ", " : "") + hash_embed_code(rows[i], o);
        return Embed1(HashEmbed<>(rows[i], o));
    };
    // (More than two tables: two-table concatenates nested from the left; the same columns in
    // the same order, and the same file as the flat concatenate of the code.)
    Embed1 tables = table(0);
    for (std::size_t i = 1; i < rows.size(); ++i) tables = Embed1(concatenate(std::move(tables), table(i)));
    if (rows.size() > 1) code = "concatenate(" + code + ")";
    const MaxoutOptions mix{.nO = width, .nI = width * rows.size(), .nP = 3, .init_W = {}, .init_b = {},
                            .dropout = 0.0, .normalize = true};
    std::vector<DynModel> parts;
    parts.push_back(DynModel(list2ragged<Ints2d>()).with_code("list2ragged<Ints2d>()"));
    parts.push_back(DynModel(with_array<BasicRagged<Ints2d>>(std::move(tables)))
                        .with_code("with_array<BasicRagged<Ints2d>>(" + code + ")"));
    parts.push_back(DynModel(with_array<Ragged>(Maxout<>(mix))).with_code("with_array<Ragged>(" + maxout_code(mix) + ")"));
    parts.push_back(DynModel(ragged2list()).with_code("ragged2list()"));
    return DynModel::chain(std::move(parts), path);
}

// MaxoutWindowEncoder: depth residual blocks of expand_window >> Maxout(normalize), over each
// document's rows (pad: window_size * depth). List[Floats2d] -> List[Floats2d].
DynModel maxout_window_encoder(const std::string& path, std::size_t width, std::size_t window, std::size_t pieces,
                               std::size_t depth) {
    if (pieces == 0) fail("tenon-E314", where(path, "maxout_pieces") + ": expected a positive integer, found 0");
    if (depth == 0) fail("tenon-E314", where(path, "depth") + ": expected a positive integer, found 0");
    const MaxoutOptions o{.nO = width, .nI = width * (2 * window + 1), .nP = pieces, .init_W = {}, .init_b = {},
                          .dropout = 0.0, .normalize = true};
    auto cnn = expand_window(window) >> Maxout<>(o);
    return DynModel(with_array<List<Floats2d>>(clone(residual(std::move(cnn)), depth), window * depth))
        .with_code("with_array<List<Floats2d>>(clone(residual(chain(expand_window<" + std::to_string(window) +
                   ", Floats2d>(), " + maxout_code(o) + ")), " + std::to_string(depth) + "), " +
                   std::to_string(window * depth) + ")");
}

std::size_t required_width(Args& a, const char* name, const char* who) {
    const std::size_t w = a.dim(name);
    if (w == dyn) fail("tenon-E311", where(a.path(), name) + ": missing argument of " + who);
    return w;
}

void register_architectures(Registry& r) {
    r.add("spacy.MultiHashEmbed.v2", Factory([](Args& a) {
              const std::size_t width = required_width(a, "width", "spacy.MultiHashEmbed.v2");
              const auto attrs = a.get<std::vector<std::string>>("attrs");
              const auto rows = a.get<std::vector<std::size_t>>("rows");
              if (a.get<bool>("include_static_vectors", false))
                  fail("tenon-E318", where(a.path(), "include_static_vectors") +
                                         ": static vectors are not supported by tenon's spacy.MultiHashEmbed.v2");
              if (attrs.empty())
                  fail("tenon-E314", where(a.path(), "attrs") + ": no attrs: give at least one (e.g. [\"NORM\"])");
              if (rows.size() != attrs.size())
                  fail("tenon-E314", where(a.path(), "rows") + ": one row count per attr: " +
                                         std::to_string(rows.size()) + " rows for " + std::to_string(attrs.size()) +
                                         " attrs");
              return multi_hash_embed(a.path(), width, rows);
          }));
    r.add("spacy.MaxoutWindowEncoder.v2", Factory([](Args& a) {
              const std::size_t width = required_width(a, "width", "spacy.MaxoutWindowEncoder.v2");
              const auto window = a.get<std::size_t>("window_size");
              const auto pieces = a.get<std::size_t>("maxout_pieces");
              const auto depth = a.get<std::size_t>("depth");
              return maxout_window_encoder(a.path(), width, window, pieces, depth);
          }));
    // spaCy's BiLSTM encoder (List[Floats2d] -> List[Floats2d]): width / 2 hiddens a direction.
    // spaCy builds it on PyTorch's LSTM; here it is tenon's LSTM (Thinc's parameter layout), the
    // same function, so a file trained by spaCy does not load into it (its weights are PyTorch's).
    r.add("spacy.TorchBiLSTMEncoder.v1", Factory([](Args& a) {
              const std::size_t width = required_width(a, "width", "spacy.TorchBiLSTMEncoder.v1");
              const auto depth = a.get<std::size_t>("depth");
              const auto dropout = a.get<double>("dropout", 0.0);
              if (depth == 0)  // spaCy: noop()
                  fail("tenon-E314", where(a.path(), "depth") +
                                         ": expected a positive integer, found 0 (leave the encoder out instead)");
              LSTMOptions o;
              o.bi = true;
              o.depth = depth;
              o.dropout = dropout;
              const std::string opts =
                  options("LSTMOptions", nonempty({".bi = true", depth != 1 ? ".depth = " + std::to_string(depth) : "",
                                                   dropout != 0.0 ? ".dropout = " + real(dropout) : ""}));
              return DynModel(with_padded<List<Floats2d>>(LSTM<>(o, width, width)))
                  .with_code("with_padded<List<Floats2d>>(LSTM" + widths({width, width}) + "(" + opts + "))");
          }));
    // Tok2Vec.v2: embed >> encode.
    r.add("spacy.Tok2Vec.v2", Factory([](Args& a) {
              std::vector<DynModel> parts;
              parts.push_back(a.get<DynModel>("embed"));
              parts.push_back(a.get<DynModel>("encode"));
              return DynModel::chain(std::move(parts), a.path());
          }));
    // HashEmbedCNN.v2: Tok2Vec(MultiHashEmbed(width, attrs NORM (+ PREFIX, SUFFIX, SHAPE with
    // subword_features; rows embed_size, then embed_size // 2)), MaxoutWindowEncoder(...)).
    // The input's columns are the attrs in that order.
    r.add("spacy.HashEmbedCNN.v2", Factory([](Args& a) {
              const std::size_t width = required_width(a, "width", "spacy.HashEmbedCNN.v2");
              const auto depth = a.get<std::size_t>("depth");
              const auto embed_size = a.get<std::size_t>("embed_size");
              const auto window = a.get<std::size_t>("window_size");
              const auto pieces = a.get<std::size_t>("maxout_pieces");
              const bool subwords = a.get<bool>("subword_features");
              if (a.get<std::optional<std::string>>("pretrained_vectors", std::nullopt))
                  fail("tenon-E318", where(a.path(), "pretrained_vectors") +
                                         ": static vectors are not supported by tenon's spacy.HashEmbedCNN.v2");
              if (embed_size < (subwords ? 2u : 1u))
                  fail("tenon-E314", where(a.path(), "embed_size") + ": " + std::to_string(embed_size) +
                                         " rows are too few" + (subwords ? " (the subword tables get half)" : ""));
              std::vector<std::size_t> rows{embed_size};
              if (subwords) rows.insert(rows.end(), 3, embed_size / 2);
              std::vector<DynModel> parts;
              parts.push_back(multi_hash_embed(a.path(), width, rows));
              parts.push_back(maxout_window_encoder(a.path(), width, window, pieces, depth));
              return DynModel::chain(std::move(parts), a.path());
          }));
    // Tagger.v2: tok2vec >> with_array(Softmax(nO, normalize_outputs = normalize)).
    r.add("spacy.Tagger.v2", Factory([](Args& a) {
              std::vector<DynModel> parts;
              parts.push_back(a.get<DynModel>("tok2vec"));
              SoftmaxOptions o;
              o.nO = a.dim("nO");
              o.normalize_outputs = a.get<bool>("normalize", false);
              parts.push_back(DynModel(with_array<List<Floats2d>>(Softmax<>(o)))
                                  .with_code("with_array<List<Floats2d>>(" + softmax_code(o) + ")"));
              return DynModel::chain(std::move(parts), a.path());
          }));
    // TextCatCNN.v2: tok2vec >> list2ragged >> reduce_mean >> an output layer: Softmax(nO) for
    // exclusive classes, else Linear(nO) >> Logistic. (spaCy wraps the output layer in
    // `resizable` to add labels later; tenon's widths are fixed once initialised.)
    r.add("spacy.TextCatCNN.v2", Factory([](Args& a) {
              std::vector<DynModel> parts;
              parts.push_back(a.get<DynModel>("tok2vec"));
              const bool exclusive = a.get<bool>("exclusive_classes");
              const std::size_t nO = a.dim("nO");
              parts.push_back(DynModel(list2ragged<Floats2d>()).with_code("list2ragged<Floats2d>()"));
              parts.push_back(DynModel(reduce_mean()).with_code("reduce_mean()"));
              if (exclusive) {
                  const SoftmaxOptions o{.nO = nO};
                  parts.push_back(DynModel(Softmax<>(o)).with_code(softmax_code(o)));
              } else {
                  parts.push_back(DynModel(Linear<>(LinearOptions{.nO = nO})).with_code("Linear" + widths({nO}) + "()"));
                  parts.push_back(DynModel(SigmoidActivation()).with_code("SigmoidActivation()"));
              }
              return DynModel::chain(std::move(parts), a.path());
          }));
}
}  // namespace

Registry& architectures() {
    static Registry r = [] {
        Registry reg("architectures");
        register_architectures(reg);
        return reg;
    }();
    return r;
}

}  // namespace config
}  // namespace tenon
