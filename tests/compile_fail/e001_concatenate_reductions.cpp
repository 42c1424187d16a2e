// expect: tenon-E001
// A textcat head: (reduce_max() | reduce_first()) of 8 columns is 16; the Softmax says nI 8.
// expect-text: produces_width<16>
#include <tenon/tenon.hpp>
using namespace tenon;

int main() {
    auto model = list2ragged() >> with_array<Ragged>(Maxout<8, 4>()) >> (reduce_max() | reduce_first()) >> Softmax<2, 8>();
    List<Floats2d> docs{Floats2d({3, 4}), Floats2d({2, 4})};
    Floats2d Y = to_categorical(Ints1d({2}, {0, 1}), 2);
    model.initialize(docs, Y);
    Optimizer opt = Adam(0.001);
    auto [Yh, backprop] = model.begin_update(docs);
    backprop(CategoricalCrossentropy().get_grad(Yh, Y));
    model.finish_update(opt);
    Floats2d P = model.predict(docs);
    return int(P.shape(0));
}
