/*
 * The core side of the raw packet interface: identity, virtual clock,
 * sending into the core's injection FIFO, receiving from its reception FIFO,
 * and sleeping until either can move.
 */
#include "node.h"
#include "unit.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

uint32_t emu_node_rank(const emu_core_t *c) { return c ? c->node->rank : 0; }
uint32_t emu_core_index(const emu_core_t *c) { return c ? c->index : 0; }
uint32_t emu_node_count(const emu_core_t *c) { return c ? c->node->hdr->nnodes : 0; }
const struct torus_shape *emu_shape(const emu_core_t *c) { return c ? &c->node->hdr->shape : NULL; }
const struct torus_params *emu_params(const emu_core_t *c) { return c ? c->node->params : NULL; }
torus_vt_t emu_core_now(const emu_core_t *c)
{
	if (!c)
		return 0;
	/* a clock read observes time: a deferred wait's answer is needed
	 * (the calling core's own object; const for its callers) */
	emu_core_sync((emu_core_t *)c);
	return c->vt;
}

uint32_t emu_core_global(const emu_core_t *c) { return c ? c->global : 0; }
uint32_t emu_core_total(const emu_core_t *c) { return c ? c->node->first_core[c->node->hdr->nnodes] : 0; }

int emu_core_locate(const emu_core_t *c, uint32_t global, uint32_t *node, uint32_t *core)
{
	if (!c || !node || !core)
		return -EINVAL;
	return emu_rt_locate(c->node, global, node, core);
}

uint32_t emu_cores_of(const emu_core_t *c, uint32_t node)
{
	if (!c || node >= c->node->hdr->nnodes)
		return 0;
	return c->node->first_core[node + 1] - c->node->first_core[node];
}

/* tell the timekeeper this core has news (after writing it). */
/* This core has news: its bit in the timekeeper's dirty words. Release,
 * always (even when the bit is set): pairs with the timekeeper's exchange
 * of the word, so it sees what was written; and seq_cst, for tk_nudge. */
static void tk_mark(emu_core_t *c)
{
	atomic_fetch_or(emu_shm_tk_dirty(&c->node->shm) + c->global / 64, 1ull << (c->global % 64));
}

void emu_core_tk_poke(emu_core_t *c)
{
	tk_mark(c);
	emu_bell_ring(&c->node->hdr->tk_bell);
}

/* News that can let the timekeeper go on only if it waits for this core:
 * marked, and rung only then (the seq_cst pair: its store of tk_waits_for
 * before it looks at the marks and sleeps). */
void emu_core_tk_nudge(emu_core_t *c)
{
	tk_mark(c);
	uint32_t g = atomic_load(&c->node->hdr->tk_waits_for);
	if (g == UINT32_MAX || g == c->global)
		emu_bell_ring(&c->node->hdr->tk_bell);
}

/* The clock to torusrun and the timekeeper; progress: whether this counts
 * as the core moving (not for a clock moved by idle looks and timeouts). */
static void publish_clock(emu_core_t *c, int progress)
{
	if (c->plan_rec)
		return; /* a step's clock is an offset, not the core's */
	if (c->rel) {
		/* an offset from a deferred wait's answer: neither torusrun nor
		 * the timekeeper can use it (the timekeeper bounds the core by
		 * its events instead) */
		if (progress)
			atomic_store_explicit(&c->shm->progress, ++c->progress, memory_order_relaxed);
		return;
	}
	/* read by torusrun: the hang detector and the report */
	atomic_store_explicit(&c->shm->vt, c->vt, memory_order_relaxed);
	if (progress)
		atomic_store_explicit(&c->shm->progress, ++c->progress, memory_order_relaxed);
	if (c->tk && !emu_core_promised(c)) {
		/* the timekeeper may simulate up to here (a core bound
		 * by emu_core_expect sets no bound); pairs with its acquire load
		 * in look() */
		atomic_store_explicit(&c->tk->clock, c->vt, memory_order_release);
		emu_core_tk_nudge(c);
	}
}

