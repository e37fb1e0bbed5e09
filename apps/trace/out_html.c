/*
 * torus-trace --html: one self-contained page (inline CSS and script, no
 * network) that animates the utilisation of every link direction over
 * virtual time, for teaching how the collectives use the torus.
 *
 * The page is fixed text around one data object, D:
 *   dims, nnodes, nbins, bin_ps, t_end_ps
 *   links   [node, dim, dir, to] of every real link direction, in id order
 *   u       per link: its utilisation in each bin, two hex digits per bin
 *           (0..255; "" = idle throughout), from tt_bin; for the colour,
 *           so it stops at 255 = fully busy
 *   over    [link, bin, utilisation] of every bin where a link was more
 *           than fully busy (records overlap on it): the numbers the page
 *           shows are these, as they are, not the colour's 100%
 *   bytes   per link: payload bytes over the run
 *   phases  [{name, start, end}] from tt_phases
 * The script draws the torus as SVG (x across, y down; one grid per slice
 * of the dims >= 2, whose links are marks at each node) and recolours the
 * arrows when the time moves. "?t=0.4" starts paused at 40% of the run
 * (for screenshots); "?selftest" drives the controls and writes
 * "selftest: ok ..." or "selftest: FAIL why" into <pre id="selftest">.
 *
 * Limits: the page draws at most HTML_MAX_NODES nodes, and keeps
 * nlinks * nbins under HTML_MAX_CELLS (fewer bins for large tori) so it
 * stays a few MB; beyond that use --svg or --csv.
 */
#include "trace_tool.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define HTML_BINS 200u           /* time bins over [0, t_end] */
#define HTML_MIN_BINS 20u
#define HTML_MAX_CELLS 2000000u  /* link directions x bins */
#define HTML_MAX_NODES 4096u

/*
 * The page, one line per string; tt_write_html writes the title, the header
 * and the data between the parts. Script-side comments say how it draws.
 */
static const char *const page_top[] = {
	"<!DOCTYPE html>\n",
	"<html lang=\"en\">\n",
	"<head>\n",
	"<meta charset=\"utf-8\">\n",
	"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n",
	NULL,
};

static const char *const page_style[] = {
	"<style>\n",
	"body { font: 14px/1.35 system-ui, sans-serif; margin: 0; color: #222; background: #f4f4f4;\n",
	"  display: flex; flex-direction: column; height: 100vh; }\n",
	"header { padding: 8px 16px 6px; }\n",
	"h1 { font-size: 20px; margin: 0 0 2px; }\n",
	".sub { margin: 0; color: #555; font-size: 13px; }\n",
	".sub code { background: #e6e6e6; padding: 0 4px; border-radius: 3px; }\n",
	"#selftest { margin: 4px 0 0; font-size: 12px; }\n",
	"#controls { display: flex; align-items: center; gap: 8px; padding: 6px 16px; background: #fff;\n",
	"  border-top: 1px solid #ddd; border-bottom: 1px solid #ddd; }\n",
	"#controls button { font-size: 14px; padding: 3px 10px; }\n",
	"#play { min-width: 86px; }\n",
	"#slider { flex: 1; }\n",
	"#tlabel { font-variant-numeric: tabular-nums; min-width: 250px; font-weight: 600; }\n",
	"#main { display: flex; gap: 10px; padding: 8px 16px; flex: 1; min-height: 420px; box-sizing: border-box; }\n",
	"#view { flex: 1; min-width: 0; background: #fff; border: 1px solid #ddd; border-radius: 6px; }\n",
	"#torus { width: 100%; height: 100%; display: block; }\n",
	"#side { width: 392px; flex: none; overflow-y: auto; }\n",
	".box { background: #fff; border: 1px solid #ddd; border-radius: 6px; padding: 6px 10px;\n",
	"  margin-bottom: 8px; }\n",
	".box h2 { font-size: 12px; margin: 0 0 4px; color: #666; text-transform: uppercase; letter-spacing: .05em; }\n",
	"#phase { font-size: 17px; font-weight: 600; min-height: 23px; }\n",
	"#phase .chip { display: inline-block; width: 11px; height: 11px; border-radius: 2px; margin: 0 5px 0 0; }\n",
	"#plots { display: grid; grid-template-columns: 1fr 1fr; gap: 2px 10px; }\n",
	".small { font-size: 12px; color: #555; }\n",
	".nd circle { fill: #fff; stroke: #666; stroke-width: 1.5; }\n",
	".nd text, .key text { font-size: 12px; text-anchor: middle; dominant-baseline: central; fill: #333; }\n",
	".lk { cursor: pointer; }\n",
	".lk:hover { stroke: #000; stroke-width: 1.5; }\n",
	".frame { fill: #fafafa; stroke: #e0e0e0; }\n",
	".slabel { font-size: 16px; font-weight: 600; fill: #444; }\n",
	".axis { font-size: 12px; fill: #888; }\n",
	"svg text { font-family: system-ui, sans-serif; }\n",
	"</style>\n",
	"</head>\n",
	"<body>\n",
	NULL,
};

