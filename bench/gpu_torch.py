#!/usr/bin/python3
"""PyTorch anchors of `make bench-gpu` (docs/cuda.md, "The GPU benchmark"): the figures of
bench/gpu_bench.cpp in PyTorch eager and with torch.compile, on one device.

  fmnist_train_epoch_b128   s        the Fashion-MNIST MLP of bench/bench_torch.py, one epoch at
                                     batch 128 (CrossEntropyLoss on the logits, Adam 0.001)
  fmnist_predict10k_b1024   s        the 10k test images, batches of 1024, softmax included
  mlp{64,128}_train_step_bN ms       a 4-layer MLP (Linear+ReLU x3, Linear 10 + softmax) at batch
  mlp{64,128}_predict_bN    ms       N = 2^16 (--rows): one training step / predict, median of 20
  tok2vec_train_wps         words/s  bench/tok2vec_torch.py's model (tagger_class) and data
  tok2vec_predict_wps       words/s

The data is on the device before the clock starts; each figure ends with a synchronisation.
Prints JSON lines {"figure", "system": "pytorch-eager"|"pytorch-compile", "value", "unit",
"device"}; with --device cpu (a smoke test of this script where no GPU is) the systems are
"pytorch-eager-cpu-smoke", ... : they are no GPU figures.

Options: --device cuda|cpu  --modes eager,compile  --figures a,b  --fraction F  --rows N  --reps N
Exit status: 3 when PyTorch is not importable, 77 when --device cuda finds no GPU.
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import anchor_common as common  # noqa: E402  (standard library only)

log = common.make_log("gpu_torch")

FIGURES = ["fmnist_train_epoch_b128", "fmnist_predict10k_b1024", "mlp64_train_step", "mlp64_predict",
           "mlp128_train_step", "mlp128_predict", "tok2vec_train_wps", "tok2vec_predict_wps"]


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--modes", default="eager,compile")
    ap.add_argument("--figures", default="", help="comma-separated (default: all)")
    ap.add_argument("--fraction", type=float, default=1.0, help="share of the epoch / tok2vec batches timed")
    ap.add_argument("--rows", type=int, default=65536, help="the wide MLPs' batch (2^16)")
    ap.add_argument("--reps", type=int, default=20)
    return ap.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    modules = common.import_torch(log)
    if modules is None:
        return 3
    torch, F, nn = modules
    if args.device == "cuda" and not torch.cuda.is_available():
        log("no CUDA GPU is visible to PyTorch; nothing measured")
        return 77
    dev = torch.device(args.device)
    sync = torch.cuda.synchronize if args.device == "cuda" else (lambda: None)
    wanted = [f for f in args.figures.split(",") if f]

    def want(fig):
        return not wanted or any(fig.startswith(w) or w.startswith(fig) for w in wanted)

    smoke = "" if args.device == "cuda" else "-cpu-smoke"
    extra = {"device": torch.cuda.get_device_name(0) if args.device == "cuda" else "cpu", "torch": torch.__version__}

    def put(fig, system, value, unit):
        print(json.dumps({"figure": fig, "system": system, "value": value, "unit": unit, **extra}), flush=True)

    def median_ms(fn, reps):
        fn()
        sync()
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            fn()
            sync()
            times.append((time.perf_counter() - t0) * 1e3)
        times.sort()
        return times[len(times) // 2]

    for mode in [m for m in args.modes.split(",") if m]:
        system = f"pytorch-{mode}{smoke}"
        if mode == "compile" and not hasattr(torch, "compile"):
            log(f"torch {torch.__version__} has no torch.compile (PyTorch 2.0 and later): no {system} figures")
            continue
        wrap = torch.compile if mode == "compile" else (lambda m: m)
        torch.manual_seed(0)

        # --- Fashion-MNIST (bench/bench_torch.py's model)
        if want("fmnist_train_epoch_b128") or want("fmnist_predict10k_b1024"):
            import fashion_mnist
            from anchor_common import DROPOUT, LEARN_RATE, N_HIDDEN
            Xtr, ytr, Xte, _ = (torch.from_numpy(a).to(dev) for a in fashion_mnist.load())
            model = nn.Sequential(nn.Linear(784, N_HIDDEN), nn.ReLU(), nn.Dropout(DROPOUT),
                                  nn.Linear(N_HIDDEN, N_HIDDEN), nn.ReLU(), nn.Dropout(DROPOUT),
                                  nn.Linear(N_HIDDEN, 10)).to(dev)
            fwd = wrap(model)
            opt = torch.optim.Adam(model.parameters(), lr=LEARN_RATE)
            perm = torch.randperm(Xtr.shape[0], generator=torch.Generator().manual_seed(0)).to(dev)
            n_total = Xtr.shape[0] // 128
            n_run = max(1, int(n_total * args.fraction))
            batches = [(Xtr[perm[b * 128:(b + 1) * 128]], ytr[perm[b * 128:(b + 1) * 128]]) for b in range(n_run)]

            def train_step(xb, yb):
                opt.zero_grad(set_to_none=True)
                F.cross_entropy(fwd(xb), yb).backward()
                opt.step()

            if want("fmnist_train_epoch_b128"):
                model.train()
                for xb, yb in batches[:3]:  # warm-up (and compilation)
                    train_step(xb, yb)
                sync()
                t0 = time.perf_counter()
                for xb, yb in batches:
                    train_step(xb, yb)
                sync()
                put("fmnist_train_epoch_b128", system, (time.perf_counter() - t0) * n_total / n_run, "s")
            if want("fmnist_predict10k_b1024"):
                model.eval()
                with torch.inference_mode():
                    chunks = [Xte[i:i + 1024] for i in range(0, Xte.shape[0], 1024)]
                    for c in chunks[:2]:
                        torch.softmax(fwd(c), dim=1)
                    best = float("inf")
                    for _ in range(3):
                        sync()
                        t0 = time.perf_counter()
                        for c in chunks:
                            torch.softmax(fwd(c), dim=1)
                        sync()
                        best = min(best, time.perf_counter() - t0)
                put("fmnist_predict10k_b1024", system, best, "s")

        # --- the wide MLPs at batch 2^16
        for width in (64, 128):
            tag, b = f"mlp{width}", f"_b{args.rows}"
            if not (want(tag + "_train_step") or want(tag + "_predict")):
                continue
            g = torch.Generator().manual_seed(width)
            X = (torch.rand(args.rows, width, generator=g) * 2 - 1).to(dev)
            y = torch.randint(0, 10, (args.rows,), generator=g).to(dev)
            model = nn.Sequential(nn.Linear(width, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(),
                                  nn.Linear(width, width), nn.ReLU(), nn.Linear(width, 10)).to(dev)
            fwd = wrap(model)
            opt = torch.optim.Adam(model.parameters(), lr=0.001)

            def step():
                opt.zero_grad(set_to_none=True)
                F.cross_entropy(fwd(X), y).backward()
                opt.step()

            if want(tag + "_train_step"):
                model.train()
                step()  # (compilation)
                put(tag + "_train_step" + b, system, median_ms(step, args.reps), "ms")
            if want(tag + "_predict"):
                model.eval()
                with torch.inference_mode():
                    put(tag + "_predict" + b, system, median_ms(lambda: torch.softmax(fwd(X), dim=1), args.reps), "ms")

        # --- tok2vec (bench/tok2vec_torch.py's model, on the device)
        if want("tok2vec_train_wps") or want("tok2vec_predict_wps"):
            import numpy as np
            import tok2vec_data as data
            import tok2vec_torch
            tagger = tok2vec_torch.tagger_class(torch, nn, F)().to(dev)
            fwd = wrap(tagger.logits) if mode == "compile" else tagger.logits
            docs_l, tags_l = data.generate()
            docs = [np.asarray(d, dtype="i").reshape(len(d), data.N_FEATURES) for d in docs_l]
            nb = data.n_batches(args.fraction)
            spans = data.batches(nb * data.BATCH)
            batches = []
            for s, e in spans:
                ids = torch.from_numpy(np.concatenate(docs[s:e]).astype(np.int64)).to(dev)
                lengths = torch.tensor([len(d) for d in docs[s:e]], device=dev)
                tags = torch.from_numpy(np.concatenate([np.asarray(t, dtype=np.int64) for t in tags_l[s:e]])).to(dev)
                batches.append((ids, lengths, [len(d) for d in docs[s:e]], tags))
            words = sum(len(d) for s, e in spans for d in docs[s:e])
            opt = torch.optim.Adam(tagger.parameters(), lr=data.LEARN_RATE)
            if want("tok2vec_train_wps"):
                tagger.train()

                def tstep(k):
                    ids, lengths, _, tags = batches[k]
                    opt.zero_grad(set_to_none=True)
                    F.cross_entropy(fwd(ids, lengths), tags).backward()
                    opt.step()

                for k in range(min(2, nb)):
                    tstep(k)
                sync()
                t0 = time.perf_counter()
                for k in range(nb):
                    tstep(k)
                sync()
                put("tok2vec_train_wps", system, words / (time.perf_counter() - t0), "words/s")
            if want("tok2vec_predict_wps"):
                tagger.eval()
                with torch.inference_mode():
                    def predict(batch):
                        ids, lengths, ls, _ = batch
                        return torch.softmax(fwd(ids, lengths), dim=1).split(ls)
                    for bt in batches[:2]:
                        predict(bt)
                    best = float("inf")
                    for _ in range(data.PREDICT_PASSES):
                        sync()
                        t0 = time.perf_counter()
                        for bt in batches:
                            predict(bt)
                        sync()
                        best = min(best, time.perf_counter() - t0)
                put("tok2vec_predict_wps", system, words / best, "words/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
