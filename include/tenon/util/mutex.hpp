// detail::Mutex: a std::mutex behind a small class of its own, with its calls out of line
// (src/mutex.cpp). <mutex> brings <chrono> (its timed locks) into every file that includes it,
// about a tenth of the parse of tenon.hpp; tenon's locks guard rare set-up work (making a plan,
// freezing weights, set_param against a frozen copy), never a hot path.
#pragma once
#include <cstddef>

namespace tenon::detail {

class Mutex {
public:
    Mutex() noexcept;
    ~Mutex();
    Mutex(const Mutex&) = delete;
    Mutex& operator=(const Mutex&) = delete;
    void lock();
    void unlock() noexcept;

private:
    // A std::mutex (src/mutex.cpp checks that it fits).
    alignas(8) unsigned char storage_[48];
};

// Holds a Mutex for its scope (std::lock_guard's job).
class LockGuard {
public:
    explicit LockGuard(Mutex& m) : m_(m) { m_.lock(); }
    ~LockGuard() { m_.unlock(); }
    LockGuard(const LockGuard&) = delete;
    LockGuard& operator=(const LockGuard&) = delete;

private:
    Mutex& m_;
};

}  // namespace tenon::detail
