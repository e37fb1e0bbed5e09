/*
 * In-place variable-size all-to-all in O(P) extra memory: the algorithms of
 * 004_c43df3ab966fe92b.txt.
 *
 * Member i's buffer holds N_i elements, s(i,0) . s(i,1) ... s(i,P-1) (its
 * scounts), and ends holding S(i) = s(0,i) . s(1,i) ... s(P-1,i) (its
 * rcounts) in the same N_i elements. Both are the sorted order of the keys
 * (dest, src, k) of 004 section 3.2, so the exchange is a distributed sort
 * in which every member keeps its N_i elements throughout. A member knows
 * its holdings only as runs (dest, src, first k, length), kept sorted and
 * merged when adjacent: O(P) of them in practice (measured: BENCHMARKS.md as of commit 26917ce,
 * "Variable-size all-to-all in place"), never the elements' keys.
 *
 * Two means, 004 section 3.1, with O(1) memory:
 *   swap    an equal-length exchange of a range of my buffer with a range
 *           of a partner's, through a fixed bounce buffer (bounce_bytes, 4
 *           KiB by default): in rounds of half of it, each side puts its
 *           piece into the other's bounce half, waits for the other's
 *           piece, then copies it over its own piece (which its put has
 *           read by then). Two halves: a partner's piece of round r arrives
 *           only after the partner emptied the half it goes into.
 *   merge   of sorted run sequences lying one after another, by rotations
 *           (the recursive merge without a buffer; a rotation goes through
 *           the bounce buffer, or swaps blocks through it): stable,
 *           O(n log r) bytes moved for r runs, O(1) extra memory. 004 uses
 *           Huang and Langston's O(n) merge with O(sqrt n) space; this one
 *           needs neither, at a log r factor on the copies.
 *
 * Algorithms:
 *   bitonic   004 section 3.2: the bitonic sorting network, as merge-split
 *             steps (the lower of a pair keeps the lowest N of the union:
 *             my suffix swapped for the partner's prefix, then a merge),
 *             all ascending (the first comparator of each merge mirrors,
 *             the rest are half-cleaners), so that any P works with the
 *             pairs past P left out. Needs every member's N equal (the
 *             network sorts equal blocks only); ceil(log2 P)(ceil(log2 P)+1)/2
 *             steps of at most N elements: O(N log^2 P).
 *   pairwise  004 section 3.3, asymmetric pairwise exchange: members meet
 *             every partner in increasing order (rounds of a + b = s, so no
 *             cycle of waits); in pair a < b, b hands a every element of
 *             S(a) it holds, a hands b as many elements of S(a+1), S(a+2),
 *             ... (it holds nothing of S(m) for m < a by then). Works for any
 *             N_i; P - 1 steps of M each, where M is what the pair moves.
 *   auto      the switch 004 leaves as future work; see alltoallv_inplace_pick.
 *
 * Each step: two address exchanges (run counts; where to put the tables),
 * the tables put both ways, then, if anything moves, a third exchange
 * (bounce half and counters armed) and the swap rounds. Counters: five.
 */
#include "alltoallv.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct run {
	uint32_t dest, src;
	uint64_t k, len; /* elements k .. k+len-1 of s(src, dest) */
};

static int key_less(const struct run *x, const struct run *y)
{
	if (x->dest != y->dest)
		return x->dest < y->dest;
	if (x->src != y->src)
		return x->src < y->src;
	return x->k < y->k;
}

struct ip {
	coll_team_t *t;
	emu_core_t *c;
	uint32_t p, me;
	size_t esz;
	uint8_t *buf;
	uint64_t n;               /* elements held */
	uint64_t check;
	int err;                  /* first failure; steps go on talking with check 0 */
	/* bounce buffer, two halves */
	uint8_t *bounce;
	size_t half;
	uint32_t bounce_region;
	/* my runs, and room for a merge's result */
	struct run *runs, *tmp;
	uint32_t nruns, cap;
	/* the partner's table lands here */
	struct run *peer;
	uint32_t npeer, peer_cap, peer_region;
	int peer_registered;
	uint32_t k_meta, k_data[2], inj;
	dma_injfifo_t *fifo;
	uint32_t seq, tag;
	uint64_t moved;           /* bytes copied locally (statistics) */
};

/* ------------------------------------------------------------ local moves */

