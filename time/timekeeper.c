/*
 * The timekeeper (docs/exact-engine-plan.md):
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
#include "tk_internal.h"



static void on_hop(void *arg, uint32_t node, uint32_t link, torus_vt_t start, torus_vt_t end, uint32_t wire,
		   uint32_t payload, uint64_t cookie, int request)
{
	struct emu_tk *tk = arg;
	size_t i = (size_t)node * NLINKS + link;
	tk->busy[i] += end - start;
	tk->free_at[i] = end;
	if (tk->trace) {
		uint32_t kind = TORUS_PKT_RAW, tag = 0;
		if (cookie & DMA_COOKIE) {
			const struct tk_xfer *x = &tk->xf[cookie & ~DMA_COOKIE];
			kind = request ? emu_node_unit.getreq_kind : emu_node_unit.tk_kind[x->kind];
			tag = x->tag;
		}
		emu_trace_packet(tk->trace[node], link, start, end, payload, wire, kind, tag);
	}
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



/* Core k's bound changed (or may have): recompute it and its tree path. */
void tk_rebound(struct emu_tk *tk, struct tk_core *k)
{
	if (k->done) {
		k->lim = TIMESIM_NEVER;
		k->run = 1;
	} else if (!k->waiting && (k->raw_arrived < k->expect || k->mf_arrived < k->mf_expect)) {
		k->lim = TIMESIM_NEVER;
		k->run = 1;
	} else if (!k->waiting || k->qtype == EMU_TKQ_PACE) {
		/* its next post is ready no earlier than its clock plus
		 * inj_overhead (counter changes: see struct tk_ctr); a core
		 * that waits to be paced posts next */
		k->lim = add_sat(k->clock > k->answered_at ? k->clock : k->answered_at, tk->m->hdr->params.inj_overhead_ps);
		k->run = 1;
	} else {
		/* answerable once everything up to its time (or deadline) is final;
		 * a barrier or a blocked counter wait, when something answers it */
		torus_vt_t upto = k->qtype == EMU_TKQ_WAIT_RECV || (k->qtype == EMU_TKQ_CTR_OR_RECV && k->blocked)
					  ? k->qdeadline
				  : k->qtype == EMU_TKQ_BARRIER || k->qtype == EMU_TKQ_PKT ||
						    ((k->qtype == EMU_TKQ_CTR_WAIT || k->qtype == EMU_TKQ_MARK_WAIT) && k->blocked)
					  ? TIMESIM_NEVER
					  : k->qvt;
		if (k->zero_at < upto)
			upto = k->zero_at;
		k->lim = add_sat(upto, 1);
		k->run = 0;
	}
	uint32_t pos = tk->P + (uint32_t)(k - tk->c);
	for (pos /= 2; pos; pos /= 2) {
		uint32_t a = tk->tree[2 * pos], b = tk->tree[2 * pos + 1];
		tk->tree[pos] = bound_less(tk, b, a) ? b : a;
	}
}

/* Move arrivals of queue qi waiting here into core k's ring while it has room. */
void tk_refill(struct tk_core *k, uint32_t qi)
{
	struct emu_tk_aq *aq = &k->sh->aq[qi];
	struct tk_queue *q = &k->q[qi];
	uint32_t head = atomic_load_explicit(&aq->head, memory_order_relaxed);
	uint32_t tail = atomic_load_explicit(&aq->tail, memory_order_acquire);
	uint32_t n = 0;
	while (q->head < q->narr && head - tail < EMU_TK_ARR_SLOTS) {
		aq->arr[head % EMU_TK_ARR_SLOTS] = q->arr[q->head++];
		head++;
		n++;
	}
	if (q->head == q->narr)
		q->head = q->narr = 0;
	/* before the arrivals: a core that sees them and no overflow is right */
	atomic_store_explicit(&aq->over, (uint32_t)(q->narr - q->head), memory_order_relaxed);
	if (n) /* pairs with the core's acquire load of head */
		atomic_store_explicit(&aq->head, head, memory_order_release);
}

