// Configs and the registry (issue 18, items 2 and 3): the Thinc-format reader (sections,
// subsections, positional children, JSON values, interpolation, overrides, and each error with
// its id and path), and models built from configs, which must give what the same model built
// in C++ gives with the same weights (predict, backprop, an Adam step).
#include <catch2/catch.hpp>
#include <algorithm>
#include <ctime>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "support/error_id.hpp"
#include "tenon/config/config.hpp"
#include "tenon/config/registry.hpp"
#include "tenon/tenon.hpp"
#include "unit/helpers.hpp"

using namespace tenon;
using namespace tenon::config;
using Catch::Matchers::Contains;
using tenon::test::error_id;
using tenon::test::error_message;

namespace {
using Any2d = AnyModel<Floats2d, Floats2d>;

// The nodes that hold parameters, depth first (walk() is breadth first, as Thinc's, and a
// built model has more levels than the same model written in C++: any(...), the DynChain).
void collect(Node& n, std::vector<Node*>& out) {
    bool any = false;
    for (const auto& p : n.param_names()) any = any || n.has_param(p);
    if (any) out.push_back(&n);
    n.for_each_child([&](Node& c) { collect(c, out); });
}
std::vector<Node*> param_nodes(Node& m) {
    std::vector<Node*> out;
    collect(m, out);
    return out;
}
// Every parameter's gradient, depth first.
std::vector<std::vector<float>> grads_dfs(Node& m) {
    std::vector<std::vector<float>> out;
    for (Node* n : param_nodes(m))
        for (const auto& p : n->param_names())
            if (n->has_param(p)) {
                auto g = n->get_grad(p);
                out.emplace_back(g.begin(), g.end());
            }
    return out;
}
// Copies every parameter of `from` into `to` (the same layers in the same order).
void copy_params(Node& from, Node& to) {
    auto a = param_nodes(from), b = param_nodes(to);
    REQUIRE(a.size() == b.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
        REQUIRE(a[i]->name() == b[i]->name());
        for (const auto& p : a[i]->param_names())
            if (a[i]->has_param(p)) b[i]->set_param(p, a[i]->get_param(p));
    }
}

Floats2d inputs(std::size_t rows, std::size_t cols, float scale = 1.0f) {
    Floats2d X({rows, cols});
    for (std::size_t i = 0; i < rows; ++i)
        for (std::size_t j = 0; j < cols; ++j) X(i, j) = scale * static_cast<float>((i * 7 + j * 3) % 11) / 11.0f - 0.4f;
    return X;
}

bool close(const Floats2d& a, const Floats2d& b, float tol = 1e-6f) {
    if (a.shape() != b.shape()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (std::abs(a.data()[i] - b.data()[i]) > tol) return false;
    return true;
}

const char* mlp_cfg = R"(
# An MLP: chain.v1 with three positional children.
[vars]
width = 16

[model]
@layers = "chain.v1"

[model.*.hidden]
@layers = "Relu.v1"
nO = ${vars.width}
dropout = 0.0

[model.*.hidden2]
@layers = "Relu.v1"
nO = ${vars.width}
normalize = false

[model.*.output]
@layers = "Softmax.v1"
nO = 4
)";
}  // namespace

// ---- the reader ---------------------------------------------------------------------------

TEST_CASE("config: sections, subsections, JSON values, positional children", "[config]") {
    const Config c = Config::from_str(R"(
[training]
seed = 0
rate = 0.001
name = "run"
plain = hello world
flag = true
nothing = null
sizes = [1, 2,
    3]

[model]
@layers = "chain.v1"

[model.*.a]
@layers = "Relu.v1"

[model.*.b]
@layers = "Softmax.v1"

[model.tok2vec]
width = 96
)");
    CHECK(c.at("training.seed").is_int());
    CHECK(c.at("training.seed").as_int() == 0);
    CHECK(c.at("training.rate").kind() == Value::Kind::number);
    CHECK(c.at("training.rate").as_number() == Approx(0.001));
    CHECK(c.at("training.name").as_string() == "run");
    CHECK(c.at("training.plain").as_string() == "hello world");  // not JSON: a string, as Thinc
    CHECK(c.at("training.flag").as_bool());
    CHECK(c.at("training.nothing").is_null());
    REQUIRE(c.at("training.sizes").is_list());
    CHECK(c.at("training.sizes").as_list().size() == 3);  // a continuation line
    CHECK(c.at("training.sizes").as_list()[2].as_int() == 3);
    CHECK(c.at("model.@layers").as_string() == "chain.v1");
    CHECK(c.at("model.tok2vec.width").as_int() == 96);
    const Section& star = c.at("model.*").as_section();
    REQUIRE(star.size() == 2);
    CHECK(star[0].first == "a");  // in the order of the file
    CHECK(star[1].first == "b");
    CHECK(c.find("model.nope") == nullptr);
    // to_str reads back to the same config.
    CHECK(Config::from_str(c.to_str()).root() == c.root());
}

TEST_CASE("config: interpolation", "[config]") {
    const Config c = Config::from_str(R"(
[vars]
width = 128
name = "tok"
drop = 0.1

[block]
nO = 3
nI = ${vars.width}

[model]
width = ${vars.width}
label = "${vars.name}-${vars.width}"
plain = run-${vars.name}
sizes = [${vars.width}, 2]
rate = ${vars.drop}
copy = ${block}
)");
    CHECK(c.at("model.width").is_int());  // the whole value: typed
    CHECK(c.at("model.width").as_int() == 128);
    CHECK(c.at("model.label").as_string() == "tok-128");
    CHECK(c.at("model.plain").as_string() == "run-tok");
    CHECK(c.at("model.sizes").as_list()[0].as_int() == 128);
    CHECK(c.at("model.rate").as_number() == Approx(0.1));
    REQUIRE(c.at("model.copy").is_section());  // a whole section
    CHECK(c.at("model.copy.nO").as_int() == 3);
    CHECK(c.at("model.copy.nI").as_int() == 128);
}

TEST_CASE("config: $$ is a $ (Thinc's escape), and to_str writes every $ so", "[config]") {
    const Config c = Config::from_str("[a]\ny = 1\nx = \"cost $${a.y}, ${a.y} and $$5\"\nplain = $$HOME\nsolo = 5$\n");
    CHECK(c.at("a.x").as_string() == "cost ${a.y}, 1 and $5");
    CHECK(c.at("a.plain").as_string() == "$HOME");
    CHECK(c.at("a.solo").as_string() == "5$");
    const std::string text = c.to_str();
    CHECK_THAT(text, Contains("x = \"cost $${a.y}, 1 and $$5\""));
    CHECK(Config::from_str(text).root() == c.root());
    // A string holding "${...}" (as a value built in code) reads back as that string.
    const Config built(Value(Section{{"a", Value(Section{{"y", Value(2)}, {"x", Value("cost ${a.y}")},
                                                         {"l", Value(ValueList{Value("$"), Value("${a.y}")})}})}}));
    CHECK(Config::from_str(built.to_str()).root() == built.root());
}

