/*
 * Unit tests of the torus/ layer: shapes and coordinates, neighbours, minimal
 * ring offsets, the dimension-order route table (followed hop by hop), hints,
 * machine parameters, wire sizes, the closed-form transfer model against an
 * event simulation, the SPSC link FIFO and the per-link time charge.
 *
 * Expected values are derived independently in the test (brute force, own
 * tables, own simulation), never copied from the library's output.
 */
#include "cunit_main.h"
#include "torus/machine.h"
#include "../torus/torus_internal.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ------------------------------------------------------------ helpers */

/* Machine shapes every test runs over: 1-D to 6-D, sizes 1, 2, odd, even. */
struct shape_case {
	const char *text;
	uint32_t ndims;
	uint32_t dims[TORUS_MAX_DIMS];
};

static const struct shape_case shapes[] = {
	{"1", 1, {1}},
	{"2", 1, {2}},
	{"3", 1, {3}},
	{"8", 1, {8}},
	{"16", 1, {16}},
	{"4x4", 2, {4, 4}},
	{"5x2", 2, {5, 2}},
	{"1x1", 2, {1, 1}},
	{"2x2x2", 3, {2, 2, 2}},
	{"3x5x7", 3, {3, 5, 7}},
	{"4x4x4", 3, {4, 4, 4}},
	{"6x1x4", 3, {6, 1, 4}},
	{"2x2x2x2x2", 5, {2, 2, 2, 2, 2}},
	{"2x3x2x2x3x2", 6, {2, 3, 2, 2, 3, 2}},
	{"1x4x1", 3, {1, 4, 1}},
};
#define NSHAPES CUNIT_COUNT(shapes)

static uint32_t case_nnodes(const struct shape_case *c)
{
	uint32_t n = 1;
	for (uint32_t d = 0; d < c->ndims; d++)
		n *= c->dims[d];
	return n;
}

static bool get_shape(const struct shape_case *c, struct torus_shape *s)
{
	char err[256] = "";
	int rc = torus_shape_parse(c->text, s, err, sizeof(err));
	return EXPECT(rc == 0, "torus_shape_parse(\"%s\") = %d (%s)", c->text, rc, err);
}

/* Own coordinate arithmetic: dimension 0 varies fastest. */
static void my_coords(const struct shape_case *c, uint32_t rank, uint32_t *co)
{
	for (uint32_t d = 0; d < c->ndims; d++) {
		co[d] = rank % c->dims[d];
		rank /= c->dims[d];
	}
}

/* Brute-force ring distances: walk the ring one step at a time. */
static uint32_t walk_plus(uint32_t n, uint32_t a, uint32_t b)
{
	uint32_t k = 0, c = a;
	while (c != b) {
		c = c + 1 == n ? 0 : c + 1;
		k++;
	}
	return k;
}
static uint32_t walk_minus(uint32_t n, uint32_t a, uint32_t b)
{
	uint32_t k = 0, c = a;
	while (c != b) {
		c = c == 0 ? n - 1 : c - 1;
		k++;
	}
	return k;
}

/* -------------------------------------------------------------- shape */

static void test_shape_parse_good(void)
{
	for (size_t i = 0; i < NSHAPES; i++) {
		const struct shape_case *c = &shapes[i];
		struct torus_shape s;
		char buf[128];
		if (!get_shape(c, &s))
			continue;
		EXPECT(s.ndims == c->ndims, "%s: ndims %u, expected %u", c->text, s.ndims, c->ndims);
		uint32_t stride = 1;
		for (uint32_t d = 0; d < c->ndims && d < s.ndims; d++) {
			EXPECT(s.dims[d] == c->dims[d], "%s: dims[%u] = %u, expected %u", c->text, d, s.dims[d],
			       c->dims[d]);
			EXPECT(s.stride[d] == stride, "%s: stride[%u] = %u, expected %u", c->text, d, s.stride[d],
			       stride);
			stride *= c->dims[d];
		}
		EXPECT(s.nnodes == case_nnodes(c), "%s: nnodes %u, expected %u", c->text, s.nnodes,
		       case_nnodes(c));
		torus_shape_format(&s, buf, sizeof(buf));
		EXPECT(strcmp(buf, c->text) == 0, "format of %s gave \"%s\"", c->text, buf);

		/* torus_shape_init from the same sizes gives the same shape */
		struct torus_shape s2;
		char err[256] = "";
		int rc = torus_shape_init(&s2, c->ndims, c->dims, err, sizeof(err));
		EXPECT(rc == 0 && memcmp(&s, &s2, sizeof(s)) == 0, "torus_shape_init(%s) = %d (%s) differs",
		       c->text, rc, err);
	}

	/* more spellings and the extremes */
	struct {
		const char *text, *canon;
		uint32_t nnodes;
	} more[] = {
		{"4X4", "4x4", 16},
		{"4096", "4096", 4096},
		{"4096x16", "4096x16", 65536},
		{"2x2x2x2x2x2", "2x2x2x2x2x2", 64},
		{"1x1x1x1x1x1", "1x1x1x1x1x1", 1},
		{"16x16x16x16", "16x16x16x16", 65536},
	};
	for (size_t i = 0; i < CUNIT_COUNT(more); i++) {
		struct torus_shape s;
		char err[256] = "", buf[128];
		int rc = torus_shape_parse(more[i].text, &s, err, sizeof(err));
		if (!EXPECT(rc == 0, "torus_shape_parse(\"%s\") = %d (%s)", more[i].text, rc, err))
			continue;
		EXPECT(s.nnodes == more[i].nnodes, "%s: nnodes %u, expected %u", more[i].text, s.nnodes,
		       more[i].nnodes);
		torus_shape_format(&s, buf, sizeof(buf));
		EXPECT(strcmp(buf, more[i].canon) == 0, "format of %s gave \"%s\"", more[i].text, buf);
		/* round trip through the formatted text */
		struct torus_shape s2;
		rc = torus_shape_parse(buf, &s2, err, sizeof(err));
		EXPECT(rc == 0 && memcmp(&s, &s2, sizeof(s)) == 0, "reparse of \"%s\" differs", buf);
	}
}

static void test_shape_parse_bad(void)
{
	static const char *bad[] = {
		"", "0", "4x0", "0x4", "-4", "+4", "4x", "x4", "4xx4", "4y4", "4x4 ", " 4", "4,4", "1x1x1x1x1x1x1",
		"2x2x2x2x2x2x2", "4097", "4096x4096", "99999999999999999999", "4294967297", "18446744073709551617",
		"16x16x16x16x2", /* 131072 nodes */
		"abc",
	};
	for (size_t i = 0; i < CUNIT_COUNT(bad); i++) {
		struct torus_shape s;
		char err[256];
		memset(err, 0, sizeof(err));
		int rc = torus_shape_parse(bad[i], &s, err, sizeof(err));
		EXPECT(rc == -EINVAL, "torus_shape_parse(\"%s\") = %d, expected -EINVAL", bad[i], rc);
		EXPECT(err[0] != '\0', "torus_shape_parse(\"%s\"): empty error message", bad[i]);
	}
	/* NULL text */
	{
		struct torus_shape s;
		char err[256] = "";
		int rc = torus_shape_parse(NULL, &s, err, sizeof(err));
		EXPECT(rc == -EINVAL && err[0], "torus_shape_parse(NULL) = %d (%s)", rc, err);
	}
	/* torus_shape_init validates like the parser */
	{
		struct torus_shape s;
		char err[256] = "";
		uint32_t zero[2] = {4, 0}, big[1] = {4097}, seven[7] = {1, 1, 1, 1, 1, 1, 1};
		EXPECT(torus_shape_init(&s, 2, zero, err, sizeof(err)) == -EINVAL && err[0], "init 4x0 accepted");
		err[0] = '\0';
		EXPECT(torus_shape_init(&s, 1, big, err, sizeof(err)) == -EINVAL && err[0], "init 4097 accepted");
		err[0] = '\0';
		EXPECT(torus_shape_init(&s, 7, seven, err, sizeof(err)) == -EINVAL && err[0], "init 7 dims accepted");
		err[0] = '\0';
		EXPECT(torus_shape_init(&s, 0, seven, err, sizeof(err)) == -EINVAL && err[0], "init 0 dims accepted");
	}
}

/* ------------------------------------------------- coordinates, neighbours */

