/*
 * The timekeeper (timekeeper.c), part: What the network does, in virtual time: packets and transfers the
 * simulator moves (its hooks), DMA counters and their marks, timers, faults
 * of refused deposits, and the cores' posts.
 */
#include "tk_internal.h"

/* ------------------------------------------------ packets sent in any order */

static size_t pkt_home(const struct tk_pkts *h, uint64_t src, uint64_t name, uint64_t index)
{
	return (size_t)emu_stash_mix(src << 32 ^ index, name) & (h->cap - 1);
}

/* The slot of packet (src, name, index), or SIZE_MAX. */
static size_t pkt_find(const struct tk_pkts *h, uint64_t src, uint64_t name, uint64_t index)
{
	if (!h->n)
		return SIZE_MAX;
	for (size_t i = pkt_home(h, src, name, index);; i = (i + 1) & (h->cap - 1)) {
		const struct tk_pkt *p = &h->slot[i];
		if (!p->src)
			return SIZE_MAX;
		if (p->src == src + 1 && p->name == name && p->index == index)
			return i;
	}
}

static int pkt_put(struct tk_pkts *h, uint64_t src, uint64_t name, uint64_t index, torus_vt_t t)
{
	if (2 * (h->n + 1) > h->cap) {
		struct tk_pkts g = {calloc(h->cap ? 2 * h->cap : 64, sizeof(struct tk_pkt)), 0, h->cap ? 2 * h->cap : 64};
		if (!g.slot)
			return -ENOMEM;
		for (size_t i = 0; i < h->cap; i++)
			if (h->slot[i].src && pkt_put(&g, h->slot[i].src - 1, h->slot[i].name, h->slot[i].index, h->slot[i].t))
				return -ENOMEM; /* (it cannot: g has room) */
		free(h->slot);
		*h = g;
	}
	size_t i = pkt_home(h, src, name, index);
	while (h->slot[i].src)
		i = (i + 1) & (h->cap - 1);
	h->slot[i] = (struct tk_pkt){src + 1, name, index, t};
	h->n++;
	return 0;
}

/* Forget slot i, moving back the entries of its run that it displaced. */
static void pkt_del(struct tk_pkts *h, size_t i)
{
	size_t mask = h->cap - 1;
	for (size_t j = (i + 1) & mask; h->slot[j].src; j = (j + 1) & mask) {
		size_t home = pkt_home(h, h->slot[j].src - 1, h->slot[j].name, h->slot[j].index);
		/* j's entry may move to i if its home is not in (i, j] (cyclically) */
		if (i <= j ? (home <= i || home > j) : (home <= i && home > j)) {
			h->slot[i] = h->slot[j];
			i = j;
		}
	}
	h->slot[i].src = 0;
	h->n--;
}

/* Core k waits for packet (pkt_src, pkt_name, pkt_index): answer it if the
 * packet has arrived (1), else 0. */
int tk_pkt_answer(struct emu_tk *tk, struct tk_core *k)
{
	size_t i = pkt_find(&k->pkts, k->pkt_src, k->pkt_name, k->pkt_index);
	if (i == SIZE_MAX)
		return 0;
	torus_vt_t t = k->pkts.slot[i].t;
	pkt_del(&k->pkts, i);
	tk_answer(tk, k, 1, t > k->qvt ? t : k->qvt);
	return 1;
}

/* A packet sent to core k in any order arrived at t: kept by name; a core
 * waiting for it resumes there, and nothing later is safe until it acts. */
static void arrive_any(struct emu_tk *tk, struct tk_core *k, uint64_t src, uint64_t name, uint64_t index, torus_vt_t t)
{
	if (pkt_put(&k->pkts, src, name, index, t)) {
		tk->failed = -ENOMEM;
		timesim_stop(tk->ts);
		return;
	}
	if (k->waiting && k->qtype == EMU_TKQ_PKT && tk_pkt_answer(tk, k))
		timesim_stop(tk->ts);
}

/* Arrival a of queue qi at core k: into its ring (arrivals are final as
 * they happen, and in order); a core waiting for it resumes there. */
