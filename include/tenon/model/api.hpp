// The rest of Thinc's Model API (docs/lifecycle.md, "The rest of the Model API"): copy(),
// use_params (tenon/model/use_params.hpp), set_dropout_rate. replace_node, remove_node and
// get_gradients are members of Node (tenon/model/node.hpp).
#pragma once
#include <map>
#include <string>

#include "tenon/model/layer.hpp"
#include "tenon/model/use_params.hpp"

namespace tenon {

namespace detail {
// Points every ref of `to` (a copy of `from`, of the same structure) that targets a node of
// `from` at the corresponding node of `to` (the two trees walked in parallel).
void remap_refs(const Node& from, Node& to);
void set_dropout_rate(Node& model, double rate, const std::map<std::string, std::string>& attrs);
}  // namespace detail

// A deep copy (Thinc's model.copy()): every node is new (new ids), with the same dims,
// parameters, attributes and structure; refs that point inside the model point at the
// copy's nodes. (The result is returned by NRVO: refs are addresses, and a moved model's
// refs would point into the moved-from one.)
template <Model M>
std::remove_cvref_t<M> copy(const M& model) {
    std::remove_cvref_t<M> out(model);
    detail::remap_refs(model, out);
    return out;
}

// A failed model's error is already said (model/failed_model.hpp).
// (A layer whose own check failed, failed_layer, too.)
template <class M>
    requires(is_failed_model<M>)
failed_model copy(const M&) noexcept {
    return {};
}
inline failed_model set_dropout_rate(const failed_model&, double,
                                     const std::map<std::string, std::string>& = {}) noexcept {
    return {};
}

// Thinc's set_dropout_rate (the 8.0 form): for every node of the model whose name is a key
// of `attrs`, sets the attribute it names to `rate`. Returns the model.
template <class M>
    requires std::derived_from<M, Node>
M& set_dropout_rate(M& model, double rate,
                    const std::map<std::string, std::string>& attrs = {{"dropout", "dropout_rate"}}) {
    detail::set_dropout_rate(model, rate, attrs);
    return model;
}

}  // namespace tenon
