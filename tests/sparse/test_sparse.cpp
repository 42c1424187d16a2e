// SparseFeatures, SparseLinear and StaticVectors: Thinc's values (tests/sparse/gen_thinc_sparse.py:
// outputs, the weights' gradients), the finite-difference gradient check, and the edge cases
// (empty batches, rows of no features, wrong shapes, tables, files).
#include <catch2/catch.hpp>

#include <tenon/tenon.hpp>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "oracle/case.hpp"
#include "support/error_id.hpp"
#include "support/floats.hpp"
#include "support/gradcheck_any.hpp"
#include "unit/helpers.hpp"

using namespace tenon;
using namespace tenon::oracle;
using tenon::test::error_id;
using tenon::test::error_message;

template <class M, class In, class Out>
constexpr bool sig = std::is_same_v<typename M::In, In> && std::is_same_v<typename M::Out, Out>;
static_assert(sig<SparseLinear<4>, SparseFeatures, Floats2d>);
static_assert(sig<StaticVectors<8>, Ints2d, Floats2d>);
static_assert(sig<StaticVectors<8, dyn, Keys1d>, Keys1d, Floats2d>);
static_assert(std::is_same_v<check::name_t<SparseFeatures>, check::SparseFeatures>);

namespace {

// uint64 values stored as four 16-bit pieces each (the generator's pieces16).
Keys1d read_keys(const Case& c, const std::string& key) {
    const auto& s = c.get(key);
    const std::size_t n = s.shape.at(0);
    Keys1d k({n}, uninitialized);
    for (std::size_t i = 0; i < n; ++i) {
        std::uint64_t v = 0;
        for (std::size_t p = 0; p < 4; ++p) v |= static_cast<std::uint64_t>(s.values[i * 4 + p]) << (16 * p);
        k[i] = v;
    }
    return k;
}
std::uint32_t read_u32(const Case& c, const std::string& key, std::size_t i) {
    const auto& s = c.get(key);
    return static_cast<std::uint32_t>(s.values[i * 2]) | static_cast<std::uint32_t>(s.values[i * 2 + 1]) << 16;
}
SparseFeatures read_sparse(const Case& c) {
    return SparseFeatures(read_keys(c, "keys16"), read_array<Floats1d>(c, "values"), read_array<Ints1d>(c, "lengths"));
}
std::size_t scalar_size(const Case& c, const std::string& key) {
    return static_cast<std::size_t>(std::lround(c.scalar(key)));
}

void run_sparselinear_case(const std::string& name, bool v1) {
    Case c(name);
    INFO("case " << name);
    const SparseFeatures X = read_sparse(c);
    SparseLinearOptions o{.nO = scalar_size(c, "nO"), .length = scalar_size(c, "length"), .v1_indexing = v1};
    SparseLinear<> m(o);
    m.initialize();
    m.set_param("W", c.param("W"));
    m.set_param("b", c.param("b"));
    check_close(c, "Ypred", m.predict(X));
    auto [Y, backprop] = m.begin_update(X);
    check_close(c, "Y", Y);
    const SparseFeatures dX = backprop(c.f2("dY"));
    CHECK(dX.features() == X.features());
    check_close(c, "d.W", m.get_grad("W"));
    check_close(c, "d.b", m.get_grad("b"));
}

SparseFeatures random_sparse(std::vector<std::int32_t> lengths, std::uint64_t seed) {
    Rng rng(seed);
    std::size_t n = 0;
    for (auto l : lengths) n += static_cast<std::size_t>(l);
    Keys1d keys({n}, uninitialized);
    Floats1d values({n}, uninitialized);
    for (std::size_t i = 0; i < n; ++i) {
        keys[i] = rng.next() % 1000;
        values[i] = static_cast<float>(rng.uniform(-1.5, 1.5));
    }
    Ints1d lens({lengths.size()}, uninitialized);
    for (std::size_t i = 0; i < lengths.size(); ++i) lens[i] = lengths[i];
    return SparseFeatures(std::move(keys), std::move(values), std::move(lens));
}

Floats2d table(std::size_t nV, std::size_t nM, std::uint64_t seed) { return testing::random_array(nV, nM, seed); }

}  // namespace

