// The run-time half of lowering, compiled once into libtenon: the products' calls (on the
// model's backend; the row passes are the backend's too, src/cpu/ops.cpp), parameter
// lookup, the workspace layout and describe (include/tenon/lower/plan.hpp
// declares them; nothing here depends on a model's type). A translation unit that runs a
// model's plan instantiates only the typed walk and the call sequence (lower.hpp).
#include "tenon/lower/plan.hpp"
#include "tenon/lower/engine.hpp"

#include "tenon/layers/detail/embed_ids.hpp"
#include "tenon/types/sequences.hpp"

#include <cstdlib>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

namespace tenon::lowering {

EngineSlot::~EngineSlot() {
    if (alive) alive->store(false, std::memory_order_release);
}

void throw_model_gone() {
    throw Error("backprop: the model this backprop came from no longer exists (destroyed, or an AnyModel given "
                "another model): call begin_update on the model that is there now",
                "tenon-E172");
}

void throw_plan_model_gone(const std::string& model_name) {
    throw Error("plan of " + model_name + ": the model this plan was made from no longer exists where it was "
                "(destroyed, or moved into another object): call lower(model) on the model as it is now",
                "tenon-E172");
}

void throw_empty_gradient(const std::string& model, const EmptyLayout& want, const EmptyLayout& found) {
    const auto text = [](const EmptyLayout& l) {
        std::string t;
        if (l.entries != dyn) t += std::to_string(l.entries) + " sequence" + (l.entries == 1 ? "" : "s") + ", ";
        t += std::to_string(l.rows) + " row" + (l.rows == 1 ? "" : "s");
        if (l.width != dyn) t += " of width " + std::to_string(l.width);
        return t;
    };
    throw ShapeError(model + ": backprop: expected a gradient shaped like the output of the batch of no rows (" +
                         text(want) + "), but found " + text(found),
                     "tenon-E111");
}

void throw_plan_input(const std::string& model_name) {
    throw Error("begin_update of " + model_name + ": its plan does not take this input (the width of its rows, or "
                "its sequences' columns, differ from the model's), and its layers found nothing wrong with it: "
                "this is tenon's fault, please report it with the model and the input's shape",
                "tenon-E170");
}

void refuse(const Node& layer, const char* why) {
    throw Error("lower(): " + layer.name() + ": " + why, "tenon-E170");
}

PlanData::PlanData() = default;
PlanData::~PlanData() = default;
PlanData::PlanData(const PlanData&) = default;
PlanData::PlanData(PlanData&&) noexcept = default;
PlanData& PlanData::operator=(const PlanData&) = default;
PlanData& PlanData::operator=(PlanData&&) noexcept = default;

// A node's parameters and attributes by index (node.hpp makes this a friend): the plan finds
// the indices once (finalize) and reads through them at every call, where a look-up by name
// cost about a tenth of a batch-1 call.
struct ParamAccess {
    static std::size_t param_index(const Node& n, const char* name) {
        for (std::size_t i = 0; i < n.params_.size(); ++i)
            if (n.params_[i].name == name) return i;
        return npos;
    }
    static std::size_t attr_index(const Node& n, const char* name) {
        for (std::size_t i = 0; i < n.attrs_.size(); ++i)
            if (n.attrs_[i].first == name) return i;
        return npos;
    }
    // Parameter i (named `name`) through the node's own typed access; by name (with the
    // node's own error) where it is not allocated.
    static bool ok(const Node& n, std::size_t i) { return i < n.params_.size() && n.params_[i].allocated; }
    static const float* value(const Node& n, std::size_t i, const char* name) {
        return ok(n, i) ? n.param(i).value.data() : n.get_param(name).data;
    }
    static float* grad(Node& n, std::size_t i, const char* name) {
        return ok(n, i) ? n.grad_data(i) : n.get_grad(name).data;
    }
    static float* grad_for_overwrite(Node& n, std::size_t i, const char* name, bool& zero) {
        return ok(n, i) ? n.grad_for_overwrite_data(i, zero) : n.get_grad_for_overwrite(name, zero).data;
    }
    // The value stamp of parameter i (detail::ValueStamp).
    static std::uint64_t stamp(const Node& n, std::size_t i) { return n.params_[i].stamp.get(); }
    static std::size_t size(const Node& n, std::size_t i) { return n.params_[i].value.size(); }
    static const float* data(const Node& n, std::size_t i) { return n.params_[i].value.data(); }
    // Attribute i as a T where it is still the one named `name` and holds a T, else by name
    // (with the node's own errors).
    template <class T>
    static T attr(const Node& n, std::size_t i, const char* name) {
        if (i < n.attrs_.size() && n.attrs_[i].first == name)
            if (const T* v = std::get_if<T>(&n.attrs_[i].second)) return *v;
        return n.attr_as<T>(name);
    }
};

StageParams resolve(const Stage& s, bool train, bool grads) {
    StageParams sp;
    if (s.prim == Prim::dense || s.prim == Prim::maxout) {
        const Node& l = *s.layer;
        sp.W = ParamAccess::value(l, s.iW, "W");
        sp.b = ParamAccess::value(l, s.ib, "b");
        if (grads) {
            bool zero = false;
            sp.dW = ParamAccess::grad_for_overwrite(*s.layer, s.iW, "W", zero);
            sp.dW_beta = zero ? 0.0f : 1.0f;
            sp.db = ParamAccess::grad(*s.layer, s.ib, "b");
        }
        if (s.softmax) {
            const double t = ParamAccess::attr<double>(l, s.itemp, "softmax_temperature");
            if (!(t > 0.0))
                throw Error("softmax: the temperature must be > 0, found " + detail::number_str(t), "tenon-E113");
            sp.t = static_cast<float>(t);
            sp.k = t != 1.0 ? static_cast<float>(1.0 / t) : 1.0f;
            sp.normalize = (train && !detail::inference_pass) || ParamAccess::attr<bool>(l, s.inorm, "softmax_normalize");
        }
    }
    for (std::size_t i = 0; i < s.ops.size(); ++i) {
        const Op& op = s.ops[i];
        OpParams& o = sp.op[i];
        if (op.kind == OpKind::layernorm) {
            const Node& l = *op.node;
            o.G = ParamAccess::value(l, op.iG, "G");
            o.b = ParamAccess::value(l, op.ib, "b");
            if (grads) {
                o.dG = ParamAccess::grad(*op.node, op.iG, "G");
                o.db = ParamAccess::grad(*op.node, op.ib, "b");
            }
        } else if (op.kind == OpKind::dropout && train) {  // (predict: no dropout, nothing to read)
            const double r = op.drop->rate();
            o.on = !detail::inference_pass && r > 0.0 && op.drop->attr_as<bool>("is_enabled");
            o.all = r >= 1.0;
            if (o.on && !o.all) {
                o.keep = static_cast<float>(1.0 / (1.0 - r));
                o.threshold = static_cast<float>(r);
            }
        }
    }
    return sp;
}

bool product_forward(const Stage& s, const StageParams& sp, const Ctx& c) {
    const float* X = c.act(s.in);
    if (s.prim == Prim::dense && bias_act_epilogue(s, sp, c) &&
        c.ops->gemm_bias_act(s.act, c.rows, s.nO, s.nI, X, sp.W, sp.Wp, sp.b, c.act(s.out)))
        return true;
    const std::size_t n = s.prim == Prim::dense ? s.nO : s.nO * s.nP;
    float* out = s.prim == Prim::dense ? c.act(s.out) : c.buf(c.p->zs);
    if (sp.Wp) c.ops->gemm_prepacked(false, true, c.rows, n, s.nI, 1.0f, X, s.nI, sp.W, s.nI, sp.Wp, 0.0f, out, n);
    else c.ops->gemm(false, true, c.rows, n, s.nI, 1.0f, X, s.nI, sp.W, s.nI, 0.0f, out, n);
    return false;
}

// --- Frozen weights (lower/plan.hpp; docs/lowering.md, "Frozen weights").

FrozenWeights::FrozenWeights(const PlanData& p, const Ops& ops) : ops_(&ops), stages_(p.stages.size()) {
    bool any = false;
    for (const Stage& s : p.stages)
        any = any || ((s.prim == Prim::dense || s.prim == Prim::maxout) && ops.prepacked_size(s.nI, s.nO * s.nP) > 0);
    if (!any) return;  // a backend that does not prepack: no copies, the model's values are read
    const detail::MemoryScope memory(ops.memory());
    // The stamps and the values under the lock set_param writes under: a copy is of one
    // version of each parameter, and its stamp is that version's.
    const detail::LockGuard lock(detail::param_write_mutex());
    auto copy = [&](const Node& n, std::size_t i) -> const float* {
        if (!ParamAccess::ok(n, i)) return nullptr;
        const std::size_t size = ParamAccess::size(n, i);
        sources_.push_back({&n, i, ParamAccess::stamp(n, i)});
        store_.emplace_back(Floats1d::shape_type{size}, uninitialized);
        if (size) ops.copy_rows(ParamAccess::data(n, i), size, store_.back().data(), size, 1, size, false);
        floats_ += size;
        return store_.back().data();
    };
    store_.reserve(4 * p.stages.size() + 4 * max_ops);  // (pointers into store_ stay valid: Floats1d's data is its own)
    for (std::size_t i = 0; i < p.stages.size(); ++i) {
        const Stage& s = p.stages[i];
        if (s.prim != Prim::dense && s.prim != Prim::maxout) continue;
        const std::size_t n = s.nO * s.nP, packed = ops.prepacked_size(s.nI, n);
        const Node& l = *s.layer;
        if (!packed || !ParamAccess::ok(l, s.iW) || !ParamAccess::ok(l, s.ib) || ParamAccess::size(l, s.iW) != n * s.nI)
            continue;
        Copy& c = stages_[i];
        c.W = copy(l, s.iW);
        c.b = copy(l, s.ib);
        store_.emplace_back(Floats1d::shape_type{packed}, uninitialized);
        ops.prepack(true, s.nI, n, c.W, s.nI, store_.back().data());
        c.Wp = store_.back().data();
        floats_ += packed;
        for (std::size_t k = 0; k < s.ops.size() && k < max_ops; ++k)
            if (s.ops[k].kind == OpKind::layernorm) {
                c.G[k] = copy(*s.ops[k].node, s.ops[k].iG);
                c.gb[k] = copy(*s.ops[k].node, s.ops[k].ib);
            }
    }
}

bool FrozenWeights::current(const Ops& ops) const noexcept {
    if (&ops != ops_) return false;
    for (const Source& src : sources_)
        if (ParamAccess::stamp(*src.node, src.index) != src.stamp) return false;
    return true;
}

void FrozenWeights::apply(std::size_t stage, StageParams& sp) const noexcept {
    if (stage >= stages_.size()) return;
    const Copy& c = stages_[stage];
    if (!c.Wp) return;
    sp.W = c.W;
    sp.Wp = c.Wp;
    sp.b = c.b;
    for (std::size_t k = 0; k < max_ops; ++k) {
        if (c.G[k]) sp.op[k].G = c.G[k];
        if (c.gb[k]) sp.op[k].b = c.gb[k];
    }
}

FrozenSlot::FrozenSlot() = default;
FrozenSlot::~FrozenSlot() = default;
FrozenSlot::FrozenSlot(const FrozenSlot& o) : on_(o.on()), cur_(o.cur_.load()) {}
FrozenSlot& FrozenSlot::operator=(const FrozenSlot& o) {
    if (this != &o) {
        cur_.store(o.cur_.load());
        on_.store(o.on(), std::memory_order_release);
    }
    return *this;
}

void FrozenSlot::freeze(const PlanData& p, const Ops& ops) {
    std::shared_ptr<const FrozenWeights> made = std::make_shared<const FrozenWeights>(p, ops);
    const detail::LockGuard guard(lock_);
    cur_.store(std::move(made));
    on_.store(true, std::memory_order_release);
}

void FrozenSlot::thaw() noexcept {
    on_.store(false, std::memory_order_release);
    cur_.store(nullptr);
}

std::shared_ptr<const FrozenWeights> FrozenSlot::get(const PlanData& p, const Ops& ops) const {
    std::shared_ptr<const FrozenWeights> f = cur_.load();
    if (f && f->current(ops)) [[likely]]
        return f;
    // One thread copies; the others wait for its copies (a call that starts after a write
    // must see it), and calls still running on the old ones keep them alive.
    const detail::LockGuard guard(lock_);
    f = cur_.load();
    if (f && f->current(ops)) return f;
    f = std::make_shared<const FrozenWeights>(p, ops);
    cur_.store(f);
    return f;
}

void product_backward(const Stage& s, const StageParams& sp, const Ctx& c) {
    const std::size_t m = s.nO * s.nP;
    const float* dZ = dz_of(s, c);
    c.ops->gemm(true, false, m, s.nI, c.rows, 1.0f, dZ, m, c.act(s.in), s.nI, sp.dW_beta, sp.dW, s.nI);
    if (float* dX = c.grad(s.in))
        c.ops->gemm(false, false, c.rows, s.nI, m, 1.0f, dZ, m, sp.W, s.nI, s.dx_assign ? 0.0f : 1.0f, dX, s.nI);
}

namespace {
// Thinc's flatten with pad: the sequences' rows (unpadded, back to back) and their place in
// the padded rows, pad zero rows before, between and after the non-empty ones. f(unpadded
// row, padded row, rows) for each non-empty sequence; pads(padded row) for each run of pad rows.
template <class F, class G>
void padded_runs(const Ctx& c, std::size_t pad, F&& f, G&& pads) {
    std::size_t u = 0, q = 0;
    bool any = false;
    for (std::size_t i = 0; i < c.nseg; ++i) {
        const auto n = static_cast<std::size_t>(c.lengths[i]);
        if (!n) continue;
        pads(q);
        q += pad;
        f(u, q, n);
        u += n;
        q += n;
        any = true;
    }
    if (any) pads(q);
}
}  // namespace

namespace {
// The steps space (a Padded's (T, B) rows): the column of each sequence (to_padded's order:
// longer first, for equal lengths the later sequence first), into host memory from the
// thread's block cache; f(sequence's first row, its rows, column, B) for each sequence.
template <class F>
void step_columns(const Ctx& c, F&& f) {
    Array<std::uint32_t, dyn> order({c.nseg}, uninitialized);
    std::uint32_t* o = order.data();
    detail::padded_order(c.lengths, c.nseg, o);
    Array<std::size_t, dyn> start({c.nseg}, uninitialized);
    std::size_t u = 0;
    for (std::size_t i = 0; i < c.nseg; ++i) {
        start[i] = u;
        u += static_cast<std::size_t>(c.lengths[i]);
    }
    for (std::size_t b = 0; b < c.nseg; ++b)
        f(start[o[b]], static_cast<std::size_t>(c.lengths[o[b]]), b, c.nseg);
}

}  // namespace

void steps_to_rows(const Ctx& c, const float* steps, std::size_t n, float* rows, bool add) {
    step_columns(c, [&](std::size_t u, std::size_t k, std::size_t b, std::size_t B) {
        c.ops->copy_rows(steps + b * n, B * n, rows + u * n, n, k, n, add);
    });
}

void rows_to_steps(const Ctx& c, const float* rows, std::size_t n, float* steps, bool add) {
    if (!add) {
        std::size_t longest = 0;
        for (std::size_t i = 0; i < c.nseg; ++i) longest = std::max(longest, static_cast<std::size_t>(c.lengths[i]));
        c.ops->zero(steps, longest * c.nseg * n);
    }
    step_columns(c, [&](std::size_t u, std::size_t k, std::size_t b, std::size_t B) {
        c.ops->copy_rows(rows + u * n, n, steps + b * n, B * n, k, n, add);
    });
}

void padded_layout(const std::int32_t* lengths, std::size_t nseg, Ints1d& size_at_t, Ints1d& sorted,
                   Ints1d& indices) {
    // (to_padded's order; from the block cache: no allocation after warm-up)
    Array<std::uint32_t, dyn> order({nseg}, uninitialized);
    detail::padded_order(lengths, nseg, order.data());
    const std::size_t T = nseg ? static_cast<std::size_t>(lengths[order[0]]) : 0;
    size_at_t = Ints1d({T}, uninitialized);
    sorted = Ints1d({nseg}, uninitialized);
    indices = Ints1d({nseg}, uninitialized);
    for (std::size_t b = 0; b < nseg; ++b) {
        sorted[b] = lengths[order[b]];
        indices[b] = static_cast<std::int32_t>(order[b]);
    }
    std::size_t live = nseg;
    for (std::size_t t = 0; t < T; ++t) {
        while (live > 0 && static_cast<std::size_t>(sorted[live - 1]) <= t) --live;
        size_at_t[t] = static_cast<std::int32_t>(live);
    }
}

const char* padded_off_plan(const Padded& X) {
    const std::size_t B = X.size(), T = X.steps();
    const auto& L = X.lengths();
    const auto& I = X.indices();
    if (T != (B ? static_cast<std::size_t>(L[0]) : 0)) return "steps past the longest sequence";
    for (std::size_t b = 1; b < B; ++b)
        if (L[b] == L[b - 1] && I[b] > I[b - 1])
            return "sequences of equal length in another order than to_padded's (the later one first)";
    return nullptr;
}

void check_padded_input(const PlanData& p, const Padded& X) {
    if (const char* why = padded_off_plan(X))
        throw ShapeError("plan of " + p.model_name + ": takes a Padded as to_padded makes it, but this one has " +
                             why + " (the model's own predict / begin_update take it)",
                         "tenon-E101");
}

namespace {
SeqCall seq_call(const Stage& s, const Ctx& c) {
    SeqCall sc;
    sc.ops = c.ops;
    sc.lengths = c.lengths;
    sc.nseg = c.nseg;
    sc.rows = c.rows;
    sc.train = c.train;
    if (c.p->bounds[s.in].ints) {  // the plan's ids (rows x in_cols int32)
        sc.ids = reinterpret_cast<const std::int32_t*>(c.act(s.in));
        sc.cols = c.in_cols;
    } else {
        sc.x = c.act(s.in);
        sc.k = s.parts.empty() ? sc.x : c.act(s.parts[0]);
    }
    sc.scratch = c.buf(s.sscratch);
    sc.train_scratch = c.train ? c.buf(s.strain) : nullptr;
    sc.host = c.host ? c.host + static_cast<std::size_t>(&s - c.p->stages.data()) * seq_host_words : nullptr;
    return sc;
}

// The row order of a reverse stage: row t of each sequence is read from row len - 1 - t (on
// the steps space: step t of a column from step len - 1 - t, its padding rows from themselves).
void reversed_rows(const Ctx& c, bool steps, std::size_t rows, std::uint32_t* idx) {
    if (steps) {
        for (std::size_t r = 0; r < rows; ++r) idx[r] = static_cast<std::uint32_t>(r);
        step_columns(c, [&](std::size_t, std::size_t len, std::size_t b, std::size_t B) {
            for (std::size_t t = 0; t < len; ++t) idx[t * B + b] = static_cast<std::uint32_t>((len - 1 - t) * B + b);
        });
        return;
    }
    std::size_t start = 0;
    for (std::size_t b = 0; b < c.nseg; ++b) {
        const auto len = static_cast<std::size_t>(c.lengths[b]);
        for (std::size_t t = 0; t < len; ++t) idx[start + t] = static_cast<std::uint32_t>(start + len - 1 - t);
        start += len;
    }
}
}  // namespace

// Every value these stages read or write in the workspace goes through the backend (a
// device backend's workspace is its memory); what stays on the host is the call's lengths,
// a table's keys (computed by the layer's own code from the ids) and the flags a stage keeps
// for its backward in the call's host words (Ctx::host).
void seq_forward(const Stage& s, const Ctx& c) {
    float* out = c.act(s.out);
    const Ops& ops = *c.ops;
    const std::size_t rows = c.rows, n = s.nO;
    switch (s.prim) {
        case Prim::table: {
            const auto* ids = reinterpret_cast<const std::int32_t*>(c.act(s.in));
            auto* keys = reinterpret_cast<std::uint32_t*>(c.buf(s.keys));
            const detail::SequenceRowsScope seqs(c.lengths, c.nseg, 0);  // (for the layer's errors)
            if (ops.memory() == Memory::host) {
                s.table_keys(s.layer, ids, rows, c.in_cols, keys);
            } else {  // made by the layer's host code, then copied into the workspace
                Array<std::uint32_t, dyn> host({rows * s.per}, uninitialized);
                s.table_keys(s.layer, ids, rows, c.in_cols, host.data());
                detail::copy_bytes(keys, ops.memory(), host.data(), Memory::host, host.size() * sizeof(std::uint32_t));
            }
            ops.gather_add_rows(ParamAccess::value(*s.layer, s.iW, "E"), n, keys, rows, s.per, out);
            if (c.train) {
                // The layer's column mask, drawn where the layer draws it (tables run in model order),
                // kept in the workspace; whether there is one, in the call's host words.
                const Floats1d m = detail::column_dropout_mask(*s.layer, n, true);
                c.host[(&s - c.p->stages.data()) * seq_host_words] = m.size() ? 1 : 0;
                if (m.size()) {
                    copy_floats(ops, c.buf(s.mask) + 1, m.data(), n);
                    detail::apply_column_mask(ops, out, rows, m);
                }
            }
            break;
        }
        case Prim::window: {
            if (s.window_segments) {
                ops.seq2col(c.act(s.in), c.lengths, c.nseg, s.window, s.nI, out);
            } else {
                const auto len = static_cast<std::int32_t>(rows);
                ops.seq2col(c.act(s.in), &len, 1, s.window, s.nI, out);
            }
            break;
        }
        case Prim::concat: {  // (add's: every part into the same columns, summed in order)
            std::size_t c0 = 0;
            for (std::size_t k = 0; k < s.parts.size(); ++k) {
                const std::size_t b = s.parts[k], w = c.p->bounds[b].width;
                ops.copy_rows(c.act(b), w, out + c0, n, rows, w, s.sum && k > 0);
                if (!s.sum) c0 += w;
            }
            break;
        }
        case Prim::pad: {
            const float* x = c.act(s.in);
            if (c.p->spaces[s.space].steps) {
                rows_to_steps(c, x, n, out, false);
                break;
            }
            const std::size_t pad = c.p->spaces[s.space].pad;
            padded_runs(
                c, pad, [&](std::size_t u, std::size_t q, std::size_t k) { ops.copy_rows(x + u * n, n, out + q * n, n, k, n, false); },
                [&](std::size_t q) { ops.zero(out + q * n, pad * n); });
            break;
        }
        case Prim::unpad: {
            const float* x = c.act(s.in);
            if (c.p->spaces[c.p->bounds[s.in].space].steps) {
                steps_to_rows(c, x, n, out, false);
                break;
            }
            const std::size_t pad = c.p->spaces[c.p->bounds[s.in].space].pad;
            padded_runs(
                c, pad, [&](std::size_t u, std::size_t q, std::size_t k) { ops.copy_rows(x + q * n, n, out + u * n, n, k, n, false); },
                [](std::size_t) {});
            break;
        }
        case Prim::reduce: {  // rows: one per sequence; the input: the sequences' rows
            if (s.why) detail::check_nonempty_sequences(s.name, c.lengths, c.nseg, s.why);
            ops.zero(out, rows * n);
            auto* which = c.train && s.which != npos ? reinterpret_cast<std::int32_t*>(c.buf(s.which)) : nullptr;
            if (c.nseg) ops.segment_reduce(s.red, c.act(s.in), c.lengths, c.nseg, n, out, which);
            break;
        }
        case Prim::reverse: {  // each sequence's rows in reverse order: a gather by row
            auto* idx = reinterpret_cast<std::uint32_t*>(c.buf(s.keys));
            // (The plan's reverse stages on a space share one row order: the first stage makes it.)
            const bool steps = c.p->spaces[s.space].steps;
            bool made = false;
            for (const Stage* t = c.p->stages.data(); t != &s && !made; ++t)
                made = t->prim == Prim::reverse && t->space == s.space;
            if (!made && ops.memory() == Memory::host) {
                reversed_rows(c, steps, rows, idx);
            } else if (!made) {  // made on the host, then copied into the workspace (as a table's keys)
                Array<std::uint32_t, dyn> host({rows}, uninitialized);
                reversed_rows(c, steps, rows, host.data());
                detail::copy_bytes(idx, ops.memory(), host.data(), Memory::host, rows * sizeof(std::uint32_t));
            }
            ops.gather_add_rows(c.act(s.in), n, idx, rows, 1, out);
            break;
        }
        case Prim::seq: {  // the layer's own code, its scratch here
            SeqCall sc = seq_call(s, c);
            std::uint64_t host[seq_host_words] = {};  // (predict: no backward reads them)
            if (!sc.host) sc.host = host;
            sc.y = out;
            s.seq->forward(s.layer, sc);
            break;
        }
        default:
            break;
    }
}

void seq_backward(const Stage& s, const Ctx& c, const float* d) {
    const Ops& ops = *c.ops;
    const std::size_t rows = c.rows, n = s.nO;
    switch (s.prim) {
        case Prim::table: {
            const bool masked = c.host[(&s - c.p->stages.data()) * seq_host_words] != 0;
            ops.scatter_add_rows(ParamAccess::grad(*s.layer, s.iW, "E"), n, reinterpret_cast<const std::uint32_t*>(c.buf(s.keys)),
                                 rows, s.per, d, masked ? c.buf(s.mask) + 1 : nullptr);
            break;
        }
        case Prim::window: {
            float* dx = c.grad(s.in);
            if (!dx) break;
            if (s.dx_assign) ops.zero(dx, rows * s.nI);
            if (s.window_segments) {
                ops.backprop_seq2col(d, c.lengths, c.nseg, s.window, s.nI, dx);
            } else {
                const auto len = static_cast<std::int32_t>(rows);
                ops.backprop_seq2col(d, &len, 1, s.window, s.nI, dx);
            }
            break;
        }
        case Prim::reverse: {  // the same permutation: dX[idx[r]] = d[r]
            float* dx = c.grad(s.in);
            if (!dx) break;
            if (s.dx_assign) ops.zero(dx, rows * n);
            ops.scatter_add_rows(dx, n, reinterpret_cast<const std::uint32_t*>(c.buf(s.keys)), rows, 1, d, nullptr);
            break;
        }
        case Prim::concat: {
            std::size_t c0 = 0;
            for (std::size_t k = 0; k < s.parts.size(); ++k) {
                const std::size_t b = s.parts[k], w = c.p->bounds[b].width;
                if (float* g = c.grad(b)) ops.copy_rows(d + c0, n, g, w, rows, w, !s.part_assign[k]);
                if (!s.sum) c0 += w;
            }
            break;
        }
        case Prim::pad: {  // d: padded rows; the input's gradient: the sequences' rows
            float* dx = c.grad(s.in);
            if (!dx) break;
            if (c.p->spaces[s.space].steps) {  // (the padding rows' gradient goes nowhere: they are constants)
                steps_to_rows(c, d, n, dx, !s.dx_assign);
                break;
            }
            const std::size_t pad = c.p->spaces[s.space].pad;
            padded_runs(
                c, pad,
                [&](std::size_t u, std::size_t q, std::size_t k) { ops.copy_rows(d + q * n, n, dx + u * n, n, k, n, !s.dx_assign); },
                [](std::size_t) {});
            break;
        }
        case Prim::unpad: {  // d: the sequences' rows; the input's gradient: padded rows (0 at the pads)
            float* dx = c.grad(s.in);
            if (!dx) break;
            if (c.p->spaces[c.p->bounds[s.in].space].steps) {
                rows_to_steps(c, d, n, dx, !s.dx_assign);
                break;
            }
            const std::size_t pad = c.p->spaces[c.p->bounds[s.in].space].pad;
            padded_runs(
                c, pad,
                [&](std::size_t u, std::size_t q, std::size_t k) { ops.copy_rows(d + u * n, n, dx + q * n, n, k, n, !s.dx_assign); },
                [&](std::size_t q) {
                    if (s.dx_assign) ops.zero(dx + q * n, pad * n);
                });
            break;
        }
        case Prim::reduce: {  // d: one row per sequence; the input's gradient: the sequences' rows
            float* dx = c.grad(s.in);
            if (!dx) break;
            const std::size_t in_rows = c.srows[c.p->bounds[s.in].space];
            float* to = s.dx_assign ? dx : c.buf(s.rscratch);
            ops.zero(to, in_rows * n);
            const auto* which = s.which != npos ? reinterpret_cast<const std::int32_t*>(c.buf(s.which)) : nullptr;
            if (c.nseg) ops.segment_reduce_backward(s.red, d, c.lengths, c.nseg, n, which, to);
            if (!s.dx_assign) ops.copy_rows(to, n, dx, n, in_rows, n, true);
            break;
        }
        case Prim::seq: {
            SeqCall sc = seq_call(s, c);
            sc.dy = d;
            sc.dx = c.p->bounds[s.in].ints ? nullptr : c.grad(s.in);
            sc.dx_add = !s.dx_assign;
            sc.dk = s.parts.empty() ? nullptr : c.grad(s.parts[0]);
            s.seq->backward(s.layer, sc);
            break;
        }
        default:
            break;
    }
}

std::string fmt_rate(double r) {
    std::string s = std::to_string(r);
    while (s.size() > 1 && s.back() == '0') s.pop_back();
    if (!s.empty() && s.back() == '.') s.pop_back();
    return s;
}

std::string describe_stages(const PlanData& p) {
    std::string out = "plan for " + p.model_name + ": " + std::to_string(p.stages.size()) + " stage" +
                      (p.stages.size() == 1 ? "" : "s") + "\n";
    for (std::size_t i = 0; i < p.stages.size(); ++i) {
        const Stage& s = p.stages[i];
        std::string line = "stage " + std::to_string(i) + ": ";
        std::vector<std::string> parts;
        switch (s.prim) {
            case Prim::dense:
                line += "gemm " + std::to_string(s.nI) + "->" + std::to_string(s.nO);
                parts.push_back("bias");
                if (s.name != "linear") parts.push_back(s.name);
                break;
            case Prim::maxout:
                line += "gemm " + std::to_string(s.nI) + "->" + std::to_string(s.nO * s.nP);
                parts.push_back("bias");
                parts.push_back("maxout(" + std::to_string(s.nP) + " pieces)->" + std::to_string(s.nO));
                break;
            case Prim::none:
                line += "elementwise " + std::to_string(s.nO);
                break;
            case Prim::layer:
                line += "layer " + s.name + (s.head ? "" : " " + std::to_string(s.nI)) + "->" + std::to_string(s.nO);
                break;
            case Prim::table:
                line += "table " + s.name + " (" + std::to_string(s.per) + " row" + (s.per == 1 ? "" : "s") +
                        " per id)->" + std::to_string(s.nO);
                break;
            case Prim::window:
                line += "window " + std::to_string(s.nI) + "->" + std::to_string(s.nO) + " (" +
                        std::to_string(s.window) + " each side" + (s.window_segments ? ", per sequence" : "") + ")";
                break;
            case Prim::concat: {
                line += s.sum ? "add" : "concat";
                for (std::size_t k = 0; k < s.parts.size(); ++k)
                    line += (k ? "+" : " ") + std::to_string(p.bounds[s.parts[k]].width);
                line += "->" + std::to_string(s.nO);
                break;
            }
            case Prim::pad:
                if (p.spaces[s.space].steps)
                    line += "pad " + std::to_string(s.nO) + " (a Padded's steps x sequences rows)";
                else
                    line += "pad " + std::to_string(s.nO) + " (" + std::to_string(p.spaces[s.space].pad) +
                            " zero rows around each sequence)";
                break;
            case Prim::unpad:
                line += "unpad " + std::to_string(s.nO);
                break;
            case Prim::reduce:
                line += s.name + " " + std::to_string(s.nO) + " (one row per sequence)";
                break;
            case Prim::reverse:
                line += "reverse " + std::to_string(s.nO) + " (each sequence's rows)";
                break;
            case Prim::seq:
                line += s.name + " " + (p.bounds[s.in].ints ? std::string("ids") : std::to_string(s.nI)) + "->" +
                        std::to_string(s.nO) + " (over the sequences" +
                        (s.parts.empty() ? "" : ", keys x" + std::to_string(s.parts[0])) + ")";
                break;
        }
        for (const Op& op : s.ops) {
            switch (op.kind) {
                case OpKind::layernorm: parts.push_back("layernorm"); break;
                case OpKind::dropout: parts.push_back("dropout(" + fmt_rate(op.drop->rate()) + ")"); break;
                case OpKind::sigmoid: parts.push_back("sigmoid"); break;
                case OpKind::add: parts.push_back("residual add (x" + std::to_string(op.skip) + ")"); break;
            }
        }
        if (!parts.empty()) {
            line += " |";
            for (std::size_t k = 0; k < parts.size(); ++k) line += (k ? ", " : " ") + parts[k];
        }
        std::string from = "x" + std::to_string(s.in);
        if (s.prim == Prim::concat) {
            from.clear();
            for (std::size_t k = 0; k < s.parts.size(); ++k) from += (k ? ",x" : "x") + std::to_string(s.parts[k]);
        }
        out += line + "   [" + from + " -> x" + std::to_string(s.out) + "]\n";
    }
    return out;
}

std::string describe_layout(const PlanData& p, std::size_t rows) {
    std::string out;
    const std::size_t r16 = PlanData::r16(rows);
    // (every space `rows` rows, as listed below: a batch of `rows` sequences of one row each)
    std::size_t r[max_spaces + 1];
    p.space_rows(rows, 0, rows, r, rows ? 1 : 0);
    for (int t = 1; t >= 0; --t) {
        const std::size_t total = p.ws_floats(r, t == 1) * sizeof(float);
        out += std::string(t ? "training" : "predict") + " workspace for batch " + std::to_string(rows) + ": " +
               std::to_string(total) + " bytes\n";
        for (const Buffer& b : p.bufs) {
            if (t == 0 && !b.in_predict) continue;
            std::size_t off = b.pre_fixed[t];
            for (std::size_t k = 0; k <= max_spaces; ++k) off += r16 * b.pre_row[t][k];
            off *= sizeof(float);
            const std::size_t bytes = (rows * b.per_row + b.fixed) * sizeof(float);
            auto pad = [](std::string v, std::size_t w) { return std::string(v.size() < w ? w - v.size() : 0, ' ') + v; };
            out += "  @" + pad(std::to_string(off), 10) + "  " + pad(std::to_string(bytes), 9) + " B  " + b.what + (b.per_row ? " (" + std::to_string(rows) + "x" + std::to_string(b.per_row) + ")" : "") +
                   "\n";
        }
    }
    return out;
}

void note_workspace_error(Error& e, const PlanData& p, std::size_t rows, bool train) {
    // The largest part of this call's workspace, and its stage ("stage N ..." in its name).
    const Buffer* big = nullptr;
    std::size_t big_floats = 0;
    for (const Buffer& b : p.bufs) {
        if (!train && !b.in_predict) continue;
        const std::size_t n = rows * b.per_row + b.fixed;
        if (!big || n > big_floats) big = &b, big_floats = n;
    }
    std::string more = " (the " + std::string(train ? "training" : "predict") + " workspace of the plan of " +
                       p.model_name + " for " + std::to_string(rows) + " rows";
    if (big)
        more += "; its largest part, " + std::to_string(big_floats * sizeof(float)) + " bytes, is " + big->what;
    e.set_message(e.message() + more + ")");
    if (!big || p.stages.empty()) return;
    // A stage's own part, else a scratch shared by the stages: sized for the widest output.
    std::size_t si = 0;
    if (big->stage != npos) {
        si = big->stage;
    } else {
        for (std::size_t k = 1; k < p.stages.size(); ++k)
            if (p.stages[k].nO > p.stages[si].nO) si = k;
    }
    if (si < p.stages.size() && !e.origin() && p.stages[si].layer) e.set_origin(p.stages[si].layer);
}

void finalize(PlanData& p) {
    const std::size_t last = p.bounds.size() - 1;
    auto need_out = [&](const Stage& s) { p.bounds[s.out].read_back = true; };
    std::size_t dz = 0, zs = 0, tmp = 0, reverse_keys[max_spaces];
    std::fill(reverse_keys, reverse_keys + max_spaces, npos);
    for (std::size_t si = 0; si < p.stages.size(); ++si) {
        Stage& s = p.stages[si];
        const std::string tag = "stage " + std::to_string(si) + " ";
        const std::size_t n = s.nO, sp = s.space;
        if (s.prim == Prim::dense) {
            // Relu's backward needs only the sign of its output: behind dropouts alone, the
            // stage output has it where the mask kept a value (elsewhere the gradient is 0).
            bool only_dropout = true;
            for (const Op& o : s.ops) only_dropout = only_dropout && o.kind == OpKind::dropout;
            if (s.act_needs_y) {
                if (s.ops.empty() || (s.name == "relu" && only_dropout)) need_out(s);
                else s.ysave = p.add_buffer(tag + s.name + " output", n, 0, false, sp, si);
            }
            if (s.act_needs_z) s.zsave = p.add_buffer(tag + s.name + " pre-activation", n, 0, false, sp, si);
            if (s.out == p.bounds.size() - 1) dz = std::max(dz, n);  // else in place (dz_of)
        } else if (s.prim == Prim::maxout) {
            s.which = p.add_buffer(tag + "maxout winning piece (int32)", n, 0, false, sp, si);
            dz = std::max(dz, n * s.nP);
            zs = std::max(zs, n * s.nP);
            tmp = std::max(tmp, n);
        } else if (s.prim == Prim::none) {
            tmp = std::max(tmp, n);
        } else if (!s.ops.empty() && s.out == p.bounds.size() - 1) {
            dz = std::max(dz, n);
        }
        if (s.prim == Prim::dense || s.prim == Prim::maxout) {
            s.iW = ParamAccess::param_index(*s.layer, "W");
            s.ib = ParamAccess::param_index(*s.layer, "b");
            if (s.softmax) {
                s.itemp = ParamAccess::attr_index(*s.layer, "softmax_temperature");
                s.inorm = ParamAccess::attr_index(*s.layer, "softmax_normalize");
            }
        }
        if (s.prim == Prim::reduce && s.red == Reduce::max)
            s.which = p.add_buffer(tag + s.name + " row of each maximum (int32)", n, 0, false, sp, si);
        if (s.prim == Prim::seq) {
            // The layer's scratch: what predict needs (kept to the backward pass), and the rest
            // of training's (its tapes, its backward pass's arrays).
            std::size_t per_row = 0, fixed = 0;
            s.seq->scratch(s.layer, false, per_row, fixed);
            s.sscratch = p.add_buffer(tag + s.name + " scratch", per_row, fixed, true, sp, si);
            s.seq->scratch(s.layer, true, per_row, fixed);
            s.strain = p.add_buffer(tag + s.name + " scratch (training)", per_row, fixed, false, sp, si);
        }
        if (s.prim == Prim::reverse) {  // the row order, read by the backward pass too
            // Every reverse stage reverses the input's sequences: one order per space, made by the first.
            if (reverse_keys[sp] == npos)
                reverse_keys[sp] = p.add_buffer(tag + "reverse: row order (uint32)", 1, 0, true, sp, si);
            s.keys = reverse_keys[sp];
        }
        if (s.prim == Prim::table) {
            s.iW = ParamAccess::param_index(*s.layer, "E");  // the table
            // The keys are needed by the forward pass too (predict); the mask only in training.
            s.keys = p.add_buffer(tag + s.name + " keys (uint32)", s.per, 0, true, sp, si);
            s.mask = p.add_buffer(tag + s.name + " column dropout mask", 0, n + 1, false, sp, si);
        }
        for (std::size_t k = 0; k < s.ops.size(); ++k) {
            Op& op = s.ops[k];
            if (op.kind == OpKind::layernorm) {
                op.iG = ParamAccess::param_index(*op.node, "G");
                op.ib = ParamAccess::param_index(*op.node, "b");
                op.save = p.add_buffer(tag + "layernorm normalised input", n, 0, false, sp, si);
                op.rstd = p.add_buffer(tag + "layernorm 1/std", 1, 0, false, sp, si);
            } else if (op.kind == OpKind::dropout) {
                op.save = p.add_buffer(tag + "dropout mask", n, 0, false, sp, si);
            } else if (op.kind == OpKind::sigmoid) {
                if (k + 1 == s.ops.size()) need_out(s);
                else op.save = p.add_buffer(tag + "sigmoid output", n, 0, false, sp, si);
            }
        }
    }
    const bool head = !p.stages.empty() && p.stages[0].head;
    if (p.seq) {
        // A float input, flattened (ids are read where they are: only the forward pass needs them).
        if (!p.bounds[0].ints)
            p.in_buf = p.bounds[0].act =
                p.add_buffer("x0 (input, flattened)", p.bounds[0].width, 0, true, p.bounds[0].space);
        p.final_in_ws = true;  // the output is split into the sequences from the workspace
    }
    for (std::size_t b = 1; b <= last; ++b) {
        if (head && b == 1) continue;  // the head layer's own output array
        const std::size_t sp = p.bounds[b].space;
        if (b == last) {
            if (!p.seq) p.final_in_ws = p.bounds[b].read_back;  // else the stage writes the caller's array
            // (appends, not "x" + to_string(b) + ...: GCC 12 warns -Wrestrict on that chain at -O3)
            std::string what = "x";
            what += std::to_string(b);
            what += " (output, kept)";
            if (p.final_in_ws) p.bounds[b].act = p.add_buffer(std::move(what), p.bounds[b].width, 0, p.seq, sp);
        } else {
            std::string what = "x";
            what += std::to_string(b);
            what += " (output of stage ";
            what += std::to_string(b - 1);
            what += ")";
            p.bounds[b].act = p.add_buffer(std::move(what), p.bounds[b].width, 0, true, sp);
        }
    }
    for (std::size_t b = 1; b < last; ++b)
        p.bounds[b].grad =
            p.add_buffer("dx" + std::to_string(b) + " (gradient)", p.bounds[b].width, 0, false, p.bounds[b].space);
    if (p.seq) {
        p.dy_buf = p.add_buffer("dx" + std::to_string(last) + " (the output's gradient, flattened)",
                                p.bounds[last].width, 0, false, p.bounds[last].space);
        if (!p.bounds[0].ints)
            p.dx_buf = p.add_buffer("dx0 (the input's gradient)", p.bounds[0].width, 0, false, p.bounds[0].space);
    }
    if (zs) p.zs = p.add_buffer("scratch: maxout pieces", zs, 0, true, max_spaces);
    if (dz) p.dz = p.add_buffer("scratch: gradient of a product's output", dz, 0, false, max_spaces);
    if (tmp) p.tmp = p.add_buffer("scratch: one gradient row", 0, tmp, false);
    // The backward order: stages last to first; in a stage, its ops last to first, then its input.
    std::vector<bool> written(p.bounds.size(), false);
    for (std::size_t si = p.stages.size(); si-- > 0;) {
        Stage& s = p.stages[si];
        for (std::size_t k = s.ops.size(); k-- > 0;)
            if (s.ops[k].kind == OpKind::add) {
                s.ops[k].grad_assign = !written[s.ops[k].skip];
                written[s.ops[k].skip] = true;
            }
        if (s.prim == Prim::concat) {
            s.part_assign.assign(s.parts.size(), 0);
            for (std::size_t k = 0; k < s.parts.size(); ++k) {
                s.part_assign[k] = !written[s.parts[k]];
                written[s.parts[k]] = true;
            }
            continue;
        }
        s.dx_assign = !written[s.in];
        written[s.in] = true;
        // A seq stage's keys (a key transform's output) are read by it alone: it assigns their gradient.
        if (s.prim == Prim::seq && !s.parts.empty()) written[s.parts[0]] = true;
        // A reduction's backward pass writes all of its input's rows: where another stage
        // wrote that gradient first (concatenate(reduce_mean, reduce_max)), into scratch, then added.
        if (s.prim == Prim::reduce && !s.dx_assign)
            s.rscratch = p.add_buffer("stage " + std::to_string(si) + " " + s.name + " gradient (to add)", s.nI, 0,
                                      false, p.bounds[s.in].space, si);
    }
    p.layout();
}

bool same_layout(const PlanData& a, const PlanData& b, std::string& why) {
    for (std::size_t k = 0; k < a.spaces.size() && k < b.spaces.size(); ++k)
        if (a.spaces[k].pad != b.spaces[k].pad || a.spaces[k].docs != b.spaces[k].docs ||
            a.spaces[k].steps != b.spaces[k].steps) {
            why = "a with_array's pad was " + std::to_string(a.spaces[k].pad) + ", it is now " +
                  std::to_string(b.spaces[k].pad);
            return false;
        }
    if (a.stages.size() != b.stages.size() || a.bounds.size() != b.bounds.size() ||
        a.spaces.size() != b.spaces.size()) {
        why = "it had " + std::to_string(a.stages.size()) + " stages, it now has " + std::to_string(b.stages.size());
        return false;
    }
    for (std::size_t i = 0; i < a.bounds.size(); ++i)
        if (a.bounds[i].width != b.bounds[i].width) {
            why = "the width at boundary " + std::to_string(i) + " was " + std::to_string(a.bounds[i].width) +
                  ", it is now " + std::to_string(b.bounds[i].width);
            return false;
        }
    for (std::size_t i = 0; i < a.stages.size(); ++i) {
        const Stage &s = a.stages[i], &t = b.stages[i];
        bool same = s.prim == t.prim && s.layer == t.layer && s.in == t.in && s.out == t.out && s.nI == t.nI &&
                    s.nO == t.nO && s.nP == t.nP && s.ops.size() == t.ops.size() && s.parts == t.parts &&
                    s.window == t.window && s.space == t.space && s.per == t.per && s.sum == t.sum;
        // A seq stage's scratch follows the layer's other dims (an LSTM's depth): the same sizes too.
        if (same && s.prim == Prim::seq)
            for (const auto& [x, y] : {std::pair{s.sscratch, t.sscratch}, std::pair{s.strain, t.strain}})
                same = same && a.bufs[x].per_row == b.bufs[y].per_row && a.bufs[x].fixed == b.bufs[y].fixed;
        for (std::size_t k = 0; same && k < s.ops.size(); ++k)
            same = s.ops[k].kind == t.ops[k].kind && s.ops[k].node == t.ops[k].node && s.ops[k].skip == t.ops[k].skip;
        if (!same) {
            const std::string was = s.name + " " + std::to_string(s.nI) + "->" + std::to_string(s.nO),
                              now = t.name + " " + std::to_string(t.nI) + "->" + std::to_string(t.nO);
            // The same description but another node (the model's memory now holds another model:
            // an assignment, a vector's element erased) or other operations in it.
            why = "stage " + std::to_string(i) + " (" + was + ") is now " +
                  (was != now ? now : s.layer != t.layer ? "another node of the same shape" : "computed otherwise");
            return false;
        }
    }
    return true;
}

// lower.hpp's Builder: the steps of the walk that no layer type reaches.
void Builder::expect_width(const Node& l, std::size_t nI) {
    if (p.bounds[cur].width == 0) p.bounds[cur].width = nI;
    else if (p.bounds[cur].width != nI)
        throw ShapeError("lower(): " + l.name() + " expects input width " + std::to_string(nI) +
                             " but the stage before it produces " + std::to_string(p.bounds[cur].width),
                         "tenon-E101");
}

Stage& Builder::open(Prim prim, std::size_t nI, std::size_t nO) {
    Stage s;
    s.prim = prim;
    s.in = cur;
    s.nI = nI;
    s.nO = nO;
    Boundary b;
    b.width = nO;
    b.space = s.space = p.bounds[cur].space;
    p.bounds.push_back(b);
    s.out = cur = p.bounds.size() - 1;
    p.stages.push_back(std::move(s));
    pinned = false;
    return p.stages.back();
}

void Builder::add_op(Op op) {
    const bool merge = !pinned && !p.stages.empty() && p.stages.back().out == cur &&
                       p.stages.back().ops.size() < max_ops;
    if (!merge) {
        if (width() == 0)
            throw Error("lower(): the width before " + (op.node ? op.node->name() : std::string("an operation")) +
                            " is not known (initialize the model first)",
                        "tenon-E170");
        open(Prim::none, width(), width());
    }
    p.stages.back().ops.push_back(op);
}

void Builder::to_steps(const Node& layer) {
    if (on_steps()) return;
    if (!p.seq || p.bounds[cur].space != 0 || p.bounds[cur].ints) refuse(layer, "a Padded on other rows than the input's sequences");
    std::size_t sp = 0;
    for (std::size_t k = 1; k < p.spaces.size(); ++k)
        if (p.spaces[k].steps) sp = k;
    if (sp == 0) {
        if (p.spaces.size() == max_spaces) refuse(layer, "too many row spaces");
        p.spaces.push_back(Space{0, false, true});
        sp = p.spaces.size() - 1;
    }
    pinned = true;
    Stage& s = open(Prim::pad, width(), width());
    s.name = "pad";
    s.space = p.bounds[s.out].space = sp;
    pinned = true;  // the padding rows must stay zero: nothing merges into the pad stage
}

void Builder::to_rows(const Node& layer) {
    (void)layer;
    if (!on_steps()) return;
    pinned = true;
    Stage& s = open(Prim::unpad, width(), width());
    s.name = "unpad";
    s.space = p.bounds[s.out].space = 0;
    pinned = true;
}

void Builder::add_tail(Node& layer) {
    layer.for_each_child([&](Node& ch) {
        if (auto* d = dynamic_cast<Dropout*>(&ch)) add_op(Op{OpKind::dropout, d, d});
        else add_op(Op{OpKind::layernorm, &ch});
    });
}

}  // namespace tenon::lowering
