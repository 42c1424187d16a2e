#!/usr/bin/python3
"""GEMM-only lower bound for `make bench` (system "bound"): the time the Fashion-MNIST MLP's
matrix products alone take with the fastest sgemm on this machine, nothing else.

Every product of the MLP (784-512-512-10) is timed at its actual shape and transposition
(torch's layout: weights (n_out, n_in), Y = X.W^T, dX = dY.W, dW = dY^T.X), with each sgemm
this interpreter can reach -- numpy (the system BLAS: OpenBLAS when Debian's libblas.so.3
points there), torch.mm and blis (Thinc's gemm) -- on one thread; per shape the fastest
library's best time counts. The fixed Python cost of one call (the same call on 1x1 operands)
is subtracted, so a bound is the products' time alone. Per training step: 3 forward products
and 5 backward ones (no dX for the input layer); per prediction: the 3 forward products.

Figures (each the lower limit of a figure of the other systems, see anchor_common.BOUND_OF):
  gemm_bound_epoch_b128, gemm_bound_epoch_b32  s   one epoch of 60000 (last batch partial)
  gemm_bound_predict10k                        s   the 10000 test rows at batch 128
  gemm_bound_latency_b1                        us  one batch-1 forward pass

Prints one JSON record per line on stdout: {"figure", "system": "bound", "value", "unit",
"threads", "gflops", "libs"} (gflops: the rate the bound implies; libs: fastest library per
product). Accepts the anchors' options; --figures takes bound names or the figures they bound
(train_epoch_b128 -> gemm_bound_epoch_b128, ...); --fraction below 1 shortens each timing;
--threads N > 0 pins the BLAS thread pools to N (run.py passes 1); --latency-n is ignored.
"""
# --- Thread limits must be in the environment before numpy/torch (and their BLAS) load. ---
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import anchor_common as common  # noqa: E402  (standard library only)

# One thread unless --threads says otherwise (the anchors default to the library's choice).
THREADS = common.threads_from_argv(sys.argv[1:]) \
    if any(a == "--threads" or a.startswith("--threads=") for a in sys.argv[1:]) else 1
common.setup_threads(["--threads", str(THREADS)])

import argparse  # noqa: E402
import math  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from anchor_common import BOUND_FIGURES, BOUND_OF, N_HIDDEN  # noqa: E402

log = common.make_log("gemm_bound")

WIDTHS = [784, N_HIDDEN, N_HIDDEN, 10]
N_TRAIN, N_TEST = 60000, 10000
PREDICT_BATCH = 128
REPEATS = 5


