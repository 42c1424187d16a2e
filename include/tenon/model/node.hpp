// Node: what every model shares at run time, after Thinc's Model API: a name, a unique id,
// dims, parameters and their gradients, attributes (all by name), and the tree of children
// for walk(). It is a plain (non-template) base so that these by-name services are compiled
// once in src/node.cpp; layers use the typed fast paths (dim(i), param(i)) on the hot path.
#pragma once
#include <array>
#include <concepts>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <variant>
#include <vector>

#include "tenon/backend/ops.hpp"
#include "tenon/types/array.hpp"
#include "tenon/util/mutex.hpp"

namespace tenon {

template <std::size_t>
inline constexpr extent_t always_dyn = dyn;

namespace detail {
// The layout epoch: bumped whenever any node's dims, parameter shapes or children may have
// changed (set_dim, initialize, a loaded file, an assignment, replace_node/remove_node). A
// plan records it when made and compares it at each call (one relaxed load): when it moved,
// the plan checks that the model still has the layout it was made for (lower.hpp).
inline std::atomic<std::uint64_t> layout_epoch{1};
inline void layout_changed() noexcept { layout_epoch.fetch_add(1, std::memory_order_acq_rel); }

// A node's life, shared with the backprops of the begin_update calls made on it: its version
// moves whenever the node is destroyed, moved from, assigned, or its dims or parameters are
// reallocated (set_dim, initialize, a load, a move to other memory). A backprop records the
// version of the model it came from and refuses (tenon-E172) when it moved, rather than read
// freed or reshaped memory (Layer's CheckedBackprop). A plan's backprop checks the model's
// layout as well (lower.hpp); this catches a lone layer, a wrapper, and a moved model.
struct NodeLife {
    std::atomic<std::uint64_t> version{1};
    std::atomic<std::uint32_t> refs{1};  // the node and the backprops that hold it
    // Where the node that has this life is (its LifeSlot); null once it is destroyed. A held
    // plan checks it (lower.hpp): a model moved elsewhere or destroyed is not there any more,
    // while a re-initialised one is (the plan then compares its layout).
    std::atomic<const void*> holder{nullptr};
};
// (Out of line, src/node.cpp: a backprop's copy and destruction compile to one call each in
// every model's file, not a shared_ptr's inline machinery.)
NodeLife* life_new(const void* holder);
void life_retain(NodeLife* life) noexcept;
void life_release(NodeLife* life) noexcept;
void life_bump(NodeLife* life) noexcept;
class LifeSlot {
public:
    LifeSlot() : p_(life_new(this)) {}
    LifeSlot(const LifeSlot&) : LifeSlot() {}  // a copy is another node, with a life of its own
    LifeSlot& operator=(const LifeSlot&) noexcept {
        bump();  // this node's contents are replaced
        return *this;
    }
    // The moved-to node takes the life on, and its version moves: the backprops made on the
    // node moved from refuse (they point at it).
    LifeSlot(LifeSlot&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {
        if (p_) p_->holder.store(this, std::memory_order_release);
        bump();
    }
    LifeSlot& operator=(LifeSlot&& o) noexcept {
        bump();
        o.bump();
        return *this;
    }
    ~LifeSlot() {
        if (p_) {
            p_->holder.store(nullptr, std::memory_order_release);
            life_bump(p_);
            life_release(p_);
        }
    }
    void bump() noexcept {
        if (p_) life_bump(p_);
    }
    // (A node moved from has none until it is used again.)
    NodeLife* get() const {
        if (!p_) p_ = life_new(this);
        return p_;
    }

private:
    mutable NodeLife* p_;
};
// A counted reference to a node's life, and a mark of it taken when it was made: what a
// backprop holds (LifeWatch: the version) and what a held plan holds (PlaceWatch: the place).
template <class Mark>
class LifeRef {
public:
    LifeRef() = default;
    LifeRef(NodeLife* life, Mark mark) noexcept : life_(life), mark_(mark) { life_retain(life_); }
    LifeRef(const LifeRef& o) noexcept : life_(o.life_), mark_(o.mark_) {
        if (life_) life_retain(life_);
    }
    LifeRef(LifeRef&& o) noexcept : life_(std::exchange(o.life_, nullptr)), mark_(o.mark_) {}
    LifeRef& operator=(LifeRef o) noexcept {
        std::swap(life_, o.life_);
        std::swap(mark_, o.mark_);
        return *this;
    }
    ~LifeRef() {
        if (life_) life_release(life_);
    }

protected:
    NodeLife* life_ = nullptr;
    Mark mark_{};
};
// What a backprop holds of its model's life: the life (counted) and its version then.
class LifeWatch : public LifeRef<std::uint64_t> {
public:
    using LifeRef::LifeRef;
    void check() const {
        if (life_ && life_->version.load(std::memory_order_acquire) != mark_) [[unlikely]]
            throw_backprop_stale();
    }
    [[noreturn]] static void throw_backprop_stale();  // (src/node.cpp)
};
// What a held plan keeps of its model's life: the life (counted) and where its node was then.
// Unlike a backprop, a plan outlives re-initialisation (it compares the layout, lower.hpp),
// so only the node's place is watched: destroyed or moved, the plan refuses (tenon-E172).
class PlaceWatch : public LifeRef<const void*> {
public:
    PlaceWatch() = default;
    explicit PlaceWatch(NodeLife* life) noexcept : LifeRef(life, life->holder.load(std::memory_order_acquire)) {}
    bool held() const noexcept { return !life_ || life_->holder.load(std::memory_order_acquire) == mark_; }
};

// A parameter's value stamp: a number no other write of any parameter ever had, renewed by
// every tenon path that writes (or hands out for writing) a parameter's values, and copied
// with the values (a copied or assigned node holds the same values under the same stamp).
// So an unchanged stamp means unchanged values: a plan with frozen weights compares the
// stamps of the parameters it copied at each call and copies them again when one moved
// (docs/lowering.md, "Frozen weights"). Atomic: a serving thread reads it while another
// thread's set_param renews it.
inline std::atomic<std::uint64_t> stamp_counter{0};
inline std::uint64_t new_stamp() noexcept { return stamp_counter.fetch_add(1, std::memory_order_relaxed) + 1; }
class ValueStamp {
public:
    ValueStamp() noexcept : v_(new_stamp()) {}
    ValueStamp(const ValueStamp& o) noexcept : v_(o.get()) {}
    ValueStamp& operator=(const ValueStamp& o) noexcept {
        v_.store(o.get(), std::memory_order_release);
        return *this;
    }
    std::uint64_t get() const noexcept { return v_.load(std::memory_order_acquire); }
    void renew() noexcept { v_.store(new_stamp(), std::memory_order_release); }

private:
    std::atomic<std::uint64_t> v_;
};
// Held by set_param while it writes a parameter, and by a frozen plan while it copies
// parameters: a copy never sees half of a set_param (src/node.cpp).
Mutex& param_write_mutex() noexcept;
}  // namespace detail

// A parameter or gradient of any rank (<= 4), as get_param/get_grad return it.
template <class T>
struct BasicParamView {
    T* data = nullptr;
    std::array<std::size_t, 4> shape{};
    std::size_t rank = 0;

