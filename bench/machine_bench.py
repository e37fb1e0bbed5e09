#!/usr/bin/env python3
"""Benchmarks of the machine layer (links and packets) and the DMA unit.

  bench/machine_bench.py [--build build] [--rounds 5] [--packets 2000000]
                         [--stress 8x8x8] [--big 16x16x16] [--big-timeout 900]

1. Link throughput: the plain SPSC ring, the emulator's link FIFO and the
   whole emulated path, run alternately (side by side, same load) and
   reported as medians and ratios to the plain ring.
2. DMA direct put of 1 MiB messages between two neighbouring nodes, side by
   side with the raw packet path of (1), and descriptor post rates per core.
3. torus-stress on a large torus: wall time, emulated time and the peak
   memory of the whole job (sum of PSS over torusrun and every node process,
   sampled every 0.2 s; PSS counts shared link memory once), and of its page
   tables (VmPTE, which PSS does not count: each process maps the job's
   memory).
"""
import argparse, os, re, statistics, subprocess, sys, time


def run_linkbench(b, mode, packets):
    if mode in ("job", "put"):
        cmd = [f"{b}/torusrun", "--quiet", "--torus", "2", "--", f"{b}/torus-linkbench",
               "--mode", mode, "--packets", str(packets // 2)]
    else:
        cmd = [f"{b}/torus-linkbench", "--mode", mode, "--packets", str(packets)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        f = line.split()
        if f and f[0] == mode:
            return float(f[3]), float(f[4])
    raise RuntimeError(f"no result from {cmd}: {out}")


def link_table(b, rounds, packets):
    res = {m: [] for m in ("ring", "link", "job")}
    for r in range(rounds):
        for m in res:
            res[m].append(run_linkbench(b, m, packets))
        print(f"  round {r + 1}/{rounds}: " + ", ".join(
            f"{m} {res[m][-1][0]:.2f} Mpkt/s" for m in res), file=sys.stderr)
    ring = statistics.median(x[0] for x in res["ring"])
    print(f"\nLink throughput, 240-byte payloads, median of {rounds} alternating rounds")
    print(f"{'path':<44} {'Mpkt/s':>8} {'payload GB/s':>13} {'/ ring':>7}")
    names = {"ring": "plain SPSC ring, 256-byte slots (baseline)",
             "link": "emulator link FIFO between 2 processes",
             "job": "core->engine->link->engine->core (torusrun)"}
    for m in res:
        pk = statistics.median(x[0] for x in res[m])
        gb = statistics.median(x[1] for x in res[m])
        print(f"{names[m]:<44} {pk:8.2f} {gb:13.3f} {pk / ring:7.2f}")
    per_round = [l[0] / r[0] for l, r in zip(res["link"], res["ring"])]
    print(f"link/ring per round: " + " ".join(f"{x:.2f}" for x in per_round))


def dma_table(b, rounds, packets):
    res = {m: [] for m in ("job", "put")}
    for r in range(rounds):
        for m in res:
            res[m].append(run_linkbench(b, m, packets))
    raw = [x[0] for x in res["job"]]
    put = [x[0] for x in res["put"]]
    print(f"\nDMA direct put, 1 MiB messages, node 0 -> node 1, median of {rounds} alternating rounds")
    print(f"{'path':<44} {'Mpkt/s':>8} {'payload GB/s':>13} {'/ raw':>7}")
    for m, name in (("job", "raw packets, core->...->core (as above)"),
                    ("put", "DMA direct put, engine->...->memory")):
        pk = statistics.median(x[0] for x in res[m])
        gb = statistics.median(x[1] for x in res[m])
        print(f"{name:<44} {pk:8.2f} {gb:13.3f} {pk / statistics.median(raw):7.2f}")
    print("put/raw per round: " + " ".join(f"{p / r:.2f}" for p, r in zip(put, raw)))
    print(f"\nDescriptor post rate (8-byte puts, waiting when the FIFO is full)")
    print(f"{'cores on node 0':<16} {'per core M/s':>40}  {'node total M/s':>14}")
    for cores in (1, 2, 4):
        out = subprocess.run([f"{b}/torusrun", "--quiet", "--torus", "2", "--cores", str(cores), "--",
                              f"{b}/torus-linkbench", "--mode", "post", "--packets", "200000"],
                             check=True, capture_output=True, text=True).stdout
        rates = [float(l.split()[3]) for l in out.splitlines() if l.startswith("post ")]
        print(f"{cores:<16} {' '.join(f'{x:.2f}' for x in rates):>40}  {sum(rates):14.2f}")


def tree_pss_kib(root):
    """Sum of Pss, and of page tables (VmPTE, which Pss leaves out), over root
    and all its descendants, in KiB."""
    children = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            children.setdefault(ppid, []).append(int(pid))
        except (OSError, IndexError, ValueError):
            pass
    total, pte, todo = 0, 0, [root]
    while todo:
        p = todo.pop()
        todo.extend(children.get(p, []))
        try:
            with open(f"/proc/{p}/smaps_rollup") as f:
                m = re.search(r"^Pss:\s+(\d+) kB", f.read(), re.M)
                total += int(m.group(1)) if m else 0
            with open(f"/proc/{p}/status") as f:
                m = re.search(r"^VmPTE:\s+(\d+) kB", f.read(), re.M)
                pte += int(m.group(1)) if m else 0
        except OSError:
            pass
    return total, pte


def stress_row(b, shape, packets, timeout):
    cmd = [f"{b}/torusrun", "--torus", shape, "--timeout", "120",
           "--", f"{b}/torus-stress", "--packets", str(packets)]
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak, peak_pte = 0, 0
    while p.poll() is None:
        pss, pte = tree_pss_kib(p.pid)
        peak, peak_pte = max(peak, pss), max(peak_pte, pte)
        if time.monotonic() - t0 > timeout:
            p.terminate()
            break
        time.sleep(0.2)
    out, err = p.communicate()
    wall = time.monotonic() - t0
    m = re.search(r"emulated time ([\d.]+) us", err)
    status = "ok" if p.returncode == 0 else f"exit {p.returncode}"
    if wall > timeout:
        status = f"stopped at {timeout:.0f} s"
    n = 1
    for d in shape.split("x"):
        n *= int(d)
    print(f"{shape:<10} {n:>6} {packets:>8} {n * (n - 1) * packets:>12} {wall:>8.1f} "
          f"{(m.group(1) if m else '-'):>14} {peak / 1024:>10.1f} {peak / n:>9.0f} {peak_pte / 1024:>8.1f}  {status}")
    if p.returncode not in (0, None) and wall <= timeout:
        print("   " + "\n   ".join(err.strip().splitlines()[-5:]))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--packets", type=int, default=2000000)
    ap.add_argument("--stress", default="8x8x8")
    ap.add_argument("--stress-packets", type=int, default=1)
    ap.add_argument("--big", default="", help="also try this shape (e.g. 16x16x16)")
    ap.add_argument("--big-timeout", type=float, default=900)
    ap.add_argument("--skip-link", action="store_true")
    a = ap.parse_args()
    b = os.path.abspath(os.path.join(a.build, "bin"))
    if not os.path.exists(f"{b}/torusrun"):
        sys.exit(f"machine_bench: no {b}/torusrun: build first (cmake --build {a.build})")
    print(f"machine: {os.cpu_count()} CPUs; {time.strftime('%Y-%m-%d %H:%M')}")
    if not a.skip_link:
        link_table(b, a.rounds, a.packets)
        dma_table(b, a.rounds, a.packets)
    print(f"\ntorus-stress: every core sends K packets to every other core (1 core per node)")
    print(f"{'torus':<10} {'nodes':>6} {'K':>8} {'packets':>12} {'wall s':>8} {'emulated us':>14} "
          f"{'peak MiB':>10} {'KiB/node':>9} {'PTE MiB':>8}  status")
    stress_row(b, a.stress, a.stress_packets, 3600)
    if a.big:
        stress_row(b, a.big, 1, a.big_timeout)


if __name__ == "__main__":
    main()
