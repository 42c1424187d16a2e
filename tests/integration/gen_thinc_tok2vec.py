#!/usr/bin/python3
"""A spaCy-like tok2vec stack built from Thinc 8.1's layers (spaCy is not installed, so
spaCy's MultiHashEmbed.v2 and MaxoutWindowEncoder.v2 are rebuilt here from the layers they
use), as reference cases for tests/integration/test_tok2vec.cpp:

    embed  = list2ragged() >> with_array(concatenate(HashEmbed(width, rows[i], column=i,
             seed=8+i, dropout=0.0) for each feature i)) >> with_array(Maxout(width,
             width * nF, nP=3, dropout=0.0, normalize=True)) >> ragged2list()
    encode = with_array(clone(residual(expand_window(window) >> Maxout(width,
             width * (2 * window + 1), nP=maxout_pieces (3), dropout=0.0, normalize=True)),
             depth), pad=window * depth)
    tok2vec = embed >> encode                      List[Ints2d] -> List[Floats2d]
    textcat = tok2vec >> list2ragged() >> reduce_mean() >> Softmax(n_classes, width)
                                                   List[Ints2d] -> Floats2d

Each case: the configuration, the parameters of every node that has any, in depth-first
pre-order (key "p<i>.<param>", with "p<i>.kind" = a code for the node's layer, KINDS), and
for a few batches in turn (docs of different lengths, a 0-length doc and a 1-token doc
among them): the ids, predict's output, begin_update's output (training, dropout 0), a
random dY, every parameter's gradient after backprop ("b<k>.g<i>.<param>") and every
parameter after one Adam(0.001) step ("b<k>.w<i>.<param>"). The C++ test walks its model
in the same order, loads p<i>.* into it and compares.

Ids: Ints2d values (int32, some negative: HashEmbed hashes them as uint64, sign-extended),
stored exactly in float32 (|id| < 2**24); or, with "keys" = 1, uint64 keys (spaCy's
attribute hashes) stored as 16-bit pieces, lowest first ("b<k>.X.<d>" then holds
(n_tokens, nF * 4) pieces).

A stress run: TENON_TOK2VEC_RANDOM=N[:SEED] adds N cases of random configurations
(tok2vec_rand<k>, textcat_rand<k>: widths, features, rows, windows, depths, pieces, classes,
batches); the C++ test runs every tok2vec_* and textcat_* case it finds.

Usage: /usr/bin/python3 tests/integration/gen_thinc_tok2vec.py OUTDIR [--stamp FILE]
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "oracle"))
import numpy  # noqa: E402
from thinc.api import (  # noqa: E402
    Adam,
    HashEmbed,
    Maxout,
    Softmax,
    chain,
    clone,
    concatenate,
    expand_window,
    fix_random_seed,
    list2ragged,
    ragged2list,
    reduce_mean,
    residual,
    with_array,
)

from oracle_io import CaseError, CaseWriter, run_main  # noqa: E402

# The layers that hold parameters, by the name Thinc gives their node.
KINDS = {"hashembed": 1, "maxout": 2, "layernorm": 3, "softmax": 4}


def multi_hash_embed(width, rows):
    """spaCy's MultiHashEmbed.v2 without the FeatureExtractor (the ids are given) and
    without static vectors: seeds 8, 9, ... as spaCy's make_hash_embed."""
    embeddings = [
        HashEmbed(width, rows[i], column=i, seed=8 + i, dropout=0.0) for i in range(len(rows))
    ]
    max_out = Maxout(width, width * len(rows), nP=3, dropout=0.0, normalize=True)
    return chain(
        list2ragged(),
        with_array(concatenate(*embeddings)),
        with_array(max_out),
        ragged2list(),
    )


def maxout_window_encoder(width, window, maxout_pieces, depth):
    """spaCy's MaxoutWindowEncoder.v2."""
    cnn = chain(
        expand_window(window_size=window),
        Maxout(nO=width, nI=width * ((window * 2) + 1), nP=maxout_pieces, dropout=0.0, normalize=True),
    )
    model = clone(residual(cnn), depth)
    model.set_dim("nO", width)
    return with_array(model, pad=window * depth)


def build(width, rows, window, depth, n_classes, nP=3):
    model = chain(multi_hash_embed(width, rows), maxout_window_encoder(width, window, nP, depth))
    if n_classes:
        model = chain(model, list2ragged(), reduce_mean(), Softmax(n_classes, width))
    return model


def dfs(model):
    """Depth-first pre-order (tenon's test walks its model the same way)."""
    yield model
    for layer in model.layers:
        yield from dfs(layer)


