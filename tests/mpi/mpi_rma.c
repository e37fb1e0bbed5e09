/*
 * One-sided communication, checked byte by byte on any number of ranks:
 * puts, gets and accumulates through fence, post/start/complete/wait and
 * lock/unlock epochs; derived origin types; MPI_REPLACE; mutual exclusion
 * of locks while their target waits in a barrier; attributes and groups;
 * the error classes of calls outside their epoch or window. Rank 0 prints
 * the verdict; the exit status says it.
 *
 *   mpi_rma [SECTION ...]   fence, pscw, lock, errors (default: all)
 *   mpi_rma hang            rank 0 keeps a lock that rank 1 waits for (hung)
 *   mpi_rma puttime BYTES   rank 0 puts BYTES into rank 1 in a lock epoch
 *                           and prints when it posted the put, in ps
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size, checks, failed;

#define CK(cond, ...)                                                                                            \
	do {                                                                                                     \
		checks++;                                                                                        \
		if (!(cond)) {                                                                                   \
			failed++;                                                                                \
			fprintf(stderr, "rma: rank %d: ", rank);                                                 \
			fprintf(stderr, __VA_ARGS__);                                                            \
			fputc('\n', stderr);                                                                     \
		}                                                                                                \
	} while (0)

#define N 1000

/* the value rank r's window holds at i before anyone writes */
static int initial(int r, int i) { return r * 100000 + i; }

static void fill(int *w) {
	for (int i = 0; i < 4 * N; i++)
		w[i] = initial(rank, i);
}

/* fence: put into the right neighbour, get from the left, accumulate into
 * rank 0, with derived types at the origin */
static void fence(void)
{
	int *mem = NULL, right = (rank + 1) % size, left = (rank + size - 1) % size;
	MPI_Alloc_mem(4 * N * sizeof(int), MPI_INFO_NULL, &mem);
	fill(mem);
	MPI_Win win;
	CK(MPI_Win_create(mem, 4 * N * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win) == MPI_SUCCESS,
	   "Win_create");
	int out[N], got[N], every[2 * N];
	for (int i = 0; i < N; i++)
		out[i] = -(rank * N + i);
	for (int i = 0; i < 2 * N; i++)
		every[i] = 7;
	/* every other int of `every`: a vector at the origin */
	MPI_Datatype strided;
	MPI_Type_vector(N, 1, 2, MPI_INT, &strided);
	MPI_Type_commit(&strided);
	for (int i = 0; i < N; i++)
		every[2 * i] = rank + i;
	MPI_Win_fence(MPI_MODE_NOPRECEDE, win);
	MPI_Put(out, N, MPI_INT, right, 0, N, MPI_INT, win);
	MPI_Get(got, N, MPI_INT, left, 2 * N, N, MPI_INT, win);
	MPI_Put(every, 1, strided, right, N, N, MPI_INT, win);
	MPI_Accumulate(&rank, 1, MPI_INT, 0, 3 * N, 1, MPI_INT, MPI_SUM, win);
	MPI_Accumulate(out, 10, MPI_INT, 0, 3 * N + 10, 10, MPI_INT, MPI_MAX, win);
	MPI_Win_fence(0, win);
	int bad = 0;
	for (int i = 0; i < N; i++) {
		bad += mem[i] != -(left * N + i);
		bad += mem[N + i] != left + i;
		bad += got[i] != initial(left, 2 * N + i);
	}
	CK(!bad, "fence: %d wrong ints put or got", bad);
	if (rank == 0) {
		CK(mem[3 * N] == initial(0, 3 * N) + size * (size - 1) / 2, "fence: accumulated sum %d", mem[3 * N]);
		for (int i = 0; i < 10; i++)
			CK(mem[3 * N + 10 + i] == initial(0, 3 * N + 10 + i), "fence: MPI_MAX changed int %d", i);
	}
	/* a second epoch on the same window: gets into a vector, MPI_REPLACE */
	for (int i = 0; i < 2 * N; i++)
		every[i] = -1;
	MPI_Get(every, 1, strided, right, 0, N, MPI_INT, win);
	int mine = 4242 + rank;
	MPI_Accumulate(&mine, 1, MPI_INT, right, 3 * N + 500, 1, MPI_INT, MPI_REPLACE, win);
	MPI_Win_fence(MPI_MODE_NOSUCCEED, win);
	bad = 0;
	for (int i = 0; i < N; i++)
		bad += every[2 * i] != -(rank * N + i) || every[2 * i + 1] != -1;
	CK(!bad, "fence: %d wrong ints got into a vector", bad);
	CK(mem[3 * N + 500] == 4242 + left, "fence: MPI_REPLACE left %d", mem[3 * N + 500]);
	/* attributes and group */
	void *base = NULL;
	MPI_Aint *wsize = NULL;
	int *unit = NULL, flag = 0, gsize = 0;
	MPI_Win_get_attr(win, MPI_WIN_BASE, &base, &flag);
	CK(flag && base == mem, "MPI_WIN_BASE");
	MPI_Win_get_attr(win, MPI_WIN_SIZE, &wsize, &flag);
	CK(flag && wsize && *wsize == (MPI_Aint)(4 * N * sizeof(int)), "MPI_WIN_SIZE");
	MPI_Win_get_attr(win, MPI_WIN_DISP_UNIT, &unit, &flag);
	CK(flag && unit && *unit == (int)sizeof(int), "MPI_WIN_DISP_UNIT");
	MPI_Group g;
	MPI_Win_get_group(win, &g);
	MPI_Group_size(g, &gsize);
	CK(gsize == size, "Win_get_group: %d members", gsize);
	MPI_Group_free(&g);
	MPI_Type_free(&strided);
	CK(MPI_Win_free(&win) == MPI_SUCCESS && win == MPI_WIN_NULL, "Win_free");
	MPI_Free_mem(mem);
}

