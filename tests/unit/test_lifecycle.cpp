// Thinc's Model API on tenon models: shape inference in initialize, dims / params / grads /
// attrs by name, ids, walk(), chain flattening, clone, noop, seeds, predict vs begin_update,
// dropout only in training, finish_update and averaged parameters.
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "tenon/tenon.hpp"
#include "unit/helpers.hpp"

using namespace tenon;
using Catch::Matchers::Contains;

namespace {
using testing::nonzero;
using testing::random_array;
using testing::same;
using testing::values;

std::vector<std::string> names(const std::vector<Node*>& nodes) {
    std::vector<std::string> out;
    for (auto* n : nodes) out.push_back(n->name());
    return out;
}
}  // namespace

TEST_CASE("lifecycle: initialize infers dyn dims from X and Y", "[lifecycle]") {
    const Floats2d X = random_array(5, 3, 1);
    const Floats2d Y = random_array(5, 4, 2, 0.0, 1.0);

    SECTION("Relu gets nI from X") {
        auto relu = Relu<8>();
        CHECK(relu.has_dim("nO"));
        CHECK_FALSE(relu.has_dim("nI"));
        relu.initialize(X);
        CHECK(relu.get_dim("nI") == 3);
        CHECK(relu.get_dim("nO") == 8);
        CHECK(relu.predict(X).shape() == std::array<std::size_t, 2>{5, 8});
    }
    SECTION("Relu<>() gets nI from X and nO from Y") {
        auto relu = Relu<>();
        relu.initialize(X, Y);
        CHECK(relu.get_dim("nI") == 3);
        CHECK(relu.get_dim("nO") == 4);
    }
    SECTION("Softmax gets nO from Y and nI from X") {
        auto sm = Softmax<>();
        CHECK_FALSE(sm.has_dim("nO"));
        CHECK_FALSE(sm.has_dim("nI"));
        sm.initialize(X, Y);
        CHECK(sm.get_dim("nO") == 4);
        CHECK(sm.get_dim("nI") == 3);
        CHECK(sm.get_param("W").shape[0] == 4);
        CHECK(sm.get_param("W").shape[1] == 3);
    }
    SECTION("a chain passes X forward and Y to the last layer") {
        auto model = Relu<8>() >> Softmax<>();
        CHECK_FALSE(model.has_dim("nI"));
        CHECK_FALSE(model.has_dim("nO"));
        model.initialize(X, Y);
        CHECK(model.layer<0>().get_dim("nI") == 3);
        CHECK(model.layer<0>().get_dim("nO") == 8);
        CHECK(model.layer<1>().get_dim("nI") == 8);
        CHECK(model.layer<1>().get_dim("nO") == 4);
        CHECK(model.get_dim("nI") == 3);
        CHECK(model.get_dim("nO") == 4);
        const Floats2d P = model.predict(X);
        CHECK(P.shape() == std::array<std::size_t, 2>{5, 4});
    }
    SECTION("Y reaches the layers before a trailing dropout") {
        auto model = Relu<6>() >> Linear<>() >> Dropout(0.1);
        model.initialize(X, Y);
        CHECK(model.layer<1>().get_dim("nO") == 4);
    }
    SECTION("dims given as options") {
        auto l = Linear<>({.nO = 7, .nI = 3});
        CHECK(l.get_dim("nO") == 7);
        CHECK(l.get_dim("nI") == 3);
        l.initialize();
        CHECK(l.get_param("W").shape[0] == 7);
    }
    SECTION("a dim that no data determines is an error, not a guess") {
        auto relu = Relu<>();
        CHECK_THROWS_AS(relu.initialize(X), Error);
        CHECK_THROWS_WITH(relu.initialize(X), Contains("nO") && Contains("not known"));
    }
}

