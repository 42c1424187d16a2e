#!/usr/bin/python3
"""Generate Thinc reference ("oracle") case files for tenon's C++ tests.

Usage:  /usr/bin/python3 tests/oracle/gen_thinc_cases.py OUTDIR

Runs a fixed list of small Thinc computations (layer forward/backward,
optimizer steps, loss gradients) and writes one text file per case to
OUTDIR/<case>.txt.  See tests/oracle/README.md for the file format and the
list of cases/keys.

Format of each file:
    case <name>
    array <key> <rank> <d0> <d1> ...
    <all values, row-major, space-separated, one line, %.9g>
    ...
All values are float32 (integer labels are written as floats).  A scalar is
rank 0 (no dims, one value).

Determinism: thinc.api.fix_random_seed(0) is called, and every case draws its
data from its own numpy.random.RandomState(seed) so the output of one case
does not depend on which other cases ran before it.

Must be run with Debian's /usr/bin/python3, which has Thinc 8.1 installed.
"""

import os
import sys
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

try:
    import numpy
    import thinc
    from thinc.api import (
        Adam,
        CategoricalCrossentropy,
        Dropout,
        Gelu,
        HardSwish,
        L2Distance,
        LayerNorm,
        Linear,
        Maxout,
        Mish,
        MultiSoftmax,
        NumpyOps,
        ParametricAttention,
        Relu,
        SGD,
        SequenceCategoricalCrossentropy,
        Sigmoid,
        Softmax,
        Swish,
        chain,
        fix_random_seed,
        sigmoid_activation,
        to_categorical,
    )
    from thinc.types import Ragged
except ImportError as e:  # pragma: no cover
    sys.stderr.write(
        "gen_thinc_cases.py: cannot import numpy/thinc (%s).\n"
        "Run it with Debian's interpreter: /usr/bin/python3 %s OUTDIR\n"
        % (e, sys.argv[0])
    )
    sys.exit(2)

try:
    from thinc.api import Softmax_v2
except ImportError:  # pragma: no cover
    Softmax_v2 = None


from oracle_io import CaseError, CaseWriter, run_main  # noqa: E402


# ---------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------


def normal(rng, scale, shape, loc=0.0):
    return rng.normal(loc, scale, size=shape).astype(numpy.float32)


def randomize_dense(rng, node):
    """Overwrite W/b of a dense-style node (Linear/Relu/Mish/Maxout/...)."""
    W = node.get_param("W")
    b = node.get_param("b")
    node.set_param("W", normal(rng, 0.5, W.shape))
    node.set_param("b", normal(rng, 0.3, b.shape))


def randomize_layernorm(rng, node):
    G = node.get_param("G")
    b = node.get_param("b")
    node.set_param("G", 1.0 + normal(rng, 0.3, G.shape))
    node.set_param("b", normal(rng, 0.3, b.shape))


def check_shape(key, arr, shape):
    if tuple(arr.shape) != tuple(shape):
        raise CaseError("%s has shape %s, expected %s" % (key, arr.shape, shape))


def run_layer(case, model, X, dY_scale=1.0, rng=None):
    """begin_update + backprop + predict; writes X dY Y dX Ypred."""
    Y, backprop = model.begin_update(X)
    dY = normal(rng, dY_scale, Y.shape)
    dX = backprop(dY.copy())
    check_shape("dX", dX, X.shape)
    Ypred = model.predict(X)
    case.add("X", X)
    case.add("dY", dY)
    case.add("Y", Y)
    case.add("dX", dX)
    case.add("Ypred", Ypred)
    return Y, dX


def write_params(case, node, names, prefix=""):
    for name in names:
        case.add(prefix + name, node.get_param(name))


def write_grads(case, node, names, prefix=""):
    for name in names:
        if not node.has_grad(name):
            raise CaseError("node %s has no gradient for %s" % (node.name, name))
        case.add("d." + prefix + name, node.get_grad(name))


# ---------------------------------------------------------------------------
# Layer cases
# ---------------------------------------------------------------------------

