// The compile-time benchmark's spaCy-like translation unit (bench/compile/run.py, figure
// spacy_tagger_O2): what a tagger service's training program holds. spaCy's tok2vec
// (MultiHashEmbed over 4 id columns, a Maxout mixer, MaxoutWindowEncoder of depth 4), a
// Softmax tagger head over each document, and a training loop with minibatches, the loss,
// Adam, evaluation and saving the weights. It is compiled, not run (it also links and runs:
// it trains on a few random documents).
#include <tenon/tenon.hpp>

#include <cstdio>
#include <random>

using namespace tenon;

namespace {

constexpr std::size_t kWidth = 96;
constexpr std::size_t kTags = 50;

auto make_tagger() {
    const MaxoutOptions maxout{.nP = 3, .dropout = 0.0, .normalize = true};
    auto embed = list2ragged<Ints2d>() >>
                 with_array<BasicRagged<Ints2d>>(concatenate(
                     HashEmbed<kWidth>(5000, 8u, 0, 0.0), HashEmbed<kWidth>(1000, 9u, 1, 0.0),
                     HashEmbed<kWidth>(2500, 10u, 2, 0.0), HashEmbed<kWidth>(2500, 11u, 3, 0.0))) >>
                 with_array<Ragged>(Maxout<kWidth>(maxout)) >> ragged2list();
    auto encode = with_array<List<Floats2d>>(clone(residual(expand_window<1>() >> Maxout<kWidth>(maxout)), 4), 4);
    return embed >> encode >> with_array<List<Floats2d>>(Softmax<kTags>());
}

struct Doc {
    Ints2d ids;
    Ints1d tags;
};

std::vector<Doc> random_docs(std::size_t n, std::mt19937& rng) {
    std::vector<Doc> docs;
    std::uniform_int_distribution<int> len(5, 30), id(0, 100000), tag(0, int(kTags) - 1);
    for (std::size_t d = 0; d < n; ++d) {
        const auto words = std::size_t(len(rng));
        Doc doc{Ints2d({words, 4}), Ints1d({words})};
        for (std::size_t i = 0; i < words; ++i) {
            for (std::size_t c = 0; c < 4; ++c) doc.ids(i, c) = id(rng);
            doc.tags(i) = tag(rng);
        }
        docs.push_back(std::move(doc));
    }
    return docs;
}

}  // namespace

int main() {
    std::mt19937 rng(0);
    const auto train = random_docs(64, rng), dev = random_docs(16, rng);
    auto model = make_tagger();
    List<Ints2d> sample;
    for (std::size_t d = 0; d < 4; ++d) sample.push_back(train[d].ids);
    model.initialize(sample);

    Optimizer opt = Adam(0.001);
    const CategoricalCrossentropy loss_fn;
    for (int epoch = 0; epoch < 2; ++epoch) {
        double loss = 0.0;
        for (std::size_t b = 0; b < train.size(); b += 16) {
            List<Ints2d> X;
            for (std::size_t d = b; d < b + 16; ++d) X.push_back(train[d].ids);
            auto [Y, backprop] = model.begin_update(X);
            List<Floats2d> dY;
            for (std::size_t d = 0; d < Y.size(); ++d) {
                auto [g, l] = loss_fn(Y[d], train[b + d].tags);
                loss += l;
                dY.push_back(std::move(g));
            }
            backprop(dY);
            model.finish_update(opt);
        }
        List<Ints2d> X;
        for (const auto& doc : dev) X.push_back(doc.ids);
        const List<Floats2d> P = model.predict(X);
        std::size_t right = 0, words = 0;
        for (std::size_t d = 0; d < P.size(); ++d)
            for (std::size_t i = 0; i < P[d].shape(0); ++i, ++words) {
                std::size_t best = 0;
                for (std::size_t t = 1; t < kTags; ++t)
                    if (P[d](i, t) > P[d](i, best)) best = t;
                right += best == std::size_t(dev[d].tags(i));
            }
        std::printf("epoch %d: loss %.3f, dev accuracy %.3f\n", epoch, loss, double(right) / double(words));
    }
    const auto bytes = model.to_bytes();
    auto restored = make_tagger();
    restored.from_bytes(bytes);
    return restored.predict(List<Ints2d>{dev[0].ids}).size() == 1 ? 0 : 1;
}