TEST_CASE("lifecycle: static dims live in the type", "[lifecycle]") {
    auto relu = Relu<8, 3>();
    static_assert(decltype(relu)::static_nO == 8 && decltype(relu)::static_nI == 3);
    static_assert(decltype(Relu<8>() >> Softmax<4>())::static_nO == 4);
    static_assert(decltype(Relu<8, 3>() >> Softmax<4>())::static_nI == 3);
    CHECK(relu.get_dim("nO") == 8);
    CHECK(relu.get_dim("nI") == 3);
    CHECK_NOTHROW(relu.set_dim("nI", 3));  // setting the same value is fine
    CHECK_THROWS_AS(relu.set_dim("nI", 4), ShapeError);
    CHECK_THROWS_WITH(relu.set_dim("nI", 4), Contains("relu") && Contains("static 3") && Contains("4"));
    CHECK_THROWS_AS(relu.set_dim("nI", 4, /*force=*/true), ShapeError);  // force cannot beat the type
    CHECK_THROWS_AS(relu.set_dim("nO", 9), ShapeError);
    CHECK(relu.get_dim("nI") == 3);
    relu.initialize();  // everything is known: no sample needed
    CHECK(relu.get_param("W").shape[0] == 8);
    CHECK(relu.get_param("W").shape[1] == 3);
    CHECK_THROWS_AS(relu.initialize(random_array(2, 4, 3)), ShapeError);  // X contradicts the type
}

TEST_CASE("lifecycle: dims by name", "[lifecycle]") {
    auto l = Linear<>();
    CHECK(l.dim_names() == std::vector<std::string>{"nO", "nI"});
    CHECK_FALSE(l.has_dim("nI"));
    CHECK_FALSE(l.has_dim("nope"));
    CHECK_THROWS_WITH(l.get_dim("nI"), Contains("not known yet"));
    CHECK_THROWS_WITH(l.get_dim("nope"), Contains("has no dimension 'nope'"));
    CHECK_THROWS_WITH(l.set_dim("nope", 2), Contains("has no dimension 'nope'"));
    l.set_dim("nI", 5);
    CHECK(l.has_dim("nI"));
    CHECK(l.get_dim("nI") == 5);
    CHECK_THROWS_AS(l.set_dim("nI", 6), ShapeError);  // already known
    l.set_dim("nO", 2);
    l.initialize();
    CHECK(l.has_param("W"));
    // force changes it and drops the parameters, whose shape depended on it.
    l.set_dim("nI", 6, /*force=*/true);
    CHECK(l.get_dim("nI") == 6);
    CHECK_FALSE(l.has_param("W"));
    CHECK_THROWS_AS(l.predict(random_array(1, 6, 1)), Error);  // no longer initialized
    l.initialize();
    CHECK(l.get_param("W").shape[1] == 6);
}

