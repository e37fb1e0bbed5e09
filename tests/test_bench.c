/*
 * torus-bench: its --json output for each collective (every row checked,
 * the lower bound holds, link loads make sense), its errors (one line on
 * stderr, nothing on stdout, non-zero status), a wrong result caught, and
 * --help. Small tori, one or two cores per node: a few seconds in all.
 */
#include "cunit_main.h"
#include "job_util.h"

#include <math.h>

struct row {
	double bytes, count, emulated_ps, lower_bound_ps, ratio, wall_s, link_max, link_min;
	int checked; /* 1 true, 0 false, -1 missing */
};

/* The number after `"key": ` inside [from, to); -1 if absent. */
static double num_in(const char *from, const char *to, const char *key)
{
	char pat[64];
	snprintf(pat, sizeof(pat), "\"%s\": ", key);
	const char *p = strstr(from, pat);
	if (!p || p >= to)
		return -1;
	return strtod(p + strlen(pat), NULL);
}

/* Split the rows of a torus-bench --json document; returns how many. */
static int parse_rows(const char *json, struct row *rows, int max)
{
	int n = 0;
	const char *p = json;
	while (n < max && (p = strstr(p, "{\"bytes\": "))) {
		const char *end = strchr(p, '}');
		if (!end)
			break;
		struct row *r = &rows[n++];
		r->bytes = num_in(p, end, "bytes");
		r->count = num_in(p, end, "count");
		r->emulated_ps = num_in(p, end, "emulated_ps");
		r->lower_bound_ps = num_in(p, end, "lower_bound_ps");
		r->ratio = num_in(p, end, "ratio");
		r->wall_s = num_in(p, end, "wall_s");
		r->link_max = num_in(p, end, "link_max_bytes");
		r->link_min = num_in(p, end, "link_min_bytes");
		const char *c = strstr(p, "\"checked\": ");
		r->checked = !c || c >= end ? -1 : !strncmp(c + 11, "true", 4) ? 1 : !strncmp(c + 11, "false", 5) ? 0 : -1;
		p = end;
	}
	return n;
}

/* Does the document hold `"key": "value"`? */
static int has_str(const char *json, const char *key, const char *value)
{
	char pat[128];
	snprintf(pat, sizeof(pat), "\"%s\": \"%s\"", key, value);
	return strstr(json, pat) != NULL;
}

/*
 * Run torus-bench COLL over sizes 1K:4K with --json under torusrun and check
 * the document: 3 rows of the expected bytes and counts, every one checked,
 * ratio >= 1 (the lower bound holds), link_max >= link_min >= 0, link_max >
 * 0, and link_min > 0 when min_positive.
 */
static void bench_json(const char *torus, const char *coll, const char *algo_opt, const char *algo_name,
		       unsigned nodes, unsigned cores, unsigned per_node_div, int min_positive)
{
	/* --exact: no link carries two packets at once, so the bound holds
	 * exactly (the old engine's timing can dip below it) */
	struct result r = run("$B/torusrun --torus %s --cores %u --quiet --timeout 60 -- $B/torus-bench %s %s "
			      "--sizes 1K:4K --json",
			      torus, cores, coll, algo_opt);
	EXPECT(r.status == 0, "%s %s on %s: status %d\n%.2000s", coll, algo_opt, torus, r.status, r.err);
	EXPECT(strncmp(r.out, "{", 1) == 0 && strstr(r.out, "]}\n") && !strstr(strstr(r.out, "]}\n") + 3, "{"),
	       "one JSON document: %.300s", r.out);
	EXPECT(has_str(r.out, "schema", "torus-bench/1"), "schema: %.300s", r.out);
	EXPECT(has_str(r.out, "collective", coll), "collective: %.300s", r.out);
	EXPECT(has_str(r.out, "algo", algo_name), "algo %s: %.300s", algo_name, r.out);
	EXPECT(has_str(r.out, "torus", torus), "torus: %.300s", r.out);
	EXPECT(json_u64(r.out, "nodes") == nodes, "nodes: %.300s", r.out);
	EXPECT(json_u64(r.out, "cores_per_node") == cores, "cores_per_node: %.300s", r.out);
	EXPECT(has_str(r.out, "dtype", "double"), "dtype: %.300s", r.out);
	EXPECT(json_u64(r.out, "compute_delay_ns") == 0, "compute_delay_ns: %.300s", r.out);

	struct row rows[8];
	int n = parse_rows(r.out, rows, 8);
	EXPECT(n == 3, "%s: %d rows, want 3:\n%.2000s", coll, n, r.out);
	for (int i = 0; i < n; i++) {
		struct row *w = &rows[i];
		double bytes = 1024 << i;
		EXPECT(w->bytes == bytes, "row %d: bytes %.0f, want %.0f", i, w->bytes, bytes);
		EXPECT(w->count == bytes / 8 / per_node_div, "row %d: count %.0f", i, w->count);
		EXPECT(w->checked == 1, "%s row %d: checked is not true", coll, i);
		EXPECT(w->emulated_ps > 0 && w->lower_bound_ps > 0, "row %d: emulated %.0f ps, bound %.0f ps", i,
		       w->emulated_ps, w->lower_bound_ps);
		EXPECT(w->ratio >= 1.0, "%s row %d: ratio %f < 1: the lower bound does not hold", coll, i, w->ratio);
		/* a call takes some wall time, and far less than the job's timeout */
		EXPECT(w->wall_s > 0 && w->wall_s < 60, "row %d: wall_s %f", i, w->wall_s);
		EXPECT(w->link_max > 0 && w->link_max >= w->link_min && w->link_min >= 0,
		       "%s row %d: link_max %.0f, link_min %.0f", coll, i, w->link_max, w->link_min);
		if (min_positive)
			EXPECT(w->link_min > 0, "%s row %d on %s: link_min %.0f, want every link direction used", coll, i,
			       torus, w->link_min);
	}
	result_free(&r);
}