static const char *const page_body[] = {
	"<div id=\"controls\">\n",
	"<button id=\"back\" title=\"step back one time bin (left arrow)\">&#9664; step</button>\n",
	"<button id=\"play\" title=\"play / pause (space)\">&#9654; play</button>\n",
	"<button id=\"fwd\" title=\"step forward one time bin (right arrow)\">step &#9654;</button>\n",
	"<input id=\"slider\" type=\"range\" min=\"0\" max=\"0\" step=\"1\" value=\"0\" aria-label=\"virtual time\">\n",
	"<span id=\"tlabel\">t = ?</span>\n",
	"<label class=\"small\">speed <select id=\"speed\">\n",
	"<option value=\"0.25\">0.25&times;</option><option value=\"0.5\">0.5&times;</option>\n",
	"<option value=\"1\" selected>1&times;</option><option value=\"2\">2&times;</option>\n",
	"<option value=\"4\">4&times;</option>\n",
	"</select></label>\n",
	"</div>\n",
	"<div id=\"main\">\n",
	"<div id=\"view\"><svg id=\"torus\" xmlns=\"http://www.w3.org/2000/svg\"></svg></div>\n",
	"<div id=\"side\">\n",
	"<div class=\"box\"><h2>Phase now</h2><div id=\"phase\">&ndash;</div>\n",
	"<div id=\"phasesub\" class=\"small\"></div></div>\n",
	"<div class=\"box\"><h2>Link colour: utilisation in this time bin</h2>\n",
	"<svg id=\"legend\" width=\"370\" height=\"46\"></svg>\n",
	"<div class=\"small\">the fraction of the bin the link direction spent sending packets</div></div>\n",
	"<div class=\"box\"><h2>Mean utilisation per link direction</h2><div id=\"plots\"></div></div>\n",
	"<div class=\"box\"><h2>Phases (click to jump)</h2><svg id=\"timeline\" width=\"370\" height=\"20\"></svg></div>\n",
	"<div class=\"box\"><h2>Link under the pointer</h2><div id=\"info\" class=\"small\">Point at an arrow.</div></div>\n",
	"<div class=\"box\"><h2>How to read it</h2><svg id=\"key\" width=\"370\" height=\"150\"></svg>\n",
	"<div class=\"small\" id=\"howto\"></div></div>\n",
	"</div>\n",
	"</div>\n",
	NULL,
};

