/*
 * torusrun's exact time held to the reference simulator (refsim.h):
 * raw packets, puts and gets on random shapes and core counts, replayed by
 * exact-check with --chaos, at different ring depths and
 * with different exact_lead (how far cores may post ahead of the
 * simulation). Every raw packet arrives at the picosecond refsim gives,
 * and every core's counter waits return at the picosecond refsim's
 * completion times give. torus-stress gives torus-timesim's figure, the
 * same under five chaos seeds, at fifo_slots 1, 64 and 256, and at
 * exact_lead 1 ps, 100 ns, 20 us and none.
 *
 * Each job carries 8 scenarios one after another, a virtual second apart
 * (nothing of one reaches into the next), so 25 jobs make 200 scenarios.
 */
#include "cunit_main.h"
#include "job_util.h"
#include "refsim.h"
#include "../dma/dma_internal.h"

#include <errno.h>
#include <unistd.h>

#include "test_rng.h"

static int light(void) { return getenv("TORUS_TEST_LIGHT") != NULL; }

#define GAP 1000000000000ull /* a virtual second between scenarios */
#define BASE 10000000ull     /* posts start 10 us in, after exact-check's first barrier */

/* Scenario s of a job: random raw packets, puts and gets among the job's
 * cores, in bursts that share links, posted from BASE + s * GAP on. */
static size_t scenario(const struct torus_shape *sh, const uint32_t *cores, const struct torus_params *p, uint32_t s,
		       struct refsim_xfer *x, size_t cap)
{
	size_t n = 1 + rnd() % 60;
	if (n > cap)
		n = cap;
	torus_vt_t base = BASE + (torus_vt_t)s * GAP;
	torus_vt_t burst[3] = {base + rnd() % 2000000, base + rnd() % 500000, base};
	for (size_t i = 0; i < n; i++) {
		x[i] = (struct refsim_xfer){0};
		x[i].kind = REFSIM_RAW + (uint32_t)(rnd() % 4); /* raw, put, get or memory-FIFO message */
		x[i].src_node = (uint32_t)(rnd() % sh->nnodes);
		x[i].src_core = (uint32_t)(rnd() % cores[x[i].src_node]);
		x[i].fifo = (uint32_t)(rnd() % p->inj_fifos);
		x[i].dst_node = (uint32_t)(rnd() % sh->nnodes);
		x[i].dst_core = (uint32_t)(rnd() % cores[x[i].dst_node]);
		x[i].len = x[i].kind == REFSIM_RAW ? rnd() % 241 : 1 + rnd() % 4000;
		x[i].post = rnd() % 2 ? burst[rnd() % 3] : base + rnd() % 3000000;
		if (rnd() % 5 == 0) {
			uint32_t d = (uint32_t)(rnd() % sh->ndims);
			x[i].hints = (uint16_t)((1u + (uint32_t)(rnd() % 2)) << (2 * d));
		}
	}
	return n;
}

/* Run x[0..n) with `opts`; compare what each core saw with
 * what refsim's times give. */
