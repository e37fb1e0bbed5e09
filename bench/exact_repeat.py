#!/usr/bin/env python3
"""Exact time repeats: the same job under torusrun with five chaos seeds and
at fifo_slots 1, 64 and 256, each run traced. Prints, per run, the emulated
time, a hash of every link's counters and busy time (the report), a hash of
the trace (every packet: link, start, end, bytes, kind, tag, as torus-trace
--packets all lists them) and the wall time; then whether all runs of a job
agree.

    bench/exact_repeat.py [--build build] [--jobs stress-4x4x4,stress-8x8x8,ar-2x3x4,ag-4x4x4x2]

Jobs: stress-SHAPE (torus-stress --packets 1; 2 cores on 4x4x4, else 1),
ar-SHAPE (multicolor allreduce, 4 MiB, 3 cores), ag-SHAPE (multicolor
allgather, 4 MiB, 4 cores). Prints Markdown tables.
"""
import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time

RUNS = [("--chaos", "1"), ("--chaos", "2"), ("--chaos", "3"), ("--chaos", "4"), ("--chaos", "5"),
        ("--param", "fifo_slots=1"), ("--param", "fifo_slots=64"), ("--param", "fifo_slots=256")]


def job_args(build, name):
    kind, shape = name.split("-", 1)
    b = os.path.join(build, "bin")
    if kind == "stress":
        cores = "2" if shape == "4x4x4" else "1"
        return shape, cores, [os.path.join(b, "torus-stress"), "--packets", "1"]
    if kind in ("ar", "ag"):
        coll = "allreduce" if kind == "ar" else "allgather"
        cores = "3" if kind == "ar" else "4"
        return shape, cores, [os.path.join(b, "torus-bench"), coll, "--algo", "multicolor", "--sizes", "4M"]
    sys.exit(f"exact_repeat: unknown job {name}")


def emulated(out):
    m = re.search(r"emulated time ([0-9.]+) us", out)
    if m:
        return m.group(1)
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 8 and f[0].isdigit():
            return f[1]
    return "?"


def run_one(build, name, opt, tmp):
    shape, cores, prog = job_args(build, name)
    report = os.path.join(tmp, "run.json")
    trace = os.path.join(tmp, "run.trace")
    cmd = [os.path.join(build, "bin", "torusrun"), "--quiet", "--torus", shape, "--cores", cores,
           "--report", report, "--trace", trace, "--trace-packets", opt[0], opt[1], "--"] + prog
    t0 = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.monotonic() - t0
    if p.returncode:
        sys.exit(f"exact_repeat: {' '.join(cmd)} failed:\n{p.stderr}")
    with open(report) as f:
        rep = json.load(f)
    links = hashlib.sha256(json.dumps(rep.get("links"), sort_keys=True).encode()).hexdigest()[:12]
    pk = subprocess.run([os.path.join(build, "bin", "torus-trace"), trace, "--packets", "all"], check=True,
                        capture_output=True).stdout
    return emulated(p.stdout), rep.get("emulated_time_ps"), links, hashlib.sha256(pk).hexdigest()[:12], \
        pk.count(b"\n") - 1, wall


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--jobs", default="stress-4x4x4,stress-8x8x8,ar-2x3x4,ag-4x4x4x2")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for name in a.jobs.split(","):
            print(f"\n{name}:\n")
            print("| run | emulated (us) | job (ps) | links hash | trace hash | packets | wall (s) |")
            print("|---|---:|---:|---|---|---:|---:|")
            seen = set()
            for opt in RUNS:
                emu, ps, lh, th, n, wall = run_one(a.build, name, opt, tmp)
                seen.add((emu, ps, lh, th))
                print(f"| {opt[0]} {opt[1]} | {emu} | {ps} | {lh} | {th} | {n} | {wall:.2f} |", flush=True)
            print(f"\n{name}: {'all runs identical' if len(seen) == 1 else f'{len(seen)} different results'}")


if __name__ == "__main__":
    main()
