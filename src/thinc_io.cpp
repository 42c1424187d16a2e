// Thinc interop (tenon/io/thinc.hpp): reads and writes the msgpack files of Thinc 8.1's
// Model.to_bytes / from_bytes.
//
// A Thinc file is a map {"nodes", "attrs", "params", "shims"} of lists aligned with Thinc's
// breadth-first walk. It does not store the tree itself: Thinc's from_dict trusts the model it
// loads into. Here the tree is rebuilt from the node names (a chain is named "a>>b>>c" after its
// layers, a residual "residual(a)", ...), then both trees are compared in a canonical form:
//
//   - chains are flattened into the chain around them (Thinc's `a >> b >> c` nests chains,
//     tenon's is one flat chain), and so are concatenate and add;
//   - tenon's dense layer with its LayerNorm/Dropout children (Relu<N>({.dropout, .normalize}))
//     is the chain(layer, layernorm, dropout) Thinc's Relu(..., normalize, dropout) builds;
//   - tenon's clone(L x n) is chain(L, copy, ...) (n == 1: L itself; n == 0: noop);
//   - Thinc's HashEmbed/Embed with a column is chain(ints_getitem, table): one table that reads
//     its ids from a column of a 2-d input, as tenon's HashEmbed<nO, Ints2d>.
//
// Matching walks both canonical trees depth-first and compares kinds, then per layer the dims,
// parameter shapes and attributes. The result is a ModelState for the tenon model, which
// restore() applies (all or nothing). Writing builds the tree Thinc's constructors make for the
// natural spelling of the model and encodes it as srsly does.
#define MSGPACK_NO_BOOST 1
#include "tenon/io/thinc.hpp"

#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <memory>
#include <msgpack.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <typeinfo>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