BATCH = 6


def dense_case(name, model, nI, nO, seed, ln=False, x_scale=1.0):
    """Generic dense (+ optional LayerNorm child) layer case.

    If ln is True, `model` is chain(dense, LayerNorm) as built by
    Relu/Mish/Maxout(normalize=True); the dense node is model.layers[0] and
    the LayerNorm node model.layers[1].
    """
    rng = numpy.random.RandomState(seed)
    case = CaseWriter(name)
    X = normal(rng, x_scale, (BATCH, nI))
    model.initialize(X=X, Y=numpy.zeros((BATCH, nO), dtype="f"))
    if ln:
        dense, lnode = model.layers[0], model.layers[1]
        if lnode.name != "layernorm":
            raise CaseError("expected layernorm child, got %s" % lnode.name)
    else:
        dense, lnode = model, None
    randomize_dense(rng, dense)
    if lnode is not None:
        randomize_layernorm(rng, lnode)
    Y, _ = run_layer(case, model, X, rng=rng)
    check_shape("Y", Y, (BATCH, nO))
    write_params(case, dense, ["W", "b"])
    if lnode is not None:
        write_params(case, lnode, ["G", "b"], prefix="ln.")
    write_grads(case, dense, ["W", "b"])
    if lnode is not None:
        write_grads(case, lnode, ["G", "b"], prefix="ln.")
    return case


def case_linear():
    return dense_case("linear", Linear(nO=7, nI=5), 5, 7, seed=101)


def case_relu():
    return dense_case("relu", Relu(nO=7, nI=5), 5, 7, seed=102)


def case_relu_normalize():
    # Thinc: Relu(normalize=True) == chain(relu, LayerNorm(nI=nO)).
    return dense_case(
        "relu_normalize", Relu(nO=7, nI=5, normalize=True), 5, 7, seed=103, ln=True
    )


def case_sigmoid():
    return dense_case("sigmoid", Sigmoid(nO=7, nI=5), 5, 7, seed=104)


def case_sigmoid_activation():
    rng = numpy.random.RandomState(105)
    case = CaseWriter("sigmoid_activation")
    model = sigmoid_activation()
    X = normal(rng, 1.0, (BATCH, 5))
    model.initialize(X=X)
    Y, _ = run_layer(case, model, X, rng=rng)
    check_shape("Y", Y, X.shape)
    return case


def case_softmax():
    # Thinc's Softmax backprop treats dY as the gradient w.r.t. the logits
    # (no softmax Jacobian), see thinc/layers/softmax.py forward/backprop.
    return dense_case("softmax", Softmax(nO=7, nI=5), 5, 7, seed=106)


def group_softmax(Y, nOs):
    out = numpy.array(Y, dtype="f", copy=True)
    i = 0
    for n in nOs:
        block = out[:, i : i + n]
        e = numpy.exp(block - block.max(axis=1, keepdims=True))
        out[:, i : i + n] = e / e.sum(axis=1, keepdims=True)
        i += n
    return out


def case_multisoftmax():
    # Two softmaxes side by side (3 and 4 columns); backprop takes dY as the logits' gradient.
    # Thinc 8.1's MultiSoftmax never applies its softmaxes: it calls
    # ops.softmax(Y[:, i:i+n], inplace=True), and NumpyOps.softmax ignores `inplace` and
    # returns a new array that the layer drops, so Y is the raw logits X W^T + b. tenon does
    # what the layer documents (a softmax over each group): the expected outputs here are
    # Thinc's logits with each group's softmax applied (its dX and gradients do not depend on
    # it: backprop takes dY as the logits' gradient).
    nOs = (3, 4)
    case = dense_case("multisoftmax", MultiSoftmax(nOs=nOs, nI=5), 5, 7, seed=107)
    fixed = []
    for key, arr in case.arrays:
        fixed.append((key, group_softmax(arr, nOs) if key in ("Y", "Ypred") else arr))
    case.arrays = fixed
    return case


