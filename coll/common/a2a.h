/*
 * The all-to-all family's shared machinery: a plan (every message of every
 * member, step by step), the builders' helpers, and the executor that runs
 * one member's part of a plan on the DMA unit.
 *
 * A plan is the whole schedule of one call, for every member: steps (each
 * labelled with its phase and round), and in each step every member's
 *   pre-copies   local copies before it sends (packing),
 *   puts         messages: a contiguous range of one of its buffers into a
 *                range of the receiver's RECV or TMP buffer, counted on the
 *                receiver's counter `slot`,
 *   waits        the slots it receives in that step (it waits for them),
 *   post-copies  local copies after the waits (unpacking, regrouping).
 * Buffers: SEND (the caller's send), RECV (the caller's recv), TMP (the
 * member's scratch, tmp_bytes long). Every range a put or copy writes is
 * written once per call, so no message can overwrite data not yet used,
 * whatever the order the members run in.
 *
 * Every member builds the same plan (it is a pure function of the algorithm,
 * the team's geometry and the block size) and runs its own part; torus-bench
 * --explain prints it without running it.
 */
#ifndef COLL_A2A_H
#define COLL_A2A_H

#include "../coll_internal.h"

#include <stdio.h>

enum a2a_buf { A2A_SEND = 0, A2A_RECV = 1, A2A_TMP = 2 };

struct a2a_put {
	uint32_t src, dst, step, slot; /* slot: the receiver's counter index */
	uint8_t sbuf, dbuf;
	uint64_t soff, doff, len;
	uint32_t nblocks; /* blocks it carries (explain) */
	uint32_t seq;     /* order made (a stable sort by step) */
};

struct a2a_copy {
	uint32_t member, step;
	uint8_t post; /* 0: before the step's puts, 1: after its waits */
	uint8_t sbuf, dbuf;
	uint64_t soff, doff, len;
	uint32_t seq;
};

struct a2a_step {
	uint32_t phase, round;
};

struct coll_plan {
	const struct a2a_algo *algo;
	uint32_t p;
	uint64_t block;           /* bytes of one block (count * esz) */
	uint32_t nsteps, nphases, nrounds;
	struct a2a_step *steps;
	size_t steps_cap;
	struct a2a_put *puts;     /* in the order they are made: by step, then member */
	size_t nputs, puts_cap;
	struct a2a_copy *copies;
	size_t ncopies, copies_cap;
	uint64_t *tmp_bytes;      /* per member */
	uint32_t *nslots;         /* per member: messages it receives */
	const uint32_t *node;     /* node of each member (the caller's) */
	const struct torus_shape *shape;
	int oom;
	/* the block mover (multi-hop algorithms): where member u holds block
	 * id = s * p + v (from s, for v): buf << 30 | offset / block, in an
	 * open-addressing table of mvcap slots per member (mvkey, mvval; a
	 * member holds p blocks at a time, so 4p slots keep it sparse) */
	uint32_t *mvkey, *mvval, *mvused, mvcap;
	/* the member whose part is kept (puts from or to it, its copies), or
	 * A2A_ALL: a member running the plan needs only its own */
	uint32_t only;
	uint64_t recv_bytes;      /* the recv buffer's length (0: p * block) */
	int vstats;               /* count start-ups and extra memory (coll_alltoallv) */
	/* a team barrier at the start of every phase after the first, between
	 * its packing and its puts (after the member's own earlier puts have
	 * left): phases may then reuse scratch that earlier ones landed in or
	 * sent from (002's barrier at the start of every stage of A4); 2: the
	 * plan packs even and odd phases into different areas, and their puts
	 * count on two injection counters: a phase waits only for the puts of
	 * the phase before last, from the area it packs into, which every
	 * member had received before the last barrier (the wait is immediate;
	 * it is the ordering ThreadSanitizer and the code can see) */
	int stage_sync;
	/* 1: before a step's copies and puts, a member waits for its puts of
	 * earlier steps to leave. Scratch may then be landed in again: by a
	 * member that, since the last read of that scratch, received a message
	 * its owner sent after that read (the ring's landing areas) */
	int inj_order;
	/*
	 * Counter batches, for a member that receives more messages than it
	 * has counters (kmax, set before building; 0: no batches): the steps
	 * split into batches, bstart[b] the first step of batch b, so that
	 * every member receives at most kmax messages in a batch. A message's
	 * counter is then its slot modulo kmax (a member's slots in a batch are
	 * consecutive), and the members re-arm and meet between batches.
	 * unbatchable: a step alone holds more, or messages came out of step
	 * order. bn, bgen, sn, sstep: per member, the work of the split.
	 */
	uint32_t kmax, nbatch, bcur;
	uint32_t *bstart;
	size_t bcap;
	int unbatchable;
	uint32_t *bn, *bgen, *sn, *sstep;
};