static void run_and_compare(const char *shape_text, const char *cores_map, struct refsim_xfer *x, size_t n,
			    const char *opts, const char *what)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/scenario.txt", tmpdir);
	FILE *f = fopen(path, "w");
	CU_ASSERT_FATAL(f != NULL);
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%u %u %u %u %u %u %llu %llu %u\n", x[i].kind, x[i].src_node, x[i].src_core, x[i].fifo,
			x[i].dst_node, x[i].dst_core, (unsigned long long)x[i].len, (unsigned long long)x[i].post,
			x[i].hints);
	fclose(f);
	if (getenv("EXACT_KEEP")) {
		/* for a failure to be re-run by hand */
		static int seq;
		char cmd[1200];
		snprintf(cmd, sizeof(cmd), "cp %s %s/scenario-%d.txt && echo '%s %s %s' > %s/scenario-%d.cmd", path,
			 getenv("EXACT_KEEP"), seq, shape_text, cores_map, opts, getenv("EXACT_KEEP"), seq);
		seq++;
		if (system(cmd) != 0)
			fprintf(stderr, "could not keep the scenario\n");
	}
	struct result r = run("$B/torusrun --quiet --timeout 120 --torus %s --cores-map %s "
			      "--param dma_counters=512 %s -- $B/exact-check %s",
			      shape_text, cores_map, opts, path);
	EXPECT(r.status == 0, "%s: exact-check failed (%d): %s", what, r.status, r.err);
	/* each core's lines: "start NODE CORE CLOCK", then its counter waits
	 * in file order (the clock after each: the later of the clock before
	 * and the transfer's completion), then its raw arrivals */
	size_t seen = 0, bad = 0;
	torus_vt_t clock = 0;
	for (const char *p = r.out; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		unsigned node, core;
		unsigned long long a, b;
		if (sscanf(p, "start %u %u %llu", &node, &core, &a) == 3) {
			clock = a;
			continue;
		}
		size_t i;
		if (sscanf(p, "xfer %zu %llu", &i, &b) != 2 || i >= n)
			continue;
		seen++;
		torus_vt_t want = x[i].done;
		if (x[i].kind == REFSIM_PUT || x[i].kind == REFSIM_GET) {
			want = clock > x[i].done ? clock : x[i].done;
			clock = want;
		}
		if (b != want && bad++ < 5)
			EXPECT(0, "%s: transfer %zu (kind %u, %u.%u -> %u.%u, %llu B, posted %llu): seen at %llu ps, refsim "
				  "gives %llu (done at %llu)",
			       what, i, x[i].kind, x[i].src_node, x[i].src_core, x[i].dst_node, x[i].dst_core,
			       (unsigned long long)x[i].len, (unsigned long long)x[i].post, b, (unsigned long long)want,
			       (unsigned long long)x[i].done);
	}
	EXPECT(bad == 0, "%s: %zu of %zu transfers differ from refsim", what, bad, n);
	EXPECT(seen == n, "%s: %zu transfers reported of %zu", what, seen, n);
	result_free(&r);
}

static void test_random_equals_refsim(void)
{
	static const char *depths[] = {"--param fifo_slots=1 --param rx_slots=1 --param inj_slots=1", "",
				       "--param fifo_slots=256 --param rx_slots=256"};
	/* how far cores may post ahead of the simulation: no bound (the
	 * default), a wait before nearly every post, some, a few */
	static const char *leads[] = {"", "--param exact_lead=1ps", "--param exact_lead=300ns", "--param exact_lead=20us"};
	struct torus_params p;
	torus_params_default(&p);
	rng_state = 0x13e8ac7ull;
	const int jobs = light() ? 4 : 25, per = 8;
	int scenarios = 0;
	for (int j = 0; j < jobs; j++) {
		char text[48], map[256], what[640], opts[256];
		size_t used = 0, mused = 0;
		uint32_t nd = 1 + (uint32_t)(rnd() % 3);
		for (uint32_t d = 0; d < nd; d++)
			used += (size_t)snprintf(text + used, sizeof(text) - used, d ? "x%u" : "%u", 1 + (uint32_t)(rnd() % 4));
		struct torus_shape s;
		char err[128];
		CU_ASSERT_FATAL(torus_shape_parse(text, &s, err, sizeof(err)) == 0);
		uint32_t cores[64];
		for (uint32_t i = 0; i < s.nnodes; i++) {
			cores[i] = 1 + (uint32_t)(rnd() % 3);
			mused += (size_t)snprintf(map + mused, sizeof(map) - mused, i ? ",%u" : "%u", cores[i]);
		}
		struct refsim_xfer x[per * 60];
		size_t n = 0;
		for (int k = 0; k < per; k++)
			n += scenario(&s, cores, &p, (uint32_t)k, x + n, sizeof(x) / sizeof(x[0]) - n);
		scenarios += per;
		struct refsim_config rc = {&s, &p, cores, (uint32_t)sizeof(struct dma_getreq), NULL, NULL};
		CU_ASSERT_FATAL(refsim_run(&rc, x, n) == 0);
		snprintf(opts, sizeof(opts), "--chaos %d %s %s", j + 1, depths[j % 3], leads[j % 4]);
		snprintf(what, sizeof(what), "job %d (%s, cores %s, %s)", j, text, map, opts);
		run_and_compare(text, map, x, n, opts, what);
	}
	EXPECT(scenarios >= (light() ? 32 : 200), "only %d scenarios", scenarios);
}

