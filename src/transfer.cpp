// The parts of the transfers and wrappers (transfers/detail/transfer.hpp) that no data type
// reaches: their run-time checks' messages, and a wrapper's node.
#include "tenon/transfers/detail/transfer.hpp"

#include <algorithm>
#include <string>

namespace tenon::detail::xfer {

PaddedLayout::PaddedLayout() = default;
PaddedLayout::~PaddedLayout() = default;
PaddedLayout::PaddedLayout(const PaddedLayout&) = default;
PaddedLayout::PaddedLayout(PaddedLayout&&) noexcept = default;
PaddedLayout& PaddedLayout::operator=(const PaddedLayout&) = default;
PaddedLayout& PaddedLayout::operator=(PaddedLayout&&) noexcept = default;

std::string ints_str(const Ints1d& v) {
    std::string s = "[";
    for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
    return s + "]";
}

void throw_layout(const std::string& who, const std::string& what, const std::string& expected,
                  const std::string& found) {
    throw ShapeError(who + ": backprop: the gradient must have the layout of the output: expected " + what + " " +
                         expected + " but found " + found,
                     "tenon-E170");
}

void check_lengths(const std::string& who, const Ints1d& expected, const Ints1d& found) {
    if (expected.size() != found.size() || !std::equal(expected.begin(), expected.end(), found.begin()))
        throw_layout(who, "lengths", ints_str(expected), ints_str(found));
}

void throw_rows(const std::string& who, const std::string& what, std::size_t expected, std::size_t found) {
    throw ShapeError(who + ": the wrapped layer must keep the " + what + ": expected " + std::to_string(expected) +
                         " but it returned " + std::to_string(found),
                     "tenon-E171");
}

void check_kept_lengths(const std::string& who, const Ints1d& expected, const Ints1d& found) {
    if (expected.size() != found.size() || !std::equal(expected.begin(), expected.end(), found.begin()))
        throw ShapeError(who + ": the wrapped layer must keep the sequences' lengths: expected " + ints_str(expected) +
                             " but it returned " + ints_str(found),
                         "tenon-E171");
}

void take_child_dims(Node& wrapper, const Node& child) {
    for (const char* d : {"nO", "nI"})
        if (child.has_dim(d)) wrapper.set_dim(d, child.get_dim(d), true);
}

void give_child_width(const Node& wrapper, Node& child) {
    // A width given to the wrapper (by chain, or set_dim) reaches a child that has none.
    if (wrapper.has_dim("nI") && !child.has_dim("nI"))
        for (const auto& n : child.dim_names())
            if (n == "nI") child.set_dim("nI", wrapper.get_dim("nI"));
}

}  // namespace tenon::detail::xfer

namespace tenon {
Node Node::wrapper_node(const char* name, const Node& child, extent_t NO, extent_t NI) {
    return Node(std::string(name) + "(" + child.name() + ")", {{"nO", as_dim(NO)}, {"nI", as_dim(NI)}}, {});
}
}  // namespace tenon