static void arrive(struct emu_tk *tk, struct tk_core *k, uint32_t qi, const struct emu_tk_arr *a, int in_run)
{
	struct tk_queue *q = &k->q[qi];
	if (q->narr == q->cap) {
		if (q->head > q->cap / 2) {
			memmove(q->arr, q->arr + q->head, (q->narr - q->head) * sizeof(*q->arr));
			q->narr -= q->head;
			q->head = 0;
		} else {
			size_t nc = q->cap ? 2 * q->cap : 64;
			struct emu_tk_arr *na = realloc(q->arr, nc * sizeof(*na));
			if (!na) {
				tk->failed = -ENOMEM;
				if (in_run)
					timesim_stop(tk->ts);
				return;
			}
			q->arr = na;
			q->cap = nc;
		}
	}
	q->arr[q->narr++] = *a;
	tk_refill(k, qi);
	int promised = 0, kept = 0;
	uint64_t *arrived = qi == EMU_TK_Q_RAW ? &k->raw_arrived : qi == EMU_TK_Q_MEMFIFO ? &k->mf_arrived : NULL;
	uint64_t expect = qi == EMU_TK_Q_RAW ? k->expect : k->mf_expect;
	if (arrived && (*arrived)++ < expect) {
		promised = 1;
		kept = *arrived == expect;
		if (kept) {
			k->kept_at = a->t;
			if (k->clock < a->t)
				k->clock = a->t; /* it takes this one before it may act */
		}
	}
	if (k->waiting && k->qkey == qi &&
	    (k->qtype == EMU_TKQ_WAIT_RECV || (k->qtype == EMU_TKQ_CTR_OR_RECV && k->blocked))) {
		/* it resumes at this arrival: nothing later is safe until it acts,
		 * unless it promised to wait for more */
		k->a.which = k->qn;
		tk_answer(tk, k, 1, a->t > k->qvt ? a->t : k->qvt);
		if (in_run && (!promised || kept))
			timesim_stop(tk->ts);
	} else if (kept && !k->waiting) {
		tk_rebound(tk, k); /* it may act from here */
		if (in_run)
			timesim_stop(tk->ts);
	}
}

/* Core k's blocked wait is answered at `at` (pair which; a mark crossed at
 * xt) unless something answers it earlier: hold that until the simulation
 * gets there, and stop the run so that its limit takes k's new bound. */
void tk_defer(struct emu_tk *tk, struct tk_core *k, torus_vt_t at, uint32_t which, torus_vt_t xt)
{
	if (at >= k->zero_at)
		return;
	k->zero_at = at;
	k->zero_which = which;
	k->zero_xt = xt;
	tk_rebound(tk, k);
	timesim_stop(tk->ts);
}

