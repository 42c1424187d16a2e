// expect: tenon-E008
// One example as a Floats1d: a model takes a batch (Floats2d, one row per example).
#include <tenon/tenon.hpp>
using namespace tenon;

int main() {
    auto model = Relu<10, 784>();
    model.initialize();
    Floats1d x({784});
    auto y = model.predict(x);
}
