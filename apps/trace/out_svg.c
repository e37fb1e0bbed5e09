/*
 * torus-trace --svg: a heat map of the torus, one panel per phase or per
 * time window, and below the panels the mean utilisation of each dimension
 * and direction over time.
 *
 * Layout. Nodes sit on a grid, x to the right and y down (a 1-D torus is
 * one row). Dimensions from z up become slices: one grid per combination of
 * their coordinates, side by side, and their links become bars at each
 * node's lower right, plus then minus for each dimension. Every link
 * direction is drawn on its own: the plus direction on the upper (x) or left
 * (y) lane with its barb on the outer side, the minus direction on the other
 * lane, so the two links of a size-2 dimension, which join the same pair of
 * nodes, stay apart. A wrap-around link is a stub leaving one edge of the
 * grid and a stub entering the opposite edge.
 *
 * Colour: utilisation = busy time in the panel's span / the span, in 20 steps
 * of 5% from pale yellow through orange and red to dark red; an idle link is
 * grey. A phase's panel counts that phase's traffic only, a window all of
 * it. Where records overlap on a link its utilisation passes 1: the colour
 * stays the darkest, the numbers (tooltips, panel maximum, the plot's axis)
 * show it as it is.
 *
 * Size: at most SVG_MAX_PANELS panels (more phases are merged, consecutive
 * ones together, and the title says which), at most SVG_PLOT_BINS points per
 * line of the plot. A small torus gets a tooltip on every link and node; a
 * larger one draws all links of one colour as one path, which keeps an 8x8x8
 * torus with 12 panels near 1 MB.
 *
 * Limits: the width is fixed, so a long ring or a large 2-D grid gets small
 * cells (a ring is never folded into several rows); more than ~8 slices in a
 * row make the cells small too.
 */
#include "trace_tool.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define SVG_W 1200.0              /* px: viewBox width */
#define SVG_MARGIN 20.0
#define SVG_MAX_PANELS 12u
#define SVG_DEFAULT_WINDOWS 4u
#define SVG_PLOT_BINS 200u
#define SVG_LEVELS 20             /* colour steps of 5% */
#define SVG_TIP_LIMIT 6000u       /* link drawings (all panels) that still get a tooltip each */
#define SVG_BIN_BUDGET (1u << 22) /* doubles one tt_bin call may fill for the plot */

/* Grid geometry in units of the node spacing s. */
#define G_PAD 0.9      /* around the outermost nodes: room for stubs and bars */
#define G_SGAP 0.4     /* between slices */
#define G_NODE_R 0.15
#define G_LANE 0.09    /* a lane's offset from the line joining two nodes */
#define G_LANE_W 0.075
#define G_STUB 0.62    /* a wrap-around stub ends this far from its node */
#define G_BARB 0.1
#define G_BAR_X 0.22   /* bars of dims >= 2: box right of and below the node */
#define G_BAR_Y0 0.22
#define G_BAR_Y1 0.56
#define G_BAR_SPAN 0.52  /* room for all bars of a node */
#define G_BAR_W 0.11     /* widest bar */

/* px */
#define HEAD_H 78.0
#define LEGEND_H 108.0
#define PANEL_HEAD 50.0
#define PANEL_MIN_W 240.0
#define PANEL_GAP 16.0
#define PANEL_PAD 8.0     /* between a panel's frame and its grid */
#define SLICE_LABEL 14.0
#define S_MAX 56.0        /* node spacing never larger */
#define S_GOOD 24.0       /* more panels per row only while s stays this large */
#define BARBS_MIN_S 24.0  /* below this a barb is a blob: lanes alone */
#define PLOT_TOP 58.0     /* title, legend and panel numbers of the plot */
#define PLOT_H 220.0
#define PLOT_BOTTOM 44.0  /* tick labels and axis title */

#define FONT "font-family=\"DejaVu Sans,Helvetica,Arial,sans-serif\""

struct svg_panel {
	uint64_t t0, t1;          /* ps: utilisation is relative to this span */
	uint32_t ph0, ph1;        /* phases [ph0, ph1); ph0 == ph1: all traffic */
	float *util;              /* per link direction */
	double max, mean;         /* over the links that exist */
};

struct svg_ctx {
	const struct tt_trace *t;
	struct tt_phase *ph;
	uint32_t nph;
	struct svg_panel panel[SVG_MAX_PANELS];
	uint32_t npanels, windows_asked;
	int by_phase;
	uint64_t t_min, span;     /* ps: first record start, to the last end */
	/* plot: mean[(dim * 2 + dir) * nbins + b] */
	uint64_t bin_ps;
	uint32_t nbins;
	double *mean, plot_max;
	/* grid */
	uint32_t nx, ny, nslices, scols, srows;
	uint32_t nextra, extra_idx[TORUS_MAX_DIMS]; /* dims >= 2 with links: bar pairs */
	uint32_t pcols, prows;
	double s, label_h, slice_w, slice_h, grid_w, grid_h, panel_w, panel_h;
	int tips, barbs;
};

/* Text from the trace (program, phase names) into XML: escaped, and bytes
 * that are not printable ASCII become '?' since nothing says they are UTF-8. */
static void put_esc(FILE *f, const char *s, size_t max)
{
	for (size_t i = 0; i < max && s[i]; i++) {
		unsigned char ch = (unsigned char)s[i];
		switch (ch) {
		case '&': fputs("&amp;", f); break;
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '"': fputs("&quot;", f); break;
		case '\'': fputs("&#39;", f); break;
		default: fputc(ch < 0x20 || ch > 0x7e ? '?' : ch, f);
		}
	}
}

