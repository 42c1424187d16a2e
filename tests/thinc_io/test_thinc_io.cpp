// Thinc interop (tenon/io/thinc.hpp), both ways:
//  - models trained in Thinc 8.1 and saved with to_bytes (tests/thinc_io/gen_thinc_models.py:
//    the Fashion-MNIST MLP of Thinc's intro, a spaCy-like tok2vec text classifier, dense
//    layers and combinators, an Embed) load into the same tenon models with from_thinc_bytes
//    and predict what Thinc predicted (within 1e-5, the same argmax);
//  - models trained in tenon, written with to_thinc_bytes, load with Thinc's from_bytes into
//    the models Thinc's constructors build (the same script, --predict) and predict there
//    what they predict here;
//  - files of other architectures, and bytes that are not a Thinc file, are refused with the
//    node's path and what differs, and the model is left exactly as it was.
#include <catch2/catch.hpp>

#include <tenon/io/state.hpp>
#include <tenon/config/config.hpp>
#include <tenon/config/registry.hpp>
#include <tenon/io/thinc.hpp>
#include <tenon/tenon.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "oracle/case.hpp"
#include "support/gradcheck_any.hpp"
#include "unit/helpers.hpp"

using namespace tenon;
using namespace tenon::oracle;

namespace {

const std::filesystem::path kCases = TENON_ORACLE_DIR;

std::vector<std::uint8_t> read_bytes(const std::filesystem::path& p) {
    std::ifstream f(p, std::ios::binary);
    REQUIRE(f);
    return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

// ---------------------------------------------------------------------------------------
// The models, as a tenon user writes them
// ---------------------------------------------------------------------------------------
auto make_mlp() { return Relu<64>({.dropout = 0.2}) >> Relu<64>({.dropout = 0.2}) >> Softmax<>(); }
auto make_mlp_dyn() { return Relu<>({.nO = 64, .dropout = 0.2}) >> Relu<>({.nO = 64, .dropout = 0.2}) >> Softmax<>(); }

struct TextcatConfig {
    std::size_t width = 32;
    std::vector<std::size_t> rows{200, 100, 150};
    std::size_t window = 1, depth = 2, n_classes = 3;
    std::string thinc_config() const {
        std::ostringstream s;
        s << "width=" << width << ",nF=3";
        for (std::size_t i = 0; i < 3; ++i) s << ",rows" << i << "=" << rows[i];
        s << ",window=" << window << ",depth=" << depth << ",n_classes=" << n_classes;
        return s.str();
    }
};
std::size_t num(const Case& c, const std::string& key) { return static_cast<std::size_t>(std::lround(c.scalar(key))); }
TextcatConfig textcat_config(const Case& c) {
    TextcatConfig cfg;
    cfg.width = num(c, "width");
    REQUIRE(num(c, "nF") == 3);
    for (std::size_t i = 0; i < 3; ++i) cfg.rows[i] = num(c, "rows" + std::to_string(i));
    cfg.window = num(c, "window");
    cfg.depth = num(c, "depth");
    cfg.n_classes = num(c, "n_classes");
    return cfg;
}

// spaCy's MultiHashEmbed + MaxoutWindowEncoder (as tests/integration/test_tok2vec.cpp), then
// list2ragged >> reduce_mean >> Softmax: List<Ints2d> -> Floats2d.
HashEmbed<dyn, Ints2d> feature(const TextcatConfig& c, std::size_t f) {
    return HashEmbed<dyn, Ints2d>(c.rows[f], HashEmbedOptions{.nO = c.width, .seed = 8 + static_cast<std::uint32_t>(f),
                                                               .column = f, .initializer = {}, .dropout = 0.0});
}
auto make_textcat(const TextcatConfig& c) {
    const std::size_t w = c.width;
    auto embed = list2ragged<Ints2d>() >>
                 with_array<BasicRagged<Ints2d>>(concatenate(feature(c, 0), feature(c, 1), feature(c, 2))) >>
                 with_array<Ragged>(Maxout<>({.nO = w, .nI = 3 * w, .nP = 3, .dropout = 0.0, .normalize = true})) >>
                 ragged2list();
    auto cnn = expand_window(c.window) >>
               Maxout<>({.nO = w, .nI = w * (2 * c.window + 1), .nP = 3, .dropout = 0.0, .normalize = true});
    auto encode = with_array<List<Floats2d>>(clone(residual(std::move(cnn)), c.depth), c.window * c.depth);
    return embed >> encode >> list2ragged() >> reduce_mean() >> Softmax<>(SoftmaxOptions{.nO = c.n_classes, .nI = w});
}

auto make_zoo() {
    return Mish<12>({.dropout = 0.1, .normalize = true}) >> Maxout<8>({.nP = 2}) >>
           residual(Linear<8>() >> LayerNorm<>()) >> (Sigmoid<5>() | Relu<3>()) >> (Linear<6>() + Linear<6>()) >>
           Softmax<4>();
}
auto make_acts() {
    return Gelu<6>({.normalize = true}) >> Swish<5>({.dropout = 0.1}) >> HardSwish<4>() >> Softmax<3>();
}
auto make_embed() { return (Embed<6, Ints1d>(50) | HashEmbed<5, Ints1d>(40)) >> Relu<4>(); }
auto make_lstm() {
    return with_padded<List<Floats2d>>(BiLSTM<6, 4>(LSTMOptions{.depth = 2})) >> list2ragged() >> reduce_mean() >>
           Softmax<3>();
}

// ---------------------------------------------------------------------------------------
// Comparing
// ---------------------------------------------------------------------------------------
std::vector<std::size_t> argmax_rows(const float* p, std::size_t rows, std::size_t cols) {
    std::vector<std::size_t> out(rows);
    for (std::size_t r = 0; r < rows; ++r) out[r] = std::max_element(p + r * cols, p + (r + 1) * cols) - (p + r * cols);
    return out;
}
// Within 1e-5 of the reference, value by value, and the same class for every row.
void require_same_predictions(const Stored& want, const Floats2d& got) {
    REQUIRE(want.shape.size() == 2);
    REQUIRE(got.shape(0) == want.shape[0]);
    REQUIRE(got.shape(1) == want.shape[1]);
    double worst = 0.0;
    for (std::size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::abs(double(got[i]) - want.values[i]));
    INFO("largest difference " << worst << " over " << got.size() << " values");
    CHECK(worst <= 1e-5);
    const auto a = argmax_rows(got.data(), got.shape(0), got.shape(1));
    const auto b = argmax_rows(want.values.data(), want.shape[0], want.shape[1]);
    std::size_t differ = 0;
    for (std::size_t r = 0; r < a.size(); ++r) differ += a[r] != b[r];
    INFO(differ << " of " << a.size() << " rows have another argmax");
    CHECK(differ == 0);
}

// "" when the bytes are equal, else where they first differ.
std::string first_difference(const std::vector<std::uint8_t>& got, const std::vector<std::uint8_t>& want) {
    const std::size_t n = std::min(got.size(), want.size());
    std::size_t i = 0;
    while (i < n && got[i] == want[i]) ++i;
    if (i == n && got.size() == want.size()) return {};
    std::ostringstream s;
    s << "sizes " << got.size() << " and " << want.size() << "; first difference at byte " << i << ": ";
    auto show = [&](const std::vector<std::uint8_t>& v) {
        const std::size_t from = i < 24 ? 0 : i - 24;
        for (std::size_t k = from; k < std::min(v.size(), i + 24); ++k)
            s << (std::isprint(v[k]) ? static_cast<char>(v[k]) : '.');
    };
    show(got);
    s << " | ";
    show(want);
    return s.str();
}

// Everything restore() could change: names, dims, parameters (bit for bit), attributes,
// references and the initialised flags.
void require_same_state(const ModelState& a, const ModelState& b) {
    REQUIRE(a.nodes.size() == b.nodes.size());
    for (std::size_t i = 0; i < a.nodes.size(); ++i) {
        const NodeState& x = a.nodes[i];
        const NodeState& y = b.nodes[i];
        INFO("node " << i << " " << x.path);
        CHECK(x.name == y.name);
        CHECK(x.dims == y.dims);
        CHECK(x.attrs == y.attrs);
        CHECK(x.refs == y.refs);
        CHECK(x.initialized == y.initialized);
        REQUIRE(x.params.size() == y.params.size());
        for (std::size_t p = 0; p < x.params.size(); ++p) {
            INFO("parameter " << x.params[p].name);
            CHECK(x.params[p].name == y.params[p].name);
            CHECK(x.params[p].allocated == y.params[p].allocated);
            CHECK(x.params[p].shape == y.params[p].shape);
            CHECK(std::equal(x.params[p].values.begin(), x.params[p].values.end(), y.params[p].values.begin(),
                             y.params[p].values.end(), [](float u, float v) { return std::memcmp(&u, &v, 4) == 0; }));
        }
    }
}

// The error's id and pieces of its message; the model unchanged.
template <class F>
void require_refused(Node& model, F&& load, const std::string& id, const std::vector<std::string>& says) {
    const ModelState before = capture(model);
    std::string what, got_id;
    try {
        load();
    } catch (const LoadError& e) {
        what = e.what();
        got_id = e.id();
    }
    INFO("error: " << what);
    REQUIRE(!what.empty());
    CHECK(got_id == id);
    for (const auto& s : says) {
        INFO("the message should say: " << s);
        CHECK(what.find(s) != std::string::npos);
    }
    require_same_state(before, capture(model));
}

// ---------------------------------------------------------------------------------------
// The other way: Thinc loads tenon's bytes (gen_thinc_models.py --predict)
// ---------------------------------------------------------------------------------------
struct Array2Write {
    std::string key;
    std::vector<std::size_t> shape;
    std::vector<float> values;
};
void write_case(const std::string& name, const std::vector<Array2Write>& arrays) {
    std::ofstream f(kCases / (name + ".txt"));
    REQUIRE(f);
    f << "case " << name << "\n";
    char buf[32];
    for (const auto& a : arrays) {
        f << "array " << a.key << " " << a.shape.size();
        for (auto d : a.shape) f << " " << d;
        f << "\n";
        for (std::size_t i = 0; i < a.values.size(); ++i) {
            std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(a.values[i]));
            f << (i ? " " : "") << buf;
        }
        f << "\n";
    }
    REQUIRE(f);
}
template <class A>
Array2Write as_written(const std::string& key, const A& a) {
    Array2Write w{key, {}, {}};
    for (std::size_t d = 0; d < A::rank; ++d) w.shape.push_back(a.shape(d));
    for (std::size_t i = 0; i < a.size(); ++i) w.values.push_back(static_cast<float>(a.data()[i]));
    return w;
}

// Writes the model for Thinc, has Thinc build `kind` from its constructors, load the bytes and
// predict on the inputs; returns Thinc's case ("P", "same_bytes").
Case thinc_predicts(const std::vector<std::uint8_t>& bytes, const std::string& kind, const std::string& config,
                    const std::vector<Array2Write>& inputs) {
    const std::string name = "back_" + kind;
    {
        std::ofstream f(kCases / (name + ".thinc"), std::ios::binary);
        f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
        REQUIRE(f);
    }
    write_case(name + "_in", inputs);
    std::filesystem::remove(kCases / (name + "_out.txt"));
    const std::string cmd = std::string("'") + TENON_THINC_PYTHON + "' '" + TENON_THINC_SCRIPT + "' --predict " + kind +
                            " '" + config + "' '" + (kCases / (name + ".thinc")).string() + "' '" +
                            (kCases / (name + "_in.txt")).string() + "' '" + (kCases / (name + "_out.txt")).string() +
                            "'";
    INFO("running " << cmd);
    REQUIRE(std::system(cmd.c_str()) == 0);
    return Case(name + "_out");
}

Floats2d fashion_test_images() {
    return read_idx_images(std::string(fashion_mnist_dir) + "/t10k-images-idx3-ubyte.gz");
}

List<Ints2d> random_docs(const std::vector<std::size_t>& lengths, std::uint64_t seed) {
    Rng rng(seed);
    List<Ints2d> docs;
    for (std::size_t n : lengths) {
        Ints2d d({n, 3}, uninitialized);
        for (auto& v : d) v = static_cast<std::int32_t>(rng.uniform(0.0, 16777216.0));
        docs.push_back(std::move(d));
    }
    return docs;
}

}  // namespace

