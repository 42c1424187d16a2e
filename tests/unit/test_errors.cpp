// Bad input gets clear errors: a tenon::Error whose message names the layer and the expected
// and found values, with a diagnostic id. Empty batches are not errors.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <utility>
#include <limits>
#include <optional>
#include <vector>

#include "tenon/lower/lower.hpp"
#include "tenon/tenon.hpp"
#include "unit/helpers.hpp"
#include "support/error_id.hpp"

using namespace tenon;
using Catch::Matchers::Contains;

namespace {
using testing::random_array;

// The id of the tenon::Error f throws, or a note that it threw none / something else.
using tenon::test::error_id;
using tenon::test::error_message;

using PredictFn = std::function<Floats2d(Floats2dCView)>;
using BackpropFn = std::function<Floats2d(Floats2dCView)>;
using UpdateFn = std::function<std::pair<Floats2d, BackpropFn>(Floats2dCView)>;
using Body = std::function<void(Node&, PredictFn, UpdateFn)>;

// A case of the per-layer table: the layer, its input width and its output width.
struct LayerCase {
    const char* name;      // what the messages about the input must name
    const char* out_name;  // what the messages about dY must name (the last layer of a chain)
    std::size_t nI, nO;    // widths after initialize
    bool checks_width;   // false for the layers that take any width
    std::function<void(const Body&)> with;
};

// Type erasure for the table: initialises a model on X (rows, nI) and hands out its predict and
// begin_update (with the backprop as a std::function).
template <class M>
auto erase(M model, std::size_t nI) {
    return [model, nI](const Body& body) {
        M m = model;
        m.initialize(random_array(3, nI, 1));
        body(
            m, [&m](Floats2dCView X) { return m.predict(X); },
            [&m](Floats2dCView X) {
                auto [Y, bp] = m.begin_update(X);
                return std::pair<Floats2d, BackpropFn>(std::move(Y),
                                                       [bp = std::move(bp)](Floats2dCView dY) { return bp(dY); });
            });
    };
}

std::vector<LayerCase> layer_cases() {
    return {
        {"linear", "linear", 5, 3, true, erase(Linear<3>(), 5)},
        {"relu", "relu", 5, 4, true, erase(Relu<4>(), 5)},
        {"relu", "relu", 5, 4, true, erase(Relu<4>({.dropout = 0.5, .normalize = true}), 5)},
        {"sigmoid", "sigmoid", 5, 3, true, erase(Sigmoid<3>(), 5)},
        {"softmax", "softmax", 5, 3, true, erase(Softmax<3>(), 5)},
        {"mish", "mish", 5, 4, true, erase(Mish<4>({.normalize = true}), 5)},
        {"gelu", "gelu", 5, 4, true, erase(Gelu<4>({.dropout = 0.2}), 5)},
        {"swish", "swish", 5, 4, true, erase(Swish<4>({.normalize = true}), 5)},
        {"hardswish", "hardswish", 5, 4, true, erase(HardSwish<4>(), 5)},
        {"maxout", "maxout", 5, 4, true, erase(Maxout<4>(), 5)},
        {"maxout", "maxout", 5, 4, true, erase(Maxout<4>({.dropout = 0.2, .normalize = true}), 5)},
        {"layernorm", "layernorm", 5, 5, true, erase(LayerNorm<>(), 5)},
        {"sigmoid_activation", "sigmoid_activation", 5, 5, false, erase(sigmoid_activation(), 5)},
        {"dropout", "dropout", 5, 5, false, erase(Dropout(0.5), 5)},
        {"dropout", "dropout", 5, 5, false, erase(Dropout(0.0), 5)},
        {"relu", "linear", 5, 2, true, erase(Relu<4>() >> Maxout<3>() >> Linear<2>(), 5)},
        {"relu", "relu", 5, 4, true, erase(clone(Relu<4>(), 3), 5)},
    };
}
}  // namespace

TEST_CASE("errors: wrong input width at predict and begin_update", "[errors]") {
    const auto cases = layer_cases();
    for (std::size_t i = 0; i < cases.size(); ++i) {  // (section names must be unique: the index)
        const auto& c = cases[i];
        if (!c.checks_width) continue;
        DYNAMIC_SECTION(i << ": " << c.name << " nI=" << c.nI) {
            c.with([&](Node&, auto predict, auto begin_update) {
                const Floats2d bad = random_array(4, c.nI + 2, 2);
                // (Catch's combined matchers hold pointers to their parts: build them in place.)
                const std::string want = "expected width " + std::to_string(c.nI);
                const std::string found = "found " + std::to_string(c.nI + 2);
                CHECK_THROWS_AS(predict(bad), ShapeError);
                CHECK_THROWS_WITH(predict(bad), Contains(c.name) && Contains(want) && Contains(found));
                CHECK_THROWS_WITH(begin_update(bad), Contains(c.name) && Contains(want) && Contains(found));
                CHECK(error_id([&] { predict(bad); }) == "tenon-E101");
                const Floats2d narrow = random_array(4, c.nI - 1, 3);
                CHECK_THROWS_WITH(predict(narrow), Contains("found " + std::to_string(c.nI - 1)));
                // The right width still works after the errors.
                CHECK(predict(random_array(4, c.nI, 4)).shape(1) == c.nO);
            });
        }
    }
    // A static nI is checked the same way.
    auto relu = Relu<4, 3>();
    relu.initialize();
    CHECK_THROWS_WITH(relu.predict(random_array(2, 7, 1)),
                      Contains("relu") && Contains("expected width 3") && Contains("found 7"));
    auto [Y, bp] = relu.begin_update(random_array(2, 3, 1));
    CHECK(Y.shape(1) == 4);
}