void tk_refill_all(struct tk_core *k)
{
	for (uint32_t qi = 0; qi < EMU_TK_NQ; qi++)
		tk_refill(k, qi);
}

/* The earliest arrival of queue qi core k has not taken, or TIMESIM_NEVER. */
torus_vt_t tk_first_arrival(const struct tk_core *k, uint32_t qi)
{
	const struct emu_tk_aq *aq = &k->sh->aq[qi];
	const struct tk_queue *q = &k->q[qi];
	uint32_t head = atomic_load_explicit(&aq->head, memory_order_relaxed);
	uint32_t tail = atomic_load_explicit(&aq->tail, memory_order_acquire);
	if (head != tail)
		return aq->arr[tail % EMU_TK_ARR_SLOTS].t;
	return q->head < q->narr ? q->arr[q->head].t : TIMESIM_NEVER;
}

/* Core k has an answer to publish (flush); a program's core can have a
 * chain of them in one flush, so the queue grows. */
void tk_pub_push(struct emu_tk *tk, struct tk_core *k)
{
	if (k->pub)
		return;
	void *p = grow(tk->pubq, &tk->cappub, tk->npub + 1, sizeof(*tk->pubq), 64);
	if (!p) {
		tk->prog_err = -ENOMEM;
		return;
	}
	tk->pubq = p;
	k->pub = 1;
	tk->pubq[tk->npub++] = (uint32_t)(k - tk->c);
}

/* Answer core k's query: its clock becomes vt. The answer is published by
 * tk_flush (after the simulator's run, when a plan of the core's can be
 * timed). */
void tk_answer(struct emu_tk *tk, struct tk_core *k, int found, torus_vt_t vt)
{
	if (k->defer_wait && !k->prog) {
		/* a wait from its ring (a deferred program's at its end; the
		 * program's own waits are answered as asked): nothing to
		 * publish; what it told after it is timed from here, and read
		 * in the next round */
		k->defer_wait = 0;
		k->waiting = 0;
		k->zero_at = TIMESIM_NEVER;
		k->base = vt > k->qvt ? vt : k->qvt;
		k->clock = k->base > k->clock ? k->base : k->clock;
		k->answered_at = k->base;
		tk_rebound(tk, k);
		tk->deferred++;
		_Atomic uint64_t *w = emu_shm_tk_dirty(tk->m) + (uint32_t)(k - tk->c) / 64;
		atomic_fetch_or_explicit(w, 1ull << ((uint32_t)(k - tk->c) % 64), memory_order_relaxed);
		return;
	}
	k->afound = (uint32_t)found;
	k->avt = vt;
	k->waiting = 0;
	k->zero_at = TIMESIM_NEVER;
	k->last_qtype = k->qtype;
	k->last_vt = vt;
	k->last_now = timesim_now(tk->ts);
	/* a query it asked under a promise the simulation has seen kept: it
	 * takes that arrival before it acts */
	k->clock = vt > k->kept_at ? vt : k->kept_at;
	k->answered_at = vt;
	tk_rebound(tk, k);
	tk->queries++;
	if (k->qtype < TK_QTYPES)
		tk->by_type[k->qtype]++;
	tk_pub_push(tk, k);
}

/* Host time, for TORUS_TK_DEBUG's account of where the timekeeper's went. */
static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* For emu_tk_progress, from the timekeeper's own thread. */
static void progress_publish(struct emu_tk *tk)
{
	struct timesim_stats st;
	timesim_stats(tk->ts, &st);
	const struct tk_core *k = tk->tree[1] < tk->ncores ? &tk->c[tk->tree[1]] : NULL;
	int none = !k || k->done || k->lim == TIMESIM_NEVER;
	atomic_store_explicit(&tk->pub_now, timesim_now(tk->ts), memory_order_relaxed);
	atomic_store_explicit(&tk->pub_events, st.events, memory_order_relaxed);
	atomic_store_explicit(&tk->pub_hops, st.hops, memory_order_relaxed);
	atomic_store_explicit(&tk->pub_sim_ns, tk->sim_ns, memory_order_relaxed);
	atomic_store_explicit(&tk->pub_wait, none ? UINT32_MAX : tk->tree[1], memory_order_relaxed);
	atomic_store_explicit(&tk->pub_wait_query, none || !k->waiting ? 0 : k->qtype, memory_order_relaxed);
	atomic_store_explicit(&tk->pub_wait_vt, none ? 0 : k->waiting ? k->qvt : k->clock, memory_order_relaxed);
}

