/*
 * alltoallv "a4": the four-stage algorithm A4 of 002_7cde2a420b12b1bb.txt
 * (Section 3.2) on any number of members. They form R = ceil(P / C) rows of
 * C = ceil(sqrt P) (member u in row u / C, column u % C); the last row
 * holds r <= C of them. When it would have more members than there are
 * complete rows (P = ceil(sqrt P) floor(sqrt P) - 1), C is floor(sqrt P)
 * instead (Section 3.2.2 (A)). Columns 0..r-1 are complete (R members),
 * the others incomplete (R - 1).
 *
 * Steps:
 *   0. every member learns every member's counts (an allgather of the
 *      scounts rows) and checks what it will receive, then builds the plan;
 *   1. stage I (R-Distribute, R-Comm): member k cuts each message into C
 *      slices, R/P of it for each complete column and (R - 1)/P for each
 *      incomplete one (Section 3.2.2 (C)), the first for column j % C (as
 *      002's counters start), and sends the slices for column b to the
 *      member of its row there; a member of the last row sends those for a
 *      column it lacks to a pseudo-node, delivered to the member of that
 *      column in the row numbered by the sender's column (Fig. 8);
 *   2. stage II (C-Distribute, C-Comm): each member cuts what it holds for
 *      each destination j into as many parts as its column has members and
 *      sends part s to the member in row (j + s) % (that number); after it,
 *      every member holds about 1/P of the data for every destination
 *      (Lemma 2);
 *   3. stage III (C-Collect, R-Comm): each member sends to the member of
 *      its row in column c everything it holds for the destinations of
 *      column c (the last row's members, to the pseudo-nodes' stand-ins as
 *      in stage I);
 *   4. stage IV (R-Collect, C-Comm): each member sends to each member j of
 *      its column everything it holds for j, which j unpacks into recv.
 * Slices and parts are contiguous runs rather than 002's element round
 * robin (a put layer moves runs; A2 does the same). "a4" posts all
 * messages of a stage at once (002's non-blocking mode); "a4_blocking"
 * sends them round by round (round_of), with the revised R-schedule's
 * stalls; "a4_dual" is the non-blocking mode with two send buffers.
 *
 * Cost: at most 2C + 2R start-ups per member, 2 more for the members that
 * stand in for pseudo-nodes (Table 3: 4 ceil(sqrt P) + 2); four stages each
 * moving about L_max bytes, in messages of about ceil(sqrt P) L_max / P
 * (Table 2). Extra memory: the counts (8 P^2 bytes), the plan's tables
 * while it is built (O(P^2)), and Theorem 1's two buffers, one every stage
 * lands in and one every stage packs into, each at most ceil(sqrt P)^2
 * L_max / P, reused behind a team barrier at the start of every stage
 * after the first (as in 002's Fig. 12).
 */
#include "alltoallv.h"

#include "../common/a2a.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const struct a2a_algo a4_algo = {"a4", TORUS_ALGO_OTHER, NULL, NULL, 0};

/* The array: C columns, R rows, r members in the last one; 0 if none fits. */
static int grid(uint32_t p, uint32_t *C, uint32_t *R, uint32_t *r)
{
	uint32_t c = 0;
	while ((uint64_t)c * c < p)
		c++;
	for (int pass = 0; pass < 2 && c; pass++) {
		*C = c;
		*R = (p + c - 1) / c;
		*r = p - (*R - 1) * c;
		if (*r == c || *r <= *R - 1)
			return 1;
		c--; /* floor(sqrt P): enough complete rows for the stand-ins */
	}
	return 0;
}

int coll_a4_fits(const coll_team_t *t)
{
	uint32_t C, R, r;
	return t->cores == 1 && grid(t->size, &C, &R, &r) && 2 * C + 2 * R + 4 <= emu_params(t->core)->dma_counters &&
	       coll_v_counts_fit(t);
}

/* Where a message from one member to another lands: the sender, its
 * landing offset there, its length (elements). */
struct from {
	uint32_t u;
	uint64_t at, len;
};
/* Where one goes: the receiver, its landing offset there, its length. */
struct dest {
	uint32_t to;
	uint64_t at, len;
};