static const char *const page_script[] = {
	"<script>\n",
	"\"use strict\";\n",
	"(function () {\n",
	"  const NS = \"http://www.w3.org/2000/svg\";\n",
	"  const nd = D.dims.length, nb = D.nbins, nl = D.links.length;\n",
	"  const params = new URLSearchParams(location.search);\n",
	"  const $ = function (id) { return document.getElementById(id); };\n",
	"  function el(tag, attrs, parent, text) {\n",
	"    const e = document.createElementNS(NS, tag);\n",
	"    for (const k in attrs)\n",
	"      e.setAttribute(k, attrs[k]);\n",
	"    if (text !== undefined)\n",
	"      e.textContent = text;\n",
	"    if (parent)\n",
	"      parent.appendChild(e);\n",
	"    return e;\n",
	"  }\n",
	"\n",
	"  /* utilisation 0..255 of each link direction in each bin; \"\" = idle throughout */\n",
	"  const U = D.u.map(function (s) {\n",
	"    const a = new Uint8Array(nb);\n",
	"    for (let b = 0; 2 * b < s.length; b++)\n",
	"      a[b] = parseInt(s.substr(2 * b, 2), 16);\n",
	"    return a;\n",
	"  });\n",
	"\n",
	"  /* colours: idle grey, then light yellow to dark red (a scale readable without a legend) */\n",
	"  const IDLE = \"#cfcfcf\";\n",
	"  const STOPS = [[0, 255, 237, 150], [0.33, 254, 178, 76], [0.66, 240, 59, 32], [1, 110, 0, 30]];\n",
	"  function ramp(x) {\n",
	"    let i = 1;\n",
	"    while (i < STOPS.length - 1 && x > STOPS[i][0])\n",
	"      i++;\n",
	"    const a = STOPS[i - 1], c = STOPS[i], f = (x - a[0]) / (c[0] - a[0]);\n",
	"    const ch = function (j) { return Math.round(a[j] + f * (c[j] - a[j])); };\n",
	"    return \"rgb(\" + ch(1) + \",\" + ch(2) + \",\" + ch(3) + \")\";\n",
	"  }\n",
	"  const PAL = [IDLE];\n",
	"  for (let q = 1; q < 256; q++)\n",
	"    PAL.push(ramp(q / 255));\n",
	"  /* utilisation as a number: D.over where a link was more than fully busy (overlapping records), else U */\n",
	"  const OVER = new Map();\n",
	"  for (const o of D.over)\n",
	"    OVER.set(o[0] * nb + o[1], o[2]);\n",
	"  const util = function (i, b) { const x = OVER.get(i * nb + b); return x === undefined ? U[i][b] / 255 : x; };\n",
	"  const pct = function (x) { return Math.round(x * 100) + \"%\"; };\n",
	"\n",
	"  const DIM = [\"x\", \"y\", \"z\", \"w\", \"v\", \"u\"];\n",
	"  const dname = function (d, dir) { return DIM[d] + (dir ? \"\\u2212\" : \"+\"); };\n",
	"  function coords(r) {\n",
	"    const c = [];\n",
	"    for (let d = 0; d < nd; d++) {\n",
	"      c.push(r % D.dims[d]);\n",
	"      r = Math.floor(r / D.dims[d]);\n",
	"    }\n",
	"    return c;\n",
	"  }\n",
	"\n",
	"  /* time */\n",
	"  const dec = Math.min(6, Math.max(1, Math.ceil(-Math.log10(D.bin_ps / 1e6)) + 1));\n",
	"  const us = function (ps) { return (ps / 1e6).toFixed(dec); };\n",
	"  const binStart = function (b) { return b * D.bin_ps; };\n",
	"  const binEnd = function (b) { return Math.min((b + 1) * D.bin_ps, D.t_end_ps); };\n",
	"  const binOf = function (ps) { return Math.max(0, Math.min(nb - 1, Math.floor(ps / D.bin_ps))); };\n",
	"\n",
	"  /*\n",
	"   * Geometry. Each slice (one combination of the coordinates of dims >= 2)\n",
	"   * is a grid, x to the right and y down; the slices tile the view in the\n",
	"   * column count that makes them largest. Every link direction is an arrow\n",
	"   * drawn to the right of its centre line (keep right), so x+ runs below\n",
	"   * x- and y+ left of y-. A wrap-around link is a stub leaving the edge.\n",
	"   * Links of dims >= 2 leave the slice: they are short marks at the node,\n",
	"   * on the diagonals (z, w; v and u further out).\n",
	"   */\n",
	"  const nx = D.dims[0], ny = nd > 1 ? D.dims[1] : 1;\n",
	"  let nsl = 1;\n",
	"  for (let d = 2; d < nd; d++)\n",
	"    nsl *= D.dims[d];\n",
	"  const SP = 100, R = 15, PAD = 64, TOP = 28, OFF = 7;\n",
	"  const sw = (nx - 1) * SP + 2 * PAD, sh = (ny - 1) * SP + 2 * PAD + TOP;\n",
	"  const view = $(\"view\");\n",
	"  const aspect = view.clientWidth > 0 && view.clientHeight > 0 ? view.clientWidth / view.clientHeight : 1.5;\n",
	"  let cols = 1, best = 0;\n",
	"  for (let c = 1; c <= nsl; c++) {\n",
	"    const s = Math.min(aspect / (c * sw), 1 / (Math.ceil(nsl / c) * sh));\n",
	"    if (s > best * 1.0001) {\n",
	"      best = s;\n",
	"      cols = c;\n",
	"    }\n",
	"  }\n",
	"  const rows = Math.ceil(nsl / cols);\n",
	"  const torus = $(\"torus\");\n",
	"  torus.setAttribute(\"viewBox\", \"0 0 \" + cols * sw + \" \" + rows * sh);\n",
	"  torus.setAttribute(\"preserveAspectRatio\", \"xMidYMid meet\");\n",
	"\n",
	"  function pos(node) {\n",
	"    const c = coords(node), s = Math.floor(node / (nx * ny));\n",
	"    return [(s % cols) * sw + PAD + c[0] * SP,\n",
	"      Math.floor(s / cols) * sh + TOP + PAD + (nd > 1 ? c[1] : 0) * SP];\n",
	"  }\n",
	"  /* an arrow from (sx,sy) to (ex,ey), shifted right of its travel by off */\n",
	"  function arrow(sx, sy, ex, ey, off, w, hl, hw) {\n",
	"    const L = Math.hypot(ex - sx, ey - sy), ux = (ex - sx) / L, uy = (ey - sy) / L, px = -uy, py = ux;\n",
	"    sx += px * off; sy += py * off; ex += px * off; ey += py * off;\n",
	"    const bx = ex - ux * hl, by = ey - uy * hl;\n",
	"    const p = [[sx + px * w, sy + py * w], [bx + px * w, by + py * w], [bx + px * hw, by + py * hw],\n",
	"      [ex, ey], [bx - px * hw, by - py * hw], [bx - px * w, by - py * w], [sx - px * w, sy - py * w]];\n",
	"    return \"M\" + p.map(function (q) { return q[0].toFixed(1) + \",\" + q[1].toFixed(1); }).join(\"L\") + \"Z\";\n",
	"  }\n",
	"  const IN_PLANE = [[1, 0], [0, 1]];\n",
	"  /* the direction of an extra-dimension mark: dim d >= 2, plus or minus */\n",
	"  function markDir(d, dir) {\n",
	"    const a = ((d - 2) & 1 ? 135 : 45) + (dir ? 180 : 0);\n",
	"    return [Math.cos(a * Math.PI / 180), -Math.sin(a * Math.PI / 180), (d - 2) >> 1];\n",
	"  }\n",
	"  function linkPath(node, d, dir, to, P) {\n",
	"    if (d < 2) {\n",
	"      const s = dir ? -1 : 1, ux = IN_PLANE[d][0] * s, uy = IN_PLANE[d][1] * s;\n",
	"      const c = coords(node)[d], wrap = dir ? c === 0 : c === D.dims[d] - 1;\n",
	"      const sx = P[0] + ux * (R + 3), sy = P[1] + uy * (R + 3);\n",
	"      if (wrap)\n",
	"        return [arrow(sx, sy, P[0] + ux * (PAD - 8), P[1] + uy * (PAD - 8), OFF, 3.5, 11, 8), true];\n",
	"      const Q = pos(to);\n",
	"      return [arrow(sx, sy, Q[0] - ux * (R + 3), Q[1] - uy * (R + 3), OFF, 3.5, 11, 8), false];\n",
	"    }\n",
	"    const m = markDir(d, dir), r0 = R + 3 + m[2] * 22;\n",
	"    const r1 = r0 + 20;\n",
	"    return [arrow(P[0] + m[0] * r0, P[1] + m[1] * r0, P[0] + m[0] * r1, P[1] + m[1] * r1, 0, 3.5, 8, 7), false];\n",
	"  }\n",
	"\n",
	"  /* draw: slice frames, nodes, then one path per link direction */\n",
	"  for (let s = 0; s < nsl; s++) {\n",
	"    const x0 = (s % cols) * sw, y0 = Math.floor(s / cols) * sh;\n",
	"    el(\"rect\", {class: \"frame\", x: x0 + 5, y: y0 + 5, width: sw - 10, height: sh - 10, rx: 10}, torus);\n",
	"    const parts = [];\n",
	"    let rest = s;\n",
	"    for (let d = 2; d < nd; d++) {\n",
	"      parts.push(DIM[d] + \"=\" + (rest % D.dims[d]));\n",
	"      rest = Math.floor(rest / D.dims[d]);\n",
	"    }\n",
	"    if (parts.length)\n",
	"      el(\"text\", {class: \"slabel\", x: x0 + 16, y: y0 + 26}, torus, parts.join(\" \"));\n",
	"    else /* slice labels may be long: the key shows the axes too */\n",
	"      el(\"text\", {class: \"axis\", x: x0 + sw - 16, y: y0 + 24, \"text-anchor\": \"end\"}, torus,\n",
	"        nd > 1 ? \"x \\u2192   y \\u2193\" : \"x \\u2192\");\n",
	"  }\n",
	"  const nodePos = [];\n",
	"  for (let n = 0; n < D.nnodes; n++) {\n",
	"    const P = pos(n), g = el(\"g\", {class: \"nd\"}, torus);\n",
	"    el(\"circle\", {cx: P[0], cy: P[1], r: R}, g);\n",
	"    el(\"text\", {x: P[0], y: P[1]}, g, String(n));\n",
	"    el(\"title\", {}, g, \"node \" + n + \" (\" + coords(n).join(\",\") + \")\");\n",
	"    nodePos.push(P);\n",
	"  }\n",
	"  const LK = [], WRAP = [];\n",
	"  for (let i = 0; i < nl; i++) {\n",
	"    const l = D.links[i], g = linkPath(l[0], l[1], l[2], l[3], nodePos[l[0]]);\n",
	"    LK.push(el(\"path\", {class: \"lk\", d: g[0], fill: IDLE, \"data-i\": i}, torus));\n",
	"    WRAP.push(g[1]);\n",
	"  }\n",
	"\n",
	"  /* legend: idle swatch and the colour ramp */\n",
	"  const leg = $(\"legend\");\n",
	"  const grad = el(\"linearGradient\", {id: \"ramp\"}, el(\"defs\", {}, leg));\n",
	"  for (let q = 1; q < 256; q += 17)\n",
	"    el(\"stop\", {offset: ((q - 1) / 254).toFixed(3), \"stop-color\": PAL[q]}, grad);\n",
	"  el(\"stop\", {offset: 1, \"stop-color\": PAL[255]}, grad);\n",
	"  el(\"rect\", {x: 2, y: 4, width: 36, height: 18, fill: IDLE}, leg);\n",
	"  el(\"text\", {x: 20, y: 38, \"text-anchor\": \"middle\", \"font-size\": 12}, leg, \"idle\");\n",
	"  el(\"rect\", {x: 52, y: 4, width: 300, height: 18, fill: \"url(#ramp)\"}, leg);\n",
	"  for (let k = 0; k <= 4; k++) {\n",
	"    el(\"line\", {x1: 52 + 75 * k, x2: 52 + 75 * k, y1: 22, y2: 27, stroke: \"#555\"}, leg);\n",
	"    el(\"text\", {x: 52 + 75 * k, y: 38, \"text-anchor\": \"middle\", \"font-size\": 12}, leg, 25 * k + \"%\");\n",
	"  }\n",
	"\n",
	"  /* mean utilisation of each (dim, dir) over time: one small plot each */\n",
	"  const PW = 180, PH = 40, plots = [];\n",
	"  for (let d = 0; d < nd; d++)\n",
	"    for (let dir = 0; dir < 2; dir++) {\n",
	"      const mine = [];\n",
	"      for (let i = 0; i < nl; i++)\n",
	"        if (D.links[i][1] === d && D.links[i][2] === dir)\n",
	"          mine.push(i);\n",
	"      if (!mine.length)\n",
	"        continue;\n",
	"      const avg = new Float32Array(nb);\n",
	"      for (const i of mine)\n",
	"        for (let b = 0; b < nb; b++)\n",
	"          avg[b] += util(i, b) / mine.length;\n",
	"      const box = document.createElement(\"div\");\n",
	"      $(\"plots\").appendChild(box);\n",
	"      const svg = el(\"svg\", {width: PW, height: PH + 14}, box);\n",
	"      el(\"rect\", {x: 0, y: 14, width: PW, height: PH, fill: \"#f6f6f6\"}, svg);\n",
	"      let pts = \"0,\" + (14 + PH);\n",
	"      for (let b = 0; b < nb; b++)\n",
	"        pts += \" \" + ((b + 0.5) * PW / nb).toFixed(1) + \",\" + (14 + PH * (1 - Math.min(1, avg[b]))).toFixed(1);\n",
	"      pts += \" \" + PW + \",\" + (14 + PH);\n",
	"      el(\"polygon\", {points: pts, fill: \"rgb(240,59,32)\", \"fill-opacity\": 0.75}, svg);\n",
	"      const cur = el(\"line\", {y1: 14, y2: 14 + PH, stroke: \"#000\", \"stroke-width\": 1.5}, svg);\n",
	"      const lab = el(\"text\", {x: 0, y: 11, \"font-size\": 12}, svg, \"\");\n",
	"      plots.push({d: d, dir: dir, avg: avg, cur: cur, lab: lab});\n",
	"    }\n",
	"\n",
	"  /* phase timeline: a bar per phase over [0, t_end], a cursor at the current bin */\n",
	"  const tl = $(\"timeline\"), LBL = 160, BW = 370 - LBL - 4, RH = 17;\n",
	"  const hue = function (k) { return \"hsl(\" + (k * 67 + 200) % 360 + \",65%,50%)\"; };\n",
	"  const tx = function (ps) { return LBL + BW * ps / Math.max(1, D.t_end_ps); };\n",
	"  tl.setAttribute(\"height\", Math.max(1, D.phases.length) * RH + 6);\n",
	"  const rowsTxt = [];\n",
	"  D.phases.forEach(function (p, k) {\n",
	"    rowsTxt.push(el(\"text\", {x: 0, y: k * RH + 13, \"font-size\": 12}, tl, p.name));\n",
	"    el(\"rect\", {x: tx(p.start), y: k * RH + 3, width: Math.max(1.5, tx(p.end) - tx(p.start)),\n",
	"      height: RH - 5, fill: hue(k), rx: 2}, tl);\n",
	"  });\n",
	"  if (!D.phases.length)\n",
	"    el(\"text\", {x: 0, y: 14, \"font-size\": 12}, tl, \"no collective phases in this trace\");\n",
	"  const tcur = el(\"line\", {y1: 0, y2: Math.max(1, D.phases.length) * RH + 6, stroke: \"#000\",\n",
	"    \"stroke-width\": 1.5}, tl);\n",
	"  tl.addEventListener(\"click\", function (e) {\n",
	"    const x = e.clientX - tl.getBoundingClientRect().left;\n",
	"    if (x >= LBL) {\n",
	"      pause();\n",
	"      setBin(binOf((x - LBL) / BW * D.t_end_ps));\n",
	"    }\n",
	"  });\n",
	"\n",
	"  /* the key: one node with its arrows and marks, drawn like the torus */\n",
	"  const key = $(\"key\"), KX = 68, KY = 75;\n",
	"  el(\"circle\", {cx: KX, cy: KY, r: R, fill: \"#fff\", stroke: \"#666\", \"stroke-width\": 1.5}, key);\n",
	"  for (let d = 0; d < Math.min(nd, 2); d++)\n",
	"    for (let dir = 0; dir < 2; dir++) {\n",
	"      const s = dir ? -1 : 1, ux = IN_PLANE[d][0] * s, uy = IN_PLANE[d][1] * s;\n",
	"      const a = arrow(KX + ux * (R + 3), KY + uy * (R + 3), KX + ux * 46, KY + uy * 46, OFF, 3.5, 11, 8);\n",
	"      el(\"path\", {d: a, fill: \"#888\"}, key);\n",
	"      el(\"text\", {x: KX + ux * 58 - uy * 10, y: KY + uy * 58 + ux * 10}, key, dname(d, dir));\n",
	"    }\n",
	"  for (let d = 2; d < nd; d++)\n",
	"    for (let dir = 0; dir < 2; dir++) {\n",
	"      const m = markDir(d, dir), r0 = R + 3 + m[2] * 22;\n",
	"      const a = arrow(KX + m[0] * r0, KY + m[1] * r0, KX + m[0] * (r0 + 20), KY + m[1] * (r0 + 20), 0, 3.5, 8, 7);\n",
	"      el(\"path\", {d: a, fill: \"#888\"}, key);\n",
	"      el(\"text\", {x: KX + m[0] * (r0 + 30), y: KY + m[1] * (r0 + 30)}, key, dname(d, dir));\n",
	"    }\n",
	"  const hk = el(\"foreignObject\", {x: 146, y: 0, width: 224, height: 150}, key);\n",
	"  const hd = document.createElement(\"div\");\n",
	"  hd.className = \"small\";\n",
	"  hd.textContent = \"Each arrow is one direction of a link, keeping right of the line between two nodes. \" +\n",
	"    \"Arrows leaving a grid edge are the wrap-around links (they come back in at the opposite edge).\" +\n",
	"    (nd > 2 ? \" Each grid is one slice \" + DIM.slice(2, nd).join(\",\") + \"; links between slices are \" +\n",
	"      \"the short marks at each node.\" : \"\");\n",
	"  hk.appendChild(hd);\n",
	"  $(\"howto\").textContent = \"The time bins are \" + us(D.bin_ps) + \" \\u00b5s of virtual time. A phase is \" +\n",
	"    \"one (collective, stage, phase) of the trace tags; in a multicolor collective the colors run their \" +\n",
	"    \"phases side by side, so \" +\n",
	"    \"several can be active at once.\";\n",
	"\n",
	"  /* hover: say which link and how busy */\n",
	"  let hover = -1;\n",
	"  torus.addEventListener(\"mouseover\", function (e) {\n",
	"    const i = e.target.getAttribute && e.target.getAttribute(\"data-i\");\n",
	"    if (i !== null && i !== undefined) {\n",
	"      hover = +i;\n",
	"      info();\n",
	"    }\n",
	"  });\n",
	"  function mib(b) {\n",
	"    return b >= 1048576 ? (b / 1048576).toFixed(2) + \" MiB\" : (b / 1024).toFixed(1) + \" KiB\";\n",
	"  }\n",
	"  function info() {\n",
	"    if (hover < 0)\n",
	"      return;\n",
	"    const l = D.links[hover];\n",
	"    $(\"info\").textContent = dname(l[1], l[2]) + \" link of node \" + l[0] + \" (\" + coords(l[0]).join(\",\") +\n",
	"      \") to node \" + l[3] + \" (\" + coords(l[3]).join(\",\") + \")\" +\n",
	"      (WRAP[hover] ? \", wrap-around\" : \"\") + \": \" +\n",
	"      pct(util(hover, cur)) + \" busy in this bin; \" + mib(D.bytes[hover]) + \" of payload over the run.\";\n",
	"  }\n",
	"\n",
	"  /* show bin b */\n",
	"  let cur = 0, timer = null;\n",
	"  const slider = $(\"slider\");\n",
	"  slider.max = nb - 1;\n",
	"  function show() {\n",
	"    for (let i = 0; i < nl; i++)\n",
	"      LK[i].setAttribute(\"fill\", PAL[U[i][cur]]);\n",
	"    slider.value = cur;\n",
	"    $(\"tlabel\").textContent = \"t = \" + us(binStart(cur)) + \"\\u2013\" + us(binEnd(cur)) + \" \\u00b5s of \" +\n",
	"      us(D.t_end_ps) + \" \\u00b5s\";\n",
	"    const x = (cur + 0.5) * PW / nb;\n",
	"    for (const p of plots) {\n",
	"      p.cur.setAttribute(\"x1\", x);\n",
	"      p.cur.setAttribute(\"x2\", x);\n",
	"      p.lab.textContent = dname(p.d, p.dir) + \" links: \" + Math.round(p.avg[cur] * 100) + \"% busy\";\n",
	"    }\n",
	"    const t0 = binStart(cur), t1 = binEnd(cur), ph = $(\"phase\");\n",
	"    ph.textContent = \"\";\n",
	"    const active = [];\n",
	"    D.phases.forEach(function (p, k) {\n",
	"      const on = p.start < t1 && p.end > t0;\n",
	"      rowsTxt[k].setAttribute(\"font-weight\", on ? \"bold\" : \"normal\");\n",
	"      if (!on)\n",
	"        return;\n",
	"      active.push(p);\n",
	"      const line = document.createElement(\"div\"), chip = document.createElement(\"span\");\n",
	"      chip.className = \"chip\";\n",
	"      chip.style.background = hue(k);\n",
	"      line.appendChild(chip);\n",
	"      line.appendChild(document.createTextNode(p.name));\n",
	"      ph.appendChild(line);\n",
	"    });\n",
	"    let busy = 0;\n",
	"    for (let i = 0; i < nl; i++)\n",
	"      busy += U[i][cur] > 0;\n",
	"    if (!active.length)\n",
	"      ph.textContent = busy ? \"untagged or control traffic\" : \"no traffic\";\n",
	"    $(\"phasesub\").textContent = busy + \" of \" + nl + \" link directions busy\" +\n",
	"      (active.length === 1 ? \"; phase runs \" + us(active[0].start) + \"\\u2013\" + us(active[0].end) +\n",
	"        \" \\u00b5s\" : \"\");\n",
	"    const tc = tx((t0 + t1) / 2);\n",
	"    tcur.setAttribute(\"x1\", tc);\n",
	"    tcur.setAttribute(\"x2\", tc);\n",
	"    info();\n",
	"  }\n",
	"  function setBin(b) {\n",
	"    cur = Math.max(0, Math.min(nb - 1, b));\n",
	"    show();\n",
	"  }\n",
	"\n",
	"  /* controls */\n",
	"  const playBtn = $(\"play\");\n",
	"  function interval() { return Math.max(15, 10000 / nb / +$(\"speed\").value); } /* a run lasts ~10 s at 1x */\n",
	"  function tick() {\n",
	"    if (cur >= nb - 1)\n",
	"      pause();\n",
	"    else\n",
	"      setBin(cur + 1);\n",
	"  }\n",
	"  function play() {\n",
	"    if (cur >= nb - 1)\n",
	"      setBin(0);\n",
	"    clearInterval(timer);\n",
	"    timer = setInterval(tick, interval());\n",
	"    playBtn.textContent = \"\\u275a\\u275a pause\";\n",
	"  }\n",
	"  function pause() {\n",
	"    clearInterval(timer);\n",
	"    timer = null;\n",
	"    playBtn.textContent = \"\\u25b6 play\";\n",
	"  }\n",
	"  playBtn.addEventListener(\"click\", function () { timer ? pause() : play(); });\n",
	"  $(\"back\").addEventListener(\"click\", function () { pause(); setBin(cur - 1); });\n",
	"  $(\"fwd\").addEventListener(\"click\", function () { pause(); setBin(cur + 1); });\n",
	"  slider.addEventListener(\"input\", function () { pause(); setBin(+slider.value); });\n",
	"  $(\"speed\").addEventListener(\"change\", function () { if (timer) play(); });\n",
	"  document.addEventListener(\"keydown\", function (e) {\n",
	"    if (e.target === slider || e.target.tagName === \"SELECT\")\n",
	"      return;\n",
	"    if (e.key === \" \") {\n",
	"      e.preventDefault();\n",
	"      playBtn.click();\n",
	"    } else if (e.key === \"ArrowLeft\") {\n",
	"      $(\"back\").click();\n",
	"    } else if (e.key === \"ArrowRight\") {\n",
	"      $(\"fwd\").click();\n",
	"    }\n",
	"  });\n",
	"\n",
	"  /*\n",
	"   * ?selftest: drive the page as a user would and write the verdict into\n",
	"   * the DOM (synchronously, so chromium --dump-dom sees it): the torus is\n",
	"   * drawn, pointing at a link describes it, a step changes the time, play\n",
	"   * and pause toggle, and the drawn colours change somewhere over time.\n",
	"   */\n",
	"  function fills() { return LK.map(function (e) { return e.getAttribute(\"fill\"); }).join(\" \"); }\n",
	"  function check() {\n",
	"    const nodes = torus.querySelectorAll(\".nd\").length, links = torus.querySelectorAll(\".lk\").length;\n",
	"    if (links === 0)\n",
	"      throw Error(\"no link drawn\");\n",
	"    if (links !== nl)\n",
	"      throw Error(\"drew \" + links + \" link directions, the data has \" + nl);\n",
	"    if (nodes !== D.nnodes)\n",
	"      throw Error(\"drew \" + nodes + \" nodes, the data has \" + D.nnodes);\n",
	"    LK[0].dispatchEvent(new MouseEvent(\"mouseover\", {bubbles: true}));\n",
	"    if ($(\"info\").textContent.indexOf(\" link of node \" + D.links[0][0] + \" (\") < 0)\n",
	"      throw Error(\"pointing at a link does not describe it\");\n",
	"    setBin(0);\n",
	"    const t0 = $(\"tlabel\").textContent, f0 = fills(), b0 = cur;\n",
	"    $(\"fwd\").click();\n",
	"    const t1 = $(\"tlabel\").textContent;\n",
	"    if (nb > 1 && (t1 === t0 || cur !== b0 + 1 || +slider.value !== cur))\n",
	"      throw Error(\"step forward did not move the time (\" + t0 + \")\");\n",
	"    playBtn.click();\n",
	"    if (!timer)\n",
	"      throw Error(\"play did not start\");\n",
	"    playBtn.click();\n",
	"    if (timer)\n",
	"      throw Error(\"pause did not stop\");\n",
	"    /* move the slider as a user would, over samples and the busiest bin */\n",
	"    let busiest = 0, most = -1;\n",
	"    for (let b = 0; b < nb; b++) {\n",
	"      let s = 0;\n",
	"      for (let i = 0; i < nl; i++)\n",
	"        s += U[i][b];\n",
	"      if (s > most) {\n",
	"        most = s;\n",
	"        busiest = b;\n",
	"      }\n",
	"    }\n",
	"    const samples = [busiest];\n",
	"    for (let k = 0; k <= 40; k++)\n",
	"      samples.push(Math.round(k * (nb - 1) / 40));\n",
	"    let changed = -1;\n",
	"    for (const b of samples) {\n",
	"      slider.value = b;\n",
	"      slider.dispatchEvent(new Event(\"input\"));\n",
	"      if (cur !== b)\n",
	"        throw Error(\"the slider did not move the time to bin \" + b);\n",
	"      if (fills() !== f0) {\n",
	"        changed = b;\n",
	"        break;\n",
	"      }\n",
	"    }\n",
	"    if (changed < 0)\n",
	"      throw Error(\"the link colours never change over time (no traffic in the trace?)\");\n",
	"    if (D.phases.length) {\n",
	"      const p = D.phases[0];\n",
	"      setBin(binOf((p.start + p.end) / 2));\n",
	"      if ($(\"phase\").textContent.indexOf(p.name) < 0)\n",
	"        throw Error(\"phase '\" + p.name + \"' not shown in its own time\");\n",
	"    }\n",
	"    return \"nodes=\" + nodes + \" links=\" + links + \" bins=\" + nb + \" phases=\" + D.phases.length +\n",
	"      \" t0=\" +\n",
	"      us(binStart(b0)) + \"us t1=\" + us(binStart(b0 + 1)) + \"us changed_at=\" + us(binStart(changed)) + \"us\";\n",
	"  }\n",
	"\n",
	"  /* ?t=F: start at that fraction of the run, paused (for screenshots) */\n",
	"  const tq = params.get(\"t\");\n",
	"  const frac = tq === null ? NaN : parseFloat(tq);\n",
	"  setBin(isFinite(frac) ? Math.round(Math.max(0, Math.min(1, frac)) * (nb - 1)) : 0);\n",
	"  if (params.has(\"selftest\")) {\n",
	"    let msg;\n",
	"    try {\n",
	"      msg = \"selftest: \" + \"ok \" + check(); /* split: the DOM must not say \"ok\" unless it is */\n",
	"    } catch (e) {\n",
	"      msg = \"selftest: FAIL \" + e.message;\n",
	"    }\n",
	"    const pre = document.createElement(\"pre\");\n",
	"    pre.id = \"selftest\";\n",
	"    pre.textContent = msg;\n",
	"    document.querySelector(\"header\").appendChild(pre);\n",
	"  } else if (tq === null && nb > 1) {\n",
	"    play();\n",
	"  }\n",
	"})();\n",
	"</script>\n",
	"</body>\n",
	"</html>\n",
	NULL,
};

