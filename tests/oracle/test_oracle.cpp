// tenon against Thinc: the same weights and inputs must give the same outputs, dX and
// parameter gradients (within 1e-5 relative, with a small absolute floor), and the MLP the
// same weights after Adam and SGD steps (within 1e-4). The reference cases are written by
// tests/oracle/gen_thinc_cases.py with Debian's Thinc 8.1 at build time.
#include <catch2/catch.hpp>
#include <tenon/tenon.hpp>

#include "oracle/case.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

using namespace tenon;
using namespace tenon::oracle;

namespace {

// The standard single-layer case: set the weights, run forward and backward, compare.
template <class M>
void run_layer_case(M model, const std::string& name, const std::vector<std::string>& params,
                    const std::string& ln_child = "") {
    Case c(name);
    const Floats2d X = c.f2("X");
    model.initialize(X);
    for (const auto& p : params) model.set_param(p, c.param(p));
    if (!ln_child.empty()) {
        Node* ln = child_named(model, ln_child);
        ln->set_param("G", c.param("ln.G"));
        ln->set_param("b", c.param("ln.b"));
    }
    check_close(c, "Ypred", model.predict(X));
    auto [Y, backprop] = model.begin_update(X);
    check_close(c, "Y", Y);
    const Floats2d dX = backprop(c.f2("dY"));
    check_close(c, "dX", dX);
    for (const auto& p : params) check_close(c, "d." + p, model.get_grad(p));
    if (!ln_child.empty()) {
        Node* ln = child_named(model, ln_child);
        check_close(c, "d.ln.G", ln->get_grad("G"));
        check_close(c, "d.ln.b", ln->get_grad("b"));
    }
}

}  // namespace

TEST_CASE("oracle: Linear", "[oracle]") { run_layer_case(Linear<>({.nO = 7, .nI = 5}), "linear", {"W", "b"}); }
TEST_CASE("oracle: Relu", "[oracle]") { run_layer_case(Relu<7>(), "relu", {"W", "b"}); }
TEST_CASE("oracle: Relu normalize", "[oracle]") {
    run_layer_case(Relu<7, 5>({.normalize = true}), "relu_normalize", {"W", "b"}, "layernorm");
}
TEST_CASE("oracle: Sigmoid", "[oracle]") { run_layer_case(Sigmoid<7>(), "sigmoid", {"W", "b"}); }
TEST_CASE("oracle: sigmoid_activation", "[oracle]") {
    run_layer_case(sigmoid_activation(), "sigmoid_activation", {});
}
TEST_CASE("oracle: Softmax", "[oracle]") { run_layer_case(Softmax<7>(), "softmax", {"W", "b"}); }
TEST_CASE("oracle: MultiSoftmax", "[oracle]") {
    run_layer_case(MultiSoftmax<>({3, 4}), "multisoftmax", {"W", "b"});
}
// ParametricAttention: Ragged in and out, sequences of lengths 3, 1, 0, 4, 2 (Thinc's Q set).
namespace {
template <class M>
void run_attention_case(M& model, const Case& c) {
    const Ragged X = read_ragged(c, "X");
    model.initialize(X);
    model.set_param("Q", c.param("Q"));
    check_close(c, "Y", model.predict(X));
    auto [Y, backprop] = model.begin_update(X);
    check_close(c, "Y", Y);
    check_close(c, "dX", backprop(X.with_data(c.f2("dY"))));
    check_close(c, "d.Q", model.get_grad("Q"));
}
}  // namespace
TEST_CASE("oracle: ParametricAttention (v1)", "[oracle]") {
    Case c("attention");
    ParametricAttention<5> model;
    run_attention_case(model, c);
}
TEST_CASE("oracle: ParametricAttention_v2 with a Relu key transform", "[oracle]") {
    // Thinc 8.1 has no v2: the generator computes it with Thinc's ops and Thinc's Relu.
    Case c("attention_v2");
    auto model = ParametricAttention_v2(Relu<5, 5>());
    const Ragged X = read_ragged(c, "X");
    model.initialize(X);  // (then Thinc's weights, as the generator set them)
    model.key_transform().set_param("W", c.param("key.W"));
    model.key_transform().set_param("b", c.param("key.b"));
    model.set_param("Q", c.param("Q"));
    check_close(c, "Y", model.predict(X));
    auto [Y, backprop] = model.begin_update(X);
    check_close(c, "Y", Y);
    check_close(c, "dX", backprop(X.with_data(c.f2("dY"))));
    check_close(c, "d.Q", model.get_grad("Q"));
    check_close(c, "d.key.W", model.key_transform().get_grad("W"));
    check_close(c, "d.key.b", model.key_transform().get_grad("b"));
}
TEST_CASE("oracle: ParametricAttention_v2 without a key transform is v1", "[oracle]") {
    Case c("attention");
    auto model = ParametricAttention_v2<5>();
    run_attention_case(model, c);
}
TEST_CASE("oracle: Softmax temperature", "[oracle]") {
    Case c("softmax_temperature");
    run_layer_case(Softmax<7>({.temperature = c.scalar("temperature")}), "softmax_temperature", {"W", "b"});
}
TEST_CASE("oracle: Mish", "[oracle]") { run_layer_case(Mish<>({.nO = 7}), "mish", {"W", "b"}); }
TEST_CASE("oracle: Mish normalize", "[oracle]") {
    run_layer_case(Mish<7>({.normalize = true}), "mish_normalize", {"W", "b"}, "layernorm");
}
TEST_CASE("oracle: Gelu", "[oracle]") { run_layer_case(Gelu<>({.nO = 7}), "gelu", {"W", "b"}); }
TEST_CASE("oracle: Gelu normalize", "[oracle]") {
    run_layer_case(Gelu<7>({.normalize = true}), "gelu_normalize", {"W", "b"}, "layernorm");
}
TEST_CASE("oracle: Swish", "[oracle]") { run_layer_case(Swish<>({.nO = 7}), "swish", {"W", "b"}); }
TEST_CASE("oracle: Swish normalize", "[oracle]") {
    run_layer_case(Swish<7>({.normalize = true}), "swish_normalize", {"W", "b"}, "layernorm");
}
TEST_CASE("oracle: HardSwish", "[oracle]") { run_layer_case(HardSwish<>({.nO = 7}), "hard_swish", {"W", "b"}); }
TEST_CASE("oracle: HardSwish normalize", "[oracle]") {
    run_layer_case(HardSwish<7>({.normalize = true}), "hard_swish_normalize", {"W", "b"}, "layernorm");
}
TEST_CASE("oracle: Maxout", "[oracle]") { run_layer_case(Maxout<4>(), "maxout", {"W", "b"}); }
TEST_CASE("oracle: Maxout normalize", "[oracle]") {
    run_layer_case(Maxout<4>({.normalize = true}), "maxout_normalize", {"W", "b"}, "layernorm");
}
TEST_CASE("oracle: LayerNorm", "[oracle]") { run_layer_case(LayerNorm<>(), "layernorm", {"G", "b"}); }