void emu_core_publish(emu_core_t *c) { publish_clock(c, 1); }

void emu_core_idle(emu_core_t *c, torus_vt_t to)
{
	if (to > c->vt)
		c->vt = to;
	publish_clock(c, 0);
}

void emu_core_missed(emu_core_t *c) { emu_core_idle(c, c->vt + c->node->params->poll_cost_ps); }

/* The stashed packet from (node, core) with send number id, or -1. */
/* A raw packet's name: its sender (node << 8 | core) and send number. */
static uint64_t raw_name(uint64_t src, uint32_t id) { return emu_stash_mix(src, id); }

uint64_t emu_raw_name(const struct torus_packet *pkt, const struct torus_side *side)
{
	return raw_name((uint64_t)pkt->hdr.sw.raw.src << 8 | pkt->hdr.sw.raw.src_core, side->aux);
}

struct raw_key {
	uint64_t src;
	uint32_t id;
};

static int raw_is(const struct emu_stash *s, uint32_t slot, const void *key)
{
	const struct raw_key *k = key;
	const struct torus_packet *p = &s->pkt[slot];
	return p->hdr.sw.raw.src == (k->src >> 8) && p->hdr.sw.raw.src_core == (k->src & 0xFF) &&
	       s->side[slot].aux == k->id;
}

static int stash_find(const emu_core_t *c, uint64_t src, uint64_t id)
{
	struct raw_key k = {src, (uint32_t)id};
	return emu_stash_find(&c->stash, raw_name(src, k.id), raw_is, &k);
}

struct tk_fetch {
	emu_core_t *c;
	int idx;
};

static int tk_fetched(void *arg)
{
	struct tk_fetch *f = arg;
	f->idx = stash_find(f->c, f->c->tk_src, f->c->tk_id);
	return f->idx >= 0;
}

static int send_room(void *arg)
{
	emu_core_t *c = arg;
	return c->inj.pos - atomic_load_explicit(&c->inj.ring->tail, memory_order_acquire) <= c->inj.mask;
}

static void send_arm(void *arg)
{
	emu_core_t *c = arg;
	torus_ring_mark_full(&c->inj); /* the engine rings us when it pops */
}

int emu_core_compute(emu_core_t *c, torus_vt_t ps)
{
	if (!c)
		return -EINVAL;
	c->vt += ps;
	emu_core_publish(c);
	return 0;
}

int emu_exact(const emu_core_t *c)
{
	return c && c->tk ? 1 : 0;
}

int emu_core_set_clock(emu_core_t *c, torus_vt_t t)
{
	int rc = c ? emu_core_sync(c) : 0;
	if (rc)
		return rc;
	if (!c || (c->tk && t < c->vt))
		return -EINVAL; /* a clock never goes back */
	c->vt = t;
	emu_core_publish(c);
	return 0;
}

int emu_core_promise(emu_core_t *c, uint32_t q, uint64_t packets)
{
	if (!c || (q != EMU_TK_Q_RAW && q != EMU_TK_Q_MEMFIFO))
		return -EINVAL;
	uint64_t *taken = q == EMU_TK_Q_RAW ? &c->received : &c->mf_taken;
	uint64_t *expect = q == EMU_TK_Q_RAW ? &c->expect : &c->mf_expect;
	if (*taken < *expect || emu_core_promised(c))
		return -EBUSY;
	if (!packets || (q != EMU_TK_Q_RAW && !c->tk))
		return 0; /* (raw sends are refused under a promise even without a timekeeper) */
	/* EMU_EXPECT_EVER (raw): a total no count reaches */
	int ever = q == EMU_TK_Q_RAW && packets == EMU_EXPECT_EVER;
	if (!ever && *taken >= UINT64_MAX - packets)
		return -EINVAL;
	uint64_t total = ever ? UINT64_MAX : *taken + packets;
	if (c->tk) {
		/* the total the timekeeper counts: every packet this core has
		 * taken from the queue arrived, so its count of arrivals is at
		 * least ours */
		struct emu_tk_ev ev = {.type = EMU_TK_EXPECT, .node = q, .len = total, .ready = c->vt};
		int r = emu_core_tk_event(c, &ev);
		if (r)
			return r;
	}
	*expect = total;
	return 0;
}

