// A user's TU built with every common warning as an error (tests/meson.build compiles it with
// -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wsign-conversion -Wmissing-field-initializers
// -Werror at -O2, with g++ and clang++): including tenon and instantiating what a program uses
// (an MLP, a spaCy-like tok2vec + tagger, training, prediction, plans, files, transfers,
// reductions, options given by designated initialisers, an AnyModel) must give no warning.
#include <tenon/tenon.hpp>

#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

using namespace tenon;

namespace {

auto mlp() {
    return Relu<64>({.dropout = 0.1, .normalize = true}) >> residual(Maxout<64, 64>({.nP = 3})) >>
           LayerNorm<64>() >> Dropout(0.1) >> Gelu<32>({.normalize = true}) >> Swish<32>({.dropout = 0.1}) >>
           HardSwish<16>() >> Softmax<10>({.temperature = 1.0});
}

auto tagger() {
    const MaxoutOptions maxout{.nP = 3, .dropout = 0.0, .normalize = true};
    auto embed = list2ragged<Ints2d>() >>
                 with_array<BasicRagged<Ints2d>>(concatenate(HashEmbed<32>(500, 8u, 0, 0.0),
                                                             HashEmbed<32>(500, {.seed = 9u, .column = 1}))) >>
                 with_array<Ragged>(Maxout<32>(maxout)) >> ragged2list();
    auto encode = with_array<List<Floats2d>>(clone(residual(expand_window<1>() >> Maxout<32>(maxout)), 2), 2);
    return embed >> encode >> with_array<List<Floats2d>>(Softmax<5>());
}

auto textcat() {
    return list2ragged<Ints2d>() >> with_array<BasicRagged<Ints2d>>(Embed<16>(100, {.column = 0})) >>
           reduce_mean() >> Softmax<3>();
}

}  // namespace

int main() {
    Floats2d X({8, 20});
    for (std::size_t i = 0; i < X.size(); ++i) X.data()[i] = float(i % 7) * 0.1f;
    Floats2d Y({8, 10});
    for (std::size_t i = 0; i < 8; ++i) Y(i, i % 10) = 1.0f;

    auto m = mlp();
    m.initialize(X, Y);
    Optimizer opt = Adam({.learn_rate = 0.001, .grad_clip = 1.0});
    for (auto [Xb, Yb] : multibatch(4, X, Y)) {
        auto [Yh, backprop] = m.begin_update(Xb);
        backprop(CategoricalCrossentropy().get_grad(Yh, Yb));
        m.finish_update(opt);
    }
    auto plan = lower(m);
    Floats2d P = plan.predict(X);
    const std::vector<std::uint8_t> bytes = m.to_bytes();
    m.from_bytes(bytes);

    // A model chosen at run time, in a chain with a static layer.
    AnyModel<Floats2d, Floats2d> body = Relu<32>() >> Relu<32>();
    if (X.shape(0) > 4) body = Maxout<32>({.nP = 2}) >> LayerNorm<>();
    auto a = body >> Softmax<10>();
    a.initialize(X, Y);
    {
        auto [Ya, backprop_a] = a.begin_update(X);
        backprop_a(CategoricalCrossentropy().get_grad(Ya, Y));
        a.finish_update(opt);
    }
    AnyModel<Floats2d, Floats2d> a2 = copy(a.layer<0>());
    a2.from_bytes(a.layer<0>().to_bytes());
    const Floats2d Pa = a.predict(X);

    List<Ints2d> docs;
    for (std::size_t d = 0; d < 3; ++d) {
        Ints2d ids({d + 2, 2});
        for (std::size_t i = 0; i < ids.size(); ++i) ids.data()[i] = std::int32_t(i * 37 + d);
        docs.push_back(std::move(ids));
    }
    auto t = tagger();
    t.initialize(docs);
    auto [Yt, backprop_t] = t.begin_update(docs);
    backprop_t(Yt);
    t.finish_update(opt);
    const List<Floats2d> tags = t.predict(docs);

    auto c = textcat();
    c.initialize(docs);
    const Floats2d cats = c.predict(docs);

    // A bag-of-words classifier (SparseLinear) and pretrained vectors (StaticVectors).
    const SparseFeatures feats = sparse_features(docs, 0);
    auto bow = SparseLinear<3>({.length = 1 << 10}) >> sigmoid_activation();
    bow.initialize(feats);
    {
        auto [Yb, backprop_b] = bow.begin_update(feats);
        backprop_b(Yb);
        bow.finish_update(opt);
    }
    const Floats2d bow_p = bow.predict(feats);
    StaticVectors<8> vectors(Floats2d({50, 4}), {.column = 1, .dropout = 0.1});
    vectors.initialize(docs[0]);
    {
        auto [Yv, backprop_v] = vectors.begin_update(docs[0]);
        backprop_v(Yv);
    }

    // A BiLSTM tagger (with_padded) and attention pooling (ParametricAttention, v2 with a key transform).
    std::vector<Floats2d> seqs;
    seqs.push_back(Floats2d({3, 8}));
    seqs.push_back(Floats2d({1, 8}));
    const List<Floats2d> S(std::move(seqs));
    auto rnn = with_padded<List<Floats2d>>(BiLSTM<8, 8>({.depth = 2, .dropout = 0.1})) >> list2ragged() >>
               ParametricAttention_v2<8>(Gelu<8, 8>()) >> reduce_sum() >> Softmax<3>();
    rnn.initialize(S);
    {
        auto [Yr, backprop_r] = rnn.begin_update(S);
        backprop_r(Yr);
        rnn.finish_update(opt);
    }
    const Floats2d rnn_p = rnn.predict(S);

    auto remap = remap_ids(std::unordered_map<std::int64_t, std::int32_t>{{5, 1}, {7, 2}}, 0);
    (void)remap;
    return int(P.shape(0) + tags.size() + cats.shape(0) + Pa.shape(0) + bow_p.shape(0) + rnn_p.shape(0)) == 0;
}