TEST_CASE("errors: predict before initialize", "[errors]") {
    auto relu = Relu<4>();
    const Floats2d X = random_array(2, 3, 1);
    CHECK_THROWS_AS(relu.predict(X), Error);
    CHECK_THROWS_WITH(relu.predict(X), Contains("relu") && Contains("not initialized") && Contains("initialize()"));
    CHECK_THROWS_WITH(relu.begin_update(X), Contains("relu") && Contains("not initialized"));
    CHECK(error_id([&] { relu.predict(X); }) == "tenon-E110");

    auto model = Relu<4>() >> Softmax<2>();
    CHECK_THROWS_WITH(model.predict(X), Contains("relu>>softmax") && Contains("not initialized"));
    CHECK_THROWS_WITH(model(X, false), Contains("not initialized"));

    auto ln = LayerNorm<>();
    CHECK_THROWS_WITH(ln.predict(X), Contains("layernorm") && Contains("not initialized"));
    auto mx = Maxout<3>();
    CHECK_THROWS_WITH(mx.begin_update(X), Contains("maxout") && Contains("not initialized"));
    auto cl = clone(Relu<3>(), 2);
    CHECK_THROWS_WITH(cl.predict(X), Contains("clone") && Contains("not initialized"));
}

TEST_CASE("errors: X and Y of different batch sizes at initialize", "[errors]") {
    const Floats2d X = random_array(5, 3, 1);
    const Floats2d Y = random_array(4, 2, 2, 0, 1);
    auto model = Relu<8>() >> Softmax<>();
    CHECK_THROWS_AS(model.initialize(X, Y), ShapeError);
    CHECK_THROWS_WITH(model.initialize(X, Y), Contains("relu>>softmax") && Contains("expected 5 rows") &&
                                                  Contains("found 4"));
    CHECK(error_id([&] { model.initialize(X, Y); }) == "tenon-E115");
    CHECK_FALSE(model.layer<0>().has_param("W"));  // nothing was initialised

    auto sm = Softmax<>();
    CHECK_THROWS_WITH(sm.initialize(X, Y), Contains("softmax") && Contains("expected 5 rows") && Contains("found 4"));
    auto ln = LayerNorm<>();
    CHECK_THROWS_AS(ln.initialize(X, random_array(6, 3, 3)), ShapeError);

    // Equal batch sizes are fine.
    CHECK_NOTHROW(model.initialize(X, random_array(5, 2, 3, 0, 1)));
    CHECK(model.get_dim("nO") == 2);
}

TEST_CASE("errors: Y of the wrong width for the model's output", "[errors]") {
    const Floats2d X = random_array(5, 3, 1);
    const Floats2d Y5 = random_array(5, 5, 2, 0, 1);
    auto sm = Softmax<10>();
    CHECK_THROWS_AS(sm.initialize(X, Y5), ShapeError);
    CHECK_THROWS_WITH(sm.initialize(X, Y5), Contains("softmax") && Contains("expected width 10") && Contains("found 5"));

    auto model = Relu<8>() >> Softmax<10>();
    CHECK_THROWS_WITH(model.initialize(X, Y5),
                      Contains("softmax") && Contains("expected width 10") && Contains("found 5"));

    // A dyn width, once inferred, is held to as well.
    auto sd = Softmax<>();
    sd.initialize(X, random_array(5, 4, 3, 0, 1));
    CHECK_THROWS_WITH(sd.initialize(X, Y5), Contains("softmax") && Contains("expected width 4") && Contains("found 5"));
    CHECK(sd.get_dim("nO") == 4);

    // nO given as an option, not in the type.
    auto lin = Linear<>({.nO = 2});
    CHECK_THROWS_WITH(lin.initialize(X, Y5), Contains("linear") && Contains("expected width 2") && Contains("found 5"));
    auto mx = Maxout<3>();
    CHECK_THROWS_WITH(mx.initialize(X, Y5), Contains("maxout") && Contains("expected width 3") && Contains("found 5"));
}

