// CategoricalCrossentropy's members (include/tenon/loss/categorical_crossentropy.hpp), out of
// line: the loss takes arrays, not models, so one copy serves every program.
#include "tenon/loss/categorical_crossentropy.hpp"
#include "tenon/loss/sequence_categorical_crossentropy.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <type_traits>
#include <utility>

#include "tenon/error.hpp"

namespace tenon {

CategoricalCrossentropy::CategoricalCrossentropy() = default;
// A name given twice says no one column (Thinc takes the last): checked once, here.
CategoricalCrossentropy::CategoricalCrossentropy(CategoricalCrossentropyOptions o) : opts_(std::move(o)) {
    for (std::size_t c = 1; c < opts_.names.size(); ++c)
        for (std::size_t d = 0; d < c; ++d)
            if (opts_.names[c] == opts_.names[d])
                throw Error("CategoricalCrossentropy: the name '" + opts_.names[c] + "' is given twice (columns " +
                                std::to_string(d) + " and " + std::to_string(c) + "): a name must say one column",
                            "tenon-E137");
}
CategoricalCrossentropy::CategoricalCrossentropy(const CategoricalCrossentropy&) = default;
CategoricalCrossentropy::CategoricalCrossentropy(CategoricalCrossentropy&&) noexcept = default;
CategoricalCrossentropy& CategoricalCrossentropy::operator=(const CategoricalCrossentropy&) = default;
CategoricalCrossentropy& CategoricalCrossentropy::operator=(CategoricalCrossentropy&&) noexcept = default;
CategoricalCrossentropy::~CategoricalCrossentropy() = default;
SequenceCategoricalCrossentropy::SequenceCategoricalCrossentropy()
    : SequenceCategoricalCrossentropy(SequenceCategoricalCrossentropyOptions{}) {}
// Each document is CategoricalCrossentropy without its own normalisation (as Thinc's cc inside).
SequenceCategoricalCrossentropy::SequenceCategoricalCrossentropy(SequenceCategoricalCrossentropyOptions o)
    : opts_(std::move(o)),
      per_doc_({.normalize = false,
                .names = opts_.names,
                .missing_value = opts_.missing_value,
                .neg_prefix = opts_.neg_prefix,
                .label_smoothing = opts_.label_smoothing}) {}
SequenceCategoricalCrossentropy::SequenceCategoricalCrossentropy(const SequenceCategoricalCrossentropy&) = default;
SequenceCategoricalCrossentropy::SequenceCategoricalCrossentropy(SequenceCategoricalCrossentropy&&) noexcept = default;
SequenceCategoricalCrossentropy& SequenceCategoricalCrossentropy::operator=(const SequenceCategoricalCrossentropy&) =
    default;
SequenceCategoricalCrossentropy& SequenceCategoricalCrossentropy::operator=(SequenceCategoricalCrossentropy&&) noexcept =
    default;
SequenceCategoricalCrossentropy::~SequenceCategoricalCrossentropy() = default;

// What each row of the truths says: its class (label), nothing (missing_value), or only the
// class it is not (a negative name, neg_prefix). Labels and one-hot truths say the first two.
namespace {
enum class RowSays : std::uint8_t { label, missing, negative };
struct NamedRows {
    Ints1d columns;  // the row's class, or the class a negative row is not (0 for a missing row)
    std::vector<RowSays> says;
};
}  // namespace

// The gradient (P - T) [/ rows] and the loss -sum(T log P) [/ rows], each over the annotated
// rows (all of them without missing_value); `truths` says which rows are. A negative row's
// gradient is its guess for the class it is not, alone, and its loss -log(1 - P[that class])
// (the probability that it is not: Thinc 8.1 has no loss of its own, only the squared gradient).
template <class Truths>
Floats2d CategoricalCrossentropy::grad(Floats2dCView guesses, Floats2dCView targets, const Truths& truths) const {
    check(guesses, targets);
    const std::size_t rows = guesses.shape(0), cols = guesses.shape(1);
    Floats2d d(guesses.shape(), uninitialized);
    const float k = opts_.normalize && rows ? 1.0f / static_cast<float>(rows) : 1.0f;
    for (std::size_t r = 0; r < rows; ++r) {
        float* out = d.data() + r * cols;
        const float* g = guesses.data() + r * cols;
        RowSays says;
        if constexpr (std::is_same_v<Truths, NamedRows>) says = truths.says[r];
        else says = annotated(truths, r) ? RowSays::label : RowSays::missing;
        if (says == RowSays::label) {
            const float* t = targets.data() + r * cols;
            for (std::size_t c = 0; c < cols; ++c) out[c] = (g[c] - t[c]) * k;
            continue;
        }
        std::fill(out, out + cols, 0.0f);
        if constexpr (std::is_same_v<Truths, NamedRows>)
            if (says == RowSays::negative) out[truths.columns[r]] = g[truths.columns[r]] * k;
    }
    return d;
}

template <class Truths>
double CategoricalCrossentropy::loss(Floats2dCView guesses, Floats2dCView targets, const Truths& truths) const {
    check(guesses, targets);
    const std::size_t rows = guesses.shape(0), cols = guesses.shape(1);
    double loss = 0.0;
    for (std::size_t r = 0; r < rows; ++r) {
        const float* g = guesses.data() + r * cols;
        RowSays says;
        if constexpr (std::is_same_v<Truths, NamedRows>) says = truths.says[r];
        else says = annotated(truths, r) ? RowSays::label : RowSays::missing;
        if constexpr (std::is_same_v<Truths, NamedRows>)
            if (says == RowSays::negative) loss -= std::log(std::max(1.0 - double(g[truths.columns[r]]), 1e-12));
        if (says != RowSays::label) continue;
        const float* t = targets.data() + r * cols;
        for (std::size_t c = 0; c < cols; ++c)
            if (t[c] > 0.0f) loss -= double(t[c]) * std::log(std::max(double(g[c]), 1e-12));
    }
    return opts_.normalize && rows ? loss / double(rows) : loss;
}

bool CategoricalCrossentropy::annotated(Ints1dCView labels, std::size_t i) const {
    const auto missing = missing_label();
    return !missing || labels[i] != *missing;
}

// One-hot truths: the row's class is its largest value (the first of equal ones), as Thinc.
bool CategoricalCrossentropy::annotated(Floats2dCView truths, std::size_t i) const {
    const auto missing = missing_label();
    if (!missing) return true;
    const std::size_t cols = truths.shape(1);
    const float* t = truths.data() + i * cols;
    const auto best = static_cast<std::int64_t>(std::max_element(t, t + cols) - t);
    return cols == 0 || best != std::int64_t{*missing};
}

// ---- truths given as the classes' names (options.names, missing_value, neg_prefix) ----
namespace {
[[noreturn]] void names_error(const std::string& what) {
    throw Error("CategoricalCrossentropy: " + what, "tenon-E137");
}
// The options against the guesses and the kind of truths, whatever the truths are: names (if
// given) one per column; label_smoothing only where the loss makes the targets.
void check_options(const CategoricalCrossentropyOptions& o, Floats2dCView guesses, bool one_hot) {
    if (!o.names.empty() && o.names.size() != guesses.shape(1))
        names_error(std::to_string(o.names.size()) + " names for guesses of " + std::to_string(guesses.shape(1)) +
                    " columns");
    if (one_hot && o.label_smoothing != 0.0)
        names_error("label_smoothing applies to labels and names, from which the loss makes the targets; one-hot "
                    "truths are the targets as given (smooth them with to_categorical(labels, n, smoothing))");
}
NamedRows read_names(const CategoricalCrossentropyOptions& o, Floats2dCView guesses, std::span<const std::string> truths) {
    if (o.names.empty())
        names_error("truths given as names need the classes' names, in column order (the options' names: "
                    "CategoricalCrossentropy({.names = {\"A\", \"B\"}}))");
    check_options(o, guesses, false);
    if (truths.size() != guesses.shape(0))
        throw ShapeError("CategoricalCrossentropy: " + std::to_string(guesses.shape(0)) + " guesses but " +
                             std::to_string(truths.size()) + " truths",
                         "tenon-E133");
    // (`given`: the truth as written, "!PER" for the name PER.)
    const auto column = [&](std::string_view name, std::size_t row, const std::string& given) {
        for (std::size_t c = 0; c < o.names.size(); ++c)
            if (o.names[c] == name) return static_cast<std::int32_t>(c);
        std::string known;
        for (std::size_t c = 0; c < o.names.size() && c < 20; ++c) known += (c ? ", " : "") + o.names[c];
        names_error("row " + std::to_string(row) + ": '" + std::string(name) + "'" +
                    (given != name ? " (in '" + given + "')" : std::string()) + " is not one of the names (" + known +
                    (o.names.size() > 20 ? ", ..." : "") + ")");
    };
    const std::optional<std::string>& missing = o.missing_value ? o.missing_value->name : std::nullopt;
    NamedRows rows{Ints1d({truths.size()}), std::vector<RowSays>(truths.size(), RowSays::label)};
    for (std::size_t i = 0; i < truths.size(); ++i) {
        const std::string& t = truths[i];
        if (missing && t == *missing) {  // (before the prefix, as Thinc)
            rows.says[i] = RowSays::missing;
            rows.columns[i] = 0;
        } else if (o.neg_prefix && !o.neg_prefix->empty() && !t.empty() && t.starts_with(*o.neg_prefix)) {
            rows.says[i] = RowSays::negative;
            rows.columns[i] = column(std::string_view(t).substr(o.neg_prefix->size()), i, t);
        } else {
            rows.columns[i] = column(t, i, t);
        }
    }
    return rows;
}
}  // namespace

// The names' targets: their one-hot rows (smoothed); the rows that are missing or negative
// are not read (grad, loss).
Floats2d CategoricalCrossentropy::get_grad(Floats2dCView guesses, std::span<const std::string> truths) const {
    const NamedRows rows = read_names(opts_, guesses, truths);
    return grad(guesses, to_categorical(rows.columns, guesses.shape(1), opts_.label_smoothing), rows);
}

double CategoricalCrossentropy::get_loss(Floats2dCView guesses, std::span<const std::string> truths) const {
    const NamedRows rows = read_names(opts_, guesses, truths);
    return loss(guesses, to_categorical(rows.columns, guesses.shape(1), opts_.label_smoothing), rows);
}

Floats2d CategoricalCrossentropy::get_grad(Floats2dCView guesses, Floats2dCView truths) const {
    check_options(opts_, guesses, true);
    return grad(guesses, truths, truths);
}

Floats2d CategoricalCrossentropy::get_grad(Floats2dCView guesses, Ints1dCView labels) const {
    check_options(opts_, guesses, false);
    return grad(guesses, targets(guesses, labels), labels);
}

double CategoricalCrossentropy::get_loss(Floats2dCView guesses, Floats2dCView truths) const {
    check_options(opts_, guesses, true);
    return loss(guesses, truths, truths);
}

double CategoricalCrossentropy::get_loss(Floats2dCView guesses, Ints1dCView labels) const {
    check_options(opts_, guesses, false);
    return loss(guesses, targets(guesses, labels), labels);
}

// One-hot rows of the labels; a missing label's row is left at zero (it is masked).
Floats2d CategoricalCrossentropy::targets(Floats2dCView guesses, Ints1dCView labels) const {
    if (labels.shape(0) != guesses.shape(0))
        throw ShapeError("CategoricalCrossentropy: " + std::to_string(guesses.shape(0)) + " guesses but " +
                             std::to_string(labels.shape(0)) + " labels",
                         "tenon-E133");
    if (!missing_label()) return to_categorical(labels, guesses.shape(1), opts_.label_smoothing);
    Ints1d known(labels.shape(), uninitialized);
    for (std::size_t i = 0; i < labels.shape(0); ++i) known[i] = annotated(labels, i) ? labels[i] : 0;
    Floats2d t = to_categorical(known, guesses.shape(1), opts_.label_smoothing);
    const std::size_t cols = guesses.shape(1);
    for (std::size_t i = 0; i < labels.shape(0); ++i)
        if (!annotated(labels, i)) std::fill(t.data() + i * cols, t.data() + (i + 1) * cols, 0.0f);
    return t;
}

void CategoricalCrossentropy::check(Floats2dCView guesses, Floats2dCView truths) {
    if (guesses.shape() != truths.shape())
        throw ShapeError("CategoricalCrossentropy: guesses have shape (" + std::to_string(guesses.shape(0)) +
                             ", " + std::to_string(guesses.shape(1)) + ") but truths (" +
                             std::to_string(truths.shape(0)) + ", " + std::to_string(truths.shape(1)) + ")",
                         "tenon-E133");
    const std::size_t n = guesses.shape(0) * guesses.shape(1);
    for (std::size_t i = 0; i < n; ++i) {
        const float g = guesses.data()[i];
        if (g >= 0.0f && g <= 1.0f) continue;
        // A NaN or inf is a model gone wrong (a Softmax cannot output it from finite
        // inputs), not a missing Softmax: say so.
        const std::string at = " at [" + std::to_string(i / guesses.shape(1)) + ", " +
                               std::to_string(i % guesses.shape(1)) + "]";
        if (!std::isfinite(g))
            throw Error("CategoricalCrossentropy: guesses must be probabilities in [0, 1], found " +
                            std::string(std::isnan(g) ? "NaN" : g > 0 ? "inf" : "-inf") + at +
                            ": the model's output is not finite (training diverged: lower the learning "
                            "rate; or a weight or input holds NaN/inf, see docs/reliability.md)",
                        "tenon-E134");
        throw Error("CategoricalCrossentropy: guesses must be probabilities in [0, 1], found " +
                        std::to_string(g) + at + " (put a Softmax before this loss)",
                    "tenon-E134");
    }
}

// ---- SequenceCategoricalCrossentropy (include/tenon/loss/sequence_categorical_crossentropy.hpp)
namespace {
void check_documents(std::size_t guesses, std::size_t truths) {
    if (guesses != truths)
        throw ShapeError("SequenceCategoricalCrossentropy: " + std::to_string(guesses) + " documents of guesses but " +
                             std::to_string(truths) + " of truths",
                         "tenon-E133");
}
// Runs one document's part, naming the document in an error it throws.
template <class F>
auto for_document(std::size_t d, F&& f) {
    try {
        return f();
    } catch (Error& e) {
        e.set_message("SequenceCategoricalCrossentropy: document " + std::to_string(d) + ": " + e.message());
        throw;
    }
}
template <class Truth>
List<Floats2d> sequence_grads(const CategoricalCrossentropy& per_doc, bool normalize, const List<Floats2d>& guesses,
                              const std::vector<Truth>& truths) {
    check_documents(guesses.size(), truths.size());
    List<Floats2d> d;
    d.reserve(guesses.size());
    const float k = normalize && !guesses.empty() ? 1.0f / static_cast<float>(guesses.size()) : 1.0f;
    for (std::size_t i = 0; i < guesses.size(); ++i) {
        Floats2d g = for_document(i, [&] { return per_doc.get_grad(guesses[i], truths[i]); });
        if (k != 1.0f)
            for (std::size_t j = 0, n = g.size(); j < n; ++j) g[j] *= k;
        d.push_back(std::move(g));
    }
    return d;
}
template <class Truth>
double sequence_loss(const CategoricalCrossentropy& per_doc, bool normalize, const List<Floats2d>& guesses,
                     const std::vector<Truth>& truths) {
    check_documents(guesses.size(), truths.size());
    double loss = 0.0;
    for (std::size_t i = 0; i < guesses.size(); ++i)
        loss += for_document(i, [&] { return per_doc.get_loss(guesses[i], truths[i]); });
    return normalize && !guesses.empty() ? loss / double(guesses.size()) : loss;
}
}  // namespace

List<Floats2d> SequenceCategoricalCrossentropy::grads(const List<Floats2d>& guesses,
                                                      const std::vector<Ints1dCView>& labels) const {
    return sequence_grads(per_doc(), opts_.normalize, guesses, labels);
}
List<Floats2d> SequenceCategoricalCrossentropy::grads(const List<Floats2d>& guesses,
                                                      const std::vector<Floats2dCView>& truths) const {
    return sequence_grads(per_doc(), opts_.normalize, guesses, truths);
}
double SequenceCategoricalCrossentropy::loss(const List<Floats2d>& guesses,
                                             const std::vector<Ints1dCView>& labels) const {
    return sequence_loss(per_doc(), opts_.normalize, guesses, labels);
}
double SequenceCategoricalCrossentropy::loss(const List<Floats2d>& guesses,
                                             const std::vector<Floats2dCView>& truths) const {
    return sequence_loss(per_doc(), opts_.normalize, guesses, truths);
}
List<Floats2d> SequenceCategoricalCrossentropy::grads(const List<Floats2d>& guesses,
                                                      const std::vector<std::span<const std::string>>& names) const {
    return sequence_grads(per_doc(), opts_.normalize, guesses, names);
}
double SequenceCategoricalCrossentropy::loss(const List<Floats2d>& guesses,
                                             const std::vector<std::span<const std::string>>& names) const {
    return sequence_loss(per_doc(), opts_.normalize, guesses, names);
}

}  // namespace tenon