TEST_CASE("config: to_str reads back equal, or refuses what a config file cannot hold", "[config][errors]") {
    const auto refused = [](Value root) {
        const Config c(std::move(root));
        return error_message([&] { (void)c.to_str(); });
    };
    const auto in_a = [](const char* key, Value v) { return Value(Section{{"a", Value(Section{{key, std::move(v)}})}}); };
    CHECK_THAT(refused(in_a("x=y", Value(1))), Contains("tenon-E330") && Contains("[a] x=y: the key holds '='"));
    CHECK_THAT(refused(in_a(" x", Value(1))), Contains("tenon-E330") && Contains("blank"));
    CHECK_THAT(refused(in_a("", Value(1))), Contains("tenon-E330") && Contains("empty"));
    CHECK_THAT(refused(in_a("#x", Value(1))), Contains("tenon-E330") && Contains("comment"));
    CHECK_THAT(refused(in_a("x\ny", Value(1))), Contains("tenon-E330") && Contains("line break"));
    CHECK_THAT(refused(in_a("x", Value(std::nan("")))), Contains("tenon-E330") && Contains("[a] x: the number nan"));
    CHECK_THAT(refused(in_a("x", Value(ValueList{Value(1), Value(-HUGE_VAL)}))), Contains("tenon-E330") && Contains("inf"));
    CHECK_THAT(refused(Value(Section{{"a.b", Value(Section{})}})), Contains("tenon-E330") && Contains("'.'"));
    CHECK_THAT(refused(in_a("sub.part", Value(Section{}))), Contains("tenon-E330") && Contains("section [a.sub.part]"));
    CHECK_THAT(refused(Value(Section{{"top", Value(1)}})), Contains("tenon-E330") && Contains("only in sections"));
    CHECK_THAT(refused(Value(Section{{"a", Value(Section{{"x", Value(1)}, {"x", Value(2)}})}})),
               Contains("tenon-E330") && Contains("twice"));
    // What it can write reads back equal: strings that look like other values, empty strings
    // and sections, lists of tables, positional children with values of their own.
    const Config ok(Value(Section{
        {"a", Value(Section{{"s", Value("1")}, {"e", Value("")}, {"t", Value("true")}, {"n", Value()},
                            {"big", Value(1e300)}, {"l", Value(ValueList{Value(Section{{"k", Value(1)}})})},
                            {"empty", Value(Section{})},
                            {"*", Value(Section{{"v", Value(3)}, {"c1", Value(Section{{"w", Value(1)}})}})}})}}));
    CHECK(Config::from_str(ok.to_str()).root() == ok.root());
    // An empty positional section is written (its header alone says it); a table in a list
    // whose key is set twice, a string that is not UTF-8 and values nested too deep are not.
    const Config empty_star(Value(Section{{"m", Value(Section{{"k", Value(1)}, {"*", Value(Section{})}})}}));
    CHECK(Config::from_str(empty_star.to_str()).root() == empty_star.root());
    CHECK_THAT(refused(in_a("l", Value(ValueList{Value(Section{{"p", Value(1)}, {"p", Value(2)}})}))),
               Contains("tenon-E330") && Contains("key 'p' is set twice"));
    const Config latin1 = Config::from_str("[a]\nx = caf\xe9\n");
    CHECK_THAT(error_message([&] { (void)latin1.to_str(); }), Contains("tenon-E330") && Contains("UTF-8"));
    CHECK(latin1.at("a.x").dump().find("caf") != std::string::npos);  // (shown, not thrown)
    Value deep(1);
    for (int i = 0; i < 300; ++i) deep = Value(ValueList{std::move(deep)});
    CHECK_THAT(refused(in_a("x", std::move(deep))), Contains("tenon-E330") && Contains("nested"));
    // A JSON string that ends in an escaped backslash, then an interpolation (Thinc reads it).
    const Config escaped = Config::from_str("[s]\ny = \"q\"\n[a]\nx = [\"a\\\\\", \"${s.y}\"]\n");
    REQUIRE(escaped.at("a.x").as_list().size() == 2);
    CHECK(escaped.at("a.x").as_list()[0].as_string() == "a\\");
    CHECK(escaped.at("a.x").as_list()[1].as_string() == "q");
    // A number JSON would read but a double cannot hold is an error, not the string "1e400".
    CHECK_THAT(error_message([] { (void)Config::from_str("[a]\nx = 1e400\n"); }),
               Contains("tenon-E301") && Contains("[a] x: 1e400 is a number beyond the range of a double"));
    CHECK(Config::from_str("[a]\nx = 1e-400\n").at("a.x").as_number() == 0.0);
}

TEST_CASE("config: overrides replace values before interpolation", "[config]") {
    const Config c = Config::from_str(mlp_cfg, {{"vars.width", "32"}, {"--model.*.output.nO", "7"}});
    CHECK(c.at("vars.width").as_int() == 32);
    CHECK(c.at("model.*.hidden.nO").as_int() == 32);  // ${vars.width} sees the override
    CHECK(c.at("model.*.output.nO").as_int() == 7);

    const char* argv[] = {"prog", "--vars.width", "64", "train.cfg", "--model.*.output.nO=5"};
    const Overrides o = overrides_from_args(5, argv);
    REQUIRE(o.size() == 2);
    CHECK(o[0] == std::pair<std::string, std::string>{"vars.width", "64"});
    CHECK(o[1] == std::pair<std::string, std::string>{"model.*.output.nO", "5"});
    const Config d = Config::from_str(mlp_cfg, o);
    CHECK(d.at("model.*.hidden2.nO").as_int() == 64);
    CHECK(d.at("model.*.output.nO").as_int() == 5);
}

TEST_CASE("config: every error of the reader has its id and names the place", "[config][errors]") {
    CHECK(error_id([] { Config::from_str("[model\nx = 1"); }) == "tenon-E300");
    CHECK(error_id([] { Config::from_str("[model]\njust words"); }) == "tenon-E300");
    CHECK(error_id([] { Config::from_str("x = 1\n[model]"); }) == "tenon-E300");
    CHECK(error_id([] { Config::from_str("[model..a]"); }) == "tenon-E300");
    CHECK_THAT(error_message([] { Config::from_str("[model]\nsizes = [1, 2"); }),
               Contains("tenon-E301") && Contains("[model] sizes: not a valid JSON value: [1, 2"));
    CHECK(error_id([] { Config::from_str("[model]\nname = \"abc"); }) == "tenon-E301");
    CHECK_THAT(error_message([] { Config::from_str("[a]\n[b]\n[a]"); }), Contains("tenon-E302") && Contains("[a]"));
    CHECK_THAT(error_message([] { Config::from_str("[a]\nx = 1\nx = 2"); }),
               Contains("tenon-E302") && Contains("[a] x is set twice"));
    CHECK_THAT(error_message([] { Config::from_str("[model]\n[model.tok2vec.embed]\nx = 1"); }),
               Contains("tenon-E303") && Contains("[model.tok2vec]"));
    CHECK_THAT(error_message([] { Config::from_str("[model]\nwidth = ${vars.width}"); }),
               Contains("tenon-E304") && Contains("[model] width") && Contains("${vars.width}"));
    CHECK(error_id([] { Config::from_str("[a]\nx = \"${b}-1\"\n[b]\ny = 1"); }) == "tenon-E304");  // section in text
    CHECK(error_id([] { Config::from_str("[a]\nx = ${a.y}\ny = ${a.x}"); }) == "tenon-E305");
    CHECK(error_id([] { Config::from_str("[a]\nx = ${a}"); }) == "tenon-E305");
    CHECK_THAT(error_message([] { Config::from_str(mlp_cfg, {{"model.*.hiden.nO", "3"}}); }),
               Contains("tenon-E306") && Contains("[model.*.hiden]"));
    CHECK_THAT(error_message([] { Config::from_str(mlp_cfg, {{"vars.depth", "3"}}); }),
               Contains("tenon-E306") && Contains("[vars] has no key depth"));
    CHECK(error_id([] { Config::from_str(mlp_cfg, {{"width", "3"}}); }) == "tenon-E306");
    CHECK(error_id([] { Config::from_str(mlp_cfg, {{"vars.width", "[3"}}); }) == "tenon-E301");
    CHECK(error_id([] {
              const char* argv[] = {"prog", "--vars.width"};
              overrides_from_args(2, argv);
          }) == "tenon-E306");
    CHECK(error_id([] { Config::from_str("[a]\nb = 1\n[a.b]\nc = 2"); }) == "tenon-E307");
    CHECK(error_id([] { Config::from_str("[a]\nb = 1\n[a.b.c]\nc = 2"); }) == "tenon-E307");
    CHECK(error_id([] { Config::from_disk("/nonexistent/tenon.cfg"); }) == "tenon-E308");
    CHECK_THAT(error_message([] { Config::from_str(mlp_cfg).at("model.*.hiden.nO"); }),
               Contains("tenon-E309") && Contains("model.*"));
    CHECK(error_id([] { Config::from_str(mlp_cfg).at("nope"); }) == "tenon-E309");
    // An option followed by another option has no value (it took "--c.width" as its value).
    CHECK_THAT(error_message([] {
                   const char* argv[] = {"prog", "--a.name", "--c.width", "5"};
                   overrides_from_args(4, argv);
               }),
               Contains("tenon-E306") && Contains("--a.name=VALUE"));
    // Nesting past any real config is an error, not a stack overflow.
    CHECK(error_id([] {
              Config::from_str("[a]\nx = " + std::string(30000, '[') + std::string(30000, ']') + "\n");
          }) == "tenon-E301");
    std::string deep_name = "a";
    for (int i = 0; i < 300; ++i) deep_name += ".b";
    CHECK(error_id([&] { Config::from_str("[" + deep_name + "]\nx = 1\n"); }) == "tenon-E300");
}

TEST_CASE("config: models nested deeper than any real one are refused, not a stack overflow", "[config][errors]") {
    std::string text, path = "model";
    for (int i = 0; i < 250; ++i) {
        text += "[" + path + "]\n@layers = \"residual.v1\"\n";
        path += ".layer";
    }
    text += "[" + path + "]\n@layers = \"Relu.v1\"\nnO = 4\n";
    CHECK_THAT(error_message([&] { (void)build(Config::from_str(text), "model"); }),
               Contains("tenon-E313") && Contains("nested more than 200 levels"));
}

