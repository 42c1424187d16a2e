// expect: tenon-E002
// expect-text: layer<2>
// A text classifier with one data-type mistake (Relu after the embedding gets a Ragged, not a
// Floats2d: it belongs inside with_array), then used as a program uses it: the one error,
// and no false E008/E009 at the correct begin_update/predict calls after it.
#include <tenon/tenon.hpp>
using namespace tenon;

int main() {
    auto model = list2ragged<Ints2d>() >> with_array<BasicRagged<Ints2d>>(HashEmbed<64>(1000)) >>
                 Relu<64>() >> reduce_mean() >> Softmax<3>();
    List<Ints2d> docs;
    Floats2d Y({4, 3});
    model.initialize(docs, Y);
    Optimizer opt = Adam(0.001);
    for (int epoch = 0; epoch < 3; ++epoch) {
        auto [Yh, backprop] = model.begin_update(docs);
        Floats2d dY = CategoricalCrossentropy().get_grad(Yh, Y);
        backprop(dY);
        model.finish_update(opt);
    }
    Floats2d P = model.predict(docs);
    return int(P.shape(0));
}
