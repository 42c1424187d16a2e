#!/usr/bin/python3
"""Anchors of the LSTM benchmark (bench/run.py --lstm): Thinc 8.1's LSTM (thinc.api.LSTM, its
native one, NumpyOps) and PyTorch's nn.LSTM (CPU), on the batches of bench/lstm_bench.cpp (the
same generator: 8 batches of 32 sequences of 10-40 steps, width 128). Configurations: LSTM
nO = nI = 128 and BiLSTM (64 hiddens per direction), depth 1 and 2. Figures, for C in lstm_d1,
lstm_d2, bilstm_d1, bilstm_d2, in tokens/s, each the median of the timed passes (--passes,
default 3) over the 8 batches after one warm-up pass:
  C_train_tps    forward + backward (dY = Y / 32) + Adam(0.001) step, a batch a step
  C_predict_tps  the forward alone, a batch a call (Thinc: model.predict; PyTorch: no_grad)

Thinc: Padded in, Padded out, as tenon. (Thinc 8.1's LSTM backprop returns wrong gradients --
docs/layers.md -- but its cost is what is measured.) PyTorch: the padded (T, B, 128) tensor
through pack_padded_sequence, nn.LSTM(128, nH, depth, bidirectional), pad_packed_sequence,
i.e. Padded -> Padded as well; torch.optim.Adam(lr=0.001).

  lstm_anchors.py --system thinc|pytorch [--threads N] [--passes P] [--configs a,b] [--check]
--threads N > 0 pins the BLAS / OpenMP pools (environment) and torch.set_num_threads(N);
0 leaves the library defaults. Prints JSON lines {"figure", "system", "value", "unit"}; the
system is "thinc" / "pytorch" for 1 thread, "thinc-mt" / "pytorch-mt" for the defaults.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import anchor_common as common  # noqa: E402

common.setup_threads(sys.argv[1:])

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

SEED = 20261203
BATCHES, BATCH, MIN_LEN, MAX_LEN, WIDTH = 8, 32, 10, 40, 128
CONFIGS = [("lstm_d1", False, 1), ("lstm_d2", False, 2), ("bilstm_d1", True, 1), ("bilstm_d2", True, 2)]


SplitMix64 = common.SplitMix64


def generate():
    """Per batch, its sequences as (len, 128) float32 arrays, in the generator's order."""
    rng = SplitMix64(SEED)
    lengths = [[MIN_LEN + rng.next() % (MAX_LEN - MIN_LEN + 1) for _ in range(BATCH)] for _ in range(BATCHES)]
    total = sum(map(sum, lengths)) * WIDTH
    k = np.arange(total, dtype=np.uint64)
    values = (((k * np.uint64(2654435761)) & np.uint64(0xFFFFFFFF)).astype(np.float64) / 2147483648.0 - 1.0)
    values = values.astype(np.float32)
    checksum = float(values.astype(np.float64).sum())
    batches, at = [], 0
    for ls in lengths:
        seqs = []
        for n in ls:
            seqs.append(values[at:at + n * WIDTH].reshape(n, WIDTH))
            at += n * WIDTH
        batches.append(seqs)
    return batches, checksum


def to_padded_arrays(seqs):
    """Thinc's list2padded layout: sorted by decreasing length (ties: the later first), time-major."""
    order = sorted(range(len(seqs)), key=lambda i: (len(seqs[i]), i), reverse=True)
    T = len(seqs[order[0]])
    data = np.zeros((T, len(seqs), WIDTH), dtype="f")
    for b, i in enumerate(order):
        data[:len(seqs[i]), b] = seqs[i]
    lengths = np.asarray([len(seqs[i]) for i in order], dtype="int32")
    size_at_t = np.asarray([(lengths > t).sum() for t in range(T)], dtype="int32")
    return data, size_at_t, lengths, np.asarray(order, dtype="int32")


THREADS = [1]  # the threads the system ran with (PyTorch's: torch.get_num_threads())


def emit(system, figure, value):
    print(json.dumps({"figure": figure, "system": system, "value": value, "unit": "tokens/s",
                      "threads": THREADS[0]}), flush=True)


