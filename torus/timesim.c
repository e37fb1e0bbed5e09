/*
 * The timing simulator (timesim.h): tests/refsim.c's model with its events
 * kept in a heap (a radix heap on time).
 *
 * Every node has one queue per (output, input port); an output is a link
 * direction or local delivery. Candidates:
 *   - a local queue's head is a delivery at its ready time;
 *   - a link with packets waiting departs at max(free_at, the earliest
 *     ready time among its queues' heads).
 * Both change as packets come and go. A delivery's entry is its queue
 * head's, and is spent when it is popped. A link's candidate changes: a
 * changed one is pushed again, and an entry whose time is not the link's
 * candidate any more is skipped when it surfaces (lazy deletion; a link's
 * candidate never comes back to a time it left while its old entry waits,
 * except after a departure, and then the two equal entries name the same
 * departure, which the first one spends). Heap order is refsim's: time,
 * then deliveries before departures, then node, then port (deliveries) or
 * link (departures). The heap is a radix heap on time with a binary heap
 * on key for the entries at the current time (see "heap" below).
 */
#include "timesim.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define GEN_NONE UINT32_MAX
#define NLINKS (2 * TORUS_MAX_DIMS)
#define OUT_LOCAL NLINKS

enum { PK_DATA, PK_GETREQ };

struct pkt {
	struct pkt *next;
	torus_vt_t ready;
	uint64_t cookie, index;
	uint32_t len, dest, vc, kind;
	uint32_t from_link; /* link it arrived on (2 * dim + dir of travel); GEN_NONE: injected here */
	uint32_t gen;       /* generator that made it, while at its origin; else GEN_NONE */
	uint32_t origin;    /* the node that posted its transfer (a get's reply goes there) */
	uint64_t reply_len; /* a get request: the bytes to send back */
	uint16_t hints;
};

struct queue {
	struct pkt *head, *tail;
	torus_vt_t ready; /* the head's, kept here so a scan touches no packet */
};

struct job {
	uint64_t cookie;
	uint64_t rest;      /* bytes still to send */
	uint64_t index;     /* its next packet's number */
	torus_vt_t ready;
	uint32_t kind, dest, origin;
	uint64_t reply_len;
	uint16_t hints;
};

/* A DMA injection FIFO or the reply queue: its transfers, one after another. */
struct gen {
	struct job *jobs;
	size_t n, cap, head;
	torus_vt_t cursor;  /* when its previous packet left */
	int busy;           /* a packet of it waits at this node */
};

struct node {
	uint32_t coords[TORUS_MAX_DIMS];
	uint8_t *route;
	torus_vt_t free_at[NLINKS];
	torus_vt_t cand[NLINKS];    /* the link's pending departure, TIMESIM_NEVER: none */
	uint32_t rr[NLINKS];        /* the port served last */
	int wrap[NLINKS];           /* the hop crosses the dateline */
	const struct torus_cost *cost[NLINKS];
	uint32_t waiting[NLINKS + 1]; /* non-empty queues per output */
	struct queue *q;            /* [(NLINKS + 1) * nports], output-major */
	uint64_t *nonempty;         /* [(NLINKS + 1) * nwords]: bit per non-empty queue */
	uint32_t nwords;
	struct gen *gens;           /* ncores * inj_fifos, then the reply queue */
	uint32_t ngens, nports, first_core_port;
};

struct entry {
	torus_vt_t t;
	uint64_t key; /* class (0 delivery, 1 departure) << 62 | node << 20 | port or link */
};

