/*
 * mpi_conform: the MPI standard's edge cases, call by call, for the MPI-1
 * calls the front end has (README.md). An ordinary MPI program, built by
 * torusmpicc and run by test_mpi on 1 to 16 ranks and on uneven core maps.
 * Every check is an assertion that can fail; the program prints one line
 * per failed check and, on rank 0, "conform: all passed: N checks" or
 * "conform: F of N checks FAILED", and exits 1 if any failed.
 *
 * Sections (`mpi_conform [SECTION...]` runs some; none: all):
 *   zero      zero counts with NULL and MPI_BOTTOM buffers, in every
 *             point-to-point call and every collective;
 *   inplace   MPI_IN_PLACE, and the arguments the standard says are
 *             ignored given as garbage (negative counts, MPI_DATATYPE_NULL,
 *             NULL): every collective, results checked;
 *   persist   persistent and inactive requests: statuses of requests never
 *             started, completed, or null, through every wait and test;
 *   elements  MPI_Get_count and MPI_Get_elements on derived types, whole
 *             and partly received;
 *   probe     bursts of unexpected messages found by MPI_Probe and
 *             MPI_Iprobe from any source and tag; probe then receive;
 *             cancel;
 *   comm      communicators, groups and grids at their edges: a split with
 *             MPI_UNDEFINED, reversed keys, compare, a duplicate's own
 *             messages, empty groups and non-members, Comm_create and a grid
 *             outside which ranks get MPI_COMM_NULL, shifts off an open edge,
 *             MPI_PROC_NULL both ways, a freed active send, packing nothing,
 *             an empty type, the environment's attributes and clocks;
 *   misc      graph and Cartesian topologies (a graph of fewer ranks, a
 *             wrapped coordinate, a sub-grid keeping nothing), a user error
 *             handler, the predefined attributes, names and version, Pack
 *             and Unpack (and a buffer too small), the attached buffer
 *             (twice, detached, none), a user operation that does not
 *             commute, Reduce_local;
 *   errors    every error class, each from a call that must give it
 *             (MPI_ERRORS_RETURN), and MPI_Error_class/_string on each.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size, checks, failed;

#define CK(cond, ...)                                                                          \
	do {                                                                                   \
		checks++;                                                                      \
		if (!(cond)) {                                                                 \
			failed++;                                                              \
			printf("rank %d: FAILED line %d: %s: ", rank, __LINE__, #cond);        \
			printf(__VA_ARGS__);                                                   \
			printf("\n");                                                          \
			fflush(stdout);                                                        \
		}                                                                              \
	} while (0)

static int count_of(const MPI_Status *st, MPI_Datatype t)
{
	int n = -99;
	MPI_Get_count(st, t, &n);
	return n;
}

/* ------------------------------------------------------------------ zero */

