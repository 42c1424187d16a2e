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
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>
#include <type_traits>
#include <utility>

#include "tenon/combinators/chain.hpp"
#include "tenon/combinators/residual.hpp"
#include "tenon/lower/engine.hpp"
#include "tenon/lower/lowered_as.hpp"
#include "tenon/lower/plan.hpp"
#include "tenon/lower/run.hpp"
#include "tenon/transfers/detail/transfer.hpp"

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

// A seq stage that reads the plan's ids (StaticVectors).
template <class L>
constexpr bool reads_ids() {
    if constexpr (lowered_as_a<L, SeqLayerStage>) return L::lowered_as.reads_ids;
    else return false;
}
// A seq stage's key transform (ParametricAttention_v2's), where it has one: walked as a branch.
template <class L>
constexpr bool has_keys() {
    if constexpr (requires { L::plan_keys; }) return L::plan_keys;
    else return false;
}
template <class L>
constexpr bool key_plannable();

// A layer the plan does not fuse, behind plain function pointers. XV: the view it takes.
template <class L, class XV>
struct layer_fns {
    using X = std::remove_reference_t<XV>;
    static void predict(const Node* l, const void* x, Floats2d& Y) {
        Y = static_cast<const L*>(l)->predict_inner(*static_cast<const X*>(x));
    }
    static void forward(Node* l, const void* x, void* bp, Floats2d& Y) {
        auto [y, b] = static_cast<L*>(l)->update_inner(*static_cast<const X*>(x), true);
        Y = std::move(y);
        *static_cast<typename L::Backprop*>(bp) = std::move(b);
    }
    static void backward(const void* bp, Floats2dCView dY, void* dX) {
        *static_cast<typename L::In*>(dX) = (*static_cast<const typename L::Backprop*>(bp))(dY);
    }
    static void make_box(void* at) { ::new (at) typename L::Backprop(); }
    static void drop_box(void* at) noexcept { static_cast<typename L::Backprop*>(at)->~Backprop(); }
};

// Seq: whether the plan is over sequences (its model takes a List / Ragged: Plan::seq), known
// from the model's type, so that a walk compiles only what such a plan can hold (a "head"
// layer stage, which runs a first layer of another input type, exists only in a Floats2d
// plan: a model over sequences does not compile one for each layer that takes ids).
template <bool Seq, class L>
void add(Builder& B, L& layer, void* slot);
template <bool Seq, class L>
void add_erased(Builder& B, void* layer, void* slot) {
    add<Seq>(B, *static_cast<L*>(layer), slot);
}
// `slot`: the layer's Backprop inside the model's (a layer stage keeps its Backprop there), or
// null where the parent keeps its children's Backprops in a list made at each call (clone's).
template <class... Ls>
struct chain_walk<Chain<Ls...>> {
    static constexpr bool is_chain = true;
    // A loop over a table (as chain's own loops), not a recursion over the layers.
    template <bool Seq>
    static void run(Builder& B, Chain<Ls...>& c, void* slot) {
        static constexpr void (*table[])(Builder&, void*, void*) = {&add_erased<Seq, Ls>...};
        auto* bp = static_cast<typename Chain<Ls...>::Backprop*>(slot);
        for (std::size_t i = 0; i < sizeof...(Ls); ++i)
            table[i](B, c.layers().address(i), bp ? bp->bps.address(i) : nullptr);
    }
};

// tenon-E170: lower() cannot place this layer, and why (src/plan.cpp).
[[noreturn]] void refuse(const Node& layer, const char* why);

// A layer the plan does not fuse: a "layer" stage that runs the layer's own predict /
// forward (a model's first layer may take another type than Floats2d: the "head").
template <bool Seq, class L>
void add_layer(Builder& B, L& layer, void* slot) {
    static_assert(std::is_same_v<typename L::Out, Floats2d>,
                  "[tenon-E054] lower(model): the plan has no stage for a layer of this model (one that outputs "
                  "another type than Floats2d where the plan needs rows, e.g. a layer of 3-d arrays); call "
                  "the model's own predict / begin_update, which run its layers");
    constexpr bool head = !std::is_same_v<typename L::In, Floats2d>;
    if (head && (Seq || B.cur != 0))
        throw Error("lower(): " + layer.name() + " takes another data type than Floats2d: only the model's "
                    "first layer may", "tenon-E170");
    // (A plan over sequences has no head: the stage's functions are not compiled for one.)
    if constexpr (!(head && Seq)) {
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
        using F = layer_fns<L, XV>;
        s.fns = LayerFns{&F::predict, &F::forward, &F::backward, &F::make_box, &F::drop_box};
        if (slot) {
            s.bp_offset = static_cast<std::size_t>(static_cast<const char*>(slot) - B.bp_root);
        } else {  // inside clone's copies: a box in the call's area (LayerBoxes)
            using BP = typename L::Backprop;
            static_assert(alignof(BP) <= 64, "a layer's Backprop aligned to more than 64 bytes");
            s.box = B.p.box_bytes;
            s.box_payload = box_payload_offset(alignof(BP));
            s.box_bytes = box_record_bytes(sizeof(BP), alignof(BP));
            B.p.box_bytes += s.box_bytes;
        }
    }
}

