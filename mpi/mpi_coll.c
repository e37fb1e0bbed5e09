/*
 * libtorusmpi's collectives. Allreduce, Allgather, Alltoall, Alltoallv and
 * Reduce_scatter_block run the catalogue's torus algorithms (coll/, its
 * default choice, or TORUS_COLL_<COLLECTIVE>=NAME) where the datatype and
 * operation map onto coll's (4- and 8-byte integers and floats; sizes in
 * multiples of 4 bytes for the data movers); Bcast, Reduce, Gather and
 * Scatter have a torus algorithm of their own (mpi_rooted.c, and
 * bcast_torus and reduce_torus below); otherwise they run on
 * point-to-point messages (binomial trees, or direct exchanges) with the
 * collectives' own tags.
 * Every rank decides alike: the choice depends on arguments MPI requires
 * to match.
 */
#include "mpi_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* the collectives' own tags (negative: no user receive takes them; their
 * order gives the trace tag, mpi_coll_trace) */
enum { TAG_BCAST = -10, TAG_REDUCE = -11, TAG_GATHER = -12, TAG_SCATTER = -13, TAG_ALLTOALL = -14, TAG_SCAN = -15,
       TAG_ALLREDUCE = -16 };

/* returns the call's error from the calling function: its name says so
 * where it is used */
#define RETURN_ON_ERROR(call)                                                                                    \
	do {                                                                                                     \
		int rc_ = (call);                                                                                \
		if (rc_)                                                                                         \
			return rc_;                                                                              \
	} while (0)

static int common(const char *fn, MPI_Comm comm, int count, MPI_Datatype t, int *size)
{
	RETURN_ON_ERROR(mpi_comm_check(comm, fn, size));
	if (count < 0)
		return mpi_error(comm, MPI_ERR_COUNT, fn, "negative count %d", count);
	struct mpi_type_info ti;
	if (!mpi_type_size(t))
		return mpi_error(comm, MPI_ERR_TYPE, fn,
				 mpi_type_info(t, 0, &ti) ? "unknown datatype %d"
							  : "datatype %d is derived: this call takes predefined types only, for now",
				 t);
	return MPI_SUCCESS;
}

/* This rank in comm, or -1 (the call's own checks then refuse comm). */
static int rank_in(MPI_Comm comm)
{
	const struct mpi_comm *cm = mpi_g.state == 1 ? mpi_comm_of(comm) : NULL;
	return cm ? cm->rank : -1;
}

/*
 * Arguments the standard says a rank ignores are never checked or used:
 * each call replaces them by the ones that count before it looks at
 * anything (off the root, the receive side of a gather and the send side
 * of a scatter; the side given as MPI_IN_PLACE).
 */

static int root_ok(const char *fn, MPI_Comm comm, int root, int size)
{
	return root < 0 || root >= size ? mpi_error(comm, MPI_ERR_ROOT, fn, "root %d (size %d)", root, size) : 0;
}

/* The reduction's virtual time on this core (reduce_bw, as coll/'s). */
static void charge_reduce(uint64_t bytes)
{
	const struct torus_params *p = emu_params(mpi_g.c);
	emu_core_compute(mpi_g.c, (torus_vt_t)((double)bytes * 1e12 / (double)p->reduce_bw));
}

static int op_ok(const char *fn, MPI_Comm comm, MPI_Op op, MPI_Datatype t)
{
	if (mpi_user_op(op))
		return MPI_SUCCESS; /* defined on whatever the program gives it */
	if (op <= MPI_OP_NULL || op >= TORUS_MPI_NOPS_)
		return mpi_error(comm, MPI_ERR_OP, fn, "unknown operation %d", op);
	/* one element through the kernel: is op defined on t? */
	long double x[2] = {0, 0}, y[2] = {0, 0};
	if (mpi_reduce_local(t, op, x, y, 1))
		return mpi_error(comm, MPI_ERR_OP, fn, "operation %d is not defined on datatype %d", op, t);
	return MPI_SUCCESS;
}

/* ------------------------------------------------ mismatched calls */

static const char *const kind_names[MPI_CK_COUNT] = {
	[MPI_CK_BARRIER] = "MPI_Barrier",
	[MPI_CK_BCAST] = "MPI_Bcast",
	[MPI_CK_REDUCE] = "MPI_Reduce",
	[MPI_CK_ALLREDUCE] = "MPI_Allreduce",
	[MPI_CK_GATHER] = "MPI_Gather",
	[MPI_CK_GATHERV] = "MPI_Gatherv",
	[MPI_CK_SCATTER] = "MPI_Scatter",
	[MPI_CK_SCATTERV] = "MPI_Scatterv",
	[MPI_CK_ALLGATHER] = "MPI_Allgather",
	[MPI_CK_ALLGATHERV] = "MPI_Allgatherv",
	[MPI_CK_ALLTOALL] = "MPI_Alltoall",
	[MPI_CK_ALLTOALLV] = "MPI_Alltoallv",
	[MPI_CK_ALLTOALLW] = "MPI_Alltoallw",
	[MPI_CK_REDUCE_SCATTER] = "MPI_Reduce_scatter",
	[MPI_CK_REDUCE_SCATTER_BLOCK] = "MPI_Reduce_scatter_block",
	[MPI_CK_SCAN] = "MPI_Scan",
	[MPI_CK_EXSCAN] = "MPI_Exscan",
};

const char *mpi_coll_name(uint32_t sig)
{
	uint32_t k = sig >> MPI_SIG_KIND_SHIFT;
	return k && k < MPI_CK_COUNT ? kind_names[k] : "a collective";
}

/*
 * The outermost collective call on a communicator numbers it and sets the
 * signature its messages carry; the calls it makes inside (an allgather's
 * gather, say) keep it. What goes in is what every rank of a correct
 * program gives alike: the kind, a predefined operation (a user one only
 * as "a user operation": its handle is each rank's own), the root, the
 * size, and the call's number.
 */
uint32_t mpi_coll_enter(MPI_Comm comm, enum mpi_coll_kind kind, MPI_Op op, int root, uint64_t bytes)
{
	if (mpi_g.coll_depth++)
		return mpi_g.coll_depth;
	struct mpi_comm *cm = mpi_g.state == 1 ? mpi_comm_of(comm) : NULL;
	if (!cm) {
		mpi_g.coll_sig = 0; /* (the call refuses the communicator) */
		return mpi_g.coll_depth;
	}
	uint64_t h = 0x9e3779b97f4a7c15ull;
	uint64_t parts[] = {mpi_user_op(op) ? 0xffffu : (uint64_t)(uint32_t)op, (uint64_t)(uint32_t)root, bytes, cm->coll_seq++};
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
		h = (h ^ parts[i]) * 0x100000001b3ull;
		h ^= h >> 29;
	}
	mpi_g.coll_sig = (uint32_t)kind << MPI_SIG_KIND_SHIFT | ((uint32_t)h & ((1u << MPI_SIG_KIND_SHIFT) - 1));
	return mpi_g.coll_depth;
}

void mpi_coll_leave(uint32_t *depth)
{
	(void)depth;
	if (!--mpi_g.coll_depth)
		mpi_g.coll_sig = 0;
}

/* count elements of t: their data bytes (0 for a bad count or type: the
 * call refuses them) */
static uint64_t data_bytes(int count, MPI_Datatype t)
{
	struct mpi_type_info ti;
	return count > 0 && !mpi_type_info(t, 0, &ti) ? (uint64_t)count * ti.size : 0;
}

static int coll_rc(MPI_Comm comm, const char *fn, int rc)
{
	if (rc == -EPROTO)
		return mpi_error(comm, MPI_ERR_OTHER, fn,
				 "the ranks' calls do not match (another collective, count, datatype or operation elsewhere)");
	return rc ? mpi_error(comm, MPI_ERR_INTERN, fn, "the torus collective failed: %s", dma_strerror(rc)) : 0;
}

static int p2p_rc(MPI_Comm comm, const char *fn, int rc)
{
	if (rc == MPI_ERR_OTHER && mpi_g.bad_sig) {
		uint32_t theirs = mpi_g.bad_sig, mine = mpi_g.bad_mine;
		mpi_g.bad_sig = 0;
		if (theirs >> MPI_SIG_KIND_SHIFT != mine >> MPI_SIG_KIND_SHIFT)
			return mpi_error(comm, rc, fn, "mismatched collective calls: rank %d sent this rank a message of %s",
					 mpi_g.bad_src, mpi_coll_name(theirs));
		return mpi_error(comm, rc, fn,
				 "mismatched collective calls: rank %d is in %s with another operation, root or size, or "
				 "in another call of it (the ranks' collective calls differ in number or order)",
				 mpi_g.bad_src, mpi_coll_name(theirs));
	}
	return rc ? mpi_error(comm, rc, fn, "a message of the collective failed") : 0;
}

/*
 * The rooted collectives' algorithm: TORUS_COLL_<NAME> names it ("torus",
 * or the point-to-point one, `plain`), else the torus algorithm from
 * `from` bytes on (bytes: what every rank knows alike). On teams of two or
 * fewer the plain one runs whatever the choice: there is nothing to relay.
 * 0 and *torus, or the error for a name that is neither.
 */
static int rooted_choice(const char *fn, MPI_Comm comm, const char *env, const char *plain, uint64_t bytes,
			 uint64_t from, int size, int *torus)
{
	const char *v = getenv(env);
	if (!v || !*v)
		*torus = bytes >= from;
	else if (!strcmp(v, "torus"))
		*torus = 1;
	else if (!strcmp(v, plain))
		*torus = 0;
	else
		return mpi_error(comm, MPI_ERR_ARG, fn, "%s=%s: no such algorithm (torus or %s)", env, v, plain);
	if (size <= 2 || !bytes)
		*torus = 0;
	return MPI_SUCCESS;
}

/* Where the rooted collectives' defaults switch to the torus algorithm:
 * gather and scatter by the block, bcast and reduce by the message
 * (BENCHMARKS.md as of commit 26917ce, "The rooted collectives"). */
#define GATHER_TORUS_FROM 128u
#define BCAST_TORUS_FROM 4096u
#define REDUCE_TORUS_FROM 2048u

/* Large enough to share with the node's other cores (and can it)? */
static int multicore(MPI_Comm comm, uint64_t bytes)
{
	return mpi_comm_of(comm)->nteam && bytes >= mpi_g.multicore_bytes;
}

