#!/usr/bin/env python3
"""Figure 6 of the multi-color bucket paper (003_b0aac8c3d10c7733), in miniature.

  bench/coll_fig6.py [--build build] [--torus 4x4x4] [--sizes 16K:4M | --quick]
                     [--collectives allgather,reduce_scatter,allreduce]
                     [--delay [NS]] [--out bench/out] [--timeout S] [--no-check]

Sweep mode (default), Fig. 6(a)-(c): for every collective, runs torus-bench
under torusrun (--json) over the message sizes n (doubling from A to B) for
  multi-core   torusrun --cores K -- torus-bench C --algo multicolor --cores-per-node K
               (K = the number of colors, one per torus dimension with links: 3 on a
               3-D torus; each core drives one color in both directions, as in the paper)
  single-core  torusrun --cores 1 -- torus-bench C --algo multicolor
  baseline     torusrun --cores 1 --param dma_counters=D -- torus-bench C --algo direct
               (direct needs team size <= dma_counters - 2, so D = max(128, nodes + 2)
               instead of the default 64; the paper's baseline is IBM's MPI, which
               the emulator does not have)
and the bandwidth lower bound of Fig. 2 (lower_bound_ps of the JSON). Prints one
table per collective and writes OUT/fig6_<collective>.svg (log-log: n in bytes
against emulated time in microseconds) and OUT/fig6.json with every number.

Delay mode (--delay [NS], NS default 2000), Fig. 6(d): allreduce (or
--collectives) with torus-bench --compute-delay NS (NS ns of extra virtual
compute per KiB reduced) on K cores and on 1 core. Prints the speed-up
single/multi per size next to the number of colors K (the expected speed-up
when both are compute-bound) and writes OUT/fig6_delay.svg (with several
collectives: OUT/fig6_delay_<collective>.svg) and OUT/fig6_delay.json.

Runs go one at a time; progress on stderr. If a run fails, its stderr is
printed and the script exits 1. Standard library only; the SVG is drawn here.
"""
import argparse, json, math, os, re, shlex, subprocess, sys, threading, time
from xml.sax.saxutils import escape

COLLECTIVES = ("allgather", "reduce_scatter", "allreduce")
FIG_LETTER = {"reduce_scatter": "a", "allgather": "b", "allreduce": "c"}
HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


class RunError(Exception):
    pass


# ----------------------------------------------------------------- inputs

def parse_bytes(s):
    m = re.fullmatch(r"\s*(\d+)\s*(B|K|M|G|KiB|MiB|GiB|k)?\s*", s)
    if not m:
        raise argparse.ArgumentTypeError(f"bad size '{s}' (e.g. 16K, 4M, 65536)")
    mult = {None: 1, "B": 1, "K": 1 << 10, "k": 1 << 10, "KiB": 1 << 10, "M": 1 << 20, "MiB": 1 << 20,
            "G": 1 << 30, "GiB": 1 << 30}[m.group(2)]
    return int(m.group(1)) * mult


def parse_sizes(s):
    """'A:B' or 'A' -> (A, B, [A, 2A, 4A, ... <= B]) like torus-bench."""
    parts = s.split(":")
    if len(parts) not in (1, 2):
        raise argparse.ArgumentTypeError(f"bad --sizes '{s}' (A:B or A)")
    a = parse_bytes(parts[0])
    b = parse_bytes(parts[-1])
    if a <= 0 or b < a:
        raise argparse.ArgumentTypeError(f"bad --sizes '{s}': need 0 < A <= B")
    sizes, n = [], a
    while n <= b:
        sizes.append(n)
        n *= 2
    return a, b, sizes


def parse_torus(s):
    try:
        dims = [int(x) for x in s.lower().split("x")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"bad --torus '{s}' (e.g. 4x4x4)")
    if not dims or any(d < 1 for d in dims):
        raise argparse.ArgumentTypeError(f"bad --torus '{s}' (e.g. 4x4x4)")
    return s, dims


