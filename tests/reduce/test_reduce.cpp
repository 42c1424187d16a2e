// The reductions over Ragged (reduce_first/last/max/mean/sum), expand_window (Floats2d and
// Ragged), HashEmbed, Embed and uniqued: their signatures (static_asserts), Thinc's values
// (forward, dX and the gradient of E, from tests/reduce/gen_thinc_reduce.py), the
// finite-difference gradient check, uniqued's law (uniqued(HashEmbed) == HashEmbed), and the
// edge cases: empty batches, zero-length sequences, ids and columns out of range.
#include <catch2/catch.hpp>

#include <tenon/tenon.hpp>

#include <cmath>
#include <functional>
#include <string>
#include <type_traits>

#include "oracle/case.hpp"
#include "support/floats.hpp"
#include "support/gradcheck_any.hpp"
#include "unit/helpers.hpp"
#include "support/error_id.hpp"

using namespace tenon;
using namespace tenon::oracle;

// ---------------------------------------------------------------------------------------
// Signatures
// ---------------------------------------------------------------------------------------
template <class M, class In, class Out>
constexpr bool sig = std::is_same_v<typename M::In, In> && std::is_same_v<typename M::Out, Out>;

static_assert(sig<decltype(reduce_first()), Ragged, Floats2d>);
static_assert(sig<decltype(reduce_last()), Ragged, Floats2d>);
static_assert(sig<decltype(reduce_max()), Ragged, Floats2d>);
static_assert(sig<decltype(reduce_mean()), Ragged, Floats2d>);
static_assert(sig<decltype(reduce_sum()), Ragged, Floats2d>);
static_assert(Model<ReduceMean> && widths::width_preserving<ReduceMean>);
static_assert(sig<decltype(expand_window()), Floats2d, Floats2d>);
static_assert(sig<decltype(expand_window<Ragged>(2)), Ragged, Ragged>);
static_assert(sig<decltype(expand_window<2>()), Floats2d, Floats2d>);
static_assert(sig<decltype(expand_window<1, Ragged>()), Ragged, Ragged>);
static_assert(sig<HashEmbed<8>, Ints2d, Floats2d>);
static_assert(sig<HashEmbed<8, Keys1d>, Keys1d, Floats2d>);
static_assert(sig<HashEmbed<8, Ints1d>, Ints1d, Floats2d>);
static_assert(sig<Embed<8>, Ints2d, Floats2d>);
static_assert(sig<Embed<8, Keys2d>, Keys2d, Floats2d>);
static_assert(sig<decltype(uniqued(HashEmbed<8>(100))), Ints2d, Floats2d>);
// Static widths: a static window and nI give a static nO; chain propagates them.
static_assert(widths::static_nO<ExpandWindow<Floats2d, 1, 4>>() == 12);
static_assert(widths::static_nO<decltype(expand_window(1))>() == dyn);
static_assert(widths::rebindable<ExpandWindow<Floats2d, 2>> && !widths::rebindable<ExpandWindow<Floats2d>>);
static_assert(std::is_same_v<decltype(Relu<4, 3>() >> expand_window<1>() >> Relu<2>()),
                             Chain<Relu<4, 3>, ExpandWindow<Floats2d, 1, 4>, Relu<2, 12>>>);
static_assert(std::is_same_v<decltype(HashEmbed<8>(100) >> Relu<2>()), Chain<HashEmbed<8>, Relu<2, 8>>>);
static_assert(widths::static_nO<decltype(uniqued(HashEmbed<8>(100)))>() == 8);
static_assert(std::is_same_v<decltype(uniqued(Embed<6>(10)) >> Relu<2>()),
                             Chain<Uniqued<Embed<6>>, Relu<2, 6>>>);
static_assert(widths::static_nO<HashEmbed<>>() == dyn);

