/*
 * torus-bench: one collective (allreduce, allgather or reduce_scatter) over
 * every node of the torus, timed in emulated time against the bandwidth
 * lower bound of Fig. 2 of 003_b0aac8c3d10c7733.txt, with the load it put
 * on the links, for message sizes doubling from A to B.
 *
 *   torusrun --torus 4x4x4 --cores 3 -- torus-bench allreduce --sizes 1K:16M
 *
 * Every core of every node runs the program. The team is a node team
 * (coll_team_nodes): cores 0..K-1 of each node act as one member; the other
 * cores only take part in the global barriers. For each size:
 *
 *   fill the input, read this node's outgoing link counters, barrier,
 *   t0 = emulated clock (wall clock on node 0), the collective, barrier,
 *   t1 = emulated clock (wall clock on node 0), barrier; check the result;
 *   combine the link loads.
 *
 * With --warmup W --reps R that is done W + R times per size; the row shows
 * the medians of the last R (so wall time can be compared with an MPI
 * benchmark's, which times warm calls), the link loads of the last call.
 *
 * Columns of the table (and keys of --json's rows):
 *   bytes        the paper's n: the whole vector each node starts with
 *                (reduce_scatter, allreduce) or ends with (allgather). The
 *                requested size rounded down to whole elements (and, for
 *                reduce_scatter and allgather, to a multiple of nodes x
 *                element size, so that count = n / (esz * nodes)).
 *   count        elements per call (--json only): n/esz for allreduce,
 *                n/(esz*nodes) for reduce_scatter and allgather.
 *   emulated_us  emulated time of the collective: t1 - t0 - barrier_latency
 *                (the closing barrier leaves every clock at max +
 *                barrier_latency), i.e. from the moment every node starts
 *                to the moment the last node finishes (emulated_ps).
 *   bound_us     coll_lower_bound_ps(): (p-1)/p n beta / 2N for
 *                reduce_scatter and allgather, twice that for allreduce
 *                (N = dimensions with links, beta = link time per payload
 *                byte with full packets) (lower_bound_ps).
 *   ratio        emulated / bound: 1.0 would be optimal; below 1.0 would
 *                mean the model or the bound is wrong. 0 if the bound is 0
 *                (one node).
 *   wall_s       wall-clock seconds of the collective on node 0 (wall_s).
 *   link_max_B   payload bytes carried by the most loaded link direction
 *                of the whole torus during the collective (link_max_bytes),
 *   link_min_B   and by the least loaded one (link_min_bytes); equal values
 *                mean perfectly balanced links. Address exchanges and
 *                other small control messages are included.
 *   check        ok: every element of every node's result matched the
 *                closed-form reference; off: --no-check (checked).
 *
 * The inputs are small integers chosen so that the result of every
 * operation has a closed form, exact in every datatype (float included),
 * computed in O(1) per element: see the reference section below.
 *
 * Test hook: TORUS_BENCH_CORRUPT=NODE:ELEMENT adds 1 to that element of
 * that node's result before the check (tests/test_bench.c uses it to see
 * that a wrong result is caught and reported).
 */
#include "torus/coll.h"
#include "torus/trace.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PROG "torus-bench"
#define MAX_SIZES 64
#define MAX_BYTES (1ull << 40)
#define MAX_REPS 1000

/* ------------------------------------------------------ alltoallv patterns */

/*
 * How many elements member i sends member j, m the largest message:
 *   pattern1  002 Fig. 14: a spike of m to one member chosen at random
 *             (seeded) per sender, "a small number" elsewhere: m/64 (>= 1);
 *   pattern2  002 Fig. 14, the 2-D transpose: the spike to (i % C) * C + i / C,
 *             C = ceil(sqrt p); where that is past p - 1 (p not a square),
 *             to i itself;
 *   case1-4   004's test cases, N = p * m per member, d = (j - i) mod p:
 *             case1 m everywhere; case2 0 for d < p/4, m for p/4 <= d <
 *             p-1, N/4 + m at d = p-1; case3 the same with p/2 and N/2;
 *             case4 N at d = p-1 (the shift). 004 prints N/4 and N/2 at
 *             d = p-1, which leaves rows at N - N/P; the + m makes every
 *             member send and receive N, as the paper requires;
 *   random    uniform in 0 .. m;
 *   skewed    m * u^4, u uniform in [0, 1): most small, a few large.
 */
enum v_pattern { V_PATTERN1, V_PATTERN2, V_CASE1, V_CASE2, V_CASE3, V_CASE4, V_RANDOM, V_SKEWED, V_NPATTERNS };
static const char *const v_pattern_names[V_NPATTERNS] = {"pattern1", "pattern2", "case1", "case2",
							 "case3",    "case4",    "random", "skewed"};

static uint64_t mix(uint64_t x); /* the reference's hash, below */
static int v_symmetric;          /* --inplace: random and skewed symmetric */

static int64_t v_count(int pat, uint64_t seed, uint32_t p, uint32_t i, uint32_t j, uint64_t m)
{
	uint64_t d = (j + (uint64_t)p - i) % p, small = m / 64 ? m / 64 : 1, n = (uint64_t)p * m;
	/* in place, random and skewed are symmetric (i sends j what j sends
	 * i, as MPI_IN_PLACE has it), so every member's totals match */
	uint32_t hi_ = v_symmetric && i > j ? j : i, hj_ = v_symmetric && i > j ? i : j;
	uint64_t h = mix(seed * 0x9e3779b97f4a7c15ull ^ ((uint64_t)hi_ << 32 | hj_));
	uint32_t C = 1, spike;
	while ((uint64_t)C * C < p)
		C++;
	switch (pat) {
	case V_PATTERN1:
		spike = (uint32_t)(mix(seed ^ 0x51ed27u ^ (uint64_t)i << 20) % p);
		return (int64_t)(j == spike ? m : small);
	case V_PATTERN2:
		spike = (i % C) * C + i / C;
		return (int64_t)(j == (spike < p ? spike : i) ? m : small);
	case V_CASE1: return (int64_t)m;
	case V_CASE2:
	case V_CASE3: {
		uint64_t cut = pat == V_CASE2 ? p / 4 : p / 2, last = pat == V_CASE2 ? n / 4 : n / 2;
		if (p == 1)
			return (int64_t)n;
		return (int64_t)(d == p - 1 ? last + m : d < cut ? 0 : m);
	}
	case V_CASE4: return (int64_t)(d == (p > 1 ? p - 1 : 0) ? n : 0);
	case V_SKEWED: {
		double u = (double)(h >> 11) / 9007199254740992.0;
		return (int64_t)((double)m * u * u * u * u);
	}
	default: return (int64_t)(h % (m + 1));
	}
}

/* Element k of member i's message to j (small integers: exact in float). */
static int64_t v_value(uint32_t i, uint32_t j, uint64_t k)
{
	return (int64_t)(mix((uint64_t)i << 40 ^ (uint64_t)j << 20 ^ k) % (1u << 20));
}

/* ------------------------------------------------------------ options */

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

