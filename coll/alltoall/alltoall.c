/*
 * coll_alltoall's glue: a team's geometry, whether an algorithm fits it
 * (its own restrictions and the counters a member needs), and running a
 * named algorithm's plan (coll/common/a2a_exec.c).
 */
#include "../common/a2a.h"

#include <errno.h>
#include <stdlib.h>

static void geom_of(const coll_team_t *t, struct a2a_geom *g)
{
	const struct torus_shape *s = emu_shape(t->core);
	*g = (struct a2a_geom){t->size, t->node, s, t->size == s->nnodes, torus_params_payload(emu_params(t->core)),
			       emu_params(t->core)->dma_counters};
	for (uint32_t i = 0; g->node_order && i < t->size; i++)
		g->node_order = t->node[i] == i;
}

int coll_alltoall_fits_named(const coll_team_t *t, const char *name)
{
	const struct a2a_algo *al = a2a_find(name);
	struct a2a_geom g;
	uint32_t msgs = 0;
	const char *why = NULL;
	if (!t || !al)
		return 0;
	geom_of(t, &g);
	if (!al->fits(&g, &msgs, &why))
		return 0;
	/* a counter per message received, the injection counter and the
	 * address exchange's; or, for an algorithm that reuses them batch
	 * after batch, a few (a2a_exec.c) */
	return msgs + 2 <= emu_params(t->core)->dma_counters || (al->reuse && emu_params(t->core)->dma_counters >= 6);
}

int coll_alltoall_run_named(const struct coll_args *a, const char *name)
{
	coll_team_t *t = a->team;
	uint64_t block = (uint64_t)a->count * coll_dtype_size(a->dtype);
	if (!block)
		return 0; /* nothing to move (every member agreed on count 0) */
	struct a2a_geom g;
	struct coll_plan *pl = NULL;
	geom_of(t, &g);
	int rc = a2a_plan_build(a2a_find(name), &g, block, t->rank, &pl);
	/* every member builds the same plan, so a failure here is everyone's
	 * (but out of memory): agree before anything moves */
	rc = coll_agree(t, rc);
	if (!rc)
		rc = a2a_execute(t, pl, a->send, a->recv, a->check);
	coll_plan_free(pl);
	return rc;
}

const char *coll_alltoall_default_team(const coll_team_t *t, uint64_t block_bytes)
{
	struct a2a_geom g;
	geom_of(t, &g);
	return coll_alltoall_default_rule(&g, block_bytes, emu_params(t->core)->dma_counters);
}

const char *coll_alltoall_default(const struct torus_shape *s, const uint32_t *member_node, uint32_t p,
				  uint64_t block_bytes, uint32_t dma_counters)
{
	if (!s || !member_node || !p)
		return "direct";
	struct a2a_geom g = {p, member_node, s, p == s->nnodes, 240, dma_counters ? dma_counters : 64};
	for (uint32_t i = 0; g.node_order && i < p; i++)
		g.node_order = member_node[i] == i;
	return coll_alltoall_default_rule(&g, block_bytes, dma_counters ? dma_counters : 64);
}
