// HashEmbed<nO, In>(nV, seed, column, dropout): ids -> Floats2d by the hashing trick
// (thinc/layers/hashembed.py): each id (as a uint64) is hashed with MurmurHash3 into four
// 32-bit keys (Thinc's ops.hash, NumpyOps' MurmurHash3_x86_128_uint64, ported bit for bit);
// the output row is the sum of the four rows E[key % nV]. E (nV, nO) starts uniform in
// [-0.1, 0.1) (Thinc's uniform_init). Backprop adds each output row's gradient to its four
// rows of E; the ids get a zero gradient. With `dropout`, training multiplies the output by
// one random mask over the columns, shared by every row (Thinc's get_dropout_mask((nO,))).
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <utility>
#include <vector>

#include "tenon/init/init.hpp"
#include "tenon/layers/detail/embed_ids.hpp"
#include "tenon/lower/lowered_as.hpp"
#include "tenon/model/layer.hpp"

namespace tenon {

// Thinc's ops.hash for one id: MurmurHash3's 128-bit finalisation of one 8-byte key, as four
// 32-bit words (NumpyOps.hash / MurmurHash3_x86_128_uint64 in thinc/backends/numpy_ops.pyx).
constexpr std::array<std::uint32_t, 4> murmurhash3_uint64(std::uint64_t val, std::uint32_t seed) noexcept {
    std::uint64_t h1 = val, h2 = 0;
    h1 *= 0x87c37b91114253d5ull;
    h1 = (h1 << 31) | (h1 >> 33);
    h1 *= 0x4cf5ad432745937full;
    h1 ^= seed;
    h1 ^= 8;
    h2 = seed;
    h2 ^= 8;
    h1 += h2;
    h2 += h1;
    h1 ^= h1 >> 33;
    h1 *= 0xff51afd7ed558ccdull;
    h1 ^= h1 >> 33;
    h1 *= 0xc4ceb9fe1a85ec53ull;
    h1 ^= h1 >> 33;
    h2 ^= h2 >> 33;
    h2 *= 0xff51afd7ed558ccdull;
    h2 ^= h2 >> 33;
    h2 *= 0xc4ceb9fe1a85ec53ull;
    h2 ^= h2 >> 33;
    h1 += h2;
    h2 += h1;
    return {static_cast<std::uint32_t>(h1), static_cast<std::uint32_t>(h1 >> 32), static_cast<std::uint32_t>(h2),
            static_cast<std::uint32_t>(h2 >> 32)};
}

// Thinc's keyword arguments, for the options form HashEmbed<nO>(nV, {.seed = 1, ...}).
struct HashEmbedOptions {
    std::size_t nO = dyn;                // for a dyn nO in the type (else from Y in initialize)
    std::optional<std::uint32_t> seed{};  // default: the layer's id, as Thinc
    std::size_t column = 0;              // the column of a 2-d input that holds the ids
    Init initializer = {};               // default: uniform_init (-0.1, 0.1)
    std::optional<double> dropout{};  // {}: a designated initializer may leave it out (-Wextra)
};

template <extent_t NO = dyn, class In = Ints2d>
class HashEmbed : public Layer<HashEmbed<NO, In>, In, Floats2d> {
    using Base = Layer<HashEmbed<NO, In>, In, Floats2d>;
    friend Base;
    static_assert(sizeof(detail::embed_input_check<HashEmbed, In>) > 0);          // E052
    static_assert(sizeof(check::width_check<NO, HashEmbed, check::nO>) > 0);      // E012

public:
    static constexpr bool tenon_failed_layer = !detail::is_id_array<In>;  // (E052 said: no cascade)
    using InView = typename Base::InView;  // public: wrappers (with_array ...) name L::InView
    static constexpr extent_t static_nO = usable_width(NO);

    HashEmbed(std::size_t nV, std::optional<std::uint32_t> seed = {}, std::size_t column = 0,
              std::optional<double> dropout = {})
        : HashEmbed(nV, HashEmbedOptions{dyn, seed, column, {}, dropout}) {}
    HashEmbed(std::size_t nV, HashEmbedOptions o)
        : Base("hashembed", {{"nO", as_dim(NO)}, {"nV", dyn}}, {{"E", {"nV", "nO"}}}),
          init_E_(o.initializer ? std::move(o.initializer) : Init(uniform_init)) {
        detail::check_table_args<In>(*this, "hashembed", nV, o.nO, o.column, o.dropout);
        this->set_attr("seed", static_cast<std::int64_t>(o.seed ? *o.seed : static_cast<std::uint32_t>(this->id())));
        detail::set_table_attrs(*this, o.column, o.dropout);
    }

