// The CPU backend (backend/ops.hpp): tenon's runtime-dispatched sgemm for the products, the
// shared functors (backend/functors.hpp) in plain loops for the row passes, the gathers and
// the segment reductions, and the optimizer's vectorised passes (optimizer_kernels.cpp) over
// fixed chunks spread over the worker threads. A plan's fused row passes are here too: they
// split their rows over the threads where a pass is large enough to pay for it.
#include "tenon/backend/ops.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <type_traits>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#endif

#include "kernels.hpp"
#include "tenon/backend/cpu/gemm.hpp"
#include "tenon/backend/cpu/threads.hpp"
#include "tenon/lower/plan.hpp"
#include "tenon/random.hpp"

namespace tenon {
namespace cpu {
namespace {
using namespace lowering;

void stage_forward_rows(const Stage& s, const StageParams& sp, const Ctx& c) {
    const std::size_t n = s.nO, rows = c.rows;
    const bool bias_act_done = sp.bias_act_done;  // (the product's epilogue took them: gemm_bias_act)
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
    // Nothing left to do (a frozen MLP's hidden stage: its dropout is off in predict): no pass.
    bool work = !bias_act_done || ysave;  // (a softmax stage never has its bias in the product)
    for (std::size_t k = 0; k < nops && !work; ++k) work = c.train || s.ops[k].kind != OpKind::dropout;
    if (!work) return;
    std::uint64_t keys[max_ops] = {};
    for (std::size_t k = 0; k < nops; ++k)
        if (s.ops[k].kind == OpKind::dropout && c.train && sp.op[k].on && !sp.op[k].all)
            keys[k] = dropout_key(global_rng());
    auto pass = [&](std::size_t r0, std::size_t r1) {
        for (std::size_t r = r0; r < r1; ++r) {
            float* o = O + r * n;
            switch (s.prim) {
                case Prim::dense:
                    if (bias_act_done) break;
                    fn::with_activation(s.act, [&](auto f) {
                        fn::bias_activate_row(f, o, sp.b, n, zsave ? zsave + r * n : nullptr);
                    });
                    if (s.softmax && sp.normalize) fn::softmax_row(o, n, sp.k);
                    break;
                case Prim::maxout:
                    fn::maxout_row(zs + r * n * s.nP, sp.b, n, s.nP, o, which ? which + r * n : nullptr);
                    break;
                case Prim::none:
                    if (o != in + r * n) std::memcpy(o, in + r * n, n * sizeof(float));
                    break;
                default:  // a layer or a sequence stage: its output is already there
                    break;
            }
            if (ysave) std::memcpy(ysave + r * n, o, n * sizeof(float));
            for (std::size_t k = 0; k < nops; ++k) {
                const Op& op = s.ops[k];
                const OpParams& pp = sp.op[k];
                switch (op.kind) {
                    case OpKind::layernorm:
                        fn::layernorm_row(o, o, n, pp.G, pp.b, saves[k] ? saves[k] + r * n : nullptr,
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
                        for (std::size_t i = 0; i < n; ++i) o[i] = fn::Sigmoid{}(o[i]);
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
    if (rows >= 2 && rows * n >= row_pass_split_work) parallel_ranges(rows, pass);
    else pass(0, rows);
}

void stage_backward_rows(const Stage& s, const StageParams& sp, const Ctx& c) {
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
        float* w = (s.prim != Prim::maxout && s.prim != Prim::none) ? dz + r * n : tmp;
        if (w != dY + r * n) std::memcpy(w, dY + r * n, n * sizeof(float));
        for (std::size_t k = nops; k-- > 0;) {
            const Op& op = s.ops[k];
            const OpParams& pp = sp.op[k];
            switch (op.kind) {
                case OpKind::layernorm:
                    fn::layernorm_row_backward(w, w, saves[k] + r * n, rstds[k][r], n, pp.G, pp.dG, pp.db);
                    break;
                case OpKind::dropout: {
                    const float* m = saves[k] + r * n;
                    for (std::size_t i = 0; i < n; ++i) w[i] *= m[i];
                    break;
                }
                case OpKind::sigmoid:
                    fn::activation_backward_row(fn::Sigmoid{}, w, saves[k] + r * n, nullptr, n);
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
                fn::with_activation(s.act, [&](auto f) { fn::activation_backward_row(f, w, y, z, n); });
                if (s.softmax && sp.k != 1.0f)
                    for (std::size_t i = 0; i < n; ++i) w[i] *= sp.k;
                for (std::size_t i = 0; i < n; ++i) sp.db[i] += w[i];
                break;
            }
            case Prim::maxout: {
                const std::size_t nP = s.nP, m = n * nP;
                float* d = dz + r * m;
                fn::maxout_row_backward(w, which + r * n, n, nP, d);
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
            default:
                break;
        }
    }
}


// The optimizer's passes run over fixed chunks of a parameter, spread over the worker
// threads. The chunks do not depend on the thread count, and the sum of squares adds the
// chunks' sums in chunk order, so a step gives the same bits on any number of threads. Each
// thread takes a contiguous run of chunks (parallel_ranges), as the matrix products split
// their output: a core tends to find its part of the gradient, the weights and the moments
// in its own cache from the previous step.
constexpr std::size_t kChunk = std::size_t{1} << 14;

template <class F>
void over_chunks(std::size_t n, F&& f) {
    const std::size_t chunks = (n + kChunk - 1) / kChunk;
    parallel_ranges(chunks, [&](std::size_t c0, std::size_t c1) {
        for (std::size_t c = c0; c < c1; ++c) {
            const std::size_t begin = c * kChunk;
            f(begin, std::min(n, begin + kChunk) - begin);
        }
    });
}

double chunked_sum_squares(const float* g, std::size_t n) {
    constexpr std::size_t kMaxChunks = 256;
    const std::size_t chunks = (n + kChunk - 1) / kChunk;
    if (chunks > kMaxChunks) {  // a parameter of more than 4M values: serial, in chunk order
        double s = 0;
        for (std::size_t b = 0; b < n; b += kChunk) s += sum_squares(g + b, std::min(kChunk, n - b));
        return s;
    }
    double part[kMaxChunks];
    over_chunks(n, [&](std::size_t b, std::size_t len) { part[b / kChunk] = sum_squares(g + b, len); });
    double s = 0;
    for (std::size_t c = 0; c < chunks; ++c) s += part[c];
    return s;
}

// SparseLinear's passes (Ops::sparse_gather_add / sparse_scatter_add) for N classes known at
// compile time (1 ... 8: a text classifier's labels) or any (N = 0). A row's sums and its
// gradient stay in a local copy (Y and dY may alias W and dW as far as the compiler knows) for
// up to kSparseLocal classes; the additions are the same, in the same order, either way.
constexpr std::size_t kSparseLocal = 16;
template <std::size_t N>
void sparse_gather(const float* W, std::size_t nO_, std::size_t stride, const std::uint32_t* idx, std::size_t per,
                   const float* values, const std::int32_t* lengths, std::size_t nseg, float* Y) noexcept {
    const std::size_t nO = N ? N : nO_;
    const bool local = nO <= kSparseLocal;
    float acc[kSparseLocal];
    std::size_t f = 0;
    for (std::size_t b = 0; b < nseg; ++b) {
        float* y = Y + b * nO;
        float* a = local ? acc : y;
        if (local) std::copy(y, y + nO, acc);
        for (std::size_t end = f + static_cast<std::size_t>(lengths[b]); f < end; ++f) {
            const float v = values[f];
            for (std::size_t k = 0; k < per; ++k) {
                const float* w = W + idx[f * per + k];
                for (std::size_t c = 0; c < nO; ++c) a[c] += w[c * stride] * v;
            }
        }
        if (local) std::copy(acc, acc + nO, y);
    }
}
template <std::size_t N>
void sparse_scatter(float* dW, std::size_t nO_, std::size_t stride, const std::uint32_t* idx, std::size_t per,
                    const float* values, const std::int32_t* lengths, std::size_t nseg, const float* dY, const float* W,
                    float* dvalues) noexcept {
    const std::size_t nO = N ? N : nO_;
    float dl[kSparseLocal];
    std::size_t f = 0;
    for (std::size_t b = 0; b < nseg; ++b) {
        const float* d = dY + b * nO;
        if (nO <= kSparseLocal) {
            std::copy(d, d + nO, dl);
            d = dl;
        }
        for (std::size_t end = f + static_cast<std::size_t>(lengths[b]); f < end; ++f) {
            const float v = values[f];
            float dv = 0.0f;
            for (std::size_t k = 0; k < per; ++k) {
                const std::size_t i = idx[f * per + k];
                float* g = dW + i;
                for (std::size_t c = 0; c < nO; ++c) g[c * stride] += d[c] * v;
                if (dvalues)
                    for (std::size_t c = 0; c < nO; ++c) dv += d[c] * W[i + c * stride];
            }
            if (dvalues) dvalues[f] = dv;
        }
    }
}
// Calls f(std::integral_constant<std::size_t, N>) with N = nO for 1 ... 8, else N = 0.
template <class F>
void with_sparse_width(std::size_t nO, F&& f) {
    switch (nO) {
        case 1: f(std::integral_constant<std::size_t, 1>{}); break;
        case 2: f(std::integral_constant<std::size_t, 2>{}); break;
        case 3: f(std::integral_constant<std::size_t, 3>{}); break;
        case 4: f(std::integral_constant<std::size_t, 4>{}); break;
        case 5: f(std::integral_constant<std::size_t, 5>{}); break;
        case 6: f(std::integral_constant<std::size_t, 6>{}); break;
        case 7: f(std::integral_constant<std::size_t, 7>{}); break;
        case 8: f(std::integral_constant<std::size_t, 8>{}); break;
        default: f(std::integral_constant<std::size_t, 0>{}); break;
    }
}

// The LSTM cell (fn::lstm_cell_one and its backward, the same formulas: tests/recurrent/test_lstm.cpp
// compares the two on every kind of value) eight lanes at a time with
// AVX2 + FMA, picked at run time where the CPU has them: with std::exp and std::tanh one
// value at a time, the cell's 5 transcendental functions per hidden cost more than the
// step's matrix products (about 2.6 ms against 1.1 ms for 800 rows of nH = 128). exp is
// Cephes' expf (a degree-5 polynomial after the reduction by ln 2, about 1 ulp), tanh
// Cephes' tanhf (an odd polynomial for |x| < 0.625, 1 - 2 / (exp(2|x|) + 1) beyond), and the
// sigmoid 1 / (1 + exp(-x)) with a true division, so the results stay within a few ulp of
// the scalar functors'. (A target attribute, not target_clones: no ifunc resolver, so it is
// safe under the sanitizers as well.)
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define TENON_LSTM_AVX2 1
#define TENON_AVX2 __attribute__((target("avx2,fma")))

TENON_AVX2 inline __m256 exp8(__m256 x) {
    x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-88.3762626647949f)), _mm256_set1_ps(88.3762626647949f));
    const __m256 fx =
        _mm256_floor_ps(_mm256_fmadd_ps(x, _mm256_set1_ps(1.44269504088896341f), _mm256_set1_ps(0.5f)));
    x = _mm256_fnmadd_ps(fx, _mm256_set1_ps(0.693359375f), x);
    x = _mm256_fnmadd_ps(fx, _mm256_set1_ps(-2.12194440e-4f), x);
    __m256 y = _mm256_set1_ps(1.9875691500e-4f);
    y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(1.3981999507e-3f));
    y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(8.3334519073e-3f));
    y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(4.1665795894e-2f));
    y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(1.6666665459e-1f));
    y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(5.0000001201e-1f));
    y = _mm256_fmadd_ps(y, _mm256_mul_ps(x, x), _mm256_add_ps(x, _mm256_set1_ps(1.0f)));
    // 2^fx, fx in [-127, 127]: the exponent bits (fx = -127 gives 0, as the true value underflows)
    const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(fx), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(y, _mm256_castsi256_ps(e));
}
TENON_AVX2 inline __m256 sigmoid8(__m256 x) {
    const __m256 one = _mm256_set1_ps(1.0f);
    return _mm256_div_ps(one, _mm256_add_ps(one, exp8(_mm256_sub_ps(_mm256_setzero_ps(), x))));
}
TENON_AVX2 inline __m256 tanh8(__m256 x) {
    const __m256 sign = _mm256_and_ps(x, _mm256_set1_ps(-0.0f));
    const __m256 ax = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), x);
    // |x| >= 0.625: 1 - 2 / (exp(2|x|) + 1)
    const __m256 one = _mm256_set1_ps(1.0f);
    const __m256 big = _mm256_sub_ps(
        one, _mm256_div_ps(_mm256_set1_ps(2.0f), _mm256_add_ps(exp8(_mm256_add_ps(ax, ax)), one)));
    // |x| < 0.625: x + x^3 P(x^2)
    const __m256 z = _mm256_mul_ps(ax, ax);
    __m256 p = _mm256_set1_ps(-5.70498872745e-3f);
    p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(2.06390887954e-2f));
    p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(-5.37397155531e-2f));
    p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(1.33314422036e-1f));
    p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(-3.33332819422e-1f));
    const __m256 small = _mm256_fmadd_ps(_mm256_mul_ps(p, z), ax, ax);
    const __m256 r = _mm256_blendv_ps(small, big, _mm256_cmp_ps(ax, _mm256_set1_ps(0.625f), _CMP_GE_OQ));
    return _mm256_or_ps(r, sign);
}

