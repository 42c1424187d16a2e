#!/usr/bin/python3
"""`make bench` driver: runs tenon and the Thinc / PyTorch / LibTorch / dlib anchors and the
GEMM-only bound, prints a table.

Usage:
  /usr/bin/python3 bench/run.py --tenon build/bench/tenon_bench [--out build/bench.json]
      [--libtorch build/bench/libtorch_bench] [--dlib build/bench/dlib_bench]
      [--quick] [--repeat R] [--systems tenon,thinc,pytorch,libtorch,dlib,bound,...]
      [--fraction F] [--latency-n N] [--figures a,b,c] [--timeout S]
      [--tenon-threads N] [--python PATH] [--anchor-lib-dir DIR]
      [--tok2vec build/bench/tok2vec_bench]
  /usr/bin/python3 bench/run.py --sparselinear build/bench/sparselinear_bench [--repeat R]
  /usr/bin/python3 bench/run.py --lstm build/bench/lstm_bench [--repeat R]

Every system is a subprocess that accepts
    --fraction F --latency-n N --figures a,b,c --threads N
and prints JSON lines {"figure", "system", "value", "unit"} on stdout (anything else on
stdout is ignored; stderr is passed through as progress).  Each system runs R times
(repeats are interleaved across systems); the median per (figure, system) is reported.
The ratio columns are anchor / tenon: how many times faster tenon is (all timing figures
are lower-is-better; no ratio is shown for accuracy). --figures takes the figures below and
the bound's (gemm_bound_*); each system is given only the ones it measures.

Systems:
  tenon       the C++ binary given by --tenon, with --threads <--tenon-threads> (default 0: every
              core, tenon's default and best setting)
  tenon-1t    the same binary with --threads 1 (its records are relabelled "tenon-1t")
  thinc       bench/bench_thinc.py --threads 1      thinc-mt    ... --threads 0 (default)
  pytorch     bench/bench_torch.py --threads 1      pytorch-mt  ... --threads 0 (default)
  libtorch    the C++ binary given by --libtorch (bench/libtorch_bench.cpp, PyTorch's C++ API)
              with --threads 1                       libtorch-mt ... --threads 0 (default)
  dlib        the C++ binary given by --dlib (bench/dlib_bench.cpp) with --threads 1
  bound       bench/gemm_bound.py --threads 1: the time the MLP's matrix products alone take
              with the fastest single-thread sgemm found (figures gemm_bound_*). It is printed
              as reference rows below the table, with every system's time as a multiple of it.
Without --systems, libtorch, libtorch-mt and dlib are run when their binary exists
(`make bench` builds them when LibTorch / dlib are installed).

The tok2vec benchmark (spaCy's tagger tok2vec, bench/tok2vec_data.py; figures tok2vec_*):
tenon, tenon-1t, thinc, thinc-mt, pytorch, pytorch-mt and bound also run a second program each
(the binary given by --tok2vec, bench/tok2vec_thinc.py, bench/tok2vec_torch.py,
bench/tok2vec_bound.py), whose records land under the same system names. Its words/s figures
are higher-is-better: their ratio column is tenon / anchor, again how many times faster tenon is.

The SparseLinear benchmark (not part of the default run): --sparselinear BIN runs only it, the
binary (bench/sparselinear_bench.cpp, single-threaded like Thinc's layer, and with every core as
"tenon-mt") and bench/sparselinear_thinc.py (Thinc 8.1's SparseLinear.v2) on the same 2000
documents, R times interleaved; it prints the medians in documents/s with tenon / Thinc, and
writes them next to --out as *_sparselinear.json.

The LSTM benchmark (not part of the default run): --lstm BIN runs only it: the binary
(bench/lstm_bench.cpp) with 1 thread ("tenon") and every core ("tenon-mt"), and
bench/lstm_anchors.py for Thinc 8.1's LSTM ("thinc"; NumpyOps, single-threaded: its products
are blis's, which Thinc bundles without threads) and PyTorch's nn.LSTM with 1 thread
("pytorch") and its default ("pytorch-mt"), on the same 8 batches of 32 sequences of 10-40
steps: LSTM and BiLSTM, nI = nO = 128, depth 1 and 2, training steps (forward + backward +
Adam) and predict, in tokens/s. R repeats interleaved; it prints the medians with tenon /
Thinc and tenon / PyTorch (1 thread against 1 thread, the defaults against the defaults) and
writes them next to --out as *_lstm.json.

The anchors (and the bound) run with OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE removed from their
environment (these machine-wide settings slow OpenBLAS down); tenon keeps the environment.
A missing binary, a missing Python package or a failing system is reported and skipped.

tenon's own figures (tenon and tenon-1t only): the input check's cost (*_nocheck,
finite_check_b128), the batch-1 p99 with a core busy (latency_b1_p99_loaded), and AnyModel's
cost against the static model with the issue's limits, and a config-built model's (anymodel_*,
config_*; ANYMODEL_FIGURES below; --figures anymodel names them all). E.g. only those:
  /usr/bin/python3 bench/run.py --systems tenon,tenon-1t --figures anymodel --out /tmp/bench-any.json
"""
import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from anchor_common import ALL_FIGURES, BOUND_FIGURES, BOUND_OF, make_log  # noqa: E402  (standard library only)