static struct opts opt = {
	.pattern = V_RANDOM, .seed = 1,
	.kind = COLL_ALLREDUCE, .dtype = COLL_DOUBLE, .op = COLL_SUM, .check = 1, .corrupt_node = -1, .reps = 1};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: torusrun --torus DIMS [--cores C] -- torus-bench COLLECTIVE [options]\n"
		"  COLLECTIVE            allreduce | allgather | reduce_scatter | alltoall\n"
		"  --algo NAME           an algorithm of the collective's catalogue (below); default:\n"
		"                        $TORUS_COLL_<COLLECTIVE>, else the first one that fits\n"
		"  --sizes A:B | A       n in bytes, doubling from A to B, 1 to 1T (suffixes K, M, G,\n"
		"                        T = 2^10, 2^20, 2^30, 2^40; KiB, MiB, GiB, TiB, B also);\n"
		"                        default 1K:1M; a run whose buffers the host's memory cannot\n"
		"                        hold is refused before it starts\n"
		"  --dtype D             int32 | int64 | float | double (default double)\n"
		"  --op O                sum | prod | min | max | band | bor (default sum; band and\n"
		"                        bor need an integer dtype; allgather ignores it)\n"
		"  --compute-delay NS    NS ns of extra virtual compute per KiB reduced (Fig. 6(d));\n"
		"                        default 0\n"
		"  --cores-per-node K    cores of each node that run the collective (default 0: all)\n"
		"  --warmup W            untimed calls per size before the timed ones (default 0)\n"
		"  --reps R              timed calls per size (default 1); a row shows the median\n"
		"                        emulated and wall time of the R calls\n"
		"  --members M           alltoall: nodes (default; a node team, as the others) or\n"
		"                        cores (every core of every node is a member, as MPI ranks;\n"
		"                        with --cores-map, nodes of different sizes)\n"
		"  --pattern P           alltoallv: who sends how much to whom, the largest message\n"
		"                        being the size: pattern1 (one spike per member, to a random\n"
		"                        member), pattern2 (2-D transpose: member i to (i%%C)*C + i/C,\n"
		"                        C = ceil(sqrt p)) of 002's Fig. 14, case1..case4 of 004,\n"
		"                        random (uniform 0..size), skewed (size * u^4); default random\n"
		"  --seed S              alltoallv: the patterns' random seed (default 1)\n"
		"  --inplace             alltoallv: in place (coll_alltoallv_inplace, 004's algorithms:\n"
		"                        auto, bitonic, pairwise); the pattern must give every member\n"
		"                        as much to receive as to send: case1..case4 do, and random\n"
		"                        and skewed become symmetric (i sends j what j sends i)\n"
		"  --explain             alltoall: print the algorithm's schedule for the first size\n"
		"                        (phases, rounds, steps, who sends to whom) and run nothing;\n"
		"                        with --json, as JSON with a top-level \"steps\"\n"
		"  --json                one JSON document on stdout instead of the table\n"
		"  --no-check            do not check the results (alltoall: nor fill the buffers,\n"
		"                        so that the send buffers take no memory)\n"
		"  --help                this text (also works outside torusrun)\n"
		"\n"
		"n is the whole vector each node starts with (reduce_scatter, allreduce) or ends\n"
		"with (allgather); count = n/esz elements for allreduce, n/(esz*nodes) per node\n"
		"for reduce_scatter and allgather (sizes giving count 0 are refused). For\n"
		"alltoall n is each member's send vector: p blocks of count = n/(esz*p)\n"
		"elements; its bound is the larger of two, both printed: the link-load bound\n"
		"(wire bytes of the busiest link direction under dimension-order routing of the\n"
		"algorithm's messages, over the link bandwidth) and the round bound (the\n"
		"schedule's critical path without contention), and the default algorithm is\n"
		"the catalogue's rule for each size (shown per row). Each row:\n"
		"bytes, emulated time, the lower bound of Fig. 2 and their ratio (>= 1), wall\n"
		"time, the payload bytes of the most and least loaded link direction of the\n"
		"torus, and whether every element of every node's result was checked.\n"
		"--json prints {\"schema\": \"torus-bench/1\", \"collective\", \"algo\", \"torus\",\n"
		"\"nodes\", \"cores_per_node\", \"dtype\", \"op\", \"compute_delay_ns\", \"warmup\", \"reps\",\n"
		"\"rows\": [{\"bytes\",\n"
		"\"count\", \"emulated_ps\", \"lower_bound_ps\", \"ratio\", \"wall_s\", \"link_max_bytes\",\n"
		"\"link_min_bytes\", \"checked\"}, ...]}.\n"
		"\n"
		"Errors: a bad command line (unknown collective, --algo, --dtype or --op, an op\n"
		"the dtype lacks, a bad or too small size, K above a node's cores) prints ONE\n"
		"line 'torus-bench: ...' (from node 0) and nothing on stdout; every node exits\n"
		"with status 2, so torusrun adds 'torusrun: node R (...) exited with status 2'\n"
		"and 'job failed' lines and exits 1. (Outside torusrun such errors exit 2.)\n"
		"A collective that returns an error, or a wrong result, prints one line saying\n"
		"which (the failing node and element for a wrong result); the nodes exit 1 and\n"
		"so does torusrun. Rows done before stay on stdout (--json: the document with\n"
		"the rows that succeeded). Long runs report progress on stderr.\n");
	fprintf(f, "\nAlgorithms:\n");
	for (int k = 0; k < COLL_KIND_COUNT; k++) {
		size_t n;
		const struct coll_algorithm *a = coll_catalogue((enum coll_kind)k, &n);
		for (size_t i = 0; i < n; i++)
			fprintf(f, "  %-15s %-11s %s\n", i ? "" : coll_kind_name((enum coll_kind)k), a[i].name,
				a[i].restrictions);
	}
}

/* "16M", "1KiB", "4096": bytes; -1 if malformed or too large. */
static int parse_size(const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	if (!*s || *s < '0' || *s > '9')
		return -1;
	unsigned long long v = strtoull(s, &end, 10);
	unsigned shift = 0;
	if (!strcmp(end, "K") || !strcmp(end, "KiB"))
		shift = 10;
	else if (!strcmp(end, "M") || !strcmp(end, "MiB"))
		shift = 20;
	else if (!strcmp(end, "G") || !strcmp(end, "GiB"))
		shift = 30;
	else if (!strcmp(end, "T") || !strcmp(end, "TiB"))
		shift = 40;
	else if (*end && strcmp(end, "B"))
		return -1;
	if (errno || v > (MAX_BYTES >> shift))
		return -1;
	*out = (uint64_t)v << shift;
	return 0;
}

static int parse_u64(const char *s, uint64_t max, uint64_t *out)
{
	char *end;
	errno = 0;
	if (!s || *s < '0' || *s > '9')
		return -1;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end || v > max)
		return -1;
	*out = v;
	return 0;
}

/* Parse the command line into opt. Returns 1 for --help, 0, or -1 with
 * opt.error set. */
