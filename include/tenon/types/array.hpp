// Dense arrays: row-major (like numpy, so W is (nO, nI) as in Thinc), each extent static or
// `dyn`, in an owning form (Array) and a non-owning form (ArrayView).  This header describes
// types only and does not include Eigen (see types/eigen.hpp for the zero-copy maps).
#pragma once
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <new>
#include <string>
#include <type_traits>
#include <utility>

#include "tenon/error.hpp"
#include "tenon/model/diagnostics.hpp"
#include "tenon/types/device_memory.hpp"

// TENON_ASAN: 1 when compiled with AddressSanitizer (g++ or clang++), else 0. Array memory
// then bypasses tenon's block cache (src/alloc.cpp), so ASan sees every use after free.
#ifndef TENON_ASAN
#if defined(__SANITIZE_ADDRESS__)
#define TENON_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TENON_ASAN 1
#endif
#endif
#endif
#ifndef TENON_ASAN
#define TENON_ASAN 0
#endif

#include "tenon/types/extent.hpp"

namespace tenon {

namespace detail {
inline constexpr std::size_t array_alignment = 64;

// A shape in words, "(4, 3)" (src/alloc.cpp: one body for every rank).
std::string shape_text(const std::size_t* shape, std::size_t rank);
template <std::size_t R>
std::string shape_str(const std::array<std::size_t, R>& s) {
    return shape_text(s.data(), R);
}

// Checks a run-time shape against the static extents of a type; `dyn` matches anything.
template <extent_t... Ext>
void check_extents(const std::array<std::size_t, sizeof...(Ext)>& shape) {
    constexpr std::array<std::size_t, sizeof...(Ext)> want{static_cast<std::size_t>(Ext)...};
    for (std::size_t i = 0; i < sizeof...(Ext); ++i)
        if (want[i] != dyn && want[i] != shape[i])
            throw ShapeError("array: extent " + std::to_string(i) + " is static " +
                                 std::to_string(want[i]) + " but the shape is " + shape_str(shape),
                             "tenon-E102");
}

template <extent_t... Ext>
constexpr std::array<std::size_t, sizeof...(Ext)> default_shape() {
    return {(Ext == dyn ? std::size_t{0} : static_cast<std::size_t>(Ext))...};
}

// Two extent lists can describe the same array unless both are static and differ.
template <extent_t A, extent_t B>
inline constexpr bool extent_compatible = A == dyn || B == dyn || A == B;
}  // namespace detail

template <class T, extent_t... Ext>
class ArrayView {
    static_assert(sizeof...(Ext) >= 1, "tenon arrays have rank >= 1");

public:
    using value_type = std::remove_const_t<T>;
    using element_type = T;
    static constexpr std::size_t rank = sizeof...(Ext);
    static constexpr std::array<std::size_t, rank> static_extents{static_cast<std::size_t>(Ext)...};
    using shape_type = std::array<std::size_t, rank>;

    ArrayView() noexcept : data_(nullptr), shape_(detail::default_shape<Ext...>()) {}
    ArrayView(T* data, const shape_type& shape) : data_(data), shape_(shape) {
        detail::check_extents<Ext...>(shape_);
    }
    // Views convert to views of const data and to views with fewer static extents; a static
    // extent that the source leaves dyn is checked at run time.
    template <class U, extent_t... E2>
        requires(sizeof...(E2) == rank && std::is_convertible_v<U*, T*> &&
                 (detail::extent_compatible<Ext, E2> && ...))
    ArrayView(const ArrayView<U, E2...>& other)  // NOLINT(google-explicit-constructor)
        : data_(other.data()), shape_(other.shape()) {
        if constexpr (((Ext != dyn && E2 == dyn) || ...)) detail::check_extents<Ext...>(shape_);
    }
    // A view whose static extents differ from these: E013 when written explicitly (an
    // implicit conversion is no candidate at all, so overload resolution is unchanged).
    template <class U, extent_t... E2>
        requires(sizeof...(E2) == rank && std::is_convertible_v<U*, T*> &&
                 !(detail::extent_compatible<Ext, E2> && ...))
    explicit ArrayView(const ArrayView<U, E2...>&) : ArrayView() {
        static_assert(sizeof(check::array_extents<check::name_t<ArrayView>, check::name_t<ArrayView<U, E2...>>>) > 0);
    }

    T* data() const noexcept { return data_; }
    const shape_type& shape() const noexcept { return shape_; }
    std::size_t shape(std::size_t i) const noexcept { return shape_[i]; }
    std::size_t size() const noexcept {
        std::size_t n = 1;
        for (auto s : shape_) n *= s;
        return n;
    }
    bool empty() const noexcept { return size() == 0; }
    T* begin() const noexcept { return data_; }
    T* end() const noexcept { return data_ + size(); }