/* On 2x2x2 the ring (rank order) leaves 28 of the 48 link directions idle:
 * link_min is 0 there, so it is required positive only on a 1-D torus. */
static void test_allreduce_ring_json(void) { bench_json("2x2x2", "allreduce", "--algo ring", "ring", 8, 1, 1, 0); }
static void test_allgather_ring_json(void) { bench_json("2x2x2", "allgather", "--algo ring", "ring", 8, 1, 8, 0); }
static void test_reduce_scatter_ring_json(void)
{
	bench_json("2x2x2", "reduce_scatter", "--algo ring", "ring", 8, 1, 8, 0);
}
static void test_ring_1d_every_link(void) { bench_json("4", "allreduce", "--algo ring", "ring", 4, 1, 1, 1); }

/* No --algo: the default for a node team of every node is the catalogue's
 * first entry, multicolor, which uses every link direction on 2x2x2 (two
 * cores per node: a node team of two cores per member). */
static void test_default_algo(void) { bench_json("2x2x2", "allreduce", "", "multicolor", 8, 2, 1, 1); }

/*
 * alltoall: every algorithm that fits 3x3x2 (18 nodes; xor does not), its
 * rows checked, both bounds in the row and the larger one the row's bound,
 * which holds (ratio >= 1), and the algorithm named per row.
 */
static void test_alltoall_json(void)
{
	static const char *const algos[] = {"direct", "factor", "ring", "mesh2d", "bruck", "torus", "hierarchical_factor"};
	for (size_t a = 0; a < sizeof(algos) / sizeof(algos[0]); a++) {
		struct result r = run("$B/torusrun --torus 3x3x2 --quiet --timeout 60 -- $B/torus-bench alltoall --algo %s "
				      "--sizes 1K:4K --json",
				      algos[a]);
		EXPECT(r.status == 0, "%s: status %d\n%.1000s", algos[a], r.status, r.err);
		struct row w[4];
		int n = parse_rows(r.out, w, 4);
		EXPECT(n == 3, "%s: %d rows, want 3", algos[a], n);
		for (int i = 0; i < n; i++) {
			const char *at = strstr(r.out, "{\"bytes\": ");
			for (int k = 0; k < i && at; k++)
				at = strstr(at + 1, "{\"bytes\": ");
			const char *end = at ? strchr(at, '}') : NULL;
			double lb = at ? num_in(at, end, "link_bound_ps") : -1, rb = at ? num_in(at, end, "round_bound_ps") : -1;
			EXPECT(w[i].checked == 1 && w[i].ratio >= 1.0, "%s row %d: checked %d ratio %f", algos[a], i,
			       w[i].checked, w[i].ratio);
			EXPECT(lb > 0 && rb > 0 && fabs(w[i].lower_bound_ps - (lb > rb ? lb : rb)) < 1,
			       "%s row %d: bound %f, link %f, round %f", algos[a], i, w[i].lower_bound_ps, lb, rb);
		}
		char want[64];
		snprintf(want, sizeof(want), "\"algo\": \"%s\"}", algos[a]);
		EXPECT(strstr(r.out, want) != NULL, "%s: not named in the rows: %.500s", algos[a], r.out);
		result_free(&r);
	}
}

/*
 * Every all-to-all algorithm on a team with more members than a member has
 * DMA counters: a counter per message received (factor, xor, ring and
 * hierarchical_factor take p - 1) is a design limit, not the machine's.
 * Those algorithms reuse their counters batch after batch. Every
 * algorithm on 4x4x4 with the default 64 counters; those and direct on
 * 3x3x2 with 8 counters (batches of 5 messages) and 2x2x2 with 6 (3).
 */
static const char *const every_a2a[] = {"direct", "factor", "xor",   "ring",
				       "mesh2d", "bruck",  "torus", "hierarchical_factor", NULL};
/* the ones that need a counter per message received, and direct */
static const char *const batched_a2a[] = {"direct", "factor", "xor", "ring", "hierarchical_factor", NULL};

static void alltoall_every_algorithm(const char *const *algos, const char *torus, const char *extra, const char *sizes,
				     int nrows)
{
	for (size_t a = 0; algos[a]; a++) {
		int p = 1;
		for (const char *c = torus; *c;) {
			p *= atoi(c);
			c = strchr(c, 'x') ? strchr(c, 'x') + 1 : c + strlen(c);
		}
		if (!strcmp(algos[a], "xor") && (p & (p - 1)))
			continue; /* xor: p a power of two (refused by name: test_alltoall_xor_on_six) */
		struct result r = run("$B/torusrun --torus %s %s --quiet --timeout 600 -- $B/torus-bench alltoall --algo %s "
				      "--sizes %s --json",
				      torus, extra, algos[a], sizes);
		struct row w[4];
		int n = parse_rows(r.out, w, 4), ok = r.status == 0 && n == nrows;
		for (int i = 0; ok && i < n; i++)
			ok = w[i].checked == 1 && w[i].ratio >= 1.0;
		EXPECT(ok, "%s on %s %s: status %d, %d rows\n%.1000s\n%.1000s", algos[a], torus, extra, r.status, n, r.out,
		       r.err);
		result_free(&r);
	}
}

static void test_alltoall_every_algorithm_4x4x4(void) { alltoall_every_algorithm(every_a2a, "4x4x4", "", "64K", 1); }
static void test_alltoall_every_algorithm_few_counters(void)
{
	alltoall_every_algorithm(batched_a2a, "3x3x2", "--param dma_counters=8", "1K:2K", 2);
	alltoall_every_algorithm(batched_a2a, "2x2x2", "--param dma_counters=6", "1K", 1);
}
/* on 8x8x8: 512 members, far more than their 64 counters */
static void test_alltoall_every_algorithm_8x8x8(void)
{
	alltoall_every_algorithm(every_a2a, "8x8x8", "", "4K", 1);
}

