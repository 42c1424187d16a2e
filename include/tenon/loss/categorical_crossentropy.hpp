// CategoricalCrossentropy: for probabilities P (e.g. from Softmax) and targets T (one-hot
// rows, or integer labels), the gradient with respect to the logits, (P - T) / rows
// (normalize = true) or P - T, as thinc/loss.py. get_loss returns the cross-entropy itself,
// -sum(T log P) / rows; Thinc 8.1 returns the sum of the squared gradient instead.
#pragma once
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

    // The members are compiled once, in the library (src/loss.cpp): no model type reaches them.
    Floats2d get_grad(Floats2dCView guesses, Floats2dCView truths) const;
    Floats2d get_grad(Floats2dCView guesses, Ints1dCView labels) const;
    double get_loss(Floats2dCView guesses, Floats2dCView truths) const;
    double get_loss(Floats2dCView guesses, Ints1dCView labels) const;

    // (gradient, loss), as Thinc's loss(guesses, truths).
    template <class Truths>
    std::pair<Floats2d, double> operator()(Floats2dCView guesses, const Truths& truths) const {
        return {get_grad(guesses, truths), get_loss(guesses, truths)};
    }

private:
    Floats2d targets(Floats2dCView guesses, Ints1dCView labels) const;
    static void check(Floats2dCView guesses, Floats2dCView truths);
    CategoricalCrossentropyOptions opts_;
};

}  // namespace tenon
