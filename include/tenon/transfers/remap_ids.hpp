// remap_ids(mapping_table, default_, column): ids -> Ints2d (n, 1), each input looked up in a
// table, unknown ones mapped to `default_` (thinc/layers/remap_ids.py, remap_ids.v2): usually
// a preprocess before an embedding. The input type follows the table's keys:
//   string keys        Strings -> Ints2d
//   integer keys       Ints1d  -> Ints2d              (default)
//                      Ints2d / Keys2d / Keys1d / ... -> Ints2d: remap_ids<Keys2d>(table, 0, column)
// A 2-d input needs a column (the ids are X[:, column], as spaCy's FeatureExtractor gives
// them); a 1-d input has none. The table is the model's (table() may update it, as Thinc's
// "mapping_table" attribute). No gradient: backprop returns an empty Strings, or zeros of
// X's shape for an array input (Thinc: [] or an uninitialised array of dY's shape).
#pragma once
#include <algorithm>
#include <array>
#include <charconv>
#include <climits>
#include <concepts>
#include <functional>
#include <memory>
#include <initializer_list>
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>

#include "tenon/model/diagnostics.hpp"
#include "tenon/model/layer.hpp"
#include "tenon/transfers/strings.hpp"

namespace tenon {

namespace check {
// E048: the table's keys do not fit the input's elements (string keys for integer ids, or
// integer keys for strings), or the input is neither Strings nor an integer array of rank 1-2.
template <class Input, class Key>
struct remap_ids_keys {
    static_assert(always_false<Input>,
                  "[tenon-E048] remap_ids(mapping_table, default_, column): the table's keys must fit the input: "
                  "string keys for Strings, integer keys for an integer array of rank 1 or 2 (Ints1d, Ints2d, "
                  "Keys1d, Keys2d) (given_type<Input> with key type given_type<Key>: see the instantiation line)");
};
}  // namespace check

namespace detail {
template <class In>
struct remap_input {
    static constexpr bool is_array = false;
    static constexpr std::size_t rank = 0;
    using element = void;
};
template <class T, extent_t... E>
struct remap_input<Array<T, E...>> {
    static constexpr bool is_array = true;
    static constexpr std::size_t rank = sizeof...(E);
    using element = T;
};
template <class In, class Key>
inline constexpr bool remap_fits =
    (std::is_same_v<In, Strings> && std::is_same_v<Key, std::string>) ||
    (remap_input<In>::is_array && (remap_input<In>::rank == 1 || remap_input<In>::rank == 2) &&
     std::is_integral_v<typename remap_input<In>::element> && std::is_integral_v<Key> && !std::is_same_v<Key, bool>);
// The default input type for a table with keys Key.
template <class Key>
using remap_default_input = std::conditional_t<std::is_same_v<Key, std::string>, Strings, Ints1d>;
}  // namespace detail

template <class Key, class In>
class RemapIds : public Layer<RemapIds<Key, In>, In, Ints2d> {
    static_assert(detail::remap_fits<In, Key>);  // remap_ids() says E048 first
    using Base = Layer<RemapIds<Key, In>, In, Ints2d>;
    friend Base;

public:
    using Table = std::unordered_map<Key, std::int32_t>;

    RemapIds(Table table, std::int32_t default_id, std::optional<std::size_t> column)
        : Base("remap_ids", {}, {}), table_(std::move(table)), default_(default_id), column_(column) {
        constexpr std::size_t rank = detail::remap_input<In>::rank;
        // Thinc fails later (a 2-d row is unhashable, a 1-d array has no column); say it now.
        if (rank == 2 && !column_)
            throw Error("remap_ids: the input is 2-d (one row of features per token): give the column to "
                        "remap, e.g. remap_ids<Keys2d>(table, 0, 0)",
                        "tenon-E183");
        if (rank != 2 && column_)
            throw Error("remap_ids: column " + std::to_string(*column_) +
                            " given but the input has no columns (expected a 2-d input for a column)",
                        "tenon-E183");
        this->set_fixed_attr("default", std::int64_t{default_id});
        if (column_) this->set_fixed_attr("column", static_cast<std::int64_t>(*column_));
        this->mark_initialized();
    }

    // The mapping table (Thinc's attrs["mapping_table"]): may be read and updated.
    Table& table() noexcept { return table_; }
    const Table& table() const noexcept { return table_; }
    std::int32_t default_value() const noexcept { return default_; }
    std::optional<std::size_t> column() const noexcept { return column_; }