static int parse_args_raw(int argc, char **argv)
{
	const char *coll = NULL, *sizes = "1K:1M", *dtype = NULL, *op = NULL;
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
			return 1;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		uint64_t x;
		if (a[0] != '-') {
			if (coll) {
				snprintf(opt.error, sizeof(opt.error), "unexpected argument '%s' (see --help)", a);
				return -1;
			}
			coll = a;
			continue;
		}
		if (!strcmp(a, "--json")) {
			opt.json = 1;
			continue;
		}
		if (!strcmp(a, "--no-check")) {
			opt.check = 0;
			continue;
		}
		if (!strcmp(a, "--inplace")) {
			opt.inplace = v_symmetric = 1;
			continue;
		}
		if (!strcmp(a, "--explain")) {
			opt.explain = 1;
			continue;
		}
		if (!v) {
			snprintf(opt.error, sizeof(opt.error), "%s: unknown option, or its value is missing (see --help)", a);
			return -1;
		}
		i++;
		if (!strcmp(a, "--algo")) {
			opt.algo = v;
		} else if (!strcmp(a, "--sizes")) {
			sizes = v;
		} else if (!strcmp(a, "--dtype")) {
			dtype = v;
		} else if (!strcmp(a, "--op")) {
			op = v;
		} else if (!strcmp(a, "--compute-delay")) {
			if (parse_u64(v, 1000000000000ull, &x)) {
				snprintf(opt.error, sizeof(opt.error),
					 "bad --compute-delay '%s' (nanoseconds per KiB, 0 .. 10^12)", v);
				return -1;
			}
			opt.delay_ns = x;
		} else if (!strcmp(a, "--warmup") || !strcmp(a, "--reps")) {
			int reps = a[2] == 'r';
			if (parse_u64(v, MAX_REPS, &x) || (reps && x == 0)) {
				snprintf(opt.error, sizeof(opt.error), "bad %s '%s' (%u .. %u)", a, v, reps, MAX_REPS);
				return -1;
			}
			*(reps ? &opt.reps : &opt.warmup) = (uint32_t)x;
		} else if (!strcmp(a, "--pattern")) {
			int found_p = -1;
			for (int k = 0; k < V_NPATTERNS; k++)
				if (!strcmp(v, v_pattern_names[k]))
					found_p = k;
			if (found_p < 0) {
				snprintf(opt.error, sizeof(opt.error),
					 "unknown --pattern '%.64s' (pattern1, pattern2, case1, case2, case3, case4, random, skewed)",
					 v);
				return -1;
			}
			opt.pattern = found_p;
		} else if (!strcmp(a, "--seed")) {
			if (parse_u64(v, UINT64_MAX, &x)) {
				snprintf(opt.error, sizeof(opt.error), "bad --seed '%s' (a non-negative integer)", v);
				return -1;
			}
			opt.seed = x;
		} else if (!strcmp(a, "--members")) {
			if (strcmp(v, "cores") && strcmp(v, "nodes")) {
				snprintf(opt.error, sizeof(opt.error), "bad --members '%s' (nodes or cores)", v);
				return -1;
			}
			opt.members_cores = !strcmp(v, "cores");
		} else if (!strcmp(a, "--cores-per-node")) {
			if (parse_u64(v, TORUS_MAX_CORES, &x)) {
				snprintf(opt.error, sizeof(opt.error), "bad --cores-per-node '%s' (0 .. %u; 0: all)", v,
					 TORUS_MAX_CORES);
				return -1;
			}
			opt.k = (uint32_t)x;
		} else {
			snprintf(opt.error, sizeof(opt.error), "unknown option '%s' (see --help)", a);
			return -1;
		}
	}
	if (!coll) {
		snprintf(opt.error, sizeof(opt.error), "give the collective: allreduce, allgather, reduce_scatter or alltoall");
		return -1;
	}
	int found = 0;
	for (int k = 0; k < COLL_KIND_COUNT && !found; k++)
		if (!strcmp(coll, coll_kind_name((enum coll_kind)k))) {
			opt.kind = (enum coll_kind)k;
			found = 1;
		}
	if (!found) {
		snprintf(opt.error, sizeof(opt.error),
			 "unknown collective '%s' (allreduce, allgather, reduce_scatter or alltoall)", coll);
		return -1;
	}
	if (dtype && coll_dtype_parse(dtype, &opt.dtype)) {
		snprintf(opt.error, sizeof(opt.error), "unknown --dtype '%s' (int32, int64, float or double)", dtype);
		return -1;
	}
	if (op && coll_op_parse(op, &opt.op)) {
		snprintf(opt.error, sizeof(opt.error), "unknown --op '%s' (sum, prod, min, max, band or bor)", op);
		return -1;
	}
	if (opt.members_cores && opt.k) {
		snprintf(opt.error, sizeof(opt.error), "--cores-per-node is for node members (--members nodes)");
		return -1;
	}
	if (opt.inplace && opt.kind != COLL_ALLTOALLV) {
		snprintf(opt.error, sizeof(opt.error), "--inplace is for alltoallv only");
		return -1;
	}
	if (opt.explain && opt.kind != COLL_ALLTOALL) {
		snprintf(opt.error, sizeof(opt.error), "--explain is for alltoall only");
		return -1;
	}
	if (opt.members_cores && opt.kind != COLL_ALLTOALL && opt.kind != COLL_ALLTOALLV) {
		snprintf(opt.error, sizeof(opt.error), "--members is for alltoall and alltoallv only");
		return -1;
	}
	if (opt.kind != COLL_ALLGATHER && opt.kind != COLL_ALLTOALL && opt.kind != COLL_ALLTOALLV &&
	    !coll_op_valid(opt.dtype, opt.op)) {
		snprintf(opt.error, sizeof(opt.error), "--op %s is not defined on --dtype %s (bitwise ops need int32 or int64)",
			 coll_op_name(opt.op), coll_dtype_name(opt.dtype));
		return -1;
	}
	if (opt.algo) {
		size_t n;
		const struct coll_algorithm *list = coll_catalogue(opt.kind, &n);
		char names[256] = "";
		found = 0;
		for (size_t i = 0; i < n; i++) {
			found |= !strcmp(list[i].name, opt.algo);
			size_t used = strlen(names);
			snprintf(names + used, sizeof(names) - used, "%s%s", i ? ", " : "", list[i].name);
		}
		if (!found) {
			snprintf(opt.error, sizeof(opt.error), "unknown --algo '%.64s' for %s (have: %s)", opt.algo,
				 coll_kind_name(opt.kind), names);
			return -1;
		}
	}
	/* sizes: "A:B" or "A" */
	uint64_t lo, hi;
	const char *colon = strchr(sizes, ':');
	char first[64];
	snprintf(first, sizeof(first), "%.*s", (int)(colon ? (size_t)(colon - sizes) : strlen(sizes)), sizes);
	if (parse_size(first, &lo) || (colon ? parse_size(colon + 1, &hi) : (hi = lo, 0)) || lo == 0 || lo > hi) {
		snprintf(opt.error, sizeof(opt.error),
			 "bad --sizes '%s': give A:B or A, bytes from 1 to 1T with A <= B (e.g. 1K:16M)", sizes);
		return -1;
	}
	for (uint64_t s = lo; s <= hi && opt.nsizes < MAX_SIZES; s *= 2)
		opt.sizes[opt.nsizes++] = s;
	const char *cor = getenv("TORUS_BENCH_CORRUPT");
	unsigned long long cn, ce;
	if (cor && sscanf(cor, "%llu:%llu", &cn, &ce) == 2 && cn < UINT32_MAX) {
		opt.corrupt_node = (int64_t)cn;
		opt.corrupt_elem = ce;
	}
	return 0;
}

/* parse_args_raw, with the error kept to one line: the arguments it quotes
 * may hold control characters (fuzz-benchargs found a newline in one) */
static int parse_args(int argc, char **argv)
{
	int rc = parse_args_raw(argc, argv);
	for (char *e = opt.error; rc == -1 && *e; e++)
		if ((unsigned char)*e < 0x20 || *e == 0x7f)
			*e = '?';
	return rc;
}

/* ------------------------------------------------------------ reference */

/*
 * Inputs and closed-form results, with g(j) in [0, m) a hash of the element
 * index j (so that a misplaced block shows) and p the number of nodes.
 * Member r holds at index j:
 *   sum, min, max  g(j) + (r + j) % q       (q = p, or 1 beyond 2048 nodes)
 *                  sum = p g + q(q-1)/2 [q = p], min = g, max = g + q - 1
 *   prod           2 + g(j) % 3 at member j % p, 1 elsewhere; prod = 2 + g % 3
 *   bor            g(j) << 16 | bit (r + j) % b  (b = min(p, 16));
 *                  bor = g << 16 | (2^b - 1)
 *   band           g(j) << 16 | (0xffff without bit (r + j) % b);
 *                  band = g << 16 | (0xffff & ~(2^b - 1))
 * m is chosen so that every partial sum stays below 2^24: exact in float.
 * allgather: member r's element k is a(r * count + k), a(i) = hash(i) % 2^20.
 */
struct ref {
	uint32_t p, q, b;
	uint64_t m;
};

static void ref_init(struct ref *f, uint32_t p)
{
	uint64_t lim = (1ull << 24) / p;
	f->p = p;
	f->q = p <= 2048 ? p : 1;
	f->m = lim > f->q + 1 ? lim - f->q : 1;
	if (f->m > 1024)
		f->m = 1024;
	f->b = p < 16 ? p : 16;
}

static uint64_t mix(uint64_t x)
{
	x ^= x >> 31;
	x *= 0x7fb5d329728ea185ull;
	x ^= x >> 27;
	x *= 0x81dadef4bc2dd44dull;
	return x ^ (x >> 33);
}

static int64_t ref_input(const struct ref *f, enum coll_op op, uint32_t r, uint64_t j)
{
	int64_t g = (int64_t)(mix(j) % f->m);
	switch (op) {
	case COLL_PROD: return r == j % f->p ? 2 + g % 3 : 1;
	case COLL_BOR: return g << 16 | (int64_t)1 << ((r + j) % f->b);
	case COLL_BAND: return g << 16 | (0xffff & ~((int64_t)1 << ((r + j) % f->b)));
	default: return g + (int64_t)((r + j) % f->q);
	}
}

static int64_t ref_result(const struct ref *f, enum coll_op op, uint64_t j)
{
	int64_t g = (int64_t)(mix(j) % f->m), q = f->q, mask = ((int64_t)1 << f->b) - 1;
	switch (op) {
	case COLL_SUM: return (int64_t)f->p * g + q * (q - 1) / 2;
	case COLL_PROD: return 2 + g % 3;
	case COLL_MIN: return g;
	case COLL_MAX: return g + q - 1;
	case COLL_BOR: return g << 16 | mask;
	case COLL_BAND: return g << 16 | (0xffff & ~mask);
	default: return 0;
	}
}

static int64_t ref_gather(uint64_t i) { return (int64_t)(mix(i ^ 0x5bd1e995u) % (1u << 20)); }

