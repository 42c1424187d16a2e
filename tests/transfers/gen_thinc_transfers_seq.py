#!/usr/bin/python3
"""Thinc's transfer layers (list2array, list2ragged, list2padded, ragged2list, padded2list)
and wrappers (with_array, with_array2d, with_padded, with_ragged, with_list,
with_flatten_v2) on every input kind each takes, as reference cases for
tests/transfers/test_transfers_seq.cpp: the input X, the output Y, a gradient dY, Thinc's dX,
and for the wrappers the weights W, b of the Linear(3, 4) inside and their gradients dW, db.

Usage: /usr/bin/python3 tests/transfers/gen_thinc_transfers_seq.py OUTDIR [--stamp FILE]
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "oracle"))
import numpy  # noqa: E402
from thinc.api import (  # noqa: E402
    Linear,
    NumpyOps,
    fix_random_seed,
    list2array,
    list2padded,
    list2ragged,
    padded2list,
    ragged2list,
    with_array,
    with_array2d,
    with_flatten_v2,
    with_list,
    with_padded,
    with_ragged,
)
from thinc.types import Padded, Ragged  # noqa: E402

from oracle_io import CaseWriter, run_main  # noqa: E402

ops = NumpyOps()
NO, NI = 3, 4
# Ties in length (Thinc's list2padded puts the later sequence first) and a zero-length one.
LENGTHS = [2, 0, 3, 3, 1]


def seqs(lengths, width, seed):
    rng = numpy.random.RandomState(seed)
    return [rng.normal(0, 1, (n, width)).astype("f") for n in lengths]


def as_kind(xs, kind):
    if kind == "list":
        return xs
    if kind == "ragged":
        return Ragged(ops.flatten(xs), ops.asarray1i([len(x) for x in xs]))
    if kind == "padded":
        return ops.list2padded(xs)
    raise ValueError(kind)


def rand_like(v, seed):
    """A random gradient of v's structure (zero at a Padded's padding)."""
    rng = numpy.random.RandomState(seed)
    if isinstance(v, Ragged):
        return Ragged(rng.uniform(-1, 1, v.dataXd.shape).astype("f"), v.lengths)
    if isinstance(v, Padded):
        data = rng.uniform(-1, 1, v.data.shape).astype("f")
        for b, n in enumerate(v.lengths):
            data[n:, b] = 0
        return Padded(data, v.size_at_t, v.lengths, v.indices)
    if isinstance(v, list):
        return [rng.uniform(-1, 1, x.shape).astype("f") for x in v]
    return rng.uniform(-1, 1, v.shape).astype("f")


def transfer_case(name, layer, X):
    c = CaseWriter(name)
    Y, backprop = layer(X, is_train=True)
    dY = rand_like(Y, 7)
    dX = backprop(dY)
    for key, v in (("X", X), ("Y", Y), ("dY", dY), ("dX", dX)):
        c.add_value(key, v)
    return c


def make_linear(seed):
    lin = Linear(nO=NO, nI=NI)
    return lin


def set_weights(lin, seed):
    rng = numpy.random.RandomState(seed)
    W = rng.uniform(-1, 1, (NO, NI)).astype("f")
    b = rng.uniform(-1, 1, (NO,)).astype("f")
    lin.set_param("W", W)
    lin.set_param("b", b)
    return W, b


def wrapper_case(name, wrap, X):
    """wrap(Linear) is the model; its Linear gets fixed weights after initialize."""
    lin = make_linear(0)
    model = wrap(lin)
    model.initialize()
    W, b = set_weights(lin, 11)
    Y, backprop = model(X, is_train=True)
    dY = rand_like(Y, 7)
    dX = backprop(dY)
    c = CaseWriter(name)
    for key, v in (("X", X), ("Y", Y), ("dY", dY), ("dX", dX)):
        c.add_value(key, v)
    c.add("W", W)
    c.add("b", b)
    c.add("dW", lin.get_grad("W"))
    c.add("db", lin.get_grad("b"))
    return c


def nested_add(c, key, xss):
    c.add(key + ".n", numpy.float32(len(xss)))
    for i, xs in enumerate(xss):
        c.add_list("%s.%d" % (key, i), xs)


def flatten_case(name):
    lin = make_linear(0)
    model = with_flatten_v2(with_array(lin))
    model.initialize()
    W, b = set_weights(lin, 11)
    X = [seqs([2, 0], NI, 31), seqs([], NI, 32), seqs([3, 1, 1], NI, 33)]
    Y, backprop = model(X, is_train=True)
    dY = [rand_like(list(y), 7 + i) for i, y in enumerate(Y)]
    dX = backprop(dY)
    c = CaseWriter(name)
    for key, v in (("X", X), ("Y", Y), ("dY", dY), ("dX", dX)):
        nested_add(c, key, [list(x) for x in v])
    c.add("W", W)
    c.add("b", b)
    c.add("dW", lin.get_grad("W"))
    c.add("db", lin.get_grad("b"))
    return c


def xs():
    return seqs(LENGTHS, NI, 1)


def cases():
    out = [
        ("list2array", lambda: transfer_case("list2array", list2array(), xs())),
        ("list2ragged", lambda: transfer_case("list2ragged", list2ragged(), xs())),
        ("list2padded", lambda: transfer_case("list2padded", list2padded(), xs())),
        ("ragged2list", lambda: transfer_case("ragged2list", ragged2list(), as_kind(xs(), "ragged"))),
        ("padded2list", lambda: transfer_case("padded2list", padded2list(), as_kind(xs(), "padded"))),
        ("flatten_v2_list", lambda: flatten_case("flatten_v2_list")),
    ]
    # with_array / with_array2d on every kind; Thinc's with_array hands a Padded's 3d data to
    # the layer (which a Linear refuses), so tenon's with_array<Padded> is compared with
    # Thinc's with_array2d there.
    for kind in ("list", "ragged", "padded", "array"):
        def X(kind=kind):
            return ops.flatten(xs()) if kind == "array" else as_kind(xs(), kind)
        if kind != "padded":
            out.append(("with_array_" + kind, lambda k=kind, X=X: wrapper_case("with_array_" + k, with_array, X())))
        out.append(("with_array2d_" + kind,
                    lambda k=kind, X=X: wrapper_case("with_array2d_" + k, with_array2d, X())))
    out.append(("with_array_list_pad", lambda: wrapper_case(
        "with_array_list_pad", lambda l: with_array(l, pad=2), xs())))
    # The wrappers over a layer of their own kind.
    for kind in ("padded", "ragged", "list", "array"):
        def X3(kind=kind):
            if kind == "array":
                return numpy.random.RandomState(5).normal(0, 1, (3, 2, NI)).astype("f")
            return as_kind(xs(), kind)
        out.append(("with_padded_" + kind, lambda k=kind, X=X3: wrapper_case(
            "with_padded_" + k, lambda l: with_padded(with_array2d(l)), X())))
    for kind in ("ragged", "list", "padded"):
        out.append(("with_ragged_" + kind, lambda k=kind: wrapper_case(
            "with_ragged_" + k, lambda l: with_ragged(with_array(l)), as_kind(xs(), k))))
        out.append(("with_list_" + kind, lambda k=kind: wrapper_case(
            "with_list_" + k, lambda l: with_list(with_array(l)), as_kind(xs(), k))))
    return out


CASES = cases()

if __name__ == "__main__":
    sys.exit(run_main(CASES, sys.argv, fix_random_seed))