TEST_CASE("errors: backprop with a dY of the wrong shape", "[errors]") {
    const auto cases = layer_cases();
    for (std::size_t i = 0; i < cases.size(); ++i) {
        const auto& c = cases[i];
        DYNAMIC_SECTION(i << ": " << c.out_name << " -> " << c.nO) {
            c.with([&](Node&, auto, auto begin_update) {
                auto update = begin_update(random_array(4, c.nI, 2));  // (clang 14 cannot capture bindings)
                const Floats2d& Y = update.first;
                const BackpropFn& bp = update.second;
                REQUIRE(Y.shape() == std::array<std::size_t, 2>{4, c.nO});
                const std::string expected = "(4, " + std::to_string(c.nO) + ")";
                const Floats2d wide = random_array(4, c.nO + 1, 3);
                CHECK_THROWS_AS(bp(wide), ShapeError);
                CHECK_THROWS_WITH(bp(wide), Contains(c.out_name) && Contains(expected) &&
                                                Contains("(4, " + std::to_string(c.nO + 1) + ")") &&
                                                Contains("backprop"));
                CHECK(error_id([&] { bp(wide); }) == "tenon-E111");
                const Floats2d tall = random_array(5, c.nO, 4);
                CHECK_THROWS_WITH(bp(tall), Contains(expected) && Contains("(5, " + std::to_string(c.nO) + ")"));
                // The right shape still works.
                CHECK(bp(random_array(4, c.nO, 5)).shape() == std::array<std::size_t, 2>{4, c.nI});
            });
        }
    }
    // The error names the layer the gradient was given to.
    auto relu = Relu<4>({.dropout = 0.5, .normalize = true});
    relu.initialize(random_array(3, 5, 1));
    auto [Y, bp] = relu.begin_update(random_array(3, 5, 1));
    CHECK_THROWS_WITH(bp(random_array(3, 7, 1)), Contains("relu"));
    auto model = Relu<4>() >> Softmax<3>();
    model.initialize(random_array(3, 5, 1));
    auto [P, mbp] = model.begin_update(random_array(3, 5, 1));
    CHECK_THROWS_WITH(mbp(random_array(3, 4, 1)), Contains("softmax") && Contains("(3, 3)") && Contains("(3, 4)"));
}

TEST_CASE("errors: an empty batch is not an error", "[errors]") {
    const auto cases = layer_cases();
    for (std::size_t i = 0; i < cases.size(); ++i) {
        const auto& c = cases[i];
        DYNAMIC_SECTION(i << ": " << c.name << " with 0 rows") {
            c.with([&](Node& model, auto predict, auto begin_update) {
                const Floats2d X({0, c.nI});
                const Floats2d P = predict(X);
                CHECK(P.shape() == std::array<std::size_t, 2>{0, c.nO});
                auto [Y, bp] = begin_update(X);
                CHECK(Y.shape() == std::array<std::size_t, 2>{0, c.nO});
                const Floats2d dX = bp(Floats2d({0, c.nO}));
                CHECK(dX.shape() == std::array<std::size_t, 2>{0, c.nI});
                for (Node* n : model.walk())  // nothing to add: the gradients stay zero
                    for (const auto& p : n->param_names())
                        if (n->has_param(p))
                            for (float g : n->get_grad(p)) CHECK(g == 0.0f);
            });
        }
    }
    auto noop_layer = noop();
    CHECK(noop_layer.predict(Floats2d({0, 3})).shape(1) == 3);
}

TEST_CASE("errors: Dropout rate outside [0, 1]", "[errors]") {
    for (double bad : {-0.1, 1.5, -1e-9, std::nan("")}) {
        CHECK_THROWS_AS(Dropout(bad), Error);
        CHECK_THROWS_WITH(Dropout(bad), Contains("dropout") && Contains("[0, 1]"));
        CHECK(error_id([&] { Dropout d(bad); }) == "tenon-E112");
        CHECK_THROWS_AS(Relu<3>({.dropout = bad}), Error);
    }
    CHECK_THROWS_WITH(Dropout(1.5), Contains("found 1.5"));
    CHECK_NOTHROW(Dropout(0.0));
    CHECK_NOTHROW(Dropout(1.0));
    // A rate set later is checked when it is used.
    auto d = Dropout(0.5);
    d.set_attr("dropout_rate", 2.0);
    CHECK_THROWS_WITH(d.begin_update(random_array(2, 2, 1)), Contains("dropout") && Contains("found 2"));
}

TEST_CASE("errors: Softmax temperature <= 0", "[errors]") {
    for (double bad : {0.0, -1.0, std::nan("")}) {
        CHECK_THROWS_AS(Softmax<3>({.temperature = bad}), Error);
        CHECK_THROWS_WITH(Softmax<3>({.temperature = bad}), Contains("softmax") && Contains("temperature") &&
                                                                Contains("> 0"));
        CHECK(error_id([&] { Softmax<3> s({.temperature = bad}); }) == "tenon-E113");
    }
    CHECK_NOTHROW(Softmax<3>({.temperature = 0.5}));
    auto sm = Softmax<3>();
    sm.initialize(random_array(2, 4, 1));
    sm.set_attr("softmax_temperature", 0.0);
    CHECK_THROWS_WITH(sm.predict(random_array(2, 4, 1)), Contains("softmax") && Contains("temperature"));
}

