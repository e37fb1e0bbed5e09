/*
 * The reference simulator (refsim.h) against what can be worked out by
 * hand: a transfer alone takes the closed-form time of the README; two
 * streams meeting at one link alternate, packet by packet; and on random
 * traffic no link ever carries two packets at once, no link idles while a
 * packet waits for it, and every packet arrives.
 */
#include "cunit_main.h"
#include "refsim.h"
#include "../dma/dma_internal.h"

#include <stdlib.h>

#include "test_rng.h"

/* Every hop of a run, for the properties. */
struct hops {
	struct refsim_hop *h;
	size_t n, cap;
};
static void record(void *arg, const struct refsim_hop *h)
{
	struct hops *hs = arg;
	if (hs->n == hs->cap) {
		hs->cap = hs->cap ? 2 * hs->cap : 256;
		hs->h = realloc(hs->h, hs->cap * sizeof(*hs->h));
		CU_ASSERT_FATAL(hs->h != NULL);
	}
	hs->h[hs->n++] = *h;
}

static struct refsim_config config(const struct torus_shape *s, const struct torus_params *p, const uint32_t *cores,
				   struct hops *hs)
{
	struct refsim_config c = {s, p, cores, (uint32_t)sizeof(struct dma_getreq), hs ? record : NULL, hs};
	return c;
}

static struct torus_shape shape(const char *text)
{
	struct torus_shape s;
	char err[128];
	CU_ASSERT_FATAL(torus_shape_parse(text, &s, err, sizeof(err)) == 0);
	return s;
}

/* A transfer alone on the machine: the closed form, after the posting overhead. */
static void test_alone_closed_form(void)
{
	static const char *shapes[] = {"8", "4x4", "3x5", "2x3x4", "4x4x4", "2x2x2x2", "3x1x4"};
	static const uint64_t lens[] = {0, 1, 200, 240, 241, 480, 5000, 100000};
	struct torus_params p;
	torus_params_default(&p);
	rng_state = 0x1234567;
	for (size_t si = 0; si < sizeof(shapes) / sizeof(shapes[0]); si++) {
		struct torus_shape s = shape(shapes[si]);
		uint32_t cores[64];
		for (uint32_t i = 0; i < s.nnodes; i++)
			cores[i] = 2;
		for (int trial = 0; trial < 12; trial++) {
			uint32_t a = (uint32_t)(rnd() % s.nnodes), b = (uint32_t)(rnd() % s.nnodes);
			uint64_t len = lens[rnd() % (sizeof(lens) / sizeof(lens[0]))];
			uint32_t kind = (uint32_t)(rnd() % 4) + REFSIM_RAW;
			if (kind == REFSIM_RAW && len > 240)
				len = 240;
			torus_vt_t post = rnd() % 1000000;
			struct refsim_xfer x = {kind, a, 1, 3, b, 1, len, post, 0, 0, 0, 0};
			struct refsim_config c = config(&s, &p, cores, NULL);
			CU_ASSERT_FATAL(refsim_run(&c, &x, 1) == 0);
			uint32_t h = torus_hops(&s, a, b);
			torus_vt_t ready = post + p.inj_overhead_ps, want;
			if (kind == REFSIM_GET)
				want = torus_model_transfer(&p, len, h, torus_model_transfer(&p, sizeof(struct dma_getreq), h, ready));
			else
				want = torus_model_transfer(&p, len, h, ready);
			EXPECT(x.ready == ready, "%s kind %u: ready %llu, not %llu", shapes[si], kind,
			       (unsigned long long)x.ready, (unsigned long long)ready);
			EXPECT(x.done == want, "%s kind %u %u->%u %llu B: done %llu ps, closed form %llu", shapes[si], kind,
			       a, b, (unsigned long long)len, (unsigned long long)x.done, (unsigned long long)want);
			uint64_t pkts = len / 240 + (len % 240 || len == 0);
			EXPECT(x.packets == pkts, "%llu packets, not %llu", (unsigned long long)x.packets,
			       (unsigned long long)pkts);
		}
	}
}

/*
 * Ring of 4: node 0 puts three packets to node 2 (through node 1), node 1
 * puts three to node 2. Both post at 0. With S the serialisation of a full
 * packet, L the hop latency and o the posting overhead (L < S): node 1's
 * first two packets go alone (node 0's first arrives at o + S + L); from
 * o + 2S on both inputs have a packet ready at every free moment, and the
 * link alternates, the incoming link first (it follows node 1's FIFO in
 * the round robin): a1 p3 a2 a3.
 */
