/*
 * Fuzz target: the timekeeper's news from the cores (torusrun --exact).
 *
 * Under --exact every core writes what it does into shared memory: events
 * (packets, DMA descriptors, counter changes, refusals, promises, the steps
 * of a program) into its event ring, and its questions (the query fields)
 * beside it. The timekeeper, a thread of torusrun, reads them; a node
 * process is the user's program, so what it leaves there is outside input
 * to torusrun, however damaged.
 *
 * A three-node ring (torus "3", two cores per node) lives in this process:
 * the job's shared memory is created as torusrun creates it, and the
 * timekeeper is opened without its thread (emu_tk_open) and run round by
 * round (emu_tk_rounds). No core thread exists: the input writes the
 * cores' side by hand. It is a sequence of operations:
 *   - an event into a core's ring: the type one of the ten (a deferred
 *     wait, EMU_TK_WAITED, on a counter, a barrier or a packet sent in any
 *     order among them) or anything,
 *     timed absolutely or from the core's last deferred wait (EMU_TK_EV_REL),
 *     nodes, cores, FIFOs, counters and kinds mostly valid and sometimes
 *     not, lengths up to 4080 bytes, times and deltas from the input;
 *   - a question from a core: any of the query types or anything, any
 *     number of ids, counters valid or not, any key, time and deadline;
 *   - a core's clock moved, or the core finished (as at its return);
 *   - damage: a dirty bit of no core, or an event ring's head far past
 *     its tail;
 *   - rounds of the timekeeper.
 * At the end every core finishes, as at a job's end, and the timekeeper
 * runs until it moves nothing.
 *
 * Checked beyond "no crash, no sanitizer report": every run of rounds
 * ends with nothing left to do (no livelock within 100,000 rounds), or
 * with -EPROTO, -EINVAL or -ERANGE (news it refuses, cannot time, or
 * that comes before what it has simulated: said in a message) or -ENOMEM; after an error nothing more is read, as torusrun
 * stops the job.
 */
#include "emu_internal.h"
#include "fuzz_reader.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NODES 3u
#define CORES 2u
#define NCORES (NODES * CORES)
#define MAX_ROUNDS 100000u

static struct {
	int ready;
	struct emu_shm shm;
} m;

static void die(const char *what)
{
	fprintf(stderr, "fuzz-tkevents: %s\n", what);
	abort();
}

static void setup(void)
{
	struct torus_shape s;
	struct torus_params p;
	uint32_t cores[NODES] = {CORES, CORES, CORES};
	char err[256];
	int fd;

	if (torus_shape_parse("3", &s, err, sizeof(err)))
		die(err);
	torus_params_default(&p);
	if (emu_shm_create(&s, &p, cores, NULL, 1, &m.shm, &fd, err, sizeof(err)))
		die(err);
	m.ready = 1;
}


/* mostly below lim, now and then anything of `bytes` bytes */
static uint32_t pick(struct reader *r, uint32_t lim, unsigned bytes)
{
	uint32_t sel = (uint32_t)rd(r, 1);
	uint32_t v = (uint32_t)rd(r, bytes);
	return sel < 224 ? v % lim : v;
}

/* A fresh job: every core running at time 0, nothing in any ring. */
static void reset(void)
{
	struct emu_shm *sh = &m.shm;
	for (uint32_t g = 0; g < NCORES; g++)
		memset(emu_shm_tk(sh, g), 0, sizeof(struct emu_tk_core));
	for (uint32_t n = 0; n < NODES; n++) {
		struct emu_node_shm *ns = emu_shm_node(sh, n);
		for (uint32_t c = 0; c < CORES; c++)
			atomic_store(&emu_shm_core(sh, ns, c)->state, EMU_CORE_RUNNING);
	}
	_Atomic uint64_t *dirty = emu_shm_tk_dirty(sh);
	atomic_store(&dirty[0], 0);
	atomic_store(&sh->hdr->tk_now, 0);
	atomic_store(&sh->hdr->abort, 0);
}

static void poke(uint32_t g)
{
	atomic_fetch_or(&emu_shm_tk_dirty(&m.shm)[g / 64], 1ull << (g % 64));
}

static void decode_event(struct reader *r, struct emu_tk_ev *ev)
{
	memset(ev, 0, sizeof(*ev));
	/* one field per statement (docs/testing.md, "Fuzzing": the decoding order) */
	ev->type = 1 + pick(r, EMU_TK_WAITED, 1);
	ev->node = pick(r, NODES, 4);
	ev->core = pick(r, CORES, 4);
	ev->fifo = pick(r, m.shm.hdr->params.inj_fifos, 4);
	ev->kind = pick(r, 5, 4);
	ev->inj = pick(r, CORES * m.shm.hdr->params.dma_counters, 4);
	ev->rec = pick(r, CORES * m.shm.hdr->params.dma_counters, 4);
	ev->hints = (uint16_t)rd(r, 2);
	ev->len = 16u * rd(r, 1);
	ev->ready = 1000u * rd(r, 3);
	ev->id = rd(r, 2);
	ev->delta = (int64_t)(int16_t)rd(r, 2);
	/* a message sent in any order: named so in a memory-FIFO post's delta
	 * and a deferred packet wait's id */
	if (rd(r, 1) & 1) {
		ev->id |= EMU_TK_MSG_ANY;
		ev->delta = (int64_t)((uint64_t)ev->delta | EMU_TK_MSG_ANY);
	}
	ev->pad_ = (uint16_t)(rd(r, 1) & 3); /* EMU_TK_EV_REL, or a flag of no meaning */
}

