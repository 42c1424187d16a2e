// Reading the Thinc reference cases (written by the tests/oracle/gen_thinc_*.py scripts with
// tests/oracle/oracle_io.py) and comparing tenon's values with them. A case file holds named
// float32 arrays; a sequence value is stored under a key prefix:
//   Ragged  key.data, key.lengths        Padded  key.data, key.size_at_t, key.lengths, key.indices
//   List    key.n (a scalar count), key.0, key.1, ...
#pragma once
#include <catch2/catch.hpp>
#include <tenon/tenon.hpp>
#include <tenon/types/sequences.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace tenon::oracle {

struct Stored {
    std::vector<std::size_t> shape;
    std::vector<float> values;
};

class Case {
public:
    explicit Case(const std::string& name) : name_(name) {
        const std::string path = std::string(TENON_ORACLE_DIR) + "/" + name + ".txt";
        std::ifstream in(path);
        if (!in) FAIL("missing oracle case file " << path << " (run the build: it generates them with Thinc)");
        std::string line;
        while (std::getline(in, line)) {
            std::istringstream head(line);
            std::string kind, key;
            head >> kind;
            if (kind != "array") continue;
            std::size_t rank = 0;
            head >> key >> rank;
            Stored s;
            s.shape.resize(rank);
            std::size_t n = 1;
            for (auto& d : s.shape) {
                head >> d;
                n *= d;
            }
            std::getline(in, line);
            std::istringstream vals(line);
            s.values.resize(n);
            for (auto& v : s.values) vals >> v;
            arrays_[key] = std::move(s);
        }
    }
    bool has(const std::string& key) const { return arrays_.count(key) > 0; }
    const Stored& get(const std::string& key) const {
        auto it = arrays_.find(key);
        if (it == arrays_.end()) FAIL("oracle case " << name_ << " has no array '" << key << "'");
        return it->second;
    }
    Floats2d f2(const std::string& key) const {
        const auto& s = get(key);
        REQUIRE(s.shape.size() == 2);
        Floats2d a({s.shape[0], s.shape[1]}, uninitialized);
        std::copy(s.values.begin(), s.values.end(), a.data());
        return a;
    }
    Ints1d labels(const std::string& key) const {
        const auto& s = get(key);
        Ints1d a({s.values.size()}, uninitialized);
        for (std::size_t i = 0; i < s.values.size(); ++i) a[i] = static_cast<std::int32_t>(std::lround(s.values[i]));
        return a;
    }
    float scalar(const std::string& key) const { return get(key).values.at(0); }
    CParamView param(const std::string& key) const {
        const auto& s = get(key);
        CParamView v;
        v.data = s.values.data();
        v.rank = s.shape.size();
        for (std::size_t i = 0; i < v.rank; ++i) v.shape[i] = s.shape[i];
        return v;
    }

private:
    std::string name_;
    std::map<std::string, Stored> arrays_;
};

// Every value within rtol * |expected| + atol, and the shapes equal.
template <class Got>
    requires requires(const Got& g) { g.data(); }
void check_close(const Case& c, const std::string& key, const Got& got, double rtol = 1e-5, double atol = 1e-6) {
    const auto& want = c.get(key);
    std::size_t n = 1;
    for (auto d : want.shape) n *= d;
    INFO("array " << key);
    REQUIRE(got.size() == n);
    const float* g = got.data();
    std::size_t bad = 0;
    double worst = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
        const double e = want.values[i], d = std::abs(double(g[i]) - e);
        if (!(d <= rtol * std::abs(e) + atol)) {
            ++bad;
            worst = std::max(worst, d);
        }
    }
    INFO(bad << " of " << n << " values differ; worst absolute difference " << worst);
    CHECK(bad == 0);
}
void check_close(const Case& c, const std::string& key, const CParamView& got, double rtol = 1e-5,
                 double atol = 1e-6) {
    struct {
        const float* p;
        std::size_t n;
        const float* data() const { return p; }
        std::size_t size() const { return n; }
    } v{got.data, got.size()};
    check_close(c, key, v, rtol, atol);
}

