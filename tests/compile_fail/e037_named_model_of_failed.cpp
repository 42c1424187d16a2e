// expect: tenon-E037
// A named model type (docs/diagnostics.md, "Naming a model type") derived from a chain whose with_array
// names no kind: the one error; the type's constructor naming its base Chain, and the program
// using it, add none.
#include <tenon/tenon.hpp>
using namespace tenon;
inline auto tagger_layers() { return list2ragged() >> with_array(Relu<16, 8>() >> Softmax<4>()) >> ragged2list(); }
struct Tagger : decltype(tagger_layers()) {
    Tagger() : Chain(tagger_layers()) {}
};
int main() {
    Tagger model;
    List<Floats2d> docs{Floats2d({3, 8}), Floats2d({2, 8})};
    List<Ints1d> tags{Ints1d({3}), Ints1d({2})};
    model.initialize();
    Optimizer opt = Adam(0.001);
    auto [Yh, backprop] = model.begin_update(docs);
    backprop(SequenceCategoricalCrossentropy().get_grad(Yh, tags));
    model.finish_update(opt);
    List<Floats2d> P = model.predict(docs);
    model.to_disk("tagger.tenon");
    return int(P.size());
}