namespace {
using tenon::test::error_id;
Ragged random_ragged(std::initializer_list<std::int32_t> lengths, std::size_t width, std::uint64_t seed) {
    std::size_t rows = 0;
    for (auto n : lengths) rows += static_cast<std::size_t>(n);
    return Ragged(testing::random_array(rows, width, seed), lengths);
}
std::size_t num(const Case& c, const std::string& key) { return static_cast<std::size_t>(std::lround(c.scalar(key))); }
// Values stored as 16-bit pieces, lowest first (gen_thinc_reduce.py's pieces16).
std::vector<std::uint64_t> from_pieces(const Case& c, const std::string& key) {
    const auto& s = c.get(key);
    const std::size_t n = s.shape[1];
    std::vector<std::uint64_t> out(s.shape[0]);
    for (std::size_t i = 0; i < out.size(); ++i)
        for (std::size_t k = 0; k < n; ++k)
            out[i] |= static_cast<std::uint64_t>(std::llround(s.values[i * n + k])) << (16 * k);
    return out;
}
template <class M>
void set_E(M& model, const Case& c) {
    for (Node* n : model.walk())
        if (n->has_param("E")) {
            n->set_param("E", c.param("E"));
            for (float& g : n->get_grad("E")) g = 0.0f;
        }
}
template <class M>
CParamView grad_E(const M& model) {
    for (const Node* n : model.walk())
        if (n->has_param("E")) return n->get_grad("E");
    FAIL("no E");
    return {};
}
}  // namespace

// ---------------------------------------------------------------------------------------
// Oracle: Thinc's values
// ---------------------------------------------------------------------------------------
template <class M>
void check_reduce_case(M model, const std::string& kind) {
    std::vector<std::string> names{"ties", "one", "many"};
    if (kind == "mean" || kind == "sum") names.push_back("empty_seq");
    for (const auto& n : names) {
        const std::string name = "reduce_" + kind + "_" + n;
        INFO(name);
        Case c(name);
        const Ragged X = read_ragged(c, "X");
        check_close(c, "Y", model.predict(X));
        auto [Y, backprop] = model(X, true);
        check_close(c, "Y", Y);
        check_close(c, "dX", backprop(c.f2("dY")));
    }
}

TEST_CASE("reductions agree with Thinc", "[reduce][oracle]") {
    check_reduce_case(reduce_first(), "first");
    check_reduce_case(reduce_last(), "last");
    check_reduce_case(reduce_max(), "max");
    check_reduce_case(reduce_mean(), "mean");
    check_reduce_case(reduce_sum(), "sum");
}

TEST_CASE("expand_window agrees with Thinc on Floats2d and Ragged", "[reduce][expand_window][oracle]") {
    for (const char* name : {"window_floats_1", "window_floats_2", "window_floats_short", "window_floats_empty"}) {
        INFO(name);
        Case c(name);
        auto model = expand_window(num(c, "window"));
        const Floats2d X = c.f2("X");
        check_close(c, "Y", model.predict(X));
        auto [Y, backprop] = model(X, true);
        check_close(c, "Y", Y);
        check_close(c, "dX", backprop(c.f2("dY")));
    }
    for (const char* name : {"window_ragged_1", "window_ragged_2", "window_ragged_0"}) {
        INFO(name);
        Case c(name);
        auto model = expand_window<Ragged>(num(c, "window"));
        const Ragged X = read_ragged(c, "X");
        check_close(c, "Y", model.predict(X));
        auto [Y, backprop] = model(X, true);
        check_close(c, "Y", Y);
        check_close(c, "dX", backprop(read_ragged(c, "dY")));
    }
    // The static window gives the same values.
    Case c("window_ragged_1");
    auto model = expand_window<1, Ragged>();
    check_close(c, "Y", model.predict(read_ragged(c, "X")));
}

