// Schedules (include/tenon/optim/schedules.hpp) against Thinc 8.1's generators, the optimizer
// taking them (Optimizer::schedule, step_schedules), and the batchers of items
// (include/tenon/data/batching.hpp): Thinc's minibatch sizes over a list, spaCy's
// minibatch_by_words on hand-checked cases. The reference values are written by
// gen_thinc_schedules.py with Debian's Thinc when the tests are built.
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <map>
#include <numeric>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tenon/tenon.hpp"

using namespace tenon;
using Catch::Matchers::Contains;

namespace {

std::map<std::string, std::vector<double>> thinc_series() {
    std::ifstream in(TENON_SCHEDULES_FILE);
    REQUIRE(in.good());
    std::map<std::string, std::vector<double>> out;
    for (std::string line; std::getline(in, line);) {
        std::istringstream ss(line);
        std::string name;
        ss >> name;
        for (double v; ss >> v;) out[name].push_back(v);
    }
    return out;
}

// The first n values of a schedule.
std::vector<double> take(Schedule s, std::size_t n) {
    std::vector<double> v(n);
    for (auto& x : v) x = s.next();
    return v;
}

bool same_values(const std::vector<double>& a, const std::vector<double>& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (!(std::abs(a[i] - b[i]) <= 1e-15 * std::max(1.0, std::abs(b[i])))) return false;
    return true;
}

List<Ints2d> docs_of_lengths(const std::vector<std::size_t>& lengths) {
    List<Ints2d> out;
    for (std::size_t i = 0; i < lengths.size(); ++i) {
        Ints2d d({lengths[i], 1});
        for (auto& v : d) v = static_cast<std::int32_t>(i);  // each row names its document
        out.push_back(std::move(d));
    }
    return out;
}
// The documents of each batch, by the ids their rows hold.
template <class B>
std::vector<std::vector<int>> batch_ids(const B& batches) {
    std::vector<std::vector<int>> out;
    for (const List<Ints2d>& batch : batches) {
        out.emplace_back();
        for (const Ints2d& d : batch) out.back().push_back(d.size() ? d[0] : -1);
    }
    return out;
}

}  // namespace

TEST_CASE("schedules give Thinc's values", "[schedules]") {
    const auto thinc = thinc_series();
    const std::map<std::string, Schedule> ours = {
        {"constant", constant(0.25)},
        {"constant_then", constant_then(0.5, 5, decaying(0.01, 0.1))},
        {"decaying", decaying(0.001, 1e-2)},
        {"decaying_t", decaying(0.2, 0.5, 3)},
        {"compounding", compounding(1.0, 32.0, 1.5)},
        {"compounding_slow", compounding(4.0, 32.0, 1.001)},
        {"compounding_down", compounding(10.0, 1.0, 0.8)},
        {"slanted_triangular", slanted_triangular(0.01, 40)},
        {"slanted_triangular_cut", slanted_triangular(1.0, 50, 0.2, 8)},
        {"warmup_linear", warmup_linear(0.001, 10, 40)},
        {"warmup_linear_none", warmup_linear(0.5, 0, 30)},
        {"cyclic_triangular", cyclic_triangular(0.001, 0.01, 7)},
    };
    for (const auto& [name, schedule] : ours) {
        INFO(name);
        REQUIRE(thinc.count(name));
        const auto& want = thinc.at(name);
        CHECK(same_values(take(schedule, want.size()), want));
    }
    // A copy goes on from where the original was.
    Schedule s = compounding(1.0, 100.0, 2.0);
    s.next();
    Schedule t = s;
    CHECK(s.next() == 2.0);
    CHECK(t.next() == 2.0);
    CHECK(s.name() == "compounding(1, 100, 2)");
    CHECK_THROWS_WITH(cyclic_triangular(0.1, 0.2, 0), Contains("tenon-E253") && Contains("period"));
    CHECK_THROWS_WITH(compounding(1.0, 2.0, -1.0), Contains("tenon-E253"));
}