// The reader's cost is about linear in the text (docs/configs.md, "The reader's cost"): a
// section of 100k keys, and a chain of 10k references each to the one before, read in a time
// about proportional to their size. A quadratic reader (each key compared with every key
// before it, each ${...} looked up by a scan of its section) took 16 times as long for 4
// times the keys, and minutes for 100k.
TEST_CASE("config: a section of 100k keys and a chain of 10k references read in near-linear time", "[config]") {
    // The best of three readings, in seconds of this process's CPU time (the machine may be
    // busy with other work: that is not counted).
    auto seconds = [](const std::string& text) {
        double best = 1e9;
        for (int k = 0; k < 3; ++k) {
            const std::clock_t t0 = std::clock();
            const Config cfg = Config::from_str(text);
            best = std::min(best, static_cast<double>(std::clock() - t0) / CLOCKS_PER_SEC);
            CHECK(cfg.sections().size() == 1);
        }
        return best;
    };
    auto keys = [](std::size_t n) {
        std::string t = "[s]\n";
        for (std::size_t i = 0; i < n; ++i) {
            const std::string v = std::to_string(i);
            t += "key";
            t += v;
            t += " = ";
            t += v;
            t += '\n';
        }
        return t;
    };
    // k0 = 1, k1 = ${s.k0}, ...: each resolved once (whole values: typed, 1 at the end)
    auto chain = [](std::size_t n, bool backwards) {
        std::string t = "[s]\n";
        for (std::size_t i = 0; i < n; ++i) {
            const std::size_t j = backwards ? n - 1 - i : i;  // backwards: k0 = ${s.k1}, ... (depth n)
            // (appended piece by piece: "k" + std::to_string(j) draws GCC 12's false -Wrestrict)
            t += 'k';
            t += std::to_string(j);
            t += " = ";
            if (i == 0) {
                t += "1\n";
            } else {
                t += "${s.k";
                t += std::to_string(backwards ? j + 1 : j - 1);
                t += "}\n";
            }
        }
        return t;
    };
    {
        const double small = seconds(keys(25000)), big = seconds(keys(100000));
        INFO("25k keys: " << small << " s, 100k keys: " << big << " s");
        CHECK(big < 5.0);
        CHECK(big / std::max(small, 0.005) < 12.0);  // (linear: 4; measured about 6; quadratic: 16)
        const Config cfg = Config::from_str(keys(100000));
        CHECK(cfg.at("s.key99999").as_int() == 99999);
        CHECK(cfg.at("s").as_section().size() == 100000);
    }
    {
        const double small = seconds(chain(2500, false)), big = seconds(chain(10000, false));
        INFO("a chain of 2.5k references: " << small << " s, of 10k: " << big << " s");
        CHECK(big < 5.0);
        CHECK(big / std::max(small, 0.005) < 12.0);  // (linear: 4; measured about 6; quadratic: 16)
        const Config cfg = Config::from_str(chain(10000, false));
        CHECK(cfg.at("s.k9999").as_int() == 1);
        // The same chain written the other way round: each resolved when the first is, 10k deep.
        const Config back = Config::from_str(chain(10000, true));
        CHECK(back.at("s.k0").as_int() == 1);
        CHECK(back.at("s.k5000").as_int() == 1);
    }
}

TEST_CASE("config: a byte order mark is read past; Maxout's nP and MultiHashEmbed's attrs say what they need", "[config][errors]") {
    const Config bom = Config::from_str("\xEF\xBB\xBF[model]\n@layers = \"Relu.v1\"\nnO = 4\n");
    CHECK_NOTHROW(build(bom));
    CHECK_THAT(error_message([] { (void)build(Config::from_str("[model]\n@layers = \"Maxout.v1\"\nnO = 4\nnP = -1\n")); }),
               Contains("tenon-E314") && Contains("nP: expected a positive integer (the pieces), found -1"));
    CHECK_THAT(error_message([] {
                   (void)build(Config::from_str("[model]\n@architectures = \"spacy.MultiHashEmbed.v2\"\nwidth = 8\n"
                                                "attrs = []\nrows = []\ninclude_static_vectors = false\n"));
               }),
               Contains("tenon-E314") && Contains("attrs: no attrs"));
}

TEST_CASE("config: a float argument beyond a float's range, and codegen's namespace", "[config][errors]") {
    if (!layers().has("test.FloatArg.v1"))
        layers().add("test.FloatArg.v1", [](Args& a) {
            const float t = a.get<float>("temperature");
            return Softmax<>({.nO = 3, .temperature = t});
        });
    CHECK_THAT(error_message([] {
                   (void)build(Config::from_str("[model]\n@layers = \"test.FloatArg.v1\"\ntemperature = 1e300\n"));
               }),
               Contains("tenon-E314") && Contains("[model] temperature: 1e+300 is out of range"));
    CHECK_NOTHROW(build(Config::from_str("[model]\n@layers = \"test.FloatArg.v1\"\ntemperature = 2.5\n")));
    const auto ok = Config::from_str(mlp_cfg);
    for (const char* ns : {"class", "std", "tenon", "__x"})
        CHECK(error_id([&] { (void)codegen(ok, "model", ns); }) == "tenon-E328");
}

// ---- building models ----------------------------------------------------------------------

TEST_CASE("registry: an MLP from a config gives what the same C++ model gives", "[config][registry]") {
    const Config c = Config::from_str(mlp_cfg);
    Any2d built = build_model<Floats2d, Floats2d>(c);
    CHECK(built.model().name() == "relu>>relu>>softmax");
    auto model = Relu<>({.nO = 16}) >> Relu<>({.nO = 16}) >> Softmax<>({.nO = 4});
    const Floats2d X = inputs(6, 10);
    built.initialize(X);
    model.initialize(X);
    CHECK(built.get_dim("nO") == 4);
    CHECK(built.get_dim("nI") == 10);
    copy_params(model, built);

    CHECK(close(built.predict(X), model.predict(X)));
    // Training: the same backprop and the same Adam steps.
    Optimizer o1 = Adam(0.01), o2 = Adam(0.01);
    Floats2d Y({6, 4});
    for (std::size_t i = 0; i < 6; ++i) Y(i, i % 4) = 1.0f;
    for (int step = 0; step < 3; ++step) {
        auto [Yh1, bp1] = built.begin_update(X);
        auto [Yh2, bp2] = model.begin_update(X);
        REQUIRE(close(Yh1, Yh2));
        Floats2d d1({6, 4}), d2({6, 4});
        for (std::size_t i = 0; i < Yh1.size(); ++i) {
            d1.data()[i] = Yh1.data()[i] - Y.data()[i];
            d2.data()[i] = Yh2.data()[i] - Y.data()[i];
        }
        CHECK(close(bp1(d1), bp2(d2)));
        built.finish_update(o1);
        model.finish_update(o2);
    }
    CHECK(close(built.predict(X), model.predict(X), 1e-5f));

    // Without a sample: the widths flow from one child to the next (nI given at the top).
    const Config d = Config::from_str(mlp_cfg, {{"model.*.hidden.nO", "8"}});
    Any2d shaped = build_model<Floats2d, Floats2d>(d);
    shaped.model().set_dim("nI", 10);
    shaped.initialize();
    CHECK(param_nodes(shaped)[1]->get_dim("nI") == 8);
    CHECK(shaped.predict(X).shape() == std::array<std::size_t, 2>{6, 4});
}

TEST_CASE("registry: the same seed gives the same weights as the C++ model", "[config][registry]") {
    const Floats2d X = inputs(5, 6);
    fix_random_seed(7);
    Any2d built = build_model<Floats2d, Floats2d>(Config::from_str(mlp_cfg));
    built.initialize(X);
    fix_random_seed(7);
    auto model = Relu<>({.nO = 16}) >> Relu<>({.nO = 16}) >> Softmax<>({.nO = 4});
    model.initialize(X);
    CHECK(testing::all_params(built) == testing::all_params(model));
    CHECK(close(built.predict(X), model.predict(X)));
}

TEST_CASE("registry: combinators and the layers each build what their C++ form builds", "[config][registry]") {
    const Floats2d X = inputs(4, 6);
    auto check_same = [&](const std::string& cfg, auto model) {
        INFO(cfg);
        Any2d built = build_model<Floats2d, Floats2d>(Config::from_str(cfg));
        built.initialize(X);
        model.initialize(X);
        copy_params(model, built);
        CHECK(close(built.predict(X), model.predict(X)));
        auto [Y1, bp1] = built.begin_update(X);
        auto [Y2, bp2] = model.begin_update(X);
        CHECK(close(bp1(Y1), bp2(Y2)));
    };
    check_same("[model]\n@layers = \"Maxout.v1\"\nnO = 5\nnP = 2\nnormalize = true", Maxout<>({.nO = 5, .nP = 2, .normalize = true}));
    check_same("[model]\n@layers = \"Mish.v1\"\nnO = 5", Mish<>({.nO = 5}));
    check_same("[model]\n@layers = \"Linear.v1\"\nnO = 3", Linear<>({.nO = 3}));
    check_same("[model]\n@layers = \"Sigmoid.v1\"\nnO = 3", Sigmoid<>({.nO = 3}));
    check_same("[model]\n@layers = \"LayerNorm.v1\"", LayerNorm<>());
    check_same("[model]\n@layers = \"Dropout.v1\"\nrate = 0.0", Dropout(0.0));
    check_same("[model]\n@layers = \"residual.v1\"\n[model.layer]\n@layers = \"Relu.v1\"\nnO = 6",
               residual(Any2d(Relu<>({.nO = 6}))));
    check_same("[model]\n@layers = \"clone.v1\"\nn = 2\n[model.orig]\n@layers = \"Relu.v1\"\nnO = 6",
               clone(Any2d(Relu<>({.nO = 6})), 2));
    check_same("[model]\n@layers = \"concatenate.v1\"\n[model.*.a]\n@layers = \"Relu.v1\"\nnO = 3\n"
               "[model.*.b]\n@layers = \"Mish.v1\"\nnO = 2",
               concatenate(Any2d(Relu<>({.nO = 3})), Any2d(Mish<>({.nO = 2}))));
    check_same("[model]\n@layers = \"add.v1\"\n[model.*.a]\n@layers = \"Relu.v1\"\nnO = 3\n"
               "[model.*.b]\n@layers = \"Linear.v1\"\nnO = 3",
               add(Any2d(Relu<>({.nO = 3})), Any2d(Linear<>({.nO = 3}))));
    // A chain inside a chain is flattened; [model.layers.*.x] children are a list argument.
    Any2d nested = build_model<Floats2d, Floats2d>(Config::from_str(
        "[model]\n@layers = \"chain.v1\"\n[model.*.a]\n@layers = \"chain.v1\"\n[model.*.a.*.x]\n@layers = \"Relu.v1\"\n"
        "nO = 3\n[model.*.a.*.y]\n@layers = \"Relu.v1\"\nnO = 3\n[model.*.b]\n@layers = \"Softmax.v1\"\nnO = 2"));
    CHECK(nested.model().name() == "relu>>relu>>softmax");
    CHECK(nested.initialize(X).predict(X).shape() == std::array<std::size_t, 2>{4, 2});
}

