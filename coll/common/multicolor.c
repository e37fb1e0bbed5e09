/*
 * The N-dimensional multicolor bucket engine (003_b0aac8c3d10c7733.txt,
 * section 4, Algorithm 1), shared by reduce-scatter, allgather and
 * allreduce.
 *
 * Streams. The vector is split "node distribution-respecting": every
 * node's block is cut into 2N nearly equal chunks, and stream s owns chunk
 * s of every block. Stream s has color c = s/2 and direction s%2 (0: the
 * plus ring, 1: the minus ring). Color c runs its N phases over the
 * dimensions pi_c(i) = E[(i + c) mod N] (E: the dimensions that have
 * links), so in any phase no two colors use the same dimension, and the two
 * directions of a color use the two links of that dimension: every link
 * direction carries one stream per phase. A short vector runs on fewer
 * colors (choose_colors), and a short allreduce, whose blocks need not be
 * the nodes' own, gives each stream one contiguous segment (setup).
 *
 * Layout. Stream s orders the nodes by their coordinates along pi_c(0)
 * (most significant) .. pi_c(N-1): its "W-space". A node's group in phase
 * i (the nodes that agree with it on the dimensions already reduced) is
 * then a contiguous range of positions, and the d blocks of a phase's ring
 * are contiguous sub-ranges: every put after phase 0 is one contiguous
 * descriptor. Phase 0 reads the user's buffer, where one block is several
 * pieces (one per node); the result buffer of allgather is in user layout
 * too, so allgather puts are per piece (the same offsets on every node).
 *
 * Reduce-scatter, phase i along a ring of d nodes, ring position rho:
 * step t puts block rho-1-t to the successor's scratch slot t and waits for
 * block rho-2-t in its own slot t, which it reduces with its own data of
 * that block; the last step's block is rho, the input of phase i+1 (or, in
 * the last phase, this node's result chunk). Allgather runs the phases in
 * reverse, step t putting block rho-t and receiving rho-1-t straight into
 * the result buffer. Allreduce is reduce-scatter then allgather, per
 * stream, with no synchronisation in between.
 *
 * Pipelining. Each reduce-scatter block is sent in P parts; a part is
 * reduced and forwarded while the next part is still arriving. One
 * reception counter per (stream, phase) counts all its parts, with a
 * watermark per part (dma_counter_watch), so arrival times stay exact; the
 * parts of a stream arrive in order because one sender posts them to one
 * injection FIFO along one link. P minimises steps * (P alpha + m gamma / P)
 * for a phase-0 block of m bytes: P = sqrt(m gamma / alpha).
 *
 * Cores. A node team with k cores gives stream s to core s*k/2N (k = N:
 * one color per core, both directions; k = 2N: one color and direction per
 * core; k = 1: the single-core variant). A core runs its streams as a
 * state machine, taking their events round-robin in a fixed order and
 * sleeping on the next one's watermark until it arrives (run_streams).
 */
#include "../coll_internal.h"
#include "multicolor.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MC_MAX_PARTS 256u

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

/*
 * A call's set-up, kept in the team for the next call with the same
 * arguments (coll_multicolor): its streams, armed counters, private
 * scratch, regions and the neighbours' addresses.
 */
struct mc_plan {
	struct mc_call m;
	enum coll_kind kind;
	uint64_t check;             /* the call's hash (catalogue.c) */
	void *result;               /* what the result region points at */
	uint32_t counters, regions; /* what it holds */
};

/* ------------------------------------------------------------ geometry */

static size_t split_len(size_t total, uint32_t parts, uint32_t i)
{
	return total / parts + (i < total % parts);
}
static size_t split_off(size_t total, uint32_t parts, uint32_t i)
{
	return i * (total / parts) + (i < total % parts ? i : total % parts);
}

static uint32_t phase_dim(const struct mc_call *m, uint32_t color, uint32_t i)
{
	return m->dims[(i + color) % m->N];
}

/* Ring position of coordinate x, and back (the minus ring runs backwards). */
static uint32_t ring_pos(uint32_t x, uint32_t d, uint32_t dir) { return dir ? (d - x) % d : x; }
static uint32_t ring_coord(uint32_t b, uint32_t d, uint32_t dir) { return dir ? (d - b) % d : b; }
static uint32_t mod(int64_t a, uint32_t d) { return (uint32_t)(((a % d) + d) % d); }

/* Element range, in W-space, of block b of phase i. */
static void block_range(const struct mc_stream *st, uint32_t i, uint32_t b, size_t *e0, size_t *e1)
{
	const struct mc_phase *ph = &st->ph[i];
	size_t S = ph->group / ph->d, first = ph->lo + ring_coord(b, ph->d, st->dir) * S;
	*e0 = st->woff[first];
	*e1 = st->woff[first + S];
}

static void part_range(size_t e0, size_t e1, uint32_t P, uint32_t j, size_t *a, size_t *b)
{
	*a = e0 + split_off(e1 - e0, P, j);
	*b = *a + split_len(e1 - e0, P, j);
}

