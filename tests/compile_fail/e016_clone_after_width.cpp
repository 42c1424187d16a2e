// expect: tenon-E016
// expect-text: clone_widths
// The 32 columns that reach the clone make its Relu<64> a Relu<64, 32>: its copies cannot be
// chained. Said where the chain is made, not deep in the computation of its type.
#include <tenon/tenon.hpp>
using namespace tenon;

auto model = Relu<32, 16>() >> clone(Relu<64>(), 3) >> Softmax<5>();