struct timesim {
	struct timesim_config cfg;
	struct torus_cost cost;
	struct node *nodes;
	uint32_t nnodes, pay;
	/* the events: a radix heap on time (rb[i]: entries whose time first
	 * differs from rlast at bit i - 1), rb[0] (those at rlast) a binary
	 * heap on key */
	struct rbucket {
		struct entry *e;
		size_t n, cap;
	} rb[65];
	torus_vt_t rlast;
	size_t nheap;
	torus_vt_t rmin;           /* heap_min_time's answer while rmin_ok (no push since) */
	int rmin_ok;
	struct pkt *pool;          /* free packets */
	torus_vt_t now;            /* everything before it is final */
	torus_vt_t cur;            /* the event being processed (timesim_event_time) */
	int stop;                  /* timesim_stop: return after this event */
	_Atomic int cancel;        /* timesim_cancel (any thread): return at once */
	struct timesim_stats st;
};

/* ------------------------------------------------------------------ heap */

/*
 * Event times only grow while the simulator runs: an event is never timed
 * before the one being handled, and one posted between runs is at or after
 * `now`, which is past every event taken. So the events sit in a radix
 * heap on time (Ahuja, Mehlhorn, Orlin and Tarjan): an entry goes to the
 * bucket of the highest bit in which its time differs from rlast, the
 * time of the entries last taken out; a push is an append. When the
 * entries at rlast (bucket 0) are spent, the first non-empty bucket is
 * spread out again from its smallest time. Bucket 0 is a binary heap on
 * key, the order of ties (refsim's: deliveries before departures, then
 * node, then port or link). The 4-ary heap before it spent 35% of the
 * timekeeper's time on the 4 MiB allreduce.
 */
static int rb_append(struct rbucket *b, struct entry e)
{
	if (b->n == b->cap) {
		size_t nc = b->cap ? 2 * b->cap : 16;
		struct entry *ne = realloc(b->e, nc * sizeof(*ne));
		if (!ne)
			return -ENOMEM;
		b->e = ne;
		b->cap = nc;
	}
	b->e[b->n++] = e;
	return 0;
}

/* Bucket 0, by key: e joins. */
static int b0_insert(struct rbucket *b, struct entry e)
{
	int rc = rb_append(b, e);
	if (rc)
		return rc;
	size_t i = b->n - 1;
	while (i > 0 && e.key < b->e[(i - 1) / 2].key) {
		b->e[i] = b->e[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	b->e[i] = e;
	return 0;
}

static size_t bucket_of(torus_vt_t t, torus_vt_t last)
{
	return t == last ? 0 : 64 - (size_t)__builtin_clzll(t ^ last);
}

static int heap_push(struct timesim *s, torus_vt_t t, uint64_t key)
{
	if (t < s->rlast)
		return -EINVAL; /* in the past: cannot happen (see above) */
	struct entry e = {t, key};
	size_t i = bucket_of(t, s->rlast);
	s->rmin_ok = 0;
	int rc = i ? rb_append(&s->rb[i], e) : b0_insert(&s->rb[0], e);
	if (rc)
		return rc;
	if (++s->nheap > s->st.heap_max)
		s->st.heap_max = s->nheap;
	return 0;
}

/* The first non-empty bucket after 0 (the heap holds something). */
static size_t first_bucket(const struct timesim *s)
{
	size_t i = 1;
	while (i < 64 && !s->rb[i].n)
		i++;
	return i;
}

/* The earliest time in the heap, without taking anything out (a peek must
 * not move rlast: events may still be posted before the next one). */
static torus_vt_t heap_min_time(struct timesim *s)
{
	if (!s->nheap)
		return TIMESIM_NEVER;
	if (s->rb[0].n)
		return s->rlast;
	if (s->rmin_ok)
		return s->rmin;
	size_t i = first_bucket(s);
	torus_vt_t m = s->rb[i].e[0].t;
	for (size_t j = 1; j < s->rb[i].n; j++)
		m = s->rb[i].e[j].t < m ? s->rb[i].e[j].t : m;
	s->rmin = m;
	s->rmin_ok = 1;
	return m;
}

/* The first entry (bucket 0 refilled if it ran dry), or NULL. */
static const struct entry *heap_top(struct timesim *s)
{
	if (!s->nheap)
		return NULL;
	if (!s->rb[0].n) {
		struct rbucket *b = &s->rb[first_bucket(s)];
		torus_vt_t m = heap_min_time(s);
		s->rlast = m;
		s->rmin_ok = 0;
		for (size_t j = 0; j < b->n; j++) {
			/* to lower buckets (an append that fails loses the
			 * entry: the run ends with -ENOMEM) */
			size_t to = bucket_of(b->e[j].t, m);
			if ((to ? rb_append(&s->rb[to], b->e[j]) : b0_insert(&s->rb[0], b->e[j])) != 0)
				return NULL;
		}
		b->n = 0;
	}
	return &s->rb[0].e[0];
}

/* Take the first entry out (heap_top first). */
static void heap_pop(struct timesim *s)
{
	struct rbucket *b = &s->rb[0];
	struct entry e = b->e[--b->n];
	s->nheap--;
	size_t i = 0, n = b->n;
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= n)
			break;
		if (c + 1 < n && b->e[c + 1].key < b->e[c].key)
			c++;
		if (e.key <= b->e[c].key)
			break;
		b->e[i] = b->e[c];
		i = c;
	}
	if (n)
		b->e[i] = e;
}