// ---------------------------------------------------------------------------------------
// Thinc -> tenon
// ---------------------------------------------------------------------------------------
TEST_CASE("Thinc's intro MLP trained on Fashion-MNIST in Thinc predicts the same in tenon", "[thinc_io]") {
    Case c("mlp");
    REQUIRE(num(c, "H") == 64);
    const Floats2d X = fashion_test_images();
    const auto bytes = read_bytes(kCases / "mlp.thinc");

    SECTION("into the model as written, not initialised") {
        auto model = make_mlp();
        from_thinc_bytes(model, bytes);
        require_same_predictions(c.get("P"), model.predict(X));
        // Written back, the bytes are Thinc's own.
        CHECK(first_difference(to_thinc_bytes(model), bytes) == "");
    }
    SECTION("into a model with dyn widths, and into one trained on other weights") {
        auto dynamic = make_mlp_dyn();
        from_thinc_disk(dynamic, kCases / "mlp.thinc");
        CHECK(dynamic.layer<0>().get_dim("nI") == 784);
        CHECK(dynamic.layer<2>().get_dim("nO") == 10);
        require_same_predictions(c.get("P"), dynamic.predict(X));
        auto trained = make_mlp();
        trained.initialize(testing::random_array(4, 784, 3), testing::random_array(4, 10, 4));
        from_thinc_bytes(trained, bytes);
        require_same_predictions(c.get("P"), trained.predict(X));
    }
    SECTION("a Thinc model never initialised: the widths it knows, no parameters") {
        auto model = make_mlp_dyn();
        from_thinc_disk(model, kCases / "mlp_uninit.thinc");
        CHECK(!model.is_initialized());
        CHECK(model.layer<0>().get_dim("nO") == 64);
        CHECK(!model.layer<0>().has_dim("nI"));
        CHECK(!model.layer<0>().has_param("W"));
        model.initialize(testing::random_array(4, 784, 3), testing::random_array(4, 10, 4));
        from_thinc_bytes(model, bytes);
        require_same_predictions(c.get("P"), model.predict(X));
    }
    SECTION("Thinc's other spelling of the same layers: chain(Relu, Dropout, Relu, Dropout, Softmax)") {
        auto model = make_mlp();
        from_thinc_disk(model, kCases / "mlp_flat.thinc");
        require_same_predictions(c.get("P"), model.predict(X));
        CHECK(model.layer<0>().get_dim("nO") == 64);
    }
}