/* Two streams into one link, a hot spot and an all-to-all, of raw packets. */
static void test_classic_cases(void)
{
	struct torus_params p;
	torus_params_default(&p);
	struct torus_shape s;
	char err[128];
	CU_ASSERT_FATAL(torus_shape_parse("4x4", &s, err, sizeof(err)) == 0);
	uint32_t cores[16];
	for (int i = 0; i < 16; i++)
		cores[i] = 1;
	struct refsim_xfer x[16 * 15 + 16 + 20 + 2 + 16 + 8];
	size_t n = 0;
	/* two streams meeting at node 1's x+ link: 0 -> 2 and 1 -> 2, 10 raw
	 * packets each, then the same as two puts of 2400 bytes */
	for (int k = 0; k < 10; k++) {
		x[n++] = (struct refsim_xfer){REFSIM_RAW, 0, 0, 0, 2, 0, 240, BASE, 0, 0, 0, 0};
		x[n++] = (struct refsim_xfer){REFSIM_RAW, 1, 0, 0, 2, 0, 240, BASE, 0, 0, 0, 0};
	}
	x[n++] = (struct refsim_xfer){REFSIM_PUT, 0, 0, 1, 2, 0, 2400, BASE + GAP / 2, 0, 0, 0, 0};
	x[n++] = (struct refsim_xfer){REFSIM_PUT, 1, 0, 1, 2, 0, 2400, BASE + GAP / 2, 0, 0, 0, 0};
	/* a hot spot: every node puts 1000 bytes to node 5, a second later */
	for (uint32_t a = 0; a < 16; a++)
		if (a != 5)
			x[n++] = (struct refsim_xfer){REFSIM_PUT, a, 0, a % 8, 5, 0, 1000, BASE + GAP, 0, 0, 0, 0};
	/* an all-to-all of puts, each node starting at its own distance, two
	 * seconds in; and every node gets 480 bytes from the node opposite */
	for (uint32_t k = 1; k < 16; k++)
		for (uint32_t a = 0; a < 16; a++)
			x[n++] = (struct refsim_xfer){REFSIM_PUT, a, 0, k % 8, (a + k) % 16, 0, 720, BASE + 2 * GAP, 0, 0, 0, 0};
	for (uint32_t a = 0; a < 16; a++)
		x[n++] = (struct refsim_xfer){REFSIM_GET, a, 0, 0, (a + 10) % 16, 0, 480, BASE + 3 * GAP, 0, 0, 0, 0};
	/* the file is read in order per core: put each core's sends in post order */
	struct refsim_xfer sorted[sizeof(x) / sizeof(x[0])];
	size_t m = 0;
	for (uint32_t a = 0; a < 16; a++)
		for (size_t i = 0; i < n; i++)
			if (x[i].src_node == a)
				sorted[m++] = x[i];
	struct refsim_config rc = {&s, &p, cores, (uint32_t)sizeof(struct dma_getreq), NULL, NULL};
	CU_ASSERT_FATAL(refsim_run(&rc, sorted, m) == 0);
	run_and_compare("4x4", "1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1", sorted, m, "--chaos 3", "classic cases");
}

/* torus-stress: the figure torus-timesim gives (its last
 * arrival, plus the one poll that finds nothing after it), the same in
 * every run, and without its receive-only promise (--no-expect): the same
 * report (time, every link's counters and busy time) and the same trace,
 * packet by packet (a checksum of torus-trace --packets all). */