TEST_CASE("registry: swapping a sublayer in the config changes the model", "[config][registry]") {
    Any2d relu = build_model<Floats2d, Floats2d>(Config::from_str(mlp_cfg));
    Any2d mish = build_model<Floats2d, Floats2d>(Config::from_str(mlp_cfg, {{"model.*.hidden.@layers", "\"Mish.v1\""}}));
    CHECK(relu.model().name() == "relu>>relu>>softmax");
    CHECK(mish.model().name() == "mish>>relu>>softmax");
    Any2d maxout = build_model<Floats2d, Floats2d>(Config::from_str(
        "[model]\n@layers = \"chain.v1\"\n[model.*.hidden]\n@layers = \"Maxout.v1\"\nnO = 8\n"
        "[model.*.output]\n@layers = \"Softmax.v1\"\nnO = 4"));
    CHECK(maxout.model().name() == "maxout>>softmax");
    const Floats2d X = inputs(3, 5);
    CHECK(maxout.initialize(X).predict(X).shape() == std::array<std::size_t, 2>{3, 4});
}

TEST_CASE("registry: sequence layers and a chain whose children's types do not fit", "[config][registry][errors]") {
    // List[Floats2d] -> Ragged -> Floats2d: list2ragged, then reduce_mean.
    AnyModel<List<Floats2d>, Floats2d> pooled = build_model<List<Floats2d>, Floats2d>(Config::from_str(
        "[model]\n@layers = \"chain.v1\"\n[model.*.a]\n@layers = \"list2ragged.v1\"\n[model.*.b]\n"
        "@layers = \"reduce_mean.v1\"\n[model.*.c]\n@layers = \"Softmax.v1\"\nnO = 2"));
    List<Floats2d> docs;
    docs.push_back(inputs(3, 4));
    docs.push_back(inputs(2, 4, 0.5f));
    pooled.initialize(docs);
    CHECK(pooled.predict(docs).shape() == std::array<std::size_t, 2>{2, 2});
    auto [Y, bp] = pooled.begin_update(docs);
    const List<Floats2d> dX = bp(Y);
    REQUIRE(dX.size() == 2);
    CHECK(dX[1].shape() == std::array<std::size_t, 2>{2, 4});

    const std::string msg = error_message([] {
        build(Config::from_str("[model]\n@layers = \"chain.v1\"\n[model.*.a]\n@layers = \"list2ragged.v1\"\n"
                               "[model.*.b]\n@layers = \"ragged2list.v1\"\n[model.*.c]\n@layers = \"Relu.v1\""));
    });
    CHECK_THAT(msg, Contains("tenon-E315") && Contains("[model.*.b]") && Contains("[model.*.c]") &&
                        Contains("outputs List[Floats2d], the next") && Contains("expects Floats2d"));
    CHECK_THAT(error_message([] {
                   build(Config::from_str("[model]\n@layers = \"chain.v1\"\n[model.*.a]\n@layers = \"Relu.v1\"\n"
                                          "[model.*.b]\n@layers = \"reduce_sum.v1\""));
               }),
               Contains("tenon-E315") && Contains("outputs Floats2d, the next, [model.*.b] (reduce_sum") &&
                   Contains("expects Ragged"));
    // The program asks for another signature than the config's model has.
    CHECK_THAT(error_message([] { build_model<Floats2d, Floats2d>(Config::from_str("[model]\n@layers = \"reduce_max.v1\"")); }),
               Contains("tenon-E316") && Contains("[model] is a model from Ragged to Floats2d"));
    CHECK(error_id([] {
              build_model<Floats2d, Floats2d>(Config::from_str(
                  "[model]\n@layers = \"chain.v1\"\n[model.*.a]\n@layers = \"list2ragged.v1\"\n[model.*.b]\n"
                  "@layers = \"reduce_mean.v1\""));
          }) == "tenon-E316");
    // A combinator of this slice over another type.
    CHECK_THAT(error_message([] {
                   build(Config::from_str("[model]\n@layers = \"residual.v1\"\n[model.layer]\n@layers = \"ragged2list.v1\""));
               }),
               Contains("tenon-E318") && Contains("[model.layer] maps Ragged to List[Floats2d]"));
}

TEST_CASE("registry: every error of building has its id and names the path", "[config][registry][errors]") {
    auto build_str = [](std::string text) { return [text] { build(Config::from_str(text)); }; };
    CHECK_THAT(error_message(build_str("[model]\n@layers = \"Rleu.v1\"")),
               Contains("tenon-E310") && Contains("Rleu.v1") && Contains("Relu.v1"));
    CHECK_THAT(error_message(build_str("[model]\n@architectures = \"Relu.v1\"")),
               Contains("tenon-E310") && Contains("an @layers name"));
    CHECK_THAT(error_message(build_str("[model]\n@layers = \"clone.v1\"\n[model.orig]\n@layers = \"Relu.v1\"")),
               Contains("tenon-E311") && Contains("[model] n: missing argument of clone.v1"));
    CHECK(error_id(build_str("[model]\n@layers = \"chain.v1\"")) == "tenon-E311");
    CHECK_THAT(error_message(build_str("[model]\n@layers = \"Relu.v1\"\nn0 = 3")),
               Contains("tenon-E312") && Contains("[model] n0: unknown argument of Relu.v1") && Contains("nO"));
    CHECK_THAT(error_message(build_str("[model]\n@layers = \"chain.v1\"\n[model.*.a]\n@layers = \"Relu.v1\"\nwidth = \"abc\"")),
               Contains("tenon-E312") && Contains("[model.*.a] width"));
    CHECK_THAT(error_message(build_str("[model]\n@layers = \"Relu.v1\"\nnO = \"abc\"")),
               Contains("tenon-E313") && Contains("[model] nO: expected a positive integer (a width) or null, found \"abc\""));
    CHECK_THAT(error_message(build_str("[model]\n@layers = \"Relu.v1\"\nnormalize = 1")),
               Contains("tenon-E313") && Contains("[model] normalize: expected true or false, found 1"));
    CHECK_THAT(error_message(build_str("[model]\n@layers = \"Dropout.v1\"\nrate = \"high\"")),
               Contains("tenon-E313") && Contains("[model] rate: expected a number, found \"high\""));
    CHECK_THAT(error_message(build_str("[model]\n@layers = \"clone.v1\"\nn = 2\norig = 3")),
               Contains("tenon-E313") && Contains("[model] orig: expected a model"));
    CHECK_THAT(error_message(build_str("[model]\n@layers = 3")), Contains("tenon-E313"));
    CHECK_THAT(error_message(build_str("[model]\n@layers = \"Relu.v1\"\nnO = 0")),
               Contains("tenon-E314") && Contains("[model] nO"));
    CHECK_THAT(error_message(build_str("[model]\n@layers = \"clone.v1\"\nn = -1\n[model.orig]\n@layers = \"Relu.v1\"")),
               Contains("tenon-E314") && Contains("[model] n: -1 is out of range"));
    CHECK_THAT(error_message(build_str("[model]\nnO = 3")), Contains("tenon-E317") && Contains("[model]"));
    CHECK(error_id(build_str("[model]\n@layers = \"Relu.v1\"\n@architectures = \"Relu.v1\"")) == "tenon-E317");
    CHECK(error_id(build_str("[model]\n@optimizers = \"Adam.v1\"")) == "tenon-E317");
    CHECK(error_id([] { layers().add("Relu.v1", [](Args&) { return Relu<>(); }); }) == "tenon-E319");
    CHECK(error_id([] { build(Config::from_str("[model]\n@layers = \"Relu.v1\""), "nope"); }) == "tenon-E309");
    // A layer's own error gets the config path in front, and keeps its id.
    CHECK_THAT(error_message(build_str("[model]\n@layers = \"Dropout.v1\"\nrate = 1.5")),
               Contains("[model] Dropout.v1: ") && Contains("1.5"));
}

