/*
 * Internals of dma/: the per-core DMA block in shared memory (counters,
 * region table, handler bitmap, fault queue, injection and memory-FIFO
 * reception rings), the wire format of DMA packets, and the engine-side
 * state. The DMA unit runs on the node's engine thread (emu/engine.c).
 */
#ifndef DMA_INTERNAL_H
#define DMA_INTERNAL_H

#include "../emu/node.h"
#include "torus/dma.h"

/* Packet kinds of the DMA unit (torus_pkt_kind). */
enum {
	DMA_PKT_MEMFIFO = 2, /* sw: packet index(4) dst_core(1) dispatch(1) user(2) */
	DMA_PKT_PUT = 3,     /* sw: offset(4) region(2) counter(2) */
	DMA_PKT_GETREQ = 4,  /* payload: struct dma_getreq */
	DMA_PKT_FAULT = 5,   /* sw[4]: dst core; payload: struct dma_fault_rec */
};
#define DMA_PKT_LAST 0x2u /* vc_kind bit 1: last packet of a memory-FIFO message */

/* Sideband aux word: who sent the packet (for faults and dma_recv_info). */
static inline uint32_t dma_aux(uint32_t node, uint32_t core) { return node << 8 | (core & 0xFFu); }
static inline uint32_t dma_aux_node(uint32_t aux) { return aux >> 8; }
static inline uint32_t dma_aux_core(uint32_t aux) { return aux & 0xFFu; }

/* Region and counter ids are node-wide: core * per_core + index. The wire
 * format carries 16 bits of each. */
#define DMA_MAX_IDS 65534u /* 0xFFFF on the wire means "no counter" */
#define DMA_WIRE_OFFSET_LIMIT (1ull << 32) /* a put packet carries a 32-bit offset */

/* Direction hints name only + or - (not 3) and only dimensions the torus
 * has: a route with others would leave by a link that does not exist. */
static inline int dma_hints_ok(const struct emu_node_rt *rt, uint16_t hints)
{
	for (uint32_t d = 0; d < TORUS_MAX_DIMS; d++) {
		uint32_t h = (hints >> (2 * d)) & 3u;
		if (h == 3 || (h && d >= rt->hdr->shape.ndims))
			return 0;
	}
	return 1;
}

/* Do the offsets of every packet of [offset, offset+len) fit the put
 * packet's 32 bits? An empty message still sends one packet at `offset`. */
static inline int dma_wire_range_ok(uint64_t offset, uint64_t len)
{
	return offset < DMA_WIRE_OFFSET_LIMIT && len <= DMA_WIRE_OFFSET_LIMIT - offset;
}

/*
 * Can the wire carry this descriptor's fields as they are? Put packets hold
 * a 16-bit region and counter and a 32-bit offset; a memory-FIFO packet an
 * 8-bit core and dispatch id. A field that does not fit is refused, never
 * truncated (a truncated id or a wrapped offset names other memory). Checked
 * at post, flags or not, and again by the engine before it packetises.
 */
static inline int dma_desc_fits_wire(const struct dma_desc *d)
{
	switch (d->kind) {
	case DMA_MEMFIFO:
		if (d->core > 255)
			return DMA_ERR_DEST;
		return d->dispatch > 255 ? DMA_ERR_HANDLER : 0;
	case DMA_GET:
		/* the reply is a put into reply_region at the requester */
		if (d->reply_region > DMA_MAX_IDS)
			return DMA_ERR_REGION;
		if (!dma_wire_range_ok(d->reply_offset, d->len))
			return DMA_ERR_RANGE;
		/* the region read and the reply counter, as a put's */
		__attribute__((fallthrough));
	case DMA_PUT:
		if (d->region > DMA_MAX_IDS)
			return DMA_ERR_REGION;
		if (d->counter != DMA_NO_COUNTER && d->counter > DMA_MAX_IDS)
			return DMA_ERR_COUNTER;
		if (d->kind == DMA_PUT && !dma_wire_range_ok(d->offset, d->len))
			return DMA_ERR_RANGE;
		return 0;
	default:
		return 0; /* a local copy never takes the wire */
	}
}

struct dma_getreq {
	uint32_t region;        /* read here, at the target */
	uint32_t reply_region;  /* written at the requester */
	uint64_t offset;
	uint64_t reply_offset;
	uint64_t len;
	uint32_t reply_counter;
	uint32_t tag;
	uint16_t hints;
	uint16_t pad_[3];
};
_Static_assert(sizeof(struct dma_getreq) <= TORUS_MAX_PAYLOAD, "get request fits one packet");

