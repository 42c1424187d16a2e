// expect: tenon-E057
// expect-text: given_width<4>
// The model makes 3 columns; a gradient whose type fixes 4 is refused where backprop is called,
// and the rest of the training loop adds nothing.
#include <tenon/tenon.hpp>
using namespace tenon;

int main() {
    auto model = Relu<8, 5>() >> Softmax<3>();
    model.initialize();
    Floats2d X({4, 5});
    Optimizer opt = Adam(0.001);
    auto [Yh, backprop] = model.begin_update(X);
    Array<float, dyn, 4> dY({4, 4});
    auto dX = backprop(dY);
    model.finish_update(opt);
    Floats2d P = model.predict(X);
    return int(P.shape(0) + dX.shape(0));
}
