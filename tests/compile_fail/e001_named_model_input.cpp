// expect: tenon-E001
// expect-text: Mlp
// A named model type after a layer of the wrong width (Mlp's static nI is 784).
#include <tenon/tenon.hpp>
using namespace tenon;

inline auto mlp_layers() { return Relu<512, 784>() >> Relu<512>() >> Softmax<10>(); }
struct Mlp : decltype(mlp_layers()) {
    Mlp() : Chain(mlp_layers()) {}
};

auto model = chain(Relu<100, 50>(), Mlp());
