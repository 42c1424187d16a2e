// Transfers, part 2: array_getitem / floats_getitem / ints_getitem, remap_ids, strings2arrays,
// with_getitem, with_reshape, with_debug. Signatures (static_asserts), Thinc's reference cases
// (gen_thinc_transfers_misc.py), finite-difference gradients, edge cases and run-time errors.
#include <catch2/catch.hpp>

#include <map>
#include <string>
#include <tenon/tenon.hpp>

#include "oracle/case.hpp"
#include "support/error_id.hpp"
#include "support/gradcheck_any.hpp"
#include "unit/helpers.hpp"

using namespace tenon;
using namespace tenon::oracle;

namespace {
using tenon::test::error_message;
template <class A, class B>
bool same_values(const A& a, const B& b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin());
}
template <class A>
A random_of(typename A::shape_type shape, std::uint64_t seed) {
    A a(shape, uninitialized);
    Rng rng(seed);
    for (auto& v : a) v = static_cast<float>(rng.uniform(-1.0, 1.0));
    return a;
}

// The words of gen_thinc_transfers_misc.py (WORDS, STR_TABLE).
const std::vector<Strings> words = {
    {"hello", "world", "a", "", "naïve"},
    {},
    {"ab", "abc", "abcd", "abcde", "abcdef", "abcdefg", "abcdefgh", "日本語", "🙂", "The"},
};
const std::map<std::string, int> str_table = {{"hello", 3}, {"a", 1}, {"naïve", 9}, {"", 4}};
}  // namespace

// ---------------------------------------------------------------------------------------
// Signatures
// ---------------------------------------------------------------------------------------
using G2 = decltype(floats_getitem(Slice(0, 3), Index{1, 4}));
static_assert(std::is_same_v<G2::In, Floats2d> && std::is_same_v<G2::Out, Floats2d>);
using G3 = decltype(floats_getitem<Floats3d>(1, Slice(), Index{1, 0}));
static_assert(std::is_same_v<G3::In, Floats3d> && std::is_same_v<G3::Out, Floats2d>);
using GRow = decltype(array_getitem<Floats2d>(2));
static_assert(std::is_same_v<GRow::In, Floats2d> && std::is_same_v<GRow::Out, Floats1d>);
using GInts = decltype(ints_getitem(Slice(), 1));
static_assert(std::is_same_v<GInts::In, Ints2d> && std::is_same_v<GInts::Out, Ints1d>);
using GKeys = decltype(ints_getitem<Keys2d>(Slice(), Index{0}));
static_assert(std::is_same_v<GKeys::In, Keys2d> && std::is_same_v<GKeys::Out, Keys2d>);
static_assert(std::is_same_v<decltype(array_getitem<Array<float, dyn, 8>>(Slice()))::Out, Floats2d>);

using RS = decltype(remap_ids(str_table));
static_assert(std::is_same_v<RS::In, Strings> && std::is_same_v<RS::Out, Ints2d>);
using RI = decltype(remap_ids(std::map<int, int>{}));
static_assert(std::is_same_v<RI::In, Ints1d> && std::is_same_v<RI::Out, Ints2d>);
using RK = decltype(remap_ids<Keys2d>(std::map<std::uint64_t, int>{}, 0, 0));
static_assert(std::is_same_v<RK::In, Keys2d> && std::is_same_v<RK::Out, Ints2d>);

using S2A = decltype(strings2arrays());
static_assert(std::is_same_v<S2A::In, std::vector<Strings>> && std::is_same_v<S2A::Out, List<Keys2d>>);

using WG = decltype(with_getitem<0, std::pair<Floats2d, Ints1d>>(Relu<3>()));
static_assert(std::is_same_v<WG::In, std::pair<Floats2d, Ints1d>> && std::is_same_v<WG::Out, std::pair<Floats2d, Ints1d>>);
using WG2 = decltype(with_getitem<1, std::tuple<Ints1d, Floats2d, Ints1d>>(floats_getitem(Slice(), 0)));
static_assert(std::is_same_v<WG2::Out, std::tuple<Ints1d, Floats1d, Ints1d>>);

using WR = decltype(with_reshape(Relu<6, 4>()));
static_assert(std::is_same_v<WR::In, Floats3d> && std::is_same_v<WR::Out, Floats3d>);
static_assert(WR::static_nO == 6 && WR::static_nI == 4);
// chain sees the widths through with_reshape and rebinds a dyn nI inside it.
using WRChain = decltype(with_reshape(Relu<6, 4>()) >> with_reshape(Relu<2>()));
static_assert(WRChain::static_nI == 4 && WRChain::static_nO == 2);