    // Element access: a(i, j, ...) with row-major strides.
    template <class... I>
        requires(sizeof...(I) == rank)
    T& operator()(I... idx) const noexcept {
        std::size_t off = 0, k = 0;
        ((off = off * shape_[k++] + static_cast<std::size_t>(idx)), ...);
        return data_[off];
    }
    T& operator[](std::size_t i) const noexcept { return data_[i]; }

    // Row i of a rank >= 2 view, as a view of rank - 1.
    auto row(std::size_t i) const noexcept
        requires(rank >= 2)
    {
        return row_impl(i, std::make_index_sequence<rank - 1>{});
    }
    // The flat data as a rank-1 view.
    ArrayView<T, dyn> flat() const noexcept { return ArrayView<T, dyn>(data_, {size()}); }

private:
    template <std::size_t... I>
    auto row_impl(std::size_t i, std::index_sequence<I...>) const noexcept {
        constexpr std::array<extent_t, rank> ext{Ext...};
        using Row = ArrayView<T, ext[I + 1]...>;
        std::size_t stride = 1;
        for (std::size_t k = 1; k < rank; ++k) stride *= shape_[k];
        return Row(data_ + i * stride, {shape_[I + 1]...});
    }

    T* data_;
    shape_type shape_;
};

namespace detail {
// 64-byte aligned blocks for array data (src/alloc.cpp). Blocks freed by a thread are kept
// for its next allocations of about that size (size classes): a training step or a predict
// allocates the same arrays every time, and without the cache each large block is a fresh
// mmap with page faults. array_alloc returns a block of at least `bytes` and sets `capacity`
// to its size, which array_free must be given back; it throws std::bad_alloc when the
// system has no memory (Array turns it into tenon-E241, with the shape).
void* array_alloc(std::size_t bytes, std::size_t& capacity);
void array_free(void* p, std::size_t capacity) noexcept;
// array_free or device_free by the block's memory.
void free_array_block(void* p, std::size_t capacity, Memory where) noexcept;
// The bytes of an array of `rank` extents of `elem_size`-byte elements; tenon-E240 when the
// product overflows or exceeds PTRDIFF_MAX (an allocation of that size cannot exist).
std::size_t checked_bytes(const std::size_t* shape, std::size_t rank, std::size_t elem_size);
[[noreturn]] void throw_alloc_failed(std::size_t bytes, const std::string& shape);  // tenon-E241
// An array's buffer (Array::allocate; one body for every element type, src/alloc.cpp): its
// bytes checked (tenon-E240), a block from the block cache (host) or the device allocator,
// zeroed if asked; null for an empty shape. tenon-E241 when the system has no memory for it,
// tenon-E341 when a device block cannot be had. Sets `block` to the block's size.
void* allocate_array(const std::size_t* shape, std::size_t rank, std::size_t elem_size, bool zero, Memory where,
                     std::size_t& block);
// The block cache: on by default, off under AddressSanitizer; TENON_ARRAY_CACHE=0 or 1 in the
// environment decides at the first allocation; set_array_cache changes it for the process.
void set_array_cache(bool on) noexcept;
bool array_cache_enabled() noexcept;

// The same cache for the small bookkeeping of a call (a List's vector, the layouts the
// combinators compare), through CacheAllocator: blocks of the size class of `bytes` (so that
// block_free needs only the size the container gives back).
void* block_alloc(std::size_t bytes);
void block_free(void* p, std::size_t bytes) noexcept;
template <class T>
struct CacheAllocator {
    using value_type = T;
    CacheAllocator() noexcept = default;
    template <class U>
    CacheAllocator(const CacheAllocator<U>&) noexcept {}
    T* allocate(std::size_t n) {
        static_assert(alignof(T) <= array_alignment);
        if (n > std::size_t(PTRDIFF_MAX) / sizeof(T)) throw std::bad_array_new_length();
        return static_cast<T*>(block_alloc(n * sizeof(T)));
    }
    void deallocate(T* p, std::size_t n) noexcept { block_free(p, n * sizeof(T)); }
    template <class U>
    bool operator==(const CacheAllocator<U>&) const noexcept {
        return true;
    }
};

// An array's storage: its block's size and where it lives (the memory tag: host blocks come
// from the block cache, device blocks from the device allocator, types/device_memory.hpp).
struct ArrayDelete {
    std::size_t capacity = 0;  // the block's size (array_alloc's or device_alloc's)
    Memory where = Memory::host;
    // (One call, src/alloc.cpp: every array destructor in a model's file inlines it.)
    void operator()(void* p) const noexcept { free_array_block(p, capacity, where); }
};
}  // namespace detail

// The block cache's memory (docs/reliability.md, "Memory"). Each thread keeps the blocks of
// the arrays it frees for its next calls, up to a bound per thread: 256 MiB unless
// TENON_ARRAY_CACHE_MB is set in the environment (read at the first allocation) or
// set_array_cache_limit is called. A cache holds a few times the arrays of the largest call
// its thread has made; 0 turns caching off (every array is then a heap allocation).
void set_array_cache_limit(std::size_t bytes_per_thread) noexcept;
std::size_t array_cache_limit() noexcept;
// Hands every thread's cached blocks back to the system: the calling thread's at once, each
// other thread's at its next array allocation or free (a thread never touches another's
// cache). For a service after a burst of large batches, or before a long idle time.
void release_array_cache() noexcept;
// The bytes that all threads' caches hold now.
std::size_t array_cache_bytes() noexcept;

// Tag for constructing an array whose contents will be overwritten at once.
struct uninitialized_t {
    explicit uninitialized_t() = default;
};
inline constexpr uninitialized_t uninitialized{};

// An owning, 64-byte aligned array. Copies are deep; moves are cheap. Zero-filled unless
// constructed with `uninitialized`. Its memory is the host's or the device's (memory(): the
// tag its storage carries, docs/cuda.md): a new array gets detail::current_memory() (the
// model's inside a model's calls, else set_default_memory's; an integer array: the host's) unless
// a Memory is given; a copy keeps its source's; to_device / to_host (model/device.hpp) move
// arrays between the two.
// Element access reads the memory on the host: for device arrays that works only where the
// device's memory is host memory (the device-host build) or managed.
template <class T, extent_t... Ext>
class Array {
    static_assert(std::is_arithmetic_v<T>, "tenon arrays hold arithmetic values");

public:
    using value_type = T;
    static constexpr std::size_t rank = sizeof...(Ext);
    using shape_type = std::array<std::size_t, rank>;
    using view_type = ArrayView<T, Ext...>;
    using const_view_type = ArrayView<const T, Ext...>;

