#!/usr/bin/python3
"""make bench-langid: examples/langid.cpp (tenon) and bench/langid_thinc.py (Thinc 8.1) train the
same word-language identifier on the same split and ids; prints both accuracies and training
times side by side and writes them to a JSON file.

Usage: /usr/bin/python3 bench/langid_compare.py LANGID_BINARY WORKDIR [--epochs N] [--arch A] [--out FILE]
"""
import argparse
import json
import os
import re
import subprocess
import sys


def run(cmd):
    print("$ " + " ".join(cmd), flush=True)
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    sys.stdout.write(p.stdout)
    if p.returncode != 0:
        sys.exit("langid_compare: %s failed (exit %d)" % (cmd[0], p.returncode))
    m = re.search(r"^result (.*)$", p.stdout, re.M)
    if not m:
        sys.exit("langid_compare: no result line from %s" % cmd[0])
    return dict(kv.split("=", 1) for kv in m.group(1).split())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("langid")
    ap.add_argument("workdir")
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--arch", default="attention", choices=["attention", "mean"])
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    data = os.path.join(a.workdir, "langid-data")
    os.makedirs(data, exist_ok=True)
    model = os.path.join(a.workdir, "langid-words.tenon")
    t = run([a.langid, "train", "--arch", a.arch, "--epochs", str(a.epochs), "--model", model, "--data", data])
    th = run([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "langid_thinc.py"), data,
              "--arch", a.arch, "--epochs", str(a.epochs)])
    ta, tha = float(t["test_acc"]), float(th["test_acc"])
    ts, ths = float(t["train_s"]), float(th["train_s"])
    print("\nword-language identifier (%s, %d epochs, the same split and ids)" % (a.arch, a.epochs))
    print("%-8s %14s %14s" % ("", "test accuracy", "training (s)"))
    print("%-8s %14.4f %14.2f" % ("tenon", ta, ts))
    print("%-8s %14.4f %14.2f" % ("thinc", tha, ths))
    print("tenon - thinc accuracy: %+.2f points; tenon trains %.1fx faster" % (100 * (ta - tha), ths / ts))
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"arch": a.arch, "epochs": a.epochs, "tenon": {"test_acc": ta, "train_s": ts},
                       "thinc": {"test_acc": tha, "train_s": ths}}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
