// tenon's side of the tok2vec benchmark in `make bench`: spaCy's default tagger tok2vec
// (MultiHashEmbed over 4 id columns, width 96 -> MaxoutWindowEncoder depth 4) with a 50-tag
// Softmax head, on the synthetic documents of bench/tok2vec_data.py (the same generator,
// here in C++), timed as bench/tok2vec_thinc.py and bench/tok2vec_torch.py time Thinc and
// PyTorch. Runs the model's own predict / begin_update / finish_update, which run its plan
// (docs/lowering.md, "Sequence models"); unfused(model) would run its layers instead.
// Prints JSON lines {"figure", "system", "value", "unit"}:
//   tok2vec_predict_wps    words/s  predict, 64 docs a call (best of 3 passes)
//   tok2vec_train_wps      words/s  begin_update + backprop + Adam(0.001), 64 docs a batch
//   tok2vec_latency_doc20  us       predict of one 20-word document, median
//   tok2vec_bench [--fraction F] [--latency-n N] [--figures a,b] [--threads N] [--check]
// --check: only verify the model (output shapes, rows summing to 1, parameter count) and exit.
#include <tenon/tenon.hpp>

#include "bench_common.hpp"
#include "tok2vec_model.hpp"
#include <tenon/backend/cpu/threads.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <sstream>
#include <string>
#include <vector>

using namespace tenon;
using namespace tenon::bench;

namespace {
using namespace tenon::bench::tok2vec;

List<Ints2d> slice(const List<Ints2d>& docs, std::size_t b, std::size_t e) {
    return List<Ints2d>(docs.begin() + std::ptrdiff_t(b), docs.begin() + std::ptrdiff_t(e));
}

std::size_t count_params(Node& model) {
    std::size_t n = 0;
    for (Node* node : model.walk())
        for (const auto& p : node->param_names())
            if (node->has_param(p)) n += node->get_param(p).size();
    return n;
}

// The output of predict: one (words, 50) array per doc, every row summing to 1.
bool check_output(const List<Ints2d>& X, const List<Floats2d>& Y, double& worst) {
    if (Y.size() != X.size()) return false;
    for (std::size_t d = 0; d < X.size(); ++d) {
        if (Y[d].shape(0) != X[d].shape(0) || Y[d].shape(1) != kTags) return false;
        for (std::size_t i = 0; i < Y[d].shape(0); ++i) {
            double s = 0.0;
            for (float v : Y[d].row(i)) s += v;
            worst = std::max(worst, std::abs(s - 1.0));
        }
    }
    return true;
}
}  // namespace

