/*
 * Local copy: a core asks its node's DMA engine to copy a buffer into a
 * registered region, and works (in virtual time) while the engine copies.
 *
 *   torusrun --torus 1 -- example-dma-copy
 */
#include "torus/dma.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LEN (4u << 20)

static int core_main(emu_core_t *c, void *arg)
{
	(void)arg;
	char *src = malloc(LEN), *dst = calloc(LEN, 1);
	uint32_t region, done;
	dma_injfifo_t *fifo;
	struct dma_desc d;
	int rc;

	if (!src || !dst)
		return 1;
	memset(src, 'x', LEN);
	if ((rc = dma_mem_register(c, dst, LEN, &region)) || (rc = dma_counter_alloc(c, &done)) ||
	    (rc = dma_injfifo_open(c, 0, &fifo)))
		goto fail;
	dma_counter_add(c, done, LEN);
	dma_desc_copy(&d, src, LEN, region, 0, done);
	if ((rc = dma_injfifo_post(fifo, &d, DMA_POST_WAIT)))
		goto fail;
	emu_core_compute(c, 200000); /* 200 ns of our own work meanwhile */
	if ((rc = dma_counter_wait(c, done)))
		goto fail;
	printf("node %u core %u: copied %u bytes (%s), clock %.3f us (copy_bw %.1f GB/s)\n", emu_node_rank(c),
	       emu_core_index(c), LEN, memcmp(src, dst, LEN) ? "WRONG" : "intact", emu_core_now(c) / 1e6,
	       emu_params(c)->copy_bw / 1e9);
	free(src);
	free(dst);
	return 0;
fail:
	fprintf(stderr, "%s\n", dma_strerror(rc));
	return 1;
}

int main(int argc, char **argv) { return emu_job_main(argc, argv, core_main, NULL); }
