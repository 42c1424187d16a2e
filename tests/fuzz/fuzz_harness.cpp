// The fuzz harness for model files: see fuzz_harness.hpp and README.md.
#include "fuzz_harness.hpp"

#include <zlib.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <span>

#include "tenon/io/serialize.hpp"
#include "tenon/tenon.hpp"

namespace tenon_fuzz {
namespace {

using namespace tenon;
using Bytes = std::vector<std::uint8_t>;

constexpr std::size_t kHeader = 32;

// The MLP of test_serialize (input width 5 in the seeds).
auto make_mlp() {
    return Relu<8>({.dropout = 0.2}) >> Relu<8>({.normalize = true}) >> Softmax<>(SoftmaxOptions{.nO = 3});
}

// test_serialize's spaCy-like tok2vec + text classifier, with smaller tables and widths so
// that its files (the fuzzer's inputs) stay a few KB: ids -> hashed and plain embeddings of
// four columns -> Maxout -> two residual window encoders -> mean -> Softmax.
auto make_textcat() {
    const MaxoutOptions maxout{.nP = 2, .dropout = 0.0, .normalize = true};
    auto embed = list2ragged<Ints2d>() >>
                 with_array<BasicRagged<Ints2d>>(concatenate(HashEmbed<4>(12, {}, 0), HashEmbed<4>(6, {}, 1),
                                                             Embed<4>(10, 2), HashEmbed<4>(8, {}, 3, 0.1))) >>
                 with_array<Ragged>(Maxout<4>(maxout)) >> ragged2list();
    auto encode = with_array<List<Floats2d>>(clone(residual(expand_window<1>() >> Maxout<4>(maxout)), 2), 2);
    return embed >> encode >> list2ragged() >> reduce_mean() >> Softmax<3>();
}

// Fixed inputs: the predict after a load, and the samples the seeds are initialised with.
Floats2d mlp_input(std::size_t rows, std::size_t cols) {
    Floats2d x({rows, cols});
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(static_cast<int>(i % 7) - 3) * 0.25f;
    return x;
}

List<Ints2d> textcat_input(std::size_t n_docs) {
    std::vector<Ints2d> docs;
    for (std::size_t d = 0; d < n_docs; ++d) {
        Ints2d doc({1 + (d * 2) % 5, 4});
        for (std::size_t i = 0; i < doc.size(); ++i)  // column 2 indexes the Embed table of 10 rows
            doc[i] = i % 4 == 2 ? static_cast<int>((i * 3 + d) % 10) : static_cast<int>(i * 7919 + d * 104729) - 50;
        docs.push_back(std::move(doc));
    }
    return List<Ints2d>(std::move(docs));
}

[[noreturn]] void finding(const char* what, const char* detail) {
    std::fprintf(stderr, "fuzz_model: %s: %s\n", what, detail);
    std::fflush(stderr);
    std::abort();
}

void put_le(std::uint8_t* p, std::uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) p[i] = static_cast<std::uint8_t>(v >> (8 * i));
}

// Loads `file` into a fresh model (or one initialised first), then uses it.
template <class Make, class X>
Outcome load_and_use(Make make, const X& input, std::span<const std::uint8_t> file, bool initialise_first) {
    auto model = make();
    if (initialise_first) model.initialize(input);
    try {
        model.from_bytes(file);
    } catch (const Error&) {
        return Outcome::rejected;  // the only way a load may fail
    } catch (const std::exception& e) {
        finding("from_bytes threw something other than tenon::Error", e.what());
    }
    // A loaded model is usable: predict gives an output or a tenon::Error, never a crash.
    try {
        (void)model.predict(input);
    } catch (const Error&) {
    } catch (const std::exception& e) {
        finding("predict after a load threw something other than tenon::Error", e.what());
    }
    // ... and consistent: what it writes loads into another fresh model.
    try {
        const Bytes again = model.to_bytes();
        auto other = make();
        other.from_bytes(again);
    } catch (const std::exception& e) {
        finding("a loaded model's own bytes do not load again", e.what());
    }
    return Outcome::loaded;
}

}  // namespace

Outcome run_one(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return Outcome::rejected;
    const std::uint8_t sel = data[0];
    Bytes file(data + 1, data + size);
    const bool fix_header = ((sel >> 1) & 0xF) != 0;
    const bool initialise_first = (sel >> 5) & 1;
    if (fix_header && file.size() >= kHeader) {
        const std::size_t n = file.size() - kHeader;
        put_le(file.data() + 16, n, 8);
        put_le(file.data() + 24, crc32(crc32(0L, Z_NULL, 0), file.data() + kHeader, static_cast<uInt>(n)), 4);
        put_le(file.data() + 28, 0, 4);
    }
    const std::span<const std::uint8_t> bytes(file);
    if ((sel & 1) == static_cast<std::uint8_t>(Target::mlp))
        return load_and_use(make_mlp, mlp_input(2, 5), bytes, initialise_first);
    return load_and_use(make_textcat, textcat_input(2), bytes, initialise_first);
}

std::vector<Bytes> seeds() {
    std::vector<Bytes> out;
    auto add = [&](std::uint8_t sel, const Bytes& file) {
        Bytes s{sel};
        s.insert(s.end(), file.begin(), file.end());
        out.push_back(std::move(s));
    };
    {
        auto m = make_mlp();
        add(0x00 | 2, m.to_bytes());  // never initialised: no weights in the file
        m.initialize(mlp_input(6, 5));
        add(0x00 | 2, m.to_bytes());
        add(0x00 | 2 | 32, m.to_bytes());
        add(0x00, m.to_bytes());  // raw: the header as written
        auto wide = make_mlp();
        wide.initialize(mlp_input(6, 3));  // another input width: predict on 5 columns fails
        add(0x00 | 4, wide.to_bytes());
    }
    {
        auto m = make_textcat();
        add(0x01 | 2, m.to_bytes());
        m.initialize(textcat_input(4));
        add(0x01 | 2, m.to_bytes());
        add(0x01 | 2 | 32, m.to_bytes());
        add(0x01, m.to_bytes());
    }
    return out;
}

}  // namespace tenon_fuzz
