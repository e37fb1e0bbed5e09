/*
 * Descriptors and injection FIFOs: the core side of the DMA unit. Posting
 * validates the descriptor against the destination's tables in shared
 * memory (regions, counters, handlers), so a bad descriptor fails at once
 * with a clear code; the destination still checks every deposit.
 */
#include "dma_internal.h"

#include <errno.h>
#include <string.h>

static void desc_init(struct dma_desc *d, uint32_t kind)
{
	memset(d, 0, sizeof(*d));
	d->kind = kind;
	d->counter = DMA_NO_COUNTER;
	d->inj_counter = DMA_NO_COUNTER;
	d->region = UINT32_MAX;
	d->reply_region = UINT32_MAX;
}

int dma_desc_memfifo(struct dma_desc *d, uint32_t node, uint32_t core, uint32_t dispatch, uint16_t user,
		      const void *buf, size_t len, uint32_t inj_counter)
{
	if (!d)
		return -EINVAL;
	desc_init(d, DMA_MEMFIFO);
	d->node = node;
	d->core = core;
	d->dispatch = dispatch;
	d->user = user;
	d->src = buf;
	d->len = len;
	d->inj_counter = inj_counter;
	return !buf && len ? -EINVAL : 0; /* (filled all the same: the post refuses it too) */
}

int dma_desc_put(struct dma_desc *d, uint32_t node, const void *src, size_t len, uint32_t region,
		  uint64_t offset, uint32_t counter, uint32_t inj_counter)
{
	if (!d)
		return -EINVAL;
	desc_init(d, DMA_PUT);
	d->node = node;
	d->src = src;
	d->len = len;
	d->region = region;
	d->offset = offset;
	d->counter = counter;
	d->inj_counter = inj_counter;
	return !src && len ? -EINVAL : 0;
}

int dma_desc_get(struct dma_desc *d, uint32_t node, uint32_t region, uint64_t offset, size_t len,
		  uint32_t reply_region, uint64_t reply_offset, uint32_t reply_counter)
{
	if (!d)
		return -EINVAL;
	desc_init(d, DMA_GET);
	d->node = node;
	d->region = region;
	d->offset = offset;
	d->len = len;
	d->reply_region = reply_region;
	d->reply_offset = reply_offset;
	d->counter = reply_counter;
	return 0;
}

int dma_desc_copy(struct dma_desc *d, const void *src, size_t len, uint32_t region, uint64_t offset,
		   uint32_t counter)
{
	if (!d)
		return -EINVAL;
	desc_init(d, DMA_COPY);
	d->src = src;
	d->len = len;
	d->region = region;
	d->offset = offset;
	d->counter = counter;
	return !src && len ? -EINVAL : 0;
}

int dma_injfifo_open(emu_core_t *c, uint32_t index, dma_injfifo_t **out)
{
	if (!c || !out)
		return -EINVAL;
	if (index >= c->dma->shm->ninj)
		return DMA_ERR_FIFO;
	*out = &c->dma->fifos[index];
	return 0;
}

/* The DMA block of (node, core) and its tables, or NULL (struct dma_peer). */
static struct dma_peer *remote_core(struct emu_node_rt *rt, uint32_t node, uint32_t core)
{
	if (node >= rt->hdr->nnodes || core >= rt->first_core[node + 1] - rt->first_core[node])
		return NULL;
	struct dma_peer *p = &rt->dma->peer[rt->first_core[node] + core];
	if (!atomic_load_explicit(&p->d, memory_order_acquire)) {
		struct dma_core_shm *d =
			dma_core_shm_of(&rt->shm, emu_shm_core(&rt->shm, emu_shm_node(&rt->shm, node), core));
		atomic_store_explicit(&p->regions, dma_shm_region(rt->shm.base, d, 0), memory_order_relaxed);
		atomic_store_explicit(&p->counters, dma_shm_counter(rt->shm.base, d, 0), memory_order_relaxed);
		atomic_store_explicit(&p->d, d, memory_order_release);
	}
	return p;
}

