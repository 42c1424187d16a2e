// CategoricalCrossentropy: for probabilities P (e.g. from Softmax) and targets T (one-hot
// rows, or integer labels), the gradient with respect to the logits, (P - T) / rows
// (normalize = true) or P - T, as thinc/loss.py. get_loss returns the cross-entropy itself,
// -sum(T log P) / rows; Thinc 8.1 returns the sum of the squared gradient instead.
#pragma once
#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "tenon/data/to_categorical.hpp"
#include "tenon/types/array.hpp"

namespace tenon {

struct CategoricalCrossentropyOptions {
    bool normalize = true;
    double label_smoothing = 0.0;  // applied to integer labels
};

class CategoricalCrossentropy {
public:
    explicit CategoricalCrossentropy(CategoricalCrossentropyOptions o = {}) : opts_(o) {}

    Floats2d get_grad(Floats2dCView guesses, Floats2dCView truths) const {
        check(guesses, truths);
        Floats2d d(guesses.shape(), uninitialized);
        const float k = opts_.normalize && guesses.shape(0) ? 1.0f / static_cast<float>(guesses.shape(0)) : 1.0f;
        for (std::size_t i = 0, n = d.size(); i < n; ++i) d[i] = (guesses[i] - truths[i]) * k;
        return d;
    }
    Floats2d get_grad(Floats2dCView guesses, Ints1dCView labels) const {
        return get_grad(guesses, targets(guesses, labels));
    }

    double get_loss(Floats2dCView guesses, Floats2dCView truths) const {
        check(guesses, truths);
        double loss = 0.0;
        for (std::size_t i = 0, n = guesses.size(); i < n; ++i)
            if (truths[i] > 0.0f) loss -= double(truths[i]) * std::log(std::max(double(guesses[i]), 1e-12));
        return opts_.normalize && guesses.shape(0) ? loss / double(guesses.shape(0)) : loss;
    }
    double get_loss(Floats2dCView guesses, Ints1dCView labels) const {
        return get_loss(guesses, targets(guesses, labels));
    }

    // (gradient, loss), as Thinc's loss(guesses, truths).
    template <class Truths>
    std::pair<Floats2d, double> operator()(Floats2dCView guesses, const Truths& truths) const {
        return {get_grad(guesses, truths), get_loss(guesses, truths)};
    }

private:
    Floats2d targets(Floats2dCView guesses, Ints1dCView labels) const {
        if (labels.shape(0) != guesses.shape(0))
            throw ShapeError("CategoricalCrossentropy: " + std::to_string(guesses.shape(0)) + " guesses but " +
                                 std::to_string(labels.shape(0)) + " labels",
                             "tenon-E133");
        return to_categorical(labels, guesses.shape(1), opts_.label_smoothing);
    }
    static void check(Floats2dCView guesses, Floats2dCView truths) {
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
    CategoricalCrossentropyOptions opts_;
};

}  // namespace tenon
