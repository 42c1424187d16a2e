// The rest of Thinc's Model API (issue 13, item 7): copy(), replace_node, remove_node,
// use_params (and UseAverages as one use of it), get_gradients, set_dropout_rate, and
// run-time errors that name the node by its path from the model called.
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "tenon/io/state.hpp"
#include "tenon/tenon.hpp"
#include "unit/helpers.hpp"

using namespace tenon;
using Catch::Matchers::Contains;

namespace {
using testing::nonzero;
using testing::random_array;
using testing::same;
using testing::values;
std::vector<std::vector<float>> all_params(const Node& m) {
    std::vector<std::vector<float>> out;
    for (const Node* n : m.walk())
        for (const auto& name : n->param_names())
            if (n->has_param(name)) out.push_back(values(n->get_param(name)));
    return out;
}
template <class M>
void train_step(M& model, const Floats2d& X, Optimizer& opt) {
    auto [Y, backprop] = model.begin_update(X);
    Floats2d dY(Y.shape());
    std::fill(dY.begin(), dY.end(), 0.5f);
    backprop(dY);
    model.finish_update(opt);
}
auto make_model() { return Relu<4>() >> clone(residual(Relu<4>()), 3) >> Softmax<2>(); }
}  // namespace

TEST_CASE("model api: copy is deep, with new ids and refs remapped into the copy", "[model_api]") {
    const Floats2d X = random_array(5, 3, 1);
    auto model = make_model();
    model.initialize(X);
    auto& cl = model.layer<1>();
    model.set_ref("block", &cl[2]);
    cl[0].set_ref("inner", &cl[0].layer());
    Relu<4> outside;
    model.set_ref("outside", &outside);

    auto dup = copy(model);
    const auto a = model.walk();
    const auto b = dup.walk();
    REQUIRE(a.size() == b.size());
    std::set<std::uint64_t> ids;
    for (auto* n : a) ids.insert(n->id());
    for (std::size_t i = 0; i < a.size(); ++i) {
        CHECK(a[i] != b[i]);
        CHECK(a[i]->name() == b[i]->name());
        CHECK(!ids.count(b[i]->id()));
    }
    CHECK(all_params(model) == all_params(dup));
    CHECK(&dup.get_ref("block") == &dup.layer<1>()[2]);
    CHECK(&dup.layer<1>()[0].get_ref("inner") == &dup.layer<1>()[0].layer());
    CHECK(&dup.get_ref("outside") == &outside);  // outside the tree: kept
    CHECK(same(model.predict(X), dup.predict(X)));

    // Training the copy leaves the original as it was.
    const auto before = all_params(model);
    const Floats2d Y0 = model.predict(X);
    Optimizer opt = Adam(0.1);
    for (int i = 0; i < 3; ++i) train_step(dup, X, opt);
    CHECK(all_params(model) == before);
    CHECK(same(model.predict(X), Y0));
    CHECK(all_params(dup) != before);
}