static void put_lines(FILE *f, const char *const *lines)
{
	for (; *lines; lines++)
		fputs(*lines, f);
}

/* Length of the valid UTF-8 sequence at s (n bytes left), 0 if invalid. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	/* by lead byte: sequence length and the smallest code point it may encode */
	size_t len = s[0] < 0x80 ? 1 : (s[0] & 0xE0) == 0xC0 ? 2 : (s[0] & 0xF0) == 0xE0 ? 3
		   : (s[0] & 0xF8) == 0xF0 ? 4 : 0;
	static const uint32_t min[5] = {0, 0, 0x80, 0x800, 0x10000};
	uint32_t c;

	if (len == 0 || len > n)
		return 0;
	if (len == 1)
		return 1;
	c = s[0] & (0x7Fu >> len);
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xC0) != 0x80)
			return 0;
		c = c << 6 | (s[i] & 0x3Fu);
	}
	/* overlong forms and surrogates would let markup hide from a naive check */
	if (c < min[len] || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
		return 0;
	return len;
}

/*
 * Untrusted text (the job's command line) into the page. As HTML text:
 * markup characters become entities. As a JSON string inside <script>:
 * '<', '>' and '&' are \u escapes too, so the text can never close the
 * script. Either way control characters and bad UTF-8 become U+FFFD.
 */
