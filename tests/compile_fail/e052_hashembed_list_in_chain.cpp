// expect: tenon-E052
// HashEmbed<64, List<Ints2d>>: a List is no array of ids (E052); the chain and the training
// loop around the failed layer add nothing (failed_layer: no Model, a failed model).
#include <tenon/tenon.hpp>
using namespace tenon;

int main() {
    auto model = HashEmbed<64, List<Ints2d>>(1000) >> with_array<List<Floats2d>>(Softmax<5>());
    List<Ints2d> docs;
    for (std::size_t n : {3, 5, 2, 4}) docs.push_back(Ints2d({n, 4}));
    List<Ints1d> tags;
    for (auto& d : docs) tags.push_back(Ints1d({d.shape(0)}));
    model.initialize(docs);
    Optimizer opt = Adam(0.001);
    SequenceCategoricalCrossentropy loss;
    for (const List<Ints2d>& batch : minibatch(2, docs)) {
        auto [Yh, backprop] = model.begin_update(batch);
        List<Ints1d> truths(tags.begin(), tags.begin() + std::ptrdiff_t(batch.size()));
        backprop(loss.get_grad(Yh, truths));
        model.finish_update(opt);
    }
    List<Floats2d> P = model.predict(docs);
    return int(P.size());
}
