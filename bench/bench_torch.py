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
# torch.set_num_threads() in main() covers ATen/OpenMP; the environment also pins the BLAS
# that torch's Linear layers call (OpenBLAS keeps its own thread pool).
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import anchor_common as common  # noqa: E402  (standard library only)

common.setup_threads(sys.argv[1:])

import fashion_mnist  # noqa: E402

from anchor_common import DROPOUT, LEARN_RATE, N_HIDDEN  # noqa: E402

log = common.make_log("bench_torch")


def parse_args(argv=None):
    return common.parse_args(argv, description=__doc__,
                             threads_help="torch.set_num_threads(N); 0 = library default")


def main(argv=None):
    args = parse_args(argv)
    modules = common.import_torch(log)
    if modules is None:
        return 3
    torch, _, nn = modules

    n_threads = common.torch_threads(torch, args.threads)
    system = common.system_name("pytorch", args.threads)
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
        n_run, n_total = common.epoch_batches(X_train.shape[0], batch_size, args.fraction)
        warm = make_model()  # throw-away warm-up model (allocator, oneDNN/BLAS kernels)
        train_batches(warm, torch.optim.Adam(warm.parameters(), lr=LEARN_RATE), batch_size, 3,
                      torch.Generator().manual_seed(args.seed + 1))
        del warm
        torch.manual_seed(args.seed)
        model = make_model()
        opt = torch.optim.Adam(model.parameters(), lr=LEARN_RATE)
        gen = torch.Generator().manual_seed(args.seed)
        elapsed = common.timed(lambda: train_batches(model, opt, batch_size, n_run, gen))
        return elapsed * n_total / n_run, model, n_run, n_total

    def predictor(model):
        """model.eval()'s batch -> class probabilities (softmax included); use under inference_mode."""
        model.eval()

        def predict(x):
            return torch.softmax(model(x), dim=1)
        return predict

    def accuracy(model):
        predict = predictor(model)
        with torch.inference_mode():
            probs = torch.cat([predict(X_test[i:i + 1024]) for i in range(0, X_test.shape[0], 1024)])
        return float((probs.argmax(dim=1) == y_test).float().mean())

    def time_predict(model, batch_size):
        predict = predictor(model)
        with torch.inference_mode():
            return common.time_batches(predict, X_test, batch_size)

    def time_latency(model):
        predict = predictor(model)
        with torch.inference_mode():
            return common.time_latency(predict, X_test, args.latency_n, args.latency_warmup)

    common.run_figures(args, system, n_threads, log, train_epoch=time_train_epoch, new_model=make_model,
                       accuracy=accuracy, predict_seconds=time_predict, latency=time_latency)
    return 0


if __name__ == "__main__":
    sys.exit(main())