TENON_AVX2 void lstm_cell_forward_avx2(float* G, const float* Cprev, float* C, float* H, std::size_t ldh,
                                       std::size_t rows, std::size_t nH) {
    const std::size_t nV = nH - nH % 8;
    for (std::size_t r = 0; r < rows; ++r) {
        float* g = G + r * 4 * nH;
        const float* cp = Cprev + r * nH;
        float* c = C + r * nH;
        float* h = H + r * ldh;
        for (std::size_t k = 0; k < nV; k += 8) {
            const __m256 f = sigmoid8(_mm256_loadu_ps(g + k));
            const __m256 i = sigmoid8(_mm256_loadu_ps(g + nH + k));
            const __m256 o = sigmoid8(_mm256_loadu_ps(g + 2 * nH + k));
            const __m256 cand = tanh8(_mm256_loadu_ps(g + 3 * nH + k));
            _mm256_storeu_ps(g + k, f);
            _mm256_storeu_ps(g + nH + k, i);
            _mm256_storeu_ps(g + 2 * nH + k, o);
            _mm256_storeu_ps(g + 3 * nH + k, cand);
            const __m256 ct = _mm256_fmadd_ps(f, _mm256_loadu_ps(cp + k), _mm256_mul_ps(i, cand));
            _mm256_storeu_ps(c + k, ct);
            _mm256_storeu_ps(h + k, _mm256_mul_ps(tanh8(ct), o));
        }
        fn::lstm_cell_row(g, cp, c, h, nH, nV, nH);  // the rest
    }
}