static void put_html_text(FILE *f, const char *text, size_t max)
{
	const unsigned char *s = (const unsigned char *)text;
	size_t n = strnlen(text, max);

	for (size_t i = 0; i < n;) {
		size_t len = utf8_len(s + i, n - i);
		if (len == 0 || s[i] < 0x20 || s[i] == 0x7F) {
			fputs("&#xfffd;", f);
			i++;
			continue;
		}
		switch (s[i]) {
		case '&': fputs("&amp;", f); break;
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '"': fputs("&quot;", f); break;
		case '\'': fputs("&#39;", f); break;
		default: fwrite(s + i, 1, len, f); break;
		}
		i += len;
	}
}

static void put_json_string(FILE *f, const char *text, size_t max)
{
	const unsigned char *s = (const unsigned char *)text;
	size_t n = strnlen(text, max);

	fputc('"', f);
	for (size_t i = 0; i < n;) {
		size_t len = utf8_len(s + i, n - i);
		if (len == 0 || s[i] < 0x20 || s[i] == 0x7F) {
			fputs("\\ufffd", f);
			i++;
			continue;
		}
		if (strchr("<>&\"\\", s[i]))
			fprintf(f, "\\u%04x", s[i]);
		else
			fwrite(s + i, 1, len, f);
		i += len;
	}
	fputc('"', f);
}

