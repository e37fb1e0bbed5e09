/*
 * The all-to-all executor: one member's part of a plan (a2a.h), on the DMA
 * unit only.
 *
 * Set-up: register the recv buffer and the member's scratch, allocate one
 * reception counter per message it will receive (armed with that message's
 * bytes, so a wait names exactly the message it waits for, whatever the
 * order the others run in) and an injection counter; a member that
 * receives more messages than it has counters (a plan with counter
 * batches, a2a.h) takes kmax of them for every batch: a message's counter
 * is its slot modulo kmax, armed for the first batch at set-up, and for
 * each later one once the member has waited for every message of the one
 * before, before the team meets (coll_agree) and anyone sends into it; tell the address of
 * both buffers and the first counter to every member that puts into it,
 * learn those of the members it puts into (coll_exchange_many), and agree,
 * so that a member called differently, or whose set-up failed, makes every
 * member fail alike.
 * Then step by step: (in a plan with inj_order, a wait for the member's
 * earlier puts to leave,) the step's pre-copies, its puts (direct puts), a wait
 * on each message of the step, its post-copies. A put goes into the
 * injection FIFO of its first link (2 dim + dir of the dimension-order
 * route, modulo inj_fifos; messages within the node into the last FIFO):
 * a FIFO sends its messages one after another, so messages for different
 * links leave side by side, and those for one link queue behind each other
 * as they would on the wire anyway (with a single FIFO, a node's messages
 * all took turns: on 4x4 the torus algorithm kept one link of a node busy
 * at a time, 30% of the time each).
 * Local copies cost copy_bw of virtual time on the core. Last, wait for
 * the puts to leave, and free what the set-up took.
 */
#include "a2a.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct exec {
	coll_team_t *t;
	const struct coll_plan *pl;
	uint8_t *buf[3];
	uint32_t rregion, tregion, k0, inj, nslots;
	uint32_t kmod;      /* counter batches: a slot's counter is slot % kmod; 0: none */
	uint32_t batch;     /* the batch the member is in */
	int have_r, have_t, have_k, have_inj, have_inj2;
	uint32_t inj2; /* stage_sync 2: the odd phases' injection counter */
	int32_t *addr_of;   /* member -> index in x (its address), -1 */
	struct coll_xchg *x;
	size_t nx;
	struct coll_fifos fs;
};

int coll_fifos_open(emu_core_t *c, struct coll_fifos *fs)
{
	memset(fs, 0, sizeof(*fs));
	fs->n = emu_params(c)->inj_fifos < 32 ? emu_params(c)->inj_fifos : 32;
	if (!(fs->route = malloc(emu_shape(c)->nnodes)))
		return -ENOMEM;
	torus_route_table(emu_shape(c), emu_node_rank(c), fs->route);
	int rc = 0;
	for (uint32_t i = 0; !rc && i < fs->n; i++)
		rc = dma_injfifo_open(c, i, &fs->f[i]);
	return rc;
}

dma_injfifo_t *coll_fifo_to(const struct coll_fifos *fs, uint32_t node)
{
	uint32_t link = fs->route[node];
	return fs->f[link == TORUS_ROUTE_LOCAL ? fs->n - 1 : link % fs->n];
}

void coll_fifos_close(struct coll_fifos *fs)
{
	free(fs->route);
	fs->route = NULL;
}

static void do_copies(struct exec *e, size_t *ci, uint32_t step, int post)
{
	const struct coll_plan *pl = e->pl;
	uint32_t me = e->t->rank;
	uint64_t bytes = 0;
	for (; *ci < pl->ncopies && pl->copies[*ci].step == step && pl->copies[*ci].post == post; (*ci)++) {
		const struct a2a_copy *k = &pl->copies[*ci];
		if (k->member != me)
			continue;
		memmove(e->buf[k->dbuf] + k->doff, e->buf[k->sbuf] + k->soff, k->len);
		bytes += k->len;
	}
	if (bytes)
		coll_charge_copy(e->t->core, bytes);
}

/* Skip copies of step `step` (and post) that are not ours: the cursor
 * moves over every member's; only ours are done. */

/* A received message's counter. */
static uint32_t counter_of(const struct exec *e, uint32_t slot) { return e->kmod ? slot % e->kmod : slot; }

/* The steps of batch b: [first, end). */
static void batch_steps(const struct coll_plan *pl, uint32_t b, uint32_t *first, uint32_t *end)
{
	*first = pl->nbatch ? pl->bstart[b] : 0;
	*end = pl->nbatch && b + 1 < pl->nbatch ? pl->bstart[b + 1] : pl->nsteps;
}

/* Arm the counters of the messages the member receives in batch b (all of
 * them without batches). */
