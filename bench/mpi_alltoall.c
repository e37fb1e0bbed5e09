/*
 * mpi_alltoall: time of MPI_Alltoall (MPI_INT) over every rank of
 * MPI_COMM_WORLD; the MPI side of bench/simgrid_alltoall.sh (SimGrid SMPI,
 * where MPI_Wtime is simulated time) and usable with Open MPI as well.
 *
 *   mpirun  -np 64 ./mpi_alltoall [BYTES_PER_BLOCK [REPS]]
 *   smpirun -np 64 -platform P.xml -hostfile H ./mpi_alltoall [BYTES_PER_BLOCK [REPS]]
 *
 * BYTES_PER_BLOCK is what every rank sends to every rank (itself included),
 * rounded down to whole int32s; suffixes K, M, G (= 2^10, 2^20, 2^30) are
 * accepted. Default 65536. REPS timed calls, default 3. The send and the
 * receive buffer of a rank are P * BYTES_PER_BLOCK bytes each.
 *
 * One untimed warm-up call, then REPS calls, each timed on every rank as
 *
 *   MPI_Barrier; t0 = MPI_Wtime(); MPI_Alltoall; t1 = MPI_Wtime();
 *
 * and the call's time is the maximum of t1 - t0 over the ranks (MPI_Reduce,
 * MPI_MAX, to rank 0). Rank 0 also reads the host's clock around
 * [MPI_Alltoall; MPI_Barrier]: the wall time of the call on the host (under
 * SMPI, which runs every rank in one process and answers clock_gettime in
 * simulated time, it is read past SMPI's macro: the wall time of simulating
 * the call). Rank 0 prints one line on stdout:
 *
 *   mpi_alltoall: ranks P block B bytes: median T s (min Tmin, max Tmax), call wall median W s, check ok
 *
 * Input: element i of the block rank r sends to rank d is pattern(r, d, i), a
 * 64-bit mix of (r, d, i) cut to 32 bits, so a block delivered to the wrong
 * rank, from the wrong rank or shifted is caught. The receive buffer is
 * filled with a poison value before every call (outside the timed region)
 * and every element of every call (the warm-up included) is checked on every
 * rank. A wrong result prints the first bad element on stderr, rank 0 prints
 * the line with "check FAILED" and every rank exits 1; a bad command line
 * exits 2.
 *
 * No mutable globals, so SMPI needs no privatization for it.
 */
#include <mpi.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mpi_bench_util.h"

/* The host's clock: (clock_gettime) in parentheses is the C library's, not
 * SMPI's function-like macro that answers in simulated time. */
static double host_seconds(void)
{
	struct timespec ts;
	if ((clock_gettime)(CLOCK_MONOTONIC, &ts))
		return 0;
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: mpirun -np P mpi_alltoall [BYTES_PER_BLOCK [REPS]]\n"
		"  BYTES_PER_BLOCK  bytes each rank sends to each rank, rounded down to\n"
		"                   whole int32s; suffixes K, M, G (2^10, 2^20, 2^30);\n"
		"                   default 65536\n"
		"  REPS             timed calls after one warm-up call; default 3\n"
		"  --help           this text\n"
		"MPI_Alltoall of MPI_INT over MPI_COMM_WORLD. Each timed call is Barrier,\n"
		"t0, Alltoall, t1 on every rank; the call's time is the maximum over the\n"
		"ranks; its wall time is rank 0's host clock around Alltoall and a Barrier.\n"
		"Rank 0 prints one line:\n"
		"  mpi_alltoall: ranks P block B bytes: median T s (min Tmin, max Tmax), call wall median W s, check ok\n"
		"Every element of every call's result is checked; a wrong result prints\n"
		"\"check FAILED\" and exits 1, a bad command line exits 2.\n");
}

/* 0: run; 1: --help printed; 2: error printed */
static int parse_args(int argc, char **argv, long long *bytes, long *reps, int rank)
{
	int npos = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			if (rank == 0)
				usage(stdout);
			return 1;
		}
		if (a[0] == '-' && a[1]) {
			if (rank == 0)
				fprintf(stderr, "mpi_alltoall: unknown option '%s' (try --help)\n", a);
			return 2;
		}
		if (++npos > 2) {
			if (rank == 0)
				fprintf(stderr, "mpi_alltoall: too many arguments (try --help)\n");
			return 2;
		}
		if (bench_positional("mpi_alltoall", npos, a, bytes, reps, rank))
			return 2;
	}
	return bench_min_size("mpi_alltoall", *bytes, sizeof(int32_t), "int32", rank);
}

