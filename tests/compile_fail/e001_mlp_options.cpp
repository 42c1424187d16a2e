// expect: tenon-E001
// The MLP as in examples/mnist_mlp.cpp (dropout options), every width static, the last wrong.
#include <tenon/tenon.hpp>
using namespace tenon;

auto model = Relu<512, 784>({.dropout = 0.2}) >> Relu<512, 512>({.dropout = 0.2}) >> Softmax<10, 784>();
