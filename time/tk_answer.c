/*
 * The timekeeper (timekeeper.c), part: The cores' questions and what answers them: looks at arrivals, counters
 * and marks, deferred waits, programs, paces and
 * barriers.
 */
#include "tk_internal.h"

/* A program that the timekeeper cannot run (emu_core_step_end). */
static int plan_refused(const struct tk_core *k, const char *why)
{
	fprintf(stderr, "torusrun: timekeeper: core %u of node %u: a step of its program (emu_core_step_end) %s\n",
		k->core, k->node, why);
	return -EPROTO;
}

/* A core acted before its last answer (or the end of its last deferred
 * wait): its clock went back. */
static void before_answer(const struct tk_core *k, const char *what, torus_vt_t at)
{
	fprintf(stderr, "torusrun: timekeeper: core %u of node %u %s at %llu ps, before its last answer: %llu ps\n",
		k->core, k->node, what, (unsigned long long)at, (unsigned long long)k->answered_at);
}


/* Node-wide counter ids of core k's node: below this. */
static uint32_t counters_of(const struct emu_tk *tk, const struct tk_core *k)
{
	return tk->cores[k->node] * tk->m->hdr->params.dma_counters;
}

/* No program's steps held for core k. */
static void prog_clear(struct tk_core *k)
{
	for (uint32_t s = 0; k->pst && s < EMU_TK_PLANS; s++)
		k->pst[s].n = k->pst[s].head = k->pst[s].handled = 0;
	k->npev = 0;
	k->fill = 0;
}

/* A step of core k's program (EMU_TK_STEP), or the next of its events. */
static int step_take(struct emu_tk *tk, struct tk_core *k, const struct emu_tk_ev *ev)
{
	if (k->prog)
		return plan_refused(k, "came while its program ran");
	if (!k->pst && !(k->pst = calloc(EMU_TK_PLANS, sizeof(*k->pst))))
		return -ENOMEM;
	if (k->fill) {
		if (ev->type == EMU_TK_STEP || ev->type == EMU_TK_EXPECT)
			return plan_refused(k, "of a program is cut short");
		void *p = grow(k->pev, &k->cappev, k->npev + 1, sizeof(*k->pev), 256);
		if (!p)
			return -ENOMEM;
		k->pev = p;
		k->pev[k->npev++] = *ev;
		k->fill--;
		return 0;
	}
	uint32_t lim = counters_of(tk, k);
	if (ev->core >= EMU_TK_PLANS || ev->len > EMU_TK_STEP_EVS || (ev->id != UINT64_MAX && ev->id > UINT32_MAX) ||
	    (ev->id != UINT64_MAX && ev->rec >= lim))
		return plan_refused(k, "of a program is malformed");
	struct tk_stream *st = &k->pst[ev->core];
	void *p = grow(st->s, &st->cap, st->n + 1, sizeof(*st->s), 64);
	if (!p)
		return -ENOMEM;
	st->s = p;
	st->s[st->n++] = (struct tk_step){ev->id, ev->rec, (uint32_t)ev->len, ev->ready, k->npev};
	k->fill = (uint32_t)ev->len;
	return 0;
}

/* Take stream s's next step from `at`: its events, then its clock. */
static int step_apply(struct emu_tk *tk, struct tk_core *k, uint32_t s, torus_vt_t at)
{
	struct tk_stream *st = &k->pst[s];
	const struct tk_step *p = &st->s[st->head++];
	st->handled++;
	for (uint32_t i = 0; i < p->nev; i++) {
		struct emu_tk_ev ev = k->pev[p->ev + i];
		if (ev.type != EMU_TK_REFUSE)
			ev.ready = add_sat(ev.ready, at);
		int rc = tk_post(tk, k, &ev);
		if (rc)
			return rc;
	}
	tk->planned++;
	k->clock = add_sat(at, p->end);
	return 0;
}

/* Run core k's program on from its clock, as the core serves its streams:
 * steps without a mark at once (the first in order of steps had, then of
 * stream), else a wait for the first mark crossed among the streams'
 * next steps (answered in publish); at the end, the program's query. */
