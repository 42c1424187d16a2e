// Strings: a sequence of strings (Thinc's Sequence[str]), the input of remap_ids with a
// string table, and std::vector<Strings> (Sequence[Sequence[str]]), the input of
// strings2arrays. Named here so that signatures and diagnostics say `Strings`.
#pragma once
#include <string>
#include <vector>

#include "tenon/model/diagnostics.hpp"

namespace tenon {
using Strings = std::vector<std::string>;
}  // namespace tenon

namespace tenon::check {
struct Strings {};
template <class T>
struct vector {};
template <>
struct name_of<tenon::Strings> {
    using type = check::Strings;
};
template <>
struct name_of<std::vector<tenon::Strings>> {
    using type = check::vector<check::Strings>;
};
}  // namespace tenon::check