static void test_coords_roundtrip(void)
{
	for (size_t i = 0; i < NSHAPES; i++) {
		const struct shape_case *c = &shapes[i];
		struct torus_shape s;
		if (!get_shape(c, &s))
			continue;
		uint32_t odo[TORUS_MAX_DIMS] = {0};
		for (uint32_t r = 0; r < s.nnodes; r++) {
			uint32_t co[TORUS_MAX_DIMS], mine[TORUS_MAX_DIMS];
			torus_rank_to_coords(&s, r, co);
			my_coords(c, r, mine);
			bool same = true, odo_same = true;
			for (uint32_t d = 0; d < c->ndims; d++) {
				same = same && co[d] == mine[d];
				odo_same = odo_same && odo[d] == mine[d];
			}
			EXPECT(same, "%s: rank %u has wrong coordinates", c->text, r);
			EXPECT(odo_same, "%s: rank %u is not in dimension-0-fastest order", c->text, r);
			uint32_t back = torus_coords_to_rank(&s, co);
			EXPECT(back == r, "%s: coords of rank %u map back to %u", c->text, r, back);
			back = torus_coords_to_rank(&s, odo);
			EXPECT(back == r, "%s: odometer coords #%u map to rank %u", c->text, r, back);
			for (uint32_t d = 0; d < c->ndims; d++) {
				if (++odo[d] < c->dims[d])
					break;
				odo[d] = 0;
			}
		}
	}
}

static void test_neighbors(void)
{
	for (size_t i = 0; i < NSHAPES; i++) {
		const struct shape_case *c = &shapes[i];
		struct torus_shape s;
		if (!get_shape(c, &s))
			continue;
		for (uint32_t r = 0; r < s.nnodes; r++) {
			uint32_t co[TORUS_MAX_DIMS];
			my_coords(c, r, co);
			for (uint32_t d = 0; d < c->ndims; d++) {
				uint32_t n = c->dims[d];
				EXPECT(torus_dim_has_links(&s, d) == (n > 1), "%s: dim %u has_links wrong", c->text, d);
				for (int dir = 0; dir < 2; dir++) {
					uint32_t nb = torus_neighbor(&s, r, d, (enum torus_dir)dir);
					if (!EXPECT(nb < s.nnodes, "%s: neighbour of %u out of range (%u)", c->text, r, nb))
						continue;
					uint32_t nco[TORUS_MAX_DIMS];
					my_coords(c, nb, nco);
					uint32_t want = dir == TORUS_PLUS ? (co[d] + 1) % n : (co[d] + n - 1) % n;
					uint32_t ndiff = 0;
					for (uint32_t e = 0; e < c->ndims; e++)
						ndiff += nco[e] != co[e];
					EXPECT(nco[d] == want, "%s: neighbour of %u along %u%c has coord %u, want %u", c->text,
					       r, d, dir ? '-' : '+', nco[d], want);
					EXPECT(ndiff == (n > 1 ? 1u : 0u), "%s: neighbour of %u along %u%c differs in %u dims",
					       c->text, r, d, dir ? '-' : '+', ndiff);
					if (n == 1)
						EXPECT(nb == r, "%s: size-1 dim %u: neighbour of %u is %u", c->text, d, r, nb);
					uint32_t back = torus_neighbor(&s, nb, d, dir == TORUS_PLUS ? TORUS_MINUS : TORUS_PLUS);
					EXPECT(back == r, "%s: %u -> %u along %u%c and back gives %u", c->text, r, nb, d,
					       dir ? '-' : '+', back);
				}
			}
		}
	}
}

/* --------------------------------------------------------- ring delta */

static void check_delta(uint32_t n, uint32_t a, uint32_t b)
{
	uint32_t fwd = walk_plus(n, a, b), bwd = walk_minus(n, a, b);
	uint32_t dist = fwd < bwd ? fwd : bwd;
	int32_t delta = torus_ring_delta(n, a, b);
	uint32_t mag = (uint32_t)(delta < 0 ? -delta : delta);

	EXPECT(mag == dist, "ring_delta(%u,%u,%u) = %d, minimal distance is %u", n, a, b, delta, dist);
	int64_t landed = (((int64_t)a + delta) % (int64_t)n + n) % n;
	EXPECT(landed == b, "ring_delta(%u,%u,%u) = %d lands on %lld", n, a, b, delta, (long long)landed);
	if (fwd < bwd)
		EXPECT(delta > 0, "ring_delta(%u,%u,%u) = %d, PLUS is shorter", n, a, b, delta);
	else if (bwd < fwd)
		EXPECT(delta < 0, "ring_delta(%u,%u,%u) = %d, MINUS is shorter", n, a, b, delta);
	else if (dist > 0) /* tie: n even, distance n/2 */
		EXPECT(a % 2 == 0 ? delta > 0 : delta < 0, "ring_delta(%u,%u,%u) = %d: tie from %s coordinate goes %s",
		       n, a, b, delta, a % 2 ? "odd" : "even", a % 2 ? "MINUS" : "PLUS");
	else
		EXPECT(delta == 0, "ring_delta(%u,%u,%u) = %d, expected 0", n, a, b, delta);
}

static void test_ring_delta(void)
{
	for (uint32_t n = 1; n <= 12; n++)
		for (uint32_t a = 0; a < n; a++)
			for (uint32_t b = 0; b < n; b++)
				check_delta(n, a, b);
	/* the largest ring, on a pseudo-random sample plus the ties */
	uint32_t x = 12345;
	for (int k = 0; k < 2000; k++) {
		x = x * 1103515245u + 12345u;
		uint32_t a = (x >> 8) % TORUS_MAX_DIM_SIZE;
		x = x * 1103515245u + 12345u;
		uint32_t b = (x >> 8) % TORUS_MAX_DIM_SIZE;
		check_delta(TORUS_MAX_DIM_SIZE, a, b);
		check_delta(TORUS_MAX_DIM_SIZE, a, (a + TORUS_MAX_DIM_SIZE / 2) % TORUS_MAX_DIM_SIZE);
		check_delta(TORUS_MAX_DIM_SIZE - 1, a % (TORUS_MAX_DIM_SIZE - 1), b % (TORUS_MAX_DIM_SIZE - 1));
	}
}

/* --------------------------------------------------------------- routes */

/* Hint of dimension d in a hints word. */
static uint32_t hint_of(uint16_t hints, uint32_t d) { return (hints >> (2 * d)) & 3u; }

/* Expected hops when following routes with hints, from own brute force. */
static uint32_t expected_hops(const struct shape_case *c, uint32_t a, uint32_t b, uint16_t hints)
{
	uint32_t ca[TORUS_MAX_DIMS], cb[TORUS_MAX_DIMS], h = 0;
	my_coords(c, a, ca);
	my_coords(c, b, cb);
	for (uint32_t d = 0; d < c->ndims; d++) {
		uint32_t n = c->dims[d];
		uint32_t fwd = walk_plus(n, ca[d], cb[d]), bwd = walk_minus(n, ca[d], cb[d]);
		uint32_t hd = hint_of(hints, d);
		h += hd == TORUS_HINT_PLUS ? fwd : hd == TORUS_HINT_MINUS ? bwd : (fwd < bwd ? fwd : bwd);
	}
	return h;
}

/*
 * Follow the route from src to dst hop by hop through the route tables and
 * check dimension order, one direction per dimension, at most one wrap per
 * dimension, forced directions and the hop count. Returns false on failure.
 */
static bool follow_route(const struct shape_case *c, const struct torus_shape *s, const uint8_t *tables,
			 uint32_t src, uint32_t dst, uint16_t hints)
{
	uint32_t cur = src, hops = 0, limit = 0;
	int lastdim = -1;
	int dirs[TORUS_MAX_DIMS];
	uint32_t wraps[TORUS_MAX_DIMS] = {0};
	bool ok = true;

	for (uint32_t d = 0; d < c->ndims; d++) {
		dirs[d] = -1;
		limit += c->dims[d];
	}
	while (cur != dst) {
		uint8_t e = tables[(size_t)cur * s->nnodes + dst];
		if (!EXPECT(e != TORUS_ROUTE_LOCAL, "%s: route %u->%u: node %u says LOCAL", c->text, src, dst, cur))
			return false;
		uint32_t link = torus_route_apply_hints(e, hints);
		uint32_t dim = link >> 1, dir = link & 1u;
		if (!EXPECT(dim < c->ndims && c->dims[dim] > 1, "%s: route %u->%u: node %u uses link %u (no such link)",
			    c->text, src, dst, cur, link))
			return false;
		ok &= EXPECT((int)dim >= lastdim, "%s: route %u->%u: dim %u after dim %d (not dimension order)",
			     c->text, src, dst, dim, lastdim);
		ok &= EXPECT(dirs[dim] < 0 || dirs[dim] == (int)dir,
			     "%s: route %u->%u: direction changes within dim %u at node %u", c->text, src, dst, dim, cur);
		uint32_t hd = hint_of(hints, dim);
		if (hd == TORUS_HINT_PLUS || hd == TORUS_HINT_MINUS)
			ok &= EXPECT(dir == (hd == TORUS_HINT_PLUS ? TORUS_PLUS : TORUS_MINUS),
				     "%s: route %u->%u hints %#x: dim %u goes %c against the hint", c->text, src, dst,
				     hints, dim, dir ? '-' : '+');
		dirs[dim] = (int)dir;
		lastdim = (int)dim;
		uint32_t co[TORUS_MAX_DIMS];
		my_coords(c, cur, co);
		if (torus_hop_is_wrap(c->dims[dim], co[dim], (enum torus_dir)dir))
			wraps[dim]++;
		/* independent check of the wrap predicate */
		bool wrap_mine = dir == TORUS_PLUS ? co[dim] + 1 == c->dims[dim] : co[dim] == 0;
		ok &= EXPECT(wrap_mine == (bool)torus_hop_is_wrap(c->dims[dim], co[dim], (enum torus_dir)dir),
			     "torus_hop_is_wrap(%u,%u,%u) wrong", c->dims[dim], co[dim], dir);
		cur = torus_neighbor(s, cur, dim, (enum torus_dir)dir);
		hops++;
		if (!EXPECT(hops <= limit, "%s: route %u->%u hints %#x: no arrival after %u hops", c->text, src, dst,
			    hints, hops))
			return false;
	}
	uint32_t want = expected_hops(c, src, dst, hints);
	ok &= EXPECT(hops == want, "%s: route %u->%u hints %#x took %u hops, expected %u", c->text, src, dst, hints,
		     hops, want);
	if (hints == 0) {
		uint32_t th = torus_hops(s, src, dst);
		ok &= EXPECT(th == want, "%s: torus_hops(%u,%u) = %u, minimal is %u", c->text, src, dst, th, want);
	}
	for (uint32_t d = 0; d < c->ndims; d++)
		ok &= EXPECT(wraps[d] <= 1, "%s: route %u->%u hints %#x wraps %u times in dim %u", c->text, src, dst,
			     hints, wraps[d], d);
	ok &= EXPECT(tables[(size_t)dst * s->nnodes + dst] == TORUS_ROUTE_LOCAL, "%s: table of %u: self not LOCAL",
		     c->text, dst);
	return ok;
}