/* A collective on comm's node team: the helpers take their part too. */
static int node_coll(MPI_Comm comm, enum mpi_help_cmd cmd, const void *send, void *recv, size_t count,
		     enum coll_dtype dt, enum coll_op op)
{
	coll_team_t *t = mpi_comm_of(comm)->nteam;
	struct mpi_help job = {.h = comm, .send = send, .recv = recv, .count = count, .dt = dt, .op = op};
	int rc = mpi_help(cmd, &job);
	if (rc)
		return rc;
	switch (cmd) {
	case MPI_HELP_ALLREDUCE: return coll_allreduce(t, send, recv, count, dt, op, NULL);
	case MPI_HELP_ALLGATHER: return coll_allgather(t, send, recv, count, dt, NULL);
	default: return coll_reduce_scatter(t, send, recv, count, dt, op, NULL);
	}
}

/*
 * Bcast, the bucket way (003_b0aac8c3d10c7733.txt, section 2: scatter,
 * then allgather): the root scatters the message in p blocks through the
 * relays on its axes (mpi_rooted.c), then every rank gathers all of them
 * with the catalogue's allgather (multicolor on the torus, its node's
 * cores taking a color each from TORUS_MPI_MULTICORE_BYTES on). Blocks are
 * rounded up to 4 bytes, the message padded to p blocks in a copy where it
 * does not fill them.
 */
static int bcast_torus(void *buf, uint64_t bytes, int root, MPI_Comm comm, int size)
{
	int me = mpi_comm_of(comm)->rank;
	uint64_t b = ((bytes + (uint64_t)size - 1) / (uint64_t)size + 3) & ~(uint64_t)3, all = b * (uint64_t)size;
	char *v = all == bytes ? buf : malloc(all), *mine = malloc(b);
	int rc = v && mine ? 0 : MPI_ERR_INTERN;
	if (!rc && v != buf && me == root) {
		mpi_copy(v, buf, bytes);
		memset(v + bytes, 0, all - bytes);
	}
	if (!rc)
		rc = mpi_scatter_torus(v, v + (uint64_t)me * b, b, root, TAG_BCAST, comm);
	if (!rc) {
		mpi_copy(mine, v + (uint64_t)me * b, b);
		rc = coll_rc(comm, "MPI_Bcast",
			     multicore(comm, bytes) ? node_coll(comm, MPI_HELP_ALLGATHER, mine, v, (size_t)(b / 4), COLL_INT32, COLL_SUM)
						    : coll_allgather(mpi_comm_of(comm)->team, mine, v, (size_t)(b / 4), COLL_INT32, NULL));
	}
	if (!rc && v != buf && me != root)
		mpi_copy(buf, v, bytes);
	if (v != buf)
		free(v);
	free(mine);
	return rc;
}

/*
 * Reduce, the bucket way (the same section: reduce-scatter, then gather):
 * the catalogue's reduce-scatter (multicolor) leaves every rank one block
 * of the result, and the relays on the root's axes gather them. The vector
 * is padded with zeros to p equal blocks, whose padding the root drops.
 * For the operations the catalogue has (commutative), on its types.
 */
static int reduce_torus(const void *src, void *recvbuf, int count, int esize, enum coll_dtype dt, enum coll_op cop,
			int root, MPI_Comm comm, int size)
{
	int me = mpi_comm_of(comm)->rank;
	uint64_t per = ((uint64_t)count + (uint64_t)size - 1) / (uint64_t)size, b = per * (uint64_t)esize;
	uint64_t bytes = (uint64_t)count * (uint64_t)esize, all = b * (uint64_t)size;
	char *in = calloc(1, all), *part = malloc(b);
	char *out = me != root ? NULL : all == bytes ? recvbuf : malloc(all);
	int rc = in && part && (me != root || out) ? 0 : MPI_ERR_INTERN;
	if (!rc) {
		mpi_copy(in, src, bytes);
		rc = coll_rc(comm, "MPI_Reduce",
			     multicore(comm, bytes) ? node_coll(comm, MPI_HELP_REDUCE_SCATTER, in, part, (size_t)per, dt, cop)
						    : coll_reduce_scatter(mpi_comm_of(comm)->team, in, part, (size_t)per, dt, cop, NULL));
	}
	if (!rc && me == root)
		mpi_copy(out + (uint64_t)root * b, part, b);
	if (!rc)
		rc = p2p_rc(comm, "MPI_Reduce", mpi_gather_torus(part, out, b, root, TAG_REDUCE, comm));
	if (!rc && me == root && out != recvbuf)
		mpi_copy(recvbuf, out, bytes);
	if (out != recvbuf)
		free(out);
	free(in);
	free(part);
	return rc;
}

int MPI_Barrier(MPI_Comm comm)
{
	MPI_API();
	MPI_COLL_CALL(comm, MPI_CK_BARRIER, 0, 0, 0);
	int size = 0;
	RETURN_ON_ERROR(mpi_comm_check(comm, "MPI_Barrier", &size));
	if (size == 1)
		return MPI_SUCCESS;
	return coll_rc(comm, "MPI_Barrier", dma_barrier_team(mpi_g.c, mpi_comm_of(comm)->members, (size_t)size));
}

/* Binomial tree from root over ranks relative to it. */
static int bcast(void *buf, uint64_t bytes, int root, MPI_Comm comm, int size)
{
	int me = mpi_comm_of(comm)->rank, rel = (me - root + size) % size, mask = 1;
	while (mask < size) {
		if (rel & mask) {
			RETURN_ON_ERROR(mpi_recv_raw(buf, bytes, (rel - mask + root) % size, TAG_BCAST, comm));
			break;
		}
		mask <<= 1;
	}
	for (mask >>= 1; mask > 0; mask >>= 1)
		if (rel + mask < size)
			RETURN_ON_ERROR(mpi_send_raw(buf, bytes, (rel + mask + root) % size, TAG_BCAST, comm));
	return 0;
}

/* ---------------------------------- derived datatypes in the block collectives
 *
 * MPI_Bcast, _Gather, _Scatter, _Allgather and _Alltoall take derived
 * datatypes by packing: n blocks of count elements of t (block i at i
 * times count extents) to n blocks of count * size bytes, the collective on
 * MPI_BYTE, and back. */

static int derived_type(MPI_Datatype t) { return t != MPI_DATATYPE_NULL && !mpi_type_size(t); }

/* Check (count, t) for fn, and give its packed bytes (an int, as MPI_BYTE counts are). */
static int packed_bytes(const char *fn, MPI_Comm comm, int count, MPI_Datatype t, int *bytes)
{
	struct mpi_type_info ti;
	int size = 0;
	RETURN_ON_ERROR(mpi_comm_check(comm, fn, &size));
	if (count < 0)
		return mpi_error(comm, MPI_ERR_COUNT, fn, "negative count %d", count);
	if (mpi_type_info(t, 1, &ti))
		return mpi_error(comm, MPI_ERR_TYPE, fn, "unknown or uncommitted datatype %d", t);
	if ((uint64_t)count * ti.size > INT32_MAX)
		return mpi_error(comm, MPI_ERR_COUNT, fn, "%d elements of %llu bytes: too many for one call", count,
				 (unsigned long long)ti.size);
	*bytes = (int)((uint64_t)count * ti.size);
	return MPI_SUCCESS;
}

/* n blocks of (count, t) at buf, packed into a new buffer (NULL: out of memory) */
static void *pack_blocks(const void *buf, int count, MPI_Datatype t, int n, int bytes)
{
	struct mpi_type_info ti;
	mpi_type_info(t, 0, &ti);
	char *p = malloc((size_t)bytes * (size_t)n + 1);
	for (int i = 0; p && i < n; i++)
		mpi_pack((const char *)buf + (MPI_Aint)i * count * ti.extent, count, t, p + (size_t)i * (size_t)bytes);
	return p;
}

static void unpack_blocks(const void *p, void *buf, int count, MPI_Datatype t, int n, int bytes)
{
	struct mpi_type_info ti;
	mpi_type_info(t, 0, &ti);
	for (int i = 0; i < n; i++)
		mpi_unpack((const char *)p + (size_t)i * (size_t)bytes, (uint64_t)bytes,
			   (char *)buf + (MPI_Aint)i * count * ti.extent, count, t);
}

static int bcast_derived(void *buffer, int count, MPI_Datatype t, int root, MPI_Comm comm)
{
	int b = 0;
	RETURN_ON_ERROR(packed_bytes("MPI_Bcast", comm, count, t, &b));
	char *p = pack_blocks(buffer, count, t, 1, b);
	if (!p)
		return mpi_error(comm, MPI_ERR_INTERN, "MPI_Bcast", "out of memory");
	int rc = MPI_Bcast(p, b, MPI_BYTE, root, comm);
	if (!rc && mpi_comm_of(comm)->rank != root)
		unpack_blocks(p, buffer, count, t, 1, b);
	free(p);
	return rc;
}

/* MPI_Gather (gather), MPI_Allgather (all), MPI_Scatter (scatter) and
 * MPI_Alltoall (both sides n blocks) with a derived type on either side. */