template <bool Seq, class L>
void add(Builder& B, L& layer, void* slot) {
    if constexpr (!Seq && !chain_walk<L>::is_chain && !std::is_same_v<typename L::In, Floats2d>) {
        // a head: the first layer of a Floats2d plan
        if constexpr (std::is_same_v<typename L::Out, Floats2d>) return add_layer<Seq>(B, layer, slot);
        else refuse(layer, "a first layer that does not output a Floats2d");
    }
    if (B.p.bounds[B.cur].ints && !lowered_as_a<L, TableStage> && !lowered_as_a<L, SameRows> &&
        !lowered_as_a<L, ConcatBranches> && !lowered_as_a<L, OnRows> && !chain_walk<L>::is_chain &&
        !reads_ids<L>())
        refuse(layer, "only an embedding table may read the ids");
    if constexpr (chain_walk<L>::is_chain) {
        chain_walk<L>::template run<Seq>(B, layer, slot);
    } else if constexpr (is_residual<L>) {
        const std::size_t b_in = B.cur, n = B.width();
        B.pinned = true;  // the block's input stays an array: the add reads it
        add<Seq>(B, layer.layer(), slot ? &static_cast<typename L::Backprop*>(slot)->bp : nullptr);
        if (B.width() != n)
            throw ShapeError("lower(): " + layer.name() + ": the layer's output width " + std::to_string(B.width()) +
                                 " is not its input width " + std::to_string(n),
                             "tenon-E162");
        std::size_t skip = b_in;
        bool lifted = false;
        if constexpr (Seq && padded_data<typename L::In>) {
            // A Padded's block may end on the other of its two rows (with_array over it: the
            // steps space; an LSTM: the sequences' rows): both sides on the steps space.
            if (B.p.bounds[B.cur].space != B.p.bounds[b_in].space) {
                if (B.on_steps()) {
                    const std::size_t out = B.cur;
                    B.cur = b_in;
                    B.to_steps(layer);
                    skip = B.cur;
                    B.cur = out;
                } else {
                    B.to_steps(layer);
                }
                lifted = true;
            }
        }
        // The add joins the pass of the block's last stage (pinned off for it alone).
        B.pinned = lifted || B.p.stages.empty() || B.p.stages.back().out != B.cur || B.cur == b_in;
        Op op{OpKind::add};
        op.skip = skip;
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
    } else if constexpr (lowered_as_a<L, SameRows>) {
        // list2ragged, ragged2list, noop: the rows stay where they are (padded2list: the
        // sequences' rows, without the padding).
        if constexpr (padded_data<typename L::In> && !padded_data<typename L::Out>) B.to_rows(layer);
    } else if constexpr (lowered_as_a<L, TableStage>) {
        if constexpr (!std::is_same_v<typename L::In, Ints2d>) {
            refuse(layer, "a table of other ids than Ints2d");
        } else {
            if (!B.p.bounds[B.cur].ints) refuse(layer, "the ids are not the plan's input");
            Stage& s = B.open(Prim::table, B.width(), layer.get_dim("nO"));
            s.layer = &layer;
            s.name = layer.name();
            s.per = L::lowered_as.per;
            s.table_keys = &L::table_keys;
        }
    } else if constexpr (lowered_as_a<L, WindowStage>) {
        constexpr bool segments = !std::is_same_v<typename L::In, Floats2d>;
        if (segments && (!B.p.seq || B.p.bounds[B.cur].space != 0))
            refuse(layer, "expand_window over sequences the plan does not know");
        const std::size_t nI = B.width(), w = layer.window();
        if (nI == 0) refuse(layer, "the width is not known (initialize the model first)");
        if (layer.has_dim("nI")) B.expect_width(layer, layer.get_dim("nI"));
        Stage& s = B.open(Prim::window, nI, (2 * w + 1) * nI);
        s.layer = &layer;
        s.name = layer.name();
        s.window = w;
        s.window_segments = segments;
    } else if constexpr (lowered_as_a<L, ReduceStage>) {
        // One row per sequence of the input's: the docs space.
        if (!B.p.seq || B.p.bounds[B.cur].space != 0 || B.p.bounds[B.cur].ints)
            refuse(layer, "a reduction over other rows than the input's sequences");
        const std::size_t n = B.width();
        if (n == 0) refuse(layer, "the width is not known (initialize the model first)");
        std::size_t sp = 0;
        for (std::size_t k = 1; k < B.p.spaces.size(); ++k)
            if (B.p.spaces[k].docs) sp = k;
        if (sp == 0) {
            if (B.p.spaces.size() == max_spaces) refuse(layer, "too many row spaces");
            B.p.spaces.push_back(Space{0, true});
            sp = B.p.spaces.size() - 1;
        }
        B.pinned = true;  // the stage's input rows are not its output rows: nothing merges back
        Stage& s = B.open(Prim::reduce, n, n);
        s.layer = &layer;
        s.name = layer.name();
        s.red = L::kind;
        if constexpr (L::nonempty) s.why = L::why_nonempty;
        s.space = B.p.bounds[s.out].space = sp;
    } else if constexpr (lowered_as_a<L, SeqLayerStage>) {
        // A layer over the input's sequences (LSTM, ParametricAttention): its own code, its
        // scratch in the workspace; a key transform is a branch from the same boundary.
        constexpr bool ids = L::lowered_as.reads_ids;
        if constexpr (padded_data<typename L::In>) B.to_rows(layer);  // (an LSTM reads no padding)
        if (!B.p.seq || B.p.bounds[B.cur].space != 0 || B.p.bounds[B.cur].ints != ids)
            refuse(layer, ids ? "a layer of ids that are not the plan's input"
                              : "a layer over sequences on other rows than the input's sequences");
        if constexpr (ids && !std::is_same_v<typename L::In, Ints2d>) refuse(layer, "ids of another type than Ints2d");
        const std::size_t b_in = B.cur, nO = layer.get_dim("nO");
        const std::size_t nI = ids ? B.width() : layer.get_dim("nI");
        if (!ids) B.expect_width(layer, nI);
        std::size_t keys = npos;
        if constexpr (has_keys<L>()) {
            B.pinned = true;
            add<Seq>(B, layer.key_transform(), slot ? &static_cast<typename L::Backprop*>(slot)->key_bp : nullptr);
            if (B.p.bounds[B.cur].space != 0 || B.p.bounds[B.cur].ints || B.width() != nI)
                refuse(layer, "its key transform does not give one key of width nI per row");
            keys = B.cur;
            B.cur = b_in;
        }
        Stage& s = B.open(Prim::seq, nI, nO);
        s.layer = &layer;
        s.name = L::lowered_as.name;
        s.seq = &L::lowered_as;
        if (keys != npos && keys != b_in) s.parts = {keys};  // (a key transform of no stage: the keys are X)
    } else if constexpr (lowered_as_a<L, OnRows>) {
        if constexpr (!L::plan_rows) {
            refuse(layer, "a layer of 3-d arrays or arrays of steps (the plan's rows are 2-d)");
        } else {
            // (A wrapper whose layer runs in the plan only when its values allow: uniqued's.)
            if constexpr (requires { layer.plan_refusal(); })
                if (const char* why = layer.plan_refusal()) refuse(layer, why);
            void* inner = slot ? &static_cast<typename L::Backprop*>(slot)->inner : nullptr;
            constexpr PaddedRows padded = plan_padded_of<L>();
            std::size_t pad = 0;
            if constexpr (L::plan_pads) pad = layer.pad();
            if constexpr (padded == PaddedRows::steps) B.to_steps(layer);
            if constexpr (padded == PaddedRows::rows) B.to_rows(layer);
            if (pad == 0) {
                const std::size_t space = B.p.bounds[B.cur].space;
                add<Seq>(B, layer.layer(), inner);
                // A Padded out may be on either of its rows; another type out, on the sequences'.
                if constexpr (!padded_data<typename L::Out>)
                    if (B.on_steps() && !B.p.spaces[space].steps) B.to_rows(layer);
                const std::size_t now = B.p.bounds[B.cur].space;
                const bool either = padded_data<typename L::Out> && (now == 0 || B.on_steps()) &&
                                    (space == 0 || B.p.spaces[space].steps);
                if (now != space && !either) refuse(layer, "its layer changed the rows");
            } else {
                // The layer sees the rows with pad zero rows around each sequence: a padded space.
                if (!B.p.seq || B.p.bounds[B.cur].space != 0 || B.p.bounds[B.cur].ints)
                    refuse(layer, "a pad over other rows than the input's sequences");
                std::size_t sp = 0;
                for (std::size_t k = 1; k < B.p.spaces.size(); ++k)
                    if (B.p.spaces[k].pad == pad) sp = k;
                if (sp == 0) {
                    if (B.p.spaces.size() == max_spaces) refuse(layer, "too many different pads");
                    B.p.spaces.push_back(Space{pad});
                    sp = B.p.spaces.size() - 1;
                }
                const std::size_t b_in = B.cur, n = B.width();
                B.pinned = true;
                Stage& ps = B.open(Prim::pad, n, n);
                ps.name = "pad";
                ps.space = B.p.bounds[ps.out].space = sp;
                B.pinned = true;  // the pad rows must stay zero: nothing merges into the pad stage
                add<Seq>(B, layer.layer(), inner);
                if (B.p.bounds[B.cur].space != sp) refuse(layer, "its layer changed the rows");
                B.pinned = true;
                Stage& us = B.open(Prim::unpad, B.width(), B.width());
                us.name = "unpad";
                us.space = B.p.bounds[us.out].space = B.p.bounds[b_in].space;
            }
        }
    } else if constexpr (lowered_as_a<L, ConcatBranches>) {
        const std::size_t b_in = B.cur;
        std::vector<std::size_t> parts;
        auto* bp = static_cast<typename L::Backprop*>(slot);
        auto branch = [&](auto& c, void* cslot) {
            B.cur = b_in;
            B.pinned = true;
            add<Seq>(B, c, cslot);
            parts.push_back(B.cur);
        };
        auto& kids = layer.layers();
        [&]<std::size_t... I>(std::index_sequence<I...>) {
            (branch(std::get<I>(kids), bp ? static_cast<void*>(&std::get<I>(bp->bps)) : nullptr), ...);
        }(std::make_index_sequence<std::tuple_size_v<std::remove_cvref_t<decltype(kids)>>>{});
        // (The branches' rows may be other than the input's: reductions give one per sequence.)
        if constexpr (padded_data<typename L::Out>) {
            // Padded branches on both of their rows: all on the steps space (the others' padding is zero).
            bool steps = false;
            for (std::size_t b : parts) steps = steps || B.p.spaces[B.p.bounds[b].space].steps;
            for (std::size_t& b : parts)
                if (steps && !B.p.spaces[B.p.bounds[b].space].steps) {
                    B.cur = b;
                    B.to_steps(layer);
                    b = B.cur;
                }
        }
        constexpr bool sum = L::lowered_as.sum;  // add(): their sum, else their columns side by side
        std::size_t w = 0;
        const std::size_t space = B.p.bounds[parts[0]].space, w0 = B.p.bounds[parts[0]].width;
        for (std::size_t b : parts) {
            if (B.p.bounds[b].ints || B.p.bounds[b].space != space)
                refuse(layer, "a branch that does not output floats over the same rows");
            if (sum && B.p.bounds[b].width != w0) refuse(layer, "branches of different widths");
            w += B.p.bounds[b].width;
        }
        B.cur = parts[0];
        Stage& s = B.open(Prim::concat, w0, sum ? w0 : w);
        s.sum = sum;
        s.name = layer.name();
        s.parts = std::move(parts);
        s.space = B.p.bounds[s.out].space = space;
    } else if constexpr (lowered_as_a<L, BidirectionalBranches>) {
        // Z = [l2r(X), rev(r2l(rev(X)))], rev reversing each sequence's rows within its length:
        // a permutation of the rows of the space they are on (the sequences' own rows, or a
        // Padded's steps rows, whose padding rows stay where they are, as the layers' reverse
        // leaves them).
        auto seq_rows = [&](std::size_t b) {
            return !B.p.bounds[b].ints && (B.p.bounds[b].space == 0 || B.p.spaces[B.p.bounds[b].space].steps);
        };
        if (!B.p.seq || !seq_rows(B.cur)) refuse(layer, "a bidirectional over other rows than the input's sequences");
        auto* bp = static_cast<typename L::Backprop*>(slot);
        const std::size_t b_in = B.cur, n = B.width();
        B.pinned = true;
        add<Seq>(B, layer.l2r(), bp ? static_cast<void*>(&bp->bl) : nullptr);
        std::size_t left = B.cur;
        B.cur = b_in;
        B.pinned = true;
        Stage& r_in = B.open(Prim::reverse, n, n);
        r_in.name = "reverse";
        B.pinned = true;
        add<Seq>(B, layer.r2l(), bp ? static_cast<void*>(&bp->br) : nullptr);
        if (!seq_rows(B.cur) || !seq_rows(left))
            refuse(layer, "a direction that does not output floats over the sequences' rows");
        B.pinned = true;
        Stage& r_out = B.open(Prim::reverse, B.width(), B.width());
        r_out.name = "reverse";
        std::size_t right = B.cur;
        // One direction on the sequences' rows (zero padding), the other on the steps rows:
        // both on the steps rows.
        if (B.p.bounds[left].space != B.p.bounds[right].space) {
            std::size_t& b = B.p.bounds[left].space == 0 ? left : right;
            B.cur = b;
            B.to_steps(layer);
            b = B.cur;
        }
        B.cur = left;
        B.pinned = true;
        Stage& s = B.open(Prim::concat, B.p.bounds[left].width, B.p.bounds[left].width + B.p.bounds[right].width);
        s.name = layer.name();
        s.parts = {left, right};
    } else if constexpr (lowered_as_a<L, CloneCopies>) {
        // The copies' stages one after the other. Clone's Backprop keeps its copies' Backprops
        // in a list made per call, where the plan cannot name a place: a layer stage in a copy
        // keeps its Backprop in a box of the call's state (add_layer with no slot).
        for (std::size_t i = 0; i < layer.size(); ++i) add<Seq>(B, layer[i], nullptr);
    } else {
        add_layer<Seq>(B, layer, slot);
    }
}

