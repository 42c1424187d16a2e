#!/usr/bin/env python3
"""Runs every test of a tenon build (meson test) and ends with one line `N passed, N failed`.

N counts Catch2 test cases (each test program reports its own), plus one for each test that
is not a Catch2 program; a skipped test (meson's exit 77: the CUDA programs where no GPU is
attached) is counted apart, as `, N skipped` after them. Usage: tests/run_tests.py BUILD_DIR [meson test args...]"""
import json
import os
import re
import subprocess
import sys


def catch2_counts(out):
    """(passed, failed) test cases from a Catch2 v2 console summary, or None."""
    m = re.search(r"All tests passed \(\d+ assertions? in (\d+) test cases?\)", out)
    if m:
        return int(m.group(1)), 0
    m = re.search(r"test cases:\s*(\d+)\s*\|\s*(\d+) passed\s*\|\s*(\d+) failed", out)
    if m:
        return int(m.group(2)), int(m.group(3))
    m = re.search(r"test cases:\s*(\d+)\s*\|\s*(\d+) failed", out)
    if m:
        return 0, int(m.group(2))
    return None


def failure_digest(name, out, limit=30):
    """The lines that say why a test failed (Catch2's FAILED blocks, or the output's end), so
    that a CI log which keeps only its last lines still names the failing checks."""
    lines = out.splitlines()
    picked = []
    test_case = None
    for i, line in enumerate(lines):
        if line.startswith("-----") and i + 2 < len(lines) and lines[i + 2].startswith("-----"):
            test_case = lines[i + 1]  # Catch2 prints each test case's name between dashes
        if "FAILED" in line:
            end = i + 1
            while end < len(lines) and lines[end].strip():
                end += 1  # a failure's expansion and messages end at a blank line
            picked += ["  [%s]" % test_case] if test_case else []
            picked += ["  " + l for l in lines[i:end]]
    if not picked:
        picked = ["  " + l for l in lines[-12:]]
    print("--- %s failed:" % name)
    print("\n".join(picked[:limit]))
    if len(picked) > limit:
        print("  ... (%d more lines in the log above)" % (len(picked) - limit))


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    rc = subprocess.call(["meson", "test", "-C", build, "--print-errorlogs"] + sys.argv[2:])
    log = os.path.join(build, "meson-logs", "testlog.json")
    passed = failed = skipped = 0
    digests = []
    try:
        with open(log) as f:
            for line in f:
                t = json.loads(line)
                ok = t.get("result") in ("OK", "EXPECTEDFAIL", "SKIP")
                counts = catch2_counts(t.get("stdout", "") or "")
                if t.get("result") == "SKIP":  # e.g. the CUDA programs on a machine without a GPU
                    skipped += 1
                elif counts and (ok or counts[1] > 0):
                    passed += counts[0]
                    failed += counts[1]
                else:
                    passed += ok
                    failed += not ok
                if not ok:
                    digests.append((t.get("name", "?"), t.get("stdout", "") or ""))
    except OSError:
        failed += 1
    for name, out in digests:
        failure_digest(name, out)
    if rc != 0 and failed == 0:
        failed = 1
    print("%d passed, %d failed" % (passed, failed) + (", %d skipped" % skipped if skipped else ""))
    return 0 if failed == 0 and rc == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
