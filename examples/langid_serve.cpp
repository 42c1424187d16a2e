// A minimal service: loads the word-language identifier that langid_train saved, then reads
// documents on stdin, one per line, and prints the language, its probability and the line.
// A file of another architecture or a damaged file is refused before any line is read.
//   build/examples/langid_serve [model file = langid.tenon] < documents.txt
#include "langid_model.hpp"

#include <cstdio>
#include <iostream>

using namespace tenon;

int main(int argc, char** argv) {
    const std::string path = argc > 1 ? argv[1] : "langid.tenon";
    langid::Model model = langid::make_model();
    try {
        model.from_disk(path);  // no sample data, no random initialisation
    } catch (const Error& e) {
        std::fprintf(stderr, "cannot load %s: %s\n", path.c_str(), e.what());
        return 1;
    }
    model.freeze_weights();  // serving: its plan keeps the Maxout and Softmax weights packed
    for (std::string line; std::getline(std::cin, line);) {
        const auto words = langid::split_words(line);
        if (words.empty()) continue;
        std::vector<Ints2d> doc;
        doc.push_back(langid::featurize(words));
        const Floats2d P = model.predict(List<Ints2d>(std::move(doc)));
        std::size_t best = 0;
        for (std::size_t c = 1; c < P.shape(1); ++c)
            if (P(0, c) > P(0, best)) best = c;
        std::printf("%s\t%.3f\t%s\n", langid::languages[best].name, static_cast<double>(P(0, best)), line.c_str());
        std::fflush(stdout);
    }
    return 0;
}
