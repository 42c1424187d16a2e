#!/usr/bin/python3
"""The compiler's peak memory on a generated long chain, against its budget (issue: a 500-layer
model compiles in <= 2 GB however it is written).

Usage: compile_memory.py --compiler g++ --include DIR --source FILE [--limit-mib 2048] [FLAGS...]

Compiles FILE with `COMPILER -std=c++20 -O0 -fsyntax-only -I DIR` and reads the peak resident
memory of the compiler's processes (getrusage of the children: the driver and its cc1plus).
Memory, not time: what GCC allocates for a translation unit does not move with the machine's
load, so this is a budget that a test can hold (times are make bench-compile's). The peak of
`l0 >> l1 >> ... >> l499` went over 2 GB once unnoticed (a check that every chain type
instantiated at each step); this fails when that happens again.
Prints one line and a Catch2-style summary `test cases: 1 | P passed | F failed`.
Standard library only (Debian's /usr/bin/python3).
"""
import argparse
import resource
import subprocess
import sys
import time


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--compiler", required=True)
    ap.add_argument("--include", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--limit-mib", type=float, default=2048.0)
    ap.add_argument("flags", nargs="*")
    a = ap.parse_args()
    cmd = [a.compiler, "-std=c++20", "-O0", "-fsyntax-only", "-I", a.include] + a.flags + [a.source]
    start = time.monotonic()
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    seconds = time.monotonic() - start
    peak_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024.0  # ru_maxrss is in KiB
    if proc.returncode != 0:
        print("FAIL %s: the compiler failed:\n%s" % (a.source, proc.stdout.decode("utf-8", "replace")[-4000:]))
        ok = False
    elif peak_mib > a.limit_mib:
        print("FAIL %s: peak %.0f MiB, budget %.0f MiB [%.1f s]" % (a.source, peak_mib, a.limit_mib, seconds))
        ok = False
    else:
        print("PASS %s: peak %.0f MiB, budget %.0f MiB [%.1f s]" % (a.source, peak_mib, a.limit_mib, seconds))
        ok = True
    print("test cases: 1 | %d passed | %d failed" % (int(ok), int(not ok)))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
