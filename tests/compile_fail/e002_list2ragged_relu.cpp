// expect: tenon-E002
// expect-text: Ragged
// list2ragged() >> Relu (the Relu belongs inside with_array), then initialised and used.
#include <tenon/tenon.hpp>
using namespace tenon;

int main() {
    auto model = list2ragged() >> Relu<8>() >> ragged2list();
    List<Floats2d> X;
    model.initialize(X);
    List<Floats2d> Y = model.predict(X);
    for (const auto& y : Y) (void)y.shape(0);
    return 0;
}
