/*
 * The timekeeper (torusrun --exact; issue 13, docs/exact-engine-plan.md):
 * one thread of torusrun that times the whole job with the exact model
 * (torus/timesim.h), while the node engines move the bytes.
 *
 * Cores tell it what they put on the network, at their virtual clocks
 * (events), and ask it what they can observe (queries). It simulates as
 * far as is safe and no further:
 *
 *   - a running core's next post is ready no earlier than its clock plus
 *     inj_overhead, so packets earlier than the smallest such time are
 *     final (the horizon);
 *   - a core that asks what it can observe at time t (a receive) is
 *     answered once everything up to t is final;
 *   - a core that waits for an arrival resumes at it: the simulation
 *     stops at that arrival (timesim_stop), and that core's clock bounds
 *     the horizon again.
 *
 * Nothing here depends on the host's timing: the answers are a function of
 * the cores' events and queries alone, which are a function of the
 * answers. So every run of a deterministic program gives the same times.
 */
#include "emu_internal.h"
#include "../torus/timesim.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define NLINKS (2 * TORUS_MAX_DIMS)

struct tk_arrival {
	torus_vt_t t;
	uint64_t src; /* node << 8 | core */
	uint64_t id;
};

struct tk_core {
	struct emu_tk_core *sh;
	struct emu_core_shm *cs;
	uint32_t node, core;
	uint32_t qseen;       /* the query number taken last */
	int waiting;          /* a query is pending */
	uint32_t qtype;
	torus_vt_t qvt, qdeadline;
	torus_vt_t clock;     /* running: lower bound on its next action */
	int done;
	torus_vt_t lim;       /* simulate only before this, for this core's sake */
	uint32_t run;         /* 0: a query waits on the bound; 1: a running core */
	struct tk_arrival *arr; /* raw arrivals not yet taken, in the order they arrived */
	size_t narr, head, cap;
};

struct emu_tk {
	struct emu_shm *m;
	pthread_t thread;
	_Atomic int stop;
	int failed;
	struct timesim *ts;
	struct tk_core *c;
	uint32_t ncores;
	uint32_t *first;      /* global rank of each node's core 0 */
	uint32_t *cores;      /* per node (the simulator keeps a pointer to it) */
	struct torus_cost *costs;
	const struct torus_cost **link_cost;
	uint64_t *busy;       /* per node and link: virtual time busy */
	torus_vt_t *free_at;
	/* each core's bound: the time up to which it lets the simulation run
	 * (struct tk_core: lim, run), and a tree of the smallest (its root:
	 * tree[1]; leaves at P + core; waiters before running cores at ties) */
	uint32_t *tree, P;
	uint64_t events, queries, sleeps, rounds;
};

static uint64_t raw_cookie(uint32_t src_global, uint32_t dst_core, uint32_t id)
{
	return (uint64_t)src_global << 40 | (uint64_t)(dst_core & 0xFF) << 32 | id;
}

static void on_hop(void *arg, uint32_t node, uint32_t link, torus_vt_t start, torus_vt_t end, uint32_t wire,
		   uint32_t payload, uint64_t cookie)
{
	(void)wire, (void)payload, (void)cookie;
	struct emu_tk *tk = arg;
	size_t i = (size_t)node * NLINKS + link;
	tk->busy[i] += end - start;
	tk->free_at[i] = end;
}

static int bound_less(const struct emu_tk *tk, uint32_t a, uint32_t b)
{
	if (b == UINT32_MAX)
		return a != UINT32_MAX;
	if (a == UINT32_MAX)
		return 0;
	const struct tk_core *x = &tk->c[a], *y = &tk->c[b];
	return x->lim < y->lim || (x->lim == y->lim && x->run < y->run);
}

static torus_vt_t add_sat(torus_vt_t a, torus_vt_t b) { return a > TIMESIM_NEVER - b ? TIMESIM_NEVER : a + b; }

