#!/usr/bin/python3
"""Thinc anchor of the SparseLinear benchmark (bench/run.py --sparselinear): Thinc 8.1's
SparseLinear.v2 (nO 4, length 2**18), NumpyOps, Adam(0.001) with Thinc's defaults, on the
documents of bench/sparselinear_bench.cpp (the same generator: 2000 documents of 20-200 hashed
features, value 1). Figures and batches as there: sparselinear_predict_dps (256 docs a call),
sparselinear_update_dps (begin_update + backprop, 64 a batch), sparselinear_train_dps (the same
+ finish_update(Adam)), each the best of 3 passes, in documents/s.

Prints JSON lines {"figure", "system": "thinc", "value", "unit"} on stdout. Options: --check
"""
import json
import os
import sys
import time

import numpy as np

from thinc.api import Adam, SparseLinear_v2, fix_random_seed

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import anchor_common as common  # noqa: E402  (standard library only)

SEED = 20261127
DOCS, CLASSES, LENGTH, VOCAB = 2000, 4, 2 ** 18, 200000
PREDICT_BATCH, TRAIN_BATCH, PASSES = 256, 64, 10
M64 = common.M64


SplitMix64 = common.SplitMix64


def generate():
    rng = SplitMix64(SEED)
    docs, labels, checksum = [], [], 0
    for _ in range(DOCS):
        n = 20 + rng.next() % 181
        keys = [((rng.next() % VOCAB) * 0x9E3779B97F4A7C15) & M64 for _ in range(n)]
        checksum += sum(k % 1000003 for k in keys)
        labels.append(keys[0] % CLASSES)
        docs.append(keys)
    return docs, labels, checksum & M64


def batch(docs):
    keys = np.asarray([k for d in docs for k in d], dtype="uint64")
    values = np.ones(len(keys), dtype="f")
    lengths = np.asarray([len(d) for d in docs], dtype="int32")
    return keys, values, lengths


def emit(figure, value):
    print(json.dumps({"figure": figure, "system": "thinc", "value": value, "unit": "docs/s"}), flush=True)


def main(argv):
    fix_random_seed(0)
    docs, labels, checksum = generate()
    predict_batches = [batch(docs[i:i + PREDICT_BATCH]) for i in range(0, DOCS, PREDICT_BATCH)]
    train_batches = [(i, batch(docs[i:i + TRAIN_BATCH])) for i in range(0, DOCS, TRAIN_BATCH)]
    onehot = np.zeros((DOCS, CLASSES), dtype="f")
    onehot[np.arange(DOCS), labels] = 1.0
    features = sum(len(b[1][0]) for b in train_batches)
    sys.stderr.write("sparselinear_thinc: %d docs, %d features, checksum %d\n" % (DOCS, features, checksum))
    model = SparseLinear_v2(nO=CLASSES, length=LENGTH)
    model.initialize()
    opt = Adam(0.001)

    def train_pass(step):
        for first, X in train_batches:
            Y, backprop = model.begin_update(X)
            d = (Y - onehot[first:first + Y.shape[0]]) / Y.shape[0]
            backprop(np.ascontiguousarray(d, dtype="f"))
            if step:
                model.finish_update(opt)

    train_pass(True)  # warm-up, as tenon's
    if "--check" in argv:
        print(json.dumps({"check": "ok", "rows": int(model.predict(predict_batches[0]).shape[0])}))
        return 0
    best = min(timed(lambda: [model.predict(X) for X in predict_batches]) for _ in range(PASSES))
    emit("sparselinear_predict_dps", DOCS / best)
    best = min(timed(lambda: train_pass(False)) for _ in range(PASSES))
    emit("sparselinear_update_dps", DOCS / best)
    model.finish_update(opt)
    best = min(timed(lambda: train_pass(True)) for _ in range(PASSES))
    emit("sparselinear_train_dps", DOCS / best)
    return 0


def timed(f):
    t0 = time.perf_counter()
    f()
    return time.perf_counter() - t0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
