/*
 * torus-bench's reference: the inputs each member starts with and the
 * closed-form results it checks each member's result against.
 */
#include "bench.h"

#include <string.h>

/* ------------------------------------------------------------ reference */

/*
 * Inputs and closed-form results, with g(j) in [0, m) a hash of the element
 * index j (so that a misplaced block shows) and p the number of nodes.
 * Member r holds at index j:
 *   sum, min, max  g(j) + (r + j) % q       (q = p, or 1 beyond 2048 nodes)
 *                  sum = p g + q(q-1)/2 [q = p], min = g, max = g + q - 1
 *   prod           2 + g(j) % 3 at member j % p, 1 elsewhere; prod = 2 + g % 3
 *   bor            g(j) << 16 | bit (r + j) % b  (b = min(p, 16));
 *                  bor = g << 16 | (2^b - 1)
 *   band           g(j) << 16 | (0xffff without bit (r + j) % b);
 *                  band = g << 16 | (0xffff & ~(2^b - 1))
 * m is chosen so that every partial sum stays below 2^24: exact in float.
 * allgather: member r's element k is a(r * count + k), a(i) = hash(i) % 2^20.
 */

void ref_init(struct ref *f, uint32_t p)
{
	uint64_t lim = (1ull << 24) / p;
	f->p = p;
	f->q = p <= 2048 ? p : 1;
	f->m = lim > f->q + 1 ? lim - f->q : 1;
	if (f->m > 1024)
		f->m = 1024;
	f->b = p < 16 ? p : 16;
}

uint64_t mix(uint64_t x)
{
	x ^= x >> 31;
	x *= 0x7fb5d329728ea185ull;
	x ^= x >> 27;
	x *= 0x81dadef4bc2dd44dull;
	return x ^ (x >> 33);
}

static int64_t ref_input(const struct ref *f, enum coll_op op, uint32_t r, uint64_t j)
{
	int64_t g = (int64_t)(mix(j) % f->m);
	switch (op) {
	case COLL_PROD: return r == j % f->p ? 2 + g % 3 : 1;
	case COLL_BOR: return g << 16 | (int64_t)1 << ((r + j) % f->b);
	case COLL_BAND: return g << 16 | (0xffff & ~((int64_t)1 << ((r + j) % f->b)));
	default: return g + (int64_t)((r + j) % f->q);
	}
}

static int64_t ref_result(const struct ref *f, enum coll_op op, uint64_t j)
{
	int64_t g = (int64_t)(mix(j) % f->m), q = f->q, mask = ((int64_t)1 << f->b) - 1;
	switch (op) {
	case COLL_SUM: return (int64_t)f->p * g + q * (q - 1) / 2;
	case COLL_PROD: return 2 + g % 3;
	case COLL_MIN: return g;
	case COLL_MAX: return g + q - 1;
	case COLL_BOR: return g << 16 | mask;
	case COLL_BAND: return g << 16 | (0xffff & ~mask);
	default: return 0;
	}
}

static int64_t ref_gather(uint64_t i) { return (int64_t)(mix(i ^ 0x5bd1e995u) % (1u << 20)); }

static void put_elem(enum coll_dtype t, void *buf, size_t i, int64_t v)
{
	switch (t) {
	case COLL_INT32: ((int32_t *)buf)[i] = (int32_t)v; break;
	case COLL_INT64: ((int64_t *)buf)[i] = v; break;
	case COLL_FLOAT: ((float *)buf)[i] = (float)v; break;
	default: ((double *)buf)[i] = (double)v; break;
	}
}

/* Every value used is an integer below 2^27: exact as a double. */
static double get_elem(enum coll_dtype t, const void *buf, size_t i)
{
	switch (t) {
	case COLL_INT32: return ((const int32_t *)buf)[i];
	case COLL_INT64: return (double)((const int64_t *)buf)[i];
	case COLL_FLOAT: return ((const float *)buf)[i];
	default: return ((const double *)buf)[i];
	}
}

/* Element k of member i's message to j (small integers: exact in float). */
static int64_t v_value(uint32_t i, uint32_t j, uint64_t k)
{
	return (int64_t)(mix((uint64_t)i << 40 ^ (uint64_t)j << 20 ^ k) % (1u << 20));
}

