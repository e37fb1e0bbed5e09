/*
 * The core side of the timekeeper (time/timekeeper.c), which decides what a
 * core observes and when: a core tells it what it sends (events, at its
 * clock) and asks it what has arrived by its clock (queries). The bytes
 * still travel through the engines; a packet the timekeeper names is taken
 * from the reception FIFO when it is there, and packets that came earlier
 * in wall clock wait in the core's stash. Every wait drains the FIFO into
 * the stash (emu_core_block does, before each look at what it waits for),
 * so no engine is ever held up by a core that waits.
 */
#include "../emu/node.h"
#include "../emu/unit.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Drain what the core receives into its stashes (raw, and the unit's). */
int emu_core_tk_drain(emu_core_t *c)
{
	int r = emu_stash_drain(c->node, &c->stash, &c->rx);
	if (r >= 0 && emu_node_unit.core_drain)
		r = emu_node_unit.core_drain(c);
	return r;
}

struct tk_wait {
	emu_core_t *c;
	uint32_t q;
};

static int tk_answered(void *arg)
{
	struct tk_wait *w = arg;
	/* pairs with the timekeeper's release store in answer() */
	return atomic_load_explicit(&w->c->tk->aseq, memory_order_acquire) == w->q;
}

/* Ask the timekeeper (the query's other fields are filled in): returns
 * the query's number for emu_core_tk_answer. */
/* A core whose program does not match what it does. */
static int prog_broken(emu_core_t *c, const char *what)
{
	fprintf(stderr,
		"torusrun: core %u of node %u did not make the step its program told (emu_core_program_start): %s, "
		"stream %u, step %zu\n",
		c->index, c->node->rank, what, c->prog_s, c->prog_st[c->prog_s % EMU_TK_PLANS].next);
	return -EPROTO;
}

/* No program's steps told, none being made. */
static void prog_clear(emu_core_t *c)
{
	for (uint32_t k = 0; k < EMU_TK_PLANS; k++)
		c->prog_st[k].n = c->prog_st[k].next = 0;
	c->prog_nev = 0;
	c->prog_events = 0;
	c->prog_cur = NULL;
}

uint32_t emu_core_tk_ask(emu_core_t *c, uint32_t type, torus_vt_t deadline)
{
	struct emu_tk_core *t = c->tk;
	if (c->rel && type != EMU_TKQ_SYNC) {
		/* a question at an absolute time: the clock first (the deadline
		 * was worked out from the offset) */
		torus_vt_t left = deadline == UINT64_MAX ? UINT64_MAX : deadline > c->vt ? deadline - c->vt : 0;
		if (emu_core_sync(c))
			return 0;
		if (deadline)
			deadline = left == UINT64_MAX ? UINT64_MAX : c->vt + left;
	}
	if (c->plan_rec) {
		c->plan_ok = 0; /* a step being recorded cannot ask: emu_core_tk_answer refuses */
		return 0;
	}
	if (c->program) {
		fprintf(stderr, "torusrun: core %u of node %u asked the timekeeper while its program ran "
				"(emu_core_program_start)\n", c->index, c->node->rank);
		return 0;
	}
	if (type != EMU_TKQ_PROGRAM && c->prog_events)
		prog_clear(c); /* steps told for a program it gave up: the timekeeper drops them here too */
	t->qtype = type;
	t->qvt = c->vt;
	t->qdeadline = deadline;
	uint32_t q = ++c->tk_q;
	atomic_store_explicit(&t->qseq, q, memory_order_release);
	emu_core_tk_poke(c);
	return q;
}

/* Sleep until the timekeeper answers query q (in the fields a_*). */
int emu_core_tk_answer(emu_core_t *c, uint32_t q)
{
	if (c->plan_rec)
		return -EAGAIN; /* recording a step: it cannot wait */
	if (!q)
		return -EPROTO; /* asked while its program ran (emu_core_tk_ask said so) */
	struct tk_wait w = {c, q};
	struct emu_wait ew = {tk_answered, NULL, NULL, &w};
	int r = emu_core_block(c, &ew, -1);
	if (r <= 0)
		return r < 0 ? r : -ETIMEDOUT;
	return 0;
}

static int tk_ask(emu_core_t *c, uint32_t type, torus_vt_t deadline)
{
	return emu_core_tk_answer(c, emu_core_tk_ask(c, type, deadline));
}