/* A <text>; fmt is our own markup (numbers, entities), never trace text. */
__attribute__((format(printf, 6, 7))) static void put_text(FILE *f, double x, double y, const char *attrs,
							    double size, const char *fmt, ...)
{
	va_list ap;
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"%.0f\" %s>", x, y, size, attrs);
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fputs("</text>\n", f);
}

/* --------------------------------------------------------------- colours */

static const struct { double u; double r, g, b; } heat_stops[] = {
	{0.00, 0xff, 0xf2, 0xa8}, {0.25, 0xfe, 0xcc, 0x5c}, {0.50, 0xfd, 0x8d, 0x3c},
	{0.75, 0xe3, 0x1a, 0x1c}, {1.00, 0x67, 0x00, 0x0d},
};
#define IDLE_COLOUR "#d0d0d0"

static int heat_level(double u)
{
	if (!(u > 0))
		return 0;
	if (u >= 1) /* more than fully busy (overlapping records): the darkest */
		return SVG_LEVELS;
	int k = (int)ceil(u * SVG_LEVELS);
	return k < 1 ? 1 : k > SVG_LEVELS ? SVG_LEVELS : k;
}

/* Level 1..20 takes the scale's colour at the middle of its 5% step. */
static void heat_colour(int level, char *buf, size_t len)
{
	if (level <= 0) {
		snprintf(buf, len, IDLE_COLOUR);
		return;
	}
	double u = (level - 0.5) / SVG_LEVELS;
	size_t i = 0;
	while (i + 2 < sizeof(heat_stops) / sizeof(heat_stops[0]) && u > heat_stops[i + 1].u)
		i++;
	double f = (u - heat_stops[i].u) / (heat_stops[i + 1].u - heat_stops[i].u);
	const double lo[3] = {heat_stops[i].r, heat_stops[i].g, heat_stops[i].b};
	const double hi[3] = {heat_stops[i + 1].r, heat_stops[i + 1].g, heat_stops[i + 1].b};
	snprintf(buf, len, "#%02x%02x%02x", (unsigned)lround(lo[0] + f * (hi[0] - lo[0])),
		 (unsigned)lround(lo[1] + f * (hi[1] - lo[1])), (unsigned)lround(lo[2] + f * (hi[2] - lo[2])));
}

/* Plot lines: a hue per dimension, minus dashed. */
static const char *const dim_colour[TORUS_MAX_DIMS] = {"#1f77b4", "#2ca02c", "#9467bd",
						       "#ff7f0e", "#8c564b", "#17becf"};

/* ----------------------------------------------------------------- times */

/* Decimals for times shown next to a span of dur ps: enough to tell apart. */
static int us_prec(uint64_t dur)
{
	double us = (double)dur / 1e6;
	return us >= 100 ? 0 : us >= 10 ? 1 : us >= 1 ? 2 : 3;
}

static double us_of(uint64_t ps) { return (double)ps / 1e6; }

/* ---------------------------------------------------------------- panels */

/* A panel's phases, by key (tt_phase_key): one lookup per record. */
static int keep_any_phase(const struct tt_rec *r, void *arg)
{
	const unsigned char *in = arg;
	return in[tt_phase_key(r->tag)];
}

/* Choose the panels, bin every one of them and the plot: all the work
 * that can fail for lack of memory, done before the output is opened. */