enum { CLS_DELIVERY, CLS_DEPARTURE };
static uint64_t key_of(uint32_t cls, uint32_t node, uint32_t idx)
{
	return (uint64_t)cls << 62 | (uint64_t)node << 20 | idx;
}

/* Is the heap's top entry still the candidate it was pushed for? (A
 * delivery's always is.) */
static int entry_current(const struct timesim *s, const struct entry *e)
{
	if (e->key >> 62 != CLS_DEPARTURE)
		return 1;
	return s->nodes[(e->key >> 20) & 0x3FFFFFFFFFull].cand[e->key & 0xFFFFF] == e->t;
}

/* --------------------------------------------------------------- packets */

static struct pkt *pkt_new(struct timesim *s)
{
	struct pkt *k = s->pool;
	if (k) {
		s->pool = k->next;
		return k;
	}
	return malloc(sizeof(*k));
}

static void pkt_free(struct timesim *s, struct pkt *k)
{
	k->next = s->pool;
	s->pool = k;
}

static struct queue *qof(struct node *nd, uint32_t out, uint32_t port)
{
	return &nd->q[(size_t)out * nd->nports + port];
}

static uint32_t gen_port(const struct timesim *s, const struct node *nd, uint32_t g)
{
	uint32_t F = s->cfg.params->inj_fifos;
	if (g == nd->ngens - 1)
		return nd->nports - 1; /* the reply queue */
	return nd->first_core_port + (g / F) * (1 + F) + 1 + g % F;
}

/* The output at node n for a packet to dest arriving on from_link
 * (GEN_NONE: injected); sets *vc for the hop. */
static uint32_t output(const struct timesim *s, uint32_t n, uint32_t dest, uint16_t hints, uint32_t from_link,
		       uint32_t *vc)
{
	const struct node *nd = &s->nodes[n];
	if (dest == n)
		return OUT_LOCAL;
	uint32_t l = torus_route_apply_hints(nd->route[dest], hints);
	if (!(from_link == l && !nd->wrap[l]))
		*vc = nd->wrap[l] ? 1u : 0u;
	return l;
}

/* The link's departure candidate after its queues or free_at changed. */
static int link_update(struct timesim *s, uint32_t n, uint32_t l)
{
	struct node *nd = &s->nodes[n];
	torus_vt_t r = TIMESIM_NEVER;
	if (nd->waiting[l]) {
		const struct queue *q = qof(nd, l, 0);
		const uint64_t *bits = &nd->nonempty[(size_t)l * nd->nwords];
		for (uint32_t w = 0; w < nd->nwords; w++)
			for (uint64_t m = bits[w]; m; m &= m - 1) {
				torus_vt_t hr = q[w * 64 + (uint32_t)__builtin_ctzll(m)].ready;
				if (hr < r)
					r = hr;
			}
	}
	if (r == TIMESIM_NEVER) {
		nd->cand[l] = TIMESIM_NEVER;
		return 0;
	}
	torus_vt_t t = r > nd->free_at[l] ? r : nd->free_at[l];
	if (t == nd->cand[l])
		return 0;
	nd->cand[l] = t;
	return heap_push(s, t, key_of(CLS_DEPARTURE, n, l));
}