/* Region id of node: 0 and its size, or DMA_ERR_REGION. */
static int region_size(struct emu_node_rt *rt, uint32_t node, uint32_t id, uint64_t *size)
{
	uint32_t per = rt->hdr->params.dma_regions;
	if (id == UINT32_MAX || id > DMA_MAX_IDS)
		return DMA_ERR_REGION;
	struct dma_peer *d = remote_core(rt, node, id / per);
	if (!d)
		return DMA_ERR_REGION;
	struct dma_region_shm *r = atomic_load_explicit(&d->regions, memory_order_relaxed) + id % per;
	if (!atomic_load_explicit(&r->valid, memory_order_acquire))
		return DMA_ERR_REGION;
	*size = atomic_load_explicit(&r->size, memory_order_relaxed);
	return 0;
}

static int check_region(struct emu_node_rt *rt, uint32_t node, uint32_t id, uint64_t offset, uint64_t len)
{
	uint64_t size;
	int rc = region_size(rt, node, id, &size);
	if (rc)
		return rc;
	if (offset > size || len > size - offset)
		return DMA_ERR_RANGE;
	return 0;
}

static int check_counter(struct emu_node_rt *rt, uint32_t node, uint32_t id)
{
	uint32_t per = rt->hdr->params.dma_counters;
	if (id == DMA_NO_COUNTER)
		return 0;
	if (id > DMA_MAX_IDS)
		return DMA_ERR_COUNTER;
	struct dma_peer *d = remote_core(rt, node, id / per);
	if (!d ||
	    !atomic_load_explicit(&(atomic_load_explicit(&d->counters, memory_order_relaxed) + id % per)->allocated,
				  memory_order_acquire))
		return DMA_ERR_COUNTER;
	return 0;
}

static int validate(emu_core_t *c, const struct dma_desc *d)
{
	struct emu_node_rt *rt = c->node;
	int rc;

	if ((d->len && !d->src && d->kind != DMA_GET) || (d->flags & ~(DMA_F_UNCHECKED | DMA_F_ANY_ORDER)) || !dma_hints_ok(rt, d->hints) ||
	    d->kind < DMA_MEMFIFO || d->kind > DMA_COPY)
		return -EINVAL;
	/* a get injects only its request and a copy nothing: no injection counter */
	if ((d->kind == DMA_GET || d->kind == DMA_COPY) && d->inj_counter != DMA_NO_COUNTER)
		return -EINVAL;
	if ((d->flags & DMA_F_ANY_ORDER) && (d->kind != DMA_MEMFIFO || d->dispatch == 0 || d->key >> 63))
		return -EINVAL;
	/* what the wire cannot carry is refused even unchecked: the destination
	 * can only check the fields it receives */
	if ((rc = dma_desc_fits_wire(d)))
		return rc;
	if ((rc = check_counter(rt, rt->rank, d->inj_counter)))
		return rc;
	if (d->flags & DMA_F_UNCHECKED) /* the destination still checks its tables */
		return d->node < rt->hdr->nnodes || d->kind == DMA_COPY ? 0 : DMA_ERR_DEST;
	switch (d->kind) {
	case DMA_MEMFIFO: {
		struct dma_peer *p = remote_core(rt, d->node, d->core);
		if (!p)
			return DMA_ERR_DEST;
		struct dma_core_shm *dst = atomic_load_explicit(&p->d, memory_order_relaxed);
		if (d->dispatch == 0 || d->dispatch > 255)
			return d->dispatch == 0 ? 0 : DMA_ERR_HANDLER;
		uint64_t bits = atomic_load_explicit(&dst->handlers[d->dispatch / 64], memory_order_acquire);
		return bits & (1ull << (d->dispatch % 64)) ? 0 : DMA_ERR_HANDLER;
	}
	case DMA_PUT:
		if (d->node >= rt->hdr->nnodes)
			return DMA_ERR_DEST;
		if ((rc = check_region(rt, d->node, d->region, d->offset, d->len)))
			return rc;
		return check_counter(rt, d->node, d->counter);
	case DMA_GET:
		if (d->node >= rt->hdr->nnodes)
			return DMA_ERR_DEST;
		if ((rc = check_region(rt, d->node, d->region, d->offset, d->len)) ||
		    (rc = check_region(rt, rt->rank, d->reply_region, d->reply_offset, d->len)))
			return rc;
		return check_counter(rt, rt->rank, d->counter);
	case DMA_COPY:
		if ((rc = check_region(rt, rt->rank, d->region, d->offset, d->len)))
			return rc;
		return check_counter(rt, rt->rank, d->counter);
	default:
		return -EINVAL;
	}
}

