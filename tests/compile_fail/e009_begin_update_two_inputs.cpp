// expect: tenon-E009
// expect-text: given_arguments
// begin_update takes one input: a pair model's is a std::pair, not two arguments; the training
// step that follows adds nothing.
#include <tenon/tenon.hpp>
using namespace tenon;

int main() {
    auto model = siamese(Relu<4, 6>(), CauchySimilarity<4>());
    Floats2d A({3, 6}), B({3, 6});
    model.initialize();
    Optimizer opt = Adam(0.001);
    auto [s, backprop] = model.begin_update(A, B);
    backprop(s);
    model.finish_update(opt);
    return int(model.predict({A, B}).size());
}