static int push(struct timesim *s, uint32_t n, uint32_t out, uint32_t port, struct pkt *k)
{
	struct node *nd = &s->nodes[n];
	struct queue *q = qof(nd, out, port);
	k->next = NULL;
	if (q->tail) {
		q->tail->next = k;
		q->tail = k;
		return 0; /* behind another: no candidate changes */
	}
	q->head = q->tail = k;
	q->ready = k->ready;
	nd->waiting[out]++;
	nd->nonempty[(size_t)out * nd->nwords + port / 64] |= 1ull << (port % 64);
	if (out == OUT_LOCAL)
		return heap_push(s, k->ready, key_of(CLS_DELIVERY, n, port));
	if (k->ready >= nd->cand[out])
		return 0;
	return link_update(s, n, out);
}

static struct pkt *pop(struct node *nd, uint32_t out, uint32_t port)
{
	struct queue *q = qof(nd, out, port);
	struct pkt *k = q->head;
	q->head = k->next;
	if (q->head)
		q->ready = q->head->ready;
	if (!q->head) {
		q->tail = NULL;
		nd->waiting[out]--;
		nd->nonempty[(size_t)out * nd->nwords + port / 64] &= ~(1ull << (port % 64));
	}
	return k;
}

/* ----------------------------------------------------------- generators */

/* Queue generator g's next packet at node n, if it has one and none waits. */
static int gen_next(struct timesim *s, uint32_t n, uint32_t g)
{
	struct node *nd = &s->nodes[n];
	struct gen *G = &nd->gens[g];
	if (G->busy || G->head == G->n)
		return 0;
	struct job *j = &G->jobs[G->head];
	struct pkt *k = pkt_new(s);
	if (!k)
		return -ENOMEM;
	k->ready = j->ready > G->cursor ? j->ready : G->cursor;
	k->kind = j->kind;
	k->dest = j->dest;
	k->cookie = j->cookie;
	k->index = j->index++;
	k->hints = j->hints;
	k->origin = j->origin;
	k->reply_len = j->reply_len;
	k->from_link = GEN_NONE;
	k->gen = g;
	k->vc = 0;
	if (j->kind == PK_GETREQ) {
		k->len = s->cfg.getreq_bytes;
		j->rest = 0;
	} else {
		k->len = j->rest > s->pay ? s->pay : (uint32_t)j->rest;
		j->rest -= k->len;
	}
	uint32_t out = output(s, n, k->dest, k->hints, GEN_NONE, &k->vc);
	if (out == OUT_LOCAL)
		k->vc = 0;
	G->busy = 1;
	if (j->rest == 0 && ++G->head == G->n)
		G->head = G->n = 0; /* its last packet is on its way; the queue is empty */
	return push(s, n, out, gen_port(s, nd, g), k);
}

/* A generator's packet left its origin at `left`: the next one is ready then. */
static int gen_left(struct timesim *s, uint32_t n, const struct pkt *k, torus_vt_t left)
{
	struct node *nd = &s->nodes[n];
	struct gen *G = &nd->gens[k->gen];
	G->busy = 0;
	if (left > G->cursor)
		G->cursor = left;
	if (k->gen != nd->ngens - 1 && s->cfg.hooks.left)
		s->cfg.hooks.left(s->cfg.hooks.arg, n, k->cookie, k->kind == PK_GETREQ ? 0 : k->len, left);
	return gen_next(s, n, k->gen);
}

