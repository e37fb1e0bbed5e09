/*
 * The direct baseline's building blocks (the baseline issue 4 asks for, not
 * an algorithm of 003_b0aac8c3d10c7733.txt): every member puts straight
 * into every other member, one direct put per pair, in the order rank+1,
 * rank+2, ... so that the members do not all start on member 0.
 *
 * Set-up per call: register the buffer the others put into, allocate one
 * reception counter per source member (counter k0 + j counts member j's
 * bytes; our own is armed with 0) and an injection counter, then tell every
 * other member our region and counter base (coll_exchange_many, p-1
 * memory-FIFO messages out and in) and agree (coll_agree), so a member
 * called differently, or whose set-up failed, makes everyone fail alike.
 * Counters: p + 1 here and one inside the exchange, hence the catalogue's
 * restriction team size <= dma_counters - 2.
 *
 * Limit: a member that is done may send the next call's p-1 address
 * messages while another still waits for this call's data without
 * polling its reception FIFO. With more than rx_slots of them queued they
 * back up into the network and can block the data it waits for. The
 * defaults cannot get there (p - 1 <= dma_counters - 3 = 61 < rx_slots =
 * 128); a machine with dma_counters > rx_slots + 2 can. Polling the
 * reception FIFO while waiting on the counters would lift it.
 */
#include "../coll_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int coll_direct_reduce_scatter(coll_team_t *t, const void *send, void *own, const struct coll_blocks *b,
			       enum coll_dtype dtype, enum coll_op op, uint64_t check);
int coll_direct_allgather(coll_team_t *t, void *buf, const struct coll_blocks *b, enum coll_dtype dtype,
			  uint64_t check);

struct direct_call {
	coll_team_t *t;
	uint32_t region, k0, inj;
	int have_region, have_counters, have_inj;
	struct coll_xchg *x; /* x[s-1]: the member s places ahead; .theirs is where it wants our data */
	dma_injfifo_t *f;
};

/* The member s places ahead of us in team order. */
static uint32_t ahead(const coll_team_t *t, uint32_t s) { return (t->rank + s) % t->size; }

/* The member s places behind us. */
static uint32_t behind(const coll_team_t *t, uint32_t s) { return (t->rank + t->size - s) % t->size; }

/* Register buf and arm counter k0 + j with from_bytes[j], member j's bytes. */
static int direct_alloc(struct direct_call *d, void *buf, size_t bytes, const size_t *from_bytes)
{
	emu_core_t *c = d->t->core;
	uint32_t p = d->t->size;
	int rc;
	/* the exchange needs one counter more: refuse a team beyond the
	 * restriction here, alike on every member, not inside the exchange */
	if (p + 2 > emu_params(c)->dma_counters)
		return DMA_ERR_NOSPACE;
	if ((rc = dma_mem_register(c, buf, bytes, &d->region)))
		return rc;
	d->have_region = 1;
	if ((rc = dma_counter_alloc_n(c, p, &d->k0)))
		return rc;
	d->have_counters = 1;
	for (uint32_t j = 0; !rc && j < p; j++)
		rc = dma_counter_add(c, d->k0 + j, (int64_t)from_bytes[j]);
	if (rc || (rc = dma_counter_alloc(c, &d->inj)))
		return rc;
	d->have_inj = 1;
	return dma_injfifo_open(c, 0, &d->f);
}

/*
 * Set up and exchange addresses with every other member. `failed` is the
 * caller's own set-up error: the exchange runs anyway (with check 0), so
 * nobody waits for us in vain. Returns the worst error of all members.
 */
static int direct_setup(struct direct_call *d, coll_team_t *t, void *buf, size_t bytes, const size_t *from_bytes,
			int failed, uint64_t check)
{
	uint32_t p = t->size;
	memset(d, 0, sizeof(*d));
	d->t = t;
	/* without this table we cannot tell the others, who then wait for us
	 * in vain: a limit shared with ring.c, which allocates before its
	 * exchange too */
	if (!(d->x = calloc(p - 1, sizeof(*d->x))))
		return -ENOMEM;
	int rc = failed ? failed : direct_alloc(d, buf, bytes, from_bytes);
	struct coll_addr mine = {.region = d->region, .counter0 = d->k0, .check = rc ? 0 : check};
	for (uint32_t s = 1; s < p; s++) {
		uint32_t j = ahead(t, s);
		/* tag 0: one exchange per call */
		d->x[s - 1] = (struct coll_xchg){.to_node = t->node[j], .to_core = t->cpu[j], .from = j, .mine = mine};
	}
	int x = coll_exchange_many(t, t->seq++, d->x, p - 1);
	return coll_agree(t, rc ? rc : x);
}

/* Put bytes into the member s places ahead, at offset of its region, on
 * its counter for us. */
