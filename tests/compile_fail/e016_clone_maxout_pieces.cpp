// expect: tenon-E016
// clone(Maxout<64, 3>(), 2): the 3 meant as pieces is the input width; E016 says where the
// pieces go, as E001 does for the same mistake in a chain.
// expect-text: the pieces are the
#include <tenon/tenon.hpp>
using namespace tenon;

int main() {
    auto model = Relu<64, 10>() >> clone(Maxout<64, 3>(), 2) >> Softmax<3>();
    Floats2d X({8, 10});
    Ints1d y({8}, {0, 1, 2, 0, 1, 2, 0, 1});
    Floats2d Y = to_categorical(y, 3);
    model.initialize(X, Y);
    Optimizer opt = Adam(0.001);
    CategoricalCrossentropy loss;
    for (int epoch = 0; epoch < 2; ++epoch) {
        for (auto [Xb, Yb] : multibatch(4, X, Y, shuffle)) {
            auto [Yh, backprop] = model.begin_update(Xb);
            backprop(loss.get_grad(Yh, Yb));
            model.finish_update(opt);
        }
    }
    Floats2d P = model.predict(X);
    return int(P.shape(0));
}
