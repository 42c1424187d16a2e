// tenon: describe, train, evaluate, predict and codegen from a Thinc-format config (docs/configs.md,
// "The tenon command").
//   tenon describe CONFIG [--no-data] [--section.key VALUE ...]
//   tenon train CONFIG --output DIR [--section.key VALUE ...]
//   tenon evaluate DIR [--corpus dev|test|NAME] [--section.key VALUE ...]
//   tenon predict DIR INPUT [--limit N]          (INPUT "-": JSON lines on standard input)
//   tenon codegen CONFIG|DIR [--output FILE] [--namespace NAME] [--section.key VALUE ...]
// Every error is a tenon::Error with its id; the status is then 1 (2 for the command line).
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include <unistd.h>

#include "cli.hpp"
#include "tenon/error.hpp"

namespace {

const char* const usage =
    "usage: tenon describe CONFIG [--no-data] [--section.key VALUE ...]\n"
    "       tenon train CONFIG --output DIR [--section.key VALUE ...]\n"
    "       tenon evaluate DIR [--corpus dev|test] [--section.key VALUE ...]\n"
    "       tenon predict DIR INPUT [--limit N]     (INPUT -: JSON lines from standard input)\n"
    "       tenon codegen CONFIG|DIR [--output FILE] [--namespace NAME] [--section.key VALUE ...]\n"
    "CONFIG: a Thinc-format config with [model], [training] and [corpora.train] / [corpora.dev];\n"
    "DIR: what train writes (config.cfg, model.tenon); codegen writes the C++ header of the config's\n"
    "model as a static type (standard output, or FILE). --section.key VALUE overrides a value of the\n"
    "config (--training.max_epochs 1). See docs/configs.md, \"The tenon command\".\n";

struct UsageError : tenon::Error {
    explicit UsageError(const std::string& m) : tenon::Error(m, "tenon-E320") {}
};

std::size_t parse_count(const std::string& opt, const std::string& v) {
    std::size_t pos = 0;
    unsigned long long n = 0;
    try {
        n = std::stoull(v, &pos);
    } catch (const std::exception&) {
        pos = 0;
    }
    if (v.empty() || pos != v.size() || v[0] == '-')
        throw UsageError(opt + ": expected a count (0 or more), found '" + v + "'");
    return static_cast<std::size_t>(n);
}

tenon::cli::Options parse(const std::string& cmd, int argc, char** argv) {
    tenon::cli::Options o;
    std::vector<std::string> positional;
    std::vector<std::string> rest;  // overrides: --section.key VALUE
    for (int i = 2; i < argc; ++i) {
        std::string a = argv[i];
        auto value = [&](const std::string& name) -> std::string {
            const std::string eq = name + "=";
            if (a.rfind(eq, 0) == 0) return a.substr(eq.size());
            if (i + 1 >= argc) throw UsageError(name + " needs a value");
            return argv[++i];
        };
        auto is = [&](const std::string& name) { return a == name || a.rfind(name + "=", 0) == 0; };
        if (is("--output") && (cmd == "train" || cmd == "codegen")) {
            o.dir = value("--output");
        } else if (is("--corpus") && cmd == "evaluate") {
            o.corpus = value("--corpus");
        } else if (is("--limit") && cmd == "predict") {
            o.limit = parse_count("--limit", value("--limit"));
        } else if (is("--namespace") && cmd == "codegen") {
            o.ns = value("--namespace");
        } else if (a == "--no-data" && cmd == "describe") {
            o.no_data = true;
        } else if (a.rfind("--", 0) == 0) {
            if (cmd == "predict") throw UsageError("predict takes no option " + a + " (it takes --limit N)");
            if (a.find('.') == std::string::npos || a.size() < 4)
                throw UsageError("unknown option " + a + " for " + cmd +
                                 " (a config override is --section.key VALUE, e.g. --training.max_epochs 1)");
            rest.push_back(a);
            if (a.find('=') == std::string::npos) {
                if (i + 1 >= argc) throw UsageError(a + " needs a value (--section.key VALUE)");
                rest.push_back(argv[++i]);
            }
        } else {
            positional.push_back(a);
        }
    }
    const std::size_t want = cmd == "predict" ? 2 : 1;
    if (positional.size() != want)
        throw UsageError(cmd + ": expected " + (cmd == "predict" ? "DIR and INPUT" : cmd == "evaluate" ? "DIR" : cmd == "codegen" ? "CONFIG or DIR" : "CONFIG") +
                         ", found " + std::to_string(positional.size()) + " arguments");
    if (cmd == "describe" || cmd == "train" || cmd == "codegen") o.config_path = positional[0];
    else o.dir = positional[0];
    if (cmd == "predict") o.input = positional[1];
    if (cmd == "train" && o.dir.empty()) throw UsageError("train: --output DIR is required");
    std::vector<const char*> args{"tenon"};
    for (const auto& r : rest) args.push_back(r.c_str());
    o.overrides = tenon::config::overrides_from_args(static_cast<int>(args.size()), args.data());
    return o;
}

}  // namespace

int main(int argc, char** argv) {
    // Rows and messages in the order they happen, in a log too.
    std::setvbuf(stdout, nullptr, _IOLBF, 0);
    if (argc < 2 || !std::strcmp(argv[1], "-h") || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "help")) {
        std::fputs(usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    const std::string cmd = argv[1];
    try {
        if (cmd != "describe" && cmd != "train" && cmd != "evaluate" && cmd != "predict" && cmd != "codegen")
            throw UsageError("unknown command '" + cmd + "' (the commands: describe, train, evaluate, predict, codegen)");
        const tenon::cli::Options o = parse(cmd, argc, argv);
        if (cmd == "describe") return tenon::cli::describe(o);
        if (cmd == "train") return tenon::cli::train(o);
        if (cmd == "evaluate") return tenon::cli::evaluate(o);
        if (cmd == "codegen") return tenon::cli::codegen(o);
        return tenon::cli::predict(o);
    } catch (const UsageError& e) {
        std::fflush(stdout);
        std::fprintf(stderr, "error: %s\n%s", e.what(), usage);
        return 2;
    } catch (const tenon::Error& e) {
        std::fflush(stdout);
        std::fprintf(stderr, "%serror: %s\n", isatty(fileno(stderr)) ? "\n" : "", e.what());
        return 1;
    } catch (const std::exception& e) {
        std::fflush(stdout);
        std::fprintf(stderr, "error: %s (an unexpected error: please report it)\n", e.what());
        return 1;
    }
}