/* Position holding W-space element e (woff is non-decreasing). */
static size_t pos_of(const struct mc_stream *st, size_t p, size_t e)
{
	size_t lo = 0, hi = p; /* woff[lo] <= e < woff[hi] */
	while (hi - lo > 1) {
		size_t mid = (lo + hi) / 2;
		if (st->woff[mid] <= e)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/* Call fn(arg, user offset, W offset, len) for each user-layout piece of
 * W-space elements [a, b). */
typedef int (*piece_fn)(void *arg, size_t uoff, size_t w, size_t len);
static int for_pieces(const struct mc_call *m, const struct mc_stream *st, size_t a, size_t b, piece_fn fn, void *arg)
{
	if (a >= b)
		return 0;
	if (m->contiguous) /* W-space is the user layout, shifted: one piece */
		return fn(arg, st->uoff[0] + a, a, b - a);
	for (size_t k = pos_of(st, m->p, a); a < b; k++) {
		if (st->woff[k + 1] <= a)
			continue; /* an empty chunk */
		size_t end = st->woff[k + 1] < b ? st->woff[k + 1] : b;
		int rc = fn(arg, st->uoff[k] + (a - st->woff[k]), a, end - a);
		if (rc)
			return rc;
		a = end;
	}
	return 0;
}

/* The core of a node team that runs stream s: streams in order, spread
 * evenly (k = N: one color per core, both directions; k = 2N: one stream
 * per core; k > 2N: the extra cores have none). */
static uint32_t stream_core(const struct mc_call *m, uint32_t s)
{
	uint32_t k = m->t->cores;
	return k >= m->nstreams ? s : (uint32_t)((uint64_t)s * k / m->nstreams);
}

/* A stream's rings: who it talks to in each phase. Allocates nothing, so
 * that even a core whose set-up fails can tell its neighbours so. */
static void stream_geometry(struct mc_call *m, struct mc_stream *st, uint32_t s)
{
	const struct torus_shape *sh = emu_shape(m->c);
	uint32_t me = m->t->rank, my[TORUS_MAX_DIMS];
	memset(st, 0, sizeof(*st));
	st->s = s;
	st->color = s / 2;
	st->dir = s % 2;
	torus_rank_to_coords(sh, me, my);
	size_t lo = 0, group = m->p;
	for (uint32_t i = 0; i < m->N; i++) {
		struct mc_phase *ph = &st->ph[i];
		ph->dim = phase_dim(m, st->color, i);
		ph->d = sh->dims[ph->dim];
		ph->rho = ring_pos(my[ph->dim], ph->d, st->dir);
		ph->lo = lo;
		ph->group = group;
		enum torus_dir fwd = st->dir ? TORUS_MINUS : TORUS_PLUS, back = st->dir ? TORUS_PLUS : TORUS_MINUS;
		ph->succ = torus_neighbor(sh, me, ph->dim, fwd);
		ph->pred = torus_neighbor(sh, me, ph->dim, back);
		/* next phase: the block this node keeps */
		group /= ph->d;
		lo += my[ph->dim] * group;
	}
}

/* The stream's W-space layout and per-phase tables. */
static int stream_init(struct mc_call *m, struct mc_stream *st)
{
	const struct torus_shape *sh = emu_shape(m->c);
	const struct mc_job *job = m->job;
	uint32_t x[TORUS_MAX_DIMS];
	st->order = malloc(m->p * sizeof(uint32_t));
	st->woff = malloc((m->p + 1) * sizeof(size_t));
	st->uoff = malloc(m->p * sizeof(size_t));
	if (!st->order || !st->woff || !st->uoff)
		return -ENOMEM;
	/* W-space: positions in mixed radix, phase 0's dimension most significant */
	for (uint32_t r = 0; r < m->p; r++) {
		torus_rank_to_coords(sh, r, x);
		size_t pos = 0;
		for (uint32_t i = 0; i < m->N; i++) {
			uint32_t q = phase_dim(m, st->color, i);
			pos = pos * sh->dims[q] + x[q];
		}
		st->order[pos] = r;
	}
	st->woff[0] = 0;
	if (m->contiguous) {
		/* allreduce: every node ends with the whole vector, so which
		 * node reduces which elements is free. The stream takes one
		 * contiguous segment, cut in W-space order, and every range of
		 * W-space is one piece of the user's buffer */
		size_t seg = split_off(m->total, m->nstreams, st->s), len = split_len(m->total, m->nstreams, st->s);
		for (uint32_t k = 0; k < m->p; k++) {
			st->uoff[k] = seg + st->woff[k];
			st->woff[k + 1] = st->woff[k] + split_len(len, m->p, k);
		}
	} else {
		for (uint32_t k = 0; k < m->p; k++) {
			uint32_t r = st->order[k];
			size_t cnt = job->blocks->counts[r];
			st->uoff[k] = job->blocks->displs[r] + split_off(cnt, m->nstreams, st->s);
			st->woff[k + 1] = st->woff[k] + split_len(cnt, m->nstreams, st->s);
		}
	}
	for (uint32_t i = 0; i < m->N; i++) {
		struct mc_phase *ph = &st->ph[i];
		if (!(ph->slot = calloc(ph->d, sizeof(size_t))) || !(ph->rs_mark = malloc(ph->d * m->P * sizeof(int32_t))) ||
		    !(ph->ag_mark = malloc(ph->d * sizeof(int32_t))))
			return -ENOMEM;
	}
	return 0;
}

static void stream_free(struct mc_stream *st, uint32_t N)
{
	free(st->order);
	free(st->woff);
	free(st->uoff);
	for (uint32_t i = 0; i < N; i++) {
		free(st->ph[i].levels);
		free(st->ph[i].slot);
		free(st->ph[i].rs_mark);
		free(st->ph[i].ag_mark);
	}
}

/* Bytes of the unit received in phase i, step t, part j (RS) or step t (AG). */
static size_t rs_unit_bytes(const struct mc_call *m, const struct mc_stream *st, uint32_t i, uint32_t t, uint32_t j)
{
	size_t e0, e1, a, b;
	block_range(st, i, mod((int64_t)st->ph[i].rho - 2 - t, st->ph[i].d), &e0, &e1);
	part_range(e0, e1, m->P, j, &a, &b);
	return (b - a) * m->esz;
}
static size_t ag_unit_bytes(const struct mc_call *m, const struct mc_stream *st, uint32_t i, uint32_t t)
{
	size_t e0, e1;
	block_range(st, i, mod((int64_t)st->ph[i].rho - 1 - t, st->ph[i].d), &e0, &e1);
	return (e1 - e0) * m->esz;
}

/* The phase's counter: every byte it will see, and a mark per unit. */
static int arm(struct mc_call *m, const struct mc_phase *ph)
{
	int rc = dma_counter_add(m->c, ph->counter, ph->armed);
	return rc ? rc : dma_counter_watch(m->c, ph->counter, ph->levels, ph->nlevels);
}

/*
 * Per (stream, phase): scratch slots, the reception counter armed with
 * every byte it will see, and a watermark per non-empty unit.
 */
static int phase_counters(struct mc_call *m, struct mc_stream *st, uint32_t i, size_t *scratch_at)
{
	struct mc_phase *ph = &st->ph[i];
	int rs = m->job->kind != COLL_ALLGATHER, ag = m->job->kind != COLL_REDUCE_SCATTER;
	uint32_t nunits = (ph->d - 1) * (m->P + 1), nmarks = 0;
	int64_t *levels = malloc(nunits * sizeof(int64_t)), total = 0;
	int rc;
	if (!levels)
		return -ENOMEM;
	ph->scratch = *scratch_at;
	for (uint32_t t = 0; t + 1 < ph->d; t++) {
		size_t slot = 0;
		for (uint32_t j = 0; j < m->P; j++)
			slot += rs ? rs_unit_bytes(m, st, i, t, j) : 0;
		ph->slot[t + 1] = ph->slot[t] + slot;
	}
	*scratch_at += ph->slot[ph->d - 1];
	for (uint32_t t = 0; rs && t + 1 < ph->d; t++)
		for (uint32_t j = 0; j < m->P; j++)
			total += (int64_t)rs_unit_bytes(m, st, i, t, j);
	for (uint32_t t = 0; ag && t + 1 < ph->d; t++)
		total += (int64_t)ag_unit_bytes(m, st, i, t);
	int64_t left = total;
	for (uint32_t t = 0; t + 1 < ph->d; t++)
		for (uint32_t j = 0; j < m->P; j++) {
			size_t b = rs ? rs_unit_bytes(m, st, i, t, j) : 0;
			ph->rs_mark[t * m->P + j] = b ? (int32_t)nmarks : -1;
			if (b)
				levels[nmarks++] = left -= (int64_t)b;
		}
	for (uint32_t t = 0; t + 1 < ph->d; t++) {
		size_t b = ag ? ag_unit_bytes(m, st, i, t) : 0;
		ph->ag_mark[t] = b ? (int32_t)nmarks : -1;
		if (b)
			levels[nmarks++] = left -= (int64_t)b;
	}
	ph->levels = levels;
	ph->nlevels = nmarks;
	ph->armed = total;
	if (!(rc = dma_counter_alloc(m->c, &ph->counter))) {
		ph->watched = 1;
		rc = arm(m, ph);
	}
	return rc;
}

/* ----------------------------------------------------------- transfers */

struct put_arg {
	struct mc_call *m;
	struct mc_stream *st;
	const struct mc_phase *ph;
	const uint8_t *src;         /* NULL: the source is the user buffer at the same piece */
	const uint8_t *user;
	size_t w0;                  /* W-space element at src */
	uint32_t region;
	uint64_t dst;               /* byte offset of W element w0 at the destination (scratch) */
	int to_result;              /* destination: the same user offset in the result region */
};

static int post(struct mc_call *m, struct mc_stream *st, const struct mc_phase *ph, uint32_t stage, const void *src,
		size_t bytes, uint32_t region, uint64_t offset)
{
	struct dma_desc d;
	int rc;
	if (!bytes)
		return 0;
	if ((rc = dma_counter_add(m->c, m->inj, (int64_t)bytes)))
		return rc;
	dma_desc_put(&d, ph->succ, src, bytes, region, offset, ph->next.counter0, m->inj);
	d.hints = torus_hint_set(0, ph->dim, st->dir ? TORUS_HINT_MINUS : TORUS_HINT_PLUS);
	/* traces show the collective, stage, phase (the dimension index in the
	 * color's permutation) and stream */
	d.tag = TORUS_TAG(m->t->tag_coll, TORUS_ALGO_MULTICOLOR, stage, (uint32_t)(ph - st->ph), st->s);
	if ((rc = dma_injfifo_post(m->fifo[st->fifo], &d, DMA_POST_WAIT))) {
		/* refused (a peer that failed and closed its regions): nothing
		 * will leave, so the wait in finish must not count it */
		dma_counter_add(m->c, m->inj, -(int64_t)bytes);
		return rc;
	}
	return 0;
}

static int put_piece(void *arg, size_t uoff, size_t w, size_t len)
{
	struct put_arg *pa = arg;
	size_t esz = pa->m->esz;
	if (pa->to_result)
		return post(pa->m, pa->st, pa->ph, TORUS_STAGE_AG, pa->user + uoff * esz, len * esz, pa->ph->next.region2,
			    uoff * esz);
	const uint8_t *src = pa->src ? pa->src + (w - pa->w0) * esz : pa->user + uoff * esz;
	return post(pa->m, pa->st, pa->ph, TORUS_STAGE_RS, src, len * esz, pa->ph->next.region,
		    pa->dst + (w - pa->w0) * esz);
}

/* This node's data of W-space elements [a, b) in reduce-scatter phase i. */
static const uint8_t *rs_input(const struct mc_call *m, const struct mc_stream *st, uint32_t i, size_t a)
{
	if (i == 0)
		return NULL; /* the user's send buffer, in pieces */
	const struct mc_phase *prev = &st->ph[i - 1];
	size_t w0 = st->woff[st->ph[i].lo];
	return m->scratch + prev->scratch + prev->slot[prev->d - 2] + (a - w0) * m->esz;
}

/* Put reduce-scatter unit (i, t, j) to the successor. */
static int rs_send(struct mc_call *m, struct mc_stream *st, uint32_t i, uint32_t t, uint32_t j)
{
	struct mc_phase *ph = &st->ph[i];
	size_t e0, e1, a, b, slot0 = 0;
	block_range(st, i, mod((int64_t)ph->rho - 1 - t, ph->d), &e0, &e1);
	part_range(e0, e1, m->P, j, &a, &b);
	if (a == b)
		return 0;
	/* the successor's slot t holds this block; part j at its offset */
	for (uint32_t u = 0; u < t; u++) {
		size_t f0, f1;
		block_range(st, i, mod((int64_t)ph->rho - 1 - u, ph->d), &f0, &f1);
		slot0 += (f1 - f0) * m->esz;
	}
	struct put_arg pa = {m, st, ph, NULL, m->job->send, a, ph->next.region,
			     ph->next.offset + slot0 + (a - e0) * m->esz, 0};
	if (t > 0) /* forward what arrived in slot t-1, reduced */
		pa.src = m->scratch + ph->scratch + ph->slot[t - 1] + (a - e0) * m->esz;
	else
		pa.src = rs_input(m, st, i, a);
	if (pa.src)
		return put_piece(&pa, 0, a, b - a);
	return for_pieces(m, st, a, b, put_piece, &pa);
}

/* Put allgather step t of phase i: block rho - t, piece by piece. */
static int ag_send(struct mc_call *m, struct mc_stream *st, uint32_t i, uint32_t t)
{
	struct mc_phase *ph = &st->ph[i];
	size_t e0, e1;
	block_range(st, i, mod((int64_t)ph->rho - t, ph->d), &e0, &e1);
	struct put_arg pa = {m, st, ph, NULL, m->job->result, e0, 0, 0, 1};
	return for_pieces(m, st, e0, e1, put_piece, &pa);
}

struct reduce_arg {
	struct mc_call *m;
	uint8_t *acc;               /* W-space element w0 */
	size_t w0;
};

static int reduce_piece(void *arg, size_t uoff, size_t w, size_t len)
{
	struct reduce_arg *ra = arg;
	const struct mc_job *job = ra->m->job;
	size_t esz = ra->m->esz;
	return coll_reduce_local(job->dtype, job->op, ra->acc + (w - ra->w0) * esz,
				 (const uint8_t *)job->send + uoff * esz, len);
}

/* The elements [a, b) of reduce-scatter unit (i, t, j). */
static void rs_unit(const struct mc_call *m, const struct mc_stream *st, uint32_t i, uint32_t t, uint32_t j,
		    size_t *e0, size_t *e1, size_t *a, size_t *b)
{
	const struct mc_phase *ph = &st->ph[i];
	block_range(st, i, mod((int64_t)ph->rho - 2 - t, ph->d), e0, e1);
	part_range(*e0, *e1, m->P, j, a, b);
}

/* Reduce-scatter unit (i, t, j) arrived: reduce it, forward or keep it. */
static int rs_arrived(struct mc_call *m, struct mc_stream *st, uint32_t i, uint32_t t, uint32_t j)
{
	struct mc_phase *ph = &st->ph[i];
	size_t e0, e1, a, b;
	int rc;
	rs_unit(m, st, i, t, j, &e0, &e1, &a, &b);
	uint8_t *acc = m->scratch + ph->scratch + ph->slot[t] + (a - e0) * m->esz;
	if (a < b) {
		/* the clock first: under --exact the timekeeper simulates the
		 * reduction's virtual time while the host computes it */
		coll_charge_reduce(m->c, (b - a) * m->esz);
		if (m->dry)
			return t + 2 < ph->d ? rs_send(m, st, i, t + 1, j) : 0;
		const uint8_t *own = rs_input(m, st, i, a);
		struct reduce_arg ra = {m, acc, a};
		rc = own ? coll_reduce_local(m->job->dtype, m->job->op, acc, own, b - a)
			 : for_pieces(m, st, a, b, reduce_piece, &ra);
		if (rc)
			return rc;
	}
	if (t + 2 < ph->d)
		return rs_send(m, st, i, t + 1, j);
	if (i + 1 == m->N && a < b) {
		/* the last block of the last phase: this node's own chunk */
		size_t k = pos_of(st, m->p, a), u = st->uoff[k] + (a - st->woff[k]);
		uint8_t *to = m->job->kind == COLL_ALLREDUCE
				      ? (uint8_t *)m->job->result + u * m->esz
				      : (uint8_t *)m->job->rs_out + (u - m->job->blocks->displs[m->t->rank]) * m->esz;
		memcpy(to, acc, (b - a) * m->esz);
	}
	return 0;
}

/* ------------------------------------------------------------ progress */

static int start_rs_phase(struct mc_call *m, struct mc_stream *st, uint32_t i)
{
	int rc = 0;
	for (uint32_t j = 0; !rc && j < m->P; j++)
		rc = rs_send(m, st, i, 0, j);
	st->stage = MC_RS;
	st->phase = i;
	st->step = st->part = 0;
	return rc;
}

static int start_ag_phase(struct mc_call *m, struct mc_stream *st, uint32_t i)
{
	st->stage = MC_AG;
	st->phase = i;
	st->step = st->part = 0;
	return ag_send(m, st, i, 0);
}

/* The stream's expected unit arrived (or is empty): handle it, move on. */
static int advance(struct mc_call *m, struct mc_stream *st)
{
	struct mc_phase *ph = &st->ph[st->phase];
	int rc;
	if (st->stage == MC_RS) {
		if ((rc = rs_arrived(m, st, st->phase, st->step, st->part)))
			return rc;
		if (++st->part < m->P)
			return 0;
		st->part = 0;
		if (++st->step + 1 < ph->d)
			return 0;
		if (st->phase + 1 < m->N)
			return start_rs_phase(m, st, st->phase + 1);
		if (m->job->kind == COLL_ALLREDUCE)
			return start_ag_phase(m, st, m->N - 1);
		st->stage = 0;
		return 0;
	}
	/* allgather step `step` arrived in place */
	if (st->step + 2 < ph->d && (rc = ag_send(m, st, st->phase, st->step + 1)))
		return rc;
	if (++st->step + 1 < ph->d)
		return 0;
	if (st->phase > 0)
		return start_ag_phase(m, st, st->phase - 1);
	st->stage = 0;
	return 0;
}

/* The mark of the stream's expected unit, -1 if the unit is empty. */
static int32_t expected_mark(const struct mc_call *m, const struct mc_stream *st)
{
	const struct mc_phase *ph = &st->ph[st->phase];
	return st->stage == MC_RS ? ph->rs_mark[st->step * m->P + st->part] : ph->ag_mark[st->step];
}

/* Start the stream: its first phase's step 0. */
static int start(struct mc_call *m, struct mc_stream *st)
{
	st->starting = 0;
	return m->job->kind == COLL_ALLGATHER ? start_ag_phase(m, st, m->N - 1) : start_rs_phase(m, st, 0);
}

/*
 * Handle the streams' events until every stream is done. A core's clock
 * never goes back, and what it observes answers in virtual time. The core
 * is one server that takes its streams' events first come, first served:
 * the event whose unit arrived earliest (dma_counter_wait_marks names it),
 * at the core's clock or at its arrival if that is later. Events that are
 * ready at once (a stream's start, an empty unit) and arrivals at the same
 * time go in a fixed order: by the number each stream has handled, then by
 * stream, so that emulated times are the same on every run. The order
 * cannot deadlock: every stream has the same number of events on every
 * node (the same phases, steps and parts), and event e of a stream needs
 * only data its neighbour sent at an earlier event of the same stream.
 */
/* Every stream to start, none handled. */
static void streams_reset(struct mc_call *m)
{
	for (uint32_t k = 0; k < m->nmine; k++) {
		m->st[k].starting = 1;
		m->st[k].events = 0;
	}
}

/* The next wait of run_streams: the streams still going, in the
 * fixed order; the first of them ready now, or else the marks to wait for
 * (pair i: stream order[i]). n = 0:
 * every stream is done. */
struct mc_wait {
	uint32_t n, nw;
	uint32_t order[2 * TORUS_MAX_DIMS], ids[2 * TORUS_MAX_DIMS], marks[2 * TORUS_MAX_DIMS];
	struct mc_stream *ready;
};

static void next_wait(struct mc_call *m, struct mc_wait *w)
{
	uint32_t order[2 * TORUS_MAX_DIMS], n = 0;
	w->nw = 0;
	w->ready = NULL;
	for (uint32_t k = 0; k < m->nmine; k++) {
		if (!m->st[k].starting && !m->st[k].stage)
			continue;
		uint32_t at = n++;
		while (at > 0 && m->st[order[at - 1]].events > m->st[k].events) {
			order[at] = order[at - 1];
			at--;
		}
		order[at] = k;
	}
	w->n = n;
	for (uint32_t i = 0; i < n && !w->ready; i++) {
		struct mc_stream *s = &m->st[order[i]];
		int32_t mk = s->starting ? -1 : expected_mark(m, s);
		if (mk < 0) {
			w->ready = s; /* ready now */
		} else {
			w->ids[w->nw] = s->ph[s->phase].counter;
			w->marks[w->nw] = (uint32_t)mk;
			w->order[w->nw++] = order[i];
		}
	}
}

/*
 * --exact, the whole call at once (emu_core_program_start): every step of
 * every stream, run dry and told to the timekeeper, which takes them as
 * run_streams would (first come, first served in virtual time, ties
 * in the same order) without the core. The core then moves its bytes as
 * the units physically come, in any order, and its clock ends where the
 * timekeeper says. -EOPNOTSUPP or -EAGAIN: not here (no --exact, programs
 * off, or a step too big), nothing started.
 */
static int run_streams_program(struct mc_call *m)
{
	int rc = 0;
	if (!m->nmine)
		return 0; /* no stream on this core (short vectors take fewer colors) */
	for (uint32_t k = 0; k < m->nmine && !rc; k++) {
		struct mc_stream *st = &m->st[k], save = *st;
		st->starting = 1;
		st->events = 0;
		m->dry = 1;
		while (!rc && (st->starting || st->stage)) {
			int32_t mk = st->starting ? -1 : expected_mark(m, st);
			uint32_t id = mk < 0 ? 0 : st->ph[st->phase].counter;
			if ((rc = emu_core_step_begin(m->c)))
				break;
			int r2 = st->starting ? start(m, st) : advance(m, st);
			st->events++;
			rc = emu_core_step_end(m->c, k, id, mk, !r2);
			if (!rc)
				rc = r2;
		}
		m->dry = 0;
		*st = save;
	}
	if (!rc)
		rc = emu_core_program_start(m->c, m->nmine);
	if (rc)
		return rc; /* (the timekeeper drops steps told in vain) */
	streams_reset(m);
	for (;;) {
		struct mc_wait w;
		next_wait(m, &w);
		if (!w.n)
			break;
		struct mc_stream *st = w.ready;
		if (!st) {
			size_t which = 0;
			/* physical: the bytes are there */
			if ((rc = dma_counter_wait_marks(m->c, w.ids, w.marks, w.nw, &which)))
				break;
			st = &m->st[w.order[which]];
		}
		if ((rc = emu_core_program_step(m->c, (uint32_t)(st - m->st))) ||
		    (rc = st->starting ? start(m, st) : advance(m, st)))
			break;
		st->events++;
	}
	int rc2 = emu_core_program_finish(m->c);
	return rc ? rc : rc2;
}

static int run_streams(struct mc_call *m)
{
	int rc = run_streams_program(m);
	if (rc != -EOPNOTSUPP && rc != -EAGAIN)
		return rc;
	streams_reset(m);
	for (;;) {
		struct mc_wait w;
		next_wait(m, &w);
		if (!w.n)
			return 0;
		struct mc_stream *st = w.ready;
		if (!st) {
			size_t which = 0;
			if ((rc = dma_counter_wait_marks(m->c, w.ids, w.marks, w.nw, &which)))
				return rc;
			st = &m->st[w.order[which]];
		}
		if ((rc = st->starting ? start(m, st) : advance(m, st)))
			return rc;
		st->events++;
	}
}

/* ------------------------------------------------------------- set-up */

/*
 * Colors (two streams each). A core handles its streams' events one after
 * another, and each costs it about inj_overhead + hop_latency, so a short
 * vector is faster on fewer colors: c colors on k cores cost about
 * ceil(2c/k) sum_i (d_i - 1) events of that per stage, against
 * n (p-1)/p / (2c) bytes per stream at the links' payload rate. The
 * cheapest c, the most colors on a tie (BENCHMARKS.md, "Fewer colors for
 * short vectors"); TORUS_MC_COLORS=C overrides it (C >= N: every color;
 * anything but 1 to 64 is -EINVAL).
 */
static int choose_colors(const struct mc_call *m, uint32_t *colors)
{
	const struct torus_params *pr = emu_params(m->c);
	const struct torus_shape *sh = emu_shape(m->c);
	const char *env = getenv("TORUS_MC_COLORS");
	if (env && *env) {
		char *end;
		unsigned long c = strtoul(env, &end, 10);
		if (*end || c < 1 || c > 64)
			return -EINVAL; /* on every member alike: the same environment */
		*colors = c < m->N ? (uint32_t)c : m->N;
		return 0;
	}
	double steps = 0, bytes = (double)m->total * (double)m->esz * (double)(m->p - 1) / (double)m->p;
	for (uint32_t i = 0; i < m->N; i++)
		steps += sh->dims[m->dims[i]] - 1;
	double event = 0.9 * ((double)pr->inj_overhead_ps + (double)pr->hop_latency_ps);
	double rate = (double)pr->link_bw * torus_params_payload(pr) / ((double)pr->max_packet + pr->ack_overhead);
	uint32_t best = m->N, k = m->t->cores ? m->t->cores : 1;
	double best_t = 0;
	for (uint32_t c = m->N; c >= 1; c--) {
		double t = (double)((2 * c + k - 1) / k) * steps * event + bytes / (2.0 * c * rate) * 1e12;
		if (c == m->N || t < best_t) {
			best = c;
			best_t = t;
		}
	}
	*colors = best;
	return 0;
}

/* Parts per reduce-scatter block: sqrt(m gamma / alpha) minimises
 * steps * (P alpha + m gamma / P); at least one packet's payload per part. */
static uint32_t choose_parts(const struct mc_call *m)
{
	const struct torus_params *pr = emu_params(m->c);
	if (m->job->kind == COLL_ALLGATHER)
		return 1;
	double block = (double)m->total * m->esz / m->nstreams / emu_shape(m->c)->dims[m->dims[0]];
	double gamma = 1e12 / (double)pr->reduce_bw;                        /* ps per byte */
	/* ps per part: the sender's descriptor, the receiver's event, the
	 * latency, the rounding of a part to packets, and the wait of the other
	 * streams of the same core behind the part's reduction; calibrated on
	 * the emulator as 8 (inj_overhead + hop_latency) (BENCHMARKS.md as of commit 26917ce,
	 * "Part count": with 4x the parts, one color per core loses 10-15%) */
	double alpha = 8.0 * ((double)pr->inj_overhead_ps + (double)pr->hop_latency_ps);
	double P = sqrt(block * gamma / alpha), cap = block / torus_params_payload(pr);
	if (P > cap)
		P = cap;
	if (P > MC_MAX_PARTS)
		P = MC_MAX_PARTS;
	return P < 1 ? 1 : (uint32_t)P;
}

/* The call's shape: dimensions, colors, layout and parts (no allocation). */
static int plan_env(int *on);

static int shape(struct mc_call *m)
{
	const struct torus_shape *sh = emu_shape(m->c);
	int rc;
	if ((rc = plan_env(&m->plan_on)))
		return rc;
	for (uint32_t d = 0; d < sh->ndims; d++)
		if (torus_dim_has_links(sh, d))
			m->dims[m->N++] = d;
	m->total = m->job->blocks->displs[m->p - 1] + m->job->blocks->counts[m->p - 1];
	uint32_t colors;
	if ((rc = choose_colors(m, &colors)))
		return rc;
	m->nstreams = 2 * colors;
	/*
	 * The node layout cuts a W-space range into a piece per node. Pieces
	 * shorter than a packet's payload cost a packet each, and dominate a
	 * short allreduce: 4 KiB on 4x4x4 took 61.7 us, and 21.1 us in the
	 * contiguous layout. Longer pieces cost little, and there the node
	 * layout measured better (4 MiB, 3 cores, --exact: 1.013 of the bound
	 * against 1.022; BENCHMARKS.md, "Fewer colors for short vectors").
	 */
	m->contiguous = m->job->kind == COLL_ALLREDUCE &&
			(uint64_t)m->total * m->esz < (uint64_t)m->p * m->nstreams * torus_params_payload(emu_params(m->c));
	m->P = choose_parts(m);
	return 0;
}

/* Streams, counters, scratch, regions and FIFOs. */
static int setup(struct mc_call *m)
{
	int rc;
	for (uint32_t s = 0; s < m->nstreams; s++) {
		if (stream_core(m, s) != m->t->sub)
			continue;
		stream_geometry(m, &m->st[m->nmine], s);
		/* a FIFO per stream where there are enough: a FIFO injects in order */
		m->st[m->nmine].fifo = m->nmine % emu_params(m->c)->inj_fifos % (2 * TORUS_MAX_DIMS);
		m->nmine++;
	}
	size_t at = 0;
	for (uint32_t i = 0; i < m->nmine; i++)
		if ((rc = stream_init(m, &m->st[i])))
			return rc;
	for (uint32_t i = 0; i < m->nmine; i++)
		for (uint32_t ph = 0; ph < m->N; ph++)
			if ((rc = phase_counters(m, &m->st[i], ph, &at)))
				return rc;
	m->scratch_bytes = at;
	/* a kept set-up has its own: the team's is every call's */
	m->own_scratch = m->keep;
	m->scratch = m->keep ? aligned_alloc(64, (at + 63) / 64 * 64 + 64) : coll_scratch_get(m->t, at);
	if (!m->scratch)
		return -ENOMEM;
	if ((rc = dma_mem_register(m->c, m->scratch, at, &m->scratch_region)))
		return rc;
	m->have_scratch = 1;
	if (m->job->kind != COLL_REDUCE_SCATTER) {
		if ((rc = dma_mem_register(m->c, m->job->result, m->job->result_bytes, &m->result_region)))
			return rc;
		m->have_result = 1;
	}
	if ((rc = dma_counter_alloc(m->c, &m->inj)))
		return rc;
	m->have_inj = 1;
	for (uint32_t f = 0; f < 2 * TORUS_MAX_DIMS && f < emu_params(m->c)->inj_fifos; f++)
		if ((rc = dma_injfifo_open(m->c, f, &m->fifo[f])))
			return rc;
	return 0;
}

/* Tell every predecessor where to put; learn every successor's address. */
static int exchange(struct mc_call *m, int failed)
{
	size_t n = (size_t)m->nmine * m->N;
	struct coll_xchg *x = calloc(n ? n : 1, sizeof(*x));
	if (!x)
		return -ENOMEM;
	for (uint32_t i = 0; i < m->nmine; i++)
		for (uint32_t ph = 0; ph < m->N; ph++) {
			struct mc_stream *st = &m->st[i];
			struct coll_xchg *e = &x[i * m->N + ph];
			e->to_node = st->ph[ph].pred;
			/* its core: the same stream's on the node team, else the member's */
			e->to_core = m->t->cores > 1 ? stream_core(m, st->s) : m->t->cpu[st->ph[ph].pred];
			e->from = st->ph[ph].succ; /* team rank = node: the team is every node in order */
			e->tag = st->s * TORUS_MAX_DIMS + ph;
			e->mine = (struct coll_addr){m->scratch_region, st->ph[ph].counter, failed ? 0 : m->job->check,
						     st->ph[ph].scratch, m->result_region, 0};
		}
	int rc = coll_exchange_many(m->t, m->t->seq++, x, n);
	for (size_t i = 0; i < n; i++)
		m->st[i / m->N].ph[i % m->N].next = x[i].theirs;
	free(x);
	return rc;
}

static int finish(struct mc_call *m, int rc)
{
	if (m->have_inj) {
		int w = dma_counter_wait(m->c, m->inj); /* sources may be reused after this */
		rc = rc ? rc : w;
		dma_counter_free(m->c, m->inj);
	}
	/* regions first: once closed, a late deposit is refused before it can
	 * touch a counter (or its watermarks) that is being freed */
	if (m->have_scratch)
		dma_mem_deregister(m->c, m->scratch_region);
	if (m->have_result)
		dma_mem_deregister(m->c, m->result_region);
	for (uint32_t i = 0; i < m->nmine; i++) {
		for (uint32_t ph = 0; ph < m->N; ph++)
			if (m->st[i].ph[ph].watched)
				dma_counter_free(m->c, m->st[i].ph[ph].counter);
		stream_free(&m->st[i], m->N);
	}
	if (m->own_scratch)
		free(m->scratch);
	return rc;
}

/* ------------------------------------------------------ kept set-ups */

/*
 * Identical calls (osu_allreduce makes 1200 of each size) keep their
 * set-up: the second call on finds its counters armed, its regions
 * registered and its neighbours' addresses known, and runs the streams at
 * once. No exchange and no agreement: the catalogue's barrier before every
 * call (agree_on_call) has checked that every member makes the same call,
 * and every member, seeing the same arguments, keeps or drops alike.
 *
 * Why a kept set-up is safe. A peer's data for call k+1 leaves it only
 * after the catalogue's barrier of call k+1, so after this core has left
 * call k, in which every unit it expected had arrived: the counters are
 * re-armed at the end of call k (rearm), before anything of call k+1 can
 * land, and the scratch is the set-up's own, so calls of other algorithms
 * in between cannot move it. The result region is pointed at the new
 * result buffer at the start of call k+1 (dma_mem_rebind), which is in
 * time because a peer's allgather puts into it only after its
 * reduce-scatter, which needs this core's data of call k+1. That is why
 * allgather, which puts into the result at once, always sets up afresh.
 * Vectors above MC_PLAN_MAX_BYTES set up afresh too: the set-up is a small
 * part of their time, and the scratch is not held between calls.
 */
#define MC_PLAN_MAX_BYTES (1u << 20)

/* What this process's cores hold in kept set-ups, by core: at most half
 * the counters and a quarter of the regions, so that other calls (another
 * team's set-up, point-to-point) still find theirs. */
static struct {
	uint32_t counters, regions;
} kept[TORUS_MAX_CORES];

static uint32_t plan_counters(const struct mc_call *m) { return m->nmine * m->N + 1; }
static uint32_t plan_regions(const struct mc_call *m) { return (uint32_t)(m->have_scratch + m->have_result); }

/*
 * coll_agree, which also settles whether the set-up is kept: every member
 * says whether it has room (kept[]), and all keep or none, since a member
 * that kept would skip the next call's exchange that one that did not
 * waits for.
 */
static int agree_keep(struct mc_call *m, int rc)
{
	const struct torus_params *pr = emu_params(m->c);
	uint32_t i = emu_core_index(m->c), worst;
	uint32_t full = m->keep && (kept[i].counters + plan_counters(m) > pr->dma_counters / 2 ||
				    kept[i].regions + plan_regions(m) > pr->dma_regions / 4);
	int b = dma_barrier_team_max(m->c, m->t->part, m->t->npart, rc < 0 ? (uint32_t)-rc << 1 : full, &worst);
	if (b)
		return b;
	if (worst > 1)
		return -(int)(worst >> 1);
	m->keep = m->keep && !worst;
	return 0;
}

/* TORUS_MC_PLAN: 0 (never keep a set-up) or 1 (the default); anything
 * else is -EINVAL, on every member alike (the same environment). */
static int plan_env(int *on)
{
	const char *env = getenv("TORUS_MC_PLAN");
	*on = 1;
	if (!env || !*env)
		return 0;
	if (strcmp(env, "0") && strcmp(env, "1"))
		return -EINVAL;
	*on = env[0] == '1';
	return 0;
}

static int plan_wanted(const struct mc_call *m)
{
	if (!m->plan_on)
		return 0;
	return m->job->kind != COLL_ALLGATHER && (uint64_t)m->total * m->esz <= MC_PLAN_MAX_BYTES;
}

static int plan_fits(const struct mc_plan *pl, const struct mc_call *m)
{
	const struct mc_call *k = &pl->m;
	return pl->kind == m->job->kind && pl->check == m->job->check && k->total == m->total && k->esz == m->esz &&
	       k->nstreams == m->nstreams && k->P == m->P && k->contiguous == m->contiguous &&
	       k->job_result_bytes == m->job->result_bytes;
}

/* The call is over: its sources are free again, and every counter is armed
 * for the next identical call. */
static int rearm(struct mc_call *m)
{
	int rc = dma_counter_wait(m->c, m->inj);
	for (uint32_t i = 0; !rc && i < m->nmine; i++)
		for (uint32_t ph = 0; !rc && ph < m->N; ph++)
			rc = arm(m, &m->st[i].ph[ph]);
	return rc;
}

void coll_multicolor_release(coll_team_t *t)
{
	if (!t || !t->mc_plan)
		return;
	struct mc_plan *pl = t->mc_plan;
	uint32_t i = emu_core_index(pl->m.c);
	t->mc_plan = NULL;
	kept[i].counters -= pl->counters;
	kept[i].regions -= pl->regions;
	finish(&pl->m, 0);
	free(pl);
}

static int keep(coll_team_t *t, struct mc_call *m)
{
	struct mc_plan *pl = malloc(sizeof(*pl));
	int rc = pl ? rearm(m) : -ENOMEM;
	if (rc) {
		free(pl);
		return finish(m, rc);
	}
	pl->m = *m;
	pl->m.job_result_bytes = m->job->result_bytes;
	pl->kind = m->job->kind;
	pl->check = m->job->check;
	pl->result = m->job->result;
	pl->counters = plan_counters(m);
	pl->regions = plan_regions(m);
	kept[emu_core_index(m->c)].counters += pl->counters;
	kept[emu_core_index(m->c)].regions += pl->regions;
	t->mc_plan = pl;
	return 0;
}

static int run_plan(coll_team_t *t, const struct mc_job *job)
{
	struct mc_plan *pl = t->mc_plan;
	struct mc_call *m = &pl->m;
	int rc = 0;
	m->job = job;
	if (job->kind != COLL_REDUCE_SCATTER && job->result != pl->result) {
		rc = dma_mem_rebind(m->c, m->result_region, job->result, job->result_bytes);
		pl->result = job->result;
	}
	if (!rc)
		rc = run_streams(m);
	if (!rc)
		rc = rearm(m);
	if (rc)
		coll_multicolor_release(t);
	return rc;
}

/* Allgather: each stream's chunk of this node's block goes into place. */
static void place_own(struct mc_call *m)
{
	size_t mine = m->job->blocks->displs[m->t->rank], cnt = m->job->blocks->counts[m->t->rank];
	for (uint32_t i = 0; i < m->nmine; i++) {
		size_t off = split_off(cnt, m->nstreams, m->st[i].s), len = split_len(cnt, m->nstreams, m->st[i].s);
		memcpy((uint8_t *)m->job->result + (mine + off) * m->esz, (const uint8_t *)m->job->ag_send + off * m->esz,
		       len * m->esz);
	}
}

/* A torus of one node: the result is the input. */
static int one_node(struct mc_call *m)
{
	const struct mc_job *job = m->job;
	size_t bytes = job->blocks->counts[0] * m->esz;
	if (m->t->sub != 0)
		return 0;
	if (job->kind == COLL_ALLGATHER)
		memmove(job->result, job->ag_send, bytes);
	else
		memmove(job->kind == COLL_ALLREDUCE ? job->result : job->rs_out, job->send, bytes);
	return 0;
}

int coll_multicolor_fits(const coll_team_t *t)
{
	if (t->size != emu_node_count(t->core))
		return 0;
	for (uint32_t i = 0; i < t->size; i++)
		if (t->node[i] != i)
			return 0;
	/* a counter per (stream, phase) on a core, its injection counter and the exchange's */
	const struct torus_shape *sh = emu_shape(t->core);
	uint32_t N = 0;
	for (uint32_t d = 0; d < sh->ndims; d++)
		N += (uint32_t)torus_dim_has_links(sh, d);
	uint32_t per_core = (2 * N + t->cores - 1) / t->cores;
	return per_core * N + 2 <= emu_params(t->core)->dma_counters;
}

int coll_multicolor(coll_team_t *t, const struct mc_job *job)
{
	struct mc_call m;
	memset(&m, 0, sizeof(m));
	m.t = t;
	m.job = job;
	m.c = t->core;
	m.p = t->size;
	m.esz = coll_dtype_size(job->dtype);
	if (m.p == 1)
		return one_node(&m);
	int rc = shape(&m);
	if (!rc && t->mc_plan && plan_fits(t->mc_plan, &m))
		return run_plan(t, job);
	coll_multicolor_release(t);
	m.keep = !rc && plan_wanted(&m);
	if (!rc)
		rc = setup(&m);
	if (!rc && job->kind == COLL_ALLGATHER)
		place_own(&m);
	int x = exchange(&m, rc != 0);
	rc = agree_keep(&m, rc ? rc : x);
	if (rc)
		return finish(&m, rc);
	/* allgather: this node's chunk of each stream is in place; go */
	rc = run_streams(&m);
	return rc || !m.keep ? finish(&m, rc) : keep(t, &m);
}
