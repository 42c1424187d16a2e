// Model files: round trips for every kind of node (byte-identical files, bit-identical
// predictions), loading into a fresh model without sample data, failed loads that leave the
// model exactly as it was (another architecture, truncation, corruption, newer versions),
// optimizer state and checkpoints that resume training bit for bit.
#include <catch2/catch.hpp>

#include <zlib.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>

#include "tenon/config/registry.hpp"
#include "tenon/io/serialize.hpp"
#include "tenon/tenon.hpp"
#include "unit/helpers.hpp"

using namespace tenon;
using tenon::testing::random_array;

namespace {

using Bytes = std::vector<std::uint8_t>;

// Everything a load may change, for before/after comparisons (ids excluded: a load keeps them).
std::string fingerprint(const Node& model) {
    const Bytes b = to_bytes(model);  // names, dims, attrs, shapes, values, refs, flags
    return std::string(b.begin(), b.end());
}

bool same_bits(const Floats2d& a, const Floats2d& b) {
    return a.shape() == b.shape() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

List<Ints2d> random_docs(std::size_t n_docs, std::size_t n_cols, std::uint64_t seed) {
    Rng rng(seed);
    std::vector<Ints2d> docs;
    for (std::size_t d = 0; d < n_docs; ++d) {
        Ints2d doc({1 + rng.below(7), n_cols});
        for (std::size_t i = 0; i < doc.size(); ++i)  // column 2 indexes an Embed table of 100 rows
            doc[i] = i % n_cols == 2 ? static_cast<int>(rng.below(100)) : static_cast<int>(rng.below(100000)) - 50;
        docs.push_back(std::move(doc));
    }
    return List<Ints2d>(std::move(docs));
}

template <class Model, class X>
auto output_of(const Model& m, const X& x) {
    return m.predict(x);
}

template <class A>
bool same_output(const A& a, const A& b) {
    if constexpr (requires { a.size(); a[0].shape(); }) {  // List
        if (a.size() != b.size()) return false;
        for (std::size_t i = 0; i < a.size(); ++i)
            if (a[i].shape() != b[i].shape() || std::memcmp(a[i].data(), b[i].data(), a[i].size() * sizeof(float)))
                return false;
        return true;
    } else {
        return a.shape() == b.shape() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
    }
}

// The round trip every model type must pass: a trained model's bytes load into a fresh model
// of the same type made without data (and after other layers were made, so its ids differ);
// the reloaded model writes the same bytes and predicts the same bits.
template <class Make, class X>
void check_round_trip(Make make, const X& sample, const X& test) {
    auto model = make();
    model.initialize(sample);
    const auto before = model.predict(test);
    const Bytes bytes = model.to_bytes();

    auto unrelated = make();  // shifts the process-wide layer ids
    (void)unrelated;
    auto fresh = make();
    REQUIRE_FALSE(fresh.is_initialized());
    REQUIRE(fresh.can_from_bytes(bytes).empty());
    fresh.from_bytes(bytes);
    CHECK(fresh.is_initialized());
    CHECK(fresh.to_bytes() == bytes);
    CHECK(same_output(fresh.predict(test), before));
}

}  // namespace

TEST_CASE("round trip: dense layers, their tails, and chains", "[serialize]") {
    const Floats2d X = random_array(16, 12, 1), T = random_array(5, 12, 2);
    check_round_trip([] { return Relu<8>({.dropout = 0.2}) >> Relu<8>({.normalize = true}) >> Softmax<>(SoftmaxOptions{.nO = 3}); }, X,
                     T);
    check_round_trip([] { return Linear<>({.nO = 4}) >> Mish<>({.nO = 5, .dropout = 0.1, .normalize = true}); }, X, T);
    check_round_trip([] { return Maxout<6>({.nP = 3, .dropout = 0.0, .normalize = true}) >> Sigmoid<>({.nO = 2}); }, X,
                     T);
    check_round_trip([] { return LayerNorm<>() >> Dropout(0.3) >> sigmoid_activation() >> Linear<3>(); }, X, T);
    check_round_trip(
        [] {
            return Softmax<>(SoftmaxOptions{.nO = 4, .normalize_outputs = false, .temperature = 2.5});
        },
        X, T);
}

TEST_CASE("round trip: combinators", "[serialize]") {
    const Floats2d X = random_array(16, 6, 3), T = random_array(5, 6, 4);
    check_round_trip([] { return (Relu<4>() | Maxout<3>({.nP = 2})) >> Linear<2>(); }, X, T);
    check_round_trip([] { return (Relu<6>() + Linear<6>()) >> residual(Relu<6>()); }, X, T);
    check_round_trip([] { return clone(residual(Relu<6>({.normalize = true})), 3) >> Softmax<2>(); }, X, T);
    check_round_trip([] { return concatenate(noop(), Relu<3>()) >> Linear<2>(); }, X, T);
}

TEST_CASE("round trip: embeddings and a spaCy-like tok2vec + text classifier", "[serialize]") {
    const List<Ints2d> docs = random_docs(6, 4, 5), test = random_docs(4, 4, 6);
    auto make = [] {
        const MaxoutOptions maxout{.nP = 3, .dropout = 0.0, .normalize = true};
        auto embed = list2ragged<Ints2d>() >>
                     with_array<BasicRagged<Ints2d>>(concatenate(HashEmbed<8>(50, {}, 0), HashEmbed<8>(20, {}, 1),
                                                                 Embed<8>(100, 2), HashEmbed<8>(30, {}, 3, 0.1))) >>
                     with_array<Ragged>(Maxout<8>(maxout)) >> ragged2list();
        auto encode = with_array<List<Floats2d>>(clone(residual(expand_window<1>() >> Maxout<8>(maxout)), 2), 2);
        return embed >> encode >> list2ragged() >> reduce_mean() >> Softmax<3>();
    };
    check_round_trip(make, docs, test);
}

TEST_CASE("HashEmbed's default seed is saved: a model made after other layers predicts the same", "[serialize]") {
    // The default seed is the layer's id, which depends on how many layers the process made
    // before: without the seed in the file, the reloaded table would hash to other rows.
    Ints2d ids({5, 1});
    for (std::size_t i = 0; i < 5; ++i) ids[i] = static_cast<int>(i * 7919);
    auto model = HashEmbed<4>(100) >> Softmax<3>();
    model.initialize(ids);
    const Floats2d before = model.predict(ids);
    for (int i = 0; i < 10; ++i) (void)Relu<2>();
    auto fresh = HashEmbed<4>(100) >> Softmax<3>();
    CHECK(fresh.layer<0>().seed() != model.layer<0>().seed());
    fresh.from_bytes(model.to_bytes());
    CHECK(fresh.layer<0>().seed() == model.layer<0>().seed());
    CHECK(same_bits(fresh.predict(ids), before));
}

TEST_CASE("loading draws no random numbers and needs no data", "[serialize]") {
    auto model = Relu<8>() >> Softmax<>();
    model.initialize(random_array(4, 5, 7), random_array(4, 3, 8));
    const Bytes bytes = model.to_bytes();
    fix_random_seed(11);
    const auto rng_before = global_rng().state();
    auto fresh = Relu<8>() >> Softmax<>();
    fresh.from_bytes(bytes);
    const auto rng_after = global_rng().state();
    CHECK(std::memcmp(rng_before.s, rng_after.s, sizeof rng_before.s) == 0);
    CHECK(fresh.get_dim("nI") == 5);
    CHECK(fresh.layer<1>().get_dim("nO") == 3);
}

TEST_CASE("files on disk", "[serialize]") {
    const auto dir = std::filesystem::temp_directory_path() / "tenon_test_serialize";
    std::filesystem::create_directories(dir);
    const std::string path = (dir / "mlp.tenon").string();
    auto model = Relu<8>() >> Softmax<3>();
    model.initialize(random_array(4, 5, 9));
    model.to_disk(path);
    CHECK(read_file(path) == model.to_bytes());
    auto fresh = Relu<8>() >> Softmax<3>();
    fresh.from_disk(path);
    CHECK(fresh.to_bytes() == model.to_bytes());
    try {
        fresh.from_disk((dir / "missing.tenon").string());
        FAIL("no error");
    } catch (const LoadError& e) {
        CHECK(e.id() == "tenon-E208");
        CHECK(std::string(e.what()).find("missing.tenon") != std::string::npos);
    }
    // A directory, or a file that cannot be read (libstdc++ throws from the read itself): a
    // LoadError too, never a std::ios_base::failure.
    const auto before = fresh.to_bytes();
    for (const std::string& bad : {dir.string(), std::string("/proc/self/mem")}) {
        if (!std::filesystem::exists(bad)) continue;
        try {
            fresh.from_disk(bad);
            FAIL("no error for " << bad);
        } catch (const LoadError& e) {
            CHECK(e.id() == "tenon-E208");
            CHECK(std::string(e.what()).find(bad) != std::string::npos);
        }
    }
    CHECK(fresh.to_bytes() == before);
    std::filesystem::remove_all(dir);
}

namespace {
// A load that must fail with `id` (and a message containing `needle`) and leave the model as it was.
void check_refused(Node& model, const Bytes& bytes, const std::string& id, const std::string& needle = {}) {
    const std::string before = fingerprint(model);
    const std::string answer = model.can_from_bytes(bytes);
    CHECK(answer.find("[" + id + "]") == 0);
    try {
        model.from_bytes(bytes);
        FAIL("loaded without an error; expected " << id);
    } catch (const LoadError& e) {
        CHECK(e.id() == id);
        CHECK(std::string(e.what()) == answer);
        if (!needle.empty()) CHECK_THAT(e.what(), Catch::Contains(needle));
    }
    CHECK(fingerprint(model) == before);
}

// The bytes with the header's checksum made right again after an edit of the body.
Bytes fix_crc(Bytes b) {
    const uLong crc = crc32(crc32(0L, Z_NULL, 0), b.data() + 32, static_cast<uInt>(b.size() - 32));
    for (int i = 0; i < 4; ++i) b[24 + i] = static_cast<std::uint8_t>(crc >> (8 * i));
    return b;
}
}  // namespace

TEST_CASE("another architecture is refused with the node's path; the model is unchanged", "[serialize]") {
    const Floats2d X = random_array(6, 5, 12);
    auto trained = Relu<8>() >> clone(residual(Relu<8>()), 2) >> Softmax<3>();
    trained.initialize(X);
    const Bytes bytes = trained.to_bytes();

    SECTION("another width in a nested layer") {
        auto other = Relu<8>() >> clone(residual(Relu<8>()), 2) >> Softmax<4>();
        other.initialize(X);
        check_refused(other, bytes, "tenon-E205", "chain>2>softmax: dim nO: expected 4");
    }
    SECTION("another layer") {
        auto other = Relu<8>() >> clone(residual(Mish<8>()), 2) >> Softmax<3>();
        check_refused(other, bytes, "tenon-E204", "chain>1>clone");
    }
    SECTION("another node count") {
        auto other = Relu<8>() >> clone(residual(Relu<8>()), 3) >> Softmax<3>();
        check_refused(other, bytes, "tenon-E204", "clone(residual(relu) x3)");
    }
    SECTION("a width the model already has") {
        auto other = Relu<8>() >> clone(residual(Relu<8>()), 2) >> Softmax<3>();
        other.initialize(random_array(6, 7, 13));  // nI = 7, not 5
        check_refused(other, bytes, "tenon-E205", "dim nI: expected 7 (set in the model) but the file has 5");
    }
    SECTION("a model file given as optimizer state and back") {
        Optimizer opt = Adam(0.001);
        auto m = Relu<8>() >> clone(residual(Relu<8>()), 2) >> Softmax<3>();
        try {
            optimizer_from_bytes(opt, m, bytes);
            FAIL("no error");
        } catch (const LoadError& e) {
            CHECK(e.id() == "tenon-E200");
        }
        check_refused(m, optimizer_to_bytes(opt, trained), "tenon-E200", "expected a model file");
    }
}

TEST_CASE("truncated, corrupted and newer files are refused; the model is unchanged", "[serialize]") {
    auto make = [] { return Relu<3>({.dropout = 0.5, .normalize = true}) >> Softmax<2>(); };
    auto model = make();
    model.initialize(random_array(4, 2, 14));
    const Bytes bytes = model.to_bytes();
    auto target = make();
    target.initialize(random_array(4, 2, 15));

    SECTION("every truncation") {
        for (std::size_t n = 0; n < bytes.size(); ++n) {
            Bytes cut(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n));
            INFO("first " << n << " bytes");
            check_refused(target, cut, n < 8 ? "tenon-E200" : "tenon-E202");
        }
    }
    SECTION("every flipped byte is caught (by the checksum, or the header's checks)") {
        for (std::size_t i = 0; i < bytes.size(); ++i) {
            Bytes bad = bytes;
            bad[i] ^= 0x5a;
            INFO("byte " << i);
            const std::string before = fingerprint(target);
            CHECK_THROWS_AS(target.from_bytes(bad), LoadError);
            CHECK(fingerprint(target) == before);
        }
    }
    SECTION("flipped body bytes with a valid checksum: an error or a consistent model, never a crash") {
        for (std::size_t i = 32; i < bytes.size(); ++i) {
            Bytes bad = bytes;
            bad[i] ^= 0xff;
            bad = fix_crc(bad);
            auto m = make();
            try {
                m.from_bytes(bad);
                (void)m.predict(random_array(2, 2, 16));
            } catch (const Error&) {
            }
        }
    }
    SECTION("a checksum mismatch") {
        Bytes bad = bytes;
        bad.back() ^= 1;
        check_refused(target, bad, "tenon-E203", "checksum");
    }
    SECTION("a newer format version") {
        Bytes bad = bytes;
        bad[8] = static_cast<std::uint8_t>(model_file_version + 1);
        check_refused(target, bad, "tenon-E201", "newer tenon");
    }
    SECTION("not a tenon file") {
        const std::string text = "{\"nodes\": []}";
        check_refused(target, Bytes(text.begin(), text.end()), "tenon-E200", "not a tenon file");
    }
    SECTION("a file whose values were cut and the header fixed up") {
        Bytes bad(bytes.begin(), bytes.end() - 4);
        for (int i = 0; i < 8; ++i) bad[16 + i] = static_cast<std::uint8_t>((bad.size() - 32) >> (8 * i));
        check_refused(target, fix_crc(bad), "tenon-E202");
    }
}

