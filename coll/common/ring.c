/*
 * The ring bucket building blocks (section 2.2 of 003_b0aac8c3d10c7733.txt):
 * members in team order form a ring; each of the p-1 steps sends one block
 * to the successor with a direct put into its scratch (reduce-scatter) or
 * straight into its buffer (allgather), and waits for the predecessor's
 * block on the step's own counter, so every step's arrival time is exact.
 */
#include "../coll_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* p-1 step counters, the injection counter and the exchange's */
int coll_ring_fits(const coll_team_t *t) { return t->size + 1 <= emu_params(t->core)->dma_counters; }

static uint32_t mod(int64_t a, uint32_t p) { return (uint32_t)(((a % p) + p) % p); }

/* State shared by both directions of data flow. */
struct ring_call {
	coll_team_t *t;
	uint32_t succ, pred, region, k0, inj;
	int have_region, have_counters, have_inj;
	struct coll_addr next;
	dma_injfifo_t *f;
};

/* failed: a local error so far (then only the exchange and agreement run,
 * so that the neighbours learn it instead of waiting) */
static int ring_setup(struct ring_call *r, coll_team_t *t, void *recvbuf, size_t bytes, const size_t *step_bytes,
		      uint64_t check, int failed)
{
	emu_core_t *c = t->core;
	uint32_t p = t->size;
	int rc = failed;
	memset(r, 0, sizeof(*r));
	r->t = t;
	r->succ = (t->rank + 1) % p;
	r->pred = (t->rank + p - 1) % p;
	if (!rc && !(rc = dma_mem_register(c, recvbuf, bytes, &r->region)))
		r->have_region = 1;
	if (!rc && !(rc = dma_counter_alloc_n(c, p - 1, &r->k0)))
		r->have_counters = 1;
	for (uint32_t s = 0; !rc && s + 1 < p; s++)
		rc = dma_counter_add(c, r->k0 + s, (int64_t)step_bytes[s]);
	if (!rc && !(rc = dma_counter_alloc(c, &r->inj)))
		r->have_inj = 1;
	if (!rc)
		rc = dma_injfifo_open(c, 0, &r->f);
	/* exchange even after a failure (check 0), so nobody waits in vain */
	struct coll_addr mine = {r->region, r->k0, rc ? 0 : check, 0, 0, 0};
	int x = coll_exchange(t, r->pred, r->succ, t->seq++, &mine, &r->next);
	return coll_agree(t, rc ? rc : x);
}

static int ring_put(struct ring_call *r, uint32_t stage, const void *src, size_t bytes, uint64_t offset, uint32_t step)
{
	struct dma_desc d;
	/* an empty block is not sent: its counter was armed with 0 and the
	 * successor may already have finished and closed its region */
	if (!bytes)
		return 0;
	int rc = dma_counter_add(r->t->core, r->inj, (int64_t)bytes);
	if (rc)
		return rc;
	dma_desc_put(&d, r->t->node[r->succ], src, bytes, r->next.region, offset, r->next.counter0 + step, r->inj);
	d.tag = TORUS_TAG(r->t->tag_coll, TORUS_ALGO_RING, stage, 0, 0);
	if ((rc = dma_injfifo_post(r->f, &d, DMA_POST_WAIT)))
		dma_counter_add(r->t->core, r->inj, -(int64_t)bytes); /* it never left */
	return rc;
}

static int ring_finish(struct ring_call *r, int rc)
{
	emu_core_t *c = r->t->core;
	if (r->have_inj) {
		int w = dma_counter_wait(c, r->inj); /* sources may be reused after this */
		rc = rc ? rc : w;
		dma_counter_free(c, r->inj);
	}
	if (r->have_counters)
		dma_counter_free_n(c, r->k0, r->t->size - 1);
	if (r->have_region)
		dma_mem_deregister(c, r->region);
	return rc;
}

int coll_ring_reduce_scatter(coll_team_t *t, void *buf, const struct coll_blocks *b, enum coll_dtype dtype,
			     enum coll_op op, uint64_t check)
{
	uint32_t p = t->size, i = t->rank;
	size_t esz = coll_dtype_size(dtype);
	emu_core_t *c = t->core;
	struct ring_call r;
	if (p == 1)
		return 0;
	/* step s receives block (i-2-s) into scratch slot s */
	size_t *step = calloc(p, sizeof(size_t));
	uint8_t *scratch = coll_scratch_get(t, b->max * esz * (p - 1));
	int rc = !step || !scratch ? -ENOMEM : 0;
	for (uint32_t s = 0; !rc && s + 1 < p; s++)
		step[s] = b->counts[mod((int64_t)i - 2 - s, p)] * esz;
	if ((rc = ring_setup(&r, t, scratch, b->max * esz * (p - 1), step, check, rc)))
		goto done;
	for (uint32_t s = 0; s + 1 < p; s++) {
		uint32_t sb = mod((int64_t)i - 1 - s, p), rb = mod((int64_t)i - 2 - s, p);
		/* the successor's slot s sits at s * max block; it reduces block sb */
		if ((rc = ring_put(&r, TORUS_STAGE_RS, (uint8_t *)buf + b->displs[sb] * esz, b->counts[sb] * esz,
				   s * b->max * esz, s)))
			goto done;
		if ((rc = dma_counter_wait(c, r.k0 + s)))
			goto done;
		if ((rc = coll_reduce_local(dtype, op, (uint8_t *)buf + b->displs[rb] * esz, scratch + s * b->max * esz,
					    b->counts[rb])))
			goto done;
		coll_charge_reduce(c, b->counts[rb] * esz);
	}
done:
	rc = ring_finish(&r, rc);
	free(step);
	return rc;
}

int coll_ring_allgather(coll_team_t *t, void *buf, const struct coll_blocks *b, enum coll_dtype dtype,
			uint64_t check)
{
	uint32_t p = t->size, i = t->rank;
	size_t esz = coll_dtype_size(dtype), total = b->displs[p - 1] + b->counts[p - 1];
	emu_core_t *c = t->core;
	struct ring_call r;
	if (p == 1)
		return 0;
	size_t *step = calloc(p, sizeof(size_t));
	int rc = step ? 0 : -ENOMEM;
	/* step s receives block (i-1-s) straight into its place in buf */
	for (uint32_t s = 0; !rc && s + 1 < p; s++)
		step[s] = b->counts[mod((int64_t)i - 1 - s, p)] * esz;
	if ((rc = ring_setup(&r, t, buf, total * esz, step, check, rc)))
		goto done;
	for (uint32_t s = 0; s + 1 < p; s++) {
		uint32_t sb = mod((int64_t)i - s, p);
		if ((rc = ring_put(&r, TORUS_STAGE_AG, (uint8_t *)buf + b->displs[sb] * esz, b->counts[sb] * esz,
				   b->displs[sb] * esz, s)) ||
		    (rc = dma_counter_wait(c, r.k0 + s)))
			goto done;
	}
done:
	rc = ring_finish(&r, rc);
	free(step);
	return rc;
}
