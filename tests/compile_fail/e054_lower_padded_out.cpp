// expect: tenon-E054
// expect-text: predict
// lower() on a model whose output is a Padded (the plan gives a List / Ragged of Floats2d or a
// Floats2d), then used: the one error.
#include <tenon/tenon.hpp>
using namespace tenon;

int main() {
    auto model = list2padded() >> BiLSTM<8, 4>();
    std::vector<Floats2d> docs;
    docs.push_back(Floats2d({4, 4}));
    const List<Floats2d> X(std::move(docs));
    model.initialize(X);
    auto plan = lower(model);
    const Padded P = plan.predict(X);
    return static_cast<int>(P.size());
}
