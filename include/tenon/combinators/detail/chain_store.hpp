// Where a chain keeps its layers: each on the heap, reached through a run-time table of
// (address, per-type operations). Why not one buffer typed by the layers (a tuple): every
// special member of such a buffer (construction, destruction, copy, move) is a function of
// the whole list of layer types, compiled once per chain type. `a >> b >> c >> ...` makes a
// new chain type at every step, so a model of n layers written with `>>` compiled n such
// functions of up to n layers each: quadratic (219 s for 500 layers). Here the store's special
// members are one non-template class (src/chain_store.cpp) and a layer type contributes one
// table of its operations (layer_ops<L>), shared by every chain and position; appending a
// layer to an rvalue chain takes over its store (a >> b's step is O(1) code) and keeps the
// layers where they are (a moved chain's layers keep their addresses).
//
// A chain whose store was taken (it was moved from, or was the left side of a >> that moved
// it) holds no layers; its entry points say so (tenon-E118) rather than reading nothing.
#pragma once
#include <cstddef>
#include <new>
#include <string>
#include <type_traits>
#include <utility>

#include "tenon/util/pack.hpp"

namespace tenon {
class Node;

namespace detail {

// What the store does with a layer of one type (one table per type).
struct LayerOps {
    void (*destroy)(void*) noexcept;                 // delete the layer
    Node* (*as_node)(void*) noexcept;                // its Node
};
// How a chain copies its layer at one position: given by the chain's copy constructor and
// assignment (ChainLayers), so a layer's copy is compiled only for a chain that is copied.
struct LayerCopy {
    void* (*copy_new)(const void*);                  // a new copy on the heap (null: not copyable)
    void (*copy_assign)(void*, const void*);         // assign a layer of the same type (null: no)
};

template <class T>
void layer_destroy(void* p) noexcept {
    delete static_cast<T*>(p);
}
template <class T>
Node* layer_as_node(void* p) noexcept {
    return static_cast<T*>(p);
}
template <class T>
void* layer_copy_new(const void* p) {
    return new T(*static_cast<const T*>(p));
}
template <class T>
void layer_copy_assign(void* to, const void* from) {
    *static_cast<T*>(to) = *static_cast<const T*>(from);
}

template <class T>
inline constexpr LayerOps layer_ops{&layer_destroy<T>, &layer_as_node<T>};
template <class T>
inline constexpr LayerCopy layer_copy{
    [] {
        if constexpr (std::is_copy_constructible_v<T>) return &layer_copy_new<T>;
        else return static_cast<void* (*)(const void*)>(nullptr);
    }(),
    [] {
        if constexpr (std::is_copy_assignable_v<T>) return &layer_copy_assign<T>;
        else return static_cast<void (*)(void*, const void*)>(nullptr);
    }()};

// tenon-E118: a chain whose layers were moved into another chain was used.
[[noreturn]] void throw_moved_chain(const std::string& chain_name);
// tenon-E118: a chain's backprop that no forward pass made (default-constructed) was called.
[[noreturn]] void throw_empty_backprop();

// One layer of a store: its address and its type's operations.
struct LayerEntry {
    void* object = nullptr;
    const LayerOps* ops = nullptr;
};

// A new layer T on the heap, moved or copied (or converted) from `from`.
template <class T, class From>
LayerEntry make_layer_entry(From&& from) {
    return {new T(std::forward<From>(from)), &layer_ops<T>};
}

// The layers of a chain, in order. Copying copies every layer (a copy is a new node with a
// new id); moving takes the layers over (the source is left empty); destroying deletes them.
class ChainStore {
public:
    ChainStore() noexcept = default;
    // Room for n layers, then push() each.
    explicit ChainStore(std::size_t n);
    ChainStore(ChainStore&& other) noexcept
        : entries_(std::exchange(other.entries_, nullptr)),
          size_(std::exchange(other.size_, 0)),
          capacity_(std::exchange(other.capacity_, 0)) {}
    // The layers of `prefix`, taken over, then room for `more` layers.
    ChainStore(ChainStore&& prefix, std::size_t more);
    // A copy of every layer of `other`: copies[i] copies its layer i (a chain of the same type).
    ChainStore(const ChainStore& other, const LayerCopy* copies);
    ChainStore(const ChainStore&) = delete;
    // Same length (a copy of a chain of the same type): each layer assigned in place, so the
    // layers keep their addresses; otherwise (this one was moved from) a copy replaces them.
    void assign(const ChainStore& other, const LayerCopy* copies);
    ChainStore& operator=(const ChainStore&) = delete;
    ChainStore& operator=(ChainStore&& other) noexcept;
    ~ChainStore();

