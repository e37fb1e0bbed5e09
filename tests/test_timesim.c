/*
 * The timing simulator (torus/timesim.h) held to the reference simulator
 * (refsim.h), which states the exact model: on random traffic over random
 * shapes and core counts, the same hops in the same order at the same
 * times, and every transfer done at the same picosecond; the same when the
 * transfers are fed in as a driver would, a few at a time between runs to
 * a horizon; and the classic cases (two streams into one link, a hot spot,
 * an all-to-all).
 */
#include "cunit_main.h"
#include "refsim.h"
#include "../dma/dma_internal.h"
#include "../torus/timesim.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/wait.h>

#include "test_rng.h"

struct hoplog {
	struct refsim_hop *h;
	size_t n, cap;
};
static void hoplog_add(struct hoplog *hl, const struct refsim_hop *h)
{
	if (hl->n == hl->cap) {
		hl->cap = hl->cap ? 2 * hl->cap : 256;
		hl->h = realloc(hl->h, hl->cap * sizeof(*hl->h));
		CU_ASSERT_FATAL(hl->h != NULL);
	}
	hl->h[hl->n++] = *h;
}
static void ref_hop(void *arg, const struct refsim_hop *h) { hoplog_add(arg, h); }

/* What timesim reports, gathered per transfer (cookie = index). */
struct seen {
	struct hoplog hops;
	torus_vt_t *done;
	uint64_t *packets;
	torus_vt_t *last_left;
};
static void ts_hop(void *arg, uint32_t node, uint32_t link, torus_vt_t start, torus_vt_t end, uint32_t wire,
		   uint32_t payload, uint64_t cookie, int request)
{
	(void)payload, (void)request;
	struct seen *sn = arg;
	struct refsim_hop h = {node, link, start, end, wire, (uint32_t)cookie};
	hoplog_add(&sn->hops, &h);
}
static void ts_deposit(void *arg, uint32_t node, uint64_t cookie, uint64_t index, uint32_t len, torus_vt_t t)
{
	(void)node, (void)index, (void)len;
	struct seen *sn = arg;
	if (t > sn->done[cookie] || sn->packets[cookie] == 0)
		sn->done[cookie] = t;
	sn->packets[cookie]++;
}
static void ts_left(void *arg, uint32_t node, uint64_t cookie, uint32_t len, torus_vt_t t)
{
	(void)node, (void)len;
	struct seen *sn = arg;
	if (t > sn->last_left[cookie])
		sn->last_left[cookie] = t;
}

static struct torus_shape shape(const char *text)
{
	struct torus_shape s;
	char err[128];
	CU_ASSERT_FATAL(torus_shape_parse(text, &s, err, sizeof(err)) == 0);
	return s;
}

static struct timesim_xfer to_ts(const struct refsim_xfer *x, size_t i)
{
	static const uint32_t kinds[] = {0, TIMESIM_RAW, TIMESIM_PUT, TIMESIM_GET, TIMESIM_MEMFIFO};
	struct timesim_xfer t = {kinds[x->kind], x->src_node, x->src_core, x->fifo, x->dst_node, x->len, x->ready,
				 x->hints, i};
	return t;
}

/* Transfers in the order of their ready times (a stable order: a core's
 * transfers keep theirs), as a driver learns of them. */
static const struct refsim_xfer *sort_base;
static int by_ready(const void *a, const void *b)
{
	size_t i = *(const size_t *)a, j = *(const size_t *)b;
	if (sort_base[i].ready != sort_base[j].ready)
		return sort_base[i].ready < sort_base[j].ready ? -1 : 1;
	return i < j ? -1 : i > j;
}

/*
 * Run scenario x[0..n) through refsim, then through timesim (all at once
 * if chunked is 0, else fed in ready order with runs to random horizons in
 * between), and compare everything. Returns the number of hops.
 */
