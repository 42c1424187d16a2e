// expect: tenon-E015
#include <tenon/tenon.hpp>
using namespace tenon;

int main() {
    auto model = Relu<10, 784>();
    model.initialize();
    model.finish_update(0.001);
}
