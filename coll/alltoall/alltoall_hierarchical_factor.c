/*
 * alltoall "hierarchical_factor": ClusteredAllToAll of
 * 000_a0e9749300f48338.txt (Fig. 2), for nodes with different numbers of
 * processors (here: the team's members on each emulated node), with
 * single-ported nodes: a node takes part in one inter-node exchange at a
 * time.
 *
 * Nodes are ordered by size, then by node number (U <= V if size(U) <
 * size(V), or equal sizes and U's number <= V's); l(u) is u's index among
 * its node's members (in team order). With A the active nodes (all at
 * first) and done = 0:
 *   phase:  current = the smallest size in A;
 *           round i = 0 .. |A|-1: factor i of the complete graph with
 *           self-loops on A (A numbered 0 .. |A|-1 in <= order; a pairs with
 *           (i - a) mod |A|, Lemma 1), every pair (U, V), U <= V, at once:
 *             for each u of U with done <= l(u) < current, for each v of V
 *             (by l(v)), v != u: one step, in which
 *               U != V: u and v exchange m_uv and m_vu;
 *               U == V: u sends m_uv to v (an intra-node message);
 *           a round has as many steps as its largest pair needs;
 *           done = current; the nodes of size done leave A.
 * Every member's m_uu (its block for itself) is a local copy before the
 * first step: Fig. 2 has "u sends m_uu to u" take a step of its own, so
 * that a node paired with itself would spend a step copying while others
 * exchange. Each step every member sends at most one message and receives
 * at most one, and waits for it before its next step.
 *
 * Steps: Fig. 3 (sizes 1, 2, 3): 3 phases of 3, 2 and 1 rounds, 15 steps,
 * as its caption says (Fig. 2 taken step by step, copies included, gives
 * the text's "pn steps" = 18). Theorem 1: as many steps as the largest
 * node's processors send messages to the others, n_max (p - 1), whenever
 * one node is the largest: it takes part in every step. With several of
 * the largest size, a step where one of them is paired with itself while
 * two others exchange can leave it idle (the "inefficient steps" 000
 * discusses after Theorem 1): up to n_max (p - 1) + n_max, the text's pn.
 * test_alltoall checks both on random machines.
 * The remark of 000 (end of section 3, and Fig. 3's caption): a node
 * paired with itself does intra-node work only; moving work between such
 * rounds could save steps. With the copies out of the steps, phase 1 of
 * Fig. 3 has no step without inter-node traffic (the caption's step 6,
 * which it proposes to move to the end, is not there); the rounds left
 * with intra-node messages only are those where every active node is
 * paired with itself (phase 2's first, and phase 3 of node 3 alone). The
 * steps in which a node only sends within itself show in --explain.
 *
 * Cost: every step moves one block per member; a node's members take turns
 * on its inter-node port, so a step costs alpha + m beta on the node pairs'
 * routes. Counters: p - 1, reused batch after batch by a member with fewer
 * (a2a_exec.c, a2a.h: reuse).
 */
#include "../common/a2a.h"

#include <errno.h>
#include <stdlib.h>

static int fits(const struct a2a_geom *g, uint32_t *msgs, const char **why)
{
	(void)why;
	*msgs = g->p - 1;
	return 1;
}

struct hnode {
	uint32_t node, size, first; /* first: index in the member list by node */
};

static int by_order(const void *a, const void *b)
{
	const struct hnode *x = a, *y = b;
	if (x->size != y->size)
		return x->size < y->size ? -1 : 1;
	return x->node < y->node ? -1 : x->node > y->node;
}

static int build(struct coll_plan *pl, const struct a2a_geom *g)
{
	uint32_t p = g->p, nn = g->shape->nnodes;
	uint32_t *size = calloc(nn, sizeof(uint32_t)), *first = calloc(nn, sizeof(uint32_t));
	uint32_t *members = malloc(p * sizeof(uint32_t)); /* by node, then team order */
	struct hnode *h = malloc(nn * sizeof(*h));
	uint32_t *act = malloc(nn * sizeof(uint32_t));
	int rc = 0;
	if (!size || !first || !members || !h || !act) {
		rc = -ENOMEM;
		goto out;
	}
	for (uint32_t i = 0; i < p; i++)
		size[g->node[i]]++;
	uint32_t nh = 0;
	for (uint32_t x = 0, at = 0; x < nn; x++) {
		first[x] = at;
		at += size[x];
		if (size[x])
			h[nh++] = (struct hnode){x, size[x], first[x]};
	}
	{
		uint32_t *fill = calloc(nn, sizeof(uint32_t));
		if (!fill) {
			rc = -ENOMEM;
			goto out;
		}
		for (uint32_t i = 0; i < p; i++)
			members[first[g->node[i]] + fill[g->node[i]]++] = i;
		free(fill);
	}
	qsort(h, nh, sizeof(*h), by_order);
	uint32_t na = nh, lo = 0, done = 0, phase = 0, nsteps = 0;
	while (na) {
		/* A = h[lo .. nh), in <= order; the smallest size is h[lo] */
		uint32_t current = h[lo].size;
		for (uint32_t a = 0; a < na; a++)
			act[a] = lo + a;
		for (uint32_t i = 0; i < na; i++) {
			/* the steps of the round: the largest pair's; a node paired
			 * with itself sends each u's messages to the others (its
			 * m_uu is a copy, made before the first step) */
			uint32_t steps = 0;
			for (uint32_t a = 0; a < na; a++) {
				uint32_t b = (uint32_t)(((int64_t)i - a) % na + na) % na;
				if (a > b)
					continue;
				uint32_t n = (current - done) * (h[act[b]].size - (a == b));
				steps = n > steps ? n : steps;
			}
			for (uint32_t j = 0; j < steps; j++) {
				uint32_t st = a2a_step(pl, phase, i);
				nsteps++;
				for (uint32_t a = 0; a < na; a++) {
					uint32_t b = (uint32_t)(((int64_t)i - a) % na + na) % na;
					if (a > b)
						continue;
					const struct hnode *U = &h[act[a]], *V = &h[act[b]];
					uint32_t per = V->size - (a == b); /* messages of one u this round */
					if (j >= (current - done) * per)
						continue;
					uint32_t lu = done + j / per, lv = j % per;
					if (a == b && lv >= lu)
						lv++; /* not to itself */
					uint32_t u = members[U->first + lu];
					uint32_t v = members[V->first + lv];
					a2a_direct(pl, st, u, v);
					if (a != b)
						a2a_direct(pl, st, v, u);
				}
			}
		}
		done = current;
		while (lo < nh && h[lo].size == done)
			lo++;
		na = nh - lo;
		phase++;
	}
	/* every member's block for itself: a copy before the first step (a
	 * step of its own when there is no other, p = 1) */
	{
		uint32_t st0 = nsteps ? 0 : a2a_step(pl, 0, 0);
		for (uint32_t u = 0; u < p; u++)
			a2a_direct(pl, st0, u, u);
	}
out:
	free(size);
	free(first);
	free(members);
	free(h);
	free(act);
	return rc;
}

const struct a2a_algo a2a_hier_algo = {"hierarchical_factor", TORUS_ALGO_HIER_FACTOR, fits, build, 1};
