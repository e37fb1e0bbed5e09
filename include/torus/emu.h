/*
 * emu/ — the job runtime a torus program links against.
 *
 * A job is started by torusrun, once per emulated node (one OS process per
 * node). The program's main() calls emu_job_main(), which attaches to the
 * machine's shared memory, starts the node's engine thread (the router; the
 * DMA unit of dma/ runs on it too) and one thread per emulated core, and runs
 * `fn` on every core. It returns when the whole job has finished, so that
 * this node keeps forwarding other nodes' packets until the end.
 *
 * The raw packet interface below sends single packets (up to 240 payload
 * bytes) to any core of any node. A send costs the core inj_overhead of
 * virtual time; a full injection FIFO (a host matter: the model's buffers
 * are unbounded) makes it wait in wall-clock time only. emu_core_wait()
 * sleeps until a packet arrives. Virtual time: a core's clock advances to a
 * packet's arrival time when it receives it, and by emu_core_compute().
 */
#ifndef TORUS_EMU_H
#define TORUS_EMU_H

#include "torus/machine.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct emu_core emu_core_t;
typedef int (*emu_core_fn)(emu_core_t *core, void *arg);

/*
 * Run `fn` on every core of this node; returns the process exit status to
 * use: 0 if every core returned 0, else nonzero (after printing which core
 * failed). Returns 2 with a message if not started by torusrun.
 */
int emu_job_main(int argc, char **argv, emu_core_fn fn, void *arg);

/*
 * The other way in, for a program whose main() is the node's first core
 * (the MPI front end: a rank is a node): attach this process to its node,
 * start the engine and cores 1 .. n-1 on `others` (NULL: they finish at
 * once), and make the calling thread core 0: 0 and *core0, or a negative
 * errno with *status the exit status to use (a message printed; -EALREADY
 * if the process joined or ran emu_job_main before). emu_node_leave(core0,
 * status) ends core 0 with `status`, waits for the node's other cores and
 * for the whole job, as emu_job_main does, and returns the process's exit
 * status. Once per process.
 */
int emu_node_join(int argc, char **argv, emu_core_fn others, void *arg, emu_core_t **core0, int *status);
int emu_node_leave(emu_core_t *core0, int status);

/* Identity of the calling core. */
uint32_t emu_node_rank(const emu_core_t *c);
uint32_t emu_core_index(const emu_core_t *c);
uint32_t emu_node_count(const emu_core_t *c);
uint32_t emu_cores_of(const emu_core_t *c, uint32_t node); /* 0 for a bad node */
const struct torus_shape *emu_shape(const emu_core_t *c);
/* Rank of the calling core among all cores of the job (node-major). */
uint32_t emu_core_global(const emu_core_t *c);
uint32_t emu_core_total(const emu_core_t *c);
/* (node, core) of a global core rank; -EINVAL if out of range. */
int emu_core_locate(const emu_core_t *c, uint32_t global, uint32_t *node, uint32_t *core);
const struct torus_params *emu_params(const emu_core_t *c);
/* The host's memory available to new allocations (MemAvailable of
 * /proc/meminfo), in bytes; 0 if unknown. For programs that check what a
 * run needs before they allocate it. */
uint64_t emu_host_mem_available(void);
/* The calling thread's counter of the instructions it retires in user
 * space (the host's hardware counter, by perf_event_open; read(2) it as a
 * uint64_t): its file descriptor, or a negative errno and why in `why`
 * (most virtual machines have no such counter). For programs that charge
 * their work by instructions (torusrun --compute-cpi). */
int emu_instr_counter_open(char *why, size_t len);

/* Virtual clock of the calling core. */
torus_vt_t emu_core_now(const emu_core_t *c);
/* Model `ps` picoseconds of local work: advance the clock. */
int emu_core_compute(emu_core_t *c, torus_vt_t ps);
/*
 * Set the clock, even backwards: for software that multiplexes several
 * independent activities on one core (the streams of a multicolor
 * collective) and keeps the core's busy time itself, so that an activity
 * handled late in wall-clock order still acts at its own virtual time.
 * Such software must leave the clock at the end of all its activities.
 */
int emu_core_set_clock(emu_core_t *c, torus_vt_t t);
/* 1 in every job torusrun starts (all are timed exactly): everything the
 * core observes answers in virtual time, and its clock never goes back
 * (emu_core_set_clock refuses to, with -EINVAL). 0 only for a core of a
 * hand-driven test harness without a timekeeper. */
int emu_exact(const emu_core_t *c);

struct emu_pkt_info {
	uint32_t src_node;
	uint32_t src_core;
	uint32_t len;        /* payload bytes */
	uint16_t user;
	torus_vt_t arrival;  /* virtual time the packet was deposited */
};

/*
 * Send one packet of len <= 240 bytes to (node, core). hints: direction
 * hints (torus_hint_set), 0 for minimal routing. Returns 0, -EINVAL for bad
 * arguments, -ECANCELED if the job is being torn down (a full injection FIFO
 * is waited out, never -EAGAIN). The packet is ready at the core's clock
 * after the post's inj_overhead.
 */
