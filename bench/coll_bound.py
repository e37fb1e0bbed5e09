#!/usr/bin/env python3
"""Emulated time of each collective against the bidirectional lower bound
(Fig. 2 of 003_b0aac8c3d10c7733.txt) for one vector size, every variant
side by side: multicolor with 2N cores, N cores and one core per node, the
direct baseline and the 1-D ring. Prints a Markdown table.

    bench/coll_bound.py [--build build] [--torus 4x4x4] [--size 16M] [--runs 1]
"""
import argparse
import json
import os
import subprocess
import sys
import time


def run(build, torus, cores, params, coll, algo, size):
    cmd = [os.path.join(build, "bin", "torusrun"), "--torus", torus, "--cores", str(cores), "--quiet"]
    for p in params:
        cmd += ["--param", p]
    cmd += ["--", os.path.join(build, "bin", "torus-bench"), coll, "--algo", algo, "--sizes", size, "--json"]
    t = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("coll_bound: failed (%d): %s\n%s" % (r.returncode, " ".join(cmd), r.stderr))
    row = json.loads(r.stdout)["rows"][0]
    print("  %-15s %-10s %d cores: %.1f s" % (coll, algo, cores, time.time() - t), file=sys.stderr)
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--torus", default="4x4x4")
    ap.add_argument("--size", default="16M", help="n in bytes (K/M suffixes)")
    ap.add_argument("--runs", type=int, default=1,
                    help="runs per multi-core cell (their times vary a little); the table shows the median")
    a = ap.parse_args()
    ndims = sum(1 for d in a.torus.split("x") if int(d) > 1)
    nodes = 1
    for d in a.torus.split("x"):
        nodes *= int(d)
    big = ["dma_counters=%d" % max(128, nodes + 2)]
    variants = [
        ("multicolor, 2N = %d cores" % (2 * ndims), 2 * ndims, [], "multicolor"),
        ("multicolor, N = %d cores" % ndims, ndims, [], "multicolor"),
        ("multicolor, 1 core", 1, [], "multicolor"),
        ("direct (baseline)", 1, big, "direct"),
        ("ring (1-D bucket)", 1, big, "ring"),
    ]
    colls = ["allgather", "reduce_scatter", "allreduce"]
    print("torus %s, n = %s, %d run(s) per cell (median)" % (a.torus, a.size, a.runs), file=sys.stderr)
    table = {}
    for name, cores, params, algo in variants:
        for coll in colls:
            # one core per node and no shared links: the same on every run
            runs = a.runs if cores > 1 else 1
            rows = sorted((run(a.build, a.torus, cores, params, coll, algo, a.size) for _ in range(runs)),
                          key=lambda r: r["emulated_ps"])
            table[(name, coll)] = rows[len(rows) // 2]
    print("| variant | " + " | ".join("%s: us (ratio)" % c for c in colls) + " | busiest / idlest link (allreduce) |")
    print("|---|" + "---|" * len(colls) + "---|")
    bound = {c: table[(variants[0][0], c)]["lower_bound_ps"] for c in colls}
    print("| lower bound | " + " | ".join("%.1f" % (bound[c] / 1e6) for c in colls) + " | |")
    for name, _, _, _ in variants:
        cells = []
        for c in colls:
            r = table[(name, c)]
            cells.append("%.1f (%.3f)" % (r["emulated_ps"] / 1e6, r["ratio"]))
        ar = table[(name, "allreduce")]
        print("| %s | %s | %d / %d |" % (name, " | ".join(cells), ar["link_max_bytes"], ar["link_min_bytes"]))
    print("\ncommand: bench/coll_bound.py --build %s --torus %s --size %s --runs %d" % (a.build, a.torus, a.size, a.runs))


if __name__ == "__main__":
    main()
