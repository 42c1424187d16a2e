// expect: tenon-E055
// model.from_bytes("model.tenon"): a file's path given to from_bytes, then the model served.
#include <tenon/tenon.hpp>
using namespace tenon;

auto make_model() { return Relu<64>({.dropout = 0.2}) >> Relu<64>() >> Softmax<3>(); }

int main() {
    Floats2d X({100, 20});
    Floats2d Y = to_categorical(Ints1d({100}), 3);
    auto model = make_model();
    model.initialize(X, Y);
    model.to_disk("model.tenon");
    auto served = make_model();
    served.from_bytes("model.tenon");
    Floats2d P = served.predict(X);
    return int(P.shape(0));
}
