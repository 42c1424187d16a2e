// The device backend's entries (device_ops.hpp): each one or a few Thrust passes, one functor
// call per row, element, column or segment, each instantiating the functors of
// backend/functors.hpp as the CPU backend does. Sums run in the CPU backend's order: a bias's
// or layer norm's gradient column by column over the rows in row order, a scatter-add's
// repeated rows by a stable sort of the contributions (in the CPU's order) and one sequential
// sum per destination, never atomics. Included by exactly one translation unit per build
// (kernels/device_ops.cu under nvcc, src/device/host_ops.cpp under g++ with Thrust's CPP system).
#include <cstring>
#include <vector>

#include <thrust/device_vector.h>
#include <thrust/execution_policy.h>
#include <thrust/fill.h>
#include <thrust/for_each.h>
#include <thrust/functional.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/sequence.h>
#include <thrust/sort.h>
#include <thrust/transform_reduce.h>

#include "blas.hpp"
#include "device_ops.hpp"

namespace tenon::TENON_DEVICE_NS {
namespace {

using std::size_t;

// One pass: f(i) for i = 0 .. count - 1.
template <class F>
void launch(size_t count, const F& f) {
    if (count) thrust::for_each_n(thrust::device, thrust::counting_iterator<size_t>(0), count, f);
}

// --- Sequences: the end of each, and a row's sequence. The lengths are host memory (integer
// bookkeeping, read by the layers' host code too: backend/ops.hpp): their running sum is made on
// the host and copied to the device once per entry.
struct Ends {
    thrust::device_vector<size_t> v;
    size_t total = 0;  // the rows of all sequences
    Ends(const std::int32_t* lengths, size_t nseg) {
        TENON_DEVICE_ARG(lengths, host);
        std::vector<size_t> h(nseg);
        for (size_t b = 0; b < nseg; ++b) h[b] = total += static_cast<size_t>(lengths[b]);
        v.assign(h.begin(), h.end());
    }
    const size_t* get() const { return thrust::raw_pointer_cast(v.data()); }
};
TENON_HD inline size_t seg_start(const size_t* ends, size_t b) { return b ? ends[b - 1] : 0; }
// The sequence holding row j: the first b with ends[b] > j.
TENON_HD inline size_t seg_of(const size_t* ends, size_t nseg, size_t j) {
    size_t lo = 0, hi = nseg;
    while (lo < hi) {
        const size_t mid = (lo + hi) / 2;
        if (ends[mid] > j) hi = mid;
        else lo = mid + 1;
    }
    return lo;
}

// --- Row passes.
struct BiasActivate {
    Activation act; float* Y; const float* b; size_t n; float* Z;
    TENON_HD void operator()(size_t r) const {
        float* z = Z ? Z + r * n : nullptr;
        fn::with_activation(act, [&](auto f) { fn::bias_activate_row(f, Y + r * n, b, n, z); });
    }
};
struct Activate {
    Activation act; const float* X; float* Y;
    TENON_HD void operator()(size_t i) const {
        const float x = X[i];
        Y[i] = fn::with_activation(act, [&](auto f) { return f(x); });
    }
};
// The gradient through an activation, one value (activation_backward_row over one).
struct ActivationBackward {
    Activation act; float* d; const float* Y; const float* Z;
    TENON_HD void operator()(size_t i) const {
        const float* y = Y ? Y + i : nullptr;
        const float* z = Z ? Z + i : nullptr;
        fn::with_activation(act, [&](auto f) { fn::activation_backward_row(f, d + i, y, z, 1); });
    }
};
struct SoftmaxRows {
    float* Y; size_t n; float inv_t;
    TENON_HD void operator()(size_t r) const { fn::softmax_row(Y + r * n, n, inv_t); }
};
struct Scale {
    float* x; float k;
    TENON_HD void operator()(size_t i) const { x[i] *= k; }
};
// db[j] += d[r, j] over the rows in order (one thread per column: the CPU's sums).
struct SumRowsInto {
    const float* d; size_t rows, n; float* db;
    TENON_HD void operator()(size_t j) const {
        float s = db[j];
        for (size_t r = 0; r < rows; ++r) s += d[r * n + j];
        db[j] = s;
    }
};
struct Maxout {
    const float* Z; const float* b; size_t nO, nP; float* Y; std::int32_t* which;
    TENON_HD void operator()(size_t r) const {
        fn::maxout_row(Z + r * nO * nP, b, nO, nP, Y + r * nO, which ? which + r * nO : nullptr);
    }
};
struct MaxoutBackward {
    const float* dY; const std::int32_t* which; size_t nO, nP; float* dZ;
    TENON_HD void operator()(size_t r) const {
        fn::maxout_row_backward(dY + r * nO, which + r * nO, nO, nP, dZ + r * nO * nP);
    }
};
struct Layernorm {
    const float* X; float* Y; size_t n; const float* G; const float* b; float* Xhat; float* rstd;
    TENON_HD void operator()(size_t r) const {
        fn::layernorm_row(X + r * n, Y + r * n, n, G, b, Xhat ? Xhat + r * n : nullptr, rstd ? rstd + r : nullptr);
    }
};
// Column j of layer norm's parameter gradients, over the rows in order.
struct LayernormParamGrads {
    const float* dY; const float* Xhat; size_t rows, n; float* dG; float* db;
    TENON_HD void operator()(size_t j) const {
        for (size_t r = 0; r < rows; ++r) fn::layernorm_row_param_grads(dY + r * n + j, Xhat + r * n + j, 1, dG + j, db + j);
    }
};
struct LayernormDx {
    const float* dY; float* dX; const float* Xhat; const float* rstd; size_t n; const float* G;
    TENON_HD void operator()(size_t r) const {
        fn::layernorm_row_dx(dY + r * n, dX + r * n, Xhat + r * n, rstd[r], n, G);
    }
};

// --- Gathers and scatter-adds.
struct GatherAdd {
    const float* table; size_t width; const std::uint32_t* idx; size_t per; float* out;
    TENON_HD void operator()(size_t i) const {
        const size_t r = i / width, j = i % width;
        const std::uint32_t* k = idx + r * per;
        float y = per ? table[size_t{k[0]} * width + j] : 0.0f;
        for (size_t q = 1; q < per; ++q) y += table[size_t{k[q]} * width + j];
        out[i] = y;
    }
};
// The contributions of a scatter-add in the CPU's order, keyed by their destination.
struct ScatterKeys {
    const std::uint32_t* idx; size_t rows, per; std::uint32_t* keys;
    TENON_HD void operator()(size_t p) const {  // p = q * rows + r: the CPU's loop order
        const size_t q = p / rows, r = p % rows;
        keys[p] = idx[r * per + q];
    }
};
// Destination (run start s, column j): the table's value plus the run's contributions in order.
struct ScatterRuns {
    float* table; size_t width; const std::uint32_t* keys; const size_t* pos; size_t count, rows;
    const float* d; const float* mask;
    TENON_HD void operator()(size_t i) const {
        const size_t s = i / width, j = i % width;
        if (s > 0 && keys[s] == keys[s - 1]) return;
        float* e = table + size_t{keys[s]} * width + j;
        float acc = *e;
        for (size_t t = s; t < count && keys[t] == keys[s]; ++t) {
            const size_t r = pos[t] % rows;
            acc += mask ? d[r * width + j] * mask[j] : d[r * width + j];
        }
        *e = acc;
    }
};
struct SparseGather {
    const float* W; size_t nO, stride; const std::uint32_t* idx; size_t per; const float* values;
    const size_t* ends; float* Y;
    TENON_HD void operator()(size_t i) const {
        const size_t b = i / nO, c = i % nO;
        float acc = Y[i];
        for (size_t f = seg_start(ends, b); f < ends[b]; ++f) {
            const float v = values[f];
            for (size_t k = 0; k < per; ++k) acc += W[idx[f * per + k] + c * stride] * v;
        }
        Y[i] = acc;
    }
};
// SparseLinear's contributions e = (f * per + k) * nO + c (the CPU's order), keyed by the
// weight they add to.
struct SparseKeys {
    size_t nO, stride; const std::uint32_t* idx; size_t* keys;
    TENON_HD void operator()(size_t e) const {
        const size_t p = e / nO, c = e % nO;
        keys[e] = c * stride + idx[p];
    }
};
struct SparseRuns {
    float* dW; size_t nO, per; const size_t* keys; const size_t* pos; size_t count; const float* values;
    const size_t* ends; size_t nseg; const float* dY;
    TENON_HD void operator()(size_t s) const {
        if (s > 0 && keys[s] == keys[s - 1]) return;
        float acc = dW[keys[s]];
        for (size_t t = s; t < count && keys[t] == keys[s]; ++t) {
            const size_t e = pos[t], c = e % nO, f = e / nO / per;
            acc += dY[seg_of(ends, nseg, f) * nO + c] * values[f];
        }
        dW[keys[s]] = acc;
    }
};
struct SparseDvalues {
    size_t nO, stride; const std::uint32_t* idx; size_t per; const size_t* ends; size_t nseg; const float* dY;
    const float* W; float* dvalues;
    TENON_HD void operator()(size_t f) const {
        const float* d = dY + seg_of(ends, nseg, f) * nO;
        float dv = 0.0f;
        for (size_t k = 0; k < per; ++k) {
            const size_t i = idx[f * per + k];
            for (size_t c = 0; c < nO; ++c) dv += d[c] * W[i + c * stride];
        }
        dvalues[f] = dv;
    }
};

// --- Sequences.
struct SegmentReduce {
    Reduce red; const float* X; const size_t* ends; size_t n; float* Y; std::int32_t* which;
    TENON_HD void operator()(size_t b) const {
        const size_t s = seg_start(ends, b);
        fn::segment_reduce_one(red, X + s * n, ends[b] - s, n, Y + b * n, which ? which + b * n : nullptr);
    }
};
struct SegmentReduceBackward {
    Reduce red; const float* dY; const size_t* ends; size_t n; const std::int32_t* which; float* dX;
    TENON_HD void operator()(size_t b) const {
        const size_t s = seg_start(ends, b);
        fn::segment_reduce_one_backward(red, dY + b * n, ends[b] - s, n, which ? which + b * n : nullptr, dX + s * n);
    }
};
struct Seq2col {
    const float* X; const size_t* ends; size_t nseg, nW, n; float* out;
    TENON_HD void operator()(size_t j) const {
        const size_t b = seg_of(ends, nseg, j);
        fn::seq2col_row(X, j, seg_start(ends, b), ends[b], nW, n, out + j * (2 * nW + 1) * n);
    }
};
struct BackpropSeq2col {
    const float* dY; const size_t* ends; size_t nseg, nW, n; float* dX;
    TENON_HD void operator()(size_t x) const {
        const size_t b = seg_of(ends, nseg, x);
        fn::backprop_seq2col_row(dY, x, seg_start(ends, b), ends[b], nW, n, dX + x * n);
    }
};
struct SoftmaxSequence {
    float* x; const size_t* ends; size_t n;
    TENON_HD void operator()(size_t b) const {
        const size_t s = seg_start(ends, b);
        fn::softmax_sequence_one(x + s * n, ends[b] - s, n);
    }
};
struct BackpropSoftmaxSequence {
    const float* dY; const float* Y; const size_t* ends; size_t n; float* dX;
    TENON_HD void operator()(size_t b) const {
        const size_t s = seg_start(ends, b), o = s * n;
        fn::backprop_softmax_sequence_one(dY + o, Y + o, ends[b] - s, n, dX + o);
    }
};
struct ScaleRows {
    const float* X; const float* a; size_t n; float* Y; bool add;
    TENON_HD void operator()(size_t r) const { fn::scale_row(X + r * n, a[r], n, Y + r * n, add); }
};
struct RowDots {
    const float* A; const float* B; size_t n; float* out;
    TENON_HD void operator()(size_t r) const { out[r] = fn::row_dot(A + r * n, B + r * n, n); }
};
struct Cauchy {
    const float* X1; const float* X2; const float* W; size_t n; float* diff; float* total; float* sim;
    TENON_HD void operator()(size_t r) const {
        sim[r] = fn::cauchy_row(X1 + r * n, X2 + r * n, W, n, diff ? diff + r * n : nullptr, total ? total + r : nullptr);
    }
};
struct CauchyBackwardRows {
    const float* d_sim; const float* diff; const float* total; const float* W; size_t n; float* dX1; float* dX2;
    TENON_HD void operator()(size_t r) const {
        fn::cauchy_backward_row(fn::cauchy_d_total(d_sim[r], total[r]), diff + r * n, W, n, dX1 + r * n, dX2 + r * n);
    }
};
// dW_j, one column per thread, its rows' terms in row order (the CPU's order: the same sums).
struct CauchyDW {
    const float* d_sim; const float* diff; const float* total; size_t rows, n; float* dW;
    TENON_HD void operator()(size_t j) const {
        float s = dW[j];
        for (size_t r = 0; r < rows; ++r) s += fn::cauchy_dW_term(fn::cauchy_d_total(d_sim[r], total[r]), diff[r * n + j]);
        dW[j] = s;
    }
};
struct CopyRows {
    const float* from; size_t from_ld; float* to; size_t to_ld, w; bool add;
    TENON_HD void operator()(size_t i) const {
        const size_t r = i / w, j = i % w;
        if (add) to[r * to_ld + j] += from[r * from_ld + j];
        else to[r * to_ld + j] = from[r * from_ld + j];
    }
};
struct LstmForward {
    float* G; const float* Cprev; float* C; float* H; size_t ldh, nH;
    TENON_HD void operator()(size_t i) const {
        const size_t r = i / nH, k = i % nH;
        fn::lstm_cell_row(G + r * 4 * nH, Cprev + r * nH, C + r * nH, H + r * ldh, nH, k, k + 1);
    }
};
struct LstmBackward {
    const float* dH; size_t ldh; const float* dC; const float* G; const float* C; const float* Cprev; float* dG;
    float* dCprev; size_t nH;
    TENON_HD void operator()(size_t i) const {
        const size_t r = i / nH, k = i % nH;
        fn::lstm_cell_row_backward(dH + r * ldh, dC + r * nH, G + r * 4 * nH, C + r * nH, Cprev + r * nH,
                                   dG + r * 4 * nH, dCprev + r * nH, nH, k, k + 1);
    }
};

// y += alpha x, one value per thread (fn::axpy over one).
struct Axpy {
    float alpha; const float* x; float* y;
    TENON_HD void operator()(size_t i) const { fn::axpy(alpha, x + i, y + i, 1); }
};
// --- Elementwise: one value per thread (fn::elementwise over one), a column mask's value
// (r, j) times mask[j], dropout's mask value j (fn::dropout_mask_bits of element j).
struct Elementwise {
    Binary op; const float* a; const float* b; float* y;
    TENON_HD void operator()(size_t i) const { fn::elementwise(op, a + i, b ? b + i : nullptr, y + i, 1); }
};
struct MaskColumns {
    const float* X; const float* mask; size_t n; float* Y;
    TENON_HD void operator()(size_t i) const { fn::elementwise(Binary::mul, X + i, mask + i % n, Y + i, 1); }
};
struct DropoutMaskBits {
    std::uint64_t key, kt; std::uint32_t kb; float* m;
    TENON_HD void operator()(size_t j) const { fn::dropout_mask_bits(key, j, m + j, 1, kt, kb); }
};

// --- The optimizer: one pass over a parameter.
struct Adam {
    float* W; float* G; float* m1; float* m2; float* A; float gscale, b1, b2, lr_t, eps, decay_keep, wd; bool zero_g;
    TENON_HD void operator()(size_t i) const {
        const float w = fn::adam_one(W[i], G[i] * gscale, m1[i], m2[i], b1, b2, lr_t, eps, wd);
        W[i] = w;
        if (zero_g) G[i] = 0.0f;
        if (A) fn::average_one(A[i], w, decay_keep);
    }
};
struct Sgd {
    float* W; float* G; float* A; float gscale, lr, decay_keep, wd; bool zero_g;
    TENON_HD void operator()(size_t i) const {
        const float w = fn::sgd_one(W[i], G[i] * gscale, lr, wd);
        W[i] = w;
        if (zero_g) G[i] = 0.0f;
        if (A) fn::average_one(A[i], w, decay_keep);
    }
};
// The fused optimizer: value i of the parameters laid end to end (starts: count + 1 offsets)
// finds its segment by binary search and takes the same step as Adam / Sgd above.
TENON_HD inline size_t segment_of(const size_t* starts, size_t count, size_t i) {
    size_t lo = 0, hi = count;  // starts[lo] <= i < starts[hi]
    while (hi - lo > 1) {
        const size_t mid = lo + (hi - lo) / 2;
        if (starts[mid] <= i) lo = mid; else hi = mid;
    }
    return lo;
}
struct AdamSegments {
    const OptSegment* segs; const size_t* starts; size_t count; float b1, b2, eps, wd;
    TENON_HD void operator()(size_t i) const {
        const size_t k = segment_of(starts, count, i);
        const OptSegment& s = segs[k];
        Adam{s.W, s.G, s.m1, s.m2, s.A, s.gscale, b1, b2, s.lr, eps, s.decay_keep, wd, s.zero_g}(i - starts[k]);
    }
};
struct SgdSegments {
    const OptSegment* segs; const size_t* starts; size_t count; float wd;
    TENON_HD void operator()(size_t i) const {
        const size_t k = segment_of(starts, count, i);
        const OptSegment& s = segs[k];
        Sgd{s.W, s.G, s.A, s.gscale, s.lr, s.decay_keep, wd, s.zero_g}(i - starts[k]);
    }
};
// The segments' table and their starts in one device block, freed at the end of the pass.
class SegmentTable {
public:
    SegmentTable(const OptSegment* segs, size_t count) {
        const size_t seg_bytes = count * sizeof(OptSegment), start_bytes = (count + 1) * sizeof(size_t);
        std::vector<unsigned char> host(seg_bytes + start_bytes);
        std::memcpy(host.data(), segs, seg_bytes);
        size_t total = 0;
        for (size_t i = 0; i <= count; ++i) {
            std::memcpy(host.data() + seg_bytes + i * sizeof(size_t), &total, sizeof(size_t));
            if (i < count) total += segs[i].n;
        }
        total_ = total;
        block_ = device_upload(host.data(), host.size(), capacity_);
        segs_ = static_cast<const OptSegment*>(block_);
        starts_ = reinterpret_cast<const size_t*>(static_cast<const unsigned char*>(block_) + seg_bytes);
    }
    ~SegmentTable() { device_release(block_, capacity_); }
    SegmentTable(const SegmentTable&) = delete;
    SegmentTable& operator=(const SegmentTable&) = delete;
    const OptSegment* segs() const { return segs_; }
    const size_t* starts() const { return starts_; }
    size_t total() const { return total_; }

private:
    void* block_ = nullptr;
    size_t capacity_ = 0, total_ = 0;
    const OptSegment* segs_ = nullptr;
    const size_t* starts_ = nullptr;
};
struct Square {
    TENON_HD double operator()(float x) const { return double(x) * double(x); }
};
struct IsNonfinite {
    TENON_HD size_t operator()(float x) const {
        std::uint32_t u;
        std::memcpy(&u, &x, sizeof u);
        return (u & 0x7f800000u) == 0x7f800000u ? 1 : 0;
    }
};

// --- A plan's stage: the forward row pass, one thread per row (the CPU's per-row body).
struct StageForward {
    RowPass p;
    TENON_HD void operator()(size_t r) const {
        const size_t n = p.n;
        float* o = p.O + r * n;
        switch (p.prim) {
            case RowPrim::dense:
                if (!p.bias_done)
                    fn::with_activation(p.act, [&](auto f) {
                        fn::bias_activate_row(f, o, p.b, n, p.zsave ? p.zsave + r * n : nullptr);
                    });
                if (p.softmax && p.normalize) fn::softmax_row(o, n, p.k);
                break;
            case RowPrim::maxout:
                fn::maxout_row(p.zs + r * n * p.nP, p.b, n, p.nP, o, p.which ? p.which + r * n : nullptr);
                break;
            case RowPrim::none:
                if (o != p.in + r * n)
                    for (size_t i = 0; i < n; ++i) o[i] = p.in[r * n + i];
                break;
            case RowPrim::other:
                break;
        }
        if (p.ysave)
            for (size_t i = 0; i < n; ++i) p.ysave[r * n + i] = o[i];
        for (size_t k = 0; k < p.nops; ++k) {
            const RowOp& op = p.ops[k];
            switch (op.kind) {
                case RowOpKind::layernorm:
                    fn::layernorm_row(o, o, n, op.G, op.b, op.save ? op.save + r * n : nullptr,
                                      op.rstd ? op.rstd + r : nullptr);
                    break;
                case RowOpKind::dropout: {
                    if (!p.train) break;
                    float* m = op.save + r * n;
                    if (!op.on) {
                        for (size_t i = 0; i < n; ++i) m[i] = 1.0f;
                    } else if (op.all) {
                        for (size_t i = 0; i < n; ++i) o[i] *= (m[i] = 0.0f);
                    } else {
                        fn::dropout_mask_bits(op.key, r * n, m, n, op.kt, op.kb);
                        for (size_t i = 0; i < n; ++i) o[i] *= m[i];
                    }
                    break;
                }
                case RowOpKind::sigmoid:
                    for (size_t i = 0; i < n; ++i) o[i] = fn::Sigmoid{}(o[i]);
                    if (op.save)
                        for (size_t i = 0; i < n; ++i) op.save[r * n + i] = o[i];
                    break;
                case RowOpKind::add:
                    for (size_t i = 0; i < n; ++i) o[i] += op.skip[r * n + i];
                    break;
            }
        }
    }
};
// The backward row pass as passes over all rows, one per fused operation in reverse (each
// value sees the CPU's operations in the CPU's order; the parameters' gradients are column
// sums in row order).
struct ElemCopy {
    const float* from; float* to;
    TENON_HD void operator()(size_t i) const { to[i] = from[i]; }
};
struct ElemMul {
    float* w; const float* m;
    TENON_HD void operator()(size_t i) const { w[i] *= m[i]; }
};
struct ElemSigmoidBackward {
    float* w; const float* y;
    TENON_HD void operator()(size_t i) const { fn::activation_backward_row(fn::Sigmoid{}, w + i, y + i, nullptr, 1); }
};
struct ElemStore {
    const float* w; float* g; bool assign;
    TENON_HD void operator()(size_t i) const {
        if (assign) g[i] = w[i];
        else g[i] += w[i];
    }
};
struct DenseBackward {
    Activation act; float* w; const float* y; const float* z; bool scale; float k;
    TENON_HD void operator()(size_t i) const {
        const float* yi = y ? y + i : nullptr;
        const float* zi = z ? z + i : nullptr;
        fn::with_activation(act, [&](auto f) { fn::activation_backward_row(f, w + i, yi, zi, 1); });
        if (scale) w[i] *= k;
    }
};

}  // namespace

const char* DeviceOps::name() const noexcept { return TENON_DEVICE_NAME; }

void DeviceOps::rows_forward(const RowPass& p) const {
    if (p.prim == RowPrim::dense && p.bias_done && !p.softmax && !p.ysave && p.nops == 0) return;  // nothing left
    launch(p.rows, StageForward{p});
}

void DeviceOps::rows_backward(const RowPass& p) const {
    const size_t n = p.n, rows = p.rows, all = rows * n;
    if (all == 0) return;
    // The running gradient: dZ in place (dense, layer) or scratch rows (maxout, none).
    thrust::device_vector<float> scratch;
    float* w = p.dz;
    if (p.prim == RowPrim::maxout || p.prim == RowPrim::none) {
        scratch.resize(all);
        w = thrust::raw_pointer_cast(scratch.data());
    }
    if (w != p.dY) launch(all, ElemCopy{p.dY, w});
    for (size_t k = p.nops; k-- > 0;) {
        const RowOp& op = p.ops[k];
        switch (op.kind) {
            case RowOpKind::layernorm:
                launch(n, LayernormParamGrads{w, op.save, rows, n, op.dG, op.db});
                launch(rows, LayernormDx{w, w, op.save, op.rstd, n, op.G});
                break;
            case RowOpKind::dropout: launch(all, ElemMul{w, op.save}); break;
            case RowOpKind::sigmoid: launch(all, ElemSigmoidBackward{w, op.save}); break;
            case RowOpKind::add:
                if (op.skipg) launch(all, ElemStore{w, op.skipg, op.grad_assign});
                break;
        }
    }
    switch (p.prim) {
        case RowPrim::dense: {
            const float* y = p.act_needs_y ? (p.ysave ? p.ysave : p.O) : nullptr;
            launch(all, DenseBackward{p.act, w, y, p.zsave, p.softmax && p.k != 1.0f, p.k});
            launch(n, SumRowsInto{w, rows, n, p.db});
            break;
        }
        case RowPrim::maxout:
            launch(rows, MaxoutBackward{w, p.which, n, p.nP, p.dz});
            launch(n * p.nP, SumRowsInto{p.dz, rows, n * p.nP, p.db});
            break;
        case RowPrim::none:
            if (p.gin) launch(all, ElemStore{w, p.gin, p.dx_assign});
            break;
        case RowPrim::other:
            break;
    }
}

void DeviceOps::gemm(bool ta, bool tb, size_t m, size_t n, size_t k, float alpha, const float* a, size_t lda,
                     const float* b, size_t ldb, float beta, float* c, size_t ldc) const {
    TENON_DEVICE_ENTRY;
    if (m == 0 || n == 0) return;
    if (k == 0) {  // C = beta C (cuBLAS would check the empty operands' leading dimensions)
        for (size_t r = 0; r < m; ++r) {
            if (beta == 0.0f) zero(c + r * ldc, n);
            else scale(c + r * ldc, n, beta);
        }
        return;
    }
    // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: the operands swap, m and
    // n swap, each keeps its transposition and leading dimension.
    const auto st = cublasSgemm(static_cast<cublasHandle_t>(blas_handle()), tb ? CUBLAS_OP_T : CUBLAS_OP_N,
                                ta ? CUBLAS_OP_T : CUBLAS_OP_N, static_cast<int>(n), static_cast<int>(m),
                                static_cast<int>(k), &alpha, b, static_cast<int>(ldb), a, static_cast<int>(lda),
                                &beta, c, static_cast<int>(ldc));
    if (st != CUBLAS_STATUS_SUCCESS) blas_failed(static_cast<int>(st));
#if defined(TENON_DEVICE_CUDA)
    // The caller may read C on the host next (no device arrays yet: docs/cuda.md).
    if (cudaStreamSynchronize(nullptr) != cudaSuccess) blas_failed(-1);
#endif
}

// Row-major Y (m x n) = act(X W^T + b) is column-major D (n x m, ld n) = act(op(A) op(B) + bias) with
// A = W (column-major k x n, ld k; op T), B = X (column-major k x m, ld k; op N): cuBLASLt's bias has
// one value per row of D, broadcast along its columns, added before the ReLU.
bool DeviceOps::gemm_bias_act(Activation act, size_t m, size_t n, size_t k, const float* X, const float* W,
                              const float* /*Wp: this backend does not prepack*/, const float* b, float* Y) const {
    TENON_DEVICE_ENTRY;
    if (!takes_bias_act(act, m, n, k) || !b) return false;
    struct Guard {
        cublasLtMatmulDesc_t desc = nullptr;
        cublasLtMatrixLayout_t a = nullptr, bl = nullptr, d = nullptr;
        ~Guard() {
            if (d) cublasLtMatrixLayoutDestroy(d);
            if (bl) cublasLtMatrixLayoutDestroy(bl);
            if (a) cublasLtMatrixLayoutDestroy(a);
            if (desc) cublasLtMatmulDescDestroy(desc);
        }
    } g;
    const auto ok = [](cublasStatus_t st) {
        if (st != CUBLAS_STATUS_SUCCESS) blas_failed(static_cast<int>(st));
    };
    const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    const cublasLtEpilogue_t epi = act == Activation::relu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS;
    const void* bias = b;
    ok(cublasLtMatmulDescCreate(&g.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    ok(cublasLtMatmulDescSetAttribute(g.desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
    ok(cublasLtMatmulDescSetAttribute(g.desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)));
    ok(cublasLtMatmulDescSetAttribute(g.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof(epi)));
    ok(cublasLtMatmulDescSetAttribute(g.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)));
    const auto i64 = [](size_t v) { return static_cast<std::int64_t>(v); };
    ok(cublasLtMatrixLayoutCreate(&g.a, CUDA_R_32F, k, n, i64(k)));
    ok(cublasLtMatrixLayoutCreate(&g.bl, CUDA_R_32F, k, m, i64(k)));
    ok(cublasLtMatrixLayoutCreate(&g.d, CUDA_R_32F, n, m, i64(n)));
    const float alpha = 1.0f, beta = 0.0f;
    ok(cublasLtMatmul(static_cast<cublasLtHandle_t>(lt_handle()), g.desc, &alpha, W, g.a, X, g.bl, &beta, Y, g.d, Y,
                      g.d, nullptr, nullptr, 0, nullptr));
#if defined(TENON_DEVICE_CUDA)
    if (cudaStreamSynchronize(nullptr) != cudaSuccess) blas_failed(-1);
#endif
    return true;
}

void DeviceOps::bias_activate(Activation act, float* Y, const float* b, size_t rows, size_t n, float* Z) const {
    TENON_DEVICE_ENTRY;
    launch(rows, BiasActivate{act, Y, b, n, Z});
}
void DeviceOps::activate(Activation act, const float* X, float* Y, size_t n) const {
    TENON_DEVICE_ENTRY;
    launch(n, Activate{act, X, Y});
}
void DeviceOps::activation_backward(Activation act, float* d, const float* Y, const float* Z, size_t rows,
                                    size_t n) const {
    TENON_DEVICE_ENTRY;
    if (act == Activation::identity) return;
    launch(rows * n, ActivationBackward{act, d, fn::grad_reads_y(act) ? Y : nullptr, fn::grad_reads_z(act) ? Z : nullptr});
}
void DeviceOps::softmax_rows(float* Y, size_t rows, size_t n, float inv_t) const {
    TENON_DEVICE_ENTRY;
    if (n) launch(rows, SoftmaxRows{Y, n, inv_t});
}
void DeviceOps::scale(float* x, size_t n, float k) const {
    TENON_DEVICE_ENTRY;
    launch(n, Scale{x, k});
}
void DeviceOps::sum_rows_into(const float* d, size_t rows, size_t n, float* db) const {
    TENON_DEVICE_ENTRY;
    launch(n, SumRowsInto{d, rows, n, db});
}
void DeviceOps::maxout(const float* Z, const float* b, size_t rows, size_t nO, size_t nP, float* Y,
                       std::int32_t* which) const {
    TENON_DEVICE_ENTRY;
    TENON_DEVICE_ARG(which, device);
    launch(rows, Maxout{Z, b, nO, nP, Y, which});
}
void DeviceOps::maxout_backward(const float* dY, const std::int32_t* which, size_t rows, size_t nO, size_t nP,
                                float* dZ) const {
    TENON_DEVICE_ENTRY;
    TENON_DEVICE_ARG(which, device);
    launch(rows, MaxoutBackward{dY, which, nO, nP, dZ});
}
void DeviceOps::layernorm(const float* X, float* Y, size_t rows, size_t n, const float* G, const float* b,
                          float* Xhat, float* rstd) const {
    TENON_DEVICE_ENTRY;
    launch(rows, Layernorm{X, Y, n, G, b, Xhat, rstd});
}
void DeviceOps::layernorm_backward(const float* dY, float* dX, const float* Xhat, const float* rstd, size_t rows,
                                   size_t n, const float* G, float* dG, float* db) const {
    TENON_DEVICE_ENTRY;
    launch(n, LayernormParamGrads{dY, Xhat, rows, n, dG, db});  // first: dX may be dY
    launch(rows, LayernormDx{dY, dX, Xhat, rstd, n, G});
}

void DeviceOps::gather_add_rows(const float* table, size_t width, const std::uint32_t* idx, size_t rows, size_t per,
                                float* out) const {
    TENON_DEVICE_ENTRY;
    TENON_DEVICE_ARG(idx, device);
    launch(rows * width, GatherAdd{table, width, idx, per, out});
}
void DeviceOps::scatter_add_rows(float* table, size_t width, const std::uint32_t* idx, size_t rows, size_t per,
                                 const float* d, const float* mask) const {
    TENON_DEVICE_ENTRY;
    TENON_DEVICE_ARG(idx, device);
    const size_t count = rows * per;
    if (count == 0 || width == 0) return;
    thrust::device_vector<std::uint32_t> keys(count);
    thrust::device_vector<size_t> pos(count);
    launch(count, ScatterKeys{idx, rows, per, thrust::raw_pointer_cast(keys.data())});
    thrust::sequence(thrust::device, pos.begin(), pos.end());
    thrust::stable_sort_by_key(thrust::device, keys.begin(), keys.end(), pos.begin());
    launch(count * width, ScatterRuns{table, width, thrust::raw_pointer_cast(keys.data()),
                                      thrust::raw_pointer_cast(pos.data()), count, rows, d, mask});
}

void DeviceOps::sparse_gather_add(const float* W, size_t nO, size_t stride, const std::uint32_t* idx, size_t per,
                                  const float* values, const std::int32_t* lengths, size_t nseg, float* Y) const {
    TENON_DEVICE_ENTRY;
    TENON_DEVICE_ARG(idx, device);
    if (nseg == 0 || nO == 0) return;
    const Ends ends(lengths, nseg);
    launch(nseg * nO, SparseGather{W, nO, stride, idx, per, values, ends.get(), Y});
}
void DeviceOps::sparse_scatter_add(float* dW, size_t nO, size_t stride, const std::uint32_t* idx, size_t per,
                                   const float* values, const std::int32_t* lengths, size_t nseg, const float* dY,
                                   const float* W, float* dvalues) const {
    TENON_DEVICE_ENTRY;
    TENON_DEVICE_ARG(idx, device);
    if (nseg == 0) return;
    const Ends ends(lengths, nseg);
    const size_t nfeat = ends.total, count = nfeat * per * nO;
    if (count) {
        thrust::device_vector<size_t> keys(count), pos(count);
        launch(count, SparseKeys{nO, stride, idx, thrust::raw_pointer_cast(keys.data())});
        thrust::sequence(thrust::device, pos.begin(), pos.end());
        thrust::stable_sort_by_key(thrust::device, keys.begin(), keys.end(), pos.begin());
        launch(count, SparseRuns{dW, nO, per, thrust::raw_pointer_cast(keys.data()),
                                 thrust::raw_pointer_cast(pos.data()), count, values, ends.get(), nseg, dY});
    }
    if (dvalues) launch(nfeat, SparseDvalues{nO, stride, idx, per, ends.get(), nseg, dY, W, dvalues});
}

void DeviceOps::segment_reduce(Reduce red, const float* X, const std::int32_t* lengths, size_t nseg, size_t n, float* Y,
                               std::int32_t* which) const {
    TENON_DEVICE_ENTRY;
    TENON_DEVICE_ARG(which, device);
    if (nseg == 0) return;
    const Ends ends(lengths, nseg);
    launch(nseg, SegmentReduce{red, X, ends.get(), n, Y, which});
}
void DeviceOps::segment_reduce_backward(Reduce red, const float* dY, const std::int32_t* lengths, size_t nseg,
                                        size_t n, const std::int32_t* which, float* dX) const {
    TENON_DEVICE_ENTRY;
    TENON_DEVICE_ARG(which, device);
    if (nseg == 0) return;
    const Ends ends(lengths, nseg);
    launch(nseg, SegmentReduceBackward{red, dY, ends.get(), n, which, dX});
}
void DeviceOps::seq2col(const float* X, const std::int32_t* lengths, size_t nseg, size_t nW, size_t n,
                        float* out) const {
    TENON_DEVICE_ENTRY;
    if (nseg == 0) return;
    const Ends ends(lengths, nseg);
    launch(ends.total, Seq2col{X, ends.get(), nseg, nW, n, out});
}
void DeviceOps::backprop_seq2col(const float* dY, const std::int32_t* lengths, size_t nseg, size_t nW, size_t n,
                                 float* dX) const {
    TENON_DEVICE_ENTRY;
    if (nseg == 0) return;
    const Ends ends(lengths, nseg);
    launch(ends.total, BackpropSeq2col{dY, ends.get(), nseg, nW, n, dX});
}
void DeviceOps::softmax_sequences(float* x, const std::int32_t* lengths, size_t nseg, size_t n) const {
    TENON_DEVICE_ENTRY;
    if (nseg == 0) return;
    const Ends ends(lengths, nseg);
    launch(nseg, SoftmaxSequence{x, ends.get(), n});
}
void DeviceOps::backprop_softmax_sequences(const float* dY, const float* Y, const std::int32_t* lengths, size_t nseg,
                                           size_t n, float* dX) const {
    TENON_DEVICE_ENTRY;
    if (nseg == 0) return;
    const Ends ends(lengths, nseg);
    launch(nseg, BackpropSoftmaxSequence{dY, Y, ends.get(), n, dX});
}
void DeviceOps::scale_rows(const float* X, const float* a, size_t rows, size_t n, float* Y, bool add) const {
    TENON_DEVICE_ENTRY;
    launch(rows, ScaleRows{X, a, n, Y, add});
}
void DeviceOps::row_dots(const float* A, const float* B, size_t rows, size_t n, float* out) const {
    TENON_DEVICE_ENTRY;
    launch(rows, RowDots{A, B, n, out});
}
void DeviceOps::cauchy_similarity(const float* X1, const float* X2, const float* W, size_t rows, size_t n, float* diff,
                                  float* total, float* sim) const {
    TENON_DEVICE_ENTRY;
    launch(rows, Cauchy{X1, X2, W, n, diff, total, sim});
}
void DeviceOps::cauchy_similarity_backward(const float* d_sim, const float* diff, const float* total, const float* W,
                                           size_t rows, size_t n, float* dX1, float* dX2, float* dW) const {
    TENON_DEVICE_ENTRY;
    launch(rows, CauchyBackwardRows{d_sim, diff, total, W, n, dX1, dX2});
    launch(n, CauchyDW{d_sim, diff, total, rows, n, dW});
}
void DeviceOps::copy_rows(const float* from, size_t from_ld, float* to, size_t to_ld, size_t rows, size_t w,
                          bool add) const {
    TENON_DEVICE_ENTRY;
    if (w) launch(rows * w, CopyRows{from, from_ld, to, to_ld, w, add});
}
void DeviceOps::zero(float* x, size_t n) const {
    TENON_DEVICE_ENTRY;
    if (n) thrust::fill_n(thrust::device, x, n, 0.0f);
}
void DeviceOps::axpy(float alpha, const float* x, float* y, size_t n) const {
    TENON_DEVICE_ENTRY;
    launch(n, Axpy{alpha, x, y});
}
void DeviceOps::elementwise(Binary op, const float* a, const float* b, float* y, size_t n) const {
    TENON_DEVICE_ENTRY;
    launch(n, Elementwise{op, a, b, y});
}
void DeviceOps::mask_columns(const float* X, const float* mask, size_t rows, size_t n, float* Y) const {
    TENON_DEVICE_ENTRY;
    if (n) launch(rows * n, MaskColumns{X, mask, n, Y});
}
void DeviceOps::dropout_mask_bits(std::uint64_t key, float* m, size_t n, std::uint64_t kt, std::uint32_t kb) const {
    TENON_DEVICE_ENTRY;
    launch(n, DropoutMaskBits{key, kt, kb, m});
}
void DeviceOps::lstm_cell_forward(float* G, const float* Cprev, float* C, float* H, size_t ldh, size_t rows,
                                  size_t nH) const {
    TENON_DEVICE_ENTRY;
    launch(rows * nH, LstmForward{G, Cprev, C, H, ldh, nH});
}
void DeviceOps::lstm_cell_backward(const float* dH, size_t ldh, const float* dC, const float* G, const float* C,
                                   const float* Cprev, float* dG, float* dCprev, size_t rows, size_t nH) const {
    TENON_DEVICE_ENTRY;
    launch(rows * nH, LstmBackward{dH, ldh, dC, G, C, Cprev, dG, dCprev, nH});
}
void DeviceOps::adam(float* W, float* G, float* m1, float* m2, float* A, size_t n, float gscale, float b1, float b2,
                     float lr_t, float eps, float decay_keep, float wd, bool zero_g) const {
    TENON_DEVICE_ENTRY;
    launch(n, Adam{W, G, m1, m2, A, gscale, b1, b2, lr_t, eps, decay_keep, wd, zero_g});
}
void DeviceOps::sgd(float* W, float* G, float* A, size_t n, float gscale, float lr, float decay_keep, float wd,
                    bool zero_g) const {
    TENON_DEVICE_ENTRY;
    launch(n, Sgd{W, G, A, gscale, lr, decay_keep, wd, zero_g});
}
void DeviceOps::adam_segments(const OptSegment* segs, size_t count, float b1, float b2, float eps, float wd) const {
    TENON_DEVICE_ENTRY;
    if (count == 0) return;
    const SegmentTable t(segs, count);
    launch(t.total(), AdamSegments{t.segs(), t.starts(), count, b1, b2, eps, wd});
}
void DeviceOps::sgd_segments(const OptSegment* segs, size_t count, float wd) const {
    TENON_DEVICE_ENTRY;
    if (count == 0) return;
    const SegmentTable t(segs, count);
    launch(t.total(), SgdSegments{t.segs(), t.starts(), count, wd});
}
double DeviceOps::sum_squares(const float* x, size_t n) const {
    TENON_DEVICE_ENTRY;
    return n ? thrust::transform_reduce(thrust::device, x, x + n, Square{}, 0.0, thrust::plus<double>()) : 0.0;
}
size_t DeviceOps::count_nonfinite(const float* x, size_t n) const {
    TENON_DEVICE_ENTRY;
    return n ? thrust::transform_reduce(thrust::device, x, x + n, IsNonfinite{}, size_t{0}, thrust::plus<size_t>())
             : 0;
}

}  // namespace tenon::TENON_DEVICE_NS
