#!/usr/bin/env python3
"""Runs a program that must be stopped by AddressSanitizer: passes when it exits non-zero and
its output has an ASan report of one of the given kinds. Usage: expect_asan.py KINDS EXE [ARGS...]
(KINDS: comma-separated, e.g. heap-use-after-free,use-after-poison)."""
import subprocess
import sys

kinds = sys.argv[1].split(",")
r = subprocess.run(sys.argv[2:], capture_output=True, text=True)
out = r.stdout + r.stderr
found = [k for k in kinds if "AddressSanitizer: " + k in out]
print(out[-4000:])
if r.returncode != 0 and found:
    print("expected ASan report: %s" % found[0])
    sys.exit(0)
print("FAIL: expected an ASan report (%s); exit status %d" % (", ".join(kinds), r.returncode))
sys.exit(1)
