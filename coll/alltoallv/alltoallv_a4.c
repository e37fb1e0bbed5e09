/*
 * alltoallv "a4": the four-stage algorithm A4 of 002_7cde2a420b12b1bb.txt
 * (Section 3.2), on complete arrays: the members form R rows of
 * C = ceil(sqrt P) (member u in row u / C, column u % C), which needs P to
 * be a multiple of C (P = C^2 or C(C-1): 2, 4, 6, 9, 12, 16, 20, ...). The
 * incomplete arrays of Section 3.2.2 (pseudo-nodes, the revised R-schedule)
 * are not built yet: other team sizes get -ENOTSUP from coll_a4_fits.
 *
 * Steps:
 *   0. every member learns every member's counts (an allgather of the
 *      scounts rows) and checks what it will receive, then builds the plan;
 *   1. stage I (R-Distribute, R-Comm): member k cuts each message into C
 *      slices and sends slice s of its message to j to the member of its
 *      row in column (j + s) % C (002's counters start at j % C: the same
 *      sizes); one message per member of the row;
 *   2. stage II (C-Distribute, C-Comm): each member cuts what it holds for
 *      each destination j (its row's slices, in column order) into R parts
 *      and sends part s to the member of its column in row (j + s) % R;
 *      after it, every member holds about 1/P of the data for every
 *      destination (002, Lemma 2);
 *   3. stage III (C-Collect, R-Comm): each member sends to the member of
 *      its row in column c everything it holds for the destinations of
 *      column c;
 *   4. stage IV (R-Collect, C-Comm): each member sends to each member j of
 *      its column everything it holds for j, which j unpacks into recv.
 * The slices and parts are contiguous runs rather than 002's element round
 * robin (a put layer moves runs; A2 does the same).
 *
 * Cost: 2C + 2R start-ups per member (Table 3 of 002 counts 4 ceil(sqrt P)
 * + 2 with the incomplete arrays' extra step in stages I and III), four
 * stages each moving about L_max bytes, in messages of at most about
 * ceil(sqrt P) L_max / P (Table 2). Extra memory: the counts (8 P^2
 * bytes), the plan's tables (O(P) per member, O(P^2) for the sizes), and
 * the packing and landing scratch of the four stages (about 8 L_max, where
 * 002's Theorem 1 reuses two buffers of ceil(sqrt P)^2 L_max / P each).
 */
#include "alltoallv.h"

#include "../common/a2a.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const struct a2a_algo a4_algo = {"a4", TORUS_ALGO_OTHER, NULL, NULL};

static uint32_t ceil_sqrt(uint32_t p)
{
	uint32_t c = 0;
	while ((uint64_t)c * c < p)
		c++;
	return c;
}

/* The grid: C columns, R rows; 0 if the array would be incomplete. */
static int grid(uint32_t p, uint32_t *C, uint32_t *R)
{
	*C = ceil_sqrt(p);
	*R = *C ? p / *C : 0;
	return *C && p % *C == 0;
}

int coll_a4_fits(const coll_team_t *t)
{
	uint32_t C, R;
	return t->cores == 1 && grid(t->size, &C, &R) && 2 * C + 2 * R + 2 <= emu_params(t->core)->dma_counters &&
	       coll_v_counts_fit(t);
}

/* Slice s of e elements in n: its first element and its length. */
static inline uint64_t cut_off(uint64_t e, uint32_t s, uint32_t n) { return e * s / n; }
static inline uint64_t cut_len(uint64_t e, uint32_t s, uint32_t n) { return e * (s + 1) / n - e * s / n; }

struct a4 {
	uint32_t p, C, R;
	const int64_t *M;
	uint64_t *T; /* T[u * p + j]: what member u holds for j after stage I, in elements */
};

/* Stage I: the slice of k's message to j that goes to column b. */
static inline uint64_t l1(const struct a4 *g, uint32_t k, uint32_t j, uint32_t b, uint64_t *off)
{
	uint64_t e = (uint64_t)g->M[(size_t)k * g->p + j];
	uint32_t s = (b + g->C - j % g->C) % g->C;
	if (off)
		*off = cut_off(e, s, g->C);
	return cut_len(e, s, g->C);
}

