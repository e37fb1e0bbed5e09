/*
 * A STREAM-style kernel in an MPI program: each rank runs the triad
 * a = b + s * c over N doubles, timed with MPI_Wtime, and the ranks agree
 * on the slowest time. Under torusrun the program's own work costs emulated
 * time only with --compute-speed or --compute-cpi: free, the triad takes
 * no time and the rate is infinite.
 *
 * It also checks the charge itself: the CPU time this thread spent between
 * the two MPI_Wtime calls (measured here, around the same work) over the
 * emulated time they saw must be the speed given (argument F, 0: free, the
 * emulated time nothing but the clock reads' cost), within 2% and 20 us.
 *
 *   mpi_stream F [N]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double cpu_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	int rank;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	double speed = argc > 1 ? atof(argv[1]) : 0;
	long n = argc > 2 ? atol(argv[2]) : 2000000;
	double *a = malloc((size_t)n * sizeof(double)), *b = malloc((size_t)n * sizeof(double)),
	       *c = malloc((size_t)n * sizeof(double));
	for (long i = 0; i < n; i++) {
		b[i] = (double)i;
		c[i] = 2.0 * (double)i;
	}
	MPI_Barrier(MPI_COMM_WORLD);
	double t0 = MPI_Wtime(), c0 = cpu_s();
	for (int rep = 0; rep < 5; rep++)
		for (long i = 0; i < n; i++)
			a[i] = b[i] + 3.0 * c[i] + rep;
	double c1 = cpu_s(), t1 = MPI_Wtime();
	double t = t1 - t0, cpu = c1 - c0, slowest = 0;
	MPI_Allreduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
	int bad = a[n - 1] != (double)(n - 1) + 6.0 * (double)(n - 1) + 4;
	/* the charge: cpu / speed, give or take the clock reads */
	double want = speed > 0 ? cpu / speed : 0, off = t - want;
	if (off < 0)
		off = -off;
	int charged = off <= 0.02 * want + 20e-6;
	double bytes = 5.0 * 3.0 * sizeof(double) * (double)n;
	if (rank == 0)
		printf("stream: triad of %ld doubles x5: %.9f s emulated (slowest rank), %.9f s of CPU here, rate %.1f MB/s\n",
		       n, slowest, cpu, bytes / slowest / 1e6);
	int all = 0, mine = bad || !charged;
	if (!charged)
		fprintf(stderr, "stream: rank %d: %.9f s emulated for %.9f s of CPU at speed %g\n", rank, t, cpu, speed);
	MPI_Reduce(&mine, &all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
	if (rank == 0)
		printf("stream: %s\n", all ? "FAILED" : "charged as given");
	MPI_Finalize();
	free(a);
	free(b);
	free(c);
	return mine;
}