static void put_elem(enum coll_dtype t, void *buf, size_t i, int64_t v)
{
	switch (t) {
	case COLL_INT32: ((int32_t *)buf)[i] = (int32_t)v; break;
	case COLL_INT64: ((int64_t *)buf)[i] = v; break;
	case COLL_FLOAT: ((float *)buf)[i] = (float)v; break;
	default: ((double *)buf)[i] = (double)v; break;
	}
}

/* Every value used is an integer below 2^27: exact as a double. */
static double get_elem(enum coll_dtype t, const void *buf, size_t i)
{
	switch (t) {
	case COLL_INT32: return ((const int32_t *)buf)[i];
	case COLL_INT64: return (double)((const int64_t *)buf)[i];
	case COLL_FLOAT: return ((const float *)buf)[i];
	default: return ((const double *)buf)[i];
	}
}

/* ------------------------------------------------------------ the job */

/* Exit status for main (2: command line, 1: failure); every node's core 0
 * sets the same value. */
static _Atomic int exit_status;

/* State shared by the cores of this node (threads of one process): core 0
 * writes it, the others read it after a barrier. */
static struct {
	void *send, *recv;
	uint64_t before[2 * TORUS_MAX_DIMS];
	int64_t lsend[2], lrecv[2]; /* most loaded link, minus the least loaded */
	uint32_t *leads; /* global rank of each node's core 0 */
	double wall[MAX_REPS], emulated[MAX_REPS]; /* node 0: the timed calls */
} node;

/* The first mismatch a checking core found (a core per node, or every core
 * with alltoall --members cores). */
static _Thread_local struct {
	uint64_t wrong, wrong_at;
	double got, want;
} chk;

struct row {
	uint64_t bytes, count, emulated_ps;
	double bound_ps, ratio, wall_s;
	int64_t link_max, link_min;
	double link_ps, round_ps; /* alltoall: its two bounds */
	const char *algo;         /* alltoall: the algorithm of this size */
	struct coll_v_stats vst;  /* alltoallv: the most over the members */
};

/* alltoallv: this core's counts and displacements (a member's, in elements) */
static _Thread_local struct {
	int64_t *sc, *sd, *rc, *rd;
	uint64_t stot, rtot; /* elements sent and received */
} vc;

/* This member's counts for largest message m (elements); prefix sums as
 * displacements. 0, or -ENOMEM. */
static int v_setup(uint32_t me, uint32_t p, uint64_t m)
{
	if (!vc.sc && !(vc.sc = malloc(4 * (size_t)p * sizeof(int64_t))))
		return -ENOMEM;
	vc.sd = vc.sc + p;
	vc.rc = vc.sc + 2 * p;
	vc.rd = vc.sc + 3 * p;
	vc.stot = vc.rtot = 0;
	for (uint32_t j = 0; j < p; j++) {
		vc.sc[j] = v_count(opt.pattern, opt.seed, p, me, j, m);
		vc.sd[j] = (int64_t)vc.stot;
		vc.stot += (uint64_t)vc.sc[j];
		vc.rc[j] = v_count(opt.pattern, opt.seed, p, j, me, m);
		vc.rd[j] = (int64_t)vc.rtot;
		vc.rtot += (uint64_t)vc.rc[j];
	}
	return 0;
}

/* alltoallv: member me's buffers, in elements: the most it sends (*smax)
 * and receives (*rmax) at any size of the run. A pattern draws anew at
 * every size, so a smaller size may send more than the largest. Leaves
 * vc set up for the last size. 0, or -ENOMEM. */
static int v_most(uint32_t me, uint32_t p, uint64_t *smax, uint64_t *rmax)
{
	size_t esz = coll_dtype_size(opt.dtype);
	*smax = *rmax = 0;
	for (unsigned s = 0; s < opt.nsizes; s++) {
		if (v_setup(me, p, opt.sizes[s] / esz))
			return -ENOMEM;
		*smax = vc.stot > *smax ? vc.stot : *smax;
		*rmax = vc.rtot > *rmax ? vc.rtot : *rmax;
	}
	return 0;
}

/*
 * The bytes the run's buffers take over the job at its largest size:
 * members (nodes, or cores with --members cores) times a member's send
 * and receive buffers (alltoallv: v_send and v_recv, a member's most, in
 * elements). alltoall --no-check never touches its send buffer, which
 * then takes no memory.
 */
static uint64_t run_bytes(uint32_t members, uint64_t nmax, uint64_t v_send, uint64_t v_recv)
{
	uint64_t s = nmax, r = nmax;
	if (opt.kind == COLL_ALLGATHER)
		s = nmax / members;
	else if (opt.kind == COLL_REDUCE_SCATTER)
		r = nmax / members;
	else if (opt.kind == COLL_ALLTOALL && !opt.check)
		s = 0;
	else if (opt.kind == COLL_ALLTOALLV) {
		s = v_send * coll_dtype_size(opt.dtype);
		r = v_recv * coll_dtype_size(opt.dtype);
	}
	return (s + r) * members;
}

/* The link-load bound of sending every message of the pattern straight to
 * its owner by dimension-order routes: the busiest link direction's wire
 * bytes over the bandwidth, in ps. */
static double v_link_bound(const struct torus_shape *s, const struct torus_params *prm, const uint32_t *mnode,
			   uint32_t p, uint64_t m)
{
	uint32_t nn = s->nnodes, pay = torus_params_payload(prm);
	uint64_t *load = calloc((size_t)nn * 2 * TORUS_MAX_DIMS, sizeof(uint64_t)), best = 0;
	uint8_t *route = malloc((size_t)nn * nn);
	size_t esz = coll_dtype_size(opt.dtype);
	if (!load || !route) {
		free(load);
		free(route);
		return 0;
	}
	for (uint32_t x = 0; x < nn; x++)
		torus_route_table(s, x, route + (size_t)x * nn);
	for (uint32_t i = 0; i < p; i++)
		for (uint32_t j = 0; j < p; j++) {
			uint64_t len = (uint64_t)v_count(opt.pattern, opt.seed, p, i, j, m) * esz;
			uint64_t w = len / pay * torus_wire_bytes(prm, pay) + (len % pay ? torus_wire_bytes(prm, (uint32_t)(len % pay)) : 0);
			for (uint32_t at = mnode[i]; len && at != mnode[j];) {
				uint32_t l = route[(size_t)at * nn + mnode[j]];
				load[(size_t)at * 2 * TORUS_MAX_DIMS + l] += w;
				at = torus_neighbor(s, at, l >> 1, (enum torus_dir)(l & 1));
			}
		}
	for (size_t k = 0; k < (size_t)nn * 2 * TORUS_MAX_DIMS; k++)
		best = load[k] > best ? load[k] : best;
	free(load);
	free(route);
	return (double)best * 1e12 / (double)prm->link_bw;
}

