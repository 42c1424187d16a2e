// expect: tenon-E054
// expect-text: predict
// describe_plan() of a model with ParametricAttention (no planned stage yet), printed: the one error.
#include <tenon/tenon.hpp>
#include <iostream>
using namespace tenon;
int main() {
    auto model = list2ragged() >> ParametricAttention<8>() >> reduce_sum() >> Softmax<3>();
    std::cout << describe_plan(model, 16) << "\n";
    std::string s = describe_plan(model);
    return static_cast<int>(s.size());
}
