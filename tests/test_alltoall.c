/*
 * The all-to-all plans, without running them: every algorithm's plan,
 * executed symbolically on block ids, delivers member s's block for v to
 * block s of v's recv, writes no range twice (scratch of an inj_order plan
 * only once its content was used, and its writer heard from its owner
 * since) and reads nothing unwritten,
 * on 1-D to 4-D shapes, prime, odd and power-of-two p up to 100, uneven
 * core maps; and the papers' counts: Fig. 3 and Theorem 1 of
 * 000_a0e9749300f48338.txt, perfect matchings and round counts of the
 * factor and XOR algorithms, the single port of hierarchical_factor, the
 * bounds. (coll-check runs them for real under torusrun: test_coll.)
 */
#include "cunit_main.h"

#include "a2a.h"
#include "alltoallv.h"

#include <stdlib.h>
#include <string.h>

static struct torus_shape shape_of(const char *text)
{
	struct torus_shape s;
	char err[128];
	int rc = torus_shape_parse(text, &s, err, sizeof(err));
	CU_ASSERT_EQUAL_FATAL(rc, 0);
	return s;
}

/* member_node of a team of `per[x]` members on node x (team order: by node) */
static uint32_t *nodes_of(const uint32_t *per, uint32_t nn, uint32_t *p)
{
	uint32_t n = 0;
	for (uint32_t x = 0; x < nn; x++)
		n += per[x];
	uint32_t *m = malloc(n * sizeof(uint32_t));
	for (uint32_t x = 0, i = 0; x < nn; x++)
		for (uint32_t k = 0; k < per[x]; k++)
			m[i++] = x;
	*p = n;
	return m;
}

/*
 * Execute the plan on block ids: send[u][v] = u*p+v; each step, every
 * member's pre-copies, then every put, then every post-copy. Returns the
 * number of problems found (and reports the first few).
 */
static unsigned simulate(const struct coll_plan *pl, const char *what)
{
	uint32_t p = pl->p;
	uint64_t B = pl->block;
	unsigned bad = 0;
	uint32_t **buf[3];
	uint8_t **wrote[3];
	uint64_t n[3];
	/* scratch landed in again (inj_order): the step + 1 of each scratch
	 * block's last read since it was written (0: none yet), and of the
	 * last step, before the current one, in which u put to x */
	uint32_t **rdstep = calloc(p, sizeof(uint32_t *)), *sent = calloc((size_t)p * p, sizeof(uint32_t));
	for (int b = 0; b < 3; b++) {
		buf[b] = calloc(p, sizeof(uint32_t *));
		wrote[b] = calloc(p, sizeof(uint8_t *));
	}
	for (uint32_t u = 0; u < p; u++) {
		n[0] = n[1] = p;
		n[2] = pl->tmp_bytes[u] / B;
		rdstep[u] = calloc(n[2] + 1, sizeof(uint32_t));
		for (int b = 0; b < 3; b++) {
			buf[b][u] = malloc((n[b] + 1) * sizeof(uint32_t));
			wrote[b][u] = calloc(n[b] + 1, 1);
			for (uint64_t i = 0; i < n[b]; i++)
				buf[b][u][i] = b == A2A_SEND ? u * p + (uint32_t)i : UINT32_MAX;
		}
	}
#define CHECK(cond, ...)                                                                                         \
	do {                                                                                                     \
		if (!(cond)) {                                                                                   \
			if (bad++ < 5)                                                                           \
				EXPECT(0, __VA_ARGS__);                                                          \
		}                                                                                                \
	} while (0)
	size_t ci = 0, pi = 0;
	for (uint32_t st = 0; st < pl->nsteps; st++) {
		size_t pi0 = pi;
		for (int post = 0; post < 2; post++) {
			for (; ci < pl->ncopies && pl->copies[ci].step == st && pl->copies[ci].post == post; ci++) {
				const struct a2a_copy *k = &pl->copies[ci];
				uint32_t u = k->member;
				CHECK(k->soff % B == 0 && k->doff % B == 0 && k->len % B == 0, "%s: copy not in blocks", what);
				uint64_t sn = k->sbuf == A2A_TMP ? pl->tmp_bytes[u] / B : p;
				uint64_t dn = k->dbuf == A2A_TMP ? pl->tmp_bytes[u] / B : p;
				CHECK(k->dbuf != A2A_SEND, "%s: a copy writes send", what);
				for (uint64_t i = 0; i < k->len / B; i++) {
					uint64_t s = k->soff / B + i, d = k->doff / B + i;
					if (s >= sn || d >= dn || k->dbuf == A2A_SEND) {
						CHECK(0, "%s: copy out of range", what);
						break;
					}
					CHECK(buf[k->sbuf][u][s] != UINT32_MAX, "%s: step %u member %u copies an unwritten block",
					      what, st, u);
					CHECK(!wrote[k->dbuf][u][d], "%s: step %u member %u writes a block twice", what, st, u);
					if (k->sbuf == A2A_TMP)
						rdstep[u][s] = st + 1;
					wrote[k->dbuf][u][d] = 1;
					buf[k->dbuf][u][d] = buf[k->sbuf][u][s];
				}
			}
			if (post)
				break;
			for (; pi < pl->nputs && pl->puts[pi].step == st; pi++) {
				const struct a2a_put *x = &pl->puts[pi];
				CHECK(x->src != x->dst, "%s: a put to itself", what);
				CHECK(x->dbuf != A2A_SEND, "%s: a put into send", what);
				uint64_t sn = x->sbuf == A2A_TMP ? pl->tmp_bytes[x->src] / B : p;
				uint64_t dn = x->dbuf == A2A_TMP ? pl->tmp_bytes[x->dst] / B : p;
				for (uint64_t i = 0; i < x->len / B; i++) {
					uint64_t s = x->soff / B + i, d = x->doff / B + i;
					if (s >= sn || d >= dn || x->dbuf == A2A_SEND) {
						CHECK(0, "%s: put out of range", what);
						break;
					}
					CHECK(buf[x->sbuf][x->src][s] != UINT32_MAX, "%s: step %u: %u sends an unwritten block",
					      what, st, x->src);
					if (x->sbuf == A2A_TMP)
						rdstep[x->src][s] = st + 1;
					/* landing again in scratch: only after what was there was
					 * used, and the writer heard from its owner since */
					int again = pl->inj_order && x->dbuf == A2A_TMP && rdstep[x->dst][d] &&
						    sent[(size_t)x->dst * p + x->src] > rdstep[x->dst][d];
					CHECK(!wrote[x->dbuf][x->dst][d] || again, "%s: step %u: %u->%u writes a block twice", what,
					      st, x->src, x->dst);
					if (x->dbuf == A2A_TMP)
						rdstep[x->dst][d] = 0;
					wrote[x->dbuf][x->dst][d] = 1;
					buf[x->dbuf][x->dst][d] = buf[x->sbuf][x->src][s];
				}
			}
		}
		for (size_t i = pi0; i < pi; i++)
			sent[(size_t)pl->puts[i].src * p + pl->puts[i].dst] = st + 1;
	}
	CHECK(ci == pl->ncopies && pi == pl->nputs, "%s: copies or puts out of step order", what);
	for (uint32_t v = 0; v < p; v++)
		for (uint32_t s = 0; s < p; s++)
			CHECK(buf[A2A_RECV][v][s] == s * p + v, "%s: member %u's block %u holds %u/%u, not %u/%u", what, v,
			      s, buf[A2A_RECV][v][s] / p, buf[A2A_RECV][v][s] % p, s, v);
	for (int b = 0; b < 3; b++) {
		for (uint32_t u = 0; u < p; u++) {
			free(buf[b][u]);
			free(wrote[b][u]);
		}
		free(buf[b]);
		free(wrote[b]);
	}
	for (uint32_t u = 0; u < p; u++)
		free(rdstep[u]);
	free(rdstep);
	free(sent);
	return bad;
#undef CHECK
}

