/*
 * torus/ — the emulated machine: shape and coordinates, routing, the packet
 * format, link FIFOs, machine parameters and the per-link virtual-time model.
 *
 * This layer knows nothing about processes, threads, DMA or collectives. Every
 * struct that lives in shared memory is fixed-size and asserted at compile time.
 * Virtual time is in integer picoseconds (torus_vt_t) so that the model is
 * exact and identical on every run.
 */
#ifndef TORUS_MACHINE_H
#define TORUS_MACHINE_H

#include <stdalign.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TORUS_MAX_DIMS 6
#define TORUS_MAX_DIM_SIZE 4096u   /* per dimension */
#define TORUS_MAX_NODES 65536u     /* node processes in one job */
#define TORUS_MAX_CORES 64u        /* cores (threads) per node */
#define TORUS_SLOT_BYTES 256u      /* every FIFO slot holds one packet */
#define TORUS_HDR_BYTES 16u        /* 8 hardware + 8 software bytes */
#define TORUS_MAX_PAYLOAD (TORUS_SLOT_BYTES - TORUS_HDR_BYTES) /* 240 */
#define TORUS_ROUTE_LOCAL 0xFFu    /* route table entry: destination is here */

typedef uint64_t torus_vt_t; /* virtual time, picoseconds */

/* per-packet hot path: keep it inline whatever the optimisation level */
#define TORUS_HOT static inline __attribute__((always_inline))

/* ------------------------------------------------------------------ shape */

struct torus_shape {
	uint32_t ndims;                    /* 1..6 */
	uint32_t dims[TORUS_MAX_DIMS];     /* size of each dimension, >= 1 */
	uint32_t stride[TORUS_MAX_DIMS];   /* rank = sum coord[d] * stride[d] */
	uint32_t nnodes;
};

/* Direction of travel along a dimension. Link index l = 2*dim + dir. */
enum torus_dir { TORUS_PLUS = 0, TORUS_MINUS = 1 };

/* Parse "4x4x4" (also "8"); 0 or -EINVAL with a one-line reason in err. */
int torus_shape_parse(const char *text, struct torus_shape *out, char *err, size_t errlen);
/* Build from explicit sizes; validates like the parser. */
int torus_shape_init(struct torus_shape *out, uint32_t ndims, const uint32_t *dims,
		     char *err, size_t errlen);
/* "4x4x4" into buf; returns buf. */
char *torus_shape_format(const struct torus_shape *s, char *buf, size_t len);

void torus_rank_to_coords(const struct torus_shape *s, uint32_t rank, uint32_t *coords);
uint32_t torus_coords_to_rank(const struct torus_shape *s, const uint32_t *coords);
/* Neighbouring node one hop along dim in direction dir (itself if dims[dim]==1). */
uint32_t torus_neighbor(const struct torus_shape *s, uint32_t rank, uint32_t dim,
			enum torus_dir dir);
/* Does a link exist along dim? (size-1 dimensions have none.) */
static inline int torus_dim_has_links(const struct torus_shape *s, uint32_t dim)
{
	return dim < s->ndims && s->dims[dim] > 1;
}

/*
 * Minimal signed offset from coordinate a to b on a ring of size n, in
 * [-n/2, n/2]. A tie (n even, distance n/2) goes PLUS from an even coordinate
 * and MINUS from an odd one, so both directions of a ring carry tie traffic.
 * A tie can only happen on a packet's first hop in a dimension, so deciding
 * again at every hop never changes direction midway.
 */
int32_t torus_ring_delta(uint32_t n, uint32_t a, uint32_t b);
/* Minimal hop count between two nodes (sum over dimensions of |delta|). */
uint32_t torus_hops(const struct torus_shape *s, uint32_t a, uint32_t b);

/*
 * Route table of one node: entry[dest] = link index 2*dim+dir of the first hop
 * under dimension-order routing (lowest dimension first), or TORUS_ROUTE_LOCAL.
 * table must hold s->nnodes bytes.
 */
void torus_route_table(const struct torus_shape *s, uint32_t here, uint8_t *table);