static void event(struct reader *r)
{
	uint32_t g = (uint32_t)rd(r, 1) % NCORES;
	struct emu_tk_core *t = emu_shm_tk(&m.shm, g);
	uint32_t head = atomic_load(&t->head), tail = atomic_load(&t->tail);
	struct emu_tk_ev ev;
	decode_event(r, &ev);
	if (head - tail >= EMU_TK_SLOTS)
		return; /* a core waits for room; the input goes on */
	t->ev[head % EMU_TK_SLOTS] = ev;
	atomic_store_explicit(&t->head, head + 1, memory_order_release);
	poke(g);
}

static void question(struct reader *r)
{
	uint32_t g = (uint32_t)rd(r, 1) % NCORES;
	struct emu_tk_core *t = emu_shm_tk(&m.shm, g);
	t->qtype = 1 + pick(r, EMU_TKQ_PKT, 1);
	t->qn = pick(r, 8, 1);
	for (uint32_t i = 0; i < EMU_TKQ_MAX_IDS && i < t->qn; i++) {
		t->qids[i] = pick(r, CORES * m.shm.hdr->params.dma_counters, 2);
		t->qmarks[i] = (uint32_t)rd(r, 1);
	}
	t->qvt = 1000u * rd(r, 3);
	t->qdeadline = t->qvt + 1000u * rd(r, 2);
	t->qkey = rd(r, 1);
	if (t->qtype == EMU_TKQ_PKT && (rd(r, 1) & 1))
		t->qkey |= EMU_TK_MSG_ANY;
	atomic_store_explicit(&t->clock, t->qvt, memory_order_release);
	atomic_fetch_add_explicit(&t->qseq, 1, memory_order_release);
	poke(g);
}

/* What a stray write leaves: a dirty bit of no core, or an event ring's
 * head far past its tail. */
static void damage(struct reader *r)
{
	uint32_t sel = (uint32_t)rd(r, 1);
	uint32_t v = (uint32_t)rd(r, 4);
	if (sel & 1) {
		atomic_fetch_or(&emu_shm_tk_dirty(&m.shm)[0], 1ull << (v % 64));
	} else {
		struct emu_tk_core *t = emu_shm_tk(&m.shm, (sel >> 1) % NCORES);
		atomic_store(&t->head, atomic_load(&t->tail) + v);
		poke((sel >> 1) % NCORES);
	}
}

static void clock_or_done(struct reader *r)
{
	uint32_t sel = (uint32_t)rd(r, 1), g = sel % NCORES;
	uint64_t t = 1000u * rd(r, 3);
	struct emu_tk_core *k = emu_shm_tk(&m.shm, g);
	if (sel & 0x80) {
		struct emu_node_shm *ns = emu_shm_node(&m.shm, g / CORES);
		atomic_store(&emu_shm_core(&m.shm, ns, g % CORES)->state, EMU_CORE_DONE);
	} else if (t > atomic_load(&k->clock)) {
		atomic_store_explicit(&k->clock, t, memory_order_release);
	}
	poke(g);
}

/* 0 to go on, 1 once the timekeeper refused something (the job stops) */
static int rounds(struct emu_tk *tk)
{
	uint32_t n;
	int rc = emu_tk_rounds(tk, MAX_ROUNDS, &n);
	if (rc == -EBUSY)
		die("the timekeeper still moves after 100000 rounds");
	if (rc && rc != -EPROTO && rc != -EINVAL && rc != -ERANGE && rc != -ENOMEM) {
		fprintf(stderr, "fuzz-tkevents: the timekeeper failed with %d\n", rc);
		abort();
	}
	return rc != 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[256];
	struct emu_tk *tk;

	if (!m.ready)
		setup();
	reset();
	if (emu_tk_open(&m.shm, -1, &tk, err, sizeof(err)))
		die(err);
	struct reader r = {data, size};
	int stopped = 0;
	while (r.n && !stopped) {
		/* (an op byte of 0xf6 or 0xfe is an event too, once a declared
		 * step; 0xf5 damage: the corpus's inputs, from before these,
		 * decode as they did) */
		uint32_t op = (uint32_t)rd(&r, 1);
		switch (op == 0xf5 ? 9 : op >= 0xf0 && op % 8 == 6 ? 8 : op % 8) {
		case 0:
		case 1:
		case 2:
		case 3:
			event(&r);
			break;
		case 4:
			question(&r);
			break;
		case 5:
		case 6:
			clock_or_done(&r);
			break;
		case 8:
			event(&r);
			break;
		case 9:
			damage(&r);
			break;
		default:
			stopped = rounds(tk);
			break;
		}
	}
	if (!stopped) {
		/* the job's end: every core returns */
		for (uint32_t g = 0; g < NCORES; g++) {
			struct emu_node_shm *ns = emu_shm_node(&m.shm, g / CORES);
			atomic_store(&emu_shm_core(&m.shm, ns, g % CORES)->state, EMU_CORE_DONE);
			poke(g);
		}
		rounds(tk);
	}
	/* as torusrun does after a failure: the job is torn down */
	if (stopped)
		atomic_store(&m.shm.hdr->abort, 1);
	emu_tk_stop(tk);
	return 0;
}
