/*
 * The engine thread of a node: the router. It takes packets from the
 * incoming link FIFOs and the cores' injection FIFOs, and either deposits
 * them in a core's reception FIFO or forwards them on the next link of their
 * dimension-order route, counting it on the link.
 * Every pass runs under the node's pass lock, so that the node's cores can
 * run passes too (emu_engine_try_pass).
 *
 * Deadlock freedom: dateline virtual channels. A packet enters each
 * dimension on VC 0 and moves to VC 1 on the ring's wrap-around hop, staying
 * there until it leaves the dimension; paths within a dimension are shorter
 * than the ring, so neither VC's channel-dependency graph has a cycle, and
 * dimension order makes the dependencies between dimensions acyclic. A packet
 * that cannot move stays at the head of its FIFO (back-pressure); the engine
 * never blocks on one FIFO while others can move.
 *
 * Time: the engine moves bytes and times nothing. A packet's sideband
 * carries its post time (or its message's name) unchanged, and torusrun's
 * timekeeper simulates every hop in virtual-time order (time/timekeeper.c),
 * so the order in which the host runs the engines changes no time.
 */
#include "node.h"
#include "unit.h"

#include <torus/trace.h>

#include <errno.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/*
 * Publish every output touched by the current batch. Indices go out every
 * few packets so both ends of a FIFO work at once; doorbells (a full fence
 * each, which waits for every pending slot store) only at the batch's end.
 */
static void publish_outputs(struct emu_node_rt *rt)
{
	for (uint32_t i = 0; i < rt->ndirty; i++)
		torus_ring_publish_head(rt->dirty[i].v);
}

static void flush_outputs(struct emu_node_rt *rt)
{
	for (uint32_t i = 0; i < rt->ndirty; i++) {
		torus_ring_publish_head(rt->dirty[i].v);
		emu_bell_ring(rt->dirty[i].bell);
	}
	rt->ndirty = 0;
}

/* Deposit a packet that reached its destination node; 0 if it must wait. */
static int deliver(struct emu_node_rt *rt, const struct torus_packet *pkt, const struct torus_side *side)
{
	uint32_t kind = torus_pkt_kind(&pkt->hdr);
	if (kind != TORUS_PKT_RAW) {
		int rc = emu_node_unit.deliver(rt, pkt, side); /* the unit's kinds */
		rt->delivered += (uint64_t)rc;
		return rc;
	}
	uint32_t core = pkt->hdr.sw.raw.dst_core;
	struct emu_engine_core *ec = &rt->ecore[core < rt->ncores ? core : 0];
	struct torus_side *dside = NULL;

	/* senders validate the core, so a bad one means memory corruption */
	if (core >= rt->ncores || atomic_load_explicit(&ec->shm->state, memory_order_acquire) == EMU_CORE_DONE) {
		/* nobody will read it: count it loudly rather than block the network */
		atomic_store_explicit(&rt->me->orphaned, ++rt->orphaned, memory_order_relaxed);
		rt->delivered++;
		return 1;
	}
	struct torus_packet *dst = torus_ring_reserve(&ec->rx, &dside);
	if (!dst) {
		if (!torus_ring_mark_full(&ec->rx)) {
			/* the core's release rings our bell; a core drains its
			 * FIFO whenever it waits, so wake it for that */
			emu_bell_ring(&ec->shm->bell);
			return 0;
		}
		dst = torus_ring_reserve(&ec->rx, &dside);
	}
	torus_pkt_copy(dst, pkt);
	*dside = *side;
	torus_ring_commit(&ec->rx);
	emu_engine_mark_dirty(rt, &ec->rx, &ec->shm->bell);
	rt->delivered++;
	return 1;
}

/*
 * The next hop for a packet to `dest` (not this node) arriving from `from`
 * on VC in_vc (from == NULL: injected here): *r, and a reserved slot, or
 * NULL if that FIFO is full (the neighbour's release will ring our bell).
 * A packet stays on its VC within a dimension; the dateline hop moves it
 * to VC 1 (emu_engine_route).
 */
static struct torus_packet *next_hop(struct emu_node_rt *rt, uint32_t dest, uint16_t hints,
				     const struct emu_engine_in *from, uint32_t in_vc, struct emu_route *r,
				     struct torus_side **dside)
{
	emu_engine_route(rt, dest, hints, r);
	uint32_t l = (uint32_t)(r->out - rt->out);
	if (from && from->dim == (l >> 1) && from->dir == (l & 1) && !r->out->wrap) {
		r->vc = in_vc;
		r->v = &r->out->vc[in_vc];
	}
	return emu_route_reserve(r, dside);
}

