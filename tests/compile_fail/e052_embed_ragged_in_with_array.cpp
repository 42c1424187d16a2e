// expect: tenon-E052
// with_array(Embed<32, BasicRagged<Ints2d>>): E052 only, not with_array's E030 as well.
#include <tenon/tenon.hpp>
using namespace tenon;

int main() {
    auto model = list2ragged<Ints2d>() >> with_array<BasicRagged<Ints2d>>(Embed<32, BasicRagged<Ints2d>>(1000)) >> reduce_mean() >> Softmax<3>();
    List<Ints2d> docs;
    for (std::size_t n : {3, 5, 2, 4}) docs.push_back(Ints2d({n, 4}));
    Floats2d Y = to_categorical(Ints1d({4}, {0, 1, 2, 1}), 3);
    model.initialize(docs, Y);
    Optimizer opt = Adam(0.001);
    CategoricalCrossentropy loss;
    for (int epoch = 0; epoch < 2; ++epoch) {
        auto [Yh, backprop] = model.begin_update(docs);
        backprop(loss.get_grad(Yh, Y));
        model.finish_update(opt);
    }
    Floats2d P = model.predict(docs);
    return int(P.shape(0));
}
