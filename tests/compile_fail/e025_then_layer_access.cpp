// expect: tenon-E025
// A residual's width mistake, then UseAverages, describe, model.layer<0>() and copy(): a
// failed model has layer<I>() too.
#include <cstdio>
#include <tenon/tenon.hpp>
using namespace tenon;

int main() {
    auto model = Relu<16, 8>() >> residual(Relu<12>()) >> Softmax<3>();
    Floats2d X({6, 8});
    Floats2d Y = to_categorical(Ints1d({6}, {0, 1, 2, 0, 1, 2}), 3);
    model.initialize(X, Y);
    Optimizer opt = Adam(0.001);
    auto [Yh, backprop] = model.begin_update(X);
    backprop(CategoricalCrossentropy().get_grad(Yh, Y));
    model.finish_update(opt);
    std::size_t hidden = model.layer<0>().get_dim("nO");
    auto best = copy(model);
    {
        UseAverages averaged(model, opt);
        Floats2d P = model.predict(X);
        (void)P;
    }
    std::puts(describe(model).c_str());
    return int(hidden);
}
