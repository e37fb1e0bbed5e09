/*
 * The DMA layer's suite: every transfer kind, counters, barriers, bad
 * descriptors and back-pressure, each run as a whole job (dma-check) on a
 * table of shapes from 1-D to 4-D, with even and uneven cores per node.
 */
#include "cunit_main.h"
#include "job_util.h"
#include "torus/dma.h"

struct shape_case {
	const char *opts;   /* torusrun options */
};

static const struct shape_case shapes[] = {
	{"--torus 4"},
	{"--torus 2x3 --cores-map 1,2,1,3,2,1"},
	{"--torus 2x2x2 --cores 2"},
	{"--torus 2x1x2x2 --cores-map 2,1,1,2,3,1,1,2"},
	{"--torus 3 --param fifo_slots=1 --param inj_slots=1 --param rx_slots=1"},
};
#define NSHAPES (sizeof(shapes) / sizeof(shapes[0]))

static void check_scenario(const char *opts, const char *args)
{
	struct result r = run("$B/torusrun %s --timeout 120 -- $B/dma-check %s", opts, args);
	CU_ASSERT_EQUAL(r.status, 0);
	if (r.status)
		fprintf(stderr, "\n[%s] dma-check %s: exit %d\n%.3000s\n", opts, args, r.status, r.err);
	result_free(&r);
}

static void each_shape(const char *args)
{
	for (size_t i = 0; i < NSHAPES; i++)
		check_scenario(shapes[i].opts, args);
}

/* 0 bytes, less than a packet, exactly one, one more, many, and large */
#define SIZES "0 1 239 240 241 4096 100000 1048576"

static void test_put(void) { each_shape("put " SIZES); }
static void test_get(void) { each_shape("get " SIZES); }
static void test_copy(void) { each_shape("copy " SIZES); }
static void test_memfifo(void) { each_shape("memfifo 0 1 240 241 5000 262144"); }
static void test_large_64mib(void)
{
	check_scenario("--torus 2", "put 67108864");
	check_scenario("--torus 2", "get 67108864");
	check_scenario("--torus 2", "memfifo 67108864");
	check_scenario("--torus 2", "copy 67108864");
}
static void test_many_outstanding(void) { each_shape("many 3000"); }
static void test_bad_descriptors(void) { each_shape("bad"); }
static void test_rebind(void) { each_shape("rebind"); }
static void test_backpressure(void)
{
	check_scenario("--torus 2 --param inj_slots=2", "full");
	check_scenario("--torus 2x2 --cores 2 --param inj_slots=2", "full");
}
static void test_barrier(void) { each_shape("barrier"); }
static void test_wait_any(void) { each_shape("waitany"); }

/* The same scenarios with chaos: the timekeeper times puts, gets, copies,
 * memory-FIFO messages, counters, barriers, what an injection FIFO holds,
 * and the faults of refused deposits, whatever the host's scheduling. */
static void test_exact(void)
{
	static const char *const args[] = {"put " SIZES, "get " SIZES, "copy " SIZES, "memfifo 0 1 240 241 5000 262144",
					   "barrier", "waitany", "many 3000", "bad"};
	/* sanitized builds (ten times slower): one shape each */
	const size_t step = getenv("TORUS_TEST_LIGHT") ? NSHAPES : 2;
	for (size_t a = 0; a < sizeof(args) / sizeof(args[0]); a++)
		for (size_t i = 1; i < NSHAPES; i += step) {
			char opts[256];
			snprintf(opts, sizeof(opts), "--chaos %zu %s", a * NSHAPES + i + 1, shapes[i].opts);
			check_scenario(opts, args[a]);
		}
}

/* The emulated time a job reports on its last line, or "" */
static void job_time(const char *err, char *out, size_t cap)
{
	const char *p = NULL, *q;
	for (q = err; (q = strstr(q, "emulated time ")); q++)
		p = q;
	size_t n = 0;
	while (p && p[n] && p[n] != ',' && p[n] != '\n')
		n++;
	snprintf(out, cap, "%.*s", (int)n, p ? p : "");
}

/*
 * Messages sent in any order, on every shape, then under exact time with
 * chaos: each expected before it is waited for (deferred) or asked
 * (TORUS_DEFER=0), to the same picosecond, run after run.
 */