TEST_CASE("a failed load leaves every parameter, dim and attribute of a fresh model as it was", "[serialize]") {
    auto model = Relu<6>({.dropout = 0.2}) >> Softmax<>();
    model.initialize(random_array(4, 3, 17), random_array(4, 2, 18));
    Bytes bytes = model.to_bytes();
    // A file that is right up to its last node: the failure comes after the first nodes passed.
    auto fresh = Relu<6>({.dropout = 0.2}) >> Softmax<>(SoftmaxOptions{.nO = 3});
    const auto names_before = fresh.layer<0>().dim_names();
    check_refused(fresh, bytes, "tenon-E205", "chain>1>softmax");
    CHECK_FALSE(fresh.is_initialized());
    CHECK_FALSE(fresh.layer<0>().has_param("W"));
    CHECK_FALSE(fresh.layer<0>().has_dim("nI"));
}

TEST_CASE("optimizer state: training resumed from a checkpoint equals the uninterrupted run", "[serialize]") {
    auto make = [] { return Relu<8>({.dropout = 0.3}) >> Relu<8>({.normalize = true}) >> Softmax<3>(); };
    const Floats2d X = random_array(32, 5, 19);
    Floats2d Y({32, 3});
    for (std::size_t r = 0; r < 32; ++r) Y(r, r % 3) = 1.0f;
    auto step = [&](auto& m, Optimizer& opt, std::size_t k) {
        const std::size_t b = (k % 4) * 8;
        Floats2d Xb({8, 5}), Yb({8, 3});
        std::memcpy(Xb.data(), X.data() + b * 5, 8 * 5 * sizeof(float));
        std::memcpy(Yb.data(), Y.data() + b * 3, 8 * 3 * sizeof(float));
        auto [Yh, backprop] = m.begin_update(Xb);
        backprop(CategoricalCrossentropy().get_grad(Yh, Yb));
        m.finish_update(opt);
    };
    fix_random_seed(21);
    auto a = make();
    a.initialize(X, Y);
    Optimizer opt_a = Adam(0.01);
    for (std::size_t k = 0; k < 5; ++k) step(a, opt_a, k);
    const Bytes checkpoint = checkpoint_to_bytes(a, opt_a);
    for (std::size_t k = 5; k < 12; ++k) step(a, opt_a, k);

    // Another "process": other ids, another generator state, a fresh optimizer.
    for (int i = 0; i < 5; ++i) (void)Relu<2>();
    fix_random_seed(999);
    auto b = make();
    Optimizer opt_b = Adam(0.5);
    checkpoint_from_bytes(b, opt_b, checkpoint);
    CHECK(opt_b.learn_rate() == 0.01);
    for (std::size_t k = 5; k < 12; ++k) step(b, opt_b, k);
    CHECK(b.to_bytes() == a.to_bytes());
    CHECK(optimizer_to_bytes(opt_b, b) == optimizer_to_bytes(opt_a, a));
    {
        UseAverages avg_a(a, opt_a), avg_b(b, opt_b);
        CHECK(b.to_bytes() == a.to_bytes());
    }

    SECTION("the optimizer alone") {
        auto c = make();
        c.from_bytes(a.to_bytes());
        Optimizer opt_c = Adam(0.01);
        optimizer_from_bytes(opt_c, c, optimizer_to_bytes(opt_a, a));
        CHECK(optimizer_to_bytes(opt_c, c) == optimizer_to_bytes(opt_a, a));
        CHECK(opt_c.nr_update(c.layer<0>().id(), "W") == 12);
    }
    SECTION("an optimizer state names its nodes: another architecture of the same shapes is refused") {
        // (format version 3: each entry names its node, in the model file's view of the tree)
        const Bytes state = optimizer_to_bytes(opt_a, a);
        auto mish = Mish<8>() >> Relu<8>({.normalize = true}) >> Softmax<3>();
        mish.initialize(X, Y);
        Optimizer opt_m = Adam(0.5);
        std::string what;
        try {
            optimizer_from_bytes(opt_m, mish, state);
        } catch (const Error& e) {
            what = std::string(e.id()) + " " + e.what();
        }
        CHECK_THAT(what, Catch::Matchers::Contains("tenon-E220") && Catch::Matchers::Contains("is for a node 'relu', but the model has 'mish' here"));
        CHECK(opt_m.learn_rate() == 0.5);
        // The same model held in an AnyModel (a config-built one): the same file's view.
        AnyModel<Floats2d, Floats2d> any = make();
        any.from_bytes(a.to_bytes());
        Optimizer opt_any = Adam(0.5);
        optimizer_from_bytes(opt_any, any, state);
        CHECK(opt_any.learn_rate() == 0.01);
        CHECK(optimizer_to_bytes(opt_any, any) == state);
    }
    SECTION("hyperparameters and step counts an Optimizer would refuse are a corrupted file") {
        // (Edited, the checksum made again: a NaN learning rate would make every weight NaN.)
        const Bytes state = optimizer_to_bytes(opt_a, a);
        const std::size_t lr_at = 32 + 1;  // the body: cereal's endianness byte, then learn_rate (f64)
        for (const double v : {std::numeric_limits<double>::quiet_NaN(), -1.0}) {
            Bytes bad = state;
            std::memcpy(bad.data() + lr_at, &v, sizeof v);
            Optimizer opt_e = Adam(0.5);
            std::string what;
            try {
                optimizer_from_bytes(opt_e, a, fix_crc(bad));
            } catch (const Error& e) {
                what = std::string(e.id()) + " " + e.what();
            }
            CHECK_THAT(what, Catch::Matchers::Contains("tenon-E202") && Catch::Matchers::Contains("learn_rate"));
            CHECK(opt_e.learn_rate() == 0.5);
        }
    }
    SECTION("a checkpoint of another architecture changes neither the model nor the optimizer") {
        auto d = Relu<8>({.dropout = 0.3}) >> Relu<8>({.normalize = true}) >> Softmax<4>();
        Optimizer opt_d = Adam(0.5);
        const auto rng = global_rng().state();
        CHECK_THROWS_AS(checkpoint_from_bytes(d, opt_d, checkpoint), LoadError);
        CHECK(opt_d.learn_rate() == 0.5);
        CHECK(global_rng().state().s[0] == rng.s[0]);
        CHECK_FALSE(d.is_initialized());
    }
}

