// The run-time half of lowering (see docs/lowering.md): a plan is a list of stages over
// "boundaries" (the arrays between stages), each stage a primary step (a matrix product, a
// maxout product, an unfused layer, or nothing) followed by ONE row-by-row pass of fused
// operations (bias and activation, layer norm, dropout, residual add). Everything a call
// needs besides the parameters lives in one workspace array laid out here; the model keeps
// the parameters and gradients. Nothing in this file depends on the model's type: the typed
// part (include/tenon/lower/lower.hpp) only builds a PlanData and supplies function pointers.
#pragma once
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "tenon/backend/cpu/gemm.hpp"
#include "tenon/backend/cpu/threads.hpp"
#include "tenon/layers/dropout.hpp"
#include "tenon/layers/layernorm.hpp"
#include "tenon/layers/sigmoid.hpp"
#include "tenon/model/node.hpp"
#include "tenon/random.hpp"

namespace tenon::lowering {

inline constexpr std::size_t npos = static_cast<std::size_t>(-1);
// At most this many fused operations per stage: their parameters are resolved once per call
// into a fixed array on the stack (no allocation); a longer run starts a new stage.
inline constexpr std::size_t max_ops = 8;
// A forward row pass over at least this many values is split over the threads.
inline constexpr std::size_t row_pass_split_work = 8192;

enum class Prim : std::uint8_t { none, dense, maxout, layer };
enum class OpKind : std::uint8_t { layernorm, dropout, sigmoid, add };

// One fused operation of a stage's row pass.
struct Op {
    OpKind kind{};
    Node* node = nullptr;              // the LayerNorm, Dropout or sigmoid_activation
    const Dropout* drop = nullptr;
    std::size_t skip = npos;           // add: the boundary whose rows are added
    std::size_t save = npos;           // buffer: LN's Xhat, dropout's mask, sigmoid's output
    std::size_t rstd = npos;           // buffer: LN's 1/std per row
    bool grad_assign = false;          // add: first write of the skip boundary's gradient (= not +=)
};

// The activation of a dense stage, called on one row (the layer's own activate code).
using act_fwd_fn = void (*)(const Node* layer, float* y, const float* b, std::size_t n, float* z, float t,
                            bool normalize);
using act_bwd_fn = void (*)(const Node* layer, float* d, const float* y, const float* z, std::size_t n, float k);
// An unfused layer (a "layer" stage): X points at the view the layer takes; bp at its
// Backprop inside the plan's Backprop storage; dX at the In (head) or Floats2d to fill.
struct LayerFns {
    void (*predict)(const Node* layer, const void* X, Floats2d& Y) = nullptr;
    void (*forward)(Node* layer, const void* X, void* bp, Floats2d& Y) = nullptr;
    void (*backward)(const void* bp, Floats2dCView dY, void* dX) = nullptr;
};

struct Stage {
    Prim prim = Prim::none;
    Node* layer = nullptr;
    std::string name;                  // the activation / layer name, for describe
    std::size_t in = 0, out = 0;       // boundaries
    std::size_t nI = 0, nO = 0, nP = 1;
    act_fwd_fn act_fwd = nullptr;
    act_bwd_fn act_bwd = nullptr;
    bool softmax = false;
    bool act_needs_y = false, act_needs_z = false;
    std::size_t ysave = npos, zsave = npos, which = npos;  // buffers
    bool head = false;                 // a layer stage whose input is the plan's (non-Floats2d) input
    LayerFns fns;
    std::size_t bp_offset = 0;         // of the layer's Backprop in the plan's Backprop storage
    bool dx_assign = true;             // first write of the input boundary's gradient (= not +=)
    std::vector<Op> ops;
};

struct Boundary {
    std::size_t width = 0;
    std::size_t act = npos;            // workspace buffer of the activation (npos: outside it)
    std::size_t grad = npos;           // workspace buffer of its gradient (npos: outside it)
    bool read_back = false;            // the backward pass reads this activation
};

// A region of the workspace: rows * per_row + fixed floats (per_row 0 with fixed > 0: one
// row of scratch). Offsets are r16 * pre_row + pre_fixed, r16 the batch size rounded up to
// 16, so every region starts 64-byte aligned and an offset costs one multiply per call.
struct Buffer {
    std::string what;
    std::size_t per_row = 0, fixed = 0;
    bool in_predict = false;
    std::size_t pre_row[2] = {0, 0}, pre_fixed[2] = {0, 0};  // [0] predict, [1] training
};

struct PlanData {
    std::string model_name;
    std::vector<Stage> stages;
    std::vector<Boundary> bounds;
    std::vector<Buffer> bufs;
    std::size_t total_row[2] = {0, 0}, total_fixed[2] = {0, 0};
    std::size_t dz = npos, zs = npos, tmp = npos;  // scratch: dZ of a stage, maxout's Z, one row
    bool final_in_ws = false;                     // training keeps the output in the workspace