enum blocks_kind { BK_GATHER, BK_ALLGATHER, BK_SCATTER, BK_ALLTOALL };
static int blocks_derived(enum blocks_kind kind, const char *fn, const void *sendbuf, int scount, MPI_Datatype st,
			  void *recvbuf, int rcount, MPI_Datatype rt, int root, MPI_Comm comm)
{
	int sb = 0, rb = 0, size = 0;
	RETURN_ON_ERROR(mpi_comm_check(comm, fn, &size));
	int me = mpi_comm_of(comm)->rank;
	int rooted = kind == BK_GATHER || kind == BK_SCATTER;
	if (rooted && (root < 0 || root >= size))
		return mpi_error(comm, MPI_ERR_ROOT, fn, "root %d (size %d)", root, size);
	int in_place = sendbuf == MPI_IN_PLACE || (kind == BK_SCATTER && recvbuf == MPI_IN_PLACE);
	/* the blocks each side has: n of them, or one */
	int sn = kind == BK_SCATTER || kind == BK_ALLTOALL ? size : 1, rn = kind == BK_SCATTER ? 1 : size;
	int shas = kind != BK_SCATTER || me == root, rhas = kind != BK_GATHER || me == root;
	if (shas && !(in_place && kind != BK_SCATTER))
		RETURN_ON_ERROR(packed_bytes(fn, comm, scount, st, &sb));
	if (rhas && !(in_place && kind == BK_SCATTER))
		RETURN_ON_ERROR(packed_bytes(fn, comm, rcount, rt, &rb));
	char *s = NULL, *r = NULL;
	int rc = MPI_SUCCESS;
	if (shas && !(in_place && kind != BK_SCATTER) && !(s = pack_blocks(sendbuf, scount, st, sn, sb)))
		rc = MPI_ERR_INTERN;
	if (!rc && rhas && !(in_place && kind == BK_SCATTER) && !(r = malloc((size_t)rb * (size_t)rn + 1)))
		rc = MPI_ERR_INTERN;
	if (!rc && in_place && kind != BK_SCATTER) {
		/* my own blocks are in recvbuf already: pack them where they go */
		if (kind == BK_ALLTOALL) {
			free(r);
			r = pack_blocks(recvbuf, rcount, rt, rn, rb);
			rc = r ? 0 : MPI_ERR_INTERN;
		} else {
			struct mpi_type_info ti;
			mpi_type_info(rt, 0, &ti);
			mpi_pack((char *)recvbuf + (MPI_Aint)me * rcount * ti.extent, rcount, rt, r + (size_t)me * (size_t)rb);
		}
	}
	if (rc) {
		free(s);
		free(r);
		return mpi_error(comm, MPI_ERR_INTERN, fn, "out of memory");
	}
	const void *sarg = in_place && kind != BK_SCATTER ? MPI_IN_PLACE : s;
	void *rarg = in_place && kind == BK_SCATTER ? MPI_IN_PLACE : r;
	switch (kind) {
	case BK_GATHER: rc = MPI_Gather(sarg, sb, MPI_BYTE, rarg, rb, MPI_BYTE, root, comm); break;
	case BK_SCATTER: rc = MPI_Scatter(sarg, sb, MPI_BYTE, rarg, rb, MPI_BYTE, root, comm); break;
	case BK_ALLGATHER: rc = MPI_Allgather(sarg, sb, MPI_BYTE, rarg, rb, MPI_BYTE, comm); break;
	case BK_ALLTOALL: rc = MPI_Alltoall(sarg, sb, MPI_BYTE, rarg, rb, MPI_BYTE, comm); break;
	}
	if (!rc && r)
		unpack_blocks(r, recvbuf, rcount, rt, rn, rb);
	free(s);
	free(r);
	return rc;
}

/* The v-forms' blocks of t (block i: counts[i] elements at displs[i]
 * extents of buf), packed one after another: a new buffer (its block i at
 * (*dsp)[i], (*cnt)[i] bytes; packed from buf if `pack`), or NULL with *rc
 * the error. */
struct vblocks {
	char *p;
	int *cnt, *dsp;
};
static int vpack(const char *fn, MPI_Comm comm, int n, const int counts[], const int displs[], MPI_Datatype t,
		 const void *buf, int pack, struct vblocks *v)
{
	struct mpi_type_info ti;
	*v = (struct vblocks){0};
	if (!counts || !displs)
		return mpi_error(comm, MPI_ERR_ARG, fn, "NULL count or displacement array");
	if (mpi_type_info(t, 1, &ti))
		return mpi_error(comm, MPI_ERR_TYPE, fn, "unknown or uncommitted datatype %d", t);
	uint64_t total = 0;
	for (int i = 0; i < n; i++) {
		if (counts[i] < 0)
			return mpi_error(comm, MPI_ERR_COUNT, fn, "negative count for rank %d", i);
		total += (uint64_t)counts[i] * ti.size;
	}
	if (total > INT32_MAX)
		return mpi_error(comm, MPI_ERR_COUNT, fn, "%llu packed bytes: too many for one call",
				 (unsigned long long)total);
	v->cnt = malloc(2 * (size_t)n * sizeof(int) + 1);
	v->p = malloc(total + 1);
	if (!v->cnt || !v->p) {
		free(v->cnt);
		free(v->p);
		return mpi_error(comm, MPI_ERR_INTERN, fn, "out of memory");
	}
	v->dsp = v->cnt + n;
	for (int i = 0, at = 0; i < n; i++) {
		v->cnt[i] = (int)((uint64_t)counts[i] * ti.size);
		v->dsp[i] = at;
		at += v->cnt[i];
		if (pack)
			mpi_pack((const char *)buf + (MPI_Aint)displs[i] * ti.extent, counts[i], t, v->p + v->dsp[i]);
	}
	return MPI_SUCCESS;
}

static void vunpack(int n, const int counts[], const int displs[], MPI_Datatype t, void *buf, const struct vblocks *v)
{
	struct mpi_type_info ti;
	mpi_type_info(t, 0, &ti);
	for (int i = 0; i < n; i++)
		mpi_unpack(v->p + v->dsp[i], (uint64_t)v->cnt[i], (char *)buf + (MPI_Aint)displs[i] * ti.extent, counts[i],
			   t);
}

static void vfree(struct vblocks *v)
{
	free(v->p);
	free(v->cnt);
}

/* The v-forms with a derived type on either side (kind: BK_*, as above). */
static int vforms_derived(enum blocks_kind kind, const char *fn, const void *sendbuf, const int scounts[],
			  const int sdispls[], int scount, MPI_Datatype st, void *recvbuf, const int rcounts[],
			  const int rdispls[], int rcount, MPI_Datatype rt, int root, MPI_Comm comm)
{
	int size = 0, sb = 0, rb = 0, rc;
	RETURN_ON_ERROR(mpi_comm_check(comm, fn, &size));
	int me = mpi_comm_of(comm)->rank;
	if ((kind == BK_GATHER || kind == BK_SCATTER) && (root < 0 || root >= size))
		return mpi_error(comm, MPI_ERR_ROOT, fn, "root %d (size %d)", root, size);
	int sin = sendbuf == MPI_IN_PLACE, rin = kind == BK_SCATTER && recvbuf == MPI_IN_PLACE;
	struct vblocks s = {0}, r = {0};
	char *s1 = NULL, *r1 = NULL;
	/* the blocked side, n blocks: gather's and allgather's receive,
	 * scatter's send, both of alltoall's */
	if ((kind == BK_GATHER && me == root) || kind == BK_ALLGATHER || kind == BK_ALLTOALL)
		RETURN_ON_ERROR(vpack(fn, comm, size, rcounts, rdispls, rt, recvbuf, sin, &r));
	if ((kind == BK_SCATTER && me == root) || (kind == BK_ALLTOALL && !sin)) {
		if ((rc = vpack(fn, comm, size, scounts, sdispls, st, sendbuf, 1, &s))) {
			vfree(&r);
			return rc;
		}
	}
	/* the single side */
	rc = MPI_SUCCESS;
	if ((kind == BK_GATHER || kind == BK_ALLGATHER) && !sin) {
		if (!(rc = packed_bytes(fn, comm, scount, st, &sb)) && !(s1 = pack_blocks(sendbuf, scount, st, 1, sb)))
			rc = mpi_error(comm, MPI_ERR_INTERN, fn, "out of memory");
	} else if (kind == BK_SCATTER && !rin) {
		if (!(rc = packed_bytes(fn, comm, rcount, rt, &rb)) && !(r1 = malloc((size_t)rb + 1)))
			rc = mpi_error(comm, MPI_ERR_INTERN, fn, "out of memory");
	}
	if (!rc) {
		const void *sarg = sin ? MPI_IN_PLACE : s1 ? (const void *)s1 : s.p;
		switch (kind) {
		case BK_GATHER: rc = MPI_Gatherv(sarg, sb, MPI_BYTE, r.p, r.cnt, r.dsp, MPI_BYTE, root, comm); break;
		case BK_ALLGATHER: rc = MPI_Allgatherv(sarg, sb, MPI_BYTE, r.p, r.cnt, r.dsp, MPI_BYTE, comm); break;
		case BK_SCATTER:
			rc = MPI_Scatterv(s.p, s.cnt, s.dsp, MPI_BYTE, rin ? MPI_IN_PLACE : r1, rb, MPI_BYTE, root, comm);
			break;
		case BK_ALLTOALL:
			rc = MPI_Alltoallv(sin ? MPI_IN_PLACE : s.p, s.cnt, s.dsp, MPI_BYTE, r.p, r.cnt, r.dsp, MPI_BYTE, comm);
			break;
		}
	}
	if (!rc && r.p)
		vunpack(size, rcounts, rdispls, rt, recvbuf, &r);
	if (!rc && r1)
		mpi_unpack(r1, (uint64_t)rb, recvbuf, rcount, rt);
	vfree(&s);
	vfree(&r);
	free(s1);
	free(r1);
	return rc;
}

/* ------------------------------------ derived datatypes in the reductions
 *
 * A predefined operation applies to a derived type whose parts are all
 * one predefined type (a contiguous run or a vector of doubles, say): the
 * reduction runs on those elements, packed, and the result is unpacked.
 * A user operation runs on the packed elements as MPI_BYTE under the
 * stand-in handle MPI_PACKED_OP, whose combine step unpacks both operands
 * into the type's own layout for the user's function and packs the result
 * (mpi_ops.c); the algorithms only ever combine whole buffers of whole
 * elements, in rank order where the operation does not commute. */

struct red_pack {
	MPI_Datatype basic;
	uint64_t per;    /* basic elements per element */
	MPI_Op op;       /* the operation to run on them */
	struct mpi_user_op saved; /* MPI_PACKED_OP before this call */
	char *s, *r;     /* packed send (NULL: in place) and receive buffers */
};

/* Set up p for a reduction of t (per call's local part); nsend: the
 * elements of t the send side holds (count, or count * size for the
 * scatters); nrecv: the receive side's; want_recv: this rank receives. */
static int red_derived(const char *fn, MPI_Comm comm, MPI_Datatype t, MPI_Op op, const void *sendbuf, int nsend,
		       void *recvbuf, int nrecv, int want_recv, struct red_pack *p)
{
	struct mpi_type_info ti;
	int size = 0, sb = 0, rb = 0;
	memset(p, 0, sizeof(*p));
	RETURN_ON_ERROR(mpi_comm_check(comm, fn, &size));
	RETURN_ON_ERROR(packed_bytes(fn, comm, nsend, t, &sb));
	RETURN_ON_ERROR(packed_bytes(fn, comm, nrecv, t, &rb));
	mpi_type_info(t, 0, &ti);
	const struct mpi_user_op *u = mpi_user_op(op);
	if (u) {
		p->basic = MPI_BYTE;
		p->per = ti.size;
		p->op = MPI_PACKED_OP;
	} else {
		if (op <= MPI_OP_NULL || op >= TORUS_MPI_NOPS_)
			return mpi_error(comm, MPI_ERR_OP, fn, "unknown operation %d", op);
		if (ti.basic == MPI_DATATYPE_NULL)
			return mpi_error(comm, MPI_ERR_TYPE, fn,
					 "datatype %d mixes predefined types: a predefined operation needs one", t);
		p->basic = ti.basic;
		p->per = ti.nbasic;
		p->op = op;
	}
	if ((uint64_t)nsend * p->per > INT32_MAX)
		return mpi_error(comm, MPI_ERR_COUNT, fn, "%d elements of datatype %d: too many for one call", nsend, t);
	const void *in = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
	if ((sb && !in) || (want_recv && rb && !recvbuf))
		return mpi_error(comm, MPI_ERR_BUFFER, fn, "NULL buffer (or MPI_IN_PLACE where it is not allowed)");
	if (!(p->s = pack_blocks(in, nsend, t, 1, sb)) || (want_recv && !(p->r = calloc((size_t)rb + 1, 1)))) {
		free(p->s);
		return mpi_error(comm, MPI_ERR_INTERN, fn, "out of memory");
	}
	if (u) {
		p->saved = mpi_g.packed_op;
		mpi_g.packed_op = (struct mpi_user_op){u->fn, u->commute, t};
	}
	return MPI_SUCCESS;
}

