/*
 * Memory-FIFO reception: handlers by dispatch id, polling, and the fault
 * queue through which a destination reports refused deposits back to the
 * sending core.
 */
#include "dma_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int dma_handler_register(emu_core_t *c, uint32_t dispatch, dma_recv_fn fn, void *arg)
{
	if (!c || dispatch == 0 || dispatch > 255 || !fn)
		return -EINVAL;
	c->dma->handlers[dispatch].fn = fn;
	c->dma->handlers[dispatch].arg = arg;
	/* senders check this bit; release pairs with their acquire */
	atomic_fetch_or_explicit(&c->dma->shm->handlers[dispatch / 64], 1ull << (dispatch % 64), memory_order_release);
	return 0;
}

/* A memory-FIFO packet's description, from (src_node, src_core), arrived at `arrival`. */
static void packet_info(emu_core_t *c, const struct torus_packet *pkt, uint32_t src_node, uint32_t src_core,
			torus_vt_t arrival, struct dma_recv_info *info)
{
	uint32_t index;
	info->src_node = src_node;
	info->src_core = src_core;
	info->dispatch = pkt->hdr.sw.bytes[5];
	memcpy(&info->user, &pkt->hdr.sw.bytes[6], sizeof(info->user));
	memcpy(&index, &pkt->hdr.sw.bytes[0], sizeof(index));
	info->offset = (uint64_t)index * torus_params_payload(c->node->params);
	info->len = pkt->hdr.len;
	info->last = (pkt->hdr.vc_kind & DMA_PKT_LAST) != 0;
	info->arrival = arrival;
	info->key = 0;
	info->index = index;
}

static void fill_info(emu_core_t *c, const struct torus_packet *pkt, const struct torus_side *side,
		      struct dma_recv_info *info)
{
	packet_info(c, pkt, dma_aux_node(side->aux), dma_aux_core(side->aux), side->vt, info);
	if (side->vt > c->vt)
		c->vt = side->vt;
}

static void consumed(emu_core_t *c)
{
	struct dma_core_local *d = c->dma;
	torus_ring_release(&d->memfifo);
	if (torus_ring_publish_tail(&d->memfifo))
		emu_bell_ring(&c->node->me->bell);
	atomic_store_explicit(&c->shm->vt, c->vt, memory_order_relaxed);
	atomic_store_explicit(&c->shm->progress, ++c->progress, memory_order_relaxed);
}

/* ------------------------------------------------------ the timekeeper
 *
 * The timekeeper publishes the memory-FIFO packets each core receives in
 * arrival order (virtual time), named by sender, message (its post time,
 * which the packets carry in their sideband) and index. A core takes the
 * earliest one that arrived by its clock; the bytes come from its stash,
 * into which every wait drains the reception FIFO (dma/unit.c). */

/* A stashed packet's name: its message's post time, sender and index. */
static uint64_t mname(torus_vt_t vt, uint32_t aux, uint32_t index) { return emu_stash_mix(vt, (uint64_t)aux << 32 | index); }

static uint32_t mindex_of(const struct torus_packet *pkt)
{
	uint32_t i;
	memcpy(&i, &pkt->hdr.sw.bytes[0], sizeof(i));
	return i;
}

uint64_t dma_memfifo_name(const struct torus_packet *pkt, const struct torus_side *side)
{
	return mname(side->vt, side->aux, mindex_of(pkt));
}

static int mname_is(const struct emu_stash *s, uint32_t slot, const void *key)
{
	const struct emu_tk_arr *a = key;
	uint32_t aux = dma_aux((uint32_t)(a->src >> 8), (uint32_t)(a->src & 0xFF));
	return s->side[slot].vt == a->id && s->side[slot].aux == aux && mindex_of(&s->pkt[slot]) == (uint32_t)a->index;
}

struct mfetch {
	emu_core_t *c;
	const struct emu_tk_arr *a;
	int idx;
};

