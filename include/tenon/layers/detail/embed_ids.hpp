// What the embedding layers (HashEmbed, Embed) share: their input is integer ids, either one
// per row (Ints1d, Keys1d) or one column of a 2-d array (Ints2d, Keys2d: Thinc's `column`,
// where Thinc chains ints_getitem before the layer); the per-column dropout mask Thinc applies
// to their output (ops.get_dropout_mask((nO,), rate): one mask for every row); and the
// compile-time check of the input type (tenon-E052).
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>

#include "tenon/model/diagnostics.hpp"
#include "tenon/model/layer.hpp"
#include "tenon/random.hpp"

namespace tenon {

namespace check {
// E052: an embedding layer whose input type is not an array of integer ids.
template <class Layer, class Given>
struct embed_input {
    static_assert(always_false<Layer>,
                  "[tenon-E052] HashEmbed/Embed<nO, In>: In must be an array of integer ids: Ints1d or Keys1d (one "
                  "id per row), or Ints2d or Keys2d (the ids in one column) (given_type<T>: see the instantiation line)");
};
}  // namespace check

// (What does not depend on a layer's type is compiled once, in src/embed_ids.cpp.)
namespace detail {

template <class A>
inline constexpr bool is_id_array = false;
template <extent_t... E>
inline constexpr bool is_id_array<Array<std::int32_t, E...>> = sizeof...(E) == 1 || sizeof...(E) == 2;
template <extent_t... E>
inline constexpr bool is_id_array<Array<std::uint64_t, E...>> = sizeof...(E) == 1 || sizeof...(E) == 2;
template <class Layer, class In>
using embed_input_check = std::conditional_t<is_id_array<In>, check::ok, check::embed_input<Layer, check::given_type<check::name_t<In>>>>;

// The ids of the rows of X: X itself (rank 1) or its column `column` (rank 2), read through
// id(i). Checks the column (tenon-E194).
template <class V>
struct IdColumn {
    V X;  // a view (held by value: cheap, and never dangling)
    std::size_t column;
    std::size_t rows() const { return X.shape(0); }
    auto id(std::size_t i) const {
        if constexpr (V::rank == 1) return X[i]; else return X.data()[i * X.shape(1) + column];
    }
};
template <class V>
    requires requires { typename V::element_type; }  // a view, not an owning array (no copy)
IdColumn<V> id_column(const Node& layer, const V& X, std::size_t column) {
    if constexpr (V::rank == 2) {
        if (column >= X.shape(1) && X.shape(0) > 0)
            throw ShapeError(layer.name() + ": column " + std::to_string(column) +
                                 " holds the ids, but the input has " + std::to_string(X.shape(1)) + " columns",
                             "tenon-E194");
    }
    return {X, column};
}
extern template IdColumn<Ints2dCView> id_column<Ints2dCView>(const Node&, const Ints2dCView&, std::size_t);
// A column other than 0 means nothing for one id per row.
template <class In>
void check_column(const std::string& layer, std::size_t column) {
    if constexpr (!is_id_array<In>) return;  // (not ids: E052 has said so)
    else if (In::rank == 1 && column != 0)
        throw Error(layer + ": column " + std::to_string(column) +
                        " given for an input of one id per row (rank 1); use an Ints2d or Keys2d input",
                    "tenon-E194");
}
void check_dropout_rate(const std::string& layer, const std::optional<double>& rate);  // tenon-E195
// Thinc's per-column mask (shape (nO,)) for training, or an empty array (no dropout): in the
// layer's backend's memory, filled there (Ops::dropout_mask: the same bits on every backend;
// the key is drawn here, on the host, in the layers' order).
Floats1d column_dropout_mask(const Node& layer, std::size_t nO, bool is_train);
// A table's rows are addressed by 32-bit indices (the backend's gathers and scatter-adds):
// nV in [1, 2^32] (tenon-E195).
void check_table_rows(const char* who, std::size_t nV);
// What both tables' constructors check and set (HashEmbed sets its seed between the two):
// nV in [1, 2^32] (tenon-E195), the dims, the column (E194) and the dropout rate (E195) ...
template <class In>
void check_table_args(Node& layer, const char* who, std::size_t nV, std::size_t nO, std::size_t column,
                      const std::optional<double>& dropout) {
    check_table_rows(who, nV);
    layer.set_dim("nV", nV);
    if (nO != dyn) layer.set_dim("nO", nO);
    check_column<In>(layer.name(), column);
    check_dropout_rate(layer.name(), dropout);
}
// ... and the attributes they keep.
inline void set_table_attrs(Node& layer, std::size_t column, const std::optional<double>& dropout) {
    layer.set_attr("column", static_cast<std::int64_t>(column));
    if (dropout) layer.set_attr("dropout_rate", *dropout);
}
// E191: a table's output gradient must have the output's shape (rows, nO).
void check_table_grad(const char* who, bool has_layer, const Floats2dCView& dY, std::size_t rows, std::size_t nO);
// Y (rows x mask.size(), in ops' memory) times the column mask, on the backend (nothing for an
// empty mask).
inline void apply_column_mask(const Ops& ops, float* Y, std::size_t rows, const Floats1d& mask) {
    if (mask.size()) ops.mask_columns(Y, mask.data(), rows, mask.size(), Y);
}

}  // namespace detail
}  // namespace tenon
