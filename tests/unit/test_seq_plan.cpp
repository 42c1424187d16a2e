// Sequence models as planned stages (docs/lowering.md, "Sequence models"): a model that takes
// a List or Ragged of arrays or ids runs through one plan (tables, windows, concatenate,
// with_array with and without pad, clone, residual, the dense layers) and gives what its
// layers give: outputs, the input's gradient, every parameter's gradient and the weights
// after training steps, with dropout. The reference is the same model's layers
// (unfused(model)), which the oracle tests check against Thinc.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "tenon/tenon.hpp"
#include "support/error_id.hpp"
#include "unit/helpers.hpp"

using namespace tenon;
using Catch::Matchers::Contains;
using testing::all_params;
using testing::random_array;
using tenon::test::error_message;

namespace {

// Documents of ids (n, 4), lengths in [lo, hi] (0 allowed when lo == 0).
List<Ints2d> docs(std::size_t n, std::size_t lo, std::size_t hi, std::uint64_t seed) {
    std::mt19937_64 g(seed);
    List<Ints2d> out;
    for (std::size_t d = 0; d < n; ++d) {
        const std::size_t len = lo + g() % (hi - lo + 1);
        Ints2d a({len, 4});
        for (std::size_t i = 0; i < a.size(); ++i) a.data()[i] = static_cast<std::int32_t>(g() % 3000);
        out.push_back(std::move(a));
    }
    return out;
}
List<Floats2d> floats_like(const List<Ints2d>& X, std::size_t width, std::uint64_t seed) {
    List<Floats2d> out;
    for (std::size_t i = 0; i < X.size(); ++i) out.push_back(random_array(X[i].shape(0), width, seed + i));
    return out;
}

double max_diff(const Floats2d& a, const Floats2d& b) {
    if (a.shape(0) != b.shape(0) || a.shape(1) != b.shape(1)) return 1e30;
    double m = 0.0;
    for (std::size_t i = 0; i < a.size(); ++i) m = std::max(m, double(std::abs(a.data()[i] - b.data()[i])));
    return m;
}
double max_diff(const List<Floats2d>& a, const List<Floats2d>& b) {
    if (a.size() != b.size()) return 1e30;
    double m = 0.0;
    for (std::size_t i = 0; i < a.size(); ++i) m = std::max(m, max_diff(a[i], b[i]));
    return m;
}
double max_diff(const std::vector<std::vector<float>>& a, const std::vector<std::vector<float>>& b) {
    if (a.size() != b.size()) return 1e30;
    double m = 0.0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        if (a[i].size() != b[i].size()) return 1e30;
        for (std::size_t j = 0; j < a[i].size(); ++j)  // relative where a gradient sums many rows
            m = std::max(m, double(std::abs(a[i][j] - b[i][j])) / std::max(1.0, double(std::abs(b[i][j]))));
    }
    return m;
}

// spaCy's tagger: MultiHashEmbed (4 tables, a Maxout mixer), MaxoutWindowEncoder (with_array
// with pad, clone of residual(expand_window >> Maxout)), a Softmax head; small widths.
auto tagger(double dropout) {
    const MaxoutOptions mo{.nP = 3, .dropout = dropout, .normalize = true};
    auto embed = list2ragged<Ints2d>() >>
                 with_array<BasicRagged<Ints2d>>(concatenate(HashEmbed<16>(500, 8u, 0, 0.0), HashEmbed<16>(100, 9u, 1, 0.0),
                                                             Embed<8>(3000, 2), HashEmbed<16>(250, 11u, 3, dropout))) >>
                 with_array<Ragged>(Maxout<24>(mo)) >> ragged2list();
    auto encode = with_array<List<Floats2d>>(clone(residual(expand_window<1>() >> Maxout<24>(mo)), 3), 3);
    return embed >> encode >> with_array<List<Floats2d>>(Softmax<7>());
}

List<Floats2d> grads_like(const List<Floats2d>& Y, std::uint64_t seed) {
    List<Floats2d> out;
    for (std::size_t i = 0; i < Y.size(); ++i) out.push_back(random_array(Y[i].shape(0), Y[i].shape(1), seed + i));
    return out;
}
Floats2d grads_like(const Floats2d& Y, std::uint64_t seed) { return random_array(Y.shape(0), Y.shape(1), seed); }
double max_diff(const Padded& a, const Padded& b) {
    if (a.size() != b.size() || a.steps() != b.steps()) return 1e30;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (a.lengths()[i] != b.lengths()[i] || a.indices()[i] != b.indices()[i]) return 1e30;
    double m = 0.0;
    for (std::size_t i = 0; i < a.data().size(); ++i)
        m = std::max(m, double(std::abs(a.data().data()[i] - b.data().data()[i])));
    return m;
}
Padded grads_like(const Padded& Y, std::uint64_t seed) {  // the padding rows' too
    const Floats2d g = random_array(Y.steps() * Y.size(), Y.data().shape(2), seed);
    Floats3d d(Y.data().shape(), uninitialized);
    std::copy(g.data(), g.data() + g.size(), d.data());
    return Y.with_data(std::move(d));
}

// A text classifier (spaCy's TextCatCNN without the tok2vec's window): tables, a Maxout mixer,
// a reduction, a residual block and a Softmax over one row per document.
template <class R>
auto textcat(R reduction, double dropout) {
    const MaxoutOptions mo{.nP = 2, .dropout = dropout, .normalize = true};
    return list2ragged<Ints2d>() >>
           with_array<BasicRagged<Ints2d>>(concatenate(HashEmbed<12>(400, 3u, 0, 0.0), Embed<6>(3000, 2))) >>
           with_array<Ragged>(Maxout<10>(mo)) >> reduction >> residual(Relu<10>({.dropout = dropout})) >> Softmax<5>();
}

