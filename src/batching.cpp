// The batchers of items (include/tenon/data/batching.hpp): which items go into which batch,
// computed once per loop, non-template (the typed part only copies the items out).
#include <cmath>
#include <numeric>
#include <string>

#include "tenon/data/batching.hpp"

namespace tenon {

double BatchSize::next_value(const char* who) {
    Schedule* s = owned_ ? &own_ : shared_;
    if (!s) {
        if (n_ == 0) throw Error(std::string(who) + ": the batch size must be >= 1", "tenon-E135");
        return static_cast<double>(n_);
    }
    const double v = s->next();
    if (!std::isfinite(v) || v < 1.0)
        throw Error(std::string(who) + ": the batch size must be >= 1, but " + s->name() + " gave " +
                        std::to_string(v),
                    "tenon-E135");
    return v;
}

std::size_t BatchSize::next(const char* who) {
    // (A value past what a size_t holds is one batch of everything: Thinc's int(1e20) is.)
    const double v = next_value(who);
    return v >= 0x1p62 ? std::size_t(1) << 62 : static_cast<std::size_t>(v);
}

namespace detail {
namespace {
std::vector<std::size_t> item_order(std::size_t n, bool shuffled) {
    std::vector<std::size_t> order(n);
    std::iota(order.begin(), order.end(), std::size_t{0});
    if (shuffled)  // the same draws as Batches' (rows of arrays)
        for (std::size_t i = n; i > 1; --i) std::swap(order[i - 1], order[global_rng().below(i)]);
    return order;
}
}  // namespace

BatchPlan plan_batches(std::size_t n, BatchSize size, bool shuffled) {
    BatchPlan p;
    p.order = item_order(n, shuffled);
    // Every size is drawn before the first batch, as Thinc's; each is an int (Thinc adds the
    // schedule's raw value to its running total but slices by int(value), so a fractional
    // size can leave the last items out: here the total is of the sizes used).
    for (std::size_t at = 0; at < n;) {
        at = std::min(n, at + size.next("minibatch"));
        p.ends.push_back(at);
    }
    return p;
}

BatchPlan plan_by_words(const std::vector<std::size_t>& lengths, BatchSize size, double tolerance,
                        bool discard_oversize, bool shuffled) {
    if (!std::isfinite(tolerance) || tolerance < 0.0)
        throw Error("minibatch_by_words: the tolerance must be finite and >= 0, found " + std::to_string(tolerance),
                    "tenon-E135");
    BatchPlan p;
    const std::vector<std::size_t> order = item_order(lengths.size(), shuffled);
    std::vector<std::size_t> batch, overflow;
    double batch_words = 0, overflow_words = 0;
    double target = size.next_value("minibatch_by_words"), tol = target * tolerance;
    auto emit = [&](const std::vector<std::size_t>& items) {
        p.order.insert(p.order.end(), items.begin(), items.end());
        p.ends.push_back(p.order.size());
    };
    for (const std::size_t item : order) {
        const auto words = static_cast<double>(lengths[item]);
        if (words > target + tol) {  // too long for any batch: alone, or left out
            if (!discard_oversize) emit({item});
        } else if (overflow_words == 0 && batch_words + words <= target) {
            batch.push_back(item);
            batch_words += words;
        } else if (batch_words + overflow_words + words <= target + tol) {  // within the tolerance
            overflow.push_back(item);
            overflow_words += words;
        } else {
            // The batch is done; the next starts with the overflow, at the next size.
            if (!batch.empty()) emit(batch);
            target = size.next_value("minibatch_by_words");
            tol = target * tolerance;
            batch = std::move(overflow);
            batch_words = overflow_words;
            overflow.clear();
            overflow_words = 0;
            if (batch_words + words <= target) {
                batch.push_back(item);
                batch_words += words;
            } else if (batch_words + words <= target + tol) {
                overflow.push_back(item);
                overflow_words += words;
            } else {  // not even with the overflow: that one is a batch, this one starts another
                if (!batch.empty()) emit(batch);
                target = size.next_value("minibatch_by_words");
                tol = target * tolerance;
                batch = {item};
                batch_words = words;
            }
        }
    }
    batch.insert(batch.end(), overflow.begin(), overflow.end());
    if (!batch.empty()) emit(batch);
    return p;
}

}  // namespace detail
}  // namespace tenon