/*
 * what the destination will refuse of unchecked descriptor d, from
 * the tables it checks (as validate, but per packet for a range, as the
 * destination's engine does): an EMU_TK_REFUSE event for the timekeeper,
 * which times the faults; 0 if nothing is refused.
 */
static int refusal(struct emu_node_rt *rt, const struct dma_desc *d, struct emu_tk_ev *ev)
{
	int all = 0, ctr = 0, req = 0;
	uint64_t limit = UINT64_MAX, size;
	*ev = (struct emu_tk_ev){.type = EMU_TK_REFUSE, .rec = (uint32_t)-DMA_ERR_RANGE, .node = UINT32_MAX};
	switch (d->kind) {
	case DMA_MEMFIFO: {
		struct dma_peer *p = remote_core(rt, d->node, d->core);
		struct dma_core_shm *dst = p ? atomic_load_explicit(&p->d, memory_order_relaxed) : NULL;
		if (!dst)
			all = DMA_ERR_DEST;
		else if (d->dispatch && !(atomic_load_explicit(&dst->handlers[d->dispatch / 64], memory_order_acquire) &
					  (1ull << (d->dispatch % 64))))
			all = DMA_ERR_HANDLER;
		break;
	}
	case DMA_PUT:
	case DMA_GET: {
		/* a put's packets at the destination; a get's reply packets here */
		uint32_t at = d->kind == DMA_PUT ? d->node : rt->rank;
		uint32_t region = d->kind == DMA_PUT ? d->region : d->reply_region;
		/* deposits at a core whose program returned are lost, not
		 * refused (dma/engine_dma.c, deliver_put) */
		struct dma_peer *owner = remote_core(rt, at, region / rt->hdr->params.dma_regions);
		struct dma_core_shm *od = owner ? atomic_load_explicit(&owner->d, memory_order_relaxed) : NULL;
		if (d->kind == DMA_PUT && od && atomic_load(&od->closed))
			return 0;
		all = region_size(rt, at, region, &size);
		if (!all)
			limit = size;
		ctr = check_counter(rt, at, d->counter);
		ev->node = region;
		ev->id = d->kind == DMA_PUT ? d->offset : d->reply_offset;
		if (d->kind == DMA_GET) {
			/* the request, at the target: the whole range */
			req = check_region(rt, d->node, d->region, d->offset, d->len);
			ev->core = d->region;
			ev->delta = (int64_t)d->offset;
		}
		if (!all && !ctr && !req && ev->id <= limit && d->len <= limit - ev->id)
			return 0;
		break;
	}
	case DMA_COPY:
		if (!(all = check_region(rt, rt->rank, d->region, d->offset, d->len)))
			all = check_counter(rt, rt->rank, d->counter);
		ev->node = d->region;
		ev->id = d->offset;
		break;
	}
	if (d->kind != DMA_PUT && d->kind != DMA_GET && !all)
		return 0;
	ev->kind = (uint32_t)-all;
	ev->fifo = (uint32_t)-ctr;
	ev->inj = (uint32_t)-req;
	ev->len = limit;
	return 1;
}

static int fifo_has_room(void *arg)
{
	dma_injfifo_t *f = arg;
	struct torus_side *side;
	return torus_ring_reserve(&f->view, &side) != NULL;
}

/* the engine rings this core when it takes a descriptor from a marked FIFO */
static void fifo_arm(void *arg)
{
	dma_injfifo_t *f = arg;
	torus_ring_mark_full(&f->view);
}

/* a memory-FIFO message's name (0 for other kinds): its packets
 * carry it, and the timekeeper names their arrivals by it. The sender's
 * count of them, or its key for one sent in any order (which the receiver
 * names too). Not the post time: a clock that is an offset from a
 * deferred wait's answer is no name. */
static uint64_t msg_name(const emu_core_t *c, const struct dma_desc *d)
{
	if (d->kind != DMA_MEMFIFO)
		return 0;
	return d->flags & DMA_F_ANY_ORDER ? EMU_TK_MSG_ANY | d->key : c->dma->msgs + 1;
}