    std::size_t add_buffer(std::string what, std::size_t per_row, std::size_t fixed, bool in_predict) {
        bufs.push_back(Buffer{std::move(what), per_row, fixed, in_predict, {0, 0}, {0, 0}});
        return bufs.size() - 1;
    }
    void layout() {
        for (int t = 0; t < 2; ++t) {
            std::size_t row = 0, fixed = 0;
            for (auto& b : bufs) {
                if (t == 0 && !b.in_predict) continue;
                b.pre_row[t] = row;
                b.pre_fixed[t] = fixed;
                row += b.per_row;
                fixed += (b.fixed + 15) / 16 * 16;
            }
            total_row[t] = row;
            total_fixed[t] = fixed;
        }
    }
    static std::size_t r16(std::size_t rows) { return (rows + 15) / 16 * 16; }
    std::size_t ws_floats(std::size_t rows, bool train) const { return r16(rows) * total_row[train] + total_fixed[train]; }
};

// Where a call's arrays are.
struct Ctx {
    const PlanData* p = nullptr;
    float* ws = nullptr;
    std::size_t rows = 0, r16 = 0;
    bool train = false;
    const float* x0 = nullptr;   // boundary 0 (the input), when it is a Floats2d
    float* b1 = nullptr;         // boundary 1 when a head layer made it (its own array)
    float* y = nullptr;          // the output array (the last boundary, unless it is in the workspace)
    float* dx0 = nullptr;        // the gradient of boundary 0 (the dX array returned)
    const float* dy = nullptr;   // the gradient of the last boundary (the caller's dY)