struct dma_fault_rec {
	int32_t error;
	uint32_t node, region, len;
	uint64_t offset;
};

struct dma_counter_shm {
	alignas(64) _Atomic int64_t value;  /* bytes still to come */
	_Atomic uint64_t vt;                /* virtual time of the latest decrement */
	_Atomic uint64_t hits;              /* times it reached zero */
	_Atomic uint64_t waiters;           /* bit per core of this node sleeping on it */
	_Atomic uint32_t allocated;
	_Atomic uint32_t busy;              /* modifiers between their change and its bookkeeping */
	uint8_t pad_[24];
};
_Static_assert(sizeof(struct dma_counter_shm) == 64, "counter is one cache line");

struct dma_region_shm {
	_Atomic uint64_t size;
	_Atomic uint32_t valid;
	uint32_t pad_;
};

#define DMA_FAULT_SLOTS 16u

/* Per core, in the node's shared-memory region. */
struct dma_core_shm {
	_Atomic uint64_t handlers[4];        /* bitmap of registered dispatch ids */
	_Atomic uint64_t faults_lost;        /* faults dropped on a full queue */
	_Atomic uint64_t bad_deposits;       /* deposits refused at this core's regions */
	alignas(64) _Atomic uint32_t fault_head; /* engine writes */
	_Atomic uint32_t fault_tail;             /* core writes */
	struct dma_fault_rec faults[DMA_FAULT_SLOTS];
	uint64_t off_counters;               /* dma_counter_shm[dma_counters] */
	uint64_t off_regions;                /* dma_region_shm[dma_regions] */
	uint64_t off_injfifo;                /* torus_ring[inj_fifos] */
	uint32_t ninj, ncounters, nregions;
	_Atomic uint32_t closed;             /* its program returned (dma_core_finish) */
	struct torus_ring memfifo;           /* engine -> core: memory-FIFO packets */
};

/* Bytes the DMA block of one core needs (page-independent), and its set-up. */
uint64_t dma_core_shm_bytes(const struct torus_params *p);
uint64_t dma_core_slot_bytes(const struct torus_params *p);
void dma_core_shm_init(struct dma_core_shm *d, uint64_t off, uint64_t slot_off, const struct torus_params *p);
void dma_core_shm_dump(const struct dma_core_shm *d, void *base, uint32_t core, FILE *out);

static inline struct dma_counter_shm *dma_shm_counter(void *base, struct dma_core_shm *d, uint32_t i)
{
	return (struct dma_counter_shm *)((char *)base + d->off_counters) + i;
}
static inline struct dma_region_shm *dma_shm_region(void *base, struct dma_core_shm *d, uint32_t i)
{
	return (struct dma_region_shm *)((char *)base + d->off_regions) + i;
}
static inline struct torus_ring *dma_shm_injfifo(void *base, struct dma_core_shm *d, uint32_t i)
{
	return (struct torus_ring *)((char *)base + d->off_injfifo) + i;
}

/* The descriptor as it sits in an injection FIFO slot. */
struct dma_wire_desc {
	struct dma_desc d;
	torus_vt_t ready;      /* core clock after the injection overhead */
	uint32_t src_core;
};
_Static_assert(sizeof(struct dma_wire_desc) <= sizeof(struct torus_packet), "descriptor fits a slot");

/* ------------------------------------------------ process-local state */

struct dma_handler {
	dma_recv_fn fn;
	void *arg;
};

/* Core side (inside struct emu_core). */
/* Watermarks of a counter (dma_counter_watch): process-local, because the
 * node's own engine is the only one that deposits into its counters. */
struct dma_watch {
	uint32_t n;
	_Atomic uint32_t next;                /* marks crossed so far */
	int64_t *level;                       /* strictly decreasing */
	torus_vt_t *vt;                       /* when each was crossed */
};

void dma_watch_free(struct dma_watch *w);