# tenon's own figures: the same as train_epoch_b128 / predict10k_b128 with the input check for
# NaN and inf off (set_check_finite_inputs(false), docs/reliability.md), measured in the same
# run; the table ends with the check's cost.
# finite_check_b128: the check alone on one 128-row batch (median us), and its share of a
# training step at batch 128 (train_epoch_b128 / 469 batches).
# latency_b1_p99_loaded, latency_b1_p50_loaded: latency_b1_p99 and p50 while a competing
# process spins on one core (the table ends with the p99 as a multiple of the quiet p99).
# predict10k_b*_unfrozen: predict10k_b* on the plan without frozen weights (W packed at every
# call; the predict figures run the serving path, plan.freeze_weights(): docs/lowering.md).
TENON_ONLY_FIGURES = ["train_epoch_b128_nocheck", "predict10k_b128_nocheck", "finite_check_b128",
                      "latency_b1_p99_loaded", "latency_b1_p50_loaded", "predict10k_b128_unfrozen", "predict10k_b1024_unfrozen"]
# AnyModel's cost (issue 18; tenon_bench.cpp, time_any_model): a model called as itself
# (anymodel_*_static), through an AnyModel holding a copy of it (anymodel_*) and built from the
# same model written as a config (config_*: a DynChain of AnyModel steps), us per call: predict
# at batch 1 (Relu<64> >> Softmax<10>, nI 64: a call short enough to resolve 1 us) and 128, a
# training step at batch 128 (the MLP 784-512-512-10). The overheads against the static model are
# each run's median of its rounds' paired differences (ns per call at batch 1, % at batch 128);
# the AnyModel's have the limits (ANYMODEL_LIMITS: checked on the medians, "limit" and
# "pass" in --out's records), the config's are for information. The table ends with them.
ANYMODEL_CASES = [("predict_b1", "b1"), ("predict_b128", "b128"), ("train_b128", "train_b128")]
ANYMODEL_FIGURES = [f for case, o in ANYMODEL_CASES
                    for f in (f"anymodel_{case}_static", f"anymodel_{case}", f"config_{case}",
                              f"anymodel_overhead_{o}", f"config_overhead_{o}")]
ANYMODEL_LIMITS = {"anymodel_overhead_b1": 1000.0, "anymodel_overhead_b128": 2.0,
                   "anymodel_overhead_train_b128": 2.0}  # ns, %, %
TENON_ONLY_FIGURES += ANYMODEL_FIGURES
CHECKED_OF = {"train_epoch_b128_nocheck": "train_epoch_b128", "predict10k_b128_nocheck": "predict10k_b128"}
FIGURES = ALL_FIGURES + TENON_ONLY_FIGURES + BOUND_FIGURES
HIGHER_IS_BETTER = {"accuracy_1epoch"}
DEFAULT_SYSTEMS = ["tenon", "tenon-1t", "thinc", "pytorch", "pytorch-mt", "thinc-mt", "libtorch", "libtorch-mt", "dlib", "bound"]
KNOWN_SYSTEMS = ["tenon", "tenon-1t", "thinc", "thinc-mt", "pytorch", "pytorch-mt", "libtorch", "libtorch-mt",
                 "dlib", "bound"]
BINARY_SYSTEMS = {"libtorch": "libtorch", "libtorch-mt": "libtorch", "dlib": "dlib"}  # system -> option naming it
REFERENCE_SYSTEMS = {"bound"}  # rows of their own, no ratio column
ANCHOR_ENV_UNSET = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
SYSTEM_LIB = "/usr/lib/x86_64-linux-gnu/libblas.so.3"

# --------------------------------------------------------------------------- tok2vec benchmark
# bench/tok2vec_bench.cpp (--tok2vec), tok2vec_thinc.py, tok2vec_torch.py, tok2vec_bound.py: a
# second program per system, its records under the same system names (docs/performance.md).
TOK2VEC_FIGURES = ["tok2vec_predict_wps", "tok2vec_train_wps", "tok2vec_latency_doc20"]
TOK2VEC_BOUND_OF = {"gemm_bound_tok2vec_predict_wps": "tok2vec_predict_wps",
                    "gemm_bound_tok2vec_train_wps": "tok2vec_train_wps",
                    "gemm_bound_tok2vec_latency_doc20": "tok2vec_latency_doc20"}
TOK2VEC_SCRIPTS = {"thinc": ("tok2vec_thinc.py", "thinc"), "pytorch": ("tok2vec_torch.py", "torch"),
                   "bound": ("tok2vec_bound.py", "numpy")}  # base system -> (script, module it needs)
RATE_FIGURES = {"tok2vec_predict_wps", "tok2vec_train_wps", "gemm_bound_tok2vec_predict_wps",
                "gemm_bound_tok2vec_train_wps"}  # words/s: higher is better
FIGURES = FIGURES + TOK2VEC_FIGURES + list(TOK2VEC_BOUND_OF)


