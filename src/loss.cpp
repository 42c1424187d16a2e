// CategoricalCrossentropy's members (include/tenon/loss/categorical_crossentropy.hpp), out of
// line: the loss takes arrays, not models, so one copy serves every program.
#include "tenon/loss/categorical_crossentropy.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "tenon/error.hpp"

namespace tenon {

Floats2d CategoricalCrossentropy::get_grad(Floats2dCView guesses, Floats2dCView truths) const {
    check(guesses, truths);
    Floats2d d(guesses.shape(), uninitialized);
    const float k = opts_.normalize && guesses.shape(0) ? 1.0f / static_cast<float>(guesses.shape(0)) : 1.0f;
    for (std::size_t i = 0, n = d.size(); i < n; ++i) d[i] = (guesses[i] - truths[i]) * k;
    return d;
}

Floats2d CategoricalCrossentropy::get_grad(Floats2dCView guesses, Ints1dCView labels) const {
    return get_grad(guesses, targets(guesses, labels));
}

double CategoricalCrossentropy::get_loss(Floats2dCView guesses, Floats2dCView truths) const {
    check(guesses, truths);
    double loss = 0.0;
    for (std::size_t i = 0, n = guesses.size(); i < n; ++i)
        if (truths[i] > 0.0f) loss -= double(truths[i]) * std::log(std::max(double(guesses[i]), 1e-12));
    return opts_.normalize && guesses.shape(0) ? loss / double(guesses.shape(0)) : loss;
}

double CategoricalCrossentropy::get_loss(Floats2dCView guesses, Ints1dCView labels) const {
    return get_loss(guesses, targets(guesses, labels));
}

Floats2d CategoricalCrossentropy::targets(Floats2dCView guesses, Ints1dCView labels) const {
    if (labels.shape(0) != guesses.shape(0))
        throw ShapeError("CategoricalCrossentropy: " + std::to_string(guesses.shape(0)) + " guesses but " +
                             std::to_string(labels.shape(0)) + " labels",
                         "tenon-E133");
    return to_categorical(labels, guesses.shape(1), opts_.label_smoothing);
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

}  // namespace tenon
