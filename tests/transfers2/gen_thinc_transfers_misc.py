#!/usr/bin/python3
"""Thinc's array_getitem / ints_getitem, remap_ids (v2), strings2arrays, with_getitem,
with_reshape and with_debug, as reference cases for tests/transfers2/test_transfers_misc.cpp.

Strings cannot be stored in a case file: the C++ test spells the same WORDS and TABLE as
here. Hashes (uint64) are stored as four 16-bit limbs each (exact in float32).

Where Thinc is wrong (tenon does the right thing, see docs/transfers-more.md):
  * array_getitem's backprop `dX[index] = dY` keeps only the last of repeated positions:
    the expected dX of getitem_repeat is numpy's add.at (Thinc's own is stored as dX_thinc);
  * with_reshape's backprop fails for every layer (it hands the layer a 3-d dY): the
    expected dX and parameter gradients are those of the inner layer on the reshaped
    (B * T, N) data, with dY reshaped the same way.

Usage: /usr/bin/python3 tests/transfers2/gen_thinc_transfers_misc.py OUTDIR [--stamp FILE]
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "oracle"))
import numpy  # noqa: E402
from thinc.api import Linear, NumpyOps, fix_random_seed  # noqa: E402
from thinc.layers.array_getitem import array_getitem, floats_getitem, ints_getitem  # noqa: E402
from thinc.layers.remap_ids import remap_ids_v2  # noqa: E402
from thinc.layers.strings2arrays import strings2arrays  # noqa: E402
from thinc.layers.with_debug import with_debug  # noqa: E402
from thinc.layers.with_getitem import with_getitem  # noqa: E402
from thinc.layers.with_reshape import with_reshape  # noqa: E402

from oracle_io import CaseWriter, run_main  # noqa: E402

ops = NumpyOps()

# Also in test_transfers_misc.cpp: every tail length of MurmurHash3 (0-3 bytes after the
# 4-byte blocks), non-ASCII UTF-8, the empty string.
WORDS = [
    ["hello", "world", "a", "", "naïve"],
    [],
    ["ab", "abc", "abcd", "abcde", "abcdef", "abcdefg", "abcdefgh", "日本語", "🙂", "The"],
]
STR_TABLE = {"hello": 3, "a": 1, "naïve": 9, "": 4}


def rand(shape, seed):
    return numpy.random.RandomState(seed).normal(0, 1, shape).astype("f")


def getitem_case(name, shape, index, dtype="f", fn=floats_getitem, addat=False):
    c = CaseWriter(name)
    if dtype == "f":
        X = rand(shape, 11)
    else:
        X = numpy.random.RandomState(12).randint(-50, 50, shape).astype(dtype)
    model = fn(index)
    Y, backprop = model(X, is_train=True)
    c.add("X", X)
    c.add("Y", Y)
    if dtype == "f":
        dY = rand(Y.shape, 13)
        c.add("dY", dY)
        dX = backprop(dY)
        if addat:
            want = numpy.zeros_like(X)
            numpy.add.at(want, index, dY)
            assert not numpy.allclose(want, dX), "expected Thinc's dX to lose the repeats"
            c.add("dX_thinc", dX)
            dX = want
        c.add("dX", dX)
    return c


def remap_case(name):
    c = CaseWriter(name)
    m = remap_ids_v2(STR_TABLE, default=7)
    Y, _ = m([w for ws in WORDS for w in ws], is_train=False)
    c.add("strings", Y)
    table = {5: 1, -3: 2, 40: 8, 7: 0}
    ids1 = numpy.asarray([5, 6, -3, 40, 5, 0], dtype="i")
    Y1, bp = remap_ids_v2(table, default=-1)(ids1, is_train=False)
    c.add("ids1", ids1)
    c.add("out1", Y1)
    ids2 = numpy.asarray([[1, 5], [2, 7], [3, 99], [4, -3]], dtype="i")
    Y2, _ = remap_ids_v2(table, default=3, column=1)(ids2, is_train=False)
    c.add("ids2", ids2)
    c.add("out2", Y2)
    # Empty input.
    Y3, _ = remap_ids_v2(table, default=3)(numpy.zeros((0,), dtype="i"), is_train=False)
    c.add("out_empty", Y3.reshape(0, 1))
    return c


def limbs(a):
    a = numpy.asarray(a, dtype="uint64").reshape(-1)
    return numpy.stack([(a >> numpy.uint64(16 * k)) & numpy.uint64(0xFFFF) for k in range(4)], axis=1)


def strings2arrays_case(name):
    c = CaseWriter(name)
    Ys, _ = strings2arrays()(WORDS, is_train=False)
    c.add("n", numpy.float32(len(Ys)))
    for i, y in enumerate(Ys):
        assert y.dtype == numpy.uint64 and y.shape == (len(WORDS[i]), 1)
        c.add("hash.%d" % i, limbs(y).reshape(len(WORDS[i]), 4))
    return c


def linear(nO, nI, seed):
    m = Linear(nO, nI)
    m.initialize()
    m.set_param("W", rand((nO, nI), seed))
    m.set_param("b", rand((nO,), seed + 1))
    return m


def with_getitem_case(name):
    c = CaseWriter(name)
    inner = linear(3, 4, 20)
    model = with_getitem(0, inner)
    X0, X1 = rand((5, 4), 21), rand((5, 2), 22)
    (Y0, Y1), backprop = model((X0, X1), is_train=True)
    dY0, dY1 = rand(Y0.shape, 23), rand(Y1.shape, 24)
    dX0, dX1 = backprop((dY0, dY1))
    for k, v in [("W", inner.get_param("W")), ("b", inner.get_param("b")), ("X0", X0), ("X1", X1),
                 ("Y0", Y0), ("Y1", Y1), ("dY0", dY0), ("dY1", dY1), ("dX0", dX0), ("dX1", dX1),
                 ("dW", inner.get_grad("W")), ("db", inner.get_grad("b"))]:
        c.add(k, v)
    return c


def with_reshape_case(name):
    c = CaseWriter(name)
    inner = linear(3, 4, 30)
    model = with_reshape(inner)
    X = rand((2, 5, 4), 31)
    Y, backprop = model(X, is_train=True)
    dY = rand(Y.shape, 32)
    try:
        backprop(dY)
        raise AssertionError("Thinc's with_reshape backprop worked: update the note")
    except ValueError:
        pass
    inner2 = linear(3, 4, 30)
    Y2, bp2 = inner2(X.reshape(-1, 4), is_train=True)
    assert numpy.allclose(Y2.reshape(Y.shape), Y)
    dX = bp2(dY.reshape(-1, 3)).reshape(X.shape)
    for k, v in [("W", inner.get_param("W")), ("b", inner.get_param("b")), ("X", X), ("Y", Y), ("dY", dY),
                 ("dX", dX), ("dW", inner2.get_grad("W")), ("db", inner2.get_grad("b"))]:
        c.add(k, v)
    return c


def with_debug_case(name):
    c = CaseWriter(name)
    calls = {"init": 0, "forward": 0, "backprop": 0}

    def count(what):
        def f(*args, **kwargs):
            calls[what] += 1
        return f

    X = rand((5, 4), 41)
    model = with_debug(Linear(3, 4), on_init=count("init"), on_forward=count("forward"),
                       on_backprop=count("backprop"))
    model.initialize(X=X)
    model.set_param("W", rand((3, 4), 40))
    model.set_param("b", rand((3,), 42))
    P = model.predict(X)
    Y, backprop = model(X, is_train=True)
    dY = rand(Y.shape, 43)
    dX = backprop(dY)
    for k, v in [("W", model.get_param("W")), ("b", model.get_param("b")), ("X", X), ("P", P), ("Y", Y),
                 ("dY", dY), ("dX", dX), ("dW", model.get_grad("W")), ("db", model.get_grad("b")),
                 ("calls", numpy.asarray([calls["init"], calls["forward"], calls["backprop"]]))]:
        c.add(k, v)
    return c


CASES = [
    # X[0:3, [1, 4]]
    ("getitem_cols", lambda: getitem_case("getitem_cols", (4, 5), (slice(0, 3), [1, 4]))),
    # X[1, :, [1, 0]]: an integer and a list separated by a slice: numpy puts the list's axis first.
    ("getitem_3d", lambda: getitem_case("getitem_3d", (3, 4, 2), (1, slice(None), [1, 0]))),
    # X[::-2, -1]: a negative step and a negative integer.
    ("getitem_neg", lambda: getitem_case("getitem_neg", (5, 3), (slice(None, None, -2), -1))),
    # X[2]: one row.
    ("getitem_row", lambda: getitem_case("getitem_row", (4, 3), 2, fn=array_getitem)),
    # X[-4:10, 1:]: slices clamped to the extent.
    ("getitem_clamp", lambda: getitem_case("getitem_clamp", (5, 3), (slice(-4, 10), slice(1, None)))),
    # X[[0, 2, 0]]: a repeated row; the gradient adds up (numpy's add.at).
    ("getitem_repeat", lambda: getitem_case("getitem_repeat", (4, 3), ([0, 2, 0],), addat=True)),
    # Integer ids: X[:, 1].
    ("ints_getitem", lambda: getitem_case("ints_getitem", (4, 3), (slice(None), 1), dtype="i", fn=ints_getitem)),
    ("remap_ids", lambda: remap_case("remap_ids")),
    ("strings2arrays", lambda: strings2arrays_case("strings2arrays")),
    ("with_getitem", lambda: with_getitem_case("with_getitem")),
    ("with_reshape", lambda: with_reshape_case("with_reshape")),
    ("with_debug", lambda: with_debug_case("with_debug")),
]

if __name__ == "__main__":
    sys.exit(run_main(CASES, sys.argv, fix_random_seed))
