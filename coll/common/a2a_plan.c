/*
 * All-to-all plans: building them (the helpers every algorithm uses),
 * their lower bounds, and printing them (torus-bench --explain). See a2a.h.
 */
#include "a2a.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int grow(void **v, size_t *cap, size_t need, size_t esz)
{
	if (need <= *cap)
		return 0;
	size_t n = *cap ? *cap * 2 : 64;
	while (n < need)
		n *= 2;
	void *x = realloc(*v, n * esz);
	if (!x)
		return -ENOMEM;
	*v = x;
	*cap = n;
	return 0;
}

uint32_t a2a_step(struct coll_plan *pl, uint32_t phase, uint32_t round)
{
	if (grow((void **)&pl->steps, &pl->steps_cap, pl->nsteps + 1, sizeof(*pl->steps))) {
		pl->oom = 1;
		return pl->nsteps ? pl->nsteps - 1 : 0;
	}
	pl->steps[pl->nsteps] = (struct a2a_step){phase, round};
	if (phase + 1 > pl->nphases)
		pl->nphases = phase + 1;
	return pl->nsteps++;
}

static void put_in(struct coll_plan *pl, uint32_t step, uint32_t src, uint32_t dst, uint32_t slot, enum a2a_buf sbuf,
		   uint64_t soff, enum a2a_buf dbuf, uint64_t doff, uint64_t len, uint32_t nblocks)
{
	if (pl->only != A2A_ALL && src != pl->only && dst != pl->only)
		return; /* not this member's (its slot was counted all the same) */
	if (grow((void **)&pl->puts, &pl->puts_cap, pl->nputs + 1, sizeof(*pl->puts))) {
		pl->oom = 1;
		return;
	}
	pl->puts[pl->nputs] = (struct a2a_put){src, dst, step, slot, (uint8_t)sbuf, (uint8_t)dbuf,
					       soff, doff, len, nblocks, (uint32_t)pl->nputs};
	pl->nputs++;
}

/*
 * dst's next slot, for a message of step st; and the counter batches
 * (struct coll_plan, kmax): a step where some member would receive more
 * than kmax messages of the batch since its start begins the next batch.
 * Per member, its count in the current batch (bn, valid when bgen is the
 * batch) and in the latest step it received in (sn, of step sstep), so
 * that a new batch starts with the counts of its first step made so far.
 */
static uint32_t new_slot(struct coll_plan *pl, uint32_t st, uint32_t dst)
{
	if (!pl->kmax || pl->unbatchable || pl->oom)
		return pl->nslots[dst]++;
	if (!pl->bn) {
		pl->bn = calloc(pl->p, sizeof(uint32_t));
		pl->bgen = calloc(pl->p, sizeof(uint32_t));
		pl->sn = calloc(pl->p, sizeof(uint32_t));
		pl->sstep = malloc(pl->p * sizeof(uint32_t));
		if (!pl->bn || !pl->bgen || !pl->sn || !pl->sstep || grow((void **)&pl->bstart, &pl->bcap, 1, sizeof(uint32_t))) {
			pl->oom = 1;
			return pl->nslots[dst]++;
		}
		memset(pl->sstep, 0xff, pl->p * sizeof(uint32_t));
		pl->bstart[0] = 0;
		pl->nbatch = 1;
	}
	if (st < pl->bcur)
		pl->unbatchable = 1; /* out of step order */
	pl->bcur = st;
	uint32_t b = pl->nbatch - 1;
	if (pl->bgen[dst] != b) {
		pl->bgen[dst] = b;
		pl->bn[dst] = pl->sstep[dst] == pl->bstart[b] ? pl->sn[dst] : 0;
	}
	if (pl->sstep[dst] != st) {
		pl->sstep[dst] = st;
		pl->sn[dst] = 0;
	}
	if (pl->bn[dst] + 1 > pl->kmax) {
		if (pl->bstart[b] == st) {
			pl->unbatchable = 1; /* one step alone receives more */
			return pl->nslots[dst]++;
		}
		if (grow((void **)&pl->bstart, &pl->bcap, pl->nbatch + 1, sizeof(uint32_t))) {
			pl->oom = 1;
			return pl->nslots[dst]++;
		}
		pl->bstart[pl->nbatch++] = st;
		pl->bgen[dst] = b + 1;
		pl->bn[dst] = pl->sn[dst];
	}
	pl->bn[dst]++;
	pl->sn[dst]++;
	return pl->nslots[dst]++;
}