/* The median of v[0..n-1] (n >= 1; sorts v). */
static double median(double *v, uint32_t n)
{
	for (uint32_t i = 1; i < n; i++)
		for (uint32_t j = i; j > 0 && v[j - 1] > v[j]; j--) {
			double t = v[j];
			v[j] = v[j - 1];
			v[j - 1] = t;
		}
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* agreement codes (the largest wins) */
#define CODE_SETUP (1u << 29)
#define CODE_CHECK (1u << 30) /* | 0xffff - node: the lowest failing node wins */

static double wall_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Bytes per count-unit: n = count * unit. */
static uint64_t unit_bytes(uint32_t p)
{
	/* alltoallv: the size is its largest message */
	return coll_dtype_size(opt.dtype) * (opt.kind == COLL_ALLREDUCE || opt.kind == COLL_ALLTOALLV ? 1 : p);
}

/* The checks that need the job (every core computes the same verdict). */
static int job_check(emu_core_t *c, char *msg, size_t len, uint32_t *k)
{
	uint32_t p = emu_node_count(c), lo = UINT32_MAX, hi = 0;
	if (opt.members_cores) {
		/* every core a member, whatever the core map */
		uint64_t unit = unit_bytes(emu_core_total(c));
		*k = 1;
		if (opt.sizes[0] < unit) {
			snprintf(msg, len,
				 "size %llu bytes is too small for alltoall of %s on %u members: n must be at least %llu bytes "
				 "(count >= 1)",
				 (unsigned long long)opt.sizes[0], coll_dtype_name(opt.dtype), emu_core_total(c),
				 (unsigned long long)unit);
			return -1;
		}
		return 0;
	}
	for (uint32_t x = 0; x < p; x++) {
		uint32_t h = emu_cores_of(c, x);
		lo = h < lo ? h : lo;
		hi = h > hi ? h : hi;
	}
	if (!opt.k && lo != hi) {
		if (opt.kind == COLL_ALLTOALL || opt.kind == COLL_ALLTOALLV)
			snprintf(msg, len,
				 "nodes have %u to %u cores: give --members cores (every core a member) or "
				 "--cores-per-node K <= %u",
				 lo, hi, lo);
		else
			snprintf(msg, len, "nodes have %u to %u cores: give --cores-per-node K <= %u", lo, hi, lo);
		return -1;
	}
	if (opt.k > lo) {
		snprintf(msg, len, "--cores-per-node %u, but %s %u core%s", opt.k, lo == hi ? "every node has" : "a node has only",
			 lo, lo == 1 ? "" : "s");
		return -1;
	}
	*k = opt.k ? opt.k : lo;
	uint64_t unit = unit_bytes(p);
	if (opt.sizes[0] < unit) {
		snprintf(msg, len,
			 "size %llu bytes is too small for %s of %s on %u nodes: n must be at least %llu bytes (count >= 1)",
			 (unsigned long long)opt.sizes[0], coll_kind_name(opt.kind), coll_dtype_name(opt.dtype), p,
			 (unsigned long long)unit);
		return -1;
	}
	return 0;
}

/* $TORUS_COLL_<KIND>, if set and not empty (empty is the default, as in
 * the library), else NULL */
static const char *env_algo(const char *env)
{
	const char *v = getenv(env);
	return v && *v ? v : NULL;
}

/* The algorithm that the collective runs: --algo, $TORUS_COLL_<KIND>, or
 * the catalogue's first entry. A team of every node in node order meets
 * every restriction coll_team_fits() checks, so the default is the first
 * entry. *deflt: not chosen by --algo. */
static const char *algo_used(int *deflt, char *env, size_t len)
{
	snprintf(env, len, "TORUS_COLL_%s%s", coll_kind_name(opt.kind), opt.inplace ? "_inplace" : "");
	for (char *s = env; *s; s++)
		*s = (char)(*s >= 'a' && *s <= 'z' ? *s - 32 : *s);
	*deflt = !opt.algo;
	if (opt.algo)
		return opt.algo;
	if (env_algo(env))
		return env_algo(env);
	if (opt.kind == COLL_ALLTOALL)
		return "default"; /* the catalogue's rule, size by size */
	size_t n;
	const struct coll_algorithm *al = coll_catalogue(opt.kind, &n);
	for (size_t i = 0; i < n; i++)
		if (!(al[i].flags & COLL_F_INPLACE) == !opt.inplace)
			return al[i].name; /* in-place calls default to the first in-place entry */
	return al[0].name;
}

/* " (the team does not meet the algorithm's restrictions: ...)", from the
 * catalogue */
static const char *restrictions_of(const char *algo)
{
	static _Thread_local char why[320];
	size_t n;
	const struct coll_algorithm *al = coll_catalogue(opt.kind, &n);
	snprintf(why, sizeof(why), " (the team does not meet the algorithm's restrictions)");
	for (size_t i = 0; i < n; i++)
		if (!strcmp(al[i].name, algo))
			snprintf(why, sizeof(why), " (the team does not meet the algorithm's restrictions: %s)",
				 al[i].restrictions);
	return why;
}

/* Is algo an in-place algorithm run without --inplace, or the reverse? */
static int inplace_mismatch(const char *algo)
{
	size_t n;
	const struct coll_algorithm *al = coll_catalogue(opt.kind, &n);
	for (size_t i = 0; opt.kind == COLL_ALLTOALLV && i < n; i++)
		if (!strcmp(al[i].name, algo))
			return !(al[i].flags & COLL_F_INPLACE) != !opt.inplace;
	return 0;
}

/* Payload bytes sent so far on each outgoing link direction of this node. */
static unsigned read_links(emu_core_t *c, uint64_t *out)
{
	const struct torus_shape *s = emu_shape(c);
	unsigned n = 0;
	for (uint32_t d = 0; d < s->ndims; d++)
		for (uint32_t dir = 0; torus_dim_has_links(s, d) && dir < 2; dir++) {
			struct torus_link_counters ctr = {0};
			emu_link_read(c, d, dir, &ctr);
			out[n++] = ctr.payload_bytes;
		}
	return n;
}

/* alltoall: member r's element k of its block for j */
static int64_t ref_a2a(uint32_t r, uint32_t j, uint32_t p, size_t count, size_t k)
{
	return ref_gather(((uint64_t)r * p + j) * count + k);
}

/* Fill the input of member me of p (send, recv: its buffers). */
static void fill(void *send, void *recv, uint32_t me, uint32_t p, size_t count, const struct ref *f)
{
	size_t esz = coll_dtype_size(opt.dtype);
	if (opt.kind == COLL_ALLTOALLV) {
		for (uint32_t j = 0; j < p; j++)
			for (int64_t k = 0; k < vc.sc[j]; k++)
				put_elem(opt.dtype, send, (size_t)(vc.sd[j] + k), v_value(me, j, (uint64_t)k));
		memset(recv, 0xa5, vc.rtot * esz);
		if (opt.inplace) /* the buffer starts with what we send */
			memcpy(recv, send, (vc.stot < vc.rtot ? vc.stot : vc.rtot) * esz);
		return;
	}
	if (opt.kind == COLL_ALLTOALL) {
		/* --no-check: neither buffer is touched here, so the send
		 * buffer, read but never written, stays on the kernel's zero
		 * page: half the memory (8x8x8 with 64 KiB blocks: 16 GiB, not
		 * 32). The bytes still travel in packets. */
		if (!opt.check)
			return;
		for (uint32_t j = 0; j < p; j++)
			for (size_t k = 0; k < count; k++)
				put_elem(opt.dtype, send, j * count + k, ref_a2a(me, j, p, count, k));
		memset(recv, 0xa5, count * p * esz);
		return;
	}
	if (opt.kind == COLL_ALLGATHER) {
		for (size_t k = 0; k < count; k++)
			put_elem(opt.dtype, send, k, ref_gather((uint64_t)me * count + k));
		memset(recv, 0xa5, count * p * esz);
		return;
	}
	size_t n = opt.kind == COLL_ALLREDUCE ? count : count * p;
	for (size_t j = 0; j < n; j++)
		put_elem(opt.dtype, send, j, ref_input(f, opt.op, me, j));
	memset(recv, 0xa5, count * esz);
}

/* Compare member me's result with the reference; 0 if it all matches.
 * (chk.wrong*: the first mismatch; one checking core per node.) */
static int verify(void *recv, uint32_t me, uint32_t p, size_t count, const struct ref *f)
{
	size_t n = opt.kind == COLL_ALLGATHER || opt.kind == COLL_ALLTOALL ? count * p : count;
	uint32_t vsrc = 0;
	if (opt.kind == COLL_ALLTOALLV)
		n = vc.rtot;
	chk.wrong = 0;
	if (opt.corrupt_node == (int64_t)me && opt.corrupt_elem < n)
		put_elem(opt.dtype, recv, opt.corrupt_elem, (int64_t)get_elem(opt.dtype, recv, opt.corrupt_elem) + 1);
	for (size_t k = 0; k < n; k++) {
		int64_t want;
		if (opt.kind == COLL_ALLTOALLV) {
			/* the source whose range holds k (k only grows) */
			while (vsrc + 1 < p && (uint64_t)vc.rd[vsrc + 1] <= k)
				vsrc++;
			want = v_value(vsrc, me, k - (uint64_t)vc.rd[vsrc]);
		} else if (opt.kind == COLL_ALLTOALL)
			want = ref_a2a((uint32_t)(k / count), me, p, count, k % count);
		else if (opt.kind == COLL_ALLGATHER)
			want = ref_gather(k);
		else
			want = ref_result(f, opt.op, opt.kind == COLL_REDUCE_SCATTER ? (uint64_t)me * count + k : k);
		double got = get_elem(opt.dtype, recv, k);
		if (got != (double)want && !chk.wrong++) {
			chk.wrong_at = k;
			chk.got = got;
			chk.want = (double)want;
		}
	}
	return chk.wrong != 0;
}

static int run_coll(coll_team_t *t, void *send, void *recv, size_t count)
{
	switch (opt.kind) {
	case COLL_REDUCE_SCATTER:
		return coll_reduce_scatter(t, send, recv, count, opt.dtype, opt.op, opt.algo);
	case COLL_ALLGATHER: return coll_allgather(t, send, recv, count, opt.dtype, opt.algo);
	case COLL_ALLTOALL: return coll_alltoall(t, send, recv, count, opt.dtype, opt.algo);
	case COLL_ALLTOALLV:
		if (opt.inplace)
			return coll_alltoallv_inplace(t, recv, vc.sc, vc.rc, opt.dtype, opt.algo);
		return coll_alltoallv(t, send, vc.sc, vc.sd, recv, vc.rc, vc.rd, opt.dtype, opt.algo);
	default: return coll_allreduce(t, send, recv, count, opt.dtype, opt.op, opt.algo);
	}
}

/* Every core of the job leaves with the largest code any of them gave. */
static int agree(emu_core_t *c, const uint32_t *all, uint32_t code, uint32_t *out)
{
	int rc = dma_barrier_team_max(c, all, emu_core_total(c), code, out);
	if (rc)
		fprintf(stderr, PROG ": node %u core %u: barrier failed: %s\n", emu_node_rank(c), emu_core_index(c),
			dma_strerror(rc));
	return rc;
}

/* The largest v over every core of the job (two 32-bit barrier rounds). */
static int max_all(emu_core_t *c, const uint32_t *all, uint32_t total, uint64_t v, uint64_t *out)
{
	uint32_t hi, lo;
	int rc = dma_barrier_team_max(c, all, total, (uint32_t)(v >> 32), &hi);
	if (!rc)
		rc = dma_barrier_team_max(c, all, total, (uint32_t)(v >> 32) == hi ? (uint32_t)v : 0, &lo);
	if (!rc)
		*out = (uint64_t)hi << 32 | lo;
	return rc;
}

/*
 * Combine the most (and least) loaded link over the nodes on the barrier
 * network, by core 0 of every node: when the collective library cannot run
 * an allreduce on this team. 64-bit values in two 32-bit rounds.
 */
static int links_by_barrier(emu_core_t *c, uint32_t p)
{
	for (int i = 0; i < 2; i++) {
		uint64_t v = (uint64_t)node.lsend[i] + (1ull << 63); /* order-preserving */
		uint32_t hi, lo;
		int rc = dma_barrier_team_max(c, node.leads, p, (uint32_t)(v >> 32), &hi);
		if (!rc)
			rc = dma_barrier_team_max(c, node.leads, p, (uint32_t)(v >> 32) == hi ? (uint32_t)v : 0, &lo);
		if (rc)
			return rc;
		node.lrecv[i] = (int64_t)((((uint64_t)hi << 32) | lo) - (1ull << 63));
	}
	return 0;
}

static void json_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch < 0x20)
			fprintf(f, "\\u%04x", ch);
		else
			fputc(ch, f);
	}
	fputc('"', f);
}

