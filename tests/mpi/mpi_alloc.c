/*
 * An MPI program that allocates every buffer with MPI_Alloc_mem and frees
 * it with MPI_Free_mem, and includes a header of helpers declared with
 * MPI_Info and MPI_Win that it never calls: built at -O0 (where nothing
 * unused is dropped) it must compile, link and run. A ring of 64 KiB and
 * an allreduce, checked.
 */
#include "mpi2_helpers.h"

#include <stdio.h>

int main(int argc, char **argv)
{
	int rank, size, bad = 0;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	const int n = 8192;
	long *out = NULL, *in = NULL;
	MPI_Info hints = MPI_INFO_NULL;
	MPI_Info_create(&hints);
	MPI_Info_set(hints, "alloc_shared_noncontig", "true");
	if (MPI_Alloc_mem((MPI_Aint)(n * sizeof(long)), MPI_INFO_NULL, &out) || MPI_Alloc_mem((MPI_Aint)(n * sizeof(long)), hints, &in))
		MPI_Abort(MPI_COMM_WORLD, 1);
	for (int i = 0; i < n; i++)
		out[i] = (long)rank * n + i;
	MPI_Sendrecv(out, n, MPI_LONG, (rank + 1) % size, 1, in, n, MPI_LONG, (rank + size - 1) % size, 1, MPI_COMM_WORLD,
		     MPI_STATUS_IGNORE);
	for (int i = 0; i < n; i++)
		bad += in[i] != (long)((rank + size - 1) % size) * n + i;
	MPI_Allreduce(out, in, n, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
	for (int i = 0; i < n; i++)
		bad += in[i] != (long)n * size * (size - 1) / 2 + (long)size * i;
	bad += bench_win_attrs[0] != MPI_WIN_BASE || bench_lock_kinds[1] != MPI_LOCK_SHARED || bench_assert_none;
	MPI_Free_mem(out);
	MPI_Free_mem(in);
	MPI_Info_free(&hints);
	int all = 0;
	MPI_Reduce(&bad, &all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
	if (rank == 0)
		printf("mpi_alloc: %s on %d ranks\n", all ? "FAILED" : "all passed", size);
	MPI_Finalize();
	return bad != 0;
}