TEST_CASE("errors: other invalid arguments", "[errors]") {
    CHECK(error_id([] { Maxout<3, dyn, dyn> m({.nP = 0}); }) == "tenon-E114");
    CHECK(error_id([] {
              OptimizerOptions o;
              o.beta1 = 0.0;
              Optimizer opt(o);
              Floats1d w({2}), g({2});
              opt.update(1, "W", w, g);
          }) == "tenon-E120");
    // The by-name API.
    auto l = Linear<2, 3>();
    CHECK(error_id([&] { l.get_dim("nX"); }) == "tenon-E104");
    CHECK(error_id([&] { l.get_param("W"); }) == "tenon-E107");
    CHECK(error_id([&] { l.get_param("Q"); }) == "tenon-E106");
    CHECK(error_id([&] { l.get_attr("q"); }) == "tenon-E109");
    CHECK(error_id([&] { Linear<> m; m.get_dim("nO"); }) == "tenon-E105");
}

TEST_CASE("errors: Fashion-MNIST from a missing directory", "[errors][data]") {
    const std::string dir = "/nonexistent/tenon-test-dir";
    CHECK_THROWS_AS(load_fashion_mnist(dir), Error);
    CHECK_THROWS_WITH(load_fashion_mnist(dir), Contains("dataset-fashion-mnist") && Contains(dir));
    CHECK(error_id([&] { load_fashion_mnist(dir); }) == "tenon-E140");
}

namespace {
struct TempDir {
    std::filesystem::path path;
    TempDir() {
        path = std::filesystem::temp_directory_path() /
               ("tenon-test-errors-" + std::to_string(reinterpret_cast<std::uintptr_t>(this)) + "-" +
                std::to_string(std::rand()));
        std::filesystem::create_directories(path);
    }
    ~TempDir() {
        std::error_code ec;
        std::filesystem::remove_all(path, ec);
    }
    std::string write(const std::string& name, const std::vector<unsigned char>& bytes) const {
        const auto p = path / name;
        std::ofstream f(p, std::ios::binary);
        f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
        return p.string();
    }
};
}  // namespace

TEST_CASE("errors: IDX files with a bad header", "[errors][data]") {
    TempDir tmp;
    // A valid file first, so that the failures below are about the header alone.
    const std::string good = tmp.write("good-images", {0, 0, 8, 3, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 2,  //
                                                       0, 255, 51, 102});
    const Floats2d X = read_idx_images(good);
    REQUIRE(X.shape() == std::array<std::size_t, 2>{2, 2});
    CHECK(X(0, 1) == 1.0f);
    CHECK(X(1, 0) == Approx(0.2f));
    const std::string good_labels = tmp.write("good-labels", {0, 0, 8, 1, 0, 0, 0, 3, 4, 0, 9});
    const Ints1d y = read_idx_labels(good_labels);
    REQUIRE(y.size() == 3);
    CHECK(y[2] == 9);

    const std::string bad_magic = tmp.write("bad-magic", {1, 2, 8, 3, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 0});
    CHECK_THROWS_AS(read_idx_images(bad_magic), Error);
    CHECK_THROWS_WITH(read_idx_images(bad_magic), Contains(bad_magic) && Contains("not an IDX file"));
    CHECK(error_id([&] { read_idx_images(bad_magic); }) == "tenon-E142");

    const std::string wrong_type = tmp.write("floats", {0, 0, 0x0D, 3, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0});
    CHECK(error_id([&] { read_idx_images(wrong_type); }) == "tenon-E142");
    // Labels are 1-d; images are 3-d.
    CHECK_THROWS_WITH(read_idx_images(good_labels), Contains("3 dims"));
    CHECK_THROWS_WITH(read_idx_labels(good), Contains("1 dims"));
    const std::string truncated_header = tmp.write("short", {0, 0, 8});
    CHECK(error_id([&] { read_idx_labels(truncated_header); }) == "tenon-E142");
    const std::string truncated = tmp.write("truncated", {0, 0, 8, 1, 0, 0, 0, 5, 1, 2});
    CHECK_THROWS_WITH(read_idx_labels(truncated), Contains("expected 5 bytes") && Contains("found 2"));
    CHECK(error_id([&] { read_idx_images(tmp.path.string() + "/missing"); }) == "tenon-E140");
    // A directory is named as one (it used to be "read error (corrupt gzip data?)").
    CHECK_THAT(error_message([&] { read_idx_images(tmp.path.string()); }),
               Contains("tenon-E140") && Contains("it is a directory"));
}