struct a4 {
	uint32_t p, C, R, r, w;
	const int64_t *M;
	uint64_t *T;          /* T[u * p + j]: what u holds for j after stage I */
	uint64_t *Wpre;       /* Wpre[s * C + b]: slice weight before column b, starting at column s */
	/* per stage s (0 to 3) and member: its senders (in landing order) and
	 * its receivers (in packing order), w slots each */
	struct from *in[4];
	struct dest *out[4];
	uint32_t *nin[4], *nout[4];
};

static inline uint32_t rows_of(const struct a4 *g, uint32_t b) { return b < g->r ? g->R : g->R - 1; }

/* The receiver of k's message to column b in a row stage: the member of
 * its row there, or the pseudo-node's stand-in (Fig. 8). */
static inline uint32_t row_target(const struct a4 *g, uint32_t k, uint32_t b)
{
	uint32_t a = k / g->C;
	return a < rows_of(g, b) ? a * g->C + b : (k % g->C) * g->C + b;
}

/* Stage I: the slice of k's message to j for column b. */
static inline uint64_t l1(const struct a4 *g, uint32_t k, uint32_t j, uint32_t b, uint64_t *off)
{
	uint64_t e = (uint64_t)g->M[(size_t)k * g->p + j], W = g->Wpre[(size_t)(j % g->C) * g->C + b];
	if (off)
		*off = e * W / g->p;
	return e * (W + rows_of(g, b)) / g->p - e * W / g->p;
}

/* Stage II: the part of what u holds for j that goes to row a: [lo, lo + len). */
static inline uint64_t l2(const struct a4 *g, uint32_t u, uint32_t j, uint32_t a, uint64_t *lo)
{
	uint64_t T = g->T[(size_t)u * g->p + j];
	uint32_t n = rows_of(g, u % g->C), s = (a + n - j % n) % n;
	if (lo)
		*lo = T * s / n;
	return T * (s + 1) / n - T * s / n;
}

static void a4_free(struct a4 *g)
{
	free(g->T);
	free(g->Wpre);
	for (int s = 0; s < 4; s++) {
		free(g->in[s]);
		free(g->out[s]);
		free(g->nin[s]);
		free(g->nout[s]);
	}
}

/* One message of stage s from u to v, len elements. */
static void link_msg(struct a4 *g, int s, uint32_t u, uint32_t v, uint64_t len)
{
	struct from *f = &g->in[s][(size_t)v * g->w + g->nin[s][v]];
	uint64_t at = g->nin[s][v] ? f[-1].at + f[-1].len : 0;
	*f = (struct from){u, at, len};
	g->nin[s][v]++;
	g->out[s][(size_t)u * g->w + g->nout[s][u]++] = (struct dest){v, at, len};
}