#define A2A_NOWHERE UINT32_MAX
#define A2A_ALL UINT32_MAX

/* The team's geometry, as the builders see it. */
struct a2a_geom {
	uint32_t p;
	const uint32_t *node;           /* node of each member */
	const struct torus_shape *shape;
	int node_order;                 /* member i is node i, one per node, every node */
	uint32_t payload;               /* payload bytes of a full packet */
	uint32_t counters;              /* a member's DMA counters (dma_counters); 0: no limit */
};

struct a2a_algo {
	const char *name;
	unsigned tag;   /* enum torus_tag_algo */
	/* 1 if the team fits (else 0, the reason in *why), and the most
	 * messages a member receives (*msgs: the counters it needs) */
	int (*fits)(const struct a2a_geom *g, uint32_t *msgs, const char **why);
	int (*build)(struct coll_plan *pl, const struct a2a_geom *g);
	/* 1: its plans receive a few messages per member and step, made in
	 * step order, so a member with fewer counters than messages reuses
	 * them batch after batch (a2a_exec.c): it fits any team */
	int reuse;
};

/* ---------------------------------------------------------------- builders */

/* Open a new step of phase/round; returns its index. */
uint32_t a2a_step(struct coll_plan *pl, uint32_t phase, uint32_t round);
/* A message; its slot is the receiver's next. */
void a2a_put(struct coll_plan *pl, uint32_t step, uint32_t src, uint32_t dst, enum a2a_buf sbuf, uint64_t soff,
	     enum a2a_buf dbuf, uint64_t doff, uint64_t len, uint32_t nblocks);
/* One part of a message sent in several puts on one counter: slot
 * UINT32_MAX for the first part (returns the slot the others must give);
 * a part carries blocks 0 (explain counts the message once, by its first
 * part's nblocks... parts count as messages of 0 blocks). */
uint32_t a2a_put_part(struct coll_plan *pl, uint32_t step, uint32_t src, uint32_t dst, uint32_t slot,
		      enum a2a_buf sbuf, uint64_t soff, enum a2a_buf dbuf, uint64_t doff, uint64_t len);
void a2a_copy(struct coll_plan *pl, uint32_t step, int post, uint32_t member, enum a2a_buf sbuf, uint64_t soff,
	      enum a2a_buf dbuf, uint64_t doff, uint64_t len);
/* Scratch of member u: a fresh range of len bytes (its offset). */
uint64_t a2a_tmp(struct coll_plan *pl, uint32_t u, uint64_t len);
/* Member u's block for v goes straight from its send buffer to v's recv
 * buffer (a copy if u == v). */
void a2a_direct(struct coll_plan *pl, uint32_t step, uint32_t u, uint32_t v);

/* The block mover: every member starts with its own p blocks (in SEND). */
int a2a_mv_init(struct coll_plan *pl);
/* u sends blocks ids[0..n) (id = s * p + v: from s, for v) to peer in one
 * message: packed in u's scratch unless already contiguous and in order;
 * landing in peer's recv if they are all for it from consecutive sources,
 * else in fresh scratch of peer. */
void a2a_mv_send(struct coll_plan *pl, uint32_t step, uint32_t u, uint32_t peer, const uint32_t *ids, uint32_t n);
/* Each member's blocks for itself go to their place in recv (post-copies
 * of step `step`), and the mover's memory is freed. */
void a2a_mv_finish(struct coll_plan *pl, uint32_t step);

/* ---------------------------------------------------------------- plans */

const struct a2a_algo *a2a_find(const char *name);
/* A plan built by hand (coll_alltoallv's algorithms): new, then steps,
 * puts and copies, then done (sorts it; -ENOMEM if anything failed). */
struct coll_plan *a2a_plan_new(uint32_t p, const uint32_t *node, const struct torus_shape *s, uint64_t block,
			       uint32_t only);
int a2a_plan_done(struct coll_plan *pl);
/* only: the member whose part to keep, or A2A_ALL */
int a2a_plan_build(const struct a2a_algo *al, const struct a2a_geom *g, uint64_t block, uint32_t only,
		   struct coll_plan **out);
uint32_t a2a_plan_slots_max(const struct coll_plan *pl);

/* Run member `me`'s part of the plan (coll_alltoall's executor). */
int a2a_execute(coll_team_t *t, const struct coll_plan *pl, const void *send, void *recv, uint64_t check);

/* The default rule (coll/alltoall/alltoall_default.c). */
const char *coll_alltoall_default_rule(const struct a2a_geom *g, uint64_t block_bytes, uint32_t counters);

/* the algorithms (coll/alltoall/) */
extern const struct a2a_algo a2a_direct_algo, a2a_factor_algo, a2a_xor_algo, a2a_ring_algo, a2a_mesh2d_algo,
	a2a_bruck_algo, a2a_torus_algo, a2a_hier_algo;

#endif
