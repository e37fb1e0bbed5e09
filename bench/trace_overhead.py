#!/usr/bin/env python3
"""What --trace costs: torus-bench allreduce at one size under torusrun,
without and with --trace, alternated in one run (the machine is shared
and noisy: compare the medians side by side, as a ratio). Prints a Markdown
table: wall time of the collective (torus-bench's wall_s) and of the whole
job (torusrun), trace records and file size, and the emulated time, which
tracing must not change (where streams share links or cores it varies from
run to run with or without tracing: the shared-link approximation).

    bench/trace_overhead.py [--build build] [--torus 4x4x4] [--cores 1,3]
                            [--size 4M] [--runs 7] [--packets] [--out /tmp]
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time


def run(a, cores, trace):
    cmd = [os.path.join(a.build, "bin", "torusrun"), "--torus", a.torus, "--cores", str(cores)]
    path = os.path.join(a.out, "overhead.trace")
    if trace:
        cmd += ["--trace", path] + (["--trace-packets"] if a.packets else [])
    cmd += ["--", os.path.join(a.build, "bin", "torus-bench"), "allreduce", "--sizes", a.size, "--json"]
    t = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True)
    job = time.time() - t
    if r.returncode != 0:
        sys.exit("trace_overhead: failed (%d): %s\n%s" % (r.returncode, " ".join(cmd), r.stderr))
    row = json.loads(r.stdout)["rows"][0]
    rec = size = 0
    if trace:
        m = re.search(r"trace \S+: (\d+) records", r.stderr)
        rec = int(m.group(1)) if m else 0
        size = os.path.getsize(path)
        os.unlink(path)
    return row["wall_s"], job, row["emulated_ps"], rec, size


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--torus", default="4x4x4")
    ap.add_argument("--cores", default="1,3", help="cores per node, comma-separated")
    ap.add_argument("--size", default="4M")
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--packets", action="store_true", help="trace with --trace-packets (one record per packet)")
    ap.add_argument("--out", default="/tmp", help="where the trace file goes (deleted after each run)")
    a = ap.parse_args()
    rows = []
    for cores in [int(c) for c in a.cores.split(",")]:
        off, on = [], []
        for i in range(a.runs):
            # alternate, so drifts in the machine's load hit both alike
            for trace, acc in ((False, off), (True, on)) if i % 2 == 0 else ((True, on), (False, off)):
                acc.append(run(a, cores, trace))
            print("  cores %d run %d: off %.3f s, on %.3f s" % (cores, i + 1, off[-1][0], on[-1][0]), file=sys.stderr)
        med = lambda xs, k: statistics.median(x[k] for x in xs)
        rows.append((cores, med(off, 0), med(on, 0), med(off, 1), med(on, 1), on[0][3], on[0][4],
                     med(off, 2) / 1e6, med(on, 2) / 1e6))
    print("torus-bench allreduce %s on %s, %d runs each, medians; `bench/trace_overhead.py --torus %s --size %s "
          "--cores %s --runs %d%s`\n" % (a.size, a.torus, a.runs, a.torus, a.size, a.cores, a.runs,
                                         " --packets" if a.packets else ""))
    print("| cores/node | collective wall, off (s) | on (s) | on/off | job wall, off (s) | on (s) | on/off "
          "| trace records | trace MB | emulated us, off | on |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for c, wo, wn, jo, jn, rec, size, eo, en in rows:
        print("| %d | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f | %d | %.1f | %.1f | %.1f |" % (
            c, wo, wn, wn / wo, jo, jn, jn / jo, rec, size / 1e6, eo, en))


if __name__ == "__main__":
    main()