int main(int argc, char** argv) {
    double fraction = 1.0;
    int latency_n = 2000;
    bool check_only = false;
    std::size_t threads = 0;
    std::set<std::string> figures;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto next = [&]() -> std::string {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "tok2vec_bench: %s needs a value\n", a.c_str());
                std::exit(2);
            }
            return argv[++i];
        };
        if (a == "--fraction") fraction = std::atof(next().c_str());
        else if (a == "--latency-n") latency_n = std::atoi(next().c_str());
        else if (a == "--threads") threads = static_cast<std::size_t>(std::atol(next().c_str()));  // 0: all cores
        else if (a == "--check") check_only = true;
        else if (a == "--figures") {
            std::stringstream ss(next());
            for (std::string f; std::getline(ss, f, ',');) figures.insert(f);
        } else {
            std::fprintf(stderr,
                         "usage: tok2vec_bench [--fraction F] [--latency-n N] [--figures a,b] [--threads N] [--check]\n");
            return 2;
        }
    }
    if (!(fraction > 0.0 && fraction <= 1.0) || latency_n < 1) {
        std::fprintf(stderr, "tok2vec_bench: --fraction must be in (0, 1] and --latency-n >= 1\n");
        return 2;
    }
    auto want = [&](const std::string& f) { return figures.empty() || figures.count(f); };

    try {
        set_num_threads(threads);
        fix_random_seed(0);
        const Corpus corpus = generate();
        const std::size_t total_batches = kDocs / kBatch;
        const std::size_t n_batches =
            fraction >= 1.0 ? total_batches
                            : std::clamp<std::size_t>(std::size_t(std::lround(double(total_batches) * fraction)), 1,
                                                      total_batches);
        std::vector<List<Ints2d>> batches;
        std::vector<std::size_t> batch_words;
        for (std::size_t b = 0; b < n_batches; ++b) {
            batches.push_back(slice(corpus.docs, b * kBatch, (b + 1) * kBatch));
            std::size_t w = 0;
            for (const auto& d : batches.back()) w += d.shape(0);
            batch_words.push_back(w);
        }
        std::size_t words = 0;
        for (auto w : batch_words) words += w;

        auto model = make_model();
        model.initialize(slice(corpus.docs, 0, 8));
        const std::size_t params = count_params(model);
        std::fprintf(stderr,
                     "tok2vec_bench: GEMM kernel %s, %zu thread(s); data checksum %llu; %zu parameters; "
                     "%zu batch(es) of %zu docs, %zu words\n",
                     cpu::gemm_target(), num_threads(), static_cast<unsigned long long>(corpus.checksum), params,
                     n_batches, kBatch, words);
        (void)model.predict(batches[0]);
        std::fprintf(stderr, "tok2vec_bench: %s\n",
                     model.uses_plan() ? "the model runs its plan" : "the model runs its layers (no plan)");
        {
            double worst = 0.0;
            const bool ok = check_output(batches[0], model.predict(batches[0]), worst);
            std::fprintf(stderr, "tok2vec_bench: output check: shapes %s, largest |row sum - 1| %.3g\n",
                         ok ? "(words, 50)" : "WRONG", worst);
            if (!ok || worst > 1e-4) {
                std::fprintf(stderr, "tok2vec_bench: the model's output is wrong\n");
                return 1;
            }
        }
        if (check_only) {
            std::printf("{\"check\": \"tenon\", \"params\": %zu, \"checksum\": %llu}\n", params,
                        static_cast<unsigned long long>(corpus.checksum));
            return 0;
        }
        char extra[160];
        std::snprintf(extra, sizeof extra, ", \"threads\": %zu, \"params\": %zu, \"batches\": %zu, \"words\": %zu",
                      num_threads(), params, n_batches, words);

        if (want("tok2vec_train_wps")) {
            // The loss gradient of every doc: (P - onehot(tags)) / words in the batch, as
            // Thinc's categorical cross-entropy over the concatenated rows.
            Optimizer opt = Adam(0.001);
            auto step = [&](std::size_t b) {
                auto [Y, backprop] = model.begin_update(batches[b]);
                const float scale = 1.0f / float(batch_words[b]);
                List<Floats2d> dY;
                dY.reserve(Y.size());
                for (std::size_t d = 0; d < Y.size(); ++d) {
                    Floats2d g = Y[d];
                    const auto& tg = corpus.tags[b * kBatch + d];
                    for (std::size_t i = 0; i < g.shape(0); ++i) {
                        g(i, std::size_t(tg[i])) -= 1.0f;
                        for (float& v : g.row(i)) v *= scale;
                    }
                    dY.push_back(std::move(g));
                }
                backprop(dY);
                model.finish_update(opt);
            };
            // Warm-up on a throw-away copy of the optimizer state is not possible without
            // changing the weights; two warm-up steps on the model itself, like the anchors'
            // throw-away models, prime the allocator and the workers.
            for (std::size_t b = 0; b < std::min<std::size_t>(2, n_batches); ++b) step(b);
            const auto t0 = Clock::now();
            for (std::size_t b = 0; b < n_batches; ++b) step(b);
            emit("tok2vec_train_wps", double(words) / seconds_since(t0), "words/s", extra);
        }

        if (want("tok2vec_predict_wps")) {
            for (std::size_t b = 0; b < std::min<std::size_t>(2, n_batches); ++b) model.predict(batches[b]);
            double best = 1e30;
            for (int pass = 0; pass < kPredictPasses; ++pass) {
                const auto t0 = Clock::now();
                for (const auto& X : batches) {
                    const List<Floats2d> P = model.predict(X);
                    if (P.size() != X.size()) std::abort();
                }
                best = std::min(best, seconds_since(t0));
            }
            emit("tok2vec_predict_wps", double(words) / best, "words/s", extra);
        }

        if (want("tok2vec_latency_doc20")) {
            std::vector<List<Ints2d>> singles;
            for (const auto& d : corpus.docs)
                if (d.shape(0) == kLatencyLen) singles.push_back(List<Ints2d>{d});
            const int warmup = 200;
            std::vector<double> us;
            us.reserve(std::size_t(latency_n));
            for (int i = 0; i < latency_n + warmup; ++i) {
                const auto& x = singles[std::size_t(i) % singles.size()];
                const auto t0 = Clock::now();
                const List<Floats2d> p = model.predict(x);
                const double t = seconds_since(t0) * 1e6;
                if (p.size() != 1 || p[0].shape(0) != kLatencyLen) std::abort();
                if (i >= warmup) us.push_back(t);
            }
            std::sort(us.begin(), us.end());
            char lx[96];
            std::snprintf(lx, sizeof lx, ", \"threads\": %zu, \"n\": %d, \"p99\": %.6g", num_threads(), latency_n,
                          us[std::min(us.size() - 1, std::size_t(std::ceil(0.99 * double(us.size()))) - 1)]);
            emit("tok2vec_latency_doc20", us[(us.size() + 1) / 2 - 1], "us", lx);
        }
        return 0;
    } catch (const Error& e) {
        std::fprintf(stderr, "tok2vec_bench: %s\n", e.what());
        return 1;
    }
}