static int tk_room(void *arg)
{
	emu_core_t *c = arg;
	return atomic_load_explicit(&c->tk->head, memory_order_relaxed) -
		       atomic_load_explicit(&c->tk->tail, memory_order_acquire) < EMU_TK_SLOTS;
}

/*
 * a core whose clock runs more than exact_lead ahead of the
 * simulation waits for it before it posts more. The cores the simulation
 * waits for then have the host to themselves, and what the engines carry
 * ahead of the simulation (the stashes) is bounded. Nothing virtual
 * changes: the wait takes no emulated time. Called before a post moves
 * the clock (its bound while it waits is the clock plus inj_overhead).
 */
int emu_core_tk_pace(emu_core_t *c)
{
	uint64_t lead = c->node->params->exact_lead_ps;
	if (!lead || c->vt <= lead)
		return 0;
	torus_vt_t at = c->vt - lead;
	if (atomic_load_explicit(&c->node->hdr->tk_now, memory_order_acquire) >= at)
		return 0;
	return tk_ask(c, EMU_TKQ_PACE, at);
}

/* Into the event ring, waiting (asleep) for room; the caller pokes. */
static int ring_put(emu_core_t *c, const struct emu_tk_ev *ev)
{
	struct emu_tk_core *t = c->tk;
	uint32_t head = atomic_load_explicit(&t->head, memory_order_relaxed);
	if (head - atomic_load_explicit(&t->tail, memory_order_acquire) >= EMU_TK_SLOTS) {
		emu_core_tk_poke(c);
		struct emu_wait ew = {tk_room, NULL, NULL, c};
		int r = emu_core_block(c, &ew, -1);
		if (r <= 0)
			return r < 0 ? r : -ETIMEDOUT;
	}
	t->ev[head % EMU_TK_SLOTS] = *ev;
	/* pairs with the timekeeper's acquire load of head */
	atomic_store_explicit(&t->head, head + 1, memory_order_release);
	return 0;
}

/* A step being recorded: the event written down (one that does not fit,
 * or a promise, spoils it). */
static void record(emu_core_t *c, struct emu_tk_ev *evs, uint32_t *n, uint32_t max, const struct emu_tk_ev *ev)
{
	if (ev->type == EMU_TK_EXPECT || *n == max)
		c->plan_ok = 0;
	else
		evs[(*n)++] = *ev;
}

/* Is ev the event told before, at the same offset from base? */
static int same_event(const struct emu_tk_ev *told, torus_vt_t base, const struct emu_tk_ev *ev)
{
	struct emu_tk_ev want = *told;
	if (want.type != EMU_TK_REFUSE) /* (a refusal has no time) */
		want.ready += base;
	return !memcmp(&want, ev, sizeof(want));
}

/* Tell the timekeeper about something sent. */
int emu_core_tk_event(emu_core_t *c, const struct emu_tk_ev *ev)
{
	if (emu_core_promised(c) && ev->type != EMU_TK_EXPECT)
		return -EBUSY; /* emu_core_expect: it promised not to */
	if (c->plan_rec) {
		/* a step of a program: after the steps told before it */
		if (c->prog_nev + c->step_nev == c->prog_cap) {
			size_t nc = c->prog_cap ? 2 * c->prog_cap : 1024;
			void *p = realloc(c->prog_ev, nc * sizeof(*c->prog_ev));
			if (!p)
				return -ENOMEM;
			c->prog_ev = p;
			c->prog_cap = nc;
		}
		record(c, c->prog_ev + c->prog_nev, &c->step_nev, EMU_TK_STEP_EVS, ev);
		return 0;
	}
	if (c->program) {
		/* the timekeeper has it from the program */
		if (!c->prog_cur || c->prog_pos == c->prog_cur_n)
			return prog_broken(c, "it posted more than the step said");
		if (!same_event(&c->prog_cur[c->prog_pos], c->prog_base, ev))
			return prog_broken(c, "a post or counter change differs from the step's");
		c->prog_pos++;
		c->prog_told++;
		return 0;
	}
	int rc;
	if (c->rel) {
		/* timed from the last deferred wait's answer */
		struct emu_tk_ev e = *ev;
		e.pad_ |= EMU_TK_EV_REL;
		rc = ring_put(c, &e);
	} else {
		rc = ring_put(c, ev);
	}
	/* posts and waits deferred on a counter or a packet change nothing the
	 * timekeeper can act on before this core's bound moves; a counter
	 * change or a barrier can answer another core's question */
	if (!rc && (ev->type == EMU_TK_DMA || ev->type == EMU_TK_RAW || (ev->type == EMU_TK_WAITED && ev->kind != 1)))
		emu_core_tk_nudge(c);
	else if (!rc)
		emu_core_tk_poke(c);
	return rc;
}