def parse_collectives(s):
    out = []
    for c in s.replace(" ", "").split(","):
        c = c.replace("-", "_")
        if c not in COLLECTIVES:
            raise argparse.ArgumentTypeError(f"unknown collective '{c}' (one of {', '.join(COLLECTIVES)})")
        if c not in out:
            out.append(c)
    if not out:
        raise argparse.ArgumentTypeError("no collective given")
    return out


def fmt_bytes(n):
    for suf, k in (("G", 30), ("M", 20), ("K", 10)):
        if n >= (1 << k) and n % (1 << k) == 0:
            return f"{n >> k}{suf}"
    return str(n)


def find_bins(build):
    cands = [build] if os.path.isabs(build) else [os.path.abspath(build), os.path.join(REPO, build)]
    for d in cands:
        tr, tb = os.path.join(d, "bin", "torusrun"), os.path.join(d, "bin", "torus-bench")
        if os.access(tr, os.X_OK) and os.access(tb, os.X_OK):
            return tr, tb
    sys.exit(f"coll_fig6: no bin/torusrun and bin/torus-bench under {' or '.join(cands)} "
             f"(build with: cmake --build build -j2)")


def shown_path(p):
    """p relative to the current directory when it lies below it, else absolute."""
    rel = os.path.relpath(p)
    return os.path.abspath(p) if rel.startswith("..") else rel


# ----------------------------------------------------------------- running

def run_series(args, label, cores, algo, coll, extra_run=(), extra_bench=()):
    """One torusrun job over every size; returns (argv, parsed JSON document)."""
    cmd = [args.torusrun, "--torus", args.torus, "--cores", str(cores)]
    if args.timeout is not None:
        cmd += ["--timeout", str(args.timeout)]
    cmd += list(extra_run)
    cmd += ["--", args.bench, coll, "--algo", algo]
    if cores > 1:
        cmd += ["--cores-per-node", str(cores)]
    cmd += ["--sizes", f"{args.size_a}:{args.size_b}", "--json"] + list(extra_bench)
    if args.no_check:
        cmd.append("--no-check")
    args.run_no += 1
    head = f"[{args.run_no}/{args.run_total}] {coll} {label}"
    print(f"{head}: {fmt_bytes(args.size_a)}:{fmt_bytes(args.size_b)} ...", file=sys.stderr, flush=True)
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out = []
    reader = threading.Thread(target=lambda: out.append(p.stdout.read()), daemon=True)
    reader.start()
    err = []
    for line in p.stderr:
        err.append(line)
        if line.startswith("torus-bench:") and " done " in line:
            print(f"    {line.rstrip()}", file=sys.stderr, flush=True)
    rc = p.wait()
    reader.join()
    stdout = out[0] if out else ""
    dt = time.monotonic() - t0
    if rc != 0:
        raise RunError(f"{head} failed (torusrun exit status {rc}) after {dt:.1f} s\n"
                       f"command: {shlex.join(cmd)}\n--- stderr ---\n{''.join(err).rstrip()}\n"
                       f"--- stdout ---\n{stdout.rstrip()}")
    try:
        doc = json.loads(stdout)
        rows = {r["bytes"]: r for r in doc["rows"]}
    except (ValueError, KeyError, TypeError) as e:
        raise RunError(f"{head}: cannot parse torus-bench --json output ({e})\ncommand: {shlex.join(cmd)}\n"
                       f"--- stdout ---\n{stdout.rstrip()}\n--- stderr ---\n{''.join(err).rstrip()}")
    missing = [n for n in args.sizes if n not in rows]
    if missing:
        raise RunError(f"{head}: no row for sizes {missing}\ncommand: {shlex.join(cmd)}\n"
                       f"--- stderr ---\n{''.join(err).rstrip()}")
    unchecked = [n for n in args.sizes if not rows[n].get("checked") and not args.no_check]
    if unchecked:
        print(f"    warning: results of sizes {unchecked} were not checked", file=sys.stderr)
    print(f"{head}: done in {dt:.1f} s wall", file=sys.stderr, flush=True)
    return cmd, doc, rows