static void charge(struct ip *s, uint64_t bytes)
{
	s->moved += bytes;
	coll_charge_copy(s->c, bytes);
}

/* Exchange [a, a+n) and [b, b+n) (disjoint) through the bounce buffer. */
static void swap_blocks(struct ip *s, uint8_t *a, uint8_t *b, size_t n)
{
	size_t cap = 2 * s->half;
	for (size_t o = 0; o < n; o += cap) {
		size_t m = n - o < cap ? n - o : cap;
		memcpy(s->bounce, a + o, m);
		memcpy(a + o, b + o, m);
		memcpy(b + o, s->bounce, m);
	}
	charge(s, 2 * n);
}

/* [x, x+l1) [x+l1, x+l1+l2) -> the second first, in place. */
static void rotate(struct ip *s, uint8_t *x, size_t l1, size_t l2)
{
	size_t cap = 2 * s->half;
	while (l1 && l2) {
		if (l1 <= cap) {
			memcpy(s->bounce, x, l1);
			memmove(x, x + l1, l2);
			memcpy(x + l2, s->bounce, l1);
			charge(s, l1 + l2);
			return;
		}
		if (l2 <= cap) {
			memcpy(s->bounce, x + l1, l2);
			memmove(x + l2, x, l1);
			memcpy(x, s->bounce, l2);
			charge(s, l1 + l2);
			return;
		}
		if (l1 <= l2) {
			/* A B1 B2, |B2| = |A| -> B2 B1 A; then rotate B2 B1 */
			swap_blocks(s, x, x + l2, l1);
			l2 -= l1;
		} else {
			/* A1 A2 B, |A1| = |B| -> B A2 A1; then rotate A2 A1 */
			swap_blocks(s, x, x + l1, l2);
			x += l2;
			l1 -= l2;
		}
	}
}

static void rotate_runs(struct run *r, uint32_t n1, uint32_t n2)
{
	/* three reversals of the small table */
	struct run t;
	for (uint32_t i = 0, j = n1 - 1; n1 && i < j; i++, j--)
		t = r[i], r[i] = r[j], r[j] = t;
	for (uint32_t i = n1, j = n1 + n2 - 1; n2 && i < j; i++, j--)
		t = r[i], r[i] = r[j], r[j] = t;
	for (uint32_t i = 0, j = n1 + n2 - 1; n1 + n2 && i < j; i++, j--)
		t = r[i], r[i] = r[j], r[j] = t;
}

static uint64_t bytes_of(const struct ip *s, const struct run *r, uint32_t n)
{
	uint64_t e = 0;
	for (uint32_t i = 0; i < n; i++)
		e += r[i].len;
	return e * s->esz;
}

/* Merge the sorted runs r[0..n1) and r[n1..n1+n2), whose data lie one after
 * another from x, by rotations (stable: keys never tie). */
static void merge_runs(struct ip *s, uint8_t *x, struct run *r, uint32_t n1, uint32_t n2)
{
	while (n1 && n2) {
		if (!key_less(&r[n1], &r[n1 - 1]))
			return; /* already in order */
		if (n1 + n2 == 2) {
			rotate(s, x, r[0].len * s->esz, r[1].len * s->esz);
			rotate_runs(r, 1, 1);
			return;
		}
		uint32_t c1, c2;
		if (n1 >= n2) {
			c1 = n1 / 2;
			/* first of the right not below r[c1] */
			uint32_t lo = n1, hi = n1 + n2;
			while (lo < hi) {
				uint32_t m = lo + (hi - lo) / 2;
				if (key_less(&r[m], &r[c1]))
					lo = m + 1;
				else
					hi = m;
			}
			c2 = lo;
		} else {
			c2 = n1 + n2 / 2;
			/* first of the left above r[c2] */
			uint32_t lo = 0, hi = n1;
			while (lo < hi) {
				uint32_t m = lo + (hi - lo) / 2;
				if (key_less(&r[c2], &r[m]))
					hi = m;
				else
					lo = m + 1;
			}
			c1 = lo;
		}
		uint32_t total = n1 + n2;
		uint64_t off1 = bytes_of(s, r, c1), l1 = bytes_of(s, r + c1, n1 - c1), l2 = bytes_of(s, r + n1, c2 - n1);
		rotate(s, x + off1, l1, l2);
		rotate_runs(r + c1, n1 - c1, c2 - n1);
		uint32_t mid = c1 + (c2 - n1);
		/* left: r[0..c1) with r[c1..mid); right: r[mid..c2) with r[c2..total) */
		merge_runs(s, x, r, c1, mid - c1);
		x += bytes_of(s, r, mid);
		r += mid;
		n1 = c2 - mid;
		n2 = total - c2;
	}
}