// Optimizer::skipped_steps() (NonFinite::skip) is the optimizer's state: a checkpoint and an
// optimizer state file carry it (format version 2 on), so that a run resumed from one goes on
// counting from where it was; a file without it (version 1) loads as 0.
TEST_CASE("optimizer state: the count of skipped steps is saved and restored", "[serialize][nonfinite]") {
    auto make = [] { return Relu<8>() >> Softmax<3>(); };
    const Floats2d X = random_array(6, 4, 24);
    Floats2d Y({6, 3});
    for (std::size_t r = 0; r < 6; ++r) Y(r, r % 3) = 1.0f;
    auto step = [&](auto& m, Optimizer& opt, bool nan) {
        auto [Yh, backprop] = m.begin_update(X);
        Floats2d dY = CategoricalCrossentropy().get_grad(Yh, Y);
        if (nan) dY(0, 0) = std::numeric_limits<float>::quiet_NaN();
        backprop(dY);
        m.finish_update(opt);
    };
    auto a = make();
    a.initialize(X, Y);
    Optimizer opt_a = Adam({.learn_rate = 0.01, .on_nonfinite = NonFinite::skip});
    step(a, opt_a, false);
    step(a, opt_a, true);
    step(a, opt_a, true);
    step(a, opt_a, false);
    step(a, opt_a, true);
    REQUIRE(opt_a.skipped_steps() == 3);

    SECTION("a checkpoint") {
        const Bytes checkpoint = checkpoint_to_bytes(a, opt_a);
        auto b = make();
        Optimizer opt_b = Adam({.on_nonfinite = NonFinite::skip});
        checkpoint_from_bytes(b, opt_b, checkpoint);
        CHECK(opt_b.skipped_steps() == 3);
        CHECK(opt_b.nr_update(b.layer<0>().id(), "W") == 2);
        // Resumed: the count goes on from the checkpoint's.
        step(b, opt_b, true);
        CHECK(opt_b.skipped_steps() == 4);
        CHECK(checkpoint_to_bytes(b, opt_b) != checkpoint);
        // Loading replaces the count, as it replaces the rest of the optimizer's state.
        checkpoint_from_bytes(b, opt_b, checkpoint);
        CHECK(opt_b.skipped_steps() == 3);
        CHECK(checkpoint_to_bytes(b, opt_b) == checkpoint);
    }
    SECTION("the optimizer alone") {
        Optimizer opt_c = Adam(0.01);
        optimizer_from_bytes(opt_c, a, optimizer_to_bytes(opt_a, a));
        CHECK(opt_c.skipped_steps() == 3);
        CHECK(optimizer_to_bytes(opt_c, a) == optimizer_to_bytes(opt_a, a));
    }
    SECTION("a checkpoint that does not load changes no count") {
        auto d = Relu<8>() >> Softmax<4>();
        Optimizer opt_d = Adam({.on_nonfinite = NonFinite::skip});
        CHECK_THROWS_AS(checkpoint_from_bytes(d, opt_d, checkpoint_to_bytes(a, opt_a)), LoadError);
        CHECK(opt_d.skipped_steps() == 0);
    }
}