static uint8_t *all_tables(const struct torus_shape *s)
{
	uint8_t *t = malloc((size_t)s->nnodes * s->nnodes);
	if (!t)
		return NULL;
	/* poison, so an entry the library forgets to write is caught */
	memset(t, 0xA5, (size_t)s->nnodes * s->nnodes);
	for (uint32_t r = 0; r < s->nnodes; r++)
		torus_route_table(s, r, t + (size_t)r * s->nnodes);
	return t;
}

static void test_route_minimal(void)
{
	for (size_t i = 0; i < NSHAPES; i++) {
		const struct shape_case *c = &shapes[i];
		struct torus_shape s;
		if (!get_shape(c, &s))
			continue;
		uint8_t *t = all_tables(&s);
		if (!EXPECT(t != NULL, "out of memory"))
			continue;
		for (uint32_t src = 0; src < s.nnodes; src++)
			for (uint32_t dst = 0; dst < s.nnodes; dst++)
				follow_route(c, &s, t, src, dst, 0);
		free(t);
	}
}

static void test_route_hints(void)
{
	/* the hint helpers themselves */
	uint16_t hw = 0;
	for (uint32_t d = 0; d < TORUS_MAX_DIMS; d++)
		hw = torus_hint_set(hw, d, d % 3);
	for (uint32_t d = 0; d < TORUS_MAX_DIMS; d++)
		EXPECT(hint_of(hw, d) == d % 3, "torus_hint_set: dim %u reads %u", d, hint_of(hw, d));
	hw = torus_hint_set(hw, 2, TORUS_HINT_MIN);
	EXPECT(hint_of(hw, 2) == 0 && hint_of(hw, 1) == 1 && hint_of(hw, 3) == 0 && hint_of(hw, 4) == 1,
	       "torus_hint_set clearing dim 2 disturbed others (%#x)", hw);
	for (uint32_t d = 0; d < TORUS_MAX_DIMS; d++)
		for (uint32_t dir = 0; dir < 2; dir++) {
			uint32_t link = 2 * d + dir;
			EXPECT(torus_route_apply_hints(link, 0) == link, "no hints changed link %u", link);
			EXPECT(torus_route_apply_hints(link, torus_hint_set(0, d, TORUS_HINT_PLUS)) == 2 * d,
			       "PLUS hint on link %u", link);
			EXPECT(torus_route_apply_hints(link, torus_hint_set(0, d, TORUS_HINT_MINUS)) == 2 * d + 1,
			       "MINUS hint on link %u", link);
			uint32_t other = (d + 1) % TORUS_MAX_DIMS;
			EXPECT(torus_route_apply_hints(link, torus_hint_set(0, other, TORUS_HINT_MINUS)) == link,
			       "hint on dim %u changed link %u", other, link);
		}

	for (size_t i = 0; i < NSHAPES; i++) {
		const struct shape_case *c = &shapes[i];
		struct torus_shape s;
		if (!get_shape(c, &s))
			continue;
		uint8_t *t = all_tables(&s);
		if (!EXPECT(t != NULL, "out of memory"))
			continue;
		uint16_t sets[2 * TORUS_MAX_DIMS + 3];
		size_t nsets = 0;
		uint16_t allp = 0, allm = 0, alt = 0;
		for (uint32_t d = 0; d < c->ndims; d++) {
			sets[nsets++] = torus_hint_set(0, d, TORUS_HINT_PLUS);
			sets[nsets++] = torus_hint_set(0, d, TORUS_HINT_MINUS);
			allp = torus_hint_set(allp, d, TORUS_HINT_PLUS);
			allm = torus_hint_set(allm, d, TORUS_HINT_MINUS);
			alt = torus_hint_set(alt, d, d % 2 ? TORUS_HINT_MINUS : TORUS_HINT_PLUS);
		}
		sets[nsets++] = allp;
		sets[nsets++] = allm;
		sets[nsets++] = alt;
		for (size_t h = 0; h < nsets; h++)
			for (uint32_t src = 0; src < s.nnodes; src++)
				for (uint32_t dst = 0; dst < s.nnodes; dst++)
					follow_route(c, &s, t, src, dst, sets[h]);
		free(t);
	}
}

/* ----------------------------------------------------------- parameters */

static void test_params_defaults(void)
{
	struct torus_params p;
	char err[256] = "";
	memset(&p, 0x5A, sizeof(p));
	torus_params_default(&p);
	EXPECT(p.link_bw == 425000000ull, "link_bw default %llu", (unsigned long long)p.link_bw);
	EXPECT(p.hop_latency_ps == 50000ull, "hop_latency default %llu", (unsigned long long)p.hop_latency_ps);
	EXPECT(p.ack_overhead == 14, "ack_overhead default %u", p.ack_overhead);
	EXPECT(p.header_bytes == 16, "header default %u", p.header_bytes);
	EXPECT(p.chunk_bytes == 32, "chunk default %u", p.chunk_bytes);
	EXPECT(p.max_packet == 256, "max_packet default %u", p.max_packet);
	EXPECT(p.fifo_slots == 64, "fifo_slots default %u", p.fifo_slots);
	EXPECT(p.inj_slots == 64, "inj_slots default %u", p.inj_slots);
	EXPECT(p.rx_slots == 128, "rx_slots default %u", p.rx_slots);
	EXPECT(torus_params_payload(&p) == TORUS_MAX_PAYLOAD, "default payload %u", torus_params_payload(&p));
	int rc = torus_params_check(&p, err, sizeof(err));
	EXPECT(rc == 0, "torus_params_check(defaults) = %d (%s)", rc, err);

	/* help and JSON name every parameter */
	FILE *f = tmpfile();
	if (EXPECT(f != NULL, "tmpfile failed")) {
		char text[8192];
		torus_params_help(f);
		torus_params_json(&p, f, "  ");
		rewind(f);
		size_t n = fread(text, 1, sizeof(text) - 1, f);
		text[n] = '\0';
		fclose(f);
		static const char *names[] = {"link_bw",    "hop_latency", "ack_overhead", "header", "chunk",
					      "max_packet", "fifo_slots",  "inj_slots",    "rx_slots"};
		for (size_t i = 0; i < CUNIT_COUNT(names); i++)
			EXPECT(strstr(text, names[i]) != NULL, "help/json lack %s", names[i]);
		EXPECT(strstr(text, "425000000") != NULL, "json lacks the bandwidth value");
	}
}

