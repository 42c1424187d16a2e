#!/usr/bin/env python3
"""Runs every test of a tenon build (meson test) and ends with one line `N passed, N failed`.

N counts Catch2 test cases (each test program reports its own), plus one for each test that
is not a Catch2 program. Usage: tests/run_tests.py BUILD_DIR [meson test args...]"""
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


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    rc = subprocess.call(["meson", "test", "-C", build, "--print-errorlogs"] + sys.argv[2:])
    log = os.path.join(build, "meson-logs", "testlog.json")
    passed = failed = 0
    try:
        with open(log) as f:
            for line in f:
                t = json.loads(line)
                ok = t.get("result") in ("OK", "EXPECTEDFAIL", "SKIP")
                counts = catch2_counts(t.get("stdout", "") or "")
                if counts and (ok or counts[1] > 0):
                    passed += counts[0]
                    failed += counts[1]
                else:
                    passed += ok
                    failed += not ok
    except OSError:
        failed += 1
    if rc != 0 and failed == 0:
        failed = 1
    print("%d passed, %d failed" % (passed, failed))
    return 0 if failed == 0 and rc == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