// a runs its plan, b its layers, from the same weights and seeds: outputs, the input's
// gradient and the weights after each step agree (to rounding: the plan sums a residual's
// gradient in another order).
template <class M, class X>
void train_side_by_side(M& a, const std::vector<X>& batches, int steps, double tol = 2e-5) {
    M b = a;
    Optimizer oa = Adam(0.01), ob = Adam(0.01);
    for (int step = 0; step < steps; ++step) {
        const X& x = batches[static_cast<std::size_t>(step) % batches.size()];
        fix_random_seed(70 + step);
        auto [Ya, bpa] = a.begin_update(x);
        REQUIRE(a.uses_plan());
        const auto dY = grads_like(Ya, 300 + step);
        const auto dXa = bpa(dY);
        decltype(Ya) Yb;
        std::remove_cvref_t<decltype(dXa)> dXb;
        {
            fix_random_seed(70 + step);
            auto [y, bpb] = unfused(b).begin_update(x);
            dXb = bpb(dY);
            Yb = std::move(y);
        }
        CHECK(max_diff(Ya, Yb) <= tol);
        if constexpr (std::is_same_v<std::remove_cvref_t<decltype(dXa)>, List<Floats2d>> ||
                      std::is_same_v<std::remove_cvref_t<decltype(dXa)>, Floats2d>)
            CHECK(max_diff(dXa, dXb) <= tol);
        if constexpr (std::is_same_v<std::remove_cvref_t<decltype(dXa)>, Ragged>)
            CHECK(max_diff(dXa.data(), dXb.data()) <= tol);
        if constexpr (std::is_same_v<std::remove_cvref_t<decltype(dXa)>, Padded>) CHECK(max_diff(dXa, dXb) <= tol);
        CHECK(max_diff(testing::all_grads(a), testing::all_grads(b)) <= 5 * tol);
        a.finish_update(oa);
        b.finish_update(ob);
        CHECK(max_diff(all_params(a), all_params(b)) <= tol);
        // predict, too
        const auto Pa = a.predict(x);
        REQUIRE(a.uses_plan());
        const auto Pb = unfused(b).predict(x);
        CHECK(max_diff(Pa, Pb) <= tol);
    }
}

// A user's own layer, which the plan does not fuse (no lowered_as): Y = X * s, one scale per
// column, through the backend's entries (so it runs on every backend, device-host included).
class ColumnScale : public Layer<ColumnScale, Floats2d, Floats2d> {
    using Base = Layer<ColumnScale, Floats2d, Floats2d>;
    friend Base;

public:
    ColumnScale() : Base("column_scale", {{"nO", dyn}, {"nI", dyn}}, {{"s", {"nI"}}}) {}
    struct Backprop {
        ColumnScale* layer = nullptr;
        Floats2d X;
        Floats2d operator()(Floats2dCView dY) const {
            const std::size_t rows = X.shape(0), n = X.shape(1);
            const Ops& ops = layer->ops();
            Floats2d dX({rows, n}, uninitialized), prod({rows, n}, uninitialized);
            ops.mask_columns(dY.data(), layer->param(0).value.data(), rows, n, dX.data());
            ops.elementwise(Binary::mul, dY.data(), X.data(), prod.data(), prod.size());
            ops.sum_rows_into(prod.data(), rows, n, layer->grad_data(0));
            return dX;
        }
    };

private:
    void init_impl(const Floats2dCView* X, const Floats2dCView* Y) {
        if (X) this->resolve_dim(1, X->shape(1));
        else if (Y) this->resolve_dim(1, Y->shape(1));
        const std::size_t n = this->require_dim(1);
        this->resolve_dim(0, n);
        this->allocate_param(0, {n});
        this->param(0).value.fill(1.25f);
        this->mark_initialized();
    }
    Floats2d predict_impl(Floats2dCView X) const {
        Floats2d Y({X.shape(0), X.shape(1)}, uninitialized);
        this->ops().mask_columns(X.data(), this->param(0).value.data(), X.shape(0), X.shape(1), Y.data());
        return Y;
    }
    std::pair<Floats2d, Backprop> forward_impl(Floats2dCView X, bool) {
        return {predict_impl(X), Backprop{this, Floats2d(X)}};
    }
};

std::size_t count_of(const std::string& s, const std::string& part) {
    std::size_t n = 0;
    for (std::size_t at = s.find(part); at != std::string::npos; at = s.find(part, at + 1)) ++n;
    return n;
}

}  // namespace

TEST_CASE("sequence plan: spaCy's tagger runs as planned stages and equals its layers", "[seq_plan]") {
    const List<Ints2d> X = docs(9, 1, 14, 1);
    SECTION("the stages") {
        auto model = tagger(0.0);
        model.initialize(X);
        const std::string d = describe_plan(model);
        CHECK_THAT(d, Contains("table hashembed (4 rows per id)->16"));
        CHECK_THAT(d, Contains("table embed (1 row per id)->8"));
        CHECK_THAT(d, Contains("concat 16+16+8+16->56"));
        CHECK_THAT(d, Contains("pad 24 (3 zero rows around each sequence)"));
        CHECK_THAT(d, Contains("window 24->72 (1 each side)"));
        CHECK_THAT(d, Contains("residual add"));
        CHECK_THAT(d, Contains("unpad 24"));
        CHECK_THAT(d, Contains("softmax"));
        CHECK_THAT(d, !Contains("layer "));  // nothing runs unfused
    }
    SECTION("training and predict, variable batch sizes and document lengths (some empty)") {
        auto model = tagger(0.0);
        model.initialize(X);
        std::vector<List<Ints2d>> batches{X, docs(3, 0, 5, 2), docs(17, 0, 30, 3), docs(1, 20, 20, 4)};
        train_side_by_side(model, batches, 6);
    }
    SECTION("with dropout (the tables' column masks and the Maxouts' dropout draw as the layers do)") {
        auto model = tagger(0.25);
        model.initialize(X);
        std::vector<List<Ints2d>> batches{X, docs(5, 2, 9, 5)};
        train_side_by_side(model, batches, 4);
    }
}

TEST_CASE("sequence plan: float sequences, Ragged in and out, concatenate with noop", "[seq_plan]") {
    const List<Ints2d> ids = docs(7, 0, 11, 9);
    const List<Floats2d> X = floats_like(ids, 6, 40);
    SECTION("List<Floats2d>: with_array without pad, expand_window, concatenate(noop, ...)") {
        auto model = list2ragged() >>
                     with_array<Ragged>(concatenate(noop(), Relu<5>()) >> expand_window<2>() >>
                                        Maxout<8>({.nP = 2, .normalize = true}) >> Softmax<4>()) >>
                     ragged2list();
        model.initialize(X);
        CHECK_THAT(describe_plan(model), Contains("concat 6+5->11"));
        std::vector<List<Floats2d>> batches{X, floats_like(docs(3, 1, 4, 3), 6, 50)};
        train_side_by_side(model, batches, 3);
    }
    SECTION("Ragged -> Ragged with expand_window per sequence") {
        auto model = expand_window<1, Ragged>() >> with_array<Ragged>(Relu<9>({.normalize = true}));
        const Ragged R = to_ragged(X);
        model.initialize(R);
        CHECK_THAT(describe_plan(model), Contains("per sequence"));
        Ragged Ya = model.predict(R);
        REQUIRE(model.uses_plan());
        const Ragged Yb = unfused(model).predict(R);
        CHECK(max_diff(Ya.data(), Yb.data()) <= 1e-6);
        CHECK(Ya.lengths().size() == Yb.lengths().size());
    }
}

