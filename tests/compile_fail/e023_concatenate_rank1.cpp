// expect: tenon-E023
// expect-text: combine_output
// CauchySimilarity outputs Floats1d: one value per row, no feature axis to join along.
#include <tenon/tenon.hpp>
using namespace tenon;

auto model = concatenate(CauchySimilarity<4>(), CauchySimilarity<4>());
