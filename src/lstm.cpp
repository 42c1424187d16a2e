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
#include "tenon/types/device_memory.hpp"
#include "tenon/types/sequences.hpp"

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


// The packed rows' layout: step t's rows start at off[t] (off[T] = N). The arrays are the
// caller's (a tape's vectors, or a plan's workspace).
struct StepsV {
    const std::size_t* size;
    const std::size_t* off;
    std::size_t T, N;
};
struct Steps {
    std::vector<std::size_t> size, off;
    std::size_t T = 0, B = 0, N = 0;
    StepsV view() const { return {size.data(), off.data(), T, N}; }
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

// Every array a forward pass writes, over N packed rows: the first layer's input, each
// layer's output (depth of them, N x width), the tape of each layer and direction (G N x 4nH,
// then C, Hprev, Cprev N x nH each; one, reused, when `keep` is false: predict), the masked
// weights and the mask (P each, training with dropout) and the gates' bias (4 nH).
struct FwdBufs {
    float* in0;
    float* outs;
    float* tape;
    bool keep;
    float* weights;
    float* mask;
    float* bias;
};
std::size_t tape_floats(const LstmDims& d, std::size_t N) { return N * 7 * d.nH; }
// The backward pass's: dW (P), two arrays of N x max(nI, width) (each layer's dH and dX, in
// turn), dG (N x 4 nH), dC, dHprev, dCprev (N x nH), dh0 and dc0 (nH).
struct BwdBufs {
    float* dW;
    float* dA;
    float* dB;
    float* dG;
    float* dC;
    float* dHp;
    float* dCp;
    float* dh0;
    float* dc0;
};

// The forward pass over packed rows (the input in b.in0); returns the weights it used (the
// model's, or masked by dropout into b.weights, with `masked` set).
const float* run_forward(const LstmRun& r, const StepsV& s, const FwdBufs& b, bool is_train, bool& masked) {
    const LstmDims d = r.d;
    const Ops& ops = *r.ops;
    const std::size_t N = s.N, nH = d.nH, H4 = 4 * nH, width = d.dirs * nH;
    // The weights: the model's, or masked by dropout (Thinc's, over the whole flat parameter).
    const float* W = r.W;
    const double rate = r.rate;
    masked = false;
    if (is_train && !detail::inference_pass && rate > 0.0) {
        const std::size_t P = r.P;
        // (the key drawn on the host, none at rate 1: all zeros; the mask and the product on the backend)
        ops.dropout_mask(rate < 1.0 ? dropout_key(global_rng()) : 0, b.mask, P, rate);
        ops.elementwise(Binary::mul, W, b.mask, b.weights, P);
        W = b.weights;
        masked = true;
    }
    const float* HC0 = r.HC0;
    const float* in = b.in0;
    std::size_t nIl = d.nI;
    for (std::size_t i = 0; i < d.depth; ++i) {
        float* out = b.outs + i * N * width;
        for (std::size_t dir = 0; dir < d.dirs; ++dir) {
            const Block bl = block_of(d, i, dir);
            float* G = b.tape + (b.keep ? (i * d.dirs + dir) * tape_floats(d, N) : 0);
            float* C = G + N * H4;
            float* Hp = C + N * nH;
            float* Cp = Hp + N * nH;
            const float* h0 = HC0 + ((0 * d.depth + i) * d.dirs + dir) * nH;
            const float* c0 = HC0 + ((1 * d.depth + i) * d.dirs + dir) * nH;
            if (N) {
                ops.gemm(false, true, N, H4, nIl, 1.0f, in, nIl, W + bl.Wx, nIl, 0.0f, G, H4);
                ops.elementwise(Binary::add, W + bl.bx, W + bl.bh, b.bias, H4);
                ops.bias_activate(Activation::identity, G, b.bias, N, H4, nullptr);
            }
            float* H = out + dir * nH;  // this direction's columns of the output
            for (std::size_t k = 0; k < s.T; ++k) {
                const std::size_t t = dir == 0 ? k : s.T - 1 - k, rows = s.size[t], r0 = s.off[t];
                if (rows == 0) continue;
                // The previous step's rows of the same sequences, then HC0 for those that start here.
                const bool has_prev = dir == 0 ? t > 0 : t + 1 < s.T;
                const std::size_t p = dir == 0 ? t - 1 : t + 1;
                const std::size_t linked = has_prev ? std::min(rows, s.size[p]) : 0;
                if (linked) {
                    ops.copy_rows(H + s.off[p] * width, width, Hp + r0 * nH, nH, linked, nH, false);
                    ops.copy_rows(C + s.off[p] * nH, nH, Cp + r0 * nH, nH, linked, nH, false);
                }
                ops.copy_rows(h0, 0, Hp + (r0 + linked) * nH, nH, rows - linked, nH, false);
                ops.copy_rows(c0, 0, Cp + (r0 + linked) * nH, nH, rows - linked, nH, false);
                ops.gemm(false, true, rows, H4, nH, 1.0f, Hp + r0 * nH, nH, W + bl.Wh, nH, 1.0f, G + r0 * H4, H4);
                ops.lstm_cell_forward(G + r0 * H4, Cp + r0 * nH, C + r0 * nH, H + r0 * width, width, rows, nH);
            }
        }
        in = out;
        nIl = width;
    }
    return W;
}

// The backward pass: dY (packed, N x width) in b.dA; adds to g (the flat parameter's
// gradient, through the mask when `masked`) and dHC0; returns the packed dX (N x nI), one
// of b.dA / b.dB.
float* run_backward(const LstmRun& r, const StepsV& s, const FwdBufs& f, const float* W, bool masked,
                    const BwdBufs& b, float* g, float* dHC0) {
    const LstmDims& d = r.d;
    const Ops& ops = *r.ops;
    const std::size_t N = s.N, nH = d.nH, H4 = 4 * nH, width = d.dirs * nH, P = r.P;
    // The weights' gradient is made here, then masked (with dropout) and added to the model's.
    ops.zero(b.dW, P);
    float* dH = b.dA;
    float* dX = b.dB;
    for (std::size_t i = d.depth; i-- > 0;) {
        const float* in = i == 0 ? f.in0 : f.outs + (i - 1) * N * width;
        const std::size_t nI = i == 0 ? d.nI : width;
        ops.zero(dX, N * nI);  // both directions add to it
        for (std::size_t dir = 0; dir < d.dirs; ++dir) {
            const Block bl = block_of(d, i, dir);
            const float* G = f.tape + (i * d.dirs + dir) * tape_floats(d, N);
            const float* C = G + N * H4;
            const float* Hp = C + N * nH;
            const float* Cp = Hp + N * nH;
            ops.zero(b.dC, N * nH);  // the later steps add to it
            float* dHd = dH + dir * nH;
            ops.zero(b.dh0, nH);
            ops.zero(b.dc0, nH);
            for (std::size_t k = 0; k < s.T; ++k) {
                const std::size_t t = dir == 0 ? s.T - 1 - k : k, rows = s.size[t], r0 = s.off[t];
                if (rows == 0) continue;
                const bool has_prev = dir == 0 ? t > 0 : t + 1 < s.T;
                const std::size_t p = dir == 0 ? t - 1 : t + 1;
                const std::size_t linked = has_prev ? std::min(rows, s.size[p]) : 0;
                ops.lstm_cell_backward(dHd + r0 * width, width, b.dC + r0 * nH, G + r0 * H4, C + r0 * nH, Cp + r0 * nH,
                                       b.dG + r0 * H4, b.dCp, rows, nH);
                ops.gemm(false, false, rows, nH, H4, 1.0f, b.dG + r0 * H4, H4, W + bl.Wh, nH, 0.0f, b.dHp, nH);
                if (linked) {
                    ops.copy_rows(b.dHp, nH, dHd + s.off[p] * width, width, linked, nH, true);
                    ops.copy_rows(b.dCp, nH, b.dC + s.off[p] * nH, nH, linked, nH, true);
                }
                ops.sum_rows_into(b.dHp + linked * nH, rows - linked, nH, b.dh0);
                ops.sum_rows_into(b.dCp + linked * nH, rows - linked, nH, b.dc0);
            }
            if (N) {
                ops.gemm(true, false, H4, bl.nI, N, 1.0f, b.dG, H4, in, nI, 1.0f, b.dW + bl.Wx, bl.nI);
                ops.gemm(true, false, H4, nH, N, 1.0f, b.dG, H4, Hp, nH, 1.0f, b.dW + bl.Wh, nH);
                ops.sum_rows_into(b.dG, N, H4, b.dW + bl.bx);
                ops.sum_rows_into(b.dG, N, H4, b.dW + bl.bh);
                ops.gemm(false, false, N, nI, H4, 1.0f, b.dG, H4, W + bl.Wx, bl.nI, 1.0f, dX, nI);
            }
            float* gh0 = dHC0 + ((0 * d.depth + i) * d.dirs + dir) * nH;
            float* gc0 = dHC0 + ((1 * d.depth + i) * d.dirs + dir) * nH;
            ops.elementwise(Binary::add_into, b.dh0, nullptr, gh0, nH);
            ops.elementwise(Binary::add_into, b.dc0, nullptr, gc0, nH);
        }
        std::swap(dH, dX);
    }
    if (masked) ops.elementwise(Binary::mul_add_into, b.dW, f.mask, g, P);
    else ops.elementwise(Binary::add_into, b.dW, nullptr, g, P);
    return dH;
}

}  // namespace