Node* child_named(Node& model, const std::string& name) {
    for (Node* n : model.walk())
        if (n->name() == name && n != &model) return n;
    FAIL("model " << model.name() << " has no child named " << name);
    return nullptr;
}

// Sequence and other-rank readers (the arrays as the case stores them, any rank).
template <class A>
A read_array(const Case& c, const std::string& key) {
    const auto& s = c.get(key);
    INFO("oracle array " << key);
    REQUIRE(s.shape.size() == A::rank);
    typename A::shape_type shape{};
    for (std::size_t d = 0; d < A::rank; ++d) shape[d] = s.shape[d];
    A a(shape, uninitialized);
    for (std::size_t i = 0; i < s.values.size(); ++i) {
        if constexpr (std::is_floating_point_v<typename A::value_type>)
            a[i] = static_cast<typename A::value_type>(s.values[i]);
        else
            a[i] = static_cast<typename A::value_type>(std::llround(s.values[i]));
    }
    return a;
}
template <class A = Floats2d>
BasicRagged<A> read_ragged(const Case& c, const std::string& key) {
    return BasicRagged<A>(read_array<A>(c, key + ".data"), read_array<Ints1d>(c, key + ".lengths"));
}
template <class A = Floats3d>
BasicPadded<A> read_padded(const Case& c, const std::string& key) {
    return BasicPadded<A>(read_array<A>(c, key + ".data"), read_array<Ints1d>(c, key + ".size_at_t"),
                          read_array<Ints1d>(c, key + ".lengths"), read_array<Ints1d>(c, key + ".indices"));
}
template <class A = Floats2d>
List<A> read_list(const Case& c, const std::string& key) {
    List<A> out;
    const auto n = static_cast<std::size_t>(std::lround(c.scalar(key + ".n")));
    for (std::size_t i = 0; i < n; ++i) out.push_back(read_array<A>(c, key + "." + std::to_string(i)));
    return out;
}

// Comparing sequence values: the same layout (lengths etc. exactly) and close data.
template <class A>
void check_close(const Case& c, const std::string& key, const BasicRagged<A>& got, double rtol = 1e-5,
                 double atol = 1e-6) {
    const Ints1d lengths = read_array<Ints1d>(c, key + ".lengths");
    INFO("ragged " << key);
    REQUIRE(got.lengths().size() == lengths.size());
    CHECK(std::equal(lengths.begin(), lengths.end(), got.lengths().begin()));
    check_close(c, key + ".data", got.data(), rtol, atol);
}
template <class A>
void check_close(const Case& c, const std::string& key, const BasicPadded<A>& got, double rtol = 1e-5,
                 double atol = 1e-6) {
    INFO("padded " << key);
    for (const char* part : {"size_at_t", "lengths", "indices"}) {
        const Ints1d want = read_array<Ints1d>(c, key + "." + part);
        const Ints1d& have = std::string(part) == "size_at_t" ? got.size_at_t()
                             : std::string(part) == "lengths" ? got.lengths()
                                                              : got.indices();
        INFO(part);
        REQUIRE(have.size() == want.size());
        CHECK(std::equal(want.begin(), want.end(), have.begin()));
    }
    check_close(c, key + ".data", got.data(), rtol, atol);
}
template <class A>
void check_close(const Case& c, const std::string& key, const List<A>& got, double rtol = 1e-5, double atol = 1e-6) {
    const auto n = static_cast<std::size_t>(std::lround(c.scalar(key + ".n")));
    INFO("list " << key);
    REQUIRE(got.size() == n);
    for (std::size_t i = 0; i < n; ++i) {
        const auto& want = c.get(key + "." + std::to_string(i));
        INFO("item " << i);
        REQUIRE(want.shape.size() == A::rank);
        for (std::size_t d = 0; d < A::rank; ++d) CHECK(got[i].shape(d) == want.shape[d]);
        check_close(c, key + "." + std::to_string(i), got[i], rtol, atol);
    }
}

}  // namespace tenon::oracle