// ---------------------------------------------------------------------------------------
// Thinc's values
// ---------------------------------------------------------------------------------------
TEST_CASE("murmurhash3_x86_32_uint64 is Thinc's (the murmurhash package's 8-byte hash)", "[sparse][oracle]") {
    Case c("murmur32");
    const Keys1d keys = read_keys(c, "keys16");
    for (std::size_t i = 0; i < keys.size(); ++i) {
        INFO("key " << keys[i]);
        CHECK(murmurhash3_x86_32_uint64(keys[i], 0) == read_u32(c, "hash0", i));
        CHECK(murmurhash3_x86_32_uint64(keys[i], 1) == read_u32(c, "hash1", i));
        // The same function as the byte hash of strings2arrays, on the key's little-endian bytes.
        unsigned char bytes[8];
        for (int b = 0; b < 8; ++b) bytes[b] = static_cast<unsigned char>(keys[i] >> (8 * b));
        CHECK(murmurhash3_x86_32(bytes, 8, 7) == murmurhash3_x86_32_uint64(keys[i], 7));
    }
    static_assert(murmurhash3_x86_32_uint64(0, 0) == murmurhash3_x86_32_uint64(0, 0));  // constexpr
}

TEST_CASE("SparseLinear agrees with Thinc (v2 and v1 indexing)", "[sparse][sparselinear][oracle]") {
    run_sparselinear_case("sparselinear_v2", false);
    run_sparselinear_case("sparselinear_v2_big", false);
    run_sparselinear_case("sparselinear_v1", true);
    run_sparselinear_case("sparselinear_zero_rows", false);
}

TEST_CASE("StaticVectors agrees with numpy and Thinc's gemm (ids >= nV read row 0)", "[sparse][staticvectors][oracle]") {
    {
        Case c("staticvectors_ints2d");
        const Ints2d X = read_array<Ints2d>(c, "X");
        StaticVectors<5> m(read_array<Floats2d>(c, "V"), {.column = 1});
        m.initialize();
        m.set_param("W", c.param("W"));
        check_close(c, "Y", m.predict(X));
        auto [Y, backprop] = m.begin_update(X);
        check_close(c, "Y", Y);
        const Ints2d dX = backprop(c.f2("dY"));
        CHECK(dX.shape() == X.shape());
        check_close(c, "d.W", m.get_grad("W"));
    }
    {
        Case c("staticvectors_ints1d");
        const Ints1d X = read_array<Ints1d>(c, "X");
        StaticVectors<3, 7, Ints1d> m(read_array<Floats2d>(c, "V"));
        m.initialize();
        m.set_param("W", c.param("W"));
        auto [Y, backprop] = m.begin_update(X);
        check_close(c, "Y", Y);
        backprop(c.f2("dY"));
        check_close(c, "d.W", m.get_grad("W"));
        // Keys1d ids: the same rows.
        Keys1d K({X.size()}, uninitialized);
        for (std::size_t i = 0; i < X.size(); ++i) K[i] = static_cast<std::uint64_t>(X[i]);
        StaticVectors<3, dyn, Keys1d> k(m.vectors());
        k.initialize();
        k.set_param("W", c.param("W"));
        check_close(c, "Y", k.predict(K));
    }
}

// ---------------------------------------------------------------------------------------
// Gradient checks
// ---------------------------------------------------------------------------------------
TEST_CASE("gradient check: SparseLinear (W, b and the values), StaticVectors (W)", "[sparse][gradcheck]") {
    const SparseFeatures X = random_sparse({3, 0, 4, 1, 2}, 5);
    {
        SparseLinear<3> m({.length = 16});
        m.initialize();
        testing::randomize_params(m, 1);
        testing::require_gradients(m, X);
    }
    {
        auto m = SparseLinear_v1<2>({.length = 8});
        m.initialize();
        testing::randomize_params(m, 2);
        testing::require_gradients(m, X);
    }
    const Ints2d ids({6, 2}, {0, 3, 1, 5, 2, 30, 3, 9, 4, 0, 5, 2});
    {
        StaticVectors<4> m(table(10, 3, 3), {.column = 1});
        m.initialize();
        testing::require_gradients(m, ids);
    }
    {
        StaticVectors<4> m(table(10, 3, 4), {.column = 1, .dropout = 0.5});  // the same mask for the seed
        m.initialize();
        testing::require_gradients(m, ids);
    }
}