TEST_CASE("sequence plan: a re-initialised model gets a new plan; a held plan refuses", "[seq_plan]") {
    const List<Ints2d> ids = docs(5, 1, 8, 11);
    const List<Floats2d> X = floats_like(ids, 6, 1), X2 = floats_like(ids, 10, 2);
    auto make = [] {
        return with_array<List<Floats2d>>(Relu<7>() >> expand_window<1>(), 1) >> with_array<List<Floats2d>>(Softmax<>());
    };
    auto model = make();
    model.initialize(X, floats_like(ids, 3, 3));
    auto held = lower(model);
    CHECK(held.predict(X).size() == X.size());
    auto other = make();
    other.initialize(X2, floats_like(ids, 9, 4));
    model = other;  // other widths in and out (as a loaded model's)
    const List<Floats2d> P = model.predict(X2);
    REQUIRE(model.uses_plan());
    REQUIRE(P.size() == X2.size());
    CHECK(P[0].shape(1) == 9);
    const List<Floats2d> Q = unfused(model).predict(X2);
    CHECK(max_diff(P, Q) <= 1e-6);
    CHECK_THROWS_WITH(held.predict(X2), Contains("tenon-E172") && Contains("lower(model) again"));
}

TEST_CASE("sequence plan: bad gradients are refused with the output's shape named", "[seq_plan]") {
    const List<Ints2d> X = docs(4, 1, 6, 12);
    auto model = tagger(0.0);
    model.initialize(X);
    auto [Y, bp] = model.begin_update(X);
    REQUIRE(model.uses_plan());
    List<Floats2d> dY = grads_like(Y, 1);
    dY.pop_back();
    CHECK_THROWS_WITH(bp(dY), Contains("tenon-E170") && Contains("the layout of the output"));
    dY = grads_like(Y, 1);
    dY[1] = Floats2d({dY[1].shape(0), 3});
    CHECK_THROWS_WITH(bp(dY), Contains("tenon-E111") && Contains("width 7"));
}

TEST_CASE("sequence plan: an error inside a planned stage names its layer by its path, as the layers do",
          "[seq_plan]") {
    auto model = tagger(0.0);
    model.initialize(docs(3, 1, 5, 13));
    List<Ints2d> X;
    X.push_back(Ints2d({3, 3}));  // the table reading column 3 finds three columns
    X.push_back(Ints2d({2, 3}));
    const std::string planned = error_message([&] { (void)model.predict(X); });
    REQUIRE(model.uses_plan());
    const std::string layers = error_message([&] { (void)unfused(model).predict(X); });
    // (Four tables: without the path, "hashembed" would not say which one.)
    CHECK_THAT(planned, Contains("tenon-E194") && Contains("chain>1>with_array>concatenate>3>hashembed: column 3"));
    CHECK(planned == layers);
    CHECK(error_message([&] { (void)model.begin_update(X); }) == layers);
}

TEST_CASE("sequence plan: reductions give one row per sequence, and the head runs on those rows", "[seq_plan]") {
    const List<Ints2d> X = docs(8, 1, 12, 21);
    SECTION("a text classifier: tables, Maxout, reduce_mean, a residual Relu and a Softmax in one plan") {
        auto model = textcat(reduce_mean(), 0.0);
        model.initialize(X);
        const std::string d = describe_plan(model);
        CHECK_THAT(d, Contains("reduce_mean 10 (one row per sequence)"));
        CHECK_THAT(d, Contains("softmax"));
        CHECK_THAT(d, !Contains("layer "));  // nothing runs unfused
        // Empty documents (a mean of no rows is a row of zeros), one document, many.
        std::vector<List<Ints2d>> batches{X, docs(3, 0, 5, 22), docs(1, 7, 7, 23), docs(19, 0, 25, 24)};
        train_side_by_side(model, batches, 6);
    }
    SECTION("reduce_sum and reduce_max, with dropout") {
        auto a = textcat(reduce_sum(), 0.2);
        a.initialize(X);
        train_side_by_side(a, std::vector<List<Ints2d>>{X, docs(5, 1, 9, 25)}, 4);
        auto b = textcat(reduce_max(), 0.2);
        b.initialize(X);
        CHECK_THAT(describe_plan(b, 16), Contains("reduce_max row of each maximum"));
        train_side_by_side(b, std::vector<List<Ints2d>>{X, docs(5, 1, 9, 26)}, 4);
    }
    SECTION("every reduction side by side over float sequences (concatenate adds their input gradients)") {
        const List<Floats2d> F = floats_like(X, 6, 30);
        // (A layer before the reductions gives the plan the input's width: reductions have none.)
        auto model = list2ragged() >> with_array<Ragged>(LayerNorm<6>()) >>
                     concatenate(reduce_mean(), reduce_max(), reduce_sum(), reduce_first(), reduce_last()) >>
                     Relu<7>() >> Softmax<3>();
        model.initialize(F);
        const std::string d = describe_plan(model);
        CHECK_THAT(d, Contains("concat 6+6+6+6+6->30"));
        CHECK_THAT(d, !Contains("layer "));
        CHECK_THAT(describe_plan(model, 16), Contains("gradient (to add)"));
        train_side_by_side(model, std::vector<List<Floats2d>>{F, floats_like(docs(4, 1, 3, 31), 6, 32)}, 3);
        // A Ragged in, a Floats2d out; the input's gradient as the layers give it.
        auto r = reduce_max() >> Softmax<4>();
        const Ragged R = to_ragged(F);
        r.initialize(R);
        train_side_by_side(r, std::vector<Ragged>{R, to_ragged(floats_like(docs(3, 1, 5, 33), 6, 34))}, 2);
    }
    SECTION("an empty sequence where a reduction needs rows: the layer's own error; bad gradients named") {
        const List<Floats2d> F = floats_like(X, 6, 40);
        auto model = list2ragged() >> reduce_first() >> Softmax<3>();
        model.initialize(F);
        List<Floats2d> G = floats_like(docs(3, 1, 4, 41), 6, 42);
        G[1] = Floats2d({0, 6});
        const std::string through_plan = error_message([&] { (void)model.predict(G); });
        const std::string through_layers = error_message([&] { (void)unfused(model).predict(G); });
        CHECK_THAT(through_plan, Contains("tenon-E190") && Contains("sequence 1 has length 0"));
        CHECK(through_plan == through_layers);
        auto [Y, bp] = model.begin_update(F);
        REQUIRE(model.uses_plan());
        CHECK_THROWS_WITH(bp(random_array(F.size() + 1, 3, 1)), Contains("tenon-E111") && Contains("one row per sequence"));
    }
}