    float* buf(std::size_t id) const {
        const Buffer& b = p->bufs[id];
        return ws + r16 * b.pre_row[train] + b.pre_fixed[train];
    }
    float* act(std::size_t i) const {
        const Boundary& b = p->bounds[i];
        if (i == 0) return const_cast<float*>(x0);  // read only: stages never write their input
        if (b1 && i == 1) return b1;
        if (i + 1 == p->bounds.size() && !(train && p->final_in_ws)) return y;
        return buf(b.act);
    }
    float* grad(std::size_t i) const {
        if (i == 0) return dx0;
        if (i + 1 == p->bounds.size()) return const_cast<float*>(dy);  // read only
        return buf(p->bounds[i].grad);
    }
};

// Where a stage's backward pass leaves the gradient of its product's output (dense,
// maxout) or of its layer's output (layer stage with fused operations): in place over the
// gradient of its output when that is the workspace's and as wide (no copy), else scratch.
inline float* dz_of(const Stage& s, const Ctx& c) {
    if (s.prim != Prim::maxout && s.out + 1 != c.p->bounds.size()) return c.buf(c.p->bounds[s.out].grad);
    return c.buf(c.p->dz);
}

// Parameters of a stage, looked up once per call (by name: a plan never holds pointers into
// the model, which may reallocate them).
struct OpParams {
    const float* G = nullptr;
    const float* b = nullptr;
    float* dG = nullptr;
    float* db = nullptr;
    float keep = 1.0f, threshold = 0.0f;
    bool on = false, all = false;  // dropout: drawing a mask; the rate is 1
};
struct StageParams {
    const float* W = nullptr;
    const float* b = nullptr;
    float* dW = nullptr;
    float* db = nullptr;
    float dW_beta = 1.0f;  // 0 when dW is a lazy zero (Node::get_grad_for_overwrite): the product writes it
    float t = 1.0f, k = 1.0f;
    bool normalize = true;
    OpParams op[max_ops];
};

// `grads`: for the backward pass (the forward pass must not touch the gradients: taking dW
// for overwriting clears its lazy-zero mark).
inline StageParams resolve(const Stage& s, bool train, bool grads = false) {
    StageParams sp;
    if (s.prim == Prim::dense || s.prim == Prim::maxout) {
        const Node& l = *s.layer;
        sp.W = l.get_param("W").data;
        sp.b = l.get_param("b").data;
        if (grads) {
            bool zero = false;
            sp.dW = s.layer->get_grad_for_overwrite("W", zero).data;
            sp.dW_beta = zero ? 0.0f : 1.0f;
            sp.db = s.layer->get_grad("b").data;
        }
        if (s.softmax) {
            const double t = l.attr_as<double>("softmax_temperature");
            if (!(t > 0.0))
                throw Error("softmax: the temperature must be > 0, found " + std::to_string(t), "tenon-E113");
            sp.t = static_cast<float>(t);
            sp.k = t != 1.0 ? static_cast<float>(1.0 / t) : 1.0f;
            sp.normalize = train || l.attr_as<bool>("softmax_normalize");
        }
    }
    for (std::size_t i = 0; i < s.ops.size(); ++i) {
        const Op& op = s.ops[i];
        OpParams& o = sp.op[i];
        if (op.kind == OpKind::layernorm) {
            const Node& l = *op.node;
            o.G = l.get_param("G").data;
            o.b = l.get_param("b").data;
            if (grads) {
                o.dG = op.node->get_grad("G").data;
                o.db = op.node->get_grad("b").data;
            }
        } else if (op.kind == OpKind::dropout) {
            const double r = op.drop->rate();
            o.on = train && r > 0.0 && op.drop->attr_as<bool>("is_enabled");
            o.all = r >= 1.0;
            if (o.on && !o.all) {
                o.keep = static_cast<float>(1.0 / (1.0 - r));
                o.threshold = static_cast<float>(r);
            }
        }
    }
    return sp;
}

// The forward row pass of stage s (after its primary step wrote, or left, the rows in O).
// Every row is independent: a dropout draws one key per call, in op order as the layers
// do, and element j of its mask is a function of the key and j (dropout_mask,
// random.hpp), so the rows are split over the threads and the result is the same for any
// thread count.
inline void row_pass_forward(const Stage& s, const StageParams& sp, const Ctx& c) {
    const std::size_t n = s.nO, rows = c.rows;
    float* O = c.act(s.out);
    const float* in = s.prim == Prim::none ? c.act(s.in) : nullptr;
    const float* zs = s.prim == Prim::maxout ? c.buf(c.p->zs) : nullptr;
    float* ysave = c.train && s.ysave != npos ? c.buf(s.ysave) : nullptr;
    float* zsave = c.train && s.zsave != npos ? c.buf(s.zsave) : nullptr;
    auto* which = c.train && s.which != npos ? reinterpret_cast<std::int32_t*>(c.buf(s.which)) : nullptr;
    const std::size_t nops = s.ops.size();
    float* saves[max_ops];
    float* rstds[max_ops];
    const float* skips[max_ops];
    for (std::size_t k = 0; k < nops; ++k) {
        const Op& op = s.ops[k];
        saves[k] = c.train && op.save != npos ? c.buf(op.save) : nullptr;
        rstds[k] = c.train && op.rstd != npos ? c.buf(op.rstd) : nullptr;
        skips[k] = op.kind == OpKind::add ? c.act(op.skip) : nullptr;
    }
    std::uint64_t keys[max_ops] = {};
    for (std::size_t k = 0; k < nops; ++k)
        if (s.ops[k].kind == OpKind::dropout && c.train && sp.op[k].on && !sp.op[k].all)
            keys[k] = dropout_key(global_rng());
    auto pass = [&](std::size_t r0, std::size_t r1) {
        for (std::size_t r = r0; r < r1; ++r) {
            float* o = O + r * n;
            switch (s.prim) {
                case Prim::dense:
                    s.act_fwd(s.layer, o, sp.b, n, zsave ? zsave + r * n : nullptr, sp.t, sp.normalize);
                    break;
                case Prim::maxout: {
                    // max over the pieces of Z + b; ties go to the first piece (as Maxout)
                    const std::size_t nP = s.nP;
                    const float* z = zs + r * n * nP;
                    for (std::size_t q = 0; q < n; ++q) {
                        const float* zq = z + q * nP;
                        const float* bq = sp.b + q * nP;
                        std::size_t arg = 0;
                        float best = zq[0] + bq[0];
                        for (std::size_t p = 1; p < nP; ++p) {
                            const float v = zq[p] + bq[p];
                            if (v > best) {
                                best = v;
                                arg = p;
                            }
                        }
                        o[q] = best;
                        if (which) which[r * n + q] = static_cast<std::int32_t>(arg);
                    }
                    break;
                }
                case Prim::none:
                    if (o != in + r * n) std::memcpy(o, in + r * n, n * sizeof(float));
                    break;
                case Prim::layer:
                    break;
            }
            if (ysave) std::memcpy(ysave + r * n, o, n * sizeof(float));
            for (std::size_t k = 0; k < nops; ++k) {
                const Op& op = s.ops[k];
                const OpParams& pp = sp.op[k];
                switch (op.kind) {
                    case OpKind::layernorm:
                        detail::layernorm_row(o, o, n, pp.G, pp.b, saves[k] ? saves[k] + r * n : nullptr,
                                      rstds[k] ? rstds[k] + r : nullptr);
                        break;
                    case OpKind::dropout:
                        if (!c.train) break;
                        if (float* m = saves[k] + r * n; !pp.on) {
                            for (std::size_t i = 0; i < n; ++i) m[i] = 1.0f;  // backward then passes dY through
                        } else if (pp.all) {
                            for (std::size_t i = 0; i < n; ++i) o[i] *= (m[i] = 0.0f);
                        } else {
                            dropout_mask(keys[k], r * n, m, n, pp.threshold, pp.keep);  // as Dropout's
                            for (std::size_t i = 0; i < n; ++i) o[i] *= m[i];
                        }
                        break;
                    case OpKind::sigmoid:
                        for (std::size_t i = 0; i < n; ++i) o[i] = detail::sigmoid(o[i]);
                        if (saves[k]) std::memcpy(saves[k] + r * n, o, n * sizeof(float));
                        break;
                    case OpKind::add: {
                        const float* x = skips[k] + r * n;
                        for (std::size_t i = 0; i < n; ++i) o[i] += x[i];
                        break;
                    }
                }
            }
        }
    };
    // Split only where it pays (waking a worker costs about a microsecond).
    if (rows >= 2 && rows * n >= row_pass_split_work) cpu::parallel_ranges(rows, pass);
    else pass(0, rows);
}

// The backward row pass of stage s: dY (the output's gradient) through the fused
// operations in reverse and the activation, into dZ (dense, layer), maxout's dZ over the
// pieces, or straight into the input's gradient (none). Adds to b's and LN's gradients in
// row order, as the layers do.
inline void row_pass_backward(const Stage& s, const StageParams& sp, const Ctx& c) {
    const std::size_t n = s.nO, rows = c.rows;
    const float* dY = c.grad(s.out);
    const float* O = c.act(s.out);
    const float* ysave = s.ysave != npos ? c.buf(s.ysave) : nullptr;
    const float* zsave = s.zsave != npos ? c.buf(s.zsave) : nullptr;
    const auto* which = s.which != npos ? reinterpret_cast<const std::int32_t*>(c.buf(s.which)) : nullptr;
    float* dz = s.prim == Prim::none ? nullptr : dz_of(s, c);
    float* tmp = c.p->tmp != npos ? c.buf(c.p->tmp) : nullptr;
    float* gin = s.prim == Prim::none ? c.grad(s.in) : nullptr;
    const std::size_t nops = s.ops.size();
    const float* saves[max_ops];
    const float* rstds[max_ops];
    float* skipg[max_ops];
    for (std::size_t k = 0; k < nops; ++k) {
        const Op& op = s.ops[k];
        saves[k] = op.save != npos ? c.buf(op.save) : (op.kind == OpKind::sigmoid ? O : nullptr);
        rstds[k] = op.rstd != npos ? c.buf(op.rstd) : nullptr;
        skipg[k] = op.kind == OpKind::add ? c.grad(op.skip) : nullptr;
    }
    for (std::size_t r = 0; r < rows; ++r) {
        float* w = (s.prim == Prim::dense || s.prim == Prim::layer) ? dz + r * n : tmp;
        if (w != dY + r * n) std::memcpy(w, dY + r * n, n * sizeof(float));
        for (std::size_t k = nops; k-- > 0;) {
            const Op& op = s.ops[k];
            const OpParams& pp = sp.op[k];
            switch (op.kind) {
                case OpKind::layernorm:
                    detail::layernorm_row_backward(w, w, saves[k] + r * n, rstds[k][r], n, pp.G, pp.dG, pp.db);
                    break;
                case OpKind::dropout: {
                    const float* m = saves[k] + r * n;
                    for (std::size_t i = 0; i < n; ++i) w[i] *= m[i];
                    break;
                }
                case OpKind::sigmoid:
                    detail::sigmoid_backward(w, saves[k] + r * n, n);
                    break;
                case OpKind::add: {
                    // Y = X + f(X): the skip's gradient is this one (f's part is added later)
                    if (!skipg[k]) break;  // the skip is the plan's input, whose gradient is not wanted
                    float* g = skipg[k] + r * n;
                    if (op.grad_assign) std::memcpy(g, w, n * sizeof(float));
                    else
                        for (std::size_t i = 0; i < n; ++i) g[i] += w[i];
                    break;
                }
            }
        }
        switch (s.prim) {
            case Prim::dense: {
                const float* y = s.act_needs_y ? (ysave ? ysave : O) + r * n : nullptr;
                const float* z = zsave ? zsave + r * n : nullptr;
                s.act_bwd(s.layer, w, y, z, n, sp.k);
                for (std::size_t i = 0; i < n; ++i) sp.db[i] += w[i];
                break;
            }
            case Prim::maxout: {
                const std::size_t nP = s.nP, m = n * nP;
                float* d = dz + r * m;
                for (std::size_t i = 0; i < m; ++i) d[i] = 0.0f;
                for (std::size_t q = 0; q < n; ++q) d[q * nP + static_cast<std::size_t>(which[r * n + q])] = w[q];
                for (std::size_t i = 0; i < m; ++i) sp.db[i] += d[i];
                break;
            }
            case Prim::none: {
                if (!gin) break;  // as for a skip
                float* g = gin + r * n;
                if (s.dx_assign) std::memcpy(g, w, n * sizeof(float));
                else
                    for (std::size_t i = 0; i < n; ++i) g[i] += w[i];
                break;
            }
            case Prim::layer:
                break;
        }
    }
}

// Forward of a product stage: the matrix product into O (maxout: into its Z scratch).
inline void product_forward(const Stage& s, const StageParams& sp, const Ctx& c) {
    const float* X = c.act(s.in);
    if (s.prim == Prim::dense)
        cpu::sgemm(false, true, c.rows, s.nO, s.nI, 1.0f, X, s.nI, sp.W, s.nI, 0.0f, c.act(s.out), s.nO);
    else
        cpu::sgemm(false, true, c.rows, s.nO * s.nP, s.nI, 1.0f, X, s.nI, sp.W, s.nI, 0.0f, c.buf(c.p->zs),
                   s.nO * s.nP);
}
// Backward of a product stage, after its row pass left dZ in the scratch: dW += dZ^T X (=
// where dW is a lazy zero) and
// dX = dZ W (+= where the input's gradient already holds a residual's skip part).
inline void product_backward(const Stage& s, const StageParams& sp, const Ctx& c) {
    const std::size_t m = s.nO * s.nP;
    const float* dZ = dz_of(s, c);
    cpu::sgemm(true, false, m, s.nI, c.rows, 1.0f, dZ, m, c.act(s.in), s.nI, sp.dW_beta, sp.dW, s.nI);
    if (float* dX = c.grad(s.in))
        cpu::sgemm(false, false, c.rows, s.nI, m, 1.0f, dZ, m, sp.W, s.nI, s.dx_assign ? 0.0f : 1.0f, dX, s.nI);
}

inline std::string fmt_rate(double r) {
    std::string s = std::to_string(r);
    while (s.size() > 1 && s.back() == '0') s.pop_back();
    if (!s.empty() && s.back() == '.') s.pop_back();
    return s;
}

// "stage 0: gemm 784->512 | bias, relu, dropout(0.2)", one line per stage.
inline std::string describe_stages(const PlanData& p) {
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
        out += line + "   [x" + std::to_string(s.in) + " -> x" + std::to_string(s.out) + "]\n";
    }
    return out;
}

