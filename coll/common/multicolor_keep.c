/*
 * Multicolor engine kept set-ups: a call's set-up kept in the team for the
 * next identical call, what the cores hold in them, and running one.
 */
#include "../coll_internal.h"
#include "multicolor.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/*
 * A call's set-up, kept in the team for the next call with the same
 * arguments (coll_multicolor): its streams, armed counters, private
 * scratch, regions and the neighbours' addresses.
 */
struct mc_plan {
	struct mc_call m;
	enum coll_kind kind;
	uint64_t check;             /* the call's hash (catalogue.c) */
	void *result;               /* what the result region points at */
	uint32_t counters, regions; /* what it holds */
};

/* ------------------------------------------------------ kept set-ups */

/*
 * Identical calls (osu_allreduce makes 1200 of each size) keep their
 * set-up: the second call on finds its counters armed, its regions
 * registered and its neighbours' addresses known, and runs the streams at
 * once. No exchange and no agreement: the catalogue's barrier before every
 * call (agree_on_call) has checked that every member makes the same call,
 * and every member, seeing the same arguments, keeps or drops alike.
 *
 * Why a kept set-up is safe. A peer's data for call k+1 leaves it only
 * after the catalogue's barrier of call k+1, so after this core has left
 * call k, in which every unit it expected had arrived: the counters are
 * re-armed at the end of call k (rearm), before anything of call k+1 can
 * land, and the scratch is the set-up's own, so calls of other algorithms
 * in between cannot move it. The result region is pointed at the new
 * result buffer at the start of call k+1 (dma_mem_rebind), which is in
 * time because a peer's allgather puts into it only after its
 * reduce-scatter, which needs this core's data of call k+1. That is why
 * allgather, which puts into the result at once, always sets up afresh.
 * Vectors above MC_PLAN_MAX_BYTES set up afresh too: the set-up is a small
 * part of their time, and the scratch is not held between calls.
 */
#define MC_PLAN_MAX_BYTES (1u << 20)

/* What this process's cores hold in kept set-ups, by core: at most half
 * the counters and a quarter of the regions, so that other calls (another
 * team's set-up, point-to-point) still find theirs. */
static struct {
	uint32_t counters, regions;
} kept[TORUS_MAX_CORES];

static uint32_t plan_counters(const struct mc_call *m) { return m->nmine * m->N + 1; }
static uint32_t plan_regions(const struct mc_call *m) { return (uint32_t)(m->have_scratch + m->have_result); }

/*
 * coll_agree, which also settles whether the set-up is kept: every member
 * says whether it has room (kept[]), and all keep or none, since a member
 * that kept would skip the next call's exchange that one that did not
 * waits for.
 */
int mc_agree_keep(struct mc_call *m, int rc)
{
	const struct torus_params *pr = emu_params(m->c);
	uint32_t i = emu_core_index(m->c), worst;
	uint32_t full = m->keep && (kept[i].counters + plan_counters(m) > pr->dma_counters / 2 ||
				    kept[i].regions + plan_regions(m) > pr->dma_regions / 4);
	int b = dma_barrier_team_max(m->c, m->t->part, m->t->npart, rc < 0 ? (uint32_t)-rc << 1 : full, &worst);
	if (b)
		return b;
	if (worst > 1)
		return -(int)(worst >> 1);
	m->keep = m->keep && !worst;
	return 0;
}

/* TORUS_MC_PLAN: 0 (never keep a set-up) or 1 (the default); anything
 * else is -EINVAL, on every member alike (the same environment). */
int mc_plan_env(int *on)
{
	const char *env = getenv("TORUS_MC_PLAN");
	*on = 1;
	if (!env || !*env)
		return 0;
	if (strcmp(env, "0") && strcmp(env, "1"))
		return -EINVAL;
	*on = env[0] == '1';
	return 0;
}

int mc_plan_wanted(const struct mc_call *m)
{
	if (!m->plan_on)
		return 0;
	return m->job->kind != COLL_ALLGATHER && (uint64_t)m->total * m->esz <= MC_PLAN_MAX_BYTES;
}

int mc_plan_fits(const struct mc_plan *pl, const struct mc_call *m)
{
	const struct mc_call *k = &pl->m;
	return pl->kind == m->job->kind && pl->check == m->job->check && k->total == m->total && k->esz == m->esz &&
	       k->nstreams == m->nstreams && k->P == m->P && k->contiguous == m->contiguous &&
	       k->job_result_bytes == m->job->result_bytes;
}

/* The call is over: its sources are free again, and every counter is armed
 * for the next identical call. */
static int rearm(struct mc_call *m)
{
	int rc = dma_counter_wait(m->c, m->inj);
	for (uint32_t i = 0; !rc && i < m->nmine; i++)
		for (uint32_t ph = 0; !rc && ph < m->N; ph++)
			rc = mc_arm(m, &m->st[i].ph[ph]);
	return rc;
}

void coll_multicolor_release(coll_team_t *t)
{
	if (!t || !t->mc_plan)
		return;
	struct mc_plan *pl = t->mc_plan;
	uint32_t i = emu_core_index(pl->m.c);
	t->mc_plan = NULL;
	kept[i].counters -= pl->counters;
	kept[i].regions -= pl->regions;
	mc_finish(&pl->m, 0);
	free(pl);
}

int mc_keep(coll_team_t *t, struct mc_call *m)
{
	struct mc_plan *pl = malloc(sizeof(*pl));
	int rc = pl ? rearm(m) : -ENOMEM;
	if (rc) {
		free(pl);
		return mc_finish(m, rc);
	}
	pl->m = *m;
	pl->m.job_result_bytes = m->job->result_bytes;
	pl->kind = m->job->kind;
	pl->check = m->job->check;
	pl->result = m->job->result;
	pl->counters = plan_counters(m);
	pl->regions = plan_regions(m);
	kept[emu_core_index(m->c)].counters += pl->counters;
	kept[emu_core_index(m->c)].regions += pl->regions;
	t->mc_plan = pl;
	return 0;
}

int mc_run_plan(coll_team_t *t, const struct mc_job *job)
{
	struct mc_plan *pl = t->mc_plan;
	struct mc_call *m = &pl->m;
	int rc = 0;
	m->job = job;
	if (job->kind != COLL_REDUCE_SCATTER && job->result != pl->result) {
		rc = dma_mem_rebind(m->c, m->result_region, job->result, job->result_bytes);
		pl->result = job->result;
	}
	if (!rc)
		rc = mc_run_streams(m);
	if (!rc)
		rc = rearm(m);
	if (rc)
		coll_multicolor_release(t);
	return rc;
}
