// The backend seam (Thinc's `Ops`): what executes a layer's and a plan's computation. Layers
// and plans say *what* to compute and call their model's Ops (`node.ops()`); a backend says
// *how*, for the memory its arrays live in. The CPU backend (`cpu_ops()`, src/cpu/ops.cpp)
// is the first and the default; a device backend implements the same interface over the
// same functors (backend/functors.hpp), so the math is written once.
//
// The interface is deliberately coarse: each entry is a whole pass over rows (never a call
// per value), so the virtual call costs nothing next to the work, and a device backend can
// make each entry one kernel launch. Pointers are to the backend's memory (the integer
// indices and `which` too), except the sequences' `lengths`, which are host memory: integer
// bookkeeping that the layers' host code reads as well (a device backend copies them over);
// sizes in values.
// Every entry is const and thread-safe: many threads call one model's ops at once.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "tenon/backend/functors.hpp"
#include "tenon/types/memory.hpp"

namespace tenon {

// One parameter's share of a fused optimizer pass (Ops::adam_segments, sgd_segments): its
// weights, gradient, moments and average (A, m1, m2 null where unused), its length, and the
// values that differ per parameter (the clipping scale, the learning rate with Adam's bias
// corrections folded in, the average's weight). Every pointer is in the backend's memory.
struct OptSegment {
    float* W = nullptr;
    float* G = nullptr;
    float* m1 = nullptr;
    float* m2 = nullptr;
    float* A = nullptr;
    std::size_t n = 0;
    float gscale = 1.0f, lr = 0.0f, decay_keep = 0.0f;
    bool zero_g = false;
};

namespace lowering {
struct Stage;
struct StageParams;
struct Ctx;
}  // namespace lowering

class Ops {
public:
    virtual ~Ops() = default;
    // "cpu", ... (for messages and describe).
    virtual const char* name() const noexcept = 0;
    // Where this backend's arrays live: a model on it keeps its parameters there, its calls'
    // arrays are made there and its input must be there (docs/cuda.md, "Device arrays").
    Memory memory() const noexcept { return memory_; }

    // --- Products. Row-major: C = alpha * op(A) op(B) + beta * C, op(M) = M^T when trans.
    virtual void gemm(bool trans_a, bool trans_b, std::size_t m, std::size_t n, std::size_t k, float alpha,
                      const float* a, std::size_t lda, const float* b, std::size_t ldb, float beta, float* c,
                      std::size_t ldc) const = 0;
    // A dense layer's forward product with its bias and activation in the product's epilogue:
    // Y (m x n) = act(X (m x k) W^T + b), W (n x k), b (n), all contiguous; Wp: W prepacked by
    // this backend's prepack (a frozen plan), or null. A backend that has such an epilogue for
    // `act` computes it and returns true (the CPU's: fn::bias_activate_row on each tile of the
    // product as it is finished, in L1; cuBLASLt's BIAS and RELU_BIAS on a GPU); the default
    // returns false and does nothing, and the plan then runs the product and its row pass. The
    // plan asks only where the row pass would do no more than this
    // (lowering::bias_act_epilogue), and the backend's stage_forward_rows then skips them.
    virtual bool gemm_bias_act(Activation /*act*/, std::size_t /*m*/, std::size_t /*n*/, std::size_t /*k*/,
                               const float* /*X*/, const float* /*W*/, const float* /*Wp*/, const float* /*b*/,
                               float* /*Y*/) const {
        return false;
    }
    // Products with op(B) prepacked (a plan's frozen weights: docs/lowering.md, "Frozen
    // weights"). prepacked_size: the values op(B) (k x n; op(B) = B^T when trans) takes
    // packed, or 0 when this backend does not prepack (the default: a frozen plan then runs
    // as an unfrozen one). prepack writes op(B) there (memory of this backend);
    // gemm_prepacked computes what gemm(.., b, ldb, ..) does, reading op(B) from `packed`
    // (prepack of the same b, k and n by this backend in this process; b is read too): bit for
    // bit from 5 rows on; for 1-4 rows each row as gemm computes it inside a larger batch
    // (gemm's own few-row path rounds differently).
    virtual std::size_t prepacked_size(std::size_t /*k*/, std::size_t /*n*/) const { return 0; }
    virtual void prepack(bool /*trans_b*/, std::size_t /*k*/, std::size_t /*n*/, const float* /*b*/,
                         std::size_t /*ldb*/, float* /*packed*/) const {}
    virtual void gemm_prepacked(bool trans_a, bool trans_b, std::size_t m, std::size_t n, std::size_t k, float alpha,
                                const float* a, std::size_t lda, const float* b, std::size_t ldb,
                                const float* /*packed*/, float beta, float* c, std::size_t ldc) const {
        gemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    }