static size_t compare(const char *name, const struct torus_shape *s, const struct torus_params *p,
		      const uint32_t *cores, struct refsim_xfer *x, size_t n, int chunked)
{
	struct hoplog ref = {0};
	struct refsim_config rc = {s, p, cores, (uint32_t)sizeof(struct dma_getreq), ref_hop, &ref};
	CU_ASSERT_FATAL(refsim_run(&rc, x, n) == 0);

	struct seen sn = {{0}, calloc(n + 1, sizeof(torus_vt_t)), calloc(n + 1, sizeof(uint64_t)),
			  calloc(n + 1, sizeof(torus_vt_t))};
	CU_ASSERT_FATAL(sn.done && sn.packets && sn.last_left);
	struct timesim_config tc = {s, p, cores, (uint32_t)sizeof(struct dma_getreq), NULL,
				    {.hop = ts_hop, .deposit = ts_deposit, .left = ts_left, .arg = &sn}};
	struct timesim *ts;
	CU_ASSERT_FATAL(timesim_create(&tc, &ts) == 0);
	size_t *order = malloc((n + 1) * sizeof(size_t));
	CU_ASSERT_FATAL(order != NULL);
	for (size_t i = 0; i < n; i++)
		order[i] = i;
	if (chunked) {
		sort_base = x;
		qsort(order, n, sizeof(*order), by_ready);
	}
	for (size_t k = 0; k < n; k++) {
		struct timesim_xfer t = to_ts(&x[order[k]], order[k]);
		if (chunked && rnd() % 3 == 0) {
			/* a driver's horizon: no later than the next transfer's ready time */
			torus_vt_t lim = t.ready - (t.ready ? rnd() % (t.ready + 1) / 4 : 0);
			CU_ASSERT_FATAL(timesim_run(ts, lim) == 0);
		}
		int r = timesim_post(ts, &t);
		if (!EXPECT(r == 0, "%s: posting transfer %zu: %d", name, order[k], r))
			break;
	}
	CU_ASSERT_FATAL(timesim_run(ts, TIMESIM_NEVER) == 0);
	CU_ASSERT(timesim_next(ts) == TIMESIM_NEVER);

	for (size_t i = 0; i < n; i++) {
		EXPECT(sn.packets[i] == x[i].packets, "%s transfer %zu (kind %u): %llu packets, refsim %llu", name, i,
		       x[i].kind, (unsigned long long)sn.packets[i], (unsigned long long)x[i].packets);
		EXPECT(sn.done[i] == x[i].done, "%s transfer %zu (kind %u, %llu B): done %llu, refsim %llu", name, i,
		       x[i].kind, (unsigned long long)x[i].len, (unsigned long long)sn.done[i],
		       (unsigned long long)x[i].done);
	}
	if (EXPECT(sn.hops.n == ref.n, "%s: %zu hops, refsim %zu", name, sn.hops.n, ref.n)) {
		for (size_t i = 0; i < ref.n; i++) {
			const struct refsim_hop *a = &sn.hops.h[i], *b = &ref.h[i];
			if (!EXPECT(a->node == b->node && a->link == b->link && a->start == b->start && a->end == b->end &&
					    a->wire == b->wire && a->xfer == b->xfer,
				    "%s hop %zu: node %u link %u [%llu, %llu) transfer %u; refsim node %u link %u [%llu, "
				    "%llu) transfer %u",
				    name, i, a->node, a->link, (unsigned long long)a->start, (unsigned long long)a->end,
				    a->xfer, b->node, b->link, (unsigned long long)b->start, (unsigned long long)b->end,
				    b->xfer))
				break;
		}
	}
	size_t hops = ref.n;
	timesim_destroy(ts);
	free(order);
	free(ref.h);
	free(sn.hops.h);
	free(sn.done);
	free(sn.packets);
	free(sn.last_left);
	return hops;
}