TEST_CASE("errors: an attribute of the wrong type says what it holds (E116)", "[errors]") {
    auto m = Relu<8>({.dropout = 0.2}) >> Softmax<3>();
    m.initialize(Floats2d({4, 5}));
    for (Node* n : m.walk())
        if (n->has_attr("dropout_rate")) n->set_attr("dropout_rate", std::string("0.2"));
    CHECK_THAT(error_message([&] { (void)m.begin_update(Floats2d({4, 5})); }),
               Contains("tenon-E116") && Contains("attribute 'dropout_rate' must be a number but holds a string ('0.2')"));
}

TEST_CASE("errors: a chain whose widths are dyn in the types fails at initialize with E101 (E001 is the compile-time id)", "[errors]") {
    // The first layer's nO is a run-time value, so the mismatch cannot be seen at compile time.
    auto m = Relu<>({.nO = 512}) >> Relu<10, 256>();
    CHECK_THROWS_WITH(m.initialize(Floats2d({2, 784})),
                      Contains("[tenon-E101] chain(): relu expects input width 256 but the layer before it produces 512"));
    auto m2 = Relu<>({.nO = 512, .nI = 784}) >> Relu<10, 256>();
    CHECK_THROWS_WITH(m2.initialize(), Contains("tenon-E101") && Contains("256") && Contains("512"));
}

// Issue 16, item 6: a const get_grad must not write. After finish_update a gradient is a
// lazy zero (its memory still holds the last step's values); a const get_grad used to clear
// it, so two threads reading the gradients raced. It now reads zeros without changing the
// node: the lazy-zero mark survives it (get_grad_for_overwrite still reports a zero).
TEST_CASE("errors: const get_grad after finish_update reads zeros and writes nothing", "[errors][threads]") {
    auto model = Relu<5>() >> Softmax<3>();
    const Floats2d X = random_array(8, 4, 1);
    model.initialize(X);
    Optimizer opt = Adam(0.01);
    auto [P, bp] = model.begin_update(X);
    bp(random_array(8, 3, 3));
    model.finish_update(opt);

    const auto& out = std::as_const(model).layer<1>();
    std::vector<std::thread> readers;
    std::atomic<int> nonzero_seen{0};
    for (int t = 0; t < 4; ++t)
        readers.emplace_back([&] {
            for (int i = 0; i < 200; ++i)
                for (const char* name : {"W", "b"}) {
                    CParamView g = out.get_grad(name);
                    for (float v : g)
                        if (v != 0.0f) ++nonzero_seen;
                }
        });
    for (auto& t : readers) t.join();
    CHECK(nonzero_seen == 0);
    bool zero = false;
    ParamView g = model.layer<1>().get_grad_for_overwrite("W", zero);
    CHECK(zero);  // still a lazy zero: the const reads did not clear it
    CHECK(std::any_of(g.begin(), g.end(), [](float v) { return v != 0.0f; }));  // the memory is untouched
    // The mutable get_grad still clears it (for a caller that adds).
    ParamView b = model.layer<1>().get_grad("b");
    CHECK(std::all_of(b.begin(), b.end(), [](float v) { return v == 0.0f; }));
    // A large lazy zero reads as zeros too (the shared zeros grow).
    auto big = Relu<2048, 1024>();
    big.initialize();
    auto [Y2, bp2] = big.begin_update(random_array(2, 1024, 4));
    bp2(random_array(2, 2048, 5));
    big.finish_update(opt);
    CParamView gb = std::as_const(big).get_grad("W");
    CHECK(gb.size() == 2048u * 1024u);
    CHECK(std::all_of(gb.begin(), gb.end(), [](float v) { return v == 0.0f; }));
}

// A zero-width input or dim is refused with tenon-E260 (it used to be accepted: a layer with
// nI = 0 and an (n, 0) input).
TEST_CASE("errors: a zero width is refused (E260)", "[errors]") {
    CHECK(error_id([] { Relu<4>().initialize(Floats2d({3, 0})); }) == "tenon-E260");
    CHECK_THROWS_WITH(Relu<4>().initialize(Floats2d({3, 0})), Contains("relu") && Contains("width of 0"));
    CHECK(error_id([] { Linear<>().initialize(Floats2d({3, 4}), Floats2d({3, 0})); }) == "tenon-E260");
    CHECK(error_id([] { Relu<>({.nO = 0}); }) == "tenon-E260");
    CHECK(error_id([] { Linear<>({.nO = 3, .nI = 0}); }) == "tenon-E260");
    CHECK(error_id([] { Relu<4>().set_dim("nI", 0); }) == "tenon-E260");
    CHECK(error_id([] { (Relu<4>() >> Softmax<2>()).initialize(Floats2d({3, 0})); }) == "tenon-E260");
    // predict with a width-0 input on an initialised model: E260, not E101.
    auto m = Relu<4>();
    m.initialize(Floats2d({3, 5}));
    CHECK(error_id([&] { (void)m.predict(Floats2d({3, 0})); }) == "tenon-E260");
    CHECK(error_id([&] { (void)m.begin_update(Floats2d({0, 0})); }) == "tenon-E260");
    // An empty batch (0 rows) of the right width is still fine.
    CHECK(m.predict(Floats2d({0, 5})).shape(0) == 0u);
}

