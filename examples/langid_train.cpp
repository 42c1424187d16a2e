// Trains the word-language identifier of langid_model.hpp on Debian's word lists and saves
// it; examples/langid_serve.cpp loads the file and answers from stdin.
//   build/examples/langid_train [model file = langid.tenon] [epochs = 3]
#include "langid_model.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <numeric>

using namespace tenon;

namespace {

std::vector<std::string> read_words(const char* path) {
    std::ifstream in(path);
    if (!in) throw Error(std::string("cannot read the word list ") + path + " (apt-get install wamerican wngerman wfrench wspanish)");
    std::vector<std::string> words;
    for (std::string w; std::getline(in, w);)
        if (!w.empty() && w.find('\'') == std::string::npos) words.push_back(w);
    return words;
}

struct Doc {
    Ints2d X;
    std::size_t label;
};

// Documents of 1 to 8 words of one language, each word capitalised now and then.
std::vector<Doc> make_docs(const std::vector<std::vector<std::string>>& lists, std::size_t per_language, Rng& rng) {
    std::vector<Doc> docs;
    for (std::size_t lang = 0; lang < lists.size(); ++lang)
        for (std::size_t d = 0; d < per_language; ++d) {
            std::vector<std::string> words(1 + rng.below(8));
            for (auto& w : words) {
                w = lists[lang][rng.below(lists[lang].size())];
                if (rng.below(5) == 0 && !w.empty()) w[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(w[0])));
            }
            docs.push_back({langid::featurize(words), lang});
        }
    return docs;
}

List<Ints2d> batch_of(const std::vector<Doc>& docs, const std::vector<std::size_t>& order, std::size_t b, std::size_t e) {
    std::vector<Ints2d> xs;
    for (std::size_t i = b; i < e; ++i) xs.push_back(docs[order[i]].X);
    return List<Ints2d>(std::move(xs));
}

}  // namespace

int main(int argc, char** argv) {
    const std::string path = argc > 1 ? argv[1] : "langid.tenon";
    const int epochs = argc > 2 ? std::atoi(argv[2]) : 3;
    try {
        fix_random_seed(0);
        Rng rng(1);
        std::vector<std::vector<std::string>> lists;
        for (const auto& l : langid::languages) lists.push_back(read_words(l.word_list));
        const std::vector<Doc> train = make_docs(lists, 4000, rng), dev = make_docs(lists, 500, rng);

        langid::Model model = langid::make_model();
        model.initialize();  // every width is in the type: no sample data needed
        Optimizer opt = Adam(0.001);
        CategoricalCrossentropy loss;
        std::vector<std::size_t> order(train.size()), dev_order(dev.size());
        std::iota(order.begin(), order.end(), 0);
        std::iota(dev_order.begin(), dev_order.end(), 0);
        const std::size_t batch = 64, n_lang = langid::languages.size();
        Progress progress;  // a bar on a terminal; one line per epoch (and nothing else in a log)
        for (int epoch = 1; epoch <= epochs; ++epoch) {
            for (std::size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng.below(i)]);
            progress.start_epoch(std::size_t(epoch), (order.size() + batch - 1) / batch);
            for (std::size_t b = 0; b < order.size(); b += batch) {
                const std::size_t e = std::min(order.size(), b + batch);
                Floats2d Y({e - b, n_lang});
                for (std::size_t i = b; i < e; ++i) Y(i - b, train[order[i]].label) = 1.0f;
                auto [P, backprop] = model.begin_update(batch_of(train, order, b, e));
                // (by hand: the progress warns when it is not finite, before the loss (tenon-E134)
                // or the optimizer (E250) refuses)
                double batch_loss = 0;
                for (std::size_t i = 0; i < P.size(); ++i)
                    batch_loss -= Y[i] > 0 ? std::log(std::max(P[i], 1e-12f)) : 0.0;
                backprop(loss.get_grad(P, Y));
                model.finish_update(opt);
                progress.step(batch_loss);
            }
            std::size_t correct = 0;
            for (std::size_t b = 0; b < dev.size(); b += 256) {
                const std::size_t e = std::min(dev.size(), b + 256);
                const Floats2d P = model.predict(batch_of(dev, dev_order, b, e));
                for (std::size_t r = 0; r < P.shape(0); ++r) {
                    std::size_t best = 0;
                    for (std::size_t c = 1; c < n_lang; ++c)
                        if (P(r, c) > P(r, best)) best = c;
                    correct += best == dev[b + r].label;
                }
            }
            progress.end_epoch({{"loss", progress.loss() / double(train.size())},
                                {"dev accuracy", double(correct) / double(dev.size())}});
        }
        model.to_disk(path);
        std::printf("saved %s (%zu bytes)\n", path.c_str(), model.to_bytes().size());
        return 0;
    } catch (const Error& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
}
