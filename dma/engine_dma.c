/*
 * The DMA unit on the node's engine thread: takes descriptors from the
 * cores' injection FIFOs and packetises them, answers remote gets, and
 * deposits DMA packets that reach this node (memory-FIFO packets into a
 * core's reception FIFO, puts into registered memory with their counter).
 *
 * Time: the engine times nothing. Every packet of a descriptor carries its
 * post time (a memory-FIFO message: its name) in the sideband, and the
 * timekeeper simulates the transfer in virtual time (time/timekeeper.c): the
 * packets leave one after another, the links serialise them, a remote get's
 * data is ready when the request arrives, a local copy takes copy_bw.
 *
 * Puts, get requests and refused deposits never wait on the network: a get
 * request or a refusal becomes a job in an unbounded local queue, sent when
 * links allow, so the engine keeps consuming and the dateline argument still
 * holds. A memory-FIFO packet waits for room in its core's reception FIFO,
 * which is the core's to drain (README, "Drain your memory FIFO"); until it
 * does, that packet holds its link FIFO, as on Blue Gene.
 */
#include "dma_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int dma_node_setup(struct emu_node_rt *rt, char *err, size_t errlen)
{
	const struct torus_params *p = rt->params;
	struct dma_engine *e = calloc(1, sizeof(*e));
	if (!e || !(e->fifo = calloc((size_t)rt->ncores * p->inj_fifos, sizeof(*e->fifo))) ||
	    !(e->memfifo = calloc(rt->ncores, sizeof(*e->memfifo))) ||
	    !(e->peer = calloc(rt->first_core[rt->hdr->nnodes], sizeof(*e->peer)))) {
		if (e) {
			free(e->fifo);
			free(e->memfifo);
		}
		free(e);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	e->rc_id = e->cc_id = UINT32_MAX;
	e->rc_epoch = e->cc_epoch = UINT64_MAX; /* nothing remembered (see local_range) */
	for (uint32_t c = 0; c < rt->ncores; c++) {
		struct emu_core_shm *cs = emu_shm_core(&rt->shm, rt->me, c);
		struct dma_core_shm *d = dma_core_shm_of(&rt->shm, cs);
		torus_ring_view_init(&e->memfifo[c], &d->memfifo, rt->shm.base, TORUS_RING_PRODUCER);
		for (uint32_t i = 0; i < p->inj_fifos; i++) {
			struct dma_engine_fifo *f = &e->fifo[c * p->inj_fifos + i];
			torus_ring_view_init(&f->view, dma_shm_injfifo(rt->shm.base, d, i), rt->shm.base, TORUS_RING_CONSUMER);
			f->core_bell = &cs->bell;
		}
	}
	rt->dma = e;
	return 0;
}

void dma_node_teardown(struct emu_node_rt *rt)
{
	if (!rt->dma)
		return;
	free(rt->dma->fifo);
	free(rt->dma->memfifo);
	free(rt->dma->peer);
	free(rt->dma->replies);
	free(rt->dma->nacks);
	free(rt->dma->nack_dest);
	free(rt->dma);
	rt->dma = NULL;
}

int dma_core_setup(struct emu_node_rt *rt, emu_core_t *c, char *err, size_t errlen)
{
	const struct torus_params *p = rt->params;
	struct dma_core_local *d = calloc(1, sizeof(*d));
	if (!d || !(d->fifos = calloc(p->inj_fifos, sizeof(*d->fifos))) ||
	    !(d->region_base = calloc(p->dma_regions, sizeof(void *))) ||
	    !(d->watch = calloc(p->dma_counters, sizeof(*d->watch)))) {
		if (d) {
			free(d->fifos);
			free(d->region_base);
		}
		free(d);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	d->shm = dma_core_shm_of(&rt->shm, c->shm);
	torus_ring_view_init(&d->memfifo, &d->shm->memfifo, rt->shm.base, TORUS_RING_CONSUMER);
	emu_stash_init(&d->mstash, dma_memfifo_name);
	emu_stash_init(&d->astash, dma_memfifo_name);
	for (uint32_t i = 0; i < p->inj_fifos; i++) {
		d->fifos[i].core = c;
		d->fifos[i].index = i;
		torus_ring_view_init(&d->fifos[i].view, dma_shm_injfifo(rt->shm.base, d->shm, i), rt->shm.base,
				     TORUS_RING_PRODUCER);
	}
	c->dma = d;
	return 0;
}

void dma_core_teardown(emu_core_t *c)
{
	if (!c->dma)
		return;
	free(c->dma->fifos);
	free(c->dma->region_base);
	for (uint32_t i = 0; i < c->node->params->dma_counters; i++)
		dma_watch_free(atomic_load(&c->dma->watch[i]));
	free(c->dma->watch);
	emu_stash_free(&c->dma->mstash);
	emu_stash_free(&c->dma->astash);
	free(c->dma->fstash);
	free(c->dma);
	c->dma = NULL;
}

/* ------------------------------------------------------------ local queues */

static int grow(void **arr, uint32_t *cap, size_t elem, uint32_t need)
{
	if (need <= *cap)
		return 0;
	uint32_t ncap = *cap ? *cap * 2 : 16;
	void *n = realloc(*arr, (size_t)ncap * elem);
	if (!n)
		return -ENOMEM;
	*arr = n;
	*cap = ncap;
	return 0;
}

static void publish_pending(struct emu_node_rt *rt)
{
	struct dma_engine *e = rt->dma;
	atomic_store_explicit(&rt->me->jobs_pending, (e->nreplies - e->reply_head) + (e->nnacks - e->nack_head),
			      memory_order_release);
}

/* Tell the core `aux` names that its transfer was refused here. */
static void report_fault(struct emu_node_rt *rt, uint32_t aux, int error, uint32_t region, uint64_t offset,
			 uint32_t len)
{
	struct dma_engine *e = rt->dma;
	uint32_t cap = e->capnacks;
	if (grow((void **)&e->nacks, &e->capnacks, sizeof(*e->nacks), e->nnacks + 1) ||
	    grow((void **)&e->nack_dest, &cap, sizeof(*e->nack_dest), e->nnacks + 1)) {
		fprintf(stderr, "torus: node %u: out of memory for a fault report; fault dropped\n", rt->rank);
		return;
	}
	e->nacks[e->nnacks] = (struct dma_fault_rec){error, rt->rank, region, len, offset};
	e->nack_dest[e->nnacks] = aux;
	e->nnacks++;
	publish_pending(rt);
}

/* A deposit was refused: count it at the core that owns the region (or
 * core 0) and tell the sending core. */
static void refuse(struct emu_node_rt *rt, uint32_t aux, int error, uint32_t region, uint64_t offset, uint32_t len)
{
	uint32_t owner = region / rt->params->dma_regions;
	struct dma_core_shm *d = dma_core_shm_of(&rt->shm, emu_shm_core(&rt->shm, rt->me, owner < rt->ncores ? owner : 0));
	atomic_fetch_add(&d->bad_deposits, 1);
	report_fault(rt, aux, error, region, offset, len);
}

/* Is reception counter `id` (a wire id) allocated here? Remembered for the
 * rest of the engine iteration, as local_range remembers its region. */
static int counter_ok(struct emu_node_rt *rt, uint32_t id)
{
	struct dma_engine *e = rt->dma;
	uint64_t epoch = atomic_load_explicit(&rt->epoch, memory_order_relaxed);
	if (dma_counter_seen(e, id, epoch))
		return 1;
	uint32_t per = rt->params->dma_counters;
	if (id / per >= rt->ncores)
		return 0;
	struct dma_counter_shm *k = dma_shm_counter(rt->shm.base, rt->cores[id / per]->dma->shm, id % per);
	if (!atomic_load_explicit(&k->allocated, memory_order_acquire))
		return 0;
	e->cc_id = id;
	e->cc_epoch = epoch;
	return 1;
}

/*
 * Base address of [offset, offset+len) in region `id` of this node, or NULL
 * with *err set (checked at the moment of use: regions can go away).
 *
 * The region last looked up is remembered for the rest of the engine
 * iteration (rt->epoch) that looked it up: a burst of deposits into one
 * region checks it once. That is as safe as checking every time:
 * dma_mem_deregister clears `valid` and then waits (emu_engine_quiesce) for
 * the epoch to move past the one it saw after clearing, which is at least
 * the epoch of any lookup that still saw the region valid; the next
 * iteration looks again and finds it gone.
 */
static int region_lookup(struct emu_node_rt *rt, uint32_t id, uint64_t epoch, int *err)
{
	struct dma_engine *e = rt->dma;
	uint32_t per = rt->params->dma_regions, owner = id / per;
	if (id == UINT32_MAX || owner >= rt->ncores) {
		*err = DMA_ERR_REGION;
		return -1;
	}
	struct dma_core_local *dl = rt->cores[owner]->dma;
	struct dma_region_shm *r = dma_shm_region(rt->shm.base, dl->shm, id % per);
	/* seq_cst: pairs with the seq_cst store in dma_mem_deregister, ordered
	 * against the epoch bump of this engine iteration */
	if (!atomic_load(&r->valid)) {
		*err = DMA_ERR_REGION;
		return -1;
	}
	e->rc_id = id;
	e->rc_epoch = epoch;
	e->rc_size = atomic_load_explicit(&r->size, memory_order_relaxed);
	e->rc_base = dl->region_base[id % per];
	return 0;
}

static inline uint8_t *local_range(struct emu_node_rt *rt, uint32_t id, uint64_t offset, uint64_t len, int *err)
{
	struct dma_engine *e = rt->dma;
	uint64_t epoch = atomic_load_explicit(&rt->epoch, memory_order_relaxed); /* ours: we bump it */
	if ((id != e->rc_id || epoch != e->rc_epoch) && region_lookup(rt, id, epoch, err))
		return NULL;
	if (offset > e->rc_size || len > e->rc_size - offset) {
		*err = DMA_ERR_RANGE;
		return NULL;
	}
	return e->rc_base + offset;
}

/* --------------------------------------------------------------- deposits */

static int deliver_memfifo(struct emu_node_rt *rt, const struct torus_packet *pkt, const struct torus_side *side)
{
	uint32_t core = pkt->hdr.sw.bytes[4];
	struct torus_side *dside;
	if (core >= rt->ncores) {
		refuse(rt, side->aux, DMA_ERR_DEST, UINT32_MAX, 0, pkt->hdr.len);
		return 1;
	}
	struct emu_core_shm *cs = rt->ecore[core].shm;
	if (atomic_load_explicit(&cs->state, memory_order_acquire) == EMU_CORE_DONE) {
		atomic_store_explicit(&rt->me->orphaned, ++rt->orphaned, memory_order_relaxed);
		return 1;
	}
	uint32_t dispatch = pkt->hdr.sw.bytes[5];
	struct dma_core_shm *d = dma_core_shm_of(&rt->shm, cs);
	if (dispatch && !(atomic_load(&d->handlers[dispatch / 64]) & (1ull << (dispatch % 64)))) {
		refuse(rt, side->aux, DMA_ERR_HANDLER, UINT32_MAX, 0, pkt->hdr.len);
		return 1;
	}
	struct torus_ring_view *v = &rt->dma->memfifo[core];
	struct torus_packet *dst = torus_ring_reserve(v, &dside);
	if (!dst) {
		if (!torus_ring_mark_full(v)) {
			/* the core's release rings our bell; a core drains its
			 * FIFO whenever it waits, so wake it for that */
			emu_bell_ring(&cs->bell);
			return 0;
		}
		dst = torus_ring_reserve(v, &dside);
	}
	torus_pkt_copy(dst, pkt);
	*dside = *side;
	torus_ring_commit(v);
	emu_engine_mark_dirty(rt, v, &cs->bell);
	return 1;
}

static int deliver_put(struct emu_node_rt *rt, const struct torus_packet *pkt, const struct torus_side *side)
{
	uint32_t offset;
	uint16_t region, counter;
	int err;
	memcpy(&offset, &pkt->hdr.sw.bytes[0], 4);
	memcpy(&region, &pkt->hdr.sw.bytes[4], 2);
	memcpy(&counter, &pkt->hdr.sw.bytes[6], 2);
	uint32_t len = pkt->hdr.len;
	uint8_t *dst = local_range(rt, region, offset, len, &err);
	if (dst && !counter_ok(rt, counter)) {
		dst = NULL;
		err = DMA_ERR_COUNTER;
	}
	if (!dst) {
		/* A put that reaches a core whose program has returned (whose
		 * regions it closed) is lost, as a raw packet to a finished
		 * core is: counted, and no fault. Whether it arrives before or
		 * after the close is the host's timing, and the timekeeper
		 * times no fault for it (dma/injfifo.c, refusal). */
		uint32_t owner = region / rt->params->dma_regions;
		if (owner < rt->ncores &&
		    atomic_load(&dma_core_shm_of(&rt->shm, emu_shm_core(&rt->shm, rt->me, owner))->closed)) {
			atomic_store_explicit(&rt->me->orphaned, ++rt->orphaned, memory_order_relaxed);
			return 1;
		}
		/* never a byte outside a live region, nor one nobody counts */
		refuse(rt, side->aux, err, region, offset, len);
		return 1;
	}
	dma_tsan_acquire(&rt->hdr->barrier[0]);
	torus_payload_copy(dst, pkt->payload, len);
	dma_tsan_release(&rt->hdr->barrier[0]);
	if (counter != WIRE_NO_COUNTER)
		dma_counter_sub(rt, counter, len, side->vt);
	return 1;
}

static int deliver_getreq(struct emu_node_rt *rt, const struct torus_packet *pkt, const struct torus_side *side)
{
	struct dma_getreq q;
	struct dma_engine *e = rt->dma;
	int err;
	if (pkt->hdr.len != sizeof(q)) {
		refuse(rt, side->aux, DMA_ERR_RANGE, UINT32_MAX, 0, pkt->hdr.len);
		return 1;
	}
	memcpy(&q, pkt->payload, sizeof(q));
	if (!dma_hints_ok(rt, q.hints)) {
		/* the reply would be routed by them */
		refuse(rt, side->aux, DMA_ERR_DEST, q.region, q.offset, (uint32_t)q.len);
		return 1;
	}
	if (!local_range(rt, q.region, q.offset, q.len, &err)) {
		refuse(rt, side->aux, err, q.region, q.offset, (uint32_t)q.len);
		return 1;
	}
	if (grow((void **)&e->replies, &e->capreplies, sizeof(*e->replies), e->nreplies + 1)) {
		refuse(rt, side->aux, -ENOMEM, q.region, q.offset, (uint32_t)q.len);
		return 1;
	}
	struct dma_job *j = &e->replies[e->nreplies++];
	memset(j, 0, sizeof(*j));
	dma_desc_put(&j->d, dma_aux_node(side->aux), NULL, q.len, q.reply_region, q.reply_offset, q.reply_counter,
		     DMA_NO_COUNTER);
	j->d.hints = q.hints;
	j->d.tag = q.tag;
	j->src_region = q.region;
	j->src_offset = q.offset;
	j->ready = side->vt;
	j->src_core = dma_aux_core(side->aux);
	/* faults about the reply's deposit go back to the requester */
	j->aux = side->aux;
	publish_pending(rt);
	return 1;
}

static int deliver_fault(struct emu_node_rt *rt, const struct torus_packet *pkt)
{
	uint32_t core = pkt->hdr.sw.bytes[4];
	if (core >= rt->ncores || pkt->hdr.len < sizeof(struct dma_fault_rec)) {
		/* a fault about a fault is never sent: count it */
		atomic_store_explicit(&rt->me->orphaned, ++rt->orphaned, memory_order_relaxed);
		return 1;
	}
	struct emu_core_shm *cs = rt->ecore[core].shm;
	struct dma_core_shm *d = dma_core_shm_of(&rt->shm, cs);
	uint32_t head = atomic_load_explicit(&d->fault_head, memory_order_relaxed);
	if (head - atomic_load_explicit(&d->fault_tail, memory_order_acquire) >= DMA_FAULT_SLOTS) {
		atomic_fetch_add(&d->faults_lost, 1);
		return 1;
	}
	memcpy(&d->faults[head % DMA_FAULT_SLOTS], pkt->payload, sizeof(struct dma_fault_rec));
	/* pairs with the acquire load in dma_fault_next */
	atomic_store_explicit(&d->fault_head, head + 1, memory_order_release);
	emu_bell_ring(&cs->bell);
	return 1;
}

int dma_engine_deliver(struct emu_node_rt *rt, const struct torus_packet *pkt, const struct torus_side *side)
{
	if (pkt->hdr.len > TORUS_MAX_PAYLOAD) {
		/* longer than a slot holds: a damaged header */
		refuse(rt, side->aux, DMA_ERR_RANGE, UINT32_MAX, 0, pkt->hdr.len);
		return 1;
	}
	switch (torus_pkt_kind(&pkt->hdr)) {
	case DMA_PKT_MEMFIFO:
		return deliver_memfifo(rt, pkt, side);
	case DMA_PKT_PUT:
		return deliver_put(rt, pkt, side);
	case DMA_PKT_GETREQ:
		return deliver_getreq(rt, pkt, side);
	case DMA_PKT_FAULT:
		return deliver_fault(rt, pkt);
	default:
		/* corrupted kind: count it rather than stall the network */
		atomic_store_explicit(&rt->me->orphaned, ++rt->orphaned, memory_order_relaxed);
		return 1;
	}
}

/* -------------------------------------------------------------- injection */

static void count_emitted(struct emu_node_rt *rt, uint32_t n)
{
	struct dma_engine *e = rt->dma;
	e->injected += n;
	atomic_store_explicit(&rt->me->emitted, e->injected, memory_order_release);
}

/* Emit packets of a job until it is done, blocked, or the batch is used;
 * returns packets emitted. */
static uint32_t run_job(struct emu_node_rt *rt, struct dma_job *j, int *done)
{
	const struct dma_desc *d = &j->d;
	uint32_t pay = torus_params_payload(rt->params), n = 0;
	struct torus_pkt_hdr h;

	*done = 0;
	if (d->kind == DMA_COPY) {
		int err;
		uint8_t *dst = local_range(rt, d->region, d->offset, d->len, &err);
		*done = 1;
		if (dst && d->counter != DMA_NO_COUNTER && (d->counter > DMA_MAX_IDS || !counter_ok(rt, d->counter))) {
			dst = NULL;
			err = DMA_ERR_COUNTER;
		}
		if (!dst) {
			/* deregistered since it was posted: report, write nothing */
			refuse(rt, j->aux, err, d->region, d->offset, (uint32_t)d->len);
			return 1;
		}
		if (d->len)
			memcpy(dst, j->src, d->len);
		torus_vt_t t = j->ready + torus_copy_time(rt->params, d->len);
		dma_counter_sub(rt, d->counter, d->len, t);
		return 1;
	}
	if (j->done == 0) {
		/* posting checked this, unless the slot was written some other
		 * way; a remote get's reply comes from another node's request */
		int err = dma_desc_fits_wire(d);
		if (err) {
			report_fault(rt, j->aux, err, d->region, d->offset, (uint32_t)d->len);
			*done = 1;
			return 1;
		}
	}
	memset(&h, 0, sizeof(h));
	h.dest = d->node;
	h.hints = d->hints;
	if (d->kind == DMA_GET) {
		struct dma_getreq q = {d->region, d->reply_region, d->offset, d->reply_offset, d->len, d->counter,
				       d->tag, d->hints, {0}};
		h.len = sizeof(q);
		h.vc_kind = (uint8_t)(DMA_PKT_GETREQ << 4);
		if (!emu_engine_emit(rt, &h, &q, j->ready, d->tag, j->aux))
			return 0;
		count_emitted(rt, 1);
		*done = 1;
		return 1;
	}
	/* the fields every packet of the job shares; per packet only the
	 * length and the offset (memory FIFO: index and last flag) change */
	uint16_t region = (uint16_t)d->region;
	uint16_t counter = d->counter == DMA_NO_COUNTER ? WIRE_NO_COUNTER : (uint16_t)d->counter;
	if (d->kind == DMA_MEMFIFO) {
		h.sw.bytes[4] = (uint8_t)d->core;
		h.sw.bytes[5] = (uint8_t)d->dispatch;
		memcpy(&h.sw.bytes[6], &d->user, 2);
	} else {
		h.vc_kind = (uint8_t)(DMA_PKT_PUT << 4);
		memcpy(&h.sw.bytes[4], &region, 2);
		memcpy(&h.sw.bytes[6], &counter, 2);
	}
	const int local = d->node == rt->rank;
	struct emu_route r = {0};
	if (!local)
		emu_engine_route(rt, d->node, d->hints, &r);
	/* the job's progress in locals: the slot stores below may alias *j */
	uint64_t jdone = j->done, total = d->len;
	/* every packet keeps the post time (a memory-FIFO message's name) */
	const torus_vt_t vt = j->ready;
	const uint32_t inj = d->inj_counter, tag = d->tag, aux = j->aux;
	const int memfifo = d->kind == DMA_MEMFIFO;
	while (n < rt->batch) {
		uint64_t rest = total - jdone;
		const uint8_t *src;
		if (j->src_region == UINT32_MAX) {
			src = j->src ? j->src + jdone : NULL; /* NULL: an empty message */
		} else {
			/* a remote get reads registered memory, which can go away */
			int err;
			if (!(src = local_range(rt, j->src_region, j->src_offset + jdone, rest, &err))) {
				refuse(rt, aux, err, j->src_region, j->src_offset + jdone, (uint32_t)rest);
				j->last_len = 0;
				*done = 1;
				break;
			}
		}
		uint32_t len = rest > pay ? pay : (uint32_t)rest;
		/* per packet: the memory FIFO index and last flag, or the put's offset */
		uint32_t field = memfifo ? (uint32_t)(jdone / pay) : (uint32_t)(d->offset + jdone);
		uint8_t vc_kind = memfifo ? (uint8_t)(DMA_PKT_MEMFIFO << 4 | (len == rest ? DMA_PKT_LAST : 0)) : h.vc_kind;
		if (local) {
			h.len = (uint8_t)len;
			h.vc_kind = vc_kind;
			memcpy(&h.sw.bytes[0], &field, 4);
			if (!emu_engine_emit(rt, &h, src, vt, tag, aux))
				break;
		} else {
			/* the common case: straight into the link FIFO's slot. The
			 * template h is not written in this loop, and the fields
			 * that change go straight to the slot: copying a header just
			 * patched on the stack would wait, store forwarding failing,
			 * for every slot store before it to reach the cache */
			struct torus_side *side;
			struct torus_packet *slot = emu_route_reserve(&r, &side);
			if (!slot)
				break;
			slot->hdr = h;
			slot->hdr.len = (uint8_t)len;
			slot->hdr.vc_kind = (uint8_t)((vc_kind & ~1u) | r.vc);
			memcpy(&slot->hdr.sw.bytes[0], &field, 4);
			torus_payload_copy(slot->payload, src, len);
			emu_route_send(&r, slot, side, vt, tag, aux);
		}
		jdone += len;
		n++;
		if (jdone == total) {
			/* the caller retires the job first, then retire_counter(): a
			 * zero injection counter means the descriptor left its FIFO */
			j->last_len = len;
			*done = 1;
			break;
		}
		if (len && inj != DMA_NO_COUNTER)
			dma_counter_sub(rt, inj, len, vt);
	}
	if (n) {
		j->done = jdone;
		count_emitted(rt, n);
		if (!local)
			emu_route_done(rt, &r);
	}
	return n;
}

/* A remote get's data leaving this node (see dma_tsan_acquire). */
static uint32_t run_reply(struct emu_node_rt *rt, struct dma_job *j, int *done)
{
	dma_tsan_acquire(&rt->hdr->barrier[0]);
	uint32_t n = run_job(rt, j, done);
	dma_tsan_release(&rt->hdr->barrier[0]);
	return n;
}

static void retire_counter(struct emu_node_rt *rt, const struct dma_job *j)
{
	if (j->last_len && j->d.inj_counter != DMA_NO_COUNTER)
		dma_counter_sub(rt, j->d.inj_counter, j->last_len, j->ready);
}

static uint32_t inject_fifo(struct emu_node_rt *rt, struct dma_engine_fifo *f)
{
	struct torus_side *side;
	uint32_t moved = 0;
	while (moved < rt->batch) {
		if (!f->active) {
			struct torus_packet *slot = torus_ring_peek(&f->view, &side);
			if (!slot)
				break;
			const struct dma_wire_desc *w = (const struct dma_wire_desc *)slot;
			memset(&f->job, 0, sizeof(f->job));
			f->job.d = w->d;
			f->job.ready = w->ready;
			f->job.src_core = w->src_core;
			f->job.src = w->d.src;
			f->job.aux = dma_aux(rt->rank, w->src_core);
			f->job.src_region = UINT32_MAX;
			f->active = 1;
		}
		int done;
		uint32_t n = run_job(rt, &f->job, &done);
		moved += n;
		if (!done)
			break;
		f->active = 0;
		torus_ring_release(&f->view);
		if (torus_ring_publish_tail(&f->view))
			emu_bell_ring(f->core_bell);
		atomic_fetch_add_explicit(&rt->me->desc_done, 1, memory_order_release);
		retire_counter(rt, &f->job);
		if (!n)
			moved++; /* a finished empty job still counts as progress */
	}
	return moved;
}

int dma_engine_backlog(const struct emu_node_rt *rt)
{
	const struct dma_engine *e = rt->dma;
	if (e->nack_head < e->nnacks || e->reply_head < e->nreplies)
		return 1;
	for (uint32_t c = 0; c < rt->ncores; c++)
		if (atomic_load_explicit(&rt->cores[c]->dma->nonempty, memory_order_relaxed))
			return 1;
	return 0;
}

uint32_t dma_engine_inject(struct emu_node_rt *rt)
{
	struct dma_engine *e = rt->dma;
	uint32_t moved = 0;

	while (e->nack_head < e->nnacks) {
		struct torus_pkt_hdr h;
		memset(&h, 0, sizeof(h));
		h.dest = dma_aux_node(e->nack_dest[e->nack_head]);
		h.len = sizeof(struct dma_fault_rec);
		h.vc_kind = (uint8_t)(DMA_PKT_FAULT << 4);
		h.sw.bytes[4] = (uint8_t)dma_aux_core(e->nack_dest[e->nack_head]);
		if (!emu_engine_emit(rt, &h, &e->nacks[e->nack_head], 0, 0, dma_aux(rt->rank, 0)))
			break;
		count_emitted(rt, 1);
		e->nack_head++;
		moved++;
	}
	if (e->nack_head == e->nnacks)
		e->nack_head = e->nnacks = 0;
	while (e->reply_head < e->nreplies) {
		int done;
		struct dma_job *rj = &e->replies[e->reply_head];
		moved += run_reply(rt, rj, &done);
		if (!done)
			break;
		retire_counter(rt, &e->replies[e->reply_head]);
		e->reply_head++;
	}
	if (e->reply_head == e->nreplies)
		e->reply_head = e->nreplies = 0;
	/* only the FIFOs their cores marked non-empty */
	uint32_t per = rt->params->inj_fifos;
	for (uint32_t c = 0; c < rt->ncores; c++) {
		_Atomic uint32_t *mask = &rt->cores[c]->dma->nonempty;
		uint32_t m = atomic_load_explicit(mask, memory_order_relaxed);
		while (m) {
			uint32_t i = (uint32_t)__builtin_ctz(m);
			struct dma_engine_fifo *f = &e->fifo[c * per + i];
			struct torus_side *side;
			m &= m - 1;
			moved += inject_fifo(rt, f);
			if (f->active || torus_ring_peek(&f->view, &side))
				continue;
			/* empty: clear its bit, then look again, in case the core
			 * posted in between (it sets the bit after publishing) */
			atomic_fetch_and(mask, ~(1u << i));
			if (torus_ring_peek(&f->view, &side))
				atomic_fetch_or(mask, 1u << i);
		}
	}
	if (moved)
		publish_pending(rt);
	return moved;
}
