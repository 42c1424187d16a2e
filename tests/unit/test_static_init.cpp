// initialize() without sample data, wherever the types (static template widths) or the
// options (widths given at construction) fix every width: widths flow into and out of
// residual, clone, expand_window, add, concatenate, noop and the with_* wrappers, so that a
// spaCy-like tok2vec encoder initialises without data, with the dims, parameter shapes and
// (for the same seed) the weights that initialising with sample data gives. Where a width is
// really unknown, tenon-E105 still names the layer and the dim.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <string>
#include <utility>
#include <vector>

#include "tenon/tenon.hpp"
#include "unit/helpers.hpp"

using namespace tenon;
using Catch::Matchers::Contains;

namespace {
using testing::random_array;

// Every dim that some node declares but does not know, as "node.dim".
std::vector<std::string> unresolved(Node& model) {
    std::vector<std::string> out;
    for (Node* n : model.walk())
        for (const auto& d : n->dim_names())
            if (!n->has_dim(d)) out.push_back(n->name() + "." + d);
    return out;
}
// Every node initialised and every declared parameter allocated.
bool fully_initialized(Node& model) {
    for (Node* n : model.walk()) {
        if (!n->is_initialized()) return false;
        for (const auto& p : n->param_names())
            if (!n->has_param(p)) return false;
    }
    return true;
}
// The shapes of every parameter, in walk order, as "node.param(a,b,...)".
std::vector<std::string> param_shapes(Node& model) {
    std::vector<std::string> out;
    for (Node* n : model.walk())
        for (const auto& p : n->param_names()) {
            std::string s = n->name() + "." + p + "(";
            if (n->has_param(p)) {
                const CParamView v = std::as_const(*n).get_param(p);
                for (std::size_t i = 0; i < v.rank; ++i) {
                    if (i) s += ",";
                    s += std::to_string(v.shape[i]);
                }
            } else {
                s += "unallocated";
            }
            out.push_back(s + ")");
        }
    return out;
}
// Every parameter's values, in walk order.
std::vector<std::vector<float>> param_values(Node& model) {
    std::vector<std::vector<float>> out;
    for (Node* n : model.walk())
        for (const auto& p : n->param_names())
            if (n->has_param(p)) {
                const CParamView v = std::as_const(*n).get_param(p);
                out.emplace_back(v.begin(), v.end());
            }
    return out;
}
std::string error_id(auto&& f) {
    try {
        f();
    } catch (const Error& e) {
        return e.id();
    }
    return "no error";
}

template <class T>
bool same_values(const T& a, const T& b) {
    return a.shape() == b.shape() && std::equal(a.begin(), a.end(), b.begin());
}

// Builds the model twice, initialises one without data and one with X (same seed), and
// checks: every dim resolved, everything initialised, the same parameter shapes and values,
// and the same predictions on X.
template <class Make, class In>
void check_same_as_with_data(Make make, const In& X) {
    auto without = make();
    auto with = make();
    fix_random_seed(7);
    without.initialize();
    fix_random_seed(7);
    with.initialize(X);
    CHECK(unresolved(without) == std::vector<std::string>{});
    CHECK(unresolved(without) == unresolved(with));
    CHECK(fully_initialized(without));
    CHECK(param_shapes(without) == param_shapes(with));
    CHECK(param_values(without) == param_values(with));
    CHECK(without.describe() == with.describe());
    const auto P = without.predict(X);
    const auto Q = with.predict(X);
    if constexpr (requires { P.shape(); }) {
        CHECK(same_values(P, Q));
    } else {
        REQUIRE(P.size() == Q.size());
        for (std::size_t i = 0; i < P.size(); ++i) CHECK(same_values(P[i], Q[i]));
    }
}

const MaxoutOptions spacy_maxout{.nP = 3, .dropout = 0.0, .normalize = true};

}  // namespace

