"""The tok2vec benchmark's shared definitions (bench/tok2vec_thinc.py, bench/tok2vec_torch.py,
bench/tok2vec_bound.py; bench/tok2vec_bench.cpp implements the same generator in C++).

The model (spaCy's default tagger tok2vec, rebuilt from its layers):
  MultiHashEmbed: 4 id columns (NORM, PREFIX, SUFFIX, SHAPE-like), HashEmbed width 96 with
      5000 / 1000 / 2500 / 2500 rows (seeds 8..11), concatenated (384), then
      Maxout(96, 384, nP=3) >> LayerNorm
  MaxoutWindowEncoder: depth 4 x residual(expand_window(1) >> Maxout(96, 288, nP=3) >> LayerNorm),
      run with_array(pad = window * depth = 4) over the docs
  head: with_array(Softmax(50, 96))
  1,505,618 parameters.

The data: N_DOCS synthetic documents from one splitmix64 stream (seed SEED):
  doc length = 10 + next() % 21                         (uniform 10..30, mean 20)
  word rank w: Zipf(s = 1) over VOCAB ranks, by inverse CDF: u = (next() >> 11) * 2**-53 *
      H (H = sum of 1/k, k = 1..VOCAB, added in order in double precision), w = the number
      of cumulative sums <= u (bisect_right), at most VOCAB - 1
  ids (int32): NORM = w, PREFIX = w >> 4, SUFFIX = (w * 7919) % 4001, SHAPE = w % 37
  tag = (w * 13) % 50
Docs are taken in order, 64 per batch; LATENCY docs are those of exactly 20 words.
checksum(): a 64-bit sum over the lengths, ids and tags, which every program prints (stderr)
so that the data can be compared.

Words per second count the real tokens (not the padding rows with_array adds).
"""
import argparse
import bisect
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import anchor_common as common  # noqa: E402  (standard library only)

SEED = 20240611
N_DOCS = 2048          # 32 batches of 64: one prediction pass, one training pass
BATCH = 64
VOCAB = 50000
WIDTH = 96
ROWS = [5000, 1000, 2500, 2500]
N_FEATURES = len(ROWS)
DEPTH = 4
WINDOW = 1
PIECES = 3
N_TAGS = 50
LATENCY_LEN = 20
LEARN_RATE = 0.001
PREDICT_PASSES = 3     # the best of these passes counts for tok2vec_predict_wps

FIGURES = ["tok2vec_predict_wps", "tok2vec_train_wps", "tok2vec_latency_doc20"]
UNITS = {"tok2vec_predict_wps": "words/s", "tok2vec_train_wps": "words/s", "tok2vec_latency_doc20": "us"}

MASK = common.M64


def n_params():
    """The model's parameter count, from its definition."""
    embed = sum(ROWS) * WIDTH
    mixer = WIDTH * PIECES * WIDTH * N_FEATURES + WIDTH * PIECES + 2 * WIDTH
    layer = WIDTH * PIECES * WIDTH * (2 * WINDOW + 1) + WIDTH * PIECES + 2 * WIDTH
    head = N_TAGS * WIDTH + N_TAGS
    return embed + mixer + DEPTH * layer + head


SplitMix64 = common.SplitMix64


def zipf_cdf(vocab=VOCAB):
    cum, total = [], 0.0
    for k in range(1, vocab + 1):
        total += 1.0 / k
        cum.append(total)
    return cum


def features(w):
    return (w, w >> 4, (w * 7919) % 4001, w % 37)


def generate(n_docs=N_DOCS, seed=SEED):
    """([ids per doc: list of (n, 4) int lists], [tags per doc: list of ints]) as plain lists."""
    rng = SplitMix64(seed)
    cum = zipf_cdf()
    total = cum[-1]
    docs, tags = [], []
    for _ in range(n_docs):
        n = 10 + rng.next() % 21
        ids, tg = [], []
        for _ in range(n):
            u = (rng.next() >> 11) * (1.0 / 9007199254740992.0) * total
            w = min(bisect.bisect_right(cum, u), VOCAB - 1)
            ids.append(features(w))
            tg.append((w * 13) % N_TAGS)
        docs.append(ids)
        tags.append(tg)
    return docs, tags


def checksum(docs, tags):
    """sum over the values v_i in order (per doc: length, then ids row by row, then tags) of
    (i + 1) * v_i, modulo 2**64."""
    cs, i = 0, 0
    for ids, tg in zip(docs, tags):
        seq = [len(ids)] + [v for row in ids for v in row] + list(tg)
        for v in seq:
            i += 1
            cs = (cs + i * v) & MASK
    return cs


def batches(n_items, batch=BATCH):
    return [(i, min(i + batch, n_items)) for i in range(0, n_items, batch)]


def n_batches(fraction, total=N_DOCS // BATCH):
    return total if fraction >= 1.0 else max(1, min(total, round(total * fraction)))


def parse_args(argv=None, description=None):
    p = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--fraction", type=float, default=1.0,
                   help="the share of the 32 batches timed (default 1.0)")
    p.add_argument("--latency-n", type=int, default=2000, help="timed one-document predict calls (default 2000)")
    p.add_argument("--latency-warmup", type=int, default=200, help="warm-up one-document calls (default 200)")
    p.add_argument("--figures", default="", help="comma-separated subset of: " + ",".join(FIGURES))
    p.add_argument("--threads", type=int, default=0, help="threads (0 = library default)")
    p.add_argument("--check", action="store_true",
                   help="only check the model (output shapes and row sums; prints the parameter count)")
    args = p.parse_args(argv)
    if not (0.0 < args.fraction <= 1.0):
        p.error("--fraction must be in (0, 1]")
    if args.latency_n < 1:
        p.error("--latency-n must be >= 1")
    figs = [f.strip() for f in args.figures.split(",") if f.strip()] or list(FIGURES)
    unknown = [f for f in figs if f not in FIGURES]
    if unknown:
        p.error("unknown figure(s): " + ",".join(unknown))
    args.figures = figs
    return args


def median(values):
    v = sorted(values)
    return v[(len(v) - 1) // 2] if len(v) % 2 else 0.5 * (v[len(v) // 2 - 1] + v[len(v) // 2])


def lower_median(values):
    """The median as the C++ program takes it (the lower middle element)."""
    v = sorted(values)
    return v[(len(v) - 1) // 2]


emit = common.emit


if __name__ == "__main__":
    d, t = generate()
    words = sum(len(x) for x in d)
    print(f"{len(d)} docs, {words} words, {sum(len(x) == LATENCY_LEN for x in d)} of {LATENCY_LEN} words, "
          f"checksum {checksum(d, t)}, {n_params()} parameters")
