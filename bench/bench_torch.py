#!/usr/bin/python3
"""PyTorch anchor for `make bench`: the same MLP as Thinc's intro example.

Model: Linear(784,512) ReLU Dropout(0.2) Linear(512,512) ReLU Dropout(0.2) Linear(512,10),
torch.optim.Adam(lr=0.001). Training uses CrossEntropyLoss on the logits: the final
Softmax is folded into the loss, which is the idiomatic (and numerically stable) PyTorch
form and is mathematically the same as Thinc's Softmax + categorical cross-entropy
(mean over the batch, i.e. gradient (softmax - onehot) / batch_size).
Prediction runs under torch.inference_mode() with model.eval() and INCLUDES the softmax.

Prints one JSON record per line on stdout:
    {"figure": ..., "system": "pytorch"|"pytorch-mt", "value": ..., "unit": ...}

Options: --fraction F  --latency-n N  --latency-warmup N  --figures a,b,c
         --threads N (0 = library default)  --seed S
"""
# --- Thread limits must be in the environment before numpy/torch (and their BLAS) load. ---
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
    # torch.set_num_threads() below covers ATen/OpenMP; these also pin the BLAS that
    # torch's Linear layers call (OpenBLAS keeps its own thread pool).
    for _var in THREAD_ENV_VARS:
        os.environ[_var] = str(_N_THREADS)

import argparse  # noqa: E402
import gc  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import time  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fashion_mnist  # noqa: E402

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
    p.add_argument("--threads", type=int, default=0, help="torch.set_num_threads(N); 0 = library default")
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
    print(f"[bench_torch] {msg}", file=sys.stderr, flush=True)


def emit(figure, system, value, unit, **extra):
    rec = {"figure": figure, "system": system, "value": value, "unit": unit}
    rec.update(extra)
    print(json.dumps(rec), flush=True)