static const char *status_text(const struct tt_trace *t)
{
	static const char *names[] = {"the job finished", "the job failed", "the job hung",
				      "the job was interrupted"};

	if (!t->has_end)
		return "no end record: the job was killed before torusrun closed the trace";
	return t->end.status < 4 ? names[t->end.status] : "the job ended with an unknown status";
}

static void put_header(FILE *f, const struct tt_trace *t, const char *shape)
{
	const struct torus_trace_header *h = &t->hdr;

	fprintf(f, "<header>\n<h1>Link utilisation over virtual time, torus %s</h1>\n<p class=\"sub\"><code>",
		shape);
	put_html_text(f, h->program, sizeof(h->program));
	fprintf(f, "</code> &middot; %u nodes, %u cores &middot; %.0f MB/s per link direction, hop %.0f ns"
		   " &middot; traffic until %.3f &micro;s &middot; %zu records &middot; %s</p>\n</header>\n",
		h->nnodes, h->total_cores, (double)h->link_bw / 1e6, (double)h->hop_latency_ps / 1e3,
		(double)t->t_end / 1e6, t->nrec, status_text(t));
}

/* Quantise one link's bins to 0..255, two hex digits each; "" if idle
 * throughout. Any traffic at all stays visible (at least 1). This is the
 * colour's scale: a bin over 1 is 255 here and its number goes in "over". */
