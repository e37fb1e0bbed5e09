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

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

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

/* A size in bytes, as every program of the project reads one: digits, then
 * nothing or B, K or KiB, M or MiB, G or GiB, T or TiB (powers of 2):
 * "4096", "64K", "1MiB". 0 and *out; -EINVAL if malformed (a sign, spaces,
 * another unit), -ERANGE if above max. */
int torus_size_parse(const char *text, uint64_t max, uint64_t *out);
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
	uint32_t exact_nice;       /* steps nicer than torusrun its nodes run, up to 512 threads (host knob) */
	uint64_t inj_overhead_ps;  /* core time to post one DMA descriptor */
	uint64_t copy_bw;          /* bytes per second of a local DMA copy */
	uint64_t barrier_latency_ps; /* latency of the barrier network */
	uint64_t reduce_bw;        /* bytes per second a core reduces (gamma) */
	uint64_t poll_cost_ps;     /* core time one poll that finds nothing costs */
	uint64_t exact_lead_ps;    /* how far a core may post ahead of the simulation (host knob; 0: no bound) */
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
/* ------------------------------------------------------------ time model */

/* Serialisation time of `wire` bytes on one link direction, rounded up to 1 ps. */
static inline torus_vt_t torus_ser_ps(const struct torus_params *p, uint32_t wire)
{
	return ((uint64_t)wire * 1000000000000ull + p->link_bw - 1) / p->link_bw;
}

/* A link direction's counters (emu_link_read, the report). */
struct torus_link_counters {
	uint64_t packets, payload_bytes, wire_bytes, busy_ps, free_at;
};

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
