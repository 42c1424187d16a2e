// The CPU matrix product (src/cpu/gemm.cpp and the kernels it picks) against a plain
// double-precision reference, for every transpose combination, alpha/beta, edge sizes around
// the kernels' tiles and blocks, strided leading dimensions; and the same bits for every
// thread count (determinism). meson runs this program once per kernel target
// (TENON_GEMM_TARGET), so each kernel the machine has is checked.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "tenon/backend/cpu/gemm.hpp"
#include "tenon/backend/cpu/threads.hpp"
#include "tenon/random.hpp"

using namespace tenon;

namespace {
struct Problem {
    bool ta, tb;
    std::size_t m, n, k, lda, ldb, ldc;
    float alpha, beta;
    std::vector<float> a, b, c;
};
Problem make(bool ta, bool tb, std::size_t m, std::size_t n, std::size_t k, float alpha, float beta,
             std::size_t pad, std::uint64_t seed) {
    Problem p{ta, tb, m, n, k, (ta ? m : k) + pad, (tb ? k : n) + pad, n + pad, alpha, beta, {}, {}, {}};
    Rng rng(seed);
    auto fill = [&](std::vector<float>& v, std::size_t size) {
        v.resize(size);
        for (float& x : v) x = static_cast<float>(rng.uniform(-1.0, 1.0));
    };
    fill(p.a, (ta ? k : m) * p.lda);
    fill(p.b, (tb ? n : k) * p.ldb);
    fill(p.c, m * p.ldc);
    return p;
}
std::vector<float> run(const Problem& p) {
    std::vector<float> c = p.c;
    cpu::sgemm(p.ta, p.tb, p.m, p.n, p.k, p.alpha, p.a.data(), p.lda, p.b.data(), p.ldb, p.beta, c.data(), p.ldc);
    return c;
}
// The packed product's bits for p: run(p) from 5 rows on; for 1-4 rows, p's rows of op(A) as
// the first rows of a 5-row product (sgemm's own 1-4-row path takes dot products, which round
// differently; sgemm_prepacked's sums each row as inside a larger batch).
std::vector<float> run_as_batch(const Problem& p) {
    if (p.m >= 5) return run(p);
    Problem q = p;
    q.ta = false;
    q.m = 5;
    q.lda = p.k;
    q.a.assign(q.m * q.lda, 0.25f);
    for (std::size_t i = 0; i < p.m; ++i)
        for (std::size_t j = 0; j < p.k; ++j) q.a[i * q.lda + j] = p.ta ? p.a[j * p.lda + i] : p.a[i * p.lda + j];
    q.c.resize(q.m * q.ldc, 0.5f);
    std::vector<float> c = run(q);
    c.resize(p.m * p.ldc);
    return c;
}
// Half of A's values zero (a ReLU's output, an image's background).
void zero_half(Problem& p, std::uint64_t seed) {
    Rng rng(seed);
    for (float& x : p.a)
        if (rng.uniform(0.0, 1.0) < 0.5) x = 0.0f;
}
// Returns the number of wrong values (padding must be untouched).
std::size_t check(const Problem& p, const std::vector<float>& c) {
    std::size_t bad = 0;
    for (std::size_t i = 0; i < p.m; ++i)
        for (std::size_t j = 0; j < p.ldc; ++j) {
            const float got = c[i * p.ldc + j];
            if (j >= p.n) {
                bad += got != p.c[i * p.ldc + j];
                continue;
            }
            double s = 0, mag = 0;
            for (std::size_t q = 0; q < p.k; ++q) {
                const double x = p.ta ? p.a[q * p.lda + i] : p.a[i * p.lda + q];
                const double y = p.tb ? p.b[j * p.ldb + q] : p.b[q * p.ldb + j];
                s += x * y;
                mag += std::abs(x * y);
            }
            const double want = p.alpha * s + (p.beta == 0.0f ? 0.0 : p.beta * double(p.c[i * p.ldc + j]));
            const double tol = 1e-5 * (std::abs(p.alpha) * mag + std::abs(p.beta) + 1.0);
            bad += !(std::abs(got - want) <= tol);
        }
    return bad;
}
}  // namespace

