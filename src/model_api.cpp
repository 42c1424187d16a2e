// The rest of Thinc's Model API: copy's ref remapping, replace_node, remove_node,
// get_gradients, use_params, set_dropout_rate, and the node path of run-time errors.
#include <algorithm>
#include <cstring>
#include <unordered_map>

#include "tenon/io/state.hpp"
#include "tenon/model/api.hpp"
#include "tenon/optim/optimizer.hpp"

namespace tenon {

namespace detail {
struct ModelApi {
    static void renew_id(Node& n);
    static std::string width_difference(const Node& root, const Node& a, const Node& b);
};
}  // namespace detail

namespace {
std::uint64_t fresh_id() {
    // A copy is a new node: the copy constructor draws the next id from Node's counter.
    struct Probe : Node {
        Probe() : Node("", {}, {}) {}
    };
    return Probe().id();
}

template <class N>
std::unordered_map<const Node*, std::size_t> index_of(const std::vector<N*>& nodes) {
    std::unordered_map<const Node*, std::size_t> out;
    for (std::size_t i = 0; i < nodes.size(); ++i) out.emplace(nodes[i], i);
    return out;
}

// Every ref of `nodes[i]` whose target is in `from_index` now points at to[that index].
void remap(const std::vector<Node*>& owners, const std::unordered_map<const Node*, std::size_t>& from_index,
           const std::vector<Node*>& to) {
    for (Node* n : owners)
        for (const auto& name : n->ref_names()) {
            if (!n->has_ref(name)) continue;
            auto it = from_index.find(&n->get_ref(name));
            if (it != from_index.end()) n->set_ref(name, to[it->second]);
        }
}
}  // namespace

void detail::ModelApi::renew_id(Node& n) { n.id_ = fresh_id(); }

// Two trees of the same names whose types differ in a width the type fixes (Relu<4, 4> in a
// clone after a Relu<4>, against a Relu<4> written alone): the first such width, said so the
// user can write the replacement's type. "" when no static width differs.
std::string detail::ModelApi::width_difference(const Node& root, const Node& a, const Node& b) {
    const auto na = a.walk();
    const auto nb = b.walk();
    if (na.size() != nb.size()) return "";
    const auto shown = [](std::size_t v) { return v == dyn ? std::string("dyn") : std::to_string(v); };
    for (std::size_t i = 0; i < na.size(); ++i) {
        if (na[i]->name_ != nb[i]->name_ || na[i]->dims_.size() != nb[i]->dims_.size()) return "";
        for (std::size_t d = 0; d < na[i]->dims_.size(); ++d) {
            const auto& x = na[i]->dims_[d];
            const auto& y = nb[i]->dims_[d];
            if (x.name != y.name) return "";
            if (x.fixed != y.fixed)
                return "; the types differ in a width the type fixes: " + node_path(root, *na[i]) + " has " +
                       x.name + " " + shown(x.fixed) + " in its type, the replacement's '" + nb[i]->name_ +
                       "' has " + shown(y.fixed) + " (widths flow into a combinator from the layer before " +
                       "it: give the replacement's layer the same static widths)";
        }
    }
    return "";
}

void detail::remap_refs(const Node& from, Node& to) {
    const auto a = from.walk();
    const auto b = to.walk();
    if (a.size() != b.size())
        throw Error("copy: the copy has " + std::to_string(b.size()) + " nodes but the model has " +
                        std::to_string(a.size()),
                    "tenon-E233");
    remap(b, index_of(a), b);
}

bool Node::replace_node_as(Node& old, const Node& replacement, const std::type_info& as,
                           void (*assign)(Node&, const Node&)) {
    const auto nodes = walk();
    if (std::find(nodes.begin(), nodes.end(), &old) == nodes.end()) return false;
    if (&old == &replacement) return true;
    const auto fail = [&] {
        throw Error("replace_node: " + node_path(*this, old) + " is a '" + old.name() +
                        "' and cannot be replaced by '" + replacement.name() +
                        "': in a typed model the replacement must be a model of the same type" +
                        detail::ModelApi::width_difference(*this, old, replacement),
                    "tenon-E233");
    };
    if (typeid(old) != typeid(replacement)) fail();
    if (!assign || typeid(replacement) != as)
        throw Error("replace_node: the replacement '" + replacement.name() + "' must be passed as its own model type, " +
                        "not through a reference to a base (Node&): its copy is compiled for the type it is passed as",
                    "tenon-E233");
    // Refs from outside `old` to its descendants: those nodes are replaced too, so the refs go.
    const auto before = old.walk();
    const std::unordered_map<const Node*, std::size_t> inner = index_of(before);
    std::vector<std::pair<Node*, std::string>> stale;
    for (Node* n : nodes) {
        if (inner.count(n)) continue;
        for (const auto& name : n->ref_names())
            if (n->has_ref(name) && &n->get_ref(name) != &old && inner.count(&n->get_ref(name)))
                stale.emplace_back(n, name);
    }
    const auto from = replacement.walk();
    assign(old, replacement);
    life_changed();            // a backprop made on this model refuses (old's own life moved in its assignment)
    detail::layout_changed();  // a held plan may point at the old subtree's children
    const auto after = old.walk();
    for (Node* n : after) detail::ModelApi::renew_id(*n);
    if (after.size() == from.size()) remap(after, index_of(from), after);
    for (auto& [n, name] : stale) n->set_ref(name, nullptr);
    return true;
}

bool Node::remove_node(Node& node) {
    const auto before = walk();
    const auto pos = std::find(before.begin(), before.end(), &node);
    if (pos == before.end() || pos == before.begin()) return false;
    Node* parent = nullptr;
    for (Node* n : before) {
        n->for_each_child([&](Node& c) {
            if (&c == &node) parent = n;
        });
        if (parent) break;
    }
    // Which nodes go (the node and its subtree), and every ref as walk indices (npos: a target
    // outside the tree), so that they can be re-pointed after the child list has moved.
    const auto index = index_of(before);
    std::vector<bool> removed(before.size(), false);
    for (const Node* n : node.walk()) removed[index.at(n)] = true;
    constexpr std::size_t npos = static_cast<std::size_t>(-1);
    struct Ref {
        std::size_t owner;
        std::string name;
        std::size_t target;
    };
    std::vector<Ref> refs;
    for (std::size_t i = 0; i < before.size(); ++i) {
        if (removed[i]) continue;
        for (const auto& name : before[i]->ref_names()) {
            if (!before[i]->has_ref(name)) continue;
            auto it = index.find(&before[i]->get_ref(name));
            refs.push_back({i, name, it == index.end() ? npos : it->second});
        }
    }
    const std::string path = node_path(*this, node);
    const std::string name = node.name();
    if (!parent || !parent->remove_child(node))
        throw Error("remove_node: " + path + " ('" + name + "') is held in a fixed slot of '" +
                        (parent ? parent->name() : std::string("?")) +
                        "' and cannot be removed: use replace_node instead",
                    "tenon-E234");
    parent->life_changed();  // a backprop made on the parent, or on this model, refuses
    life_changed();
    detail::layout_changed();
    // Walk order is breadth-first: taking a subtree out keeps the others' order.
    const auto after = walk();
    std::vector<std::size_t> moved(before.size(), npos);
    for (std::size_t i = 0, j = 0; i < before.size(); ++i)
        if (!removed[i]) moved[i] = j++;
    for (const Ref& r : refs) {
        Node* owner = after.at(moved[r.owner]);
        owner->set_ref(r.name, r.target == npos || removed[r.target] ? nullptr : after.at(moved[r.target]));
    }
    return true;
}

std::map<ParamKey, std::pair<ParamView, ParamView>> Node::get_gradients() {
    std::map<ParamKey, std::pair<ParamView, ParamView>> out;
    for (Node* n : walk())
        for (const auto& name : n->param_names())
            if (n->has_grad(name)) out.emplace(ParamKey{n->id(), name}, std::pair{n->get_param(name), n->get_grad(name)});
    return out;
}

UseParams::UseParams(Node& model, const ParamValues& params) {
    struct Match {
        Node* node;
        std::string name;
        CParamView value;
    };
    std::vector<Match> matches;
    for (Node* n : model.walk())
        for (const auto& name : n->param_names()) {
            auto it = params.find({n->id(), name});
            if (it == params.end() || !n->has_param(name)) continue;
            const std::size_t have = n->get_param(name).size(), given = it->second.size();
            if (have != given)
                throw Error("use_params: " + node_path(model, *n) + ": parameter '" + name + "' has " +
                                std::to_string(have) + " values but the one given for it has " +
                                std::to_string(given) +
                                " (was the model re-initialised with other widths since they were taken?); "
                                "nothing was swapped",
                            "tenon-E235");
            detail::require_finite_param("use_params: " + node_path(model, *n) + ": parameter '" + name + "'",
                                         it->second, n->ops());
            matches.push_back({n, name, it->second});
        }
    saved_.reserve(matches.size());
    // (Copies from and to wherever the arrays live: a device model's parameters and averages
    // are device memory, the backups host memory.)
    for (auto& m : matches) {
        ParamView p = m.node->get_param(m.name);
        std::vector<float> backup(p.size());
        if (p.size())
            detail::copy_bytes(backup.data(), Memory::host, p.data, detail::memory_of(p.data), p.size() * sizeof(float));
        saved_.push_back({m.node, m.node->place_watch(), m.name, std::move(backup)});
    }
    for (auto& m : matches) {
        ParamView p = m.node->get_param(m.name);
        if (p.size())
            detail::copy_bytes(p.data, detail::memory_of(p.data), m.value.data, detail::memory_of(m.value.data),
                               p.size() * sizeof(float));
    }
}

UseParams::~UseParams() {
    for (auto& s : saved_) {
        if (!s.place.held()) continue;  // the node was destroyed or moved under the guard: not there to restore
        if (!s.node->has_param(s.name)) continue;
        ParamView p = s.node->get_param(s.name);
        if (p.size() != s.backup.size()) continue;  // re-allocated under the guard: nothing to restore
        if (p.size())
            detail::copy_bytes(p.data, detail::memory_of(p.data), s.backup.data(), Memory::host, p.size() * sizeof(float));
    }
}

void detail::set_dropout_rate(Node& model, double rate, const std::map<std::string, std::string>& attrs) {
    for (Node* n : model.walk()) {
        auto it = attrs.find(n->name());
        if (it != attrs.end()) n->set_attr(it->second, rate);
    }
}

void detail::note_entry_error(Error& e, const Node& node) {
    if (!e.origin()) e.set_origin(&node);
    if (entry_depth != 0) return;  // not the outermost entry point
    const auto nodes = node.walk();
    const auto* origin = static_cast<const Node*>(e.origin());
    const auto it = std::find(nodes.begin(), nodes.end(), origin);
    if (it == nodes.end()) return;  // a node of another model
    const std::string& msg = e.original_message();
    // The node that threw: the innermost entry point's, or the one of its descendants that
    // the message names (a layer its parent runs without going through an entry point).
    const Node* thrower = origin;
    std::size_t skip = 0;
    const auto named = [&msg](const Node& n) {
        return msg.size() > n.name().size() && msg.compare(0, n.name().size(), n.name()) == 0 &&
               msg[n.name().size()] == ':';
    };
    if (named(*origin)) {
        skip = origin->name().size();
    } else {
        const Node* found = nullptr;
        int count = 0;
        for (const Node* n : origin->walk())
            if (named(*n)) found = n, ++count;
        if (count == 1) thrower = found, skip = found->name().size();
    }
    const std::string path = node_path(node, *thrower);
    e.set_node_path(path);
    // The model called: its name says it (or the message names it or its kind, "chain(): ..."); a message
    // that names no node (an allocation's "array: ...") gets the model's name first.
    if (thrower == &node && (skip || msg.find(node.name()) != std::string::npos || msg.find(path) != std::string::npos))
        return;
    e.set_message(path + (skip ? msg.substr(skip) : ": " + msg));
}

}  // namespace tenon
