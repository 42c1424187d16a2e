// The Thinc-format config reader (tenon/config/config.hpp): lines -> raw sections ->
// overrides -> interpolation and JSON values (nlohmann/json, only here) -> a tree of Values.
#include "tenon/config/config.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <cmath>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "tenon/error.hpp"

namespace tenon::config {

namespace {
using json = nlohmann::ordered_json;

[[noreturn]] void fail(const std::string& id, const std::string& msg) { throw Error(msg, id); }

std::string_view trim(std::string_view s) {
    const auto b = s.find_first_not_of(" \t\r\n");
    if (b == std::string_view::npos) return {};
    const auto e = s.find_last_not_of(" \t\r\n");
    return s.substr(b, e - b + 1);
}

json to_json(const Value& v) {
    switch (v.kind()) {
        case Value::Kind::null: return nullptr;
        case Value::Kind::boolean: return v.as_bool();
        case Value::Kind::integer: return v.as_int();
        case Value::Kind::number: return v.as_number();
        case Value::Kind::string: return v.as_string();
        case Value::Kind::list: {
            json a = json::array();
            for (const auto& x : v.as_list()) a.push_back(to_json(x));
            return a;
        }
        case Value::Kind::section: {
            json o = json::object();
            for (const auto& [k, x] : v.as_section()) o[k] = to_json(x);
            return o;
        }
    }
    return nullptr;
}

// (Values nest at most this deep: each level is a call here, and a value nested 20 000 deep
// overflowed the stack; no config needs more than a few.)
constexpr std::size_t max_value_depth = 256;

Value from_json(const json& j, std::size_t depth = 0) {
    if (depth > max_value_depth)
        fail("tenon-E301", "a value nested more than " + std::to_string(max_value_depth) +
                               " levels deep (lists or tables in lists or tables)");
    if (j.is_null()) return Value();
    if (j.is_boolean()) return Value(j.get<bool>());
    if (j.is_number_unsigned()) {
        const auto u = j.get<std::uint64_t>();
        if (u <= static_cast<std::uint64_t>(INT64_MAX)) return Value(static_cast<std::int64_t>(u));
        return Value(static_cast<double>(u));
    }
    if (j.is_number_integer()) return Value(j.get<std::int64_t>());
    if (j.is_number_float()) return Value(j.get<double>());
    if (j.is_string()) return Value(j.get<std::string>());
    if (j.is_array()) {
        ValueList l;
        for (const auto& x : j) l.push_back(from_json(x, depth + 1));
        return Value(std::move(l));
    }
    Section s;
    for (const auto& [k, x] : j.items()) s.emplace_back(k, from_json(x, depth + 1));
    return Value(std::move(s));
}

// One `key = value` as written (continuation lines joined with "\n").
struct RawKey {
    std::string key, raw;
    int line;
};
struct RawSection {
    std::string name;
    int line;
    std::vector<RawKey> keys;
};

std::vector<std::string> split_path(std::string_view path) {
    std::vector<std::string> parts;
    std::size_t start = 0;
    while (true) {
        const auto dot = path.find('.', start);
        parts.emplace_back(path.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start));
        if (dot == std::string_view::npos) break;
        start = dot + 1;
    }
    return parts;
}

std::vector<RawSection> read_lines(std::string_view text) {
    if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);  // a UTF-8 byte order mark (Windows editors)
    std::vector<RawSection> secs;
    std::istringstream in{std::string(text)};
    std::string line;
    int n = 0;
    RawKey* last = nullptr;
    // Where each section and each key of the current section was first set (a hash lookup,
    // not a scan: a section of 100k keys reads in linear time).
    std::unordered_map<std::string, int> section_line, key_line;
    while (std::getline(in, line)) {
        ++n;
        const std::string_view t = trim(line);
        if (t.empty() || t[0] == '#' || t[0] == ';') continue;
        const bool indented = line[0] == ' ' || line[0] == '\t';
        if (indented && last) {  // a continuation line of the value above (a long list)
            last->raw += "\n";
            last->raw += t;
            continue;
        }
        if (t[0] == '[') {
            if (t.back() != ']' || t.size() < 3)
                fail("tenon-E300", "config line " + std::to_string(n) + ": a section header must be [name], found " +
                                       std::string(t));
            const std::string name(trim(t.substr(1, t.size() - 2)));
            const auto parts = split_path(name);
            if (parts.size() > max_value_depth)
                fail("tenon-E300", "config line " + std::to_string(n) + ": a section name of " +
                                       std::to_string(parts.size()) + " parts: sections nest at most " +
                                       std::to_string(max_value_depth) + " levels deep");
            for (const auto& part : parts)
                if (part.empty())
                    fail("tenon-E300", "config line " + std::to_string(n) + ": section [" + name + "] has an empty part");
            if (const auto [it, fresh] = section_line.try_emplace(name, n); !fresh)
                fail("tenon-E302", "config line " + std::to_string(n) + ": section [" + name +
                                       "] is defined twice (first at line " + std::to_string(it->second) + ")");
            secs.push_back({name, n, {}});
            key_line.clear();
            last = nullptr;
            continue;
        }
        const auto eq = t.find('=');
        if (eq == std::string_view::npos)
            fail("tenon-E300", "config line " + std::to_string(n) + ": expected `key = value` or `[section]`, found " +
                                   std::string(t));
        if (secs.empty())
            fail("tenon-E300", "config line " + std::to_string(n) + ": `" + std::string(t) +
                                   "` comes before any [section]");
        RawSection& sec = secs.back();
        const std::string key(trim(t.substr(0, eq)));
        if (key.empty()) fail("tenon-E300", "config line " + std::to_string(n) + ": a key is missing before `=`");
        if (const auto [it, fresh] = key_line.try_emplace(key, n); !fresh)
            fail("tenon-E302", "config line " + std::to_string(n) + ": " + where(sec.name, key) +
                                   " is set twice (first at line " + std::to_string(it->second) + ")");
        sec.keys.push_back({key, std::string(trim(t.substr(eq + 1))), n});
        last = &sec.keys.back();
    }
    return secs;
}