TEST_CASE("sequence plan: list2array, with_list and with_ragged keep the rows where they are", "[seq_plan]") {
    const List<Ints2d> ids = docs(8, 0, 12, 61);
    const List<Floats2d> X = floats_like(ids, 6, 62);
    SECTION("list2array ends a plan with every row of the sequences as one array") {
        auto model = list2ragged() >> with_array<Ragged>(Maxout<8>({.nP = 2, .normalize = true})) >> ragged2list() >>
                     list2array() >> residual(Relu<8>({.dropout = 0.2})) >> Softmax<4>();
        model.initialize(X);
        const std::string d = describe_plan(model);
        CHECK_THAT(d, Contains("softmax"));
        CHECK_THAT(d, !Contains("layer "));  // nothing runs unfused
        const Floats2d P = model.predict(X);
        REQUIRE(model.uses_plan());
        std::size_t rows = 0;
        for (const auto& a : X) rows += a.shape(0);
        CHECK(P.shape(0) == rows);
        train_side_by_side(model, std::vector<List<Floats2d>>{X, floats_like(docs(3, 1, 5, 63), 6, 64)}, 4);
        // A gradient of another number of rows is named as the output's shape.
        auto [Y, bp] = model.begin_update(X);
        REQUIRE(model.uses_plan());
        CHECK_THROWS_WITH(bp(random_array(rows + 1, 4, 1)),
                          Contains("tenon-E111") && Contains("one row per row of the sequences"));
    }
    SECTION("list2array over ids: a table, then the dense layers, on every word") {
        auto model = list2array<Ints2d>() >> HashEmbed<12>(300, 5u, 1, 0.0) >> Maxout<10>({.nP = 3}) >> Softmax<5>();
        model.initialize(ids);
        const std::string d = describe_plan(model);
        CHECK_THAT(d, Contains("table hashembed"));
        CHECK_THAT(d, !Contains("layer "));
        train_side_by_side(model, std::vector<List<Ints2d>>{ids, docs(4, 0, 6, 65)}, 3);
    }
    SECTION("with_list over a ragged array, with_ragged over a list: the layers' stages on the same rows") {
        auto model = list2ragged() >> with_list<Ragged>(with_array<List<Floats2d>>(Relu<7>(), 2)) >> ragged2list() >>
                     with_ragged<List<Floats2d>>(with_array<Ragged>(expand_window<1>() >> Maxout<5>({.nP = 2})) >>
                                                 ParametricAttention<5>()) >>
                     with_array<List<Floats2d>>(Softmax<3>());
        model.initialize(X);
        const std::string d = describe_plan(model);
        CHECK_THAT(d, Contains("pad 6 (2 zero rows around each sequence)"));
        CHECK_THAT(d, Contains("attention"));
        CHECK_THAT(d, !Contains("layer "));
        train_side_by_side(model, std::vector<List<Floats2d>>{X, floats_like(docs(5, 0, 9, 66), 6, 67)}, 4);
    }
}

TEST_CASE("sequence plan: add sums its branches' stages over the sequences' rows", "[seq_plan]") {
    const List<Ints2d> ids = docs(7, 0, 10, 71);
    const List<Floats2d> X = floats_like(ids, 6, 72);
    // Over a Ragged: a window per sequence beside a dense branch; over the rows inside with_array.
    auto model = list2ragged() >> with_array<Ragged>(Relu<8>()) >>
                 add(expand_window<1, Ragged>() >> with_array<Ragged>(Maxout<8>({.nP = 2, .dropout = 0.1})),
                     with_array<Ragged>(Relu<8>({.normalize = true}))) >>
                 with_array<Ragged>(add(Gelu<8>(), noop(), Linear<8>()) >> Softmax<4>()) >> ragged2list();
    model.initialize(X);
    const std::string d = describe_plan(model);
    CHECK_THAT(d, Contains("window 8->24 (1 each side, per sequence)"));
    CHECK_THAT(d, Contains("add 8+8->8"));
    CHECK_THAT(d, Contains("add 8+8+8->8"));
    CHECK_THAT(d, !Contains("layer "));
    train_side_by_side(model, std::vector<List<Floats2d>>{X, floats_like(docs(4, 1, 6, 73), 6, 74)}, 4);
    // Over ids: two tables summed (a HashEmbed and an Embed of the same width), then a tagger head.
    auto tagger = list2ragged<Ints2d>() >>
                  with_array<BasicRagged<Ints2d>>(add(HashEmbed<10>(300, 4u, 0, 0.0), Embed<10>(3000, 1))) >>
                  with_array<Ragged>(Softmax<5>()) >> ragged2list();
    tagger.initialize(ids);
    CHECK_THAT(describe_plan(tagger), Contains("add 10+10->10"));
    train_side_by_side(tagger, std::vector<List<Ints2d>>{ids, docs(3, 0, 8, 75)}, 3);
}

TEST_CASE("sequence plan: uniqued over a table is the table on every row", "[seq_plan]") {
    // Zipf-like ids: many repeated keys, so uniqued's copies matter.
    List<Ints2d> ids = docs(9, 0, 14, 81);
    for (auto& d : ids)
        for (std::size_t i = 0; i < d.size(); ++i) d.data()[i] %= 13;
    auto make = [](std::size_t key_column) {
        return list2ragged<Ints2d>() >>
               with_array<BasicRagged<Ints2d>>(concatenate(uniqued(HashEmbed<8>(200, 3u, 1, 0.2), key_column),
                                                           uniqued(Embed<6>(3000, 2), 2))) >>
               with_array<Ragged>(Softmax<4>()) >> ragged2list();
    };
    auto model = make(1);
    model.initialize(ids);
    const std::string d = describe_plan(model);
    CHECK_THAT(d, Contains("table hashembed (4 rows per id)->8"));
    CHECK_THAT(d, Contains("table embed (1 row per id)->6"));
    CHECK_THAT(d, !Contains("layer "));
    train_side_by_side(model, std::vector<List<Ints2d>>{ids, docs(3, 0, 6, 82)}, 4);
    // Keyed by another column than the table reads: uniqued's copies differ, the layers run.
    auto other = make(0);
    other.initialize(ids);
    CHECK_THROWS_WITH(describe_plan(other), Contains("tenon-E170") && Contains("a key column other than its table's"));
    const List<Floats2d> P = other.predict(ids);
    CHECK_FALSE(other.uses_plan());
    CHECK(max_diff(P, unfused(other).predict(ids)) == 0.0);
    auto [Y, bp] = other.begin_update(ids);  // training too: the layers' path is there
    CHECK_FALSE(other.uses_plan());
    bp(grads_like(Y, 83));
}