TEST_CASE("lifecycle: params and grads by name", "[lifecycle]") {
    auto l = Linear<3, 2>();
    CHECK(l.param_names() == std::vector<std::string>{"W", "b"});
    CHECK_FALSE(l.has_param("W"));
    CHECK_FALSE(l.has_grad("W"));
    CHECK_THROWS_WITH(l.get_param("W"), Contains("not allocated"));
    CHECK_THROWS_WITH(l.get_param("Q"), Contains("has no parameter 'Q'"));
    l.initialize();
    REQUIRE(l.has_param("W"));
    REQUIRE(l.has_grad("W"));
    ParamView W = l.get_param("W");
    CHECK(W.rank == 2);
    CHECK(W.shape[0] == 3);
    CHECK(W.shape[1] == 2);
    CHECK(W.size() == 6);
    CHECK(l.get_param("b").rank == 1);
    auto Wm = W.as<2>();
    CHECK(Wm.shape() == std::array<std::size_t, 2>{3, 2});
    CHECK_THROWS_AS(W.as<1>(), Error);

    // set_param copies and checks the shape.
    Floats2d newW({3, 2}, {1, 2, 3, 4, 5, 6});
    l.set_param("W", param_view(newW));
    CHECK(values(l.get_param("W")) == std::vector<float>{1, 2, 3, 4, 5, 6});
    newW(0, 0) = 100.0f;  // a copy, not a reference
    CHECK(l.get_param("W").data[0] == 1.0f);
    Floats2d wrong({2, 3});
    CHECK_THROWS_AS(l.set_param("W", param_view(wrong)), ShapeError);
    CHECK_THROWS_WITH(l.set_param("W", param_view(wrong)), Contains("expected shape (3, 2)") && Contains("(2, 3)"));
    Floats1d wrong_rank({6});
    CHECK_THROWS_AS(l.set_param("W", param_view(wrong_rank)), ShapeError);
    CHECK(values(l.get_param("W")) == std::vector<float>{1, 2, 3, 4, 5, 6});  // unchanged
    CHECK_THROWS_AS(l.set_param("nope", param_view(newW)), Error);

    // The effect of set_param on predict: Y = X W^T + b.
    Floats1d b({3}, {0.5f, -1.0f, 0.0f});
    l.set_param("b", param_view(b));
    const Floats2d X({1, 2}, {1.0f, 10.0f});
    const Floats2d Y = l.predict(X);
    CHECK(Y(0, 0) == Approx(1 + 20 + 0.5));
    CHECK(Y(0, 1) == Approx(3 + 40 - 1.0));
    CHECK(Y(0, 2) == Approx(5 + 60));

    // Gradients start at zero; set_grad replaces, inc_grad adds; both check shapes.
    for (float g : l.get_grad("W")) CHECK(g == 0.0f);
    Floats2d g1({3, 2}, {1, 1, 1, 1, 1, 1});
    l.set_grad("W", param_view(g1));
    l.inc_grad("W", param_view(newW));
    CHECK(values(l.get_grad("W")) == std::vector<float>{101, 3, 4, 5, 6, 7});
    l.set_grad("W", param_view(g1));
    CHECK(values(l.get_grad("W")) == std::vector<float>{1, 1, 1, 1, 1, 1});
    CHECK_THROWS_AS(l.set_grad("W", param_view(wrong)), ShapeError);
    CHECK_THROWS_AS(l.inc_grad("W", param_view(wrong)), ShapeError);
    CHECK(values(l.get_grad("W")) == std::vector<float>{1, 1, 1, 1, 1, 1});

    // Const access.
    const auto& cl = l;
    CParamView cW = cl.get_param("W");
    static_assert(std::is_same_v<decltype(cW.data), const float*>);
    CHECK(cW.data[5] == 6.0f);
    CHECK(cl.get_grad("W").data[0] == 1.0f);
}

TEST_CASE("lifecycle: attrs by name", "[lifecycle]") {
    auto l = Relu<4, 2>();
    CHECK_FALSE(l.has_attr("tag"));
    CHECK_THROWS_WITH(l.get_attr("tag"), Contains("has no attribute 'tag'"));
    l.set_attr("tag", std::string("hidden"));
    l.set_attr("count", std::int64_t{3});
    l.set_attr("scale", 0.5);
    l.set_attr("flag", true);
    CHECK(l.has_attr("tag"));
    CHECK(std::get<std::string>(l.get_attr("tag")) == "hidden");
    CHECK(std::get<std::int64_t>(l.get_attr("count")) == 3);
    CHECK(std::get<double>(l.get_attr("scale")) == 0.5);
    CHECK(std::get<bool>(l.get_attr("flag")));
    l.set_attr("count", std::int64_t{4});  // overwrite
    CHECK(std::get<std::int64_t>(l.get_attr("count")) == 4);

    auto sm = Softmax<3>({.temperature = 2.0});
    CHECK(std::get<double>(sm.get_attr("softmax_temperature")) == 2.0);
    CHECK(std::get<bool>(sm.get_attr("softmax_normalize")));
    auto d = Dropout(0.25);
    CHECK(std::get<double>(d.get_attr("dropout_rate")) == 0.25);
    CHECK(d.rate() == 0.25);
}

