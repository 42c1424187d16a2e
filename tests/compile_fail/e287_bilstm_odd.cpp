// expect: tenon-E287
// expect-text: even
// A BiLSTM whose static nO cannot be split between the two directions, then used as a user
// would: the one error, nothing after it.
#include <tenon/tenon.hpp>
using namespace tenon;

int main() {
    auto model = with_padded<List<Floats2d>>(BiLSTM<5, 3>());
    std::vector<Floats2d> docs;
    docs.push_back(Floats2d({4, 3}));
    const List<Floats2d> X(std::move(docs));
    model.initialize(X);
    Optimizer opt = Adam(0.001);
    auto [Y, backprop] = model.begin_update(X);
    backprop(Y);
    model.finish_update(opt);
    return static_cast<int>(model.predict(X).size());
}
