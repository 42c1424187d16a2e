// MultiSoftmax's checks of its groups (include/tenon/layers/multisoftmax.hpp), compiled once.
#include <string>
#include <vector>

#include "tenon/layers/multisoftmax.hpp"

namespace tenon::detail {

std::size_t multisoftmax_width(const std::vector<std::size_t>& nOs) {
    if (nOs.empty()) throw Error("multisoftmax: nOs is empty: give the width of each softmax group", "tenon-E197");
    std::size_t sum = 0;
    for (std::size_t i = 0; i < nOs.size(); ++i) {
        if (nOs[i] == 0)
            throw Error("multisoftmax: group " + std::to_string(i) + " of nOs has no columns (every group needs >= 1)",
                        "tenon-E197");
        if (nOs[i] > (std::size_t(1) << 40) || sum + nOs[i] > (std::size_t(1) << 40))
            throw Error("multisoftmax: the groups' widths " + multisoftmax_groups(nOs) +
                            " add up to more columns than an output can have (at most 2^40)",
                        "tenon-E197");
        sum += nOs[i];
    }
    return sum;
}

std::string multisoftmax_groups(const std::vector<std::size_t>& nOs) {
    std::string s;
    for (std::size_t i = 0; i < nOs.size(); ++i) {  // (appends: GCC 12 warns -Wrestrict on "," + to_string)
        if (i) s += ',';
        s += std::to_string(nOs[i]);
    }
    return s;
}

}  // namespace tenon::detail