    Array() : shape_(detail::default_shape<Ext...>()) { allocate(true); }  // a static shape is zero-filled too
    explicit Array(const shape_type& shape) : shape_(shape) {
        detail::check_extents<Ext...>(shape_);
        allocate(true);
    }
    Array(const shape_type& shape, uninitialized_t) : shape_(shape) {
        detail::check_extents<Ext...>(shape_);
        allocate(false);
    }
    // In the given memory.
    Array(const shape_type& shape, Memory m) : shape_(shape) {
        detail::check_extents<Ext...>(shape_);
        allocate(true, m);
    }
    Array(const shape_type& shape, uninitialized_t, Memory m) : shape_(shape) {
        detail::check_extents<Ext...>(shape_);
        allocate(false, m);
    }
    Array(const shape_type& shape, std::initializer_list<T> values) : Array(shape, uninitialized) {
        if (values.size() != size())
            throw ShapeError("array: " + std::to_string(values.size()) + " values given for shape " +
                                 detail::shape_str(shape_),
                             "tenon-E102");
        detail::copy_bytes(data_.get(), memory(), values.begin(), Memory::host, size() * sizeof(T));
    }
    // Deep copy of any view with compatible extents.
    template <class U, extent_t... E2>
        requires(sizeof...(E2) == rank && std::is_same_v<std::remove_const_t<U>, T>)
    explicit Array(const ArrayView<U, E2...>& v) : Array(v.shape(), uninitialized) {
        // E013 where a static extent of the view differs from the array's.
        if constexpr (!(detail::extent_compatible<Ext, E2> && ...))
            static_assert(sizeof(check::array_extents<check::name_t<Array>, check::name_t<ArrayView<U, E2...>>>) > 0);
        detail::copy_bytes(data_.get(), memory(), v.data(), detail::memory_of(v.data()), size() * sizeof(T));
    }