/* The array, the stage-I holdings and every message of the four stages. */
static int a4_init(struct a4 *g, uint32_t p, const int64_t *M)
{
	memset(g, 0, sizeof(*g));
	if (!grid(p, &g->C, &g->R, &g->r))
		return -ENOTSUP;
	g->p = p;
	g->M = M;
	g->w = g->C + g->R + 2;
	uint32_t C = g->C;
	int ok = !!(g->T = calloc((size_t)p * p, 8)) && !!(g->Wpre = calloc((size_t)C * C, 8));
	for (int s = 0; ok && s < 4; s++)
		ok = (g->in[s] = calloc((size_t)p * g->w, sizeof(struct from))) &&
		     (g->out[s] = calloc((size_t)p * g->w, sizeof(struct dest))) && (g->nin[s] = calloc(p, 4)) &&
		     (g->nout[s] = calloc(p, 4));
	if (!ok) {
		a4_free(g);
		return -ENOMEM;
	}
	for (uint32_t s0 = 0; s0 < C; s0++)
		for (uint32_t i = 0, W = 0; i < C; i++) {
			uint32_t b = (s0 + i) % C;
			g->Wpre[(size_t)s0 * C + b] = W;
			W += rows_of(g, b);
		}
	/* stage I: k to each column's member (or stand-in), in column order */
	for (uint32_t k = 0; k < p; k++)
		for (uint32_t b = 0; b < C; b++) {
			uint32_t t = row_target(g, k, b);
			uint64_t len = 0;
			for (uint32_t j = 0; j < p; j++) {
				uint64_t n = l1(g, k, j, b, NULL);
				len += n;
				g->T[(size_t)t * p + j] += n;
			}
			link_msg(g, 0, k, t, len);
		}
	/* stage II: u to each member of its column */
	for (uint32_t u = 0; u < p; u++)
		for (uint32_t a = 0; a < rows_of(g, u % C); a++) {
			uint64_t len = 0;
			for (uint32_t j = 0; j < p; j++)
				len += l2(g, u, j, a, NULL);
			link_msg(g, 1, u, a * C + u % C, len);
		}
	/* stage III: u to each column's member (or stand-in): its holdings
	 * (from its stage-II senders) for that column's members */
	for (uint32_t u = 0; u < p; u++)
		for (uint32_t c = 0; c < C; c++) {
			uint64_t len = 0;
			for (uint32_t y = 0; y < rows_of(g, c); y++)
				for (uint32_t i = 0; i < g->nin[1][u]; i++)
					len += l2(g, g->in[1][(size_t)u * g->w + i].u, y * C + c, u / C, NULL);
			link_msg(g, 2, u, row_target(g, u, c), len);
		}
	/* stage IV: w to each member j of its column: for each stage-III
	 * sender, its pieces for j */
	for (uint32_t w = 0; w < p; w++)
		for (uint32_t y = 0; y < rows_of(g, w % C); y++) {
			uint32_t j = y * C + w % C;
			uint64_t len = 0;
			for (uint32_t i = 0; i < g->nin[2][w]; i++) {
				uint32_t s = g->in[2][(size_t)w * g->w + i].u;
				for (uint32_t x = 0; x < g->nin[1][s]; x++)
					len += l2(g, g->in[1][(size_t)s * g->w + x].u, j, s / C, NULL);
			}
			link_msg(g, 3, w, j, len);
		}
	return 0;
}

/*
 * The runs of the original messages that part [lo, lo + len) of what
 * member u holds for j is made of: its stage-I senders' slices for j, in
 * landing order. fn(arg, sender index, k, offset in k's message to j, at,
 * n) for each, `at` counting from the part's start.
 */