/* tell the timekeeper about the descriptor, posted at the clock. */
static int tk_post_event(emu_core_t *c, const dma_injfifo_t *f, const struct dma_desc *d)
{
	static const uint32_t kinds[] = {[DMA_MEMFIFO] = EMU_TK_MEMFIFO, [DMA_PUT] = EMU_TK_PUT, [DMA_GET] = EMU_TK_GET,
					 [DMA_COPY] = EMU_TK_COPY};
	struct emu_tk_ev ev = {0};
	int rc;
	if ((d->flags & DMA_F_UNCHECKED) && refusal(c->node, d, &ev) && (rc = emu_core_tk_event(c, &ev)))
		return rc;
	ev = (struct emu_tk_ev){.type = EMU_TK_DMA, .node = d->kind == DMA_COPY ? c->node->rank : d->node,
			       .core = d->core, .fifo = f->index, .kind = kinds[d->kind],
			       .inj = d->inj_counter, .id = d->tag,
			       .rec = d->counter, .hints = d->hints, .len = d->len, .ready = c->vt,
			       .delta = (int64_t)msg_name(c, d)};
	return emu_core_tk_event(c, &ev);
}

int dma_injfifo_post(dma_injfifo_t *f, const struct dma_desc *d, unsigned flags)
{
	struct torus_side *side;
	int rc;

	if (!f || !d || (flags & ~DMA_POST_WAIT))
		return -EINVAL;
	emu_core_t *c = f->core;
	if ((rc = validate(c, d)))
		return rc;
	if (emu_core_promised(c))
		return -EBUSY; /* emu_core_expect */
	if (emu_core_planning(c)) {
		/* a program's step being told (emu_core_step_begin): its event and cost only */
		c->vt += c->node->params->inj_overhead_ps;
		return tk_post_event(c, f, d);
	}
	emu_chaos(&c->chaos);
	struct torus_packet *slot;
	while (!(slot = torus_ring_reserve(&f->view, &side))) {
		if (!(flags & DMA_POST_WAIT) && !c->tk) /* host buffers change nothing; wait */
			return -EAGAIN;
		struct emu_wait w = {fifo_has_room, fifo_arm, NULL, f};
		if ((rc = emu_core_block(c, &w, -1)) < 0)
			return rc;
	}
	if (c->tk && (rc = emu_core_tk_pace(c)))
		return rc;
	c->vt += c->node->params->inj_overhead_ps;
	if (c->tk && (rc = tk_post_event(c, f, d)))
		return rc;
	struct dma_wire_desc *w = (struct dma_wire_desc *)slot;
	w->d = *d;
	/* the engine passes ready on in the packets' sideband, where
	 * a memory-FIFO message's packets carry its name */
	w->ready = c->tk && d->kind == DMA_MEMFIFO ? msg_name(c, d) : c->vt;
	if (c->tk && d->kind == DMA_MEMFIFO)
		c->dma->msgs++;
	w->src_core = c->index;
	torus_ring_commit(&f->view);
	torus_ring_publish_head(&f->view);
	/* after the head: pairs with the engine's clear-then-recheck (seq_cst) */
	atomic_fetch_or(&c->dma->nonempty, 1u << f->index);
	atomic_fetch_add_explicit(&c->shm->posted, 1, memory_order_release);
	atomic_store_explicit(&c->shm->vt, c->vt, memory_order_relaxed);
	atomic_store_explicit(&c->shm->progress, ++c->progress, memory_order_relaxed);
	if (!emu_engine_try_pass(c->node))
		emu_bell_ring(&c->node->me->bell);
	return 0;
}

int dma_injfifo_pending(dma_injfifo_t *f, uint32_t *n)
{
	if (!f || !n)
		return -EINVAL;
	emu_core_t *c = f->core;
	if (c->tk) {
		/* in virtual time, at the core's clock; a look that
		 * finds some costs poll_cost, so a polling loop advances */
		c->tk->qkey = f->index;
		int rc = emu_core_tk_answer(c, emu_core_tk_ask(c, EMU_TKQ_PENDING, 0));
		if (rc)
			return rc;
		*n = (uint32_t)c->tk->a_value;
		if (*n)
			emu_core_missed(c); /* still busy: an idle look */
		return 0;
	}
	*n = torus_ring_count(f->view.ring);
	return 0;
}
