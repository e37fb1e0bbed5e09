/*
 * libtorusmpi: process topologies (MPI-1 chapter 6). Cartesian grids
 * (MPI_Dims_create, MPI_Cart_create, _get, _rank, _coords, _shift, _sub,
 * _map, MPI_Cartdim_get) and graphs (MPI_Graph_create, _get, _neighbors,
 * _neighbors_count, _map, MPI_Graphdims_get), and MPI_Topo_test.
 *
 * A topology is a communicator's attribute: the new communicator comes
 * from MPI_Comm_split (the grid's ranks, in the grid's order), and carries
 * its dimensions and periods, or its graph. MPI_Comm_dup copies it.
 *
 * On the torus: a grid of the world whose dimensions are the torus's, in
 * the same order, created with reorder, puts grid coordinate k on torus
 * dimension k, so that grid neighbours are torus neighbours, one link
 * apart (MPI's rank order runs the last dimension fastest, the torus's
 * the first). Without reorder the ranks keep their order; a grid of the
 * torus's dimensions in reverse order is then already aligned.
 */
#include "mpi_internal.h"

#include <stdlib.h>
#include <string.h>

static int topo_comm(MPI_Comm comm, const char *fn, int kind, struct mpi_comm **out)
{
	int size = 0;
	int rc = mpi_comm_check(comm, fn, &size);
	if (rc)
		return rc;
	*out = mpi_comm_of(comm);
	if (kind && (*out)->topo != kind)
		return mpi_error(comm, MPI_ERR_TOPOLOGY, fn, "communicator %d has no %s topology", comm,
				 kind == MPI_CART ? "Cartesian" : "graph");
	return MPI_SUCCESS;
}

/* Give the communicator h a copy of the topology (kind, n, a, b): a
 * grid's dims and periods, or a graph's index and edges (nb of them). */
static int topo_set(MPI_Comm h, int kind, int n, const int *a, const int *b, int nb)
{
	struct mpi_comm *cm = mpi_comm_of(h);
	int *x = malloc(((size_t)n + (size_t)nb) * sizeof(int) + 1);
	if (!x)
		return -1;
	memcpy(x, a, (size_t)n * sizeof(int));
	if (nb)
		memcpy(x + n, b, (size_t)nb * sizeof(int));
	free(cm->tdims);
	cm->topo = kind;
	cm->tn = n;
	cm->tnb = nb;
	cm->tdims = x;
	return 0;
}

int mpi_topo_copy(MPI_Comm from, MPI_Comm to)
{
	const struct mpi_comm *f = mpi_comm_of(from);
	if (!f->topo)
		return 0;
	return topo_set(to, f->topo, f->tn, f->tdims, f->tdims + f->tn, f->tnb);
}

/* ------------------------------------------------------------ Cartesian */

/* Rank of coordinates c in a grid (row-major: the last dimension fastest). */
static int grid_rank(int n, const int *dims, const int *c)
{
	int r = 0;
	for (int d = 0; d < n; d++)
		r = r * dims[d] + c[d];
	return r;
}

static void grid_coords(int n, const int *dims, int r, int *c)
{
	for (int d = n - 1; d >= 0; d--) {
		c[d] = r % dims[d];
		r /= dims[d];
	}
}