/* alltoall --no-check leaves the buffers unfilled (the send buffers take
 * no memory): under --exact the same emulated time and link loads as a
 * checked run, every byte still moved. */
static void test_alltoall_no_check(void)
{
	struct row w[2][2];
	for (int k = 0; k < 2; k++) {
		struct result r = run("$B/torusrun --torus 3x2 --quiet --timeout 60 -- $B/torus-bench alltoall "
				      "--algo direct --sizes 48K --json %s",
				      k ? "--no-check" : "");
		EXPECT(r.status == 0, "[%d] status %d\n%.1000s", k, r.status, r.err);
		EXPECT(parse_rows(r.out, w[k], 2) == 1 && w[k][0].checked == !k, "[%d] one row, checked %d: %.500s", k,
		       w[k][0].checked, r.out);
		result_free(&r);
	}
	EXPECT(w[1][0].emulated_ps == w[0][0].emulated_ps && w[1][0].link_max == w[0][0].link_max &&
		       w[1][0].link_max >= 8192,
	       "unchecked %.0f ps, %.0f bytes on the busiest link; checked %.0f ps, %.0f bytes", w[1][0].emulated_ps,
	       w[1][0].link_max, w[0][0].emulated_ps, w[0][0].link_max);
}

/* --explain: 000's Fig. 3 on nodes of 1, 2 and 3 cores (hierarchical_factor,
 * every core a member): 15 steps in 3 phases (the caption's count), printed and nothing run. */
static void test_alltoall_explain(void)
{
	struct result r = run("$B/torusrun --torus 3 --cores-map 1,2,3 --quiet --timeout 60 -- $B/torus-bench alltoall "
			      "--algo hierarchical_factor --members cores --sizes 48 --explain");
	EXPECT(r.status == 0, "status %d\n%.1000s", r.status, r.err);
	EXPECT(count_lines(r.out, "phase ") == 15, "15 step lines:\n%.3000s", r.out);
	EXPECT(strstr(r.out, "3 phases, 6 rounds, 15 steps, 30 messages") != NULL, "summary:\n%.500s", r.out);
	/* every m_uu copied before the first step; node 3, paired with itself
	 * in round 1, sends its first processor's two messages there beside
	 * nodes 1 and 2's exchange */
	EXPECT(strstr(r.out, "phase 0 round 0 step 0: 1->3 3->1 +copies\n") != NULL &&
		       strstr(r.out, "phase 0 round 1 step 3: 0->1 1->0 3->4\n") != NULL &&
		       strstr(r.out, "phase 0 round 1 step 4: 0->2 2->0 3->5\n") != NULL,
	       "steps:\n%.3000s", r.out);
	EXPECT(!strstr(r.out, "emulated_us"), "it ran:\n%.500s", r.out);
	result_free(&r);
	r = run("$B/torusrun --torus 3 --cores-map 1,2,3 --quiet --timeout 60 -- $B/torus-bench alltoall "
		"--algo hierarchical_factor --members cores --sizes 48 --explain --json");
	EXPECT(r.status == 0 && json_u64(r.out, "steps") == 15 && json_u64(r.out, "phases") == 3 &&
		       json_u64(r.out, "messages") == 30,
	       "json:\n%.600s", r.out);
	result_free(&r);
	/* the default's choice for 4-byte blocks is explained too */
	r = run("$B/torusrun --torus 4x4 --quiet --timeout 60 -- $B/torus-bench alltoall --sizes 64 --dtype int32 "
		"--explain");
	EXPECT(r.status == 0 && strstr(r.out, "# alltoall "), "default explained:\n%.600s\n%.600s", r.out, r.err);
	result_free(&r);
}

/* --members cores on nodes of 1, 3 and 2 cores: every core a member */
static void test_alltoall_uneven_members(void)
{
	struct result r = run("$B/torusrun --torus 3 --cores-map 1,3,2 --quiet --timeout 60 -- $B/torus-bench alltoall "
			      "--members cores --sizes 96:384 --json");
	struct row w[4];
	EXPECT(r.status == 0 && parse_rows(r.out, w, 4) == 3 && w[0].checked == 1 && w[2].checked == 1,
	       "status %d\n%.1000s\n%.1000s", r.status, r.out, r.err);
	EXPECT(w[0].count == 96 / 8 / 6, "count %.0f", w[0].count);
	result_free(&r);
}

/*
 * More address messages than reception FIFO slots, with one-slot injection
 * FIFOs and links: each member posts 15 messages while others post theirs;
 * before the exchange drained its FIFO while waiting to post, this livelocked
 * (every core waiting for room that only the others' polling makes).
 */
static void test_alltoall_tiny_fifos(void)
{
	struct result r = run("$B/torusrun --torus 4x4 --param rx_slots=2 --param inj_slots=1 --param fifo_slots=1 --quiet "
			      "--timeout 30 -- $B/torus-bench alltoall --algo direct --dtype int32 --sizes 8K:16K --json");
	struct row w[4];
	EXPECT(r.status == 0 && parse_rows(r.out, w, 4) == 2 && w[0].checked == 1 && w[1].checked == 1,
	       "status %d\n%.1000s\n%.1000s", r.status, r.out, r.err);
	result_free(&r);
}

/* One checked alltoallv of `args` on `torus` whose most start-ups per stage
 * read `startups` (as the JSON prints them); the result, for more checks. */
static struct result alltoallv_startups(const char *torus, const char *args, const char *startups)
{
	struct result r = run("$B/torusrun --torus %s --quiet --timeout 60 -- $B/torus-bench alltoallv %s --json", torus,
			      args);
	char want[64];
	snprintf(want, sizeof(want), "\"startups\": [%s]", startups);
	EXPECT(r.status == 0 && strstr(r.out, want) && strstr(r.out, "\"checked\": true"),
	       "%s on %s (want %s): status %d\n%.1500s\n%.500s", args, torus, want, r.status, r.out, r.err);
	return r;
}