/* Join neighbours that continue each other (same message, next elements). */
static void coalesce(struct ip *s)
{
	uint32_t w = 0;
	for (uint32_t i = 0; i < s->nruns; i++) {
		struct run *r = &s->runs[i];
		if (!r->len)
			continue;
		if (w && s->runs[w - 1].dest == r->dest && s->runs[w - 1].src == r->src &&
		    s->runs[w - 1].k + s->runs[w - 1].len == r->k)
			s->runs[w - 1].len += r->len;
		else
			s->runs[w++] = *r;
	}
	s->nruns = w;
}

/* Room for n runs in runs and tmp; 0 or -ENOMEM. */
static int reserve(struct ip *s, uint32_t n)
{
	if (n <= s->cap)
		return 0;
	uint32_t cap = s->cap ? s->cap : 16;
	while (cap < n)
		cap *= 2;
	struct run *r = coll_v_alloc(s->t, 2 * (size_t)cap * sizeof(*r));
	if (!r)
		return -ENOMEM;
	if (s->nruns)
		memcpy(r, s->runs, s->nruns * sizeof(*r));
	coll_v_free(s->t, s->runs, 2 * (size_t)s->cap * sizeof(*r));
	s->runs = r;
	s->tmp = r + cap;
	s->cap = cap;
	return 0;
}

/* Room for the partner's table of n runs, registered; 0 or an error. */
static int reserve_peer(struct ip *s, uint32_t n)
{
	if (n <= s->peer_cap && s->peer_registered)
		return 0;
	uint32_t cap = s->peer_cap ? s->peer_cap : 16;
	while (cap < n)
		cap *= 2;
	if (s->peer_registered) {
		dma_mem_deregister(s->c, s->peer_region);
		s->peer_registered = 0;
	}
	if (cap != s->peer_cap || !s->peer) {
		struct run *r = coll_v_alloc(s->t, (size_t)cap * sizeof(*r));
		if (!r)
			return -ENOMEM;
		coll_v_free(s->t, s->peer, (size_t)s->peer_cap * sizeof(*r));
		s->peer = r;
		s->peer_cap = cap;
	}
	int rc = dma_mem_register(s->c, s->peer, (size_t)cap * sizeof(struct run), &s->peer_region);
	if (!rc)
		s->peer_registered = 1;
	return rc;
}

/* The runs covering elements [from, to) of a sorted table, cut to fit. */
static uint32_t cut_runs(const struct run *r, uint32_t n, uint64_t from, uint64_t to, struct run *out)
{
	uint32_t w = 0;
	uint64_t at = 0;
	for (uint32_t i = 0; i < n && at < to; i++) {
		uint64_t lo = at, hi = at + r[i].len;
		at = hi;
		if (hi <= from)
			continue;
		uint64_t a = lo > from ? lo : from, b = hi < to ? hi : to;
		if (a >= b)
			continue;
		out[w] = r[i];
		out[w].k += a - lo;
		out[w].len = b - a;
		w++;
	}
	return w;
}

/* ---------------------------------------------------------------- a step */

/* One address exchange with partner q (tag: step and phase). */
static int xchg(struct ip *s, uint32_t q, uint32_t phase, const struct coll_addr *mine, struct coll_addr *theirs)
{
	coll_team_t *t = s->t;
	struct coll_xchg x = {t->node[q], t->cpu[q], q, s->tag * 4 + phase, *mine, {0, 0, 0, 0, 0, 0}};
	x.mine.check = s->err ? 0 : s->check;
	int rc = coll_exchange_many(t, s->seq, &x, 1);
	*theirs = x.theirs;
	return rc;
}

static void fail(struct ip *s, int rc)
{
	if (rc && !s->err)
		s->err = rc;
}

/*
 * Learn partner q's table (into s->peer, s->npeer). Every step starts so,
 * failed or not: the partner waits for our messages either way.
 */