TEST_CASE("oracle: Dropout", "[oracle]") {
    {
        Case c("dropout_predict");
        Dropout d(0.5);
        check_close(c, "Ypred", d.predict(c.f2("X")));
    }
    {
        Case c("dropout_rate0");
        Dropout d(0.0);
        auto [Y, backprop] = d.begin_update(c.f2("X"));
        check_close(c, "Y", Y);
        check_close(c, "dX", backprop(c.f2("dY")));
    }
}

namespace {
auto make_mlp() { return Relu<16, 12>() >> Relu<16>() >> Softmax<5>(); }

template <class M>
void set_mlp_params(M& model, const Case& c, const std::string& prefix) {
    Node* layers[] = {&model.template layer<0>(), &model.template layer<1>(), &model.template layer<2>()};
    for (int i = 0; i < 3; ++i)
        for (const char* p : {"W", "b"}) layers[i]->set_param(p, c.param(prefix + std::to_string(i) + "." + p));
}
template <class M>
void check_mlp_params(M& model, const Case& c, const std::string& prefix, double rtol, double atol) {
    Node* layers[] = {&model.template layer<0>(), &model.template layer<1>(), &model.template layer<2>()};
    for (int i = 0; i < 3; ++i)
        for (const char* p : {"W", "b"})
            check_close(c, prefix + std::to_string(i) + "." + p, layers[i]->get_param(p), rtol, atol);
}

// Train the MLP from Thinc's initial weights on Thinc's batches; compare the weights after.
void run_training_case(const std::string& name, Optimizer opt, int steps) {
    Case c(name);
    auto model = make_mlp();
    model.initialize();
    set_mlp_params(model, c, "init.");
    CategoricalCrossentropy loss;
    for (int k = 0; k < steps; ++k) {
        const std::string s = "step" + std::to_string(k) + ".";
        auto [Yh, backprop] = model.begin_update(c.f2(s + "X"));
        check_close(c, s + "Y", Yh, 1e-4, 1e-6);
        const Floats2d d = loss.get_grad(Yh, c.labels(s + "labels"));
        check_close(c, s + "d_guesses", d, 1e-4, 1e-6);
        backprop(d);
        model.finish_update(opt);
    }
    check_mlp_params(model, c, "final.", 1e-4, 1e-6);
    // Thinc keeps moving averages of the weights; UseAverages swaps them in.
    {
        UseAverages avg(model, opt);
        check_mlp_params(model, c, "avg.", 1e-4, 1e-6);
    }
    check_mlp_params(model, c, "final.", 1e-4, 1e-6);
}
}  // namespace