// ---------------------------------------------------------------------------------------
// SparseFeatures
// ---------------------------------------------------------------------------------------
TEST_CASE("SparseFeatures: checked when made; made from documents", "[sparse][errors]") {
    CHECK(error_id([] { SparseFeatures(Keys1d({3}), Floats1d({2}), Ints1d({1}, {3})); }) == "tenon-E275");
    CHECK(error_id([] { SparseFeatures(Keys1d({3}), Floats1d({3}), Ints1d({2}, {1, 1})); }) == "tenon-E275");
    CHECK(error_id([] { SparseFeatures(Keys1d({1}), Floats1d({1}), Ints1d({2}, {2, -1})); }) == "tenon-E275");
    CHECK_THAT(error_message([] { SparseFeatures(Keys1d({3}), Floats1d({3}), Ints1d({1}, {2})); }),
               Catch::Contains("sum to 2") && Catch::Contains("expected 3"));
    CHECK(error_id([] { SparseFeatures(Keys1d({0}), Floats1d({0}), Ints1d({0})); }) == "no error");

    const SparseFeatures s = sparse_features({{5, 7, 5}, {}, {1ull << 63}});
    REQUIRE(s.size() == 3);
    CHECK(s.features() == 4);
    CHECK(s.lengths()[1] == 0);
    CHECK(s.keys()[3] == (1ull << 63));
    CHECK(s.values()[0] == 1.0f);
    List<Ints2d> docs;
    docs.push_back(Ints2d({2, 2}, {1, -1, 2, 3}));
    docs.push_back(Ints2d({0, 2}));
    const SparseFeatures t = sparse_features(docs, 1);
    REQUIRE(t.size() == 2);
    CHECK(t.keys()[0] == ~std::uint64_t{0});  // -1 widened as numpy does
    CHECK(t.keys()[1] == 3);
    CHECK(error_id([&] { sparse_features(docs, 2); }) == "tenon-E275");
    List<Keys2d> kdocs;
    kdocs.push_back(Keys2d({1, 1}, {42}));
    CHECK(sparse_features(kdocs).keys()[0] == 42);
}

// ---------------------------------------------------------------------------------------
// SparseLinear
// ---------------------------------------------------------------------------------------
TEST_CASE("SparseLinear: dims, zeros, empty batches, gradients only where the features are", "[sparse][sparselinear]") {
    SparseLinear<4> m;
    m.initialize();
    CHECK(m.get_dim("length") == (1u << 18));
    CHECK(m.get_param("W").size() == 4u << 18);
    for (float w : m.get_param("W")) REQUIRE(w == 0.0f);
    CHECK(m.name() == "sparse_linear");
    CHECK(!m.v1_indexing());

    // An empty batch and rows of no features (Thinc's backprop fails on an empty batch).
    const SparseFeatures none(Keys1d({0}), Floats1d({0}), Ints1d({0}));
    auto [Y0, bp0] = m.begin_update(none);
    CHECK(Y0.shape() == std::array<std::size_t, 2>{0, 4});
    CHECK(bp0(Floats2d({0, 4})).size() == 0);
    testing::randomize_params(m, 3);
    const SparseFeatures blank(Keys1d({0}), Floats1d({0}), Ints1d({2}, {0, 0}));
    const Floats2d Yb = m.predict(blank);
    for (std::size_t r = 0; r < 2; ++r)
        for (std::size_t c = 0; c < 4; ++c) CHECK(Yb(r, c) == m.get_param("b").data[c]);

    // Backprop touches the two weights of each feature per class, nothing else.
    SparseLinear<2> s({.length = 1000});
    s.initialize();
    const SparseFeatures X = sparse_features({{11, 12}, {13}});
    auto [Y, bp] = s.begin_update(X);
    bp(Floats2d({2, 2}, {1, 1, 1, 1}));
    std::size_t touched = 0;
    for (float g : s.get_grad("W")) touched += g != 0.0f;
    CHECK(touched > 0);
    CHECK(touched <= 3 * 2 * 2);

    // The gradient of dY's shape is checked.
    auto [Y2, bp2] = s.begin_update(X);
    CHECK(error_id([&] { bp2(Floats2d({2, 3})); }) == "tenon-E111");
    CHECK_THAT(error_message([&] { bp2(Floats2d({3, 2})); }), Catch::Contains("sparse_linear"));

    CHECK(error_id([] { SparseLinear<2>({.length = 0}); }) == "tenon-E276");
    CHECK(error_id([] { SparseLinear<2>({.length = (std::size_t{1} << 32) + 1}); }) == "tenon-E276");
    CHECK(error_id([] { SparseLinear<>().initialize(); }) != "no error");  // nO unknown

    // nO from Y.
    SparseLinear<> d({.length = 64});
    d.initialize(X, Floats2d({2, 5}));
    CHECK(d.get_dim("nO") == 5);
    CHECK(d.predict(X).shape(1) == 5);
}

