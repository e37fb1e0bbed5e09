/*
 * The timing simulator (timesim.h, timesim.c): memory, creation and
 * teardown, and the small calls.
 */
#include "timesim_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* ----------------------------------------------------------------- arena */

/*
 * The output blocks and the packet rings come from large chunks that the
 * kernel is asked to back with huge pages: a big torus's simulation
 * touches hundreds of megabytes at random, and with 4 KiB pages nearly
 * every access would miss the TLB as well as the cache (a page walk that
 * a prefetch does not hide). Blocks are 64-byte aligned; rings come in
 * powers of two and go back to a free list per size.
 */
struct chunk {
	struct chunk *next;
	size_t bytes;
};
#define CHUNK_BYTES ((size_t)64 << 20)
#define HUGE_PAGE ((size_t)2 << 20)

/* bytes (a multiple of 64) from the current chunk, or a new one. */
static void *ar_carve(struct arena *a, size_t bytes)
{
	if (a->left < bytes) {
		size_t want = (bytes + sizeof(struct chunk) + 64 > CHUNK_BYTES ? bytes + 64 + HUGE_PAGE : CHUNK_BYTES) +
			      HUGE_PAGE;
		unsigned char *m = mmap(NULL, want, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED)
			return NULL;
		struct chunk *c = (struct chunk *)(void *)m;
		c->next = a->chunks;
		c->bytes = want;
		a->chunks = c;
		/* from the first huge page boundary on (the kernel backs only whole ones) */
		uintptr_t start = ((uintptr_t)m + sizeof(*c) + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1);
		madvise((void *)start, want - (start - (uintptr_t)m), MADV_HUGEPAGE); /* (a hint: failure is harmless) */
		a->cur = (unsigned char *)start;
		a->left = want - (start - (uintptr_t)m);
	}
	void *p = a->cur;
	a->cur += bytes;
	a->left -= bytes;
	return p;
}

static unsigned ar_class(size_t bytes)
{
	return bytes <= 64 ? 6 : 64 - (unsigned)__builtin_clzll(bytes - 1);
}

/* A ring's memory: bytes a power of two, at least 64. */
static void *ar_alloc(struct arena *a, size_t bytes)
{
	unsigned c = ar_class(bytes);
	if (c >= 48)
		return NULL;
	void *p = a->freel[c];
	if (p) {
		a->freel[c] = *(void **)p;
		return p;
	}
	return ar_carve(a, (size_t)1 << c);
}

static void ar_free(struct arena *a, void *p, size_t bytes)
{
	if (!p)
		return;
	unsigned c = ar_class(bytes);
	*(void **)p = a->freel[c];
	a->freel[c] = p;
}

static void ar_destroy(struct arena *a)
{
	for (struct chunk *c = a->chunks, *nx; c; c = nx) {
		nx = c->next;
		munmap(c, c->bytes);
	}
	a->chunks = NULL;
}

int ts_grow(struct entry **e, size_t *cap, size_t first)
{
	size_t nc = *cap ? 2 * *cap : first;
	struct entry *ne = nc > *cap ? realloc(*e, nc * sizeof(*ne)) : NULL;
	if (!ne)
		return -ENOMEM;
	*e = ne;
	*cap = nc;
	return 0;
}

int ts_elist_room(struct elist *l, size_t first)
{
	if (l->n < l->cap)
		return 0;
	if (l->h > 0) {
		memmove(l->e, l->e + l->h, (l->n - l->h) * sizeof(*l->e));
		l->n -= l->h;
		l->h = 0;
		return 0;
	}
	return ts_grow(&l->e, &l->cap, first);
}

/*
 * The wheel's size. A slot should hold a few events: a link busy without
 * a break departs once per full packet's serialisation, so the machine
 * has about 2 * ndims * nodes events per that time, and a slot is about
 * four of them wide (a power of two of picoseconds). The wheel spans
 * twice what an event can be pushed ahead of the one that pushes it (a
 * full packet and a hop, a post's overhead), so that nearly nothing goes
 * past it to the radix heap; posts far in the future do.
 */