def case_softmax_temperature():
    # Softmax_v2(temperature=T): Y = softmax((X W^T + b) / T);
    # backprop divides dY by T, then treats it as the logit gradient.
    if Softmax_v2 is None:
        return None
    case = dense_case(
        "softmax_temperature",
        Softmax_v2(nO=7, nI=5, temperature=2.0),
        5,
        7,
        seed=107,
    )
    case.add("temperature", numpy.float32(2.0))
    return case


def case_mish():
    return dense_case("mish", Mish(nO=7, nI=5), 5, 7, seed=108)


def case_mish_normalize():
    return dense_case(
        "mish_normalize", Mish(nO=7, nI=5, normalize=True), 5, 7, seed=109, ln=True
    )


# Gelu, Swish and HardSwish: X drawn with scale 2, so that the pre-activations reach past
# HardSwish's bends at +-2.5 (and Gelu's tails).
def case_gelu():
    return dense_case("gelu", Gelu(nO=7, nI=5), 5, 7, seed=121, x_scale=2.0)


def case_gelu_normalize():
    return dense_case(
        "gelu_normalize", Gelu(nO=7, nI=5, normalize=True), 5, 7, seed=122, ln=True, x_scale=2.0
    )


def case_swish():
    return dense_case("swish", Swish(nO=7, nI=5), 5, 7, seed=123, x_scale=2.0)


def case_swish_normalize():
    return dense_case(
        "swish_normalize", Swish(nO=7, nI=5, normalize=True), 5, 7, seed=124, ln=True, x_scale=2.0
    )


def case_hard_swish():
    case = dense_case("hard_swish", HardSwish(nO=7, nI=5), 5, 7, seed=125, x_scale=2.0)
    return case


def case_hard_swish_normalize():
    return dense_case(
        "hard_swish_normalize",
        HardSwish(nO=7, nI=5, normalize=True),
        5,
        7,
        seed=126,
        ln=True,
        x_scale=2.0,
    )


def case_maxout():
    # W: (nO, nP, nI) = (4, 3, 5); b: (nO, nP) = (4, 3).
    case = dense_case("maxout", Maxout(nO=4, nI=5, nP=3), 5, 4, seed=110)
    return case


def case_maxout_normalize():
    return dense_case(
        "maxout_normalize",
        Maxout(nO=4, nI=5, nP=3, normalize=True),
        5,
        4,
        seed=111,
        ln=True,
    )


def case_layernorm():
    rng = numpy.random.RandomState(112)
    case = CaseWriter("layernorm")
    model = LayerNorm(nI=5)
    X = normal(rng, 1.0, (BATCH, 5))
    model.initialize(X=X)
    randomize_layernorm(rng, model)
    Y, _ = run_layer(case, model, X, rng=rng)
    check_shape("Y", Y, X.shape)
    write_params(case, model, ["G", "b"])
    write_grads(case, model, ["G", "b"])
    return case


def case_dropout_predict():
    # Dropout(0.5) at inference (predict, is_train=False) is the identity.
    # Training-mode dropout with rate > 0 depends on Thinc's RNG and is not an
    # oracle case.
    rng = numpy.random.RandomState(113)
    case = CaseWriter("dropout_predict")
    model = Dropout(0.5)
    X = normal(rng, 1.0, (BATCH, 5))
    model.initialize(X=X)
    Ypred = model.predict(X)
    if not numpy.array_equal(Ypred, X):
        raise CaseError("Dropout.predict is not the identity")
    case.add("X", X)
    case.add("Ypred", Ypred)
    return case


def case_dropout_rate0():
    # Dropout(0.0) in training: identity forward, identity backward.
    rng = numpy.random.RandomState(114)
    case = CaseWriter("dropout_rate0")
    model = Dropout(0.0)
    X = normal(rng, 1.0, (BATCH, 5))
    model.initialize(X=X)
    Y, backprop = model.begin_update(X)
    dY = normal(rng, 1.0, Y.shape)
    dX = backprop(dY)
    case.add("X", X)
    case.add("dY", dY)
    case.add("Y", Y)
    case.add("dX", dX)
    return case