/* element i of the block src sends to dst (splitmix64 finaliser of a unique key) */
static int32_t pattern(int src, int dst, int p, long long count, long long i)
{
	uint64_t z = ((uint64_t)src * (uint64_t)p + (uint64_t)dst) * (uint64_t)count + (uint64_t)i;
	z += 0x9e3779b97f4a7c15ULL;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	z ^= z >> 31;
	return (int32_t)(uint32_t)z;
}

#define POISON ((int32_t)0x7fbadbad)

/* index (block * count + element) of the first wrong element, or -1 */
static long long check(const int32_t *recv, int rank, int p, long long count)
{
	for (int s = 0; s < p; s++)
		for (long long i = 0; i < count; i++)
			if (recv[(long long)s * count + i] != pattern(s, rank, p, count, i))
				return (long long)s * count + i;
	return -1;
}

int main(int argc, char **argv)
{
	int rank = 0, p = 1;
	long long bytes = 65536;
	long reps = 3;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &p);

	int prc = parse_args(argc, argv, &bytes, &reps, rank);
	if (prc) {
		MPI_Finalize();
		return prc == 1 ? 0 : 2;
	}

	const long long count = bytes / (long long)sizeof(int32_t);
	bytes = count * (long long)sizeof(int32_t);
	if (count > 0x7fffffffLL) {
		if (rank == 0)
			fprintf(stderr, "mpi_alltoall: %lld elements per block exceed an MPI count\n", count);
		MPI_Finalize();
		return 2;
	}
	const size_t total = (size_t)p * (size_t)bytes;
	int32_t *sendbuf = malloc(total), *recvbuf = malloc(total);
	double *times = calloc((size_t)reps, sizeof *times), *walls = calloc((size_t)reps, sizeof *walls);
	int ok = sendbuf && recvbuf && times && walls, all_ok;
	MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
	if (!all_ok) {
		if (!ok)
			fprintf(stderr, "mpi_alltoall: rank %d: out of memory for 2 x %zu bytes\n", rank, total);
		MPI_Finalize();
		return 1;
	}
	for (int d = 0; d < p; d++)
		for (long long i = 0; i < count; i++)
			sendbuf[(long long)d * count + i] = pattern(rank, d, p, count, i);

	int bad = 0;
	for (long r = -1; r < reps && !bad; r++) { /* r == -1: warm-up */
		for (size_t k = 0; k < total / sizeof(int32_t); k++)
			recvbuf[k] = POISON;
		MPI_Barrier(MPI_COMM_WORLD);
		double w0 = host_seconds();
		double t0 = MPI_Wtime();
		int rc = MPI_Alltoall(sendbuf, (int)count, MPI_INT, recvbuf, (int)count, MPI_INT, MPI_COMM_WORLD);
		double t1 = MPI_Wtime();
		/* the call is over everywhere once the barrier opens */
		MPI_Barrier(MPI_COMM_WORLD);
		double w1 = host_seconds();
		double dt = t1 - t0, dtmax = 0;
		MPI_Reduce(&dt, &dtmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
		if (r >= 0) {
			times[r] = dtmax;
			walls[r] = w1 - w0;
		}

		long long at = rc == MPI_SUCCESS ? check(recvbuf, rank, p, count) : 0;
		int mine = (rc != MPI_SUCCESS || at >= 0) ? 1 : 0, any;
		if (mine) {
			if (rc != MPI_SUCCESS)
				fprintf(stderr, "mpi_alltoall: rank %d: MPI_Alltoall returned %d\n", rank, rc);
			else
				fprintf(stderr,
					"mpi_alltoall: rank %d: wrong element %lld of the block from rank %lld in call %ld (0: the warm-up): 0x%08x, expected 0x%08x\n",
					rank, at % count, at / count, r + 1, (unsigned)recvbuf[at],
					(unsigned)pattern((int)(at / count), rank, p, count, at % count));
		}
		MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
		bad = any != 0;
	}

	if (rank == 0) {
		if (bad) {
			printf("mpi_alltoall: ranks %d block %lld bytes: check FAILED\n", p, bytes);
		} else {
			qsort(times, (size_t)reps, sizeof *times, cmp_double);
			qsort(walls, (size_t)reps, sizeof *walls, cmp_double);
			double med = reps % 2 ? times[reps / 2] : (times[reps / 2 - 1] + times[reps / 2]) / 2;
			double wmed = reps % 2 ? walls[reps / 2] : (walls[reps / 2 - 1] + walls[reps / 2]) / 2;
			printf("mpi_alltoall: ranks %d block %lld bytes: median %.9f s (min %.9f, max %.9f), "
			       "call wall median %.6f s, check ok\n",
			       p, bytes, med, times[0], times[reps - 1], wmed);
		}
		fflush(stdout);
	}
	free(sendbuf);
	free(recvbuf);
	free(times);
	free(walls);
	MPI_Finalize();
	return bad ? 1 : 0;
}
