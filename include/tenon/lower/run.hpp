// Running a plan: everything of Plan<M> that does not depend on the model's layers, only on
// the data types it takes and gives (docs/lowering.md, "Running a plan").
//
// A plan's walk over the model (lower.hpp: which stages, which layers) is per model type; its
// running (the input copied or measured, the stages' passes in order, the output and the
// gradients handed back) reads only the PlanData and the call's arrays. So it is written once
// here, as lowering::Runner<In, Out>, and compiled once in the library for every pair of data
// types a model's own calls may run a plan for (src/plan_run.cpp; `extern template` below),
// not once per model type in the user's file: a model's file then compiles only its walk.
// (A model whose first layer is a "head" taking some other type instantiates its runner where
// it is used.)
#pragma once
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "tenon/lower/plan.hpp"
#include "tenon/model/finite.hpp"
#include "tenon/model/layer.hpp"
#include "tenon/transfers/detail/transfer.hpp"

namespace tenon::lowering {

// A List or Ragged of Floats2d or Ints2d, or a Padded (of floats): the data types of a
// sequence plan. A Padded's rows are on the plan's steps space (its (T, B) rows).
template <class T>
struct seq_type {
    static constexpr bool value = false, list = false, ints = false, padded = false;
    using Array = void;
};
template <class A>
struct seq_type<List<A>> {
    static constexpr bool value = std::is_same_v<A, Floats2d> || std::is_same_v<A, Ints2d>;
    static constexpr bool list = true, ints = std::is_same_v<A, Ints2d>, padded = false;
    using Array = A;
};
template <class A>
struct seq_type<BasicRagged<A>> {
    static constexpr bool value = std::is_same_v<A, Floats2d> || std::is_same_v<A, Ints2d>;
    static constexpr bool list = false, ints = std::is_same_v<A, Ints2d>, padded = false;
    using Array = A;
};
template <>
struct seq_type<Padded> {
    static constexpr bool value = true, list = false, ints = false, padded = true;
    using Array = Floats2d;
};

// The Backprops of the layer stages inside clone's copies (Stage::box): a host area from the
// thread's block cache, each record's Backprop constructed in place by a training forward and
// destroyed with the call's state (src/plan_run.cpp). The records say how to destroy
// themselves: destroying them needs no plan.
class LayerBoxes {
public:
    LayerBoxes() = default;
    ~LayerBoxes();
    LayerBoxes(LayerBoxes&&) noexcept;
    LayerBoxes& operator=(LayerBoxes&&) noexcept;
    // Destroys what it held, then constructs every boxed stage's Backprop (default); returns
    // the area (null where the plan has no boxed stage).
    char* make(const PlanData& p);
    char* data() const noexcept { return reinterpret_cast<char*>(const_cast<std::uint64_t*>(area_.data())); }

private:
    void clear() noexcept;
    Array<std::uint64_t, dyn> area_;
};

// What one training call keeps from its forward pass for its backprop.
struct CallState {
    // (Special members out of line, src/plan_run.cpp: compiled once, not in every model's file.)
    CallState();
    ~CallState();
    CallState(CallState&&) noexcept;
    CallState& operator=(CallState&&) noexcept;