// What the backward pass reads: the forward pass's arrays (FwdBufs), owned.
struct LstmTape {
    LstmDims d{};
    Steps steps;
    Ints1d size_at_t, lengths, indices;
    Floats1d in0, outs, tape, weights, mask, bias;
    const float* W = nullptr;  // the weights the forward used (the model's, or `weights`)
    bool masked = false;
    FwdBufs bufs() const {
        auto* self = const_cast<LstmTape*>(this);
        return {self->in0.data(), self->outs.data(), self->tape.data(), true,
                self->weights.data(), self->mask.data(), self->bias.data()};
    }
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
        throw Error("lstm: the dropout rate must be in [0, 1], found " + detail::number_str(o.dropout), "tenon-E112");
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
    const std::size_t N = s.N, width = d.dirs * d.nH;
    const bool keep = tape_out != nullptr;
    const bool drop = is_train && r.rate > 0.0;
    tape->in0 = Floats1d({N * d.nI}, uninitialized);
    tape->outs = Floats1d({d.depth * N * width}, uninitialized);
    tape->tape = Floats1d({(keep ? d.depth * d.dirs : 1) * tape_floats(d, N)}, uninitialized);
    tape->bias = Floats1d({4 * d.nH}, uninitialized);
    if (drop) {
        tape->weights = Floats1d({r.P}, uninitialized);
        tape->mask = Floats1d({r.P}, uninitialized);
    }
    FwdBufs b = tape->bufs();
    b.keep = keep;
    pack(ops, X.data().data(), s, d.nI, b.in0);
    tape->W = run_forward(r, s.view(), b, is_train, tape->masked);
    Padded Y(unpack(ops, b.outs + (d.depth - 1) * N * width, s, width), X.size_at_t(), X.lengths(), X.indices());
    if (tape_out) *tape_out = std::move(tape);
    return Y;
}

