/*
 * The rooted collectives' torus algorithm (issue 16): MPI_Gather and
 * MPI_Scatter through relays on the root's axes, which MPI_Reduce and
 * MPI_Bcast build on (mpi_coll.c: reduce = the catalogue's multicolor
 * reduce-scatter, then this gather; bcast = this scatter, then the
 * multicolor allgather: the bucket framework of 003_b0aac8c3d10c7733.txt,
 * section 2, whose building blocks are reduce-scatter and allgather "along
 * with the Gather and Scatter collectives").
 *
 * Why relays. Everything a gather moves enters the root through its 2N
 * links, so (p - 1) blocks over 2N link directions is the bound. Routes
 * are dimension order (lowest dimension first), so a block sent straight
 * to the root comes in along the highest dimension in which its node
 * differs from the root's: on 4x4x4, 48 of the 63 blocks come in on the
 * two z links, 32 on one of them (the tie rule sends distance 2 one way),
 * three times the bound. A block can instead go first to a relay on one of
 * the root's axes (the root's coordinates but in one dimension d, where it
 * has its node's): from there the route to the root runs along d only, so
 * it comes in on d's link on that side. Each member's options are the
 * dimensions it differs in (the highest one is the straight route, which
 * passes through that relay anyway); the plan gives every block the
 * option whose incoming link carries the fewest blocks so far, members
 * with the fewest options first, so each of the root's link directions
 * carries about (p - 1) / 2N blocks. A relay forwards each block as it
 * arrives. Scatter is the same plan, run backwards.
 *
 * Every member computes the same plan from the communicator's nodes, the
 * root and the torus shape. A relay must be a member of the communicator;
 * where it is not, that option is not taken.
 */
#include "mpi_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* A member's ways to the root: option 0 straight, the others through the
 * relay on one axis; cls is the root's link direction it comes in on
 * (2 * dim + (1 if it travels towards minus)). */
struct ways {
	int n;
	uint32_t cls[TORUS_MAX_DIMS];
	int relay[TORUS_MAX_DIMS]; /* the relay's rank (option 0: the member) */
};

static void ways_of(const struct torus_shape *s, const uint32_t *rc, uint32_t node, int self, const int *rank_at,
		    int out, struct ways *w)
{
	uint32_t c[TORUS_MAX_DIMS], r[TORUS_MAX_DIMS];
	torus_rank_to_coords(s, node, c);
	w->n = 0;
	/* the straight route meets the root along its highest dimension in
	 * (gather), or leaves it along its lowest (scatter): that one first */
	for (int i = 0; i < (int)s->ndims; i++) {
		int d = out ? i : (int)s->ndims - 1 - i;
		if (c[d] == rc[d])
			continue;
		/* along d only, between the root and the relay (whose d is c[d]) */
		int32_t delta = out ? torus_ring_delta(s->dims[d], rc[d], c[d]) : -torus_ring_delta(s->dims[d], c[d], rc[d]);
		int relay = self;
		if (w->n) {
			memcpy(r, rc, sizeof(r));
			r[d] = c[d];
			relay = rank_at[torus_coords_to_rank(s, r)];
			if (relay < 0)
				continue; /* not a member: no relay there */
		}
		w->cls[w->n] = 2u * (uint32_t)d + (delta < 0);
		w->relay[w->n] = relay;
		w->n++;
	}
}