static void test_params_set_good(void)
{
	struct {
		const char *assign;
		size_t off;
		int is64;
		uint64_t want;
	} good[] = {
		{"link_bw=1GB/s", offsetof(struct torus_params, link_bw), 1, 1000000000ull},
		{"link_bw=1MiB/s", offsetof(struct torus_params, link_bw), 1, 1048576ull},
		{"link_bw=425MB/s", offsetof(struct torus_params, link_bw), 1, 425000000ull},
		{"link_bw=2KiB/s", offsetof(struct torus_params, link_bw), 1, 2048ull},
		{"link_bw=1.5GB/s", offsetof(struct torus_params, link_bw), 1, 1500000000ull},
		{"link_bw=5000B/s", offsetof(struct torus_params, link_bw), 1, 5000ull},
		{"hop_latency=1us", offsetof(struct torus_params, hop_latency_ps), 1, 1000000ull},
		{"hop_latency=250ps", offsetof(struct torus_params, hop_latency_ps), 1, 250ull},
		{"hop_latency=50ns", offsetof(struct torus_params, hop_latency_ps), 1, 50000ull},
		{"hop_latency=0ps", offsetof(struct torus_params, hop_latency_ps), 1, 0ull},
		{"hop_latency=2ms", offsetof(struct torus_params, hop_latency_ps), 1, 2000000000ull},
		{"fifo_slots=4", offsetof(struct torus_params, fifo_slots), 0, 4},
		{"fifo_slots=1", offsetof(struct torus_params, fifo_slots), 0, 1},
		{"inj_slots=16", offsetof(struct torus_params, inj_slots), 0, 16},
		{"rx_slots=256", offsetof(struct torus_params, rx_slots), 0, 256},
		{"ack_overhead=0", offsetof(struct torus_params, ack_overhead), 0, 0},
		{"ack_overhead=20B", offsetof(struct torus_params, ack_overhead), 0, 20},
		{"chunk=64", offsetof(struct torus_params, chunk_bytes), 0, 64},
		{"max_packet=128", offsetof(struct torus_params, max_packet), 0, 128},
		/* issue 12: b is bits, B bytes; every unit spelled exactly as listed */
		{"link_bw=425Mb/s", offsetof(struct torus_params, link_bw), 1, 53125000ull},
		{"link_bw=1Gb/s", offsetof(struct torus_params, link_bw), 1, 125000000ull},
		{"link_bw=8000b/s", offsetof(struct torus_params, link_bw), 1, 1000ull},
		{"link_bw=8kb/s", offsetof(struct torus_params, link_bw), 1, 1000ull},
		{"link_bw=8Kb/s", offsetof(struct torus_params, link_bw), 1, 1000ull},
		{"link_bw=2kB/s", offsetof(struct torus_params, link_bw), 1, 2000ull},
		{"link_bw=2KB/s", offsetof(struct torus_params, link_bw), 1, 2000ull},
		{"link_bw=1GiB/s", offsetof(struct torus_params, link_bw), 1, 1073741824ull},
		{"link_bw=1e9B/s", offsetof(struct torus_params, link_bw), 1, 1000000000ull},
		{"link_bw=1000GB/s", offsetof(struct torus_params, link_bw), 1, 1000000000000ull}, /* the maximum */
		{"hop_latency=1s", offsetof(struct torus_params, hop_latency_ps), 1, 1000000000000ull},
		{"hop_latency=1.5e3ns", offsetof(struct torus_params, hop_latency_ps), 1, 1500000ull},
		{"hop_latency=2E-3us", offsetof(struct torus_params, hop_latency_ps), 1, 2000ull},
		{"inj_overhead=007ns", offsetof(struct torus_params, inj_overhead_ps), 1, 7000ull},
		{"fifo_slots=0016", offsetof(struct torus_params, fifo_slots), 0, 16},
		{"ack_overhead=4096", offsetof(struct torus_params, ack_overhead), 0, 4096},
	};
	for (size_t i = 0; i < CUNIT_COUNT(good); i++) {
		struct torus_params p, before;
		char err[256] = "";
		torus_params_default(&p);
		before = p;
		int rc = torus_params_set(&p, good[i].assign, err, sizeof(err));
		if (!EXPECT(rc == 0, "torus_params_set(\"%s\") = %d (%s)", good[i].assign, rc, err))
			continue;
		uint64_t got = good[i].is64 ? *(uint64_t *)((char *)&p + good[i].off)
					    : *(uint32_t *)((char *)&p + good[i].off);
		EXPECT(got == good[i].want, "\"%s\" gave %llu, expected %llu", good[i].assign, (unsigned long long)got,
		       (unsigned long long)good[i].want);
		/* nothing else changed */
		size_t width = good[i].is64 ? 8 : 4;
		memcpy((char *)&p + good[i].off, (char *)&before + good[i].off, width);
		EXPECT(memcmp(&p, &before, sizeof(p)) == 0, "\"%s\" changed another field", good[i].assign);
	}
}

static void test_params_set_bad(void)
{
	static const char *bad[] = {
		"nosuch=1", "link_bw", "=3", "link_bw=fast", "link_bw=425", "link_bw=", "link_bw=-1GB/s",
		"link_bw=1TB/s", "link_bw=1B/s", /* below the minimum */
		"fifo_slots=0", "fifo_slots=1.5", "fifo_slots=4x", "fifo_slots=65537", "hop_latency=-1ns",
		"hop_latency=5", "hop_latency=5parsecs", "header=32", "max_packet=512", "chunk=0", "link_bw=nanGB/s",
		"hop_latency=infns", "link_bw_extra=1GB/s", "link=1GB/s",
		/* issue 12: decimal only (no hex, hex float, sign, space, inf, nan) */
		"fifo_slots=0x10", "fifo_slots=0x1p4", "hop_latency=0x32ns", "link_bw=0x1p30B/s", "fifo_slots=+4",
		"fifo_slots= 4", "fifo_slots=4 ", "hop_latency=+5ns", "hop_latency= 5ns", "fifo_slots=4e0",
		"fifo_slots=16.0", "fifo_slots=inf", "hop_latency=nanns", "hop_latency=INFns", "hop_latency=.5ns",
		"hop_latency=5.ns", "hop_latency=5ens", "hop_latency=5e+ns", "hop_latency=5 ns",
		/* issue 12: case matters: b bits, B bytes; ms milli, Ms nothing */
		"hop_latency=50NS", "hop_latency=1Ms", "hop_latency=1MS", "hop_latency=1S", "link_bw=1gb/s",
		"link_bw=425mb/s", "link_bw=1GB/S", "link_bw=1kib/s", "ack_overhead=20b", "link_bw=1TB/s",
		/* issue 12: overflow is an error, never a wrapped or saturated value */
		"hop_latency=1e30ns", "hop_latency=1e7s", "hop_latency=1e400ns", "hop_latency=1e-400ns",
		"fifo_slots=99999999999999999999999", "ack_overhead=18446744073709551617", "link_bw=1001GB/s",
	};
	for (size_t i = 0; i < CUNIT_COUNT(bad); i++) {
		struct torus_params p, before;
		char err[256];
		memset(err, 0, sizeof(err));
		torus_params_default(&p);
		before = p;
		int rc = torus_params_set(&p, bad[i], err, sizeof(err));
		EXPECT(rc == -EINVAL, "torus_params_set(\"%s\") = %d, expected -EINVAL", bad[i], rc);
		EXPECT(err[0] != '\0', "torus_params_set(\"%s\"): empty error message", bad[i]);
		EXPECT(memcmp(&p, &before, sizeof(p)) == 0, "failed torus_params_set(\"%s\") changed the parameters",
		       bad[i]);
	}
	/* a unit in the wrong case is named, with the units there are */
	{
		struct torus_params p;
		char err[256] = "";
		torus_params_default(&p);
		torus_params_set(&p, "hop_latency=50NS", err, sizeof(err));
		EXPECT(strstr(err, "'NS'") && strstr(err, "ns"), "error for 50NS: %s", err);
		torus_params_set(&p, "fifo_slots=0x10", err, sizeof(err));
		EXPECT(strstr(err, "0x10") && strstr(err, "decimal"), "error for 0x10: %s", err);
	}
	/* the unknown name is named in the message */
	{
		struct torus_params p;
		char err[256] = "";
		torus_params_default(&p);
		torus_params_set(&p, "nosuch=1", err, sizeof(err));
		EXPECT(strstr(err, "nosuch") != NULL, "error for nosuch=1 does not name it: %s", err);
	}
}

