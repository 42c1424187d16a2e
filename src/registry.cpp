// The registry (tenon/config/registry.hpp): DynChain's loops, DynModel, Args, the registries
// and the built-in factories (Thinc's and spaCy's names). Compiled once here, so that a user
// who builds models from configs compiles none of the layers' code for it.
#include "tenon/config/registry.hpp"

#include <algorithm>
#include <cctype>
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
#include "tenon/layers/maxout.hpp"
#include "tenon/layers/mish.hpp"
#include "tenon/layers/relu.hpp"
#include "tenon/layers/sigmoid.hpp"
#include "tenon/layers/softmax.hpp"
#include "tenon/model/widths.hpp"
#include "tenon/reduce/reduce_max.hpp"
#include "tenon/reduce/reduce_mean.hpp"
#include "tenon/reduce/reduce_sum.hpp"
#include "tenon/transfers/list2ragged.hpp"
#include "tenon/transfers/ragged2list.hpp"
#include "tenon/transfers/with_array.hpp"

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

void chain_sync_dims(Node& chain, Steps& steps) {
    if (steps.empty()) return;
    Node& first = steps.front()->node();
    Node& last = steps.back()->node();
    if (first.has_dim("nI")) chain.set_dim("nI", first.get_dim("nI"), true);
    if (last.has_dim("nO")) chain.set_dim("nO", last.get_dim("nO"), true);
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
    chain_sync_dims(chain, steps);
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
        bps.push_back([in, bp = std::move(bp)](const std::any& dY) { return bp(dY); });
    }
    return cur;
}