Padded lstm_backward(const LstmRun& r, float* g, float* dHC0, const LstmTape& tape, const Padded& dYp) {
    const LstmDims& d = tape.d;
    const Steps& s = tape.steps;
    const std::size_t N = s.N, nH = d.nH, width = d.dirs * nH;
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
    const std::size_t wide = std::max(d.nI, width);
    Floats1d dW({r.P}, uninitialized), dA({N * wide}, uninitialized), dB({N * wide}, uninitialized),
        dG({N * 4 * nH}, uninitialized), dC({N * nH}, uninitialized), dHp({N * nH}, uninitialized),
        dCp({N * nH}, uninitialized), dh0({nH}, uninitialized), dc0({nH}, uninitialized);
    const BwdBufs b{dW.data(), dA.data(), dB.data(), dG.data(), dC.data(), dHp.data(), dCp.data(), dh0.data(), dc0.data()};
    pack(ops, dYp.data().data(), s, width, b.dA);
    const float* dX = run_backward(r, s.view(), tape.bufs(), tape.W, tape.masked, b, g, dHC0);
    return Padded(unpack(ops, dX, s, d.nI), tape.size_at_t, tape.lengths, tape.indices);
}

// ---- The plan's stage (lowered_as, lstm.hpp): the sequences' rows in the input's order
// (every sequence's back to back), the same work over packed rows as above, every array
// carved from the plan's workspace. The packed order is to_padded's (longer sequences
// first, ties the later one first), so the results equal the layers' under with_padded.
namespace {

LstmRun run_of(const Node& l) {
    const std::size_t nO = l.get_dim("nO"), dirs = l.get_dim("dirs");
    const CParamView W = l.get_param("LSTM");
    return {&l.ops(), &l.name(), {l.get_dim("nI"), nO / dirs, l.get_dim("depth"), dirs}, W.data, W.size(),
            l.get_param("HC0").data, l.attr_as<double>("dropout_rate")};
}

// Takes n floats (rounded up to 16: each array 64-byte aligned) from the scratch at p.
template <class T = float>
T* carve(float*& p, std::size_t n_floats) {
    T* at = reinterpret_cast<T*>(p);
    p += (n_floats + 15) / 16 * 16;
    return at;
}
constexpr std::size_t carve_slack = 16 * 24;  // the rounding of the arrays carved (at most 24)

// The predict scratch (the backend's memory): the rows' map (packed row -> input row) and inv
// (the other way), both uint32, the packed input, every layer's output, one tape (predict) and
// the bias. Training's tapes, masked weights and mask are in train_scratch. The host keeps the
// rest of the layout (HostRows, made from the call's lengths by the forward and again by the
// backward) and whether the forward masked the weights (the call's host word 0).
struct Layout {
    std::uint32_t *map, *inv;
    FwdBufs f;
};
// The steps' sizes and offsets, the non-empty sequences' order and starts, and map / inv as the
// host makes them (a thread's, reused: no allocation after warm-up).
struct HostRows {
    std::vector<std::size_t> size, off, order, start;
    std::vector<std::uint32_t> map, inv;
};
HostRows& host_rows() {
    thread_local HostRows h;
    return h;
}
Layout layout_of(const LstmRun& r, std::size_t rows, float* scratch, float* train_scratch) {
    const LstmDims& d = r.d;
    const std::size_t width = d.dirs * d.nH;
    Layout L{};
    float* p = scratch;
    L.map = carve<std::uint32_t>(p, rows);
    L.inv = carve<std::uint32_t>(p, rows);
    L.f.in0 = carve(p, rows * d.nI);
    L.f.outs = carve(p, d.depth * rows * width);
    L.f.bias = carve(p, 4 * d.nH);
    L.f.keep = train_scratch != nullptr;
    if (!train_scratch) {
        L.f.tape = carve(p, tape_floats(d, rows));
        return L;
    }
    float* q = train_scratch;
    L.f.tape = carve(q, d.depth * d.dirs * tape_floats(d, rows));
    L.f.weights = carve(q, r.P);
    L.f.mask = carve(q, r.P);
    return L;
}
BwdBufs bwd_of(const LstmRun& r, std::size_t rows, float* train_scratch) {
    const LstmDims& d = r.d;
    float* q = train_scratch;
    (void)carve(q, d.depth * d.dirs * tape_floats(d, rows));
    (void)carve(q, r.P);
    (void)carve(q, r.P);
    const std::size_t wide = std::max(d.nI, d.dirs * d.nH);
    BwdBufs b{};
    b.dW = carve(q, r.P);
    b.dA = carve(q, rows * wide);
    b.dB = carve(q, rows * wide);
    b.dG = carve(q, rows * 4 * d.nH);
    b.dC = carve(q, rows * d.nH);
    b.dHp = carve(q, rows * d.nH);
    b.dCp = carve(q, rows * d.nH);
    b.dh0 = carve(q, d.nH);
    b.dc0 = carve(q, d.nH);
    return b;
}

}  // namespace