static void random_scenario(struct torus_shape *s, char *text, size_t textlen, uint32_t *cores,
			    const struct torus_params *p, struct refsim_xfer **out, size_t *nout)
{
	uint32_t nd = 1 + (uint32_t)(rnd() % 4);
	size_t used = 0;
	for (uint32_t d = 0; d < nd; d++) {
		uint32_t dim = 1 + (uint32_t)(rnd() % (nd == 4 ? 3 : 5));
		used += (size_t)snprintf(text + used, textlen - used, d ? "x%u" : "%u", dim);
	}
	*s = shape(text);
	for (uint32_t i = 0; i < s->nnodes; i++)
		cores[i] = 1 + (uint32_t)(rnd() % 3);
	size_t n = 1 + rnd() % 60;
	struct refsim_xfer *x = calloc(n, sizeof(*x));
	CU_ASSERT_FATAL(x != NULL);
	/* bursts: a few posting times shared by many, so streams meet */
	torus_vt_t times[4] = {rnd() % 2000000, rnd() % 2000000, rnd() % 400000, 0};
	for (size_t i = 0; i < n; i++) {
		x[i].kind = REFSIM_RAW + (uint32_t)(rnd() % 4);
		x[i].src_node = (uint32_t)(rnd() % s->nnodes);
		x[i].src_core = (uint32_t)(rnd() % cores[x[i].src_node]);
		x[i].fifo = (uint32_t)(rnd() % p->inj_fifos);
		x[i].dst_node = (uint32_t)(rnd() % s->nnodes);
		x[i].dst_core = (uint32_t)(rnd() % cores[x[i].dst_node]);
		x[i].len = x[i].kind == REFSIM_RAW ? rnd() % 241 : rnd() % 4000;
		x[i].post = rnd() % 2 ? times[rnd() % 4] : rnd() % 3000000;
		/* now and then a direction hint on a dimension the torus has */
		uint32_t d = (uint32_t)(rnd() % s->ndims);
		if (rnd() % 5 == 0)
			x[i].hints = (uint16_t)((1u + (uint32_t)(rnd() % 2)) << (2 * d));
	}
	*out = x;
	*nout = n;
}

/*
 * nscen random scenarios from seed, each fed all at once and then a few
 * at a time. far: transfers posted in clusters up to a millisecond apart
 * (the simulator keeps the events of the next few microseconds in a
 * timing wheel and the later ones in a heap behind it: some clusters
 * within a wheel's span of each other, some past it, on shapes small and
 * large enough to give the wheel slots of every width).
 */
static void random_runs(const char *what, uint64_t seed, int nscen, int far)
{
	struct torus_params p;
	torus_params_default(&p);
	rng_state = seed;
	size_t hops = 0;
	for (int scen = 0; scen < nscen; scen++) {
		char text[48], name[96];
		struct torus_shape s;
		uint32_t cores[256];
		struct refsim_xfer *x;
		size_t n;
		random_scenario(&s, text, sizeof(text), cores, &p, &x, &n);
		if (far) {
			torus_vt_t base[5] = {0, rnd() % 5000000, 1000000 + rnd() % 200000000, rnd() % 1000000000,
					      999000000000ull + rnd() % 1000000};
			for (size_t i = 0; i < n; i++)
				x[i].post = base[rnd() % 5] + (rnd() % 3 ? rnd() % 2000000 : 0);
		}
		snprintf(name, sizeof(name), "%s %d (%s, %zu transfers)", what, scen, text, n);
		hops += compare(name, &s, &p, cores, x, n, 0);
		snprintf(name, sizeof(name), "%s %d fed in steps (%s, %zu transfers)", what, scen, text, n);
		compare(name, &s, &p, cores, x, n, 1);
		free(x);
	}
	EXPECT(hops > (size_t)nscen * 60, "only %zu hops over %d scenarios: the traffic is too thin to test much", hops,
	       nscen);
}

/* sanitized builds run ten times slower: fewer scenarios there */
static void test_random_equals_refsim(void)
{
	random_runs("scenario", 0x5eed1234abcdull, getenv("TORUS_TEST_LIGHT") ? 40 : 300, 0);
}

static void test_far_posts(void)
{
	random_runs("far posts", 0xfa4b05754a11ull, getenv("TORUS_TEST_LIGHT") ? 20 : 120, 1);
}

/* Two streams into one link, a hot spot (every node puts to node 0), and an
 * all-to-all of puts, on a few shapes. */