TEST_CASE("registry: a user's own factory, with typed and checked arguments", "[config][registry]") {
    if (!layers().has("test.Mlp.v1"))
        layers().add("test.Mlp.v1", [](Args& a) {
            const auto width = a.get<std::size_t>("width");
            const auto depth = a.get<int>("depth", 1);
            const auto out = a.get<std::size_t>("nO");
            std::vector<DynModel> parts;
            for (int i = 0; i < depth; ++i) parts.emplace_back(Relu<>({.nO = width}));
            parts.emplace_back(Softmax<>({.nO = out}));
            return DynModel::chain(std::move(parts), a.path());
        });
    CHECK(layers().has("test.Mlp.v1"));
    Any2d m = build_model<Floats2d, Floats2d>(
        Config::from_str("[model]\n@layers = \"test.Mlp.v1\"\nwidth = 8\ndepth = 3\nnO = 2"));
    CHECK(m.model().name() == "relu>>relu>>relu>>softmax");
    const Floats2d X = inputs(2, 5);
    CHECK(m.initialize(X).predict(X).shape() == std::array<std::size_t, 2>{2, 2});
    CHECK_THAT(error_message([] { build(Config::from_str("[model]\n@layers = \"test.Mlp.v1\"\nwidth = 8.5\nnO = 2")); }),
               Contains("tenon-E313") && Contains("[model] width: expected an integer, found 8.5"));
    CHECK_THAT(error_message([] { build(Config::from_str("[model]\n@layers = \"test.Mlp.v1\"\nwidth = 8\nnO = 2\ndepht = 2")); }),
               Contains("tenon-E312") && Contains("did you mean depth"));
    // A user's factory in a chain of the built-in ones.
    Any2d mixed = build_model<Floats2d, Floats2d>(Config::from_str(
        "[model]\n@layers = \"chain.v1\"\n[model.*.a]\n@layers = \"Relu.v1\"\nnO = 4\n[model.*.b]\n@layers = \"test.Mlp.v1\"\n"
        "width = 3\nnO = 2"));
    CHECK(mixed.model().name() == "relu>>relu>>softmax");
    // A list of models as an argument: [model.layers.*.a], [model.layers.*.b].
    if (!layers().has("test.Stack.v1"))
        layers().add("test.Stack.v1", Factory([](Args& a) {
                         return DynModel::chain(a.get<std::vector<DynModel>>("layers"), a.path());
                     }));
    Any2d stack = build_model<Floats2d, Floats2d>(Config::from_str(
        "[model]\n@layers = \"test.Stack.v1\"\n[model.layers]\n[model.layers.*.a]\n@layers = \"Mish.v1\"\nnO = 3\n"
        "[model.layers.*.b]\n@layers = \"Softmax.v1\"\nnO = 2"));
    CHECK(stack.model().name() == "mish>>softmax");
    CHECK_THAT(error_message([] {
                   build(Config::from_str("[model]\n@layers = \"test.Stack.v1\"\n[model.layers]\n[model.layers.*.a]\n"
                                          "@layers = \"Mish.v1\"\nnO = \"x\""));
               }),
               Contains("tenon-E313") && Contains("[model.layers.*.a] nO"));
    // An architecture of one's own.
    if (!architectures().has("test.Tiny.v1"))
        architectures().add("test.Tiny.v1", [](Args& a) { return Softmax<>({.nO = a.dim("nO")}); });
    Any2d tiny = build_model<Floats2d, Floats2d>(Config::from_str("[model]\n@architectures = \"test.Tiny.v1\"\nnO = 3"));
    CHECK(tiny.model().name() == "softmax");
}

TEST_CASE("registry: a built model copies deeply and the DynModel copies", "[config][registry]") {
    const Floats2d X = inputs(3, 4);
    DynModel dm = build(Config::from_str(mlp_cfg));
    DynModel twin = dm;
    CHECK(twin.in_name() == "Floats2d");
    CHECK(twin.out_name() == "Floats2d");
    Any2d a = dm.take<Floats2d, Floats2d>();
    CHECK(dm.empty());
    CHECK(error_id([&] { dm.take<Floats2d, Floats2d>(); }) == "tenon-E316");
    a.initialize(X);
    Any2d b = a;  // a copy of the DynChain: new nodes, the same weights
    CHECK(close(a.predict(X), b.predict(X)));
    Optimizer opt = Adam(0.1);
    auto [Y, bp] = a.begin_update(X);
    bp(inputs(3, 4, 2.0f));  // a gradient that differs between the classes
    a.finish_update(opt);
    CHECK_FALSE(close(a.predict(X), b.predict(X)));
}

TEST_CASE("registry: examples/configs/mlp.cfg", "[config][registry]") {
    const Config c = Config::from_disk(TENON_SOURCE_DIR "/examples/configs/mlp.cfg", {{"model.*.hidden1.nO", "32"}});
    Any2d m = build_model<Floats2d, Floats2d>(c);
    CHECK(m.model().name() == "relu>>relu>>softmax");
    const Floats2d X = inputs(4, 784 / 16);
    m.initialize(X);
    CHECK(param_nodes(m)[0]->get_dim("nO") == 32);
    CHECK(m.predict(X).shape() == std::array<std::size_t, 2>{4, 10});
}

namespace {
const char* tagger_cfg = R"(
[model]
@architectures = "spacy.Tagger.v2"
nO = 5

[model.tok2vec]
@architectures = "spacy.Tok2Vec.v2"

[model.tok2vec.embed]
@architectures = "spacy.MultiHashEmbed.v2"
width = ${model.tok2vec.encode.width}
attrs = ["NORM", "PREFIX", "SUFFIX", "SHAPE"]
rows = [500, 100, 250, 250]
include_static_vectors = false

[model.tok2vec.encode]
@architectures = "spacy.MaxoutWindowEncoder.v2"
width = 16
window_size = 1
maxout_pieces = 3
depth = 2
)";

List<Ints2d> token_ids() {
    List<Ints2d> docs;
    for (std::size_t n : {3u, 1u, 5u}) {
        Ints2d d({n, 4});
        for (std::size_t i = 0; i < n; ++i)
            for (std::size_t j = 0; j < 4; ++j) d(i, j) = static_cast<std::int32_t>((i * 31 + j * 17 + n * 7) % 997);
        docs.push_back(std::move(d));
    }
    return docs;
}

// Gradients to rounding: the C++ model runs its fused plan, which sums a residual's
// gradient in another order than the built model's layers (docs/lowering.md).
bool close_grads(const std::vector<std::vector<float>>& a, const std::vector<std::vector<float>>& b,
                 float tol = 1e-5f) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
        if (a[i].size() != b[i].size()) return false;
        for (std::size_t j = 0; j < a[i].size(); ++j)
            if (std::abs(a[i][j] - b[i][j]) > tol * std::max(1.0f, std::abs(b[i][j]))) return false;
    }
    return true;
}
bool close_lists(const List<Floats2d>& a, const List<Floats2d>& b, float tol = 1e-6f) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (!close(a[i], b[i], tol)) return false;
    return true;
}
}  // namespace

TEST_CASE("registry: spaCy's Tagger.v2 over Tok2Vec.v2 gives what the same C++ model gives", "[config][registry]") {
    // (Its own seed: the weights it starts from must not depend on which tests ran before it;
    // two Adam(0.05) steps compared at 1e-5 are sensitive to them.)
    fix_random_seed(0);
    using Tagger = AnyModel<List<Ints2d>, List<Floats2d>>;
    Tagger built = build_model<List<Ints2d>, List<Floats2d>>(Config::from_str(tagger_cfg));
    const MaxoutOptions mx{.nO = 16, .nI = dyn, .nP = 3, .init_W = {}, .init_b = {}, .dropout = 0.0, .normalize = true};
    auto embed = list2ragged<Ints2d>() >>
                 with_array<BasicRagged<Ints2d>>(concatenate(HashEmbed<16>(500, 8u, 0, 0.0), HashEmbed<16>(100, 9u, 1, 0.0),
                                                             HashEmbed<16>(250, 10u, 2, 0.0), HashEmbed<16>(250, 11u, 3, 0.0))) >>
                 with_array<Ragged>(Maxout<>(mx)) >> ragged2list();
    auto encode = with_array<List<Floats2d>>(clone(residual(expand_window(1) >> Maxout<>(mx)), 2), 2);
    auto model = embed >> encode >> with_array<List<Floats2d>>(Softmax<>({.nO = 5, .normalize_outputs = false}));

    const List<Ints2d> X = token_ids();
    built.initialize(X);
    model.initialize(X);
    copy_params(model, built);
    // The seeds are attributes, set as spaCy sets them.
    std::vector<std::int64_t> seeds;
    for (Node* n : param_nodes(built))
        if (n->name() == "hashembed") seeds.push_back(n->attr_as<std::int64_t>("seed"));
    CHECK(seeds == std::vector<std::int64_t>{8, 9, 10, 11});

    CHECK(close_lists(built.predict(X), model.predict(X)));
    Optimizer o1 = Adam(0.05), o2 = Adam(0.05);
    for (int step = 0; step < 2; ++step) {
        auto [Y1, bp1] = built.begin_update(X);
        auto [Y2, bp2] = model.begin_update(X);
        REQUIRE(close_lists(Y1, Y2));
        List<Floats2d> d;
        for (const auto& y : Y1) d.push_back(inputs(y.shape()[0], y.shape()[1], 2.0f));
        bp1(d);
        bp2(d);
        CHECK(close_grads(grads_dfs(built), grads_dfs(model)));
        built.finish_update(o1);
        model.finish_update(o2);
    }
    CHECK(close_lists(built.predict(X), model.predict(X), 1e-5f));

    // Swapping the encoder's depth or the embedding's tables in the config changes the model.
    Tagger deeper = build_model<List<Ints2d>, List<Floats2d>>(
        Config::from_str(tagger_cfg, {{"model.tok2vec.encode.depth", "3"}}));
    auto maxouts = [](Node& m) {
        std::size_t n = 0;
        for (Node* x : m.walk()) n += x->name() == "maxout";
        return n;
    };
    CHECK(maxouts(built) == 3);
    CHECK(maxouts(deeper) == 4);  // one more encoder block
    CHECK_THAT(error_message([] { build(Config::from_str(tagger_cfg, {{"model.tok2vec.embed.rows", "[500, 100]"}})); }),
               Contains("tenon-E314") && Contains("[model.tok2vec.embed] rows: one row count per attr"));
    CHECK_THAT(error_message([] {
                   build(Config::from_str(tagger_cfg, {{"model.tok2vec.embed.include_static_vectors", "true"}}));
               }),
               Contains("tenon-E318"));
    // The tok2vec alone: List[Ints2d] -> List[Floats2d] of width 16.
    AnyModel<List<Ints2d>, List<Floats2d>> t2v =
        build_model<List<Ints2d>, List<Floats2d>>(Config::from_str(tagger_cfg), "model.tok2vec");
    CHECK(t2v.initialize(X).predict(X)[2].shape() == std::array<std::size_t, 2>{5, 16});
}

