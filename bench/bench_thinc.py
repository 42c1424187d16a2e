#!/usr/bin/python3
"""Thinc anchor for `make bench`: Thinc's intro MLP on Fashion-MNIST.

Model: Relu(512, dropout=0.2) >> Relu(512, dropout=0.2) >> Softmax(10)
(784-512-512-10), Adam(0.001) with Thinc's defaults, NumpyOps.
Loss gradient: d = (Yh - Y_onehot) / batch_size (CategoricalCrossentropy's grad).

Prints one JSON record per line on stdout:
    {"figure": ..., "system": "thinc"|"thinc-mt", "value": ..., "unit": ...}

Options: --fraction F  --latency-n N  --latency-warmup N  --figures a,b,c
         --threads N (0 = library default)  --seed S
"""
# --- Thread limits must be in the environment before numpy/blis are imported. ---
import os
import sys

THREAD_ENV_VARS = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "BLIS_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "NUMEXPR_NUM_THREADS",
)


def _threads_from_argv(argv):
    for i, a in enumerate(argv):
        try:
            if a == "--threads" and i + 1 < len(argv):
                return int(argv[i + 1])
            if a.startswith("--threads="):
                return int(a.split("=", 1)[1])
        except ValueError:
            return 0
    return 0


_N_THREADS = _threads_from_argv(sys.argv[1:])
if _N_THREADS > 0:
    for _var in THREAD_ENV_VARS:
        os.environ[_var] = str(_N_THREADS)

# --- Now the heavy imports. ---
import argparse  # noqa: E402
import contextlib  # noqa: E402
import gc  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fashion_mnist  # noqa: E402

from thinc.api import Adam, NumpyOps, Relu, Softmax, chain, fix_random_seed, set_current_ops  # noqa: E402

ALL_FIGURES = [
    "train_epoch_b128",
    "train_epoch_b32",
    "predict10k_b128",
    "predict10k_b1024",
    "latency_b1_p50",
    "latency_b1_p99",
    "accuracy_1epoch",
]
N_HIDDEN = 512
DROPOUT = 0.2
LEARN_RATE = 0.001


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--fraction", type=float, default=1.0,
                   help="run only this fraction of each training epoch's batches and extrapolate (default 1.0)")
    p.add_argument("--latency-n", type=int, default=2000, help="timed batch-1 predict calls (default 2000)")
    p.add_argument("--latency-warmup", type=int, default=200, help="warm-up batch-1 calls (default 200)")
    p.add_argument("--figures", default="", help="comma-separated subset of: " + ",".join(ALL_FIGURES))
    p.add_argument("--threads", type=int, default=0, help="threads (0 = library default)")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    if not (0.0 < args.fraction <= 1.0):
        p.error("--fraction must be in (0, 1]")
    if args.latency_n < 1:
        p.error("--latency-n must be >= 1")
    figs = [f.strip() for f in args.figures.split(",") if f.strip()] or list(ALL_FIGURES)
    unknown = [f for f in figs if f not in ALL_FIGURES]
    if unknown:
        p.error("unknown figure(s): " + ",".join(unknown))
    args.figures = figs
    return args


def log(msg):
    print(f"[bench_thinc] {msg}", file=sys.stderr, flush=True)


def emit(figure, system, value, unit, **extra):
    rec = {"figure": figure, "system": system, "value": value, "unit": unit}
    rec.update(extra)
    print(json.dumps(rec), flush=True)


def thread_limit_context(n):
    """threadpoolctl, if installed, in addition to the environment variables."""
    if n <= 0:
        return contextlib.nullcontext()
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return contextlib.nullcontext()
    return threadpool_limits(limits=n)


def make_model(X_sample, Y_sample):
    model = chain(
        Relu(nO=N_HIDDEN, dropout=DROPOUT),
        Relu(nO=N_HIDDEN, dropout=DROPOUT),
        Softmax(nO=10),
    )
    model.initialize(X=X_sample, Y=Y_sample)
    return model


def train_batches(model, optimizer, X, Y, batch_size, n_batches, rng):
    """Shuffle, then run n_batches minibatch updates (the timed unit of work)."""
    perm = rng.permutation(X.shape[0])
    for b in range(n_batches):
        idx = perm[b * batch_size:(b + 1) * batch_size]
        Xb = X[idx]
        Yb = Y[idx]
        Yh, backprop = model.begin_update(Xb)
        backprop((Yh - Yb) / Yh.shape[0])
        model.finish_update(optimizer)