/*
 * Per-dimension direction hints carried in a packet (2 bits per dimension):
 * 0 = minimal (route table), 1 = force PLUS, 2 = force MINUS. Forcing a
 * direction keeps a path under one ring length, so the dateline argument
 * still holds. Used e.g. to drive both links of a size-2 dimension.
 */
#define TORUS_HINT_MIN 0u
#define TORUS_HINT_PLUS 1u
#define TORUS_HINT_MINUS 2u
static inline uint16_t torus_hint_set(uint16_t hints, uint32_t dim, uint32_t h)
{
	return (uint16_t)((hints & ~(3u << (2 * dim))) | ((h & 3u) << (2 * dim)));
}
static inline uint32_t torus_route_apply_hints(uint32_t link, uint16_t hints)
{
	uint32_t dim = link >> 1, h = (hints >> (2 * dim)) & 3u;
	return h ? 2 * dim + (h - 1) : link;
}
/* Is the hop from coordinate c along dir the ring's wrap-around (dateline)? */
static inline int torus_hop_is_wrap(uint32_t n, uint32_t c, enum torus_dir dir)
{
	return dir == TORUS_PLUS ? c == n - 1 : c == 0;
}

/* ----------------------------------------------------------- parameters */

struct torus_params {
	uint64_t link_bw;          /* bytes per second per link direction */
	uint64_t hop_latency_ps;   /* added once per hop after serialisation */
	uint32_t ack_overhead;     /* wire bytes per packet for acknowledgment */
	uint32_t header_bytes;     /* packet header (hardware + software) */
	uint32_t chunk_bytes;      /* packet size granularity */
	uint32_t max_packet;       /* largest packet on the wire, <= 256 */
	uint32_t fifo_slots;       /* slots per virtual channel per link direction */
	uint32_t inj_slots;        /* slots of each core's injection FIFO */
	uint32_t rx_slots;         /* slots of each core's reception FIFO */
	uint32_t inj_fifos;        /* DMA injection FIFOs per core */
	uint32_t dma_counters;     /* DMA byte counters per core */
	uint32_t dma_regions;      /* registered memory regions per core */
	uint32_t pad_;
	uint64_t inj_overhead_ps;  /* core time to post one DMA descriptor */
	uint64_t copy_bw;          /* bytes per second of a local DMA copy */
	uint64_t barrier_latency_ps; /* latency of the barrier network */
	uint64_t reduce_bw;        /* bytes per second a core reduces (gamma) */
};

/* Blue Gene/P defaults (003_b0aac8c3d10c7733.txt, section 5.1). */
void torus_params_default(struct torus_params *p);
/*
 * Apply "name=value" (e.g. "link_bw=425MB/s", "hop_latency=50ns",
 * "fifo_slots=4"). 0, or -EINVAL with a one-line reason in err.
 */
int torus_params_set(struct torus_params *p, const char *assignment, char *err, size_t errlen);
/* Cross-field checks (sizes consistent, power-of-two slots, ...). */
int torus_params_check(const struct torus_params *p, char *err, size_t errlen);
/* Print the table of parameters with defaults and units (for --help). */
void torus_params_help(FILE *out);
/* Write the parameters as JSON object members (no braces). */
void torus_params_json(const struct torus_params *p, FILE *out, const char *indent);

/*
 * Per-link settings (torusrun --link, or "link =" lines of a --config file):
 * one link direction, the sending node's outgoing link `link` (2 x dim +
 * dir, dir 0 plus), with its own bandwidth and hop latency (0: the
 * machine's). Text form "NODE:DIR:NAME=VALUE[,NAME=VALUE]": NODE a rank or
 * coordinates joined by dots (1.0.2), DIR +x -x +y -y +z -z or +D/-D for
 * dimension D (0-based), NAME link_bw or hop_latency with their units.
 */
#define TORUS_MAX_LINK_SETS 64
struct torus_link_set {
	uint32_t node, link;
	uint64_t link_bw;          /* bytes per second; 0: the machine's */
	uint64_t hop_latency_ps;   /* UINT64_MAX: the machine's */
};
/* Parse one setting for shape s; 0, or -EINVAL with a one-line reason. */
int torus_link_set_parse(const struct torus_shape *s, const char *text, struct torus_link_set *out, char *err,
			 size_t errlen);
