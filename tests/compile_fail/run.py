#!/usr/bin/python3
"""Compile-fail tests: each snippet must fail to compile, with the right diagnostic first.

Usage: run.py --compiler g++ --include DIR [--max-lines-default 25] [--use | --used-only] [-j N] FILES...

A snippet starts with comment lines that say what its diagnostic must be:
  // expect: tenon-E001        the id the first error line must contain (required)
  // max-lines: 30             the most lines the compiler may print (default 25)
  // expect-text: Mlp          a string the output must contain (any number of these)

Each snippet is compiled with `COMPILER -std=c++20 -fsyntax-only -I DIR FILE`. It passes when
  * the compilation fails;
  * the first line that contains "error:" contains the expected id;
  * every expect-text string appears in the output;
  * the output has at most max-lines lines;
  * neither `check::ok` nor `failed_model` (tenon's placeholders after a failed check) appears in
    a diagnostic or an instantiation-context line;
  * no other tenon id than the expected one appears anywhere in the output (a second id is a
    cascade: an error of tenon's own that the first mistake caused);
  * `dyn` is never spelt 18446744073709551615 (widths and extents are signed, dyn is -1);
  * neither the first error line nor an instantiation-context line that names the check
    ("In instantiation of 'struct tenon::check::...'", clang's "in instantiation of template
    class 'tenon::check::...' requested here") mentions a `detail::` entity: the check and
    its arguments speak of the user's types, never of internal ones.
With --use, each snippet that builds a model at namespace scope (a line `auto model = ...`) is
compiled a second time with USE_BLOCK appended: the wrong model initialised, trained in a
minibatch loop, predicted with, lowered and saved, as a user's program does after the line
that is wrong. The same checks apply, with at most 25 lines (or the snippet's max-lines, if
lower): after the first failed check nothing of tenon's may add an error of its own.
"error:" rather than "error" because clang names its include chain, and tenon/error.hpp is in it.
One line per snippet (PASS/FAIL and why), then a Catch2-style summary line
`test cases: N | P passed | F failed`; the exit status is 1 if any snippet failed.
Standard library only (Debian's /usr/bin/python3).
"""
import argparse
import concurrent.futures
import os
import re
import subprocess
import sys
import tempfile
import time

DIAG_RE = re.compile(r"\b(error|warning|note):")  # a diagnostic, not an echoed source line
ID_RE = re.compile(r"tenon-E[0-9]{3}")
MODEL_RE = re.compile(r"^auto model = ", re.M)
USE_LINES_MAX = 25
DYN_UNSIGNED = "18446744073709551615"
USE_BLOCK = """
// ---- appended by compile_fail/run.py --use: the model used as a program uses it ----
#include <tenon/tenon.hpp>
int tenon_use_the_model() {
    using namespace tenon;
    Floats2d X({4, 4}), Y({4, 3});
    model.initialize(X, Y);
    Optimizer opt = Adam(0.001);
    for (auto [Xb, Yb] : multibatch(2, X, Y)) {
        auto [Yh, backprop] = model.begin_update(Xb);
        backprop(CategoricalCrossentropy().get_grad(Yh, Yb));
        model.finish_update(opt);
    }
    Floats2d P = model.predict(X);
    auto plan = lower(model);
    Floats2d P2 = plan.predict(X);
    std::vector<std::uint8_t> bytes = model.to_bytes();
    model.from_bytes(bytes);
    return int(P.shape(0) + P2.shape(0) + bytes.size());
}
"""
HEADER_RE = re.compile(r"^\s*//\s*(expect|max-lines|expect-text)\s*:\s*(.*?)\s*$")
CONTEXT_RE = re.compile(
    r"In instantiation of|required from|required by substitution|in instantiation of|"
    r"while substituting|while checking|requested here")
# The context line that names the check itself (g++'s "In instantiation of 'struct
# tenon::check::...'", clang's "in instantiation of template class 'tenon::check::...'"), not a
# line that only mentions one of check's names among a function's template arguments.
CHECK_LINE_RE = re.compile(r"[Ii]n instantiation of (?:template class |)['‘](?:struct |)tenon::check::")


def read_expectations(path, max_lines_default):
    want = {"id": None, "max_lines": max_lines_default, "texts": []}
    with open(path, encoding="utf-8") as f:
        for line in f:
            if not line.lstrip().startswith("//"):
                if line.strip():
                    break  # the header is the comment block at the top
                continue
            m = HEADER_RE.match(line)
            if not m:
                continue
            key, value = m.group(1), m.group(2)
            if key == "expect":
                want["id"] = value
            elif key == "max-lines":
                want["max_lines"] = int(value)
            else:
                want["texts"].append(value)
    return want