def time_train_epoch(X, Y, batch_size, fraction, seed):
    """Seconds for one (extrapolated) epoch; returns (seconds, model, n_run, n_total)."""
    n_total = math.ceil(X.shape[0] / batch_size)
    n_run = n_total if fraction >= 1.0 else max(1, min(n_total, round(n_total * fraction)))
    # Warm-up on a throw-away model so allocators / blis buffers are primed.
    warm = make_model(X[:5], Y[:5])
    train_batches(warm, Adam(LEARN_RATE), X, Y, batch_size, 3, np.random.default_rng(seed + 1))
    del warm
    fix_random_seed(seed)
    model = make_model(X[:5], Y[:5])
    optimizer = Adam(LEARN_RATE)
    rng = np.random.default_rng(seed)
    gc.collect()
    t0 = time.perf_counter()
    train_batches(model, optimizer, X, Y, batch_size, n_run, rng)
    elapsed = time.perf_counter() - t0
    return elapsed * n_total / n_run, model, n_run, n_total


def predict_all(model, X, batch_size):
    return np.concatenate([model.predict(X[i:i + batch_size]) for i in range(0, X.shape[0], batch_size)])


def time_predict(model, X, batch_size):
    predict_all(model, X[: 4 * batch_size], batch_size)  # warm-up
    gc.collect()
    t0 = time.perf_counter()
    for i in range(0, X.shape[0], batch_size):
        model.predict(X[i:i + batch_size])
    return time.perf_counter() - t0


def percentile(sorted_vals, q):
    """Nearest-rank percentile on an ascending list."""
    k = max(0, min(len(sorted_vals) - 1, math.ceil(q / 100.0 * len(sorted_vals)) - 1))
    return sorted_vals[k]


def time_latency(model, X, n, warmup):
    m = X.shape[0]
    for i in range(warmup):
        model.predict(X[i % m:i % m + 1])
    gc.collect()
    times = []
    clock = time.perf_counter_ns
    for i in range(n):
        j = i % m
        x = X[j:j + 1]
        t0 = clock()
        model.predict(x)
        times.append(clock() - t0)
    times.sort()
    return percentile(times, 50) / 1000.0, percentile(times, 99) / 1000.0


def main(argv=None):
    args = parse_args(argv)
    system = "thinc" if args.threads == 1 else ("thinc-mt" if args.threads <= 0 else f"thinc-t{args.threads}")
    threads_field = args.threads if args.threads > 0 else "default"
    set_current_ops(NumpyOps())
    fix_random_seed(args.seed)
    log(f"loading Fashion-MNIST from {fashion_mnist.data_dir()}")
    X_train, y_train, X_test, y_test = fashion_mnist.load()
    Y_train = fashion_mnist.one_hot(y_train)
    figs = args.figures
    trained = None
    with thread_limit_context(args.threads):
        for bs in (128, 32):
            fig = f"train_epoch_b{bs}"
            want_acc = bs == 128 and "accuracy_1epoch" in figs and args.fraction >= 1.0
            if fig not in figs and not want_acc:
                continue
            log(f"{system}: {fig} (fraction {args.fraction})")
            secs, model, n_run, n_total = time_train_epoch(X_train, Y_train, bs, args.fraction, args.seed)
            if fig in figs:
                emit(fig, system, secs, "s", threads=threads_field, batches=n_run, batches_per_epoch=n_total)
            if bs == 128:
                trained = model
                if want_acc:
                    pred = predict_all(model, X_test, 1024).argmax(axis=1)
                    emit("accuracy_1epoch", system, float((pred == y_test).mean()), "fraction",
                         threads=threads_field)
        if "accuracy_1epoch" in figs and args.fraction < 1.0:
            log("accuracy_1epoch skipped (only measured when --fraction 1)")
        model = trained
        if model is None:
            model = make_model(X_train[:5], Y_train[:5])
        for bs in (128, 1024):
            fig = f"predict10k_b{bs}"
            if fig in figs:
                log(f"{system}: {fig}")
                emit(fig, system, time_predict(model, X_test, bs), "s", threads=threads_field)
        if "latency_b1_p50" in figs or "latency_b1_p99" in figs:
            log(f"{system}: latency_b1 (n={args.latency_n}, warm-up {args.latency_warmup})")
            p50, p99 = time_latency(model, X_test, args.latency_n, args.latency_warmup)
            if "latency_b1_p50" in figs:
                emit("latency_b1_p50", system, p50, "us", threads=threads_field, n=args.latency_n)
            if "latency_b1_p99" in figs:
                emit("latency_b1_p99", system, p99, "us", threads=threads_field, n=args.latency_n)
    return 0


if __name__ == "__main__":
    sys.exit(main())
