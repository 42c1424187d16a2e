// Thinc-format configs (thinc/config.py, confection): an INI-like file of sections whose values
// are JSON, read into a tree of Values.
//
//   [model]                      a section; [model.tok2vec] is a subsection of it
//   @layers = "chain.v1"         a reference to a registered factory (config/registry.hpp)
//   width = 128                  JSON values: numbers, "strings", true/false/null, [lists]
//   depth = ${model.width}       interpolation: the value (or section) at that path
//   [model.*.relu1]              positional children of [model], in the order they appear
//
// A value that is not JSON is taken as a string (as Thinc does), unless it starts like JSON
// (`[`, `{`, `"`): then it is an error. Overrides (`--model.width 128`) replace values before
// interpolation. Every bad config is a tenon::Error whose message names the path:
// `[model] width: ...`; the ids are tenon-E300 ... tenon-E309 (docs/configs.md). The parser is
// compiled in the library (src/config.cpp), so this header costs a user little to include.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace tenon::config {

class Value;
using ValueList = std::vector<Value>;
// A section: its keys in the order the config gives them (values and subsections alike).
using Section = std::vector<std::pair<std::string, Value>>;

// One value of a config: null, a boolean, an integer, a number, a string, a list, a section.
class Value {
public:
    enum class Kind { null, boolean, integer, number, string, list, section };

    Value() = default;
    Value(std::nullptr_t) {}
    Value(bool b) : v_(b) {}
    Value(std::int64_t i) : v_(i) {}
    Value(int i) : v_(std::int64_t{i}) {}
    Value(double d) : v_(d) {}
    Value(std::string s) : v_(std::move(s)) {}
    Value(const char* s) : v_(std::string(s)) {}
    Value(ValueList l) : v_(std::move(l)) {}
    Value(Section s) : v_(std::move(s)) {}

    Kind kind() const noexcept { return static_cast<Kind>(v_.index()); }
    bool is_null() const noexcept { return kind() == Kind::null; }
    bool is_bool() const noexcept { return kind() == Kind::boolean; }
    bool is_int() const noexcept { return kind() == Kind::integer; }
    bool is_number() const noexcept { return kind() == Kind::number || kind() == Kind::integer; }
    bool is_string() const noexcept { return kind() == Kind::string; }
    bool is_list() const noexcept { return kind() == Kind::list; }
    bool is_section() const noexcept { return kind() == Kind::section; }

    // The value as its kind (std::bad_variant_access for another kind; as_number takes an
    // integer too).
    bool as_bool() const { return std::get<bool>(v_); }
    std::int64_t as_int() const { return std::get<std::int64_t>(v_); }
    double as_number() const { return is_int() ? static_cast<double>(as_int()) : std::get<double>(v_); }
    const std::string& as_string() const { return std::get<std::string>(v_); }
    const ValueList& as_list() const { return std::get<ValueList>(v_); }
    ValueList& as_list() { return std::get<ValueList>(v_); }
    const Section& as_section() const { return std::get<Section>(v_); }
    Section& as_section() { return std::get<Section>(v_); }

    // A section's value at `key`, or nullptr (also when this is not a section).
    const Value* find(std::string_view key) const;
    Value* find(std::string_view key);

    // As JSON ("abc" quoted, a section as an object): how messages show a value.
    std::string dump() const;
    // "an integer", "a string", ...: how messages name a kind.
    std::string kind_name() const;

    friend bool operator==(const Value&, const Value&) = default;

private:
    std::variant<std::nullptr_t, bool, std::int64_t, double, std::string, ValueList, Section> v_{nullptr};
};

// Overrides: (dotted path, value as it would be written in the file) pairs, e.g.
// {{"model.width", "128"}, {"training.name", "\"big\""}}. A leading "--" is allowed.
using Overrides = std::vector<std::pair<std::string, std::string>>;

// The overrides in command-line arguments: `--model.width 128` or `--model.width=128`;
// arguments that do not start with "--" are skipped. (tenon-E306 for a "--key" with no value.)
Overrides overrides_from_args(int argc, const char* const* argv);

class Config {
public:
    Config() : root_(Section{}) {}
    explicit Config(Value root);

    // Reads a config's text: the overrides are applied, then the interpolations resolved.
    static Config from_str(std::string_view text, const Overrides& overrides = {});
    // The same from a file (tenon-E308 when it cannot be read).
    static Config from_disk(const std::string& path, const Overrides& overrides = {});

    const Value& root() const noexcept { return root_; }
    const Section& sections() const { return root_.as_section(); }
    // The value at a dotted path ("model.tok2vec.width", "model.*.relu1"), or nullptr.
    const Value* find(std::string_view path) const;
    // The same, or tenon-E309 naming the path and the nearest section that exists.
    const Value& at(std::string_view path) const;
    // The config as text in its own format (sections in order; reads back to an equal Config).
    std::string to_str() const;

private:
    Value root_;
};

// "[model.tok2vec] width" for messages: a section path and an optional key.
std::string where(std::string_view section, std::string_view key = {});

}  // namespace tenon::config
