/*
 * coll/ — collectives written only against the DMA API (torus/dma.h).
 *
 * A team is a list of cores (global core ranks, emu_core_global), like an
 * MPI communicator; every member calls the collective with the same
 * arguments. Data is a typed vector (MPI-like datatypes and reduction
 * operations). Semantics follow MPI:
 *
 *   coll_reduce_scatter  MPI_Reduce_scatter_block: send holds size*count
 *                        elements, recv gets the count reduced elements of
 *                        this member's block (block i to member i);
 *   coll_allgather       MPI_Allgather: send holds count elements, recv
 *                        gets size*count, member i's at block i;
 *   coll_allreduce       MPI_Allreduce: send and recv hold count elements;
 *   coll_alltoall        MPI_Alltoall: send and recv hold size*count
 *                        elements; member i's block j (send + j*count)
 *                        ends as member j's block i (recv + i*count);
 *   coll_alltoallv       MPI_Alltoallv (below).
 *
 * Algorithms are chosen by name from one catalogue per collective (the
 * `algo` argument; NULL: the TORUS_COLL_<COLLECTIVE> environment variable,
 * else the first algorithm whose restrictions the team meets).
 *
 * Errors (negative, the same on every member where it can be seen):
 *   -EINVAL   NULL team or buffers, unknown dtype, op undefined on the
 *             dtype, overlapping send and receive buffers;
 *   -ENOENT   no algorithm of that name;
 *   -ENOTSUP  the team does not meet the algorithm's restrictions;
 *   -EPROTO   members were called with different counts, dtypes, ops or
 *             algorithms (found when neighbours exchange addresses, then
 *             agreed by every member before any data moves);
 *   DMA errors (enum dma_error, e.g. DMA_ERR_NOSPACE) from the DMA unit.
 */
#ifndef TORUS_COLL_H
#define TORUS_COLL_H

#include "torus/dma.h"

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

enum coll_dtype { COLL_INT32, COLL_INT64, COLL_FLOAT, COLL_DOUBLE, COLL_DTYPE_COUNT };
enum coll_op { COLL_SUM, COLL_PROD, COLL_MIN, COLL_MAX, COLL_BAND, COLL_BOR, COLL_OP_COUNT };

size_t coll_dtype_size(enum coll_dtype t);
const char *coll_dtype_name(enum coll_dtype t);
const char *coll_op_name(enum coll_op op);
/* Parse "int32", "double", "sum", "bor", ...; 0 or -EINVAL. */
int coll_dtype_parse(const char *s, enum coll_dtype *t);
int coll_op_parse(const char *s, enum coll_op *op);
/* Is op defined on t? (bitwise operations only on integers) */
int coll_op_valid(enum coll_dtype t, enum coll_op op);
/* inout[i] = inout[i] op in[i] for count elements; -EINVAL if undefined. */
int coll_reduce_local(enum coll_dtype t, enum coll_op op, void *inout, const void *in, size_t count);

typedef struct coll_team coll_team_t;
/* A team of the given cores; the caller must be one of them. Collective:
 * every member must create it (it exchanges nothing yet). */
int coll_team_create(emu_core_t *c, const uint32_t *members, size_t n, coll_team_t **out);
/* Every core of the job, in global rank order. */
int coll_team_world(emu_core_t *c, coll_team_t **out);
/*
 * A node team: cores 0..cores-1 of each of the given nodes act as ONE
 * member per node (rank = the node's position in `nodes`), like an MPI
 * process whose threads all enter the collective. Every one of those cores
 * calls each collective with the same arguments and the same buffers (a
 * node's cores share its memory); the algorithm shares the work among them
 * (the multicolor algorithms: one color, or one color and direction, per
 * core). Algorithms without a multi-core variant run on core 0 while the
 * others wait. cores = 0 means every core of the node (all nodes must then
 * have the same number).
 */
int coll_team_create_nodes(emu_core_t *c, const uint32_t *nodes, size_t n, uint32_t cores, coll_team_t **out);
/* Every node of the job, in node order. */
int coll_team_nodes(emu_core_t *c, uint32_t cores, coll_team_t **out);
void coll_team_free(coll_team_t *t);
/*
 * Traces (torusrun --trace) show each call's traffic under its collective
 * (TORUS_TAG in torus/trace.h). This tags the team's calls as collective
 * `coll` (enum torus_tag_coll, e.g. TORUS_TAG_CONTROL for bookkeeping such
 * as agreeing on timings) until set back to 0 (their own kind). Local to
 * the calling core's handle. 0 or -EINVAL.
 */
int coll_team_set_trace_tag(coll_team_t *t, unsigned coll);
uint32_t coll_team_size(const coll_team_t *t);  /* members (nodes, for a node team) */
uint32_t coll_team_rank(const coll_team_t *t);
uint32_t coll_team_cores(const coll_team_t *t); /* cores per member: 1 but for node teams */