/* The machine's parameters as link `ls` sees them (ls NULL: p unchanged). */
void torus_link_params(const struct torus_params *p, const struct torus_link_set *ls, struct torus_params *out);
/* "+x", "-y", "+3": the name of link index `link` (2 x dim + dir). */
const char *torus_link_name(uint32_t link, char buf[8]);

static inline uint32_t torus_params_payload(const struct torus_params *p)
{
	return p->max_packet - p->header_bytes;
}

/* ---------------------------------------------------------------- packet */

/* Packet kinds (4 bits). The DMA layer adds its own kinds above RAW. */
enum torus_pkt_kind {
	TORUS_PKT_RAW = 1,   /* raw packet interface: payload to a core's reception FIFO */
	TORUS_PKT_KIND_MAX = 15
};

struct torus_pkt_hdr {
	/* 8 hardware bytes: what the router reads */
	uint32_t dest;       /* destination node rank */
	uint8_t len;         /* payload bytes, 0..240; wire size follows from it */
	uint8_t vc_kind;     /* bit 0: virtual channel; bits 4..7: packet kind */
	uint16_t hints;      /* direction hints, 2 bits per dimension */
	/* 8 software bytes: what the destination needs to deposit the payload */
	union {
		struct {
			uint32_t src;      /* source node rank */
			uint8_t dst_core;
			uint8_t src_core;
			uint16_t user;     /* free for the sender */
		} raw;
		uint8_t bytes[8];
	} sw;
};

struct torus_packet {
	struct torus_pkt_hdr hdr;
	uint8_t payload[TORUS_MAX_PAYLOAD];
};

_Static_assert(sizeof(struct torus_pkt_hdr) == TORUS_HDR_BYTES, "16-byte packet header");
_Static_assert(sizeof(struct torus_packet) == TORUS_SLOT_BYTES, "256-byte packet slot");

static inline uint32_t torus_pkt_kind(const struct torus_pkt_hdr *h) { return h->vc_kind >> 4; }
static inline uint32_t torus_pkt_vc(const struct torus_pkt_hdr *h) { return h->vc_kind & 1u; }
static inline void torus_pkt_set_vc(struct torus_pkt_hdr *h, uint32_t vc)
{
	h->vc_kind = (uint8_t)((h->vc_kind & ~1u) | (vc & 1u));
}

/* Bytes a packet of `payload` bytes occupies on the wire, acks included. */
static inline uint32_t torus_wire_bytes(const struct torus_params *p, uint32_t payload)
{
	uint32_t size = p->header_bytes + payload;
	size = (size + p->chunk_bytes - 1) / p->chunk_bytes * p->chunk_bytes;
	return size + p->ack_overhead;
}
/* Bytes of a slot that carry a packet of `payload` bytes (what a hop copies). */
static inline uint32_t torus_pkt_copy_bytes(uint32_t payload)
{
	return (TORUS_HDR_BYTES + payload + 31u) & ~31u;
}
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

/* ------------------------------------------------------------ time model */

