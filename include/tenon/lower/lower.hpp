// lower(model): the "lower" stage of define -> check -> lower -> run (docs/lowering.md).
// Walks a model's type (chains, residual, the dense layers and their LayerNorm/Dropout
// tails, standalone elementwise layers) and builds a plan of fused stages over one
// workspace; any other layer becomes a "layer" stage that runs the layer's own
// predict/forward. The plan refers to the model: parameters and gradients stay there.
//
//   auto plan = lower(model);
//   Floats2d P = plan.predict(X);                // const, thread-safe
//   auto [Y, backprop] = plan.begin_update(X);   // X must outlive backprop (it is not copied)
//   Floats2d dX = backprop(dY);                  // adds to the model's gradients
//   model.finish_update(opt);
//   std::cout << describe_plan(model, 128);      // the stages and the workspace for batch 128
#pragma once
#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>
#include <type_traits>
#include <utility>

#include "tenon/combinators/chain.hpp"
#include "tenon/combinators/residual.hpp"
#include "tenon/lower/engine.hpp"
#include "tenon/lower/lowered_as.hpp"
#include "tenon/lower/plan.hpp"

namespace tenon {

namespace lowering {

// What the lowering knows of a layer type: what the layer declares in its own header
// (lowered_as.hpp), and the two combinators the walk goes into.
template <class L, class Kind>
concept lowered_as_a = requires {
    requires std::is_same_v<std::remove_cv_t<decltype(L::lowered_as)>, Kind>;
};
template <class L>
inline constexpr bool is_dense = lowered_as_a<L, DenseStage>;
template <class L>
struct chain_walk {
    static constexpr bool is_chain = false;
};
template <class L>
inline constexpr bool is_residual = false;
template <class L>
inline constexpr bool is_residual<Residual<L>> = true;

// A layer the plan does not fuse, behind plain function pointers. XV: the view it takes.
template <class L, class XV>
struct layer_fns {
    using X = std::remove_reference_t<XV>;
    static void predict(const Node* l, const void* x, Floats2d& Y) {
        Y = static_cast<const L*>(l)->predict(*static_cast<const X*>(x));
    }
    static void forward(Node* l, const void* x, void* bp, Floats2d& Y) {
        auto [y, b] = (*static_cast<L*>(l))(*static_cast<const X*>(x), true);
        Y = std::move(y);
        *static_cast<typename L::Backprop*>(bp) = std::move(b);
    }
    static void backward(const void* bp, Floats2dCView dY, void* dX) {
        *static_cast<typename L::In*>(dX) = (*static_cast<const typename L::Backprop*>(bp))(dY);
    }
};

template <class L>
void add(Builder& B, L& layer, void* slot);
template <class L>
void add_erased(Builder& B, void* layer, void* slot) {
    add(B, *static_cast<L*>(layer), slot);
}
template <class... Ls>
struct chain_walk<Chain<Ls...>> {
    static constexpr bool is_chain = true;
    // A loop over a table (as chain's own loops), not a recursion over the layers.
    static void run(Builder& B, Chain<Ls...>& c, typename Chain<Ls...>::Backprop& bp) {
        static constexpr void (*table[])(Builder&, void*, void*) = {&add_erased<Ls>...};
        for (std::size_t i = 0; i < sizeof...(Ls); ++i) table[i](B, c.layers().address(i), bp.bps.address(i));
    }
};

template <class L>
void add(Builder& B, L& layer, void* slot) {
    if constexpr (chain_walk<L>::is_chain) {
        chain_walk<L>::run(B, layer, *static_cast<typename L::Backprop*>(slot));
    } else if constexpr (is_residual<L>) {
        const std::size_t b_in = B.cur, n = B.width();
        B.pinned = true;  // the block's input stays an array: the add reads it
        add(B, layer.layer(), &static_cast<typename L::Backprop*>(slot)->bp);
        if (B.width() != n)
            throw ShapeError("lower(): " + layer.name() + ": the layer's output width " + std::to_string(B.width()) +
                                 " is not its input width " + std::to_string(n),
                             "tenon-E162");
        // The add joins the pass of the block's last stage (pinned off for it alone).
        B.pinned = B.p.stages.empty() || B.p.stages.back().out != B.cur || B.cur == b_in;
        Op op{OpKind::add};
        op.skip = b_in;
        B.add_op(op);
        B.pinned = true;  // the gradient at the block's output is the skip's: nothing merges after
    } else if constexpr (is_dense<L>) {
        const std::size_t nI = layer.get_dim("nI"), nO = layer.get_dim("nO");
        B.expect_width(layer, nI);
        Stage& s = B.open(Prim::dense, nI, nO);
        s.layer = &layer;
        s.name = L::lowered_as.name;
        s.act = L::lowered_as.act;
        s.softmax = L::lowered_as.softmax;
        s.act_needs_y = fn::grad_reads_y(s.act);
        s.act_needs_z = fn::grad_reads_z(s.act);
        B.add_tail(layer);
    } else if constexpr (lowered_as_a<L, MaxoutStage>) {
        const std::size_t nI = layer.get_dim("nI"), nO = layer.get_dim("nO");
        B.expect_width(layer, nI);
        Stage& s = B.open(Prim::maxout, nI, nO);
        s.layer = &layer;
        s.name = L::lowered_as.name;
        s.nP = layer.get_dim("nP");
        B.add_tail(layer);
    } else if constexpr (lowered_as_a<L, RowOpStage>) {
        constexpr OpKind op = L::lowered_as.op;
        if constexpr (op == OpKind::dropout) {
            B.add_op(Op{op, &layer, &layer});
        } else {
            if (layer.has_dim("nI")) B.expect_width(layer, layer.get_dim("nI"));
            B.add_op(Op{op, &layer});
        }
    } else {
        static_assert(std::is_same_v<typename L::Out, Floats2d>,
                      "lower(): every layer of a lowered model must output a Floats2d");
        constexpr bool head = !std::is_same_v<typename L::In, Floats2d>;
        if (head && B.cur != 0)
            throw Error("lower(): " + layer.name() + " takes another data type than Floats2d: only the model's "
                        "first layer may", "tenon-E170");
        const std::size_t nO = layer.has_dim("nO") ? layer.get_dim("nO") : B.width();
        if (!head && layer.has_dim("nI")) B.expect_width(layer, layer.get_dim("nI"));
        if (nO == 0 || (!head && B.width() == 0))
            throw Error("lower(): the widths of " + layer.name() + " are not known (initialize the model first)",
                        "tenon-E170");
        Stage& s = B.open(Prim::layer, head ? 0 : B.p.bounds[B.cur].width, nO);
        s.layer = &layer;
        s.name = layer.name();
        s.head = head;
        using XV = std::conditional_t<head, typename L::InView, Floats2dCView>;
        s.fns = LayerFns{&layer_fns<L, XV>::predict, &layer_fns<L, XV>::forward, &layer_fns<L, XV>::backward};
        s.bp_offset = static_cast<std::size_t>(static_cast<const char*>(slot) - B.bp_root);
    }
}

// Whether lower() accepts a model type: every layer it reaches outputs a Floats2d (the walk
// goes into chains and residuals; the fused layers always do).
template <class L>
struct plannable {
    static constexpr bool value = std::is_same_v<typename L::Out, Floats2d>;
};
template <class... Ls>
struct plannable<Chain<Ls...>> {
    static constexpr bool value = all_true<plannable<Ls>::value...>;
};
template <class L>
struct plannable<Residual<L>> {
    static constexpr bool value = plannable<L>::value;
};

}  // namespace lowering

// The plan of a model (see the top of this file). Copyable; refers to the model, which
// must outlive it. Re-lower after changing the model's structure; attribute changes
// (dropout rate, softmax temperature) and new parameter values are seen at each call.
template <class M>
class Plan {
public:
    using In = typename M::In;
    using InView = typename M::InView;
    static_assert(std::is_same_v<typename M::Out, Floats2d>, "lower(): the model must output a Floats2d");
    static constexpr bool head_input = !std::is_same_v<In, Floats2d>;