static const char *names[] = {"direct", "factor", "xor", "ring", "mesh2d", "bruck", "torus", "hierarchical_factor"};

/* Every algorithm that fits, on one shape and core map. */
static void deliver_all(const char *shape, const uint32_t *per)
{
	struct torus_shape s = shape_of(shape);
	uint32_t *ones = NULL, p;
	if (!per) {
		ones = malloc(s.nnodes * sizeof(uint32_t));
		for (uint32_t x = 0; x < s.nnodes; x++)
			ones[x] = 1;
		per = ones;
	}
	uint32_t *mn = nodes_of(per, s.nnodes, &p);
	unsigned ran = 0;
	for (size_t a = 0; a < sizeof(names) / sizeof(names[0]); a++) {
		coll_plan_t *pl;
		int rc = coll_alltoall_plan(names[a], &s, NULL, mn, p, 8, &pl);
		if (rc == -ENOTSUP)
			continue; /* xor on p not a power of two, torus on a core map */
		EXPECT(rc == 0, "%s on %s (p %u): plan failed %d", names[a], shape, p, rc);
		if (rc)
			continue;
		char what[96];
		snprintf(what, sizeof(what), "%s on %s, p %u", names[a], shape, p);
		EXPECT(simulate(pl, what) == 0, "%s: wrong", what);
		coll_plan_free(pl);
		ran++;
	}
	EXPECT(ran >= 5, "%s: only %u algorithms fit", shape, ran);
	free(mn);
	free(ones);
}

static void test_deliver_1d(void)
{
	deliver_all("2", NULL);
	deliver_all("7", NULL);
	deliver_all("13", NULL);
	deliver_all("16", NULL);
	deliver_all("61", NULL);
}
static void test_deliver_2d(void)
{
	deliver_all("4x4", NULL);
	deliver_all("3x6", NULL); /* p = 18 */
	deliver_all("10x10", NULL);
}
static void test_deliver_3d_4d(void)
{
	deliver_all("3x3x2", NULL);
	deliver_all("4x4x4", NULL);
	deliver_all("2x2x2x2", NULL);
	deliver_all("3x2x2x2", NULL);
}
static void test_deliver_core_maps(void)
{
	static const uint32_t m1[] = {1, 3, 2}, m2[] = {2, 2, 2, 2}, m3[] = {1, 1, 4, 2, 3, 1, 2};
	deliver_all("3", m1);
	deliver_all("2x2", m2);
	deliver_all("7", m3);
}