    // --- Row passes (rows x n, row-major, contiguous).
    // Y = act(Y + b) on each row; Z (if not null) gets the pre-activation Y + b.
    virtual void bias_activate(Activation act, float* Y, const float* b, std::size_t rows, std::size_t n,
                               float* Z) const = 0;
    // Y = act(X) over n values (X may be Y).
    virtual void activate(Activation act, const float* X, float* Y, std::size_t n) const = 0;
    // d = the gradient of the pre-activation, in place, given the output Y and the
    // pre-activation Z (each read only when the activation needs it: fn::grad_reads_y/_z).
    virtual void activation_backward(Activation act, float* d, const float* Y, const float* Z, std::size_t rows,
                                     std::size_t n) const = 0;
    // Y = softmax(Y / t) on each row (inv_t = 1 / t).
    virtual void softmax_rows(float* Y, std::size_t rows, std::size_t n, float inv_t) const = 0;
    // x = k * x over n values.
    virtual void scale(float* x, std::size_t n, float k) const = 0;
    // db += the sum of d's rows (a bias gradient).
    virtual void sum_rows_into(const float* d, std::size_t rows, std::size_t n, float* db) const = 0;
    // Y (rows x nO) = the largest of each output's nP pieces of Z (+ b when not null: nO x nP);
    // which (if not null) = the winning piece.
    virtual void maxout(const float* Z, const float* b, std::size_t rows, std::size_t nO, std::size_t nP, float* Y,
                        std::int32_t* which) const = 0;
    // dZ (rows x nO*nP) = dY at the winning pieces, 0 elsewhere.
    virtual void maxout_backward(const float* dY, const std::int32_t* which, std::size_t rows, std::size_t nO,
                                 std::size_t nP, float* dZ) const = 0;
    // Layer norm of each row of X into Y (X may be Y), keeping Xhat (rows x n) and rstd (rows)
    // when not null.
    virtual void layernorm(const float* X, float* Y, std::size_t rows, std::size_t n, const float* G, const float* b,
                           float* Xhat, float* rstd) const = 0;
    // Its backward: dX from dY (dX may be dY), adding to dG and db.
    virtual void layernorm_backward(const float* dY, float* dX, const float* Xhat, const float* rstd,
                                    std::size_t rows, std::size_t n, const float* G, float* dG, float* db) const = 0;

    // --- Gathers and scatter-adds (the embedding tables). idx holds `per` rows of the table
    // (width values each) for each of the `rows` outputs.
    // out[r] = the sum of table[idx[r * per + k]] for k = 0 .. per-1, in k order.
    virtual void gather_add_rows(const float* table, std::size_t width, const std::uint32_t* idx, std::size_t rows,
                                 std::size_t per, float* out) const = 0;
    // table[idx[r * per + k]] += d[r] (times mask, a width-long column mask, when not null),
    // k by k and r by r within each k (one order, so repeated rows sum the same every time).
    virtual void scatter_add_rows(float* table, std::size_t width, const std::uint32_t* idx, std::size_t rows,
                                  std::size_t per, const float* d, const float* mask) const = 0;

    // --- Weighted sparse columns (SparseLinear: a hashed bag of features). Segment b (of
    // nseg, lengths[b] features each, back to back) has for its feature f the value values[f]
    // and `per` indices idx[f * per + k]; class c of index i is W[c * stride + i] (stride is
    // the weights' length in Thinc's layout, 1 for its v1 indexing). The gather adds to Y
    // (nseg x nO, holding the start values: the bias) Y[b, c] += values[f] * W[c * stride +
    // idx[f * per + k]], feature by feature and k by k (Thinc's order). The scatter adds
    // values[f] * dY[b, c] to dW at the same places (every touched entry and only those), and
    // writes dvalues[f] = sum over k and c of dY[b, c] * W[...] when dvalues is not null.
    virtual void sparse_gather_add(const float* W, std::size_t nO, std::size_t stride, const std::uint32_t* idx,
                                   std::size_t per, const float* values, const std::int32_t* lengths,
                                   std::size_t nseg, float* Y) const = 0;
    virtual void sparse_scatter_add(float* dW, std::size_t nO, std::size_t stride, const std::uint32_t* idx,
                                    std::size_t per, const float* values, const std::int32_t* lengths,
                                    std::size_t nseg, const float* dY, const float* W, float* dvalues) const = 0;