static int gen_add(struct timesim *s, uint32_t n, uint32_t g, const struct job *j)
{
	struct gen *G = &s->nodes[n].gens[g];
	if (G->n == G->cap) {
		if (G->head > G->cap / 2) {
			/* most of it is done: close the gap instead of growing */
			memmove(G->jobs, G->jobs + G->head, (G->n - G->head) * sizeof(*G->jobs));
			G->n -= G->head;
			G->head = 0;
		} else {
			size_t nc = G->cap ? 2 * G->cap : 8;
			struct job *nj = realloc(G->jobs, nc * sizeof(*nj));
			if (!nj)
				return -ENOMEM;
			G->jobs = nj;
			G->cap = nc;
		}
	}
	G->jobs[G->n++] = *j;
	return gen_next(s, n, g);
}

/* ---------------------------------------------------------------- events */

static int deliver(struct timesim *s, uint32_t n, uint32_t port, torus_vt_t t)
{
	struct node *nd = &s->nodes[n];
	struct pkt *k = pop(nd, OUT_LOCAL, port);
	int rc = 0;
	if (nd->waiting[OUT_LOCAL] && qof(nd, OUT_LOCAL, port)->head)
		rc = heap_push(s, qof(nd, OUT_LOCAL, port)->head->ready, key_of(CLS_DELIVERY, n, port));
	s->st.deposits++;
	if (k->kind == PK_GETREQ) {
		/* the reply: the data back to the requester, from this node's reply queue */
		struct job j = {k->cookie, k->reply_len, 0, t, PK_DATA, k->origin, n, 0, k->hints};
		if (rc == 0 && !(s->cfg.hooks.request && s->cfg.hooks.request(s->cfg.hooks.arg, n, k->cookie, t)))
			rc = gen_add(s, n, nd->ngens - 1, &j);
	} else if (s->cfg.hooks.deposit) {
		s->cfg.hooks.deposit(s->cfg.hooks.arg, n, k->cookie, k->index, k->len, t);
	}
	if (k->gen != GEN_NONE && rc == 0)
		rc = gen_left(s, n, k, t);
	pkt_free(s, k);
	return rc;
}

static int depart(struct timesim *s, uint32_t n, uint32_t l, torus_vt_t t)
{
	struct node *nd = &s->nodes[n];
	struct pkt *k = NULL;
	uint32_t port = 0;
	/* round robin: the first non-empty queue after the port served last
	 * whose head is ready, going round once */
	const uint64_t *bits = &nd->nonempty[(size_t)l * nd->nwords];
	uint32_t start = nd->rr[l] + 1 == nd->nports ? 0 : nd->rr[l] + 1;
	for (uint32_t pass = 0; pass < 2 && !k; pass++) {
		uint32_t from = pass ? 0 : start, to = pass ? start : nd->nports;
		for (uint32_t w = from / 64; w <= (to - 1) / 64 && from < to && !k; w++) {
			uint64_t m = bits[w];
			if (w == from / 64)
				m &= ~0ull << (from % 64);
			for (; m; m &= m - 1) {
				uint32_t cand = w * 64 + (uint32_t)__builtin_ctzll(m);
				if (cand >= to)
					break;
				if (qof(nd, l, cand)->ready <= t) {
					port = cand;
					k = pop(nd, l, port);
					break;
				}
			}
		}
	}
	if (!k)
		return -EFAULT; /* cannot happen: t was chosen from a head */
	nd->rr[l] = port;
	const struct torus_cost *c = nd->cost[l];
	torus_vt_t end = t + c->ser[k->len];
	nd->free_at[l] = end;
	nd->cand[l] = TIMESIM_NEVER; /* its entry is spent */
	s->st.hops++;
	if (s->cfg.hooks.hop)
		s->cfg.hooks.hop(s->cfg.hooks.arg, n, l, t, end, c->wire[k->len], k->len, k->cookie, k->kind == PK_GETREQ);
	uint32_t next = torus_neighbor(s->cfg.shape, n, l >> 1, (enum torus_dir)(l & 1));
	struct pkt moved = *k;
	k->ready = end + c->hop_latency;
	k->from_link = l;
	k->gen = GEN_NONE;
	uint32_t out = output(s, next, k->dest, k->hints, l, &k->vc);
	int rc = push(s, next, out, 2 * l + (k->vc ? 0 : 1), k);
	if (rc == 0)
		rc = link_update(s, n, l);
	if (rc == 0 && moved.gen != GEN_NONE)
		rc = gen_left(s, n, &moved, end);
	return rc;
}