static void test_classic_cases(void)
{
	struct torus_params p;
	torus_params_default(&p);
	static const char *shapes[] = {"4", "4x4", "2x3x4", "4x4x4"};
	/* refsim scans the whole machine per event: 4x4x4 is slow under sanitizers */
	const size_t nshapes = getenv("TORUS_TEST_LIGHT") ? 3 : 4;
	for (size_t si = 0; si < nshapes; si++) {
		struct torus_shape s = shape(shapes[si]);
		uint32_t cores[64];
		for (uint32_t i = 0; i < s.nnodes; i++)
			cores[i] = 2;
		char name[96];
		/* two streams meeting at one link */
		struct refsim_xfer two[2] = {
			{REFSIM_PUT, 0, 0, 0, 2 % s.nnodes, 0, 7200, 0, 0, 0, 0, 0},
			{REFSIM_PUT, 1 % s.nnodes, 1, 1, 2 % s.nnodes, 0, 7200, 0, 0, 0, 0, 0},
		};
		snprintf(name, sizeof(name), "%s two streams", shapes[si]);
		compare(name, &s, &p, cores, two, 2, 0);
		/* hot spot */
		struct refsim_xfer *x = calloc(s.nnodes * s.nnodes, sizeof(*x));
		CU_ASSERT_FATAL(x != NULL);
		size_t n = 0;
		for (uint32_t a = 1; a < s.nnodes; a++)
			x[n++] = (struct refsim_xfer){REFSIM_PUT, a, a % 2, a % p.inj_fifos, 0, 0, 4800, 0, 0, 0, 0, 0};
		snprintf(name, sizeof(name), "%s hot spot", shapes[si]);
		compare(name, &s, &p, cores, x, n, 0);
		/* all-to-all, each starting at its own distance */
		n = 0;
		for (uint32_t a = 0; a < s.nnodes; a++)
			for (uint32_t k = 1; k < s.nnodes; k++)
				x[n++] = (struct refsim_xfer){REFSIM_PUT, a, k % 2, k % p.inj_fifos, (a + k) % s.nnodes, 0,
							      960, 0, 0, 0, 0, 0};
		snprintf(name, sizeof(name), "%s all-to-all", shapes[si]);
		compare(name, &s, &p, cores, x, n, 1);
		free(x);
	}
}

/*
 * What the simulator keeps out of refsim's way: queues that back up into
 * their ring buffers (hundreds of packets from one core, a long put and a
 * get's reply sharing its links, interleaving packet by packet), nodes
 * with more input ports than one bitmap word (8 and 64 cores), and events
 * posted between runs before those already taken into the look-ahead
 * window (fed in steps). Each against refsim, hop for hop.
 */
static void test_backlog_and_wide_nodes(void)
{
	struct torus_params p;
	torus_params_default(&p);
	struct torus_shape s = shape("4x4");
	uint32_t cores[16];
	for (int i = 0; i < 16; i++)
		cores[i] = 2;
	enum { NRAW = 300 };
	struct refsim_xfer x[NRAW + 8];
	size_t n = 0;
	for (uint32_t i = 0; i < NRAW; i++) /* one core's raw burst, all towards node 10 */
		x[n++] = (struct refsim_xfer){REFSIM_RAW, 0, 0, 0, 10, 1, 16 + i % 225, i % 3 ? 0 : 1000 * i, 0, 0, 0, 0};
	x[n++] = (struct refsim_xfer){REFSIM_PUT, 1, 0, 2, 10, 0, 60000, 0, 0, 0, 0, 0};
	x[n++] = (struct refsim_xfer){REFSIM_PUT, 1, 1, 3, 11, 0, 30000, 5000, 0, 0, 0, 0};
	x[n++] = (struct refsim_xfer){REFSIM_GET, 2, 0, 1, 10, 0, 30000, 20000, 0, 0, 0, 0};
	x[n++] = (struct refsim_xfer){REFSIM_MEMFIFO, 5, 1, 7, 10, 1, 9000, 0, 0, 0, 0, 0};
	x[n++] = (struct refsim_xfer){REFSIM_PUT, 8, 0, 0, 2, 1, 20000, 0, 1u << 0, 0, 0, 0};
	x[n++] = (struct refsim_xfer){REFSIM_GET, 10, 1, 4, 0, 0, 12000, 40000, 0, 0, 0, 0};
	compare("backlog", &s, &p, cores, x, n, 0);
	compare("backlog fed in steps", &s, &p, cores, x, n, 1);

	/* wide nodes: 2 and 10 bitmap words of ports per output */
	static const struct {
		const char *shape;
		uint32_t cores;
	} wide[] = {{"2x2", 8}, {"2", 64}};
	for (size_t w = 0; w < sizeof(wide) / sizeof(wide[0]); w++) {
		struct torus_shape ws = shape(wide[w].shape);
		uint32_t wc[4];
		for (uint32_t i = 0; i < ws.nnodes; i++)
			wc[i] = wide[w].cores - i % 2;
		struct refsim_xfer wx[160];
		for (size_t i = 0; i < 160; i++) {
			uint32_t src = (uint32_t)(rnd() % ws.nnodes), dst = (uint32_t)(rnd() % ws.nnodes);
			uint32_t kind = REFSIM_RAW + (uint32_t)(rnd() % 4);
			wx[i] = (struct refsim_xfer){kind, src, (uint32_t)(rnd() % wc[src]), (uint32_t)(rnd() % p.inj_fifos),
						     dst, (uint32_t)(rnd() % wc[dst]),
						     kind == REFSIM_RAW ? rnd() % 241 : rnd() % 3000, rnd() % 200000, 0, 0, 0, 0};
		}
		char name[64];
		snprintf(name, sizeof(name), "%s, %u cores", wide[w].shape, wide[w].cores);
		compare(name, &ws, &p, wc, wx, 160, 0);
		snprintf(name, sizeof(name), "%s, %u cores, fed in steps", wide[w].shape, wide[w].cores);
		compare(name, &ws, &p, wc, wx, 160, 1);
	}
}