TEST_CASE("a spaCy-like tok2vec text classifier trained in Thinc predicts the same in tenon", "[thinc_io]") {
    Case c("textcat");
    const TextcatConfig cfg = textcat_config(c);
    auto model = make_textcat(cfg);
    from_thinc_disk(model, kCases / "textcat.thinc");
    const List<Ints2d> docs = read_list<Ints2d>(c, "X");
    require_same_predictions(c.get("P"), model.predict(docs));
    // The hash seeds and the dropout rates came with the file.
    for (const Node* n : model.walk())
        if (n->name() == "hashembed") CHECK(n->has_attr("seed"));
}

TEST_CASE("dense layers, combinators and an Embed saved by Thinc predict the same in tenon", "[thinc_io]") {
    SECTION("Mish (normalize, dropout), Maxout, residual, concatenate, add, Softmax") {
        Case c("zoo");
        auto model = make_zoo();
        from_thinc_disk(model, kCases / "zoo.thinc");
        require_same_predictions(c.get("P"), model.predict(c.f2("X")));
        CHECK(model.layer<5>().get_attr("softmax_temperature") == Attr(2.0));
        CHECK(first_difference(to_thinc_bytes(model), read_bytes(kCases / "zoo.thinc")) == "");
    }
    SECTION("Gelu (normalize), Swish (dropout), HardSwish") {
        Case c("acts");
        auto model = make_acts();
        from_thinc_disk(model, kCases / "acts.thinc");
        require_same_predictions(c.get("P"), model.predict(c.f2("X")));
        CHECK(first_difference(to_thinc_bytes(model), read_bytes(kCases / "acts.thinc")) == "");
    }
    SECTION("Embed and HashEmbed over one id per row (Thinc's column=None)") {
        Case c("embed");
        auto model = make_embed();
        // The file's seed (12345) replaces the one the layer made (its id): the hashes follow.
        CHECK(model.layer<0>().layer<1>().get_attr("seed") != Attr(std::int64_t(12345)));
        from_thinc_disk(model, kCases / "embed.thinc");
        require_same_predictions(c.get("P"), model.predict(read_array<Ints1d>(c, "X")));
        CHECK(model.layer<0>().layer<1>().get_attr("seed") == Attr(std::int64_t(12345)));
        // (Not the same bytes: Thinc's concatenate gave HashEmbed's unused nI a value from the
        // sample it was initialised with; tenon has no such dim and writes None.)
    }
    SECTION("a BiLSTM of depth 2 over lists (Thinc's native LSTM: its parameter layout is tenon's)") {
        Case c("lstm");
        auto model = make_lstm();
        from_thinc_disk(model, kCases / "lstm.thinc");
        require_same_predictions(c.get("P"), model.predict(read_list<Floats2d>(c, "X")));
        CHECK(first_difference(to_thinc_bytes(model), read_bytes(kCases / "lstm.thinc")) == "");
    }
}