static int red_finish(struct red_pack *p, int rc, void *recvbuf, int nrecv, MPI_Datatype t)
{
	if (!rc && p->r)
		mpi_unpack(p->r, (uint64_t)-1, recvbuf, nrecv, t);
	if (p->op == MPI_PACKED_OP)
		mpi_g.packed_op = p->saved;
	free(p->s);
	free(p->r);
	return rc;
}

/* inoutbuf = inbuf op inoutbuf, here: a user function sees the buffers
 * as they are; a predefined operation on a derived type of one predefined
 * type works on its parts. */
int MPI_Reduce_local(const void *inbuf, void *inoutbuf, int count, MPI_Datatype datatype, MPI_Op op)
{
	MPI_API();
	const char *fn = "MPI_Reduce_local";
	struct mpi_type_info ti;
	if (count < 0)
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_COUNT, fn, "negative count %d", count);
	if (mpi_type_info(datatype, 1, &ti))
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_TYPE, fn, "unknown or uncommitted datatype %d", datatype);
	if (count && ti.size && (!inbuf || !inoutbuf))
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_BUFFER, fn, "NULL buffer");
	const struct mpi_user_op *u = op == MPI_PACKED_OP ? NULL : mpi_user_op(op);
	if (u) {
		int len = count;
		MPI_Datatype dt = datatype;
		u->fn((void *)(uintptr_t)inbuf, inoutbuf, &len, &dt);
		return MPI_SUCCESS;
	}
	if (!derived_type(datatype)) {
		RETURN_ON_ERROR(op_ok(fn, MPI_COMM_WORLD, op, datatype));
		mpi_combine(datatype, op, inbuf, inoutbuf, (size_t)count);
		return MPI_SUCCESS;
	}
	if (ti.basic == MPI_DATATYPE_NULL)
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_TYPE, fn,
				 "datatype %d mixes predefined types: a predefined operation needs one", datatype);
	RETURN_ON_ERROR(op_ok(fn, MPI_COMM_WORLD, op, ti.basic));
	uint64_t bytes = (uint64_t)count * ti.size;
	char *a = malloc(bytes + 1), *b = malloc(bytes + 1);
	if (!a || !b) {
		free(a), free(b);
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_INTERN, fn, "out of memory");
	}
	mpi_pack(inbuf, count, datatype, a);
	mpi_pack(inoutbuf, count, datatype, b);
	mpi_combine(ti.basic, op, a, b, (size_t)((uint64_t)count * ti.nbasic));
	mpi_unpack(b, bytes, inoutbuf, count, datatype);
	free(a), free(b);
	return MPI_SUCCESS;
}

int MPI_Bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm)
{
	MPI_API();
	MPI_COLL_CALL(comm, MPI_CK_BCAST, 0, root, data_bytes(count, datatype));
	if (derived_type(datatype))
		return bcast_derived(buffer, count, datatype, root, comm);
	int size = 0;
	RETURN_ON_ERROR(common("MPI_Bcast", comm, count, datatype, &size));
	RETURN_ON_ERROR(root_ok("MPI_Bcast", comm, root, size));
	if (count && !buffer)
		return mpi_error(comm, MPI_ERR_BUFFER, "MPI_Bcast", "NULL buffer");
	uint64_t bytes = (uint64_t)count * (uint64_t)mpi_type_size(datatype);
	int torus = 0;
	RETURN_ON_ERROR(rooted_choice("MPI_Bcast", comm, "TORUS_COLL_BCAST", "binomial", bytes, BCAST_TORUS_FROM, size, &torus));
	if (torus)
		return bcast_torus(buffer, bytes, root, comm, size);
	return p2p_rc(comm, "MPI_Bcast", bcast(buffer, bytes, root, comm, size));
}

/* Binomial reduction to root: acc holds my contribution, then the result.
 * A rank combines its part with the next ranks' (relative to root): in
 * rank order when root is 0, as an operation that does not commute needs. */
static int reduce(void *acc, int count, MPI_Datatype t, MPI_Op op, int root, MPI_Comm comm, int size)
{
	uint64_t bytes = (uint64_t)count * (uint64_t)mpi_type_size(t);
	int me = mpi_comm_of(comm)->rank, rel = (me - root + size) % size;
	void *tmp = malloc(bytes ? bytes : 1);
	if (!tmp)
		return MPI_ERR_INTERN;
	int rc = 0;
	for (int mask = 1; mask < size && !rc; mask <<= 1) {
		if (rel & mask) {
			rc = mpi_send_raw(acc, bytes, (rel - mask + root) % size, TAG_REDUCE, comm);
			break;
		}
		if (rel + mask < size && !(rc = mpi_recv_raw(tmp, bytes, (rel + mask + root) % size, TAG_REDUCE, comm))) {
			int bad;
			if (mpi_op_commutes(op)) {
				bad = mpi_combine(t, op, tmp, acc, (size_t)count);
			} else {
				bad = mpi_combine(t, op, acc, tmp, (size_t)count); /* acc's ranks come first */
				mpi_copy(acc, tmp, bytes);
			}
			rc = bad ? MPI_ERR_INTERN : 0;
			charge_reduce(bytes);
		}
	}
	free(tmp);
	return rc;
}

int MPI_Reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root,
	       MPI_Comm comm)
{
	MPI_API();
	MPI_COLL_CALL(comm, MPI_CK_REDUCE, op, root, data_bytes(count, datatype));
	if (derived_type(datatype)) {
		struct red_pack p;
		int size = 0;
		RETURN_ON_ERROR(mpi_comm_check(comm, "MPI_Reduce", &size));
		RETURN_ON_ERROR(root_ok("MPI_Reduce", comm, root, size));
		int me = mpi_comm_of(comm)->rank;
		const void *in = me != root && sendbuf == MPI_IN_PLACE ? NULL : sendbuf; /* (in place: the root's only) */
		RETURN_ON_ERROR(red_derived("MPI_Reduce", comm, datatype, op, in, count, recvbuf, count, me == root, &p));
		int rc = MPI_Reduce(p.s, p.r, (int)((uint64_t)count * p.per), p.basic, p.op, root, comm);
		return red_finish(&p, rc, recvbuf, count, datatype);
	}
	int size = 0;
	RETURN_ON_ERROR(common("MPI_Reduce", comm, count, datatype, &size));
	RETURN_ON_ERROR(root_ok("MPI_Reduce", comm, root, size));
	RETURN_ON_ERROR(op_ok("MPI_Reduce", comm, op, datatype));
	int me = mpi_comm_of(comm)->rank;
	uint64_t bytes = (uint64_t)count * (uint64_t)mpi_type_size(datatype);
	if (count && ((!sendbuf) || (me == root && !recvbuf) || (sendbuf == MPI_IN_PLACE && me != root)))
		return mpi_error(comm, MPI_ERR_BUFFER, "MPI_Reduce", "NULL buffer (or MPI_IN_PLACE off the root)");
	enum coll_dtype dt;
	enum coll_op cop;
	int torus = 0;
	if (!bytes)
		return MPI_SUCCESS; /* (every rank's count is 0: nothing to combine) */
	RETURN_ON_ERROR(rooted_choice("MPI_Reduce", comm, "TORUS_COLL_REDUCE", "binomial", bytes, REDUCE_TORUS_FROM, size, &torus));
	if (torus && !mpi_coll_types(datatype, op, &dt, &cop))
		return reduce_torus(sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf, recvbuf, count, mpi_type_size(datatype), dt,
				    cop, root, comm, size);
	/* the rank that accumulates (the root, or rank 0 for an operation
	 * that does not commute, which then sends the result to the root)
	 * does it in recvbuf if it is the root, the others in a copy */
	int at = mpi_op_commutes(op) ? root : 0;
	const void *src = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
	void *acc = me == root && at == root ? recvbuf : malloc(bytes ? bytes : 1);
	if (!acc)
		return mpi_error(comm, MPI_ERR_INTERN, "MPI_Reduce", "out of memory");
	if (acc != src && bytes)
		mpi_copy(acc, src, bytes);
	int rc = reduce(acc, count, datatype, op, at, comm, size);
	if (!rc && at != root && me == at)
		rc = mpi_send_raw(acc, bytes, root, TAG_REDUCE, comm);
	else if (!rc && at != root && me == root)
		rc = mpi_recv_raw(recvbuf, bytes, at, TAG_REDUCE, comm);
	if (acc != recvbuf)
		free(acc);
	return p2p_rc(comm, "MPI_Reduce", rc);
}

/*
 * Recursive doubling for short vectors (Thakur, Rabenseifner and Gropp,
 * "Optimization of collective communication operations in MPICH", 2005):
 * log2 p rounds of one exchange each, every rank ending with the whole
 * result. With p not a power of two, the first 2r ranks (r = p - 2^k)
 * fold in pairs first, the odd one of each pair standing for both, and get
 * the result back at the end. A rank's accumulator always covers a run of
 * consecutive ranks, so an operation that does not commute is applied in
 * rank order: the partner's run comes first when the partner is lower.
 * buf holds this rank's contribution, then the result.
 */