/* A simulator of the 4x4 torus *s (filled in here, as cores: one per
 * node), reporting to sn. */
static struct timesim *sim_4x4(struct torus_shape *s, uint32_t cores[16], const struct torus_params *p,
			       struct seen *sn)
{
	*s = shape("4x4");
	for (int i = 0; i < 16; i++)
		cores[i] = 1;
	struct timesim_config tc = {s, p, cores, (uint32_t)sizeof(struct dma_getreq), NULL,
				    {.hop = ts_hop, .deposit = ts_deposit, .left = ts_left, .arg = sn}};
	struct timesim *ts = NULL;
	CU_ASSERT_FATAL(timesim_create(&tc, &ts) == 0);
	return ts;
}

/* A put's packets leave its node one after another: the last one leaves
 * at ready plus their serialisations (the `left` hook, alone on the machine). */
static void test_left_alone(void)
{
	struct torus_params p;
	torus_params_default(&p);
	struct torus_shape s;
	uint32_t cores[16];
	torus_vt_t done[1] = {0}, left[1] = {0};
	uint64_t pk[1] = {0};
	struct seen sn = {{0}, done, pk, left};
	struct timesim *ts = sim_4x4(&s, cores, &p, &sn);
	struct timesim_xfer x = {TIMESIM_PUT, 0, 0, 0, 5, 1000, 777, 0, 0};
	CU_ASSERT_FATAL(timesim_post(ts, &x) == 0);
	CU_ASSERT_FATAL(timesim_run(ts, TIMESIM_NEVER) == 0);
	torus_vt_t full = torus_ser_ps(&p, torus_wire_bytes(&p, 240)), rest = torus_ser_ps(&p, torus_wire_bytes(&p, 40));
	EXPECT(left[0] == 777 + 4 * full + rest, "last packet left at %llu, want %llu", (unsigned long long)left[0],
	       (unsigned long long)(777 + 4 * full + rest));
	EXPECT(done[0] == torus_model_transfer(&p, 1000, 2, 777), "done at %llu, closed form %llu",
	       (unsigned long long)done[0], (unsigned long long)torus_model_transfer(&p, 1000, 2, 777));
	timesim_destroy(ts);
	free(sn.hops.h);
}

/* A slow link (its own cost table) slows exactly the transfers that cross it. */
static void test_link_cost(void)
{
	struct torus_params p, slow;
	torus_params_default(&p);
	slow = p;
	slow.link_bw /= 4;
	slow.hop_latency_ps *= 3;
	struct torus_cost c;
	torus_cost_init(&c, &slow);
	struct torus_shape s = shape("4");
	uint32_t cores[4] = {1, 1, 1, 1};
	const struct torus_cost *lc[4 * 2 * TORUS_MAX_DIMS] = {0};
	lc[1 * 2 * TORUS_MAX_DIMS + 0] = &c; /* node 1, x+ */
	torus_vt_t done[2] = {0}, left[2] = {0};
	uint64_t pk[2] = {0};
	struct seen sn = {{0}, done, pk, left};
	struct timesim_config tc = {&s, &p, cores, (uint32_t)sizeof(struct dma_getreq), lc,
				    {.hop = ts_hop, .deposit = ts_deposit, .left = ts_left, .arg = &sn}};
	struct timesim *ts;
	CU_ASSERT_FATAL(timesim_create(&tc, &ts) == 0);
	struct timesim_xfer over = {TIMESIM_PUT, 1, 0, 0, 2, 2400, 0, 0, 0};  /* 1 -> 2 on the slow link */
	struct timesim_xfer off = {TIMESIM_PUT, 0, 0, 0, 3, 2400, 0, 0, 1};   /* 0 -> 3 by x-, elsewhere */
	CU_ASSERT_FATAL(timesim_post(ts, &over) == 0);
	CU_ASSERT_FATAL(timesim_post(ts, &off) == 0);
	CU_ASSERT_FATAL(timesim_run(ts, TIMESIM_NEVER) == 0);
	EXPECT(done[0] == torus_model_transfer(&slow, 2400, 1, 0), "over the slow link: %llu, want %llu",
	       (unsigned long long)done[0], (unsigned long long)torus_model_transfer(&slow, 2400, 1, 0));
	EXPECT(done[1] == torus_model_transfer(&p, 2400, 1, 0), "off it: %llu, want %llu", (unsigned long long)done[1],
	       (unsigned long long)torus_model_transfer(&p, 2400, 1, 0));
	timesim_destroy(ts);
	free(sn.hops.h);
}