static void hex_bins(const double *u, uint32_t nbins, char *line)
{
	static const char hex[] = "0123456789abcdef";
	int any = 0;

	for (uint32_t b = 0; b < nbins; b++) {
		double x = u[b] < 0 ? 0 : u[b] > 1 ? 1 : u[b];
		unsigned q = (unsigned)(x * 255 + 0.5);
		if (q == 0 && u[b] > 0)
			q = 1;
		any |= q != 0;
		line[2 * b] = hex[q >> 4];
		line[2 * b + 1] = hex[q & 15];
	}
	line[any ? 2 * (size_t)nbins : 0] = '\0';
}

static void put_data(FILE *f, const struct tt_trace *t, uint32_t nbins, uint64_t bin_ps, const double *util,
		     const uint64_t *bytes, const struct tt_phase *ph, int nph, char *line)
{
	const char *sep = "";
	uint32_t k = 0;

	fputs("<script>\nconst D = {\"dims\": [", f);
	for (uint32_t d = 0; d < t->shape.ndims; d++)
		fprintf(f, "%s%u", d ? ", " : "", t->shape.dims[d]);
	fprintf(f, "], \"nnodes\": %u, \"nbins\": %u, \"bin_ps\": %llu, \"t_end_ps\": %llu,\n\"links\": [",
		t->shape.nnodes, nbins, (unsigned long long)bin_ps, (unsigned long long)t->t_end);
	for (uint32_t id = 0; id < t->nlinks; id++) {
		uint32_t node, dim, dir;
		if (!tt_link_exists(t, id))
			continue;
		tt_link_of(t, id, &node, &dim, &dir);
		fprintf(f, "%s%s[%u,%u,%u,%u]", sep, k++ % 8 ? "" : "\n", node, dim, dir,
			torus_neighbor(&t->shape, node, dim, (enum torus_dir)dir));
		sep = ",";
	}
	fputs("],\n\"u\": [", f);
	sep = "";
	for (uint32_t id = 0; id < t->nlinks; id++) {
		if (!tt_link_exists(t, id))
			continue;
		hex_bins(util + (size_t)id * nbins, nbins, line);
		fprintf(f, "%s\n\"%s\"", sep, line);
		sep = ",";
	}
	/* what u cannot hold: bins over 1, as they are */
	fputs("],\n\"over\": [", f);
	sep = "";
	k = 0;
	for (uint32_t id = 0, i = 0; id < t->nlinks; id++) {
		if (!tt_link_exists(t, id))
			continue;
		for (uint32_t b = 0; b < nbins; b++)
			if (util[(size_t)id * nbins + b] > 1) {
				fprintf(f, "%s%s[%u,%u,%.4g]", sep, k++ % 8 ? "" : "\n", i, b, util[(size_t)id * nbins + b]);
				sep = ",";
			}
		i++;
	}
	fputs("],\n\"bytes\": [", f);
	sep = "";
	k = 0;
	for (uint32_t id = 0; id < t->nlinks; id++) {
		if (!tt_link_exists(t, id))
			continue;
		fprintf(f, "%s%s%llu", sep, k++ % 16 ? "" : "\n", (unsigned long long)bytes[id]);
		sep = ",";
	}
	fputs("],\n\"phases\": [", f);
	for (int i = 0; i < nph; i++) {
		fprintf(f, "%s\n{\"name\": ", i ? "," : "");
		put_json_string(f, ph[i].name, sizeof(ph[i].name));
		fprintf(f, ", \"start\": %llu, \"end\": %llu}", (unsigned long long)ph[i].start,
			(unsigned long long)ph[i].end);
	}
	fputs("]};\n</script>\n", f);
}

