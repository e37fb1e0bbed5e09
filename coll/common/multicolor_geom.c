/*
 * Multicolor engine geometry: the colors' dimension orders, the streams'
 * rings and W-space layout, the units' ranges, the phases' counters, and a
 * call's shape (dimensions, colors, layout, parts).
 */
#include "../coll_internal.h"
#include "multicolor.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MC_MAX_PARTS 256u

/* ------------------------------------------------------------ geometry */

size_t mc_split_len(size_t total, uint32_t parts, uint32_t i)
{
	return total / parts + (i < total % parts);
}
size_t mc_split_off(size_t total, uint32_t parts, uint32_t i)
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
uint32_t mc_mod(int64_t a, uint32_t d) { return (uint32_t)(((a % d) + d) % d); }

/* Element range, in W-space, of block b of phase i. */
void mc_block_range(const struct mc_stream *st, uint32_t i, uint32_t b, size_t *e0, size_t *e1)
{
	const struct mc_phase *ph = &st->ph[i];
	size_t S = ph->group / ph->d, first = ph->lo + ring_coord(b, ph->d, st->dir) * S;
	*e0 = st->woff[first];
	*e1 = st->woff[first + S];
}

void mc_part_range(size_t e0, size_t e1, uint32_t P, uint32_t j, size_t *a, size_t *b)
{
	*a = e0 + mc_split_off(e1 - e0, P, j);
	*b = *a + mc_split_len(e1 - e0, P, j);
}

/* Position holding W-space element e (woff is non-decreasing). */
size_t mc_pos_of(const struct mc_stream *st, size_t p, size_t e)
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
int mc_for_pieces(const struct mc_call *m, const struct mc_stream *st, size_t a, size_t b, mc_piece_fn fn, void *arg)
{
	if (a >= b)
		return 0;
	if (m->contiguous) /* W-space is the user layout, shifted: one piece */
		return fn(arg, st->uoff[0] + a, a, b - a);
	for (size_t k = mc_pos_of(st, m->p, a); a < b; k++) {
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
uint32_t mc_stream_core(const struct mc_call *m, uint32_t s)
{
	uint32_t k = m->t->cores;
	return k >= m->nstreams ? s : (uint32_t)((uint64_t)s * k / m->nstreams);
}

/* A stream's rings: who it talks to in each phase. Allocates nothing, so
 * that even a core whose set-up fails can tell its neighbours so. */
void mc_stream_geometry(struct mc_call *m, struct mc_stream *st, uint32_t s)
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
int mc_stream_init(struct mc_call *m, struct mc_stream *st)
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
		size_t seg = mc_split_off(m->total, m->nstreams, st->s), len = mc_split_len(m->total, m->nstreams, st->s);
		for (uint32_t k = 0; k < m->p; k++) {
			st->uoff[k] = seg + st->woff[k];
			st->woff[k + 1] = st->woff[k] + mc_split_len(len, m->p, k);
		}
	} else {
		for (uint32_t k = 0; k < m->p; k++) {
			uint32_t r = st->order[k];
			size_t cnt = job->blocks->counts[r];
			st->uoff[k] = job->blocks->displs[r] + mc_split_off(cnt, m->nstreams, st->s);
			st->woff[k + 1] = st->woff[k] + mc_split_len(cnt, m->nstreams, st->s);
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

void mc_stream_free(struct mc_stream *st, uint32_t N)
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
	mc_block_range(st, i, mc_mod((int64_t)st->ph[i].rho - 2 - t, st->ph[i].d), &e0, &e1);
	mc_part_range(e0, e1, m->P, j, &a, &b);
	return (b - a) * m->esz;
}
static size_t ag_unit_bytes(const struct mc_call *m, const struct mc_stream *st, uint32_t i, uint32_t t)
{
	size_t e0, e1;
	mc_block_range(st, i, mc_mod((int64_t)st->ph[i].rho - 1 - t, st->ph[i].d), &e0, &e1);
	return (e1 - e0) * m->esz;
}

/* The phase's counter: every byte it will see, and a mark per unit. */
int mc_arm(struct mc_call *m, const struct mc_phase *ph)
{
	int rc = dma_counter_add(m->c, ph->counter, ph->armed);
	return rc ? rc : dma_counter_watch(m->c, ph->counter, ph->levels, ph->nlevels);
}

/*
 * Per (stream, phase): scratch slots, the reception counter armed with
 * every byte it will see, and a watermark per non-empty unit.
 */
int mc_phase_counters(struct mc_call *m, struct mc_stream *st, uint32_t i, size_t *scratch_at)
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
		rc = mc_arm(m, ph);
	}
	return rc;
}

/* ------------------------------------------------------ the call's shape */

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
int mc_shape(struct mc_call *m)
{
	const struct torus_shape *sh = emu_shape(m->c);
	int rc;
	if ((rc = mc_plan_env(&m->plan_on)))
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
