/*
 * Registered memory regions and byte counters. Ids are node-wide (core *
 * per-core count + index) so a remote descriptor can name them; each core
 * allocates from its own range, so allocation needs no lock. Tables live in
 * shared memory, where senders check descriptors against them and the hang
 * detector can see them; region base pointers stay process-local.
 */
#include "dma_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static struct dma_watch *watch_of(struct emu_node_rt *rt, uint32_t id);
static int tk_marks(emu_core_t *c, const uint32_t *ids, const uint32_t *marks, size_t n, uint32_t type,
		    size_t *which, torus_vt_t *vt);
static int watch_cross(struct dma_watch *w, int64_t value, torus_vt_t vt);

static struct dma_core_shm *own(emu_core_t *c) { return c->dma->shm; }

int dma_mem_register(emu_core_t *c, void *base, size_t len, uint32_t *region)
{
	if (!c || !region || (!base && len))
		return -EINVAL;
	struct dma_core_shm *d = own(c);
	void *shm = c->node->shm.base;
	for (uint32_t i = 0; i < d->nregions; i++) {
		struct dma_region_shm *r = dma_shm_region(shm, d, i);
		if (atomic_load_explicit(&r->valid, memory_order_relaxed))
			continue;
		c->dma->region_base[i] = base;
		atomic_store_explicit(&r->size, len, memory_order_relaxed);
		/* publishes base and size to the engine and to remote senders */
		atomic_store_explicit(&r->valid, 1, memory_order_release);
		*region = c->index * d->nregions + i;
		return 0;
	}
	return DMA_ERR_NOSPACE;
}

/* The region slot behind a node-wide id of this node, or NULL. */
static struct dma_region_shm *local_region(emu_core_t *c, uint32_t id, uint32_t *core, uint32_t *idx)
{
	struct emu_node_rt *rt = c->node;
	uint32_t per = rt->hdr->params.dma_regions;
	if (id / per >= rt->ncores)
		return NULL;
	*core = id / per;
	*idx = id % per;
	return dma_shm_region(rt->shm.base, rt->cores[*core]->dma->shm, *idx);
}

int dma_mem_deregister(emu_core_t *c, uint32_t region)
{
	uint32_t core, idx;
	if (!c)
		return -EINVAL;
	struct dma_region_shm *r = local_region(c, region, &core, &idx);
	if (!r || core != c->index || !atomic_load(&r->valid))
		return DMA_ERR_REGION;
	/* seq_cst, then wait out any deposit that saw the region still valid:
	 * when this returns, the engine no longer touches the memory */
	atomic_store(&r->valid, 0);
	return emu_engine_quiesce(c->node);
}

int dma_mem_rebind(emu_core_t *c, uint32_t region, void *base, size_t len)
{
	uint32_t core, idx;
	if (!c || (!base && len))
		return -EINVAL;
	struct dma_region_shm *r = local_region(c, region, &core, &idx);
	if (!r || core != c->index || !atomic_load(&r->valid))
		return DMA_ERR_REGION;
	/* closed while it moves: a deposit sees the old region or none */
	atomic_store(&r->valid, 0);
	int rc = emu_engine_quiesce(c->node);
	c->dma->region_base[idx] = base;
	atomic_store_explicit(&r->size, len, memory_order_relaxed);
	atomic_store_explicit(&r->valid, 1, memory_order_release);
	return rc;
}

int dma_core_finish(emu_core_t *c)
{
	struct dma_core_shm *d = c->dma->shm;
	/* first: a put that then finds a region closed is an orphan */
	atomic_store(&d->closed, 1);
	for (uint32_t i = 0; i < d->nregions; i++)
		atomic_store(&dma_shm_region(c->node->shm.base, d, i)->valid, 0);
	return emu_engine_quiesce(c->node);
}

/* ---------------------------------------------------------------- counters */

static struct dma_counter_shm *counter_of(struct emu_node_rt *rt, uint32_t id)
{
	uint32_t per = rt->hdr->params.dma_counters;
	if (id == DMA_NO_COUNTER || id / per >= rt->ncores)
		return NULL;
	struct dma_counter_shm *k = dma_shm_counter(rt->shm.base, rt->cores[id / per]->dma->shm, id % per);
	return atomic_load_explicit(&k->allocated, memory_order_acquire) ? k : NULL;
}