// ---- The layers added last: LSTM / BiLSTM (under with_padded, or between list2padded and
// padded2list) and ParametricAttention (v1, and v2 with a key transform) are stages too.
namespace {

// A BiLSTM tagger (langid / spaCy style): a table, a Maxout mixer, a BiLSTM of depth 2 under
// with_padded, a Softmax on every word.
auto bilstm_tagger(double dropout, double lstm_dropout) {
    return list2ragged<Ints2d>() >>
           with_array<BasicRagged<Ints2d>>(concatenate(HashEmbed<12>(400, 3u, 0, dropout), Embed<6>(3000, 2))) >>
           with_array<Ragged>(Maxout<10>({.nP = 2, .dropout = dropout, .normalize = true})) >> ragged2list() >>
           with_padded<List<Floats2d>>(BiLSTM<16>({.depth = 2, .dropout = lstm_dropout})) >>
           with_array<List<Floats2d>>(Softmax<5>());
}
// An attention text classifier (spaCy's TextCatAttention shape): tables, a mixer, attention
// over each document's rows, their sum, a Softmax per document.
auto attention_textcat(double dropout) {
    return list2ragged<Ints2d>() >>
           with_array<BasicRagged<Ints2d>>(concatenate(HashEmbed<12>(400, 3u, 0, dropout), Embed<6>(3000, 2))) >>
           with_array<Ragged>(Maxout<10>({.nP = 2, .dropout = dropout, .normalize = true})) >>
           ParametricAttention<10>() >> reduce_sum() >> Softmax<5>();
}

}  // namespace

TEST_CASE("sequence plan: a BiLSTM under with_padded is a stage and equals its layers", "[seq_plan][lstm]") {
    const List<Ints2d> X = docs(7, 1, 12, 21);
    SECTION("the stages") {
        auto model = bilstm_tagger(0.0, 0.0);
        model.initialize(X);
        auto plan = lower(model);
        const std::string d = plan.describe();
        CHECK_THAT(d, Contains("lstm 10->16 (over the sequences)"));
        CHECK_THAT(d, !Contains("layer "));
        CHECK_THAT(plan.describe(64), Contains("lstm scratch (training)"));
    }
    SECTION("training and predict, variable batch sizes and lengths (some empty)") {
        auto model = bilstm_tagger(0.0, 0.0);
        model.initialize(X);
        std::vector<List<Ints2d>> batches{X, docs(3, 0, 5, 22), docs(12, 0, 25, 23), docs(1, 17, 17, 24)};
        train_side_by_side(model, batches, 6);
    }
    SECTION("with dropout (the tables', Maxout's and the LSTM's weight mask draw as the layers do)") {
        auto model = bilstm_tagger(0.2, 0.25);
        model.initialize(X);
        std::vector<List<Ints2d>> batches{X, docs(5, 2, 9, 25)};
        train_side_by_side(model, batches, 4);
    }
}

TEST_CASE("sequence plan: with_array over a Padded runs on its steps x sequences rows, padding included",
          "[seq_plan]") {
    // Its layers see the (T, B) rows time-major, the padding rows too (Thinc's with_array2d):
    // a window there reads the neighbouring column and the rows a layer made of the padding,
    // so the plan keeps a Padded on those rows (the steps space) until a layer that reads
    // only the sequences' rows (padded2list, an LSTM, with_ragged / with_list) takes it.
    // Batches with empty documents and with many of equal length (to_padded's order of ties).
    const std::vector<List<Floats2d>> batches{floats_like(docs(8, 0, 9, 81), 5, 82),
                                              floats_like(docs(7, 3, 4, 83), 5, 84),
                                              floats_like(docs(4, 1, 6, 85), 5, 86)};
    SECTION("two with_arrays: the second reads the padding rows the first made") {
        auto model = list2padded() >> with_array<Padded>(Relu<8>({.dropout = 0.1})) >>
                     with_array<Padded>(expand_window<1>() >> Maxout<6>({.nP = 2, .normalize = true})) >> padded2list() >>
                     with_array<List<Floats2d>>(Softmax<4>());
        model.initialize(batches[0]);
        const std::string d = describe_plan(model);
        CHECK_THAT(d, Contains("pad 5 (a Padded's steps x sequences rows)"));
        CHECK_THAT(d, Contains("window 8->24 (1 each side)"));
        CHECK_THAT(d, Contains("unpad 6"));
        CHECK_THAT(d, !Contains("layer "));
        // The layout for a batch: every listed buffer ends inside the total (the steps space's too).
        std::istringstream layout(describe_plan(model, 16));
        std::size_t total = 0, end = 0;
        for (std::string line; std::getline(layout, line);) {
            if (line.find("workspace for batch") != std::string::npos) {
                CHECK(end <= total);
                total = std::stoul(line.substr(line.rfind(':') + 1));
                end = 0;
            } else if (line.rfind("  @", 0) == 0) {
                std::istringstream f(line.substr(3));
                std::size_t off = 0, bytes = 0;
                f >> off >> bytes;
                end = std::max(end, off + bytes);
            }
        }
        CHECK(total > 0);
        CHECK(end <= total);
        train_side_by_side(model, batches, 4);
    }
    SECTION("an LSTM, residual and concatenate between them: the rows each one reads") {
        auto model = list2padded() >> residual(with_array<Padded>(Relu<5>())) >>
                     concatenate(with_array<Padded>(Linear<3>()), LSTM<2, 5>()) >>
                     with_array<Padded>(expand_window<1>() >> Softmax<3>()) >> padded2list();
        model.initialize(batches[0]);
        const std::string d = describe_plan(model);
        CHECK_THAT(d, Contains("residual add"));
        CHECK_THAT(d, Contains("lstm 5->2"));
        CHECK_THAT(d, Contains("concat 3+2->5"));
        CHECK_THAT(d, !Contains("layer "));
        train_side_by_side(model, batches, 4);
    }
    SECTION("with_padded, with_ragged and with_list over a Padded") {
        auto model = noop<List<Floats2d>>() >>
                     with_padded<List<Floats2d>>(
                         with_array<Padded>(Relu<6>()) >> with_ragged<Padded>(with_array<Ragged>(Maxout<5>({.nP = 2}))) >>
                         with_padded<Padded>(with_array<Padded>(expand_window<1>() >> Linear<4>())) >>
                         with_list<Padded>(with_array<List<Floats2d>>(Relu<3>({.dropout = 0.2}))));
        model.initialize(batches[0]);
        CHECK_THAT(describe_plan(model), !Contains("layer "));
        train_side_by_side(model, batches, 4);
    }
    SECTION("bidirectional over the steps rows: its reverse stages keep the padding rows in place") {
        auto model = list2padded() >> with_array<Padded>(Relu<4>()) >>
                     bidirectional(with_array<Padded>(expand_window<1>() >> Linear<3>())) >> padded2list();
        model.initialize(batches[0]);
        const std::string d = describe_plan(model);
        CHECK_THAT(d, Contains("reverse 4 (each sequence's rows)"));
        CHECK_THAT(d, !Contains("layer "));
        train_side_by_side(model, batches, 3);
        // One direction on the sequences' rows (an LSTM's), the other on the steps rows.
        auto mixed = list2padded() >> bidirectional(with_array<Padded>(Linear<3>()), LSTM<2, 5>()) >>
                     with_array<Padded>(expand_window<1>() >> Softmax<4>()) >> padded2list();
        mixed.initialize(batches[0]);
        CHECK_THAT(describe_plan(mixed), !Contains("layer "));
        train_side_by_side(mixed, batches, 3);
    }
}

