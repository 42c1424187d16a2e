#!/usr/bin/python3
"""GEMM-only bound of the tok2vec benchmark (system "bound" in `make bench`): the rate the
tok2vec tagger's matrix products alone allow with the fastest single-thread sgemm on this
machine (bench/gemm_bound.py's Timer: numpy's BLAS, torch.mm and blis, each product at its
real shape and transposition, the fixed cost of a call subtracted), nothing else.

The products of one batch of W words in D docs (P = W + 4 * (D + 1) rows in the encoder:
with_array's padding), torch's layout (weights (n_out, n_in), Y = X.W^T):
  mixer     (W, 384) x (384, 288)
  encoder   4 x (P, 288) x (288, 288)
  head      (W, 96) x (96, 50)
Training adds dW = dY^T.X and dX = dY.W for each of the 6 (every layer passes a gradient
down: the mixer's goes to the embedding tables). The batch: 64 docs with the mean number of
words of the benchmark's 32 batches (bench/tok2vec_data.py).

Figures (each the limit of a figure of the other systems; run.py's BOUND_OF):
  gemm_bound_tok2vec_predict_wps    words/s   bounds tok2vec_predict_wps
  gemm_bound_tok2vec_train_wps      words/s   bounds tok2vec_train_wps
  gemm_bound_tok2vec_latency_doc20  us        bounds tok2vec_latency_doc20 (W = 20, D = 1)
Prints JSON lines {"figure", "system": "bound", "value", "unit", "threads", "gflops", "libs"}.
Accepts the anchors' options; --figures takes bound names or the figures they bound;
--fraction below 1 shortens each timing; --latency-n is ignored.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gemm_bound  # noqa: E402  (sets the thread limits from sys.argv before numpy loads)


import anchor_common as common  # noqa: E402
import tok2vec_data as data  # noqa: E402

log = common.make_log("tok2vec_bound")

BOUND_OF = {
    "gemm_bound_tok2vec_predict_wps": "tok2vec_predict_wps",
    "gemm_bound_tok2vec_train_wps": "tok2vec_train_wps",
    "gemm_bound_tok2vec_latency_doc20": "tok2vec_latency_doc20",
}
FIGURES = list(BOUND_OF)


def parse_args(argv=None):
    return gemm_bound.parse_args(argv, FIGURES, BOUND_OF, __doc__)


def products(words, docs, train):
    """(name, m, k, n, form) of one batch's products."""
    rows = words + data.WINDOW * data.DEPTH * (docs + 1)
    width, nP = data.WIDTH, data.PIECES
    layers = [("mixer", words, width * data.N_FEATURES, width * nP)]
    layers += [(f"enc{i}", rows, width * (2 * data.WINDOW + 1), width * nP) for i in range(data.DEPTH)]
    layers += [("head", words, width, data.N_TAGS)]
    prods = []
    for name, m, n_in, n_out in layers:
        prods.append((f"{name}.fwd", m, n_in, n_out, "A.B^T"))
        if train:
            prods.append((f"{name}.dW", n_out, m, n_in, "A^T.B"))
            prods.append((f"{name}.dX", m, n_out, n_in, "A.B"))
    return prods


def pass_seconds(timer, words, docs, train):
    secs, flops, libs = 0.0, 0, {}
    for name, m, k, n, form in products(words, docs, train):
        t, lib = timer.product(m, k, n, form)
        secs += t
        flops += 2 * m * k * n
        libs[name] = lib
    return secs, flops, libs


def main(argv=None):
    args = parse_args(argv)
    threads = gemm_bound.THREADS if gemm_bound.THREADS > 0 else "default"
    docs, _ = data.generate()
    n_b = data.N_DOCS // data.BATCH
    words = round(sum(len(d) for d in docs[:n_b * data.BATCH]) / n_b)
    timer = gemm_bound.Timer(target=0.02 * max(args.fraction, 0.25))
    log(f"sgemm candidates: {', '.join(timer.libs)}; {threads} thread(s); a batch: {words} words in {data.BATCH} docs")
    for fig in args.figures:
        log(f"bound: {fig}")
        if fig == "gemm_bound_tok2vec_latency_doc20":
            secs, flops, libs = pass_seconds(timer, data.LATENCY_LEN, 1, train=False)
            value, unit = secs * 1e6, "us"
        else:
            secs, flops, libs = pass_seconds(timer, words, data.BATCH, train=fig == "gemm_bound_tok2vec_train_wps")
            value, unit = words / secs, "words/s"
        common.emit(fig, "bound", value, unit, threads=threads,
                    gflops=round(flops / secs / 1e9, 1) if secs > 0 else None, libs=libs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