static int svg_prepare(struct svg_ctx *c, const struct tt_svg_opts *o, char *err, size_t errlen)
{
	const struct tt_trace *t = c->t;
	double *scratch = NULL;
	unsigned char *in = NULL; /* phase keys of a panel */
	int rc;

	rc = tt_phases(t, &c->ph);
	if (rc < 0) {
		c->ph = NULL;
		snprintf(err, errlen, "svg: out of memory listing phases");
		return rc;
	}
	c->nph = (uint32_t)rc;
	c->t_min = t->nrec ? t->rec[0].start : 0;
	c->span = t->t_end > c->t_min ? t->t_end - c->t_min : 0;
	if (c->span == 0)
		return 0; /* no traffic: the page says so */

	uint32_t want = o ? o->windows : 0;
	if (want == 0 && c->nph > 0) {
		c->by_phase = 1;
		c->npanels = c->nph < SVG_MAX_PANELS ? c->nph : SVG_MAX_PANELS;
		for (uint32_t i = 0; i < c->npanels; i++) {
			struct svg_panel *p = &c->panel[i];
			p->ph0 = (uint32_t)((uint64_t)i * c->nph / c->npanels);
			p->ph1 = (uint32_t)((uint64_t)(i + 1) * c->nph / c->npanels);
			p->t0 = UINT64_MAX;
			p->t1 = 0;
			for (uint32_t k = p->ph0; k < p->ph1; k++) {
				p->t0 = c->ph[k].start < p->t0 ? c->ph[k].start : p->t0;
				p->t1 = c->ph[k].end > p->t1 ? c->ph[k].end : p->t1;
			}
		}
	} else {
		uint32_t nw = want ? want : SVG_DEFAULT_WINDOWS;
		c->windows_asked = nw;
		nw = nw < SVG_MAX_PANELS ? nw : SVG_MAX_PANELS;
		nw = nw < c->span ? nw : (uint32_t)c->span;
		c->npanels = nw;
		for (uint32_t i = 0; i < nw; i++) {
			c->panel[i].t0 = c->t_min + c->span * i / nw;
			c->panel[i].t1 = c->t_min + c->span * (i + 1) / nw;
		}
	}

	scratch = malloc((size_t)t->nlinks * sizeof(double));
	in = malloc(TT_PHASE_KEYS);
	if (!scratch || !in)
		goto nomem;
	for (uint32_t i = 0; i < c->npanels; i++) {
		struct svg_panel *p = &c->panel[i];
		memset(in, 0, TT_PHASE_KEYS);
		for (uint32_t k = p->ph0; k < p->ph1; k++)
			in[c->ph[k].coll << 8 | c->ph[k].stage << 4 | c->ph[k].phase] = 1;
		if (p->t1 <= p->t0)
			p->t1 = p->t0 + 1; /* a phase of one instant: still a panel */
		p->util = malloc((size_t)t->nlinks * sizeof(float));
		if (!p->util)
			goto nomem;
		rc = tt_bin(t, p->t0, p->t1 - p->t0, 1, p->ph1 > p->ph0 ? keep_any_phase : NULL, in, scratch);
		if (rc < 0) {
			snprintf(err, errlen, "svg: cannot bin panel %u", i + 1);
			goto out;
		}
		double sum = 0;
		uint32_t n = 0;
		for (uint32_t l = 0; l < t->nlinks; l++) {
			/* as it is, over 1 where records overlap: the numbers say so,
			 * only the colour stops at the scale's end (heat_level) */
			double u = scratch[l] < 0 ? 0 : scratch[l];
			p->util[l] = (float)u;
			if (!tt_link_exists(t, l))
				continue;
			sum += u;
			n++;
			p->max = u > p->max ? u : p->max;
		}
		p->mean = n ? sum / n : 0;
	}
	free(scratch);
	scratch = NULL;

	/* The plot: bins in chunks, so a large torus never needs nlinks x
	 * nbins doubles at once. */
	c->nbins = c->span < SVG_PLOT_BINS ? (uint32_t)c->span : SVG_PLOT_BINS;
	c->bin_ps = (c->span + c->nbins - 1) / c->nbins;
	uint32_t chunk = SVG_BIN_BUDGET / (t->nlinks ? t->nlinks : 1);
	chunk = chunk < 1 ? 1 : chunk > c->nbins ? c->nbins : chunk;
	c->mean = calloc((size_t)t->shape.ndims * 2 * c->nbins, sizeof(double));
	scratch = malloc((size_t)t->nlinks * chunk * sizeof(double));
	if (!c->mean || !scratch)
		goto nomem;
	for (uint32_t b0 = 0; b0 < c->nbins; b0 += chunk) {
		uint32_t nb = c->nbins - b0 < chunk ? c->nbins - b0 : chunk;
		rc = tt_bin(t, c->t_min + (uint64_t)b0 * c->bin_ps, c->bin_ps, nb, NULL, NULL, scratch);
		if (rc < 0) {
			snprintf(err, errlen, "svg: cannot bin the time plot");
			goto out;
		}
		for (uint32_t l = 0; l < t->nlinks; l++) {
			uint32_t node, dim, dir;
			if (!tt_link_exists(t, l))
				continue;
			tt_link_of(t, l, &node, &dim, &dir);
			for (uint32_t b = 0; b < nb; b++)
				c->mean[(dim * 2 + dir) * c->nbins + b0 + b] += scratch[(size_t)l * nb + b];
		}
	}
	for (size_t i = 0; i < (size_t)t->shape.ndims * 2 * c->nbins; i++) {
		c->mean[i] /= t->shape.nnodes;
		c->plot_max = c->mean[i] > c->plot_max ? c->mean[i] : c->plot_max;
	}
	rc = 0;
	goto out;
nomem:
	snprintf(err, errlen, "svg: out of memory");
	rc = -ENOMEM;
out:
	free(scratch);
	free(in);
	return rc;
}

/* Slices, panel columns and the node spacing s. */
static void svg_layout(struct svg_ctx *c)
{
	const struct torus_shape *sh = &c->t->shape;

	c->nx = sh->dims[0];
	c->ny = sh->ndims > 1 ? sh->dims[1] : 1;
	c->nslices = sh->nnodes / (c->nx * c->ny);
	/* Slices in rows of up to 8 (or one whole z ring), z varying fastest. */
	uint32_t cap = sh->ndims > 2 && sh->dims[2] > 8 ? sh->dims[2] : 8;
	c->scols = 1;
	for (uint32_t d = 2; d < sh->ndims && c->scols * sh->dims[d] <= cap; d++)
		c->scols *= sh->dims[d];
	c->srows = c->nslices / c->scols;
	for (uint32_t d = 2; d < sh->ndims; d++)
		if (torus_dim_has_links(sh, d))
			c->extra_idx[d] = c->nextra++;
	c->label_h = c->nslices > 1 ? SLICE_LABEL : 0;

	double wu = c->scols * (c->nx - 1 + 2 * G_PAD) + (c->scols - 1) * G_SGAP; /* grid width / s */
	double avail = SVG_W - 2 * SVG_MARGIN;
	c->pcols = 1;
	c->s = fmin((avail - 2 * PANEL_PAD) / wu, S_MAX);
	for (uint32_t pc = c->npanels < 6 ? c->npanels : 6; pc > 1; pc--) {
		double w = (avail - (pc - 1) * PANEL_GAP) / pc, s = fmin((w - 2 * PANEL_PAD) / wu, S_MAX);
		if (w >= PANEL_MIN_W && s >= S_GOOD) {
			c->pcols = pc;
			c->s = s;
			break;
		}
	}
	c->prows = c->npanels ? (c->npanels + c->pcols - 1) / c->pcols : 0;
	c->panel_w = (avail - (c->pcols - 1) * PANEL_GAP) / c->pcols;
	c->slice_w = (c->nx - 1 + 2 * G_PAD) * c->s;
	c->slice_h = (c->ny - 1 + 2 * G_PAD) * c->s;
	c->grid_w = c->scols * c->slice_w + (c->scols - 1) * G_SGAP * c->s;
	c->grid_h = c->srows * (c->label_h + c->slice_h) + (c->srows - 1) * G_SGAP * c->s;
	c->panel_h = PANEL_HEAD + c->grid_h + 8;
	c->barbs = c->s >= BARBS_MIN_S;

	uint64_t drawn = 0;
	for (uint32_t d = 0; d < sh->ndims; d++)
		drawn += torus_dim_has_links(sh, d) ? 2ull * sh->nnodes : 0;
	c->tips = drawn * c->npanels <= SVG_TIP_LIMIT;
}

