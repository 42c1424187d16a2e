// The run-time half of lowering, compiled once into libtenon: the row passes, the products'
// calls, parameter lookup, the workspace layout and describe (include/tenon/lower/plan.hpp
// declares them; nothing here depends on a model's type). A translation unit that runs a
// model's plan instantiates only the typed walk and the call sequence (lower.hpp).
#include "tenon/lower/plan.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

namespace tenon::lowering {

StageParams resolve(const Stage& s, bool train, bool grads) {
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

void row_pass_forward(const Stage& s, const StageParams& sp, const Ctx& c) {
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

void row_pass_backward(const Stage& s, const StageParams& sp, const Ctx& c) {
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

void product_forward(const Stage& s, const StageParams& sp, const Ctx& c) {
    const float* X = c.act(s.in);
    if (s.prim == Prim::dense)
        cpu::sgemm(false, true, c.rows, s.nO, s.nI, 1.0f, X, s.nI, sp.W, s.nI, 0.0f, c.act(s.out), s.nO);
    else
        cpu::sgemm(false, true, c.rows, s.nO * s.nP, s.nI, 1.0f, X, s.nI, sp.W, s.nI, 0.0f, c.buf(c.p->zs),
                   s.nO * s.nP);
}

void product_backward(const Stage& s, const StageParams& sp, const Ctx& c) {
    const std::size_t m = s.nO * s.nP;
    const float* dZ = dz_of(s, c);
    cpu::sgemm(true, false, m, s.nI, c.rows, 1.0f, dZ, m, c.act(s.in), s.nI, sp.dW_beta, sp.dW, s.nI);
    if (float* dX = c.grad(s.in))
        cpu::sgemm(false, false, c.rows, s.nI, m, 1.0f, dZ, m, sp.W, s.nI, s.dx_assign ? 0.0f : 1.0f, dX, s.nI);
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

std::string describe_layout(const PlanData& p, std::size_t rows) {
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

void finalize(PlanData& p) {
    const std::size_t last = p.bounds.size() - 1;
    auto need_out = [&](const Stage& s) { p.bounds[s.out].read_back = true; };
    std::size_t dz = 0, zs = 0, tmp = 0;
    for (std::size_t si = 0; si < p.stages.size(); ++si) {
        Stage& s = p.stages[si];
        const std::string tag = "stage " + std::to_string(si) + " ";
        const std::size_t n = s.nO;
        if (s.prim == Prim::dense) {
            // Relu's backward needs only the sign of its output: behind dropouts alone, the
            // stage output has it where the mask kept a value (elsewhere the gradient is 0).
            bool only_dropout = true;
            for (const Op& o : s.ops) only_dropout = only_dropout && o.kind == OpKind::dropout;
            if (s.act_needs_y) {
                if (s.ops.empty() || (s.name == "relu" && only_dropout)) need_out(s);
                else s.ysave = p.add_buffer(tag + s.name + " output", n, 0, false);
            }
            if (s.act_needs_z) s.zsave = p.add_buffer(tag + s.name + " pre-activation", n, 0, false);
            if (s.out == p.bounds.size() - 1) dz = std::max(dz, n);  // else in place (dz_of)
        } else if (s.prim == Prim::maxout) {
            s.which = p.add_buffer(tag + "maxout winning piece (int32)", n, 0, false);
            dz = std::max(dz, n * s.nP);
            zs = std::max(zs, n * s.nP);
            tmp = std::max(tmp, n);
        } else if (s.prim == Prim::none) {
            tmp = std::max(tmp, n);
        } else if (!s.ops.empty() && s.out == p.bounds.size() - 1) {
            dz = std::max(dz, n);
        }
        for (std::size_t k = 0; k < s.ops.size(); ++k) {
            Op& op = s.ops[k];
            if (op.kind == OpKind::layernorm) {
                op.save = p.add_buffer(tag + "layernorm normalised input", n, 0, false);
                op.rstd = p.add_buffer(tag + "layernorm 1/std", 1, 0, false);
            } else if (op.kind == OpKind::dropout) {
                op.save = p.add_buffer(tag + "dropout mask", n, 0, false);
            } else if (op.kind == OpKind::sigmoid) {
                if (k + 1 == s.ops.size()) need_out(s);
                else op.save = p.add_buffer(tag + "sigmoid output", n, 0, false);
            }
        }
    }
    const bool head = !p.stages.empty() && p.stages[0].head;
    for (std::size_t b = 1; b <= last; ++b) {
        if (head && b == 1) continue;  // the head layer's own output array
        if (b == last) {
            p.final_in_ws = p.bounds[b].read_back;  // else the stage writes the caller's array
            // (appends, not "x" + to_string(b) + ...: GCC 12 warns -Wrestrict on that chain at -O3)
            std::string what = "x";
            what += std::to_string(b);
            what += " (output, kept)";
            if (p.final_in_ws) p.bounds[b].act = p.add_buffer(std::move(what), p.bounds[b].width, 0, false);
        } else {
            std::string what = "x";
            what += std::to_string(b);
            what += " (output of stage ";
            what += std::to_string(b - 1);
            what += ")";
            p.bounds[b].act = p.add_buffer(std::move(what), p.bounds[b].width, 0, true);
        }
    }
    for (std::size_t b = 1; b < last; ++b)
        p.bounds[b].grad = p.add_buffer("dx" + std::to_string(b) + " (gradient)", p.bounds[b].width, 0, false);
    if (zs) p.zs = p.add_buffer("scratch: maxout pieces", zs, 0, true);
    if (dz) p.dz = p.add_buffer("scratch: gradient of a product's output", dz, 0, false);
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
        s.dx_assign = !written[s.in];
        written[s.in] = true;
    }
    p.layout();
}

bool same_layout(const PlanData& a, const PlanData& b, std::string& why) {
    if (a.stages.size() != b.stages.size() || a.bounds.size() != b.bounds.size()) {
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
                    s.nO == t.nO && s.nP == t.nP && s.ops.size() == t.ops.size();
        for (std::size_t k = 0; same && k < s.ops.size(); ++k)
            same = s.ops[k].kind == t.ops[k].kind && s.ops[k].node == t.ops[k].node && s.ops[k].skip == t.ops[k].skip;
        if (!same) {
            why = "stage " + std::to_string(i) + " (" + s.name + " " + std::to_string(s.nI) + "->" +
                  std::to_string(s.nO) + ") is now " + t.name + " " + std::to_string(t.nI) + "->" + std::to_string(t.nO);
            return false;
        }
    }
    return true;
}

}  // namespace tenon::lowering
