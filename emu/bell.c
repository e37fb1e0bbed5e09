/*
 * Doorbells: futex words in shared memory on which idle engines and cores
 * sleep. Shared (not PRIVATE) futexes, since engines of other node processes
 * ring them.
 */
#include "emu_internal.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static long futex(_Atomic uint32_t *addr, int op, uint32_t val, const struct timespec *ts)
{
	return syscall(SYS_futex, (uint32_t *)addr, op, val, ts, NULL, 0);
}

void emu_bell_ring_slow(struct emu_bell *b)
{
	atomic_fetch_add_explicit(&b->seq, 1, memory_order_release);
	futex(&b->seq, FUTEX_WAKE, INT_MAX, NULL);
}

uint32_t emu_bell_prepare(struct emu_bell *b)
{
	uint32_t seq = atomic_load_explicit(&b->seq, memory_order_acquire);
	/* armed after the snapshot: a ringer that disarms it rings after */
	atomic_store_explicit(&b->armed, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&b->sleepers, 1, memory_order_release);
	/* partner: the fence in emu_bell_ring; the caller re-checks its queues next */
	atomic_thread_fence(memory_order_seq_cst);
	return seq;
}

void emu_bell_cancel(struct emu_bell *b)
{
	atomic_fetch_sub_explicit(&b->sleepers, 1, memory_order_relaxed);
}

int emu_bell_sleep(struct emu_bell *b, uint32_t seq, int timeout_ms)
{
	struct timespec ts = {timeout_ms / 1000, (long)(timeout_ms % 1000) * 1000000L};
	/* EAGAIN: rung between prepare and here; EINTR/ETIMEDOUT: caller re-checks */
	long rc = futex(&b->seq, FUTEX_WAIT, seq, timeout_ms >= 0 ? &ts : NULL);
	int err = rc < 0 ? errno : 0;
	atomic_fetch_sub_explicit(&b->sleepers, 1, memory_order_relaxed);
	return err == ETIMEDOUT ? -ETIMEDOUT : err == EINTR ? -EINTR : 0;
}