// A layer's forced set_dim is its chain's new width at once (test_errors: "a chain's nI
// follows its first layer's forced set_dim"); a file saved before the next initialize() says
// so too. It used to hold the chain's width of its last initialize (4 here) beside the
// layer's 7: a file that contradicted itself and the model's get_dim("nI").
TEST_CASE("a file saved after a layer's forced set_dim has the chain's new width", "[serialize]") {
    auto make = [] { return Relu<>({.nO = 6}) >> Softmax<3>(); };
    auto dim_of = [](const NodeState& n, const char* name) {
        for (const auto& [dn, v] : n.dims)
            if (dn == name) return v;
        return std::size_t{0};
    };
    auto m = make();
    m.initialize(Floats2d({2, 4}));
    m.layer<0>().set_dim("nI", 7, true);
    REQUIRE(m.get_dim("nI") == 7u);
    const Bytes bytes = m.to_bytes();
    const ModelState st = decode_model(bytes);
    REQUIRE(st.nodes.size() == 3);
    CHECK(dim_of(st.nodes[0], "nI") == 7u);  // the chain
    CHECK(dim_of(st.nodes[1], "nI") == 7u);  // its first layer
    CHECK(dim_of(st.nodes[0], "nO") == 3u);
    CHECK(capture(m).nodes[0].dims == st.nodes[0].dims);
    // The file loads back into the model that wrote it, and into a fresh one, which
    // initialize() (no data needed: the widths are known) then completes.
    CHECK(m.can_from_bytes(bytes).empty());
    m.from_bytes(bytes);
    CHECK(m.to_bytes() == bytes);
    auto fresh = make();
    fresh.from_bytes(bytes);
    CHECK(fresh.get_dim("nI") == 7u);
    CHECK(fresh.to_bytes() == bytes);
    CHECK_FALSE(fresh.layer<0>().is_initialized());
    fresh.initialize();
    CHECK(fresh.predict(random_array(2, 7, 25)).shape() == std::array<std::size_t, 2>{2, 3});
    // And once initialised again, the file is an ordinary one.
    m.initialize();
    auto again = make();
    again.from_bytes(m.to_bytes());
    CHECK(same_bits(again.predict(random_array(2, 7, 26)), m.predict(random_array(2, 7, 26))));
}

TEST_CASE("node paths", "[serialize]") {
    auto model = Relu<4>() >> clone(residual(expand_window<1>() >> Maxout<4>({.nP = 2})), 2) >> Softmax<2>();
    const auto paths = node_paths(model);
    REQUIRE(paths.size() == model.walk().size());
    CHECK(paths[0] == "chain");
    CHECK(paths[2] == "chain>1>clone");
    CHECK(std::find(paths.begin(), paths.end(), "chain>1>clone>0>residual>chain>1>maxout") != paths.end());
    CHECK(node_path(model, model.layer<1>()[1]) == "chain>1>clone>1>residual");
    CHECK(node_kind("relu>>relu>>softmax") == "chain");
    CHECK(node_kind("residual(relu>>relu)") == "residual");
    CHECK(node_kind("relu|maxout") == "concatenate");
}