    std::size_t size() const noexcept {
        std::size_t n = rank ? 1 : 0;
        for (std::size_t i = 0; i < rank; ++i) n *= shape[i];
        return n;
    }
    T* begin() const noexcept { return data; }
    T* end() const noexcept { return data + size(); }
    ArrayView<T, dyn> flat() const { return ArrayView<T, dyn>(data, {size()}); }
    // Typed view of a given rank; throws if the rank differs.
    template <std::size_t R>
    auto as() const {
        if (R != rank) {
            std::string shape_text;
            for (std::size_t i = 0; i < rank; ++i) shape_text += (i ? ", " : "") + std::to_string(shape[i]);
            throw Error("as<" + std::to_string(R) + ">(): the parameter has rank " + std::to_string(rank) + " (shape (" +
                            shape_text + ")), not " + std::to_string(R),
                        "tenon-E103");
        }
        return as_impl<R>(std::make_index_sequence<R>{});
    }
    operator BasicParamView<const T>() const  // NOLINT
        requires(!std::is_const_v<T>)
    {
        return {data, shape, rank};
    }

private:
    template <std::size_t R, std::size_t... I>
    auto as_impl(std::index_sequence<I...>) const {
        return ArrayView<T, always_dyn<I>...>(data, {shape[I]...});
    }
};
using ParamView = BasicParamView<float>;
using CParamView = BasicParamView<const float>;

// Any float array converts to the view set_param takes.
template <class T, extent_t... E>
CParamView param_view(const ArrayView<T, E...>& v) {
    static_assert(sizeof...(E) <= 4, "parameters have rank <= 4");
    CParamView p;
    p.data = v.data();
    p.rank = sizeof...(E);
    for (std::size_t i = 0; i < p.rank; ++i) p.shape[i] = v.shape(i);
    return p;
}
template <extent_t... E>
CParamView param_view(const Array<float, E...>& a) {
    return param_view(a.view());
}

// A parameter's key, as in Thinc: (node id, parameter name).
using ParamKey = std::pair<std::uint64_t, std::string>;

// Attribute values, as in Thinc's model.attrs.
using Attr = std::variant<bool, std::int64_t, double, std::string>;

// A parameter as a layer declares it: its name and the dims its shape is made of, in order
// ({"W", {"nO", "nI"}}). The shape rule lets a loader check a file's shapes against the
// node's own dims before any layer reads the values (tenon/io/state.hpp).
struct ParamDecl {
    const char* name;
    std::array<const char*, 4> dims{};
    std::size_t rank = 0;
    ParamDecl(const char* n) : name(n) {}  // NOLINT: no shape rule
    ParamDecl(const char* n, std::initializer_list<const char*> d) : name(n) {
        for (const char* x : d)
            if (rank < dims.size()) dims[rank++] = x;
    }
};

namespace detail {
// 101 pointer fields that make every layer one variable, not ~30, to GCC's points-to
// analysis. That analysis is field-sensitive for a struct of at most 100 fields (GCC's
// --param max-fields-for-field-sensitive at -O2) and, in a function where many such
// objects' addresses escape, superlinear in all their fields together: a user's
// chain(l1, ..., l500) holds 500 layer temporaries, each passed to its constructor and
// destructor, and took 113 s to compile at -O2, 6.6 s with this (bench/compile, "chain500";
// the same 500 layers written with >>: 175 s -> 35 s). Nothing reads them; 808 bytes a node.
// Not conditional on the compiler: a node's layout must not depend on who compiled the file.
struct PointsToOpaque {
    const void *p0{}, *p1{}, *p2{}, *p3{}, *p4{}, *p5{}, *p6{}, *p7{}, *p8{}, *p9{}, *p10{}, *p11{}, *p12{}, *p13{}, *p14{}, *p15{}, *p16{};
    const void *p17{}, *p18{}, *p19{}, *p20{}, *p21{}, *p22{}, *p23{}, *p24{}, *p25{}, *p26{}, *p27{}, *p28{}, *p29{}, *p30{}, *p31{}, *p32{}, *p33{};
    const void *p34{}, *p35{}, *p36{}, *p37{}, *p38{}, *p39{}, *p40{}, *p41{}, *p42{}, *p43{}, *p44{}, *p45{}, *p46{}, *p47{}, *p48{}, *p49{}, *p50{};
    const void *p51{}, *p52{}, *p53{}, *p54{}, *p55{}, *p56{}, *p57{}, *p58{}, *p59{}, *p60{}, *p61{}, *p62{}, *p63{}, *p64{}, *p65{}, *p66{}, *p67{};
    const void *p68{}, *p69{}, *p70{}, *p71{}, *p72{}, *p73{}, *p74{}, *p75{}, *p76{}, *p77{}, *p78{}, *p79{}, *p80{}, *p81{}, *p82{}, *p83{}, *p84{};
    const void *p85{}, *p86{}, *p87{}, *p88{}, *p89{}, *p90{}, *p91{}, *p92{}, *p93{}, *p94{}, *p95{}, *p96{}, *p97{}, *p98{}, *p99{}, *p100{};
};
struct NodeAccess;  // the loader's way in (src/serialize.cpp)
struct ChainOps;    // a chain's type-independent parts (src/chain_store.cpp)
struct ModelApi;    // copy / replace_node / remove_node (src/model_api.cpp)
class NormDropout;  // the dense layers' LayerNorm/Dropout tail (src/norm_dropout.cpp)
struct DenseCore;   // the dense layers' passes (src/dense.cpp)
struct MaxoutCore;  // Maxout's (src/maxout.cpp)
struct MemoryMove;  // to_gpu / to_cpu (src/model_device.cpp)
}
namespace lowering {
struct ParamAccess;  // a plan's look-up of parameters and attributes by index (src/plan.cpp)
}
namespace detail {
// tenon-E119 (`who`: "relu: set_param('W')") when the values hold NaN or inf (src/node.cpp).
void require_finite_param(const std::string& who, CParamView values, const Ops& ops);
}

class Node {
public:
    virtual ~Node();  // (out of line, like the moves: not compiled again in every user's file)