/* Route one packet; 1 if it moved, 0 if its next FIFO is full. */
static int route_one(struct emu_node_rt *rt, const struct torus_packet *pkt, const struct torus_side *side,
		     const struct emu_engine_in *from, uint32_t in_vc)
{
	struct emu_route r;
	struct torus_side *dside = NULL;

	if (pkt->hdr.dest == rt->rank)
		return deliver(rt, pkt, side);
	struct torus_packet *dst = next_hop(rt, pkt->hdr.dest, pkt->hdr.hints, from, in_vc, &r, &dside);
	if (!dst)
		return 0;
	torus_pkt_copy(dst, pkt);
	emu_route_send(&r, dst, dside, side->vt, side->tag, side->aux);
	emu_route_done(rt, &r);
	return 1;
}

int emu_engine_emit(struct emu_node_rt *rt, const struct torus_pkt_hdr *hdr, const void *payload, torus_vt_t vt,
		    uint32_t tag, uint32_t aux)
{
	if (hdr->dest == rt->rank) {
		/* to ourselves: no link; build the packet and deposit it */
		struct torus_packet pkt;
		struct torus_side side = {vt, tag, aux};
		pkt.hdr = *hdr;
		if (hdr->len)
			memcpy(pkt.payload, payload, hdr->len);
		return deliver(rt, &pkt, &side);
	}
	struct emu_route r;
	struct torus_side *side;
	emu_engine_route(rt, hdr->dest, hdr->hints, &r);
	struct torus_packet *dst = emu_route_reserve(&r, &side);
	if (!dst)
		return 0;
	dst->hdr = *hdr;
	torus_payload_copy(dst->payload, payload, hdr->len);
	emu_route_send(&r, dst, side, vt, tag, aux);
	emu_route_done(rt, &r);
	return 1;
}

void emu_engine_publish(struct emu_node_rt *rt)
{
	emu_node_unit.flush(rt);
	flush_outputs(rt);
	/* deposits are counted once visible, so torusrun's drain check is exact */
	atomic_store_explicit(&rt->me->delivered, rt->delivered, memory_order_release);
}

static uint32_t drain(struct emu_node_rt *rt, struct torus_ring_view *v, const struct emu_engine_in *from,
		      uint32_t vc, struct emu_bell *producer_bell)
{
	struct torus_side *side;
	struct torus_packet *pkt;
	uint32_t n = 0;

	while (n < rt->batch && (pkt = torus_ring_peek(v, &side))) {
		if (v->pos + 1 != v->cached) {
			/* the next packet, written by another engine: fetch its
			 * lines while this one is routed */
			const char *next = (const char *)&v->slot[(v->pos + 1) & v->mask];
			_Static_assert(TORUS_SLOT_BYTES == 256, "four cache lines");
			__builtin_prefetch(next);
			__builtin_prefetch(next + 64);
			__builtin_prefetch(next + 128);
			__builtin_prefetch(next + 192);
		}
		if (!route_one(rt, pkt, side, from, vc))
			break;
		torus_ring_release(v);
		if (++n % EMU_PUBLISH_EVERY == 0) {
			publish_outputs(rt);
			if (torus_ring_publish_tail(v))
				emu_bell_ring(producer_bell);
		}
	}
	if (n) {
		emu_engine_publish(rt);
		if (torus_ring_publish_tail(v))
			emu_bell_ring(producer_bell);
	}
	return n;
}

static uint32_t engine_pass(struct emu_node_rt *rt)
{
	uint32_t moved = 0;
	/* packets already in the network first, escape channel (VC 1) first */
	for (uint32_t i = 0; i < rt->nin; i++) {
		struct emu_engine_in *in = &rt->in[i];
		moved += drain(rt, &in->vc[1], in, 1, in->producer_bell);
		moved += drain(rt, &in->vc[0], in, 0, in->producer_bell);
	}
	for (uint32_t c = 0; c < rt->ncores; c++)
		moved += drain(rt, &rt->ecore[c].inj, NULL, 0, &rt->ecore[c].shm->bell);
	uint32_t dma = emu_node_unit.inject(rt);
	emu_node_unit.flush(rt);
	if (dma) {
		flush_outputs(rt);
		atomic_store_explicit(&rt->me->delivered, rt->delivered, memory_order_release);
	}
	return moved + dma;
}


/* Packets that wait for room on their next hop, or a DMA transfer that
 * does: the node carries bulk traffic. */
static int backlog(const struct emu_node_rt *rt)
{
	for (uint32_t i = 0; i < rt->nin; i++)
		for (uint32_t v = 0; v < 2; v++)
			if (rt->in[i].vc[v].pos != rt->in[i].vc[v].cached)
				return 1;
	for (uint32_t c = 0; c < rt->ncores; c++)
		if (rt->ecore[c].inj.pos != rt->ecore[c].inj.cached)
			return 1;
	return emu_node_unit.backlog && emu_node_unit.backlog(rt);
}

