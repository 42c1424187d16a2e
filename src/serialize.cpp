// Model files (tenon/io/serialize.hpp) and model states (tenon/io/state.hpp): the envelope,
// the cereal-encoded body, and restore(), which checks everything before it changes anything.
#include "tenon/io/serialize.hpp"
#include "tenon/model/finite.hpp"

#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cereal/archives/portable_binary.hpp>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <istream>
#include <limits>
#include <map>
#include <ostream>
#include <sstream>
#include <streambuf>

#include "tenon/random.hpp"

namespace tenon {

namespace detail {
// The loader's access to Node's and Optimizer's private state.
struct NodeAccess {
    using Dim = Node::Dim;
    using Param = Node::Param;
    static const std::vector<Dim>& dims(const Node& n) { return n.dims_; }
    static const std::vector<Param>& params(const Node& n) { return n.params_; }
    static const std::vector<std::pair<std::string, Attr>>& attrs(const Node& n) { return n.attrs_; }
    static const std::vector<std::pair<std::string, Node*>>& refs(const Node& n) { return n.refs_; }
    static bool initialized(const Node& n) { return n.initialized_; }
    static void set_initialized(Node& n, bool v) noexcept { n.initialized_ = v; }
    // A dim's value as get_dim reads it (its owner's where the node follows one), dyn if unknown.
    static std::size_t dim_value(const Node& n, std::string_view name) {
        return n.has_dim(name) ? n.get_dim(name) : dyn;
    }

    // What restore() puts into a node, made in full before any node changes.
    struct Staged {
        std::vector<Dim> dims;
        std::vector<Param> params;
        std::vector<std::pair<std::string, Attr>> attrs;
        std::vector<std::pair<std::string, Node*>> refs;
        std::function<void()> extra;  // the layer's own state (Node::load_extra)
        bool initialized = false;
    };
    static void commit(Node& n, Staged& s) noexcept {
        n.dims_.swap(s.dims);
        n.params_.swap(s.params);
        for (auto& p : n.params_) p.stamp.renew();  // loaded values (a frozen plan copies them again)
        n.attrs_.swap(s.attrs);
        n.refs_.swap(s.refs);
        n.initialized_ = s.initialized;
        if (s.extra) s.extra();
        detail::layout_changed();
        n.life_changed();  // the loaded arrays replace the ones a backprop may point at
    }
    // A loaded parameter's arrays: in the node's backend's memory (a device model loads onto the device).
    static Floats1d new_array(const Node& node, std::size_t n) { return Floats1d({n}, node.ops().memory()); }
};

struct OptimizerAccess {
    using State = Optimizer::State;
    static OptimizerOptions& options(Optimizer& o) { return o.opts_; }
    static std::map<std::pair<std::uint64_t, std::string>, State>& states(Optimizer& o) { return o.state_; }
    static const std::map<std::pair<std::uint64_t, std::string>, State>& states(const Optimizer& o) {
        return o.state_;
    }
    static std::size_t& skipped(Optimizer& o) { return o.skipped_; }
};
}  // namespace detail

namespace {

constexpr std::size_t npos = std::numeric_limits<std::size_t>::max();
constexpr std::uint64_t kNone = std::numeric_limits<std::uint64_t>::max();

// ---- paths ------------------------------------------------------------------------------

// Whether `c` occurs in `s` outside parentheses.
bool top_level(std::string_view s, std::string_view sep) {
    int depth = 0;
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '(') ++depth;
        else if (s[i] == ')') --depth;
        else if (depth == 0 && s.substr(i, sep.size()) == sep) return true;
    }
    return false;
}

struct Walked {
    std::vector<Node*> nodes;
    std::vector<std::string> paths;
    std::vector<std::size_t> n_children;
};

// Where each node's children start in a breadth-first list, from the children's counts.
std::vector<std::size_t> first_children(const std::vector<std::size_t>& counts) {
    std::vector<std::size_t> first(counts.size());
    std::size_t next = 1;
    for (std::size_t i = 0; i < counts.size(); ++i) {
        first[i] = next;
        next += counts[i];
    }
    return first;
}

Walked walk_with_paths(Node& root) {
    Walked w;
    std::deque<std::pair<Node*, std::string>> queue{{&root, node_kind(root.name())}};
    while (!queue.empty()) {
        auto [n, path] = std::move(queue.front());
        queue.pop_front();
        std::vector<Node*> children;
        n->for_each_child([&](Node& c) { children.push_back(&c); });
        for (std::size_t i = 0; i < children.size(); ++i)
            queue.emplace_back(children[i], path + ">" + (children.size() > 1 ? std::to_string(i) + ">" : "") +
                                                node_kind(children[i]->name()));
        w.nodes.push_back(n);
        w.paths.push_back(std::move(path));
        w.n_children.push_back(children.size());
    }
    return w;
}

// ---- the file's view of a tree ------------------------------------------------------------
// A model file records what a model computes, not how the program holds it: an AnyModel's
// node ("any(relu)": one child, nothing of its own) is the model it holds, and a chain inside
// a chain is its layers (as chain() flattens one). So the model a config builds (AnyModels and
// run-time chains, config/registry.hpp) and the static type `tenon codegen` writes for it have
// the same file, and either loads the other's. (Likewise a concatenate in a concatenate, an add
// in an add: a | b | c computes what (a | b) | c does.) restore() sees a file and a model this way;
// to_bytes() writes this view.

[[noreturn]] void fail(const std::string& msg, const char* id);

// A name with each "any(...)" wrapper taken out: "residual(any(relu))" -> "residual(relu)".
std::string file_name(std::string_view name) {
    std::string out;
    std::vector<bool> dropped;  // per open parenthesis: whether its ")" is an any( wrapper's
    for (std::size_t i = 0; i < name.size(); ++i) {
        const bool starts = i == 0 || std::strchr("(>|+, ", name[i - 1]) != nullptr;
        if (starts && name.substr(i, 4) == "any(") {
            dropped.push_back(true);
            i += 3;
            continue;
        }
        if (name[i] == '(') {
            dropped.push_back(false);
        } else if (name[i] == ')' && !dropped.empty()) {
            const bool d = dropped.back();
            dropped.pop_back();
            if (d) continue;
        }
        out += name[i];
    }
    return out;
}

