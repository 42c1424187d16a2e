// expect: tenon-E001
// expect-text: produces_width<192>
// The width flows through with_ragged and with_array into the chain inside: expand_window(1)
// of 64 gives 192, which the Maxout<64, 64, 3> after it does not take.
#include <tenon/tenon.hpp>
using namespace tenon;

int main() {
    auto model = with_array<List<Floats2d>>(Relu<64, 8>()) >>
                 with_ragged<List<Floats2d>>(with_array<Ragged>(expand_window<1>() >> Maxout<64, 64, 3>()));
    List<Floats2d> docs{Floats2d({5, 8})};
    model.initialize(docs);
    Optimizer opt = Adam(0.001);
    auto [Y, backprop] = model.begin_update(docs);
    backprop(Y);
    model.finish_update(opt);
    return int(model.predict(docs).size());
}