    explicit Plan(M& model) : model_(&model) {
        epoch_.store(detail::layout_epoch.load(std::memory_order_acquire), std::memory_order_relaxed);
        build(model, p_);
    }
    Plan(const Plan& o) : model_(o.model_), p_(o.p_), epoch_(o.epoch_.load(std::memory_order_relaxed)) {}
    Plan& operator=(const Plan& o) {
        model_ = o.model_;
        p_ = o.p_;
        epoch_.store(o.epoch_.load(std::memory_order_relaxed), std::memory_order_relaxed);
        return *this;
    }

    // Whether the model still has the layout the plan was made for. A change anywhere (any
    // model's set_dim, initialize, loaded file, ...) moves the layout epoch; the plan then
    // makes its walk again and compares (a few microseconds, once per change).
    bool is_current() const {
        const std::uint64_t now = detail::layout_epoch.load(std::memory_order_acquire);
        if (epoch_.load(std::memory_order_relaxed) == now) return true;
        std::string why;
        if (!matches_model(why)) return false;
        epoch_.store(now, std::memory_order_relaxed);
        return true;
    }
    // is_current(), or tenon-E172 naming what changed: a plan never reads a parameter of
    // another shape than the one it was made for.
    void require_current() const {
        const std::uint64_t now = detail::layout_epoch.load(std::memory_order_acquire);
        if (epoch_.load(std::memory_order_relaxed) == now) [[likely]]
            return;
        std::string why;
        if (!matches_model(why))
            throw Error("plan of " + p_.model_name + ": the model changed since lower() (" + why +
                            "): call lower(model) again",
                        "tenon-E172");
        epoch_.store(now, std::memory_order_relaxed);
    }