TEST_CASE("static init: the tok2vec encoder with static widths initialises without data", "[static_init]") {
    auto enc = clone(residual(expand_window(1) >> Maxout<96, 288, 3>()), 4);
    auto model = Relu<96, 32>() >> enc;
    model.initialize();  // tenon-E105 before: expand_window's widths did not reach it
    CHECK(unresolved(model) == std::vector<std::string>{});
    CHECK(fully_initialized(model));
    CHECK(model.get_dim("nI") == 32);
    CHECK(model.get_dim("nO") == 96);
    auto& cl = model.layer<1>();
    CHECK(cl.get_dim("nI") == 96);
    CHECK(cl.get_dim("nO") == 96);
    for (std::size_t i = 0; i < cl.size(); ++i) {
        auto& ew = cl[i].layer().layer<0>();
        CHECK(ew.get_dim("nI") == 96);
        CHECK(ew.get_dim("nO") == 288);
        auto& mx = cl[i].layer().layer<1>();
        const auto W = mx.get_param("W");
        CHECK(W.shape == std::array<std::size_t, 4>{96, 3, 288, 0});
        CHECK(mx.get_param("b").shape == std::array<std::size_t, 4>{96, 3, 0, 0});
    }
    CHECK(model.layer<0>().get_param("W").shape == std::array<std::size_t, 4>{96, 32, 0, 0});
    const Floats2d X = random_array(7, 32, 1);
    CHECK(model.predict(X).shape() == Floats2d::shape_type{7, 96});
}

TEST_CASE("static init: without data = with data of the same widths (same seed, same weights)", "[static_init]") {
    const Floats2d X = random_array(6, 32, 2);
    SECTION("the static encoder") {
        check_same_as_with_data(
            [] { return Relu<96, 32>() >> clone(residual(expand_window(1) >> Maxout<96, 288, 3>()), 4); }, X);
    }
    SECTION("a static window: expand_window<1>'s output width reaches a Maxout whose nI is dyn") {
        check_same_as_with_data(
            [] { return Relu<96, 32>() >> clone(residual(expand_window<1>() >> Maxout<96, dyn, 3>()), 3); }, X);
    }
    SECTION("widths given at construction (options), spaCy's Maxout with LayerNorm") {
        check_same_as_with_data(
            [] {
                MaxoutOptions o = spacy_maxout;
                o.nO = 64;
                o.nI = 192;
                return Relu<>({.nO = 64, .nI = 32}) >> clone(residual(expand_window(1) >> Maxout<>(o)), 2);
            },
            X);
    }
    SECTION("residual gives the layer its nO: a Maxout with no width at all") {
        check_same_as_with_data(
            [] { return Relu<48, 32>() >> residual(expand_window(1) >> Maxout<>(spacy_maxout)); }, X);
    }
    SECTION("clone hands the widths on: copies whose nI is dyn") {
        check_same_as_with_data([] { return Relu<16, 32>() >> clone(Relu<>({.nO = 16}), 3) >> Softmax<4>(); }, X);
    }
    SECTION("concatenate of encoders, then a layer that takes the summed width") {
        check_same_as_with_data(
            [] {
                return Relu<24, 32>() >>
                       (clone(residual(expand_window(1) >> Maxout<>({.nO = 24, .nP = 2})), 2) | Relu<>({.nO = 8})) >>
                       Softmax<>({.nO = 5});
            },
            X);
    }
    SECTION("add of a residual encoder and a clone") {
        check_same_as_with_data(
            [] {
                return Relu<24, 32>() >> (residual(expand_window(1) >> Maxout<>({.nO = 24, .nP = 2})) +
                                          clone(residual(expand_window(1) >> Maxout<>({.nO = 24, .nP = 2})), 2));
            },
            X);
    }
    SECTION("the width before a clone reaches the chain in its residual (converted at construction)") {
        // Relu<96, 32> >> clone(residual(expand_window<1> >> Maxout<96, dyn, 3>)): the types
        // become ExpandWindow<.., 1, 96> and Maxout<96, 288, 3> inside (tests/static).
        check_same_as_with_data(
            [] {
                auto block = residual(expand_window<1>() >> Maxout<96, dyn, 3>());  // an lvalue: copied in
                return Relu<96, 32>() >> clone(block, 2) >> with_array<Floats2d>(expand_window<1>() >> Relu<8>());
            },
            X);
    }
    SECTION("layers that take their width from their input, first: a later layer's nI fixes it") {
        // LayerNorm<>() >> Relu<8, 32>(): the LayerNorm is 32 wide (widths::backward_width),
        // through `>>` one step at a time and through Dropout, residual and with_array too.
        using A = decltype(LayerNorm<>() >> Relu<8, 32>());
        static_assert(A::static_nI == 32 && std::is_same_v<std::remove_cvref_t<decltype(std::declval<A&>().layer<0>())>,
                                                           LayerNorm<32>>);
        using B = decltype(LayerNorm<>() >> Dropout() >> residual(Relu<>()) >> Relu<8, 32>() >> Softmax<3>());
        static_assert(B::static_nI == 32);
        check_same_as_with_data([] { return LayerNorm<>() >> Relu<8, 32>() >> Softmax<3>(); }, X);
        check_same_as_with_data(
            [] { return LayerNorm<>() >> Dropout() >> residual(Relu<>()) >> Relu<8, 32>() >> Softmax<3>(); }, X);
        check_same_as_with_data([] { return with_array<Floats2d>(LayerNorm<>()) >> Relu<8, 32>(); }, X);
    }
    SECTION("concatenate with branches that keep their width: their sum flows on") {
        // noop(), Dropout and the reductions give the input's width (Concatenate::nO_per_nI).
        using A = decltype(Relu<8, 32>() >> (noop() | Relu<4>() | Dropout(0.0)) >> Softmax<3>());
        static_assert(std::is_same_v<std::remove_cvref_t<decltype(std::declval<A&>().layer<2>())>, Softmax<3, 20>>);
        check_same_as_with_data([] { return Relu<8, 32>() >> (noop() | Relu<4>() | Dropout(0.0)) >> Softmax<3>(); }, X);
        // A textcat head: 2 reductions of 8 columns are 16 (initialize() needed data before).
        auto textcat = [] {
            return list2ragged() >> with_array<Ragged>(Maxout<8, 32, 2>()) >> (reduce_max() | reduce_first()) >>
                   Softmax<2>();
        };
        using T = decltype(textcat());
        static_assert(std::is_same_v<std::remove_cvref_t<decltype(std::declval<T&>().layer<3>())>, Softmax<2, 16>>);
        List<Floats2d> docs;
        docs.push_back(random_array(3, 32, 3));
        docs.push_back(random_array(2, 32, 4));
        check_same_as_with_data(textcat, docs);
    }
    SECTION("residual(layer) whose layer knows its nO alone: the residual is that wide") {
        // Y = X + layer(X): residual() gives the layer its nO as nI (Residual<Relu<32, 32>>),
        // so the residual alone initialises without data.
        static_assert(std::is_same_v<decltype(residual(Relu<32>())), Residual<Relu<32, 32>>>);
        static_assert(std::is_same_v<decltype(residual(expand_window<1>() >> Maxout<32>(spacy_maxout))),
                                     Residual<Chain<ExpandWindow<Floats2d, 1, 32>, Maxout<32, 96, dyn>>>>);
        check_same_as_with_data([] { return residual(Relu<32>()); }, X);
        check_same_as_with_data([] { return clone(residual(expand_window<1>() >> Maxout<32>(spacy_maxout)), 2); }, X);
    }
    SECTION("clone of add with noop: the output width is the input width") {
        check_same_as_with_data(
            [] { return Relu<24, 32>() >> clone(noop() + Relu<>(), 2) >> noop() >> Softmax<>({.nO = 3}); }, X);
    }
}

