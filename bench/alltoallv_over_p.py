#!/usr/bin/env python3
"""A1 to A4 of 002 over the team size, on 002's Pattern1 and Pattern2 (issue
15; the manner of 002's Figs. 15 to 18): emulated time per algorithm, with
the link-load bound, the start-ups and the longest message per stage of
each. Prints a Markdown table per pattern.

    bench/alltoallv_over_p.py [--build build] [--torus 2x2 --torus 3x3 ...]
        [--patterns pattern1,pattern2] [--algos a1,a2,a3,a4,a4_blocking,a4_dual] [--size 8K]

One member per node, doubles, the largest message --size (1024 elements,
002's M_max, by default), seed 1, every result checked. An algorithm that
does not fit a team (A3 off the squares, A4 off the complete arrays) shows
as a dash. dma_counters is raised so that A2's 2P counters fit.
"""
import argparse
import json
import os
import subprocess
import sys
import time

DEFAULT_TORI = ["2x2", "3x3", "4x4", "6x6", "8x8", "10x10"]


def run(build, torus, algo, pattern, size):
    nodes = 1
    for d in torus.split("x"):
        nodes *= int(d)
    counters = 1 << max(6, (2 * nodes + 2 - 1).bit_length())
    cmd = [os.path.join(build, "bin", "torusrun"), "--torus", torus, "--quiet", "--timeout", "900", "--param",
           "dma_counters=%d" % counters, "--", os.path.join(build, "bin", "torus-bench"), "alltoallv", "--algo", algo,
           "--pattern", pattern, "--sizes", size, "--json"]
    t = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True)
    print("  %s %s %s: %.1f s%s" % (torus, pattern, algo, time.time() - t,
                                     "" if r.returncode == 0 else " (does not fit)"), file=sys.stderr)
    if r.returncode != 0:
        if "restrictions" in r.stderr:
            return None
        sys.exit("%s failed:\n%s" % (" ".join(cmd), r.stderr))
    row = json.loads(r.stdout)["rows"][0]
    if not row["checked"]:
        sys.exit("%s: wrong data" % " ".join(cmd))
    return nodes, row


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--torus", action="append")
    ap.add_argument("--patterns", default="pattern1,pattern2")
    ap.add_argument("--algos", default="a1,a2,a3,a4,a4_blocking,a4_dual")
    ap.add_argument("--size", default="8K", help="largest message (default 8K: 1024 doubles)")
    a = ap.parse_args()
    tori = a.torus or DEFAULT_TORI
    algos = a.algos.split(",")
    for pat in a.patterns.split(","):
        print("\n### %s, largest message %s\n" % (pat, a.size))
        print("| torus | P | bound (us) | " + " | ".join("%s (us)" % x for x in algos) + " | " +
              " | ".join("%s start-ups / longest (B)" % x for x in algos) + " |")
        print("|---|---:|---:|" + "---:|" * len(algos) + "---|" * len(algos))
        for t in tori:
            res = {x: run(a.build, t, x, pat, a.size) for x in algos}
            got = [r for r in res.values() if r]
            if not got:
                continue
            nodes, any_row = got[0]
            best = min(r[1]["emulated_ps"] for r in got)
            cells, counts = [], []
            for x in algos:
                if not res[x]:
                    cells.append("-")
                    counts.append("-")
                    continue
                row = res[x][1]
                mark = "*" if row["emulated_ps"] == best else ""
                cells.append("%s%.1f" % (mark, row["emulated_ps"] / 1e6))
                counts.append("%s / %s" % ("+".join(str(s) for s in row["startups"]),
                                           "/".join(str(s) for s in row["longest"])))
            print("| %s | %d | %.1f | %s | %s |" % (t, nodes, any_row["lower_bound_ps"] / 1e6, " | ".join(cells),
                                                    " | ".join(counts)))


if __name__ == "__main__":
    main()