/* Top-left corner of the grid of panel (px, py). */
static void grid_origin(const struct svg_ctx *c, double px, double py, double *gx, double *gy)
{
	*gx = px + (c->panel_w - c->grid_w) / 2;
	*gy = py + PANEL_HEAD;
}

static void node_xy(const struct svg_ctx *c, double gx, double gy, const uint32_t *co, double *x, double *y)
{
	const struct torus_shape *sh = &c->t->shape;
	uint32_t slice = 0, stride = 1;
	for (uint32_t d = 2; d < sh->ndims; d++) {
		slice += co[d] * stride;
		stride *= sh->dims[d];
	}
	uint32_t scol = slice % c->scols, srow = slice / c->scols;
	*x = gx + scol * (c->slice_w + G_SGAP * c->s) + (G_PAD + co[0]) * c->s;
	*y = gy + srow * (c->label_h + c->slice_h + G_SGAP * c->s) + c->label_h +
	     (G_PAD + (sh->ndims > 1 ? co[1] : 0)) * c->s;
}

/* One lane segment from a to b along dim 0 (horizontal) or 1 (vertical) at
 * cross coordinate q; `out` (+1/-1) is the lane's outer side, where the barb
 * at b goes. */
static void lane_seg(FILE *f, const struct svg_ctx *c, uint32_t dim, double a, double b, double q, double out,
		     int barb)
{
	double x1 = dim ? q : a, y1 = dim ? a : q, x2 = dim ? q : b, y2 = dim ? b : q;
	fprintf(f, "M%.1f %.1f%c%.1f", x1, y1, dim ? 'V' : 'H', dim ? y2 : x2);
	if (barb && c->barbs) {
		double k = G_BARB * c->s, back = b > a ? -k : k;
		double bx = dim ? x2 + out * k : x2 + back, by = dim ? y2 + back : y2 + out * k;
		fprintf(f, "M%.1f %.1fL%.1f %.1f", bx, by, x2, y2);
	}
}

/* Bars of dims >= 2: one slot each, in G_BAR_SPAN, never wider than G_BAR_W / 0.7. */
static double bar_slot(const struct svg_ctx *c, double s)
{
	return fmin(G_BAR_SPAN / (2 * c->nextra), G_BAR_W / 0.7) * s;
}

/* Path data of link direction (node, dim, dir) drawn in the panel whose
 * grid starts at (gx, gy). */
static void link_path(FILE *f, const struct svg_ctx *c, double gx, double gy, uint32_t node, uint32_t dim,
		      uint32_t dir)
{
	const struct torus_shape *sh = &c->t->shape;
	uint32_t co[TORUS_MAX_DIMS];
	double x, y, s = c->s;

	torus_rank_to_coords(sh, node, co);
	node_xy(c, gx, gy, co, &x, &y);
	if (dim >= 2) {
		/* bars: pairs (plus, minus) per extra dimension, a small gap between pairs */
		uint32_t k = c->extra_idx[dim], j = 2 * k + dir;
		double slot = bar_slot(c, s);
		double bx = x + G_BAR_X * s + (j + 0.4 * k + 0.5) * slot;
		fprintf(f, "M%.1f %.1fV%.1f", bx, y + G_BAR_Y0 * s, y + G_BAR_Y1 * s);
		return;
	}
	uint32_t n = sh->dims[dim], k = co[dim];
	double sg = dir == TORUS_PLUS ? 1 : -1;   /* direction of travel along the axis */
	double out = dir == TORUS_PLUS ? -1 : 1;  /* plus: upper / left lane */
	double r = G_NODE_R * s, p = dim ? y : x, q = (dim ? x : y) + out * G_LANE * s;
	if (!torus_hop_is_wrap(n, k, (enum torus_dir)dir)) {
		lane_seg(f, c, dim, p + sg * r, p + sg * (s - r), q, out, 1);
	} else {
		double p0 = p - sg * (n - 1) * s; /* the node at the other edge */
		lane_seg(f, c, dim, p + sg * r, p + sg * G_STUB * s, q, out, 1);
		lane_seg(f, c, dim, p0 - sg * G_STUB * s, p0 - sg * r, q, out, 1);
	}
}

static void put_coords(FILE *f, const struct torus_shape *sh, uint32_t node)
{
	uint32_t co[TORUS_MAX_DIMS];
	torus_rank_to_coords(sh, node, co);
	for (uint32_t d = 0; d < sh->ndims; d++)
		fprintf(f, d ? ",%u" : "(%u", co[d]);
	fputc(')', f);
}

static double stroke_of(const struct svg_ctx *c, uint32_t dim)
{
	return dim >= 2 ? 0.7 * bar_slot(c, c->s) : G_LANE_W * c->s;
}