TEST_CASE("static init: spaCy's MaxoutWindowEncoder in with_array initialises without data", "[static_init]") {
    const List<Floats2d> docs{random_array(3, 32, 3), random_array(0, 32, 4), random_array(5, 32, 5)};
    SECTION("with_array<List>(clone(residual(...))) after a static embedding-like layer") {
        check_same_as_with_data(
            [] {
                return with_array<List<Floats2d>>(Relu<96, 32>()) >>
                       with_array<List<Floats2d>>(clone(residual(expand_window(1) >> Maxout<96, 288, 3>()), 4), 4);
            },
            docs);
    }
    SECTION("the encoder's widths only in options: the chain gives the wrapper its nI") {
        check_same_as_with_data(
            [] {
                return with_array<List<Floats2d>>(Relu<>({.nO = 48, .nI = 32})) >>
                       with_array<List<Floats2d>>(clone(residual(expand_window(1) >> Maxout<>(spacy_maxout)), 2), 2);
            },
            docs);
    }
    SECTION("with_array around the whole stack, as a tok2vec") {
        check_same_as_with_data(
            [] {
                return with_array<List<Floats2d>>(
                    Relu<96, 32>() >> clone(residual(expand_window(1) >> Maxout<96, 288, 3>()), 2), 2);
            },
            docs);
    }
    SECTION("a wrapper passes the nO it is given to its layer (residual around with_array)") {
        check_same_as_with_data(
            [] {
                return list2ragged() >> with_array<Ragged>(Relu<16, 32>()) >> residual(with_array<Ragged>(Relu<>())) >>
                       ragged2list();
            },
            docs);
    }
    SECTION("list2ragged >> with_array<Ragged> >> ragged2list") {
        check_same_as_with_data(
            [] {
                return list2ragged() >>
                       with_array<Ragged>(Relu<16, 32>() >> residual(expand_window(1) >> Maxout<>({.nO = 16}))) >>
                       ragged2list();
            },
            docs);
    }
}

