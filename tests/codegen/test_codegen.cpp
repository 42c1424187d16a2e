// `tenon codegen` (issue 18, item 5): every example config's header, generated at build time
// (meson.build), compiles; its make_model() and the model the config builds at run time (an
// AnyModel over run-time chains) have the same file, byte for byte, in both directions, and
// give the same predictions bit for bit after either one is trained and its file loaded into
// the other. What codegen writes for a config it cannot write (tenon-E328).
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "fashion_mnist.hpp"
#include "mlp.hpp"
#include "support/error_id.hpp"
#include "tagger.hpp"
#include "tenon/config/config.hpp"
#include "tenon/config/registry.hpp"
#include "tenon/tenon.hpp"
#include "textcat.hpp"
#include "textcat_cnn.hpp"

using namespace tenon;
using tenon::test::error_id;

namespace {
std::string config_path(const char* name) {
    return std::string(TENON_SOURCE_DIR) + "/examples/configs/" + name + ".cfg";
}

Floats2d images(std::size_t n, std::uint64_t seed) {
    Rng rng(seed);
    Floats2d X({n, 784}, uninitialized);
    for (float& v : X) v = static_cast<float>(rng.uniform(0.0, 1.0));
    return X;
}
// Documents of 0-12 tokens, `cols` id columns each.
List<Ints2d> docs(std::size_t n, std::size_t cols, std::uint64_t seed) {
    Rng rng(seed);
    List<Ints2d> out;
    for (std::size_t d = 0; d < n; ++d) {
        const auto len = static_cast<std::size_t>(rng.uniform(0.0, 12.99));
        Ints2d x({len, cols});
        for (auto& v : x) v = static_cast<std::int32_t>(rng.uniform(0.0, 1e6));
        out.push_back(std::move(x));
    }
    return out;
}
Floats2d targets(std::size_t rows, std::size_t cols, std::uint64_t seed) {
    Rng rng(seed);
    Floats2d Y({rows, cols});
    for (std::size_t i = 0; i < rows; ++i) Y(i, static_cast<std::size_t>(rng.uniform(0.0, cols - 0.01))) = 1.0f;
    return Y;
}

// Code without its layout (codegen breaks long calls over lines).
std::string squash(const std::string& s) {
    std::string out;
    for (char c : s)
        if (c != ' ' && c != '\n') out += c;
    return out;
}

bool same_bits(const Floats2d& a, const Floats2d& b) {
    return a.shape(0) == b.shape(0) && a.shape(1) == b.shape(1) &&
           (a.size() == 0 || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}
bool same_bits(const List<Floats2d>& a, const List<Floats2d>& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (!same_bits(a[i], b[i])) return false;
    return true;
}

// A few training steps with a made-up gradient (the model's own output minus a target-like
// array), so that every weight moves away from its initial value.
template <class M, class In>
void train(M& model, const In& X, std::uint64_t seed) {
    Optimizer opt = Adam(0.01);
    for (int step = 0; step < 3; ++step) {
        auto [Y, backprop] = model.begin_update(X);
        auto dY = Y;
        if constexpr (std::is_same_v<std::remove_cvref_t<decltype(Y)>, Floats2d>) {
            const Floats2d T = targets(Y.shape(0), Y.shape(1), seed + step);
            for (std::size_t i = 0; i < dY.size(); ++i) dY.data()[i] -= T.data()[i];
        } else {
            for (std::size_t d = 0; d < dY.size(); ++d) {
                const Floats2d T = targets(dY[d].shape(0), dY[d].shape(1), seed + step + d);
                for (std::size_t i = 0; i < dY[d].size(); ++i) dY[d].data()[i] -= T.data()[i];
            }
        }
        backprop(dY);
        model.finish_update(opt);
    }
}

// The round trip for one config: the config's model trained and saved, loaded into the static
// type; then the static type trained and saved, loaded into a model built from the config.
template <class In, class Out, class Static>
void round_trip(const char* name, Static (*make_static)(), const In& sample, const Out& sample_y,
                const std::vector<In>& batches) {
    INFO(name);
    const config::Config cfg = config::Config::from_disk(config_path(name));
    AnyModel<In, Out> built = config::build_model<In, Out>(cfg);
    built.initialize(sample, sample_y);
    train(built, sample, 11);
    const std::vector<std::uint8_t> file = built.to_bytes();

    Static typed = make_static();
    typed.from_bytes(file);
    const bool same_file = typed.to_bytes() == file;  // one file: nothing of how the model is held is in it
    CHECK(same_file);
    for (const In& X : batches) CHECK(same_bits(typed.predict(X), built.predict(X)));

    train(typed, sample, 23);
    const std::vector<std::uint8_t> trained = typed.to_bytes();
    AnyModel<In, Out> again = config::build_model<In, Out>(cfg);
    again.from_bytes(trained);
    const bool same_again = again.to_bytes() == trained;
    CHECK(same_again);
    for (const In& X : batches) CHECK(same_bits(again.predict(X), typed.predict(X)));
}
}  // namespace

TEST_CASE("codegen: the MLP configs' types load the config-built models' files and predict the same bits",
          "[codegen]") {
    const std::vector<Floats2d> batches{images(1, 1), images(7, 2), images(128, 3)};
    round_trip<Floats2d, Floats2d>("mlp", gen_mlp::make_model, images(64, 4), targets(64, 10, 5), batches);
    round_trip<Floats2d, Floats2d>("fashion_mnist", gen_fashion_mnist::make_model, images(64, 6), targets(64, 10, 7),
                                   batches);
}

TEST_CASE("codegen: spaCy's architectures as types: the text classifiers and the tagger", "[codegen]") {
    const std::vector<List<Ints2d>> one_col{docs(1, 1, 1), docs(9, 1, 2), docs(40, 1, 3)};
    round_trip<List<Ints2d>, Floats2d>("textcat", gen_textcat::make_model, docs(32, 1, 4), targets(32, 3, 5), one_col);
    round_trip<List<Ints2d>, Floats2d>("textcat_cnn", gen_textcat_cnn::make_model, docs(32, 1, 6), targets(32, 4, 7),
                                       one_col);
    const List<Ints2d> sample = docs(16, 4, 8);
    List<Floats2d> tags;
    for (std::size_t d = 0; d < sample.size(); ++d) tags.push_back(targets(sample[d].shape(0), 17, 9 + d));
    round_trip<List<Ints2d>, List<Floats2d>>("tagger", gen_tagger::make_model, sample, tags,
                                             {docs(1, 4, 10), docs(9, 4, 11), docs(30, 4, 12)});
}

TEST_CASE("codegen: the header names the config's values; what it cannot write is tenon-E328", "[codegen]") {
    const config::Config mlp = config::Config::from_disk(config_path("mlp"), {{"vars.width", "96"}});
    const std::string h = config::codegen(mlp, "model", "my_model", "mlp.cfg");
    CHECK(h.find("namespace my_model {") != std::string::npos);
    CHECK(h.find("Relu<96>(DenseOptions{.dropout = 0.2})") != std::string::npos);
    CHECK(h.find("Softmax<10>()") != std::string::npos);
    CHECK(h.find("using Model = decltype(make_model());") != std::string::npos);

    // Thinc's options as the layers take them: only what differs from the defaults.
    const std::string two = squash(config::codegen(config::Config::from_str(R"(
[model]
@layers = "chain.v1"
[model.*.a]
@layers = "Maxout.v1"
nO = 8
nI = 4
nP = 2
[model.*.b]
@layers = "concatenate.v1"
[model.*.b.*.x]
@layers = "Relu.v1"
normalize = true
[model.*.b.*.y]
@layers = "residual.v1"
[model.*.b.*.y.layer]
@layers = "Mish.v1"
nO = 8
dropout = 0.125
[model.*.c]
@layers = "Softmax.v2"
normalize_outputs = false
temperature = 0.5
)")));
    CHECK(two.find(squash("Maxout<8, 4, 2>()")) != std::string::npos);
    CHECK(two.find(squash("concatenate(Relu<>(DenseOptions{.normalize = true}), residual(Mish<8>(DenseOptions{"
                          ".dropout = 0.125})))")) != std::string::npos);
    CHECK(two.find(squash("Softmax<>(SoftmaxOptions{.normalize_outputs = false, .temperature = 0.5})")) !=
          std::string::npos);

    // A model of several signatures (with_array.v1 alone), a factory that gives no code, a bad
    // namespace.
    const config::Config alone = config::Config::from_str(R"(
[model]
@layers = "with_array.v1"
[model.layer]
@layers = "Relu.v1"
)");
    CHECK(error_id([&] { config::codegen(alone); }) == "tenon-E328");
    if (!config::layers().has("test.Uncoded.v1"))
        config::layers().add("test.Uncoded.v1", [](config::Args&) { return Relu<4>(); });
    const config::Config uncoded = config::Config::from_str(R"(
[model]
@layers = "chain.v1"
[model.*.a]
@layers = "test.Uncoded.v1"
)");
    CHECK(error_id([&] { config::codegen(uncoded); }) == "tenon-E328");
    CHECK_THROWS_WITH(config::codegen(uncoded), Catch::Matchers::Contains("[model.*.a] test.Uncoded.v1"));
    CHECK(error_id([&] { config::codegen(mlp, "model", "not a name"); }) == "tenon-E328");
}
