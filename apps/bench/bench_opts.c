/*
 * torus-bench's options: the command line (usage, parsing, sizes),
 * alltoallv's patterns (who sends whom how much, a member's counts), and
 * the sizes against the job (the checks that need it, the buffers' bytes).
 */
#include "bench.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

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
const char *const v_pattern_names[V_NPATTERNS] = {"pattern1", "pattern2", "case1", "case2",
						  "case3",    "case4",    "random", "skewed"};

int v_symmetric; /* --inplace: random and skewed symmetric */

int64_t v_count(int pat, uint64_t seed, uint32_t p, uint32_t i, uint32_t j, uint64_t m)
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

/* ------------------------------------------------------------ options */

struct opts opt = {
	.pattern = V_RANDOM, .seed = 1,
	.kind = COLL_ALLREDUCE, .dtype = COLL_DOUBLE, .op = COLL_SUM, .check = 1, .corrupt_node = -1, .reps = 1};

void usage(FILE *f)
{
	fprintf(f,
		"usage: torusrun --torus DIMS [--cores C] -- torus-bench COLLECTIVE [options]\n"
		"  COLLECTIVE            allreduce | allgather | reduce_scatter | alltoall | alltoallv\n"
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

/* "16M", "1KiB", "4096": bytes (torus_size_parse); -1 if malformed or too large. */
static int parse_size(const char *s, uint64_t *out) { return torus_size_parse(s, MAX_BYTES, out) ? -1 : 0; }

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
int parse_args(int argc, char **argv)
{
	int rc = parse_args_raw(argc, argv);
	for (char *e = opt.error; rc == -1 && *e; e++)
		if ((unsigned char)*e < 0x20 || *e == 0x7f)
			*e = '?';
	return rc;
}

/* ------------------------------------------- a member's counts and the sizes */

/* alltoallv: this core's counts and displacements (a member's, in elements) */
_Thread_local struct v_counts vc;

/* This member's counts for largest message m (elements); prefix sums as
 * displacements. 0, or -ENOMEM. */
int v_setup(uint32_t me, uint32_t p, uint64_t m)
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
int v_most(uint32_t me, uint32_t p, uint64_t *smax, uint64_t *rmax)
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
uint64_t run_bytes(uint32_t members, uint64_t nmax, uint64_t v_send, uint64_t v_recv)
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

/* Bytes per count-unit: n = count * unit. */
uint64_t unit_bytes(uint32_t p)
{
	/* alltoallv: the size is its largest message */
	return coll_dtype_size(opt.dtype) * (opt.kind == COLL_ALLREDUCE || opt.kind == COLL_ALLTOALLV ? 1 : p);
}

/* The checks that need the job (every core computes the same verdict). */
int job_check(emu_core_t *c, char *msg, size_t len, uint32_t *k)
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
