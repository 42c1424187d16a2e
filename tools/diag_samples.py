#!/usr/bin/python3
"""Regenerate the compiler output shown under each failing example of docs/diagnostics.md.

Usage: tools/diag_samples.py [--check] [DOC]   (DOC: docs/diagnostics.md)

Each example marked `<!-- doc-test: fails tenon-EXXX -->` is followed by its ```cpp block and,
where the page shows it, a line "g++ 12 (N lines in all; clang++ 14: M), the include lines left
out:" and a ``` block of g++'s output. This script compiles every such example as
`example.cpp` with g++ and clang++ (-std=c++20 -fsyntax-only, tenon's include/ by a relative
path), and writes the counts and g++'s output (the "In file included from" lines left out)
back into the page, so the samples stay what the compilers print for the current headers.
--check only reports the examples whose shown output differs (exit status 1 if any).
Standard library only (Debian's /usr/bin/python3).
"""
import os
import re
import subprocess
import sys
import tempfile

HEAD_RE = re.compile(r"^g\+\+ 12 \((\d+) lines in all; clang\+\+ 14: (\d+)\), the include lines left out:$")


def compile_lines(compiler, root, src):
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "example.cpp"), "w") as f:
            f.write(src)
        inc = os.path.relpath(os.path.join(root, "include"), d)
        r = subprocess.run([compiler, "-std=c++20", "-fsyntax-only", "-I" + inc, "example.cpp"], cwd=d,
                           capture_output=True, text=True)
        out = (r.stdout + r.stderr).replace(inc + "/", "include/")
    return out.splitlines()


def main():
    args = [a for a in sys.argv[1:] if a != "--check"]
    check = "--check" in sys.argv[1:]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    doc = args[0] if args else os.path.join(root, "docs", "diagnostics.md")
    lines = open(doc).read().split("\n")
    i, changed, differ = 0, 0, []
    while i < len(lines):
        if not lines[i].startswith("<!-- doc-test: fails"):
            i += 1
            continue
        # the example's code block
        j = i + 1
        assert lines[j].startswith("```cpp"), (doc, j + 1)
        k = j + 1
        while not lines[k].startswith("```"):
            k += 1
        src = "\n".join(lines[j + 1:k]) + "\n"
        if "#include" not in src:  # a fragment at namespace scope, as tests/docs/check_docs.py runs it
            src = "#include <tenon/tenon.hpp>\nusing namespace tenon;\n" + src
        # its shown output: the head line (after blank lines), a blank line, a ``` block
        h = k + 1
        while h < len(lines) and not lines[h].strip():
            h += 1
        if h >= len(lines) or not HEAD_RE.match(lines[h]):
            i = k + 1
            continue
        b = h + 1
        while not lines[b].startswith("```"):
            b += 1
        e = b + 1
        while not lines[e].startswith("```"):
            e += 1
        gxx = compile_lines("g++", root, src)
        clang = compile_lines("clang++", root, src)
        shown = [l for l in gxx if not l.startswith("In file included from") and not re.match(r"^\s+from ", l)]
        head = "g++ 12 (%d lines in all; clang++ 14: %d), the include lines left out:" % (len(gxx), len(clang))
        if lines[h] != head or lines[b + 1:e] != shown:
            differ.append(lines[i])
            if not check:
                lines[h] = head
                lines[b + 1:e] = shown
                changed += 1
        i = b + 1 + len(shown) + 1 if not check else e + 1
    if check:
        for d in differ:
            print("differs:", d)
        return 1 if differ else 0
    open(doc, "w").write("\n".join(lines))
    print("%d samples rewritten" % changed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
