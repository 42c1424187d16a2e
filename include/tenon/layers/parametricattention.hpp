// ParametricAttention<nO>() and ParametricAttention_v2<nO>(key_transform): weight each row of a
// Ragged by its similarity to a learned vector Q, within its sequence
// (thinc/layers/parametricattention.py; v2 is newer Thinc's, with a key transform).
//   K = key_transform(X.data)            (v1, or v2 without a transform: K = X.data)
//   a = softmax over each sequence of K Q (one weight per row; the sequence's weights sum to 1)
//   Y = X.data * a (each row scaled by its weight), the lengths unchanged
// Backward: dX = dY * a; d_a = the row sums of X * dY, through the sequences' softmax;
// dQ += K^T d_a; dK = d_a Q^T, and dX += the key transform's backprop of dK (dK itself without one).
// Ragged -> Ragged. Params Q (nO,), uniform in [-0.1, 0.1) (tenon's RNG); dims nO (Thinc's) and
// nI (= nO, so that chains pass a width through it). The key transform is a child model
// (walked, saved and trained with the attention); it must map Floats2d of width nO to
// Floats2d of width nO: a compile error where the types say otherwise (tenon-E270, E271),
// tenon-E272 where the widths are known only at run time. In a plan it is a "seq" stage over
// the sequences' rows, its weights in the workspace (the key transform's stages are a branch
// before it). Errors: docs/diagnostics.md, "ParametricAttention".
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <type_traits>
#include <utility>

#include "tenon/lower/lowered_as.hpp"
#include "tenon/model/failed_model.hpp"
#include "tenon/init/init.hpp"
#include "tenon/model/layer.hpp"
#include "tenon/model/widths.hpp"
#include "tenon/types/ragged.hpp"