TEST_CASE("lifecycle: names and ids", "[lifecycle]") {
    auto a = Relu<4>();
    auto b = Softmax<2>();
    CHECK(a.name() == "relu");
    CHECK(b.name() == "softmax");
    CHECK(Linear<>().name() == "linear");
    CHECK(Mish<>().name() == "mish");
    CHECK(Maxout<>().name() == "maxout");
    CHECK(Sigmoid<>().name() == "sigmoid");
    CHECK(sigmoid_activation().name() == "sigmoid_activation");
    CHECK(LayerNorm<>().name() == "layernorm");
    CHECK(Dropout().name() == "dropout");
    CHECK(noop().name() == "noop");
    CHECK(a.id() != b.id());

    auto c = a;  // a copy is a new model: a new id
    CHECK(c.id() != a.id());
    CHECK(c.name() == a.name());
    const auto id = a.id();
    auto m = std::move(a);  // a move is the same model
    CHECK(m.id() == id);

    auto model = Relu<4>() >> Relu<4>() >> Softmax<2>();
    CHECK(model.name() == "relu>>relu>>softmax");
    std::set<std::uint64_t> ids;
    for (Node* n : model.walk()) ids.insert(n->id());
    CHECK(ids.size() == 4);
}

TEST_CASE("lifecycle: walk() is breadth-first", "[lifecycle]") {
    auto model = Relu<8>({.dropout = 0.2, .normalize = true}) >> Softmax<>();
    auto nodes = model.walk();
    CHECK(names(nodes) == std::vector<std::string>{"relu>>softmax", "relu", "softmax", "layernorm", "dropout"});
    CHECK(nodes[0] == &model);
    CHECK(nodes[1] == &model.layer<0>());
    CHECK(nodes[2] == &model.layer<1>());

    // Deeper: the children of the first relu come after every node of the level above.
    auto deep = Relu<4>({.normalize = true}) >> Mish<4>({.dropout = 0.1}) >> Linear<2>();
    CHECK(names(deep.walk()) ==
          std::vector<std::string>{"relu>>mish>>linear", "relu", "mish", "linear", "layernorm", "dropout"});

    const auto& cmodel = model;
    CHECK(cmodel.walk().size() == 5);

    // The children's params are reachable by walking, and initialize reaches them.
    model.initialize(random_array(3, 5, 1), random_array(3, 2, 2, 0, 1));
    CHECK(nodes[3]->has_param("G"));
    CHECK(nodes[3]->get_dim("nI") == 8);
    CHECK(std::get<double>(nodes[4]->get_attr("dropout_rate")) == 0.2);
}

TEST_CASE("lifecycle: chains are flat", "[lifecycle]") {
    auto a = Relu<4>();
    auto b = Mish<4>();
    auto c = Softmax<2>();
    using Flat = decltype(chain(a, b, c));
    static_assert(std::is_same_v<decltype(chain(chain(a, b), c)), Flat>);
    static_assert(std::is_same_v<decltype(chain(a, chain(b, c))), Flat>);
    static_assert(std::is_same_v<decltype(a >> b >> c), Flat>);
    static_assert(std::is_same_v<decltype(a >> (b >> c)), Flat>);
    // Static widths propagate: each dyn nI takes the static nO before it.
    static_assert(std::is_same_v<Flat, Chain<Relu<4>, Mish<4, 4>, Softmax<2, 4>>>);
    static_assert(Flat::size() == 3);
    static_assert(Model<Flat>);
    auto m = a >> b >> c;
    CHECK(m.walk().size() == 4);

    // Copies into a chain are new models; the originals stay usable.
    CHECK(m.layer<0>().id() != a.id());
    auto moved_id = b.id();
    auto m2 = a >> std::move(b);
    CHECK(m2.layer<1>().id() == moved_id);
}

