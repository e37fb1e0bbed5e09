/*
 * mpi_allreduce: wall time of MPI_Allreduce (double, sum) over every rank of
 * MPI_COMM_WORLD, the Open MPI side of bench/mpi_compare.sh.
 *
 *   mpirun -np 64 ./mpi_allreduce [BYTES [REPS]]
 *   mpirun -np 64 ./mpi_allreduce [--bytes BYTES] [--reps REPS]
 *
 * BYTES is the whole vector each rank starts with (torus-bench's n), rounded
 * down to whole doubles; suffixes K, M, G (= 2^10, 2^20, 2^30) are accepted.
 * Default 4M (4194304). REPS timed calls, default 5.
 *
 * One untimed warm-up call, then REPS calls, each timed on rank 0 exactly as
 * torus-bench times the emulator's collective:
 *
 *   MPI_Barrier; t0 = MPI_Wtime(); MPI_Allreduce; MPI_Barrier; t1 = MPI_Wtime();
 *   MPI_Barrier (then the check)
 *
 * Rank 0 prints one line on stdout:
 *
 *   mpi_allreduce bytes=4194304 ranks=64 reps=5 median_s=0.012345 min_s=... max_s=...
 *
 * Input: element i of rank r is r + 1 + (i % 7), so element i of the sum is
 * P(P+1)/2 + P (i % 7), exact in double. The receive buffer is filled with
 * NaN before every call (outside the timed region) and every element of every
 * call's result is checked on every rank. A wrong result prints the first
 * bad rank and element on stderr and every rank exits 1; a bad command line
 * exits 2.
 */
#include <mpi.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_bench_util.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: mpirun -np P mpi_allreduce [BYTES [REPS]]\n"
		"       mpirun -np P mpi_allreduce [--bytes BYTES] [--reps REPS]\n"
		"  BYTES    vector size per rank in bytes, rounded down to whole doubles;\n"
		"           suffixes K, M, G (2^10, 2^20, 2^30); default 4M\n"
		"  REPS     timed calls after one warm-up call; default 5\n"
		"  --help   this text\n"
		"MPI_Allreduce of doubles (sum) over MPI_COMM_WORLD. Each timed call is\n"
		"Barrier, t0, Allreduce, Barrier, t1 on rank 0 (as torus-bench times the\n"
		"emulator). Rank 0 prints one line:\n"
		"  mpi_allreduce bytes=N ranks=P reps=R median_s=S min_s=S max_s=S\n"
		"Every element of every call's result is checked against the closed form;\n"
		"a wrong result exits 1, a bad command line 2.\n");
}

/* 0: run; 1: --help printed; 2: error printed */
static int parse_args(int argc, char **argv, long long *bytes, long *reps, int rank)
{
	int npos = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *val = NULL;
		int which = 0; /* 1 bytes, 2 reps */
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			if (rank == 0)
				usage(stdout);
			return 1;
		} else if (!strcmp(a, "--bytes") || !strcmp(a, "--reps")) {
			which = a[2] == 'b' ? 1 : 2;
			if (i + 1 >= argc) {
				if (rank == 0)
					fprintf(stderr, "mpi_allreduce: %s needs a value\n", a);
				return 2;
			}
			val = argv[++i];
		} else if (!strncmp(a, "--bytes=", 8)) {
			which = 1, val = a + 8;
		} else if (!strncmp(a, "--reps=", 7)) {
			which = 2, val = a + 7;
		} else if (a[0] == '-' && a[1]) {
			if (rank == 0)
				fprintf(stderr, "mpi_allreduce: unknown option '%s' (try --help)\n", a);
			return 2;
		} else {
			which = ++npos;
			val = a;
			if (npos > 2) {
				if (rank == 0)
					fprintf(stderr, "mpi_allreduce: too many arguments (try --help)\n");
				return 2;
			}
		}
		if (bench_positional("mpi_allreduce", which, val, bytes, reps, rank))
			return 2;
	}
	return bench_min_size("mpi_allreduce", *bytes, sizeof(double), "double", rank);
}

/* index of the first wrong element, or -1 */
static long long check(const double *out, long long count, int p)
{
	const double base = (double)p * (p + 1) / 2;
	for (long long i = 0; i < count; i++)
		if (out[i] != base + (double)p * (double)(i % 7))
			return i;
	return -1;
}

int main(int argc, char **argv)
{
	int rank = 0, p = 1;
	long long bytes = 4LL << 20;
	long reps = 5;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &p);

	int prc = parse_args(argc, argv, &bytes, &reps, rank);
	if (prc) {
		MPI_Finalize();
		return prc == 1 ? 0 : 2;
	}

	const long long count = bytes / (long long)sizeof(double);
	bytes = count * (long long)sizeof(double);
	if (count > 0x7fffffffLL) {
		if (rank == 0)
			fprintf(stderr, "mpi_allreduce: %lld elements exceed an MPI count\n", count);
		MPI_Finalize();
		return 2;
	}
	double *in = malloc((size_t)bytes), *out = malloc((size_t)bytes);
	double *times = calloc((size_t)reps, sizeof *times);
	int ok = in && out && times, all_ok;
	MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
	if (!all_ok) {
		if (!ok)
			fprintf(stderr, "mpi_allreduce: rank %d: out of memory for %lld bytes\n", rank, bytes);
		MPI_Finalize();
		return 1;
	}
	for (long long i = 0; i < count; i++)
		in[i] = (double)(rank + 1) + (double)(i % 7);

	int bad = 0;
	for (long r = -1; r < reps && !bad; r++) { /* r == -1: warm-up */
		memset(out, 0xff, (size_t)bytes); /* NaN: a call that writes nothing fails */
		MPI_Barrier(MPI_COMM_WORLD);
		double t0 = MPI_Wtime();
		int rc = MPI_Allreduce(in, out, (int)count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
		MPI_Barrier(MPI_COMM_WORLD);
		double t1 = MPI_Wtime();
		if (r >= 0)
			times[r] = t1 - t0;
		/* as torus-bench: the others check only once rank 0 has read the clock */
		MPI_Barrier(MPI_COMM_WORLD);

		long long at = rc == MPI_SUCCESS ? check(out, count, p) : 0;
		int mine = (rc != MPI_SUCCESS || at >= 0) ? rank + 1 : 0, first;
		MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
		if (mine) {
			if (rc != MPI_SUCCESS)
				fprintf(stderr, "mpi_allreduce: rank %d: MPI_Allreduce returned %d\n", rank, rc);
			else
				fprintf(stderr, "mpi_allreduce: rank %d: wrong result at element %lld of call %ld (0: the warm-up): %.17g, expected %.17g\n",
					rank, at, r + 1, out[at], (double)p * (p + 1) / 2 + (double)p * (double)(at % 7));
		}
		bad = first != 0;
	}

	if (!bad && rank == 0) {
		qsort(times, (size_t)reps, sizeof *times, cmp_double);
		double med = reps % 2 ? times[reps / 2] : (times[reps / 2 - 1] + times[reps / 2]) / 2;
		printf("mpi_allreduce bytes=%lld ranks=%d reps=%ld median_s=%.6f min_s=%.6f max_s=%.6f\n", bytes, p,
		       reps, med, times[0], times[reps - 1]);
		fflush(stdout);
	}
	free(in);
	free(out);
	free(times);
	MPI_Finalize();
	return bad ? 1 : 0;
}