void emu_tk_progress(const struct emu_tk *tk, struct emu_tk_progress *out)
{
	if (!out)
		return;
	*out = (struct emu_tk_progress){.wait_node = UINT32_MAX, .wait_core = UINT32_MAX};
	if (!tk)
		return;
	out->now = atomic_load_explicit(&tk->pub_now, memory_order_relaxed);
	out->events = atomic_load_explicit(&tk->pub_events, memory_order_relaxed);
	out->hops = atomic_load_explicit(&tk->pub_hops, memory_order_relaxed);
	out->sim_ns = atomic_load_explicit(&tk->pub_sim_ns, memory_order_relaxed);
	uint32_t g = atomic_load_explicit(&tk->pub_wait, memory_order_relaxed);
	if (g < tk->ncores) {
		out->wait_node = tk->c[g].node; /* (fixed at the start) */
		out->wait_core = tk->c[g].core;
		out->wait_query = atomic_load_explicit(&tk->pub_wait_query, memory_order_relaxed);
		out->wait_vt = atomic_load_explicit(&tk->pub_wait_vt, memory_order_relaxed);
	}
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
			const uint32_t g = w * 64 + (uint32_t)__builtin_ctzll(bits);
			if (g >= tk->ncores)
				continue; /* (a bit past the cores: nobody's) */
			struct tk_core *k = &tk->c[g];
			if (tk_look(tk, k, err)) {
				/* news it refuses: nothing of it is used (a refused
				 * query's fields are not checked; fuzz-tkevents
				 * found its queue number used past the queues) */
				if (*err)
					return 1;
				moved = 1;
				tk_refill_all(k);
				if (k->waiting && k->qtype == EMU_TKQ_BARRIER && !k->arrived_bar) {
					k->arrived_bar = 1;
					int rc = tk_barrier_arrive(tk, k);
					if (rc) {
						*err = rc;
						return 1;
					}
				}
				if (!tk_try_answer(tk, k))
					tk_rebound(tk, k);
			} else if (k->q[0].narr || k->q[1].narr) {
				tk_refill_all(k); /* it took arrivals: room for those waiting here */
			}
		}
	}
	if (!*err && (*err = tk_flush(tk)))
		return 1;
	if (*err)
		return 1;
	torus_vt_t before = timesim_now(tk->ts);
	uint64_t t0 = mono_ns();
	int rc = tk_advance(tk);
	tk->sim_ns += mono_ns() - t0;
	if (rc) {
		*err = rc;
		return 1;
	}
	torus_vt_t now = timesim_now(tk->ts);
	if (now != before) {
		moved = 1;
		/* pairs with the cores' acquire loads: their rings hold every
		 * arrival before it */
		atomic_store_explicit(&tk->m->hdr->tk_now, now, memory_order_release);
		if (tk_pace_answer(tk, now))
			moved = 1;
	}
	/* the queries the simulation reached: waiters come first at ties */
	for (;;) {
		struct tk_core *k = &tk->c[tk->tree[1]];
		if (k->run || k->lim > now || !tk_try_answer(tk, k))
			break;
		moved = 1; /* answered, or it blocks and its bound moved on */
	}
	if (tk->npub) {
		moved = 1;
		if ((*err = tk_flush(tk)))
			return 1;
	}
	if (moved)
		progress_publish(tk);
	return moved;
}