void lstm_stage_scratch(const Node* layer, bool train, std::size_t& per_row, std::size_t& fixed) {
    const LstmRun r = run_of(*layer);
    const LstmDims& d = r.d;
    const std::size_t width = d.dirs * d.nH, wide = std::max(d.nI, width);
    if (!train) {
        per_row = 2 + d.nI + d.depth * width + 7 * d.nH;
        fixed = 4 * d.nH + carve_slack;
    } else {
        per_row = d.depth * d.dirs * 7 * d.nH + 2 * wide + 7 * d.nH;
        fixed = 3 * r.P + 2 * d.nH + carve_slack;
    }
}

namespace {
// The packed layout of the call's rows: the non-empty sequences in to_padded's order, the
// steps' sizes and offsets, and the map between packed rows and the input's rows.
StepsV layout_rows(HostRows& L, const lowering::SeqCall& c) {
    L.size.resize(c.rows);
    L.off.resize(c.rows + 1);
    L.order.resize(c.rows);
    L.start.resize(c.rows + 1);
    L.map.resize(c.rows);
    L.inv.resize(c.rows);
    std::size_t nb = 0, at = 0;
    for (std::size_t i = 0; i < c.nseg; ++i) {
        const auto n = static_cast<std::size_t>(c.lengths[i]);
        if (n) L.start[nb++] = at;  // the k-th non-empty sequence's first row
        at += n;
    }
    L.start[nb] = at;
    auto len = [&](std::size_t k) { return L.start[k + 1] - L.start[k]; };
    // to_padded's order (k grows with the sequence's index); L.size holds the lengths meanwhile
    for (std::size_t k = 0; k < nb; ++k) L.size[k] = len(k);
    detail::padded_order(L.size.data(), nb, L.order.data());
    const std::size_t T = nb ? len(L.order[0]) : 0;
    for (std::size_t j = 0; j < nb; ++j)
        for (std::size_t t = 0, n = len(L.order[j]); t < n; ++t) L.size[t] = j + 1;
    std::size_t N = 0;
    for (std::size_t t = 0; t < T; ++t) {
        L.off[t] = N;
        for (std::size_t j = 0; j < L.size[t]; ++j) {
            const std::size_t row = L.start[L.order[j]] + t;
            L.map[N + j] = static_cast<std::uint32_t>(row);
            L.inv[row] = static_cast<std::uint32_t>(N + j);
        }
        N += L.size[t];
    }
    L.off[T] = N;
    return {L.size.data(), L.off.data(), T, N};
}
}  // namespace