namespace tenon {

namespace check {
// E270: a key transform that is not a model from Floats2d to Floats2d.
template <class KeyTransform, class Expects, class Given, class Produces>
struct attention_key_types {
    static_assert(always_false<KeyTransform>,
                  "[tenon-E270] ParametricAttention_v2(key_transform): the keys are key_transform(X) for the rows X "
                  "of the Ragged input, so the key transform must be a model from Floats2d to Floats2d "
                  "(expects_type<T> but given_type<U> / produces_type<V>: see the instantiation line)");
};
template <class NotAModel>
struct attention_key_model {
    static_assert(always_false<NotAModel>,
                  "[tenon-E270] ParametricAttention_v2(key_transform): the key transform must be a model from "
                  "Floats2d to Floats2d, and this argument is not a model (not_a_model<T>: see the instantiation "
                  "line)");
};
// E271: a key transform whose static widths are not the attention's nO.
template <class KeyTransform, class Expects, class Given, class Produces>
struct attention_key_widths {
    static_assert(always_false<KeyTransform>,
                  "[tenon-E271] ParametricAttention_v2<nO>(key_transform): the keys K = key_transform(X) are "
                  "multiplied by Q (nO values) and X has width nO, so the key transform must map width nO to "
                  "width nO (expects_width<nO> but the key transform takes given_width<W> and produces_width<V>: "
                  "see the instantiation line; -1 is dyn)");
};
template <extent_t NO, class K>
constexpr bool attention_widths_agree() {
    constexpr extent_t kI = widths::static_nI<K>(), kO = widths::static_nO<K>();
    const extent_t w[3] = {NO, kI, kO};
    extent_t known = dyn;
    for (extent_t v : w) {
        if (v == dyn) continue;
        if (known != dyn && v != known) return false;
        known = v;
    }
    return true;
}
template <extent_t NO, class K>
constexpr auto attention_key_check_of() {
    if constexpr (!Model<K>) {
        return attention_key_model<not_a_model<name_t<K>>>{};
    } else if constexpr (!std::is_same_v<typename K::In, tenon::Floats2d> ||
                         !std::is_same_v<typename K::Out, tenon::Floats2d>) {
        return attention_key_types<K, expects_type<check::Floats2d>, given_type<name_t<typename K::In>>,
                                   produces_type<name_t<typename K::Out>>>{};
    } else if constexpr (!attention_widths_agree<NO, K>()) {
        return attention_key_widths<K, expects_width<NO>, given_width<widths::static_nI<K>()>,
                                    produces_width<widths::static_nO<K>()>>{};
    } else {
        return ok{};
    }
}
// ok, or the failing check (instantiating its type asserts).
template <extent_t NO, class K>
using attention_key_check = decltype(attention_key_check_of<NO, K>());
}  // namespace check

namespace detail {
// The math, compiled once (src/parametricattention.cpp); every step is an entry of `ops`.
// a (rows) = the softmax over each sequence of K Q; Y (rows x n) = X scaled by a.
void attention_forward(const Ops& ops, const float* X, const float* K, const float* Q, const std::int32_t* lengths,
                       std::size_t nseg, std::size_t rows, std::size_t n, float* a, float* Y);
// dX (rows x n) = dY * a (+ d_a Q^T when dK is null: the keys are X); dQ += K^T d_a; dK (when
// not null) = d_a Q^T, for the key transform's backprop to add to dX.
// d_a: scratch of `rows` floats (null: made here); dx_add: add to dX instead of writing it.
void attention_backward(const Ops& ops, const float* dY, const float* X, const float* K, const float* Q,
                        const float* a, const std::int32_t* lengths, std::size_t nseg, std::size_t rows,
                        std::size_t n, float* dX, float* dQ, float* dK, float* d_a = nullptr, bool dx_add = false);
// The plan's stage (lowered_as below): the same functions over the sequences' rows, the
// weights a and d_a in the workspace.
void attention_stage_scratch(const Node* layer, bool train, std::size_t& per_row, std::size_t& fixed);
void attention_stage_forward(Node* layer, const lowering::SeqCall& c);
void attention_stage_backward(Node* layer, const lowering::SeqCall& c);
// tenon-E272: the key transform's widths (at initialize) are not nO, or its output (at a
// call) is not one row of nO values per input row.
void check_attention_key_dims(const Node& layer, const Node& key, std::size_t n);
void check_attention_keys(const Node& layer, const Node& key, std::size_t rows, std::size_t n, std::size_t found_rows,
                          std::size_t found_cols);
// tenon-E273: backprop's dY is not shaped like the output (its lengths, or its width).
void check_attention_gradient(const Node& layer, const Ints1d& lengths, std::size_t n, const Ragged& dY);
// Q's initial values: uniform in [-0.1, 0.1) from tenon's global RNG (Thinc draws them from
// numpy's).
void attention_init_q(float* Q, std::size_t n);

// The one width in and out: nO, or else the key transform's static width (K void: none).
template <extent_t NO, class K>
constexpr extent_t attention_width() {
    if constexpr (NO > 0) return NO;
    else if constexpr (!std::is_void_v<K>)
        return widths::static_nO<K>() != dyn ? widths::static_nO<K>() : widths::static_nI<K>();
    else return dyn;
}
// The key transform as a member and its Backprop (a placeholder without one).
struct no_key_transform {};
template <class K>
struct attention_key {
    using model = K;
    using backprop = typename K::Backprop;
};
template <>
struct attention_key<void> {
    using model = no_key_transform;
    using backprop = no_key_transform;
};

// Both versions: the key transform K (void: none, the keys are the input's rows).
template <class Derived, extent_t NO, class KeyT>
class Attention : public Layer<Derived, Ragged, Ragged> {
    using Base = Layer<Derived, Ragged, Ragged>;
    friend Base;
    static_assert(sizeof(check::width_check<NO, Derived, check::nO>) > 0);  // E012

public:
    static constexpr bool has_key_transform = !std::is_void_v<KeyT>;
    static constexpr extent_t static_nO = attention_width<NO, KeyT>();
    static constexpr extent_t static_nI = static_nO;
    static constexpr bool nO_is_nI = true;
    // lower(): a stage over the sequences' rows; a key transform's stages are a branch from
    // the same rows (lowered_as.hpp).
    static constexpr lowering::SeqLayerStage lowered_as{"attention", &attention_stage_scratch,
                                                        &attention_stage_forward, &attention_stage_backward};
    static constexpr bool plan_keys = has_key_transform;

