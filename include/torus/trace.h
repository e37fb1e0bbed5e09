/*
 * Link traces: what `torusrun --trace FILE` writes and `torus-trace` reads.
 *
 * Trace tags. A DMA descriptor's `tag` (struct dma_desc) travels with every
 * packet of the transfer, hop by hop, and lands in the trace; the
 * collectives fill it with TORUS_TAG so a trace says which collective,
 * stage, phase and stream (color and direction) each byte belongs to.
 *
 * File format, version 2 (all integers little-endian, the host order of
 * every machine the emulator runs on; the reader checks; version 1 is
 * version 2 without the links chunk):
 *
 *   struct torus_trace_header        at offset 0, header_bytes long
 *   with torusrun --link, right after the header, one links chunk:
 *     struct torus_trace_chunk       kind TORUS_TRACE_CHUNK_LINKS
 *     struct torus_trace_link[n]     n = chunk.count: the link directions
 *                                    with a bandwidth or hop latency of
 *                                    their own (the header has the rest's)
 *   chunks, in any order:
 *     struct torus_trace_chunk       kind TORUS_TRACE_CHUNK_RECORDS
 *     struct torus_trace_rec[n]      n = chunk.count
 *   one end chunk, written by torusrun after the job (absent: the job was
 *   killed before it could be written; the reader says so):
 *     struct torus_trace_chunk       kind TORUS_TRACE_CHUNK_END
 *     struct torus_trace_end
 *     struct torus_trace_counters[n] n = chunk.count: every link direction's
 *                                    counters, as `torusrun --report` shows
 *
 * A record is a run of packets one node sent back to back on one of its
 * outgoing link directions (each starting when the previous one's
 * serialisation ended) with the same tag and packet kind: `start_ps` is when
 * the first began, `end_ps` when the last one's serialisation ended, and
 * busy_ps the sum of their serialisation times (= end - start for a run).
 * With --trace-packets every packet is its own record.
 * The header and each chunk carry a checksum (FNV-1a, 32 bits; a chunk's
 * covers its header and what follows it), so any changed byte is caught.
 */
#ifndef TORUS_TRACE_H
#define TORUS_TRACE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ tags */

/* Collective ids in a tag (0: traffic no collective claimed). */
enum torus_tag_coll {
	TORUS_TAG_NONE = 0,
	TORUS_TAG_REDUCE_SCATTER = 1,
	TORUS_TAG_ALLGATHER = 2,
	TORUS_TAG_ALLREDUCE = 3,
	TORUS_TAG_ALLTOALL = 4,
	TORUS_TAG_ALLTOALLV = 5,
	/* the MPI front end's collectives on point-to-point messages, and its
	 * point-to-point messages themselves */
	TORUS_TAG_BCAST = 6,
	TORUS_TAG_REDUCE = 7,
	TORUS_TAG_GATHER = 8,
	TORUS_TAG_SCATTER = 9,
	TORUS_TAG_SCAN = 10,
	TORUS_TAG_P2P = 11,
	/* one-sided communication (MPI_Put, MPI_Get, ...): its kind in the
	 * stage field (enum torus_tag_rma) */
	TORUS_TAG_RMA = 12,
	TORUS_TAG_CONTROL = 15,    /* a collective's address exchange, barriers */
};
/* Algorithms in a tag. */
enum torus_tag_algo {
	TORUS_ALGO_OTHER = 0, TORUS_ALGO_MULTICOLOR = 1, TORUS_ALGO_RING = 2, TORUS_ALGO_DIRECT = 3,
	/* the all-to-all family (phase: the plan's phase, stream: its step) */
	TORUS_ALGO_FACTOR = 4, TORUS_ALGO_XOR = 5, TORUS_ALGO_MESH2D = 6, TORUS_ALGO_BRUCK = 7, TORUS_ALGO_TORUS = 8,
	TORUS_ALGO_HIER_FACTOR = 9
};
/* One-sided traffic (TORUS_TAG_RMA): puts, gets (request and data),
 * accumulates, and the synchronisation's own (locks, epochs' messages). */