static void test_stress_repeats(void)
{
	struct result t = run("$B/torus-timesim --torus 4x4x4 --cores 2 --packets 1 --quiet");
	CU_ASSERT_FATAL(t.status == 0);
	double core0 = -1;
	const char *p = strstr(t.out, "core 0");
	CU_ASSERT_FATAL(p && sscanf(p, "core 0 %lf us", &core0) == 1);
	result_free(&t);
	struct torus_params prm;
	torus_params_default(&prm);
	char want[64];
	snprintf(want, sizeof(want), "emulated time %.3f us", core0 + prm.poll_cost_ps / 1e6);
	static const char *opts[] = {"--chaos 1", "--chaos 2 --param exact_lead=100ns", "--chaos 3 --param exact_lead=20us",
				     "--chaos 4", "--chaos 5 --param exact_lead=1ps",
				     "--param fifo_slots=1", "--param fifo_slots=64", "--param fifo_slots=256"};
	static const char *prog[] = {"", "--no-expect", "", "", "--no-expect", "", "", ""};
	const size_t nopts = light() ? 3 : sizeof(opts) / sizeof(opts[0]);
	char *first = NULL;
	for (size_t i = 0; i < nopts; i++) {
		char rpt[512], trc[512];
		snprintf(rpt, sizeof(rpt), "%s/stress%zu.json", tmpdir, i);
		snprintf(trc, sizeof(trc), "%s/stress%zu.trace", tmpdir, i);
		/* the timekeeper's account says how often cores waited for it */
		setenv("TORUS_TK_DEBUG", "1", 1);
		struct result r = run("$B/torusrun --quiet --torus 4x4x4 --cores 2 --report %s --trace %s --trace-packets %s "
				      "-- $B/torus-stress --packets 1 %s",
				      rpt, trc, opts[i], prog[i]);
		unsetenv("TORUS_TK_DEBUG");
		EXPECT(r.status == 0, "%s: torus-stress failed: %s", opts[i], r.err);
		EXPECT(strstr(r.out, want) != NULL, "%s: '%s', want '%s'", opts[i], r.out, want);
		/* the sends take 12.7 us: a 20 us lead never holds a core back,
		 * 100 ns and 1 ps do, and none (the default) is no bound */
		const char *acct = strstr(r.err, "queries answered (");
		unsigned long long paces = 0;
		EXPECT(acct && sscanf(acct, "queries answered (%llu paces)", &paces) == 1, "%s: no account: %s", opts[i],
		       r.err);
		int paced = strstr(opts[i], "exact_lead=1ps") || strstr(opts[i], "exact_lead=100ns");
		EXPECT(paced ? paces > 0 : paces == 0, "%s: %llu paces", opts[i], paces);
		/* the report: emulated time and every link's counters and busy time */
		char *rep = slurp(rpt);
		char *links = section(rep, "\"links\"");
		uint64_t vt = json_u64(rep, "emulated_time_ps");
		struct result tr = run("$B/torus-trace %s --packets all | cksum", trc);
		unsigned long long sum = 0, len = 0;
		EXPECT(tr.status == 0 && sscanf(tr.out, "%llu %llu", &sum, &len) == 2 && len > 100000, "%s: trace: %d %s%s",
		       opts[i], tr.status, tr.out, tr.err);
		result_free(&tr);
		unlink(trc);
		char *mine = NULL;
		if (asprintf(&mine, "%llu|%llu %llu|%s", (unsigned long long)vt, sum, len, links) < 0)
			mine = NULL;
		CU_ASSERT_FATAL(mine != NULL);
		if (!first)
			first = mine;
		else {
			EXPECT(!strcmp(first, mine),
			       "%s: the report's time or link counters, or the trace, differ from the first run's", opts[i]);
			free(mine);
		}
		free(links);
		free(rep);
		result_free(&r);
	}
	free(first);
}

/* torus-bench's result row (the first line that starts with a number),
 * without its wall time: "bytes emulated bound ratio links check". */
static char *bench_row(const char *out)
{
	for (const char *p = out; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		unsigned long long bytes, lmax, lmin;
		double emu, bound, ratio, wall;
		char check[16], *row = NULL;
		if (sscanf(p, "%llu %lf %lf %lf %lf %llu %llu %15s", &bytes, &emu, &bound, &ratio, &wall, &lmax, &lmin,
			   check) == 8)
			return asprintf(&row, "%llu %.3f %.3f %.3f %llu %llu %s", bytes, emu, bound, ratio, lmax, lmin,
					check) < 0
				       ? NULL
				       : row;
	}
	return NULL;
}

/*
 * The multicolor collectives (watermarks, memory-FIFO address exchanges,
 * barriers). On 4x4x4 a run with --exact (accepted, changes nothing) and
 * chaos gives the plain run's row. On 2x3x4 the colors share links: the
 * same time under every chaos seed and ring depth.
 */
