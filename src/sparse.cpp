// SparseFeatures' check and the helpers that make one from documents
// (include/tenon/types/sparse.hpp), compiled once.
#include <cstdint>
#include <string>
#include <vector>

#include "tenon/error.hpp"
#include "tenon/types/sparse.hpp"

namespace tenon {

void SparseFeatures::check() const {
    auto fail = [&](const std::string& what) {
        throw ShapeError("SparseFeatures: " + what + " (keys " + std::to_string(keys_.size()) + ", values " +
                             std::to_string(values_.size()) + ", lengths " + std::to_string(lengths_.size()) + ")",
                         "tenon-E275");
    };
    if (keys_.size() != values_.size())
        fail("keys and values must have one entry per feature: expected " + std::to_string(keys_.size()) +
             " values (one per key) but found " + std::to_string(values_.size()));
    std::uint64_t sum = 0;
    for (std::size_t i = 0; i < lengths_.size(); ++i) {
        if (lengths_[i] < 0)
            fail("length " + std::to_string(i) + " is " + std::to_string(lengths_[i]) + "; lengths must be >= 0");
        sum += static_cast<std::uint64_t>(lengths_[i]);
    }
    if (sum != keys_.size())
        fail("the lengths must sum to the number of features: expected " + std::to_string(keys_.size()) +
             " but the lengths sum to " + std::to_string(sum));
}

namespace {
template <class Id>
SparseFeatures from_lists(const std::vector<std::vector<Id>>& docs) {
    std::size_t n = 0;
    for (const auto& d : docs) n += d.size();
    Keys1d keys({n}, uninitialized);
    Floats1d values({n}, uninitialized);
    Ints1d lengths({docs.size()}, uninitialized);
    std::size_t f = 0;
    for (std::size_t b = 0; b < docs.size(); ++b) {
        if (docs[b].size() > static_cast<std::size_t>(INT32_MAX))
            throw ShapeError("sparse_features: document " + std::to_string(b) + " has " +
                                 std::to_string(docs[b].size()) + " features; at most 2^31 - 1 fit a length",
                             "tenon-E275");
        lengths[b] = static_cast<std::int32_t>(docs[b].size());
        for (Id id : docs[b]) {
            keys[f] = static_cast<std::uint64_t>(id);
            values[f++] = 1.0f;
        }
    }
    return SparseFeatures(std::move(keys), std::move(values), std::move(lengths));
}

template <class A>
SparseFeatures from_arrays(const List<A>& docs, std::size_t column) {
    using T = typename A::value_type;
    std::vector<std::vector<T>> ids(docs.size());
    for (std::size_t b = 0; b < docs.size(); ++b) {
        const A& d = docs[b];
        if (d.shape(0) > 0 && column >= d.shape(1))
            throw ShapeError("sparse_features: column " + std::to_string(column) + " holds the ids, but document " +
                                 std::to_string(b) + " has " + std::to_string(d.shape(1)) + " columns",
                             "tenon-E275");
        ids[b].reserve(d.shape(0));
        for (std::size_t r = 0; r < d.shape(0); ++r) ids[b].push_back(d.data()[r * d.shape(1) + column]);
    }
    if constexpr (std::is_signed_v<T>) {
        // numpy's widening: an int32 id -1 is 2^64 - 1.
        std::vector<std::vector<std::uint64_t>> wide(ids.size());
        for (std::size_t b = 0; b < ids.size(); ++b)
            for (T id : ids[b]) wide[b].push_back(static_cast<std::uint64_t>(static_cast<std::int64_t>(id)));
        return from_lists(wide);
    } else {
        return from_lists(ids);
    }
}
}  // namespace

SparseFeatures sparse_features(const std::vector<std::vector<std::uint64_t>>& docs) { return from_lists(docs); }
SparseFeatures sparse_features(const List<Keys2d>& docs, std::size_t column) { return from_arrays(docs, column); }
SparseFeatures sparse_features(const List<Ints2d>& docs, std::size_t column) { return from_arrays(docs, column); }

}  // namespace tenon