static void tk_dump(struct emu_tk *tk)
{
	fprintf(stderr, "timekeeper: now %llu, next event %llu, bound %llu (core %u)\n",
		(unsigned long long)timesim_now(tk->ts), (unsigned long long)timesim_next(tk->ts),
		(unsigned long long)tk->c[tk->tree[1]].lim, tk->tree[1]);
	for (uint32_t i = 0; i < tk->ncores; i++) {
		const struct tk_core *k = &tk->c[i];
		if (k->done)
			continue;
		fprintf(stderr, "  core %u (node %u.%u): waiting %d type %u qvt %llu blocked %d qn %u id0 %u clock %llu lim %llu; "
				"deferred wait %d, base %llu; ring %u..%u, question %u (seen %u)\n", i,
			k->node, k->core, k->waiting, k->qtype, (unsigned long long)k->qvt, k->blocked, k->qn, k->qids[0],
			(unsigned long long)k->clock, (unsigned long long)k->lim, k->defer_wait, (unsigned long long)k->base,
			atomic_load(&k->sh->tail), atomic_load(&k->sh->head), atomic_load(&k->sh->qseq), k->qseen);
	}
	for (size_t b = 0; b < tk->nbar; b++)
		fprintf(stderr, "  barrier %llx: %u of %u\n", (unsigned long long)tk->bar[b].key, tk->bar[b].arrived,
			tk->bar[b].n);
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
		/* the core it waits for: the first by bound, if it runs (a
		 * waiter's answer may need anyone's news) */
		const struct tk_core *root = &tk->c[tk->tree[1]];
		atomic_store(&tk->m->hdr->tk_waits_for,
			     root->run && !root->done && !root->waiting ? tk->tree[1] : UINT32_MAX);
		uint32_t seq = emu_bell_prepare(bell);
		if (round_once(tk, &err)) {
			atomic_store(&tk->m->hdr->tk_waits_for, UINT32_MAX);
			emu_bell_cancel(bell);
			if (err)
				break;
			idle = 0;
			continue;
		}
		tk->sleeps++;
		if (++idle == 250 && getenv("TORUS_TK_DEBUG"))
			tk_dump(tk);
		uint64_t t0 = mono_ns();
		emu_bell_sleep(bell, seq, 20);
		atomic_store(&tk->m->hdr->tk_waits_for, UINT32_MAX);
		tk->sleep_ns += mono_ns() - t0;
	}
	/* a job that ended: what its cores' last news left to simulate (the
	 * links' busy times are in the report) */
	while (!err && !atomic_load(&tk->m->hdr->abort) && round_once(tk, &err))
		;
	if (err == -ECANCELED && atomic_load(&tk->m->hdr->abort))
		err = 0; /* emu_tk_stop, for a job torn down */
	if (err) {
		fprintf(stderr, "torusrun: the timekeeper failed: %s; stopping the job\n", strerror(-err));
		atomic_store(&tk->m->hdr->abort, 1);
		tk->failed = err;
	}
	struct timespec cpu;
	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu) == 0)
		tk->cpu_ns = (uint64_t)cpu.tv_sec * 1000000000u + (uint64_t)cpu.tv_nsec;
	return NULL;
}

int emu_tk_rounds(struct emu_tk *tk, uint32_t max_rounds, uint32_t *rounds)
{
	int err = 0;
	uint32_t n = 0;
	if (!tk || tk->threaded || !max_rounds)
		return -EINVAL;
	if (tk->rounds_err)
		return tk->rounds_err; /* as torusrun, which stops the job */
	while (n < max_rounds && round_once(tk, &err) && !err)
		n++;
	if (rounds)
		*rounds = n;
	tk->rounds_err = err;
	return err ? err : n == max_rounds ? -EBUSY : 0;
}