// The view of a tree given breadth-first by its names and child counts.
struct FileView {
    std::vector<std::size_t> order;       // the nodes kept (indices into the input), breadth-first
    std::vector<std::size_t> n_children;  // each kept node's children in the view
    std::vector<std::size_t> hidden;      // the nodes left out, each before the nodes below it
};
FileView file_view(const std::vector<std::string>& names, const std::vector<std::size_t>& counts) {
    const auto first = first_children(counts);
    auto holder = [&](std::size_t i) {
        return counts[i] == 1 && first[i] < names.size() && names[i] == "any(" + names[first[i]] + ")";
    };
    // A flat pack (chain, concatenate, add: their names join the layers' with ">>", "|", "+"),
    // or none.
    auto pack = [&](std::size_t i) -> std::string {
        if (counts[i] < 2) return {};
        std::string k = node_kind(names[i]);
        return k == "chain" || k == "concatenate" || k == "add" ? k : std::string();
    };
    FileView v;
    // The nodes that stand in the view where node i stands in the tree (in a pack of kind `in`).
    std::function<void(std::size_t, const std::string&, std::vector<std::size_t>&)> expand =
        [&](std::size_t i, const std::string& in, std::vector<std::size_t>& out) {
            if (holder(i)) {
                v.hidden.push_back(i);
                expand(first[i], in, out);
            } else if (!in.empty() && pack(i) == in) {
                v.hidden.push_back(i);
                for (std::size_t c = 0; c < counts[i]; ++c) expand(first[i] + c, in, out);
            } else {
                out.push_back(i);
            }
        };
    if (names.empty()) return v;
    std::vector<std::size_t> level;
    expand(0, std::string(), level);
    std::deque<std::size_t> queue(level.begin(), level.end());
    while (!queue.empty()) {
        const std::size_t i = queue.front();
        queue.pop_front();
        std::vector<std::size_t> kids;
        const std::string kind = pack(i);
        for (std::size_t c = 0; c < counts[i]; ++c) expand(first[i] + c, kind, kids);
        v.order.push_back(i);
        v.n_children.push_back(kids.size());
        queue.insert(queue.end(), kids.begin(), kids.end());
    }
    return v;
}

// A model's nodes in the file's view, with their paths (from the view's tree), and the nodes
// the view leaves out.
struct FileWalk : Walked {
    std::vector<Node*> hidden;
};
FileWalk file_walk(Node& root) {
    const Walked raw = walk_with_paths(root);
    std::vector<std::string> names;
    for (const Node* n : raw.nodes) names.push_back(n->name());
    const FileView v = file_view(names, raw.n_children);
    FileWalk w;
    for (std::size_t i : v.hidden) w.hidden.push_back(raw.nodes[i]);
    const auto first = first_children(v.n_children);
    w.paths.resize(v.order.size());
    if (!v.order.empty()) w.paths[0] = node_kind(file_name(names[v.order[0]]));
    for (std::size_t k = 0; k < v.order.size(); ++k) {
        w.nodes.push_back(raw.nodes[v.order[k]]);
        w.n_children.push_back(v.n_children[k]);
        for (std::size_t c = 0; c < v.n_children[k]; ++c)
            w.paths[first[k] + c] = w.paths[k] + ">" + (v.n_children[k] > 1 ? std::to_string(c) + ">" : "") +
                                    node_kind(file_name(names[v.order[first[k] + c]]));
    }
    return w;
}

// A state in the file's view (references renumbered; one into a node left out is an error).
ModelState file_state(ModelState st) {
    std::vector<std::string> names;
    std::vector<std::size_t> counts;
    for (const auto& n : st.nodes) {
        names.push_back(n.name);
        counts.push_back(n.n_children);
    }
    const FileView v = file_view(names, counts);
    if (v.hidden.empty()) return st;
    std::vector<std::size_t> index(st.nodes.size(), npos);
    for (std::size_t k = 0; k < v.order.size(); ++k) index[v.order[k]] = k;
    for (std::size_t i : v.hidden)
        if (!st.nodes[i].params.empty())
            fail("corrupted file: node '" + st.nodes[i].name + "' holds a model and has parameters of its own",
                 "tenon-E202");
    ModelState out;
    for (std::size_t k = 0; k < v.order.size(); ++k) {
        NodeState n = std::move(st.nodes[v.order[k]]);
        n.name = file_name(n.name);
        n.n_children = v.n_children[k];
        for (auto& [rname, target] : n.refs)
            if (target) {
                if (*target >= index.size() || index[*target] == npos)
                    fail("node '" + n.name + "': reference '" + rname + "' points at a node that holds a model",
                         "tenon-E207");
                target = index[*target];
            }
        out.nodes.push_back(std::move(n));
    }
    return out;
}

// ---- errors -------------------------------------------------------------------------------

[[noreturn]] void fail(const std::string& msg, const char* id) { throw LoadError(msg, id); }


std::string shape_text(const std::vector<std::size_t>& s) {
    std::string out = "(";
    for (std::size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
    return out + (s.size() == 1 ? ",)" : ")");
}

std::string attr_text(const Attr& a) {
    return std::visit(
        [](const auto& v) -> std::string {
            using T = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<T, bool>) return v ? "true" : "false";
            else if constexpr (std::is_same_v<T, std::string>) return "'" + v.substr(0, 60) + (v.size() > 60 ? "...'" : "'");
            else return std::to_string(v);
        },
        a);
}

const char* attr_type(const Attr& a) {
    switch (a.index()) {
        case 0: return "bool";
        case 1: return "an integer";
        case 2: return "a number";
        default: return "a string";
    }
}

// ---- the envelope -------------------------------------------------------------------------

// 0x89 first (not ASCII: a file that went through a text conversion is caught), then the
// name, then CR LF (a line-ending conversion is caught too).
constexpr std::uint8_t kMagic[8] = {0x89, 'T', 'E', 'N', 'O', 'N', '\r', '\n'};
constexpr std::size_t kHeader = 32;
enum class Kind : std::uint32_t { model = 1, optimizer = 2, checkpoint = 3 };

const char* kind_name(std::uint32_t k) {
    switch (k) {
        case 1: return "a model";
        case 2: return "an optimizer state";
        case 3: return "a training checkpoint";
        default: return "an unknown kind of content";
    }
}

std::uint32_t crc_of(const std::uint8_t* p, std::size_t n) {
    uLong crc = crc32(0L, Z_NULL, 0);
    while (n > 0) {
        const auto part = static_cast<uInt>(std::min<std::size_t>(n, 1u << 30));
        crc = crc32(crc, p, part);
        p += part;
        n -= part;
    }
    return static_cast<std::uint32_t>(crc);
}

void put_le(std::uint8_t* p, std::uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) p[i] = static_cast<std::uint8_t>(v >> (8 * i));
}
std::uint64_t get_le(const std::uint8_t* p, int bytes) {
    std::uint64_t v = 0;
    for (int i = 0; i < bytes; ++i) v |= static_cast<std::uint64_t>(p[i]) << (8 * i);
    return v;
}

std::vector<std::uint8_t> envelope(Kind kind, const std::string& body) {
    std::vector<std::uint8_t> out(kHeader + body.size());
    std::memcpy(out.data(), kMagic, 8);
    put_le(out.data() + 8, model_file_version, 4);
    put_le(out.data() + 12, static_cast<std::uint32_t>(kind), 4);
    put_le(out.data() + 16, body.size(), 8);
    std::memcpy(out.data() + kHeader, body.data(), body.size());
    put_le(out.data() + 24, crc_of(out.data() + kHeader, body.size()), 4);
    put_le(out.data() + 28, 0, 4);
    return out;
}