/*
 * 004's claim, measured: the in-place algorithms' extra memory does not
 * grow with the data. 64 KiB and 64 MiB per member (case1 on 2x2, m =
 * N / 4): the same extra_bytes, a few KiB (the 4 KiB bounce buffer and
 * the run tables), where the out-of-place forms need a second buffer of N
 * and A4 its buffers of 2 ceil(sqrt P)^2 L_max / P besides. A pattern
 * whose totals differ is refused on every member with a clear message.
 */
static void test_alltoallv_inplace_memory(void)
{
	static const char *const algos[] = {"bitonic", "pairwise"};
	/* sanitized builds run ten times slower: 256 times the data, not 1024 */
	const char *bigsize = getenv("TORUS_TEST_LIGHT") ? "4M" : "16M";
	for (int a = 0; a < 2; a++) {
		double ex[2];
		for (int big = 0; big < 2; big++) {
			struct result r = run("$B/torusrun --torus 2x2 --quiet --timeout 300 -- $B/torus-bench alltoallv --inplace "
					      "--algo %s --pattern case1 --sizes %s --warmup 0 --reps 1 --json",
					      algos[a], big ? bigsize : "16K");
			EXPECT(r.status == 0 && strstr(r.out, "\"checked\": true"), "%s: status %d\n%.1000s\n%.1000s",
			       algos[a], r.status, r.out, r.err);
			ex[big] = json_u64(r.out, "extra_bytes");
			result_free(&r);
		}
		EXPECT(ex[0] > 4096 && ex[0] == ex[1] && ex[1] <= 4096 + 1024 + 512 * 4,
		       "%s extra_bytes %.0f at --sizes 16K, %.0f at --sizes %s", algos[a], ex[0], ex[1], bigsize);
	}
	/* on 9 members and 18, every pattern whose totals match, all three */
	static const char *const pats[] = {"case1", "case2", "case3", "case4", "random", "skewed"};
	for (size_t k = 0; k < sizeof(pats) / sizeof(pats[0]); k++) {
		struct result r = run("$B/torusrun --torus 3x3x2 --quiet --timeout 120 -- $B/torus-bench alltoallv --inplace "
				      "--algo pairwise --pattern %s --sizes 1K --json",
				      pats[k]);
		EXPECT(r.status == 0 && strstr(r.out, "\"checked\": true"), "pairwise %s: status %d\n%.1000s\n%.1000s",
		       pats[k], r.status, r.out, r.err);
		result_free(&r);
	}
	struct result r = run("$B/torusrun --torus 3x3 --quiet --timeout 60 -- $B/torus-bench alltoallv --inplace "
			      "--pattern pattern1 --sizes 1K");
	EXPECT(r.status == 1 && strstr(r.err, "alltoallv (auto) of") && strstr(r.err, "as much as it sends"),
	       "pattern1 in place: status %d\n%.1000s", r.status, r.err);
	result_free(&r);
	r = run("$B/torusrun --torus 3x3 --quiet --timeout 60 -- $B/torus-bench alltoallv --inplace --algo bitonic "
		"--pattern random --sizes 1K");
	EXPECT(r.status == 1 && strstr(r.err, "alltoallv (bitonic) of") && strstr(r.err, "every member's total alike"),
	       "bitonic on unequal totals: status %d\n%.1000s", r.status, r.err);
	result_free(&r);
	r = run("$B/torusrun --torus 3x3 --quiet --timeout 60 -- $B/torus-bench alltoallv --algo bitonic --sizes 1K");
	EXPECT(r.status == 1 && strstr(r.err, "only with --inplace"), "bitonic out of place: status %d\n%.1000s", r.status,
	       r.err);
	result_free(&r);
}

/*
 * alltoallv: the buffers hold the most that any size of the run sends
 * and receives. A pattern draws anew at every size, and with this seed
 * a member sends more at 8 KiB than at 16 KiB: buffers sized from the
 * largest size overflowed the heap ("malloc(): corrupted top size").
 */
static void test_alltoallv_smaller_size_sends_more(void)
{
	struct result r = run("$B/torusrun --torus 7 --quiet --timeout 60 -- $B/torus-bench alltoallv --pattern random "
			      "--seed 4294967297 --sizes 8K:16K --json");
	struct row w[2];
	EXPECT(r.status == 0 && parse_rows(r.out, w, 2) == 2 && w[0].checked == 1 && w[1].checked == 1,
	       "status %d\n%.1500s\n%.1000s", r.status, r.out, r.err);
	result_free(&r);
}

/*
 * alltoallv: every pattern on 3x3 (9 members), checked; the counts of
 * 002's Table 3 for A1 (case1: every message non-empty, so P = 9 start-ups,
 * the longest the size); extra memory measured, O(P) (the address table).
 * Under --exact, where no link carries two packets at once, so the ratio
 * to the link-load bound is at least 1: the old engine's timing put case3
 * at 4 KiB anywhere from 1.003 to 1.074, and once below 1 (TSan build).
 */