static void test_params_check(void)
{
	struct {
		const char *assign;
		int ok;
	} cases[] = {
		{"max_packet=250", 0},  {"max_packet=100", 0},   {"chunk=48", 0},      {"fifo_slots=1", 1},
		{"fifo_slots=65536", 1}, {"max_packet=128", 1},  {"chunk=64", 1},      {"max_packet=32", 1},
		{"chunk=256", 1},
	};
	for (size_t i = 0; i < CUNIT_COUNT(cases); i++) {
		struct torus_params p;
		char err[256] = "";
		torus_params_default(&p);
		int rc = torus_params_set(&p, cases[i].assign, err, sizeof(err));
		if (!EXPECT(rc == 0, "torus_params_set(\"%s\") = %d (%s)", cases[i].assign, rc, err))
			continue;
		memset(err, 0, sizeof(err));
		rc = torus_params_check(&p, err, sizeof(err));
		if (cases[i].ok)
			EXPECT(rc == 0, "torus_params_check after \"%s\" = %d (%s)", cases[i].assign, rc, err);
		else
			EXPECT(rc == -EINVAL && err[0], "torus_params_check after \"%s\" = %d (%s), expected -EINVAL",
			       cases[i].assign, rc, err);
	}
	/* a slot count that is not a power of two: refused where it is set,
	 * naming it, and by the check if written into the struct directly */
	static const char *const slots[] = {"fifo_slots=3", "fifo_slots=6", "inj_slots=12", "rx_slots=100"};
	for (size_t i = 0; i < CUNIT_COUNT(slots); i++) {
		struct torus_params p, before;
		char err[256] = "", want[64];
		torus_params_default(&p);
		before = p;
		int rc = torus_params_set(&p, slots[i], err, sizeof(err));
		snprintf(want, sizeof(want), "%.*s: %s is not a power of two", (int)(strchr(slots[i], '=') - slots[i]),
			 slots[i], strchr(slots[i], '=') + 1);
		EXPECT(rc == -EINVAL && strstr(err, want) && !memcmp(&p, &before, sizeof(p)), "torus_params_set(\"%s\") = %d (%s)",
		       slots[i], rc, err);
	}
	struct torus_params p;
	char err[256] = "";
	torus_params_default(&p);
	p.rx_slots = 96;
	EXPECT(torus_params_check(&p, err, sizeof(err)) == -EINVAL && strstr(err, "rx_slots (96)"),
	       "check of rx_slots 96: %s", err);
}

/* ------------------------------------------------------- wire and time */

static uint64_t my_wire(const struct torus_params *p, uint64_t payload)
{
	uint64_t size = p->header_bytes + payload, r = 0;
	while (r < size)
		r += p->chunk_bytes; /* round up to whole chunks */
	return r + p->ack_overhead;
}

/* ceil(wire * 1e12 / bw) from its definition: the least t with t*bw >= wire*1e12. */
static bool ser_is_ceiling(uint64_t t, uint64_t wire, uint64_t bw)
{
	unsigned __int128 need = (unsigned __int128)wire * 1000000000000ull;
	unsigned __int128 have = (unsigned __int128)t * bw;
	return have >= need && (t == 0 || (unsigned __int128)(t - 1) * bw < need);
}

static uint64_t my_ser(uint64_t wire, uint64_t bw)
{
	unsigned __int128 need = (unsigned __int128)wire * 1000000000000ull;
	uint64_t t = (uint64_t)(need / bw);
	if ((unsigned __int128)t * bw < need)
		t++;
	return t;
}

static void test_wire_bytes(void)
{
	struct torus_params p;
	torus_params_default(&p);
	uint32_t spot[] = {0, 1, 16, 17, 240};
	uint32_t want[] = {32 + 14, 32 + 14, 32 + 14, 64 + 14, 256 + 14};
	for (size_t i = 0; i < CUNIT_COUNT(spot); i++) {
		uint32_t w = torus_wire_bytes(&p, spot[i]);
		EXPECT(w == want[i], "wire(%u) = %u, expected %u", spot[i], w, want[i]);
		EXPECT(w == my_wire(&p, spot[i]), "wire(%u) = %u, definition gives %llu", spot[i], w,
		       (unsigned long long)my_wire(&p, spot[i]));
	}
	const char *alts[] = {"chunk=64", "ack_overhead=0", "chunk=1", "chunk=48"};
	for (size_t a = 0; a <= CUNIT_COUNT(alts); a++) {
		char err[256] = "";
		torus_params_default(&p);
		if (a > 0)
			EXPECT(torus_params_set(&p, alts[a - 1], err, sizeof(err)) == 0, "set %s: %s", alts[a - 1], err);
		for (uint32_t pay = 0; pay <= TORUS_MAX_PAYLOAD; pay++) {
			uint32_t w = torus_wire_bytes(&p, pay);
			EXPECT(w == my_wire(&p, pay), "chunk %u ack %u: wire(%u) = %u, expected %llu", p.chunk_bytes,
			       p.ack_overhead, pay, w, (unsigned long long)my_wire(&p, pay));
		}
	}
	for (uint32_t pay = 0; pay <= TORUS_MAX_PAYLOAD; pay++) {
		uint32_t cb = torus_pkt_copy_bytes(pay), want32 = 0;
		while (want32 < TORUS_HDR_BYTES + pay)
			want32 += 32;
		EXPECT(cb == want32, "copy_bytes(%u) = %u, expected %u", pay, cb, want32);
		EXPECT(cb <= TORUS_SLOT_BYTES, "copy_bytes(%u) = %u exceeds the slot", pay, cb);
	}
}

static void test_ser_ps(void)
{
	struct torus_params p;
	torus_params_default(&p);
	/* 270 bytes at 425 MB/s: ceil(270e12 / 425e6) ps */
	uint64_t want = 270000000000000ull / 425000000ull;
	if (want * 425000000ull < 270000000000000ull)
		want++;
	torus_vt_t t = torus_ser_ps(&p, 270);
	EXPECT(t == want, "ser(270) = %llu, expected %llu", (unsigned long long)t, (unsigned long long)want);
	uint64_t bws[] = {425000000ull, 1000000000ull, 1048576ull, 1000ull, 1000000000000ull, 333333333ull};
	for (size_t b = 0; b < CUNIT_COUNT(bws); b++) {
		p.link_bw = bws[b];
		for (uint32_t w = 0; w <= 300; w++) {
			torus_vt_t s = torus_ser_ps(&p, w);
			EXPECT(ser_is_ceiling(s, w, bws[b]), "ser(%u) at %llu B/s = %llu is not the ceiling", w,
			       (unsigned long long)bws[b], (unsigned long long)s);
		}
	}
}

/* ----------------------------------------------------- transfer model */

/* Event simulation of m bytes over h store-and-forward hops from t0. */
static torus_vt_t sim_transfer(const struct torus_params *p, uint64_t m, uint32_t h, torus_vt_t t0)
{
	uint64_t pay = p->max_packet - p->header_bytes;
	uint64_t npk = m == 0 ? 1 : (m + pay - 1) / pay;
	torus_vt_t free_at[16] = {0};
	torus_vt_t done = t0;

	for (uint64_t k = 0; k < npk; k++) {
		uint64_t len = k + 1 < npk ? pay : m - (npk - 1) * pay;
		torus_vt_t ser = my_ser(my_wire(p, len), p->link_bw);
		torus_vt_t ready = t0;
		for (uint32_t j = 0; j < h; j++) {
			torus_vt_t dep = ready > free_at[j] ? ready : free_at[j];
			free_at[j] = dep + ser;
			ready = dep + ser + p->hop_latency_ps;
		}
		done = ready;
	}
	return done;
}

static void test_model_transfer(void)
{
	const char *sets[][3] = {
		{NULL, NULL, NULL},
		{"link_bw=1GB/s", "hop_latency=0ps", NULL},
		{"max_packet=128", "hop_latency=1us", NULL},
		{"chunk=64", "ack_overhead=0", "link_bw=333333333B/s"},
	};
	uint64_t ms[] = {0, 1, 239, 240, 241, 480, 1000, 100000, 111, 112, 113, 12345};
	uint32_t hs[] = {1, 2, 3, 7};
	torus_vt_t t0s[] = {0, 123456789};
	for (size_t si = 0; si < CUNIT_COUNT(sets); si++) {
		struct torus_params p;
		char err[256] = "";
		torus_params_default(&p);
		for (int k = 0; k < 3 && sets[si][k]; k++)
			EXPECT(torus_params_set(&p, sets[si][k], err, sizeof(err)) == 0, "set %s: %s", sets[si][k], err);
		for (size_t mi = 0; mi < CUNIT_COUNT(ms); mi++)
			for (size_t hi = 0; hi < CUNIT_COUNT(hs); hi++)
				for (size_t ti = 0; ti < CUNIT_COUNT(t0s); ti++) {
					torus_vt_t got = torus_model_transfer(&p, ms[mi], hs[hi], t0s[ti]);
					torus_vt_t want = sim_transfer(&p, ms[mi], hs[hi], t0s[ti]);
					EXPECT(got == want, "params #%zu: model(m=%llu, h=%u, t0=%llu) = %llu, simulation %llu",
					       si, (unsigned long long)ms[mi], hs[hi], (unsigned long long)t0s[ti],
					       (unsigned long long)got, (unsigned long long)want);
				}
		EXPECT(torus_model_transfer(&p, 1000, 0, 777) == 777, "h=0 must return t0");
	}
}

/* --------------------------------------------------------- SPSC ring */

struct test_ring {
	void *base;
	struct torus_ring *ring;
	struct torus_ring_view prod, cons;
};

/* Control block at the start of one aligned block, slots right after it.
 * If start != 0 the shared indices begin there (views pick them up). */