TEST_CASE("SparseLinear: v1 indexing uses only the first length + nO - 1 weights (Thinc's defect)", "[sparse][sparselinear]") {
    auto m = SparseLinear_v1<3>({.length = 64});
    m.initialize();
    CHECK(m.v1_indexing());
    const SparseFeatures X = random_sparse({20, 30}, 9);
    auto [Y, bp] = m.begin_update(X);
    bp(testing::random_array(2, 3, 1));
    const auto g = m.get_grad("W");
    for (std::size_t i = 64 + 3 - 1; i < g.size(); ++i) REQUIRE(g.data[i] == 0.0f);
    // v1 and v2 are other architectures: a file of one does not load into the other.
    SparseLinear<3> v2({.length = 64});
    CHECK(error_id([&] { v2.from_bytes(m.to_bytes()); }) == "tenon-E207");
}

TEST_CASE("SparseLinear: files, copies, threads, a text classifier that learns", "[sparse][sparselinear]") {
    SparseLinear<3> m({.length = 128});
    m.initialize();
    testing::randomize_params(m, 4);
    const SparseFeatures X = random_sparse({5, 2, 7}, 10);
    const Floats2d Y = m.predict(X);
    SparseLinear<3> n({.length = 128});
    n.from_bytes(m.to_bytes());
    const Floats2d Yn = n.predict(X);
    for (std::size_t i = 0; i < Y.size(); ++i) CHECK(Yn[i] == Y[i]);
    SparseLinear<3> other({.length = 64});
    CHECK(error_id([&] { other.from_bytes(m.to_bytes()); }) != "no error");
    AnyModel<SparseFeatures, Floats2d> any(m);
    CHECK(any.predict(X)[4] == Y[4]);

    // TextCatBOW's shape: SparseLinear >> Softmax activation... here a sigmoid; learn two classes
    // from two disjoint vocabularies.
    auto model = SparseLinear<1>({.length = 1 << 10}) >> sigmoid_activation();
    model.initialize();
    const SparseFeatures docs = sparse_features({{1, 2, 3}, {7, 8}, {2, 3}, {8, 9, 7}});
    const Floats2d truth({4, 1}, {1, 0, 1, 0});
    Optimizer opt = Adam(0.1);
    for (int step = 0; step < 30; ++step) {
        auto [P, backprop] = model.begin_update(docs);
        Floats2d d = P;
        for (std::size_t i = 0; i < d.size(); ++i) d[i] -= truth[i];
        backprop(d);
        model.finish_update(opt);
    }
    const Floats2d P = model.predict(docs);
    CHECK(P[0] > 0.9f);
    CHECK(P[1] < 0.1f);
    CHECK(P[2] > 0.9f);
    CHECK(P[3] < 0.1f);
}

