// expect: tenon-E056
// expect-text: LSTM
// LSTM(32, 16) as in Thinc: tenon's LSTM takes its options first (LSTM<>({}, 32, 16)) or the
// widths as template arguments; then a tagger's training loop.
#include <tenon/tenon.hpp>
using namespace tenon;

int main() {
    List<Floats2d> docs{Floats2d({5, 16}), Floats2d({3, 16})};
    List<Ints1d> tags{Ints1d({5}), Ints1d({3})};
    auto model = with_padded<List<Floats2d>>(LSTM<>(32, 16)) >> with_array<List<Floats2d>>(Softmax<7>());
    model.initialize(docs);
    Optimizer opt = Adam(0.001);
    SequenceCategoricalCrossentropy loss;
    for (int epoch = 0; epoch < 10; ++epoch) {
        auto [Yh, backprop] = model.begin_update(docs);
        backprop(loss.get_grad(Yh, tags));
        model.finish_update(opt);
    }
    List<Floats2d> P = model.predict(docs);
    return int(P.size());
}
