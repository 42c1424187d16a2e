// expect: tenon-E054
// expect-text: predict
// lower() on a model the plan has no stages for (an LSTM on Padded), then used: the one error.
#include <tenon/tenon.hpp>
using namespace tenon;

int main() {
    auto model = with_padded<List<Floats2d>>(BiLSTM<8, 4>()) >> with_array<List<Floats2d>>(Softmax<3>());
    std::vector<Floats2d> docs;
    docs.push_back(Floats2d({4, 4}));
    const List<Floats2d> X(std::move(docs));
    model.initialize(X);
    auto plan = lower(model);
    const List<Floats2d> P = plan.predict(X);
    return static_cast<int>(P.size());
}