// ---------------------------------------------------------------------------------------
// StaticVectors
// ---------------------------------------------------------------------------------------
TEST_CASE("StaticVectors: a shared read-only table, never trained, not in the file", "[sparse][staticvectors]") {
    auto V = std::make_shared<const Floats2d>(table(20, 6, 1));
    StaticVectors<4> a(V), b(V);
    CHECK(V.use_count() == 3);  // shared, not copied
    a.initialize();
    CHECK(a.get_dim("nM") == 6);
    CHECK(a.param_names() == std::vector<std::string>{"W"});
    const Ints2d X({3, 1}, {2, 19, 25});
    const Floats2d Y = a.predict(X);
    REQUIRE(Y.shape() == std::array<std::size_t, 2>{3, 4});
    auto [Y1, bp] = a.begin_update(X);
    bp(testing::random_array(3, 4, 2));
    Optimizer opt = Adam(0.01);
    const Floats2d before = *V;
    a.finish_update(opt);
    for (std::size_t i = 0; i < V->size(); ++i) REQUIRE((*V)[i] == before[i]);  // never trained

    // The file holds W and the dims, not the table: load, then set the table again.
    const auto bytes = a.to_bytes();
    CHECK(bytes.size() < 20 * 6 * 4);
    StaticVectors<4> loaded;
    loaded.from_bytes(bytes);
    CHECK(error_id([&] { loaded.predict(X); }) == "tenon-E278");
    loaded.set_vectors(V);
    const Floats2d Yl = loaded.predict(X);
    const Floats2d Ya = a.predict(X);
    for (std::size_t i = 0; i < Ya.size(); ++i) CHECK(Yl[i] == Ya[i]);
    // A table of another width than the file's nM.
    StaticVectors<4> other;
    other.from_bytes(bytes);
    CHECK(error_id([&] { other.set_vectors(std::make_shared<const Floats2d>(table(5, 7, 2))); }) == "tenon-E279");
    // A copy shares the table.
    StaticVectors<4> c = a;
    CHECK(c.vectors() == a.vectors());
    // Through an AnyModel and in a chain.
    AnyModel<Ints2d, Floats2d> any(a);
    CHECK(any.predict(X)[5] == Ya[5]);
    auto chain_model = StaticVectors<4>(V) >> Relu<3>();
    chain_model.initialize(X);
    CHECK(chain_model.predict(X).shape(1) == 3);
}

TEST_CASE("StaticVectors: errors and edge cases", "[sparse][staticvectors][errors]") {
    StaticVectors<4> none;
    CHECK(error_id([&] { none.initialize(); }) == "tenon-E278");
    CHECK_THAT(error_message([&] { none.initialize(); }), Catch::Contains("vectors unset"));
    CHECK(error_id([] { StaticVectors<4, 5>(table(3, 6, 1)); }) == "tenon-E279");
    CHECK(error_id([] { StaticVectors<4>(Floats2d({0, 3})); }) == "tenon-E281");
    CHECK(error_id([] { StaticVectors<4>(std::shared_ptr<const Floats2d>{}).set_vectors(nullptr); }) == "tenon-E278");
    CHECK(error_id([] { StaticVectors<4, dyn, Ints1d>(table(3, 2, 1), {.column = 1}); }) == "tenon-E194");
    CHECK(error_id([] { StaticVectors<4>(table(3, 2, 1), {.dropout = 2.0}); }) == "tenon-E195");

    StaticVectors<4> m(table(10, 3, 1), {.column = 1});
    m.initialize();
    CHECK(error_id([&] { m.predict(Ints2d({2, 2}, {0, 1, 0, -3})); }) == "tenon-E280");
    CHECK_THAT(error_message([&] { m.predict(Ints2d({2, 2}, {0, 1, 0, -3})); }),
               Catch::Contains("-3") && Catch::Contains("row 1"));
    CHECK(error_id([&] { m.predict(Ints2d({2, 1}, {0, 1})); }) == "tenon-E194");
    // An empty batch.
    auto [Y, bp] = m.begin_update(Ints2d({0, 2}));
    CHECK(Y.shape() == std::array<std::size_t, 2>{0, 4});
    CHECK(bp(Floats2d({0, 4})).shape() == std::array<std::size_t, 2>{0, 2});
    auto [Y2, bp2] = m.begin_update(Ints2d({2, 2}));
    CHECK(error_id([&] { bp2(Floats2d({2, 3})); }) == "tenon-E111");

    // nO from Y; a dyn nO with nothing to give it.
    StaticVectors<> d(table(10, 3, 2));
    d.initialize(Ints2d({2, 1}), Floats2d({2, 7}));
    CHECK(d.get_dim("nO") == 7);
    CHECK(error_id([] { StaticVectors<>(table(10, 3, 2)).initialize(); }) != "no error");
}