// The body of a well-formed envelope of the given kind, and the format version it was written in.
struct Opened {
    std::span<const std::uint8_t> body;
    std::uint32_t version;
};
Opened open_envelope(std::span<const std::uint8_t> data, Kind kind) {
    if (data.size() < 8 || std::memcmp(data.data(), kMagic, 8) != 0)
        fail("not a tenon file: expected the magic bytes \\x89TENON\\r\\n at the start" +
                 std::string(data.size() < 8 ? " (the data has only " + std::to_string(data.size()) + " bytes)" : ""),
             "tenon-E200");
    if (data.size() < kHeader)
        fail("truncated file: expected a " + std::to_string(kHeader) + "-byte header but found " +
                 std::to_string(data.size()) + " bytes",
             "tenon-E202");
    const auto version = static_cast<std::uint32_t>(get_le(data.data() + 8, 4));
    if (version == 0 || version > model_file_version)
        fail("the file has format version " + std::to_string(version) + "; this build of tenon reads versions 1 to " +
                 std::to_string(model_file_version) + (version ? " (it was written by a newer tenon)" : ""),
             "tenon-E201");
    const auto k = static_cast<std::uint32_t>(get_le(data.data() + 12, 4));
    if (k != static_cast<std::uint32_t>(kind))
        fail(std::string("expected ") + kind_name(static_cast<std::uint32_t>(kind)) + " file but found " +
                 kind_name(k),
             "tenon-E200");
    const std::uint64_t len = get_le(data.data() + 16, 8);
    if (len != data.size() - kHeader)
        fail("the header says " + std::to_string(len) + " bytes follow it but " +
                 std::to_string(data.size() - kHeader) + " do" +
                 (len > data.size() - kHeader ? " (the file is truncated)" : " (there is data after the end)"),
             "tenon-E202");
    if (get_le(data.data() + 28, 4) != 0) fail("corrupted file: the header's reserved field is not zero", "tenon-E202");
    const auto crc = static_cast<std::uint32_t>(get_le(data.data() + 24, 4));
    const std::uint32_t found = crc_of(data.data() + kHeader, len);
    if (crc != found)
        fail("corrupted file: checksum mismatch (the header says CRC-32 " + std::to_string(crc) +
                 ", the content has " + std::to_string(found) + ")",
             "tenon-E203");
    return {data.subspan(kHeader), version};
}

// ---- the body: cereal's portable binary archive, little-endian --------------------------

class SpanBuf : public std::streambuf {
public:
    explicit SpanBuf(std::span<const std::uint8_t> d) {
        char* p = const_cast<char*>(reinterpret_cast<const char*>(d.data()));
        setg(p, p, p + d.size());
    }
    std::size_t remaining() const { return static_cast<std::size_t>(egptr() - gptr()); }
};

class Writer {
public:
    Writer() : ar_(os_, cereal::PortableBinaryOutputArchive::Options::LittleEndian()) {}
    void u8(std::uint8_t v) { ar_(v); }
    void u32(std::uint32_t v) { ar_(v); }
    void u64(std::uint64_t v) { ar_(v); }
    void i64(std::int64_t v) { ar_(v); }
    void f64(double v) { ar_(v); }
    void str(const std::string& s) {
        u64(s.size());
        ar_(cereal::binary_data(s.data(), s.size()));
    }
    void floats(const float* p, std::size_t n) { ar_(cereal::binary_data(p, n * sizeof(float))); }
    std::string take() { return os_.str(); }

private:
    std::ostringstream os_;
    cereal::PortableBinaryOutputArchive ar_;
};

// Reads what Writer wrote; every count and length is checked against the bytes left before
// anything is allocated for it, so a corrupted length is an error, not a huge allocation.
class Reader {
public:
    explicit Reader(std::span<const std::uint8_t> body) : buf_(body), is_(&buf_), ar_(make(is_)) {}
    std::uint8_t u8() { return get<std::uint8_t>(); }
    std::uint32_t u32() { return get<std::uint32_t>(); }
    std::uint64_t u64() { return get<std::uint64_t>(); }
    std::int64_t i64() { return get<std::int64_t>(); }
    double f64() { return get<double>(); }
    bool boolean(const char* what) {
        const std::uint8_t v = u8();
        if (v > 1) corrupt(std::string(what) + " is " + std::to_string(v) + ", not 0 or 1");
        return v == 1;
    }
    std::string str(const char* what) {
        const std::uint64_t n = u64();
        if (n > remaining()) truncated(what, n);
        std::string s(static_cast<std::size_t>(n), '\0');
        read_bytes(s.data(), s.size());
        return s;
    }
    // A count of items each at least `min_bytes` long.
    std::size_t count(const char* what, std::size_t min_bytes) {
        const std::uint64_t n = u64();
        if (n > remaining() / std::max<std::size_t>(min_bytes, 1)) truncated(what, n);
        return static_cast<std::size_t>(n);
    }
    void floats(float* p, std::size_t n) { read_raw(cereal::binary_data(p, n * sizeof(float))); }
    std::size_t remaining() const { return buf_.remaining(); }
    [[noreturn]] static void corrupt(const std::string& what) {
        fail("corrupted file: " + what, "tenon-E202");
    }
    [[noreturn]] void truncated(const char* what, std::uint64_t n) const {
        fail("truncated or corrupted file: " + std::string(what) + " needs " + std::to_string(n) +
                 (n == 1 ? " item" : " items") + " but only " + std::to_string(remaining()) + " bytes are left",
             "tenon-E202");
    }

private:
    static std::istream& make(std::istream& is) {
        if (is.rdbuf()->in_avail() < 1) fail("truncated file: the body is empty", "tenon-E202");
        const int first = is.rdbuf()->sgetc();
        if (first != 1) corrupt("the body does not start with cereal's little-endian mark");
        return is;
    }
    template <class T>
    T get() {
        T v{};
        if (remaining() < sizeof(T))
            fail("truncated file: " + std::to_string(remaining()) + " bytes left where " + std::to_string(sizeof(T)) +
                     " were expected",
                 "tenon-E202");
        ar_(v);
        return v;
    }
    void read_bytes(char* p, std::size_t n) { read_raw(cereal::binary_data(p, n)); }
    template <class B>
    void read_raw(B&& b) {
        if (b.size > remaining())
            fail("truncated file: " + std::to_string(remaining()) + " bytes left where " + std::to_string(b.size) +
                     " were expected",
                 "tenon-E202");
        ar_(std::forward<B>(b));
    }

    SpanBuf buf_;
    std::istream is_;
    cereal::PortableBinaryInputArchive ar_{is_, cereal::PortableBinaryInputArchive::Options::LittleEndian()};
};

// -- a model's state in the body --

enum AttrTag : std::uint8_t { kBool = 0, kInt = 1, kReal = 2, kText = 3 };