TEST_CASE("model api: replace_node copies a model of the same type into the node's place", "[model_api]") {
    const Floats2d X = random_array(5, 3, 1);
    auto model = make_model();
    model.initialize(X);
    auto& cl = model.layer<1>();
    auto& old = cl[1];
    const std::uint64_t old_id = old.id();
    model.set_ref("block", &old);
    model.set_ref("block_inner", &old.layer());
    model.set_ref("other", &cl[2]);

    // The clone after Relu<4> holds Residual<Relu<4, 4>>: the width before it is in its type.
    auto repl = residual(Relu<4, 4>());
    repl.initialize(random_array(2, 4, 7));
    repl.set_ref("inner", &repl.layer());
    // Different weights from the old node's.
    REQUIRE(values(repl.layer().get_param("W")) != values(old.layer().get_param("W")));

    CHECK(model.replace_node(old, repl));
    CHECK(&model.get_ref("block") == &cl[1]);  // the same address: refs to it stay valid
    CHECK(values(cl[1].layer().get_param("W")) == values(repl.layer().get_param("W")));
    CHECK(values(cl[1].layer().get_param("b")) == values(repl.layer().get_param("b")));
    CHECK(cl[1].id() != old_id);
    CHECK(cl[1].id() != repl.id());
    CHECK(cl[1].layer().id() != repl.layer().id());
    CHECK(&cl[1].get_ref("inner") == &cl[1].layer());  // remapped from the replacement's
    CHECK(&repl.get_ref("inner") == &repl.layer());     // the replacement is untouched
    CHECK_FALSE(model.has_ref("block_inner"));          // the old node's child is gone
    CHECK(&model.get_ref("other") == &cl[2]);
    const Floats2d Y = model.predict(X);  // still runs
    CHECK(Y.shape(1) == 2);

    SECTION("a node not in the tree: false") {
        auto stray = residual(Relu<4, 4>());
        CHECK_FALSE(model.replace_node(stray, repl));
    }
    SECTION("a model of another type: E233 naming the path and both names") {
        auto mish = residual(Mish<4>());
        try {
            model.replace_node(cl[0], mish);
            FAIL("no error");
        } catch (const Error& e) {
            CHECK(e.id() == "tenon-E233");
            CHECK_THAT(e.what(), Contains("chain>1>clone>0>residual") && Contains("residual(relu)") &&
                                     Contains("residual(mish)"));
        }
        CHECK(values(cl[0].layer().get_param("W")) != std::vector<float>{});  // unchanged, still allocated
    }
    SECTION("the same names but another static width: E233 says which width differs") {
        // (residual(Relu<4>()) is Residual<Relu<4, 4>>, the copies' type: its nO is its nI.)
        auto loose = residual(Relu<>({.nO = 4}));  // nO and nI dyn in its type; the copies have 4
        loose.initialize(random_array(2, 4, 7));
        const auto W = values(cl[0].layer().get_param("W"));
        try {
            model.replace_node(cl[0], loose);
            FAIL("no error");
        } catch (const Error& e) {
            CHECK(e.id() == "tenon-E233");
            CHECK_THAT(e.what(), Contains("chain>1>clone>0>residual has nO 4 in its type") &&
                                     Contains("the replacement's 'residual(relu)' has dyn"));
        }
        CHECK(values(cl[0].layer().get_param("W")) == W);  // unchanged
    }
    SECTION("a replacement seen only as a Node: E233 (its copy is compiled for the type it is passed as)") {
        const Node& as_node = repl;
        const auto W = values(cl[0].layer().get_param("W"));
        try {
            model.replace_node(cl[0], as_node);
            FAIL("no error");
        } catch (const Error& e) {
            CHECK(e.id() == "tenon-E233");
            CHECK_THAT(e.what(), Contains("as its own model type"));
        }
        CHECK(values(cl[0].layer().get_param("W")) == W);  // unchanged
    }
    SECTION("the root itself") {
        auto other = make_model();
        other.initialize(random_array(4, 3, 9));
        CHECK(model.replace_node(model, other));
        CHECK(all_params(model) == all_params(other));
    }
}

TEST_CASE("model api: remove_node takes a copy out of a clone and re-points refs", "[model_api]") {
    const Floats2d X = random_array(5, 3, 1);
    auto model = make_model();
    model.initialize(X);
    auto& cl = model.layer<1>();
    const std::uint64_t id2 = cl[2].id();
    const auto W2 = values(cl[2].layer().get_param("W"));
    model.set_ref("last", &cl[2]);
    model.set_ref("last_inner", &cl[2].layer());
    model.set_ref("gone", &cl[1]);
    cl[2].set_ref("first", &cl[0]);
    const std::size_t n_before = model.walk().size();

    CHECK(model.remove_node(cl[1]));
    REQUIRE(cl.size() == 2);
    CHECK(cl.name() == "clone(residual(relu) x2)");
    CHECK(model.walk().size() == n_before - 2);
    CHECK(cl[1].id() == id2);  // the later copy moved down, with its id and weights
    CHECK(values(cl[1].layer().get_param("W")) == W2);
    CHECK(&model.get_ref("last") == &cl[1]);
    CHECK(&model.get_ref("last_inner") == &cl[1].layer());
    CHECK(&cl[1].get_ref("first") == &cl[0]);
    CHECK_FALSE(model.has_ref("gone"));
    CHECK(model.predict(X).shape(1) == 2);

    SECTION("a node in a fixed slot: E234, and nothing changes") {
        try {
            model.remove_node(cl[0].layer());
            FAIL("no error");
        } catch (const Error& e) {
            CHECK(e.id() == "tenon-E234");
            CHECK_THAT(e.what(), Contains("chain>1>clone>0>residual>relu") && Contains("replace_node"));
        }
        CHECK_THROWS_WITH(model.remove_node(model.layer<0>()), Contains("tenon-E234") && Contains("chain>0>relu"));
        CHECK(cl.size() == 2);
        CHECK(model.walk().size() == n_before - 2);
    }
    SECTION("not in the tree, or the root: false") {
        auto stray = residual(Relu<4>());
        CHECK_FALSE(model.remove_node(stray));
        CHECK_FALSE(model.remove_node(model));
    }
}