    const std::string& name() const noexcept { return name_; }
    std::uint64_t id() const noexcept { return id_; }

    // Dims. has_dim: declared and known. get_dim throws if unknown or undeclared.
    bool has_dim(std::string_view name) const noexcept;
    std::size_t get_dim(std::string_view name) const;
    void set_dim(std::string_view name, std::size_t value, bool force = false);
    std::vector<std::string> dim_names() const;

    // Parameters (allocated by initialize) and gradients (zero until a backprop adds).
    bool has_param(std::string_view name) const noexcept;
    // The non-const get_param hands out the values for writing: it renews their stamp (a plan
    // with frozen weights copies them again at its next call). A write through the view
    // after that next call, a view kept across calls, is not seen by such a plan: write
    // with set_param, or get_param again (docs/lowering.md, "Frozen weights").
    ParamView get_param(std::string_view name);
    CParamView get_param(std::string_view name) const;
    // set_param may run while other threads predict with a plan whose weights are frozen:
    // their calls see the old values or the new ones, never a mix.
    void set_param(std::string_view name, CParamView value);  // values must be finite (tenon-E119)
    bool has_grad(std::string_view name) const noexcept;
    ParamView get_grad(std::string_view name);
    CParamView get_grad(std::string_view name) const;
    void set_grad(std::string_view name, CParamView value);
    void inc_grad(std::string_view name, CParamView value);
    // The gradient for a caller that writes every value of it instead of adding: `zero` says
    // whether its value is zero while its memory is not (then the caller must write, e.g. a
    // matrix product with beta = 0, not add). The lowered plan's weight gradients use it, so
    // that finish_update need not clear them and the next product need not read them.
    ParamView get_grad_for_overwrite(std::string_view name, bool& zero);
    std::vector<std::string> param_names() const;