/* Core k's bound changed (or may have): recompute it and its tree path. */
static void rebound(struct emu_tk *tk, struct tk_core *k)
{
	if (k->done) {
		k->lim = TIMESIM_NEVER;
		k->run = 1;
	} else if (!k->waiting) {
		k->lim = add_sat(k->clock, tk->m->hdr->params.inj_overhead_ps); /* its next post is ready no earlier */
		k->run = 1;
	} else {
		/* answerable once everything up to its time (or deadline) is final */
		k->lim = add_sat(k->qtype == EMU_TKQ_RECV ? k->qvt : k->qdeadline, 1);
		k->run = 0;
	}
	uint32_t pos = tk->P + (uint32_t)(k - tk->c);
	for (pos /= 2; pos; pos /= 2) {
		uint32_t a = tk->tree[2 * pos], b = tk->tree[2 * pos + 1];
		tk->tree[pos] = bound_less(tk, b, a) ? b : a;
	}
}

/* Move arrivals waiting here into core k's ring while it has room. */
static void refill(struct tk_core *k)
{
	struct emu_tk_core *sh = k->sh;
	uint32_t head = atomic_load_explicit(&sh->arr_head, memory_order_relaxed);
	uint32_t tail = atomic_load_explicit(&sh->arr_tail, memory_order_acquire);
	uint32_t n = 0;
	while (k->head < k->narr && head - tail < EMU_TK_ARR_SLOTS) {
		const struct tk_arrival *a = &k->arr[k->head++];
		sh->arr[head % EMU_TK_ARR_SLOTS] = (struct emu_tk_arr){a->t, a->src, a->id, 0};
		head++;
		n++;
	}
	if (k->head == k->narr)
		k->head = k->narr = 0;
	/* before the arrivals: a core that sees them and no overflow is right */
	atomic_store_explicit(&sh->over, (uint32_t)(k->narr - k->head), memory_order_relaxed);
	if (n) /* pairs with the core's acquire load of arr_head */
		atomic_store_explicit(&sh->arr_head, head, memory_order_release);
}

/* The earliest arrival core k has not taken, or TIMESIM_NEVER. */
static torus_vt_t first_arrival(const struct tk_core *k)
{
	const struct emu_tk_core *sh = k->sh;
	uint32_t head = atomic_load_explicit(&sh->arr_head, memory_order_relaxed);
	uint32_t tail = atomic_load_explicit(&sh->arr_tail, memory_order_acquire);
	if (head != tail)
		return sh->arr[tail % EMU_TK_ARR_SLOTS].t;
	return k->head < k->narr ? k->arr[k->head].t : TIMESIM_NEVER;
}

/* Answer core k's query: its clock becomes vt. */
static void answer(struct emu_tk *tk, struct tk_core *k, int found, torus_vt_t vt)
{
	struct emu_tk_core *sh = k->sh;
	refill(k);
	sh->afound = (uint32_t)found;
	sh->avt = vt;
	k->waiting = 0;
	k->clock = vt;
	rebound(tk, k);
	tk->queries++;
	/* pairs with the core's acquire load of aseq */
	atomic_store_explicit(&sh->aseq, k->qseen, memory_order_release);
	emu_bell_ring(&k->cs->bell);
}

static void on_deposit(void *arg, uint32_t node, uint64_t cookie, uint64_t index, uint32_t len, torus_vt_t t)
{
	(void)index, (void)len;
	struct emu_tk *tk = arg;
	uint32_t src_global = (uint32_t)(cookie >> 40), dst_core = (uint32_t)(cookie >> 32) & 0xFF;
	struct tk_core *k = &tk->c[tk->first[node] + dst_core];
	if (k->narr == k->cap) {
		if (k->head > k->cap / 2) {
			memmove(k->arr, k->arr + k->head, (k->narr - k->head) * sizeof(*k->arr));
			k->narr -= k->head;
			k->head = 0;
		} else {
			size_t nc = k->cap ? 2 * k->cap : 64;
			struct tk_arrival *na = realloc(k->arr, nc * sizeof(*na));
			if (!na) {
				tk->failed = -ENOMEM;
				timesim_stop(tk->ts);
				return;
			}
			k->arr = na;
			k->cap = nc;
		}
	}
	const struct tk_core *src = &tk->c[src_global];
	k->arr[k->narr++] = (struct tk_arrival){t, (uint64_t)src->node << 8 | src->core, (uint32_t)cookie};
	/* straight into its ring: arrivals are final as they happen, and in order */
	refill(k);
	if (k->waiting && k->qtype == EMU_TKQ_WAIT_RECV) {
		/* it resumes at this arrival: nothing later is safe until it acts */
		answer(tk, k, 1, t > k->qvt ? t : k->qvt);
		timesim_stop(tk->ts);
	}
}

