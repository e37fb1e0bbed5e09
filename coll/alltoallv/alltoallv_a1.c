/*
 * alltoallv "a1": the direct algorithm A1 of 002_7cde2a420b12b1bb.txt
 * ("during the i th step, 1 <= i <= P, node j sends the message destined
 * for node (i+j)%P"; step P is its message to itself).
 *
 * Steps: register recv; arm one reception counter with the bytes this
 * member will receive from the others; tell every other member j where its
 * data goes (our region, counter and rdispls[j]) and how much we expect
 * from it (rcounts[j]), and learn the same from j (coll_exchange_many); a
 * member that finds its scounts[j] different from what j expects fails,
 * and the agreement that follows makes every member fail alike (-EPROTO).
 * Then the puts to j+1, j+2, ..., each straight from send + sdispls into
 * the receiver's recv (empty messages are not sent), the copy to itself,
 * and the wait for every byte. As the all-to-all's direct does, a message
 * of two parts of 8 full packets or more goes in parts, part k to every
 * member before part k+1, and each put goes into the injection FIFO of
 * its route's first link: with one FIFO for all, the node injected one
 * message at a time, and a uniform alltoallv took twice as long as the
 * regular all-to-all of the same volume (823 against 417 us on 4x4x4 with
 * 4 KiB messages; 408 us now).
 *
 * Cost: P start-ups per member (P - 1 puts and the copy to itself, Table 3
 * of 002, counted by coll_alltoallv_stats as the non-empty ones), the
 * member's L_out bytes injected; on the torus, as direct in the all-to-all
 * family, every message crosses its route's links. Extra memory: the
 * address table, O(P) (measured as extra_bytes). Counters: two and the
 * exchange's, whatever P.
 */
#include "alltoallv.h"

#include <errno.h>
#include <string.h>

int coll_alltoallv_a1(const struct coll_args *a)
{
	coll_team_t *t = a->team;
	emu_core_t *c = t->core;
	uint32_t p = t->size, me = t->rank;
	size_t esz = coll_dtype_size(a->dtype);
	uint64_t extent = coll_v_extent(a->rcounts, a->rdispls, p, esz), expect = 0;
	for (uint32_t j = 0; j < p; j++)
		if (j != me)
			expect += (uint64_t)a->rcounts[j] * esz;
	t->vstats.stages = 1; /* one stage, whatever this member sends */
	/* our message to ourselves must agree with itself */
	int rc = a->scounts[me] != a->rcounts[me] ? -EPROTO : 0;
	uint32_t region = UINT32_MAX, k = 0, inj = 0;
	int have_r = 0, have_k = 0, have_inj = 0;
	struct coll_fifos fs;
	memset(&fs, 0, sizeof(fs));
	size_t xbytes = (p > 1 ? p - 1 : 1) * sizeof(struct coll_xchg);
	struct coll_xchg *x = coll_v_alloc(t, xbytes);
	if (!x)
		rc = -ENOMEM;
	if (!rc && extent && !(rc = dma_mem_register(c, a->recv, extent, &region)))
		have_r = 1;
	if (!rc && !(rc = dma_counter_alloc(c, &k))) {
		have_k = 1;
		rc = dma_counter_add(c, k, (int64_t)expect);
	}
	if (!rc && !(rc = dma_counter_alloc(c, &inj)))
		have_inj = 1;
	if (!rc)
		rc = coll_fifos_open(c, &fs);
	/* the exchange runs even after a failure (check 0): nobody waits in vain */
	for (uint32_t i = 1; x && i < p; i++) {
		uint32_t j = (me + i) % p;
		uint64_t want = (uint64_t)a->rcounts[j];
		x[i - 1] = (struct coll_xchg){.to_node = t->node[j], .to_core = t->cpu[j], .from = j};
		x[i - 1].mine = (struct coll_addr){.region = region, .counter0 = k, .check = rc ? 0 : a->check,
						   .offset = (uint64_t)a->rdispls[j] * esz,
						   .region2 = (uint32_t)want, .pad_ = (uint32_t)(want >> 32)};
	}
	int xr = x ? coll_exchange_many(t, t->seq++, x, p - 1) : -ENOMEM;
	/* what each receiver expects from us must be what we send it */
	for (uint32_t i = 1; !rc && !xr && i < p; i++) {
		uint32_t j = (me + i) % p;
		uint64_t theirs = x[i - 1].theirs.region2 | (uint64_t)x[i - 1].theirs.pad_ << 32;
		if (theirs != (uint64_t)a->scounts[j])
			rc = -EPROTO;
	}
	rc = coll_agree(t, rc ? rc : xr);
	uint64_t part = 8ull * torus_params_payload(emu_params(c)), parts = 1;
	for (uint32_t j = 0; j < p; j++) {
		uint64_t bytes = (uint64_t)a->scounts[j] * esz, n = bytes >= 2 * part ? (bytes + part - 1) / part : 1;
		parts = n > parts ? n : parts;
	}
	for (uint64_t q = 0; !rc && q < parts; q++)
		for (uint32_t i = 1; !rc && i < p; i++) {
			uint32_t j = (me + i) % p;
			uint64_t bytes = (uint64_t)a->scounts[j] * esz, n = bytes >= 2 * part ? (bytes + part - 1) / part : 1;
			if (!bytes || q >= n)
				continue;
			uint64_t lo = q * part, len = q + 1 == n ? bytes - lo : part;
			const struct coll_addr *to = &x[i - 1].theirs;
			struct dma_desc d;
			if ((rc = dma_counter_add(c, inj, (int64_t)len)))
				break;
			dma_desc_put(&d, t->node[j], (const uint8_t *)a->send + (uint64_t)a->sdispls[j] * esz + lo, len,
				     to->region, to->offset + lo, to->counter0, inj);
			d.tag = TORUS_TAG(t->tag_coll, TORUS_ALGO_DIRECT, 0, 0, (uint32_t)i);
			if ((rc = dma_injfifo_post(coll_fifo_to(&fs, t->node[j]), &d, DMA_POST_WAIT))) {
				dma_counter_add(c, inj, -(int64_t)len); /* it never left */
				break;
			}
			if (!q)
				coll_v_sent(t, 0, bytes); /* a message, however many parts */
		}
	if (!rc && a->scounts[me]) {
		uint64_t bytes = (uint64_t)a->scounts[me] * esz;
		memmove((uint8_t *)a->recv + (uint64_t)a->rdispls[me] * esz,
			(const uint8_t *)a->send + (uint64_t)a->sdispls[me] * esz, bytes);
		coll_charge_copy(c, bytes);
		coll_v_sent(t, 0, bytes);
	}
	if (!rc && have_k)
		rc = dma_counter_wait(c, k);
	if (have_inj) {
		int w = dma_counter_wait(c, inj); /* the send buffer may be reused after this */
		rc = rc ? rc : w;
		dma_counter_free(c, inj);
	}
	if (have_k)
		dma_counter_free(c, k);
	if (have_r)
		dma_mem_deregister(c, region);
	coll_fifos_close(&fs);
	coll_v_free(t, x, xbytes);
	return rc;
}
