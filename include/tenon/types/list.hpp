// List<A>: a batch of arrays of one type and rank (Thinc's List[Floats2d], List[Ints1d]),
// e.g. one (length, width) array per sequence. A std::vector with the type's name, so that
// a layer's signature says what it takes and diagnostics print List<Floats2d>. Its buffer
// comes from tenon's block cache (detail::CacheAllocator), as the arrays' do: a warmed-up
// call that makes lists allocates nothing.
#pragma once
#include <cstddef>
#include <initializer_list>
#include <iterator>
#include <utility>
#include <vector>

#include "tenon/types/array.hpp"

namespace tenon {

template <class A>
class List : public std::vector<A, detail::CacheAllocator<A>> {
    static_assert(requires { A::rank; }, "tenon List<A>: A is a tenon array type (Floats2d, Ints1d, ...)");
    using base = std::vector<A, detail::CacheAllocator<A>>;

public:
    using array_type = A;
    using base::base;
    List() = default;
    // From a std::vector of arrays (the arrays are moved, not copied).
    explicit List(std::vector<A> items)
        : base(std::make_move_iterator(items.begin()), std::make_move_iterator(items.end())) {}
    const base& items() const noexcept { return *this; }
};

// The sequence types share a few checks; these are the ids of the run-time ones.
namespace detail {
// The total number of rows of a list of arrays, and the common shape after the rows
// (tenon-E150 where two arrays differ there: they cannot be concatenated).
template <class A>
std::size_t list_rows(const List<A>& xs, const char* who,
                      std::array<std::size_t, A::rank>* inner = nullptr) {
    std::size_t rows = 0;
    for (std::size_t i = 0; i < xs.size(); ++i) {
        rows += xs[i].shape(0);
        for (std::size_t d = 1; d < A::rank; ++d)
            if (xs[i].shape(d) != xs[0].shape(d))
                throw ShapeError(std::string(who) + ": every array of the list must have the shape of the first "
                                     "after its rows: array 0 has shape " + shape_str(xs[0].shape()) +
                                     " but array " + std::to_string(i) + " has " + shape_str(xs[i].shape()),
                                 "tenon-E150");
    }
    if (inner && !xs.empty()) *inner = xs[0].shape();
    return rows;
}
// (Compiled once, in the library, for the common data types: src/instances.cpp.)
extern template std::size_t list_rows<Floats2d>(const List<Floats2d>&, const char*, std::array<std::size_t, 2>*);
extern template std::size_t list_rows<Ints2d>(const List<Ints2d>&, const char*, std::array<std::size_t, 2>*);
}  // namespace detail

}  // namespace tenon

namespace tenon::check {
template <class T>
struct List {};
template <class A>
struct name_of<tenon::List<A>> {
    using type = check::List<name_t<A>>;
};
}  // namespace tenon::check
