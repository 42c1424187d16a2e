// The data a config names: Fashion-MNIST's IDX files and JSON lines of documents
// (tools/tenon/cli.hpp). JSON is parsed with nlohmann/json (the tool's own include path).
#include <algorithm>
#include <fstream>
#include <iostream>
#include <limits>

#include <nlohmann/json.hpp>

#include "cli.hpp"
#include "tenon/config/registry.hpp"
#include "tenon/data/idx.hpp"
#include "tenon/error.hpp"

namespace tenon::cli {

void fail(const char* id, const std::string& message) { throw Error(message, id); }

std::int32_t hash_token(std::string_view token) {
    std::uint32_t h = 2166136261u;
    for (unsigned char c : token) {
        h ^= c;
        h *= 16777619u;
    }
    return static_cast<std::int32_t>(h);
}

std::vector<std::string_view> tokenize(std::string_view text) {
    std::vector<std::string_view> out;
    std::size_t i = 0;
    auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; };
    while (i < text.size()) {
        while (i < text.size() && space(text[i])) ++i;
        const std::size_t b = i;
        while (i < text.size() && !space(text[i])) ++i;
        if (i > b) out.push_back(text.substr(b, i - b));
    }
    return out;
}

namespace {

const char* const idx_reader = "tenon.IdxCorpus.v1";
const char* const jsonl_reader = "tenon.JsonlCorpus.v1";

Corpus read_idx(const std::string& images, const std::string& labels, std::size_t limit, const std::string& where) {
    Corpus c;
    c.where = where;
    Floats2d X = read_idx_images(images);  // tenon-E140 ... E142 name the file
    std::size_t n = X.shape(0);
    Ints1d y;
    if (!labels.empty()) {
        y = read_idx_labels(labels);
        if (y.shape(0) != n)
            fail("tenon-E324", where + ": '" + images + "' has " + std::to_string(n) + " images but '" + labels +
                                   "' has " + std::to_string(y.shape(0)) + " labels");
    }
    if (limit && limit < n) n = limit;
    if (n == X.shape(0)) {
        c.X = std::move(X);
    } else {
        c.X = Floats2d({n, X.shape(1)}, uninitialized);
        std::copy(X.data(), X.data() + n * X.shape(1), c.X.data());
    }
    c.labels.resize(n);
    if (!labels.empty())
        for (std::size_t i = 0; i < n; ++i) c.labels[i] = std::to_string(y[i]);
    return c;
}

std::string label_text(const nlohmann::json& l, const std::string& at) {
    if (l.is_string()) return l.get<std::string>();
    if (l.is_number_integer()) return l.dump();
    if (l.is_boolean()) return l.get<bool>() ? "true" : "false";
    fail("tenon-E323", at + ": \"label\" must be a string or an integer, found " + l.dump());
}

Corpus read_jsonl(const std::string& path, std::size_t limit, const std::string& where) {
    std::ifstream file;
    if (path != "-") {
        file.open(path, std::ios::binary);
        if (!file) fail("tenon-E323", where + ": cannot open '" + path + "'");
    }
    std::istream& in = path == "-" ? std::cin : file;  // "-": standard input (tenon predict DIR -)
    Corpus c;
    c.where = where;
    c.text = true;
    std::string line;
    std::size_t lineno = 0;
    while (std::getline(in, line)) {
        ++lineno;
        if (limit && c.docs.size() >= limit) break;
        if (line.find_first_not_of(" \t\r") == std::string::npos) continue;  // blank lines
        const std::string at = path + ":" + std::to_string(lineno);
        nlohmann::json j;
        try {
            j = nlohmann::json::parse(line);
        } catch (const nlohmann::json::exception& e) {
            std::string what = e.what();  // "[json.exception.parse_error.101] parse error at ..."
            if (const auto k = what.find("] "); k != std::string::npos) what = what.substr(k + 2);
            fail("tenon-E323", at + ": not JSON (" + what + ")");
        }
        if (!j.is_object()) fail("tenon-E323", at + ": expected an object {\"ids\": [...] or \"text\": \"...\", \"label\": ...}");
        const auto ids = j.find("ids");
        const auto text = j.find("text");
        if ((ids == j.end()) == (text == j.end()))
            fail("tenon-E323", at + ": expected exactly one of \"ids\" (a list of integers) and \"text\" (a string)");
        std::vector<std::int32_t> toks;
        if (ids != j.end()) {
            if (!ids->is_array()) fail("tenon-E323", at + ": \"ids\" must be a list of integers, found " + ids->dump());
            for (const auto& v : *ids) {
                // Any 64-bit id (spaCy's hashes too): its low 32 bits (HashEmbed hashes them again).
                if (v.is_number_unsigned())
                    toks.push_back(static_cast<std::int32_t>(static_cast<std::uint32_t>(v.get<std::uint64_t>())));
                else if (v.is_number_integer())
                    toks.push_back(static_cast<std::int32_t>(static_cast<std::uint32_t>(v.get<std::int64_t>())));
                else
                    fail("tenon-E323", at + ": \"ids\" must be a list of integers, found " + v.dump() + " in it");
            }
        } else {
            if (!text->is_string()) fail("tenon-E323", at + ": \"text\" must be a string, found " + text->dump());
            const std::string& s = text->get_ref<const std::string&>();
            for (std::string_view t : tokenize(s)) toks.push_back(hash_token(t));
        }
        Ints2d d({toks.size(), 1}, uninitialized);
        std::copy(toks.begin(), toks.end(), d.data());
        c.words += toks.size();
        c.docs.push_back(std::move(d));
        const auto l = j.find("label");
        c.labels.push_back(l == j.end() || l->is_null() ? std::string() : label_text(*l, at));
    }
    if (in.bad()) fail("tenon-E323", where + ": read error in '" + path + "'");
    return c;
}
}  // namespace