static void zero_p2p(void)
{
	int to = (rank + 1) % size, from = (rank + size - 1) % size;
	MPI_Status st;
	int rc;
	static char bsend_buf[4096];
	/* blocking pairs: every rank sends to its successor and receives from
	 * its predecessor, in an order that cannot deadlock (rank 0 receives
	 * last) */
	void *const bufs[2] = {NULL, MPI_BOTTOM};
	for (int b = 0; b < 2; b++) {
		for (int kind = 0; kind < 4; kind++) {
			int tag = 10 + kind;
			if (size == 1) {
				/* to ourselves: nonblocking receive first */
				MPI_Request r;
				rc = MPI_Irecv(bufs[b], 0, MPI_INT, 0, tag, MPI_COMM_WORLD, &r);
				CK(rc == MPI_SUCCESS, "Irecv of 0 from self: %d", rc);
				rc = kind == 0 ? MPI_Send(bufs[b], 0, MPI_INT, 0, tag, MPI_COMM_WORLD)
				     : kind == 1 ? MPI_Ssend(bufs[b], 0, MPI_INT, 0, tag, MPI_COMM_WORLD)
				     : kind == 2 ? MPI_Rsend(bufs[b], 0, MPI_INT, 0, tag, MPI_COMM_WORLD)
						 : (MPI_Buffer_attach(bsend_buf, sizeof(bsend_buf)),
						    MPI_Bsend(bufs[b], 0, MPI_INT, 0, tag, MPI_COMM_WORLD));
				CK(rc == MPI_SUCCESS, "send kind %d of 0 to self: %d", kind, rc);
				rc = MPI_Wait(&r, &st);
				CK(rc == MPI_SUCCESS && count_of(&st, MPI_INT) == 0 && st.MPI_SOURCE == 0 && st.MPI_TAG == tag,
				   "wait for 0 from self: %d count %d", rc, count_of(&st, MPI_INT));
				if (kind == 3) {
					void *p;
					int n;
					MPI_Buffer_detach(&p, &n);
				}
				continue;
			}
			if (kind == 3)
				MPI_Buffer_attach(bsend_buf, sizeof(bsend_buf));
			if (kind == 2) {
				/* ready send: the receive must be posted first */
				MPI_Request r;
				MPI_Irecv(bufs[b], 0, MPI_INT, from, tag, MPI_COMM_WORLD, &r);
				MPI_Barrier(MPI_COMM_WORLD);
				rc = MPI_Rsend(bufs[b], 0, MPI_INT, to, tag, MPI_COMM_WORLD);
				CK(rc == MPI_SUCCESS, "Rsend of 0: %d", rc);
				rc = MPI_Wait(&r, &st);
				CK(rc == MPI_SUCCESS && count_of(&st, MPI_INT) == 0 && st.MPI_SOURCE == from,
				   "Rsend's receive: %d", rc);
				continue;
			}
			for (int turn = 0; turn < 2; turn++) {
				if ((rank == 0) == (turn == 1)) {
					rc = kind == 0 ? MPI_Send(bufs[b], 0, MPI_INT, to, tag, MPI_COMM_WORLD)
					     : kind == 1 ? MPI_Ssend(bufs[b], 0, MPI_INT, to, tag, MPI_COMM_WORLD)
							 : MPI_Bsend(bufs[b], 0, MPI_INT, to, tag, MPI_COMM_WORLD);
					CK(rc == MPI_SUCCESS, "send kind %d of 0 (buffer %s): %d", kind, b ? "MPI_BOTTOM" : "NULL", rc);
				} else {
					memset(&st, 0x5a, sizeof(st));
					rc = MPI_Recv(bufs[b], 0, MPI_INT, from, tag, MPI_COMM_WORLD, &st);
					CK(rc == MPI_SUCCESS && count_of(&st, MPI_INT) == 0 && st.MPI_SOURCE == from &&
						   st.MPI_TAG == tag && st.MPI_ERROR == MPI_SUCCESS,
					   "Recv of 0 after send kind %d: %d, count %d source %d tag %d", kind, rc,
					   count_of(&st, MPI_INT), st.MPI_SOURCE, st.MPI_TAG);
				}
			}
			if (kind == 3) {
				void *p;
				int n;
				MPI_Buffer_detach(&p, &n);
			}
		}
		/* Sendrecv, Sendrecv_replace, and the nonblocking forms */
		rc = MPI_Sendrecv(bufs[b], 0, MPI_INT, to, 20, bufs[b], 0, MPI_INT, from, 20, MPI_COMM_WORLD, &st);
		CK(rc == MPI_SUCCESS && count_of(&st, MPI_INT) == 0 && st.MPI_SOURCE == from, "Sendrecv of 0: %d", rc);
		rc = MPI_Sendrecv_replace(bufs[b], 0, MPI_INT, to, 21, from, 21, MPI_COMM_WORLD, &st);
		CK(rc == MPI_SUCCESS && count_of(&st, MPI_INT) == 0, "Sendrecv_replace of 0: %d", rc);
		MPI_Request r[5];
		MPI_Buffer_attach(bsend_buf, sizeof(bsend_buf));
		rc = MPI_Irecv(bufs[b], 0, MPI_DOUBLE, from, 22, MPI_COMM_WORLD, &r[0]);
		rc |= MPI_Isend(bufs[b], 0, MPI_DOUBLE, to, 22, MPI_COMM_WORLD, &r[1]);
		rc |= MPI_Irecv(bufs[b], 0, MPI_DOUBLE, from, 23, MPI_COMM_WORLD, &r[2]);
		rc |= MPI_Issend(bufs[b], 0, MPI_DOUBLE, to, 23, MPI_COMM_WORLD, &r[3]);
		rc |= MPI_Ibsend(bufs[b], 0, MPI_DOUBLE, to, 24, MPI_COMM_WORLD, &r[4]);
		CK(rc == MPI_SUCCESS, "nonblocking calls of 0: %d", rc);
		MPI_Status sts[5];
		rc = MPI_Waitall(5, r, sts);
		CK(rc == MPI_SUCCESS && count_of(&sts[0], MPI_DOUBLE) == 0 && count_of(&sts[2], MPI_DOUBLE) == 0 &&
			   sts[0].MPI_TAG == 22 && sts[2].MPI_TAG == 23,
		   "Waitall of 0-count requests: %d", rc);
		rc = MPI_Recv(bufs[b], 0, MPI_DOUBLE, from, 24, MPI_COMM_WORLD, &st);
		CK(rc == MPI_SUCCESS && count_of(&st, MPI_DOUBLE) == 0, "receive of the Ibsend of 0: %d", rc);
		void *p;
		int n;
		MPI_Buffer_detach(&p, &n);
		/* persistent */
		MPI_Request pr[2];
		rc = MPI_Recv_init(bufs[b], 0, MPI_INT, from, 25, MPI_COMM_WORLD, &pr[0]);
		rc |= MPI_Send_init(bufs[b], 0, MPI_INT, to, 25, MPI_COMM_WORLD, &pr[1]);
		for (int k = 0; k < 2; k++) {
			rc |= MPI_Startall(2, pr);
			rc |= MPI_Waitall(2, pr, sts);
			CK(rc == MPI_SUCCESS && count_of(&sts[0], MPI_INT) == 0 && sts[0].MPI_SOURCE == from,
			   "persistent 0-count round %d: %d", k, rc);
		}
		MPI_Request_free(&pr[0]);
		MPI_Request_free(&pr[1]);
	}
	/* a zero-count message still matches and carries its envelope */
	int v = 7;
	if (size > 1) {
		if (rank == 0) {
			MPI_Send(NULL, 0, MPI_INT, 1, 30, MPI_COMM_WORLD);
			MPI_Send(&v, 1, MPI_INT, 1, 31, MPI_COMM_WORLD);
		} else if (rank == 1) {
			int w = 0;
			rc = MPI_Recv(NULL, 0, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
			CK(rc == MPI_SUCCESS && st.MPI_TAG == 30 && st.MPI_SOURCE == 0, "0 bytes from any: tag %d", st.MPI_TAG);
			rc = MPI_Recv(&w, 1, MPI_INT, 0, 31, MPI_COMM_WORLD, &st);
			CK(rc == MPI_SUCCESS && w == 7, "the message after it: %d", w);
		}
	}
}

static void zero_coll(void)
{
	int rc;
	int *counts = calloc((size_t)size, sizeof(int)), *displs = calloc((size_t)size, sizeof(int));
	MPI_Datatype *types = malloc((size_t)size * sizeof(MPI_Datatype));
	for (int i = 0; i < size; i++)
		types[i] = MPI_INT;
	rc = MPI_Bcast(NULL, 0, MPI_INT, size - 1, MPI_COMM_WORLD);
	CK(rc == MPI_SUCCESS, "Bcast of 0: %d", rc);
	rc = MPI_Reduce(NULL, NULL, 0, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
	CK(rc == MPI_SUCCESS, "Reduce of 0: %d", rc);
	rc = MPI_Allreduce(NULL, NULL, 0, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
	CK(rc == MPI_SUCCESS, "Allreduce of 0: %d", rc);
	rc = MPI_Gather(NULL, 0, MPI_INT, NULL, 0, MPI_INT, 0, MPI_COMM_WORLD);
	CK(rc == MPI_SUCCESS, "Gather of 0: %d", rc);
	rc = MPI_Scatter(NULL, 0, MPI_INT, NULL, 0, MPI_INT, size / 2, MPI_COMM_WORLD);
	CK(rc == MPI_SUCCESS, "Scatter of 0: %d", rc);
	rc = MPI_Allgather(NULL, 0, MPI_INT, NULL, 0, MPI_INT, MPI_COMM_WORLD);
	CK(rc == MPI_SUCCESS, "Allgather of 0: %d", rc);
	rc = MPI_Alltoall(NULL, 0, MPI_INT, NULL, 0, MPI_INT, MPI_COMM_WORLD);
	CK(rc == MPI_SUCCESS, "Alltoall of 0: %d", rc);
	rc = MPI_Gatherv(NULL, 0, MPI_INT, NULL, counts, displs, MPI_INT, 0, MPI_COMM_WORLD);
	CK(rc == MPI_SUCCESS, "Gatherv of 0: %d", rc);
	rc = MPI_Scatterv(NULL, counts, displs, MPI_INT, NULL, 0, MPI_INT, 0, MPI_COMM_WORLD);
	CK(rc == MPI_SUCCESS, "Scatterv of 0: %d", rc);
	rc = MPI_Allgatherv(NULL, 0, MPI_INT, NULL, counts, displs, MPI_INT, MPI_COMM_WORLD);
	CK(rc == MPI_SUCCESS, "Allgatherv of 0: %d", rc);
	rc = MPI_Alltoallv(NULL, counts, displs, MPI_INT, NULL, counts, displs, MPI_INT, MPI_COMM_WORLD);
	CK(rc == MPI_SUCCESS, "Alltoallv of 0: %d", rc);
	rc = MPI_Alltoallw(NULL, counts, displs, types, NULL, counts, displs, types, MPI_COMM_WORLD);
	CK(rc == MPI_SUCCESS, "Alltoallw of 0: %d", rc);
	rc = MPI_Reduce_scatter(NULL, NULL, counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	CK(rc == MPI_SUCCESS, "Reduce_scatter of 0: %d", rc);
	rc = MPI_Reduce_scatter_block(NULL, NULL, 0, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	CK(rc == MPI_SUCCESS, "Reduce_scatter_block of 0: %d", rc);
	rc = MPI_Scan(NULL, NULL, 0, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	CK(rc == MPI_SUCCESS, "Scan of 0: %d", rc);
	rc = MPI_Exscan(NULL, NULL, 0, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	CK(rc == MPI_SUCCESS, "Exscan of 0: %d", rc);
	/* a v-form where only some ranks send: rank r sends r % 2 ints */
	int *all = malloc((size_t)size * sizeof(int)), mine = rank;
	for (int i = 0; i < size; i++) {
		counts[i] = i % 2;
		displs[i] = i;
		all[i] = -1;
	}
	rc = MPI_Allgatherv(rank % 2 ? &mine : NULL, rank % 2, MPI_INT, all, counts, displs, MPI_INT, MPI_COMM_WORLD);
	int bad = 0;
	for (int i = 0; i < size; i++)
		bad += all[i] != (i % 2 ? i : -1);
	CK(rc == MPI_SUCCESS && !bad, "Allgatherv with empty blocks: %d, %d wrong", rc, bad);
	free(all);
	free(counts);
	free(displs);
	free(types);
}

/* --------------------------------------------------------------- inplace */

static void inplace(void)
{
	int rc, n = size, bad;
	int *v = malloc((size_t)(4 * n + 4) * sizeof(int)), *counts = malloc((size_t)n * sizeof(int)),
	    *displs = malloc((size_t)n * sizeof(int));
	MPI_Datatype *types = malloc((size_t)n * sizeof(MPI_Datatype));
	for (int i = 0; i < n; i++)
		types[i] = MPI_INT;

	/* Allgather: the send count and type ignored */
	for (int i = 0; i < n; i++)
		v[i] = i == rank ? 100 + rank : -1;
	rc = MPI_Allgather(MPI_IN_PLACE, -1, MPI_DATATYPE_NULL, v, 1, MPI_INT, MPI_COMM_WORLD);
	bad = 0;
	for (int i = 0; i < n; i++)
		bad += v[i] != 100 + i;
	CK(rc == MPI_SUCCESS && !bad, "Allgather in place, send args ignored: %d, %d wrong", rc, bad);

	/* Alltoall: likewise */
	for (int i = 0; i < n; i++)
		v[i] = 1000 * rank + i;
	rc = MPI_Alltoall(MPI_IN_PLACE, -1, MPI_DATATYPE_NULL, v, 1, MPI_INT, MPI_COMM_WORLD);
	bad = 0;
	for (int i = 0; i < n; i++)
		bad += v[i] != 1000 * i + rank;
	CK(rc == MPI_SUCCESS && !bad, "Alltoall in place, send args ignored: %d, %d wrong", rc, bad);

	for (int root = 0; root < n; root += n > 2 ? n - 1 : 1) {
		/* Gather: at the root the send args ignored (in place); elsewhere
		 * the receive args */
		int x = 200 + rank;
		for (int i = 0; i < n; i++)
			v[i] = rank == root && i == root ? 200 + root : -1;
		rc = rank == root ? MPI_Gather(MPI_IN_PLACE, -1, MPI_DATATYPE_NULL, v, 1, MPI_INT, root, MPI_COMM_WORLD)
				  : MPI_Gather(&x, 1, MPI_INT, NULL, -5, MPI_DATATYPE_NULL, root, MPI_COMM_WORLD);
		bad = 0;
		for (int i = 0; rank == root && i < n; i++)
			bad += v[i] != 200 + i;
		CK(rc == MPI_SUCCESS && !bad, "Gather to %d with ignored args: %d, %d wrong", root, rc, bad);

		/* Scatter: at the root the receive args (in place); elsewhere the send args */
		for (int i = 0; i < n; i++)
			v[i] = rank == root ? 300 + i : -1;
		x = -1;
		rc = rank == root ? MPI_Scatter(v, 1, MPI_INT, MPI_IN_PLACE, -1, MPI_DATATYPE_NULL, root, MPI_COMM_WORLD)
				  : MPI_Scatter(NULL, -3, MPI_DATATYPE_NULL, &x, 1, MPI_INT, root, MPI_COMM_WORLD);
		CK(rc == MPI_SUCCESS && (rank == root ? v[root] == 300 + root : x == 300 + rank),
		   "Scatter from %d with ignored args: %d, got %d", root, rc, rank == root ? v[root] : x);

		/* Gatherv and Scatterv: the same, with the count arrays ignored off the root */
		for (int i = 0; i < n; i++) {
			counts[i] = 1;
			displs[i] = 2 * i;
			v[2 * i] = rank == root && i == root ? 400 + root : -1;
			v[2 * i + 1] = -7;
		}
		x = 400 + rank;
		rc = rank == root ? MPI_Gatherv(MPI_IN_PLACE, -1, MPI_DATATYPE_NULL, v, counts, displs, MPI_INT, root,
						MPI_COMM_WORLD)
				  : MPI_Gatherv(&x, 1, MPI_INT, NULL, NULL, NULL, MPI_DATATYPE_NULL, root, MPI_COMM_WORLD);
		bad = 0;
		for (int i = 0; rank == root && i < n; i++)
			bad += v[2 * i] != 400 + i || v[2 * i + 1] != -7;
		CK(rc == MPI_SUCCESS && !bad, "Gatherv to %d with ignored args: %d, %d wrong", root, rc, bad);
		for (int i = 0; i < n; i++)
			v[2 * i] = rank == root ? 500 + i : -1;
		x = -1;
		rc = rank == root ? MPI_Scatterv(v, counts, displs, MPI_INT, MPI_IN_PLACE, -1, MPI_DATATYPE_NULL, root,
						 MPI_COMM_WORLD)
				  : MPI_Scatterv(NULL, NULL, NULL, MPI_DATATYPE_NULL, &x, 1, MPI_INT, root, MPI_COMM_WORLD);
		CK(rc == MPI_SUCCESS && (rank == root ? v[2 * root] == 500 + root : x == 500 + rank),
		   "Scatterv from %d with ignored args: %d", root, rc);

		/* Reduce: off the root the receive buffer is ignored (NULL); at
		 * the root in place */
		x = rank + 1;
		int r = rank == root ? rank + 1 : -1;
		rc = rank == root ? MPI_Reduce(MPI_IN_PLACE, &r, 1, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD)
				  : MPI_Reduce(&x, NULL, 1, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD);
		CK(rc == MPI_SUCCESS && (rank != root || r == n * (n + 1) / 2), "Reduce to %d in place: %d, %d", root, rc, r);
	}

	/* Allgatherv in place: the send count and type ignored */
	for (int i = 0; i < n; i++) {
		counts[i] = 1 + i % 2;
		displs[i] = 3 * i;
		for (int k = 0; k < 3; k++)
			v[3 * i + k] = i == rank && k < counts[i] ? 600 + i : -2;
	}
	rc = MPI_Allgatherv(MPI_IN_PLACE, -9, MPI_DATATYPE_NULL, v, counts, displs, MPI_INT, MPI_COMM_WORLD);
	bad = 0;
	for (int i = 0; i < n; i++)
		for (int k = 0; k < 3; k++)
			bad += v[3 * i + k] != (k < counts[i] ? 600 + i : -2);
	CK(rc == MPI_SUCCESS && !bad, "Allgatherv in place: %d, %d wrong", rc, bad);

	/* Alltoallv and Alltoallw in place: the send arrays may be NULL */
	for (int i = 0; i < n; i++) {
		counts[i] = 1;
		displs[i] = i;
		v[i] = 700 + 10 * rank + i;
	}
	rc = MPI_Alltoallv(MPI_IN_PLACE, NULL, NULL, MPI_DATATYPE_NULL, v, counts, displs, MPI_INT, MPI_COMM_WORLD);
	bad = 0;
	for (int i = 0; i < n; i++)
		bad += v[i] != 700 + 10 * i + rank;
	CK(rc == MPI_SUCCESS && !bad, "Alltoallv in place, send args ignored: %d, %d wrong", rc, bad);
	for (int i = 0; i < n; i++) {
		displs[i] = i * (int)sizeof(int);
		v[i] = 800 + 10 * rank + i;
	}
	rc = MPI_Alltoallw(MPI_IN_PLACE, NULL, NULL, NULL, v, counts, displs, types, MPI_COMM_WORLD);
	bad = 0;
	for (int i = 0; i < n; i++)
		bad += v[i] != 800 + 10 * i + rank;
	CK(rc == MPI_SUCCESS && !bad, "Alltoallw in place, send args ignored: %d, %d wrong", rc, bad);

	/* the reductions in place */
	int a = rank + 1;
	rc = MPI_Allreduce(MPI_IN_PLACE, &a, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	CK(rc == MPI_SUCCESS && a == n * (n + 1) / 2, "Allreduce in place: %d", a);
	for (int i = 0; i < n; i++)
		v[i] = rank + i;
	rc = MPI_Reduce_scatter_block(MPI_IN_PLACE, v, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	CK(rc == MPI_SUCCESS && v[0] == n * (n - 1) / 2 + n * rank, "Reduce_scatter_block in place: %d", v[0]);
	for (int i = 0; i < n; i++) {
		counts[i] = 1;
		v[i] = rank * i;
	}
	rc = MPI_Reduce_scatter(MPI_IN_PLACE, v, counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	CK(rc == MPI_SUCCESS && v[0] == rank * n * (n - 1) / 2, "Reduce_scatter in place: %d", v[0]);
	a = rank + 1;
	rc = MPI_Scan(MPI_IN_PLACE, &a, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	CK(rc == MPI_SUCCESS && a == (rank + 1) * (rank + 2) / 2, "Scan in place: %d", a);
	a = rank + 1;
	rc = MPI_Exscan(MPI_IN_PLACE, &a, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	CK(rc == MPI_SUCCESS && (rank == 0 || a == rank * (rank + 1) / 2), "Exscan in place: %d", a);
	free(v);
	free(counts);
	free(displs);
	free(types);
}

/* --------------------------------------------------------------- persist */

static int empty(const MPI_Status *st)
{
	return st->MPI_SOURCE == MPI_ANY_SOURCE && st->MPI_TAG == MPI_ANY_TAG && st->MPI_ERROR == MPI_SUCCESS &&
	       count_of(st, MPI_BYTE) == 0;
}

static void persist(void)
{
	int to = (rank + 1) % size, from = (rank + size - 1) % size, x = rank, y = -1, rc, flag, idx;
	MPI_Status st, sts[3];
	MPI_Request r[3];
	rc = MPI_Recv_init(&y, 1, MPI_INT, from, 40, MPI_COMM_WORLD, &r[0]);
	rc |= MPI_Send_init(&x, 1, MPI_INT, to, 40, MPI_COMM_WORLD, &r[1]);
	rc |= MPI_Ssend_init(&x, 1, MPI_INT, to, 41, MPI_COMM_WORLD, &r[2]);
	CK(rc == MPI_SUCCESS, "persistent inits: %d", rc);
	/* never started: every wait and test gives the empty status at once */
	for (int k = 0; k < 3; k++) {
		memset(&st, 0x5a, sizeof(st));
		rc = MPI_Wait(&r[k], &st);
		CK(rc == MPI_SUCCESS && empty(&st) && r[k] != MPI_REQUEST_NULL,
		   "Wait on inactive request %d: %d, source %d tag %d error %d count %d", k, rc, st.MPI_SOURCE, st.MPI_TAG,
		   st.MPI_ERROR, count_of(&st, MPI_BYTE));
		memset(&st, 0x5a, sizeof(st));
		flag = 0;
		rc = MPI_Test(&r[k], &flag, &st);
		CK(rc == MPI_SUCCESS && flag && empty(&st), "Test on inactive request %d: %d flag %d", k, rc, flag);
	}
	memset(sts, 0x5a, sizeof(sts));
	rc = MPI_Waitall(3, r, sts);
	CK(rc == MPI_SUCCESS && empty(&sts[0]) && empty(&sts[1]) && empty(&sts[2]), "Waitall on inactive requests: %d", rc);
	flag = 0;
	rc = MPI_Testall(3, r, &flag, sts);
	CK(rc == MPI_SUCCESS && flag && empty(&sts[0]) && empty(&sts[2]), "Testall on inactive requests: %d flag %d", rc, flag);
	memset(&st, 0x5a, sizeof(st));
	rc = MPI_Waitany(3, r, &idx, &st);
	CK(rc == MPI_SUCCESS && idx == MPI_UNDEFINED && empty(&st), "Waitany on inactive requests: %d index %d", rc, idx);
	flag = 0;
	rc = MPI_Testany(3, r, &idx, &flag, &st);
	CK(rc == MPI_SUCCESS && flag && idx == MPI_UNDEFINED && empty(&st), "Testany on inactive requests: %d", rc);
	int outc = -5, ind[3];
	rc = MPI_Waitsome(3, r, &outc, ind, sts);
	CK(rc == MPI_SUCCESS && outc == MPI_UNDEFINED, "Waitsome on inactive requests: %d outcount %d", rc, outc);
	outc = -5;
	rc = MPI_Testsome(3, r, &outc, ind, sts);
	CK(rc == MPI_SUCCESS && outc == MPI_UNDEFINED, "Testsome on inactive requests: %d outcount %d", rc, outc);
	/* started and completed, twice; then inactive again */
	for (int round = 0; round < 2; round++) {
		x = 10 * round + rank;
		y = -1;
		rc = MPI_Start(&r[0]);
		rc |= MPI_Start(&r[1]);
		rc |= MPI_Waitall(2, r, sts);
		CK(rc == MPI_SUCCESS && y == 10 * round + from && sts[0].MPI_SOURCE == from && sts[0].MPI_TAG == 40 &&
			   count_of(&sts[0], MPI_INT) == 1,
		   "persistent round %d: %d, got %d", round, rc, y);
		memset(&st, 0x5a, sizeof(st));
		rc = MPI_Wait(&r[0], &st);
		CK(rc == MPI_SUCCESS && empty(&st), "Wait on a completed persistent request: source %d tag %d",
		   st.MPI_SOURCE, st.MPI_TAG);
	}
	/* null requests: the empty status too, through every wait and test */
	MPI_Request nulls3[3] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL, MPI_REQUEST_NULL};
	memset(sts, 0x5a, sizeof(sts));
	flag = 0;
	rc = MPI_Testall(3, nulls3, &flag, sts);
	CK(rc == MPI_SUCCESS && flag && empty(&sts[0]) && empty(&sts[2]), "Testall of null requests: flag %d", flag);
	memset(sts, 0x5a, sizeof(sts));
	rc = MPI_Waitall(3, nulls3, sts);
	CK(rc == MPI_SUCCESS && empty(&sts[1]), "Waitall of null requests: source %d", sts[1].MPI_SOURCE);
	outc = -5;
	rc = MPI_Testsome(3, nulls3, &outc, ind, sts);
	CK(rc == MPI_SUCCESS && outc == MPI_UNDEFINED, "Testsome of null requests: %d", outc);
	MPI_Request nul = MPI_REQUEST_NULL;
	memset(&st, 0x5a, sizeof(st));
	rc = MPI_Wait(&nul, &st);
	CK(rc == MPI_SUCCESS && empty(&st), "Wait on MPI_REQUEST_NULL: source %d", st.MPI_SOURCE);
	memset(&st, 0x5a, sizeof(st));
	flag = 0;
	rc = MPI_Test(&nul, &flag, &st);
	CK(rc == MPI_SUCCESS && flag && empty(&st), "Test on MPI_REQUEST_NULL: flag %d source %d", flag, st.MPI_SOURCE);
	MPI_Request nuls[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
	rc = MPI_Waitany(2, nuls, &idx, &st);
	CK(rc == MPI_SUCCESS && idx == MPI_UNDEFINED && empty(&st), "Waitany on null requests: index %d", idx);
	/* a receive from MPI_PROC_NULL: that source, any tag, no data (not the empty status) */
	MPI_Request pn;
	rc = MPI_Irecv(&y, 1, MPI_INT, MPI_PROC_NULL, 5, MPI_COMM_WORLD, &pn);
	rc |= MPI_Wait(&pn, &st);
	CK(rc == MPI_SUCCESS && st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG && count_of(&st, MPI_INT) == 0,
	   "receive from MPI_PROC_NULL: source %d tag %d", st.MPI_SOURCE, st.MPI_TAG);
	/* a synchronous persistent send started and completed */
	y = -1;
	rc = MPI_Irecv(&y, 1, MPI_INT, from, 41, MPI_COMM_WORLD, &pn);
	rc |= MPI_Start(&r[2]);
	rc |= MPI_Wait(&r[2], &st);
	rc |= MPI_Wait(&pn, &st);
	CK(rc == MPI_SUCCESS && y == 10 + from, "persistent Ssend: %d got %d", rc, y);
	for (int k = 0; k < 3; k++) {
		rc = MPI_Request_free(&r[k]);
		CK(rc == MPI_SUCCESS && r[k] == MPI_REQUEST_NULL, "Request_free of inactive request %d: %d", k, rc);
	}
}

/* -------------------------------------------------------------- elements */

static void elements(void)
{
	int to = (rank + 1) % size, from = (rank + size - 1) % size, rc, n, c;
	MPI_Status st;
	MPI_Request r;
	/* {int, double}: 2 predefined elements, 12 data bytes, extent 16 */
	MPI_Datatype s2;
	int bl[2] = {1, 1};
	MPI_Aint d[2] = {0, 8};
	MPI_Datatype ty[2] = {MPI_INT, MPI_DOUBLE};
	MPI_Type_create_struct(2, bl, d, ty, &s2);
	MPI_Type_commit(&s2);
	static struct {
		int i;
		double d;
	} out[8], in[8];
	memset(out, 0, sizeof(out));
	/* k whole structs, then (if `more`) one more int: a prefix of the
	 * receive's type signature, sent as that signature */
	for (int k = 0; k <= 3; k++)
		for (int more = 0; more < 2; more++) {
			MPI_Datatype msg;
			int mbl[2] = {k, more};
			MPI_Aint md[2] = {0, (MPI_Aint)(k * sizeof(out[0]))};
			MPI_Datatype mty[2] = {s2, MPI_INT};
			MPI_Type_create_struct(2, mbl, md, mty, &msg);
			MPI_Type_commit(&msg);
			rc = MPI_Irecv(in, 8, s2, from, 50, MPI_COMM_WORLD, &r);
			rc |= MPI_Send(out, 1, msg, to, 50, MPI_COMM_WORLD);
			rc |= MPI_Wait(&r, &st);
			MPI_Get_count(&st, s2, &c);
			MPI_Get_elements(&st, s2, &n);
			CK(rc == MPI_SUCCESS && c == (more ? MPI_UNDEFINED : k) && n == 2 * k + more,
			   "%d structs {int, double} and %d int: count %d, elements %d", k, more, c, n);
			MPI_Type_free(&msg);
		}
	/* doubles into a vector of 3 blocks of 2 doubles (6 elements) */
	MPI_Datatype vec;
	MPI_Type_vector(3, 2, 4, MPI_DOUBLE, &vec);
	MPI_Type_commit(&vec);
	double dout[24] = {0}, din[64];
	static const int ms[] = {0, 1, 5, 6, 7, 12, 13};
	for (size_t i = 0; i < sizeof(ms) / sizeof(ms[0]); i++) {
		rc = MPI_Irecv(din, 4, vec, from, 51, MPI_COMM_WORLD, &r);
		rc |= MPI_Send(dout, ms[i], MPI_DOUBLE, to, 51, MPI_COMM_WORLD);
		rc |= MPI_Wait(&r, &st);
		MPI_Get_count(&st, vec, &c);
		MPI_Get_elements(&st, vec, &n);
		CK(rc == MPI_SUCCESS && c == (ms[i] % 6 ? MPI_UNDEFINED : ms[i] / 6) && n == ms[i],
		   "%d doubles into vectors: count %d, elements %d", ms[i], c, n);
		MPI_Get_elements(&st, MPI_DOUBLE, &n);
		CK(n == ms[i], "%d doubles, as doubles: %d", ms[i], n);
	}
	/* a zero-size type: count and elements 0 for an empty message */
	MPI_Datatype none;
	MPI_Type_contiguous(0, MPI_INT, &none);
	MPI_Type_commit(&none);
	rc = MPI_Irecv(din, 1, none, from, 52, MPI_COMM_WORLD, &r);
	rc |= MPI_Send(din, 0, MPI_INT, to, 52, MPI_COMM_WORLD);
	rc |= MPI_Wait(&r, &st);
	MPI_Get_count(&st, none, &c);
	MPI_Get_elements(&st, none, &n);
	CK(rc == MPI_SUCCESS && c == 0 && n == 0, "an empty type: count %d, elements %d", c, n);
	MPI_Type_free(&none);
	MPI_Type_free(&s2);
	MPI_Type_free(&vec);
}

/* ----------------------------------------------------------------- probe */

static void probe(void)
{
	/* every rank sends every other rank a burst of messages of mixed sizes
	 * (eager and rendezvous) before anyone receives; each is found by
	 * probing from any source and tag, sized, and received */
	const int per = size > 8 ? 24 : 60;
	const int big = 8000; /* ints: past the eager limit */
	int nreq = per * (size - 1), k = 0, bad = 0, rc;
	MPI_Request *rq = malloc((size_t)(nreq + 1) * sizeof(MPI_Request));
	int *sbuf = malloc((size_t)big * sizeof(int)), *rbuf = malloc((size_t)big * sizeof(int));
	for (int i = 0; i < big; i++)
		sbuf[i] = i;
	for (int d = 0; d < size; d++)
		for (int i = 0; d != rank && i < per; i++) {
			int len = i % 10 == 9 ? big : (i * 7 + rank) % 300;
			MPI_Isend(sbuf, len, MPI_INT, d, i, MPI_COMM_WORLD, &rq[k++]);
		}
	MPI_Barrier(MPI_COMM_WORLD);
	for (int got = 0; got < nreq; got++) {
		MPI_Status st;
		int flag = 0, cnt = -1;
		if (got % 2) {
			rc = MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
		} else {
			do
				rc = MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st);
			while (rc == MPI_SUCCESS && !flag);
		}
		MPI_Get_count(&st, MPI_INT, &cnt);
		int want = st.MPI_TAG % 10 == 9 ? big : (st.MPI_TAG * 7 + st.MPI_SOURCE) % 300;
		bad += rc != MPI_SUCCESS || cnt != want;
		rc = MPI_Recv(rbuf, cnt, MPI_INT, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, &st);
		bad += rc != MPI_SUCCESS || count_of(&st, MPI_INT) != want;
		for (int i = 0; i < want && rc == MPI_SUCCESS; i++)
			if (rbuf[i] != i) {
				bad++;
				break;
			}
	}
	rc = MPI_Waitall(k, rq, MPI_STATUSES_IGNORE);
	CK(rc == MPI_SUCCESS && !bad, "a burst of %d unexpected messages found by probes: %d wrong", nreq, bad);
	/* nothing left: an Iprobe finds nothing */
	int flag = 1;
	MPI_Barrier(MPI_COMM_WORLD);
	rc = MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
	CK(rc == MPI_SUCCESS && !flag, "Iprobe after the burst found something");
	/* MPI_PROC_NULL: found at once, with its status */
	MPI_Status st;
	rc = MPI_Probe(MPI_PROC_NULL, 3, MPI_COMM_WORLD, &st);
	CK(rc == MPI_SUCCESS && st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG && count_of(&st, MPI_INT) == 0,
	   "Probe of MPI_PROC_NULL: source %d", st.MPI_SOURCE);
	/* cancel: a receive nobody sends to is cancelled */
	MPI_Request r;
	int y;
	rc = MPI_Irecv(&y, 1, MPI_INT, MPI_ANY_SOURCE, 9999, MPI_COMM_WORLD, &r);
	rc |= MPI_Cancel(&r);
	rc |= MPI_Wait(&r, &st);
	int cancelled = 0;
	MPI_Test_cancelled(&st, &cancelled);
	CK(rc == MPI_SUCCESS && cancelled, "a cancelled receive: %d cancelled %d", rc, cancelled);
	free(rq);
	free(sbuf);
	free(rbuf);
}

/* ------------------------------------------------------------------ comm */

static void comm(void)
{
	int rc, r2, s2, res;
	/* split: MPI_UNDEFINED gives MPI_COMM_NULL; keys in reverse order */
	MPI_Comm half = MPI_COMM_WORLD;
	rc = MPI_Comm_split(MPI_COMM_WORLD, rank % 2 ? MPI_UNDEFINED : 0, rank, &half);
	CK(rc == MPI_SUCCESS && (rank % 2 ? half == MPI_COMM_NULL : half != MPI_COMM_NULL),
	   "split with MPI_UNDEFINED: %d, comm %d", rc, (int)half);
	if (half != MPI_COMM_NULL) {
		MPI_Comm_size(half, &s2);
		MPI_Comm_rank(half, &r2);
		CK(s2 == (size + 1) / 2 && r2 == rank / 2, "the even ranks' split: size %d rank %d", s2, r2);
		rc = MPI_Comm_free(&half);
		CK(rc == MPI_SUCCESS && half == MPI_COMM_NULL, "Comm_free: %d", rc);
	}
	MPI_Comm rev;
	rc = MPI_Comm_split(MPI_COMM_WORLD, 7, size - rank, &rev);
	MPI_Comm_rank(rev, &r2);
	CK(rc == MPI_SUCCESS && r2 == size - 1 - rank, "split by reversed keys: rank %d", r2);
	/* compare */
	MPI_Comm dup;
	MPI_Comm_dup(MPI_COMM_WORLD, &dup);
	MPI_Comm_compare(MPI_COMM_WORLD, MPI_COMM_WORLD, &res);
	CK(res == MPI_IDENT, "compare world, world: %d", res);
	MPI_Comm_compare(MPI_COMM_WORLD, dup, &res);
	CK(res == MPI_CONGRUENT, "compare world, dup: %d", res);
	MPI_Comm_compare(MPI_COMM_WORLD, rev, &res);
	CK(res == (size > 1 ? MPI_SIMILAR : MPI_CONGRUENT), "compare world, reversed: %d", res);
	/* a message on the duplicate is not taken by a receive on the world */
	int x = rank, y = -1, flag = 1;
	MPI_Request rq;
	MPI_Irecv(&y, 1, MPI_INT, MPI_ANY_SOURCE, 3, dup, &rq);
	MPI_Send(&x, 1, MPI_INT, (rank + 1) % size, 3, dup);
	MPI_Wait(&rq, MPI_STATUS_IGNORE);
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Iprobe(MPI_ANY_SOURCE, 3, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
	CK(y == (rank + size - 1) % size && !flag, "message on a duplicate: got %d, world sees one: %d", y, flag);
	MPI_Comm_free(&dup);
	MPI_Comm_free(&rev);
	/* groups: empty, non-members, translations */
	MPI_Group world, g0, none, ex;
	MPI_Comm_group(MPI_COMM_WORLD, &world);
	rc = MPI_Group_incl(world, 0, NULL, &none);
	int n = -1;
	MPI_Group_size(none, &n);
	CK(rc == MPI_SUCCESS && n == 0, "Group_incl of none: %d, size %d", rc, n);
	MPI_Group_compare(none, MPI_GROUP_EMPTY, &res);
	CK(res == MPI_IDENT, "an empty group against MPI_GROUP_EMPTY: %d", res);
	int zero = 0;
	MPI_Group_incl(world, 1, &zero, &g0);
	MPI_Group_rank(g0, &r2);
	CK(r2 == (rank == 0 ? 0 : MPI_UNDEFINED), "Group_rank in {0}: %d", r2);
	int in[2] = {MPI_PROC_NULL, 0}, out[2] = {-5, -5};
	rc = MPI_Group_translate_ranks(world, 2, in, g0, out);
	CK(rc == MPI_SUCCESS && out[0] == MPI_PROC_NULL && out[1] == 0, "translate_ranks: %d %d", out[0], out[1]);
	rc = MPI_Group_excl(world, 1, &zero, &ex);
	MPI_Group_size(ex, &n);
	CK(rc == MPI_SUCCESS && n == size - 1, "Group_excl of rank 0: size %d", n);
	/* Comm_create: outside the group, MPI_COMM_NULL */
	MPI_Comm c0;
	rc = MPI_Comm_create(MPI_COMM_WORLD, g0, &c0);
	CK(rc == MPI_SUCCESS && (rank == 0 ? c0 != MPI_COMM_NULL : c0 == MPI_COMM_NULL), "Comm_create of {0}: %d",
	   (int)c0);
	if (c0 != MPI_COMM_NULL)
		MPI_Comm_free(&c0);
	MPI_Group_free(&g0);
	MPI_Group_free(&ex);
	MPI_Group_free(&world);
	if (none != MPI_GROUP_EMPTY)
		MPI_Group_free(&none);
	/* a grid of fewer ranks than the world: the others get MPI_COMM_NULL;
	 * a shift past an open edge is MPI_PROC_NULL */
	int dims[1] = {size > 1 ? size - 1 : 1}, periods[1] = {0};
	MPI_Comm cart;
	rc = MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &cart);
	CK(rc == MPI_SUCCESS && (rank < dims[0] ? cart != MPI_COMM_NULL : cart == MPI_COMM_NULL), "Cart_create of %d: %d",
	   dims[0], (int)cart);
	if (cart != MPI_COMM_NULL) {
		int src, dst;
		MPI_Cart_shift(cart, 0, 1, &src, &dst);
		CK(src == (rank ? rank - 1 : MPI_PROC_NULL) && dst == (rank + 1 < dims[0] ? rank + 1 : MPI_PROC_NULL),
		   "Cart_shift at rank %d: %d %d", rank, src, dst);
		MPI_Comm_free(&cart);
	}
	/* MPI_PROC_NULL both ways */
	MPI_Status st;
	rc = MPI_Sendrecv(&x, 1, MPI_INT, MPI_PROC_NULL, 1, &y, 1, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD, &st);
	CK(rc == MPI_SUCCESS && st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG && count_of(&st, MPI_INT) == 0,
	   "Sendrecv with MPI_PROC_NULL: source %d", st.MPI_SOURCE);
	/* a freed active send still goes */
	if (size > 1) {
		if (rank == 0) {
			MPI_Isend(&x, 1, MPI_INT, 1, 4, MPI_COMM_WORLD, &rq);
			rc = MPI_Request_free(&rq);
			CK(rc == MPI_SUCCESS && rq == MPI_REQUEST_NULL, "Request_free of an active send: %d", rc);
		} else if (rank == 1) {
			y = -1;
			MPI_Recv(&y, 1, MPI_INT, 0, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			CK(y == 0, "the freed send's message: %d", y);
		}
	}
	/* packing nothing; an empty type */
	int ps = -1, pos = 0;
	char pbuf[16];
	rc = MPI_Pack_size(0, MPI_DOUBLE, MPI_COMM_WORLD, &ps);
	CK(rc == MPI_SUCCESS && ps == 0, "Pack_size of 0: %d", ps);
	rc = MPI_Pack(NULL, 0, MPI_DOUBLE, pbuf, sizeof(pbuf), &pos, MPI_COMM_WORLD);
	CK(rc == MPI_SUCCESS && pos == 0, "Pack of 0: position %d", pos);
	MPI_Datatype e0;
	MPI_Aint lb = -1, ext = -1;
	rc = MPI_Type_contiguous(0, MPI_INT, &e0);
	MPI_Type_commit(&e0);
	MPI_Type_size(e0, &n);
	MPI_Type_get_extent(e0, &lb, &ext);
	CK(rc == MPI_SUCCESS && n == 0 && ext == 0, "an empty type: size %d extent %ld", n, (long)ext);
	MPI_Type_free(&e0);
	/* the environment */
	int *ub = NULL, found = 0, init = 0, fin = 1;
	MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &found);
	CK(found && ub && *ub >= 32767, "MPI_TAG_UB: found %d, %d", found, ub ? *ub : -1);
	MPI_Initialized(&init);
	MPI_Finalized(&fin);
	CK(init == 1 && fin == 0, "Initialized %d, Finalized %d", init, fin);
	double t0 = MPI_Wtime(), t1 = MPI_Wtime();
	CK(MPI_Wtick() > 0 && t1 >= t0, "Wtick %g, Wtime %g then %g", MPI_Wtick(), t0, t1);
}

/* ------------------------------------------------------------------ misc */

static int handler_calls, handler_code;
static void record_error(MPI_Comm *c, int *code, ...)
{
	(void)c;
	handler_calls++;
	handler_code = *code;
}

/* Affine maps x -> a x + b as (a, b) pairs (MPI_2INT), composed: in (the
 * lower ranks') first, then inout. Associative, and not commutative. */
static void noncommutative(void *in, void *inout, int *len, MPI_Datatype *t)
{
	(void)t;
	int *l = in, *r = inout;
	for (int i = 0; i < *len; i++) {
		int a = r[2 * i] * l[2 * i], b = r[2 * i] * l[2 * i + 1] + r[2 * i + 1];
		r[2 * i] = a;
		r[2 * i + 1] = b;
	}
}

static void misc(void)
{
	int rc, st, n, x = rank;
	/* waiting by spinning on the clock ends: reading it takes time */
	double t0 = MPI_Wtime(), t1 = t0;
	long spins = 0;
	while ((t1 = MPI_Wtime()) - t0 < 1e-4 && spins < 100000000L)
		spins++;
	CK(t1 - t0 >= 1e-4 && spins > 0 && spins < 100000000L, "a 100 us spin on MPI_Wtime: %ld spins, %g s", spins,
	   t1 - t0);
	/* topologies: none, a ring as a graph, a grid; a graph of fewer nodes */
	MPI_Topo_test(MPI_COMM_WORLD, &st);
	CK(st == MPI_UNDEFINED, "Topo_test of the world: %d", st);
	int gn = size > 1 ? size - 1 : 1;
	int *index = malloc((size_t)gn * sizeof(int)), *edges = malloc(2 * (size_t)gn * sizeof(int));
	for (int i = 0, e = 0; i < gn; i++) {
		/* a path 0 - 1 - ... - gn-1 */
		if (i > 0)
			edges[e++] = i - 1;
		if (i + 1 < gn)
			edges[e++] = i + 1;
		index[i] = e;
	}
	MPI_Comm g;
	rc = MPI_Graph_create(MPI_COMM_WORLD, gn, index, edges, 0, &g);
	CK(rc == MPI_SUCCESS && (rank < gn ? g != MPI_COMM_NULL : g == MPI_COMM_NULL), "Graph_create of %d: %d", gn,
	   (int)g);
	if (g != MPI_COMM_NULL) {
		int cnt = -1, nb[2] = {-1, -1};
		MPI_Topo_test(g, &st);
		MPI_Graph_neighbors_count(g, rank, &cnt);
		MPI_Graph_neighbors(g, rank, 2, nb);
		int want = (rank > 0) + (rank + 1 < gn);
		CK(st == MPI_GRAPH && cnt == want && (want == 0 || nb[0] == (rank > 0 ? rank - 1 : rank + 1)),
		   "a path as a graph at %d: topo %d, %d neighbours (%d, %d)", rank, st, cnt, nb[0], nb[1]);
		MPI_Comm_free(&g);
	}
	free(index);
	free(edges);
	int dims[2] = {0, 0}, periods[2] = {1, 0};
	MPI_Dims_create(size, 2, dims);
	CK(dims[0] * dims[1] == size && dims[0] >= dims[1], "Dims_create(%d, 2): %d x %d", size, dims[0], dims[1]);
	int d3[3] = {0, 0, 0};
	MPI_Dims_create(1, 3, d3);
	CK(d3[0] == 1 && d3[1] == 1 && d3[2] == 1, "Dims_create(1, 3): %d %d %d", d3[0], d3[1], d3[2]);
	MPI_Comm cart;
	rc = MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &cart);
	if (rc == MPI_SUCCESS && cart != MPI_COMM_NULL) {
		int c[2], r2 = -1, wrapped[2];
		MPI_Topo_test(cart, &st);
		MPI_Cart_coords(cart, rank, 2, c);
		MPI_Cart_rank(cart, c, &r2);
		CK(st == MPI_CART && r2 == rank, "Cart coords and rank: topo %d, %d -> (%d,%d) -> %d", st, rank, c[0], c[1], r2);
		/* a coordinate past the periodic dimension wraps */
		wrapped[0] = c[0] + dims[0];
		wrapped[1] = c[1];
		rc = MPI_Cart_rank(cart, wrapped, &r2);
		CK(rc == MPI_SUCCESS && r2 == rank, "Cart_rank wraps a periodic coordinate: %d", r2);
		/* keeping no dimension: a communicator of one rank */
		int keep[2] = {0, 0};
		MPI_Comm sub;
		rc = MPI_Cart_sub(cart, keep, &sub);
		MPI_Comm_size(sub, &n);
		CK(rc == MPI_SUCCESS && n == 1, "Cart_sub keeping nothing: size %d", n);
		MPI_Comm_free(&sub);
		MPI_Comm_free(&cart);
	} else {
		CK(0, "Cart_create %d x %d: %d", dims[0], dims[1], rc);
	}
	/* a user error handler gets the error's code; the call returns it */
	MPI_Errhandler eh, got;
	MPI_Comm dup;
	MPI_Comm_dup(MPI_COMM_WORLD, &dup);
	MPI_Comm_create_errhandler(record_error, &eh);
	MPI_Comm_set_errhandler(dup, eh);
	MPI_Comm_get_errhandler(dup, &got);
	handler_calls = 0;
	rc = MPI_Send(&x, 1, MPI_INT, size + 5, 0, dup);
	int cls = -1;
	MPI_Error_class(handler_code, &cls);
	CK(got == eh && handler_calls == 1 && cls == MPI_ERR_RANK && rc == handler_code,
	   "a user error handler: called %d times, class %d, returned %d", handler_calls, cls, rc);
	MPI_Errhandler_free(&eh);
	CK(eh == MPI_ERRHANDLER_NULL, "Errhandler_free: %d", (int)eh);
	MPI_Comm_free(&dup);
	/* the predefined attributes, names and version */
	int *v = NULL, found = 0;
	MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_HOST, &v, &found);
	CK(found && v && (*v == MPI_PROC_NULL || (*v >= 0 && *v < size)), "MPI_HOST: found %d", found);
	MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_IO, &v, &found);
	CK(found && v && (*v == MPI_ANY_SOURCE || *v == MPI_PROC_NULL || (*v >= 0 && *v < size)), "MPI_IO: found %d", found);
	MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_WTIME_IS_GLOBAL, &v, &found);
	CK(found && v && (*v == 0 || *v == 1), "MPI_WTIME_IS_GLOBAL: found %d", found);
	char name[MPI_MAX_OBJECT_NAME], pname[MPI_MAX_PROCESSOR_NAME];
	int len = -1, ver = -1, sub = -1;
	MPI_Comm_get_name(MPI_COMM_WORLD, name, &len);
	CK(!strcmp(name, "MPI_COMM_WORLD") && len == 14, "the world's name: %s (%d)", name, len);
	MPI_Type_get_name(MPI_INT, name, &len);
	CK(!strcmp(name, "MPI_INT"), "MPI_INT's name: %s", name);
	MPI_Get_processor_name(pname, &len);
	CK(len > 0 && len < MPI_MAX_PROCESSOR_NAME && (int)strlen(pname) == len, "processor name length %d", len);
	MPI_Get_version(&ver, &sub);
	CK(ver == MPI_VERSION && sub >= 0, "version %d.%d", ver, sub);
	/* Pack and Unpack: positions, sizes, and a buffer too small */
	int ints[3] = {rank, 7, -1}, ints2[3];
	double dbl[2] = {0.5, -2.25}, dbl2[2];
	char pk[256];
	int pos = 0, s1 = 0, s2 = 0;
	MPI_Pack_size(3, MPI_INT, MPI_COMM_WORLD, &s1);
	MPI_Pack_size(2, MPI_DOUBLE, MPI_COMM_WORLD, &s2);
	rc = MPI_Pack(ints, 3, MPI_INT, pk, sizeof(pk), &pos, MPI_COMM_WORLD);
	rc |= MPI_Pack(dbl, 2, MPI_DOUBLE, pk, sizeof(pk), &pos, MPI_COMM_WORLD);
	CK(rc == MPI_SUCCESS && pos <= s1 + s2 && pos >= 28, "Pack: %d, position %d, sizes %d + %d", rc, pos, s1, s2);
	int end = pos;
	pos = 0;
	rc = MPI_Unpack(pk, end, &pos, ints2, 3, MPI_INT, MPI_COMM_WORLD);
	rc |= MPI_Unpack(pk, end, &pos, dbl2, 2, MPI_DOUBLE, MPI_COMM_WORLD);
	CK(rc == MPI_SUCCESS && pos == end && !memcmp(ints, ints2, sizeof(ints)) && !memcmp(dbl, dbl2, sizeof(dbl)),
	   "Unpack: %d, position %d of %d", rc, pos, end);
	pos = 0;
	rc = MPI_Pack(ints, 3, MPI_INT, pk, 8, &pos, MPI_COMM_WORLD);
	CK(rc != MPI_SUCCESS && pos == 0, "Pack into 8 bytes: %d, position %d", rc, pos);
	/* the attached buffer: twice is an error; detach gives it back; a
	 * buffered send with none attached is an error */
	static char bb[1024];
	void *back = NULL;
	int bsize = -1;
	rc = MPI_Buffer_attach(bb, sizeof(bb));
	int rc2 = MPI_Buffer_attach(bb, sizeof(bb));
	MPI_Buffer_detach(&back, &bsize);
	CK(rc == MPI_SUCCESS && rc2 != MPI_SUCCESS && back == bb && bsize == (int)sizeof(bb),
	   "attach, attach again (%d), detach: %p %d", rc2, back, bsize);
	rc = MPI_Bsend(&x, 1, MPI_INT, rank, 9, MPI_COMM_WORLD);
	MPI_Error_class(rc, &cls);
	CK(cls == MPI_ERR_BUFFER, "Bsend without a buffer: class %d", cls);
	/* a user operation that does not commute, in rank order */
	MPI_Op op;
	int commute = -1;
	MPI_Op_create(noncommutative, 0, &op);
	MPI_Op_commutative(op, &commute);
	int mine[2] = {1 + rank % 2, rank}, all[2] = {0, 0}, want[2] = {1, 0};
	for (int r = 0; r < size; r++) { /* the maps of ranks 0, 1, ... applied in that order */
		want[1] = (1 + r % 2) * want[1] + r;
		want[0] *= 1 + r % 2;
	}
	rc = MPI_Allreduce(mine, all, 1, MPI_2INT, op, MPI_COMM_WORLD);
	CK(rc == MPI_SUCCESS && commute == 0 && all[0] == want[0] && all[1] == want[1],
	   "a non-commutative allreduce: (%d, %d), want (%d, %d) (commute %d)", all[0], all[1], want[0], want[1], commute);
	int loc[4] = {2, 1, 3, 5}; /* x -> 2x + 1, then x -> 3x + 5: x -> 6x + 8 */
	rc = MPI_Reduce_local(&loc[0], &loc[2], 1, MPI_2INT, op);
	CK(rc == MPI_SUCCESS && loc[2] == 6 && loc[3] == 8, "Reduce_local with a user operation: (%d, %d)", loc[2], loc[3]);
	MPI_Op_free(&op);
	CK(op == MPI_OP_NULL, "Op_free: %d", (int)op);

	/* the rest of the calls README lists, at an edge each */
	int prov = -1;
	MPI_Query_thread(&prov);
	CK(prov >= MPI_THREAD_SINGLE && prov <= MPI_THREAD_MULTIPLE, "Query_thread: %d", prov);
	int one_dim[1] = {size > 1 ? size - 1 : 1}, nop[1] = {0}, mapped = -2;
	MPI_Cart_map(MPI_COMM_WORLD, 1, one_dim, nop, &mapped);
	CK(rank < one_dim[0] ? mapped >= 0 && mapped < one_dim[0] : mapped == MPI_UNDEFINED, "Cart_map: %d", mapped);
	int gidx[1] = {0}, gedges[1] = {0}, gi[1] = {-1}, ge[1] = {-1};
	MPI_Graph_map(MPI_COMM_WORLD, 1, gidx, gedges, &mapped);
	CK(rank < 1 ? mapped == 0 : mapped == MPI_UNDEFINED, "Graph_map of one node: %d", mapped);
	rc = MPI_Graph_create(MPI_COMM_WORLD, 1, gidx, gedges, 0, &g);
	if (g != MPI_COMM_NULL) {
		rc |= MPI_Graph_get(g, 1, 1, gi, ge);
		CK(rc == MPI_SUCCESS && gi[0] == 0, "Graph_get of a node without edges: %d, index %d", rc, gi[0]);
		MPI_Comm_free(&g);
	}
	MPI_Errhandler eh2;
	rc = MPI_Errhandler_create(record_error, &eh2);
	CK(rc == MPI_SUCCESS && eh2 != MPI_ERRHANDLER_NULL, "Errhandler_create: %d", rc);
	MPI_Errhandler_free(&eh2);
	MPI_Group wg, odd;
	int range[1][3] = {{0, size - 1, 2}};
	MPI_Comm_group(MPI_COMM_WORLD, &wg);
	rc = MPI_Group_range_excl(wg, 1, range, &odd);
	MPI_Group_size(odd, &n);
	CK(rc == MPI_SUCCESS && n == size / 2, "Group_range_excl of the even ranks: size %d", n);
	if (odd != MPI_GROUP_EMPTY)
		MPI_Group_free(&odd);
	MPI_Group_free(&wg);
	/* a ready send of nothing to a receive posted before */
	MPI_Request rr, rs;
	int to = (rank + 1) % size, from = (rank + size - 1) % size, y = -1;
	MPI_Irecv(&y, 1, MPI_INT, from, 11, MPI_COMM_WORLD, &rr);
	MPI_Barrier(MPI_COMM_WORLD);
	rc = MPI_Irsend(&x, 1, MPI_INT, to, 11, MPI_COMM_WORLD, &rs);
	rc |= MPI_Wait(&rs, MPI_STATUS_IGNORE);
	rc |= MPI_Wait(&rr, MPI_STATUS_IGNORE);
	CK(rc == MPI_SUCCESS && y == from, "Irsend: %d, got %d", rc, y);
	/* hvector, hindexed and hindexed_block: sizes, extents, and the
	 * bytes they pick out */
	MPI_Datatype hv, hi, hb;
	int blens[2] = {1, 2};
	MPI_Aint hdisp[2] = {0, 12}, bdisp[2] = {4, 16}, lb, ext;
	MPI_Type_hvector(2, 1, 8, MPI_INT, &hv);
	MPI_Type_hindexed(2, blens, hdisp, MPI_INT, &hi);
	MPI_Type_create_hindexed_block(2, 1, bdisp, MPI_INT, &hb);
	MPI_Type_commit(&hv);
	MPI_Type_commit(&hi);
	MPI_Type_commit(&hb);
	int sz[3];
	MPI_Type_size(hv, &sz[0]);
	MPI_Type_size(hi, &sz[1]);
	MPI_Type_size(hb, &sz[2]);
	MPI_Type_get_extent(hi, &lb, &ext);
	CK(sz[0] == 8 && sz[1] == 12 && sz[2] == 8 && lb == 0 && ext == 20, "h-types: sizes %d %d %d, hindexed extent %ld", sz[0],
	   sz[1], sz[2], (long)ext);
	int src[8] = {10, 11, 12, 13, 14, 15, 16, 17}, pick[3] = {0, 0, 0};
	pos = 0;
	MPI_Pack(src, 1, hi, pk, sizeof(pk), &pos, MPI_COMM_WORLD);
	memcpy(pick, pk, sizeof(pick));
	CK(pos == 12 && pick[0] == 10 && pick[1] == 13 && pick[2] == 14, "hindexed picks %d %d %d", pick[0], pick[1], pick[2]);
	pos = 0;
	MPI_Pack(src, 1, hb, pk, sizeof(pk), &pos, MPI_COMM_WORLD);
	memcpy(pick, pk, 2 * sizeof(int));
	CK(pos == 8 && pick[0] == 11 && pick[1] == 14, "hindexed_block picks %d %d", pick[0], pick[1]);
	pos = 0;
	MPI_Pack(src, 1, hv, pk, sizeof(pk), &pos, MPI_COMM_WORLD);
	memcpy(pick, pk, 2 * sizeof(int));
	CK(pos == 8 && pick[0] == 10 && pick[1] == 12, "hvector picks %d %d", pick[0], pick[1]);
	MPI_Type_free(&hv);
	MPI_Type_free(&hi);
	MPI_Type_free(&hb);
}

/* ------------------------------------------------------ info and memory */

static void info(void)
{
	MPI_Info in = MPI_INFO_NULL, dup = MPI_INFO_NULL;
	int n = -1, flag = -1, len = -1;
	char val[MPI_MAX_INFO_VAL + 1], key[MPI_MAX_INFO_KEY];
	CK(MPI_Info_create(&in) == MPI_SUCCESS && in != MPI_INFO_NULL, "Info_create");
	MPI_Info_get_nkeys(in, &n);
	CK(n == 0, "a new info has %d keys", n);
	MPI_Info_set(in, "b", "2");
	MPI_Info_set(in, "a", "one");
	MPI_Info_set(in, "b", "two"); /* replaced in place: b stays first */
	MPI_Info_get_nkeys(in, &n);
	CK(n == 2, "two keys, not %d", n);
	MPI_Info_get_nthkey(in, 0, key);
	CK(!strcmp(key, "b"), "key 0 is '%s'", key);
	MPI_Info_get_nthkey(in, 1, key);
	CK(!strcmp(key, "a"), "key 1 is '%s'", key);
	MPI_Info_get(in, "b", MPI_MAX_INFO_VAL, val, &flag);
	CK(flag && !strcmp(val, "two"), "b is '%s' (flag %d)", val, flag);
	/* a value cut to valuelen characters, terminated */
	memset(val, 'x', sizeof(val));
	MPI_Info_get(in, "a", 2, val, &flag);
	CK(flag && !strcmp(val, "on") && val[3] == 'x', "a cut to 2 characters: '%.4s'", val);
	MPI_Info_get_valuelen(in, "a", &len, &flag);
	CK(flag && len == 3, "valuelen of a: %d", len);
	MPI_Info_get(in, "zz", MPI_MAX_INFO_VAL, val, &flag);
	CK(!flag, "a missing key found");
	MPI_Info_get_valuelen(in, "zz", &len, &flag);
	CK(!flag, "a missing key has a length");
	CK(MPI_Info_dup(in, &dup) == MPI_SUCCESS, "Info_dup");
	MPI_Info_delete(in, "b");
	MPI_Info_get_nkeys(in, &n);
	CK(n == 1, "after delete: %d keys", n);
	MPI_Info_get_nkeys(dup, &n);
	MPI_Info_get(dup, "b", MPI_MAX_INFO_VAL, val, &flag);
	CK(n == 2 && flag && !strcmp(val, "two"), "the duplicate lost its keys: %d, '%s'", n, val);
	/* the longest key and value there may be */
	char lkey[MPI_MAX_INFO_KEY], *lval = malloc(MPI_MAX_INFO_VAL + 1);
	memset(lkey, 'k', sizeof(lkey) - 1);
	lkey[sizeof(lkey) - 1] = '\0';
	memset(lval, 'v', MPI_MAX_INFO_VAL);
	lval[MPI_MAX_INFO_VAL] = '\0';
	CK(MPI_Info_set(in, lkey, lval) == MPI_SUCCESS, "the longest key and value refused");
	MPI_Info_get_nthkey(in, 1, key);
	CK(!strcmp(key, lkey), "the longest key back");
	free(lval);
	/* memory for messages, with and without hints */
	double *a = NULL, *b = NULL;
	CK(MPI_Alloc_mem(1000 * sizeof(double), MPI_INFO_NULL, &a) == MPI_SUCCESS && a && (uintptr_t)a % 64 == 0,
	   "Alloc_mem without hints");
	CK(MPI_Alloc_mem(1000 * sizeof(double), in, &b) == MPI_SUCCESS && b, "Alloc_mem with an info");
	for (int i = 0; i < 1000; i++)
		a[i] = rank + i;
	MPI_Allreduce(a, b, 1000, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
	int good = 1;
	for (int i = 0; i < 1000; i++)
		good &= b[i] == size * (size - 1) / 2.0 + (double)size * i;
	CK(good, "an allreduce between Alloc_mem buffers");
	int to = (rank + 1) % size, from = (rank + size - 1) % size;
	MPI_Sendrecv(a, 1000, MPI_DOUBLE, to, 70, b, 1000, MPI_DOUBLE, from, 70, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	CK(b[0] == from && b[999] == from + 999, "a ring between Alloc_mem buffers: %g", b[0]);
	void *z = NULL;
	CK(MPI_Alloc_mem(0, MPI_INFO_NULL, &z) == MPI_SUCCESS && z && MPI_Free_mem(z) == MPI_SUCCESS, "Alloc_mem of 0 bytes");
	CK(MPI_Free_mem(a) == MPI_SUCCESS && MPI_Free_mem(b) == MPI_SUCCESS, "Free_mem");
	CK(MPI_Info_free(&in) == MPI_SUCCESS && in == MPI_INFO_NULL, "Info_free");
	CK(MPI_Info_free(&dup) == MPI_SUCCESS && dup == MPI_INFO_NULL, "Info_free of the duplicate");
}

/* ---------------------------------------------------------------- errors */

static void errors(void)
{
	int x = 0, y[4] = {0}, rc, cls;
	MPI_Status st;
	struct expect {
		int rc, want;
		const char *what;
	} e[64];
	int ne = 0;
#define E(call, cls_) e[ne++] = (struct expect){(call), (cls_), #call}
	E(MPI_Send(NULL, 4, MPI_INT, 0, 0, MPI_COMM_WORLD), MPI_ERR_BUFFER);
	E(MPI_Send(&x, -1, MPI_INT, 0, 0, MPI_COMM_WORLD), MPI_ERR_COUNT);
	E(MPI_Send(&x, 1, (MPI_Datatype)12345, 0, 0, MPI_COMM_WORLD), MPI_ERR_TYPE);
	E(MPI_Send(&x, 1, MPI_INT, 0, -5, MPI_COMM_WORLD), MPI_ERR_TAG);
	E(MPI_Send(&x, 1, MPI_INT, 0, 0, (MPI_Comm)4321), MPI_ERR_COMM);
	E(MPI_Send(&x, 1, MPI_INT, size + 3, 0, MPI_COMM_WORLD), MPI_ERR_RANK);
	E(MPI_Wait(NULL, &st), MPI_ERR_REQUEST);
	E(MPI_Bcast(&x, 1, MPI_INT, size, MPI_COMM_WORLD), MPI_ERR_ROOT);
	E(MPI_Group_size((MPI_Group)9999, &x), MPI_ERR_GROUP);
	E(MPI_Allreduce(&x, y, 1, MPI_INT, (MPI_Op)7777, MPI_COMM_WORLD), MPI_ERR_OP);
	E(MPI_Cartdim_get(MPI_COMM_WORLD, &x), MPI_ERR_TOPOLOGY);
	int dims[2] = {size + 1, 0}; /* does not divide size */
	E(MPI_Dims_create(size, 2, dims), MPI_ERR_DIMS);
	/* grids and graphs that cannot be */
	MPI_Comm bad = MPI_COMM_NULL;
	int neg[2] = {-2, 1}, big[1] = {size + 1}, per[2] = {0, 0}, gidx[2] = {1, 2}, gedges[2] = {5, -3}, down[2] = {2, 1};
	E(MPI_Cart_create(MPI_COMM_WORLD, 2, neg, per, 0, &bad), MPI_ERR_DIMS);
	E(MPI_Cart_create(MPI_COMM_WORLD, 1, big, per, 0, &bad), MPI_ERR_DIMS);
	E(MPI_Graph_create(MPI_COMM_WORLD, 2, gidx, gedges, 0, &bad), MPI_ERR_ARG);
	E(MPI_Graph_create(MPI_COMM_WORLD, 2, down, gedges, 0, &bad), MPI_ERR_ARG);
	/* freeing what is predefined, and the null handles */
	MPI_Datatype tint = MPI_INT;
	MPI_Comm wc = MPI_COMM_WORLD;
	MPI_Op sum = MPI_SUM;
	MPI_Request nreq = MPI_REQUEST_NULL;
	MPI_Status anyst = {0};
	E(MPI_Type_free(&tint), MPI_ERR_TYPE);
	E(MPI_Comm_free(&wc), MPI_ERR_COMM);
	E(MPI_Op_free(&sum), MPI_ERR_OP);
	E(MPI_Get_count(&anyst, MPI_DATATYPE_NULL, &x), MPI_ERR_TYPE);
	E(MPI_Cancel(&nreq), MPI_ERR_REQUEST);
	CK(tint == MPI_INT && wc == MPI_COMM_WORLD && sum == MPI_SUM, "a refused free changed its handle");
	E(MPI_Get_count(NULL, MPI_INT, &x), MPI_ERR_ARG);
	/* info objects and memory */
	MPI_Info in = MPI_INFO_NULL, none = MPI_INFO_NULL;
	char buf[8], longkey[MPI_MAX_INFO_KEY + 8];
	memset(longkey, 'k', sizeof(longkey) - 1);
	longkey[sizeof(longkey) - 1] = '\0';
	char *longval = malloc(MPI_MAX_INFO_VAL + 2);
	memset(longval, 'v', MPI_MAX_INFO_VAL + 1);
	longval[MPI_MAX_INFO_VAL + 1] = '\0';
	MPI_Info_create(&in);
	E(MPI_Info_free(&none), MPI_ERR_INFO);
	E(MPI_Info_set((MPI_Info)5555, "a", "b"), MPI_ERR_INFO);
	E(MPI_Info_set(in, longkey, "b"), MPI_ERR_INFO_KEY);
	E(MPI_Info_set(in, "", "b"), MPI_ERR_INFO_KEY);
	E(MPI_Info_set(in, "a", longval), MPI_ERR_INFO_VALUE);
	E(MPI_Info_set(in, "a", ""), MPI_ERR_INFO_VALUE);
	E(MPI_Info_delete(in, "never-set"), MPI_ERR_INFO_NOKEY);
	E(MPI_Info_get_nthkey(in, 0, buf), MPI_ERR_ARG);
	void *mem = NULL;
	E(MPI_Alloc_mem((MPI_Aint)1 << 60, MPI_INFO_NULL, &mem), MPI_ERR_NO_MEM);
	E(MPI_Alloc_mem(-1, MPI_INFO_NULL, &mem), MPI_ERR_ARG);
	E(MPI_Alloc_mem(8, (MPI_Info)5555, &mem), MPI_ERR_INFO);
	E(MPI_Free_mem(buf), MPI_ERR_BASE);
	CK(mem == NULL, "a refused Alloc_mem gave memory");
	MPI_Info_free(&in);
	free(longval);
	/* truncation: a message of 4 ints into a buffer of 1 */
	int to = (rank + 1) % size, from = (rank + size - 1) % size;
	MPI_Request r;
	int four[4] = {1, 2, 3, 4};
	MPI_Irecv(&x, 1, MPI_INT, from, 60, MPI_COMM_WORLD, &r);
	MPI_Send(four, 4, MPI_INT, to, 60, MPI_COMM_WORLD);
	E(MPI_Wait(&r, &st), MPI_ERR_TRUNCATE);
	/* in a Waitall: MPI_ERR_IN_STATUS, the request's own class in its status */
	MPI_Request rr[2];
	MPI_Status sts[2];
	MPI_Irecv(&x, 1, MPI_INT, from, 61, MPI_COMM_WORLD, &rr[0]);
	MPI_Isend(four, 4, MPI_INT, to, 61, MPI_COMM_WORLD, &rr[1]);
	E(MPI_Waitall(2, rr, sts), MPI_ERR_IN_STATUS);
	CK(sts[0].MPI_ERROR == MPI_ERR_TRUNCATE, "Waitall's status of the truncated receive: %d", sts[0].MPI_ERROR);
	/* every request completed: none is left MPI_ERR_PENDING, the send's
	 * status says it succeeded */
	CK(sts[1].MPI_ERROR == MPI_SUCCESS && rr[0] == MPI_REQUEST_NULL && rr[1] == MPI_REQUEST_NULL,
	   "Waitall's status of the good send: %d", sts[1].MPI_ERROR);
#undef E
	for (int i = 0; i < ne; i++) {
		cls = -1;
		MPI_Error_class(e[i].rc, &cls);
		CK(cls == e[i].want, "%s gave class %d (code %d), not %d", e[i].what, cls, e[i].rc, e[i].want);
	}
	/* every class has a class (itself) and a string */
	for (int c = MPI_SUCCESS; c < MPI_ERR_LASTCODE; c++) {
		char s[MPI_MAX_ERROR_STRING];
		int len = -1;
		cls = -1;
		rc = MPI_Error_class(c, &cls);
		CK(rc == MPI_SUCCESS && cls == c, "Error_class of class %d: %d", c, cls);
		rc = MPI_Error_string(c, s, &len);
		CK(rc == MPI_SUCCESS && len > 0 && len < MPI_MAX_ERROR_STRING && (int)strlen(s) == len,
		   "Error_string of class %d: length %d", c, len);
	}
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	/* a call that fails is a failed check, and the run goes on */
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	static const struct {
		const char *name;
		void (*fn)(void);
	} sections[] = {{"zero", zero_p2p},   {"zero", zero_coll},     {"inplace", inplace}, {"persist", persist},
			{"elements", elements}, {"probe", probe}, {"comm", comm}, {"misc", misc}, {"info", info},
			{"errors", errors}};
	for (size_t s = 0; s < sizeof(sections) / sizeof(sections[0]); s++) {
		int want = argc < 2;
		for (int a = 1; a < argc; a++)
			want |= !strcmp(argv[a], sections[s].name);
		if (!want)
			continue;
		sections[s].fn();
		MPI_Barrier(MPI_COMM_WORLD);
	}
	int all[2] = {checks, failed}, sum[2];
	MPI_Reduce(all, sum, 2, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
	if (rank == 0) {
		if (sum[1])
			printf("conform: %d of %d checks FAILED\n", sum[1], sum[0]);
		else
			printf("conform: all passed: %d checks on %d ranks\n", sum[0], size);
	}
	MPI_Finalize();
	return failed ? 1 : 0;
}
