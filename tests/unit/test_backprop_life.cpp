// A backprop outlives nothing it reads: called after the model it came from was destroyed,
// moved, assigned or re-initialised, it refuses with tenon-E172 (detail::NodeLife, watched by
// Layer's CheckedBackprop) instead of reading freed or reshaped memory. Any model: a lone
// layer, an embedding, a wrapper, a chain (with its plan). And the ordinary uses still work:
// backprop after finish_update, twice, after a copy of the model was made.
#include <catch2/catch.hpp>

#include <memory>
#include <optional>
#include <vector>

#include "support/error_id.hpp"
#include "tenon/tenon.hpp"

using namespace tenon;
using Catch::Matchers::Contains;
using tenon::test::error_id;
using tenon::test::error_message;

namespace {
Floats2d input(std::size_t rows, std::size_t cols) {
    Floats2d X({rows, cols});
    for (std::size_t i = 0; i < X.size(); ++i) X[i] = 0.1f * float(i % 7) - 0.3f;
    return X;
}
}  // namespace

TEST_CASE("backprop life: a lone layer destroyed, an embedding destroyed, a wrapper destroyed", "[backprop_life]") {
    const Floats2d X = input(4, 5);
    {
        auto r = std::make_unique<Relu<8>>();
        r->initialize(X);
        auto [Y, bp] = r->begin_update(X);
        r.reset();
        CHECK_THAT(error_message([&] { bp(Y); }), Contains("tenon-E172") && Contains("begin_update again"));
    }
    {
        Ints2d ids({3, 1}, {1, 2, 3});
        auto e = std::make_unique<Embed<6>>(10);
        e->initialize(ids);
        auto [Y, bp] = e->begin_update(ids);
        e.reset();
        CHECK(error_id([&] { bp(Y); }) == "tenon-E172");
    }
    {
        List<Floats2d> docs{input(2, 5), input(3, 5)};
        auto w = std::make_unique<decltype(with_array<List<Floats2d>>(Relu<8>()))>(with_array<List<Floats2d>>(Relu<8>()));
        w->initialize(docs);
        auto [Y, bp] = w->begin_update(docs);
        w.reset();
        CHECK(error_id([&] { bp(Y); }) == "tenon-E172");
    }
}

TEST_CASE("backprop life: a lone layer re-initialised with another width, or loaded", "[backprop_life]") {
    const Floats2d X = input(4, 5);
    for (std::size_t nI : {2u, 6u}) {  // a narrower W (an overflow) and a wider one (silent garbage)
        auto r = Relu<8>();
        r.initialize(X);
        auto [Y, bp] = r.begin_update(X);
        r.set_dim("nI", nI, true);
        r.initialize();
        CHECK(error_id([&] { bp(Y); }) == "tenon-E172");
    }
    auto r = Relu<8>();
    r.initialize(X);
    const auto bytes = r.to_bytes();
    auto [Y, bp] = r.begin_update(X);
    r.from_bytes(bytes);  // the loaded arrays replace the ones the backprop knew
    CHECK(error_id([&] { bp(Y); }) == "tenon-E172");
}

TEST_CASE("backprop life: a model moved, assigned, or moved by a vector", "[backprop_life]") {
    const Floats2d X = input(4, 5);
    using M = decltype(Relu<8>() >> Softmax<3>());
    SECTION("a chain moved to a new owner, which is then destroyed") {
        auto m = Relu<8>() >> Softmax<3>();
        m.initialize(X);
        auto [Y, bp] = m.begin_update(X);
        std::optional<M> owner(std::move(m));
        CHECK(error_id([&] { bp(Y); }) == "tenon-E172");  // (its memory is the new owner's now)
        owner.reset();
        CHECK(error_id([&] { bp(Y); }) == "tenon-E172");
    }
    SECTION("a lone layer in a std::vector that reallocates") {
        std::vector<Relu<8>> layers(1);
        layers[0].initialize(X);
        auto [Y, bp] = layers[0].begin_update(X);
        layers.resize(9);
        CHECK(error_id([&] { bp(Y); }) == "tenon-E172");
    }
    SECTION("a lone layer assigned another layer of another width") {
        auto r = Relu<8>();
        r.initialize(X);
        auto [Y, bp] = r.begin_update(X);
        auto other = Relu<8>();
        other.initialize(input(4, 2));
        r = other;
        CHECK(error_id([&] { bp(Y); }) == "tenon-E172");
        auto [Y2, bp2] = r.begin_update(input(4, 2));
        r = std::move(other);  // a move assignment too
        CHECK(error_id([&] { bp2(Y2); }) == "tenon-E172");
    }
}