TEST_CASE("sgemm agrees with the reference on every shape class", "[gemm]") {
    INFO("kernel " << cpu::gemm_target());
    std::uint64_t seed = 1;
    const std::size_t sizes[][3] = {{1, 1, 1},    {1, 10, 784},   {3, 512, 512}, {4, 37, 9},    {5, 5, 5},
                                    {7, 33, 300}, {13, 17, 257},  {128, 10, 512}, {10, 512, 128}, {29, 64, 1},
                                    {130, 70, 600}, {250, 100, 40}, {64, 1, 64},   {2, 3, 0}};
    for (auto [m, n, k] : sizes)
        for (int t = 0; t < 4; ++t)
            for (auto [alpha, beta] : {std::pair{1.0f, 0.0f}, {1.0f, 1.0f}, {0.5f, -2.0f}}) {
                const Problem p = make(t & 1, t & 2, m, n, k, alpha, beta, (m + n) % 3, seed++);
                INFO("m " << m << " n " << n << " k " << k << " ta " << p.ta << " tb " << p.tb << " alpha " << alpha
                          << " beta " << beta);
                CHECK(check(p, run(p)) == 0);
            }
}

TEST_CASE("sgemm gives the same bits on 1, 2 and 3 threads", "[gemm][threads]") {
    INFO("kernel " << cpu::gemm_target());
    // (512, 784, k): split by rows though n > m (gemm.cpp), as a batch-32 dW
    const std::size_t sizes[][3] = {{128, 512, 784}, {1, 512, 784}, {3, 10, 512}, {512, 784, 128}, {512, 784, 32},
                                    {200, 130, 70}};
    std::uint64_t seed = 100;
    for (auto [m, n, k] : sizes)
        for (int t = 0; t < 4; ++t) {
            const Problem p = make(t & 1, t & 2, m, n, k, 1.0f, t == 3 ? 1.0f : 0.0f, 0, seed++);
            set_num_threads(1);
            const auto one = run(p);
            CHECK(check(p, one) == 0);
            for (std::size_t threads : {2, 3}) {
                set_num_threads(threads);
                CHECK(run(p) == one);
            }
        }
    set_num_threads(0);
}

TEST_CASE("sgemm edge cases and the kernel's name", "[gemm]") {
    std::vector<float> c{1, 2, 3, 4};
    cpu::sgemm(false, false, 2, 2, 0, 1.0f, nullptr, 0, nullptr, 2, 1.0f, c.data(), 2);  // k = 0: C = beta C
    CHECK(c[3] == 4.0f);
    cpu::sgemm(false, false, 2, 2, 0, 1.0f, nullptr, 0, nullptr, 2, 0.0f, c.data(), 2);
    CHECK(c[3] == 0.0f);
    cpu::sgemm(false, false, 0, 2, 3, 1.0f, nullptr, 3, nullptr, 2, 0.0f, nullptr, 2);  // m = 0: nothing
    cpu::sgemm(false, false, 2, 0, 3, 1.0f, nullptr, 3, nullptr, 0, 0.0f, nullptr, 0);  // n = 0: nothing
    const std::string target = cpu::gemm_target();
    CHECK((target == "x86-64-v4" || target == "x86-64-v3" || target == "generic" || target == "eigen-v3"));
    // A forced target is honoured where the CPU has it (else the generic kernel is used).
    if (const char* forced = std::getenv("TENON_GEMM_TARGET"))
        if (target != forced) WARN("TENON_GEMM_TARGET=" << forced << " not available here; using " << target);
}

TEST_CASE("sgemm_prepacked gives the packed product's bits on 1, 2 and 3 threads", "[gemm][threads][prepacked]") {
    // op(B) packed in advance (a plan's frozen weights): the same bits as packing at every
    // call, for either transpose of B, edge tiles in m, n and k, blocks of k past KC, splits
    // by rows and by columns; batches of 1-4 rows give each row's bits as in a larger batch
    // (the few-row path over the panels, which skips zero inputs: half of A zero in half the
    // problems).
    const std::string target = cpu::gemm_target();
    INFO("kernel " << target);
    const bool packs = cpu::sgemm_packed_size(3, 5) > 0;
    CHECK(packs == (target == "x86-64-v4" || target == "x86-64-v3"));
    const std::size_t sizes[][3] = {{128, 512, 784}, {1024, 512, 512}, {1, 512, 784}, {4, 37, 300}, {5, 10, 512},
                                    {13, 17, 257},   {130, 70, 600},   {7, 33, 1},    {29, 1000, 61}, {200, 130, 70},
                                    {2, 70, 600},    {3, 33, 257}};
    std::uint64_t seed = 300;
    for (auto [m, n, k] : sizes)
        for (int t = 0; t < 4; ++t) {
            Problem p = make(t & 1, t & 2, m, n, k, t == 2 ? 0.5f : 1.0f, t == 3 ? 1.0f : 0.0f, (m + k) % 3, seed++);
            if (t == 1 || t == 2) zero_half(p, seed++);
            INFO("m " << m << " n " << n << " k " << k << " ta " << p.ta << " tb " << p.tb);
            std::vector<float> packed(std::max<std::size_t>(cpu::sgemm_packed_size(k, n), 1), -7.0f);
            cpu::sgemm_pack_b(p.tb, k, n, p.b.data(), p.ldb, packed.data());
            for (std::size_t threads : {1, 2, 3}) {
                set_num_threads(threads);
                const auto want = packs ? run_as_batch(p) : run(p);
                std::vector<float> c = p.c;
                cpu::sgemm_prepacked(p.ta, p.tb, m, n, k, p.alpha, p.a.data(), p.lda, p.b.data(), p.ldb,
                                     packed.data(), p.beta, c.data(), p.ldc);
                INFO("threads " << threads);
                CHECK(c == want);
            }
        }
    set_num_threads(0);
}