void write_state(Writer& w, const ModelState& st) {
    w.u64(st.nodes.size());
    for (const auto& n : st.nodes) {
        w.str(n.name);
        w.u64(n.n_children);
        w.u8(n.initialized);
        w.u64(n.dims.size());
        for (const auto& [name, v] : n.dims) {
            w.str(name);
            w.u64(v == dyn ? kNone : v);
        }
        w.u64(n.attrs.size());
        for (const auto& [name, a] : n.attrs) {
            w.str(name);
            w.u8(static_cast<std::uint8_t>(a.index()));
            std::visit(
                [&](const auto& v) {
                    using T = std::decay_t<decltype(v)>;
                    if constexpr (std::is_same_v<T, bool>) w.u8(v);
                    else if constexpr (std::is_same_v<T, std::int64_t>) w.i64(v);
                    else if constexpr (std::is_same_v<T, double>) w.f64(v);
                    else w.str(v);
                },
                a);
        }
        w.u64(n.params.size());
        for (const auto& p : n.params) {
            w.str(p.name);
            w.u8(p.allocated);
            w.u64(p.shape.size());
            for (auto s : p.shape) w.u64(s);
        }
        w.u64(n.refs.size());
        for (const auto& [name, idx] : n.refs) {
            w.str(name);
            w.u64(idx ? *idx : kNone);
        }
    }
    // The payload: every allocated parameter's values, in the order above.
    for (const auto& n : st.nodes)
        for (const auto& p : n.params)
            if (p.allocated) w.floats(p.values.data(), p.values.size());
}

ModelState read_state(Reader& r) {
    ModelState st;
    const std::size_t nodes = r.count("the node list", 8 + 8 + 1 + 8 * 4);
    st.nodes.resize(nodes);
    for (auto& n : st.nodes) {
        n.name = r.str("a node's name");
        n.n_children = r.count("a node's children", 0);
        n.initialized = r.boolean("a node's initialised flag");
        n.dims.resize(r.count("a node's dims", 16));
        for (auto& [name, v] : n.dims) {
            name = r.str("a dim's name");
            const std::uint64_t x = r.u64();
            if (x != kNone && x >= (std::uint64_t{1} << 48)) Reader::corrupt("dim '" + name + "' is " + std::to_string(x));
            v = x == kNone ? dyn : static_cast<std::size_t>(x);
        }
        n.attrs.resize(r.count("a node's attributes", 10));
        for (auto& [name, a] : n.attrs) {
            name = r.str("an attribute's name");
            switch (r.u8()) {
                case kBool: a = r.boolean("a bool attribute"); break;
                case kInt: a = r.i64(); break;
                case kReal: a = r.f64(); break;
                case kText: a = r.str("a string attribute"); break;
                default: Reader::corrupt("attribute '" + name + "' has an unknown type");
            }
        }
        n.params.resize(r.count("a node's parameters", 17));
        for (auto& p : n.params) {
            p.name = r.str("a parameter's name");
            p.allocated = r.boolean("a parameter's allocated flag");
            const std::size_t rank = r.count("a parameter's shape", 8);
            if (rank > 4 || (p.allocated && rank == 0) || (!p.allocated && rank != 0))
                Reader::corrupt("parameter '" + p.name + "' has rank " + std::to_string(rank) +
                                (p.allocated ? "" : " but is not allocated"));
            p.shape.resize(rank);
            for (auto& s : p.shape) {
                const std::uint64_t x = r.u64();
                if (x >= (std::uint64_t{1} << 48)) Reader::corrupt("parameter '" + p.name + "' has an extent " + std::to_string(x));
                s = static_cast<std::size_t>(x);
            }
        }
        n.refs.resize(r.count("a node's references", 16));
        for (auto& [name, idx] : n.refs) {
            name = r.str("a reference's name");
            const std::uint64_t x = r.u64();
            if (x != kNone && x >= nodes) Reader::corrupt("reference '" + name + "' points at node " + std::to_string(x) + " of " + std::to_string(nodes));
            if (x != kNone) idx = static_cast<std::size_t>(x);
        }
    }
    // The children's counts must make one breadth-first tree of all the nodes.
    std::size_t seen = nodes ? 1 : 0;
    for (std::size_t i = 0; i < nodes; ++i) {
        if (i >= seen) Reader::corrupt("node " + std::to_string(i) + " is nobody's child");
        if (st.nodes[i].n_children > nodes - seen)
            Reader::corrupt("node " + std::to_string(i) + " has more children than there are nodes");
        seen += st.nodes[i].n_children;
    }
    if (seen != nodes) Reader::corrupt("the children's counts do not add up to the nodes");
    for (auto& n : st.nodes)
        for (auto& p : n.params) {
            if (!p.allocated) continue;
            std::size_t total = 1;
            for (auto s : p.shape)
                if (__builtin_mul_overflow(total, s, &total)) r.truncated("a parameter's values", kNone);
            if (total > r.remaining() / sizeof(float)) r.truncated("a parameter's values", total);
            p.values.resize(total);
            r.floats(p.values.data(), total);
        }
    return st;
}

template <class F>
auto decoding(F&& f) {
    try {
        return f();
    } catch (const cereal::Exception& e) {
        fail(std::string("truncated or corrupted file: ") + e.what(), "tenon-E202");
    }
}

// -- the optimizer's state in the body --

void write_optimizer(Writer& w, const Optimizer& opt, const Node& model) {
    const auto& o = opt.options();
    w.f64(o.learn_rate);
    w.f64(o.L2);
    w.f64(o.beta1);
    w.f64(o.beta2);
    w.f64(o.eps);
    w.f64(o.grad_clip);
    w.u8(o.L2_is_weight_decay);
    w.u8(o.use_averages);
    w.u64(opt.skipped_steps());  // format version 2 on
    const auto& states = detail::OptimizerAccess::states(opt);
    // The nodes as the model file sees them (file_walk: a config-built model and its codegen
    // type share their files), each entry with its node's name (format version 3 on).
    const FileWalk fw = file_walk(const_cast<Node&>(model));
    const auto& nodes = fw.nodes;
    std::vector<std::tuple<std::uint64_t, std::string, const detail::OptimizerAccess::State*>> entries;
    for (std::size_t i = 0; i < nodes.size(); ++i)
        for (const auto& name : nodes[i]->param_names()) {
            auto it = states.find({nodes[i]->id(), name});
            if (it != states.end()) entries.emplace_back(i, name, &it->second);
        }
    w.u64(entries.size());
    for (const auto& [i, name, s] : entries) {
        w.u64(i);
        w.str(file_name(nodes[i]->name()));
        w.str(name);
        w.i64(s->nr_update);
        for (const Floats1d* a : {&s->mom1, &s->mom2, &s->average}) {
            w.u64(a->size());
            w.floats(a->data(), a->size());
        }
    }
}

struct OptimizerStaged {
    std::vector<std::uint64_t> ids;  // the model's nodes, sorted
    OptimizerOptions options;
    std::uint64_t skipped = 0;  // Optimizer::skipped_steps (0 in a version 1 file, which has none)
    std::map<std::pair<std::uint64_t, std::string>, detail::OptimizerAccess::State> states;
};

// One entry of an optimizer body, as read (its checks against the model come after).
struct OptimizerEntry {
    std::uint64_t node = 0;  // the node's index (see read_optimizer)
    std::string node_name;   // version 3 on
    std::string name;        // the parameter's
    detail::OptimizerAccess::State state;
};

