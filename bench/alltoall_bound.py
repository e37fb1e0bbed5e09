#!/usr/bin/env python3
"""Every all-to-all algorithm against the link-load bound, block size by
block size, on a torus: emulated time over the bound of the direct schedule
(the fewest wire bytes on the busiest link direction that any schedule of
single-hop messages can put there under dimension-order routing; combining
algorithms, which move blocks over several messages, have higher own
bounds). Prints a Markdown table per torus (ratio per algorithm and block
size, the best marked with *) and writes OUT/alltoall_<torus>.svg (log-log:
emulated time per algorithm and the bound, against the block size). Rows
print as their block size is done, and OUT/alltoall_<torus>.json holds every
result so far.

    bench/alltoall_bound.py [--build build] [--torus 4x4x4 --torus 8x8x8]
        [--blocks 8:64K] [--step 2] [--max-block 8x8x8=8K] [--algos a,b] [--out bench/out]

One member per node (a node team), int32 blocks, every result checked.
dma_counters is raised to fit p + 2 counters, so direct, factor and
hierarchical_factor fit teams of every size here.
"""
import argparse
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import coll_fig6  # noqa: E402  (its log-log SVG plot)

ALGOS = ["direct", "factor", "xor", "ring", "mesh2d", "bruck", "torus", "hierarchical_factor"]


def parse_bytes(s):
    mult = {"K": 1 << 10, "M": 1 << 20}
    return int(s[:-1]) * mult[s[-1]] if s[-1] in mult else int(s)


def run(build, torus, nodes, algo, b):
    """One job: torus-bench's row for block size b, or None if it does not fit."""
    counters = 1 << max(6, (nodes + 2 - 1).bit_length())
    cmd = [os.path.join(build, "bin", "torusrun"), "--torus", torus, "--quiet", "--timeout", "900", "--param",
           "dma_counters=%d" % counters,
           "--", os.path.join(build, "bin", "torus-bench"), "alltoall", "--algo", algo, "--dtype", "int32",
           "--sizes", str(b * nodes), "--json"]
    t = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True)
    row = None
    if r.returncode == 0:
        for x in json.loads(r.stdout)["rows"]:
            if x["count"] * 4 == b:
                row = x
    print("  %s %s %d B: %.1f s%s" % (torus, algo, b, time.time() - t,
                                      " (does not fit)" if row is None else
                                      ", %.1f us emulated" % (row["emulated_ps"] / 1e6)), file=sys.stderr)
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--torus", action="append")
    ap.add_argument("--blocks", default="8:64K")
    ap.add_argument("--step", type=int, default=2, help="factor between block sizes (default 2)")
    ap.add_argument("--max-block", action="append", default=[],
                    help="TORUS=BYTES: the largest block there (memory: p * block * 2 per node)")
    ap.add_argument("--algos", default=",".join(ALGOS))
    ap.add_argument("--out", default="bench/out")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    lo, hi = (parse_bytes(x) for x in a.blocks.split(":"))
    caps = dict((t, parse_bytes(b)) for t, b in (m.split("=") for m in a.max_block))
    for torus in a.torus or ["4x4x4", "8x8x8"]:
        nodes = 1
        for d in torus.split("x"):
            nodes *= int(d)
        top = min(hi, caps.get(torus, hi))
        blocks = []
        b = lo
        while b <= top:
            blocks.append(b)
            b *= a.step
        # block by block, so that each row prints (and is saved) as it is measured
        algos = a.algos.split(",")
        res = {al: {} for al in algos}
        gone = set()  # algorithms that did not fit at a smaller block
        bound = {}
        print("\n### %s (%d nodes): emulated time / direct's link-load bound\n" % (torus, nodes))
        print("| block (bytes) | bound (us) | " + " | ".join(algos) + " |")
        print("|---:|---:|" + "---:|" * len(algos), flush=True)
        for b in blocks:
            for al in algos:
                if al in gone:
                    continue
                row = run(a.build, torus, nodes, al, b)
                if row is None:
                    gone.add(al)
                else:
                    res[al][b] = row
                    if al == "direct":
                        bound[b] = row["link_bound_ps"] / 1e6
            with open(os.path.join(a.out, "alltoall_%s.json" % torus), "w") as f:
                json.dump(res, f)
            if b not in bound:
                continue
            ratio = {al: res[al][b]["emulated_ps"] / 1e6 / bound[b] for al in algos if b in res[al]}
            best = min(ratio, key=ratio.get)
            print("| %d | %.1f | %s |" % (b, bound[b], " | ".join(
                ("*%.2f" if al == best else "%.2f") % ratio[al] if al in ratio else "" for al in algos)), flush=True)
        have = [al for al in algos if res[al]]
        series = [(al, [res[al][b]["emulated_ps"] / 1e6 if b in res[al] else None for b in blocks]) for al in have]
        series.append(("link-load bound (direct)", [bound.get(b) for b in blocks]))
        solid = [st for st in coll_fig6.STYLES if not st[2]]  # dashed is for the bound
        styles = solid[:len(have)] + [("#000000", "diamond", True)]
        path = os.path.join(a.out, "alltoall_%s.svg" % torus)
        coll_fig6.svg_plot(path, "All-to-all on %s (%d nodes, one member each)" % (torus, nodes),
                           "emulated time per algorithm (torus-bench alltoall, int32, checked) and the link-load bound",
                           blocks, series, xlabel="block size (bytes per member pair, log scale)", styles=styles)
        print("\n(%s)" % path)


if __name__ == "__main__":
    main()