def series_record(label, cores, algo, cmd, doc, rows, sizes):
    return {"label": label, "algo": algo, "cores_per_node": cores, "command": shlex.join(cmd),
            "compute_delay_ns": doc.get("compute_delay_ns"),
            "emulated_ps": [rows[n]["emulated_ps"] for n in sizes],
            "rows": [rows[n] for n in sizes]}


# ----------------------------------------------------------------- svg

STYLES = [  # colour, marker, dashed (the first four: Fig. 6's; the rest for bench/alltoall_bound.py)
    ("#1f77b4", "circle", False),
    ("#ff7f0e", "square", False),
    ("#2ca02c", "triangle", False),
    ("#444444", "diamond", True),
    ("#d62728", "circle", False),
    ("#9467bd", "square", False),
    ("#8c564b", "triangle", False),
    ("#e377c2", "circle", False),
    ("#17becf", "square", False),
]


def marker(kind, x, y, colour, r=4.0):
    if kind == "circle":
        return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{r}" fill="{colour}"/>'
    if kind == "square":
        return f'<rect x="{x - r:.1f}" y="{y - r:.1f}" width="{2 * r}" height="{2 * r}" fill="{colour}"/>'
    if kind == "triangle":
        h = r * 1.2
        return (f'<polygon points="{x:.1f},{y - h:.1f} {x - h:.1f},{y + h * 0.8:.1f} '
                f'{x + h:.1f},{y + h * 0.8:.1f}" fill="{colour}"/>')
    h = r * 1.1
    return (f'<polygon points="{x:.1f},{y - h:.1f} {x + h:.1f},{y:.1f} {x:.1f},{y + h:.1f} '
            f'{x - h:.1f},{y:.1f}" fill="white" stroke="{colour}" stroke-width="1.5"/>')


def fmt_us(v):
    if v >= 1:
        return f"{v:,.0f}".replace(",", " ") if v >= 10000 else f"{v:g}"
    return f"{v:g}"