// ---------------------------------------------------------------------------------------
// tenon -> Thinc
// ---------------------------------------------------------------------------------------
TEST_CASE("models trained in tenon load into Thinc's and predict the same there", "[thinc_io]") {
    SECTION("the Fashion-MNIST MLP, 20 steps of Adam") {
        const Dataset data = load_fashion_mnist();
        const Floats2d Y = to_categorical(data.y_train, 10);
        auto model = make_mlp();
        model.initialize(data.X_train, Y);
        Optimizer opt = Adam(0.001);
        std::size_t step = 0;
        for (auto [Xb, Yb] : multibatch(128, data.X_train, Y)) {
            if (step++ == 20) break;
            auto [Yh, backprop] = model.begin_update(Xb);
            backprop(CategoricalCrossentropy().get_grad(Yh, Yb));
            model.finish_update(opt);
        }
        const Floats2d X = fashion_test_images();
        Floats2d Xs({500, 784}, uninitialized);
        std::copy(X.data(), X.data() + Xs.size(), Xs.data());
        Case thinc = thinc_predicts(to_thinc_bytes(model), "mlp", "H=64", {as_written("X", Xs)});
        require_same_predictions(thinc.get("P"), model.predict(Xs));
        CHECK(thinc.scalar("same_bytes") == 1.0f);  // Thinc writes back the very same bytes
        // In the tree of Thinc's own file of this model: the same bytes.
        CHECK(first_difference(to_thinc_bytes(model, read_bytes(kCases / "mlp.thinc")), to_thinc_bytes(model)) == "");
    }
    SECTION("the tok2vec text classifier, 5 steps of Adam") {
        TextcatConfig cfg;
        auto model = make_textcat(cfg);
        const List<Ints2d> docs = random_docs({5, 0, 1, 7, 12, 3, 9, 2}, 11);
        model.initialize(docs);
        Optimizer opt = Adam(0.01);
        for (std::uint64_t s = 0; s < 5; ++s) {
            const List<Ints2d> batch = random_docs({4, 8, 1, 6}, 100 + s);
            Ints1d labels({4});
            for (std::size_t i = 0; i < 4; ++i) labels[i] = static_cast<std::int32_t>(i % cfg.n_classes);
            auto [Yh, backprop] = model.begin_update(batch);
            backprop(CategoricalCrossentropy().get_grad(Yh, to_categorical(labels, cfg.n_classes)));
            model.finish_update(opt);
        }
        std::vector<Array2Write> in{{"X.n", {}, {static_cast<float>(docs.size())}}};
        for (std::size_t d = 0; d < docs.size(); ++d) in.push_back(as_written("X." + std::to_string(d), docs[d]));
        const Floats2d P = model.predict(docs);
        Case thinc = thinc_predicts(to_thinc_bytes(model), "textcat", cfg.thinc_config(), in);
        require_same_predictions(thinc.get("P"), P);
        CHECK(thinc.scalar("same_bytes") == 1.0f);
        // spaCy nests its chains (chain(chain(embed, encode), list2ragged(), ...)): a tree
        // Thinc's from_bytes tells apart from the flat one. Written in the tree of that
        // model's (untrained) file, it loads there too.
        const auto like = read_bytes(kCases / "textcat_template.thinc");
        Case nested = thinc_predicts(to_thinc_bytes(model, like), "textcat_nested", cfg.thinc_config(), in);
        require_same_predictions(nested.get("P"), P);
        CHECK(nested.scalar("same_bytes") == 1.0f);
    }
    SECTION("dense layers and combinators; an Embed") {
        auto zoo = make_zoo();
        const Floats2d X = testing::random_array(9, 10, 5);
        zoo.initialize(X);
        testing::randomize_params(zoo, 6);
        Case thinc = thinc_predicts(to_thinc_bytes(zoo), "zoo", "", {as_written("X", X)});
        require_same_predictions(thinc.get("P"), zoo.predict(X));
        CHECK(thinc.scalar("same_bytes") == 1.0f);

        auto acts = make_acts();
        const Floats2d Xa = testing::random_array(9, 10, 8, -2.0, 2.0);
        acts.initialize(Xa);
        testing::randomize_params(acts, 9);
        Case thinc_acts = thinc_predicts(to_thinc_bytes(acts), "acts", "", {as_written("X", Xa)});
        require_same_predictions(thinc_acts.get("P"), acts.predict(Xa));
        CHECK(thinc_acts.scalar("same_bytes") == 1.0f);

        auto embed = make_embed();
        Ints1d ids({7});
        for (std::size_t i = 0; i < 7; ++i) ids[i] = static_cast<std::int32_t>((i * 13) % 50);
        embed.initialize(ids);
        testing::randomize_params(embed, 7);
        Case thinc_embed = thinc_predicts(to_thinc_bytes(embed), "embed", "", {as_written("X", ids)});
        require_same_predictions(thinc_embed.get("P"), embed.predict(ids));
        CHECK(thinc_embed.scalar("same_bytes") == 1.0f);
    }
    SECTION("a BiLSTM over lists, HC0 learned (its halves are swapped for Thinc's order)") {
        auto model = make_lstm();
        List<Floats2d> docs;
        for (std::size_t n : {4u, 2u, 6u}) docs.push_back(testing::random_array(n, 4, 40 + n));
        model.initialize(docs);
        testing::randomize_params(model, 8);  // HC0 too: the initial hidden and cell differ
        std::vector<Array2Write> in{{"X.n", {}, {static_cast<float>(docs.size())}}};
        for (std::size_t d = 0; d < docs.size(); ++d) in.push_back(as_written("X." + std::to_string(d), docs[d]));
        Case thinc = thinc_predicts(to_thinc_bytes(model), "lstm", "", in);
        require_same_predictions(thinc.get("P"), model.predict(docs));
        CHECK(thinc.scalar("same_bytes") == 1.0f);
    }
}