static int allreduce_rd(void *buf, int count, MPI_Datatype t, MPI_Op op, MPI_Comm comm, int size)
{
	uint64_t bytes = (uint64_t)count * (uint64_t)mpi_type_size(t);
	int me = mpi_comm_of(comm)->rank, pof2 = 1, rc = 0;
	while (pof2 * 2 <= size)
		pof2 *= 2;
	int rem = size - pof2, newrank;
	char *tmp = malloc(bytes + 1);
	if (!tmp)
		return MPI_ERR_INTERN;
	/* combine tmp (from rank `from`) into buf, in rank order */
#define RD_COMBINE(from)                                                                                       \
	do {                                                                                                  \
		if ((from) < me || mpi_op_commutes(op)) {                                                    \
			rc = mpi_combine(t, op, tmp, buf, (size_t)count) ? MPI_ERR_INTERN : 0;                \
		} else {                                                                                      \
			rc = mpi_combine(t, op, buf, tmp, (size_t)count) ? MPI_ERR_INTERN : 0;                \
			mpi_copy(buf, tmp, bytes);                                                              \
		}                                                                                             \
		charge_reduce(bytes);                                                                         \
	} while (0)
	if (me < 2 * rem) {
		if (me % 2 == 0) {
			rc = mpi_send_raw(buf, bytes, me + 1, TAG_ALLREDUCE, comm);
			newrank = -1;
		} else {
			if (!(rc = mpi_recv_raw(tmp, bytes, me - 1, TAG_ALLREDUCE, comm)))
				RD_COMBINE(me - 1);
			newrank = me / 2;
		}
	} else {
		newrank = me - rem;
	}
	for (int mask = 1; !rc && newrank >= 0 && mask < pof2; mask <<= 1) {
		int nd = newrank ^ mask, dst = nd < rem ? nd * 2 + 1 : nd + rem;
		if (!(rc = mpi_sendrecv_raw(buf, bytes, dst, tmp, bytes, dst, TAG_ALLREDUCE, comm)))
			RD_COMBINE(dst);
	}
#undef RD_COMBINE
	if (!rc && me < 2 * rem)
		rc = me % 2 ? mpi_send_raw(buf, bytes, me - 1, TAG_ALLREDUCE, comm)
			    : mpi_recv_raw(buf, bytes, me + 1, TAG_ALLREDUCE, comm);
	free(tmp);
	return rc;
}

/* Allreduce runs recursive doubling up to this many bytes by default (the
 * catalogue's multicolor algorithm from there, on fewer colors while the
 * vector is short: BENCHMARKS.md, "Fewer colors for short vectors"). */
#define ALLREDUCE_RD_UPTO 128u

int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
	MPI_API();
	MPI_COLL_CALL(comm, MPI_CK_ALLREDUCE, op, 0, data_bytes(count, datatype));
	if (derived_type(datatype)) {
		struct red_pack p;
		RETURN_ON_ERROR(red_derived("MPI_Allreduce", comm, datatype, op, sendbuf, count, recvbuf, count, 1, &p));
		int rc = MPI_Allreduce(p.s, p.r, (int)((uint64_t)count * p.per), p.basic, p.op, comm);
		return red_finish(&p, rc, recvbuf, count, datatype);
	}
	int size = 0;
	RETURN_ON_ERROR(common("MPI_Allreduce", comm, count, datatype, &size));
	RETURN_ON_ERROR(op_ok("MPI_Allreduce", comm, op, datatype));
	if (count && (!sendbuf || !recvbuf))
		return mpi_error(comm, MPI_ERR_BUFFER, "MPI_Allreduce", "NULL buffer");
	uint64_t bytes = (uint64_t)count * (uint64_t)mpi_type_size(datatype);
	if (sendbuf != MPI_IN_PLACE && bytes)
		mpi_copy(recvbuf, sendbuf, bytes);
	/* TORUS_COLL_ALLREDUCE: recursive_doubling, or a catalogue algorithm
	 * (a name that is neither is an error on any communicator); unset, by
	 * the size */
	const char *want = getenv("TORUS_COLL_ALLREDUCE");
	int rd = want && *want ? !strcmp(want, "recursive_doubling") : bytes <= ALLREDUCE_RD_UPTO;
	if (want && *want && !rd) {
		size_t n = 0, i;
		const struct coll_algorithm *list = coll_catalogue(COLL_ALLREDUCE, &n);
		for (i = 0; i < n && strcmp(list[i].name, want); i++)
			;
		if (i == n)
			return mpi_error(comm, MPI_ERR_ARG, "MPI_Allreduce",
					 "TORUS_COLL_ALLREDUCE=%s: no such algorithm (recursive_doubling or the catalogue's)",
					 want);
	}
	if (size == 1 || !count)
		return MPI_SUCCESS;
	enum coll_dtype dt;
	enum coll_op cop;
	if (rd)
		return p2p_rc(comm, "MPI_Allreduce", allreduce_rd(recvbuf, count, datatype, op, comm, size));
	if (!mpi_coll_types(datatype, op, &dt, &cop))
		return coll_rc(comm, "MPI_Allreduce",
			       multicore(comm, bytes) ? node_coll(comm, MPI_HELP_ALLREDUCE, recvbuf, recvbuf, (size_t)count, dt, cop)
						      : coll_allreduce(mpi_comm_of(comm)->team, recvbuf, recvbuf, (size_t)count, dt, cop,
								       NULL));
	int rc = reduce(recvbuf, count, datatype, op, 0, comm, size);
	if (!rc)
		rc = bcast(recvbuf, bytes, 0, comm, size);
	return p2p_rc(comm, "MPI_Allreduce", rc);
}

static int blocks_ok(const char *fn, MPI_Comm comm, int scount, MPI_Datatype st, int rcount, MPI_Datatype rt, int *size)
{
	RETURN_ON_ERROR(common(fn, comm, scount, st, size));
	RETURN_ON_ERROR(common(fn, comm, rcount, rt, size));
	return MPI_SUCCESS;
}

int MPI_Gather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
	       MPI_Datatype recvtype, int root, MPI_Comm comm)
{
	MPI_API();
	int r_ = rank_in(comm);
	if (r_ >= 0 && r_ != root) {
		recvbuf = NULL; /* (ignored) */
		recvcount = sendcount;
		recvtype = sendtype;
	} else if (r_ == root && sendbuf == MPI_IN_PLACE) {
		sendcount = recvcount;
		sendtype = recvtype;
	}
	MPI_COLL_CALL(comm, MPI_CK_GATHER, 0, root, data_bytes(sendcount, sendtype));
	if (derived_type(sendtype) || derived_type(recvtype))
		return blocks_derived(BK_GATHER, "MPI_Gather", sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
				      root, comm);
	int size = 0;
	RETURN_ON_ERROR(blocks_ok("MPI_Gather", comm, sendcount, sendtype, recvcount, recvtype, &size));
	RETURN_ON_ERROR(root_ok("MPI_Gather", comm, root, size));
	int me = mpi_comm_of(comm)->rank, torus = 0;
	uint64_t sb = (uint64_t)sendcount * (uint64_t)mpi_type_size(sendtype);
	uint64_t rb = (uint64_t)recvcount * (uint64_t)mpi_type_size(recvtype);
	uint64_t block = me == root ? rb : sb; /* (MPI: the same on every rank) */
	RETURN_ON_ERROR(rooted_choice("MPI_Gather", comm, "TORUS_COLL_GATHER", "linear", block,
			    GATHER_TORUS_FROM, size, &torus));
	if (me != root)
		return p2p_rc(comm, "MPI_Gather",
			      torus ? mpi_gather_torus(sendbuf, NULL, sb, root, TAG_GATHER, comm)
				    : mpi_send_raw(sendbuf, sb, root, TAG_GATHER, comm));
	if (rb && !recvbuf)
		return mpi_error(comm, MPI_ERR_BUFFER, "MPI_Gather", "NULL receive buffer at the root");
	if (sendbuf != MPI_IN_PLACE && sb)
		mpi_copy((char *)recvbuf + (uint64_t)root * rb, sendbuf, sb < rb ? sb : rb);
	if (torus)
		return p2p_rc(comm, "MPI_Gather", mpi_gather_torus(NULL, recvbuf, rb, root, TAG_GATHER, comm));
	for (int i = 0; i < size; i++)
		if (i != root)
			RETURN_ON_ERROR(p2p_rc(comm, "MPI_Gather", mpi_recv_raw((char *)recvbuf + (uint64_t)i * rb, rb, i, TAG_GATHER, comm)));
	return MPI_SUCCESS;
}

int MPI_Scatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
		MPI_Datatype recvtype, int root, MPI_Comm comm)
{
	MPI_API();
	int r_ = rank_in(comm);
	if (r_ >= 0 && r_ != root) {
		sendbuf = NULL; /* (ignored) */
		sendcount = recvcount;
		sendtype = recvtype;
	} else if (r_ == root && recvbuf == MPI_IN_PLACE) {
		recvcount = sendcount;
		recvtype = sendtype;
	}
	MPI_COLL_CALL(comm, MPI_CK_SCATTER, 0, root, data_bytes(recvcount, recvtype));
	if (derived_type(sendtype) || derived_type(recvtype))
		return blocks_derived(BK_SCATTER, "MPI_Scatter", sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
				      root, comm);
	int size = 0;
	RETURN_ON_ERROR(blocks_ok("MPI_Scatter", comm, sendcount, sendtype, recvcount, recvtype, &size));
	RETURN_ON_ERROR(root_ok("MPI_Scatter", comm, root, size));
	int me = mpi_comm_of(comm)->rank, torus = 0;
	uint64_t sb = (uint64_t)sendcount * (uint64_t)mpi_type_size(sendtype);
	uint64_t rb = (uint64_t)recvcount * (uint64_t)mpi_type_size(recvtype);
	uint64_t block = me == root ? sb : rb; /* (MPI: the same on every rank) */
	RETURN_ON_ERROR(rooted_choice("MPI_Scatter", comm, "TORUS_COLL_SCATTER", "linear", block,
			    GATHER_TORUS_FROM, size, &torus));
	if (me != root)
		return p2p_rc(comm, "MPI_Scatter",
			      torus ? mpi_scatter_torus(NULL, recvbuf, rb, root, TAG_SCATTER, comm)
				    : mpi_recv_raw(recvbuf, rb, root, TAG_SCATTER, comm));
	if (sb && !sendbuf)
		return mpi_error(comm, MPI_ERR_BUFFER, "MPI_Scatter", "NULL send buffer at the root");
	if (torus)
		RETURN_ON_ERROR(p2p_rc(comm, "MPI_Scatter", mpi_scatter_torus(sendbuf, NULL, sb, root, TAG_SCATTER, comm)));
	for (int i = 0; i < size && !torus; i++)
		if (i != root)
			RETURN_ON_ERROR(p2p_rc(comm, "MPI_Scatter", mpi_send_raw((const char *)sendbuf + (uint64_t)i * sb, sb, i, TAG_SCATTER, comm)));
	if (recvbuf != MPI_IN_PLACE && rb)
		mpi_copy(recvbuf, (const char *)sendbuf + (uint64_t)root * sb, sb < rb ? sb : rb);
	return MPI_SUCCESS;
}