def tok2vec_system(name, args, aenv, have):
    """The tok2vec program of system `name` (None for the systems without one)."""
    base = name.split("-")[0]
    if base == "tenon":
        threads = args.tenon_threads if name == "tenon" else 1
        s = System(name, [args.tok2vec, "--threads", str(threads)], dict(os.environ), kind="tok2vec")
        path = executable(args.tok2vec)
        if not path:
            s.skip_reason = f"tok2vec binary not found or not executable: {args.tok2vec} (build it first)"
        else:
            s.cmd[0] = path
    elif base in TOK2VEC_SCRIPTS:
        script, module = TOK2VEC_SCRIPTS[base]
        threads = "0" if name.endswith("-mt") else "1"
        s = System(name, [args.python, os.path.join(HERE, script), "--threads", threads], aenv, kind="tok2vec")
        ok, why = have(module)
        if not ok:
            s.skip_reason = f"{module} is not importable with {args.python} ({why[0] if why else ''}); skipping"
    else:
        return None
    if not s.skip_reason and args.figures and not s.figures(args.figures):
        s.skip_reason = "measures none of the requested figures"
    return s


log = make_log("bench")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tenon", default="build/bench/tenon_bench", help="path to the tenon benchmark binary")
    p.add_argument("--libtorch", default="build/bench/libtorch_bench", help="path to the LibTorch anchor binary")
    p.add_argument("--dlib", default="build/bench/dlib_bench", help="path to the dlib anchor binary")
    p.add_argument("--tok2vec", default="build/bench/tok2vec_bench", help="path to tenon's tok2vec benchmark binary")
    p.add_argument("--sparselinear", default=None,
                   help="run only the SparseLinear benchmark with this binary (build/bench/sparselinear_bench)")
    p.add_argument("--lstm", default=None,
                   help="run only the LSTM benchmark with this binary (build/bench/lstm_bench)")
    p.add_argument("--out", default="build/bench.json", help="JSON output (list of median records)")
    p.add_argument("--quick", action="store_true",
                   help="1 repeat, --fraction 0.1, --latency-n 300 (explicit options still win)")
    p.add_argument("--repeat", type=int, default=None, help="repeats per system (default 3; quick: 1)")
    p.add_argument("--systems", default=None,
                   help="comma-separated, from: " + ",".join(KNOWN_SYSTEMS) + " (default: "
                   + ",".join(DEFAULT_SYSTEMS) + ", the C++ anchors only where their binary exists)")
    p.add_argument("--fraction", type=float, default=None, help="epoch fraction (default 1.0; quick: 0.1)")
    p.add_argument("--latency-n", type=int, default=None, help="batch-1 calls timed (default 2000; quick: 300)")
    p.add_argument("--figures", default="", help="comma-separated subset (default: all; 'anymodel': all of "
                   "AnyModel's and the config-built model's figures)")
    p.add_argument("--tenon-threads", type=int, default=0,
                   help="--threads passed to the 'tenon' system (default 0: all cores)")
    p.add_argument("--timeout", type=float, default=3600.0, help="seconds per system run (default 3600)")
    p.add_argument("--python", default=None,
                   help="interpreter for the anchors (default /usr/bin/python3 if present, else this one)")
    p.add_argument("--anchor-lib-dir", default=None,
                   help="directory prepended to LD_LIBRARY_PATH for the anchors only (e.g. an OpenBLAS dir)")
    args = p.parse_args(argv)
    if args.repeat is None:
        args.repeat = 1 if args.quick else 3
    if args.fraction is None:
        args.fraction = 0.1 if args.quick else 1.0
    if args.latency_n is None:
        args.latency_n = 300 if args.quick else 2000
    if args.repeat < 1:
        p.error("--repeat must be >= 1")
    if not (0.0 < args.fraction <= 1.0):
        p.error("--fraction must be in (0, 1]")
    if args.systems is None:
        args.systems = [s for s in DEFAULT_SYSTEMS
                        if s not in BINARY_SYSTEMS or executable(getattr(args, BINARY_SYSTEMS[s]))]
    else:
        args.systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    bad = [s for s in args.systems if s not in KNOWN_SYSTEMS]
    if bad:
        p.error("unknown system(s): " + ",".join(bad))
    args.figures = [f.strip() for f in args.figures.split(",") if f.strip()]
    args.figures = list(dict.fromkeys(g for f in args.figures for g in (ANYMODEL_FIGURES if f == "anymodel" else [f])))
    bad = [f for f in args.figures if f not in FIGURES]
    if bad:
        p.error("unknown figure(s): " + ",".join(bad))
    if args.python is None:
        args.python = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
    return args


def executable(path):
    """The path of an executable file (looked up in PATH when `path` has no directory), or None."""
    if os.sep not in path:
        path = shutil.which(path) or path
    return path if os.path.isfile(path) and os.access(path, os.X_OK) else None


# --------------------------------------------------------------------------- machine
def machine_info():
    cpu = None
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    info = {"cpu": cpu or "unknown", "cores": os.cpu_count()}
    try:
        info["cores_usable"] = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        pass
    if os.path.exists(SYSTEM_LIB):
        info["libblas"] = os.path.realpath(SYSTEM_LIB)
    return info