int MPI_Dims_create(int nnodes, int ndims, int dims[])
{
	MPI_API();
	const char *fn = "MPI_Dims_create";
	if (nnodes < 1 || ndims < 0 || (ndims && !dims))
		return mpi_error(MPI_COMM_WORLD, nnodes < 1 ? MPI_ERR_ARG : MPI_ERR_DIMS, fn,
				 "%d nodes in %d dimensions", nnodes, ndims);
	int left = nnodes, free_d = 0;
	for (int d = 0; d < ndims; d++) {
		if (dims[d] < 0)
			return mpi_error(MPI_COMM_WORLD, MPI_ERR_DIMS, fn, "dims[%d] = %d", d, dims[d]);
		if (dims[d]) {
			if (left % dims[d])
				return mpi_error(MPI_COMM_WORLD, MPI_ERR_DIMS, fn, "%d nodes do not divide by dims[%d] = %d",
						 nnodes, d, dims[d]);
			left /= dims[d];
		} else {
			free_d++;
		}
	}
	if (!free_d)
		return left == 1 ? MPI_SUCCESS
				 : mpi_error(MPI_COMM_WORLD, MPI_ERR_DIMS, fn, "the dimensions do not make %d nodes", nnodes);
	/* the free dimensions as equal as can be: each prime factor, largest
	 * first, to the smallest of them; then in non-increasing order */
	int *f = calloc((size_t)free_d, sizeof(int));
	if (!f)
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_INTERN, fn, "out of memory");
	for (int i = 0; i < free_d; i++)
		f[i] = 1;
	int primes[32], np = 0;
	for (int p = 2; (long)p * p <= left; p++)
		while (left % p == 0) {
			primes[np++] = p;
			left /= p;
		}
	if (left > 1)
		primes[np++] = left;
	for (int k = np - 1; k >= 0; k--) {
		int s = 0;
		for (int i = 1; i < free_d; i++)
			s = f[i] < f[s] ? i : s;
		f[s] *= primes[k];
	}
	for (int i = 0; i < free_d; i++) /* (a few numbers: insertion sort, largest first) */
		for (int j = i; j > 0 && f[j] > f[j - 1]; j--) {
			int t = f[j];
			f[j] = f[j - 1];
			f[j - 1] = t;
		}
	for (int d = 0, i = 0; d < ndims; d++)
		if (!dims[d])
			dims[d] = f[i++];
	free(f);
	return MPI_SUCCESS;
}

/* A grid's ranks, in *total; an error if a dimension is not positive or
 * the grid is larger than the communicator (size). */
static int grid_size(MPI_Comm comm, const char *fn, int ndims, const int *dims, int size, int *total)
{
	long long t = 1;
	for (int d = 0; d < ndims; d++) {
		if (dims[d] <= 0)
			return mpi_error(comm, MPI_ERR_DIMS, fn, "dims[%d] = %d", d, dims[d]);
		t *= dims[d];
		if (t > size)
			return mpi_error(comm, MPI_ERR_DIMS, fn, "the grid has more than the communicator's %d ranks", size);
	}
	*total = (int)t;
	return MPI_SUCCESS;
}

int MPI_Cart_create(MPI_Comm comm_old, int ndims, const int dims[], const int periods[], int reorder,
		    MPI_Comm *comm_cart)
{
	MPI_API();
	const char *fn = "MPI_Cart_create";
	struct mpi_comm *cm;
	int rc = topo_comm(comm_old, fn, 0, &cm);
	if (rc)
		return rc;
	if (ndims < 0 || (ndims && (!dims || !periods)) || !comm_cart)
		return mpi_error(comm_old, ndims < 0 ? MPI_ERR_DIMS : MPI_ERR_ARG, fn, "ndims %d or a NULL argument", ndims);
	int total = 0;
	if ((rc = grid_size(comm_old, fn, ndims, dims, cm->size, &total)))
		return rc;
	/* the key: the rank in the grid (MPI_Comm_split keeps the old order
	 * for equal keys) */
	int key = cm->rank;
	const struct torus_shape *s = emu_shape(mpi_g.c);
	int aligned = reorder && comm_old == MPI_COMM_WORLD && (uint32_t)ndims == s->ndims;
	for (int d = 0; aligned && d < ndims; d++)
		aligned = (uint32_t)dims[d] == s->dims[d];
	if (aligned) {
		uint32_t x[TORUS_MAX_DIMS];
		int c[TORUS_MAX_DIMS];
		torus_rank_to_coords(s, (uint32_t)mpi_g.rank, x);
		for (int d = 0; d < ndims; d++)
			c[d] = (int)x[d];
		key = grid_rank(ndims, dims, c);
	}
	MPI_Comm h;
	if ((rc = MPI_Comm_split(comm_old, key < total ? 0 : MPI_UNDEFINED, key, &h)))
		return rc;
	if (h != MPI_COMM_NULL) {
		if (topo_set(h, MPI_CART, ndims, dims, periods, ndims)) {
			MPI_Comm_free(&h);
			return mpi_error(comm_old, MPI_ERR_INTERN, fn, "out of memory");
		}
		for (int d = 0; d < ndims; d++) /* periods as 0 or 1 */
			mpi_comm_of(h)->tdims[ndims + d] = periods[d] != 0;
	}
	*comm_cart = h;
	return MPI_SUCCESS;
}