/* post/start/complete/wait: each rank exposes its window to its left
 * neighbour and accesses its right one; then everyone accesses rank 0 */
static void pscw(void)
{
	int *mem = malloc(4 * N * sizeof(int)), right = (rank + 1) % size, left = (rank + size - 1) % size;
	fill(mem);
	MPI_Win win;
	MPI_Win_create(mem, 4 * N * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
	MPI_Group world, gl, gr, g0;
	MPI_Comm_group(MPI_COMM_WORLD, &world);
	MPI_Group_incl(world, 1, &left, &gl);
	MPI_Group_incl(world, 1, &right, &gr);
	int zero = 0;
	MPI_Group_incl(world, 1, &zero, &g0);
	int out[N], got[N];
	for (int i = 0; i < N; i++)
		out[i] = 7 * rank + i;
	for (int round = 0; round < 3; round++) {
		MPI_Win_post(gl, 0, win);
		MPI_Win_start(gr, 0, win);
		MPI_Put(out, N, MPI_INT, right, round * N, N, MPI_INT, win);
		MPI_Get(got, N, MPI_INT, right, 3 * N, N, MPI_INT, win);
		MPI_Accumulate(out, 4, MPI_INT, right, 3 * N + 100, 4, MPI_INT, MPI_SUM, win);
		MPI_Win_complete(win);
		MPI_Win_wait(win);
		int bad = 0;
		for (int i = 0; i < N; i++)
			bad += mem[round * N + i] != 7 * left + i;
		for (int i = 0; i < N; i++)
			if (i < 100 || i >= 104)
				bad += got[i] != initial(right, 3 * N + i);
		CK(!bad, "pscw round %d: %d wrong ints", round, bad);
		for (int i = 0; i < 4; i++)
			CK(mem[3 * N + 100 + i] == initial(rank, 3 * N + 100 + i) + (round + 1) * (7 * left + i),
			   "pscw round %d: accumulated %d", round, mem[3 * N + 100 + i]);
	}
	/* everyone into rank 0, which exposes to the whole world */
	if (rank == 0)
		MPI_Win_post(world, 0, win);
	MPI_Win_start(g0, 0, win);
	int one = 1;
	MPI_Accumulate(&one, 1, MPI_INT, 0, 3 * N + 900, 1, MPI_INT, MPI_SUM, win);
	MPI_Put(&rank, 1, MPI_INT, 0, 3 * N + 901 + rank, 1, MPI_INT, win);
	MPI_Win_complete(win);
	if (rank == 0) {
		MPI_Win_wait(win);
		CK(mem[3 * N + 900] == initial(0, 3 * N + 900) + size, "pscw: %d accumulates", mem[3 * N + 900] - initial(0, 3 * N + 900));
		int bad = 0;
		for (int r = 0; r < size; r++)
			bad += mem[3 * N + 901 + r] != r;
		CK(!bad, "pscw: %d ranks' puts missing", bad);
	}
	MPI_Group_free(&gl);
	MPI_Group_free(&gr);
	MPI_Group_free(&g0);
	MPI_Group_free(&world);
	MPI_Win_free(&win);
	free(mem);
}

/* lock/unlock: every rank adds to a counter at rank 0 under an exclusive
 * lock, 20 times (lost updates would show), and puts its slot; rank 0
 * waits in a barrier meanwhile; then shared locks read it back */
static void lock(void)
{
	long *mem = calloc(64 + (size_t)size, sizeof(long));
	MPI_Win win;
	MPI_Win_create(mem, (64 + size) * sizeof(long), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
	const int rounds = 20;
	long one = 1, two[2] = {2, 3};
	for (int k = 0; k < rounds; k++) {
		MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
		MPI_Accumulate(&one, 1, MPI_LONG, 0, 0, 1, MPI_LONG, MPI_SUM, win);
		MPI_Accumulate(two, 2, MPI_LONG, 0, 1, 2, MPI_LONG, MPI_SUM, win);
		long me = rank * 1000 + k;
		MPI_Put(&me, 1, MPI_LONG, 0, 64 + rank, 1, MPI_LONG, win);
		MPI_Win_unlock(0, win);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	long back[3] = {0, 0, 0}, slot = -1;
	MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
	MPI_Get(back, 3, MPI_LONG, 0, 0, 3, MPI_LONG, win);
	MPI_Get(&slot, 1, MPI_LONG, 0, 64 + rank, 1, MPI_LONG, win);
	MPI_Win_unlock(0, win);
	CK(back[0] == (long)rounds * size && back[1] == 2L * rounds * size && back[2] == 3L * rounds * size,
	   "lock: counters %ld %ld %ld, not %ld (an update lost: two held the lock at once)", back[0], back[1], back[2],
	   (long)rounds * size);
	CK(slot == rank * 1000 + rounds - 1, "lock: slot %ld", slot);
	/* a lock on one's own window, and one without a lock at all */
	MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win);
	long mine = 5;
	MPI_Accumulate(&mine, 1, MPI_LONG, rank, 10, 1, MPI_LONG, MPI_SUM, win);
	MPI_Win_unlock(rank, win);
	MPI_Win_lock(MPI_LOCK_SHARED, rank, MPI_MODE_NOCHECK, win);
	MPI_Get(&slot, 1, MPI_LONG, rank, 10, 1, MPI_LONG, win);
	MPI_Win_unlock(rank, win);
	CK(slot == 5 && mem[10] == 5, "lock on oneself: %ld", slot);
	MPI_Win_free(&win);
	free(mem);
}

static void errors(void)
{
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	int mem[16] = {0}, x = 1, cls;
	MPI_Win win;
	MPI_Win_create(mem, sizeof(mem), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
	/* a window's own handler: fatal until set, whatever the world's */
	MPI_Errhandler eh = MPI_ERRHANDLER_NULL;
	MPI_Win_get_errhandler(win, &eh);
	CK(eh == MPI_ERRORS_ARE_FATAL, "a new window's error handler: %d", eh);
	MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
	MPI_Win_get_errhandler(win, &eh);
	CK(eh == MPI_ERRORS_RETURN, "Win_set_errhandler: %d", eh);
	struct {
		int rc, want;
		const char *what;
	} e[16];
	int ne = 0;
#define E(call, c) e[ne++] = (typeof(e[0])){(call), (c), #call}
	E(MPI_Put(&x, 1, MPI_INT, 0, 0, 1, MPI_INT, win), MPI_ERR_RMA_SYNC);
	E(MPI_Win_fence(1 << 30, win), MPI_ERR_ASSERT);
	MPI_Win_fence(0, win);
	E(MPI_Put(&x, 1, MPI_INT, 0, 16, 1, MPI_INT, win), MPI_ERR_RMA_RANGE);
	E(MPI_Put(&x, 1, MPI_INT, size, 0, 1, MPI_INT, win), MPI_ERR_RANK);
	E(MPI_Put(&x, 1, MPI_INT, 0, -1, 1, MPI_INT, win), MPI_ERR_DISP);
	E(MPI_Put(&x, 1, MPI_INT, 0, 0, 2, MPI_SHORT, win), MPI_ERR_TYPE);
	E(MPI_Accumulate(&x, 1, MPI_INT, 0, 0, 1, MPI_INT, MPI_OP_NULL, win), MPI_ERR_OP);
	E(MPI_Accumulate(&x, 1, MPI_INT, 0, 0, 1, MPI_FLOAT, MPI_SUM, win), MPI_ERR_TYPE);
	E(MPI_Win_lock(77, 0, 0, win), MPI_ERR_LOCKTYPE);
	E(MPI_Win_unlock(0, win), MPI_ERR_RMA_SYNC);
	E(MPI_Win_complete(win), MPI_ERR_RMA_SYNC);
	E(MPI_Win_fence(0, (MPI_Win)9999), MPI_ERR_WIN);
	E(MPI_Win_create(mem, -1, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win), MPI_ERR_SIZE);
	E(MPI_Put(&x, 1, MPI_INT, MPI_PROC_NULL, 0, 1, MPI_INT, win), MPI_SUCCESS);
#undef E
	MPI_Win_fence(MPI_MODE_NOSUCCEED, win);
	for (int i = 0; i < ne; i++) {
		cls = -1;
		MPI_Error_class(e[i].rc, &cls);
		CK(cls == e[i].want, "%s gave class %d, not %d", e[i].what, cls, e[i].want);
	}
	CK(mem[0] == 0, "a refused put changed the window");
	MPI_Win_free(&win);
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

/* rank 0 puts `bytes` into rank 1 and prints when it posted the put */
static void puttime(long bytes)
{
	char *mem = calloc((size_t)bytes, 1), *src = malloc((size_t)bytes);
	memset(src, 0x5a, (size_t)bytes);
	MPI_Win win;
	MPI_Win_create(mem, rank == 1 ? bytes : 0, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
	if (rank == 0) {
		MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, MPI_MODE_NOCHECK, win);
		double t0 = MPI_Wtime();
		MPI_Put(src, (int)bytes, MPI_BYTE, 1, 0, (int)bytes, MPI_BYTE, win);
		MPI_Win_unlock(1, win);
		printf("puttime: posted at %.0f ps\n", t0 * 1e12);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	if (rank == 1) {
		long bad = 0;
		for (long i = 0; i < bytes; i++)
			bad += mem[i] != 0x5a;
		CK(!bad, "puttime: %ld bytes wrong", bad);
	}
	MPI_Win_free(&win);
	free(mem);
	free(src);
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	static const struct {
		const char *name;
		void (*fn)(void);
	} sections[] = {{"fence", fence}, {"pscw", pscw}, {"lock", lock}, {"errors", errors}};
	if (argc == 2 && !strcmp(argv[1], "hang") && size >= 2) {
		/* rank 0 keeps its lock and waits in a barrier; rank 1 waits
		 * for the lock: a deadlock the hang detector must stop */
		int mem[4];
		MPI_Win win;
		MPI_Win_create(mem, sizeof(mem), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
		if (rank <= 1) {
			if (rank == 1)
				MPI_Barrier(MPI_COMM_SELF);
			MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
		}
		MPI_Barrier(MPI_COMM_WORLD);
		printf("rma: the lock was given twice\n");
	} else if (argc == 3 && !strcmp(argv[1], "puttime") && size >= 2) {
		puttime(atol(argv[2]));
	} else {
		for (size_t k = 0; k < sizeof(sections) / sizeof(sections[0]); k++) {
			int want = argc < 2;
			for (int a = 1; a < argc; a++)
				want |= !strcmp(argv[a], sections[k].name);
			if (want)
				sections[k].fn();
		}
	}
	int all[2] = {checks, failed}, sum[2];
	MPI_Reduce(all, sum, 2, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
	if (rank == 0) {
		if (sum[1])
			printf("rma: %d of %d checks FAILED\n", sum[1], sum[0]);
		else
			printf("rma: all passed: %d checks on %d ranks\n", sum[0], size);
	}
	MPI_Finalize();
	return failed ? 1 : 0;
}
