// expect: tenon-E008
// expect-text: Ragged
// A dense model takes Floats2d; a Ragged batch goes through with_array (or its .data()).
#include <tenon/tenon.hpp>
using namespace tenon;

int main() {
    auto model = Relu<8, 4>() >> Softmax<3>();
    model.initialize();
    Ragged X(Floats2d({3, 4}), {1, 2});
    auto Y = model.predict(X);
}