TEST_CASE("murmurhash3_uint64 is Thinc's ops.hash, bit for bit", "[reduce][hashembed][oracle]") {
    Case c("hash");
    const auto ids = from_pieces(c, "ids16");
    const auto seeds = from_pieces(c, "seeds16");
    for (std::size_t s = 0; s < seeds.size(); ++s) {
        const auto& want = c.get("hash" + std::to_string(s));  // (ids, 8 pieces): 4 words of 2 pieces
        REQUIRE(want.shape == std::vector<std::size_t>{ids.size(), 8});
        for (std::size_t i = 0; i < ids.size(); ++i) {
            const auto h = murmurhash3_uint64(ids[i], static_cast<std::uint32_t>(seeds[s]));
            for (std::size_t k = 0; k < 4; ++k) {
                const auto lo = static_cast<std::uint32_t>(std::lround(want.values[i * 8 + 2 * k])),
                           hi = static_cast<std::uint32_t>(std::lround(want.values[i * 8 + 2 * k + 1]));
                INFO("seed " << seeds[s] << " id " << ids[i] << " word " << k);
                CHECK(h[k] == (lo | (hi << 16)));
            }
        }
    }
}

TEST_CASE("HashEmbed agrees with Thinc: the same table and seed give the same rows", "[reduce][hashembed][oracle]") {
    SECTION("Ints2d, ids in column 1, a negative id") {
        Case c("hashembed_ints2d");
        HashEmbed<> model(num(c, "nV"), HashEmbedOptions{.nO = num(c, "nO"),
                                                         .seed = static_cast<std::uint32_t>(from_pieces(c, "seed16")[0]),
                                                         .column = num(c, "column"),
                                                         .initializer = {},
                                                         .dropout = {}});
        model.initialize();
        set_E(model, c);
        const Ints2d X = read_array<Ints2d>(c, "X");
        check_close(c, "Y", model.predict(X), 0, 0);  // the same rows summed in the same order
        auto [Y, backprop] = model(X, true);
        check_close(c, "Y", Y, 0, 0);
        const Ints2d dX = backprop(c.f2("dY"));
        CHECK(dX.shape() == X.shape());
        check_close(c, "dE", grad_E(model));
    }
    SECTION("Keys1d, large keys") {
        Case c("hashembed_keys");
        HashEmbed<4, Keys1d> model(num(c, "nV"), static_cast<std::uint32_t>(from_pieces(c, "seed16")[0]));
        model.initialize();
        set_E(model, c);
        const auto ids = from_pieces(c, "ids16");
        Keys1d X({ids.size()}, uninitialized);
        std::copy(ids.begin(), ids.end(), X.begin());
        check_close(c, "Y", model.predict(X), 0, 0);
        auto [Y, backprop] = model(X, true);
        backprop(c.f2("dY"));
        check_close(c, "dE", grad_E(model));
    }
}

TEST_CASE("Embed agrees with Thinc", "[reduce][embed][oracle]") {
    SECTION("Ints2d, ids in column 2") {
        Case c("embed_ints2d");
        Embed<4> model(num(c, "nV"), num(c, "column"));
        model.initialize();
        set_E(model, c);
        const Ints2d X = read_array<Ints2d>(c, "X");
        check_close(c, "Y", model.predict(X), 0, 0);
        auto [Y, backprop] = model(X, true);
        backprop(c.f2("dY"));
        check_close(c, "dE", grad_E(model));
    }
    SECTION("Ints1d, nO from Y") {
        Case c("embed_ints1d");
        Embed<dyn, Ints1d> model(num(c, "nV"));
        const Ints1d X = read_array<Ints1d>(c, "X");
        model.initialize(X, c.f2("Y"));
        CHECK(model.get_dim("nO") == num(c, "nO"));
        set_E(model, c);
        auto [Y, backprop] = model(X, true);
        check_close(c, "Y", Y, 0, 0);
        backprop(c.f2("dY"));
        check_close(c, "dE", grad_E(model));
    }
}