int coll_reduce_scatter(coll_team_t *t, const void *send, void *recv, size_t count, enum coll_dtype dtype,
			enum coll_op op, const char *algo);
int coll_allgather(coll_team_t *t, const void *send, void *recv, size_t count, enum coll_dtype dtype,
		   const char *algo);
int coll_allreduce(coll_team_t *t, const void *send, void *recv, size_t count, enum coll_dtype dtype,
		   enum coll_op op, const char *algo);

int coll_alltoall(coll_team_t *t, const void *send, void *recv, size_t count, enum coll_dtype dtype,
		  const char *algo);

/*
 * MPI_Alltoallv: member i sends scounts[j] elements from send + sdispls[j]
 * (in elements of dtype) to member j, which gets them at recv +
 * rdispls[i]; rcounts[i] must equal member i's scounts[j]. Errors, on every
 * member (never a hang): -EINVAL for a NULL array or buffer, a negative
 * count or displacement, a size past 2^63 bytes, two receive ranges that
 * overlap, or send and receive ranges that overlap; -EPROTO when a
 * member's counts disagree with its peer's (found in the address
 * exchange); and the errors of coll_alltoall. algo NULL: the default.
 * coll_alltoallv_stats() then tells what the call did on this member.
 */
int coll_alltoallv(coll_team_t *t, const void *send, const int64_t *scounts, const int64_t *sdispls, void *recv,
		   const int64_t *rcounts, const int64_t *rdispls, enum coll_dtype dtype, const char *algo);
/*
 * In place, in O(P) extra memory (004_c43df3ab966fe92b.txt): buf holds
 * this member's outgoing data packed in member order (scounts[j] elements
 * for member j, one after another) and ends holding its incoming data
 * packed in member order (rcounts[i] from member i). The totals must be
 * equal (the buffer keeps its size); rcounts[i] must equal member i's
 * scounts[me]. Algorithms (COLL_F_INPLACE in the alltoallv catalogue):
 * "auto" (the default), "bitonic" (every member's total equal),
 * "pairwise". Extra memory: a bounce buffer of TORUS_COLL_INPLACE_BOUNCE
 * bytes (default 4096) and the run tables, O(P) in practice (the most is
 * in coll_alltoallv_stats' extra_bytes). Errors as coll_alltoallv's, and
 * -EINVAL when the totals differ, -ENOTSUP for "bitonic" when members'
 * totals differ. Out-of-place algorithms refuse in-place calls and the
 * reverse (-ENOTSUP).
 */
int coll_alltoallv_inplace(coll_team_t *t, void *buf, const int64_t *scounts, const int64_t *rcounts,
			   enum coll_dtype dtype, const char *algo);
#define COLL_V_MAX_STAGES 8
struct coll_v_stats {
	uint32_t stages;                        /* communication stages of the algorithm */
	uint64_t startups[COLL_V_MAX_STAGES];   /* messages this member sent, per stage */
	uint64_t longest[COLL_V_MAX_STAGES];    /* its longest message per stage, bytes */
	uint64_t extra_bytes;                   /* the most memory it allocated at once beyond send and recv */
	char ran[16];                           /* the algorithm that ran ("auto": the one it picked) */
};
/* What this core's last coll_alltoallv on t counted (0 or -EINVAL). */
int coll_alltoallv_stats(const coll_team_t *t, struct coll_v_stats *out);

enum coll_kind {
	COLL_REDUCE_SCATTER, COLL_ALLGATHER, COLL_ALLREDUCE, COLL_ALLTOALL, COLL_ALLTOALLV, COLL_KIND_COUNT
};

/*
 * Artificial computation delay (the experiment of Fig. 6(d)): every
 * reduction of a collective additionally charges ps_per_kib picoseconds of
 * virtual time per KiB it reduces, on the core that reduces. 0 (the
 * default) turns it off. Process-wide: set it on every node.
 */
void coll_set_compute_delay(uint64_t ps_per_kib);

/* ----------------------------------------------------------- lower bounds */

/* Time per payload byte on one link direction when packets are full (the
 * bandwidth term beta of the paper), in picoseconds. */
double coll_beta_ps(const struct torus_params *p);
/*
 * The bidirectional lower bound on the bandwidth cost of Fig. 2 of
 * 003_b0aac8c3d10c7733.txt, in picoseconds, for a collective over every
 * node of the torus s: n_bytes is the paper's n, the whole vector each node
 * starts with (reduce-scatter, allreduce) or ends with (allgather):
 *   reduce-scatter, allgather  (p-1)/p * n beta / 2N
 *   allreduce                  2 (p-1)/p * n beta / 2N
 * N counts the dimensions that have links. 0 for one node.
 */