static int env_switch(_Atomic int *cache, const char *name);
static _Atomic int defer_off = -2;

/* May the core's next wait be deferred: 1, 0, or -EINVAL (a bad
 * TORUS_DEFER)? A program's end may be, with its steps told. */
static int may_defer(const emu_core_t *c)
{
	if (!c->tk || !c->defer)
		return 0;
	int off = env_switch(&defer_off, "TORUS_DEFER"); /* 0: every wait a question */
	if (off)
		return off < 0 ? off : 0;
	return !c->plan_rec && !emu_core_promised(c);
}

int emu_core_can_defer(const emu_core_t *c)
{
	int d = may_defer(c);
	return d > 0 ? !c->program && !c->prog_events : d;
}

/* The core's clock becomes an offset from the end of the wait it just
 * deferred. */
static void run_on(emu_core_t *c)
{
	c->rel = 1;
	c->vt = 0;
	emu_core_publish(c);
}

static int defer(emu_core_t *c, const struct emu_tk_ev *ev)
{
	int rc = emu_core_tk_event(c, ev);
	if (!rc)
		run_on(c);
	return rc;
}

int emu_core_defer_wait(emu_core_t *c, uint32_t counter)
{
	struct emu_tk_ev ev = {.type = EMU_TK_WAITED, .rec = counter, .ready = c->vt};
	return defer(c, &ev);
}

int emu_core_defer_barrier(emu_core_t *c, uint64_t key, uint32_t n)
{
	struct emu_tk_ev ev = {.type = EMU_TK_WAITED, .kind = 1, .id = key, .len = n, .ready = c->vt};
	return defer(c, &ev);
}

int emu_core_wait_packet(emu_core_t *c, uint32_t src, uint64_t name, uint32_t index)
{
	if (!(name & EMU_TK_MSG_ANY))
		return -EINVAL;
	int d = emu_core_can_defer(c);
	if (d < 0)
		return d;
	if (d) {
		struct emu_tk_ev ev = {.type = EMU_TK_WAITED, .kind = 2, .rec = src, .id = name, .len = index,
				       .ready = c->vt};
		return defer(c, &ev);
	}
	c->tk->qkey = name;
	c->tk->qids[0] = src;
	c->tk->qids[1] = index;
	int rc = tk_ask(c, EMU_TKQ_PKT, 0);
	if (rc)
		return rc;
	if (c->tk->avt > c->vt)
		c->vt = c->tk->avt;
	emu_core_publish(c);
	return 0;
}

int emu_core_sync(emu_core_t *c)
{
	if (!c->rel)
		return 0;
	int rc = tk_ask(c, EMU_TKQ_SYNC, 0);
	if (rc)
		return rc;
	c->rel = 0;
	c->vt = c->tk->avt;
	emu_core_publish(c);
	return 0;
}

_Static_assert(EMU_TK_PLANS == EMU_PROGRAM_STREAMS, "one limit");

/* A switch in the environment, read once into *cache (-2: not yet): 1 if
 * NAME is 0 (off), 0 if it is 1, empty or unset, -EINVAL for anything else
 * (every core of the job alike: the same environment). */
static int env_switch(_Atomic int *cache, const char *name)
{
	int off = atomic_load_explicit(cache, memory_order_relaxed);
	if (off == -2) {
		const char *e = getenv(name);
		off = !e || !*e || !strcmp(e, "1") ? 0 : !strcmp(e, "0") ? 1 : -EINVAL;
		if (off < 0 && atomic_exchange_explicit(cache, off, memory_order_relaxed) == -2)
			fprintf(stderr, "torus: %s must be 0 or 1, not '%s'\n", name, e);
		atomic_store_explicit(cache, off, memory_order_relaxed);
	}
	return off;
}