TEST_CASE("lifecycle: clone makes distinct copies", "[lifecycle]") {
    fix_random_seed(0);
    auto model = clone(Relu<4>(), 3);
    CHECK(model.size() == 3);
    CHECK(model.name() == "clone(relu x3)");
    model.initialize(random_array(5, 6, 7));
    CHECK(model[0].get_dim("nI") == 6);
    CHECK(model[1].get_dim("nI") == 4);
    CHECK(model[2].get_dim("nI") == 4);
    CHECK(model[0].id() != model[1].id());
    CHECK(model[1].id() != model[2].id());
    CHECK(model.walk().size() == 4);
    const auto w1 = values(model[1].get_param("W"));
    const auto w2 = values(model[2].get_param("W"));
    CHECK(w1.size() == w2.size());
    CHECK(w1 != w2);
    CHECK(model.predict(random_array(2, 6, 8)).shape() == std::array<std::size_t, 2>{2, 4});

    // clone(x, 0) is the identity.
    auto none = clone(Relu<4>(), 0);
    const Floats2d X = random_array(2, 5, 9);
    CHECK(same(none.predict(X), X));
}

TEST_CASE("lifecycle: noop is the identity", "[lifecycle]") {
    auto n = noop();
    const Floats2d X = random_array(3, 4, 1);
    CHECK(same(n.predict(X), X));
    auto [Y, bp] = n.begin_update(X);
    CHECK(same(Y, X));
    const Floats2d dY = random_array(3, 4, 2);
    CHECK(same(bp(dY), dY));

    auto m = noop() >> Relu<3>();
    m.initialize(X);
    CHECK(same(m.predict(X), m.layer<1>().predict(X)));
}

TEST_CASE("lifecycle: fix_random_seed makes initialisation reproducible", "[lifecycle]") {
    auto make = [](std::uint64_t seed) {
        fix_random_seed(seed);
        auto m = Relu<6>() >> Maxout<5>() >> Linear<3>();
        m.initialize(random_array(2, 4, 1));
        std::vector<float> all;
        for (Node* n : m.walk())
            for (auto& p : n->param_names())
                if (n->has_param(p)) {
                    auto v = values(n->get_param(p));
                    all.insert(all.end(), v.begin(), v.end());
                }
        return all;
    };
    const auto a = make(42), b = make(42), c = make(43);
    CHECK(a.size() == b.size());
    CHECK(a == b);
    CHECK(a != c);
}

TEST_CASE("lifecycle: predict is const and matches begin_update without dropout", "[lifecycle]") {
    fix_random_seed(1);
    auto model = Relu<8>({.normalize = true}) >> Mish<6>() >> Maxout<5>({.normalize = true}) >> Sigmoid<4>() >>
                 Linear<4>() >> sigmoid_activation() >> LayerNorm<>() >> Dropout(0.0) >> Softmax<3>();
    const Floats2d X = random_array(7, 5, 3);
    model.initialize(X);
    for (Node* n : model.walk())  // non-zero weights everywhere so every layer matters
        for (auto& p : n->param_names())
            if (n->has_param(p)) {
                Rng rng(n->id());
                for (float& v : n->get_param(p)) v = static_cast<float>(rng.uniform(-1, 1));
            }
    const auto& cmodel = model;
    static_assert(std::is_same_v<decltype(cmodel.predict(X)), Floats2d>);
    const Floats2d P = cmodel.predict(X);
    auto [Y, bp] = model.begin_update(X);
    CHECK(same(P, Y));
    auto [Y2, bp2] = model(X, false);
    CHECK(same(P, Y2));
    CHECK(same(cmodel.predict(X), P));  // no state changed
    for (std::size_t r = 0; r < P.shape(0); ++r) {
        double s = 0;
        for (std::size_t c = 0; c < P.shape(1); ++c) s += P(r, c);
        CHECK(s == Approx(1.0));
    }
}

