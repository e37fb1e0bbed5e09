#!/usr/bin/env python3
"""004's in-place algorithms (issue 15): emulated time of bitonic, pairwise
and auto (the switch) on 004's four cases and the symmetric random patterns,
over P; and the fit of bitonic's time to N log^2 P, as 004's Table 1.

    bench/alltoallv_inplace.py switch [--build build] [--n 512K] [--tori 2x2,2x2x2,...]
    bench/alltoallv_inplace.py fit [--build build] [--ns 256K,1M] [--tori 2,2x2,...] [--svg PATH]

One member per node, doubles, every result checked. N is the bytes each
member holds (sends and receives); the largest message --sizes is N/P for
case1 to case4 (004's N/P), 2N/P for random and skewed (their mean is about
half of it). Prints Markdown tables.
"""
import argparse
import json
import math
import os
import subprocess
import sys
import time

CASES = ["case1", "case2", "case3", "case4"]


def nodes_of(torus):
    n = 1
    for d in torus.split("x"):
        n *= int(d)
    return n


def parse_bytes(s):
    k = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(s[:-1]) * k[s[-1]] if s[-1] in k else int(s)


def run(build, torus, algo, pattern, size):
    cmd = [os.path.join(build, "bin", "torusrun"), "--torus", torus, "--quiet", "--timeout", "1800", "--",
           os.path.join(build, "bin", "torus-bench"), "alltoallv", "--inplace", "--algo", algo, "--pattern", pattern,
           "--sizes", str(size), "--warmup", "0", "--reps", "1", "--json"]
    t = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True)
    print("  %s %s %s %d: %.1f s" % (torus, pattern, algo, size, time.time() - t), file=sys.stderr)
    if r.returncode != 0:
        if "alike" in r.stderr or "as much as it sends" in r.stderr:
            return None
        sys.exit("%s failed:\n%s" % (" ".join(cmd), r.stderr))
    row = json.loads(r.stdout)["rows"][0]
    if not row["checked"]:
        sys.exit("%s: wrong data" % " ".join(cmd))
    return row