// Whether lower() accepts a model type: every layer it reaches outputs a Floats2d, or is one
// the walk knows on sequences (the walk goes into chains, residual, concatenate, clone,
// add, bidirectional, uniqued and the wrappers: with_array, with_list, with_ragged,
// with_padded). A model accepted here may still be refused when the plan is made (tenon-E170:
// a layer the walk cannot place); the engine then runs the layers.
template <class L>
struct plannable;
template <class L>
constexpr bool plannable_v = plannable<L>::value;
template <class Tuple>
struct all_plannable;
template <class... Ls>
struct all_plannable<std::tuple<Ls...>> {
    static constexpr bool value = (plannable<Ls>::value && ...);
};
template <class L>
struct plannable {
    static constexpr bool value = [] {
        if constexpr (lowered_as_a<L, SameRows> || lowered_as_a<L, TableStage> || lowered_as_a<L, WindowStage> ||
                      lowered_as_a<L, ReduceStage>)
            return true;
        else if constexpr (lowered_as_a<L, SeqLayerStage>)
            return key_plannable<L>();
        else if constexpr (lowered_as_a<L, OnRows>)
            return L::plan_rows && plannable<std::remove_cvref_t<decltype(std::declval<L&>().layer())>>::value;
        else if constexpr (lowered_as_a<L, ConcatBranches>)
            return all_plannable<std::remove_cvref_t<decltype(std::declval<L&>().layers())>>::value;
        else if constexpr (lowered_as_a<L, CloneCopies>)
            return plannable<std::remove_cvref_t<decltype(std::declval<L&>()[0])>>::value;
        else if constexpr (lowered_as_a<L, BidirectionalBranches>)
            return plannable<std::remove_cvref_t<decltype(std::declval<L&>().l2r())>>::value &&
                   plannable<std::remove_cvref_t<decltype(std::declval<L&>().r2l())>>::value;
        else return std::is_same_v<typename L::Out, Floats2d>;
    }();
};
template <class... Ls>
struct plannable<Chain<Ls...>> {
    static constexpr bool value = all_true<plannable<Ls>::value...>;
};
template <class L>
struct plannable<Residual<L>> {
    static constexpr bool value = plannable<L>::value;
};
template <class L>
constexpr bool key_plannable() {
    if constexpr (has_keys<L>()) return plannable<std::remove_cvref_t<decltype(std::declval<L&>().key_transform())>>::value;
    else return true;
}