int dma_counter_alloc(emu_core_t *c, uint32_t *id)
{
	return dma_counter_alloc_n(c, 1, id);
}

/* ------------------------------------------------------ the timekeeper
 *
 * The timekeeper keeps every counter in virtual
 * time: it knows each packet's deposit (reception counters) and departure
 * (injection counters), and the core tells it its allocations and adds. A
 * core observes a counter through it; when the answer is zero, it also
 * waits for the physical counter to get there (its bytes are in memory).
 * A physical counter can be below the virtual one (bytes of later traffic
 * that came early in wall time), never above it for long.
 */
static int tk_counter_op(emu_core_t *c, uint32_t type, uint32_t id, int64_t delta)
{
	struct emu_tk_ev ev = {.type = type, .rec = id, .ready = c->vt, .delta = delta};
	return emu_core_tk_event(c, &ev);
}

struct catch_up {
	emu_core_t *c;
	struct dma_counter_shm *k;
};

static int caught_up(void *arg)
{
	struct catch_up *cu = arg;
	return atomic_load(&cu->k->value) <= 0 && atomic_load(&cu->k->busy) == 0;
}

static void catch_up_arm(void *arg)
{
	struct catch_up *cu = arg;
	atomic_fetch_or(&cu->k->waiters, 1ull << cu->c->index);
}

static void catch_up_disarm(void *arg)
{
	struct catch_up *cu = arg;
	atomic_fetch_and(&cu->k->waiters, ~(1ull << cu->c->index));
}

/* A deferred wait's physical condition: zero, as without --exact. */
static int physically_zero(void *arg)
{
	struct catch_up *cu = arg;
	return atomic_load(&cu->k->value) == 0 && atomic_load(&cu->k->busy) == 0;
}

/* The timekeeper said counter k is zero: wait until its bytes are here. */
static int counter_catch_up(emu_core_t *c, struct dma_counter_shm *k)
{
	struct catch_up cu = {c, k};
	struct emu_wait w = {caught_up, catch_up_arm, catch_up_disarm, &cu};
	int rc = emu_core_block(c, &w, -1);
	return rc > 0 ? 0 : rc < 0 ? rc : -ETIMEDOUT;
}

/* Counter id's value and hits at the core's clock; 1 if it is zero. */
static int tk_counter_read(emu_core_t *c, uint32_t id, int64_t *value, uint64_t *hits)
{
	c->tk->qn = 1;
	c->tk->qids[0] = id;
	int rc = emu_core_tk_answer(c, emu_core_tk_ask(c, EMU_TKQ_CTR, 0));
	if (rc)
		return rc;
	if (value)
		*value = c->tk->a_value;
	if (hits)
		*hits = c->tk->a_hits;
	return c->tk->afound ? 1 : 0;
}

static void tk_publish(emu_core_t *c)
{
	atomic_store_explicit(&c->shm->vt, c->vt, memory_order_relaxed);
	atomic_store_explicit(&c->shm->progress, ++c->progress, memory_order_relaxed);
	atomic_store_explicit(&c->tk->clock, c->vt, memory_order_release);
	emu_core_tk_poke(c);
}

int dma_counter_alloc_n(emu_core_t *c, uint32_t n, uint32_t *first)
{
	if (!c || !first || n == 0)
		return -EINVAL;
	if (emu_core_promised(c))
		return -EBUSY;
	struct dma_core_shm *d = own(c);
	for (uint32_t i = 0; i + n <= d->ncounters; i++) {
		uint32_t k = 0;
		while (k < n && !atomic_load(&dma_shm_counter(c->node->shm.base, d, i + k)->allocated))
			k++;
		if (k < n) {
			i += k; /* skip past the allocated one */
			continue;
		}
		for (k = 0; k < n; k++) {
			struct dma_counter_shm *ks = dma_shm_counter(c->node->shm.base, d, i + k);
			atomic_store(&ks->value, 0);
			atomic_store(&ks->vt, 0);
			atomic_store(&ks->hits, 0);
			atomic_store(&ks->waiters, 0);
			atomic_store_explicit(&ks->allocated, 1, memory_order_release);
		}
		*first = c->index * d->ncounters + i;
		for (k = 0; c->tk && k < n; k++) {
			int rc = tk_counter_op(c, EMU_TK_CTR_ALLOC, *first + k, 0);
			if (rc)
				return rc;
		}
		return 0;
	}
	return DMA_ERR_NOSPACE;
}

