// expect: tenon-E052
// uniqued(HashEmbed<64, Floats2d>): E052 only, not uniqued's E050 as well.
#include <tenon/tenon.hpp>
using namespace tenon;

int main() {
    auto model = uniqued(HashEmbed<64, Floats2d>(1000)) >> Softmax<3>();
    Floats2d X({8, 1});
    Floats2d Y = to_categorical(Ints1d({8}, {0, 1, 2, 0, 1, 2, 0, 1}), 3);
    model.initialize(X, Y);
    Optimizer opt = Adam(0.001);
    auto [Yh, backprop] = model.begin_update(X);
    backprop(CategoricalCrossentropy().get_grad(Yh, Y));
    model.finish_update(opt);
    return int(model.predict(X).shape(0));
}
