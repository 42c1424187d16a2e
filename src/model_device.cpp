// Moving models between host and device memory (tenon/model/device.hpp, docs/cuda.md "Moving
// models and data"), and the entry points' error for an input in the wrong memory (tenon-E342).
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "tenon/model/device.hpp"
#include "tenon/model/memory_check.hpp"
#include "tenon/optim/optimizer.hpp"

namespace tenon {

namespace detail {
struct MemoryMove {
    static void move(Node& model, const Ops& ops, Optimizer* opt) {
        const Memory m = ops.memory();
        // Every copy first, then the swap: an allocation that fails (tenon-E341) leaves the
        // model as it was. (A node reached twice, a shared layer, moves once.)
        std::vector<std::pair<Floats1d*, Floats1d>> moved;
        std::set<const Node*> seen;
        for (Node* n : model.walk()) {
            if (!seen.insert(n).second) continue;
            for (auto& p : n->params_)
                for (Floats1d* a : {&p.value, &p.grad})
                    if (a->memory() != m) moved.emplace_back(a, to_memory(*a, m));
        }
        if (opt) opt->move_state(model, m);
        for (auto& [where, a] : moved) *where = std::move(a);
        for (const Node* n : seen) {
            for (auto& p : const_cast<Node*>(n)->params_) p.stamp.renew();  // values in new memory
            const_cast<Node*>(n)->life_changed();  // the old arrays are gone
        }
        model.set_ops(ops);
        // A plan held by the model holds no memory (its parameters are looked up at each call,
        // its workspace is made per call in the model's memory), but it checks the model again.
        layout_changed();
    }
};

void move_model(Node& model, const Ops& ops, Optimizer* opt) { MemoryMove::move(model, ops, opt); }

const Ops& default_device_ops() {
    if (current_ops().memory() == Memory::device) return current_ops();
    if (const void* ops = device_ops_hint()) return *static_cast<const Ops*>(ops);
    throw Error("to_gpu: no device backend has been started in this program: link libtenon_cuda and use "
                "to_gpu(model, cuda_ops()) (or libtenon_device_host's device_host_ops(), the device backend built "
                "as host code)",
                "tenon-E340");
}

const Ops& require_device_ops(const Ops& ops) {
    if (ops.memory() != Memory::device)
        throw Error(std::string("to_gpu: the backend '") + ops.name() +
                        "' keeps its arrays in host memory; give a device backend (cuda_ops(), device_host_ops()) "
                        "or use to_cpu(model)",
                    "tenon-E344");
    return ops;
}

void throw_input_memory(const std::string& who, const char* call, const char* what, long item, Memory found,
                        const Ops& ops) {
    std::string where = "the input";
    if (*what) where += std::string("'s ") + what;
    if (item >= 0) where += "'s array " + std::to_string(item);
    const bool to_dev = ops.memory() == Memory::device;
    throw Error(who + ": " + call + ": " + where + " is in " + memory_name(found) + " memory, but the model runs on '" +
                    ops.name() + "' and takes " + memory_name(ops.memory()) +
                    " memory: data crosses only where you ask, with " +
                    (to_dev ? "to_device(X)" : "to_host(X)") + " (or move the model: " +
                    (to_dev ? "to_cpu(model)" : "to_gpu(model)") + ")",
                "tenon-E342");
}
}  // namespace detail

Memory model_memory(const Node& model) {
    for (const Node* n : model.walk())
        for (const auto& name : n->param_names()) {
            const CParamView v = n->get_param(name);
            if (v.data) return detail::memory_of(v.data);
        }
    return model.ops().memory();
}

}  // namespace tenon