int MPI_Cartdim_get(MPI_Comm comm, int *ndims)
{
	MPI_API();
	struct mpi_comm *cm;
	int rc = topo_comm(comm, "MPI_Cartdim_get", MPI_CART, &cm);
	if (rc)
		return rc;
	if (!ndims)
		return mpi_error(comm, MPI_ERR_ARG, "MPI_Cartdim_get", "NULL ndims");
	*ndims = cm->tn;
	return MPI_SUCCESS;
}

int MPI_Cart_get(MPI_Comm comm, int maxdims, int dims[], int periods[], int coords[])
{
	MPI_API();
	struct mpi_comm *cm;
	int rc = topo_comm(comm, "MPI_Cart_get", MPI_CART, &cm);
	if (rc)
		return rc;
	if (maxdims < cm->tn || (cm->tn && (!dims || !periods || !coords)))
		return mpi_error(comm, MPI_ERR_ARG, "MPI_Cart_get", "maxdims %d of %d, or a NULL array", maxdims, cm->tn);
	grid_coords(cm->tn, cm->tdims, cm->rank, coords);
	for (int d = 0; d < cm->tn; d++) {
		dims[d] = cm->tdims[d];
		periods[d] = cm->tdims[cm->tn + d];
	}
	return MPI_SUCCESS;
}

int MPI_Cart_rank(MPI_Comm comm, const int coords[], int *rank)
{
	MPI_API();
	struct mpi_comm *cm;
	int rc = topo_comm(comm, "MPI_Cart_rank", MPI_CART, &cm);
	if (rc)
		return rc;
	if (!rank || (cm->tn && !coords))
		return mpi_error(comm, MPI_ERR_ARG, "MPI_Cart_rank", "NULL argument");
	int r = 0;
	for (int d = 0; d < cm->tn; d++) {
		int n = cm->tdims[d], c = coords[d];
		if (cm->tdims[cm->tn + d])
			c = (c % n + n) % n;
		else if (c < 0 || c >= n)
			return mpi_error(comm, MPI_ERR_ARG, "MPI_Cart_rank", "coordinate %d of dimension %d (size %d, not periodic)",
					 c, d, n);
		r = r * n + c;
	}
	*rank = r;
	return MPI_SUCCESS;
}

int MPI_Cart_coords(MPI_Comm comm, int rank, int maxdims, int coords[])
{
	MPI_API();
	struct mpi_comm *cm;
	int rc = topo_comm(comm, "MPI_Cart_coords", MPI_CART, &cm);
	if (rc)
		return rc;
	if (rank < 0 || rank >= cm->size)
		return mpi_error(comm, MPI_ERR_RANK, "MPI_Cart_coords", "rank %d (size %d)", rank, cm->size);
	if (maxdims < cm->tn || (cm->tn && !coords))
		return mpi_error(comm, MPI_ERR_ARG, "MPI_Cart_coords", "maxdims %d of %d, or NULL coords", maxdims, cm->tn);
	grid_coords(cm->tn, cm->tdims, rank, coords);
	return MPI_SUCCESS;
}

int MPI_Cart_shift(MPI_Comm comm, int direction, int disp, int *rank_source, int *rank_dest)
{
	MPI_API();
	struct mpi_comm *cm;
	int rc = topo_comm(comm, "MPI_Cart_shift", MPI_CART, &cm);
	if (rc)
		return rc;
	if (direction < 0 || direction >= cm->tn || !rank_source || !rank_dest)
		return mpi_error(comm, MPI_ERR_ARG, "MPI_Cart_shift", "direction %d of %d dimensions, or NULL", direction,
				 cm->tn);
	int c[32], n = cm->tdims[direction], per = cm->tdims[cm->tn + direction];
	if (cm->tn > 32)
		return mpi_error(comm, MPI_ERR_DIMS, "MPI_Cart_shift", "more than 32 dimensions");
	grid_coords(cm->tn, cm->tdims, cm->rank, c);
	int me = c[direction], out[2];
	for (int k = 0; k < 2; k++) {
		long long x = (long long)me + (k ? disp : -(long long)disp);
		if (per)
			x = (x % n + n) % n;
		if (x < 0 || x >= n) {
			out[k] = MPI_PROC_NULL;
		} else {
			c[direction] = (int)x;
			out[k] = grid_rank(cm->tn, cm->tdims, c);
		}
	}
	*rank_source = out[0];
	*rank_dest = out[1];
	return MPI_SUCCESS;
}

