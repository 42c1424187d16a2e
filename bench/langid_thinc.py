#!/usr/bin/python3
"""The word-language identifier of examples/langid.cpp, in Thinc 8.1, on the same data.

Usage:  /usr/bin/python3 bench/langid_thinc.py DIR [--arch attention|mean] [--epochs N]

DIR holds train.tsv, dev.tsv and test.tsv as `langid train --data DIR` writes them: a label,
the word and its features (three hashed ids per position of "<word>"), so Thinc trains on
exactly tenon's ids. The architecture and the training are tenon's, layer for layer:
three HashEmbed (2000, 4000, 8000 rows; seeds 1, 2, 3; width 64) concatenated, a Maxout
(nP 3, layer norm), two residual expand_window(1) >> Maxout blocks (with_array, pad 1),
then ParametricAttention >> reduce_sum (or reduce_mean) >> Softmax; Adam(0.001), batches of
128 shuffled words, the same epochs. Prints the dev accuracy per epoch, the test accuracy and
a `result` line: the training time (forward, backward and updates only) and the accuracy.
"""
import argparse
import sys
import time

import numpy
from thinc.api import (
    Adam,
    HashEmbed,
    Maxout,
    ParametricAttention,
    Softmax,
    chain,
    clone,
    concatenate,
    expand_window,
    fix_random_seed,
    list2ragged,
    reduce_mean,
    reduce_sum,
    residual,
    with_array,
)

W = 64
N_LANG = 11


def read(path):
    xs, ys = [], []
    with open(path, encoding="utf-8") as f:
        for line in f:
            label, _word, feats = line.rstrip("\n").split("\t")
            ids = numpy.array([int(v) for v in feats.split()], dtype="uint64").reshape(-1, 3)
            xs.append(ids)
            ys.append(int(label))
    return xs, numpy.array(ys, dtype="i")


def make_model(arch):
    embed = with_array(
        chain(
            concatenate(
                HashEmbed(W, 2000, column=0, seed=1),
                HashEmbed(W, 4000, column=1, seed=2),
                HashEmbed(W, 8000, column=2, seed=3),
            ),
            Maxout(W, nP=3, dropout=0.0, normalize=True),
        )
    )
    encode = with_array(
        clone(residual(chain(expand_window(window_size=1), Maxout(W, nP=3, dropout=0.0, normalize=True))), 2),
        pad=1,
    )
    pool = chain(ParametricAttention(W), reduce_sum()) if arch == "attention" else reduce_mean()
    return chain(embed, encode, list2ragged(), pool, Softmax(N_LANG))


def accuracy(model, xs, ys):
    ok = 0
    for b in range(0, len(xs), 512):
        P = model.predict(xs[b:b + 512])
        ok += int((P.argmax(axis=1) == ys[b:b + 512]).sum())
    return ok / len(xs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--arch", default="attention", choices=["attention", "mean"])
    ap.add_argument("--epochs", type=int, default=5)
    a = ap.parse_args()
    fix_random_seed(0)
    train_x, train_y = read(a.dir + "/train.tsv")
    dev_x, dev_y = read(a.dir + "/dev.tsv")
    test_x, test_y = read(a.dir + "/test.tsv")
    model = make_model(a.arch)
    Y1 = numpy.zeros((8, N_LANG), dtype="f")
    Y1[numpy.arange(8), train_y[:8]] = 1
    model.initialize(X=train_x[:8], Y=Y1)
    opt = Adam(0.001)
    rng = numpy.random.RandomState(5)
    order = numpy.arange(len(train_x))
    seconds = 0.0
    for epoch in range(1, a.epochs + 1):
        rng.shuffle(order)
        t0 = time.perf_counter()
        loss = 0.0
        for b in range(0, len(order), 128):
            idx = order[b:b + 128]
            X = [train_x[i] for i in idx]
            P, backprop = model.begin_update(X)
            dP = P.copy()
            rows = numpy.arange(len(idx))
            loss -= float(numpy.log(numpy.maximum(P[rows, train_y[idx]], 1e-12)).sum())
            dP[rows, train_y[idx]] -= 1.0
            backprop(dP)
            model.finish_update(opt)
        seconds += time.perf_counter() - t0
        print("epoch %d: loss %.4f, dev accuracy %.4f (%.1f s)" % (
            epoch, loss / len(order), accuracy(model, dev_x, dev_y), time.perf_counter() - t0), flush=True)
    acc = accuracy(model, test_x, test_y)
    print("test accuracy %.4f (%s, %d epochs, %.2f s of training: %.0f words/s)" % (
        acc, a.arch, a.epochs, seconds, a.epochs * len(train_x) / seconds))
    print("result system=thinc arch=%s epochs=%d train_s=%.3f test_acc=%.4f" % (a.arch, a.epochs, seconds, acc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