// (The sequence types a plan takes and gives, seq_type: lower/run.hpp.)
// Whether a model's own calls may run a plan: its layers are plannable, and it takes a
// Floats2d (or anything, for a first "head" layer) to a Floats2d, a sequence to a sequence of
// floats, or a sequence to a Floats2d of one row per sequence (through a reduction).
template <class M>
inline constexpr bool engine_types =
    plannable<M>::value &&
    (std::is_same_v<typename M::Out, Floats2d> ||
     (seq_type<typename M::In>::value && seq_type<typename M::Out>::value && !seq_type<typename M::Out>::ints));

// Where the walk stands between two layers, as far as a model's type tells (the walk's state
// that decides whether it can place the next layer): the rows of a Floats2d plan before its
// first stage (f_start: where a "head" may read another type) and after; a sequence plan's
// ids, its floats on the input's rows, on a padded space (inside with_array's pad), or one row
// per sequence (after a reduction). `no`: the walk would refuse (tenon-E170).
namespace spot {
inline constexpr int no = -1, f_start = 0, f_rows = 1, ids = 2, rows = 3, pad = 4, docs = 5;
}
// placement<L>::at(s): the state after L, walked from s, mirroring add() above rule for rule,
// but only where the rule's outcome follows from the types (a rule that also depends on
// values the type does not fix gives `no`). spaces: the row spaces L may add (pads, and the
// sequences' rows of a reduction), at most.
template <class L>
struct placement;
template <class C>
using placement_of = placement<std::remove_cvref_t<C>>;
template <class... Bs>
constexpr int branches_at(int s, const std::tuple<Bs...>*) {
    const int r[] = {placement<Bs>::at(s)...};
    for (int x : r)
        if (x != r[0]) return spot::no;
    return r[0] == spot::ids ? spot::no : r[0];
}
// (Loops over tables, not folds: a chain of 500 layers is one expression of 500 terms, over
// clang's nesting limit of 256.)
constexpr int sum_of(std::initializer_list<int> v) {
    int n = 0;
    for (int x : v) n += x;
    return n;
}
template <class... Bs>
constexpr int branches_spaces(const std::tuple<Bs...>*) {
    return sum_of({0, placement<Bs>::spaces...});
}
template <class... Ls>
struct placement<Chain<Ls...>> {
    static constexpr int at(int s) {
        constexpr int (*steps[])(int) = {&placement<Ls>::at...};
        for (auto step : steps) s = step(s);
        return s;
    }
    static constexpr int spaces = sum_of({0, placement<Ls>::spaces...});
};
template <class L>
struct placement {
    using In = typename L::In;
    static constexpr bool out_floats = std::is_same_v<typename L::Out, Floats2d>;
    static constexpr int rows_of(int s) { return s == spot::f_start ? spot::f_rows : s; }
    // A "layer" stage (add_layer): a Floats2d -> Floats2d layer anywhere on floats.
    static constexpr int layer_stage(int s) {
        if constexpr (!out_floats || !std::is_same_v<In, Floats2d>) return spot::no;
        else return s == spot::ids ? spot::no : rows_of(s);
    }
    static constexpr int at(int s) {
        if (s == spot::no) return spot::no;
        if constexpr (!std::is_same_v<In, Floats2d>)  // a head: the first layer of a Floats2d plan
            if (s == spot::f_start || s == spot::f_rows) return out_floats && s == spot::f_start ? spot::f_rows : spot::no;
        if (s == spot::ids && !(lowered_as_a<L, TableStage> || lowered_as_a<L, SameRows> ||
                              lowered_as_a<L, ConcatBranches> || lowered_as_a<L, OnRows> || reads_ids<L>()))
            return spot::no;
        if constexpr (is_residual<L>) {
            const int r = placement_of<decltype(std::declval<L&>().layer())>::at(s);
            return r != spot::ids && r == rows_of(s) ? r : spot::no;
        } else if constexpr (is_dense<L> || lowered_as_a<L, MaxoutStage>) {
            return rows_of(s);
        } else if constexpr (lowered_as_a<L, RowOpStage>) {
            return s == spot::f_start ? spot::no : s;
        } else if constexpr (lowered_as_a<L, SameRows>) {
            return s;
        } else if constexpr (lowered_as_a<L, TableStage>) {
            return std::is_same_v<In, Ints2d> && s == spot::ids ? spot::rows : spot::no;
        } else if constexpr (lowered_as_a<L, WindowStage>) {
            if constexpr (!std::is_same_v<In, Floats2d>) return s == spot::rows ? spot::rows : spot::no;
            else return rows_of(s);
        } else if constexpr (lowered_as_a<L, ReduceStage>) {
            return s == spot::rows ? spot::docs : spot::no;
        } else if constexpr (lowered_as_a<L, SeqLayerStage>) {
            if constexpr (has_keys<L>()) return spot::no;
            else if constexpr (reads_ids<L>()) return std::is_same_v<In, Ints2d> && s == spot::ids ? spot::rows : spot::no;
            else return s == spot::rows ? spot::rows : spot::no;
        } else if constexpr (lowered_as_a<L, OnRows>) {
            if constexpr (!L::plan_rows || requires(const L& l) { l.plan_refusal(); } ||
                          plan_padded_of<L>() != PaddedRows::none) {
                return spot::no;  // (a plan_refusal depends on values; a Padded's rows are not followed here)
            } else {
                using I = placement_of<decltype(std::declval<L&>().layer())>;
                const int r = I::at(s);
                // (the pad is a value: both of the walk's ways must place the layer)
                if constexpr (L::plan_pads) return s == spot::rows && r == spot::rows && I::at(spot::pad) == spot::pad ? r : spot::no;
                else return r;
            }
        } else if constexpr (lowered_as_a<L, ConcatBranches>) {
            return branches_at(s, static_cast<const std::remove_cvref_t<decltype(std::declval<L&>().layers())>*>(nullptr));
        } else if constexpr (lowered_as_a<L, BidirectionalBranches>) {
            const int l = placement_of<decltype(std::declval<L&>().l2r())>::at(s);
            const int r = placement_of<decltype(std::declval<L&>().r2l())>::at(s);
            return s == spot::rows && l == spot::rows && r == spot::rows ? spot::rows : spot::no;
        } else if constexpr (lowered_as_a<L, CloneCopies>) {
            using C = decltype(std::declval<L&>()[0]);
            // (any number of copies, none included, ends where it starts)
            const int r = placement_of<C>::at(s);
            return r != spot::no && r == rows_of(s) && placement_of<C>::at(r) == r ? r : spot::no;
        } else {
            return layer_stage(s);
        }
    }
    static constexpr int spaces = [] {
        if constexpr (is_residual<L> || lowered_as_a<L, OnRows>) {
            int n = placement_of<decltype(std::declval<L&>().layer())>::spaces;
            if constexpr (lowered_as_a<L, OnRows>) n += L::plan_pads ? 1 : 0;
            return n;
        } else if constexpr (lowered_as_a<L, ConcatBranches>) {
            return branches_spaces(static_cast<const std::remove_cvref_t<decltype(std::declval<L&>().layers())>*>(nullptr));
        } else if constexpr (lowered_as_a<L, CloneCopies>) {
            return placement_of<decltype(std::declval<L&>()[0])>::spaces;
        } else if constexpr (lowered_as_a<L, BidirectionalBranches>) {
            return placement_of<decltype(std::declval<L&>().l2r())>::spaces +
                   placement_of<decltype(std::declval<L&>().r2l())>::spaces;
        } else if constexpr (lowered_as_a<L, ReduceStage>) {
            return 1;
        } else {
            return 0;
        }
    }();
};
// Whether a model's own calls run only its plan: a chain of types the plan takes whose walk,
// from its type alone, places every layer (placement above: a sequence plan's input of ids,
// not too many row spaces). Its layers' training path is then not compiled at all (it could
// not run); unfused(model) runs it on request (docs/lowering.md, "The layers' path"). Any other
// chain keeps it, for the plans its walk refuses at run time.
template <class M>
struct plan_only {
    static constexpr bool value = [] {
        if constexpr (!chain_walk<M>::is_chain || !engine_types<M>) {
            return false;
        } else {
            using In = typename M::In;
            using Out = typename M::Out;
            if (placement<M>::spaces > static_cast<int>(max_spaces) - 1) return false;
            if constexpr (seq_type<In>::value) {
                // (a sequence plan over floats takes its input width from the model's nI: a
                // value; over ids, the first stage's table gives every width)
                if constexpr (!seq_type<In>::ints) return false;
                else {
                    const int end = placement<M>::at(spot::ids);
                    return end == spot::rows || (!seq_type<Out>::value && end == spot::docs);
                }
            } else {
                return placement<M>::at(spot::f_start) == spot::f_rows;
            }
        }
    }();
};

}  // namespace lowering