int MPI_Cart_sub(MPI_Comm comm, const int remain_dims[], MPI_Comm *newcomm)
{
	MPI_API();
	const char *fn = "MPI_Cart_sub";
	struct mpi_comm *cm;
	int rc = topo_comm(comm, fn, MPI_CART, &cm);
	if (rc)
		return rc;
	if ((cm->tn && !remain_dims) || !newcomm)
		return mpi_error(comm, MPI_ERR_ARG, fn, "NULL argument");
	if (cm->tn > 32)
		return mpi_error(comm, MPI_ERR_DIMS, fn, "more than 32 dimensions");
	/* color: the coordinates in the dimensions dropped; key: those kept */
	int c[32], color = 0, key = 0, n = 0, dims[32], per[32];
	grid_coords(cm->tn, cm->tdims, cm->rank, c);
	for (int d = 0; d < cm->tn; d++) {
		if (remain_dims[d]) {
			key = key * cm->tdims[d] + c[d];
			dims[n] = cm->tdims[d];
			per[n++] = cm->tdims[cm->tn + d];
		} else {
			color = color * cm->tdims[d] + c[d];
		}
	}
	MPI_Comm h;
	if ((rc = MPI_Comm_split(comm, color, key, &h)))
		return rc;
	/* (every dimension dropped: a grid of zero dimensions, of one rank) */
	if (topo_set(h, MPI_CART, n, dims, per, n)) {
		MPI_Comm_free(&h);
		return mpi_error(comm, MPI_ERR_INTERN, fn, "out of memory");
	}
	*newcomm = h;
	return MPI_SUCCESS;
}

int MPI_Cart_map(MPI_Comm comm, int ndims, const int dims[], const int periods[], int *newrank)
{
	MPI_API();
	struct mpi_comm *cm;
	int rc = topo_comm(comm, "MPI_Cart_map", 0, &cm);
	if (rc)
		return rc;
	(void)periods;
	if (ndims < 0 || (ndims && !dims) || !newrank)
		return mpi_error(comm, MPI_ERR_ARG, "MPI_Cart_map", "ndims %d or a NULL argument", ndims);
	int total = 0;
	if ((rc = grid_size(comm, "MPI_Cart_map", ndims, dims, cm->size, &total)))
		return rc;
	*newrank = cm->rank < total ? cm->rank : MPI_UNDEFINED;
	return MPI_SUCCESS;
}

/* ---------------------------------------------------------------- graphs */

int MPI_Graph_create(MPI_Comm comm_old, int nnodes, const int index[], const int edges[], int reorder,
		     MPI_Comm *comm_graph)
{
	MPI_API();
	const char *fn = "MPI_Graph_create";
	struct mpi_comm *cm;
	int rc = topo_comm(comm_old, fn, 0, &cm);
	if (rc)
		return rc;
	(void)reorder; /* the ranks keep their order */
	if (nnodes < 0 || nnodes > cm->size || (nnodes && (!index || !edges)) || !comm_graph)
		return mpi_error(comm_old, MPI_ERR_ARG, fn, "%d nodes of %d ranks, or a NULL argument", nnodes, cm->size);
	for (int i = 0; i < nnodes; i++)
		if (index[i] < (i ? index[i - 1] : 0))
			return mpi_error(comm_old, MPI_ERR_ARG, fn, "index[%d] = %d decreases", i, index[i]);
	int ne = nnodes ? index[nnodes - 1] : 0;
	for (int e = 0; e < ne; e++)
		if (edges[e] < 0 || edges[e] >= nnodes)
			return mpi_error(comm_old, MPI_ERR_ARG, fn, "edge %d goes to %d (%d nodes)", e, edges[e], nnodes);
	MPI_Comm h;
	if ((rc = MPI_Comm_split(comm_old, cm->rank < nnodes ? 0 : MPI_UNDEFINED, cm->rank, &h)))
		return rc;
	if (h != MPI_COMM_NULL && topo_set(h, MPI_GRAPH, nnodes, index, edges, ne)) {
		MPI_Comm_free(&h);
		return mpi_error(comm_old, MPI_ERR_INTERN, fn, "out of memory");
	}
	*comm_graph = h;
	return MPI_SUCCESS;
}

