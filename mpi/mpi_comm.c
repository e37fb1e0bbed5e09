/*
 * libtorusmpi's groups and communicators. A group is a list of world ranks
 * (nodes); a communicator adds a context id, agreed by every member of the
 * parent through the barrier network's combining (the largest of their
 * next free ids: no member holds a communicator with it), and a team for
 * its collectives (coll_team_create over the members' core 0). Here too:
 * MPI_Comm_rank and MPI_Comm_size, communicators' set-up and release
 * (mpi_comm_new, mpi_comm_release), their predefined attributes and their
 * names.
 */
#include "mpi_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct mpi_group *group_of(MPI_Group g)
{
	return g > 0 && g < MPI_MAX_GROUPS && mpi_g.groups[g].used ? &mpi_g.groups[g] : NULL;
}

/* A new group of n world ranks (copied): its handle, or MPI_GROUP_NULL. */
static MPI_Group group_new(const uint32_t *world, int n)
{
	if (n == 0)
		return MPI_GROUP_EMPTY;
	int h = 2;
	while (h < MPI_MAX_GROUPS && mpi_g.groups[h].used)
		h++;
	if (h == MPI_MAX_GROUPS)
		return MPI_GROUP_NULL;
	uint32_t *w = malloc((size_t)n * sizeof(uint32_t));
	if (!w)
		return MPI_GROUP_NULL;
	memcpy(w, world, (size_t)n * sizeof(uint32_t));
	mpi_g.groups[h] = (struct mpi_group){1, n, w};
	return h;
}

#define GROUP(g, fn)                                                                                         \
	struct mpi_group *g##_ = group_of(g);                                                                 \
	if (mpi_g.state != 1)                                                                                 \
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_OTHER, fn, "MPI is not initialized");                \
	if (!g##_)                                                                                            \
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_GROUP, fn, "invalid group %d", g)

static int give(MPI_Group h, MPI_Group *out, const char *fn)
{
	if (h == MPI_GROUP_NULL)
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_INTERN, fn, "out of groups or memory");
	*out = h;
	return MPI_SUCCESS;
}

static int index_in(const struct mpi_group *g, uint32_t world)
{
	for (int i = 0; i < g->n; i++)
		if (g->world[i] == world)
			return i;
	return MPI_UNDEFINED;
}

int MPI_Comm_group(MPI_Comm comm, MPI_Group *group)
{
	MPI_API();
	int size = 0;
	int rc = mpi_comm_check(comm, "MPI_Comm_group", &size);
	if (rc)
		return rc;
	if (!group)
		return mpi_error(comm, MPI_ERR_ARG, "MPI_Comm_group", "NULL group");
	return give(group_new(mpi_comm_of(comm)->world, size), group, "MPI_Comm_group");
}

int MPI_Group_size(MPI_Group group, int *size)
{
	MPI_API();
	GROUP(group, "MPI_Group_size");
	if (!size)
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Group_size", "NULL size");
	*size = group_->n;
	return MPI_SUCCESS;
}

int MPI_Group_rank(MPI_Group group, int *rank)
{
	MPI_API();
	GROUP(group, "MPI_Group_rank");
	if (!rank)
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Group_rank", "NULL rank");
	*rank = index_in(group_, (uint32_t)mpi_g.rank);
	return MPI_SUCCESS;
}

int MPI_Group_free(MPI_Group *group)
{
	MPI_API();
	if (!group)
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Group_free", "NULL group");
	struct mpi_group *g = group_of(*group);
	if (!g)
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_GROUP, "MPI_Group_free", "invalid group %d", *group);
	if (*group != MPI_GROUP_EMPTY) {
		free(g->world);
		memset(g, 0, sizeof(*g));
	}
	*group = MPI_GROUP_NULL;
	return MPI_SUCCESS;
}

/* ranks[0..n) of g, each in range and once: -1 and a message, or 0 */
static int ranks_ok(const struct mpi_group *g, int n, const int ranks[], const char *fn)
{
	if (n < 0 || n > g->n || (n && !ranks))
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_ARG, fn, "bad rank list (%d ranks)", n);
	char *seen = calloc((size_t)g->n + 1, 1);
	if (!seen)
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_INTERN, fn, "out of memory");
	for (int i = 0; i < n; i++) {
		if (ranks[i] < 0 || ranks[i] >= g->n || seen[ranks[i]]++) {
			free(seen);
			return mpi_error(MPI_COMM_WORLD, MPI_ERR_RANK, fn, "rank %d is out of the group or repeated", ranks[i]);
		}
	}
	free(seen);
	return MPI_SUCCESS;
}

