#!/usr/bin/python3
"""Thinc 8.1's schedules and minibatch sizes, as reference values for test_schedules.cpp.

    /usr/bin/python3 tests/training/gen_thinc_schedules.py OUT.txt

One line per series: `<name> <value> <value> ...` (%.17g: doubles round-trip). The
schedules' first 60 values each; `minibatch:<name>` lines give the batch sizes Thinc's
ops.minibatch makes over 100 items with that size (an int or a schedule).
"""
import sys

try:
    from thinc import schedules as S
    from thinc.api import NumpyOps
except ImportError as e:  # pragma: no cover
    sys.stderr.write(f"gen_thinc_schedules.py needs Thinc 8.1 for /usr/bin/python3: {e}\n")
    sys.exit(2)


def take(gen, n=60):
    return [next(gen) for _ in range(n)]


SERIES = {
    "constant": lambda: S.constant(0.25),
    "constant_then": lambda: S.constant_then(0.5, 5, S.decaying(0.01, 0.1)),
    "decaying": lambda: S.decaying(0.001, 1e-2),
    "decaying_t": lambda: S.decaying(0.2, 0.5, t=3),
    "compounding": lambda: S.compounding(1.0, 32.0, 1.5),
    "compounding_slow": lambda: S.compounding(4.0, 32.0, 1.001),
    "compounding_down": lambda: S.compounding(10.0, 1.0, 0.8),
    "slanted_triangular": lambda: S.slanted_triangular(0.01, 40),
    "slanted_triangular_cut": lambda: S.slanted_triangular(1.0, 50, cut_frac=0.2, ratio=8),
    "warmup_linear": lambda: S.warmup_linear(0.001, 10, 40),
    "warmup_linear_none": lambda: S.warmup_linear(0.5, 0, 30),
    "cyclic_triangular": lambda: S.cyclic_triangular(0.001, 0.01, 7),
}


def main():
    if len(sys.argv) != 2:
        sys.stderr.write("usage: gen_thinc_schedules.py OUT.txt\n")
        sys.exit(2)
    lines = []
    for name, make in SERIES.items():
        lines.append(name + " " + " ".join("%.17g" % float(v) for v in take(make())))
    ops = NumpyOps()
    items = list(range(100))
    for name, size in [("int7", lambda: 7), ("compounding", lambda: S.compounding(1.0, 16.0, 1.5)),
                       ("decaying_size", lambda: S.decaying(30.0, 0.3))]:
        sizes = [len(b) for b in ops.minibatch(size(), items)]
        lines.append("minibatch:" + name + " " + " ".join(str(n) for n in sizes))
    with open(sys.argv[1], "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