static int mfetched(void *arg)
{
	struct mfetch *f = arg;
	uint32_t aux = dma_aux((uint32_t)(f->a->src >> 8), (uint32_t)(f->a->src & 0xFF));
	f->idx = emu_stash_find(&f->c->dma->mstash, mname(f->a->id, aux, (uint32_t)f->a->index), mname_is, f->a);
	return f->idx >= 0;
}

/* The earliest packet that arrived by the core's clock: 1 and *a, *pkt
 * (in the stash until exact_taken), 0 if none did, or a negative errno. */
static int exact_next(emu_core_t *c, struct emu_tk_arr *a, struct torus_packet **pkt)
{
	int r = emu_core_tk_next(c, EMU_TK_Q_MEMFIFO, a);
	if (r <= 0)
		return r;
	struct mfetch f = {c, a, -1};
	struct emu_wait w = {mfetched, NULL, NULL, &f};
	if (!(r = mfetched(&f)) && (r = emu_core_block(c, &w, -1)) <= 0)
		return r < 0 ? r : -ETIMEDOUT;
	*pkt = &c->dma->mstash.pkt[f.idx];
	return 1;
}

static void exact_info(emu_core_t *c, const struct torus_packet *pkt, const struct emu_tk_arr *a,
		       struct dma_recv_info *info)
{
	packet_info(c, pkt, (uint32_t)(a->src >> 8), (uint32_t)(a->src & 0xFF), a->t, info);
}

/* ------------------------------------------------ messages sent in any order
 *
 * they are drained into their own stash (dma/unit.c) and never
 * queue at the timekeeper for their turn: a core handles the ones that are
 * here, untimed, and its clock meets their arrival at dma_recv_expect. */

int dma_core_drain(emu_core_t *c)
{
	return emu_stash_drain_split(c->node, &c->dma->mstash, &c->dma->astash, EMU_TK_MSG_ANY, &c->dma->memfifo);
}

/* Up to max of them, in the order they came (a sender's messages stay in
 * the order it sent them, as its one route keeps them), taken out a few
 * at a time: a handler may drain the FIFO into the stash. */
static int poll_any_exact(emu_core_t *c, unsigned max, unsigned *handled)
{
	enum { CHUNK = 8 };
	struct emu_stash *s = &c->dma->astash;
	unsigned n = 0;
	int rc = dma_core_drain(c);
	if (rc < 0)
		return rc;
	rc = 0;
	while (n < max && s->n && !rc) {
		struct torus_packet pkt[CHUNK];
		struct torus_side side[CHUNK];
		uint32_t k = s->n < CHUNK ? s->n : CHUNK;
		if (k > max - n)
			k = max - n;
		for (uint32_t i = 0; i < k; i++) {
			torus_pkt_copy(&pkt[i], &s->pkt[i]);
			side[i] = s->side[i];
		}
		emu_stash_remove_front(s, k);
		for (uint32_t i = 0; i < k; i++) {
			struct dma_recv_info info;
			packet_info(c, &pkt[i], dma_aux_node(side[i].aux), dma_aux_core(side[i].aux), 0, &info);
			info.key = side[i].vt & ~EMU_TK_MSG_ANY;
			struct dma_handler *h = &c->dma->handlers[info.dispatch];
			n++;
			/* (the destination refuses a dispatch id without a
			 * handler; after a handler's error the job ends, and
			 * the rest of the chunk with it) */
			if (h->fn && (rc = h->fn(c, &info, pkt[i].payload, h->arg)) < 0)
				break;
			rc = 0;
		}
	}
	if (n)
		atomic_store_explicit(&c->shm->progress, ++c->progress, memory_order_relaxed);
	*handled = n;
	return rc;
}

static int any_ready(void *arg)
{
	emu_core_t *c = arg;
	return c->dma->astash.n != 0;
}