TEST_CASE("backprop life: what does not change the model leaves its backprop working", "[backprop_life]") {
    const Floats2d X = input(4, 5);
    auto m = Relu<8>() >> Softmax<3>();
    m.initialize(X);
    auto r = Relu<8>();
    r.initialize(X);
    Optimizer opt = Adam(0.01);
    for (int step = 0; step < 2; ++step) {
        auto [Y, bp] = m.begin_update(X);
        auto [Yr, bpr] = r.begin_update(X);
        const auto copy = m;        // a copy is another model: this one is unchanged
        const auto rcopy = r;
        m.finish_update(opt);       // new values, the same arrays
        r.finish_update(opt);
        CHECK(error_id([&] { bp(Y); }) == "no error");
        CHECK(error_id([&] { bp(Y); }) == "no error");  // twice: the gradients add, as in Thinc
        CHECK(error_id([&] { bpr(Yr); }) == "no error");
        CHECK(copy.is_initialized());
        CHECK(rcopy.is_initialized());
    }
    // A backprop made on a copy works while the original changes.
    auto copy = r;
    auto [Yc, bpc] = copy.begin_update(X);
    r.set_dim("nI", 2, true);
    r.initialize();
    CHECK(error_id([&] { bpc(Yc); }) == "no error");
}

TEST_CASE("plan life: a held plan refuses once its model is destroyed or moved, not after a re-initialise",
          "[backprop_life]") {
    const Floats2d X = input(4, 5);
    using M = decltype(Relu<8>() >> Softmax<3>());
    SECTION("destroyed") {
        auto m = std::make_unique<M>(Relu<8>() >> Softmax<3>());
        m->initialize(X);
        auto plan = lower(*m);
        const auto copy = plan;  // a copy of the plan watches the same model
        CHECK(error_id([&] { (void)plan.predict(X); }) == "no error");
        m.reset();
        CHECK_THAT(error_message([&] { (void)plan.predict(X); }),
                   Contains("tenon-E172") && Contains("no longer exists where it was"));
        CHECK(error_id([&] { (void)copy.predict(X); }) == "tenon-E172");
        CHECK(error_id([&] { (void)plan.begin_update(X); }) == "tenon-E172");
        CHECK_FALSE(plan.is_current());
    }
    SECTION("moved into another object") {
        auto m = Relu<8>() >> Softmax<3>();
        m.initialize(X);
        auto plan = lower(m);
        M owner(std::move(m));
        CHECK(error_id([&] { (void)plan.predict(X); }) == "tenon-E172");
        auto again = lower(owner);  // the plan of the model where it is now works
        CHECK(error_id([&] { (void)again.predict(X); }) == "no error");
    }
    SECTION("re-initialised with the same widths, or assigned another model: the plan compares the layout") {
        auto m = Relu<8>() >> Softmax<3>();
        m.initialize(X);
        auto plan = lower(m);
        m.initialize(X);
        CHECK(error_id([&] { (void)plan.predict(X); }) == "no error");
        auto other = Relu<8>() >> Softmax<3>();
        other.initialize(X);
        m = other;  // the same place, the same layout
        CHECK(error_id([&] { (void)plan.predict(X); }) == "no error");
        auto wider = Relu<8>() >> Softmax<3>();
        wider.initialize(input(4, 7));
        m = wider;  // the same place, another layout
        CHECK(error_id([&] { (void)plan.predict(X); }) == "tenon-E172");  // (the layout check's E172)
    }
}
