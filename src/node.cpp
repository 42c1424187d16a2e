// The by-name services of Node (Thinc's Model API), compiled once.
#include "tenon/model/node.hpp"
#include "tenon/init/init.hpp"
#include "tenon/model/widths.hpp"
#include "tenon/model/finite.hpp"
#include "tenon/io/state.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <deque>
#include <mutex>
#include <new>
#include <vector>

#include <sys/mman.h>

namespace tenon {
namespace {
std::uint64_t next_id() {
    static std::atomic<std::uint64_t> counter{0};
    return ++counter;
}

std::string shape_string(const std::size_t* s, std::size_t rank) {
    std::string out = "(";
    for (std::size_t i = 0; i < rank; ++i) out += (i ? ", " : "") + std::to_string(s[i]);
    return out + ")";
}
}  // namespace

Node Node::dense_node(const char* name, extent_t NO, extent_t NI, std::size_t nO, std::size_t nI) {
    Node n(name, {{"nO", as_dim(NO)}, {"nI", as_dim(NI)}}, {{"W", {"nO", "nI"}}, {"b", {"nO"}}});
    if (nO != dyn) n.set_dim("nO", nO);
    if (nI != dyn) n.set_dim("nI", nI);
    return n;
}

Node Node::maxout_node(extent_t NO, extent_t NI, extent_t NP, std::size_t nO, std::size_t nI,
                       std::size_t nP) {
    Node n("maxout", {{"nO", as_dim(NO)}, {"nI", as_dim(NI)}, {"nP", as_dim(NP)}}, {{"W", {"nO", "nP", "nI"}}, {"b", {"nO", "nP"}}});
    if (nO != dyn) n.set_dim("nO", nO);
    if (nI != dyn) n.set_dim("nI", nI);
    if (nP != dyn) n.set_dim("nP", nP);  // a conflict with a static NP throws
    else if (NP == dyn) n.set_dim("nP", 3);
    if (n.has_dim("nP") && n.get_dim("nP") == 0) throw Error("maxout: nP must be >= 1", "tenon-E114");
    return n;
}

Node::Node(std::string name, std::initializer_list<std::pair<const char*, std::size_t>> dims,
           std::initializer_list<ParamDecl> params)
    : name_(std::move(name)), id_(next_id()) {
    dims_.reserve(dims.size());
    for (auto& [n, v] : dims) dims_.push_back(Dim{n, v, v});
    params_.reserve(params.size());
    for (auto& p : params) {
        Param q{p.name, {}, {}, {}, false, false};
        q.shape_dims = p.dims;
        q.shape_rank = p.rank;
        params_.push_back(std::move(q));
    }
}

Node::Node(const Node& o)
    : name_(o.name_), id_(next_id()), dims_(o.dims_), params_(o.params_), attrs_(o.attrs_), refs_(o.refs_),
      fixed_attrs_(o.fixed_attrs_), initialized_(o.initialized_) {}

Node& Node::operator=(const Node& o) {
    if (this != &o) {
        name_ = o.name_;
        dims_ = o.dims_;
        params_ = o.params_;
        attrs_ = o.attrs_;
        refs_ = o.refs_;
        fixed_attrs_ = o.fixed_attrs_;
        initialized_ = o.initialized_;
        life_.bump();  // a backprop made on the old contents refuses
        detail::layout_changed();
    }
    return *this;
}

Node::~Node() = default;

detail::NodeLife* detail::life_new(const void* holder) {
    auto* life = new NodeLife();
    life->holder.store(holder, std::memory_order_relaxed);
    return life;
}
void detail::life_retain(NodeLife* life) noexcept { life->refs.fetch_add(1, std::memory_order_relaxed); }
void detail::life_release(NodeLife* life) noexcept {
    if (life->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete life;
}
void detail::life_bump(NodeLife* life) noexcept { life->version.fetch_add(1, std::memory_order_acq_rel); }

void detail::LifeWatch::throw_backprop_stale() {
    throw Error("backprop: the model this backprop came from no longer exists as it was at its begin_update "
                "(destroyed, moved, assigned, or re-initialised with other widths or parameters): call "
                "begin_update again on the model as it is now",
                "tenon-E172");
}
Node::Node(Node&&) noexcept = default;

Node& Node::operator=(Node&& o) noexcept {
    if (this != &o) {
        name_ = std::move(o.name_);
        id_ = o.id_;
        dims_ = std::move(o.dims_);
        params_ = std::move(o.params_);
        attrs_ = std::move(o.attrs_);
        refs_ = std::move(o.refs_);
        fixed_attrs_ = std::move(o.fixed_attrs_);
        initialized_ = o.initialized_;
        life_ = std::move(o.life_);  // (both lives move: the backprops of either refuse)
        detail::layout_changed();
    }
    return *this;
}

const Node::Dim* Node::find_dim(std::string_view n) const noexcept {
    for (auto& d : dims_)
        if (d.name == n) return &d;
    return nullptr;
}
Node::Dim* Node::find_dim(std::string_view n) noexcept {
    return const_cast<Dim*>(std::as_const(*this).find_dim(n));
}

bool Node::has_dim(std::string_view n) const noexcept {
    auto* d = find_dim(n);
    if (!d) return false;
    if (d->set_here) return d->value != dyn;
    if (const Node* o = dim_owner(n); o && o->has_dim(n)) return true;
    return d->value != dyn;
}

std::size_t Node::get_dim(std::string_view n) const {
    auto* d = find_dim(n);
    if (!d) throw Error(name_ + ": has no dimension '" + std::string(n) + "'", "tenon-E104");
    if (!d->set_here)
        if (const Node* o = dim_owner(n); o && o->has_dim(n)) return o->get_dim(n);
    if (d->value == dyn)
        throw Error(name_ + ": dimension '" + std::string(n) +
                        "' is not known yet: give it when creating the layer or call initialize() with sample data",
                    "tenon-E105");
    return d->value;
}

void Node::set_dim(std::string_view n, std::size_t value, bool force) {
    auto* d = find_dim(n);
    if (!d) throw Error(name_ + ": has no dimension '" + std::string(n) + "'", "tenon-E104");
    if (value == 0 && is_width(n)) throw_zero_width("dimension '" + std::string(n) + "'");
    if (d->fixed != dyn && value != d->fixed)
        throw ShapeError(name_ + ": dimension '" + std::string(n) + "' is static " + std::to_string(d->fixed) +
                             " in the layer's type; cannot set it to " + std::to_string(value),
                         "tenon-E101");
    // The value it has now: its owner's where the node follows it (a chain's first layer's).
    const std::size_t current = has_dim(n) ? get_dim(n) : dyn;
    if (current != dyn && current != value && !force)
        throw ShapeError(name_ + ": dimension '" + std::string(n) + "' is already " + std::to_string(current) +
                             "; cannot change it to " + std::to_string(value),
                         "tenon-E101");
    // A value given to a node whose dim another node owns is the node's own until it follows
    // the owner again (follow_dim): initialize then compares the two.
    if (dim_owner(n)) d->set_here = true;
    if (current != value && force) {
        // The parameters' shapes depended on the old value.
        for (auto& p : params_) {
            Param q{p.name, {}, {}, {}, false, false};
            q.shape_dims = p.shape_dims;
            q.shape_rank = p.shape_rank;
            p = std::move(q);
        }
        initialized_ = false;
    }
    if (d->value != value) {
        detail::layout_changed();
        life_.bump();
    }
    d->value = value;
}

void Node::follow_dim(std::string_view n) {
    Dim* d = find_dim(n);
    if (!d) return;
    d->set_here = false;
    if (const Node* o = dim_owner(n); o && o->has_dim(n) && d->value != o->get_dim(n)) {
        d->value = o->get_dim(n);
        detail::layout_changed();
        life_.bump();
    }
}

bool Node::is_width(std::string_view n) noexcept { return n == "nO" || n == "nI"; }

void Node::throw_zero_width(const std::string& what) const {
    throw ShapeError(name_ + ": " + what + ": a width of 0 is not a layer's width (an input needs at least one "
                             "column, a layer at least one output)",
                     "tenon-E260");
}

void Node::resolve_dim(std::size_t i, std::size_t value) {
    auto& d = dims_[i];
    if (value == 0 && is_width(d.name)) throw_zero_width("dimension '" + d.name + "' from the sample");
    if (d.value == dyn) {
        d.value = value;
        detail::layout_changed();
        return;
    }
    if (d.value != value)
        detail::throw_width(name_, "dimension '" + d.name + "'", d.value, value);
}

void Node::fix_dim(std::size_t i, std::size_t value) {
    auto& d = dims_[i];
    if (d.value != dyn && d.value != value)
        detail::throw_width(name_, "dimension '" + d.name + "' (static " + std::to_string(value) +
                                       " from the layer before it in the chain)",
                            value, d.value);
    if (d.value != value) {
        detail::layout_changed();
        life_.bump();
    }
    d.value = value;
    d.fixed = value;
}

std::size_t Node::require_dim(std::size_t i) const { return get_dim(dims_[i].name); }

std::vector<std::string> Node::dim_names() const {
    std::vector<std::string> out;
    for (auto& d : dims_) out.push_back(d.name);
    return out;
}

const Node::Param* Node::find_param(std::string_view n) const noexcept {
    for (auto& p : params_)
        if (p.name == n) return &p;
    return nullptr;
}
Node::Param* Node::find_param(std::string_view n) noexcept {
    return const_cast<Param*>(std::as_const(*this).find_param(n));
}
const Node::Param& Node::require_param(std::string_view n) const {
    auto* p = find_param(n);
    if (!p) throw Error(name_ + ": has no parameter '" + std::string(n) + "'", "tenon-E106");
    if (!p->allocated)
        throw Error(name_ + ": parameter '" + std::string(n) + "' is not allocated: call initialize() first",
                    "tenon-E107");
    return *p;
}
Node::Param& Node::require_param(std::string_view n) {
    return const_cast<Param&>(std::as_const(*this).require_param(n));
}

void Node::allocate_param(std::size_t i, std::vector<std::size_t> shape) {
    auto& p = params_[i];
    // tenon-E240 when the shape's size overflows (a wrapped product would give a short buffer)
    const std::size_t n = detail::checked_bytes(shape.data(), shape.size(), sizeof(float)) / sizeof(float);
    p.shape = std::move(shape);
    // In the node's backend's memory (a device model's set_param on a new parameter, a load).
    const Memory m = ops().memory();
    p.value = Floats1d({n}, m);
    p.grad = Floats1d({n}, m);
    p.grad_lazy_zero = false;
    p.allocated = true;
    p.stamp.renew();
    detail::layout_changed();
    life_.bump();  // the old arrays are gone
}

bool Node::has_param(std::string_view n) const noexcept {
    auto* p = find_param(n);
    return p && p->allocated;
}

void Node::settle_grad(Param& p) noexcept {
    if (!p.grad_lazy_zero) return;
    p.grad.fill(0.0f);  // (in the gradient's memory, host or device)
    p.grad_lazy_zero = false;
}

namespace {
// At least n floats of zeros that no one writes and that live until the process ends: what
// a const get_grad returns for a lazy-zero gradient (whose own memory still holds the last
// step's values). The const call must not clear the gradient's memory nor its mark: two
// threads reading the gradients of a model (a monitor, a checkpoint) after finish_update
// would race on them. One region serves every size up to its own; a larger request maps a
// larger one under the lock and keeps the old one mapped, since views of it may still be
// held. The regions are anonymous read-only mappings: the kernel backs every page with its
// shared zero page, so they cost address space, not memory, and a write through a
// const_cast faults instead of corrupting anything. Readers take no lock on the fast path:
// the size is published (release) after the region is mapped.
std::atomic<const float*> zeros_data{nullptr};
std::atomic<std::size_t> zeros_size{0};
std::mutex zeros_mutex;

const float* shared_zeros(std::size_t n) {
    if (n <= zeros_size.load(std::memory_order_acquire)) return zeros_data.load(std::memory_order_acquire);
    std::lock_guard lock(zeros_mutex);
    std::size_t have = zeros_size.load(std::memory_order_relaxed);
    if (n <= have) return zeros_data.load(std::memory_order_relaxed);
    std::size_t want = std::max<std::size_t>({n, 2 * have, std::size_t(1) << 16});
    void* p = ::mmap(nullptr, want * sizeof(float), PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
        want = n;  // no room to grow ahead: exactly n
        p = ::mmap(nullptr, want * sizeof(float), PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p == MAP_FAILED) throw std::bad_alloc();
    }
    // The data before the size: a reader that sees the new size sees the new region.
    zeros_data.store(static_cast<const float*>(p), std::memory_order_release);
    zeros_size.store(want, std::memory_order_release);
    return static_cast<const float*>(p);
}
}  // namespace

namespace {
template <class V, class P>
V view_of(P& p, bool grad) {
    V v;
    v.data = grad ? p.grad.data() : p.value.data();
    v.rank = p.shape.size();
    for (std::size_t i = 0; i < v.rank; ++i) v.shape[i] = p.shape[i];
    return v;
}
}  // namespace

ParamView Node::get_param(std::string_view n) {
    Param& p = require_param(n);
    p.stamp.renew();  // the caller may write through the view
    return view_of<ParamView>(p, false);
}

detail::Mutex& detail::param_write_mutex() noexcept {
    static detail::Mutex m;
    return m;
}
CParamView Node::get_param(std::string_view n) const { return view_of<CParamView>(require_param(n), false); }
ParamView Node::get_grad(std::string_view n) {
    Param& p = require_param(n);
    settle_grad(p);
    return view_of<ParamView>(p, true);
}
CParamView Node::get_grad(std::string_view n) const {
    const Param& p = require_param(n);
    CParamView v = view_of<CParamView>(p, true);
    // A lazy zero is read as zeros without clearing it (see shared_zeros): a const call
    // writes nothing, so concurrent readers do not race.
    if (p.grad_lazy_zero && v.size()) v.data = shared_zeros(v.size());
    return v;
}
bool Node::has_grad(std::string_view n) const noexcept { return has_param(n); }
ParamView Node::get_grad_for_overwrite(std::string_view n, bool& zero) {
    Param& p = require_param(n);
    grad_for_overwrite_data(static_cast<std::size_t>(&p - params_.data()), zero);
    return view_of<ParamView>(p, true);
}

namespace {
void check_same_shape(const std::string& layer, std::string_view what, const std::vector<std::size_t>& want,
                      const CParamView& v) {
    bool same = want.size() == v.rank;
    for (std::size_t i = 0; same && i < v.rank; ++i) same = want[i] == v.shape[i];
    if (!same)
        throw ShapeError(layer + ": " + std::string(what) + ": expected shape " +
                             shape_string(want.data(), want.size()) + " but found " +
                             shape_string(v.shape.data(), v.rank),
                         "tenon-E108");
}
}  // namespace

// set_param's (and use_params') values must be finite (tenon-E119): a NaN or inf weight makes
// every output it reaches NaN, far from where it was written. (Values in a device's memory are
// counted there; device values given to a host model are not read.)
void detail::require_finite_param(const std::string& who, CParamView v, const Ops& ops) {
    if (!v.size()) return;
    const bool on_device = detail::memory_of(v.data) == Memory::device;
    if (on_device && ops.memory() != Memory::device) return;
    const std::size_t bad = detail::count_nonfinite_on(on_device ? &ops : nullptr, v.data, v.size());
    if (!bad) return;
    std::vector<float> staged;  // (the error's path: device values are read from a host copy)
    const float* values = v.data;
    if (on_device) {
        staged.resize(v.size());
        detail::copy_bytes(staged.data(), Memory::host, v.data, Memory::device, v.size() * sizeof(float));
        values = staged.data();
    }
    const std::size_t i = detail::first_nonfinite(values, v.size());
    throw Error(who + ": the values hold " + std::to_string(bad) + " non-finite value" + (bad == 1 ? "" : "s") +
                    " (NaN or inf), the first at flat index " + std::to_string(i) + " (" + std::to_string(values[i]) +
                    "); a parameter must be finite: nothing was set",
                "tenon-E119");
}

void Node::set_param(std::string_view n, CParamView v) {
    auto* p = find_param(n);
    if (!p) throw Error(name_ + ": has no parameter '" + std::string(n) + "'", "tenon-E106");
    if (p->allocated) {
        check_same_shape(name_, "set_param('" + std::string(n) + "')", p->shape, v);
    }
    if (v.size()) detail::require_finite_param(name_ + ": set_param('" + std::string(n) + "')", v, *ops_);
    if (!p->allocated) {
        allocate_param(static_cast<std::size_t>(p - params_.data()),
                       std::vector<std::size_t>(v.shape.begin(), v.shape.begin() + v.rank));
    }
    // From wherever the values are to wherever the parameter is (a device model's: one copy), and
    // the new stamp, under the lock a frozen plan copies under (never half of it).
    const detail::LockGuard lock(detail::param_write_mutex());
    if (v.size())
        detail::copy_bytes(p->value.data(), p->value.memory(), v.data, detail::memory_of(v.data), v.size() * sizeof(float));
    p->stamp.renew();
}

void Node::set_grad(std::string_view n, CParamView v) {
    auto& p = require_param(n);
    check_same_shape(name_, "set_grad('" + std::string(n) + "')", p.shape, v);
    p.grad_lazy_zero = false;
    if (v.size())
        detail::copy_bytes(p.grad.data(), p.grad.memory(), v.data, detail::memory_of(v.data), v.size() * sizeof(float));
}

void Node::inc_grad(std::string_view n, CParamView v) {
    auto& p = require_param(n);
    check_same_shape(name_, "inc_grad('" + std::string(n) + "')", p.shape, v);
    settle_grad(p);
    const std::size_t count = v.size();
    if (p.grad.memory() == Memory::device) {  // on the backend: the values copied there first if they are not
        const float* src = v.data;
        Floats1d moved;
        if (detail::memory_of(v.data) != Memory::device) {
            moved = Floats1d({count}, uninitialized, Memory::device);
            detail::copy_bytes(moved.data(), Memory::device, v.data, Memory::host, count * sizeof(float));
            src = moved.data();
        }
        ops().elementwise(Binary::add_into, src, nullptr, p.grad.data(), count);
        return;
    }
    float* g = p.grad.data();
    for (std::size_t i = 0; i < count; ++i) g[i] += v.data[i];
}

std::vector<std::string> Node::param_names() const {
    std::vector<std::string> out;
    for (auto& p : params_) out.push_back(p.name);
    return out;
}

bool Node::has_attr(std::string_view n) const noexcept {
    return std::any_of(attrs_.begin(), attrs_.end(), [&](auto& a) { return a.first == n; });
}
const Attr& Node::get_attr(std::string_view n) const {
    for (auto& a : attrs_)
        if (a.first == n) return a.second;
    throw Error(name_ + ": has no attribute '" + std::string(n) + "'", "tenon-E109");
}
void Node::set_fixed_attr(std::string_view n, Attr v) {
    set_attr(n, std::move(v));
    if (!is_fixed_attr(n)) fixed_attrs_.emplace_back(n);
}
bool Node::is_fixed_attr(std::string_view n) const noexcept {
    return std::find(fixed_attrs_.begin(), fixed_attrs_.end(), n) != fixed_attrs_.end();
}

void Node::set_attr(std::string_view n, Attr v) {
    for (auto& a : attrs_)
        if (a.first == n) {
            a.second = std::move(v);
            return;
        }
    attrs_.emplace_back(std::string(n), std::move(v));
}

bool Node::has_ref(std::string_view n) const noexcept {
    for (auto& r : refs_)
        if (r.first == n) return r.second != nullptr;
    return false;
}
const Node& Node::get_ref(std::string_view n) const {
    for (auto& r : refs_)
        if (r.first == n && r.second) return *r.second;
    throw Error(name_ + ": has no reference '" + std::string(n) + "'" +
                    (std::any_of(refs_.begin(), refs_.end(), [&](auto& r) { return r.first == n; }) ? " (it is unset)"
                                                                                                     : ""),
                "tenon-E230");
}
Node& Node::get_ref(std::string_view n) { return const_cast<Node&>(std::as_const(*this).get_ref(n)); }
void Node::set_ref(std::string_view n, Node* node) {
    for (auto& r : refs_)
        if (r.first == n) {
            r.second = node;
            return;
        }
    refs_.emplace_back(std::string(n), node);
}
std::vector<std::string> Node::ref_names() const {
    std::vector<std::string> out;
    for (auto& r : refs_) out.push_back(r.first);
    return out;
}

void Node::throw_attr_type(std::string_view n, const char* expected) const {
    const Attr& a = get_attr(n);
    static constexpr const char* kinds[] = {"bool", "an integer", "a number", "a string"};
    std::string found = kinds[a.index() < 4 ? a.index() : 3];
    if (const auto* s = std::get_if<std::string>(&a)) found += " ('" + *s + "')";
    throw Error(name_ + ": attribute '" + std::string(n) + "' must be " + expected + " but holds " + found,
                "tenon-E116");
}

void Node::for_each_child(const std::function<void(const Node&)>& f) const {
    const_cast<Node*>(this)->for_each_child([&](Node& c) { f(c); });
}

void Node::set_ops(const Ops& ops) {
    for (Node* n : walk()) n->ops_ = &ops;
}

std::vector<Node*> Node::walk() {
    std::vector<Node*> out;
    std::deque<Node*> queue{this};
    while (!queue.empty()) {
        Node* n = queue.front();
        queue.pop_front();
        out.push_back(n);
        n->for_each_child([&](Node& c) { queue.push_back(&c); });
    }
    return out;
}

std::vector<const Node*> Node::walk() const {
    auto nodes = const_cast<Node*>(this)->walk();
    return {nodes.begin(), nodes.end()};
}

void Node::require_initialized() const {
    if (!is_initialized())
        throw Error(name_ + ": the model is not initialized: call initialize() (with sample data for dims "
                            "that are not known) before predict() or begin_update()",
                    "tenon-E110");
}

std::string Node::describe() const {
    std::string out;
    std::function<void(const Node&, int)> rec = [&](const Node& n, int depth) {
        out += std::string(2 * depth, ' ') + n.name_;
        for (auto& d : n.dims_)
            out += " " + d.name + "=" + (n.has_dim(d.name) ? std::to_string(n.get_dim(d.name)) : std::string("?")) +
                   (d.fixed != dyn ? "(static)" : "");
        out += n.is_initialized() ? "\n" : " [not initialized]\n";
        n.for_each_child([&](const Node& c) { rec(c, depth + 1); });
    };
    rec(*this, 0);
    return out;
}

}  // namespace tenon

#include "tenon/optim/optimizer.hpp"

namespace tenon {
// Two walks over the same parameters in the same order (Optimizer::check_gradient): the
// first checks every gradient (the clipping norm's pass) and changes nothing, so that a step
// refused for a NaN or inf (tenon-E250) leaves every parameter, moment and gradient as it was;
// a step skipped (NonFinite::skip) only zeroes the gradients.
void Node::apply_optimizer(Optimizer& optimizer) {
    optimizer.begin_step();
    for (auto& p : params_)
        if (p.allocated) optimizer.check_gradient(*this, *this, p.name, p.grad.view(), p.grad_lazy_zero);
    const bool apply = optimizer.commit_step();
    for (auto& p : params_) {
        if (!p.allocated) continue;
        if (apply) {
            settle_grad(p);  // a gradient no backprop touched since the last step is zero
            // The optimizer leaves the gradient's memory as it is; it is zero from now on.
            optimizer.apply_checked(*this, p.name, p.value.view(), p.grad.view(), /*zero_grad=*/false);
            p.stamp.renew();  // (a fused step writes the values at end_step, before any later call)
        }
        p.grad_lazy_zero = true;
    }
    optimizer.end_step();
}

void Node::apply_optimizer_tree(Optimizer& optimizer) {
    // A local class has the member function's access to every Node's parameters. Its
    // recursion through for_each_child captures one pointer (std::function's buffer: no
    // allocation).
    struct Walk {
        Optimizer& opt;
        const Node& root;
        int phase;  // 0: check, 1: apply, 2: zero only (a skipped step)
        void operator()(Node& n) {
            for (auto& p : n.params_) {
                if (!p.allocated) continue;
                if (phase == 0) {
                    opt.check_gradient(root, n, p.name, p.grad.view(), p.grad_lazy_zero);
                    continue;
                }
                if (phase == 1) {
                    settle_grad(p);
                    opt.apply_checked(n, p.name, p.value.view(), p.grad.view(), /*zero_grad=*/false);
                    p.stamp.renew();
                }
                p.grad_lazy_zero = true;
            }
            n.for_each_child([this](Node& c) { (*this)(c); });
        }
    };
    const detail::StrictCall call(ops().memory() == Memory::device);  // a call, as predict's (docs/cuda.md)
    optimizer.begin_step();
    Walk walk{optimizer, *this, 0};
    walk(*this);
    walk.phase = optimizer.commit_step() ? 1 : 2;
    walk(*this);
    optimizer.end_step();  // a backend that fuses the step runs it now, over every parameter at once
}
}  // namespace tenon

namespace tenon::detail {
namespace {
// fill(n values at data), straight there in host memory, else into host memory copied over at once.
void fill_from_host(float* data, std::size_t n, const std::function<void(float*)>& fill) {
    if (memory_of(data) != Memory::device) {
        fill(data);
        return;
    }
    std::vector<float> host(n);
    fill(host.data());
    if (n) copy_bytes(data, Memory::device, host.data(), Memory::host, n * sizeof(float));
}
}  // namespace
void init_on_host(Floats1d& value, const std::function<void(float*)>& fill) {
    fill_from_host(value.data(), value.size(), fill);
}
void run_init(const Init& init, Node& node, std::string_view param) {
    const ParamView p = node.get_param(param);
    fill_from_host(p.data, p.size(), [&](float* data) {
        ParamView view = p;
        view.data = data;
        init(view);
    });
}
}  // namespace tenon::detail

namespace tenon::widths {
bool declares(const Node& n, const char* dim) {
    for (const auto& d : n.dim_names())
        if (d == dim) return true;
    return false;
}
void offer(Node& n, const char* dim, std::size_t v) {
    if (v != dyn && !n.has_dim(dim) && declares(n, dim)) n.set_dim(dim, v);
}
}  // namespace tenon::widths