int mpi_rooted_plan(MPI_Comm comm, int root, int out, int *via)
{
	struct mpi_comm *cm = mpi_comm_of(comm);
	const struct torus_shape *s = emu_shape(mpi_g.c);
	int p = cm->size;
	int *rank_at = malloc(s->nnodes * sizeof(*rank_at));
	if (!rank_at)
		return -1;
	for (uint32_t n = 0; n < s->nnodes; n++)
		rank_at[n] = -1;
	for (int i = 0; i < p; i++)
		rank_at[cm->world[i]] = i;
	uint32_t rc[TORUS_MAX_DIMS];
	torus_rank_to_coords(s, cm->world[root], rc);
	uint64_t load[2 * TORUS_MAX_DIMS] = {0};
	via[root] = root;
	/* members with one way first, then two, ... */
	for (int k = 1; k <= (int)s->ndims; k++)
		for (int i = 0; i < p; i++) {
			struct ways w;
			if (i == root)
				continue;
			ways_of(s, rc, cm->world[i], i, rank_at, out, &w);
			if (w.n != k && !(k == 1 && w.n == 0))
				continue;
			int best = 0;
			for (int j = 1; j < w.n; j++)
				if (load[w.cls[j]] < load[w.cls[best]])
					best = j;
			via[i] = w.n ? w.relay[best] : i; /* (n = 0: the root's own node; cannot happen) */
			if (w.n)
				load[w.cls[best]]++;
		}
	free(rank_at);
	return 0;
}

/* The members whose blocks i carries (not its own), in rank order. */
static int relayed_by(const int *via, int p, int i, int *out)
{
	int k = 0;
	for (int j = 0; j < p; j++)
		if (j != i && via[j] == i)
			out[k++] = j;
	return k;
}

/* Where a member wants blocks put: its block (or, for the root of a
 * gather, all of them), and a relay's carried blocks. */
struct where {
	uint32_t region, counter;       /* DMA_NO_COUNTER: none */
	uint32_t tregion, tcounter;     /* a relay's carried blocks, in its rank order */
	uint32_t per, pad_;             /* 1: a counter per carried block, tcounter + its slot */
};

/* A relay with at most this many carried blocks takes a counter for each
 * and puts their parts on as they come (watermarks); one with more waits
 * for all of them, on one counter. */
#define RELAY_PIPELINE_MAX 32u
/* parts a carried block is put on in, at most; and their least size */
#define RELAY_PARTS 16u
#define RELAY_PART_MIN 1920u

/* One call's DMA resources on this member. */
struct res {
	uint32_t region, counter, tregion, tcounter, inj;
	uint32_t per, ntc;              /* tcounter .. tcounter + ntc - 1: a counter per carried block */
	dma_injfifo_t *fifo[32];
	uint32_t nfifo;
	uint8_t *route;
};

static void res_init(struct res *r)
{
	memset(r, 0, sizeof(*r));
	r->region = r->counter = r->tregion = r->tcounter = r->inj = DMA_NO_COUNTER;
}

/* The levels a carried block's counter falls to, part by part. */
static uint32_t parts_of(uint64_t B, uint64_t *part)
{
	uint64_t q = (B + RELAY_PARTS - 1) / RELAY_PARTS;
	*part = q < RELAY_PART_MIN ? RELAY_PART_MIN : q;
	return (uint32_t)((B + *part - 1) / *part);
}

/* buf: len bytes, of which `expect` will come; tmp: k blocks of B, all to
 * come (with a counter each, watched part by part, if k is small). */
