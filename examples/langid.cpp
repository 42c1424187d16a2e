// Which language is a word? A character n-gram model trained on Debian's word lists (make
// demo-langid installs them): eleven languages, a fixed train/dev/test split of words that are
// in one list only, held-out accuracy, per-language precision and recall, a confusion table.
//
//   langid train [--arch attention|mean|bilstm] [--epochs N] [--model FILE] [--data DIR]
//   langid [--model FILE] WORD...        the language of each word (stdin, a word a line, if none)
//
// Each word is a sequence of its characters between boundary marks; each position gives three
// ids (its character, the bigram and the trigram ending there, hashed), embedded with a
// HashEmbed each and mixed by a Maxout, then a window encoder (two residual expand_window >>
// Maxout blocks), then one vector per word (ParametricAttention's weighted sum, or the mean;
// or a BiLSTM over the characters and the mean), then a softmax over the languages.
// `--data DIR` writes the split with the features (DIR/{train,dev,test}.tsv): bench/langid_thinc.py
// trains the same architecture in Thinc on the same ids (make bench-langid).
#include <tenon/tenon.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <numeric>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

using namespace tenon;

namespace {

struct Language {
    const char* code;
    const char* name;
    const char* word_list;  // Debian's: packages wamerican wngerman wfrench wspanish witalian wportuguese
};                          //          wdutch wswedish wnorwegian wdanish wpolish
constexpr std::array<Language, 11> languages{{
    {"en", "english", "/usr/share/dict/american-english"},
    {"de", "german", "/usr/share/dict/ngerman"},
    {"fr", "french", "/usr/share/dict/french"},
    {"es", "spanish", "/usr/share/dict/spanish"},
    {"it", "italian", "/usr/share/dict/italian"},
    {"pt", "portuguese", "/usr/share/dict/portuguese"},
    {"nl", "dutch", "/usr/share/dict/dutch"},
    {"sv", "swedish", "/usr/share/dict/swedish"},
    {"no", "norwegian", "/usr/share/dict/bokmaal"},
    {"da", "danish", "/usr/share/dict/danish"},
    {"pl", "polish", "/usr/share/dict/polish"},
}};
constexpr std::size_t n_lang = languages.size();
constexpr std::size_t per_train = 8000, per_dev = 1000, per_test = 1000;

// ---- the models ---------------------------------------------------------------------------
constexpr std::size_t W = 64;

auto embed() {
    const MaxoutOptions mo{.nP = 3, .dropout = 0.0, .normalize = true};
    return with_array<List<Ints2d>>(concatenate(HashEmbed<W, Ints2d>(2000, HashEmbedOptions{.seed = 1u, .column = 0}),
                                                HashEmbed<W, Ints2d>(4000, HashEmbedOptions{.seed = 2u, .column = 1}),
                                                HashEmbed<W, Ints2d>(8000, HashEmbedOptions{.seed = 3u, .column = 2})) >>
                                    Maxout<W>(mo));
}
auto encode() {
    const MaxoutOptions mo{.nP = 3, .dropout = 0.0, .normalize = true};
    return with_array<List<Floats2d>>(clone(residual(expand_window<1>() >> Maxout<W>(mo)), 2), 1);
}
auto attention_layers() {
    return embed() >> encode() >> list2ragged() >> ParametricAttention<W>() >> reduce_sum() >> Softmax<n_lang>();
}
auto mean_layers() { return embed() >> encode() >> list2ragged() >> reduce_mean() >> Softmax<n_lang>(); }
auto bilstm_layers() {
    return embed() >> with_padded<List<Floats2d>>(BiLSTM<W, W>()) >> list2ragged() >> reduce_mean() >> Softmax<n_lang>();
}
// Named types (docs/diagnostics.md, "Naming a model type"): what a file loads into.
struct AttentionModel : decltype(attention_layers()) {
    AttentionModel() : Chain(attention_layers()) {}
};
struct MeanModel : decltype(mean_layers()) {
    MeanModel() : Chain(mean_layers()) {}
};
struct BiLSTMModel : decltype(bilstm_layers()) {
    BiLSTMModel() : Chain(bilstm_layers()) {}
};

// ---- words and features -----------------------------------------------------------------------
// A word list is UTF-8, or Latin-1 (wswedish, wnorwegian): read as such, returned as UTF-8.
bool valid_utf8(std::string_view s) {
    for (std::size_t i = 0; i < s.size();) {
        const auto c = static_cast<unsigned char>(s[i]);
        const std::size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        if (n == 0 || i + n > s.size()) return false;
        for (std::size_t k = 1; k < n; ++k)
            if ((static_cast<unsigned char>(s[i + k]) >> 6) != 2) return false;
        i += n;
    }
    return true;
}
std::string latin1_to_utf8(std::string_view s) {
    std::string out;
    for (unsigned char c : s) {
        if (c < 0x80) {
            out += static_cast<char>(c);
        } else {
            out += static_cast<char>(0xC0 | (c >> 6));
            out += static_cast<char>(0x80 | (c & 0x3F));
        }
    }
    return out;
}
// The characters of a UTF-8 word.
std::vector<std::string> chars_of(std::string_view w) {
    std::vector<std::string> out;
    for (std::size_t i = 0; i < w.size();) {
        const auto c = static_cast<unsigned char>(w[i]);
        const std::size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : 4;
        out.emplace_back(w.substr(i, n));
        i += n;
    }
    return out;
}

std::int32_t hash_text(std::string_view s) {  // FNV-1a, folded to 31 bits
    std::uint64_t h = 1469598103934665603ull;
    for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
    return static_cast<std::int32_t>((h ^ (h >> 31)) & 0x7fffffff);
}

// One row per position of "<word>": the ids of the character, of the bigram and of the
// trigram that end there.
Ints2d featurize(std::string_view word) {
    std::vector<std::string> s = chars_of(word);
    s.insert(s.begin(), "<");
    s.emplace_back(">");
    Ints2d X({s.size(), 3});
    for (std::size_t t = 0; t < s.size(); ++t) {
        const std::string prev = t >= 1 ? s[t - 1] : "^", prev2 = t >= 2 ? s[t - 2] : "^";
        X(t, 0) = hash_text("1" + s[t]);
        X(t, 1) = hash_text("2" + prev + s[t]);
        X(t, 2) = hash_text("3" + prev2 + prev + s[t]);
    }
    return X;
}

struct Example {
    std::string word;
    std::size_t label;
    Ints2d X;
};
struct Split {
    std::vector<Example> train, dev, test;
};

// A fixed sample of each list (reservoir sampling with a fixed seed: the same words on every
// machine with the same lists), words of letters only; a word in two languages' samples is
// dropped from both (its label would be a coin toss).
Split make_split() {
    const std::size_t want = per_train + per_dev + per_test;
    std::vector<std::vector<std::string>> samples(n_lang);
    for (std::size_t l = 0; l < n_lang; ++l) {
        std::ifstream in(languages[l].word_list);
        if (!in)
            throw Error(std::string("cannot read the word list ") + languages[l].word_list +
                        " (make demo-langid installs the lists: apt-get install wamerican wngerman wfrench wspanish "
                        "witalian wportuguese wdutch wswedish wnorwegian wdanish wpolish)");
        Rng rng(1000 + l);
        std::size_t seen = 0;
        auto& keep = samples[l];
        const std::size_t pool = want + want / 4;  // room for the words dropped below
        for (std::string w; std::getline(in, w);) {
            if (!w.empty() && w.back() == '\r') w.pop_back();
            if (w.size() < 2 || w.find_first_of("'-. 0123456789/") != std::string::npos) continue;
            if (!valid_utf8(w)) w = latin1_to_utf8(w);
            ++seen;
            if (keep.size() < pool) keep.push_back(std::move(w));
            else if (const std::size_t j = rng.below(seen); j < pool) keep[j] = std::move(w);
        }
        if (keep.size() < pool)
            throw Error(std::string("the word list ") + languages[l].word_list + " has only " +
                        std::to_string(keep.size()) + " usable words");
    }
    std::unordered_map<std::string, int> count;
    for (const auto& s : samples)
        for (const auto& w : s) ++count[w];
    Split split;
    for (std::size_t l = 0; l < n_lang; ++l) {
        std::vector<std::string> words;
        for (auto& w : samples[l])
            if (count[w] == 1) words.push_back(std::move(w));
        std::sort(words.begin(), words.end());  // (the reservoir's order depends on the list's)
        Rng rng(77 + l);
        for (std::size_t i = words.size(); i > 1; --i) std::swap(words[i - 1], words[rng.below(i)]);
        if (words.size() < want) throw Error(std::string("too few unique words for ") + languages[l].name);
        for (std::size_t i = 0; i < want; ++i) {
            Example e{words[i], l, featurize(words[i])};
            (i < per_test ? split.test : i < per_test + per_dev ? split.dev : split.train).push_back(std::move(e));
        }
    }
    return split;
}

void write_split(const Split& split, const std::string& dir) {
    for (const auto& [name, part] : {std::pair{"train", &split.train}, {"dev", &split.dev}, {"test", &split.test}}) {
        const std::string path = dir + "/" + name + ".tsv";
        std::ofstream out(path);
        if (!out) throw Error("cannot write " + path);
        for (const auto& e : *part) {
            out << e.label << '\t' << e.word << '\t';
            for (std::size_t i = 0; i < e.X.size(); ++i) out << (i ? " " : "") << e.X[i];
            out << '\n';
        }
    }
}

List<Ints2d> batch_of(const std::vector<Example>& xs, const std::vector<std::size_t>& order, std::size_t b,
                      std::size_t e) {
    std::vector<Ints2d> out;
    out.reserve(e - b);
    for (std::size_t i = b; i < e; ++i) out.push_back(xs[order[i]].X);
    return List<Ints2d>(std::move(out));
}

template <class M>
std::vector<std::size_t> predict_all(const M& model, const std::vector<Example>& xs) {
    std::vector<std::size_t> order(xs.size()), out;
    std::iota(order.begin(), order.end(), 0);
    for (std::size_t b = 0; b < xs.size(); b += 512) {
        const std::size_t e = std::min(xs.size(), b + 512);
        const Floats2d P = model.predict(batch_of(xs, order, b, e));
        for (std::size_t r = 0; r < P.shape(0); ++r) {
            std::size_t best = 0;
            for (std::size_t c = 1; c < n_lang; ++c)
                if (P(r, c) > P(r, best)) best = c;
            out.push_back(best);
        }
    }
    return out;
}

double accuracy(const std::vector<Example>& xs, const std::vector<std::size_t>& guess) {
    std::size_t ok = 0;
    for (std::size_t i = 0; i < xs.size(); ++i) ok += guess[i] == xs[i].label;
    return xs.empty() ? 0.0 : double(ok) / double(xs.size());
}

void report(const std::vector<Example>& test, const std::vector<std::size_t>& guess) {
    std::array<std::array<std::size_t, n_lang>, n_lang> confusion{};
    for (std::size_t i = 0; i < test.size(); ++i) ++confusion[test[i].label][guess[i]];
    std::printf("\n%-11s %9s %9s %9s\n", "language", "precision", "recall", "f1");
    for (std::size_t l = 0; l < n_lang; ++l) {
        std::size_t tp = confusion[l][l], predicted = 0, actual = 0;
        for (std::size_t k = 0; k < n_lang; ++k) {
            predicted += confusion[k][l];
            actual += confusion[l][k];
        }
        const double p = predicted ? double(tp) / double(predicted) : 0.0, r = actual ? double(tp) / double(actual) : 0.0;
        std::printf("%-11s %9.3f %9.3f %9.3f\n", languages[l].name, p, r, p + r > 0 ? 2 * p * r / (p + r) : 0.0);
    }
    std::printf("\nconfusion (rows: the word's language, columns: the prediction)\n     ");
    for (const auto& l : languages) std::printf("%5s", l.code);
    std::printf("\n");
    for (std::size_t l = 0; l < n_lang; ++l) {
        std::printf("%5s", languages[l].code);
        for (std::size_t k = 0; k < n_lang; ++k) std::printf("%5zu", confusion[l][k]);
        std::printf("\n");
    }
}

template <class M>
int train(M model, const std::string& arch, int epochs, const std::string& path, const std::string& data_dir) {
    fix_random_seed(0);
    const auto t_data = std::chrono::steady_clock::now();
    const Split split = make_split();
    std::printf("%zu training, %zu dev, %zu test words in %zu languages (%.1f s to read and sample the lists)\n",
                split.train.size(), split.dev.size(), split.test.size(), n_lang,
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t_data).count());
    if (!data_dir.empty()) {
        write_split(split, data_dir);
        std::printf("wrote %s/{train,dev,test}.tsv\n", data_dir.c_str());
    }
    model.initialize();  // every width is in the type
    Optimizer opt = Adam(0.001);
    std::vector<std::size_t> order(split.train.size());
    std::iota(order.begin(), order.end(), 0);
    Rng rng(5);
    const std::size_t batch = 128;
    Progress progress;
    double train_seconds = 0.0;
    for (int epoch = 1; epoch <= epochs; ++epoch) {
        for (std::size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng.below(i)]);
        progress.start_epoch(std::size_t(epoch), (order.size() + batch - 1) / batch);
        const auto t0 = std::chrono::steady_clock::now();
        for (std::size_t b = 0; b < order.size(); b += batch) {
            const std::size_t e = std::min(order.size(), b + batch);
            auto [P, backprop] = model.begin_update(batch_of(split.train, order, b, e));
            Floats2d dP(P);
            double loss = 0;
            for (std::size_t r = 0; r < e - b; ++r) {
                const std::size_t y = split.train[order[b + r]].label;
                loss -= std::log(std::max(P(r, y), 1e-12f));
                dP(r, y) -= 1.0f;  // softmax + cross-entropy: P - Y
            }
            backprop(dP);
            model.finish_update(opt);
            progress.step(loss);
        }
        train_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        progress.end_epoch({{"loss", progress.loss() / double(order.size())},
                            {"dev accuracy", accuracy(split.dev, predict_all(model, split.dev))}});
    }
    const std::vector<std::size_t> guess = predict_all(model, split.test);
    const double test_acc = accuracy(split.test, guess);
    std::printf("\ntest accuracy %.4f (%s, %d epochs, %.2f s of training: %.0f words/s)\n", test_acc, arch.c_str(),
                epochs, train_seconds, double(epochs) * double(split.train.size()) / train_seconds);
    report(split.test, guess);
    model.to_disk(path);
    std::printf("\nsaved %s; try: langid --model %s Haus maison casa\n", path.c_str(), path.c_str());
    std::printf("result arch=%s epochs=%d train_s=%.3f test_acc=%.4f\n", arch.c_str(), epochs, train_seconds, test_acc);
    return 0;
}

