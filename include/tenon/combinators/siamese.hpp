// siamese(layer, similarity): std::pair<In, In> -> similarity's Out. Runs the one layer (one
// set of weights) on both inputs and feeds the pair of outputs to `similarity`, whose input
// must be std::pair<layer's Out, layer's Out> (E027) (thinc/layers/siamese.py). Both inputs'
// gradients reach the layer's parameters.
#pragma once
#include <cstddef>
#include <functional>
#include <string>
#include <type_traits>
#include <utility>

#include "tenon/combinators/detail/parallel.hpp"

namespace tenon {

namespace check {
// E027: siamese(layer, similarity) where similarity does not take a pair of the layer's outputs.
template <class Expects, class Produces>
struct siamese_types {
    static_assert(always_false<Expects>,
                  "[tenon-E027] siamese(layer, similarity): similarity must take the pair of the layer's outputs "
                  "(similarity expects_type<T> but the layer's outputs make produces_type<pair<U, U>>: see the "
                  "instantiation line)");
};
// The same id where the types agree but the static widths do not: the similarity's nI is not
// the layer's nO (siamese(Relu<64, 32>(), CauchySimilarity<32>())).
template <class Expects, class Produces>
struct siamese_widths {
    static_assert(always_false<Expects>,
                  "[tenon-E027] siamese(layer, similarity): similarity must take the pair of the layer's outputs, "
                  "whose width is the layer's output width (similarity expects_width<W> but the layer "
                  "produces_width<V>: see the instantiation line)");
};
template <class L, class S, extent_t NO = widths::static_nO<L>(), extent_t NI = widths::static_nI<S>()>
using siamese_check = std::conditional_t<
    !std::is_same_v<typename S::In, std::pair<typename L::Out, typename L::Out>>,
    siamese_types<expects_type<name_t<typename S::In>>, produces_type<name_t<std::pair<typename L::Out, typename L::Out>>>>,
    std::conditional_t<NO != dyn && NI != dyn && NO != NI, siamese_widths<expects_width<NI>, produces_width<NO>>, ok>>;
}  // namespace check

template <Model L, Model S>
class Siamese : public Layer<Siamese<L, S>, std::pair<typename L::In, typename L::In>, typename S::Out> {
    static_assert(sizeof(check::siamese_check<L, S>) > 0);  // E027
    using Base = Layer<Siamese<L, S>, std::pair<typename L::In, typename L::In>, typename S::Out>;
    friend Base;

public:
    using typename Base::In;
    using typename Base::InView;
    using typename Base::Out;
    using typename Base::OutView;
    static constexpr extent_t static_nI = widths::static_nI<L>();
    static constexpr extent_t static_nO = widths::static_nO<S>();

    Siamese(L layer, S similarity)
        : Base("siamese(" + layer.name() + ", " + similarity.name() + ")", {{"nO", as_dim(static_nO)}, {"nI", as_dim(static_nI)}},
               {}),
          layer_(std::move(layer)), similarity_(std::move(similarity)) {
        if (layer_.is_initialized() && similarity_.is_initialized()) {
            sync_dims();
            this->mark_initialized();
        }
    }

    L& layer() noexcept { return layer_; }
    S& similarity() noexcept { return similarity_; }
    const L& layer() const noexcept { return layer_; }
    const S& similarity() const noexcept { return similarity_; }

    void for_each_child(const std::function<void(Node&)>& f) override {
        f(layer_);
        f(similarity_);
    }

    struct Backprop {
        typename L::Backprop b1, b2;
        typename S::Backprop bs;
        In operator()(OutView dY) const {
            auto d = bs(dY);  // (d_vec1, d_vec2)
            return In(b1(d.first), b2(d.second));
        }
    };

private:
    void init_impl(const std::remove_reference_t<InView>* X, const std::remove_reference_t<OutView>* Y) {
        if (X) {
            // As Thinc: the layer's width from the second input, its initialisation from the first.
            detail::offer_dim(layer_, "nI", detail::width_of(X->second));
            const typename L::InView x1 = X->first, x2 = X->second;
            layer_.initialize_from(&x1, nullptr);
            const typename S::In vecs(layer_.predict_inner(x1), layer_.predict_inner(x2));
            detail::offer_dim(similarity_, "nI", detail::width_of(vecs.first));
            similarity_.initialize_from(&vecs, Y);
        } else {
            if (this->has_dim("nI")) detail::offer_dim(layer_, "nI", this->get_dim("nI"));
            layer_.initialize_from(nullptr, nullptr);
            if (layer_.has_dim("nO")) detail::offer_dim(similarity_, "nI", layer_.get_dim("nO"));
            similarity_.initialize_from(nullptr, Y);
        }
        sync_dims();
        this->mark_initialized();
    }
    void sync_dims() {
        if (layer_.has_dim("nI")) this->set_dim("nI", layer_.get_dim("nI"), true);
        if (similarity_.has_dim("nO")) this->set_dim("nO", similarity_.get_dim("nO"), true);
    }

    Out predict_impl(InView X) const {
        const typename S::In vecs(layer_.predict_inner(X.first), layer_.predict_inner(X.second));
        return similarity_.predict_inner(vecs);
    }
    std::pair<Out, Backprop> forward_impl(InView X, bool is_train) {
        Backprop bp;
        auto [v1, b1] = layer_.update_inner(X.first, is_train);
        auto [v2, b2] = layer_.update_inner(X.second, is_train);
        bp.b1 = std::move(b1);
        bp.b2 = std::move(b2);
        const typename S::In vecs(std::move(v1), std::move(v2));
        auto [out, bs] = similarity_.update_inner(vecs, is_train);
        bp.bs = std::move(bs);
        return {std::move(out), std::move(bp)};
    }

    L layer_;
    S similarity_;
};

template <class L, class S>
    requires(Model<L> && Model<S>)
auto siamese(L&& layer, S&& similarity) {
    using DL = std::remove_cvref_t<L>;
    using DS = std::remove_cvref_t<S>;
    if constexpr (!std::is_same_v<check::siamese_check<DL, DS>, check::ok>) {
        check::report<check::siamese_check<DL, DS>>();  // E027: said here, at the call
        return failed_model{};
    } else {
        return Siamese<DL, DS>(DL(std::forward<L>(layer)), DS(std::forward<S>(similarity)));
    }
}

// With a failed model (its error is already said): a failed model (model/failed_model.hpp).
template <class... A>
    requires(any_failed_model<A...>)
failed_model siamese(A&&...) noexcept {
    return {};
}

}  // namespace tenon