TENON_AVX2 void lstm_cell_backward_avx2(const float* dH, std::size_t ldh, const float* dC, const float* G,
                                        const float* C, const float* Cprev, float* dG, float* dCprev,
                                        std::size_t rows, std::size_t nH) {
    const std::size_t nV = nH - nH % 8;
    const __m256 one = _mm256_set1_ps(1.0f);
    for (std::size_t r = 0; r < rows; ++r) {
        const float* dh = dH + r * ldh;
        const float* dc = dC + r * nH;
        const float* g = G + r * 4 * nH;
        const float* c = C + r * nH;
        const float* cp = Cprev + r * nH;
        float* dg = dG + r * 4 * nH;
        float* dcp = dCprev + r * nH;
        for (std::size_t k = 0; k < nV; k += 8) {
            const __m256 f = _mm256_loadu_ps(g + k), i = _mm256_loadu_ps(g + nH + k),
                         o = _mm256_loadu_ps(g + 2 * nH + k), cand = _mm256_loadu_ps(g + 3 * nH + k);
            const __m256 tc = tanh8(_mm256_loadu_ps(c + k));
            const __m256 vdh = _mm256_loadu_ps(dh + k);
            const __m256 d_o = _mm256_mul_ps(vdh, tc);
            const __m256 dct = _mm256_fmadd_ps(_mm256_mul_ps(vdh, o), _mm256_fnmadd_ps(tc, tc, one), _mm256_loadu_ps(dc + k));
            _mm256_storeu_ps(dcp + k, _mm256_mul_ps(dct, f));
            _mm256_storeu_ps(dg + k, _mm256_mul_ps(_mm256_mul_ps(_mm256_mul_ps(dct, _mm256_loadu_ps(cp + k)), f),
                                                   _mm256_sub_ps(one, f)));
            _mm256_storeu_ps(dg + nH + k, _mm256_mul_ps(_mm256_mul_ps(_mm256_mul_ps(dct, cand), i), _mm256_sub_ps(one, i)));
            _mm256_storeu_ps(dg + 2 * nH + k, _mm256_mul_ps(_mm256_mul_ps(d_o, o), _mm256_sub_ps(one, o)));
            _mm256_storeu_ps(dg + 3 * nH + k, _mm256_mul_ps(_mm256_mul_ps(dct, i), _mm256_fnmadd_ps(cand, cand, one)));
        }
        fn::lstm_cell_row_backward(dh, dc, g, c, cp, dg, dcp, nH, nV, nH);  // the rest
    }
}

