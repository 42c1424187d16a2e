"""Code shared by the `make bench` anchors (bench_thinc.py, bench_torch.py) and run.py.

Imports only the standard library, so an anchor can import it -- and call
setup_threads() -- before numpy / torch (and the BLAS they load) are imported:

    import anchor_common as common
    common.setup_threads(sys.argv[1:])
    import numpy as np  # only now

Each anchor prints one JSON record per line on stdout (emit()):
    {"figure": ..., "system": ..., "value": ..., "unit": ..., **extras}
"""
import argparse
import gc
import json
import math
import os
import sys
import time

THREAD_ENV_VARS = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "BLIS_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "NUMEXPR_NUM_THREADS",
)

ALL_FIGURES = [
    "train_epoch_b128",
    "train_epoch_b32",
    "predict10k_b128",
    "predict10k_b1024",
    "latency_b1_p50",
    "latency_b1_p99",
    "accuracy_1epoch",
]

# Reference rows of bench/gemm_bound.py (system "bound"): the time the MLP's matrix products
# alone take with the fastest single-thread sgemm, and the figure each one is the limit of.
BOUND_FIGURES = [
    "gemm_bound_epoch_b128",
    "gemm_bound_epoch_b32",
    "gemm_bound_predict10k",
    "gemm_bound_latency_b1",
]
BOUND_OF = {
    "gemm_bound_epoch_b128": "train_epoch_b128",
    "gemm_bound_epoch_b32": "train_epoch_b32",
    "gemm_bound_predict10k": "predict10k_b128",
    "gemm_bound_latency_b1": "latency_b1_p50",
}

# The model both anchors build: 784-512-512-10, dropout 0.2, Adam(0.001).
N_HIDDEN = 512
DROPOUT = 0.2
LEARN_RATE = 0.001


# --------------------------------------------------------------------------- threads
def threads_from_argv(argv):
    """The value of --threads N / --threads=N in argv (0 if absent or not an integer)."""
    for i, a in enumerate(argv):
        try:
            if a == "--threads" and i + 1 < len(argv):
                return int(argv[i + 1])
            if a.startswith("--threads="):
                return int(a.split("=", 1)[1])
        except ValueError:
            return 0
    return 0


def setup_threads(argv):
    """Pins every BLAS / OpenMP thread pool to --threads N (N > 0) through the environment.

    Must run before numpy / torch (and so their BLAS) are imported; returns N.
    """
    n = threads_from_argv(argv)
    if n > 0:
        for var in THREAD_ENV_VARS:
            os.environ[var] = str(n)
    return n


def system_name(base, threads):
    """"base" for 1 thread, "base-mt" for the library default (0), "base-tN" otherwise."""
    return base if threads == 1 else (f"{base}-mt" if threads <= 0 else f"{base}-t{threads}")


# --------------------------------------------------------------------------- CLI / output
def parse_args(argv=None, description=None, threads_help="threads (0 = library default)"):
    p = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--fraction", type=float, default=1.0,
                   help="run only this fraction of each training epoch's batches and extrapolate (default 1.0)")
    p.add_argument("--latency-n", type=int, default=2000, help="timed batch-1 predict calls (default 2000)")
    p.add_argument("--latency-warmup", type=int, default=200, help="warm-up batch-1 calls (default 200)")
    p.add_argument("--figures", default="", help="comma-separated subset of: " + ",".join(ALL_FIGURES))
    p.add_argument("--threads", type=int, default=0, help=threads_help)
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


def import_torch(log):
    """(torch, torch.nn.functional, torch.nn), or None after saying why (PyTorch missing)."""
    try:
        import torch
        import torch.nn.functional as F
        from torch import nn
    except ImportError as e:
        log(f"PyTorch is not importable ({e}); nothing to measure")
        return None
    return torch, F, nn


def torch_threads(torch, threads):
    """torch.set_num_threads(threads) unless 0 (the library's default); the threads it uses."""
    if threads > 0:
        torch.set_num_threads(threads)
    return torch.get_num_threads()


def make_log(tag):
    """A log(msg) that writes "[tag] msg" to stderr (progress; stdout carries the records)."""
    def log(msg):
        print(f"[{tag}] {msg}", file=sys.stderr, flush=True)
    return log