def blas_is_reference(info):
    lib = info.get("libblas", "")
    return bool(lib) and "openblas" not in lib and "blis" not in lib and "mkl" not in lib


# --------------------------------------------------------------------------- systems
class System:
    def __init__(self, name, cmd, env, label=None, kind="mlp"):
        self.name = name          # column name
        self.kind = kind          # "mlp" or "tok2vec" (the benchmark it runs)
        self.cmd = cmd            # argv without the common options
        self.env = env
        self.label = label        # relabel records' "system" to this (None: expect self.name)
        self.failed = False
        self.skip_reason = None

    def figures(self, wanted):
        """The subset of `wanted` (run.py's --figures) this system measures; [] for all."""
        if not wanted:
            return []
        if self.kind == "tok2vec":
            return [f for f in wanted if f in TOK2VEC_FIGURES or (self.name == "bound" and f in TOK2VEC_BOUND_OF)]
        if self.name == "bound":
            return [f for f in wanted if f in BOUND_FIGURES or f in BOUND_OF.values()]
        if self.name.startswith("tenon"):
            return [f for f in wanted if f in ALL_FIGURES or f in TENON_ONLY_FIGURES]
        return [f for f in wanted if f in ALL_FIGURES]


def anchor_env(args):
    env = dict(os.environ)
    for var in ANCHOR_ENV_UNSET:
        env.pop(var, None)
    if args.anchor_lib_dir:
        old = env.get("LD_LIBRARY_PATH")
        env["LD_LIBRARY_PATH"] = args.anchor_lib_dir + (os.pathsep + old if old else "")
    return env


def python_has(python, module, env):
    try:
        r = subprocess.run([python, "-c", f"import {module}"], env=env, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as e:
        return False, str(e)
    return r.returncode == 0, r.stderr.decode(errors="replace").strip().splitlines()[-1:] or [""]


def build_systems(args):
    systems = []
    aenv = anchor_env(args)
    checked = {}

    def have(module):
        if module not in checked:
            checked[module] = python_has(args.python, module, aenv)
        return checked[module]

    for name in args.systems:
        if name in ("tenon", "tenon-1t"):
            threads = args.tenon_threads if name == "tenon" else 1
            s = System(name, [args.tenon, "--threads", str(threads)], dict(os.environ),
                       label=None if name == "tenon" else "tenon-1t")
            path = executable(args.tenon)
            if not path:
                s.skip_reason = f"tenon binary not found or not executable: {args.tenon} (build it first)"
            else:
                s.cmd[0] = path
        elif name in BINARY_SYSTEMS:
            given = getattr(args, BINARY_SYSTEMS[name])
            s = System(name, [given, "--threads", "0" if name.endswith("-mt") else "1"], aenv)
            path = executable(given)
            if not path:
                s.skip_reason = (f"{name} binary not found or not executable: {given} (`make bench` builds it "
                                 f"when {'LibTorch' if name.startswith('libtorch') else 'dlib'} is installed)")
            else:
                s.cmd[0] = path
        elif name == "bound":
            s = System(name, [args.python, os.path.join(HERE, "gemm_bound.py"), "--threads", "1"], aenv)
            ok, why = have("numpy")
            if not ok:
                s.skip_reason = f"numpy is not importable with {args.python} ({why[0] if why else ''}); skipping"
        else:
            base, mt = name.split("-")[0], name.endswith("-mt")
            script = os.path.join(HERE, "bench_thinc.py" if base == "thinc" else "bench_torch.py")
            module = "thinc" if base == "thinc" else "torch"
            s = System(name, [args.python, script, "--threads", "0" if mt else "1"], aenv)
            ok, why = have(module)
            if not ok:
                s.skip_reason = f"{module} is not importable with {args.python} ({why[0] if why else ''}); skipping"
        if not s.skip_reason and args.figures and not s.figures(args.figures):
            s.skip_reason = "measures none of the requested figures"
        systems.append(s)
        t = tok2vec_system(name, args, aenv, have)
        if t is not None:
            systems.append(t)
    return systems


def run_system(s, args, rep):
    """Runs one system once; returns (records, error or None)."""
    cmd = list(s.cmd) + ["--fraction", repr(args.fraction), "--latency-n", str(args.latency_n)]
    if args.figures:
        cmd += ["--figures", ",".join(s.figures(args.figures))]
    log(f"repeat {rep}/{args.repeat}: {s.name}{' (tok2vec)' if s.kind == 'tok2vec' else ''}: {' '.join(cmd)}")
    t0 = time.perf_counter()
    try:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=None, env=s.env, text=True,
                                stdin=subprocess.DEVNULL)
    except OSError as e:
        return [], f"could not start: {e}"
    timed_out = []

    def kill():
        timed_out.append(True)
        proc.kill()

    timer = threading.Timer(args.timeout, kill)
    timer.start()
    records = []
    want = s.label or s.name
    try:
        for line in proc.stdout:
            line = line.strip()
            if not line:
                continue
            try:
                rec = json.loads(line)
            except ValueError:
                log(f"  {s.name}: ignoring non-JSON output: {line[:200]}")
                continue
            if not (isinstance(rec, dict) and {"figure", "system", "value", "unit"} <= rec.keys()):
                log(f"  {s.name}: ignoring record without figure/system/value/unit: {line[:200]}")
                continue
            try:
                value = float(rec["value"])
            except (TypeError, ValueError):
                log(f"  {s.name}: ignoring non-numeric value: {line[:200]}")
                continue
            if not math.isfinite(value):
                log(f"  {s.name}: ignoring non-finite value: {line[:200]}")
                continue
            if s.label is not None:
                rec["system"] = s.label
            elif rec["system"] != want:
                log(f"  {s.name}: record says system {rec['system']!r}; counting it as {want!r}")
                rec["system"] = want
            rec["value"] = value
            records.append(rec)
            log(f"  {want} {rec['figure']} = {value:.6g} {rec['unit']}")
        rc = proc.wait()
    finally:
        timer.cancel()
    dt = time.perf_counter() - t0
    if timed_out:
        return records, f"timed out after {args.timeout:.0f} s"
    if rc != 0:
        return records, f"exit status {rc} after {dt:.1f} s"
    if not records:
        return records, "produced no records"
    log(f"  {s.name} done in {dt:.1f} s")
    return records, None


