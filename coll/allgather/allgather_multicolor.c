/*
 * allgather "multicolor": the reverse of the multicolor reduce-scatter
 * without computation (003_b0aac8c3d10c7733.txt section 4; engine in
 * coll/common/multicolor.c).
 *
 * Steps: every stream (color c, direction) runs the phases of its color in
 * reverse, i = N-1 .. 0, a ring bucket allgather along pi_c(i): step t
 * forwards the block that arrived in step t-1 straight into the
 * successor's result buffer (direct puts, one per node piece).
 * Cost: 2N sum_i (d_i - 1) alpha + (p-1)/p n beta / 2N on a symmetric
 * torus (n: the gathered vector); no gamma.
 * Restrictions: as reduce-scatter "multicolor".
 */
#include "../common/multicolor.h"

int coll_allgather_multicolor(const struct coll_args *a)
{
	coll_team_t *t = a->team;
	struct coll_blocks b;
	if (coll_blocks_init(&b, t->size, a->count * t->size, a->count))
		return -ENOMEM;
	size_t bytes = a->count * t->size * coll_dtype_size(a->dtype);
	struct mc_job job = {COLL_ALLGATHER, a->dtype, a->op, a->check, &b, NULL, NULL, a->recv, bytes, a->send};
	int rc = coll_multicolor(t, &job);
	coll_blocks_free(&b);
	return rc;
}
