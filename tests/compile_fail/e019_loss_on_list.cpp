// expect: tenon-E019
// expect-text: CategoricalCrossentropy
// A tagger's training loop that gives the model's List of documents to CategoricalCrossentropy
// (one Floats2d of guesses): SequenceCategoricalCrossentropy takes the List. The one error, and
// nothing after it from the rest of the loop.
#include <tenon/tenon.hpp>
using namespace tenon;

int main() {
    auto model = list2ragged<Ints2d>() >> with_array<BasicRagged<Ints2d>>(HashEmbed<64>(1000)) >>
                 with_array<Ragged>(Relu<64>() >> Softmax<5>()) >> ragged2list();
    List<Ints2d> docs;
    List<Ints1d> tags;
    model.initialize(docs);
    Optimizer opt = Adam(0.001);
    const CategoricalCrossentropy loss;
    for (int epoch = 0; epoch < 3; ++epoch) {
        auto [Yh, backprop] = model.begin_update(docs);
        auto [dY, value] = loss(Yh, tags);
        backprop(dY);
        model.finish_update(opt);
    }
    List<Floats2d> P = model.predict(docs);
    return int(P.size());
}