# --------------------------------------------------------------------------- report
def fmt_value(v, unit):
    if v is None:
        return "-"
    if unit == "fraction":
        return f"{v:.4f}"
    if unit == "us":
        return f"{v:.3f}" if abs(v) < 10 else f"{v:.1f}"  # a small model's call (anymodel_predict_b1): ns
    if unit == "words/s":
        return f"{v:.0f}"
    return f"{v:.4g}" if abs(v) < 1 else f"{v:.3f}"


def print_rows(header, rows, out):
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)] if rows else [len(h) for h in header]
    line = "  ".join(h.ljust(widths[0]) if i == 0 else h.rjust(widths[i]) for i, h in enumerate(header))
    print(line, file=out)
    print("  ".join("-" * w for w in widths), file=out)
    for row in rows:
        print("  ".join(c.ljust(widths[0]) if i == 0 else c.rjust(widths[i]) for i, c in enumerate(row)),
              file=out)


def print_bound(medians, systems, out):
    """The bound's reference rows: its value, then each system's figure as a multiple of it."""
    others = [s for s in systems if s not in REFERENCE_SYSTEMS and any(k[1] == s for k in medians)]
    rows = []
    bound_of = {**BOUND_OF, **TOK2VEC_BOUND_OF}
    for f in BOUND_FIGURES + list(TOK2VEC_BOUND_OF):
        b = medians.get((f, "bound"))
        if not b:
            continue
        row = [f, b["unit"], fmt_value(b["value"], b["unit"])]
        for s in others:
            r = medians.get((bound_of[f], s))
            if f in RATE_FIGURES:  # words/s: the time per word as a multiple of the bound's
                row.append(f"{b['value'] / r['value']:.2f}x" if r and r["value"] > 0 else "-")
            else:
                row.append(f"{r['value'] / b['value']:.2f}x" if r and b["value"] > 0 else "-")
        rows.append(row)
    if not rows:
        return
    print("\nGEMM-only bound (the model's matrix products alone, fastest single-thread sgemm) and each "
          "system's time as a multiple of it:", file=out)
    print_rows(["bound", "unit", "bound"] + [f"{s}/bound" for s in others], rows, out)
    print("(" + ", ".join(f"{f} bounds {bound_of[f]}" for f in bound_of
                          if (f, "bound") in medians) + ")", file=out)


def print_table(medians, systems, out=sys.stdout):
    sys_names = [s for s in systems if s not in REFERENCE_SYSTEMS and any(k[1] == s for k in medians)]
    figs = [f for f in ALL_FIGURES if any(k[0] == f for k in medians)]
    figs += sorted({k[0] for k in medians if k[1] not in REFERENCE_SYSTEMS} - set(figs),
                   key=lambda f: (FIGURES.index(f) if f in FIGURES else len(FIGURES), f))
    anchors = [s for s in sys_names if not s.startswith("tenon")]
    header = ["figure", "unit"] + sys_names
    if "tenon" in sys_names:
        header += [f"{a}/tenon" for a in anchors]
    rows = []
    for f in figs:
        unit = next((medians[k]["unit"] for k in medians if k[0] == f), "")
        row = [f, unit]
        for s in sys_names:
            rec = medians.get((f, s))
            row.append(fmt_value(rec["value"] if rec else None, unit))
        if "tenon" in sys_names:
            t = medians.get((f, "tenon"))
            for a in anchors:
                r = medians.get((f, a))
                if t and r and f in RATE_FIGURES and r["value"] > 0:  # words/s: tenon / anchor
                    row.append(f"{t['value'] / r['value']:.2f}x")
                elif t and r and f not in HIGHER_IS_BETTER and t["value"] > 0:
                    row.append(f"{r['value'] / t['value']:.2f}x")
                else:
                    row.append("-")
        rows.append(row)
    if rows:
        print_rows(header, rows, out)
    if "tenon" in sys_names and anchors:
        print("(ratio = anchor / tenon: how many times faster tenon is; lower is better for all timings; "
              "words/s: higher is better, ratio = tenon / anchor)", file=out)
    print_bound(medians, systems, out)
    print_check_cost(medians, sys_names, out)
    print_loaded_latency(medians, sys_names, out)
    print_any_model_cost(medians, sys_names, out)
    out.flush()