    struct Backprop {
        const Plan* plan = nullptr;
        Floats1d ws;                      // the workspace of this call
        std::size_t rows = 0;
        const float* x0 = nullptr;        // the caller's X (Floats2d input), or x_own's
        Floats2d x_own;                   // a copy of X, when the caller may free it (the engine)
        Floats2d head_out;                // boundary 1 when the first layer is a head
        mutable typename M::Backprop store{};  // the Backprops of "layer" stages
        // Backpropagates dY: adds to the parameters' gradients and returns dX.
        In operator()(Floats2dCView dY) const { return run(dY, true); }
        // The same without dX (its product is skipped): for a training loop that discards the
        // input's gradient, as a top-level model's does. Saves a product as large as the first
        // layer's forward.
        void params_only(Floats2dCView dY) const { run(dY, false); }

    private:
        In run(Floats2dCView dY, bool input_grad) const {
            plan->require_current();
            const lowering::PlanData& p = plan->p_;
            const std::size_t nO = p.bounds.back().width;
            if (dY.shape(0) != rows || dY.shape(1) != nO)
                throw ShapeError("plan of " + p.model_name + ": backprop: expected a gradient of shape (" +
                                     std::to_string(rows) + ", " + std::to_string(nO) + ") like the output, but found (" +
                                     std::to_string(dY.shape(0)) + ", " + std::to_string(dY.shape(1)) + ")",
                                 "tenon-E111");
            In dX{};
            lowering::Ctx c = plan->ctx(const_cast<float*>(ws.data()), rows, true);
            c.x0 = x0;
            c.b1 = head_out.size() ? const_cast<float*>(head_out.data()) : nullptr;
            c.dy = dY.data();
            if constexpr (!head_input) {
                if (input_grad) {
                    dX = Floats2d({rows, p.bounds[0].width}, uninitialized);
                    c.dx0 = dX.data();
                }
            }
            char* root = reinterpret_cast<char*>(&store);
            for (std::size_t si = p.stages.size(); si-- > 0;) {
                const lowering::Stage& s = p.stages[si];
                const lowering::StageParams sp = lowering::resolve(s, true, true);
                if (s.prim == lowering::Prim::layer) {
                    Floats2dCView d(c.grad(s.out), {rows, s.nO});
                    if (!s.ops.empty()) {
                        c.ops->stage_backward_rows(s, sp, c);
                        d = Floats2dCView(lowering::dz_of(s, c), {rows, s.nO});
                    }
                    if (s.head) {
                        s.fns.backward(root + s.bp_offset, d, &dX);
                    } else {
                        Floats2d g;
                        s.fns.backward(root + s.bp_offset, d, &g);
                        float* to = c.grad(s.in);
                        if (!to) continue;  // the input's gradient, not wanted
                        if (s.dx_assign) std::memcpy(to, g.data(), g.size() * sizeof(float));
                        else
                            for (std::size_t i = 0, e = g.size(); i < e; ++i) to[i] += g[i];
                    }
                } else {
                    c.ops->stage_backward_rows(s, sp, c);
                    if (s.prim != lowering::Prim::none) lowering::product_backward(s, sp, c);
                }
            }
            return dX;
        }
    };