static void part_runs(const struct a4 *g, uint32_t u, uint32_t j, uint64_t lo, uint64_t len,
		      void (*fn)(void *arg, uint32_t i, uint32_t k, uint64_t koff, uint64_t at, uint64_t n), void *arg)
{
	uint64_t pos = 0, hi = lo + len;
	for (uint32_t i = 0; i < g->nin[0][u] && pos < hi; i++) {
		uint32_t k = g->in[0][(size_t)u * g->w + i].u;
		uint64_t off, n = l1(g, k, j, u % g->C, &off);
		uint64_t a = pos > lo ? pos : lo, z = pos + n < hi ? pos + n : hi;
		if (a < z)
			fn(arg, i, k, off + (a - pos), a - lo, z - a);
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

static void unpack_run(void *arg, uint32_t i, uint32_t k, uint64_t koff, uint64_t at, uint64_t n)
{
	struct unpack *u = arg;
	(void)i;
	a2a_copy(u->pl, u->step, 1, u->j, A2A_TMP, u->base + at * u->esz, A2A_RECV,
		 ((uint64_t)u->RD[(size_t)u->j * u->pl->p + k] + koff) * u->esz, n * u->esz);
}

/* Stage II's packing at u: a run's place in u's stage-I landing area. */
struct pack2 {
	struct coll_plan *pl;
	const struct a4 *g;
	uint32_t step, u, j;
	uint64_t esz, land, dst;
	const uint64_t *pre; /* pre[i]: where sender i's slice for j starts in its message */
};

static void pack2_run(void *arg, uint32_t i, uint32_t k, uint64_t koff, uint64_t at, uint64_t n)
{
	struct pack2 *x = arg;
	uint64_t off;
	l1(x->g, k, x->j, x->u % x->g->C, &off);
	uint64_t from = x->g->in[0][(size_t)x->u * x->g->w + i].at;
	a2a_copy(x->pl, x->step, 0, x->u, A2A_TMP, x->land + (from + x->pre[i] + (koff - off)) * x->esz, A2A_TMP,
		 x->dst + at * x->esz, n * x->esz);
}

/*
 * Blocking mode: the round of stage s in which u sends to v, following
 * 002's C- and R-Schedules (Fig. 6): round k along a row to the column k
 * places on, down a column to the row k places on (its own message, a
 * copy, in round 0). Each member sends one message a round and waits for
 * the one it receives before the next. In an incomplete array the last
 * row's messages to the stand-ins go first, and the revised R-schedule
 * (Section 3.2.2 (B), Fig. 10) delays the others with one stall each so
 * that no member receives two in a round: in complete row m < r, for
 * 0 <= k <= C - r + m, the member in column (m + C - k) % C stalls in
 * round r - m + k. (The text says round r - m + 1 + k; Fig. 10, and the
 * one-message-a-round check in test_alltoall, want r - m + k.)
 */
static uint32_t round_of(const struct a4 *g, int s, uint32_t u, uint32_t v)
{
	if (s % 2) {
		uint32_t n = rows_of(g, u % g->C);
		return (v / g->C + n - u / g->C) % n;
	}
	uint32_t C = g->C, m = u / C, b = u % C, k = (v % C + C - b) % C;
	if (k && g->r < C && m < g->r) {
		uint32_t kk = (m + C - b) % C; /* the k of the rule that names column b */
		if (kk <= C - g->r + m && k >= g->r - m + kk)
			k++; /* at or after its stall */
	}
	return k;
}

enum { A4_NONBLOCKING, A4_BLOCKING, A4_DUAL };

static int build_mode(struct coll_plan *pl, size_t esz_, const int64_t *M, const int64_t *SD, const int64_t *RD,
		      int mode)
{
	int blocking = mode == A4_BLOCKING;
	uint32_t p = pl->p, me = pl->only;
	uint64_t esz = esz_;
	struct a4 g;
	int rc = a4_init(&g, p, M);
	if (rc)
		return rc;
	uint32_t C = g.C, W = g.w;
	uint64_t *base = calloc((size_t)p * 8, 8), *pre = calloc((size_t)W * (p + 1), 8);
	if (!base || !pre) {
		rc = -ENOMEM;
		goto out;
	}
	/* scratch, as in 002's Theorem 1: a receive buffer every stage lands
	 * in and a send buffer every stage packs into (its message to itself
	 * too, copied over once the stage's messages are in), reused behind a
	 * barrier at the start of every stage (stage_sync); with two send
	 * buffers (A4_DUAL, 002's "n2"), one for the even stages and one for
	 * the odd, a stage packs without waiting for the last one's messages
	 * to leave */
	int dual = mode == A4_DUAL;
	pl->stage_sync = dual ? 2 : 1;
	uint64_t *land[4], *pack[4];
	for (int s = 0; s < 4; s++) {
		land[s] = base;
		pack[s] = base + (size_t)p * (1 + (dual ? s % 2 : 0));
	}
	for (uint32_t u = 0; u < p; u++) {
		uint64_t rmax = 0, smax[2] = {0, 0};
		for (int s = 0; s < 4; s++) {
			uint64_t in = 0, out = 0;
			for (uint32_t i = 0; i < g.nin[s][u]; i++)
				in += g.in[s][(size_t)u * W + i].len;
			for (uint32_t i = 0; i < g.nout[s][u]; i++)
				out += g.out[s][(size_t)u * W + i].len;
			rmax = in > rmax ? in : rmax;
			smax[dual ? s % 2 : 0] = out > smax[dual ? s % 2 : 0] ? out : smax[dual ? s % 2 : 0];
		}
		base[u] = rmax ? a2a_tmp(pl, u, rmax * esz) : 0;
		for (int b = 0; b < 1 + dual; b++)
			base[(size_t)p * (1 + b) + u] = smax[b] ? a2a_tmp(pl, u, smax[b] * esz) : 0;
	}
	/* a step per stage, or per round of each stage (blocking) */
	uint32_t st[4];
	for (uint32_t s = 0; s < 4; s++) {
		uint32_t rounds = !blocking ? 1 : s % 2 ? g.R : C + 1; /* + 1: the stalls */
		st[s] = a2a_step(pl, s, 0);
		for (uint32_t k = 1; k < rounds; k++)
			a2a_step(pl, s, k);
	}
#define RND(s, u, v) (blocking ? round_of(&g, (s), (u), (v)) : 0u)
#define MINE(u) (me == A2A_ALL || (u) == me)
	for (int s = 0; s < 4; s++) {
		for (uint32_t u = 0; u < p; u++) {
			uint64_t poff = 0;
			if (MINE(u) && s == 2) {
				/* pre[x * (p + 1) + j]: where the part for j starts in the
				 * message from stage-II sender x */
				for (uint32_t x = 0; x < g.nin[1][u]; x++) {
					uint32_t sx = g.in[1][(size_t)u * W + x].u;
					pre[(size_t)x * (p + 1)] = 0;
					for (uint32_t j = 0; j < p; j++)
						pre[(size_t)x * (p + 1) + j + 1] = pre[(size_t)x * (p + 1) + j] + l2(&g, sx, j, u / C, NULL);
				}
			}
			for (uint32_t o = 0; o < g.nout[s][u]; o++) {
				const struct dest *d = &g.out[s][(size_t)u * W + o];
				if (!d->len)
					continue;
				uint64_t dst = pack[s][u] + poff, at = 0;
				/* to itself: copied to where it lands once the stage's
				 * messages are in (before what unpacks it) */
				if (d->to == u && MINE(u))
					a2a_copy(pl, st[s], 1, u, A2A_TMP, dst, A2A_TMP, land[s][u] + d->at * esz, d->len * esz);
				if (MINE(u) && s == 0) {
					/* the slices of its messages, in destination order */
					for (uint32_t j = 0; j < p; j++) {
						uint64_t off, n = l1(&g, u, j, d->to % C, &off);
						if (n)
							a2a_copy(pl, st[0], 0, u, A2A_SEND,
								 ((uint64_t)SD[(size_t)u * p + j] + off) * esz, A2A_TMP,
								 dst + at * esz, n * esz);
						at += n;
					}
				} else if (MINE(u) && s == 1) {
					/* for each j, part row(d) of its holdings, run by run */
					memset(pre, 0, (size_t)W * 8);
					for (uint32_t j = 0; j < p; j++) {
						uint64_t lo, n = l2(&g, u, j, d->to / C, &lo);
						struct pack2 x = {pl, &g, st[1], u, j, esz, land[0][u], dst + at * esz, pre};
						if (n)
							part_runs(&g, u, j, lo, n, pack2_run, &x);
						at += n;
						for (uint32_t i = 0; i < g.nin[0][u]; i++)
							pre[i] += l1(&g, g.in[0][(size_t)u * W + i].u, j, u % C, NULL);
					}
				} else if (MINE(u) && s == 2) {
					/* for each member j of the column, the parts for j
					 * from each stage-II sender */
					uint32_t c = d->to % C;
					for (uint32_t y = 0; y < g.R; y++) {
						uint32_t j = y * C + c;
						if (y >= rows_of(&g, c))
							break;
						for (uint32_t x = 0; x < g.nin[1][u]; x++) {
							const struct from *f = &g.in[1][(size_t)u * W + x];
							uint64_t n = pre[(size_t)x * (p + 1) + j + 1] - pre[(size_t)x * (p + 1) + j];
							if (n)
								a2a_copy(pl, st[2], 0, u, A2A_TMP,
									 land[1][u] + (f->at + pre[(size_t)x * (p + 1) + j]) * esz,
									 A2A_TMP, dst + at * esz, n * esz);
							at += n;
						}
					}
				} else if (s == 3 && (MINE(u) || MINE(d->to))) {
					/* for each stage-III sender, its piece for j; j
					 * unpacks the runs */
					uint32_t j = d->to, c = u % C;
					for (uint32_t i = 0; i < g.nin[2][u]; i++) {
						const struct from *f = &g.in[2][(size_t)u * W + i];
						uint32_t sd = f->u, a = sd / C;
						/* j's piece comes after those for the members above j */
						uint64_t off = 0, n = 0;
						for (uint32_t y = 0; y * C + c < j; y++)
							for (uint32_t x = 0; x < g.nin[1][sd]; x++)
								off += l2(&g, g.in[1][(size_t)sd * W + x].u, y * C + c, a, NULL);
						for (uint32_t x = 0; x < g.nin[1][sd]; x++)
							n += l2(&g, g.in[1][(size_t)sd * W + x].u, j, a, NULL);
						if (n && MINE(u))
							a2a_copy(pl, st[3], 0, u, A2A_TMP, land[2][u] + (f->at + off) * esz, A2A_TMP,
								 dst + at * esz, n * esz);
						for (uint32_t x = 0, in = 0; MINE(j) && x < g.nin[1][sd]; x++) {
							uint32_t sx = g.in[1][(size_t)sd * W + x].u;
							uint64_t lo, pn = l2(&g, sx, j, a, &lo);
							struct unpack un = {pl, st[3] + RND(3, u, j), j, esz,
									    land[3][j] + (d->at + at + in) * esz, RD};
							if (pn)
								part_runs(&g, sx, j, lo, pn, unpack_run, &un);
							in += pn;
						}
						at += n;
					}
				}
				if (d->to != u)
					a2a_put(pl, st[s] + RND(s, u, d->to), u, d->to, A2A_TMP, pack[s][u] + poff, A2A_TMP,
						land[s][d->to] + d->at * esz, d->len * esz, 0);
				poff += d->len * esz;
			}
		}
	}
#undef MINE
#undef RND
out:
	free(base);
	free(pre);
	a4_free(&g);
	return rc;
}

static int build(struct coll_plan *pl, size_t esz, const int64_t *M, const int64_t *SD, const int64_t *RD)
{
	return build_mode(pl, esz, M, SD, RD, A4_NONBLOCKING);
}

static int build_blocking(struct coll_plan *pl, size_t esz, const int64_t *M, const int64_t *SD, const int64_t *RD)
{
	return build_mode(pl, esz, M, SD, RD, A4_BLOCKING);
}

static int build_dual(struct coll_plan *pl, size_t esz, const int64_t *M, const int64_t *SD, const int64_t *RD)
{
	return build_mode(pl, esz, M, SD, RD, A4_DUAL);
}

/* Elements of member me's message to itself in each of the four stages
 * (one pass over the array for all four). */
static void self_bytes(const int64_t *M, uint32_t p, uint32_t me, uint64_t *n)
{
	struct a4 g;
	if (a4_init(&g, p, M))
		return;
	for (int st = 0; st < 4; st++)
		for (uint32_t o = 0; o < g.nout[st][me]; o++)
			if (g.out[st][(size_t)me * g.w + o].to == me)
				n[st] += g.out[st][(size_t)me * g.w + o].len;
	a4_free(&g);
}

static const struct a2a_algo a4b_algo = {"a4_blocking", TORUS_ALGO_OTHER, NULL, NULL, 0};
static const struct a2a_algo a4d_algo = {"a4_dual", TORUS_ALGO_OTHER, NULL, NULL, 0};

const struct coll_v_algo coll_v_a4 = {&a4_algo, build, self_bytes, 4};
const struct coll_v_algo coll_v_a4b = {&a4b_algo, build_blocking, self_bytes, 4};
const struct coll_v_algo coll_v_a4d = {&a4d_algo, build_dual, self_bytes, 4};

int coll_alltoallv_a4(const struct coll_args *a) { return coll_v_run(a, &coll_v_a4); }
int coll_alltoallv_a4_blocking(const struct coll_args *a) { return coll_v_run(a, &coll_v_a4b); }
int coll_alltoallv_a4_dual(const struct coll_args *a) { return coll_v_run(a, &coll_v_a4d); }
