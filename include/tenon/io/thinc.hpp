// Thinc interop: the files Thinc 8.1 writes with `model.to_bytes()` load into the equivalent
// tenon model, and tenon writes files that Thinc's `Model.from_bytes` loads into the model
// Thinc's own constructors build for the same architecture (docs/serialization.md, "Thinc
// interop", has the mapping between the two trees and what is refused).
//
//   auto model = Relu<64>({.dropout = 0.2}) >> Relu<64>({.dropout = 0.2}) >> Softmax<>();
//   from_thinc_disk(model, "mlp.thinc");      // Thinc: chain(Relu(64, dropout=0.2), ..., Softmax())
//   to_thinc_disk(model, "back.thinc");        // Thinc: the same chain(...).from_disk("back.thinc")
//
// Loading checks the whole file against the model first (layer by layer: kinds, dims,
// parameter shapes, attributes) and either applies all of it or throws tenon::LoadError
// (ids tenon-E210 ... tenon-E218) naming the node by its tenon path, leaving the model as it
// was. Writing refuses (tenon-E215) a model with a node that has no Thinc counterpart.
#pragma once
// (Paths are std::string, as Node::to_disk: <filesystem> would add about a second of
// compile time to every translation unit that includes tenon.)
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "tenon/io/state.hpp"
#include "tenon/model/node.hpp"

namespace tenon {

// The bytes Thinc's `model.to_bytes()` would write for this model (msgpack, srsly's numpy
// encoding), in the tree Thinc's constructors build for the same architecture.
std::vector<std::uint8_t> to_thinc_bytes(const Node& model);
void to_thinc_disk(const Node& model, const std::string& path);  // (a std::filesystem::path converts)
// The same, in the tree of another Thinc file of this architecture (`like`: the to_bytes()
// of the Thinc model the bytes are for, trained or not), for a Thinc model spelled otherwise
// than with one chain(...) per tenon chain, e.g. spaCy's chain(chain(embed, encode), ...).
// The file's tree must match the model's as from_thinc_bytes requires (else tenon-E211 ...).
std::vector<std::uint8_t> to_thinc_bytes(const Node& model, std::span<const std::uint8_t> like);

// Loads the bytes of Thinc's `model.to_bytes()` (or a file written by `to_disk`) into the
// equivalent tenon model, initialised or not: dims, parameters, attributes and references.
void from_thinc_bytes(Node& model, std::span<const std::uint8_t> data);
void from_thinc_disk(Node& model, const std::string& path);

}  // namespace tenon
