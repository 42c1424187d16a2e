// The device backend's own tables in device memory (device_ops.hpp: device_upload,
// device_release), for the g++ side of each build (host_ops.cpp, cuda_glue.cpp).
#include "tenon/types/device_memory.hpp"

namespace tenon::TENON_DEVICE_NS {
void* device_upload(const void* host, std::size_t bytes, std::size_t& capacity) {
    void* p = detail::device_alloc(bytes, capacity);
    if (!p) detail::throw_device_alloc_failed(bytes, "(the optimizer's segment table)");
    try {
        detail::copy_bytes(p, Memory::device, host, Memory::host, bytes);
    } catch (...) {
        detail::device_free(p, capacity);
        throw;
    }
    return p;
}
void device_release(void* p, std::size_t capacity) noexcept { detail::device_free(p, capacity); }
}  // namespace tenon::TENON_DEVICE_NS