/* Every p from 1 to 100 on a ring of p nodes. */
static void test_deliver_every_p(void)
{
	for (uint32_t p = 1; p <= 100; p++) {
		char sh[16];
		snprintf(sh, sizeof(sh), "%u", p);
		struct torus_shape s = shape_of(sh);
		uint32_t *mn = malloc(p * sizeof(uint32_t));
		for (uint32_t i = 0; i < p; i++)
			mn[i] = i;
		for (size_t a = 0; a < sizeof(names) / sizeof(names[0]); a++) {
			coll_plan_t *pl;
			int rc = coll_alltoall_plan(names[a], &s, NULL, mn, p, 16, &pl);
			if (rc == -ENOTSUP)
				continue;
			EXPECT(rc == 0, "%s p %u: %d", names[a], p, rc);
			if (rc)
				continue;
			char what[64];
			snprintf(what, sizeof(what), "%s p %u", names[a], p);
			EXPECT(simulate(pl, what) == 0, "%s", what);
			coll_plan_free(pl);
		}
		free(mn);
	}
}

/* (phase, round) -> rounds per phase */
static void rounds_per_phase(const coll_plan_t *pl, uint32_t *out, uint32_t max)
{
	memset(out, 0, max * sizeof(uint32_t));
	for (uint32_t s = 0; s < coll_plan_steps(pl); s++) {
		uint32_t ph, r;
		coll_plan_step_info(pl, s, &ph, &r);
		if (ph < max && r + 1 > out[ph])
			out[ph] = r + 1;
	}
}

/* At most one inter-node pair per node and step (000's single port), and
 * every member sends and receives at most one message per step. */
static unsigned single_ported(const coll_plan_t *pl, const uint32_t *mn, uint32_t nn)
{
	unsigned bad = 0;
	uint32_t p = pl->p, n = coll_plan_messages(pl);
	int64_t *pair = malloc(nn * sizeof(int64_t));
	uint32_t *sent = calloc(p, sizeof(uint32_t)), *got = calloc(p, sizeof(uint32_t));
	for (uint32_t i = 0, st = UINT32_MAX; i < n; i++) {
		struct coll_plan_msg m;
		coll_plan_message(pl, i, &m);
		if (m.step != st) {
			st = m.step;
			for (uint32_t x = 0; x < nn; x++)
				pair[x] = -1;
			memset(sent, 0, p * sizeof(uint32_t));
			memset(got, 0, p * sizeof(uint32_t));
		}
		bad += ++sent[m.from] > 1;
		bad += ++got[m.to] > 1;
		if (mn[m.from] == mn[m.to])
			continue;
		int64_t key = (int64_t)(m.from < m.to ? m.from : m.to) * p + (m.from < m.to ? m.to : m.from);
		for (int e = 0; e < 2; e++) {
			uint32_t x = e ? mn[m.to] : mn[m.from];
			if (pair[x] >= 0 && pair[x] != key)
				bad++;
			pair[x] = key;
		}
	}
	free(pair);
	free(sent);
	free(got);
	return bad;
}

/* 000 Fig. 3: nodes of sizes 1, 2 and 3 */
static void test_fig3(void)
{
	struct torus_shape s = shape_of("3");
	static const uint32_t per[] = {1, 2, 3};
	uint32_t p, rp[8];
	uint32_t *mn = nodes_of(per, 3, &p);
	coll_plan_t *pl;
	CU_ASSERT_EQUAL_FATAL(coll_alltoall_plan("hierarchical_factor", &s, NULL, mn, p, 8, &pl), 0);
	EXPECT(coll_plan_phases(pl) == 3, "phases %u", coll_plan_phases(pl));
	rounds_per_phase(pl, rp, 8);
	EXPECT(rp[0] == 3 && rp[1] == 2 && rp[2] == 1, "rounds per phase %u %u %u", rp[0], rp[1], rp[2]);
	/* the caption's 15: every m_uu is a copy before the first step, so a
	 * node paired with itself spends its steps on messages to the others */
	EXPECT(coll_plan_steps(pl) == 15, "steps %u", coll_plan_steps(pl));
	/* 30 messages between different processors, m_uu copies apart */
	EXPECT(coll_plan_messages(pl) == 30, "messages %u", coll_plan_messages(pl));
	/* the largest node sends 15 messages to other processors */
	uint32_t from_big = 0;
	for (uint32_t i = 0; i < coll_plan_messages(pl); i++) {
		struct coll_plan_msg m;
		coll_plan_message(pl, i, &m);
		from_big += mn[m.from] == 2;
	}
	EXPECT(from_big == 15, "node 2 sends %u", from_big);
	/* steps without inter-node traffic: only in the rounds where every
	 * active node is paired with itself (phase 2's first round, 8 and 9;
	 * phase 3, 13 and 14). In phase 1 every step has some: the caption's
	 * step 6 of phase 1 (inter-node idle, to be "moved to the end") is not
	 * there once the copies go before the first step */
	uint32_t inter[32] = {0}, any[32] = {0}, idle = 0, mask = 0;
	for (uint32_t i = 0; i < coll_plan_messages(pl); i++) {
		struct coll_plan_msg m;
		coll_plan_message(pl, i, &m);
		if (m.step < 32) {
			any[m.step]++;
			inter[m.step] += mn[m.from] != mn[m.to];
		}
	}
	for (uint32_t k = 0; k < coll_plan_steps(pl) && k < 32; k++)
		if (any[k] && !inter[k])
			idle++, mask |= 1u << k;
	EXPECT(idle == 4 && mask == (1u << 8 | 1u << 9 | 1u << 13 | 1u << 14), "%u steps without inter-node messages (%#x)",
	       idle, mask);
	EXPECT(single_ported(pl, mn, 3) == 0, "not single-ported");
	EXPECT(simulate(pl, "fig3") == 0, "fig3 delivers");
	coll_plan_free(pl);
	free(mn);
}

