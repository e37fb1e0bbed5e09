/* Teams: ordered lists of cores, like communicators. */
#include "../coll_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int coll_team_create(emu_core_t *c, const uint32_t *members, size_t n, coll_team_t **out)
{
	if (!c || !members || !out || n == 0 || n > emu_core_total(c))
		return -EINVAL;
	int rc0 = coll_exchange_init(c);
	if (rc0)
		return rc0;
	coll_team_t *t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->members = malloc(n * sizeof(uint32_t));
	t->leads = t->members;
	t->node = malloc(n * sizeof(uint32_t));
	t->cpu = malloc(n * sizeof(uint32_t));
	int rc = -EINVAL;
	if (!t->members || !t->node || !t->cpu) {
		rc = -ENOMEM;
		goto fail;
	}
	t->core = c;
	t->cores = 1;
	t->nmembers = (uint32_t)n;
	t->size = (uint32_t)n;
	t->rank = UINT32_MAX;
	t->key = 1469598103934665603ull ^ n;
	for (size_t i = 0; i < n; i++) {
		if (emu_core_locate(c, members[i], &t->node[i], &t->cpu[i]))
			goto fail;
		for (size_t k = 0; k < i; k++)
			if (members[k] == members[i])
				goto fail;
		t->members[i] = members[i];
		if (members[i] == emu_core_global(c))
			t->rank = (uint32_t)i;
		t->key = (t->key ^ members[i]) * 1099511628211ull;
	}
	if (t->rank == UINT32_MAX)
		goto fail;
	*out = t;
	return 0;
fail:
	coll_team_free(t);
	return rc;
}

/* 0, 1, ..., n-1: every core or every node, in order (NULL if out of memory). */
static uint32_t *all_of(uint32_t n)
{
	uint32_t *m = malloc((n ? n : 1) * sizeof(uint32_t));
	for (uint32_t i = 0; m && i < n; i++)
		m[i] = i;
	return m;
}

int coll_team_world(emu_core_t *c, coll_team_t **out)
{
	if (!c || !out)
		return -EINVAL;
	uint32_t *m = all_of(emu_core_total(c));
	if (!m)
		return -ENOMEM;
	int rc = coll_team_create(c, m, emu_core_total(c), out);
	free(m);
	return rc;
}

int coll_team_create_nodes(emu_core_t *c, const uint32_t *nodes, size_t n, uint32_t cores, coll_team_t **out)
{
	if (!c || !nodes || !out || n == 0 || n > emu_node_count(c))
		return -EINVAL;
	uint32_t k = cores ? cores : emu_cores_of(c, nodes[0]);
	for (size_t i = 0; i < n; i++) {
		uint32_t have = emu_cores_of(c, nodes[i]); /* 0 for a bad node */
		if (!have || (cores ? k > have : k != have))
			return -EINVAL;
		for (size_t j = 0; j < i; j++)
			if (nodes[j] == nodes[i])
				return -EINVAL;
	}
	if (emu_core_index(c) >= k)
		return -EINVAL; /* the caller is not one of the team's cores */
	int rc0 = coll_exchange_init(c);
	if (rc0)
		return rc0;
	coll_team_t *t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->members = malloc(n * k * sizeof(uint32_t));
	t->leads = malloc(n * sizeof(uint32_t));
	t->node = malloc(n * sizeof(uint32_t));
	t->cpu = calloc(n, sizeof(uint32_t));
	if (!t->members || !t->leads || !t->node || !t->cpu) {
		coll_team_free(t);
		return -ENOMEM;
	}
	t->core = c;
	t->cores = k;
	t->sub = emu_core_index(c);
	t->size = (uint32_t)n;
	t->nmembers = (uint32_t)(n * k);
	t->rank = UINT32_MAX;
	t->key = (1469598103934665603ull ^ n) * 31 + k;
	uint32_t first = emu_core_global(c) - emu_core_index(c);
	/* global ranks are node-major: node x's core 0 follows the cores of nodes < x */
	uint32_t nn = emu_node_count(c);
	uint32_t *first_of = malloc(nn * sizeof(uint32_t));
	if (!first_of) {
		coll_team_free(t);
		return -ENOMEM;
	}
	for (uint32_t x = 0, g = 0; x < nn; g += emu_cores_of(c, x), x++)
		first_of[x] = g;
	for (size_t i = 0; i < n; i++) {
		uint32_t g0 = first_of[nodes[i]];
		t->node[i] = nodes[i];
		t->leads[i] = g0;
		for (uint32_t j = 0; j < k; j++)
			t->members[i * k + j] = g0 + j;
		if (g0 == first)
			t->rank = (uint32_t)i;
		t->key = (t->key ^ nodes[i]) * 1099511628211ull;
	}
	free(first_of);
	if (t->rank == UINT32_MAX) {
		coll_team_free(t);
		return -EINVAL;
	}
	*out = t;
	return 0;
}

int coll_team_nodes(emu_core_t *c, uint32_t cores, coll_team_t **out)
{
	if (!c || !out)
		return -EINVAL;
	uint32_t *m = all_of(emu_node_count(c));
	if (!m)
		return -ENOMEM;
	int rc = coll_team_create_nodes(c, m, emu_node_count(c), cores, out);
	free(m);
	return rc;
}

int coll_team_set_trace_tag(coll_team_t *t, unsigned coll)
{
	if (!t || coll > 15)
		return -EINVAL;
	t->tag_force = coll;
	return 0;
}

void coll_team_free(coll_team_t *t)
{
	if (!t)
		return;
	if (t->leads != t->members)
		free(t->leads);
	free(t->members);
	free(t->node);
	free(t->cpu);
	coll_multicolor_release(t);
	coll_scratch_release(t);
	free(t);
}

uint32_t coll_team_size(const coll_team_t *t) { return t ? t->size : 0; }
uint32_t coll_team_rank(const coll_team_t *t) { return t ? t->rank : 0; }
uint32_t coll_team_cores(const coll_team_t *t) { return t ? t->cores : 0; }

int coll_blocks_init(struct coll_blocks *b, uint32_t p, size_t total, size_t per_member)
{
	b->counts = malloc(p * sizeof(size_t));
	b->displs = malloc(p * sizeof(size_t));
	b->max = 0;
	if (!b->counts || !b->displs) {
		coll_blocks_free(b);
		return -ENOMEM;
	}
	size_t off = 0;
	for (uint32_t i = 0; i < p; i++) {
		b->counts[i] = per_member ? per_member : total / p + (i < total % p);
		b->displs[i] = off;
		off += b->counts[i];
		if (b->counts[i] > b->max)
			b->max = b->counts[i];
	}
	return 0;
}

void coll_blocks_free(struct coll_blocks *b)
{
	free(b->counts);
	free(b->displs);
	b->counts = b->displs = NULL;
}
