// tenon's side of the SparseLinear benchmark (bench/run.py --sparselinear; not part of the
// default `make bench`): spaCy's TextCatBOW engine, SparseLinear<4>({.length = 2^18}), on 2000
// synthetic documents of 20-200 hashed features (value 1), the same data as
// bench/sparselinear_thinc.py times with Thinc 8.1's SparseLinear.v2. Prints JSON lines
// {"figure", "system", "value", "unit"}:
//   sparselinear_predict_dps  docs/s  predict, 256 docs a call (best of 3 passes)
//   sparselinear_update_dps   docs/s  begin_update + backprop, 64 docs a batch, no optimizer
//                                     (the gradient accumulates: the layer's own cost)
//   sparselinear_train_dps    docs/s  begin_update + backprop + finish_update(Adam(0.001)),
//                                     64 docs a batch (the optimizer walks all 4 x 2^18 weights)
//   sparselinear_bench [--threads N] [--check]   (--threads 0: every core; default 1)
// The loss gradient is dY = Y - onehot(label) / batch (both sides the same).
#include <tenon/tenon.hpp>

#include "bench_common.hpp"
#include <tenon/backend/cpu/threads.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using namespace tenon;
using namespace tenon::bench;

namespace {
constexpr std::uint64_t kSeed = 20261127;
constexpr std::size_t kDocs = 2000, kClasses = 4, kLength = std::size_t{1} << 18, kVocab = 200000;
constexpr std::size_t kPredictBatch = 256, kTrainBatch = 64;
constexpr int kPasses = 10;

// bench/sparselinear_thinc.py's generator: a document's length is 20 + r % 181 features, each
// key (r % kVocab) * 0x9E3779B97F4A7C15 (mod 2^64), its label the first key's % 4.
struct Corpus {
    std::vector<std::vector<std::uint64_t>> docs;
    std::vector<std::size_t> labels;
    std::uint64_t checksum = 0;
};
Corpus generate() {
    SplitMix64 rng{kSeed};
    Corpus c;
    for (std::size_t d = 0; d < kDocs; ++d) {
        const std::size_t n = 20 + rng.next() % 181;
        std::vector<std::uint64_t> keys(n);
        for (auto& k : keys) {
            k = (rng.next() % kVocab) * 0x9E3779B97F4A7C15ull;
            c.checksum += k % 1000003;
        }
        c.labels.push_back(static_cast<std::size_t>(keys[0] % kClasses));
        c.docs.push_back(std::move(keys));
    }
    return c;
}

std::vector<SparseFeatures> batches(const Corpus& c, std::size_t size) {
    std::vector<SparseFeatures> out;
    for (std::size_t b = 0; b < c.docs.size(); b += size) {
        const std::size_t e = std::min(c.docs.size(), b + size);
        const std::vector<std::vector<std::uint64_t>> docs(c.docs.begin() + std::ptrdiff_t(b),
                                                           c.docs.begin() + std::ptrdiff_t(e));
        out.push_back(sparse_features(docs));
    }
    return out;
}
Floats2d gradient(const Floats2d& Y, const Corpus& c, std::size_t first) {
    Floats2d d = Y;
    const float scale = 1.0f / static_cast<float>(Y.shape(0));
    for (std::size_t r = 0; r < Y.shape(0); ++r)
        for (std::size_t k = 0; k < kClasses; ++k)
            d(r, k) = (Y(r, k) - (c.labels[first + r] == k ? 1.0f : 0.0f)) * scale;
    return d;
}
}  // namespace

int main(int argc, char** argv) {
    std::size_t threads = 1;
    bool check = false;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--threads" && i + 1 < argc) threads = static_cast<std::size_t>(std::atol(argv[++i]));
        else if (a == "--check") check = true;
        else {
            std::fprintf(stderr, "usage: sparselinear_bench [--threads N] [--check]\n");
            return 2;
        }
    }
    set_num_threads(threads);
    const Corpus corpus = generate();
    const auto predict_batches = batches(corpus, kPredictBatch);
    const auto train_batches = batches(corpus, kTrainBatch);
    std::size_t features = 0;
    for (const auto& b : train_batches) features += b.features();
    std::fprintf(stderr, "sparselinear_bench: %zu docs, %zu features, checksum %llu, threads %zu\n", kDocs, features,
                 static_cast<unsigned long long>(corpus.checksum), threads);

    SparseLinear<kClasses> model({.length = kLength});
    model.initialize();
    Optimizer opt = Adam(0.001);
    auto train_pass = [&](bool step) {
        std::size_t first = 0;
        for (const auto& X : train_batches) {
            auto [Y, backprop] = model.begin_update(X);
            backprop.params_only(gradient(Y, corpus, first));
            if (step) model.finish_update(opt);
            first += X.size();
        }
    };
    train_pass(true);  // warm-up (and weights that are not all zero)
    if (check) {
        const Floats2d P = model.predict(predict_batches[0]);
        std::printf("{\"check\": \"ok\", \"rows\": %zu, \"first\": %.6g}\n", P.shape(0), double(P(0, 0)));
        return 0;
    }
    double best = 1e30;
    for (int p = 0; p < kPasses; ++p) {
        const auto t0 = Clock::now();
        std::size_t rows = 0;
        for (const auto& X : predict_batches) rows += model.predict(X).shape(0);
        best = std::min(best, seconds_since(t0));
        if (rows != kDocs) return 1;
    }
    emit("sparselinear_predict_dps", double(kDocs) / best, "docs/s");
    best = 1e30;
    for (int p = 0; p < kPasses; ++p) {
        const auto t0 = Clock::now();
        train_pass(false);
        best = std::min(best, seconds_since(t0));
    }
    emit("sparselinear_update_dps", double(kDocs) / best, "docs/s");
    model.finish_update(opt);
    best = 1e30;
    for (int p = 0; p < kPasses; ++p) {
        const auto t0 = Clock::now();
        train_pass(true);
        best = std::min(best, seconds_since(t0));
    }
    emit("sparselinear_train_dps", double(kDocs) / best, "docs/s");
    return 0;
}
