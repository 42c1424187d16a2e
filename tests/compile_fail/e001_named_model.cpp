// expect: tenon-E001
// expect-text: Mlp
// A named model type used as a layer in a bigger chain: the diagnostic calls it Mlp.
#include <tenon/tenon.hpp>
using namespace tenon;

inline auto mlp_layers() { return Relu<512, 784>({.dropout = 0.2}) >> Relu<512>({.dropout = 0.2}) >> Softmax<10>(); }
struct Mlp : decltype(mlp_layers()) {
    Mlp() : Chain(mlp_layers()) {}
};

auto model = Mlp() >> Relu<5, 11>();  // Mlp's output width is 10
