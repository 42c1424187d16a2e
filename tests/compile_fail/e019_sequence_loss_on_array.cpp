// expect: tenon-E019
// expect-text: SequenceCategoricalCrossentropy
// The other way round: one Floats2d of guesses given to the loss over documents.
#include <tenon/tenon.hpp>
using namespace tenon;

int main() {
    auto model = Relu<32, 16>() >> Softmax<4>();
    model.initialize();
    Floats2d X({8, 16});
    Ints1d labels({8});
    Optimizer opt = Adam(0.001);
    auto [Yh, backprop] = model.begin_update(X);
    auto [dY, loss] = SequenceCategoricalCrossentropy()(Yh, labels);
    backprop(dY);
    model.finish_update(opt);
}