// The plan of a model (see the top of this file). Copyable; refers to the model: once the
// model is destroyed or moved, every call refuses (tenon-E172) rather than read it. Re-lower after changing the model's structure; attribute changes
// (dropout rate, softmax temperature) and new parameter values are seen at each call.
template <class M>
class Plan {
public:
    using In = typename M::In;
    using InView = typename M::InView;
    using Out = typename M::Out;
    using OutView = typename M::OutView;
    static_assert(lowering::engine_types<M>,
                  "[tenon-E054] lower(model): the plan takes a Floats2d (or a List / Ragged of arrays or ids, or a "
                  "Padded) and outputs a Floats2d (or a List / Ragged / Padded of Floats2d); for a model of other data "
                  "types call its own predict / begin_update, which run its layers");
    // Its running, compiled once per pair of data types (lower/run.hpp).
    using Run = lowering::Runner<In, Out>;
    static constexpr bool seq = Run::seq, seq_out = Run::seq_out, head_input = Run::head_input;

    explicit Plan(M& model) : model_(&model), place_(model.place_watch()) {
        epoch_.store(detail::layout_epoch.load(std::memory_order_acquire), std::memory_order_relaxed);
        build(model, p_);
    }
    Plan(const Plan& o)
        : model_(o.model_), place_(o.place_), p_(o.p_), epoch_(o.epoch_.load(std::memory_order_relaxed)),
          frozen_(o.frozen_) {}
    Plan& operator=(const Plan& o) {
        model_ = o.model_;
        place_ = o.place_;
        p_ = o.p_;
        epoch_.store(o.epoch_.load(std::memory_order_relaxed), std::memory_order_relaxed);
        frozen_ = o.frozen_;
        return *this;
    }