int MPI_Graphdims_get(MPI_Comm comm, int *nnodes, int *nedges)
{
	MPI_API();
	struct mpi_comm *cm;
	int rc = topo_comm(comm, "MPI_Graphdims_get", MPI_GRAPH, &cm);
	if (rc)
		return rc;
	if (!nnodes || !nedges)
		return mpi_error(comm, MPI_ERR_ARG, "MPI_Graphdims_get", "NULL argument");
	*nnodes = cm->tn;
	*nedges = cm->tnb;
	return MPI_SUCCESS;
}

int MPI_Graph_get(MPI_Comm comm, int maxindex, int maxedges, int index[], int edges[])
{
	MPI_API();
	struct mpi_comm *cm;
	int rc = topo_comm(comm, "MPI_Graph_get", MPI_GRAPH, &cm);
	if (rc)
		return rc;
	if (maxindex < 0 || maxedges < 0 || (maxindex && !index) || (maxedges && !edges))
		return mpi_error(comm, MPI_ERR_ARG, "MPI_Graph_get", "maxindex %d, maxedges %d, or NULL", maxindex, maxedges);
	for (int i = 0; i < maxindex && i < cm->tn; i++)
		index[i] = cm->tdims[i];
	for (int e = 0; e < maxedges && e < cm->tnb; e++)
		edges[e] = cm->tdims[cm->tn + e];
	return MPI_SUCCESS;
}

int MPI_Graph_neighbors_count(MPI_Comm comm, int rank, int *nneighbors)
{
	MPI_API();
	struct mpi_comm *cm;
	int rc = topo_comm(comm, "MPI_Graph_neighbors_count", MPI_GRAPH, &cm);
	if (rc)
		return rc;
	if (rank < 0 || rank >= cm->tn)
		return mpi_error(comm, MPI_ERR_RANK, "MPI_Graph_neighbors_count", "rank %d (%d nodes)", rank, cm->tn);
	if (!nneighbors)
		return mpi_error(comm, MPI_ERR_ARG, "MPI_Graph_neighbors_count", "NULL nneighbors");
	*nneighbors = cm->tdims[rank] - (rank ? cm->tdims[rank - 1] : 0);
	return MPI_SUCCESS;
}

int MPI_Graph_neighbors(MPI_Comm comm, int rank, int maxneighbors, int neighbors[])
{
	MPI_API();
	int n = 0;
	int rc = MPI_Graph_neighbors_count(comm, rank, &n);
	if (rc)
		return rc;
	struct mpi_comm *cm = mpi_comm_of(comm);
	if (maxneighbors < 0 || (maxneighbors && !neighbors))
		return mpi_error(comm, MPI_ERR_ARG, "MPI_Graph_neighbors", "maxneighbors %d or NULL", maxneighbors);
	int first = rank ? cm->tdims[rank - 1] : 0;
	for (int i = 0; i < n && i < maxneighbors; i++)
		neighbors[i] = cm->tdims[cm->tn + first + i];
	return MPI_SUCCESS;
}

int MPI_Graph_map(MPI_Comm comm, int nnodes, const int index[], const int edges[], int *newrank)
{
	MPI_API();
	struct mpi_comm *cm;
	int rc = topo_comm(comm, "MPI_Graph_map", 0, &cm);
	if (rc)
		return rc;
	(void)index;
	(void)edges;
	if (nnodes < 0 || nnodes > cm->size || !newrank)
		return mpi_error(comm, MPI_ERR_ARG, "MPI_Graph_map", "%d nodes of %d ranks, or NULL", nnodes, cm->size);
	*newrank = cm->rank < nnodes ? cm->rank : MPI_UNDEFINED;
	return MPI_SUCCESS;
}

int MPI_Topo_test(MPI_Comm comm, int *status)
{
	MPI_API();
	struct mpi_comm *cm;
	int rc = topo_comm(comm, "MPI_Topo_test", 0, &cm);
	if (rc)
		return rc;
	if (!status)
		return mpi_error(comm, MPI_ERR_ARG, "MPI_Topo_test", "NULL status");
	*status = cm->topo ? cm->topo : MPI_UNDEFINED;
	return MPI_SUCCESS;
}