static bool ring_make_at(struct test_ring *t, uint32_t n, uint32_t start)
{
	size_t off = sizeof(struct torus_ring);
	size_t bytes = off + torus_ring_bytes(n);
	bytes = (bytes + 63) / 64 * 64;
	t->base = aligned_alloc(64, bytes);
	if (!t->base)
		return false;
	memset(t->base, 0xEE, bytes);
	t->ring = t->base;
	torus_ring_init(t->ring, n, off);
	atomic_store(&t->ring->head, start);
	atomic_store(&t->ring->tail, start);
	torus_ring_view_init(&t->prod, t->ring, t->base, TORUS_RING_PRODUCER);
	torus_ring_view_init(&t->cons, t->ring, t->base, TORUS_RING_CONSUMER);
	return true;
}
static bool ring_make(struct test_ring *t, uint32_t n) { return ring_make_at(t, n, 0); }

static void fill_pkt(struct torus_packet *pkt, struct torus_side *side, uint32_t seq)
{
	pkt->hdr.dest = seq;
	pkt->hdr.len = (uint8_t)(seq % (TORUS_MAX_PAYLOAD + 1));
	pkt->hdr.sw.raw.src = ~seq;
	for (uint32_t i = 0; i < pkt->hdr.len; i++)
		pkt->payload[i] = (uint8_t)(seq * 31u + i);
	side->vt = (torus_vt_t)seq * 1000003ull;
	side->tag = seq ^ 0x5a5a5a5au;
}

static bool pkt_ok(const struct torus_packet *pkt, const struct torus_side *side, uint32_t seq)
{
	if (pkt->hdr.dest != seq || pkt->hdr.len != seq % (TORUS_MAX_PAYLOAD + 1) || pkt->hdr.sw.raw.src != ~seq)
		return false;
	for (uint32_t i = 0; i < pkt->hdr.len; i++)
		if (pkt->payload[i] != (uint8_t)(seq * 31u + i))
			return false;
	return side->vt == (torus_vt_t)seq * 1000003ull && side->tag == (seq ^ 0x5a5a5a5au);
}

/* Producer: reserve, fill, commit; no publish. */
static bool put(struct torus_ring_view *v, uint32_t seq)
{
	struct torus_side *side = NULL;
	struct torus_packet *pkt = torus_ring_reserve(v, &side);
	if (!pkt)
		return false;
	fill_pkt(pkt, side, seq);
	torus_ring_commit(v);
	return true;
}

/* Consumer: peek, check, release; no publish. 1 = right packet, 0 = empty, -1 = wrong. */
static int take(struct torus_ring_view *v, uint32_t seq)
{
	struct torus_side *side = NULL;
	struct torus_packet *pkt = torus_ring_peek(v, &side);
	if (!pkt)
		return 0;
	int ok = pkt_ok(pkt, side, seq) ? 1 : -1;
	torus_ring_release(v);
	return ok;
}

/* One packet, published at once. */
static bool push(struct test_ring *t, uint32_t seq)
{
	if (!put(&t->prod, seq))
		return false;
	torus_ring_publish_head(&t->prod);
	return true;
}
static int pop(struct test_ring *t, uint32_t seq)
{
	int r = take(&t->cons, seq);
	if (r)
		torus_ring_publish_tail(&t->cons);
	return r;
}

static void test_ring_single_thread(void)
{
	uint32_t sizes[] = {1, 2, 4, 8, 32};
	for (size_t si = 0; si < CUNIT_COUNT(sizes); si++) {
		uint32_t n = sizes[si];
		struct test_ring t;
		if (!EXPECT(ring_make(&t, n), "out of memory"))
			continue;
		char *base = t.base;
		EXPECT((char *)t.prod.slot == base + sizeof(struct torus_ring), "n=%u: slots not at base+off", n);
		EXPECT((char *)t.prod.side == base + sizeof(struct torus_ring) + (size_t)n * TORUS_SLOT_BYTES,
		       "n=%u: sideband not after the slots", n);
		EXPECT(t.cons.slot == t.prod.slot && t.cons.side == t.prod.side && t.prod.mask == n - 1 &&
			       t.cons.mask == n - 1,
		       "n=%u: views disagree", n);
		struct torus_side *side;
		EXPECT(torus_ring_peek(&t.cons, &side) == NULL, "n=%u: fresh ring not empty", n);
		EXPECT(torus_ring_count(t.ring) == 0, "n=%u: fresh count %u", n, torus_ring_count(t.ring));

		/* fill to exactly n */
		uint32_t seq = 0;
		for (uint32_t k = 0; k < n; k++) {
			EXPECT(push(&t, seq++), "n=%u: reserve %u of %u failed", n, k + 1, n);
			EXPECT(torus_ring_count(t.ring) == k + 1, "n=%u: count %u after %u pushes", n,
			       torus_ring_count(t.ring), k + 1);
		}
		EXPECT(torus_ring_reserve(&t.prod, &side) == NULL, "n=%u: reserve on a full ring succeeded", n);
		/* FIFO order */
		uint32_t next = 0;
		for (uint32_t k = 0; k < n; k++) {
			int r = pop(&t, next++);
			EXPECT(r == 1, "n=%u: pop %u gave %d", n, k, r);
		}
		EXPECT(pop(&t, next) == 0, "n=%u: ring not empty after popping all", n);

		/* free-running indices across many wraps, varying fill levels */
		uint32_t fill = 0;
		for (uint32_t k = 0; seq < 11 * n + 4; k++) {
			uint32_t want_fill = 1 + (k * 7u) % n; /* 1..n, then drain to half */
			while (fill < want_fill) {
				EXPECT(push(&t, seq++), "n=%u: push at fill %u failed", n, fill);
				fill++;
			}
			while (fill > want_fill / 2) {
				int r = pop(&t, next++);
				EXPECT(r == 1, "n=%u: pop at step %u gave %d", n, k, r);
				fill--;
			}
			EXPECT(torus_ring_count(t.ring) == fill, "n=%u: count %u, expected %u", n,
			       torus_ring_count(t.ring), fill);
		}
		while (fill) {
			EXPECT(pop(&t, next++) == 1, "n=%u: drain failed", n);
			fill--;
		}
		EXPECT(next == seq, "n=%u: popped %u, pushed %u", n, next, seq);
		uint32_t head = atomic_load(&t.ring->head), tail = atomic_load(&t.ring->tail);
		EXPECT(head == seq && tail == seq, "n=%u: indices %u/%u are not free-running counts (%u)", n, head,
		       tail, seq);
		EXPECT(seq >= 10 * n, "n=%u: only %u packets moved", n, seq);
		free(t.base);
	}
}

/* Commits and releases are private to their side until published. */
static void test_ring_publish(void)
{
	uint32_t n = 8;
	struct test_ring t;
	struct torus_side *side;
	if (!EXPECT(ring_make(&t, n), "out of memory"))
		return;
	EXPECT(torus_ring_publish_head(&t.prod) == 0, "publish_head with nothing committed returned nonzero");
	EXPECT(torus_ring_publish_tail(&t.cons) == 0, "publish_tail with nothing released returned nonzero");
	for (uint32_t s = 0; s < 3; s++)
		EXPECT(put(&t.prod, s), "put %u failed", s);
	EXPECT(torus_ring_count(t.ring) == 0, "unpublished commits counted (%u)", torus_ring_count(t.ring));
	EXPECT(torus_ring_peek(&t.cons, &side) == NULL, "consumer saw unpublished commits");
	EXPECT(torus_ring_publish_head(&t.prod) != 0, "publish_head after 3 commits returned 0");
	EXPECT(torus_ring_publish_head(&t.prod) == 0, "second publish_head without commits returned nonzero");
	EXPECT(torus_ring_count(t.ring) == 3, "count %u after publishing 3", torus_ring_count(t.ring));
	EXPECT(atomic_load(&t.ring->head) == 3, "head %u after publishing 3", atomic_load(&t.ring->head));

	/* consumer takes 2 but does not publish: the producer still sees them in use */
	EXPECT(take(&t.cons, 0) == 1 && take(&t.cons, 1) == 1, "take 0,1 failed");
	EXPECT(torus_ring_count(t.ring) == 3 && atomic_load(&t.ring->tail) == 0, "unpublished release visible");
	uint32_t seq = 3;
	while (put(&t.prod, seq))
		seq++;
	EXPECT(seq == n, "producer filled to %u before the consumer published, expected %u", seq, n);
	EXPECT(torus_ring_publish_head(&t.prod) != 0, "publish_head after filling returned 0");
	EXPECT(torus_ring_publish_tail(&t.cons) == 0, "publish_tail reported a waiter nobody registered");
	EXPECT(atomic_load(&t.ring->tail) == 2 && torus_ring_count(t.ring) == n - 2, "tail %u count %u after publish",
	       atomic_load(&t.ring->tail), torus_ring_count(t.ring));
	EXPECT(torus_ring_publish_tail(&t.cons) == 0, "second publish_tail without releases returned nonzero");
	/* the two freed slots are usable now, and order is kept */
	EXPECT(put(&t.prod, seq) && put(&t.prod, seq + 1), "freed slots not reusable");
	seq += 2;
	EXPECT(!put(&t.prod, seq), "ring accepted more than its slots");
	torus_ring_publish_head(&t.prod);
	for (uint32_t s = 2; s < seq; s++)
		EXPECT(take(&t.cons, s) == 1, "packet %u out of order after batching", s);
	EXPECT(take(&t.cons, seq) == 0, "ring not empty");
	torus_ring_publish_tail(&t.cons);
	EXPECT(torus_ring_count(t.ring) == 0, "count %u at the end", torus_ring_count(t.ring));

	/* a view made later starts at the ring's current indices */
	struct torus_ring_view late;
	torus_ring_view_init(&late, t.ring, t.base, TORUS_RING_CONSUMER);
	EXPECT(torus_ring_peek(&late, &side) == NULL, "late consumer view sees old packets");
	EXPECT(push(&t, seq), "push after drain");
	int r = take(&late, seq);
	EXPECT(r == 1, "late consumer view: take gave %d", r);
	free(t.base);
}

