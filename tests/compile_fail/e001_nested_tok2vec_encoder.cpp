// expect: tenon-E001
// expect-text: produces_width<288>
// A spaCy-like encoder over documents with the window's width left out of its Maxout: the
// embedding's static width (96) flows through with_array, the clone and the residual into
// the chain inside, where expand_window(1) makes it 288.
#include <tenon/tenon.hpp>
using namespace tenon;

int main() {
    auto model = list2ragged<Ints2d>() >> with_array<BasicRagged<Ints2d>>(HashEmbed<96>(1000)) >> ragged2list() >>
                 with_array<List<Floats2d>>(clone(residual(expand_window<1>() >> Maxout<96, 96, 3>()), 4)) >>
                 with_array<List<Floats2d>>(Softmax<17>());
    List<Ints2d> docs{Ints2d({5, 1})};
    model.initialize(docs);
    Optimizer opt = Adam(0.001);
    auto [Y, backprop] = model.begin_update(docs);
    backprop(Y);
    model.finish_update(opt);
    return int(model.predict(docs).size());
}