    // A copy lives where its source does.
    Array(const Array& o) : Array(o.shape_, uninitialized, o.memory()) {
        detail::copy_bytes(data_.get(), memory(), o.data_.get(), o.memory(), size() * sizeof(T));
    }
    Array(Array&& o) noexcept : data_(std::move(o.data_)), shape_(o.shape_), capacity_(o.capacity_) {
        o.shape_ = detail::default_shape<Ext...>();
        o.capacity_ = 0;
        if constexpr (((Ext == dyn) || ...)) {
        } else {
            o.allocate(false, memory());  // keep the moved-from fixed-shape array valid
        }
    }
    Array& operator=(const Array& o) {
        if (this != &o) {
            if (memory() != o.memory()) return *this = Array(o);  // a copy lives where its source does
            resize(o.shape_, uninitialized);
            detail::copy_bytes(data_.get(), memory(), o.data_.get(), o.memory(), size() * sizeof(T));
        }
        return *this;
    }
    Array& operator=(Array&& o) noexcept {
        if (this == &o) return *this;
        data_ = std::move(o.data_);
        shape_ = o.shape_;
        capacity_ = o.capacity_;
        o.shape_ = detail::default_shape<Ext...>();
        o.capacity_ = 0;
        if constexpr (((Ext == dyn) || ...)) {
        } else {
            o.allocate(false, memory());  // as the move constructor: a fixed-shape array never has a null buffer
        }
        return *this;
    }

    // Changes the shape; keeps the buffer when it is large enough (no allocation), so
    // arrays reused across calls of the same batch size stop allocating.
    void resize(const shape_type& shape, uninitialized_t) {
        detail::check_extents<Ext...>(shape);
        (void)detail::checked_bytes(shape.data(), rank, sizeof(T));  // tenon-E240 before any change
        if (size_of(shape) > capacity_) {
            const shape_type old = shape_;
            shape_ = shape;
            try {
                allocate(false, memory());
            } catch (...) {
                shape_ = old;  // the array as it was (allocate changes nothing else when it throws)
                throw;
            }
        } else {
            shape_ = shape;
        }
    }
    void resize(const shape_type& shape) {
        resize(shape, uninitialized);
        fill(T{});
    }
    void fill(T v) {
        if (memory() == Memory::host)
            std::fill(data_.get(), data_.get() + size(), v);
        else
            detail::fill_device(data_.get(), size(), &v, sizeof(T));
    }
    // Where the array's memory lives (the tag its storage carries).
    Memory memory() const noexcept { return data_.get_deleter().where; }

    T* data() noexcept { return data_.get(); }
    const T* data() const noexcept { return data_.get(); }
    const shape_type& shape() const noexcept { return shape_; }
    std::size_t shape(std::size_t i) const noexcept { return shape_[i]; }
    std::size_t size() const noexcept {
        std::size_t n = 1;
        for (auto s : shape_) n *= s;
        return n;
    }
    bool empty() const noexcept { return size() == 0; }
    T* begin() noexcept { return data(); }
    T* end() noexcept { return data() + size(); }
    const T* begin() const noexcept { return data(); }
    const T* end() const noexcept { return data() + size(); }

    template <class... I>
        requires(sizeof...(I) == rank)
    T& operator()(I... idx) noexcept {
        return view()(idx...);
    }
    template <class... I>
        requires(sizeof...(I) == rank)
    const T& operator()(I... idx) const noexcept {
        return view()(idx...);
    }
    T& operator[](std::size_t i) noexcept { return data_.get()[i]; }
    const T& operator[](std::size_t i) const noexcept { return data_.get()[i]; }

