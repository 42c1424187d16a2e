// The soak test (issue 16; docs/reliability.md): a service's life in one program. Eight
// threads serve two models at once for SOAK_SECONDS (default 600) while a ninth trains copies
// and swaps them in every SOAK_SWAP_SECONDS (default 3), the way a service reloads a model:
//   - an MLP on Fashion-MNIST-shaped input (784 wide; random values), random batch sizes
//     1..2048 rows;
//   - a spaCy-like text classifier (a tok2vec of HashEmbeds, a window encoder, mean, softmax)
//     on random documents: 1..SOAK_MAX_DOCS documents (default 256) of 1..48 words.
// Serving threads read the current model through std::atomic<std::shared_ptr<const M>>; the
// trainer writes its copy to bytes (to_bytes), loads them into a fresh model (from_bytes)
// and publishes it. A model being served stays alive until its last call ends.
//
// Every SOAK_REPORT_SECONDS (default 60) it prints, per period: the RSS (/proc/self/statm)
// at its end and its peak (sampled every 100 ms), and per model the calls, the operator new
// calls per call (counted per thread around predict only, by the replacement operator new
// below; the first period is the warm-up) and the p50/p99 latency. At the end: whether the
// memory was flat after the first period (every later period's peak within 5% or 16 MiB of
// the first period's peak), and the exit status says so too (0: flat, no errors).
//
//   make soak                  # 10 minutes
//   SOAK_SECONDS=120 SOAK_REPORT_SECONDS=20 build/bench/soak
#include <tenon/tenon.hpp>

#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <new>
#include <string>
#include <thread>
#include <vector>

// ---- operator new, counted -------------------------------------------------------------
namespace {
constinit thread_local std::uint64_t t_news = 0;  // this thread's operator new calls
std::atomic<std::uint64_t> g_news{0};              // everyone's

void* counted_alloc(std::size_t n, std::size_t align) noexcept {
    ++t_news;
    g_news.fetch_add(1, std::memory_order_relaxed);
    if (n == 0) n = 1;
    if (align <= alignof(std::max_align_t)) return std::malloc(n);
    void* p = nullptr;
    return ::posix_memalign(&p, align, n) == 0 ? p : nullptr;
}
void* counted_or_throw(std::size_t n, std::size_t align) {
    void* p = counted_alloc(n, align);
    if (!p) throw std::bad_alloc();
    return p;
}
}  // namespace

void* operator new(std::size_t n) { return counted_or_throw(n, 0); }
void* operator new[](std::size_t n) { return counted_or_throw(n, 0); }
void* operator new(std::size_t n, std::align_val_t a) { return counted_or_throw(n, static_cast<std::size_t>(a)); }
void* operator new[](std::size_t n, std::align_val_t a) { return counted_or_throw(n, static_cast<std::size_t>(a)); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return counted_alloc(n, 0); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return counted_alloc(n, 0); }
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
    return counted_alloc(n, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
    return counted_alloc(n, static_cast<std::size_t>(a));
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }

using namespace tenon;

namespace {
// ---- the two models ----------------------------------------------------------------------
constexpr std::size_t mlp_width = 784, mlp_classes = 10, text_width = 64, text_classes = 4, max_words = 48;

auto make_mlp() { return Relu<512, mlp_width>({.dropout = 0.2}) >> Relu<512>({.dropout = 0.2}) >> Softmax<mlp_classes>(); }
using Mlp = decltype(make_mlp());

// spaCy's tok2vec (as examples/langid_model.hpp): four hashed ids per word, embedded and
// mixed, a window encoder of two residual Maxout blocks, the mean over words, a softmax.
auto make_textcat() {
    const MaxoutOptions maxout{.nP = 3, .dropout = 0.0, .normalize = true};
    auto embed = list2ragged<Ints2d>() >>
                 with_array<BasicRagged<Ints2d>>(concatenate(
                     HashEmbed<text_width>(5000, 8u, 0), HashEmbed<text_width>(2000, 9u, 1),
                     HashEmbed<text_width>(2000, 10u, 2), HashEmbed<text_width>(500, 11u, 3))) >>
                 with_array<Ragged>(Maxout<text_width>(maxout)) >> ragged2list();
    auto encode = with_array<List<Floats2d>>(clone(residual(expand_window<1>() >> Maxout<text_width>(maxout)), 2), 2);
    return embed >> encode >> list2ragged() >> reduce_mean() >> Softmax<text_classes>();
}
using Textcat = decltype(make_textcat());

List<Ints2d> random_docs(Rng& rng, std::size_t n_docs) {
    std::vector<Ints2d> docs;
    docs.reserve(n_docs);
    for (std::size_t d = 0; d < n_docs; ++d) {
        Ints2d doc({1 + rng.below(max_words), 4});
        for (auto& v : doc) v = static_cast<int>(rng.next() & 0x7fffffff);
        docs.push_back(std::move(doc));
    }
    return List<Ints2d>(std::move(docs));
}

// ---- statistics --------------------------------------------------------------------------
// Latencies in a log histogram: bucket k holds [2^(k/16), 2^((k+1)/16)) ns (4.4% wide).
constexpr std::size_t n_buckets = 16 * 40;
struct Stats {
    std::atomic<std::uint64_t> calls{0}, news{0}, rows{0}, errors{0};
    std::array<std::atomic<std::uint64_t>, n_buckets> hist{};