int MPI_Group_incl(MPI_Group group, int n, const int ranks[], MPI_Group *newgroup)
{
	MPI_API();
	GROUP(group, "MPI_Group_incl");
	int rc = ranks_ok(group_, n, ranks, "MPI_Group_incl");
	if (rc)
		return rc;
	uint32_t *w = malloc((size_t)n * sizeof(uint32_t) + 1);
	if (!w || !newgroup) {
		free(w);
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Group_incl", "NULL new group (or no memory)");
	}
	for (int i = 0; i < n; i++)
		w[i] = group_->world[ranks[i]];
	rc = give(group_new(w, n), newgroup, "MPI_Group_incl");
	free(w);
	return rc;
}

int MPI_Group_excl(MPI_Group group, int n, const int ranks[], MPI_Group *newgroup)
{
	MPI_API();
	GROUP(group, "MPI_Group_excl");
	int rc = ranks_ok(group_, n, ranks, "MPI_Group_excl");
	if (rc)
		return rc;
	char *out = calloc((size_t)group_->n + 1, 1);
	uint32_t *w = malloc((size_t)group_->n * sizeof(uint32_t) + 1);
	if (!out || !w || !newgroup) {
		free(out);
		free(w);
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Group_excl", "NULL new group (or no memory)");
	}
	for (int i = 0; i < n; i++)
		out[ranks[i]] = 1;
	int k = 0;
	for (int i = 0; i < group_->n; i++)
		if (!out[i])
			w[k++] = group_->world[i];
	rc = give(group_new(w, k), newgroup, "MPI_Group_excl");
	free(out);
	free(w);
	return rc;
}

/* The ranks of range triplets (first, last, stride), in order. */
static int range_ranks(const struct mpi_group *g, int n, int ranges[][3], int **out, int *count, const char *fn)
{
	if (n < 0 || (n && !ranges))
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_ARG, fn, "bad range list");
	int *r = malloc((size_t)g->n * sizeof(int) + 1), k = 0;
	if (!r)
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_INTERN, fn, "out of memory");
	for (int i = 0; i < n; i++) {
		int first = ranges[i][0], last = ranges[i][1], stride = ranges[i][2];
		if (!stride || first < 0 || first >= g->n || last < 0 || last >= g->n) {
			free(r);
			return mpi_error(MPI_COMM_WORLD, MPI_ERR_RANK, fn, "bad range (%d, %d, %d)", first, last, stride);
		}
		for (int x = first; stride > 0 ? x <= last : x >= last; x += stride) {
			if (k == g->n) {
				free(r);
				return mpi_error(MPI_COMM_WORLD, MPI_ERR_RANK, fn, "ranges name a rank twice");
			}
			r[k++] = x;
		}
	}
	*out = r;
	*count = k;
	return MPI_SUCCESS;
}

int MPI_Group_range_incl(MPI_Group group, int n, int ranges[][3], MPI_Group *newgroup)
{
	MPI_API();
	GROUP(group, "MPI_Group_range_incl");
	int *r, k;
	int rc = range_ranks(group_, n, ranges, &r, &k, "MPI_Group_range_incl");
	if (rc)
		return rc;
	rc = MPI_Group_incl(group, k, r, newgroup);
	free(r);
	return rc;
}

int MPI_Group_range_excl(MPI_Group group, int n, int ranges[][3], MPI_Group *newgroup)
{
	MPI_API();
	GROUP(group, "MPI_Group_range_excl");
	int *r, k;
	int rc = range_ranks(group_, n, ranges, &r, &k, "MPI_Group_range_excl");
	if (rc)
		return rc;
	rc = MPI_Group_excl(group, k, r, newgroup);
	free(r);
	return rc;
}

