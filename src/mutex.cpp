// detail::Mutex (tenon/util/mutex.hpp): a std::mutex in the class's storage.
#include "tenon/util/mutex.hpp"

#include <mutex>
#include <new>

namespace tenon::detail {

namespace {
std::mutex& held(unsigned char* storage) noexcept { return *std::launder(reinterpret_cast<std::mutex*>(storage)); }
}  // namespace

static_assert(sizeof(std::mutex) <= 48 && alignof(std::mutex) <= 8, "detail::Mutex's storage holds a std::mutex");

Mutex::Mutex() noexcept { ::new (static_cast<void*>(storage_)) std::mutex(); }
Mutex::~Mutex() { held(storage_).~mutex(); }
void Mutex::lock() { held(storage_).lock(); }
void Mutex::unlock() noexcept { held(storage_).unlock(); }

}  // namespace tenon::detail