// ---------------------------------------------------------------------------------------
// Refusals
// ---------------------------------------------------------------------------------------
TEST_CASE("files of another architecture are refused and the model is left as it was", "[thinc_io]") {
    const bool initialised = GENERATE(false, true);
    INFO((initialised ? "an initialised model" : "a model not initialised"));
    auto model = make_mlp();
    if (initialised) model.initialize(testing::random_array(4, 784, 1), testing::random_array(4, 10, 2));
    auto load = [&](const char* file) { return [&model, file] { from_thinc_disk(model, kCases / file); }; };

    SECTION("another width") {
        require_refused(model, load("mlp_wide.thinc"), "tenon-E212",
                        {"chain>0>relu", "relu dim nO: expected 64 but the Thinc file has 128"});
    }
    SECTION("another layer") {
        require_refused(model, load("mlp_maxout.thinc"), "tenon-E211",
                        {"chain>0>relu", "expected relu but the Thinc file has maxout"});
    }
    SECTION("another number of layers") {
        require_refused(model, load("mlp_deep.thinc"), "tenon-E211",
                        {"chain>2>softmax", "expected softmax but the Thinc file has relu"});
    }
    SECTION("another model altogether") {
        require_refused(model, load("textcat.thinc"), "tenon-E211",
                        {"chain>0>relu", "expected relu but the Thinc file has list2ragged"});
    }
    SECTION("bytes that are not a Thinc file") {
        const auto good = read_bytes(kCases / "mlp.thinc");
        for (std::size_t keep : {std::size_t(0), std::size_t(1), std::size_t(10), good.size() / 2, good.size() - 1}) {
            INFO("the first " << keep << " bytes");
            const std::vector<std::uint8_t> cut(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(keep));
            require_refused(model, [&] { from_thinc_bytes(model, cut); }, "tenon-E210", {"not a Thinc model file"});
        }
        std::vector<std::uint8_t> garbage(4096);
        Rng rng(9);
        for (auto& b : garbage) b = static_cast<std::uint8_t>(rng.uniform(0.0, 256.0));
        require_refused(model, [&] { from_thinc_bytes(model, garbage); }, "tenon-E210", {"not a Thinc model file"});
        // A header that claims 4 billion items.
        const std::vector<std::uint8_t> huge{0xdd, 0xff, 0xff, 0xff, 0xff, 0x00};
        require_refused(model, [&] { from_thinc_bytes(model, huge); }, "tenon-E210", {"not a Thinc model file"});
        // msgpack, but not a model: a map without nodes, and a tenon model file.
        const std::vector<std::uint8_t> map{0x81, 0xa1, 'a', 0x01};
        require_refused(model, [&] { from_thinc_bytes(model, map); }, "tenon-E210", {"\"nodes\""});
        auto other = make_mlp();
        other.initialize(testing::random_array(4, 784, 1), testing::random_array(4, 10, 2));
        const auto native = other.to_bytes();
        require_refused(model, [&] { from_thinc_bytes(model, native); }, "tenon-E210", {"not a Thinc model file"});
        // One byte changed in a parameter's dtype.
        auto bad = good;
        const std::string f4 = "<f4";
        auto it = std::search(bad.begin(), bad.end(), f4.begin(), f4.end());
        REQUIRE(it != bad.end());
        it[2] = '2';
        require_refused(model, [&] { from_thinc_bytes(model, bad); }, "tenon-E218", {"dtype '<f2'"});
    }
    SECTION("a file that is not there") {
        require_refused(model, load("no_such_file.thinc"), "tenon-E216", {"no_such_file.thinc"});
    }
}