static int post(struct emu_tk *tk, struct tk_core *k, const struct emu_tk_ev *ev)
{
	if (ev->type != EMU_TK_RAW)
		return -EPROTO;
	uint32_t global = (uint32_t)(k - tk->c);
	struct timesim_xfer x = {TIMESIM_RAW, k->node, k->core, 0, ev->node, ev->len, ev->ready, ev->hints,
				 raw_cookie(global, ev->core, (uint32_t)ev->id)};
	tk->events++;
	int rc = timesim_post(tk->ts, &x);
	if (rc)
		fprintf(stderr, "torusrun: timekeeper: core %u of node %u sent an event it cannot time (%s): type %u to node %u "
				"core %u, %u bytes, ready at %llu ps (simulated up to %llu ps)\n",
			k->core, k->node, strerror(-rc), ev->type, ev->node, ev->core, ev->len, (unsigned long long)ev->ready,
			(unsigned long long)timesim_now(tk->ts));
	return rc;
}

/* Take what core k has said since the last look; 1 if anything. */
static int look(struct emu_tk *tk, struct tk_core *k, int *err)
{
	struct emu_tk_core *sh = k->sh;
	int moved = 0;
	if (k->done)
		return 0;
	/* the query number and clock first: the events before them are then
	 * in the ring (the core writes them in that order) */
	uint32_t q = atomic_load_explicit(&sh->qseq, memory_order_acquire);
	torus_vt_t clk = atomic_load_explicit(&sh->clock, memory_order_acquire);
	int done = atomic_load_explicit(&k->cs->state, memory_order_acquire) == EMU_CORE_DONE;
	uint32_t head = atomic_load_explicit(&sh->head, memory_order_acquire);
	uint32_t tail = atomic_load_explicit(&sh->tail, memory_order_relaxed);
	while (tail != head) {
		int rc = post(tk, k, &sh->ev[tail % EMU_TK_SLOTS]);
		if (rc) {
			*err = rc;
			return 1;
		}
		tail++;
		moved = 1;
	}
	if (moved) {
		atomic_store_explicit(&sh->tail, tail, memory_order_release);
		emu_bell_ring(&k->cs->bell); /* a core waiting for room */
	}
	if (q != k->qseen) {
		k->qseen = q;
		k->qtype = sh->qtype;
		k->qvt = sh->qvt;
		k->qdeadline = sh->qdeadline;
		k->waiting = 1;
		moved = 1;
	} else if (!k->waiting && clk > k->clock) {
		k->clock = clk;
		moved = 1;
	}
	if (done && !k->waiting) {
		k->done = 1;
		moved = 1;
	}
	return moved;
}

/* Answer core k's query if it can be answered now; 1 if it was. */
static int try_answer(struct emu_tk *tk, struct tk_core *k)
{
	torus_vt_t now = timesim_now(tk->ts), t = first_arrival(k);
	if (!k->waiting)
		return 0;
	if (k->qtype == EMU_TKQ_RECV) {
		/* its ring holds every arrival up to qvt once all before it is final */
		if (k->qvt >= now && t > k->qvt)
			return 0;
		answer(tk, k, 1, k->qvt);
		return 1;
	}
	if (t != TIMESIM_NEVER) {
		/* an arrival it has not taken: it resumes at it, or now */
		answer(tk, k, 1, t > k->qvt ? t : k->qvt);
		return 1;
	}
	if (k->qdeadline != TIMESIM_NEVER && k->qdeadline < now) {
		answer(tk, k, 0, k->qdeadline);
		return 1;
	}
	return 0;
}

/* One round: take the news of the cores that have some, simulate as far
 * as is safe, answer what that made answerable. */
