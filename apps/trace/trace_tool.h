/*
 * torus-trace internals: a trace file loaded into memory (trace_load.c)
 * and the writers of each output (out_text.c: --summary, --csv,
 * --packets, --perfetto; out_svg.c: --svg; out_html.c: --html).
 */
#ifndef TORUS_TRACE_TOOL_H
#define TORUS_TRACE_TOOL_H

#include <torus/machine.h>
#include <torus/trace.h>

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* One record, with its node and a global link-direction id. */
struct tt_rec {
	uint64_t start, end, busy;   /* ps */
	uint32_t packets, payload, wire, tag;
	uint32_t node;
	uint32_t link;               /* tt_link_id(node, dim, dir) */
	uint8_t dim, dir, kind;
};

struct tt_trace {
	struct torus_trace_header hdr;
	struct torus_shape shape;
	uint32_t nlinks;             /* link-direction ids: nnodes * ndims * 2 (dims of size 1 have none) */
	struct tt_rec *rec;          /* sorted by start, then link */
	size_t nrec;
	uint64_t t_end;              /* latest end of any record (ps) */
	int has_end;                 /* the end chunk was present */
	struct torus_trace_end end;
	struct torus_trace_counters *counters; /* has_end: one per link direction */
	size_t ncounters;
	uint64_t file_bytes;
	uint64_t hole_bytes;         /* zeros a killed node left where its chunk would be */
	int filtered;                /* records were dropped (tt_keep_color): no counters check */
	struct torus_trace_link own[TORUS_MAX_LINK_SETS]; /* links with settings of their own */
	uint32_t nown;
};
/* The bandwidth and hop latency of one link direction (its own, or the header's). */
uint64_t tt_link_bw(const struct tt_trace *t, uint32_t node, uint32_t dim, uint32_t dir);
uint64_t tt_link_latency(const struct tt_trace *t, uint32_t node, uint32_t dim, uint32_t dir);

/* Link-direction id of (node, dim, dir) and back. */
static inline uint32_t tt_link_id(const struct tt_trace *t, uint32_t node, uint32_t dim, uint32_t dir)
{
	return (node * t->shape.ndims + dim) * 2 + dir;
}
static inline void tt_link_of(const struct tt_trace *t, uint32_t id, uint32_t *node, uint32_t *dim, uint32_t *dir)
{
	*dir = id & 1;
	*dim = (id >> 1) % t->shape.ndims;
	*node = (id >> 1) / t->shape.ndims;
}
/* 1 if the link-direction id is a real link (its dimension has size > 1). */
static inline int tt_link_exists(const struct tt_trace *t, uint32_t id)
{
	return torus_dim_has_links(&t->shape, (id >> 1) % t->shape.ndims);
}

/*
 * No virtual time in a trace may pass this: 2^62 ps, 53 days of virtual
 * time. Any sum of two times then fits in 64 bits, which every output
 * relies on.
 */
#define TT_MAX_PS (1ull << 62)

/*
 * Load and check a trace. 0, or a negative errno with a one-line reason in
 * err: -ENOENT/-EACCES.. (cannot open), -EINVAL (not a trace, corrupt,
 * truncated, a version this build does not read), -ENOMEM.
 * Every field of every record, chunk and counter is checked against what
 * the writer (emu/trace.c) and the header's time model can produce, so no
 * output can be driven out of bounds by a file whose checksums are right.
 */
int tt_load(const char *path, struct tt_trace *t, char *err, size_t errlen);
/* The same from an open stream of `size` bytes (a file, fmemopen);
 * `name` is for the messages. */
int tt_load_stream(FILE *f, uint64_t size, const char *name, struct tt_trace *t, char *err, size_t errlen);
void tt_free(struct tt_trace *t);

/* Keep only the multicolor records of color c (both directions); returns
 * how many remain. */
size_t tt_keep_color(struct tt_trace *t, uint32_t c);

/* Dimension letters: x y z w v u; "x+" / "x-" for a link direction. */
const char *tt_dim_name(uint32_t dim);
void tt_dir_name(uint32_t dim, uint32_t dir, char *buf, size_t len);
/* "allgather multicolor AG phase 1 color 2-" and the like. */
void tt_tag_name(uint32_t tag, char *buf, size_t len);

/*
 * Utilisation of every link direction in nbins bins of bin_ps each from t0:
 * util[link * nbins + b] = busy time in the bin / bin_ps. Each record's
 * busy time is spread evenly over [start, end) (exact for runs, whose busy
 * time is end - start). Not capped: where records overlap on one link
 * direction (tt_overlaps) a bin holds more than 1, e.g. 3.4 for a link
 * asked to carry 3.4 times its bandwidth; only a rounding residue within
 * 1e-9 of 1 is taken as 1, and one below 0 as 0. keep (may be NULL)
 * selects records. 0 or -EINVAL.
 */