static int timer_less(const struct tk_timer *a, const struct tk_timer *b)
{
	return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static int timer_push(struct emu_tk *tk, struct tk_timer x)
{
	struct tk_timer *nt = grow(tk->timer, &tk->captimer, tk->ntimer, sizeof(*nt), 64);
	if (!nt)
		return -ENOMEM;
	tk->timer = nt;
	x.seq = tk->timer_seq++;
	size_t i = tk->ntimer++;
	for (; i > 0 && timer_less(&x, &tk->timer[(i - 1) / 2]); i = (i - 1) / 2)
		tk->timer[i] = tk->timer[(i - 1) / 2];
	tk->timer[i] = x;
	return 0;
}

/*
 * A deposit refused at node `at` at time t: the report reaches the core
 * that posted it (global rank g) one hop_latency per hop later, on the side:
 * it takes no link's bandwidth (faults are rare, and BG/P reports them out
 * of band).
 */
static int fault(struct emu_tk *tk, uint32_t at, uint32_t g, const struct tk_fault *f, torus_vt_t t)
{
	const struct emu_shm_hdr *h = tk->m->hdr;
	torus_vt_t d = (torus_vt_t)torus_hops(&h->shape, at, tk->c[g].node) * h->params.hop_latency_ps;
	return timer_push(tk, (struct tk_timer){.t = add_sat(t, d), .fcore = g, .f = *f});
}

/* Is packet `index` (len bytes) of transfer x refused where it is deposited,
 * at node `at`? Then report it (1). */
/* Record xi loses a reader; with none left it is free for the next
 * descriptor. Records are reused so that the timekeeper's memory follows
 * the descriptors in flight, not all those a job ever posted. */
static void xf_release(struct emu_tk *tk, size_t xi, uint32_t hold)
{
	struct tk_xfer *x = &tk->xf[xi];
	if (!(x->holds & hold))
		return;
	x->holds &= ~hold;
	if (x->holds)
		return;
	x->pk_left = tk->xf_free;
	tk->xf_free = xi + 1;
	tk->xf_live--;
}

/* The simulator is done with transfer xi once it has fully left its node
 * and every packet of it (of its reply, for a get) is deposited. */
static void xf_settled(struct emu_tk *tk, size_t xi)
{
	const struct tk_xfer *x = &tk->xf[xi];
	if (!x->pk_left && x->done != TIMESIM_NEVER)
		xf_release(tk, xi, XF_IN_SIM);
}

static int refused(struct emu_tk *tk, const struct tk_xfer *x, uint32_t at, uint64_t index, uint32_t len, torus_vt_t t)
{
	const struct tk_refuse *r = &tk->rf[x->rf - 1];
	struct tk_fault f = {0, at, UINT32_MAX, len, 0};
	if (x->kind == EMU_TK_MEMFIFO) {
		f.error = r->all;
	} else {
		/* a put's packet, or a get's reply packet at the requester: the
		 * region, then the packet's range, then the counter */
		uint64_t off = r->off + index * torus_params_payload(&tk->m->hdr->params);
		f.region = r->region;
		f.offset = off;
		f.error = r->all                                    ? r->all
			  : off > r->limit || len > r->limit - off ? r->range
								   : r->ctr;
	}
	if (!f.error)
		return 0;
	int rc = fault(tk, at, tk->first[x->src_node] + x->src_core, &f, t);
	if (rc)
		tk->failed = rc;
	/* tk_advance() delivers it: nothing after it may be simulated first */
	timesim_stop(tk->ts);
	return 1;
}

/* A get's request at its target: refused, the report goes back and no
 * reply is sent. */
int tk_on_request(void *arg, uint32_t node, uint64_t cookie, torus_vt_t t)
{
	struct emu_tk *tk = arg;
	if (!(cookie & DMA_COOKIE))
		return 0;
	size_t xi = cookie & ~DMA_COOKIE;
	struct tk_xfer *x = &tk->xf[xi];
	if (!x->rf || !tk->rf[x->rf - 1].req)
		return 0;
	const struct tk_refuse *r = &tk->rf[x->rf - 1];
	struct tk_fault f = {r->req, node, r->req_region, (uint32_t)x->len, r->req_off};
	int rc = fault(tk, node, tk->first[x->src_node] + x->src_core, &f, t);
	if (rc)
		tk->failed = rc;
	x->pk_left = 0; /* no reply */
	xf_settled(tk, xi);
	timesim_stop(tk->ts); /* (as in refused) */
	return 1;
}

void tk_on_deposit(void *arg, uint32_t node, uint64_t cookie, uint64_t index, uint32_t len, torus_vt_t t)
{
	struct emu_tk *tk = arg;
	if (cookie & DMA_COOKIE) {
		/* a put's packet at its destination, a get's reply at the
		 * requester, a memory-FIFO packet at its core */
		size_t xi = cookie & ~DMA_COOKIE;
		struct tk_xfer *x = &tk->xf[xi];
		if (x->pk_left)
			x->pk_left--;
		if (x->rf && refused(tk, x, node, index, len, t)) {
			/* refused: a fault, no arrival, no count */
		} else if (x->kind == EMU_TK_MEMFIFO && (x->ready & EMU_TK_MSG_ANY)) {
			arrive_any(tk, &tk->c[tk->first[node] + x->dst_core], x->src_node, x->ready, index, t);
		} else if (x->kind == EMU_TK_MEMFIFO) {
			struct emu_tk_arr a = {t, (uint64_t)x->src_node << 8 | x->src_core, x->ready, index};
			arrive(tk, &tk->c[tk->first[node] + x->dst_core], EMU_TK_Q_MEMFIFO, &a, 1);
		} else if (x->rec != NO_CTR && len) {
			tk_ctr_change(tk, node, x->rec, -(int64_t)len, t, 0, CH_RUN);
		}
		xf_settled(tk, xi);
		return;
	}
	uint32_t src_global = (uint32_t)(cookie >> 40), dst_core = (uint32_t)(cookie >> 32) & 0xFF;
	const struct tk_core *src = &tk->c[src_global];
	struct emu_tk_arr a = {t, (uint64_t)src->node << 8 | src->core, (uint32_t)cookie, 0};
	arrive(tk, &tk->c[tk->first[node] + dst_core], EMU_TK_Q_RAW, &a, 1);
}

/* A DMA packet left its node: its injection counter counts it, and its
 * descriptor is done when it was the last (a get: its request). */
void tk_on_left(void *arg, uint32_t node, uint64_t cookie, uint32_t len, torus_vt_t t)
{
	struct emu_tk *tk = arg;
	if (!(cookie & DMA_COOKIE))
		return;
	size_t xi = cookie & ~DMA_COOKIE;
	struct tk_xfer *x = &tk->xf[xi];
	x->left += len;
	if (x->kind == EMU_TK_GET || x->left >= x->len)
		x->done = t;
	if (x->inj != NO_CTR && len)
		tk_ctr_change(tk, node, x->inj, -(int64_t)len, t, 0, CH_AHEAD); /* (t: when it finished leaving) */
	xf_settled(tk, xi);
}

/* Is core k waiting for counter id of its node to be zero? */
static int waits_for(const struct tk_core *k, uint32_t id, uint32_t *which)
{
	for (uint32_t i = 0; i < k->qn; i++)
		if (k->qids[i] == id) {
			*which = i;
			return 1;
		}
	return 0;
}

/* Counter c's value at time q (q no earlier than a lookahead before now). */
int64_t tk_value_at(const struct tk_ctr *c, torus_vt_t q)
{
	int64_t v = c->value;
	for (uint32_t i = c->n; i > c->head && c->dec[i - 1].t > q; i--)
		v -= c->dec[i - 1].delta;
	return v;
}

/* The first time after q at which counter c became zero, among the changes
 * made so far; TIMESIM_NEVER if none. */
torus_vt_t tk_zero_after(const struct tk_ctr *c, torus_vt_t q)
{
	int64_t v = tk_value_at(c, q);
	for (uint32_t i = c->head; i < c->n; i++) {
		if (c->dec[i].t <= q)
			continue;
		v += c->dec[i].delta;
		if (v == 0)
			return c->dec[i].t;
	}
	return TIMESIM_NEVER;
}

/* The mark of query pair i of core k: crossed by time q? */
static int mark_by(const struct emu_tk *tk, const struct tk_core *k, uint32_t i, torus_vt_t q, torus_vt_t *t)
{
	const struct tk_ctr *c = &tk->ctr[k->node][k->qids[i]];
	if (k->qmarks[i] >= c->crossed || c->xvt[k->qmarks[i]] > q)
		return 0;
	*t = c->xvt[k->qmarks[i]];
	return 1;
}

/* The earliest crossing among core k's marks by time q (ties: the first
 * pair): 1 and *which, *t; 0 if none. */
int tk_first_mark(const struct emu_tk *tk, const struct tk_core *k, torus_vt_t q, uint32_t *which, torus_vt_t *t)
{
	int found = 0;
	torus_vt_t best = 0;
	for (uint32_t i = 0; i < k->qn; i++) {
		torus_vt_t x;
		if (mark_by(tk, k, i, q, &x) && (!found || x < best)) {
			found = 1;
			*which = i;
			best = x;
		}
	}
	if (found)
		*t = best;
	return found;
}

/* Counter (node, id) fell to its next marks at t: record them, and answer
 * the cores of its node blocked on one of them. */
static void marks_crossed(struct emu_tk *tk, uint32_t node, uint32_t id, struct tk_ctr *c, torus_vt_t t, int in_run)
{
	while (c->crossed < c->nl && c->value <= c->level[c->crossed])
		c->xvt[c->crossed++] = t;
	for (uint32_t g = tk->first[node]; g < tk->first[node + 1]; g++) {
		struct tk_core *k = &tk->c[g];
		uint32_t which;
		torus_vt_t x;
		if (k->waiting && k->qtype == EMU_TKQ_MARK_WAIT && k->blocked && waits_for(k, id, &which) &&
		    tk_first_mark(tk, k, TIMESIM_NEVER, &which, &x)) {
			if (in_run == CH_AHEAD) {
				tk_defer(tk, k, x > k->qvt ? x : k->qvt, which, x);
				continue;
			}
			k->a.which = which;
			k->a.t = x;
			tk_answer(tk, k, 1, x > k->qvt ? x : k->qvt);
			if (in_run)
				timesim_stop(tk->ts);
		}
	}
}

/* Counter (node, id) gets n watermarks (ev CTR_WATCH), or level i is
 * `level` (CTR_LEVEL; the last one also crosses those it stands at). */
static int watch_op(struct emu_tk *tk, uint32_t node, const struct emu_tk_ev *ev)
{
	struct tk_ctr *c = &tk->ctr[node][ev->rec];
	if (ev->type == EMU_TK_CTR_WATCH) {
		if (ev->id > UINT32_MAX)
			return -EPROTO;
		free(c->level);
		free(c->xvt);
		c->level = NULL;
		c->xvt = NULL;
		c->nl = c->crossed = c->nset = 0;
		if (!ev->id)
			return 0;
		if (!(c->level = malloc(ev->id * sizeof(int64_t))) || !(c->xvt = malloc(ev->id * sizeof(torus_vt_t))))
			return -ENOMEM;
		c->nl = (uint32_t)ev->id;
		c->crossed = c->nl; /* none is pending until the levels are in */
		return 0;
	}
	/* in order, each below the one before (dma_counter_watch sends them
	 * so): a level out of order would leave one unset */
	if (ev->id >= c->nl || ev->id != c->nset || (ev->id && ev->delta >= c->level[ev->id - 1]))
		return -EPROTO;
	c->level[ev->id] = ev->delta;
	c->nset++;
	if (ev->id + 1 == c->nl) {
		/* marks the counter stands at were crossed when it last changed */
		c->crossed = 0;
		while (c->crossed < c->nl && c->value <= c->level[c->crossed])
			c->xvt[c->crossed++] = c->changed;
	}
	return 0;
}

/* Counter (node, id) changes by delta at t (alloc: it starts at 0). Zero
 * answers the cores of its node whose wait is blocked on it, and they run
 * from t; in_run: where the change comes from (CH_*). */
void tk_ctr_change(struct emu_tk *tk, uint32_t node, uint32_t id, int64_t delta, torus_vt_t t, int alloc,
		       int in_run)
{
	struct tk_ctr *c = &tk->ctr[node][id];
	if (alloc) {
		c->value = 0;
		c->hits = 0;
		c->changed = t;
		c->head = c->n = 0;
		c->nl = c->crossed = 0;
		return;
	}
	if (delta == 0)
		return; /* an empty message changes nothing, as on the DMA unit */
	c->value += delta;
	c->changed = t;
	if (delta < 0) {
		/* keep the last lookahead's decrements (value_at): before the
		 * event being simulated, not before the end of the last run
		 * (a long run kept hundreds of them per counter) */
		torus_vt_t o = tk->m->hdr->params.inj_overhead_ps, now = timesim_event_time(tk->ts);
		torus_vt_t floor = now > o + 1 ? now - o - 1 : 0;
		while (c->head < c->n && c->dec[c->head].t < floor)
			c->head++;
		if (c->head == c->n)
			c->head = c->n = 0;
		if (c->n == c->cap) {
			if (c->head > 0) {
				memmove(c->dec, c->dec + c->head, (c->n - c->head) * sizeof(*c->dec));
				c->n -= c->head;
				c->head = 0;
			} else {
				uint32_t nc = c->cap ? 2 * c->cap : 8;
				struct tk_dec *nd = realloc(c->dec, nc * sizeof(*nd));
				if (!nd) {
					tk->failed = -ENOMEM;
					timesim_stop(tk->ts);
					return;
				}
				c->dec = nd;
				c->cap = nc;
			}
		}
		/* in time order: a packet that finishes leaving (tk_on_left) can be
		 * dated before one applied earlier, which left another link
		 * later but was shorter; value_at and zero_after read in order */
		uint32_t i = c->n++;
		for (; i > c->head && c->dec[i - 1].t > t; i--)
			c->dec[i] = c->dec[i - 1];
		c->dec[i] = (struct tk_dec){t, delta};
		if (c->crossed < c->nl && c->value <= c->level[c->crossed])
			marks_crossed(tk, node, id, c, t, in_run);
	}
	if (c->value != 0)
		return;
	c->hits++;
	for (uint32_t g = tk->first[node]; g < tk->first[node + 1]; g++) {
		struct tk_core *k = &tk->c[g];
		uint32_t which;
		if (k->waiting && (k->qtype == EMU_TKQ_CTR_WAIT || k->qtype == EMU_TKQ_CTR_OR_RECV) && k->blocked &&
		    waits_for(k, id, &which)) {
			if (in_run == CH_AHEAD) {
				tk_defer(tk, k, t > k->qvt ? t : k->qvt, which, 0);
				continue;
			}
			k->a.which = which;
			tk_answer(tk, k, 1, t > k->qvt ? t : k->qvt);
			if (in_run)
				timesim_stop(tk->ts);
		}
	}
}

static int counter_op(struct emu_tk *tk, uint32_t node, const struct emu_tk_ev *ev)
{
	if (ev->rec >= tk->cores[node] * tk->m->hdr->params.dma_counters)
		return -EPROTO;
	if (ev->type == EMU_TK_CTR_WATCH || ev->type == EMU_TK_CTR_LEVEL)
		return watch_op(tk, node, ev);
	/* a value no program reaches (2^62 bytes) is damage, not a count:
	 * refused before the sum can overflow (fuzz-tkevents) */
	int64_t v;
	if (ev->type == EMU_TK_CTR_ADD &&
	    (__builtin_add_overflow(tk->ctr[node][ev->rec].value, ev->delta, &v) || v > (1ll << 62) || v < -(1ll << 62)))
		return -EPROTO;
	tk_ctr_change(tk, node, ev->rec, ev->delta, ev->ready, ev->type == EMU_TK_CTR_ALLOC, CH_OUTSIDE);
	return 0;
}

/* A local copy: its counter falls by len, len / copy_bw after ready. */
static int post_copy(struct emu_tk *tk, struct tk_core *k, const struct emu_tk_ev *ev)
{
	const struct torus_params *p = &tk->m->hdr->params;
	if (ev->rec == NO_CTR || ev->len == 0)
		return 0;
	if (ev->rec >= tk->cores[k->node] * p->dma_counters || ev->len > INT64_MAX)
		return -EPROTO;
	torus_vt_t t = ev->ready + torus_copy_time(p, ev->len);
	return timer_push(tk, (struct tk_timer){.t = t, .node = k->node, .rec = ev->rec, .len = (int64_t)ev->len,
						.fcore = UINT32_MAX});
}

static void timer_pop(struct emu_tk *tk)
{
	struct tk_timer x = tk->timer[--tk->ntimer];
	size_t i = 0, n = tk->ntimer;
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= n)
			break;
		if (c + 1 < n && timer_less(&tk->timer[c + 1], &tk->timer[c]))
			c++;
		if (!timer_less(&tk->timer[c], &x))
			break;
		tk->timer[i] = tk->timer[c];
		i = c;
	}
	if (n)
		tk->timer[i] = x;
}

