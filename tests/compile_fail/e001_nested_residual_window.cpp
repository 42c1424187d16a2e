// expect: tenon-E001
// expect-text: expects_width<96>
// expect-text: produces_width<288>
// The width before a clone reaches the chain inside its residual: expand_window(1) of 96
// gives 288, which the Maxout<96, 96> after it does not take. (The residual's own width, 96,
// is right: only the width flowing inside it shows the mistake.)
#include <tenon/tenon.hpp>
using namespace tenon;

int main() {
    auto model = Relu<96, 16>() >> clone(residual(expand_window<1>() >> Maxout<96, 96>(MaxoutOptions{.nP = 3})), 2) >>
                 Softmax<3>();
    model.initialize();
    Floats2d X({4, 16});
    Optimizer opt = Adam(0.001);
    auto [Y, backprop] = model.begin_update(X);
    backprop(Y);
    model.finish_update(opt);
    return int(model.predict(X).size());
}