TEST_CASE("uniqued agrees with Thinc", "[reduce][uniqued][oracle]") {
    {
        Case c("uniqued_hashembed");
        auto model = uniqued(HashEmbed<5>(num(c, "nV"), static_cast<std::uint32_t>(from_pieces(c, "seed16")[0]),
                                          num(c, "column")),
                             num(c, "column"));
        model.initialize();
        set_E(model, c);
        const Ints2d X = read_array<Ints2d>(c, "X");
        check_close(c, "Y", model.predict(X));
        auto [Y, backprop] = model(X, true);
        check_close(c, "Y", Y);
        CHECK(backprop(c.f2("dY")).shape() == X.shape());
        check_close(c, "dE", grad_E(model));
    }
    {
        Case c("uniqued_embed");
        auto model = uniqued(Embed<3>(num(c, "nV"), num(c, "column")), num(c, "column"));
        model.initialize();
        set_E(model, c);
        const Ints2d X = read_array<Ints2d>(c, "X");
        auto [Y, backprop] = model(X, true);
        check_close(c, "Y", Y);
        backprop(c.f2("dY"));
        check_close(c, "dE", grad_E(model));
    }
}

// ---------------------------------------------------------------------------------------
// Laws
// ---------------------------------------------------------------------------------------
TEST_CASE("uniqued(HashEmbed) is HashEmbed: the same output and gradient of E", "[reduce][uniqued]") {
    HashEmbed<6> plain(50, 9u, 1);
    plain.initialize();
    auto cached = uniqued(plain, 1);
    Ints2d X({12, 2}, uninitialized);
    Rng rng(4);
    for (std::size_t i = 0; i < 12; ++i) {
        X(i, 0) = static_cast<std::int32_t>(i);
        X(i, 1) = static_cast<std::int32_t>(rng.below(4)) - 1;  // many repeats, a negative key
    }
    const Floats2d dY = testing::random_array(12, 6, 5);
    auto [Y1, bp1] = plain(X, true);
    auto [Y2, bp2] = cached(X, true);
    REQUIRE(Y1.shape() == Y2.shape());
    CHECK(std::equal(Y1.begin(), Y1.end(), Y2.begin()));
    CHECK(std::equal(Y1.begin(), Y1.end(), cached.predict(X).begin()));
    bp1(dY);
    bp2(dY);
    const auto g1 = plain.get_grad("E"), g2 = cached.layer().get_grad("E");
    for (std::size_t i = 0; i < g1.size(); ++i) CHECK(g1.data[i] == Approx(g2.data[i]).margin(1e-6));
}

// ---------------------------------------------------------------------------------------
// Gradient checks
// ---------------------------------------------------------------------------------------
TEST_CASE("gradient check: reductions over Ragged", "[reduce][gradcheck]") {
    const Ragged X = random_ragged({3, 1, 4, 2}, 5, 1);
    const Ragged with_empty = random_ragged({2, 0, 3, 0}, 3, 2);
    {
        auto m = reduce_first();
        testing::require_gradients(m, X);
    }
    {
        auto m = reduce_last();
        testing::require_gradients(m, X);
    }
    {
        auto m = reduce_max();
        testing::require_gradients(m, X);
    }
    {
        auto m = reduce_mean();
        testing::require_gradients(m, X);
        testing::require_gradients(m, with_empty);
    }
    {
        auto m = reduce_sum();
        testing::require_gradients(m, X);
        testing::require_gradients(m, with_empty);
    }
}

TEST_CASE("gradient check: expand_window on Floats2d and Ragged", "[reduce][expand_window][gradcheck]") {
    {
        auto m = expand_window(1);
        testing::require_gradients(m, testing::random_array(5, 3, 3));
    }
    {
        auto m = expand_window<2>();
        testing::require_gradients(m, testing::random_array(4, 2, 4));
    }
    {
        auto m = expand_window<Ragged>(1);
        testing::require_gradients(m, random_ragged({3, 0, 1, 4}, 2, 5));
    }
    {
        auto m = expand_window<2, Ragged>();
        testing::require_gradients(m, random_ragged({5, 2}, 2, 6));
    }
}