/* The 32-bit indices overflow: start both just below 2^32. */
static void test_ring_index_overflow(void)
{
	uint32_t sizes[] = {1, 4, 8};
	for (size_t si = 0; si < CUNIT_COUNT(sizes); si++) {
		uint32_t n = sizes[si];
		struct test_ring t;
		uint32_t start = 0xFFFFFFFFu - 2 * n;
		if (!EXPECT(ring_make_at(&t, n, start), "out of memory"))
			continue;
		uint32_t seq = 0, next = 0;
		for (int round = 0; round < 8; round++) {
			for (uint32_t k = 0; k < n; k++)
				EXPECT(push(&t, seq++), "n=%u round %d: push %u failed near 2^32", n, round, k);
			struct torus_side *side;
			EXPECT(torus_ring_reserve(&t.prod, &side) == NULL, "n=%u round %d: full ring accepted more", n,
			       round);
			EXPECT(torus_ring_count(t.ring) == n, "n=%u round %d: count %u", n, round,
			       torus_ring_count(t.ring));
			for (uint32_t k = 0; k < n; k++)
				EXPECT(pop(&t, next++) == 1, "n=%u round %d: pop %u wrong near 2^32", n, round, k);
			EXPECT(pop(&t, next) == 0, "n=%u round %d: not empty", n, round);
		}
		EXPECT(atomic_load(&t.ring->head) == start + seq, "n=%u: head did not wrap", n);
		free(t.base);
	}
}

struct ring_thread_arg {
	struct test_ring *t;
	uint32_t count;
	uint32_t pbatch, cbatch; /* publish every pbatch commits / cbatch releases */
	uint32_t errors;         /* consumer: packets out of order or corrupted */
	uint32_t first_bad;
	int use_doorbell;        /* producer: mark_full and wait for the consumer's signal */
	_Atomic uint32_t space_signals;
	_Atomic uint32_t lost;   /* producer gave up waiting for a signal */
};

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void *ring_producer(void *p)
{
	struct ring_thread_arg *a = p;
	struct torus_ring_view *v = &a->t->prod;
	uint32_t seen = 0, pending = 0;
	for (uint32_t seq = 0; seq < a->count; seq++) {
		while (!put(v, seq)) {
			/* full: what we committed must be visible before waiting */
			torus_ring_publish_head(v);
			pending = 0;
			if (!a->use_doorbell) {
				sched_yield();
				continue;
			}
			if (torus_ring_mark_full(v))
				continue; /* space appeared meanwhile */
			/* wait for the consumer's "space" signal; a lost one would hang */
			double deadline = now_s() + 20.0;
			while (atomic_load(&a->space_signals) == seen) {
				if (now_s() > deadline) {
					atomic_store(&a->lost, 1);
					return NULL;
				}
				sched_yield();
			}
			seen = atomic_load(&a->space_signals);
		}
		if (++pending >= a->pbatch) {
			torus_ring_publish_head(v);
			pending = 0;
		}
	}
	torus_ring_publish_head(v);
	return NULL;
}

static void *ring_consumer(void *p)
{
	struct ring_thread_arg *a = p;
	struct torus_ring_view *v = &a->t->cons;
	uint32_t pending = 0;
	for (uint32_t seq = 0; seq < a->count;) {
		struct torus_side *side = NULL;
		struct torus_packet *pkt = torus_ring_peek(v, &side);
		if (!pkt) {
			/* empty: hand back what we took before waiting */
			if (torus_ring_publish_tail(v))
				atomic_fetch_add(&a->space_signals, 1);
			pending = 0;
			if (atomic_load(&a->lost))
				return NULL;
			sched_yield();
			continue;
		}
		if (!pkt_ok(pkt, side, seq) && a->errors++ == 0)
			a->first_bad = seq;
		torus_ring_release(v);
		if (++pending >= a->cbatch) {
			if (torus_ring_publish_tail(v))
				atomic_fetch_add(&a->space_signals, 1);
			pending = 0;
		}
		seq++;
	}
	if (torus_ring_publish_tail(v))
		atomic_fetch_add(&a->space_signals, 1);
	return NULL;
}

static void run_two_threads(uint32_t slots, uint32_t count, uint32_t pbatch, uint32_t cbatch, int doorbell)
{
	struct test_ring t;
	struct ring_thread_arg a;
	pthread_t pt, ct;

	if (!EXPECT(ring_make(&t, slots), "out of memory"))
		return;
	memset(&a, 0, sizeof(a));
	a.t = &t;
	a.count = count;
	a.pbatch = pbatch;
	a.cbatch = cbatch;
	a.use_doorbell = doorbell;
	atomic_init(&a.space_signals, 0);
	atomic_init(&a.lost, 0);
	int rc1 = pthread_create(&ct, NULL, ring_consumer, &a);
	int rc2 = pthread_create(&pt, NULL, ring_producer, &a);
	if (rc2 == 0)
		pthread_join(pt, NULL);
	if (rc1 == 0)
		pthread_join(ct, NULL);
	EXPECT(rc1 == 0 && rc2 == 0, "pthread_create failed");
	EXPECT(a.errors == 0, "%u-slot ring (batches %u/%u): %u packets out of order or corrupted (first at seq %u)",
	       slots, pbatch, cbatch, a.errors, a.first_bad);
	EXPECT(atomic_load(&a.lost) == 0, "%u-slot ring (batches %u/%u): producer never got the space doorbell", slots,
	       pbatch, cbatch);
	EXPECT(atomic_load(&t.ring->head) == count && atomic_load(&t.ring->tail) == count,
	       "%u-slot ring: head %u tail %u after %u packets", slots, atomic_load(&t.ring->head),
	       atomic_load(&t.ring->tail), count);
	free(t.base);
}

static void test_ring_two_threads(void)
{
	run_two_threads(4, 200000, 1, 1, 0);
	run_two_threads(4, 200000, 3, 2, 0);
	run_two_threads(1, 50000, 1, 1, 0);
}

static void test_ring_two_threads_doorbell(void)
{
	run_two_threads(2, 100000, 1, 1, 1);
	run_two_threads(4, 100000, 1, 1, 1);
	run_two_threads(8, 100000, 5, 3, 1);
}

static void test_ring_mark_full(void)
{
	uint32_t sizes[] = {1, 4};
	for (size_t si = 0; si < CUNIT_COUNT(sizes); si++) {
		uint32_t n = sizes[si];
		struct test_ring t;
		struct torus_side *side;
		if (!EXPECT(ring_make(&t, n), "out of memory"))
			continue;
		uint32_t seq = 0, next = 0;
		while (push(&t, seq))
			seq++;
		EXPECT(seq == n, "n=%u: %u pushes fit", n, seq);
		EXPECT(torus_ring_mark_full(&t.prod) == 0, "n=%u: mark_full on a full ring says space", n);
		EXPECT(atomic_load(&t.ring->want_space) == 1, "n=%u: mark_full did not set want_space", n);
		EXPECT(torus_ring_reserve(&t.prod, &side) == NULL, "n=%u: still full", n);
		EXPECT(torus_ring_mark_full(&t.prod) == 0, "n=%u: second mark_full while full says space", n);

		/* consumer frees one slot, unpublished: still full for the producer */
		EXPECT(take(&t.cons, next++) == 1, "n=%u: head packet wrong", n);
		EXPECT(torus_ring_mark_full(&t.prod) == 0, "n=%u: unpublished release seen by mark_full", n);
		/* publishing reports the waiter, once */
		EXPECT(torus_ring_publish_tail(&t.cons) == 1, "n=%u: publish_tail after mark_full did not report the waiter",
		       n);
		EXPECT(atomic_load(&t.ring->want_space) == 0, "n=%u: publish_tail did not clear want_space", n);
		if (n > 1) {
			EXPECT(take(&t.cons, next++) == 1, "n=%u: second take", n);
			EXPECT(torus_ring_publish_tail(&t.cons) == 0, "n=%u: second publish_tail reported a waiter again", n);
		}
		/* the producer now sees space */
		EXPECT(torus_ring_reserve(&t.prod, &side) != NULL, "n=%u: no space after release", n);
		EXPECT(push(&t, seq++), "n=%u: push after release", n);
		EXPECT(take(&t.cons, next++) == 1, "n=%u: take after push", n);
		EXPECT(torus_ring_publish_tail(&t.cons) == 0, "n=%u: publish_tail without a waiter reported one", n);

		/* mark_full when there is space returns 1 */
		while (pop(&t, next) == 1)
			next++;
		EXPECT(next == seq, "n=%u: %u popped, %u pushed", n, next, seq);
		EXPECT(torus_ring_mark_full(&t.prod) == 1, "n=%u: mark_full on a non-full ring says full", n);
		free(t.base);
	}
}

