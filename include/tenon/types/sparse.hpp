// SparseFeatures: a batch of bags of hashed features (Thinc's (keys, values, lengths) tuple, the
// input of SparseLinear and of spaCy's TextCatBOW): row b of the batch has lengths[b] features,
// back to back, each a uint64 key and a float value. The invariant (checked when one is made,
// tenon-E275): keys and values have one entry per feature, the lengths are >= 0 and sum to
// the number of features. A batch of no rows, and rows of no features, are valid.
#pragma once
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "tenon/types/array.hpp"
#include "tenon/types/list.hpp"

namespace tenon {

class SparseFeatures {
public:
    SparseFeatures() = default;
    // Throws tenon-E275 when the arrays do not fit together.
    SparseFeatures(Keys1d keys, Floats1d values, Ints1d lengths)
        : keys_(std::move(keys)), values_(std::move(values)), lengths_(std::move(lengths)) {
        check();
    }

    const Keys1d& keys() const noexcept { return keys_; }
    const Floats1d& values() const noexcept { return values_; }
    const Ints1d& lengths() const noexcept { return lengths_; }
    // The values, writable in place (the shapes are part of the invariant).
    Floats1dView values_view() noexcept { return values_.view(); }

    // The number of rows (Thinc's len(lengths)) and of features in all.
    std::size_t size() const noexcept { return lengths_.size(); }
    std::size_t features() const noexcept { return keys_.size(); }
    bool empty() const noexcept { return size() == 0; }

    // The same keys and lengths with other values (a gradient): only their count is checked.
    SparseFeatures with_values(Floats1d values) const { return SparseFeatures(keys_, std::move(values), lengths_); }

private:
    void check() const;  // src/sparse.cpp

    Keys1d keys_;
    Floats1d values_;
    Ints1d lengths_;
};

// One row per document, its features the document's ids with value 1 each (spaCy's bag of
// words before counting: a repeated id adds its weight again).
SparseFeatures sparse_features(const std::vector<std::vector<std::uint64_t>>& docs);
// The same from the id column `column` of each document's ids (the output of a feature
// extractor, e.g. strings2arrays' List<Keys2d>, or a List<Ints2d> of ids; an Ints2d id is
// widened to uint64 as numpy does, a negative one to 2^64 + id). tenon-E275 for a column
// outside a document's columns.
SparseFeatures sparse_features(const List<Keys2d>& docs, std::size_t column = 0);
SparseFeatures sparse_features(const List<Ints2d>& docs, std::size_t column = 0);

}  // namespace tenon

namespace tenon::check {
struct SparseFeatures {};
template <>
struct name_of<tenon::SparseFeatures> {
    using type = check::SparseFeatures;
};
}  // namespace tenon::check