TEST_CASE("gradient check: HashEmbed, Embed, uniqued (gradients of E)", "[reduce][hashembed][embed][uniqued][gradcheck]") {
    Ints2d X({7, 2}, {0, 3, 1, 5, 2, 3, 3, 9, 4, 5, 5, 0, 6, 3});
    {
        HashEmbed<4> m(11, 2u, 1);
        m.initialize();
        testing::randomize_params(m, 1);
        testing::require_gradients(m, X);
    }
    {
        HashEmbed<4> m(11, 2u, 1, 0.5);  // dropout: the same mask for the same seed
        m.initialize();
        testing::randomize_params(m, 2);
        testing::require_gradients(m, X);
    }
    {
        Embed<3> m(10, 1);
        m.initialize();
        testing::randomize_params(m, 3);
        testing::require_gradients(m, X);
    }
    {
        auto m = uniqued(HashEmbed<4>(11, 2u, 1), 1);
        m.initialize();
        testing::randomize_params(m, 4);
        testing::require_gradients(m, X);
    }
    {
        auto m = uniqued(Embed<3>(10, 1), 1);
        m.initialize();
        testing::randomize_params(m, 5);
        testing::require_gradients(m, X);
    }
}

// ---------------------------------------------------------------------------------------
// Edge cases
// ---------------------------------------------------------------------------------------
TEST_CASE("reductions: empty batches and zero-length sequences", "[reduce][errors]") {
    const Ragged none(Floats2d({0, 3}), Ints1d({0}));
    auto check_empty = [&](auto model) {
        INFO(model.name());
        auto [Y, backprop] = model(none, true);
        CHECK(Y.shape() == std::array<std::size_t, 2>{0, 3});
        const Ragged dX = backprop(Y);
        CHECK(dX.size() == 0);
        CHECK(dX.data().shape() == std::array<std::size_t, 2>{0, 3});
    };
    check_empty(reduce_first());
    check_empty(reduce_last());
    check_empty(reduce_max());
    check_empty(reduce_mean());
    check_empty(reduce_sum());

    // mean and sum: a row of zeros, and no gradient (the only sequence may be empty).
    const Ragged empties(Floats2d({0, 2}), {0, 0});
    for (auto Y : {reduce_mean().predict(empties), reduce_sum().predict(empties)}) {
        CHECK(Y.shape() == std::array<std::size_t, 2>{2, 2});
        CHECK(std::all_of(Y.begin(), Y.end(), [](float v) { return v == 0.0f; }));
    }
    auto mean = reduce_mean();
    auto [Ym, bpm] = mean(empties, true);
    CHECK(bpm(Ym).rows() == 0);
    // max, first, last: no row to take; the error names the sequence.
    const Ragged gap = random_ragged({2, 0, 1}, 2, 3);
    CHECK(error_id([&] { reduce_max().predict(gap); }) == "tenon-E190");
    CHECK(error_id([&] { reduce_first().predict(gap); }) == "tenon-E190");
    CHECK(error_id([&] { reduce_last()(gap, true); }) == "tenon-E190");
    try {
        reduce_max().predict(gap);
    } catch (const Error& e) {
        CHECK_THAT(e.what(), Catch::Contains("sequence 1 has length 0"));
    }
    // A gradient of another shape.
    auto sum = reduce_sum();
    auto fs = sum(gap, true);  // (no structured binding: clang 14 cannot capture one)
    auto& bps = fs.second;
    CHECK(error_id([&] { bps(Floats2d({2, 2})); }) == "tenon-E191");
    CHECK(error_id([&] { bps(Floats2d({3, 1})); }) == "tenon-E191");
    CHECK(error_id([] { ReduceSum::Backprop{}(Floats2d({1, 1})); }) == "tenon-E191");
    // reduce_max's ties keep the first row; the gradient goes there only.
    auto mx = reduce_max();
    auto [Yx, bpx] = mx(Ragged(Floats2d({3, 1}, {2, 2, 1}), {3}), true);
    CHECK(Yx(0, 0) == 2.0f);
    const Ragged dx = bpx(Floats2d({1, 1}, {5}));
    CHECK(dx.data()(0, 0) == 5.0f);
    CHECK(dx.data()(1, 0) == 0.0f);
}

