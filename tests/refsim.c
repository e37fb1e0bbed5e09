/*
 * The reference simulator (refsim.h): every step scans the whole machine for
 * the earliest thing that can happen, so that the code reads like the model.
 */
#include "refsim.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define NEVER UINT64_MAX
#define GEN_NONE UINT32_MAX

enum { PK_DATA, PK_GETREQ };

struct pkt {
	struct pkt *next;
	torus_vt_t ready;
	uint32_t len, dest, vc, kind, xfer;
	uint32_t from_link; /* link it arrived on (2 * dim + dir of travel), GEN_NONE: injected here */
	uint32_t gen;       /* generator port that made it, while at its origin node; else GEN_NONE */
};

struct queue {
	struct pkt *head, *tail;
};

struct job {
	uint32_t xfer;
	uint32_t kind;      /* PK_DATA or PK_GETREQ */
	uint32_t dest;
	uint64_t rest;      /* bytes still to send */
	torus_vt_t ready;
	int started;
	uint16_t hints;
};

struct gen {
	struct job *jobs;
	size_t n, cap, head;
	torus_vt_t cursor;  /* when its previous packet left */
	int busy;           /* a packet of it waits at this node */
};

struct node {
	uint32_t coords[TORUS_MAX_DIMS];
	uint8_t *route;
	torus_vt_t free_at[2 * TORUS_MAX_DIMS];
	uint32_t rr[2 * TORUS_MAX_DIMS];
	struct queue *q;    /* [(2 * TORUS_MAX_DIMS + 1) * nports]: output-major */
	struct gen *gens;   /* ncores * inj_fifos, then the reply queue */
	uint32_t ngens, nports, first_core_port;
};

struct sim {
	const struct refsim_config *cfg;
	const struct torus_shape *s;
	const struct torus_params *p;
	struct node *nodes;
	struct refsim_xfer *x;
	uint32_t pay;
};

#define OUT_LOCAL (2 * TORUS_MAX_DIMS)

static struct queue *qof(struct node *nd, uint32_t out, uint32_t port)
{
	return &nd->q[(size_t)out * nd->nports + port];
}

static uint32_t gen_port(const struct sim *m, const struct node *nd, uint32_t g)
{
	uint32_t F = m->p->inj_fifos;
	if (g == nd->ngens - 1)
		return nd->nports - 1; /* the reply queue */
	return nd->first_core_port + (g / F) * (1 + F) + 1 + g % F;
}

/* The output at node n for a packet to dest arriving on from_link with vc
 * (from_link GEN_NONE: injected): sets *vc for the hop. */
static uint32_t output(const struct sim *m, uint32_t n, uint32_t dest, uint16_t hints, uint32_t from_link,
		       uint32_t *vc)
{
	struct node *nd = &m->nodes[n];
	if (dest == n)
		return OUT_LOCAL;
	uint32_t l = torus_route_apply_hints(nd->route[dest], hints), dim = l >> 1;
	int wrap = torus_hop_is_wrap(m->s->dims[dim], nd->coords[dim], (enum torus_dir)(l & 1));
	if (!(from_link == l && !wrap))
		*vc = wrap ? 1u : 0u;
	return l;
}

static void push(struct queue *q, struct pkt *k)
{
	k->next = NULL;
	if (q->tail)
		q->tail->next = k;
	else
		q->head = k;
	q->tail = k;
}

static struct pkt *pop(struct queue *q)
{
	struct pkt *k = q->head;
	q->head = k->next;
	if (!q->head)
		q->tail = NULL;
	return k;
}

/* Queue generator g's next packet at node n, if it has one and none waits. */
static int gen_next(struct sim *m, uint32_t n, uint32_t g)
{
	struct node *nd = &m->nodes[n];
	struct gen *G = &nd->gens[g];
	if (G->busy || G->head == G->n)
		return 0;
	struct job *j = &G->jobs[G->head];
	struct pkt *k = calloc(1, sizeof(*k));
	if (!k)
		return -ENOMEM;
	k->ready = j->ready > G->cursor ? j->ready : G->cursor;
	k->kind = j->kind;
	k->dest = j->dest;
	k->xfer = j->xfer;
	k->from_link = GEN_NONE;
	k->gen = g;
	if (j->kind == PK_GETREQ) {
		k->len = m->cfg->getreq_bytes;
		j->rest = 0;
	} else {
		k->len = j->rest > m->pay ? m->pay : (uint32_t)j->rest;
		j->rest -= k->len;
	}
	j->started = 1;
	uint32_t out = output(m, n, k->dest, j->hints, GEN_NONE, &k->vc);
	k->vc = out == OUT_LOCAL ? 0 : k->vc;
	push(qof(nd, out, gen_port(m, nd, g)), k);
	G->busy = 1;
	if (j->rest == 0)
		G->head++; /* its last packet is on its way */
	return 0;
}