// Where an entry's node is in the model: the node (null: none at that index), its path, and,
// for a checkpoint, the node of the state loaded with it (the parameter's size is that one's).
struct EntryPlace {
    const Node* node = nullptr;
    std::string path;
    const NodeState* pending = nullptr;
};

// Why `e` does not fit the model at `at` (empty: it fits). `n_nodes`: the nodes of the view
// the index counts; `model`: the model loaded into.
std::pair<std::string, const char*> entry_misfit(const OptimizerEntry& e, const EntryPlace& at, std::size_t n_nodes,
                                                 const Node& model, const std::string& model_path,
                                                 std::uint32_t version) {
    if (!at.node)
        return {"the optimizer state does not fit the model: it has an entry for node " + std::to_string(e.node) +
                    " but the model has " + std::to_string(n_nodes) + " nodes",
                "tenon-E220"};
    const Node& node = *at.node;
    if (version >= 3 && file_name(node.name()) != e.node_name)
        return {at.path + ": the optimizer state of parameter '" + e.name + "' is for a node '" + e.node_name +
                    "', but the model has '" + file_name(node.name()) + "' here (another architecture)",
                "tenon-E220"};
    const auto names = node.param_names();
    if (std::find(names.begin(), names.end(), e.name) == names.end())
        return {at.path + ": the optimizer state has an entry for parameter '" + e.name +
                    "', which this node does not have",
                "tenon-E220"};
    std::size_t size = 0;
    if (at.pending) {
        const ParamState* p = nullptr;
        for (const auto& q : at.pending->params)
            if (q.name == e.name) p = &q;
        if (!p || !p->allocated)
            return {at.path + ": the checkpoint has optimizer state for parameter '" + e.name +
                        "' but no values for the parameter itself (a corrupted file)",
                    "tenon-E220"};
        size = p->values.size();
    } else if (node.has_param(e.name)) {
        size = node.get_param(e.name).size();
    } else {
        // Not the "0 values" of a parameter the model does not have yet: the model (or this
        // layer of it) is not initialised, which its weights file or initialize() would fix.
        const std::string what = model.is_initialized()
                                     ? at.path + ": the optimizer state has values for parameter '" + e.name +
                                           "', but this layer of the model is not initialised (its parameter has no "
                                           "values yet)"
                                     : model_path + ": the optimizer state has values for parameter '" + e.name +
                                           "' of " + at.path + ", but the model '" + file_name(model.name()) +
                                           "' is not initialised (its parameters have no values yet)";
        return {what + ": initialize() it or load its weights (from_bytes, from_disk) before its optimizer state",
                "tenon-E220"};
    }
    for (const Floats1d* a : {&e.state.mom1, &e.state.mom2, &e.state.average})
        if (a->size() != 0 && a->size() != size)
            return {at.path + ": the optimizer state of parameter '" + e.name + "' has " + std::to_string(a->size()) +
                        " values but the parameter has " + std::to_string(size),
                    "tenon-E220"};
    return {};
}

// `pending`: the model state a checkpoint loads with it (the sizes are that state's);
// `version`: the file's format version.
// An entry's node index counts the nodes of the model file's view of the tree from version 3
// on (file_walk). Versions 1 and 2 counted every node of the model that wrote the file, so a
// model held otherwise (in an AnyModel, as a config builds it) has its nodes elsewhere:
// - a checkpoint holds the writer's tree (its model body, every node in those versions): an
//   index is placed through that tree's file view, whatever held the model on either side;
// - an optimizer file alone does not: it is read against the model as it is held (what the
//   writer was when it was held the same way) and against the model's file view (the writer
//   held it without AnyModels: every file of version 1, which AnyModel came after). Where the
//   two differ and the entries fit both, the file is refused: which parameter each entry is
//   for is not known.
OptimizerStaged read_optimizer(Reader& r, const Node& model, const ModelState* pending, std::uint32_t version) {
    OptimizerStaged st;
    auto& o = st.options;
    o.learn_rate = r.f64();
    o.L2 = r.f64();
    o.beta1 = r.f64();
    o.beta2 = r.f64();
    o.eps = r.f64();
    o.grad_clip = r.f64();
    o.L2_is_weight_decay = r.boolean("L2_is_weight_decay");
    o.use_averages = r.boolean("use_averages");
    if (version >= 2) st.skipped = r.u64();
    // The hyperparameters as an Optimizer made with them would check them (tenon-E251 there): a
    // file is not a way around those checks (a NaN learning rate makes every weight NaN).
    try {
        (void)Optimizer(o);
    } catch (const Error& e) {
        fail("corrupted file: the optimizer state's hyperparameters: " + e.message(), "tenon-E202");
    }
    for (const Node* node : model.walk()) st.ids.push_back(node->id());
    std::sort(st.ids.begin(), st.ids.end());
    const std::size_t n = r.count("the optimizer's entries", 8 + 8 + 8 + 24);
    std::vector<OptimizerEntry> entries(n);
    for (auto& e : entries) {
        e.node = r.u64();
        if (version >= 3) e.node_name = r.str("a node's name");
        e.name = r.str("a parameter's name");
        const std::int64_t t = r.i64();
        if (t < 0 || t >= std::numeric_limits<int>::max()) Reader::corrupt("a step count is " + std::to_string(t));
        e.state.nr_update = static_cast<int>(t);
        for (Floats1d* a : {&e.state.mom1, &e.state.mom2, &e.state.average}) {
            const std::uint64_t len = r.u64();
            if (len > r.remaining() / sizeof(float)) r.truncated("an optimizer array", len);
            *a = Floats1d({static_cast<std::size_t>(len)});
            r.floats(a->data(), a->size());
        }
    }

    const FileWalk view = file_walk(const_cast<Node&>(model));
    const std::string model_path = view.paths.empty() ? std::string() : view.paths[0];
    // Each entry placed in a view of the model's nodes (`nodes`, `paths`), its index mapped
    // through `index` (npos: no node) when given.
    using Places = std::vector<EntryPlace>;
    auto place = [&](const Walked& w, const std::vector<std::size_t>* index) {
        Places out(entries.size());
        for (std::size_t k = 0; k < entries.size(); ++k) {
            std::uint64_t i = entries[k].node;
            if (pending) out[k].pending = i < pending->nodes.size() ? &pending->nodes[i] : nullptr;
            if (index) i = i < index->size() ? (*index)[i] : npos;
            if (i < w.nodes.size()) {
                out[k].node = w.nodes[i];
                out[k].path = w.paths[i];
            }
            if (pending && !out[k].pending) out[k].node = nullptr;
        }
        return out;
    };
    auto misfit = [&](const Places& at, std::size_t n_nodes) -> std::pair<std::string, const char*> {
        for (std::size_t k = 0; k < entries.size(); ++k)
            if (auto m = entry_misfit(entries[k], at[k], n_nodes, model, model_path, version); !m.first.empty())
                return m;
        return {};
    };
    Places chosen;
    std::size_t n_nodes = view.nodes.size();
    if (version >= 3) {
        chosen = place(view, nullptr);
    } else if (pending) {
        // The writer's tree: its nodes in its file's view, which is the model's.
        std::vector<std::string> names;
        std::vector<std::size_t> counts;
        for (const auto& nd : pending->nodes) {
            names.push_back(nd.name);
            counts.push_back(nd.n_children);
        }
        const FileView fv = file_view(names, counts);
        std::vector<std::size_t> index(pending->nodes.size(), npos);
        for (std::size_t k = 0; k < fv.order.size(); ++k) index[fv.order[k]] = k;
        chosen = place(view, &index);
        n_nodes = pending->nodes.size();
        for (std::size_t k = 0; k < entries.size(); ++k)
            if (entries[k].node < index.size() && index[entries[k].node] == npos)
                fail("the checkpoint's optimizer state has an entry for parameter '" + entries[k].name + "' of node " +
                         std::to_string(entries[k].node) + " ('" + pending->nodes[entries[k].node].name +
                         "'), a node that only holds a model and has no parameters (a corrupted file)",
                     "tenon-E220");
    } else {
        const Walked held = walk_with_paths(const_cast<Node&>(model));
        chosen = place(view, nullptr);
        if (!view.hidden.empty() && !entries.empty()) {
            const Places as_held = place(held, nullptr);
            const auto in_view = misfit(chosen, view.nodes.size());
            const auto in_held = misfit(as_held, held.nodes.size());
            bool same = true;
            for (std::size_t k = 0; k < entries.size(); ++k) same = same && chosen[k].node == as_held[k].node;
            if (in_view.first.empty() && in_held.first.empty() && !same)
                fail(model_path + ": the optimizer state is of format version " + std::to_string(version) +
                         ", which counts the nodes of the model that wrote it, AnyModel nodes (and chains in chains) "
                         "included; this model holds some, and the entries fit it both as it is held and without "
                         "them, so which parameter each is for is not known. Load the file into the model as it "
                         "was written (held the same way, or its typed model, e.g. from tenon codegen) and save it "
                         "again: format version " +
                         std::to_string(model_file_version) + " names each entry's node",
                     "tenon-E220");
            if (!in_held.first.empty() || in_view.first.empty()) {
                // the file's view (also where neither fits: its error is the one reported)
            } else {
                chosen = as_held;
                n_nodes = held.nodes.size();
            }
        }
    }
    if (const auto m = misfit(chosen, n_nodes); !m.first.empty()) fail(m.first, m.second);
    for (std::size_t k = 0; k < entries.size(); ++k)
        st.states[{chosen[k].node->id(), entries[k].name}] = std::move(entries[k].state);
    return st;
}

