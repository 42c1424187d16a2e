// The word-language identifier that examples/langid_train.cpp trains and saves and
// examples/langid_serve.cpp loads: what both programs share, as a real service shares it
// with its training job (the model's type, and how text becomes features).
//
// A document is a line of words. Each word gives four ids (spaCy's NORM, PREFIX, SUFFIX and
// SHAPE attributes, hashed), embedded with one HashEmbed each; a window encoder mixes each word
// with its neighbours; the mean over the words goes into a softmax over the languages.
#pragma once
#include <tenon/tenon.hpp>

#include <array>
#include <cctype>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace langid {

// The languages, in the order of the model's output columns, with their Debian word lists.
struct Language {
    const char* name;
    const char* word_list;  // from the packages wamerican, wngerman, wfrench, wspanish
};
inline constexpr std::array<Language, 4> languages{{
    {"english", "/usr/share/dict/american-english"},
    {"german", "/usr/share/dict/ngerman"},
    {"french", "/usr/share/dict/french"},
    {"spanish", "/usr/share/dict/spanish"},
}};

inline constexpr std::size_t width = 64;

// The model's type is all a loader needs: the file has the dims, attributes and weights.
inline auto make_model() {
    using namespace tenon;
    const MaxoutOptions maxout{.nP = 3, .dropout = 0.0, .normalize = true};
    auto embed = list2ragged<Ints2d>() >>
                 with_array<BasicRagged<Ints2d>>(concatenate(HashEmbed<width>(5000, 8u, 0), HashEmbed<width>(2000, 9u, 1),
                                                             HashEmbed<width>(2000, 10u, 2), HashEmbed<width>(500, 11u, 3))) >>
                 with_array<Ragged>(Maxout<width>(maxout)) >> ragged2list();
    auto encode = with_array<List<Floats2d>>(clone(residual(expand_window<1>() >> Maxout<width>(maxout)), 2), 2);
    return embed >> encode >> list2ragged() >> reduce_mean() >> Softmax<languages.size()>();
}
using Model = decltype(make_model());

// FNV-1a over UTF-8 bytes, folded to 31 bits (HashEmbed hashes the id again with its seed).
inline std::int32_t hash_text(std::string_view s) {
    std::uint64_t h = 1469598103934665603ull;
    for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
    return static_cast<std::int32_t>((h ^ (h >> 31)) & 0x7fffffff);
}

// "Hello," -> "Xxxxx,": letters by case, digits as d, runs cut at 4 (spaCy's word shape).
inline std::string shape_of(std::string_view word) {
    std::string out;
    char last = 0;
    int run = 0;
    for (unsigned char c : word) {
        const char s = c >= 0x80 ? 'x' : std::isupper(c) ? 'X' : std::islower(c) ? 'x' : std::isdigit(c) ? 'd' : static_cast<char>(c);
        run = s == last ? run + 1 : 1;
        last = s;
        if (run <= 4) out += s;
    }
    return out;
}

inline std::string lower(std::string_view w) {
    std::string out(w);
    for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

// One row of four ids per word (UTF-8 prefixes and suffixes of 3 bytes are good enough here).
inline tenon::Ints2d featurize(const std::vector<std::string>& words) {
    tenon::Ints2d X({words.size(), 4});
    for (std::size_t i = 0; i < words.size(); ++i) {
        const std::string norm = lower(words[i]);
        X(i, 0) = hash_text(norm);
        // (The prefix and suffix hash with a marker byte first, so "abc" as a word, a prefix
        // and a suffix are three different ids.)
        std::string prefix(1, 'P'), suffix(1, 'S');
        prefix.append(norm, 0, 3);
        suffix.append(norm, norm.size() > 3 ? norm.size() - 3 : 0, 3);
        X(i, 1) = hash_text(prefix);
        X(i, 2) = hash_text(suffix);
        X(i, 3) = hash_text(shape_of(words[i]));
    }
    return X;
}

inline std::vector<std::string> split_words(std::string_view line) {
    std::vector<std::string> out;
    std::size_t i = 0;
    while (i < line.size()) {
        while (i < line.size() && std::isspace(static_cast<unsigned char>(line[i]))) ++i;
        std::size_t j = i;
        while (j < line.size() && !std::isspace(static_cast<unsigned char>(line[j]))) ++j;
        if (j > i) out.emplace_back(line.substr(i, j - i));
        i = j;
    }
    return out;
}

}  // namespace langid