TEST_CASE("an optimizer takes schedules for its options", "[schedules]") {
    SECTION("learn_rate follows the schedule, one value per step_schedules()") {
        Optimizer opt = Adam(warmup_linear(0.001, 10, 40));
        std::vector<double> seen;
        for (int i = 0; i < 40; ++i) {
            seen.push_back(opt.learn_rate());
            opt.step_schedules();
        }
        const auto thinc = thinc_series().at("warmup_linear");
        REQUIRE(thinc.size() >= 40);
        CHECK(same_values(seen, std::vector<double>(thinc.begin(), thinc.begin() + 40)));
    }
    SECTION("a model trained with a scheduled Adam equals one whose rate is set by hand") {
        auto a = Relu<8>() >> Softmax<3>();
        Floats2d X({5, 4});
        for (std::size_t i = 0; i < X.size(); ++i) X[i] = std::sin(0.7f * float(i));
        Floats2d Y({5, 3});
        for (std::size_t i = 0; i < 5; ++i) Y(i, i % 3) = 1.0f;
        fix_random_seed(3);
        a.initialize(X, Y);
        auto b = a;
        Optimizer oa = Adam(decaying(0.05, 0.5)), ob = Adam(0.05);
        Schedule by_hand = decaying(0.05, 0.5);
        CategoricalCrossentropy loss;
        for (int step = 0; step < 5; ++step) {
            ob.set_learn_rate(by_hand.next());
            for (auto* m : {&a, &b}) {
                auto [P, bp] = m->begin_update(X);
                bp(loss.get_grad(P, Y));
            }
            a.finish_update(oa);
            b.finish_update(ob);
            oa.step_schedules();
        }
        const Floats2d Pa = a.predict(X), Pb = b.predict(X);
        bool same = true;
        for (std::size_t i = 0; i < Pa.size(); ++i) same = same && Pa[i] == Pb[i];
        CHECK(same);
    }
    SECTION("other options; values out of range and unknown options are named errors") {
        Optimizer opt = Adam(0.001);
        opt.schedule("b1", constant_then(0.8, 1, constant(0.85)));
        CHECK(opt.options().beta1 == 0.8);
        opt.step_schedules();
        CHECK(opt.options().beta1 == 0.85);
        opt.schedule("grad_clip", decaying(4.0, 1.0));
        CHECK(opt.options().grad_clip == 4.0);
        opt.step_schedules();
        CHECK(opt.options().grad_clip == 2.0);
        CHECK(opt.options().beta1 == 0.85);
        CHECK_THROWS_WITH(opt.schedule("learn_rate", constant_then(0.01, 1, constant(-1.0))).step_schedules(),
                          Contains("tenon-E251") && Contains("learn_rate") && Contains("constant_then(0.01, 1, constant(-1))"));
        CHECK(opt.learn_rate() == 0.01);  // the step that failed changed nothing
        CHECK_THROWS_WITH(opt.schedule("momentum", constant(0.5)), Contains("tenon-E253") && Contains("momentum"));
        CHECK_THROWS_WITH(Adam(constant(std::nan(""))), Contains("tenon-E251"));
    }
}

TEST_CASE("minibatch over a list of items: Thinc's sizes, shuffling, schedules", "[schedules][batching]") {
    const auto thinc = thinc_series();
    const List<Ints2d> docs = docs_of_lengths(std::vector<std::size_t>(100, 2));
    auto sizes = [](const auto& batches) {
        std::vector<double> out;
        for (std::size_t b = 0; b < batches.size(); ++b) out.push_back(double(batches.indices(b).second));
        return out;
    };
    CHECK(sizes(minibatch(7, docs)) == thinc.at("minibatch:int7"));
    CHECK(sizes(minibatch(compounding(1.0, 16.0, 1.5), docs)) == thinc.at("minibatch:compounding"));
    // Thinc adds the schedule's raw values but slices by their integer parts, so 30, 23.07,
    // 18.75, 15.79, 13.64 cover 100 items by its count and 99 by its slices: the last item is
    // never seen. Here the last batch takes it.
    std::vector<double> want = thinc.at("minibatch:decaying_size");
    REQUIRE(std::accumulate(want.begin(), want.end(), 0.0) == 99.0);
    want.push_back(1.0);
    CHECK(sizes(minibatch(decaying(30.0, 0.3), docs)) == want);

    SECTION("each batch is a list of the items, in order or shuffled") {
        const auto in_order = batch_ids(minibatch(30, docs));
        REQUIRE(in_order.size() == 4);
        CHECK(in_order[1][0] == 30);
        fix_random_seed(1);
        const auto shuffled = batch_ids(minibatch(30, docs, shuffle));
        std::set<int> seen;
        for (const auto& b : shuffled) seen.insert(b.begin(), b.end());
        CHECK(seen.size() == 100);
        CHECK(shuffled != in_order);
        fix_random_seed(1);
        CHECK(batch_ids(minibatch(30, docs, shuffle)) == shuffled);
    }
    SECTION("a schedule held in a variable goes on across epochs; a temporary one starts afresh") {
        Schedule grow = compounding(10.0, 80.0, 2.0);
        CHECK(sizes(minibatch(grow, docs)) == std::vector<double>{10, 20, 40, 30});
        CHECK(sizes(minibatch(grow, docs)) == std::vector<double>{80, 20});  // 80 is next
        CHECK(sizes(minibatch(compounding(10.0, 80.0, 2.0), docs)) == std::vector<double>{10, 20, 40, 30});
    }
    SECTION("a std::vector of anything; a size below 1 is tenon-E135") {
        const std::vector<std::string> words{"a", "b", "c", "d", "e"};
        auto batches = minibatch(2, words);
        REQUIRE(batches.size() == 3);
        CHECK(batches[2] == std::vector<std::string>{"e"});
        CHECK_THROWS_WITH(minibatch(0, words), Contains("tenon-E135"));
        CHECK_THROWS_WITH(minibatch(decaying(2.0, 1.0), words), Contains("tenon-E135") && Contains("decaying"));
    }
}

