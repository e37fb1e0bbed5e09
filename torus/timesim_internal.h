/*
 * The timing simulator's insides (timesim.c: the simulation; timesim_setup.c:
 * memory, creation and teardown), shared by its two files. Private.
 */
#ifndef TORUS_TIMESIM_INTERNAL_H
#define TORUS_TIMESIM_INTERNAL_H

#include "timesim.h"

#include <stdatomic.h>

#define GEN_NONE UINT32_MAX
#define NLINKS (2 * TORUS_MAX_DIMS)

enum { PK_DATA, PK_GETREQ };

/*
 * A packet waiting in a queue. Where it waits says the rest: in a queue
 * of network input port 2 * link + (vc ? 0 : 1) it came in on that link
 * with that VC (the VC of its next hop, as refsim numbers the port); in a
 * DMA FIFO's or the reply queue's port it is that generator's packet, at
 * its origin; in a core's raw port it was posted raw.
 */
struct pkt {
	torus_vt_t ready;
	uint64_t cookie;
	uint64_t index;  /* a get request: its record in s->greq */
	uint32_t dest;
	uint16_t hints;
	uint8_t len, kind;
};

/*
 * A queue: its first packet held here, the others in a ring buffer (cap
 * mask + 1, a power of two, or no buffer yet). Most queues a packet passes
 * through on its way hold only it, and then the packet never leaves the
 * queue's own cache line, which arbitration reads anyway (the head's ready
 * time); the ring is for the queues that back up.
 */
struct queue {
	struct pkt first;   /* (first.ready: the head's ready time) */
	struct pkt *buf;
	uint32_t head, n, mask;   /* n: packets, the first included */
	uint32_t gen;       /* the generator whose packets wait here, GEN_NONE: none */
	uint64_t spare;     /* (a queue is one cache line) */
};
_Static_assert(sizeof(struct queue) == 64, "a queue is one cache line");
_Static_assert(sizeof(struct pkt) == 32, "a packet is half a cache line");

/* A get request's reply, while the request travels. */
struct greq {
	uint64_t reply_len;
	uint32_t origin, next_free;
};

struct job {
	uint64_t cookie;
	uint64_t rest;      /* bytes still to send */
	uint64_t index;     /* its next packet's number */
	torus_vt_t ready;
	uint32_t kind, dest, origin;
	uint64_t reply_len;
	uint16_t hints;
};

/* A DMA injection FIFO or the reply queue: its transfers, one after another. */
struct gen {
	struct job *jobs;
	size_t n, cap, head;
	torus_vt_t cursor;  /* when its previous packet left */
	int busy;           /* a packet of it waits at this node */
	uint32_t port;      /* the input port its packets wait in */
};

/*
 * An output of a node: a link direction, or local delivery. Outputs are
 * numbered 0 .. 2 * ndims - 1 (the links) and s->lout = 2 * ndims (local
 * delivery), so a 3-d torus keeps no queues for links it does not have.
 * Each output is one block, cache-line aligned: this header, the bitmap
 * of its non-empty queues (nwords words), then its queues (one per input
 * port), so that a departure touches the header's line and the lines of
 * the queues it looks at, and nothing else of the node.
 */
struct out {
	torus_vt_t free_at;
	torus_vt_t cand;    /* its pending departure, TIMESIM_NEVER: none */
	const struct torus_cost *cost;
	uint32_t rr;        /* the port served last */
	uint32_t nbr;       /* the node at its other end */
	uint32_t waiting;   /* non-empty queues */
	uint32_t pad;
};

struct node {
	unsigned char *blk;         /* the outputs' blocks, ostride bytes each */
	uint32_t ostride, qoff;     /* block size; its queues' offset in it */
	uint32_t wrap;              /* bit per link: the hop crosses the dateline */
	uint32_t nwords;
	uint32_t ngens, nports, first_core_port;
	struct gen *gens;           /* ncores * inj_fifos, then the reply queue */
	uint32_t coords[TORUS_MAX_DIMS];
};

#define NBUCKETS (1 + 16 * 16)

struct entry {
	torus_vt_t t;
	uint64_t key; /* class (0 delivery, 1 departure) << 62 | node << 20 | port or link */
};

/* A slot of the timing wheel: the entries whose time falls in it, unsorted. */
struct wslot {
	struct entry *e;
	size_t n, cap;
};

/* Entries in order (time, then key): e[h .. n), room for cap. */
struct elist {
	struct entry *e;
	size_t h, n, cap;
};

struct timesim {
	struct timesim_config cfg;
	struct torus_cost cost;
	struct node *nodes;
	uint32_t nnodes, pay, ndims, lout;
	int far;                   /* big enough that prefetching a hop ahead pays */
	uint32_t *coords;          /* [nnodes * ndims] (routing) */
	/* the events: a radix heap on time in base 16 (rb[1 + 16 * L + d]:
	 * entries whose time first differs from rlast in hex digit L, where
	 * theirs is d), rb[0] (those at rlast) a binary heap on key */
	struct rbucket {
		struct entry *e;
		size_t n, cap;
		torus_vt_t mint;   /* the smallest time in it (buckets 1.., not empty) */
	} rb[NBUCKETS];
	uint64_t occ[4];           /* bit i - 1: bucket i is not empty */
	/* the timing wheel before the radix heap (see "wheel" in timesim.c):
	 * slot i holds the entries of absolute slot a = t >> wshift with
	 * a & wmask == i and wcur < a < wcur + nslots; the run those with
	 * a <= wcur; the radix heap the rest */
	struct wslot *slot;
	uint64_t *wocc;            /* bit per slot: not empty */
	uint32_t nslots, wmask, wshift, nwocc;
	uint64_t wcur;
	size_t wcount;             /* entries in the slots */
	struct elist run;
	struct elist win;          /* the window */
	torus_vt_t rlast;
	size_t nheap;
	struct arena {
		struct chunk *chunks;
		unsigned char *cur;
		size_t left;
		void *freel[48];   /* free blocks of 2^i bytes */
	} ar;
	struct greq *greq;         /* get requests in flight, and a free list */
	uint32_t ngreq, greq_cap, greq_free;
	torus_vt_t now;            /* everything before it is final */
	torus_vt_t cur;            /* the event being processed (timesim_event_time) */
	int stop;                  /* timesim_stop: return after this event */
	_Atomic int cancel;        /* timesim_cancel (any thread): return at once */
	struct timesim_stats st;
};

static inline struct out *out_of(const struct node *nd, uint32_t out)
{
	return (struct out *)(void *)(nd->blk + (size_t)out * nd->ostride);
}
static inline uint64_t *bits_of(struct out *O) { return (uint64_t *)(void *)(O + 1); }
static inline struct queue *queues_of(const struct node *nd, struct out *O)
{
	return (struct queue *)(void *)((unsigned char *)O + nd->qoff);
}


/* timesim_setup.c: the rare slow paths of the hot ones */
int ts_q_grow(struct arena *a, struct queue *q, uint32_t rn);
/* An array of entries is full: twice the room (first: its first size). */
int ts_grow(struct entry **e, size_t *cap, size_t first);
/* Room for one more entry at the end of l: its spent front closed up, or
 * twice the room (first: its first size). */
int ts_elist_room(struct elist *l, size_t first);

#endif