/* A generator's packet left its origin at `left`: the next one is ready then. */
static int gen_left(struct sim *m, uint32_t n, uint32_t g, torus_vt_t left)
{
	struct gen *G = &m->nodes[n].gens[g];
	G->busy = 0;
	if (left > G->cursor)
		G->cursor = left;
	return gen_next(m, n, g);
}

static int gen_add(struct gen *G, const struct job *j)
{
	if (G->n == G->cap) {
		size_t nc = G->cap ? 2 * G->cap : 8;
		struct job *nj = realloc(G->jobs, nc * sizeof(*nj));
		if (!nj)
			return -ENOMEM;
		G->jobs = nj;
		G->cap = nc;
	}
	G->jobs[G->n++] = *j;
	return 0;
}

static int deliver(struct sim *m, uint32_t n, struct pkt *k, torus_vt_t t)
{
	struct refsim_xfer *x = &m->x[k->xfer];
	int rc = 0;
	if (k->kind == PK_GETREQ) {
		/* the reply: a put back to the requester, from this node's reply queue */
		struct node *nd = &m->nodes[n];
		struct job j = {k->xfer, PK_DATA, x->src_node, x->len, t, 0, x->hints};
		if ((rc = gen_add(&nd->gens[nd->ngens - 1], &j)) == 0)
			rc = gen_next(m, n, nd->ngens - 1);
	} else {
		if (t > x->done || x->packets == 0)
			x->done = t;
		x->packets++;
	}
	if (k->gen != GEN_NONE && rc == 0)
		rc = gen_left(m, n, k->gen, t);
	free(k);
	return rc;
}

static int depart(struct sim *m, uint32_t n, uint32_t l, torus_vt_t t)
{
	struct node *nd = &m->nodes[n];
	struct pkt *k = NULL;
	uint32_t port = 0;
	for (uint32_t i = 1; i <= nd->nports; i++) {
		port = (nd->rr[l] + i) % nd->nports;
		struct queue *q = qof(nd, l, port);
		if (q->head && q->head->ready <= t) {
			k = pop(q);
			break;
		}
	}
	if (!k)
		return -EFAULT; /* cannot happen: t was chosen from a head */
	nd->rr[l] = port;
	uint32_t wire = torus_wire_bytes(m->p, k->len);
	torus_vt_t end = t + torus_ser_ps(m->p, wire);
	nd->free_at[l] = end;
	if (m->cfg->hop) {
		struct refsim_hop h = {n, l, t, end, wire, k->xfer};
		m->cfg->hop(m->cfg->arg, &h);
	}
	uint32_t g = k->gen;
	uint32_t next = torus_neighbor(m->s, n, l >> 1, (enum torus_dir)(l & 1));
	k->ready = end + m->p->hop_latency_ps;
	k->from_link = l;
	k->gen = GEN_NONE;
	uint32_t out = output(m, next, k->dest, m->x[k->xfer].hints, l, &k->vc);
	push(qof(&m->nodes[next], out, 2 * l + (k->vc ? 0 : 1)), k);
	return g != GEN_NONE ? gen_left(m, n, g, end) : 0;
}

/* The earliest thing that can happen: a delivery (deliveries first at equal
 * times) or a departure. 0 when nothing is left. */
static int step(struct sim *m)
{
	torus_vt_t best = NEVER;
	uint32_t bn = 0, bout = 0, bport = 0;
	int found = 0;
	for (uint32_t n = 0; n < m->s->nnodes; n++) {
		struct node *nd = &m->nodes[n];
		for (uint32_t port = 0; port < nd->nports; port++) {
			struct queue *q = qof(nd, OUT_LOCAL, port);
			if (q->head && (!found || q->head->ready < best)) {
				best = q->head->ready;
				bn = n;
				bout = OUT_LOCAL;
				bport = port;
				found = 1;
			}
		}
	}
	for (uint32_t n = 0; n < m->s->nnodes; n++) {
		struct node *nd = &m->nodes[n];
		for (uint32_t l = 0; l < 2 * m->s->ndims; l++) {
			torus_vt_t r = NEVER;
			for (uint32_t port = 0; port < nd->nports; port++) {
				struct queue *q = qof(nd, l, port);
				if (q->head && q->head->ready < r)
					r = q->head->ready;
			}
			if (r == NEVER)
				continue;
			torus_vt_t t = r > nd->free_at[l] ? r : nd->free_at[l];
			if (!found || t < best) {
				best = t;
				bn = n;
				bout = l;
				found = 1;
			}
		}
	}
	if (!found)
		return 0;
	if (bout == OUT_LOCAL) {
		struct pkt *k = pop(qof(&m->nodes[bn], OUT_LOCAL, bport));
		int rc = deliver(m, bn, k, best);
		return rc ? rc : 1;
	}
	int rc = depart(m, bn, bout, best);
	return rc ? rc : 1;
}

