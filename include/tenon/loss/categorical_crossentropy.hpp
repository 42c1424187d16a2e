// CategoricalCrossentropy: for probabilities P (e.g. from Softmax) and targets T (one-hot
// rows, integer labels, or the classes' names with `names`), the gradient with respect to the logits, (P - T) / rows
// (normalize = true) or P - T, as thinc/loss.py. get_loss returns the cross-entropy itself,
// -sum(T log P) / rows; Thinc 8.1 returns the sum of the squared gradient instead.
#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "tenon/data/to_categorical.hpp"
#include "tenon/model/diagnostics.hpp"
#include "tenon/types/array.hpp"

namespace tenon {

namespace detail {
// What CategoricalCrossentropy takes: one Floats2d of guesses, and labels or one-hot rows.
template <class G, class T>
concept cce_arguments = std::is_convertible_v<const G&, Floats2dCView> &&
                        (std::is_convertible_v<const T&, Ints1dCView> || std::is_convertible_v<const T&, Floats2dCView> ||
                         std::is_convertible_v<const T&, std::span<const std::string>>);
}  // namespace detail

// The truth of a row not annotated (Thinc's missing_value, an int or a str): an integer label
// (-1) or, for truths given as names, a name ("" or "-").
struct MissingLabel {
    MissingLabel(std::int32_t l) noexcept : label(l) {}          // NOLINT(google-explicit-constructor)
    MissingLabel(std::string n) noexcept : name(std::move(n)) {}  // NOLINT(google-explicit-constructor)
    MissingLabel(const char* n) : name(n) {}                      // NOLINT(google-explicit-constructor)
    std::optional<std::int32_t> label;
    std::optional<std::string> name;
};

// (Thinc's keyword order: normalize, names, missing_value, neg_prefix, label_smoothing.)
struct CategoricalCrossentropyOptions {
    bool normalize = true;
    // The classes' names, one per column of the guesses: the truths may then be names
    // (std::vector<std::string>, one per row), as Thinc's names=[...].
    std::vector<std::string> names = {};
    // A truth that marks a row as not annotated (-1, or a name): the row adds nothing to the
    // gradient or the loss, and still counts in normalize's rows (as Thinc). With one-hot truths,
    // the rows whose largest value is at that index.
    std::optional<MissingLabel> missing_value = {};
    // With names: a truth "!PER" (neg_prefix "!") says only that the row is not PER: its gradient
    // is the guess for PER (pushed towards 0) and 0 in every other column (Thinc's neg_prefix).
    std::optional<std::string> neg_prefix = {};
    double label_smoothing = 0.0;  // applied to integer labels and names
};

class CategoricalCrossentropy {
public:
    // (Out of line, src/loss.cpp, as the members: the options' strings are not copied or
    // destroyed in every program's own code.)
    CategoricalCrossentropy();
    explicit CategoricalCrossentropy(CategoricalCrossentropyOptions o);
    CategoricalCrossentropy(const CategoricalCrossentropy&);
    CategoricalCrossentropy(CategoricalCrossentropy&&) noexcept;
    CategoricalCrossentropy& operator=(const CategoricalCrossentropy&);
    CategoricalCrossentropy& operator=(CategoricalCrossentropy&&) noexcept;
    ~CategoricalCrossentropy();

    // The members are compiled once, in the library (src/loss.cpp): no model type reaches them.
    Floats2d get_grad(Floats2dCView guesses, Floats2dCView truths) const;
    Floats2d get_grad(Floats2dCView guesses, Ints1dCView labels) const;
    double get_loss(Floats2dCView guesses, Floats2dCView truths) const;
    double get_loss(Floats2dCView guesses, Ints1dCView labels) const;
    // Truths as the classes' names (options.names; missing_value and neg_prefix as above).
    Floats2d get_grad(Floats2dCView guesses, std::span<const std::string> truths) const;
    double get_loss(Floats2dCView guesses, std::span<const std::string> truths) const;

    // (gradient, loss), as Thinc's loss(guesses, truths).
    template <class Guesses, class Truths>
        requires(detail::cce_arguments<Guesses, Truths> && !is_failed_model<Guesses> && !is_failed_model<Truths>)
    std::pair<Floats2d, double> operator()(const Guesses& guesses, const Truths& truths) const {
        const Floats2dCView g = guesses;
        return {get_grad(g, truths), get_loss(g, truths)};
    }

    // A failed model's output or batch (its error is already said): taken silently, where the
    // overloads above would all take it and none would be chosen.
    template <class G, class T>
        requires(is_failed_model<G> || is_failed_model<T>)
    failed_model get_grad(const G&, const T&) const {
        return {};
    }
    template <class G, class T>
        requires(is_failed_model<G> || is_failed_model<T>)
    double get_loss(const G&, const T&) const {
        return 0.0;
    }
    template <class G, class T>
        requires(is_failed_model<G> || is_failed_model<T>)
    std::pair<failed_model, double> operator()(const G&, const T&) const {
        return {};
    }

    // A call with arguments of other types, and the check its return type names (check::failing).
    template <class G, class T>
    static constexpr bool wrong = !detail::cce_arguments<G, T>;
    template <class G, class T>
    using wrong_arguments = check::loss_arguments<CategoricalCrossentropy, check::given_type<check::name_t<G>>,
                                                  check::given_type<check::name_t<T>>>;
    // Anything else (a List of documents: SequenceCategoricalCrossentropy): tenon-E019. The
    // gradient it gives is a failed_model, which backprop(dY) and the rest take silently.
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
    Floats2d targets(Floats2dCView guesses, Ints1dCView labels) const;
    std::optional<std::int32_t> missing_label() const noexcept {
        return opts_.missing_value ? opts_.missing_value->label : std::nullopt;
    }
    static void check(Floats2dCView guesses, Floats2dCView truths);
    // Whether row i is annotated (missing_value), for labels or one-hot truths.
    bool annotated(Ints1dCView labels, std::size_t i) const;
    bool annotated(Floats2dCView truths, std::size_t i) const;
    template <class Truths>
    Floats2d grad(Floats2dCView guesses, Floats2dCView targets, const Truths& truths) const;
    template <class Truths>
    double loss(Floats2dCView guesses, Floats2dCView targets, const Truths& truths) const;
    CategoricalCrossentropyOptions opts_;
};

}  // namespace tenon
