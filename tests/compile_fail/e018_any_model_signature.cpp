// expect: tenon-E018
// expect-text: any_model_signature
// expect-text: given_type<tenon::check::signature<
// AnyModel<Floats2d, Floats2d> made from a model that takes Ragged (a reduction first).
#include <tenon/tenon.hpp>
using namespace tenon;

auto model = AnyModel<Floats2d, Floats2d>(reduce_mean() >> Softmax<3>());