static void test_two_streams_alternate(void)
{
	struct torus_params p;
	torus_params_default(&p);
	struct torus_shape s = shape("4");
	uint32_t cores[4] = {1, 1, 1, 1};
	struct refsim_xfer x[2] = {
		{REFSIM_PUT, 0, 0, 0, 2, 0, 720, 0, 0, 0, 0, 0},
		{REFSIM_PUT, 1, 0, 0, 2, 0, 720, 0, 0, 0, 0, 0},
	};
	struct hops hs = {0};
	struct refsim_config c = config(&s, &p, cores, &hs);
	CU_ASSERT_FATAL(refsim_run(&c, x, 2) == 0);
	torus_vt_t S = torus_ser_ps(&p, torus_wire_bytes(&p, 240)), L = p.hop_latency_ps, o = p.inj_overhead_ps;
	CU_ASSERT_FATAL(L < S);
	EXPECT(x[1].done == o + 4 * S + L, "node 1's stream done at %llu, want o+4S+L = %llu",
	       (unsigned long long)x[1].done, (unsigned long long)(o + 4 * S + L));
	EXPECT(x[0].done == o + 6 * S + L, "node 0's stream done at %llu, want o+6S+L = %llu",
	       (unsigned long long)x[0].done, (unsigned long long)(o + 6 * S + L));
	/* the shared link, node 1 x+: p1 p2 a1 p3 a2 a3 */
	static const uint32_t order[6] = {1, 1, 0, 1, 0, 0};
	size_t k = 0;
	for (size_t i = 0; i < hs.n; i++) {
		if (hs.h[i].node != 1 || hs.h[i].link != 0)
			continue;
		if (EXPECT(k < 6, "more than 6 packets on node 1's x+ link"))
			EXPECT(hs.h[i].xfer == order[k] && hs.h[i].start == o + k * S,
			       "packet %zu on the shared link: stream %u at %llu, want stream %u at %llu", k, hs.h[i].xfer,
			       (unsigned long long)hs.h[i].start, order[k], (unsigned long long)(o + k * S));
		k++;
	}
	EXPECT(k == 6, "%zu packets on the shared link, not 6", k);
	free(hs.h);
}

/* Order hops by (node, link, start). */
static int hop_cmp(const void *a, const void *b)
{
	const struct refsim_hop *x = a, *y = b;
	if (x->node != y->node)
		return x->node < y->node ? -1 : 1;
	if (x->link != y->link)
		return x->link < y->link ? -1 : 1;
	return x->start < y->start ? -1 : x->start > y->start;
}

/*
 * Random traffic on random shapes and core counts: every packet arrives,
 * every transfer takes at least its time alone, no link direction carries
 * two packets at once, and the busy time of each is the sum of its
 * packets' serialisation.
 */