/* union (0), intersection (1), difference (2), in MPI's order */
static int setop(MPI_Group g1, MPI_Group g2, MPI_Group *newgroup, int op, const char *fn)
{
	GROUP(g1, fn);
	GROUP(g2, fn);
	if (!newgroup)
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_ARG, fn, "NULL new group");
	uint32_t *w = malloc(((size_t)g1_->n + (size_t)g2_->n) * sizeof(uint32_t) + 1);
	if (!w)
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_INTERN, fn, "out of memory");
	int k = 0;
	for (int i = 0; i < g1_->n; i++) {
		int in2 = index_in(g2_, g1_->world[i]) != MPI_UNDEFINED;
		if (op == 0 || (op == 1 && in2) || (op == 2 && !in2))
			w[k++] = g1_->world[i];
	}
	if (op == 0)
		for (int i = 0; i < g2_->n; i++)
			if (index_in(g1_, g2_->world[i]) == MPI_UNDEFINED)
				w[k++] = g2_->world[i];
	int rc = give(group_new(w, k), newgroup, fn);
	free(w);
	return rc;
}

int MPI_Group_union(MPI_Group group1, MPI_Group group2, MPI_Group *newgroup)
{
	MPI_API();
	return setop(group1, group2, newgroup, 0, "MPI_Group_union");
}

int MPI_Group_intersection(MPI_Group group1, MPI_Group group2, MPI_Group *newgroup)
{
	MPI_API();
	return setop(group1, group2, newgroup, 1, "MPI_Group_intersection");
}

int MPI_Group_difference(MPI_Group group1, MPI_Group group2, MPI_Group *newgroup)
{
	MPI_API();
	return setop(group1, group2, newgroup, 2, "MPI_Group_difference");
}

int MPI_Group_translate_ranks(MPI_Group group1, int n, const int ranks1[], MPI_Group group2, int ranks2[])
{
	MPI_API();
	GROUP(group1, "MPI_Group_translate_ranks");
	GROUP(group2, "MPI_Group_translate_ranks");
	if (n < 0 || (n && (!ranks1 || !ranks2)))
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Group_translate_ranks", "bad rank arrays");
	for (int i = 0; i < n; i++) {
		if (ranks1[i] == MPI_PROC_NULL) {
			ranks2[i] = MPI_PROC_NULL;
			continue;
		}
		if (ranks1[i] < 0 || ranks1[i] >= group1_->n)
			return mpi_error(MPI_COMM_WORLD, MPI_ERR_RANK, "MPI_Group_translate_ranks", "rank %d", ranks1[i]);
		ranks2[i] = index_in(group2_, group1_->world[ranks1[i]]);
	}
	return MPI_SUCCESS;
}

static int compare_lists(const uint32_t *a, int na, const uint32_t *b, int nb)
{
	if (na != nb)
		return MPI_UNEQUAL;
	if (!na || !memcmp(a, b, (size_t)na * sizeof(uint32_t)))
		return MPI_IDENT;
	for (int i = 0; i < na; i++) {
		int found = 0;
		for (int j = 0; j < nb && !found; j++)
			found = a[i] == b[j];
		if (!found)
			return MPI_UNEQUAL;
	}
	return MPI_SIMILAR;
}

int MPI_Group_compare(MPI_Group group1, MPI_Group group2, int *result)
{
	MPI_API();
	GROUP(group1, "MPI_Group_compare");
	GROUP(group2, "MPI_Group_compare");
	if (!result)
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Group_compare", "NULL result");
	*result = compare_lists(group1_->world, group1_->n, group2_->world, group2_->n);
	return MPI_SUCCESS;
}

/* ---------------------------------------------------------- communicators */

/* A context id every member of comm agrees on (all of them call). */
static int agree_ctx(MPI_Comm comm, uint32_t *ctx)
{
	struct mpi_comm *cm = mpi_comm_of(comm);
	uint32_t got;
	int rc = dma_barrier_team_max(mpi_g.c, cm->members, (size_t)cm->size, mpi_g.next_ctx, &got);
	if (rc)
		return rc;
	if (got >= 65535)
		return -ENOSPC; /* short messages carry 16 bits of it */
	*ctx = got;
	mpi_g.next_ctx = got + 1;
	return 0;
}