TEST_CASE("oracle: MLP forward and backward", "[oracle]") {
    Case c("mlp");
    auto model = make_mlp();
    const Floats2d X = c.f2("X");
    model.initialize(X);
    set_mlp_params(model, c, "");
    check_close(c, "Ypred", model.predict(X));
    auto [Y, backprop] = model.begin_update(X);
    check_close(c, "Y", Y);
    check_close(c, "dX", backprop(c.f2("dY")));
    Node* layers[] = {&model.layer<0>(), &model.layer<1>(), &model.layer<2>()};
    for (int i = 0; i < 3; ++i)
        for (const char* p : {"W", "b"})
            check_close(c, "d." + std::to_string(i) + "." + p, layers[i]->get_grad(p));
}

TEST_CASE("oracle: MLP after 3 Adam steps", "[oracle]") { run_training_case("mlp_adam", Adam(0.001), 3); }
TEST_CASE("oracle: MLP after 2 SGD steps", "[oracle]") { run_training_case("sgd", SGD(0.1), 2); }

TEST_CASE("oracle: CategoricalCrossentropy", "[oracle]") {
    Case c("loss_cce");
    const Floats2d guesses = c.f2("guesses");
    const Ints1d labels = c.labels("labels");
    check_close(c, "truths", to_categorical(labels, guesses.shape(1)));
    check_close(c, "d_guesses", CategoricalCrossentropy().get_grad(guesses, labels));
    check_close(c, "d_guesses", CategoricalCrossentropy().get_grad(guesses, c.f2("truths")));
    check_close(c, "d_guesses_nonorm", CategoricalCrossentropy({.normalize = false}).get_grad(guesses, labels));
    check_close(c, "truths_smooth", to_categorical(labels, guesses.shape(1), 0.1));
    check_close(c, "d_guesses_smooth",
                CategoricalCrossentropy({.label_smoothing = 0.1}).get_grad(guesses, labels));
    // missing_value: the rows not annotated add nothing, and still count in the rows.
    const Ints1d missing = c.labels("labels_missing");
    REQUIRE(missing[1] == -1);
    check_close(c, "d_guesses_missing", CategoricalCrossentropy({.missing_value = -1}).get_grad(guesses, missing));
    check_close(c, "d_guesses_missing_onehot",
                CategoricalCrossentropy({.missing_value = 2}).get_grad(guesses, c.f2("truths")));
    double ce = 0.0;
    for (std::size_t i = 0; i < missing.shape(0); ++i)
        if (missing[i] != -1) ce -= std::log(double(guesses(i, std::size_t(missing[i]))));
    CHECK(CategoricalCrossentropy({.missing_value = -1}).get_loss(guesses, missing) ==
          Approx(ce / double(guesses.shape(0))).epsilon(1e-6));
    // Without missing_value, -1 is a label out of range.
    CHECK_THROWS_WITH(CategoricalCrossentropy().get_grad(guesses, missing), Catch::Contains("tenon-E132"));

    // Truths as the classes' names: row 1 not annotated (""), row 3 negative ("!" and the class
    // after its label), as gen_thinc_cases.py writes them.
    const std::vector<std::string> names{"A", "B", "C", "D"};
    std::vector<std::string> named;
    for (std::size_t i = 0; i < labels.shape(0); ++i) named.push_back(names[std::size_t(labels[i])]);
    const std::vector<std::string> plain = named;
    named[1] = "";
    named[3] = "!" + names[std::size_t(labels[3] + 1) % 4];
    const CategoricalCrossentropy by_name({.names = names, .missing_value = "", .neg_prefix = "!"});
    check_close(c, "d_guesses_names", by_name.get_grad(guesses, named));
    check_close(c, "d_guesses_names_nonorm",
                CategoricalCrossentropy({.normalize = false, .names = names, .missing_value = "", .neg_prefix = "!"})
                    .get_grad(guesses, named));
    check_close(c, "d_guesses_names_smooth",
                CategoricalCrossentropy({.names = names, .label_smoothing = 0.1}).get_grad(guesses, plain));
    // Names that are the labels give the labels' gradient and loss.
    const Floats2d by_names = CategoricalCrossentropy({.names = names}).get_grad(guesses, plain);
    const Floats2d by_labels = CategoricalCrossentropy().get_grad(guesses, labels);
    CHECK((by_names.shape() == by_labels.shape() && std::equal(by_names.begin(), by_names.end(), by_labels.begin())));
    CHECK(CategoricalCrossentropy({.names = names}).get_loss(guesses, plain) ==
          CategoricalCrossentropy().get_loss(guesses, labels));
    // The loss: the other rows' cross-entropy, and -log(1 - P) of the negated class.
    double ce_named = 0.0;
    for (std::size_t i = 0; i < labels.shape(0); ++i)
        if (i == 3) ce_named -= std::log(1.0 - double(guesses(3, std::size_t(labels[3] + 1) % 4)));
        else if (i != 1) ce_named -= std::log(double(guesses(i, std::size_t(labels[i]))));
    auto [d_named, loss_named] = by_name(guesses, named);
    CHECK(loss_named == Approx(ce_named / double(guesses.shape(0))).epsilon(1e-6));
    CHECK(d_named.shape() == guesses.shape());
    // What the names cannot say: tenon-E137 (no names, an unknown name, a count of names that is
    // not the guesses' columns); another number of truths than rows: tenon-E133.
    CHECK_THROWS_WITH(CategoricalCrossentropy().get_grad(guesses, plain), Catch::Contains("tenon-E137"));
    auto unknown = plain;
    unknown[2] = "E";
    CHECK_THROWS_WITH(by_name.get_grad(guesses, unknown),
                      Catch::Contains("tenon-E137") && Catch::Contains("row 2: 'E' is not one of the names (A, B, C, D)"));
    unknown[2] = "!E";
    CHECK_THROWS_WITH(by_name.get_loss(guesses, unknown), Catch::Contains("tenon-E137"));
    CHECK_THROWS_WITH(CategoricalCrossentropy({.names = {"A", "B"}}).get_grad(guesses, plain),
                      Catch::Contains("tenon-E137") && Catch::Contains("2 names for guesses of 4 columns"));
    CHECK_THROWS_WITH(by_name.get_grad(guesses, std::vector<std::string>{"A"}), Catch::Contains("tenon-E133"));
    // A truth with the prefix names the truth as given; a name given twice says no one column
    // (Thinc takes the last); names of another count than the columns, with labels too; and
    // label_smoothing with one-hot truths (Thinc raises): tenon-E137.
    unknown[2] = "!";
    CHECK_THROWS_WITH(by_name.get_grad(guesses, unknown), Catch::Contains("row 2: '' (in '!') is not one of"));
    CHECK_THROWS_WITH(CategoricalCrossentropy({.names = {"A", "B", "A", "D"}}).get_grad(guesses, plain),
                      Catch::Contains("tenon-E137") && Catch::Contains("'A' is given twice (columns 0 and 2)"));
    CHECK_THROWS_WITH(CategoricalCrossentropy({.names = {"A", "B"}}).get_grad(guesses, labels),
                      Catch::Contains("tenon-E137"));
    CHECK_THROWS_WITH(CategoricalCrossentropy({.label_smoothing = 0.1}).get_grad(guesses, c.f2("truths")),
                      Catch::Contains("tenon-E137") && Catch::Contains("one-hot"));
}

