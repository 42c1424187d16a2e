#!/usr/bin/python3
"""Compile-time benchmark (a script, not a unit test): how long translation units that use
tenon take to compile, and how long the diagnostics of a deep error are.

Each figure is the median of --runs runs (default 3) of one compiler process, timed with
/usr/bin/time: user+sys CPU seconds, wall seconds and the maximum resident set size.
CPU time is the figure to compare (wall time depends on what else the machine runs);
the load average is printed before and after.

  (a) `#include <tenon/tenon.hpp>` alone, -O2 and -O0 (-c)
  (b) examples/mnist_mlp.cpp, -O2 (-c)
  (f) bench/compile/spacy_tagger.cpp, -O2 (-c): a spaCy-like tok2vec + tagger + training loop
  (g) beside them, the anchors' programs of `make bench` compiled the same way (-O2 -c):
      bench/libtorch_bench.cpp (LibTorch, the same MLP) and bench/dlib_bench.cpp (dlib),
      where their headers are installed (make bench-deps)
  (c) a generated 500-layer chain (bench/compile/gen_chain.py): -O0 -c, -O2 -c,
      -O2 -fsyntax-only
  (d) the same chain with a width mismatch at layer 400: lines of diagnostics from g++
      and clang++ (and the longest line)
  (e) the same 500 layers written l1 >> l2 >> ... >> l500: -O0 -fsyntax-only and -O2 -c
      (every step makes a chain type, of 1, 2, ... 500 layers; each step's code is constant,
      the types' names grow)

Budgets (the issues): (a) -O2 <= 2.5 s, (b) <= 3 s, (f) <= 5 s, (c) and (e) <= 60 s and
<= 2 GB with the default -ftemplate-depth, (d) <= 40 lines. (g) has no budget: it is the
scale the others are read against.

  bench/compile/run.py [--runs 3] [--only a,b,c,d] [--layers 500] [--cxx g++]
                       [--clang clang++] [--root DIR] [--out build/compile_bench.json]

--root measures another checkout (e.g. an older commit unpacked with git archive).
Writes the figures as JSON records {"figure", "system": "tenon", "value", "unit"}.
"""
import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


def load():
    try:
        with open("/proc/loadavg") as f:
            return " ".join(f.read().split()[:3])
    except OSError:
        return "?"


def run(cmd, timeout, **kw):
    """subprocess.run in its own process group, all of which is killed on a timeout (the
    compiler driver's cc1plus would otherwise outlive it)."""
    p = subprocess.Popen(cmd, start_new_session=True, text=True, **kw)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        raise
    return p.returncode, out, err


