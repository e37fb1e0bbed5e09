/*
 * Memory FIFO: every node sends a message to node 0, whose handler (dispatch
 * id 1) reassembles each one; node 0 prints them as they complete.
 *
 *   torusrun --torus 2x2 -- example-dma-memfifo
 */
#include "torus/dma.h"

#include <stdio.h>
#include <string.h>

struct inbox {
	char text[64][600];
	int complete;
};

static int on_packet(emu_core_t *c, const struct dma_recv_info *info, const void *payload, void *arg)
{
	struct inbox *box = arg;
	(void)c;
	if (info->src_node >= 64 || info->offset + info->len > sizeof(box->text[0]))
		return -1;
	memcpy(box->text[info->src_node] + info->offset, payload, info->len);
	if (info->last) {
		printf("node 0 got %llu bytes from node %u (user header %u): \"%.40s...\"\n",
		       (unsigned long long)(info->offset + info->len), info->src_node, info->user,
		       box->text[info->src_node]);
		box->complete++;
	}
	return 0;
}

static int core_main(emu_core_t *c, void *arg)
{
	static struct inbox box;
	static char msg[64][600];
	uint32_t me = emu_node_rank(c), inj;
	dma_injfifo_t *fifo;
	struct dma_desc d;
	int rc;

	(void)arg;
	if (me == 0 && (rc = dma_handler_register(c, 1, on_packet, &box)))
		goto fail;
	/* senders check the handler is registered: wait until it is */
	if ((rc = dma_barrier(c)) || (rc = dma_counter_alloc(c, &inj)) || (rc = dma_injfifo_open(c, 0, &fifo)))
		goto fail;
	/* 600 bytes: three packets, reassembled by the handler */
	snprintf(msg[me], sizeof(msg[me]), "node %u says hello over the memory FIFO", me);
	dma_counter_add(c, inj, sizeof(msg[me]));
	dma_desc_memfifo(&d, 0, 0, 1, (uint16_t)(100 + me), msg[me], sizeof(msg[me]), inj);
	if ((rc = dma_injfifo_post(fifo, &d, DMA_POST_WAIT)) || (rc = dma_counter_wait(c, inj)))
		goto fail;
	while (me == 0 && box.complete < (int)emu_node_count(c)) {
		unsigned got;
		if ((rc = dma_recfifo_poll(c, 16, &got)) < 0)
			goto fail;
		if (!got && (rc = dma_recfifo_wait(c, -1)) < 0)
			goto fail;
	}
	return 0;
fail:
	fprintf(stderr, "node %u: %s\n", me, dma_strerror(rc));
	return 1;
}

int main(int argc, char **argv) { return emu_job_main(argc, argv, core_main, NULL); }