static void test_collectives(void)
{
	static const char *colls[] = {"allgather", "reduce_scatter"};
	for (size_t i = 0; i < (light() ? 1u : 2u); i++) {
		char *row[2];
		for (int ex = 0; ex < 2; ex++) {
			struct result r = run("$B/torusrun %s --quiet --torus 4x4x4 --cores 3 -- $B/torus-bench %s --algo "
					      "multicolor --sizes 1M",
					      ex ? "--exact --chaos 7" : "", colls[i]);
			EXPECT(r.status == 0, "%s%s: %s", colls[i], ex ? " --exact --chaos 7" : "", r.err);
			row[ex] = bench_row(r.out);
			CU_ASSERT_FATAL(row[ex] != NULL);
			result_free(&r);
		}
		EXPECT(strstr(row[1], " ok") != NULL, "%s --exact --chaos 7: %s", colls[i], row[1]);
		EXPECT(!strcmp(row[0], row[1]), "%s on 4x4x4: '%s' plain, '%s' with --exact --chaos 7", colls[i], row[0],
		       row[1]);
		free(row[0]);
		free(row[1]);
	}
	static const char *opts[] = {"--chaos 1 --param fifo_slots=1 --param rx_slots=1",
				     "--chaos 2 --param exact_lead=50ns",
				     "--chaos 3 --param fifo_slots=256 --param inj_slots=256"};
	char *first = NULL;
	for (size_t i = 0; i < (light() ? 2u : 3u); i++) {
		struct result r = run("$B/torusrun --quiet --torus 2x3x4 --cores 3 %s -- $B/torus-bench allreduce "
				      "--algo multicolor --sizes 1M",
				      opts[i]);
		EXPECT(r.status == 0, "allreduce on 2x3x4, %s: %s", opts[i], r.err);
		char *row = bench_row(r.out);
		CU_ASSERT_FATAL(row != NULL);
		EXPECT(strstr(row, " ok") != NULL, "allreduce on 2x3x4, %s: %s", opts[i], row);
		if (!first)
			first = row;
		else {
			EXPECT(!strcmp(first, row), "allreduce on 2x3x4, %s: '%s', the first run gave '%s'", opts[i], row,
			       first);
			free(row);
		}
		result_free(&r);
	}
	free(first);
}

/*
 * --trace: the timekeeper writes every packet. In a traced
 * direct all-to-all (every node sends to every node at once, links shared
 * all over; the old engine's trace of it overlaps on 320 of 384 link
 * directions) no packet overlaps another on any link direction, the
 * trace's totals equal the link counters, and tracing changes no time.
 */
static void test_trace_no_overlap(void)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/a2a.trace", tmpdir);
	const char *job = "--param dma_counters=256 -- $B/torus-bench alltoall --algo direct --sizes 16K";
	struct result r = run("$B/torusrun --quiet --chaos 3 --torus 4x4x4 --trace %s --trace-packets %s", path, job);
	struct result u = run("$B/torusrun --quiet --torus 4x4x4 %s", job);
	EXPECT(r.status == 0 && u.status == 0, "traced all-to-all: %s %s", r.err, u.err);
	char *traced = bench_row(r.out), *plain = bench_row(u.out);
	CU_ASSERT_FATAL(traced && plain);
	EXPECT(!strcmp(traced, plain) && strstr(traced, " ok"), "traced '%s', untraced '%s'", traced, plain);
	free(traced);
	free(plain);
	result_free(&u);
	result_free(&r);
	r = run("$B/torus-trace %s --summary", path);
	EXPECT(r.status == 0, "torus-trace: %s", r.err);
	EXPECT(strstr(r.out, "overlaps: none") != NULL, "the trace has overlapping packets: %.300s",
	       strstr(r.out, "overlaps") ? strstr(r.out, "overlaps") : r.out);
	EXPECT(strstr(r.out, "equal the link counters (torusrun --report) on all 384 link directions") != NULL,
	       "the trace's totals differ from the counters: %.300s", strstr(r.out, "counters") ? strstr(r.out, "counters") : r.out);
	result_free(&r);
	/* one record per packet: as many as the packets the links carried */
	r = run("$B/torus-trace %s --packets all", path);
	size_t lines = 0;
	for (const char *p = r.out; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		lines++;
	EXPECT(r.status == 0 && lines > 1000, "--packets all: %zu lines", lines);
	result_free(&r);
}

/* A post that takes no time is refused; refused deposits (faults) are timed. */
/* The same lines in a and b, in any order (the nodes' lines interleave). */
static int same_lines(const char *a, const char *b)
{
	if (strlen(a) != strlen(b))
		return 0;
	for (const char *p = a; *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : p + strlen(p)) {
		char line[256];
		size_t n = strcspn(p, "\n");
		snprintf(line, sizeof(line), "%.*s", (int)n, p);
		if (!strstr(b, line))
			return 0;
	}
	return 1;
}