int emu_tk_start(struct emu_shm *m, int trace_fd, struct emu_tk **out, char *err, size_t errlen)
{
	struct emu_tk *tk;
	int rc = emu_tk_open(m, trace_fd, &tk, err, errlen);
	if (rc)
		return rc;
	if ((rc = pthread_create(&tk->thread, NULL, tk_main, tk))) {
		/* nothing simulated: free it without the stop's account (the
		 * links' counters, TORUS_TK_DEBUG), as before emu_tk_open */
		timesim_destroy(tk->ts);
		tk->ts = NULL;
		emu_tk_stop(tk);
		snprintf(err, errlen, "cannot start the timekeeper: %s", strerror(rc));
		return -rc;
	}
	tk->threaded = 1;
	*out = tk;
	return 0;
}

int emu_tk_open(struct emu_shm *m, int trace_fd, struct emu_tk **out, char *err, size_t errlen)
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
	if (!(tk->tree = malloc(2 * (size_t)tk->P * sizeof(uint32_t))) ||
	    !(tk->pace = malloc((size_t)tk->ncores * sizeof(uint32_t)))) {
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
			tk->c[g].zero_at = TIMESIM_NEVER;
			if (!(tk->c[g].fifo = calloc(h->params.inj_fifos ? h->params.inj_fifos : 1, sizeof(struct tk_fifo)))) {
				emu_tk_stop(tk);
				snprintf(err, errlen, "out of memory for the timekeeper");
				return -ENOMEM;
			}
		}
	}
	tk->first[N] = h->total_cores;
	if (!(tk->ctr = calloc(N, sizeof(*tk->ctr)))) {
		emu_tk_stop(tk);
		snprintf(err, errlen, "out of memory for the timekeeper");
		return -ENOMEM;
	}
	for (uint32_t r = 0; r < N; r++)
		if (!(tk->ctr[r] = calloc((size_t)cores[r] * h->params.dma_counters, sizeof(struct tk_ctr)))) {
			emu_tk_stop(tk);
			snprintf(err, errlen, "out of memory for the timekeeper's counters");
			return -ENOMEM;
		}
	for (uint32_t g = 0; g < tk->ncores; g++)
		tk_rebound(tk, &tk->c[g]); /* every core runs from time 0 */
	for (uint32_t k = 0; k < h->nlinks; k++) {
		struct torus_params lp;
		torus_link_params(&h->params, &h->links[k], &lp);
		torus_cost_init(&tk->costs[k], &lp);
		tk->link_cost[(size_t)h->links[k].node * NLINKS + h->links[k].link] = &tk->costs[k];
	}
	if (trace_fd >= 0) {
		/* the records are ours (the engines time nothing): one writer
		 * per node, --trace-buffer's bytes in two buffers, written
		 * through io_uring (the simulation never waits for the disk) up
		 * to 256 nodes, plainly beyond (a ring and its fd per node) */
		if (!(tk->trace = calloc(N, sizeof(*tk->trace)))) {
			emu_tk_stop(tk);
			snprintf(err, errlen, "out of memory for the timekeeper's trace");
			return -ENOMEM;
		}
		for (uint32_t r = 0; r < N; r++)
			if (!(tk->trace[r] = emu_trace_writer(trace_fd, r, 2, h->trace_buf_bytes, !!(h->trace_flags & TORUS_TRACE_F_PACKETS),
							      &m->hdr->trace_off, N <= 256, err, errlen))) {
				emu_tk_stop(tk);
				return -ENOMEM;
			}
	}
	struct timesim_config cfg = {&h->shape, &h->params, cores, emu_node_unit.getreq_bytes, tk->link_cost, {.hop = on_hop, .deposit = tk_on_deposit, .left = tk_on_left, .request = tk_on_request, .arg = tk}};
	int rc = timesim_create(&cfg, &tk->ts);
	if (rc) {
		emu_tk_stop(tk);
		snprintf(err, errlen, "timekeeper: %s", strerror(-rc));
		return rc;
	}
	*out = tk;
	return 0;
}

void emu_tk_stop(struct emu_tk *tk) { emu_tk_stop_report(tk, NULL); }