    struct Backprop {
        Derived* layer = nullptr;
        Floats2d X;  // the input's rows
        Floats2d K;  // the keys (empty without a key transform: they are X)
        Floats2d a;  // the attention weights (rows x 1)
        Ints1d lengths;
        typename attention_key<KeyT>::backprop key_bp{};
        Ragged operator()(const Ragged& dY) const {
            const std::size_t rows = X.shape(0), n = X.shape(1);
            check_attention_gradient(*layer, lengths, n, dY);
            Floats2d dX({rows, n}, uninitialized);
            const Ops& ops = layer->ops();
            const float* Q = layer->param(0).value.data();
            float* dQ = layer->grad_data(0);
            if constexpr (has_key_transform) {
                Floats2d dK({rows, n}, uninitialized);
                attention_backward(ops, dY.data().data(), X.data(), K.data(), Q, a.data(), lengths.data(),
                                   lengths.size(), rows, n, dX.data(), dQ, dK.data());
                const Floats2d dX2 = key_bp(Floats2dCView(dK));
                if (dX2.shape(0) != rows || dX2.shape(1) != n)
                    check_attention_keys(*layer, layer->key_, rows, n, dX2.shape(0), dX2.shape(1));
                if (rows) ops.copy_rows(dX2.data(), n, dX.data(), n, rows, n, true);
            } else {
                attention_backward(ops, dY.data().data(), X.data(), X.data(), Q, a.data(), lengths.data(),
                                   lengths.size(), rows, n, dX.data(), dQ, nullptr);
            }
            return Ragged(std::move(dX), lengths);
        }
    };

protected:
    explicit Attention(std::size_t nO)
        requires(!has_key_transform)
        : Base("para-attn", {{"nO", as_dim(NO)}, {"nI", as_dim(NO)}}, {{"Q", {"nO"}}}) {
        if (nO != dyn) set_width(nO);
    }
    template <class KK>
        requires(has_key_transform)
    Attention(KK&& key, std::size_t nO)
        : Base("para-attn", {{"nO", as_dim(static_nO)}, {"nI", as_dim(static_nO)}}, {{"Q", {"nO"}}}), key_(std::forward<KK>(key)) {
        if (nO != dyn) set_width(nO);
        // The width the key transform already knows (its options, where its type leaves it dyn).
        const std::size_t kw = widths::known(key_, "nO") != dyn ? widths::known(key_, "nO") : widths::known(key_, "nI");
        if (kw != dyn && !this->has_dim("nO")) set_width(kw);
        if (this->has_dim("nO")) check_attention_key_dims(*this, key_, this->get_dim("nO"));
    }
    // From the same layer of another static width (chain's width propagation).
    explicit Attention(Node&& node) noexcept : Base(std::move(node)) {}

    void set_width(std::size_t n) {
        this->set_dim("nO", n);
        this->set_dim("nI", n);
    }

    [[no_unique_address]] typename attention_key<KeyT>::model key_{};

private:
    void init_impl(const Ragged* X, const Ragged* Y) {
        // The width: the sample's (the input's, or the output's: both are nO wide), else the
        // one known (nO, or nI from the model around it).
        if (const Ragged* sample = X ? X : Y) {
            const std::size_t w = sample->data().shape(1);
            if (w == 0) throw_zero_width(*this, X ? "input" : "output sample", sample->rows(), this->dim(0));
            // (a width the key transform fixed and the sample contradicts is the key transform's)
            if constexpr (has_key_transform) check_attention_key_dims(*this, key_, w);
            this->resolve_dim(0, w);
            this->resolve_dim(1, w);
        } else if (this->dim(0) == dyn && this->dim(1) != dyn) {
            this->resolve_dim(0, this->dim(1));
        }
        const std::size_t n = this->require_dim(0);
        this->resolve_dim(1, n);
        this->allocate_param(0, {n});
        detail::init_on_host(this->param(0).value, [&](float* Q) { attention_init_q(Q, n); });
        if constexpr (has_key_transform) {
            check_attention_key_dims(*this, key_, n);
            widths::offer(key_, "nI", n);
            widths::offer(key_, "nO", n);
            if (X) {
                const Floats2dCView rows(X->data());
                key_.initialize_from(&rows, nullptr);
            } else {
                key_.initialize_from(nullptr, nullptr);
            }
            check_attention_key_dims(*this, key_, n);
        }
        this->mark_initialized();
    }