/* dst's slots in the current batch */
static uint32_t batch_count(const struct coll_plan *pl, uint32_t dst)
{
	uint32_t b = pl->nbatch - 1;
	if (pl->bgen[dst] == b)
		return pl->bn[dst];
	return pl->sstep[dst] == pl->bstart[b] ? pl->sn[dst] : 0;
}

void a2a_put(struct coll_plan *pl, uint32_t step, uint32_t src, uint32_t dst, enum a2a_buf sbuf, uint64_t soff,
	     enum a2a_buf dbuf, uint64_t doff, uint64_t len, uint32_t nblocks)
{
	if (!len)
		return; /* an empty message is not sent (its counter is armed with 0 anyway) */
	put_in(pl, step, src, dst, new_slot(pl, step, dst), sbuf, soff, dbuf, doff, len, nblocks);
}

uint32_t a2a_put_part(struct coll_plan *pl, uint32_t step, uint32_t src, uint32_t dst, uint32_t slot,
		      enum a2a_buf sbuf, uint64_t soff, enum a2a_buf dbuf, uint64_t doff, uint64_t len)
{
	if (slot == UINT32_MAX)
		slot = new_slot(pl, step, dst);
	else if (pl->bn && slot + batch_count(pl, dst) < pl->nslots[dst])
		pl->unbatchable = 1; /* a part of a message of an earlier batch */
	if (len)
		put_in(pl, step, src, dst, slot, sbuf, soff, dbuf, doff, len, 0);
	return slot;
}

void a2a_copy(struct coll_plan *pl, uint32_t step, int post, uint32_t member, enum a2a_buf sbuf, uint64_t soff,
	      enum a2a_buf dbuf, uint64_t doff, uint64_t len)
{
	if (!len || (pl->only != A2A_ALL && member != pl->only))
		return;
	/* one copy that continues the last one of the same member and step */
	if (pl->ncopies) {
		struct a2a_copy *c = &pl->copies[pl->ncopies - 1];
		if (c->member == member && c->step == step && c->post == post && c->sbuf == sbuf && c->dbuf == dbuf &&
		    c->soff + c->len == soff && c->doff + c->len == doff) {
			c->len += len;
			return;
		}
	}
	if (grow((void **)&pl->copies, &pl->copies_cap, pl->ncopies + 1, sizeof(*pl->copies))) {
		pl->oom = 1;
		return;
	}
	pl->copies[pl->ncopies++] = (struct a2a_copy){member, step, (uint8_t)(post != 0), (uint8_t)sbuf, (uint8_t)dbuf,
						      soff, doff, len, (uint32_t)pl->ncopies};
}

uint64_t a2a_tmp(struct coll_plan *pl, uint32_t u, uint64_t len)
{
	uint64_t at = pl->tmp_bytes[u];
	pl->tmp_bytes[u] += len;
	return at;
}

void a2a_direct(struct coll_plan *pl, uint32_t step, uint32_t u, uint32_t v)
{
	uint64_t B = pl->block;
	if (u == v)
		a2a_copy(pl, step, 0, u, A2A_SEND, v * B, A2A_RECV, u * B, B);
	else
		a2a_put(pl, step, u, v, A2A_SEND, v * B, A2A_RECV, u * B, B, 1);
}

/* ---------------------------------------------------------------- mover */

#define MV_TOMB (UINT32_MAX - 1)

static inline uint32_t mv_hash(uint32_t id) { return id * 2654435761u; }

/* The slot of id in u's table (or where it would go: an empty one). */
static size_t mv_find(const struct coll_plan *pl, uint32_t u, uint32_t id)
{
	size_t base = (size_t)u * pl->mvcap, mask = pl->mvcap - 1, tomb = SIZE_MAX;
	for (size_t i = mv_hash(id) & mask;; i = (i + 1) & mask) {
		uint32_t k = pl->mvkey[base + i];
		if (k == id)
			return base + i;
		if (k == MV_TOMB && tomb == SIZE_MAX)
			tomb = base + i;
		if (k == A2A_NOWHERE)
			return tomb != SIZE_MAX ? tomb : base + i;
	}
}

