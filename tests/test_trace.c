/*
 * Link traces (torusrun --trace, torus-trace): a traced multicolor
 * allgather on 4x4x4 uses, in each phase, the dimension each color's
 * permutation names and both directions of it (003_b0aac8c3d10c7733.txt,
 * section 4), every link direction carrying one stream per phase; the
 * trace's totals equal the report's link counters, link by link, with
 * io_uring and with plain writes, in runs and per packet; trace memory is
 * fixed while the file grows; corrupt, truncated, fuzzed or foreign
 * files end in one clear line and exit status 2; and records that overlap
 * on a link direction are counted, their utilisation shown over 100%, and
 * --packets lists a link's records (issue 13, point 8).
 */
#include "cunit_main.h"
#include "job_util.h"
#include "trace_tool.h"

#include <stdbool.h>
#include <sys/stat.h>

static int light(void) { return getenv("TORUS_TEST_LIGHT") != NULL; }

/* Per link direction of node `from`: the report's counters. */
struct rep_link {
	uint32_t from, dim, dir;
	uint64_t packets, payload, wire, busy;
};

static size_t parse_report_links(const char *json, struct rep_link *out, size_t max)
{
	size_t n = 0;
	const char *p = strstr(json, "\"links\": [");
	if (!p)
		return 0;
	while (n < max && (p = strstr(p, "{\"from\": "))) {
		struct rep_link *l = &out[n];
		char dir;
		if (sscanf(p,
			   "{\"from\": %u, \"to\": %*u, \"dim\": %u, \"dir\": \"%c\", \"packets\": %lu, \"payload_bytes\": "
			   "%lu, \"wire_bytes\": %lu, \"busy_ps\": %lu",
			   &l->from, &l->dim, &dir, &l->packets, &l->payload, &l->wire, &l->busy) != 7)
			break;
		l->dir = dir == '-';
		n++;
		p++;
	}
	return n;
}

/*
 * Every link direction of the report equals the sum of the trace's records
 * on it, and the end chunk's counters; returns the link directions checked.
 */
static size_t check_totals(const struct tt_trace *t, const char *report)
{
	size_t max = (size_t)t->shape.nnodes * 2 * TORUS_MAX_DIMS;
	struct rep_link *rl = calloc(max, sizeof(*rl));
	uint64_t(*sum)[4] = calloc(t->nlinks, sizeof(*sum));
	CU_ASSERT_FATAL(rl && sum);
	for (size_t i = 0; i < t->nrec; i++) {
		sum[t->rec[i].link][0] += t->rec[i].packets;
		sum[t->rec[i].link][1] += t->rec[i].payload;
		sum[t->rec[i].link][2] += t->rec[i].wire;
		sum[t->rec[i].link][3] += t->rec[i].busy;
	}
	size_t n = parse_report_links(report, rl, max), bad = 0;
	for (size_t i = 0; i < n; i++) {
		uint32_t id = tt_link_id(t, rl[i].from, rl[i].dim, rl[i].dir);
		bool ok = sum[id][0] == rl[i].packets && sum[id][1] == rl[i].payload && sum[id][2] == rl[i].wire &&
			  sum[id][3] == rl[i].busy;
		if (!ok && bad++ < 3)
			EXPECT(0, "node %u dim %u dir %u: trace %lu packets %lu B %lu ps, report %lu packets %lu B %lu ps",
			       rl[i].from, rl[i].dim, rl[i].dir, (unsigned long)sum[id][0], (unsigned long)sum[id][1],
			       (unsigned long)sum[id][3], (unsigned long)rl[i].packets, (unsigned long)rl[i].payload,
			       (unsigned long)rl[i].busy);
	}
	CU_ASSERT_EQUAL(bad, 0);
	/* the end chunk holds the same counters */
	CU_ASSERT_FATAL(t->has_end);
	CU_ASSERT_EQUAL(t->ncounters, n);
	for (size_t i = 0; i < t->ncounters; i++) {
		const struct torus_trace_counters *k = &t->counters[i];
		uint32_t id = tt_link_id(t, k->node, k->dim, k->dir);
		EXPECT(sum[id][0] == k->packets && sum[id][1] == k->payload_bytes && sum[id][3] == k->busy_ps,
		       "end chunk: node %u dim %u dir %u", k->node, k->dim, k->dir);
	}
	free(rl);
	free(sum);
	return n;
}

static void load(const char *name, struct tt_trace *t)
{
	char path[512], err[512];
	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	int rc = tt_load(path, t, err, sizeof(err));
	EXPECT(rc == 0, "tt_load %s: %s", path, err);
	CU_ASSERT_FATAL(rc == 0);
}

/*
 * Section 4: color c runs its phase i along dimension pi_c(i) = (i + c) mod
 * N, its two streams on the two directions; in each phase the N colors use
 * N different dimensions, so each link direction carries exactly one
 * stream.
 */
static void test_allgather_phases(void)
{
	const char *size = light() ? "96KiB" : "1MiB";
	struct result r = run("$B/torusrun --torus 4x4x4 --cores 3 --timeout 120 --trace $T/ag.trace --report $T/ag.json "
			      "-- $B/torus-bench allgather --algo multicolor --sizes %s:%s",
			      size, size);
	EXPECT(r.status == 0, "status %d\n%.2000s", r.status, r.err);
	EXPECT(strstr(r.err, "64 of 64 nodes flushed") != NULL, "%.500s", r.err);
	result_free(&r);
	struct tt_trace t;
	load("ag.trace", &t);
	const uint32_t N = 3;
	/* stream seen on (node, dim, dir) in phase i: -1 none, -2 several */
	int32_t *seen = malloc((size_t)t.nlinks * N * sizeof(int32_t));
	uint64_t used[3][3][2] = {{{0}}}; /* color, phase, direction: payload bytes */
	size_t tagged = 0, wrong = 0, other = 0, control = 0;
	CU_ASSERT_FATAL(seen != NULL);
	for (size_t i = 0; i < (size_t)t.nlinks * N; i++)
		seen[i] = -1;
	for (size_t i = 0; i < t.nrec; i++) {
		const struct tt_rec *x = &t.rec[i];
		control += torus_tag_coll(x->tag) == TORUS_TAG_CONTROL;
		if (torus_tag_coll(x->tag) != TORUS_TAG_ALLGATHER) {
			other += torus_tag_coll(x->tag) != TORUS_TAG_CONTROL && torus_tag_coll(x->tag) != TORUS_TAG_NONE;
			continue;
		}
		tagged++;
		uint32_t s = torus_tag_stream(x->tag), ph = torus_tag_phase(x->tag), c = s / 2;
		if (torus_tag_algo(x->tag) != TORUS_ALGO_MULTICOLOR || torus_tag_stage(x->tag) != TORUS_STAGE_AG ||
		    s >= 2 * N || ph >= N || x->dim != (ph + c) % N || x->dir != s % 2) {
			if (wrong++ < 5)
				EXPECT(0, "node %u link %u%c: stream %u phase %u stage %u", x->node, x->dim, x->dir ? '-' : '+',
				       s, ph, torus_tag_stage(x->tag));
			continue;
		}
		used[c][ph][x->dir] += x->payload;
		int32_t *k = &seen[(size_t)x->link * N + ph];
		*k = *k == -1 || *k == (int32_t)s ? (int32_t)s : -2;
	}
	CU_ASSERT(tagged > 0);
	CU_ASSERT_EQUAL(wrong, 0);
	/* torus-bench's bookkeeping allreduce is tagged control
	 * (coll_team_set_trace_tag), as is the address exchange */
	CU_ASSERT_EQUAL(other, 0);
	CU_ASSERT(control > 0);
	for (uint32_t c = 0; c < N; c++)
		for (uint32_t ph = 0; ph < N; ph++)
			EXPECT(used[c][ph][0] > 0 && used[c][ph][1] > 0, "color %u phase %u: + %lu B, - %lu B", c, ph,
			       (unsigned long)used[c][ph][0], (unsigned long)used[c][ph][1]);
	size_t one = 0;
	for (uint32_t id = 0; id < t.nlinks; id++)
		for (uint32_t ph = 0; ph < N; ph++)
			one += seen[(size_t)id * N + ph] >= 0;
	EXPECT(one == (size_t)t.nlinks * N, "%zu of %zu (link direction, phase) pairs carry exactly one stream", one,
	       (size_t)t.nlinks * N);
	char path[600];
	snprintf(path, sizeof(path), "%s/ag.json", tmpdir);
	char *rep = slurp(path);
	CU_ASSERT_EQUAL(check_totals(&t, rep), 384);
	free(rep);
	free(seen);
	tt_free(&t);

	/* torus-trace's own check says the same */
	r = run("$B/torus-trace $T/ag.trace --summary");
	EXPECT(r.status == 0 && strstr(r.out, "equal the link counters (torusrun --report) on all 384"), "%d %.300s",
	       r.status, r.err);
	EXPECT(strstr(r.out, "allgather AG phase 0") && strstr(r.out, "allgather AG phase 2"), "%.3000s", r.out);
	result_free(&r);
}