static void test_any_order(void)
{
	each_shape("anyorder");
	for (size_t i = 0; i < NSHAPES; i++) {
		char t[3][128];
		static const char *const how[] = {"", "TORUS_DEFER=0", ""};
		for (int k = 0; k < 3; k++) {
			struct result r = run("%s $B/torusrun --chaos %d %s --timeout 120 -- $B/dma-check anyorder", how[k],
					      k + 1, shapes[i].opts);
			CU_ASSERT_EQUAL(r.status, 0);
			if (r.status)
				fprintf(stderr, "\n[%s %s] anyorder: exit %d\n%.3000s\n", how[k], shapes[i].opts, r.status, r.err);
			job_time(r.err, t[k], sizeof(t[k]));
			result_free(&r);
		}
		CU_ASSERT_NOT_EQUAL(t[0][0], 0);
		CU_ASSERT_STRING_EQUAL(t[0], t[1]);
		CU_ASSERT_STRING_EQUAL(t[0], t[2]);
	}
}

/* The model's time for m bytes of full packets over h idle hops from the
 * first packet's start (the closed formula of job_timing.c, without the
 * post's own cost): link_bw in B/s, L in ps. */
static uint64_t model_ps(uint64_t m, uint32_t h, uint64_t link_bw, uint64_t L, uint32_t ack, uint32_t chunk)
{
	const uint64_t pay = 240;
	uint64_t npk = m ? (m + pay - 1) / pay : 1, last = m - (npk - 1) * pay;
	uint64_t wfull = (16 + pay + chunk - 1) / chunk * chunk + ack, wlast = (16 + last + chunk - 1) / chunk * chunk + ack;
	uint64_t sfull = (wfull * 1000000000000ull + link_bw - 1) / link_bw, slast = (wlast * 1000000000000ull + link_bw - 1) / link_bw;
	uint64_t smax = npk > 1 ? sfull : slast;
	return (npk - 1) * sfull + slast + (uint64_t)(h - 1) * (smax + L) + L;
}

static void test_bandwidth_model(void)
{
	/* a 16 MiB put over one link takes the model's time, to the printed
	 * nanosecond, under three sets of parameters */
	static const struct {
		const char *params;
		uint64_t link_bw, L;
		uint32_t ack, chunk;
	} cases[] = {{"", 425000000, 50000, 14, 32},
		     {"--param link_bw=1GB/s --param hop_latency=1us", 1000000000, 1000000, 14, 32},
		     {"--param ack_overhead=0 --param chunk=16", 425000000, 50000, 0, 16}};
	const uint64_t m = 16777216;
	for (size_t i = 0; i < CUNIT_COUNT(cases); i++) {
		struct result r = run("$B/torusrun --torus 2x2 %s -- $B/dma-check bandwidth %llu", cases[i].params,
				      (unsigned long long)m);
		const char *at = strstr(r.out, "bytes in ");
		double us = at ? atof(at + 9) : -1;
		uint64_t want = model_ps(m, 1, cases[i].link_bw, cases[i].L, cases[i].ack, cases[i].chunk);
		double off = us * 1e6 - (double)want;
		EXPECT(r.status == 0 && us > 0 && off < 501 && off > -501, "%s: %.3f us, the model %.6f us\n%.200s\n%.200s",
		       cases[i].params, us, want / 1e6, r.out, r.err);
		result_free(&r);
	}
}