void commit_optimizer(Optimizer& opt, OptimizerStaged& st) noexcept {
    st.options.on_nonfinite = opt.options().on_nonfinite;  // this run's policy, not in the file
    detail::OptimizerAccess::options(opt) = st.options;
    detail::OptimizerAccess::skipped(opt) = static_cast<std::size_t>(st.skipped);
    auto& states = detail::OptimizerAccess::states(opt);
    // The model's entries are replaced; entries of other models stay.
    for (auto it = states.begin(); it != states.end();)
        it = std::binary_search(st.ids.begin(), st.ids.end(), it->first.first) ? states.erase(it) : std::next(it);
    states.merge(st.states);
}

}  // namespace

// ---- state.hpp --------------------------------------------------------------------------

std::string node_kind(std::string_view name) {
    if (top_level(name, ">>")) return "chain";
    if (top_level(name, "|")) return "concatenate";
    if (top_level(name, "+")) return "add";
    const auto p = name.find('(');
    return std::string(p == std::string_view::npos ? name : name.substr(0, p));
}

std::vector<std::string> node_paths(const Node& model) { return walk_with_paths(const_cast<Node&>(model)).paths; }

std::string node_path(const Node& model, const Node& node) {
    Walked w = walk_with_paths(const_cast<Node&>(model));
    for (std::size_t i = 0; i < w.nodes.size(); ++i)
        if (w.nodes[i] == &node) return w.paths[i];
    throw Error("node_path: '" + node.name() + "' is not a node of '" + model.name() + "'", "tenon-E231");
}

ModelState capture(const Node& model) {
    using A = detail::NodeAccess;
    Walked w = walk_with_paths(const_cast<Node&>(model));
    ModelState st;
    st.nodes.resize(w.nodes.size());
    for (std::size_t i = 0; i < w.nodes.size(); ++i) {
        const Node& n = *w.nodes[i];
        NodeState& s = st.nodes[i];
        s.name = n.name();
        s.path = w.paths[i];
        s.initialized = A::initialized(n);
        s.n_children = w.n_children[i];
        // Each dim as get_dim reads it: a chain's nI and nO are its layers' where it follows
        // them (Node::dim_owner), so a layer's forced set_dim is in the file at once, not the
        // width the chain had at its last initialize.
        for (const auto& d : A::dims(n)) s.dims.emplace_back(d.name, A::dim_value(n, d.name));
        s.attrs = A::attrs(n);
        n.save_extra(s.attrs);
        for (const auto& p : A::params(n)) {
            ParamState ps;
            ps.name = p.name;
            ps.allocated = p.allocated;
            if (p.allocated) {
                ps.shape = p.shape;
                ps.values.resize(p.value.size());  // (a device model's values: copied to the host)
                if (!ps.values.empty())
                    detail::copy_bytes(ps.values.data(), Memory::host, p.value.data(), p.value.memory(),
                                       ps.values.size() * sizeof(float));
            }
            s.params.push_back(std::move(ps));
        }
        for (const auto& [name, target] : A::refs(n)) {
            std::optional<std::size_t> idx;
            if (target) {
                auto it = std::find(w.nodes.begin(), w.nodes.end(), target);
                if (it == w.nodes.end())
                    throw Error(w.paths[i] + ": reference '" + name + "' points outside the model; a file can only "
                                "keep references to nodes of the same tree",
                                "tenon-E232");
                idx = static_cast<std::size_t>(it - w.nodes.begin());
            }
            s.refs.emplace_back(name, idx);
        }
    }
    return st;
}


ModelState capture_to_save(const Node& model) {
    ModelState st = capture(model);
    for (const NodeState& s : st.nodes)
        for (const ParamState& p : s.params) {
            const std::size_t first = detail::first_nonfinite(p.values.data(), p.values.size());
            if (first == p.values.size()) continue;
            const std::size_t count = detail::count_nonfinite(p.values.data(), p.values.size());
            throw Error(s.path + ": parameter " + p.name + " holds " + std::to_string(count) +
                            " non-finite value" + (count == 1 ? "" : "s") + " (NaN or inf), the first at flat index " +
                            std::to_string(first) + " (" + std::to_string(p.values[first]) +
                            "): a model with such a weight only outputs NaN; nothing was written",
                        "tenon-E119");
        }
    return st;
}