    // --- Segment reductions over sequences given by their lengths (nseg of them, rows of
    // width n, back to back): Y (nseg x n, zero-filled by the caller) = the reduction of each
    // sequence; which (nseg x n: reduce_max's argmax row within its sequence) when asked.
    // The backward writes dX (sum of lengths x n, zero-filled by the caller) from dY.
    virtual void segment_reduce(Reduce r, const float* X, const std::int32_t* lengths, std::size_t nseg,
                                std::size_t n, float* Y, std::int32_t* which) const = 0;
    virtual void segment_reduce_backward(Reduce r, const float* dY, const std::int32_t* lengths, std::size_t nseg,
                                         std::size_t n, const std::int32_t* which, float* dX) const = 0;

    // --- Windows (expand_window, Thinc's seq2col) over sequences given by their lengths (nseg
    // of them, rows of width n back to back): out (rows x (2 nW + 1) n) = each row's window
    // (fn::seq2col_row), every value written; the backward adds to dX (rows x n) each row's
    // slots of the windows that hold it (fn::backprop_seq2col_row).
    virtual void seq2col(const float* X, const std::int32_t* lengths, std::size_t nseg, std::size_t nW, std::size_t n,
                         float* out) const = 0;
    virtual void backprop_seq2col(const float* dY, const std::int32_t* lengths, std::size_t nseg, std::size_t nW,
                                  std::size_t n, float* dX) const = 0;
    // --- Softmax over sequences (ParametricAttention; Thinc's ops.softmax_sequences): x (rows
    // of width n, nseg sequences given by their lengths, back to back) becomes, in place, the
    // softmax over each sequence's rows, column by column (fn::softmax_sequence_one). The
    // backward writes dX = Y * (dY - the sum over the sequence of Y * dY) (dX may be dY).
    virtual void softmax_sequences(float* x, const std::int32_t* lengths, std::size_t nseg, std::size_t n) const = 0;
    virtual void backprop_softmax_sequences(const float* dY, const float* Y, const std::int32_t* lengths,
                                            std::size_t nseg, std::size_t n, float* dX) const = 0;
    // --- Per-row scalars: Y[r] = a[r] * X[r] (or Y[r] += a[r] * X[r] when add; Y may be X when
    // not adding), and out[r] = the dot product of A[r] and B[r], over rows of width n.
    virtual void scale_rows(const float* X, const float* a, std::size_t rows, std::size_t n, float* Y,
                            bool add) const = 0;
    virtual void row_dots(const float* A, const float* B, std::size_t rows, std::size_t n, float* out) const = 0;
    // --- CauchySimilarity over rows of width n (fn::cauchy_row, cauchy_backward_row): sim[r]
    // for the rows of X1 and X2, keeping diff (rows x n) and total (rows) when not null; the
    // backward writes dX1, dX2 from d_sim and adds to dW (n) the rows' terms in row order.
    virtual void cauchy_similarity(const float* X1, const float* X2, const float* W, std::size_t rows, std::size_t n,
                                   float* diff, float* total, float* sim) const = 0;
    virtual void cauchy_similarity_backward(const float* d_sim, const float* diff, const float* total, const float* W,
                                            std::size_t rows, std::size_t n, float* dX1, float* dX2,
                                            float* dW) const = 0;
    // --- Moves within the backend's memory (a plan's concatenations and pads): rows x w
    // values from `from` (rows from_ld apart) to `to` (rows to_ld apart), or added to them.
    virtual void copy_rows(const float* from, std::size_t from_ld, float* to, std::size_t to_ld, std::size_t rows,
                           std::size_t w, bool add) const = 0;
    // x = 0 over n values.
    virtual void zero(float* x, std::size_t n) const = 0;
    // --- Elementwise over n values (fn::elementwise): y = a + b, y = a * b, y += a (b unused),
    // y += a * b; y may be a or b.
    virtual void elementwise(Binary op, const float* a, const float* b, float* y, std::size_t n) const = 0;
    // y += alpha x over n values (fn::axpy: Thinc's L2 as a gradient term).
    virtual void axpy(float alpha, const float* x, float* y, std::size_t n) const = 0;
    // Y[r, j] = X[r, j] * mask[j] over rows of width n (a column mask, one for every row); Y may be X.
    virtual void mask_columns(const float* X, const float* mask, std::size_t rows, std::size_t n,
                              float* Y) const = 0;
    // m (n values) = dropout's mask for the call whose key is `key`, element j from
    // fn::dropout_mask_bits(key, j, ..., kt, kb): the same mask on every backend (random.hpp's
    // dropout_mask). dropout_mask below takes the rate.
    virtual void dropout_mask_bits(std::uint64_t key, float* m, std::size_t n, std::uint64_t kt,
                                   std::uint32_t kb) const = 0;
    // Thinc's mask for `rate`: 1 / (1 - rate) where kept, 0 where dropped, all 0 for rate >= 1.
    void dropout_mask(std::uint64_t key, float* m, std::size_t n, double rate) const {
        if (rate >= 1.0) return zero(m, n);
        const auto keep = static_cast<float>(1.0 / (1.0 - rate));
        std::uint32_t kb = 0;
        std::memcpy(&kb, &keep, sizeof kb);
        dropout_mask_bits(key, m, n, fn::dropout_threshold(rate), kb);
    }