static int tables(struct ip *s, uint32_t q)
{
	struct coll_addr mine = {.counter0 = s->nruns}, theirs;
	int rc = xchg(s, q, 0, &mine, &theirs);
	if (rc) {
		fail(s, rc);
		return rc; /* a mismatch, seen by both: the step ends here for both */
	}
	uint32_t np = theirs.counter0;
	int64_t want = (int64_t)np * (int64_t)sizeof(struct run);
	int my = s->err;
	if (!my)
		my = reserve_peer(s, np);
	if (!my && want)
		my = dma_counter_add(s->c, s->k_meta, want);
	fail(s, my);
	mine = (struct coll_addr){.region = s->peer_region, .counter0 = s->k_meta};
	rc = xchg(s, q, 1, &mine, &theirs);
	if (rc) {
		if (!my && want)
			dma_counter_add(s->c, s->k_meta, -want); /* nothing will come */
		fail(s, rc);
		return rc;
	}
	/* both sides are sound: the tables cross */
	if (s->nruns) {
		struct dma_desc d;
		int64_t b = (int64_t)s->nruns * (int64_t)sizeof(struct run);
		rc = dma_counter_add(s->c, s->inj, b);
		if (!rc) {
			dma_desc_put(&d, s->t->node[q], s->runs, (size_t)b, theirs.region, 0, theirs.counter0, s->inj);
			d.tag = TORUS_TAG(TORUS_TAG_CONTROL, 0, 0, 0, 0);
			rc = dma_injfifo_post(s->fifo, &d, DMA_POST_WAIT);
		}
		int w = dma_counter_wait(s->c, s->inj); /* the table may change after this */
		rc = rc ? rc : w;
	}
	if (!rc && want)
		rc = dma_counter_wait(s->c, s->k_meta);
	s->npeer = np;
	fail(s, rc);
	return rc;
}

/*
 * Swap my bytes [mo, mo+len) with partner q's [po, po+len) (only the length
 * must agree; each side knows its own offset). Rounds of s->half bytes.
 */
static int swap_with(struct ip *s, uint32_t q, uint64_t mo, uint64_t len)
{
	uint64_t h = s->half, rounds = (len + h - 1) / h;
	uint64_t r0 = len < h ? len : h, r1 = rounds > 1 ? (len - h < h ? len - h : h) : 0;
	int rc = dma_counter_add(s->c, s->k_data[0], (int64_t)r0);
	if (!rc && r1)
		rc = dma_counter_add(s->c, s->k_data[1], (int64_t)r1);
	struct coll_addr mine = {.region = s->bounce_region, .counter0 = s->k_data[0], .region2 = s->k_data[1]}, theirs;
	fail(s, rc);
	int x = xchg(s, q, 2, &mine, &theirs);
	if (rc || x) {
		/* nothing moves: disarm (the partner saw the mismatch too) */
		if (!rc) {
			dma_counter_add(s->c, s->k_data[0], -(int64_t)r0);
			if (r1)
				dma_counter_add(s->c, s->k_data[1], -(int64_t)r1);
		}
		fail(s, x);
		return rc ? rc : x;
	}
	for (uint64_t r = 0; !rc && r < rounds; r++) {
		uint64_t off = r * h, n = len - off < h ? len - off : h;
		uint32_t hb = (uint32_t)(r & 1);
		struct dma_desc d;
		if ((rc = dma_counter_add(s->c, s->inj, (int64_t)n)))
			break;
		dma_desc_put(&d, s->t->node[q], s->buf + mo + off, n, theirs.region, hb * h,
			     hb ? theirs.region2 : theirs.counter0, s->inj);
		d.tag = TORUS_TAG(s->t->tag_coll, TORUS_ALGO_OTHER, 0, 0, (uint32_t)q);
		if ((rc = dma_injfifo_post(s->fifo, &d, DMA_POST_WAIT))) {
			dma_counter_add(s->c, s->inj, -(int64_t)n);
			break;
		}
		rc = dma_counter_wait(s->c, s->k_data[hb]); /* its piece is here */
		int w = dma_counter_wait(s->c, s->inj);    /* mine has been read */
		rc = rc ? rc : w;
		if (rc)
			break;
		memcpy(s->buf + mo + off, s->bounce + hb * h, n);
		charge(s, n);
		if (r + 2 < rounds) {
			uint64_t o2 = (r + 2) * h, n2 = len - o2 < h ? len - o2 : h;
			rc = dma_counter_add(s->c, s->k_data[hb], (int64_t)n2);
		}
	}
	if (!rc)
		coll_v_sent(s->t, 0, len);
	fail(s, rc);
	return rc;
}