def time_once(cmd, timeout):
    """One run under /usr/bin/time: (rc, cpu_s, wall_s, rss_mb, stderr)."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as tf:
        full = ["/usr/bin/time", "-f", "%U %S %e %M", "-o", tf.name] + cmd
        try:
            rc, _, err = run(full, timeout, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        except subprocess.TimeoutExpired:
            return None, float("nan"), float(timeout), float("nan"), "timeout"
        line = tf.read().strip().splitlines()
        u, s, e, m = (line[-1].split() if line else ["nan"] * 4)
        return rc, float(u) + float(s), float(e), float(m) / 1024.0, err


def measure(cmd, runs, timeout):
    rows = [time_once(cmd, timeout) for _ in range(runs)]
    rcs = {r[0] for r in rows}
    med = lambda i: statistics.median(r[i] for r in rows)
    return {"ok": rcs == {0}, "rc": sorted(rcs, key=str), "cpu_s": med(1), "wall_s": med(2),
            "rss_mb": med(3), "stderr": rows[-1][4]}


def diag_lines(cmd, timeout):
    try:
        rc, out, _ = run(cmd, timeout, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    except subprocess.TimeoutExpired:
        return None, None, None, "timeout"
    lines = out.splitlines()
    return rc, len(lines), max((len(l) for l in lines), default=0), out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--only", default="a,b,c,d,e,f,g")
    ap.add_argument("--layers", type=int, default=500)
    ap.add_argument("--bad-at", type=int, default=400)
    ap.add_argument("--cxx", default="g++")
    ap.add_argument("--clang", default="clang++")
    ap.add_argument("--root", default=REPO)
    ap.add_argument("--timeout", type=int, default=600)
    ap.add_argument("--out", default=os.path.join(REPO, "build", "compile_bench.json"))
    ap.add_argument("--keep", help="keep the generated sources in this directory")
    a = ap.parse_args()
    only = set(a.only.split(","))
    root = os.path.abspath(a.root)

    base = ["-std=c++20", "-DNDEBUG", "-Wall", "-Wextra", "-I" + os.path.join(root, "include"),
            "-isystem", "/usr/include/eigen3", "-fno-diagnostics-color"]
    work = a.keep or tempfile.mkdtemp(prefix="tenon-compile-bench-")
    os.makedirs(work, exist_ok=True)
    obj = os.path.join(work, "out.o")
    inc = os.path.join(work, "include_only.cpp")
    with open(inc, "w") as f:
        f.write("#include <tenon/tenon.hpp>\n")
    gen = os.path.join(HERE, "gen_chain.py")
    chain_src = os.path.join(work, f"chain{a.layers}.cpp")
    bad_src = os.path.join(work, f"chain{a.layers}_bad{a.bad_at}.cpp")
    subprocess.run([sys.executable, gen, chain_src, "--layers", str(a.layers)], check=True)
    subprocess.run([sys.executable, gen, bad_src, "--layers", str(a.layers), "--bad-at", str(a.bad_at)],
                   check=True)
    ops_src = os.path.join(work, f"chain{a.layers}_ops.cpp")
    subprocess.run([sys.executable, gen, ops_src, "--layers", str(a.layers), "--style", "ops"], check=True)

    cxx = [a.cxx]
    version = subprocess.run(cxx + ["--version"], stdout=subprocess.PIPE, text=True).stdout.splitlines()[0]
    print(f"compile-time benchmark of {root} with {version}; median of {a.runs} runs")
    print(f"load average before: {load()}  ({os.cpu_count()} CPUs)")

    # (name, figure id, command, budget in cpu seconds or None, budget in MB or None)
    n = a.layers
    cases = []
    if "a" in only:
        cases += [("#include <tenon/tenon.hpp>  -O2", "include_only_O2", cxx + base + ["-O2", "-c", inc, "-o", obj], 2.5, None),
                  ("#include <tenon/tenon.hpp>  -O0", "include_only_O0", cxx + base + ["-O0", "-c", inc, "-o", obj], None, None)]
    if "b" in only:
        ex = os.path.join(root, "examples", "mnist_mlp.cpp")
        cases += [("examples/mnist_mlp.cpp  -O2", "mnist_mlp_O2", cxx + base + ["-O2", "-c", ex, "-o", obj], 3.0, None)]
    if "f" in only:
        sp = os.path.join(root, "bench", "compile", "spacy_tagger.cpp")
        cases += [("spaCy-like tagger + training  -O2", "spacy_tagger_O2", cxx + base + ["-O2", "-c", sp, "-o", obj], 5.0, None)]
    if "c" in only:
        cases += [(f"{n}-layer chain  -O0", f"chain{n}_O0", cxx + base + ["-O0", "-c", chain_src, "-o", obj], 60.0, 2048.0),
                  (f"{n}-layer chain  -O2", f"chain{n}_O2", cxx + base + ["-O2", "-c", chain_src, "-o", obj], 60.0, 2048.0),
                  (f"{n}-layer chain  -O2 -fsyntax-only", f"chain{n}_syntax", cxx + base + ["-O2", "-fsyntax-only", chain_src], 60.0, 2048.0)]
    if "e" in only:
        cases += [(f"{n} layers l1 >> l2 >> ...  -O0 -fsyntax-only", f"chain{n}_ops_syntax",
                   cxx + base + ["-O0", "-fsyntax-only", ops_src], 60.0, 2048.0),
                  (f"{n} layers l1 >> l2 >> ...  -O2", f"chain{n}_ops_O2",
                   cxx + base + ["-O2", "-c", ops_src, "-o", obj], 60.0, 2048.0)]
    if "g" in only:
        # The anchors' own programs, with the flags their meson targets use (no -Wall: their
        # headers' warnings are not ours to count).
        anchor = ["-DNDEBUG", "-fno-diagnostics-color", "-O2", "-c", "-o", obj]
        torch_inc = "/usr/include/torch/csrc/api/include"
        if os.path.isdir(torch_inc):
            cases += [("LibTorch's MLP (bench/libtorch_bench.cpp)  -O2", "anchor_libtorch_O2",
                       cxx + ["-std=c++17", "-isystem", torch_inc] + anchor + [os.path.join(root, "bench", "libtorch_bench.cpp")],
                       None, None)]
        else:
            print("  (LibTorch's headers not installed: no LibTorch figure; make bench-deps)")
        if os.path.isdir("/usr/include/dlib"):
            cases += [("dlib's MLP (bench/dlib_bench.cpp)  -O2", "anchor_dlib_O2",
                       cxx + ["-std=c++20"] + anchor + [os.path.join(root, "bench", "dlib_bench.cpp")], None, None)]
        else:
            print("  (dlib's headers not installed: no dlib figure; make bench-deps)")

    records, table = [], []
    for label, fig, cmd, budget_s, budget_mb in cases:
        r = measure(cmd, a.runs, a.timeout)
        verdict = ""
        if not r["ok"]:
            verdict = "FAILED (rc %s)" % r["rc"]
            err = r["stderr"].strip().splitlines()
            if err:
                verdict += ": " + next((l for l in err if "error" in l), err[-1])[:160]
        elif budget_s is not None:
            over = r["cpu_s"] > budget_s or (budget_mb is not None and r["rss_mb"] > budget_mb)
            verdict = ("OVER" if over else "ok") + f" (<= {budget_s:g} s" + (f", {budget_mb:g} MB)" if budget_mb else ")")
        table.append((label, f"{r['cpu_s']:.2f}", f"{r['wall_s']:.2f}", f"{r['rss_mb']:.0f}", verdict))
        print(f"  {label:42s} cpu {r['cpu_s']:7.2f} s  wall {r['wall_s']:7.2f} s  rss {r['rss_mb']:6.0f} MB  {verdict}",
              flush=True)
        if r["ok"]:
            system = fig.split("_")[1] if fig.startswith("anchor_") else "tenon"
            records += [{"figure": f"compile_{fig}_cpu", "system": system, "value": round(r["cpu_s"], 3), "unit": "s"},
                        {"figure": f"compile_{fig}_wall", "system": system, "value": round(r["wall_s"], 3), "unit": "s"},
                        {"figure": f"compile_{fig}_max_rss", "system": system, "value": round(r["rss_mb"], 1), "unit": "MB"}]

    if "d" in only:
        compilers = [("g++", cxx)]
        if shutil.which(a.clang):
            compilers.append(("clang++", [a.clang]))
        else:
            print(f"  ({a.clang} not found: no clang figure; apt-get install clang)")
        for name, c in compilers:
            rc, lines, longest, out = diag_lines(c + base + ["-O0", "-fsyntax-only", bad_src], a.timeout)
            if rc is None:
                verdict = "FAILED (timeout)"
            elif rc == 0:
                verdict = "FAILED (compiled: no diagnostic)"
            else:
                ok_id = "tenon-E001" in out
                verdict = ("ok" if lines <= 40 and ok_id else "OVER" if ok_id else "no [tenon-E001] in output") + \
                    " (<= 40 lines)"
            label = f"mismatch at layer {a.bad_at}: {name} lines"
            table.append((label, str(lines), "", "", verdict))
            print(f"  {label:42s} {lines} lines (longest {longest} chars)  {verdict}", flush=True)
            if lines is not None and rc:
                records += [{"figure": f"diag_chain{n}_bad{a.bad_at}_{name}_lines", "system": "tenon", "value": lines, "unit": "lines"},
                            {"figure": f"diag_chain{n}_bad{a.bad_at}_{name}_longest_line", "system": "tenon", "value": longest, "unit": "chars"}]
            if a.keep:
                with open(os.path.join(work, f"diag_{name}.txt"), "w") as f:
                    f.write(out or "")

    print(f"load average after: {load()}")
    print()
    w = max(len(t[0]) for t in table) if table else 10
    print(f"| {'figure':{w}s} | cpu s / lines | wall s | max RSS MB | budget |")
    print(f"|{'-' * (w + 2)}|---------------|--------|------------|--------|")
    for t in table:
        print(f"| {t[0]:{w}s} | {t[1]:>13s} | {t[2]:>6s} | {t[3]:>10s} | {t[4]} |")

    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(records, f, indent=1)
    print(f"\nwrote {a.out}")
    if not a.keep:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