TEST_CASE("refs are saved as walk indices", "[serialize]") {
    auto make = [] { return Relu<4>() >> Softmax<2>(); };
    auto model = make();
    model.initialize(random_array(3, 3, 22));
    model.set_ref("output_layer", &model.layer<1>());
    model.set_ref("nothing", nullptr);
    auto fresh = make();
    fresh.from_bytes(model.to_bytes());
    REQUIRE(fresh.has_ref("output_layer"));
    CHECK(&fresh.get_ref("output_layer") == &fresh.layer<1>());
    CHECK_FALSE(fresh.has_ref("nothing"));
    auto outside = Relu<2>();
    model.set_ref("outside", &outside);
    CHECK_THROWS_WITH(model.to_bytes(), Catch::Contains("tenon-E232"));
}

// ---- golden files ------------------------------------------------------------------------
// tests/golden/ holds the files each format version wrote (mlp_vN.tenon, mlp_vN.checkpoint,
// textcat_vN.tenon) with their expected predictions (*_vN.expected); every later version
// must load them and predict the same. TENON_WRITE_GOLDEN=1 writes this build's version's
// files where they are missing (a new version's); an existing golden file is never rewritten.
namespace {
auto golden_mlp() { return Relu<16>({.dropout = 0.2}) >> Relu<16>({.normalize = true}) >> Softmax<>(SoftmaxOptions{.nO = 4}); }
auto golden_textcat() {
    const MaxoutOptions maxout{.nP = 3, .dropout = 0.0, .normalize = true};
    auto embed = list2ragged<Ints2d>() >>
                 with_array<BasicRagged<Ints2d>>(concatenate(HashEmbed<8>(50, {}, 0), HashEmbed<8>(20, 7u, 1),
                                                             Embed<8>(100, 2), HashEmbed<8>(30, {}, 3, 0.1))) >>
                 with_array<Ragged>(Maxout<8>(maxout)) >> ragged2list();
    auto encode = with_array<List<Floats2d>>(clone(residual(expand_window<1>() >> Maxout<8>(maxout)), 2), 2);
    return embed >> encode >> list2ragged() >> reduce_mean() >> Softmax<3>();
}
// Inputs from a formula (not the generator, which may change).
Floats2d golden_X(std::size_t rows) {
    Floats2d X({rows, 6});
    for (std::size_t i = 0; i < X.size(); ++i) X[i] = static_cast<float>(std::sin(0.37 * static_cast<double>(i) + 0.1));
    return X;
}
List<Ints2d> golden_docs() {
    std::vector<Ints2d> docs;
    for (std::size_t d = 0; d < 5; ++d) {
        Ints2d doc({1 + d * 2, 4});
        for (std::size_t i = 0; i < doc.size(); ++i)
            doc[i] = i % 4 == 2 ? static_cast<int>((i * 37 + d) % 100) : static_cast<int>(i * 7919 + d * 104729) - 300;
        docs.push_back(std::move(doc));
    }
    return List<Ints2d>(std::move(docs));
}
std::string golden_path(const char* name) { return std::string(TENON_SOURCE_DIR) + "/tests/golden/" + name; }
std::string hex_floats(const float* p, std::size_t n) {
    std::string out;
    char buf[64];
    for (std::size_t i = 0; i < n; ++i) {
        std::snprintf(buf, sizeof buf, "%a\n", static_cast<double>(p[i]));
        out += buf;
    }
    return out;
}
// Within 1e-5 of the expected values: the files hold the bits one machine computed, and
// another kernel (AVX2, AVX-512, generic) sums the products in another order.
bool close_to_expected(const Floats2d& P, const std::string& expected_text) {
    std::vector<double> want;
    const char* p = expected_text.c_str();
    char* end = nullptr;
    for (double v = std::strtod(p, &end); end != p; v = std::strtod(p, &end)) {
        want.push_back(v);
        p = end;
    }
    if (want.size() != P.size()) return false;
    for (std::size_t i = 0; i < want.size(); ++i)
        if (std::abs(static_cast<double>(P[i]) - want[i]) > 1e-5) return false;
    return true;
}
std::string read_text(const std::string& path) {
    auto b = read_file(path);
    return std::string(b.begin(), b.end());
}
// The files of this build's version, written where missing. Version 1's were written the
// same way without the skipped step (format version 1 has no count of skipped steps).
void write_golden(const Floats2d& X, const List<Ints2d>& docs) {
    const std::string v = "_v" + std::to_string(model_file_version);
    auto write_new = [](const std::string& name, std::span<const std::uint8_t> bytes) {
        if (!std::filesystem::exists(golden_path(name.c_str()))) write_file(golden_path(name.c_str()), bytes);
    };
    auto text = [](const std::string& t) {
        return std::span(reinterpret_cast<const std::uint8_t*>(t.data()), t.size());
    };
    fix_random_seed(2026);
    auto mlp = golden_mlp();
    Floats2d Y({7, 4});
    for (std::size_t r = 0; r < 7; ++r) Y(r, r % 4) = 1.0f;
    mlp.initialize(X, Y);
    Optimizer opt = Adam({.learn_rate = 0.01, .on_nonfinite = NonFinite::skip});
    for (int k = 0; k < 4; ++k) {
        auto [Yh, bp] = mlp.begin_update(X);
        Floats2d dY = CategoricalCrossentropy().get_grad(Yh, Y);
        if (k == 3) dY(0, 0) = std::numeric_limits<float>::quiet_NaN();  // a skipped step
        bp(dY);
        mlp.finish_update(opt);
    }
    REQUIRE(opt.skipped_steps() == 1);
    write_new("mlp" + v + ".tenon", mlp.to_bytes());
    write_new("mlp" + v + ".checkpoint", checkpoint_to_bytes(mlp, opt));
    const Floats2d P = mlp.predict(X);
    write_new("mlp" + v + ".expected", text(hex_floats(P.data(), P.size())));
    auto textcat = golden_textcat();
    textcat.initialize(docs);
    write_new("textcat" + v + ".tenon", textcat.to_bytes());
    const Floats2d Q = textcat.predict(docs);
    write_new("textcat" + v + ".expected", text(hex_floats(Q.data(), Q.size())));
}
}  // namespace