// predict on a batch of no sequences answers an empty output of the model's width, without
// running the layers (list2ragged of no arrays would give 0 columns, and Softmax E260).
TEST_CASE("errors: predict on an empty batch of sequences gives an empty output", "[errors]") {
    for (const bool plans : {true, false}) {
        auto tc = with_array<List<Ints2d>>(HashEmbed<16>(1000, 1u)) >> list2ragged() >> reduce_mean() >> Softmax<3>();
        tc.initialize(List<Ints2d>{Ints2d({3, 1}, {1, 2, 3})});
        const Floats2d P = testing::predict_via(plans, tc, List<Ints2d>{});
        CHECK(P.shape() == Floats2d::shape_type{0, 3});
        CHECK(testing::predict_via(plans, tc, List<Ints2d>{Ints2d({0, 1})}).shape() == Floats2d::shape_type{1, 3});  // one doc, no words

        auto seq = with_array<List<Floats2d>>(Relu<6>()) >> list2ragged() >> with_array<Ragged>(Softmax<3>());
        seq.initialize(List<Floats2d>{Floats2d({2, 4})});
        const Ragged R = testing::predict_via(plans, seq, List<Floats2d>{});
        CHECK(R.size() == 0u);
        CHECK(R.data().shape() == Floats2d::shape_type{0, 3});

        auto tagger = with_array<List<Floats2d>>(Relu<6>() >> Softmax<5>());
        tagger.initialize(List<Floats2d>{Floats2d({2, 4})});
        CHECK(testing::predict_via(plans, tagger, List<Floats2d>{}).empty());

        auto padded = with_array<Padded>(Relu<6>());
        padded.initialize(to_padded(List<Floats2d>{Floats2d({2, 4})}));
        const Padded Z = testing::predict_via(plans, padded, to_padded(List<Floats2d>{}));
        CHECK(Z.size() == 0u);
        CHECK(Z.data().shape(2) == 6u);
    }
}

// An id out of range in one document of a batch names the document and its row, not only the
// row of the batch's rows back to back (which the user never saw).
TEST_CASE("errors: an embedding's bad id names its sequence and row", "[errors]") {
    for (const bool plans : {true, false}) {
        auto tc = with_array<List<Ints2d>>(Embed<16>(50)) >> list2ragged() >> reduce_mean() >> Softmax<3>();
        List<Ints2d> docs;
        for (int d = 0; d < 1000; ++d) docs.push_back(Ints2d({4, 1}, {1, 2, 3, 4}));
        tc.initialize(docs);
        docs[700] = Ints2d({4, 1}, {1, 2, 77, 4});
        CHECK_THAT(error_message([&] { (void)testing::predict_via(plans, tc, docs); }),
                   Contains("tenon-E193") && Contains("id 77 (row 2802: sequence 700, row 2) is out of range"));
        CHECK_THAT(error_message([&] { (void)testing::update_via(plans, tc, docs); }), Contains("(row 2802: sequence 700, row 2)"));
        // Over a Ragged, and with empty documents before it; a lone Embed keeps the plain row.
        auto rg = with_array<BasicRagged<Ints2d>>(Embed<4>(50));
        rg.initialize(BasicRagged<Ints2d>(Ints2d({2, 1}, {1, 2}), {2}));
        CHECK_THAT(error_message([&] { (void)testing::predict_via(plans, rg, BasicRagged<Ints2d>(Ints2d({3, 1}, {1, 2, -5}), {0, 2, 0, 1})); }),
                   Contains("id -5 (row 2: sequence 3, row 0) is negative"));
        Embed<4> lone(50);
        lone.initialize(Ints2d({2, 1}, {1, 2}));
        CHECK_THAT(error_message([&] { (void)testing::predict_via(plans, lone, Ints2d({2, 1}, {1, 60})); }), Contains("id 60 (row 1) is out"));
    }
}

// Run-time width errors have run-time ids: none reuses the compile-time id E001.
TEST_CASE("errors: run-time width errors do not reuse the compile-time id E001", "[errors]") {
    auto m = Relu<>({.nO = 6}) >> Relu<3, 5>();
    CHECK(error_id([&] { m.initialize(Floats2d({2, 4})); }) == "tenon-E101");
    auto plain = Relu<>({.nO = 6, .nI = 4}) >> Relu<>({.nO = 3, .nI = 5});
    CHECK(error_id([&] { plain.initialize(); }) == "tenon-E101");
    // A lowered plan's input check (tenon/lower/lower.hpp).
    auto model = Relu<8>() >> Softmax<2>();
    model.initialize(random_array(4, 6, 1));
    auto plan = lower(model);
    CHECK(error_id([&] { (void)plan.predict(random_array(4, 5, 1)); }) == "tenon-E101");
}