    bool has_attr(std::string_view name) const noexcept;
    const Attr& get_attr(std::string_view name) const;
    void set_attr(std::string_view name, Attr value);
    // An attribute the layer fixed when it was made and keeps in its own members (a window
    // size, a padding, an index): set_attr stores it, and a file that says otherwise is
    // another architecture (tenon-E207), not a value to load.
    void set_fixed_attr(std::string_view name, Attr value);
    bool is_fixed_attr(std::string_view name) const noexcept;
    // State a layer keeps outside its dims, parameters and attributes that a file must carry
    // (remap_ids' table). save_extra appends it as attributes; load_extra checks such
    // attributes of a file (throwing an Error when they do not fit) and returns what applies
    // them, which must not throw, so that a load stays all or nothing. is_extra_attr says
    // which attribute names are the layer's extra state.
    using AttrList = std::vector<std::pair<std::string, Attr>>;
    virtual void save_extra(AttrList& /*out*/) const {}
    virtual std::function<void()> load_extra(const AttrList& /*attrs*/) { return {}; }
    virtual bool is_extra_attr(std::string_view /*name*/) const noexcept { return false; }
    // The attribute as a T (a double attribute also accepts an integer); a clear error
    // (tenon-E116) when it holds another type.
    template <class T>
    T attr_as(std::string_view name) const {
        const Attr& a = get_attr(name);
        if (const T* p = std::get_if<T>(&a)) return *p;
        if constexpr (std::is_same_v<T, double>)
            if (const auto* i = std::get_if<std::int64_t>(&a)) return static_cast<double>(*i);
        throw_attr_type(name, std::is_same_v<T, bool> ? "bool" : std::is_same_v<T, double> ? "a number"
                                                       : std::is_same_v<T, std::int64_t> ? "an integer"
                                                                                         : "a string");
    }

