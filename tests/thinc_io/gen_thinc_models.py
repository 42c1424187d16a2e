#!/usr/bin/python3
"""Thinc 8.1 models saved with Model.to_bytes, for tests/thinc_io/test_thinc_io.cpp (tenon's
from_thinc_bytes), and the other way round: loading tenon's to_thinc_bytes into the models
Thinc's own constructors build.

    gen_thinc_models.py OUTDIR [--stamp FILE]
        writes <name>.thinc (the bytes of model.to_bytes()) and <name>.txt (a case file:
        the configuration, the inputs and Thinc's predictions) for:
          mlp          Thinc's intro MLP on Fashion-MNIST, chain(Relu(H, dropout=0.2),
                       Relu(H, dropout=0.2), Softmax()), H = 64, trained 300 steps (batches
                       of 128, Adam 0.001); predictions on the 10,000 test images
          mlp_flat     the same weights spelled chain(Relu(H), Dropout(0.2), Relu(H),
                       Dropout(0.2), Softmax()): another tree, the same layers in order
          textcat      a spaCy-like tok2vec (MultiHashEmbed + MaxoutWindowEncoder, as
                       tests/integration/gen_thinc_tok2vec.py builds it) with list2ragged >>
                       reduce_mean >> Softmax on top, trained 40 steps on synthetic docs;
                       predictions on 24 docs (one empty)
          zoo          chain(Mish(12, dropout=0.1, normalize=True), Maxout(8, nP=2),
                       residual(chain(Linear(8), LayerNorm())), concatenate(Sigmoid(5),
                       Relu(3)), add(Linear(6), Linear(6)), Softmax_v2(4, temperature=2.0)):
                       most dense layers and combinators, random weights (biases and gains
                       perturbed)
          acts         chain(Gelu(6, normalize=True), Swish(5, dropout=0.1), HardSwish(4),
                       Softmax(3)): the other dense activations, random weights
          embed        chain(concatenate(Embed(6, 50), HashEmbed(5, 40)), Relu(4)) over ids,
                       one per row (tables without column; HashEmbed's seed 12345)
        and, for the refusals (no predictions): mlp_wide (H = 128), mlp_maxout (Maxout in
        place of the first Relu), mlp_deep (three hidden layers), textcat_window2 (the
        encoder's window 2); mlp_uninit (the MLP never initialised) and textcat_template
        (the text classifier as spaCy nests its chains, untrained).

    gen_thinc_models.py --predict KIND CONFIG MODEL INPUT OUTPUT
        builds model KIND (mlp, textcat: one flat chain as tenon's, textcat_nested: spaCy's
        nesting, zoo, acts, embed) with Thinc's constructors from CONFIG
        (key=value,...), loads MODEL with from_bytes (nothing initialised first), predicts
        on INPUT (a case file written by the C++ test) and writes a case file OUTPUT with the
        predictions "P" and "same_bytes" (1 when model.to_bytes() gives back MODEL's bytes).
"""
import gzip
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "oracle"))
import numpy  # noqa: E402
from thinc.api import (  # noqa: E402
    Adam,
    CategoricalCrossentropy,
    Dropout,
    Embed,
    Gelu,
    HardSwish,
    HashEmbed,
    LSTM,
    LayerNorm,
    Linear,
    Maxout,
    Mish,
    Relu,
    Sigmoid,
    Softmax,
    Softmax_v2,
    Swish,
    add,
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
    with_padded,
)

from oracle_io import CaseWriter, run_main  # noqa: E402

FASHION = "/usr/share/datasets/fashion-mnist"
OUTDIR = None


# ---------------------------------------------------------------------------------------
# The models, as Thinc's constructors build them
# ---------------------------------------------------------------------------------------
def mlp(H, hidden=2, first=None):
    layers = [Relu(nO=H, dropout=0.2) for _ in range(hidden)]
    if first is not None:
        layers[0] = first
    return chain(*layers, Softmax())


def mlp_flat(H):
    return chain(Relu(nO=H), Dropout(0.2), Relu(nO=H), Dropout(0.2), Softmax())