/* Stage II: the part of what u holds for j that goes to row a: [lo, lo + len). */
static inline uint64_t l2(const struct a4 *g, uint32_t u, uint32_t j, uint32_t a, uint64_t *lo)
{
	uint64_t T = g->T[(size_t)u * g->p + j];
	uint32_t s = (a + g->R - j % g->R) % g->R;
	if (lo)
		*lo = cut_off(T, s, g->R);
	return cut_len(T, s, g->R);
}

/*
 * The runs of the original messages that part [lo, lo + len) of what
 * member u = (r, b) holds for j is made of: its row's slices for j, in
 * column order. fn(arg, k, offset in k's message to j, at, n) for each,
 * `at` counting from the part's start.
 */
static void part_runs(const struct a4 *g, uint32_t u, uint32_t j, uint64_t lo, uint64_t len,
		      void (*fn)(void *arg, uint32_t k, uint64_t koff, uint64_t at, uint64_t n), void *arg)
{
	uint32_t r = u / g->C, b = u % g->C;
	uint64_t pos = 0, hi = lo + len;
	for (uint32_t c = 0; c < g->C && pos < hi; c++) {
		uint32_t k = r * g->C + c;
		uint64_t off, n = l1(g, k, j, b, &off);
		uint64_t a = pos > lo ? pos : lo, z = pos + n < hi ? pos + n : hi;
		if (a < z)
			fn(arg, k, off + (a - pos), a - lo, z - a);
		pos += n;
	}
}

/* The final unpacking at j: runs into recv. */
struct unpack {
	struct coll_plan *pl;
	uint32_t step, j;
	uint64_t esz, base;
	const int64_t *RD;
};

static void unpack_run(void *arg, uint32_t k, uint64_t koff, uint64_t at, uint64_t n)
{
	struct unpack *u = arg;
	uint32_t p = u->pl->p;
	a2a_copy(u->pl, u->step, 1, u->j, A2A_TMP, u->base + at * u->esz, A2A_RECV,
		 ((uint64_t)u->RD[(size_t)u->j * p + k] + koff) * u->esz, n * u->esz);
}

/* Stage II's packing at u: the run's place in u's stage-I landing area. */
struct pack2 {
	struct coll_plan *pl;
	const struct a4 *g;
	uint32_t step, u, j;
	uint64_t esz, land, dst;
	const uint64_t *from; /* from[c]: where column c's stage-I message starts in land */
	const uint64_t *pre;  /* pre[c]: where its slice for j starts in that message */
};

static void pack2_run(void *arg, uint32_t k, uint64_t koff, uint64_t at, uint64_t n)
{
	struct pack2 *x = arg;
	uint32_t c = k % x->g->C;
	uint64_t off;
	l1(x->g, k, x->j, x->u % x->g->C, &off);
	a2a_copy(x->pl, x->step, 0, x->u, A2A_TMP, x->land + (x->from[c] + x->pre[c] + (koff - off)) * x->esz,
		 A2A_TMP, x->dst + at * x->esz, n * x->esz);
}

/* One message of a stage, `len` bytes from member `from` to `to`: where it
 * is composed (straight into its landing place when it goes to itself) */
struct msg {
	uint32_t from, to;
	uint64_t at, len;
};

static struct msg msg_open(uint32_t from, uint32_t to, uint64_t land, uint64_t pack, uint64_t poff, uint64_t len)
{
	return (struct msg){from, to, to == from ? land : pack + poff, len};
}

/* ... and sent: the put (none to itself), *poff past it in the packing area */
static void msg_send(struct coll_plan *pl, uint32_t step, const struct msg *m, uint64_t land, uint64_t *poff)
{
	if (m->to == m->from)
		return;
	a2a_put(pl, step, m->from, m->to, A2A_TMP, m->at, A2A_TMP, land, m->len, 0);
	*poff += m->len;
}