    // Inference: dropout off, no randomness; the workspace comes from this thread's cache.
    Floats2d predict(InView X) const {
        require_current();
        check_finite_input(X, "predict");
        const detail::FiniteCheckOff inner;  // the stages' own layers see what the plan computed
        Floats2d head;
        std::size_t rows = 0;
        std::size_t first = 0;
        if constexpr (head_input) {
            const auto& s0 = p_.stages[0];
            s0.fns.predict(s0.layer, &X, head);
            check_head(head);
            rows = head.shape(0);
            first = 1;
        } else {
            check_input(X);
            rows = X.shape(0);
        }
        Floats1d ws({p_.ws_floats(rows, false)}, uninitialized);
        lowering::Ctx c = ctx(ws.data(), rows, false);
        Floats2d Y;
        if constexpr (head_input) {
            c.b1 = head.data();
            if (p_.bounds.size() == 2) {
                if (!p_.stages[0].ops.empty()) c.ops->stage_forward_rows(p_.stages[0], lowering::resolve(p_.stages[0], false), c);
                return head;
            }
        } else {
            c.x0 = X.data();
        }
        Y = Floats2d({rows, p_.bounds.back().width}, uninitialized);
        c.y = Y.data();
        run_forward(c, first, nullptr);
        return Y;
    }

    // Training: (Y, backprop). X is read again by backprop (not copied): keep it alive.
    std::pair<Floats2d, Backprop> begin_update(InView X) {
        Backprop bp;
        Floats2d Y = forward(X, bp, false);
        return {std::move(Y), std::move(bp)};
    }
    // The same into a given Backprop; copy_input: keep a copy of X in it (the model's own
    // begin_update, whose caller may free X before calling backprop).
    Floats2d forward(InView X, Backprop& bp, bool copy_input) {
        require_current();
        check_finite_input(X, "begin_update");
        const detail::FiniteCheckOff inner;
        bp.plan = this;
        std::size_t first = 0;
        char* root = reinterpret_cast<char*>(&bp.store);
        if constexpr (head_input) {
            const auto& s0 = p_.stages[0];
            s0.fns.forward(s0.layer, &X, root + s0.bp_offset, bp.head_out);
            check_head(bp.head_out);
            bp.rows = bp.head_out.shape(0);
            first = 1;
        } else {
            check_input(X);
            bp.rows = X.shape(0);
            if (copy_input) {
                bp.x_own = Floats2d({X.shape(0), X.shape(1)}, uninitialized);
                std::memcpy(bp.x_own.data(), X.data(), X.size() * sizeof(float));
                bp.x0 = bp.x_own.data();
            } else {
                bp.x0 = X.data();
            }
        }
        bp.ws = Floats1d({p_.ws_floats(bp.rows, true)}, uninitialized);
        lowering::Ctx c = ctx(bp.ws.data(), bp.rows, true);
        c.x0 = bp.x0;
        c.b1 = bp.head_out.size() ? bp.head_out.data() : nullptr;
        const std::size_t nO = p_.bounds.back().width;
        Floats2d Y({bp.rows, nO}, uninitialized);
        c.y = Y.data();
        if (head_input && p_.bounds.size() == 2) {
            if (!p_.stages[0].ops.empty()) c.ops->stage_forward_rows(p_.stages[0], lowering::resolve(p_.stages[0], true), c);
            std::memcpy(Y.data(), bp.head_out.data(), Y.size() * sizeof(float));
        } else {
            run_forward(c, first, root);
            if (p_.final_in_ws) std::memcpy(Y.data(), c.act(p_.bounds.size() - 1), Y.size() * sizeof(float));
        }
        return Y;
    }