/*
 * Simulate as far as is safe: up to the smallest core bound, and the local
 * copies completing before it, each once the network's events up to its
 * time are done (so the order at equal times is fixed). 0, or a negative
 * errno.
 */
int tk_advance(struct emu_tk *tk)
{
	for (;;) {
		torus_vt_t limit = tk->c[tk->tree[1]].lim, now = timesim_now(tk->ts);
		torus_vt_t tl = tk->ntimer ? tk->timer[0].t : TIMESIM_NEVER;
		torus_vt_t upto = tl < limit ? tl + 1 : limit;
		if (upto > now && (upto != TIMESIM_NEVER || timesim_next(tk->ts) != TIMESIM_NEVER)) {
			int rc = timesim_run(tk->ts, upto);
			if (rc || tk->failed)
				return rc ? rc : tk->failed;
		}
		if (tk->ntimer && tk->timer[0].t < tl && tk->timer[0].t < tk->c[tk->tree[1]].lim)
			continue; /* a fault the run just found (it stopped there): deliver it first */
		if (tl >= limit || timesim_now(tk->ts) < upto)
			return 0; /* no copy completes first, or a hook stopped the simulation */
		while (tk->ntimer && tk->timer[0].t == tl) {
			struct tk_timer x = tk->timer[0];
			timer_pop(tk);
			if (x.fcore == UINT32_MAX) {
				tk_ctr_change(tk, x.node, x.rec, -x.len, x.t, 0, CH_OUTSIDE);
				continue;
			}
			struct emu_tk_arr a = {x.t, (uint64_t)(uint32_t)x.f.error << 32 | x.f.node, x.f.offset,
					       (uint64_t)x.f.region << 32 | x.f.len};
			arrive(tk, &tk->c[x.fcore], EMU_TK_Q_FAULT, &a, 0);
			if (tk->failed)
				return tk->failed;
		}
	}
}