def param_nodes(model):
    out = []
    for node in dfs(model):
        names = [n for n in node.param_names if node.has_param(n)]
        if names:
            if node.name not in KINDS:
                raise CaseError("unexpected parameter node %r" % node.name)
            out.append((node, names))
    return out


def pieces16(values, n):
    v = numpy.asarray(values, dtype="uint64").reshape(-1)
    out = numpy.zeros((v.shape[0], n), dtype="f")
    for i in range(n):
        out[:, i] = ((v >> numpy.uint64(16 * i)) & numpy.uint64(0xFFFF)).astype("f")
    return out


def make_doc(rng, n_tokens, nF, keys):
    if keys:
        hi = rng.randint(0, 2**32, (n_tokens, nF)).astype("uint64")
        lo = rng.randint(0, 2**32, (n_tokens, nF)).astype("uint64")
        ids = (hi << numpy.uint64(32)) | lo
        # A few repeated tokens (the same ids give the same rows).
        if n_tokens > 2:
            ids[-1] = ids[0]
        return ids
    ids = rng.randint(-1000, 2**24, (n_tokens, nF)).astype("i")
    if n_tokens > 2:
        ids[-1] = ids[0]
    return ids


def store_ids(c, key, docs, keys):
    c.add("%s.n" % key, numpy.float32(len(docs)))
    for d, doc in enumerate(docs):
        if keys:
            c.add("%s.%d" % (key, d), pieces16(doc, 4).reshape(doc.shape[0], doc.shape[1] * 4))
        else:
            c.add("%s.%d" % (key, d), doc)


def tok2vec_case(name, seed, width, nF, rows, window, depth, n_classes, batches, keys=False,
                 perturb=True, nP=3):
    """batches: a list of lists of doc lengths."""
    rng = numpy.random.RandomState(seed)
    model = build(width, rows, window, depth, n_classes, nP)
    sample = [make_doc(rng, n, nF, keys) for n in (3, 1, 4)]
    model.initialize(X=sample)
    nodes = param_nodes(model)
    # Thinc's initial weights, and (perturb) nonzero biases, LayerNorm gains and a nonzero
    # Softmax W (zero-initialised in Thinc), so that every parameter matters.
    if perturb:
        for node, names in nodes:
            for pname in names:
                p = node.get_param(pname)
                if node.name == "layernorm" or pname == "b" or node.name == "softmax":
                    node.set_param(pname, (p + rng.normal(0, 0.2, p.shape)).astype("f"))
    c = CaseWriter(name)
    for key, v in [("width", width), ("nF", nF), ("window", window), ("depth", depth),
                   ("n_classes", n_classes), ("nP", nP), ("keys", int(keys)), ("n_batches", len(batches)),
                   ("n_nodes", len(nodes))]:
        c.add(key, numpy.float32(v))
    c.add("rows", numpy.asarray(rows, dtype="f"))
    c.add("seeds", numpy.asarray([8 + i for i in range(nF)], dtype="f"))
    for i, (node, names) in enumerate(nodes):
        c.add("p%d.kind" % i, numpy.float32(KINDS[node.name]))
        c.add("p%d.names" % i, numpy.float32(len(names)))
        for pname in names:
            c.add("p%d.%s" % (i, pname), node.get_param(pname))
    optimizer = Adam(0.001)
    for k, lengths in enumerate(batches):
        docs = [make_doc(rng, n, nF, keys) for n in lengths]
        store_ids(c, "b%d.X" % k, docs, keys)
        Yp = model.predict(docs)
        Y, backprop = model.begin_update(docs)
        if n_classes:
            dY = rng.uniform(-1, 1, Y.shape).astype("f")
        else:
            dY = [rng.uniform(-1, 1, y.shape).astype("f") for y in Y]
        backprop(dY)
        c.add_value("b%d.Yp" % k, Yp)
        c.add_value("b%d.Y" % k, Y)
        c.add_value("b%d.dY" % k, dY)
        for i, (node, names) in enumerate(nodes):
            for pname in names:
                if not node.has_grad(pname):
                    raise CaseError("%s: node %d (%s) has no gradient for %s" % (name, i, node.name, pname))
                c.add("b%d.g%d.%s" % (k, i, pname), node.get_grad(pname).copy())
        model.finish_update(optimizer)
        for i, (node, names) in enumerate(nodes):
            for pname in names:
                c.add("b%d.w%d.%s" % (k, i, pname), node.get_param(pname))
    return c