def svg_plot(path, title, subtitle, sizes, series, xlabel="message size n (bytes, log scale)", styles=None):
    """series: list of (label, [value_us or None per size]). Log-log."""
    styles = styles or STYLES
    W, H = 760, 500
    L, R, T, B = 86, 24, 64, 62
    pw, ph = W - L - R, H - T - B
    vals = [v for _, ys in series for v in ys if v is not None and v > 0]
    if not vals:
        vals = [1.0]
    x0, x1 = math.log2(min(sizes)), math.log2(max(sizes))
    if x1 - x0 < 1:
        x0, x1 = x0 - 0.5, x1 + 0.5
    xpad = 0.04 * (x1 - x0)
    x0, x1 = x0 - xpad, x1 + xpad
    y0, y1 = math.log10(min(vals)), math.log10(max(vals))
    if y1 - y0 < 0.3:
        mid = (y0 + y1) / 2
        y0, y1 = mid - 0.15, mid + 0.15
    ypad = 0.06 * (y1 - y0)
    y0, y1 = y0 - ypad, y1 + ypad

    def X(n):
        return L + (math.log2(n) - x0) / (x1 - x0) * pw

    def Y(v):
        return T + ph - (math.log10(v) - y0) / (y1 - y0) * ph

    o = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" '
         f'font-family="DejaVu Sans, Helvetica, Arial, sans-serif" font-size="12">',
         f'<rect width="{W}" height="{H}" fill="white"/>',
         f'<text x="{W / 2}" y="24" text-anchor="middle" font-size="16" font-weight="bold">{escape(title)}</text>',
         f'<text x="{W / 2}" y="44" text-anchor="middle" font-size="11" fill="#555">{escape(subtitle)}</text>']
    # y grid and ticks: decades labelled; 2x and 5x labelled too when fewer than 3 decades show
    decades = [k for k in range(math.floor(y0), math.ceil(y1) + 1) if y0 <= k <= y1]
    label_mults = (1,) if len(decades) >= 3 else (1, 2, 5)
    for k in range(math.floor(y0), math.ceil(y1) + 1):
        for m in range(1, 10):
            v = m * 10.0 ** k
            if not (y0 <= math.log10(v) <= y1):
                continue
            y = Y(v)
            major = m == 1
            o.append(f'<line x1="{L}" y1="{y:.1f}" x2="{L + pw}" y2="{y:.1f}" stroke="{"#ccc" if major else "#eee"}"'
                     f' stroke-width="1"/>')
            o.append(f'<line x1="{L - (6 if major else 3)}" y1="{y:.1f}" x2="{L}" y2="{y:.1f}" stroke="black"/>')
            if m in label_mults:
                o.append(f'<text x="{L - 9}" y="{y + 4:.1f}" text-anchor="end">{fmt_us(v)}</text>')
    # x grid and ticks at powers of two
    ks = [k for k in range(math.ceil(x0), math.floor(x1) + 1)]
    step = 1 if len(ks) <= 12 else 2
    for k in ks:
        x = X(2 ** k)
        o.append(f'<line x1="{x:.1f}" y1="{T}" x2="{x:.1f}" y2="{T + ph}" stroke="#e4e4e4" stroke-width="1"/>')
        o.append(f'<line x1="{x:.1f}" y1="{T + ph}" x2="{x:.1f}" y2="{T + ph + 6}" stroke="black"/>')
        if (k - ks[0]) % step == 0:
            o.append(f'<text x="{x:.1f}" y="{T + ph + 20}" text-anchor="middle">{fmt_bytes(2 ** k)}</text>')
    o.append(f'<rect x="{L}" y="{T}" width="{pw}" height="{ph}" fill="none" stroke="black"/>')
    o.append(f'<text x="{L + pw / 2}" y="{H - 16}" text-anchor="middle" font-size="13">'
             f'{escape(xlabel)}</text>')
    o.append(f'<text transform="translate(20,{T + ph / 2}) rotate(-90)" text-anchor="middle" font-size="13">'
             f'emulated time (\u00b5s, log scale)</text>')
    # series
    for (label, ys), (colour, mk, dashed) in zip(series, styles):
        if label is None:  # a placeholder keeping the styles of the other figures
            continue
        pts = [(X(n), Y(v)) for n, v in zip(sizes, ys) if v is not None and v > 0]
        if len(pts) > 1:
            dash = ' stroke-dasharray="6,4"' if dashed else ""
            o.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2"{dash} points="'
                     + " ".join(f"{x:.1f},{y:.1f}" for x, y in pts) + '"/>')
        for x, y in pts:
            o.append(marker(mk, x, y, colour))
    # legend, top left (log-log times rise to the right)
    shown = [(label, st) for (label, _), st in zip(series, styles) if label is not None]
    lw = 16 + max(len(l) for l, _ in shown) * 7 + 36
    lh = 10 + 20 * len(shown)
    lx, ly = L + 12, T + 12
    o.append(f'<rect x="{lx}" y="{ly}" width="{lw}" height="{lh}" fill="white" fill-opacity="0.9" stroke="#888"/>')
    for i, (label, (colour, mk, dashed)) in enumerate(shown):
        y = ly + 16 + 20 * i
        dash = ' stroke-dasharray="6,4"' if dashed else ""
        o.append(f'<line x1="{lx + 8}" y1="{y}" x2="{lx + 38}" y2="{y}" stroke="{colour}" stroke-width="2"{dash}/>')
        o.append(marker(mk, lx + 23, y, colour))
        o.append(f'<text x="{lx + 46}" y="{y + 4}">{escape(label)}</text>')
    o.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(o) + "\n")


# ----------------------------------------------------------------- checks

def oddities(name, sizes, ys, bound):
    """Notes on a series: below the bound, not increasing with n."""
    notes = []
    for n, v, b in zip(sizes, ys, bound):
        if v < b:
            notes.append(f"{name}: {fmt_bytes(n)} below the lower bound ({v / b:.3f} x)")
    for i in range(1, len(sizes)):
        if ys[i] < ys[i - 1]:
            notes.append(f"{name}: time falls from {fmt_bytes(sizes[i - 1])} to {fmt_bytes(sizes[i])} "
                         f"({ys[i - 1] / 1e6:.1f} -> {ys[i] / 1e6:.1f} us)")
    return notes