TEST_CASE("expand_window: widths, empty input and errors", "[reduce][expand_window][errors]") {
    auto m = expand_window(2);
    CHECK(m.predict(Floats2d({0, 3})).shape() == std::array<std::size_t, 2>{0, 15});
    m.initialize(testing::random_array(2, 3, 1));
    CHECK(m.get_dim("nO") == 15);
    CHECK(error_id([&] { m.predict(Floats2d({2, 4})); }) == "tenon-E192");
    auto fm = m(testing::random_array(2, 3, 1), true);
    CHECK(error_id([&] { fm.second(Floats2d({2, 14})); }) == "tenon-E191");
    auto r = expand_window<Ragged>(1);
    const Ragged X = random_ragged({2, 1}, 2, 2);
    auto fr = r(X, true);
    const Ragged& Yr = fr.first;
    auto& bpr = fr.second;
    CHECK(Yr.lengths()[0] == 2);
    CHECK(error_id([&] { bpr(Ragged(Yr.data(), {1, 2})); }) == "tenon-E191");
    CHECK(error_id([] { ExpandWindow<Floats2d, 1>(2); }) == "tenon-E195");
    // Windows do not cross sequences: the second sequence's row sees zeros around it.
    const Floats2d& y = Yr.data();
    for (std::size_t j = 0; j < 2; ++j) {
        CHECK(y(2, j) == 0.0f);
        CHECK(y(2, 4 + j) == 0.0f);
        CHECK(y(2, 2 + j) == X.data()(2, j));
    }
    // In a chain, a static window and width give static widths, checked at run time too.
    auto chain_model = Relu<4, 3>() >> expand_window<1>() >> Relu<2>();
    chain_model.initialize();
    CHECK(chain_model.predict(testing::random_array(5, 3, 3)).shape() == std::array<std::size_t, 2>{5, 2});
    auto dyn_chain = Relu<4, 3>() >> expand_window(1) >> Relu<2>();
    dyn_chain.initialize(testing::random_array(5, 3, 3));
    CHECK(dyn_chain.predict(testing::random_array(5, 3, 3)).shape() == std::array<std::size_t, 2>{5, 2});
}

