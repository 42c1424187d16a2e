// CategoricalCrossentropy's members (include/tenon/loss/categorical_crossentropy.hpp), out of
// line: the loss takes arrays, not models, so one copy serves every program.
#include "tenon/loss/categorical_crossentropy.hpp"
#include "tenon/loss/sequence_categorical_crossentropy.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "tenon/error.hpp"

namespace tenon {

// The gradient (P - T) [/ rows] and the loss -sum(T log P) [/ rows], each over the annotated
// rows (all of them without missing_value); `truths` says which rows are.
template <class Truths>
Floats2d CategoricalCrossentropy::grad(Floats2dCView guesses, Floats2dCView targets, const Truths& truths) const {
    check(guesses, targets);
    const std::size_t rows = guesses.shape(0), cols = guesses.shape(1);
    Floats2d d(guesses.shape(), uninitialized);
    const float k = opts_.normalize && rows ? 1.0f / static_cast<float>(rows) : 1.0f;
    for (std::size_t r = 0; r < rows; ++r) {
        float* out = d.data() + r * cols;
        if (!annotated(truths, r)) {
            std::fill(out, out + cols, 0.0f);
            continue;
        }
        const float* g = guesses.data() + r * cols;
        const float* t = targets.data() + r * cols;
        for (std::size_t c = 0; c < cols; ++c) out[c] = (g[c] - t[c]) * k;
    }
    return d;
}

template <class Truths>
double CategoricalCrossentropy::loss(Floats2dCView guesses, Floats2dCView targets, const Truths& truths) const {
    check(guesses, targets);
    const std::size_t rows = guesses.shape(0), cols = guesses.shape(1);
    double loss = 0.0;
    for (std::size_t r = 0; r < rows; ++r) {
        if (!annotated(truths, r)) continue;
        const float* g = guesses.data() + r * cols;
        const float* t = targets.data() + r * cols;
        for (std::size_t c = 0; c < cols; ++c)
            if (t[c] > 0.0f) loss -= double(t[c]) * std::log(std::max(double(g[c]), 1e-12));
    }
    return opts_.normalize && rows ? loss / double(rows) : loss;
}

bool CategoricalCrossentropy::annotated(Ints1dCView labels, std::size_t i) const {
    return !opts_.missing_value || labels[i] != *opts_.missing_value;
}

// One-hot truths: the row's class is its largest value (the first of equal ones), as Thinc.
bool CategoricalCrossentropy::annotated(Floats2dCView truths, std::size_t i) const {
    if (!opts_.missing_value) return true;
    const std::size_t cols = truths.shape(1);
    const float* t = truths.data() + i * cols;
    const auto best = static_cast<std::int64_t>(std::max_element(t, t + cols) - t);
    return cols == 0 || best != std::int64_t{*opts_.missing_value};
}

Floats2d CategoricalCrossentropy::get_grad(Floats2dCView guesses, Floats2dCView truths) const {
    return grad(guesses, truths, truths);
}

Floats2d CategoricalCrossentropy::get_grad(Floats2dCView guesses, Ints1dCView labels) const {
    return grad(guesses, targets(guesses, labels), labels);
}

double CategoricalCrossentropy::get_loss(Floats2dCView guesses, Floats2dCView truths) const {
    return loss(guesses, truths, truths);
}

double CategoricalCrossentropy::get_loss(Floats2dCView guesses, Ints1dCView labels) const {
    return loss(guesses, targets(guesses, labels), labels);
}

// One-hot rows of the labels; a missing label's row is left at zero (it is masked).
Floats2d CategoricalCrossentropy::targets(Floats2dCView guesses, Ints1dCView labels) const {
    if (labels.shape(0) != guesses.shape(0))
        throw ShapeError("CategoricalCrossentropy: " + std::to_string(guesses.shape(0)) + " guesses but " +
                             std::to_string(labels.shape(0)) + " labels",
                         "tenon-E133");
    if (!opts_.missing_value) return to_categorical(labels, guesses.shape(1), opts_.label_smoothing);
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

// Each document is CategoricalCrossentropy without its own normalisation (as Thinc's cc inside).
CategoricalCrossentropy SequenceCategoricalCrossentropy::per_doc() const {
    return CategoricalCrossentropy(
        {.normalize = false, .missing_value = opts_.missing_value, .label_smoothing = opts_.label_smoothing});
}
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

}  // namespace tenon