int MPI_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
		  MPI_Datatype recvtype, MPI_Comm comm)
{
	MPI_API();
	if (sendbuf == MPI_IN_PLACE) {
		sendcount = recvcount; /* (ignored) */
		sendtype = recvtype;
	}
	MPI_COLL_CALL(comm, MPI_CK_ALLGATHER, 0, 0, data_bytes(recvcount, recvtype));
	if (derived_type(sendtype) || derived_type(recvtype))
		return blocks_derived(BK_ALLGATHER, "MPI_Allgather", sendbuf, sendcount, sendtype, recvbuf, recvcount,
				      recvtype, 0, comm);
	int size = 0;
	RETURN_ON_ERROR(blocks_ok("MPI_Allgather", comm, sendcount, sendtype, recvcount, recvtype, &size));
	uint64_t rb = (uint64_t)recvcount * (uint64_t)mpi_type_size(recvtype);
	int me = mpi_comm_of(comm)->rank;
	if (rb && !recvbuf)
		return mpi_error(comm, MPI_ERR_BUFFER, "MPI_Allgather", "NULL receive buffer");
	if (size == 1 || !rb) {
		if (sendbuf != MPI_IN_PLACE && rb)
			mpi_copy(recvbuf, sendbuf, rb);
		return MPI_SUCCESS;
	}
	if (rb % 4 == 0) {
		/* the torus algorithm, from a copy of my block (it may sit in recvbuf) */
		void *mine = malloc(rb);
		if (!mine)
			return mpi_error(comm, MPI_ERR_INTERN, "MPI_Allgather", "out of memory");
		mpi_copy(mine, sendbuf == MPI_IN_PLACE ? (char *)recvbuf + (uint64_t)me * rb : sendbuf, rb);
		int rc = multicore(comm, rb * (uint64_t)size)
				 ? node_coll(comm, MPI_HELP_ALLGATHER, mine, recvbuf, (size_t)(rb / 4), COLL_INT32, COLL_SUM)
				 : coll_allgather(mpi_comm_of(comm)->team, mine, recvbuf, (size_t)(rb / 4), COLL_INT32, NULL);
		free(mine);
		return coll_rc(comm, "MPI_Allgather", rc);
	}
	RETURN_ON_ERROR(MPI_Gather(sendbuf == MPI_IN_PLACE ? (me ? (char *)recvbuf + (uint64_t)me * rb : MPI_IN_PLACE) : sendbuf,
			 recvcount, recvtype, recvbuf, recvcount, recvtype, 0, comm));
	return p2p_rc(comm, "MPI_Allgather", bcast(recvbuf, rb * (uint64_t)size, 0, comm, size));
}

int MPI_Alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
		 MPI_Datatype recvtype, MPI_Comm comm)
{
	MPI_API();
	if (sendbuf == MPI_IN_PLACE) {
		sendcount = recvcount; /* (ignored) */
		sendtype = recvtype;
	}
	MPI_COLL_CALL(comm, MPI_CK_ALLTOALL, 0, 0, data_bytes(recvcount, recvtype));
	if (derived_type(sendtype) || derived_type(recvtype))
		return blocks_derived(BK_ALLTOALL, "MPI_Alltoall", sendbuf, sendcount, sendtype, recvbuf, recvcount,
				      recvtype, 0, comm);
	int size = 0;
	RETURN_ON_ERROR(blocks_ok("MPI_Alltoall", comm, sendcount, sendtype, recvcount, recvtype, &size));
	uint64_t rb = (uint64_t)recvcount * (uint64_t)mpi_type_size(recvtype), all = rb * (uint64_t)size;
	int me = mpi_comm_of(comm)->rank;
	if (all && (!recvbuf || !sendbuf))
		return mpi_error(comm, MPI_ERR_BUFFER, "MPI_Alltoall", "NULL buffer");
	const void *src = sendbuf;
	void *copy = NULL;
	if (sendbuf == MPI_IN_PLACE && all) {
		if (!(copy = malloc(all)))
			return mpi_error(comm, MPI_ERR_INTERN, "MPI_Alltoall", "out of memory");
		mpi_copy(copy, recvbuf, all);
		src = copy;
	}
	int rc = 0;
	if (!all) {
	} else if (size == 1) {
		mpi_copy(recvbuf, src, rb);
	} else if (rb % 4 == 0) {
		rc = coll_rc(comm, "MPI_Alltoall", coll_alltoall(mpi_comm_of(comm)->team, src, recvbuf, (size_t)(rb / 4), COLL_INT32, NULL));
	} else {
		/* pairwise: round k with me + k and me - k */
		mpi_copy((char *)recvbuf + (uint64_t)me * rb, (const char *)src + (uint64_t)me * rb, rb);
		for (int k = 1; k < size && !rc; k++) {
			int to = (me + k) % size, from = (me - k + size) % size;
			rc = p2p_rc(comm, "MPI_Alltoall",
				    mpi_sendrecv_raw((const char *)src + (uint64_t)to * rb, rb, to,
						     (char *)recvbuf + (uint64_t)from * rb, rb, from, TAG_ALLTOALL, comm));
		}
	}
	free(copy);
	return rc;
}

int MPI_Alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
		  void *recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm)
{
	MPI_API();
	MPI_COLL_CALL(comm, MPI_CK_ALLTOALLV, 0, 0, 0);
	if (sendbuf == MPI_IN_PLACE) {
		sendcounts = recvcounts; /* (ignored) */
		sdispls = rdispls;
		sendtype = recvtype;
	}
	if (derived_type(sendtype) || derived_type(recvtype))
		return vforms_derived(BK_ALLTOALL, "MPI_Alltoallv", sendbuf, sendcounts, sdispls, 0, sendtype, recvbuf,
				      recvcounts, rdispls, 0, recvtype, 0, comm);
	int size = 0;
	RETURN_ON_ERROR(blocks_ok("MPI_Alltoallv", comm, 0, sendtype, 0, recvtype, &size));
	int inplace = sendbuf == MPI_IN_PLACE;
	if (!recvcounts || !rdispls || (!inplace && (!sendcounts || !sdispls)))
		return mpi_error(comm, MPI_ERR_ARG, "MPI_Alltoallv", "NULL count or displacement array");
	if (inplace) {
		sendcounts = recvcounts;
		sdispls = rdispls;
		sendtype = recvtype;
	}
	int ss = mpi_type_size(sendtype), rs = mpi_type_size(recvtype);
	uint64_t extent = 0;
	for (int j = 0; j < size; j++) {
		if (sendcounts[j] < 0 || recvcounts[j] < 0 || sdispls[j] < 0 || rdispls[j] < 0)
			return mpi_error(comm, MPI_ERR_COUNT, "MPI_Alltoallv", "negative count or displacement for rank %d", j);
		uint64_t e = ((uint64_t)rdispls[j] + (uint64_t)recvcounts[j]) * (uint64_t)rs;
		extent = e > extent ? e : extent;
	}
	const void *src = sendbuf;
	void *copy = NULL;
	if (inplace && extent) {
		if (!(copy = malloc(extent)))
			return mpi_error(comm, MPI_ERR_INTERN, "MPI_Alltoallv", "out of memory");
		mpi_copy(copy, recvbuf, extent);
		src = copy;
	}
	int rc = 0;
	if (ss % 4 == 0 && rs % 4 == 0 && size > 1) {
		/* the catalogue's alltoallv, in 4-byte units */
		int64_t *v = malloc(4 * (size_t)size * sizeof(int64_t));
		if (!v) {
			free(copy);
			return mpi_error(comm, MPI_ERR_INTERN, "MPI_Alltoallv", "out of memory");
		}
		for (int j = 0; j < size; j++) {
			v[j] = (int64_t)sendcounts[j] * (ss / 4);
			v[size + j] = (int64_t)sdispls[j] * (ss / 4);
			v[2 * size + j] = (int64_t)recvcounts[j] * (rs / 4);
			v[3 * size + j] = (int64_t)rdispls[j] * (rs / 4);
		}
		rc = coll_alltoallv(mpi_comm_of(comm)->team, src ? src : recvbuf, v, v + size, recvbuf, v + 2 * size, v + 3 * size,
				    COLL_INT32, NULL);
		free(v);
		rc = coll_rc(comm, "MPI_Alltoallv", rc);
	} else {
		int me = mpi_comm_of(comm)->rank;
		for (int k = 0; k < size && !rc; k++) {
			int to = (me + k) % size, from = (me - k + size) % size;
			const char *s = (const char *)src + (uint64_t)sdispls[to] * (uint64_t)ss;
			char *r = (char *)recvbuf + (uint64_t)rdispls[from] * (uint64_t)rs;
			uint64_t sb = (uint64_t)sendcounts[to] * (uint64_t)ss, rb = (uint64_t)recvcounts[from] * (uint64_t)rs;
			if (!k)
				mpi_copy(r, s, sb < rb ? sb : rb);
			else
				rc = p2p_rc(comm, "MPI_Alltoallv", mpi_sendrecv_raw(s, sb, to, r, rb, from, TAG_ALLTOALL, comm));
		}
	}
	free(copy);
	return rc;
}

/* Alltoallw: every block with its own type, at byte displacements. The
 * blocks are packed one after another and exchanged by Alltoallv, in
 * 4-byte units (the catalogue's algorithm) when every block allows it. */
