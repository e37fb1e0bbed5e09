/*
 * torus-bench's shared declarations: its limits, options, alltoallv
 * patterns, reference, rows and per-core state, and the functions its
 * files share (apps/torus_bench.c: main; apps/bench/bench_opts.c: the
 * command line, patterns and sizes; bench_ref.c: the reference results;
 * bench_run.c: the job, per collective family; bench_out.c: the output).
 */
#ifndef TORUS_BENCH_H
#define TORUS_BENCH_H

#include "torus/coll.h"

#include <stdint.h>
#include <stdio.h>

#define PROG "torus-bench"
#define MAX_SIZES 64
#define MAX_BYTES (1ull << 40)
#define MAX_REPS 1000

/* alltoallv --pattern: who sends whom how much (v_count, bench_opts.c) */
enum v_pattern { V_PATTERN1, V_PATTERN2, V_CASE1, V_CASE2, V_CASE3, V_CASE4, V_RANDOM, V_SKEWED, V_NPATTERNS };
extern const char *const v_pattern_names[V_NPATTERNS];
extern int v_symmetric; /* --inplace: random and skewed symmetric */

struct opts {
	enum coll_kind kind;
	const char *algo; /* NULL: the default (TORUS_COLL_<KIND>, else the first that fits) */
	uint64_t sizes[MAX_SIZES];
	unsigned nsizes;
	enum coll_dtype dtype;
	enum coll_op op;
	uint64_t delay_ns;
	uint32_t k; /* --cores-per-node; 0: every core */
	uint32_t warmup, reps; /* untimed, then timed calls per size */
	int json, check;
	int members_cores; /* alltoall --members cores: every core is a member */
	int explain;       /* alltoall --explain: print the schedule, run nothing */
	int inplace;       /* alltoallv --inplace: coll_alltoallv_inplace */
	int pattern;       /* alltoallv --pattern (enum v_pattern) */
	uint64_t seed;     /* alltoallv --seed */
	int64_t corrupt_node;  /* TORUS_BENCH_CORRUPT: -1, or the node */
	uint64_t corrupt_elem; /* and the element of its result */
	char error[512]; /* a command-line error, reported from inside the job */
};

extern struct opts opt;

/* The reference's parameters (bench_ref.c). */
struct ref {
	uint32_t p, q, b;
	uint64_t m;
};

struct row {
	uint64_t bytes, count, emulated_ps;
	double bound_ps, ratio, wall_s;
	int64_t link_max, link_min;
	double link_ps, round_ps; /* alltoall: its two bounds */
	const char *algo;         /* alltoall: the algorithm of this size */
	struct coll_v_stats vst;  /* alltoallv: the most over the members */
};

/* alltoallv: this core's counts and displacements (a member's, in elements) */
struct v_counts {
	int64_t *sc, *sd, *rc, *rd;
	uint64_t stot, rtot; /* elements sent and received */
};
extern _Thread_local struct v_counts vc;

/* The first mismatch a checking core found (a core per node, or every core
 * with alltoall --members cores). */
struct mismatch {
	uint64_t wrong, wrong_at;
	double got, want;
};
extern _Thread_local struct mismatch chk;

/* Exit status for main (2: command line, 1: failure); every node's core 0
 * sets the same value. */
extern _Atomic int exit_status;

/* bench_opts.c: the command line, the patterns, the sizes */
void usage(FILE *f);
/* Parse the command line into opt: 1 for --help, 0, or -1 with opt.error
 * set (one line). */
int parse_args(int argc, char **argv);
/* Elements member i sends j under pattern pat, m the largest message. */
int64_t v_count(int pat, uint64_t seed, uint32_t p, uint32_t i, uint32_t j, uint64_t m);
int v_setup(uint32_t me, uint32_t p, uint64_t m);
int v_most(uint32_t me, uint32_t p, uint64_t *smax, uint64_t *rmax);
uint64_t run_bytes(uint32_t members, uint64_t nmax, uint64_t v_send, uint64_t v_recv);
uint64_t unit_bytes(uint32_t p);
int job_check(emu_core_t *c, char *msg, size_t len, uint32_t *k);

/* bench_ref.c: the reference */
uint64_t mix(uint64_t x); /* the reference's hash */
void ref_init(struct ref *f, uint32_t p);
void fill(void *send, void *recv, uint32_t me, uint32_t p, size_t count, const struct ref *f);
int verify(void *recv, uint32_t me, uint32_t p, size_t count, const struct ref *f);

/* bench_out.c: the table's (or JSON's) header and rows */
void print_header(emu_core_t *c, uint32_t k, const char *algo, int deflt, const char *shape);
void print_row(const struct row *r, unsigned i);

/* bench_run.c: every core's program in the job */
int bench_core(emu_core_t *c, void *arg);

#endif
