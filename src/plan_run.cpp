// The running of a plan for every pair of data types a model's own calls may run one for
// (lower/run.hpp), compiled once here rather than in each file that uses a model.
#include "tenon/lower/run.hpp"

namespace tenon::lowering {

CallState::CallState() = default;
CallState::~CallState() = default;
CallState::CallState(CallState&&) noexcept = default;
CallState& CallState::operator=(CallState&&) noexcept = default;

#define TENON_INSTANTIATE_RUNNER(I, O) template struct Runner<I, O>;
TENON_PLAN_RUNNERS(TENON_INSTANTIATE_RUNNER)
#undef TENON_INSTANTIATE_RUNNER

}  // namespace tenon::lowering