static int build(struct coll_plan *pl, size_t esz_, const int64_t *M, const int64_t *SD, const int64_t *RD)
{
	uint32_t p = pl->p, me = pl->only, C, R;
	uint64_t esz = esz_;
	if (!grid(p, &C, &R))
		return -ENOTSUP;
	struct a4 g = {p, C, R, M, NULL};
	/* sizes in elements: m1[k * C + b] stage I k -> (row k, b); m2[u * R + a]
	 * stage II u -> (a, col u); m3[u * C + c] stage III u -> (row u, c);
	 * m4[w * R + x] stage IV w -> (x, col w); and the scratch bases */
	uint64_t *m1 = calloc((size_t)p * C, 8), *m2 = calloc((size_t)p * R, 8), *m3 = calloc((size_t)p * C, 8);
	uint64_t *m4 = calloc((size_t)p * R, 8), *base = calloc((size_t)p * 8, 8);
	uint64_t *from = calloc((size_t)(C > R ? C : R) + 1, 8), *pre = calloc((size_t)(C > R ? C : R) + 1, 8);
	g.T = calloc((size_t)p * p, 8);
	int rc = 0;
	if (!m1 || !m2 || !m3 || !m4 || !base || !from || !pre || !g.T) {
		rc = -ENOMEM;
		goto out;
	}
	for (uint32_t k = 0; k < p; k++)
		for (uint32_t j = 0; j < p; j++)
			for (uint32_t b = 0; b < C; b++) {
				uint64_t n = l1(&g, k, j, b, NULL);
				m1[(size_t)k * C + b] += n;
				g.T[(size_t)(k / C * C + b) * p + j] += n;
			}
	for (uint32_t u = 0; u < p; u++)
		for (uint32_t j = 0; j < p; j++)
			for (uint32_t a = 0; a < R; a++) {
				uint64_t n = l2(&g, u, j, a, NULL);
				m2[(size_t)u * R + a] += n;
				/* at (a, col u) it joins the stage-III message to j's column,
				 * then the stage-IV one from (a, col j) to j */
				m3[(size_t)(a * C + u % C) * C + j % C] += n;
				m4[(size_t)(a * C + j % C) * R + j / C] += n;
			}
	/* scratch, in one order on every member: per stage, the landing area
	 * (by sender) then the packing area (by receiver, itself left out) */
	uint64_t *land[4], *pack[4];
	for (int s = 0; s < 4; s++) {
		land[s] = base + (size_t)(2 * s) * p;
		pack[s] = base + (size_t)(2 * s + 1) * p;
	}
	for (uint32_t u = 0; u < p; u++) {
		uint32_t r = u / C, b = u % C;
		uint64_t in[4] = {0, 0, 0, 0}, outb[4] = {0, 0, 0, 0};
		for (uint32_t c = 0; c < C; c++) {
			in[0] += m1[(size_t)(r * C + c) * C + b];
			in[2] += m3[(size_t)(r * C + c) * C + b];
			outb[0] += c == b ? 0 : m1[(size_t)u * C + c];
			outb[2] += c == b ? 0 : m3[(size_t)u * C + c];
		}
		for (uint32_t a = 0; a < R; a++) {
			in[1] += m2[(size_t)(a * C + b) * R + r];
			in[3] += m4[(size_t)(a * C + b) * R + r];
			outb[1] += a == r ? 0 : m2[(size_t)u * R + a];
			outb[3] += a == r ? 0 : m4[(size_t)u * R + a];
		}
		for (int s = 0; s < 4; s++) {
			land[s][u] = in[s] ? a2a_tmp(pl, u, in[s] * esz) : 0;
			pack[s][u] = outb[s] ? a2a_tmp(pl, u, outb[s] * esz) : 0;
		}
	}
	uint32_t st[4];
	for (uint32_t s = 0; s < 4; s++)
		st[s] = a2a_step(pl, s, 0);
#define MINE(u) (me == A2A_ALL || (u) == me)

	/* stage I: k -> (row k, b), slices for j in order */
	for (uint32_t k = 0; k < p; k++) {
		uint32_t r = k / C;
		uint64_t poff = 0;
		for (uint32_t b = 0; b < C; b++) {
			uint32_t t = r * C + b;
			uint64_t len = m1[(size_t)k * C + b], loff = 0;
			if (!len)
				continue;
			for (uint32_t c = 0; c < k % C; c++)
				loff += m1[(size_t)(r * C + c) * C + b];
			struct msg m = msg_open(k, t, land[0][t] + loff * esz, pack[0][k], poff, len * esz);
			uint64_t dst = m.at, at = 0;
			for (uint32_t j = 0; MINE(k) && j < p; j++) {
				uint64_t off, n = l1(&g, k, j, b, &off);
				if (n)
					a2a_copy(pl, st[0], 0, k, A2A_SEND, ((uint64_t)SD[(size_t)k * p + j] + off) * esz, A2A_TMP,
						 dst + at * esz, n * esz);
				at += n;
			}
			msg_send(pl, st[0], &m, land[0][t] + loff * esz, &poff);
		}
	}

	/* stage II: u = (r, b) -> (a, b), for each j its part a */
	for (uint32_t u = 0; u < p; u++) {
		uint32_t r = u / C, b = u % C;
		uint64_t poff = 0;
		if (MINE(u)) {
			/* where each column's stage-I message sits in the landing area */
			from[0] = 0;
			for (uint32_t c = 0; c < C; c++)
				from[c + 1] = from[c] + m1[(size_t)(r * C + c) * C + b];
		}
		for (uint32_t a = 0; a < R; a++) {
			uint32_t v = a * C + b;
			uint64_t len = m2[(size_t)u * R + a], loff = 0;
			if (!len)
				continue;
			for (uint32_t x = 0; x < r; x++)
				loff += m2[(size_t)(x * C + b) * R + a];
			struct msg m = msg_open(u, v, land[1][v] + loff * esz, pack[1][u], poff, len * esz);
			uint64_t dst = m.at, at = 0;
			if (MINE(u)) {
				memset(pre, 0, (size_t)C * 8);
				for (uint32_t j = 0; j < p; j++) {
					uint64_t lo, n = l2(&g, u, j, a, &lo);
					struct pack2 x = {pl, &g, st[1], u, j, esz, land[0][u], dst + at * esz, from, pre};
					if (n)
						part_runs(&g, u, j, lo, n, pack2_run, &x);
					at += n;
					for (uint32_t c = 0; c < C; c++)
						pre[c] += l1(&g, r * C + c, j, b, NULL);
				}
			}
			msg_send(pl, st[1], &m, land[1][v] + loff * esz, &poff);
		}
	}

	/* stage III: u = (a, b) -> (a, c), for each j of column c (by row),
	 * the parts from each sender row x of stage II */
	for (uint32_t u = 0; u < p; u++) {
		uint32_t a = u / C, b = u % C;
		uint64_t poff = 0;
		for (uint32_t c = 0; c < C; c++) {
			uint32_t w = a * C + c;
			uint64_t len = m3[(size_t)u * C + c], loff = 0;
			if (!len)
				continue;
			for (uint32_t y = 0; y < b; y++)
				loff += m3[(size_t)(a * C + y) * C + c];
			struct msg m = msg_open(u, w, land[2][w] + loff * esz, pack[2][u], poff, len * esz);
			uint64_t dst = m.at, at = 0;
			for (uint32_t xr = 0; MINE(u) && xr < R; xr++) {
				uint32_t j = xr * C + c;
				uint64_t in = 0;
				for (uint32_t x = 0; x < R; x++) {
					uint32_t s = x * C + b; /* the stage-II sender */
					/* its message to a starts after those of the rows above;
					 * j's part after the parts for j' < j */
					uint64_t off = 0, n = l2(&g, s, j, a, NULL);
					for (uint32_t y = 0; y < x; y++)
						off += m2[(size_t)(y * C + b) * R + a];
					for (uint32_t j2 = 0; j2 < j; j2++)
						off += l2(&g, s, j2, a, NULL);
					if (n)
						a2a_copy(pl, st[2], 0, u, A2A_TMP, land[1][u] + off * esz, A2A_TMP,
							 dst + (at + in) * esz, n * esz);
					in += n;
				}
				at += in;
			}
			msg_send(pl, st[2], &m, land[2][w] + loff * esz, &poff);
		}
	}

	/* stage IV: w = (a, c) -> j = (xr, c), from each stage-III sender b
	 * its piece for j; j unpacks the runs into recv */
	for (uint32_t w = 0; w < p; w++) {
		uint32_t a = w / C, c = w % C;
		uint64_t poff = 0;
		for (uint32_t xr = 0; xr < R; xr++) {
			uint32_t j = xr * C + c;
			uint64_t len = m4[(size_t)w * R + xr], loff = 0;
			if (!len)
				continue;
			for (uint32_t y = 0; y < a; y++)
				loff += m4[(size_t)(y * C + c) * R + xr];
			struct msg m = msg_open(w, j, land[3][j] + loff * esz, pack[3][w], poff, len * esz);
			uint64_t dst = m.at, at = 0;
			for (uint32_t b = 0; b < C; b++) {
				/* the stage-III sender (a, b): its message to w comes
				 * after those of the columns left of b, and j's piece
				 * in it after those for the rows above j */
				uint64_t off = 0, n = 0;
				for (uint32_t y = 0; y < b; y++)
					off += m3[(size_t)(a * C + y) * C + c];
				for (uint32_t y = 0; y < xr; y++)
					for (uint32_t x = 0; x < R; x++)
						off += l2(&g, x * C + b, y * C + c, a, NULL);
				for (uint32_t x = 0; x < R; x++)
					n += l2(&g, x * C + b, j, a, NULL);
				if (n && MINE(w))
					a2a_copy(pl, st[3], 0, w, A2A_TMP, land[2][w] + off * esz, A2A_TMP, dst + at * esz,
						 n * esz);
				/* what it carries, run by run, for j to unpack */
				if (MINE(j)) {
					uint64_t in = 0;
					for (uint32_t x = 0; x < R; x++) {
						uint64_t lo, pn = l2(&g, x * C + b, j, a, &lo);
						struct unpack un = {pl, st[3], j, esz, land[3][j] + (loff + at + in) * esz, RD};
						if (pn)
							part_runs(&g, x * C + b, j, lo, pn, unpack_run, &un);
						in += pn;
					}
				}
				at += n;
			}
			msg_send(pl, st[3], &m, land[3][j] + loff * esz, &poff);
		}
	}
#undef MINE
out:
	free(m1);
	free(m2);
	free(m3);
	free(m4);
	free(base);
	free(from);
	free(pre);
	free(g.T);
	return rc;
}

