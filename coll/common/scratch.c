/*
 * Scratch buffers of the collectives. A large one is mapped anonymous and
 * asked for transparent huge pages: the engine deposits into it right after
 * it is allocated, and each 4 KiB page it touches first is a page fault on
 * the engine thread (a 4 MiB allreduce on 4x4x4 took 65536 of them, 15% of
 * the call's CPU time); with 2 MiB pages it takes two per node. From 1 MiB
 * on (each core of a 3-core node has about 1.4 MiB there). Where huge
 * pages are off (or the mapping fails), small pages or malloc as before.
 */
#include "../coll_internal.h"

#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

#define HUGE_BYTES (2u << 20)

void *coll_scratch_alloc(size_t bytes, size_t *mapped)
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
			*mapped = len;
			return (void *)a;
		}
	}
#endif
	return malloc(bytes + 1);
}

void coll_scratch_free(void *p, size_t mapped)
{
	if (mapped)
		munmap(p, mapped);
	else
		free(p);
}