/* Theorem 1 on random uneven machines: steps = the largest number of
 * messages the processors of one node send to others, n_max (p - 1), where
 * one node is the largest; between that and n_max p otherwise. */
static void test_theorem1_random(void)
{
	uint64_t r = 0x9e3779b97f4a7c15ull;
	uint32_t unique_max = 0;
	for (int trial = 0; trial < 60; trial++) {
		r = r * 6364136223846793005ull + 1442695040888963407ull;
		uint32_t nn = 2 + (uint32_t)(r >> 33) % 9, per[16], nmax = 0;
		char sh[16];
		snprintf(sh, sizeof(sh), "%u", nn);
		struct torus_shape s = shape_of(sh);
		for (uint32_t x = 0; x < nn; x++) {
			r = r * 6364136223846793005ull + 1442695040888963407ull;
			per[x] = 1 + (uint32_t)(r >> 35) % 5;
			nmax = per[x] > nmax ? per[x] : nmax;
		}
		uint32_t p, *mn = nodes_of(per, nn, &p);
		coll_plan_t *pl;
		CU_ASSERT_EQUAL_FATAL(coll_alltoall_plan("hierarchical_factor", &s, NULL, mn, p, 8, &pl), 0);
		/* Theorem 1, with m_uu a copy before the first step: a largest node
		 * takes part in every step, n_max (p - 1) of them, unless one is
		 * paired with itself while two others are paired (000's inefficient
		 * steps, after Theorem 1): then up to n_max more, never more than
		 * Fig. 2's n_max p with the copies as steps */
		uint32_t nbig = 0;
		for (uint32_t x = 0; x < nn; x++)
			nbig += per[x] == nmax;
		uint32_t st = coll_plan_steps(pl);
		EXPECT(nbig > 1 ? st >= nmax * (p - 1) && st <= nmax * p : st == nmax * (p - 1),
		       "trial %d: %u nodes (%u of the largest size), p %u, n_max %u: %u steps", trial, nn, nbig, p, nmax, st);
		unique_max += nbig == 1;
		EXPECT(coll_plan_messages(pl) == p * (p - 1), "trial %d: %u messages", trial, coll_plan_messages(pl));
		EXPECT(single_ported(pl, mn, nn) == 0, "trial %d: not single-ported", trial);
		char what[32];
		snprintf(what, sizeof(what), "theorem1 trial %d", trial);
		EXPECT(simulate(pl, what) == 0, "%s", what);
		coll_plan_free(pl);
		free(mn);
	}
	EXPECT(unique_max >= 10, "only %u machines with a unique largest node", unique_max);
}

/* factor and xor: every round a perfect matching (with one self-loop for
 * odd p), p-1 rounds (p for odd p) */
static void test_matchings(void)
{
	for (uint32_t p = 2; p <= 33; p++) {
		char sh[16];
		snprintf(sh, sizeof(sh), "%u", p);
		struct torus_shape s = shape_of(sh);
		uint32_t *mn = malloc(p * sizeof(uint32_t)), *partner = malloc(p * sizeof(uint32_t));
		for (uint32_t i = 0; i < p; i++)
			mn[i] = i;
		for (int x = 0; x < 2; x++) {
			if (x && (p & (p - 1)))
				continue;
			coll_plan_t *pl;
			CU_ASSERT_EQUAL_FATAL(coll_alltoall_plan(x ? "xor" : "factor", &s, NULL, mn, p, 8, &pl), 0);
			uint32_t want = x || p % 2 == 0 ? p - 1 : p;
			EXPECT(coll_plan_steps(pl) == want && coll_plan_rounds(pl) == want, "%s p %u: %u rounds", x ? "xor" : "factor",
			       p, coll_plan_steps(pl));
			uint32_t n = coll_plan_messages(pl), i = 0;
			for (uint32_t st = 0; st < coll_plan_steps(pl); st++) {
				for (uint32_t u = 0; u < p; u++)
					partner[u] = UINT32_MAX;
				for (; i < n; i++) {
					struct coll_plan_msg m;
					coll_plan_message(pl, i, &m);
					if (m.step != st)
						break;
					EXPECT(partner[m.from] == UINT32_MAX, "p %u step %u: %u sends twice", p, st, m.from);
					partner[m.from] = m.to;
				}
				uint32_t self = 0;
				for (uint32_t u = 0; u < p; u++) {
					if (partner[u] == UINT32_MAX) {
						self++;
						continue;
					}
					EXPECT(partner[partner[u]] == u, "%s p %u round %u: %u -> %u not matched", x ? "xor" : "factor", p,
					       st, u, partner[u]);
				}
				EXPECT(self == (p % 2 && !x ? 1u : 0u), "%s p %u round %u: %u self-loops", x ? "xor" : "factor", p, st,
				       self);
			}
			EXPECT(simulate(pl, "matching") == 0, "p %u", p);
			coll_plan_free(pl);
		}
		free(mn);
		free(partner);
	}
}

/* bruck: ceil(log2 p) rounds; ring: max(p/2, (p-1)/2) rounds; mesh2d and
 * torus: one phase per grid dimension */
