// SequenceCategoricalCrossentropy: CategoricalCrossentropy over a batch of sequences (a tagger's
// List<Floats2d> of probabilities, one array per document, against one Ints1d of labels, one
// Floats2d of one-hot rows or, with names, one std::vector<std::string> per document), as
// thinc/loss.py. Each document's gradient is
// P - T, divided by the number of documents (normalize = true), not by its rows: a long
// document weighs more than a short one, as in Thinc. get_loss returns the cross-entropy,
// summed over the documents' rows and divided by the number of documents (Thinc 8.1 returns the
// sum of the squared gradients instead).
#pragma once
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "tenon/loss/categorical_crossentropy.hpp"
#include "tenon/model/diagnostics.hpp"
#include "tenon/types/list.hpp"

namespace tenon {

// (Thinc's keyword order: normalize, names, missing_value, neg_prefix, label_smoothing.)
struct SequenceCategoricalCrossentropyOptions {
    bool normalize = true;                           // divide each document's gradient by the number of documents
    std::vector<std::string> names = {};             // the classes' names: truths may be names (CategoricalCrossentropy's)
    std::optional<MissingLabel> missing_value = {};  // the truth of a row not annotated: -1, or a name
    std::optional<std::string> neg_prefix = {};      // "!PER": the row is not PER (with names)
    double label_smoothing = 0.0;                    // applied to integer labels and names
};

namespace detail {
// A batch of truths, one per document: any sized range (List<Ints1d>, std::vector<Floats2d>,
// ...) whose elements are labels (Ints1d) or one-hot rows (Floats2d).
// (std::begin / std::size, not <ranges>: its parse is a tenth of tenon.hpp's.)
template <class R>
using truth_ref_t = decltype(*std::begin(std::declval<const R&>()));
template <class R>
concept sequence_truths = requires(const R& r) {
    std::size(r);
    std::end(r);
    typename truth_ref_t<R>;
} && (std::is_convertible_v<truth_ref_t<R>, Ints1dCView> || std::is_convertible_v<truth_ref_t<R>, Floats2dCView> ||
      std::is_convertible_v<truth_ref_t<R>, std::span<const std::string>>);
template <class R>
using truth_view_t =
    std::conditional_t<std::is_convertible_v<truth_ref_t<R>, Ints1dCView>, Ints1dCView,
                       std::conditional_t<std::is_convertible_v<truth_ref_t<R>, Floats2dCView>, Floats2dCView,
                                          std::span<const std::string>>>;
}  // namespace detail

class SequenceCategoricalCrossentropy {
public:
    // (Out of line, src/loss.cpp: the options' strings are not copied in every program's code.)
    SequenceCategoricalCrossentropy();
    explicit SequenceCategoricalCrossentropy(SequenceCategoricalCrossentropyOptions o);
    SequenceCategoricalCrossentropy(const SequenceCategoricalCrossentropy&);
    SequenceCategoricalCrossentropy(SequenceCategoricalCrossentropy&&) noexcept;
    SequenceCategoricalCrossentropy& operator=(const SequenceCategoricalCrossentropy&);
    SequenceCategoricalCrossentropy& operator=(SequenceCategoricalCrossentropy&&) noexcept;
    ~SequenceCategoricalCrossentropy();

    // One gradient per document, in the documents' order.
    template <class Truths>
        requires detail::sequence_truths<Truths>
    List<Floats2d> get_grad(const List<Floats2d>& guesses, const Truths& truths) const {
        return grads(guesses, views(truths));
    }
    template <class Truths>
        requires detail::sequence_truths<Truths>
    double get_loss(const List<Floats2d>& guesses, const Truths& truths) const {
        return loss(guesses, views(truths));
    }
    // (gradients, loss), as Thinc's loss(guesses, truths).
    template <class Truths>
        requires detail::sequence_truths<Truths>
    std::pair<List<Floats2d>, double> operator()(const List<Floats2d>& guesses, const Truths& truths) const {
        const auto t = views(truths);
        return {grads(guesses, t), loss(guesses, t)};
    }

    // A call with arguments of other types, and the check its return type names (check::failing).
    template <class G, class T>
    static constexpr bool wrong =
        !std::is_convertible_v<const G&, const List<Floats2d>&> || !detail::sequence_truths<T>;
    template <class G, class T>
    using wrong_arguments =
        check::loss_arguments<SequenceCategoricalCrossentropy, check::given_type<check::name_t<G>>,
                              check::given_type<check::name_t<T>>>;
    // Anything else (one Floats2d of guesses, truths that are not one array per document):
    // tenon-E019, with the types given; its gradient is a failed_model (taken silently after).
    template <class G, class T>
        requires wrong<G, T>
    auto get_grad(const G&, const T&) const
        -> typename check::failing<wrong<G, T>, wrong_arguments<G, T>>::type {
        return {};
    }
    template <class G, class T>
        requires wrong<G, T>
    auto get_loss(const G&, const T&) const
        -> typename check::failing_as<wrong<G, T>, wrong_arguments<G, T>, double>::type {
        return 0.0;
    }
    template <class G, class T>
        requires wrong<G, T>
    auto operator()(const G&, const T&) const
        -> std::pair<typename check::failing<wrong<G, T>, wrong_arguments<G, T>>::type, double> {
        return {};
    }

private:
    template <class Truths>
    static std::vector<detail::truth_view_t<Truths>> views(const Truths& truths) {
        std::vector<detail::truth_view_t<Truths>> v;
        v.reserve(std::size(truths));
        for (const auto& t : truths) v.emplace_back(t);
        return v;
    }
    // (Out of line, src/loss.cpp: no model type reaches them.)
    const CategoricalCrossentropy& per_doc() const noexcept { return per_doc_; }
    List<Floats2d> grads(const List<Floats2d>& guesses, const std::vector<Ints1dCView>& labels) const;
    List<Floats2d> grads(const List<Floats2d>& guesses, const std::vector<Floats2dCView>& truths) const;
    double loss(const List<Floats2d>& guesses, const std::vector<Ints1dCView>& labels) const;
    double loss(const List<Floats2d>& guesses, const std::vector<Floats2dCView>& truths) const;
    List<Floats2d> grads(const List<Floats2d>& guesses, const std::vector<std::span<const std::string>>& names) const;
    double loss(const List<Floats2d>& guesses, const std::vector<std::span<const std::string>>& names) const;
    SequenceCategoricalCrossentropyOptions opts_;
    CategoricalCrossentropy per_doc_;  // each document's loss, made once from opts_ (normalize off)
};

}  // namespace tenon