/* The new communicator of world ranks w[0..n) if this rank is among them. */
static int make(MPI_Comm parent, const uint32_t *w, int n, uint32_t ctx, MPI_Comm *newcomm, const char *fn)
{
	int me = MPI_UNDEFINED;
	for (int i = 0; i < n; i++)
		if (w[i] == (uint32_t)mpi_g.rank)
			me = i;
	if (me == MPI_UNDEFINED) {
		*newcomm = MPI_COMM_NULL;
		return MPI_SUCCESS;
	}
	MPI_Comm h = mpi_comm_new(w, n, me, ctx, mpi_comm_of(parent)->eh);
	if (h == MPI_COMM_NULL)
		return mpi_error(parent, MPI_ERR_INTERN, fn, "out of communicators or memory");
	*newcomm = h;
	return MPI_SUCCESS;
}

int MPI_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm)
{
	MPI_API();
	int size = 0;
	int rc = mpi_comm_check(comm, "MPI_Comm_dup", &size);
	if (rc)
		return rc;
	if (!newcomm)
		return mpi_error(comm, MPI_ERR_ARG, "MPI_Comm_dup", "NULL new communicator");
	uint32_t ctx;
	if (agree_ctx(comm, &ctx))
		return mpi_error(comm, MPI_ERR_INTERN, "MPI_Comm_dup", "no context id");
	if ((rc = make(comm, mpi_comm_of(comm)->world, size, ctx, newcomm, "MPI_Comm_dup")))
		return rc;
	if (mpi_topo_copy(comm, *newcomm)) {
		MPI_Comm_free(newcomm);
		return mpi_error(comm, MPI_ERR_INTERN, "MPI_Comm_dup", "out of memory");
	}
	return MPI_SUCCESS;
}

int MPI_Comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm *newcomm)
{
	MPI_API();
	int size = 0;
	int rc = mpi_comm_check(comm, "MPI_Comm_create", &size);
	if (rc)
		return rc;
	struct mpi_group *g = group_of(group);
	if (!g)
		return mpi_error(comm, MPI_ERR_GROUP, "MPI_Comm_create", "invalid group %d", group);
	if (!newcomm)
		return mpi_error(comm, MPI_ERR_ARG, "MPI_Comm_create", "NULL new communicator");
	struct mpi_comm *cm = mpi_comm_of(comm);
	for (int i = 0; i < g->n; i++) {
		int in = 0;
		for (int j = 0; j < size && !in; j++)
			in = cm->world[j] == g->world[i];
		if (!in)
			return mpi_error(comm, MPI_ERR_GROUP, "MPI_Comm_create", "the group is not a subset of the communicator's");
	}
	uint32_t ctx;
	if (agree_ctx(comm, &ctx))
		return mpi_error(comm, MPI_ERR_INTERN, "MPI_Comm_create", "no context id");
	return make(comm, g->world, g->n, ctx, newcomm, "MPI_Comm_create");
}

struct split_key {
	int color, key, rank;
};

static int by_key(const void *a, const void *b)
{
	const struct split_key *x = a, *y = b;
	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->rank < y->rank ? -1 : x->rank > y->rank;
}

int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *newcomm)
{
	MPI_API();
	int size = 0;
	int rc = mpi_comm_check(comm, "MPI_Comm_split", &size);
	if (rc)
		return rc;
	if (!newcomm)
		return mpi_error(comm, MPI_ERR_ARG, "MPI_Comm_split", "NULL new communicator");
	if (color < 0 && color != MPI_UNDEFINED)
		return mpi_error(comm, MPI_ERR_ARG, "MPI_Comm_split", "negative color %d", color);
	struct mpi_comm *cm = mpi_comm_of(comm);
	int mine[2] = {color, key}, *all = malloc((size_t)size * 2 * sizeof(int));
	struct split_key *sel = malloc((size_t)size * sizeof(*sel));
	uint32_t *w = malloc((size_t)size * sizeof(uint32_t));
	if (!all || !sel || !w) {
		free(all);
		free(sel);
		free(w);
		return mpi_error(comm, MPI_ERR_INTERN, "MPI_Comm_split", "out of memory");
	}
	rc = MPI_Allgather(mine, 2, MPI_INT, all, 2, MPI_INT, comm);
	uint32_t ctx = 0;
	if (!rc && agree_ctx(comm, &ctx))
		rc = mpi_error(comm, MPI_ERR_INTERN, "MPI_Comm_split", "no context id");
	int n = 0;
	for (int i = 0; !rc && color != MPI_UNDEFINED && i < size; i++)
		if (all[2 * i] == color)
			sel[n++] = (struct split_key){color, all[2 * i + 1], i};
	qsort(sel, (size_t)n, sizeof(*sel), by_key);
	for (int i = 0; i < n; i++)
		w[i] = cm->world[sel[i].rank];
	if (!rc)
		rc = color == MPI_UNDEFINED ? (*newcomm = MPI_COMM_NULL, MPI_SUCCESS)
					    : make(comm, w, n, ctx, newcomm, "MPI_Comm_split");
	free(all);
	free(sel);
	free(w);
	return rc;
}

