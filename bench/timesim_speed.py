#!/usr/bin/env python3
"""The timing simulator's speed, old build against new, side by side.

Runs torus-timesim on each traffic pattern with two builds, alternating,
R rounds, on one machine in one run (a shared, noisy host: compare the
ratio of the medians, not the figures), and prints a Markdown table of
packet hops per second. Both builds must give the same emulated time to
the picosecond on every run; a difference is an error.

    bench/timesim_speed.py --anchor OLDBUILD [--build build] [--rounds 3] [--patterns a2a,stress8,stress16]
    bench/timesim_speed.py --anchor-commit REV ...   (builds REV once, under bench/out/anchor-REV)

Patterns: a2a (all-to-all of 32 KiB puts, 4x4x4), stress8 (torus-stress
--packets 1 on 8x8x8), stress16 (the same on 16x16x16: several minutes
per run with an old build), stress12 (12x12x12), stress4c2 (4x4x4, 2
cores, 8 packets).
"""
import argparse
import os
import re
import statistics
import subprocess
import sys

PATTERNS = {
    "a2a": ["--torus", "4x4x4", "--pattern", "alltoall", "--bytes", "32768"],
    "stress8": ["--torus", "8x8x8", "--packets", "1"],
    "stress12": ["--torus", "12x12x12", "--packets", "1"],
    "stress16": ["--torus", "16x16x16", "--packets", "1"],
    "stress4c2": ["--torus", "4x4x4", "--cores", "2", "--packets", "8"],
}


def run(build, args):
    prog = os.path.join(build, "bin", "torus-timesim")
    if not os.access(prog, os.X_OK):
        sys.exit("timesim_speed: no %s (build it first, or name another build)" % prog)
    p = subprocess.run([prog] + args + ["--quiet"], capture_output=True, text=True)
    ps = re.search(r"emulated time\s+[0-9.]+ us \(the last deposit, at (\d+) ps\)", p.stdout)
    m = re.search(r"simulator\s+(\d+) hops, .* in ([0-9.]+) s wall \(([0-9.]+) M hops/s\)", p.stdout)
    if p.returncode != 0 or not ps or not m:
        sys.exit("timesim_speed: %s %s failed (status %d): %s" % (prog, " ".join(args), p.returncode,
                                                                  p.stderr.strip()[-500:]))
    return int(ps.group(1)), int(m.group(1)), float(m.group(3))


def anchor_build(rev):
    here = os.path.dirname(os.path.abspath(__file__))
    src = os.path.join(here, "out", "anchor-" + rev)
    build = os.path.join(src, "build")
    if not os.path.exists(os.path.join(build, "bin", "torus-timesim")):
        steps = [["cmake", "-S", src, "-B", build, "-DCMAKE_BUILD_TYPE=Release"],
                 ["cmake", "--build", build, "-j2", "--target", "torus-timesim"]]
        if not os.path.exists(src):
            steps.insert(0, ["git", "-C", os.path.dirname(here), "worktree", "add", "--detach", src, rev])
        for cmd in steps:
            if subprocess.run(cmd, stdout=subprocess.DEVNULL).returncode != 0:
                sys.exit("timesim_speed: building %s failed: %s" % (rev, " ".join(cmd)))
    return build


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--anchor", help="the old build directory")
    g.add_argument("--anchor-commit", help="a commit to build and run as the old build")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--patterns", default="a2a,stress8")
    a = ap.parse_args()
    if a.rounds < 1:
        ap.error("--rounds must be at least 1")
    names = a.patterns.split(",")
    for n in names:
        if n not in PATTERNS:
            ap.error("unknown pattern %r (known: %s)" % (n, ", ".join(PATTERNS)))
    old = a.anchor or anchor_build(a.anchor_commit)
    label = a.anchor_commit or a.anchor
    res = {n: {"old": [], "new": []} for n in names}
    for r in range(a.rounds):
        for n in names:
            for side, build in (("old", old), ("new", a.build)):
                ps, hops, rate = run(build, PATTERNS[n])
                res[n][side].append((ps, hops, rate))
                print("round %d/%d %s %s: %.2f M hops/s" % (r + 1, a.rounds, n, side, rate), file=sys.stderr)
    print("| pattern | hops | emulated (ps) | %s (M hops/s) | new (M hops/s) | ratio of medians |" % label)
    print("|---|---:|---:|---|---|---:|")
    bad = 0
    for n in names:
        runs = res[n]["old"] + res[n]["new"]
        if len({ps for ps, _, _ in runs}) != 1 or len({h for _, h, _ in runs}) != 1:
            print("error: %s: the runs disagree: %s" % (n, sorted({(ps, h) for ps, h, _ in runs})), file=sys.stderr)
            bad = 1
        o = [x[2] for x in res[n]["old"]]
        w = [x[2] for x in res[n]["new"]]
        print("| %s | %d | %d | %s | %s | %.2f |" % (" ".join(PATTERNS[n]), runs[0][1], runs[0][0],
                                                    ", ".join("%.2f" % x for x in o),
                                                    ", ".join("%.2f" % x for x in w),
                                                    statistics.median(w) / statistics.median(o)))
    return bad


if __name__ == "__main__":
    sys.exit(main())