static int arm(struct exec *e, uint32_t b)
{
	const struct coll_plan *pl = e->pl;
	uint32_t first = 0, end = pl->nsteps;
	if (e->kmod)
		batch_steps(pl, b, &first, &end);
	int rc = 0;
	for (size_t i = 0; !rc && i < pl->nputs; i++)
		if (pl->puts[i].dst == e->t->rank && pl->puts[i].step >= first && pl->puts[i].step < end)
			rc = dma_counter_add(e->t->core, e->k0 + counter_of(e, pl->puts[i].slot), (int64_t)pl->puts[i].len);
	return rc;
}

static int setup(struct exec *e, uint64_t check)
{
	coll_team_t *t = e->t;
	const struct coll_plan *pl = e->pl;
	emu_core_t *c = t->core;
	uint32_t me = t->rank, p = t->size;
	int rc = 0;
	e->nslots = pl->nslots[me];
	/* counter batches where some member has more messages than counters
	 * (every member decides alike: the plan is everyone's) */
	uint32_t have = emu_params(c)->dma_counters, aside = 2 + (pl->stage_sync == 2);
	uint32_t spare = have > aside ? have - aside : 0;
	if (a2a_plan_slots_max(pl) > spare && pl->kmax && pl->kmax <= spare && !pl->unbatchable && pl->nbatch) {
		e->kmod = pl->kmax;
		e->nslots = e->nslots < pl->kmax ? e->nslots : pl->kmax;
	} else if (e->nslots > spare) {
		rc = DMA_ERR_NOSPACE;
	}
	/* who puts into us, whom we put into */
	uint8_t *from = calloc(p, 1), *to = calloc(p, 1);
	e->addr_of = malloc(p * sizeof(int32_t));
	if (!from || !to || !e->addr_of)
		rc = rc ? rc : -ENOMEM;
	size_t nfrom = 0, nto = 0;
	for (size_t i = 0; from && to && i < pl->nputs; i++) {
		const struct a2a_put *x = &pl->puts[i];
		if (x->dst == me && !from[x->src]) {
			from[x->src] = 1;
			nfrom++;
		}
		if (x->src == me && !to[x->dst]) {
			to[x->dst] = 1;
			nto++;
		}
	}
	e->nx = nfrom > nto ? nfrom : nto;
	e->x = calloc(e->nx ? e->nx : 1, sizeof(*e->x));
	if (!e->x)
		rc = rc ? rc : -ENOMEM;
	if (!rc && pl->tmp_bytes[me] && !(e->buf[A2A_TMP] = coll_scratch_get(t, pl->tmp_bytes[me])))
		rc = -ENOMEM;
	uint64_t rbytes = pl->recv_bytes ? pl->recv_bytes : (uint64_t)p * pl->block;
	if (!rc && rbytes && !(rc = dma_mem_register(c, e->buf[A2A_RECV], rbytes, &e->rregion)))
		e->have_r = 1;
	if (!rc && pl->vstats)
		coll_v_note_scratch(t, pl->tmp_bytes[me]);
	if (!rc && pl->tmp_bytes[me]) {
		if (!(rc = dma_mem_register(c, e->buf[A2A_TMP], pl->tmp_bytes[me], &e->tregion)))
			e->have_t = 1;
	}
	if (!rc && e->nslots && !(rc = dma_counter_alloc_n(c, e->nslots, &e->k0)))
		e->have_k = 1;
	if (!rc)
		rc = arm(e, 0);
	if (!rc && !(rc = dma_counter_alloc(c, &e->inj)))
		e->have_inj = 1;
	if (!rc && pl->stage_sync == 2 && !(rc = dma_counter_alloc(c, &e->inj2)))
		e->have_inj2 = 1;
	if (!rc)
		rc = coll_fifos_open(c, &e->fs);
	/* the exchange runs even after a failure (check 0), so nobody waits
	 * for us in vain */
	struct coll_addr mine = {.region = e->rregion, .region2 = e->have_t ? e->tregion : UINT32_MAX,
				 .counter0 = e->k0, .check = rc ? 0 : check};
	size_t a = 0, b = 0;
	for (uint32_t m = 0; e->x && e->addr_of && m < p; m++) {
		e->addr_of[m] = -1;
		if (from && from[m]) {
			e->x[a].to_node = t->node[m];
			e->x[a].to_core = t->cpu[m];
			e->x[a].mine = mine;
			a++;
		}
		if (to && to[m]) {
			e->x[b].from = m;
			e->addr_of[m] = (int32_t)b;
			b++;
		}
	}
	for (; e->x && a < e->nx; a++) {
		e->x[a].to_node = COLL_XCHG_NONE;
		e->x[a].mine = mine; /* what a received address is checked against */
	}
	for (; e->x && b < e->nx; b++)
		e->x[b].from = COLL_XCHG_NONE;
	free(from);
	free(to);
	int xr = e->x ? coll_exchange_many(t, t->seq++, e->x, e->nx) : -ENOMEM;
	return coll_agree(t, rc ? rc : xr);
}