    Floats1d ws;                      // the workspace of this call
    std::size_t rows = 0;
    const float* x0 = nullptr;        // the caller's X (Floats2d input), or x_own's
    Floats2d x_own;                   // a copy of X, when the caller may free it (the engine)
    Floats2d head_out;                // boundary 1 when the first layer is a head
    Ints1d lengths;                   // a sequence plan's: the input's sequences
    std::size_t nonempty = 0, in_cols = 0;
    // A sequence plan's: its stages' host words (Ctx::host), host memory on every backend, from
    // the block cache (no allocation after warm-up).
    Array<std::uint64_t, dyn> host;
    LayerBoxes boxes;                 // training: the Backprops of layer stages inside clone
};

// The running of a plan from In to Out. `root` is the model's Backprop storage, where the
// "layer" stages keep theirs (null: predict).
// An error a stage throws is its layer's: the model's call names it by its path, as the
// layers' own path does (detail::note_entry_error; a layer stage's entry point has said it).
inline void note_stage_error(Error& e, const Stage& s) {
    if (!e.origin() && s.layer) e.set_origin(s.layer);
}
// The arrays a call makes for its output (the last stage's) or its input's gradient (the first
// stage's): an allocation that fails there is that stage's layer's (tenon-E241 names it by its
// path), as the stage's own errors are.
template <class F>
decltype(auto) for_stage(const PlanData& p, bool last, F&& f) {
    try {
        return f();
    } catch (Error& e) {
        if (!p.stages.empty()) note_stage_error(e, last ? p.stages.back() : p.stages.front());
        throw;
    }
}
// A call's workspace: a failed allocation says how large it was and names the layer of its
// largest part (note_workspace_error, src/plan.cpp).
inline Floats1d workspace(const PlanData& p, std::size_t floats, std::size_t rows, bool train) {
    try {
        return Floats1d({floats}, uninitialized);
    } catch (Error& e) {
        note_workspace_error(e, p, rows, train);
        throw;
    }
}

template <class In, class Out>
struct Runner {
    using InView = input_view_t<In>;
    using OutView = input_view_t<Out>;
    // A sequence plan: a List or Ragged of arrays (or of ids) in, a List or Ragged out (or a
    // Floats2d of one row per sequence, after a reduction, or of the sequences' rows, after
    // list2array), the rows of every sequence back to
    // back in the workspace (docs/lowering.md, "Sequence models").
    static constexpr bool seq = seq_type<In>::value;
    static constexpr bool seq_out = seq_type<Out>::value;
    // The first stage is a layer taking some other type (an embedding of ids, SparseLinear).
    static constexpr bool head_input = !seq && !std::is_same_v<In, Floats2d>;