TEST_CASE("HashEmbed and Embed: ids, columns and options", "[reduce][hashembed][embed][errors]") {
    Embed<2> e(5, 1);
    e.initialize();
    CHECK(error_id([&] { e.predict(Ints2d({2, 2}, {0, 4, 0, 5})); }) == "tenon-E193");
    CHECK(error_id([&] { e.predict(Ints2d({2, 2}, {0, 4, 0, -1})); }) == "tenon-E193");
    CHECK(error_id([&] { e.predict(Ints2d({2, 1}, {0, 4})); }) == "tenon-E194");
    CHECK(e.predict(Ints2d({0, 2})).shape() == std::array<std::size_t, 2>{0, 2});
    Embed<2, Keys1d> ek(5);
    ek.initialize();
    CHECK(error_id([&] { ek.predict(Keys1d({1}, {5})); }) == "tenon-E193");
    CHECK(error_id([] { Embed<2>(0); }) == "tenon-E195");
    CHECK(error_id([] { Embed<2, Ints1d>(5, 1); }) == "tenon-E194");
    CHECK(error_id([] { HashEmbed<2>(10, 1u, 0, 1.5); }) == "tenon-E195");
    CHECK(error_id([] { HashEmbed<2>(0); }) == "tenon-E195");

    HashEmbed<3> h(10, 3u, 2);
    h.initialize();
    CHECK(error_id([&] { h.predict(Ints2d({1, 2}, {1, 2})); }) == "tenon-E194");
    // E: uniform in [-0.1, 0.1) (Thinc's uniform_init).
    for (float v : h.get_param("E")) CHECK((v >= -0.1f && v < 0.1f));
    // An empty batch: no rows, no mask drawn, a zero gradient of the right shape.
    auto f0 = h(Ints2d({0, 3}), true);
    const Floats2d& Y0 = f0.first;
    auto& bp0 = f0.second;
    CHECK(Y0.shape() == std::array<std::size_t, 2>{0, 3});
    CHECK(bp0(Y0).shape() == std::array<std::size_t, 2>{0, 3});
    CHECK(error_id([&] { bp0(Floats2d({1, 3})); }) == "tenon-E191");
    // The default seed is the layer's id, as Thinc's model.id.
    HashEmbed<3> d(10);
    CHECK(d.seed() == static_cast<std::uint32_t>(d.id()));
    CHECK(d.get_attr("seed") == Attr(static_cast<std::int64_t>(static_cast<std::uint32_t>(d.id()))));
    // Dropout: one mask over the columns, shared by every row (Thinc's get_dropout_mask((nO,))).
    HashEmbed<8> hd(10, 1u, 0, 0.5);
    hd.initialize();
    const Ints2d ids({4, 1}, {1, 2, 3, 4});
    const Floats2d clean = hd.predict(ids);
    fix_random_seed(3);
    auto [Yd, bpd] = hd(ids, true);
    bool some_dropped = false, some_kept = false;
    for (std::size_t j = 0; j < 8; ++j) {
        const bool dropped = Yd(0, j) == 0.0f;
        (dropped ? some_dropped : some_kept) = true;
        for (std::size_t i = 0; i < 4; ++i)
            CHECK(Yd(i, j) == Approx(dropped ? 0.0f : 2.0f * clean(i, j)));
    }
    CHECK((some_dropped && some_kept));
    auto [Yp, bpp] = hd(ids, false);  // no dropout outside training
    CHECK(std::equal(Yp.begin(), Yp.end(), clean.begin()));
}

namespace {
// A layer that gives one row whatever its input: uniqued must refuse its output.
struct OneRow : Layer<OneRow, Ints2d, Floats2d> {
    OneRow() : Layer("one_row", {}, {}) { mark_initialized(); }
    struct Backprop {
        Ints2d operator()(Floats2dCView) const { return {}; }
    };
    void init_impl(const Ints2dCView*, const Floats2dCView*) {}
    Floats2d predict_impl(Ints2dCView) const { return Floats2d({1, 2}); }
    std::pair<Floats2d, Backprop> forward_impl(Ints2dCView X, bool) { return {predict_impl(X), {}}; }
};
}  // namespace

TEST_CASE("uniqued: small batches, columns, and a layer that breaks the rows", "[reduce][uniqued][errors]") {
    auto u = uniqued(Embed<2>(5), 1);
    u.initialize();
    CHECK(u.name() == "uniqued(embed)");
    CHECK(u.get_dim("nO") == 2);
    // Fewer than two values go straight to the layer, as in Thinc (the layer reads column 0).
    CHECK(u.predict(Ints2d({1, 1}, {3})).shape() == std::array<std::size_t, 2>{1, 2});
    CHECK(u.predict(Ints2d({0, 2})).shape() == std::array<std::size_t, 2>{0, 2});
    CHECK(error_id([&] { u.predict(Ints2d({2, 1}, {1, 2})); }) == "tenon-E194");
    auto fu = u(Ints2d({3, 2}, {1, 7, 2, 7, 3, 8}), true);
    CHECK(error_id([&] { fu.second(Floats2d({2, 2})); }) == "tenon-E191");
    auto bad = uniqued(OneRow());
    CHECK(error_id([&] { bad.predict(Ints2d({3, 1}, {1, 2, 3})); }) == "tenon-E196");
    // In a chain: uniqued's static nO flows on.
    auto model = uniqued(HashEmbed<4>(20, 1u)) >> Relu<3>();
    model.initialize();
    CHECK(model.predict(Ints2d({4, 1}, {1, 1, 2, 1})).shape() == std::array<std::size_t, 2>{4, 3});
}