/* Descriptor d (an xfer index, or TK_COPY_DONE | done time) joins FIFO f. */
static int fifo_add(struct emu_tk *tk, struct tk_fifo *f, uint64_t d)
{
	/* forget the done ones at the front that no query can still ask about */
	torus_vt_t o = tk->m->hdr->params.inj_overhead_ps, now = timesim_now(tk->ts);
	torus_vt_t floor = now > o + 1 ? now - o - 1 : 0;
	while (f->head < f->n) {
		uint64_t x = f->d[f->head];
		torus_vt_t done = x & TK_COPY_DONE ? x & ~TK_COPY_DONE : tk->xf[x].done;
		if (done >= floor)
			break;
		f->head++;
		if (!(x & TK_COPY_DONE))
			xf_release(tk, x, XF_IN_FIFO);
	}
	if (f->n == f->cap) {
		if (f->head > 0) {
			memmove(f->d, f->d + f->head, (f->n - f->head) * sizeof(*f->d));
			f->n -= f->head;
			f->head = 0;
		} else {
			uint32_t nc = f->cap ? 2 * f->cap : 16;
			uint64_t *nd = realloc(f->d, nc * sizeof(*nd));
			if (!nd)
				return -ENOMEM;
			f->d = nd;
			f->cap = nc;
		}
	}
	f->d[f->n++] = d;
	return 0;
}