# ----------------------------------------------------------------- modes

def sweep(args):
    nodes = math.prod(args.dims)
    d_counters = max(128, nodes + 2)
    result = {"schema": "coll-fig6/1", "mode": "sweep", "torus": args.torus, "nodes": nodes,
              "colors": args.colors, "multi_cores": args.multi_cores, "sizes": args.sizes,
              "baseline_dma_counters": d_counters, "collectives": {}}
    args.run_total = 3 * len(args.collectives)
    for coll in args.collectives:
        rec = {}
        for key, label, cores, algo, extra in (
                ("multi", f"multi-core (multicolor, {args.multi_cores} cores/node)", args.multi_cores,
                 "multicolor", ()),
                ("single", "single-core (multicolor, 1 core/node)", 1, "multicolor", ()),
                ("baseline", f"baseline (direct, 1 core/node, dma_counters={d_counters})", 1, "direct",
                 ("--param", f"dma_counters={d_counters}"))):
            cmd, doc, rows = run_series(args, label, cores, algo, coll, extra_run=extra)
            rec[key] = series_record(label, cores, algo, cmd, doc, rows, args.sizes)
            if key == "multi":
                rec["lower_bound_ps"] = [rows[n]["lower_bound_ps"] for n in args.sizes]
            else:
                for n, b in zip(args.sizes, rec["lower_bound_ps"]):
                    if abs(rows[n]["lower_bound_ps"] - b) > 1e-6 * b:
                        print(f"    warning: lower bound of {fmt_bytes(n)} differs between runs "
                              f"({rows[n]['lower_bound_ps']} vs {b})", file=sys.stderr)
        result["collectives"][coll] = rec

    print(f"\nFigure 6(a)-(c) in miniature: torus {args.torus} ({nodes} nodes), emulated time in us "
          f"(emulator defaults; baseline = direct with --param dma_counters={d_counters}, "
          f"since direct needs team size <= dma_counters - 2)")
    notes = []
    for coll in args.collectives:
        rec = result["collectives"][coll]
        m, s, b, lb = (rec["multi"]["emulated_ps"], rec["single"]["emulated_ps"],
                       rec["baseline"]["emulated_ps"], rec["lower_bound_ps"])
        print(f"\n{coll} (cf. Fig. 6({FIG_LETTER[coll]})): multi-core = multicolor on {args.multi_cores} cores/node, "
              f"single-core = multicolor on 1, baseline = direct on 1")
        hdr = (f"{'bytes':>9} {'multi us':>10} {'single us':>10} {'baseline us':>12} {'bound us':>10} "
               f"{'multi/bnd':>9} {'single/bnd':>10} {'base/bnd':>9} {'base/multi':>10}")
        print(hdr)
        print("-" * len(hdr))
        for i, n in enumerate(args.sizes):
            print(f"{n:>9} {m[i] / 1e6:10.1f} {s[i] / 1e6:10.1f} {b[i] / 1e6:12.1f} {lb[i] / 1e6:10.1f} "
                  f"{m[i] / lb[i]:9.2f} {s[i] / lb[i]:10.2f} {b[i] / lb[i]:9.2f} {b[i] / m[i]:10.2f}")
        for name, ys in (("multi-core", m), ("single-core", s), ("baseline", b)):
            notes += [f"{coll} {x}" for x in oddities(name, args.sizes, ys, lb)]
        svg = os.path.join(args.out, f"fig6_{coll}.svg")
        svg_plot(svg, f"Fig. 6({FIG_LETTER[coll]}) in miniature: {coll}, torus {args.torus} ({nodes} nodes)",
                 f"emulated time; baseline = direct with dma_counters={d_counters}; bound = Fig. 2 bandwidth bound",
                 args.sizes,
                 [(f"multi-core (multicolor, {args.multi_cores} cores/node)", [v / 1e6 for v in m]),
                  ("single-core (multicolor, 1 core/node)", [v / 1e6 for v in s]),
                  ("baseline (direct, 1 core/node)", [v / 1e6 for v in b]),
                  ("lower bound (Fig. 2)", [v / 1e6 for v in lb])])
        rec["svg"] = shown_path(svg)
    return result, notes, "fig6.json"