static void test_round_counts(void)
{
	struct torus_shape s = shape_of("4x3x2");
	uint32_t mn[24];
	for (uint32_t i = 0; i < 24; i++)
		mn[i] = i;
	static const struct {
		const char *algo;
		uint32_t steps, phases, msgs_per_member;
	} want[] = {{"bruck", 5, 1, 5}, {"ring", 12, 1, 23}, {"mesh2d", 2, 2, 3 + 5}, {"torus", 3, 3, 3 + 2 + 1},
		    {"direct", 1, 1, 23}};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		coll_plan_t *pl;
		CU_ASSERT_EQUAL_FATAL(coll_alltoall_plan(want[i].algo, &s, NULL, mn, 24, 8, &pl), 0);
		EXPECT(coll_plan_steps(pl) == want[i].steps, "%s: %u steps", want[i].algo, coll_plan_steps(pl));
		EXPECT(coll_plan_phases(pl) == want[i].phases, "%s: %u phases", want[i].algo, coll_plan_phases(pl));
		EXPECT(coll_plan_messages(pl) == 24 * want[i].msgs_per_member, "%s: %u messages", want[i].algo,
		       coll_plan_messages(pl));
		coll_plan_free(pl);
	}
}

/* The bounds: direct on a ring of 8 with one member per node, 240-byte
 * blocks (one full packet): the busiest link direction carries the
 * packets of every pair whose route crosses it. */
static void test_bounds(void)
{
	struct torus_shape s = shape_of("8");
	struct torus_params prm;
	torus_params_default(&prm);
	uint32_t mn[8], pay = torus_params_payload(&prm);
	for (uint32_t i = 0; i < 8; i++)
		mn[i] = i;
	coll_plan_t *pl;
	CU_ASSERT_EQUAL_FATAL(coll_alltoall_plan("direct", &s, NULL, mn, 8, pay, &pl), 0);
	struct coll_plan_bounds b;
	CU_ASSERT_EQUAL_FATAL(coll_plan_bounds(pl, &prm, &b), 0);
	/* on a ring of 8, link x -> x+1 carries the pairs (a, a+d), d = 1..3,
	 * whose route crosses it (d of them each), and the d = 4 ties that go
	 * up: those from the two even a of x-3 .. x (torus_ring_delta) */
	uint64_t w = torus_wire_bytes(&prm, pay);
	EXPECT(b.link_max_wire == 8 * w, "busiest link %llu wire bytes, not %llu", (unsigned long long)b.link_max_wire,
	       (unsigned long long)(8 * w));
	EXPECT(b.link_ps > 0 && b.round_ps > 0, "bounds %f %f", b.link_ps, b.round_ps);
	/* one step: the round bound is at least 7 posts and one message */
	EXPECT(b.round_ps >= 7.0 * prm.inj_overhead_ps + torus_ser_ps(&prm, (uint32_t)w), "round bound %f", b.round_ps);
	coll_plan_free(pl);
	/* bad arguments */
	EXPECT(coll_alltoall_plan("no-such", &s, NULL, mn, 8, 8, &pl) == -ENOENT, "unknown algorithm");
	struct torus_shape six = shape_of("6");
	EXPECT(coll_alltoall_plan("xor", &six, NULL, mn, 6, 8, &pl) == -ENOTSUP, "xor on 6");
	EXPECT(coll_alltoall_plan("torus", &s, NULL, mn, 4, 8, &pl) == -ENOTSUP, "torus on half the nodes");
	mn[3] = 99;
	EXPECT(coll_alltoall_plan("direct", &s, NULL, mn, 8, 8, &pl) == -EINVAL, "a node out of range");
	EXPECT(coll_alltoall_plan("direct", NULL, NULL, mn, 8, 8, &pl) == -EINVAL, "no shape");
}

/*
 * alltoallv's A2 and A3 plans, executed on bytes: member i's send holds
 * M[i][j] elements for j at SD[i][j] (a gap after each), member j's recv
 * takes i's at RD[j][i] (sources in reverse order); every byte must land in
 * its place, none twice, nothing read unwritten. esz 3 (odd sizes).
 */