static size_t count_str(const char *s, const char *needle)
{
	size_t n = 0;
	for (const char *p = s; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/*
 * The other outputs of the allgather's trace: the CSV has a row per bin and
 * link direction whose bytes add up to the trace's; the Perfetto JSON a
 * track per link direction and a slice per record; the SVG a panel per
 * phase, and the PNG of it is a PNG.
 */
static void test_outputs(void)
{
	struct tt_trace t;
	load("ag.trace", &t);
	uint64_t payload = 0;
	for (size_t i = 0; i < t.nrec; i++)
		payload += t.rec[i].payload;
	/* 10 bins: the last one ends at or after the last record */
	uint64_t bin_ns = (t.t_end + 9999) / 10000;
	struct result r = run("$B/torus-trace $T/ag.trace --csv --bin %lu", (unsigned long)bin_ns);
	CU_ASSERT_EQUAL(r.status, 0);
	CU_ASSERT_EQUAL(count_lines(r.out, NULL), 1 + 10 * 384);
	CU_ASSERT(!strncmp(r.out, "bin_start_ns,bin_ns,node,to,dim,dir,payload_bytes,utilisation\n", 62));
	double sum = 0, umax = 0;
	for (const char *line = strchr(r.out, '\n'); line && line[1]; line = strchr(line + 1, '\n')) {
		double pay, u;
		if (sscanf(line + 1, "%*f,%*f,%*u,%*u,%*[xyz],%*[+-],%lf,%lf", &pay, &u) == 2) {
			sum += pay;
			umax = u > umax ? u : umax;
		}
	}
	EXPECT(sum > payload - 384 * 10 && sum < payload + 384 * 10, "CSV bytes %.0f, trace %lu", sum,
	       (unsigned long)payload);
	EXPECT(umax > 0.9 && umax <= 1.0 + 1e-9, "peak utilisation %.4f", umax);
	result_free(&r);

	r = run("$B/torus-trace $T/ag.trace --perfetto $T/ag.json.trace && cat $T/ag.json.trace");
	CU_ASSERT_EQUAL(r.status, 0);
	CU_ASSERT(!strncmp(r.out, "{\"displayTimeUnit\"", 18) && strstr(r.out, "\n]}\n"));
	CU_ASSERT_EQUAL(count_str(r.out, "\"name\": \"thread_name\""), 384);
	CU_ASSERT_EQUAL(count_str(r.out, "\"name\": \"process_name\""), 64);
	CU_ASSERT_EQUAL(count_str(r.out, "\"ph\": \"X\""), t.nrec);
	result_free(&r);

	r = run("$B/torus-trace $T/ag.trace --svg $T/ag.svg && cat $T/ag.svg");
	CU_ASSERT_EQUAL(r.status, 0);
	EXPECT(strstr(r.out, "<svg") && strstr(r.out, "</svg>") && strstr(r.out, "allgather AG phase 0") &&
		       strstr(r.out, "allgather AG phase 2"),
	       "%.300s", r.out);
	result_free(&r);
	/* the PNG, rendered by rsvg-convert (librsvg2-bin, in the README's set-up) */
	r = run("$B/torus-trace $T/ag.trace --png $T/ag.png && head -c 8 $T/ag.png | od -An -tx1");
	EXPECT(r.status == 0 && strstr(r.out, "89 50 4e 47 0d 0a 1a 0a"), "%d %.300s %.300s", r.status, r.out, r.err);
	result_free(&r);
	/* --color: one color's share of each phase is a third (3 colors, equal
	 * loads); a color with no traffic and a bad one are errors */
	uint64_t all_ph[3] = {0}, one_ph[3] = {0};
	for (int k = 0; k < 2; k++) {
		r = run(k ? "$B/torus-trace $T/ag.trace --color 1" : "$B/torus-trace $T/ag.trace");
		CU_ASSERT_EQUAL(r.status, 0);
		for (int ph = 0; ph < 3; ph++) {
			char key[64];
			snprintf(key, sizeof(key), "allgather AG phase %d ", ph);
			const char *at = strstr(r.out, key);
			double a0, a1;
			unsigned long long pay = 0;
			if (at && sscanf(at + strlen(key), "%lf %lf %llu", &a0, &a1, &pay) == 3)
				(k ? one_ph : all_ph)[ph] = pay;
		}
		if (k)
			CU_ASSERT(strstr(r.out, "only the records of one color") != NULL);
		result_free(&r);
	}
	for (int ph = 0; ph < 3; ph++)
		EXPECT(all_ph[ph] > 0 && one_ph[ph] * 3 > all_ph[ph] * 0.99 && one_ph[ph] * 3 < all_ph[ph] * 1.01,
		       "phase %d: color 1 %lu B of %lu B", ph, (unsigned long)one_ph[ph], (unsigned long)all_ph[ph]);
	r = run("$B/torus-trace $T/ag.trace --color 5");
	EXPECT(r.status == 1 && strstr(r.err, "no multicolor traffic of color 5"), "%d %.300s", r.status, r.err);
	result_free(&r);
	r = run("$B/torus-trace $T/ag.trace --color x");
	EXPECT(r.status == 2 && strstr(r.err, "bad --color 'x'"), "%d %.300s", r.status, r.err);
	result_free(&r);
	r = run("$B/torus-trace $T/ag.trace --svg /nonexistent-dir/x.svg");
	EXPECT(r.status == 1 && strstr(r.err, "/nonexistent-dir/x.svg"), "%d %.300s", r.status, r.err);
	result_free(&r);
	tt_free(&t);
}

/* Plain writes (no io_uring), one record per packet, on a ring. */
static void test_sync_packets(void)
{
	struct result r = run("TORUS_TRACE_SYNC=1 $B/torusrun --torus 6 --cores 2 --timeout 60 --trace $T/s.trace "
			      "--trace-packets --report $T/s.json -- $B/torus-bench allreduce --algo ring --sizes 40000:40000");
	EXPECT(r.status == 0, "status %d\n%.2000s", r.status, r.err);
	result_free(&r);
	struct tt_trace t;
	load("s.trace", &t);
	CU_ASSERT(t.hdr.flags & TORUS_TRACE_F_PACKETS);
	size_t multi = 0, rs = 0, ag = 0;
	for (size_t i = 0; i < t.nrec; i++) {
		multi += t.rec[i].packets != 1;
		/* the vector's packets (torus-bench's one-element calls that agree
		 * on the timings carry 8 bytes) */
		if (torus_tag_coll(t.rec[i].tag) == TORUS_TAG_ALLREDUCE && torus_tag_algo(t.rec[i].tag) == TORUS_ALGO_RING &&
		    t.rec[i].payload > 8) {
			rs += torus_tag_stage(t.rec[i].tag) == TORUS_STAGE_RS;
			ag += torus_tag_stage(t.rec[i].tag) == TORUS_STAGE_AG;
		}
	}
	CU_ASSERT_EQUAL(multi, 0);
	/* 40000 bytes in 6 blocks of 6672 or 6664 bytes, 28 packets each; 5
	 * steps a stage on each of the 6 nodes */
	EXPECT(rs == 6 * 5 * 28 && ag == rs, "ring packets: RS %zu, AG %zu", rs, ag);
	char path[600];
	snprintf(path, sizeof(path), "%s/s.json", tmpdir);
	char *rep = slurp(path);
	CU_ASSERT_EQUAL(check_totals(&t, rep), 12);
	free(rep);
	tt_free(&t);
}

/*
 * A node killed mid-run: the timekeeper writes every node's records, so the
 * trace keeps all it simulated. The summary names the records and the
 * file's size, and torus-trace reads exactly that many records back.
 */
static void test_killed_node(void)
{
	struct result r = run("$B/torusrun --torus 2x2x2 --timeout 120 --trace $T/kill.trace --trace-packets -- sh -c "
			      "'echo $$ > $T/kpid.$TORUS_RANK; exec $B/torus-stress --packets 100000' & "
			      "for i in $(seq 600); do [ -s $T/kpid.2 ] && [ $(stat -c %%s $T/kill.trace) -gt 2000000 ] && "
			      "break; sleep 0.05; done; kill -9 $(cat $T/kpid.2); wait $!");
	EXPECT(r.status == 1, "status %d\n%.2000s", r.status, r.err);
	EXPECT(strstr(r.err, "node 2 (0,1,0) was killed by signal 9") != NULL, "%.2000s", r.err);
	unsigned long long said = 0;
	double mb = 0;
	const char *line = strstr(r.err, "torusrun: trace ");
	EXPECT(line && sscanf(strchr(line, ':') + 1, " trace %*s %llu records, %lf MB", &said, &mb) == 2, "%.2000s",
	       r.err);
	result_free(&r);
	char path[600];
	struct stat st;
	snprintf(path, sizeof(path), "%s/kill.trace", tmpdir);
	CU_ASSERT_FATAL(stat(path, &st) == 0);
	double off = mb * 1e6 - (double)st.st_size;
	EXPECT(st.st_size > 2000000 && off < 50001 && off > -50001, "trace of %ld bytes, the summary says %.1f MB",
	       (long)st.st_size, mb);
	struct tt_trace t;
	load("kill.trace", &t);
	EXPECT(said > 0 && t.nrec == said, "the summary says %llu records, the file holds %zu", said, t.nrec);
	tt_free(&t);
}

/*
 * Bounded memory: with 64 KiB of trace buffers per node a job whose trace is
 * many times larger completes, every node flushes, and nothing is lost
 * (totals equal the counters): the buffers are reused, not grown.
 */
static void test_bounded_buffers(void)
{
	struct result r = run("$B/torusrun --torus 2x2x2 --timeout 60 --trace $T/b.trace --trace-buffer 64KiB "
			      "--trace-packets --report $T/b.json -- $B/torus-bench allreduce --algo direct --sizes 1MiB:1MiB");
	EXPECT(r.status == 0, "status %d\n%.2000s", r.status, r.err);
	EXPECT(strstr(r.err, "8 of 8 nodes flushed") != NULL, "%.500s", r.err);
	result_free(&r);
	char path[600];
	struct stat st;
	snprintf(path, sizeof(path), "%s/b.trace", tmpdir);
	CU_ASSERT_FATAL(stat(path, &st) == 0);
	EXPECT(st.st_size > 8 * 4 * (64 << 10), "trace %ld bytes: not 4x the buffers of 8 nodes", (long)st.st_size);
	struct tt_trace t;
	load("b.trace", &t);
	snprintf(path, sizeof(path), "%s/b.json", tmpdir);
	char *rep = slurp(path);
	CU_ASSERT_EQUAL(check_totals(&t, rep), 48);
	free(rep);
	tt_free(&t);
}

static void test_option_errors(void)
{
	static const struct {
		const char *args, *msg;
	} cases[] = {
		{"--trace-buffer 1KiB --trace $T/x.trace", "bad --trace-buffer '1KiB'"},
		{"--trace-buffer lots --trace $T/x.trace", "bad --trace-buffer 'lots'"},
		{"--trace-packets", "--trace-packets needs --trace FILE"},
		{"--trace /nonexistent-dir/x.trace", "cannot create trace /nonexistent-dir/x.trace"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct result r = run("$B/torusrun --torus 2 %s -- $B/torus-hello", cases[i].args);
		EXPECT(r.status != 0 && strstr(r.err, cases[i].msg), "%s: status %d: %.300s", cases[i].args, r.status,
		       r.err);
		result_free(&r);
	}
	struct result r = run("$B/torus-trace --help");
	EXPECT(r.status == 0 && strstr(r.out, "--perfetto") && strstr(r.out, "--html"), "%.300s", r.out);
	result_free(&r);
	r = run("$B/torus-trace $T/ag.trace --bin 0");
	EXPECT(r.status == 2 && strstr(r.err, "bad --bin"), "%d %.300s", r.status, r.err);
	result_free(&r);
	/* 1 ns bins over a 5 ms trace: millions of bins, refused before any output */
	r = run("$B/torus-trace $T/b.trace --csv --bin 1");
	EXPECT(r.status == 2 && strstr(r.err, "give a wider --bin") && count_lines(r.err, NULL) == 1 && !r.out[0],
	       "%d %.300s", r.status, r.err);
	result_free(&r);
	r = run("$B/torus-trace");
	EXPECT(r.status == 2 && strstr(r.err, "no trace file"), "%d %.300s", r.status, r.err);
	result_free(&r);
}

/* ------------------------------------------------------------- bad files */

static unsigned char *file_bytes(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long len = ftell(f);
	rewind(f);
	unsigned char *b = malloc((size_t)len + 1);
	*n = b ? fread(b, 1, (size_t)len, f) : 0;
	fclose(f);
	return b;
}

/* Trace torus-hello on `torus` into $T/NAME; its bytes (*n of them), and
 * the file's path in path[len]. Fails the test if either goes wrong. */
static unsigned char *hello_trace(const char *torus, const char *name, char *path, size_t len, size_t *n)
{
	struct result r = run("$B/torusrun --torus %s --quiet --timeout 60 --trace $T/%s -- $B/torus-hello", torus, name);
	CU_ASSERT_FATAL(r.status == 0);
	result_free(&r);
	snprintf(path, len, "%s/%s", tmpdir, name);
	unsigned char *b = file_bytes(path, n);
	CU_ASSERT_FATAL(b != NULL && *n > sizeof(struct torus_trace_header));
	return b;
}

static void write_bytes(const char *path, const void *b, size_t n)
{
	FILE *f = fopen(path, "wb");
	CU_ASSERT_FATAL(f != NULL);
	CU_ASSERT(fwrite(b, 1, n, f) == n);
	fclose(f);
}

/* torus-trace must say why in one line on stderr and exit 2, never crash. */
static int rejects(const char *label, const char *path)
{
	struct result r = run("$B/torus-trace '%s' --summary --csv --perfetto $T/f.json", path);
	int ok = r.status == 2 && !strncmp(r.err, "torus-trace: ", 13) && count_lines(r.err, NULL) == 1 && !r.out[0];
	EXPECT(ok, "%s: status %d, stderr: %.300s, stdout: %.100s", label, r.status, r.err, r.out);
	result_free(&r);
	return ok;
}

static uint64_t rng = 88172645463325252ull;
static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void test_bad_files(void)
{
	struct result r = run("$B/torusrun --torus 2x2 --quiet --timeout 60 --trace $T/g.trace -- $B/torus-bench "
			      "allgather --sizes 20000:20000");
	CU_ASSERT_FATAL(r.status == 0);
	result_free(&r);
	char good[600], bad[600];
	snprintf(good, sizeof(good), "%s/g.trace", tmpdir);
	snprintf(bad, sizeof(bad), "%s/bad.trace", tmpdir);
	size_t n = 0;
	unsigned char *b = file_bytes(good, &n);
	CU_ASSERT_FATAL(b && n > sizeof(struct torus_trace_header) + 2000);
	r = run("$B/torus-trace '%s'", good);
	CU_ASSERT_EQUAL(r.status, 0);
	result_free(&r);

	size_t passed = 0, cases = 0;
	/* truncations: empty, inside the magic, inside the header, inside
	 * chunk headers and bodies, one byte short */
	size_t cuts[] = {0, 5, 100, sizeof(struct torus_trace_header) + 10, sizeof(struct torus_trace_header) + 100,
			 n / 2, n - 200, n - 1};
	for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++, cases++) {
		write_bytes(bad, b, cuts[i]);
		char label[64];
		snprintf(label, sizeof(label), "cut at %zu", cuts[i]);
		passed += rejects(label, bad);
	}
	/* trailing garbage */
	unsigned char *m = malloc(n + 40);
	CU_ASSERT_FATAL(m != NULL);
	memcpy(m, b, n);
	memset(m + n, 0x5a, 40);
	write_bytes(bad, m, n + 40);
	passed += rejects("40 bytes appended", bad), cases++;
	/* single-byte changes anywhere: header, chunk headers, records, end chunk */
	for (int k = 0; k < (light() ? 24 : 60); k++, cases++) {
		memcpy(m, b, n);
		size_t at = k < 8 ? (size_t)k * 7 : (size_t)(next_rand() % n);
		m[at] ^= (unsigned char)(1u << (next_rand() % 8));
		write_bytes(bad, m, n);
		char label[64];
		snprintf(label, sizeof(label), "bit flipped at byte %zu", at);
		passed += rejects(label, bad);
	}
	/* random bytes, with and without the magic */
	for (int k = 0; k < 6; k++, cases++) {
		for (size_t i = 0; i < n; i++)
			m[i] = (unsigned char)next_rand();
		if (k % 2)
			memcpy(m, TORUS_TRACE_MAGIC, 8);
		write_bytes(bad, m, n);
		passed += rejects(k % 2 ? "random bytes after the magic" : "random bytes", bad);
	}
	/* foreign files: a program, a report-like text, a directory */
	char path[1200];
	snprintf(path, sizeof(path), "%s/torusrun", bin);
	passed += rejects("an ELF program", path), cases++;
	snprintf(path, sizeof(path), "%s/text.trace", tmpdir);
	write_bytes(path, "{\"schema\": \"torusrun-report/1\"}\n", 33);
	passed += rejects("a JSON file", path), cases++;
	passed += rejects("a directory", tmpdir), cases++;
	snprintf(path, sizeof(path), "%s/missing.trace", tmpdir);
	passed += rejects("a missing file", path), cases++;
	/* a hole (a node killed mid-write leaves zeros where its chunk was to
	 * go): skipped with a warning, the rest read */
	unsigned char *h = malloc(n + 4096);
	CU_ASSERT_FATAL(h != NULL);
	size_t hb = sizeof(struct torus_trace_header);
	memcpy(h, b, hb);
	memset(h + hb, 0, 4096);
	memcpy(h + hb + 4096, b + hb, n - hb);
	write_bytes(bad, h, n + 4096);
	r = run("$B/torus-trace '%s'", bad);
	EXPECT(r.status == 0 && strstr(r.out, "warning: 4096 bytes of the file were never written") &&
		       strstr(r.out, "equal the link counters"),
	       "hole: %d %.300s %.2000s", r.status, r.err, r.out);
	result_free(&r);
	/* a chunk torn by a kill mid-write: its start written, the rest
	 * zeros; read, its records missing. One byte changed instead is
	 * still corruption */
	{
		struct torus_trace_chunk c0;
		memcpy(h, b, n);
		memcpy(&c0, h + hb, sizeof(c0));
		if (c0.kind == TORUS_TRACE_CHUNK_RECORDS) {
			memset(h + hb + sizeof(c0) + c0.bytes - sizeof(struct torus_trace_rec), 0, sizeof(struct torus_trace_rec));
			write_bytes(bad, h, n);
			r = run("$B/torus-trace '%s'", bad);
			EXPECT(r.status == 0 && strstr(r.out, "bytes of the file were never written"), "torn: %d %.300s %.2000s",
			       r.status, r.err, r.out);
			result_free(&r);
			memcpy(h, b, n);
			h[hb + sizeof(c0) + 3] ^= 0x40;
			write_bytes(bad, h, n);
			passed += rejects("a changed byte in a chunk", bad), cases++;
		}
		CU_ASSERT_EQUAL(c0.kind, TORUS_TRACE_CHUNK_RECORDS);
	}
	/* zeros to the end are a truncation */
	memset(h + hb, 0, 4096);
	write_bytes(bad, h, hb + 4096);
	passed += rejects("zeros after the header", bad), cases++;
	free(h);
	/* a failed job's trace is read, its missing records expected */
	r = run("TORUS_BENCH_CORRUPT=5:3 $B/torusrun --torus 2x4 --quiet --trace $T/fail.trace -- $B/torus-bench allreduce "
		"--algo ring --sizes 1K:4K; $B/torus-trace $T/fail.trace");
	EXPECT(r.status == 0 && strstr(r.out, "warning:"), "failed job: %d %.500s %.2000s", r.status, r.err, r.out);
	result_free(&r);
	/* a future version */
	memcpy(m, b, n);
	((struct torus_trace_header *)m)->version = TORUS_TRACE_VERSION + 1;
	write_bytes(bad, m, n);
	r = run("$B/torus-trace '%s'", bad);
	EXPECT(r.status == 2 && strstr(r.err, "version 3"), "%.300s", r.err);
	result_free(&r);
	CU_ASSERT_EQUAL(passed, cases);
	free(m);
	free(b);
}

/* ---------------------------------------------------- hostile records */

/* Recompute the header's and every chunk's checksum, as anyone rewriting a
 * trace can: what is left to catch a bad field is the loader's checks. */
static void fix_checksums(unsigned char *b, size_t n)
{
	struct torus_trace_header h;
	memcpy(&h, b, sizeof(h));
	h.checksum = torus_trace_header_checksum(&h);
	memcpy(b, &h, sizeof(h));
	for (size_t off = sizeof(h); off + sizeof(struct torus_trace_chunk) <= n;) {
		struct torus_trace_chunk c;
		memcpy(&c, b + off, sizeof(c));
		CU_ASSERT_FATAL(c.bytes <= n - off - sizeof(c));
		c.checksum = torus_trace_chunk_checksum(&c, b + off + sizeof(c));
		memcpy(b + off, &c, sizeof(c));
		off += sizeof(c) + c.bytes;
	}
}

/* Offset of the first chunk of `kind`. */
static size_t find_chunk(const unsigned char *b, size_t n, uint32_t kind)
{
	for (size_t off = sizeof(struct torus_trace_header); off + sizeof(struct torus_trace_chunk) <= n;) {
		struct torus_trace_chunk c;
		memcpy(&c, b + off, sizeof(c));
		if (c.kind == kind)
			return off;
		off += sizeof(c) + c.bytes;
	}
	CU_FAIL_FATAL("no such chunk");
	return 0;
}

enum hostile_field {
	REC_END, REC_SHIFT, REC_END_BEFORE_START, REC_BUSY, REC_WIRE, REC_PACKETS, REC_DIM, REC_KIND, REC_RESERVED,
	END_EMULATED, END_STATUS, END_RECORDS, CNT_TWICE, CNT_BUSY, HDR_LINK_BW, HDR_FLAGS, HDR_CORES, AFTER_END,
};

/*
 * Checksum-valid traces with one impossible field (issue 12): each must
 * end in one line on stderr naming the problem and exit status 2, for the
 * summary and the HTML page alike. Before, a record ending near 2^64 ps
 * made both try to allocate 2^32 bins per link ("Cannot allocate memory",
 * exit 1; an allocator abort under ASan).
 */
static void test_hostile_records(void)
{
	static const struct {
		const char *label;
		enum hostile_field field;
		uint64_t value;
		const char *word;
	} cases[] = {
		/* issue 12: t_end + 99 wrapped, 1 ps bins, 2^32 per link */
		{"a record ends near 2^64 ps", REC_END, UINT64_MAX - 50, "after 2^62 ps"},
		{"a record moved by 2^63 ps", REC_SHIFT, 1ull << 63, "after 2^62 ps"},
		{"a record moved 1 s past the job", REC_SHIFT, 1000000000000ull, "after the job's end"},
		{"a record ends before it starts", REC_END_BEFORE_START, 0, "ends before it starts"},
		{"busy longer than the run", REC_BUSY, 1, "busy time is not its span"},
		{"fewer wire bytes than payload", REC_WIRE, 0, "link model"},
		{"no packets", REC_PACKETS, 0, "packet count"},
		{"dimension 7", REC_DIM, 7, "no such link"},
		{"packet kind 16", REC_KIND, 16, "packet kind"},
		{"a reserved byte", REC_RESERVED, 1, "reserved"},
		{"the job ends after 2^62 ps", END_EMULATED, 1ull << 63, "impossible end chunk"},
		{"status 9", END_STATUS, 9, "impossible end chunk"},
		{"one record more counted", END_RECORDS, 1, "the file holds"},
		{"a link counted twice", CNT_TWICE, 0, "twice"},
		{"a counter's busy time", CNT_BUSY, 1000000000ull, "link model"},
		{"link_bw 0", HDR_LINK_BW, 0, "link_bw"},
		{"unknown flags", HDR_FLAGS, 0x80, "flags"},
		{"no cores", HDR_CORES, 0, "cores"},
		{"records after the end chunk", AFTER_END, 0, "after the end chunk"},
	};
	struct result r;
	char good[600], bad[600];
	size_t n = 0;
	unsigned char *b = hello_trace("2x2", "hostile.trace", good, sizeof(good), &n);
	snprintf(bad, sizeof(bad), "%s/hostile-bad.trace", tmpdir);
	unsigned char *m = malloc(n + 4096);
	CU_ASSERT_FATAL(m != NULL);
	size_t rec_at = find_chunk(b, n, TORUS_TRACE_CHUNK_RECORDS), end_at = find_chunk(b, n, TORUS_TRACE_CHUNK_END);
	size_t rec = rec_at + sizeof(struct torus_trace_chunk), end = end_at + sizeof(struct torus_trace_chunk);
	size_t cnt = end + sizeof(struct torus_trace_end);

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct torus_trace_header h;
		struct torus_trace_rec x;
		struct torus_trace_end e;
		struct torus_trace_counters k[2];
		size_t len = n;
		uint64_t v = cases[i].value;
		memcpy(m, b, n);
		memcpy(&h, m, sizeof(h));
		memcpy(&x, m + rec, sizeof(x));
		memcpy(&e, m + end, sizeof(e));
		memcpy(k, m + cnt, sizeof(k));
		switch (cases[i].field) {
		case REC_END: x.end_ps = v; break;
		case REC_SHIFT: x.start_ps += v, x.end_ps += v; break;
		case REC_END_BEFORE_START: x.start_ps = x.end_ps + 1; break;
		case REC_BUSY: x.busy_ps += v; break;
		case REC_WIRE: x.wire_bytes = x.payload_bytes - 1; break;
		case REC_PACKETS: x.packets = (uint32_t)v; break;
		case REC_DIM: x.dim = (uint8_t)v; break;
		case REC_KIND: x.kind = (uint8_t)v; break;
		case REC_RESERVED: x.reserved[4] = (uint8_t)v; break;
		case END_EMULATED: e.emulated_ps = v; break;
		case END_STATUS: e.status = (uint32_t)v; break;
		case END_RECORDS: e.records += v; break;
		case CNT_TWICE: k[1] = k[0]; break;
		case CNT_BUSY: k[0].busy_ps += v; break;
		case HDR_LINK_BW: h.link_bw = v; break;
		case HDR_FLAGS: h.flags = (uint32_t)v; break;
		case HDR_CORES: h.total_cores = (uint32_t)v; break;
		case AFTER_END: {
			struct torus_trace_chunk c;
			memcpy(&c, m + rec_at, sizeof(c));
			memcpy(m + n, b + rec_at, sizeof(c) + c.bytes);
			len = n + sizeof(c) + c.bytes;
			break;
		}
		}
		memcpy(m, &h, sizeof(h));
		memcpy(m + rec, &x, sizeof(x));
		memcpy(m + end, &e, sizeof(e));
		memcpy(m + cnt, k, sizeof(k));
		fix_checksums(m, len);
		write_bytes(bad, m, len);
		static const char *const outputs[] = {"--summary", "--html $T/hostile.html"};
		for (size_t o = 0; o < 2; o++) {
			r = run("$B/torus-trace '%s' %s", bad, outputs[o]);
			EXPECT(r.status == 2 && !strncmp(r.err, "torus-trace: ", 13) && count_lines(r.err, NULL) == 1 &&
				       strstr(r.err, cases[i].word) && !r.out[0],
			       "%s, %s: status %d, stderr: %.400s, stdout: %.100s", cases[i].label, outputs[o], r.status,
			       r.err, r.out);
			result_free(&r);
		}
	}
	/* the unchanged file, checksums recomputed, still reads */
	memcpy(m, b, n);
	fix_checksums(m, n);
	write_bytes(bad, m, n);
	r = run("$B/torus-trace '%s' --summary --html $T/hostile.html", bad);
	EXPECT(r.status == 0, "%d %.300s", r.status, r.err);
	result_free(&r);
	free(m);
	free(b);
}

/*
 * The job's command line comes from the file (fuzz/corpus/trace/
 * crash-summary-program-newline): the summary must not let it add lines
 * (a forged "total" row) or terminal escapes.
 */
static void test_summary_program_escaped(void)
{
	char path[600];
	size_t n = 0;
	unsigned char *b = hello_trace("2", "prog.trace", path, sizeof(path), &n);
	struct torus_trace_header h;
	memcpy(&h, b, sizeof(h));
	memset(h.program, 0, sizeof(h.program));
	snprintf(h.program, sizeof(h.program), "hello\n total 1 2 3\n\033[2J\r");
	memcpy(b, &h, sizeof(h));
	fix_checksums(b, n);
	write_bytes(path, b, n);
	struct result r = run("$B/torus-trace $T/prog.trace");
	EXPECT(r.status == 0 && strstr(r.out, "program: hello? total 1 2 3??[2J?\n") && !strchr(r.out, '\033') &&
		       !strchr(r.out, '\r') && !strstr(r.out, "\n total 1 2 3"),
	       "%d %.300s %.1000s", r.status, r.err, r.out);
	result_free(&r);
	free(b);
}

/*
 * A trace of one short record late in virtual time (no end chunk, so any
 * time up to 2^62 ps is allowed): the SVG's time axis stepped its ticks by
 * adding a step smaller than the time's rounding, and wrote ticks forever
 * (fuzz/corpus/trace/regress-svg-ticks-late). Where the step is lost
 * depends on rounding: try a few times.
 */
static void test_svg_late_short_trace(void)
{
	char path[600];
	size_t n = 0;
	unsigned char *b = hello_trace("2", "late0.trace", path, sizeof(path), &n);
	struct torus_trace_header h;
	memcpy(&h, b, sizeof(h));
	h.link_bw = 1000000000000ull; /* 1 byte per ps: a packet of 46 wire bytes takes 46 ps */
	struct torus_params p;
	torus_params_default(&p);
	p.header_bytes = h.pkt_header_bytes;
	p.chunk_bytes = h.chunk_bytes;
	p.ack_overhead = h.ack_overhead;
	uint32_t wire = torus_wire_bytes(&p, 0);
	struct torus_trace_rec x = {.packets = 1, .wire_bytes = wire, .busy_ps = wire, .dim = 0, .dir = 0, .kind = 1};
	struct torus_trace_chunk c = {TORUS_TRACE_CHUNK_RECORDS, 0, 1, 0, sizeof(x), 0, 0};
	unsigned char f[sizeof(h) + sizeof(c) + sizeof(x)];
	snprintf(path, sizeof(path), "%s/late.trace", tmpdir);
	int ok = 0;
	for (uint64_t k = 0; k < 64; k++) {
		x.start_ps = (1ull << 62) - 10000000 + 37 * k;
		x.end_ps = x.start_ps + wire;
		memcpy(f, &h, sizeof(h));
		memcpy(f + sizeof(h), &c, sizeof(c));
		memcpy(f + sizeof(h) + sizeof(c), &x, sizeof(x));
		fix_checksums(f, sizeof(f));
		write_bytes(path, f, sizeof(f));
		struct result r = run("timeout 20 $B/torus-trace $T/late.trace --svg $T/late.svg --html $T/late.html && "
			"test $(stat -c %%s $T/late.svg) -lt 1000000 && ! grep -q nan $T/late.svg");
		ok += r.status == 0;
		EXPECT(r.status == 0, "record at %lu ps: status %d %.300s", (unsigned long)x.start_ps, r.status, r.err);
		result_free(&r);
		if (ok != (int)k + 1)
			break;
	}
	free(b);
}

/*
 * Links run past the cores' clock: a job that posts without waiting ends
 * (emulated_ps, the last core's clock) while its links still drain. Such a
 * trace is sound and must read; the span a finished job's records may
 * reach is its end plus all the traffic's time (trace_load.c).
 */
static void test_links_drain_after_cores(void)
{
	struct result r = run("$B/torusrun --torus 2 --cores 2 --quiet --timeout 60 --trace $T/post.trace -- "
			      "$B/torus-linkbench --mode post --packets 2000");
	EXPECT(r.status == 0, "status %d %.500s", r.status, r.err);
	result_free(&r);
	struct tt_trace t;
	load("post.trace", &t);
	CU_ASSERT(t.has_end && t.end.status == 0);
	EXPECT(t.t_end > t.end.emulated_ps, "links end at %lu ps, the cores at %lu ps", (unsigned long)t.t_end,
	       (unsigned long)t.end.emulated_ps);
	tt_free(&t);
	r = run("$B/torus-trace $T/post.trace");
	EXPECT(r.status == 0 && strstr(r.out, "equal the link counters"), "%d %.300s", r.status, r.err);
	result_free(&r);
}

/* ------------------------------------------------------- overlaps, --packets */

/* One packet of a synthetic trace: on link direction x+ (dir 0) or x-
 * (dir 1) of node `node`, starting at `start` ps. */
struct syn_pkt {
	uint32_t node, dir;
	uint64_t start;
	uint32_t payload;
};

/* Wire bytes of a packet of `payload` bytes in header h's link model. */
static uint32_t syn_wire(const struct torus_trace_header *h, uint32_t payload)
{
	struct torus_params p;
	torus_params_default(&p);
	p.header_bytes = h->pkt_header_bytes;
	p.chunk_bytes = h->chunk_bytes;
	p.ack_overhead = h->ack_overhead;
	return torus_wire_bytes(&p, payload);
}

/*
 * $T/NAME: a per-packet trace of the packets pk[0..n) on a ring of 2, with
 * the header of a real one (h, from hello_trace) at 1 byte per ps, so a
 * packet's busy time is its wire bytes; one chunk per node, no end chunk
 * (so no counters to agree with and no job end to stay within). The
 * records are whatever the test says: nothing keeps them from overlapping
 * but the check under test.
 */
static void write_synthetic(const char *name, struct torus_trace_header h, const struct syn_pkt *pk, size_t n)
{
	h.link_bw = 1000000000000ull;
	h.flags = TORUS_TRACE_F_PACKETS;
	size_t cap = sizeof(h) + 2 * sizeof(struct torus_trace_chunk) + n * sizeof(struct torus_trace_rec), len = 0;
	unsigned char *f = calloc(1, cap);
	CU_ASSERT_FATAL(f != NULL);
	memcpy(f, &h, sizeof(h));
	len = sizeof(h);
	for (uint32_t node = 0; node < 2; node++) {
		struct torus_trace_chunk c = {TORUS_TRACE_CHUNK_RECORDS, node, 0, 0, 0, 0, 0};
		size_t at = len;
		len += sizeof(c);
		for (size_t i = 0; i < n; i++) {
			if (pk[i].node != node)
				continue;
			uint32_t wire = syn_wire(&h, pk[i].payload);
			struct torus_trace_rec x = {.start_ps = pk[i].start, .end_ps = pk[i].start + wire, .busy_ps = wire,
						    .packets = 1, .payload_bytes = pk[i].payload, .wire_bytes = wire,
						    .dim = 0, .dir = (uint8_t)pk[i].dir, .kind = 1};
			memcpy(f + len, &x, sizeof(x));
			len += sizeof(x);
			c.count++;
		}
		if (!c.count) {
			len = at;
			continue;
		}
		c.bytes = c.count * (uint32_t)sizeof(struct torus_trace_rec);
		memcpy(f + at, &c, sizeof(c));
	}
	fix_checksums(f, len);
	char path[600];
	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	write_bytes(path, f, len);
	free(f);
}

/* The header of a real trace of a ring of 2. */
static struct torus_trace_header ring2_header(void)
{
	char path[600];
	size_t n = 0;
	struct torus_trace_header h;
	unsigned char *b = hello_trace("2", "ring2.trace", path, sizeof(path), &n);
	memcpy(&h, b, sizeof(h));
	free(b);
	return h;
}

/* The summary's peak % of node `node`'s link `link`, and the largest of
 * every row (*all); -1 if the row is not there. */
static double summary_peak(const char *out, unsigned node, const char *link, double *all)
{
	double want = -1;
	*all = -1;
	for (const char *line = out; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
		unsigned nd, to;
		unsigned long long pk, pay, wire;
		char cs[48], ln[8];
		double busy, peak;
		if (sscanf(line, "%u %47s %7s %u %llu %llu %llu %lf %lf", &nd, cs, ln, &to, &pk, &pay, &wire, &busy,
			   &peak) != 9)
			continue;
		*all = peak > *all ? peak : *all;
		if (nd == node && !strcmp(ln, link))
			want = peak;
	}
	return want;
}

/*
 * Two packets that share a link direction's time: tt_overlaps counts each
 * record that starts before an earlier one on its link has ended (also one
 * inside a long packet after a short one there has ended, which a look at
 * only the previous record would miss), and the time counted twice; the
 * utilisation is not capped at 1 in the summary's peak, the CSV, the SVG
 * or the HTML page.
 */
static void test_overlap_counted(void)
{
	struct torus_trace_header h = ring2_header();
	uint64_t wa = syn_wire(&h, 240), wb = syn_wire(&h, 0);
	CU_ASSERT_FATAL(wa > 2 * wb + 30);
	const struct syn_pkt pk[] = {
		{0, 0, 1000, 240},               /* A, a long packet on node 0 x+ */
		{0, 0, 1010, 0},                 /* B, inside A */
		{0, 0, 1010 + wb + 5, 0},        /* C, after B, still inside A */
		{0, 0, 1000 + wa - 10, 0},       /* D, over A's last 10 ps */
		{0, 1, 1000, 0},                 /* node 0 x-: another link, at A's time */
		{1, 0, 1000, 0},                 /* node 1 x+: back to back, touching */
		{1, 0, 1000 + wb, 0},
	};
	write_synthetic("lap.trace", h, pk, sizeof(pk) / sizeof(pk[0]));
	struct tt_trace t;
	load("lap.trace", &t);
	struct tt_overlap_stats ov;
	CU_ASSERT_FATAL(tt_overlaps(&t, &ov) == 0);
	EXPECT(ov.records == 3 && ov.links == 1 && ov.overlap_ps == 2 * wb + 10 && ov.max_overlap_ps == wb,
	       "%zu records on %u links, %lu ps (at most %lu); want 3 on 1, %lu ps (at most %lu)", ov.records, ov.links,
	       (unsigned long)ov.overlap_ps, (unsigned long)ov.max_overlap_ps, (unsigned long)(2 * wb + 10),
	       (unsigned long)wb);
	EXPECT(ov.records && t.rec[ov.first].node == 0 && t.rec[ov.first].dir == 0 && t.rec[ov.first].start == 1010,
	       "first overlap: node %u dir %u at %lu ps", t.rec[ov.first].node, t.rec[ov.first].dir,
	       (unsigned long)t.rec[ov.first].start);
	/* 10 ps bins over A: the ones inside B carry A and B, twice the link */
	double util[2 * 2 * 40], umax = 0;
	CU_ASSERT_FATAL(t.nlinks == 4);
	CU_ASSERT_FATAL(tt_bin(&t, 1000, 10, 40, NULL, NULL, util) == 0);
	for (uint32_t b = 0; b < 40; b++)
		umax = util[tt_link_id(&t, 0, 0, 0) * 40 + b] > umax ? util[tt_link_id(&t, 0, 0, 0) * 40 + b] : umax;
	EXPECT(umax == 2.0, "node 0 x+: busiest 10 ps bin %.6f, want 2 (A and B)", umax);
	tt_free(&t);

	struct result r = run("$B/torus-trace $T/lap.trace --summary");
	double all, peak = summary_peak(r.out, 0, "x+", &all);
	char want[200];
	snprintf(want, sizeof(want),
		 "overlaps: 3 records on 1 link directions overlap an earlier one on their link direction, %.6f us of "
		 "busy time in all (at most %.6f us at once; the first: node 0 x+ at 0.001010 us)\n",
		 (2 * wb + 10) / 1e6, wb / 1e6);
	EXPECT(r.status == 0 && strstr(r.out, want) && peak == 200.0,
	       "status %d, node 0 x+ peak %.1f%% (want 200.0); want '%s'\n%.3000s", r.status, peak, want, r.out);
	result_free(&r);
	/* the CSV's utilisation too (bins of 1/100 of the trace, 13 ps) */
	r = run("$B/torus-trace $T/lap.trace --csv");
	umax = 0;
	for (const char *line = strchr(r.out, '\n'); line && line[1]; line = strchr(line + 1, '\n')) {
		double u;
		if (sscanf(line + 1, "%*f,%*f,%*u,%*u,%*[xyz],%*[+-],%*f,%lf", &u) == 1)
			umax = u > umax ? u : umax;
	}
	EXPECT(r.status == 0 && umax > 1.5, "CSV: status %d, utilisation at most %.4f; an overlap makes it 2", r.status,
	       umax);
	result_free(&r);
	/* the SVG's panel (one window over all of it: A alone fills it, the
	 * rest is on top) and tooltips say more than 100% */
	r = run("$B/torus-trace $T/lap.trace --svg $T/lap.svg --windows 1 --html $T/lap.html && cat $T/lap.svg");
	const char *mx = strstr(r.out, "links: max ");
	double pct = 0;
	EXPECT(r.status == 0 && mx && sscanf(mx, "links: max %lf%%", &pct) == 1 && pct > 100,
	       "status %d, SVG panel: %.40s", r.status, mx ? mx : "(none)");
	result_free(&r);
	/* the HTML page: bins over 1 go in D.over, as they are */
	char path[600];
	snprintf(path, sizeof(path), "%s/lap.html", tmpdir);
	char *html = slurp(path);
	const char *over = strstr(html, "\"over\": [");
	EXPECT(over && over[9] == '\n' && over[10] == '[', "HTML: %.60s", over ? over : "no \"over\"");
	free(html);
	/* --packets lists node 0 x+'s four, in order of start */
	r = run("$B/torus-trace $T/lap.trace --packets 0:x+");
	unsigned long long start[5] = {0};
	int n = 0;
	for (const char *line = strchr(r.out, '\n'); line && line[1] && n < 5; line = strchr(line + 1, '\n'))
		n += sscanf(line + 1, "0,\"(0)\",x+,1,%llu,", &start[n]) == 1;
	EXPECT(r.status == 0 && count_lines(r.out, NULL) == 5 && n == 4 && start[0] == 1000 && start[1] == 1010 &&
		       start[2] == 1010 + wb + 5 && start[3] == 1000 + wa - 10,
	       "status %d\n%.1000s", r.status, r.out);
	result_free(&r);
}

/* The same packets, none starting before the one before it on its link
 * has left (touching is fine): no overlap, and no bin over 100%. */
static void test_overlap_none(void)
{
	struct torus_trace_header h = ring2_header();
	uint64_t wa = syn_wire(&h, 240), wb = syn_wire(&h, 0);
	const struct syn_pkt pk[] = {
		{0, 0, 1000, 240}, {0, 0, 1000 + wa, 0}, {0, 0, 1000 + wa + wb + 100, 0},
		{0, 1, 1000, 0},   {1, 0, 1000, 0},      {1, 0, 1000 + wb, 0},
	};
	write_synthetic("nolap.trace", h, pk, sizeof(pk) / sizeof(pk[0]));
	struct tt_trace t;
	load("nolap.trace", &t);
	struct tt_overlap_stats ov;
	CU_ASSERT_FATAL(tt_overlaps(&t, &ov) == 0);
	EXPECT(ov.records == 0 && ov.links == 0 && ov.overlap_ps == 0, "%zu records on %u links, %lu ps", ov.records,
	       ov.links, (unsigned long)ov.overlap_ps);
	CU_ASSERT_EQUAL(t.nrec, 6);
	tt_free(&t);
	struct result r = run("$B/torus-trace $T/nolap.trace");
	double all, peak = summary_peak(r.out, 0, "x+", &all);
	EXPECT(r.status == 0 && strstr(r.out, "overlaps: none (no packet starts before the previous one") &&
		       peak == 100.0 && all == 100.0,
	       "status %d, node 0 x+ peak %.1f%%, all %.1f%% (want 100.0)\n%.3000s", r.status, peak, all, r.out);
	result_free(&r);
}

/*
 * A real per-packet trace of a job without contention (torus-hello on 2x2,
 * each node's packets on its links one after another): no overlap, and
 * --packets lists exactly the packets the link counters counted, link by
 * link.
 */
static void test_packets_real_job(void)
{
	struct result r = run("$B/torusrun --torus 2x2 --quiet --timeout 60 --trace $T/hp.trace --trace-packets -- "
			      "$B/torus-hello");
	EXPECT(r.status == 0, "status %d %.500s", r.status, r.err);
	result_free(&r);
	struct tt_trace t;
	load("hp.trace", &t);
	CU_ASSERT_FATAL(t.has_end && (t.hdr.flags & TORUS_TRACE_F_PACKETS));
	struct tt_overlap_stats ov;
	CU_ASSERT_FATAL(tt_overlaps(&t, &ov) == 0);
	EXPECT(ov.records == 0 && ov.overlap_ps == 0, "%zu records overlap, %lu ps", ov.records,
	       (unsigned long)ov.overlap_ps);
	uint64_t counted = 0;
	for (size_t i = 0; i < t.ncounters; i++)
		counted += t.counters[i].packets;
	EXPECT(counted > 0 && counted == t.nrec && t.end.records == t.nrec, "counters %lu packets, %zu records, end %lu",
	       (unsigned long)counted, t.nrec, (unsigned long)t.end.records);

	r = run("$B/torus-trace $T/hp.trace");
	EXPECT(r.status == 0 && strstr(r.out, "overlaps: none (no packet starts") &&
		       strstr(r.out, "equal the link counters"),
	       "%d %.3000s", r.status, r.out);
	result_free(&r);
	r = run("$B/torus-trace $T/hp.trace --packets all");
	EXPECT(r.status == 0 && (uint64_t)count_lines(r.out, NULL) == 1 + counted &&
		       !strncmp(r.out, "node,coords,link,to,start_ps,end_ps,packets,payload_bytes,wire_bytes,kind,tag,"
				       "tag_name\n", 84),
	       "status %d: %d lines for %lu packets\n%.500s", r.status, count_lines(r.out, NULL),
	       (unsigned long)counted, r.out);
	result_free(&r);
	/* each link direction: as many lines as its counter, each a packet of it */
	size_t bad = 0;
	for (size_t i = 0; i < t.ncounters; i++) {
		const struct torus_trace_counters *k = &t.counters[i];
		char dn[8], want[32];
		tt_dir_name(k->dim, k->dir, dn, sizeof(dn));
		r = run("$B/torus-trace $T/hp.trace --packets %u:%s", k->node, dn);
		snprintf(want, sizeof(want), ",%s,%u,", dn, k->to);
		bool ok = r.status == 0 && (uint64_t)count_lines(r.out, NULL) == 1 + k->packets &&
			  (uint64_t)count_lines(r.out, want) == k->packets;
		if (!ok && bad++ < 3)
			EXPECT(0, "node %u %s: status %d, %d lines for %lu packets\n%.500s", k->node, dn, r.status,
			       count_lines(r.out, NULL), (unsigned long)k->packets, r.out);
		result_free(&r);
	}
	CU_ASSERT_EQUAL(bad, 0);
	tt_free(&t);
}

/* --packets LINKSPEC: a node or a link the torus does not have, or no
 * spec at all, is refused in one line with status 2 and nothing on stdout. */
static void test_packets_bad_linkspec(void)
{
	static const struct {
		const char *spec, *msg;
	} cases[] = {
		{"4:x+", "no node 4 in the torus 2x2 (nodes 0..3)"},
		{"0:z+", "the torus 2x2 has no dimension z"},
		{"0:u-", "no dimension u"},
		{"x+", "all, or NODE:LINK"},
		{"0:x", "all, or NODE:LINK"},
		{"0:x+y", "all, or NODE:LINK"},
		{"0:q+", "all, or NODE:LINK"},
		{"-1:x+", "all, or NODE:LINK"},
		{"all:x+", "all, or NODE:LINK"},
		{"ALL", "all, or NODE:LINK"},
		{"", "all, or NODE:LINK"},
		{"99999999999:x+", "all, or NODE:LINK"},
	};
	char path[600];
	size_t n = 0;
	free(hello_trace("2x2", "spec.trace", path, sizeof(path), &n));
	struct result r = run("$B/torus-trace $T/spec.trace --packets 3:y-");
	EXPECT(r.status == 0 && count_lines(r.out, NULL) > 1, "a good spec: %d %.300s", r.status, r.err);
	result_free(&r);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		r = run("$B/torus-trace $T/spec.trace --packets '%s'", cases[i].spec);
		EXPECT(r.status == 2 && !strncmp(r.err, "torus-trace: bad --packets ", 27) &&
			       count_lines(r.err, NULL) == 1 && strstr(r.err, cases[i].msg) && !r.out[0],
		       "'%s': status %d, stderr: %.300s, stdout: %.100s", cases[i].spec, r.status, r.err, r.out);
		result_free(&r);
	}
	/* a dimension of size 1 has no links: a 2x1 torus, its records on x */
	struct torus_trace_header h = ring2_header();
	h.ndims = 2;
	h.dims[1] = 1;
	const struct syn_pkt pk[] = {{0, 0, 1000, 0}};
	write_synthetic("2x1.trace", h, pk, 1);
	r = run("$B/torus-trace $T/2x1.trace --packets 0:y+");
	EXPECT(r.status == 2 && strstr(r.err, "bad --packets '0:y+': dimension y of the torus 2x1 has size 1: no links") &&
		       count_lines(r.err, NULL) == 1 && !r.out[0],
	       "%d %.300s %.300s", r.status, r.err, r.out);
	result_free(&r);
	r = run("$B/torus-trace $T/2x1.trace --packets 0:x+");
	EXPECT(r.status == 0 && count_lines(r.out, ",x+,") == 1, "%d %.300s %.300s", r.status, r.err, r.out);
	result_free(&r);
	/* no value; two CSVs on one stdout */
	static const char *const other[] = {"--packets", "--packets all --csv", "--packets all --summary"};
	for (size_t i = 0; i < 3; i++) {
		r = run("$B/torus-trace $T/spec.trace %s", other[i]);
		EXPECT(r.status == 2 && count_lines(r.err, NULL) == 1 && strstr(r.err, "--packets") && !r.out[0],
		       "%s: %d %.300s", other[i], r.status, r.err);
		result_free(&r);
	}
	r = run("$B/torus-trace --help");
	EXPECT(r.status == 0 && strstr(r.out, "--packets LINKSPEC"), "%.300s", r.out);
	result_free(&r);
}

