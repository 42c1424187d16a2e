// expect: tenon-E056
// Thinc's BiLSTM(nO, nI): the factory function takes the same E056 as LSTM's constructor.
#include <tenon/tenon.hpp>
using namespace tenon;

int main() {
    auto model = list2padded() >> BiLSTM<>(16, 8) >> padded2list() >> with_array<List<Floats2d>>(Softmax<5>());
    List<Floats2d> docs{Floats2d({3, 8}), Floats2d({5, 8}), Floats2d({2, 8})};
    List<Ints1d> tags{Ints1d({3}), Ints1d({5}), Ints1d({2})};
    model.initialize(docs);
    Optimizer opt = Adam(0.001);
    SequenceCategoricalCrossentropy loss;
    auto [Yh, backprop] = model.begin_update(docs);
    backprop(loss.get_grad(Yh, tags));
    model.finish_update(opt);
    List<Floats2d> P = model.predict(docs);
    return int(P.size());
}
