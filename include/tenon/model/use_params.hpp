// Thinc's `with model.use_params(params):` as a scoped guard: while a UseParams lives, the
// parameters of the model whose (node id, name) key is in `params` hold the given values;
// its destructor puts the model's own values back. UseAverages (tenon/optim/optimizer.hpp)
// is one use of it, with the optimizer's moving averages.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "tenon/model/node.hpp"

namespace tenon {

using ParamValues = std::map<ParamKey, CParamView>;

class UseParams {
public:
    // Checks every matching parameter's size first: a value of another size than the
    // parameter (say, averages kept before the model was re-initialised with other widths)
    // is tenon-E235, and nothing is swapped. Keys the model does not have are ignored, as in
    // Thinc. The values are copied in; `params` need not outlive the guard.
    UseParams(Node& model, const ParamValues& params);
    // Restores the model's values. A parameter that was re-allocated with another size while
    // the guard lived (initialize with other widths) keeps its new values: nothing to restore;
    // a node destroyed or moved while it lived (the model's life ended first) is not touched.
    // The values given must be finite (tenon-E119).
    ~UseParams();
    UseParams(const UseParams&) = delete;
    UseParams& operator=(const UseParams&) = delete;

private:
    struct Saved {
        Node* node;
        detail::PlaceWatch place;  // the node is still there (not destroyed or moved)
        std::string name;
        std::vector<float> backup;
    };
    std::vector<Saved> saved_;
};

// `auto guard = use_params(model, params);` (guaranteed copy elision: the guard is not movable).
[[nodiscard]] inline UseParams use_params(Node& model, const ParamValues& params) { return UseParams(model, params); }

}  // namespace tenon
