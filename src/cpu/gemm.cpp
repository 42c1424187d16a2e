// Picks the GEMM kernel for this CPU once, at first use, and splits a product over the
// worker threads (include/tenon/backend/cpu/threads.hpp).
//
// Kernels, best first: tenon's packed SGEMM for x86-64-v4 (AVX-512) and for x86-64-v3
// (AVX2 + FMA) (src/cpu/sgemm_packed.hpp), and Eigen's product compiled for plain x86-64
// (any CPU). TENON_GEMM_TARGET=x86-64-v4 | x86-64-v3 | generic | eigen-v3 in the environment
// forces one (where the CPU has it); eigen-v3 is Eigen compiled for x86-64-v3, kept to
// compare with.
#include "tenon/backend/cpu/gemm.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "tenon/backend/cpu/threads.hpp"

namespace tenon::cpu {

using GemmFn = void (*)(bool, bool, std::size_t, std::size_t, std::size_t, float, const float*, std::size_t,
                        const float*, std::size_t, float, float*, std::size_t);
void sgemm_generic(bool, bool, std::size_t, std::size_t, std::size_t, float, const float*, std::size_t, const float*,
                   std::size_t, float, float*, std::size_t);
#if TENON_HAVE_X86_64_V3
void sgemm_x86_64_v3(bool, bool, std::size_t, std::size_t, std::size_t, float, const float*, std::size_t,
                     const float*, std::size_t, float, float*, std::size_t);
void sgemm_packed_avx2(bool, bool, std::size_t, std::size_t, std::size_t, float, const float*, std::size_t,
                       const float*, std::size_t, float, float*, std::size_t);
#endif
#if TENON_HAVE_X86_64_V4
void sgemm_packed_avx512(bool, bool, std::size_t, std::size_t, std::size_t, float, const float*, std::size_t,
                         const float*, std::size_t, float, float*, std::size_t);
#endif
// A kernel's prepacked op(B) (src/cpu/sgemm_packed.hpp): its size, the packing, the product.
using PackedSizeFn = std::size_t (*)(std::size_t, std::size_t);
using PackFn = void (*)(bool, std::size_t, std::size_t, const float*, std::size_t, float*);
using PrepackedFn = void (*)(bool, bool, std::size_t, std::size_t, std::size_t, float, const float*, std::size_t,
                             const float*, std::size_t, const float*, std::size_t, std::size_t, float, float*,
                             std::size_t, const Epilogue*);
#define TENON_DECLARE_PREPACKED(suffix)                                                                            \
    std::size_t sgemm_packed_size_##suffix(std::size_t, std::size_t);                                               \
    void sgemm_pack_b_##suffix(bool, std::size_t, std::size_t, const float*, std::size_t, float*);                \
    void sgemm_prepacked_##suffix(bool, bool, std::size_t, std::size_t, std::size_t, float, const float*,          \
                                  std::size_t, const float*, std::size_t, const float*, std::size_t, std::size_t, \
                                  float, float*, std::size_t, const Epilogue*);
#if TENON_HAVE_X86_64_V3
TENON_DECLARE_PREPACKED(avx2)
#endif
#if TENON_HAVE_X86_64_V4
TENON_DECLARE_PREPACKED(avx512)
#endif
#undef TENON_DECLARE_PREPACKED