static int direct_put(struct direct_call *d, uint32_t stage, uint32_t s, const void *src, size_t bytes,
		      uint64_t offset)
{
	emu_core_t *c = d->t->core;
	const struct coll_xchg *x = &d->x[s - 1];
	struct dma_desc desc;
	/* an empty block is not sent: its counter was armed with 0 and the
	 * owner may already have finished and closed its region */
	if (!bytes)
		return 0;
	int rc = dma_counter_add(c, d->inj, (int64_t)bytes);
	if (rc)
		return rc;
	dma_desc_put(&desc, x->to_node, src, bytes, x->theirs.region, offset, x->theirs.counter0 + d->t->rank, d->inj);
	desc.tag = TORUS_TAG(d->t->tag_coll, TORUS_ALGO_DIRECT, stage, 0, 0);
	if ((rc = dma_injfifo_post(d->f, &desc, DMA_POST_WAIT)))
		dma_counter_add(c, d->inj, -(int64_t)bytes); /* it never left: do not wait for it */
	return rc;
}

/* Wait for our puts to leave, then free what the set-up took. */
static int direct_finish(struct direct_call *d, int rc)
{
	emu_core_t *c = d->t->core;
	if (d->have_inj) {
		int w = dma_counter_wait(c, d->inj); /* sources may be reused after this */
		rc = rc ? rc : w;
		dma_counter_free(c, d->inj);
	}
	if (d->have_counters)
		dma_counter_free_n(c, d->k0, d->t->size);
	if (d->have_region)
		dma_mem_deregister(c, d->region);
	free(d->x);
	return rc;
}

/*
 * Direct reduce-scatter: send holds every block (b), own starts as this
 * member's contribution to its block and ends as the reduction over all
 * members. The member s places behind us puts its block into scratch slot
 * s-1; its put is the s-th it posts, so we reduce the slots in that order.
 */
int coll_direct_reduce_scatter(coll_team_t *t, const void *send, void *own, const struct coll_blocks *b,
			       enum coll_dtype dtype, enum coll_op op, uint64_t check)
{
	uint32_t p = t->size, i = t->rank;
	size_t esz = coll_dtype_size(dtype), slot = b->counts[i] * esz;
	struct direct_call d;
	if (p == 1)
		return 0;
	size_t *from = malloc(p * sizeof(size_t));
	uint8_t *scratch = coll_scratch_get(t, slot * (p - 1));
	for (uint32_t j = 0; from && j < p; j++)
		from[j] = j == i ? 0 : slot;
	int rc = direct_setup(&d, t, scratch, slot * (p - 1), from, from && scratch ? 0 : -ENOMEM, check);
	for (uint32_t s = 1; !rc && s < p; s++) {
		uint32_t to = ahead(t, s);
		size_t bytes = b->counts[to] * esz;
		rc = direct_put(&d, TORUS_STAGE_RS, s, (const uint8_t *)send + b->displs[to] * esz, bytes, (s - 1) * bytes);
	}
	for (uint32_t s = 1; !rc && s < p; s++) {
		if ((rc = dma_counter_wait(t->core, d.k0 + behind(t, s))) ||
		    (rc = coll_reduce_local(dtype, op, own, scratch + (s - 1) * slot, b->counts[i])))
			break;
		coll_charge_reduce(t->core, slot);
	}
	rc = direct_finish(&d, rc);
	free(from);
	return rc;
}

/*
 * Direct allgather: block `rank` of buf holds this member's data; every
 * other block arrives straight from its owner, on its own counter.
 */
int coll_direct_allgather(coll_team_t *t, void *buf, const struct coll_blocks *b, enum coll_dtype dtype,
			  uint64_t check)
{
	uint32_t p = t->size, i = t->rank;
	size_t esz = coll_dtype_size(dtype), total = b->displs[p - 1] + b->counts[p - 1];
	struct direct_call d;
	if (p == 1)
		return 0;
	size_t *from = malloc(p * sizeof(size_t));
	for (uint32_t j = 0; from && j < p; j++)
		from[j] = j == i ? 0 : b->counts[j] * esz;
	int rc = direct_setup(&d, t, buf, total * esz, from, from ? 0 : -ENOMEM, check);
	const uint8_t *mine = (const uint8_t *)buf + b->displs[i] * esz;
	for (uint32_t s = 1; !rc && s < p; s++)
		rc = direct_put(&d, TORUS_STAGE_AG, s, mine, b->counts[i] * esz, b->displs[i] * esz);
	for (uint32_t s = 1; !rc && s < p; s++)
		rc = dma_counter_wait(t->core, d.k0 + behind(t, s));
	rc = direct_finish(&d, rc);
	free(from);
	return rc;
}

/* p source counters, the injection counter and the exchange's */
int coll_direct_fits(const coll_team_t *t) { return t->size + 2 <= emu_params(t->core)->dma_counters; }
