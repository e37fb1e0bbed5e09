/*
 * An ordinary MPI program (it includes only mpi.h and libc), built with
 * torusmpicc: point-to-point with wildcards, ordering, truncation and the
 * error classes; every collective of the front end, against local
 * references. Prints "mpi-check: rank R: all N checks passed" per rank.
 */
#include <mpi.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size, fails, checks;

#define CHECK(cond, ...)                                                                                     \
	do {                                                                                                  \
		checks++;                                                                                     \
		if (!(cond)) {                                                                                \
			fails++;                                                                              \
			printf("mpi-check: rank %d: FAILED %s: ", rank, #cond);                               \
			printf(__VA_ARGS__);                                                                  \
			printf("\n");                                                                         \
		}                                                                                             \
	} while (0)

static void p2p(void)
{
	int next = (rank + 1) % size, prev = (rank + size - 1) % size;
	/* a ring, sizes 0 to 100000 bytes */
	static const int lens[] = {0, 1, 239, 240, 241, 4096, 100000};
	for (size_t k = 0; k < sizeof(lens) / sizeof(lens[0]); k++) {
		int n = lens[k];
		char *out = malloc((size_t)n + 1), *in = malloc((size_t)n + 1);
		for (int i = 0; i < n; i++)
			out[i] = (char)(rank * 31 + i);
		MPI_Status st;
		MPI_Sendrecv(out, n, MPI_CHAR, next, 7, in, n, MPI_CHAR, prev, 7, MPI_COMM_WORLD, &st);
		int cnt = -1, bad = 0;
		MPI_Get_count(&st, MPI_CHAR, &cnt);
		for (int i = 0; i < n; i++)
			bad += in[i] != (char)(prev * 31 + i);
		CHECK(cnt == n && !bad && st.MPI_SOURCE == prev && st.MPI_TAG == 7, "ring of %d bytes: count %d, %d bad", n,
		      cnt, bad);
		free(out);
		free(in);
	}
	/* everyone sends rank 0 three tagged messages; 0 takes them by wildcard,
	 * and each source's arrive in order */
	if (rank) {
		for (int m = 0; m < 3; m++) {
			int v[2] = {rank, m};
			MPI_Send(v, 2, MPI_INT, 0, 100 + m, MPI_COMM_WORLD);
		}
	} else {
		int *last = calloc((size_t)size, sizeof(int)), ok = 1;
		for (int i = 0; i < 3 * (size - 1); i++) {
			int v[2];
			MPI_Status st;
			MPI_Recv(v, 2, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
			ok &= st.MPI_SOURCE == v[0] && st.MPI_TAG == 100 + v[1] && v[1] == last[v[0]]++;
		}
		CHECK(ok, "wildcard receives out of order");
		free(last);
	}
	/* (MPI_ANY_TAG takes any tag: nobody sends rank 0 more until it is done) */
	MPI_Barrier(MPI_COMM_WORLD);
	/* a specific tag skips an earlier message of another tag */
	if (size > 1 && rank == 1) {
		int a = 1, b = 2;
		MPI_Send(&a, 1, MPI_INT, 0, 1, MPI_COMM_WORLD);
		MPI_Send(&b, 1, MPI_INT, 0, 2, MPI_COMM_WORLD);
	} else if (size > 1 && rank == 0) {
		int a = 0, b = 0;
		MPI_Recv(&b, 1, MPI_INT, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		MPI_Recv(&a, 1, MPI_INT, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		CHECK(a == 1 && b == 2, "tags: %d %d", a, b);
	}
	/* nonblocking both ways, posted before the sends */
	{
		double out = rank + 0.5, in = -1;
		MPI_Request rq[2];
		MPI_Irecv(&in, 1, MPI_DOUBLE, prev, 9, MPI_COMM_WORLD, &rq[0]);
		MPI_Isend(&out, 1, MPI_DOUBLE, next, 9, MPI_COMM_WORLD, &rq[1]);
		MPI_Status st[2];
		MPI_Waitall(2, rq, st);
		CHECK(in == prev + 0.5 && rq[0] == MPI_REQUEST_NULL, "isend/irecv: %g", in);
	}
	/* truncation, with errors returned */
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	if (size > 1 && rank == 1) {
		int v[4] = {1, 2, 3, 4};
		MPI_Send(v, 4, MPI_INT, 0, 5, MPI_COMM_WORLD);
	} else if (size > 1 && rank == 0) {
		int v[2] = {0, 0}, cls = -1;
		int rc = MPI_Recv(v, 2, MPI_INT, 1, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		MPI_Error_class(rc, &cls);
		CHECK(cls == MPI_ERR_TRUNCATE && v[0] == 1 && v[1] == 2, "truncation: class %d", cls);
	}
	/* bad arguments get their classes */
	int x = 0, cls = -1;
	MPI_Error_class(MPI_Send(&x, 1, MPI_INT, size, 0, MPI_COMM_WORLD), &cls);
	CHECK(cls == MPI_ERR_RANK, "bad rank: class %d", cls);
	MPI_Error_class(MPI_Send(&x, -1, MPI_INT, 0, 0, MPI_COMM_WORLD), &cls);
	CHECK(cls == MPI_ERR_COUNT, "bad count: class %d", cls);
	MPI_Error_class(MPI_Send(&x, 1, 9999, 0, 0, MPI_COMM_WORLD), &cls);
	CHECK(cls == MPI_ERR_TYPE, "bad type: class %d", cls);
	MPI_Error_class(MPI_Send(&x, 1, MPI_INT, 0, -5, MPI_COMM_WORLD), &cls);
	CHECK(cls == MPI_ERR_TAG, "bad tag: class %d", cls);
	MPI_Error_class(MPI_Send(&x, 1, MPI_INT, 0, 0, 77), &cls);
	CHECK(cls == MPI_ERR_COMM, "bad comm: class %d", cls);
	MPI_Error_class(MPI_Bcast(&x, 1, MPI_INT, size, MPI_COMM_WORLD), &cls);
	CHECK(cls == MPI_ERR_ROOT, "bad root: class %d", cls);
	MPI_Error_class(MPI_Allreduce(&x, &x, 1, MPI_FLOAT, MPI_BAND, MPI_COMM_WORLD), &cls);
	CHECK(cls == MPI_ERR_OP, "band on float: class %d", cls);
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
	/* persistent requests: a ring three times over */
	{
		int pin = -1, pout = rank;
		MPI_Request pr[2];
		MPI_Recv_init(&pin, 1, MPI_INT, prev, 40, MPI_COMM_WORLD, &pr[0]);
		MPI_Send_init(&pout, 1, MPI_INT, next, 40, MPI_COMM_WORLD, &pr[1]);
		int ok = 1;
		for (int it = 0; it < 3; it++) {
			pout = rank * 10 + it;
			MPI_Startall(2, pr);
			MPI_Waitall(2, pr, MPI_STATUSES_IGNORE);
			ok &= pin == prev * 10 + it && pr[0] != MPI_REQUEST_NULL;
		}
		MPI_Request_free(&pr[0]);
		MPI_Request_free(&pr[1]);
		CHECK(ok && pr[0] == MPI_REQUEST_NULL, "persistent ring: %d", pin);
	}
	/* sendrecv_replace around the ring */
	{
		int v[3] = {rank, rank + 1, rank + 2};
		MPI_Sendrecv_replace(v, 3, MPI_INT, next, 41, prev, 41, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		CHECK(v[0] == prev && v[2] == prev + 2, "sendrecv_replace: %d %d", v[0], v[2]);
	}
	/* buffered sends, with a buffer attached */
	{
		static char bbuf[1024];
		int v = rank, w = -1, sz = 0;
		void *back = NULL;
		MPI_Buffer_attach(bbuf, sizeof(bbuf));
		MPI_Bsend(&v, 1, MPI_INT, next, 42, MPI_COMM_WORLD);
		MPI_Recv(&w, 1, MPI_INT, prev, 42, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		MPI_Buffer_detach(&back, &sz);
		CHECK(w == prev && back == bbuf && sz == (int)sizeof(bbuf), "bsend: %d", w);
		MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
		int cls2 = -1;
		MPI_Error_class(MPI_Bsend(&v, 1, MPI_INT, next, 43, MPI_COMM_WORLD), &cls2);
		MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
		CHECK(cls2 == MPI_ERR_BUFFER, "bsend without a buffer: class %d", cls2);
	}
	/* a 64 KiB send completes when its bytes have left, about when they
	 * arrive (emulated time): not at some later wake-up of the sender */
	MPI_Barrier(MPI_COMM_WORLD); /* everyone leaves at the same emulated time */
	if (size > 1) {
		static char big[65536];
		double te = 0, peer = 0;
		if (rank == 0)
			MPI_Send(big, sizeof(big), MPI_CHAR, 1, 44, MPI_COMM_WORLD);
		else if (rank == 1)
			MPI_Recv(big, sizeof(big), MPI_CHAR, 0, 44, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		te = MPI_Wtime();
		/* (no message reaches rank 0 until the send is done: a sender
		 * that polls would wake only at its next timeout) */
		MPI_Barrier(MPI_COMM_WORLD);
		if (rank < 2)
			MPI_Sendrecv(&te, 1, MPI_DOUBLE, 1 - rank, 45, &peer, 1, MPI_DOUBLE, 1 - rank, 45, MPI_COMM_WORLD,
				     MPI_STATUS_IGNORE);
		CHECK(rank > 1 || (te - peer < 20e-6 && peer - te < 20e-6),
		      "a 64 KiB send ended at %.3f us, its receive at %.3f us", (rank ? peer : te) * 1e6,
		      (rank ? te : peer) * 1e6);
	}
	/* the same through MPI_Waitany and MPI_Waitsome, which handle arrivals
	 * while they wait: they wake when the send is done, not at a timeout
	 * (under --exact, 1 ms of emulated time) */
	MPI_Barrier(MPI_COMM_WORLD);
	if (size > 1) {
		static char big[65536];
		double te = 0, peer = 0;
		MPI_Request rq = MPI_REQUEST_NULL;
		int idx = -1, outc = 0, ids[1];
		if (rank == 0) {
			MPI_Isend(big, sizeof(big), MPI_CHAR, 1, 46, MPI_COMM_WORLD, &rq);
			MPI_Waitany(1, &rq, &idx, MPI_STATUS_IGNORE);
		} else if (rank == 1) {
			MPI_Irecv(big, sizeof(big), MPI_CHAR, 0, 46, MPI_COMM_WORLD, &rq);
			MPI_Waitsome(1, &rq, &outc, ids, MPI_STATUSES_IGNORE);
		}
		te = MPI_Wtime();
		MPI_Barrier(MPI_COMM_WORLD);
		if (rank < 2)
			MPI_Sendrecv(&te, 1, MPI_DOUBLE, 1 - rank, 47, &peer, 1, MPI_DOUBLE, 1 - rank, 47, MPI_COMM_WORLD,
				     MPI_STATUS_IGNORE);
		CHECK(rank > 1 || (rq == MPI_REQUEST_NULL && (rank ? outc == 1 && ids[0] == 0 : idx == 0) &&
				   te - peer < 20e-6 && peer - te < 20e-6),
		      "MPI_Waitany on a 64 KiB send ended at %.3f us, MPI_Waitsome on its receive at %.3f us",
		      (rank ? peer : te) * 1e6, (rank ? te : peer) * 1e6);
	}
	/* MPI_PROC_NULL */
	MPI_Status st;
	CHECK(MPI_Recv(&x, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &st) == MPI_SUCCESS &&
		      st.MPI_SOURCE == MPI_PROC_NULL,
	      "proc null");
}

/* Rendezvous (messages over the eager limit, and synchronous sends). */
static void fill(char *b, int n, int seed)
{
	for (int i = 0; i < n; i++)
		b[i] = (char)(seed * 7 + i * 13 + (i >> 8));
}
static int bad_bytes(const char *b, int n, int seed)
{
	int bad = 0;
	for (int i = 0; i < n; i++)
		bad += b[i] != (char)(seed * 7 + i * 13 + (i >> 8));
	return bad;
}

static void rendezvous(void)
{
	int next = (rank + 1) % size, prev = (rank + size - 1) % size;
	/* around the ring, at the eager limit and past it, both ways of waiting */
	static const int lens[] = {16384, 16385, 70000, 300000};
	for (size_t k = 0; k < sizeof(lens) / sizeof(lens[0]); k++) {
		int n = lens[k];
		char *out = malloc((size_t)n), *in = malloc((size_t)n);
		fill(out, n, rank);
		memset(in, 0, (size_t)n);
		MPI_Request rq[2];
		MPI_Status st[2];
		MPI_Irecv(in, n, MPI_CHAR, prev, 60, MPI_COMM_WORLD, &rq[0]);
		MPI_Isend(out, n, MPI_CHAR, next, 60, MPI_COMM_WORLD, &rq[1]);
		MPI_Waitall(2, rq, st);
		int cnt = -1;
		MPI_Get_count(&st[0], MPI_CHAR, &cnt);
		CHECK(cnt == n && !bad_bytes(in, n, prev) && st[0].MPI_SOURCE == prev, "rendezvous ring of %d bytes: count %d",
		      n, cnt);
		free(out);
		free(in);
	}
	if (size < 2)
		return;
	/* a large message that arrives before its receive: probed, then taken */
	MPI_Barrier(MPI_COMM_WORLD);
	enum { BIG = 50000 };
	static char big[BIG], got[BIG];
	if (rank == 1) {
		fill(big, BIG, 1);
		MPI_Send(big, BIG, MPI_CHAR, 0, 61, MPI_COMM_WORLD);
	} else if (rank == 0) {
		MPI_Status st;
		int cnt = -1;
		MPI_Probe(MPI_ANY_SOURCE, 61, MPI_COMM_WORLD, &st);
		MPI_Get_count(&st, MPI_CHAR, &cnt);
		memset(got, 0, BIG);
		MPI_Recv(got, BIG, MPI_CHAR, st.MPI_SOURCE, 61, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		CHECK(cnt == BIG && st.MPI_SOURCE == 1 && !bad_bytes(got, BIG, 1), "probed rendezvous: count %d from %d", cnt,
		      st.MPI_SOURCE);
	}
	/* truncated: the receive takes what fits and says so */
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	if (rank == 1) {
		fill(big, BIG, 2);
		MPI_Send(big, BIG, MPI_CHAR, 0, 62, MPI_COMM_WORLD);
	} else if (rank == 0) {
		int cls = -1;
		memset(got, 0, BIG);
		MPI_Error_class(MPI_Recv(got, 20000, MPI_CHAR, 1, 62, MPI_COMM_WORLD, MPI_STATUS_IGNORE), &cls);
		CHECK(cls == MPI_ERR_TRUNCATE && !bad_bytes(got, 20000, 2) && got[20000] == 0,
		      "rendezvous truncation: class %d", cls);
	}
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
	/* a synchronous send does not complete before its receive is posted
	 * (rank 1 posts it only after the barrier), even a small one */
	MPI_Barrier(MPI_COMM_WORLD);
	if (rank == 0) {
		int v = 77, flag = 1;
		MPI_Request rq;
		MPI_Issend(&v, 1, MPI_INT, 1, 63, MPI_COMM_WORLD, &rq);
		for (int i = 0; i < 5 && flag; i++)
			MPI_Test(&rq, &flag, MPI_STATUS_IGNORE);
		CHECK(!flag, "MPI_Issend completed before its receive was posted");
		MPI_Barrier(MPI_COMM_WORLD);
		MPI_Wait(&rq, MPI_STATUS_IGNORE);
		MPI_Ssend(&v, 1, MPI_INT, 1, 64, MPI_COMM_WORLD);
	} else {
		MPI_Barrier(MPI_COMM_WORLD);
		if (rank == 1) {
			int a = 0, b = 0;
			MPI_Recv(&a, 1, MPI_INT, 0, 63, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			MPI_Recv(&b, 1, MPI_INT, 0, 64, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			CHECK(a == 77 && b == 77, "ssend: %d %d", a, b);
		}
	}
	/* more large messages in flight than a core has DMA regions (32): the
	 * receiver sets up what fits and the rest as those complete; a freed
	 * send request goes on */
	MPI_Barrier(MPI_COMM_WORLD);
	enum { W = 40, WB = 20000 };
	if (rank == 1) {
		char *o = malloc((size_t)W * WB);
		MPI_Request rq[W];
		for (int i = 0; i < W; i++) {
			fill(o + (size_t)i * WB, WB, 100 + i);
			MPI_Isend(o + (size_t)i * WB, WB, MPI_CHAR, 0, 70 + i, MPI_COMM_WORLD, &rq[i]);
		}
		MPI_Request_free(&rq[W - 1]);
		MPI_Waitall(W - 1, rq, MPI_STATUSES_IGNORE);
		MPI_Barrier(MPI_COMM_WORLD); /* rank 0 has the last one too: o may go */
		free(o);
	} else if (rank == 0) {
		char *in = calloc((size_t)W, WB);
		MPI_Request rq[W];
		for (int i = W - 1; i >= 0; i--) /* posted in reverse: matched by tag */
			MPI_Irecv(in + (size_t)i * WB, WB, MPI_CHAR, 1, 70 + i, MPI_COMM_WORLD, &rq[i]);
		MPI_Waitall(W, rq, MPI_STATUSES_IGNORE);
		int bad = 0;
		for (int i = 0; i < W; i++)
			bad += bad_bytes(in + (size_t)i * WB, WB, 100 + i);
		CHECK(!bad, "%d messages in flight: %d bad bytes", W, bad);
		free(in);
		MPI_Barrier(MPI_COMM_WORLD);
	} else {
		MPI_Barrier(MPI_COMM_WORLD);
	}
	/* both ways at once, osu_bibw's pattern: each of a pair posts 48 large
	 * sends before its 48 receives, more than a core's DMA regions (32);
	 * the sends must leave regions for the receives' gets */
	if (size >= 2 && rank < 2) {
		enum { BW = 48, BB = 20000 };
		int peer = 1 - rank, bad = 0;
		char *o = malloc((size_t)BW * BB), *in = calloc((size_t)BW, BB);
		MPI_Request rq[2 * BW];
		for (int i = 0; i < BW; i++) {
			fill(o + (size_t)i * BB, BB, 200 + 50 * rank + i);
			MPI_Isend(o + (size_t)i * BB, BB, MPI_CHAR, peer, 80, MPI_COMM_WORLD, &rq[i]);
		}
		for (int i = 0; i < BW; i++)
			MPI_Irecv(in + (size_t)i * BB, BB, MPI_CHAR, peer, 80, MPI_COMM_WORLD, &rq[BW + i]);
		int rc = MPI_Waitall(2 * BW, rq, MPI_STATUSES_IGNORE);
		for (int i = 0; i < BW; i++)
			bad += bad_bytes(in + (size_t)i * BB, BB, 200 + 50 * peer + i);
		CHECK(rc == MPI_SUCCESS && !bad, "%d large sends each way before the receives: rc %d, %d bad bytes", BW, rc,
		      bad);
		free(o), free(in);
	}
	/* a large buffered send completes before its receive is posted */
	MPI_Barrier(MPI_COMM_WORLD);
	if (rank == 1) {
		char *bb = malloc(BIG + MPI_BSEND_OVERHEAD);
		void *back;
		int sz;
		MPI_Buffer_attach(bb, BIG + MPI_BSEND_OVERHEAD);
		fill(big, BIG, 3);
		MPI_Bsend(big, BIG, MPI_CHAR, 0, 65, MPI_COMM_WORLD);
		MPI_Barrier(MPI_COMM_WORLD);
		MPI_Buffer_detach(&back, &sz);
		free(bb);
	} else {
		MPI_Barrier(MPI_COMM_WORLD);
		if (rank == 0) {
			memset(got, 0, BIG);
			MPI_Recv(got, BIG, MPI_CHAR, 1, 65, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			CHECK(!bad_bytes(got, BIG, 3), "large bsend");
		}
	}
}

/* User operations: 2x2 matrix products mod 1009 (associative, and not
 * commutative), four MPI_INTs per matrix; and a commutative sum. */
static void matmul(void *in, void *inout, int *len, MPI_Datatype *t)
{
	const int *a = in;
	int *b = inout;
	if (*t != MPI_INT)
		return;
	for (int k = 0; k + 3 < *len; k += 4) {
		int r[4] = {(a[k] * b[k] + a[k + 1] * b[k + 2]) % 1009, (a[k] * b[k + 1] + a[k + 1] * b[k + 3]) % 1009,
			    (a[k + 2] * b[k] + a[k + 3] * b[k + 2]) % 1009, (a[k + 2] * b[k + 1] + a[k + 3] * b[k + 3]) % 1009};
		memcpy(b + k, r, sizeof(r));
	}
}
static void isum(void *in, void *inout, int *len, MPI_Datatype *t)
{
	(void)t;
	for (int k = 0; k < *len; k++)
		((int *)inout)[k] += ((const int *)in)[k];
}
/* rank r's matrix, the k-th of a buffer */
static void mat_of(int r, int k, int *m)
{
	m[0] = (r + 2 + k) % 1009, m[1] = 1, m[2] = 1, m[3] = k % 3;
}
/* the product of ranks lo..hi's k-th matrices, in rank order */
static void product(int lo, int hi, int k, int *p)
{
	p[0] = 1, p[1] = 0, p[2] = 0, p[3] = 1;
	for (int r = lo; r <= hi; r++) {
		int m[4], len = 4;
		mat_of(r, k, m);
		MPI_Datatype t = MPI_INT;
		matmul(p, m, &len, &t); /* m = p * m */
		memcpy(p, m, sizeof(m));
	}
}

static void user_ops(void)
{
	enum { K = 3 };
	MPI_Op mm, sum;
	int commute = -1, c2 = -1;
	MPI_Op_create(matmul, 0, &mm);
	MPI_Op_create(isum, 1, &sum);
	MPI_Op_commutative(mm, &commute);
	MPI_Op_commutative(sum, &c2);
	CHECK(commute == 0 && c2 == 1, "commutative: %d %d", commute, c2);
	int mine[4 * K], out[4 * K], want[4 * K];
	for (int k = 0; k < K; k++) {
		mat_of(rank, k, mine + 4 * k);
		product(0, size - 1, k, want + 4 * k);
	}
	/* reduce to the last rank and to rank 0, and allreduce */
	for (int root = size - 1, n = 0; n < 2; root = 0, n++) {
		memset(out, 0, sizeof(out));
		MPI_Reduce(mine, out, 4 * K, MPI_INT, mm, root, MPI_COMM_WORLD);
		CHECK(rank != root || !memcmp(out, want, sizeof(want)), "reduce to %d of matrices: %d %d %d %d", root, out[0],
		      out[1], out[2], out[3]);
	}
	memset(out, 0, sizeof(out));
	MPI_Allreduce(mine, out, 4 * K, MPI_INT, mm, MPI_COMM_WORLD);
	CHECK(!memcmp(out, want, sizeof(want)), "allreduce of matrices: %d %d %d %d", out[0], out[1], out[2], out[3]);
	/* scan and exscan: the products of ranks 0..rank and 0..rank-1 */
	int pre[4 * K], ex[4 * K];
	for (int k = 0; k < K; k++)
		product(0, rank, k, pre + 4 * k);
	MPI_Scan(mine, out, 4 * K, MPI_INT, mm, MPI_COMM_WORLD);
	CHECK(!memcmp(out, pre, sizeof(pre)), "scan of matrices: %d %d %d %d", out[0], out[1], out[2], out[3]);
	for (int k = 0; k < K; k++)
		product(0, rank - 1, k, ex + 4 * k);
	MPI_Exscan(mine, out, 4 * K, MPI_INT, mm, MPI_COMM_WORLD);
	CHECK(rank == 0 || !memcmp(out, ex, sizeof(ex)), "exscan of matrices: %d %d %d %d", out[0], out[1], out[2], out[3]);
	/* reduce_scatter_block: a matrix per rank */
	int *all = malloc(sizeof(int) * 4 * (size_t)size), blk[4], w[4];
	for (int j = 0; j < size; j++)
		mat_of(rank, j, all + 4 * j);
	MPI_Reduce_scatter_block(all, blk, 4, MPI_INT, mm, MPI_COMM_WORLD);
	product(0, size - 1, rank, w);
	CHECK(!memcmp(blk, w, sizeof(w)), "reduce_scatter_block of matrices: %d %d %d %d", blk[0], blk[1], blk[2], blk[3]);
	free(all);
	/* a commutative user operation, in place */
	int v[2] = {rank, 1};
	MPI_Allreduce(MPI_IN_PLACE, v, 2, MPI_INT, sum, MPI_COMM_WORLD);
	CHECK(v[0] == size * (size - 1) / 2 && v[1] == size, "allreduce, a user sum: %d %d", v[0], v[1]);
	MPI_Op mm_handle = mm;
	MPI_Op_free(&mm);
	MPI_Op_free(&sum);
	CHECK(mm == MPI_OP_NULL && sum == MPI_OP_NULL, "op_free");
	/* a freed operation is an error */
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	int cls = -1;
	MPI_Op dead = mm_handle;
	MPI_Error_class(MPI_Allreduce(v, out, 1, MPI_INT, dead, MPI_COMM_WORLD), &cls);
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
	CHECK(cls == MPI_ERR_OP, "a freed operation: class %d", cls);
}

/* User operations on derived types. A matrix is four ints two apart
 * (MPI_Type_vector(4, 1, 2): the ints between them are not its own); the
 * user's function sees that layout and that type. A record of an int and
 * a double (mixed parts) takes a user operation too. */
static MPI_Datatype smat;
static void matmul_strided(void *in, void *inout, int *len, MPI_Datatype *t)
{
	MPI_Aint lb, ext;
	if (*t != smat)
		return; /* the wrong type given: the results show it */
	MPI_Type_get_extent(smat, &lb, &ext);
	for (int k = 0; k < *len; k++) {
		const int *a = (const int *)((const char *)in + k * ext);
		int *b = (int *)((char *)inout + k * ext);
		int x[4] = {a[0], a[2], a[4], a[6]}, y[4] = {b[0], b[2], b[4], b[6]}, n = 4;
		MPI_Datatype it = MPI_INT;
		matmul(x, y, &n, &it);
		for (int i = 0; i < 4; i++)
			b[2 * i] = y[i];
	}
}
struct irec {
	int n;
	double top;
};
static MPI_Datatype irec_t;
static void irec_op(void *in, void *inout, int *len, MPI_Datatype *t)
{
	if (*t != irec_t)
		return;
	for (int k = 0; k < *len; k++) {
		const struct irec *a = (const struct irec *)in + k;
		struct irec *b = (struct irec *)inout + k;
		b->n += a->n;
		b->top = a->top > b->top ? a->top : b->top;
	}
}
/* n strided matrices, the k-th rank r's (mat_of(r, first + k)), with the
 * ints between them set to `gap` */
static void smat_fill(int *b, int n, int r, int first, int gap)
{
	for (int k = 0; k < n; k++) {
		int m[4];
		mat_of(r, first + k, m);
		for (int i = 0; i < 7; i++)
			b[7 * k + i] = i % 2 ? gap : m[i / 2];
	}
}
/* do n strided matrices at b hold the products of ranks lo..hi's
 * (matrices first ..), with the gaps still `gap`? */
static int smat_is(const int *b, int n, int lo, int hi, int first, int gap)
{
	int ok = 1;
	for (int k = 0; k < n; k++) {
		int w[4];
		product(lo, hi, first + k, w);
		for (int i = 0; i < 7; i++)
			ok &= b[7 * k + i] == (i % 2 ? gap : w[i / 2]);
	}
	return ok;
}

static void user_ops_derived(void)
{
	enum { K = 3 };
	MPI_Op mm, rop;
	MPI_Op_create(matmul_strided, 0, &mm);
	MPI_Op_create(irec_op, 1, &rop);
	MPI_Type_vector(4, 1, 2, MPI_INT, &smat);
	MPI_Type_commit(&smat);
	int bl[2] = {1, 1};
	MPI_Aint dp[2] = {offsetof(struct irec, n), offsetof(struct irec, top)};
	MPI_Datatype tp[2] = {MPI_INT, MPI_DOUBLE};
	MPI_Type_create_struct(2, bl, dp, tp, &irec_t);
	MPI_Type_commit(&irec_t);
	MPI_Aint lb = -1, ext = -1, tlb = -1, text = -1;
	MPI_Type_get_extent(smat, &lb, &ext);
	MPI_Type_get_true_extent(smat, &tlb, &text);
	CHECK(lb == 0 && ext == 7 * (MPI_Aint)sizeof(int) && tlb == 0 && text == ext, "strided matrix extents");
	/* buffers of K + 1 elements (7 ints each): the last is never written */
	int mine[7 * (K + 1)], out[7 * (K + 1)];
	smat_fill(mine, K, rank, 0, -5);
	for (int root = size - 1, n = 0; n < 2; root = 0, n++) {
		for (int i = 0; i < 7 * (K + 1); i++)
			out[i] = -1;
		MPI_Reduce(mine, out, K, smat, mm, root, MPI_COMM_WORLD);
		CHECK(rank != root || (smat_is(out, K, 0, size - 1, 0, -1) && out[7 * K] == -1),
		      "reduce to %d, a user operation on a derived type: %d %d %d", root, out[0], out[1], out[2]);
	}
	for (int i = 0; i < 7 * (K + 1); i++)
		out[i] = -1;
	MPI_Allreduce(mine, out, K, smat, mm, MPI_COMM_WORLD);
	CHECK(smat_is(out, K, 0, size - 1, 0, -1) && out[7 * K] == -1, "allreduce, derived type, user op: %d %d", out[0],
	      out[2]);
	memcpy(out, mine, sizeof(mine));
	MPI_Allreduce(MPI_IN_PLACE, out, K, smat, mm, MPI_COMM_WORLD);
	CHECK(smat_is(out, K, 0, size - 1, 0, -5), "allreduce in place, derived type, user op: %d %d", out[0], out[1]);
	for (int i = 0; i < 7 * (K + 1); i++)
		out[i] = -1;
	MPI_Scan(mine, out, K, smat, mm, MPI_COMM_WORLD);
	CHECK(smat_is(out, K, 0, rank, 0, -1), "scan, derived type, user op: %d %d", out[0], out[2]);
	for (int i = 0; i < 7 * (K + 1); i++)
		out[i] = -1;
	MPI_Exscan(mine, out, K, smat, mm, MPI_COMM_WORLD);
	CHECK(rank == 0 || smat_is(out, K, 0, rank - 1, 0, -1), "exscan, derived type, user op: %d %d", out[0], out[2]);
	/* reduce_scatter_block and reduce_scatter: rank j gets j + 1 matrices
	 * (the v-form), or one */
	int total = size * (size + 1) / 2, *counts = malloc(sizeof(int) * (size_t)size);
	int *all = malloc(sizeof(int) * 7 * (size_t)total), *got = malloc(sizeof(int) * 7 * (size_t)(size + 1));
	for (int j = 0; j < size; j++)
		counts[j] = j + 1;
	smat_fill(all, total, rank, 0, -5);
	for (int i = 0; i < 7 * (size + 1); i++)
		got[i] = -1;
	MPI_Reduce_scatter(all, got, counts, smat, mm, MPI_COMM_WORLD);
	int first = rank * (rank + 1) / 2; /* rank's first matrix */
	CHECK(smat_is(got, rank + 1, 0, size - 1, first, -1) && got[7 * (rank + 1)] == -1,
	      "reduce_scatter, derived type, user op: %d %d", got[0], got[2]);
	MPI_Reduce_scatter(MPI_IN_PLACE, all, counts, smat, mm, MPI_COMM_WORLD);
	CHECK(smat_is(all, rank + 1, 0, size - 1, first, -5), "reduce_scatter in place, derived type, user op: %d %d",
	      all[0], all[2]);
	smat_fill(all, size, rank, 0, -5);
	MPI_Reduce_scatter_block(all, got, 1, smat, mm, MPI_COMM_WORLD);
	CHECK(smat_is(got, 1, 0, size - 1, rank, -1), "reduce_scatter_block, derived type, user op: %d", got[0]);
	/* a predefined operation on a derived type, the v-form: a column of
	 * ints summed */
	for (int i = 0; i < 7 * total; i++)
		all[i] = i % 7 % 2 ? -5 : rank + i;
	for (int i = 0; i < 7 * (size + 1); i++)
		got[i] = -1;
	MPI_Reduce_scatter(all, got, counts, smat, MPI_SUM, MPI_COMM_WORLD);
	int ok = got[7 * (rank + 1)] == -1;
	for (int i = 0; i < 7 * (rank + 1); i++)
		ok &= got[i] == (i % 7 % 2 ? -1 : size * (7 * first + i) + size * (size - 1) / 2);
	CHECK(ok, "reduce_scatter, derived type, MPI_SUM: %d %d", got[0], got[1]);
	free(counts), free(all), free(got);
	/* a record of mixed parts: an int summed, a double's maximum */
	struct irec r[2] = {{rank, rank * 0.5}, {1, -rank}}, ro[2] = {{0, 0}, {0, 0}};
	MPI_Allreduce(r, ro, 2, irec_t, rop, MPI_COMM_WORLD);
	CHECK(ro[0].n == size * (size - 1) / 2 && ro[0].top == (size - 1) * 0.5 && ro[1].n == size && ro[1].top == 0,
	      "allreduce of records, a user op: %d %g %d %g", ro[0].n, ro[0].top, ro[1].n, ro[1].top);
	MPI_Op_free(&mm);
	MPI_Op_free(&rop);
	MPI_Type_free(&smat);
	MPI_Type_free(&irec_t);
}

/* Alltoallw: rank i sends j i + j + 1 ints, as every other int of its
 * block (one vector) to even ranks and as ints to odd ones; receives them
 * as ints from even ranks and as every other int from odd ones; the
 * displacements are in bytes. */
static void alltoallw(void)
{
	int *sc = malloc(sizeof(int) * 4 * (size_t)size), *sd = sc + size, *rc = sc + 2 * size, *rd = sc + 3 * size;
	MPI_Datatype *stypes = malloc(sizeof(MPI_Datatype) * 2 * (size_t)size), *rtypes = stypes + size;
	MPI_Datatype *made = malloc(sizeof(MPI_Datatype) * 2 * (size_t)size);
	int sbytes = 0, rbytes = 0;
	for (int j = 0; j < size; j++) {
		int ns = rank + j + 1, nr = j + rank + 1;
		MPI_Type_vector(ns, 1, 2, MPI_INT, &made[j]);
		MPI_Type_commit(&made[j]);
		MPI_Type_vector(nr, 1, 2, MPI_INT, &made[size + j]);
		MPI_Type_commit(&made[size + j]);
		stypes[j] = j % 2 ? MPI_INT : made[j];
		sc[j] = j % 2 ? ns : 1;
		sd[j] = sbytes;
		sbytes += (int)sizeof(int) * 2 * ns;
		rtypes[j] = j % 2 ? made[size + j] : MPI_INT;
		rc[j] = j % 2 ? 1 : nr;
		rd[j] = rbytes;
		rbytes += (int)sizeof(int) * 2 * nr;
	}
	int *sb = malloc((size_t)sbytes), *rb = malloc((size_t)rbytes);
	for (int j = 0; j < size; j++) {
		int ns = rank + j + 1, *b = sb + sd[j] / (int)sizeof(int);
		for (int k = 0; k < 2 * ns; k++)
			b[k] = j % 2 ? (k < ns ? 1000 * rank + 10 * j + k : -7) : (k % 2 ? -7 : 1000 * rank + 10 * j + k / 2);
	}
	for (int k = 0; k < rbytes / (int)sizeof(int); k++)
		rb[k] = -1;
	MPI_Alltoallw(sb, sc, sd, stypes, rb, rc, rd, rtypes, MPI_COMM_WORLD);
	int ok = 1;
	for (int i = 0; i < size; i++) {
		int nr = i + rank + 1, *b = rb + rd[i] / (int)sizeof(int);
		for (int k = 0; k < 2 * nr; k++)
			ok &= b[k] == (i % 2 ? (k % 2 ? -1 : 1000 * i + 10 * rank + k / 2)
					     : (k < nr ? 1000 * i + 10 * rank + k : -1));
	}
	CHECK(ok, "alltoallw with derived and predefined types: %d %d", rb[0], rb[1]);
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	int cls = -1;
	stypes[0] = MPI_DATATYPE_NULL;
	MPI_Error_class(MPI_Alltoallw(sb, sc, sd, stypes, rb, rc, rd, rtypes, MPI_COMM_WORLD), &cls);
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
	CHECK(cls == MPI_ERR_TYPE, "alltoallw, a bad type: class %d", cls);
	for (int j = 0; j < 2 * size; j++)
		MPI_Type_free(&made[j]);
	free(made), free(stypes), free(sc), free(sb), free(rb);
}

/* Derived datatypes in point-to-point, MPI_Pack and MPI_Unpack. */
struct rec {
	int a;
	double b;
	char c[3];
};

static void datatypes(void)
{
	int next = (rank + 1) % size, prev = (rank + size - 1) % size;
	/* a matrix column (vector), out as a column and in as a row of ints */
	int m[4][5], col[4] = {0}, back[4][5];
	for (int i = 0; i < 4; i++)
		for (int j = 0; j < 5; j++)
			m[i][j] = rank * 100 + i * 10 + j;
	MPI_Datatype column, uncommitted;
	MPI_Type_vector(4, 1, 5, MPI_INT, &column);
	MPI_Type_vector(2, 1, 2, MPI_INT, &uncommitted);
	MPI_Type_commit(&column);
	int tsize = -1, len = 0;
	MPI_Aint lb = -1, ext = -1;
	char name[MPI_MAX_OBJECT_NAME];
	MPI_Type_size(column, &tsize);
	MPI_Type_get_extent(column, &lb, &ext);
	MPI_Type_set_name(column, "column");
	MPI_Type_get_name(column, name, &len);
	CHECK(tsize == 16 && lb == 0 && ext == (MPI_Aint)(16 * sizeof(int)) && !strcmp(name, "column"),
	      "vector: size %d lb %ld extent %ld name %s", tsize, (long)lb, (long)ext, name);
	MPI_Type_get_name(MPI_DOUBLE, name, &len);
	CHECK(!strcmp(name, "MPI_DOUBLE") && len == 10, "the name of MPI_DOUBLE: %s", name);
	MPI_Status st;
	MPI_Sendrecv(&m[0][2], 1, column, next, 80, col, 4, MPI_INT, prev, 80, MPI_COMM_WORLD, &st);
	int ok = 1, cnt = -1;
	for (int i = 0; i < 4; i++)
		ok &= col[i] == prev * 100 + i * 10 + 2;
	MPI_Get_count(&st, column, &cnt);
	CHECK(ok && cnt == 1, "a column as ints: %d %d %d %d, count %d", col[0], col[1], col[2], col[3], cnt);
	memset(back, 0, sizeof(back));
	MPI_Sendrecv(col, 4, MPI_INT, next, 81, &back[0][4], 1, column, prev, 81, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	int pp = (prev + size - 1) % size;
	ok = 1;
	for (int i = 0; i < 4; i++)
		for (int j = 0; j < 5; j++)
			ok &= back[i][j] == (j == 4 ? pp * 100 + i * 10 + 2 : 0);
	CHECK(ok, "ints into a column: %d %d", back[0][4], back[3][4]);
	/* a struct of an int, a double and three chars, two at a time, nonblocking */
	MPI_Datatype rt;
	int bl[3] = {1, 1, 3};
	MPI_Aint dp[3] = {offsetof(struct rec, a), offsetof(struct rec, b), offsetof(struct rec, c)};
	MPI_Datatype ty[3] = {MPI_INT, MPI_DOUBLE, MPI_CHAR};
	MPI_Type_create_struct(3, bl, dp, ty, &rt);
	MPI_Type_commit(&rt);
	struct rec out[2] = {{rank, rank + 0.25, {'a', 'b', 'c'}}, {-rank, rank * 2.0, {'x', 'y', 'z'}}}, in[2];
	memset(in, 0, sizeof(in));
	MPI_Request rq[2];
	MPI_Irecv(in, 2, rt, prev, 82, MPI_COMM_WORLD, &rq[0]);
	MPI_Isend(out, 2, rt, next, 82, MPI_COMM_WORLD, &rq[1]);
	MPI_Status sts[2];
	MPI_Waitall(2, rq, sts);
	int elems = -1;
	MPI_Get_elements(&sts[0], rt, &elems);
	CHECK(in[0].a == prev && in[0].b == prev + 0.25 && in[0].c[2] == 'c' && in[1].a == -prev &&
		      in[1].b == prev * 2.0 && in[1].c[0] == 'x' && elems == 10,
	      "structs: %d %g %c, %d %g %c, %d elements", in[0].a, in[0].b, in[0].c[2], in[1].a, in[1].b, in[1].c[0], elems);
	/* every other double of 5000 (40000 bytes: a rendezvous), into an indexed
	 * layout of the same doubles in reverse pairs */
	enum { ND = 5000 };
	double *src = malloc(2 * ND * sizeof(double)), *dst = calloc(2 * ND, sizeof(double));
	for (int i = 0; i < 2 * ND; i++)
		src[i] = rank * 1e5 + i;
	MPI_Datatype strided, hv, pairs;
	MPI_Type_vector(ND, 1, 2, MPI_DOUBLE, &strided);
	MPI_Type_create_hvector(ND, 1, 2 * sizeof(double), MPI_DOUBLE, &hv);
	int ibl[2] = {ND / 2, ND / 2}, idp[2] = {ND, 0};
	MPI_Type_indexed(2, ibl, idp, MPI_DOUBLE, &pairs);
	MPI_Type_commit(&strided);
	MPI_Type_commit(&hv);
	MPI_Type_commit(&pairs);
	MPI_Sendrecv(src, 1, strided, next, 83, dst, 1, pairs, prev, 83, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	ok = 1;
	for (int k = 0; k < ND; k++) /* the k-th strided double lands at ND + k, then (k - ND/2) */
		ok &= dst[k < ND / 2 ? ND + k : k - ND / 2] == prev * 1e5 + 2 * k;
	memset(dst, 0, 2 * ND * sizeof(double));
	MPI_Sendrecv(src, 1, hv, next, 84, dst, ND, MPI_DOUBLE, prev, 84, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	for (int k = 0; k < ND; k++)
		ok &= dst[k] == prev * 1e5 + 2 * k;
	CHECK(ok, "strided, hvector and indexed doubles: %g %g", dst[0], dst[ND - 1]);
	/* a persistent receive of a contiguous type of the struct */
	MPI_Datatype two;
	MPI_Type_contiguous(2, rt, &two);
	MPI_Type_commit(&two);
	MPI_Request pr;
	memset(in, 0, sizeof(in));
	MPI_Recv_init(in, 1, two, prev, 85, MPI_COMM_WORLD, &pr);
	MPI_Start(&pr);
	MPI_Send(out, 1, two, next, 85, MPI_COMM_WORLD);
	MPI_Wait(&pr, MPI_STATUS_IGNORE);
	MPI_Request_free(&pr);
	CHECK(in[1].a == -prev && in[1].c[1] == 'y', "persistent, contiguous structs: %d %c", in[1].a, in[1].c[1]);
	/* the block collectives: a bcast of two structs, a gather of columns
	 * into ints and back out by scatter, an allgather of structs in place,
	 * an alltoall of strided pairs */
	struct rec b2[2] = {{0, 0, {0}}, {0, 0, {0}}};
	int broot = 1 % size;
	if (rank == broot)
		memcpy(b2, out, sizeof(b2));
	MPI_Bcast(b2, 2, rt, broot, MPI_COMM_WORLD);
	CHECK(b2[0].a == broot && b2[1].b == broot * 2.0 && b2[1].c[2] == 'z', "bcast of structs: %d %g", b2[0].a,
	      b2[1].b);
	int *cols = calloc(4 * (size_t)size, sizeof(int));
	int groot = size - 1;
	MPI_Gather(&m[0][3], 1, column, cols, 4, MPI_INT, groot, MPI_COMM_WORLD);
	ok = 1;
	for (int r = 0; rank == groot && r < size; r++)
		for (int i = 0; i < 4; i++)
			ok &= cols[4 * r + i] == r * 100 + i * 10 + 3;
	int sc[4][5];
	memset(sc, 0, sizeof(sc));
	MPI_Scatter(cols, 4, MPI_INT, &sc[0][1], 1, column, groot, MPI_COMM_WORLD);
	for (int i = 0; i < 4; i++)
		ok &= sc[i][1] == rank * 100 + i * 10 + 3 && sc[i][0] == 0 && sc[i][2] == 0;
	CHECK(ok, "gather of columns, scatter into columns: %d %d", cols[0], sc[3][1]);
	struct rec *ag = calloc((size_t)size, sizeof(struct rec));
	ag[rank] = out[0];
	MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, ag, 1, rt, MPI_COMM_WORLD);
	ok = 1;
	for (int r = 0; r < size; r++)
		ok &= ag[r].a == r && ag[r].b == r + 0.25 && ag[r].c[1] == 'b';
	CHECK(ok, "allgather of structs in place: %d %g", ag[size - 1].a, ag[size - 1].b);
	MPI_Datatype spair;
	MPI_Type_vector(2, 1, 3, MPI_INT, &spair);
	MPI_Type_commit(&spair);
	MPI_Aint splb, spext;
	MPI_Type_get_extent(spair, &splb, &spext);
	int *a2s = calloc((size_t)size * (size_t)spext, 1), *a2r = calloc(2 * (size_t)size, sizeof(int));
	for (int r = 0; r < size; r++) {
		int *blk = (int *)((char *)a2s + (size_t)r * (size_t)spext);
		blk[0] = rank * 1000 + r, blk[3] = -(rank * 1000 + r);
	}
	MPI_Alltoall(a2s, 1, spair, a2r, 2, MPI_INT, MPI_COMM_WORLD);
	ok = spext == (MPI_Aint)(4 * sizeof(int));
	for (int r = 0; r < size; r++)
		ok &= a2r[2 * r] == r * 1000 + rank && a2r[2 * r + 1] == -(r * 1000 + rank);
	CHECK(ok, "alltoall of strided pairs: extent %ld, %d %d", (long)spext, a2r[0], a2r[1]);
	/* the v-forms: gatherv of columns into spaced ints, scatterv back into
	 * columns, allgatherv of structs with gaps, alltoallv of strided pairs */
	int *vc = malloc(sizeof(int) * (size_t)size), *vd = malloc(sizeof(int) * (size_t)size);
	int *spaced = malloc(sizeof(int) * 5 * (size_t)size);
	for (int r = 0; r < size; r++)
		vc[r] = 4, vd[r] = 5 * r;
	for (int i = 0; i < 5 * size; i++)
		spaced[i] = -1;
	MPI_Gatherv(&m[0][4], 1, column, spaced, vc, vd, MPI_INT, 0, MPI_COMM_WORLD);
	ok = 1;
	for (int r = 0; rank == 0 && r < size; r++)
		for (int i = 0; i < 5; i++)
			ok &= spaced[5 * r + i] == (i < 4 ? r * 100 + i * 10 + 4 : -1);
	memset(sc, 0, sizeof(sc));
	MPI_Scatterv(spaced, vc, vd, MPI_INT, &sc[0][0], 1, column, 0, MPI_COMM_WORLD);
	for (int i = 0; i < 4; i++)
		ok &= sc[i][0] == rank * 100 + i * 10 + 4 && sc[i][1] == 0;
	struct rec *agv = calloc(2 * (size_t)size, sizeof(struct rec));
	for (int r = 0; r < size; r++)
		vc[r] = 1, vd[r] = 2 * r;
	MPI_Allgatherv(out, 1, rt, agv, vc, vd, rt, MPI_COMM_WORLD);
	for (int r = 0; r < size; r++)
		ok &= agv[2 * r].a == r && agv[2 * r].c[0] == 'a' && agv[2 * r + 1].a == 0;
	for (int r = 0; r < size; r++)
		vd[r] = r;
	memset(a2r, 0, 2 * (size_t)size * sizeof(int));
	int *vc2 = malloc(sizeof(int) * (size_t)size), *vd2 = malloc(sizeof(int) * (size_t)size);
	for (int r = 0; r < size; r++)
		vc2[r] = 2, vd2[r] = 2 * r;
	MPI_Alltoallv(a2s, vc, vd, spair, a2r, vc2, vd2, MPI_INT, MPI_COMM_WORLD);
	for (int r = 0; r < size; r++)
		ok &= a2r[2 * r] == r * 1000 + rank && a2r[2 * r + 1] == -(r * 1000 + rank);
	CHECK(ok, "v-forms with derived types: %d %d %d", spaced[0], sc[0][0], agv[0].a);
	free(vc), free(vd), free(vc2), free(vd2), free(spaced), free(agv);
	/* reductions on the parts of a derived type of one predefined type:
	 * a contiguous run of doubles, a column of ints */
	MPI_Datatype three;
	MPI_Type_contiguous(3, MPI_DOUBLE, &three);
	MPI_Type_commit(&three);
	double d6[6], s6[6];
	for (int i = 0; i < 6; i++)
		d6[i] = rank + i * 0.5;
	MPI_Allreduce(d6, s6, 2, three, MPI_SUM, MPI_COMM_WORLD);
	ok = 1;
	for (int i = 0; i < 6; i++)
		ok &= s6[i] == size * (size - 1) / 2.0 + size * i * 0.5;
	int mx[4][5];
	memset(mx, 0, sizeof(mx));
	MPI_Reduce(&m[0][0], &mx[0][0], 1, column, MPI_MAX, 0, MPI_COMM_WORLD);
	for (int i = 0; rank == 0 && i < 4; i++)
		ok &= mx[i][0] == (size - 1) * 100 + i * 10 && mx[i][1] == 0;
	memcpy(mx, m, sizeof(mx));
	MPI_Scan(MPI_IN_PLACE, &mx[0][1], 1, column, MPI_SUM, MPI_COMM_WORLD);
	for (int i = 0; i < 4; i++)
		ok &= mx[i][1] == 100 * rank * (rank + 1) / 2 + (rank + 1) * (i * 10 + 1) && mx[i][2] == m[i][2];
	double *rsin = malloc(sizeof(double) * 3 * (size_t)size), rsout[3];
	for (int i = 0; i < 3 * size; i++)
		rsin[i] = i + rank;
	MPI_Reduce_scatter_block(rsin, rsout, 1, three, MPI_SUM, MPI_COMM_WORLD);
	for (int i = 0; i < 3; i++)
		ok &= rsout[i] == size * (3.0 * rank + i) + size * (size - 1) / 2.0;
	CHECK(ok, "reductions on derived types: %g %d %d %g", s6[5], mx[0][0], mx[3][1], rsout[2]);
	free(rsin);
	MPI_Type_free(&three);
	free(cols), free(ag), free(a2s), free(a2r);
	MPI_Type_free(&spair);
	/* pack an int and a column, send them packed, unpack them */
	char packed[256];
	int pos = 0, psize = 0, one = rank + 7;
	MPI_Pack_size(1, column, MPI_COMM_WORLD, &psize);
	MPI_Pack(&one, 1, MPI_INT, packed, sizeof(packed), &pos, MPI_COMM_WORLD);
	MPI_Pack(&m[0][1], 1, column, packed, sizeof(packed), &pos, MPI_COMM_WORLD);
	char got[256];
	MPI_Sendrecv(packed, pos, MPI_PACKED, next, 86, got, sizeof(got), MPI_PACKED, prev, 86, MPI_COMM_WORLD, &st);
	int gl = 0, upos = 0, u1 = 0, ucol[4] = {0};
	MPI_Get_count(&st, MPI_PACKED, &gl);
	MPI_Unpack(got, gl, &upos, &u1, 1, MPI_INT, MPI_COMM_WORLD);
	MPI_Unpack(got, gl, &upos, ucol, 4, MPI_INT, MPI_COMM_WORLD);
	CHECK(psize == 16 && pos == 20 && gl == 20 && upos == 20 && u1 == prev + 7 && ucol[3] == prev * 100 + 31,
	      "pack: size %d, packed %d, got %d, unpacked %d: %d %d", psize, pos, gl, upos, u1, ucol[3]);
	/* errors: an uncommitted type, a derived type in a collective, a freed type */
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	int c1 = -1, c2 = -1, c3 = -1, c4 = -1;
	MPI_Error_class(MPI_Send(m, 1, uncommitted, next, 87, MPI_COMM_WORLD), &c1);
	MPI_Error_class(MPI_Allreduce(out, in, 1, rt, MPI_SUM, MPI_COMM_WORLD), &c2); /* mixed parts */
	pos = 200;
	MPI_Error_class(MPI_Pack(&one, 20, MPI_INT, packed, sizeof(packed), &pos, MPI_COMM_WORLD), &c3);
	MPI_Datatype gone = column;
	MPI_Type_free(&column);
	MPI_Error_class(MPI_Send(m, 1, gone, next, 87, MPI_COMM_WORLD), &c4);
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
	CHECK(c1 == MPI_ERR_TYPE && c2 == MPI_ERR_TYPE && c3 == MPI_ERR_TRUNCATE && c4 == MPI_ERR_TYPE &&
		      column == MPI_DATATYPE_NULL,
	      "datatype errors: %d %d %d %d", c1, c2, c3, c4);
	MPI_Type_free(&uncommitted);
	MPI_Type_free(&rt);
	MPI_Type_free(&two);
	MPI_Type_free(&strided);
	MPI_Type_free(&hv);
	MPI_Type_free(&pairs);
	free(src);
	free(dst);
}

static void collectives(void)
{
	/* Allreduce on the torus (int, double) and off it (short, max) */
	int n = 1000;
	int *a = malloc(sizeof(int) * (size_t)n), *b = malloc(sizeof(int) * (size_t)n);
	for (int i = 0; i < n; i++)
		a[i] = rank + i;
	MPI_Allreduce(a, b, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	int bad = 0;
	for (int i = 0; i < n; i++)
		bad += b[i] != size * i + size * (size - 1) / 2;
	CHECK(!bad, "allreduce int sum: %d bad", bad);
	/* powers of two: exact in any order of combining (the algorithms
	 * associate differently, and a product of 1..64 would round) */
	static const double pw[] = {2.0, 0.5, 4.0};
	double d = pw[rank % 3];
	MPI_Allreduce(MPI_IN_PLACE, &d, 1, MPI_DOUBLE, MPI_PROD, MPI_COMM_WORLD);
	double want = 1;
	for (int i = 0; i < size; i++)
		want *= pw[i % 3];
	CHECK(d == want, "allreduce double prod in place: %g, not %g", d, want);
	short s[3] = {(short)rank, (short)-rank, 7}, sr[3];
	MPI_Allreduce(s, sr, 3, MPI_SHORT, MPI_MAX, MPI_COMM_WORLD);
	CHECK(sr[0] == size - 1 && sr[1] == 0 && sr[2] == 7, "allreduce short max: %d %d %d", sr[0], sr[1], sr[2]);
	/* Reduce and Bcast to and from a root that is not 0 */
	int root = size - 1, r = -1;
	int v = rank * rank;
	MPI_Reduce(&v, &r, 1, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD);
	if (rank == root)
		CHECK(r == (size - 1) * size * (2 * size - 1) / 6, "reduce: %d", r);
	int bc[5] = {0};
	if (rank == root)
		for (int i = 0; i < 5; i++)
			bc[i] = 100 + i;
	MPI_Bcast(bc, 5, MPI_INT, root, MPI_COMM_WORLD);
	CHECK(bc[0] == 100 && bc[4] == 104, "bcast: %d %d", bc[0], bc[4]);
	/* Gather / Scatter */
	int *all = malloc(sizeof(int) * (size_t)size * 2), mine[2] = {rank, -rank};
	MPI_Gather(mine, 2, MPI_INT, all, 2, MPI_INT, 0, MPI_COMM_WORLD);
	if (!rank) {
		bad = 0;
		for (int i = 0; i < size; i++)
			bad += all[2 * i] != i || all[2 * i + 1] != -i;
		CHECK(!bad, "gather: %d bad", bad);
		for (int i = 0; i < 2 * size; i++)
			all[i] = 1000 + i;
	}
	MPI_Scatter(all, 2, MPI_INT, mine, 2, MPI_INT, 0, MPI_COMM_WORLD);
	CHECK(mine[0] == 1000 + 2 * rank && mine[1] == 1001 + 2 * rank, "scatter: %d %d", mine[0], mine[1]);
	/* Allgather (torus: 8 bytes; p2p: 3 bytes) */
	long long lv = 10LL * rank, *lall = malloc(sizeof(long long) * (size_t)size);
	MPI_Allgather(&lv, 1, MPI_LONG_LONG, lall, 1, MPI_LONG_LONG, MPI_COMM_WORLD);
	bad = 0;
	for (int i = 0; i < size; i++)
		bad += lall[i] != 10LL * i;
	CHECK(!bad, "allgather long long: %d bad", bad);
	char c3[3] = {(char)rank, (char)(rank + 1), (char)(rank + 2)}, *call = malloc(3 * (size_t)size);
	MPI_Allgather(c3, 3, MPI_CHAR, call, 3, MPI_CHAR, MPI_COMM_WORLD);
	bad = 0;
	for (int i = 0; i < size; i++)
		bad += call[3 * i] != (char)i || call[3 * i + 2] != (char)(i + 2);
	CHECK(!bad, "allgather 3 chars: %d bad", bad);
	/* Alltoall (torus and p2p) and Alltoallv */
	int *sa = malloc(sizeof(int) * (size_t)size * 2), *ra = malloc(sizeof(int) * (size_t)size * 2);
	for (int j = 0; j < size; j++)
		sa[2 * j] = rank * 1000 + j, sa[2 * j + 1] = -(rank * 1000 + j);
	MPI_Alltoall(sa, 2, MPI_INT, ra, 2, MPI_INT, MPI_COMM_WORLD);
	bad = 0;
	for (int i = 0; i < size; i++)
		bad += ra[2 * i] != i * 1000 + rank || ra[2 * i + 1] != -(i * 1000 + rank);
	CHECK(!bad, "alltoall int: %d bad", bad);
	unsigned char *sb = malloc((unsigned)size), *rb = malloc((unsigned)size);
	for (int j = 0; j < size; j++)
		sb[j] = (unsigned char)(rank * 16 + j);
	MPI_Alltoall(sb, 1, MPI_UNSIGNED_CHAR, rb, 1, MPI_UNSIGNED_CHAR, MPI_COMM_WORLD);
	bad = 0;
	for (int i = 0; i < size; i++)
		bad += rb[i] != (unsigned char)(i * 16 + rank);
	CHECK(!bad, "alltoall byte: %d bad", bad);
	int *sc = malloc(sizeof(int) * (size_t)size * 4), *sd = sc + size, *rc = sc + 2 * size, *rd = sc + 3 * size;
	int tot_s = 0, tot_r = 0;
	for (int j = 0; j < size; j++) {
		sc[j] = (rank + j) % 3;
		sd[j] = tot_s;
		tot_s += sc[j];
		rc[j] = (j + rank) % 3;
		rd[j] = tot_r;
		tot_r += rc[j];
	}
	int *vs = malloc(sizeof(int) * (size_t)(tot_s + 1)), *vr = malloc(sizeof(int) * (size_t)(tot_r + 1));
	for (int j = 0; j < size; j++)
		for (int k = 0; k < sc[j]; k++)
			vs[sd[j] + k] = rank * 100 + j * 10 + k;
	MPI_Alltoallv(vs, sc, sd, MPI_INT, vr, rc, rd, MPI_INT, MPI_COMM_WORLD);
	bad = 0;
	for (int i = 0; i < size; i++)
		for (int k = 0; k < rc[i]; k++)
			bad += vr[rd[i] + k] != i * 100 + rank * 10 + k;
	CHECK(!bad, "alltoallv: %d bad", bad);
	/* Reduce_scatter_block (torus) */
	int *rs = malloc(sizeof(int) * (size_t)size * 2), out2[2];
	for (int j = 0; j < 2 * size; j++)
		rs[j] = j;
	MPI_Reduce_scatter_block(rs, out2, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	CHECK(out2[0] == size * 2 * rank && out2[1] == size * (2 * rank + 1), "reduce_scatter_block: %d %d", out2[0],
	      out2[1]);
	/* MAXLOC / MINLOC on pairs */
	struct {
		double v;
		int i;
	} dp = {(double)(rank % 3), rank}, dr;
	MPI_Allreduce(&dp, &dr, 1, MPI_DOUBLE_INT, MPI_MAXLOC, MPI_COMM_WORLD);
	int hi = size > 2 ? 2 : size - 1;
	CHECK(dr.v == hi && dr.i == hi, "maxloc: %g at %d", dr.v, dr.i);
	struct {
		int v;
		int i;
	} ip = {-(rank % 2), rank}, ir;
	MPI_Reduce(&ip, &ir, 1, MPI_2INT, MPI_MINLOC, 0, MPI_COMM_WORLD);
	if (!rank)
		CHECK(ir.v == (size > 1 ? -1 : 0) && ir.i == (size > 1 ? 1 : 0), "minloc: %d at %d", ir.v, ir.i);
	/* the v-forms, with a gap after every block and rank i giving i + 1 */
	int *gc = malloc(sizeof(int) * (size_t)size * 2), *gd = gc + size, tot = 0;
	for (int i = 0; i < size; i++) {
		gc[i] = i + 1;
		gd[i] = tot;
		tot += i + 2;
	}
	int *gv = malloc(sizeof(int) * (size_t)(rank + 1)), *gall = malloc(sizeof(int) * (size_t)tot);
	for (int k = 0; k <= rank; k++)
		gv[k] = rank * 100 + k;
	for (int k = 0; k < tot; k++)
		gall[k] = -7;
	MPI_Allgatherv(gv, rank + 1, MPI_INT, gall, gc, gd, MPI_INT, MPI_COMM_WORLD);
	bad = 0;
	for (int i = 0; i < size; i++) {
		for (int k = 0; k <= i; k++)
			bad += gall[gd[i] + k] != i * 100 + k;
		bad += gall[gd[i] + i + 1] != -7; /* the gap is untouched */
	}
	CHECK(!bad, "allgatherv: %d bad", bad);
	for (int k = 0; k < tot; k++)
		gall[k] = -7;
	MPI_Gatherv(gv, rank + 1, MPI_INT, gall, gc, gd, MPI_INT, size - 1, MPI_COMM_WORLD);
	if (rank == size - 1) {
		bad = 0;
		for (int i = 0; i < size; i++)
			for (int k = 0; k <= i; k++)
				bad += gall[gd[i] + k] != i * 100 + k;
		CHECK(!bad, "gatherv: %d bad", bad);
	}
	for (int k = 0; k <= rank; k++)
		gv[k] = -1;
	MPI_Scatterv(gall, gc, gd, MPI_INT, gv, rank + 1, MPI_INT, size - 1, MPI_COMM_WORLD);
	bad = 0;
	for (int k = 0; k <= rank; k++)
		bad += gv[k] != rank * 100 + k;
	CHECK(!bad, "scatterv: %d bad", bad);
	/* prefix scans */
	long sv = rank + 1, scr = -1, er = -1;
	MPI_Scan(&sv, &scr, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
	MPI_Exscan(&sv, &er, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
	CHECK(scr == (long)(rank + 1) * (rank + 2) / 2 && (rank == 0 || er == (long)rank * (rank + 1) / 2), "scan %ld exscan %ld",
	      scr, er);
	/* many requests: any, some, all */
	{
		enum { N = 4 };
		int in[N], out[N];
		MPI_Request rq[2 * N];
		int next = (rank + 1) % size, prev = (rank + size - 1) % size;
		for (int k = 0; k < N; k++) {
			out[k] = rank * 10 + k;
			MPI_Irecv(&in[k], 1, MPI_INT, prev, 20 + k, MPI_COMM_WORLD, &rq[k]);
		}
		for (int k = 0; k < N; k++)
			MPI_Isend(&out[k], 1, MPI_INT, next, 20 + k, MPI_COMM_WORLD, &rq[N + k]);
		int idx = -1, done = 0, flag = 0, got[2 * N], outc = 0;
		MPI_Waitany(2 * N, rq, &idx, MPI_STATUS_IGNORE);
		done += idx >= 0 && rq[idx] == MPI_REQUEST_NULL;
		while (MPI_Waitsome(2 * N, rq, &outc, got, MPI_STATUSES_IGNORE) == MPI_SUCCESS && outc != MPI_UNDEFINED)
			done += outc;
		MPI_Testall(2 * N, rq, &flag, MPI_STATUSES_IGNORE);
		bad = 0;
		for (int k = 0; k < N; k++)
			bad += in[k] != prev * 10 + k;
		CHECK(done == 2 * N && flag && !bad, "waitany/waitsome: %d done, flag %d, %d bad", done, flag, bad);
		MPI_Request fr;
		int one = 1;
		MPI_Isend(&one, 1, MPI_INT, rank, 30, MPI_COMM_WORLD, &fr);
		MPI_Request_free(&fr);
		int back = 0;
		MPI_Recv(&back, 1, MPI_INT, rank, 30, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		CHECK(fr == MPI_REQUEST_NULL && back == 1, "request_free: %d", back);
	}
	free(gc), free(gv), free(gall);
	MPI_Barrier(MPI_COMM_WORLD);
	free(a), free(b), free(all), free(lall), free(call), free(sa), free(ra), free(sb), free(rb), free(sc), free(vs),
		free(vr), free(rs);
}

static void comms(void)
{
	/* a duplicate: the same members, its own messages */
	MPI_Comm dup;
	MPI_Comm_dup(MPI_COMM_WORLD, &dup);
	int cmp = -1, dr = -1, ds = -1;
	MPI_Comm_compare(MPI_COMM_WORLD, dup, &cmp);
	MPI_Comm_rank(dup, &dr);
	MPI_Comm_size(dup, &ds);
	CHECK(cmp == MPI_CONGRUENT && dr == rank && ds == size, "dup: compare %d rank %d size %d", cmp, dr, ds);
	int next = (rank + 1) % size, prev = (rank + size - 1) % size, a = -1, b = -1;
	MPI_Send(&rank, 1, MPI_INT, next, 5, dup);
	int r2 = rank + 1000;
	MPI_Send(&r2, 1, MPI_INT, next, 5, MPI_COMM_WORLD);
	MPI_Recv(&a, 1, MPI_INT, prev, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* the world's, not the dup's */
	MPI_Recv(&b, 1, MPI_INT, prev, 5, dup, MPI_STATUS_IGNORE);
	CHECK(a == prev + 1000 && b == prev, "messages kept apart: %d %d", a, b);
	/* split: odd and even ranks, in reverse order */
	MPI_Comm half;
	MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &half);
	int hr = -1, hs = -1;
	MPI_Comm_rank(half, &hr);
	MPI_Comm_size(half, &hs);
	int want_size = (size + (rank % 2 ? 0 : 1)) / 2;
	CHECK(hs == want_size && hr == (size - 1 - rank) / 2, "split: size %d (want %d), rank %d", hs, want_size, hr);
	int sum = -1;
	MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, half);
	int want = 0;
	for (int i = rank % 2; i < size; i += 2)
		want += i;
	CHECK(sum == want, "allreduce on the half: %d, not %d", sum, want);
	/* rank 0 of the half is its largest world rank (keys reversed) */
	int top = rank;
	MPI_Bcast(&top, 1, MPI_INT, 0, half);
	int biggest = size - 1 - ((size - 1) % 2 != rank % 2);
	CHECK(top == biggest, "bcast on the half from %d, want %d", top, biggest);
	int nb = -1;
	if (hs > 1)
		MPI_Sendrecv(&rank, 1, MPI_INT, (hr + 1) % hs, 6, &nb, 1, MPI_INT, (hr + hs - 1) % hs, 6, half,
			     MPI_STATUS_IGNORE);
	CHECK(hs == 1 || nb == rank + 2 || (hr == 0 && nb == rank - 2 * (hs - 1)), "ring on the half: %d", nb);
	/* groups, and a communicator of the even ranks */
	MPI_Group wg, eg, og, u, x;
	MPI_Comm_group(MPI_COMM_WORLD, &wg);
	int ranges[1][3] = {{0, size - 1, 2}};
	MPI_Group_range_incl(wg, 1, ranges, &eg);
	MPI_Group_difference(wg, eg, &og);
	MPI_Group_union(eg, og, &u);
	MPI_Group_intersection(eg, og, &x);
	int es = -1, os = -1, us = -1, xs = -1, gr = -2, ucmp = -1;
	MPI_Group_size(eg, &es);
	MPI_Group_size(og, &os);
	MPI_Group_size(u, &us);
	MPI_Group_size(x, &xs);
	MPI_Group_rank(eg, &gr);
	MPI_Group_compare(wg, u, &ucmp);
	int from[2] = {0, size - 1}, to[2] = {-5, -5};
	MPI_Group_translate_ranks(wg, 2, from, eg, to);
	CHECK(es == (size + 1) / 2 && os == size / 2 && us == size && xs == 0 &&
		      gr == (rank % 2 ? MPI_UNDEFINED : rank / 2) && (size <= 2 ? ucmp == MPI_IDENT : ucmp == MPI_SIMILAR) &&
		      to[0] == 0 && to[1] == ((size - 1) % 2 ? MPI_UNDEFINED : (size - 1) / 2),
	      "groups: %d %d %d %d rank %d compare %d translate %d %d", es, os, us, xs, gr, ucmp, to[0], to[1]);
	MPI_Comm even;
	MPI_Comm_create(MPI_COMM_WORLD, eg, &even);
	if (rank % 2) {
		CHECK(even == MPI_COMM_NULL, "an odd rank got a communicator");
	} else {
		int esum = -1, er = -1;
		MPI_Comm_rank(even, &er);
		MPI_Allreduce(&rank, &esum, 1, MPI_INT, MPI_SUM, even);
		CHECK(er == rank / 2 && esum == want, "even communicator: rank %d sum %d", er, esum);
		MPI_Comm_free(&even);
	}
	MPI_Group_free(&wg);
	MPI_Group_free(&eg);
	MPI_Group_free(&og);
	MPI_Group_free(&u);
	MPI_Group_free(&x);
	MPI_Comm_free(&half);
	MPI_Comm_free(&dup);
	CHECK(dup == MPI_COMM_NULL && wg == MPI_GROUP_NULL, "freed");
}

/* The rest of MPI-1 that programs use: the indexed family, MPI-1 names,
 * resized and duplicated types, addresses, synchronous, buffered and
 * ready persistent sends, cancelled receives, the predefined attributes,
 * communicator names, user error handlers, Reduce_local, Pcontrol. */
static int eh_calls, eh_code;
static void count_errors(MPI_Comm *comm, int *code, ...)
{
	(void)comm;
	eh_calls++;
	eh_code = *code;
}

static void mpi1_rest(void)
{
	int next = (rank + 1) % size, prev = (rank + size - 1) % size;
	/* hindexed: 2 ints at byte 0, 1 int at byte 16; indexed_block: pairs at
	 * ints 0 and 5; MPI_Type_struct of both */
	int hb[2] = {2, 1}, ib[2] = {0, 5};
	MPI_Aint hd[2] = {0, 16};
	MPI_Datatype hi, blk, st;
	MPI_Type_create_hindexed(2, hb, hd, MPI_INT, &hi);
	MPI_Type_create_indexed_block(2, 2, ib, MPI_INT, &blk);
	int sl[2] = {1, 1};
	int pair[2];
	MPI_Aint base, at[2];
	MPI_Get_address(&pair[0], &base);
	MPI_Address(&pair[1], &at[1]);
	at[1] -= base;
	at[0] = 0;
	MPI_Datatype stt[2] = {hi, blk};
	MPI_Type_struct(2, sl, at, stt, &st);
	MPI_Type_commit(&hi), MPI_Type_commit(&blk), MPI_Type_commit(&st);
	int hs = 0, bs = 0;
	MPI_Type_size(hi, &hs);
	MPI_Type_size(blk, &bs);
	int src[8], dst[8];
	for (int i = 0; i < 8; i++)
		src[i] = 10 * rank + i, dst[i] = -1;
	MPI_Sendrecv(src, 1, hi, next, 95, dst, 1, hi, prev, 95, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	int ok = dst[0] == 10 * prev && dst[1] == 10 * prev + 1 && dst[2] == -1 && dst[3] == -1 && dst[4] == 10 * prev + 4;
	for (int i = 0; i < 8; i++)
		dst[i] = -1;
	MPI_Sendrecv(src, 1, blk, next, 96, dst, 4, MPI_INT, prev, 96, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	ok &= dst[0] == 10 * prev && dst[1] == 10 * prev + 1 && dst[2] == 10 * prev + 5 && dst[3] == 10 * prev + 6;
	int ssz = 0;
	MPI_Type_size(st, &ssz);
	CHECK(ok && hs == 12 && bs == 16 && ssz == 28 && at[1] == (MPI_Aint)sizeof(int),
	      "hindexed, indexed_block, Type_struct: %d %d %d %d", dst[0], hs, bs, ssz);
	/* resized: a column of a 4x4 int matrix, its extent one int, so that
	 * count 4 takes the four columns in turn (a transpose) */
	MPI_Datatype col, colr, dup;
	MPI_Type_vector(4, 1, 4, MPI_INT, &col);
	MPI_Type_create_resized(col, 0, sizeof(int), &colr);
	MPI_Type_commit(&colr);
	MPI_Aint ext = 0, lb = -1, ub = 0;
	MPI_Type_extent(colr, &ext);
	MPI_Type_lb(colr, &lb);
	MPI_Type_ub(colr, &ub);
	int m[16], t[16];
	for (int i = 0; i < 16; i++)
		m[i] = 100 * rank + i, t[i] = -1;
	MPI_Sendrecv(m, 4, colr, next, 97, t, 16, MPI_INT, prev, 97, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	ok = ext == (MPI_Aint)sizeof(int) && lb == 0 && ub == (MPI_Aint)sizeof(int);
	for (int i = 0; i < 4; i++)
		for (int j = 0; j < 4; j++)
			ok &= t[4 * i + j] == 100 * prev + 4 * j + i;
	MPI_Type_dup(MPI_DOUBLE, &dup); /* a duplicate of a predefined type: committed */
	double dv = rank + 0.25, dr = -1;
	MPI_Sendrecv(&dv, 1, dup, next, 98, &dr, 1, MPI_DOUBLE, prev, 98, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	CHECK(ok && dr == prev + 0.25, "resized columns transpose, a duplicated type: %d %d %g", t[1], t[4], dr);
	MPI_Type_free(&col), MPI_Type_free(&colr), MPI_Type_free(&dup);
	MPI_Type_free(&hi), MPI_Type_free(&blk), MPI_Type_free(&st);
	/* persistent synchronous, buffered and ready sends, twice each */
	static char bbuf[4096];
	MPI_Buffer_attach(bbuf, sizeof(bbuf));
	MPI_Request rq[2];
	int out = 0, in = -1;
	ok = 1;
	for (int mode = 0; mode < 3; mode++) {
		MPI_Recv_init(&in, 1, MPI_INT, prev, 99, MPI_COMM_WORLD, &rq[0]);
		if (mode == 0)
			MPI_Ssend_init(&out, 1, MPI_INT, next, 99, MPI_COMM_WORLD, &rq[1]);
		else if (mode == 1)
			MPI_Bsend_init(&out, 1, MPI_INT, next, 99, MPI_COMM_WORLD, &rq[1]);
		else
			MPI_Rsend_init(&out, 1, MPI_INT, next, 99, MPI_COMM_WORLD, &rq[1]);
		for (int k = 0; k < 2; k++) {
			out = 1000 * mode + 10 * rank + k;
			MPI_Start(&rq[0]);
			MPI_Barrier(MPI_COMM_WORLD); /* (the ready send's receive is posted) */
			MPI_Start(&rq[1]);
			MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
			ok &= in == 1000 * mode + 10 * prev + k;
		}
		MPI_Request_free(&rq[0]);
		MPI_Request_free(&rq[1]);
	}
	void *bp;
	int bsz;
	MPI_Buffer_detach(&bp, &bsz);
	CHECK(ok, "persistent ssend, bsend and rsend: %d", in);
	/* a receive nobody sends to, cancelled; a send cancelled goes on */
	MPI_Request cr, sr;
	MPI_Status cst, sst;
	int cflag = -1, sflag = -1, self = -1, got = -1;
	MPI_Irecv(&in, 1, MPI_INT, MPI_ANY_SOURCE, 12345, MPI_COMM_WORLD, &cr);
	MPI_Cancel(&cr);
	MPI_Wait(&cr, &cst);
	MPI_Test_cancelled(&cst, &cflag);
	self = 7 + rank;
	MPI_Isend(&self, 1, MPI_INT, rank, 12346, MPI_COMM_WORLD, &sr);
	MPI_Cancel(&sr);
	MPI_Recv(&got, 1, MPI_INT, rank, 12346, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	MPI_Wait(&sr, &sst);
	MPI_Test_cancelled(&sst, &sflag);
	CHECK(cflag == 1 && cr == MPI_REQUEST_NULL && sflag == 0 && got == 7 + rank, "cancel: %d %d %d", cflag, sflag, got);
	/* attributes, names */
	int *tub = NULL, *wg = NULL, f1 = 0, f2 = 0, len = 0, len2 = 0;
	MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tub, &f1);
	MPI_Attr_get(MPI_COMM_WORLD, MPI_WTIME_IS_GLOBAL, &wg, &f2);
	char wn[MPI_MAX_OBJECT_NAME], dn[MPI_MAX_OBJECT_NAME];
	MPI_Comm d;
	MPI_Comm_dup(MPI_COMM_WORLD, &d);
	MPI_Comm_set_name(d, "my dup");
	MPI_Comm_get_name(MPI_COMM_WORLD, wn, &len);
	MPI_Comm_get_name(d, dn, &len2);
	CHECK(f1 && f2 && tub && *tub >= 32767 && wg && *wg == 0 && !strcmp(wn, "MPI_COMM_WORLD") && len == 14 &&
		      !strcmp(dn, "my dup") && len2 == 6,
	      "attributes and names: %d %s %s", tub ? *tub : -1, wn, dn);
	/* a user error handler on the duplicate: called with the error's code */
	MPI_Errhandler eh, got_eh;
	MPI_Comm_create_errhandler(count_errors, &eh);
	MPI_Comm_set_errhandler(d, eh);
	MPI_Errhandler_get(d, &got_eh);
	int code = MPI_Send(&out, 1, MPI_INT, size + 5, 1, d), cls = -1;
	MPI_Error_class(code, &cls);
	CHECK(got_eh == eh && eh_calls == 1 && eh_code == code && cls == MPI_ERR_RANK && MPI_Pcontrol(1) == MPI_SUCCESS,
	      "a user error handler: calls %d, code %d, class %d", eh_calls, eh_code, cls);
	MPI_Errhandler_free(&eh);
	MPI_Comm_free(&d);
	/* Reduce_local: ints, a column of a derived type, a user operation */
	int a[4] = {1, 2, 3, 4}, b[4] = {10, 20, 30, 40};
	MPI_Reduce_local(a, b, 4, MPI_INT, MPI_SUM);
	int mx[4][2] = {{1, -1}, {9, -1}, {3, -1}, {7, -1}}, my[4][2] = {{5, -2}, {5, -2}, {5, -2}, {5, -2}};
	MPI_Datatype c2;
	MPI_Type_vector(4, 1, 2, MPI_INT, &c2);
	MPI_Type_commit(&c2);
	MPI_Reduce_local(mx, my, 1, c2, MPI_MAX);
	MPI_Op mm;
	MPI_Op_create(matmul, 0, &mm);
	int l[4] = {1, 1, 0, 1}, r[4] = {1, 0, 1, 1}; /* r = l * r */
	MPI_Reduce_local(l, r, 4, MPI_INT, mm);
	MPI_Op_free(&mm);
	MPI_Type_free(&c2);
	CHECK(b[0] == 11 && b[3] == 44 && my[0][0] == 5 && my[1][0] == 9 && my[3][0] == 7 && my[0][1] == -2 && r[0] == 2 &&
		      r[1] == 1 && r[2] == 1 && r[3] == 1,
	      "reduce_local: %d %d %d %d", b[0], my[1][0], r[0], r[3]);
}

/* Process topologies: Dims_create; a 2-D grid of every rank, periodic in
 * its first dimension, against coordinates computed here (coords and rank
 * inverse, shifts with MPI_PROC_NULL at the open edges, a message along
 * each shift, rows by Cart_sub summed); a grid of the torus's own
 * dimensions with reorder, whose coordinates are the node's torus
 * coordinates; a ring as a graph; Topo_test and the errors. */
static int node_coords(int *x)
{
	char name[MPI_MAX_PROCESSOR_NAME];
	int len = 0, n = 0;
	MPI_Get_processor_name(name, &len);
	const char *p = strchr(name, '(');
	while (p && *p && *p != ')') {
		x[n++] = atoi(p + 1);
		p = strchr(p + 1, ',');
	}
	return n;
}

static void topologies(void)
{
	int d2[2] = {0, 0}, d3[3] = {0, 3, 0}, d1[1] = {0};
	MPI_Dims_create(12, 2, d2);
	MPI_Dims_create(12, 3, d3);
	MPI_Dims_create(7, 1, d1);
	int d64[3] = {0, 0, 0}, d6[2] = {0, 0};
	MPI_Dims_create(64, 3, d64);
	MPI_Dims_create(6, 2, d6);
	CHECK(d2[0] == 4 && d2[1] == 3 && d3[0] == 2 && d3[1] == 3 && d3[2] == 2 && d1[0] == 7 && d64[0] == 4 &&
		      d64[1] == 4 && d64[2] == 4 && d6[0] == 3 && d6[1] == 2,
	      "dims_create: %dx%d, %dx%dx%d, %d, %dx%dx%d, %dx%d", d2[0], d2[1], d3[0], d3[1], d3[2], d1[0], d64[0],
	      d64[1], d64[2], d6[0], d6[1]);
	/* every rank in a 2-D grid, periodic in dimension 0 */
	int dims[2] = {0, 0}, periods[2] = {1, 0};
	MPI_Dims_create(size, 2, dims);
	MPI_Comm grid;
	MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &grid);
	int gr = -1, gs = -1, st = -1, nd = -1, gd[2], gp[2], gc[2];
	MPI_Comm_rank(grid, &gr);
	MPI_Comm_size(grid, &gs);
	MPI_Topo_test(grid, &st);
	MPI_Cartdim_get(grid, &nd);
	MPI_Cart_get(grid, 2, gd, gp, gc);
	int want[2] = {gr / dims[1], gr % dims[1]};
	CHECK(gs == size && gr == rank && st == MPI_CART && nd == 2 && gd[0] == dims[0] && gd[1] == dims[1] && gp[0] == 1 &&
		      gp[1] == 0 && gc[0] == want[0] && gc[1] == want[1],
	      "cart_create %dx%d: rank %d, topo %d, coords %d,%d", dims[0], dims[1], gr, st, gc[0], gc[1]);
	int ok = 1;
	for (int r = 0; r < size; r++) {
		int c[2], back = -1;
		MPI_Cart_coords(grid, r, 2, c);
		MPI_Cart_rank(grid, c, &back);
		ok &= back == r && c[0] == r / dims[1] && c[1] == r % dims[1];
	}
	int wrap[2] = {want[0] - dims[0], want[1]}, wr = -1; /* periodic: wraps */
	MPI_Cart_rank(grid, wrap, &wr);
	CHECK(ok && wr == gr, "cart_coords and cart_rank inverse, a periodic coordinate wraps: %d", wr);
	for (int d = 0; d < 2; d++) {
		int src = -9, dst = -9;
		MPI_Cart_shift(grid, d, 1, &src, &dst);
		int c[2] = {want[0], want[1]}, esrc, edst;
		if (d == 0) {
			c[0] = (want[0] + dims[0] - 1) % dims[0];
			esrc = c[0] * dims[1] + c[1];
			c[0] = (want[0] + 1) % dims[0];
			edst = c[0] * dims[1] + c[1];
		} else {
			esrc = want[1] > 0 ? gr - 1 : MPI_PROC_NULL;
			edst = want[1] + 1 < dims[1] ? gr + 1 : MPI_PROC_NULL;
		}
		int got = -1, mine = 1000 + gr;
		MPI_Sendrecv(&mine, 1, MPI_INT, dst, 90 + d, &got, 1, MPI_INT, src, 90 + d, grid, MPI_STATUS_IGNORE);
		CHECK(src == esrc && dst == edst && got == (src == MPI_PROC_NULL ? -1 : 1000 + src),
		      "cart_shift in dimension %d: %d %d (want %d %d), got %d", d, src, dst, esrc, edst, got);
	}
	/* the rows (dimension 1 kept): a sum over each */
	int keep[2] = {0, 1}, rsum = 0, rs = -1, rn = -1;
	MPI_Comm row;
	MPI_Cart_sub(grid, keep, &row);
	MPI_Comm_rank(row, &rs);
	MPI_Cartdim_get(row, &rn);
	MPI_Allreduce(&gr, &rsum, 1, MPI_INT, MPI_SUM, row);
	int first = want[0] * dims[1];
	CHECK(rs == want[1] && rn == 1 && rsum == dims[1] * first + dims[1] * (dims[1] - 1) / 2,
	      "cart_sub rows: rank %d, %d dims, sum %d", rs, rn, rsum);
	MPI_Comm dup;
	MPI_Comm_dup(grid, &dup);
	int dt = -1;
	MPI_Topo_test(dup, &dt);
	CHECK(dt == MPI_CART, "a duplicate keeps the topology: %d", dt);
	MPI_Comm_free(&dup);
	MPI_Comm_free(&row);
	MPI_Comm_free(&grid);
	/* the torus's own dimensions, reordered: grid coordinates are the
	 * node's torus coordinates */
	int x[8], n = node_coords(x), tdims[8], tper[8], tc[8];
	for (int d = 0; d < n; d++)
		tper[d] = 1;
	int tcount = 1, mx[8];
	for (int d = 0; d < n; d++) {
		MPI_Allreduce(&x[d], &mx[d], 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
		tdims[d] = mx[d] + 1;
		tcount *= tdims[d];
	}
	if (tcount == size) {
		MPI_Comm tg;
		MPI_Cart_create(MPI_COMM_WORLD, n, tdims, tper, 1, &tg);
		MPI_Cart_get(tg, n, tdims, tper, tc);
		ok = 1;
		for (int d = 0; d < n; d++)
			ok &= tc[d] == x[d];
		CHECK(ok, "a grid of the torus's dimensions, reordered: coordinates %d.. are the node's %d..", tc[0], x[0]);
		MPI_Comm_free(&tg);
	}
	/* a ring as a graph */
	int *index = malloc(sizeof(int) * (size_t)size), *edges = malloc(sizeof(int) * 2 * (size_t)size);
	for (int r = 0; r < size; r++) {
		index[r] = 2 * (r + 1);
		edges[2 * r] = (r + size - 1) % size;
		edges[2 * r + 1] = (r + 1) % size;
	}
	MPI_Comm ring;
	MPI_Graph_create(MPI_COMM_WORLD, size, index, edges, 0, &ring);
	int nn = -1, ne = -1, nc = -1, nb[2] = {-1, -1}, tt = -1;
	MPI_Graphdims_get(ring, &nn, &ne);
	MPI_Graph_neighbors_count(ring, rank, &nc);
	MPI_Graph_neighbors(ring, rank, 2, nb);
	MPI_Topo_test(ring, &tt);
	CHECK(nn == size && ne == 2 * size && nc == 2 && nb[0] == (rank + size - 1) % size && nb[1] == (rank + 1) % size &&
		      tt == MPI_GRAPH,
	      "graph ring: %d nodes %d edges, neighbours %d %d", nn, ne, nb[0], nb[1]);
	MPI_Comm_free(&ring);
	free(index), free(edges);
	/* errors: no topology, a bad dimension, a grid larger than the world */
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	int e1 = -1, e2 = -1, e3 = -1, t0 = -1, bad[1] = {size + 1}, p0[1] = {0}, z[2] = {5, 0};
	MPI_Comm nc2;
	MPI_Error_class(MPI_Cartdim_get(MPI_COMM_WORLD, &nd), &e1);
	MPI_Error_class(MPI_Cart_create(MPI_COMM_WORLD, 1, bad, p0, 0, &nc2), &e2);
	MPI_Error_class(MPI_Dims_create(12, 2, z), &e3);
	MPI_Topo_test(MPI_COMM_WORLD, &t0);
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
	CHECK(e1 == MPI_ERR_TOPOLOGY && e2 == MPI_ERR_DIMS && e3 == MPI_ERR_DIMS && t0 == MPI_UNDEFINED,
	      "topology errors: %d %d %d, world %d", e1, e2, e3, t0);
}

/* Allreduce under each algorithm (TORUS_COLL_ALLREDUCE: the default,
 * recursive doubling, the catalogue's multicolor on the world): int sums
 * of 1 to 30001 elements, in place and not, on the world and the odd
 * ranks; the
 * matrix products (which do not commute) by recursive doubling; a bad
 * name refused. */
static void allreduce_algos_on(MPI_Comm comm, const char *label)
{
	int me, n;
	MPI_Comm_rank(comm, &me);
	MPI_Comm_size(comm, &n);
	static const char *const algos[] = {"", "recursive_doubling", "multicolor"};
	static const int counts[] = {1, 3, 100, 30001};
	/* (multicolor runs on teams that are tori: the world here) */
	for (size_t a = 0; a < (comm == MPI_COMM_WORLD ? 3u : 2u); a++) {
		if (*algos[a])
			setenv("TORUS_COLL_ALLREDUCE", algos[a], 1);
		else
			unsetenv("TORUS_COLL_ALLREDUCE"); /* (the catalogue reads it too) */
		for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); k++) {
			int c = counts[k], bad = 0;
			int *x = malloc(sizeof(int) * (size_t)c), *y = malloc(sizeof(int) * (size_t)c);
			for (int i = 0; i < c; i++)
				x[i] = me * 1000 + i;
			MPI_Allreduce(x, y, c, MPI_INT, MPI_SUM, comm);
			for (int i = 0; i < c; i++)
				bad += y[i] != n * (n - 1) / 2 * 1000 + n * i;
			MPI_Allreduce(MPI_IN_PLACE, x, c, MPI_INT, MPI_MAX, comm);
			for (int i = 0; i < c; i++)
				bad += x[i] != (n - 1) * 1000 + i;
			CHECK(!bad, "%s: allreduce '%s' of %d ints: %d wrong", label, algos[a], c, bad);
			free(x), free(y);
		}
	}
	/* the products of 2x2 matrices in rank order */
	MPI_Op mm;
	MPI_Op_create(matmul, 0, &mm);
	setenv("TORUS_COLL_ALLREDUCE", "recursive_doubling", 1);
	int m[8], w[8];
	MPI_Comm_rank(MPI_COMM_WORLD, &m[0]); /* (the world rank orders the reference below) */
	int wr = m[0], ok = 1;
	mat_of(me, 0, m), mat_of(me, 1, m + 4);
	MPI_Allreduce(MPI_IN_PLACE, m, 8, MPI_INT, mm, comm);
	product(0, n - 1, 0, w), product(0, n - 1, 1, w + 4);
	for (int i = 0; i < 8; i++)
		ok &= m[i] == w[i];
	CHECK(ok, "%s: recursive doubling of matrices (rank %d): %d %d %d %d", label, wr, m[0], m[1], m[2], m[3]);
	MPI_Op_free(&mm);
	setenv("TORUS_COLL_ALLREDUCE", "flood", 1);
	MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
	int cls = -1, v = 1, r = 0;
	MPI_Error_class(MPI_Allreduce(&v, &r, 1, MPI_INT, MPI_SUM, comm), &cls);
	MPI_Comm_set_errhandler(comm, MPI_ERRORS_ARE_FATAL);
	CHECK(cls == MPI_ERR_ARG, "%s: TORUS_COLL_ALLREDUCE=flood: class %d", label, cls);
	unsetenv("TORUS_COLL_ALLREDUCE");
}

static void allreduce_algos(void)
{
	allreduce_algos_on(MPI_COMM_WORLD, "world");
	MPI_Comm odd;
	MPI_Comm_split(MPI_COMM_WORLD, rank % 2 ? 1 : MPI_UNDEFINED, rank, &odd);
	if (odd != MPI_COMM_NULL) {
		allreduce_algos_on(odd, "odd ranks");
		MPI_Comm_free(&odd);
	}
}

/* The rooted collectives on one communicator under each algorithm
 * (TORUS_COLL_<NAME>: the default, the torus one through relays on the
 * root's axes, the point-to-point one), roots 0, the last and the middle,
 * blocks from one int to several hundred packets, in place included,
 * against references byte by byte. */
static void rooted_on(MPI_Comm comm, const char *label)
{
	int me, n;
	MPI_Comm_rank(comm, &me);
	MPI_Comm_size(comm, &n);
	static const char *const algos[][2] = {{"", ""}, {"torus", "torus"}, {"linear", "binomial"}};
	static const int counts[] = {1, 100, 30001};
	for (size_t a = 0; a < 3; a++) {
		setenv("TORUS_COLL_GATHER", algos[a][0], 1);
		setenv("TORUS_COLL_SCATTER", algos[a][0], 1);
		setenv("TORUS_COLL_BCAST", algos[a][1], 1);
		setenv("TORUS_COLL_REDUCE", algos[a][1], 1);
		for (int root = 0; root < n; root += n > 2 ? (n - 1) / 2 : 1) {
			for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); k++) {
				int c = counts[k], bad = 0;
				int *mine = malloc(sizeof(int) * (size_t)c), *all = malloc(sizeof(int) * (size_t)c * (size_t)n);
				for (int i = 0; i < c; i++)
					mine[i] = me * 100003 + i * 7 + (int)a;
				int inplace = k == 1 && me == root;
				if (inplace)
					memcpy(all + (size_t)root * (size_t)c, mine, sizeof(int) * (size_t)c);
				MPI_Gather(inplace ? MPI_IN_PLACE : mine, c, MPI_INT, all, c, MPI_INT, root, comm);
				if (me == root)
					for (int j = 0; j < n; j++)
						for (int i = 0; i < c; i++)
							bad += all[(size_t)j * (size_t)c + (size_t)i] != j * 100003 + i * 7 + (int)a;
				CHECK(!bad, "%s: gather (%s) of %d ints to %d: %d bad", label, algos[a][0], c, root, bad);
				if (me == root)
					for (size_t i = 0; i < (size_t)c * (size_t)n; i++)
						all[i] = (int)(i * 13 + a);
				memset(mine, 0, sizeof(int) * (size_t)c);
				MPI_Scatter(all, c, MPI_INT, inplace ? MPI_IN_PLACE : mine, c, MPI_INT, root, comm);
				bad = 0;
				const int *got = inplace ? all + (size_t)root * (size_t)c : mine;
				for (int i = 0; i < c; i++)
					bad += got[i] != (int)(((size_t)me * (size_t)c + (size_t)i) * 13 + a);
				CHECK(!bad, "%s: scatter (%s) of %d ints from %d: %d bad", label, algos[a][0], c, root, bad);
				/* bcast: chars, so the message fills no whole blocks */
				int nb = c * 3 + 1;
				char *b = malloc((size_t)nb);
				for (int i = 0; i < nb; i++)
					b[i] = me == root ? (char)(i * 5 + root) : 0;
				MPI_Bcast(b, nb, MPI_CHAR, root, comm);
				bad = 0;
				for (int i = 0; i < nb; i++)
					bad += b[i] != (char)(i * 5 + root);
				CHECK(!bad, "%s: bcast (%s) of %d bytes from %d: %d bad", label, algos[a][1], nb, root, bad);
				free(b);
				/* reduce: int sum (in place at the root once) and double max */
				int *sum = malloc(sizeof(int) * (size_t)c);
				for (int i = 0; i < c; i++)
					mine[i] = me + i;
				if (inplace)
					memcpy(sum, mine, sizeof(int) * (size_t)c);
				MPI_Reduce(inplace ? MPI_IN_PLACE : mine, sum, c, MPI_INT, MPI_SUM, root, comm);
				bad = 0;
				if (me == root)
					for (int i = 0; i < c; i++)
						bad += sum[i] != n * i + n * (n - 1) / 2;
				CHECK(!bad, "%s: reduce (%s) sum of %d ints to %d: %d bad", label, algos[a][1], c, root, bad);
				double *dv = malloc(sizeof(double) * (size_t)c), *dm = malloc(sizeof(double) * (size_t)c);
				for (int i = 0; i < c; i++)
					dv[i] = (double)((me * 7 + i) % n) + 0.5;
				MPI_Reduce(dv, dm, c, MPI_DOUBLE, MPI_MAX, root, comm);
				bad = 0;
				if (me == root)
					for (int i = 0; i < c; i++) {
						double want = 0;
						for (int r = 0; r < n; r++)
							want = (double)((r * 7 + i) % n) + 0.5 > want ? (double)((r * 7 + i) % n) + 0.5 : want;
						bad += dm[i] != want;
					}
				CHECK(!bad, "%s: reduce (%s) max of %d doubles to %d: %d bad", label, algos[a][1], c, root, bad);
				free(dv);
				free(dm);
				free(sum);
				free(mine);
				free(all);
			}
			if (n <= 1)
				break;
		}
	}
	/* a name that is neither: MPI_ERR_ARG, on every rank alike */
	setenv("TORUS_COLL_BCAST", "flood", 1);
	MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
	int x = 1, cls = -1;
	MPI_Error_class(MPI_Bcast(&x, 1, MPI_INT, 0, comm), &cls);
	CHECK(cls == MPI_ERR_ARG, "%s: TORUS_COLL_BCAST=flood: class %d", label, cls);
	MPI_Comm_set_errhandler(comm, MPI_ERRORS_ARE_FATAL);
	unsetenv("TORUS_COLL_GATHER");
	unsetenv("TORUS_COLL_SCATTER");
	unsetenv("TORUS_COLL_BCAST");
	unsetenv("TORUS_COLL_REDUCE");
}

/* ... on the world, and on the even ranks (whose relays may not be
 * members: those ways are not taken). */
static void rooted(void)
{
	rooted_on(MPI_COMM_WORLD, "world");
	MPI_Comm even;
	MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &even);
	if (rank % 2 == 0)
		rooted_on(even, "even ranks");
	MPI_Comm_free(&even);
}

int main(int argc, char **argv)
{
	int provided = -1, flag = 0;
	MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
	MPI_Initialized(&flag);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	CHECK(flag && provided == MPI_THREAD_FUNNELED, "init: flag %d provided %d", flag, provided);
	int self_rank = -1, self_size = -1;
	MPI_Comm_rank(MPI_COMM_SELF, &self_rank);
	MPI_Comm_size(MPI_COMM_SELF, &self_size);
	CHECK(self_rank == 0 && self_size == 1, "comm self");
	double t0 = MPI_Wtime();
	p2p();
	rendezvous();
	user_ops();
	user_ops_derived();
	alltoallw();
	datatypes();
	collectives();
	rooted();
	allreduce_algos();
	topologies();
	mpi1_rest();
	comms();
	double t1 = MPI_Wtime();
	CHECK(t1 > t0 && MPI_Wtick() > 0, "wtime %g .. %g", t0, t1);
	char name[MPI_MAX_PROCESSOR_NAME];
	int len;
	MPI_Get_processor_name(name, &len);
	if (!rank || fails)
		printf("mpi-check: rank %d of %d on %s: %s %d checks (%.3f us of emulated time)\n", rank, size, name,
		       fails ? "FAILED" : "all passed:", checks, (t1 - t0) * 1e6);
	MPI_Finalize();
	MPI_Finalized(&flag);
	return fails || !flag;
}
