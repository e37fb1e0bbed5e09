/*
 * Direct put: every node puts a message into the next node's buffer and
 * waits until its own buffer is full.
 *
 *   torusrun --torus 4 -- example-dma-put
 */
#include "torus/dma.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LEN 100000

static int core_main(emu_core_t *c, void *arg)
{
	(void)arg;
	uint32_t me = emu_node_rank(c), next = (me + 1) % emu_node_count(c);
	char *in = calloc(LEN, 1), *out = malloc(LEN);
	uint32_t region, arrived, left;
	dma_injfifo_t *fifo;
	struct dma_desc d;
	int rc;

	if (!in || !out)
		return 1;
	snprintf(out, LEN, "greetings from node %u", me);
	/* first region and first counter of core 0: ids 0 and 0 on every node */
	if ((rc = dma_mem_register(c, in, LEN, &region)) || (rc = dma_counter_alloc(c, &arrived)) ||
	    (rc = dma_counter_alloc(c, &left)) || (rc = dma_injfifo_open(c, 0, &fifo)))
		goto fail;
	dma_counter_add(c, arrived, LEN); /* bytes still to come in */
	dma_counter_add(c, left, LEN);    /* bytes still to go out */
	if ((rc = dma_barrier(c)))        /* everyone is ready to receive */
		goto fail;
	dma_desc_put(&d, next, out, LEN, region, 0, arrived, left);
	if ((rc = dma_injfifo_post(fifo, &d, DMA_POST_WAIT)) || (rc = dma_counter_wait(c, arrived)) ||
	    (rc = dma_counter_wait(c, left))) /* now `out` may be reused */
		goto fail;
	printf("node %u: \"%s\" arrived at %.3f us\n", me, in, emu_core_now(c) / 1e6);
	free(in);
	free(out);
	return 0;
fail:
	fprintf(stderr, "node %u: %s\n", me, dma_strerror(rc));
	return 1;
}

int main(int argc, char **argv) { return emu_job_main(argc, argv, core_main, NULL); }