int MPI_Comm_free(MPI_Comm *comm)
{
	MPI_API();
	if (!comm)
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Comm_free", "NULL communicator");
	struct mpi_comm *cm = mpi_comm_of(*comm);
	if (!cm || *comm == MPI_COMM_WORLD || *comm == MPI_COMM_SELF)
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_COMM, "MPI_Comm_free", "communicator %d cannot be freed", *comm);
	mpi_comm_release(cm);
	*comm = MPI_COMM_NULL;
	return MPI_SUCCESS;
}

int MPI_Comm_compare(MPI_Comm comm1, MPI_Comm comm2, int *result)
{
	MPI_API();
	struct mpi_comm *a = mpi_comm_of(comm1), *b = mpi_comm_of(comm2);
	if (!a || !b)
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_COMM, "MPI_Comm_compare", "invalid communicator");
	if (!result)
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Comm_compare", "NULL result");
	int c = compare_lists(a->world, a->size, b->world, b->size);
	*result = comm1 == comm2 ? MPI_IDENT : c == MPI_IDENT ? MPI_CONGRUENT : c;
	return MPI_SUCCESS;
}

/* ------------------------------------------------- communicators: the basics */

int MPI_Comm_rank(MPI_Comm comm, int *rank)
{
	MPI_API();
	int size = 0;
	int rc = mpi_comm_check(comm, "MPI_Comm_rank", &size);
	if (rc)
		return rc;
	if (!rank)
		return mpi_error(comm, MPI_ERR_ARG, "MPI_Comm_rank", "NULL rank");
	*rank = mpi_comm_of(comm)->rank;
	return MPI_SUCCESS;
}

int MPI_Comm_size(MPI_Comm comm, int *size)
{
	MPI_API();
	int n = 0;
	int rc = mpi_comm_check(comm, "MPI_Comm_size", &n);
	if (rc)
		return rc;
	if (!size)
		return mpi_error(comm, MPI_ERR_ARG, "MPI_Comm_size", "NULL size");
	*size = n;
	return MPI_SUCCESS;
}

int mpi_comm_check(MPI_Comm comm, const char *fn, int *size)
{
	if (mpi_g.state != 1)
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_OTHER, fn, "MPI is not initialized (or is finalized)");
	struct mpi_comm *cm = mpi_comm_of(comm);
	if (!cm)
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_COMM, fn, "invalid communicator %d", comm);
	*size = cm->size;
	return MPI_SUCCESS;
}

MPI_Comm mpi_comm_new(const uint32_t *world, int n, int rank, uint32_t ctx, MPI_Errhandler eh)
{
	int h = 1;
	while (h < MPI_MAX_COMMS && mpi_g.comms[h].used)
		h++;
	if (h == MPI_MAX_COMMS)
		return MPI_COMM_NULL;
	struct mpi_comm *cm = &mpi_g.comms[h];
	memset(cm, 0, sizeof(*cm));
	cm->world = calloc((size_t)n + 1, sizeof(uint32_t));
	cm->members = calloc((size_t)n + 1, sizeof(uint32_t));
	if (!cm->world || !cm->members) {
		free(cm->world);
		free(cm->members);
		return MPI_COMM_NULL;
	}
	for (int i = 0; i < n; i++) {
		cm->world[i] = world[i];
		uint32_t g = 0;
		for (uint32_t x = 0; x < world[i]; x++)
			g += emu_cores_of(mpi_g.c, x);
		cm->members[i] = g; /* core 0 of node world[i] */
	}
	cm->ctx = ctx;
	cm->size = n;
	cm->rank = rank;
	cm->eh = eh;
	if (coll_team_create(mpi_g.c, cm->members, (size_t)n, &cm->team)) {
		free(cm->world);
		free(cm->members);
		return MPI_COMM_NULL;
	}
	/* the node team, if every member node has cores to spare: the same
	 * on every member, whose helpers make their own handles */
	uint32_t cores = UINT32_MAX;
	for (int i = 0; i < n; i++) {
		uint32_t k = emu_cores_of(mpi_g.c, world[i]);
		cores = k < cores ? k : cores;
	}
	cm->used = 1;
	if (n > 1 && cores > 1) {
		struct mpi_help job = {.h = h, .nodes = cm->world, .n = (size_t)n, .cores = cores};
		if (mpi_help(MPI_HELP_TEAM, &job) || coll_team_create_nodes(mpi_g.c, cm->world, (size_t)n, cores, &cm->nteam)) {
			mpi_comm_release(cm);
			return MPI_COMM_NULL;
		}
		cm->ncores = cores;
	}
	return h;
}