// A chain's widths follow its layers: a layer's forced set_dim is the chain's new width at
// once (it used to keep the stale nI, and initialize() without data then refused the layer's
// new width). A width forced on the chain itself stands until initialize, which compares it
// with the layer's.
TEST_CASE("errors: a chain's nI follows its first layer's forced set_dim", "[errors]") {
    auto m = Relu<>({.nO = 6}) >> Softmax<3>();
    m.initialize(Floats2d({2, 4}));
    CHECK(m.get_dim("nI") == 4u);
    m.layer<0>().set_dim("nI", 7, true);
    CHECK(m.get_dim("nI") == 7u);
    CHECK(describe(m).find("nI=7") != std::string::npos);
    CHECK_NOTHROW(m.initialize());
    CHECK(m.get_dim("nI") == 7u);
    CHECK(m.predict(random_array(2, 7, 1)).shape(1) == 3u);
    CHECK(error_id([&] { (void)m.predict(random_array(2, 4, 1)); }) == "tenon-E101");
    // A width forced on the chain: the chain's own until initialize, which refuses a layer
    // that disagrees; forcing the layer too makes them agree.
    m.set_dim("nI", 9, true);
    CHECK(m.get_dim("nI") == 9u);
    CHECK(m.layer<0>().get_dim("nI") == 7u);
    CHECK(error_id([&] { m.initialize(); }) == "tenon-E101");
    m.layer<0>().set_dim("nI", 9, true);
    m.initialize();
    CHECK(m.get_dim("nI") == 9u);
    CHECK(m.predict(random_array(2, 9, 1)).shape(1) == 3u);
    m.layer<0>().set_dim("nI", 11, true);  // and the chain follows its layer again
    CHECK(m.get_dim("nI") == 11u);
    // Without force, the chain still refuses a width that contradicts its layer's.
    CHECK(error_id([&] { m.set_dim("nI", 5); }) == "tenon-E101");
    // nO follows the last width-changing layer.
    m.layer<1>().set_dim("nI", 6);  // unchanged: no error
    CHECK(m.get_dim("nO") == 3u);
}

// docs/reliability.md: the const calls may run at the same time on one model: predict from
// several threads while others save it (to_bytes) and read its gradients (const get_grad)
// after a training step. Every thread sees what one thread alone sees. (Under
// ThreadSanitizer this is also the race check of those calls.)
TEST_CASE("errors: predict, to_bytes and const get_grad from many threads at once", "[errors][threads]") {
    auto model = Relu<16>() >> Relu<16>() >> Softmax<4>();
    const Floats2d X = random_array(32, 8, 1);
    model.initialize(X);
    Optimizer opt = Adam(0.01);
    {
        auto [P, bp] = model.begin_update(X);
        bp(random_array(32, 4, 2));
    }
    model.finish_update(opt);
    const auto& m = model;
    const Floats2d P0 = m.predict(X);
    const std::vector<std::uint8_t> bytes0 = m.to_bytes();
    std::atomic<int> bad{0};
    std::vector<std::thread> ts;
    for (int t = 0; t < 6; ++t)
        ts.emplace_back([&, t] {
            for (int i = 0; i < 30; ++i) {
                if (t % 3 == 0) {
                    if (m.to_bytes() != bytes0) ++bad;
                } else if (t % 3 == 1) {
                    const Floats2d P = m.predict(X);
                    if (!std::equal(P.begin(), P.end(), P0.begin())) ++bad;
                } else {
                    for (const Node* n : m.walk())
                        for (const auto& name : n->param_names())
                            if (n->has_grad(name))
                                for (float v : n->get_grad(name))
                                    if (v != 0.0f) ++bad;
                }
            }
        });
    for (auto& t : ts) t.join();
    CHECK(bad == 0);
}

// Misuse found by probing (round 2): each is a clear tenon::Error, or works, where it crashed,
// hung, read past an array or gave a silent wrong result.
namespace {
List<Ints2d> make_docs(std::size_t n) {
    List<Ints2d> d;
    for (std::size_t i = 0; i < n; ++i) d.push_back(Ints2d({i + 1, 1}));
    return d;
}
}  // namespace