/* ------------------------------------------------------------------- API */

int timesim_create(const struct timesim_config *cfg, struct timesim **out)
{
	if (!cfg || !out || !cfg->shape || !cfg->params || !cfg->cores || cfg->shape->nnodes == 0 ||
	    cfg->params->inj_fifos == 0 || cfg->getreq_bytes > TORUS_MAX_PAYLOAD ||
	    cfg->shape->nnodes > (1u << 30))
		return -EINVAL;
	struct timesim *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->cfg = *cfg;
	s->nnodes = cfg->shape->nnodes;
	s->pay = torus_params_payload(cfg->params);
	torus_cost_init(&s->cost, cfg->params);
	const uint32_t F = cfg->params->inj_fifos;
	if (!(s->nodes = calloc(s->nnodes, sizeof(*s->nodes)))) {
		free(s);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < s->nnodes; i++) {
		struct node *nd = &s->nodes[i];
		if (cfg->cores[i] == 0 || cfg->cores[i] > TORUS_MAX_CORES) {
			timesim_destroy(s);
			return -EINVAL;
		}
		nd->first_core_port = 4 * cfg->shape->ndims;
		nd->nports = nd->first_core_port + cfg->cores[i] * (1 + F) + 1;
		nd->ngens = cfg->cores[i] * F + 1;
		nd->nwords = (nd->nports + 63) / 64;
		torus_rank_to_coords(cfg->shape, i, nd->coords);
		for (uint32_t l = 0; l < NLINKS; l++) {
			nd->rr[l] = nd->nports - 1; /* the first scan starts at port 0 */
			nd->cand[l] = TIMESIM_NEVER;
			nd->cost[l] = cfg->link_cost && cfg->link_cost[(size_t)i * NLINKS + l]
					      ? cfg->link_cost[(size_t)i * NLINKS + l]
					      : &s->cost;
			if (l < 2 * cfg->shape->ndims)
				nd->wrap[l] = torus_hop_is_wrap(cfg->shape->dims[l >> 1], nd->coords[l >> 1],
								(enum torus_dir)(l & 1));
		}
		if (!(nd->route = malloc(s->nnodes)) ||
		    !(nd->q = calloc((size_t)(NLINKS + 1) * nd->nports, sizeof(*nd->q))) ||
		    !(nd->nonempty = calloc((size_t)(NLINKS + 1) * nd->nwords, sizeof(uint64_t))) ||
		    !(nd->gens = calloc(nd->ngens, sizeof(*nd->gens)))) {
			timesim_destroy(s);
			return -ENOMEM;
		}
		torus_route_table(cfg->shape, i, nd->route);
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
			if (nd->q)
				for (size_t i = 0; i < (size_t)(NLINKS + 1) * nd->nports; i++)
					for (struct pkt *k = nd->q[i].head, *nx; k; k = nx) {
						nx = k->next;
						free(k);
					}
			if (nd->gens)
				for (uint32_t g = 0; g < nd->ngens; g++)
					free(nd->gens[g].jobs);
			free(nd->gens);
			free(nd->nonempty);
			free(nd->q);
			free(nd->route);
		}
		free(s->nodes);
	}
	for (struct pkt *k = s->pool, *nx; k; k = nx) {
		nx = k->next;
		free(k);
	}
	for (size_t i = 0; i < 65; i++)
		free(s->rb[i].e);
	free(s);
}