int dma_counter_free_n(emu_core_t *c, uint32_t first, uint32_t n)
{
	int rc = 0;
	for (uint32_t k = 0; k < n; k++) {
		int r = dma_counter_free(c, first + k);
		if (r && !rc)
			rc = r;
	}
	return rc;
}

int dma_counter_free(emu_core_t *c, uint32_t id)
{
	if (!c)
		return -EINVAL;
	struct dma_counter_shm *k = counter_of(c->node, id);
	if (!k || id / c->node->hdr->params.dma_counters != c->index)
		return DMA_ERR_COUNTER;
	dma_watch_free(atomic_exchange(&c->dma->watch[id % c->node->hdr->params.dma_counters], NULL));
	atomic_store_explicit(&k->allocated, 0, memory_order_release);
	return 0;
}

int dma_counter_watch(emu_core_t *c, uint32_t id, const int64_t *levels, uint32_t n)
{
	if (!c || (n && !levels))
		return -EINVAL;
	if (emu_core_promised(c))
		return -EBUSY;
	struct dma_counter_shm *k = counter_of(c->node, id);
	if (!k || id / c->node->hdr->params.dma_counters != c->index)
		return DMA_ERR_COUNTER;
	for (uint32_t i = 1; i < n; i++)
		if (levels[i] >= levels[i - 1])
			return -EINVAL;
	struct dma_watch *w = NULL;
	if (n) {
		if (!(w = calloc(1, sizeof(*w))) || !(w->level = malloc(n * sizeof(int64_t))) ||
		    !(w->vt = calloc(n, sizeof(torus_vt_t)))) {
			dma_watch_free(w);
			return -ENOMEM;
		}
		w->n = n;
		memcpy(w->level, levels, n * sizeof(int64_t));
		/* marks the counter already stands at were crossed when it last changed */
		watch_cross(w, atomic_load(&k->value), atomic_load(&k->vt));
	}
	dma_watch_free(atomic_exchange(&c->dma->watch[id % c->node->hdr->params.dma_counters], w));
	if (c->tk) {
		/* the timekeeper keeps the marks in virtual time */
		struct emu_tk_ev ev = {.type = EMU_TK_CTR_WATCH, .rec = id, .ready = c->vt, .id = n};
		int rc = emu_core_tk_event(c, &ev);
		for (uint32_t i = 0; !rc && i < n; i++) {
			ev = (struct emu_tk_ev){.type = EMU_TK_CTR_LEVEL, .rec = id, .ready = c->vt, .id = i, .delta = levels[i]};
			rc = emu_core_tk_event(c, &ev);
		}
		return rc;
	}
	return 0;
}

int dma_counter_mark(emu_core_t *c, uint32_t id, uint32_t mark, torus_vt_t *vt, int *crossed)
{
	if (!c || !vt || !crossed)
		return -EINVAL;
	if (!counter_of(c->node, id) || id / c->node->hdr->params.dma_counters != c->index)
		return DMA_ERR_COUNTER;
	struct dma_watch *w = watch_of(c->node, id);
	if (!w || mark >= w->n)
		return -EINVAL;
	if (c->tk) {
		size_t which;
		int rc = tk_marks(c, &id, &mark, 1, EMU_TKQ_MARK, &which, vt);
		if (rc < 0)
			return rc;
		*crossed = rc;
		if (!rc)
			emu_core_missed(c); /* a test that finds it not yet */
		return 0;
	}
	*crossed = atomic_load_explicit(&w->next, memory_order_acquire) > mark;
	if (*crossed)
		*vt = w->vt[mark];
	return 0;
}

/* A counter reached zero: wake the cores sleeping on it. */
static void counter_hit(struct emu_node_rt *rt, struct dma_counter_shm *k, torus_vt_t vt)
{
	(void)vt;
	uint64_t w = atomic_load_explicit(&k->waiters, memory_order_acquire);
	for (uint32_t i = 0; w && i < rt->ncores; i++)
		if (w & (1ull << i))
			emu_bell_ring(&rt->cores[i]->shm->bell);
}

void dma_watch_free(struct dma_watch *w)
{
	if (w) {
		free(w->level);
		free(w->vt);
		free(w);
	}
}

static struct dma_watch *watch_of(struct emu_node_rt *rt, uint32_t id)
{
	uint32_t per = rt->hdr->params.dma_counters;
	return atomic_load_explicit(&rt->cores[id / per]->dma->watch[id % per], memory_order_acquire);
}

