// What holding a model in an AnyModel costs at predict (include/tenon/model/any_model.hpp):
// Relu<64>() >> Softmax<10>() with nI 64, called as itself and through an
// AnyModel<Floats2d, Floats2d> holding a copy of it, at batch 1 and batch 128. Each figure
// is the median of 7 repeats of a timed loop, in nanoseconds per call. A standalone program
// (not in bench/meson.build); build it against a release build's libraries, e.g.
//   g++ -std=c++20 -O2 -I include bench/any_model_cost.cpp -o any_model_cost \
//     -Wl,--start-group build/libtenon*.a -Wl,--end-group -lz -lpthread
#include <tenon/tenon.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

using namespace tenon;

namespace {
// ns per call of f, the median of `repeats` loops of `calls` calls each.
template <class F>
double median_ns(F&& f, int calls, int repeats = 7) {
    std::vector<double> per_call;
    for (int r = 0; r < repeats; ++r) {
        const auto start = std::chrono::steady_clock::now();
        for (int i = 0; i < calls; ++i) f();
        const auto stop = std::chrono::steady_clock::now();
        per_call.push_back(std::chrono::duration<double, std::nano>(stop - start).count() / calls);
    }
    std::sort(per_call.begin(), per_call.end());
    return per_call[per_call.size() / 2];
}

Floats2d inputs(std::size_t rows) {
    Rng rng(rows);
    Floats2d X({rows, 64}, uninitialized);
    for (float& v : X) v = static_cast<float>(rng.uniform(-1.0, 1.0));
    return X;
}
}  // namespace

int main() {
    auto model = Relu<64>() >> Softmax<10>();
    model.initialize(inputs(8));
    AnyModel<Floats2d, Floats2d> held = copy(model);
    volatile float sink = 0;
    std::printf("predict of relu>>softmax (nI 64), ns per call, median of 7 repeats\n");
    std::printf("%-6s %12s %12s %10s\n", "batch", "static", "AnyModel", "diff");
    for (std::size_t rows : {std::size_t{1}, std::size_t{128}}) {
        const Floats2d X = inputs(rows);
        const int calls = rows == 1 ? 20000 : 2000;
        for (int i = 0; i < calls / 10; ++i) {  // warm-up: plans made, block caches filled
            sink = sink + model.predict(X)[0];
            sink = sink + held.predict(X)[0];
        }
        const double a = median_ns([&] { sink = sink + model.predict(X)[0]; }, calls);
        const double b = median_ns([&] { sink = sink + held.predict(X)[0]; }, calls);
        std::printf("%-6zu %12.0f %12.0f %+10.0f\n", rows, a, b, b - a);
    }
    return sink == 12345.0f;
}
