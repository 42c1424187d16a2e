// For a test's own layer that computes on the host: inside a device model's call, host code
// may not touch the device's memory (a GPU would fault; the strict device-host mode aborts,
// docs/cuda.md), so such a layer copies its values to the host, computes there and copies its
// results back, as a GPU run allows (detail::copy_bytes: the provider's copy on a device).
#pragma once
#include <cstddef>
#include <vector>

#include "tenon/tenon.hpp"

namespace tenon::testing {

// n floats at p (host or device memory) as a host vector.
inline std::vector<float> host_floats(const float* p, std::size_t n) {
    std::vector<float> v(n);
    if (n) detail::copy_bytes(v.data(), Memory::host, p, detail::memory_of(p), n * sizeof(float));
    return v;
}
// v's values written to p (host or device memory).
inline void store_floats(float* p, const std::vector<float>& v) {
    if (!v.empty()) detail::copy_bytes(p, detail::memory_of(p), v.data(), Memory::host, v.size() * sizeof(float));
}

}  // namespace tenon::testing
