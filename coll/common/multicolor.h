/*
 * The multicolor bucket engine's interface (coll_multicolor, driven by the
 * three collectives' multicolor files), and what the engine's own files
 * share: a call's state and their functions. multicolor.c: the entry and a
 * call's set-up (with the engine's description); multicolor_geom.c: the
 * geometry; multicolor_stream.c: the transfers and the streams' progress;
 * multicolor_keep.c: the set-ups kept between identical calls.
 */
#ifndef COLL_MULTICOLOR_H
#define COLL_MULTICOLOR_H

#include "../coll_internal.h"

#include <errno.h>
#include <stdint.h>

enum { MC_RS = 1, MC_AG = 2 };

struct mc_job {
	enum coll_kind kind;
	enum coll_dtype dtype;
	enum coll_op op;
	uint64_t check;                  /* coll_args.check */
	const struct coll_blocks *blocks;/* every node's block of the vector (user layout) */
	const void *send;                /* reduce-scatter input: every block */
	void *rs_out;                    /* where this node's reduced block goes */
	void *result;                    /* allgather output: every block (user layout) */
	size_t result_bytes;
	const void *ag_send;             /* allgather only: this node's block, copied in first */
};

/* Run the job on a team of every node in node order (coll_team_fits). */
int coll_multicolor(coll_team_t *t, const struct mc_job *job);

/* ------------------------------------------ inside the engine (its files) */

struct mc_phase {
	uint32_t dim, d, rho;
	uint32_t succ, pred;        /* nodes */
	size_t lo, group;           /* this node's group: positions [lo, lo + group) */
	uint32_t counter;           /* reception counter: RS parts, then AG steps */
	size_t scratch;             /* byte offset of slot 0 in the core's scratch */
	size_t *slot;               /* byte offset of slot t from `scratch` (d entries) */
	int32_t *rs_mark, *ag_mark; /* watermark of each unit, -1 for an empty one */
	int64_t *levels;            /* the counter's marks, and the bytes it is armed with */
	uint32_t nlevels;
	int64_t armed;
	struct coll_addr next;      /* the successor's */
	int watched;
};

struct mc_stream {
	uint32_t s, color, dir;
	uint32_t *order;            /* position -> node */
	size_t *woff;               /* position -> element offset in W-space [p+1] */
	size_t *uoff;               /* position -> element offset in the user layout */
	struct mc_phase ph[TORUS_MAX_DIMS];
	uint32_t fifo;
	int starting;               /* its first phase is still to be started */
	uint32_t events;            /* events handled (run_streams' order) */
	/* progress: the next unit expected */
	int stage;                  /* MC_RS, MC_AG, or 0 when done */
	uint32_t phase, step, part;
};

struct mc_call {
	coll_team_t *t;
	const struct mc_job *job;
	emu_core_t *c;
	uint32_t N, p, nstreams, P, nmine;
	size_t total;               /* elements in the vector (every block) */
	int contiguous;             /* W-space is the user layout, per stream (setup) */
	uint32_t dims[TORUS_MAX_DIMS];
	size_t esz;
	struct mc_stream st[2 * TORUS_MAX_DIMS]; /* this core's streams */
	uint8_t *scratch;
	size_t scratch_bytes;
	uint32_t scratch_region, result_region, inj;
	int have_scratch, have_result, have_inj;
	int keep;                   /* the set-up is kept for the next identical call (plan) */
	int plan_on;                /* TORUS_MC_PLAN allows keeping (shape reads it) */
	int dry;                    /* telling a program's step (run_streams_program): no data moves */
	int own_scratch;            /* scratch is the call's own (a set-up that may be kept) */
	size_t job_result_bytes;    /* a kept set-up's: its result region's length */
	dma_injfifo_t *fifo[2 * TORUS_MAX_DIMS];
};

/* multicolor_geom.c: the geometry */
/* Part i of `total` cut in `parts` nearly equal parts: its length, offset. */
size_t mc_split_len(size_t total, uint32_t parts, uint32_t i);
size_t mc_split_off(size_t total, uint32_t parts, uint32_t i);
/* a mod d, in [0, d) */
uint32_t mc_mod(int64_t a, uint32_t d);
void mc_block_range(const struct mc_stream *st, uint32_t i, uint32_t b, size_t *e0, size_t *e1);
void mc_part_range(size_t e0, size_t e1, uint32_t P, uint32_t j, size_t *a, size_t *b);
size_t mc_pos_of(const struct mc_stream *st, size_t p, size_t e);
typedef int (*mc_piece_fn)(void *arg, size_t uoff, size_t w, size_t len);
int mc_for_pieces(const struct mc_call *m, const struct mc_stream *st, size_t a, size_t b, mc_piece_fn fn, void *arg);
uint32_t mc_stream_core(const struct mc_call *m, uint32_t s);
void mc_stream_geometry(struct mc_call *m, struct mc_stream *st, uint32_t s);
int mc_stream_init(struct mc_call *m, struct mc_stream *st);
void mc_stream_free(struct mc_stream *st, uint32_t N);
int mc_arm(struct mc_call *m, const struct mc_phase *ph);
int mc_phase_counters(struct mc_call *m, struct mc_stream *st, uint32_t i, size_t *scratch_at);
int mc_shape(struct mc_call *m);

/* multicolor_stream.c: handle the streams' events until every stream is done */
int mc_run_streams(struct mc_call *m);

/* multicolor.c: wait for the call's puts to leave, free its set-up; rc, or
 * the wait's error */
int mc_finish(struct mc_call *m, int rc);

/* multicolor_keep.c: the set-ups kept between identical calls */
int mc_plan_env(int *on);
int mc_plan_wanted(const struct mc_call *m);
int mc_plan_fits(const struct mc_plan *pl, const struct mc_call *m);
int mc_agree_keep(struct mc_call *m, int rc);
int mc_keep(coll_team_t *t, struct mc_call *m);
int mc_run_plan(coll_team_t *t, const struct mc_job *job);

#endif