TEST_CASE("sequence plan: a Padded in and out, its data on the steps rows as it is", "[seq_plan]") {
    const List<Floats2d> L0 = floats_like(docs(8, 0, 9, 91), 5, 92), L1 = floats_like(docs(7, 3, 4, 93), 5, 94);
    const std::vector<Padded> batches{to_padded(L0), to_padded(L1)};
    SECTION("with_array over the input itself reads its padding, and gives the padding rows' gradient") {
        auto model = noop<Padded>() >> with_array<Padded>(expand_window<1>() >> Relu<6>({.dropout = 0.1})) >>
                     LSTM<4, 6>() >> with_array<Padded>(Linear<3>());
        model.initialize(batches[0]);
        const std::string d = describe_plan(model);
        CHECK_THAT(d, Contains("window 5->15 (1 each side)"));
        CHECK_THAT(d, Contains("unpad 6"));
        CHECK_THAT(d, !Contains("layer "));
        train_side_by_side(model, batches, 4);
        // Padding that is not zero is the input's: the window reads it, the plan too.
        Floats3d data = batches[0].data();
        for (std::size_t i = 0; i < data.size(); ++i)
            if (data.data()[i] == 0.0f) data.data()[i] = 0.5f;
        const Padded odd = batches[0].with_data(std::move(data));
        CHECK(max_diff(model.predict(odd), unfused(model).predict(odd)) <= 1e-6);
        CHECK(max_diff(model.predict(odd), model.predict(batches[0])) > 1e-3);
    }
    SECTION("bidirectional over the input: the reverse of its steps rows, padding in place") {
        auto model = noop<Padded>() >>
                     bidirectional(with_array<Padded>(expand_window<1>() >> Relu<3>()), LSTM<3, 5>()) >>
                     with_array<Padded>(Softmax<4>());
        model.initialize(batches[0]);
        CHECK_THAT(describe_plan(model), Contains("reverse 5 (each sequence's rows)"));
        train_side_by_side(model, batches, 3);
        // Padding that is not zero: the window of either direction reads it where the layers do.
        Floats3d data = batches[0].data();
        for (std::size_t i = 0; i < data.size(); ++i)
            if (data.data()[i] == 0.0f) data.data()[i] = 0.5f;
        const Padded odd = batches[0].with_data(std::move(data));
        const Padded P = model.predict(odd);
        REQUIRE(model.uses_plan());
        CHECK(max_diff(P, unfused(model).predict(odd)) <= 1e-6);
        CHECK(!model.uses_plan());  // (the last call ran the layers)
        CHECK(max_diff(P, model.predict(batches[0])) > 1e-3);
    }
    SECTION("lists in, a Padded out (to_padded's layout); a Padded in, lists or rows out") {
        auto to = list2padded() >> with_array<Padded>(Relu<4>()) >> LSTM<3, 4>() >> with_array<Padded>(Linear<2>());
        to.initialize(L0);
        CHECK_THAT(describe_plan(to), !Contains("layer "));
        train_side_by_side(to, std::vector<List<Floats2d>>{L0, L1}, 3);
        auto from = padded2list() >> with_array<List<Floats2d>>(Relu<4>()) >> list2array() >> Softmax<3>();
        from.initialize(batches[0]);
        CHECK_THAT(describe_plan(from), Contains("unpad 5"));
        train_side_by_side(from, batches, 3);
    }
    SECTION("a Padded of another layout runs the layers; the plan itself names what differs") {
        auto model = noop<Padded>() >> with_array<Padded>(expand_window<1>() >> Linear<4>());
        model.initialize(batches[1]);
        const Padded& P = batches[1];
        Ints1d idx = P.indices();
        for (std::size_t b = 1; b < idx.size(); ++b)
            if (P.lengths()[b] == P.lengths()[b - 1]) {
                std::swap(idx[b], idx[b - 1]);
                break;
            }
        const Padded swapped(P.data(), P.size_at_t(), P.lengths(), idx);
        const Padded Y = model.predict(swapped);
        CHECK(!model.uses_plan());  // its layers ran
        CHECK(max_diff(Y, unfused(model).predict(swapped)) == 0.0);
        (void)model.predict(P);
        CHECK(model.uses_plan());
        auto plan = lower(model);
        CHECK(!plan.accepts(swapped));
        CHECK_THROWS_WITH(plan.predict(swapped), Contains("tenon-E101") && Contains("to_padded's"));
        // Steps past the longest sequence.
        Floats3d more({P.steps() + 1, P.size(), 5});
        Ints1d sizes({P.steps() + 1});
        for (std::size_t t = 0; t < P.steps(); ++t) sizes[t] = P.size_at_t()[t];
        sizes[P.steps()] = 0;
        const Padded longer(std::move(more), sizes, P.lengths(), P.indices());
        CHECK(!plan.accepts(longer));
        CHECK(max_diff(model.predict(longer), unfused(model).predict(longer)) == 0.0);
    }
}

TEST_CASE("sequence plan: a held plan names an input of another width (it used to read past it)", "[seq_plan]") {
    const List<Ints2d> ids = docs(4, 1, 5, 95);
    auto floats = list2ragged() >> with_array<Ragged>(Relu<4>()) >> ragged2list();
    floats.initialize(floats_like(ids, 5, 96));
    auto plan = lower(floats);
    CHECK_THROWS_WITH(plan.predict(floats_like(ids, 7, 97)),
                      Contains("tenon-E101") && Contains("expected input width 5 but sequence 0 has 7"));
    // (the model's own call: its layers say it, naming the layer)
    CHECK_THROWS_WITH(floats.predict(floats_like(ids, 7, 97)), Contains("tenon-E101") && Contains("relu"));
    auto padded = noop<Padded>() >> with_array<Padded>(Relu<4>());
    padded.initialize(to_padded(floats_like(ids, 5, 98)));
    CHECK_THROWS_WITH(lower(padded).predict(to_padded(floats_like(ids, 6, 99))),
                      Contains("tenon-E101") && Contains("but the input has 6"));
    auto tagger = list2ragged<Ints2d>() >> with_array<BasicRagged<Ints2d>>(HashEmbed<6>(100, 1u, 0, 0.0)) >>
                  with_array<Ragged>(Softmax<3>()) >> ragged2list();
    tagger.initialize(ids);
    List<Ints2d> mixed = ids;
    mixed[2] = Ints2d({3, 6});
    CHECK_THROWS_WITH(lower(tagger).predict(mixed),
                      Contains("tenon-E101") && Contains("4 columns of ids") && Contains("sequence 2 has 6"));
}

