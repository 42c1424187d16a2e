// The running of a plan for every pair of data types a model's own calls may run one for
// (lower/run.hpp), compiled once here rather than in each file that uses a model.
#include <cstring>

#include "tenon/lower/run.hpp"

namespace tenon::lowering {

// A record: word 0 its size in bytes, word 1 the payload's offset in it, word 2 the payload's
// destructor (null until it is constructed); the payload at that offset.
namespace {
using DropBox = void (*)(void*) noexcept;
}  // namespace

LayerBoxes::~LayerBoxes() { clear(); }
LayerBoxes::LayerBoxes(LayerBoxes&& o) noexcept : area_(std::move(o.area_)) {}  // (o's is empty)
LayerBoxes& LayerBoxes::operator=(LayerBoxes&& o) noexcept {
    if (this != &o) {
        clear();
        area_ = std::move(o.area_);
    }
    return *this;
}

void LayerBoxes::clear() noexcept {
    char* base = data();
    const std::size_t bytes = area_.size() * sizeof(std::uint64_t);
    for (std::size_t off = 0; base && off < bytes;) {
        std::uint64_t* h = reinterpret_cast<std::uint64_t*>(base + off);
        if (h[0] == 0) break;  // (a record is never empty: the rest was not written)
        if (h[2]) {
            DropBox drop = nullptr;
            std::memcpy(&drop, &h[2], sizeof drop);
            h[2] = 0;
            drop(base + off + h[1]);
        }
        off += h[0];
    }
}

char* LayerBoxes::make(const PlanData& p) {
    clear();
    if (!p.box_bytes) return nullptr;
    const std::size_t words = p.box_bytes / sizeof(std::uint64_t);
    if (area_.size() != words) area_ = Array<std::uint64_t, dyn>({words}, Memory::host);  // (zeros)
    else std::memset(area_.data(), 0, p.box_bytes);
    char* base = data();
    for (const Stage& s : p.stages) {
        if (s.box == npos) continue;
        std::uint64_t* h = reinterpret_cast<std::uint64_t*>(base + s.box);
        h[0] = s.box_bytes;
        h[1] = s.box_payload;
        s.fns.make_box(base + s.box + s.box_payload);
        const DropBox drop = s.fns.drop_box;
        std::memcpy(&h[2], &drop, sizeof drop);
    }
    return base;
}

CallState::CallState() = default;
CallState::~CallState() = default;
CallState::CallState(CallState&&) noexcept = default;
CallState& CallState::operator=(CallState&&) noexcept = default;

#define TENON_INSTANTIATE_RUNNER(I, O) template struct Runner<I, O>;
TENON_PLAN_RUNNERS(TENON_INSTANTIATE_RUNNER)
#undef TENON_INSTANTIATE_RUNNER

}  // namespace tenon::lowering