TEST_CASE("StaticVectors: dropout is one mask over the output columns for the whole batch", "[sparse][staticvectors]") {
    StaticVectors<16> m(table(10, 3, 1), {.dropout = 0.5});
    m.initialize();
    testing::randomize_params(m, 3);
    const Ints2d X({4, 1}, {1, 2, 3, 4});
    const Floats2d P = m.predict(X);  // no dropout
    fix_random_seed(3);
    auto [Y, bp] = m.begin_update(X);
    std::size_t dropped = 0;
    for (std::size_t c = 0; c < 16; ++c) {
        const bool zero = Y(0, c) == 0.0f;
        dropped += zero;
        for (std::size_t r = 0; r < 4; ++r) {
            if (zero) CHECK(Y(r, c) == 0.0f);
            else CHECK(std::abs(Y(r, c) - 2.0f * P(r, c)) < 1e-5f);
        }
    }
    CHECK(dropped > 0);
    CHECK(dropped < 16);
}

TEST_CASE("load_vectors: .npy and text tables; unreadable files are named", "[sparse][staticvectors]") {
    const std::string dir = std::string(TENON_ORACLE_DIR);
    {
        const std::string path = dir + "/vectors_test.txt";
        std::ofstream(path) << "1 2 3\n\n4 5 6.5\n";
        const auto V = load_vectors(path);
        REQUIRE(V->shape() == std::array<std::size_t, 2>{2, 3});
        CHECK((*V)(1, 2) == 6.5f);
        std::ofstream(path) << "1 2 3\n4 5\n";
        CHECK_THAT(error_message([&] { load_vectors(path); }), Catch::Contains("tenon-E283") && Catch::Contains("line 2"));
        std::ofstream(path) << "1 x 3\n";
        CHECK(error_id([&] { load_vectors(path); }) == "tenon-E283");
        std::remove(path.c_str());
        CHECK_THAT(error_message([&] { load_vectors(dir); }), Catch::Contains("tenon-E283") && Catch::Contains("a directory"));
    }
    {
        // A float32 .npy written by hand (format 1.0), and a float64 one.
        auto write_npy = [&](const std::string& path, const std::string& descr, const std::vector<double>& v) {
            std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (2, 2), }";
            while ((10 + header.size() + 1) % 64) header += ' ';
            header += '\n';
            std::ofstream f(path, std::ios::binary);
            f.write("\x93NUMPY\x01\x00", 8);
            const char len[2] = {static_cast<char>(header.size() & 0xFF), static_cast<char>(header.size() >> 8)};
            f.write(len, 2);
            f << header;
            for (double x : v) {
                if (descr == "<f4") {
                    const float y = static_cast<float>(x);
                    f.write(reinterpret_cast<const char*>(&y), 4);
                } else {
                    f.write(reinterpret_cast<const char*>(&x), 8);
                }
            }
        };
        const std::string path = dir + "/vectors_test.npy";
        write_npy(path, "<f4", {1, 2, 3, 4});
        auto V = load_vectors(path);
        REQUIRE(V->shape() == std::array<std::size_t, 2>{2, 2});
        CHECK((*V)(1, 0) == 3.0f);
        write_npy(path, "<f8", {1, 2, 3, 4.5});
        V = load_vectors(path);
        CHECK((*V)(1, 1) == 4.5f);
        write_npy(path, "<i4", {1, 2, 3, 4});
        CHECK_THAT(error_message([&] { load_vectors(path); }), Catch::Contains("tenon-E283") && Catch::Contains("dtype"));
        std::remove(path.c_str());
    }
    CHECK(error_id([&] { load_vectors(dir + "/no_such_file.npy"); }) == "tenon-E283");
}

