// The engine: a model's own predict / begin_update run through its lowered plan (docs/lowering.md,
// "The default path"). This header holds what a combinator needs before the plan's code is
// known: the per-model cache of plans (EngineSlot), the type-erased plan backprop a model's
// Backprop carries (EngineBackprop), and the declarations of the two entry functions, which
// lower.hpp defines (chain.hpp includes it at its end).
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "tenon/model/node.hpp"
#include "tenon/types/array.hpp"

namespace tenon::lowering {

// A model's plans. The current one is read with one atomic load per call; a plan made
// earlier stays alive (kept) until the model is destroyed, so a call or a backprop still
// running on it when another thread replaced it is safe. A copy or a move of the model
// starts with an empty slot (a plan points at the model it was made from).
class EngineSlot {
public:
    EngineSlot() = default;
    ~EngineSlot();  // (out of line, src/plan.cpp: not compiled again in each model's destructor)
    // (A copy keeps the model's serving setting, frozen, not its plans.)
    EngineSlot(const EngineSlot& o) noexcept : frozen(o.frozen.load(std::memory_order_relaxed)) {}
    EngineSlot(EngineSlot&& o) noexcept : frozen(o.frozen.load(std::memory_order_relaxed)) {}
    EngineSlot& operator=(const EngineSlot& o) noexcept {
        frozen.store(o.frozen.load(std::memory_order_relaxed), std::memory_order_relaxed);
        reset();
        return *this;
    }
    EngineSlot& operator=(EngineSlot&& o) noexcept { return *this = static_cast<const EngineSlot&>(o); }
    // The model's contents were replaced: the next call makes a new plan.
    void reset() noexcept { current.store(nullptr, std::memory_order_release); }
    // Whether the model's last own call ran its plan (uses_plan). Stored only when it changes:
    // serving threads that all run the plan only read it (no cache line bouncing between them).
    void note_ran(bool r) noexcept {
        if (ran.load(std::memory_order_relaxed) != r) ran.store(r, std::memory_order_relaxed);
    }
    std::atomic<bool> ran{false};

    std::atomic<const void*> current{nullptr};
    // The layout epoch at which the model was found not to need a plan (no stage to fuse) or
    // not to allow one: no new attempt until the layout changes. 0: none.
    std::atomic<std::uint64_t> none_at{0};
    tenon::detail::Mutex lock;
    std::vector<std::shared_ptr<const void>> kept;
    // model.freeze_weights(): every plan the engine makes (or holds) keeps its weights packed
    // (Plan::freeze_weights, docs/lowering.md "Frozen weights").
    std::atomic<bool> frozen{false};
    // True while the model lives; its destructor clears it. A backprop of one of its plans holds
    // it and checks it first, so that one called after the model went (an AnyModel given
    // another model, a model destroyed) refuses (tenon-E172) rather than read freed plans and
    // weights. Made with the first plan kept (engine_plan, under the lock).
    std::shared_ptr<std::atomic<bool>> alive;
};
// What an output of no rows is made of (an empty batch's): its sequences (dyn for an array),
// its rows, its width (dyn where it has none of its own: a List). Its gradient must be the
// same, else tenon-E111 (throw_empty_gradient, src/plan.cpp).
struct EmptyLayout {
    std::size_t entries = dyn, rows = 0, width = dyn;
    bool operator==(const EmptyLayout&) const = default;
};
[[noreturn]] void throw_empty_gradient(const std::string& model, const EmptyLayout& want, const EmptyLayout& found);
// The error of a plan's backprop whose model no longer exists (src/plan.cpp).
[[noreturn]] void throw_model_gone();
// The error of a held plan (lower()) whose model was destroyed or moved (src/plan.cpp).
[[noreturn]] void throw_plan_model_gone(const std::string& model_name);

// The plan's Backprop inside a model's Backprop, type-erased (the plan's type depends on the
// model's, whose Backprop holds this). Its storage comes from tenon's block cache (no heap
// allocation after warm-up); copies share it, as a backprop's state is read-only once made.
template <class In, class OutView>
class EngineBackprop {
public:
    EngineBackprop() = default;
    EngineBackprop(const EngineBackprop& o) noexcept : box_(o.box_) {
        if (box_) box_->refs.fetch_add(1, std::memory_order_relaxed);
    }
    EngineBackprop(EngineBackprop&& o) noexcept : box_(std::exchange(o.box_, nullptr)) {}
    EngineBackprop& operator=(EngineBackprop o) noexcept {
        std::swap(box_, o.box_);
        return *this;
    }
    ~EngineBackprop() { release(); }