TEST_CASE("sequence plan: list2padded >> LSTM >> padded2list over float lists", "[seq_plan][lstm]") {
    const List<Floats2d> X = floats_like(docs(6, 0, 9, 31), 5, 32);
    auto model = list2padded() >> LSTM<6, 5>() >> padded2list() >> with_array<List<Floats2d>>(Relu<4>());
    model.initialize(X);
    CHECK_THAT(describe_plan(model), Contains("lstm 5->6"));
    std::vector<List<Floats2d>> batches{X, floats_like(docs(9, 1, 14, 33), 5, 34)};
    train_side_by_side(model, batches, 4);
    // The lowered plan itself, without copying X, and params_only.
    auto plan = lower(model);
    auto [Y, bp] = plan.begin_update(X);
    bp.params_only(grads_like(Y, 5));
}

TEST_CASE("sequence plan: an LSTM takes the static width before it (with_nI), in bidirectional and clone",
          "[seq_plan][lstm]") {
    const List<Floats2d> X = floats_like(docs(5, 0, 7, 35), 5, 36);
    // The Relu's 8 columns reach the LSTMs, which become LSTM<4, 8>: a clone of the BiLSTM
    // (8 -> 8) chains, and the model initialises without data.
    auto model = with_array<List<Floats2d>>(Relu<8, 5>()) >> list2padded() >> clone(bidirectional(LSTM<4>()), 2) >>
                 padded2list() >> with_array<List<Floats2d>>(Softmax<3>());
    static_assert(std::is_same_v<std::remove_cvref_t<decltype(model.layer<2>()[0])>,
                                 Bidirectional<LSTM<4, 8>, LSTM<4, 8>>>);
    model.initialize();
    CHECK(model.layer<2>()[1].get_dim("nI") == 8);
    CHECK(model.predict(X)[0].shape(1) == 3);
    const std::string d = describe_plan(model);
    CHECK_THAT(d, Contains("reverse 8 (each sequence's rows)"));
    CHECK_THAT(d, Contains("stage 10: concat 4+4->8"));
    std::vector<List<Floats2d>> batches{X, floats_like(docs(3, 1, 9, 37), 5, 38)};
    train_side_by_side(model, batches, 3);
}

TEST_CASE("sequence plan: bidirectional is l2r, and r2l between two reverse stages, then a concat",
          "[seq_plan][lstm]") {
    const List<Floats2d> X = floats_like(docs(6, 0, 9, 51), 5, 52);
    std::vector<List<Floats2d>> batches{X, floats_like(docs(4, 1, 12, 53), 5, 54), floats_like(docs(1, 3, 3, 55), 5, 56)};
    SECTION("two LSTMs of different widths, with weight dropout, between list2padded and padded2list") {
        auto model = list2padded() >> bidirectional(LSTM<3, 5>({.dropout = 0.2}), LSTM<4, 5>()) >> padded2list() >>
                     with_array<List<Floats2d>>(Softmax<2>());
        model.initialize(X);
        const std::string d = describe_plan(model);
        CHECK_THAT(d, Contains("reverse 5 (each sequence's rows)"));
        CHECK_THAT(d, Contains("reverse 4 (each sequence's rows)"));
        CHECK_THAT(d, Contains("concat 3+4->7"));
        train_side_by_side(model, batches, 4);
    }
    SECTION("under with_padded, after a table and a Maxout mixer (a BiLSTM tagger written with bidirectional)") {
        auto model = with_array<List<Ints2d>>(HashEmbed<8>(500, 0u, 0, 0.0)) >>
                     with_array<List<Floats2d>>(Maxout<8, 8, 2>()) >>
                     with_padded<List<Floats2d>>(bidirectional(LSTM<6>())) >>
                     with_array<List<Floats2d>>(Softmax<3>());
        const List<Ints2d> ids = docs(5, 0, 8, 57);
        model.initialize(ids);
        CHECK_THAT(describe_plan(model), Contains("concat 6+6->12"));
        std::vector<List<Ints2d>> idb{ids, docs(3, 1, 6, 58)};
        train_side_by_side(model, idb, 3);
    }
}

TEST_CASE("sequence plan: ParametricAttention (v1, v2 with a key transform) is a stage and equals its layers",
          "[seq_plan][attention]") {
    const List<Ints2d> X = docs(8, 1, 10, 41);
    std::vector<List<Ints2d>> batches{X, docs(3, 1, 6, 42), docs(11, 1, 20, 43)};
    SECTION("v1 in a text classifier") {
        auto model = attention_textcat(0.0);
        model.initialize(X);
        const std::string d = describe_plan(model);
        CHECK_THAT(d, Contains("attention 10->10 (over the sequences)"));
        CHECK_THAT(d, !Contains("layer "));
        train_side_by_side(model, batches, 5);
    }
    SECTION("with dropout") {
        auto model = attention_textcat(0.2);
        model.initialize(X);
        train_side_by_side(model, batches, 3);
    }
    SECTION("v2 with a Gelu key transform: a branch of stages, its keys' gradient") {
        auto model = list2ragged<Ints2d>() >> with_array<BasicRagged<Ints2d>>(HashEmbed<8>(300, 3u, 0, 0.0)) >>
                     ParametricAttention_v2<8>(Gelu<8>()) >> reduce_mean() >> Softmax<3>();
        model.initialize(X);
        const std::string d = describe_plan(model);
        CHECK_THAT(d, Contains("gemm 8->8 | bias, gelu"));
        CHECK_THAT(d, Contains("attention 8->8 (over the sequences, keys x2)"));
        train_side_by_side(model, batches, 4);
    }
    SECTION("over float sequences: the input's gradient through the attention and the key transform") {
        const List<Floats2d> F = floats_like(X, 6, 44);
        auto model = list2ragged() >> ParametricAttention_v2<6>(Relu<6>()) >> ragged2list();
        model.initialize(F);
        std::vector<List<Floats2d>> fb{F, floats_like(docs(4, 1, 7, 45), 6, 46)};
        train_side_by_side(model, fb, 3);
    }
}