TEST_CASE("lifecycle: dropout is active only in training", "[lifecycle]") {
    const Floats2d X = random_array(20, 50, 5, 1.0, 2.0);  // no zeros in X
    auto d = Dropout(0.5);
    d.initialize(X);
    CHECK(same(d.predict(X), X));
    CHECK(same(d(X, false).first, X));
    auto [Y, bp] = d.begin_update(X);
    std::size_t zeros = 0;
    for (std::size_t i = 0; i < X.size(); ++i) {
        if (Y[i] == 0.0f)
            ++zeros;
        else
            CHECK(Y[i] == X[i] * 2.0f);  // kept values are scaled by 1 / (1 - rate)
    }
    CHECK(zeros > X.size() / 4);
    CHECK(zeros < 3 * X.size() / 4);

    d.set_attr("is_enabled", false);
    CHECK(same(d.begin_update(X).first, X));
    d.set_attr("is_enabled", true);
    d.set_attr("dropout_rate", 0.0);
    CHECK(same(d.begin_update(X).first, X));

    // Inside a layer: same story.
    fix_random_seed(3);
    auto relu = Relu<30>({.dropout = 0.5});
    relu.initialize(X);
    const Floats2d P = relu.predict(X);
    CHECK(same(relu(X, false).first, P));
    const Floats2d T = relu.begin_update(X).first;
    std::size_t dropped = 0;
    for (std::size_t i = 0; i < P.size(); ++i) {
        if (P[i] != 0.0f && T[i] == 0.0f) ++dropped;
        if (T[i] != 0.0f) CHECK(T[i] == Approx(2.0f * P[i]));
    }
    CHECK(dropped > 0);
}

TEST_CASE("lifecycle: finish_update applies the optimizer and zeroes the gradients", "[lifecycle]") {
    fix_random_seed(2);
    // Softmax's W starts at zero (Thinc's default), which would stop the gradient reaching relu.
    auto model = Relu<5>({.normalize = true}) >> Softmax<3>({.init_W = glorot_uniform_init});
    const Floats2d X = random_array(4, 6, 1);
    model.initialize(X);
    auto& relu = model.layer<0>();
    const auto W0 = values(relu.get_param("W"));
    auto [Y, bp] = model.begin_update(X);
    bp(random_array(4, 3, 2));
    std::vector<Node*> with_params;
    for (Node* n : model.walk())
        for (auto& p : n->param_names())
            if (n->has_param(p)) {
                CHECK(nonzero(n->get_grad(p)));
                with_params.push_back(n);
            }
    CHECK(with_params.size() == 6);  // relu W b, layernorm G b, softmax W b

    Optimizer opt = Adam(0.01);
    model.finish_update(opt);
    for (Node* n : model.walk())
        for (auto& p : n->param_names())
            if (n->has_param(p)) {
                CHECK_FALSE(nonzero(n->get_grad(p)));
                CHECK(opt.nr_update(n->id(), p) == 1);
            }
    CHECK(values(relu.get_param("W")) != W0);
    CHECK(opt.nr_update(relu.id() + 1000000, "W") == 0);
}

// finish_update marks the gradients zero without clearing them (Node::Param::grad_lazy_zero).
TEST_CASE("lifecycle: gradients after finish_update are lazy zeros", "[lifecycle]") {
    auto model = Relu<5>() >> Softmax<3>();
    const Floats2d X = random_array(8, 4, 1);
    model.initialize(X);
    auto& out = model.layer<1>();  // (the Relu gets no gradient at first: Softmax starts with W = 0)
    auto step = [&] {
        auto [P, bp] = model.begin_update(X);
        bp(random_array(8, 3, 3));
    };
    Optimizer opt = Adam(0.01);
    step();
    model.finish_update(opt);
    bool zero = false;
    ParamView g = out.get_grad_for_overwrite("W", zero);
    CHECK(zero);  // its memory still holds the last gradient: the caller must write it all
    CHECK(nonzero(g));
    std::fill(g.begin(), g.end(), 2.0f);
    out.get_grad_for_overwrite("W", zero);
    CHECK_FALSE(zero);  // written since
    CHECK(values(out.get_grad("W")) == std::vector<float>(15, 2.0f));

    step();
    model.finish_update(opt);
    CHECK_FALSE(nonzero(out.get_grad("b")));  // get_grad clears a lazy zero
    out.inc_grad("W", out.get_param("W"));   // inc_grad adds to zero, not to the old values
    CHECK(values(out.get_grad("W")) == values(out.get_param("W")));
    model.finish_update(opt);
    const auto W1 = values(out.get_param("W"));
    model.finish_update(opt);  // no backprop: the optimizer sees a zero gradient
    const auto& cmodel = model;
    CHECK_FALSE(nonzero(cmodel.layer<1>().get_grad("W")));
    CHECK(values(out.get_param("W")) != W1);  // Adam's momentum still moves the weights
}