TEST_CASE("model api: use_params swaps values in for a scope", "[model_api]") {
    const Floats2d X = random_array(5, 3, 1);
    auto model = Relu<4>() >> Linear<2>();  // (a Softmax starts with zero weights)
    model.initialize(X);
    auto& relu = model.layer<0>();
    const auto W = values(relu.get_param("W"));
    std::vector<float> other(W.size(), 0.25f);
    const Floats2d Y0 = model.predict(X);
    {
        ParamValues p{{{relu.id(), "W"}, CParamView{other.data(), {other.size()}, 1}},
                      {{12345678, "W"}, CParamView{other.data(), {other.size()}, 1}}};  // not in the model: ignored
        auto guard = use_params(model, p);
        CHECK(values(relu.get_param("W")) == other);
        CHECK_FALSE(same(model.predict(X), Y0));
    }
    CHECK(values(relu.get_param("W")) == W);
    CHECK(same(model.predict(X), Y0));

    SECTION("a value of another size: E235, nothing swapped") {
        std::vector<float> small(W.size() - 1, 1.0f);
        const auto b = values(model.layer<1>().get_param("b"));
        std::vector<float> b2(b.size(), 3.0f);
        ParamValues p{{{model.layer<1>().id(), "b"}, CParamView{b2.data(), {b2.size()}, 1}},
                      {{relu.id(), "W"}, CParamView{small.data(), {small.size()}, 1}}};
        CHECK_THROWS_WITH(UseParams(model, p), Contains("tenon-E235") && Contains("chain>0>relu"));
        CHECK(values(relu.get_param("W")) == W);
        CHECK(values(model.layer<1>().get_param("b")) == b);
    }
}

TEST_CASE("model api: UseAverages after a re-initialisation with other widths errors (E235)", "[model_api]") {
    auto model = Linear<>();
    model.initialize(random_array(4, 3, 1), random_array(4, 2, 2));
    Optimizer opt = Adam(0.1);
    for (int i = 0; i < 2; ++i) train_step(model, random_array(4, 3, 1), opt);
    REQUIRE(opt.average(model.id(), "W") != nullptr);
    {
        const auto W = values(model.get_param("W"));
        UseAverages avg(model, opt);  // the same widths: swapped in
        CHECK(values(model.get_param("W")) != W);
    }
    // Re-initialise with other widths: the same node id, W of 2x5 instead of 2x3.
    model.set_dim("nI", 5, true);
    model.initialize(random_array(4, 5, 3), random_array(4, 2, 2));
    const auto W = values(model.get_param("W"));
    REQUIRE(W.size() == 10);
    CHECK_THROWS_WITH(UseAverages(model, opt), Contains("tenon-E235"));
    CHECK(values(model.get_param("W")) == W);

    SECTION("re-initialised while the guard lives: the destructor does not write the old size") {
        auto m2 = Linear<>();
        m2.initialize(random_array(4, 3, 1), random_array(4, 2, 2));
        Optimizer o2 = Adam(0.1);
        train_step(m2, random_array(4, 3, 1), o2);
        std::vector<float> W2;
        {
            UseAverages avg(m2, o2);
            m2.set_dim("nI", 5, true);
            m2.initialize(random_array(4, 5, 3), random_array(4, 2, 2));
            W2 = values(m2.get_param("W"));
        }
        CHECK(values(m2.get_param("W")) == W2);
    }
}

TEST_CASE("model api: get_gradients maps (id, name) to the parameter and its gradient", "[model_api]") {
    const Floats2d X = random_array(5, 3, 1);
    auto model = Relu<4>() >> Linear<2>();  // (a Softmax starts with zero weights: no gradient to Relu)
    model.initialize(X);
    auto [Y, backprop] = model.begin_update(X);
    Floats2d dY(Y.shape());
    std::fill(dY.begin(), dY.end(), 0.5f);
    backprop(dY);
    auto grads = model.get_gradients();
    std::set<ParamKey> want;
    for (Node* n : model.walk())
        for (const auto& name : n->param_names())
            if (n->has_param(name)) want.insert({n->id(), name});
    REQUIRE(want.size() == 4);
    std::set<ParamKey> got;
    for (auto& [k, v] : grads) got.insert(k);
    CHECK(got == want);
    auto& relu = model.layer<0>();
    auto [p, g] = grads.at({relu.id(), "W"});
    CHECK(p.data == relu.get_param("W").data);
    CHECK(g.data == relu.get_grad("W").data);
    CHECK(p.size() == 12);
    CHECK(nonzero(g));

    auto fresh = Relu<4>();  // nothing allocated yet
    CHECK(fresh.get_gradients().empty());
}