double coll_lower_bound_ps(enum coll_kind kind, const struct torus_shape *s, const struct torus_params *p,
			   double n_bytes);

/* ------------------------------------------------------ all-to-all plans */

/*
 * The schedule of an all-to-all, without running it (torus-bench --explain,
 * the bounds, the tests of the papers' counts): every message of every
 * member, in steps labelled with a phase and a round. A step is what a
 * member does between two waits: it posts its messages of the step, then
 * waits for the ones it receives in it. member_node[i] is the node of team
 * member i (a node team: node i); prm: the machine (NULL: the defaults;
 * the payload of a packet shapes some plans); algo NULL: the default rule
 * (coll_alltoall_default, for prm's counters). Errors: -EINVAL (bad arguments, more than
 * COLL_A2A_MAX_MEMBERS members), -ENOENT (no such algorithm), -ENOTSUP (the
 * team does not fit it), -ENOMEM.
 */
#define COLL_A2A_MAX_MEMBERS 4096u
typedef struct coll_plan coll_plan_t;
int coll_alltoall_plan(const char *algo, const struct torus_shape *s, const struct torus_params *prm,
		       const uint32_t *member_node, uint32_t p, uint64_t block_bytes, coll_plan_t **out);
void coll_plan_free(coll_plan_t *pl);
const char *coll_plan_algo(const coll_plan_t *pl);
uint32_t coll_plan_steps(const coll_plan_t *pl);
uint32_t coll_plan_phases(const coll_plan_t *pl);
uint32_t coll_plan_rounds(const coll_plan_t *pl); /* over all phases */
uint32_t coll_plan_messages(const coll_plan_t *pl);
uint64_t coll_plan_tmp_bytes(const coll_plan_t *pl, uint32_t member);
int coll_plan_step_info(const coll_plan_t *pl, uint32_t step, uint32_t *phase, uint32_t *round);
struct coll_plan_msg {
	uint32_t step, from, to; /* members */
	uint64_t bytes;
	uint32_t blocks;         /* blocks it carries (combining algorithms: several) */
};
/* Message i (0 .. coll_plan_messages - 1), in step order. */
int coll_plan_message(const coll_plan_t *pl, uint32_t i, struct coll_plan_msg *m);
struct coll_plan_bounds {
	uint64_t link_max_wire; /* wire bytes of the most loaded link direction (dimension-order routes) */
	double link_ps;         /* link_max_wire / link_bw: the link-load bound */
	double round_ps;        /* the critical path of the steps with no contention: the round bound */
};
int coll_plan_bounds(const coll_plan_t *pl, const struct torus_params *prm, struct coll_plan_bounds *b);
/* The schedule as text (one line per step) or JSON (a top-level "steps"). */
int coll_plan_print(const coll_plan_t *pl, FILE *f, int json);
/* The catalogue's choice for an all-to-all of block_bytes per block on a
 * machine of dma_counters counters per core (0: the default, 64); the rule
 * is in coll/alltoall/alltoall_default.c. */
const char *coll_alltoall_default(const struct torus_shape *s, const uint32_t *member_node, uint32_t p,
				  uint64_t block_bytes, uint32_t dma_counters);

/* ------------------------------------------------------------- catalogue */


struct coll_args {
	coll_team_t *team;
	const void *send;
	void *recv;
	size_t count;
	enum coll_dtype dtype;
	enum coll_op op;
	uint64_t check;  /* hash of what every member must agree on (set by the dispatcher) */
	/* coll_alltoallv: counts and displacements, in elements */
	const int64_t *scounts, *sdispls, *rcounts, *rdispls;
	int inplace;     /* coll_alltoallv_inplace: send == recv, no displacements */
};

struct coll_algorithm {
	const char *name;          /* what a user types to select it */
	enum coll_kind kind;
	int (*run)(const struct coll_args *a);
	const char *restrictions;  /* when it applies */
	unsigned flags;            /* COLL_F_* */
	int (*fits)(const coll_team_t *t); /* 1 if the team meets the restrictions */
	const char *description;   /* steps and the paper section */
};

#define COLL_F_MULTICORE 1u   /* shares a node team's work among its cores */
#define COLL_F_INPLACE 2u     /* alltoallv: runs coll_alltoallv_inplace calls (only those) */

/* The algorithms for one collective; *n gets their number. */
const struct coll_algorithm *coll_catalogue(enum coll_kind kind, size_t *n);
const char *coll_kind_name(enum coll_kind kind);
/* 1 if the team meets the algorithm's restrictions (else the call gives -ENOTSUP). */
int coll_team_fits(const coll_team_t *t, const struct coll_algorithm *alg);

#ifdef __cplusplus
}
#endif
#endif