    // The table goes into model files as the attribute "mapping_table" (as Thinc's), one
    // entry per line in key order, so that the same table gives the same bytes:
    // "<key>=<value>" for integer keys, "<length>:<key>=<value>" for string keys.
    bool is_extra_attr(std::string_view name) const noexcept override { return name == "mapping_table"; }
    void save_extra(Node::AttrList& out) const override {
        std::vector<const typename Table::value_type*> entries;
        for (const auto& e : table_) entries.push_back(&e);
        std::sort(entries.begin(), entries.end(), [](auto* a, auto* b) { return a->first < b->first; });
        std::string text;
        for (const auto* e : entries) {
            // (Appended piece by piece: g++ 12 warns (-Wrestrict) on "=" + std::to_string(...).)
            if constexpr (std::is_same_v<Key, std::string>) {
                text += std::to_string(e->first.size());
                text += ':';
                text += e->first;
            } else {
                text += std::to_string(e->first);
            }
            text += '=';
            text += std::to_string(e->second);
            text += '\n';
        }
        out.emplace_back("mapping_table", std::move(text));
    }
    std::function<void()> load_extra(const Node::AttrList& attrs) override {
        const std::string* text = nullptr;
        for (const auto& [name, value] : attrs)
            if (name == "mapping_table") text = std::get_if<std::string>(&value);
        if (!text) return {};  // a file without a table keeps the model's
        auto table = std::make_shared<Table>();
        auto bad = [](const std::string& why) -> Error {
            return Error("remap_ids: the mapping_table attribute is malformed: " + why, "tenon-E207");
        };
        std::size_t i = 0;
        // A decimal int64 up to the next `end` (std::from_chars: no locale, no overflow).
        auto number = [&](char end) {
            const std::size_t j = text->find(end, i);
            if (j == std::string::npos) throw bad("expected a number before '" + std::string(1, end) + "'");
            std::int64_t v = 0;
            const char* first = text->data() + i;
            const auto [ptr, ec] = std::from_chars(first, text->data() + j, v);
            if (ec != std::errc{} || ptr != text->data() + j) throw bad("'" + text->substr(i, j - i) + "' is not a number");
            i = j + 1;
            return v;
        };
        while (i < text->size()) {
            Key key{};
            if constexpr (std::is_same_v<Key, std::string>) {
                const auto n = number(':');
                if (n < 0 || static_cast<std::size_t>(n) > text->size() - i) throw bad("a key runs past the end");
                key = text->substr(i, static_cast<std::size_t>(n));
                i += static_cast<std::size_t>(n);
                if (i >= text->size() || (*text)[i] != '=') throw bad("expected '=' after a key");
                ++i;
            } else {
                key = static_cast<Key>(number('='));
            }
            const auto value = number('\n');
            if (value < INT32_MIN || value > INT32_MAX) throw bad("a value out of the int32 range");
            table->emplace(std::move(key), static_cast<std::int32_t>(value));
        }
        return [this, table] { table_.swap(*table); };
    }

    struct Backprop {
        std::array<std::size_t, detail::remap_input<In>::rank ? detail::remap_input<In>::rank : 1> shape{};
        In operator()(Ints2dCView) const {
            if constexpr (detail::remap_input<In>::is_array) return In(shape);
            else return In{};
        }
    };

private:
    template <class XP, class YP>
    void init_impl(XP, YP) {}

    Ints2d predict_impl(typename Base::InView X) const {
        if constexpr (std::is_same_v<In, Strings>) {
            Ints2d out({X.size(), 1}, uninitialized);
            for (std::size_t i = 0; i < X.size(); ++i) out[i] = lookup(X[i]);
            return out;
        } else if constexpr (detail::remap_input<In>::rank == 1) {
            Ints2d out({X.shape(0), 1}, uninitialized);
            for (std::size_t i = 0; i < X.shape(0); ++i) out[i] = lookup(static_cast<Key>(X[i]));
            return out;
        } else {
            const std::size_t col = *column_;
            if (col >= X.shape(1))
                throw ShapeError("remap_ids: column " + std::to_string(col) + " is out of range for an input with " +
                                     std::to_string(X.shape(1)) + " columns (shape " + detail::shape_str(X.shape()) +
                                     ")",
                                 "tenon-E184");
            Ints2d out({X.shape(0), 1}, uninitialized);
            for (std::size_t i = 0; i < X.shape(0); ++i) out[i] = lookup(static_cast<Key>(X(i, col)));
            return out;
        }
    }
    std::pair<Ints2d, Backprop> forward_impl(typename Base::InView X, bool) {
        Backprop bp;
        if constexpr (detail::remap_input<In>::is_array)
            for (std::size_t d = 0; d < bp.shape.size(); ++d) bp.shape[d] = X.shape(d);
        return {predict_impl(X), bp};
    }
    template <class K>
    std::int32_t lookup(const K& k) const {
        const auto it = table_.find(k);
        return it == table_.end() ? default_ : it->second;
    }

    Table table_;
    std::int32_t default_;
    std::optional<std::size_t> column_;
};

// remap_ids(table, default_ = 0, column = none): the input type follows the table's keys
// (Strings for string keys, Ints1d for integer keys); name it for other inputs:
// remap_ids<Keys2d>(table, 0, /*column=*/0). The table: any map from keys to integers
// (std::map, std::unordered_map, or written out: {{"a", 1}, {"b", 2}}).
template <class In = void, class Map>
auto remap_ids(const Map& mapping_table, std::int32_t default_ = 0, std::optional<std::size_t> column = std::nullopt) {
    using Key = std::remove_cv_t<typename Map::key_type>;
    using I = std::conditional_t<std::is_void_v<In>, detail::remap_default_input<Key>, In>;
    if constexpr (!detail::remap_fits<I, Key>) {
        check::report<check::remap_ids_keys<check::given_type<check::name_t<I>>, check::given_type<Key>>>();
        return failed_model{};
    } else {
        typename RemapIds<Key, I>::Table t;
        for (const auto& [k, v] : mapping_table) t.emplace(k, static_cast<std::int32_t>(v));
        return RemapIds<Key, I>(std::move(t), default_, column);
    }
}
// The table written out: remap_ids({{"a", 1}, {"b", 2}}) (string keys), remap_ids({{5, 1}}).
template <class In = void>
auto remap_ids(std::initializer_list<std::pair<const std::string, std::int32_t>> table, std::int32_t default_ = 0,
               std::optional<std::size_t> column = std::nullopt) {
    return remap_ids<In>(std::unordered_map<std::string, std::int32_t>(table), default_, column);
}
template <class In = void>
auto remap_ids(std::initializer_list<std::pair<const std::int64_t, std::int32_t>> table, std::int32_t default_ = 0,
               std::optional<std::size_t> column = std::nullopt) {
    return remap_ids<In>(std::unordered_map<std::int64_t, std::int32_t>(table), default_, column);
}

}  // namespace tenon