TEST_CASE("changed bytes are loaded or refused with a tenon::Error, never a crash", "[thinc_io]") {
    // Every byte position of the small models' files, and random changes: the loader either
    // takes the file (a changed weight, a changed name that still fits) or throws Error; a
    // refused file leaves the model as it was.
    for (const char* file : {"zoo.thinc", "embed.thinc"}) {
        const auto good = read_bytes(kCases / file);
        Rng rng(std::string(file) == "zoo.thinc" ? 1 : 2);
        std::size_t refused = 0, loaded = 0;
        for (std::size_t trial = 0; trial < 3 * good.size(); ++trial) {
            auto bad = good;
            const std::size_t at = trial < good.size() ? trial : static_cast<std::size_t>(rng.uniform(0.0, double(good.size())));
            bad[at] = trial < good.size() ? static_cast<std::uint8_t>(bad[at] ^ 0xff)
                                          : static_cast<std::uint8_t>(rng.uniform(0.0, 256.0));
            auto zoo = make_zoo();
            auto embed = make_embed();
            Node& model = std::string(file) == "zoo.thinc" ? static_cast<Node&>(zoo) : static_cast<Node&>(embed);
            const ModelState before = capture(model);
            try {
                from_thinc_bytes(model, bad);
                ++loaded;
            } catch (const Error&) {
                ++refused;
                INFO(file << ": byte " << at);
                require_same_state(before, capture(model));
            }
        }
        INFO(file << ": " << loaded << " loaded, " << refused << " refused");
        CHECK(refused > 0);
    }
}