// The CPU has AVX2 + FMA and the kernels' target uses them (TENON_GEMM_TARGET=generic or
// eigen-v3 forces the functors' plain loops here too, so that path can be checked anywhere).
bool have_avx2_fma() {
    static const bool yes = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                            (std::strcmp(cpu::gemm_target(), "x86-64-v3") == 0 ||
                             std::strcmp(cpu::gemm_target(), "x86-64-v4") == 0);
    return yes;
}
#endif


class CpuOps final : public Ops {
public:
    const char* name() const noexcept override { return "cpu"; }

    void gemm(bool ta, bool tb, std::size_t m, std::size_t n, std::size_t k, float alpha, const float* a,
              std::size_t lda, const float* b, std::size_t ldb, float beta, float* c, std::size_t ldc) const override {
        sgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    }
    // tenon's kernels prepack (their panels: src/cpu/sgemm_packed.hpp); Eigen's do not.
    std::size_t prepacked_size(std::size_t k, std::size_t n) const override { return cpu::sgemm_packed_size(k, n); }
    void prepack(bool tb, std::size_t k, std::size_t n, const float* b, std::size_t ldb, float* packed) const override {
        cpu::sgemm_pack_b(tb, k, n, b, ldb, packed);
    }
    void gemm_prepacked(bool ta, bool tb, std::size_t m, std::size_t n, std::size_t k, float alpha, const float* a,
                        std::size_t lda, const float* b, std::size_t ldb, const float* packed, float beta, float* c,
                        std::size_t ldc) const override {
        cpu::sgemm_prepacked(ta, tb, m, n, k, alpha, a, lda, b, ldb, packed, beta, c, ldc);
    }

