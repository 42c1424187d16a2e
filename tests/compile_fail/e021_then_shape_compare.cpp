// expect: tenon-E021
// An add of 8 + 6 wide layers, then the program compares the gradient's shape (!=).
#include <cstdio>
#include <tenon/tenon.hpp>
using namespace tenon;

int main() {
    auto model = Relu<8, 4>() >> (Relu<8>() + Relu<6>()) >> Softmax<3>();
    Floats2d X({5, 4});
    model.initialize();
    Optimizer opt = Adam(0.001);
    auto [Yh, backprop] = model.begin_update(X);
    auto dX = backprop(Yh);
    if (dX.shape(0) != X.shape(0)) std::puts("gradient rows differ");
    model.finish_update(opt);
    return 0;
}
