// The tok2vec benchmark's data and model, shared by bench/tok2vec_bench.cpp (the CPU's) and
// bench/gpu_bench.cpp (make bench-gpu): the synthetic documents of bench/tok2vec_data.py (the
// same generator and constants) and spaCy's default tagger tok2vec with a 50-tag head.
#pragma once
#include <tenon/tenon.hpp>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "bench_common.hpp"

namespace tenon::bench::tok2vec {
// ---- bench/tok2vec_data.py, the same constants and generator ----
constexpr std::uint64_t kSeed = 20240611;
constexpr std::size_t kDocs = 2048, kBatch = 64, kVocab = 50000, kTags = 50, kLatencyLen = 20;
constexpr std::size_t kWidth = 96, kDepth = 4, kWindow = 1, kFeatures = 4;
constexpr int kPredictPasses = 3;

struct Corpus {
    List<Ints2d> docs;                        // (n, 4): NORM, PREFIX, SUFFIX, SHAPE
    std::vector<std::vector<std::int32_t>> tags;
    std::uint64_t checksum = 0;
};

inline Corpus generate() {
    std::vector<double> cum(kVocab);
    double total = 0.0;
    for (std::size_t k = 1; k <= kVocab; ++k) cum[k - 1] = total += 1.0 / double(k);
    SplitMix64 rng{kSeed};
    Corpus c;
    std::uint64_t i = 0;
    auto add = [&](std::uint64_t v) { c.checksum += ++i * v; };
    for (std::size_t d = 0; d < kDocs; ++d) {
        const std::size_t n = 10 + rng.next() % 21;
        Ints2d ids({n, kFeatures}, uninitialized);
        std::vector<std::int32_t> tags(n);
        for (std::size_t t = 0; t < n; ++t) {
            const double u = double(rng.next() >> 11) * (1.0 / 9007199254740992.0) * total;
            const auto w = std::min<std::int64_t>(std::upper_bound(cum.begin(), cum.end(), u) - cum.begin(),
                                                  std::int64_t(kVocab) - 1);
            ids(t, 0) = std::int32_t(w);
            ids(t, 1) = std::int32_t(w >> 4);
            ids(t, 2) = std::int32_t((w * 7919) % 4001);
            ids(t, 3) = std::int32_t(w % 37);
            tags[t] = std::int32_t((w * 13) % std::int64_t(kTags));
        }
        add(n);
        for (std::size_t t = 0; t < n; ++t)
            for (std::size_t f = 0; f < kFeatures; ++f) add(std::uint64_t(ids(t, f)));
        for (auto g : tags) add(std::uint64_t(g));
        c.docs.push_back(std::move(ids));
        c.tags.push_back(std::move(tags));
    }
    return c;
}

// ---- the model: spaCy's MultiHashEmbed.v2 + MaxoutWindowEncoder.v2 + with_array(Softmax) ----
inline auto make_model() {
    const MaxoutOptions maxout{.nP = 3, .dropout = 0.0, .normalize = true};  // Maxout >> LayerNorm
    auto embed = list2ragged<Ints2d>() >>
                 with_array<BasicRagged<Ints2d>>(concatenate(
                     HashEmbed<kWidth>(5000, 8u, 0, 0.0), HashEmbed<kWidth>(1000, 9u, 1, 0.0),
                     HashEmbed<kWidth>(2500, 10u, 2, 0.0), HashEmbed<kWidth>(2500, 11u, 3, 0.0))) >>
                 with_array<Ragged>(Maxout<kWidth>(maxout)) >> ragged2list();
    auto encode = with_array<List<Floats2d>>(
        clone(residual(expand_window<kWindow>() >> Maxout<kWidth>(maxout)), kDepth), kWindow * kDepth);
    return embed >> encode >> with_array<List<Floats2d>>(Softmax<kTags>());
}

}  // namespace tenon::bench::tok2vec