using WD = decltype(with_debug(Relu<3>()));
static_assert(std::is_same_v<WD::In, Floats2d> && std::is_same_v<WD::Out, Floats2d> && WD::static_nO == 3);
static_assert(std::is_same_v<decltype(with_debug(strings2arrays()))::Out, List<Keys2d>>);
static_assert(decltype(Relu<4, 5>() >> with_debug(Relu<3>()))::static_nO == 3);

// ---------------------------------------------------------------------------------------
// getitem
// ---------------------------------------------------------------------------------------
namespace {
template <class M>
void check_getitem(const char* name, M model) {
    INFO(name);
    Case c(name);
    const auto X = read_array<typename M::In>(c, "X");
    auto [Y, backprop] = model.begin_update(X);
    check_close(c, "Y", Y, 0, 0);
    const auto dY = read_array<typename M::Out>(c, "dY");
    check_close(c, "dX", backprop(dY), 1e-6, 1e-7);
    check_close(c, "Y", model.predict(X), 0, 0);
}
}  // namespace

TEST_CASE("getitem agrees with Thinc (forward and backward)", "[transfers2][getitem][oracle]") {
    check_getitem("getitem_cols", floats_getitem(Slice(0, 3), Index{1, 4}));
    check_getitem("getitem_3d", floats_getitem<Floats3d>(1, Slice(), Index{1, 0}));
    check_getitem("getitem_neg", floats_getitem(Slice(std::nullopt, std::nullopt, -2), -1));
    check_getitem("getitem_row", array_getitem<Floats2d>(2));
    check_getitem("getitem_clamp", floats_getitem(Slice(-4, 10), Slice(1, std::nullopt)));
    // Thinc's dX loses the repeated row; the case's dX is numpy's add.at.
    check_getitem("getitem_repeat", floats_getitem<Floats2d>(Index{0, 2, 0}));
    Case c("getitem_repeat");
    CHECK(!same_values(c.get("dX").values, c.get("dX_thinc").values));
}

TEST_CASE("ints_getitem agrees with Thinc", "[transfers2][getitem][oracle]") {
    Case c("ints_getitem");
    auto model = ints_getitem(Slice(), 1);
    const auto X = read_array<Ints2d>(c, "X");
    CHECK(same_values(model.predict(X), read_array<Ints1d>(c, "Y")));
    auto [Y, backprop] = model.begin_update(X);
    const Ints2d dX = backprop(Y);  // ints: the same scatter
    CHECK(dX(2, 1) == X(2, 1));
    CHECK(dX(2, 0) == 0);
}

TEST_CASE("getitem: gradients by finite differences", "[transfers2][getitem][gradcheck]") {
    {
        auto m = floats_getitem(Slice(0, 3), Index{1, 4, 1});
        testing::require_gradients(m, testing::random_array(4, 5, 1));
    }
    {
        auto m = floats_getitem<Floats3d>(0, Slice(), Index{1, 0, 1});
        testing::require_gradients(m, random_of<Floats3d>({2, 3, 2}, 2));
    }
    {
        auto m = array_getitem<Floats2d>(Slice(std::nullopt, std::nullopt, -1));
        testing::require_gradients(m, testing::random_array(3, 2, 3));
    }
}