/* Descriptors of FIFO f not fully injected by time q. */
uint32_t tk_fifo_pending(const struct emu_tk *tk, const struct tk_fifo *f, torus_vt_t q)
{
	uint32_t n = 0;
	for (uint32_t i = f->head; i < f->n; i++) {
		uint64_t x = f->d[i];
		n += (x & TK_COPY_DONE ? x & ~TK_COPY_DONE : tk->xf[x].done) > q;
	}
	return n;
}

static int post_dma(struct emu_tk *tk, struct tk_core *k, const struct emu_tk_ev *ev)
{
	/* an unchecked descriptor: what its destination will refuse */
	const uint32_t rf = k->rf;
	const struct tk_refuse *r = rf ? &tk->rf[rf - 1] : NULL;
	k->rf = 0;
	if (ev->kind == EMU_TK_COPY) {
		/* a copy leaves its FIFO as it is posted */
		if (ev->fifo >= tk->m->hdr->params.inj_fifos)
			return -EPROTO;
		int rc = fifo_add(tk, &k->fifo[ev->fifo], TK_COPY_DONE | ev->ready);
		if (rc || !r)
			return rc ? rc : post_copy(tk, k, ev);
		/* refused whole as the unit takes it: nothing copied */
		struct tk_fault f = {r->all, k->node, r->region, (uint32_t)ev->len, r->off};
		return fault(tk, k->node, (uint32_t)(k - tk->c), &f, ev->ready);
	}
	size_t xi;
	if (tk->xf_free) {
		xi = tk->xf_free - 1; /* a record no one reads any more */
		tk->xf_free = tk->xf[xi].pk_left;
	} else {
		struct tk_xfer *nx = grow(tk->xf, &tk->capxf, tk->nxf, sizeof(*nx), 1024);
		if (!nx)
			return -ENOMEM;
		tk->xf = nx;
		xi = tk->nxf++;
	}
	tk->xf_live++;
	uint32_t per = tk->m->hdr->params.dma_counters;
	uint32_t rec_node = ev->kind == EMU_TK_GET ? k->node : ev->node;
	/* (a refused counter or core is never used) */
	uint32_t rec = ev->kind == EMU_TK_MEMFIFO || (r && (r->all || r->ctr)) ? NO_CTR : ev->rec;
	uint32_t dst_core = r && r->all ? 0 : ev->core;
	if (ev->node >= tk->m->hdr->nnodes || (ev->inj != NO_CTR && ev->inj >= tk->cores[k->node] * per) ||
	    (rec != NO_CTR && rec >= tk->cores[rec_node] * per) ||
	    (ev->kind == EMU_TK_MEMFIFO && dst_core >= tk->cores[ev->node]))
		return -EPROTO;
	if (ev->fifo >= tk->m->hdr->params.inj_fifos)
		return -EPROTO;
	/* (a memory-FIFO message is named by the sender's count, in delta) */
	/* its packets: at least one (a get's reply, for a get) */
	uint64_t pay = torus_params_payload(&tk->m->hdr->params), npk = ev->len ? (ev->len - 1) / pay + 1 : 1;
	tk->xf[xi] = (struct tk_xfer){ev->kind, k->node, ev->node, ev->inj, rec, (uint32_t)ev->id, k->core, dst_core,
				      ev->kind == EMU_TK_MEMFIFO ? (uint64_t)ev->delta : ev->ready,
				      ev->len, 0, TIMESIM_NEVER, npk, rf, XF_IN_FIFO | XF_IN_SIM};
	int rc = fifo_add(tk, &k->fifo[ev->fifo], xi);
	if (rc)
		return rc;
	static const uint32_t kinds[] = {[EMU_TK_PUT] = TIMESIM_PUT, [EMU_TK_GET] = TIMESIM_GET,
					 [EMU_TK_MEMFIFO] = TIMESIM_MEMFIFO};
	if (ev->kind < EMU_TK_PUT || ev->kind > EMU_TK_MEMFIFO)
		return -EPROTO;
	struct timesim_xfer x = {kinds[ev->kind], k->node, k->core, ev->fifo, ev->node,
				 ev->len, ev->ready, ev->hints, DMA_COOKIE | xi};
	return timesim_post(tk->ts, &x);
}