/*
 * After a swap of my elements [lo, hi) for the partner's [plo, phi): my
 * table becomes mine before lo, the partner's cut, mine from hi, each
 * sorted; merge them (data and table) into one sorted sequence.
 */
static int take_in(struct ip *s, uint64_t lo, uint64_t hi, uint64_t plo, uint64_t phi)
{
	int rc = reserve(s, s->nruns + s->npeer + 4);
	if (rc)
		return rc;
	uint32_t a = cut_runs(s->runs, s->nruns, 0, lo, s->tmp);
	uint32_t b = cut_runs(s->peer, s->npeer, plo, phi, s->tmp + a);
	uint32_t c = cut_runs(s->runs, s->nruns, hi, s->n, s->tmp + a + b);
	memcpy(s->runs, s->tmp, (size_t)(a + b + c) * sizeof(struct run));
	s->nruns = a + b + c;
	merge_runs(s, s->buf, s->runs, a, b);
	merge_runs(s, s->buf, s->runs, a + b, c);
	coalesce(s);
	return 0;
}


/* ------------------------------------------------------------ algorithms */

/* One merge-split with q: the lower of the two keeps the lowest n. */
static void bitonic_step(struct ip *s, uint32_t q)
{
	if (tables(s, q))
		return;
	int low = s->me < q;
	const struct run *L = low ? s->runs : s->peer, *H = low ? s->peer : s->runs;
	uint32_t nl = low ? s->nruns : s->npeer, nh = low ? s->npeer : s->nruns, i = 0, j = 0;
	uint64_t n = s->n, taken = 0, t = 0;
	/* runs of the two sides never interleave inside one another */
	while (taken < n && (i < nl || j < nh)) {
		int from_h = i == nl || (j < nh && key_less(&H[j], &L[i]));
		uint64_t len = from_h ? H[j++].len : L[i++].len, use = n - taken < len ? n - taken : len;
		taken += use;
		if (from_h)
			t += use;
	}
	if (!t)
		return; /* the pair is already split */
	uint64_t lo = low ? n - t : 0;
	if (swap_with(s, q, lo * s->esz, t * s->esz))
		return;
	fail(s, low ? take_in(s, n - t, n, 0, t) : take_in(s, 0, t, n - t, n));
}

/* Elements before the first run whose dest is at least d (tables sorted). */
static uint64_t before_dest(const struct run *r, uint32_t n, uint32_t d)
{
	uint64_t e = 0;
	for (uint32_t i = 0; i < n && r[i].dest < d; i++)
		e += r[i].len;
	return e;
}

/* Pair (a, b), a < b: b hands a what it holds of S(a), a hands b as much
 * of S(a+1), S(a+2), ... (the first of what it holds past S(a)). */
static void pairwise_step(struct ip *s, uint32_t q)
{
	if (tables(s, q))
		return;
	int is_a = s->me < q;
	uint32_t a = is_a ? s->me : q;
	const struct run *A = is_a ? s->runs : s->peer, *B = is_a ? s->peer : s->runs;
	uint32_t na = is_a ? s->nruns : s->npeer, nb = is_a ? s->npeer : s->nruns;
	uint64_t ob = before_dest(B, nb, a), t = before_dest(B, nb, a + 1) - ob;
	uint64_t oa = before_dest(A, na, a + 1), spare = 0;
	for (uint32_t i = 0; i < na; i++)
		spare += A[i].len;
	spare -= oa;
	if (!t)
		return;
	if (spare < t) {
		fail(s, -EIO); /* cannot happen (004 section 3.3); both sides see it */
		return;
	}
	uint64_t mo = is_a ? oa : ob;
	if (swap_with(s, q, mo * s->esz, t * s->esz))
		return;
	fail(s, is_a ? take_in(s, oa, oa + t, ob, ob + t) : take_in(s, ob, ob + t, oa, oa + t));
}

static uint32_t log2_ceil(uint32_t p)
{
	uint32_t l = 0;
	while ((1u << l) < p)
		l++;
	return l;
}

static void run_bitonic(struct ip *s)
{
	uint32_t L = log2_ceil(s->p), me = s->me;
	for (uint32_t k = 1; k <= L; k++) {
		/* mirror step: within blocks of 2^k, i with 2^k - 1 - i */
		uint32_t B = 1u << k, base = me & ~(B - 1), q = base + (B - 1 - (me - base));
		s->tag++;
		if (q < s->p)
			bitonic_step(s, q);
		for (uint32_t j = k - 1; j-- > 0;) {
			q = me ^ (1u << j);
			s->tag++;
			if (q < s->p)
				bitonic_step(s, q);
		}
	}
}