def print_any_model_cost(medians, sys_names, out=sys.stdout):
    """AnyModel's cost against the static model, with the issue's limits; the config-built model's."""
    lines = []
    for s in sys_names:
        for case, o in ANYMODEL_CASES:
            st, am, cf = (medians.get((f"{p}_{case}{x}", s)) for p, x in
                          (("anymodel", "_static"), ("anymodel", ""), ("config", "")))
            oa, oc = medians.get((f"anymodel_overhead_{o}", s)), medians.get((f"config_overhead_{o}", s))
            if not (st or am or oa):
                continue
            us = lambda r: fmt_value(r["value"], "us") + " us"  # noqa: E731
            parts = [f"static {us(st)}" if st else "static -"]
            if am:
                parts.append(f"AnyModel {us(am)}")
            if oa:
                limit = ANYMODEL_LIMITS[oa["figure"]]
                d = 0 if oa["unit"] == "ns" else 2
                if oa.get("n", 1) > 1:  # how noisy: the repeats' spread, or one run's rounds' middle half
                    spread = f"; repeats {oa['min']:+.{d}f}..{oa['max']:+.{d}f}"
                elif "q1" in oa and "q3" in oa:
                    spread = f"; rounds' middle half {oa['q1']:+.{d}f}..{oa['q3']:+.{d}f}"
                else:
                    spread = ""
                parts.append(f"overhead {oa['value']:+.{d}f} {oa['unit']} "
                             f"({'PASS' if oa['value'] <= limit else 'FAIL'}: limit {limit:g} {oa['unit']}{spread})")
            if cf or oc:
                parts.append("config " + (us(cf) if cf else "-")
                             + (f" ({oc['value']:+.{0 if oc['unit'] == 'ns' else 2}f} {oc['unit']})" if oc else ""))
            lines.append(f"  {s} {case}: " + ", ".join(parts))
    if lines:
        print("\nAnyModel's cost against the static model (issue 18: at most 1 us per call at batch 1, 2% at "
              "batch 128), and the same model built from a config (information, no limit); us per call, overhead = "
              "median of each run's paired differences; predict_b1: Relu<64> >> Softmax<10> (nI 64), the others: "
              "the MLP 784-512-512-10:", file=out)
        for line in lines:
            print(line, file=out)


def print_loaded_latency(medians, sys_names, out=sys.stdout):
    """Batch-1 p99 with one core loaded by a competing process, against the quiet p99."""
    lines = []
    for s in sys_names:
        a, q = medians.get(("latency_b1_p99_loaded", s)), medians.get(("latency_b1_p99", s))
        if a and q and q["value"] > 0:
            p50 = medians.get(("latency_b1_p50_loaded", s))
            lines.append(f"  {s}: {a['value']:.1f} us loaded vs {q['value']:.1f} us quiet = "
                         f"{a['value'] / q['value']:.2f}x"
                         + (f" (loaded p50 {p50['value']:.1f} us)" if p50 else ""))
    if lines:
        print("\nbatch-1 p99 with one core busy with another process (latency_b1_p99_loaded):", file=out)
        for line in lines:
            print(line, file=out)


def print_check_cost(medians, sys_names, out=sys.stdout):
    """The input check's cost (NaN/inf, on by default): checked time / unchecked time - 1."""
    lines = []
    for s in sys_names:
        parts = []
        for off, on in CHECKED_OF.items():
            a, b = medians.get((on, s)), medians.get((off, s))
            if a and b and b["value"] > 0:
                parts.append(f"{on} {100.0 * (a['value'] / b['value'] - 1.0):+.2f}% "
                             f"({fmt_value(a['value'], a['unit'])} vs {fmt_value(b['value'], b['unit'])} unchecked)")
        c, e = medians.get(("finite_check_b128", s)), medians.get(("train_epoch_b128", s))
        if c and e and e["value"] > 0:
            step_us = e["value"] * 1e6 / math.ceil(60000 / 128)
            parts.append(f"the check alone {c['value']:.1f} us per batch of 128 = "
                         f"{100.0 * c['value'] / step_us:.2f}% of a training step ({step_us:.0f} us)")
            p = medians.get(("predict10k_b128", s))
            if p and p["value"] > 0:
                call_us = p["value"] * 1e6 / math.ceil(10000 / 128)
                parts.append(f"{100.0 * c['value'] / call_us:.2f}% of a predict call of 128 rows ({call_us:.0f} us)")
        if parts:
            lines.append(f"  {s}: " + ", ".join(parts))
    if lines:
        print("\ninput check for NaN/inf (set_check_finite_inputs), cost = checked / unchecked - 1:", file=out)
        for line in lines:
            print(line, file=out)


SPARSE_FIGURES = ["sparselinear_predict_dps", "sparselinear_update_dps", "sparselinear_train_dps"]