    // Inference: dropout off, no randomness; the workspace comes from this thread's cache.
    // frozen: the plan's copies of its weights (Plan::freeze_weights), or null.
    static Out predict(const PlanData& p, const Ops& ops, const InView& X, const FrozenWeights* frozen = nullptr);
    // Training's forward pass into `st`; copy_input: keep a copy of X (the model's own
    // begin_update, whose caller may free X before calling backprop).
    static Out forward(const PlanData& p, const Ops& ops, const InView& X, CallState& st, char* root,
                       bool copy_input);
    // Backpropagates dY (adds to the parameters' gradients); dX when input_grad.
    static In backward(const PlanData& p, const Ops& ops, const CallState& st, char* root, const OutView& dY,
                       bool input_grad);
    // Whether the engine may run X through the plan without a check the model's own path
    // would word differently: the width the first stage takes, and at least one row.
    static bool accepts(const PlanData& p, const InView& X);

private:
    static constexpr std::size_t npos_cols = static_cast<std::size_t>(-1);
    static Ctx ctx(const PlanData& p, const Ops& ops, float* ws, std::size_t rows, bool train);
    static std::size_t seq_measure(const InView& X, Ints1d& lengths, std::size_t& nonempty, std::size_t& cols);
    static void seq_rows(const PlanData& p, Ctx& c, const Ints1d& lengths, std::size_t rows, std::size_t nonempty);
    static void seq_put_input(const PlanData& p, Ctx& c, const InView& X, Ints2d& ids, std::size_t cols);
    static Out seq_output(const PlanData& p, const Ctx& c, const Ints1d& lengths);
    static void seq_take_grad(const PlanData& p, const Ops& ops, const OutView& dY, const Ints1d& lengths,
                              std::size_t out_rows, std::size_t nO, float* to);
    static In seq_input_grad(const PlanData& p, const Ctx& c, const Ints1d& lengths, std::size_t rows,
                             std::size_t cols);
    static void check_head(const PlanData& p, const Floats2d& h);
    static void check_input(const PlanData& p, const InView& X);
    static void check_seq_input(const PlanData& p, const InView& X);
    static void run_forward(const PlanData& p, Ctx& c, std::size_t first, char* root);
};

// (Member functions defined out of the class, so not inline: for the pairs below, a user's
// file declares them and the library defines them.)

template <class In, class Out>
Out Runner<In, Out>::predict(const PlanData& p, const Ops& ops, const InView& X, const FrozenWeights* frozen) {
    if (detail::entry_depth == 0) detail::check_finite_input("plan of ", p.model_name, "predict", X, &ops);
    const detail::FiniteCheckOff inner;  // the stages' own layers see what the plan computed
    if constexpr (seq) {
        check_seq_input(p, X);
        Ints1d lengths;
        std::size_t nonempty = 0, cols = 0;
        const std::size_t rows = seq_measure(X, lengths, nonempty, cols);
        Ctx c = ctx(p, ops, nullptr, rows, false);
        c.frozen = frozen;
        seq_rows(p, c, lengths, rows, nonempty);
        Floats1d ws = workspace(p, p.ws_floats(c.srows, false), rows, false);
        c.ws = ws.data();
        Ints2d ids;
        seq_put_input(p, c, X, ids, cols);
        c.y = c.buf(p.bounds.back().act);
        run_forward(p, c, 0, nullptr);
        return for_stage(p, true, [&] { return seq_output(p, c, lengths); });
    } else {
        Floats2d head;
        std::size_t rows = 0;
        std::size_t first = 0;
        if constexpr (head_input) {
            const auto& s0 = p.stages[0];
            s0.fns.predict(s0.layer, &X, head);
            check_head(p, head);
            rows = head.shape(0);
            first = 1;
        } else {
            check_input(p, X);
            rows = X.shape(0);
        }
        Floats1d ws = workspace(p, p.ws_floats(rows, false), rows, false);
        Ctx c = ctx(p, ops, ws.data(), rows, false);
        c.frozen = frozen;
        if constexpr (head_input) {
            c.b1 = head.data();
            if (p.bounds.size() == 2) {
                if (!p.stages[0].ops.empty()) c.ops->stage_forward_rows(p.stages[0], resolve(p.stages[0], false), c);
                return head;
            }
        } else {
            c.x0 = X.data();
        }
        Floats2d Y = for_stage(p, true, [&] { return Floats2d({rows, p.bounds.back().width}, uninitialized); });
        c.y = Y.data();
        run_forward(p, c, first, nullptr);
        return Y;
    }
}

template <class In, class Out>
Out Runner<In, Out>::forward(const PlanData& p, const Ops& ops, const InView& X, CallState& st, char* root,
                             bool copy_input) {
    if (detail::entry_depth == 0) detail::check_finite_input("plan of ", p.model_name, "begin_update", X, &ops);
    const detail::FiniteCheckOff inner;
    if constexpr (seq) {
        (void)copy_input;  // a sequence plan keeps what it needs in its workspace
        check_seq_input(p, X);
        st.rows = seq_measure(X, st.lengths, st.nonempty, st.in_cols);
        Ctx c = ctx(p, ops, nullptr, st.rows, true);
        seq_rows(p, c, st.lengths, st.rows, st.nonempty);
        st.ws = workspace(p, p.ws_floats(c.srows, true), st.rows, true);
        c.ws = st.ws.data();
        st.host = Array<std::uint64_t, dyn>({p.stages.size() * seq_host_words}, Memory::host);
        c.host = st.host.data();
        c.boxes = st.boxes.make(p);
        Ints2d ids;
        seq_put_input(p, c, X, ids, st.in_cols);
        c.y = c.buf(p.bounds.back().act);
        run_forward(p, c, 0, root);
        return for_stage(p, true, [&] { return seq_output(p, c, st.lengths); });
    } else {
        std::size_t first = 0;
        if constexpr (head_input) {
            (void)copy_input;
            const auto& s0 = p.stages[0];
            s0.fns.forward(s0.layer, &X, root + s0.bp_offset, st.head_out);
            check_head(p, st.head_out);
            st.rows = st.head_out.shape(0);
            first = 1;
        } else {
            check_input(p, X);
            st.rows = X.shape(0);
            if (copy_input) {
                st.x_own = for_stage(p, false, [&] { return Floats2d({X.shape(0), X.shape(1)}, uninitialized); });
                copy_floats(ops, st.x_own.data(), X.data(), X.size());
                st.x0 = st.x_own.data();
            } else {
                st.x0 = X.data();
            }
        }
        st.ws = workspace(p, p.ws_floats(st.rows, true), st.rows, true);
        Ctx c = ctx(p, ops, st.ws.data(), st.rows, true);
        for (const Stage& s : p.stages)
            if (is_seq_prim(s.prim)) {  // (a table after a head layer: its host words)
                st.host = Array<std::uint64_t, dyn>({p.stages.size() * seq_host_words}, Memory::host);
                c.host = st.host.data();
                break;
            }
        c.boxes = st.boxes.make(p);
        c.x0 = st.x0;
        c.b1 = st.head_out.size() ? st.head_out.data() : nullptr;
        const std::size_t nO = p.bounds.back().width;
        Floats2d Y = for_stage(p, true, [&] { return Floats2d({st.rows, nO}, uninitialized); });
        c.y = Y.data();
        if (head_input && p.bounds.size() == 2) {
            if (!p.stages[0].ops.empty()) c.ops->stage_forward_rows(p.stages[0], resolve(p.stages[0], true), c);
            copy_floats(ops, Y.data(), st.head_out.data(), Y.size());
        } else {
            run_forward(p, c, first, root);
            if (p.final_in_ws) copy_floats(ops, Y.data(), c.act(p.bounds.size() - 1), Y.size());
        }
        return Y;
    }
}

template <class In, class Out>
In Runner<In, Out>::backward(const PlanData& p, const Ops& ops, const CallState& st, char* root, const OutView& dY,
                             bool input_grad) {
    const std::size_t nO = p.bounds.back().width;
    In dX{};
    Ctx c = ctx(p, ops, const_cast<float*>(st.ws.data()), st.rows, true);
    c.host = const_cast<std::uint64_t*>(st.host.data());
    c.boxes = st.boxes.data();
    if constexpr (seq) {
        seq_rows(p, c, st.lengths, st.rows, st.nonempty);
        c.in_cols = st.in_cols;
        c.x0 = p.in_buf != npos ? c.buf(p.in_buf) : nullptr;
        float* dy = c.buf(p.dy_buf);
        seq_take_grad(p, ops, dY, st.lengths, c.srows[p.bounds.back().space], nO, dy);
        c.dy = dy;
        if (input_grad && p.dx_buf != npos) c.dx0 = c.buf(p.dx_buf);
    } else {
        if (dY.shape(0) != st.rows || dY.shape(1) != nO)
            throw ShapeError("plan of " + p.model_name + ": backprop: expected a gradient of shape (" +
                                 std::to_string(st.rows) + ", " + std::to_string(nO) + ") like the output, but found (" +
                                 std::to_string(dY.shape(0)) + ", " + std::to_string(dY.shape(1)) + ")",
                             "tenon-E111");
        c.x0 = st.x0;
        c.b1 = st.head_out.size() ? const_cast<float*>(st.head_out.data()) : nullptr;
        c.dy = dY.data();
        if constexpr (!head_input) {
            if (input_grad) {
                dX = for_stage(p, false, [&] { return Floats2d({st.rows, p.bounds[0].width}, uninitialized); });
                c.dx0 = dX.data();
            }
        }
    }
    for (std::size_t si = p.stages.size(); si-- > 0;) {
        const Stage& s = p.stages[si];
        try {
            const StageParams sp = resolve(s, true, true);
            c.at(s.space);
            if (s.prim == Prim::layer) {
                Floats2dCView d(c.grad(s.out), {c.rows, s.nO});
                if (!s.ops.empty()) {
                    c.ops->stage_backward_rows(s, sp, c);
                    d = Floats2dCView(dz_of(s, c), {c.rows, s.nO});
                }
                if constexpr (head_input) {
                    if (s.head) {
                        s.fns.backward(c.layer_bp(s, root), d, &dX);
                        continue;
                    }
                }
                Floats2d g;
                s.fns.backward(c.layer_bp(s, root), d, &g);
                float* to = c.grad(s.in);
                if (!to) continue;  // the input's gradient, not wanted
                if (s.dx_assign) copy_floats(ops, to, g.data(), g.size());
                else if (g.size()) ops.elementwise(Binary::add_into, g.data(), nullptr, to, g.size());
            } else if (is_seq_prim(s.prim)) {
                const float* d = c.grad(s.out);
                if (!s.ops.empty()) {
                    c.ops->stage_backward_rows(s, sp, c);
                    d = dz_of(s, c);
                }
                seq_backward(s, c, d);
            } else {
                c.ops->stage_backward_rows(s, sp, c);
                if (s.prim != Prim::none) product_backward(s, sp, c);
            }
        } catch (Error& e) {
            note_stage_error(e, s);
            throw;
        }
    }
    if constexpr (seq) {
        if (input_grad)
            dX = for_stage(p, false, [&] { return seq_input_grad(p, c, st.lengths, st.rows, st.in_cols); });
    }
    return dX;
}

template <class In, class Out>
bool Runner<In, Out>::accepts(const PlanData& p, const InView& X) {
    if constexpr (seq) {
        // Sequences of the width the plan takes (ids: all of the same columns), some rows.
        const std::size_t want = p.bounds[0].ints ? 0 : p.bounds[0].width;
        std::size_t rows = 0, cols = npos_cols;
        auto ok = [&](const auto& a) {
            if (a.shape(0) == 0) return true;
            rows += a.shape(0);
            if (cols == npos_cols) cols = a.shape(1);
            return a.shape(1) == cols && (want == 0 || cols == want);
        };
        if constexpr (seq_type<In>::list) {
            for (const auto& a : X)
                if (!ok(a)) return false;
        } else if constexpr (seq_type<In>::padded) {
            if (padded_off_plan(X)) return false;
            for (auto l : X.lengths()) rows += static_cast<std::size_t>(l);
            if (want != 0 && X.data().shape(2) != want) return false;
        } else {
            if (!ok(X.data())) return false;
        }
        return rows > 0;
    } else if constexpr (head_input) {
        return true;
    } else {
        return X.shape(0) > 0 && X.shape(1) == p.bounds[0].width;
    }
}

template <class In, class Out>
Ctx Runner<In, Out>::ctx(const PlanData& p, const Ops& ops, float* ws, std::size_t rows, bool train) {
    Ctx c;
    c.p = &p;
    c.ops = &ops;
    c.ws = ws;
    std::size_t r[max_spaces + 1];
    p.space_rows(rows, 0, 0, r);
    c.set_rows(r);
    c.train = train;
    return c;
}

// ---- A sequence plan's input and output (the rows back to back, space 0).
// The rows, the sequences' lengths, how many have rows, and the ids' columns.
template <class In, class Out>
std::size_t Runner<In, Out>::seq_measure(const InView& X, Ints1d& lengths, std::size_t& nonempty, std::size_t& cols) {
    std::size_t rows = 0;
    nonempty = 0;
    cols = 0;
    if constexpr (seq_type<In>::list) {
        lengths = Ints1d({X.size()}, uninitialized);
        for (std::size_t i = 0; i < X.size(); ++i) {
            const std::size_t n = X[i].shape(0);
            lengths[i] = static_cast<std::int32_t>(n);
            rows += n;
            nonempty += n != 0;
            if (n) cols = X[i].shape(1);
        }
    } else if constexpr (seq_type<In>::padded) {
        // (the sequences in their own order; the data is to_padded's layout: accepts)
        const std::size_t B = X.size();
        lengths = Ints1d({B}, uninitialized);
        for (std::size_t b = 0; b < B; ++b) {
            const auto n = X.lengths()[b];
            lengths[static_cast<std::size_t>(X.indices()[b])] = n;
            rows += static_cast<std::size_t>(n);
            nonempty += n > 0;
        }
        cols = X.data().shape(2);
    } else if constexpr (seq) {
        lengths = X.lengths();
        for (auto l : lengths) nonempty += l > 0;
        rows = X.rows();
        cols = X.data().shape(1);
    } else {
        (void)X;
        (void)lengths;
    }
    return rows;
}

template <class In, class Out>
void Runner<In, Out>::seq_rows(const PlanData& p, Ctx& c, const Ints1d& lengths, std::size_t rows,
                               std::size_t nonempty) {
    std::size_t r[max_spaces + 1], longest = 0;
    for (const auto l : lengths)
        if (static_cast<std::size_t>(l) > longest) longest = static_cast<std::size_t>(l);
    p.space_rows(rows, nonempty, lengths.size(), r, longest);
    c.set_rows(r);
    c.lengths = lengths.data();
    c.nseg = lengths.size();
}

// Floats: copied into the workspace; ids: read where they are (a list's joined into ids).
template <class In, class Out>
void Runner<In, Out>::seq_put_input(const PlanData& p, Ctx& c, const InView& X, Ints2d& ids, std::size_t cols) {
    if constexpr (seq) {
        c.in_cols = cols;
        const std::size_t rows = c.srows[0];
        if constexpr (seq_type<In>::ints) {
            if constexpr (seq_type<In>::list) {
                ids = Ints2d({rows, cols}, uninitialized);
                std::int32_t* to = ids.data();
                for (const auto& a : X) {
                    if (a.size()) std::memcpy(to, a.data(), a.size() * sizeof(std::int32_t));
                    to += a.size();
                }
                c.x0 = reinterpret_cast<const float*>(ids.data());
            } else {
                c.x0 = reinterpret_cast<const float*>(X.data().data());
            }
        } else {
            float* to = c.buf(p.in_buf);
            c.x0 = to;
            if constexpr (seq_type<In>::list) {
                for (const auto& a : X) {
                    copy_floats(*c.ops, to, a.data(), a.size());
                    to += a.size();
                }
            } else {
                (void)rows;  // (a Padded's data as it is: the steps space's rows)
                if (X.data().size()) copy_floats(*c.ops, to, X.data().data(), X.data().size());
            }
        }
    } else {
        (void)p, (void)c, (void)X, (void)ids, (void)cols;
    }
}

template <class In, class Out>
Out Runner<In, Out>::seq_output(const PlanData& p, const Ctx& c, const Ints1d& lengths) {
    const std::size_t nO = p.bounds.back().width, rows = c.srows[p.bounds.back().space];
    const float* y = c.act(p.bounds.size() - 1);
    if constexpr (!seq_out) {  // one row per sequence (a reduction's), or every row (list2array's)
        (void)lengths;
        Floats2d a({rows, nO}, uninitialized);
        copy_floats(*c.ops, a.data(), y, a.size());
        return a;
    } else if constexpr (seq_type<Out>::padded) {
        // to_padded's layout; the rows as they are on the steps space, else placed (zero padding)
        Ints1d size_at_t, sorted, indices;
        padded_layout(lengths.data(), lengths.size(), size_at_t, sorted, indices);
        Floats3d data({size_at_t.size(), lengths.size(), nO}, uninitialized);
        if (p.spaces[p.bounds.back().space].steps) copy_floats(*c.ops, data.data(), y, data.size());
        else rows_to_steps(c, y, nO, data.data(), false);
        return Out(std::move(data), std::move(size_at_t), std::move(sorted), std::move(indices));
    } else if constexpr (seq_type<Out>::list) {
        Out out;
        out.reserve(lengths.size());
        for (auto l : lengths) {
            Floats2d a({static_cast<std::size_t>(l), nO}, uninitialized);
            copy_floats(*c.ops, a.data(), y, a.size());
            y += a.size();
            out.push_back(std::move(a));
        }
        return out;
    } else {
        Floats2d a({rows, nO}, uninitialized);
        copy_floats(*c.ops, a.data(), y, a.size());
        return Out(std::move(a), lengths);
    }
}

// The output's gradient, flattened into the workspace, after checking it has the output's
// sequences (tenon-E170, as the transfers word it) and width (tenon-E111).
template <class In, class Out>
void Runner<In, Out>::seq_take_grad(const PlanData& p, const Ops& ops, const OutView& dY, const Ints1d& lengths,
                                    std::size_t out_rows, std::size_t nO, float* to) {
    // (The messages' strings are made only on an error: a backprop allocates nothing.)
    auto width = [&](std::size_t w) {
        if (w != nO)
            throw ShapeError("plan of " + p.model_name + ": backprop: expected a gradient of width " +
                                 std::to_string(nO) + " like the output, but found " + std::to_string(w),
                             "tenon-E111");
    };
    if constexpr (!seq_out) {
        // (One row per sequence after a reduction, or the sequences' rows after list2array.)
        (void)width;
        if (dY.shape(0) != out_rows || dY.shape(1) != nO)
            throw ShapeError("plan of " + p.model_name + ": backprop: expected a gradient of shape (" +
                                 std::to_string(out_rows) + ", " + std::to_string(nO) + "), one row per " +
                                 (p.spaces[p.bounds.back().space].docs ? "sequence" : "row of the sequences") +
                                 " like the output, but found (" + std::to_string(dY.shape(0)) + ", " +
                                 std::to_string(dY.shape(1)) + ")",
                             "tenon-E111");
        copy_floats(ops, to, dY.data(), dY.size());
    } else if constexpr (seq_type<Out>::padded) {
        detail::xfer::PaddedLayout want;
        padded_layout(lengths.data(), lengths.size(), want.size_at_t, want.lengths, want.indices);
        want.steps = want.size_at_t.size();
        want.check("plan of " + p.model_name, dY);
        width(dY.data().shape(2));
        if (p.spaces[p.bounds.back().space].steps) {
            copy_floats(ops, to, dY.data().data(), dY.data().size());
        } else {
            Ctx c;
            c.ops = &ops;
            c.lengths = lengths.data();
            c.nseg = lengths.size();
            steps_to_rows(c, dY.data().data(), nO, to, false);
        }
    } else if constexpr (seq_type<Out>::list) {
        bool same = dY.size() == lengths.size();
        for (std::size_t i = 0; same && i < dY.size(); ++i) same = dY[i].shape(0) == static_cast<std::size_t>(lengths[i]);
        if (!same) detail::xfer::check_list_lengths("plan of " + p.model_name, lengths, dY);
        for (const auto& a : dY) {
            if (!a.size()) continue;
            width(a.shape(1));
            copy_floats(ops, to, a.data(), a.size());
            to += a.size();
        }
    } else {
        const auto& L = dY.lengths();
        if (L.size() != lengths.size() || !std::equal(L.begin(), L.end(), lengths.begin()))
            detail::xfer::check_lengths("plan of " + p.model_name, lengths, L);
        width(dY.data().shape(1));
        copy_floats(ops, to, dY.data().data(), dY.data().size());
    }
}

// The input's gradient: zeros for ids (as the tables' own backprops give), else the
// workspace's dx0 split into the sequences.
template <class In, class Out>
In Runner<In, Out>::seq_input_grad(const PlanData& p, const Ctx& c, const Ints1d& lengths, std::size_t rows,
                                   std::size_t cols) {
    if constexpr (seq) {
        using A = typename seq_type<In>::Array;
        const std::size_t w = seq_type<In>::ints ? cols : p.bounds[0].width;
        const float* g = c.dx0;
        auto part = [&](std::size_t n) {
            A a({n, w});
            if constexpr (!seq_type<In>::ints) {
                if (g) copy_floats(*c.ops, a.data(), g, a.size());
                if (g) g += a.size();
            }
            return a;
        };
        if constexpr (seq_type<In>::padded) {
            (void)rows, (void)part;  // (dx0: the steps space's rows, the input's layout)
            Ints1d size_at_t, sorted, indices;
            padded_layout(lengths.data(), lengths.size(), size_at_t, sorted, indices);
            Floats3d data({size_at_t.size(), lengths.size(), w});
            if (g) copy_floats(*c.ops, data.data(), g, data.size());
            return In(std::move(data), std::move(size_at_t), std::move(sorted), std::move(indices));
        } else if constexpr (seq_type<In>::list) {
            In out;
            out.reserve(lengths.size());
            for (auto l : lengths) out.push_back(part(static_cast<std::size_t>(l)));
            return out;
        } else {
            return In(part(rows), lengths);
        }
    } else {
        (void)p, (void)c, (void)lengths, (void)rows, (void)cols;
        return In{};
    }
}

// The head layer's output must be as wide as the plan was made for (a head layer whose
// width changed would be caught by is_current; this names a layer that broke its own nO).
template <class In, class Out>
void Runner<In, Out>::check_head(const PlanData& p, const Floats2d& h) {
    if (h.shape(1) != p.bounds[1].width)
        throw ShapeError("plan of " + p.model_name + ": " + p.stages[0].name + " returned width " +
                             std::to_string(h.shape(1)) + ", expected " + std::to_string(p.bounds[1].width),
                         "tenon-E111");
}

template <class In, class Out>
void Runner<In, Out>::check_input(const PlanData& p, const InView& X) {
    if constexpr (!head_input && !seq) {
        if (X.shape(1) != p.bounds[0].width)
            throw ShapeError("plan of " + p.model_name + ": expected input width " + std::to_string(p.bounds[0].width) +
                                 " but found " + std::to_string(X.shape(1)),
                             "tenon-E101");
    } else {
        (void)p, (void)X;
    }
}

// A sequence plan's input: the width its first stage takes (ids: the same columns in every
// sequence), a Padded in to_padded's layout (what accepts() says, as an error: a held plan's
// own calls; the model's calls run the layers on what the plan does not take).
template <class In, class Out>
void Runner<In, Out>::check_seq_input(const PlanData& p, const InView& X) {
    if constexpr (seq) {
        const std::size_t want = p.bounds[0].ints ? 0 : p.bounds[0].width;
        std::size_t cols = npos_cols, i = 0;
        auto check = [&](std::size_t n, std::size_t w) {
            if (n == 0) return;
            if (cols == npos_cols) cols = w;
            if (w != (want ? want : cols))
                throw ShapeError("plan of " + p.model_name + ": expected " +
                                     (want ? "input width " + std::to_string(want)
                                           : std::to_string(cols) + " columns of ids, as the first sequence's,") +
                                     (seq_type<In>::list ? " but sequence " + std::to_string(i) + " has "
                                                         : std::string(" but the input has ")) +
                                     std::to_string(w),
                                 "tenon-E101");
        };
        if constexpr (seq_type<In>::list) {
            for (const auto& a : X) {
                check(a.shape(0), a.shape(1));
                ++i;
            }
        } else if constexpr (seq_type<In>::padded) {
            check(X.data().size(), X.data().shape(2));
            check_padded_input(p, X);
        } else {
            check(X.data().shape(0), X.data().shape(1));
        }
    } else {
        (void)p, (void)X;
    }
}

// The stages from `first` on; root: the Backprop storage (null: predict).
template <class In, class Out>
void Runner<In, Out>::run_forward(const PlanData& p, Ctx& c, std::size_t first, char* root) {
    for (std::size_t si = first; si < p.stages.size(); ++si) {
        const Stage& s = p.stages[si];
        try {
            StageParams sp = resolve(s, c.train);
            if (c.frozen) c.frozen->apply(si, sp);  // (predict only: the copies, W packed)
            c.at(s.space);
            if (s.prim == Prim::dense || s.prim == Prim::maxout) {
                sp.bias_act_done = product_forward(s, sp, c);
            } else if (is_seq_prim(s.prim)) {
                seq_forward(s, c);
                if (s.ops.empty()) continue;
            } else if (s.prim == Prim::layer) {
                // An unfused layer: its own predict/forward, its output copied into the workspace.
                const Floats2dCView x(c.act(s.in), {c.rows, s.nI});
                Floats2d y;
                if (root) s.fns.forward(s.layer, &x, c.layer_bp(s, root), y);
                else s.fns.predict(s.layer, &x, y);
                if (y.shape(0) != c.rows || y.shape(1) != s.nO)
                    throw ShapeError("plan of " + p.model_name + ": " + s.name + " returned (" +
                                         std::to_string(y.shape(0)) + ", " + std::to_string(y.shape(1)) +
                                         "), expected (" + std::to_string(c.rows) + ", " + std::to_string(s.nO) + ")",
                                     "tenon-E111");
                copy_floats(*c.ops, c.act(s.out), y.data(), y.size());
                if (s.ops.empty()) continue;
            }
            c.ops->stage_forward_rows(s, sp, c);
        } catch (Error& e) {
            note_stage_error(e, s);
            throw;
        }
    }
}

// The pairs of data types a model's own calls may run a plan for (engine_types in lower.hpp),
// head layers aside: compiled in the library (src/plan_run.cpp).
#define TENON_PLAN_RUNNERS(X)                        \
    X(Floats2d, Floats2d)                            \
    X(List<Floats2d>, List<Floats2d>)                \
    X(List<Floats2d>, Ragged)                        \
    X(List<Floats2d>, Floats2d)                      \
    X(List<Ints2d>, List<Floats2d>)                  \
    X(List<Ints2d>, Ragged)                          \
    X(List<Ints2d>, Floats2d)                        \
    X(Ragged, List<Floats2d>)                        \
    X(Ragged, Ragged)                                \
    X(Ragged, Floats2d)                              \
    X(BasicRagged<Ints2d>, List<Floats2d>)           \
    X(BasicRagged<Ints2d>, Ragged)                   \
    X(BasicRagged<Ints2d>, Floats2d)                 \
    X(List<Floats2d>, Padded)                        \
    X(List<Ints2d>, Padded)                          \
    X(Ragged, Padded)                                \
    X(BasicRagged<Ints2d>, Padded)                   \
    X(Padded, Padded)                                \
    X(Padded, List<Floats2d>)                        \
    X(Padded, Ragged)                                \
    X(Padded, Floats2d)
#define TENON_EXTERN_RUNNER(I, O) extern template struct Runner<I, O>;
TENON_PLAN_RUNNERS(TENON_EXTERN_RUNNER)
#undef TENON_EXTERN_RUNNER

}  // namespace tenon::lowering