int emu_core_expect(emu_core_t *c, uint64_t packets)
{
	return emu_core_promise(c, EMU_TK_Q_RAW, packets);
}

int emu_pkt_send(emu_core_t *c, uint32_t node, uint32_t core, const void *buf, size_t len, uint16_t user,
		 uint16_t hints)
{
	struct torus_side *side;

	if (!c || (len && !buf) || len > torus_params_payload(c->node->params) ||
	    node >= c->node->hdr->nnodes || core >= emu_cores_of(c, node))
		return -EINVAL;
	if (c->received < c->expect)
		return -EBUSY; /* emu_core_expect: it promised not to */
	emu_chaos(&c->chaos);
	for (uint32_t d = 0; d < TORUS_MAX_DIMS; d++) {
		uint32_t h = (hints >> (2 * d)) & 3u;
		if (h == 3 || (h && d >= c->node->hdr->shape.ndims))
			return -EINVAL;
	}
	if (emu_job_aborting(c->node))
		return -ECANCELED;
	struct torus_packet *pkt = torus_ring_reserve(&c->inj, &side);
	if (!pkt && c->tk) {
		/* host buffers change no time; wait for room */
		struct emu_wait ew = {send_room, send_arm, NULL, c};
		int r = emu_core_block(c, &ew, -1);
		if (r <= 0)
			return r < 0 ? r : -ETIMEDOUT;
		pkt = torus_ring_reserve(&c->inj, &side);
	}
	if (!pkt)
		return -EAGAIN;
	pkt->hdr.dest = node;
	pkt->hdr.len = (uint8_t)len;
	pkt->hdr.vc_kind = (uint8_t)(TORUS_PKT_RAW << 4);
	pkt->hdr.hints = hints;
	pkt->hdr.sw.raw.src = c->node->rank;
	pkt->hdr.sw.raw.dst_core = (uint8_t)core;
	pkt->hdr.sw.raw.src_core = (uint8_t)c->index;
	pkt->hdr.sw.raw.user = user;
	if (len)
		memcpy(pkt->payload, buf, len);
	side->vt = c->vt;
	side->tag = 0;
	side->aux = 0;
	if (c->tk) {
		/* posting takes inj_overhead, as a descriptor does; the
		 * packet is named by its send number */
		int r = emu_core_tk_pace(c);
		if (r)
			return r;
		side->aux = ++c->tk_sent;
		c->vt += c->node->params->inj_overhead_ps;
		struct emu_tk_ev ev = {.type = EMU_TK_RAW, .node = node, .core = core, .len = len, .ready = c->vt,
				       .id = c->tk_sent, .hints = hints};
		r = emu_core_tk_event(c, &ev);
		if (r)
			return r;
	}
	torus_ring_commit(&c->inj);
	torus_ring_publish_head(&c->inj);
	atomic_store_explicit(&c->shm->sent, ++c->sent, memory_order_release);
	emu_bell_ring(&c->node->me->bell);
	emu_core_publish(c);
	return 0;
}

/* the earliest packet that arrived by the core's clock; none costs
 * a poll. */