static void run_pairwise(struct ip *s)
{
	/* round r: the pairs (a, r - a); every member meets its partners in
	 * increasing order, and the rounds order every wait */
	for (uint32_t r = 1; r + 2 < 2 * s->p; r++) {
		s->tag++;
		if (r >= s->me && r - s->me < s->p && r - s->me != s->me)
			pairwise_step(s, r - s->me);
	}
}

/* Bits of a non-negative float order as the floats do: a max over them
 * is the max of the values. */
static uint32_t fbits(double x)
{
	float f = (float)x;
	uint32_t u;
	memcpy(&u, &f, sizeof(u));
	return u;
}
static double fval(uint32_t u)
{
	float f;
	memcpy(&f, &u, sizeof(f));
	return f;
}

/*
 * The switch (004 leaves it open): bitonic moves up to N elements in each
 * of its L(L+1)/2 steps (L = ceil(log2 P)); pairwise moves, in P - 1 steps
 * that can chain, at most the largest message M per step. Take pairwise
 * unless (P - 1) M > IP_SWITCH_RATIO x N L(L+1)/2, the ratio 1/2 (the measurements behind it:
 * BENCHMARKS.md as of commit 26917ce, "Variable-size all-to-all in place"), and always when the members' N differ (the
 * network sorts equal blocks only).
 */
#define IP_SWITCH_RATIO 0.5
int coll_alltoallv_inplace_pick(uint32_t p, double n_max, int n_equal, double m_max)
{
	if (!n_equal)
		return 1;
	uint32_t L = log2_ceil(p);
	return (double)(p - 1) * m_max > IP_SWITCH_RATIO * n_max * L * (L + 1) / 2 ? 0 : 1;
}

enum { IP_BITONIC, IP_PAIRWISE, IP_AUTO };

static size_t bounce_bytes(void)
{
	const char *e = getenv("TORUS_COLL_INPLACE_BOUNCE");
	long long v = e ? atoll(e) : 0;
	return v >= 64 && v <= (1ll << 30) ? (size_t)v & ~(size_t)1 : 4096;
}