int emu_pkt_send(emu_core_t *c, uint32_t node, uint32_t core, const void *buf, size_t len,
		 uint16_t user, uint16_t hints);
/*
 * Take the oldest packet of this core's reception FIFO: 0 and fills info
 * and buf (cap >= len, else -EMSGSIZE and the packet stays), -EAGAIN if
 * there is none.
 */
int emu_pkt_recv(emu_core_t *c, struct emu_pkt_info *info, void *buf, size_t cap);

#define EMU_EV_SEND 1u /* injection FIFO has room */
#define EMU_EV_RECV 2u /* reception FIFO holds a packet */
/*
 * Sleep until one of `events` holds: 0 and *holding = the events that hold
 * (holding may be NULL), -ETIMEDOUT when timeout_ms passed (timeout_ms < 0
 * waits without limit; the job's hang detector covers it), or -ECANCELED
 * if the job is being torn down.
 */
int emu_core_wait(emu_core_t *c, unsigned events, int timeout_ms, unsigned *holding);

/*
 * A promise, for speed: this core sends nothing and
 * posts nothing to the DMA unit (no descriptor, no counter change) until
 * it has received `packets` more raw packets. Receiving, waiting, computing
 * and reading the clock stay allowed. The timekeeper then need not stop at
 * each of this core's arrivals for fear of what it might send next, and
 * runs ahead of it (a receive-only phase, such as torus-stress's). The
 * promise changes no emulated time, only how fast the job runs.
 *
 * 0; -EINVAL for a bad core; -EBUSY if a promise still holds. While it
 * holds, emu_pkt_send fails with -EBUSY, and so does any DMA post or
 * counter change. packets == 0 promises nothing;
 * EMU_EXPECT_EVER promises to post nothing ever again (the core only
 * receives from here until it returns), which lets the timekeeper run on
 * without waiting for this core to take its last packets.
 */
#define EMU_EXPECT_EVER UINT64_MAX
int emu_core_expect(emu_core_t *c, uint64_t packets);

#define EMU_PROGRAM_STREAMS 12u
/*
 * Programs, for speed: every step of up to EMU_PROGRAM_STREAMS streams,
 * told before they run. A stream's step waits for mark `mark` of counter
 * `id` (mark -1: none), then posts. The core serves its streams as the
 * multicolor collectives do: a step without a mark first, in the order of
 * the steps each stream has had, then of stream number; otherwise it
 * waits for the first of the streams' marks to be crossed (ties: in that
 * order) and takes that stream's step from the crossing (or its clock, if
 * later). The timekeeper times all of it alone, so the core never asks
 * which mark came first. A program changes no emulated time.
 *
 * emu_core_step_begin(c) starts recording one step: until
 * emu_core_step_end(c, stream, id, mark, keep), the core's DMA posts and
 * counter adds are written down, not made (no descriptor, no counter
 * change), and its clock runs from 0 (emu_core_compute charges as usual;
 * the clock is put back at the end). It must not wait or ask anything
 * meanwhile. emu_core_step_end tells the step (keep 0, or a step that does
 * not fit: -EAGAIN, nothing told). emu_core_program_start(c, nstreams)
 * starts the program; the core then moves its bytes in any order, waiting
 * on physical marks (dma_counter_wait_marks), and tells the timekeeper
 * nothing: it must not ask it anything either. Before each step it calls
 * emu_core_program_step(c, stream); the step's posts are checked against
 * what was told (any difference: -EPROTO, and the job stops).
 * emu_core_program_finish(c) sets the clock at the program's end: at once,
 * as an offset from that end which the timekeeper works out behind the
 * core (as for a deferred counter wait; TORUS_DEFER=0, exact_lead or a
 * pending promise: it waits for the timekeeper instead); -EPROTO if the
 * core posted other than its steps said.
 *
 * -EINVAL for bad arguments; -EOPNOTSUPP with exact_lead set or with
 * TORUS_PROGRAM=0 in the environment (the caller then waits on marks
 * itself, each wait a question to the timekeeper; any other value but 1
 * is -EINVAL, with a message); -EBUSY while recording a step, while a
 * program runs, or under emu_core_expect.
 */
int emu_core_step_begin(emu_core_t *c);
int emu_core_step_end(emu_core_t *c, uint32_t stream, uint32_t id, int64_t mark, int keep);
int emu_core_program_start(emu_core_t *c, uint32_t nstreams);
int emu_core_program_step(emu_core_t *c, uint32_t stream);
int emu_core_program_finish(emu_core_t *c);

/* Counters of this node's outgoing link along (dim, dir) (dir 0: plus, 1:
 * minus), like a hardware performance counter: cumulative since the job
 * began. -EINVAL for a dimension without links. */
int emu_link_read(const emu_core_t *c, uint32_t dim, uint32_t dir, struct torus_link_counters *out);

/* Print this node's FIFOs and counters (the hang detector's view). */
void emu_node_dump(const emu_core_t *c, FILE *out);

#ifdef __cplusplus
}
#endif
#endif