    // References to other nodes of the same tree, by name (Thinc's refs: a tok2vec's
    // "embed", a parser's "output_layer"). has_ref: set and not null. get_ref throws
    // (tenon-E230) when unset. Files save a ref as the walk index of its target.
    bool has_ref(std::string_view name) const noexcept;
    Node& get_ref(std::string_view name);
    const Node& get_ref(std::string_view name) const;
    void set_ref(std::string_view name, Node* node);
    std::vector<std::string> ref_names() const;

    // Files (tenon/io/serialize.hpp has the format): the whole model, its architecture and
    // weights, as bytes or a file; loading needs no sample data and, when it fails, leaves
    // the model exactly as it was. can_from_bytes answers without loading ("" when it would
    // load, else the error's message).
    std::vector<std::uint8_t> to_bytes() const;
    Node& from_bytes(std::span<const std::uint8_t> data);
    std::string can_from_bytes(std::span<const std::uint8_t> data) const;
    void to_disk(const std::string& path) const;
    Node& from_disk(const std::string& path);
    // Anything else than bytes (a file's path, which is from_disk's): tenon-E055.
    template <class B>
        requires(!std::is_convertible_v<const B&, std::span<const std::uint8_t>>)
    Node& from_bytes(const B&) {
        static_assert(sizeof(check::bytes_argument<check::given_type<check::name_t<B>>>) > 0);
        return *this;
    }
    template <class B>
        requires(!std::is_convertible_v<const B&, std::span<const std::uint8_t>>)
    std::string can_from_bytes(const B&) const {
        static_assert(sizeof(check::bytes_argument<check::given_type<check::name_t<B>>>) > 0);
        return {};
    }

    // Thinc's tree edits (src/model_api.cpp; docs/lifecycle.md, "The rest of the Model API").
    // replace_node: `old` (a node of this tree, or this node) takes on the state of
    // `replacement`, a model of the same dynamic type (else tenon-E233), in place: refs to
    // `old` stay valid, its subtree gets new ids, and refs inside the replacement's subtree are
    // remapped to their copies. False when `old` is not in the tree. The replacement is passed
    // as its own model type (its copy assignment is what is compiled for it: a model type's
    // file does not compile one for every node type it holds); a model seen only as a Node
    // cannot be a replacement (tenon-E233).
    template <class R>
        requires std::derived_from<R, Node>
    bool replace_node(Node& old, const R& replacement) {
        using Assign = void (*)(Node&, const Node&);
        Assign assign = nullptr;
        if constexpr (!std::is_abstract_v<R> && !std::is_same_v<R, Node> && std::is_copy_assignable_v<R>)
            assign = [](Node& to, const Node& from) { static_cast<R&>(to) = static_cast<const R&>(from); };
        return replace_node_as(old, replacement, typeid(R), assign);
    }
    // remove_node: takes `node` out of the dynamic child list that holds it (a clone's copies)
    // and clears the refs that no longer point into the tree (as Thinc). A node in a fixed
    // slot (a chain's typed child, a residual's layer) cannot go: tenon-E234. False when
    // `node` is not a descendant of this node.
    bool remove_node(Node& node);
    // (parameter, gradient) of every allocated parameter of the tree, keyed by (id, name).
    std::map<ParamKey, std::pair<ParamView, ParamView>> get_gradients();

    // Breadth-first over this node and its descendants (this node first), as Thinc.
    std::vector<Node*> walk();
    std::vector<const Node*> walk() const;
    // Direct children; combinators and layers with sub-layers override it.
    virtual void for_each_child(const std::function<void(Node&)>& /*f*/) {}
    void for_each_child(const std::function<void(const Node&)>& f) const;
    // The tree edits' hook: remove_child takes `child` out of a dynamic child list; false where
    // the child sits in a fixed slot (the default).
    virtual bool remove_child(Node& /*child*/) { return false; }
    // A model whose contents were moved into another (a chain's layers, an AnyModel's model)
    // throws tenon-E118 here: files are not written from it, nor loaded into it.
    virtual void require_contents() const {}
    virtual bool contents_initialized() const noexcept { return false; }

    // The backend that runs this node's computation (Thinc's model.ops): the products, row
    // passes, gathers, reductions and optimizer passes of the node and of plans made from
    // it. A new node takes current_ops() (the CPU's unless set_current_ops changed it);
    // set_ops changes it for this node and every descendant (their memory must be the
    // backend's: a device backend's to_gpu moves the parameters with it).
    const Ops& ops() const noexcept { return *ops_; }
    void set_ops(const Ops& ops);