int dma_recfifo_poll_any_order(emu_core_t *c, unsigned max, unsigned *handled)
{
	if (!c || !max || !handled)
		return -EINVAL;
	if (!c->tk)
		return dma_recfifo_poll(c, max, handled);
	*handled = 0;
	if (c->dma->polling)
		return -EBUSY;
	c->dma->polling = 1;
	int rc = poll_any_exact(c, max, handled);
	c->dma->polling = 0;
	return rc;
}

int dma_recfifo_wait_any_order(emu_core_t *c, int timeout_ms)
{
	if (!c)
		return -EINVAL;
	if (!c->tk)
		return dma_recfifo_wait(c, timeout_ms);
	struct emu_wait w = {any_ready, NULL, NULL, c};
	int r = emu_core_block(c, &w, timeout_ms);
	return r == 0 ? -ETIMEDOUT : r < 0 ? r : 0;
}

int dma_recv_expect(emu_core_t *c, uint32_t src_node, uint64_t key, uint32_t index)
{
	if (!c || key >> 63 || src_node >= c->node->hdr->nnodes)
		return -EINVAL;
	if (!c->tk)
		return 0;
	return emu_core_wait_packet(c, src_node, EMU_TK_MSG_ANY | key, index);
}

static void exact_taken(emu_core_t *c, const struct torus_packet *pkt)
{
	uint32_t slot = (uint32_t)(pkt - c->dma->mstash.pkt);
	emu_stash_remove(&c->dma->mstash, slot);
	emu_core_tk_take(c, EMU_TK_Q_MEMFIFO);
	atomic_store_explicit(&c->shm->vt, c->vt, memory_order_relaxed);
	atomic_store_explicit(&c->shm->progress, ++c->progress, memory_order_relaxed);
}

static int next_exact(emu_core_t *c, struct dma_recv_info *info, void *buf, size_t cap)
{
	struct emu_tk_arr a;
	struct torus_packet *pkt;
	int r = exact_next(c, &a, &pkt);
	if (r <= 0) {
		if (r == 0)
			emu_core_missed(c); /* a poll that found nothing */
		return r < 0 ? r : -EAGAIN;
	}
	if (pkt->hdr.len > cap)
		return -EMSGSIZE;
	exact_info(c, pkt, &a, info);
	if (pkt->hdr.len)
		memcpy(buf, pkt->payload, pkt->hdr.len);
	exact_taken(c, pkt);
	return 0;
}

static int poll_exact(emu_core_t *c, unsigned max, unsigned *handled)
{
	int rc = 0;
	unsigned n = 0;
	while (n < max) {
		struct emu_tk_arr a;
		struct torus_packet *sp, pkt;
		struct dma_recv_info info;
		if ((rc = exact_next(c, &a, &sp)) <= 0)
			break;
		struct dma_handler *h = &c->dma->handlers[sp->hdr.sw.bytes[5]];
		if (!h->fn) {
			rc = n ? 0 : -ENOENT; /* a polled packet (dispatch 0): use dma_recfifo_next */
			break;
		}
		/* the handler may wait, and a wait drains into the stash */
		torus_pkt_copy(&pkt, sp);
		exact_info(c, &pkt, &a, &info);
		exact_taken(c, sp);
		if ((rc = h->fn(c, &info, pkt.payload, h->arg)) < 0)
			break;
		rc = 0;
		n++;
	}
	if (!n && !rc)
		emu_core_missed(c); /* a poll that found nothing */
	*handled = n;
	return rc < 0 ? rc : 0;
}

/* ------------------------------------------------------------ recfifo */

int dma_recfifo_next(emu_core_t *c, struct dma_recv_info *info, void *buf, size_t cap)
{
	struct torus_side *side;
	if (!c || !info || (cap && !buf))
		return -EINVAL;
	if (c->tk)
		return next_exact(c, info, buf, cap);
	struct torus_packet *pkt = torus_ring_peek(&c->dma->memfifo, &side);
	if (!pkt)
		return -EAGAIN;
	if (pkt->hdr.len > cap)
		return -EMSGSIZE;
	fill_info(c, pkt, side, info);
	if (pkt->hdr.len)
		memcpy(buf, pkt->payload, pkt->hdr.len);
	consumed(c);
	return 0;
}