TEST_CASE("registry: with_array.v1 and expand_window.v1 take the data type of the model before them", "[config][registry]") {
    const char* cfg = R"(
[model]
@layers = "chain.v1"

[model.*.a]
@layers = "list2ragged.v1"

[model.*.b]
@layers = "with_array.v1"

[model.*.b.layer]
@layers = "Relu.v1"
nO = 3

[model.*.c]
@layers = "ragged2list.v1"
)";
    using AnyList = AnyModel<List<Floats2d>, List<Floats2d>>;
    AnyList built = build_model<List<Floats2d>, List<Floats2d>>(Config::from_str(cfg));
    auto model = list2ragged() >> with_array<Ragged>(Relu<>({.nO = 3})) >> ragged2list();
    List<Floats2d> X;
    X.push_back(inputs(3, 5));
    X.push_back(inputs(2, 5, 0.5f));
    built.initialize(X);
    model.initialize(X);
    copy_params(model, built);
    CHECK(close_lists(built.predict(X), model.predict(X)));
    auto [Y1, bp1] = built.begin_update(X);
    auto [Y2, bp2] = model.begin_update(X);
    CHECK(close_lists(bp1(Y1), bp2(Y2)));
    CHECK(close_grads(grads_dfs(built), grads_dfs(model)));

    // Alone, with_array.v1 is the form the program asks for.
    const char* wrap = "[model]\n@layers = \"with_array.v1\"\npad = 1\n[model.layer]\n@layers = \"Relu.v1\"\nnO = 3";
    DynModel dm = build(Config::from_str(wrap));
    CHECK(dm.in_name() == "List[Floats2d] | Ragged | Padded | Floats2d");
    CHECK(dm.is<Ragged, Ragged>());
    CHECK_FALSE(dm.is<Ragged, Floats2d>());
    AnyList on_lists = build_model<List<Floats2d>, List<Floats2d>>(Config::from_str(wrap));
    CHECK(on_lists.initialize(X).predict(X)[1].shape() == std::array<std::size_t, 2>{2, 3});
    AnyModel<Padded, Padded> on_padded = build_model<Padded, Padded>(Config::from_str(wrap));
    CHECK(on_padded.model().name() == "with_array(any(relu))");
    CHECK_THAT(error_message([&] { build_model<Ints1d, Floats2d>(Config::from_str(wrap)); }),
               Contains("tenon-E316") && Contains("[model] is a model from List[Floats2d] to List[Floats2d], from Ragged to "
                                                    "Ragged, from Padded to Padded, from Floats2d to Floats2d; the program asks "
                                                    "for a model from Ints1d to Floats2d"));

    // expand_window.v1 after a Floats2d layer is the Floats2d form; after ragged2list none fits.
    Any2d windowed = build_model<Floats2d, Floats2d>(Config::from_str(
        "[model]\n@layers = \"chain.v1\"\n[model.*.a]\n@layers = \"Relu.v1\"\nnO = 4\n[model.*.b]\n"
        "@layers = \"expand_window.v1\"\nwindow_size = 1\n[model.*.c]\n@layers = \"Softmax.v1\"\nnO = 2"));
    const Floats2d X2 = inputs(5, 3);
    windowed.initialize(X2);
    CHECK(param_nodes(windowed)[1]->get_dim("nI") == 12);  // (2 * 1 + 1) * 4
    CHECK_THAT(error_message([] {
                   build(Config::from_str("[model]\n@layers = \"chain.v1\"\n[model.*.a]\n@layers = \"ragged2list.v1\"\n"
                                          "[model.*.b]\n@layers = \"expand_window.v1\""));
               }),
               Contains("tenon-E315") && Contains("outputs List[Floats2d]") && Contains("expects Floats2d | Ragged"));
    CHECK(error_id([] {
              build(Config::from_str("[model]\n@layers = \"with_array.v1\"\n[model.layer]\n@layers = \"list2ragged.v1\""));
          }) == "tenon-E318");
}

TEST_CASE("registry: a built model saves and loads, and its run-time errors keep their ids", "[config][registry]") {
    const Floats2d X = inputs(4, 6);
    Any2d a = build_model<Floats2d, Floats2d>(Config::from_str(mlp_cfg));
    a.initialize(X);
    Optimizer opt = Adam(0.1);  // (Softmax's W starts at zero: a step makes the outputs differ)
    auto [Y, bp] = a.begin_update(X);
    bp(inputs(4, 4, 2.0f));
    a.finish_update(opt);
    const auto bytes = a.to_bytes();
    Any2d b = build_model<Floats2d, Floats2d>(Config::from_str(mlp_cfg));
    b.initialize(X);
    CHECK_FALSE(close(a.predict(X), b.predict(X)));
    b.from_bytes(bytes);
    CHECK(close(a.predict(X), b.predict(X)));
    CHECK(b.to_bytes() == bytes);
    // Another architecture (a width changed by an override) is refused.
    Any2d c = build_model<Floats2d, Floats2d>(Config::from_str(mlp_cfg, {{"vars.width", "8"}}));
    c.initialize(X);
    CHECK(error_id([&] { c.from_bytes(bytes); }).rfind("tenon-E20", 0) == 0);
    // A wrong width at run time is the layer's error, with its id.
    CHECK(error_id([&] { (void)a.predict(inputs(4, 7)); }) == "tenon-E101");
}

TEST_CASE("registry: HashEmbed.v1 and Embed.v1 give what their C++ forms give", "[config][registry]") {
    Ints2d ids({4, 2});
    for (std::size_t i = 0; i < 4; ++i) {
        ids(i, 0) = static_cast<std::int32_t>(i * 13 + 1);
        ids(i, 1) = static_cast<std::int32_t>(i % 3);
    }
    using Table = AnyModel<Ints2d, Floats2d>;
    auto check_same = [&](const std::string& cfg, auto model) {
        INFO(cfg);
        Table built = build_model<Ints2d, Floats2d>(Config::from_str(cfg));
        built.initialize(ids);
        model.initialize(ids);
        copy_params(model, built);
        CHECK(built.model().attr_as<std::int64_t>("column") == model.template attr_as<std::int64_t>("column"));
        CHECK(close(built.predict(ids), model.predict(ids)));
        auto [Y1, bp1] = built.begin_update(ids);
        auto [Y2, bp2] = model.begin_update(ids);
        bp1(Y1);
        bp2(Y2);
        CHECK(grads_dfs(built) == grads_dfs(model));
    };
    check_same("[model]\n@layers = \"HashEmbed.v1\"\nnO = 4\nnV = 20\nseed = 3\ncolumn = 1\ndropout = null",
               HashEmbed<>(20, HashEmbedOptions{.nO = 4, .seed = 3u, .column = 1, .initializer = {}, .dropout = {}}));
    check_same("[model]\n@layers = \"Embed.v1\"\nnO = 5\nnV = 50\ncolumn = 0",
               Embed<>(50, EmbedOptions{.nO = 5, .column = 0, .initializer = {}, .dropout = {}}));
    Table seeded = build_model<Ints2d, Floats2d>(Config::from_str("[model]\n@layers = \"HashEmbed.v1\"\nnO = 4\nnV = 20\nseed = 3"));
    CHECK(seeded.model().attr_as<std::int64_t>("seed") == 3);
    CHECK_THAT(error_message([] { build(Config::from_str("[model]\n@layers = \"HashEmbed.v1\"\nnO = 4")); }),
               Contains("tenon-E311") && Contains("[model] nV"));
    CHECK_THAT(error_message([] { build(Config::from_str("[model]\n@layers = \"HashEmbed.v1\"\nnO = 4\nnV = 8\nseed = -1")); }),
               Contains("tenon-E314") && Contains("[model] seed: -1 is out of range"));
}