# ---------------------------------------------------------------------------
# MLP cases
# ---------------------------------------------------------------------------

MLP_BATCH = 8
MLP_NI = 12
MLP_NH = 16
MLP_NO = 5


def make_mlp(rng):
    model = chain(Relu(nO=MLP_NH, nI=MLP_NI), Relu(nO=MLP_NH), Softmax(nO=MLP_NO))
    Xinit = normal(rng, 1.0, (MLP_BATCH, MLP_NI))
    model.initialize(X=Xinit, Y=numpy.zeros((MLP_BATCH, MLP_NO), dtype="f"))
    for layer in model.layers:
        randomize_dense(rng, layer)
    return model


def mlp_param_items(model):
    """Yields (label, node, param_name) with label like '0.W'."""
    for i, layer in enumerate(model.layers):
        for name in ("W", "b"):
            yield "%d.%s" % (i, name), layer, name


def case_mlp():
    rng = numpy.random.RandomState(120)
    case = CaseWriter("mlp")
    model = make_mlp(rng)
    X = normal(rng, 1.0, (MLP_BATCH, MLP_NI))
    Y, _ = run_layer(case, model, X, rng=rng)
    check_shape("Y", Y, (MLP_BATCH, MLP_NO))
    for label, node, name in mlp_param_items(model):
        case.add(label, node.get_param(name))
    for label, node, name in mlp_param_items(model):
        if not node.has_grad(name):
            raise CaseError("mlp: no grad for %s" % label)
        case.add("d." + label, node.get_grad(name))
    return case


def train_case(name, optimizer, n_steps, seed):
    # Beyond the brief: also writes step<k>.Y (the forward output used for the
    # loss) and avg.* for SGD too.  avg.* come from optimizer.averages, keyed
    # by (node.id, param_name) and mapped to "<layer index>.<param>".
    rng = numpy.random.RandomState(seed)
    case = CaseWriter(name)
    model = make_mlp(rng)
    for label, node, pname in mlp_param_items(model):
        case.add("init." + label, node.get_param(pname))
    loss = CategoricalCrossentropy()
    for k in range(n_steps):
        X = normal(rng, 1.0, (MLP_BATCH, MLP_NI))
        labels = rng.randint(0, MLP_NO, size=(MLP_BATCH,))
        truths = numpy.zeros((MLP_BATCH, MLP_NO), dtype="f")
        truths[numpy.arange(MLP_BATCH), labels] = 1.0
        Yh, backprop = model.begin_update(X)
        d_guesses = loss.get_grad(Yh, truths)
        backprop(d_guesses)
        model.finish_update(optimizer)
        case.add("step%d.X" % k, X)
        case.add("step%d.labels" % k, labels.astype("f"))
        case.add("step%d.Y" % k, Yh)
        case.add("step%d.d_guesses" % k, d_guesses)
    for label, node, pname in mlp_param_items(model):
        case.add("final." + label, node.get_param(pname))
    if optimizer.averages is None:
        raise CaseError("%s: optimizer has no averages" % name)
    for label, node, pname in mlp_param_items(model):
        key = (node.id, pname)
        if key not in optimizer.averages:
            raise CaseError("%s: no average for %s" % (name, label))
        case.add("avg." + label, optimizer.averages[key])
    return case


def case_mlp_adam():
    # Adam(0.001): beta1 0.9, beta2 0.999, eps 1e-8, grad_clip 1.0,
    # use_averages True, L2 0.0.
    return train_case("mlp_adam", Adam(0.001), 3, seed=121)


def case_sgd():
    # SGD(0.1): grad_clip 1.0, use_averages True, L2 0.0 (beta1=beta2=0).
    return train_case("sgd", SGD(0.1), 2, seed=122)


# ---------------------------------------------------------------------------
# ParametricAttention (v1: Thinc's layer; v2: computed with Thinc's ops and a Thinc key
# transform, as newer Thinc's ParametricAttention_v2 does: Thinc 8.1 has no v2)
# ---------------------------------------------------------------------------