TEST_CASE("minibatch_by_words: spaCy's batches of about a number of words", "[schedules][batching]") {
    // Lengths 3 3 3 10 2 50 4, 8 words a batch with 25% tolerance (up to 10): 0 and 1 fit (6),
    // 2 would make 9 and waits as overflow; 10 fits no batch with them: [0 1] goes, 2 starts the
    // next but 3 (10 words) fits not with it, so [2] goes and 3 starts one; 2 (item 4) fits
    // not with 10: [3] goes; item 5 (50 words) is a batch by itself; 4 and 6 end together.
    const List<Ints2d> docs = docs_of_lengths({3, 3, 3, 10, 2, 50, 4});
    using B = std::vector<std::vector<int>>;
    CHECK(batch_ids(minibatch_by_words(docs, 8, 0.25)) == B{{0, 1}, {2}, {3}, {5}, {4, 6}});
    CHECK(batch_ids(minibatch_by_words(docs, 8, 0.25, true)) == B{{0, 1}, {2}, {3}, {4, 6}});
    // Overflow within the tolerance starts the batch that follows: 4 + 4 = 8, then 3 waits
    // (11 <= 12), then 5 fits not even with the overflow (16): [0 1] goes and 3 + 5 make the
    // next; 1 more (9 <= 12) waits as overflow and ends up in that last batch.
    const List<Ints2d> more = docs_of_lengths({4, 4, 3, 5, 1});
    CHECK(batch_ids(minibatch_by_words(more, 8, 0.5)) == B{{0, 1}, {2, 3, 4}});
    // A length function: every document counts 1 word, 3 a batch.
    auto by_count = minibatch_by_words(docs, 3, 0.0, false, [](const Ints2d&) { return 1; });
    CHECK(batch_ids(by_count) == B{{0, 1, 2}, {3, 4, 5}, {6}});
    // A schedule: each new batch draws the next target (6, 12, 24, ...): [0 1] makes 6; 3 + 10
    // is over 12, so [2] goes; 10 + 2 + 4 fit 24, and 50 is alone.
    CHECK(batch_ids(minibatch_by_words(docs, compounding(6.0, 100.0, 2.0), 0.0)) == B{{0, 1}, {2}, {5}, {3, 4, 6}});
    CHECK_THROWS_WITH(minibatch_by_words(docs, 8, -0.5), Contains("tenon-E135") && Contains("tolerance"));
}

namespace {
std::string contents(std::FILE* f) {
    std::fflush(f);
    std::rewind(f);
    std::string s;
    for (int c; (c = std::fgetc(f)) != EOF;) s.push_back(static_cast<char>(c));
    return s;
}
}  // namespace

TEST_CASE("Progress: one line per epoch in a log, a bar on a terminal", "[progress]") {
    std::FILE* out = std::tmpfile();
    std::FILE* err = std::tmpfile();
    REQUIRE((out && err));
    SECTION("in a log") {
        Progress p(out, err, false);
        p.start_epoch(1, 8);
        for (int i = 0; i < 8; ++i) p.step(i == 5 ? std::nan("") : 0.5);
        p.end_epoch({{"dev accuracy", 0.84125}});
        const std::string e = contents(err), o = contents(out);
        CHECK(e == "warning: epoch 1, batch 6: the loss is not finite (nan)\n");  // and nothing else
        CHECK_THAT(o, Catch::Matchers::Matches(R"(epoch 1: \d+\.\d\d s, dev accuracy 0\.8413\n)"));
        CHECK(p.done() == 8);
    }
    SECTION("on a terminal: the bar is redrawn, and cleared before the epoch's line") {
        Progress p(out, err, true);
        p.start_epoch(2, 3);
        p.step(1.0);
        p.step(2.0);
        p.step();
        CHECK(p.loss() == 3.0);
        p.end_epoch();
        const std::string e = contents(err);
        CHECK_THAT(e, Contains("\repoch 2 [==========                    ]  33%  loss 1"));
        CHECK_THAT(e, Contains("\repoch 2 [==============================] 100%"));
        CHECK(e.back() == '\r');  // cleared
        CHECK_THAT(contents(out), Catch::Matchers::Matches(R"(epoch 2: \d+\.\d\d s\n)"));
    }
    std::fclose(out);
    std::fclose(err);
}