enum torus_tag_rma { TORUS_RMA_PUT = 1, TORUS_RMA_GET = 2, TORUS_RMA_ACC = 3, TORUS_RMA_SYNC = 4 };
/* An algorithm's name, as the catalogue gives it ("" for TORUS_ALGO_OTHER
 * and anything unknown). */
static inline const char *torus_tag_algo_name(uint32_t algo)
{
	static const char *const names[] = {"",	  "multicolor", "ring",  "direct", "factor",
					    "xor", "mesh2d",	"bruck", "torus",  "hierarchical_factor"};
	return algo < sizeof(names) / sizeof(names[0]) ? names[algo] : "";
}
/* Stages of a bucket collective (allreduce = reduce-scatter then allgather). */
enum torus_tag_stage { TORUS_STAGE_NONE = 0, TORUS_STAGE_RS = 1, TORUS_STAGE_AG = 2 };

/* coll: 4 bits; algo: 4 bits (enum torus_tag_algo); stage: 4 bits; phase:
 * 4 bits; stream: 16 bits (multicolor: color = stream / 2, direction =
 * stream % 2, 0 the plus ring). */
#define TORUS_TAG(coll, algo, stage, phase, stream)                                                    \
	((uint32_t)(coll) << 28 | ((uint32_t)(algo) & 15u) << 24 | ((uint32_t)(stage) & 15u) << 20 |   \
	 ((uint32_t)(phase) & 15u) << 16 | ((uint32_t)(stream) & 0xFFFFu))
static inline uint32_t torus_tag_coll(uint32_t tag) { return tag >> 28; }
static inline uint32_t torus_tag_algo(uint32_t tag) { return (tag >> 24) & 15u; }
static inline uint32_t torus_tag_stage(uint32_t tag) { return (tag >> 20) & 15u; }
static inline uint32_t torus_tag_phase(uint32_t tag) { return (tag >> 16) & 15u; }
static inline uint32_t torus_tag_stream(uint32_t tag) { return tag & 0xFFFFu; }

/* ---------------------------------------------------------------- format */

#define TORUS_TRACE_MAGIC "TORUSTRC"   /* 8 bytes, no terminator in the file */
#define TORUS_TRACE_VERSION 2u
#define TORUS_TRACE_ENDIAN 0x01020304u /* as the writer stored it */

struct torus_trace_header {
	char magic[8];
	uint32_t version;
	uint32_t header_bytes;       /* sizeof(struct torus_trace_header) */
	uint32_t record_bytes;       /* sizeof(struct torus_trace_rec) */
	uint32_t endian;             /* TORUS_TRACE_ENDIAN */
	uint32_t ndims;
	uint32_t dims[6];
	uint32_t nnodes;
	uint32_t total_cores;
	uint32_t flags;              /* TORUS_TRACE_F_* */
	/* the machine parameters that turn bytes into time */
	uint64_t link_bw;            /* bytes per second per link direction */
	uint64_t hop_latency_ps;
	uint32_t pkt_header_bytes;
	uint32_t chunk_bytes;
	uint32_t ack_overhead;
	uint32_t max_packet;
	uint64_t created_unix;       /* seconds */
	char program[128];           /* the job's command line, truncated, NUL-terminated */
	uint32_t checksum;           /* FNV-1a of the header with this field 0 */
	uint8_t reserved[148];
};
#define TORUS_TRACE_F_PACKETS 1u     /* one record per packet (--trace-packets) */

enum torus_trace_chunk_kind { TORUS_TRACE_CHUNK_RECORDS = 0x4B4E4843u /* "CHNK" */,
			      TORUS_TRACE_CHUNK_END = 0x21444E45u /* "END!" */,
			      TORUS_TRACE_CHUNK_LINKS = 0x4B4E494Cu /* "LINK" */ };