static int round_once(struct emu_tk *tk, int *err)
{
	int moved = 0;
	tk->rounds++;
	_Atomic uint64_t *dirty = emu_shm_tk_dirty(tk->m);
	for (uint32_t w = 0; w < (tk->ncores + 63) / 64 && !*err; w++) {
		if (!atomic_load_explicit(&dirty[w], memory_order_relaxed))
			continue;
		/* acquire: pairs with the cores' release in tk_poke */
		uint64_t bits = atomic_exchange_explicit(&dirty[w], 0, memory_order_acquire);
		for (; bits && !*err; bits &= bits - 1) {
			struct tk_core *k = &tk->c[w * 64 + (uint32_t)__builtin_ctzll(bits)];
			if (look(tk, k, err)) {
				moved = 1;
				refill(k);
				if (!try_answer(tk, k))
					rebound(tk, k);
			} else if (k->narr) {
				refill(k); /* it took arrivals: room for those waiting here */
			}
		}
	}
	if (*err)
		return 1;
	torus_vt_t limit = tk->c[tk->tree[1]].lim, before = timesim_now(tk->ts);
	if (limit > before && (limit != TIMESIM_NEVER || timesim_next(tk->ts) != TIMESIM_NEVER)) {
		int rc = timesim_run(tk->ts, limit);
		if (rc || tk->failed) {
			*err = rc ? rc : tk->failed;
			return 1;
		}
	}
	torus_vt_t now = timesim_now(tk->ts);
	if (now != before) {
		moved = 1;
		/* pairs with the cores' acquire loads: their rings hold every
		 * arrival before it */
		atomic_store_explicit(&tk->m->hdr->tk_now, now, memory_order_release);
	}
	/* the queries the simulation reached: waiters come first at ties */
	for (;;) {
		struct tk_core *k = &tk->c[tk->tree[1]];
		if (k->run || k->lim > now || !try_answer(tk, k))
			break;
		moved = 1;
	}
	return moved;
}

static void tk_dump(struct emu_tk *tk)
{
	fprintf(stderr, "timekeeper: now %llu, next event %llu, bound %llu (core %u)\n",
		(unsigned long long)timesim_now(tk->ts), (unsigned long long)timesim_next(tk->ts),
		(unsigned long long)tk->c[tk->tree[1]].lim, tk->tree[1]);
	for (uint32_t i = 0; i < tk->ncores && i < 16; i++) {
		const struct tk_core *k = &tk->c[i];
		fprintf(stderr, "  core %u: done %d waiting %d type %u qvt %llu clock %llu lim %llu first %llu ring %u-%u over %zu\n",
			i, k->done, k->waiting, k->qtype, (unsigned long long)k->qvt, (unsigned long long)k->clock,
			(unsigned long long)k->lim, (unsigned long long)first_arrival(k), atomic_load(&k->sh->arr_tail),
			atomic_load(&k->sh->arr_head), k->narr - k->head);
	}
}

static void *tk_main(void *arg)
{
	struct emu_tk *tk = arg;
	struct emu_bell *bell = &tk->m->hdr->tk_bell;
	int err = 0, idle = 0;
	while (!atomic_load_explicit(&tk->stop, memory_order_acquire)) {
		if (round_once(tk, &err)) {
			if (err)
				break;
			continue;
		}
		uint32_t seq = emu_bell_prepare(bell);
		if (round_once(tk, &err)) {
			emu_bell_cancel(bell);
			if (err)
				break;
			idle = 0;
			continue;
		}
		tk->sleeps++;
		if (++idle == 250 && getenv("TORUS_TK_DEBUG"))
			tk_dump(tk);
		emu_bell_sleep(bell, seq, 20);
	}
	if (err) {
		fprintf(stderr, "torusrun: the timekeeper failed: %s; stopping the job\n", strerror(-err));
		atomic_store(&tk->m->hdr->abort, 1);
		tk->failed = err;
	}
	return NULL;
}