TEST_CASE("model api: set_dropout_rate sets the attribute on the nodes whose name matches", "[model_api]") {
    auto model = Relu<4>() >> Dropout(0.1) >> Relu<4>() >> Dropout(0.2) >> Softmax<2>();
    set_dropout_rate(model, 0.5);
    int n = 0;
    for (Node* node : model.walk()) {
        if (node->name() == "dropout") {
            CHECK(node->attr_as<double>("dropout_rate") == 0.5);
            ++n;
        } else {
            CHECK_FALSE(node->has_attr("dropout_rate"));
        }
    }
    CHECK(n == 2);
    auto& r = set_dropout_rate(model, 0.3, {{"relu", "my_rate"}});
    CHECK(&r == &model);
    CHECK(model.layer<0>().attr_as<double>("my_rate") == 0.3);
    CHECK(model.layer<1>().attr_as<double>("dropout_rate") == 0.5);
}

TEST_CASE("model api: a run-time error deep in a clone/residual stack names the node by its path", "[model_api]") {
    // A maxout deep in the stack that was re-initialised for input width 10, where the
    // window before it gives 12: its own width check throws at run time. (A run-time window:
    // with expand_window<1>() the types would fix the Maxout's nI at 12, and set_dim refuse 10.)
    auto model = Relu<4>() >> clone(residual(expand_window(1) >> Maxout<4>({.nP = 2})), 2);
    const Floats2d X = random_array(5, 3, 1);
    model.initialize(X);
    auto& maxout = model.layer<1>()[0].layer().layer<1>();
    maxout.set_dim("nI", 10, true);
    maxout.initialize();
    const std::string path = "chain>1>clone>0>residual>chain>1>maxout";
    const auto expect_path = [&](auto&& call, const std::string& p) {
        try {
            call();
            FAIL("no error");
        } catch (const ShapeError& e) {  // the type is kept
            CHECK(e.id() == "tenon-E101");
            CHECK(e.node_path() == p);
            CHECK_THAT(e.what(), Catch::StartsWith("[tenon-E101] " + p + ": "));
            CHECK_THAT(e.message(), Catch::StartsWith(p + ": "));
            CHECK_THAT(e.what(), Contains("expected width 10 but found 12"));
        }
    };
    expect_path([&] { (void)model.predict(X); }, path);
    expect_path([&] { (void)model.begin_update(X); }, path);
    expect_path([&] { (void)model(X, false); }, path);
    // Called on an inner model, the path starts there.
    auto& inner = model.layer<1>();
    expect_path([&] { (void)inner.predict(random_array(5, 4, 2)); }, "clone>0>residual>chain>1>maxout");
    // The same error again (a second call): the path is not prefixed twice.
    expect_path([&] { (void)model.predict(X); }, path);

    // A combinator's own error names the combinator's path (ids kept: E101 from the chain). (The
    // window is a run-time value: with expand_window<1>() the types would fix 12 != 10, a
    // compile-time E001, tests/compile_fail/e001_nested_residual_window.cpp.)
    auto bad = Relu<4>() >> clone(residual(expand_window(1) >> Maxout<4, 10>({.nP = 2})), 2);
    try {
        bad.initialize(X);
        FAIL("no error");
    } catch (const Error& e) {
        CHECK(e.id() == "tenon-E101");
        CHECK(e.node_path() == "chain>1>clone>0>residual>chain");
        CHECK_THAT(e.what(), Catch::StartsWith("[tenon-E101] chain>1>clone>0>residual>chain: ") &&
                                 Contains("maxout expects input width 10"));
    }
    // An error of the model called keeps its own name.
    auto relu = Relu<4, 3>();
    relu.initialize();
    try {
        (void)relu.predict(random_array(2, 5, 1));
        FAIL("no error");
    } catch (const ShapeError& e) {
        CHECK(e.node_path() == "relu");
        CHECK_THAT(e.what(), Catch::StartsWith("[tenon-E101] relu: "));
    }
}