static int recv_exact(emu_core_t *c, struct emu_pkt_info *info, void *buf, size_t cap)
{
	struct emu_tk_arr a;
	int r = emu_core_tk_next(c, EMU_TK_Q_RAW, &a);
	if (r <= 0) {
		if (r < 0)
			return r;
		emu_core_missed(c);
		return -EAGAIN;
	}
	c->tk_src = a.src;
	c->tk_id = a.id;
	struct tk_fetch f = {c, -1};
	struct emu_wait ew = {tk_fetched, NULL, NULL, &f};
	r = emu_core_block(c, &ew, -1);
	if (r <= 0)
		return r < 0 ? r : -ETIMEDOUT;
	const struct torus_packet *pkt = &c->stash.pkt[f.idx];
	if (pkt->hdr.len > cap)
		return -EMSGSIZE; /* it stays, as in the FIFO */
	info->src_node = pkt->hdr.sw.raw.src;
	info->src_core = pkt->hdr.sw.raw.src_core;
	info->len = pkt->hdr.len;
	info->user = pkt->hdr.sw.raw.user;
	info->arrival = a.t;
	if (pkt->hdr.len)
		memcpy(buf, pkt->payload, pkt->hdr.len);
	emu_stash_remove(&c->stash, (uint32_t)f.idx);
	emu_core_tk_take(c, EMU_TK_Q_RAW);
	atomic_store_explicit(&c->shm->received, ++c->received, memory_order_relaxed);
	emu_core_publish(c);
	return 0;
}

int emu_pkt_recv(emu_core_t *c, struct emu_pkt_info *info, void *buf, size_t cap)
{
	struct torus_side *side;

	if (!c || !info || (cap && !buf))
		return -EINVAL;
	emu_chaos(&c->chaos);
	if (c->tk)
		return recv_exact(c, info, buf, cap);
	struct torus_packet *pkt = torus_ring_peek(&c->rx, &side);
	if (!pkt)
		return -EAGAIN;
	if (pkt->hdr.len > cap)
		return -EMSGSIZE;
	info->src_node = pkt->hdr.sw.raw.src;
	info->src_core = pkt->hdr.sw.raw.src_core;
	info->len = pkt->hdr.len;
	info->user = pkt->hdr.sw.raw.user;
	info->arrival = side->vt;
	if (pkt->hdr.len)
		memcpy(buf, pkt->payload, pkt->hdr.len);
	if (side->vt > c->vt)
		c->vt = side->vt;
	torus_ring_release(&c->rx);
	if (torus_ring_publish_tail(&c->rx))
		emu_bell_ring(&c->node->me->bell);
	atomic_store_explicit(&c->shm->received, ++c->received, memory_order_relaxed);
	emu_core_publish(c);
	return 0;
}

static unsigned ready_events(emu_core_t *c, unsigned events)
{
	unsigned r = 0;
	if ((events & EMU_EV_RECV) && torus_ring_count(c->rx.ring))
		r |= EMU_EV_RECV;
	if ((events & EMU_EV_SEND) && c->inj.pos - atomic_load_explicit(&c->inj.ring->tail, memory_order_acquire) <= c->inj.mask)
		r |= EMU_EV_SEND;
	return r;
}

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int emu_core_block(emu_core_t *c, const struct emu_wait *w, int timeout_ms)
{
	long long deadline = timeout_ms >= 0 ? now_ms() + timeout_ms : -1;
	struct emu_bell *bell = &c->shm->bell;
	int r;

	/* pause a little, yield a little (running engine passes), then
	 * sleep. Yielding pays even when what the core waits for is the
	 * timekeeper's answer: sleeping at once doubled the wall time of
	 * small allreduces (osu_allreduce, 8 bytes, 4x4x4: 4.0 to 4.5 s
	 * against 2.1 to 2.5 s for 310 calls); only 8x8x8 torus-stress,
	 * bound by the timekeeper's thread, would be about 5% faster if the
	 * timekeeper's answers were waited for asleep */
	for (uint32_t spin = 0; spin < EMU_IDLE_POLLS; spin++) {
		/* a waiting core never holds up an engine (its stash) */
		if (c->tk && emu_core_tk_drain(c) < 0)
			return -ENOMEM;
		if ((r = w->ready(w->arg)))
			return r;
		/* run the engine ourselves, then look again (it only moves
		 * bytes: the timekeeper times them) */
		if (c->node->core_passes) {
			emu_engine_try_pass(c->node);
			if ((r = w->ready(w->arg)))
				return r;
		}
		emu_idle_poll(spin);
	}
	for (;;) {
		emu_chaos(&c->chaos);
		if (c->tk && emu_core_tk_drain(c) < 0)
			return -ENOMEM;
		if ((r = w->ready(w->arg)))
			return r;
		if (emu_job_aborting(c->node))
			return -ECANCELED;
		int slice = emu_sleep_slice_ms;
		if (deadline >= 0) {
			long long left = deadline - now_ms();
			if (left <= 0)
				return 0;
			if (left < slice)
				slice = (int)left;
		}
		uint32_t seq = emu_bell_prepare(bell);
		/* no more passes from us: the engine thread takes over */
		emu_engine_unpark(c->node);
		if (w->arm)
			w->arm(w->arg);
		if (c->tk && emu_core_tk_drain(c) < 0)
			r = -ENOMEM;
		else
			r = w->ready(w->arg);
		if (r) {
			emu_bell_cancel(bell);
		} else {
			atomic_store_explicit(&c->shm->state, EMU_CORE_WAITING, memory_order_relaxed);
			emu_bell_sleep(bell, seq, slice);
			atomic_store_explicit(&c->shm->state, EMU_CORE_RUNNING, memory_order_relaxed);
		}
		if (w->disarm)
			w->disarm(w->arg);
		if (r)
			return r;
	}
}