/* A deposit took the counter to `value`: record the marks it crossed. Only
 * the node's engine deposits, so each watch has a single writer. */
static int watch_cross(struct dma_watch *w, int64_t value, torus_vt_t vt)
{
	uint32_t i = atomic_load_explicit(&w->next, memory_order_relaxed), from = i;
	while (i < w->n && value <= w->level[i])
		w->vt[i++] = vt;
	if (i == from)
		return 0;
	atomic_store_explicit(&w->next, i, memory_order_release);
	return 1;
}

static void counter_change(struct emu_node_rt *rt, struct dma_counter_shm *k, int64_t delta, torus_vt_t vt,
			   struct dma_watch *w)
{
	if (delta == 0)
		return; /* an empty message changes nothing, and must not count a hit */
	/* busy covers the change and its bookkeeping (vt, hits): a waiter counts
	 * the counter done only when it reads value 0 and busy 0 (counter_done) */
	atomic_fetch_add(&k->busy, 1);
	uint64_t old = atomic_load_explicit(&k->vt, memory_order_relaxed);
	while (vt > old && !atomic_compare_exchange_weak(&k->vt, &old, vt))
		;
	int64_t now = atomic_fetch_add(&k->value, delta) + delta;
	int hit = now == 0;
	if (hit)
		atomic_fetch_add_explicit(&k->hits, 1, memory_order_relaxed);
	if (w && delta < 0 && watch_cross(w, now, vt))
		hit = 1; /* wake the waiters: a mark was crossed */
	atomic_fetch_sub(&k->busy, 1);
	/* the waiter re-reads value after announcing itself (seq_cst both ways) */
	if (hit)
		counter_hit(rt, k, vt);
}

/*
 * Apply the queued decrements of counter `id` (the ops of pend[] whose bit
 * is set in `mask`, in the order the engine made them) as one change: the
 * same final value, vt (their maximum), hits and watermarks as one change
 * per decrement made back to back, which is what the waiters can tell
 * apart: they see the counter only between batches, as if the engine had
 * been slower. The values in between are looked at only when a hit or a
 * mark can be among them (the values only fall: every op is > 0 bytes).
 */
static void counter_apply(struct emu_node_rt *rt, uint32_t id, const struct dma_counter_op *pend, uint32_t n,
			  uint64_t mask)
{
	/* mask 0: all of pend[0..n) (the common case, one counter per batch) */
#define EACH_OP(op, body)                                                              \
	do {                                                                           \
		if (!mask) {                                                           \
			for (uint32_t i_ = 0; i_ < n; i_++) {                          \
				const struct dma_counter_op *op = &pend[i_];           \
				body;                                                  \
			}                                                              \
		} else {                                                               \
			for (uint64_t m_ = mask; m_; m_ &= m_ - 1) {                   \
				const struct dma_counter_op *op = &pend[__builtin_ctzll(m_)]; \
				body;                                                  \
			}                                                              \
		}                                                                      \
	} while (0)
	struct dma_counter_shm *k = counter_of(rt, id);
	if (!k)
		return;
	struct dma_watch *w = watch_of(rt, id);
	uint64_t total = 0;
	torus_vt_t vt = 0;
	EACH_OP(op, {
		total += op->bytes;
		vt = op->vt > vt ? op->vt : vt;
	});
	/* busy covers the change and its bookkeeping, as in counter_change */
	atomic_fetch_add(&k->busy, 1);
	uint64_t old = atomic_load_explicit(&k->vt, memory_order_relaxed);
	while (vt > old && !atomic_compare_exchange_weak(&k->vt, &old, vt))
		;
	int64_t before = atomic_fetch_sub(&k->value, (int64_t)total), after = before - (int64_t)total;
	uint64_t hits = 0;
	int marks = 0;
	uint32_t next = w ? atomic_load_explicit(&w->next, memory_order_relaxed) : 0;
	int hit_possible = before > 0 && after <= 0;
	int mark_possible = w && next < w->n && after <= w->level[next];
	if (hit_possible || mark_possible) {
		/* the values after each decrement: hits and marks, each at its own time */
		int64_t now = before;
		EACH_OP(op, {
			now -= (int64_t)op->bytes;
			hits += now == 0;
			if (mark_possible)
				marks |= watch_cross(w, now, op->vt);
		});
	}
	if (hits)
		atomic_fetch_add_explicit(&k->hits, hits, memory_order_relaxed);
	atomic_fetch_sub(&k->busy, 1);
	if (hits || marks)
		counter_hit(rt, k, vt);
#undef EACH_OP
}

