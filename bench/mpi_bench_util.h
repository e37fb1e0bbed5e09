/*
 * What the MPI comparison programs (bench/mpi_allreduce.c, mpi_alltoall.c)
 * share: their command-line numbers and the median's sort. Header-only, so
 * each stays one file for mpicc and smpicc (a quoted include is found next
 * to the source).
 */
#ifndef BENCH_MPI_BENCH_UTIL_H
#define BENCH_MPI_BENCH_UTIL_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "4194304", "4M", "4MiB", "512K" -> bytes; -1 on error */
static inline long long parse_size(const char *s)
{
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (errno || end == s || v < 0)
		return -1;
	long long mul = 1;
	if (*end == 'K' || *end == 'k')
		mul = 1LL << 10, end++;
	else if (*end == 'M' || *end == 'm')
		mul = 1LL << 20, end++;
	else if (*end == 'G' || *end == 'g')
		mul = 1LL << 30, end++;
	if (mul > 1 && (!strcmp(end, "iB") || !strcmp(end, "B")))
		end += strlen(end);
	else if (mul == 1 && !strcmp(end, "B"))
		end++;
	if (*end || v > (1LL << 40) / mul)
		return -1;
	return v * mul;
}

/* 1 .. 1000000; -1 on error */
static inline long parse_reps(const char *s)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < 1 || v > 1000000)
		return -1;
	return v;
}

static inline int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Positional argument `which` (1: the size, 2: the repetitions) of prog:
 * 0, or 2 after saying what is wrong (on rank 0). */
static inline int bench_positional(const char *prog, int which, const char *val, long long *bytes, long *reps,
				   int rank)
{
	if (which == 1 && (*bytes = parse_size(val)) < 0) {
		if (rank == 0)
			fprintf(stderr, "%s: bad size '%s'\n", prog, val);
		return 2;
	}
	if (which == 2 && (*reps = parse_reps(val)) < 0) {
		if (rank == 0)
			fprintf(stderr, "%s: bad repetition count '%s' (1..1000000)\n", prog, val);
		return 2;
	}
	return 0;
}

/* 0 if bytes holds at least one element of `what` (esz bytes), else 2 */
static inline int bench_min_size(const char *prog, long long bytes, size_t esz, const char *what, int rank)
{
	if (bytes >= (long long)esz)
		return 0;
	if (rank == 0)
		fprintf(stderr, "%s: %lld bytes is less than one %s\n", prog, bytes, what);
	return 2;
}

#endif
