/*
 * MPI programs that fail on purpose (test_mpi): "abort" rank 1 calls
 * MPI_Abort(MPI_COMM_WORLD, 5); "fatal": rank 0 sends to a rank that does
 * not exist under MPI_ERRORS_ARE_FATAL; "missing": calls a function the
 * front end does not have (only compiled, to see the error name it).
 * Deadlocks, which the hang detector must stop: "recv-first" (every rank
 * receives from its neighbour before it sends), "ssend-first" (every rank
 * MPI_Ssends first), "coll-mismatch" (rank 0 broadcasts while the
 * others reduce a message too large to be sent eagerly) and
 * "coll-mismatch-short" (the same with 8 bytes, which the collectives send
 * in any order). "small-colls": 20 rounds of small allreduces, broadcasts,
 * reductions and scans, checked (their waits ask the timekeeper nothing).
 * "eager-named" and "eager-any": rank 0 sends rank 1 16 messages of 16 KiB
 * (eager, 64 packets each), which rank 1 receives naming the source or
 * with MPI_ANY_SOURCE; on 3 ranks or more, rank 2 sends rank 1 a 1 MiB
 * message (a rendezvous) meanwhile. Checked byte for byte.
 * "ops-mismatch": the ranks allreduce 8 bytes, rank 0 with MPI_SUM and the
 * others with MPI_MAX; "bcast-reduce": rank 0 broadcasts 8 bytes from
 * itself while the others reduce to it (every rank only sends): both are
 * mismatched collective calls, an error ("ops-mismatch" in the call,
 * "bcast-reduce" at MPI_Finalize), not a silent success.
 * "truncate" and "truncate-wait": rank 0 sends rank 1 100 ints (eager),
 * which rank 1 receives into a buffer of 10 by MPI_Recv, or by MPI_Irecv
 * and MPI_Wait: a fatal truncation, whose message gives both sizes.
 * "promise-other" (3 ranks): rank 0 streams rank 1 four messages of 16
 * KiB into receives posted ahead, while rank 1 receives four short ones
 * from rank 2 (each finished while rank 1 waits on rank 0's stream, a
 * promise it must keep before it returns) and answers each: checked byte
 * for byte, and no send refused.
 */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
	int rank, size, x = 0;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	const char *what = argc > 1 ? argv[1] : "";
	if (!strcmp(what, "abort") && rank == 1)
		MPI_Abort(MPI_COMM_WORLD, 5);
	if (!strcmp(what, "fatal") && rank == 0)
		MPI_Send(&x, 1, MPI_INT, size + 98, 0, MPI_COMM_WORLD);
	int peer = (rank + 1) % size;
	if (!strcmp(what, "recv-first"))
		MPI_Recv(&x, 1, MPI_INT, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	if (!strcmp(what, "ssend-first"))
		MPI_Ssend(&x, 1, MPI_INT, peer, 0, MPI_COMM_WORLD);
	if (!strcmp(what, "ops-mismatch")) {
		double v = rank + 1, out = 0;
		MPI_Allreduce(&v, &out, 1, MPI_DOUBLE, rank ? MPI_MAX : MPI_SUM, MPI_COMM_WORLD);
		printf("mpi-fail: rank %d allreduce gave %g\n", rank, out);
	}
	if (!strcmp(what, "bcast-reduce")) {
		double v = rank + 1, out = 0;
		if (rank == 0)
			MPI_Bcast(&v, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
		else
			MPI_Reduce(&v, &out, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
		printf("mpi-fail: rank %d past the mismatched calls\n", rank);
	}
	if (!strncmp(what, "truncate", 8) && size >= 2) {
		int big[100] = {0}, small[10];
		if (rank == 0)
			MPI_Send(big, 100, MPI_INT, 1, 0, MPI_COMM_WORLD);
		if (rank == 1 && !strcmp(what, "truncate")) {
			MPI_Recv(small, 10, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		} else if (rank == 1) {
			MPI_Request rq;
			MPI_Irecv(small, 10, MPI_INT, 0, 0, MPI_COMM_WORLD, &rq);
			MPI_Wait(&rq, MPI_STATUS_IGNORE);
		}
	}
	if (!strcmp(what, "coll-mismatch")) {
		static double big[1 << 16], out[1 << 16];
		if (rank == 0)
			MPI_Bcast(big, 1 << 16, MPI_DOUBLE, 0, MPI_COMM_WORLD);
		else
			MPI_Reduce(big, out, 1 << 16, MPI_DOUBLE, MPI_SUM, 1, MPI_COMM_WORLD);
	}
	if (!strcmp(what, "coll-mismatch-short")) {
		double v = 1, out = 0;
		if (rank == 0)
			MPI_Bcast(&v, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
		else
			MPI_Reduce(&v, &out, 1, MPI_DOUBLE, MPI_SUM, 1, MPI_COMM_WORLD);
	}
	if (!strcmp(what, "small-colls")) {
		int bad = 0;
		for (int i = 0; i < 20; i++) {
			long a = rank + i, s = 0, b = rank == i % size ? 1000 + i : -1, r = 0, sc = 0;
			MPI_Allreduce(&a, &s, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
			MPI_Bcast(&b, 1, MPI_LONG, i % size, MPI_COMM_WORLD);
			MPI_Reduce(&a, &r, 1, MPI_LONG, MPI_MAX, i % size, MPI_COMM_WORLD);
			MPI_Scan(&a, &sc, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
			bad += s != (long)size * (size - 1) / 2 + (long)size * i || b != 1000 + i ||
			       (rank == i % size && r != size - 1 + i) || sc != (long)rank * (rank + 1) / 2 + (long)(rank + 1) * i;
		}
		printf("mpi-fail: rank %d small collectives: %d wrong\n", rank, bad);
	}
	if (!strncmp(what, "eager-", 6) && size >= 2) {
		enum { N = 16, LEN = 16384, BIG = 1 << 20 };
		static unsigned char buf[N][LEN], big[BIG];
		int any = !strcmp(what, "eager-any"), bad = 0;
		MPI_Request rq = MPI_REQUEST_NULL;
		if (rank == 0)
			for (int i = 0; i < N; i++) {
				for (int j = 0; j < LEN; j++)
					buf[i][j] = (unsigned char)(i * 7 + j);
				MPI_Send(buf[i], LEN, MPI_BYTE, 1, i, MPI_COMM_WORLD);
			}
		if (rank == 2) {
			for (int j = 0; j < BIG; j++)
				big[j] = (unsigned char)(j * 3);
			MPI_Send(big, BIG, MPI_BYTE, 1, 99, MPI_COMM_WORLD);
		}
		if (rank == 1) {
			if (size > 2)
				MPI_Irecv(big, BIG, MPI_BYTE, 2, 99, MPI_COMM_WORLD, &rq);
			for (int i = 0; i < N; i++) {
				MPI_Status st;
				MPI_Recv(buf[i], LEN, MPI_BYTE, any ? MPI_ANY_SOURCE : 0, i, MPI_COMM_WORLD, &st);
				for (int j = 0; j < LEN; j++)
					bad += buf[i][j] != (unsigned char)(i * 7 + j);
				bad += st.MPI_SOURCE != 0;
			}
			MPI_Wait(&rq, MPI_STATUS_IGNORE);
			for (int j = 0; size > 2 && j < BIG; j++)
				bad += big[j] != (unsigned char)(j * 3);
			printf("mpi-fail: rank 1 eager stream: %d wrong\n", bad);
		}
	}
	if (!strcmp(what, "promise-other") && size >= 3) {
		enum { N = 4, LEN = 16384 };
		static unsigned char buf[N][LEN];
		int bad = 0;
		if (rank == 0) {
			for (int i = 0; i < N; i++) {
				for (int j = 0; j < LEN; j++)
					buf[i][j] = (unsigned char)(i * 5 + j);
				MPI_Send(buf[i], LEN, MPI_BYTE, 1, i, MPI_COMM_WORLD);
			}
		}
		if (rank == 2) {
			for (int i = 0; i < N; i++) {
				long v = 100 + i, back = 0;
				MPI_Send(&v, 1, MPI_LONG, 1, 10 + i, MPI_COMM_WORLD);
				MPI_Recv(&back, 1, MPI_LONG, 1, 20 + i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
				bad += back != 2 * v;
			}
			printf("mpi-fail: rank 2 answers: %d wrong\n", bad);
		}
		if (rank == 1) {
			MPI_Request rq[N];
			for (int i = 0; i < N; i++)
				MPI_Irecv(buf[i], LEN, MPI_BYTE, 0, i, MPI_COMM_WORLD, &rq[i]);
			for (int i = 0; i < N; i++) {
				long v = 0;
				MPI_Recv(&v, 1, MPI_LONG, 2, 10 + i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
				v *= 2;
				MPI_Send(&v, 1, MPI_LONG, 2, 20 + i, MPI_COMM_WORLD); /* right after a promised wait */
			}
			MPI_Waitall(N, rq, MPI_STATUSES_IGNORE);
			for (int i = 0; i < N; i++)
				for (int j = 0; j < LEN; j++)
					bad += buf[i][j] != (unsigned char)(i * 5 + j);
			printf("mpi-fail: rank 1 stream beside answers: %d wrong\n", bad);
		}
	}
#ifdef MISSING
	MPI_Comm inter;
	MPI_Intercomm_create(MPI_COMM_WORLD, 0, MPI_COMM_WORLD, 0, 0, &inter);
#endif
	MPI_Barrier(MPI_COMM_WORLD);
	if (!strcmp(what, "wtime")) /* the host's clock runs in seconds since boot; the emulated one from 0 */
		printf("mpi-fail: rank %d wtime %s\n", rank, MPI_Wtime() > 1.0 ? "wall" : "emulated");
	printf("mpi-fail: rank %d got past the failure\n", rank);
	MPI_Finalize();
	return 0;
}