// Whether `t` is written as a JSON number (-12.5e3): one that JSON's reader refused is out of
// a double's range (1e400), not a string.
bool json_number_text(std::string_view t) {
    std::size_t i = 0;
    const auto digits = [&] {
        const std::size_t from = i;
        while (i < t.size() && t[i] >= '0' && t[i] <= '9') ++i;
        return i > from;
    };
    if (i < t.size() && t[i] == '-') ++i;
    if (!digits()) return false;
    if (i < t.size() && t[i] == '.') {
        ++i;
        if (!digits()) return false;
    }
    if (i < t.size() && (t[i] == 'e' || t[i] == 'E')) {
        ++i;
        if (i < t.size() && (t[i] == '+' || t[i] == '-')) ++i;
        if (!digits()) return false;
    }
    return i == t.size();
}

// A value as written, without interpolations: JSON, else a plain string (as Thinc), unless it
// starts like JSON and is not.
Value parse_raw(const std::string& raw, const std::string& section, const std::string& key) {
    const std::string_view t = trim(raw);
    if (t.empty()) return Value(std::string());
    json j = json::parse(t.begin(), t.end(), nullptr, false);
    if (!j.is_discarded()) return from_json(j);
    if (json_number_text(t))  // a number JSON would read but a double cannot hold: not a string
        fail("tenon-E301", where(section, key) + ": " + std::string(t) +
                               " is a number beyond the range of a double (about 1.8e308)");
    if (t[0] == '[' || t[0] == '{' || t[0] == '"') {
        std::string why;
        try {
            const json unused = json::parse(t.begin(), t.end());
            (void)unused;
        } catch (const std::exception& e) {
            why = e.what();
            if (auto p = why.find("parse error"); p != std::string::npos) why = why.substr(p);
        }
        fail("tenon-E301", where(section, key) + ": not a valid JSON value: " + std::string(t) +
                               (why.empty() ? "" : " (" + why + ")"));
    }
    return Value(std::string(t));
}

class Builder {
public:
    explicit Builder(std::vector<RawSection> secs) : secs_(std::move(secs)) {
        // Parents before children, whatever order the file gives (stable: file order otherwise).
        std::stable_sort(secs_.begin(), secs_.end(), [](const RawSection& a, const RawSection& b) {
            return std::count(a.name.begin(), a.name.end(), '.') < std::count(b.name.begin(), b.name.end(), '.');
        });
        // The sections by name, for ${...} (a hash lookup, not a scan per reference), and where
        // each section's keys start in the keys' resolution state.
        keys_.resize(secs_.size());
        first_key_.resize(secs_.size());
        std::size_t n_keys = 0;
        for (std::size_t i = 0; i < secs_.size(); ++i) {
            by_name_.emplace(secs_[i].name, i);
            first_key_[i] = n_keys;
            n_keys += secs_[i].keys.size();
        }
        state_.assign(n_keys, 0);
        done_.resize(n_keys);
    }