TEST_CASE("errors: batchers keep the temporaries they are given, and take any batch size", "[errors][batching]") {
    Floats2d X({10, 3});
    for (std::size_t i = 0; i < X.size(); ++i) X[i] = float(i);
    Ints1d y({10});
    for (std::size_t i = 0; i < 10; ++i) y[i] = static_cast<std::int32_t>(i % 3);
    // (Before, the temporaries were freed before the loop read them.)
    std::size_t rows = 0;
    float sum = 0.0f;
    for (auto [Xb, Yb] : multibatch(4, Floats2d(X), to_categorical(y, 3))) {
        rows += Xb.shape(0);
        for (std::size_t i = 0; i < Xb.size(); ++i) sum += Xb[i];
        CHECK(Yb.shape() == Floats2d::shape_type{Xb.shape(0), 3});
    }
    CHECK(rows == 10u);
    CHECK(sum == 435.0f);
    std::size_t docs = 0;
    for (const auto& b : minibatch(2, make_docs(7), shuffle)) docs += b.size();
    for (const auto& b : minibatch_by_words(make_docs(7), 5)) docs += b.size();
    CHECK(docs == 14u);
    // A size beyond any count is one batch (Thinc: int(1e20)); it used to hang.
    const List<Ints2d> kept = make_docs(5);
    std::size_t batches = 0;
    for (const auto& b : minibatch(constant(1e20), kept)) batches += b.size() == 5 ? 1 : 100;
    CHECK(batches == 1u);
    // Rows of no values: no copy from a null pointer.
    for (const auto& b : minibatch(4, Floats2d({10, 0}))) CHECK(b.shape(1) == 0u);
}

TEST_CASE("errors: optimizer and schedule misuse", "[errors][optimizer]") {
    CHECK_THAT(error_message([] { Optimizer o({.eps = 1e-50}); }), Contains("tenon-E251") && Contains("eps = 1e-50"));
    CHECK_THAT(error_message([] { Optimizer o = Adam(1e300); }), Contains("tenon-E251") && Contains("learn_rate"));
    CHECK_THAT(error_message([] {
                   Optimizer o = SGD(0.1, 0.0, 0.0);
                   Floats1d w({5});
                   std::vector<float> buf{1, 1, 1, 7, 7, 7};
                   o.update(1, "W", w, Floats1dView(buf.data(), {3}));
               }),
               Contains("tenon-E108") && Contains("the gradient has 3 values but the weights have 5"));
    CHECK_THAT(error_message([] {
                   Optimizer o = Adam(0.001);
                   o.schedule("learn_rate", Schedule("mine", nullptr));
               }),
               Contains("tenon-E253") && Contains("'mine'"));
    // Messages print the number given, not "%f" (it read "found 1.000000").
    CHECK_THAT(error_message([] { Dropout d(1.0000001); }), Contains("found 1.0000001"));
    CHECK_THAT(error_message([] { auto s = Softmax<3>({.temperature = -1e-300}); }), Contains("found -1e-300"));
}

TEST_CASE("errors: use_params refuses NaN, and a guard outliving its model leaves it alone", "[errors][optimizer]") {
    using M = decltype(Relu<4>() >> Softmax<2>());
    const Floats2d X = testing::random_array(3, 5, 1);
    std::optional<M> model(Relu<4>() >> Softmax<2>());
    model->initialize(X);
    Optimizer opt = Adam({.learn_rate = 0.01, .use_averages = true});
    auto [Y, bp] = model->begin_update(X);
    bp(Y);
    model->finish_update(opt);
    Node& relu = model->layer<0>();
    Floats2d W({4, 5});
    for (auto& v : W) v = std::numeric_limits<float>::quiet_NaN();
    ParamValues nan_values;
    nan_values.emplace(ParamKey{relu.id(), "W"}, param_view(W));
    CHECK_THAT(error_message([&] { UseParams guard(*model, nan_values); }), Contains("tenon-E119") && Contains("use_params"));
    {
        UseAverages averages(*model, opt);
        model.reset();  // the model goes first: the guard's end must not write into it
    }
    CHECK_FALSE(model.has_value());
}

TEST_CASE("errors: layers refuse widths that would wrap; inputs of pairs and sparse features are checked", "[errors]") {
    CHECK(error_id([] { (void)expand_window(std::size_t(1) << 62); }) == "tenon-E195");
    CHECK(error_id([] {
              const std::size_t big = std::size_t(1) << 63;
              MultiSoftmax<> m({big, big, 3});
          }) == "tenon-E197");
    MultiSoftmax<> ms({2, 3});
    CHECK(error_id([&] { ms.set_dim("nO", 6, true); }) == "tenon-E101");
    CauchySimilarity<3> cs;
    cs.initialize();
    Floats2d a({2, 3}), b({2, 3});
    b(1, 2) = std::numeric_limits<float>::quiet_NaN();
    CHECK(error_id([&] { (void)cs.predict(std::pair<Floats2d, Floats2d>{a, b}); }) == "tenon-E252");
}

TEST_CASE("errors: a message quoting a huge value keeps its start and end", "[errors]") {
    const std::string big = "[" + std::string(100000, 'x') + "]";
    const std::string m = Error("value " + big + " is bad", "tenon-E999").what();
    CHECK(m.size() < 4200);
    CHECK_THAT(m, Contains("[tenon-E999] value [xxx") && Contains("characters cut") && Contains("xxx] is bad"));
}