/* alltoall: member r's element k of its block for j */
static int64_t ref_a2a(uint32_t r, uint32_t j, uint32_t p, size_t count, size_t k)
{
	return ref_gather(((uint64_t)r * p + j) * count + k);
}

/* The first mismatch a checking core found (a core per node, or every core
 * with alltoall --members cores). */
_Thread_local struct mismatch chk;

/* Fill the input of member me of p (send, recv: its buffers). */
void fill(void *send, void *recv, uint32_t me, uint32_t p, size_t count, const struct ref *f)
{
	size_t esz = coll_dtype_size(opt.dtype);
	if (opt.kind == COLL_ALLTOALLV) {
		for (uint32_t j = 0; j < p; j++)
			for (int64_t k = 0; k < vc.sc[j]; k++)
				put_elem(opt.dtype, send, (size_t)(vc.sd[j] + k), v_value(me, j, (uint64_t)k));
		memset(recv, 0xa5, vc.rtot * esz);
		if (opt.inplace) /* the buffer starts with what we send */
			memcpy(recv, send, (vc.stot < vc.rtot ? vc.stot : vc.rtot) * esz);
		return;
	}
	if (opt.kind == COLL_ALLTOALL) {
		/* --no-check: neither buffer is touched here, so the send
		 * buffer, read but never written, stays on the kernel's zero
		 * page: half the memory (8x8x8 with 64 KiB blocks: 16 GiB, not
		 * 32). The bytes still travel in packets. */
		if (!opt.check)
			return;
		for (uint32_t j = 0; j < p; j++)
			for (size_t k = 0; k < count; k++)
				put_elem(opt.dtype, send, j * count + k, ref_a2a(me, j, p, count, k));
		memset(recv, 0xa5, count * p * esz);
		return;
	}
	if (opt.kind == COLL_ALLGATHER) {
		for (size_t k = 0; k < count; k++)
			put_elem(opt.dtype, send, k, ref_gather((uint64_t)me * count + k));
		memset(recv, 0xa5, count * p * esz);
		return;
	}
	size_t n = opt.kind == COLL_ALLREDUCE ? count : count * p;
	for (size_t j = 0; j < n; j++)
		put_elem(opt.dtype, send, j, ref_input(f, opt.op, me, j));
	memset(recv, 0xa5, count * esz);
}

/* Compare member me's result with the reference; 0 if it all matches.
 * (chk.wrong*: the first mismatch; one checking core per node.) */
int verify(void *recv, uint32_t me, uint32_t p, size_t count, const struct ref *f)
{
	size_t n = opt.kind == COLL_ALLGATHER || opt.kind == COLL_ALLTOALL ? count * p : count;
	uint32_t vsrc = 0;
	if (opt.kind == COLL_ALLTOALLV)
		n = vc.rtot;
	chk.wrong = 0;
	if (opt.corrupt_node == (int64_t)me && opt.corrupt_elem < n)
		put_elem(opt.dtype, recv, opt.corrupt_elem, (int64_t)get_elem(opt.dtype, recv, opt.corrupt_elem) + 1);
	for (size_t k = 0; k < n; k++) {
		int64_t want;
		if (opt.kind == COLL_ALLTOALLV) {
			/* the source whose range holds k (k only grows) */
			while (vsrc + 1 < p && (uint64_t)vc.rd[vsrc + 1] <= k)
				vsrc++;
			want = v_value(vsrc, me, k - (uint64_t)vc.rd[vsrc]);
		} else if (opt.kind == COLL_ALLTOALL)
			want = ref_a2a((uint32_t)(k / count), me, p, count, k % count);
		else if (opt.kind == COLL_ALLGATHER)
			want = ref_gather(k);
		else
			want = ref_result(f, opt.op, opt.kind == COLL_REDUCE_SCATTER ? (uint64_t)me * count + k : k);
		double got = get_elem(opt.dtype, recv, k);
		if (got != (double)want && !chk.wrong++) {
			chk.wrong_at = k;
			chk.got = got;
			chk.want = (double)want;
		}
	}
	return chk.wrong != 0;
}
