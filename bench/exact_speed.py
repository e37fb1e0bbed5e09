#!/usr/bin/env python3
"""The speed of torusrun --exact against the engine's own timing.

Runs each job without and with --exact, alternating, R rounds, on one
machine in one run (a shared, noisy host: compare the ratio, not the
seconds). Prints a Markdown table: the median wall time of each mode, the
ratio, the emulated times (the exact ones must repeat), and the timekeeper's
counts (TORUS_TK_DEBUG, medians over the exact runs: queries answered, and
the timekeeper's wall time simulating, arrivals answered included, and
asleep waiting for cores).

    bench/exact_speed.py [--build build] [--anchor OLDBUILD | --anchor-commit REV | --ab NAME=VALUE]
                         [--rounds 3] [--jobs ar-1,ar-3,stress-8x8x8]

--anchor runs the engine column from another build. The issue's anchor is
the last commit before its work, f636e3a: --anchor-commit f636e3a builds it
once (a git worktree and its build under bench/out/anchor-REV) and runs the
engine column from there. Without either, the engine column is this build
without --exact.

--ab NAME=VALUE compares --exact with itself, without and with NAME=VALUE in
the environment (TORUS_DECLARE=0: declared steps off), and also shows the
collective call's own wall time (torus-bench's wall_s).

Jobs: ar-C (the 4 MiB allreduce on 4x4x4 with C cores, the default
algorithm), arl-C (a loop of 60 allreduces of 64 KiB, 20 of them
untimed, on 4x4x4 with C cores), stress-SHAPE (torus-stress --packets 1), a2a-1K and a2a-64K
(the direct all-to-all on 4x4x4, blocks of 1 KiB and 64 KiB), cc-SHAPE and
cc-SHAPEcCORES (coll-check, every collective at small counts, as the test
suite runs it: cc-13, cc-2x2x2c6). The goal:
an exact wall time of at most 1.1 times the engine's (--anchor-commit
ceb7f2f, the engine's timing as it was before the work to retire it):

    bench/exact_speed.py --anchor-commit ceb7f2f --rounds 3 \
        --jobs ar-1,ar-3,stress-8x8x8,a2a-64K,a2a-1K
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import time


def job(build, name):
    b = os.path.join(build, "bin")
    kind, arg = name.split("-", 1)
    if kind == "ar":
        return ["--torus", "4x4x4", "--cores", arg], [os.path.join(b, "torus-bench"), "allreduce", "--sizes", "4M"]
    if kind == "arl":
        # a loop: 60 allreduces of 64 KiB (20 untimed), 4x4x4 with arg cores
        return ["--torus", "4x4x4", "--cores", arg], [os.path.join(b, "torus-bench"), "allreduce", "--sizes", "64K",
                                                    "--warmup", "20", "--reps", "40"]
    if kind == "stress":
        return ["--torus", arg], [os.path.join(b, "torus-stress"), "--packets", "1"]
    if kind == "a2a":
        # the direct all-to-all on 4x4x4 with blocks of arg bytes (64 members)
        block = {"1K": 1, "64K": 64}.get(arg)
        if block:
            return ["--torus", "4x4x4"], [os.path.join(b, "torus-bench"), "alltoall", "--algo", "direct",
                                          "--sizes", f"{block * 64}K"]
    if kind == "cc":
        # coll-check as the test suite runs it: every algorithm, dtype and op
        # at small counts (SHAPE, or SHAPEcCORES)
        shape, _, cores = arg.partition("c")
        counts = ["1", "7", "100"] if not cores else ["1", "7", "1000"]
        return (["--torus", shape] + (["--cores", cores] if cores else []),
                [os.path.join(b, "coll-check")] + counts)
    sys.exit(f"exact_speed: unknown job {name} (ar-C, arl-C, stress-SHAPE, a2a-1K, a2a-64K or cc-SHAPE[cCORES])")


def run(build, name, exact, anchor=None, ab=None):
    """One job: (wall s, emulated us, timekeeper counts or None, the call's wall s or None).
    ab: (NAME, VALUE) set in the environment of a run with --exact."""
    if not exact and anchor:
        build = anchor
    opts, prog = job(build, name)
    cmd = [os.path.join(build, "bin", "torusrun")] + (["--exact"] if exact else []) + opts + ["--"] + prog
    env = dict(os.environ, TORUS_TK_DEBUG="1") if exact else None
    if ab and exact:
        env[ab[0]] = ab[1]
    t0 = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.monotonic() - t0
    if p.returncode != 0:
        sys.exit(f"exact_speed: {' '.join(cmd)} failed ({p.returncode}):\n{p.stdout}{p.stderr}")
    m = re.search(r"job finished: .* emulated time ([0-9.]+) us", p.stderr)
    tk = re.search(r"(\d+) queries answered(?: \(\d+ paces\))?, .* wall time simulating ([0-9.]+) s, asleep ([0-9.]+) s", p.stderr)
    call = re.search(r"^ +\d+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +([0-9.]+) ", p.stdout, re.M)
    return (wall, m.group(1) if m else "?", (int(tk.group(1)), float(tk.group(2)), float(tk.group(3))) if tk else None,
            float(call.group(1)) if call else None)


def build_anchor(rev):
    """A worktree of rev and its build under bench/out (reused if there)."""
    top = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    tree = os.path.join(top, "bench", "out", f"anchor-{rev}")
    build = os.path.join(tree, "build")
    if os.path.isfile(os.path.join(build, "bin", "torusrun")):
        return build
    steps = []
    if not os.path.isdir(tree):
        steps.append(["git", "-C", top, "worktree", "add", "--detach", tree, rev])
    # (Release, as the build it is compared with should be)
    steps += [["cmake", "-S", tree, "-B", build, "-DCMAKE_BUILD_TYPE=Release"], ["cmake", "--build", build, "-j2"]]
    for cmd in steps:
        print(f"# exact_speed: {' '.join(cmd)}", file=sys.stderr, flush=True)
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            sys.exit(f"exact_speed: building the anchor {rev} failed ({' '.join(cmd)}):\n{p.stdout[-2000:]}{p.stderr[-2000:]}")
    return build


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--anchor", default=None, help="build directory of the anchor commit (engine column)")
    ap.add_argument("--anchor-commit", default=None, metavar="REV",
                    help="build REV under bench/out/anchor-REV (once) and use it as --anchor (the issue's: f636e3a)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--jobs", default="ar-1,ar-3,stress-8x8x8")
    ap.add_argument("--ab", default=None, metavar="NAME=VALUE",
                    help="compare --exact without and with NAME=VALUE in the environment (no engine column)")
    a = ap.parse_args()
    ab = None
    if a.ab:
        if "=" not in a.ab or a.anchor or a.anchor_commit:
            sys.exit("exact_speed: --ab NAME=VALUE, without --anchor")
        ab = tuple(a.ab.split("=", 1))
    if a.rounds < 1:
        sys.exit("exact_speed: --rounds must be at least 1")
    if a.anchor and a.anchor_commit:
        sys.exit("exact_speed: --anchor or --anchor-commit, not both")
    if a.anchor_commit:
        a.anchor = build_anchor(a.anchor_commit)
    if a.anchor and not os.path.isfile(os.path.join(a.anchor, "bin", "torusrun")):
        sys.exit(f"exact_speed: no {a.anchor}/bin/torusrun")
    jobs = a.jobs.split(",")
    res = {(j, e): [] for j in jobs for e in (False, True)}
    for r in range(a.rounds):
        for j in jobs:
            for e in (False, True):
                if ab:
                    res[(j, e)].append(run(a.build, j, True, None, ab if e else None))
                else:
                    res[(j, e)].append(run(a.build, j, e, a.anchor))
                w, emu, _, _ = res[(j, e)][-1]
                what = (f"--exact {a.ab}" if e else "--exact") if ab else ("--exact" if e else "engine")
                print(f"# round {r + 1}/{a.rounds}: {j} {what}: {w:.2f} s wall, "
                      f"{emu} us emulated", file=sys.stderr, flush=True)
    print(f"{a.rounds} alternating rounds; wall time medians"
          + (f"; engine column from {a.anchor}" if a.anchor else "") + "\n")
    if ab:
        print(f"| job | --exact wall (s) | with {a.ab} (s) | ratio | call (s) | call with it (s) "
              "| --exact emulated (us) | with it (us) |")
        print("|---|---:|---:|---:|---:|---:|---|---|")
        for j in jobs:
            w0 = statistics.median(x[0] for x in res[(j, False)])
            w1 = statistics.median(x[0] for x in res[(j, True)])
            c0 = [x[3] for x in res[(j, False)] if x[3] is not None]
            c1 = [x[3] for x in res[(j, True)] if x[3] is not None]
            cs = (f"{statistics.median(c0):.3f} | {statistics.median(c1):.3f}" if c0 and c1 else "- | -")
            e0 = ", ".join(sorted({x[1] for x in res[(j, False)]}))
            e1 = ", ".join(sorted({x[1] for x in res[(j, True)]}))
            print(f"| {j} | {w0:.2f} | {w1:.2f} | {w1 / w0:.2f} | {cs} | {e0} | {e1} |")
        return
    print("| job | engine wall (s) | --exact wall (s) | ratio | engine emulated (us) | --exact emulated (us) "
          "| queries | simulating (s) | asleep (s) |")
    print("|---|---:|---:|---:|---|---|---:|---:|---:|")
    for j in jobs:
        we = statistics.median(x[0] for x in res[(j, False)])
        wx = statistics.median(x[0] for x in res[(j, True)])
        ee = ", ".join(sorted({x[1] for x in res[(j, False)]}))
        ex = ", ".join(sorted({x[1] for x in res[(j, True)]}))
        tks = [x[2] for x in res[(j, True)] if x[2]]
        tk = "| ? | ? | ?" if not tks else (f"| {statistics.median(t[0] for t in tks):.0f} "
                                            f"| {statistics.median(t[1] for t in tks):.2f} "
                                            f"| {statistics.median(t[2] for t in tks):.2f}")
        print(f"| {j} | {we:.2f} | {wx:.2f} | {wx / we:.2f} | {ee} | {ex} {tk} |")


if __name__ == "__main__":
    main()