def run_sparselinear(args):
    """The SparseLinear benchmark alone (--sparselinear): tenon (1 thread), tenon-mt and Thinc,
    interleaved repeats, medians in documents/s, tenon / Thinc."""
    if not executable(args.sparselinear):
        log(f"sparselinear binary not found or not executable: {args.sparselinear} (ninja -C build bench/sparselinear_bench)")
        return 1
    cmds = {"tenon": [args.sparselinear, "--threads", "1"], "tenon-mt": [args.sparselinear, "--threads", "0"],
            "thinc": [args.python, os.path.join(HERE, "sparselinear_thinc.py")]}
    samples = {}
    for rep in range(1, args.repeat + 1):
        for name, cmd in cmds.items():
            log(f"repeat {rep}/{args.repeat}: {name}: {' '.join(cmd)}")
            try:
                out = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, timeout=args.timeout, check=True).stdout
            except (subprocess.SubprocessError, OSError) as e:
                log(f"{name} failed: {e}")
                return 1
            for line in out.splitlines():
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue
                if rec.get("figure") in SPARSE_FIGURES:
                    samples.setdefault((rec["figure"], name), []).append(float(rec["value"]))
    medians = {k: statistics.median(v) for k, v in samples.items()}
    print(f"\nSparseLinear (nO 4, length 2^18, 2000 documents of 20-200 features), documents/s, median of "
          f"{args.repeat}:")
    print(f"{'figure':28} {'tenon':>12} {'tenon-mt':>12} {'thinc':>12} {'tenon/thinc':>12}")
    records = []
    for fig in SPARSE_FIGURES:
        t, tm, th = (medians.get((fig, n)) for n in ("tenon", "tenon-mt", "thinc"))
        ratio = t / th if t and th else None
        print(f"{fig:28} {t or 0:12.0f} {tm or 0:12.0f} {th or 0:12.0f} {ratio or 0:11.2f}x")
        for n in cmds:
            if (fig, n) in medians:
                records.append({"figure": fig, "system": n, "value": medians[(fig, n)], "unit": "docs/s",
                                "samples": samples[(fig, n)]})
    out = os.path.splitext(args.out)[0] + "_sparselinear.json"
    try:
        with open(out, "w") as f:
            json.dump({"machine": machine_info(), "records": records}, f, indent=1)
        log(f"wrote {out}")
    except OSError as e:
        log(f"cannot write {out}: {e}")
    return 0


LSTM_CONFIGS = [("lstm_d1", "LSTM, depth 1"), ("lstm_d2", "LSTM, depth 2"), ("bilstm_d1", "BiLSTM, depth 1"),
                ("bilstm_d2", "BiLSTM, depth 2")]
LSTM_FIGURES = [f"{c}_{k}_tps" for c, _ in LSTM_CONFIGS for k in ("train", "predict")]
# (tenon system, anchor system) pairs of the ratio columns: 1 thread against 1 thread, the
# defaults against the defaults (Thinc's LSTM has no threads: it is its own default).
LSTM_RATIOS = [("tenon", "thinc"), ("tenon", "pytorch"), ("tenon-mt", "thinc"), ("tenon-mt", "pytorch-mt")]


def run_lstm(args):
    """The LSTM benchmark alone (--lstm): tenon, tenon-mt, Thinc, PyTorch and PyTorch-mt,
    interleaved repeats, medians in tokens/s, tenon / anchor."""
    if not executable(args.lstm):
        log(f"lstm binary not found or not executable: {args.lstm} (ninja -C build bench/lstm_bench)")
        return 1
    anchors = os.path.join(HERE, "lstm_anchors.py")
    cmds = {"tenon": [args.lstm, "--threads", "1"], "tenon-mt": [args.lstm, "--threads", "0"],
            "thinc": [args.python, anchors, "--system", "thinc", "--threads", "1"],
            "pytorch": [args.python, anchors, "--system", "pytorch", "--threads", "1"],
            "pytorch-mt": [args.python, anchors, "--system", "pytorch", "--threads", "0"]}
    aenv = anchor_env(args)
    envs = {name: (None if name.startswith("tenon") else aenv) for name in cmds}
    samples, failed = {}, set()
    for rep in range(1, args.repeat + 1):
        for name, cmd in cmds.items():
            if name in failed:
                continue
            log(f"repeat {rep}/{args.repeat}: {name}: {' '.join(cmd)}")
            try:
                out = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, timeout=args.timeout, check=True,
                                     env=envs[name]).stdout
            except (subprocess.SubprocessError, OSError) as e:
                log(f"{name} failed (skipped from now on): {e}")
                failed.add(name)
                continue
            for line in out.splitlines():
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue
                if rec.get("figure") in LSTM_FIGURES:
                    samples.setdefault((rec["figure"], name), []).append(float(rec["value"]))
    medians = {k: statistics.median(v) for k, v in samples.items()}
    print(f"\nLSTM / BiLSTM (nI = nO = 128; BiLSTM 64 per direction), 8 batches of 32 sequences of 10-40 "
          f"steps, tokens/s, median of {args.repeat}; train = forward + backward + Adam:")
    names = list(cmds)
    head = f"{'figure':22}" + "".join(f" {n:>10}" for n in names)
    head += "".join(f" {a + '/' + b:>19}" for a, b in LSTM_RATIOS)
    print(head)
    records, ratios = [], []
    for fig in LSTM_FIGURES:
        row = f"{fig:22}" + "".join(f" {medians.get((fig, n), 0):10.0f}" for n in names)
        for a, b in LSTM_RATIOS:
            x, y = medians.get((fig, a)), medians.get((fig, b))
            r = x / y if x and y else None
            row += f" {r:18.2f}x" if r else f" {'-':>19}"
            if r:
                ratios.append({"figure": fig, "system": a, "anchor": b, "ratio": r})
        print(row)
        for n in names:
            if (fig, n) in medians:
                records.append({"figure": fig, "system": n, "value": medians[(fig, n)], "unit": "tokens/s",
                                "samples": samples[(fig, n)]})
    out = os.path.splitext(args.out)[0] + "_lstm.json"
    try:
        with open(out, "w") as f:
            json.dump({"machine": machine_info(), "records": records, "ratios": ratios}, f, indent=1)
        log(f"wrote {out}")
    except OSError as e:
        log(f"cannot write {out}: {e}")
    return 1 if failed else 0