static int wheel_init(struct timesim *s)
{
	uint64_t ser = s->cost.ser[s->pay], links = (uint64_t)s->nnodes * 2 * (s->ndims ? s->ndims : 1);
	uint64_t width = 8 * ser / links;
	uint32_t shift = 0;
	while (shift < 40 && (2ull << shift) <= width)
		shift++;
	uint64_t span = (2 * (ser + s->cost.hop_latency) + s->cfg.params->inj_overhead_ps) >> shift;
	uint32_t n = 64;
	while (n < span && n < (1u << 16))
		n *= 2;
	s->wshift = shift;
	s->nslots = n;
	s->wmask = n - 1;
	s->nwocc = n / 64;
	s->slot = calloc(n, sizeof(*s->slot));
	s->wocc = calloc(s->nwocc, sizeof(*s->wocc));
	return s->slot && s->wocc ? 0 : -ENOMEM;
}

/* The ring of q, full with rn packets: twice the room. */
int ts_q_grow(struct arena *a, struct queue *q, uint32_t rn)
{
	uint32_t cap = q->buf ? q->mask + 1 : 0, nc = cap ? 2 * cap : 4;
	if (nc <= cap)
		return -ENOMEM;
	struct pkt *nb = ar_alloc(a, (size_t)nc * sizeof(*nb));
	if (!nb)
		return -ENOMEM;
	/* unwrap: the oldest first */
	uint32_t first = cap - q->head < rn ? cap - q->head : rn;
	if (rn) {
		memcpy(nb, q->buf + q->head, (size_t)first * sizeof(*nb));
		memcpy(nb + first, q->buf, (size_t)(rn - first) * sizeof(*nb));
	}
	ar_free(a, q->buf, (size_t)cap * sizeof(*nb));
	q->buf = nb;
	q->head = 0;
	q->mask = nc - 1;
	return 0;
}

static uint32_t gen_port(const struct timesim *s, const struct node *nd, uint32_t g)
{
	uint32_t F = s->cfg.params->inj_fifos;
	if (g == nd->ngens - 1)
		return nd->nports - 1; /* the reply queue */
	return nd->first_core_port + (g / F) * (1 + F) + 1 + g % F;
}

/* The generator whose packets wait in port (GEN_NONE: none does). */
static uint32_t port_gen(const struct timesim *s, const struct node *nd, uint32_t port)
{
	if (port < nd->first_core_port)
		return GEN_NONE;
	if (port == nd->nports - 1)
		return nd->ngens - 1;
	uint32_t F = s->cfg.params->inj_fifos, rel = port - nd->first_core_port, r = rel % (1 + F);
	return r ? (rel / (1 + F)) * F + r - 1 : GEN_NONE; /* r == 0: the raw FIFO */
}

static int node_init(struct timesim *s, uint32_t i)
{
	const struct timesim_config *cfg = &s->cfg;
	struct node *nd = &s->nodes[i];
	const uint32_t F = cfg->params->inj_fifos;
	if (cfg->cores[i] == 0 || cfg->cores[i] > TORUS_MAX_CORES)
		return -EINVAL;
	nd->first_core_port = 4 * cfg->shape->ndims;
	nd->nports = nd->first_core_port + cfg->cores[i] * (1 + F) + 1;
	nd->ngens = cfg->cores[i] * F + 1;
	nd->nwords = (nd->nports + 63) / 64;
	torus_rank_to_coords(cfg->shape, i, nd->coords);
	memcpy(&s->coords[(size_t)i * s->ndims], nd->coords, s->ndims * sizeof(uint32_t));
	/* each output's block: header and bitmap rounded up to a cache line,
	 * then the queues (a cache line each) */
	nd->qoff = (uint32_t)((sizeof(struct out) + 8 * nd->nwords + 63) / 64 * 64);
	nd->ostride = (uint32_t)((nd->qoff + (size_t)nd->nports * sizeof(struct queue) + 63) / 64 * 64);
	size_t bytes = (size_t)(s->lout + 1) * nd->ostride;
	if (!(nd->blk = ar_carve(&s->ar, bytes)) || !(nd->gens = calloc(nd->ngens, sizeof(*nd->gens))))
		return -ENOMEM; /* (fresh from mmap: zero) */
	for (uint32_t g = 0; g < nd->ngens; g++)
		nd->gens[g].port = gen_port(s, nd, g);
	for (uint32_t l = 0; l <= s->lout; l++) {
		struct out *L = out_of(nd, l);
		for (uint32_t p = 0; p < nd->nports; p++)
			queues_of(nd, L)[p].gen = port_gen(s, nd, p);
		L->rr = nd->nports - 1; /* the first scan starts at port 0 */
		L->cand = TIMESIM_NEVER;
		if (l == s->lout)
			continue;
		L->cost = cfg->link_cost && cfg->link_cost[(size_t)i * NLINKS + l] ? cfg->link_cost[(size_t)i * NLINKS + l]
										   : &s->cost;
		enum torus_dir dir = (enum torus_dir)(l & 1);
		if (torus_hop_is_wrap(cfg->shape->dims[l >> 1], nd->coords[l >> 1], dir))
			nd->wrap |= 1u << l;
		L->nbr = torus_neighbor(cfg->shape, i, l >> 1, dir);
	}
	return 0;
}

