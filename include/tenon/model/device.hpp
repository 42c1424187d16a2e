// Moving models and data between the host and a device (docs/cuda.md, "Moving models and
// data"), with Thinc's names: to_gpu(model) / to_cpu(model) move a whole model (parameters,
// gradients, and with an optimizer given its state for the model: Adam's moments, the
// averages) and set its backend; to_device(X) / to_host(Y) copy data. Nothing crosses between
// host and device otherwise: a model's input must already be in its backend's memory
// (tenon-E342), and its predict's output is made there too (a device model returns device
// arrays; to_host(Y) to read them on a GPU).
#pragma once
#include <concepts>
#include <cstddef>
#include <type_traits>
#include <utility>
#include <vector>

#include "tenon/model/failed_model.hpp"
#include "tenon/model/node.hpp"
#include "tenon/types/device_memory.hpp"
#include "tenon/types/list.hpp"
#include "tenon/types/padded.hpp"
#include "tenon/types/ragged.hpp"

namespace tenon {

class Optimizer;

// --- Data: a copy in the given memory (a copy even where it is there already). Arrays and views
// (types/array.hpp), Lists of arrays, Ragged and Padded (their data; lengths and indices are
// copied as they are).
template <class A>
List<A> to_memory(const List<A>& xs, Memory m) {
    List<A> out;
    out.reserve(xs.size());
    for (const A& x : xs) out.push_back(to_memory(x, m));
    return out;
}
template <class D>
BasicRagged<D> to_memory(const BasicRagged<D>& r, Memory m) {
    return r.with_data(to_memory(r.data(), m));
}
template <class D>
BasicPadded<D> to_memory(const BasicPadded<D>& p, Memory m) {
    return p.with_data(to_memory(p.data(), m));
}
template <class X>
auto to_device(const X& x) -> decltype(to_memory(x, Memory::device)) {
    return to_memory(x, Memory::device);
}
template <class X>
auto to_host(const X& x) -> decltype(to_memory(x, Memory::host)) {
    return to_memory(x, Memory::host);
}

namespace detail {
// Moves every parameter and gradient of `model` (and `opt`'s state for them, when given) to
// `ops`'s memory, then sets `ops` as the backend of every node: all or nothing (a failed
// allocation, tenon-E341, leaves the model where it was). src/model_device.cpp.
void move_model(Node& model, const Ops& ops, Optimizer* opt);
// to_gpu's backend: the current one where it keeps device memory, else the device backend
// this program started (device_host_ops(), cuda_ops()); tenon-E340 when there is none.
const Ops& default_device_ops();
// tenon-E344: to_gpu(model, ops) with a backend that keeps host memory.
const Ops& require_device_ops(const Ops& ops);
}  // namespace detail

// --- Models (Thinc's model.to_gpu() / to_cpu()). Each returns the model.
template <class M>
    requires std::derived_from<M, Node>
M& to_gpu(M& model, const Ops& device_ops) {
    detail::move_model(model, detail::require_device_ops(device_ops), nullptr);
    return model;
}
template <class M>
    requires std::derived_from<M, Node>
M& to_gpu(M& model, Optimizer& opt, const Ops& device_ops) {
    detail::move_model(model, detail::require_device_ops(device_ops), &opt);
    return model;
}
template <class M>
    requires std::derived_from<M, Node>
M& to_gpu(M& model) {
    return to_gpu(model, detail::default_device_ops());
}
template <class M>
    requires std::derived_from<M, Node>
M& to_gpu(M& model, Optimizer& opt) {
    return to_gpu(model, opt, detail::default_device_ops());
}
template <class M>
    requires std::derived_from<M, Node>
M& to_cpu(M& model) {
    detail::move_model(model, cpu_ops(), nullptr);
    return model;
}
template <class M>
    requires std::derived_from<M, Node>
M& to_cpu(M& model, Optimizer& opt) {
    detail::move_model(model, cpu_ops(), &opt);
    return model;
}
// A failed model's error is already said (model/failed_model.hpp).
inline failed_model to_gpu(const failed_model&) noexcept { return {}; }
inline failed_model to_cpu(const failed_model&) noexcept { return {}; }

// Where a model's parameters live (every one in its backend's memory after to_gpu / to_cpu).
Memory model_memory(const Node& model);

}  // namespace tenon
