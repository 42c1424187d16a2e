// LSTM's work (include/tenon/layers/lstm.hpp), compiled once for every width.
//
// The input's live rows are taken out of the Padded step by step ("packed": the rows of step
// 0, then those of step 1, ...; sequences sorted by decreasing length, so step t's rows are
// the first size_at_t[t] sequences and a row's previous step is the row of the same sequence
// in the step before, at the same position). Per layer and direction:
//   G      = X Wx^T + (bx + bh)                      one product over all rows
//   per step t (in the direction's order), its rows R_t and their previous hiddens/cells
//   (the previous step's rows, or HC0 where the sequence starts):
//   G[R_t] += Hprev[R_t] Wh^T;  (G, C, H)[R_t] = cell(G[R_t], Cprev[R_t])
// The backward runs the steps the other way (a step's dH and dC are complete once every
// later step has added to them), then the weight and input gradients are one product each
// over all rows: dWx += dG^T X, dWh += dG^T Hprev, dX += dG Wx.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "tenon/layers/lstm.hpp"
#include "tenon/random.hpp"

namespace tenon::detail {

namespace {


// Where one layer's and direction's weights start in the flat parameter.
struct Block {
    std::size_t Wx, bx, Wh, bh, nI;
};
Block block_of(const LstmDims& d, std::size_t layer, std::size_t dir) {
    std::size_t at = 0, nI = d.nI;
    for (std::size_t i = 0; i < d.depth; ++i) {
        for (std::size_t j = 0; j < d.dirs; ++j) {
            const std::size_t H4 = 4 * d.nH;
            if (i == layer && j == dir) return {at, at + H4 * nI, at + H4 * nI + H4, at + H4 * nI + H4 + H4 * d.nH, nI};
            at += H4 * nI + H4 + H4 * d.nH + H4;
        }
        nI = d.dirs * d.nH;
    }
    return {};
}


// The packed rows' layout: step t's rows start at off[t] (off[T] = N).
struct Steps {
    std::vector<std::size_t> size, off;
    std::size_t T = 0, B = 0, N = 0;
};
Steps steps_of(const Padded& X) {
    Steps s;
    s.T = X.steps();
    s.B = X.size();
    s.size.resize(s.T);
    s.off.resize(s.T + 1);
    for (std::size_t t = 0; t < s.T; ++t) {
        s.off[t] = s.N;
        s.size[t] = static_cast<std::size_t>(X.size_at_t()[t]);
        s.N += s.size[t];
    }
    s.off[s.T] = s.N;
    return s;
}

// Padded (T, B, n) <-> packed rows (N, n).
void pack(const Ops& ops, const float* padded, const Steps& s, std::size_t n, float* rows) {
    for (std::size_t t = 0; t < s.T; ++t) ops.copy_rows(padded + t * s.B * n, n, rows + s.off[t] * n, n, s.size[t], n, false);
}
Floats3d unpack(const Ops& ops, const float* rows, const Steps& s, std::size_t n) {
    Floats3d out({s.T, s.B, n});  // zeros: the padding
    for (std::size_t t = 0; t < s.T; ++t) ops.copy_rows(rows + s.off[t] * n, n, out.data() + t * s.B * n, n, s.size[t], n, false);
    return out;
}

}  // namespace

// What the backward pass reads: every layer's input (the last entry is the output), and per
// layer and direction the activated gates, the cells and the previous hiddens and cells of
// each row; the weights the forward used (masked by dropout) and the mask.
struct LstmTape {
    LstmDims d{};
    Steps steps;
    Ints1d size_at_t, lengths, indices;
    std::vector<Floats2d> inputs;                 // depth + 1 of them
    std::vector<Floats2d> G, C, Hprev, Cprev;     // depth * dirs of each
    Floats1d weights, mask;                       // weights: only with dropout (else the model's)
};

std::size_t lstm_param_size(const LstmDims& d) {
    std::size_t n = 0, nI = d.nI;
    for (std::size_t i = 0; i < d.depth; ++i) {
        n += d.dirs * (4 * d.nH * nI + 4 * d.nH + 4 * d.nH * d.nH + 4 * d.nH);
        nI = d.dirs * d.nH;
    }
    return n;
}

void lstm_check_options(const LSTMOptions& o, std::size_t nO) {
    if (o.depth == 0) throw Error("lstm: depth must be at least 1, found 0", "tenon-E285");
    if (!(o.dropout >= 0.0 && o.dropout <= 1.0))
        throw Error("lstm: the dropout rate must be in [0, 1], found " + std::to_string(o.dropout), "tenon-E112");
    if (nO != dyn) lstm_check_width("lstm", nO, o.bi ? 2 : 1);
}

void lstm_check_width(const std::string& name, std::size_t nO, std::size_t dirs) {
    if (nO % dirs != 0)
        throw Error(name + ": nO = " + std::to_string(nO) + " is not a multiple of the " + std::to_string(dirs) +
                        " directions (bi: each direction gives nO / 2 hiddens)",
                    "tenon-E285");
}

void lstm_fill(const LstmDims& d, float* p, const Init& init_W, const Init& init_b) {
    // Thinc's order of initialisation: each gate block of Wx (nH, nI_layer), of bx, of Wh, of bh.
    auto fill = [&](float* at, std::size_t rows, std::size_t cols, bool bias) {
        ParamView v;
        v.data = at;
        v.rank = bias ? 1 : 2;
        v.shape = {rows, cols, 0, 0};
        if (bias) (init_b ? init_b : Init(zero_init))(v);
        else (init_W ? init_W : Init(glorot_uniform_init))(v);
    };
    for (std::size_t i = 0; i < d.depth; ++i)
        for (std::size_t j = 0; j < d.dirs; ++j) {
            const Block b = block_of(d, i, j);
            for (std::size_t g = 0; g < 4; ++g) fill(p + b.Wx + g * d.nH * b.nI, d.nH, b.nI, false);
            for (std::size_t g = 0; g < 4; ++g) fill(p + b.bx + g * d.nH, d.nH, 0, true);
            for (std::size_t g = 0; g < 4; ++g) fill(p + b.Wh + g * d.nH * d.nH, d.nH, d.nH, false);
            for (std::size_t g = 0; g < 4; ++g) fill(p + b.bh + g * d.nH, d.nH, 0, true);
        }
}

namespace {

void check_param_size(const LstmRun& r) {
    const LstmDims& d = r.d;
    const std::size_t want = lstm_param_size(d), have = r.P;
    if (want != have)
        throw ShapeError(*r.name + ": the LSTM parameter has " + std::to_string(have) + " values, but nO = " +
                             std::to_string(d.nH * d.dirs) + ", nI = " + std::to_string(d.nI) + ", depth = " +
                             std::to_string(d.depth) + ", dirs = " + std::to_string(d.dirs) + " need " +
                             std::to_string(want),
                         "tenon-E286");
}

}  // namespace

Padded lstm_forward(const LstmRun& r, const Padded& X, bool is_train, std::shared_ptr<LstmTape>* tape_out) {
    const LstmDims d = r.d;
    check_param_size(r);
    // (an empty batch may have lost its width: Padded of no sequences is (T, 0, 0))
    if (X.data().shape(2) != d.nI && X.data().size() != 0) throw_width(*r.name, "input", d.nI, X.data().shape(2));
    const Ops& ops = *r.ops;
    auto tape = std::make_shared<LstmTape>();
    tape->d = d;
    tape->steps = steps_of(X);
    tape->size_at_t = X.size_at_t();
    tape->lengths = X.lengths();
    tape->indices = X.indices();
    const Steps& s = tape->steps;
    const std::size_t N = s.N, nH = d.nH, H4 = 4 * nH, width = d.dirs * nH;

    // The weights: the model's, or masked by dropout (Thinc's, over the whole flat parameter).
    const float* W = r.W;
    const double rate = r.rate;
    if (is_train && rate > 0.0) {
        const std::size_t P = r.P;
        tape->mask = Floats1d({P});  // zeros: the rate 1 case
        if (rate < 1.0)
            dropout_mask(dropout_key(global_rng()), 0, tape->mask.data(), P, rate, static_cast<float>(1.0 / (1.0 - rate)));
        tape->weights = Floats1d({P}, uninitialized);
        for (std::size_t k = 0; k < P; ++k) tape->weights[k] = W[k] * tape->mask[k];
        W = tape->weights.data();
    }
    const float* HC0 = r.HC0;

    tape->inputs.reserve(d.depth + 1);
    tape->inputs.emplace_back(std::array<std::size_t, 2>{N, d.nI}, uninitialized);
    pack(ops, X.data().data(), s, d.nI, tape->inputs[0].data());
    std::vector<float> bias(H4);
    for (std::size_t i = 0; i < d.depth; ++i) {
        const Floats2d& in = tape->inputs[i];
        Floats2d out({N, width}, uninitialized);
        for (std::size_t dir = 0; dir < d.dirs; ++dir) {
            const Block b = block_of(d, i, dir);
            Floats2d G({N, H4}, uninitialized), C({N, nH}, uninitialized), Hp({N, nH}, uninitialized),
                Cp({N, nH}, uninitialized);
            const float* h0 = HC0 + ((0 * d.depth + i) * d.dirs + dir) * nH;
            const float* c0 = HC0 + ((1 * d.depth + i) * d.dirs + dir) * nH;
            if (N) {
                ops.gemm(false, true, N, H4, b.nI, 1.0f, in.data(), b.nI, W + b.Wx, b.nI, 0.0f, G.data(), H4);
                for (std::size_t k = 0; k < H4; ++k) bias[k] = W[b.bx + k] + W[b.bh + k];
                ops.bias_activate(Activation::identity, G.data(), bias.data(), N, H4, nullptr);
            }
            float* H = out.data() + dir * nH;  // this direction's columns of the output
            for (std::size_t k = 0; k < s.T; ++k) {
                const std::size_t t = dir == 0 ? k : s.T - 1 - k, rows = s.size[t], r0 = s.off[t];
                if (rows == 0) continue;
                // The previous step's rows of the same sequences, then HC0 for those that start here.
                const bool has_prev = dir == 0 ? t > 0 : t + 1 < s.T;
                const std::size_t p = dir == 0 ? t - 1 : t + 1;
                const std::size_t linked = has_prev ? std::min(rows, s.size[p]) : 0;
                if (linked) {
                    ops.copy_rows(H + s.off[p] * width, width, Hp.data() + r0 * nH, nH, linked, nH, false);
                    ops.copy_rows(C.data() + s.off[p] * nH, nH, Cp.data() + r0 * nH, nH, linked, nH, false);
                }
                ops.copy_rows(h0, 0, Hp.data() + (r0 + linked) * nH, nH, rows - linked, nH, false);
                ops.copy_rows(c0, 0, Cp.data() + (r0 + linked) * nH, nH, rows - linked, nH, false);
                ops.gemm(false, true, rows, H4, nH, 1.0f, Hp.data() + r0 * nH, nH, W + b.Wh, nH, 1.0f,
                         G.data() + r0 * H4, H4);
                ops.lstm_cell_forward(G.data() + r0 * H4, Cp.data() + r0 * nH, C.data() + r0 * nH, H + r0 * width,
                                      width, rows, nH);
            }
            if (tape_out) {
                tape->G.push_back(std::move(G));
                tape->C.push_back(std::move(C));
                tape->Hprev.push_back(std::move(Hp));
                tape->Cprev.push_back(std::move(Cp));
            }
        }
        tape->inputs.push_back(std::move(out));
        if (!tape_out && i > 0) tape->inputs[i] = Floats2d();  // predict: only the last two are needed
    }
    Padded Y(unpack(ops, tape->inputs.back().data(), s, width), X.size_at_t(), X.lengths(), X.indices());
    if (tape_out) *tape_out = std::move(tape);
    return Y;
}

Padded lstm_backward(const LstmRun& r, float* g, float* dHC0, const LstmTape& tape, const Padded& dYp) {
    const LstmDims& d = tape.d;
    const Steps& s = tape.steps;
    const std::size_t N = s.N, nH = d.nH, H4 = 4 * nH, width = d.dirs * nH;
    const auto& shape = dYp.data().shape();
    if (shape[0] != s.T || shape[1] != s.B || shape[2] != width)
        throw ShapeError(*r.name + ": the gradient of the output must be a Padded of (" + std::to_string(s.T) +
                             ", " + std::to_string(s.B) + ", " + std::to_string(width) + "), as the output, but found (" +
                             std::to_string(shape[0]) + ", " + std::to_string(shape[1]) + ", " +
                             std::to_string(shape[2]) + ")",
                         "tenon-E111");
    if (lstm_param_size(d) != r.P)
        throw ShapeError(*r.name + ": the model's LSTM parameter changed size between the forward pass and its backprop",
                         "tenon-E286");
    const Ops& ops = *r.ops;
    const float* W = tape.weights.size() ? tape.weights.data() : r.W;
    const std::size_t P = r.P;
    // The weights' gradient is made here, then masked (with dropout) and added to the model's.
    Floats1d dW({P});
    std::vector<float> dh0(nH), dc0(nH);

    Floats2d dH({N, width}, uninitialized);
    pack(ops, dYp.data().data(), s, width, dH.data());
    std::size_t widest = 0;
    for (std::size_t t = 0; t < s.T; ++t) widest = std::max(widest, s.size[t]);
    Floats2d dHp({widest, nH}, uninitialized), dCp({widest, nH}, uninitialized);
    for (std::size_t i = d.depth; i-- > 0;) {
        const Floats2d& in = tape.inputs[i];
        const std::size_t nI = in.shape(1);
        Floats2d dX({N, nI});  // zeros: both directions add to it
        for (std::size_t dir = 0; dir < d.dirs; ++dir) {
            const Block b = block_of(d, i, dir);
            const std::size_t at = i * d.dirs + dir;
            const Floats2d &G = tape.G[at], &C = tape.C[at], &Hp = tape.Hprev[at], &Cp = tape.Cprev[at];
            Floats2d dG({N, H4}, uninitialized), dC({N, nH});  // dC: zeros, the later steps add to it
            float* dHd = dH.data() + dir * nH;
            std::fill(dh0.begin(), dh0.end(), 0.0f);
            std::fill(dc0.begin(), dc0.end(), 0.0f);
            for (std::size_t k = 0; k < s.T; ++k) {
                const std::size_t t = dir == 0 ? s.T - 1 - k : k, rows = s.size[t], r0 = s.off[t];
                if (rows == 0) continue;
                const bool has_prev = dir == 0 ? t > 0 : t + 1 < s.T;
                const std::size_t p = dir == 0 ? t - 1 : t + 1;
                const std::size_t linked = has_prev ? std::min(rows, s.size[p]) : 0;
                ops.lstm_cell_backward(dHd + r0 * width, width, dC.data() + r0 * nH, G.data() + r0 * H4,
                                       C.data() + r0 * nH, Cp.data() + r0 * nH, dG.data() + r0 * H4, dCp.data(), rows,
                                       nH);
                ops.gemm(false, false, rows, nH, H4, 1.0f, dG.data() + r0 * H4, H4, W + b.Wh, nH, 0.0f, dHp.data(), nH);
                if (linked) {
                    ops.copy_rows(dHp.data(), nH, dHd + s.off[p] * width, width, linked, nH, true);
                    ops.copy_rows(dCp.data(), nH, dC.data() + s.off[p] * nH, nH, linked, nH, true);
                }
                ops.sum_rows_into(dHp.data() + linked * nH, rows - linked, nH, dh0.data());
                ops.sum_rows_into(dCp.data() + linked * nH, rows - linked, nH, dc0.data());
            }
            if (N) {
                ops.gemm(true, false, H4, b.nI, N, 1.0f, dG.data(), H4, in.data(), nI, 1.0f, dW.data() + b.Wx, b.nI);
                ops.gemm(true, false, H4, nH, N, 1.0f, dG.data(), H4, Hp.data(), nH, 1.0f, dW.data() + b.Wh, nH);
                ops.sum_rows_into(dG.data(), N, H4, dW.data() + b.bx);
                ops.sum_rows_into(dG.data(), N, H4, dW.data() + b.bh);
                ops.gemm(false, false, N, nI, H4, 1.0f, dG.data(), H4, W + b.Wx, b.nI, 1.0f, dX.data(), nI);
            }
            float* gh0 = dHC0 + ((0 * d.depth + i) * d.dirs + dir) * nH;
            float* gc0 = dHC0 + ((1 * d.depth + i) * d.dirs + dir) * nH;
            for (std::size_t k = 0; k < nH; ++k) {
                gh0[k] += dh0[k];
                gc0[k] += dc0[k];
            }
        }
        dH = std::move(dX);
    }
    if (tape.mask.size())
        for (std::size_t k = 0; k < P; ++k) g[k] += dW[k] * tape.mask[k];
    else
        for (std::size_t k = 0; k < P; ++k) g[k] += dW[k];
    return Padded(unpack(ops, dH.data(), s, d.nI), tape.size_at_t, tape.lengths, tape.indices);
}

}  // namespace tenon::detail