    // The tree under `prefix` ("" for the whole config).
    Value tree(const std::string& prefix) {
        const std::string token = "[" + prefix + "]";
        if (active_.count(token))
            fail("tenon-E305", "section [" + prefix + "]: its interpolation refers back to itself");
        active_.insert(token);
        Value root{Section{}};
        // Each section of the tree (by its path) with where each of its names is in it: a
        // lookup instead of a scan of the section (Value::find), so that a section of 100k keys
        // is made in linear time. Made when the section is first looked into (a JSON table a
        // subsection goes into has names already), then kept up to date. As Value::find, the
        // first of a name is the one found.
        std::unordered_map<std::string, std::unordered_map<std::string, std::size_t>> names;
        auto names_of = [&](Value& sec, const std::string& at) -> std::unordered_map<std::string, std::size_t>& {
            const auto [it, fresh] = names.try_emplace(at);
            if (fresh) {
                const Section& entries = sec.as_section();
                for (std::size_t i = 0; i < entries.size(); ++i) it->second.emplace(entries[i].first, i);
            }
            return it->second;
        };
        auto find = [&](Value& sec, const std::string& at, const std::string& name) -> Value* {
            const auto& index = names_of(sec, at);
            const auto it = index.find(name);
            return it == index.end() ? nullptr : &sec.as_section()[it->second].second;
        };
        auto add = [&](Value& sec, const std::string& at, const std::string& name, Value v) -> Value* {
            auto& index = names_of(sec, at);
            Section& entries = sec.as_section();
            index.emplace(name, entries.size());
            entries.emplace_back(name, std::move(v));
            return &entries.back().second;
        };
        const std::size_t depth = prefix.empty() ? 0 : split_path(prefix).size();
        for (const RawSection& s : secs_) {
            if (!prefix.empty() && s.name != prefix && s.name.rfind(prefix + ".", 0) != 0) continue;
            const auto parts = split_path(s.name);
            Value* node = &root;
            std::string at = prefix;
            for (std::size_t i = depth; i + 1 < parts.size(); ++i) {
                const std::string parent = at;
                at += (at.empty() ? "" : ".") + parts[i];
                Value* next = find(*node, parent, parts[i]);
                if (!next && parts[i] == "*")  // [model.*.relu1]: the positional children of [model]
                    next = add(*node, parent, "*", Value(Section{}));
                if (!next)
                    fail("tenon-E303", "section [" + s.name + "] (line " + std::to_string(s.line) +
                                           "): its parent section [" + at + "] is not defined");
                if (!next->is_section())
                    fail("tenon-E307", "section [" + s.name + "] (line " + std::to_string(s.line) + "): " + at +
                                           " is a value, not a section");
                node = next;
            }
            Value* target = node;
            std::string target_at = at;
            if (parts.size() > depth) {
                const std::string& last = parts.back();
                if (find(*node, at, last))
                    fail("tenon-E307", "section [" + s.name + "] (line " + std::to_string(s.line) +
                                           "): its parent already has a value named " + last);
                target = add(*node, at, last, Value(Section{}));
                target_at += (at.empty() ? "" : ".") + last;
            }
            auto& index = names_of(*target, target_at);
            Section& entries = target->as_section();
            for (const RawKey& k : s.keys) {
                if (!index.try_emplace(k.key, entries.size()).second)
                    fail("tenon-E307", where(s.name, k.key) + " is both a value and a section");
                entries.emplace_back(k.key, value(s, k));  // (value() makes other trees, never this one)
            }
        }
        active_.erase(token);
        return root;
    }

private:
    const RawSection* section(const std::string& name) const {
        const auto it = by_name_.find(name);
        return it == by_name_.end() ? nullptr : &secs_[it->second];
    }