static void test_alltoallv_patterns(void)
{
	static const char *const pats[] = {"pattern1", "pattern2", "case1", "case2", "case3", "case4", "random", "skewed"};
	for (size_t k = 0; k < sizeof(pats) / sizeof(pats[0]); k++) {
		struct result r = run("$B/torusrun --torus 3x3 --quiet --timeout 60 -- $B/torus-bench alltoallv --pattern %s "
				      "--seed 5 --sizes 512:4K --json",
				      pats[k]);
		struct row w[4];
		EXPECT(r.status == 0 && parse_rows(r.out, w, 4) == 4 && w[0].checked == 1 && w[3].checked == 1 &&
			       w[3].ratio >= 1.0,
		       "%s: status %d\n%.1500s\n%.1000s", pats[k], r.status, r.out, r.err);
		EXPECT(strstr(r.out, "\"startups\": [") && strstr(r.out, "\"longest\": [") && strstr(r.out, "\"extra_bytes\": "),
		       "%s: counts missing: %.500s", pats[k], r.out);
		double extra = json_u64(r.out, "extra_bytes");
		EXPECT(extra > 0 && extra <= 4096 + 128 * 9, "%s: extra_bytes %.0f", pats[k], extra);
		if (!strcmp(pats[k], "case1"))
			EXPECT(strstr(r.out, "\"startups\": [9], \"longest\": [4096]") != NULL, "case1 counts: %.2000s", r.out);
		result_free(&r);
	}
	/* A2: 2P start-ups per member (Table 3), in two stages, each message
	 * about L/P: on case1 the longest of a stage is P slices of m/P */
	struct result r = alltoallv_startups("3x3", "--algo a2 --pattern case1 --sizes 4K", "9, 9");
	result_free(&r);
	/* A3 on a 3 x 3 grid: 2 sqrt(P) start-ups, one per stage and column
	 * (row) of the grid */
	r = alltoallv_startups("3x3", "--algo a3 --pattern case1 --sizes 4K", "3, 3");
	result_free(&r);
	/* A4 on 3 x 3: 2C + 2R start-ups (Table 3 of 002, for a complete
	 * array), one per stage and member of the row or column; and Table 2:
	 * no message longer than ceil(sqrt P) L_max / P (L_max = 9 x 4K here)
	 * but for the rounding of the slices, an element per member */
	r = alltoallv_startups("3x3", "--algo a4 --pattern case1 --sizes 4K", "3, 3, 3, 3");
	const char *lg = strstr(r.out, "\"longest\": [");
	unsigned long long L[4] = {0, 0, 0, 0};
	EXPECT(lg && sscanf(lg, "\"longest\": [%llu, %llu, %llu, %llu]", &L[0], &L[1], &L[2], &L[3]) == 4,
	       "a4 longest: %.500s", r.out);
	for (int s = 0; s < 4; s++)
		EXPECT(L[s] >= 12288 - 9 * 8 && L[s] <= 12288 + 9 * 8, "a4 stage %d's longest message %llu", s, L[s]);
	/* Theorem 1: buffers of at most 2 ceil(sqrt P)^2 L_max / P, measured;
	 * besides them only the counts (8 P^2 bytes) */
	double ex = json_u64(r.out, "extra_bytes");
	EXPECT(ex > 0 && ex <= 2.0 * 9 * 36864 / 9 + 8 * 81, "a4 extra_bytes %.0f", ex);
	result_free(&r);
	/* an incomplete array, 002's Fig. 8: 18 members in 4 rows of 5, the
	 * last of 3, whose members send to the pseudo-nodes' stand-ins; Table
	 * 2's bounds for a node of an incomplete column, (ceil(sqrt P) + 1)
	 * L_max / P in stages II and IV, the most (L_max = 18 x 4K) */
	r = alltoallv_startups("3x3x2", "--algo a4 --pattern case1 --sizes 4K", "5, 4, 5, 4");
	lg = strstr(r.out, "\"longest\": [");
	EXPECT(lg && sscanf(lg, "\"longest\": [%llu, %llu, %llu, %llu]", &L[0], &L[1], &L[2], &L[3]) == 4,
	       "a4 longest on 18: %.500s", r.out);
	for (int s = 0; s < 4; s++)
		EXPECT(L[s] <= 6 * 73728 / 18 + 18 * 8, "a4 on 18: stage %d's longest message %llu", s, L[s]);
	ex = json_u64(r.out, "extra_bytes");
	EXPECT(ex > 0 && ex <= 2.0 * 25 * 73728 / 18 + 8 * 18 * 18, "a4 on 18: extra_bytes %.0f", ex);
	result_free(&r);
	/* 5 members: C = floor(sqrt 5) = 2, so that the last row's member has
	 * a complete row to stand in for its pseudo-node (002 3.2.2 (A)) */
	r = alltoallv_startups("5", "--algo a4 --pattern random --sizes 1K", "2, 3, 2, 3");
	result_free(&r);
	/* and a team that is not a perfect square: refused by name */
	r = run("$B/torusrun --torus 5 --quiet --timeout 60 -- $B/torus-bench alltoallv --algo a3 --sizes 1K");
	EXPECT(r.status == 1 && strstr(r.err, "alltoallv (a3) of") && strstr(r.err, "restrictions"),
	       "a3 on 5: status %d\n%.1000s", r.status, r.err);
	result_free(&r);
	r = run("$B/torusrun --torus 3 --cores-map 1,3,2 --quiet --timeout 60 -- $B/torus-bench alltoallv "
		"--members cores --pattern random --sizes 64:1K --dtype float");
	EXPECT(r.status == 0 && count_lines(r.out, " ok ") == 5, "uneven members: status %d\n%.1000s\n%.1000s", r.status,
	       r.out, r.err);
	result_free(&r);
}
/* Payload bytes carried by every link of the job (torusrun --report). */
static double job_payload(const char *report)
{
	double sum = 0;
	for (const char *q = strstr(report, "\"links\""); q && (q = strstr(q, "\"payload_bytes\": ")); q++)
		sum += strtod(q + 17, NULL);
	return sum;
}

/*
 * --warmup W --reps R: W + R calls per size on the same team, each checked
 * (so later calls, which reuse the team's scratch, are right too), counted
 * from the links: every call of a size carries the same payload, so the
 * job's payload grows by exactly one call's per extra call (reps 1, 2, 4;
 * warmup 1 + reps 1 equals reps 2). The row's link loads are one call's.
 */