TEST_CASE("getitem: empty input, index description, errors", "[transfers2][getitem]") {
    auto m = floats_getitem(Slice(), Index{1, -1});
    CHECK(m.get_attr("index") == Attr(std::string("[:, [1, -1]]")));
    // An empty batch is indexed like any other (Thinc returns it unindexed).
    const Floats2d E({0, 5});
    auto [Y, backprop] = m.begin_update(E);
    CHECK(Y.shape() == std::array<std::size_t, 2>{0, 2});
    CHECK(backprop(Y).shape() == std::array<std::size_t, 2>{0, 5});
    // Out of range: the axis, the index and the extent.
    const Floats2d X = testing::random_array(3, 2, 4);
    const std::string e = error_message([&] { (void)m.predict(Floats2d({3, 1})); });
    CHECK(e == "[tenon-E180] floats-getitem: index 1 (entry 0 of the Index list) is out of range for axis 1 of "
               "extent 1 (input shape (3, 1))");
    CHECK(m.predict(X).shape() == std::array<std::size_t, 2>{3, 2});  // -1 is the last column
    const std::string e2 = error_message([&] { (void)floats_getitem<Floats2d>(3).predict(X); });
    CHECK(e2 == "[tenon-E180] floats-getitem: index 3 is out of range for axis 0 of extent 3 (input shape (3, 2))");
    const std::string e3 = error_message([&] { (void)floats_getitem(Slice(), Index{0, -3}).predict(X); });
    CHECK(e3 ==
          "[tenon-E180] floats-getitem: index -3 (entry 1 of the Index list) is out of range for axis 1 of extent 2 "
          "(input shape (3, 2))");
    // An integer on the rows of an empty batch is out of range too.
    CHECK(error_message([&] { (void)floats_getitem(0, Slice()).predict(E); }).find("tenon-E180") != std::string::npos);
    CHECK(error_message([] { (void)floats_getitem(Slice(0, 3, 0)); }).find("tenon-E182") != std::string::npos);
    // A gradient of another shape than the output.
    auto bp2 = m.begin_update(X).second;  // (clang 14 captures no structured binding)
    CHECK(error_message([&] { (void)bp2(Floats2d({3, 3})); }) ==
          "[tenon-E181] floats-getitem: backprop: expected a gradient of shape (3, 2) like the output, but found "
          "(3, 3)");
    // Slices past the ends are clamped, as numpy's; an empty slice gives an empty axis.
    CHECK(floats_getitem<Floats2d>(Slice(5, 9)).predict(X).shape() == std::array<std::size_t, 2>{0, 2});
}

// ---------------------------------------------------------------------------------------
// remap_ids, strings2arrays
// ---------------------------------------------------------------------------------------
TEST_CASE("remap_ids agrees with Thinc's remap_ids.v2", "[transfers2][remap_ids][oracle]") {
    Case c("remap_ids");
    Strings all;
    for (const auto& ws : words) all.insert(all.end(), ws.begin(), ws.end());
    auto ms = remap_ids(str_table, 7);
    CHECK(same_values(ms.predict(all), read_array<Ints2d>(c, "strings")));
    CHECK(ms.predict(all).shape() == std::array<std::size_t, 2>{all.size(), 1});

    const std::map<int, int> table{{5, 1}, {-3, 2}, {40, 8}, {7, 0}};
    auto m1 = remap_ids(table, -1);
    auto [Y1, bp1] = m1.begin_update(read_array<Ints1d>(c, "ids1"));
    CHECK(same_values(Y1, read_array<Ints2d>(c, "out1")));
    CHECK(bp1(Y1).shape() == std::array<std::size_t, 1>{6});  // no gradient: zeros of X's shape

    auto m2 = remap_ids<Ints2d>(table, 3, 1);
    CHECK(same_values(m2.predict(read_array<Ints2d>(c, "ids2")), read_array<Ints2d>(c, "out2")));
    auto m3 = remap_ids(table, 3);
    CHECK(m3.predict(Ints1d({0})).shape() == std::array<std::size_t, 2>{0, 1});
}

TEST_CASE("remap_ids: tables written out, updates, errors", "[transfers2][remap_ids]") {
    auto m = remap_ids({{"a", 1}, {"b", 2}});
    CHECK(same_values(m.predict(Strings{"b", "x", "a"}), Ints2d({3, 1}, {2, 0, 1})));
    m.table()["x"] = 5;  // Thinc's attrs["mapping_table"] may be updated
    CHECK(m.predict(Strings{"x"})[0] == 5);
    auto [Y, bp] = m.begin_update(Strings{"a"});
    CHECK(bp(Y).empty());
    CHECK(m.predict(Strings{}).shape() == std::array<std::size_t, 2>{0, 1});

    // uint64 keys (hashes, spaCy's FeatureExtractor columns).
    const std::uint64_t big = 18446744073635511547ull;
    auto k = remap_ids<Keys2d>(std::map<std::uint64_t, int>{{big, 4}}, 0, 0);
    CHECK(same_values(k.predict(Keys2d({2, 2}, {big, 1, 2, big})), Ints2d({2, 1}, {4, 0})));

    CHECK(error_message([] { (void)remap_ids<Ints2d>(std::map<int, int>{}, 0); }).find("tenon-E183") !=
          std::string::npos);
    CHECK(error_message([] { (void)remap_ids(std::map<int, int>{}, 0, 1); }).find("tenon-E183") != std::string::npos);
    auto bad = remap_ids<Ints2d>(std::map<int, int>{}, 0, 2);
    CHECK(error_message([&] { (void)bad.predict(Ints2d({3, 2})); }) ==
          "[tenon-E184] remap_ids: column 2 is out of range for an input with 2 columns (shape (3, 2))");
}