TEST_CASE("oracle: SequenceCategoricalCrossentropy", "[oracle]") {
    Case c("loss_seq_cce");
    List<Floats2d> guesses;
    List<Ints1d> labels;
    std::vector<Floats2d> truths;  // (any sized range of truths: a std::vector too)
    for (int d = 0; d < 3; ++d) {
        guesses.push_back(c.f2("guesses" + std::to_string(d)));
        labels.push_back(c.labels("labels" + std::to_string(d)));
        truths.push_back(c.f2("truths" + std::to_string(d)));
    }
    REQUIRE(guesses[1].shape(0) == 0);  // an empty document among them
    auto check_all = [&](const std::string& key, const List<Floats2d>& got) {
        REQUIRE(got.size() == 3);
        for (int d = 0; d < 3; ++d) check_close(c, key + std::to_string(d), got[std::size_t(d)]);
    };
    check_all("d_guesses", SequenceCategoricalCrossentropy().get_grad(guesses, labels));
    check_all("d_guesses", SequenceCategoricalCrossentropy().get_grad(guesses, truths));
    check_all("d_guesses_nonorm", SequenceCategoricalCrossentropy({.normalize = false}).get_grad(guesses, labels));
    check_all("d_guesses_smooth", SequenceCategoricalCrossentropy({.label_smoothing = 0.1}).get_grad(guesses, labels));
    List<Ints1d> missing = labels;  // (label 1 not annotated: -1)
    for (auto& y : missing)
        for (std::size_t i = 0; i < y.shape(0); ++i)
            if (y[i] == 1) y[i] = -1;
    check_all("d_guesses_missing", SequenceCategoricalCrossentropy({.missing_value = -1}).get_grad(guesses, missing));
    // Names: label 2 negated ("!D"), label 3 not annotated ("-"), as gen_thinc_cases.py writes.
    const std::vector<std::string> names{"A", "B", "C", "D"};
    std::vector<std::vector<std::string>> named;
    for (const auto& y : labels) {
        std::vector<std::string> doc;
        for (std::size_t i = 0; i < y.shape(0); ++i)
            doc.push_back(y[i] == 3 ? std::string("-") : y[i] == 2 ? "!" + names[3] : names[std::size_t(y[i])]);
        named.push_back(std::move(doc));
    }
    check_all("d_guesses_names", SequenceCategoricalCrossentropy({.names = names, .missing_value = "-", .neg_prefix = "!"})
                                     .get_grad(guesses, named));

    // The loss is the cross-entropy of every row, over the number of documents (not Thinc 8.1's
    // sum of squared gradients: thinc-known-defects).
    double ce = 0.0;
    for (int d = 0; d < 3; ++d)
        for (std::size_t i = 0; i < labels[std::size_t(d)].shape(0); ++i)
            ce -= std::log(double(guesses[std::size_t(d)](i, std::size_t(labels[std::size_t(d)](i)))));
    auto [grads, loss] = SequenceCategoricalCrossentropy()(guesses, labels);
    check_all("d_guesses", grads);
    CHECK(loss == Approx(ce / 3.0).epsilon(1e-6));
    CHECK(SequenceCategoricalCrossentropy({.normalize = false}).get_loss(guesses, truths) == Approx(ce).epsilon(1e-6));

    // Another number of documents, and a document that is not probabilities: the document named.
    List<Ints1d> two(labels.begin(), labels.begin() + 2);
    CHECK_THROWS_WITH(SequenceCategoricalCrossentropy().get_grad(guesses, two),
                      Catch::Contains("tenon-E133") && Catch::Contains("3 documents of guesses but 2 of truths"));
    guesses[2](1, 1) = 1.5f;
    CHECK_THROWS_WITH(SequenceCategoricalCrossentropy().get_loss(guesses, labels),
                      Catch::Contains("tenon-E134") && Catch::Contains("document 2:") && Catch::Contains("at [1, 1]"));
}

TEST_CASE("oracle: L2Distance", "[oracle]") {
    Case c("loss_l2");
    const Floats2d g = c.f2("guesses"), t = c.f2("truths");
    check_close(c, "d_guesses", L2Distance().get_grad(g, t));
    check_close(c, "d_guesses_nonorm", L2Distance({.normalize = false}).get_grad(g, t));
}

TEST_CASE("oracle: optimizer step with gradient clipping", "[oracle]") {
    Case c("grad_clip");
    const auto& w0 = c.get("w0");
    const auto& g0 = c.get("g0");
    auto run = [&](Optimizer opt, const std::string& w_key, const std::string& avg_key) {
        Floats1d w({w0.values.size()}, uninitialized), g({g0.values.size()}, uninitialized);
        std::copy(w0.values.begin(), w0.values.end(), w.data());
        std::copy(g0.values.begin(), g0.values.end(), g.data());
        opt.update(0, "W", w, g);
        check_close(c, w_key, w);
        Floats1d* avg = opt.average(0, "W");
        REQUIRE(avg != nullptr);
        check_close(c, avg_key, *avg);
    };
    run(Adam(0.01), "w1", "avg1");
    run(SGD(0.1), "sgd.w1", "sgd.avg1");
}
