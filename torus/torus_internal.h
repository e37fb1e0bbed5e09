/*
 * The machine's internals: what the emulator's engines, the DMA unit and
 * their tests share, and no program needs. Not installed; the public
 * machine description (shape, routes, parameters, packets, the time
 * model's formulas) is include/torus/machine.h.
 *
 *   FIFO ring     the 256-byte packet slots of links and core FIFOs
 *   link          a link direction's control block and its counters
 *   calendar      busy intervals in virtual time (links; multicolor cores)
 *   order         a hardware FIFO's order, in virtual time
 *   cost          per-payload wire bytes and serialisation times
 */
#ifndef TORUS_INTERNAL_H
#define TORUS_INTERNAL_H

#include "torus/machine.h"

#include <stdalign.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------ packet copies */

/* Copy a packet between slots; a full packet takes the fixed-size path the
 * compiler turns into vector moves. */
TORUS_HOT void torus_pkt_copy(struct torus_packet *dst, const struct torus_packet *src)
{
	uint32_t n = torus_pkt_copy_bytes(src->hdr.len);
	if (n == TORUS_SLOT_BYTES)
		memcpy(dst, src, TORUS_SLOT_BYTES);
	else
		memcpy(dst, src, n);
}

/* Copy `len` payload bytes into or out of a slot; a full payload (the common
 * case of bulk transfers) takes a fixed-size path the compiler turns into
 * vector moves instead of a variable-length string move. */
TORUS_HOT void torus_payload_copy(void *dst, const void *src, uint32_t len)
{
	if (len == TORUS_MAX_PAYLOAD)
		memcpy(dst, src, TORUS_MAX_PAYLOAD);
	else if (len)
		memcpy(dst, src, len);
}

/* ------------------------------------------------------------ FIFO ring */

/*
 * Single-producer single-consumer ring of 256-byte packet slots, with a
 * parallel array of sideband records (the virtual arrival time and a trace
 * tag; emulator bookkeeping, not packet bytes). Indices run free and are
 * masked on access; slot count is a power of two. Control block and slots
 * live in shared memory; both sides keep a process-local torus_ring_view.
 */
struct torus_side {
	torus_vt_t vt;   /* virtual time the packet is ready at the consumer */
	uint32_t tag;    /* collective/color/phase tag set by the sender */
	uint32_t aux;
};
_Static_assert(sizeof(struct torus_side) == 16, "sideband record");

struct torus_ring {
	alignas(64) _Atomic uint32_t head;        /* producer writes */
	alignas(64) _Atomic uint32_t tail;        /* consumer writes */
	alignas(64) _Atomic uint32_t want_space;  /* producer found it full; consumer rings on pop */
	uint32_t slots;                           /* power of two, immutable after setup */
	uint64_t off_slots;                       /* offsets from the shared-memory base */
	uint64_t off_side;
};
_Static_assert(sizeof(struct torus_ring) == 192, "ring control block");
_Static_assert(offsetof(struct torus_ring, tail) == 64, "tail on its own cache line");

struct torus_ring_view {
	struct torus_ring *ring;
	struct torus_packet *slot;
	struct torus_side *side;
	uint32_t mask;
	uint32_t cached;     /* producer: last seen tail; consumer: last seen head */
	uint32_t pos;        /* producer: local head; consumer: local tail */
	uint32_t published;  /* the value of pos last stored to the shared index */
};

/* Bytes of shared memory a ring of n slots needs beyond its control block. */
/* A local DMA copy of len bytes takes len / copy_bw, rounded up (128-bit:
 * no overflow for any length). */
static inline torus_vt_t torus_copy_time(const struct torus_params *p, uint64_t len)
{
	return (torus_vt_t)(((unsigned __int128)len * 1000000000000ull + p->copy_bw - 1) / p->copy_bw);
}

static inline size_t torus_ring_bytes(uint32_t n)
{
	return (size_t)n * (sizeof(struct torus_packet) + sizeof(struct torus_side));
}
/* Set up a ring whose slots start at base+off (done once, before sharing). */
void torus_ring_init(struct torus_ring *r, uint32_t slots, uint64_t off);
enum torus_ring_role { TORUS_RING_PRODUCER, TORUS_RING_CONSUMER };
/* A producer's or consumer's private view, starting at the ring's current indices. */
void torus_ring_view_init(struct torus_ring_view *v, struct torus_ring *r, void *base, enum torus_ring_role role);
void torus_ring_dump(const struct torus_ring *r, const char *name, FILE *out);

/* Packets published and not yet released (what the other side can see). */
static inline uint32_t torus_ring_count(const struct torus_ring *r)
{
	return atomic_load_explicit(&r->head, memory_order_acquire) -
	       atomic_load_explicit(&r->tail, memory_order_acquire);
}

/*
 * Producer: next free slot, or NULL if full. Fill it, then commit; commits
 * become visible to the consumer at the next publish (once per batch, so a
 * burst pays one release store and one doorbell check).
 */
TORUS_HOT struct torus_packet *torus_ring_reserve(struct torus_ring_view *v, struct torus_side **side)
{
	if (v->pos - v->cached > v->mask) {
		/* pairs with the consumer's release store of tail in torus_ring_publish_tail */
		v->cached = atomic_load_explicit(&v->ring->tail, memory_order_acquire);
		if (v->pos - v->cached > v->mask)
			return NULL;
	}
	*side = &v->side[v->pos & v->mask];
	return &v->slot[v->pos & v->mask];
}
TORUS_HOT void torus_ring_commit(struct torus_ring_view *v) { v->pos++; }
/*
 * Producer, after a commit: ask for the lines of the slot the next packet
 * takes, for writing, if the consumer is done with it (as far as this side
 * knows). The slot was last read by the consumer, another process on
 * another CPU or long gone from cache; a store that misses on it waits for
 * the line (the hottest instruction of the engines' copy, 7% of drain's
 * samples in the 8x8x8 all-to-all). Nothing is read or written; a slot not
 * yet free is left alone, so the consumer's copy is not taken from it.
 */