BATCHES_A = [[5, 0, 1, 7], [1], [3, 8, 0, 2, 6]]
BATCHES_B = [[0, 9, 1], [4, 4, 4, 1, 11, 2]]

CASES = [
    # spaCy's default widths are 96 (tagger/parser tok2vec) with 4 features and depth 4;
    # smaller here, several shapes so that nothing depends on one.
    ("tok2vec_w32_d2", lambda: tok2vec_case("tok2vec_w32_d2", 1, 32, 4, [97, 53, 71, 31], 1, 2, 0, BATCHES_A)),
    ("tok2vec_w64_d4", lambda: tok2vec_case("tok2vec_w64_d4", 2, 64, 3, [200, 50, 101], 1, 4, 0, BATCHES_B)),
    ("tok2vec_w16_d1_f1", lambda: tok2vec_case("tok2vec_w16_d1_f1", 3, 16, 1, [13], 1, 1, 0, BATCHES_A)),
    ("tok2vec_w24_d3_win2", lambda: tok2vec_case("tok2vec_w24_d3_win2", 4, 24, 2, [37, 41], 2, 3, 0, BATCHES_B)),
    ("tok2vec_w32_d2_keys", lambda: tok2vec_case("tok2vec_w32_d2_keys", 5, 32, 4, [97, 53, 71, 31], 1, 2, 0, BATCHES_A, keys=True)),
    ("tok2vec_w32_d2_plain", lambda: tok2vec_case("tok2vec_w32_d2_plain", 6, 32, 2, [60, 40], 1, 2, 0, BATCHES_B, perturb=False)),
    ("textcat_w32_d2", lambda: tok2vec_case("textcat_w32_d2", 7, 32, 4, [97, 53, 71, 31], 1, 2, 3, BATCHES_A)),
    ("textcat_w64_d4", lambda: tok2vec_case("textcat_w64_d4", 8, 64, 2, [150, 77], 1, 4, 5, BATCHES_B)),
    # spaCy's tagger/parser defaults: width 96, 4 features (NORM, PREFIX, SUFFIX, SHAPE),
    # rows 5000/1000/2500/2500, window 1, depth 4, 3 pieces.
    ("tok2vec_spacy_defaults", lambda: tok2vec_case(
        "tok2vec_spacy_defaults", 9, 96, 4, [5000, 1000, 2500, 2500], 1, 4, 0, [[6, 0, 1, 9], [2, 12]])),
    ("tok2vec_w32_f6_np2", lambda: tok2vec_case(
        "tok2vec_w32_f6_np2", 10, 32, 6, [31, 29, 23, 19, 17, 13], 1, 2, 0, BATCHES_B, nP=2)),
    ("textcat_w16_d3_keys", lambda: tok2vec_case(
        "textcat_w16_d3_keys", 11, 16, 2, [40, 50], 1, 3, 2, BATCHES_A, keys=True)),
]


def random_case(k, rng):
    textcat = rng.rand() < 0.4
    keys = rng.rand() < 0.3
    nF = int(rng.randint(1, 5 if keys else 7))
    name = "%s_rand%d" % ("textcat" if textcat else "tok2vec", k)
    args = dict(
        seed=int(rng.randint(0, 2**31 - 1)),
        width=int(rng.choice([8, 16, 24, 32, 64, 96])),
        nF=nF,
        rows=[int(r) for r in rng.randint(1, 3000, nF)],
        window=int(rng.choice([1, 1, 1, 2, 3])),
        depth=int(rng.randint(1, 5)),
        n_classes=int(rng.randint(2, 7)) if textcat else 0,
        batches=[[int(n) for n in rng.choice([0, 1, 2, 3, 5, 8, 13], rng.randint(1, 6))] for _ in range(rng.randint(1, 4))],
        keys=keys,
        perturb=rng.rand() < 0.8,
        nP=int(rng.choice([2, 3, 3, 4])),
    )
    # A batch must hold a token (Thinc's HashEmbed backprop fails on none).
    args["batches"] = [b if sum(b) else b + [2] for b in args["batches"]]
    return (name, lambda: tok2vec_case(name, **args))


if os.environ.get("TENON_TOK2VEC_RANDOM"):
    n, _, seed = os.environ["TENON_TOK2VEC_RANDOM"].partition(":")
    stress_rng = numpy.random.RandomState(int(seed or 0))
    CASES += [random_case(k, stress_rng) for k in range(int(n))]

if __name__ == "__main__":
    sys.exit(run_main(CASES, sys.argv, fix_random_seed))