static int check(const struct refsim_config *cfg, const struct refsim_xfer *x, size_t n)
{
	const struct torus_shape *s = cfg->shape;
	for (size_t i = 0; i < n; i++) {
		if (x[i].kind < REFSIM_RAW || x[i].kind > REFSIM_MEMFIFO || x[i].src_node >= s->nnodes ||
		    x[i].dst_node >= s->nnodes || x[i].src_core >= cfg->cores[x[i].src_node] ||
		    (x[i].kind != REFSIM_GET && x[i].dst_core >= cfg->cores[x[i].dst_node]))
			return -EINVAL;
		if (x[i].kind == REFSIM_RAW ? x[i].len > torus_params_payload(cfg->params)
					    : x[i].fifo >= cfg->params->inj_fifos)
			return -EINVAL;
	}
	return 0;
}

static void sim_free(struct sim *m)
{
	if (!m->nodes)
		return;
	for (uint32_t n = 0; n < m->s->nnodes; n++) {
		struct node *nd = &m->nodes[n];
		if (nd->q)
			for (size_t i = 0; i < (size_t)(OUT_LOCAL + 1) * nd->nports; i++)
				while (nd->q[i].head)
					free(pop(&nd->q[i]));
		if (nd->gens)
			for (uint32_t g = 0; g < nd->ngens; g++)
				free(nd->gens[g].jobs);
		free(nd->gens);
		free(nd->q);
		free(nd->route);
	}
	free(m->nodes);
}

int refsim_run(const struct refsim_config *cfg, struct refsim_xfer *x, size_t n)
{
	if (!cfg || !cfg->shape || !cfg->params || !cfg->cores || (n && !x))
		return -EINVAL;
	int rc = check(cfg, x, n);
	if (rc)
		return rc;
	struct sim m = {cfg, cfg->shape, cfg->params, NULL, x, torus_params_payload(cfg->params)};
	const struct torus_shape *s = m.s;
	const uint32_t F = m.p->inj_fifos;
	if (!(m.nodes = calloc(s->nnodes, sizeof(*m.nodes))))
		return -ENOMEM;
	for (uint32_t i = 0; i < s->nnodes; i++) {
		struct node *nd = &m.nodes[i];
		nd->first_core_port = 4 * s->ndims;
		nd->nports = nd->first_core_port + cfg->cores[i] * (1 + F) + 1;
		nd->ngens = cfg->cores[i] * F + 1;
		torus_rank_to_coords(s, i, nd->coords);
		for (uint32_t l = 0; l < 2 * TORUS_MAX_DIMS; l++)
			nd->rr[l] = nd->nports - 1; /* the first scan starts at port 0 */
		if (!(nd->route = malloc(s->nnodes)) || !(nd->q = calloc((size_t)(OUT_LOCAL + 1) * nd->nports, sizeof(*nd->q))) ||
		    !(nd->gens = calloc(nd->ngens, sizeof(*nd->gens)))) {
			sim_free(&m);
			return -ENOMEM;
		}
		torus_route_table(s, i, nd->route);
	}
	/* posting: every core's clock, transfers in the order given */
	for (uint32_t nn = 0; nn < s->nnodes && !rc; nn++) {
		for (uint32_t c = 0; c < cfg->cores[nn] && !rc; c++) {
			torus_vt_t clock = 0;
			for (size_t i = 0; i < n && !rc; i++) {
				if (x[i].src_node != nn || x[i].src_core != c)
					continue;
				clock = (x[i].post > clock ? x[i].post : clock) + m.p->inj_overhead_ps;
				x[i].ready = clock;
				x[i].done = 0;
				x[i].packets = 0;
				struct node *nd = &m.nodes[nn];
				if (x[i].kind == REFSIM_RAW) {
					struct pkt *k = calloc(1, sizeof(*k));
					if (!k) {
						rc = -ENOMEM;
						break;
					}
					k->ready = clock;
					k->len = (uint32_t)x[i].len;
					k->dest = x[i].dst_node;
					k->kind = PK_DATA;
					k->xfer = (uint32_t)i;
					k->from_link = GEN_NONE;
					k->gen = GEN_NONE;
					uint32_t out = output(&m, nn, k->dest, x[i].hints, GEN_NONE, &k->vc);
					push(qof(nd, out, nd->first_core_port + c * (1 + F)), k);
				} else {
					struct job j = {(uint32_t)i, x[i].kind == REFSIM_GET ? PK_GETREQ : PK_DATA,
							x[i].dst_node, x[i].len, clock, 0, x[i].hints};
					rc = gen_add(&nd->gens[c * F + x[i].fifo], &j);
				}
			}
		}
	}
	for (uint32_t nn = 0; nn < s->nnodes && !rc; nn++)
		for (uint32_t g = 0; g + 1 < m.nodes[nn].ngens && !rc; g++)
			rc = gen_next(&m, nn, g);
	while (rc == 0) {
		int r = step(&m);
		if (r < 0)
			rc = r;
		if (r == 0)
			break;
	}
	sim_free(&m);
	return rc;
}