    // Whether the engine may run X through this plan without a check the model's own path
    // would word differently: the width the first stage takes, and at least one row.
    bool accepts(const InView& X) const {
        if constexpr (head_input) return true;
        else return X.shape(0) > 0 && X.shape(1) == p_.bounds[0].width;
    }
    // Whether the plan fuses anything (a plan of unfused layers alone only adds copies).
    bool fuses() const {
        for (const auto& s : p_.stages)
            if (s.prim != lowering::Prim::layer || !s.ops.empty()) return true;
        return false;
    }

    std::string describe() const { return lowering::describe_stages(p_); }
    // The stages and the workspace layout for a batch size.
    std::string describe(std::size_t batch) const { return describe() + lowering::describe_layout(p_, batch); }
    const lowering::PlanData& data() const noexcept { return p_; }
    M& model() const noexcept { return *model_; }

private:
    lowering::Ctx ctx(float* ws, std::size_t rows, bool train) const {
        lowering::Ctx c;
        c.p = &p_;
        c.ops = &model_->ops();
        c.ws = ws;
        c.rows = rows;
        c.r16 = lowering::PlanData::r16(rows);
        c.train = train;
        return c;
    }
    // The model's input check (tenon-E252), as the model's own entry points make it.
    void check_finite_input(const InView& X, const char* call) const {
        if (detail::entry_depth == 0) detail::check_finite_input("plan of ", p_.model_name, call, X);
    }
    // The head layer's output must be as wide as the plan was made for (a head layer whose
    // width changed would be caught by is_current; this names a layer that broke its own nO).
    void check_head(const Floats2d& h) const {
        if (h.shape(1) != p_.bounds[1].width)
            throw ShapeError("plan of " + p_.model_name + ": " + p_.stages[0].name + " returned width " +
                                 std::to_string(h.shape(1)) + ", expected " + std::to_string(p_.bounds[1].width),
                             "tenon-E111");
    }
    void check_input(const InView& X) const {
        if constexpr (!head_input) {
            if (X.shape(1) != p_.bounds[0].width)
                throw ShapeError("plan of " + p_.model_name + ": expected input width " +
                                     std::to_string(p_.bounds[0].width) + " but found " + std::to_string(X.shape(1)),
                                 "tenon-E101");
        }
    }
    // The stages from `first` on; root: the Backprop storage (null: predict).
    void run_forward(lowering::Ctx& c, std::size_t first, char* root) const {
        for (std::size_t si = first; si < p_.stages.size(); ++si) {
            const lowering::Stage& s = p_.stages[si];
            const lowering::StageParams sp = lowering::resolve(s, c.train);
            if (s.prim == lowering::Prim::dense || s.prim == lowering::Prim::maxout) {
                lowering::product_forward(s, sp, c);
            } else if (s.prim == lowering::Prim::layer) {
                // An unfused layer: its own predict/forward, its output copied into the workspace.
                const Floats2dCView x(c.act(s.in), {c.rows, s.nI});
                Floats2d y;
                if (root) s.fns.forward(s.layer, &x, root + s.bp_offset, y);
                else s.fns.predict(s.layer, &x, y);
                if (y.shape(0) != c.rows || y.shape(1) != s.nO)
                    throw ShapeError("plan of " + p_.model_name + ": " + s.name + " returned (" +
                                         std::to_string(y.shape(0)) + ", " + std::to_string(y.shape(1)) +
                                         "), expected (" + std::to_string(c.rows) + ", " + std::to_string(s.nO) + ")",
                                     "tenon-E111");
                std::memcpy(c.act(s.out), y.data(), y.size() * sizeof(float));
                if (s.ops.empty()) continue;
            }
            c.ops->stage_forward_rows(s, sp, c);
        }
    }