    void record(std::uint64_t ns, std::uint64_t news_in_call, std::size_t n) {
        const double l = ns ? std::log2(static_cast<double>(ns)) * 16.0 : 0.0;
        const std::size_t k = std::min<std::size_t>(n_buckets - 1, static_cast<std::size_t>(l));
        hist[k].fetch_add(1, std::memory_order_relaxed);
        calls.fetch_add(1, std::memory_order_relaxed);
        news.fetch_add(news_in_call, std::memory_order_relaxed);
        rows.fetch_add(n, std::memory_order_relaxed);
    }
};
// What one period saw (the counters are swapped to zero at its end).
struct Period {
    std::uint64_t calls = 0, news = 0, rows = 0, errors = 0;
    std::array<std::uint64_t, n_buckets> hist{};
    static Period take(Stats& s) {
        Period p;
        p.calls = s.calls.exchange(0);
        p.news = s.news.exchange(0);
        p.rows = s.rows.exchange(0);
        p.errors = s.errors.exchange(0);
        for (std::size_t k = 0; k < n_buckets; ++k) p.hist[k] = s.hist[k].exchange(0);
        return p;
    }
    double quantile_ms(double q) const {
        std::uint64_t total = 0, seen = 0;
        for (auto c : hist) total += c;
        if (!total) return 0.0;
        const auto want = static_cast<std::uint64_t>(std::ceil(q * static_cast<double>(total)));
        for (std::size_t k = 0; k < n_buckets; ++k) {
            seen += hist[k];
            if (seen >= want) return std::exp2(static_cast<double>(k + 1) / 16.0) / 1e6;  // the bucket's top
        }
        return 0.0;
    }
};

double rss_mib() {
    std::FILE* f = std::fopen("/proc/self/statm", "r");
    if (!f) return 0.0;
    unsigned long size = 0, resident = 0;
    const int got = std::fscanf(f, "%lu %lu", &size, &resident);
    std::fclose(f);
    return got == 2 ? static_cast<double>(resident) * static_cast<double>(::sysconf(_SC_PAGESIZE)) / (1024.0 * 1024.0)
                    : 0.0;
}

double env_seconds(const char* name, double fallback) {
    const char* v = std::getenv(name);
    if (!v || !*v) return fallback;
    const double d = std::atof(v);
    return d > 0 ? d : fallback;
}

std::uint64_t now_ns() {
    return static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
            .count());
}
}  // namespace

