// The fuzz harness without libFuzzer (tests/fuzz/README.md):
//   fuzz_replay PATH...            every file (a directory: every file in it) through the
//                                  harness, after the generated seeds (which must all load)
//   fuzz_replay --write-seeds DIR  writes the seeds into DIR (seed-0, seed-1, ...)
// `make test` runs it on tests/fuzz/corpus/ (the crashes fuzzing found, kept as regressions).
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "fuzz_harness.hpp"

namespace fs = std::filesystem;

int main(int argc, char** argv) {
    const auto seeds = tenon_fuzz::seeds();
    if (argc == 3 && std::string(argv[1]) == "--write-seeds") {
        fs::create_directories(argv[2]);
        for (std::size_t i = 0; i < seeds.size(); ++i) {
            std::ofstream f(fs::path(argv[2]) / ("seed-" + std::to_string(i)), std::ios::binary);
            f.write(reinterpret_cast<const char*>(seeds[i].data()), static_cast<std::streamsize>(seeds[i].size()));
            if (!f) {
                std::fprintf(stderr, "fuzz_replay: cannot write %s\n", argv[2]);
                return 1;
            }
        }
        std::printf("fuzz_replay: wrote %zu seeds to %s\n", seeds.size(), argv[2]);
        return 0;
    }
    // The seeds are files the models wrote: each must load (whatever its selector byte says).
    for (std::size_t i = 0; i < seeds.size(); ++i)
        if (tenon_fuzz::run_one(seeds[i].data(), seeds[i].size()) != tenon_fuzz::Outcome::loaded) {
            std::fprintf(stderr, "fuzz_replay: seed %zu does not load\n", i);
            return 1;
        }
    std::vector<fs::path> files;
    for (int a = 1; a < argc; ++a) {
        const fs::path p(argv[a]);
        if (fs::is_directory(p)) {
            for (const auto& e : fs::directory_iterator(p))
                if (e.is_regular_file()) files.push_back(e.path());
        } else {
            files.push_back(p);
        }
    }
    std::sort(files.begin(), files.end());
    std::size_t loaded = 0;
    for (const auto& p : files) {
        std::ifstream f(p, std::ios::binary);
        if (!f) {
            std::fprintf(stderr, "fuzz_replay: cannot read %s\n", p.c_str());
            return 1;
        }
        const std::vector<std::uint8_t> data{std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
        std::printf("%s\n", p.c_str());
        std::fflush(stdout);
        loaded += tenon_fuzz::run_one(data.data(), data.size()) == tenon_fuzz::Outcome::loaded;
    }
    std::printf("fuzz_replay: %zu seeds loaded; %zu files replayed (%zu loaded, %zu rejected), no crash\n",
                seeds.size(), files.size(), loaded, files.size() - loaded);
    return 0;
}