def multi_hash_embed(width, rows):
    """spaCy's MultiHashEmbed.v2 (without its FeatureExtractor: the ids are given)."""
    embeddings = [HashEmbed(width, rows[i], column=i, seed=8 + i, dropout=0.0) for i in range(len(rows))]
    max_out = Maxout(width, width * len(rows), nP=3, dropout=0.0, normalize=True)
    return chain(list2ragged(), with_array(concatenate(*embeddings)), with_array(max_out), ragged2list())


def maxout_window_encoder(width, window, maxout_pieces, depth):
    """spaCy's MaxoutWindowEncoder.v2."""
    cnn = chain(
        expand_window(window_size=window),
        Maxout(nO=width, nI=width * ((window * 2) + 1), nP=maxout_pieces, dropout=0.0, normalize=True),
    )
    model = clone(residual(cnn), depth)
    model.set_dim("nO", width)
    return with_array(model, pad=window * depth)


def textcat(width, rows, window, depth, n_classes, flat=False):
    """As spaCy nests it (chain(chain(embed, encode), ...)), or flat: tenon's `a >> b >> c`
    is one chain, and to_thinc_bytes writes it as one chain(...) call."""
    embed = multi_hash_embed(width, rows)
    encode = maxout_window_encoder(width, window, 3, depth)
    head = [list2ragged(), reduce_mean(), Softmax(n_classes, width)]
    if flat:
        return chain(*embed.layers, encode, *head)
    return chain(chain(embed, encode), *head)


def zoo(temperature=1.0):
    return chain(
        Mish(12, dropout=0.1, normalize=True),
        Maxout(8, nP=2),
        residual(chain(Linear(8), LayerNorm())),
        concatenate(Sigmoid(5), Relu(3)),
        add(Linear(6), Linear(6)),
        Softmax_v2(4, temperature=temperature),
    )


def acts():
    return chain(Gelu(6, normalize=True), Swish(5, dropout=0.1), HardSwish(4), Softmax(3))


def embed(seed=None):
    return chain(concatenate(Embed(6, 50), HashEmbed(5, 40, seed=seed)), Relu(4))


def lstm_model():
    return chain(with_padded(LSTM(6, 4, bi=True, depth=2)), list2ragged(), reduce_mean(), Softmax(3))


def build(kind, cfg):
    if kind == "mlp":
        return mlp(cfg["H"])
    if kind in ("textcat", "textcat_nested"):
        rows = [cfg["rows%d" % i] for i in range(cfg["nF"])]
        return textcat(cfg["width"], rows, cfg["window"], cfg["depth"], cfg["n_classes"], flat=kind == "textcat")
    if kind == "zoo":
        return zoo()
    if kind == "acts":
        return acts()
    if kind == "embed":
        return embed()
    if kind == "lstm":
        return lstm_model()
    raise ValueError("unknown model kind %r" % kind)


# ---------------------------------------------------------------------------------------
# Data
# ---------------------------------------------------------------------------------------
def idx_images(name):
    with gzip.open(os.path.join(FASHION, name), "rb") as f:
        d = f.read()
    n, rows, cols = (int.from_bytes(d[4 + 4 * i: 8 + 4 * i], "big") for i in range(3))
    X = numpy.frombuffer(d, dtype=numpy.uint8, offset=16).reshape(n, rows * cols)
    # As tenon's read_idx_images: float32 division, so both sides see the same bits.
    return X.astype("f") / numpy.float32(255)


def idx_labels(name):
    with gzip.open(os.path.join(FASHION, name), "rb") as f:
        d = f.read()
    return numpy.frombuffer(d, dtype=numpy.uint8, offset=8).astype("i")


def one_hot(y, n):
    Y = numpy.zeros((len(y), n), dtype="f")
    Y[numpy.arange(len(y)), y] = 1.0
    return Y


def random_docs(rng, lengths, nF):
    return [rng.randint(0, 2 ** 24, (n, nF)).astype("i") for n in lengths]


def save(name, model):
    with open(os.path.join(OUTDIR, name + ".thinc"), "wb") as f:
        f.write(model.to_bytes())


