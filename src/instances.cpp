// The data types' helpers that every model's file would otherwise compile for itself (the
// sequence conversions, the transfers' flatten / unflatten, the combinators' sums, slices and
// concatenations, a Ragged's check), compiled once here for the common data types (Floats2d,
// Ints2d); the headers declare these `extern template`, and compile them for any other type.
#include <array>
#include <cstdint>
#include <string>

#include "tenon/combinators/detail/data_ops.hpp"
#include "tenon/transfers/detail/transfer.hpp"
#include "tenon/types/list.hpp"
#include "tenon/types/ragged.hpp"
#include "tenon/types/sequences.hpp"

namespace tenon {
namespace detail {

void check_ragged(const std::int32_t* lengths, std::size_t n, const std::size_t* data_shape, std::size_t rank) {
    std::int64_t sum = 0;
    for (std::size_t i = 0; i < n; ++i) {
        if (lengths[i] < 0)
            throw ShapeError("Ragged: length " + std::to_string(i) + " is " + std::to_string(lengths[i]) +
                                 "; lengths must be >= 0",
                             "tenon-E151");
        sum += lengths[i];
    }
    if (static_cast<std::size_t>(sum) != data_shape[0])
        throw ShapeError("Ragged: the lengths must sum to the data's rows: expected " + std::to_string(data_shape[0]) +
                             " (rows of data " + shape_text(data_shape, rank) + ") but the lengths sum to " +
                             std::to_string(sum),
                         "tenon-E152");
}

namespace {
// The shape at v[i] (its rank, then its extents) as "(a, b)"; false when v ends first.
bool shape_at(const Layout& v, std::size_t& i, std::string& out) {
    if (i >= v.size() || v.size() - i - 1 < v[i]) return false;
    const std::size_t rank = v[i++];
    out += "(";
    for (std::size_t k = 0; k < rank; ++k) out += (k ? ", " : "") + std::to_string(v[i++]);
    out += ")";
    return true;
}
}  // namespace

std::string layout_vec_str(const Layout& v, LayoutKind kind) {
    std::string s;
    std::size_t i = 0;
    switch (kind) {
        case LayoutKind::array:
            if (shape_at(v, i, s) && i == v.size()) return s;
            break;
        case LayoutKind::ragged:
        case LayoutKind::padded:
            s = kind == LayoutKind::padded ? "Padded " : "Ragged ";
            if (shape_at(v, i, s)) {
                s += " lengths [";
                for (std::size_t k = i; k < v.size(); ++k) s += (k > i ? ", " : "") + std::to_string(v[k]);
                return s + "]";
            }
            break;
        case LayoutKind::list_of_arrays:
            if (!v.empty()) {
                s = "List of " + std::to_string(v[0]) + " [";
                i = 1;
                bool ok = true;
                for (std::size_t k = 0; k < v[0] && ok; ++k) {
                    if (k) s += ", ";
                    ok = shape_at(v, i, s);
                }
                if (ok && i == v.size()) return s + "]";
            }
            break;
        case LayoutKind::other:
            break;
    }
    s.clear();
    const bool array = !v.empty() && v.size() == v[0] + 1;
    for (std::size_t k = array ? 1 : 0; k < v.size(); ++k) s += (s.empty() ? "" : ", ") + std::to_string(v[k]);
    return array ? "(" + s + ")" : "layout [" + s + "]";
}

template std::size_t list_rows<Floats2d>(const List<Floats2d>&, const char*, std::array<std::size_t, 2>*);
template std::size_t list_rows<Ints2d>(const List<Ints2d>&, const char*, std::array<std::size_t, 2>*);
template void append_shape<std::array<std::size_t, 2>>(Layout&, const std::array<std::size_t, 2>&);
template void add_into<Floats2d>(Floats2d&, const Floats2d&, std::string_view, const char*, std::string_view);
template Floats2d slice_last<Floats2d, Floats2dCView>(const Floats2dCView&, std::size_t, std::size_t);
template Floats2d slice_last<Floats2d, Floats2d>(const Floats2d&, std::size_t, std::size_t);
template Floats2d concat_last<Floats2d>(std::span<const Floats2d* const>, std::string_view, const char*);

namespace xfer {
template Ints1d lengths_of<Floats2d>(const List<Floats2d>&);
template Ints1d lengths_of<Ints2d>(const List<Ints2d>&);
template void check_list_lengths<Floats2d>(const std::string&, const Ints1d&, const List<Floats2d>&);
template Floats2d flatten<Floats2d>(const List<Floats2d>&, std::size_t, const char*, Floats2d::shape_type);
template Ints2d flatten<Ints2d>(const List<Ints2d>&, std::size_t, const char*, Ints2d::shape_type);
template List<Floats2d> unflatten<Floats2d, Floats2d>(const Floats2d&, const Ints1d&, std::size_t);
}  // namespace xfer
}  // namespace detail

template BasicRagged<Floats2d> to_ragged<Floats2d>(const List<Floats2d>&);
template BasicRagged<Ints2d> to_ragged<Ints2d>(const List<Ints2d>&);
template List<Floats2d> to_list<Floats2d>(const BasicRagged<Floats2d>&);
template List<Ints2d> to_list<Ints2d>(const BasicRagged<Ints2d>&);

}  // namespace tenon