TEST_CASE("golden files of every format version load and predict the same", "[serialize][golden]") {
    const Floats2d X = golden_X(7);
    const List<Ints2d> docs = golden_docs();
    if (std::getenv("TENON_WRITE_GOLDEN")) write_golden(X, docs);
    for (std::uint32_t version = 1; version <= model_file_version; ++version) {
        CAPTURE(version);
        const std::string v = "_v" + std::to_string(version);
        const bool current = version == model_file_version;
        auto path = [&](const char* stem, const char* ext) { return golden_path((stem + v + ext).c_str()); };
        {  // the MLP
            auto mlp = golden_mlp();
            mlp.from_disk(path("mlp", ".tenon"));
            const Floats2d P = mlp.predict(X);
            CHECK(close_to_expected(P, read_text(path("mlp", ".expected"))));
            if (current) CHECK(mlp.to_bytes() == read_file(path("mlp", ".tenon")));
        }
        {  // its training checkpoint
            auto mlp = golden_mlp();
            Optimizer opt = Adam({.learn_rate = 0.5, .on_nonfinite = NonFinite::skip});
            // Two steps skipped before the load (a parameter outside the model): the count
            // becomes the file's, 0 for a file of version 1, which has none.
            Floats1d w({1}), g({1});
            for (int k = 0; k < 2; ++k) {
                g[0] = std::numeric_limits<float>::quiet_NaN();
                opt.update(987654321, "W", w.view(), g.view());
            }
            REQUIRE(opt.skipped_steps() == 2);
            const Bytes file = read_file(path("mlp", ".checkpoint"));
            checkpoint_from_bytes(mlp, opt, file);
            CHECK(opt.learn_rate() == 0.01);
            CHECK(opt.nr_update(mlp.layer<0>().id(), "W") == 3);
            CHECK(opt.skipped_steps() == (version >= 2 ? 1u : 0u));
            const Floats2d P = mlp.predict(X);
            CHECK(close_to_expected(P, read_text(path("mlp", ".expected"))));
            if (current) CHECK(checkpoint_to_bytes(mlp, opt) == file);
        }
        {  // the tok2vec text classifier
            auto textcat = golden_textcat();
            textcat.from_disk(path("textcat", ".tenon"));
            const Floats2d Q = textcat.predict(docs);
            CHECK(close_to_expected(Q, read_text(path("textcat", ".expected"))));
            if (current) CHECK(textcat.to_bytes() == read_file(path("textcat", ".tenon")));
        }
    }
}

TEST_CASE("attributes a layer fixed when it was made must match; remap_ids' table is saved", "[serialize]") {
    SECTION("expand_window's window") {
        Floats2d X = random_array(5, 2, 23);
        auto a = expand_window(2) >> Relu<3>();
        a.initialize(X);
        auto b = expand_window(1) >> Relu<3>();
        check_refused(b, a.to_bytes(), "tenon-E207", "attribute 'window_size': expected 1 (fixed when the layer was made) but the file has 2");
    }
    SECTION("remap_ids: the table as it is when saved, in key order") {
        auto make = [] { return remap_ids({{"a", 1}, {"b", 2}}, 3) >> Embed<4>(10); };
        auto m = make();
        m.initialize();
        m.layer<0>().table()["c"] = 7;  // a table updated after construction
        m.layer<0>().table()["x=y\n:"] = 5;  // a key with the separators in it
        const Strings words{"a", "c", "zz", "x=y\n:"};
        const Floats2d before = m.predict(words);
        auto fresh = make();
        fresh.from_bytes(m.to_bytes());
        CHECK(fresh.layer<0>().table().size() == 4);
        CHECK(fresh.layer<0>().table().at("x=y\n:") == 5);
        CHECK(same_bits(fresh.predict(words), before));
        CHECK(fresh.to_bytes() == m.to_bytes());
        auto other_default = remap_ids({{"a", 1}, {"b", 2}}, 4) >> Embed<4>(10);
        check_refused(other_default, m.to_bytes(), "tenon-E207", "attribute 'default'");
    }
    SECTION("remap_ids with integer keys") {
        auto make = [] { return remap_ids({{5, 1}, {-7, 2}}) >> Embed<4>(10); };
        auto m = make();
        m.initialize();
        m.layer<0>().table()[-1000000000000] = 9;
        auto fresh = make();
        fresh.layer<0>().table().clear();
        fresh.from_bytes(m.to_bytes());
        CHECK(fresh.layer<0>().table() == m.layer<0>().table());
    }
}

TEST_CASE("round trip: sequence wrappers, transfers, reductions, bidirectional, siamese, uniqued", "[serialize]") {
    auto seqs = [](std::uint64_t seed) {
        std::vector<Floats2d> xs;
        for (std::size_t i = 0; i < 4; ++i) xs.push_back(random_array(1 + (i * 3 + seed) % 5, 6, seed * 10 + i));
        return List<Floats2d>(std::move(xs));
    };
    const List<Floats2d> S = seqs(1), T = seqs(2);
    check_round_trip([] { return with_padded<List<Floats2d>>(with_array<Padded>(Relu<6>({.dropout = 0.1}))); }, S, T);
    check_round_trip([] { return list2padded() >> with_ragged<Padded>(with_array<Ragged>(Linear<3>())) >> padded2list(); },
                     S, T);
    check_round_trip([] { return list2ragged() >> with_list<Ragged>(with_array<List<Floats2d>>(Relu<5>())) >> reduce_max(); },
                     S, T);
    check_round_trip([] { return list2ragged() >> reduce_sum() >> Relu<2>(); }, S, T);
    check_round_trip([] { return list2ragged() >> reduce_first() >> Relu<2>(); }, S, T);
    check_round_trip([] { return list2ragged() >> reduce_last() >> Relu<2>(); }, S, T);
    check_round_trip([] { return list2array() >> with_debug(Maxout<3>({.nP = 2})); }, S, T);
    check_round_trip([] { return list2padded() >> bidirectional(with_array<Padded>(Relu<4>())) >> padded2list(); }, S, T);

    const auto P1 = std::pair<Floats2d, Floats2d>(random_array(5, 3, 30), random_array(5, 3, 31));
    const auto P2 = std::pair<Floats2d, Floats2d>(random_array(4, 3, 32), random_array(4, 3, 33));
    check_round_trip([] { return siamese(Relu<4>(), CauchySimilarity<4>()); }, P1, P2);

    Ints2d ids({6, 1}), ids2({3, 1});
    for (std::size_t i = 0; i < 6; ++i) ids[i] = static_cast<int>((i % 3) * 1009);
    for (std::size_t i = 0; i < 3; ++i) ids2[i] = static_cast<int>(i * 31);
    check_round_trip([] { return uniqued(HashEmbed<8>(100)) >> Softmax<2>(); }, ids, ids2);
}