def emit(figure, system, value, unit, **extra):
    rec = {"figure": figure, "system": system, "value": value, "unit": unit}
    rec.update(extra)
    print(json.dumps(rec), flush=True)


# --------------------------------------------------------------------------- timing
def epoch_batches(n_examples, batch_size, fraction):
    """(n_run, n_total): the batches run for `fraction` of an epoch, and in a whole epoch."""
    n_total = math.ceil(n_examples / batch_size)
    n_run = n_total if fraction >= 1.0 else max(1, min(n_total, round(n_total * fraction)))
    return n_run, n_total


def timed(fn):
    """Seconds that fn() takes, after a gc.collect()."""
    gc.collect()
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def time_batches(predict, X, batch_size):
    """Seconds to predict(X[i:i + batch_size]) over all of X, after a 4-batch warm-up."""
    for i in range(0, 4 * batch_size, batch_size):  # warm-up
        predict(X[i:i + batch_size])
    gc.collect()
    t0 = time.perf_counter()
    for i in range(0, X.shape[0], batch_size):
        predict(X[i:i + batch_size])
    return time.perf_counter() - t0


def percentile(sorted_vals, q):
    """Nearest-rank percentile on an ascending list."""
    k = max(0, min(len(sorted_vals) - 1, math.ceil(q / 100.0 * len(sorted_vals)) - 1))
    return sorted_vals[k]


def time_latency(predict, X, n, warmup):
    """(p50, p99) in microseconds of predict(one row of X), over n calls after `warmup` calls."""
    m = X.shape[0]
    for i in range(warmup):
        predict(X[i % m:i % m + 1])
    gc.collect()
    times = []
    clock = time.perf_counter_ns
    for i in range(n):
        j = i % m
        x = X[j:j + 1]
        t0 = clock()
        predict(x)
        times.append(clock() - t0)
    times.sort()
    return percentile(times, 50) / 1000.0, percentile(times, 99) / 1000.0


# --------------------------------------------------------------------------- figures
def run_figures(args, system, threads, log, train_epoch, new_model, accuracy, predict_seconds, latency):
    """Measures and emits args.figures, in the order of ALL_FIGURES.

    train_epoch(batch_size) -> (seconds, trained model, n_run, n_total)
    new_model() -> an untrained model (when no training figure was asked for)
    accuracy(model) -> test-set accuracy in [0, 1]
    predict_seconds(model, batch_size) -> seconds to predict the test set
    latency(model) -> (p50, p99) in microseconds, batch 1
    Every record carries threads=`threads`.
    """
    figs = args.figures
    trained = None
    for bs in (128, 32):
        fig = f"train_epoch_b{bs}"
        want_acc = bs == 128 and "accuracy_1epoch" in figs and args.fraction >= 1.0
        if fig not in figs and not want_acc:
            continue
        log(f"{system}: {fig} (fraction {args.fraction})")
        secs, model, n_run, n_total = train_epoch(bs)
        if fig in figs:
            emit(fig, system, secs, "s", threads=threads, batches=n_run, batches_per_epoch=n_total)
        if bs == 128:
            trained = model
            if want_acc:
                emit("accuracy_1epoch", system, accuracy(model), "fraction", threads=threads)
    if "accuracy_1epoch" in figs and args.fraction < 1.0:
        log("accuracy_1epoch skipped (only measured when --fraction 1)")
    model = trained if trained is not None else new_model()
    for bs in (128, 1024):
        fig = f"predict10k_b{bs}"
        if fig in figs:
            log(f"{system}: {fig}")
            emit(fig, system, predict_seconds(model, bs), "s", threads=threads)
    if "latency_b1_p50" in figs or "latency_b1_p99" in figs:
        log(f"{system}: latency_b1 (n={args.latency_n}, warm-up {args.latency_warmup})")
        p50, p99 = latency(model)
        if "latency_b1_p50" in figs:
            emit("latency_b1_p50", system, p50, "us", threads=threads, n=args.latency_n)
        if "latency_b1_p99" in figs:
            emit("latency_b1_p99", system, p99, "us", threads=threads, n=args.latency_n)


# The splitmix64 stream the benchmarks draw their synthetic data from (bench/bench_common.hpp's
# SplitMix64 is the C++ side: the same numbers).
M64 = (1 << 64) - 1


class SplitMix64:
    def __init__(self, seed):
        self.state = seed & M64

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & M64
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
        return z ^ (z >> 31)