// What the embedding tables share (include/tenon/layers/detail/embed_ids.hpp) on its own: the
// id column, its check, the per-column dropout mask, and the masked gradient rows.
TEST_CASE("embed_ids: id columns, column masks, gradient rows", "[reduce][embed_ids]") {
    Dropout owner(0.5);  // any node: it names the layer in errors and holds dropout_rate
    const Ints2d ids({3, 2}, {10, 11, 20, 21, 30, 31});
    const auto col1 = detail::id_column(owner, ids.view(), 1);
    REQUIRE(col1.rows() == 3);
    CHECK(col1.id(0) == 11);
    CHECK(col1.id(2) == 31);
    const Ints1d flat({2}, {7, 8});
    CHECK(detail::id_column(owner, flat.view(), 0).id(1) == 8);
    CHECK(error_id([&] { detail::id_column(owner, ids.view(), 2); }) == "tenon-E194");
    CHECK(error_id([&] { detail::check_column<Ints1d>("embed", 1); }) == "tenon-E194");
    CHECK(error_id([&] { detail::check_dropout_rate("embed", 1.5); }) == "tenon-E195");

    // One mask value per column, shared by every row; none in inference or at rate 0.
    CHECK(detail::column_dropout_mask(owner, 64, false).size() == 0);
    fix_random_seed(3);
    const Floats1d mask = detail::column_dropout_mask(owner, 64, true);
    REQUIRE(mask.size() == 64);
    std::size_t kept = 0;
    for (float m : mask) {
        CHECK((m == 0.0f || m == 2.0f));
        kept += m != 0.0f;
    }
    CHECK(kept > 0);
    CHECK(kept < 64);
    Floats2d Y({2, 64});
    Y.fill(1.0f);
    detail::apply_column_mask(owner.ops(), Y.data(), 2, mask);
    for (std::size_t j = 0; j < 64; ++j) CHECK(Y(1, j) == mask[j]);

    // A gradient row adds into the table's row (the backend's scatter-add), through the mask
    // when there is one; a row named twice gets both.
    float e[6] = {1, 1, 1, 0, 0, 0};
    const float dy[6] = {1, 2, 3, 10, 20, 30};
    const std::uint32_t to0[1] = {0};
    cpu_ops().scatter_add_rows(e, 3, to0, 1, 1, dy, nullptr);
    CHECK((e[0] == 2 && e[1] == 3 && e[2] == 4));
    const float m3[3] = {0.0f, 2.0f, 1.0f};
    cpu_ops().scatter_add_rows(e, 3, to0, 1, 1, dy, m3);
    CHECK((e[0] == 2 && e[1] == 7 && e[2] == 7));
    const std::uint32_t twice[4] = {1, 1, 0, 1};  // two rows of dy, two keys each
    cpu_ops().scatter_add_rows(e, 3, twice, 2, 2, dy, nullptr);
    CHECK((e[3] == 12 && e[4] == 24 && e[5] == 36));  // table row 1: dy[0] twice (row 0's keys) + dy[1]
    CHECK((e[0] == 12 && e[1] == 27 && e[2] == 37));  // table row 0: + dy[1] (row 1's first key)
    CHECK(error_id([&] { detail::check_table_grad("embed", true, Floats2d({2, 3}).view(), 2, 4); }) == "tenon-E191");
}