static uint32_t mv_get(const struct coll_plan *pl, uint32_t u, uint32_t id)
{
	size_t i = mv_find(pl, u, id);
	return pl->mvkey[i] == id ? pl->mvval[i] : A2A_NOWHERE;
}

/* Rebuild u's table without its tombstones. */
static void mv_rehash(struct coll_plan *pl, uint32_t u)
{
	size_t base = (size_t)u * pl->mvcap;
	uint32_t n = 0, *k = pl->mvkey + base, *v = pl->mvval + base;
	uint32_t *tk = malloc(pl->mvcap * 2 * sizeof(uint32_t));
	if (!tk) {
		pl->oom = 1;
		return;
	}
	for (uint32_t i = 0; i < pl->mvcap; i++)
		if (k[i] < MV_TOMB) {
			tk[2 * n] = k[i];
			tk[2 * n + 1] = v[i];
			n++;
		}
	memset(k, 0xff, pl->mvcap * sizeof(uint32_t));
	pl->mvused[u] = 0;
	for (uint32_t i = 0; i < n; i++) {
		size_t at = mv_find(pl, u, tk[2 * i]);
		pl->mvkey[at] = tk[2 * i];
		pl->mvval[at] = tk[2 * i + 1];
		pl->mvused[u]++;
	}
	free(tk);
}

static void mv_set(struct coll_plan *pl, uint32_t u, uint32_t id, uint32_t val)
{
	size_t i = mv_find(pl, u, id);
	if (pl->mvkey[i] != id) {
		if (pl->mvkey[i] == A2A_NOWHERE && ++pl->mvused[u] > pl->mvcap / 2) {
			mv_rehash(pl, u); /* tombstones took the room */
			i = mv_find(pl, u, id);
			pl->mvused[u]++;
		}
		pl->mvkey[i] = id;
	}
	pl->mvval[i] = val;
}

static void mv_del(struct coll_plan *pl, uint32_t u, uint32_t id)
{
	size_t i = mv_find(pl, u, id);
	if (pl->mvkey[i] == id)
		pl->mvkey[i] = MV_TOMB;
}

static inline uint32_t loc_make(enum a2a_buf b, uint64_t off, uint64_t B)
{
	return (uint32_t)b << 30 | (uint32_t)(B ? off / B : 0);
}

static void mv_free(struct coll_plan *pl)
{
	free(pl->mvkey);
	free(pl->mvval);
	free(pl->mvused);
	pl->mvkey = pl->mvval = pl->mvused = NULL;
}

int a2a_mv_init(struct coll_plan *pl)
{
	uint32_t p = pl->p;
	pl->mvcap = 16;
	while (pl->mvcap < 4 * p)
		pl->mvcap *= 2;
	size_t n = (size_t)p * pl->mvcap;
	pl->mvkey = malloc(n * sizeof(uint32_t));
	pl->mvval = malloc(n * sizeof(uint32_t));
	pl->mvused = calloc(p, sizeof(uint32_t));
	if (!pl->mvkey || !pl->mvval || !pl->mvused) {
		mv_free(pl);
		pl->oom = 1;
		return -ENOMEM;
	}
	memset(pl->mvkey, 0xff, n * sizeof(uint32_t));
	for (uint32_t u = 0; u < p; u++)
		for (uint32_t v = 0; v < p; v++)
			mv_set(pl, u, u * p + v, loc_make(A2A_SEND, (uint64_t)v * pl->block, pl->block));
	return 0;
}