static void draw_links(FILE *f, const struct svg_ctx *c, const struct svg_panel *p, double gx, double gy)
{
	const struct tt_trace *t = c->t;
	char col[16], name[8];

	fputs("<g fill=\"none\" stroke-linecap=\"butt\">\n", f);
	if (c->tips) {
		uint64_t dur = p->t1 - p->t0;
		for (uint32_t l = 0; l < t->nlinks; l++) {
			uint32_t node, dim, dir;
			if (!tt_link_exists(t, l))
				continue;
			tt_link_of(t, l, &node, &dim, &dir);
			heat_colour(heat_level(p->util[l]), col, sizeof(col));
			tt_dir_name(dim, dir, name, sizeof(name));
			fprintf(f, "<path stroke=\"%s\" stroke-width=\"%.2f\" d=\"", col, stroke_of(c, dim));
			link_path(f, c, gx, gy, node, dim, dir);
			fprintf(f, "\"><title>node %u ", node);
			put_coords(f, &t->shape, node);
			fprintf(f, " %s to node %u: %.1f%% busy (%.*f of %.*f &#181;s)</title></path>\n", name,
				torus_neighbor(&t->shape, node, dim, (enum torus_dir)dir), 100.0 * p->util[l],
				us_prec(dur), p->util[l] * us_of(dur), us_prec(dur), us_of(dur));
		}
	} else {
		/* One path per (lanes or bars, colour): a tenth of the bytes. */
		uint32_t hist[2][SVG_LEVELS + 1] = {{0}};
		for (uint32_t l = 0; l < t->nlinks; l++)
			if (tt_link_exists(t, l))
				hist[(l >> 1) % t->shape.ndims >= 2][heat_level(p->util[l])]++;
		for (int bars = 0; bars < 2; bars++) {
			for (int lv = 0; lv <= SVG_LEVELS; lv++) {
				if (!hist[bars][lv])
					continue;
				heat_colour(lv, col, sizeof(col));
				fprintf(f, "<path stroke=\"%s\" stroke-width=\"%.2f\" d=\"", col, stroke_of(c, bars ? 2 : 0));
				for (uint32_t l = 0; l < t->nlinks; l++) {
					uint32_t node, dim, dir;
					if (!tt_link_exists(t, l))
						continue;
					tt_link_of(t, l, &node, &dim, &dir);
					if ((dim >= 2) == bars && heat_level(p->util[l]) == lv)
						link_path(f, c, gx, gy, node, dim, dir);
				}
				fputs("\"/>\n", f);
			}
		}
	}
	fputs("</g>\n", f);
}

static void draw_panel(FILE *f, const struct svg_ctx *c, uint32_t i, double px, double py)
{
	const struct svg_panel *p = &c->panel[i];
	const struct tt_trace *t = c->t;
	const struct torus_shape *sh = &t->shape;
	uint64_t dur = p->t1 - p->t0;
	int prec = us_prec(dur);
	double gx, gy;

	fprintf(f, "<g>\n<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" rx=\"4\" fill=\"#ffffff\" "
		   "stroke=\"#bbbbbb\"/>\n", px, py, c->panel_w, c->panel_h);
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" font-weight=\"bold\">%u. ", px + 8, py + 15, i + 1);
	if (!c->by_phase) {
		fprintf(f, "window %u of %u", i + 1, c->npanels);
	} else if (p->ph1 - p->ph0 == 1) {
		put_esc(f, c->ph[p->ph0].name, sizeof(c->ph[p->ph0].name));
	} else { /* short enough for a narrow panel; the time plot shows the rest */
		put_esc(f, c->ph[p->ph0].name, sizeof(c->ph[p->ph0].name));
		fprintf(f, " + %u more", p->ph1 - p->ph0 - 1);
	}
	fputs("</text>\n", f);
	put_text(f, px + 8, py + 29, "fill=\"#333333\"", 11, "%.*f &#8211; %.*f &#181;s (%.*f &#181;s)", prec,
		 us_of(p->t0), prec, us_of(p->t1), prec, us_of(dur));
	put_text(f, px + 8, py + 42, "fill=\"#333333\"", 11, "links: max %.0f%%, mean %.1f%% busy", 100 * p->max,
		 100 * p->mean);

	grid_origin(c, px, py, &gx, &gy);
	/* slice frames and labels */
	for (uint32_t sl = 0; sl < c->nslices; sl++) {
		double sx = gx + (sl % c->scols) * (c->slice_w + G_SGAP * c->s);
		double sy = gy + (sl / c->scols) * (c->label_h + c->slice_h + G_SGAP * c->s);
		fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#f7f7f7\" "
			   "stroke=\"#e2e2e2\"/>\n", sx, sy + c->label_h, c->slice_w, c->slice_h);
		if (c->nslices < 2)
			continue;
		fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\" fill=\"#555555\">", sx + 2, sy + 10);
		uint32_t rest = sl, first = 1;
		for (uint32_t d = 2; d < sh->ndims; d++) {
			if (sh->dims[d] > 1) {
				fprintf(f, "%s%s=%u", first ? "" : " ", tt_dim_name(d), rest % sh->dims[d]);
				first = 0;
			}
			rest /= sh->dims[d];
		}
		fputs("</text>\n", f);
	}

	draw_links(f, c, p, gx, gy);

	fprintf(f, "<g fill=\"#555555\">\n");
	for (uint32_t node = 0; node < sh->nnodes; node++) {
		uint32_t co[TORUS_MAX_DIMS];
		double x, y;
		torus_rank_to_coords(sh, node, co);
		node_xy(c, gx, gy, co, &x, &y);
		fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%.1f\"", x, y, G_NODE_R * c->s);
		if (c->tips) {
			fprintf(f, "><title>node %u ", node);
			put_coords(f, sh, node);
			fputs("</title></circle>\n", f);
		} else {
			fputs("/>\n", f);
		}
	}
	fputs("</g>\n</g>\n", f);
}

/* ---------------------------------------------------------------- header */