static void test_warmup_reps(void)
{
	static const char *const how[] = {"--reps 1", "--reps 2", "--reps 4", "--warmup 1 --reps 1"};
	double total[4];
	struct row rows[4][2];
	for (int k = 0; k < 4; k++) {
		struct result r = run("$B/torusrun --torus 2x2x2 --cores 3 --quiet --timeout 60 --report $T/reps.json -- "
				      "$B/torus-bench allreduce --algo multicolor --sizes 64K --json %s",
				      how[k]);
		EXPECT(r.status == 0, "[%s] status %d\n%.1000s", how[k], r.status, r.err);
		EXPECT(json_u64(r.out, "reps") == (k == 3 ? 1u : 1u << k) && json_u64(r.out, "warmup") == (k == 3),
		       "[%s] echoed: %.300s", how[k], r.out);
		EXPECT(parse_rows(r.out, rows[k], 2) == 1 && rows[k][0].checked == 1, "[%s] one checked row: %.500s",
		       how[k], r.out);
		char path[512];
		snprintf(path, sizeof(path), "%s/reps.json", tmpdir);
		char *rep = slurp(path);
		total[k] = rep ? job_payload(rep) : -1;
		free(rep);
		result_free(&r);
	}
	double call = total[1] - total[0];
	EXPECT(call > 0 && total[2] - total[1] == 2 * call && total[3] == total[1],
	       "job payload %.0f / %.0f / %.0f / %.0f bytes: not one call's more per call", total[0], total[1],
	       total[2], total[3]);
	/* the timed call's link loads: a second call on keeps the first's
	 * set-up, so its loads lack the address exchange's messages, and
	 * every later call repeats them */
	for (int k = 2; k < 4; k++)
		EXPECT(rows[k][0].link_max == rows[1][0].link_max && rows[k][0].link_min == rows[1][0].link_min,
		       "[%s] link loads %.0f..%.0f, second call %.0f..%.0f", how[k], rows[k][0].link_min,
		       rows[k][0].link_max, rows[1][0].link_min, rows[1][0].link_max);
	EXPECT(rows[1][0].link_max < rows[0][0].link_max && rows[1][0].link_min <= rows[0][0].link_min,
	       "link loads: first call %.0f..%.0f, second %.0f..%.0f (no exchange)", rows[0][0].link_min,
	       rows[0][0].link_max, rows[1][0].link_min, rows[1][0].link_max);

	struct result t = run("$B/torusrun --torus 3 --quiet --timeout 60 -- $B/torus-bench allgather --sizes 96 "
			      "--warmup 1 --reps 2");
	EXPECT(t.status == 0 && strstr(t.out, "1 warm-up + 2 timed calls per size (medians)") &&
		       count_lines(t.out, " ok") == 1,
	       "table:\n%.500s\n%.500s", t.out, t.err);
	result_free(&t);
}

/*
 * One core serving all six streams of the multicolor allreduce on 3x3x3
 * handles their events in a fixed order (run_streams), so its emulated time
 * is the same from run to run: to 0.5% here (1.0233-1.0245 ms seen, also
 * on a loaded host), where taking events in wall-clock arrival order varied
 * by 13% (1.30-1.47 ms). Not to the picosecond: the six streams do share
 * links for a moment at phase boundaries (the core serves them one after
 * another, so the colors drift apart), and there the host's order decides
 * (README, "When links are shared").
 */
static void test_multiplexed_repeatable(void)
{
	double first = 0;
	for (int k = 0; k < 4; k++) {
		struct result r = run("$B/torusrun --torus 3x3x3 --cores 1 --quiet --timeout 60 -- $B/torus-bench allreduce "
				      "--algo multicolor --sizes 1M --json");
		struct row w[2];
		int ok = EXPECT(r.status == 0 && parse_rows(r.out, w, 2) == 1 && w[0].checked == 1,
				"run %d: status %d\n%.500s%.500s", k, r.status, r.out, r.err);
		if (ok && k == 0)
			first = w[0].emulated_ps;
		else if (ok)
			EXPECT(fabs(w[0].emulated_ps - first) <= first * 5e-3,
			       "run %d: emulated %.0f ps, run 0 %.0f ps: more than 0.5%% apart", k, w[0].emulated_ps, first);
		result_free(&r);
	}
	EXPECT(first > 0, "no emulated time");
}

/* The table: a header naming the run and one row per size, all "ok". */
static void test_table(void)
{
	struct result r = run("$B/torusrun --torus 3 --cores 2 --quiet --timeout 60 -- $B/torus-bench reduce_scatter "
			      "--algo ring --sizes 96:384 --dtype int32 --op bor --cores-per-node 1 --compute-delay 5");
	CU_ASSERT_EQUAL(r.status, 0);
	EXPECT(strstr(r.out, "reduce_scatter: algo ring, torus 3, 3 nodes, 1 core per node, dtype int32, op bor, "
			     "compute delay 5 ns/KiB") != NULL,
	       "header: %.500s", r.out);
	EXPECT(count_lines(r.out, " ok") == 3, "3 rows ok:\n%.1000s\n%.1000s", r.out, r.err);
	result_free(&r);
}

/* TORUS_COLL_<KIND> set but empty is the default (it was -ENOENT on every
 * call: an algorithm named ""), and a name that is no algorithm fails. */