/* The dump line, exactly: used slots of all, head and tail, and whether
 * the producer waits for room; after pushes, a pop, a full ring. */
static void ring_dump_is(struct test_ring *t, const char *want)
{
	FILE *f = tmpfile();
	if (!EXPECT(f != NULL, "tmpfile"))
		return;
	char text[512];
	torus_ring_dump(t->ring, "myring", f);
	rewind(f);
	size_t n = fread(text, 1, sizeof(text) - 1, f);
	text[n] = '\0';
	fclose(f);
	EXPECT(!strcmp(text, want), "ring dump: '%s', not '%s'", text, want);
}

static void test_ring_dump(void)
{
	struct test_ring t;
	if (!EXPECT(ring_make(&t, 4), "out of memory"))
		return;
	ring_dump_is(&t, "myring: 0/4 slots used (head 0, tail 0)\n");
	push(&t, 0);
	push(&t, 1);
	ring_dump_is(&t, "myring: 2/4 slots used (head 2, tail 0)\n");
	EXPECT(pop(&t, 0) == 1, "pop");
	ring_dump_is(&t, "myring: 1/4 slots used (head 2, tail 1)\n");
	push(&t, 2);
	push(&t, 3);
	push(&t, 4);
	EXPECT(torus_ring_mark_full(&t.prod) == 0, "a full ring has room");
	ring_dump_is(&t, "myring: 4/4 slots used (head 5, tail 1), producer waiting\n");
	free(t.base);
}

/* One size parser for every program: units, the range, and what it refuses. */
static void test_size_parse(void)
{
	static const struct {
		const char *text;
		uint64_t max, want;
		int rc;
	} cases[] = {{"4096", UINT64_MAX, 4096, 0},	     {"0", 10, 0, 0},
		     {"64K", UINT64_MAX, 65536, 0},	     {"64KiB", UINT64_MAX, 65536, 0},
		     {"1M", UINT64_MAX, 1 << 20, 0},	     {"3MiB", UINT64_MAX, 3u << 20, 0},
		     {"2G", UINT64_MAX, 2ull << 30, 0},	     {"1GiB", UINT64_MAX, 1ull << 30, 0},
		     {"1T", UINT64_MAX, 1ull << 40, 0},	     {"5TiB", UINT64_MAX, 5ull << 40, 0},
		     {"12B", UINT64_MAX, 12, 0},	     {"1T", 1ull << 40, 1ull << 40, 0},
		     {"2T", 1ull << 40, 0, -ERANGE},	     {"65537", 65536, 0, -ERANGE},
		     {"16777216T", UINT64_MAX, 0, -ERANGE}, {"99999999999999999999999", UINT64_MAX, 0, -ERANGE},
		     {"", 10, 0, -EINVAL},		     {"K", 10, 0, -EINVAL},
		     {"-1", 10, 0, -EINVAL},		     {"+1", 10, 0, -EINVAL},
		     {" 1", 10, 0, -EINVAL},		     {"1 ", 10, 0, -EINVAL},
		     {"1k", UINT64_MAX, 0, -EINVAL},	     {"1KB", UINT64_MAX, 0, -EINVAL},
		     {"1.5M", UINT64_MAX, 0, -EINVAL},	     {"1P", UINT64_MAX, 0, -EINVAL}};
	for (size_t i = 0; i < CUNIT_COUNT(cases); i++) {
		uint64_t v = 12345;
		int rc = torus_size_parse(cases[i].text, cases[i].max, &v);
		EXPECT(rc == cases[i].rc && (rc || v == cases[i].want) && (!rc || v == 12345),
		       "'%s' (max %llu): %d, %llu", cases[i].text, (unsigned long long)cases[i].max, rc, (unsigned long long)v);
	}
	uint64_t v;
	EXPECT(torus_size_parse(NULL, 1, &v) == -EINVAL && torus_size_parse("1", 1, NULL) == -EINVAL, "NULL arguments");
}

/* ---------------------------------------------------------------- link */

/* The engines count what crosses a link (the timekeeper times it): packets,
 * payload and wire bytes, from the cost table they share with the model. */
static void test_link_count(void)
{
	const char *sets[] = {NULL, "link_bw=1GB/s", "hop_latency=0ps"};
	for (size_t si = 0; si < CUNIT_COUNT(sets); si++) {
		struct torus_params p;
		char err[256] = "";
		torus_params_default(&p);
		if (sets[si])
			EXPECT(torus_params_set(&p, sets[si], err, sizeof(err)) == 0, "set %s: %s", sets[si], err);
		struct torus_cost *cost = malloc(sizeof(*cost));
		struct torus_link *l = aligned_alloc(64, sizeof(*l));
		if (!EXPECT(l != NULL && cost != NULL, "out of memory")) {
			free(cost);
			free(l);
			continue;
		}
		memset(l, 0, sizeof(*l));
		torus_cost_init(cost, &p);
		EXPECT(cost->hop_latency == p.hop_latency_ps, "cost latency");
		for (uint32_t len = 0; len <= TORUS_MAX_PAYLOAD; len += 10) {
			EXPECT(cost->wire[len] == my_wire(&p, len), "wire[%u]", len);
			EXPECT(cost->ser[len] == my_ser(my_wire(&p, len), p.link_bw), "ser[%u]", len);
		}
		uint32_t lens[] = {240, 240, 10, 0};
		uint64_t wire = 0;
		for (size_t i = 0; i < CUNIT_COUNT(lens); i++) {
			torus_link_count_traffic(l, lens[i], cost->wire[lens[i]]);
			wire += my_wire(&p, lens[i]);
		}
		struct torus_link_counters k;
		memset(&k, 0xFF, sizeof(k));
		torus_link_read(l, &k);
		EXPECT(k.packets == 4, "packets %llu", (unsigned long long)k.packets);
		EXPECT(k.payload_bytes == 240 + 240 + 10 + 0, "payload %llu", (unsigned long long)k.payload_bytes);
		EXPECT(k.wire_bytes == wire, "wire %llu, expected %llu", (unsigned long long)k.wire_bytes,
		       (unsigned long long)wire);
		EXPECT(k.busy_ps == 0 && k.free_at == 0, "busy time and free_at are the timekeeper's");
		free(cost);
		free(l);
	}
}

/* ---------------------------------------------------------------- main */

static const struct cunit_case shape_cases[] = {
	CUNIT_CASE(test_shape_parse_good),
	CUNIT_CASE(test_shape_parse_bad),
	CUNIT_CASE(test_coords_roundtrip),
	CUNIT_CASE(test_neighbors),
	CUNIT_CASE(test_ring_delta),
	CUNIT_CASE(test_route_minimal),
	CUNIT_CASE(test_route_hints),
};

static const struct cunit_case param_cases[] = {
	CUNIT_CASE(test_params_defaults),
	CUNIT_CASE(test_params_set_good),
	CUNIT_CASE(test_params_set_bad),
	CUNIT_CASE(test_params_check),
	CUNIT_CASE(test_wire_bytes),
	CUNIT_CASE(test_ser_ps),
	CUNIT_CASE(test_model_transfer),
};

static const struct cunit_case fifo_cases[] = {
	CUNIT_CASE(test_ring_single_thread),
	CUNIT_CASE(test_ring_publish),
	CUNIT_CASE(test_ring_index_overflow),
	CUNIT_CASE(test_ring_two_threads),
	CUNIT_CASE(test_ring_two_threads_doorbell),
	CUNIT_CASE(test_ring_mark_full),
	CUNIT_CASE(test_ring_dump), CUNIT_CASE(test_size_parse),
	CUNIT_CASE(test_link_count),
};

static const struct cunit_suite suites[] = {
	{"torus shape and routing", shape_cases, CUNIT_COUNT(shape_cases)},
	{"torus parameters and time model", param_cases, CUNIT_COUNT(param_cases)},
	{"torus FIFOs and links", fifo_cases, CUNIT_COUNT(fifo_cases)},
};

int main(void) { return cunit_main(suites, CUNIT_COUNT(suites)); }