def time_passes(f, passes):
    f()  # warm-up
    times = []
    for _ in range(passes):
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def run_thinc(batches, configs, passes, system, check):
    from thinc.api import LSTM, Adam, NumpyOps, Padded, fix_random_seed, set_current_ops

    set_current_ops(NumpyOps())
    fix_random_seed(0)
    padded = [Padded(*to_padded_arrays(seqs)) for seqs in batches]
    tokens = sum(int(p.lengths.sum()) for p in padded)
    for name, bi, depth in configs:
        model = LSTM(WIDTH, WIDTH, bi=bi, depth=depth)
        model.initialize(X=padded[0])
        opt = Adam(0.001)

        def train_pass():
            for X in padded:
                Y, backprop = model.begin_update(X)
                backprop(Padded(Y.data / BATCH, Y.size_at_t, Y.lengths, Y.indices))
                model.finish_update(opt)

        def predict_pass():
            for X in padded:
                model.predict(X)

        if check:
            train_pass()
            Y = model.predict(padded[0])
            print(json.dumps({"check": "ok", "config": name, "shape": list(Y.data.shape)}))
            continue
        emit(system, name + "_train_tps", tokens / time_passes(train_pass, passes))
        emit(system, name + "_predict_tps", tokens / time_passes(predict_pass, passes))


def run_torch(batches, configs, passes, system, threads, check):
    import torch
    from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

    if threads > 0:
        torch.set_num_threads(threads)
    THREADS[0] = torch.get_num_threads()
    sys.stderr.write(f"lstm_anchors: pytorch {torch.__version__}, {THREADS[0]} intra-op thread(s)\n")
    torch.manual_seed(0)
    padded = []
    for seqs in batches:
        data, _, lengths, _ = to_padded_arrays(seqs)
        padded.append((torch.from_numpy(data), torch.from_numpy(lengths.astype("int64"))))
    tokens = sum(int(lengths.sum()) for _, lengths in padded)
    for name, bi, depth in configs:
        model = torch.nn.LSTM(WIDTH, WIDTH // 2 if bi else WIDTH, depth, bidirectional=bi)
        opt = torch.optim.Adam(model.parameters(), lr=0.001)

        def forward(X, lengths):
            packed = pack_padded_sequence(X, lengths, enforce_sorted=True)
            out, _ = model(packed)
            return pad_packed_sequence(out)[0]

        def train_pass():
            for X, lengths in padded:
                opt.zero_grad()
                Y = forward(X, lengths)
                Y.backward(Y.detach() / BATCH)
                opt.step()

        def predict_pass():
            with torch.no_grad():
                for X, lengths in padded:
                    forward(X, lengths)

        if check:
            train_pass()
            with torch.no_grad():
                Y = forward(*padded[0])
            print(json.dumps({"check": "ok", "config": name, "shape": list(Y.shape)}))
            continue
        emit(system, name + "_train_tps", tokens / time_passes(train_pass, passes))
        emit(system, name + "_predict_tps", tokens / time_passes(predict_pass, passes))


def main(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--system", choices=["thinc", "pytorch"], required=True)
    p.add_argument("--threads", type=int, default=1, help="1 (default) or 0: the library's default")
    p.add_argument("--passes", type=int, default=3, help="timed passes (default 3)")
    p.add_argument("--configs", default="", help="comma-separated subset of " + ",".join(c[0] for c in CONFIGS))
    p.add_argument("--check", action="store_true")
    args = p.parse_args(argv)
    wanted = [c.strip() for c in args.configs.split(",") if c.strip()]
    configs = [c for c in CONFIGS if not wanted or c[0] in wanted]
    batches, checksum = generate()
    tokens = sum(len(s) for b in batches for s in b)
    system = common.system_name(args.system, args.threads)
    sys.stderr.write("lstm_anchors: %s, %d batches of %d, %d tokens, checksum %.6f\n"
                     % (system, BATCHES, BATCH, tokens, checksum))
    if args.system == "thinc":
        run_thinc(batches, configs, args.passes, system, args.check)
    else:
        run_torch(batches, configs, args.passes, system, args.threads, args.check)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