int main(void)
{
	if (job_util_init())
		return 2;
	static const struct cunit_case capture[] = {CUNIT_CASE(test_allgather_phases), CUNIT_CASE(test_outputs),
						    CUNIT_CASE(test_sync_packets),
						    CUNIT_CASE(test_bounded_buffers), CUNIT_CASE(test_killed_node),
						    CUNIT_CASE(test_option_errors)};
	static const struct cunit_case files[] = {CUNIT_CASE(test_bad_files), CUNIT_CASE(test_hostile_records),
						  CUNIT_CASE(test_summary_program_escaped), CUNIT_CASE(test_svg_late_short_trace),
						  CUNIT_CASE(test_links_drain_after_cores)};
	static const struct cunit_case overlaps[] = {CUNIT_CASE(test_overlap_counted), CUNIT_CASE(test_overlap_none),
						     CUNIT_CASE(test_packets_real_job),
						     CUNIT_CASE(test_packets_bad_linkspec)};
	static const struct cunit_suite all[] = {{"trace.capture", capture, CUNIT_COUNT(capture)},
						 {"trace.files", files, CUNIT_COUNT(files)},
						 {"trace.overlaps", overlaps, CUNIT_COUNT(overlaps)}};
	int rc = cunit_main(all, CUNIT_COUNT(all));
	job_util_cleanup();
	return rc;
}