/* Serialisation time of `wire` bytes on one link direction, rounded up to 1 ps. */
static inline torus_vt_t torus_ser_ps(const struct torus_params *p, uint32_t wire)
{
	return ((uint64_t)wire * 1000000000000ull + p->link_bw - 1) / p->link_bw;
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

struct torus_link_counters {
	uint64_t packets, payload_bytes, wire_bytes, busy_ps, free_at;
};

/*
 * Charge one packet to the link under the time model: it leaves at
 * max(ready, free_at), holds the link for ser (its wire bytes at the link
 * bandwidth), and arrives `latency` later. Returns the arrival time.
 * Producer side only: the sending engine is the link's single writer.
 */
/* Count one packet on the link: free_at and the counters. Single writer
 * (the sending engine): plain relaxed load+store, read by the reporter. */
static inline void torus_link_count(struct torus_link *l, torus_vt_t free_at, uint32_t payload, uint32_t wire,
				    torus_vt_t ser)
{
	atomic_store_explicit(&l->free_at, free_at, memory_order_relaxed);
	atomic_store_explicit(&l->packets, atomic_load_explicit(&l->packets, memory_order_relaxed) + 1,
			      memory_order_relaxed);
	atomic_store_explicit(&l->payload_bytes,
			      atomic_load_explicit(&l->payload_bytes, memory_order_relaxed) + payload,
			      memory_order_relaxed);
	atomic_store_explicit(&l->wire_bytes,
			      atomic_load_explicit(&l->wire_bytes, memory_order_relaxed) + wire,
			      memory_order_relaxed);
	atomic_store_explicit(&l->busy_ps, atomic_load_explicit(&l->busy_ps, memory_order_relaxed) + ser,
			      memory_order_relaxed);
}

TORUS_HOT torus_vt_t torus_link_account(struct torus_link *l, torus_vt_t ready, uint32_t payload,
					    uint32_t wire, torus_vt_t ser, torus_vt_t latency)
{
	torus_vt_t free_at = atomic_load_explicit(&l->free_at, memory_order_relaxed);
	torus_vt_t start = ready > free_at ? ready : free_at;
	torus_link_count(l, start + ser, payload, wire, ser);
	return start + ser + latency;
}

static inline torus_vt_t torus_link_charge(struct torus_link *l, const struct torus_params *p,
					   torus_vt_t ready, uint32_t payload)
{
	uint32_t wire = torus_wire_bytes(p, payload);
	return torus_link_account(l, ready, payload, wire, torus_ser_ps(p, wire), p->hop_latency_ps);
}

/*
 * The busy calendar of one link direction, kept by its single producer (the
 * sending engine, in its own memory). A packet takes the first gap of the
 * calendar at or after its ready time that is long enough, so traffic that
 * reaches the link late in wall-clock order but early in virtual time (a
 * stream that lags behind another on a shared link) still gets the virtual
 * time it would have had: with free_at alone it would queue behind every
 * packet emitted before it. Packets emitted in ready order behave exactly
 * as with free_at. At most TORUS_CAL_SLOTS disjoint busy intervals are
 * kept; when more are needed the two neighbours with the smallest gap
 * merge (the gap is lost, which can only delay a packet, never speed one
 * up).
 */
#define TORUS_CAL_SLOTS 64u
struct torus_busy {
	torus_vt_t start, end;
	torus_vt_t ready;  /* the latest ready time of a packet in it */
	torus_vt_t shared; /* where the next packet sharing it may start */
};
struct torus_calendar {
	uint32_t n;
	struct torus_busy iv[TORUS_CAL_SLOTS];
};
/* Reserve ser picoseconds at or after ready; returns the start. */
torus_vt_t torus_calendar_reserve(struct torus_calendar *cal, torus_vt_t ready, torus_vt_t ser);
/*
 * The link's rule: as reserve when the first gap at or after ready leaves
 * the packet at most one packet late, or when the packet is not out of
 * order (every packet of the busy stretch it ran into was ready no later
 * than it): then it queues, exactly as with free_at. Otherwise it reached
 * the link late in wall-clock order and shares the stretch, as with
 * round-robin arbitration: it leaves one packet after it was ready (or
 * after the stretch began), sharing packets follow one another, and the
 * stretch grows by its time, so the link's total busy time is exact and
 * later traffic queues behind both. Returns the start.
 */
torus_vt_t torus_calendar_share(struct torus_calendar *cal, torus_vt_t ready, torus_vt_t ser);
/*
 * Packets from one input (a link virtual channel or a core's injection FIFO)
 * to one output link leave in order, one after another, as they would from
 * a hardware FIFO. A hardware FIFO holds them in the order they arrived, in
 * virtual time; the emulated one holds them in the order the upstream engine
 * happened to charge them, in wall clock, and where the upstream link was
 * shared (a calendar gap filled late) that is not always virtual-time
 * order. So the rule follows ready times (torus_order_ready):
 *
 * - a packet ready no earlier than the last in-order one leaves after
 *   everything this input sent on the link;
 * - one ready earlier was overtaken in wall clock only: it arrived first on
 *   the hardware and is not held behind the packets it would have preceded.
 *   Overtaken packets come in runs (the rest of a stream that lagged on the
 *   host), and within a run they still leave in order: a packet ready no
 *   earlier than the run's last leaves after the run, one ready earlier
 *   starts a new run.
 *
 * Either way, the in-order packets after it queue behind it
 * (torus_order_left).
 */
struct torus_order {
	torus_vt_t ready;      /* ready time of the last in-order packet */
	torus_vt_t left;       /* the latest departure so far */
	torus_vt_t late_ready; /* the current run of overtaken packets: its last ready time */
	torus_vt_t late_left;  /* and its latest departure */
	int late;              /* the packet being charged is an overtaken one */
};
static inline torus_vt_t torus_order_ready(struct torus_order *o, torus_vt_t vt)
{
	if (vt >= o->ready) {
		o->late = 0;
		o->ready = vt;
		return vt > o->left ? vt : o->left;
	}
	o->late = 1;
	if (vt < o->late_ready)
		o->late_left = 0; /* a new run */
	o->late_ready = vt;
	return vt > o->late_left ? vt : o->late_left;
}
static inline void torus_order_left(struct torus_order *o, torus_vt_t left)
{
	if (left > o->left)
		o->left = left;
	if (o->late && left > o->late_left)
		o->late_left = left;
}
/* Drop the intervals that end by `before` (no reservation will be earlier). */
void torus_calendar_forget(struct torus_calendar *cal, torus_vt_t before);

/* Per-payload-length wire bytes and serialisation times, computed once so
 * that the engine's per-packet path has no division. */
struct torus_cost {
	uint32_t wire[TORUS_MAX_PAYLOAD + 1];
	torus_vt_t ser[TORUS_MAX_PAYLOAD + 1];
	torus_vt_t hop_latency;
};
void torus_cost_init(struct torus_cost *c, const struct torus_params *p);
TORUS_HOT torus_vt_t torus_link_charge_cost(struct torus_link *l, const struct torus_cost *c,
						torus_vt_t ready, uint32_t payload)
{
	return torus_link_account(l, ready, payload, c->wire[payload], c->ser[payload], c->hop_latency);
}

/* The same with the link's calendar: the packet leaves at the first gap of
 * the calendar at or after ready (see struct torus_calendar). */
torus_vt_t torus_link_charge_cal_slow(struct torus_link *l, struct torus_calendar *cal, const struct torus_cost *c,
				      torus_vt_t ready, uint32_t payload);
TORUS_HOT torus_vt_t torus_link_charge_cal(struct torus_link *l, struct torus_calendar *cal, const struct torus_cost *c,
					   torus_vt_t ready, uint32_t payload)
{
	uint32_t n = cal->n;
	if (n && ready == cal->iv[n - 1].end) {
		/* the common case, back to back: the last stretch grows (what
		 * torus_calendar_share does here, without the search) */
		struct torus_busy *last = &cal->iv[n - 1];
		torus_vt_t ser = c->ser[payload];
		last->end = ready + ser;
		if (ready > last->ready)
			last->ready = ready;
		torus_link_count(l, last->end, payload, c->wire[payload], ser);
		return ready + ser + c->hop_latency;
	}
	return torus_link_charge_cal_slow(l, cal, c, ready, payload);
}

void torus_link_read(const struct torus_link *l, struct torus_link_counters *out);
/* Print each non-empty VC ring of the link, one line each, after `indent`. */
void torus_link_dump(const struct torus_link *l, const char *indent, FILE *out);

/*
 * Completion time, by the model, of m bytes sent as back-to-back full packets
 * over h hops on idle links starting at t0 (the formula in the README):
 *   T = t0 + sum_k s_k + (h-1) * (max_k s_k + L) + L
 * where s_k = ser(wire(payload_k)) and L = hop latency. h = 0 returns t0.
 */
torus_vt_t torus_model_transfer(const struct torus_params *p, uint64_t m, uint32_t h, torus_vt_t t0);

#ifdef __cplusplus
}
#endif
#endif