static void draw_header(FILE *f, const struct svg_ctx *c)
{
	const struct tt_trace *t = c->t;
	char shape[64];
	int prec = us_prec(t->t_end);

	torus_shape_format(&t->shape, shape, sizeof(shape));
	put_text(f, SVG_MARGIN, 24, "font-weight=\"bold\"", 16, "torus-trace: link utilisation, torus %s (%u nodes)",
		 shape, t->shape.nnodes);
	fprintf(f, "<text x=\"%.1f\" y=\"42\" font-size=\"11\" fill=\"#333333\">program: ", SVG_MARGIN);
	put_esc(f, t->hdr.program, sizeof(t->hdr.program));
	fprintf(f, " &#183; %zu records &#183; traffic %.*f &#8211; %.*f &#181;s of virtual time &#183; "
		   "link %.0f MB/s per direction</text>\n",
		t->nrec, prec, us_of(c->t_min), prec, us_of(t->t_end), (double)t->hdr.link_bw / 1e6);

	if (c->npanels == 0)
		put_text(f, SVG_MARGIN, 58, "fill=\"#333333\"", 11, "Panels: none, the trace holds no link traffic.");
	else if (c->by_phase && c->nph > c->npanels)
		put_text(f, SVG_MARGIN, 58, "fill=\"#333333\"", 11,
			 "Panels: %u phases (tagged collective, stage, phase), merged into %u panels of consecutive phases; "
			 "each counts only its phases' traffic.", c->nph, c->npanels);
	else if (c->by_phase)
		put_text(f, SVG_MARGIN, 58, "fill=\"#333333\"", 11,
			 "Panels: one per phase (tagged collective, stage, phase), in order of first start; each counts "
			 "only that phase's traffic.");
	else if (c->windows_asked > c->npanels)
		put_text(f, SVG_MARGIN, 58, "fill=\"#333333\"", 11,
			 "Panels: %u equal time windows of all traffic (%u asked for; at most %u are drawn).", c->npanels,
			 c->windows_asked, SVG_MAX_PANELS);
	else
		put_text(f, SVG_MARGIN, 58, "fill=\"#333333\"", 11, "Panels: %u equal time windows of all traffic%s.",
			 c->npanels, c->nph ? "" : " (the trace has no tagged phases)");

	static const char *const status[] = {"finished", "failed", "hung", "interrupted"};
	if (!t->has_end)
		put_text(f, SVG_MARGIN, 73, "fill=\"#b00000\"", 11,
			 "Warning: no end chunk, the job was killed before the trace was complete.");
	else if (t->end.status != 0)
		put_text(f, SVG_MARGIN, 73, "fill=\"#b00000\"", 11, "Warning: the job %s.",
			 t->end.status < 4 ? status[t->end.status] : "ended with an unknown status");
}

static void draw_legend(FILE *f, const struct svg_ctx *c, double top)
{
	const struct torus_shape *sh = &c->t->shape;
	char col[16];
	double sw = 16, x0 = SVG_MARGIN + 44, sy = top + 20;

	put_text(f, SVG_MARGIN, top + 12, "font-weight=\"bold\"", 12,
		 "Link colour: utilisation = busy time / panel duration, 5%% steps");
	fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"30\" height=\"14\" fill=\"%s\"/>\n", SVG_MARGIN, sy,
		IDLE_COLOUR);
	put_text(f, SVG_MARGIN + 15, sy + 27, "text-anchor=\"middle\"", 10, "idle");
	for (int lv = 1; lv <= SVG_LEVELS; lv++) {
		heat_colour(lv, col, sizeof(col));
		fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"14\" fill=\"%s\"/>\n",
			x0 + (lv - 1) * sw, sy, sw + 0.3, col);
	}
	for (int k = 0; k <= 4; k++) {
		double x = x0 + k * 5 * sw;
		fprintf(f, "<path d=\"M%.1f %.1fV%.1f\" stroke=\"#333333\"/>\n", x, sy + 14, sy + 18);
		put_text(f, x, sy + 28, "text-anchor=\"middle\"", 10, "%d%%", 25 * k);
	}
	put_text(f, SVG_MARGIN, sy + 46, "fill=\"#333333\"", 11,
		 "pale yellow: under 5%% busy &#183; orange: about half &#183; dark red: saturated");

	/* a node with its lanes, drawn large */
	double s = 64, nx = 460, ny = top + 24, r = G_NODE_R * s, lane = G_LANE * s, k = G_BARB * s;
	heat_colour(12, col, sizeof(col));
	int has_x = torus_dim_has_links(sh, 0);
	fprintf(f, "<g fill=\"none\" stroke=\"%s\" stroke-width=\"%.1f\">\n", col, G_LANE_W * s);
	if (has_x) {
		fprintf(f, "<path d=\"M%.1f %.1fH%.1fM%.1f %.1fL%.1f %.1f\"/>\n", nx + r, ny - lane, nx + s - r,
			nx + s - r - k, ny - lane - k, nx + s - r, ny - lane);
		fprintf(f, "<path d=\"M%.1f %.1fH%.1fM%.1f %.1fL%.1f %.1f\"/>\n", nx + s - r, ny + lane, nx + r,
			nx + r + k, ny + lane + k, nx + r, ny + lane);
	}
	if (c->ny > 1) {
		fprintf(f, "<path d=\"M%.1f %.1fV%.1fM%.1f %.1fL%.1f %.1f\"/>\n", nx - lane, ny + r, ny + s - r,
			nx - lane - k, ny + s - r - k, nx - lane, ny + s - r);
		fprintf(f, "<path d=\"M%.1f %.1fV%.1fM%.1f %.1fL%.1f %.1f\"/>\n", nx + lane, ny + s - r, ny + r,
			nx + lane + k, ny + r + k, nx + lane, ny + r);
	}
	fputs("</g>\n", f);
	fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%.1f\" fill=\"#555555\"/>\n", nx, ny, r);
	if (has_x) {
		put_text(f, nx + s - r + 6, ny - lane + 1, "", 10, "x+");
		put_text(f, nx + s - r + 6, ny + lane + 8, "", 10, "x-");
	}
	if (c->ny > 1) {
		put_text(f, nx - lane - 2, ny + s - r + 13, "text-anchor=\"end\"", 10, "y+");
		put_text(f, nx + lane + 2, ny + s - r + 13, "", 10, "y-");
	}
	if (c->nextra) {
		double slot = bar_slot(c, s);
		for (uint32_t d = 2; d < sh->ndims; d++) {
			if (!torus_dim_has_links(sh, d))
				continue;
			for (uint32_t dir = 0; dir < 2; dir++) {
				uint32_t kk = c->extra_idx[d], j = 2 * kk + dir;
				double bx = nx + G_BAR_X * s + (j + 0.4 * kk + 0.5) * slot;
				fprintf(f, "<path d=\"M%.1f %.1fV%.1f\" stroke=\"%s\" stroke-width=\"%.1f\"/>\n", bx,
					ny + G_BAR_Y0 * s, ny + G_BAR_Y1 * s, col, 0.7 * slot);
			}
			/* more pairs than one have no room for labels: the text names them */
			if (c->nextra == 1)
				put_text(f, nx + G_BAR_X * s, ny + G_BAR_Y1 * s + 10, "", 9, "%s+ %s-", tt_dim_name(d),
					 tt_dim_name(d));
		}
	}

	double tx = 560, ty = top + 12;
	int flat = c->ny == 1; /* no y links: a row per slice */
	put_text(f, tx, ty, "", 11, "Nodes: x to the right%s%s.",
		 flat ? ", node 0 at the left" : ", y down, node 0 at the top left",
		 c->nslices > 1 ? "; one grid per coordinate of the higher dimensions, labelled" : "");
	put_text(f, tx, ty + 15, "", 11,
		 "Each link direction is its own line%s: plus (x+ &#8594;%s) on the upper%s lane,",
		 c->barbs ? ", the barb at its head" : "", flat ? "" : ", y+ &#8595;", flat ? "" : " / left");
	put_text(f, tx, ty + 30, "", 11,
		 "minus on the lower%s lane. Stubs at the edges of a grid are the wrap-around links.",
		 flat ? "" : " / right");
	ty += 45;
	if (c->nextra) {
		fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\">Bars at each node's lower right: its links along ",
			tx, ty);
		for (uint32_t d = 2; d < sh->ndims; d++)
			if (torus_dim_has_links(sh, d))
				fprintf(f, "%s%s", c->extra_idx[d] ? ", " : "", tt_dim_name(d));
		fputs(", for each dimension a plus bar then a minus bar.</text>\n", f);
		ty += 15;
	}
	if (c->tips)
		put_text(f, tx, ty, "fill=\"#555555\"", 11, "Hover over a link or a node for its numbers.");
}

