// expect: tenon-E016
// expect-text: clone_widths
// The Relu's 3 columns reach the LSTMs (LSTM<4, 3>, with_nI), so the BiLSTM maps 3 to 8 and
// its copies cannot be chained: said where the chain is made (it was an error of initialize).
#include <tenon/tenon.hpp>
using namespace tenon;

auto model = with_array<List<Floats2d>>(Relu<3, 5>()) >> list2padded() >> clone(bidirectional(LSTM<4>()), 2) >>
             padded2list() >> with_array<List<Floats2d>>(Softmax<3>());