int tt_write_html(const struct tt_trace *t, const char *path, char *err, size_t errlen)
{
	struct tt_phase *ph = NULL;
	double *util = NULL;
	uint64_t *bytes = NULL;
	char *line = NULL, shape[96];
	FILE *f = NULL;
	uint32_t nreal = 0, nbins = HTML_BINS;
	uint64_t bin_ps;
	int rc = 0, nph;

	if (t->shape.nnodes > HTML_MAX_NODES) {
		snprintf(err, errlen, "the page draws at most %u nodes, the trace has %u: use --svg or --csv",
			 HTML_MAX_NODES, t->shape.nnodes);
		return -E2BIG;
	}
	for (uint32_t id = 0; id < t->nlinks; id++)
		nreal += (uint32_t)tt_link_exists(t, id);
	if (nreal && (uint64_t)nreal * nbins > HTML_MAX_CELLS)
		nbins = HTML_MAX_CELLS / nreal > HTML_MIN_BINS ? HTML_MAX_CELLS / nreal : HTML_MIN_BINS;
	/* whole bins over [0, t_end]: round the width up, then drop the bins past the end */
	bin_ps = t->t_end / nbins + (t->t_end % nbins != 0);
	if (bin_ps == 0)
		bin_ps = 1;
	nbins = t->t_end ? (uint32_t)(t->t_end / bin_ps + (t->t_end % bin_ps != 0)) : 1;

	nph = tt_phases(t, &ph);
	if (nph < 0) {
		ph = NULL;
		rc = nph;
		snprintf(err, errlen, "out of memory listing the phases");
		goto out;
	}
	util = malloc((size_t)t->nlinks * nbins * sizeof(*util));
	bytes = calloc(t->nlinks ? t->nlinks : 1, sizeof(*bytes));
	line = malloc(2 * (size_t)nbins + 1);
	if (!util || !bytes || !line) {
		rc = -ENOMEM;
		snprintf(err, errlen, "out of memory for %u link directions x %u time bins", t->nlinks, nbins);
		goto out;
	}
	rc = tt_bin(t, 0, bin_ps, nbins, NULL, NULL, util);
	if (rc) {
		snprintf(err, errlen, "cannot bin the trace: %s", strerror(-rc));
		goto out;
	}
	for (size_t i = 0; i < t->nrec; i++)
		if (t->rec[i].link < t->nlinks)
			bytes[t->rec[i].link] += t->rec[i].payload;

	f = fopen(path, "w");
	if (!f) {
		rc = -errno;
		snprintf(err, errlen, "cannot create %s: %s", path, strerror(-rc));
		goto out;
	}
	torus_shape_format(&t->shape, shape, sizeof(shape));
	put_lines(f, page_top);
	fprintf(f, "<title>torus-trace: link utilisation, torus %s</title>\n", shape);
	put_lines(f, page_style);
	put_header(f, t, shape);
	put_lines(f, page_body);
	put_data(f, t, nbins, bin_ps, util, bytes, ph, nph, line);
	put_lines(f, page_script);

	/* a full disk shows up at the flush or the close, not at each fprintf */
	errno = 0;
	if (fflush(f) || ferror(f)) {
		rc = errno ? -errno : -EIO;
		snprintf(err, errlen, "cannot write %s: %s", path, strerror(-rc));
	}
	if (fclose(f) && !rc) {
		rc = errno ? -errno : -EIO;
		snprintf(err, errlen, "cannot write %s: %s", path, strerror(-rc));
	}
	f = NULL;
out:
	if (f)
		fclose(f);
	free(line);
	free(bytes);
	free(util);
	free(ph);
	return rc;
}