/* ------------------------------------------------------------------ plot */

static double nice_step(double range, int ticks)
{
	double raw = range / ticks, p = pow(10, floor(log10(raw))), m = raw / p;
	return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
}

static void draw_plot(FILE *f, const struct svg_ctx *c, double top)
{
	const struct tt_trace *t = c->t;
	const struct torus_shape *sh = &t->shape;
	double x_l = SVG_MARGIN + 52, x_r = SVG_W - SVG_MARGIN - 8, y_t = top + PLOT_TOP, y_b = y_t + PLOT_H;
	/* positions from times relative to t_min: exact however late the
	 * traffic (us of absolute time lose the ps at 2^53 ps) */
	uint64_t range = (uint64_t)c->nbins * c->bin_ps;
	double ta = us_of(c->t_min), tb = us_of(c->t_min + range), w_us = us_of(range);
	double ymax = 1;
	static const double ytops[] = {0.01, 0.02, 0.05, 0.1, 0.2, 0.25, 0.5, 1};
	for (size_t i = 0; i < sizeof(ytops) / sizeof(ytops[0]); i++)
		if (c->plot_max <= ytops[i]) {
			ymax = ytops[i];
			break;
		}
	/* overlapping records: the axis grows in steps of 1, 2, 5 x 10^k
	 * rather than cut the line at 100% (a hostile trace's line may still
	 * be cut, at 1000x) */
	for (double m = 1; c->plot_max > ymax && ymax < 1000; m *= 10)
		ymax = c->plot_max <= 2 * m ? 2 * m : c->plot_max <= 5 * m ? 5 * m : 10 * m;

	put_text(f, SVG_MARGIN, top + 14, "font-weight=\"bold\"", 12,
		 "Mean utilisation over all links of each dimension and direction, %s (%u bins of %.*f "
		 "&#181;s)", t->filtered ? "one color (--color)" : "all traffic", c->nbins, us_prec(c->bin_ps),
		 us_of(c->bin_ps));
	/* legend */
	double lx = x_l;
	char name[8];
	for (uint32_t d = 0; d < sh->ndims; d++) {
		if (!torus_dim_has_links(sh, d))
			continue;
		for (uint32_t dir = 0; dir < 2; dir++) {
			tt_dir_name(d, dir, name, sizeof(name));
			fprintf(f, "<path d=\"M%.1f %.1fh24\" stroke=\"%s\" stroke-width=\"2\"%s/>\n", lx, top + 32,
				dim_colour[d], dir ? " stroke-dasharray=\"5 3\"" : "");
			put_text(f, lx + 28, top + 36, "", 11, "%s", name);
			lx += 70;
		}
	}
	if (c->npanels)
		put_text(f, lx + 10, top + 36, "fill=\"#555555\"", 11, "shaded: the panels' spans, numbered");

	fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#ffffff\" stroke=\"#888888\"/>\n",
		x_l, y_t, x_r - x_l, PLOT_H);
	/* panel spans */
	double last_label = -1e9;
	for (uint32_t i = 0; i < c->npanels; i++) {
		double a = x_l + (double)(c->panel[i].t0 - c->t_min) / (double)range * (x_r - x_l);
		double b = x_l + (double)(c->panel[i].t1 - c->t_min) / (double)range * (x_r - x_l);
		fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\" fill-opacity=\"0.35\"/>\n",
			a, y_t, fmax(b - a, 0.5), PLOT_H, i % 2 ? "#c6dbef" : "#e5e5e5");
		if (a - last_label >= 14) { /* above the frame: a saturated line runs along its top */
			put_text(f, a + 2, y_t - 3, "fill=\"#555555\"", 10, "%u", i + 1);
			last_label = a;
		}
	}
	/* y grid and ticks */
	for (int k = 0; k <= 5; k++) {
		double v = ymax * k / 5, y = y_b - (v / ymax) * PLOT_H;
		if (k > 0 && k < 5)
			fprintf(f, "<path d=\"M%.1f %.1fH%.1f\" stroke=\"#dddddd\"/>\n", x_l, y, x_r);
		put_text(f, x_l - 4, y + 4, "text-anchor=\"end\"", 10, "%.*f%%", ymax < 0.05 ? 1 : 0, 100 * v);
	}
	/* x ticks */
	double step = nice_step(w_us, 8), first = ceil(ta / step);
	int dec = step >= 1 ? 0 : (int)fmin(ceil(-log10(step) - 1e-9), 9);
	/* counted, not v += step: at late times a tiny step is lost in v */
	for (int k = 0; k <= 20; k++) {
		double v = (first + k) * step, x = x_l + (v - ta) / w_us * (x_r - x_l);
		if (v > tb + step * 1e-6)
			break;
		fprintf(f, "<path d=\"M%.1f %.1fV%.1f\" stroke=\"#333333\"/>\n", x, y_b, y_b + 4);
		put_text(f, x, y_b + 16, "text-anchor=\"middle\"", 10, "%.*f", dec, v);
	}
	put_text(f, (x_l + x_r) / 2, y_b + 34, "text-anchor=\"middle\"", 11, "virtual time (&#181;s)");
	fprintf(f, "<text transform=\"translate(%.1f %.1f) rotate(-90)\" font-size=\"11\" text-anchor=\"middle\">"
		   "mean link utilisation</text>\n", SVG_MARGIN + 4, (y_t + y_b) / 2);

	/* the lines: nbins <= SVG_PLOT_BINS points each */
	for (uint32_t d = 0; d < sh->ndims; d++) {
		if (!torus_dim_has_links(sh, d))
			continue;
		for (uint32_t dir = 0; dir < 2; dir++) {
			const double *m = c->mean + (size_t)(d * 2 + dir) * c->nbins;
			fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\"%s points=\"", dim_colour[d],
				dir ? " stroke-dasharray=\"5 3\"" : "");
			for (uint32_t b = 0; b < c->nbins; b++)
				fprintf(f, "%s%.1f,%.1f", b ? " " : "", x_l + (b + 0.5) / c->nbins * (x_r - x_l),
					y_b - fmin(m[b] / ymax, 1) * PLOT_H);
			fputs("\"/>\n", f);
		}
	}
}