void dma_counter_flush_slow(struct emu_node_rt *rt)
{
	struct dma_engine *e = rt->dma;
	uint32_t n = e->npend, id0 = e->pend[0].id;
	int one = 1;
	for (uint32_t i = 1; i < n; i++)
		one &= e->pend[i].id == id0;
	if (one) {
		counter_apply(rt, id0, e->pend, n, 0);
		e->npend = 0;
		return;
	}
	uint64_t left = n == 64 ? ~0ull : (1ull << n) - 1; /* ops not applied yet */
	while (left) {
		uint32_t i = (uint32_t)__builtin_ctzll(left), id = e->pend[i].id;
		uint64_t same = 0;
		for (uint64_t m = left; m; m &= m - 1) {
			uint32_t j = (uint32_t)__builtin_ctzll(m);
			same |= (uint64_t)(e->pend[j].id == id) << j;
		}
		counter_apply(rt, id, e->pend, n, same);
		left &= ~same;
	}
	e->npend = 0;
}

int dma_counter_add(emu_core_t *c, uint32_t id, int64_t bytes)
{
	if (!c)
		return -EINVAL;
	if (emu_core_promised(c))
		return -EBUSY;
	struct dma_counter_shm *k = counter_of(c->node, id);
	if (!k)
		return DMA_ERR_COUNTER;
	if (!emu_core_planning(c)) /* a step being recorded only writes it down */
		counter_change(c->node, k, bytes, c->vt, NULL);
	return c->tk ? tk_counter_op(c, EMU_TK_CTR_ADD, id, bytes) : 0;
}

int dma_counter_get(emu_core_t *c, uint32_t id, int64_t *value)
{
	if (!c || !value)
		return -EINVAL;
	struct dma_counter_shm *k = counter_of(c->node, id);
	if (!k)
		return DMA_ERR_COUNTER;
	if (c->tk) {
		int rc = tk_counter_read(c, id, value, NULL);
		return rc > 0 ? counter_catch_up(c, k) : rc;
	}
	*value = atomic_load(&k->value);
	return 0;
}

int dma_counter_hits(emu_core_t *c, uint32_t id, uint64_t *hits)
{
	if (!c || !hits)
		return -EINVAL;
	struct dma_counter_shm *k = counter_of(c->node, id);
	if (!k)
		return DMA_ERR_COUNTER;
	if (c->tk) {
		int rc = tk_counter_read(c, id, NULL, hits);
		return rc < 0 ? rc : 0;
	}
	*hits = atomic_load(&k->hits);
	return 0;
}

/* Zero now? Then move the clock to when it hit. */
static int counter_done(emu_core_t *c, struct dma_counter_shm *k)
{
	if (atomic_load(&k->value) != 0 || atomic_load(&k->busy) != 0)
		return 0;
	torus_vt_t vt = atomic_load_explicit(&k->vt, memory_order_acquire);
	if (vt > c->vt)
		c->vt = vt;
	atomic_store_explicit(&c->shm->vt, c->vt, memory_order_relaxed);
	atomic_store_explicit(&c->shm->progress, ++c->progress, memory_order_relaxed);
	return 1;
}

int dma_counter_test(emu_core_t *c, uint32_t id, int *zero)
{
	if (!c || !zero)
		return -EINVAL;
	struct dma_counter_shm *k = counter_of(c->node, id);
	if (!k)
		return DMA_ERR_COUNTER;
	if (c->tk) {
		int rc = tk_counter_read(c, id, NULL, NULL);
		if (rc < 0)
			return rc;
		*zero = rc;
		if (rc)
			return counter_catch_up(c, k);
		emu_core_missed(c); /* a poll that finds it busy */
		return 0;
	}
	int r = counter_done(c, k);
	if (r < 0)
		return r;
	*zero = r;
	return 0;
}

struct counter_wait {
	emu_core_t *c;
	struct dma_counter_shm **ks;
	size_t n, *which;
};

static int counters_ready(void *arg)
{
	struct counter_wait *cw = arg;
	for (size_t i = 0; i < cw->n; i++) {
		if (counter_done(cw->c, cw->ks[i])) {
			if (cw->which)
				*cw->which = i;
			return 1;
		}
	}
	return 0;
}

