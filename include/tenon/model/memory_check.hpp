// The entry points' check of where a model's input lives (docs/cuda.md, "Moving models and
// data"): the float data of the input given to predict / begin_update / operator() of the model
// called must be in its backend's memory (Ops::memory()). Data crosses between host and device
// only where the user asks (to_device, to_host: model/device.hpp); a host array given to a model
// on the device (or the reverse) is tenon-E342, naming the model, the call, what was expected
// and what was found. Integer inputs (ids, keys, lengths) are read where the layers read them
// and are not checked.
#pragma once
#include <string>

#include "tenon/backend/ops.hpp"
#include "tenon/model/finite.hpp"
#include "tenon/types/device_memory.hpp"

namespace tenon::detail {

// tenon-E342 (src/device_memory.cpp).
[[noreturn]] void throw_input_memory(const std::string& who, const char* call, const char* what, long item,
                                     Memory found, const Ops& ops);

template <class X>
void check_input_memory(const Ops& ops, const std::string& who, const char* call, const X& x) {
    const Memory want = ops.memory();
    const auto one = [&](const void* p, const char* what, long item) {
        if (p && memory_of(p) != want) [[unlikely]]
            throw_input_memory(who, call, what, item, memory_of(p), ops);
    };
    if constexpr (requires { typename X::data_type; x.data(); }) {
        if constexpr (float_array<std::remove_cvref_t<decltype(x.data())>>) one(x.data().data(), "data", -1);
    } else if constexpr (float_array<X>) {
        one(x.data(), "", -1);
    } else if constexpr (float_list<X>) {
        for (std::size_t i = 0; i < x.size(); ++i) one(x[i].data(), "", static_cast<long>(i));
    }
}

}  // namespace tenon::detail
