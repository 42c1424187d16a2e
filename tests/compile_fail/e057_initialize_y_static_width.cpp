// expect: tenon-E057
// initialize(X, Y) with a Y whose type fixes 4 columns, for a model of 3 outputs.
#include <tenon/tenon.hpp>
using namespace tenon;

int main() {
    auto model = Relu<8, 5>() >> Softmax<3>();
    Floats2d X({4, 5});
    Array<float, dyn, 4> Y({4, 4});
    model.initialize(X, Y);
    Floats2d P = model.predict(X);
    return int(P.shape(0));
}
