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

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import anchor_common as common  # noqa: E402  (standard library only)

common.setup_threads(sys.argv[1:])

# --- Now the heavy imports. ---
import contextlib  # noqa: E402

import numpy as np  # noqa: E402

import fashion_mnist  # noqa: E402

from thinc.api import Adam, NumpyOps, Relu, Softmax, chain, fix_random_seed, set_current_ops  # noqa: E402

from anchor_common import DROPOUT, LEARN_RATE, N_HIDDEN  # noqa: E402

log = common.make_log("bench_thinc")


def parse_args(argv=None):
    return common.parse_args(argv, description=__doc__, threads_help="threads (0 = library default)")


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
    n_run, n_total = common.epoch_batches(X.shape[0], batch_size, fraction)
    # Warm-up on a throw-away model so allocators / blis buffers are primed.
    warm = make_model(X[:5], Y[:5])
    train_batches(warm, Adam(LEARN_RATE), X, Y, batch_size, 3, np.random.default_rng(seed + 1))
    del warm
    fix_random_seed(seed)
    model = make_model(X[:5], Y[:5])
    optimizer = Adam(LEARN_RATE)
    rng = np.random.default_rng(seed)
    elapsed = common.timed(lambda: train_batches(model, optimizer, X, Y, batch_size, n_run, rng))
    return elapsed * n_total / n_run, model, n_run, n_total


def predict_all(model, X, batch_size):
    return np.concatenate([model.predict(X[i:i + batch_size]) for i in range(0, X.shape[0], batch_size)])


def time_predict(model, X, batch_size):
    return common.time_batches(model.predict, X, batch_size)


def time_latency(model, X, n, warmup):
    return common.time_latency(model.predict, X, n, warmup)


def main(argv=None):
    args = parse_args(argv)
    system = common.system_name("thinc", args.threads)
    threads_field = args.threads if args.threads > 0 else "default"
    set_current_ops(NumpyOps())
    fix_random_seed(args.seed)
    log(f"loading Fashion-MNIST from {fashion_mnist.data_dir()}")
    X_train, y_train, X_test, y_test = fashion_mnist.load()
    Y_train = fashion_mnist.one_hot(y_train)

    def accuracy(model):
        pred = predict_all(model, X_test, 1024).argmax(axis=1)
        return float((pred == y_test).mean())

    with thread_limit_context(args.threads):
        common.run_figures(
            args, system, threads_field, log,
            train_epoch=lambda bs: time_train_epoch(X_train, Y_train, bs, args.fraction, args.seed),
            new_model=lambda: make_model(X_train[:5], Y_train[:5]),
            accuracy=accuracy,
            predict_seconds=lambda model, bs: time_predict(model, X_test, bs),
            latency=lambda model: time_latency(model, X_test, args.latency_n, args.latency_warmup),
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