struct dma_core_local {
	struct dma_core_shm *shm;
	struct dma_watch *_Atomic *watch;     /* dma_counters entries, NULL: none */
	struct torus_ring_view memfifo;       /* consumer */
	struct emu_stash mstash;              /* memory-FIFO packets drained, not yet taken */
	struct emu_stash astash;              /* those sent in any order, not yet handled */
	uint64_t msgs;                        /* memory-FIFO messages posted (their names) */
	/* fault reports the engines delivered, not yet matched to
	 * the timekeeper's (which say when) */
	struct dma_fault_rec *fstash;
	uint32_t nfstash, capfstash;
	struct dma_injfifo *fifos;            /* inj_fifos handles */
	struct dma_handler handlers[256];
	void **region_base;                   /* dma_regions entries */
	int polling;                          /* inside dma_recfifo_poll (no re-entry) */
	/* bit i: injection FIFO i may hold descriptors. Set by the core after
	 * it publishes one; cleared by the engine when it finds the FIFO empty
	 * (it re-checks after clearing), so the engine scans only these. */
	_Atomic uint32_t nonempty;
};

struct dma_injfifo {
	emu_core_t *core;
	uint32_t index;
	struct torus_ring_view view;          /* producer */
};

/* A transfer the engine is injecting: from a core's FIFO or a remote get. */
struct dma_job {
	struct dma_desc d;
	torus_vt_t ready;
	uint32_t src_core;                     /* for faults and the sideband */
	uint32_t aux;                          /* sideband of its packets: who faults go to */
	uint32_t src_region;                   /* remote get: the region read (checked per packet) */
	uint64_t src_offset;
	uint64_t done;                         /* bytes injected so far */
	const uint8_t *src;
	uint32_t last_len;                     /* the last packet's injection-counter
						* decrement, applied once the job is retired */
};

struct dma_engine_fifo {
	struct torus_ring_view view;          /* consumer */
	struct dma_job job;                   /* head descriptor, once taken */
	int active;
	struct emu_bell *core_bell;
};

/* A counter decrement the engine has not applied yet (dma_counter_sub). */
struct dma_counter_op {
	uint32_t id;
	uint64_t bytes;
	torus_vt_t vt;
};
#define DMA_PENDING_OPS 64u
_Static_assert(DMA_PENDING_OPS <= 64, "dma_counter_flush_slow keeps a 64-bit mask");

/*
 * Where another core's DMA tables are, as its node's process would find
 * them in shared memory (node block -> core block -> DMA block -> tables):
 * the layout never changes during a job, so each process remembers it per
 * core on first use. A post checks its destination's tables; this leaves
 * one cache line of another process's memory to read per check, not four
 * lines on four pages (the 8x8x8 all-to-all posts 1.3 million parts a
 * call, 511 destinations per core). Filled by whichever thread comes
 * first, all with the same values: d last (release), read first (acquire).
 */
struct dma_peer {
	_Atomic(struct dma_region_shm *) regions;
	_Atomic(struct dma_counter_shm *) counters;
	_Atomic(struct dma_core_shm *) d;
};

/* Engine side (inside struct emu_node_rt). */
struct dma_engine {
	struct dma_peer *peer;                /* every core of the job, by global rank */
	struct dma_engine_fifo *fifo;         /* ncores * inj_fifos */
	struct torus_ring_view *memfifo;      /* producer, per core */
	struct dma_job *replies;              /* remote gets to answer; grows */
	uint32_t nreplies, capreplies, reply_head;
	struct dma_fault_rec *nacks;          /* faults to send back; grows */
	uint32_t *nack_dest;                  /* aux of their destination */
	uint32_t nnacks, capnacks, nack_head;
	uint64_t injected;                    /* descriptors finished */
	struct dma_counter_op pend[DMA_PENDING_OPS]; /* decrements to apply (dma_counter_flush) */
	uint32_t npend;
	/* the region local_range looked up last, valid within the engine
	 * iteration (epoch) that looked it up (see local_range) */
	uint32_t rc_id;
	uint64_t rc_epoch, rc_size;
	uint8_t *rc_base;
	/* likewise the reception counter a deposit found allocated last
	 * (dma_deliver_counter_ok) */
	uint32_t cc_id;
	uint64_t cc_epoch;
};

int dma_node_setup(struct emu_node_rt *rt, char *err, size_t errlen);
void dma_node_teardown(struct emu_node_rt *rt);
int dma_core_setup(struct emu_node_rt *rt, emu_core_t *c, char *err, size_t errlen);
/* a memory-FIFO packet's name in the core's stash (its sender,
 * message and index), emu_stash_name_fn */
uint64_t dma_memfifo_name(const struct torus_packet *pkt, const struct torus_side *side);
/* the core's reception FIFO into its stashes (messages sent in any
 * order apart: they are handled as they come); how many, or -ENOMEM */
