#!/usr/bin/env python3
"""The timing simulator (issue 13) on torus-stress's traffic: the exact
model's emulated time beside the link-load bound and beside what the
emulator's current engine reports for the same job (several runs, to show
its spread), and how fast the simulator is.

    bench/timesim.py [--build build] [--runs 3] [--cases 4x4x4:2,8x8x8:1]

Each case is SHAPE:CORES. Prints a Markdown table.
"""
import argparse
import os
import re
import subprocess
import sys


def timesim(build, shape, cores, packets):
    out = subprocess.run([os.path.join(build, "bin", "torus-timesim"), "--torus", shape, "--cores", str(cores),
                          "--pattern", "stress", "--packets", str(packets), "--quiet"],
                         check=True, capture_output=True, text=True).stdout
    t = float(re.search(r"emulated time\s+([0-9.]+) us", out).group(1))
    b = float(re.search(r"link-load bound\s+([0-9.]+) us", out).group(1))
    c0 = float(re.search(r"core 0\s+([0-9.]+) us", out).group(1))
    m = re.search(r"simulator\s+(\d+) hops, \d+ events .* in ([0-9.]+) s wall \(([0-9.]+) M hops/s\)", out)
    return t, b, c0, int(m.group(1)), float(m.group(2)), float(m.group(3))


def emulator(build, shape, cores, packets):
    out = subprocess.run([os.path.join(build, "bin", "torusrun"), "--torus", shape, "--cores", str(cores),
                          "--quiet", "--timeout", "900", "--", os.path.join(build, "bin", "torus-stress"),
                          "--packets", str(packets)], check=True, capture_output=True, text=True).stdout
    return float(re.search(r"emulated time ([0-9.]+) us", out).group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--runs", type=int, default=3, help="emulator runs per case (0: none)")
    ap.add_argument("--packets", type=int, default=1)
    ap.add_argument("--cases", default="4x4x4:2,8x8x8:1")
    a = ap.parse_args()
    print(f"torus-stress --packets {a.packets}: the exact model (torus-timesim) and the emulator's engine\n")
    print("| torus | cores | exact model, job (us) | link-load bound (us) | job / bound | exact model, core 0 (us) "
          f"| emulator, core 0, {a.runs} runs (us) | simulator hops | simulator wall (s) | M hops/s |")
    print("|---|---:|---:|---:|---:|---:|---|---:|---:|---:|")
    for case in a.cases.split(","):
        shape, cores = case.split(":")
        t, b, c0, hops, wall, rate = timesim(a.build, shape, int(cores), a.packets)
        emu = [emulator(a.build, shape, int(cores), a.packets) for _ in range(a.runs)]
        emu_s = ", ".join(f"{e:.1f}" for e in emu) if emu else "-"
        print(f"| {shape} | {cores} | {t:.3f} | {b:.3f} | {t / b:.3f} | {c0:.3f} | {emu_s} | {hops} | {wall:.3f} | {rate:.2f} |",
              flush=True)


if __name__ == "__main__":
    sys.exit(main())
