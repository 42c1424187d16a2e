// L2Distance: gradient (guesses - truths) / rows (normalize = true) or guesses - truths, and
// the loss sum((guesses - truths)^2) / 2 / rows (or without / rows). Thinc 8.1's get_loss is
// the sum of the squared *normalised gradient*; tenon returns the usual half squared error.
#pragma once
#include <string>
#include <type_traits>
#include <utility>

#include "tenon/model/diagnostics.hpp"
#include "tenon/types/array.hpp"

namespace tenon {

struct L2DistanceOptions {
    bool normalize = true;
};

class L2Distance {
public:
    explicit L2Distance(L2DistanceOptions o = {}) : opts_(o) {}

    Floats2d get_grad(Floats2dCView guesses, Floats2dCView truths) const {
        check(guesses, truths);
        Floats2d d(guesses.shape(), uninitialized);
        const float k = scale(guesses);
        for (std::size_t i = 0, n = d.size(); i < n; ++i) d[i] = (guesses[i] - truths[i]) * k;
        return d;
    }
    double get_loss(Floats2dCView guesses, Floats2dCView truths) const {
        check(guesses, truths);
        double s = 0.0;
        for (std::size_t i = 0, n = guesses.size(); i < n; ++i) {
            const double e = double(guesses[i]) - double(truths[i]);
            s += e * e;
        }
        return 0.5 * s * scale(guesses);
    }
    std::pair<Floats2d, double> operator()(Floats2dCView guesses, Floats2dCView truths) const {
        return {get_grad(guesses, truths), get_loss(guesses, truths)};
    }

    // A call with arguments of other types, and the check its return type names (check::failing).
    template <class G, class T>
    static constexpr bool wrong =
        !std::is_convertible_v<const G&, Floats2dCView> || !std::is_convertible_v<const T&, Floats2dCView>;
    template <class G, class T>
    using wrong_arguments = check::loss_arguments<L2Distance, check::given_type<check::name_t<G>>,
                                                  check::given_type<check::name_t<T>>>;
    // Anything else (a List of arrays: call it per array): tenon-E019; its gradient is a
    // failed_model, which backprop(dY) and the rest take silently.
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
    float scale(Floats2dCView g) const {
        return opts_.normalize && g.shape(0) ? 1.0f / static_cast<float>(g.shape(0)) : 1.0f;
    }
    static void check(Floats2dCView guesses, Floats2dCView truths) {
        if (guesses.shape() != truths.shape())
            throw ShapeError("L2Distance: guesses have shape (" + std::to_string(guesses.shape(0)) + ", " +
                                 std::to_string(guesses.shape(1)) + ") but truths (" +
                                 std::to_string(truths.shape(0)) + ", " + std::to_string(truths.shape(1)) + ")",
                             "tenon-E133");
    }
    L2DistanceOptions opts_;
};

}  // namespace tenon
