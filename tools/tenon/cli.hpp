// The `tenon` command (docs/configs.md, "The tenon command"): describe, train, evaluate and
// predict from a Thinc-format config, and write its model as a C++ type (codegen). corpus.cpp reads the data a config names; commands.cpp
// builds, trains and runs the model (the one file that instantiates the models' code);
// main.cpp reads the command line. Errors: tenon-E320 ... E327.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tenon/config/config.hpp"
#include "tenon/types/array.hpp"
#include "tenon/types/list.hpp"

namespace tenon::cli {

// Examples of one kind: images (rows of X) or documents (one Ints2d of token ids each, one
// column), each with its label as text ("" where the data has none).
struct Corpus {
    std::string where;  // "[corpora.train]" or the file's name, for messages
    bool text = false;
    Floats2d X;
    List<Ints2d> docs;
    std::vector<std::string> labels;
    std::size_t words = 0;  // tokens in all documents
    std::size_t size() const noexcept { return text ? docs.size() : X.shape(0); }
};

// The corpus of a config section ("corpora.train"): its @readers name and arguments
// (tenon.IdxCorpus.v1: images, labels, limit; tenon.JsonlCorpus.v1: path, limit).
// `need_labels`: every example must have one (tenon-E324).
Corpus read_corpus(const config::Config& cfg, const std::string& path, bool need_labels);
// The inputs of `tenon predict`: an IDX images file, or JSON lines (labels optional).
Corpus read_inputs(const std::string& file, bool text, std::size_t limit);

// A token's id: 32-bit FNV-1a of its UTF-8 bytes, as a signed 32-bit integer.
std::int32_t hash_token(std::string_view token);
// A text's tokens: split at ASCII whitespace, nothing else (no lowercasing, no punctuation rules).
std::vector<std::string_view> tokenize(std::string_view text);

[[noreturn]] void fail(const char* id, const std::string& message);

// The commands; each returns the exit status. `overrides` are --section.key value pairs.
struct Options {
    std::string config_path;     // describe, train: the config file; codegen: it or a trained directory
    std::string ns;              // codegen: --namespace
    std::string dir;             // train, codegen: --output; evaluate, predict: the trained directory
    std::string input;           // predict: the input file
    std::string corpus;          // evaluate: --corpus (default: test if the config has one, else dev)
    std::size_t limit = 0;       // predict: --limit (0: all)
    bool no_data = false;        // describe: --no-data
    config::Overrides overrides;
};
int describe(const Options& o);
int train(const Options& o);
int evaluate(const Options& o);
int predict(const Options& o);
int codegen(const Options& o);

}  // namespace tenon::cli