int MPI_Alltoallw(const void *sendbuf, const int sendcounts[], const int sdispls[], const MPI_Datatype sendtypes[],
		  void *recvbuf, const int recvcounts[], const int rdispls[], const MPI_Datatype recvtypes[],
		  MPI_Comm comm)
{
	MPI_API();
	MPI_COLL_CALL(comm, MPI_CK_ALLTOALLW, 0, 0, 0);
	const char *fn = "MPI_Alltoallw";
	int size = 0;
	RETURN_ON_ERROR(mpi_comm_check(comm, fn, &size));
	int inplace = sendbuf == MPI_IN_PLACE;
	if (!recvcounts || !rdispls || !recvtypes || (!inplace && (!sendcounts || !sdispls || !sendtypes)))
		return mpi_error(comm, MPI_ERR_ARG, fn, "NULL count, displacement or datatype array");
	if (inplace) {
		sendcounts = recvcounts;
		sdispls = rdispls;
		sendtypes = recvtypes;
	}
	/* c: packed bytes and offsets of the send blocks, then the receive blocks */
	int *c = malloc(4 * (size_t)size * sizeof(int));
	if (!c)
		return mpi_error(comm, MPI_ERR_INTERN, fn, "out of memory");
	int *sc = c, *sd = c + size, *rc_ = c + 2 * size, *rd = c + 3 * size, units = 4, rc = 0;
	uint64_t st = 0, rt = 0;
	for (int j = 0; j < size && !rc; j++) {
		struct mpi_type_info si, ri;
		if (mpi_type_info(sendtypes[j], 1, &si) || mpi_type_info(recvtypes[j], 1, &ri))
			rc = mpi_error(comm, MPI_ERR_TYPE, fn, "block %d: unknown or uncommitted datatype", j);
		else if (sendcounts[j] < 0 || recvcounts[j] < 0 || sdispls[j] < 0 || rdispls[j] < 0)
			rc = mpi_error(comm, MPI_ERR_COUNT, fn, "negative count or displacement for rank %d", j);
		else if ((sendcounts[j] && !sendbuf) || (recvcounts[j] && !recvbuf))
			rc = mpi_error(comm, MPI_ERR_BUFFER, fn, "NULL buffer");
		if (rc)
			break;
		uint64_t sb = (uint64_t)sendcounts[j] * si.size, rb = (uint64_t)recvcounts[j] * ri.size;
		sd[j] = (int)st;
		rd[j] = (int)rt;
		st += sb;
		rt += rb;
		if (st > INT32_MAX || rt > INT32_MAX)
			rc = mpi_error(comm, MPI_ERR_COUNT, fn, "more than 2 GiB of packed blocks");
		sc[j] = (int)sb;
		rc_[j] = (int)rb;
		if (sb % 4 || rb % 4)
			units = 1;
	}
	char *s = rc ? NULL : malloc(st + 1), *r = rc ? NULL : malloc(rt + 1);
	if (!rc && (!s || !r))
		rc = mpi_error(comm, MPI_ERR_INTERN, fn, "out of memory");
	if (!rc) {
		for (int j = 0; j < size; j++)
			mpi_pack((const char *)(inplace ? recvbuf : sendbuf) + sdispls[j], sendcounts[j], sendtypes[j],
				 s + sd[j]);
		for (int j = 0; j < 4 * size; j++)
			c[j] /= units;
		rc = MPI_Alltoallv(s, sc, sd, units == 4 ? MPI_INT32_T : MPI_BYTE, r, rc_, rd,
				   units == 4 ? MPI_INT32_T : MPI_BYTE, comm);
	}
	if (!rc)
		for (int j = 0; j < size; j++)
			mpi_unpack(r + (uint64_t)rd[j] * (uint64_t)units, (uint64_t)rc_[j] * (uint64_t)units,
				   (char *)recvbuf + rdispls[j], recvcounts[j], recvtypes[j]);
	free(s);
	free(r);
	free(c);
	return rc;
}

int MPI_Reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount, MPI_Datatype datatype, MPI_Op op,
			     MPI_Comm comm)
{
	MPI_API();
	MPI_COLL_CALL(comm, MPI_CK_REDUCE_SCATTER_BLOCK, op, 0, data_bytes(recvcount, datatype));
	if (derived_type(datatype)) {
		struct red_pack p;
		int size = 0;
		RETURN_ON_ERROR(mpi_comm_check(comm, "MPI_Reduce_scatter_block", &size));
		if ((uint64_t)recvcount * (uint64_t)size > INT32_MAX)
			return mpi_error(comm, MPI_ERR_COUNT, "MPI_Reduce_scatter_block", "too many elements");
		RETURN_ON_ERROR(red_derived("MPI_Reduce_scatter_block", comm, datatype, op, sendbuf, recvcount * size,
				  recvbuf, recvcount, 1, &p));
		int rc = MPI_Reduce_scatter_block(p.s, p.r, (int)((uint64_t)recvcount * p.per), p.basic, p.op, comm);
		return red_finish(&p, rc, recvbuf, recvcount, datatype);
	}
	int size = 0;
	RETURN_ON_ERROR(common("MPI_Reduce_scatter_block", comm, recvcount, datatype, &size));
	RETURN_ON_ERROR(op_ok("MPI_Reduce_scatter_block", comm, op, datatype));
	uint64_t rb = (uint64_t)recvcount * (uint64_t)mpi_type_size(datatype), all = rb * (uint64_t)size;
	int me = mpi_comm_of(comm)->rank;
	if (rb && (!sendbuf || !recvbuf))
		return mpi_error(comm, MPI_ERR_BUFFER, "MPI_Reduce_scatter_block", "NULL buffer");
	const void *src = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
	if (!rb)
		return MPI_SUCCESS;
	enum coll_dtype dt;
	enum coll_op cop;
	if (size > 1 && !mpi_coll_types(datatype, op, &dt, &cop)) {
		void *tmp = malloc(rb);
		if (!tmp)
			return mpi_error(comm, MPI_ERR_INTERN, "MPI_Reduce_scatter_block", "out of memory");
		int rc = multicore(comm, all) ? node_coll(comm, MPI_HELP_REDUCE_SCATTER, src, tmp, (size_t)recvcount, dt, cop)
					      : coll_reduce_scatter(mpi_comm_of(comm)->team, src, tmp, (size_t)recvcount, dt, cop, NULL);
		if (!rc)
			mpi_copy(recvbuf, tmp, rb);
		free(tmp);
		return coll_rc(comm, "MPI_Reduce_scatter_block", rc);
	}
	/* reduce everything to rank 0, then scatter it */
	void *acc = malloc(all);
	if (!acc)
		return mpi_error(comm, MPI_ERR_INTERN, "MPI_Reduce_scatter_block", "out of memory");
	mpi_copy(acc, src, all);
	int rc = reduce(acc, recvcount * size, datatype, op, 0, comm, size);
	if (!rc && me == 0)
		mpi_copy(recvbuf, acc, rb);
	for (int i = 1; i < size && !rc; i++)
		rc = me == 0 ? mpi_send_raw((char *)acc + (uint64_t)i * rb, rb, i, TAG_SCATTER, comm)
		     : i == me ? mpi_recv_raw(recvbuf, rb, 0, TAG_SCATTER, comm)
			       : 0;
	free(acc);
	return p2p_rc(comm, "MPI_Reduce_scatter_block", rc);
}

/* Reduce_scatter's counts: none negative, at most 2^31 - 1 elements in
 * all; *total of them, and *equal if every rank gets as many. */
static int rs_counts(MPI_Comm comm, const int recvcounts[], int size, uint64_t *total, int *equal)
{
	if (!recvcounts)
		return mpi_error(comm, MPI_ERR_ARG, "MPI_Reduce_scatter", "NULL recvcounts");
	*total = 0;
	*equal = 1;
	for (int j = 0; j < size; j++) {
		if (recvcounts[j] < 0)
			return mpi_error(comm, MPI_ERR_COUNT, "MPI_Reduce_scatter", "negative count for rank %d", j);
		*equal &= recvcounts[j] == recvcounts[0];
		*total += (uint64_t)recvcounts[j];
	}
	if (*total > INT32_MAX)
		return mpi_error(comm, MPI_ERR_COUNT, "MPI_Reduce_scatter", "%llu elements: too many for one call",
				 (unsigned long long)*total);
	return MPI_SUCCESS;
}

/* Reduce_scatter with a derived type: on its packed parts, with counts
 * scaled to them. */
static int reduce_scatter_derived(const void *sendbuf, void *recvbuf, const int recvcounts[], MPI_Datatype t,
				  MPI_Op op, MPI_Comm comm)
{
	const char *fn = "MPI_Reduce_scatter";
	int size = 0, equal;
	uint64_t total;
	RETURN_ON_ERROR(mpi_comm_check(comm, fn, &size));
	RETURN_ON_ERROR(rs_counts(comm, recvcounts, size, &total, &equal));
	int me = mpi_comm_of(comm)->rank, *scaled = malloc((size_t)size * sizeof(int));
	if (!scaled)
		return mpi_error(comm, MPI_ERR_INTERN, fn, "out of memory");
	struct red_pack p;
	int rc = red_derived(fn, comm, t, op, sendbuf, (int)total, recvbuf, recvcounts[me], 1, &p);
	if (rc) {
		free(scaled);
		return rc;
	}
	for (int j = 0; j < size; j++) /* (red_derived checked total * per) */
		scaled[j] = (int)((uint64_t)recvcounts[j] * p.per);
	rc = MPI_Reduce_scatter(p.s, p.r, scaled, p.basic, p.op, comm);
	free(scaled);
	return red_finish(&p, rc, recvbuf, recvcounts[me], t);
}

int MPI_Reduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[], MPI_Datatype datatype, MPI_Op op,
		       MPI_Comm comm)
{
	MPI_API();
	MPI_COLL_CALL(comm, MPI_CK_REDUCE_SCATTER, op, 0, 0);
	if (derived_type(datatype))
		return reduce_scatter_derived(sendbuf, recvbuf, recvcounts, datatype, op, comm);
	int size = 0;
	RETURN_ON_ERROR(common("MPI_Reduce_scatter", comm, 0, datatype, &size));
	RETURN_ON_ERROR(op_ok("MPI_Reduce_scatter", comm, op, datatype));
	int me = mpi_comm_of(comm)->rank, equal;
	uint64_t total, es = (uint64_t)mpi_type_size(datatype);
	RETURN_ON_ERROR(rs_counts(comm, recvcounts, size, &total, &equal));
	if (total && !sendbuf)
		return mpi_error(comm, MPI_ERR_BUFFER, "MPI_Reduce_scatter", "NULL send buffer");
	/* equal blocks: the block form (the torus algorithm where it applies) */
	if (equal && sendbuf != MPI_IN_PLACE)
		return MPI_Reduce_scatter_block(sendbuf, recvbuf, recvcounts[0], datatype, op, comm);
	void *acc = malloc(total * es + 1);
	if (!acc)
		return mpi_error(comm, MPI_ERR_INTERN, "MPI_Reduce_scatter", "out of memory");
	mpi_copy(acc, sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf, total * es);
	int rc = reduce(acc, (int)total, datatype, op, 0, comm, size);
	uint64_t at = 0;
	for (int i = 0; i < size && !rc; i++) {
		uint64_t n = (uint64_t)recvcounts[i] * es;
		if (me == 0 && i == 0)
			mpi_copy(recvbuf, acc, n);
		else if (me == 0)
			rc = mpi_send_raw((char *)acc + at, n, i, TAG_SCATTER, comm);
		else if (i == me)
			rc = mpi_recv_raw(recvbuf, n, 0, TAG_SCATTER, comm);
		at += n;
	}
	free(acc);
	return p2p_rc(comm, "MPI_Reduce_scatter", rc);
}

/* ------------------------------------------ the v-forms and the prefix scans */

static int vcounts_ok(const char *fn, MPI_Comm comm, const int counts[], const int displs[], int size)
{
	if (!counts || !displs)
		return mpi_error(comm, MPI_ERR_ARG, fn, "NULL count or displacement array");
	for (int i = 0; i < size; i++)
		if (counts[i] < 0 || displs[i] < 0)
			return mpi_error(comm, MPI_ERR_COUNT, fn, "negative count or displacement for rank %d", i);
	return MPI_SUCCESS;
}