TEST_CASE("a text classifier refuses a file whose encoder has another window", "[thinc_io]") {
    auto model = make_textcat(TextcatConfig{});
    require_refused(
        model, [&] { from_thinc_disk(model, kCases / "textcat_window2.thinc"); }, "tenon-E214",
        {"chain>4>with_array>clone>0>residual>chain>0>expand_window", "window_size: expected 1", "has 2"});
    // The right file loads into the same model afterwards.
    from_thinc_disk(model, kCases / "textcat.thinc");
}

TEST_CASE("to_thinc_bytes refuses a node Thinc has no counterpart for", "[thinc_io]") {
    auto remap = remap_ids({{5, 1}, {7, 2}}) >> Embed<4, Ints2d>(10);
    remap.initialize();
    std::string what;
    try {
        to_thinc_bytes(remap);
    } catch (const Error& e) {
        what = e.what();
        CHECK(e.id() == "tenon-E215");
    }
    INFO(what);
    CHECK(what.find("remap_ids") != std::string::npos);

    auto probe = with_debug(Relu<4>(), {.name = std::string("probe")}) >> Softmax<2>();
    probe.initialize(testing::random_array(3, 5, 1));
    CHECK_THROWS_WITH(to_thinc_bytes(probe), Catch::Contains("tenon-E215") && Catch::Contains("'probe'"));
}

