#!/usr/bin/python3
"""PyTorch anchor of the tok2vec benchmark in `make bench`: the model of bench/tok2vec_data.py
(spaCy's default tagger tok2vec and a 50-tag softmax head) written with torch ops, computing
what Thinc's layers compute, step for step:

  HashEmbed     4 hash keys per id (Thinc: MurmurHash3 of the uint64 id; here a
                multiply-xorshift hash of the int64 id with 4 multipliers and the layer's seed,
                a few elementwise integer ops on (words, 4)), modulo the table's rows, the 4
                rows summed: F.embedding_bag(mode="sum") over (words, 4) keys; dense gradient
  mixer         concatenation (words, 384) -> Linear(384, 96*3) -> view(words, 96, 3).max(-1)
                -> LayerNorm(96)
  encoder       Thinc's with_array(pad=4): the docs' rows copied into one array with 4 zero rows
                before each doc and after the last; then 4 x residual(window concat [x[i-1],
                x[i], x[i+1]] (zero rows beyond the array's ends) -> Linear(288, 96*3) -> maxout
                -> LayerNorm); then the docs' rows gathered back
  head          Linear(96, 50) and a softmax (predict: the probabilities, split per doc;
                training: cross-entropy on the logits, mean over the words, the same gradient)

torch.optim.Adam(lr=0.001), as bench/bench_torch.py (no gradient clipping, no parameter
averages: Thinc's Adam does both). Prediction runs under torch.inference_mode().

Prints JSON lines {"figure", "system": "pytorch"|"pytorch-mt", "value", "unit"} on stdout.
Options: --fraction F --latency-n N --latency-warmup N --figures a,b,c --threads N --check
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import anchor_common as common  # noqa: E402  (standard library only)

common.setup_threads(sys.argv[1:])

import gc  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

import tok2vec_data as data  # noqa: E402

log = common.make_log("tok2vec_torch")

# Odd 62-bit multipliers, one per hash key (4 keys per id, as Thinc's HashEmbed).
HASH_MULT = [0x1F8E5D2B9C4A7E31, 0x2B7E151628AED2A7, 0x3C6EF372FE94F82B, 0x1B873593CC9E2D51]


def tagger_class(torch, nn, F):
    """The model's torch.nn.Module class (also bench/gpu_torch.py's, on a GPU): ids and lengths
    on the model's device."""
    width, nF, pad = data.WIDTH, data.N_FEATURES, data.WINDOW * data.DEPTH

    class HashEmbed(nn.Module):
        def __init__(self, rows, seed, column):
            super().__init__()
            self.E = nn.Parameter(torch.empty(rows, width).uniform_(-0.1, 0.1))
            self.rows, self.column = rows, column
            self.register_buffer("mult", torch.tensor(HASH_MULT, dtype=torch.int64))
            self.salt = (seed * 0x9E3779B97F4A7C15) & 0x7FFFFFFFFFFFFFFF

        def forward(self, ids):  # ids (words, nF) int64
            h = ids[:, self.column, None] * self.mult + self.salt          # (words, 4), wraps
            h = (h ^ (h >> 29)) & 0x7FFFFFFF
            return F.embedding_bag(h % self.rows, self.E, mode="sum")

    class Maxout(nn.Module):
        def __init__(self, n_in):
            super().__init__()
            self.linear = nn.Linear(n_in, width * data.PIECES)
            nn.init.xavier_uniform_(self.linear.weight)
            nn.init.zeros_(self.linear.bias)
            self.norm = nn.LayerNorm(width)

        def forward(self, x):
            y = self.linear(x).view(x.shape[0], width, data.PIECES).max(dim=-1).values
            return self.norm(y)

    class Tok2VecTagger(nn.Module):
        def __init__(self):
            super().__init__()
            self.embeds = nn.ModuleList(HashEmbed(data.ROWS[i], 8 + i, i) for i in range(nF))
            self.mixer = Maxout(width * nF)
            self.encoder = nn.ModuleList(Maxout(width * (2 * data.WINDOW + 1)) for _ in range(data.DEPTH))
            self.head = nn.Linear(width, data.N_TAGS)
            nn.init.zeros_(self.head.weight)  # Thinc's Softmax starts at zero
            nn.init.zeros_(self.head.bias)

        def logits(self, ids, lengths):
            """ids (words, nF) int64, lengths (docs,) int64 -> (words, 50) logits."""
            x = self.mixer(torch.cat([e(ids) for e in self.embeds], dim=1))
            n_docs, n_words = lengths.shape[0], ids.shape[0]
            # with_array(pad): `pad` zero rows before every doc and after the last.
            dev = ids.device
            pos = torch.arange(n_words, device=dev) + pad * (
                torch.repeat_interleave(torch.arange(n_docs, device=dev), lengths) + 1)
            xp = x.new_zeros(n_words + pad * (n_docs + 1), width).index_copy(0, pos, x)
            for layer in self.encoder:
                zero = xp.new_zeros(1, width)
                window = torch.cat([torch.cat([zero, xp[:-1]]), xp, torch.cat([xp[1:], zero])], dim=1)
                xp = xp + layer(window)
            return self.head(xp.index_select(0, pos))

    return Tok2VecTagger