/* The descriptor helpers say what they could not fill. */
static void test_desc_helpers(void)
{
	struct dma_desc d;
	char b[16] = {0};
	CU_ASSERT_EQUAL(dma_desc_put(NULL, 1, b, 16, 0, 0, 0, DMA_NO_COUNTER), -EINVAL);
	CU_ASSERT_EQUAL(dma_desc_get(NULL, 1, 0, 0, 16, 0, 0, 0), -EINVAL);
	CU_ASSERT_EQUAL(dma_desc_copy(NULL, b, 16, 0, 0, 0), -EINVAL);
	CU_ASSERT_EQUAL(dma_desc_memfifo(NULL, 1, 0, 1, 0, b, 16, DMA_NO_COUNTER), -EINVAL);
	/* a NULL source with bytes: refused, but filled for the post to refuse too */
	CU_ASSERT_EQUAL(dma_desc_put(&d, 1, NULL, 16, 0, 0, 0, DMA_NO_COUNTER), -EINVAL);
	CU_ASSERT(d.kind == DMA_PUT && d.len == 16 && d.src == NULL);
	CU_ASSERT_EQUAL(dma_desc_memfifo(&d, 1, 0, 1, 0, NULL, 8, DMA_NO_COUNTER), -EINVAL);
	CU_ASSERT_EQUAL(dma_desc_copy(&d, NULL, 8, 0, 0, 0), -EINVAL);
	/* and the good ones */
	CU_ASSERT_EQUAL(dma_desc_put(&d, 1, b, 16, 2, 3, 4, DMA_NO_COUNTER), 0);
	CU_ASSERT(d.kind == DMA_PUT && d.node == 1 && d.src == b && d.len == 16 && d.region == 2 && d.offset == 3 &&
		  d.counter == 4);
	CU_ASSERT_EQUAL(dma_desc_put(&d, 1, NULL, 0, 2, 0, 4, DMA_NO_COUNTER), 0);
	CU_ASSERT_EQUAL(dma_desc_get(&d, 1, 2, 8, 16, 5, 6, 7), 0);
	CU_ASSERT(d.kind == DMA_GET && d.reply_region == 5 && d.reply_offset == 6 && d.counter == 7);
}

static void test_hang_detected(void)
{
	/* a core waiting on a counter that never moves: the hang detector stops
	 * the job and its dump names the counter */
	struct result r = run("$B/torusrun --torus 2 --timeout 1 -- $B/dma-check hang");
	CU_ASSERT_EQUAL(r.status, 3);
	CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "the job is hung"));
	CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "4242 bytes outstanding"));
	result_free(&r);
}

static void test_pingpong(void)
{
	struct result r = run("$B/torusrun --torus 8 -- $B/torus-pingpong --distance 3 --sizes 1:65536");
	CU_ASSERT_EQUAL(r.status, 0);
	/* one row per size 1, 2, 4, ..., 65536 after three comment lines, each
	 * one-way latency the model's time over 3 hops from the post (its
	 * inj_overhead included), to the printed nanosecond */
	CU_ASSERT_EQUAL(count_lines(r.out, NULL), 3 + 17);
	unsigned rows = 0, good = 0;
	for (const char *line = r.out; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
		unsigned long long size;
		double lat, bw;
		if (line[0] == '#' || sscanf(line, "%llu %lf %lf", &size, &lat, &bw) != 3)
			continue;
		uint64_t want = 100000 + model_ps(size, 3, 425000000, 50000, 14, 32);
		double off = lat * 1e6 - (double)want;
		rows++;
		good += size == 1ull << (rows - 1) && off < 501 && off > -501;
		if (!(off < 501 && off > -501))
			fprintf(stderr, "pingpong %llu B: %.3f us, the model %.6f us\n", size, lat, want / 1e6);
	}
	CU_ASSERT_EQUAL(rows, 17);
	CU_ASSERT_EQUAL(good, 17);
	result_free(&r);
	r = run("$B/torusrun --torus 8 -- $B/torus-pingpong --distance 9");
	CU_ASSERT_NOT_EQUAL(r.status, 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "distance"));
	result_free(&r);
}

int main(void)
{
	if (job_util_init())
		return 2;
	static const struct cunit_case transfers[] = {
		CUNIT_CASE(test_put), CUNIT_CASE(test_get), CUNIT_CASE(test_copy), CUNIT_CASE(test_memfifo),
		CUNIT_CASE(test_large_64mib), CUNIT_CASE(test_many_outstanding)};
	static const struct cunit_case control[] = {
		CUNIT_CASE(test_bad_descriptors), CUNIT_CASE(test_rebind), CUNIT_CASE(test_backpressure), CUNIT_CASE(test_barrier),
		CUNIT_CASE(test_wait_any), CUNIT_CASE(test_any_order), CUNIT_CASE(test_exact), CUNIT_CASE(test_bandwidth_model), CUNIT_CASE(test_pingpong), CUNIT_CASE(test_desc_helpers),
		CUNIT_CASE(test_hang_detected)};
	static const struct cunit_suite all[] = {
		{"dma.transfers", transfers, CUNIT_COUNT(transfers)},
		{"dma.control", control, CUNIT_COUNT(control)}};
	int rc = cunit_main(all, CUNIT_COUNT(all));
	job_util_cleanup();
	return rc;
}