ATTN_LENGTHS = (3, 1, 0, 4, 2)  # a length-1 and a length-0 sequence among others
ATTN_WIDTH = 5


def attention_input(rng):
    n = sum(ATTN_LENGTHS)
    X = Ragged(normal(rng, 1.0, (n, ATTN_WIDTH)), numpy.asarray(ATTN_LENGTHS, dtype="i"))
    # Q larger than Thinc's initial +-0.1, so that the weights are far from uniform (every
    # score stays well inside Thinc's clip to [-20, 20], where its softmax is exact)
    Q = normal(rng, 0.8, (ATTN_WIDTH,))
    return X, Q


def add_attention_io(case, X, Q, dY, Y, dX, dQ):
    case.add_ragged("X", X)
    case.add("Q", Q)
    case.add("dY", dY)
    case.add_ragged("Y", Y)
    case.add_ragged("dX", dX)
    case.add("d.Q", dQ)


def case_attention():
    rng = numpy.random.RandomState(150)
    case = CaseWriter("attention")
    X, Q = attention_input(rng)
    model = ParametricAttention(nO=ATTN_WIDTH)
    model.initialize(X=X)
    model.set_param("Q", Q)
    Y, backprop = model.begin_update(X)
    dY = normal(rng, 1.0, Y.dataXd.shape)
    dX = backprop(Ragged(dY.copy(), X.lengths))
    Ypred = model.predict(X)
    if not numpy.allclose(Ypred.dataXd, Y.dataXd):
        raise CaseError("attention: predict differs from begin_update")
    add_attention_io(case, X, Q, dY, Y, dX, model.get_grad("Q"))
    return case


def attention_v2(ops, key_transform, Q, X, dY):
    """ParametricAttention_v2's forward and backward (newer Thinc), with Thinc's own ops and
    key transform: returns Y, dX, dQ (the key transform's gradients are in its nodes)."""
    lengths = X.lengths
    if key_transform is None:
        K, bp_K = X.dataXd, None
    else:
        K, bp_K = key_transform.begin_update(X.dataXd)
    a = ops.softmax_sequences(ops.gemm(K, ops.reshape2f(Q, -1, 1)), lengths)
    Y = X.dataXd * a
    dX = dY * a
    d_a = (X.dataXd * dY).sum(axis=1, keepdims=True)
    d_a = ops.backprop_softmax_sequences(d_a, a, lengths)
    dQ = ops.gemm(K, d_a, trans1=True).ravel()
    dK = ops.xp.outer(d_a, Q)
    dX = dX + (dK if bp_K is None else bp_K(dK))
    return Ragged(Y, lengths), Ragged(dX, lengths), dQ


def case_attention_v2():
    rng = numpy.random.RandomState(151)
    case = CaseWriter("attention_v2")
    ops = NumpyOps()
    X, Q = attention_input(rng)
    key = Relu(nO=ATTN_WIDTH, nI=ATTN_WIDTH)
    key.initialize(X=X.dataXd)
    randomize_dense(rng, key)
    dY = normal(rng, 1.0, X.dataXd.shape)
    Y, dX, dQ = attention_v2(ops, key, Q, X, dY)
    add_attention_io(case, X, Q, dY, Y, dX, dQ)
    write_params(case, key, ["W", "b"], prefix="key.")
    write_grads(case, key, ["W", "b"], prefix="key.")
    # v2 without a key transform is v1: the same outputs and gradients as Thinc's layer
    v1 = ParametricAttention(nO=ATTN_WIDTH)
    v1.initialize(X=X)
    v1.set_param("Q", Q)
    Y1, bp1 = v1.begin_update(X)
    dX1 = bp1(Ragged(dY.copy(), X.lengths))
    Y0, dX0, dQ0 = attention_v2(ops, None, Q, X, dY)
    for what, a, b in (("Y", Y0.dataXd, Y1.dataXd), ("dX", dX0.dataXd, dX1.dataXd), ("dQ", dQ0, v1.get_grad("Q"))):
        if not numpy.allclose(a, b, rtol=1e-5, atol=1e-6):
            raise CaseError("attention_v2: without a key transform, %s differs from v1's" % what)
    return case