def delay(args):
    nodes = math.prod(args.dims)
    result = {"schema": "coll-fig6/1", "mode": "delay", "torus": args.torus, "nodes": nodes,
              "colors": args.colors, "multi_cores": args.multi_cores, "compute_delay_ns_per_kib": args.delay,
              "sizes": args.sizes, "collectives": {}}
    args.run_total = 2 * len(args.collectives)
    extra = ("--compute-delay", str(args.delay))
    for coll in args.collectives:
        rec = {}
        for key, label, cores in (("multi", f"multi-core (multicolor, {args.multi_cores} cores/node)",
                                   args.multi_cores),
                                  ("single", "single-core (multicolor, 1 core/node)", 1)):
            cmd, doc, rows = run_series(args, f"{label}, delay {args.delay} ns/KiB", cores, "multicolor", coll,
                                        extra_bench=extra)
            rec[key] = series_record(label, cores, "multicolor", cmd, doc, rows, args.sizes)
            if key == "multi":
                rec["lower_bound_ps"] = [rows[n]["lower_bound_ps"] for n in args.sizes]
        rec["speedup"] = [s / m for s, m in zip(rec["single"]["emulated_ps"], rec["multi"]["emulated_ps"])]
        result["collectives"][coll] = rec

    print(f"\nFigure 6(d) in miniature: artificial compute delay of {args.delay} ns per KiB reduced, "
          f"torus {args.torus} ({nodes} nodes), emulated time in us")
    notes = []
    several = len(args.collectives) > 1
    for coll in args.collectives:
        rec = result["collectives"][coll]
        m, s, lb, sp = rec["multi"]["emulated_ps"], rec["single"]["emulated_ps"], rec["lower_bound_ps"], rec["speedup"]
        print(f"\n{coll}: multi-core = multicolor on {args.multi_cores} cores/node, single-core = multicolor on 1")
        hdr = (f"{'bytes':>9} {'multi us':>10} {'single us':>10} {'bound us':>10} {'multi/bnd':>9} "
               f"{'single/bnd':>10} {'speed-up single/multi':>21} {'colors':>6}")
        print(hdr)
        print("-" * len(hdr))
        for i, n in enumerate(args.sizes):
            print(f"{n:>9} {m[i] / 1e6:10.1f} {s[i] / 1e6:10.1f} {lb[i] / 1e6:10.1f} {m[i] / lb[i]:9.2f} "
                  f"{s[i] / lb[i]:10.2f} {sp[i]:21.2f} {args.colors:>6}")
        print(f"speed-up: min {min(sp):.2f}, max {max(sp):.2f}, at the largest size {sp[-1]:.2f} "
              f"(expected close to {args.colors} when compute-bound)")
        for name, ys in (("multi-core", m), ("single-core", s)):
            notes += [f"{coll} {x}" for x in oddities(name, args.sizes, ys, lb)]
        svg = os.path.join(args.out, f"fig6_delay_{coll}.svg" if several else "fig6_delay.svg")
        svg_plot(svg, f"Fig. 6(d) in miniature: {coll} with {args.delay} ns/KiB compute delay, torus {args.torus}",
                 f"emulated time; speed-up single/multi {min(sp):.2f} to {max(sp):.2f} "
                 f"({args.colors} colors)",
                 args.sizes,
                 [(f"multi-core (multicolor, {args.multi_cores} cores/node)", [v / 1e6 for v in m]),
                  ("single-core (multicolor, 1 core/node)", [v / 1e6 for v in s]),
                  (None, [None] * len(args.sizes)),  # keep the style of Fig. 6(a)-(c)
                  ("lower bound (Fig. 2, no delay)", [v / 1e6 for v in lb])])
        rec["svg"] = shown_path(svg)
        if coll == "allreduce" and sp[-1] < 0.9 * args.colors:
            print(f"(allreduce = reduce-scatter + allgather; the allgather half has no reduction, so it is not "
                  f"delayed and not divided among the cores: the speed-up nears {args.colors} only when the "
                  f"delay dominates, e.g. --delay 20000, or use --collectives reduce_scatter)")
    return result, notes, "fig6_delay.json"


