/* Text of the DMA unit's error codes. */
#include "torus/dma.h"

#include <string.h>

const char *dma_strerror(int err)
{
	switch (err) {
	case DMA_ERR_DEST: return "destination node or core does not exist";
	case DMA_ERR_REGION: return "memory region not registered at its node";
	case DMA_ERR_RANGE: return "offset and length fall outside the region";
	case DMA_ERR_HANDLER: return "no handler registered for the dispatch id";
	case DMA_ERR_COUNTER: return "counter not allocated at its node";
	case DMA_ERR_FIFO: return "no such injection FIFO";
	case DMA_ERR_NOSPACE: return "no free region, counter or barrier slot";
	default: return err < 0 && err > -4096 ? strerror(-err) : "unknown error";
	}
}
