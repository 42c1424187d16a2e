// The sequence data types: List, Ragged, Padded, their invariants (clear errors, never a
// crash) and the conversions between them, against Thinc's ops (list2padded's order for
// ties, padded2list, Ragged from a list).
#include <catch2/catch.hpp>

#include <tenon/tenon.hpp>

#include "oracle/case.hpp"
#include "support/error_id.hpp"
#include "support/floats.hpp"
#include "unit/helpers.hpp"

using namespace tenon;
using namespace tenon::oracle;

namespace {
using tenon::test::error_id;
List<Floats2d> random_list(std::initializer_list<std::size_t> lengths, std::size_t width, std::uint64_t seed) {
    List<Floats2d> xs;
    for (std::size_t n : lengths) xs.push_back(testing::random_array(n, width, seed++));
    return xs;
}
template <class A>
bool same(const A& a, const A& b) {
    return a.shape() == b.shape() && std::equal(a.begin(), a.end(), b.begin());
}
}  // namespace

TEST_CASE("conversions agree with Thinc's ops", "[sequences][oracle]") {
    for (const char* name : {"conv_ties", "conv_one", "conv_sorted"}) {
        INFO(name);
        Case c(name);
        const auto xs = read_list(c, "list");
        check_close(c, "padded", to_padded(xs), 0, 0);
        check_close(c, "ragged", to_ragged(xs), 0, 0);
        check_close(c, "unpadded", to_list(read_padded(c, "padded")), 0, 0);
        check_close(c, "padded", to_padded(to_ragged(xs)), 0, 0);
    }
}

TEST_CASE("round trips through every form give the list back", "[sequences]") {
    const auto xs = random_list({3, 0, 5, 5, 1}, 4, 10);
    const auto r = to_ragged(xs);
    CHECK(r.size() == 5);
    CHECK(r.rows() == 14);
    const auto p = to_padded(xs);
    CHECK(p.steps() == 5);
    CHECK(p.size() == 5);
    for (const auto& back : {to_list(r), to_list(p), to_list(to_ragged(p)), to_list(to_padded(r))}) {
        REQUIRE(back.size() == xs.size());
        for (std::size_t i = 0; i < xs.size(); ++i) CHECK(same(back[i], xs[i]));
    }
    // A sequence of the ragged is a view of its rows.
    CHECK(same(Floats2d(r[2]), xs[2]));
    CHECK(r.offsets() == std::vector<std::size_t>{0, 3, 3, 8, 13, 14});
}

TEST_CASE("other element types and ranks", "[sequences]") {
    BasicRagged<Ints1d> ids(Ints1d({5}, {1, 2, 3, 4, 5}), {2, 3});
    CHECK(ids[1].shape(0) == 3);
    CHECK(ids[1][2] == 5);
    List<Ints2d> xs{Ints2d({2, 1}, {7, 8}), Ints2d({1, 1}, {9})};
    const auto p = to_padded(xs);
    static_assert(std::is_same_v<std::remove_cvref_t<decltype(p)>, BasicPadded<Array<std::int32_t, dyn, dyn, dyn>>>);
    CHECK(p.data()(1, 0, 0) == 8);
    CHECK(p.data()(1, 1, 0) == 0);  // padding
    const auto back = to_list(p);
    CHECK(same(back[0], xs[0]));
    BasicRagged<Floats3d> r3(Floats3d({3, 2, 2}), {1, 2});
    CHECK(to_list(r3)[1].shape() == std::array<std::size_t, 3>{2, 2, 2});
}

TEST_CASE("empty batches and empty sequences", "[sequences]") {
    const List<Floats2d> none;
    CHECK(to_ragged(none).size() == 0);
    CHECK(to_padded(none).size() == 0);
    CHECK(to_padded(none).steps() == 0);
    CHECK(to_list(to_padded(none)).empty());
    const auto zeros = random_list({0, 0}, 3, 1);
    const auto p = to_padded(zeros);
    CHECK(p.steps() == 0);
    CHECK(p.size() == 2);
    CHECK(to_list(p)[1].shape() == std::array<std::size_t, 2>{0, 3});
    CHECK(to_ragged(zeros).rows() == 0);
}