    // The bias and activation on each tile of the product as the kernel finishes it (in L1),
    // fn::bias_activate_row as the row pass: the same values as the product and then the pass.
    bool gemm_bias_act(Activation act, std::size_t m, std::size_t n, std::size_t k, const float* X, const float* W,
                       const float* Wp, const float* b, float* Y) const override {
        struct Bias {
            const float* b;
        } ctx{b};
        const cpu::Epilogue epi{fn::with_activation(act, [](auto f) {
                                    return +[](const void* p, float* c, std::size_t ldc, std::size_t rows,
                                               std::size_t cols, std::size_t j0) {
                                        const float* bias = static_cast<const Bias*>(p)->b + j0;
                                        for (std::size_t r = 0; r < rows; ++r)
                                            fn::bias_activate_row(decltype(f){}, c + r * ldc, bias, cols, nullptr);
                                    };
                                }),
                                &ctx};
        cpu::sgemm_epilogue(false, true, m, n, k, X, k, W, k, Wp, Y, n, epi);
        return true;
    }

    void bias_activate(Activation act, float* Y, const float* b, std::size_t rows, std::size_t n,
                       float* Z) const override {
        fn::with_activation(act, [&](auto f) {
            for (std::size_t r = 0; r < rows; ++r) fn::bias_activate_row(f, Y + r * n, b, n, Z ? Z + r * n : nullptr);
        });
    }
    void activate(Activation act, const float* X, float* Y, std::size_t n) const override {
        fn::with_activation(act, [&](auto f) {
            for (std::size_t i = 0; i < n; ++i) Y[i] = f(X[i]);
        });
    }
    void activation_backward(Activation act, float* d, const float* Y, const float* Z, std::size_t rows,
                             std::size_t n) const override {
        if (act == Activation::identity) return;
        // elementwise: the rows are one run of rows * n values
        fn::with_activation(act, [&](auto f) { fn::activation_backward_row(f, d, Y, Z, rows * n); });
    }
    void softmax_rows(float* Y, std::size_t rows, std::size_t n, float inv_t) const override {
        for (std::size_t r = 0; r < rows; ++r) fn::softmax_row(Y + r * n, n, inv_t);
    }
    void scale(float* x, std::size_t n, float k) const override {
        for (std::size_t i = 0; i < n; ++i) x[i] *= k;
    }
    void sum_rows_into(const float* d, std::size_t rows, std::size_t n, float* db) const override {
        for (std::size_t r = 0; r < rows; ++r, d += n)
            for (std::size_t o = 0; o < n; ++o) db[o] += d[o];
    }
    void maxout(const float* Z, const float* b, std::size_t rows, std::size_t nO, std::size_t nP, float* Y,
                std::int32_t* which) const override {
        for (std::size_t r = 0; r < rows; ++r)
            fn::maxout_row(Z + r * nO * nP, b, nO, nP, Y + r * nO, which ? which + r * nO : nullptr);
    }
    void maxout_backward(const float* dY, const std::int32_t* which, std::size_t rows, std::size_t nO, std::size_t nP,
                         float* dZ) const override {
        for (std::size_t r = 0; r < rows; ++r)
            fn::maxout_row_backward(dY + r * nO, which + r * nO, nO, nP, dZ + r * nO * nP);
    }
    void layernorm(const float* X, float* Y, std::size_t rows, std::size_t n, const float* G, const float* b,
                   float* Xhat, float* rstd) const override {
        for (std::size_t r = 0; r < rows; ++r)
            fn::layernorm_row(X + r * n, Y + r * n, n, G, b, Xhat ? Xhat + r * n : nullptr, rstd ? rstd + r : nullptr);
    }
    void layernorm_backward(const float* dY, float* dX, const float* Xhat, const float* rstd, std::size_t rows,
                            std::size_t n, const float* G, float* dG, float* db) const override {
        for (std::size_t r = 0; r < rows; ++r)
            fn::layernorm_row_backward(dY + r * n, dX + r * n, Xhat + r * n, rstd[r], n, G, dG, db);
    }

