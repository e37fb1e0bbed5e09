/*
 * What a benchmark suite's utility header looks like: helpers declared
 * with MPI-2's types (MPI_Info, MPI_Win) and constants, which a program
 * that never calls them must still compile with, at -O0 too.
 */
#ifndef MPI2_HELPERS_H
#define MPI2_HELPERS_H

#include <mpi.h>

enum win_kind { WIN_CREATE, WIN_ALLOCATE };

struct bench_window {
	MPI_Win win;
	void *base;
	MPI_Aint size;
	MPI_Info hints;
};

int bench_window_make(struct bench_window *w, enum win_kind kind, MPI_Aint size, MPI_Info info, MPI_Comm comm);
int bench_window_free(struct bench_window *w);
int bench_lock(MPI_Win win, int target, int shared);
/* the attributes a helper would ask MPI_Win_get_attr for */
static const int bench_win_attrs[] = {MPI_WIN_BASE, MPI_WIN_SIZE, MPI_WIN_DISP_UNIT};
static const int bench_lock_kinds[] = {MPI_LOCK_EXCLUSIVE, MPI_LOCK_SHARED};
static const int bench_assert_none = MPI_MODE_NOCHECK & 0;

#endif