def parse_args(argv=None, figures=None, bound_of=None, description=None):
    """The anchors' arguments; figures / bound_of: another bound's (tok2vec_bound.py's)."""
    figures = BOUND_FIGURES if figures is None else figures
    bound_of = BOUND_OF if bound_of is None else bound_of
    p = argparse.ArgumentParser(description=description or __doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--fraction", type=float, default=1.0, help="below 1: shorter timings (default 1.0)")
    p.add_argument("--latency-n", type=int, default=2000, help="ignored (accepted like the anchors)")
    p.add_argument("--figures", default="", help="comma-separated subset of: " + ",".join(figures))
    p.add_argument("--threads", type=int, default=1, help="BLAS threads (default 1; 0 = library default)")
    args = p.parse_args(argv)
    wanted = [f.strip() for f in args.figures.split(",") if f.strip()]
    to_bound = {v: k for k, v in bound_of.items()}
    figs = {f if f in figures else to_bound.get(f) for f in wanted} - {None}
    args.figures = [f for f in figures if f in figs] if wanted else list(figures)
    if not (0.0 < args.fraction <= 1.0):
        p.error("--fraction must be in (0, 1]")
    return args


# --------------------------------------------------------------------------- products
def step_products(batch, train):
    """(name, m, k, n, form) of one step's products; form says how operands are laid out."""
    prods = []
    for i, (n_in, n_out) in enumerate(zip(WIDTHS[:-1], WIDTHS[1:])):
        prods.append((f"fwd{i}", batch, n_in, n_out, "A.B^T"))  # X (b, in) . W^T, W (out, in)
        if train:
            prods.append((f"dW{i}", n_out, batch, n_in, "A^T.B"))  # dY^T (out, b) . X (b, in)
            if i > 0:
                prods.append((f"dX{i}", batch, n_out, n_in, "A.B"))  # dY (b, out) . W (out, in)
    return prods


def operands(m, k, n, form, rng):
    """(A, B, out) with A, B C-contiguous as the layers hold them and out (m, n)."""
    shape_a = {"A.B^T": (m, k), "A^T.B": (k, m), "A.B": (m, k)}[form]
    shape_b = {"A.B^T": (n, k), "A^T.B": (k, n), "A.B": (k, n)}[form]
    a = rng.standard_normal(shape_a, dtype=np.float32)
    b = rng.standard_normal(shape_b, dtype=np.float32)
    return a, b, np.empty((m, n), dtype=np.float32)


def candidates():
    """{name: make(form, A, B, out) -> zero-argument call computing out = op(A).op(B)}."""
    found = {}

    def numpy_call(form, a, b, out):
        x = a.T if form == "A^T.B" else a
        y = b.T if form == "A.B^T" else b
        return lambda: np.matmul(x, y, out=out)
    found["numpy"] = numpy_call
    try:
        import torch
        if THREADS > 0:
            torch.set_num_threads(THREADS)

        def torch_call(form, a, b, out):
            ta, tb, to = torch.from_numpy(a), torch.from_numpy(b), torch.from_numpy(out)
            x = ta.t() if form == "A^T.B" else ta
            y = tb.t() if form == "A.B^T" else tb
            return lambda: torch.mm(x, y, out=to)
        found["torch"] = torch_call
    except ImportError as e:
        log(f"torch not importable ({e}); without it")
    try:
        from blis.py import gemm as blis_gemm

        def blis_call(form, a, b, out):
            t1, t2 = form == "A^T.B", form == "A.B^T"
            return lambda: blis_gemm(a, b, out=out, trans1=t1, trans2=t2, beta=0.0)
        found["blis"] = blis_call
    except ImportError as e:
        log(f"blis not importable ({e}); without it")
    return found


def best_seconds(call, target):
    """Best mean seconds per call over REPEATS loops of about `target` seconds each."""
    call()
    t0 = time.perf_counter()
    call()
    n = max(1, int(target / max(time.perf_counter() - t0, 1e-7)))
    best = math.inf
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        for _ in range(n):
            call()
        best = min(best, (time.perf_counter() - t0) / n)
    return best


class Timer:
    """Times products once per shape; remembers the fastest library per shape."""

    def __init__(self, target):
        self.target = target
        self.libs = candidates()
        self.rng = np.random.default_rng(0)
        self.cache = {}
        # A call's fixed cost (Python, argument checks, dispatch): the same call on 1x1 operands.
        self.overhead = {name: min(best_seconds(make(f, *operands(1, 1, 1, f, self.rng)), 0.01)
                                   for f in ("A.B^T", "A^T.B", "A.B"))
                         for name, make in self.libs.items()}
        log("per-call overhead subtracted: " +
            ", ".join(f"{k} {v * 1e6:.2f} us" for k, v in self.overhead.items()))

    def product(self, m, k, n, form):
        key = (m, k, n, form)
        if key not in self.cache:
            a, b, out = operands(m, k, n, form, self.rng)
            times = {name: max(0.0, best_seconds(make(form, a, b, out), self.target) - self.overhead[name])
                     for name, make in self.libs.items()}
            lib = min(times, key=times.get)
            self.cache[key] = (times[lib], lib)
            log(f"  {m}x{k}x{n} {form}: " + ", ".join(f"{k2} {v * 1e6:.1f} us" for k2, v in times.items())
                + f" -> {lib}")
        return self.cache[key]

    def pass_seconds(self, batch, train):
        """(seconds, flops, {product: lib}) of one step / prediction pass at this batch size."""
        secs, flops, libs = 0.0, 0, {}
        for name, m, k, n, form in step_products(batch, train):
            t, lib = self.product(m, k, n, form)
            secs += t
            flops += 2 * m * k * n
            libs[name] = lib
        return secs, flops, libs

    def over(self, n_rows, batch, train):
        """(seconds, flops, libs) for all of n_rows at `batch` (the last batch may be partial)."""
        full, rest = divmod(n_rows, batch)
        secs, flops, libs = self.pass_seconds(batch, train)
        secs, flops = secs * full, flops * full
        if rest:
            s2, f2, _ = self.pass_seconds(rest, train)
            secs, flops = secs + s2, flops + f2
        return secs, flops, libs


def main(argv=None):
    args = parse_args(argv)
    threads = THREADS if THREADS > 0 else "default"
    timer = Timer(target=0.02 * max(args.fraction, 0.25))
    log(f"sgemm candidates: {', '.join(timer.libs)}; {threads} thread(s)")
    for fig in args.figures:
        log(f"bound: {fig}")
        if fig.startswith("gemm_bound_epoch_b"):
            secs, flops, libs = timer.over(N_TRAIN, int(fig.rsplit("_b", 1)[1]), train=True)
            value, unit = secs, "s"
        elif fig == "gemm_bound_predict10k":
            secs, flops, libs = timer.over(N_TEST, PREDICT_BATCH, train=False)
            value, unit = secs, "s"
        else:  # gemm_bound_latency_b1
            secs, flops, libs = timer.pass_seconds(1, train=False)
            value, unit = secs * 1e6, "us"
        common.emit(fig, "bound", value, unit, threads=threads,
                    gflops=round(flops / secs / 1e9, 1) if secs > 0 else None, libs=libs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
