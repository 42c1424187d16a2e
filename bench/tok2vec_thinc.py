#!/usr/bin/python3
"""Thinc anchor of the tok2vec benchmark in `make bench`: spaCy's default tagger tok2vec
rebuilt from Thinc 8.1's layers (spaCy is not installed; spacy/ml/models/tok2vec.py's
MultiHashEmbed.v2 and MaxoutWindowEncoder.v2 use exactly these), with a 50-tag
with_array(Softmax) head, NumpyOps, Adam(0.001) with Thinc's defaults:

    list2ragged() >> with_array(concatenate(HashEmbed(96, rows[i], column=i, seed=8+i)))
      >> with_array(Maxout(96, 384, nP=3, normalize=True)) >> ragged2list()
      >> with_array(clone(residual(expand_window(1) >> Maxout(96, 288, nP=3, normalize=True)), 4), pad=4)
      >> with_array(Softmax(50, 96))

The documents, the model's sizes and the figures: bench/tok2vec_data.py. Loss gradient per
doc: (P - onehot(tags)) / words in the batch (categorical cross-entropy over all rows).

Prints JSON lines {"figure", "system": "thinc"|"thinc-mt", "value", "unit"} on stdout.
Options: --fraction F --latency-n N --latency-warmup N --figures a,b,c --threads N --check
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import anchor_common as common  # noqa: E402  (standard library only)

common.setup_threads(sys.argv[1:])

import contextlib  # noqa: E402
import gc  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

import tok2vec_data as data  # noqa: E402

from thinc.api import (  # noqa: E402
    Adam, HashEmbed, Maxout, NumpyOps, Softmax, chain, clone, concatenate, expand_window, fix_random_seed,
    list2ragged, ragged2list, residual, set_current_ops, with_array,
)

log = common.make_log("tok2vec_thinc")


def thread_limit_context(n):
    if n <= 0:
        return contextlib.nullcontext()
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return contextlib.nullcontext()
    return threadpool_limits(limits=n)


def make_model():
    width, nF = data.WIDTH, data.N_FEATURES
    embed = chain(
        list2ragged(),
        with_array(concatenate(*[HashEmbed(width, data.ROWS[i], column=i, seed=8 + i, dropout=0.0)
                                 for i in range(nF)])),
        with_array(Maxout(width, width * nF, nP=3, dropout=0.0, normalize=True)),
        ragged2list(),
    )
    cnn = chain(
        expand_window(window_size=data.WINDOW),
        Maxout(nO=width, nI=width * (2 * data.WINDOW + 1), nP=data.PIECES, dropout=0.0, normalize=True),
    )
    encoder = clone(residual(cnn), data.DEPTH)
    encoder.set_dim("nO", width)
    encode = with_array(encoder, pad=data.WINDOW * data.DEPTH)
    return chain(embed, encode, with_array(Softmax(data.N_TAGS, width)))


def n_params(model):
    return sum(int(node.get_param(name).size) for node in model.walk()
               for name in node.param_names if node.has_param(name))


def main(argv=None):
    args = data.parse_args(argv, description=__doc__)
    system = common.system_name("thinc", args.threads)
    threads_field = args.threads if args.threads > 0 else "default"
    set_current_ops(NumpyOps())
    fix_random_seed(0)
    docs_l, tags_l = data.generate()
    checksum = data.checksum(docs_l, tags_l)
    docs = [np.asarray(d, dtype="i").reshape(len(d), data.N_FEATURES) for d in docs_l]
    tags = [np.asarray(t, dtype="i") for t in tags_l]
    nb = data.n_batches(args.fraction)
    spans = data.batches(nb * data.BATCH)
    batches = [docs[b:e] for b, e in spans]
    words_per_batch = [sum(len(d) for d in X) for X in batches]
    words = sum(words_per_batch)

    model = make_model()
    model.initialize(X=docs[:8])
    params = n_params(model)
    log(f"data checksum {checksum}; {params} parameters; {nb} batch(es) of {data.BATCH} docs, {words} words")
    Y = model.predict(batches[0])
    ok = len(Y) == len(batches[0]) and all(y.shape == (len(x), data.N_TAGS) for x, y in zip(batches[0], Y))
    worst = max(float(np.abs(y.sum(axis=1) - 1).max()) for y in Y)
    log(f"output check: shapes {'(words, 50)' if ok else 'WRONG'}, largest |row sum - 1| {worst:.3g}")
    if not ok or worst > 1e-4:
        log("the model's output is wrong")
        return 1
    if args.check:
        print(f'{{"check": "{system}", "params": {params}, "checksum": {checksum}}}', flush=True)
        return 0
    extra = dict(threads=threads_field, params=params, batches=nb, words=words)

    with thread_limit_context(args.threads):
        if "tok2vec_train_wps" in args.figures:
            optimizer = Adam(data.LEARN_RATE)

            def step(k):
                X = batches[k]
                Yh, backprop = model.begin_update(X)
                scale = 1.0 / words_per_batch[k]
                dY = []
                for y, t in zip(Yh, tags[spans[k][0]:spans[k][1]]):
                    d = y.copy()
                    d[np.arange(len(t)), t] -= 1.0
                    d *= scale
                    dY.append(d)
                backprop(dY)
                model.finish_update(optimizer)

            for k in range(min(2, nb)):  # warm-up
                step(k)
            gc.collect()
            t0 = time.perf_counter()
            for k in range(nb):
                step(k)
            data.emit("tok2vec_train_wps", system, words / (time.perf_counter() - t0), "words/s", **extra)

        if "tok2vec_predict_wps" in args.figures:
            for X in batches[:2]:
                model.predict(X)
            best = float("inf")
            for _ in range(data.PREDICT_PASSES):
                gc.collect()
                t0 = time.perf_counter()
                for X in batches:
                    model.predict(X)
                best = min(best, time.perf_counter() - t0)
            data.emit("tok2vec_predict_wps", system, words / best, "words/s", **extra)

        if "tok2vec_latency_doc20" in args.figures:
            singles = [[d] for d in docs if len(d) == data.LATENCY_LEN]
            for i in range(args.latency_warmup):
                model.predict(singles[i % len(singles)])
            gc.collect()
            clock = time.perf_counter_ns
            times = []
            for i in range(args.latency_n):
                x = singles[i % len(singles)]
                t0 = clock()
                model.predict(x)
                times.append(clock() - t0)
            times.sort()
            data.emit("tok2vec_latency_doc20", system, common.percentile(times, 50) / 1000.0, "us",
                      threads=threads_field, n=args.latency_n, p99=common.percentile(times, 99) / 1000.0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