static void print_header(emu_core_t *c, uint32_t k, const char *algo, int deflt, const char *shape)
{
	const char *op = opt.kind == COLL_ALLGATHER ? "none" : coll_op_name(opt.op);
	if (opt.json) {
		printf("{\"schema\": \"torus-bench/1\", \"collective\": \"%s\", \"algo\": ", coll_kind_name(opt.kind));
		json_string(stdout, algo);
		printf(", \"torus\": \"%s\", \"nodes\": %u, \"cores_per_node\": %u, \"dtype\": \"%s\", \"op\": \"%s\", "
		       "\"compute_delay_ns\": %llu, \"warmup\": %u, \"reps\": %u, \"rows\": [",
		       shape, emu_node_count(c), k, coll_dtype_name(opt.dtype), op, (unsigned long long)opt.delay_ns,
		       opt.warmup, opt.reps);
		return;
	}
	printf("# torus-bench %s: algo %s%s, torus %s, %u nodes, %u core%s per node, dtype %s, op %s, "
	       "compute delay %llu ns/KiB",
	       coll_kind_name(opt.kind), algo, deflt ? " (default)" : "", shape, emu_node_count(c), k, k == 1 ? "" : "s",
	       coll_dtype_name(opt.dtype), op, (unsigned long long)opt.delay_ns);
	if (opt.warmup || opt.reps > 1)
		printf(", %u warm-up + %u timed call%s per size (medians)", opt.warmup, opt.reps, opt.reps == 1 ? "" : "s");
	printf("\n");
	printf("# %12s %14s %12s %8s %10s %14s %14s %6s", "bytes", "emulated_us", "bound_us", "ratio", "wall_s",
	       "link_max_B", "link_min_B", "check");
	if (opt.kind == COLL_ALLTOALL)
		printf(" %12s %12s  %s", "link_bnd_us", "round_bnd_us", "algo");
	if (opt.kind == COLL_ALLTOALLV)
		printf(" %12s %12s %12s  (pattern %s, seed %llu; per stage: most start-ups, longest message)",
		       "startups", "longest_B", "extra_B", v_pattern_names[opt.pattern], (unsigned long long)opt.seed);
	printf("\n");
	fflush(stdout);
}

static void print_row(const struct row *r, unsigned i)
{
	if (opt.json) {
		printf("%s\n  {\"bytes\": %llu, \"count\": %llu, \"emulated_ps\": %llu, \"lower_bound_ps\": %.3f, "
		       "\"ratio\": %.6f, \"wall_s\": %.6f, \"link_max_bytes\": %lld, \"link_min_bytes\": %lld, "
		       "\"checked\": %s",
		       i ? "," : "", (unsigned long long)r->bytes, (unsigned long long)r->count,
		       (unsigned long long)r->emulated_ps, r->bound_ps, r->ratio, r->wall_s, (long long)r->link_max,
		       (long long)r->link_min, opt.check ? "true" : "false");
		if (opt.kind == COLL_ALLTOALL) {
			printf(", \"link_bound_ps\": %.3f, \"round_bound_ps\": %.3f, \"algo\": ", r->link_ps, r->round_ps);
			json_string(stdout, r->algo ? r->algo : "");
		}
		if (opt.kind == COLL_ALLTOALLV) {
			printf(", \"pattern\": \"%s\", \"seed\": %llu, \"startups\": [", v_pattern_names[opt.pattern],
			       (unsigned long long)opt.seed);
			for (uint32_t g = 0; g < r->vst.stages && g < COLL_V_MAX_STAGES; g++)
				printf("%s%llu", g ? ", " : "", (unsigned long long)r->vst.startups[g]);
			printf("], \"longest\": [");
			for (uint32_t g = 0; g < r->vst.stages && g < COLL_V_MAX_STAGES; g++)
				printf("%s%llu", g ? ", " : "", (unsigned long long)r->vst.longest[g]);
			printf("], \"extra_bytes\": %llu", (unsigned long long)r->vst.extra_bytes);
			if (r->vst.ran[0])
				printf(", \"ran\": \"%s\"", r->vst.ran);
		}
		printf("}");
		return;
	}
	printf("  %12llu %14.3f %12.3f %8.3f %10.4f %14lld %14lld %6s", (unsigned long long)r->bytes,
	       r->emulated_ps / 1e6, r->bound_ps / 1e6, r->ratio, r->wall_s, (long long)r->link_max,
	       (long long)r->link_min, opt.check ? "ok" : "off");
	if (opt.kind == COLL_ALLTOALL)
		printf(" %12.3f %12.3f  %s", r->link_ps / 1e6, r->round_ps / 1e6, r->algo ? r->algo : "");
	if (opt.kind == COLL_ALLTOALLV) {
		char su[96] = "", lo[96] = "";
		for (uint32_t g = 0; g < r->vst.stages && g < COLL_V_MAX_STAGES; g++) {
			size_t a = strlen(su), b = strlen(lo);
			snprintf(su + a, sizeof(su) - a, "%s%llu", g ? "/" : "", (unsigned long long)r->vst.startups[g]);
			snprintf(lo + b, sizeof(lo) - b, "%s%llu", g ? "/" : "", (unsigned long long)r->vst.longest[g]);
		}
		printf(" %12s %12s %12llu", su, lo, (unsigned long long)r->vst.extra_bytes);
	}
	printf("\n");
	fflush(stdout);
}