/* One pass, under the pass lock; the epoch moves inside it, so that a pass
 * that starts after emu_engine_quiesce's look begins after any earlier
 * pass, of whichever thread, has ended. */
static uint32_t pass_held(struct emu_node_rt *rt)
{
	atomic_fetch_add(&rt->epoch, 1);
	uint32_t moved = engine_pass(rt);
	/* read by the engine thread without the lock (park) */
	atomic_store_explicit(&rt->backlog, moved ? 1 : backlog(rt), memory_order_relaxed);
	if (moved) {
		rt->moved += moved;
		/* read by torusrun's hang detector */
		atomic_store_explicit(&rt->me->progress, rt->moved, memory_order_relaxed);
	}
	return moved;
}

/* The engine thread's pass. If a core is running one, the engine does not
 * wait for the lock (and for the wake-up its release would then cost the
 * core): PASS_BUSY, and the engine parks or yields and comes back, so it
 * never sleeps on its bell while a pass it did not see is in progress. */
#define PASS_BUSY UINT32_MAX
static uint32_t locked_pass(struct emu_node_rt *rt)
{
	if (pthread_mutex_trylock(&rt->pass_lock))
		return PASS_BUSY;
	uint32_t moved = pass_held(rt);
	pthread_mutex_unlock(&rt->pass_lock);
	return moved;
}

/*
 * A core that has just posted, or that waits, runs the engine itself when
 * the engine is not running: the packet leaves, or the arrival is
 * deposited, without waiting for the engine thread to get a CPU (with 128
 * threads on 2 CPUs that wait is most of a message's wall time). Passes
 * until one moves nothing, at most 64: 1 if the engine is then idle, so the
 * caller need not ring it (what is left waits on a full FIFO, whose
 * consumer rings the engine when it frees a slot); 0 if the lock was taken
 * or work remains. Not with TORUS_CORE_PASS=0.
 */
int emu_engine_try_pass(struct emu_node_rt *rt)
{
	if (!rt->core_passes)
		return 0;
	atomic_fetch_add_explicit(&rt->core_pass_seq, 1, memory_order_relaxed);
	if (pthread_mutex_trylock(&rt->pass_lock))
		return 0;
	uint32_t moved = 1;
	for (uint32_t n = 0; moved && n < 64; n++)
		moved = pass_held(rt);
	pthread_mutex_unlock(&rt->pass_lock);
	return !moved;
}

void emu_engine_unpark(struct emu_node_rt *rt)
{
	if (!rt->core_passes)
		return;
	atomic_store(&rt->park_veto, atomic_load_explicit(&rt->core_pass_seq, memory_order_relaxed));
	emu_bell_ring(&rt->park);
}

/*
 * Park the engine thread while the node's cores run its passes. A core
 * that waits runs a pass at every poll, so the engine thread only adds a
 * runnable thread to the host: with 128 threads yielding in turn on 2
 * CPUs, a message's wall time is a lap of them all (osu_allreduce, 4x4x4).
 * The engine parks when it is idle and cores have run passes since its
 * last look, for 1 ms, doubling up to EMU_ENGINE_PARK_MAX_MS while they
 * keep at it. A core that goes to sleep or ends vetoes the next park and
 * wakes it (emu_engine_unpark). If the engine finds work when a nap ends,
 * the cores do not keep up (long messages: a core that reduces runs no
 * passes meanwhile), and it stays up until it has been idle on its own
 * (emu_engine_main). A core that leaves the library to compute leaves the
 * engine parked for one nap at most: packets routed through the node wait
 * that long in wall clock. And it never parks while packets or DMA
 * transfers wait for room on a link (backlog): bulk traffic is the engine
 * thread's, whose passes run until the node is idle, where a core's stop
 * at 64 (the 8x8x8 all-to-all of 4 MiB per rank took 17 to 20 s of wall
 * time parked, 13.6 to 15.2 s with this rule). osu_allreduce on 4x4x4,
 * one core: 8 KiB calls 12% less wall time, 1 KiB 20%, 1 MiB the same
 * (BENCHMARKS.md as of commit 26917ce, "The engine parks", under the old approximate timing).
 */