static unsigned simulate_v(const struct coll_plan *pl, const int64_t *M, const int64_t *SD, const int64_t *RD,
			   size_t esz, const char *what)
{
	uint32_t p = pl->p;
	unsigned bad = 0;
	uint64_t *len[3];
	uint32_t **buf[3];
	uint8_t **wrote[3];
	/* the phase + 1 of the last put that sent each scratch byte: with
	 * stage_sync 2 no phase may pack over what the phase before sent */
	uint32_t **sentph = calloc(p, sizeof(uint32_t *));
	for (int b = 0; b < 3; b++) {
		len[b] = calloc(p, sizeof(uint64_t));
		buf[b] = calloc(p, sizeof(uint32_t *));
		wrote[b] = calloc(p, sizeof(uint8_t *));
	}
	for (uint32_t u = 0; u < p; u++) {
		for (uint32_t j = 0; j < p; j++) {
			uint64_t se = (uint64_t)(SD[u * p + j] + M[u * p + j]) * esz, re = (uint64_t)(RD[u * p + j] + M[j * p + u]) * esz;
			len[0][u] = se > len[0][u] ? se : len[0][u];
			len[1][u] = re > len[1][u] ? re : len[1][u];
		}
		len[2][u] = pl->tmp_bytes[u];
		sentph[u] = calloc(len[2][u] + 1, sizeof(uint32_t));
		for (int b = 0; b < 3; b++) {
			buf[b][u] = malloc((len[b][u] + 1) * sizeof(uint32_t));
			wrote[b][u] = calloc(len[b][u] + 1, 1);
			for (uint64_t x = 0; x < len[b][u]; x++)
				buf[b][u][x] = UINT32_MAX;
		}
		for (uint32_t j = 0; j < p; j++)
			for (uint64_t x = 0; x < (uint64_t)M[u * p + j] * esz; x++)
				buf[0][u][(uint64_t)SD[u * p + j] * esz + x] = (u * 128 + j) * 4096 + (uint32_t)x;
	}
#define CHECKV(cond, ...)                                                                                        \
	do {                                                                                                     \
		if (!(cond) && bad++ < 5)                                                                        \
			EXPECT(0, __VA_ARGS__);                                                                  \
	} while (0)
	size_t ci = 0, pi = 0;
	for (uint32_t st = 0; st < pl->nsteps; st++)
		for (int phase = 0; phase < 3; phase++) {
			/* behind the barrier of a stage_sync plan, scratch may be
			 * written again: once by what packs, once by what lands */
			if (pl->stage_sync && phase < 2)
				for (uint32_t u = 0; u < p; u++)
					memset(wrote[A2A_TMP][u], 0, len[A2A_TMP][u]);
			/* 0: pre-copies, 1: puts, 2: post-copies */
			if (phase == 1) {
				for (; pi < pl->nputs && pl->puts[pi].step == st; pi++) {
					const struct a2a_put *x = &pl->puts[pi];
					for (uint64_t b = 0; b < x->len; b++) {
						uint64_t so = x->soff + b, d = x->doff + b;
						if (so >= len[x->sbuf][x->src] || d >= len[x->dbuf][x->dst] || x->dbuf == A2A_SEND) {
							CHECKV(0, "%s: put out of range", what);
							break;
						}
						CHECKV(buf[x->sbuf][x->src][so] != UINT32_MAX, "%s: step %u %u->%u sends unwritten", what, st,
						       x->src, x->dst);
						CHECKV(!wrote[x->dbuf][x->dst][d], "%s: a byte written twice", what);
						wrote[x->dbuf][x->dst][d] = 1;
						if (x->sbuf == A2A_TMP)
							sentph[x->src][so] = pl->steps[st].phase + 1;
						buf[x->dbuf][x->dst][d] = buf[x->sbuf][x->src][so];
					}
				}
				continue;
			}
			for (; ci < pl->ncopies && pl->copies[ci].step == st && pl->copies[ci].post == (phase == 2); ci++) {
				const struct a2a_copy *k = &pl->copies[ci];
				uint32_t u = k->member;
				for (uint64_t b = 0; b < k->len; b++) {
					uint64_t so = k->soff + b, d = k->doff + b;
					if (so >= len[k->sbuf][u] || d >= len[k->dbuf][u] || k->dbuf == A2A_SEND) {
						CHECKV(0, "%s: copy out of range", what);
						break;
					}
					CHECKV(buf[k->sbuf][u][so] != UINT32_MAX, "%s: copies unwritten", what);
					CHECKV(!wrote[k->dbuf][u][d], "%s: a byte copied over twice", what);
					CHECKV(!(pl->stage_sync == 2 && k->dbuf == A2A_TMP && phase == 0 && pl->steps[st].phase &&
						 sentph[u][d] == pl->steps[st].phase),
					       "%s: phase %u packs over what the phase before sent", what, pl->steps[st].phase);
					wrote[k->dbuf][u][d] = 1;
					buf[k->dbuf][u][d] = buf[k->sbuf][u][so];
				}
			}
		}
	CHECKV(ci == pl->ncopies && pi == pl->nputs, "%s: out of step order", what);
	for (uint32_t j = 0; j < p; j++)
		for (uint32_t i = 0; i < p; i++)
			for (uint64_t x = 0; x < (uint64_t)M[i * p + j] * esz; x++)
				CHECKV(buf[1][j][(uint64_t)RD[j * p + i] * esz + x] == (i * 128 + j) * 4096 + (uint32_t)x,
				       "%s: member %u's byte %llu from %u is wrong", what, j, (unsigned long long)x, i);
	for (uint32_t u = 0; u < p; u++)
		free(sentph[u]);
	free(sentph);
	for (int b = 0; b < 3; b++) {
		for (uint32_t u = 0; u < p; u++) {
			free(buf[b][u]);
			free(wrote[b][u]);
		}
		free(len[b]);
		free(buf[b]);
		free(wrote[b]);
	}
	return bad;
#undef CHECKV
}

/* The in-place switch: pairwise whenever members' totals differ (bitonic
 * cannot), else bitonic only when (P-1) M > N L(L+1)/4; 004's cases land
 * where the measurements found the faster one (with the approximate timing
 * since removed: BENCHMARKS.md at commit 26917ce, "Variable-size all-to-all
 * in place"). */