    // One line per node: name, dims, whether initialised.
    std::string describe() const;
    // Whether initialize() has run (or the model was built from initialised parts).
    // (A node that holds another as its contents, an AnyModel, is initialised when its
    // contents are: a file loaded into any.model() initialises the AnyModel too.)
    bool is_initialized() const noexcept { return initialized_ || contents_initialized(); }

    // Gives every allocated parameter and its gradient to the optimizer, keyed by
    // (id, name) as in Thinc, then zeroes the gradient (lazily: see Param). Layer::finish_update calls it for
    // every node of the tree.
    void apply_optimizer(class Optimizer& optimizer);
    // apply_optimizer on this node and every descendant, depth first, without allocating
    // (walk() builds a list; a training step must not allocate: tests/unit/test_alloc.cpp).
    void apply_optimizer_tree(class Optimizer& optimizer);

    // The node's life as a backprop records it (detail::LifeWatch), and the change of it that
    // makes those recorded before refuse: a layer whose own parameters are replaced calls it.
    detail::LifeWatch life_watch() const {
        detail::NodeLife* p = life_.get();
        return {p, p->version.load(std::memory_order_acquire)};
    }
    void life_changed() noexcept { life_.bump(); }
    // Where the node is, as a held plan watches it.
    detail::PlaceWatch place_watch() const { return detail::PlaceWatch(life_.get()); }

protected:
    struct Dim {
        std::string name;
        std::size_t value = dyn;  // dyn: not known yet
        std::size_t fixed = dyn;  // static value from the type, or dyn
        // Set on this node by set_dim while another node owns the dim (dim_owner): the value
        // given to the combinator wins over its owner's until the combinator syncs again
        // (follow_dim), so that initialize can report a contradiction (tenon-E101).
        bool set_here = false;
    };
    struct Param {
        std::string name;
        std::vector<std::size_t> shape;  // empty until allocated
        Floats1d value;
        Floats1d grad;
        bool allocated = false;
        // The gradient is zero but its memory was not cleared: finish_update leaves it so,
        // and the first mutable access clears it (grad_data, the non-const get_grad,
        // inc_grad), or a caller that writes every value skips the clearing
        // (get_grad_for_overwrite: a product with beta = 0). Only the training thread's
        // mutable calls change it: a const get_grad reads it and, on a lazy zero, returns a
        // view of read-only zeros (detail::shared_zeros) without writing anything, so any
        // number of readers may call it at once (tests/unit/test_errors.cpp, "const get_grad").
        bool grad_lazy_zero = false;
        // The shape rule: the names of the dims the shape is made of (rank 0: none declared).
        std::array<const char*, 4> shape_dims{};
        std::size_t shape_rank = 0;
        // Renewed by every write of `value` (detail::ValueStamp): the non-const param(i) and
        // get_param, set_param, allocate_param, the optimizer's step, a load, a move between
        // memories.
        detail::ValueStamp stamp{};
    };

    Node(std::string name, std::initializer_list<std::pair<const char*, std::size_t>> dims,
         std::initializer_list<ParamDecl> params);
    // The node of a dense layer (dims nO, nI; W (nO, nI), b (nO)) and of a maxout layer (dims
    // nO, nI, nP; W (nO, nP, nI), b (nO, nP)), with the static widths (NO, NI, NP) and the
    // options' (nO, nI, nP; dyn where not given): built once, in the library, for every
    // width of Relu, Softmax, Linear, Mish, Gelu, Swish, HardSwish, Sigmoid and Maxout.
    static Node dense_node(const char* name, extent_t NO, extent_t NI, std::size_t nO, std::size_t nI);
    static Node maxout_node(extent_t NO, extent_t NI, extent_t NP, std::size_t nO, std::size_t nI,
                            std::size_t nP);
    // The node of a wrapper (with_array, ...) of `child`: named "<name>(<child's name>)",
    // dims nO and nI (static NO, NI: the child's static widths).
    static Node wrapper_node(const char* name, const Node& child, extent_t NO, extent_t NI);
    Node(const Node& other);  // a copy is a new node: it gets a new id
    Node& operator=(const Node& other);
    Node(Node&&) noexcept;  // a move keeps the id
    Node& operator=(Node&& other) noexcept;