    view_type view() noexcept { return view_type(data(), shape_); }
    const_view_type view() const noexcept { return const_view_type(data(), shape_); }
    operator view_type() noexcept { return view(); }              // NOLINT
    operator const_view_type() const noexcept { return view(); }  // NOLINT
    // Also convert to views with fewer static extents (checked when they differ). A const
    // array gives read-only views only.
    template <class U, extent_t... E2>
        requires(sizeof...(E2) == rank && (std::is_same_v<U, T> || std::is_same_v<U, const T>) &&
                 !std::is_same_v<ArrayView<U, E2...>, view_type> &&
                 !std::is_same_v<ArrayView<U, E2...>, const_view_type> &&
                 (detail::extent_compatible<Ext, E2> && ...))
    operator ArrayView<U, E2...>() {  // NOLINT
        return ArrayView<U, E2...>(data(), shape_);
    }
    template <class U, extent_t... E2>
        requires(sizeof...(E2) == rank && std::is_same_v<U, const T> &&
                 !std::is_same_v<ArrayView<U, E2...>, const_view_type> &&
                 (detail::extent_compatible<Ext, E2> && ...))
    operator ArrayView<U, E2...>() const {  // NOLINT
        return ArrayView<U, E2...>(data(), shape_);
    }
    // A view whose static extents differ from the array's: E013 when written explicitly
    // (static_cast); an implicit conversion is no candidate, as above.
    template <class U, extent_t... E2>
        requires(sizeof...(E2) == rank && (std::is_same_v<U, T> || std::is_same_v<U, const T>) &&
                 !(detail::extent_compatible<Ext, E2> && ...))
    explicit operator ArrayView<U, E2...>() const {
        static_assert(sizeof(check::array_extents<check::name_t<ArrayView<U, E2...>>, check::name_t<Array>>) > 0);
        return {};
    }
    auto row(std::size_t i) noexcept
        requires(rank >= 2)
    {
        return view().row(i);
    }
    auto row(std::size_t i) const noexcept
        requires(rank >= 2)
    {
        return view().row(i);
    }

private:
    static std::size_t size_of(const shape_type& shape) noexcept {
        std::size_t n = 1;
        for (auto s : shape) n *= s;
        return n;
    }
    // Where a new array goes unless told: a float array to detail::current_memory() (the model's
    // inside its calls, else the default); an integer one (ids, lengths, indices: bookkeeping that
    // host code reads) to the host. What a device pass reads or writes as integers (row indices,
    // maxout's `which`) is made in its backend's memory by name (docs/cuda.md).
    static Memory new_memory() noexcept {
        return std::is_floating_point_v<T> ? detail::current_memory() : Memory::host;
    }
    // A buffer for shape_: tenon-E240 when its size overflows, tenon-E241 when the system has
    // no memory for it (the array is then unchanged).
    // A device block that cannot be had (the allocator's cap, the device's memory) is
    // tenon-E341 (the array is then unchanged too).
    void allocate(bool zero, Memory where = new_memory()) {
        std::size_t block = 0;
        T* p = static_cast<T*>(detail::allocate_array(shape_.data(), rank, sizeof(T), zero, where, block));
        data_ = std::unique_ptr<T[], detail::ArrayDelete>(p, detail::ArrayDelete{block, where});
        capacity_ = block / sizeof(T);  // a cached block may be larger than asked: resize may use it
    }

    std::unique_ptr<T[], detail::ArrayDelete> data_;
    shape_type shape_;
    std::size_t capacity_ = 0;
};

// The names Thinc uses, with every extent dyn. Static forms: Array<float, dyn, 784> etc.
using Floats1d = Array<float, dyn>;
using Floats2d = Array<float, dyn, dyn>;
using Floats3d = Array<float, dyn, dyn, dyn>;
using Floats4d = Array<float, dyn, dyn, dyn, dyn>;
using Ints1d = Array<std::int32_t, dyn>;
using Ints2d = Array<std::int32_t, dyn, dyn>;
using Keys1d = Array<std::uint64_t, dyn>;
using Keys2d = Array<std::uint64_t, dyn, dyn>;

// Views: `...View` may write, `...CView` reads only. Owning arrays convert to both.
using Floats1dView = ArrayView<float, dyn>;
using Floats2dView = ArrayView<float, dyn, dyn>;
using Floats3dView = ArrayView<float, dyn, dyn, dyn>;
using Floats1dCView = ArrayView<const float, dyn>;
using Floats2dCView = ArrayView<const float, dyn, dyn>;
using Floats3dCView = ArrayView<const float, dyn, dyn, dyn>;
using Ints1dCView = ArrayView<const std::int32_t, dyn>;
using Ints2dCView = ArrayView<const std::int32_t, dyn, dyn>;

// A copy of an array (or a view's values) in the given memory, a copy even where it is there
// already (to_device / to_host and the other data types' overloads: model/device.hpp).
template <class T, extent_t... E>
Array<T, E...> to_memory(const Array<T, E...>& a, Memory m) {
    Array<T, E...> out(a.shape(), uninitialized, m);
    detail::copy_bytes(out.data(), m, a.data(), a.memory(), a.size() * sizeof(T));
    return out;
}
template <class T, extent_t... E>
Array<std::remove_const_t<T>, E...> to_memory(const ArrayView<T, E...>& v, Memory m) {
    Array<std::remove_const_t<T>, E...> out(v.shape(), uninitialized, m);
    detail::copy_bytes(out.data(), m, v.data(), detail::memory_of(v.data()), v.size() * sizeof(T));
    return out;
}

namespace detail {
// `a` in memory m: itself when it is there, else a copy. For integer arrays made by host code
// (a layer's row indices: its hashing, its range checks) that a backend's pass reads.
template <class T, extent_t... E>
Array<T, E...> in_memory(Array<T, E...> a, Memory m) {
    if (a.memory() == m) return a;
    return to_memory(a, m);
}
}  // namespace detail

}  // namespace tenon