// Loads the file into the type it was written from (a file of another architecture is refused
// and leaves the model as it was: the next type is tried).
template <class M>
bool try_load(M& model, const std::string& path) {
    try {
        model.from_disk(path);
        return true;
    } catch (const LoadError&) {
        return false;
    }
}

template <class M>
int answer(const M& model, std::vector<std::string> words) {
    const bool from_stdin = words.empty();
    auto one = [&](const std::string& w) {
        std::vector<Ints2d> doc;
        doc.push_back(featurize(w));
        const Floats2d P = model.predict(List<Ints2d>(std::move(doc)));
        std::size_t best = 0;
        for (std::size_t c = 1; c < n_lang; ++c)
            if (P(0, c) > P(0, best)) best = c;
        std::printf("%s\t%s\t%.3f\n", w.c_str(), languages[best].name, static_cast<double>(P(0, best)));
        std::fflush(stdout);
    };
    for (const auto& w : words) one(w);
    if (from_stdin)
        for (std::string w; std::getline(std::cin, w);)
            if (!w.empty()) one(w);
    return 0;
}

int usage() {
    std::fprintf(stderr,
                 "usage: langid train [--arch attention|mean|bilstm] [--epochs N] [--model FILE] [--data DIR]\n"
                 "       langid [--model FILE] WORD...   (words on stdin, one a line, when none are given)\n");
    return 2;
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<std::string> args(argv + 1, argv + argc);
    std::string path = "langid-words.tenon", arch = "attention", data_dir;
    int epochs = 5;
    bool training = !args.empty() && args[0] == "train";
    std::vector<std::string> words;
    for (std::size_t i = training ? 1 : 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        const bool has_value = i + 1 < args.size();
        if (a == "--model" && has_value) path = args[++i];
        else if (a == "--arch" && has_value && training) arch = args[++i];
        else if (a == "--epochs" && has_value && training) epochs = std::atoi(args[++i].c_str());
        else if (a == "--data" && has_value && training) data_dir = args[++i];
        else if (a.rfind("--", 0) == 0) return usage();
        else if (!training) words.push_back(a);
        else return usage();
    }
    try {
        if (training) {
            if (epochs < 1) return usage();
            if (arch == "attention") return train(AttentionModel(), arch, epochs, path, data_dir);
            if (arch == "mean") return train(MeanModel(), arch, epochs, path, data_dir);
            if (arch == "bilstm") return train(BiLSTMModel(), arch, epochs, path, data_dir);
            return usage();
        }
        if (!std::ifstream(path)) {
            std::fprintf(stderr, "cannot read %s: train a model first (langid train --model %s)\n", path.c_str(), path.c_str());
            return 1;
        }
        if (AttentionModel m; try_load(m, path)) return answer(m, words);
        if (MeanModel m; try_load(m, path)) return answer(m, words);
        if (BiLSTMModel m; try_load(m, path)) return answer(m, words);
        std::fprintf(stderr, "cannot load %s: not a word-language model of any of the three architectures (train one: "
                             "langid train)\n", path.c_str());
        return 1;
    } catch (const Error& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
}