/* counter_hit rings the cores whose bit it sees */
static void counters_arm(void *arg)
{
	struct counter_wait *cw = arg;
	for (size_t i = 0; i < cw->n; i++)
		atomic_fetch_or(&cw->ks[i]->waiters, 1ull << cw->c->index);
}

static void counters_disarm(void *arg)
{
	struct counter_wait *cw = arg;
	for (size_t i = 0; i < cw->n; i++)
		atomic_fetch_and(&cw->ks[i]->waiters, ~(1ull << cw->c->index));
}

int dma_counter_wait_any(emu_core_t *c, const uint32_t *ids, size_t n, size_t *which)
{
	struct dma_counter_shm *ks[64];
	if (!c || !ids || !n || n > 64)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if (!(ks[i] = counter_of(c->node, ids[i])))
			return DMA_ERR_COUNTER;
	int defer = c->tk && n == 1 ? emu_core_can_defer(c) : 0;
	if (defer < 0)
		return defer;
	if (defer) {
		/* --exact, one counter: that it reaches zero does not depend on
		 * virtual time, only when. Tell the timekeeper (first: until it
		 * knows, it cannot simulate past our clock), wait for the bytes,
		 * and run on: it works out when, behind us */
		int rc = emu_core_defer_wait(c, ids[0]);
		if (rc)
			return rc;
		struct catch_up cu = {c, ks[0]};
		struct emu_wait w = {physically_zero, catch_up_arm, catch_up_disarm, &cu};
		if ((rc = emu_core_block(c, &w, -1)) <= 0)
			return rc < 0 ? rc : -ETIMEDOUT;
		if (which)
			*which = 0;
		return 0;
	}
	if (c->tk) {
		c->tk->qn = (uint32_t)n;
		memcpy(c->tk->qids, ids, n * sizeof(uint32_t));
		int rc = emu_core_tk_answer(c, emu_core_tk_ask(c, EMU_TKQ_CTR_WAIT, 0));
		if (rc)
			return rc;
		uint32_t w = c->tk->a_which < n ? c->tk->a_which : 0;
		if (c->tk->avt > c->vt)
			c->vt = c->tk->avt;
		tk_publish(c);
		if (which)
			*which = w;
		return counter_catch_up(c, ks[w]);
	}
	struct counter_wait cw = {c, ks, n, which};
	struct emu_wait w = {counters_ready, counters_arm, counters_disarm, &cw};
	int rc = emu_core_block(c, &w, -1);
	return rc > 0 ? 0 : rc;
}

struct fifo_or_counter {
	struct counter_wait cw;
	int zero;
};

static int fifo_or_counter_ready(void *arg)
{
	struct fifo_or_counter *fc = arg;
	if (torus_ring_count(fc->cw.c->dma->memfifo.ring) != 0)
		return 1;
	fc->zero = counters_ready(&fc->cw);
	return fc->zero;
}

int dma_recfifo_wait_counter(emu_core_t *c, uint32_t id, int timeout_ms, int *zero)
{
	struct dma_counter_shm *k;
	if (!c)
		return -EINVAL;
	if (!(k = counter_of(c->node, id)))
		return DMA_ERR_COUNTER;
	if (zero)
		*zero = 0;
	if (c->tk) {
		/* the earlier of the two in virtual time; the timeout
		 * is virtual too */
		c->tk->qn = 1;
		c->tk->qids[0] = id;
		c->tk->qkey = EMU_TK_Q_MEMFIFO;
		int rc = emu_core_tk_answer(
			c, emu_core_tk_ask(c, EMU_TKQ_CTR_OR_RECV, emu_core_tk_deadline(c, timeout_ms)));
		if (rc)
			return rc;
		if (!c->tk->afound) {
			emu_core_idle(c, c->tk->avt); /* timed out: only time passed */
			return -ETIMEDOUT;
		}
		if (c->tk->avt > c->vt)
			c->vt = c->tk->avt;
		tk_publish(c);
		if (c->tk->a_which != 0)
			return 0; /* a packet: dma_recfifo_poll takes it at its arrival */
		if (zero)
			*zero = 1;
		return counter_catch_up(c, k);
	}
	struct fifo_or_counter fc = {{c, &k, 1, NULL}, 0};
	/* (counters_arm and _disarm read fc as its first member, the counter_wait) */
	struct emu_wait w = {fifo_or_counter_ready, counters_arm, counters_disarm, &fc};
	int rc = emu_core_block(c, &w, timeout_ms);
	if (rc == 0)
		return -ETIMEDOUT;
	if (rc < 0)
		return rc;
	if (zero)
		*zero = fc.zero;
	return 0;
}