static int res_open(struct res *r, void *buf, uint64_t len, uint64_t expect, void *tmp, uint32_t k, uint64_t B)
{
	emu_core_t *c = mpi_g.c;
	int rc = 0;
	if (buf && len && !(rc = dma_mem_register(c, buf, len, &r->region)) && !(rc = dma_counter_alloc(c, &r->counter)))
		rc = dma_counter_add(c, r->counter, (int64_t)expect);
	if (!rc && tmp && k && B && !(rc = dma_mem_register(c, tmp, (size_t)k * B, &r->tregion))) {
		r->per = k <= RELAY_PIPELINE_MAX;
		r->ntc = r->per ? k : 1;
		if (!(rc = dma_counter_alloc_n(c, r->ntc, &r->tcounter))) {
			uint64_t part;
			int64_t levels[RELAY_PARTS];
			uint32_t n = parts_of(B, &part);
			for (uint32_t m = 0; m < n; m++)
				levels[m] = (int64_t)(B - ((m + 1) * part < B ? (m + 1) * part : B));
			for (uint32_t i = 0; !rc && i < r->ntc; i++)
				if (!(rc = dma_counter_add(c, r->tcounter + i, (int64_t)(r->per ? B : (uint64_t)k * B))) &&
				    r->per)
					rc = dma_counter_watch(c, r->tcounter + i, levels, n);
		} else {
			r->tcounter = DMA_NO_COUNTER;
		}
	}
	if (!rc)
		rc = dma_counter_alloc(c, &r->inj);
	/* a FIFO per first link (as the all-to-all's), past MPI's FIFO 0 */
	uint32_t n = emu_params(c)->inj_fifos;
	r->nfifo = n > 32 ? 32 : n;
	if (!rc && !(r->route = malloc(emu_shape(c)->nnodes)))
		rc = -ENOMEM;
	if (!rc)
		torus_route_table(emu_shape(c), emu_node_rank(c), r->route);
	for (uint32_t i = 0; !rc && i < r->nfifo; i++)
		rc = dma_injfifo_open(c, i, &r->fifo[i]);
	return rc;
}

static void res_close(struct res *r)
{
	emu_core_t *c = mpi_g.c;
	if (r->region != DMA_NO_COUNTER)
		dma_mem_deregister(c, r->region);
	if (r->tregion != DMA_NO_COUNTER)
		dma_mem_deregister(c, r->tregion);
	if (r->counter != DMA_NO_COUNTER)
		dma_counter_free(c, r->counter);
	if (r->tcounter != DMA_NO_COUNTER)
		dma_counter_free_n(c, r->tcounter, r->ntc);
	if (r->inj != DMA_NO_COUNTER)
		dma_counter_free(c, r->inj);
	free(r->route);
}

/* Put len bytes at src to (node, region, offset), counted by counter there. */
static int put(struct res *r, uint32_t node, const void *src, uint64_t len, uint32_t region, uint64_t offset,
	       uint32_t counter, uint32_t tag)
{
	struct dma_desc d;
	uint32_t link = r->route[node], f = r->nfifo < 2 ? 0 : 1 + (link == TORUS_ROUTE_LOCAL ? 0 : link) % (r->nfifo - 1);
	int rc = dma_counter_add(mpi_g.c, r->inj, (int64_t)len);
	if (rc)
		return rc;
	dma_desc_put(&d, node, src, len, region, offset, counter, r->inj);
	d.tag = tag;
	return dma_injfifo_post(r->fifo[f], &d, DMA_POST_WAIT);
}

/*
 * A relay puts its k carried blocks (tmp, B bytes each) on: block j to
 * dst[j] at doff[j], on the node of member to (>= 0: the root's, else
 * carried[j]'s). With a counter per block, part by part as each part's
 * watermark is crossed (the parts of one put arrive in order), the part
 * that arrived first in virtual time first; else all once they are in.
 */
static int forward(struct res *r, int k, uint64_t B, const char *tmp, const uint32_t *world, int to,
		   const int *carried, const struct where *dst, const uint64_t *doff, uint32_t ttag)
{
	emu_core_t *c = mpi_g.c;
	int rc = 0;
	if (!r->per) {
		rc = dma_counter_wait(c, r->tcounter);
		for (int j = 0; j < k && !rc; j++)
			rc = put(r, world[to >= 0 ? to : carried[j]], tmp + (uint64_t)j * B, B, dst[j].region, doff[j],
				 dst[j].counter, ttag);
		return rc;
	}
	uint64_t part;
	uint32_t nparts = parts_of(B, &part), next[RELAY_PIPELINE_MAX] = {0}, ids[RELAY_PIPELINE_MAX],
		 marks[RELAY_PIPELINE_MAX], idx[RELAY_PIPELINE_MAX];
	for (int left = k; left && !rc;) {
		size_t n = 0, which = 0;
		for (int j = 0; j < k; j++)
			if (next[j] < nparts) {
				ids[n] = r->tcounter + (uint32_t)j;
				marks[n] = next[j];
				idx[n++] = (uint32_t)j;
			}
		if ((rc = dma_counter_wait_marks(c, ids, marks, n, &which)))
			break;
		uint32_t j = idx[which], m = next[j]++;
		/* the part acts no earlier than it arrived */
		torus_vt_t vt = 0;
		int got = 0;
		if ((rc = dma_counter_mark(c, ids[which], m, &vt, &got)))
			break;
		if (got && vt > emu_core_now(c) && (rc = emu_core_set_clock(c, vt)))
			break;
		uint64_t off = (uint64_t)m * part, len = B - off < part ? B - off : part;
		rc = put(r, world[to >= 0 ? to : carried[j]], tmp + (uint64_t)j * B + off, len, dst[j].region, doff[j] + off,
			 dst[j].counter, ttag);
		if (next[j] == nparts)
			left--;
	}
	return rc;
}

