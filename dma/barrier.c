/*
 * The barrier network: Blue Gene's separate global barrier, modelled as
 * shared counters. Every participant leaves at max(arrival clocks) +
 * barrier_latency. Slot 0 is the global barrier; a team barrier claims a
 * slot by the hash of its member list (open addressing), the same on every
 * member, so no set-up call is needed.
 */
#include "dma_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static void max_into(_Atomic uint64_t *a, uint64_t v)
{
	uint64_t old = atomic_load_explicit(a, memory_order_relaxed);
	while (v > old && !atomic_compare_exchange_weak(a, &old, v))
		;
}

static void max_into32(_Atomic uint32_t *a, uint32_t v)
{
	uint32_t old = atomic_load_explicit(a, memory_order_relaxed);
	while (v > old && !atomic_compare_exchange_weak(a, &old, v))
		;
}

/* Ring every member's bell: n cores, by global rank (members NULL: the n
 * cores from global rank first_global on). */
static void wake_members(struct emu_node_rt *rt, const uint32_t *members, size_t n, uint32_t first_global)
{
	for (size_t i = 0; i < n; i++) {
		uint32_t node, core;
		if (emu_rt_locate(rt, members ? members[i] : first_global + (uint32_t)i, &node, &core))
			continue;
		emu_bell_ring(&emu_shm_core(&rt->shm, emu_shm_node(&rt->shm, node), core)->bell);
	}
}

struct barrier_wait_arg {
	struct emu_barrier_shm *b;
	uint32_t gen;
};

static int barrier_open(void *arg)
{
	struct barrier_wait_arg *a = arg;
	/* acquire pairs with the last arriver's release of generation */
	return atomic_load_explicit(&a->b->generation, memory_order_acquire) != a->gen;
}

static int barrier_wait(emu_core_t *c, struct emu_barrier_shm *b, uint32_t n, const uint32_t *members,
			uint32_t in, uint32_t *out, uint32_t *min, uint32_t first_global, uint64_t key)
{
	struct emu_node_rt *rt = c->node;
	uint32_t q = 0;
	int deferred = c->tk ? emu_core_can_defer(c) : 0;
	if (deferred < 0)
		return deferred;
	if (deferred) {
		/* that it opens does not depend on virtual time, only
		 * when: the timekeeper works that out behind us (the clock is
		 * then an offset from it, and so is what max_vt gets) */
		int rc = emu_core_defer_barrier(c, key, n);
		if (rc)
			return rc;
	} else if (c->tk) {
		/* the timekeeper counts the members too, and lets the
		 * simulation past the barrier only once it is complete */
		c->tk->qkey = key;
		c->tk->qn = n;
		q = emu_core_tk_ask(c, EMU_TKQ_BARRIER, 0);
	}
	dma_tsan_release(&rt->hdr->barrier[0]);
	uint32_t gen = atomic_load_explicit(&b->generation, memory_order_acquire);
	max_into(&b->max_vt, c->vt);
	if (in)
		max_into32(&b->max_in, in);
	if (~in)
		max_into32(&b->inv_in, ~in);
	if (atomic_fetch_add(&b->arrived, 1) + 1 == n) {
		/* last to arrive: open the barrier for everybody */
		uint64_t release = atomic_load(&b->max_vt) + rt->params->barrier_latency_ps;
		atomic_store(&b->max_vt, 0);
		atomic_store(&b->arrived, 0);
		atomic_store(&b->release_vt, release);
		atomic_store(&b->max_out, atomic_exchange(&b->max_in, 0));
		atomic_store(&b->inv_out, atomic_exchange(&b->inv_in, 0));
		/* waiters acquire generation, then read release_vt */
		atomic_store_explicit(&b->generation, gen + 1, memory_order_release);
		wake_members(rt, members, n, first_global);
	} else {
		struct barrier_wait_arg a = {b, gen};
		struct emu_wait w = {barrier_open, NULL, NULL, &a};
		int rc = emu_core_block(c, &w, -1);
		if (rc < 0)
			return rc;
	}
	dma_tsan_acquire(&rt->hdr->barrier[0]);
	/* release_vt cannot change before every member has left this episode */
	uint64_t release = atomic_load(&b->release_vt);
	if (out)
		*out = atomic_load(&b->max_out);
	if (min)
		*min = ~atomic_load(&b->inv_out);
	if (deferred) {
		atomic_store_explicit(&c->shm->progress, ++c->progress, memory_order_relaxed);
		return 0; /* its clock: the release, offset 0 */
	}
	if (c->tk) {
		int rc = emu_core_tk_answer(c, q);
		if (rc)
			return rc;
		/* (members that deferred gave offsets: no physical release) */
		if (c->tk->avt != release && !c->defer) {
			fprintf(stderr, "torus: node %u core %u: the barrier released at %llu ps, the timekeeper says %llu\n",
				rt->rank, c->index, (unsigned long long)release, (unsigned long long)c->tk->avt);
			return -EPROTO;
		}
		release = c->tk->avt;
	}
	if (release > c->vt)
		c->vt = release;
	atomic_store_explicit(&c->shm->vt, c->vt, memory_order_relaxed);
	atomic_store_explicit(&c->shm->progress, ++c->progress, memory_order_relaxed);
	if (c->tk) {
		atomic_store_explicit(&c->tk->clock, c->vt, memory_order_release);
		emu_core_tk_poke(c);
	}
	return 0;
}