    // The weights a (rows x 1) and the output's rows from the input and its keys.
    Floats2d attend(const Ragged& X, const float* keys, Floats2d& a) const {
        const std::size_t n = this->dim(0), rows = X.rows();
        a = Floats2d({rows, 1}, uninitialized);
        Floats2d Y({rows, n}, uninitialized);
        attention_forward(this->ops(), X.data().data(), keys, this->param(0).value.data(), X.lengths().data(),
                          X.size(), rows, n, a.data(), Y.data());
        return Y;
    }
    void check_keys(const Floats2d& K, std::size_t rows, std::size_t n) const {
        if (K.shape(0) != rows || K.shape(1) != n) check_attention_keys(*this, key_, rows, n, K.shape(0), K.shape(1));
    }
    Ragged predict_impl(const Ragged& X) const {
        check_width(*this, X.data(), this->dim(0));
        Floats2d a, Y;
        if constexpr (has_key_transform) {
            const Floats2d K = key_.predict_inner(Floats2dCView(X.data()));
            check_keys(K, X.rows(), this->dim(0));
            Y = attend(X, K.data(), a);
        } else {
            Y = attend(X, X.data().data(), a);
        }
        return X.with_data(std::move(Y));
    }
    std::pair<Ragged, Backprop> forward_impl(const Ragged& X, bool is_train) {
        check_width(*this, X.data(), this->dim(0));
        Backprop bp;
        Floats2d Y;
        if constexpr (has_key_transform) {
            auto [K, kb] = key_.update_inner(Floats2dCView(X.data()), is_train);
            check_keys(K, X.rows(), this->dim(0));
            Y = attend(X, K.data(), bp.a);
            bp.K = std::move(K);
            bp.key_bp = std::move(kb);
        } else {
            Y = attend(X, X.data().data(), bp.a);
        }
        bp.layer = static_cast<Derived*>(this);
        bp.X = X.data();
        bp.lengths = X.lengths();
        return {X.with_data(std::move(Y)), std::move(bp)};
    }
};
}  // namespace detail

// Thinc's ParametricAttention (v1): the keys are the input's rows.
template <extent_t NO = dyn>
class ParametricAttention : public detail::Attention<ParametricAttention<NO>, NO, void> {
    using Base = detail::Attention<ParametricAttention<NO>, NO, void>;
    friend Layer<ParametricAttention<NO>, Ragged, Ragged>;
    friend Base;

public:
    explicit ParametricAttention(std::size_t nO = as_dim(NO)) : Base(nO) {}
    // The same layer with a static width (chain's width propagation rebinds a dyn nO).
    template <extent_t N2>
    using with_nI = ParametricAttention<N2>;
    template <extent_t N2>
        requires(NO != N2)
    explicit ParametricAttention(ParametricAttention<N2>&& o) : Base(static_cast<Node&&>(o)) {
        if constexpr (NO != dyn) {
            this->fix_dim(0, NO);
            this->fix_dim(1, NO);
        }
    }
};

// ParametricAttention_v2's model: a key transform of type K (a Floats2d -> Floats2d model).
template <extent_t NO, class K>
class ParametricAttentionV2 : public detail::Attention<ParametricAttentionV2<NO, K>, NO, K> {
    using Base = detail::Attention<ParametricAttentionV2<NO, K>, NO, K>;
    friend Layer<ParametricAttentionV2<NO, K>, Ragged, Ragged>;
    friend Base;
    static_assert(sizeof(check::attention_key_check<NO, K>) > 0);  // E270, E271

public:
    explicit ParametricAttentionV2(K key_transform, std::size_t nO = as_dim(NO)) : Base(std::move(key_transform), nO) {}

    K& key_transform() & noexcept { return this->key_; }
    const K& key_transform() const& noexcept { return this->key_; }
    void for_each_child(const std::function<void(Node&)>& f) override { f(this->key_); }
};

// ParametricAttention_v2<nO>(key_transform, nO): Thinc's ParametricAttention_v2(key_transform=...,
// nO=...). Without a key transform it is ParametricAttention<nO> (v1's math and parameters).
template <extent_t NO = dyn>
ParametricAttention<NO> ParametricAttention_v2(std::size_t nO = as_dim(NO)) {
    return ParametricAttention<NO>(nO);
}
template <extent_t NO = dyn, class KK>
    requires(!std::is_integral_v<std::remove_cvref_t<KK>> && !any_failed_model<KK>)
auto ParametricAttention_v2(KK&& key_transform, std::size_t nO = as_dim(NO)) {
    using KT = std::remove_cvref_t<KK>;
    using C = check::attention_key_check<NO, KT>;
    if constexpr (!std::is_same_v<C, check::ok>) {
        check::report<C>();  // E270, E271: said here, at the call
        return failed_model{};
    } else {
        constexpr extent_t W = detail::attention_width<NO, KT>();
        return ParametricAttentionV2<W, KT>(KT(std::forward<KK>(key_transform)), nO);
    }
}
// With a failed model (its error is already said): a failed model.
template <extent_t NO = dyn, class... A>
    requires(any_failed_model<A...>)
failed_model ParametricAttention_v2(A&&...) noexcept {
    return {};
}

}  // namespace tenon