    // Serving: keep copies of the weights the plan's dense and maxout stages read, each W
    // packed now in the layout of the backend's product, so that predict does not pack W at
    // every call (docs/lowering.md, "Frozen weights"). The results are the same bits. Every
    // tenon path that writes a parameter's values renews its stamp (optimizer steps,
    // set_param, the non-const get_param, initialize, loading, use_params, to_gpu / to_cpu,
    // copies and assignments, replace_node); predict compares the stamps of what it copied (a
    // few loads) and copies again when one moved, so it never reads stale weights, with one
    // exception: a write through a view of get_param kept from before the last predict
    // (write with set_param, or get_param again). set_param may run while other threads
    // predict: each call sees the old weights or the new ones. begin_update is unchanged. A
    // backend that does not prepack (the generic kernel, the device backend) keeps no copies.
    // (freeze_weights / thaw_weights are set-up calls: not while other threads predict.)
    void freeze_weights() {
        require_current();
        frozen_.freeze(p_, model_->ops());
    }
    void thaw_weights() noexcept { frozen_.thaw(); }
    bool weights_frozen() const noexcept { return frozen_.on(); }
    // The values the frozen copies hold now (W packed and plain, b, LayerNorm's), made again
    // first if the model's values moved; 0 when not frozen or the backend does not prepack.
    std::size_t frozen_values() const {
        require_current();
        return frozen_.on() ? frozen_.get(p_, model_->ops())->floats() : 0;
    }

    // Whether the model still has the layout the plan was made for. A change anywhere (any
    // model's set_dim, initialize, loaded file, ...) moves the layout epoch; the plan then
    // makes its walk again and compares (a few microseconds, once per change).
    bool is_current() const {
        if (!place_.held()) return false;
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
        if (!place_.held()) [[unlikely]]
            lowering::throw_plan_model_gone(p_.model_name);
        const std::uint64_t now = detail::layout_epoch.load(std::memory_order_acquire);
        if (epoch_.load(std::memory_order_relaxed) == now) [[likely]]
            return;
        std::string why;
        if (!matches_model(why))
            throw Error("plan of " + p_.model_name + ": the model changed since the plan was made (" + why +
                            "): call lower(model) again for a plan you hold, begin_update again for a backprop",
                        "tenon-E172");
        epoch_.store(now, std::memory_order_relaxed);
    }

    struct Backprop {
        const Plan* plan = nullptr;
        lowering::CallState state;             // what the forward pass kept
        mutable typename M::Backprop store{};  // the Backprops of "layer" stages
        // Backpropagates dY: adds to the parameters' gradients and returns dX.
        In operator()(OutView dY) const { return run(dY, true); }
        // The same without dX (its product is skipped): for a training loop that discards the
        // input's gradient, as a top-level model's does. Saves a product as large as the first
        // layer's forward.
        void params_only(OutView dY) const { run(dY, false); }

    private:
        In run(OutView dY, bool input_grad) const {
            plan->require_current();
            const detail::MemoryScope memory(plan->model_->ops().memory());  // (whoever calls it)
            return Run::backward(plan->p_, plan->model_->ops(), state, reinterpret_cast<char*>(&store), dY,
                                 input_grad);
        }
    };

    // Inference: dropout off, no randomness; the workspace comes from this thread's cache.
    Out predict(InView X) const {
        require_current();
        const detail::MemoryScope memory(model_->ops().memory());  // (called directly: the model's memory)
        if (frozen_.on()) {
            const auto frozen = frozen_.get(p_, model_->ops());  // (kept alive for this call)
            return Run::predict(p_, model_->ops(), X, frozen.get());
        }
        return Run::predict(p_, model_->ops(), X);
    }

    // Training: (Y, backprop). X is read again by backprop (not copied): keep it alive.
    std::pair<Out, Backprop> begin_update(InView X) {
        Backprop bp;
        Out Y = forward(X, bp, false);
        return {std::move(Y), std::move(bp)};
    }
    // The same into a given Backprop; copy_input: keep a copy of X in it (the model's own
    // begin_update, whose caller may free X before calling backprop). A sequence plan always
    // keeps what it needs in its workspace. train false: the same pass with no dropout
    // (model(X, false): detail::InferencePass).
    Out forward(InView X, Backprop& bp, bool copy_input, bool train = true) {
        require_current();
        const detail::MemoryScope memory(model_->ops().memory());
        const detail::InferencePass inference(!train);
        bp.plan = this;
        return Run::forward(p_, model_->ops(), X, bp.state, reinterpret_cast<char*>(&bp.store), copy_input);
    }