    // What ${path} stands for: a key's value or a whole section.
    Value ref(const std::string& path, const RawSection& from, const RawKey& k) {
        if (section(path)) return tree(path);
        const auto dot = path.rfind('.');
        if (dot != std::string::npos)
            if (const RawSection* s = section(path.substr(0, dot))) {
                // (the section's keys by name: made at its first reference)
                auto& keys = keys_[static_cast<std::size_t>(s - secs_.data())];
                if (keys.empty())
                    for (std::size_t i = 0; i < s->keys.size(); ++i) keys.emplace(s->keys[i].key, i);
                if (const auto it = keys.find(path.substr(dot + 1)); it != keys.end())
                    return value(*s, s->keys[it->second]);
            }
        fail("tenon-E304", where(from.name, k.key) + ": ${" + path + "}: no such value or section in the config");
    }

    Value value(const RawSection& s, const RawKey& k) {
        // Each key is resolved once (memoised: a chain of references costs its length), by its
        // place: its section's first key's index and its own in the section.
        const std::size_t id = first_key_[static_cast<std::size_t>(&s - secs_.data())] +
                               static_cast<std::size_t>(&k - s.keys.data());
        if (state_[id] == 2) return done_[id];
        if (state_[id] == 1)
            fail("tenon-E305", where(s.name, k.key) + ": its interpolation refers back to itself (${...} cycle)");
        state_[id] = 1;
        Value v;
        const std::string_view t = trim(k.raw);
        if (t.find('$') == std::string_view::npos) {
            v = parse_raw(k.raw, s.name, k.key);
        } else if (t.size() > 3 && t.substr(0, 2) == "${" && t.back() == '}' && t.find('}') == t.size() - 1) {
            v = ref(std::string(t.substr(2, t.size() - 3)), s, k);  // the whole value: typed
        } else {
            // In text: a value in a JSON string or a plain string goes in as its text, elsewhere
            // (in a list) as JSON.
            const bool plain = t[0] != '[' && t[0] != '{' && t[0] != '"';
            std::string out;
            bool in_string = false, escaped = false;  // (inside a JSON string; after its backslash)
            for (std::size_t i = 0; i < t.size(); ++i) {
                if (escaped) escaped = false;
                else if (in_string && t[i] == '\\') escaped = true;
                else if (t[i] == '"') in_string = !in_string;
                if (t[i] == '$' && i + 1 < t.size() && t[i + 1] == '$') {  // $$: a $ (Thinc's escape)
                    out += '$';
                    ++i;
                    continue;
                }
                if (t[i] == '$' && i + 1 < t.size() && t[i + 1] == '{') {
                    const auto end = t.find('}', i);
                    if (end == std::string_view::npos)
                        fail("tenon-E304", where(s.name, k.key) + ": an interpolation ${ is not closed: " +
                                               std::string(t));
                    const Value r = ref(std::string(t.substr(i + 2, end - i - 2)), s, k);
                    if (r.is_section())
                        fail("tenon-E304", where(s.name, k.key) + ": " + std::string(t.substr(i, end - i + 1)) +
                                               " is a section, which can only be a whole value");
                    if (r.is_string() && (plain || in_string)) {
                        if (plain) out += r.as_string();
                        else {
                            const std::string d = r.dump();
                            out += d.substr(1, d.size() - 2);  // JSON-escaped, without the quotes
                        }
                    } else {
                        out += r.dump();
                    }
                    i = end;
                    continue;
                }
                out += t[i];
            }
            v = parse_raw(out, s.name, k.key);
        }
        state_[id] = 2;
        done_[id] = v;
        return v;
    }

    std::vector<RawSection> secs_;
    std::unordered_map<std::string, std::size_t> by_name_;                // a section's index in secs_
    std::vector<std::unordered_map<std::string, std::size_t>> keys_;     // its keys' indices
    std::vector<std::size_t> first_key_;  // per section: its first key's index in state_ and done_
    std::vector<std::uint8_t> state_;     // per key: 0 not resolved, 1 being resolved, 2 done
    std::vector<Value> done_;             // per key: its value, once done
    std::unordered_set<std::string> active_;  // the sections being copied (a ${section} cycle)
};

// to_str's refusal: what a config file cannot hold, so that what it writes reads back equal.
[[noreturn]] void unwritable(const std::string& what) {
    fail("tenon-E330", "Config::to_str: " + what + ": a config file cannot hold it, so the text would not read back as "
                                                   "the same config");
}