/*
 * One run of the plan, on the DMA unit. Every member first learns where to
 * put (short messages: the root tells the members that send to it
 * straight, a relay tells the members it carries; in a scatter the other
 * way round), then the blocks go as direct puts, each counted by one
 * counter at its receiver: a relay waits for all it carries, then puts
 * them on. gather: blocks flow to the root (recv there holds p blocks, its
 * own already in place; the others send `mine`); scatter: from the root
 * (send there holds p blocks, its own it copies itself; the others receive
 * into `mine`).
 */
static int run(int gather, const void *rootsend, void *rootrecv, void *mine, uint64_t B, int root, int tag,
	       MPI_Comm comm)
{
	struct mpi_comm *cm = mpi_comm_of(comm);
	emu_core_t *c = mpi_g.c;
	int p = cm->size, me = cm->rank, rc = 0, k = 0;
	uint32_t ttag = mpi_coll_trace(tag);
	int *via = malloc((size_t)p * 4 * sizeof(int));
	struct where *w = calloc((size_t)p, sizeof(*w)); /* what each peer told me */
	struct torus_mpi_request *rq = calloc((size_t)p + 1, sizeof(*rq));
	char *tmp = NULL;
	struct where *dst = NULL; /* where each carried block goes on */
	uint64_t *doff = NULL;
	struct res r;
	res_init(&r);
	if (!via || !w || !rq || mpi_rooted_plan(comm, root, !gather, via)) {
		rc = -ENOMEM;
		goto out;
	}
	/* slot[j]: j's place among its relay's carried blocks (rank order) */
	int *carried = via + p, *slot = via + 2 * p, *seen = via + 3 * p;
	memset(seen, 0, (size_t)p * sizeof(int));
	for (int i = 0; i < p; i++)
		slot[i] = via[i] == i ? 0 : seen[via[i]]++;
	if (me != root)
		k = relayed_by(via, p, me, carried);
	if (k) {
		dst = calloc((size_t)k, sizeof(*dst));
		doff = calloc((size_t)k, sizeof(*doff));
	}
	if (k && (!(tmp = malloc((size_t)k * B)) || !dst || !doff))
		rc = -ENOMEM;
	else if (gather)
		rc = res_open(&r, me == root ? rootrecv : NULL, (uint64_t)p * B, (uint64_t)(p - 1) * B, tmp, (uint32_t)k, B);
	else
		rc = res_open(&r, me == root ? NULL : mine, B, B, tmp, (uint32_t)k, B);
	if (rc)
		goto out; /* (an internal failure: the peers wait for our address in vain) */
	struct where mineaddr = {r.region, r.counter, r.tregion, r.tcounter, r.per, 0};
	int to = via[me] == me ? root : via[me], n = 0;
	if (gather) {
		/* the root tells the straight senders, a relay its carried */
		if (me == root) {
			for (int i = 0; i < p && !rc; i++)
				if (i != root && via[i] == i && !(rc = mpi_isend_raw(&rq[n], &mineaddr, sizeof(mineaddr), i, tag, comm)))
					n++;
		} else {
			for (int j = 0; j < k && !rc; j++) {
				struct where rw = {r.tregion, r.tcounter + (r.per ? (uint32_t)j : 0), 0, 0, 0, 0};
				rc = mpi_send_raw(&rw, sizeof(rw), carried[j], tag, comm);
			}
			if (!rc)
				rc = mpi_recv_raw(&w[to], sizeof(w[to]), to, tag, comm);
		}
	} else {
		/* the straight receivers tell the root, the carried their relay */
		if (me == root) {
			for (int i = 0; i < p; i++)
				if (i != root && via[i] == i)
					mpi_irecv_raw(&rq[n++], &w[i], sizeof(w[i]), i, tag, comm);
		} else {
			for (int j = 0; j < k; j++)
				mpi_irecv_raw(&rq[n++], &w[carried[j]], sizeof(w[0]), carried[j], tag, comm);
			int e = mpi_send_raw(&mineaddr, sizeof(mineaddr), to, tag, comm);
			if (!rc)
				rc = e;
		}
	}
	for (int i = 0; i < n; i++) {
		int e = mpi_wait_raw(&rq[i]);
		if (!rc)
			rc = e;
	}
	if (rc)
		goto out;
	if (gather && me != root) {
		/* mine: straight to the root's buffer, or to my relay's */
		rc = via[me] == me ? put(&r, cm->world[root], mine, B, w[root].region, (uint64_t)me * B, w[root].counter, ttag)
				   : put(&r, cm->world[to], mine, B, w[to].region, (uint64_t)slot[me] * B, w[to].counter, ttag);
		for (int j = 0; j < k; j++) {
			dst[j] = (struct where){w[root].region, w[root].counter, 0, 0, 0, 0};
			doff[j] = (uint64_t)carried[j] * B;
		}
		if (!rc && k)
			rc = forward(&r, k, B, tmp, cm->world, root, carried, dst, doff, ttag);
	} else if (gather) {
		if (p > 1)
			rc = dma_counter_wait(c, r.counter);
	} else if (me == root) {
		/* the relays' blocks first (they wait for all of theirs), then
		 * the straight ones */
		for (int pass = 0; pass < 2 && !rc; pass++)
			for (int i = 0; i < p && !rc; i++) {
				if (i == root || (via[i] == i) != pass)
					continue;
				const char *src = (const char *)rootsend + (uint64_t)i * B;
				rc = via[i] == i ? put(&r, cm->world[i], src, B, w[i].region, 0, w[i].counter, ttag)
						 : put(&r, cm->world[via[i]], src, B, w[via[i]].tregion, (uint64_t)slot[i] * B,
						       w[via[i]].tcounter + (w[via[i]].per ? (uint32_t)slot[i] : 0), ttag);
			}
	} else {
		for (int j = 0; j < k; j++) {
			dst[j] = w[carried[j]];
			doff[j] = 0;
		}
		if (k)
			rc = forward(&r, k, B, tmp, cm->world, -1, carried, dst, doff, ttag);
		if (!rc)
			rc = dma_counter_wait(c, r.counter);
	}
	/* what I put has left (my buffers are mine again) */
	if (!rc)
		rc = dma_counter_wait(c, r.inj);
out:
	res_close(&r);
	free(dst);
	free(doff);
	free(tmp);
	free(via);
	free(w);
	free(rq);
	return rc ? MPI_ERR_INTERN : MPI_SUCCESS;
}

int mpi_gather_torus(const void *mine, void *recv, uint64_t block, int root, int tag, MPI_Comm comm)
{
	return run(1, NULL, recv, (void *)(uintptr_t)mine, block, root, tag, comm);
}

int mpi_scatter_torus(const void *send, void *mine, uint64_t block, int root, int tag, MPI_Comm comm)
{
	return run(0, send, NULL, mine, block, root, tag, comm);
}