static int finish(struct exec *e, int rc)
{
	emu_core_t *c = e->t->core;
	if (e->have_inj2) {
		int w = dma_counter_wait(c, e->inj2);
		rc = rc ? rc : w;
		dma_counter_free(c, e->inj2);
	}
	if (e->have_inj) {
		int w = dma_counter_wait(c, e->inj); /* sources may be reused after this */
		rc = rc ? rc : w;
		dma_counter_free(c, e->inj);
	}
	if (e->have_k)
		dma_counter_free_n(c, e->k0, e->nslots);
	if (e->have_t)
		dma_mem_deregister(c, e->tregion);
	if (e->have_r)
		dma_mem_deregister(c, e->rregion);
	free(e->x);
	free(e->addr_of);
	coll_fifos_close(&e->fs);
	return rc;
}

/*
 * Wait for a message. Members that finish early send the next call's
 * address messages (p - 1 of them) while we wait here without polling our
 * reception FIFO; beyond rx_slots of them they back up into the network and
 * can block the very data we wait for. A waiting core drains its FIFOs
 * anyway (into its stashes), so every team sleeps on the counter; without
 * a timekeeper (a hand-driven test harness), teams that large drain the
 * FIFO while they wait (into the exchange's inbox).
 */
static int wait_slot(struct exec *e, uint32_t id)
{
	emu_core_t *c = e->t->core;
	if (e->t->size < emu_params(c)->rx_slots || emu_exact(c))
		return dma_counter_wait(c, id);
	for (;;) {
		unsigned got;
		int zero = 0, rc = dma_recfifo_poll(c, 64, &got);
		if (rc < 0)
			return rc;
		if (!got && (rc = dma_recfifo_wait_counter(c, id, -1, &zero)) < 0)
			return rc;
		if (zero)
			return 0; /* (it set the clock) */
	}
}

int a2a_execute(coll_team_t *t, const struct coll_plan *pl, const void *send, void *recv, uint64_t check)
{
	emu_core_t *c = t->core;
	uint32_t me = t->rank;
	struct exec e;
	memset(&e, 0, sizeof(e));
	e.t = t;
	e.pl = pl;
	e.buf[A2A_SEND] = (uint8_t *)(uintptr_t)send; /* only ever read */
	e.buf[A2A_RECV] = recv;
	int rc = setup(&e, check);
	size_t pi = 0, ci = 0, wi = 0;
	for (uint32_t st = 0; !rc && st < pl->nsteps; st++) {
		const struct a2a_step *S = &pl->steps[st];
		/* a new stage: what it packs may overwrite what it sent last
		 * stage, and what others send what every member packed from */
		int sync = pl->stage_sync && st && S->phase != pl->steps[st - 1].phase;
		/* (two send areas: the puts of the phase before last, from the
		 * area this one packs into, left long ago; the wait says so) */
		uint32_t inj = pl->stage_sync == 2 && S->phase % 2 ? e.inj2 : e.inj;
		if (e.kmod && e.batch + 1 < pl->nbatch && st == pl->bstart[e.batch + 1]) {
			/* a new counter batch: every message of the last one is in
			 * (waited for in its steps); arm the counters for this one,
			 * then meet, so that nobody sends into them before */
			e.batch++;
			if ((rc = arm(&e, e.batch)) || (rc = coll_agree(t, 0)))
				break;
		}
		if ((sync || (pl->inj_order && st)) && (rc = dma_counter_wait(c, inj)))
			break;
		do_copies(&e, &ci, st, 0);
		if (sync && (rc = coll_agree(t, 0)))
			break;
		for (; !rc && pi < pl->nputs && pl->puts[pi].step == st; pi++) {
			const struct a2a_put *x = &pl->puts[pi];
			if (x->src != me)
				continue;
			const struct coll_addr *to = &e.x[e.addr_of[x->dst]].theirs;
			uint32_t region = x->dbuf == A2A_TMP ? to->region2 : to->region;
			struct dma_desc d;
			if ((rc = dma_counter_add(c, inj, (int64_t)x->len)))
				break;
			dma_desc_put(&d, t->node[x->dst], e.buf[x->sbuf] + x->soff, x->len, region, x->doff,
				     to->counter0 + counter_of(&e, x->slot), inj);
			d.tag = TORUS_TAG(t->tag_coll, pl->algo->tag, 0, S->phase, st);
			if ((rc = dma_injfifo_post(coll_fifo_to(&e.fs, t->node[x->dst]), &d, DMA_POST_WAIT)))
				dma_counter_add(c, inj, -(int64_t)x->len); /* it never left */
			else if (pl->vstats)
				coll_v_note_sent(t, S->phase, x->len);
		}
		for (; !rc && wi < pl->nputs && pl->puts[wi].step == st; wi++)
			if (pl->puts[wi].dst == me)
				rc = wait_slot(&e, e.k0 + counter_of(&e, pl->puts[wi].slot));
		/* skip what an error left of the step's copies */
		while (ci < pl->ncopies && pl->copies[ci].step == st && !pl->copies[ci].post)
			ci++;
		if (!rc)
			do_copies(&e, &ci, st, 1);
	}
	return finish(&e, rc);
}
