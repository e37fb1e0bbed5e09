/*
 * What a stalled job's threads are doing: the hang detector's second look.
 *
 * "No packet moved and no core advanced for --timeout seconds" has two
 * causes that look the same from the job's counters:
 *   - starvation: the threads have work, but the host is so loaded that
 *     they wait on a run queue for a CPU (thousands of emulated threads on
 *     two cores, or other programs); the job will move again;
 *   - a hang: the threads sleep with work pending (a lost wake-up, a
 *     deadlock in the program), or run without moving anything (a livelock,
 *     or a core busy in its own code).
 * The kernel tells them apart. Every engine and core thread publishes its
 * thread id in shared memory; the detector reads each one's state and its
 * scheduler statistics (/proc/TID/stat and /proc/TID/schedstat: time run
 * and time spent runnable on a run queue) twice, a short window apart, and
 * looks at its doorbell (a sleeper is counted there).
 *
 * A thread that is runnable (running, or waiting on a run queue) at both
 * looks, or was for at least half the window, is
 *   starved  if it ran for less than half the window;
 *   busy     if it ran for more.
 * Otherwise it is
 *   asleep   if its doorbell counts it as a sleeper;
 *   other    if it sleeps somewhere else (the program's own code: a lock,
 *            sleep(), I/O).
 * A thread stopped at the second look (state T or t: SIGSTOP, a debugger)
 * is stopped, and so is the job: its node holds the others up, whatever
 * they do meanwhile; the verdict names it.
 * Otherwise the job is starved if any thread is starved, else hung.
 *
 * Limit: a livelock on a host so loaded that its threads get less than half
 * a CPU is taken for starvation; the detector then waits, and says so
 * every --timeout seconds. A thread that has gone (its /proc entry is
 * missing) counts as other.
 */
#include "emu_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Read /proc/TID/stat's state letter and /proc/TID/schedstat's first two
 * fields (ns run, ns waiting on a run queue); state '?' if unreadable. */
static void read_thread(struct emu_thread_obs *o)
{
	char path[64], buf[512];
	o->state = '?';
	o->run_ns = o->wait_ns = 0;
	if (o->tid <= 0)
		return;
	snprintf(path, sizeof(path), "/proc/%d/schedstat", (int)o->tid);
	FILE *f = fopen(path, "r");
	if (!f)
		return;
	unsigned long long run = 0, wait = 0;
	int ok = fscanf(f, "%llu %llu", &run, &wait) == 2;
	fclose(f);
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)o->tid);
	if (!ok || !(f = fopen(path, "r")))
		return;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* "tid (comm) S ...": comm may hold spaces and parentheses */
	const char *close = strrchr(buf, ')');
	if (!close || close[1] != ' ' || !close[2])
		return;
	o->state = close[2];
	o->run_ns = run;
	o->wait_ns = wait;
}

size_t emu_stall_sample(const struct emu_shm *m, const int32_t *pid, const uint8_t *exited, struct emu_thread_obs *out,
			size_t cap)
{
	size_t k = 0;
	for (uint32_t r = 0; r < m->hdr->nnodes; r++) {
		struct emu_node_shm *n = emu_shm_node(m, r);
		if (exited && exited[r])
			continue;
		if (k < cap) {
			out[k].node = r;
			out[k].core = -1;
			out[k].tid = atomic_load_explicit(&n->engine_tid, memory_order_relaxed);
			if (!out[k].tid && pid)
				out[k].tid = pid[r]; /* not started yet: the node process itself */
			out[k].asleep_on_bell = atomic_load_explicit(&n->bell.sleepers, memory_order_relaxed) != 0;
			read_thread(&out[k]);
		}
		k++;
		for (uint32_t c = 0; c < n->ncores; c++) {
			struct emu_core_shm *co = emu_shm_core(m, n, c);
			if (atomic_load_explicit(&co->state, memory_order_relaxed) == EMU_CORE_DONE ||
			    !atomic_load_explicit(&co->tid, memory_order_relaxed))
				continue;
			if (k < cap) {
				out[k].node = r;
				out[k].core = (int32_t)c;
				out[k].tid = atomic_load_explicit(&co->tid, memory_order_relaxed);
				out[k].asleep_on_bell = atomic_load_explicit(&co->bell.sleepers, memory_order_relaxed) != 0;
				read_thread(&out[k]);
			}
			k++;
		}
	}
	return k;
}

int emu_stall_classify(const struct emu_thread_obs *before, const struct emu_thread_obs *after, size_t n,
		       uint64_t window_ns, struct emu_stall_verdict *v)
{
	if (!v || ((!before || !after) && n) || window_ns == 0)
		return -EINVAL;
	memset(v, 0, sizeof(*v));
	for (size_t i = 0; i < n; i++) {
		const struct emu_thread_obs *a = &before[i], *b = &after[i];
		v->threads++;
		/* the same thread at both looks, or it cannot be judged */
		int known = a->tid == b->tid && a->state != '?' && b->state != '?' && b->run_ns >= a->run_ns &&
			    b->wait_ns >= a->wait_ns;
		uint64_t ran = known ? b->run_ns - a->run_ns : 0, waited = known ? b->wait_ns - a->wait_ns : 0;
		/* runnable: it wants a CPU. A sleeper that wakes now and then (a
		 * doorbell's time slices) is rarely seen runnable twice; a thread
		 * rung but still waiting for a CPU still counts on its doorbell,
		 * so the run queue is looked at first. The kernel adds to a
		 * thread's wait only when it gets a CPU, so a thread that never
		 * got one in the window shows no wait: its state tells. */
		if (b->state == 'T' || b->state == 't') {
			if (!v->stopped++)
				v->stopped_node = b->node;
		} else if (known && ((a->state == 'R' && b->state == 'R') || ran + waited >= window_ns / 2)) {
			if (ran < window_ns / 2)
				v->starved++; /* wanted a CPU all along, had it less than half the time */
			else
				v->busy++;
		} else if (b->asleep_on_bell) {
			v->asleep++;
		} else {
			v->other++;
		}
	}
	v->kind = v->stopped   ? EMU_STALL_STOPPED
		  : v->starved ? EMU_STALL_STARVED
		  : v->busy    ? EMU_STALL_BUSY
			       : EMU_STALL_ASLEEP;
	return 0;
}