TEST_CASE("registry: a DynChain's params_only gives its full backprop's parameter gradients, bit for bit",
          "[config][registry]") {
    // tenon train's step (backprop.params_only): the first child's input gradient is not
    // computed, and nothing else changes.
    const Config cfg = Config::from_str(R"(
[model]
@layers = "chain.v1"
[model.*.a]
@layers = "Relu.v1"
nO = 12
[model.*.b]
@layers = "Maxout.v1"
nO = 8
[model.*.c]
@layers = "Softmax.v1"
nO = 4
)");
    Any2d full = build_model<Floats2d, Floats2d>(cfg);
    const Floats2d X = inputs(9, 6);
    full.initialize(X);
    Any2d part = full;  // the same weights
    auto [Yf, bpf] = full.begin_update(X);
    auto [Yp, bpp] = part.begin_update(X);
    const Floats2d dY = inputs(9, 4, 0.5f);
    const Floats2d dX = bpf(dY);
    CHECK(dX.shape(1) == 6);
    bpp.params_only(dY);
    CHECK(grads_dfs(part) == grads_dfs(full));
    CHECK(!grads_dfs(full).empty());
}

TEST_CASE("config: MultiSoftmax.v1 and @schedules", "[config]") {
    const Config c = Config::from_str(R"(
[model]
@layers = "chain.v1"

[model.*.hidden]
@layers = "Relu.v1"
nO = 6

[model.*.heads]
@layers = "MultiSoftmax.v1"
nOs = [2, 3]

[lr]
@schedules = "warmup_linear.v1"
initial_rate = 0.01
warmup_steps = 2
total_steps = 4
)");
    auto model = build_model<Floats2d, Floats2d>(c);
    const Floats2d X = testing::random_array(3, 4, 5);
    model.initialize(X);
    CHECK(model.predict(X).shape(1) == 5);
    CHECK_THAT(codegen(c), Contains("MultiSoftmax<>({2, 3})"));
    Schedule s = build_schedule(c.at("lr"), "lr");
    CHECK(s.next() == 0.0);
    CHECK(s.next() == 0.005);
    CHECK(s.next() == 0.01);
    CHECK_THROWS_WITH(build_schedule(Config::from_str("[lr]\n@schedules = \"warmup_lineal.v1\"").at("lr"), "lr"),
                      Contains("tenon-E310") && Contains("warmup_linear.v1"));
    CHECK_THROWS_WITH(build_schedule(Config::from_str("[lr]\n@schedules = \"cyclic_triangular.v1\"\nmin_lr = 0.1\n"
                                                      "max_lr = 0.2\nperiod = 0")
                                         .at("lr"),
                                     "lr"),
                      Contains("tenon-E253") && Contains("[lr]"));
    CHECK(build_schedule(Value(0.5), "x").next() == 0.5);  // a number: constant.v1
}

TEST_CASE("config: LSTM.v1 in with_padded.v1", "[config]") {
    const Config c = Config::from_str(R"(
[model]
@layers = "chain.v1"

[model.*.encode]
@layers = "with_padded.v1"

[model.*.encode.layer]
@layers = "LSTM.v1"
nO = 6
nI = 4
bi = true
depth = 2

[model.*.tag]
@layers = "with_array.v1"

[model.*.tag.layer]
@layers = "Softmax.v1"
nO = 3
)");
    auto model = build_model<List<Floats2d>, List<Floats2d>>(c);
    std::vector<Floats2d> docs;
    docs.push_back(testing::random_array(5, 4, 1));
    docs.push_back(testing::random_array(2, 4, 2));
    const List<Floats2d> X(std::move(docs));
    model.initialize(X);
    const List<Floats2d> P = model.predict(X);
    REQUIRE(P.size() == 2);
    CHECK(P[0].shape(0) == 5);
    CHECK(P[1].shape(1) == 3);
    // (codegen writes one signature: the LSTM alone; in with_padded it has three)
    CHECK_THAT(codegen(Config::from_str("[model]\n@layers = \"LSTM.v1\"\nnO = 6\nnI = 4\nbi = true\ndepth = 2\n"
                                        "dropout = 0.25")),
               Contains("LSTM<6, 4>(LSTMOptions{.bi = true, .depth = 2, .dropout = 0.25})"));
    // An LSTM of an odd width in both directions, a layer of other types in with_padded.
    CHECK_THROWS_WITH((build_model<Padded, Padded>(Config::from_str("[model]\n@layers = \"LSTM.v1\"\nnO = 5\nbi = true"))),
                      Contains("tenon-E285"));
    CHECK_THROWS_WITH((build_model<List<Floats2d>, List<Floats2d>>(Config::from_str(
                          "[model]\n@layers = \"with_padded.v1\"\n\n[model.layer]\n@layers = \"Relu.v1\"\nnO = 3"))),
                      Contains("tenon-E318") && Contains("Padded"));
}

TEST_CASE("registry: SparseLinear.v1/v2 and StaticVectors.v1 give what their C++ forms give", "[config][registry]") {
    const SparseFeatures X = sparse_features({{1, 2, 3}, {}, {4, 1ull << 40}});
    const Config bow = Config::from_str(R"(
[model]
@layers = "chain.v1"

[model.*.bow]
@layers = "SparseLinear.v2"
nO = 3
length = 1024

[model.*.out]
@layers = "Logistic.v1"
)");
    auto built = build_model<SparseFeatures, Floats2d>(bow);
    built.initialize(X);
    auto typed = SparseLinear<3>({.length = 1024}) >> sigmoid_activation();
    typed.initialize(X);
    Rng rng(5);
    for (Node* n : typed.walk())
        for (const auto& p : n->param_names())
            if (n->has_param(p))
                for (float& v : n->get_param(p)) v = static_cast<float>(rng.uniform(-1.0, 1.0));
    copy_params(typed, built);
    CHECK(close(built.predict(X), typed.predict(X)));
    auto [Y1, bp1] = built.begin_update(X);
    auto [Y2, bp2] = typed.begin_update(X);
    bp1(Y1);
    bp2(Y2);
    CHECK(grads_dfs(built) == grads_dfs(typed));
    CHECK_THAT(codegen(bow), Contains("SparseLinear<3>({.length = 1024})"));
    const Config v1 = Config::from_str("[model]\n@layers = \"SparseLinear.v1\"\nnO = 2");
    auto old = build_model<SparseFeatures, Floats2d>(v1);
    CHECK(old.model().attr_as<bool>("v1_indexing"));
    CHECK(old.model().get_dim("length") == (1u << 18));
    CHECK_THAT(codegen(v1), Contains("SparseLinear_v1<2>()"));
    CHECK_THAT(error_message([] { build(Config::from_str("[model]\n@layers = \"SparseLinear.v2\"\nnO = 2\nlength = 0")); }),
               Contains("tenon-E276"));

    // StaticVectors.v1: the table from a file.
    const std::string path = (std::filesystem::temp_directory_path() / "tenon_test_config_vectors.txt").string();
    std::ofstream(path) << "0.5 1 -1\n2 0 1\n-1 1 0.25\n";
    const Config sv = Config::from_str("[model]\n@layers = \"StaticVectors.v1\"\nnO = 4\nvectors = \"" + path +
                                       "\"\ncolumn = 1\ndropout = 0.1");
    auto vec = build_model<Ints2d, Floats2d>(sv);
    const Ints2d ids({3, 2}, {0, 2, 0, 1, 0, 7});
    vec.initialize(ids);
    CHECK(vec.model().get_dim("nM") == 3);
    StaticVectors<4> same(load_vectors(path), {.column = 1, .dropout = 0.1});
    same.initialize(ids);
    copy_params(same, vec);
    CHECK(close(vec.predict(ids), same.predict(ids)));
    CHECK_THAT(codegen(sv), Contains("StaticVectors<4>(") && Contains("load_vectors(\"" + path + "\")") &&
                                Contains("StaticVectorsOptions{.column = 1, .dropout = 0.1})"));
    CHECK_THAT(error_message([] { build(Config::from_str("[model]\n@layers = \"StaticVectors.v1\"\nnO = 4")); }),
               Contains("tenon-E311") && Contains("vectors"));
    CHECK_THAT(error_message([&] {
                   build(Config::from_str("[model]\n@layers = \"StaticVectors.v1\"\nnO = 4\nnM = 5\nvectors = \"" +
                                          path + "\""));
               }),
               Contains("tenon-E279"));
    CHECK_THAT(error_message([] {
                   build(Config::from_str("[model]\n@layers = \"StaticVectors.v1\"\nnO = 4\nvectors = \"/no/such.npy\""));
               }),
               Contains("tenon-E283"));
    std::filesystem::remove(path);
}