std::any chain_backprop(const std::vector<ErasedBackprop>& bps, std::any dY) {
    if (bps.empty()) fail("tenon-E118", "chain: backprop: this backprop holds no call");
    std::any d = std::move(dY);
    for (std::size_t i = bps.size(); i-- > 0;) d = bps[i](d);
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
        std::vector<detail::Steps> next;
        std::vector<bool> used(p.alts_.size(), false);
        for (auto& c : cur)
            for (std::size_t k = 0; k < p.alts_.size(); ++k)
                if (p.alts_[k].front()->in_type() == c.back()->out_type()) {
                    detail::Steps more = used[k] ? detail::clone_steps(p.alts_[k]) : std::move(p.alts_[k]);
                    used[k] = true;
                    for (auto& s : more) c.push_back(std::move(s));
                    next.push_back(std::move(c));
                    break;
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

std::string DynModel::in_name() const { return names_of(alts_, true); }
std::string DynModel::out_name() const { return names_of(alts_, false); }

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
double Args::as_number(const Value& v, std::string_view name) const {
    if (!v.is_number()) fail("tenon-E313", field(path_, name) + ": expected a number, found " + v.dump());
    return v.as_number();
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
DynModel build(const Value& section, const std::string& path) {
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
    return m;
}

DynModel build(const Config& config, std::string_view path) { return build(config.at(path), std::string(path)); }

// ---- the built-in factories ----------------------------------------------------------------
namespace {
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
LinearOptions linear(Args& a) {
    LinearOptions o;
    o.nO = a.dim("nO");
    o.nI = a.dim("nI");
    return o;
}

using F2d = AnyModel<Floats2d, Floats2d>;

// A combinator that takes layers from Floats2d to Floats2d (this first slice's only type for
// residual, clone, concatenate and add): E318 names the layer and what it maps.
F2d floats2d(DynModel& m, const std::string& who, const std::string& path) {
    if (!m.is<Floats2d, Floats2d>())
        fail("tenon-E318", where(path) + " " + who + ": takes layers from Floats2d to Floats2d; " +
                               (m.path().empty() ? std::string("a layer") : where(m.path())) + " maps " + m.in_name() +
                               " to " + m.out_name());
    return m.take<Floats2d, Floats2d>();
}

// concatenate.v1 / add.v1 with any number of layers: the typed combinators of two, nested
// from the left (a | b | c is concatenate(concatenate(a, b), c): the same columns in the same
// order; a + b + c sums in the same order).
template <class Combine>
DynModel fold(Args& a, const char* who, Combine combine) {
    std::vector<DynModel> parts = a.positional();
    if (parts.empty()) fail("tenon-E311", where(a.path()) + " " + who + ": needs at least one layer");
    F2d acc = floats2d(parts[0], who, a.path());
    for (std::size_t i = 1; i < parts.size(); ++i) acc = F2d(combine(std::move(acc), floats2d(parts[i], who, a.path())));
    return DynModel(std::move(acc));
}

void register_layers(Registry& r) {
    r.add("Linear.v1", [](Args& a) { return Linear<>(linear(a)); });
    r.add("Relu.v1", [](Args& a) { return Relu<>(dense(a, true)); });
    r.add("Mish.v1", [](Args& a) { return Mish<>(dense(a, true)); });
    r.add("Sigmoid.v1", [](Args& a) { return Sigmoid<>(linear(a)); });
    r.add("Maxout.v1", [](Args& a) {
        MaxoutOptions o;
        o.nO = a.dim("nO");
        o.nI = a.dim("nI");
        o.nP = a.get<std::size_t>("nP", 3);
        if (o.nP == 0) fail("tenon-E314", where(a.path(), "nP") + ": expected a positive integer, found 0");
        o.dropout = a.get<std::optional<double>>("dropout", std::nullopt);
        o.normalize = a.get<bool>("normalize", false);
        return Maxout<>(o);
    });
    r.add("Softmax.v1", [](Args& a) {
        SoftmaxOptions o;
        o.nO = a.dim("nO");
        o.nI = a.dim("nI");
        return Softmax<>(o);
    });
    r.add("Softmax.v2", [](Args& a) {
        SoftmaxOptions o;
        o.nO = a.dim("nO");
        o.nI = a.dim("nI");
        o.normalize_outputs = a.get<bool>("normalize_outputs", true);
        o.temperature = a.get<double>("temperature", 1.0);
        return Softmax<>(o);
    });
    r.add("LayerNorm.v1", [](Args& a) { return LayerNorm<>(a.dim("nI")); });
    r.add("Dropout.v1", [](Args& a) { return Dropout(a.get<double>("rate", 0.0)); });

    r.add("chain.v1", Factory([](Args& a) { return DynModel::chain(a.positional(), a.path()); }));
    r.add("residual.v1", Factory([](Args& a) {
              DynModel layer = a.get<DynModel>("layer");
              return DynModel(residual(floats2d(layer, "residual.v1", a.path())));
          }));
    r.add("clone.v1", Factory([](Args& a) {
              DynModel orig = a.get<DynModel>("orig");
              const auto n = a.get<std::size_t>("n");
              return DynModel(clone(floats2d(orig, "clone.v1", a.path()), n));
          }));
    r.add("concatenate.v1", Factory([](Args& a) {
              return fold(a, "concatenate.v1", [](F2d x, F2d y) { return concatenate(std::move(x), std::move(y)); });
          }));
    r.add("add.v1", Factory([](Args& a) {
              return fold(a, "add.v1", [](F2d x, F2d y) { return add(std::move(x), std::move(y)); });
          }));

    r.add("HashEmbed.v1", [](Args& a) {
        HashEmbedOptions o;
        o.nO = a.dim("nO");
        const std::size_t nV = a.dim("nV");
        if (nV == dyn) fail("tenon-E311", where(a.path(), "nV") + ": missing argument of HashEmbed.v1");
        o.seed = a.get<std::optional<std::uint32_t>>("seed", std::nullopt);
        o.column = a.get<std::size_t>("column", 0);
        o.dropout = a.get<std::optional<double>>("dropout", std::nullopt);
        return HashEmbed<>(nV, o);
    });
    r.add("Embed.v1", [](Args& a) {
        EmbedOptions o;
        o.nO = a.dim("nO");
        const std::size_t nV = a.dim("nV");
        if (nV == dyn) fail("tenon-E311", where(a.path(), "nV") + ": missing argument of Embed.v1");
        o.column = a.get<std::size_t>("column", 0);
        o.dropout = a.get<std::optional<double>>("dropout", std::nullopt);
        return Embed<>(nV, o);
    });
    // The layers that take several data types, as Thinc's: one form per type (DynModel::one_of).
    r.add("expand_window.v1", Factory([](Args& a) {
              const auto w = a.get<std::size_t>("window_size", 1);
              std::vector<DynModel> forms;
              forms.emplace_back(expand_window<Floats2d>(w));
              forms.emplace_back(expand_window<Ragged>(w));
              return DynModel::one_of(std::move(forms));
          }));
    r.add("with_array.v1", Factory([](Args& a) {
              DynModel layer = a.get<DynModel>("layer");
              const auto pad = a.get<std::size_t>("pad", 0);
              const F2d l = floats2d(layer, "with_array.v1", a.path());
              std::vector<DynModel> forms;
              forms.emplace_back(with_array<List<Floats2d>>(F2d(l), pad));
              forms.emplace_back(with_array<Ragged>(F2d(l), pad));
              forms.emplace_back(with_array<Padded>(F2d(l), pad));
              forms.emplace_back(with_array<Floats2d>(F2d(l), pad));
              return DynModel::one_of(std::move(forms));
          }));
    r.add("list2ragged.v1", [](Args&) { return list2ragged<Floats2d>(); });
    r.add("ragged2list.v1", [](Args&) { return ragged2list<Floats2d>(); });
    r.add("reduce_mean.v1", [](Args&) { return reduce_mean(); });
    r.add("reduce_sum.v1", [](Args&) { return reduce_sum(); });
    r.add("reduce_max.v1", [](Args&) { return reduce_max(); });
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
// spaCy's architectures (spacy/ml/models/tok2vec.py, tagger.py) over tenon's data: a document
// is its (tokens, features) id matrix (what spaCy's FeatureExtractor makes from the attrs), so
// the embedding takes List[Ints2d] where spaCy takes List[Doc].
void register_architectures(Registry& r) {
    // MultiHashEmbed.v2: one HashEmbed per attr (seeds 8, 9, ... as spaCy), concatenated,
    // then Maxout(nP = 3, normalize). List[Ints2d] -> List[Floats2d].
    r.add("spacy.MultiHashEmbed.v2", Factory([](Args& a) {
              const std::size_t width = a.dim("width");
              if (width == dyn) fail("tenon-E311", where(a.path(), "width") + ": missing argument of spacy.MultiHashEmbed.v2");
              const auto attrs = a.get<std::vector<std::string>>("attrs");
              const auto rows = a.get<std::vector<std::size_t>>("rows");
              if (a.get<bool>("include_static_vectors", false))
                  fail("tenon-E318", where(a.path(), "include_static_vectors") +
                                         ": static vectors are not supported by tenon's spacy.MultiHashEmbed.v2");
              if (attrs.empty() || rows.size() != attrs.size())
                  fail("tenon-E314", where(a.path(), "rows") + ": one row count per attr: " +
                                         std::to_string(rows.size()) + " rows for " + std::to_string(attrs.size()) +
                                         " attrs");
              using Embed1 = AnyModel<Ints2d, Floats2d>;
              auto table = [&](std::size_t i) {
                  if (rows[i] == 0) fail("tenon-E314", where(a.path(), "rows") + ": a table of 0 rows");
                  return Embed1(HashEmbed<>(rows[i], HashEmbedOptions{.nO = width,
                                                                      .seed = static_cast<std::uint32_t>(8 + i),
                                                                      .column = i,
                                                                      .initializer = {},
                                                                      .dropout = 0.0}));
              };
              // (More than two tables: two-table concatenates nested from the left; the same
              // columns in the same order.)
              Embed1 tables = table(0);
              for (std::size_t i = 1; i < rows.size(); ++i) tables = Embed1(concatenate(std::move(tables), table(i)));
              return DynModel(list2ragged<Ints2d>() >> with_array<BasicRagged<Ints2d>>(std::move(tables)) >>
                              with_array<Ragged>(Maxout<>({.nO = width, .nI = width * rows.size(), .nP = 3,
                                                           .init_W = {}, .init_b = {}, .dropout = 0.0,
                                                           .normalize = true})) >>
                              ragged2list());
          }));
    // MaxoutWindowEncoder.v2: depth residual blocks of expand_window >> Maxout(normalize),
    // over each document's rows (pad: window_size * depth). List[Floats2d] -> List[Floats2d].
    r.add("spacy.MaxoutWindowEncoder.v2", Factory([](Args& a) {
              const std::size_t width = a.dim("width");
              if (width == dyn) fail("tenon-E311", where(a.path(), "width") + ": missing argument of spacy.MaxoutWindowEncoder.v2");
              const auto window = a.get<std::size_t>("window_size");
              const auto pieces = a.get<std::size_t>("maxout_pieces");
              const auto depth = a.get<std::size_t>("depth");
              if (pieces == 0) fail("tenon-E314", where(a.path(), "maxout_pieces") + ": expected a positive integer, found 0");
              auto cnn = expand_window(window) >> Maxout<>({.nO = width, .nI = width * (2 * window + 1), .nP = pieces,
                                                            .init_W = {}, .init_b = {}, .dropout = 0.0,
                                                            .normalize = true});
              return DynModel(with_array<List<Floats2d>>(clone(residual(std::move(cnn)), depth), window * depth));
          }));
    // Tok2Vec.v2: embed >> encode.
    r.add("spacy.Tok2Vec.v2", Factory([](Args& a) {
              std::vector<DynModel> parts;
              parts.push_back(a.get<DynModel>("embed"));
              parts.push_back(a.get<DynModel>("encode"));
              return DynModel::chain(std::move(parts), a.path());
          }));
    // Tagger.v2: tok2vec >> with_array(Softmax(nO, normalize_outputs = normalize)), W zero.
    r.add("spacy.Tagger.v2", Factory([](Args& a) {
              std::vector<DynModel> parts;
              parts.push_back(a.get<DynModel>("tok2vec"));
              SoftmaxOptions o;
              o.nO = a.dim("nO");
              o.normalize_outputs = a.get<bool>("normalize", false);
              parts.emplace_back(with_array<List<Floats2d>>(Softmax<>(o)));
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