def size_for(pattern, n, p):
    return (n // p if pattern in CASES else 2 * n // p) // 8 * 8


def switch(a):
    pats = CASES + ["random", "skewed"]
    print("\n### bitonic / pairwise / auto, N = %s per member (emulated us; * the faster; auto's pick)\n" % a.n)
    print("| torus | P | " + " | ".join(pats) + " |")
    print("|---|---:|" + "---|" * len(pats))
    n = parse_bytes(a.n)
    for t in a.tori.split(","):
        p = nodes_of(t)
        cells = []
        for pat in pats:
            size = size_for(pat, n, p)
            b = run(a.build, t, "bitonic", pat, size)
            w = run(a.build, t, "pairwise", pat, size)
            au = run(a.build, t, "auto", pat, size)
            tb = b["emulated_ps"] / 1e6 if b else None
            tw = w["emulated_ps"] / 1e6
            ta = au["emulated_ps"] / 1e6
            pick = au.get("ran", "?")[0]  # what auto ran: b(itonic) or p(airwise)
            fb = "-" if tb is None else ("%s%.0f" % ("*" if tb <= tw else "", tb))
            fw = "%s%.0f" % ("*" if tb is None or tw < tb else "", tw)
            cells.append("%s / %s / %s" % (fb, fw, pick))
        print("| %s | %d | %s |" % (t, p, " | ".join(cells)))


COLORS = {"case1": "#1f77b4", "case2": "#ff7f0e", "case3": "#2ca02c", "case4": "#d62728"}


def svg_scatter(path, rows, fits, title):
    """Linear axes: time (ms) against N log2^2 P (MiB), a point per run and
    the fitted line per case."""
    W, H, L, R, T, B = 720, 460, 70, 150, 50, 56
    pw, ph = W - L - R, H - T - B
    xmax = max(x for _, x, _ in rows) * 1.05
    ymax = max(y for _, _, y in rows) * 1.08

    def X(x):
        return L + x / xmax * pw

    def Y(y):
        return T + ph - y / ymax * ph

    o = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="DejaVu Sans, Arial, '
         'sans-serif" font-size="12">' % (W, H), '<rect width="%d" height="%d" fill="white"/>' % (W, H),
         '<text x="%d" y="24" text-anchor="middle" font-size="15" font-weight="bold">%s</text>' % (W // 2, title)]
    for k in range(6):
        xv, yv = xmax * k / 5, ymax * k / 5
        o.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#e4e4e4"/>' % (X(xv), T, X(xv), T + ph))
        o.append('<text x="%.1f" y="%d" text-anchor="middle">%.0f</text>' % (X(xv), T + ph + 18, xv))
        o.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#e4e4e4"/>' % (L, Y(yv), L + pw, Y(yv)))
        o.append('<text x="%d" y="%.1f" text-anchor="end">%.0f</text>' % (L - 6, Y(yv) + 4, yv))
    o.append('<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="black"/>' % (L, T, pw, ph))
    o.append('<text x="%d" y="%d" text-anchor="middle" font-size="13">N log2^2 P (MiB)</text>' % (L + pw // 2, H - 14))
    o.append('<text transform="translate(18,%d) rotate(-90)" text-anchor="middle" font-size="13">emulated time (ms)'
             '</text>' % (T + ph // 2))
    for i, (case, (slope, icpt, r2)) in enumerate(sorted(fits.items())):
        c = COLORS.get(case, "black")
        o.append('<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="1.5" stroke-dasharray="5,3"/>'
                 % (X(0), Y(max(icpt, 0)), X(xmax), Y(slope * xmax + icpt), c))
        o.append('<circle cx="%d" cy="%d" r="4" fill="%s"/>' % (L + pw + 16, T + 14 + 36 * i, c))
        o.append('<text x="%d" y="%d">%s</text>' % (L + pw + 26, T + 18 + 36 * i, case))
        o.append('<text x="%d" y="%d" font-size="10" fill="#555">%.2f x + %.2f, R2 %.3f</text>'
                 % (L + pw + 26, T + 32 + 36 * i, slope, icpt, r2))
    for case, x, y in rows:
        o.append('<circle cx="%.1f" cy="%.1f" r="3.5" fill="%s" fill-opacity="0.8"/>' % (X(x), Y(y), COLORS.get(case)))
    o.append('</svg>')
    with open(path, "w") as f:
        f.write("\n".join(o) + "\n")


def fit(a):
    ns = [parse_bytes(x) for x in a.ns.split(",")]
    rows = []
    print("\n### bitonic, emulated ms (004's Table 1 in the emulator)\n")
    print("| torus | P | N per member | " + " | ".join(CASES) + " | N log2^2 P (MiB) |")
    print("|---|---:|---:|" + "---:|" * len(CASES) + "---:|")
    for t in a.tori.split(","):
        p = nodes_of(t)
        for n in ns:
            x = n / 2**20 * math.log2(p)**2
            cells = []
            for pat in CASES:
                r = run(a.build, t, "bitonic", pat, size_for(pat, n, p))
                ms = r["emulated_ps"] / 1e9
                cells.append("%.2f" % ms)
                rows.append((pat, x, ms))
            print("| %s | %d | %s | %s | %.2f |" % (t, p, "%d KiB" % (n >> 10), " | ".join(cells), x))
    fits = {}
    print("\n### least-squares fit, time = a N log2^2 P + b\n")
    print("| case | a (ms per MiB log2^2 P) | b (ms) | R^2 |")
    print("|---|---:|---:|---:|")
    for pat in CASES:
        pts = [(x, y) for c, x, y in rows if c == pat and x > 0]
        k = len(pts)
        if k < 2:
            continue
        sx = sum(x for x, _ in pts)
        sy = sum(y for _, y in pts)
        sxx = sum(x * x for x, _ in pts)
        sxy = sum(x * y for x, y in pts)
        slope = (k * sxy - sx * sy) / (k * sxx - sx * sx)
        icpt = (sy - slope * sx) / k
        my = sy / k
        ss_tot = sum((y - my)**2 for _, y in pts)
        ss_res = sum((y - (slope * x + icpt))**2 for x, y in pts)
        r2 = 1 - ss_res / ss_tot if ss_tot else 1.0
        fits[pat] = (slope, icpt, r2)
        print("| %s | %.3f | %.3f | %.4f |" % (pat, slope, icpt, r2))
    if a.svg:
        svg_scatter(a.svg, rows, fits, "bitonic in place: time against N log2^2 P (P = 2 to 64)")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=["switch", "fit"])
    ap.add_argument("--build", default="build")
    ap.add_argument("--n", default="512K", help="switch: bytes per member")
    ap.add_argument("--ns", default="256K,1M", help="fit: bytes per member, a list")
    ap.add_argument("--tori", default=None)
    ap.add_argument("--svg", default=None, help="fit: write the plot there")
    a = ap.parse_args()
    if a.what == "switch":
        a.tori = a.tori or "2x2,2x2x2,4x2x2,4x4x2,4x4x4"
        switch(a)
    else:
        a.tori = a.tori or "2,2x2,2x2x2,4x2x2,4x4x2,4x4x4"
        fit(a)


if __name__ == "__main__":
    main()
