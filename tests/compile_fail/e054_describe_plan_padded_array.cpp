// expect: tenon-E054
// expect-text: predict
// describe_plan() of a model with with_array over a Padded (the plan places no layer on Padded
// data but an LSTM's stage), printed: the one error.
#include <tenon/tenon.hpp>
#include <iostream>
using namespace tenon;
int main() {
    auto model = list2padded() >> LSTM<8, 4>() >> with_array<Padded>(Softmax<3>()) >> padded2list();
    std::cout << describe_plan(model, 16) << "\n";
    std::string s = describe_plan(model);
    return static_cast<int>(s.size());
}