TORUS_HOT void torus_ring_prefetch_next(const struct torus_ring_view *v)
{
	if (v->pos - v->cached > v->mask)
		return;
	const char *p = (const char *)&v->slot[v->pos & v->mask];
	_Static_assert(sizeof(struct torus_packet) == 256, "four cache lines");
	for (int i = 0; i < 256; i += 64) {
#if defined(__x86_64__) && defined(__GNUC__)
		/* PREFETCHW (3DNow!Prefetch / PRFCHW), a NOP where absent;
		 * __builtin_prefetch(p, 1) gives prefetcht0 without -mprfchw */
		__asm__ volatile("prefetchw %0" : : "m"(p[i]));
#else
		__builtin_prefetch(p + i, 1);
#endif
	}
}
/* Producer: make commits visible; returns nonzero if there were any. */
TORUS_HOT int torus_ring_publish_head(struct torus_ring_view *v)
{
	if (v->pos == v->published)
		return 0;
	/* pairs with the consumer's acquire load of head in torus_ring_peek */
	atomic_store_explicit(&v->ring->head, v->pos, memory_order_release);
	v->published = v->pos;
	return 1;
}

/* Consumer: oldest packet, or NULL if empty. Read it, then release. */
TORUS_HOT struct torus_packet *torus_ring_peek(struct torus_ring_view *v, struct torus_side **side)
{
	if (v->pos == v->cached) {
		/* pairs with the producer's release store of head in torus_ring_publish_head */
		v->cached = atomic_load_explicit(&v->ring->head, memory_order_acquire);
		if (v->pos == v->cached)
			return NULL;
	}
	*side = &v->side[v->pos & v->mask];
	return &v->slot[v->pos & v->mask];
}
TORUS_HOT void torus_ring_release(struct torus_ring_view *v) { v->pos++; }
/*
 * Consumer: hand released slots back. Returns nonzero if the producer had
 * asked (torus_ring_mark_full) to be told about free space: ring its bell.
 */
TORUS_HOT int torus_ring_publish_tail(struct torus_ring_view *v)
{
	if (v->pos == v->published)
		return 0;
	/* pairs with the producer's acquire load of tail in torus_ring_reserve */
	atomic_store_explicit(&v->ring->tail, v->pos, memory_order_release);
	v->published = v->pos;
	/* Dekker with torus_ring_mark_full: the producer stores want_space then
	 * re-reads tail; we store tail then read want_space. */
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load_explicit(&v->ring->want_space, memory_order_relaxed)) {
		atomic_store_explicit(&v->ring->want_space, 0, memory_order_relaxed);
		return 1;
	}
	return 0;
}
/*
 * Producer found the ring full: ask for a doorbell, then re-check. Returns 1
 * if space appeared meanwhile. Publish pending commits before sleeping.
 */
static inline int torus_ring_mark_full(struct torus_ring_view *v)
{
	atomic_store_explicit(&v->ring->want_space, 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_seq_cst);
	v->cached = atomic_load_explicit(&v->ring->tail, memory_order_acquire);
	return v->pos - v->cached <= v->mask;
}

/* ------------------------------------------------------------ link */

/*
 * One direction of one link: two virtual channels (dateline scheme: a packet
 * moves to VC 1 when it crosses the ring's wrap-around link and stays there
 * for the rest of that dimension, so neither channel's dependency graph has a
 * cycle) plus the virtual-time state and counters. Everything but the VC
 * consumer side is written only by the sending node's engine.
 */
struct torus_link {
	alignas(64) _Atomic uint64_t free_at;   /* virtual time the link is next idle */
	_Atomic uint64_t packets;
	_Atomic uint64_t payload_bytes;
	_Atomic uint64_t wire_bytes;
	_Atomic uint64_t busy_ps;
	uint32_t from, to;                       /* node ranks */
	uint32_t dim, dir;
	uint8_t pad_[8];
	struct torus_ring vc[2];
};
_Static_assert(sizeof(struct torus_link) == 64 + 2 * 192, "link control block");


/* Count one packet on the link: its packet and byte counters. Single writer
 * (the sending engine): plain relaxed load+store, read by the reporter. The
 * timekeeper keeps busy_ps and free_at. */
static inline void torus_link_count_traffic(struct torus_link *l, uint32_t payload, uint32_t wire)
{
	atomic_store_explicit(&l->packets, atomic_load_explicit(&l->packets, memory_order_relaxed) + 1,
			      memory_order_relaxed);
	atomic_store_explicit(&l->payload_bytes,
			      atomic_load_explicit(&l->payload_bytes, memory_order_relaxed) + payload,
			      memory_order_relaxed);
	atomic_store_explicit(&l->wire_bytes,
			      atomic_load_explicit(&l->wire_bytes, memory_order_relaxed) + wire,
			      memory_order_relaxed);
}

/* Per-payload-length wire bytes and serialisation times, computed once so
 * that the engine's per-packet path has no division. */
struct torus_cost {
	uint32_t wire[TORUS_MAX_PAYLOAD + 1];
	torus_vt_t ser[TORUS_MAX_PAYLOAD + 1];
	torus_vt_t hop_latency;
};
void torus_cost_init(struct torus_cost *c, const struct torus_params *p);
void torus_link_read(const struct torus_link *l, struct torus_link_counters *out);
/* Print each non-empty VC ring of the link, one line each, after `indent`. */
void torus_link_dump(const struct torus_link *l, const char *indent, FILE *out);

#ifdef __cplusplus
}
#endif
#endif