/* A link direction with settings of its own (torusrun --link). */
struct torus_trace_link {
	uint32_t node, dim, dir;     /* the sending node's outgoing link; dir 0 = plus */
	uint32_t reserved;
	uint64_t link_bw;            /* bytes per second */
	uint64_t hop_latency_ps;
};

struct torus_trace_chunk {
	uint32_t kind;               /* enum torus_trace_chunk_kind */
	uint32_t node;               /* RECORDS: the sending node */
	uint32_t count;              /* records (or counters) that follow */
	uint32_t seq;                /* RECORDS: the node's chunk number, from 0 */
	uint32_t bytes;              /* bytes that follow this chunk header */
	uint32_t checksum;           /* FNV-1a of this header (checksum 0) and the bytes */
	uint64_t reserved;
};

struct torus_trace_rec {
	uint64_t start_ps;           /* the first packet starts serialising */
	uint64_t end_ps;             /* the last packet's serialisation ends */
	uint64_t busy_ps;            /* sum of the packets' serialisation times */
	uint32_t packets;
	uint32_t payload_bytes;
	uint32_t wire_bytes;
	uint32_t tag;                /* TORUS_TAG, from the sender's descriptor */
	uint8_t dim, dir;            /* the sending node's outgoing link: dir 0 = plus */
	uint8_t kind;                /* packet kind (enum torus_pkt_kind, DMA kinds above) */
	uint8_t reserved[5];
};

struct torus_trace_end {
	uint64_t emulated_ps;        /* the job's emulated time */
	double wall_s;
	uint32_t status;             /* 0 finished, 1 failed, 2 hung, 3 interrupted */
	uint32_t nodes_flushed;      /* nodes whose trace writer finished cleanly */
	uint64_t records;            /* records the nodes wrote */
	uint64_t reserved[4];
};

struct torus_trace_counters {
	uint32_t node, dim, dir, to;
	uint64_t packets, payload_bytes, wire_bytes, busy_ps;
};

_Static_assert(sizeof(struct torus_trace_header) == 384, "trace header layout");
_Static_assert(sizeof(struct torus_trace_chunk) == 32, "trace chunk layout");
_Static_assert(sizeof(struct torus_trace_rec) == 48, "trace record layout");
_Static_assert(sizeof(struct torus_trace_end) == 64, "trace end layout");
_Static_assert(sizeof(struct torus_trace_counters) == 48, "trace counters layout");
_Static_assert(sizeof(struct torus_trace_link) == 32, "trace link layout");

/* FNV-1a, 32 bits: the chunk checksum. */
static inline uint32_t torus_trace_checksum(const void *p, uint64_t n)
{
	const unsigned char *b = (const unsigned char *)p;
	uint32_t h = 2166136261u;
	for (uint64_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 16777619u;
	return h;
}

/* Continue an FNV-1a checksum over more bytes. */
static inline uint32_t torus_trace_checksum_more(uint32_t h, const void *p, uint64_t n)
{
	const unsigned char *b = (const unsigned char *)p;
	for (uint64_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 16777619u;
	return h;
}

/* The checksum of a chunk: its header (checksum field 0), then its bytes. */
static inline uint32_t torus_trace_chunk_checksum(const struct torus_trace_chunk *c, const void *body)
{
	struct torus_trace_chunk z = *c;
	z.checksum = 0;
	return torus_trace_checksum_more(torus_trace_checksum(&z, sizeof(z)), body, c->bytes);
}

/* The checksum of a file header (checksum field 0). */
static inline uint32_t torus_trace_header_checksum(const struct torus_trace_header *h)
{
	struct torus_trace_header z = *h;
	z.checksum = 0;
	return torus_trace_checksum(&z, sizeof(z));
}

#ifdef __cplusplus
}
#endif
#endif
