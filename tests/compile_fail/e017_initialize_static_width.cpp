// expect: tenon-E017
// expect-text: initialize
// A sample whose type fixes width 5 given to initialize on a model whose type fixes width 4:
// a compile error, as predict's and begin_update's are (not tenon-E101 at run time).
#include <tenon/tenon.hpp>
using namespace tenon;

int main() {
    auto model = Relu<8, 4>() >> Softmax<3>();
    Array<float, dyn, 5> X({4, 5});
    Floats2d Y({4, 3});
    model.initialize(X, Y);
    Optimizer opt = Adam(0.001);
    auto [Yh, backprop] = model.begin_update(Floats2d({4, 4}));
    backprop(Yh);
    model.finish_update(opt);
    return int(model.predict(Floats2d({4, 4})).shape(0));
}