int dma_recfifo_poll(emu_core_t *c, unsigned max, unsigned *handled)
{
	struct torus_side *side;
	struct dma_recv_info info;
	int n = 0, rc = 0;
	if (!c || !max || !handled)
		return -EINVAL;
	*handled = 0;
	if (c->dma->polling)
		return -EBUSY; /* called from a handler: the packet it handles is not released yet */
	c->dma->polling = 1;
	if (c->tk) {
		/* those sent in any order first, uncounted: they take no time
		 * here, and how many are here is no outcome of virtual time */
		unsigned any = 0;
		rc = poll_any_exact(c, UINT32_MAX, &any);
		if (!rc)
			rc = poll_exact(c, max, handled);
		c->dma->polling = 0;
		return rc;
	}
	while ((unsigned)n < max) {
		struct torus_packet *pkt = torus_ring_peek(&c->dma->memfifo, &side);
		if (!pkt)
			break;
		struct dma_handler *h = &c->dma->handlers[pkt->hdr.sw.bytes[5]];
		if (!h->fn) {
			rc = n ? 0 : -ENOENT; /* a polled packet (dispatch 0): use dma_recfifo_next */
			break;
		}
		fill_info(c, pkt, side, &info);
		rc = h->fn(c, &info, pkt->payload, h->arg);
		consumed(c);
		if (rc < 0)
			break;
		rc = 0;
		n++;
	}
	c->dma->polling = 0;
	*handled = (unsigned)n;
	return rc < 0 ? rc : 0;
}

static int memfifo_ready(void *arg)
{
	emu_core_t *c = arg;
	return torus_ring_count(c->dma->memfifo.ring) != 0;
}

int dma_recfifo_expect(emu_core_t *c, uint64_t packets)
{
	return emu_core_promise(c, EMU_TK_Q_MEMFIFO, packets);
}

int dma_recfifo_expecting(const emu_core_t *c)
{
	return c && emu_core_promised(c);
}

int dma_recfifo_wait(emu_core_t *c, int timeout_ms)
{
	if (!c)
		return -EINVAL;
	if (c->tk) {
		/* the timeout is in virtual time */
		struct emu_tk_arr a;
		int r = emu_core_tk_wait_arrival(c, EMU_TK_Q_MEMFIFO, emu_core_tk_deadline(c, timeout_ms), &a);
		return r == 0 ? -ETIMEDOUT : r < 0 ? r : 0;
	}
	struct emu_wait w = {memfifo_ready, NULL, NULL, c};
	int r = emu_core_block(c, &w, timeout_ms);
	return r == 0 ? -ETIMEDOUT : r < 0 ? r : 0;
}

/*
 * the faults come from the timekeeper, which times them (the
 * refused deposit, then hop_latency per hop back to this core). The
 * engine's report of the same fault is waited for too: it proves that the
 * refused bytes have left this node's memory, as a fault does on the
 * hardware (the program may reuse the buffer). Reports with the same
 * fields are interchangeable.
 */
struct fault_match {
	emu_core_t *c;
	const struct dma_fault *want;
};

