// FlatTuple<Ts...>: a tuple for hundreds of elements (the backprops of a chain's layers).
// std::tuple does not scale: libstdc++'s is a recursion of base classes whose constructors'
// constraints recurse too (a 500-layer chain exceeds the default -ftemplate-depth), and
// any tuple of class bases or members gets special member functions (constructor,
// destructor, copy, move) with every element's inlined into one body, which the optimiser
// takes minutes over (GCC's points-to analysis is superlinear in a function's size).
// FlatTuple keeps its elements in one buffer at offsets computed by a constexpr loop, and
// its special members are run-time loops over tables with one function per distinct element
// *type*: 500 layers of five types compile five small functions and a loop.
//
//   FlatTuple<A, B> t;  get<0>(t), get<1>(t);  auto& [a, b] = t;
#pragma once
#include <array>
#include <cstddef>
#include <new>
#include <type_traits>
#include <utility>  // also declares std::tuple_size and std::tuple_element, specialised below

#include "tenon/util/pack.hpp"

namespace tenon {

namespace detail {
// Where each element lives in the buffer. (Plain arrays: GCC's constant evaluator takes
// several times the time and memory over std::array's operator[].)
template <class... Ts>
struct flat_layout {
    static constexpr std::size_t n = sizeof...(Ts);
    struct Result {
        std::size_t offset[n ? n : 1]{};
        std::size_t size = 1;
        std::size_t align = 1;
    };
    static constexpr Result value = [] {
        Result r;
        const std::size_t sizes[] = {sizeof(Ts)..., 0}, aligns[] = {alignof(Ts)..., 1};
        std::size_t at = 0;
        for (std::size_t i = 0; i < n; ++i) {
            at = (at + aligns[i] - 1) / aligns[i] * aligns[i];
            r.offset[i] = at;
            at += sizes[i];
            if (aligns[i] > r.align) r.align = aligns[i];
        }
        r.size = at ? at : 1;
        return r;
    }();
};

// The per-type operations behind the tables.
template <class T>
void flat_destroy(void* p) noexcept {
    static_cast<T*>(p)->~T();
}
template <class T>
void flat_default(void* p, const void*) {
    ::new (p) T();
}
template <class T>
void flat_copy(void* p, const void* from) {
    ::new (p) T(*static_cast<const T*>(from));
}
template <class T>
void flat_move(void* p, const void* from) {
    ::new (p) T(std::move(*static_cast<T*>(const_cast<void*>(from))));
}
template <class T>
void flat_copy_assign(void* p, const void* from) {
    *static_cast<T*>(p) = *static_cast<const T*>(from);
}
template <class T>
void flat_move_assign(void* p, const void* from) {
    *static_cast<T*>(p) = std::move(*static_cast<T*>(const_cast<void*>(from)));
}
using flat_destroy_fn = void (*)(void*) noexcept;
using flat_init_fn = void (*)(void*, const void*);

// Constructs element i at base + offset[i] with make(i, address) for each i in order; if one
// throws, destroys those made before it (in reverse) and rethrows.
template <class Make>
void flat_construct(std::size_t n, unsigned char* base, const std::size_t* offset, const flat_destroy_fn* destroy,
                    const Make& make) {
    std::size_t i = 0;
    try {
        for (; i < n; ++i) make(i, base + offset[i]);
    } catch (...) {
        while (i-- > 0) destroy[i](base + offset[i]);
        throw;
    }
}
}  // namespace detail

template <class... Ts>
class FlatTuple {
    static constexpr std::size_t N = sizeof...(Ts);
    using Layout = detail::flat_layout<Ts...>;
    static constexpr std::array<detail::flat_destroy_fn, N> destroy_{&detail::flat_destroy<Ts>...};

public:
    static constexpr std::size_t size() noexcept { return N; }

    FlatTuple()
        requires(all_true<std::is_default_constructible_v<Ts>...>)
    {
        static constexpr std::array<detail::flat_init_fn, N> make{&detail::flat_default<Ts>...};
        init(make.data(), nullptr);
    }
    FlatTuple(const FlatTuple& o)
        requires(all_true<std::is_copy_constructible_v<Ts>...>)
    {
        static constexpr std::array<detail::flat_init_fn, N> make{&detail::flat_copy<Ts>...};
        init(make.data(), &o);
    }
    FlatTuple(FlatTuple&& o) noexcept(all_true<std::is_nothrow_move_constructible_v<Ts>...>)
        requires(all_true<std::is_move_constructible_v<Ts>...>)
    {
        static constexpr std::array<detail::flat_init_fn, N> make{&detail::flat_move<Ts>...};
        init(make.data(), &o);
    }
    FlatTuple& operator=(const FlatTuple& o)
        requires(all_true<std::is_copy_assignable_v<Ts>...>)
    {
        static constexpr std::array<detail::flat_init_fn, N> assign{&detail::flat_copy_assign<Ts>...};
        if (this != &o)
            for (std::size_t i = 0; i < N; ++i) assign[i](address(i), o.address(i));
        return *this;
    }
    FlatTuple& operator=(FlatTuple&& o) noexcept(all_true<std::is_nothrow_move_assignable_v<Ts>...>)
        requires(all_true<std::is_move_assignable_v<Ts>...>)
    {
        static constexpr std::array<detail::flat_init_fn, N> assign{&detail::flat_move_assign<Ts>...};
        if (this != &o)
            for (std::size_t i = 0; i < N; ++i) assign[i](address(i), o.address(i));
        return *this;
    }
    ~FlatTuple() {
        for (std::size_t i = N; i-- > 0;) destroy_[i](address(i));
    }

    // The address of element i (typed access: get<I>).
    void* address(std::size_t i) noexcept { return storage_ + Layout::value.offset[i]; }
    const void* address(std::size_t i) const noexcept { return storage_ + Layout::value.offset[i]; }

private:
    // Element i from make[i](address, the same element of `from`), `from` a FlatTuple or null.
    void init(const detail::flat_init_fn* make, const FlatTuple* from) {
        detail::flat_construct(N, storage_, Layout::value.offset, destroy_.data(),
                               [&](std::size_t i, void* p) { make[i](p, from ? from->address(i) : nullptr); });
    }

    alignas(Layout::value.align) unsigned char storage_[Layout::value.size];
};

// get<I>(t): the I-th element (found by argument-dependent lookup, like std::get for tuples).
template <std::size_t I, class... Ts>
type_at_t<I, Ts...>& get(FlatTuple<Ts...>& t) noexcept {
    return *std::launder(static_cast<type_at_t<I, Ts...>*>(t.address(I)));
}
template <std::size_t I, class... Ts>
const type_at_t<I, Ts...>& get(const FlatTuple<Ts...>& t) noexcept {
    return *std::launder(static_cast<const type_at_t<I, Ts...>*>(t.address(I)));
}
template <std::size_t I, class... Ts>
type_at_t<I, Ts...>&& get(FlatTuple<Ts...>&& t) noexcept {
    return std::move(*std::launder(static_cast<type_at_t<I, Ts...>*>(t.address(I))));
}

}  // namespace tenon

// Structured bindings: auto& [a, b] = flat_tuple;
template <class... Ts>
struct std::tuple_size<tenon::FlatTuple<Ts...>> : std::integral_constant<std::size_t, sizeof...(Ts)> {};
template <std::size_t I, class... Ts>
struct std::tuple_element<I, tenon::FlatTuple<Ts...>> {
    using type = tenon::type_at_t<I, Ts...>;
};