int MPI_Gatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
		const int displs[], MPI_Datatype recvtype, int root, MPI_Comm comm)
{
	MPI_API();
	MPI_COLL_CALL(comm, MPI_CK_GATHERV, 0, root, 0);
	int r_ = rank_in(comm);
	if (r_ >= 0 && r_ != root) {
		recvbuf = NULL; /* (ignored) */
		recvcounts = displs = NULL;
		recvtype = sendtype;
	} else if (r_ == root && sendbuf == MPI_IN_PLACE) {
		sendcount = 0;
		sendtype = recvtype;
	}
	if (derived_type(sendtype) || derived_type(recvtype))
		return vforms_derived(BK_GATHER, "MPI_Gatherv", sendbuf, NULL, NULL, sendcount, sendtype, recvbuf,
				      recvcounts, displs, 0, recvtype, root, comm);
	int size = 0;
	RETURN_ON_ERROR(blocks_ok("MPI_Gatherv", comm, sendcount, sendtype, 0, recvtype, &size));
	RETURN_ON_ERROR(root_ok("MPI_Gatherv", comm, root, size));
	int me = mpi_comm_of(comm)->rank;
	uint64_t sb = (uint64_t)sendcount * (uint64_t)mpi_type_size(sendtype), rs = (uint64_t)mpi_type_size(recvtype);
	if (me != root)
		return p2p_rc(comm, "MPI_Gatherv", mpi_send_raw(sendbuf, sb, root, TAG_GATHER, comm));
	RETURN_ON_ERROR(vcounts_ok("MPI_Gatherv", comm, recvcounts, displs, size));
	char *at = (char *)recvbuf + (uint64_t)displs[root] * rs;
	if (sendbuf != MPI_IN_PLACE && sb)
		mpi_copy(at, sendbuf, sb < (uint64_t)recvcounts[root] * rs ? sb : (uint64_t)recvcounts[root] * rs);
	for (int i = 0; i < size; i++)
		if (i != root)
			RETURN_ON_ERROR(p2p_rc(comm, "MPI_Gatherv",
				     mpi_recv_raw((char *)recvbuf + (uint64_t)displs[i] * rs, (uint64_t)recvcounts[i] * rs, i,
						  TAG_GATHER, comm)));
	return MPI_SUCCESS;
}

int MPI_Scatterv(const void *sendbuf, const int sendcounts[], const int displs[], MPI_Datatype sendtype,
		 void *recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm)
{
	MPI_API();
	MPI_COLL_CALL(comm, MPI_CK_SCATTERV, 0, root, 0);
	int r_ = rank_in(comm);
	if (r_ >= 0 && r_ != root) {
		sendbuf = NULL; /* (ignored) */
		sendcounts = displs = NULL;
		sendtype = recvtype;
	} else if (r_ == root && recvbuf == MPI_IN_PLACE) {
		recvcount = 0;
		recvtype = sendtype;
	}
	if (derived_type(sendtype) || derived_type(recvtype))
		return vforms_derived(BK_SCATTER, "MPI_Scatterv", sendbuf, sendcounts, displs, 0, sendtype, recvbuf, NULL,
				      NULL, recvcount, recvtype, root, comm);
	int size = 0;
	RETURN_ON_ERROR(blocks_ok("MPI_Scatterv", comm, 0, sendtype, recvcount, recvtype, &size));
	RETURN_ON_ERROR(root_ok("MPI_Scatterv", comm, root, size));
	int me = mpi_comm_of(comm)->rank;
	uint64_t rb = (uint64_t)recvcount * (uint64_t)mpi_type_size(recvtype), ss = (uint64_t)mpi_type_size(sendtype);
	if (me != root)
		return p2p_rc(comm, "MPI_Scatterv", mpi_recv_raw(recvbuf, rb, root, TAG_SCATTER, comm));
	RETURN_ON_ERROR(vcounts_ok("MPI_Scatterv", comm, sendcounts, displs, size));
	for (int i = 0; i < size; i++)
		if (i != root)
			RETURN_ON_ERROR(p2p_rc(comm, "MPI_Scatterv",
				     mpi_send_raw((const char *)sendbuf + (uint64_t)displs[i] * ss,
						  (uint64_t)sendcounts[i] * ss, i, TAG_SCATTER, comm)));
	uint64_t mine = (uint64_t)sendcounts[root] * ss;
	if (recvbuf != MPI_IN_PLACE && mine)
		mpi_copy(recvbuf, (const char *)sendbuf + (uint64_t)displs[root] * ss, mine < rb ? mine : rb);
	return MPI_SUCCESS;
}

int MPI_Allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
		   const int displs[], MPI_Datatype recvtype, MPI_Comm comm)
{
	MPI_API();
	MPI_COLL_CALL(comm, MPI_CK_ALLGATHERV, 0, 0, 0);
	if (sendbuf == MPI_IN_PLACE) {
		sendcount = 0; /* (ignored) */
		sendtype = recvtype;
	}
	if (derived_type(sendtype) || derived_type(recvtype))
		return vforms_derived(BK_ALLGATHER, "MPI_Allgatherv", sendbuf, NULL, NULL, sendcount, sendtype, recvbuf,
				      recvcounts, displs, 0, recvtype, 0, comm);
	int size = 0;
	RETURN_ON_ERROR(blocks_ok("MPI_Allgatherv", comm, sendcount, sendtype, 0, recvtype, &size));
	RETURN_ON_ERROR(vcounts_ok("MPI_Allgatherv", comm, recvcounts, displs, size));
	int me = mpi_comm_of(comm)->rank;
	uint64_t rs = (uint64_t)mpi_type_size(recvtype);
	char *mine = (char *)recvbuf + (uint64_t)displs[me] * rs;
	uint64_t mb = (uint64_t)recvcounts[me] * rs;
	if (sendbuf != MPI_IN_PLACE) {
		uint64_t sb = (uint64_t)sendcount * (uint64_t)mpi_type_size(sendtype);
		if (sb)
			mpi_copy(mine, sendbuf, sb < mb ? sb : mb);
	}
	/* my block to me + k, the block of me - k into its place (gaps untouched) */
	for (int k = 1; k < size; k++) {
		int to = (me + k) % size, from = (me - k + size) % size;
		RETURN_ON_ERROR(p2p_rc(comm, "MPI_Allgatherv",
			     mpi_sendrecv_raw(mine, mb, to, (char *)recvbuf + (uint64_t)displs[from] * rs,
					      (uint64_t)recvcounts[from] * rs, from, TAG_GATHER, comm)));
	}
	return MPI_SUCCESS;
}

/* Prefix reductions along the ranks, in rank order. */
static int scan(const char *fn, const void *sendbuf, void *recvbuf, int count, MPI_Datatype t, MPI_Op op,
		MPI_Comm comm, int exclusive)
{
	int size = 0;
	RETURN_ON_ERROR(common(fn, comm, count, t, &size));
	RETURN_ON_ERROR(op_ok(fn, comm, op, t));
	if (count && (!sendbuf || !recvbuf))
		return mpi_error(comm, MPI_ERR_BUFFER, fn, "NULL buffer");
	int me = mpi_comm_of(comm)->rank;
	uint64_t bytes = (uint64_t)count * (uint64_t)mpi_type_size(t);
	const void *x = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
	char *mine = malloc(bytes + 1), *acc = malloc(bytes + 1);
	if (!mine || !acc) {
		free(mine);
		free(acc);
		return mpi_error(comm, MPI_ERR_INTERN, fn, "out of memory");
	}
	mpi_copy(mine, x, bytes);
	int rc = 0;
	/* acc: the reduction over ranks 0 .. me - 1 (rank 0: none) */
	if (me > 0)
		rc = mpi_recv_raw(acc, bytes, me - 1, TAG_SCAN, comm);
	if (!rc && me + 1 < size) {
		/* pass on 0 .. me */
		char *next = malloc(bytes + 1);
		if (!next) {
			rc = MPI_ERR_INTERN;
		} else {
			mpi_copy(next, mine, bytes);
			if (me > 0) {
				rc = mpi_combine(t, op, acc, next, (size_t)count) ? MPI_ERR_INTERN : 0;
				charge_reduce(bytes);
			}
			if (!rc)
				rc = mpi_send_raw(next, bytes, me + 1, TAG_SCAN, comm);
			free(next);
		}
	}
	if (!rc) {
		if (exclusive) {
			if (me > 0)
				mpi_copy(recvbuf, acc, bytes);
		} else {
			if (me > 0) {
				rc = mpi_combine(t, op, acc, mine, (size_t)count) ? MPI_ERR_INTERN : 0;
				charge_reduce(bytes);
			}
			if (!rc)
				mpi_copy(recvbuf, mine, bytes);
		}
	}
	free(mine);
	free(acc);
	return p2p_rc(comm, fn, rc);
}

/* Scan and Exscan with a derived type (rank 0's Exscan result stays undefined). */
static int scan_derived(const char *fn, const void *sendbuf, void *recvbuf, int count, MPI_Datatype t, MPI_Op op,
			MPI_Comm comm, int exclusive)
{
	struct red_pack p;
	RETURN_ON_ERROR(red_derived(fn, comm, t, op, sendbuf, count, recvbuf, count, 1, &p));
	int n = (int)((uint64_t)count * p.per);
	int rc = exclusive ? MPI_Exscan(p.s, p.r, n, p.basic, p.op, comm) : MPI_Scan(p.s, p.r, n, p.basic, p.op, comm);
	if (exclusive && mpi_comm_of(comm)->rank == 0) {
		free(p.r);
		p.r = NULL; /* leave rank 0's buffer alone */
	}
	return red_finish(&p, rc, recvbuf, count, t);
}

int MPI_Scan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
	MPI_API();
	MPI_COLL_CALL(comm, MPI_CK_SCAN, op, 0, data_bytes(count, datatype));
	if (derived_type(datatype))
		return scan_derived("MPI_Scan", sendbuf, recvbuf, count, datatype, op, comm, 0);
	return scan("MPI_Scan", sendbuf, recvbuf, count, datatype, op, comm, 0);
}

int MPI_Exscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
	MPI_API();
	MPI_COLL_CALL(comm, MPI_CK_EXSCAN, op, 0, data_bytes(count, datatype));
	if (derived_type(datatype))
		return scan_derived("MPI_Exscan", sendbuf, recvbuf, count, datatype, op, comm, 1);
	return scan("MPI_Exscan", sendbuf, recvbuf, count, datatype, op, comm, 1);
}
