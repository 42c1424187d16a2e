// The chain's layer store (combinators/detail/chain_store.hpp): its special members, compiled
// once here instead of once per chain type in every user's file.
#include "tenon/combinators/detail/chain_store.hpp"

#include <memory>

#include "tenon/error.hpp"
#include "tenon/model/node.hpp"

namespace tenon::detail {

void throw_moved_chain(const std::string& chain_name) {
    throw Error((chain_name.empty() ? std::string("chain") : chain_name) + ": this chain has no layers: they were moved into another chain (by std::move, "
                                 "or as the left side of `>>`, which takes an rvalue chain's layers over); "
                                 "use the chain they were moved into",
                "tenon-E118");
}

void throw_empty_backprop() {
    throw Error("backprop: this chain's backprop was made by no forward pass (default-constructed): use the one "
                "begin_update returns",
                "tenon-E118");
}

ChainStore::ChainStore(std::size_t n)
    : entries_(n ? new LayerEntry[n] : nullptr), size_(0), capacity_(n) {}

ChainStore::ChainStore(ChainStore&& prefix, std::size_t more) : ChainStore(prefix.size_ + more) {
    for (std::size_t i = 0; i < prefix.size_; ++i) entries_[i] = prefix.entries_[i];
    size_ = prefix.size_;
    delete[] prefix.entries_;
    prefix.entries_ = nullptr;
    prefix.size_ = prefix.capacity_ = 0;
}

ChainStore::ChainStore(const ChainStore& other, const LayerCopy* copies) : ChainStore(other.size_) {
    try {
        for (std::size_t i = 0; i < other.size_; ++i) {
            const LayerEntry& e = other.entries_[i];
            if (!copies[i].copy_new) throw Error("chain: a layer of this chain cannot be copied", "tenon-E118");
            entries_[size_++] = {copies[i].copy_new(e.object), e.ops};
        }
    } catch (...) {
        release();
        throw;
    }
}

void ChainStore::assign(const ChainStore& other, const LayerCopy* copies) {
    if (this == &other) return;
    bool in_place = size_ == other.size_;
    for (std::size_t i = 0; in_place && i < size_; ++i)
        in_place = entries_[i].ops == other.entries_[i].ops && copies[i].copy_assign;
    if (in_place) {
        for (std::size_t i = 0; i < size_; ++i) copies[i].copy_assign(entries_[i].object, other.entries_[i].object);
    } else {
        ChainStore copy(other, copies);
        *this = std::move(copy);
    }
}

ChainStore& ChainStore::operator=(ChainStore&& other) noexcept {
    if (this != &other) {
        release();
        entries_ = std::exchange(other.entries_, nullptr);
        size_ = std::exchange(other.size_, 0);
        capacity_ = std::exchange(other.capacity_, 0);
    }
    return *this;
}

ChainStore::~ChainStore() { release(); }

void ChainStore::push(LayerEntry e) {
    if (size_ == capacity_) {
        try {
            const std::size_t n = capacity_ ? 2 * capacity_ : 4;
            auto* grown = new LayerEntry[n];
            for (std::size_t i = 0; i < size_; ++i) grown[i] = entries_[i];
            delete[] entries_;
            entries_ = grown;
            capacity_ = n;
        } catch (...) {
            e.ops->destroy(e.object);
            throw;
        }
    }
    entries_[size_++] = e;
}

void ChainStore::release() noexcept {
    for (std::size_t i = size_; i-- > 0;) entries_[i].ops->destroy(entries_[i].object);
    delete[] entries_;
    entries_ = nullptr;
    size_ = capacity_ = 0;
}

void ChainOps::finish(Node& chain, const ChainStore& layers, std::size_t nI_from, std::size_t y_from, bool nI_dyn,
                      bool nO_dyn) {
    if (layers.empty()) throw_moved_chain(chain.name());
    bool all_initialized = true;
    for (std::size_t i = 0; i < layers.count(); ++i) {
        const Node& n = *layers.node(i);
        if (!chain.name_.empty()) chain.name_ += ">>";
        chain.name_ += n.name();
        all_initialized = all_initialized && n.is_initialized();
    }
    // A chain of initialised layers (e.g. trained ones) is ready to use: initialize() would
    // draw new weights.
    if (all_initialized) {
        sync_dims(chain, layers, nI_from, y_from, true, true);
        chain.mark_initialized();
    } else {
        // The widths its layers already know from their options (where the types leave the
        // chain's dyn), for the models around it to read before initialize.
        sync_dims(chain, layers, nI_from, y_from, nI_dyn, nO_dyn);
    }
}

void ChainOps::sync_dims(Node& chain, const ChainStore& layers, std::size_t nI_from, std::size_t y_from, bool nI,
                         bool nO) {
    if (layers.empty()) throw_moved_chain(chain.name());
    if (nI && layers.node(nI_from)->has_dim("nI")) chain.follow_dim("nI");
    if (nO && layers.node(y_from)->has_dim("nO")) chain.follow_dim("nO");
}

void ChainOps::before_init(Node& l, std::size_t produced, std::size_t width, bool has_sample) {
    if (produced != dyn && l.has_dim("nI") && l.get_dim("nI") != produced)
        throw ShapeError("chain(): " + l.name() + " expects input width " + std::to_string(l.get_dim("nI")) +
                             (width != dyn ? " but the layer before it produces " : " but its input has width ") +
                             std::to_string(produced),
                         "tenon-E101");
    if (!has_sample && width != dyn && !l.has_dim("nI")) {
        const auto names = l.dim_names();
        for (const auto& n : names)
            if (n == "nI") {
                l.set_dim("nI", width);
                break;
            }
    }
}

void ChainOps::after_init(const Node& l, std::size_t& width, bool width_preserving) {
    if (l.has_dim("nO")) width = l.get_dim("nO");
    else if (!width_preserving) width = dyn;
}

}  // namespace tenon::detail