    static void build(M& model, lowering::PlanData& p) {
        if (!model.is_initialized())
            throw Error("lower(): " + model.name() + " is not initialised: call initialize() first", "tenon-E170");
        p.model_name = model.name();
        p.bounds.push_back(lowering::Boundary{});
        if constexpr (!head_input)
            if (model.has_dim("nI")) p.bounds[0].width = model.get_dim("nI");
        typename M::Backprop dummy{};
        lowering::Builder B{p, reinterpret_cast<const char*>(&dummy)};
        lowering::add(B, model, &dummy);
        if (p.stages.empty())
            throw Error("lower(): " + model.name() + " has no stage", "tenon-E170");
        lowering::finalize(p);
    }
    bool matches_model(std::string& why) const {
        lowering::PlanData now;
        try {
            build(*model_, now);
        } catch (const Error& e) {
            why = e.what();
            return false;
        }
        return lowering::same_layout(p_, now, why);
    }

    M* model_;
    lowering::PlanData p_;
    mutable std::atomic<std::uint64_t> epoch_{0};
};

template <class M>
    requires Model<M>
Plan<M> lower(M& model) {
    return Plan<M>(model);
}
// A failed model's error is already said (model/failed_model.hpp).
inline failed_model lower(const failed_model&) noexcept { return {}; }
inline failed_model describe_plan(const failed_model&, std::size_t = 0) noexcept { return {}; }

namespace lowering {

// The engine's plan of a model: the slot's current one while the model keeps its layout, else
// a new one (made under the slot's lock; the old one stays alive for calls still on it).
// Null where the model has no plan worth running: a type lower() refuses, a plan that fuses
// nothing, a model lower() cannot walk (it says why; the layers then run and give the error).
template <class M>
const Plan<M>* engine_plan(M& model, EngineSlot& slot) {
    if constexpr (!plannable<M>::value || !std::is_same_v<typename M::Out, Floats2d>) {
        return nullptr;
    } else {
        if (!use_plans()) return nullptr;
        const auto* plan = static_cast<const Plan<M>*>(slot.current.load(std::memory_order_acquire));
        if (plan && plan->is_current()) [[likely]]
            return plan;
        const std::uint64_t now = detail::layout_epoch.load(std::memory_order_acquire);
        if (slot.none_at.load(std::memory_order_acquire) == now) return nullptr;
        std::lock_guard<std::mutex> guard(slot.lock);
        plan = static_cast<const Plan<M>*>(slot.current.load(std::memory_order_acquire));
        if (plan && plan->is_current()) return plan;
        std::shared_ptr<Plan<M>> made;
        try {
            made = std::make_shared<Plan<M>>(model);
        } catch (const Error&) {
            made = nullptr;
        }
        if (!made || !made->fuses()) {
            slot.current.store(nullptr, std::memory_order_release);
            slot.none_at.store(now, std::memory_order_release);
            return nullptr;
        }
        slot.kept.push_back(made);
        slot.current.store(made.get(), std::memory_order_release);
        return made.get();
    }
}

template <class M>
bool engine_predict(const M& model, EngineSlot& slot, typename M::InView X, typename M::Out& Y) {
    if constexpr (!plannable<M>::value || !std::is_same_v<typename M::Out, Floats2d>) {
        return false;
    } else {
        const Plan<M>* plan = engine_plan(const_cast<M&>(model), slot);
        if (!plan || !plan->accepts(X)) return false;
        Y = plan->predict(X);
        return true;
    }
}

template <class M>
bool engine_forward(M& model, EngineSlot& slot, typename M::InView X, typename M::Out& Y,
                    EngineBackprop<typename M::In, typename M::OutView>& bp) {
    if constexpr (!plannable<M>::value || !std::is_same_v<typename M::Out, Floats2d>) {
        return false;
    } else {
        const Plan<M>* plan = engine_plan(model, slot);
        if (!plan || !plan->accepts(X)) return false;
        auto& pb = bp.template emplace<typename Plan<M>::Backprop>();
        Y = const_cast<Plan<M>*>(plan)->forward(X, pb, true);
        return true;
    }
}

}  // namespace lowering

// The plan's stages, and with a batch size its workspace layout, as text.
template <class M>
    requires Model<M>
std::string describe_plan(M& model) {
    return lower(model).describe();
}
template <class M>
    requires Model<M>
std::string describe_plan(M& model, std::size_t batch) {
    return lower(model).describe(batch);
}

}  // namespace tenon