static int prog_next(struct emu_tk *tk, struct tk_core *k)
{
	for (;;) {
		uint32_t order[EMU_TK_PLANS], n = 0, nw = 0;
		for (uint32_t s = 0; s < k->nprog; s++) {
			const struct tk_stream *st = &k->pst[s];
			if (st->head == st->n)
				continue;
			uint32_t at = n++;
			while (at > 0 && k->pst[order[at - 1]].handled > st->handled) {
				order[at] = order[at - 1];
				at--;
			}
			order[at] = s;
		}
		if (!n) {
			k->qtype = EMU_TKQ_PROGRAM;
			if (k->defer_wait) {
				/* its end, deferred: what the core told after it is
				 * timed from here (tk_answer), and the next program
				 * starts afresh */
				k->prog = 0;
				prog_clear(k);
			} else {
				k->prog_done = 1;
			}
			tk_answer(tk, k, 1, k->clock);
			return 0;
		}
		int ready = -1;
		for (uint32_t i = 0; i < n && ready < 0; i++) {
			const struct tk_step *p = &k->pst[order[i]].s[k->pst[order[i]].head];
			if (p->mark == UINT64_MAX) {
				ready = (int)order[i];
			} else {
				k->qids[nw] = p->id;
				k->qmarks[nw] = (uint32_t)p->mark;
				k->porder[nw++] = order[i];
			}
		}
		if (ready >= 0) {
			int rc = step_apply(tk, k, (uint32_t)ready, k->clock);
			if (rc)
				return rc;
			continue;
		}
		k->qtype = EMU_TKQ_MARK_WAIT;
		k->qvt = k->clock;
		k->qn = nw;
		k->qdeadline = 0;
		k->qkey = 0;
		k->blocked = 0;
		k->zero_at = TIMESIM_NEVER;
		k->waiting = 1;
		if (!tk_try_answer(tk, k))
			tk_rebound(tk, k);
		return 0;
	}
}

/* Core k waited for counter ev->rec to be zero and ran on (EMU_TK_WAITED):
 * as a counter wait it asked, but answered by rebasing what follows
 * (answer), not to the core. Its events behind it wait till then. */
static int waited(struct emu_tk *tk, struct tk_core *k, const struct emu_tk_ev *ev)
{
	const char *bad = k->waiting || k->prog ? "while it waited for an answer"
			  : ev->kind > 3 ? "of no known kind"
			  : ev->kind == 0 && ev->rec >= counters_of(tk, k) ? "on a counter it does not have"
			  : ev->kind == 1 && (ev->len == 0 || ev->len > tk->ncores) ? "on a barrier of no possible size"
			  : ev->kind == 2 && !(ev->id & EMU_TK_MSG_ANY) ? "on a packet not sent in any order"
			  : ev->kind == 3 && (ev->len == 0 || ev->len > EMU_TK_PLANS || k->fill) ? "on a malformed program"
										   : NULL;
	if (bad) {
		fprintf(stderr, "torusrun: timekeeper: core %u of node %u: a deferred wait %s\n", k->core, k->node, bad);
		return -EPROTO;
	}
	/* as the question (the barrier is counted by round_once, as one asked) */
	static const uint32_t as[] = {EMU_TKQ_CTR_WAIT, EMU_TKQ_BARRIER, EMU_TKQ_PKT, EMU_TKQ_PROGRAM};
	k->qtype = as[ev->kind];
	k->qn = ev->kind == 1 || ev->kind == 3 ? (uint32_t)ev->len : 1;
	k->pkt_src = ev->rec;
	k->pkt_name = ev->id;
	k->pkt_index = ev->len;
	k->qids[0] = ev->rec;
	k->qvt = ev->ready;
	k->qdeadline = TIMESIM_NEVER;
	k->qkey = ev->kind == 1 ? ev->id : 0;
	k->blocked = 0;
	k->arrived_bar = 0;
	k->zero_at = TIMESIM_NEVER;
	k->waiting = 1;
	k->defer_wait = 1;
	return 0;
}