    explicit operator bool() const noexcept { return box_ != nullptr; }
    In operator()(OutView dY) const {
        check_alive();
        return box_->call(box_->object(), dY);
    }
    void params_only(OutView dY) const {
        check_alive();
        box_->params_only(box_->object(), dY);
    }
    // The model's liveness (EngineSlot::alive), checked before the plan is touched.
    void watch(std::shared_ptr<const std::atomic<bool>> alive) noexcept { box_->alive = std::move(alive); }

    // Makes the box for a T (the plan's Backprop) and returns it to be filled.
    template <class T>
    T& emplace() {
        release();
        std::size_t capacity = 0;
        void* mem = tenon::detail::array_alloc(bytes<T>(), capacity);
        box_ = ::new (mem) Box{};
        box_->bytes = capacity;
        box_->destroy = [](void* p) noexcept { static_cast<T*>(p)->~T(); };
        box_->call = [](const void* p, OutView dY) -> In { return (*static_cast<const T*>(p))(dY); };
        box_->params_only = [](const void* p, OutView dY) { static_cast<const T*>(p)->params_only(dY); };
        return *::new (box_->object()) T{};
    }

private:
    struct Box {
        std::atomic<int> refs{1};
        std::size_t bytes = 0;
        std::shared_ptr<const std::atomic<bool>> alive;  // null: nothing to check (watch)
        void (*destroy)(void*) noexcept = nullptr;
        In (*call)(const void*, OutView) = nullptr;
        void (*params_only)(const void*, OutView) = nullptr;
        void* object() noexcept { return reinterpret_cast<char*>(this) + header; }
        const void* object() const noexcept { return reinterpret_cast<const char*>(this) + header; }
    };
    static constexpr std::size_t header = (sizeof(Box) + 63) / 64 * 64;
    template <class T>
    static constexpr std::size_t bytes() {
        static_assert(alignof(T) <= 64);
        return header + sizeof(T);
    }
    void check_alive() const {
        if (box_->alive && !box_->alive->load(std::memory_order_acquire)) throw_model_gone();
    }
    void release() noexcept {
        if (!box_) return;
        if (box_->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) {
            box_->destroy(box_->object());
            const std::size_t n = box_->bytes;
            box_->~Box();
            tenon::detail::array_free(box_, n);
        }
        box_ = nullptr;
    }
    Box* box_ = nullptr;
};

// Defined in lower.hpp. Each returns false when the model does not run through a plan (a
// type the plan does not cover, nothing to fuse, an input the plan would refuse): the caller
// then runs its layers, which also give the usual errors.
template <class M>
bool engine_predict(const M& model, EngineSlot& slot, typename M::InView X, typename M::Out& Y);
template <class M>
bool engine_forward(M& model, EngineSlot& slot, typename M::InView X, typename M::Out& Y,
                    EngineBackprop<typename M::In, typename M::OutView>& bp, bool train = true);
// A training call on a batch of no sequences (an empty List, Ragged or Padded) to a model whose
// layers could not say its width (a layer after list2ragged): the model's output of no rows
// and a backprop that returns the empty input and adds nothing; false for any other input.
template <class M>
bool engine_empty_batch(const M& model, typename M::InView X, typename M::Out& Y,
                        EngineBackprop<typename M::In, typename M::OutView>& bp);
// A model that runs only its plan (lower.hpp: its type tells that the walk places every layer):
// its training call. Where the plan does not take the input, the layers' predict gives their
// error, and an input of no rows gives the output of no rows and a backprop that adds nothing.
template <class M>
struct plan_only;
template <class M>
void engine_train(M& model, EngineSlot& slot, typename M::InView X, bool is_train, typename M::Out& Y,
                  EngineBackprop<typename M::In, typename M::OutView>& bp);
// model.freeze_weights() / thaw_weights(): the slot's setting, applied to the current plan
// (made now when there is none); false when the model runs no plan. frozen_values: the held
// plan's (Plan::frozen_values), 0 without one.
template <class M>
bool engine_freeze(M& model, EngineSlot& slot, bool on);
template <class M>
std::size_t engine_frozen_values(const M& model, const EngineSlot& slot);

}  // namespace tenon::lowering