static void test_empty_algo_env(void)
{
	struct result r = run("TORUS_COLL_ALLREDUCE= $B/torusrun --torus 2x2 --quiet --timeout 60 -- $B/torus-bench "
			      "allreduce --sizes 1K");
	CU_ASSERT_EQUAL(r.status, 0);
	EXPECT(count_lines(r.out, " ok") == 1, "empty: %.500s\n%.500s", r.out, r.err);
	/* the header names what ran, and the allreduce that gathers the link
	 * loads runs it too (it was handed the empty name, failed with
	 * -ENOENT, and a fallback hid that until torus-bench reported it) */
	EXPECT(strstr(r.out, "algo multicolor (default)") != NULL, "header: %.500s", r.out);
	EXPECT(strstr(r.err, "gathers the link loads") == NULL, "bookkeeping failed: %.500s", r.err);
	result_free(&r);
	r = run("TORUS_COLL_ALLREDUCE=nosuch $B/torusrun --torus 2x2 --quiet --timeout 60 -- $B/torus-bench "
		"allreduce --sizes 1K");
	CU_ASSERT_NOT_EQUAL(r.status, 0);
	result_free(&r);
}

/* Bad input: non-zero status, nothing on stdout, and exactly one line of
 * torus-bench's on stderr that names the problem (torusrun adds its own
 * "node R exited with status 2" lines). Outside torusrun: status 2 and
 * that one line alone. */
static void bad_input(const char *args, const char *says)
{
	struct result r = run("$B/torusrun --torus 2x2x2 --cores 1 --timeout 60 -- $B/torus-bench %s", args);
	EXPECT(r.status != 0, "[%s] status 0", args);
	EXPECT(r.out[0] == '\0', "[%s] stdout: %.300s", args, r.out);
	EXPECT(count_lines(r.err, "torus-bench:") == 1, "[%s] want one torus-bench line:\n%.1000s", args, r.err);
	EXPECT(strstr(r.err, says) != NULL, "[%s] stderr does not say '%s':\n%.1000s", args, says, r.err);
	EXPECT(strstr(r.err, "exited with status 2") != NULL, "[%s] nodes should exit 2:\n%.1000s", args, r.err);
	result_free(&r);

	r = run("$B/torus-bench %s", args);
	EXPECT(r.status == 2, "[%s] outside torusrun: status %d", args, r.status);
	EXPECT(r.out[0] == '\0' && count_lines(r.err, NULL) == 1 && strstr(r.err, says),
	       "[%s] outside torusrun:\n%.300s\n%.300s", args, r.out, r.err);
	result_free(&r);
}

/*
 * Sizes up to 1T are accepted, and a run whose buffers the host cannot
 * hold is refused before anything is allocated (it once filled 3 GB in 5 s
 * before the kernel stopped it); with uneven nodes, the error names
 * --members cores.
 */
static void test_sizes_and_memory(void)
{
	struct result r = run("$B/torusrun --torus 2x2x2 --quiet --timeout 60 -- $B/torus-bench allreduce --sizes 1T");
	EXPECT(r.status != 0 && r.out[0] == '\0' && count_lines(r.err, "torus-bench:") == 1 &&
		       strstr(r.err, "the run's buffers need about 16384.0 GiB (8 nodes, 1099511627776 bytes") &&
		       strstr(r.err, "give smaller --sizes") && strstr(r.err, "exited with status 2"),
	       "1T allreduce: %d\n%.1000s", r.status, r.err);
	result_free(&r);
	r = run("$B/torusrun --torus 2x2 --quiet --timeout 60 -- $B/torus-bench alltoall --no-check --sizes 64G");
	EXPECT(r.status != 0 && strstr(r.err, "the run's buffers need about 256.0 GiB (4 nodes"),
	       "alltoall --no-check counts the receive buffers only: %d\n%.1000s", r.status, r.err);
	result_free(&r);
	r = run("$B/torusrun --torus 3 --cores-map 1,3,2 --quiet --timeout 60 -- $B/torus-bench alltoall --sizes 1K");
	EXPECT(r.status != 0 && strstr(r.err, "nodes have 1 to 3 cores: give --members cores"),
	       "uneven nodes: %d\n%.1000s", r.status, r.err);
	result_free(&r);
}

static void test_bad_collective(void) { bad_input("allfoo --sizes 1K", "unknown collective 'allfoo'"); }
static void test_bad_sizes(void) { bad_input("allreduce --sizes 0", "bad --sizes '0'"); }
static void test_bad_dtype(void) { bad_input("allreduce --dtype foo", "unknown --dtype 'foo'"); }
static void test_bad_op_for_dtype(void) { bad_input("allreduce --op band --dtype double", "--op band is not defined"); }
static void test_bad_algo(void) { bad_input("allreduce --algo nosuch", "unknown --algo 'nosuch'"); }

/* Errors that need the job to see them: still one line from node 0. */
static void job_error(const char *env, const char *args, int status, const char *says)
{
	struct result r =
		run("%s $B/torusrun --torus 2x2x2 --cores 1 --timeout 60 -- $B/torus-bench %s", env, args);
	EXPECT(r.status == 1, "[%s] torusrun status %d", args, r.status);
	EXPECT(count_lines(r.err, "torus-bench:") == 1, "[%s] want one torus-bench line:\n%.1000s", args, r.err);
	EXPECT(strstr(r.err, says) != NULL, "[%s] stderr does not say '%s':\n%.1000s", args, says, r.err);
	char st[64];
	snprintf(st, sizeof(st), "exited with status %d", status);
	EXPECT(strstr(r.err, st) != NULL, "[%s] nodes should exit %d:\n%.1000s", args, status, r.err);
	result_free(&r);
}

