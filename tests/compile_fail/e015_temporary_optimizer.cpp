// expect: tenon-E015
// A temporary optimizer would lose Adam's moments after every step.
#include <tenon/tenon.hpp>
using namespace tenon;

int main() {
    auto model = Relu<10, 784>();
    model.initialize();
    model.finish_update(Adam(0.001));
}