TEST_CASE("SparseLinear: every width of the backend's passes gives the naive sums", "[sparse][sparselinear]") {
    const SparseFeatures X = random_sparse({4, 0, 6, 3}, 21);
    for (std::size_t nO : {1u, 4u, 8u, 9u, 16u, 20u}) {
        for (bool v1 : {false, true}) {
            INFO("nO " << nO << (v1 ? " v1" : " v2"));
            const std::size_t length = 32;
            SparseLinear<> m({.nO = nO, .length = length, .v1_indexing = v1});
            m.initialize();
            testing::randomize_params(m, nO);
            const auto W = m.get_param("W");
            const auto b = m.get_param("b");
            auto at = [&](std::uint64_t key, std::uint32_t seed, std::size_t c) {
                const std::uint32_t h = murmurhash3_x86_32_uint64(key, seed);
                return v1 ? (h & (length - 1)) + c : c * length + h % length;
            };
            const Floats2d dY = testing::random_array(X.size(), nO, 5);
            Floats2d want({X.size(), nO});
            std::vector<double> dW(W.size(), 0.0);
            std::size_t f = 0;
            for (std::size_t r = 0; r < X.size(); ++r)
                for (std::int32_t i = 0; i < X.lengths()[r]; ++i, ++f)
                    for (std::uint32_t s = 0; s < 2; ++s)
                        for (std::size_t c = 0; c < nO; ++c) {
                            want(r, c) += W.data[at(X.keys()[f], s, c)] * X.values()[f];
                            dW[at(X.keys()[f], s, c)] += double(dY(r, c)) * X.values()[f];
                        }
            for (std::size_t r = 0; r < X.size(); ++r)
                for (std::size_t c = 0; c < nO; ++c) want(r, c) += b.data[c];
            auto [Y, bp] = m.begin_update(X);
            for (std::size_t i = 0; i < Y.size(); ++i) CHECK(std::abs(Y[i] - want[i]) < 1e-4f);
            bp(dY);
            const auto g = m.get_grad("W");
            for (std::size_t i = 0; i < g.size(); ++i) CHECK(std::abs(g.data[i] - dW[i]) < 1e-4);
        }
    }
}

TEST_CASE("StaticVectors and SparseLinear: predict on several threads, one table shared", "[sparse][threads]") {
    auto V = std::make_shared<const Floats2d>(table(100, 8, 7));
    StaticVectors<6> a(V), b(V);
    a.initialize();
    b.initialize();
    SparseLinear<3> s({.length = 256});
    s.initialize();
    testing::randomize_params(s, 8);
    Ints2d X({50, 1});
    for (std::size_t i = 0; i < 50; ++i) X[i] = static_cast<std::int32_t>(i * 3);
    const SparseFeatures F = random_sparse({10, 20, 0, 5}, 3);
    const Floats2d Ya = a.predict(X), Yb = b.predict(X), Ys = s.predict(F);
    std::vector<int> ok(4, 1);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
        threads.emplace_back([&, t] {
            for (int k = 0; k < 50; ++k) {
                const Floats2d y = (t % 2 ? b : a).predict(X);
                const Floats2d& want = t % 2 ? Yb : Ya;
                for (std::size_t i = 0; i < y.size(); ++i) ok[std::size_t(t)] &= y[i] == want[i];
                const Floats2d z = s.predict(F);
                for (std::size_t i = 0; i < z.size(); ++i) ok[std::size_t(t)] &= z[i] == Ys[i];
            }
        });
    for (auto& th : threads) th.join();
    for (int v : ok) CHECK(v == 1);
}