static void test_random_properties(void)
{
	struct torus_params p;
	torus_params_default(&p);
	rng_state = 0xfeedbeef;
	for (int scen = 0; scen < 60; scen++) {
		uint32_t dims[3], nd = 1 + (uint32_t)(rnd() % 3);
		char text[32];
		size_t used = 0;
		for (uint32_t d = 0; d < nd; d++) {
			dims[d] = 1 + (uint32_t)(rnd() % 4);
			used += (size_t)snprintf(text + used, sizeof(text) - used, d ? "x%u" : "%u", dims[d]);
		}
		struct torus_shape s = shape(text);
		uint32_t cores[64];
		for (uint32_t i = 0; i < s.nnodes; i++)
			cores[i] = 1 + (uint32_t)(rnd() % 3);
		size_t n = 1 + rnd() % 40;
		struct refsim_xfer *x = calloc(n, sizeof(*x));
		CU_ASSERT_FATAL(x != NULL);
		for (size_t i = 0; i < n; i++) {
			x[i].kind = REFSIM_RAW + (uint32_t)(rnd() % 4);
			x[i].src_node = (uint32_t)(rnd() % s.nnodes);
			x[i].src_core = (uint32_t)(rnd() % cores[x[i].src_node]);
			x[i].fifo = (uint32_t)(rnd() % p.inj_fifos);
			x[i].dst_node = (uint32_t)(rnd() % s.nnodes);
			x[i].dst_core = (uint32_t)(rnd() % cores[x[i].dst_node]);
			x[i].len = x[i].kind == REFSIM_RAW ? rnd() % 241 : rnd() % 3000;
			x[i].post = rnd() % 3000000;
		}
		struct hops hs = {0};
		struct refsim_config c = config(&s, &p, cores, &hs);
		CU_ASSERT_FATAL(refsim_run(&c, x, n) == 0);
		for (size_t i = 0; i < n; i++) {
			uint32_t h = torus_hops(&s, x[i].src_node, x[i].dst_node);
			torus_vt_t alone = x[i].kind == REFSIM_GET
						   ? torus_model_transfer(&p, x[i].len, h,
									  torus_model_transfer(&p, sizeof(struct dma_getreq), h, x[i].ready))
						   : torus_model_transfer(&p, x[i].len, h, x[i].ready);
			uint64_t pkts = x[i].len / 240 + (x[i].len % 240 || x[i].len == 0);
			EXPECT(x[i].packets == pkts, "%s transfer %zu: %llu packets arrived of %llu", text, i,
			       (unsigned long long)x[i].packets, (unsigned long long)pkts);
			EXPECT(x[i].done >= alone, "%s transfer %zu done at %llu, before its time alone %llu", text, i,
			       (unsigned long long)x[i].done, (unsigned long long)alone);
		}
		if (hs.n)
			qsort(hs.h, hs.n, sizeof(*hs.h), hop_cmp);
		for (size_t i = 0; i < hs.n; i++) {
			const struct refsim_hop *a = &hs.h[i];
			EXPECT(a->end - a->start == torus_ser_ps(&p, a->wire), "%s: a packet held a link %llu ps for %u wire bytes",
			       text, (unsigned long long)(a->end - a->start), a->wire);
			if (i && hs.h[i - 1].node == a->node && hs.h[i - 1].link == a->link)
				EXPECT(hs.h[i - 1].end <= a->start, "%s node %u link %u: [%llu, %llu) overlaps [%llu, %llu)",
				       text, a->node, a->link, (unsigned long long)hs.h[i - 1].start,
				       (unsigned long long)hs.h[i - 1].end, (unsigned long long)a->start,
				       (unsigned long long)a->end);
		}
		free(hs.h);
		free(x);
	}
}

/* Bad scenarios are refused, not simulated. */
static void test_bad_input(void)
{
	struct torus_params p;
	torus_params_default(&p);
	struct torus_shape s = shape("2x2");
	uint32_t cores[4] = {1, 2, 1, 1};
	struct refsim_config c = config(&s, &p, cores, NULL);
	struct refsim_xfer good = {REFSIM_PUT, 0, 0, 0, 1, 1, 100, 0, 0, 0, 0, 0};
	struct refsim_xfer bad[] = {
		{0, 0, 0, 0, 1, 0, 100, 0, 0, 0, 0, 0},            /* kind */
		{REFSIM_PUT, 4, 0, 0, 1, 0, 100, 0, 0, 0, 0, 0},   /* node */
		{REFSIM_PUT, 0, 1, 0, 1, 0, 100, 0, 0, 0, 0, 0},   /* core */
		{REFSIM_PUT, 0, 0, 0, 2, 1, 100, 0, 0, 0, 0, 0},   /* destination core */
		{REFSIM_PUT, 0, 0, 8, 1, 0, 100, 0, 0, 0, 0, 0},   /* FIFO */
		{REFSIM_RAW, 0, 0, 0, 1, 0, 241, 0, 0, 0, 0, 0},   /* raw too long */
	};
	CU_ASSERT(refsim_run(&c, &good, 1) == 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		EXPECT(refsim_run(&c, &bad[i], 1) == -EINVAL, "bad transfer %zu accepted", i);
	CU_ASSERT(refsim_run(NULL, &good, 1) == -EINVAL);
}

int main(void)
{
	static const struct cunit_case cases[] = {
		{"alone_closed_form", test_alone_closed_form},
		{"two_streams_alternate", test_two_streams_alternate},
		{"random_properties", test_random_properties},
		{"bad_input", test_bad_input},
	};
	static const struct cunit_suite suites[] = {{"refsim", cases, sizeof(cases) / sizeof(cases[0])}};
	return cunit_main(suites, 1);
}