TEST_CASE("sgemm_epilogue: sgemm's bits, then the epilogue once on every value", "[gemm][threads][epilogue]") {
    // A dense layer's forward (C = X W^T, then act(C + b)) with the epilogue run on the tiles
    // inside the product: the values of sgemm followed by one pass, prepacked W or not, batches
    // of 1-4 rows (the small path), edge tiles, blocks of k past KC, splits by rows and columns.
    const std::string target = cpu::gemm_target();
    INFO("kernel " << target);
    struct Seen {
        std::vector<int> count;  // how often each value of C was given to the epilogue
        std::vector<float> bias;
        std::size_t ldc = 0;
        const float* c0 = nullptr;
        std::atomic<int> wrong_j0{0};  // (Catch's CHECK is not thread-safe)
    };
    const cpu::Epilogue epi{[](const void* ctx, float* c, std::size_t ldc, std::size_t rows, std::size_t cols,
                               std::size_t j0) {
                                auto& s = *static_cast<Seen*>(const_cast<void*>(ctx));
                                const std::size_t at = static_cast<std::size_t>(c - s.c0);
                                for (std::size_t r = 0; r < rows; ++r)
                                    for (std::size_t j = 0; j < cols; ++j) {
                                        ++s.count[at + r * s.ldc + j];  // (the blocks do not overlap)
                                        if (at % s.ldc + j != j0 + j) s.wrong_j0.fetch_add(1);
                                        c[r * ldc + j] = std::max(c[r * ldc + j] + s.bias[j0 + j], 0.0f);
                                    }
                            },
                            nullptr};
    const std::size_t sizes[][3] = {{128, 512, 784}, {1, 512, 784}, {4, 37, 300}, {5, 10, 512},
                                    {13, 17, 257},   {130, 70, 600}, {7, 33, 1},   {29, 1000, 61}, {0, 5, 3}};
    std::uint64_t seed = 500;
    for (auto [m, n, k] : sizes) {
        const Problem p = make(false, true, m, n, k, 1.0f, 0.0f, 0, seed++);
        std::vector<float> bias(n);
        Rng rng(seed++);
        for (float& v : bias) v = static_cast<float>(rng.uniform(-1.0, 1.0));
        std::vector<float> packed(std::max<std::size_t>(cpu::sgemm_packed_size(k, n), 1));
        cpu::sgemm_pack_b(true, k, n, p.b.data(), p.ldb, packed.data());
        for (std::size_t threads : {1, 2, 3})
            for (const bool prepacked : {false, true}) {
                INFO("m " << m << " n " << n << " k " << k << " threads " << threads << " prepacked " << prepacked);
                set_num_threads(threads);
                std::vector<float> want = prepacked && cpu::sgemm_packed_size(k, n) > 0 ? run_as_batch(p) : run(p);
                for (std::size_t i = 0; i < m; ++i)
                    for (std::size_t j = 0; j < n; ++j)
                        want[i * n + j] = std::max(want[i * n + j] + bias[j], 0.0f);
                std::vector<float> c(m * n, -3.0f);
                Seen seen{std::vector<int>(m * n, 0), bias, n, c.data()};
                cpu::Epilogue e = epi;
                e.ctx = &seen;
                cpu::sgemm_epilogue(false, true, m, n, k, p.a.data(), p.lda, p.b.data(), p.ldb,
                                    prepacked ? packed.data() : nullptr, c.data(), n, e);
                CHECK(c == want);
                CHECK(std::all_of(seen.count.begin(), seen.count.end(), [](int x) { return x == 1; }));
                CHECK(seen.wrong_j0.load() == 0);
            }
    }
    set_num_threads(0);
}