static void test_inplace_switch(void)
{
	const double N = 1 << 20;
	CU_ASSERT_EQUAL(coll_alltoallv_inplace_pick(64, N, 0, N), 1); /* unequal: pairwise */
	for (uint32_t p = 4; p <= 64; p *= 2) {
		CU_ASSERT_EQUAL(coll_alltoallv_inplace_pick(p, N, 1, N / p), 1);   /* case1: pairwise */
		CU_ASSERT_EQUAL(coll_alltoallv_inplace_pick(p, N, 1, N), 0);      /* case4: bitonic */
	}
	CU_ASSERT_EQUAL(coll_alltoallv_inplace_pick(16, N, 1, N / 4 + N / 16), 1); /* case2 on 16 */
	CU_ASSERT_EQUAL(coll_alltoallv_inplace_pick(64, N, 1, N / 4 + N / 64), 0); /* case2 on 64 */
	CU_ASSERT_EQUAL(coll_alltoallv_inplace_pick(16, N, 1, N / 2 + N / 16), 0); /* case3 on 16 */
}

static void test_alltoallv_plans(void)
{
	uint64_t r = 12345;
	for (uint32_t p = 2; p <= 100; p++) {
		char sh[16];
		snprintf(sh, sizeof(sh), "%u", p);
		struct torus_shape s = shape_of(sh);
		uint32_t *mn = malloc(p * sizeof(uint32_t));
		int64_t *M = malloc((size_t)p * p * sizeof(int64_t)), *SD = malloc((size_t)p * p * sizeof(int64_t)),
			*RD = malloc((size_t)p * p * sizeof(int64_t));
		for (uint32_t i = 0; i < p; i++)
			mn[i] = i;
		for (size_t x = 0; x < (size_t)p * p; x++) {
			r = r * 6364136223846793005ull + 1442695040888963407ull;
			/* 0..5 elements, member 1 sends nothing */
			M[x] = x / p == 1 ? 0 : (int64_t)((r >> 33) % 6);
		}
		for (uint32_t i = 0; i < p; i++) {
			int64_t at = 0;
			for (uint32_t j = 0; j < p; j++) {
				SD[i * p + j] = at;
				at += M[i * p + j] + 1;
			}
			at = 0;
			for (uint32_t k = p; k-- > 0;) {
				RD[i * p + k] = at;
				at += M[k * p + i];
			}
		}
		uint32_t q = 0, C = 0;
		while ((q + 1) * (q + 1) <= p)
			q++;
		while (C * C < p)
			C++;
		static const struct coll_v_algo *const algs[] = {&coll_v_a2, &coll_v_a3, &coll_v_a4, &coll_v_a4b, &coll_v_a4d};
		static const char *const vnames[] = {"a2", "a3", "a4", "a4_blocking", "a4_dual"};
		for (int alg = 0; alg < 5; alg++) {
			if (alg == 1 && q * q != p)
				continue;
			struct coll_plan *pl;
			int rc = coll_v_plan(algs[alg], p, mn, &s, 3, M, SD, RD, &pl);
			EXPECT(rc == 0, "%s p %u: %d", vnames[alg], p, rc);
			if (rc)
				continue;
			char what[32];
			snprintf(what, sizeof(what), "%s p %u", vnames[alg], p);
			EXPECT(simulate_v(pl, M, SD, RD, 3, what) == 0, "%s", what);
			/* start-ups: a member sends at most p - 1 messages a stage
			 * (a2), or q - 1 (a3), or one per other column or row of the
			 * array, at most ceil(sqrt p) (a4), besides its own */
			if (alg == 3) {
				/* blocking: one message a round from each member, and
				 * (the revised R-schedule) one to each */
				uint32_t most = 0, most_in = 0;
				for (uint32_t st = 0; st < pl->nsteps; st++)
					for (uint32_t u = 0; u < p; u++) {
						uint32_t n = 0, in = 0;
						for (size_t k = 0; k < pl->nputs; k++) {
							n += pl->puts[k].src == u && pl->puts[k].step == st;
							in += pl->puts[k].dst == u && pl->puts[k].step == st;
						}
						most = n > most ? n : most;
						most_in = in > most_in ? in : most_in;
					}
				EXPECT(most <= 1 && most_in <= 1, "%s: %u messages from and %u to a member in a round", what,
				       most, most_in);
			}
			for (uint32_t st = 0; alg != 3 && st < algs[alg]->stages; st++) {
				uint32_t most = 0;
				for (uint32_t u = 0; u < p; u++) {
					uint32_t n = 0;
					for (size_t k = 0; k < pl->nputs; k++)
						n += pl->puts[k].src == u && pl->puts[k].step == st;
					most = n > most ? n : most;
				}
				uint32_t cap = alg == 0 ? p - 1 : alg == 1 ? q - 1 : C;
				/* (a4_dual: the same messages as a4, from two buffers) */
				EXPECT(most <= cap, "%s: %u messages in stage %u", what, most, st);
			}
			coll_plan_free(pl);
		}
		free(mn);
		free(M);
		free(SD);
		free(RD);
	}
}

/* direct sends large blocks in parts, all on the receiver's one counter: the
 * parts of each pair tile its block exactly, in both buffers, part k to
 * every member before part k+1. */