    // --- Recurrent cells (LSTM, one step of `rows` sequences): G (rows x 4 nH) holds the gate
    // pre-activations and gets the activated gates (fn::lstm_cell_row: Thinc's order, blocks of
    // nH); Cprev (rows x nH) the previous cells; C (rows x nH) and H (rows ldh apart) get the
    // cells and the hiddens. The backward reads dH (rows ldh apart) and dC (the cells' gradient
    // from the next step) and writes dG (rows x 4 nH) and dCprev (rows x nH).
    virtual void lstm_cell_forward(float* G, const float* Cprev, float* C, float* H, std::size_t ldh,
                                   std::size_t rows, std::size_t nH) const = 0;
    virtual void lstm_cell_backward(const float* dH, std::size_t ldh, const float* dC, const float* G, const float* C,
                                    const float* Cprev, float* dG, float* dCprev, std::size_t rows,
                                    std::size_t nH) const = 0;

    // --- A plan's fused row pass of one stage (bias and activation, maxout's max, layer
    // norm, dropout, sigmoid, residual add: lower/plan.hpp), forward and backward. The
    // plan's products are gemm calls; these are the passes between them.
    virtual void stage_forward_rows(const lowering::Stage& s, const lowering::StageParams& sp,
                                    const lowering::Ctx& c) const = 0;
    virtual void stage_backward_rows(const lowering::Stage& s, const lowering::StageParams& sp,
                                     const lowering::Ctx& c) const = 0;

    // --- Optimizer passes over one parameter (n values), the gradient G scaled by gscale
    // (clipping) and weight decay wd folded in; A (if not null) is the parameter's moving
    // average (decay_keep: its weight); G is zeroed when zero_g. Thinc's Adam and SGD.
    virtual void adam(float* W, float* G, float* m1, float* m2, float* A, std::size_t n, float gscale, float b1,
                      float b2, float lr_t, float eps, float decay_keep, float wd, bool zero_g) const = 0;
    virtual void sgd(float* W, float* G, float* A, std::size_t n, float gscale, float lr, float decay_keep, float wd,
                     bool zero_g) const = 0;
    // The sum of squares of x (for the gradient norm), and how many values are NaN or inf.
    virtual double sum_squares(const float* x, std::size_t n) const = 0;
    virtual std::size_t count_nonfinite(const float* x, std::size_t n) const = 0;
    // The optimizer's step over many parameters at once (Optimizer, for a backend whose
    // fuses_optimizer() is true: one pass, one launch on a device, over every parameter of a
    // model): each segment as adam() / sgd() with its own gscale, lr (Adam's lr_t) and
    // decay_keep. The default calls adam() / sgd() per segment.
    virtual bool fuses_optimizer() const noexcept { return false; }
    virtual void adam_segments(const OptSegment* segs, std::size_t count, float b1, float b2, float eps,
                               float wd) const {
        for (std::size_t i = 0; i < count; ++i) {
            const OptSegment& s = segs[i];
            adam(s.W, s.G, s.m1, s.m2, s.A, s.n, s.gscale, b1, b2, s.lr, eps, s.decay_keep, wd, s.zero_g);
        }
    }
    virtual void sgd_segments(const OptSegment* segs, std::size_t count, float wd) const {
        for (std::size_t i = 0; i < count; ++i) {
            const OptSegment& s = segs[i];
            sgd(s.W, s.G, s.A, s.n, s.gscale, s.lr, s.decay_keep, wd, s.zero_g);
        }
    }

protected:
    Ops() = default;
    explicit Ops(Memory m) noexcept : memory_(m) {}
    Ops(const Ops&) = default;
    Ops& operator=(const Ops&) = default;

private:
    Memory memory_ = Memory::host;
};

// The CPU backend: the runtime-dispatched sgemm (src/cpu/gemm.cpp), the shared functors in
// vectorisable loops, the row passes split over tenon's threads (set_num_threads).
const Ops& cpu_ops() noexcept;

// The Ops a new model gets (cpu_ops() unless set_current_ops changed it), process-wide.
// A model's own is node.ops(); node.set_ops(ops) changes it for the node and its children.
const Ops& current_ops() noexcept;
void set_current_ops(const Ops& ops) noexcept;

}  // namespace tenon