namespace {
// The same tree: names and children, compared from the root down; a difference is reported
// at the deepest node that differs (a chain's name repeats its layers').
void check_tree(const Walked& w, const ModelState& st, const std::string& src) {
    std::vector<std::size_t> file_counts;
    for (const auto& n : st.nodes) file_counts.push_back(n.n_children);
    const auto mfirst = first_children(w.n_children), ffirst = first_children(file_counts);
    std::function<bool(std::size_t, std::size_t)> differs = [&](std::size_t m, std::size_t f) {
        const bool same_name = file_name(w.nodes[m]->name()) == file_name(st.nodes[f].name);
        if (w.n_children[m] != file_counts[f]) {
            fail(w.paths[m] + ": the model's node '" + w.nodes[m]->name() + "' has " + std::to_string(w.n_children[m]) +
                     " children but the " + src + "'s '" + st.nodes[f].name + "' has " + std::to_string(file_counts[f]) +
                     " (another architecture)",
                 "tenon-E204");
        }
        for (std::size_t c = 0; c < w.n_children[m]; ++c)
            if (differs(mfirst[m] + c, ffirst[f] + c)) return true;
        if (!same_name)
            fail(w.paths[m] + ": the model has node '" + w.nodes[m]->name() + "' here but the " + src + " has '" +
                     st.nodes[f].name + "' (another architecture)",
                 "tenon-E204");
        return false;
    };
    if (st.nodes.empty()) fail("the " + src + " has no nodes", "tenon-E204");
    differs(0, 0);
    if (w.nodes.size() != st.nodes.size())  // not reached: the counts above differ first
        fail(w.paths[0] + ": the model has " + std::to_string(w.nodes.size()) + " nodes but the " + src + " has " +
                 std::to_string(st.nodes.size()),
             "tenon-E204");
}

// Every check of restore(), and the nodes' new contents (the values copied when `values`).
std::vector<detail::NodeAccess::Staged> stage(const Walked& w, const ModelState& st, std::string_view source,
                                              bool values) {
    using A = detail::NodeAccess;
    const std::string src(source);
    check_tree(w, st, src);
    const std::size_t n = w.nodes.size();

    std::vector<A::Staged> staged(n);
    // Deepest nodes first: a width that differs is reported at the layer, not at the chains
    // around it, which repeat it.
    for (std::size_t i = n; i-- > 0;) {
        const Node& node = *w.nodes[i];
        const NodeState& s = st.nodes[i];
        const std::string& path = w.paths[i];
        A::Staged& g = staged[i];
        // Dims: the same names; a value the model knows must agree.
        g.dims = A::dims(node);
        if (s.dims.size() != g.dims.size())
            fail(path + ": the model's node has " + std::to_string(g.dims.size()) + " dims but the " + src + "'s has " +
                     std::to_string(s.dims.size()),
                 "tenon-E205");
        for (std::size_t d = 0; d < g.dims.size(); ++d) {
            auto& dim = g.dims[d];
            const auto& [name, v] = s.dims[d];
            if (name != dim.name)
                fail(path + ": expected dim '" + dim.name + "' but the " + src + " has '" + name + "'", "tenon-E205");
            if (v == dyn) continue;
            if (dim.fixed != dyn && v != dim.fixed)
                fail(path + ": dim " + dim.name + ": expected " + std::to_string(dim.fixed) +
                         " (static in the model's type) but the " + src + " has " + std::to_string(v),
                     "tenon-E205");
            const std::size_t have = A::dim_value(node, dim.name);  // what the model reads now
            if (have != dyn && v != have)
                fail(path + ": dim " + dim.name + ": expected " + std::to_string(have) + " (set in the model) but the " +
                         src + " has " + std::to_string(v),
                     "tenon-E205");
            dim.value = v;
        }
        // Parameters: the same names; each allocated one of the shape its dims give.
        const auto& params = A::params(node);
        if (s.params.size() != params.size())
            fail(path + ": the model's node has " + std::to_string(params.size()) + " parameters but the " + src +
                     "'s has " + std::to_string(s.params.size()),
                 "tenon-E206");
        g.params.reserve(params.size());
        for (std::size_t p = 0; p < params.size(); ++p) {
            const auto& mp = params[p];
            const ParamState& fp = s.params[p];
            if (fp.name != mp.name)
                fail(path + ": expected parameter '" + mp.name + "' but the " + src + " has '" + fp.name + "'",
                     "tenon-E206");
            A::Param q{mp.name, {}, {}, {}, false, false};
            q.shape_dims = mp.shape_dims;
            q.shape_rank = mp.shape_rank;
            if (fp.allocated) {
                std::vector<std::size_t> want;
                if (mp.shape_rank) {
                    for (std::size_t k = 0; k < mp.shape_rank; ++k) {
                        auto it = std::find_if(g.dims.begin(), g.dims.end(),
                                               [&](const A::Dim& d) { return d.name == mp.shape_dims[k]; });
                        if (it == g.dims.end() || it->value == dyn)
                            fail(path + ": parameter " + mp.name + " is in the " + src + " but dim " + mp.shape_dims[k] +
                                     " that its shape depends on is not known",
                                 "tenon-E206");
                        want.push_back(it->value);
                    }
                } else if (mp.allocated) {
                    want = mp.shape;  // no shape rule: the shape the model has
                } else {
                    want = fp.shape;
                }
                if (fp.shape != want)
                    fail(path + ": parameter " + mp.name + ": expected shape " + shape_text(want) + " but the " + src +
                             " has " + shape_text(fp.shape),
                         "tenon-E206");
                std::size_t total = 1;
                for (auto x : want) total *= x;
                if (fp.values.size() != total)
                    fail(path + ": parameter " + mp.name + ": expected " + std::to_string(total) + " values but the " +
                             src + " has " + std::to_string(fp.values.size()),
                         "tenon-E206");
                if (const std::size_t first = detail::first_nonfinite(fp.values.data(), fp.values.size());
                    first != fp.values.size())
                    fail(path + ": parameter " + mp.name + ": the " + src + " has a non-finite value (" +
                             std::to_string(fp.values[first]) + ") at flat index " + std::to_string(first) +
                             ": a model with such a weight only outputs NaN (it was saved from a model whose "
                             "training diverged, or the file is damaged)",
                         "tenon-E206");
                q.shape = want;
                if (values) {
                    q.value = A::new_array(node, total);
                    q.grad = A::new_array(node, total);
                    if (total)
                        detail::copy_bytes(q.value.data(), q.value.memory(), fp.values.data(), Memory::host,
                                           total * sizeof(float));
                }
                q.allocated = true;
            } else if (s.initialized && mp.shape_rank) {
                fail(path + ": the " + src + " marks the node initialised but has no values for parameter " + mp.name,
                     "tenon-E206");
            }
            g.params.push_back(std::move(q));
        }
        // Attributes: the file's values; one the model holds keeps its type; one the layer
        // fixed when it was made must be the same; the layer's extra state goes to the layer.
        g.attrs = A::attrs(node);
        Node::AttrList extra;
        for (const auto& [name, value] : s.attrs) {
            if (node.is_extra_attr(name)) {
                extra.emplace_back(name, value);
                continue;
            }
            auto it = std::find_if(g.attrs.begin(), g.attrs.end(), [&name = name](auto& a) { return a.first == name; });
            if (it != g.attrs.end() && node.is_fixed_attr(name) && it->second != value)
                fail(path + ": attribute '" + name + "': expected " + attr_text(it->second) +
                         " (fixed when the layer was made) but the " + src + " has " + attr_text(value),
                     "tenon-E207");
            if (it == g.attrs.end()) {
                g.attrs.emplace_back(name, value);
            } else {
                if (it->second.index() != value.index())
                    fail(path + ": attribute '" + name + "' must be " + attr_type(it->second) + " but the " + src +
                             " has " + attr_type(value),
                         "tenon-E207");
                it->second = value;
            }
        }
        try {
            g.extra = const_cast<Node&>(node).load_extra(extra);
        } catch (const LoadError&) {
            throw;
        } catch (const Error& e) {
            fail(path + ": " + e.what(), "tenon-E207");
        }
        // References: into the same tree.
        for (const auto& [name, idx] : s.refs) {
            if (idx && *idx >= w.nodes.size())
                fail(path + ": reference '" + name + "' points at node " + std::to_string(*idx) + " but the model has " +
                         std::to_string(w.nodes.size()),
                     "tenon-E207");
            g.refs.emplace_back(name, idx ? w.nodes[*idx] : nullptr);
        }
        g.initialized = s.initialized;
    }
    return staged;
}
}  // namespace