    // Fast typed access for layer code.
    std::size_t dim(std::size_t i) const noexcept { return dims_[i].value; }
    void resolve_dim(std::size_t i, std::size_t value);  // set_dim with a clear error
    // Where dim `name` lives when another node owns it: a chain's nI is its first
    // width-changing layer's nI and its nO the last one's nO. has_dim/get_dim read the owner's
    // value where the owner knows it (so a child's forced set_dim shows at once, without a
    // write to this node: get_dim stays a pure read), unless a value was set on this node
    // since it last followed its owner (Dim::set_here). nullptr (the default): the node's
    // own value.
    virtual Node* dim_owner(std::string_view /*name*/) noexcept { return nullptr; }
    const Node* dim_owner(std::string_view name) const noexcept {
        return const_cast<Node*>(this)->dim_owner(name);
    }
    // Copies the owner's value of dim `name` (when it knows it) into this node and follows
    // the owner again (a chain after initialize).
    void follow_dim(std::string_view name);
    // Makes dim i static (chain's width propagation rebinds a dyn nI to the width before it);
    // throws if a different value was already set at run time.
    void fix_dim(std::size_t i, std::size_t value);
    std::size_t require_dim(std::size_t i) const;        // throws if unknown
    // nO and nI: the dims that must not be 0 (tenon-E260, throw_zero_width).
    static bool is_width(std::string_view name) noexcept;
    [[noreturn]] void throw_zero_width(const std::string& what) const;
    // (The mutable access renews the value's stamp: the caller may write it.)
    Param& param(std::size_t i) noexcept {
        params_[i].stamp.renew();
        return params_[i];
    }
    const Param& param(std::size_t i) const noexcept { return params_[i]; }
    // Parameter i's gradient, to add to (cleared first if it is a lazy zero).
    float* grad_data(std::size_t i) noexcept {
        settle_grad(params_[i]);
        return params_[i].grad.data();
    }
    // Parameter i's gradient for a caller that writes every value (get_grad_for_overwrite).
    float* grad_for_overwrite_data(std::size_t i, bool& zero) noexcept {
        zero = params_[i].grad_lazy_zero;
        params_[i].grad_lazy_zero = false;
        return params_[i].grad.data();  // not cleared: the caller writes every value
    }
    static void settle_grad(Param& p) noexcept;
    void allocate_param(std::size_t i, std::vector<std::size_t> shape);
    bool initialized() const noexcept { return initialized_; }
    void mark_initialized() noexcept { initialized_ = true; }
    void require_initialized() const;  // predict/begin_update before initialize

    std::string name_;

private:
    // replace_node's work (src/model_api.cpp): `assign` copies a node of type `as` (null: none).
    bool replace_node_as(Node& old, const Node& replacement, const std::type_info& as,
                         void (*assign)(Node&, const Node&));
    [[noreturn]] void throw_attr_type(std::string_view name, const char* expected) const;
    const Dim* find_dim(std::string_view name) const noexcept;
    Dim* find_dim(std::string_view name) noexcept;
    const Param* find_param(std::string_view name) const noexcept;
    Param* find_param(std::string_view name) noexcept;
    Param& require_param(std::string_view name);
    const Param& require_param(std::string_view name) const;

    std::uint64_t id_;
    std::vector<Dim> dims_;
    std::vector<Param> params_;
    std::vector<std::pair<std::string, Attr>> attrs_;
    std::vector<std::pair<std::string, Node*>> refs_;
    std::vector<std::string> fixed_attrs_;
    const Ops* ops_ = &current_ops();
    bool initialized_ = false;
    detail::LifeSlot life_;
    detail::PointsToOpaque points_to_opaque_;  // (compile time: see its definition)
    friend struct detail::NodeAccess;
    friend struct detail::ChainOps;
    friend struct detail::ModelApi;
    friend class detail::NormDropout;
    friend struct detail::DenseCore;
    friend struct detail::MaxoutCore;
    friend struct detail::MemoryMove;
    friend struct lowering::ParamAccess;
};

// The model tree, one node per line with its dims; a width fixed by the type is marked
// "(static)", one not known yet is "?":
//   relu>>relu>>softmax nO=10(static) nI=784(static)
//     relu nO=512(static) nI=784(static)
//     ...
inline std::string describe(const Node& model) { return model.describe(); }

}  // namespace tenon