void lstm_stage_forward(Node* layer, const lowering::SeqCall& c) {
    const LstmRun r = run_of(*layer);
    check_param_size(r);
    const LstmDims& d = r.d;
    const std::size_t width = d.dirs * d.nH;
    Layout L = layout_of(r, c.rows, c.scratch, c.train ? c.train_scratch : nullptr);
    HostRows& h = host_rows();
    const StepsV s = layout_rows(h, c);
    c.host[0] = 0;
    if (!s.N) return;
    const Ops& ops = *r.ops;
    // The packed rows' map and inv cross to the backend's memory (2 x rows uint32; kept in the
    // scratch for the backward); the steps stay on the host.
    copy_bytes(L.map, ops.memory(), h.map.data(), Memory::host, s.N * sizeof(std::uint32_t));
    copy_bytes(L.inv, ops.memory(), h.inv.data(), Memory::host, s.N * sizeof(std::uint32_t));
    ops.gather_add_rows(c.x, d.nI, L.map, s.N, 1, L.f.in0);
    bool masked = false;
    run_forward(r, s, L.f, c.train, masked);
    c.host[0] = masked ? 1 : 0;
    ops.gather_add_rows(L.f.outs + (d.depth - 1) * s.N * width, width, L.inv, s.N, 1, c.y);
}

void lstm_stage_backward(Node* layer, const lowering::SeqCall& c) {
    const LstmRun r = run_of(*layer);
    if (lstm_param_size(r.d) != r.P)
        throw ShapeError(*r.name + ": the model's LSTM parameter changed size between the forward pass and its backprop",
                         "tenon-E286");
    const LstmDims& d = r.d;
    Layout L = layout_of(r, c.rows, c.scratch, c.train_scratch);
    const StepsV steps = layout_rows(host_rows(), c);  // (the forward's, again from the lengths)
    const Ops& ops = *r.ops;
    const BwdBufs b = bwd_of(r, c.rows, c.train_scratch);
    const bool masked = c.host[0] != 0;
    const float* W = masked ? L.f.weights : r.W;
    ops.gather_add_rows(c.dy, d.dirs * d.nH, L.map, c.rows, 1, b.dA);
    float* gW = layer->get_grad("LSTM").data;
    float* gH = layer->get_grad("HC0").data;
    const float* dX = run_backward(r, steps, L.f, W, masked, b, gW, gH);
    if (!c.dx) return;
    if (c.dx_add) ops.scatter_add_rows(c.dx, d.nI, L.map, c.rows, 1, dX, nullptr);
    else ops.gather_add_rows(dX, d.nI, L.inv, c.rows, 1, c.dx);
}

}  // namespace tenon::detail