// The workspace for a batch size, training and prediction: each region's offset and size.
inline std::string describe_layout(const PlanData& p, std::size_t rows) {
    std::string out;
    const std::size_t r16 = PlanData::r16(rows);
    for (int t = 1; t >= 0; --t) {
        const std::size_t total = p.ws_floats(rows, t == 1) * sizeof(float);
        out += std::string(t ? "training" : "predict") + " workspace for batch " + std::to_string(rows) + ": " +
               std::to_string(total) + " bytes\n";
        for (const Buffer& b : p.bufs) {
            if (t == 0 && !b.in_predict) continue;
            const std::size_t off = (r16 * b.pre_row[t] + b.pre_fixed[t]) * sizeof(float);
            const std::size_t bytes = (b.per_row ? rows * b.per_row : b.fixed) * sizeof(float);
            auto pad = [](std::string v, std::size_t w) { return std::string(v.size() < w ? w - v.size() : 0, ' ') + v; };
            out += "  @" + pad(std::to_string(off), 10) + "  " + pad(std::to_string(bytes), 9) + " B  " + b.what + (b.per_row ? " (" + std::to_string(rows) + "x" + std::to_string(b.per_row) + ")" : "") +
                   "\n";
        }
    }
    return out;
}

}  // namespace tenon::lowering
