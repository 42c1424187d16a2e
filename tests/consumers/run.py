#!/usr/bin/python3
"""Builds and runs one consumer project against tenon (a test of `make test`):

  run.py SOURCE_ROOT BUILD_DIR pkgconfig|cmake|meson

pkgconfig and cmake: `meson install --destdir` of BUILD_DIR into a temporary directory, then
the project under tests/consumers/ is built against that tree (pkg-config with
PKG_CONFIG_PATH; CMake with tenon_DIR, the staged package's directory) and its program run. meson: a temporary
parent project with SOURCE_ROOT as its subprojects/tenon; it checks that the parent builds
none of tenon's tests, examples or benchmarks and gets no flag of tenon's (no -march,
-Werror or sanitizer flag in its compile commands). The program trains a small model and
exits 0 when it learned.
"""
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def sh(cmd, **kw):
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True, **kw)


def stage(build, dest):
    sh(["meson", "install", "-C", build, "--no-rebuild", "--destdir", dest, "--quiet"])
    pcs = glob.glob(os.path.join(dest, "**", "pkgconfig", "tenon.pc"), recursive=True)
    cfgs = glob.glob(os.path.join(dest, "**", "cmake", "tenon", "tenonConfig.cmake"), recursive=True)
    if not pcs or not cfgs:
        sys.exit(f"meson install did not install tenon.pc and tenonConfig.cmake (found {pcs}, {cfgs})")
    return os.path.dirname(pcs[0]), os.path.dirname(cfgs[0])


def main():
    root, build, kind = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2]), sys.argv[3]
    work = tempfile.mkdtemp(prefix=f"tenon-consumer-{kind}-")
    try:
        proj = os.path.join(work, "project")
        os.makedirs(proj)
        shutil.copy(os.path.join(HERE, "main.cpp"), work)
        for f in os.listdir(os.path.join(HERE, kind)):
            shutil.copy(os.path.join(HERE, kind, f), proj)
        if kind == "pkgconfig":
            pcdir, _ = stage(build, os.path.join(work, "stage"))
            env = dict(os.environ, PKG_CONFIG_PATH=pcdir)
            sh(["make", "-C", proj], env=env)
            sh([os.path.join(proj, "consumer")])
        elif kind == "cmake":
            _, cfgdir = stage(build, os.path.join(work, "stage"))
            sh(["cmake", "-S", proj, "-B", os.path.join(proj, "b"), "-DCMAKE_BUILD_TYPE=Release",
                "-Dtenon_DIR=" + cfgdir], stdout=subprocess.DEVNULL)
            sh(["cmake", "--build", os.path.join(proj, "b")])
            sh([os.path.join(proj, "b", "consumer")])
        elif kind == "meson":
            os.makedirs(os.path.join(proj, "subprojects"))
            os.symlink(root, os.path.join(proj, "subprojects", "tenon"))
            b = os.path.join(proj, "b")
            sh(["meson", "setup", b, proj], stdout=subprocess.DEVNULL)
            sh(["ninja", "-C", b, "-j", str(os.cpu_count() or 1)], stdout=subprocess.DEVNULL)
            sh([os.path.join(b, "consumer")])
            # Only the parent's program and tenon's library were built; no flag of tenon's leaks.
            cmds = json.load(open(os.path.join(b, "compile_commands.json")))
            built = {os.path.relpath(c["file"], proj) for c in cmds}
            extra = [f for f in built if "/tests/" in f or "/examples/" in f or "/bench/" in f]
            if extra:
                sys.exit(f"the parent project built tenon's tests/examples/benchmarks: {extra}")
            for c in cmds:
                if c["file"].endswith("main.cpp"):
                    bad = [w for w in ("-march", "-Werror", "-fsanitize") if w in c["command"]]
                    if bad:
                        sys.exit(f"tenon's flags leak into the parent project: {bad} in {c['command']}")
        else:
            sys.exit(f"unknown consumer {kind}")
        print(f"consumer {kind}: built and ran")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