int emu_core_step_begin(emu_core_t *c)
{
	if (!c)
		return -EINVAL;
	static _Atomic int program_off = -2;
	int off = env_switch(&program_off, "TORUS_PROGRAM");
	if (off)
		return off < 0 ? off : -EOPNOTSUPP;
	if (!c->tk || c->node->params->exact_lead_ps)
		return -EOPNOTSUPP; /* (a paced post asks the timekeeper) */
	if (c->plan_rec || c->program || emu_core_promised(c))
		return -EBUSY;
	/* the step's times are offsets from its start (the clock from 0
	 * meanwhile), so a relative clock needs no answer first */
	c->plan_rec = 1;
	c->plan_ok = 1;
	c->plan_vt = c->vt;
	c->vt = 0;
	c->step_nev = 0;
	return 0;
}

int emu_core_step_end(emu_core_t *c, uint32_t stream, uint32_t id, int64_t mark, int keep)
{
	if (!c || !c->plan_rec)
		return -EINVAL;
	torus_vt_t end = c->vt;
	int ok = keep && c->plan_ok;
	c->vt = c->plan_vt;
	c->plan_rec = 0;
	if (!ok)
		return -EAGAIN;
	if (stream >= EMU_PROGRAM_STREAMS || mark < -1)
		return -EINVAL;
	/* its events stay in prog_ev, to check the step when it is made */
	if (c->prog_st[stream].n == c->prog_st[stream].cap) {
		size_t nc = c->prog_st[stream].cap ? 2 * c->prog_st[stream].cap : 64;
		void *p = realloc(c->prog_st[stream].step, nc * sizeof(*c->prog_st[stream].step));
		if (!p)
			return -ENOMEM;
		c->prog_st[stream].step = p;
		c->prog_st[stream].cap = nc;
	}
	c->prog_st[stream].step[c->prog_st[stream].n].first = c->prog_nev;
	c->prog_st[stream].step[c->prog_st[stream].n++].nev = c->step_nev;
	struct emu_tk_ev h = {.type = EMU_TK_STEP, .core = stream, .rec = id,
			      .id = mark < 0 ? UINT64_MAX : (uint64_t)mark, .len = c->step_nev, .ready = end};
	/* into the ring unpoked: the timekeeper has nothing to do with a
	 * program's steps before emu_core_program_start asks it to run them */
	int rc = ring_put(c, &h);
	for (uint32_t i = 0; !rc && i < c->step_nev; i++)
		rc = ring_put(c, &c->prog_ev[c->prog_nev + i]);
	c->prog_nev += c->step_nev;
	c->prog_events += c->step_nev;
	return rc;
}

int emu_core_program_start(emu_core_t *c, uint32_t nstreams)
{
	if (!c || !nstreams || nstreams > EMU_PROGRAM_STREAMS)
		return -EINVAL;
	if (!c->tk)
		return -EOPNOTSUPP;
	if (c->plan_rec || c->program)
		return -EBUSY;
	int d = may_defer(c);
	if (d < 0)
		return d;
	c->prog_defer = d;
	if (d) {
		/* its end changes nothing but the clock: the core runs on,
		 * its clock an offset from the end the timekeeper will find */
		struct emu_tk_ev ev = {.type = EMU_TK_WAITED, .kind = 3, .len = nstreams, .ready = c->vt};
		int rc = emu_core_tk_event(c, &ev);
		if (rc)
			return rc;
		c->prog_q = 0;
	} else {
		c->tk->qn = nstreams;
		c->prog_q = emu_core_tk_ask(c, EMU_TKQ_PROGRAM, 0);
	}
	c->program = 1;
	c->prog_told = 0;
	c->prog_cur = NULL;
	return 0;
}

int emu_core_program_step(emu_core_t *c, uint32_t stream)
{
	if (!c || !c->program || stream >= EMU_TK_PLANS)
		return -EINVAL;
	if (c->prog_cur && c->prog_pos != c->prog_cur_n)
		return prog_broken(c, "it began a step before it finished the last one");
	c->prog_s = stream;
	if (c->prog_st[stream].next == c->prog_st[stream].n)
		return prog_broken(c, "the stream has no step left");
	size_t i = c->prog_st[stream].next++;
	c->prog_cur = c->prog_ev + c->prog_st[stream].step[i].first;
	c->prog_cur_n = c->prog_st[stream].step[i].nev;
	c->prog_pos = 0;
	c->prog_base = c->vt;
	return 0;
}