struct mark_wait {
	struct counter_wait cw;
	struct dma_watch **ws;
	const uint32_t *marks;
	size_t which;
};

/* Crossed marks: the one crossed earliest (ties: the first). */
static int marks_ready(void *arg)
{
	struct mark_wait *mw = arg;
	int found = 0;
	for (size_t i = 0; i < mw->cw.n; i++)
		if (atomic_load_explicit(&mw->ws[i]->next, memory_order_acquire) > mw->marks[i] &&
		    (!found || mw->ws[i]->vt[mw->marks[i]] < mw->ws[mw->which]->vt[mw->marks[mw->which]])) {
			found = 1;
			mw->which = i;
		}
	return found;
}

/*
 * ask the timekeeper about marks[i] of counters ids[i] (type
 * EMU_TKQ_MARK: crossed by the core's clock?; EMU_TKQ_MARK_WAIT: or wait
 * for the first crossing). 1 with *which, *vt (the crossing; the clock
 * moves to it if later), then the physical mark is waited for too (its
 * bytes are in memory); 0 if none was crossed (MARK only).
 */
static int tk_marks(emu_core_t *c, const uint32_t *ids, const uint32_t *marks, size_t n, uint32_t type,
		    size_t *which, torus_vt_t *vt)
{
	c->tk->qn = (uint32_t)n;
	memcpy(c->tk->qids, ids, n * sizeof(uint32_t));
	memcpy(c->tk->qmarks, marks, n * sizeof(uint32_t));
	int rc = emu_core_tk_answer(c, emu_core_tk_ask(c, type, 0));
	if (rc)
		return rc;
	if (!c->tk->afound)
		return 0;
	size_t w = c->tk->a_which < n ? c->tk->a_which : 0;
	*which = w;
	*vt = c->tk->a_t;
	if (c->tk->avt > c->vt)
		c->vt = c->tk->avt;
	tk_publish(c);
	/* the bytes: wait for the physical mark */
	struct dma_counter_shm *k = counter_of(c->node, ids[w]);
	struct dma_watch *ws = watch_of(c->node, ids[w]);
	if (!k || !ws || marks[w] >= ws->n)
		return -EPROTO;
	struct mark_wait mw = {{c, &k, 1, NULL}, &ws, &marks[w], 0};
	struct emu_wait ew = {marks_ready, counters_arm, counters_disarm, &mw};
	rc = emu_core_block(c, &ew, -1);
	return rc > 0 ? 1 : rc < 0 ? rc : -ETIMEDOUT;
}

int dma_counter_wait_marks(emu_core_t *c, const uint32_t *ids, const uint32_t *marks, size_t n, size_t *which)
{
	struct dma_counter_shm *ks[64];
	struct dma_watch *ws[64];
	if (!c || !ids || !marks || !n || n > 64)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		if (!(ks[i] = counter_of(c->node, ids[i])) || ids[i] / c->node->hdr->params.dma_counters != c->index)
			return DMA_ERR_COUNTER;
		if (!(ws[i] = watch_of(c->node, ids[i])) || marks[i] >= ws[i]->n)
			return -EINVAL;
	}
	if (c->tk && !c->program) { /* (a program's waits are physical: its times are the timekeeper's) */
		size_t w;
		torus_vt_t vt;
		int rc = tk_marks(c, ids, marks, n, EMU_TKQ_MARK_WAIT, &w, &vt);
		if (rc > 0 && which)
			*which = w;
		return rc < 0 ? rc : 0;
	}
	struct mark_wait mw = {{c, ks, n, NULL}, ws, marks, 0};
	struct emu_wait w = {marks_ready, counters_arm, counters_disarm, &mw};
	int rc = emu_core_block(c, &w, -1);
	if (rc > 0 && which)
		*which = mw.which;
	return rc > 0 ? 0 : rc;
}

int dma_counter_wait(emu_core_t *c, uint32_t id)
{
	return dma_counter_wait_any(c, &id, 1, NULL);
}