static void test_refusals(void)
{
	struct result r = run("$B/torusrun --torus 2 --param inj_overhead=0ps -- $B/torus-hello");
	EXPECT(r.status == 2 && strstr(r.err, "inj_overhead"), "inj_overhead 0: %d %s", r.status, r.err);
	result_free(&r);
	/* unchecked descriptors are timed too: what the destination refuses
	 * comes back as a fault hop_latency per hop after the refused
	 * deposit (0, 1, 2 and 3 hops; dma-check faulttime checks the time) */
	static const char *const ft[] = {"--torus 2x2 --cores 2 -- $B/dma-check faulttime 1",
					 "--torus 4 --chaos 5 -- $B/dma-check faulttime 1",
					 "--torus 8 --chaos 6 -- $B/dma-check faulttime 2",
					 "--torus 2x3 --cores-map 1,2,1,3,2,1 -- $B/dma-check faulttime 5",
					 /* a mark crossed in the lookahead before the core asks */
					 "--torus 2 --timeout 20 -- $B/dma-check markwait",
					 "--torus 2x2 --cores 2 --chaos 7 --timeout 20 -- $B/dma-check markwait",
					 /* a packet arrives while the core's own packet
					  * leaves, whose counter it waits for too */
					 "--torus 2 --timeout 20 -- $B/dma-check leftwait",
					 "--torus 2 --chaos 3 --timeout 20 -- $B/dma-check leftwait",
					 /* an injection counter's packets finishing out of order */
					 "--torus 2x2 --timeout 20 -- $B/dma-check injorder"};
	for (size_t i = 0; i < sizeof(ft) / sizeof(ft[0]); i++) {
		r = run("$B/torusrun --quiet %s", ft[i]);
		EXPECT(r.status == 0 &&
			       (strstr(r.out, "faulttime: ") || strstr(r.out, "markwait: ") || strstr(r.out, "leftwait: ") ||
				strstr(r.out, "injorder: ")),
		       "%s: %d\n%s%s",
		       ft[i], r.status, r.out, r.err);
		result_free(&r);
	}
	/* a local copy of 4 MiB takes its post (100 ns) and len / copy_bw
	 * (4 GB/s: 1048.576 us) */
	r = run("$B/torusrun --quiet --torus 2 -- $B/example-dma-copy");
	EXPECT(r.status == 0 && strstr(r.out, "node 0 core 0: copied 4194304 bytes (intact), clock 1048.676 us") &&
		       strstr(r.out, "node 1 core 0: copied 4194304 bytes (intact), clock 1048.676 us"),
	       "a local copy: %d '%s'", r.status, r.out);
	result_free(&r);
}

/* "N program steps taken" in a TORUS_TK_DEBUG report, or -1. */
static long long program_steps(const char *err)
{
	const char *p = strstr(err, " program steps taken");
	if (!p)
		return -1;
	while (p > err && p[-1] >= '0' && p[-1] <= '9')
		p--;
	return atoll(p);
}

/*
 * Programs (emu_core_program_start) change no emulated time: the relay of
 * dma-check program and the multicolor collectives (which run as
 * programs) give the same times with them as without (TORUS_PROGRAM=0,
 * every wait on marks a question), under chaos; the timekeeper took their
 * steps; and a core that does not make the step it told stops the job
 * with a message.
 */
