#!/usr/bin/python3
"""Thinc reference cases for SparseLinear and StaticVectors (tests/sparse/test_sparse.cpp).

Usage:  /usr/bin/python3 tests/sparse/gen_thinc_sparse.py OUTDIR [--stamp FILE]

uint64 keys do not fit a float32: they are stored as four 16-bit pieces each, lowest first
(`keys16`). SparseLinear: Thinc 8.1's layer (v2 indexing, and v1 for its old models) with
random W and b: outputs, the whole dW, db. Thinc's backprop fails on a batch of no rows
(d_scores[0, 0] on an empty buffer: IndexError), so no case has one; tenon's test pins it.
StaticVectors: Thinc 8.1 has no such layer; the reference is numpy and Thinc's ops.gemm as
spaCy's StaticVectors computes it (vectors[ids * (ids < nV)] @ W.T, dW = dY.T @ V[ids]).
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "oracle"))

import numpy  # noqa: E402
from murmurhash.mrmr import hash_bytes  # noqa: E402
from thinc.api import NumpyOps, SparseLinear, SparseLinear_v2, fix_random_seed  # noqa: E402

from oracle_io import CaseWriter, run_main  # noqa: E402

ops = NumpyOps()

KEYS = [0, 1, 2, 7, 12345, 2**31 - 1, 2**32, 2**40 + 17, 2**63, 2**64 - 1, 0xDEADBEEFCAFEBABE]


def pieces16(values, n):
    v = numpy.asarray(values, dtype="uint64").reshape(-1)
    out = numpy.zeros((v.shape[0], n), dtype="f")
    for i in range(n):
        out[:, i] = ((v >> numpy.uint64(16 * i)) & numpy.uint64(0xFFFF)).astype("f")
    return out


def hash_case():
    # murmurhash's MurmurHash3_x86_32 of the key's 8 little-endian bytes, seeds 0 and 1: the
    # function Thinc's sparselinear.pyx inlines (MurmurHash3_x86_32_uint64).
    c = CaseWriter("murmur32")
    c.add("keys16", pieces16(KEYS, 4))
    for seed in (0, 1):
        h = [hash_bytes(int(k).to_bytes(8, "little"), seed) & 0xFFFFFFFF for k in KEYS]
        c.add("hash%d" % seed, pieces16(h, 2))
    return c


def sparse_input(lengths, seed):
    rng = numpy.random.RandomState(seed)
    n = int(sum(lengths))
    keys = numpy.asarray(
        [KEYS[i] if i < len(KEYS) else int(rng.randint(0, 2**62)) * 3 for i in range(n)], dtype="uint64"
    )
    rng.shuffle(keys)
    values = rng.uniform(-2, 2, n).astype("f")
    return keys, values, numpy.asarray(lengths, dtype="int32")


def sparselinear_case(name, v1, nO, length, lengths, seed):
    model = (SparseLinear if v1 else SparseLinear_v2)(nO=nO, length=length)
    model.initialize()
    rng = numpy.random.RandomState(seed)
    W = rng.normal(0, 1, (nO * length,)).astype("f")
    b = rng.normal(0, 0.5, (nO,)).astype("f")
    model.set_param("W", W)
    model.set_param("b", b)
    keys, values, lens = sparse_input(lengths, seed + 1)
    Ypred = model.predict((keys, values, lens))
    Y, backprop = model((keys, values, lens), is_train=True)
    dY = rng.uniform(-1, 1, Y.shape).astype("f")
    backprop(numpy.ascontiguousarray(dY))
    c = CaseWriter(name)
    c.add("nO", numpy.float32(nO))
    c.add("length", numpy.float32(length))
    c.add("keys16", pieces16(keys, 4))
    c.add("values", values)
    c.add("lengths", lens)
    c.add("W", W)
    c.add("b", b)
    c.add("Ypred", Ypred)
    c.add("Y", Y)
    c.add("dY", dY)
    c.add("d.W", model.get_grad("W"))
    c.add("d.b", model.get_grad("b"))
    return c


def staticvectors_case(name, nO, nV, nM, X, column, seed):
    rng = numpy.random.RandomState(seed)
    V = rng.normal(0, 1, (nV, nM)).astype("f")
    W = rng.normal(0, 0.5, (nO, nM)).astype("f")
    ids = X[:, column] if X.ndim == 2 else X
    rows = V[ids * (ids < nV)]
    Y = ops.gemm(rows, W, trans2=True)
    dY = rng.uniform(-1, 1, Y.shape).astype("f")
    dW = ops.gemm(dY, ops.as_contig(rows), trans1=True)
    c = CaseWriter(name)
    c.add("nO", numpy.float32(nO))
    c.add("column", numpy.float32(column))
    c.add("X", X)
    c.add("V", V)
    c.add("W", W)
    c.add("Y", Y)
    c.add("dY", dY)
    c.add("d.W", dW)
    return c


CASES = [
    ("murmur32", hash_case),
    # length 37: % length, not a mask; a row of no features; the large keys.
    ("sparselinear_v2", lambda: sparselinear_case("sparselinear_v2", False, 3, 37, [3, 0, 5, 2, 1], 10)),
    ("sparselinear_v2_big", lambda: sparselinear_case("sparselinear_v2_big", False, 4, 2**10, [7, 1, 12, 0, 9, 3], 11)),
    ("sparselinear_v1", lambda: sparselinear_case("sparselinear_v1", True, 3, 64, [3, 0, 5, 2, 1], 12)),
    ("sparselinear_zero_rows", lambda: sparselinear_case("sparselinear_zero_rows", False, 2, 16, [0, 0], 13)),
    # ids in column 1, some >= nV (row 0).
    ("staticvectors_ints2d", lambda: staticvectors_case(
        "staticvectors_ints2d", 5, 6, 4,
        numpy.asarray([[9, 3], [0, 6], [4, 0], [7, 100], [1, 5], [2, 2], [3, 7]], dtype="i"), 1, 20)),
    ("staticvectors_ints1d", lambda: staticvectors_case(
        "staticvectors_ints1d", 3, 4, 7, numpy.asarray([3, 0, 4, 2, 9, 1], dtype="i"), 0, 21)),
]

if __name__ == "__main__":
    sys.exit(run_main(CASES, sys.argv, fix_random_seed))