int timesim_create(const struct timesim_config *cfg, struct timesim **out)
{
	if (!cfg || !out || !cfg->shape || !cfg->params || !cfg->cores || cfg->shape->nnodes == 0 ||
	    cfg->params->inj_fifos == 0 || cfg->getreq_bytes > TORUS_MAX_PAYLOAD ||
	    cfg->shape->nnodes > (1u << 30) || torus_params_payload(cfg->params) > UINT8_MAX)
		return -EINVAL;
	struct timesim *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->cfg = *cfg;
	s->nnodes = cfg->shape->nnodes;
	s->ndims = cfg->shape->ndims;
	s->lout = 2 * s->ndims;
	/* from 512 nodes on (megabytes of output blocks) the machine's state
	 * outgrows the caches and the next hop's queues are worth a prefetch;
	 * below, the route it takes would only cost instructions */
	s->far = s->nnodes >= 512;
	s->pay = torus_params_payload(cfg->params);
	s->greq_free = UINT32_MAX;
	torus_cost_init(&s->cost, cfg->params);
	s->nodes = calloc(s->nnodes, sizeof(*s->nodes));
	s->coords = calloc((size_t)s->nnodes * (s->ndims ? s->ndims : 1), sizeof(uint32_t));
	int rc = s->nodes && s->coords ? wheel_init(s) : -ENOMEM;
	for (uint32_t i = 0; i < s->nnodes && rc == 0; i++)
		rc = node_init(s, i);
	if (rc) {
		timesim_destroy(s);
		return rc;
	}
	*out = s;
	return 0;
}

void timesim_destroy(struct timesim *s)
{
	if (!s)
		return;
	if (s->nodes) {
		for (uint32_t n = 0; n < s->nnodes; n++) {
			struct node *nd = &s->nodes[n];
			if (nd->gens)
				for (uint32_t g = 0; g < nd->ngens; g++)
					free(nd->gens[g].jobs);
			free(nd->gens);
		}
		free(s->nodes);
	}
	free(s->coords);
	free(s->greq);
	for (size_t i = 0; i < NBUCKETS; i++)
		free(s->rb[i].e);
	if (s->slot)
		for (uint32_t i = 0; i < s->nslots; i++)
			free(s->slot[i].e);
	free(s->slot);
	free(s->wocc);
	free(s->run.e);
	free(s->win.e);
	ar_destroy(&s->ar);
	free(s);
}

torus_vt_t timesim_now(const struct timesim *s) { return s ? s->now : 0; }

torus_vt_t timesim_event_time(const struct timesim *s)
{
	if (!s)
		return 0;
	return s->cur > s->now ? s->cur : s->now;
}

void timesim_cancel(struct timesim *s)
{
	if (s)
		atomic_store_explicit(&s->cancel, 1, memory_order_relaxed);
}

void timesim_stop(struct timesim *s)
{
	if (s)
		s->stop = 1;
}

void timesim_stats(const struct timesim *s, struct timesim_stats *out)
{
	if (s && out)
		*out = s->st;
}