static void test_programs(void)
{
	static const char *const relay[] = {"--torus 2x2 --cores 2 -- $B/dma-check %s 1000 2000000 5",
					    "--torus 3 --chaos 3 -- $B/dma-check %s 4000 0 7",
					    "--torus 2x3 --cores-map 1,2,1,3,2,1 --chaos 4 -- $B/dma-check %s 256 500000 4"};
	/* TORUS_PROGRAM=0 first: the programs' rows must equal it */
	static const char *const modes[] = {"TORUS_PROGRAM=0 TORUS_TK_DEBUG=1", "TORUS_TK_DEBUG=1"};
	for (size_t i = 0; i < sizeof(relay) / sizeof(relay[0]); i++) {
		char *first = NULL;
		for (size_t md = 0; md < 2; md++) {
			char cmd[256];
			snprintf(cmd, sizeof(cmd), relay[i], "program");
			struct result r = run("%s $B/torusrun --quiet %s", modes[md], cmd);
			long long n = program_steps(r.err);
			EXPECT(r.status == 0 && strstr(r.out, "relay: core 0 at ") && (md ? n > 0 : n == 0) &&
				       (!first || same_lines(first, r.out)),
			       "%s %s: %d, %lld program steps\n%s%s\nthe first run:\n%s", modes[md], cmd, r.status, n, r.out,
			       r.err, first ? first : "");
			if (!first)
				first = strdup(r.out);
			result_free(&r);
		}
		free(first);
	}
	struct result rb = run("$B/torusrun --quiet --torus 2x2 --cores 2 --timeout 30 -- $B/dma-check program 1000 "
			       "2000000 5 1");
	EXPECT(rb.status != 0 && strstr(rb.err, "core 1 of node 0 did not make the step its program told "
						"(emu_core_program_start)"),
	       "a step not made as told: %d\n%s", rb.status, rb.err);
	result_free(&rb);
	/* bad switches: an error on every member, which says why; a bad
	 * exact_nice before anything starts */
	static const char *const bad[][2] = {{"TORUS_PROGRAM=2", "TORUS_PROGRAM must be 0 or 1, not '2'"},
					     {"TORUS_DEFER=on", "TORUS_DEFER must be 0 or 1, not 'on'"}};
	for (size_t i = 0; i < CUNIT_COUNT(bad); i++) {
		struct result r = run("%s $B/torusrun --quiet --torus 2x2 -- $B/torus-bench allreduce --sizes 1K",
				      bad[i][0]);
		EXPECT(r.status != 0 && strstr(r.err, bad[i][1]) && strstr(r.err, "Invalid argument"), "%s: %d\n%s",
		       bad[i][0], r.status, r.err);
		result_free(&r);
	}
	struct result rn = run("$B/torusrun --quiet --torus 2 --param exact_nice=20 -- $B/torus-hello");
	EXPECT(rn.status == 2 && strstr(rn.err, "exact_nice: 20 is out of range [0, 19]"), "exact_nice=20: %d\n%s",
	       rn.status, rn.err);
	result_free(&rn);
	static const char *const ar[] = {"--torus 4x4x4 --cores 1 --chaos 5 -- $B/torus-bench allreduce --sizes 256K",
					 "--torus 2x3x4 --cores 3 --chaos 6 -- $B/torus-bench allreduce --sizes 1M",
					 "--torus 4x4x4x2 --cores 4 --chaos 7 -- $B/torus-bench allgather --sizes 1M",
					 /* one color, two streams on three cores: a core without any */
					 "--torus 2x2 --cores 3 --chaos 8 -- $B/torus-bench allreduce --sizes 16"};
	/* under a sanitizer (ten times slower, and the TSan pass is the
	 * suite's longest): the same kinds of job, smaller */
	static const char *const ar_light[] = {"--torus 2x2x2 --cores 1 --chaos 5 -- $B/torus-bench allreduce --sizes 64K",
					       "--torus 2x3x2 --cores 3 --chaos 6 -- $B/torus-bench allreduce --sizes 64K",
					       "--torus 2x2x2x2 --cores 2 --chaos 7 -- $B/torus-bench allgather --sizes 64K",
					       "--torus 2x2 --cores 3 --chaos 8 -- $B/torus-bench allreduce --sizes 16"};
	_Static_assert(sizeof(ar) == sizeof(ar_light), "a light job for each");
	for (size_t i = 0; i < sizeof(ar) / sizeof(ar[0]); i++) {
		const char *job = light() ? ar_light[i] : ar[i];
		char *first = NULL;
		for (size_t md = 0; md < 2; md++) {
			struct result r = run("%s $B/torusrun --quiet %s", modes[md], job);
			char *row = bench_row(r.out);
			long long n = program_steps(r.err);
			EXPECT(r.status == 0 && row && strstr(row, " ok") && (md ? n > 0 : n == 0) && (!first || !strcmp(first, row)),
			       "%s %s: '%s' (%lld steps followed), the first run '%s'\n%s", modes[md], job, row ? row : "?", n,
			       first ? first : "", r.err);
			if (!first)
				first = row;
			else
				free(row);
			result_free(&r);
		}
		free(first);
	}
}

/* "timekeeper: N deferred waits;" (TORUS_TK_DEBUG), or ~0 */
static unsigned long long deferred_waits(const char *err)
{
	for (const char *n = strstr(err, "timekeeper: "); n; n = strstr(n + 1, "timekeeper: ")) {
		unsigned long long waits;
		int end = 0;
		if (sscanf(n, "timekeeper: %llu deferred waits;%n", &waits, &end) == 1 && end > 0)
			return waits;
	}
	return ~0ull;
}