static int inplace(const struct coll_args *a, int which)
{
	coll_team_t *t = a->team;
	struct ip s = {.t = t, .c = t->core, .p = t->size, .me = t->rank, .esz = coll_dtype_size(a->dtype),
		       .buf = a->recv, .check = a->check};
	uint32_t p = s.p, tag_coll = t->tag_coll;
	uint64_t n = 0, m = 0;
	for (uint32_t j = 0; j < p; j++) {
		n += (uint64_t)a->scounts[j];
		m = (uint64_t)a->scounts[j] > m ? (uint64_t)a->scounts[j] : m;
	}
	s.n = n;

	/* what every member will send us is what we expect: an all-to-all of
	 * the counts (P words each way) */
	size_t cbytes = (size_t)p * sizeof(int64_t);
	int64_t *theirs = malloc(cbytes);
	int rc = coll_agree(t, theirs ? 0 : -ENOMEM);
	if (!rc)
		rc = coll_alltoall(t, a->scounts, theirs, 1, COLL_INT64, NULL);
	t->tag_coll = tag_coll;
	memset(&t->vstats, 0, sizeof(t->vstats));
	t->vnow = 0;
	coll_v_account(t, (int64_t)cbytes);
	for (uint32_t j = 0; !rc && j < p; j++)
		if (theirs[j] != a->rcounts[j])
			rc = -EPROTO;
	free(theirs);
	coll_v_account(t, -(int64_t)cbytes);
	rc = coll_agree(t, rc);
	if (rc)
		return rc;

	/* every member's N, equal or not, and the largest message */
	uint32_t hmax, hmin, lmax, lmin, mm;
	if ((rc = dma_barrier_team_range(s.c, t->part, t->npart, (uint32_t)(n >> 32), &hmax, &hmin)) ||
	    (rc = dma_barrier_team_range(s.c, t->part, t->npart, (uint32_t)n, &lmax, &lmin)) ||
	    (rc = dma_barrier_team_max(s.c, t->part, t->npart, fbits((double)m), &mm)))
		return rc;
	int equal = hmax == hmin && lmax == lmin;
	if (which == IP_AUTO)
		which = coll_alltoallv_inplace_pick(p, (double)n, equal, fval(mm)) ? IP_PAIRWISE : IP_BITONIC;
	if (which == IP_BITONIC && !equal)
		return -ENOTSUP; /* on every member alike */

	/* set up; every member agrees before the first step */
	size_t bb = bounce_bytes();
	s.half = bb / 2;
	s.bounce = coll_v_alloc(t, bb);
	int have_region = 0, have_k = 0, have_inj = 0;
	if (!s.bounce)
		rc = -ENOMEM;
	if (!rc && !(rc = dma_mem_register(s.c, s.bounce, bb, &s.bounce_region)))
		have_region = 1;
	if (!rc && !(rc = dma_counter_alloc_n(s.c, 3, &s.k_meta))) {
		have_k = 1;
		s.k_data[0] = s.k_meta + 1;
		s.k_data[1] = s.k_meta + 2;
	}
	if (!rc && !(rc = dma_counter_alloc(s.c, &s.inj)))
		have_inj = 1;
	if (!rc)
		rc = dma_injfifo_open(s.c, 0, &s.fifo);
	if (!rc)
		rc = reserve(&s, p + 4);
	if (!rc) {
		for (uint32_t j = 0; j < p; j++)
			if (a->scounts[j])
				s.runs[s.nruns++] = (struct run){j, s.me, 0, (uint64_t)a->scounts[j]};
	}
	if (!rc)
		rc = reserve_peer(&s, 16);
	rc = coll_agree(t, rc);
	s.seq = t->seq++;
	if (!rc) {
		if (which == IP_BITONIC)
			run_bitonic(&s);
		else
			run_pairwise(&s);
		rc = s.err;
		/* what we hold now must be S(me), in order */
		if (!rc) {
			uint64_t e = 0;
			for (uint32_t i = 0; i < s.nruns; i++) {
				if (s.runs[i].dest != s.me || (i && !key_less(&s.runs[i - 1], &s.runs[i])))
					rc = -EIO;
				e += s.runs[i].len;
			}
			if (e != n)
				rc = -EIO;
		}
		rc = coll_agree(t, rc);
	}
	t->vstats.stages = 1;
	snprintf(t->vstats.ran, sizeof(t->vstats.ran), "%s", which == IP_BITONIC ? "bitonic" : "pairwise");
	if (have_inj)
		dma_counter_free(s.c, s.inj);
	if (have_k)
		dma_counter_free_n(s.c, s.k_meta, 3);
	if (have_region)
		dma_mem_deregister(s.c, s.bounce_region);
	if (s.peer_registered)
		dma_mem_deregister(s.c, s.peer_region);
	coll_v_free(t, s.peer, (size_t)s.peer_cap * sizeof(struct run));
	coll_v_free(t, s.runs, 2 * (size_t)s.cap * sizeof(struct run));
	coll_v_free(t, s.bounce, bb);
	return rc;
}

int coll_alltoallv_bitonic(const struct coll_args *a) { return inplace(a, IP_BITONIC); }
int coll_alltoallv_pairwise(const struct coll_args *a) { return inplace(a, IP_PAIRWISE); }
int coll_alltoallv_inplace_auto(const struct coll_args *a) { return inplace(a, IP_AUTO); }

int coll_inplace_fits(const coll_team_t *t)
{
	return t->cores == 1 && emu_params(t->core)->dma_counters >= 6;
}

int coll_vi_check(const struct coll_args *a, uint32_t p)
{
	size_t esz = coll_dtype_size(a->dtype);
	if (!esz || !a->scounts || !a->rcounts)
		return -EINVAL;
	uint64_t cap = (1ull << 62) / esz, ns = 0, nr = 0;
	for (uint32_t j = 0; j < p; j++) {
		if (a->scounts[j] < 0 || a->rcounts[j] < 0 || (uint64_t)a->scounts[j] > cap ||
		    (uint64_t)a->rcounts[j] > cap)
			return -EINVAL;
		ns += (uint64_t)a->scounts[j];
		nr += (uint64_t)a->rcounts[j];
		if (ns > cap || nr > cap)
			return -EINVAL;
	}
	if (ns != nr || (ns && !a->recv))
		return -EINVAL;
	return 0;
}