static int bench_core(emu_core_t *c, void *arg)
{
	(void)arg;
	const uint32_t me = emu_node_rank(c), ci = emu_core_index(c), p = emu_node_count(c);
	const uint32_t total = emu_core_total(c);
	const int lead = me == 0 && ci == 0;
	const struct torus_params *params = emu_params(c);
	char msg[512], shape[64];
	uint32_t k = 0, code = 0;

	/* command-line errors: one line from node 0, the same status everywhere */
	if (opt.error[0] || job_check(c, msg, sizeof(msg), &k)) {
		if (lead)
			fprintf(stderr, PROG ": %s\n", opt.error[0] ? opt.error : msg);
		if (ci == 0)
			atomic_store(&exit_status, 2);
		return dma_barrier(c) ? 1 : 0; /* node 0 has printed before anyone leaves */
	}

	/* members: nodes (a node team of K cores each), or alltoall --members
	 * cores: every core, with buffers of its own */
	const int cm = opt.members_cores;
	const uint32_t mp = cm ? total : p, mrank = cm ? emu_core_global(c) : me;
	const int member = cm || ci < k;
	const uint64_t unit = unit_bytes(mp);
	void *my_send = NULL, *my_recv = NULL;
	uint32_t *mnode = NULL; /* node of each member (alltoall plans, node 0) */
	const uint64_t nmax = opt.sizes[opt.nsizes - 1] / unit * unit;
	int deflt;
	char env[64];
	const char *algo = algo_used(&deflt, env, sizeof(env));
	coll_team_t *team = NULL;
	struct ref ref;
	uint32_t *all = malloc(total * sizeof(uint32_t));
	if (!all) {
		fprintf(stderr, PROG ": node %u core %u: out of memory\n", me, ci);
		return 1;
	}
	for (uint32_t g = 0; g < total; g++)
		all[g] = g;
	ref_init(&ref, p);
	torus_shape_format(emu_shape(c), shape, sizeof(shape));

	/* the buffers against the host's memory, before anything is allocated
	 * (node 0 looks, and every core leaves alike) */
	uint32_t too_big = 0;
	if (lead) {
		uint64_t vs = 0, vr = 0, avail = emu_host_mem_available();
		if (opt.kind == COLL_ALLTOALLV && v_most(0, mp, &vs, &vr))
			vs = vr = 0;
		uint64_t need = run_bytes(mp, nmax, vs, vr);
		if (avail && need > avail) {
			fprintf(stderr,
				PROG ": the run's buffers need about %.1f GiB (%u %s, %llu bytes at the largest size) but "
				     "the host has %.1f GiB available: give smaller --sizes\n",
				need / 1073741824.0, mp, cm ? "cores" : "nodes", (unsigned long long)nmax,
				avail / 1073741824.0);
			too_big = 1;
		}
	}
	if (agree(c, all, too_big, &too_big)) {
		free(all);
		return 1;
	}
	if (too_big) {
		if (ci == 0)
			atomic_store(&exit_status, 2);
		free(all);
		return 0;
	}

	/* set-up: the node team, and the node's buffers (core 0) */
	if (member) {
		int rc = cm ? coll_team_world(c, &team) : coll_team_nodes(c, opt.k, &team);
		if (rc) {
			fprintf(stderr, PROG ": node %u core %u: cannot make the team: %s\n", me, ci, dma_strerror(rc));
			code = CODE_SETUP;
		}
	}
	size_t esz = coll_dtype_size(opt.dtype);
	uint64_t vsmax = 0, vrmax = 0; /* alltoallv: the buffers, in elements */
	if (opt.kind == COLL_ALLTOALLV && member && v_most(mrank, mp, &vsmax, &vrmax)) {
		fprintf(stderr, PROG ": node %u core %u: out of memory\n", me, ci);
		code = CODE_SETUP;
	}
	if (cm) {
		size_t sb = opt.kind == COLL_ALLTOALLV ? vsmax * esz + 1 : nmax;
		size_t rb = opt.kind == COLL_ALLTOALLV ? vrmax * esz + 1 : nmax;
		my_send = malloc(sb);
		my_recv = malloc(rb);
		if (!my_send || !my_recv) {
			fprintf(stderr, PROG ": node %u core %u: cannot allocate %zu + %zu bytes of buffers\n", me, ci, sb, rb);
			code = CODE_SETUP;
		}
	}
	if (lead && (opt.kind == COLL_ALLTOALL || opt.kind == COLL_ALLTOALLV)) {
		if ((mnode = malloc(mp * sizeof(uint32_t))))
			for (uint32_t i = 0, core; i < mp; i++)
				if (!cm)
					mnode[i] = i;
				else
					emu_core_locate(c, i, &mnode[i], &core);
		else
			code = CODE_SETUP;
	}
	if (ci == 0) {
		size_t sbytes = cm ? 1 : opt.kind == COLL_ALLGATHER ? nmax / p : nmax;
		size_t rbytes = cm ? 1 : opt.kind == COLL_REDUCE_SCATTER ? nmax / p : nmax;
		if (opt.kind == COLL_ALLTOALLV && !cm) {
			sbytes = vsmax * esz + 1;
			rbytes = vrmax * esz + 1;
		}
		node.send = malloc(sbytes);
		node.recv = malloc(rbytes);
		node.leads = malloc(p * sizeof(uint32_t));
		if (!node.send || !node.recv || !node.leads) {
			fprintf(stderr, PROG ": node %u: cannot allocate %zu + %zu bytes of buffers\n", me, sbytes, rbytes);
			code = CODE_SETUP;
		}
		for (uint32_t x = 0, g = 0; node.leads && x < p; g += emu_cores_of(c, x), x++)
			node.leads[x] = g;
		coll_set_compute_delay(opt.delay_ns * 1000);
	}
	if (agree(c, all, code, &code)) {
		free(all);
		return 1;
	}
	if (code) {
		if (ci == 0)
			atomic_store(&exit_status, 1);
		goto out;
	}
	if (opt.explain) {
		/* the schedule of the first size, from node 0; nothing runs */
		if (lead) {
			size_t count = opt.sizes[0] / unit;
			uint64_t block = count * coll_dtype_size(opt.dtype);
			const char *name = deflt && !env_algo(env)
						   ? coll_alltoall_default(emu_shape(c), mnode, mp, block, params->dma_counters)
						   : algo;
			coll_plan_t *pl = NULL;
			int rc = coll_alltoall_plan(name, emu_shape(c), params, mnode, mp, block, &pl);
			if (rc) {
				fprintf(stderr, PROG ": --explain: alltoall %s on %u members: %s\n", name, mp,
					rc == -ENOENT ? "no such algorithm" : rc == -ENOTSUP ? "the team does not fit it" : dma_strerror(rc));
				atomic_store(&exit_status, rc == -ENOENT ? 2 : 1);
			} else {
				coll_plan_print(pl, stdout, opt.json);
				fflush(stdout);
			}
			coll_plan_free(pl);
		}
		if (dma_barrier(c))
			goto broken;
		goto out;
	}
	if (lead)
		print_header(c, k, algo, deflt, shape);

	double start = wall_now();
	unsigned done = 0;
	const uint32_t calls = opt.warmup + opt.reps;
	for (unsigned s = 0; s < opt.nsizes; s++) {
		const size_t count = opt.sizes[s] / unit;
		struct row r = {.bytes = count * unit, .count = count};
		uint64_t after[2 * TORUS_MAX_DIMS];
		unsigned nl = 0;

		if (opt.kind == COLL_ALLTOALLV && member)
			v_setup(mrank, mp, count); /* allocated at the set-up: cannot fail */
		/* warm-up calls, then the timed ones; every call is checked, the
		 * link loads are those of the last one */
		for (uint32_t it = 0; it < calls && !code; it++) {
			double w0 = 0;
			int rc = 0;
			if (cm)
				fill(my_send, my_recv, mrank, mp, count, &ref);
			if (ci == 0) {
				if (!cm)
					fill(node.send, node.recv, me, p, count, &ref);
				/* before the barrier: once it opens, other nodes'
				 * packets may cross this node's links */
				read_links(c, node.before);
			}
			if (dma_barrier(c))
				goto broken;
			torus_vt_t t0 = emu_core_now(c);
			if (lead)
				w0 = wall_now();
			if (member)
				rc = run_coll(team, cm ? my_send : node.send, cm ? my_recv : node.recv, count);
			if (dma_barrier(c))
				goto broken;
			torus_vt_t t1 = emu_core_now(c);
			if (lead && it >= opt.warmup) {
				node.wall[it - opt.warmup] = wall_now() - w0;
				node.emulated[it - opt.warmup] = (double)(t1 - t0 - params->barrier_latency_ps);
			}
			/* the others wait (asleep) until node 0 has read the wall
			 * clock: their checking must not compete with node 0 for
			 * the CPU before it has */
			if (dma_barrier(c))
				goto broken;

			code = rc < 0 ? (uint32_t)-rc & 0xffffu : rc ? 0xffffu : 0;
			if (ci == 0 && !code) {
				if (it + 1 == calls) {
					/* the collective is over everywhere: the links are quiet */
					nl = read_links(c, after);
					int64_t mx = 0, mn = INT64_MAX;
					for (unsigned i = 0; i < nl; i++) {
						int64_t d = (int64_t)(after[i] - node.before[i]);
						mx = d > mx ? d : mx;
						mn = d < mn ? d : mn;
					}
					node.lsend[0] = mx;
					node.lsend[1] = nl ? -mn : 0;
				}
				if (!cm && opt.check && verify(node.recv, me, p, count, &ref))
					code = CODE_CHECK | (0xffffu - (me & 0xffffu));
			}
			if (cm && !code && opt.check && verify(my_recv, mrank, mp, count, &ref))
				code = CODE_CHECK | (0xffffu - (mrank & 0xffffu));
			if (agree(c, all, code, &code))
				goto broken;
		}
		if (code) {
			if (code & CODE_CHECK) {
				if ((cm || ci == 0) && (code & 0xffffu) == 0xffffu - (mrank & 0xffffu))
					fprintf(stderr,
						PROG ": %s (%s) of %llu bytes: wrong result on %s %u at element %llu: got %.17g, "
						     "expected %.17g (%llu wrong element%s on that %s)\n",
						coll_kind_name(opt.kind), algo, (unsigned long long)r.bytes, cm ? "member" : "node", mrank,
						(unsigned long long)chk.wrong_at, chk.got, chk.want,
						(unsigned long long)chk.wrong, chk.wrong == 1 ? "" : "s", cm ? "member" : "node");
			} else if (lead) {
				int err = -(int)code;
				if (err == -ENOENT)
					fprintf(stderr, PROG ": %s: no algorithm named '%s'%s%s%s\n", coll_kind_name(opt.kind),
						algo, deflt ? " (from $" : "", deflt ? env : "", deflt ? ")" : "");
				else
					fprintf(stderr, PROG ": %s (%s) of %llu bytes failed: %s%s\n", coll_kind_name(opt.kind),
						algo, (unsigned long long)r.bytes, dma_strerror(err),
						err == DMA_ERR_NOSPACE ? " (too many nodes for this algorithm? see --help; "
									 "try --param dma_counters=N)"
						: err == -EINVAL && opt.inplace
							? " (in place, every member must receive as much as it sends: "
							  "case1..case4, random and skewed give that)"
						: err == -ENOTSUP && inplace_mismatch(algo)
							? " (an in-place algorithm runs only with --inplace, and the others only "
							  "without)"
						: err == -ENOTSUP && opt.inplace && !strcmp(algo, "bitonic")
							? " (bitonic needs every member's total alike: case1..case4 give that)"
						: err == -ENOTSUP ? restrictions_of(algo)
								  : "");
			}
			if (ci == 0)
				atomic_store(&exit_status, 1);
			break;
		}

		/* the most and least loaded link of the torus, after the timed part */
		if (opt.kind == COLL_ALLTOALLV) {
			/* what the last call counted: the most over the members */
			struct coll_v_stats st;
			memset(&st, 0, sizeof(st));
			if (member && (cm || ci == 0))
				coll_alltoallv_stats(team, &st);
			memcpy(r.vst.ran, st.ran, sizeof(st.ran)); /* alike on every member: the lead's */
			uint64_t v;
			if (max_all(c, all, total, st.stages, &v))
				goto broken;
			r.vst.stages = (uint32_t)v;
			for (uint32_t g = 0; g < r.vst.stages && g < COLL_V_MAX_STAGES; g++)
				if (max_all(c, all, total, st.startups[g], &r.vst.startups[g]) ||
				    max_all(c, all, total, st.longest[g], &r.vst.longest[g]))
					goto broken;
			if (max_all(c, all, total, st.extra_bytes, &r.vst.extra_bytes))
				goto broken;
		}
		if (opt.kind == COLL_ALLTOALL || opt.kind == COLL_ALLTOALLV) {
			if (ci == 0 && links_by_barrier(c, p))
				goto broken;
		} else if (member) {
			/* bookkeeping: traces show it as control traffic */
			coll_team_set_trace_tag(team, TORUS_TAG_CONTROL);
			int lrc = coll_allreduce(team, node.lsend, node.lrecv, 2, COLL_INT64, COLL_MAX, algo);
			coll_team_set_trace_tag(team, 0);
			/* -ENOTSUP: the algorithm does not fit this team (too many
			 * nodes for its counters), and -ENOENT for another
			 * collective's algorithm that allreduce's catalogue lacks:
			 * expected fallbacks; anything else is a fault of the
			 * library, and the run says so */
			if (lrc && lrc != -ENOTSUP && !(lrc == -ENOENT && opt.kind != COLL_ALLREDUCE)) {
				fprintf(stderr,
					PROG ": node %u core %u: the allreduce that gathers the link loads (%s) failed: %s; "
					     "gathering them over the barrier network instead\n",
					me, ci, algo ? algo : "default", dma_strerror(lrc));
				atomic_store(&exit_status, 1);
			}
			if (lrc && ci == 0 && links_by_barrier(c, p))
				goto broken;
		}
		if (dma_barrier(c)) /* the links are quiet again */
			goto broken;
		if (lead) {
			r.wall_s = median(node.wall, opt.reps);
			r.emulated_ps = (uint64_t)median(node.emulated, opt.reps);
			double bound = coll_lower_bound_ps(opt.kind, emu_shape(c), params, (double)r.bytes);
			if (opt.kind == COLL_ALLTOALL) {
				uint64_t block = count * coll_dtype_size(opt.dtype);
				r.algo = deflt && !env_algo(env) ? coll_alltoall_default(emu_shape(c), mnode, mp, block,
										      params->dma_counters)
							       : algo;
				coll_plan_t *pl = NULL;
				struct coll_plan_bounds b = {0, 0, 0};
				if (!coll_alltoall_plan(r.algo, emu_shape(c), params, mnode, mp, block, &pl))
					coll_plan_bounds(pl, params, &b);
				coll_plan_free(pl);
				r.link_ps = b.link_ps;
				r.round_ps = b.round_ps;
				bound = b.link_ps > b.round_ps ? b.link_ps : b.round_ps;
			}
			if (opt.kind == COLL_ALLTOALLV)
				bound = v_link_bound(emu_shape(c), params, mnode, mp, count);
			r.bound_ps = bound;
			r.ratio = bound > 0 ? (double)r.emulated_ps / bound : 0;
			r.link_max = node.lrecv[0];
			r.link_min = -node.lrecv[1];
			print_row(&r, done);
			double el = wall_now() - start;
			if (el > 2.0)
				fprintf(stderr, PROG ": %s %llu bytes done (%u/%u sizes, %.1f s)\n", coll_kind_name(opt.kind),
					(unsigned long long)r.bytes, s + 1, opt.nsizes, el);
		}
		done++;
	}
	if (lead) {
		if (opt.json)
			printf("%s]}\n", done ? "\n" : "");
		fflush(stdout);
	}
out:
	coll_team_free(team);
	free(my_send);
	free(my_recv);
	free(mnode);
	free(vc.sc);
	vc.sc = NULL;
	if (ci == 0) {
		/* after the last barrier: no core of this node uses them any more */
		free(node.send);
		free(node.recv);
		free(node.leads);
		node.send = node.recv = NULL;
		node.leads = NULL;
	}
	free(all);
	return 0;
broken:
	/* a barrier failed (the job is being torn down): leave loudly */
	free(all);
	return 1;
}

int main(int argc, char **argv)
{
	int rc = parse_args(argc, argv);
	if (rc == 1) {
		usage(stdout);
		return 0;
	}
	if (rc && !getenv("TORUS_RANK")) {
		/* not under torusrun: say it here, once */
		fprintf(stderr, PROG ": %s\n", opt.error);
		return 2;
	}
	/* under torusrun even a bad command line goes through the job, so that
	 * node 0 alone reports it and no node leaves before it has */
	rc = emu_job_main(argc, argv, bench_core, NULL);
	return rc ? rc : atomic_load(&exit_status);
}