def main(argv=None):
    args = parse_args(argv)
    try:
        import torch
        from torch import nn
    except ImportError as e:
        log(f"PyTorch is not importable ({e}); nothing to measure")
        return 3

    if args.threads > 0:
        torch.set_num_threads(args.threads)
    n_threads = torch.get_num_threads()
    system = "pytorch" if args.threads == 1 else ("pytorch-mt" if args.threads <= 0 else f"pytorch-t{args.threads}")
    torch.manual_seed(args.seed)

    def make_model():
        return nn.Sequential(
            nn.Linear(784, N_HIDDEN), nn.ReLU(), nn.Dropout(DROPOUT),
            nn.Linear(N_HIDDEN, N_HIDDEN), nn.ReLU(), nn.Dropout(DROPOUT),
            nn.Linear(N_HIDDEN, 10),
        )

    # Softmax is folded into the loss (CrossEntropyLoss takes logits): idiomatic PyTorch.
    loss_fn = nn.CrossEntropyLoss()

    log(f"loading Fashion-MNIST from {fashion_mnist.data_dir()} (torch {torch.__version__}, "
        f"{n_threads} intra-op thread(s))")
    X_train_np, y_train_np, X_test_np, y_test_np = fashion_mnist.load()
    X_train = torch.from_numpy(X_train_np)
    y_train = torch.from_numpy(y_train_np)
    X_test = torch.from_numpy(X_test_np)
    y_test = torch.from_numpy(y_test_np)

    def train_batches(model, opt, batch_size, n_batches, gen):
        model.train()
        perm = torch.randperm(X_train.shape[0], generator=gen)
        for b in range(n_batches):
            idx = perm[b * batch_size:(b + 1) * batch_size]
            xb = X_train[idx]
            yb = y_train[idx]
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(model(xb), yb)
            loss.backward()
            opt.step()

    def time_train_epoch(batch_size):
        n_total = math.ceil(X_train.shape[0] / batch_size)
        n_run = n_total if args.fraction >= 1.0 else max(1, min(n_total, round(n_total * args.fraction)))
        warm = make_model()  # throw-away warm-up model (allocator, oneDNN/BLAS kernels)
        train_batches(warm, torch.optim.Adam(warm.parameters(), lr=LEARN_RATE), batch_size, 3,
                      torch.Generator().manual_seed(args.seed + 1))
        del warm
        torch.manual_seed(args.seed)
        model = make_model()
        opt = torch.optim.Adam(model.parameters(), lr=LEARN_RATE)
        gen = torch.Generator().manual_seed(args.seed)
        gc.collect()
        t0 = time.perf_counter()
        train_batches(model, opt, batch_size, n_run, gen)
        elapsed = time.perf_counter() - t0
        return elapsed * n_total / n_run, model, n_run, n_total

    def predict(model, x):
        return torch.softmax(model(x), dim=1)

    def predict_all(model, X, batch_size):
        model.eval()
        with torch.inference_mode():
            return torch.cat([predict(model, X[i:i + batch_size]) for i in range(0, X.shape[0], batch_size)])

    def time_predict(model, X, batch_size):
        model.eval()
        with torch.inference_mode():
            for i in range(0, 4 * batch_size, batch_size):  # warm-up
                predict(model, X[i:i + batch_size])
            gc.collect()
            t0 = time.perf_counter()
            for i in range(0, X.shape[0], batch_size):
                predict(model, X[i:i + batch_size])
            return time.perf_counter() - t0

    def percentile(sorted_vals, q):
        k = max(0, min(len(sorted_vals) - 1, math.ceil(q / 100.0 * len(sorted_vals)) - 1))
        return sorted_vals[k]

    def time_latency(model, X, n, warmup):
        m = X.shape[0]
        model.eval()
        times = []
        clock = time.perf_counter_ns
        with torch.inference_mode():
            for i in range(warmup):
                predict(model, X[i % m:i % m + 1])
            gc.collect()
            for i in range(n):
                j = i % m
                x = X[j:j + 1]
                t0 = clock()
                predict(model, x)
                times.append(clock() - t0)
        times.sort()
        return percentile(times, 50) / 1000.0, percentile(times, 99) / 1000.0

    figs = args.figures
    trained = None
    for bs in (128, 32):
        fig = f"train_epoch_b{bs}"
        want_acc = bs == 128 and "accuracy_1epoch" in figs and args.fraction >= 1.0
        if fig not in figs and not want_acc:
            continue
        log(f"{system}: {fig} (fraction {args.fraction})")
        secs, model, n_run, n_total = time_train_epoch(bs)
        if fig in figs:
            emit(fig, system, secs, "s", threads=n_threads, batches=n_run, batches_per_epoch=n_total)
        if bs == 128:
            trained = model
            if want_acc:
                pred = predict_all(model, X_test, 1024).argmax(dim=1)
                emit("accuracy_1epoch", system, float((pred == y_test).float().mean()), "fraction",
                     threads=n_threads)
    if "accuracy_1epoch" in figs and args.fraction < 1.0:
        log("accuracy_1epoch skipped (only measured when --fraction 1)")
    model = trained if trained is not None else make_model()
    for bs in (128, 1024):
        fig = f"predict10k_b{bs}"
        if fig in figs:
            log(f"{system}: {fig}")
            emit(fig, system, time_predict(model, X_test, bs), "s", threads=n_threads)
    if "latency_b1_p50" in figs or "latency_b1_p99" in figs:
        log(f"{system}: latency_b1 (n={args.latency_n}, warm-up {args.latency_warmup})")
        p50, p99 = time_latency(model, X_test, args.latency_n, args.latency_warmup)
        if "latency_b1_p50" in figs:
            emit("latency_b1_p50", system, p50, "us", threads=n_threads, n=args.latency_n)
        if "latency_b1_p99" in figs:
            emit("latency_b1_p99", system, p99, "us", threads=n_threads, n=args.latency_n)
    return 0


if __name__ == "__main__":
    sys.exit(main())