void a2a_mv_send(struct coll_plan *pl, uint32_t step, uint32_t u, uint32_t peer, const uint32_t *ids, uint32_t n)
{
	uint64_t B = pl->block;
	uint32_t p = pl->p;
	if (!n || !pl->mvkey)
		return;
	/* where it leaves from: in place if contiguous and in order */
	uint32_t first = mv_get(pl, u, ids[0]);
	int contiguous = first != A2A_NOWHERE;
	for (uint32_t i = 1; contiguous && i < n; i++)
		contiguous = mv_get(pl, u, ids[i]) == first + i;
	enum a2a_buf sbuf;
	uint64_t soff;
	if (contiguous) {
		sbuf = (enum a2a_buf)(first >> 30);
		soff = (uint64_t)(first & 0x3fffffffu) * B;
	} else {
		sbuf = A2A_TMP;
		soff = a2a_tmp(pl, u, (uint64_t)n * B);
		for (uint32_t i = 0; i < n; i++) {
			uint32_t l = mv_get(pl, u, ids[i]);
			if (l == A2A_NOWHERE) {
				pl->oom = 1; /* a builder sends a block it does not hold */
				return;
			}
			a2a_copy(pl, step, 0, u, (enum a2a_buf)(l >> 30), (uint64_t)(l & 0x3fffffffu) * B, A2A_TMP,
				 soff + (uint64_t)i * B, B);
		}
	}
	/* where it lands: straight in recv if it is the peer's, from
	 * consecutive sources */
	int final = 1;
	for (uint32_t i = 0; final && i < n; i++)
		final = ids[i] % p == peer && ids[i] / p == ids[0] / p + i;
	enum a2a_buf dbuf = final ? A2A_RECV : A2A_TMP;
	uint64_t doff = final ? (uint64_t)(ids[0] / p) * B : a2a_tmp(pl, peer, (uint64_t)n * B);
	a2a_put(pl, step, u, peer, sbuf, soff, dbuf, doff, (uint64_t)n * B, n);
	for (uint32_t i = 0; i < n; i++) {
		mv_del(pl, u, ids[i]);
		mv_set(pl, peer, ids[i], loc_make(dbuf, doff + (uint64_t)i * B, B));
	}
}

void a2a_mv_finish(struct coll_plan *pl, uint32_t step)
{
	uint32_t p = pl->p;
	uint64_t B = pl->block;
	for (uint32_t u = 0; pl->mvkey && u < p; u++)
		for (uint32_t s = 0; s < p; s++) {
			uint32_t l = mv_get(pl, u, s * p + u);
			if (l == A2A_NOWHERE) {
				pl->oom = 1; /* a builder lost a block: refuse the plan */
				continue;
			}
			if (l != loc_make(A2A_RECV, (uint64_t)s * B, B))
				a2a_copy(pl, step, 1, u, (enum a2a_buf)(l >> 30), (uint64_t)(l & 0x3fffffffu) * B, A2A_RECV,
					 (uint64_t)s * B, B);
		}
	mv_free(pl);
}

/* ---------------------------------------------------------------- plans */

static const struct a2a_algo *const algos[] = {&a2a_direct_algo, &a2a_factor_algo, &a2a_xor_algo,   &a2a_ring_algo,
					       &a2a_mesh2d_algo, &a2a_bruck_algo,  &a2a_torus_algo, &a2a_hier_algo};

const struct a2a_algo *a2a_find(const char *name)
{
	for (size_t i = 0; name && i < sizeof(algos) / sizeof(algos[0]); i++)
		if (!strcmp(algos[i]->name, name))
			return algos[i];
	return NULL;
}

void coll_plan_free(coll_plan_t *pl)
{
	if (!pl)
		return;
	free(pl->steps);
	free(pl->puts);
	free(pl->copies);
	free(pl->tmp_bytes);
	free(pl->nslots);
	free(pl->bstart);
	free(pl->bn);
	free(pl->bgen);
	free(pl->sn);
	free(pl->sstep);
	mv_free(pl);
	free(pl);
}

