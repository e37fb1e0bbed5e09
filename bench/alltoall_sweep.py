#!/usr/bin/env python3
"""Every all-to-all algorithm of the catalogue over a range of sizes on
several machines, side by side, with the catalogue's default for each size:
the measurements behind the default rule (coll/alltoall/alltoall_default.c).
Prints one Markdown table per machine: emulated microseconds per algorithm
and size (n = each member's send vector), the fastest marked with *, the
default's choice in the last column.

    bench/alltoall_sweep.py [--build build] [--sizes 256:1M]
        [--machine "8" --machine "4x4" --machine "3x3x2" ...]

A machine is torusrun's arguments, e.g. "4 --cores-map 1,2,3,4 ; cores"
(after ';': torus-bench's --members, default nodes).
"""
import argparse
import json
import os
import subprocess
import sys
import time

ALGOS = ["direct", "factor", "xor", "ring", "mesh2d", "bruck", "torus", "hierarchical_factor"]
MACHINES = ["8", "4x4", "3x3x2", "4x4x4 --param dma_counters=128", "4 --cores-map 1,2,3,4 ; cores",
            "2x2 --cores-map 1,4,2,3 ; cores"]


def run(build, machine, algo, sizes):
    targs, _, members = machine.partition(";")
    members = members.strip() or "nodes"
    cmd = [os.path.join(build, "bin", "torusrun"), "--torus"] + targs.split() + [
        "--quiet", "--", os.path.join(build, "bin", "torus-bench"), "alltoall", "--sizes", sizes, "--json",
        "--members", members, "--dtype", "int32"]
    if algo:
        cmd += ["--algo", algo]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        return None  # the team does not fit the algorithm (or its counters)
    return json.loads(r.stdout)["rows"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--sizes", default="256:1M")
    ap.add_argument("--machine", action="append")
    a = ap.parse_args()
    for m in a.machine or MACHINES:
        t0 = time.time()
        res = {al: run(a.build, m, al, a.sizes) for al in ALGOS}
        dflt = run(a.build, m, None, a.sizes)
        print("\n### %s\n" % m)
        have = [al for al in ALGOS if res[al]]
        print("| n (bytes) | block | " + " | ".join(have) + " | default |")
        print("|---:|---:|" + "---:|" * len(have) + "---|")
        rows = res[have[0]] if have else []
        for i, row in enumerate(rows):
            t = {al: res[al][i]["emulated_ps"] / 1e6 for al in have if i < len(res[al])}
            best = min(t, key=t.get)
            cells = [("*%.1f" if al == best else "%.1f") % t[al] if al in t else "" for al in have]
            d = dflt[i]["algo"] if dflt and i < len(dflt) else "?"
            print("| %d | %d | %s | %s |" % (row["bytes"], row["count"] * 4,
                                            " | ".join(cells), d + ("" if d == best else " (best: %s)" % best)))
        print("  %s: %.0f s" % (m, time.time() - t0), file=sys.stderr)


if __name__ == "__main__":
    main()