TEST_CASE("broken invariants are clear errors", "[sequences][errors]") {
    CHECK(error_id([] { Ragged(Floats2d({3, 2}), {1, 1}); }) == "tenon-E152");
    CHECK(error_id([] { Ragged(Floats2d({3, 2}), {4, -1}); }) == "tenon-E151");
    CHECK(error_id([] { Ragged(Floats2d({3, 2}), {1, 2})[2]; }) == "tenon-E153");
    List<Floats2d> mixed{Floats2d({1, 2}), Floats2d({1, 3})};
    CHECK(error_id([&] { to_ragged(mixed); }) == "tenon-E150");
    CHECK(error_id([&] { to_padded(mixed); }) == "tenon-E150");
    auto ints = [](std::initializer_list<std::int32_t> v) { return Ints1d({v.size()}, v); };
    // (T=2, B=2): size_at_t, lengths, indices each wrong in turn.
    CHECK(error_id([&] { Padded(Floats3d({2, 2, 1}), ints({2, 1}), ints({2, 1}), ints({0, 1})); }) == "no error");
    CHECK(error_id([&] { Padded(Floats3d({2, 2, 1}), ints({2}), ints({2, 1}), ints({0, 1})); }) == "tenon-E154");
    CHECK(error_id([&] { Padded(Floats3d({2, 2, 1}), ints({2, 2}), ints({2, 1}), ints({0, 1})); }) == "tenon-E154");
    CHECK(error_id([&] { Padded(Floats3d({2, 2, 1}), ints({2, 1}), ints({1, 2}), ints({0, 1})); }) == "tenon-E154");
    CHECK(error_id([&] { Padded(Floats3d({2, 2, 1}), ints({2, 1}), ints({3, 1}), ints({0, 1})); }) == "tenon-E154");
    CHECK(error_id([&] { Padded(Floats3d({2, 2, 1}), ints({2, 1}), ints({2, 1}), ints({1, 1})); }) == "tenon-E154");
    CHECK(error_id([&] { Padded(Floats3d({2, 2, 1}), ints({2, 1}), ints({2, 1}), ints({0, 5})); }) == "tenon-E154");
}

TEST_CASE("the gradient checker's view of sequence values", "[sequences]") {
    // Padding is not data: only live positions are values.
    auto p = to_padded(random_list({3, 1}, 2, 5));
    CHECK(testing::floats_of(p).size() == (3 + 1) * 2);
    auto r = to_ragged(random_list({3, 1}, 2, 5));
    CHECK(testing::floats_of(r).size() == 8);
    auto g = testing::random_like(p, 1);
    CHECK(g.data()(1, 1, 0) == 0.0f);  // padding stays zero
    CHECK(g.data()(0, 1, 0) != 0.0f);
}

#include "support/gradcheck_any.hpp"
#include "support/host_floats.hpp"

TEST_CASE("the generic gradient checker passes a right layer and catches a wrong one", "[sequences][gradcheck]") {
    auto model = Relu<3>() >> Linear<2>();
    const Floats2d X = testing::random_array(4, 5, 3);
    model.initialize(X);
    testing::randomize_params(model, 7);
    testing::require_gradients(model, X);
    // A layer whose backprop forgets a factor: the checker must see it.
    struct Wrong : Layer<Wrong, Floats2d, Floats2d> {
        Wrong() : Layer("wrong", {}, {}) { mark_initialized(); }
        struct Backprop {
            Floats2d operator()(Floats2dCView dY) const { return Floats2d(dY); }  // should be 2 * dY
        };
        void init_impl(const Floats2dCView*, const Floats2dCView*) {}
        Floats2d predict_impl(Floats2dCView X) const {  // (on the host: support/host_floats.hpp)
            std::vector<float> y = testing::host_floats(X.data(), X.size());
            for (float& v : y) v *= 2;
            Floats2d Y(X.shape(), uninitialized);
            testing::store_floats(Y.data(), y);
            return Y;
        }
        std::pair<Floats2d, Backprop> forward_impl(Floats2dCView X, bool) { return {predict_impl(X), {}}; }
    };
    Wrong w;
    const auto rep = testing::gradcheck_any(w, X);
    CHECK(rep.mismatches > 0);
    CHECK_FALSE(rep.ok());
}
