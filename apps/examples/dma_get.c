/*
 * Remote get: every node reads a table from the previous node's memory into
 * its own, without the previous node doing anything but register it.
 *
 *   torusrun --torus 2x2 -- example-dma-get
 */
#include "torus/dma.h"

#include <stdio.h>
#include <stdlib.h>

#define N 1000

static int core_main(emu_core_t *c, void *arg)
{
	(void)arg;
	uint32_t me = emu_node_rank(c), prev = (me + emu_node_count(c) - 1) % emu_node_count(c);
	int *mine = malloc(N * sizeof(int)), *copy = malloc(N * sizeof(int));
	uint32_t mine_id, copy_id, done;
	dma_injfifo_t *fifo;
	struct dma_desc d;
	int rc;

	if (!mine || !copy)
		return 1;
	for (int i = 0; i < N; i++)
		mine[i] = (int)me * 1000 + i;
	/* region 0 is the table every node exposes; region 1 receives */
	if ((rc = dma_mem_register(c, mine, N * sizeof(int), &mine_id)) ||
	    (rc = dma_mem_register(c, copy, N * sizeof(int), &copy_id)) || (rc = dma_counter_alloc(c, &done)) ||
	    (rc = dma_injfifo_open(c, 0, &fifo)) || (rc = dma_barrier(c)))
		goto fail;
	dma_counter_add(c, done, N * sizeof(int));
	dma_desc_get(&d, prev, 0, 0, N * sizeof(int), copy_id, 0, done);
	if ((rc = dma_injfifo_post(fifo, &d, DMA_POST_WAIT)) || (rc = dma_counter_wait(c, done)))
		goto fail;
	printf("node %u got node %u's table: [%d .. %d] at %.3f us\n", me, prev, copy[0], copy[N - 1],
	       emu_core_now(c) / 1e6);
	/* the previous node's engine may still be serving others: leave together */
	rc = dma_barrier(c);
	free(mine);
	free(copy);
	return rc != 0;
fail:
	fprintf(stderr, "node %u: %s\n", me, dma_strerror(rc));
	return 1;
}

int main(int argc, char **argv) { return emu_job_main(argc, argv, core_main, NULL); }