def main(argv=None):
    args = data.parse_args(argv, description=__doc__)
    modules = common.import_torch(log)
    if modules is None:
        return 3
    torch, F, nn = modules
    n_threads = common.torch_threads(torch, args.threads)
    system = common.system_name("pytorch", args.threads)
    torch.manual_seed(0)
    width, nF, pad = data.WIDTH, data.N_FEATURES, data.WINDOW * data.DEPTH

    Tok2VecTagger = tagger_class(torch, nn, F)

    def as_tensors(docs):
        lengths = [len(d) for d in docs]
        return torch.from_numpy(np.concatenate(docs).astype(np.int64)), torch.tensor(lengths), lengths

    def predict(model, docs):
        ids, lengths, ls = as_tensors(docs)
        return torch.softmax(model.logits(ids, lengths), dim=1).split(ls)

    docs_l, tags_l = data.generate()
    checksum = data.checksum(docs_l, tags_l)
    docs = [np.asarray(d, dtype="i").reshape(len(d), nF) for d in docs_l]
    tags = [np.asarray(t, dtype=np.int64) for t in tags_l]
    nb = data.n_batches(args.fraction)
    spans = data.batches(nb * data.BATCH)
    batches = [docs[b:e] for b, e in spans]
    batch_tags = [torch.from_numpy(np.concatenate(tags[b:e])) for b, e in spans]
    words = sum(len(d) for X in batches for d in X)

    model = Tok2VecTagger()
    params = sum(p.numel() for p in model.parameters())
    log(f"torch {torch.__version__}, {n_threads} intra-op thread(s); data checksum {checksum}; {params} parameters; "
        f"{nb} batch(es) of {data.BATCH} docs, {words} words")
    model.eval()
    with torch.inference_mode():
        nn.init.normal_(model.head.weight, std=0.1)  # a non-trivial softmax for the check only
        Y = predict(model, batches[0])
        ok = len(Y) == len(batches[0]) and all(tuple(y.shape) == (len(x), data.N_TAGS) for x, y in zip(batches[0], Y))
        worst = max(float((y.sum(dim=1) - 1).abs().max()) for y in Y)
        nn.init.zeros_(model.head.weight)
    log(f"output check: shapes {'(words, 50)' if ok else 'WRONG'}, largest |row sum - 1| {worst:.3g}")
    if not ok or worst > 1e-4:
        log("the model's output is wrong")
        return 1
    if args.check:
        print(f'{{"check": "{system}", "params": {params}, "checksum": {checksum}}}', flush=True)
        return 0
    extra = dict(threads=n_threads, params=params, batches=nb, words=words)

    if "tok2vec_train_wps" in args.figures:
        opt = torch.optim.Adam(model.parameters(), lr=data.LEARN_RATE)
        model.train()

        def step(k):
            ids, lengths, _ = as_tensors(batches[k])
            opt.zero_grad(set_to_none=True)
            loss = F.cross_entropy(model.logits(ids, lengths), batch_tags[k])
            loss.backward()
            opt.step()

        for k in range(min(2, nb)):  # warm-up
            step(k)
        gc.collect()
        t0 = time.perf_counter()
        for k in range(nb):
            step(k)
        data.emit("tok2vec_train_wps", system, words / (time.perf_counter() - t0), "words/s", **extra)

    model.eval()
    with torch.inference_mode():
        if "tok2vec_predict_wps" in args.figures:
            for X in batches[:2]:
                predict(model, X)
            best = float("inf")
            for _ in range(data.PREDICT_PASSES):
                gc.collect()
                t0 = time.perf_counter()
                for X in batches:
                    predict(model, X)
                best = min(best, time.perf_counter() - t0)
            data.emit("tok2vec_predict_wps", system, words / best, "words/s", **extra)

        if "tok2vec_latency_doc20" in args.figures:
            singles = [[d] for d in docs if len(d) == data.LATENCY_LEN]
            for i in range(args.latency_warmup):
                predict(model, singles[i % len(singles)])
            gc.collect()
            clock = time.perf_counter_ns
            times = []
            for i in range(args.latency_n):
                x = singles[i % len(singles)]
                t0 = clock()
                predict(model, x)
                times.append(clock() - t0)
            times.sort()
            data.emit("tok2vec_latency_doc20", system, common.percentile(times, 50) / 1000.0, "us",
                      threads=n_threads, n=args.latency_n, p99=common.percentile(times, 99) / 1000.0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