void mpi_comm_release(struct mpi_comm *cm)
{
	if (cm->nteam || cm->ncores) {
		struct mpi_help job = {.h = (MPI_Comm)(cm - mpi_g.comms)};
		mpi_help(MPI_HELP_FREE, &job);
		coll_team_free(cm->nteam);
	}
	coll_team_free(cm->team);
	free(cm->world);
	free(cm->members);
	free(cm->tdims);
	memset(cm, 0, sizeof(*cm));
}

/* The predefined attributes (user keyvals are not there: MPI_Keyval_create
 * and MPI_Comm_create_keyval do not link). */
int MPI_Comm_get_attr(MPI_Comm comm, int keyval, void *attribute_val, int *flag)
{
	MPI_API();
	static const int tag_ub = MPI_TAG_UB_VALUE, host = MPI_PROC_NULL, io = MPI_ANY_SOURCE, wtime_global = 0;
	int size = 0;
	int rc = mpi_comm_check(comm, "MPI_Comm_get_attr", &size);
	if (rc)
		return rc;
	if (!attribute_val || !flag)
		return mpi_error(comm, MPI_ERR_ARG, "MPI_Comm_get_attr", "NULL attribute_val or flag");
	const int *v = keyval == MPI_TAG_UB ? &tag_ub
		       : keyval == MPI_HOST ? &host
		       : keyval == MPI_IO ? &io
		       : keyval == MPI_WTIME_IS_GLOBAL ? &wtime_global
						       : NULL;
	if (!v)
		return mpi_error(comm, MPI_ERR_ARG, "MPI_Comm_get_attr", "keyval %d: only the predefined ones are there",
				 keyval);
	*(const int **)attribute_val = v;
	*flag = 1;
	return MPI_SUCCESS;
}

int MPI_Attr_get(MPI_Comm comm, int keyval, void *attribute_val, int *flag)
{
	MPI_API();
	return MPI_Comm_get_attr(comm, keyval, attribute_val, flag);
}

int MPI_Comm_set_name(MPI_Comm comm, const char *comm_name)
{
	MPI_API();
	int size = 0;
	int rc = mpi_comm_check(comm, "MPI_Comm_set_name", &size);
	if (rc)
		return rc;
	if (!comm_name)
		return mpi_error(comm, MPI_ERR_ARG, "MPI_Comm_set_name", "NULL name");
	struct mpi_comm *cm = mpi_comm_of(comm);
	snprintf(cm->name, sizeof(cm->name), "%s", comm_name);
	return MPI_SUCCESS;
}

int MPI_Comm_get_name(MPI_Comm comm, char *comm_name, int *resultlen)
{
	MPI_API();
	int size = 0;
	int rc = mpi_comm_check(comm, "MPI_Comm_get_name", &size);
	if (rc)
		return rc;
	if (!comm_name || !resultlen)
		return mpi_error(comm, MPI_ERR_ARG, "MPI_Comm_get_name", "NULL name or length");
	const struct mpi_comm *cm = mpi_comm_of(comm);
	const char *n = cm->name[0] ? cm->name
			: comm == MPI_COMM_WORLD ? "MPI_COMM_WORLD"
			: comm == MPI_COMM_SELF	 ? "MPI_COMM_SELF"
						 : "";
	*resultlen = snprintf(comm_name, MPI_MAX_OBJECT_NAME, "%s", n);
	return MPI_SUCCESS;
}