/* Elements of member me's message to itself in stage st (0 to 3). */
static uint64_t self_bytes(const int64_t *M, uint32_t p, uint32_t me, uint32_t st)
{
	uint32_t C, R;
	if (!grid(p, &C, &R))
		return 0;
	struct a4 g = {p, C, R, M, NULL};
	uint32_t r = me / C, b = me % C;
	uint64_t n = 0;
	if (st == 0) {
		for (uint32_t j = 0; j < p; j++)
			n += l1(&g, me, j, b, NULL);
		return n;
	}
	/* stages II to IV need what every member holds after stage I */
	if (!(g.T = calloc((size_t)p * p, 8)))
		return 0;
	for (uint32_t k = 0; k < p; k++)
		for (uint32_t j = 0; j < p; j++)
			for (uint32_t c = 0; c < C; c++)
				g.T[(size_t)(k / C * C + c) * p + j] += l1(&g, k, j, c, NULL);
	if (st == 1) {
		for (uint32_t j = 0; j < p; j++)
			n += l2(&g, me, j, r, NULL);
	} else if (st == 2) {
		/* from (r, b) to itself: its holdings for the destinations of column b */
		for (uint32_t xr = 0; xr < R; xr++)
			for (uint32_t x = 0; x < R; x++)
				n += l2(&g, x * C + b, xr * C + b, r, NULL);
	} else {
		for (uint32_t y = 0; y < C; y++)
			for (uint32_t x = 0; x < R; x++)
				n += l2(&g, x * C + y, me, r, NULL);
	}
	free(g.T);
	return n;
}

const struct coll_v_algo coll_v_a4 = {&a4_algo, build, self_bytes, 4};

int coll_alltoallv_a4(const struct coll_args *a) { return coll_v_run(a, &coll_v_a4); }