    // Adds a layer made by make_layer_entry: the store owns it from here (and deletes it if
    // there is no memory to keep it).
    void push(LayerEntry e);

    // How many layers it holds (0 once moved from; ChainLayers::size() is the type's count).
    std::size_t count() const noexcept { return size_; }
    bool empty() const noexcept { return size_ == 0; }
    void* address(std::size_t i) noexcept { return entries_[i].object; }
    const void* address(std::size_t i) const noexcept { return entries_[i].object; }
    Node* node(std::size_t i) const noexcept { return entries_[i].ops->as_node(entries_[i].object); }

private:
    void release() noexcept;
    LayerEntry* entries_ = nullptr;
    std::size_t size_ = 0;
    std::size_t capacity_ = 0;
};

// The parts of a chain that do not depend on its layer types, compiled once (a friend of Node).
struct ChainOps {
    // After construction: the chain's name (its layers' names joined by >>); a chain of
    // initialised layers is initialised, and takes its widths from them; otherwise it takes
    // the widths its layers already know, nI where `nI_dyn` (its type leaves nI dyn), nO
    // where `nO_dyn`.
    static void finish(Node& chain, const ChainStore& layers, std::size_t nI_from, std::size_t y_from, bool nI_dyn,
                       bool nO_dyn);
    // The chain follows its nI from layer nI_from and its nO from layer y_from, where they
    // know them.
    static void sync_dims(Node& chain, const ChainStore& layers, std::size_t nI_from, std::size_t y_from, bool nI,
                          bool nO);
    // Around each layer's initialize in a chain (chain_init_layer), the same for every layer
    // type. Before: tenon-E101 when the layer's nI is not `produced` (the sample's width, or
    // `width` from the layer before; dyn: unknown), and without a sample the layer's open nI
    // set from `width`. After: the width the next layer gets (the layer's nO; unchanged by a
    // width-preserving layer; else unknown).
    static void before_init(Node& layer, std::size_t produced, std::size_t width, bool has_sample);
    static void after_init(const Node& layer, std::size_t& width, bool width_preserving);
};

}  // namespace detail

// A chain's layers, typed: get<I>(chain.layers()), auto& [a, b, c] = chain.layers(). (The
// types are only in the name: the class adds nothing to the store, so naming a new chain
// type compiles nothing new.)
template <class... Ls>
class ChainLayers : public detail::ChainStore {
public:
    using detail::ChainStore::ChainStore;
    ChainLayers(ChainLayers&&) noexcept = default;
    ChainLayers& operator=(ChainLayers&&) noexcept = default;
    // (Compiled only where a chain of this type is copied: its layers' copies with it.)
    ChainLayers(const ChainLayers& other) : detail::ChainStore(other, copies()) {}
    ChainLayers& operator=(const ChainLayers& other) {
        assign(other, copies());
        return *this;
    }
    static constexpr std::size_t size() noexcept { return sizeof...(Ls); }

private:
    static const detail::LayerCopy* copies() noexcept {
        static constexpr detail::LayerCopy table[] = {detail::layer_copy<Ls>...};
        return table;
    }
};

template <std::size_t I, class... Ls>
type_at_t<I, Ls...>& get(ChainLayers<Ls...>& t) noexcept {
    return *static_cast<type_at_t<I, Ls...>*>(t.address(I));
}
template <std::size_t I, class... Ls>
const type_at_t<I, Ls...>& get(const ChainLayers<Ls...>& t) noexcept {
    return *static_cast<const type_at_t<I, Ls...>*>(t.address(I));
}
template <std::size_t I, class... Ls>
type_at_t<I, Ls...>&& get(ChainLayers<Ls...>&& t) noexcept {
    return std::move(*static_cast<type_at_t<I, Ls...>*>(t.address(I)));
}

}  // namespace tenon

template <class... Ls>
struct std::tuple_size<tenon::ChainLayers<Ls...>> : std::integral_constant<std::size_t, sizeof...(Ls)> {};
template <std::size_t I, class... Ls>
struct std::tuple_element<I, tenon::ChainLayers<Ls...>> {
    using type = tenon::type_at_t<I, Ls...>;
};
