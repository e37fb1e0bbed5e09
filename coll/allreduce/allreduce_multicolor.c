/*
 * allreduce "multicolor": multicolor reduce-scatter then multicolor
 * allgather, stream by stream (003_b0aac8c3d10c7733.txt section 4: "the
 * bounds for Allgather and Allreduce can be obtained similarly"; engine in
 * coll/common/multicolor.c). A stream starts its allgather as soon as its
 * own reduce-scatter is done, with no barrier between the two.
 *
 * Steps: the count elements are cut into p nearly equal blocks (any count:
 * blocks may be empty), then as reduce-scatter "multicolor", with the
 * node's reduced block landing in recv, then as allgather "multicolor"
 * in recv. Since every node ends with the whole vector, the blocks need
 * not be the nodes' own: a short vector (pieces shorter than a packet)
 * gives each stream one contiguous segment instead, cut in the stream's
 * node order, so that every put is one descriptor (multicolor.c). In place (send == recv) works: a block of send is last read
 * before any node can have finished reducing it.
 * Cost: 4N sum_i (d_i - 1) alpha + 2 (p-1)/p n beta / 2N + (p-1)/p n gamma
 * on a symmetric torus.
 * Restrictions: as reduce-scatter "multicolor".
 */
#include "../common/multicolor.h"

int coll_allreduce_multicolor(const struct coll_args *a)
{
	coll_team_t *t = a->team;
	struct coll_blocks b;
	if (coll_blocks_init(&b, t->size, a->count, 0))
		return -ENOMEM;
	size_t esz = coll_dtype_size(a->dtype);
	struct mc_job job = {COLL_ALLREDUCE, a->dtype, a->op, a->check, &b, a->send,
			     (uint8_t *)a->recv + b.displs[t->rank] * esz, a->recv, a->count * esz, NULL};
	int rc = coll_multicolor(t, &job);
	coll_blocks_free(&b);
	return rc;
}