static void test_direct_parts(void)
{
	struct torus_shape s = shape_of("5");
	uint32_t mn[5] = {0, 1, 2, 3, 4}, p = 5;
	uint64_t B = 3 * 1920 + 100; /* 4 parts, the last short */
	coll_plan_t *pl;
	CU_ASSERT_EQUAL_FATAL(coll_alltoall_plan("direct", &s, NULL, mn, p, B, &pl), 0);
	EXPECT(pl->nputs == p * (p - 1) * 4, "%zu puts", pl->nputs);
	EXPECT(a2a_plan_slots_max(pl) == 1, "%u slots", a2a_plan_slots_max(pl));
	for (uint32_t u = 0; u < p; u++)
		for (uint32_t v = 0; v < p; v++) {
			if (u == v)
				continue;
			uint64_t next = 0;
			uint32_t slot = UINT32_MAX, parts = 0;
			size_t first = SIZE_MAX, last = 0;
			for (size_t i = 0; i < pl->nputs; i++) {
				const struct a2a_put *x = &pl->puts[i];
				if (x->src != u || x->dst != v)
					continue;
				EXPECT(x->soff == v * B + next && x->doff == u * B + next, "%u->%u part %u at %llu/%llu", u, v,
				       parts, (unsigned long long)x->soff, (unsigned long long)x->doff);
				EXPECT(slot == UINT32_MAX || x->slot == slot, "%u->%u: parts on different counters", u, v);
				slot = x->slot;
				next += x->len;
				parts++;
				first = i < first ? i : first;
				last = i;
			}
			EXPECT(next == B && parts == 4, "%u->%u: %u parts cover %llu of %llu bytes", u, v, parts,
			       (unsigned long long)next, (unsigned long long)B);
			/* interleaved: u's puts to other members come between */
			EXPECT(last - first > 3, "%u->%u: parts back to back", u, v);
		}
	coll_plan_free(pl);
}

/* The default rule (coll/alltoall/alltoall_default.c), case by case. */
static void test_default_rule(void)
{
	uint32_t mn[64], p;
	for (uint32_t i = 0; i < 64; i++)
		mn[i] = i;
	struct torus_shape s44 = shape_of("4x4"), s8 = shape_of("8"), s444 = shape_of("4x4x4"), s4 = shape_of("4");
	EXPECT(!strcmp(coll_alltoall_default(&s44, mn, 16, 64, 0), "torus"), "4x4 small: %s",
	       coll_alltoall_default(&s44, mn, 16, 64, 0));
	EXPECT(!strcmp(coll_alltoall_default(&s44, mn, 16, 4096, 0), "direct"), "4x4 large");
	EXPECT(!strcmp(coll_alltoall_default(&s8, mn, 8, 32, 0), "ring"), "ring of 8, small");
	EXPECT(!strcmp(coll_alltoall_default(&s8, mn, 8, 512, 0), "ring"), "ring of 8, 512 B");
	EXPECT(!strcmp(coll_alltoall_default(&s8, mn, 8, 1024, 0), "direct"), "ring of 8, 1 KiB");
	EXPECT(!strcmp(coll_alltoall_default(&s44, mn, 16, 512, 0), "direct"), "4x4, 512 B");
	/* 64 members: direct needs 3 counters (one for every block it
	 * receives, an injection counter, one spare), so 64 of them do */
	EXPECT(!strcmp(coll_alltoall_default(&s444, mn, 64, 4096, 0), "direct"), "4x4x4 large, 64 counters");
	EXPECT(!strcmp(coll_alltoall_default(&s444, mn, 64, 4096, 3), "direct"), "4x4x4 large, 3 counters");
	EXPECT(!strcmp(coll_alltoall_default(&s444, mn, 64, 4096, 128), "direct"), "4x4x4 large, 128 counters");
	EXPECT(!strcmp(coll_alltoall_default(&s444, mn, 64, 16, 0), "torus"), "4x4x4 small");
	/* 10 cores on 4 nodes (1..4): small blocks go around the ring */
	static const uint32_t per[] = {1, 2, 3, 4};
	uint32_t *m10 = nodes_of(per, 4, &p);
	EXPECT(!strcmp(coll_alltoall_default(&s4, m10, p, 64, 0), "ring"), "10 cores small");
	EXPECT(!strcmp(coll_alltoall_default(&s4, m10, p, 1024, 0), "direct"), "10 cores large");
	free(m10);
	/* 60 members on a 1-D torus: small blocks, mesh2d */
	struct torus_shape s60 = shape_of("60");
	EXPECT(!strcmp(coll_alltoall_default(&s60, mn, 60, 16, 0), "mesh2d"), "60 small");
	/* what the default picks always fits */
	coll_plan_t *pl;
	EXPECT(coll_alltoall_plan(NULL, &s444, NULL, mn, 64, 8, &pl) == 0 && !strcmp(coll_plan_algo(pl), "torus"), "plan NULL");
	coll_plan_free(pl);
}

int main(void)
{
	static const struct cunit_case cases[] = {
		CUNIT_CASE(test_deliver_1d),     CUNIT_CASE(test_deliver_2d),     CUNIT_CASE(test_deliver_3d_4d),
		CUNIT_CASE(test_deliver_core_maps), CUNIT_CASE(test_deliver_every_p), CUNIT_CASE(test_fig3),
		CUNIT_CASE(test_theorem1_random), CUNIT_CASE(test_matchings),     CUNIT_CASE(test_round_counts),
		CUNIT_CASE(test_bounds), CUNIT_CASE(test_default_rule), CUNIT_CASE(test_direct_parts),
		CUNIT_CASE(test_alltoallv_plans), CUNIT_CASE(test_inplace_switch)};
	static const struct cunit_suite all[] = {{"alltoall.plans", cases, CUNIT_COUNT(cases)}};
	return cunit_main(all, CUNIT_COUNT(all));
}