static int fault_matched(void *arg)
{
	struct fault_match *fm = arg;
	struct dma_core_local *l = fm->c->dma;
	struct dma_core_shm *d = l->shm;
	uint32_t tail = atomic_load_explicit(&d->fault_tail, memory_order_relaxed);
	/* pairs with the engine's release store of fault_head */
	for (uint32_t head = atomic_load_explicit(&d->fault_head, memory_order_acquire); tail != head; tail++) {
		if (l->nfstash == l->capfstash) {
			uint32_t nc = l->capfstash ? 2 * l->capfstash : 16;
			struct dma_fault_rec *n = realloc(l->fstash, nc * sizeof(*n));
			if (!n)
				return -ENOMEM;
			l->fstash = n;
			l->capfstash = nc;
		}
		l->fstash[l->nfstash++] = d->faults[tail % DMA_FAULT_SLOTS];
		atomic_store_explicit(&d->fault_tail, tail + 1, memory_order_release);
	}
	const struct dma_fault *w = fm->want;
	for (uint32_t i = 0; i < l->nfstash; i++) {
		const struct dma_fault_rec *r = &l->fstash[i];
		if (r->error == w->error && r->node == w->node && r->region == w->region && r->len == w->len &&
		    r->offset == w->offset) {
			l->fstash[i] = l->fstash[--l->nfstash];
			return 1;
		}
	}
	return 0;
}

static void fault_of(const struct emu_tk_arr *a, struct dma_fault *f)
{
	f->error = (int)(int32_t)(uint32_t)(a->src >> 32);
	f->node = (uint32_t)a->src;
	f->region = (uint32_t)(a->index >> 32);
	f->len = (uint32_t)a->index;
	f->offset = a->id;
}

static int fault_exact(emu_core_t *c, struct dma_fault *f, int wait, int timeout_ms)
{
	struct emu_tk_arr a;
	int r = wait ? emu_core_tk_wait_arrival(c, EMU_TK_Q_FAULT, emu_core_tk_deadline(c, timeout_ms), &a)
		     : emu_core_tk_next(c, EMU_TK_Q_FAULT, &a);
	if (r < 0)
		return r;
	if (r == 0) {
		if (wait)
			return -ETIMEDOUT;
		/* none by the core's clock: the look costs a poll */
		emu_core_missed(c);
		return -EAGAIN;
	}
	fault_of(&a, f);
	emu_core_tk_take(c, EMU_TK_Q_FAULT);
	struct fault_match fm = {c, f};
	struct emu_wait w = {fault_matched, NULL, NULL, &fm};
	r = emu_core_block(c, &w, -1);
	return r > 0 ? 0 : r < 0 ? r : -ETIMEDOUT;
}

int dma_fault_next(emu_core_t *c, struct dma_fault *f)
{
	if (!c || !f)
		return -EINVAL;
	if (c->tk)
		return fault_exact(c, f, 0, 0);
	struct dma_core_shm *d = c->dma->shm;
	uint32_t tail = atomic_load_explicit(&d->fault_tail, memory_order_relaxed);
	/* pairs with the engine's release store of fault_head */
	if (tail == atomic_load_explicit(&d->fault_head, memory_order_acquire))
		return -EAGAIN;
	const struct dma_fault_rec *r = &d->faults[tail % DMA_FAULT_SLOTS];
	/* (the engine's release store of fault_head published it) */
	f->error = r->error;
	f->node = r->node;
	f->region = r->region;
	f->offset = r->offset;
	f->len = r->len;
	atomic_store_explicit(&d->fault_tail, tail + 1, memory_order_release);
	return 0;
}

struct fault_wait {
	emu_core_t *c;
	struct dma_fault *f;
};

static int fault_ready(void *arg)
{
	struct fault_wait *fw = arg;
	int r = dma_fault_next(fw->c, fw->f);
	return r == 0 ? 1 : r == -EAGAIN ? 0 : r;
}

int dma_fault_wait(emu_core_t *c, struct dma_fault *f, int timeout_ms)
{
	if (!c || !f)
		return -EINVAL;
	if (c->tk)
		return fault_exact(c, f, 1, timeout_ms);
	struct fault_wait fw = {c, f};
	struct emu_wait w = {fault_ready, NULL, NULL, &fw};
	int r = emu_core_block(c, &w, timeout_ms);
	return r == 0 ? -ETIMEDOUT : r < 0 ? r : 0;
}