int tt_bin(const struct tt_trace *t, uint64_t t0, uint64_t bin_ps, uint32_t nbins,
	   int (*keep)(const struct tt_rec *, void *), void *arg, double *util);
/* The same for payload bytes: bytes[link * nbins + b], each record's spread
 * evenly over [start, end). */
int tt_bin_payload(const struct tt_trace *t, uint64_t t0, uint64_t bin_ps, uint32_t nbins, double *bytes);

/*
 * The record indices sorted by link direction, then start (malloc'd,
 * nrec of them), or NULL when out of memory.
 */
size_t *tt_by_link(const struct tt_trace *t);

/*
 * Records whose busy interval [start, end) begins before an earlier record
 * on the same link direction has ended: a link serialises one packet at a
 * time, so with --trace-packets (or runs, which never overlap either) any
 * such record is time the link was charged twice. overlap_ps sums, over
 * those records, the part of each that earlier records already cover.
 * 0 or -ENOMEM.
 */
struct tt_overlap_stats {
	size_t records;              /* records overlapping an earlier one on their link direction */
	uint32_t links;              /* link directions with at least one */
	uint64_t overlap_ps;         /* busy time counted twice, in all */
	uint64_t max_overlap_ps;     /* the largest single overlap */
	size_t first;                /* records > 0: index into rec of the earliest of them */
};
int tt_overlaps(const struct tt_trace *t, struct tt_overlap_stats *out);

/* torus-trace --packets LINKSPEC: "all", or NODE:LINK such as "5:x+" (the
 * node decimal, at most 2^32 - 1; the link a dimension letter of
 * tt_dim_name and + or -). Parsing checks the form; tt_linkspec_link checks
 * it against a trace's torus: the link-direction id (UINT32_MAX for all),
 * or -1 with a one-line reason in err. */
struct tt_linkspec {
	int all;
	uint64_t node;
	uint32_t dim, dir;
};
int tt_linkspec_parse(const char *s, struct tt_linkspec *ls);
int tt_linkspec_link(const struct tt_trace *t, const struct tt_linkspec *ls, uint32_t *id, char *err, size_t errlen);

/*
 * Phases: the distinct (collective, stage, phase) of the tagged records, in
 * order of first start; each with its time span. Untagged traffic is not a
 * phase. Returns the count (>= 0) with *out malloc'd, or -ENOMEM.
 */
struct tt_phase {
	uint32_t coll, stage, phase;
	uint64_t start, end;
	char name[48];               /* "AG phase 1" */
};
int tt_phases(const struct tt_trace *t, struct tt_phase **out);
/* A phase's key, (collective, stage, phase) of a tag: 0..TT_PHASE_KEYS-1. */
#define TT_PHASE_KEYS 4096u
static inline uint32_t tt_phase_key(uint32_t tag)
{
	return torus_tag_coll(tag) << 8 | torus_tag_stage(tag) << 4 | torus_tag_phase(tag);
}
/* 1 if the record belongs to phase ph (a `keep` for tt_bin). */
int tt_in_phase(const struct tt_rec *r, void *ph);

/* Doubles one binning pass may fill: outputs bin large tori in slices. */
#define TT_BIN_BUDGET (1u << 22)
/* --csv: at most this many bins, and rows (bins x link directions). */
#define TT_CSV_MAX_BINS (1u << 20)
#define TT_CSV_MAX_ROWS (1u << 28)
/* The CSV's bin count for bin_ps (0: the default, 1/100 of the trace):
 * 0, or -E2BIG beyond TT_CSV_MAX_BINS / TT_CSV_MAX_ROWS. */
int tt_csv_bins(const struct tt_trace *t, uint64_t bin_ps, uint64_t *nbins);

/* Writers: 0, or negative errno with a reason in err. */
int tt_write_summary(const struct tt_trace *t, FILE *out);
int tt_write_csv(const struct tt_trace *t, uint64_t bin_ps, FILE *out);
/* --packets: every record on link direction `link` (UINT32_MAX: on all of
 * them) as CSV, sorted by link direction then start. */
int tt_write_packets(const struct tt_trace *t, uint32_t link, FILE *out);
int tt_write_perfetto(const struct tt_trace *t, const char *path, char *err, size_t errlen);
struct tt_svg_opts {
	uint32_t windows;            /* > 0: panels per time window instead of per phase */
};
int tt_write_svg(const struct tt_trace *t, const char *path, const struct tt_svg_opts *o, char *err, size_t errlen);
int tt_write_html(const struct tt_trace *t, const char *path, char *err, size_t errlen);

#endif