namespace tenon {
namespace {

constexpr const char* kSource = "Thinc file";

// ---------------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------------
[[noreturn]] void fail(const std::string& message, const char* id) { throw LoadError(message, id); }

// Thrown while decoding; turned into tenon-E210 with the place it happened.
struct Malformed {
    std::string what;
};
[[noreturn]] void malformed(std::string what) { throw Malformed{std::move(what)}; }

std::string shape_str(const std::vector<std::size_t>& s) {
    std::string out = "(";
    for (std::size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
    return out + (s.size() == 1 ? ",)" : ")");
}
std::string in_quotes(std::string_view s) { return "'" + std::string(s) + "'"; }

// ---------------------------------------------------------------------------------------------
// A Thinc file as plain data
// ---------------------------------------------------------------------------------------------
struct ThincArray {
    std::vector<std::size_t> shape;
    std::vector<float> values;
};

// An attribute value as Thinc stores it (msgpack bytes of the Python value), decoded where it
// is a scalar tenon can hold.
struct ThincValue {
    enum Kind { None, Bool, Int, Float, Str, Other } kind = Other;
    bool b = false;
    std::int64_t i = 0;
    double f = 0.0;
    std::string s;
    std::string describe() const {
        switch (kind) {
            case None: return "None";
            case Bool: return b ? "True" : "False";
            case Int: return std::to_string(i);
            case Float: {
                std::ostringstream o;
                o << f;
                return o.str();
            }
            case Str: return in_quotes(s);
            default: return "a value tenon cannot hold (not a bool, number or string)";
        }
    }
};

struct ThincNode {
    std::string name;
    std::vector<std::pair<std::string, std::optional<std::size_t>>> dims;
    std::vector<std::pair<std::string, std::optional<std::size_t>>> refs;
    std::vector<std::pair<std::string, std::string>> attrs;  // name, msgpack bytes
    std::vector<std::pair<std::string, std::optional<ThincArray>>> params;
    std::size_t n_shims = 0;
    std::vector<std::size_t> children;  // rebuilt from the names (reading) or built (writing)
    int tenon = -1;                     // writing: the tenon node it stands for (walk index)
};

template <class V>
const V* find_named(const std::vector<std::pair<std::string, V>>& v, std::string_view name) {
    for (const auto& [k, x] : v)
        if (k == name) return &x;
    return nullptr;
}

// ---------------------------------------------------------------------------------------------
// Reading msgpack
// ---------------------------------------------------------------------------------------------
std::string_view text_of(const msgpack::object& o, const char* what) {
    if (o.type == msgpack::type::STR) return {o.via.str.ptr, o.via.str.size};
    if (o.type == msgpack::type::BIN) return {o.via.bin.ptr, o.via.bin.size};
    malformed(std::string(what) + " is not a string");
}
const msgpack::object* map_get(const msgpack::object& m, std::string_view key) {
    for (std::uint32_t i = 0; i < m.via.map.size; ++i) {
        const auto& k = m.via.map.ptr[i].key;
        if ((k.type == msgpack::type::STR || k.type == msgpack::type::BIN) && text_of(k, "a key") == key)
            return &m.via.map.ptr[i].val;
    }
    return nullptr;
}
const msgpack::object& require_map(const msgpack::object& o, const std::string& what) {
    if (o.type != msgpack::type::MAP) malformed(what + " is not a map");
    return o;
}
const msgpack::object& require_key(const msgpack::object& m, std::string_view key, const std::string& what) {
    const msgpack::object* v = map_get(m, key);
    if (!v) malformed(what + " has no " + in_quotes(key));
    return *v;
}
std::optional<std::size_t> opt_size(const msgpack::object& o, const std::string& what) {
    if (o.type == msgpack::type::NIL) return std::nullopt;
    if (o.type != msgpack::type::POSITIVE_INTEGER) malformed(what + " is not a non-negative integer or None");
    return static_cast<std::size_t>(o.via.u64);
}
std::vector<std::pair<std::string, std::optional<std::size_t>>> size_map(const msgpack::object& o,
                                                                         const std::string& what) {
    require_map(o, what);
    std::vector<std::pair<std::string, std::optional<std::size_t>>> out;
    for (std::uint32_t i = 0; i < o.via.map.size; ++i) {
        const std::string k(text_of(o.via.map.ptr[i].key, (what + ": a key").c_str()));
        out.emplace_back(k, opt_size(o.via.map.ptr[i].val, what + " " + in_quotes(k)));
    }
    return out;
}

float load_f32_le(const char* p) {
    std::uint32_t u = 0;
    for (int b = 3; b >= 0; --b) u = (u << 8) | static_cast<unsigned char>(p[b]);
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}
double load_f64_le(const char* p) {
    std::uint64_t u = 0;
    for (int b = 7; b >= 0; --b) u = (u << 8) | static_cast<unsigned char>(p[b]);
    double f;
    std::memcpy(&f, &u, 8);
    return f;
}

// srsly's numpy encoding: {b"nd": True, b"type": "<f4", b"kind": b"", b"shape": [...], b"data": bytes}.
ThincArray decode_array(const msgpack::object& o, const std::string& what) {
    if (o.type != msgpack::type::MAP) malformed(what + " is neither None nor an array");
    const msgpack::object& nd = require_key(o, "nd", what);
    if (nd.type != msgpack::type::BOOLEAN || !nd.via.boolean)
        malformed(what + " is not an array (srsly's numpy encoding with nd = True)");
    const std::string type(text_of(require_key(o, "type", what), (what + ": type").c_str()));
    std::size_t item = 0;
    if (type == "<f4") item = 4;
    else if (type == "<f8") item = 8;
    else
        fail(std::string("Thinc file: ") + what + " has dtype " + in_quotes(type) +
                 "; tenon's parameters are float32 (little-endian '<f4'; '<f8' is converted)",
             "tenon-E218");
    const msgpack::object& shape = require_key(o, "shape", what);
    if (shape.type != msgpack::type::ARRAY) malformed(what + ": shape is not a list");
    ThincArray a;
    std::size_t n = 1;
    for (std::uint32_t i = 0; i < shape.via.array.size; ++i) {
        const auto& d = shape.via.array.ptr[i];
        if (d.type != msgpack::type::POSITIVE_INTEGER) malformed(what + ": shape holds a value that is not a size");
        a.shape.push_back(static_cast<std::size_t>(d.via.u64));
        if (a.shape.back() && n > (std::size_t(-1) >> 4) / a.shape.back()) malformed(what + ": shape too large");
        n *= a.shape.back();
    }
    const msgpack::object& data = require_key(o, "data", what);
    if (data.type != msgpack::type::BIN) malformed(what + ": data is not bytes");
    if (data.via.bin.size != n * item)
        malformed(what + ": shape " + shape_str(a.shape) + " needs " + std::to_string(n * item) + " bytes of data, found " +
                  std::to_string(data.via.bin.size));
    a.values.resize(n);
    for (std::size_t i = 0; i < n; ++i)
        a.values[i] = item == 4 ? load_f32_le(data.via.bin.ptr + 4 * i)
                                : static_cast<float>(load_f64_le(data.via.bin.ptr + 8 * i));
    return a;
}

// Keeps the parsed objects referring to the caller's buffer (no copies of the weights).
bool reference_all(msgpack::type::object_type, std::size_t, void*) { return true; }

// One msgpack value that must fill the data; `map`: the value must be a map.
msgpack::object_handle unpack_all(const char* data, std::size_t size, const char* what, bool map = false) {
    if (size == 0) malformed(std::string(what) + " is empty");
    // Sizes in a header can never exceed the bytes there are: garbage that claims a list of 4
    // billion items fails here instead of allocating for them.
    const msgpack::unpack_limit limit(size, size / 2 + 1, size, size, size, 10000);
    std::size_t off = 0;
    msgpack::object_handle h = msgpack::unpack(data, size, off, &reference_all, nullptr, limit);
    if (map && h.get().type != msgpack::type::MAP)
        malformed(std::string(what) + " does not start with a msgpack map (Thinc's to_bytes writes one)");
    if (off != size)
        malformed(std::string(what) + " has " + std::to_string(size - off) + " bytes after its end");
    return h;
}

ThincValue decode_value(const std::string& raw) {
    ThincValue v;
    msgpack::object_handle h;
    try {
        h = unpack_all(raw.data(), raw.size(), "an attribute");
    } catch (const Malformed&) {
        return v;  // Other
    } catch (const std::exception&) {
        return v;
    }
    const msgpack::object& o = h.get();
    switch (o.type) {
        case msgpack::type::NIL: v.kind = ThincValue::None; break;
        case msgpack::type::BOOLEAN: v.kind = ThincValue::Bool; v.b = o.via.boolean; break;
        case msgpack::type::POSITIVE_INTEGER:
            if (o.via.u64 > static_cast<std::uint64_t>(INT64_MAX)) break;
            v.kind = ThincValue::Int;
            v.i = static_cast<std::int64_t>(o.via.u64);
            break;
        case msgpack::type::NEGATIVE_INTEGER: v.kind = ThincValue::Int; v.i = o.via.i64; break;
        case msgpack::type::FLOAT32:
        case msgpack::type::FLOAT64: v.kind = ThincValue::Float; v.f = o.via.f64; break;
        case msgpack::type::STR: v.kind = ThincValue::Str; v.s.assign(o.via.str.ptr, o.via.str.size); break;
        default: break;
    }
    return v;
}

std::vector<ThincNode> parse_thinc(std::span<const std::uint8_t> bytes) {
    try {
        msgpack::object_handle h =
            unpack_all(reinterpret_cast<const char*>(bytes.data()), bytes.size(), "the data", /*map*/ true);
        const msgpack::object& top = h.get();
        const msgpack::object* nodes = map_get(top, "nodes");
        const msgpack::object* attrs = map_get(top, "attrs");
        const msgpack::object* params = map_get(top, "params");
        const msgpack::object* shims = map_get(top, "shims");
        if (!nodes || !attrs || !params)
            malformed("the map has no \"nodes\", \"attrs\" and \"params\" (not a file of Thinc's Model.to_bytes)");
        for (const msgpack::object* l : {nodes, attrs, params, shims})
            if (l && l->type != msgpack::type::ARRAY) malformed("\"nodes\", \"attrs\", \"params\" and \"shims\" must be lists");
        const std::size_t n = nodes->via.array.size;
        if (n == 0) malformed("the file has no nodes");
        if (attrs->via.array.size != n || params->via.array.size != n || (shims && shims->via.array.size != n))
            malformed("\"nodes\", \"attrs\", \"params\" and \"shims\" differ in length");
        std::vector<ThincNode> out(n);
        for (std::size_t i = 0; i < n; ++i) {
            const std::string at = "node " + std::to_string(i);
            ThincNode& t = out[i];
            const msgpack::object& node = require_map(nodes->via.array.ptr[i], at);
            const auto index = opt_size(require_key(node, "index", at), at + ": index");
            if (!index || *index != i) malformed(at + " has index " + (index ? std::to_string(*index) : "None"));
            t.name = std::string(text_of(require_key(node, "name", at), (at + ": name").c_str()));
            const std::string named = at + " (" + in_quotes(t.name) + ")";
            t.dims = size_map(require_key(node, "dims", named), named + ": dims");
            if (const msgpack::object* r = map_get(node, "refs")) t.refs = size_map(*r, named + ": refs");
            for (const auto& [rn, ri] : t.refs)
                if (ri && *ri >= n) malformed(named + ": reference " + in_quotes(rn) + " points past the last node");
            const msgpack::object& a = require_map(attrs->via.array.ptr[i], named + ": attrs");
            for (std::uint32_t k = 0; k < a.via.map.size; ++k)
                t.attrs.emplace_back(std::string(text_of(a.via.map.ptr[k].key, "an attribute name")),
                                     std::string(text_of(a.via.map.ptr[k].val, "an attribute value")));
            const msgpack::object& p = require_map(params->via.array.ptr[i], named + ": params");
            for (std::uint32_t k = 0; k < p.via.map.size; ++k) {
                const std::string pn(text_of(p.via.map.ptr[k].key, "a parameter name"));
                const msgpack::object& v = p.via.map.ptr[k].val;
                if (v.type == msgpack::type::NIL) t.params.emplace_back(pn, std::nullopt);
                else t.params.emplace_back(pn, decode_array(v, named + ": parameter " + in_quotes(pn)));
            }
            if (shims) {
                const msgpack::object& s = shims->via.array.ptr[i];
                if (s.type != msgpack::type::ARRAY) malformed(named + ": shims is not a list");
                t.n_shims = s.via.array.size;
            }
        }
        return out;
    } catch (const Malformed& m) {
        fail("not a Thinc model file (Thinc 8.1's Model.to_bytes, msgpack): " + m.what, "tenon-E210");
    } catch (const LoadError&) {
        throw;
    } catch (const std::exception& e) {
        // msgpack's own errors: truncated data (insufficient_bytes), bytes that are not msgpack
        // (parse_error), sizes beyond the data (size_overflow) ...
        fail(std::string("not a Thinc model file (Thinc 8.1's Model.to_bytes, msgpack): the data is truncated or "
                         "not msgpack (") +
                 e.what() + ", " + std::to_string(bytes.size()) + " bytes)",
             "tenon-E210");
    }
}

// ---------------------------------------------------------------------------------------------
// Kinds: what a node is, from its name and its children's names (both libraries name a
// combinator after its children: "a>>b", "a|b", "residual(a)", "clone(a x3)", ...)
// ---------------------------------------------------------------------------------------------
std::string join(const std::vector<std::string_view>& parts, std::string_view sep) {
    std::string out;
    for (std::size_t i = 0; i < parts.size(); ++i) {
        if (i) out += sep;
        out += parts[i];
    }
    return out;
}
bool is_dense_with_tail(std::string_view name) {
    return name == "relu" || name == "mish" || name == "gelu" || name == "swish" || name == "hardswish" ||
           name == "maxout";
}
bool is_getitem(std::string_view k) { return k == "ints-getitem" || k == "floats-getitem" || k == "array-getitem"; }
bool is_table(std::string_view k) { return k == "hashembed" || k == "embed"; }

// Wrappers of one layer named "<kind>(<layer>)" in both libraries.
const std::vector<std::string>& wrapper_kinds() {
    static const std::vector<std::string> k = {"residual",  "with_array",   "with_array2d", "with_list",
                                               "with_ragged", "with_padded", "with_flatten", "with_reshape",
                                               "with_getitem", "uniqued"};
    return k;
}
bool is_wrapper(std::string_view k) {
    return std::find(wrapper_kinds().begin(), wrapper_kinds().end(), k) != wrapper_kinds().end();
}
// Layers (no children) that both libraries have, by the name Thinc gives them.
const std::vector<std::string>& leaf_kinds() {
    static const std::vector<std::string> k = {
        "linear",        "relu",          "mish",         "gelu",         "swish",        "hardswish",
        "maxout",        "sigmoid",       "softmax",
        "dropout",       "layernorm",     "hashembed",    "embed",        "expand_window", "sigmoid_activation",
        "cauchy_similarity", "list2ragged", "ragged2list", "list2padded", "padded2list", "list2array",
        "strings2arrays", "reduce_first",  "reduce_last",  "reduce_max",   "reduce_mean",  "reduce_sum",
        "ints-getitem",  "floats-getitem", "array-getitem", "noop",        "lstm"};
    return k;
}
bool is_leaf_kind(std::string_view k) {
    return std::find(leaf_kinds().begin(), leaf_kinds().end(), k) != leaf_kinds().end();
}

// The kind of a node named `name` whose children are named `kids`: "chain", "concatenate",
// "add", "clone", "siamese", "bidirectional", a wrapper's kind, "transparent" (a node named as
// its only child: tenon's with_debug, a chain of one layer; an AnyModel's "any(child)"), "dense_tail" (tenon's dense layer
// with its LayerNorm/Dropout children), a layer's name, or "" (not recognised).
std::string interpret(std::string_view name, const std::vector<std::string_view>& kids) {
    const std::size_t n = kids.size();
    if (n == 0) return std::string(name);
    if (n == 1 && name == kids[0]) return "transparent";
    // An AnyModel (a config's model) holds its model under "any(name)": Thinc has no such node.
    if (n == 1 && name.size() == kids[0].size() + 5 && name.starts_with("any(") && name.ends_with(")") &&
        name.substr(4, kids[0].size()) == kids[0])
        return "transparent";
    if (n >= 2 && name == join(kids, ">>")) return "chain";
    if (n >= 2 && name == join(kids, "|")) return "concatenate";
    if (name == "add") return "add";
    if (std::all_of(kids.begin(), kids.end(), [&](std::string_view k) { return k == kids[0]; }) &&
        name == "clone(" + std::string(kids[0]) + " x" + std::to_string(n) + ")")
        return "clone";
    if (n == 1 && name.size() > kids[0].size() + 2 && name.back() == ')') {
        const std::size_t open = name.size() - kids[0].size() - 2;
        if (name[open] == '(' && name.substr(open + 1, kids[0].size()) == kids[0]) return std::string(name.substr(0, open));
    }
    if (n == 2 && name == "siamese(" + std::string(kids[0]) + ", " + std::string(kids[1]) + ")") return "siamese";
    if (n == 2 && name == "bi" + std::string(kids[0])) return "bidirectional";
    if (is_dense_with_tail(name) &&
        std::all_of(kids.begin(), kids.end(), [](std::string_view k) { return k == "layernorm" || k == "dropout"; }))
        return "dense_tail";
    return "";
}

// The kind two nodes are compared by (tenon's with_array2d is Thinc's with_array, which Thinc
// names "with_array" too; the three getitem layers differ only in the types they accept).
std::string compare_kind(const std::string& k) {
    if (k == "with_array2d") return "with_array";
    if (is_getitem(k)) return "getitem";
    return k;
}

// ---------------------------------------------------------------------------------------------
// Rebuilding Thinc's tree from the breadth-first list of names
// ---------------------------------------------------------------------------------------------
// In breadth-first order the children of node i are the next unclaimed nodes; how many there
// are follows from the name (a chain "a>>b>>c" has the children whose names join to it, a
// wrapper "residual(a)" one child named "a", a layer none). "add" does not say, nor does a name
// Thinc's constructors do not make: those are searched (backtracking, bounded).
class TreeRebuild {
public:
    explicit TreeRebuild(const std::vector<ThincNode>& nodes) : nodes_(nodes), k_(nodes.size(), 0) {}

    // Depth-first over the choices, node by node, without recursion (a file may hold many
    // nodes): true when every node but the root is some node's child.
    bool run() {
        const std::size_t n = nodes_.size();
        std::vector<Choices> choices(n);
        std::vector<std::size_t> next(n + 1, 0);  // the first unclaimed node when node i is reached
        std::size_t i = 0;
        next[0] = 1;
        bool enter = true;
        while (true) {
            if (++steps_ > kMaxSteps) return false;
            bool advance = false;
            if (enter) {
                if (i == n) {
                    if (next[n] == n) return true;
                } else if (i == 0 || next[i] > i) {  // else node i would be nobody's child
                    choices[i] = candidates(i, next[i]);
                    advance = true;
                }
            } else {
                advance = true;
            }
            std::size_t k = 0;
            if (advance && i < n && choices[i].take(k)) {
                k_[i] = k;
                next[i + 1] = next[i] + k;
                ++i;
                enter = true;
                continue;
            }
            if (i == 0) return false;
            --i;  // back to the node before, for its next choice
            enter = false;
        }
    }
    const std::vector<std::size_t>& counts() const { return k_; }
    bool exhausted() const { return steps_ > kMaxSteps; }

private:
    static constexpr long kMaxSteps = 2000000;

    // The numbers of children to try for a node, in order: those its name gives, then any
    // number in [lo, hi] (add's, or a name no constructor makes), then none (`last`).
    struct Choices {
        std::vector<std::size_t> listed;
        std::size_t at = 0, lo = 1, hi = 0;
        bool last = false;
        bool take(std::size_t& k) {
            if (at < listed.size()) {
                k = listed[at++];
                return true;
            }
            while (lo <= hi) {
                k = lo++;
                if (std::find(listed.begin(), listed.end(), k) == listed.end()) return true;
            }
            if (last) {
                last = false;
                k = 0;
                return std::find(listed.begin(), listed.end(), 0) == listed.end();
            }
            return false;
        }
    };

    // Counts k for which the names of nodes p, p+1, ... joined with sep give `name`.
    void joined(std::string_view name, std::string_view sep, std::size_t p, std::vector<std::size_t>& out) const {
        std::size_t pos = 0;
        for (std::size_t j = p; j < nodes_.size(); ++j) {
            const std::string& c = nodes_[j].name;
            if (name.compare(pos, c.size(), c) != 0) return;
            pos += c.size();
            if (pos == name.size()) {
                if (j > p) out.push_back(j - p + 1);
                return;
            }
            if (name.compare(pos, sep.size(), sep) != 0) return;
            pos += sep.size();
        }
    }

    Choices candidates(std::size_t i, std::size_t p) const {
        const std::string& s = nodes_[i].name;
        const std::size_t left = nodes_.size() - p;
        Choices c;
        auto add = [&](std::size_t k) {
            if (k <= left && std::find(c.listed.begin(), c.listed.end(), k) == c.listed.end()) c.listed.push_back(k);
        };
        if (s.find(">>") != std::string::npos) joined(s, ">>", p, c.listed);
        if (s.find('|') != std::string::npos) joined(s, "|", p, c.listed);
        if (!s.empty() && s.back() == ')') {
            const std::size_t open = s.find('(');
            if (open != std::string::npos) {
                const std::string_view inner = std::string_view(s).substr(open + 1, s.size() - open - 2);
                if (p < nodes_.size() && nodes_[p].name == inner) add(1);
                if (s.compare(0, open, "siamese") == 0 && p + 1 < nodes_.size() &&
                    nodes_[p].name + ", " + nodes_[p + 1].name == inner)
                    add(2);
            }
        }
        if (s.size() > 2 && s.compare(0, 2, "bi") == 0 && p + 1 < nodes_.size() && nodes_[p].name == s.substr(2)) add(2);
        if (is_leaf_kind(s)) {
            add(0);  // a layer (noop(*layers) may have some)
            if (s == "noop") c.hi = left;
        } else {
            c.lo = s == "add" ? 2 : 1;  // add says not how many; other names do not either
            c.hi = left;
            c.last = true;
        }
        return c;
    }

    const std::vector<ThincNode>& nodes_;
    std::vector<std::size_t> k_;
    long steps_ = 0;
};

// Deeper trees are refused (the walks below recurse once per level).
constexpr std::size_t kMaxDepth = 2000;

void rebuild_tree(std::vector<ThincNode>& nodes) {
    TreeRebuild r(nodes);
    if (!r.run())
        fail(std::string("not a Thinc model file: its ") + std::to_string(nodes.size()) +
                 " nodes (root " + in_quotes(nodes[0].name) +
                 ") do not form the tree of a model built by Thinc's layer functions (node names such as "
                 "\"relu>>softmax\" and \"residual(maxout)\" tell which nodes are whose layers)" +
                 (r.exhausted() ? " within the search limit" : ""),
             "tenon-E210");
    std::size_t p = 1;
    std::vector<std::size_t> depth(nodes.size(), 0);
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        for (std::size_t k = 0; k < r.counts()[i]; ++k) {
            depth[p] = depth[i] + 1;
            if (depth[p] > kMaxDepth)
                fail("not a Thinc model file: its tree is more than " + std::to_string(kMaxDepth) + " nodes deep",
                     "tenon-E210");
            nodes[i].children.push_back(p++);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The canonical tree (both sides)
// ---------------------------------------------------------------------------------------------
struct Canon {
    std::string kind;      // as interpret() gives it (a layer's name for a layer)
    int node = -1;         // the node holding dims/params/attrs (walk index on its side); -1: none
    int at = -1;           // the node that names this place in messages
    int column_node = -1;  // Thinc: the chain(getitem, table) holding the table's column
    bool column2d = false; // tables: the ids are one column of a 2-d input
    std::vector<Canon> kids;
};

bool flattens(const std::string& kind) { return kind == "chain" || kind == "concatenate" || kind == "add"; }
void append_flat(Canon& parent, Canon child) {
    if (child.kind == parent.kind && flattens(child.kind)) {
        for (auto& k : child.kids) parent.kids.push_back(std::move(k));
    } else {
        parent.kids.push_back(std::move(child));
    }
}

// The rank of a table's input (1: one id per row; 2: the ids in a column), from its type:
// tenon's HashEmbed<nO, In> and Embed<nO, In> say it only there.
int table_input_rank(const Node& n) {
    int status = 0;
    char* d = abi::__cxa_demangle(typeid(n).name(), nullptr, nullptr, &status);
    const std::string s = d ? d : "";
    std::free(d);
    const std::size_t a = s.find("tenon::Array<");
    if (a == std::string::npos) return 2;
    int depth = 0, commas = 0;
    for (std::size_t i = a + std::strlen("tenon::Array<"); i < s.size(); ++i) {
        if (s[i] == '<') ++depth;
        else if (s[i] == '>') {
            if (depth == 0) break;
            --depth;
        } else if (s[i] == ',' && depth == 0) {
            ++commas;
        }
    }
    return commas;
}

struct TenonTree {
    std::vector<const Node*> nodes;  // walk order
    std::unordered_map<const Node*, int> index;
    std::vector<std::vector<int>> children;
    std::vector<std::string> kinds;

    explicit TenonTree(const Node& root) : nodes(root.walk()) {
        for (std::size_t i = 0; i < nodes.size(); ++i) index[nodes[i]] = static_cast<int>(i);
        children.resize(nodes.size());
        kinds.resize(nodes.size());
        for (std::size_t i = 0; i < nodes.size(); ++i) {
            std::vector<std::string_view> names;
            nodes[i]->for_each_child([&](const Node& c) {
                children[i].push_back(index.at(&c));
                names.push_back(c.name());
            });
            kinds[i] = interpret(nodes[i]->name(), names);
        }
    }
};

Canon canon_tenon(const TenonTree& t, int i) {
    const std::string& kind = t.kinds[i];
    const auto& kids = t.children[i];
    if (kind == "transparent") return canon_tenon(t, kids[0]);
    if (kind == "clone") {
        if (kids.size() == 1) return canon_tenon(t, kids[0]);
        Canon c{"chain", -1, i, -1, false, {}};
        for (int k : kids) append_flat(c, canon_tenon(t, k));
        return c;
    }
    if (kind == "dense_tail") {
        Canon c{"chain", -1, i, -1, false, {}};
        c.kids.push_back(Canon{t.nodes[i]->name(), i, i, -1, false, {}});
        for (int k : kids) append_flat(c, canon_tenon(t, k));
        return c;
    }
    Canon c{kind.empty() ? "?" + t.nodes[i]->name() : kind, i, i, -1, false, {}};
    if (is_table(kind)) c.column2d = table_input_rank(*t.nodes[i]) == 2;
    for (int k : kids) {
        if (flattens(kind)) append_flat(c, canon_tenon(t, k));
        else c.kids.push_back(canon_tenon(t, k));
    }
    return c;
}

std::string thinc_kind(const std::vector<ThincNode>& nodes, std::size_t i) {
    std::vector<std::string_view> names;
    for (std::size_t c : nodes[i].children) names.push_back(nodes[c].name);
    return interpret(nodes[i].name, names);
}

Canon canon_thinc(const std::vector<ThincNode>& nodes, std::size_t i) {
    const std::string kind = thinc_kind(nodes, i);
    const auto& kids = nodes[i].children;
    const int ii = static_cast<int>(i);
    if (kind == "transparent") return canon_thinc(nodes, kids[0]);
    // HashEmbed(..., column=c) and Embed(..., column=c): chain(ints_getitem, table).
    if (kind == "chain" && kids.size() == 2 && is_getitem(nodes[kids[0]].name) && nodes[kids[0]].children.empty() &&
        is_table(nodes[kids[1]].name) && nodes[kids[1]].children.empty()) {
        const int t = static_cast<int>(kids[1]);
        return Canon{nodes[kids[1]].name, t, t, ii, true, {}};
    }
    Canon c{kind.empty() ? "?" + nodes[i].name : kind, ii, ii, -1, false, {}};
    for (std::size_t k : kids) {
        if (flattens(kind)) append_flat(c, canon_thinc(nodes, k));
        else c.kids.push_back(canon_thinc(nodes, k));
    }
    return c;
}

std::string kind_list(const std::vector<Canon>& v) {
    std::string out;
    for (std::size_t i = 0; i < v.size(); ++i) {
        const std::string& k = v[i].kind;
        out += (i ? ", " : "") + (k[0] == '?' ? k.substr(1) : k);
    }
    return out;
}
std::string shown(const std::string& kind) { return kind[0] == '?' ? in_quotes(kind.substr(1)) : kind; }

// ---------------------------------------------------------------------------------------------
// Reading: matching the Thinc tree onto the model
// ---------------------------------------------------------------------------------------------
// Attributes that configure a member of the tenon layer (not read back from the attribute at
// run time): a file must agree with the model on them rather than change them.
bool is_fixed_attr(std::string_view a) { return a == "window_size" || a == "pad" || a == "idx"; }

// Parameter shapes by layer, in the dims both libraries give the layer.
// Thinc 8.1's LSTM runs with HC0[0] as the initial cell and HC0[1] as the initial hidden, the
// other way round from its names (and tenon's: docs/layers.md, "LSTM and BiLSTM"): a file's
// HC0 has its halves swapped, both ways, so that a model computes the same in both libraries.
void swap_lstm_hc0(ModelState& state) {
    for (NodeState& n : state.nodes) {
        if (n.name != "lstm") continue;
        for (ParamState& p : n.params)
            if (p.name == "HC0" && p.allocated && !p.values.empty()) {
                const std::size_t half = p.values.size() / 2;
                std::swap_ranges(p.values.begin(), p.values.begin() + static_cast<std::ptrdiff_t>(half),
                                 p.values.begin() + static_cast<std::ptrdiff_t>(half));
            }
    }
}

std::vector<std::vector<std::string>> param_rule(std::string_view kind, std::string_view param) {
    if (kind == "maxout") {
        if (param == "W") return {{"nO", "nP", "nI"}};
        if (param == "b") return {{"nO", "nP"}};
    }
    if (kind == "layernorm") return {{"nI"}};
    if (is_table(kind) && param == "E") return {{"nV", "nO"}};
    if (kind == "cauchy_similarity" && param == "W") return {{"nI"}};
    if (param == "W") return {{"nO", "nI"}};
    if (param == "b") return {{"nO"}};
    return {};
}

class Importer {
public:
    Importer(const Node& model, std::vector<ThincNode> thinc)
        : tree_(model), thinc_(std::move(thinc)), state_(capture(model)), paths_(node_paths(model)) {}

    // Matches the file's tree onto the model and makes the model's new state; throws
    // LoadError where they differ.
    void match_all() {
        if (state_.nodes.size() != tree_.nodes.size()) fail("internal: capture() and walk() disagree", "tenon-E211");
        for (std::size_t i = 0; i < thinc_.size(); ++i)
            if (thinc_[i].n_shims)
                fail(std::string(kSource) + ": node " + std::to_string(i) + " (" + in_quotes(thinc_[i].name) + ") holds " +
                         std::to_string(thinc_[i].n_shims) +
                         " shim(s) (a model of another framework inside Thinc), which tenon cannot load",
                     "tenon-E218");
        const Canon t = canon_tenon(tree_, 0);
        const Canon h = canon_thinc(thinc_, 0);
        match(t, h);
        fill_refs();
        derive_dims(0);
        mark_initialized(0);
    }
    void apply(Node& model) const {
        ModelState st = state_;
        swap_lstm_hc0(st);  // Thinc's HC0 order -> tenon's
        restore(model, st, kSource);
    }

    const std::map<int, int>& pairs() const { return pair_; }  // tenon walk index -> Thinc node
    std::vector<ThincNode>& thinc() { return thinc_; }

private:
    const std::string& path(int t) const { return paths_.at(static_cast<std::size_t>(t)); }
    std::string thinc_node(int h) const {
        return "Thinc node " + std::to_string(h) + " " + in_quotes(thinc_[static_cast<std::size_t>(h)].name);
    }
    [[noreturn]] void differs(int at, const std::string& what, const char* id = "tenon-E211") const {
        fail(std::string(kSource) + " does not fit the model at " + path(at) + ": " + what, id);
    }

    void match(const Canon& t, const Canon& h) {
        if (compare_kind(t.kind) != compare_kind(h.kind))
            differs(t.at, "expected " + shown(t.kind) + " but the Thinc file has " + shown(h.kind) + " (" +
                              thinc_node(h.at) + ")");
        if (t.kind[0] == '?')
            differs(t.at, "tenon's " + shown(t.kind) + " has no Thinc counterpart that from_thinc_bytes can load",
                    "tenon-E215");
        if (t.kind == "remap_ids")
            differs(t.at, "remap_ids keeps its table outside its attributes; loading it from Thinc is not supported",
                    "tenon-E215");
        if (is_table(t.kind) && t.column2d != h.column2d)
            differs(t.at,
                    t.column2d ? "tenon's " + t.kind + " reads its ids from a column of a 2-d input (Thinc: " +
                                     (t.kind == "hashembed" ? "HashEmbed" : "Embed") + "(..., column=c)), but the Thinc file's " +
                                     t.kind + " takes one id per row (column=None) (" + thinc_node(h.at) + ")"
                               : "tenon's " + t.kind + " takes one id per row, but the Thinc file's " + t.kind +
                                     " reads a column of a 2-d input (column=c) (" + thinc_node(h.at) + ")",
                    "tenon-E214");
        const std::size_t n = std::min(t.kids.size(), h.kids.size());
        for (std::size_t i = 0; i < n; ++i) match(t.kids[i], h.kids[i]);
        if (t.kids.size() != h.kids.size())
            differs(t.at, "expected " + shown(t.kind) + " of " + std::to_string(t.kids.size()) + " layers (" +
                              kind_list(t.kids) + ") but the Thinc file's has " + std::to_string(h.kids.size()) + " (" +
                              kind_list(h.kids) + ") (" + thinc_node(h.at) + ")");
        if (t.node >= 0 && h.node >= 0) {
            pair_[t.node] = h.node;
            load_node(t, h);
        }
    }

    void load_node(const Canon& t, const Canon& h) {
        NodeState& s = state_.nodes[static_cast<std::size_t>(t.node)];
        const ThincNode& n = thinc_[static_cast<std::size_t>(h.node)];
        const bool leaf = t.kids.empty();
        // Dims: a layer's must agree; a combinator's are derived from its layers afterwards.
        if (leaf) {
            for (auto& [name, value] : s.dims) {
                const auto* v = find_named(n.dims, name);
                if (!v || !*v) continue;
                if (value != dyn && value != **v)
                    differs(t.node, t.kind + " dim " + name + ": expected " + std::to_string(value) +
                                        " but the Thinc file has " + std::to_string(**v) + " (" + thinc_node(h.node) + ")",
                            "tenon-E212");
                value = **v;
            }
        }
        // Parameters.
        for (const auto& entry : n.params)
            if (std::none_of(s.params.begin(), s.params.end(),
                             [&](const ParamState& p) { return p.name == entry.first; }))
                differs(t.node, "the Thinc file's " + t.kind + " has a parameter " + in_quotes(entry.first) +
                                    " that tenon's does not (" + thinc_node(h.node) + ")",
                        "tenon-E213");
        for (ParamState& p : s.params) {
            const auto* v = find_named(n.params, p.name);
            if (!v)
                differs(t.node, "the Thinc file's " + t.kind + " has no parameter " + in_quotes(p.name) + " (" +
                                    thinc_node(h.node) + ")",
                        "tenon-E213");
            if (!*v) {  // unset in Thinc (an uninitialised model): unset here too, as Thinc's from_dict
                p.allocated = false;
                p.shape.clear();
                p.values.clear();
                continue;
            }
            const ThincArray& a = **v;
            std::vector<std::size_t> expected;
            bool known = true;
            for (const auto& rule : param_rule(t.kind, p.name))
                for (const auto& d : rule) {
                    std::size_t dv = dyn;
                    for (const auto& [dn, x] : s.dims)
                        if (dn == d) dv = x;
                    if (dv == dyn) known = false;
                    expected.push_back(dv);
                }
            if (p.allocated && !p.shape.empty()) {
                expected = p.shape;
                known = true;
            }
            if (known && !expected.empty() && expected != a.shape)
                differs(t.node, t.kind + " parameter " + p.name + ": expected shape " + shape_str(expected) +
                                    " but the Thinc file has " + shape_str(a.shape) + " (" + thinc_node(h.node) + ")",
                        "tenon-E213");
            p.allocated = true;
            p.shape = a.shape;
            p.values = a.values;
        }
        // Attributes the tenon node has: Thinc's value (a table's column may sit on the chain
        // around it); configuration kept in members must agree.
        for (auto& [aname, value] : s.attrs) {
            const std::string* raw = find_named(n.attrs, aname);
            // Thinc's Embed keeps its column on the chain(ints_getitem, embed) only.
            if (aname == "column" && h.column_node >= 0 && (!raw || decode_value(*raw).kind != ThincValue::Int))
                raw = find_named(thinc_[static_cast<std::size_t>(h.column_node)].attrs, aname);
            if (!raw) continue;
            const ThincValue v = decode_value(*raw);
            if (v.kind == ThincValue::None && aname == "column" && is_table(t.kind) && !t.column2d) continue;
            std::optional<Attr> got = convert(v, value);
            if (!got)
                differs(t.node, t.kind + " attribute " + aname + ": tenon holds " + describe(value) +
                                    " but the Thinc file has " + v.describe() + " (" + thinc_node(h.node) + ")",
                        "tenon-E214");
            if (is_fixed_attr(aname) && *got != value)
                differs(t.node, t.kind + " attribute " + aname + ": expected " + describe(value) +
                                    " (set when the model was built) but the Thinc file has " + v.describe() + " (" +
                                    thinc_node(h.node) + ")",
                        "tenon-E214");
            value = *got;
        }
    }

    static std::string describe(const Attr& a) {
        return std::visit(
            [](const auto& x) -> std::string {
                using T = std::decay_t<decltype(x)>;
                if constexpr (std::is_same_v<T, bool>) return x ? "True" : "False";
                else if constexpr (std::is_same_v<T, std::string>) return in_quotes(x);
                else {
                    std::ostringstream o;
                    o << x;
                    return o.str();
                }
            },
            a);
    }
    // Thinc's value as the type the tenon attribute holds, if it is one.
    static std::optional<Attr> convert(const ThincValue& v, const Attr& like) {
        if (std::holds_alternative<bool>(like)) {
            if (v.kind == ThincValue::Bool) return Attr(v.b);
        } else if (std::holds_alternative<std::int64_t>(like)) {
            if (v.kind == ThincValue::Int) return Attr(v.i);
        } else if (std::holds_alternative<double>(like)) {
            if (v.kind == ThincValue::Float) return Attr(v.f);
            if (v.kind == ThincValue::Int) return Attr(static_cast<double>(v.i));
        } else if (v.kind == ThincValue::Str) {
            return Attr(v.s);
        }
        return std::nullopt;
    }

    // References: Thinc's walk index -> the tenon node paired with it.
    void fill_refs() {
        std::unordered_map<int, int> back;
        for (const auto& [t, h] : pair_) back[h] = t;
        for (const auto& [t, h] : pair_) {
            NodeState& s = state_.nodes[static_cast<std::size_t>(t)];
            for (auto& [rname, target] : s.refs) {
                const auto* r = find_named(thinc_[static_cast<std::size_t>(h)].refs, rname);
                if (!r) continue;
                if (!*r) {
                    target.reset();
                    continue;
                }
                const auto it = back.find(static_cast<int>(**r));
                if (it == back.end())
                    differs(t, "reference " + in_quotes(rname) + " points to " + thinc_node(static_cast<int>(**r)) +
                                   ", which has no tenon counterpart",
                            "tenon-E217");
                target = static_cast<std::size_t>(it->second);
            }
        }
    }

    std::size_t dim_of(int t, std::string_view name) const {
        for (const auto& [n, v] : state_.nodes[static_cast<std::size_t>(t)].dims)
            if (n == name) return v;
        return dyn;
    }
    void set_if_unknown(int t, std::string_view name, std::size_t v) {
        if (v == dyn) return;
        for (auto& [n, x] : state_.nodes[static_cast<std::size_t>(t)].dims)
            if (n == name && x == dyn) x = v;
    }
    // Combinators' widths from their layers (where the model does not know them yet), as their
    // initialize would set them.
    void derive_dims(int t) {
        const auto& kids = tree_.children[static_cast<std::size_t>(t)];
        for (int k : kids) derive_dims(k);
        if (kids.empty()) return;
        const std::string& kind = tree_.kinds[static_cast<std::size_t>(t)];
        if (kind == "chain" || kind == "clone" || kind == "transparent" || is_wrapper(kind) || kind == "add") {
            const bool seq = kind == "chain" || kind == "clone";
            set_if_unknown(t, "nI", dim_of(kids.front(), "nI"));
            set_if_unknown(t, "nO", dim_of(seq ? kids.back() : kids.front(), "nO"));
        } else if (kind == "concatenate") {
            std::size_t sum = 0;
            for (int k : kids) {
                const std::size_t o = dim_of(k, "nO");
                sum = (sum == dyn || o == dyn) ? dyn : sum + o;
                if (dim_of(t, "nI") == dyn) set_if_unknown(t, "nI", dim_of(k, "nI"));
            }
            set_if_unknown(t, "nO", sum);
        } else if (kind == "siamese") {
            set_if_unknown(t, "nI", dim_of(kids.front(), "nI"));
            set_if_unknown(t, "nO", dim_of(kids.back(), "nO"));
        }
    }
    // A node is ready when every parameter in it and below it is set.
    bool mark_initialized(int t) {
        bool ok = true;
        for (int k : tree_.children[static_cast<std::size_t>(t)]) ok = mark_initialized(k) && ok;
        NodeState& s = state_.nodes[static_cast<std::size_t>(t)];
        for (const ParamState& p : s.params) ok = ok && p.allocated;
        s.initialized = ok;
        return ok;
    }

    TenonTree tree_;
    std::vector<ThincNode> thinc_;
    ModelState state_;
    std::vector<std::string> paths_;
    std::map<int, int> pair_;  // tenon walk index -> Thinc node index
};

// ---------------------------------------------------------------------------------------------
// Writing msgpack
// ---------------------------------------------------------------------------------------------
using Packer = msgpack::packer<msgpack::sbuffer>;
void pack_text(Packer& pk, std::string_view s) {
    pk.pack_str(static_cast<std::uint32_t>(s.size()));
    pk.pack_str_body(s.data(), static_cast<std::uint32_t>(s.size()));
}
void pack_bytes(Packer& pk, std::string_view s) {
    pk.pack_bin(static_cast<std::uint32_t>(s.size()));
    pk.pack_bin_body(s.data(), static_cast<std::uint32_t>(s.size()));
}
void pack_int(Packer& pk, std::int64_t v) {
    if (v >= 0) pk.pack_uint64(static_cast<std::uint64_t>(v));
    else pk.pack_int64(v);
}
// A float64 as Python's msgpack writes every float (msgpack-c's pack_double writes a double
// that holds an integer as an integer, which Thinc would read back as a Python int).
void pack_f64(msgpack::sbuffer& buf, double x) {
    std::uint64_t u;
    std::memcpy(&u, &x, 8);
    char b[9];
    b[0] = static_cast<char>(0xcb);
    for (int i = 0; i < 8; ++i) b[1 + i] = static_cast<char>((u >> (56 - 8 * i)) & 0xff);
    buf.write(b, 9);
}
// An attribute value as srsly.msgpack_dumps writes it (None for std::nullopt).
std::string attr_bytes(const std::optional<Attr>& a) {
    msgpack::sbuffer buf;
    Packer pk(&buf);
    if (!a) pk.pack_nil();
    else
        std::visit(
            [&](const auto& x) {
                using T = std::decay_t<decltype(x)>;
                if constexpr (std::is_same_v<T, bool>) x ? pk.pack_true() : pk.pack_false();
                else if constexpr (std::is_same_v<T, std::int64_t>) pack_int(pk, x);
                else if constexpr (std::is_same_v<T, double>) pack_f64(buf, x);
                else pack_text(pk, x);
            },
            *a);
    return std::string(buf.data(), buf.size());
}
void pack_array(Packer& pk, const std::vector<std::size_t>& shape, const std::vector<float>& values) {
    pk.pack_map(5);
    pack_bytes(pk, "nd");
    pk.pack_true();
    pack_bytes(pk, "type");
    pack_text(pk, "<f4");
    pack_bytes(pk, "kind");
    pack_bytes(pk, "");
    pack_bytes(pk, "shape");
    pk.pack_array(static_cast<std::uint32_t>(shape.size()));
    for (std::size_t d : shape) pk.pack_uint64(d);
    pack_bytes(pk, "data");
    std::string data(values.size() * 4, '\0');
    for (std::size_t i = 0; i < values.size(); ++i) {
        std::uint32_t u;
        std::memcpy(&u, &values[i], 4);
        for (int b = 0; b < 4; ++b) data[4 * i + b] = static_cast<char>((u >> (8 * b)) & 0xff);
    }
    pack_bytes(pk, data);
}

// A parameter to write: its name and values (none: None, an unset parameter).
struct ParamRef {
    std::string name;
    const std::vector<std::size_t>* shape = nullptr;
    const std::vector<float>* values = nullptr;
    static ParamRef of(const ParamState& p) {
        return p.allocated ? ParamRef{p.name, &p.shape, &p.values} : ParamRef{p.name, nullptr, nullptr};
    }
};

// The file Thinc's to_bytes writes for these nodes (in its walk order) and parameters.
std::vector<std::uint8_t> encode_thinc(const std::vector<const ThincNode*>& nodes,
                                       const std::vector<std::vector<ParamRef>>& params) {
    msgpack::sbuffer buf;
    Packer pk(&buf);
    const auto n_nodes = static_cast<std::uint32_t>(nodes.size());
    pk.pack_map(4);
    pack_text(pk, "nodes");
    pk.pack_array(n_nodes);
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        const ThincNode& n = *nodes[i];
        pk.pack_map(4);
        pack_text(pk, "index");
        pk.pack_uint64(i);
        pack_text(pk, "name");
        pack_text(pk, n.name);
        for (const auto* m : {&n.dims, &n.refs}) {
            pack_text(pk, m == &n.dims ? "dims" : "refs");
            pk.pack_map(static_cast<std::uint32_t>(m->size()));
            for (const auto& [d, v] : *m) {
                pack_text(pk, d);
                v ? pk.pack_uint64(*v) : pk.pack_nil();
            }
        }
    }
    pack_text(pk, "attrs");
    pk.pack_array(n_nodes);
    for (const ThincNode* n : nodes) {
        pk.pack_map(static_cast<std::uint32_t>(n->attrs.size()));
        for (const auto& [a, raw] : n->attrs) {
            pack_text(pk, a);
            pack_bytes(pk, raw);
        }
    }
    pack_text(pk, "params");
    pk.pack_array(n_nodes);
    for (const auto& ps : params) {
        pk.pack_map(static_cast<std::uint32_t>(ps.size()));
        for (const ParamRef& p : ps) {
            pack_text(pk, p.name);
            if (p.values) pack_array(pk, *p.shape, *p.values);
            else pk.pack_nil();
        }
    }
    pack_text(pk, "shims");
    pk.pack_array(n_nodes);
    for (std::uint32_t i = 0; i < n_nodes; ++i) pk.pack_array(0);
    return std::vector<std::uint8_t>(reinterpret_cast<const std::uint8_t*>(buf.data()),
                                     reinterpret_cast<const std::uint8_t*>(buf.data()) + buf.size());
}

// ---------------------------------------------------------------------------------------------
// Writing: the tree Thinc's constructors build for the model
// ---------------------------------------------------------------------------------------------
class Exporter {
public:
    explicit Exporter(const Node& model) : tree_(model), state_(capture_to_save(model)), paths_(node_paths(model)) {
        swap_lstm_hc0(state_);  // tenon's HC0 order -> Thinc's
    }

    std::vector<std::uint8_t> run() {
        const std::size_t root = emit(0);
        // Thinc's walk: breadth-first.
        std::vector<std::size_t> order{root};
        for (std::size_t i = 0; i < order.size(); ++i)
            for (std::size_t c : out_[order[i]].children) order.push_back(c);
        std::vector<std::size_t> bfs_of(out_.size());
        for (std::size_t i = 0; i < order.size(); ++i) bfs_of[order[i]] = i;
        std::unordered_map<int, std::size_t> of_tenon;
        for (std::size_t i = 0; i < out_.size(); ++i)
            if (out_[i].tenon >= 0 && !of_tenon.count(out_[i].tenon)) of_tenon[out_[i].tenon] = bfs_of[i];
        std::vector<const ThincNode*> nodes;
        std::vector<std::vector<ParamRef>> params;
        for (std::size_t o : order) {
            ThincNode& n = out_[o];
            nodes.push_back(&n);
            params.emplace_back();
            if (n.tenon < 0) continue;
            for (const auto& [r, target] : st(n.tenon).refs) {
                if (!target) {
                    n.refs.emplace_back(r, std::nullopt);
                    continue;
                }
                const auto it = of_tenon.find(static_cast<int>(*target));
                if (it == of_tenon.end())
                    refuse(n.tenon, "reference " + in_quotes(r) + " points to " + path(static_cast<int>(*target)) +
                                        ", which has no node of its own in Thinc's tree",
                           "tenon-E217");
                n.refs.emplace_back(r, it->second);
            }
            for (const ParamState& p : st(n.tenon).params) params.back().push_back(ParamRef::of(p));
        }
        return encode_thinc(nodes, params);
    }

private:
    const std::string& path(int t) const { return paths_.at(static_cast<std::size_t>(t)); }
    [[noreturn]] void refuse(int t, const std::string& what, const char* id = "tenon-E215") const {
        throw Error("to_thinc_bytes: " + path(t) + ": " + what, id);
    }
    const NodeState& st(int t) const { return state_.nodes[static_cast<std::size_t>(t)]; }
    std::optional<std::size_t> tdim(int t, std::string_view name) const {
        for (const auto& [n, v] : st(t).dims)
            if (n == name) return v == dyn ? std::nullopt : std::optional<std::size_t>(v);
        return std::nullopt;
    }
    const Attr* tattr(int t, std::string_view name) const { return find_named(st(t).attrs, name); }
    static std::optional<std::size_t> odim(const ThincNode& n, std::string_view name) {
        const auto* v = find_named(n.dims, name);
        return v ? *v : std::nullopt;
    }
    static bool declares(const ThincNode& n, std::string_view name) { return find_named(n.dims, name) != nullptr; }

    std::size_t add(ThincNode n) {
        out_.push_back(std::move(n));
        return out_.size() - 1;
    }
    void put_attr(ThincNode& n, int t, const char* name) {
        if (const Attr* a = tattr(t, name)) n.attrs.emplace_back(name, attr_bytes(*a));
    }

    // A layer: Thinc's name, dims (in the order Thinc declares them), attributes and params.
    std::size_t leaf(int t, const std::string& kind) {
        ThincNode n;
        n.name = kind;
        n.tenon = t;
        auto dims = [&](std::initializer_list<const char*> names) {
            for (const char* d : names) n.dims.emplace_back(d, tdim(t, d));
        };
        if (kind == "linear" || kind == "relu" || kind == "mish" || kind == "gelu" || kind == "swish" ||
            kind == "hardswish" || kind == "sigmoid" || kind == "softmax")
            dims({"nO", "nI"});
        else if (kind == "maxout") dims({"nO", "nI", "nP"});
        else if (kind == "layernorm" || kind == "cauchy_similarity") dims({"nI", "nO"});
        else if (kind == "hashembed") dims({"nO", "nV", "nI"});
        else if (kind == "embed") dims({"nO", "nV"});
        else if (kind == "lstm") dims({"nO", "nI", "depth", "dirs"});
        if (kind == "dropout") {
            put_attr(n, t, "dropout_rate");
            put_attr(n, t, "is_enabled");
        } else if (kind == "softmax") {
            put_attr(n, t, "softmax_normalize");
            put_attr(n, t, "softmax_temperature");
        } else if (kind == "expand_window") {
            put_attr(n, t, "window_size");
        } else if (kind == "lstm") {  // LSTM(nO, nI, bi=, depth=, dropout=): attrs {registry_name, dropout_rate}
            n.attrs.emplace_back("registry_name", attr_bytes(Attr(std::string("LSTM.v1"))));
            put_attr(n, t, "dropout_rate");
        } else if (kind == "hashembed") {
            // HashEmbed(nO, nV, seed=, column=, dropout=): attrs {column, seed[, dropout_rate]}.
            n.attrs.emplace_back("column", table_input_rank(*tree_.nodes[static_cast<std::size_t>(t)]) == 2
                                               ? attr_bytes(*tattr(t, "column"))
                                               : attr_bytes(std::nullopt));
            put_attr(n, t, "seed");
            put_attr(n, t, "dropout_rate");
        } else if (kind == "embed") {
            // Embed(nO, nV, column=, dropout=): attrs {[dropout_rate]}, then column=None when
            // there is no column (with one, the column goes on the chain around it).
            put_attr(n, t, "dropout_rate");
            if (table_input_rank(*tree_.nodes[static_cast<std::size_t>(t)]) != 2)
                n.attrs.emplace_back("column", attr_bytes(std::nullopt));
        }
        return add(std::move(n));
    }

    // chain(a, b, ...) as Thinc's chain() makes it: dims nO, and nI if the first layer declares
    // it; after initialize, nI is the first layer's and nO the last one's (or the output width:
    // the model's own value where the last layer has no nO).
    std::size_t chain(std::vector<std::size_t> kids, int partner) {
        ThincNode n;
        std::vector<std::string_view> names;
        for (std::size_t k : kids) names.push_back(out_[k].name);
        n.name = join(names, ">>");
        const ThincNode& first = out_[kids.front()];
        const ThincNode& last = out_[kids.back()];
        std::optional<std::size_t> nO = odim(last, "nO");
        if (!nO && partner >= 0) nO = tdim(partner, "nO");
        n.dims.emplace_back("nO", nO);
        if (declares(first, "nI")) n.dims.emplace_back("nI", odim(first, "nI"));
        n.children = std::move(kids);
        return add(std::move(n));
    }

    std::size_t emit(int t) {
        const std::string& kind = tree_.kinds[static_cast<std::size_t>(t)];
        const auto& kids = tree_.children[static_cast<std::size_t>(t)];
        const std::string& name = tree_.nodes[static_cast<std::size_t>(t)]->name();
        if (kind == "transparent") return emit(kids[0]);
        if (kind == "clone") {  // clone(L, n): L itself for n == 1, else chain(L, L.copy(), ...)
            if (kids.size() == 1) return emit(kids[0]);
            std::vector<std::size_t> c;
            for (int k : kids) c.push_back(emit(k));
            return chain(std::move(c), -1);
        }
        if (kind == "dense_tail") {  // Relu(..., normalize, dropout): chain(chain(relu, layernorm), dropout)
            std::size_t base = leaf(t, name);
            for (int k : kids) base = chain({base, emit(k)}, t);
            return base;
        }
        if (kind == "chain") {
            std::vector<std::size_t> c;
            for (int k : kids) c.push_back(emit(k));
            const std::size_t i = chain(std::move(c), t);
            out_[i].tenon = t;
            return i;
        }
        if (kind == "remap_ids")
            refuse(t, "remap_ids keeps its table outside its attributes; writing it for Thinc is not supported");
        if (kids.empty() && is_leaf_kind(kind)) {
            const std::size_t l = leaf(t, kind);
            if (is_table(kind) && table_input_rank(*tree_.nodes[static_cast<std::size_t>(t)]) == 2) {
                // HashEmbed(..., column=c) / Embed(..., column=c): chain(ints_getitem((slice, c)), table),
                // with attrs {column: c} on the chain. Thinc does not save the getitem's index (not
                // msgpack-able), so the node has no attrs.
                ThincNode g;
                g.name = "ints-getitem";
                const std::size_t gi = add(std::move(g));
                const std::size_t c = chain({gi, l}, t);
                out_[c].attrs.emplace_back("column", attr_bytes(*tattr(t, "column")));
                return c;
            }
            return l;
        }
        if (kind == "concatenate" || kind == "add") {
            ThincNode n;
            n.tenon = t;
            std::vector<std::string_view> names;
            for (int k : kids) n.children.push_back(emit(k));
            for (std::size_t c : n.children) names.push_back(out_[c].name);
            n.name = kind == "add" ? "add" : join(names, "|");
            const bool all_nI = std::all_of(n.children.begin(), n.children.end(),
                                            [&](std::size_t c) { return declares(out_[c], "nI"); });
            // Thinc's init: nI is the input's width; nO the sum of the layers' (concatenate,
            // where all have one) or the first layer's (add).
            std::optional<std::size_t> nO, nI = tdim(t, "nI");
            if (!nI) nI = odim(out_[n.children[0]], "nI");
            if (kind == "concatenate") {
                std::size_t sum = 0;
                bool known = true;
                for (std::size_t c : n.children) {
                    const auto o = odim(out_[c], "nO");
                    if (o) sum += *o;
                    else known = false;
                }
                if (known) nO = sum;
            } else {
                nO = odim(out_[n.children[0]], "nO");
            }
            n.dims.emplace_back("nO", nO);
            if (all_nI) n.dims.emplace_back("nI", nI);
            return add(std::move(n));
        }
        if (kids.size() == 1 && is_wrapper(kind)) {
            ThincNode n;
            n.tenon = t;
            n.children.push_back(emit(kids[0]));
            const ThincNode& c = out_[n.children[0]];
            n.name = (kind == "with_array2d" ? std::string("with_array") : kind) + "(" + c.name + ")";
            if (kind == "with_array" || kind == "with_array2d" || kind == "with_list" || kind == "with_padded") {
                n.dims = c.dims;  // Thinc copies the layer's dims
                if (kind == "with_array" || kind == "with_array2d") put_attr(n, t, "pad");
            } else if (kind == "residual" || kind == "with_reshape" || kind == "uniqued") {
                // Thinc sets these from the layer's dims, where it has them.
                n.dims = {{"nO", odim(c, "nO")}, {"nI", odim(c, "nI")}};
                if (kind == "uniqued") put_attr(n, t, "column");
            } else if (kind == "with_getitem") {
                put_attr(n, t, "idx");
            }
            return add(std::move(n));
        }
        if (kids.size() == 2 && (kind == "siamese" || kind == "bidirectional")) {
            ThincNode n;
            n.tenon = t;
            n.children = {emit(kids[0]), emit(kids[1])};
            const ThincNode& a = out_[n.children[0]];
            const ThincNode& b = out_[n.children[1]];
            if (kind == "siamese") {
                n.name = "siamese(" + a.name + ", " + b.name + ")";
                n.dims = {{"nI", odim(a, "nI")}, {"nO", odim(b, "nO")}};
            } else {
                n.name = "bi" + a.name;
            }
            return add(std::move(n));
        }
        refuse(t, in_quotes(name) + " has no Thinc counterpart that to_thinc_bytes can write (it writes Thinc's layers "
                                 "and combinators that tenon has: see docs/serialization.md, \"Thinc interop\")");
    }

    TenonTree tree_;
    ModelState state_;
    std::vector<std::string> paths_;
    std::vector<ThincNode> out_;
};

}  // namespace

std::vector<std::uint8_t> to_thinc_bytes(const Node& model) { return Exporter(model).run(); }

void to_thinc_disk(const Node& model, const std::string& path) {
    const std::vector<std::uint8_t> bytes = to_thinc_bytes(model);
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    if (f) f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    if (!f) throw Error("to_thinc_disk: cannot write " + in_quotes(path), "tenon-E216");
}

std::vector<std::uint8_t> to_thinc_bytes(const Node& model, std::span<const std::uint8_t> like) {
    std::vector<ThincNode> nodes = parse_thinc(like);
    rebuild_tree(nodes);
    ModelState own = capture_to_save(model);
    swap_lstm_hc0(own);  // tenon's HC0 order -> Thinc's
    Importer match(model, std::move(nodes));
    match.match_all();  // the template's tree, layer by layer, is the model's
    std::vector<ThincNode>& out = match.thinc();
    std::vector<std::vector<ParamRef>> params(out.size());
    std::vector<bool> paired(out.size(), false);
    for (const auto& [t, h] : match.pairs()) {
        paired[static_cast<std::size_t>(h)] = true;
        const NodeState& s = own.nodes[static_cast<std::size_t>(t)];
        ThincNode& n = out[static_cast<std::size_t>(h)];
        for (auto& [d, v] : n.dims)
            if (const std::size_t* x = find_named(s.dims, d); x && *x != dyn) v = *x;
        for (auto& [a, raw] : n.attrs)
            if (const Attr* x = find_named(s.attrs, a); x && !(a == "column" && decode_value(raw).kind == ThincValue::None))
                raw = attr_bytes(*x);
        for (const auto& entry : n.params) {
            auto it = std::find_if(s.params.begin(), s.params.end(),
                                   [&](const ParamState& p) { return p.name == entry.first; });
            params[static_cast<std::size_t>(h)].push_back(ParamRef::of(*it));  // match_all checked the names
        }
    }
    std::vector<const ThincNode*> order;
    for (std::size_t h = 0; h < out.size(); ++h) {
        order.push_back(&out[h]);
        if (!paired[h])
            for (const auto& [pname, a] : out[h].params)
                params[h].push_back(a ? ParamRef{pname, &a->shape, &a->values} : ParamRef{pname, nullptr, nullptr});
    }
    return encode_thinc(order, params);
}

void from_thinc_bytes(Node& model, std::span<const std::uint8_t> data) {
    std::vector<ThincNode> nodes = parse_thinc(data);
    rebuild_tree(nodes);
    Importer match(model, std::move(nodes));
    match.match_all();
    match.apply(model);
}

void from_thinc_disk(Node& model, const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) throw LoadError("from_thinc_disk: cannot open " + in_quotes(path), "tenon-E216");
    std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    if (f.bad()) throw LoadError("from_thinc_disk: cannot read " + in_quotes(path), "tenon-E216");
    from_thinc_bytes(model, bytes);
}

}  // namespace tenon