TEST_CASE("lifecycle: UseAverages swaps the averaged parameters in and back out", "[lifecycle]") {
    fix_random_seed(4);
    auto model = Relu<5>() >> Softmax<3>();
    const Floats2d X = random_array(8, 4, 1);
    const Floats2d Y = random_array(8, 3, 2, 0, 1);
    model.initialize(X, Y);
    Optimizer opt = Adam(0.05);
    for (int step = 0; step < 5; ++step) {
        auto [P, bp] = model.begin_update(X);
        Floats2d d(P.shape());
        for (std::size_t i = 0; i < d.size(); ++i) d[i] = P[i] - Y[i];
        bp(d);
        model.finish_update(opt);
    }
    auto& relu = model.layer<0>();
    const auto W = values(relu.get_param("W"));
    const Floats1d* avg = opt.average(relu.id(), "W");
    REQUIRE(avg != nullptr);
    const std::vector<float> A(avg->begin(), avg->end());
    REQUIRE(A != W);
    const Floats2d P_current = model.predict(X);
    {
        UseAverages swap(model, opt);
        CHECK(values(relu.get_param("W")) == A);
        CHECK_FALSE(same(model.predict(X), P_current));
    }
    CHECK(values(relu.get_param("W")) == W);
    CHECK(same(model.predict(X), P_current));
    // The optimizer's average is intact after the round trip.
    CHECK(std::vector<float>(opt.average(relu.id(), "W")->begin(), opt.average(relu.id(), "W")->end()) == A);
}

TEST_CASE("lifecycle: composing initialised layers keeps their weights", "[lifecycle]") {
    const Floats2d X = random_array(4, 3, 1);
    auto a = Relu<5>();
    a.initialize(X);
    auto b = Softmax<2>({.init_W = glorot_uniform_init});
    b.initialize(a.predict(X));
    auto model = a >> b;
    CHECK(model.get_dim("nI") == 3);
    CHECK(model.get_dim("nO") == 2);
    CHECK(same(model.predict(X), b.predict(a.predict(X))));  // usable at once, same weights
    auto half = a >> Softmax<2>();  // one part is not initialised: the chain is not either
    CHECK_THROWS_WITH(half.predict(X), Contains("not initialized"));

    auto copies = clone(a, 1);
    CHECK(same(copies.predict(X), a.predict(X)));
    // initialize() starts afresh: new weights.
    model.initialize(X);
    CHECK(values(model.layer<0>().get_param("W")) != values(a.get_param("W")));
}

TEST_CASE("lifecycle: chain inference passes widths through width-preserving layers, never guesses", "[lifecycle]") {
    const Floats2d X = random_array(5, 3, 1);
    const Floats2d Y = random_array(5, 4, 2);
    SECTION("Y reaches the last width-changing layer through a final Dropout") {
        auto m = Relu<8>() >> Softmax<>() >> Dropout(0.1);
        m.initialize(X, Y);
        CHECK(m.layer<1>().get_dim("nO") == 4);
        CHECK(m.get_dim("nO") == 4);
        CHECK(m.get_dim("nI") == 3);
    }
    SECTION("Y never reaches a hidden layer: its unknown width is an error, not a guess") {
        auto m = Relu<>() >> clone(Relu<>(), 1);
        CHECK_THROWS_WITH(m.initialize(X, Y), Contains("nO") && Contains("not known"));
    }
    SECTION("without a sample, widths flow through Dropout to the next layer") {
        auto m = Relu<8, 5>() >> Dropout(0.1) >> Softmax<3>();
        m.initialize();
        CHECK(m.layer<2>().get_dim("nI") == 8);
        CHECK(m.get_dim("nO") == 3);
        CHECK(m.get_dim("nI") == 5);
    }
    SECTION("a leading width-preserving layer: the chain's nI is the first real layer's") {
        auto m = Dropout(0.2) >> Relu<6>();
        m.initialize(X);
        CHECK(m.get_dim("nI") == 3);
        CHECK(m.get_dim("nO") == 6);
    }
    STATIC_REQUIRE(decltype(Dropout() >> noop())::width_preserving);
    STATIC_REQUIRE_FALSE(decltype(Dropout() >> Relu<>())::width_preserving);
}