TEST_CASE("static init: the widths a model fixes are its dims before initialize", "[static_init]") {
    // Read by the models around it before they initialise it (residual, clone, add, ...).
    auto r = residual(expand_window(1) >> Maxout<>({.nO = 8, .nI = 24}));
    CHECK(r.get_dim("nI") == 8);
    CHECK(r.get_dim("nO") == 8);
    auto c = clone(Relu<>({.nO = 8, .nI = 8}), 2);
    CHECK(c.get_dim("nI") == 8);
    CHECK(c.get_dim("nO") == 8);
    auto cat = Relu<>({.nO = 3, .nI = 5}) | Relu<>({.nO = 4});
    CHECK(cat.get_dim("nI") == 5);
    CHECK(cat.get_dim("nO") == 7);
    auto sum = Relu<>({.nO = 6}) + Relu<>();
    CHECK(sum.get_dim("nO") == 6);
    auto wa = with_array<Ragged>(Relu<>({.nO = 6, .nI = 2}));
    CHECK(wa.get_dim("nI") == 2);
    CHECK(wa.get_dim("nO") == 6);
    // ... and a width given to expand_window as nO gives its nI.
    auto ew = expand_window(2);
    ew.set_dim("nO", 20);
    ew.initialize();
    CHECK(ew.get_dim("nI") == 4);
    auto bad = expand_window(1);
    bad.set_dim("nO", 20);
    CHECK(error_id([&] { bad.initialize(); }) == "tenon-E192");
}

TEST_CASE("static init: a width the types leave unknown is still tenon-E105, naming the layer and dim",
          "[static_init]") {
    SECTION("a clone whose first copy has no input width") {
        auto m = clone(Relu<8>(), 3);
        CHECK_THROWS_WITH(m.initialize(), Contains("tenon-E105") && Contains("relu") && Contains("'nI'"));
    }
    SECTION("a clone after a static layer: the copies get nI; nO is what is missing") {
        // (Before, the clone did not pass the width on and E105 blamed nI, which the model fixes.)
        auto m = Relu<8, 4>() >> clone(Relu<>(), 2);
        CHECK_THROWS_WITH(m.initialize(), Contains("tenon-E105") && Contains("relu") && Contains("'nO'"));
        CHECK(m.layer<1>()[0].get_dim("nI") == 8);
    }
    SECTION("a residual encoder with no width anywhere") {
        auto m = residual(expand_window(1) >> Maxout<>({.nP = 3}));
        CHECK_THROWS_WITH(m.initialize(), Contains("tenon-E105") && Contains("maxout") && Contains("'nO'"));
    }
    SECTION("a hidden width is never guessed from the next layer's") {
        auto m = Relu<>() >> Relu<10, 64>();
        CHECK_THROWS_WITH(m.initialize(), Contains("tenon-E105") && Contains("relu") && Contains("'nO'"));
        CHECK_THROWS_WITH(m.initialize(random_array(2, 3, 1)),
                          Contains("tenon-E105") && Contains("relu") && Contains("'nO'"));
    }
    SECTION("with_array over a layer without its input width") {
        auto m = with_array<List<Floats2d>>(clone(residual(expand_window(1) >> Maxout<>({.nP = 3})), 2));
        CHECK_THROWS_WITH(m.initialize(), Contains("tenon-E105") && Contains("maxout"));
    }
    SECTION("concatenate: a part whose output width is unknown") {
        auto m = Relu<4, 3>() >> (Relu<>() | Relu<>({.nO = 2}));
        CHECK_THROWS_WITH(m.initialize(), Contains("tenon-E105") && Contains("relu") && Contains("'nO'"));
    }
}

TEST_CASE("static init: copies of a clone whose widths cannot be chained fail the same with or without data",
          "[static_init]") {
    // nO 8 and nI 4 given at run time (the types' E016 cannot see them).
    auto m = clone(Relu<>({.nO = 8, .nI = 4}), 2);
    CHECK_THROWS_WITH(m.initialize(), Contains("tenon-E016") && Contains("copy 1") && Contains("8"));
    auto n = clone(Relu<>({.nO = 8, .nI = 4}), 2);
    CHECK(error_id([&] { n.initialize(random_array(2, 4, 1)); }) == "tenon-E016");
    // A chain whose input width, given to it, contradicts its first layer's.
    auto c = Relu<>({.nO = 3, .nI = 5}) >> Relu<>({.nO = 2});
    c.set_dim("nI", 6, true);
    CHECK_THROWS_WITH(c.initialize(), Contains("tenon-E101") && Contains("first layer") && Contains("5"));
}
