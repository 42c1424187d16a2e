// A model's state as plain data: every node in walk order with its name, dims, attributes,
// parameters and references. Model files (tenon/io/serialize.hpp) and Thinc's files
// (tenon/io/thinc.hpp) both decode to a ModelState and load it with restore(), which checks
// the whole of it against the model before changing anything: a load either applies all of
// a file or leaves the model exactly as it was.
#pragma once
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tenon/model/node.hpp"

namespace tenon {

// A failed load: another architecture, a corrupted or truncated file, an unsupported version.
// The message names the node by its path ("chain>1>clone>0>residual>maxout") and says what
// was expected and what was found.
class LoadError : public Error {
public:
    using Error::Error;
};

struct ParamState {
    std::string name;
    bool allocated = false;
    std::vector<std::size_t> shape;  // empty when not allocated
    std::vector<float> values;       // row-major, the product of shape
};

struct NodeState {
    std::string name;  // Node::name()
    std::string path;  // where the node is (capture fills it; restore ignores it)
    std::vector<std::pair<std::string, std::size_t>> dims;  // dyn: not known
    std::vector<std::pair<std::string, Attr>> attrs;
    std::vector<ParamState> params;
    std::vector<std::pair<std::string, std::optional<std::size_t>>> refs;  // walk index of the target
    std::size_t n_children = 0;  // its children are the next unvisited nodes of the walk
    bool initialized = false;
};

struct ModelState {
    std::vector<NodeState> nodes;  // in Node::walk() order (breadth-first, as Thinc)
};

// The model's state, every parameter copied.
ModelState capture(const Node& model);
// capture() for a file: a parameter holding NaN or inf is refused (tenon-E119, its path, the
// count and the first position): such a file could only make NaN outputs, and loading refuses it.
ModelState capture_to_save(const Node& model);

// Checks `state` against the model and applies it, or throws LoadError and changes nothing.
// Checked: the same number of nodes with the same names; the same dim names, each value
// equal to what the model already knows (a static width, or one set before); the same
// parameter names, each allocated one of the shape its dims say; attribute values of the
// type the model holds; references inside the tree. Gradients of loaded parameters are
// zero. `source` names what is loaded in messages ("file", "Thinc file").
void restore(Node& model, const ModelState& state, std::string_view source = "file");

// The paths of the model's nodes, in walk order: the kind of each node from the root down
// (a chain is "chain", "residual(maxout)" is "residual"), with the child's index wherever a
// node has more than one child: "chain>1>clone>0>residual>maxout".
std::vector<std::string> node_paths(const Node& model);
// The path of one node of the model (throws if it is not in the tree).
std::string node_path(const Node& model, const Node& node);
// A node's kind: its name up to the first "(", or "chain" / "concatenate" / "add" for a
// name joined with ">>" / "|" / "+".
std::string node_kind(std::string_view name);

}  // namespace tenon
