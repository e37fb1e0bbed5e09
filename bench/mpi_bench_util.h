/*
 * What the MPI comparison programs (bench/mpi_allreduce.c, mpi_alltoall.c)
 * share: their command-line numbers and the median's sort. Header-only, so
 * each stays one file for mpicc and smpicc (a quoted include is found next
 * to the source).
 */
#ifndef BENCH_MPI_BENCH_UTIL_H
#define BENCH_MPI_BENCH_UTIL_H

#include <errno.h>
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

#endif