# ---------------------------------------------------------------------------
# Losses
# ---------------------------------------------------------------------------


def case_loss_cce():
    rng = numpy.random.RandomState(130)
    case = CaseWriter("loss_cce")
    logits = rng.normal(0.0, 1.0, size=(6, 4)).astype("f")
    e = numpy.exp(logits - logits.max(axis=1, keepdims=True))
    guesses = (e / e.sum(axis=1, keepdims=True)).astype("f")
    labels = rng.randint(0, 4, size=(6,)).astype("i")
    truths = to_categorical(labels, n_classes=4)
    case.add("guesses", guesses)
    case.add("labels", labels)
    case.add("truths", truths)
    case.add("d_guesses", CategoricalCrossentropy().get_grad(guesses, labels))
    case.add(
        "d_guesses_nonorm",
        CategoricalCrossentropy(normalize=False).get_grad(guesses, labels),
    )
    try:
        smooth = CategoricalCrossentropy(label_smoothing=0.1)
    except TypeError:  # pragma: no cover - older Thinc without label smoothing
        print("note: loss_cce: label_smoothing not supported; skipping smooth keys")
        return case
    case.add("d_guesses_smooth", smooth.get_grad(guesses, labels))
    # missing_value: rows 1 and 4 not annotated (label -1); one-hot truths marked by class 2.
    missing = labels.copy()
    missing[[1, 4]] = -1
    case.add("labels_missing", missing)
    case.add("d_guesses_missing", CategoricalCrossentropy(missing_value=-1).get_grad(guesses, missing))
    case.add(
        "d_guesses_missing_onehot",
        CategoricalCrossentropy(missing_value=2).get_grad(guesses, truths),
    )
    case.add(
        "truths_smooth", to_categorical(labels, n_classes=4, label_smoothing=0.1)
    )
    # names: truths as the classes' names; row 1 not annotated (""), row 3 negative ("!" and
    # the class after its label: the row is not that class). test_oracle.cpp makes the same list.
    names = ["A", "B", "C", "D"]
    named = [names[int(y)] for y in labels]
    named[1] = ""
    named[3] = "!" + names[(int(labels[3]) + 1) % 4]
    for suffix, normalize in (("", True), ("_nonorm", False)):
        loss = CategoricalCrossentropy(
            normalize=normalize, names=names, missing_value="", neg_prefix="!"
        )
        case.add("d_guesses_names" + suffix, loss.get_grad(guesses, list(named)))
    smooth_names = CategoricalCrossentropy(names=names, label_smoothing=0.1)
    plain = [names[int(y)] for y in labels]
    case.add("d_guesses_names_smooth", smooth_names.get_grad(guesses, plain))
    return case


def case_loss_seq_cce():
    # Three documents of 3, 0 and 5 rows (an empty one too), 4 classes.
    rng = numpy.random.RandomState(132)
    case = CaseWriter("loss_seq_cce")
    guesses, labels = [], []
    for d, rows in enumerate((3, 0, 5)):
        logits = rng.normal(0.0, 1.0, size=(rows, 4)).astype("f")
        e = numpy.exp(logits - logits.max(axis=1, keepdims=True)) if rows else logits
        g = (e / e.sum(axis=1, keepdims=True)).astype("f") if rows else logits
        y = rng.randint(0, 4, size=(rows,)).astype("i")
        guesses.append(g)
        labels.append(y)
        case.add("guesses%d" % d, g)
        case.add("labels%d" % d, y)
        case.add("truths%d" % d, to_categorical(y, n_classes=4))
    variants = (
        ("", dict(), labels),
        ("_nonorm", dict(normalize=False), labels),
        ("_smooth", dict(label_smoothing=0.1), labels),
        ("_missing", dict(missing_value=-1), [numpy.where(y == 1, -1, y).astype("i") for y in labels]),
    )
    for suffix, kw, ys in variants:
        grads = SequenceCategoricalCrossentropy(**kw).get_grad(guesses, ys)
        for d, g in enumerate(grads):
            case.add("d_guesses%s%d" % (suffix, d), g)
    # names: each document's labels as names, label 2 negated ("!D": not the next class) and
    # label 3 not annotated ("-"). test_oracle.cpp makes the same lists.
    names = ["A", "B", "C", "D"]
    def named(y):
        out = []
        for v in y:
            v = int(v)
            out.append("-" if v == 3 else "!" + names[(v + 1) % 4] if v == 2 else names[v])
        return out
    seq = SequenceCategoricalCrossentropy(names=names, missing_value="-", neg_prefix="!")
    for d, g in enumerate(seq.get_grad(guesses, [named(y) for y in labels])):
        case.add("d_guesses_names%d" % d, g)
    return case