Corpus read_corpus(const config::Config& cfg, const std::string& path, bool need_labels) {
    const config::Value* v = cfg.find(path);
    const std::string where = config::where(path);
    if (!v) fail("tenon-E322", where + ": the config has no such section (a corpus: @readers = \"" +
                                   std::string(idx_reader) + "\" or \"" + jsonl_reader + "\" and its files)");
    if (!v->is_section()) fail("tenon-E322", where + ": expected a section, found " + v->dump());
    const config::Value* ref = v->find("@readers");
    if (!ref || !ref->is_string())
        fail("tenon-E322", where + ": a corpus needs @readers = \"" + std::string(idx_reader) + "\" or \"" +
                               jsonl_reader + "\"");
    const std::string name = ref->as_string();
    // A file left null (spaCy's `train = null` in [paths]) gets a hint at the override.
    for (const char* key : {"images", "path"})
        if (const config::Value* f = v->find(key); f && f->is_null())
            fail("tenon-E311", config::where(path, key) + ": no file given (null): name one in the config or on the "
                                                          "command line (--" + path + "." + key + " FILE, or the [paths] "
                                                          "value it comes from, e.g. --paths.train FILE)");
    config::Args a(v->as_section(), path, name);
    Corpus c;
    if (name == idx_reader) {
        const auto images = a.get<std::string>("images");
        const auto labels = a.get<std::string>("labels", std::string());
        const auto limit = a.get<std::size_t>("limit", 0);
        a.finish();
        c = read_idx(images, labels, limit, where);
    } else if (name == jsonl_reader) {
        const auto file = a.get<std::string>("path");
        const auto limit = a.get<std::size_t>("limit", 0);
        a.finish();
        c = read_jsonl(file, limit, where);
    } else {
        fail("tenon-E322", where + " @readers: no reader is registered as \"" + name + "\"; the readers: " +
                               idx_reader + ", " + jsonl_reader);
    }
    if (c.size() == 0) fail("tenon-E324", where + ": the corpus has no examples");
    if (need_labels)
        for (std::size_t i = 0; i < c.labels.size(); ++i)
            if (c.labels[i].empty())
                fail("tenon-E324", where + ": example " + std::to_string(i + 1) + " has no label (" +
                                       (c.text ? "a \"label\" key" : "the config's labels = file") + ")");
    return c;
}

Corpus read_inputs(const std::string& file, bool text, std::size_t limit) {
    if (file == "-" && !text)
        fail("tenon-E323", "'-' (standard input): only a documents model reads its inputs from standard input "
                           "(JSON lines); give an images model an IDX file");
    return text ? read_jsonl(file, limit, "'" + file + "'") : read_idx(file, {}, limit, "'" + file + "'");
}

}  // namespace tenon::cli