// A section name's part or a key as the reader reads it back: no '=' (a key), '.' (a part),
// line break, surrounding blanks, or the start of a comment or a section header.
void check_name(const std::string& name, const std::string& section, bool is_key) {
    const auto say = [&](const char* why) {
        unwritable((is_key ? where(section, name) : "section [" + (section.empty() ? name : section + "." + name) + "]") +
                   ": " + (is_key ? "the key " : "the name ") + why);
    };
    if (name.empty()) say("is empty");
    if (trim(name) != name) say("starts or ends with a blank");
    if (name.find_first_of("\r\n") != std::string::npos) say("holds a line break");
    if (is_key && name.find('=') != std::string::npos) say("holds '=', which ends a key");
    if (is_key && (name[0] == '[' || name[0] == '#' || name[0] == ';')) say("starts like a section header or a comment");
    if (!is_key && name.find('.') != std::string::npos) say("holds '.', which separates a section path's parts");
}

// A value's text: JSON, every '$' doubled (Thinc's escape: the reader reads "${a.x}" in a string
// as an interpolation, "$${a.x}" as the text). NaN and inf have no JSON form.
std::string value_text(const Value& v, const std::string& section, const std::string& key) {
    // What JSON cannot say as it was: NaN and inf, a table's key set twice (JSON keeps one),
    // nesting the reader refuses.
    std::function<void(const Value&, std::size_t)> check = [&](const Value& x, std::size_t depth) {
        if (depth > max_value_depth)
            unwritable(where(section, key) + ": a value nested more than " + std::to_string(max_value_depth) +
                       " levels deep");
        if (x.is_number() && !std::isfinite(x.as_number()))
            unwritable(where(section, key) + ": the number " + std::to_string(x.as_number()) + " (JSON has no NaN or inf)");
        if (x.is_list())
            for (const auto& e : x.as_list()) check(e, depth + 1);
        if (x.is_section()) {
            std::set<std::string_view> seen;
            for (const auto& [k, e] : x.as_section()) {
                if (!seen.insert(k).second) unwritable(where(section, key) + ": the table's key '" + k + "' is set twice");
                check(e, depth + 1);
            }
        }
    };
    check(v, 0);
    std::string text;
    try {
        text = to_json(v).dump();
    } catch (const json::exception&) {  // (type_error 316: a string that is not UTF-8)
        unwritable(where(section, key) + ": a string that is not valid UTF-8 (JSON's strings are)");
    }
    for (std::size_t p = text.find('$'); p != std::string::npos; p = text.find('$', p + 2)) text.insert(p, 1, '$');
    return text;
}

void write_section(std::ostringstream& out, const std::string& path, const Section& s) {
    std::set<std::string_view> seen;
    bool values = false;
    for (const auto& [k, v] : s) {
        if (!seen.insert(k).second) unwritable(where(path, k) + ": the key is set twice");
        check_name(k, path, !v.is_section());
        values = values || !v.is_section();
    }
    // [a.*]: the positional children of [a], whose header the reader makes itself (written when
    // it holds values of its own, or nothing at all: an empty one is read only from its header).
    const bool positional = path.size() >= 2 && path.compare(path.size() - 2, 2, ".*") == 0;
    if (!positional || values || s.empty()) out << "[" << path << "]\n";
    if (split_path(path).size() > max_value_depth)
        unwritable("section [" + path + "]: sections nest at most " + std::to_string(max_value_depth) + " levels deep");
    for (const auto& [k, v] : s)
        if (!v.is_section()) out << k << " = " << value_text(v, path, k) << "\n";
    out << "\n";
    for (const auto& [k, v] : s)
        if (v.is_section()) write_section(out, path + "." + k, v.as_section());
}
}  // namespace

const Value* Value::find(std::string_view key) const {
    if (!is_section()) return nullptr;
    for (const auto& [k, v] : as_section())
        if (k == key) return &v;
    return nullptr;
}
Value* Value::find(std::string_view key) { return const_cast<Value*>(std::as_const(*this).find(key)); }

// (A string that is not UTF-8, which from_str reads as it is, is shown with U+FFFD in its place.)
std::string Value::dump() const { return to_json(*this).dump(-1, ' ', false, json::error_handler_t::replace); }

std::string Value::kind_name() const {
    switch (kind()) {
        case Kind::null: return "null";
        case Kind::boolean: return "a boolean";
        case Kind::integer: return "an integer";
        case Kind::number: return "a number";
        case Kind::string: return "a string";
        case Kind::list: return "a list";
        case Kind::section: return "a section";
    }
    return "a value";
}

