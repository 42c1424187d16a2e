// expect: tenon-E014
// multibatch over a List of documents (it batches arrays; documents go through minibatch of
// items): the one error, and the training loop over its batches adds none (its batches are
// failed models, which begin_update and the loss take silently).
#include <tenon/tenon.hpp>
using namespace tenon;

int main() {
    auto model = list2ragged() >> with_array<Ragged>(Relu<8, 4>()) >> reduce_mean() >> Softmax<3>();
    List<Floats2d> docs{Floats2d({3, 4}), Floats2d({2, 4})};
    Ints1d labels({2}, {0, 1});
    model.initialize();
    Optimizer opt = Adam(0.001);
    for (auto [Xb, Yb] : multibatch(1, docs, labels)) {
        auto [Yh, backprop] = model.begin_update(Xb);
        backprop(CategoricalCrossentropy().get_grad(Yh, Yb));
        model.finish_update(opt);
    }
    Floats2d P = model.predict(docs);
    return int(P.shape(0));
}
