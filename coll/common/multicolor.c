/*
 * Multicolor engine entry (coll_multicolor) and a call's set-up.
 *
 * The N-dimensional multicolor bucket engine (003_b0aac8c3d10c7733.txt,
 * section 4, Algorithm 1), shared by reduce-scatter, allgather and
 * allreduce. Its geometry is in multicolor_geom.c, its transfers and the
 * streams' progress in multicolor_stream.c, the set-ups kept between
 * identical calls in multicolor_keep.c; multicolor.h has what they share.
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
 * sleeping on the next one's watermark until it arrives (mc_run_streams).
 */
#include "../coll_internal.h"
#include "multicolor.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------- set-up */

/* Streams, counters, scratch, regions and FIFOs. */
static int setup(struct mc_call *m)
{
	int rc;
	for (uint32_t s = 0; s < m->nstreams; s++) {
		if (mc_stream_core(m, s) != m->t->sub)
			continue;
		mc_stream_geometry(m, &m->st[m->nmine], s);
		/* a FIFO per stream where there are enough: a FIFO injects in order */
		m->st[m->nmine].fifo = m->nmine % emu_params(m->c)->inj_fifos % (2 * TORUS_MAX_DIMS);
		m->nmine++;
	}
	size_t at = 0;
	for (uint32_t i = 0; i < m->nmine; i++)
		if ((rc = mc_stream_init(m, &m->st[i])))
			return rc;
	for (uint32_t i = 0; i < m->nmine; i++)
		for (uint32_t ph = 0; ph < m->N; ph++)
			if ((rc = mc_phase_counters(m, &m->st[i], ph, &at)))
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
			e->to_core = m->t->cores > 1 ? mc_stream_core(m, st->s) : m->t->cpu[st->ph[ph].pred];
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

int mc_finish(struct mc_call *m, int rc)
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
		mc_stream_free(&m->st[i], m->N);
	}
	if (m->own_scratch)
		free(m->scratch);
	return rc;
}

/* ------------------------------------------------------------- the call */

/* Allgather: each stream's chunk of this node's block goes into place. */
static void place_own(struct mc_call *m)
{
	size_t mine = m->job->blocks->displs[m->t->rank], cnt = m->job->blocks->counts[m->t->rank];
	for (uint32_t i = 0; i < m->nmine; i++) {
		size_t off = mc_split_off(cnt, m->nstreams, m->st[i].s), len = mc_split_len(cnt, m->nstreams, m->st[i].s);
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
	int rc = mc_shape(&m);
	if (!rc && t->mc_plan && mc_plan_fits(t->mc_plan, &m))
		return mc_run_plan(t, job);
	coll_multicolor_release(t);
	m.keep = !rc && mc_plan_wanted(&m);
	if (!rc)
		rc = setup(&m);
	if (!rc && job->kind == COLL_ALLGATHER)
		place_own(&m);
	int x = exchange(&m, rc != 0);
	rc = mc_agree_keep(&m, rc ? rc : x);
	if (rc)
		return mc_finish(&m, rc);
	/* allgather: this node's chunk of each stream is in place; go */
	rc = mc_run_streams(&m);
	return rc || !m.keep ? mc_finish(&m, rc) : mc_keep(t, &m);
}