static int park(struct emu_node_rt *rt, uint64_t *seen, int *nap_ms)
{
	if (atomic_load_explicit(&rt->backlog, memory_order_relaxed)) {
		*nap_ms = 0;
		return 0;
	}
	uint64_t s = atomic_load(&rt->core_pass_seq);
	if (s == *seen || s == atomic_load(&rt->park_veto)) {
		*nap_ms = 0;
		return 0;
	}
	*seen = s;
	uint32_t seq = emu_bell_prepare(&rt->park);
	if (atomic_load(&rt->park_veto) == atomic_load(&rt->core_pass_seq)) {
		emu_bell_cancel(&rt->park);
		*nap_ms = 0;
		return 0;
	}
	*nap_ms = *nap_ms ? (*nap_ms < EMU_ENGINE_PARK_MAX_MS ? 2 * *nap_ms : *nap_ms) : 1;
	emu_bell_sleep(&rt->park, seq, *nap_ms);
	return 1;
}

uint32_t emu_engine_step(struct emu_node_rt *rt)
{
	/* partner: emu_engine_quiesce, as in emu_engine_main */
	atomic_fetch_add(&rt->epoch, 1);
	return engine_pass(rt);
}

/*
 * Has torusrun exited? A poll() on its pidfd is a system call, and an engine
 * runs dry thousands of times a second while a job is busy: look only before
 * sleeping, and at most every EMU_LAUNCHER_CHECK_MS (a coarse clock read
 * costs no system call).
 */
static int launcher_check_now(struct emu_node_rt *rt)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	int64_t now = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	if (now - rt->launcher_checked_ms < EMU_LAUNCHER_CHECK_MS)
		return atomic_load_explicit(&rt->launcher_gone, memory_order_relaxed);
	rt->launcher_checked_ms = now;
	return emu_launcher_check(rt);
}

void *emu_engine_main(void *arg)
{
	struct emu_node_rt *rt = arg;

	uint64_t seen = 0;
	int nap_ms = 0, just_napped = 0, napped_useful = 0;
	atomic_store_explicit(&rt->me->engine_tid, (int32_t)syscall(SYS_gettid), memory_order_relaxed);
	for (;;) {
		emu_chaos(&rt->chaos);
		/* partner: emu_engine_quiesce (seq_cst, like the flags it orders) */
		uint32_t moved = locked_pass(rt);
		if (just_napped) {
			/* work waited for the nap's end: the cores do not keep
			 * up, so no park until an idle spell of our own */
			napped_useful = moved && moved != PASS_BUSY;
			just_napped = 0;
		}
		if (!moved || moved == PASS_BUSY) {
			if (atomic_load_explicit(&rt->hdr->shutdown, memory_order_acquire) || emu_job_aborting(rt))
				break;
			if (rt->core_passes && !napped_useful && park(rt, &seen, &nap_ms)) {
				if (launcher_check_now(rt))
					break;
				just_napped = 1;
				continue;
			}
			napped_useful = 0;
			if (moved == PASS_BUSY) {
				sched_yield();
				continue;
			}
			for (uint32_t spin = 0; spin < emu_engine_idle_polls && !moved; spin++) {
				if (spin < emu_engine_spin_polls)
					emu_cpu_relax();
				else
					sched_yield();
				moved = locked_pass(rt);
				if (moved == PASS_BUSY)
					sched_yield();
			}
		}
		if (!moved) {
			if (launcher_check_now(rt))
				break;
			uint32_t seq = emu_bell_prepare(&rt->me->bell);
			moved = locked_pass(rt); /* then asleep: no deposit in progress */
			if (moved)
				emu_bell_cancel(&rt->me->bell);
			else
				emu_bell_sleep(&rt->me->bell, seq, emu_sleep_slice_ms);
		}
		/* busy for long stretches: look for torusrun now and then */
		if (moved && (atomic_load_explicit(&rt->epoch, memory_order_relaxed) & 0xFFFF) == 0 &&
		    emu_launcher_check(rt))
			break;
	}
	return NULL;
}

int emu_engine_quiesce(struct emu_node_rt *rt)
{
	if (rt->core_passes) {
		/* every pass runs under the pass lock: once we hold it, none is
		 * in progress, and the next one, whoever runs it, sees what the
		 * caller stored before (no wait for the engine thread's turn) */
		pthread_mutex_lock(&rt->pass_lock);
		pthread_mutex_unlock(&rt->pass_lock);
		return 0;
	}
	uint64_t e = atomic_load(&rt->epoch);
	/* the engine moves on within one pass; ring in case it is asleep, and
	 * sleep rather than spin if it takes longer (a loaded machine) */
	for (uint32_t tries = 0; atomic_load(&rt->epoch) == e; tries++) {
		if (emu_job_aborting(rt))
			return -ECANCELED;
		emu_bell_ring_slow(&rt->me->bell);
		if (tries < 16) {
			sched_yield();
		} else {
			struct timespec ts = {0, 50000};
			nanosleep(&ts, NULL);
		}
	}
	return 0;
}