int dma_core_drain(emu_core_t *c);
void dma_core_teardown(emu_core_t *c);
/* A core's function returned: its regions close (no deposit touches them
 * once this returns), so the program may free them. */
int dma_core_finish(emu_core_t *c);
/* Engine: inject from descriptor FIFOs and reply queues; packets moved. */
uint32_t dma_engine_inject(struct emu_node_rt *rt);
/* Descriptors or replies not yet fully injected. */
int dma_engine_backlog(const struct emu_node_rt *rt);
/* Engine: deposit a DMA packet that reached this node; 0 if it must wait. */
int dma_engine_deliver(struct emu_node_rt *rt, const struct torus_packet *pkt, const struct torus_side *side);
/*
 * Counter update from the engine: subtract bytes at virtual time vt. Queued:
 * the engine applies its decrements in batches (dma_counter_flush), one set
 * of atomics per counter per batch instead of per packet, before it
 * publishes the deposits as delivered and within the same engine iteration
 * (so emu_engine_quiesce still covers them).
 */
void dma_counter_flush_slow(struct emu_node_rt *rt);
static inline void dma_counter_sub(struct emu_node_rt *rt, uint32_t id, uint64_t bytes, torus_vt_t vt)
{
	struct dma_engine *e = rt->dma;
	if (bytes == 0)
		return; /* an empty message changes nothing (counter_change) */
	if (e->npend == DMA_PENDING_OPS)
		dma_counter_flush_slow(rt);
	e->pend[e->npend++] = (struct dma_counter_op){id, bytes, vt};
}
static inline void dma_counter_flush(struct emu_node_rt *rt)
{
	if (rt->dma->npend)
		dma_counter_flush_slow(rt);
}

/*
 * ThreadSanitizer sees one process, so it cannot see that a barrier orders
 * every core's work before it, in every node process, before the engines'
 * later deposits and remote-get reads (the chain runs through other
 * processes). These annotations state that edge on one address per node;
 * they compile to nothing without TSan.
 */
#if defined(__SANITIZE_THREAD__)
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
static inline void dma_tsan_acquire(void *a) { __tsan_acquire(a); }
static inline void dma_tsan_release(void *a) { __tsan_release(a); }
#else
static inline void dma_tsan_acquire(void *a) { (void)a; }
static inline void dma_tsan_release(void *a) { (void)a; }
#endif

/*
 * The engine's common deposit, a put into the region it deposited into
 * last (local_range's memory of it, this iteration), inline; anything else
 * (another region, out of range, no region) goes to dma_engine_deliver.
 */
#define WIRE_NO_COUNTER 0xFFFFu
/* Did a deposit into counter `counter` (wire id) find it allocated earlier
 * in this engine iteration? Otherwise dma_engine_deliver looks it up. */
static inline int dma_counter_seen(const struct dma_engine *e, uint32_t counter, uint64_t epoch)
{
	return counter == WIRE_NO_COUNTER || (counter == e->cc_id && epoch == e->cc_epoch);
}
static inline int dma_deliver_put_fast(struct emu_node_rt *rt, const struct torus_packet *pkt,
				       const struct torus_side *side)
{
	struct dma_engine *e = rt->dma;
	uint32_t offset, len = pkt->hdr.len;
	uint16_t region, counter;
	memcpy(&offset, &pkt->hdr.sw.bytes[0], 4);
	memcpy(&region, &pkt->hdr.sw.bytes[4], 2);
	memcpy(&counter, &pkt->hdr.sw.bytes[6], 2);
	uint64_t epoch = atomic_load_explicit(&rt->epoch, memory_order_relaxed);
	if (region != e->rc_id || epoch != e->rc_epoch || len > TORUS_MAX_PAYLOAD || offset > e->rc_size ||
	    len > e->rc_size - offset ||
	    !dma_counter_seen(e, counter, epoch))
		return dma_engine_deliver(rt, pkt, side);
	dma_tsan_acquire(&rt->hdr->barrier[0]);
	torus_payload_copy(e->rc_base + offset, pkt->payload, len);
	dma_tsan_release(&rt->hdr->barrier[0]);
	if (counter != WIRE_NO_COUNTER)
		dma_counter_sub(rt, counter, len, side->vt);
	return 1;
}

static inline struct dma_core_shm *dma_core_shm_of(const struct emu_shm *m, struct emu_core_shm *cs)
{
	return (struct dma_core_shm *)((char *)m->base + cs->off_dma);
}

#endif