int main() {
    const double seconds = env_seconds("SOAK_SECONDS", 600);
    const double period_s = env_seconds("SOAK_REPORT_SECONDS", 60);
    const double swap_s = env_seconds("SOAK_SWAP_SECONDS", 3);
    const auto max_docs = static_cast<std::size_t>(env_seconds("SOAK_MAX_DOCS", 256));
    constexpr int n_servers = 8;
    constexpr std::size_t max_rows = 2048, pool_rows = 4096;

    // The input pool: batches are row ranges of it (so that serving costs no input making).
    Rng data_rng(1);
    Floats2d pool({pool_rows, mlp_width}, uninitialized);
    for (auto& v : pool) v = data_rng.uniform();

    fix_random_seed(7);
    auto mlp0 = std::make_shared<Mlp>(make_mlp());
    mlp0->initialize();
    auto text0 = std::make_shared<Textcat>(make_textcat());
    text0->initialize();
    std::atomic<std::shared_ptr<const Mlp>> mlp_live{std::shared_ptr<const Mlp>(mlp0)};
    std::atomic<std::shared_ptr<const Textcat>> text_live{std::shared_ptr<const Textcat>(text0)};

    Stats mlp_stats, text_stats;
    std::atomic<bool> stop{false};
    std::atomic<std::uint64_t> swaps{0}, train_steps{0}, train_errors{0}, bad_outputs{0};
    std::atomic<double> worst_swap_ms{0.0};

    std::vector<std::thread> threads;
    for (int t = 0; t < n_servers; ++t)
        threads.emplace_back([&, t] {
            Rng rng(100 + static_cast<std::uint64_t>(t));
            double sink = 0.0;
            while (!stop.load(std::memory_order_relaxed)) {
                if (rng.below(2) == 0) {
                    const std::size_t n = 1 + rng.below(max_rows);
                    const std::size_t off = rng.below(pool_rows - n + 1);
                    const Floats2dCView X(pool.data() + off * mlp_width, {n, mlp_width});
                    const std::shared_ptr<const Mlp> model = mlp_live.load();
                    try {
                        const std::uint64_t a0 = t_news, t0 = now_ns();
                        const Floats2d P = model->predict(X);
                        const std::uint64_t t1 = now_ns(), a1 = t_news;
                        mlp_stats.record(t1 - t0, a1 - a0, n);
                        float s = 0.0f;
                        for (std::size_t j = 0; j < mlp_classes; ++j) s += P(n - 1, j);
                        if (!(std::fabs(s - 1.0f) < 1e-3f)) bad_outputs.fetch_add(1);
                        sink += s;
                    } catch (const std::exception& e) {
                        if (mlp_stats.errors.fetch_add(1) == 0) std::fprintf(stderr, "mlp predict: %s\n", e.what());
                    }
                } else {
                    const List<Ints2d> docs = random_docs(rng, 1 + rng.below(max_docs));
                    const std::shared_ptr<const Textcat> model = text_live.load();
                    try {
                        const std::uint64_t a0 = t_news, t0 = now_ns();
                        const Floats2d P = model->predict(docs);
                        const std::uint64_t t1 = now_ns(), a1 = t_news;
                        text_stats.record(t1 - t0, a1 - a0, docs.size());
                        float s = 0.0f;
                        for (std::size_t j = 0; j < text_classes; ++j) s += P(0, j);
                        if (!(std::fabs(s - 1.0f) < 1e-3f)) bad_outputs.fetch_add(1);
                        sink += s;
                    } catch (const std::exception& e) {
                        if (text_stats.errors.fetch_add(1) == 0) std::fprintf(stderr, "textcat predict: %s\n", e.what());
                    }
                }
            }
            if (sink == 12345.678) std::puts("");  // keep the results alive
        });

    // The trainer: its own copies, trained on random labelled batches, written to bytes and
    // loaded into fresh models that replace the served ones.
    threads.emplace_back([&] {
        Rng rng(999);
        Mlp mlp = *mlp0;  // a copy (new ids): the served model is never touched
        Textcat text = *text0;
        Optimizer opt = Adam(0.001);
        CategoricalCrossentropy loss;
        try {
            while (!stop.load()) {
                const std::uint64_t until = now_ns() + static_cast<std::uint64_t>(swap_s * 1e9);
                while (now_ns() < until && !stop.load()) {
                    const std::size_t n = 128, off = rng.below(pool_rows - n + 1);
                    const Floats2dCView X(pool.data() + off * mlp_width, {n, mlp_width});
                    Ints1d labels({n});
                    for (auto& l : labels) l = static_cast<int>(rng.below(mlp_classes));
                    {
                        auto [P, backprop] = mlp.begin_update(X);
                        backprop(loss.get_grad(P, labels));
                    }
                    mlp.finish_update(opt);
                    const List<Ints2d> docs = random_docs(rng, 32);
                    Ints1d tl({docs.size()});
                    for (auto& l : tl) l = static_cast<int>(rng.below(text_classes));
                    {
                        auto [P, backprop] = text.begin_update(docs);
                        backprop(loss.get_grad(P, tl));
                    }
                    text.finish_update(opt);
                    train_steps.fetch_add(1);
                }
                // The reload, as a service does it: bytes (a file, in real life) into a fresh model.
                const std::uint64_t s0 = now_ns();
                auto fresh_mlp = std::make_shared<Mlp>(make_mlp());
                fresh_mlp->from_bytes(mlp.to_bytes());
                mlp_live.store(std::shared_ptr<const Mlp>(std::move(fresh_mlp)));
                auto fresh_text = std::make_shared<Textcat>(make_textcat());
                fresh_text->from_bytes(text.to_bytes());
                text_live.store(std::shared_ptr<const Textcat>(std::move(fresh_text)));
                const double ms = static_cast<double>(now_ns() - s0) / 1e6;
                if (ms > worst_swap_ms.load()) worst_swap_ms.store(ms);
                swaps.fetch_add(1);
            }
        } catch (const std::exception& e) {
            train_errors.fetch_add(1);
            std::fprintf(stderr, "trainer: %s\n", e.what());
        }
    });

    std::printf("soak: %d serving threads (MLP 784-512-512-10 on 1..%zu rows; tok2vec textcat on 1..%zu docs of "
                "1..%zu words), 1 trainer swapping both models every %.0f s, for %.0f s, a report every %.0f s\n",
                n_servers, max_rows, max_docs, max_words, swap_s, seconds, period_s);
    std::printf("%6s %9s %9s | %8s %9s %8s %8s | %8s %9s %8s %8s | %6s %6s\n", "t(s)", "RSS(MiB)", "peak", "mlp",
                "new/call", "p50(ms)", "p99(ms)", "textcat", "new/call", "p50(ms)", "p99(ms)", "swaps", "steps");
    std::fflush(stdout);

    const std::uint64_t start = now_ns();
    std::vector<double> peaks;
    std::uint64_t later_calls = 0, later_news = 0, errors = 0;
    double first_end_rss = 0.0, last_rss = 0.0;
    for (int p = 1;; ++p) {
        const double end_s = std::min(seconds, period_s * p);
        double peak = 0.0;
        while (static_cast<double>(now_ns() - start) / 1e9 < end_s) {
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
            peak = std::max(peak, rss_mib());
        }
        const double rss = rss_mib();
        peak = std::max(peak, rss);
        const Period m = Period::take(mlp_stats), x = Period::take(text_stats);
        errors += m.errors + x.errors;
        peaks.push_back(peak);
        if (p == 1) first_end_rss = rss;
        else {
            later_calls += m.calls + x.calls;
            later_news += m.news + x.news;
        }
        last_rss = rss;
        auto per_call = [](const Period& q) { return q.calls ? static_cast<double>(q.news) / static_cast<double>(q.calls) : 0.0; };
        std::printf("%6.0f %9.1f %9.1f | %8llu %9.2f %8.2f %8.2f | %8llu %9.2f %8.2f %8.2f | %6llu %6llu%s\n", end_s, rss,
                    peak, static_cast<unsigned long long>(m.calls), per_call(m), m.quantile_ms(0.5), m.quantile_ms(0.99),
                    static_cast<unsigned long long>(x.calls), per_call(x), x.quantile_ms(0.5), x.quantile_ms(0.99),
                    static_cast<unsigned long long>(swaps.load()), static_cast<unsigned long long>(train_steps.load()),
                    p == 1 ? "  (warm-up)" : "");
        std::fflush(stdout);
        if (end_s >= seconds) break;
    }
    stop = true;
    for (auto& t : threads) t.join();

    const double limit = peaks[0] + std::max(16.0, 0.05 * peaks[0]);
    const double later_peak = peaks.size() > 1 ? *std::max_element(peaks.begin() + 1, peaks.end()) : peaks[0];
    const bool flat = later_peak <= limit;
    std::printf("memory: first period's peak %.1f MiB, later peak %.1f MiB (limit %.1f), RSS %.1f -> %.1f MiB after "
                "the first period: %s\n",
                peaks[0], later_peak, limit, first_end_rss, last_rss, flat ? "FLAT" : "GROWING");
    std::printf("allocations after warm-up: %.3f operator new calls per call (%llu calls); swaps %llu (worst %.1f ms); "
                "errors %llu, trainer errors %llu, outputs not summing to 1: %llu\n",
                later_calls ? static_cast<double>(later_news) / static_cast<double>(later_calls) : 0.0,
                static_cast<unsigned long long>(later_calls), static_cast<unsigned long long>(swaps.load()),
                worst_swap_ms.load(), static_cast<unsigned long long>(errors),
                static_cast<unsigned long long>(train_errors.load()), static_cast<unsigned long long>(bad_outputs.load()));
    const bool ok = flat && errors == 0 && train_errors == 0 && bad_outputs == 0;
    std::printf("soak: %s\n", ok ? "PASS" : "FAIL");
    return ok ? 0 : 1;
}