/* ----------------------------------------------------------------- write */

int tt_write_svg(const struct tt_trace *t, const char *path, const struct tt_svg_opts *o, char *err, size_t errlen)
{
	struct svg_ctx c;
	FILE *f = NULL;
	int rc;

	if (!t || !path) {
		snprintf(err, errlen, "svg: internal: NULL argument");
		return -EINVAL;
	}
	memset(&c, 0, sizeof(c));
	c.t = t;
	rc = svg_prepare(&c, o, err, errlen);
	if (rc)
		goto out;
	svg_layout(&c);

	double legend_top = HEAD_H, panels_top = legend_top + LEGEND_H;
	double plot_top = panels_top + c.prows * (c.panel_h + PANEL_GAP);
	double height = plot_top + (c.npanels ? PLOT_TOP + PLOT_H + PLOT_BOTTOM : 0) + SVG_MARGIN;

	f = fopen(path, "w");
	if (!f) {
		rc = -errno;
		snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
		goto out;
	}
	errno = 0;
	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		   "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
		   FONT ">\n<rect width=\"100%%\" height=\"100%%\" fill=\"#ffffff\"/>\n",
		SVG_W, ceil(height), SVG_W, ceil(height));
	draw_header(f, &c);
	draw_legend(f, &c, legend_top);
	for (uint32_t i = 0; i < c.npanels; i++)
		draw_panel(f, &c, i, SVG_MARGIN + (i % c.pcols) * (c.panel_w + PANEL_GAP),
			   panels_top + (i / c.pcols) * (c.panel_h + PANEL_GAP));
	if (c.npanels)
		draw_plot(f, &c, plot_top);
	fputs("</svg>\n", f);

	if (ferror(f)) {
		rc = errno ? -errno : -EIO;
		snprintf(err, errlen, "cannot write %s: %s", path, strerror(-rc));
	}
	if (fclose(f) != 0 && !rc) {
		rc = errno ? -errno : -EIO;
		snprintf(err, errlen, "cannot write %s: %s", path, strerror(-rc));
	}
out:
	for (uint32_t i = 0; i < SVG_MAX_PANELS; i++)
		free(c.panel[i].util);
	free(c.mean);
	free(c.ph);
	return rc;
}