def check(compiler, include, path, max_lines_default, extra_flags, use=False):
    """(passed, reason, seconds, output) for one snippet (with --use: the snippet and USE_BLOCK)."""
    name = os.path.basename(path)
    try:
        want = read_expectations(path, max_lines_default)
    except (OSError, ValueError) as e:
        return False, "cannot read the header: %s" % e, 0.0, ""
    if not want["id"]:
        return False, "no `// expect: tenon-E0NN` line", 0.0, ""
    if use:
        want["max_lines"] = min(want["max_lines"], USE_LINES_MAX)
        with open(path, encoding="utf-8") as f:
            source = f.read() + USE_BLOCK
        with tempfile.TemporaryDirectory() as tmp:
            used = os.path.join(tmp, name[:-4] + "_used.cpp")
            with open(used, "w", encoding="utf-8") as f:
                f.write(source)
            return check_compile(compiler, include, used, want, extra_flags)
    return check_compile(compiler, include, path, want, extra_flags)


def uses_model(path):
    with open(path, encoding="utf-8") as f:
        return MODEL_RE.search(f.read()) is not None


def check_compile(compiler, include, path, want, extra_flags):
    cmd = [compiler, "-std=c++20", "-fsyntax-only", "-fdiagnostics-color=never", "-I", include] + extra_flags + [path]
    start = time.monotonic()
    try:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as e:
        return False, "could not run %s: %s" % (compiler, e), time.monotonic() - start, ""
    seconds = time.monotonic() - start
    out = proc.stdout.decode("utf-8", "replace")
    lines = out.splitlines()
    if proc.returncode == 0:
        return False, "compiled, but must not", seconds, out
    first_error = next((l for l in lines if "error:" in l), None)
    if first_error is None:
        return False, "failed without an error line", seconds, out
    if want["id"] not in first_error:
        return False, "first error is not %s: %s" % (want["id"], first_error.strip()[:300]), seconds, out
    missing = [t for t in want["texts"] if t not in out]
    if missing:
        return False, "output lacks %s" % ", ".join(repr(t) for t in missing), seconds, out
    placeholder = next((l for l in lines if ("check::ok" in l or "failed_model" in l) and
                        (DIAG_RE.search(l) or CONTEXT_RE.search(l))), None)
    if placeholder is not None:
        return False, "an internal placeholder in the output: %s" % placeholder.strip()[:300], seconds, out
    others = sorted(set(ID_RE.findall(out)) - {want["id"]})
    if others:
        return False, "another tenon id in the output (a cascade): %s" % ", ".join(others), seconds, out
    if DYN_UNSIGNED in out:
        return False, "dyn printed as %s (an unsigned width or extent)" % DYN_UNSIGNED, seconds, out
    if len(lines) > want["max_lines"]:
        return False, "%d lines of output, at most %d allowed" % (len(lines), want["max_lines"]), seconds, out
    internal = [l for l in lines if "detail::" in l and (l is first_error or CHECK_LINE_RE.search(l))]
    if internal:
        return False, "a detail:: name in the instantiation context: %s" % internal[0].strip()[:300], seconds, out
    return True, "%s in %d lines" % (want["id"], len(lines)), seconds, out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--compiler", required=True)
    ap.add_argument("--include", required=True, help="tenon's include directory")
    ap.add_argument("--max-lines-default", type=int, default=25)
    ap.add_argument("-j", "--jobs", type=int, default=min(2, os.cpu_count() or 1))
    ap.add_argument("--flag", action="append", default=[], help="an extra compiler flag (repeatable)")
    ap.add_argument("-v", "--verbose", action="store_true", help="print the output of failing snippets")
    ap.add_argument("--use", action="store_true",
                    help="compile each snippet that builds `auto model` again, with USE_BLOCK appended")
    ap.add_argument("--used-only", action="store_true", help="only the --use compilations")
    ap.add_argument("files", nargs="+")
    args = ap.parse_args()
    jobs = [] if args.used_only else [(f, False) for f in args.files]
    if args.use or args.used_only:
        jobs += [(f, True) for f in args.files if uses_model(f)]

    start = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = [pool.submit(check, args.compiler, args.include, f, args.max_lines_default, args.flag, u)
                   for f, u in jobs]
        results = [fut.result() for fut in futures]
    passed = 0
    for (path, used), (ok, reason, seconds, out) in zip(jobs, results):
        passed += ok
        print("%s %s%s (%s): %s [%.1f s]" % ("PASS" if ok else "FAIL", os.path.basename(path), " used" if used else "",
                                          os.path.basename(args.compiler), reason, seconds))
        if not ok and args.verbose and out:
            print("    " + "\n    ".join(out.splitlines()))
    failed = len(results) - passed
    print("%s: %d snippets in %.1f s" % (args.compiler, len(results), time.monotonic() - start))
    print("test cases: %d | %d passed | %d failed" % (len(results), passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