TEST_CASE("serialize: a model moved from writes no file and loads none (tenon-E118)", "[serialize]") {
    auto chain = Relu<8>() >> Softmax<3>();
    chain.initialize(random_array(4, 5, 31));
    const auto bytes = chain.to_bytes();
    auto moved = std::move(chain);
    auto id_of = [](auto&& f) {
        try {
            f();
        } catch (const Error& e) {
            return e.id() + " " + e.what();
        }
        return std::string("no error");
    };
    // (Before, the moved-from chain wrote a 90-byte file that no model could load.)
    CHECK_THAT(id_of([&] { (void)chain.to_bytes(); }), Catch::Contains("tenon-E118") && Catch::Contains("chain"));
    CHECK_THAT(id_of([&] { chain.from_bytes(bytes); }), Catch::Contains("tenon-E118"));
    CHECK_THAT(chain.can_from_bytes(bytes), Catch::Contains("tenon-E118"));
    CHECK(moved.to_bytes() == bytes);

    AnyModel<Floats2d, Floats2d> any = Relu<8>() >> Softmax<3>();
    any.initialize(random_array(4, 5, 32));
    auto any2 = std::move(any);
    // (A moved-from AnyModel has no name: the error still says what it is.)
    CHECK_THAT(id_of([&] { any.to_disk("unused.tenon"); }),
               Catch::Contains("tenon-E118") && Catch::Contains("AnyModel: this AnyModel holds no model"));
    CHECK(!std::filesystem::exists("unused.tenon"));
    CHECK_THAT(id_of([&] { any.from_bytes(any2.to_bytes()); }), Catch::Contains("tenon-E118"));
}

TEST_CASE("serialize: a parameter holding NaN or inf is neither saved nor loaded", "[serialize][nonfinite]") {
    const Floats2d X = random_array(4, 5, 33);
    auto model = Relu<8>() >> Softmax<3>();
    model.initialize(X);
    // A distinctive value in W, found again in the file's bytes and made NaN there (with the
    // checksum made right again): what a damaged file, or one of a diverged model, holds.
    model.layer<1>().get_param("W").flat()[5] = 1234.5f;
    const Bytes good = model.to_bytes();
    const float marker = 1234.5f, nan = std::numeric_limits<float>::quiet_NaN();
    Bytes bad = good;
    std::size_t found = 0;
    for (std::size_t i = 32; i + 4 <= bad.size(); ++i)
        if (std::memcmp(bad.data() + i, &marker, 4) == 0) {
            std::memcpy(bad.data() + i, &nan, 4);
            ++found;
        }
    REQUIRE(found == 1);
    auto fresh = Relu<8>() >> Softmax<3>();
    check_refused(fresh, fix_crc(bad), "tenon-E206", "chain>1>softmax: parameter W: the file has a non-finite value (nan) at flat index 5");
    CHECK_THAT(fresh.can_from_bytes(fix_crc(bad)), Catch::Contains("tenon-E206"));
    fresh.from_bytes(good);  // the same file with the finite value loads

    // Saving refuses a model whose weight was made NaN through get_param (set_param refuses it).
    model.layer<0>().get_param("b").flat()[2] = std::numeric_limits<float>::infinity();
    try {
        (void)model.to_bytes();
        FAIL("saved a model holding inf");
    } catch (const Error& e) {
        CHECK(e.id() == "tenon-E119");
        CHECK_THAT(e.what(), Catch::Contains("chain>0>relu: parameter b holds 1 non-finite value (NaN or inf), the "
                                             "first at flat index 2"));
    }
    Optimizer opt = Adam(0.001);
    CHECK_THROWS_WITH(checkpoint_to_bytes(model, opt), Catch::Contains("tenon-E119"));
}

// ---- optimizer state into a model not initialised; old versions into AnyModel-held models ----
namespace {
// A version 3 optimizer file rewritten as version `version` (1 or 2) would have written it:
// no node names (nor, in version 1, the count of skipped steps), each entry's node index
// `shift` further on (an old file indexed every node of the model that wrote it, AnyModel
// nodes included).
Bytes old_optimizer_file(const Bytes& v3, std::uint32_t version, std::uint64_t shift = 0) {
    auto le = [&](std::size_t at) {
        std::uint64_t v = 0;
        for (int i = 0; i < 8; ++i) v |= static_cast<std::uint64_t>(v3[at + i]) << (8 * i);
        return v;
    };
    Bytes out(v3.begin(), v3.begin() + 32);
    std::size_t at = 32;
    auto copy = [&](std::size_t n) {
        out.insert(out.end(), v3.begin() + static_cast<std::ptrdiff_t>(at), v3.begin() + static_cast<std::ptrdiff_t>(at + n));
        at += n;
    };
    auto put = [&](std::uint64_t v) {
        for (int i = 0; i < 8; ++i) out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
    };
    copy(1 + 6 * 8 + 2);  // cereal's mark, the hyperparameters
    if (version >= 2) copy(8);
    else at += 8;
    const std::uint64_t n = le(at);
    copy(8);
    for (std::uint64_t e = 0; e < n; ++e) {
        put(le(at) + shift);  // the node's index
        at += 8;
        at += 8 + le(at);     // its name (version 3 on)
        copy(8 + le(at));     // the parameter's name
        copy(8);              // the step count
        for (int a = 0; a < 3; ++a) copy(8 + 4 * le(at));
    }
    REQUIRE(at == v3.size());
    for (int i = 0; i < 4; ++i) out[8 + i] = static_cast<std::uint8_t>(version >> (8 * i));
    const std::uint64_t len = out.size() - 32;
    for (int i = 0; i < 8; ++i) out[16 + i] = static_cast<std::uint8_t>(len >> (8 * i));
    return fix_crc(out);
}

template <class A>
A filled(const typename A::shape_type& shape, float v) {
    A a(shape);
    for (std::size_t i = 0; i < a.size(); ++i) a.data()[i] = v;
    return a;
}

template <class F>
std::string error_of(F&& f) {
    try {
        f();
    } catch (const Error& e) {
        return std::string(e.id()) + " " + e.what();
    }
    return "no error";
}
}  // namespace