void restore(Node& model, const ModelState& st, std::string_view source) {
    FileWalk w = file_walk(model);
    auto staged = stage(w, file_state(st), source, true);
    // Nothing below can fail.
    for (std::size_t i = 0; i < staged.size(); ++i) detail::NodeAccess::commit(*w.nodes[i], staged[i]);
    // A node the file's view leaves out (an AnyModel, a chain in a chain) is initialised when
    // what it holds is; the deepest first.
    for (std::size_t i = w.hidden.size(); i-- > 0;) {
        bool all = true;
        w.hidden[i]->for_each_child([&](Node& c) { all = all && detail::NodeAccess::initialized(c); });
        detail::NodeAccess::set_initialized(*w.hidden[i], all);
    }
}

// ---- serialize.hpp ----------------------------------------------------------------------

std::vector<std::uint8_t> to_bytes(const Node& model) {
    model.require_contents();
    Writer w;
    write_state(w, file_state(capture_to_save(model)));
    return envelope(Kind::model, w.take());
}

ModelState decode_model(std::span<const std::uint8_t> data) {
    auto body = open_envelope(data, Kind::model).body;  // a model body is the same in versions 1 and 2
    return decoding([&] {
        Reader r(body);
        ModelState st = read_state(r);
        if (r.remaining()) Reader::corrupt(std::to_string(r.remaining()) + " bytes after the last parameter");
        return st;
    });
}

void from_bytes(Node& model, std::span<const std::uint8_t> data) {
    model.require_contents();
    restore(model, decode_model(data));
}

std::string can_from_bytes(const Node& model, std::span<const std::uint8_t> data) {
    try {
        model.require_contents();
        // restore()'s checks, without copying the values or changing the model.
        stage(file_walk(const_cast<Node&>(model)), file_state(decode_model(data)), "file", false);
        return {};
    } catch (const Error& e) {
        return e.what();
    }
}

std::vector<std::uint8_t> optimizer_to_bytes(const Optimizer& optimizer, const Node& model) {
    Writer w;
    write_optimizer(w, optimizer, model);
    return envelope(Kind::optimizer, w.take());
}

void optimizer_from_bytes(Optimizer& optimizer, const Node& model, std::span<const std::uint8_t> data) {
    const Opened file = open_envelope(data, Kind::optimizer);
    OptimizerStaged st = decoding([&] {
        Reader r(file.body);
        auto s = read_optimizer(r, model, nullptr, file.version);
        if (r.remaining()) Reader::corrupt(std::to_string(r.remaining()) + " bytes after the optimizer state");
        return s;
    });
    commit_optimizer(optimizer, st);
}

std::vector<std::uint8_t> checkpoint_to_bytes(const Node& model, const Optimizer& optimizer) {
    model.require_contents();
    Writer w;
    write_state(w, file_state(capture_to_save(model)));  // (version 3 on: the file's view, as the optimizer's)
    write_optimizer(w, optimizer, model);
    const Rng::State r = global_rng().state();
    for (auto s : r.s) w.u64(s);
    w.f64(r.spare);
    w.u8(r.has_spare);
    return envelope(Kind::checkpoint, w.take());
}

void checkpoint_from_bytes(Node& model, Optimizer& optimizer, std::span<const std::uint8_t> data) {
    model.require_contents();
    const Opened file = open_envelope(data, Kind::checkpoint);
    ModelState st;
    OptimizerStaged opt;
    Rng::State rng{};
    decoding([&] {
        Reader r(file.body);
        st = read_state(r);
        opt = read_optimizer(r, model, &st, file.version);
        for (auto& s : rng.s) s = r.u64();
        rng.spare = r.f64();
        rng.has_spare = r.boolean("the generator's spare flag");
        if (r.remaining()) Reader::corrupt(std::to_string(r.remaining()) + " bytes after the generator's state");
        return 0;
    });
    // The optimizer state is keyed by node ids, which restore does not change; restore is the
    // one step that can still fail, so it goes first.
    restore(model, st);
    commit_optimizer(optimizer, opt);
    global_rng().set_state(rng);
}

std::vector<std::uint8_t> read_file(const std::string& path) {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec))
        fail("cannot read '" + path + "': it is a directory, not a model file", "tenon-E208");
    std::ifstream in(path, std::ios::binary);
    if (!in) fail("cannot open '" + path + "' for reading", "tenon-E208");
    std::vector<std::uint8_t> data;
    try {
        // (libstdc++'s filebuf throws from a read that fails, e.g. on /proc/self/mem.)
        data.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    } catch (const std::ios_base::failure& e) {
        fail("cannot read '" + path + "': " + e.what(), "tenon-E208");
    }
    if (in.bad()) fail("cannot read '" + path + "'", "tenon-E208");
    return data;
}

void write_file(const std::string& path, std::span<const std::uint8_t> data) {
    // Written next to the target and renamed over it: a reader never sees half a file.
    const std::string tmp = path + ".tmp";
    {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        if (!out) fail("cannot open '" + tmp + "' for writing", "tenon-E208");
        out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
        out.flush();
        if (!out) fail("cannot write '" + tmp + "'", "tenon-E208");
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
        std::remove(tmp.c_str());
        fail("cannot rename '" + tmp + "' to '" + path + "'", "tenon-E208");
    }
}

// ---- Node's members ---------------------------------------------------------------------

std::vector<std::uint8_t> Node::to_bytes() const { return tenon::to_bytes(*this); }
Node& Node::from_bytes(std::span<const std::uint8_t> data) {
    tenon::from_bytes(*this, data);
    return *this;
}
std::string Node::can_from_bytes(std::span<const std::uint8_t> data) const {
    return tenon::can_from_bytes(*this, data);
}
void Node::to_disk(const std::string& path) const { write_file(path, to_bytes()); }
Node& Node::from_disk(const std::string& path) { return from_bytes(read_file(path)); }

}  // namespace tenon
