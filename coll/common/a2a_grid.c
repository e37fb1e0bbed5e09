/*
 * The dimension-by-dimension all-to-all on a grid of members (mixed radix,
 * dimension 0 fastest: member = sum of coord[d] * stride[d]), shared by
 * "mesh2d" (a virtual r x c grid of the team) and "torus" (the torus
 * itself).
 *
 * Phase d (one per dimension of size > 1) moves every block along
 * dimension d to the coordinate of its destination there. Before phase d
 * the block from s for v is held by the member whose coordinates below d
 * are v's and from d on are s's (so each member holds p blocks, and after
 * the last phase every block is home). In phase d a member sends each
 * other member of its line along d, in one message, the blocks it holds
 * whose destination has that member's coordinate (ordered by source, then
 * destination; p / k_d blocks), to the lines' members in the order +1, -1,
 * +2, -2, ... so that both ring directions start at once; then waits for
 * the k_d - 1 messages of its line. What arrives is repacked (regrouped)
 * for the next phase as it is sent; the last phase's messages, whose blocks
 * come from consecutive sources, land straight in recv.
 */
#include "a2a.h"

#include <errno.h>
#include <stdlib.h>

int a2a_grid_build(struct coll_plan *pl, uint32_t ndims, const uint32_t *dims)
{
	uint32_t p = pl->p, stride[TORUS_MAX_DIMS + 1];
	stride[0] = 1;
	for (uint32_t d = 0; d < ndims; d++)
		stride[d + 1] = stride[d] * dims[d];
	if (stride[ndims] != p)
		return -EINVAL;
	uint32_t *cnt = malloc((size_t)p * 64 * sizeof(uint32_t)), *ids = malloc((size_t)p * p * sizeof(uint32_t));
	uint32_t *at = malloc((size_t)p * 64 * sizeof(uint32_t));
	if (!cnt || !ids || !at || a2a_mv_init(pl)) {
		free(cnt);
		free(ids);
		free(at);
		return -ENOMEM;
	}
	uint32_t last = 0, phase = 0, any = 0;
	for (uint32_t d = 0; d < ndims; d++) {
		uint32_t k = dims[d];
		if (k < 2)
			continue;
		if (k > 64) {
			free(cnt);
			free(ids);
			free(at);
			return -ENOTSUP;
		}
		any = 1;
		uint32_t st = last = a2a_step(pl, phase++, 0);
		/* bucket the blocks by holder and target coordinate */
		for (size_t i = 0; i < (size_t)p * k; i++)
			cnt[i] = 0;
		for (int pass = 0; pass < 2; pass++) {
			if (pass) {
				for (uint32_t h = 0, off = 0; h < p; h++)
					for (uint32_t x = 0; x < k; x++) {
						at[h * k + x] = off;
						off += cnt[h * k + x];
					}
			}
			for (uint32_t s = 0; s < p; s++)
				for (uint32_t v = 0; v < p; v++) {
					/* holder: v's coordinates below d, s's from d on */
					uint32_t h = v % stride[d] + s / stride[d] * stride[d];
					uint32_t x = v / stride[d] % k;
					if (!pass)
						cnt[h * k + x]++;
					else
						ids[at[h * k + x]++] = s * p + v;
				}
		}
		/* at[] now points past each bucket: its start is at - cnt */
		for (uint32_t h = 0; h < p; h++) {
			uint32_t c = h / stride[d] % k;
			for (uint32_t j = 1; j < k; j++) {
				/* +1, -1, +2, -2, ... */
				uint32_t off = (j + 1) / 2;
				uint32_t x = j % 2 ? (c + off) % k : (c + k - off) % k;
				uint32_t n = cnt[h * k + x];
				uint32_t peer = h - c * stride[d] + x * stride[d];
				a2a_mv_send(pl, st, h, peer, ids + at[h * k + x] - n, n);
			}
		}
	}
	if (!any)
		last = a2a_step(pl, 0, 0);
	a2a_mv_finish(pl, last);
	free(cnt);
	free(ids);
	free(at);
	return 0;
}
