/*
 * Scratch buffers of the collectives, one per team handle (that is, per
 * calling core), kept from call to call as MPI libraries keep theirs: the
 * engine deposits into scratch right after a call sets it up, and every
 * page it touches first is a page fault on the engine thread, which the
 * next call would pay again if the buffer were freed (with 4 KiB pages a
 * 4 MiB allreduce on 4x4x4 took 65536 of them, 15% of the call's CPU time).
 * A large buffer is mapped anonymous and asked for transparent huge pages
 * (two faults per node instead), from 1 MiB on (each core of a 3-core node
 * has about 1.4 MiB there). Where huge pages are off (or the mapping
 * fails), small pages or malloc. A larger need replaces the buffer; the
 * team's free releases it.
 */
#include "../coll_internal.h"

#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

#define HUGE_BYTES (2u << 20)

static void *scratch_alloc(size_t bytes, size_t *cap, size_t *mapped)
{
	*mapped = 0;
#ifdef MADV_HUGEPAGE
	if (bytes >= HUGE_BYTES / 2) { /* at most half of the zeroed memory unused */
		/* round up to whole huge pages, and map one more to align the start */
		size_t len = (bytes + HUGE_BYTES - 1) & ~(size_t)(HUGE_BYTES - 1);
		uint8_t *p = mmap(NULL, len + HUGE_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p != MAP_FAILED) {
			uintptr_t a = ((uintptr_t)p + HUGE_BYTES - 1) & ~(uintptr_t)(HUGE_BYTES - 1);
			size_t head = a - (uintptr_t)p;
			if (head)
				munmap(p, head);
			munmap((uint8_t *)a + len, HUGE_BYTES - head);
			madvise((void *)a, len, MADV_HUGEPAGE); /* a hint: small pages if it fails */
			*mapped = *cap = len;
			return (void *)a;
		}
	}
#endif
	*cap = bytes;
	return malloc(bytes + 1); /* + 1: 0 bytes is fine */
}

void coll_scratch_release(coll_team_t *t)
{
	if (t->scratch_mapped)
		munmap(t->scratch, t->scratch_mapped);
	else
		free(t->scratch);
	t->scratch = NULL;
	t->scratch_cap = t->scratch_mapped = 0;
}

void *coll_scratch_get(coll_team_t *t, size_t bytes)
{
	if (t->scratch && t->scratch_cap >= bytes)
		return t->scratch;
	coll_scratch_release(t);
	t->scratch = scratch_alloc(bytes, &t->scratch_cap, &t->scratch_mapped);
	if (!t->scratch)
		t->scratch_cap = t->scratch_mapped = 0;
	return t->scratch;
}