/* EMU_TK_REFUSE: for the core's next descriptor (errors come positive) */
static int post_refuse(struct emu_tk *tk, struct tk_core *k, const struct emu_tk_ev *ev)
{
	const uint32_t most = 1u << 16;
	if (k->rf || ev->kind > most || ev->fifo > most || ev->inj > most || ev->rec > most)
		return -EPROTO;
	struct tk_refuse *nr = grow(tk->rf, &tk->caprf, tk->nrf, sizeof(*nr), 16);
	if (!nr)
		return -ENOMEM;
	tk->rf = nr;
	tk->rf[tk->nrf++] = (struct tk_refuse){-(int32_t)ev->kind, -(int32_t)ev->fifo, -(int32_t)ev->inj, -(int32_t)ev->rec,
					       ev->node, ev->core, ev->len, ev->id, (uint64_t)ev->delta};
	k->rf = (uint32_t)tk->nrf;
	return 0;
}

int tk_post(struct emu_tk *tk, struct tk_core *k, const struct emu_tk_ev *ev)
{
	tk->events++;
	if (ev->type == EMU_TK_DMA) {
		int rc = post_dma(tk, k, ev);
		if (rc)
			fprintf(stderr, "torusrun: timekeeper: core %u of node %u posted a descriptor it cannot time (%s): kind %u to "
					"node %u, %llu bytes, ready at %llu ps (simulated up to %llu ps; its clock %llu ps; its last "
					"answer: query %u at %llu ps, when simulated up to %llu ps)\n",
				k->core, k->node, strerror(-rc), ev->kind, ev->node, (unsigned long long)ev->len,
				(unsigned long long)ev->ready, (unsigned long long)timesim_now(tk->ts),
				(unsigned long long)k->clock, k->last_qtype, (unsigned long long)k->last_vt,
				(unsigned long long)k->last_now);
		return rc;
	}
	if (ev->type == EMU_TK_REFUSE)
		return post_refuse(tk, k, ev);
	if (ev->type == EMU_TK_EXPECT) {
		/* its bound moves in round_once, after this look */
		if (ev->node == EMU_TK_Q_RAW)
			k->expect = ev->len;
		else if (ev->node == EMU_TK_Q_MEMFIFO)
			k->mf_expect = ev->len;
		else
			return -EPROTO;
		return 0;
	}
	if (ev->type >= EMU_TK_CTR_ALLOC && ev->type <= EMU_TK_CTR_LEVEL)
		return counter_op(tk, k->node, ev);
	if (ev->type != EMU_TK_RAW)
		return -EPROTO;
	uint32_t global = (uint32_t)(k - tk->c);
	struct timesim_xfer x = {TIMESIM_RAW, k->node, k->core, 0, ev->node, ev->len, ev->ready, ev->hints,
				 raw_cookie(global, ev->core, (uint32_t)ev->id)};
	/* the destination core: the simulator knows nodes only, and the
	 * arrival goes to that core's queue (fuzz-tkevents found a write past
	 * the cores when it did not exist) */
	int rc = ev->node < tk->m->hdr->nnodes && ev->core < tk->cores[ev->node] ? timesim_post(tk->ts, &x) : -EINVAL;
	if (rc)
		fprintf(stderr, "torusrun: timekeeper: core %u of node %u sent an event it cannot time (%s): type %u to node %u "
				"core %u, %llu bytes, ready at %llu ps (simulated up to %llu ps)\n",
			k->core, k->node, strerror(-rc), ev->type, ev->node, ev->core, (unsigned long long)ev->len,
			(unsigned long long)ev->ready,
			(unsigned long long)timesim_now(tk->ts));
	return rc;
}