namespace {
struct Choice {
    GemmFn fn;
    const char* name;
    bool splits;  // whether the result is the same for any split of C (tenon's kernels)
    // tenon's kernels' prepacked op(B) (null for Eigen's: no prepacking)
    PackedSizeFn packed_size = nullptr;
    PackFn pack = nullptr;
    PrepackedFn prepacked = nullptr;
};
Choice choose() {
    const char* forced = std::getenv("TENON_GEMM_TARGET");
    auto wants = [&](const char* name) { return !forced || std::strcmp(forced, name) == 0; };
#if TENON_HAVE_X86_64_V3 || TENON_HAVE_X86_64_V4
    __builtin_cpu_init();
#endif
#if TENON_HAVE_X86_64_V4
    if (wants("x86-64-v4") && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
        __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq"))
        return {sgemm_packed_avx512, "x86-64-v4", true, sgemm_packed_size_avx512, sgemm_pack_b_avx512,
                sgemm_prepacked_avx512};
#endif
#if TENON_HAVE_X86_64_V3
    const bool v3 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    if (v3 && forced && std::strcmp(forced, "eigen-v3") == 0) return {sgemm_x86_64_v3, "eigen-v3", false};
    if (v3 && wants("x86-64-v3"))
        return {sgemm_packed_avx2, "x86-64-v3", true, sgemm_packed_size_avx2, sgemm_pack_b_avx2, sgemm_prepacked_avx2};
#endif
    (void)wants;
    return {sgemm_generic, "generic", false};
}
const Choice& chosen() {
    static const Choice c = choose();
    return c;
}

// Below this many multiply-adds a product runs on one thread (waking a worker costs ~1 us).
constexpr std::size_t kParallelWork = std::size_t{1} << 16;
// Splits of C's columns are multiples of this (a multiple of every kernel's tile width and
// vector length, so that each value is computed the same way in every split).
constexpr std::size_t kColumnAlign = 32;

struct Job {
    GemmFn fn;
    bool ta, tb;
    std::size_t m, n, k;
    float alpha;
    const float* a;
    std::size_t lda;
    const float* b;
    std::size_t ldb;
    float beta;
    float* c;
    std::size_t ldc;
    bool by_rows;
    std::size_t step, parts;
    PrepackedFn prepacked;  // with pb or epi: op(B) prepacked (sgemm_prepacked) and/or an epilogue
    const float* pb;
    const Epilogue* epi = nullptr;
};

// Part `part` of a product: rows or columns [begin, end) of C, by the kernel (with the
// prepacked op(B), whose columns it starts at `begin` when the split is by columns).
// A kernel without an epilogue of its own (Eigen's) runs it over its whole part afterwards.
void run_range(const Job& j, std::size_t begin, std::size_t end) {
    const bool own = j.prepacked && (j.pb || j.epi);
    if (j.by_rows) {
        const float* a = j.ta ? j.a + begin : j.a + begin * j.lda;
        float* c = j.c + begin * j.ldc;
        if (own)
            j.prepacked(j.ta, j.tb, end - begin, j.n, j.k, j.alpha, a, j.lda, j.b, j.ldb, j.pb, j.n, 0, j.beta, c,
                        j.ldc, j.epi);
        else
            j.fn(j.ta, j.tb, end - begin, j.n, j.k, j.alpha, a, j.lda, j.b, j.ldb, j.beta, c, j.ldc);
        if (!own && j.epi) j.epi->fn(j.epi->ctx, c, j.ldc, end - begin, j.n, 0);
    } else {
        const float* b = j.tb ? j.b + begin * j.ldb : j.b + begin;
        float* c = j.c + begin;
        if (own)
            j.prepacked(j.ta, j.tb, j.m, end - begin, j.k, j.alpha, j.a, j.lda, b, j.ldb, j.pb, j.n, begin, j.beta,
                        c, j.ldc, j.epi);
        else
            j.fn(j.ta, j.tb, j.m, end - begin, j.k, j.alpha, j.a, j.lda, b, j.ldb, j.beta, c, j.ldc);
        if (!own && j.epi) j.epi->fn(j.epi->ctx, c, j.ldc, j.m, end - begin, begin);
    }
}

void run_part(std::size_t part, void* ctx) {
    const Job& j = *static_cast<const Job*>(ctx);
    const std::size_t total = j.by_rows ? j.m : j.n;
    const std::size_t begin = part * j.step, end = std::min(total, begin + j.step);
    if (begin >= end) return;
    run_range(j, begin, end);
}

// The product of sgemm and sgemm_prepacked: split over the threads, or on the calling one.
void run(Job& j, std::size_t threads) {
    if (threads <= 1 || j.m * j.n * j.k < kParallelWork) {
        j.by_rows = true;
        run_range(j, 0, j.m);
        return;
    }
    // Each part packs all of op(B) when C is split by rows, all of op(A) when by columns.
    // Rows unless that packs much more (n > 2m: a dense layer's forward, W being op(B)):
    // a part of whole rows is one contiguous piece of C, which matters when C's traffic
    // dominates (dW = dZ^T X at a small batch: 512x32x784 takes 122 us on 2 threads by
    // rows, 151 us by columns). Rows only where the kernel takes the same path for a part
    // as for the whole (the packed path: more than 4 rows in every part).
    const std::size_t col_parts = (j.n + kColumnAlign - 1) / kColumnAlign;
    j.by_rows = j.m > 4 * threads && j.n <= 2 * j.m;
    if (j.by_rows) {
        j.step = (j.m + threads - 1) / threads;
        if (j.step <= 4) j.step = 5;
        j.parts = (j.m + j.step - 1) / j.step;
    } else {
        const std::size_t per = (col_parts + threads - 1) / threads;
        j.step = per * kColumnAlign;
        j.parts = (j.n + j.step - 1) / j.step;
    }
    if (j.parts <= 1) {
        j.by_rows = true;
        run_range(j, 0, j.m);
        return;
    }
    parallel_run(j.parts, run_part, &j);
}
}  // namespace

void sgemm(bool ta, bool tb, std::size_t m, std::size_t n, std::size_t k, float alpha, const float* a, std::size_t lda,
           const float* b, std::size_t ldb, float beta, float* c, std::size_t ldc) {
    const Choice& ch = chosen();
    Job j{ch.fn, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, true, 0, 0, nullptr, nullptr};
    run(j, ch.splits ? num_threads() : 1);
}

std::size_t sgemm_packed_size(std::size_t k, std::size_t n) {
    const Choice& ch = chosen();
    return ch.packed_size ? ch.packed_size(k, n) : 0;
}

void sgemm_pack_b(bool trans_b, std::size_t k, std::size_t n, const float* b, std::size_t ldb, float* packed) {
    const Choice& ch = chosen();
    if (ch.pack) ch.pack(trans_b, k, n, b, ldb, packed);
}

void sgemm_prepacked(bool ta, bool tb, std::size_t m, std::size_t n, std::size_t k, float alpha, const float* a,
                     std::size_t lda, const float* b, std::size_t ldb, const float* packed, float beta, float* c,
                     std::size_t ldc) {
    const Choice& ch = chosen();
    Job j{ch.fn, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, true, 0, 0, ch.prepacked,
          ch.prepacked ? packed : nullptr};
    run(j, ch.splits ? num_threads() : 1);
}

void sgemm_epilogue(bool ta, bool tb, std::size_t m, std::size_t n, std::size_t k, const float* a, std::size_t lda,
                    const float* b, std::size_t ldb, const float* packed, float* c, std::size_t ldc,
                    const Epilogue& epi) {
    const Choice& ch = chosen();
    Job j{ch.fn, ta, tb, m, n, k, 1.0f, a, lda, b, ldb, 0.0f, c, ldc, true, 0, 0, ch.prepacked,
          ch.prepacked ? packed : nullptr, &epi};
    run(j, ch.splits ? num_threads() : 1);
}

const char* gemm_target() { return chosen().name; }

// Run by each new worker thread before it takes work (src/cpu/threads.cpp): a product on each
// path of the kernel makes the thread's packing buffers (and the registration of their
// destructors), so that no product allocates once the pool is running.
void prepare_worker_thread() {
    float a[8 * 4] = {}, b[4 * 4] = {}, c[8 * 4] = {};
    const Choice& ch = chosen();
    ch.fn(false, false, 8, 4, 4, 1.0f, a, 4, b, 4, 0.0f, c, 4);  // packed path (m > 4)
    ch.fn(true, true, 1, 4, 4, 1.0f, a, 1, b, 4, 0.0f, c, 4);    // small-m path, op(A) = A^T
}

}  // namespace tenon::cpu