int timesim_post(struct timesim *s, const struct timesim_xfer *x)
{
	if (!s || !x || x->kind < TIMESIM_RAW || x->kind > TIMESIM_MEMFIFO || x->src_node >= s->nnodes ||
	    x->dst_node >= s->nnodes || x->src_core >= s->cfg.cores[x->src_node])
		return -EINVAL;
	if (x->kind == TIMESIM_RAW ? x->len > s->pay : x->fifo >= s->cfg.params->inj_fifos)
		return -EINVAL;
	for (uint32_t d = 0; d < TORUS_MAX_DIMS; d++) {
		uint32_t h = (x->hints >> (2 * d)) & 3u;
		if (h == 3 || (h && d >= s->cfg.shape->ndims))
			return -EINVAL;
	}
	if (x->ready < s->now)
		return -ERANGE;
	struct node *nd = &s->nodes[x->src_node];
	if (x->kind == TIMESIM_RAW) {
		struct pkt *k = pkt_new(s);
		if (!k)
			return -ENOMEM;
		memset(k, 0, sizeof(*k));
		k->ready = x->ready;
		k->len = (uint32_t)x->len;
		k->dest = x->dst_node;
		k->kind = PK_DATA;
		k->cookie = x->cookie;
		k->hints = x->hints;
		k->origin = x->src_node;
		k->from_link = GEN_NONE;
		k->gen = GEN_NONE;
		uint32_t out = output(s, x->src_node, k->dest, k->hints, GEN_NONE, &k->vc);
		return push(s, x->src_node, out, nd->first_core_port + x->src_core * (1 + s->cfg.params->inj_fifos), k);
	}
	struct job j = {x->cookie, x->len, 0, x->ready, x->kind == TIMESIM_GET ? PK_GETREQ : PK_DATA, x->dst_node,
			x->src_node, x->kind == TIMESIM_GET ? x->len : 0, x->hints};
	return gen_add(s, x->src_node, x->src_core * s->cfg.params->inj_fifos + x->fifo, &j);
}

torus_vt_t timesim_next(struct timesim *s)
{
	/* (a stale departure may still be in it: the time is then early) */
	return heap_min_time(s);
}

int timesim_run(struct timesim *s, torus_vt_t limit)
{
	if (!s)
		return -EINVAL;
	torus_vt_t last = s->now;
	for (;;) {
		if (atomic_load_explicit(&s->cancel, memory_order_relaxed))
			return -ECANCELED;
		torus_vt_t t = heap_min_time(s);
		if (t == TIMESIM_NEVER || t >= limit)
			break;
		const struct entry *top = heap_top(s);
		if (!top)
			return -ENOMEM;
		struct entry e = *top;
		heap_pop(s);
		if (!entry_current(s, &e)) {
			s->st.stale++;
			continue;
		}
		uint32_t n = (uint32_t)((e.key >> 20) & 0x3FFFFFFFFFull), idx = (uint32_t)(e.key & 0xFFFFF);
		s->st.events++;
		last = s->cur = t;
		int rc;
		if (e.key >> 62 == CLS_DEPARTURE) {
			rc = depart(s, n, idx, t);
		} else {
			rc = deliver(s, n, idx, t);
		}
		if (rc)
			return rc;
		if (s->stop) {
			/* events at t may remain: everything before t is final */
			s->stop = 0;
			if (t > s->now)
				s->now = t;
			return 0;
		}
	}
	/* everything before limit is done; with no limit, everything before
	 * the last event (events at its time may still be added after it) */
	torus_vt_t now = limit == TIMESIM_NEVER ? last + 1 : limit;
	if (now > s->now)
		s->now = now;
	return 0;
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