struct core_wait {
	emu_core_t *c;
	unsigned events;
};

static int core_ready(void *arg)
{
	struct core_wait *cw = arg;
	return (int)ready_events(cw->c, cw->events);
}

static void core_arm(void *arg)
{
	struct core_wait *cw = arg;
	if (cw->events & EMU_EV_SEND)
		torus_ring_mark_full(&cw->c->inj); /* the engine rings us when it pops */
}

int emu_core_wait(emu_core_t *c, unsigned events, int timeout_ms, unsigned *holding)
{
	if (!c || !events || (events & ~(EMU_EV_SEND | EMU_EV_RECV)))
		return -EINVAL;
	if (c->tk) {
		/* room to send is a host matter (the post waits for
		 * it); a receive waits, in virtual time, for the next arrival */
		struct emu_tk_arr a;
		int have = emu_core_tk_head(c, EMU_TK_Q_RAW, &a);
		if ((events & EMU_EV_SEND) || (have && a.t <= c->vt)) {
			if (holding)
				*holding = (events & EMU_EV_SEND) | (have && a.t <= c->vt ? (events & EMU_EV_RECV) : 0u);
			return 0;
		}
		int r = emu_core_tk_wait_arrival(c, EMU_TK_Q_RAW, emu_core_tk_deadline(c, timeout_ms), &a);
		if (r <= 0)
			return r < 0 ? r : -ETIMEDOUT;
		if (holding)
			*holding = EMU_EV_RECV;
		return 0;
	}
	struct core_wait cw = {c, events};
	struct emu_wait w = {core_ready, core_arm, NULL, &cw};
	int r = emu_core_block(c, &w, timeout_ms);
	if (r == 0)
		return -ETIMEDOUT;
	if (r < 0)
		return r;
	if (holding)
		*holding = (unsigned)r;
	return 0;
}

void emu_node_dump(const emu_core_t *c, FILE *out)
{
	if (!c || !out)
		return;
	struct emu_node_rt *rt = c->node;
	fprintf(out, "node %u: delivered %llu, engine moves %llu\n", rt->rank,
		(unsigned long long)atomic_load(&rt->me->delivered), (unsigned long long)atomic_load(&rt->me->progress));
	for (uint32_t i = 0; i < rt->nin; i++)
		torus_link_dump(rt->in[i].link, "  ", out);
}

int emu_link_read(const emu_core_t *c, uint32_t dim, uint32_t dir, struct torus_link_counters *out)
{
	if (!c || !out || dir > 1)
		return -EINVAL;
	const struct torus_shape *s = &c->node->hdr->shape;
	if (dim >= s->ndims || !torus_dim_has_links(s, dim))
		return -EINVAL;
	torus_link_read(emu_shm_link_out(&c->node->shm, c->node->rank, dim, dir), out);
	return 0;
}