def case_loss_l2():
    rng = numpy.random.RandomState(131)
    case = CaseWriter("loss_l2")
    guesses = normal(rng, 1.0, (6, 4))
    truths = normal(rng, 1.0, (6, 4))
    case.add("guesses", guesses)
    case.add("truths", truths)
    case.add("d_guesses", L2Distance().get_grad(guesses, truths))
    case.add("loss", numpy.float32(L2Distance().get_loss(guesses, truths)))
    case.add("d_guesses_nonorm", L2Distance(normalize=False).get_grad(guesses, truths))
    return case


# ---------------------------------------------------------------------------
# Optimizer on a single vector (gradient clipping)
# ---------------------------------------------------------------------------


def case_grad_clip():
    rng = numpy.random.RandomState(140)
    case = CaseWriter("grad_clip")
    w0 = normal(rng, 1.0, (10,))
    g0 = normal(rng, 1.0, (10,))
    g0 = (g0 * (5.0 / numpy.linalg.norm(g0))).astype("f")  # norm ~5 > clip 1.0
    key = (0, "W")
    # Beyond the brief: also writes sgd.avg1 (SGD's averages after one step).
    # The optimizer modifies weights and gradient in place: pass copies.
    adam = Adam(0.01)
    w1, _ = adam(key, w0.copy(), g0.copy())
    sgd = SGD(0.1)
    sw1, _ = sgd(key, w0.copy(), g0.copy())
    case.add("w0", w0)
    case.add("g0", g0)
    case.add("w1", w1)
    case.add("avg1", adam.averages[key])
    case.add("sgd.w1", sw1)
    case.add("sgd.avg1", sgd.averages[key])
    return case


# ---------------------------------------------------------------------------

CASES = [
    ("linear", case_linear),
    ("relu", case_relu),
    ("relu_normalize", case_relu_normalize),
    ("sigmoid", case_sigmoid),
    ("sigmoid_activation", case_sigmoid_activation),
    ("softmax", case_softmax),
    ("multisoftmax", case_multisoftmax),
    ("attention", case_attention),
    ("attention_v2", case_attention_v2),
    ("softmax_temperature", case_softmax_temperature),
    ("mish", case_mish),
    ("mish_normalize", case_mish_normalize),
    ("gelu", case_gelu),
    ("gelu_normalize", case_gelu_normalize),
    ("swish", case_swish),
    ("swish_normalize", case_swish_normalize),
    ("hard_swish", case_hard_swish),
    ("hard_swish_normalize", case_hard_swish_normalize),
    ("maxout", case_maxout),
    ("maxout_normalize", case_maxout_normalize),
    ("layernorm", case_layernorm),
    ("dropout_predict", case_dropout_predict),
    ("dropout_rate0", case_dropout_rate0),
    ("mlp", case_mlp),
    ("mlp_adam", case_mlp_adam),
    ("sgd", case_sgd),
    ("loss_cce", case_loss_cce),
    ("loss_seq_cce", case_loss_seq_cce),
    ("loss_l2", case_loss_l2),
    ("grad_clip", case_grad_clip),
]


def main(argv):
    return run_main(CASES, argv, fix_random_seed)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