TEST_CASE("strings2arrays gives Thinc's hashes", "[transfers2][strings2arrays][oracle]") {
    Case c("strings2arrays");
    auto m = strings2arrays();
    const List<Keys2d> Y = m.predict(words);
    REQUIRE(Y.size() == static_cast<std::size_t>(c.scalar("n")));
    for (std::size_t i = 0; i < Y.size(); ++i) {
        INFO("sequence " << i);
        const auto& limbs = c.get("hash." + std::to_string(i));
        REQUIRE(Y[i].shape() == std::array<std::size_t, 2>{words[i].size(), 1});
        for (std::size_t j = 0; j < words[i].size(); ++j) {
            std::uint64_t want = 0;
            for (std::size_t k = 0; k < 4; ++k)
                want |= static_cast<std::uint64_t>(limbs.values[j * 4 + k]) << (16 * k);
            INFO("word " << words[i][j]);
            CHECK(Y[i][j] == want);
        }
    }
    CHECK(hash_unicode("world") == -74040069);  // murmurhash.hash_unicode
    auto [Y2, bp] = m.begin_update(std::vector<Strings>{});
    CHECK(Y2.empty());
    CHECK(bp(Y2).empty());
}

// ---------------------------------------------------------------------------------------
// with_getitem, with_reshape, with_debug
// ---------------------------------------------------------------------------------------
TEST_CASE("with_getitem agrees with Thinc", "[transfers2][with_getitem][oracle]") {
    Case c("with_getitem");
    auto model = with_getitem<0, std::pair<Floats2d, Floats2d>>(Linear<3, 4>());
    model.initialize();
    model.layer().set_param("W", c.param("W"));
    model.layer().set_param("b", c.param("b"));
    const std::pair<Floats2d, Floats2d> X{c.f2("X0"), c.f2("X1")};
    auto [Y, backprop] = model.begin_update(X);
    check_close(c, "Y0", Y.first);
    check_close(c, "Y1", Y.second, 0, 0);
    const auto dX = backprop({c.f2("dY0"), c.f2("dY1")});
    check_close(c, "dX0", dX.first);
    check_close(c, "dX1", dX.second, 0, 0);
    check_close(c, "dW", model.layer().get_grad("W"));
    check_close(c, "db", model.layer().get_grad("b"));
    CHECK(model.name() == "with_getitem(linear)");
}

TEST_CASE("with_getitem: gradients, tuples, initialisation from a sample", "[transfers2][with_getitem][gradcheck]") {
    auto model = with_getitem<1, std::tuple<Ints1d, Floats2d>>(Relu<3>());
    const std::tuple<Ints1d, Floats2d> X{Ints1d({2}, {7, 8}), testing::random_array(2, 5, 9)};
    model.initialize(X);  // the layer's nI from element 1
    CHECK(model.layer().get_dim("nI") == 5);
    testing::randomize_params(model, 10);
    testing::require_gradients(model, X);
    const auto Y = model.predict(X);
    CHECK(same_values(std::get<0>(Y), std::get<0>(X)));
    CHECK(std::get<1>(Y).shape() == std::array<std::size_t, 2>{2, 3});

    auto pair_model = with_getitem<0, std::pair<Floats2d, Floats2d>>(Linear<>());
    pair_model.initialize(std::pair{testing::random_array(4, 3, 1), testing::random_array(4, 2, 2)},
                          std::pair{testing::random_array(4, 6, 3), testing::random_array(4, 2, 4)});
    CHECK(pair_model.layer().get_dim("nO") == 6);
    testing::randomize_params(pair_model, 11);
    testing::require_gradients(pair_model, std::pair{testing::random_array(4, 3, 5), testing::random_array(4, 2, 6)});
    // An empty batch.
    const auto E = pair_model.predict(std::pair{Floats2d({0, 3}), Floats2d({0, 2})});
    CHECK(E.first.shape() == std::array<std::size_t, 2>{0, 6});
}