    void gather_add_rows(const float* table, std::size_t width, const std::uint32_t* idx, std::size_t rows,
                         std::size_t per, float* out) const override {
        if (width == 0) return;
        for (std::size_t r = 0; r < rows; ++r) {
            float* y = out + r * width;
            const std::uint32_t* k = idx + r * per;
            if (per == 0) {
                std::fill(y, y + width, 0.0f);
                continue;
            }
            std::memcpy(y, table + std::size_t{k[0]} * width, width * sizeof(float));
            for (std::size_t q = 1; q < per; ++q) {
                const float* e = table + std::size_t{k[q]} * width;
                for (std::size_t j = 0; j < width; ++j) y[j] += e[j];
            }
        }
    }
    void scatter_add_rows(float* table, std::size_t width, const std::uint32_t* idx, std::size_t rows,
                          std::size_t per, const float* d, const float* mask) const override {
        for (std::size_t q = 0; q < per; ++q)
            for (std::size_t r = 0; r < rows; ++r) {
                float* e = table + std::size_t{idx[r * per + q]} * width;
                const float* g = d + r * width;
                if (mask)
                    for (std::size_t j = 0; j < width; ++j) e[j] += g[j] * mask[j];
                else
                    for (std::size_t j = 0; j < width; ++j) e[j] += g[j];
            }
    }

    void sparse_gather_add(const float* W, std::size_t nO, std::size_t stride, const std::uint32_t* idx,
                           std::size_t per, const float* values, const std::int32_t* lengths, std::size_t nseg,
                           float* Y) const override {
        with_sparse_width(nO, [&](auto n) { sparse_gather<n()>(W, nO, stride, idx, per, values, lengths, nseg, Y); });
    }
    void sparse_scatter_add(float* dW, std::size_t nO, std::size_t stride, const std::uint32_t* idx,
                            std::size_t per, const float* values, const std::int32_t* lengths, std::size_t nseg,
                            const float* dY, const float* W, float* dvalues) const override {
        with_sparse_width(nO, [&](auto n) {
            sparse_scatter<n()>(dW, nO, stride, idx, per, values, lengths, nseg, dY, W, dvalues);
        });
    }

    void segment_reduce(Reduce red, const float* X, const std::int32_t* lengths, std::size_t nseg, std::size_t n,
                        float* Y, std::int32_t* which) const override {
        for (std::size_t b = 0; b < nseg; ++b) {
            const auto len = static_cast<std::size_t>(lengths[b]);
            fn::segment_reduce_one(red, X, len, n, Y + b * n, which ? which + b * n : nullptr);
            X += len * n;
        }
    }
    void segment_reduce_backward(Reduce red, const float* dY, const std::int32_t* lengths, std::size_t nseg,
                                 std::size_t n, const std::int32_t* which, float* dX) const override {
        for (std::size_t b = 0; b < nseg; ++b) {
            const auto len = static_cast<std::size_t>(lengths[b]);
            fn::segment_reduce_one_backward(red, dY + b * n, len, n, which ? which + b * n : nullptr, dX);
            dX += len * n;
        }
    }

