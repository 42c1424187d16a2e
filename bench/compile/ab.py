#!/usr/bin/env python3
"""Compare the compile time of one file against two (or more) include trees, alternated.

    bench/compile/ab.py [--runs 5] FILE INCLUDE_DIR_A INCLUDE_DIR_B ...

Compiles FILE with g++ -std=c++20 -O2 -c once per include directory, round after round, and
prints the median and the minimum of the CPU seconds (user + sys) of each. Alternating keeps
both sides in the same phase of a shared machine, whose speed moves by 15% within an hour
(docs/performance.md, "Compile time"): compare the two medians, not either with an older run.
An include tree of another commit: `git archive REV include | tar -x -C /tmp/rev`.
"""
import argparse
import resource
import statistics
import subprocess


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--cxx", default="g++")
    ap.add_argument("file")
    ap.add_argument("includes", nargs="+")
    a = ap.parse_args()
    flags = ["-std=c++20", "-DNDEBUG", "-Wall", "-Wextra", "-isystem", "/usr/include/eigen3", "-O2", "-c", a.file,
             "-o", "/dev/null"]
    times = {inc: [] for inc in a.includes}
    for _ in range(a.runs):
        for inc in a.includes:
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            subprocess.run([a.cxx, "-I" + inc] + flags, check=True, stderr=subprocess.DEVNULL)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            times[inc].append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    for inc in a.includes:
        print(f"{statistics.median(times[inc]):6.2f} s median, {min(times[inc]):6.2f} s min  {inc}")


if __name__ == "__main__":
    main()