TEST_CASE("optimizer state: a model not initialised is named as such, and the optimizer is unchanged", "[serialize]") {
    auto make = [] { return Relu<8, 4>() >> Softmax<3>(); };
    const Floats2d X = random_array(6, 4, 41);
    auto a = make();
    a.initialize(X);
    Optimizer opt_a = Adam(0.01);
    auto [Yh, backprop] = a.begin_update(X);
    backprop(filled<Floats2d>({6, 3}, 0.5f));
    a.finish_update(opt_a);
    const Bytes state = optimizer_to_bytes(opt_a, a);
    const Bytes empty_state = optimizer_to_bytes(Adam(0.5), a);

    auto check = [&](Node& fresh, const std::string& name) {
        Optimizer opt = Adam(0.5);
        const std::string what = error_of([&] { optimizer_from_bytes(opt, fresh, state); });
        CHECK_THAT(what, Catch::Contains("tenon-E220") && Catch::Contains("the model '" + name + "' is not initialised") &&
                             Catch::Contains("initialize() it or load its weights"));
        CHECK_THAT(what, !Catch::Contains("has 0") && !Catch::Contains("0 values"));
        CHECK(opt.learn_rate() == 0.5);
        CHECK(optimizer_to_bytes(opt, a) == empty_state);  // no entry taken
        fresh.from_bytes(a.to_bytes());
        optimizer_from_bytes(opt, fresh, state);  // with its weights, it loads
        CHECK(optimizer_to_bytes(opt, fresh) == state);
    };
    SECTION("a typed model") {
        auto fresh = make();
        check(fresh, "relu>>softmax");
    }
    SECTION("the same held in an AnyModel") {
        AnyModel<Floats2d, Floats2d> fresh = make();
        check(fresh, "relu>>softmax");
    }
}

// Format versions 1 and 2 index the optimizer's entries by every node of the model that wrote
// them; a model held in an AnyModel has one node more (the AnyModel's) above it. A checkpoint
// holds the writer's tree, so its entries are placed exactly; an optimizer file alone is read
// against the model as held and against its file's view, and is refused when both fit.
TEST_CASE("optimizer state of format versions 1 and 2 loads into a model held in an AnyModel", "[serialize][golden]") {
    const Floats2d X = golden_X(7);
    for (std::uint32_t version = 1; version <= 2; ++version) {
        CAPTURE(version);
        const std::string v = "_v" + std::to_string(version);
        const Bytes file = read_file(golden_path(("mlp" + v + ".checkpoint").c_str()));
        auto typed = golden_mlp();
        Optimizer opt_typed = Adam(0.5);
        checkpoint_from_bytes(typed, opt_typed, file);
        AnyModel<Floats2d, Floats2d> any = golden_mlp();
        Optimizer opt = Adam(0.5);
        checkpoint_from_bytes(any, opt, file);
        CHECK(opt.learn_rate() == 0.01);
        CHECK(opt.skipped_steps() == (version >= 2 ? 1u : 0u));
        CHECK(optimizer_to_bytes(opt, any) == optimizer_to_bytes(opt_typed, typed));
        CHECK(close_to_expected(any.predict(X), read_text(golden_path(("mlp" + v + ".expected").c_str()))));
        // Built from a config: AnyModels around the chain and around each layer.
        AnyModel<Floats2d, Floats2d> built = config::build_model<Floats2d, Floats2d>(config::Config::from_str(R"(
[model]
@layers = "chain.v1"
[model.*.a]
@layers = "Relu.v1"
nO = 16
dropout = 0.2
[model.*.b]
@layers = "Relu.v1"
nO = 16
normalize = true
[model.*.c]
@layers = "Softmax.v1"
nO = 4
)"));
        Optimizer opt_built = Adam(0.5);
        checkpoint_from_bytes(built, opt_built, file);
        CHECK(optimizer_to_bytes(opt_built, built) == optimizer_to_bytes(opt_typed, typed));
        CHECK(close_to_expected(built.predict(X), read_text(golden_path(("mlp" + v + ".expected").c_str()))));
    }
    // Optimizer files alone, as versions 1 and 2 wrote them.
    auto make = [] { return Relu<8, 4>() >> Relu<8>({.normalize = true}) >> Softmax<3>(); };
    const Floats2d Xs = random_array(6, 4, 43);
    auto a = make();
    a.initialize(Xs);
    Optimizer opt_a = Adam(0.01);
    for (int k = 0; k < 2; ++k) {
        auto [Yh, backprop] = a.begin_update(Xs);
        backprop(filled<Floats2d>({6, 3}, 0.25f));
        a.finish_update(opt_a);
    }
    const Bytes state = optimizer_to_bytes(opt_a, a);
    for (std::uint32_t version = 1; version <= 2; ++version) {
        CAPTURE(version);
        // Written by the typed model (its nodes are its file's view), and by the same model held
        // in an AnyModel (one node more, first).
        for (std::uint64_t shift : {0u, 1u}) {
            CAPTURE(shift);
            const Bytes old = old_optimizer_file(state, version, shift);
            AnyModel<Floats2d, Floats2d> any = make();
            any.from_bytes(a.to_bytes());
            Optimizer opt = Adam(0.5);
            optimizer_from_bytes(opt, any, old);
            CHECK(opt.learn_rate() == 0.01);
            CHECK(optimizer_to_bytes(opt, any) == state);  // (no step was skipped: version 1's 0 is the same)
            if (shift == 0) {  // the typed model reads it as before
                auto typed = make();
                typed.from_bytes(a.to_bytes());
                Optimizer opt_t = Adam(0.5);
                optimizer_from_bytes(opt_t, typed, old);
                CHECK(optimizer_to_bytes(opt_t, typed) == state);
            }
        }
    }
    SECTION("an old optimizer file that fits both readings is refused, naming its version") {
        // Three layers alike; entries for the last two only: in the model as held, node 2 is the
        // first layer, in its file's view the second.
        auto same = [] { return Relu<8, 8>() >> Relu<8, 8>() >> Relu<8, 8>(); };
        auto b = same();
        b.initialize();
        Optimizer opt_b = Adam(0.01);
        for (std::size_t l : {1u, 2u}) {
            Node& layer = l == 1 ? static_cast<Node&>(b.layer<1>()) : static_cast<Node&>(b.layer<2>());
            for (const char* p : {"W", "b"}) {
                Floats1d g = filled<Floats1d>({layer.get_param(p).size()}, 0.1f);
                opt_b.update(layer.id(), p, layer.get_param(p).flat(), g.view());
            }
        }
        const Bytes old = old_optimizer_file(optimizer_to_bytes(opt_b, b), 2);
        AnyModel<Floats2d, Floats2d> any = same();
        any.from_bytes(b.to_bytes());
        Optimizer opt = Adam(0.5);
        const std::string what = error_of([&] { optimizer_from_bytes(opt, any, old); });
        CHECK_THAT(what, Catch::Contains("tenon-E220") && Catch::Contains("format version 2") &&
                             Catch::Contains("AnyModel"));
        CHECK(opt.learn_rate() == 0.5);
        // The model it was written for reads it.
        auto typed = same();
        typed.from_bytes(b.to_bytes());
        optimizer_from_bytes(opt, typed, old);
        CHECK(opt.learn_rate() == 0.01);
    }
}
