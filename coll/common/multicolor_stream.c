/*
 * Multicolor engine streams: the transfers (puts, reductions) and the
 * streams' progress, run three ways: dry, each step told to the timekeeper
 * (--exact); then as that program; or event by event without one.
 */
#include "../coll_internal.h"
#include "multicolor.h"

#include <errno.h>
#include <string.h>

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
		 * will leave, so the wait in mc_finish must not count it */
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
	mc_block_range(st, i, mc_mod((int64_t)ph->rho - 1 - t, ph->d), &e0, &e1);
	mc_part_range(e0, e1, m->P, j, &a, &b);
	if (a == b)
		return 0;
	/* the successor's slot t holds this block; part j at its offset */
	for (uint32_t u = 0; u < t; u++) {
		size_t f0, f1;
		mc_block_range(st, i, mc_mod((int64_t)ph->rho - 1 - u, ph->d), &f0, &f1);
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
	return mc_for_pieces(m, st, a, b, put_piece, &pa);
}

/* Put allgather step t of phase i: block rho - t, piece by piece. */
static int ag_send(struct mc_call *m, struct mc_stream *st, uint32_t i, uint32_t t)
{
	struct mc_phase *ph = &st->ph[i];
	size_t e0, e1;
	mc_block_range(st, i, mc_mod((int64_t)ph->rho - t, ph->d), &e0, &e1);
	struct put_arg pa = {m, st, ph, NULL, m->job->result, e0, 0, 0, 1};
	return mc_for_pieces(m, st, e0, e1, put_piece, &pa);
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
	mc_block_range(st, i, mc_mod((int64_t)ph->rho - 2 - t, ph->d), e0, e1);
	mc_part_range(*e0, *e1, m->P, j, a, b);
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
			 : mc_for_pieces(m, st, a, b, reduce_piece, &ra);
		if (rc)
			return rc;
	}
	if (t + 2 < ph->d)
		return rs_send(m, st, i, t + 1, j);
	if (i + 1 == m->N && a < b) {
		/* the last block of the last phase: this node's own chunk */
		size_t k = mc_pos_of(st, m->p, a), u = st->uoff[k] + (a - st->woff[k]);
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

/* The next wait of mc_run_streams: the streams still going, in the
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
 * mc_run_streams would (first come, first served in virtual time, ties
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

int mc_run_streams(struct mc_call *m)
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