def main(argv=None):
    args = parse_args(argv)
    if args.sparselinear:
        return run_sparselinear(args)
    if args.lstm:
        return run_lstm(args)
    machine = machine_info()
    log(f"machine: {machine['cpu']}, {machine['cores']} cores; repeats={args.repeat} "
        f"fraction={args.fraction} latency-n={args.latency_n}")
    if any(not s.startswith("tenon") for s in args.systems) and blas_is_reference(machine) \
            and not args.anchor_lib_dir:
        log(f"WARNING: {SYSTEM_LIB} -> {machine['libblas']} is the reference (netlib) BLAS; PyTorch's / "
            "LibTorch's Linear layers and dlib's fc call it, so those anchors (and the bound) will be far "
            "slower than with OpenBLAS (install libopenblas0-pthread, or pass --anchor-lib-dir)")
    systems = build_systems(args)
    for s in systems:
        if s.skip_reason:
            log(f"SKIP {s.name}{' (tok2vec)' if s.kind == 'tok2vec' else ''}: {s.skip_reason}")
    samples = {}   # (figure, system) -> list of records
    problems = []
    for rep in range(1, args.repeat + 1):
        for s in systems:
            if s.skip_reason or s.failed:
                continue
            records, err = run_system(s, args, rep)
            for rec in records:
                samples.setdefault((rec["figure"], rec["system"]), []).append(rec)
            if err:
                s.failed = True
                msg = f"{s.name} (repeat {rep}): {err}; kept {len(records)} record(s), no further repeats"
                problems.append(msg)
                log(f"FAILED {msg}")

    medians = {}
    for key, recs in samples.items():
        values = [r["value"] for r in recs]
        first = recs[0]
        rec = {k: v for k, v in first.items() if k not in ("value",)}
        rec.update({
            "figure": key[0], "system": key[1], "value": statistics.median(values), "unit": first["unit"],
            "repeats": args.repeat, "n": len(values), "min": min(values), "max": max(values),
            "samples": values, "fraction": args.fraction, "latency_n": args.latency_n,
            "quick": bool(args.quick), "machine": machine,
        })
        if key[0] in ANYMODEL_LIMITS:  # the limit on AnyModel's overhead
            rec.update({"limit": ANYMODEL_LIMITS[key[0]], "pass": rec["value"] <= ANYMODEL_LIMITS[key[0]]})
        medians[key] = rec

    order = {f: i for i, f in enumerate(FIGURES)}
    sys_order = {s.name: i for i, s in enumerate(systems)}
    out_records = sorted(medians.values(),
                         key=lambda r: (order.get(r["figure"], len(order)), sys_order.get(r["system"], 99)))
    if args.out:
        d = os.path.dirname(os.path.abspath(args.out))
        os.makedirs(d, exist_ok=True)
        tmp = args.out + ".tmp"
        with open(tmp, "w") as f:
            json.dump(out_records, f, indent=1)
            f.write("\n")
        os.replace(tmp, args.out)
        log(f"wrote {len(out_records)} median record(s) to {args.out}")

    print(f"\ntenon benchmark: Fashion-MNIST MLP 784-512-512-10 and spaCy's tok2vec tagger — median of {args.repeat} repeat(s), "
          f"fraction {args.fraction}, latency-n {args.latency_n}; {machine['cpu']}, {machine['cores']} cores")
    if medians:
        print_table(medians, list(dict.fromkeys(s.name for s in systems)))
    else:
        print("(no results)")
    for s in systems:
        if s.skip_reason:
            print(f"skipped {s.name}{' (tok2vec)' if s.kind == 'tok2vec' else ''}: {s.skip_reason}")
    for msg in problems:
        print(f"failed  {msg}")
    sys.stdout.flush()
    return 0 if medians else 1


if __name__ == "__main__":
    sys.exit(main())