# ----------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser(
        prog="bench/coll_fig6.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build", help="build directory holding bin/torusrun and bin/torus-bench "
                    "(default build; relative paths are tried from the current directory, then the repository)")
    ap.add_argument("--torus", default="4x4x4", type=parse_torus, help="torus shape (default 4x4x4)")
    ap.add_argument("--sizes", type=parse_sizes, default=None,
                    help="n in bytes, doubling from A to B (K, M, G suffixes; default 16K:4M, --quick 64K:1M)")
    ap.add_argument("--quick", action="store_true", help="fewer sizes: 64K:1M (unless --sizes is given)")
    ap.add_argument("--collectives", type=parse_collectives, default=None,
                    help="comma-separated subset of allgather,reduce_scatter,allreduce "
                         "(default: all three; with --delay: allreduce)")
    ap.add_argument("--delay", type=int, nargs="?", const=2000, default=None, metavar="NS",
                    help="the Fig. 6(d) experiment: NS ns of extra virtual compute per KiB reduced "
                         "(default NS 2000)")
    ap.add_argument("--multi-cores", type=int, default=None, metavar="K",
                    help="cores per node of the multi-core runs (default: the number of colors, i.e. of "
                         "dimensions with links; 3 on a 3-D torus)")
    ap.add_argument("--out", default=os.path.join(HERE, "out"), help="output directory (default bench/out)")
    ap.add_argument("--timeout", type=float, default=None, metavar="S",
                    help="torusrun hang-detector timeout in seconds (default torusrun's)")
    ap.add_argument("--no-check", action="store_true", help="pass --no-check to torus-bench (faster)")
    args = ap.parse_args()

    args.torus, args.dims = args.torus
    if args.sizes is None:
        args.sizes = parse_sizes("64K:1M" if args.quick else "16K:4M")
    args.size_a, args.size_b, args.sizes = args.sizes
    if args.collectives is None:
        args.collectives = ["allreduce"] if args.delay is not None else list(COLLECTIVES)
    if args.delay is not None:
        if args.delay < 0:
            ap.error("--delay NS must be >= 0")
        if "allgather" in args.collectives:
            print("coll_fig6: note: allgather reduces nothing, so the compute delay does not apply to it",
                  file=sys.stderr)
    args.colors = sum(1 for d in args.dims if d > 1)
    if args.colors == 0:
        ap.error(f"--torus {args.torus} has no links (one node)")
    if args.multi_cores is None:
        args.multi_cores = args.colors
    if args.multi_cores < 1:
        ap.error("--multi-cores must be >= 1")
    args.torusrun, args.bench = find_bins(args.build)
    os.makedirs(args.out, exist_ok=True)
    args.run_no = 0

    t0 = time.monotonic()
    try:
        result, notes, jname = delay(args) if args.delay is not None else sweep(args)
    except RunError as e:
        print(f"coll_fig6: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("coll_fig6: interrupted", file=sys.stderr)
        return 130
    command = shlex.join(["python3"] + sys.argv) if not os.access(sys.argv[0], os.X_OK) else shlex.join(sys.argv)
    result["command"] = command
    result["cwd"] = os.getcwd()
    result["wall_s"] = round(time.monotonic() - t0, 1)
    jpath = os.path.join(args.out, jname)
    with open(jpath, "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    if notes:
        print("\nNotes (checked automatically):")
        for n in notes:
            print(f"  - {n}")
    svgs = [r["svg"] for r in result["collectives"].values()]
    print(f"\nWrote {', '.join(svgs)} and {shown_path(jpath)} ({result['wall_s']} s wall)")
    print(f"Command (from {os.getcwd()}):\n  {command}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