int emu_core_program_finish(emu_core_t *c)
{
	if (!c || !c->program)
		return -EINVAL;
	uint64_t told = c->prog_told, declared = c->prog_events;
	int left = c->prog_cur && c->prog_pos != c->prog_cur_n;
	for (uint32_t k = 0; k < EMU_TK_PLANS; k++)
		left |= c->prog_st[k].next != c->prog_st[k].n;
	c->program = 0;
	prog_clear(c);
	if (c->prog_defer) {
		c->prog_defer = 0;
		if (told == declared && !left) {
			run_on(c);
			return 0;
		}
	} else {
		int rc = emu_core_tk_answer(c, c->prog_q);
		if (rc)
			return rc;
	}
	if (told != declared || left) {
		fprintf(stderr,
			"torusrun: core %u of node %u made %llu posts and counter changes in its program, which "
			"told %llu, and %s (emu_core_program_start)\n",
			c->index, c->node->rank, (unsigned long long)told, (unsigned long long)declared,
			left ? "did not make every step" : "made every step");
		return -EPROTO;
	}
	c->vt = c->tk->avt; /* (its clock ran without the waits meanwhile) */
	emu_core_publish(c);
	return 0;
}


/*
 * the earliest arrival of queue q this core has not taken, from
 * the ring the timekeeper fills in arrival order: 1 and *a, or 0 if it has
 * none there now. Arrivals are final as they are published, so the head of
 * the ring is the earliest arrival there will ever be.
 */
int emu_core_tk_head(emu_core_t *c, uint32_t q, struct emu_tk_arr *a)
{
	struct emu_tk_aq *aq = &c->tk->aq[q];
	uint32_t tail = atomic_load_explicit(&aq->tail, memory_order_relaxed);
	/* pairs with the timekeeper's release store in refill() */
	if (atomic_load_explicit(&aq->head, memory_order_acquire) == tail)
		return 0;
	*a = aq->arr[tail % EMU_TK_ARR_SLOTS];
	return 1;
}

/* is the absence of an arrival in queue q up to the clock final? */
static int none_is_final(emu_core_t *c, uint32_t q)
{
	return atomic_load_explicit(&c->node->hdr->tk_now, memory_order_acquire) > c->vt &&
	       atomic_load_explicit(&c->tk->aq[q].over, memory_order_relaxed) == 0;
}

int emu_core_tk_next(emu_core_t *c, uint32_t q, struct emu_tk_arr *a)
{
	int rc = emu_core_sync(c);
	if (rc)
		return rc;
	for (;;) {
		if (emu_core_tk_head(c, q, a)) {
			if (a->t <= c->vt)
				return 1;
		} else if (!none_is_final(c, q)) {
			/* the timekeeper has not simulated up to our clock yet */
			c->tk->qkey = q;
			int r = tk_ask(c, EMU_TKQ_RECV, 0);
			if (r)
				return r;
			continue;
		}
		return 0;
	}
}

void emu_core_tk_take(emu_core_t *c, uint32_t q)
{
	if (q == EMU_TK_Q_MEMFIFO)
		c->mf_taken++;
	struct emu_tk_aq *aq = &c->tk->aq[q];
	/* pairs with the timekeeper's acquire load in refill() */
	atomic_store_explicit(&aq->tail, atomic_load_explicit(&aq->tail, memory_order_relaxed) + 1,
			      memory_order_release);
	if (atomic_load_explicit(&aq->over, memory_order_relaxed))
		emu_core_tk_poke(c); /* room for what waits there */
}

torus_vt_t emu_core_tk_deadline(const emu_core_t *c, int timeout_ms)
{
	return timeout_ms >= 0 ? c->vt + (torus_vt_t)timeout_ms * 1000000000ull : UINT64_MAX;
}

int emu_core_tk_wait_arrival(emu_core_t *c, uint32_t q, torus_vt_t deadline, struct emu_tk_arr *a)
{
	if (c->rel) {
		/* the deadline was worked out from the offset */
		torus_vt_t left = deadline == UINT64_MAX ? UINT64_MAX : deadline > c->vt ? deadline - c->vt : 0;
		int rc = emu_core_sync(c);
		if (rc)
			return rc;
		deadline = left == UINT64_MAX ? UINT64_MAX : c->vt + left;
	}
	int have = emu_core_tk_head(c, q, a);
	if (!have) {
		c->tk->qkey = q;
		int r = tk_ask(c, EMU_TKQ_WAIT_RECV, deadline);
		if (r)
			return r;
		have = emu_core_tk_head(c, q, a);
	}
	if (!have || a->t > deadline) {
		emu_core_idle(c, deadline);
		return 0;
	}
	if (a->t > c->vt)
		c->vt = a->t;
	emu_core_publish(c);
	return 1;
}