static int put_cmp(const void *a, const void *b)
{
	const struct a2a_put *x = a, *y = b;
	if (x->step != y->step)
		return x->step < y->step ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int copy_cmp(const void *a, const void *b)
{
	const struct a2a_copy *x = a, *y = b;
	if (x->step != y->step)
		return x->step < y->step ? -1 : 1;
	if (x->post != y->post)
		return x->post < y->post ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

struct coll_plan *a2a_plan_new(uint32_t p, const uint32_t *node, const struct torus_shape *s, uint64_t block,
			       uint32_t only)
{
	struct coll_plan *pl = calloc(1, sizeof(*pl));
	if (!pl)
		return NULL;
	pl->p = p;
	pl->block = block;
	pl->only = only;
	pl->node = node;
	pl->shape = s;
	pl->tmp_bytes = calloc(p, sizeof(uint64_t));
	pl->nslots = calloc(p, sizeof(uint32_t));
	if (!pl->tmp_bytes || !pl->nslots) {
		coll_plan_free(pl);
		return NULL;
	}
	return pl;
}

int a2a_plan_done(struct coll_plan *pl)
{
	if (pl->oom)
		return -ENOMEM;
	/* by step (and pre-copies before post-copies), else as made */
	if (pl->nputs) /* qsort must not see NULL, even with 0 */
		qsort(pl->puts, pl->nputs, sizeof(*pl->puts), put_cmp);
	if (pl->ncopies)
		qsort(pl->copies, pl->ncopies, sizeof(*pl->copies), copy_cmp);
	/* rounds: distinct (phase, round) labels, in step order */
	pl->nrounds = 0;
	for (uint32_t s = 0; s < pl->nsteps; s++)
		if (!s || pl->steps[s].phase != pl->steps[s - 1].phase || pl->steps[s].round != pl->steps[s - 1].round)
			pl->nrounds++;
	return 0;
}

int a2a_plan_build(const struct a2a_algo *al, const struct a2a_geom *g, uint64_t block, uint32_t only,
		   struct coll_plan **out)
{
	const char *why;
	uint32_t msgs;
	*out = NULL;
	if (!al || !g || !g->p || !g->node || !g->shape)
		return -EINVAL;
	if (!al->fits(g, &msgs, &why))
		return -ENOTSUP;
	struct coll_plan *pl = a2a_plan_new(g->p, g->node, g->shape, block, only);
	if (!pl)
		return -ENOMEM;
	pl->algo = al;
	/* counter batches only if a member may receive more messages than it
	 * has counters for (the injection and exchange counters, and a second
	 * injection counter, kept aside): nothing to track otherwise */
	pl->kmax = al->reuse && g->counters > 3 && msgs + 3 > g->counters ? g->counters - 3 : 0;
	int rc = al->build(pl, g);
	if (!rc)
		rc = a2a_plan_done(pl);
	if (rc) {
		coll_plan_free(pl);
		return rc;
	}
	*out = pl;
	return 0;
}

uint32_t a2a_plan_slots_max(const struct coll_plan *pl)
{
	uint32_t m = 0;
	for (uint32_t u = 0; u < pl->p; u++)
		m = pl->nslots[u] > m ? pl->nslots[u] : m;
	return m;
}

/* ------------------------------------------------------------ public API */

int coll_alltoall_plan(const char *algo, const struct torus_shape *s, const struct torus_params *prm,
		       const uint32_t *member_node, uint32_t p, uint64_t block_bytes, coll_plan_t **out)
{
	struct torus_params dflt;
	if (!prm) {
		torus_params_default(&dflt);
		prm = &dflt;
	}
	if (!out)
		return -EINVAL;
	*out = NULL;
	if (!s || !member_node || !p || p > COLL_A2A_MAX_MEMBERS)
		return -EINVAL;
	for (uint32_t i = 0; i < p; i++)
		if (member_node[i] >= s->nnodes)
			return -EINVAL;
	struct a2a_geom g = {p, member_node, s, p == s->nnodes, torus_params_payload(prm), prm->dma_counters};
	for (uint32_t i = 0; g.node_order && i < p; i++)
		g.node_order = member_node[i] == i;
	if (!algo)
		algo = coll_alltoall_default(s, member_node, p, block_bytes, prm->dma_counters);
	const struct a2a_algo *al = a2a_find(algo);
	if (!al)
		return -ENOENT;
	return a2a_plan_build(al, &g, block_bytes, A2A_ALL, out);
}

const char *coll_plan_algo(const coll_plan_t *pl) { return pl ? pl->algo->name : NULL; }
uint32_t coll_plan_steps(const coll_plan_t *pl) { return pl ? pl->nsteps : 0; }
uint32_t coll_plan_phases(const coll_plan_t *pl) { return pl ? pl->nphases : 0; }
uint32_t coll_plan_rounds(const coll_plan_t *pl) { return pl ? pl->nrounds : 0; }
uint32_t coll_plan_messages(const coll_plan_t *pl) { return pl ? (uint32_t)pl->nputs : 0; }

int coll_plan_step_info(const coll_plan_t *pl, uint32_t step, uint32_t *phase, uint32_t *round)
{
	if (!pl || step >= pl->nsteps)
		return -EINVAL;
	if (phase)
		*phase = pl->steps[step].phase;
	if (round)
		*round = pl->steps[step].round;
	return 0;
}

int coll_plan_message(const coll_plan_t *pl, uint32_t i, struct coll_plan_msg *m)
{
	if (!pl || !m || i >= pl->nputs)
		return -EINVAL;
	const struct a2a_put *x = &pl->puts[i];
	*m = (struct coll_plan_msg){x->step, x->src, x->dst, x->len, x->nblocks};
	return 0;
}

uint64_t coll_plan_tmp_bytes(const coll_plan_t *pl, uint32_t member)
{
	return pl && member < pl->p ? pl->tmp_bytes[member] : 0;
}

/* Wire bytes of a message of len payload bytes. */
static uint64_t msg_wire(const struct torus_params *prm, uint64_t len)
{
	uint32_t pay = torus_params_payload(prm);
	uint64_t full = len / pay, rest = len % pay;
	return full * torus_wire_bytes(prm, pay) + (rest ? torus_wire_bytes(prm, (uint32_t)rest) : 0);
}

int coll_plan_bounds(const coll_plan_t *pl, const struct torus_params *prm, struct coll_plan_bounds *b)
{
	if (!pl || !prm || !b)
		return -EINVAL;
	memset(b, 0, sizeof(*b));
	const struct torus_shape *s = pl->shape;
	uint32_t nn = s->nnodes, nl = 2 * TORUS_MAX_DIMS;
	uint64_t *load = calloc((size_t)nn * nl, sizeof(uint64_t));
	uint8_t *table = malloc(nn);
	uint8_t *have = calloc(nn, 1);
	uint8_t **tables = calloc(nn, sizeof(uint8_t *));
	double *ready = calloc(pl->p, sizeof(double)), *done = calloc(pl->p, sizeof(double));
	int rc = 0;
	if (!load || !table || !have || !tables || !ready || !done) {
		rc = -ENOMEM;
		goto out;
	}
	/* the link-load bound: every message on its dimension-order route */
	for (size_t i = 0; i < pl->nputs; i++) {
		const struct a2a_put *x = &pl->puts[i];
		uint32_t at = pl->node[x->src], to = pl->node[x->dst];
		uint64_t w = msg_wire(prm, x->len);
		while (at != to) {
			if (!have[at]) {
				if (!(tables[at] = malloc(nn))) {
					rc = -ENOMEM;
					goto out;
				}
				torus_route_table(s, at, tables[at]);
				have[at] = 1;
			}
			uint32_t l = tables[at][to];
			if (l == TORUS_ROUTE_LOCAL)
				break;
			load[(size_t)at * nl + l] += w;
			at = torus_neighbor(s, at, l >> 1, (enum torus_dir)(l & 1));
		}
	}
	for (size_t i = 0; i < (size_t)nn * nl; i++)
		b->link_max_wire = load[i] > b->link_max_wire ? load[i] : b->link_max_wire;
	b->link_ps = (double)b->link_max_wire * 1e12 / (double)prm->link_bw;
	/*
	 * The round bound: the plan's critical path with no contention. Step
	 * by step, a member posts its messages one after another (the
	 * injection overhead each); a message arrives after its packets'
	 * serialisation, the last packet's on every further hop, and the hop
	 * latencies; a member's step ends when its own messages are posted and
	 * the ones it waits for are in, plus its copies at copy_bw.
	 */
	uint32_t pay = torus_params_payload(prm);
	size_t pi = 0, ci = 0;
	for (uint32_t st = 0; st < pl->nsteps; st++) {
		/* ready[u]: when u starts the step; done[u]: when it has posted */
		for (uint32_t u = 0; u < pl->p; u++)
			done[u] = ready[u];
		for (; ci < pl->ncopies && pl->copies[ci].step == st && !pl->copies[ci].post; ci++)
			done[pl->copies[ci].member] += (double)pl->copies[ci].len * 1e12 / (double)prm->copy_bw;
		for (; pi < pl->nputs && pl->puts[pi].step == st; pi++) {
			const struct a2a_put *x = &pl->puts[pi];
			done[x->src] += (double)prm->inj_overhead_ps;
			uint32_t hops = torus_hops(s, pl->node[x->src], pl->node[x->dst]);
			uint64_t last = x->len % pay ? x->len % pay : pay;
			double t = done[x->src] + (double)msg_wire(prm, x->len) * 1e12 / (double)prm->link_bw;
			if (hops > 1)
				t += (hops - 1) * (double)torus_ser_ps(prm, torus_wire_bytes(prm, (uint32_t)last));
			t += hops * (double)prm->hop_latency_ps;
			/* the receiver waits for it in this step (ready[] is
			 * read no more in this step: reuse it for arrivals) */
			if (t > ready[x->dst])
				ready[x->dst] = t;
		}
		for (uint32_t u = 0; u < pl->p; u++)
			ready[u] = ready[u] > done[u] ? ready[u] : done[u];
		for (; ci < pl->ncopies && pl->copies[ci].step == st; ci++)
			ready[pl->copies[ci].member] += (double)pl->copies[ci].len * 1e12 / (double)prm->copy_bw;
	}
	for (uint32_t u = 0; u < pl->p; u++)
		b->round_ps = ready[u] > b->round_ps ? ready[u] : b->round_ps;
out:
	for (uint32_t i = 0; tables && i < nn; i++)
		free(tables[i]);
	free(tables);
	free(have);
	free(table);
	free(load);
	free(ready);
	free(done);
	return rc;
}

/* ---------------------------------------------------------------- explain */

int coll_plan_print(const coll_plan_t *pl, FILE *f, int json)
{
	if (!pl || !f)
		return -EINVAL;
	uint64_t tmp = 0;
	for (uint32_t u = 0; u < pl->p; u++)
		tmp = pl->tmp_bytes[u] > tmp ? pl->tmp_bytes[u] : tmp;
	if (json) {
		fprintf(f, "{\"algo\": \"%s\", \"members\": %u, \"block_bytes\": %llu, \"phases\": %u, \"rounds\": %u, "
			   "\"steps\": %u, \"messages\": %zu, \"tmp_bytes_max\": %llu, \"schedule\": [",
			pl->algo->name, pl->p, (unsigned long long)pl->block, pl->nphases, pl->nrounds, pl->nsteps,
			pl->nputs, (unsigned long long)tmp);
	} else {
		fprintf(f, "# alltoall %s: %u members, %llu-byte blocks: %u phase%s, %u round%s, %u step%s, %zu messages, "
			   "scratch up to %llu bytes per member\n",
			pl->algo->name, pl->p, (unsigned long long)pl->block, pl->nphases, pl->nphases == 1 ? "" : "s",
			pl->nrounds, pl->nrounds == 1 ? "" : "s", pl->nsteps, pl->nsteps == 1 ? "" : "s", pl->nputs,
			(unsigned long long)tmp);
	}
	size_t pi = 0, ci = 0;
	for (uint32_t st = 0; st < pl->nsteps; st++) {
		const struct a2a_step *S = &pl->steps[st];
		if (json)
			fprintf(f, "%s\n  {\"step\": %u, \"phase\": %u, \"round\": %u, \"messages\": [", st ? "," : "", st,
				S->phase, S->round);
		else
			fprintf(f, "phase %u round %u step %u:", S->phase, S->round, st);
		int n = 0;
		for (; pi < pl->nputs && pl->puts[pi].step == st; pi++, n++) {
			const struct a2a_put *x = &pl->puts[pi];
			if (json)
				fprintf(f, "%s{\"from\": %u, \"to\": %u, \"bytes\": %llu, \"blocks\": %u}", n ? ", " : "", x->src,
					x->dst, (unsigned long long)x->len, x->nblocks);
			else
				fprintf(f, " %u->%u", x->src, x->dst);
			if (!json && x->nblocks != 1)
				fprintf(f, "(%u)", x->nblocks);
		}
		int nc = 0;
		for (; ci < pl->ncopies && pl->copies[ci].step == st; ci++)
			nc++;
		if (json)
			fprintf(f, "], \"local_copies\": %d}", nc);
		else
			fprintf(f, "%s%s\n", n ? "" : " (local only)", nc ? " +copies" : "");
	}
	if (json)
		fprintf(f, "\n]}\n");
	return 0;
}