int emu_tk_start(struct emu_shm *m, struct emu_tk **out, char *err, size_t errlen)
{
	const struct emu_shm_hdr *h = m->hdr;
	const uint32_t N = h->nnodes;
	struct emu_tk *tk = calloc(1, sizeof(*tk));
	uint32_t *cores = calloc(N, sizeof(uint32_t));
	if (tk)
		tk->cores = cores;
	if (!tk || !cores || !(tk->first = calloc(N + 1, sizeof(uint32_t))) ||
	    !(tk->c = calloc(h->total_cores, sizeof(*tk->c))) ||
	    !(tk->busy = calloc((size_t)N * NLINKS, sizeof(uint64_t))) ||
	    !(tk->free_at = calloc((size_t)N * NLINKS, sizeof(torus_vt_t))) ||
	    !(tk->link_cost = calloc((size_t)N * NLINKS, sizeof(*tk->link_cost))) ||
	    (h->nlinks && !(tk->costs = calloc(h->nlinks, sizeof(*tk->costs))))) {
		if (!tk)
			free(cores);
		emu_tk_stop(tk);
		snprintf(err, errlen, "out of memory for the timekeeper");
		return -ENOMEM;
	}
	tk->m = m;
	tk->ncores = h->total_cores;
	for (tk->P = 1; tk->P < tk->ncores; tk->P *= 2)
		;
	if (!(tk->tree = malloc(2 * (size_t)tk->P * sizeof(uint32_t)))) {
		emu_tk_stop(tk);
		snprintf(err, errlen, "out of memory for the timekeeper");
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < 2 * tk->P; i++)
		tk->tree[i] = i >= tk->P && i - tk->P < tk->ncores ? i - tk->P : UINT32_MAX;
	for (uint32_t r = 0, g = 0; r < N; r++) {
		struct emu_node_shm *ns = emu_shm_node(m, r);
		cores[r] = ns->ncores;
		tk->first[r] = g;
		for (uint32_t c = 0; c < ns->ncores; c++, g++) {
			tk->c[g].sh = emu_shm_tk(m, g);
			tk->c[g].cs = emu_shm_core(m, ns, c);
			tk->c[g].node = r;
			tk->c[g].core = c;
		}
	}
	tk->first[N] = h->total_cores;
	for (uint32_t g = 0; g < tk->ncores; g++)
		rebound(tk, &tk->c[g]); /* every core runs from time 0 */
	for (uint32_t k = 0; k < h->nlinks; k++) {
		struct torus_params lp;
		torus_link_params(&h->params, &h->links[k], &lp);
		torus_cost_init(&tk->costs[k], &lp);
		tk->link_cost[(size_t)h->links[k].node * NLINKS + h->links[k].link] = &tk->costs[k];
	}
	struct timesim_config cfg = {&h->shape, &h->params, cores, 64, tk->link_cost, {on_hop, on_deposit, NULL, tk}};
	int rc = timesim_create(&cfg, &tk->ts);
	if (rc) {
		emu_tk_stop(tk);
		snprintf(err, errlen, "timekeeper: %s", strerror(-rc));
		return rc;
	}
	if ((rc = pthread_create(&tk->thread, NULL, tk_main, tk))) {
		timesim_destroy(tk->ts);
		tk->ts = NULL;
		emu_tk_stop(tk);
		snprintf(err, errlen, "cannot start the timekeeper: %s", strerror(rc));
		return -rc;
	}
	*out = tk;
	return 0;
}

void emu_tk_stop(struct emu_tk *tk)
{
	if (!tk)
		return;
	if (tk->ts) {
		atomic_store_explicit(&tk->stop, 1, memory_order_release);
		emu_bell_ring_slow(&tk->m->hdr->tk_bell);
		pthread_join(tk->thread, NULL);
		/* the links' busy time and free_at are the timekeeper's */
		const struct emu_shm_hdr *h = tk->m->hdr;
		for (uint32_t r = 0; r < h->nnodes; r++)
			for (uint32_t d = 0; d < h->shape.ndims; d++)
				for (uint32_t dir = 0; dir < 2; dir++) {
					if (!torus_dim_has_links(&h->shape, d))
						continue;
					struct torus_link *l = emu_shm_link_out(tk->m, r, d, dir);
					size_t i = (size_t)r * NLINKS + 2 * d + dir;
					atomic_store(&l->busy_ps, tk->busy[i]);
					atomic_store(&l->free_at, tk->free_at[i]);
				}
		if (getenv("TORUS_TK_DEBUG")) {
			struct timesim_stats st;
			timesim_stats(tk->ts, &st);
			fprintf(stderr,
				"torusrun: timekeeper: %llu events, %llu queries answered, %llu rounds, %llu sleeps; "
				"%llu hops, %llu simulator events\n",
				(unsigned long long)tk->events, (unsigned long long)tk->queries,
				(unsigned long long)tk->rounds, (unsigned long long)tk->sleeps, (unsigned long long)st.hops,
				(unsigned long long)st.events);
		}
		timesim_destroy(tk->ts);
	}
	if (tk->c)
		for (uint32_t i = 0; i < tk->ncores; i++)
			free(tk->c[i].arr);
	free(tk->c);
	free(tk->first);
	free(tk->cores);
	free(tk->tree);
	free(tk->busy);
	free(tk->free_at);
	free(tk->link_cost);
	free(tk->costs);
	free(tk);
}