/* "queries by type (...): 1:N 2:N ...": the count for type q, or ~0. */
static unsigned long long queries_of_type(const char *err, unsigned q)
{
	const char *n = strstr(err, "queries by type");
	char key[16];
	snprintf(key, sizeof(key), " %u:", q);
	const char *at = n ? strstr(n, key) : NULL;
	unsigned long long v = ~0ull;
	if (!at || sscanf(at + strlen(key), "%llu", &v) != 1)
		return ~0ull;
	return v;
}

/* Each job's row with every wait asked (TORUS_DEFER=0) and deferred
 * (under `chaos`) must be the same. programs 0: the deferred run deferred
 * waits, the asked one none; 1: the asked run asked its programs' ends
 * (EMU_TKQ_PROGRAM, type 11), the deferred one none. */
static void deferred_same_rows(const char *const *jobs, size_t n, const char *chaos, int programs)
{
	for (size_t j = 0; j < n; j++) {
		char *row[2] = {NULL, NULL};
		for (int d = 0; d < 2; d++) {
			struct result r = run("TORUS_TK_DEBUG=1 TORUS_DEFER=%d $B/torusrun --quiet %s %s", d, d ? chaos : "",
					      jobs[j]);
			unsigned long long k = programs ? queries_of_type(r.err, 11) : deferred_waits(r.err);
			int ok = k != ~0ull && (programs ? (d ? k == 0 : k > 0) : (d ? k > 0 : k == 0));
			EXPECT(r.status == 0 && ok, "%s, TORUS_DEFER=%d: %d, %llu %s\n%.2000s", jobs[j], d, r.status, k,
			       programs ? "program ends asked" : "deferred", r.err);
			row[d] = bench_row(r.out);
			result_free(&r);
		}
		EXPECT(row[0] && row[1] && !strcmp(row[0], row[1]), "%s: asked '%s', deferred '%s'", jobs[j],
		       row[0] ? row[0] : "?", row[1] ? row[1] : "?");
		free(row[0]);
		free(row[1]);
	}
}

/*
 * Deferred waits: a core that waits for one counter tells the timekeeper
 * in its event ring and runs on, its clock an offset until it observes
 * time. The same rows as with every wait a question (TORUS_DEFER=0), on
 * contended all-to-alls and a ring allreduce, under chaos and 1-slot
 * rings; the waits were deferred (the timekeeper's count).
 */
static void test_deferred(void)
{
	static const char *const jobs[] = {
		"--torus 2x3x2 -- $B/torus-bench alltoall --algo direct --sizes 12K",
		"--torus 2x2x2 --cores 2 -- $B/torus-bench alltoall --algo xor --sizes 8K",
		"--torus 4x4 -- $B/torus-bench allreduce --algo ring --sizes 64K",
		"--torus 3x2 --cores 2 -- $B/torus-bench reduce_scatter --algo direct --sizes 12K",
	};
	deferred_same_rows(jobs, light() ? 2u : CUNIT_COUNT(jobs), "--chaos 11 --param fifo_slots=1", 0);
}

/*
 * A collective run as a program (the multicolor allreduce) ends in a
 * deferred wait: the core runs on into its next call without asking the
 * timekeeper when the program ended. The same rows as with the end asked
 * (TORUS_DEFER=0), over repeated calls, with one and three cores, under
 * chaos; no program's end was asked.
 */
static void test_deferred_programs(void)
{
	static const char *const jobs[] = {
		"--torus 2x3x2 --cores 3 -- $B/torus-bench allreduce --sizes 48K --warmup 2 --reps 3",
		"--torus 2x2x2 -- $B/torus-bench allreduce --sizes 64K --warmup 1 --reps 3",
	};
	deferred_same_rows(jobs, CUNIT_COUNT(jobs), "--chaos 5", 1);
}

int main(void)
{
	if (job_util_init())
		return 2;
	static const struct cunit_case cases[] = {
		{"random_equals_refsim", test_random_equals_refsim},
		{"classic_cases", test_classic_cases},
		{"stress_repeats", test_stress_repeats},
		{"collectives", test_collectives},
		{"trace_no_overlap", test_trace_no_overlap},
		{"refusals", test_refusals},
		{"programs", test_programs},
		{"deferred", test_deferred},
		{"deferred_programs", test_deferred_programs},
	};
	static const struct cunit_suite suites[] = {{"exact", cases, sizeof(cases) / sizeof(cases[0])}};
	int rc = cunit_main(suites, 1);
	job_util_cleanup();
	return rc;
}
