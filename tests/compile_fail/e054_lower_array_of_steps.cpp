// expect: tenon-E054
// expect-text: predict
// lower() on a model that takes and gives an array of steps (T, B, n) (the plan takes a
// Floats2d, a List / Ragged of arrays or ids, or a Padded), then used: the one error.
#include <tenon/tenon.hpp>
using namespace tenon;

int main() {
    auto model = with_padded<Floats3d>(BiLSTM<8, 4>());
    const Floats3d X({3, 2, 4});
    model.initialize(X);
    auto plan = lower(model);
    const Floats3d P = plan.predict(X);
    return static_cast<int>(P.size());
}