/*
 * A job that starts late (a clock already far past the wheel's first span,
 * as every emulated job's is after its set-up) and one that stands idle
 * between bursts keep their events in the timing wheel: only a burst's
 * first post goes past it. The times are the closed form's.
 */
static void test_late_start(void)
{
	struct torus_params p;
	torus_params_default(&p);
	struct torus_shape s;
	uint32_t cores[16];
	torus_vt_t done[3] = {0}, left[3] = {0};
	uint64_t pk[3] = {0};
	struct seen sn = {{0}, done, pk, left};
	struct timesim *ts = sim_4x4(&s, cores, &p, &sn);
	const torus_vt_t start[3] = {5000000000ull, 5000000000ull + 400000000ull, 900000000000ull};
	for (uint64_t k = 0; k < 3; k++) {
		/* node 0 to node 10 (two hops in each dimension), 64 KiB */
		struct timesim_xfer x = {TIMESIM_PUT, 0, 0, 0, 10, 65536, start[k], 0, k};
		int rc = timesim_post(ts, &x);
		EXPECT(rc == 0, "burst %llu: posting: %d", (unsigned long long)k, rc);
		CU_ASSERT_FATAL(rc == 0);
		CU_ASSERT_FATAL(timesim_run(ts, TIMESIM_NEVER) == 0);
		torus_vt_t want = torus_model_transfer(&p, 65536, 4, start[k]);
		EXPECT(done[k] == want, "burst %llu: done at %llu, closed form %llu", (unsigned long long)k,
		       (unsigned long long)done[k], (unsigned long long)want);
	}
	struct timesim_stats st;
	timesim_stats(ts, &st);
	EXPECT(st.hops >= 3 * 4 * 256, "%llu hops", (unsigned long long)st.hops);
	EXPECT(st.beyond <= 3, "%llu of %llu events went past the timing wheel", (unsigned long long)st.beyond,
	       (unsigned long long)st.events);
	timesim_destroy(ts);
	free(sn.hops.h);
}

