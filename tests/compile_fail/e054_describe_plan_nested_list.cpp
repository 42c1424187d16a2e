// expect: tenon-E054
// expect-text: predict
// describe_plan() of a model that takes lists of lists (with_flatten's: the plan takes a
// Floats2d, a List / Ragged of arrays or ids, or a Padded), printed: the one error.
#include <tenon/tenon.hpp>
#include <iostream>
using namespace tenon;
int main() {
    auto model = with_flatten(with_array<List<Floats2d>>(Relu<4>()));
    std::cout << describe_plan(model, 16) << "\n";
    std::string s = describe_plan(model);
    return static_cast<int>(s.size());
}