TEST_CASE("config: ParametricAttention.v1 and ParametricAttention.v2 (key_transform)", "[config][registry]") {
    const char* cfg = R"(
[model]
@layers = "chain.v1"

[model.*.a]
@layers = "list2ragged.v1"

[model.*.b]
@layers = "with_array.v1"

[model.*.b.layer]
@layers = "Relu.v1"
nO = 4

[model.*.c]
@layers = "ParametricAttention.v2"
nO = 4

[model.*.c.key_transform]
@layers = "Linear.v1"
nO = 4
nI = 4

[model.*.d]
@layers = "ParametricAttention.v1"

[model.*.e]
@layers = "reduce_sum.v1"

[model.*.f]
@layers = "Softmax.v1"
nO = 3
)";
    const Config c = Config::from_str(cfg);
    auto built = build_model<List<Floats2d>, Floats2d>(c);
    auto model = list2ragged() >> with_array<Ragged>(Relu<4>()) >> ParametricAttention_v2<4>(Linear<4, 4>()) >>
                 ParametricAttention<>() >> reduce_sum() >> Softmax<3>();
    List<Floats2d> X;
    X.push_back(inputs(3, 5));
    X.push_back(inputs(1, 5, 0.5f));
    X.push_back(Floats2d({0, 5}));
    X.push_back(inputs(4, 5, 2.0f));
    built.initialize(X);
    model.initialize(X);
    copy_params(model, built);
    CHECK(close(built.predict(X), model.predict(X)));
    auto [Y1, bp1] = built.begin_update(X);
    auto [Y2, bp2] = model.begin_update(X);
    const Floats2d dY = inputs(4, 3);
    bp1(dY);
    bp2(dY);
    CHECK(close_grads(grads_dfs(built), grads_dfs(model)));
    // codegen writes the same model as a type
    const std::string code = codegen(c);
    CHECK_THAT(code, Contains("ParametricAttention_v2<4>(Linear<4, 4>())") && Contains("ParametricAttention<>()"));
    // v2 without a key transform is v1's model
    DynModel plain = build(Config::from_str("[model]\n@layers = \"ParametricAttention.v2\"\nnO = 6"));
    REQUIRE(plain.is<Ragged, Ragged>());
    CHECK(plain.code<Ragged, Ragged>() == "ParametricAttention_v2<6>()");
    auto p = plain.take<Ragged, Ragged>();
    p.initialize();
    CHECK(p.get_dim("nO") == 6);
    // a key transform that is not Floats2d -> Floats2d; a width that is not one
    CHECK_THAT(error_message([] {
                   build(Config::from_str("[model]\n@layers = \"ParametricAttention.v2\"\n[model.key_transform]\n"
                                          "@layers = \"reduce_sum.v1\""));
               }),
               Contains("tenon-E318") && Contains("ParametricAttention.v2") && Contains("Ragged"));
    CHECK_THAT(error_message([] { build(Config::from_str("[model]\n@layers = \"ParametricAttention.v1\"\nnO = 0")); }),
               Contains("tenon-E314") && Contains("nO"));
    // the key transform's widths against nO: tenon-E272, with the config's path
    CHECK_THAT(error_message([] {
                   build(Config::from_str("[model]\n@layers = \"ParametricAttention.v2\"\nnO = 4\n"
                                          "[model.key_transform]\n@layers = \"Linear.v1\"\nnO = 5"));
               }),
               Contains("tenon-E272") && Contains("[model]"));
}

TEST_CASE("config: spacy.TorchBiLSTMEncoder.v1 is a BiLSTM over lists", "[config]") {
    auto model = build_model<List<Floats2d>, List<Floats2d>>(
        Config::from_str("[model]\n@architectures = \"spacy.TorchBiLSTMEncoder.v1\"\nwidth = 8\ndepth = 2\ndropout = 0.0"));
    std::vector<Floats2d> docs;
    docs.push_back(testing::random_array(3, 8, 1));
    docs.push_back(testing::random_array(1, 8, 2));
    const List<Floats2d> X(std::move(docs));
    model.initialize(X);
    const List<Floats2d> Y = model.predict(X);
    REQUIRE(Y.size() == 2);
    CHECK(Y[0].shape(1) == 8);
    // The same function as the layer written in C++ with the same weights.
    auto direct = with_padded<List<Floats2d>>(BiLSTM<8, 8>(LSTMOptions{.depth = 2}));
    direct.initialize(X);
    Node* lstm = nullptr;
    for (Node* n : model.walk())
        if (n->name() == "lstm") lstm = n;
    REQUIRE(lstm != nullptr);
    for (Node* n : direct.walk())
        if (n->name() == "lstm") {
            n->set_param("LSTM", lstm->get_param("LSTM"));
            n->set_param("HC0", lstm->get_param("HC0"));
        }
    const List<Floats2d> Y2 = direct.predict(X);
    for (std::size_t d = 0; d < 2; ++d)
        for (std::size_t i = 0; i < Y[d].size(); ++i) CHECK(Y[d][i] == Y2[d][i]);
    CHECK_THAT(codegen(Config::from_str("[model]\n@architectures = \"spacy.TorchBiLSTMEncoder.v1\"\nwidth = 8\ndepth = 2")),
               Contains("with_padded<List<Floats2d>>(LSTM<8, 8>(LSTMOptions{.bi = true, .depth = 2}))"));
    CHECK_THROWS_WITH(build(Config::from_str("[model]\n@architectures = \"spacy.TorchBiLSTMEncoder.v1\"\nwidth = 8\ndepth = 0")),
                      Contains("tenon-E314"));
}

TEST_CASE("config: Gelu.v1, Swish.v1 and HardSwish.v1 (and spaCy's Gelu key transform)", "[config][registry]") {
    const char* cfg = R"(
[model]
@layers = "chain.v1"

[model.*.a]
@layers = "Gelu.v1"
nO = 8
dropout = 0.25
normalize = true

[model.*.b]
@layers = "Swish.v1"
nO = 6
normalize = true

[model.*.c]
@layers = "HardSwish.v1"
nO = 5
nI = 6
dropout = 0.0

[model.*.d]
@layers = "Softmax.v1"
nO = 3
)";
    // (Here, not in the test of every layer above: these draw from the global generator, and
    // the tests after that one depend on its state.)
    auto check_same = [](const std::string& one, auto layer) {
        INFO(one);
        const Floats2d X6 = inputs(4, 6);
        Any2d b = build_model<Floats2d, Floats2d>(Config::from_str(one));
        b.initialize(X6);
        layer.initialize(X6);
        copy_params(layer, b);
        CHECK(close(b.predict(X6), layer.predict(X6)));
        auto [Y1, bp1] = b.begin_update(X6);
        auto [Y2, bp2] = layer.begin_update(X6);
        CHECK(close(bp1(Y1), bp2(Y2)));
    };
    check_same("[model]\n@layers = \"Gelu.v1\"\nnO = 5", Gelu<>({.nO = 5}));
    check_same("[model]\n@layers = \"Swish.v1\"\nnO = 5\nnormalize = true", Swish<>({.nO = 5, .normalize = true}));
    check_same("[model]\n@layers = \"HardSwish.v1\"\nnO = 5\nnI = 6", HardSwish<>({.nO = 5, .nI = 6}));
    const Config c = Config::from_str(cfg);
    const Floats2d X = inputs(5, 4);
    Any2d built = build_model<Floats2d, Floats2d>(c);
    auto model = Gelu<8>({.dropout = 0.25, .normalize = true}) >> Swish<6>({.normalize = true}) >>
                 HardSwish<5, 6>({.dropout = 0.0}) >> Softmax<3>();
    CHECK(built.model().name() == "gelu>>swish>>hardswish>>softmax");
    built.initialize(X);
    model.initialize(X);
    copy_params(model, built);
    CHECK(close(built.predict(X), model.predict(X)));
    // the same seed: the same dropout masks, outputs and gradients
    fix_random_seed(11);
    auto [Y1, bp1] = built.begin_update(X);
    fix_random_seed(11);
    auto [Y2, bp2] = model.begin_update(X);
    CHECK(close(Y1, Y2));
    CHECK(close(bp1(Y1), bp2(Y2)));
    CHECK(close_grads(grads_dfs(built), grads_dfs(model)));
    // the same seed gives the same he_normal_init weights as the C++ model
    fix_random_seed(5);
    Any2d fresh = build_model<Floats2d, Floats2d>(c);
    fresh.initialize(X);
    fix_random_seed(5);
    auto fresh_model = Gelu<8>({.dropout = 0.25, .normalize = true}) >> Swish<6>({.normalize = true}) >>
                       HardSwish<5, 6>({.dropout = 0.0}) >> Softmax<3>();
    fresh_model.initialize(X);
    CHECK(testing::all_params(fresh) == testing::all_params(fresh_model));
    // codegen writes the same model as a type
    const std::string code = codegen(c);
    CHECK_THAT(code, Contains("Gelu<8>(DenseOptions{.dropout = 0.25, .normalize = true})") &&
                         Contains("Swish<6>(DenseOptions{.normalize = true})") &&
                         Contains("HardSwish<5, 6>(DenseOptions{.dropout = 0.0})"));
    DynModel plain = build(Config::from_str("[model]\n@layers = \"Gelu.v1\""));
    CHECK(plain.code<Floats2d, Floats2d>() == "Gelu<>()");
    // spaCy's ParametricAttention_v2 key transform: a Gelu
    const Config attn = Config::from_str(
        "[model]\n@layers = \"ParametricAttention.v2\"\nnO = 4\n[model.key_transform]\n@layers = \"Gelu.v1\"\n"
        "nO = 4\nnI = 4\nnormalize = true");
    DynModel a = build(attn);
    CHECK(a.code<Ragged, Ragged>() == "ParametricAttention_v2<4>(Gelu<4, 4>(DenseOptions{.normalize = true}))");
    // a bad argument names the layer's path
    CHECK_THAT(error_message([] { build(Config::from_str("[model]\n@layers = \"Swish.v1\"\nnO = \"x\"")); }),
               Contains("tenon-E313") && Contains("nO"));
}