int dma_barrier(emu_core_t *c)
{
	if (!c)
		return -EINVAL;
	return barrier_wait(c, &c->node->hdr->barrier[0], emu_core_total(c), NULL, 0, NULL, NULL, 0, 2);
}

/*
 * The node's lockbox: a barrier of cores 0..ncores-1 of one node. The cores
 * of a node are threads of one process, so its state is process memory,
 * one slot per ncores (teams of different sizes never share a slot).
 */
static struct emu_barrier_shm lockbox[TORUS_MAX_CORES + 1];

int dma_barrier_node(emu_core_t *c, uint32_t ncores, uint32_t in, uint32_t *out)
{
	if (!c || ncores == 0 || ncores > c->node->ncores || emu_core_index(c) >= ncores)
		return -EINVAL;
	if (ncores == 1) {
		if (out)
			*out = in;
		return 0;
	}
	uint32_t first = emu_core_global(c) - emu_core_index(c);
	/* its timekeeper key: even (team keys are odd), not 2, and per node */
	return barrier_wait(c, &lockbox[ncores], ncores, NULL, in, out, NULL, first,
			    (uint64_t)(first + 1) << 16 | (uint64_t)ncores << 1);
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

/*
 * A team barrier's slot is found by hashing the sorted member set, so every
 * member finds the same slot whatever order its list is in. Slots are never
 * given back: a job can use EMU_BARRIER_SLOTS - 1 distinct teams (a member
 * that finds none gets DMA_ERR_NOSPACE; the others then wait, and the hang
 * detector reports them).
 */
int dma_barrier_team(emu_core_t *c, const uint32_t *members, size_t n)
{
	return dma_barrier_team_range(c, members, n, 0, NULL, NULL);
}

int dma_barrier_team_max(emu_core_t *c, const uint32_t *members, size_t n, uint32_t in, uint32_t *out)
{
	return dma_barrier_team_range(c, members, n, in, out, NULL);
}

int dma_barrier_team_range(emu_core_t *c, const uint32_t *members, size_t n, uint32_t in, uint32_t *max,
			   uint32_t *min)
{
	if (!c || !members || n == 0 || n > emu_core_total(c))
		return -EINVAL;
	uint32_t *sorted = malloc(n * sizeof(uint32_t));
	if (!sorted)
		return -ENOMEM;
	memcpy(sorted, members, n * sizeof(uint32_t));
	qsort(sorted, n, sizeof(uint32_t), cmp_u32);
	int me = 0, rc = -EINVAL;
	uint64_t key = 1469598103934665603ull ^ n;
	for (size_t i = 0; i < n; i++) {
		if (sorted[i] >= emu_core_total(c) || (i && sorted[i] == sorted[i - 1]))
			goto out; /* out of range, or a duplicate that would never arrive */
		me |= sorted[i] == c->global;
		key = (key ^ sorted[i]) * 1099511628211ull;
	}
	if (!me)
		goto out;
	key |= 1; /* 0 marks a free slot */
	struct emu_shm_hdr *h = c->node->hdr;
	rc = DMA_ERR_NOSPACE;
	for (uint32_t probe = 0; probe < EMU_BARRIER_SLOTS - 1; probe++) {
		struct emu_barrier_shm *b = &h->barrier[1 + (key + probe) % (EMU_BARRIER_SLOTS - 1)];
		uint64_t cur = atomic_load(&b->key);
		if ((cur == 0 && atomic_compare_exchange_strong(&b->key, &cur, key)) || cur == key) {
			rc = barrier_wait(c, b, (uint32_t)n, sorted, in, max, min, 0, key);
			break;
		}
	}
out:
	free(sorted);
	return rc;
}