TEST_CASE("lifecycle: Maxout's nP: Thinc's default 3, an option, or the type", "[lifecycle]") {
    const Floats2d X = random_array(4, 5, 3);
    CHECK(Maxout<2>().initialize(X).get_dim("nP") == 3);
    CHECK(Maxout<2>({.nP = 2}).initialize(X).get_param("W").shape[1] == 2);
    CHECK(Maxout<2, 5, 4>().get_dim("nP") == 4);
    CHECK_THROWS_AS((Maxout<2, 5, 4>({.nP = 2})), ShapeError);
}

TEST_CASE("lifecycle: multibatch of one array with shuffle", "[lifecycle][data]") {
    Floats2d X({10, 2});
    for (std::size_t i = 0; i < 10; ++i) X(i, 0) = static_cast<float>(i);
    std::multiset<float> seen;
    std::size_t batches = 0;
    for (auto B : multibatch(4, X, shuffle)) {
        ++batches;
        for (std::size_t r = 0; r < B.shape(0); ++r) seen.insert(B(r, 0));
    }
    CHECK(batches == 3);
    CHECK(seen.size() == 10);
    CHECK(std::set<float>(seen.begin(), seen.end()).size() == 10);
}

TEST_CASE("lifecycle: an unnormalized Softmax outside training gives logits and no backprop", "[lifecycle]") {
    const Floats2d X = random_array(3, 4, 5);
    Softmax<2> sm({.init_W = uniform_init, .normalize_outputs = false});
    sm.initialize(X);
    auto [logits, backprop] = sm(X, false);
    CHECK(same(logits, sm.predict(X)));
    CHECK(std::abs(logits(0, 0) + logits(0, 1) - 1.0f) > 1e-4f);  // not probabilities
    CHECK_THROWS_WITH(backprop(logits), Contains("unnormalized"));
    auto [P, bp_train] = sm(X, true);  // training always normalises
    CHECK(P(0, 0) + P(0, 1) == Approx(1.0f));
    CHECK_NOTHROW(bp_train(P));
}

TEST_CASE("lifecycle: attributes of the wrong type give a tenon::Error", "[lifecycle]") {
    Dropout d(0.5);
    d.set_attr("dropout_rate", std::string("half"));
    CHECK_THROWS_WITH(d.begin_update(Floats2d({1, 2})), Contains("dropout_rate") && Contains("number"));
    d.set_attr("dropout_rate", std::int64_t{0});  // an integer is a number
    CHECK(d.rate() == 0.0);
}

TEST_CASE("lifecycle: describe() shows every width, static ones marked", "[lifecycle]") {
    auto m = Relu<512, 784>({.dropout = 0.2}) >> Relu<512>() >> Softmax<>();
    const std::string before = describe(m);
    INFO(before);
    CHECK_THAT(before, Contains("relu nO=512(static) nI=784(static)"));
    CHECK_THAT(before, Contains("softmax nO=? nI=512(static) [not initialized]"));  // nI propagated in the type
    CHECK_THAT(before, Contains("  dropout"));
    m.initialize(Floats2d({2, 784}), Floats2d({2, 10}));
    const std::string after = describe(m);
    INFO(after);
    CHECK_THAT(after, Contains("softmax nO=10 nI=512(static)\n"));
    CHECK_THAT(after, Contains("relu>>relu>>softmax nO=10 nI=784(static)"));
}