static void test_too_small(void)
{
	job_error("", "reduce_scatter --sizes 32", 2, "n must be at least 64 bytes");
}
static void test_too_many_cores(void) { job_error("", "allreduce --cores-per-node 2", 2, "--cores-per-node 2"); }
static void test_env_algo_unknown(void)
{
	job_error("TORUS_COLL_ALLREDUCE=nosuch", "allreduce --sizes 1K --json", 1, "no algorithm named 'nosuch'");
}
static void test_wrong_result_caught(void)
{
	job_error("TORUS_BENCH_CORRUPT=5:3", "allreduce --algo ring --sizes 1K", 1,
		  "wrong result on node 5 at element 3");
}
static void test_wrong_result_caught_reps(void)
{
	job_error("TORUS_BENCH_CORRUPT=2:7", "allreduce --sizes 1K --warmup 1 --reps 2", 1,
		  "wrong result on node 2 at element 7");
}
/* alltoall: a member's block corrupted is caught, with --members cores too */
static void test_alltoall_wrong_result_caught(void)
{
	job_error("TORUS_BENCH_CORRUPT=3:5", "alltoall --algo factor --sizes 1K", 1, "wrong result on node 3 at element 5");
	job_error("TORUS_BENCH_CORRUPT=6:2", "alltoall --algo bruck --members cores --sizes 1K", 1,
		  "wrong result on member 6 at element 2");
}
/* xor on 6 members: the error names the algorithm, on every node's exit */
static void test_alltoall_xor_on_six(void)
{
	struct result r = run("$B/torusrun --torus 6 --quiet --timeout 60 -- $B/torus-bench alltoall --algo xor --sizes 1K");
	EXPECT(r.status == 1, "status %d", r.status);
	EXPECT(count_lines(r.err, "torus-bench:") == 1 && strstr(r.err, "alltoall (xor) of") &&
		       strstr(r.err, "does not meet the algorithm's restrictions"),
	       "stderr:\n%.1000s", r.err);
	result_free(&r);
	/* and the default on 6 members works (it never picks xor there) */
	r = run("$B/torusrun --torus 6 --quiet --timeout 60 -- $B/torus-bench alltoall --sizes 48:48K --json");
	EXPECT(r.status == 0 && !strstr(r.out, "\"algo\": \"xor\"}"), "status %d\n%.2000s", r.status, r.out);
	result_free(&r);
}

static void test_alltoall_bad_options(void)
{
	bad_input("allreduce --explain", "--explain is for alltoall only");
	bad_input("alltoall --members threads", "bad --members 'threads' (nodes or cores)");
	bad_input("alltoall --members cores --cores-per-node 1", "--cores-per-node is for node members");
}

static void test_alltoallv_bad_pattern(void)
{
	bad_input("alltoallv --pattern zigzag", "unknown --pattern 'zigzag'");
	bad_input("alltoallv --seed -3", "bad --seed '-3'");
}

static void test_bad_reps(void) { bad_input("allreduce --reps 0", "bad --reps '0' (1 .. 1000)"); }
static void test_bad_warmup(void) { bad_input("allreduce --warmup many", "bad --warmup 'many' (0 .. 1000)"); }

static void test_help(void)
{
	struct result r = run("$B/torus-bench --help");
	CU_ASSERT_EQUAL(r.status, 0);
	EXPECT(strstr(r.out, "usage: torusrun") && strstr(r.out, "allreduce | allgather | reduce_scatter") &&
		       strstr(r.out, "--json"),
	       "usage: %.500s", r.out);
	EXPECT(r.err[0] == '\0', "stderr: %.300s", r.err);
	result_free(&r);
}

int main(int argc, char **argv)
{
	if (job_util_init())
		return 2;
	static const struct cunit_case runs[] = {
		CUNIT_CASE(test_allreduce_ring_json), CUNIT_CASE(test_allgather_ring_json),
		CUNIT_CASE(test_reduce_scatter_ring_json), CUNIT_CASE(test_ring_1d_every_link),
		CUNIT_CASE(test_default_algo), CUNIT_CASE(test_warmup_reps), CUNIT_CASE(test_table),
		CUNIT_CASE(test_multiplexed_repeatable), CUNIT_CASE(test_alltoall_json), CUNIT_CASE(test_alltoall_no_check), CUNIT_CASE(test_alltoall_explain),
		CUNIT_CASE(test_alltoall_uneven_members), CUNIT_CASE(test_alltoall_tiny_fifos),
		CUNIT_CASE(test_alltoallv_patterns), CUNIT_CASE(test_alltoallv_smaller_size_sends_more), CUNIT_CASE(test_sizes_and_memory), CUNIT_CASE(test_alltoallv_inplace_memory),
		CUNIT_CASE(test_alltoall_every_algorithm_4x4x4), CUNIT_CASE(test_alltoall_every_algorithm_few_counters)};
	/* 512 nodes: the ctest entry bench-large (label stress) */
	static const struct cunit_case large[] = {CUNIT_CASE(test_alltoall_every_algorithm_8x8x8)};
	static const struct cunit_case errors[] = {
		CUNIT_CASE(test_bad_collective), CUNIT_CASE(test_bad_sizes), CUNIT_CASE(test_bad_dtype),
		CUNIT_CASE(test_bad_op_for_dtype), CUNIT_CASE(test_bad_algo), CUNIT_CASE(test_empty_algo_env), CUNIT_CASE(test_too_small),
		CUNIT_CASE(test_too_many_cores), CUNIT_CASE(test_env_algo_unknown), CUNIT_CASE(test_wrong_result_caught),
		CUNIT_CASE(test_wrong_result_caught_reps), CUNIT_CASE(test_bad_reps), CUNIT_CASE(test_bad_warmup),
		CUNIT_CASE(test_help), CUNIT_CASE(test_alltoall_wrong_result_caught), CUNIT_CASE(test_alltoall_bad_options),
		CUNIT_CASE(test_alltoall_xor_on_six), CUNIT_CASE(test_alltoallv_bad_pattern)};
	static const struct cunit_suite all[] = {{"bench.runs", runs, CUNIT_COUNT(runs)},
						 {"bench.errors", errors, CUNIT_COUNT(errors)},
						 {"bench.large", large, CUNIT_COUNT(large)}};
	int rc = cunit_main_only(all, CUNIT_COUNT(all), (const char *const *)argv + 1, argc > 1 ? (size_t)(argc - 1) : 0);
	job_util_cleanup();
	return rc;
}
