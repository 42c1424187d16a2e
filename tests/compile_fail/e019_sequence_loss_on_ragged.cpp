// expect: tenon-E019
// expect-text: SequenceCategoricalCrossentropy
// A tagger whose output is still a Ragged (ragged2list left out) given to the loss over
// documents: the one error; the failed loss's gradient is taken by the Ragged model's backprop
// without a second one (clang used to add tenon-E011 there).
#include <tenon/tenon.hpp>
using namespace tenon;

int main() {
    auto model = list2ragged() >> with_array<Ragged>(Relu<16, 4>() >> Softmax<5>());
    List<Floats2d> docs{Floats2d({3, 4}), Floats2d({2, 4})};
    List<Ints1d> tags{Ints1d({3}), Ints1d({2})};
    model.initialize(docs);
    Optimizer opt = Adam(0.001);
    auto [Yh, backprop] = model.begin_update(docs);
    backprop(SequenceCategoricalCrossentropy().get_grad(Yh, tags));
    model.finish_update(opt);
    auto P = model.predict(docs);
    return int(P.size());
}