    void seq2col(const float* X, const std::int32_t* lengths, std::size_t nseg, std::size_t nW, std::size_t n,
                 float* out) const override {
        const std::size_t w = (2 * nW + 1) * n;
        for (std::size_t b = 0, start = 0; b < nseg; ++b) {
            const std::size_t end = start + static_cast<std::size_t>(lengths[b]);
            for (std::size_t j = start; j < end; ++j) fn::seq2col_row(X, j, start, end, nW, n, out + j * w);
            start = end;
        }
    }
    void backprop_seq2col(const float* dY, const std::int32_t* lengths, std::size_t nseg, std::size_t nW,
                          std::size_t n, float* dX) const override {
        for (std::size_t b = 0, start = 0; b < nseg; ++b) {
            const std::size_t end = start + static_cast<std::size_t>(lengths[b]);
            for (std::size_t x = start; x < end; ++x) fn::backprop_seq2col_row(dY, x, start, end, nW, n, dX + x * n);
            start = end;
        }
    }
    void softmax_sequences(float* x, const std::int32_t* lengths, std::size_t nseg, std::size_t n) const override {
        for (std::size_t b = 0; b < nseg; ++b) {
            const auto len = static_cast<std::size_t>(lengths[b]);
            fn::softmax_sequence_one(x, len, n);
            x += len * n;
        }
    }
    void backprop_softmax_sequences(const float* dY, const float* Y, const std::int32_t* lengths, std::size_t nseg,
                                    std::size_t n, float* dX) const override {
        for (std::size_t b = 0; b < nseg; ++b) {
            const std::size_t len = static_cast<std::size_t>(lengths[b]), off = len * n;
            fn::backprop_softmax_sequence_one(dY, Y, len, n, dX);
            dY += off;
            Y += off;
            dX += off;
        }
    }
    void scale_rows(const float* X, const float* a, std::size_t rows, std::size_t n, float* Y,
                    bool add) const override {
        for (std::size_t r = 0; r < rows; ++r) fn::scale_row(X + r * n, a[r], n, Y + r * n, add);
    }
    void row_dots(const float* A, const float* B, std::size_t rows, std::size_t n, float* out) const override {
        for (std::size_t r = 0; r < rows; ++r) out[r] = fn::row_dot(A + r * n, B + r * n, n);
    }
    void cauchy_similarity(const float* X1, const float* X2, const float* W, std::size_t rows, std::size_t n,
                           float* diff, float* total, float* sim) const override {
        for (std::size_t r = 0; r < rows; ++r)
            sim[r] = fn::cauchy_row(X1 + r * n, X2 + r * n, W, n, diff ? diff + r * n : nullptr,
                                    total ? total + r : nullptr);
    }
    void cauchy_similarity_backward(const float* d_sim, const float* diff, const float* total, const float* W,
                                    std::size_t rows, std::size_t n, float* dX1, float* dX2,
                                    float* dW) const override {
        for (std::size_t r = 0; r < rows; ++r) {  // (dW_j gets its terms in row order, as the device's columns)
            const float dt = fn::cauchy_d_total(d_sim[r], total[r]);
            const float* d = diff + r * n;
            fn::cauchy_backward_row(dt, d, W, n, dX1 + r * n, dX2 + r * n);
            for (std::size_t j = 0; j < n; ++j) dW[j] += fn::cauchy_dW_term(dt, d[j]);
        }
    }
    void copy_rows(const float* from, std::size_t from_ld, float* to, std::size_t to_ld, std::size_t rows,
                   std::size_t w, bool add) const override {
        if (!add && from_ld == w && to_ld == w) {
            if (rows && w) std::memcpy(to, from, rows * w * sizeof(float));
            return;
        }
        for (std::size_t r = 0; r < rows; ++r, from += from_ld, to += to_ld) {
            if (add)
                for (std::size_t j = 0; j < w; ++j) to[j] += from[j];
            else if (w)
                std::memcpy(to, from, w * sizeof(float));
        }
    }
    void zero(float* x, std::size_t n) const override {
        if (n) std::memset(x, 0, n * sizeof(float));
    }
    void axpy(float alpha, const float* x, float* y, std::size_t n) const override { fn::axpy(alpha, x, y, n); }
    void elementwise(Binary op, const float* a, const float* b, float* y, std::size_t n) const override {
        fn::elementwise(op, a, b, y, n);
    }
    void mask_columns(const float* X, const float* mask, std::size_t rows, std::size_t n, float* Y) const override {
        for (std::size_t r = 0; r < rows; ++r) fn::elementwise(Binary::mul, X + r * n, mask, Y + r * n, n);
    }
    void dropout_mask_bits(std::uint64_t key, float* m, std::size_t n, std::uint64_t kt,
                           std::uint32_t kb) const override {
        fn::dropout_mask_bits(key, 0, m, n, kt, kb);
    }
    void lstm_cell_forward(float* G, const float* Cprev, float* C, float* H, std::size_t ldh, std::size_t rows,
                           std::size_t nH) const override {
#ifdef TENON_LSTM_AVX2
        if (nH >= 8 && have_avx2_fma()) return lstm_cell_forward_avx2(G, Cprev, C, H, ldh, rows, nH);
#endif
        for (std::size_t r = 0; r < rows; ++r)
            fn::lstm_cell_row(G + r * 4 * nH, Cprev + r * nH, C + r * nH, H + r * ldh, nH);
    }
    void lstm_cell_backward(const float* dH, std::size_t ldh, const float* dC, const float* G, const float* C,
                            const float* Cprev, float* dG, float* dCprev, std::size_t rows,
                            std::size_t nH) const override {
#ifdef TENON_LSTM_AVX2
        if (nH >= 8 && have_avx2_fma())
            return lstm_cell_backward_avx2(dH, ldh, dC, G, C, Cprev, dG, dCprev, rows, nH);
#endif
        for (std::size_t r = 0; r < rows; ++r)
            fn::lstm_cell_row_backward(dH + r * ldh, dC + r * nH, G + r * 4 * nH, C + r * nH, Cprev + r * nH,
                                       dG + r * 4 * nH, dCprev + r * nH, nH);
    }