TEST_CASE("with_reshape agrees with Thinc's forward and the inner layer's backward",
          "[transfers2][with_reshape][oracle]") {
    Case c("with_reshape");
    auto model = with_reshape(Linear<3, 4>());
    model.initialize();
    model.layer().set_param("W", c.param("W"));
    model.layer().set_param("b", c.param("b"));
    const auto X = read_array<Floats3d>(c, "X");
    auto [Y, backprop] = model.begin_update(X);
    check_close(c, "Y", Y);
    check_close(c, "dX", backprop(read_array<Floats3d>(c, "dY")));
    check_close(c, "dW", model.layer().get_grad("W"));
    check_close(c, "db", model.layer().get_grad("b"));
    check_close(c, "Y", model.predict(X));
    CHECK(model.get_dim("nO") == 3);
    CHECK(model.get_dim("nI") == 4);
}

TEST_CASE("with_reshape: gradients, inference, chains, errors", "[transfers2][with_reshape][gradcheck]") {
    auto model = with_reshape(Relu<3>());
    const auto X = random_of<Floats3d>({2, 3, 4}, 20);
    model.initialize(X);
    CHECK(model.get_dim("nI") == 4);
    testing::randomize_params(model, 21);
    testing::require_gradients(model, X);
    // An empty batch.
    CHECK(model.predict(Floats3d({0, 3, 4})).shape() == std::array<std::size_t, 3>{0, 3, 3});
    auto backprop = model.begin_update(X).second;
    CHECK(error_message([&] { (void)backprop(Floats3d({2, 3, 4})); }) ==
          "[tenon-E185] with_reshape(relu): backprop: expected a gradient of shape (2, 3, 3) like the output, "
          "but found (2, 3, 4)");
    // Chained: the second layer's nI comes from the first's nO (rebound in the type).
    auto chained = with_reshape(Relu<6, 4>()) >> with_reshape(Relu<2>());
    chained.initialize();
    CHECK(chained.predict(X).shape() == std::array<std::size_t, 3>{2, 3, 2});
    // A layer that changes the number of rows cannot be reshaped back.
    auto rows = with_reshape(with_debug(array_getitem<Floats2d>(Slice(0, 1))));
    CHECK(error_message([&] { (void)rows.predict(X); }).find("tenon-E186") != std::string::npos);
}

TEST_CASE("with_debug calls back as Thinc's and keeps the layer's computation", "[transfers2][with_debug][oracle]") {
    Case c("with_debug");
    int inits = 0, forwards = 0, backprops = 0;
    bool saw_sample = false, saw_train = false;
    auto model = with_debug(Linear<3, 4>(), {.on_init = [&](Linear<3, 4>&, auto X, auto Y) {
                                                 ++inits;
                                                 saw_sample = X && !Y && X->shape(0) == 5;
                                             },
                                             .on_forward = [&](const Linear<3, 4>&, Floats2dCView, bool is_train) {
                                                 ++forwards;
                                                 saw_train = saw_train || is_train;
                                             },
                                             .on_backprop = [&](Floats2dCView) { ++backprops; }});
    const Floats2d X = c.f2("X");
    model.initialize(X);
    CHECK(saw_sample);
    model.layer().set_param("W", c.param("W"));
    model.layer().set_param("b", c.param("b"));
    check_close(c, "P", model.predict(X));
    auto [Y, backprop] = model.begin_update(X);
    check_close(c, "Y", Y);
    check_close(c, "dX", backprop(c.f2("dY")));
    check_close(c, "dW", model.layer().get_grad("W"));
    check_close(c, "db", model.layer().get_grad("b"));
    const auto& calls = c.get("calls").values;
    CHECK(inits == calls[0]);
    CHECK(forwards == calls[1]);
    CHECK(backprops == calls[2]);
    CHECK(saw_train);
    CHECK(model.name() == "linear");
}

TEST_CASE("with_debug: gradients, names, no callbacks", "[transfers2][with_debug][gradcheck]") {
    auto model = with_debug(Relu<3>() >> Linear<2>(), {.name = std::string("debugged")});
    CHECK(model.name() == "debugged");
    model.initialize(testing::random_array(4, 5, 30));
    testing::randomize_params(model, 31);
    testing::require_gradients(model, testing::random_array(4, 5, 32));
    CHECK(model.walk().size() == model.layer().walk().size() + 1);
    // Over a non-array layer.
    std::size_t seen = 0;
    auto s = with_debug(strings2arrays(), {.on_forward = [&](const auto&, const std::vector<Strings>& X, bool) {
                                               seen = X.size();
                                           }});
    (void)s.predict(words);
    CHECK(seen == 3);
}