    std::uint32_t seed() const { return static_cast<std::uint32_t>(this->template attr_as<std::int64_t>("seed")); }
    std::size_t column() const { return static_cast<std::size_t>(this->template attr_as<std::int64_t>("column")); }

    // lower(): a gather of 4 rows per id (lower/lowered_as.hpp); the keys are this layer's.
    static constexpr lowering::TableStage lowered_as{"hashembed", 4};
    static void table_keys(const Node* l, const std::int32_t* ids, std::size_t rows, std::size_t cols,
                           std::uint32_t* keys) {
        if constexpr (std::is_same_v<In, Ints2d>) {
            const auto k = static_cast<const HashEmbed*>(l)->keys_of(Ints2dCView(ids, {rows, cols}));
            if (k.size()) std::memcpy(keys, k.data(), k.size() * sizeof(std::uint32_t));
        }
    }

    struct Backprop {
        HashEmbed* layer = nullptr;
        Array<std::uint32_t, dyn> keys;   // four rows of E per output row, already % nV
        Floats1d mask;                    // the dropout mask, or empty
        typename In::shape_type shape{};  // X's, for the (zero) gradient of the ids
        In operator()(Floats2dCView dY) const {
            const std::size_t rows = keys.size() / 4, nO = layer ? layer->dim(0) : 0;
            detail::check_table_grad("hashembed", layer, dY, rows, nO);
            // Key by key, as Thinc's four scatter_adds.
            layer->ops().scatter_add_rows(layer->grad_data(0), nO, keys.data(), rows, 4, dY.data(),
                                          mask.size() ? mask.data() : nullptr);
            return In(shape);
        }
    };

private:
    void init_impl(const std::remove_reference_t<InView>*, const Floats2dCView* Y) {
        if (Y) this->resolve_dim(0, Y->shape(1));
        const std::size_t nO = this->require_dim(0), nV = this->require_dim(1);
        detail::check_table_rows("hashembed", nV);
        this->allocate_param(0, {nV, nO});
        detail::run_init(init_E_, *this, "E");
        this->mark_initialized();
    }

    // The four keys of every row, % nV.
    // (Arrays, not vectors: their memory comes from the thread's block cache, so predict and
    // training allocate nothing after warm-up.)
    Array<std::uint32_t, dyn> keys_of(InView X) const {
        const auto ids = detail::id_column(*this, X, column());
        const std::size_t rows = ids.rows(), nV = this->dim(1);
        const std::uint32_t s = seed();
        Array<std::uint32_t, dyn> keys({rows * 4}, uninitialized);
        for (std::size_t r = 0; r < rows; ++r) {
            // Thinc casts the ids to uint64 (an int32 -1 is 2**64 - 1).
            const auto h = murmurhash3_uint64(static_cast<std::uint64_t>(static_cast<std::int64_t>(ids.id(r))), s);
            for (std::size_t k = 0; k < 4; ++k) keys[r * 4 + k] = static_cast<std::uint32_t>(h[k] % nV);
        }
        return keys;
    }
    Floats2d gather(const Array<std::uint32_t, dyn>& keys) const {
        const std::size_t rows = keys.size() / 4, nO = this->dim(0);
        Floats2d Y({rows, nO}, uninitialized);
        // Summed in key order, as Thinc's gather_add.
        this->ops().gather_add_rows(this->param(0).value.data(), nO, keys.data(), rows, 4, Y.data());
        return Y;
    }
    Floats2d predict_impl(InView X) const { return gather(detail::in_memory(keys_of(X), this->ops().memory())); }
    std::pair<Floats2d, Backprop> forward_impl(InView X, bool is_train) {
        Backprop bp;
        bp.layer = this;
        bp.shape = X.shape();
        bp.keys = detail::in_memory(keys_of(X), this->ops().memory());
        Floats2d Y = gather(bp.keys);
        if (!bp.keys.empty()) {  // Thinc draws no mask for an empty batch
            bp.mask = detail::column_dropout_mask(*this, this->dim(0), is_train);
            detail::apply_column_mask(this->ops(), Y.data(), Y.shape(0), bp.mask);
        }
        return {std::move(Y), std::move(bp)};
    }

    Init init_E_;
};

}  // namespace tenon
