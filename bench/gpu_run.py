#!/usr/bin/python3
"""make bench-gpu (docs/cuda.md, "The GPU benchmark"): tenon's device backend on a CUDA GPU
(bench/gpu_bench.cpp) beside PyTorch eager and torch.compile on the same GPU
(bench/gpu_torch.py); writes every figure, with each system's ratio to PyTorch eager, to --out
(build-gpu/bench-gpu.json). The tenon program runs once per group of figures, so a failure in
one group (a crash of the device backend) costs only that group.

Nothing is written when there is no GPU: the tenon program and the PyTorch script then exit 77
and so does this script. (Their smoke tests where no GPU is: gpu_bench --smoke-device-host and
gpu_torch.py --device cpu; their figures are no GPU figures and are never written here.)

  gpu_run.py --tenon build-gpu/bench/gpu_bench --out build-gpu/bench-gpu.json [--fraction F]
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
GROUPS = ["fmnist_train_epoch_b128,fmnist_predict10k_b1024", "mlp64_train_step_b65536,mlp64_predict_b65536",
          "mlp128_train_step_b65536,mlp128_predict_b65536", "tok2vec_train_wps,tok2vec_predict_wps"]


def records(cmd):
    print("gpu_run: " + " ".join(cmd), file=sys.stderr, flush=True)
    p = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
    out = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
    return p.returncode, out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tenon", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--fraction", type=float, default=1.0)
    args = ap.parse_args()
    figures, notes = [], []
    for group in GROUPS:
        rc, recs = records([args.tenon, "--figures", group, "--fraction", str(args.fraction)])
        if rc == 77:
            print("gpu_run: no GPU (the tenon program skipped): nothing measured, nothing written", file=sys.stderr)
            return 77
        if rc != 0:
            notes.append(f"tenon: figures {group}: exit status {rc}")
        figures += recs
    rc, recs = records([sys.executable, os.path.join(HERE, "gpu_torch.py"), "--device", "cuda",
                        "--fraction", str(args.fraction)])
    if rc != 0:
        notes.append(f"pytorch: exit status {rc}")
    figures += recs
    eager = {r["figure"]: r["value"] for r in figures if r["system"] == "pytorch-eager"}
    for r in figures:
        if r["figure"] in eager and eager[r["figure"]]:
            # >1: faster than PyTorch eager (times: eager / this; rates: this / eager)
            faster = r["value"] / eager[r["figure"]] if r["unit"].endswith("/s") else eager[r["figure"]] / r["value"]
            r["speedup_vs_pytorch_eager"] = round(faster, 3)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump({"figures": figures, "notes": notes}, f, indent=1)
    for r in figures:
        print(f'{r["figure"]:28} {r["system"]:18} {r["value"]:12.6g} {r["unit"]:8} '
              f'{r.get("speedup_vs_pytorch_eager", "")}')
    print(f"gpu_run: wrote {args.out}" + (f" ({len(notes)} problem(s): {'; '.join(notes)})" if notes else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