/* Take what core k has said since the last look; 1 if anything. */
int tk_look(struct emu_tk *tk, struct tk_core *k, int *err)
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
	if (head - tail > EMU_TK_SLOTS) {
		/* more events than the ring holds: a damaged index, which would
		 * replay the ring for up to 2^32 events in one round */
		fprintf(stderr, "torusrun: timekeeper: core %u of node %u: its event ring's indices are damaged (%u events)\n",
			k->core, k->node, head - tail);
		*err = -EPROTO;
		return 1;
	}
	while (tail != head && !k->defer_wait) {
		const struct emu_tk_ev *pe = &sh->ev[tail % EMU_TK_SLOTS];
		if (k->fill || pe->type == EMU_TK_STEP) {
			/* a program's step, or one of its events */
			int rc = step_take(tk, k, pe);
			if (rc) {
				*err = rc;
				return 1;
			}
			tail++;
			moved = 1;
			continue;
		}
		/* a copy (the core may not change it, but it is shared memory):
		 * timed from its last deferred wait's answer if it says so */
		struct emu_tk_ev e = *pe;
		if (e.pad_ & EMU_TK_EV_REL)
			e.ready = add_sat(e.ready, k->base);
		/* (a refusal has no time: the descriptor after it has) */
		if (e.type != EMU_TK_REFUSE && e.ready < k->answered_at) {
			before_answer(k, "posted an event", e.ready);
			*err = -EPROTO;
			return 1;
		}
		if (e.type != EMU_TK_REFUSE && e.ready > k->clock)
			k->clock = e.ready; /* it runs at least this far (its offsets tell no clock) */
		int rc = e.type == EMU_TK_WAITED ? waited(tk, k, &e) : tk_post(tk, k, &e);
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
	if (q != k->qseen && !k->defer_wait && tail == head) {
		/* (a question comes after the events before it: behind a
		 * deferred wait not answered yet, it waits for a later look)
		 * a core asks only once its last question is answered
		 * (emu_core_tk_answer waits for it, and nothing is asked while
		 * its program runs): another question would be answered in the
		 * state of the first (fuzz-tkevents: a program's wait answered
		 * with a pair past the program's streams) */
		if (k->waiting || k->prog || sh->qtype < EMU_TKQ_RECV || sh->qtype > EMU_TKQ_PKT) {
			fprintf(stderr, "torusrun: timekeeper: core %u of node %u asked question %u (type %u) %s\n", k->core,
				k->node, q, sh->qtype, k->waiting || k->prog ? "before its last was answered" : "of no known type");
			*err = -EPROTO;
			return 1;
		}
		if (k->pst && !k->prog && sh->qtype != EMU_TKQ_PROGRAM)
			prog_clear(k); /* steps told for a program the core gave up: gone */
		k->qseen = q;
		k->qtype = sh->qtype;
		k->qvt = sh->qtype == EMU_TKQ_SYNC ? add_sat(sh->qvt, k->base) : sh->qvt;
		if (k->qvt < k->answered_at) {
			before_answer(k, "asked a question", k->qvt);
			*err = -EPROTO;
			return 1;
		}
		k->qdeadline = sh->qdeadline;
		k->qkey = sh->qkey;
		/* a barrier's member count, or the number of counter ids */
		k->qn = sh->qn;
		if (k->qtype == EMU_TKQ_CTR || k->qtype == EMU_TKQ_CTR_WAIT || k->qtype == EMU_TKQ_MARK ||
		    k->qtype == EMU_TKQ_MARK_WAIT || k->qtype == EMU_TKQ_CTR_OR_RECV) {
			if (k->qn > EMU_TKQ_MAX_IDS || k->qn == 0) {
				*err = -EPROTO;
				return 1;
			}
			memcpy(k->qids, sh->qids, k->qn * sizeof(uint32_t));
			uint32_t lim = counters_of(tk, k);
			for (uint32_t i = 0; i < k->qn; i++)
				if (k->qids[i] >= lim) {
					*err = -EPROTO;
					return 1;
				}
			if (k->qtype == EMU_TKQ_MARK || k->qtype == EMU_TKQ_MARK_WAIT)
				memcpy(k->qmarks, sh->qmarks, k->qn * sizeof(uint32_t));
		}
		if (k->qtype == EMU_TKQ_PKT) {
			k->pkt_src = sh->qids[0];
			k->pkt_index = sh->qids[1];
			k->pkt_name = sh->qkey;
			if (!(k->pkt_name & EMU_TK_MSG_ANY)) {
				*err = -EPROTO;
				return 1;
			}
		}
		if (k->qtype == EMU_TKQ_PROGRAM && (k->qn == 0 || k->qn > EMU_TK_PLANS || k->fill)) {
			*err = plan_refused(k, "(a program) is malformed");
			return 1;
		}
		if (((k->qtype == EMU_TKQ_RECV || k->qtype == EMU_TKQ_WAIT_RECV || k->qtype == EMU_TKQ_CTR_OR_RECV) &&
		     k->qkey >= EMU_TK_NQ) ||
			   (k->qtype == EMU_TKQ_PENDING && k->qkey >= tk->m->hdr->params.inj_fifos)) {
			*err = -EPROTO;
			return 1;
		}
		if (k->qtype == EMU_TKQ_PACE && k->qvt > k->clock)
			k->clock = k->qvt; /* it posts next, at its clock */
		k->blocked = 0;
		k->arrived_bar = 0;
		k->zero_at = TIMESIM_NEVER;
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

/* Core k waits until the simulation reaches its qdeadline (EMU_TKQ_PACE). */
static void pace_push(struct emu_tk *tk, struct tk_core *k)
{
	uint32_t i = tk->npace++, g = (uint32_t)(k - tk->c);
	while (i && tk->c[tk->pace[(i - 1) / 2]].qdeadline > k->qdeadline) {
		tk->pace[i] = tk->pace[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	tk->pace[i] = g;
	k->in_pace = 1;
}

/* Answer core k's query if it can be answered now: 1 if it was, 2 if it
 * changed (a counter wait that blocks), 0 if not. */
int tk_try_answer(struct emu_tk *tk, struct tk_core *k)
{
	torus_vt_t now = timesim_now(tk->ts);
	if (!k->waiting)
		return 0;
	switch (k->qtype) {
	case EMU_TKQ_SYNC: /* its clock, once its deferred waits are answered (look) */
		tk_answer(tk, k, 1, k->qvt);
		return 1;
	case EMU_TKQ_PKT: /* at the packet's arrival (arrive_any), if it has not come yet */
		return tk_pkt_answer(tk, k);
	case EMU_TKQ_RECV:
		/* its ring holds every arrival up to qvt once all before it is final */
		if (k->qvt >= now && tk_first_arrival(k, (uint32_t)k->qkey) > k->qvt)
			return 0;
		tk_answer(tk, k, 1, k->qvt);
		return 1;
	case EMU_TKQ_WAIT_RECV: {
		torus_vt_t t = tk_first_arrival(k, (uint32_t)k->qkey);
		/* (one past the deadline is a timeout: the core's clock moves
		 * to the deadline, and so must its bound) */
		if (t != TIMESIM_NEVER && t <= k->qdeadline) {
			/* an arrival it has not taken: it resumes at it, or now */
			tk_answer(tk, k, 1, t > k->qvt ? t : k->qvt);
			return 1;
		}
		if (k->qdeadline != TIMESIM_NEVER && k->qdeadline < now) {
			tk_answer(tk, k, 0, k->qdeadline);
			return 1;
		}
		return 0;
	}
	case EMU_TKQ_CTR: {
		if (k->qvt >= now)
			return 0;
		const struct tk_ctr *c = &tk->ctr[k->node][k->qids[0]];
		int64_t v = tk_value_at(c, k->qvt);
		k->a.value = v;
		k->a.hits = c->hits;
		tk_answer(tk, k, v == 0, k->qvt);
		return 1;
	}
	case EMU_TKQ_CTR_OR_RECV:
		if (k->blocked) {
			/* nothing arrived up to now, and a counter reaches zero by
			 * then, or none */
			if (k->zero_at < now && k->zero_at <= k->qdeadline) {
				k->a.which = k->zero_which;
				tk_answer(tk, k, 1, k->zero_at);
				return 1;
			}
			if (k->qdeadline >= now)
				return 0;
			tk_answer(tk, k, 0, k->qdeadline);
			return 1;
		}
		/* fall through */
	case EMU_TKQ_CTR_WAIT: {
		if (k->blocked && k->zero_at < now) {
			k->a.which = k->zero_which;
			tk_answer(tk, k, 1, k->zero_at);
			return 1;
		}
		if (k->blocked || k->qvt >= now)
			return 0;
		/* zero at qvt, or the first of them to reach zero after it */
		torus_vt_t best = TIMESIM_NEVER;
		uint32_t which = 0;
		for (uint32_t i = 0; i < k->qn; i++) {
			const struct tk_ctr *c = &tk->ctr[k->node][k->qids[i]];
			torus_vt_t t = tk_value_at(c, k->qvt) == 0 ? k->qvt : tk_zero_after(c, k->qvt);
			if (t < best) {
				best = t;
				which = i;
			}
		}
		if (k->qtype == EMU_TKQ_CTR_OR_RECV) {
			/* an arrival not taken, final as every arrival up to now is */
			torus_vt_t a = tk_first_arrival(k, (uint32_t)k->qkey);
			if (a != TIMESIM_NEVER && (a > k->qvt ? a : k->qvt) < best) {
				best = a > k->qvt ? a : k->qvt;
				which = k->qn;
			}
			if (best > k->qdeadline && k->qdeadline < now) {
				tk_answer(tk, k, 0, k->qdeadline);
				return 1;
			}
		}
		if (best != TIMESIM_NEVER && best < now) {
			k->a.which = which;
			tk_answer(tk, k, 1, best);
			return 1;
		}
		/* none has been zero since qvt, or one is, ahead of the
		 * simulation (a packet leaving): the first one to reach zero
		 * answers */
		k->blocked = 1;
		if (best != TIMESIM_NEVER)
			tk_defer(tk, k, best, which, 0);
		tk_rebound(tk, k);
		return 2;
	}
	case EMU_TKQ_PENDING:
		if (k->qvt >= now)
			return 0;
		k->a.value = tk_fifo_pending(tk, &k->fifo[k->qkey], k->qvt);
		tk_answer(tk, k, 1, k->qvt);
		return 1;
	case EMU_TKQ_MARK:
	case EMU_TKQ_MARK_WAIT: {
		if (k->blocked && k->zero_at < now) {
			k->a.which = k->zero_which;
			k->a.t = k->zero_xt;
			tk_answer(tk, k, 1, k->zero_at);
			return 1;
		}
		if (k->blocked || k->qvt >= now)
			return 0;
		uint32_t which = 0;
		torus_vt_t t = 0;
		if (tk_first_mark(tk, k, k->qvt, &which, &t)) {
			k->a.which = which;
			k->a.t = t;
			tk_answer(tk, k, 1, k->qvt);
			return 1;
		}
		if (k->qtype == EMU_TKQ_MARK) {
			tk_answer(tk, k, 0, k->qvt);
			return 1;
		}
		/* crossed since qvt, up to now (which can be a lookahead past
		 * it): the first of those answers, at its crossing */
		if (tk_first_mark(tk, k, TIMESIM_NEVER, &which, &t) && t < now) {
			k->a.which = which;
			k->a.t = t;
			tk_answer(tk, k, 1, t);
			return 1;
		}
		/* none crossed yet, or one ahead of the simulation: the first
		 * crossing answers (marks_crossed) */
		k->blocked = 1;
		if (tk_first_mark(tk, k, TIMESIM_NEVER, &which, &t))
			tk_defer(tk, k, t > k->qvt ? t : k->qvt, which, t);
		tk_rebound(tk, k);
		return 2;
	}
	case EMU_TKQ_PROGRAM: {
		if (k->prog)
			return 0;
		/* it starts at its clock: the timekeeper runs it from here */
		k->prog = 1;
		/* no step told at all (nothing allocated): streams with no
		 * steps, which end at once (fuzz-tkevents found a null
		 * dereference here) */
		k->nprog = k->pst ? k->qn : 0;
		if (k->qvt > k->clock)
			k->clock = k->qvt;
		int rc = prog_next(tk, k);
		if (rc) {
			tk->prog_err = rc;
			timesim_stop(tk->ts);
		}
		return 2;
	}
	case EMU_TKQ_PACE:
		/* the heap answers it once it is there (pace_answer) */
		if (k->in_pace)
			return 0;
		if (k->qdeadline <= now) {
			tk_answer(tk, k, 1, k->qvt);
			return 1;
		}
		pace_push(tk, k);
		return 0;
	default:
		return 0; /* a barrier: answered when its last member arrives */
	}
}

/* Publish core k's answer (a program's own wait: take the step it
 * answers, and run the program on). */
static int publish(struct emu_tk *tk, struct tk_core *k)
{
	struct emu_tk_core *sh = k->sh;
	if (k->prog && !k->prog_done) {
		/* the wait of its program: the stream whose mark came */
		if (!k->afound || k->a.which >= k->qn || k->a.which >= EMU_TK_PLANS || k->qtype != EMU_TKQ_MARK_WAIT)
			return plan_refused(k, "(a program) lost its way");
		int rc = step_apply(tk, k, k->porder[k->a.which], k->avt);
		return rc ? rc : prog_next(tk, k);
	}
	if (k->prog) {
		/* its end: the next program starts afresh */
		k->prog = k->prog_done = 0;
		prog_clear(k);
	}
	tk_refill_all(k);
	sh->afound = k->afound;
	sh->avt = k->avt;
	sh->a_value = k->a.value;
	sh->a_hits = k->a.hits;
	sh->a_which = k->a.which;
	sh->a_t = k->a.t;
	/* pairs with the core's acquire load of aseq */
	atomic_store_explicit(&sh->aseq, k->qseen, memory_order_release);
	emu_bell_ring(&k->cs->bell);
	return 0;
}

/* Publish the answers found (after the simulator's run: a program's step
 * posts). */
int tk_flush(struct emu_tk *tk)
{
	for (uint32_t i = 0; i < tk->npub; i++) {
		struct tk_core *k = &tk->c[tk->pubq[i]];
		k->pub = 0;
		int rc = publish(tk, k);
		if (rc)
			return rc;
	}
	tk->npub = 0;
	return tk->prog_err;
}

/* The cores the simulation has paced past: they may post again. */
int tk_pace_answer(struct emu_tk *tk, torus_vt_t now)
{
	int moved = 0;
	while (tk->npace && tk->c[tk->pace[0]].qdeadline <= now) {
		struct tk_core *k = &tk->c[tk->pace[0]];
		uint32_t x = tk->pace[--tk->npace], i = 0, n = tk->npace;
		for (;;) {
			uint32_t c = 2 * i + 1;
			if (c >= n)
				break;
			if (c + 1 < n && tk->c[tk->pace[c + 1]].qdeadline < tk->c[tk->pace[c]].qdeadline)
				c++;
			if (tk->c[tk->pace[c]].qdeadline >= tk->c[x].qdeadline)
				break;
			tk->pace[i] = tk->pace[c];
			i = c;
		}
		if (n)
			tk->pace[i] = x;
		k->in_pace = 0;
		tk_answer(tk, k, 1, k->qvt);
		tk->paced++;
		moved = 1;
	}
	return moved;
}

/* Core k arrived at a barrier (its query): when it is the last, every
 * member leaves at the latest arrival plus the barrier latency. */
int tk_barrier_arrive(struct emu_tk *tk, struct tk_core *k)
{
	struct tk_barrier *b = NULL;
	for (size_t i = 0; i < tk->nbar && !b; i++)
		if (tk->bar[i].key == k->qkey)
			b = &tk->bar[i];
	if (!b) {
		struct tk_barrier *nb = grow(tk->bar, &tk->capbar, tk->nbar, sizeof(*nb), 8);
		if (!nb)
			return -ENOMEM;
		tk->bar = nb;
		b = &tk->bar[tk->nbar++];
		*b = (struct tk_barrier){k->qkey, k->qn, 0, 0, calloc(k->qn ? k->qn : 1, sizeof(uint32_t))};
		if (!b->members) {
			tk->nbar--;
			return -ENOMEM;
		}
	}
	if (b->n != k->qn || b->arrived >= b->n || b->n > tk->ncores)
		return -EPROTO; /* members disagree on the team, or it cannot be */
	b->members[b->arrived++] = (uint32_t)(k - tk->c);
	if (k->qvt > b->max)
		b->max = k->qvt;
	if (b->arrived < b->n)
		return 0;
	torus_vt_t t = b->max + tk->m->hdr->params.barrier_latency_ps;
	for (uint32_t i = 0; i < b->n; i++)
		tk_answer(tk, &tk->c[b->members[i]], 1, t);
	free(b->members);
	*b = tk->bar[--tk->nbar];
	return 0;
}