    // Whether the engine may run X through this plan without a check the model's own path
    // would word differently: the width the first stage takes, and at least one row.
    bool accepts(const InView& X) const { return Run::accepts(p_, X); }
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
    static void build(M& model, lowering::PlanData& p) {
        if (!model.is_initialized())
            throw Error("lower(): " + model.name() + " is not initialised: call initialize() first", "tenon-E170");
        p.model_name = model.name();
        p.bounds.push_back(lowering::Boundary{});
        p.seq = seq;
        if constexpr (seq) {
            p.bounds[0].ints = lowering::seq_type<In>::ints;
            if (!p.bounds[0].ints && model.has_dim("nI")) p.bounds[0].width = model.get_dim("nI");
            if constexpr (lowering::seq_type<In>::padded) {  // its data as it is: the steps space's rows
                p.spaces.push_back(lowering::Space{0, false, true});
                p.bounds[0].space = 1;
            }
        } else if constexpr (!head_input) {
            if (model.has_dim("nI")) p.bounds[0].width = model.get_dim("nI");
        }
        typename M::Backprop dummy{};
        lowering::Builder B{p, reinterpret_cast<const char*>(&dummy)};
        lowering::add<seq>(B, model, &dummy);
        if (p.stages.empty())
            throw Error("lower(): " + model.name() + " has no stage", "tenon-E170");
        if constexpr (seq) {
            const lowering::Boundary& last = p.bounds.back();
            // (A Floats2d out: one row per sequence after a reduction, or every row after list2array.)
            const bool rows_ok = last.space == 0 || (!seq_out && p.spaces[last.space].docs) ||
                                 (lowering::seq_type<Out>::padded && p.spaces[last.space].steps);
            if (last.ints || !rows_ok || p.bounds.size() < 2)
                throw Error(std::string("lower(): ") + model.name() + ": the output is not one row per " +
                                (seq_out ? "input row" : "sequence or per input row"),
                            "tenon-E170");
            if (!p.bounds[0].ints && p.bounds[0].width == 0)
                throw Error("lower(): " + model.name() + ": the input width is not known", "tenon-E170");
        }
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
    detail::PlaceWatch place_;  // the model is still where the plan was made (not destroyed, not moved)
    lowering::PlanData p_;
    mutable std::atomic<std::uint64_t> epoch_{0};
    lowering::FrozenSlot frozen_;
};

template <class M>
    requires Model<M> && lowering::engine_types<M>
Plan<M> lower(M& model) {
    return Plan<M>(model);
}
// A model of data types the plan does not take: the one error here, and a failed_model that
// the rest of the user's program may use without more errors (model/failed_model.hpp).
template <class M>
    requires Model<M> && (!lowering::engine_types<M>)
auto lower(M&) {
    static_assert(lowering::engine_types<M>,
                  "[tenon-E054] lower(model): the plan has no stages for this model's data types (it takes a "
                  "Floats2d, a List / Ragged of arrays or ids, or a Padded, and outputs a Floats2d or a List / "
                  "Ragged / Padded of Floats2d, through layers it can place); call the model's own predict / "
                  "begin_update, which run its layers");
    return failed_model{};
}
// A failed model's error is already said (model/failed_model.hpp).
template <class M>
    requires(is_failed_model<M>)
failed_model lower(const M&) noexcept {
    return {};
}
template <class M>
    requires(is_failed_model<M>)
failed_model describe_plan(const M&, std::size_t = 0) noexcept {
    return {};
}

namespace lowering {

// The engine's plan of a model: the slot's current one while the model keeps its layout, else
// a new one (made under the slot's lock; the old one stays alive for calls still on it).
// Null where the model has no plan worth running: a type lower() refuses, a plan that fuses
// nothing, a model lower() cannot walk (it says why; the layers then run and give the error).
template <class M>
const Plan<M>* engine_plan(M& model, EngineSlot& slot) {
    if constexpr (!engine_types<M>) {
        return nullptr;
    } else {
        // A model that runs only its plan keeps one that fuses nothing too (plan_only); a walk
        // that refuses (a model made inconsistent by hand: set_dim on a layer inside) gives
        // null, and the caller says why (engine_train).
        constexpr bool only = plan_only<M>::value;
        const auto* plan = static_cast<const Plan<M>*>(slot.current.load(std::memory_order_acquire));
        if (plan && plan->is_current()) [[likely]]
            return plan;
        const std::uint64_t now = detail::layout_epoch.load(std::memory_order_acquire);
        if (slot.none_at.load(std::memory_order_acquire) == now) return nullptr;
        const tenon::detail::LockGuard guard(slot.lock);
        plan = static_cast<const Plan<M>*>(slot.current.load(std::memory_order_acquire));
        if (plan && plan->is_current()) return plan;
        std::shared_ptr<Plan<M>> made;
        try {
            made = std::make_shared<Plan<M>>(model);
        } catch (const Error&) {
            made = nullptr;
        }
        if (!made || (!only && !made->fuses())) {
            slot.current.store(nullptr, std::memory_order_release);
            slot.none_at.store(now, std::memory_order_release);
            return nullptr;
        }
        if (slot.frozen.load(std::memory_order_acquire)) made->freeze_weights();
        if (!slot.alive) slot.alive = std::make_shared<std::atomic<bool>>(true);
        slot.kept.push_back(made);
        slot.current.store(made.get(), std::memory_order_release);
        return made.get();
    }
}

template <class M>
bool engine_predict(const M& model, EngineSlot& slot, typename M::InView X, typename M::Out& Y) {
    if constexpr (!engine_types<M>) {
        return false;
    } else {
        const Plan<M>* plan = engine_plan(const_cast<M&>(model), slot);
        const bool runs = plan && plan->accepts(X);
        slot.note_ran(runs);  // (uses_plan: before running, so that one that throws says so too)
        if (!runs) return false;
        Y = plan->predict(X);
        return true;
    }
}

template <class M>
bool engine_forward(M& model, EngineSlot& slot, typename M::InView X, typename M::Out& Y,
                    EngineBackprop<typename M::In, typename M::OutView>& bp, bool train) {
    if constexpr (!engine_types<M>) {
        return false;
    } else {
        const Plan<M>* plan = engine_plan(model, slot);
        const bool runs = plan && plan->accepts(X);
        slot.note_ran(runs);
        if (!runs) return false;
        auto& pb = bp.template emplace<typename Plan<M>::Backprop>();
        bp.watch(slot.alive);
        Y = const_cast<Plan<M>*>(plan)->forward(X, pb, true, train);
        return true;
    }
}

// What an output of no rows is made of (EmptyLayout, engine.hpp).
template <class T>
EmptyLayout empty_layout(const T& y) {
    EmptyLayout l;
    if constexpr (requires { typename T::array_type; }) {  // a List
        l.entries = y.size();
        l.rows = detail::input_rows(y);
    } else if constexpr (requires { typename T::data_type; }) {  // a Ragged, a Padded
        using D = std::remove_cvref_t<decltype(y.data())>;
        l.entries = y.size();
        l.rows = y.data().shape(0);
        l.width = y.data().shape(D::rank - 1);
    } else {
        using A = std::remove_cvref_t<T>;
        l.rows = y.shape(0);
        if constexpr (A::rank >= 2) l.width = y.shape(A::rank - 1);
    }
    return l;
}

// The backprop of a training call on no rows (an empty batch; plan_only's engine_train): the
// input's gradient is its shape of no rows, and no parameter's gradient moves. A gradient not
// shaped like the output is tenon-E111, as the layers' backprops say.
template <class In, class OutView>
struct NoRowsBackprop {
    In dX{};
    EmptyLayout out;
    std::string model;
    In operator()(OutView dY) const {
        check(dY);
        return dX;
    }
    void params_only(OutView dY) const { check(dY); }
    void check(OutView dY) const {
        const EmptyLayout found = empty_layout(dY);
        if (!(found == out)) throw_empty_gradient(model, out, found);
    }
};
// The backprop of no rows for input X and output Y: dX is X's shape of no rows.
template <class M>
void no_rows_backprop(const M& model, typename M::InView X, const typename M::Out& Y,
                      EngineBackprop<typename M::In, typename M::OutView>& bp) {
    using In = typename M::In;
    auto& nb = bp.template emplace<NoRowsBackprop<In, typename M::OutView>>();
    if constexpr (std::is_same_v<In, std::remove_cvref_t<typename M::InView>>) nb.dX = X;
    else nb.dX = In({0, X.shape(1)});
    nb.out = empty_layout(Y);
    nb.model = model.name();
}

// The data types whose layout of no rows empty_layout knows: an array, a List, a Ragged or a
// Padded (a list of lists, with_flatten's, is none: its chain's layers take an empty batch).
template <class T>
concept has_empty_layout =
    requires { typename T::array_type; } || requires { typename T::data_type; } || requires { T::rank; };
template <class M>
bool engine_empty_batch(const M& model, typename M::InView X, typename M::Out& Y,
                        EngineBackprop<typename M::In, typename M::OutView>& bp) {
    if constexpr (!has_empty_layout<typename M::In> || !has_empty_layout<typename M::Out>) {
        (void)model, (void)X, (void)Y, (void)bp;
        return false;
    } else {
        if (!detail::empty_batch_output(model, X, Y)) return false;
        no_rows_backprop<M>(model, X, Y, bp);
        return true;
    }
}
[[noreturn]] void throw_plan_input(const std::string& model_name);

template <class M>
void engine_train(M& model, EngineSlot& slot, typename M::InView X, bool is_train, typename M::Out& Y,
                  EngineBackprop<typename M::In, typename M::OutView>& bp) {
    if (engine_forward(model, slot, X, Y, bp, is_train)) [[likely]]
        return;
    // The plan did not run: the layers' predict says what is wrong with the input (the layer
    // named by its path, as their training would); an input of no rows is none of that: the
    // output of no rows, and nothing to learn. Otherwise the walk refused: its own error.
    if (!detail::empty_batch_output(model, X, Y)) Y = model.predict(X);  // (inside this call: the layers)
    const Plan<M>* plan = engine_plan(model, slot);
    if constexpr (!Plan<M>::head_input) {  // (a head's plan takes any input: accepts() is true)
        if (plan && detail::input_rows(X) == 0) return no_rows_backprop<M>(model, X, Y, bp);
    }
    if (!plan) (void)Plan<M>(model);
    throw_plan_input(model.name());
}

template <class M>
bool engine_freeze(M& model, EngineSlot& slot, bool on) {
    slot.frozen.store(on, std::memory_order_release);
    // Freezing makes the plan now (frozen) when there is none (not before initialize: the next
    // call's plan is made frozen); thawing only thaws a held one.
    const Plan<M>* plan = on ? (model.is_initialized() ? engine_plan(model, slot) : nullptr)
                             : static_cast<const Plan<M>*>(slot.current.load(std::memory_order_acquire));
    if (!plan) return false;
    const tenon::detail::LockGuard guard(slot.lock);
    auto* p = const_cast<Plan<M>*>(plan);  // (made non-const by engine_plan; a set-up call)
    if (!on) p->thaw_weights();
    else if (!p->weights_frozen()) p->freeze_weights();
    return true;
}

template <class M>
std::size_t engine_frozen_values(const M&, const EngineSlot& slot) {
    if constexpr (!engine_types<M>) {
        return 0;
    } else {
        const auto* plan = static_cast<const Plan<M>*>(slot.current.load(std::memory_order_acquire));
        return plan && plan->is_current() ? plan->frozen_values() : 0;
    }
}

}  // namespace lowering

// The plan's stages, and with a batch size its workspace layout, as text.
// (A model lower() does not take: its tenon-E054, and an empty text.)
template <class M>
    requires Model<M>
auto describe_plan(M& model) {
    if constexpr (!lowering::engine_types<M>) (void)lower(model);
    if constexpr (lowering::engine_types<M>) return std::string(lower(model).describe());
    else return std::string();
}
template <class M>
    requires Model<M>
auto describe_plan(M& model, std::size_t batch) {
    if constexpr (!lowering::engine_types<M>) (void)lower(model);
    if constexpr (lowering::engine_types<M>) return std::string(lower(model).describe(batch));
    else return std::string();
}

}  // namespace tenon
