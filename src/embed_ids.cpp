// What the embedding layers share that does not depend on their types
// (tenon/layers/detail/embed_ids.hpp): compiled once here, not in every file that holds one.
#include "tenon/layers/detail/embed_ids.hpp"

namespace tenon::detail {

void check_dropout_rate(const std::string& layer, const std::optional<double>& rate) {
    if (rate && !(*rate >= 0.0 && *rate <= 1.0))
        throw Error(layer + ": the dropout rate must be in [0, 1], found " + detail::number_str(*rate), "tenon-E195");
}
Floats1d column_dropout_mask(const Node& layer, std::size_t nO, bool is_train) {
    if (!is_train || inference_pass || !layer.has_attr("dropout_rate")) return {};
    const double r = layer.attr_as<double>("dropout_rate");
    check_dropout_rate(layer.name(), r);
    if (r <= 0.0) return {};
    const Ops& ops = layer.ops();
    Floats1d mask({nO}, uninitialized, ops.memory());
    ops.dropout_mask(r < 1.0 ? dropout_key(global_rng()) : 0, mask.data(), nO, r);  // (rate 1: zeros, no draw)
    return mask;
}
void check_table_rows(const char* who, std::size_t nV) {
    if (nV == 0) throw Error(std::string(who) + ": nV (the rows of the table) must be >= 1, found 0", "tenon-E195");
    if (nV > (std::size_t{1} << 32))
        throw Error(std::string(who) + ": nV (the rows of the table) must be at most 2^32, found " + std::to_string(nV),
                    "tenon-E195");
}
void check_table_grad(const char* who, bool has_layer, const Floats2dCView& dY, std::size_t rows, std::size_t nO) {
    if (!has_layer || dY.shape(0) != rows || dY.shape(1) != nO)
        throw ShapeError(std::string(who) + ": backprop: expected a gradient of shape (" + std::to_string(rows) +
                             ", " + std::to_string(nO) + ") like the output, but found (" +
                             std::to_string(dY.shape(0)) + ", " + std::to_string(dY.shape(1)) + ")",
                         "tenon-E191");
}
template IdColumn<Ints2dCView> id_column<Ints2dCView>(const Node&, const Ints2dCView&, std::size_t);

}  // namespace tenon::detail