std::string where(std::string_view section, std::string_view key) {
    std::string s = "[" + std::string(section) + "]";
    if (!key.empty()) s += " " + std::string(key);
    return s;
}

Overrides overrides_from_args(int argc, const char* const* argv) {
    Overrides out;
    for (int i = 1; i < argc; ++i) {
        std::string_view a = argv[i];
        if (a.substr(0, 2) != "--") continue;
        a.remove_prefix(2);
        if (const auto eq = a.find('='); eq != std::string_view::npos) {
            out.emplace_back(std::string(a.substr(0, eq)), std::string(a.substr(eq + 1)));
        } else {
            if (i + 1 >= argc)
                fail("tenon-E306", "override --" + std::string(a) + ": no value follows it");
            const std::string_view next = argv[i + 1];
            if (next.substr(0, 2) == "--")
                fail("tenon-E306", "override --" + std::string(a) + ": no value follows it (the next argument, " +
                                       std::string(next.substr(0, 80)) +
                                       ", is an option); for a value that starts with -- write --" + std::string(a) +
                                       "=VALUE");
            out.emplace_back(std::string(a), argv[++i]);
        }
    }
    return out;
}

Config::Config(Value root) : root_(std::move(root)) {
    if (!root_.is_section()) root_ = Value(Section{});
}

Config Config::from_str(std::string_view text, const Overrides& overrides) {
    std::vector<RawSection> secs = read_lines(text);
    for (const auto& [path0, raw] : overrides) {
        std::string_view path = path0;
        if (path.substr(0, 2) == "--") path.remove_prefix(2);
        const auto dot = path.rfind('.');
        if (dot == std::string_view::npos)
            fail("tenon-E306", "override --" + std::string(path) + ": expected section.key (e.g. --model.width)");
        const std::string sec(path.substr(0, dot)), key(path.substr(dot + 1));
        auto s = std::find_if(secs.begin(), secs.end(), [&](const RawSection& r) { return r.name == sec; });
        if (s == secs.end())
            fail("tenon-E306", "override --" + std::string(path) + " " + raw + ": the config has no section [" + sec +
                                   "]");
        auto k = std::find_if(s->keys.begin(), s->keys.end(), [&](const RawKey& r) { return r.key == key; });
        if (k == s->keys.end())
            fail("tenon-E306", "override --" + std::string(path) + " " + raw + ": " + where(sec) + " has no key " +
                                   key + " to override");
        k->raw = raw;
    }
    Builder b(std::move(secs));
    return Config(b.tree(""));
}

Config Config::from_disk(const std::string& path, const Overrides& overrides) {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec))
        fail("tenon-E308", "config file " + path + " cannot be read: it is a directory");
    std::ifstream f(path, std::ios::binary);
    if (!f) fail("tenon-E308", "config file " + path + " cannot be read");
    std::ostringstream ss;
    ss << f.rdbuf();
    if (f.bad()) fail("tenon-E308", "config file " + path + " cannot be read");
    return from_str(ss.str(), overrides);
}

const Value* Config::find(std::string_view path) const {
    const Value* v = &root_;
    for (const auto& part : split_path(path)) {
        v = v->find(part);
        if (!v) return nullptr;
    }
    return v;
}

const Value& Config::at(std::string_view path) const {
    if (const Value* v = find(path)) return *v;
    std::string have;
    const Value* v = &root_;
    for (const auto& part : split_path(path)) {
        const Value* next = v->find(part);
        if (!next) break;
        have += (have.empty() ? "" : ".") + part;
        v = next;
    }
    fail("tenon-E309", "the config has no " + std::string(path) +
                           (have.empty() ? std::string(" (no such top-level section)")
                                         : " (the nearest that exists is " + have + ")"));
}

std::string Config::to_str() const {
    std::ostringstream out;
    std::set<std::string_view> seen;
    for (const auto& [k, v] : sections()) {
        if (!v.is_section()) unwritable("the top-level value '" + k + "' (a config file holds values only in sections)");
        if (!seen.insert(k).second) unwritable("section [" + k + "] is there twice");
        check_name(k, "", false);
    }
    for (const auto& [k, v] : sections()) write_section(out, k, v.as_section());
    return out.str();
}

}  // namespace tenon::config