void emu_tk_stop_report(struct emu_tk *tk, struct emu_tk_progress *last)
{
	if (last)
		emu_tk_progress(NULL, last);
	if (!tk)
		return;
	if (tk->ts) {
		atomic_store_explicit(&tk->stop, 1, memory_order_release);
		/* a job torn down leaves no simulation to finish: 16x16x16
		 * torus-stress, stopped at 150 us, kept its timekeeper simulating
		 * what the cores had posted for 20 more minutes */
		if (atomic_load(&tk->m->hdr->abort))
			timesim_cancel(tk->ts);
		emu_bell_ring_slow(&tk->m->hdr->tk_bell);
		if (tk->threaded)
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
				"torusrun: timekeeper: %llu events, %llu queries answered (%llu paces), %llu program steps taken, "
				"%llu rounds, %llu sleeps; "
				"%llu hops, %llu simulator events (%llu stale, heap of at most %llu, %llu past the wheel); "
				"wall time simulating %.3f s, asleep %.3f s; thread CPU time %.3f s; "
				"%zu transfer records (%zu in use at the end)\n",
				(unsigned long long)tk->events, (unsigned long long)tk->queries,
				(unsigned long long)tk->paced, (unsigned long long)tk->planned, (unsigned long long)tk->rounds, (unsigned long long)tk->sleeps, (unsigned long long)st.hops,
				(unsigned long long)st.events, (unsigned long long)st.stale, (unsigned long long)st.heap_max,
				(unsigned long long)st.beyond, (double)tk->sim_ns / 1e9, (double)tk->sleep_ns / 1e9, (double)tk->cpu_ns / 1e9, tk->nxf, tk->xf_live);
			fprintf(stderr, "torusrun: timekeeper: %llu deferred waits; queries by type (enum emu_tk_query):",
				(unsigned long long)tk->deferred);
			for (uint32_t q = 1; q < TK_QTYPES; q++)
				fprintf(stderr, " %u:%llu", q, (unsigned long long)tk->by_type[q]);
			fputc('\n', stderr);
		}
		progress_publish(tk);
		if (last)
			emu_tk_progress(tk, last);
		timesim_destroy(tk->ts);
	}
	for (uint32_t r = 0; tk->trace && r < tk->m->hdr->nnodes; r++) {
		uint64_t records = 0, bytes = 0, waits = 0;
		int rc = emu_trace_writer_close(tk->trace[r], &records, &bytes, &waits);
		if (tk->trace[r])
			emu_trace_publish(emu_shm_node(tk->m, r), records, bytes, waits, rc);
	}
	free(tk->trace);
	if (tk->c)
		for (uint32_t i = 0; i < tk->ncores; i++) {
			if (tk->c[i].pst)
				for (uint32_t st = 0; st < EMU_TK_PLANS; st++)
					free(tk->c[i].pst[st].s);
			free(tk->c[i].pst);
			free(tk->c[i].pev);
			free(tk->c[i].pkts.slot);
			for (uint32_t qi = 0; qi < EMU_TK_NQ; qi++)
				free(tk->c[i].q[qi].arr);
			for (uint32_t f = 0; tk->c[i].fifo && f < tk->m->hdr->params.inj_fifos; f++)
				free(tk->c[i].fifo[f].d);
			free(tk->c[i].fifo);
		}
	free(tk->c);
	free(tk->first);
	if (tk->ctr)
		for (uint32_t r = 0; r < tk->m->hdr->nnodes; r++) {
			for (uint32_t i = 0; tk->ctr[r] && i < tk->cores[r] * tk->m->hdr->params.dma_counters; i++) {
				free(tk->ctr[r][i].dec);
				free(tk->ctr[r][i].level);
				free(tk->ctr[r][i].xvt);
			}
			free(tk->ctr[r]);
		}
	free(tk->ctr);
	free(tk->xf);
	free(tk->timer);
	for (size_t i = 0; i < tk->nbar; i++)
		free(tk->bar[i].members);
	free(tk->bar);
	free(tk->rf);
	free(tk->cores);
	free(tk->tree);
	free(tk->pubq);
	free(tk->pace);
	free(tk->busy);
	free(tk->free_at);
	free(tk->link_cost);
	free(tk->costs);
	free(tk);
}