    void stage_forward_rows(const Stage& s, const StageParams& sp, const Ctx& c) const override {
        cpu::stage_forward_rows(s, sp, c);
    }
    void stage_backward_rows(const Stage& s, const StageParams& sp, const Ctx& c) const override {
        cpu::stage_backward_rows(s, sp, c);
    }

    void adam(float* W, float* G, float* m1, float* m2, float* A, std::size_t n, float gscale, float b1, float b2,
              float lr_t, float eps, float decay_keep, float wd, bool zero_g) const override {
        over_chunks(n, [&](std::size_t b, std::size_t len) {
            adam_pass(W + b, G + b, m1 + b, m2 + b, A ? A + b : nullptr, len, gscale, b1, b2, lr_t, eps, decay_keep,
                      wd, zero_g);
        });
    }
    void sgd(float* W, float* G, float* A, std::size_t n, float gscale, float lr, float decay_keep, float wd,
             bool zero_g) const override {
        over_chunks(n, [&](std::size_t b, std::size_t len) {
            sgd_pass(W + b, G + b, A ? A + b : nullptr, len, gscale, lr, decay_keep, wd, zero_g);
        });
    }
    double sum_squares(const float* x, std::size_t n) const override {
        if (n == 0) return 0.0;
        const double s = chunked_sum_squares(x, n);
        if (std::isfinite(s) || count_nonfinite(x, n) != 0) return s;
        // Finite values too large for the float partial sums (above ~1e19): again in double.
        double d = 0.0;
        for (std::size_t i = 0; i < n; ++i) d += double(x[i]) * double(x[i]);
        return d;
    }
    std::size_t count_nonfinite(const float* x, std::size_t n) const override { return cpu::count_nonfinite(x, n); }
};

std::atomic<const Ops*> current{nullptr};
}  // namespace
}  // namespace cpu

const Ops& cpu_ops() noexcept {
    static const cpu::CpuOps ops;
    return ops;
}
const Ops& current_ops() noexcept {
    const Ops* p = cpu::current.load(std::memory_order_acquire);
    return p ? *p : cpu_ops();
}
void set_current_ops(const Ops& ops) noexcept { cpu::current.store(&ops, std::memory_order_release); }

}  // namespace tenon