def perturb(model, rng):
    """Nonzero biases, gains and Softmax weights (zero at initialisation), so that every
    parameter shows in the predictions."""
    for node in model.walk():
        for pname in node.param_names:
            if node.has_param(pname) and (pname in ("b", "G") or node.name == "softmax"):
                p = node.get_param(pname)
                node.set_param(pname, (p + rng.normal(0, 0.3, p.shape)).astype("f"))


# ---------------------------------------------------------------------------------------
# Cases
# ---------------------------------------------------------------------------------------
MLP_H = 64


def mlp_case():
    X = idx_images("train-images-idx3-ubyte.gz")
    y = idx_labels("train-labels-idx1-ubyte.gz")
    X_test = idx_images("t10k-images-idx3-ubyte.gz")
    y_test = idx_labels("t10k-labels-idx1-ubyte.gz")
    Y = one_hot(y, 10)
    model = mlp(MLP_H)
    model.initialize(X=X[:5], Y=Y[:5])
    optimizer = Adam(0.001)
    loss = CategoricalCrossentropy()
    rng = numpy.random.RandomState(0)
    order = rng.permutation(len(X))
    for step in range(300):
        idx = order[step * 128: (step + 1) * 128]
        Yh, backprop = model.begin_update(X[idx])
        backprop(loss.get_grad(Yh, Y[idx]))
        model.finish_update(optimizer)
    save("mlp", model)
    P = model.predict(X_test)
    print("mlp: test accuracy %.4f after 300 steps" % float((P.argmax(axis=1) == y_test).mean()))
    c = CaseWriter("mlp")
    c.add("H", numpy.float32(MLP_H))
    c.add("P", P)
    # The same weights in another spelling of the same layers.
    flat = mlp_flat(MLP_H)
    flat.initialize(X=X[:5], Y=Y[:5])
    src = [n for n in model.walk(order="dfs_pre") if n.name in ("relu", "softmax")]
    dst = [n for n in flat.walk(order="dfs_pre") if n.name in ("relu", "softmax")]
    for a, b in zip(src, dst):
        for pname in ("W", "b"):
            b.set_param(pname, a.get_param(pname))
    save("mlp_flat", flat)
    # Other architectures, for the refusals.
    for name, other in [("mlp_wide", mlp(128)), ("mlp_maxout", mlp(MLP_H, first=Maxout(MLP_H, nP=2, dropout=0.2))),
                        ("mlp_deep", mlp(MLP_H, hidden=3))]:
        other.initialize(X=X[:5], Y=Y[:5])
        save(name, other)
    save("mlp_uninit", mlp(MLP_H))  # never initialised: nI unknown, no parameters
    return c


TEXTCAT = dict(width=32, nF=3, rows0=200, rows1=100, rows2=150, window=1, depth=2, n_classes=3)


def textcat_case():
    cfg = TEXTCAT
    rng = numpy.random.RandomState(1)
    rows = [cfg["rows%d" % i] for i in range(cfg["nF"])]
    model = textcat(cfg["width"], rows, cfg["window"], cfg["depth"], cfg["n_classes"])
    model.initialize(X=random_docs(rng, [3, 1, 4], cfg["nF"]))
    perturb(model, rng)
    optimizer = Adam(0.01)
    loss = CategoricalCrossentropy()
    for step in range(40):
        docs = random_docs(rng, rng.randint(1, 12, 16), cfg["nF"])
        y = numpy.asarray([int(d[:, 0].sum() % cfg["n_classes"]) for d in docs])
        Yh, backprop = model.begin_update(docs)
        backprop(loss.get_grad(Yh, one_hot(y, cfg["n_classes"])))
        model.finish_update(optimizer)
    save("textcat", model)
    docs = random_docs(rng, [5, 0, 1, 7, 12, 3] * 4, cfg["nF"])
    c = CaseWriter("textcat")
    for k, v in cfg.items():
        c.add(k, numpy.float32(v))
    c.add_list("X", docs)
    c.add("P", model.predict(docs))
    other = textcat(cfg["width"], rows, 2, cfg["depth"], cfg["n_classes"])
    other.initialize(X=random_docs(rng, [3, 1, 4], cfg["nF"]))
    save("textcat_window2", other)
    # Thinc's spelling of the model, untrained: the tree to_thinc_bytes(model, like) follows.
    save("textcat_template", textcat(cfg["width"], rows, cfg["window"], cfg["depth"], cfg["n_classes"]))
    return c


