#!/usr/bin/python3
"""Thinc 8.1's reductions (reduce_first/last/max/mean/sum), expand_window (Floats2d and
Ragged), ops.hash, HashEmbed, Embed and uniqued, as reference cases for
tests/reduce/test_reduce.cpp: the same inputs, tables and output gradients in both, the
forward output, dX and the gradient of E.

Integer values that float32 cannot hold exactly (uint64 ids, 32-bit hash words) are stored
as 16-bit pieces, lowest first.

Usage: /usr/bin/python3 tests/reduce/gen_thinc_reduce.py OUTDIR [--stamp FILE]
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "oracle"))
import numpy  # noqa: E402
from thinc.api import (  # noqa: E402
    Embed,
    HashEmbed,
    NumpyOps,
    expand_window,
    fix_random_seed,
    reduce_first,
    reduce_last,
    reduce_max,
    reduce_mean,
    reduce_sum,
    uniqued,
)
from thinc.types import Ragged  # noqa: E402

from oracle_io import CaseWriter, run_main  # noqa: E402

ops = NumpyOps()
REDUCERS = {
    "first": reduce_first,
    "last": reduce_last,
    "max": reduce_max,
    "mean": reduce_mean,
    "sum": reduce_sum,
}


def ragged(lengths, width, seed, integers=False):
    rng = numpy.random.RandomState(seed)
    n = int(sum(lengths))
    if integers:  # many ties, for reduce_max's choice of row
        data = rng.randint(-2, 3, (n, width)).astype("f")
    else:
        data = rng.normal(0, 1, (n, width)).astype("f")
    return Ragged(data, numpy.asarray(lengths, dtype="i"))


def reduce_case(name, kind, lengths, width, seed, integers=False):
    X = ragged(lengths, width, seed, integers)
    model = REDUCERS[kind]()
    Y, backprop = model(X, is_train=True)
    dY = numpy.random.RandomState(seed + 100).uniform(-1, 1, Y.shape).astype("f")
    dX = backprop(dY)
    c = CaseWriter(name)
    c.add_ragged("X", X)
    c.add("Y", Y)
    c.add("dY", dY)
    c.add_ragged("dX", dX)
    return c


def window_floats_case(name, rows, width, window, seed):
    rng = numpy.random.RandomState(seed)
    X = rng.normal(0, 1, (rows, width)).astype("f")
    model = expand_window(window_size=window)
    Y, backprop = model(X, is_train=True)
    dY = rng.uniform(-1, 1, Y.shape).astype("f")
    dX = backprop(dY)
    c = CaseWriter(name)
    c.add("window", numpy.float32(window))
    c.add("X", X)
    c.add("Y", Y)
    c.add("dY", dY)
    c.add("dX", dX)
    return c


def window_ragged_case(name, lengths, width, window, seed):
    X = ragged(lengths, width, seed)
    model = expand_window(window_size=window)
    Y, backprop = model(X, is_train=True)
    dY = Ragged(numpy.random.RandomState(seed + 1).uniform(-1, 1, Y.dataXd.shape).astype("f"), Y.lengths)
    dX = backprop(dY)
    c = CaseWriter(name)
    c.add("window", numpy.float32(window))
    c.add_ragged("X", X)
    c.add_ragged("Y", Y)
    c.add_ragged("dY", dY)
    c.add_ragged("dX", dX)
    return c


def pieces16(values, n):
    """uint64/uint32 values as n 16-bit pieces each, lowest first (exact in float32)."""
    v = numpy.asarray(values, dtype="uint64").reshape(-1)
    out = numpy.zeros((v.shape[0], n), dtype="f")
    for i in range(n):
        out[:, i] = ((v >> numpy.uint64(16 * i)) & numpy.uint64(0xFFFF)).astype("f")
    return out


KEYS = [0, 1, 2, 7, 12345, 2**31 - 1, 2**32, 2**40 + 17, 2**63, 2**64 - 1, 0xDEADBEEFCAFEBABE]


def hash_case(name):
    ids = numpy.asarray(KEYS, dtype="uint64")
    c = CaseWriter(name)
    c.add("ids16", pieces16(ids, 4))
    seeds = [0, 1, 7, 2**31 + 5, 2**32 - 1]
    c.add("seeds16", pieces16(seeds, 2))
    for s, seed in enumerate(seeds):
        c.add("hash%d" % s, pieces16(ops.hash(ids, seed), 2).reshape(len(KEYS), 8))
    return c


def table(nV, nO, seed):
    return numpy.random.RandomState(seed).normal(0, 1, (nV, nO)).astype("f")


def embed_node(model):
    """The node that holds E (Thinc chains ints_getitem before it when a column is given)."""
    for node in model.walk():
        if node.has_param("E"):
            return node
    raise RuntimeError("no E")


def run_embed(model, X, E, seed):
    node = embed_node(model)
    node.set_param("E", E)
    Y, backprop = model(X, is_train=False)
    dY = numpy.random.RandomState(seed).uniform(-1, 1, Y.shape).astype("f")
    backprop(dY.copy())
    return Y, dY, node.get_grad("E")


def hashembed_case(name, nO, nV, seed, X, column, keys_input):
    model = HashEmbed(nO, nV, seed=seed, column=column)
    model.initialize()
    E = table(nV, nO, seed + 1)
    Y, dY, dE = run_embed(model, X, E, seed + 2)
    c = CaseWriter(name)
    c.add("nO", numpy.float32(nO))
    c.add("nV", numpy.float32(nV))
    c.add("seed16", pieces16([seed], 2))
    if keys_input:
        c.add("ids16", pieces16(X, 4))
    else:
        c.add("column", numpy.float32(column))
        c.add("X", X)
    c.add("E", E)
    c.add("Y", Y)
    c.add("dY", dY)
    c.add("dE", dE)
    return c


def embed_case(name, nO, nV, X, column, seed):
    model = Embed(nO, nV, column=column)
    model.initialize()
    E = table(nV, nO, seed)
    Y, dY, dE = run_embed(model, X, E, seed + 1)
    c = CaseWriter(name)
    c.add("nO", numpy.float32(nO))
    c.add("nV", numpy.float32(nV))
    if column is not None:
        c.add("column", numpy.float32(column))
    c.add("X", X)
    c.add("E", E)
    c.add("Y", Y)
    c.add("dY", dY)
    c.add("dE", dE)
    return c


def uniqued_case(name, inner, nO, nV, X, column, seed):
    if inner == "hashembed":
        layer = HashEmbed(nO, nV, seed=seed, column=column)
    else:
        layer = Embed(nO, nV, column=column)
    model = uniqued(layer, column=column)
    model.initialize()
    E = table(nV, nO, seed + 1)
    Y, dY, dE = run_embed(model, X, E, seed + 2)
    c = CaseWriter(name)
    c.add("nO", numpy.float32(nO))
    c.add("nV", numpy.float32(nV))
    c.add("seed16", pieces16([seed], 2))
    c.add("column", numpy.float32(column))
    c.add("X", X)
    c.add("E", E)
    c.add("Y", Y)
    c.add("dY", dY)
    c.add("dE", dE)
    return c


def ints2d(rows, cols, hi, seed, lo=0):
    return numpy.random.RandomState(seed).randint(lo, hi, (rows, cols)).astype("i")


CASES = []
for kind in REDUCERS:
    CASES.append(("reduce_%s_ties" % kind, (lambda k: lambda: reduce_case("reduce_%s_ties" % k, k, [2, 3, 1, 3], 4, 1, True))(kind)))
    CASES.append(("reduce_%s_one" % kind, (lambda k: lambda: reduce_case("reduce_%s_one" % k, k, [5], 3, 2))(kind)))
    CASES.append(("reduce_%s_many" % kind, (lambda k: lambda: reduce_case("reduce_%s_many" % k, k, [1, 4, 2, 7, 1], 6, 3))(kind)))
for kind in ("mean", "sum"):  # zero-length sequences: defined (a row of zeros) in Thinc
    CASES.append(("reduce_%s_empty_seq" % kind, (lambda k: lambda: reduce_case("reduce_%s_empty_seq" % k, k, [2, 0, 3, 0], 3, 4))(kind)))
CASES += [
    ("window_floats_1", lambda: window_floats_case("window_floats_1", 5, 3, 1, 10)),
    ("window_floats_2", lambda: window_floats_case("window_floats_2", 6, 2, 2, 11)),
    ("window_floats_short", lambda: window_floats_case("window_floats_short", 2, 3, 3, 12)),
    ("window_floats_empty", lambda: window_floats_case("window_floats_empty", 0, 3, 1, 13)),
    ("window_ragged_1", lambda: window_ragged_case("window_ragged_1", [3, 1, 4], 2, 1, 14)),
    ("window_ragged_2", lambda: window_ragged_case("window_ragged_2", [2, 0, 5, 1], 3, 2, 15)),
    ("window_ragged_0", lambda: window_ragged_case("window_ragged_0", [2, 3], 2, 0, 16)),
    ("hash", lambda: hash_case("hash")),
    # Ints2d with the ids in column 1 (a negative id: Thinc casts it to uint64).
    ("hashembed_ints2d", lambda: hashembed_case(
        "hashembed_ints2d", 5, 13, 11,
        numpy.asarray([[9, 3], [0, 1000000], [4, -1], [7, 3], [1, 42]], dtype="i"), 1, False)),
    # Ints1d of uint64 keys (Keys1d in tenon), large ones too.
    ("hashembed_keys", lambda: hashembed_case(
        "hashembed_keys", 4, 7, 2**31 + 3, numpy.asarray(KEYS + [1, 2], dtype="uint64"), None, True)),
    ("embed_ints2d", lambda: embed_case("embed_ints2d", 4, 7, ints2d(6, 3, 7, 20), 2, 21)),
    ("embed_ints1d", lambda: embed_case("embed_ints1d", 3, 5, numpy.asarray([4, 0, 4, 2, 1], dtype="i"), None, 22)),
    ("uniqued_hashembed", lambda: uniqued_case(
        "uniqued_hashembed", "hashembed", 5, 11, ints2d(9, 2, 4, 30), 0, 31)),
    ("uniqued_embed", lambda: uniqued_case("uniqued_embed", "embed", 3, 6, ints2d(8, 2, 6, 32), 1, 33)),
]

if __name__ == "__main__":
    sys.exit(run_main(CASES, sys.argv, fix_random_seed))
