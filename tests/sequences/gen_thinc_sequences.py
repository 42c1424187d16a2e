#!/usr/bin/python3
"""Thinc's conversions between the sequence types (ops.list2padded, padded2list,
list2ragged / Ragged), as reference cases for tests/sequences/test_sequences.cpp.

Usage: /usr/bin/python3 tests/sequences/gen_thinc_sequences.py OUTDIR [--stamp FILE]
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "oracle"))
import numpy  # noqa: E402
from thinc.api import NumpyOps, fix_random_seed  # noqa: E402
from thinc.types import Ragged  # noqa: E402

from oracle_io import CaseWriter, run_main  # noqa: E402

ops = NumpyOps()


def seqs(lengths, width, seed):
    rng = numpy.random.RandomState(seed)
    return [rng.normal(0, 1, (n, width)).astype("f") for n in lengths]


def conversion_case(name, lengths, width, seed):
    xs = seqs(lengths, width, seed)
    c = CaseWriter(name)
    c.add_list("list", xs)
    padded = ops.list2padded(xs)
    c.add_padded("padded", padded)
    c.add_list("unpadded", ops.padded2list(padded))
    lens = ops.asarray1i([len(x) for x in xs])
    c.add_ragged("ragged", Ragged(ops.flatten(xs) if xs else ops.alloc2f(0, width), lens))
    return c


CASES = [
    # Ties in length (Thinc puts the later sequence first) and a zero-length sequence.
    ("conv_ties", lambda: conversion_case("conv_ties", [2, 3, 0, 3, 1], 4, 1)),
    ("conv_one", lambda: conversion_case("conv_one", [5], 3, 2)),
    ("conv_sorted", lambda: conversion_case("conv_sorted", [1, 2, 3, 4], 2, 3)),
]

if __name__ == "__main__":
    sys.exit(run_main(CASES, sys.argv, fix_random_seed))