TEST_CASE("sequence plan: an LSTM or attention model's plan is remade after initialize / set_param / load",
          "[seq_plan][lstm]") {
    const List<Ints2d> X = docs(5, 1, 8, 51);
    auto model = bilstm_tagger(0.0, 0.0);
    model.initialize(X);
    auto held = lower(model);
    const List<Floats2d> P0 = model.predict(X);
    REQUIRE(model.uses_plan());
    // New values of the same shapes (set_param, a loaded file): the plan stays and reads them.
    auto other = bilstm_tagger(0.0, 0.0);
    other.initialize(X);
    {
        auto [Y, bp] = unfused(other).begin_update(X);  // (one step of training: other values)
        bp(grads_like(Y, 7));
        Optimizer opt = Adam(0.05);
        other.finish_update(opt);
    }
    model.from_bytes(other.to_bytes());
    const List<Floats2d> P1 = model.predict(X);
    REQUIRE(model.uses_plan());
    const List<Floats2d> Q1 = unfused(model).predict(X);
    CHECK(max_diff(P1, Q1) <= 1e-6);
    CHECK(max_diff(P0, P1) > 1e-4);
    CHECK(max_diff(all_params(model), all_params(other)) == 0.0);
    CHECK(max_diff(held.predict(X), Q1) <= 1e-6);
    // Another depth (the same widths, other tapes): the model's calls make a new plan, the
    // held one refuses.
    auto deeper = list2ragged<Ints2d>() >>
                  with_array<BasicRagged<Ints2d>>(concatenate(HashEmbed<12>(400, 3u, 0, 0.0), Embed<6>(3000, 2))) >>
                  with_array<Ragged>(Maxout<10>({.nP = 2, .normalize = true})) >> ragged2list() >>
                  with_padded<List<Floats2d>>(BiLSTM<16>({.depth = 3})) >> with_array<List<Floats2d>>(Softmax<5>());
    deeper.initialize(X);
    model = deeper;
    const List<Floats2d> P2 = model.predict(X);
    REQUIRE(model.uses_plan());
    const List<Floats2d> Q2 = unfused(model).predict(X);
    CHECK(max_diff(P2, Q2) <= 1e-6);
    CHECK_THROWS_WITH(held.predict(X), Contains("tenon-E172") && Contains("lower(model) again"));
}

TEST_CASE("sequence plan: StaticVectors over the ids is a stage and equals its layers", "[seq_plan][static_vectors]") {
    const List<Ints2d> X = docs(7, 1, 12, 61);
    auto table = std::make_shared<const Floats2d>(random_array(2000, 6, 62));  // ids >= 2000 read row 0
    auto make = [&](double dropout) {
        return list2ragged<Ints2d>() >>
               with_array<BasicRagged<Ints2d>>(concatenate(
                   HashEmbed<12>(400, 3u, 0, dropout), StaticVectors<10, 6>(table, {.column = 1, .dropout = dropout}))) >>
               with_array<Ragged>(Maxout<8>({.nP = 2, .dropout = dropout, .normalize = true})) >> ragged2list() >>
               with_array<List<Floats2d>>(Softmax<4>());
    };
    std::vector<List<Ints2d>> batches{X, docs(3, 0, 5, 63), docs(12, 0, 20, 64)};
    SECTION("the stages") {
        auto model = make(0.0);
        model.initialize(X);
        const std::string d = describe_plan(model);
        CHECK_THAT(d, Contains("static_vectors ids->10 (over the sequences)"));
        CHECK_THAT(d, !Contains("layer "));
    }
    SECTION("training and predict") {
        auto model = make(0.0);
        model.initialize(X);
        train_side_by_side(model, batches, 4);
    }
    SECTION("with dropout (the column masks draw as the layers do)") {
        auto model = make(0.3);
        model.initialize(X);
        train_side_by_side(model, batches, 4);
    }
}

TEST_CASE("sequence plan: a layer the plan does not fuse inside clone's copies is a layer stage in each copy",
          "[seq_plan]") {
    // Clone keeps its copies' Backprops in a list made per call: the plan keeps such a layer's
    // Backprop in a box of the call's state. It used to run the whole clone as one layer
    // (arrays) or refuse the model (sequences: its layers ran).
    SECTION("arrays: the copies' other layers stay fused") {
        auto model = Relu<6>() >> clone(ColumnScale() >> Relu<6>({.dropout = 0.2}), 3) >> Softmax<3>();
        const Floats2d X = random_array(9, 5, 3);
        model.initialize(X);
        const std::string d = describe_plan(model);
        INFO(d);
        CHECK(count_of(d, "layer column_scale 6->6") == 3);
        CHECK(count_of(d, "gemm 6->6 | bias, relu, dropout(0.2)") == 3);
        train_side_by_side(model, std::vector<Floats2d>{X, random_array(4, 5, 4), random_array(17, 5, 5)}, 4);
    }
    SECTION("sequences: clone of with_array, and with_array of clone with a window") {
        const List<Ints2d> ids = docs(7, 0, 9, 11);
        auto model = with_array<List<Floats2d>>(Relu<6>()) >>
                     clone(with_array<List<Floats2d>>(ColumnScale() >> Maxout<6>({.nP = 2, .dropout = 0.1})), 2) >>
                     with_array<List<Floats2d>>(clone(residual(expand_window<1>() >> ColumnScale() >> Maxout<6>({.nP = 2})), 2), 1) >>
                     with_array<List<Floats2d>>(Softmax<3>());
        const List<Floats2d> X = floats_like(ids, 4, 20);
        model.initialize(X);
        const std::string d = describe_plan(model);
        INFO(d);
        CHECK(count_of(d, "layer column_scale") == 4);
        CHECK_THAT(d, Contains("window"));
        std::vector<List<Floats2d>> batches{X, floats_like(docs(3, 1, 4, 12), 4, 30), floats_like(docs(12, 0, 15, 13), 4, 40)};
        train_side_by_side(model, batches, 4);
    }
    SECTION("a backprop moved, or dropped without being called, destroys its boxes once") {
        auto model = with_array<List<Floats2d>>(clone(ColumnScale() >> Relu<4>(), 2)) >> with_array<List<Floats2d>>(Softmax<3>());
        const List<Floats2d> X = floats_like(docs(5, 1, 6, 14), 4, 50);
        model.initialize(X);
        auto b = model;
        for (int i = 0; i < 3; ++i) {
            auto [Y, bp] = model.begin_update(X);  // dropped unused
            REQUIRE(model.uses_plan());
        }
        auto [Y, bp] = model.begin_update(X);
        auto moved = std::move(bp);
        const List<Floats2d> dY = grads_like(Y, 60);
        const List<Floats2d> dX = moved(dY);
        auto [Yb, bpb] = unfused(b).begin_update(X);
        CHECK(max_diff(Y, Yb) <= 1e-6);
        CHECK(max_diff(dX, bpb(dY)) <= 1e-6);
        CHECK(max_diff(testing::all_grads(model), testing::all_grads(b)) <= 1e-6);
    }
}