def zoo_case():
    rng = numpy.random.RandomState(2)
    model = zoo(temperature=2.0)  # an attribute the file must carry
    X = rng.uniform(-1, 1, (7, 10)).astype("f")
    model.initialize(X=X)
    perturb(model, rng)
    save("zoo", model)
    c = CaseWriter("zoo")
    c.add("X", X)
    c.add("P", model.predict(X))
    return c


def acts_case():
    rng = numpy.random.RandomState(4)
    model = acts()
    X = rng.uniform(-2, 2, (7, 10)).astype("f")
    model.initialize(X=X)
    perturb(model, rng)
    save("acts", model)
    c = CaseWriter("acts")
    c.add("X", X)
    c.add("P", model.predict(X))
    return c


def embed_case():
    rng = numpy.random.RandomState(3)
    model = embed(seed=12345)  # tenon's HashEmbed makes another: the file must carry it
    ids = rng.randint(0, 50, (9,)).astype("i")
    model.initialize(X=ids)
    perturb(model, rng)
    save("embed", model)
    c = CaseWriter("embed")
    c.add("X", ids)
    c.add("P", model.predict(ids))
    return c


def lstm_case():
    # A BiLSTM of depth 2 over lists (with_padded), pooled and classified. Thinc's LSTM forward
    # is right (its backprop is not: nothing here trains it); its HC0 stays at zero, as Thinc
    # never changes it.
    rng = numpy.random.RandomState(4)
    model = lstm_model()
    docs = [rng.uniform(-1, 1, (n, 4)).astype("f") for n in (3, 5, 1, 4)]
    model.initialize(X=docs)
    perturb(model, rng)
    for node in model.walk():
        if node.name == "lstm":
            L = node.get_param("LSTM")
            node.set_param("LSTM", (L + rng.uniform(-0.3, 0.3, L.shape)).astype("f"))
    save("lstm", model)
    c = CaseWriter("lstm")
    c.add_list("X", docs)
    c.add("P", model.predict(docs))
    return c


CASES = [("mlp", mlp_case), ("textcat", textcat_case), ("zoo", zoo_case), ("acts", acts_case), ("embed", embed_case),
         ("lstm", lstm_case)]


# ---------------------------------------------------------------------------------------
# --predict: tenon's bytes into Thinc's model
# ---------------------------------------------------------------------------------------
def read_case(path):
    arrays = {}
    with open(path) as f:
        lines = f.read().split("\n")
    i = 0
    while i < len(lines):
        head = lines[i].split()
        if head and head[0] == "array":
            rank = int(head[2])
            shape = tuple(int(d) for d in head[3:3 + rank])
            values = numpy.asarray([float(v) for v in lines[i + 1].split()], dtype="f")
            arrays[head[1]] = values.reshape(shape)
            i += 2
        else:
            i += 1
    return arrays


def predict_main(argv):
    kind, config, model_path, input_path, output_path = argv
    cfg = {k: int(v) for k, v in (kv.split("=") for kv in config.split(",") if kv)}
    model = build(kind, cfg)
    with open(model_path, "rb") as f:
        data = f.read()
    model.from_bytes(data)
    arrays = read_case(input_path)
    if kind.startswith("textcat"):
        X = [arrays["X.%d" % i].astype("i") for i in range(int(arrays["X.n"]))]
    elif kind == "embed":
        X = arrays["X"].astype("i")
    elif kind == "lstm":
        X = [arrays["X.%d" % i] for i in range(int(arrays["X.n"]))]
    else:
        X = arrays["X"]
    c = CaseWriter(os.path.splitext(os.path.basename(output_path))[0])
    c.add("P", model.predict(X))
    c.add("same_bytes", numpy.float32(model.to_bytes() == data))
    c.write(os.path.dirname(output_path))
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 7 and sys.argv[1] == "--predict":
        fix_random_seed(0)
        sys.exit(predict_main(sys.argv[2:]))
    if len(sys.argv) >= 2:
        OUTDIR = sys.argv[1]
        os.makedirs(OUTDIR, exist_ok=True)
    sys.exit(run_main(CASES, sys.argv, fix_random_seed))
