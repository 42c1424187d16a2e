"""Writing Thinc reference ("oracle") cases for tenon's C++ tests (tests/oracle/case.hpp
reads them). Shared by every tests/oracle/gen_thinc_*.py script.

A case file holds named float32 arrays:
    case <name>
    array <key> <rank> <d0> <d1> ...
    <all values, row-major, space-separated, one line, %.9g>
Sequence values are stored under a key prefix (CaseWriter.add_ragged / add_padded /
add_list):  Ragged key.data key.lengths;  Padded key.data key.size_at_t key.lengths
key.indices;  List key.n (scalar count) key.0 key.1 ...
"""
import os
import sys
import traceback

import numpy


class CaseError(Exception):
    pass


# ---------------------------------------------------------------------------
# Writing
# ---------------------------------------------------------------------------


def _as_f32(value, key):
    arr = numpy.asarray(value)
    if arr.dtype.kind not in "fiub":
        raise CaseError("array %r has non-numeric dtype %s" % (key, arr.dtype))
    arr32 = arr.astype(numpy.float32)
    if not numpy.all(numpy.isfinite(arr32)):
        raise CaseError("array %r contains non-finite values" % key)
    # NB: not numpy.ascontiguousarray, which turns 0-d scalars into shape (1,).
    return numpy.array(arr32, dtype=numpy.float32, order="C")


class CaseWriter:
    def __init__(self, name):
        self.name = name
        self.arrays = []  # list of (key, float32 ndarray)
        self.keys = set()

    def add(self, key, value):
        if " " in key or not key:
            raise CaseError("bad key %r" % key)
        if key in self.keys:
            raise CaseError("duplicate key %r in case %s" % (key, self.name))
        arr = _as_f32(value, key)
        if numpy.ndim(value) != arr.ndim:
            raise CaseError("rank changed while converting %r" % key)
        self.keys.add(key)
        self.arrays.append((key, arr.copy()))

    def write(self, outdir):
        path = os.path.join(outdir, self.name + ".txt")
        lines = ["case %s" % self.name]
        for key, arr in self.arrays:
            header = ["array", key, str(arr.ndim)] + [str(d) for d in arr.shape]
            lines.append(" ".join(header))
            flat = arr.reshape(-1).astype(numpy.float64)
            lines.append(" ".join("%.9g" % v for v in flat))
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")
        return path

    # Sequence values (thinc.types.Ragged / Padded / a list of arrays).
    def add_ragged(self, key, r):
        self.add(key + ".data", r.dataXd)
        self.add(key + ".lengths", r.lengths)

    def add_padded(self, key, p):
        self.add(key + ".data", p.data)
        self.add(key + ".size_at_t", p.size_at_t)
        self.add(key + ".lengths", p.lengths)
        self.add(key + ".indices", p.indices)

    def add_list(self, key, xs):
        self.add(key + ".n", numpy.float32(len(xs)))
        for i, x in enumerate(xs):
            self.add("%s.%d" % (key, i), x)

    def add_value(self, key, v):
        """Any of the above, by type."""
        from thinc.types import Padded, Ragged

        if isinstance(v, Ragged):
            self.add_ragged(key, v)
        elif isinstance(v, Padded):
            self.add_padded(key, v)
        elif isinstance(v, (list, tuple)):
            self.add_list(key, v)
        else:
            self.add(key, v)


def run_main(CASES, argv, fix_random_seed):
    """The main() of a generator script: OUTDIR [--stamp FILE]; writes every case of CASES
    (a list of (name, function returning a CaseWriter or None))."""
    import thinc

    script = os.path.basename(argv[0])
    stamp = None
    if len(argv) == 4 and argv[2] == "--stamp":
        stamp = argv[3]
    elif len(argv) != 2:
        sys.stderr.write("usage: /usr/bin/python3 %s OUTDIR [--stamp FILE]\n" % argv[0])
        return 2
    outdir = argv[1]
    try:
        os.makedirs(outdir, exist_ok=True)
    except OSError as e:
        sys.stderr.write("%s: cannot create %s: %s\n" % (script, outdir, e))
        return 1
    fix_random_seed(0)
    n_written = 0
    for name, fn in CASES:
        try:
            case = fn()
            if case is None:
                print("skip %s (not supported by Thinc %s)" % (name, thinc.__version__))
                continue
            if case.name != name:
                raise CaseError("case function returned %r" % case.name)
            path = case.write(outdir)
        except Exception as e:
            traceback.print_exc()
            sys.stderr.write("%s: case %s FAILED: %s\n" % (script, name, e))
            return 1
        n_written += 1
        print(
            "wrote %s (%d arrays: %s)"
            % (path, len(case.arrays), " ".join(k for k, _ in case.arrays))
        )
    print("done: %d case files in %s (thinc %s)" % (n_written, outdir, thinc.__version__))
    if stamp:
        with open(stamp, "w") as f:
            f.write("%d cases\n" % n_written)
    return 0
