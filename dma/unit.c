/*
 * The DMA unit's side of the engine's hooks (emu/unit.h): the engine calls
 * these, and knows nothing else of the DMA unit.
 */
#include "dma_internal.h"
#include "../emu/unit.h"

static void shm_init(void *shm, uint64_t off, uint64_t slot_off, const struct torus_params *p)
{
	dma_core_shm_init(shm, off, slot_off, p);
}

static void shm_dump(void *shm, void *base, uint32_t core, FILE *out) { dma_core_shm_dump(shm, base, core, out); }

/* A put's payload straight into its region (the common case), the rest
 * through the general path. */
static int deliver(struct emu_node_rt *rt, const struct torus_packet *pkt, const struct torus_side *side)
{
	return torus_pkt_kind(&pkt->hdr) == DMA_PKT_PUT ? dma_deliver_put_fast(rt, pkt, side)
							 : dma_engine_deliver(rt, pkt, side);
}

static void flush(struct emu_node_rt *rt) { dma_counter_flush(rt); }


const struct emu_unit emu_node_unit = {
	.core_shm_bytes = dma_core_shm_bytes,
	.core_slot_bytes = dma_core_slot_bytes,
	.core_shm_init = shm_init,
	.core_shm_dump = shm_dump,
	.node_setup = dma_node_setup,
	.node_teardown = dma_node_teardown,
	.core_setup = dma_core_setup,
	.core_teardown = dma_core_teardown,
	.core_finish = dma_core_finish,
	.core_drain = dma_core_drain,
	.inject = dma_engine_inject,
	.backlog = dma_engine_backlog,
	.deliver = deliver,
	.flush = flush,
	.getreq_bytes = sizeof(struct dma_getreq),
	.tk_kind = {[EMU_TK_PUT] = DMA_PKT_PUT, [EMU_TK_GET] = DMA_PKT_PUT, [EMU_TK_MEMFIFO] = DMA_PKT_MEMFIFO},
	.getreq_kind = DMA_PKT_GETREQ,
};
