/* Placement of node processes and their receive memory on NUMA nodes. */
#include "emu_internal.h"

void emu_numa_plan(uint32_t nnodes, uint32_t numa_nodes, int *out)
{
	if (numa_nodes < 1)
		numa_nodes = 1;
	/* contiguous blocks whose sizes differ by at most one */
	for (uint32_t r = 0; r < nnodes; r++)
		out[r] = (int)((uint64_t)r * numa_nodes / nnodes);
}