/* Bad calls are refused, and the past is final. */
static void test_bad_calls(void)
{
	struct torus_params p;
	torus_params_default(&p);
	struct torus_shape s = shape("2x2");
	uint32_t cores[4] = {1, 2, 1, 1};
	struct timesim_config tc = {&s, &p, cores, 64, NULL, {0}};
	struct timesim *ts = NULL;
	CU_ASSERT(timesim_create(NULL, &ts) == -EINVAL);
	CU_ASSERT(timesim_create(&tc, NULL) == -EINVAL);
	uint32_t zero[4] = {1, 0, 1, 1};
	struct timesim_config bad = tc;
	bad.cores = zero;
	CU_ASSERT(timesim_create(&bad, &ts) == -EINVAL);
	CU_ASSERT_FATAL(timesim_create(&tc, &ts) == 0);
	struct timesim_xfer good = {TIMESIM_PUT, 0, 0, 0, 1, 100, 1000, 0, 0};
	struct timesim_xfer wrong[] = {
		{0, 0, 0, 0, 1, 100, 1000, 0, 0},                /* kind */
		{TIMESIM_PUT, 4, 0, 0, 1, 100, 1000, 0, 0},      /* node */
		{TIMESIM_PUT, 0, 1, 0, 1, 100, 1000, 0, 0},      /* core */
		{TIMESIM_PUT, 0, 0, 0, 4, 100, 1000, 0, 0},      /* destination */
		{TIMESIM_PUT, 0, 0, 99, 1, 100, 1000, 0, 0},     /* FIFO */
		{TIMESIM_RAW, 0, 0, 0, 1, 241, 1000, 0, 0},      /* raw too long */
		{TIMESIM_PUT, 0, 0, 0, 1, 100, 1000, 3, 0},      /* hint 3 */
		{TIMESIM_PUT, 0, 0, 0, 1, 100, 1000, 1u << 4, 0}, /* hint on a dimension it lacks */
	};
	for (size_t i = 0; i < sizeof(wrong) / sizeof(wrong[0]); i++)
		EXPECT(timesim_post(ts, &wrong[i]) == -EINVAL, "bad transfer %zu accepted", i);
	CU_ASSERT(timesim_post(ts, &good) == 0);
	CU_ASSERT(timesim_run(ts, 5000) == 0);
	CU_ASSERT(timesim_now(ts) == 5000);
	good.ready = 4999;
	CU_ASSERT(timesim_post(ts, &good) == -ERANGE);
	good.ready = 5000;
	CU_ASSERT(timesim_post(ts, &good) == 0);
	CU_ASSERT(timesim_post(NULL, &good) == -EINVAL);
	CU_ASSERT(timesim_run(NULL, 1) == -EINVAL);
	timesim_destroy(ts);
	timesim_destroy(NULL);
}

/*
 * torus-timesim, the simulator's program: a put alone (hotspot on a ring
 * of 2) takes the closed form's time after one posting overhead; bad
 * options are refused with status 2.
 */
static void test_program(void)
{
	const char *bin = getenv("TORUS_BIN");
	CU_ASSERT_FATAL(bin != NULL);
	char cmd[4096], line[512];
	struct torus_params p;
	torus_params_default(&p);
	snprintf(cmd, sizeof(cmd), "%s/torus-timesim --torus 2 --pattern hotspot --bytes 1000 --quiet", bin);
	FILE *f = popen(cmd, "r");
	CU_ASSERT_FATAL(f != NULL);
	double us = -1;
	unsigned long long ps = 0;
	unsigned long long deposited = 0;
	while (fgets(line, sizeof(line), f)) {
		sscanf(line, " emulated time %lf us (the last deposit, at %llu ps)", &us, &ps);
		sscanf(line, "torus-timesim: 2, 2 cores, pattern hotspot: %llu packets", &deposited);
	}
	int st = pclose(f);
	EXPECT(st == 0, "torus-timesim exited with status %d", st);
	torus_vt_t want = torus_model_transfer(&p, 1000, 1, p.inj_overhead_ps);
	EXPECT(ps == want, "hotspot on 2 nodes: %llu ps (%.3f us), closed form %llu ps", ps, us, (unsigned long long)want);
	static const char *bad[] = {"", "--torus 4x4 --pattern bogus", "--torus 4x4 --size 241", "--torus 4x4 --cores 0",
				    "--torus 0x4", "--torus 4 --packets", "--torus 4 --what"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(cmd, sizeof(cmd), "%s/torus-timesim %s --quiet >/dev/null 2>&1", bin, bad[i]);
		int r = system(cmd);
		EXPECT(WIFEXITED(r) && WEXITSTATUS(r) == 2, "torus-timesim %s: status %d, not 2", bad[i], r);
	}
	snprintf(cmd, sizeof(cmd), "%s/torus-timesim --help | grep -q -- --pattern", bin);
	EXPECT(system(cmd) == 0, "torus-timesim --help does not describe --pattern");
}

int main(void)
{
	static const struct cunit_case cases[] = {
		{"random_equals_refsim", test_random_equals_refsim},
		{"far_posts", test_far_posts},
		{"late_start", test_late_start},
		{"classic_cases", test_classic_cases},
		{"backlog_and_wide_nodes", test_backlog_and_wide_nodes},
		{"left_alone", test_left_alone},
		{"link_cost", test_link_cost},
		{"bad_calls", test_bad_calls},
		{"program", test_program},
	};
	static const struct cunit_suite suites[] = {{"timesim", cases, sizeof(cases) / sizeof(cases[0])}};
	return cunit_main(suites, 1);
}