// ---------------------------------------------------------------------------------------
// Round trips through Thinc's format, within tenon
// ---------------------------------------------------------------------------------------
template <class M, class X>
void round_trip(M& model, const X& sample) {
    model.initialize(sample);
    testing::randomize_params(model, 17);
    const auto bytes = to_thinc_bytes(model);
    M fresh = model;  // same type; then other weights
    testing::randomize_params(fresh, 18);
    from_thinc_bytes(fresh, bytes);
    const ModelState a = capture(model), b = capture(fresh);
    for (std::size_t i = 0; i < a.nodes.size(); ++i) {
        INFO(a.nodes[i].path);
        REQUIRE(a.nodes[i].params.size() == b.nodes[i].params.size());
        for (std::size_t p = 0; p < a.nodes[i].params.size(); ++p) CHECK(a.nodes[i].params[p].values == b.nodes[i].params[p].values);
        CHECK(a.nodes[i].dims == b.nodes[i].dims);
        CHECK(a.nodes[i].attrs == b.nodes[i].attrs);
    }
    CHECK(first_difference(to_thinc_bytes(fresh), bytes) == "");
}

TEST_CASE("tenon models go through Thinc's format and back unchanged", "[thinc_io]") {
    SECTION("clone of 1 and 3, noop, reductions, uniqued") {
        auto one = clone(Relu<6>({.normalize = true}), 1) >> clone(Relu<6>(), 3) >> clone(Relu<6>(), 0) >> Softmax<2>();
        round_trip(one, testing::random_array(5, 4, 1));
        const List<Floats2d> seqs{testing::random_array(3, 4, 2), testing::random_array(2, 4, 3)};
        auto reduce = list2ragged() >> with_array<Ragged>(Linear<5>()) >>
                      (reduce_sum() | reduce_max() | reduce_first() | reduce_last() | reduce_mean()) >> Softmax<3>();
        round_trip(reduce, seqs);
        auto uniq = uniqued(Embed<4, Ints2d>(30, 1, 0.1), 1) >> Relu<3>();
        Ints2d ids({4, 2}, {1, 2, 3, 4, 5, 6, 1, 2});
        round_trip(uniq, ids);
    }
}

TEST_CASE("a model held in an AnyModel (a config's model) takes and gives Thinc files as the model itself", "[thinc_io]") {
    // AnyModel's node, "any(...)", has no Thinc counterpart: it is passed through, and the
    // AnyModel is initialised by the load (before, E211 "expected any", or a load into
    // model() that left it uninitialised, whose initialize() then drew new weights).
    const Floats2d X = testing::random_array(4, 5, 7);
    auto trained = Relu<8>({.dropout = 0.2}) >> Softmax<3>();
    trained.initialize(X);
    testing::randomize_params(trained, 3);
    const auto bytes = to_thinc_bytes(trained);
    AnyModel<Floats2d, Floats2d> any = Relu<8>({.dropout = 0.2}) >> Softmax<3>();
    from_thinc_bytes(any, bytes);
    REQUIRE(any.is_initialized());
    CHECK(testing::same(any.predict(X), trained.predict(X)));
    CHECK(first_difference(to_thinc_bytes(any), bytes) == "");
    auto cfg = config::Config::from_str(
        "[model]\n@layers = \"chain.v1\"\n[model.*.a]\n@layers = \"Relu.v1\"\nnO = 8\ndropout = 0.2\n"
        "[model.*.b]\n@layers = \"Softmax.v1\"\nnO = 3\n");
    auto built = config::build_model<Floats2d, Floats2d>(cfg);
    from_thinc_bytes(built, bytes);
    REQUIRE(built.is_initialized());
    CHECK(testing::same(built.predict(X), trained.predict(X)));
}
