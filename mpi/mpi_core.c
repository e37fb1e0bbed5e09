/*
 * libtorusmpi: the environment, errors, datatypes, operations and
 * point-to-point messaging of the MPI front end (collectives:
 * mpi_coll.c). Written against the DMA API and coll/ only.
 *
 * A rank is an emulated node; MPI_Init joins the node with main() as its
 * core 0 (emu_node_join), MPI_Finalize leaves it (emu_node_leave, which
 * waits for the whole job, as every node must stay until the network is
 * quiet).
 *
 * Point-to-point, eager: a message of at most MPI_SHORT_BYTES (232) travels
 * in one packet, 8 bytes of tag and communicator before its data (user
 * header 3; the packet says the source and the length), so that a short
 * message costs what a put of its size plus 8 bytes does; a longer one is
 * two memory-FIFO messages from the
 * sender's injection FIFO 0, an envelope (tag, communicator, source,
 * length; user header 1) and, unless empty, the data (user header 2). One
 * FIFO and one route keep a sender's messages in order, so the receiver
 * knows the data that follows an envelope, and MPI's non-overtaking rule
 * holds. The receiver's handler matches an envelope with the first posted
 * receive that fits (source and tag, wildcards included) and lands the
 * data straight in its buffer; otherwise the message waits in the
 * unexpected queue (malloc'd) until a receive takes it, in arrival order.
 * A send is complete when its packets have left (the injection counter);
 * while it waits the rank keeps draining what arrives, so two ranks that
 * send to each other before receiving do not block each other.
 *
 * Rendezvous, as on Blue Gene/P: a message over the eager limit (16 KiB,
 * or TORUS_MPI_EAGER_LIMIT bytes), and every synchronous send, registers
 * its buffer and sends a request to send (user header 4: envelope, region,
 * the sender's name for the send), matched like an envelope. The receive
 * that takes it registers its own buffer, arms a counter with the bytes it
 * takes and gets them with a remote get, which the sender's DMA unit
 * serves without the sender's core (a sender busy elsewhere, in a barrier
 * say, holds nobody up). The receive is complete when its counter is zero;
 * it then tells the sender (user header 5), whose send completes. The data
 * move as DMA traffic, not through the handler, and the receiver waits on
 * one counter. Registrations, counters and gets are the progress engine's
 * work (mpi_progress), never the handler's, which only queues them. A send
 * that finds no free region goes eager instead.
 */
#include "mpi_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct mpi_state mpi_g;

/* A rendezvous send's region, given back (post_send_tagged counts them). */
static void send_region_release(uint32_t region)
{
	dma_mem_deregister(mpi_g.c, region);
	mpi_g.rz_send_regions--;
}

/* ------------------------------------------------------------- datatypes */

static const int type_size[TORUS_MPI_NTYPES_] = {
	[MPI_CHAR] = sizeof(char), [MPI_SIGNED_CHAR] = sizeof(signed char),
	[MPI_UNSIGNED_CHAR] = sizeof(unsigned char), [MPI_BYTE] = 1, [MPI_SHORT] = sizeof(short),
	[MPI_UNSIGNED_SHORT] = sizeof(unsigned short), [MPI_INT] = sizeof(int), [MPI_UNSIGNED] = sizeof(unsigned),
	[MPI_LONG] = sizeof(long), [MPI_UNSIGNED_LONG] = sizeof(unsigned long), [MPI_LONG_LONG] = sizeof(long long),
	[MPI_UNSIGNED_LONG_LONG] = sizeof(unsigned long long), [MPI_FLOAT] = sizeof(float),
	[MPI_DOUBLE] = sizeof(double), [MPI_LONG_DOUBLE] = sizeof(long double), [MPI_INT8_T] = 1, [MPI_INT16_T] = 2,
	[MPI_INT32_T] = 4, [MPI_INT64_T] = 8, [MPI_UINT8_T] = 1, [MPI_UINT16_T] = 2, [MPI_UINT32_T] = 4,
	[MPI_UINT64_T] = 8, [MPI_C_BOOL] = sizeof(_Bool), [MPI_WCHAR] = 4, [MPI_AINT] = sizeof(MPI_Aint),
	[MPI_OFFSET] = sizeof(MPI_Offset), [MPI_PACKED] = 1,
	[MPI_FLOAT_INT] = sizeof(struct { float v; int i; }), [MPI_DOUBLE_INT] = sizeof(struct { double v; int i; }),
	[MPI_LONG_INT] = sizeof(struct { long v; int i; }), [MPI_2INT] = sizeof(struct { int v; int i; }),
	[MPI_SHORT_INT] = sizeof(struct { short v; int i; }),
	[MPI_LONG_DOUBLE_INT] = sizeof(struct { long double v; int i; }),
};

int mpi_type_size(MPI_Datatype t)
{
	return t > 0 && t < TORUS_MPI_NTYPES_ ? type_size[t] : 0;
}

int MPI_Type_size(MPI_Datatype datatype, int *size)
{
	MPI_API();
	struct mpi_type_info ti;
	if (mpi_type_info(datatype, 0, &ti))
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_TYPE, "MPI_Type_size", "unknown datatype %d", datatype);
	if (!size)
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Type_size", "NULL size");
	*size = ti.size > INT32_MAX ? MPI_UNDEFINED : (int)ti.size;
	return MPI_SUCCESS;
}

int MPI_Get_count(const MPI_Status *status, MPI_Datatype datatype, int *count)
{
	MPI_API();
	struct mpi_type_info ti;
	if (!status || !count)
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Get_count", "NULL status or count");
	if (mpi_type_info(datatype, 0, &ti))
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_TYPE, "MPI_Get_count", "unknown datatype %d", datatype);
	uint64_t s = ti.size ? ti.size : 1;
	uint64_t bytes = (uint64_t)(uint32_t)status->count_lo_ | (uint64_t)(uint32_t)status->count_hi_ << 32;
	*count = bytes % s || bytes / s > INT32_MAX ? MPI_UNDEFINED : (int)(bytes / s);
	return MPI_SUCCESS;
}

/* ------------------------------------------------------------ operations */

#define RED_LOOP(T, EXPR)                                                                                    \
	do {                                                                                                  \
		T *o = inout;                                                                                 \
		const T *x = in;                                                                              \
		for (size_t i = 0; i < n; i++)                                                                \
			o[i] = (T)(EXPR);                                                                     \
	} while (0)
#define ARITH(T)                                                                                             \
	switch (op) {                                                                                         \
	case MPI_MAX: RED_LOOP(T, o[i] > x[i] ? o[i] : x[i]); return 0;                                       \
	case MPI_MIN: RED_LOOP(T, o[i] < x[i] ? o[i] : x[i]); return 0;                                       \
	case MPI_SUM: RED_LOOP(T, o[i] + x[i]); return 0;                                                     \
	case MPI_PROD: RED_LOOP(T, o[i] * x[i]); return 0;                                                    \
	default: break;                                                                                       \
	}
#define LOGIC(T)                                                                                             \
	switch (op) {                                                                                         \
	case MPI_LAND: RED_LOOP(T, o[i] && x[i]); return 0;                                                   \
	case MPI_LOR: RED_LOOP(T, o[i] || x[i]); return 0;                                                    \
	case MPI_LXOR: RED_LOOP(T, !o[i] != !x[i]); return 0;                                                 \
	default: break;                                                                                       \
	}
#define BITS(T)                                                                                              \
	switch (op) {                                                                                         \
	case MPI_BAND: RED_LOOP(T, o[i] & x[i]); return 0;                                                    \
	case MPI_BOR: RED_LOOP(T, o[i] | x[i]); return 0;                                                     \
	case MPI_BXOR: RED_LOOP(T, o[i] ^ x[i]); return 0;                                                    \
	default: break;                                                                                       \
	}
#define INTEGER(T)                                                                                           \
	do {                                                                                                  \
		ARITH(T) LOGIC(T) BITS(T) return -1;                                                          \
	} while (0)

/* MAXLOC / MINLOC on (value, index) pairs: the larger (smaller) value,
 * the smaller index among equals */
#define LOC(T)                                                                                               \
	do {                                                                                                  \
		struct pair {                                                                                 \
			T v;                                                                                  \
			int i;                                                                                \
		} *o = inout;                                                                                 \
		const struct pair *x = in;                                                                    \
		if (op != MPI_MAXLOC && op != MPI_MINLOC)                                                     \
			return -1;                                                                            \
		for (size_t k = 0; k < n; k++) {                                                              \
			int better = op == MPI_MAXLOC ? x[k].v > o[k].v : x[k].v < o[k].v;                    \
			if (better || (x[k].v == o[k].v && x[k].i < o[k].i))                                  \
				o[k] = x[k];                                                                  \
		}                                                                                             \
		return 0;                                                                                     \
	} while (0)

int mpi_reduce_local(MPI_Datatype t, MPI_Op op, void *inout, const void *in, size_t n)
{
	switch (t) {
	case MPI_FLOAT_INT: LOC(float);
	case MPI_DOUBLE_INT: LOC(double);
	case MPI_LONG_INT: LOC(long);
	case MPI_2INT: LOC(int);
	case MPI_SHORT_INT: LOC(short);
	case MPI_LONG_DOUBLE_INT: LOC(long double);
	default: break;
	}
	if (op == MPI_MAXLOC || op == MPI_MINLOC)
		return -1; /* pair types only */
	switch (t) {
	case MPI_CHAR: INTEGER(char);
	case MPI_SIGNED_CHAR:
	case MPI_INT8_T: INTEGER(int8_t);
	case MPI_UNSIGNED_CHAR:
	case MPI_UINT8_T: INTEGER(uint8_t);
	case MPI_SHORT:
	case MPI_INT16_T: INTEGER(int16_t);
	case MPI_UNSIGNED_SHORT:
	case MPI_UINT16_T: INTEGER(uint16_t);
	case MPI_INT:
	case MPI_INT32_T: INTEGER(int32_t);
	case MPI_UNSIGNED:
	case MPI_UINT32_T:
	case MPI_WCHAR: INTEGER(uint32_t);
	case MPI_LONG: INTEGER(long);
	case MPI_UNSIGNED_LONG: INTEGER(unsigned long);
	case MPI_LONG_LONG:
	case MPI_INT64_T:
	case MPI_OFFSET:
	case MPI_AINT: INTEGER(int64_t);
	case MPI_UNSIGNED_LONG_LONG:
	case MPI_UINT64_T: INTEGER(uint64_t);
	case MPI_C_BOOL: LOGIC(_Bool) return -1;
	case MPI_BYTE: BITS(uint8_t) return -1;
	case MPI_FLOAT: ARITH(float) return -1;
	case MPI_DOUBLE: ARITH(double) return -1;
	case MPI_LONG_DOUBLE: ARITH(long double) return -1;
	default: return -1;
	}
}

/* ------------------------------------------------------ user operations */

const struct mpi_user_op *mpi_user_op(MPI_Op op)
{
	if (op == MPI_PACKED_OP)
		return mpi_g.packed_op.fn ? &mpi_g.packed_op : NULL;
	if (op < MPI_USER_OP0 || op >= MPI_USER_OP0 + MPI_MAX_USER_OPS)
		return NULL;
	const struct mpi_user_op *u = &mpi_g.ops[op - MPI_USER_OP0];
	return u->fn ? u : NULL;
}

int mpi_op_commutes(MPI_Op op)
{
	const struct mpi_user_op *u = mpi_user_op(op);
	return u ? u->commute : 1;
}

/* A user operation on n packed bytes of u->packed elements: unpacked into
 * buffers of the type's own layout for the function, and the result packed
 * back into right. */
static int combine_packed(const struct mpi_user_op *u, const void *left, void *right, size_t n)
{
	struct mpi_type_info ti;
	MPI_Aint lo, hi;
	if (mpi_type_info(u->packed, 0, &ti))
		return -1;
	if (!ti.size || !n)
		return 0;
	size_t count = n / ti.size;
	if (n % ti.size || count > INT32_MAX || mpi_type_span(u->packed, (int)count, &lo, &hi))
		return -1;
	char *a = calloc(2, (size_t)(hi - lo) + 1);
	if (!a)
		return -1;
	char *la = a - lo, *ra = a + (hi - lo) + 1 - lo; /* element 0 of each */
	mpi_unpack(left, n, la, (int)count, u->packed);
	mpi_unpack(right, n, ra, (int)count, u->packed);
	int len = (int)count;
	MPI_Datatype dt = u->packed;
	u->fn(la, ra, &len, &dt);
	mpi_pack(ra, (int)count, u->packed, right);
	free(a);
	return 0;
}

int mpi_combine(MPI_Datatype t, MPI_Op op, const void *left, void *right, size_t n)
{
	const struct mpi_user_op *u = mpi_user_op(op);
	if (!u)
		return mpi_reduce_local(t, op, right, left, n);
	if (u->packed != MPI_DATATYPE_NULL)
		return t == MPI_BYTE ? combine_packed(u, left, right, n) : -1;
	if (!mpi_type_size(t) || n > INT32_MAX)
		return -1;
	int len = (int)n;
	MPI_Datatype dt = t;
	u->fn((void *)(uintptr_t)left, right, &len, &dt);
	return 0;
}

int MPI_Op_create(MPI_User_function *user_fn, int commute, MPI_Op *op)
{
	MPI_API();
	if (!user_fn || !op)
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Op_create", "NULL function or op");
	for (int i = 0; i < MPI_MAX_USER_OPS; i++)
		if (!mpi_g.ops[i].fn) {
			mpi_g.ops[i] = (struct mpi_user_op){user_fn, commute != 0, MPI_DATATYPE_NULL};
			*op = MPI_USER_OP0 + i;
			return MPI_SUCCESS;
		}
	return mpi_error(MPI_COMM_WORLD, MPI_ERR_OTHER, "MPI_Op_create", "all %d user operations are in use",
			 MPI_MAX_USER_OPS);
}

int MPI_Op_free(MPI_Op *op)
{
	MPI_API();
	if (!op || *op == MPI_PACKED_OP || !mpi_user_op(*op))
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_OP, "MPI_Op_free", "not a user operation");
	mpi_g.ops[*op - MPI_USER_OP0].fn = NULL;
	*op = MPI_OP_NULL;
	return MPI_SUCCESS;
}

int MPI_Op_commutative(MPI_Op op, int *commute)
{
	MPI_API();
	if (!commute)
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Op_commutative", "NULL commute");
	if (!mpi_user_op(op) && (op <= MPI_OP_NULL || op >= TORUS_MPI_NOPS_))
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_OP, "MPI_Op_commutative", "unknown operation %d", op);
	*commute = mpi_op_commutes(op);
	return MPI_SUCCESS;
}

/* The catalogue's dtype and op for (t, op), or -1: the torus algorithms. */
int mpi_coll_types(MPI_Datatype t, MPI_Op op, enum coll_dtype *dt, enum coll_op *cop)
{
	int s = mpi_type_size(t);
	int isint = t != MPI_FLOAT && t != MPI_DOUBLE && t != MPI_LONG_DOUBLE && t != MPI_C_BOOL && t != MPI_BYTE &&
		    t != MPI_PACKED;
	int isunsigned = t == MPI_UNSIGNED || t == MPI_UINT32_T || t == MPI_UNSIGNED_LONG ||
			 t == MPI_UNSIGNED_LONG_LONG || t == MPI_UINT64_T || t == MPI_WCHAR;
	if (t == MPI_FLOAT)
		*dt = COLL_FLOAT;
	else if (t == MPI_DOUBLE)
		*dt = COLL_DOUBLE;
	else if (isint && !isunsigned && s == 4)
		*dt = COLL_INT32;
	else if (isint && !isunsigned && s == 8)
		*dt = COLL_INT64;
	else if (isint && isunsigned && (op == MPI_BAND || op == MPI_BOR) && (s == 4 || s == 8))
		*dt = s == 4 ? COLL_INT32 : COLL_INT64; /* bitwise: signedness does not matter */
	else
		return -1;
	switch (op) {
	case MPI_SUM: *cop = COLL_SUM; break;
	case MPI_PROD: *cop = COLL_PROD; break;
	case MPI_MIN: *cop = COLL_MIN; break;
	case MPI_MAX: *cop = COLL_MAX; break;
	case MPI_BAND: *cop = COLL_BAND; break;
	case MPI_BOR: *cop = COLL_BOR; break;
	default: return -1;
	}
	return coll_op_valid(*dt, *cop) ? 0 : -1;
}

/* ---------------------------------------------------------------- errors */

static const char *const err_text[MPI_ERR_LASTCODE] = {
	[MPI_SUCCESS] = "no error",
	[MPI_ERR_BUFFER] = "invalid buffer pointer",
	[MPI_ERR_COUNT] = "invalid count argument",
	[MPI_ERR_TYPE] = "invalid datatype",
	[MPI_ERR_TAG] = "invalid tag",
	[MPI_ERR_COMM] = "invalid communicator",
	[MPI_ERR_RANK] = "invalid rank",
	[MPI_ERR_REQUEST] = "invalid request",
	[MPI_ERR_ROOT] = "invalid root",
	[MPI_ERR_GROUP] = "invalid group",
	[MPI_ERR_OP] = "invalid reduce operation",
	[MPI_ERR_TOPOLOGY] = "invalid topology",
	[MPI_ERR_DIMS] = "invalid dimension argument",
	[MPI_ERR_ARG] = "invalid argument of some other kind",
	[MPI_ERR_UNKNOWN] = "unknown error",
	[MPI_ERR_TRUNCATE] = "message truncated on receive",
	[MPI_ERR_OTHER] = "known error not in this list",
	[MPI_ERR_INTERN] = "internal MPI (implementation) error",
	[MPI_ERR_IN_STATUS] = "error code is in status",
	[MPI_ERR_PENDING] = "pending request",
	[MPI_ERR_INFO] = "invalid info object",
	[MPI_ERR_INFO_KEY] = "info key too long or empty",
	[MPI_ERR_INFO_VALUE] = "info value too long or empty",
	[MPI_ERR_INFO_NOKEY] = "no such info key",
	[MPI_ERR_NO_MEM] = "out of memory for MPI_Alloc_mem",
	[MPI_ERR_WIN] = "invalid window",
	[MPI_ERR_BASE] = "invalid base for MPI_Free_mem",
	[MPI_ERR_SIZE] = "invalid window size",
	[MPI_ERR_DISP] = "invalid displacement",
	[MPI_ERR_LOCKTYPE] = "invalid lock type",
	[MPI_ERR_ASSERT] = "invalid assertion",
	[MPI_ERR_RMA_CONFLICT] = "conflicting accesses to a window",
	[MPI_ERR_RMA_SYNC] = "one-sided call outside its epoch",
	[MPI_ERR_RMA_RANGE] = "access outside the target's window",
};

int MPI_Error_string(int errorcode, char *string, int *resultlen)
{
	MPI_API();
	if (!string || !resultlen)
		return MPI_ERR_ARG;
	const char *t = errorcode >= 0 && errorcode < MPI_ERR_LASTCODE ? err_text[errorcode] : "unknown error code";
	*resultlen = snprintf(string, MPI_MAX_ERROR_STRING, "%s", t);
	return MPI_SUCCESS;
}

int MPI_Error_class(int errorcode, int *errorclass)
{
	MPI_API();
	if (!errorclass || errorcode < 0 || errorcode >= MPI_ERR_LASTCODE)
		return MPI_ERR_ARG;
	*errorclass = errorcode;
	return MPI_SUCCESS;
}

/* eh's user function, or NULL */
static MPI_Comm_errhandler_function *user_eh(MPI_Errhandler eh)
{
	return eh >= MPI_USER_EH0 && eh < MPI_USER_EH0 + MPI_MAX_USER_EHS ? mpi_g.ehs[eh - MPI_USER_EH0] : NULL;
}

static int eh_known(MPI_Errhandler eh)
{
	return eh == MPI_ERRORS_ARE_FATAL || eh == MPI_ERRORS_RETURN || user_eh(eh);
}

int MPI_Comm_set_errhandler(MPI_Comm comm, MPI_Errhandler errhandler)
{
	MPI_API();
	struct mpi_comm *cm = mpi_comm_of(comm);
	if (!cm)
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_COMM, "MPI_Comm_set_errhandler", "invalid communicator %d", comm);
	if (!eh_known(errhandler))
		return mpi_error(comm, MPI_ERR_ARG, "MPI_Comm_set_errhandler", "unknown error handler %d", errhandler);
	cm->eh = errhandler;
	return MPI_SUCCESS;
}

/* User error handlers (MPI_Comm_create_errhandler): handles from
 * MPI_USER_EH0 on; mpi_error calls one with the communicator and the
 * code, and returns the code when it returns. */
int MPI_Comm_create_errhandler(MPI_Comm_errhandler_function *fn, MPI_Errhandler *errhandler)
{
	MPI_API();
	if (!fn || !errhandler)
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Comm_create_errhandler", "NULL function or handler");
	for (int i = 0; i < MPI_MAX_USER_EHS; i++)
		if (!mpi_g.ehs[i]) {
			mpi_g.ehs[i] = fn;
			*errhandler = MPI_USER_EH0 + i;
			return MPI_SUCCESS;
		}
	return mpi_error(MPI_COMM_WORLD, MPI_ERR_OTHER, "MPI_Comm_create_errhandler", "all %d user error handlers are in use",
			 MPI_MAX_USER_EHS);
}

int MPI_Errhandler_create(MPI_Handler_function *fn, MPI_Errhandler *errhandler)
{
	MPI_API();
	return MPI_Comm_create_errhandler(fn, errhandler);
}

/* A user handler stays usable by the communicators that have it (MPI
 * frees it once none does): freeing only gives the handle back. */
int MPI_Errhandler_free(MPI_Errhandler *errhandler)
{
	MPI_API();
	if (!errhandler || !eh_known(*errhandler))
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Errhandler_free", "not an error handler");
	*errhandler = MPI_ERRHANDLER_NULL;
	return MPI_SUCCESS;
}

int MPI_Errhandler_set(MPI_Comm comm, MPI_Errhandler errhandler)
{
	MPI_API();
	return MPI_Comm_set_errhandler(comm, errhandler);
}

int MPI_Errhandler_get(MPI_Comm comm, MPI_Errhandler *errhandler)
{
	MPI_API();
	return MPI_Comm_get_errhandler(comm, errhandler);
}

int MPI_Comm_get_errhandler(MPI_Comm comm, MPI_Errhandler *errhandler)
{
	MPI_API();
	struct mpi_comm *cm = mpi_comm_of(comm);
	if (!cm)
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_COMM, "MPI_Comm_get_errhandler", "invalid communicator %d", comm);
	if (!errhandler)
		return mpi_error(comm, MPI_ERR_ARG, "MPI_Comm_get_errhandler", "NULL handler");
	*errhandler = cm->eh;
	return MPI_SUCCESS;
}

int mpi_error(MPI_Comm comm, int code, const char *fn, const char *fmt, ...)
{
	struct mpi_comm *cm = mpi_g.state == 1 ? mpi_comm_of(comm) : NULL;
	if (mpi_g.state == 1 && !cm) /* a bad communicator: the world's handler */
		cm = mpi_comm_of(MPI_COMM_WORLD);
	MPI_Errhandler eh = cm ? cm->eh : MPI_ERRORS_ARE_FATAL;
	char msg[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (eh == MPI_ERRORS_RETURN)
		return code;
	MPI_Comm_errhandler_function *u = user_eh(eh);
	if (u) {
		MPI_Comm h = cm ? (MPI_Comm)(cm - mpi_g.comms) : comm;
		int c = code;
		u(&h, &c, fn, msg);
		return code;
	}
	fprintf(stderr, "MPI error on rank %d: %s: %s (%s)\n", mpi_g.rank, fn, msg, err_text[code]);
	fflush(stderr);
	MPI_Abort(comm, code);
	return code; /* not reached */
}

/* ------------------------------------------------------------- environment */

static int on_packet(emu_core_t *c, const struct dma_recv_info *info, const void *payload, void *arg);
static int helper_main(emu_core_t *c, void *arg);
static int send_done(void);
static void request_free(struct torus_mpi_request *r);

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
	MPI_API();
	if (mpi_g.state)
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_OTHER, "MPI_Init", "MPI_Init called twice");
	int status;
	int rc = emu_node_join(argc ? *argc : 0, argv ? *argv : NULL, helper_main, NULL, &mpi_g.c, &status);
	if (rc)
		exit(status); /* not under torusrun (the message is printed) */
	emu_core_t *c = mpi_g.c;
	mpi_g.rank = (int)emu_node_rank(c);
	mpi_g.size = (int)emu_node_count(c);
	const char *w = getenv("TORUS_MPI_WTIME");
	mpi_g.wall = w && !strcmp(w, "wall");
	mpi_g.ncores = emu_cores_of(c, (uint32_t)mpi_g.rank);
	static const struct {
		const char *name;
		uint64_t *to, dflt;
	} knobs[] = {{"TORUS_MPI_EAGER_LIMIT", &mpi_g.eager_limit, MPI_EAGER_LIMIT},
		     {"TORUS_MPI_MULTICORE_BYTES", &mpi_g.multicore_bytes, MPI_MULTICORE_BYTES}};
	for (size_t k = 0; k < sizeof(knobs) / sizeof(knobs[0]); k++) {
		const char *el = getenv(knobs[k].name);
		*knobs[k].to = knobs[k].dflt;
		if (!el)
			continue;
		char *end = NULL;
		errno = 0;
		unsigned long long v = strtoull(el, &end, 10);
		if (errno || !*el || *end || *el == '-') {
			fprintf(stderr, "MPI_Init: %s=%s is not a number of bytes\n", knobs[k].name, el);
			mpi_help(MPI_HELP_QUIT, NULL);
			exit(emu_node_leave(c, 2));
		}
		*knobs[k].to = v;
	}
	mpi_g.nsrc = (uint32_t)mpi_g.size;
	mpi_g.cur = calloc(mpi_g.nsrc, sizeof(*mpi_g.cur));
	/* MPI_COMM_WORLD: core 0 of every node (context 0); MPI_COMM_SELF:
	 * this one (context 1); MPI_GROUP_EMPTY */
	uint32_t *world = malloc((size_t)mpi_g.size * sizeof(uint32_t)), self = (uint32_t)mpi_g.rank;
	for (int n = 0; world && n < mpi_g.size; n++)
		world[n] = (uint32_t)n;
	mpi_g.groups[1].used = 1;
	if (!mpi_g.cur || !world || dma_handler_register(c, TORUS_MPI_DISPATCH, on_packet, NULL) ||
	    dma_injfifo_open(c, 0, &mpi_g.fifo) || dma_counter_alloc(c, &mpi_g.inj) ||
	    mpi_comm_new(world, mpi_g.size, mpi_g.rank, 0, MPI_ERRORS_ARE_FATAL) != MPI_COMM_WORLD ||
	    mpi_comm_new(&self, 1, 0, 1, MPI_ERRORS_ARE_FATAL) != MPI_COMM_SELF) {
		fprintf(stderr, "MPI_Init: rank %d could not set up\n", mpi_g.rank);
		mpi_help(MPI_HELP_QUIT, NULL);
		exit(emu_node_leave(c, 1));
	}
	free(world);
	mpi_g.next_ctx = 2;
	/* every rank's handler is in place before anyone sends */
	struct mpi_comm *wc = mpi_comm_of(MPI_COMM_WORLD);
	if (dma_barrier_team(c, wc->members, (size_t)mpi_g.size)) {
		fprintf(stderr, "MPI_Init: rank %d: the barrier failed\n", mpi_g.rank);
		mpi_help(MPI_HELP_QUIT, NULL);
		exit(emu_node_leave(c, 1));
	}
	mpi_g.state = 1;
	char why[200];
	if (mpi_compute_init(why, sizeof(why))) {
		fprintf(stderr, "MPI_Init: %s\n", why);
		mpi_help(MPI_HELP_QUIT, NULL);
		exit(emu_node_leave(c, 2));
	}
	if (provided)
		*provided = required < MPI_THREAD_FUNNELED ? required : MPI_THREAD_FUNNELED;
	return MPI_SUCCESS;
}

int MPI_Init(int *argc, char ***argv) { return MPI_Init_thread(argc, argv, MPI_THREAD_SINGLE, NULL); }

int MPI_Query_thread(int *provided)
{
	MPI_API();
	if (!provided)
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Query_thread", "NULL provided");
	*provided = MPI_THREAD_FUNNELED;
	return MPI_SUCCESS;
}

int MPI_Initialized(int *flag)
{
	MPI_API();
	if (!flag)
		return MPI_ERR_ARG;
	*flag = mpi_g.state != 0;
	return MPI_SUCCESS;
}

int MPI_Finalized(int *flag)
{
	MPI_API();
	if (!flag)
		return MPI_ERR_ARG;
	*flag = mpi_g.state == 2;
	return MPI_SUCCESS;
}

int MPI_Finalize(void)
{
	MPI_API();
	if (mpi_g.state != 1)
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_OTHER, "MPI_Finalize", "MPI is not initialized");
	emu_core_t *c = mpi_g.c;
	/* this rank's own messages (the last rendezvous answers) leave first */
	int rc = 0, done = 0;
	while (rc >= 0 && !done) {
		if ((rc = send_done()) >= 0)
			done = rc > 0 && !mpi_g.ctl_q;
		if (rc >= 0 && !done)
			rc = mpi_progress(1);
	}
	/* every message of a collective call was taken by a receive of the
	 * same call (mpi_coll_sig), or the ranks' calls did not match: a
	 * broadcast where another rank reduced, say, leaves both sides' messages
	 * untaken, which no call saw */
	int64_t left = (int64_t)(mpi_g.coll_sent - mpi_g.coll_taken), all = 0;
	struct mpi_comm *wc = mpi_comm_of(MPI_COMM_WORLD);
	MPI_Errhandler eh = wc->eh;
	wc->eh = MPI_ERRORS_RETURN;
	int mis = rc < 0 ? MPI_SUCCESS : MPI_Allreduce(&left, &all, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
	wc->eh = eh;
	if (mis || all) {
		int e = all ? mpi_error(MPI_COMM_WORLD, MPI_ERR_OTHER, "MPI_Finalize",
					"mismatched collective calls: %lld message(s) of collective calls were never received "
					"(another collective, root or order on some rank)",
					(long long)all)
			    : mpi_error(MPI_COMM_WORLD, mis, "MPI_Finalize", "the check of the collective calls failed");
		if (e)
			return e;
	}
	/* what others still send us must find us here: every rank stops together */
	rc = dma_barrier_team(c, mpi_comm_of(MPI_COMM_WORLD)->members, (size_t)mpi_g.size) || rc < 0;
	for (int k = 1; k < MPI_MAX_COMMS; k++)
		if (mpi_g.comms[k].used)
			mpi_comm_release(&mpi_g.comms[k]);
	for (int k = 1; k < MPI_MAX_GROUPS; k++)
		if (mpi_g.groups[k].used) {
			free(mpi_g.groups[k].world);
			mpi_g.groups[k].used = 0;
		}
	dma_counter_free(c, mpi_g.inj);
	while (mpi_g.unexp_head) {
		struct mpi_msg *m = mpi_g.unexp_head;
		mpi_g.unexp_head = m->next;
		free(m->data);
		free(m);
	}
	free(mpi_g.cur);
	mpi_g.state = 2;
	if (mpi_help(MPI_HELP_QUIT, NULL))
		rc = 1;
	int status = emu_node_leave(c, rc ? 1 : 0);
	if (status)
		exit(status); /* the job failed elsewhere: this rank's exit says so */
	return MPI_SUCCESS;
}

int MPI_Abort(MPI_Comm comm, int errorcode)
{
	MPI_API();
	(void)comm;
	if (mpi_g.state != 1)
		exit(errorcode ? errorcode : 1);
	fprintf(stderr, "MPI_Abort: rank %d aborts the job with code %d\n", mpi_g.rank, errorcode);
	fflush(stderr);
	mpi_g.state = 2;
	/* a failed core: torusrun sees the node's status and stops the job */
	exit(emu_node_leave(mpi_g.c, errorcode ? errorcode : 1));
}

int MPI_Get_processor_name(char *name, int *resultlen)
{
	MPI_API();
	if (!name || !resultlen)
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Get_processor_name", "NULL argument");
	char coords[48] = "";
	if (mpi_g.state == 1) {
		const struct torus_shape *s = emu_shape(mpi_g.c);
		uint32_t x[TORUS_MAX_DIMS];
		size_t u = 0;
		torus_rank_to_coords(s, (uint32_t)mpi_g.rank, x);
		for (uint32_t d = 0; d < s->ndims && u < sizeof(coords); d++)
			u += (size_t)snprintf(coords + u, sizeof(coords) - u, d ? ",%u" : "%u", x[d]);
	}
	*resultlen = snprintf(name, MPI_MAX_PROCESSOR_NAME, "torus-node-%d(%s)", mpi_g.rank, coords);
	if (*resultlen >= MPI_MAX_PROCESSOR_NAME)
		*resultlen = MPI_MAX_PROCESSOR_NAME - 1;
	return MPI_SUCCESS;
}

int MPI_Get_version(int *version, int *subversion)
{
	MPI_API();
	if (!version || !subversion)
		return MPI_ERR_ARG;
	*version = MPI_VERSION;
	*subversion = MPI_SUBVERSION;
	return MPI_SUCCESS;
}

double MPI_Wtime(void)
{
	MPI_API();
	if (mpi_g.wall || mpi_g.state != 1) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
	}
	/* reading the clock costs the core a poll's time, as looking at a
	 * FIFO does: a program that waits by spinning on MPI_Wtime sees time
	 * pass, and its loop ends */
	emu_core_compute(mpi_g.c, emu_params(mpi_g.c)->poll_cost_ps);
	return (double)emu_core_now(mpi_g.c) * 1e-12;
}

double MPI_Wtick(void) { return mpi_g.wall ? 1e-9 : 1e-12; }

int MPI_Comm_rank(MPI_Comm comm, int *rank)
{
	MPI_API();
	int size = 0;
	int rc = mpi_comm_check(comm, "MPI_Comm_rank", &size);
	if (rc)
		return rc;
	if (!rank)
		return mpi_error(comm, MPI_ERR_ARG, "MPI_Comm_rank", "NULL rank");
	*rank = mpi_comm_of(comm)->rank;
	return MPI_SUCCESS;
}

int MPI_Comm_size(MPI_Comm comm, int *size)
{
	MPI_API();
	int n = 0;
	int rc = mpi_comm_check(comm, "MPI_Comm_size", &n);
	if (rc)
		return rc;
	if (!size)
		return mpi_error(comm, MPI_ERR_ARG, "MPI_Comm_size", "NULL size");
	*size = n;
	return MPI_SUCCESS;
}

int mpi_comm_check(MPI_Comm comm, const char *fn, int *size)
{
	if (mpi_g.state != 1)
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_OTHER, fn, "MPI is not initialized (or is finalized)");
	struct mpi_comm *cm = mpi_comm_of(comm);
	if (!cm)
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_COMM, fn, "invalid communicator %d", comm);
	*size = cm->size;
	return MPI_SUCCESS;
}

MPI_Comm mpi_comm_new(const uint32_t *world, int n, int rank, uint32_t ctx, MPI_Errhandler eh)
{
	int h = 1;
	while (h < MPI_MAX_COMMS && mpi_g.comms[h].used)
		h++;
	if (h == MPI_MAX_COMMS)
		return MPI_COMM_NULL;
	struct mpi_comm *cm = &mpi_g.comms[h];
	memset(cm, 0, sizeof(*cm));
	cm->world = calloc((size_t)n + 1, sizeof(uint32_t));
	cm->members = calloc((size_t)n + 1, sizeof(uint32_t));
	if (!cm->world || !cm->members) {
		free(cm->world);
		free(cm->members);
		return MPI_COMM_NULL;
	}
	for (int i = 0; i < n; i++) {
		cm->world[i] = world[i];
		uint32_t g = 0;
		for (uint32_t x = 0; x < world[i]; x++)
			g += emu_cores_of(mpi_g.c, x);
		cm->members[i] = g; /* core 0 of node world[i] */
	}
	cm->ctx = ctx;
	cm->size = n;
	cm->rank = rank;
	cm->eh = eh;
	if (coll_team_create(mpi_g.c, cm->members, (size_t)n, &cm->team)) {
		free(cm->world);
		free(cm->members);
		return MPI_COMM_NULL;
	}
	/* the node team, if every member node has cores to spare: the same
	 * on every member, whose helpers make their own handles */
	uint32_t cores = UINT32_MAX;
	for (int i = 0; i < n; i++) {
		uint32_t k = emu_cores_of(mpi_g.c, world[i]);
		cores = k < cores ? k : cores;
	}
	cm->used = 1;
	if (n > 1 && cores > 1) {
		struct mpi_help job = {.h = h, .nodes = cm->world, .n = (size_t)n, .cores = cores};
		if (mpi_help(MPI_HELP_TEAM, &job) || coll_team_create_nodes(mpi_g.c, cm->world, (size_t)n, cores, &cm->nteam)) {
			mpi_comm_release(cm);
			return MPI_COMM_NULL;
		}
		cm->ncores = cores;
	}
	return h;
}

void mpi_comm_release(struct mpi_comm *cm)
{
	if (cm->nteam || cm->ncores) {
		struct mpi_help job = {.h = (MPI_Comm)(cm - mpi_g.comms)};
		mpi_help(MPI_HELP_FREE, &job);
		coll_team_free(cm->nteam);
	}
	coll_team_free(cm->team);
	free(cm->world);
	free(cm->members);
	free(cm->tdims);
	memset(cm, 0, sizeof(*cm));
}

/* ------------------------------------------------------------- helpers
 *
 * The node's other cores (MPI_THREAD_FUNNELED: they never call MPI) work
 * for core 0 in the collectives that share a node team's work among its
 * cores (the multicolor algorithms: a color per core). They wait in the
 * node's lockbox barrier for a command; core 0 joins it with one when a
 * collective is large enough to gain (mpi_g.multicore_bytes) and at the
 * node team's creation and end. The barrier costs barrier_latency of
 * emulated time, on every core of the node. */

int mpi_help(enum mpi_help_cmd cmd, const struct mpi_help *job)
{
	if (mpi_g.ncores < 2)
		return 0;
	struct mpi_help none = {0};
	mpi_g.help[mpi_g.help_seq++ % 2] = job ? *job : none;
	uint32_t out = 0;
	return dma_barrier_node(mpi_g.c, mpi_g.ncores, (uint32_t)cmd, &out);
}

static int helper_main(emu_core_t *c, void *arg)
{
	(void)arg;
	coll_team_t **teams = calloc(MPI_MAX_COMMS, sizeof(*teams));
	uint32_t me = emu_core_index(c), n = emu_cores_of(c, emu_node_rank(c));
	int rc = teams ? 0 : -ENOMEM;
	uint64_t seq = 0;
	while (!rc) {
		uint32_t cmd = MPI_HELP_NONE;
		if ((rc = dma_barrier_node(c, n, 0, &cmd)))
			break;
		const struct mpi_help *j = &mpi_g.help[seq++ % 2]; /* written before the barrier */
		if (cmd == MPI_HELP_QUIT)
			break;
		if (j->h <= 0 || j->h >= MPI_MAX_COMMS) {
			rc = -EPROTO;
			break;
		}
		coll_team_t **t = &teams[j->h];
		switch (cmd) {
		case MPI_HELP_TEAM:
			if (me < j->cores)
				rc = coll_team_create_nodes(c, j->nodes, j->n, j->cores, t);
			break;
		case MPI_HELP_FREE:
			coll_team_free(*t);
			*t = NULL;
			break;
		case MPI_HELP_ALLREDUCE:
			if (*t)
				rc = coll_allreduce(*t, j->send, j->recv, j->count, j->dt, j->op, NULL);
			break;
		case MPI_HELP_ALLGATHER:
			if (*t)
				rc = coll_allgather(*t, j->send, j->recv, j->count, j->dt, NULL);
			break;
		case MPI_HELP_REDUCE_SCATTER:
			if (*t)
				rc = coll_reduce_scatter(*t, j->send, j->recv, j->count, j->dt, j->op, NULL);
			break;
		default: rc = -EPROTO; break;
		}
	}
	if (rc)
		fprintf(stderr, "MPI: rank %u: helper core %u failed: %s\n", emu_node_rank(c), me, dma_strerror(rc));
	for (int h = 0; teams && h < MPI_MAX_COMMS; h++)
		coll_team_free(teams[h]);
	free(teams);
	return rc ? 1 : 0;
}

/* ------------------------------------------------------- point-to-point */

/* The node of a rank of comm. */
static uint32_t node_of(MPI_Comm comm, int rank) { return mpi_comm_of(comm)->world[rank]; }
static uint32_t ctx_of(MPI_Comm comm)
{
	struct mpi_comm *cm = mpi_comm_of(comm);
	return cm ? cm->ctx : UINT32_MAX; /* freed: matches nothing */
}

/*
 * A short message's header has 32 bits for its tag: a collective's (-1 to
 * -255) goes with its signature, as -(sig << 8 | -tag).
 */
static int32_t wire_tag(const struct mpi_env *e)
{
	if (e->tag >= 0 || e->tag < -255)
		return e->tag;
	return -(int32_t)((e->sig & ((1u << MPI_SIG_BITS) - 1)) << 8 | (uint32_t)-e->tag);
}

static void wire_untag(struct mpi_env *e)
{
	if (e->tag >= 0 || e->tag == MPI_ANY_TAG)
		return;
	uint32_t w = (uint32_t)-(int64_t)e->tag;
	e->tag = -(int32_t)(w & 0xffu);
	e->sig = w >> 8;
}

/* (MPI_ANY_TAG takes user tags only: the collectives' own are negative) */
static int matches(const struct mpi_env *e, MPI_Comm comm, int src, int tag)
{
	return e->comm == ctx_of(comm) && (src == MPI_ANY_SOURCE || src == e->src) &&
	       (tag == MPI_ANY_TAG ? e->tag >= 0 : tag == e->tag);
}

static void complete(struct torus_mpi_request *r, const struct mpi_env *e, uint64_t got)
{
	r->st.MPI_SOURCE = e->src;
	r->st.MPI_TAG = e->tag;
	r->st.count_lo_ = (int)(uint32_t)got;
	r->st.count_hi_ = (int)(uint32_t)(got >> 32);
	r->st.MPI_ERROR = e->len > r->cap ? MPI_ERR_TRUNCATE : MPI_SUCCESS;
	r->st.cancelled_ = 0;
	r->msg_len = e->len;
	mpi_g.coll_taken += e->sig != 0;
	if (e->tag < 0 && r->sig && e->sig && e->sig != r->sig) {
		/* a message of another collective call than this rank's */
		r->st.MPI_ERROR = MPI_ERR_OTHER;
		mpi_g.bad_sig = e->sig;
		mpi_g.bad_mine = r->sig;
		mpi_g.bad_src = e->src;
	}
	r->done = 1;
}

/*
 * The collectives' own short messages (a negative tag, at most
 * MPI_SHORT_BYTES and the eager limit) are sent in any order (DMA_F_ANY_ORDER): the receiver
 * handles them as they come, and its clock meets their arrival only when
 * it waits for the receive that took one (dma_recv_expect), so waiting for
 * them asks the timekeeper nothing. That is exact because which receive a
 * message matches does not depend on when it came: the collectives name
 * their source (never MPI_ANY_SOURCE), and one sender's messages keep
 * their order. A receive of such a size takes only such messages, and the
 * others only the others (a later call's short message never overtakes an
 * earlier call's long one): both sides of a collective agree on the size.
 */
static int any_order(int tag, uint64_t bytes)
{
	/* (a program's tags are not negative; the collectives send SEND_AUTO,
	 * so such a message goes eager, in one packet) */
	return tag < 0 && tag != MPI_ANY_TAG && bytes <= MPI_SHORT_BYTES && bytes <= mpi_g.eager_limit;
}

/* The first posted receive that fits envelope e (any: a message sent in
 * any order), taken off the queue; or NULL. */
static struct torus_mpi_request *take_posted(const struct mpi_env *e, int any)
{
	struct torus_mpi_request **pp = &mpi_g.posted;
	while (*pp && ((*pp)->any != any || !matches(e, (*pp)->comm, (*pp)->src, (*pp)->tag)))
		pp = &(*pp)->next;
	struct torus_mpi_request *r = *pp;
	if (r) {
		*pp = r->next;
		r->next = NULL;
	}
	return r;
}

/* The rendezvous lists (mpi_state): append at the tail; take r out (1 if it was there). */
static void rz_append(struct torus_mpi_request **list, struct torus_mpi_request *r)
{
	r->rznext = NULL;
	while (*list)
		list = &(*list)->rznext;
	*list = r;
}

static int rz_remove(struct torus_mpi_request **list, struct torus_mpi_request *r)
{
	for (; *list; list = &(*list)->rznext)
		if (*list == r) {
			*list = r->rznext;
			r->rznext = NULL;
			return 1;
		}
	return 0;
}

/* Receive r took a request to send (from node): the progress engine gets
 * the data (rz_service). */
static void rzv_take(struct torus_mpi_request *r, const struct mpi_rts *h, uint32_t node)
{
	r->env = h->env;
	r->rzv = 1;
	r->node = node;
	r->sreq = h->sreq;
	r->sregion = h->region;
	r->trace = h->trace;
	rz_append(&mpi_g.rz_setup, r);
}

/* A message that no posted receive took, queued in arrival order. */
static void unexp_append(struct mpi_msg *m)
{
	if (mpi_g.unexp_tail)
		mpi_g.unexp_tail->next = m;
	else
		mpi_g.unexp_head = m;
	mpi_g.unexp_tail = m;
}

/* A whole message at once (any_key: its name if sent in any order, else
 * 0): to the first posted receive that fits, or queued. */
static int deliver_short(const struct mpi_env *e, const char *data, uint64_t any_key)
{
	struct torus_mpi_request *r = take_posted(e, any_key != 0);
	if (r) {
		uint64_t n = e->len < r->cap ? e->len : r->cap;
		if (n)
			memcpy(r->buf, data, n);
		complete(r, e, n);
		r->any_key = any_key;
		return 0;
	}
	struct mpi_msg *m = calloc(1, sizeof(*m));
	if (!m || (e->len && !(m->data = malloc(e->len)))) {
		free(m);
		return -ENOMEM;
	}
	m->env = *e;
	if (e->len)
		memcpy(m->data, data, e->len);
	m->got = e->len;
	m->complete = 1;
	m->any_key = any_key;
	unexp_append(m);
	return 0;
}

/* The handler: envelopes and data, in order per source. */
static int on_packet(emu_core_t *c, const struct dma_recv_info *info, const void *payload, void *arg)
{
	(void)c;
	(void)arg;
	uint32_t from = info->src_node;
	if (from >= mpi_g.nsrc)
		return -EPROTO;
	struct mpi_cur *cur = &mpi_g.cur[from];
	if (info->user == 4) {
		/* a request to send: matched now, the data come later */
		struct mpi_rts h;
		if (info->len != sizeof(h) || !info->last || info->offset)
			return -EPROTO;
		memcpy(&h, payload, sizeof(h));
		struct torus_mpi_request *r = take_posted(&h.env, 0);
		if (r) {
			rzv_take(r, &h, from);
			return 0;
		}
		struct mpi_msg *m = calloc(1, sizeof(*m));
		if (!m)
			return -ENOMEM;
		*m = (struct mpi_msg){.env = h.env, .complete = 1, .rzv = 1, .node = from, .region = h.region,
				      .trace = h.trace, .sreq = h.sreq};
		unexp_append(m);
		return 0;
	}
	if (info->user == 5) {
		/* the receiver has a rendezvous send's data: the send is done */
		struct mpi_fin h;
		if (info->len != sizeof(h) || !info->last || info->offset)
			return -EPROTO;
		memcpy(&h, payload, sizeof(h));
		struct torus_mpi_request *r = mpi_g.rz_wait;
		while (r && (uint64_t)(uintptr_t)r != h.sreq)
			r = r->rznext;
		if (!r || r->node != from)
			return -EPROTO;
		rz_remove(&mpi_g.rz_wait, r);
		if (r->region != DMA_NO_COUNTER)
			send_region_release(r->region);
		r->fin = 1;
		if (r->freed)
			request_free(r); /* MPI_Request_free'd while it went on */
		return 0;
	}
	if (info->user == 3) {
		/* a short message: tag and communicator, then the data, in one
		 * packet; the source and length come with the packet */
		struct mpi_short h;
		if (info->len < sizeof(h) || !info->last || info->offset)
			return -EPROTO;
		memcpy(&h, payload, sizeof(h));
		struct mpi_env e = {h.tag, h.ctx, h.src, 0, info->len - sizeof(h)};
		wire_untag(&e);
		if (info->key) {
			/* sent in any order: one sender's come in order */
			if (info->key != cur->any_got + 1)
				return -EPROTO;
			cur->any_got = info->key;
		}
		return deliver_short(&e, (const char *)payload + sizeof(h), info->key);
	}
	if (info->user == 1) {
		/* an envelope: a new message from `from` */
		if (info->len != sizeof(struct mpi_env))
			return -EPROTO;
		struct mpi_msg *m = calloc(1, sizeof(*m));
		if (!m)
			return -ENOMEM;
		memcpy(&m->env, payload, sizeof(m->env));
		/* the first posted receive that fits takes it */
		if (!(m->req = take_posted(&m->env, 0)) && m->env.len && !(m->data = malloc(m->env.len))) {
			free(m);
			return -ENOMEM;
		}
		if (!m->env.len) {
			if (m->req) {
				complete(m->req, &m->env, 0);
				free(m);
				return 0;
			}
			m->complete = 1;
		}
		if (!m->req) {
			/* unexpected: queued in arrival order */
			unexp_append(m);
		}
		cur->m = m->env.len ? m : NULL;
		if (cur->m)
			mpi_g.arriving = from;
		return 0;
	}
	/* data: the message whose envelope came last from `from` */
	struct mpi_msg *m = cur->m;
	if (!m || info->offset + info->len > m->env.len)
		return -EPROTO;
	if (m->req && !m->data) {
		/* straight into the receive buffer, what fits */
		uint64_t cap = m->req->cap;
		if (info->offset < cap)
			memcpy((char *)m->req->buf + info->offset, payload,
			       info->offset + info->len <= cap ? info->len : cap - info->offset);
	} else {
		memcpy(m->data + info->offset, payload, info->len);
	}
	m->got += info->len;
	if (info->last) {
		cur->m = NULL;
		if (m->req && !m->data) {
			complete(m->req, &m->env, m->env.len < m->req->cap ? m->env.len : m->req->cap);
			free(m);
		} else {
			m->complete = 1;
			if (m->req) /* taken by a receive while it arrived */
				mpi_take(m);
		}
	}
	return 0;
}

/* An unexpected message, complete, to its receive: copy, complete, free
 * (a request to send: set the receive up for the data). */
void mpi_take(struct mpi_msg *m)
{
	struct torus_mpi_request *r = m->req;
	if (m->rzv) {
		struct mpi_rts h = {m->env, m->sreq, m->region, m->trace};
		rzv_take(r, &h, m->node);
		free(m);
		return;
	}
	uint64_t n = m->env.len < r->cap ? m->env.len : r->cap;
	if (n)
		memcpy(r->buf, m->data, n);
	complete(r, &m->env, n);
	r->any_key = m->any_key;
	free(m->data);
	free(m);
}

/* Everything this rank injected has left: so have its control messages. */
static void sends_left(void)
{
	mpi_g.sends_out = 0;
	while (mpi_g.ctl) {
		struct mpi_ctl *k = mpi_g.ctl;
		mpi_g.ctl = k->next;
		free(k);
	}
}

/* Tell node that its send sreq is done: queued, posted by post_fins. */
static int queue_fin(uint32_t node, uint64_t sreq)
{
	struct mpi_ctl *k = malloc(sizeof(*k));
	if (!k)
		return -ENOMEM;
	*k = (struct mpi_ctl){{sreq}, node, NULL};
	if (!mpi_g.ctl_q)
		mpi_g.ctl_tail = &mpi_g.ctl_q;
	*mpi_g.ctl_tail = k;
	mpi_g.ctl_tail = &k->next;
	return 0;
}

/* Post the queued control messages while the FIFO has room (never
 * waiting: the progress engine calls this, and comes back); their bytes
 * live on mpi_g.ctl until every send has left. The number posted, or a
 * negative error. */
static int post_fins(void)
{
	int n = 0;
	while (mpi_g.ctl_q) {
		struct mpi_ctl *k = mpi_g.ctl_q;
		struct dma_desc d;
		dma_desc_memfifo(&d, k->node, 0, TORUS_MPI_DISPATCH, 5, &k->fin, sizeof(k->fin), mpi_g.inj);
		d.tag = TORUS_TAG(TORUS_TAG_P2P, 0, 0, 0, 0);
		int rc = dma_counter_add(mpi_g.c, mpi_g.inj, (int64_t)sizeof(k->fin));
		if (!rc && (rc = dma_injfifo_post(mpi_g.fifo, &d, 0)) != 0)
			dma_counter_add(mpi_g.c, mpi_g.inj, -(int64_t)sizeof(k->fin)); /* not posted after all */
		if (rc == -EAGAIN)
			break;
		if (rc)
			return rc;
		mpi_g.sends_out = 1;
		mpi_g.ctl_q = k->next;
		k->next = mpi_g.ctl;
		mpi_g.ctl = k;
		n++;
	}
	return n;
}

/*
 * The rendezvous work the handler queued: set up the receives that took a
 * request to send (their region and counter) and get their data; complete
 * the receives whose data are in, in order (a receive later in the list
 * waits for the ones before, each of which finishes without this rank
 * doing anything more; one counter test per call keeps polling cheap in
 * virtual time), and tell their senders. Set-ups that find no free region
 * or counter while other receives hold some wait for the next call, as do
 * gets that find the FIFO full. The number of things done, or a negative
 * error.
 */
static int rz_service(void)
{
	emu_core_t *c = mpi_g.c;
	int rc, done = 0;
	while (mpi_g.rz_setup) {
		struct torus_mpi_request *r = mpi_g.rz_setup;
		uint64_t n = r->env.len < r->cap ? r->env.len : r->cap;
		if (!r->armed) {
			r->region = r->counter = DMA_NO_COUNTER;
			if (n) {
				rc = dma_mem_register(c, r->buf, n, &r->region);
				if (!rc && (rc = dma_counter_alloc(c, &r->counter)) == 0)
					rc = dma_counter_add(c, r->counter, (int64_t)n);
				if (rc) {
					if (r->region != DMA_NO_COUNTER)
						dma_mem_deregister(c, r->region);
					if (r->counter != DMA_NO_COUNTER)
						dma_counter_free(c, r->counter);
					r->region = r->counter = DMA_NO_COUNTER;
					if (rc == DMA_ERR_NOSPACE && mpi_g.rz_recv)
						break; /* a receive in flight gives one back */
					return rc;
				}
			}
			r->got = n;
			r->armed = 1;
		}
		if (n && !r->asked) {
			if (r->sregion == DMA_NO_COUNTER)
				return -EPROTO; /* data announced without a region */
			struct dma_desc d;
			dma_desc_get(&d, r->node, r->sregion, 0, n, r->region, 0, r->counter);
			d.tag = r->trace;
			if ((rc = dma_injfifo_post(mpi_g.fifo, &d, 0)) == -EAGAIN)
				break;
			if (rc)
				return rc;
			r->asked = 1;
		}
		mpi_g.rz_setup = r->rznext;
		rz_append(&mpi_g.rz_recv, r);
		done++;
	}
	while (mpi_g.rz_recv) {
		struct torus_mpi_request *r = mpi_g.rz_recv;
		int zero = 1;
		if (r->got && (rc = dma_counter_test(c, r->counter, &zero)))
			return rc;
		if (!zero)
			break;
		if ((rc = queue_fin(r->node, r->sreq)))
			return rc;
		mpi_g.rz_recv = r->rznext;
		r->rznext = NULL;
		if (r->got) {
			dma_mem_deregister(c, r->region);
			dma_counter_free(c, r->counter);
		}
		complete(r, &r->env, r->got);
		done++;
	}
	if ((rc = post_fins()) < 0)
		return rc;
	return done + rc;
}

/* Handle what has arrived and the rendezvous work; if nothing moved, sleep
 * until something arrives, the first rendezvous receive's data are in or
 * the sends complete, or up to 1 ms (the callers look again). */
int mpi_progress(int may_sleep)
{
	unsigned got = 0;
	int rc = dma_recfifo_poll(mpi_g.c, 64, &got);
	if (rc)
		return rc;
	/* (under a promise to take packets first, rendezvous work waits) */
	if (!dma_recfifo_expecting(mpi_g.c) && (rc = rz_service()) < 0)
		return rc;
	if (!got && !rc && may_sleep) {
		rc = 0;
		if (dma_recfifo_expecting(mpi_g.c)) {
			/* promised: the packets come first */
			rc = dma_recfifo_wait(mpi_g.c, 1);
		} else if (mpi_g.rz_recv && mpi_g.rz_recv->got) {
			int zero = 0;
			rc = dma_recfifo_wait_counter(mpi_g.c, mpi_g.rz_recv->counter, 1, &zero);
		} else if (mpi_g.sends_out && may_sleep != MPI_PROGRESS_RECV) {
			/* wake when the sends are done too: a 1 ms timeout is
			 * 1 ms of emulated time */
			int zero = 0;
			rc = dma_recfifo_wait_counter(mpi_g.c, mpi_g.inj, 1, &zero);
			if (zero)
				sends_left();
		} else {
			rc = dma_recfifo_wait(mpi_g.c, 1);
		}
		if (rc == -ETIMEDOUT)
			rc = 0;
	}
	return rc < 0 ? rc : 0;
}

/* May count elements of t lie at MPI_BOTTOM (a NULL buffer)? Only if their
 * displacements are absolute addresses (MPI_Get_address): none of the
 * bytes they touch is in the first page, which is never memory. */
static int bottom_ok(MPI_Datatype t, int count)
{
	MPI_Aint lo, hi;
	return mpi_type_span(t, count, &lo, &hi) == 0 && lo >= 4096;
}

static int check_p2p(const char *fn, const void *buf, int count, MPI_Datatype t, int peer, int tag, MPI_Comm comm,
		     int recv)
{
	int size = 0;
	int rc = mpi_comm_check(comm, fn, &size);
	if (rc)
		return rc;
	if (count < 0)
		return mpi_error(comm, MPI_ERR_COUNT, fn, "negative count %d", count);
	struct mpi_type_info ti;
	if (mpi_type_info(t, 1, &ti))
		return mpi_error(comm, MPI_ERR_TYPE, fn, "unknown or uncommitted datatype %d", t);
	if (count && !buf && ti.size && !bottom_ok(t, count))
		return mpi_error(comm, MPI_ERR_BUFFER, fn, "NULL buffer for %d elements", count);
	if (peer != MPI_PROC_NULL && !(recv && peer == MPI_ANY_SOURCE) && (peer < 0 || peer >= size))
		return mpi_error(comm, MPI_ERR_RANK, fn, "rank %d is not in the communicator (size %d)", peer, size);
	if (!(recv && tag == MPI_ANY_TAG) && tag < 0)
		return mpi_error(comm, MPI_ERR_TAG, fn, "invalid tag %d", tag);
	return MPI_SUCCESS;
}

/* count elements of t: their bytes, and where they are contiguous (*src:
 * buf, which may be NULL for no bytes, or *tmp, malloc'd and packed: the
 * caller frees it). 0, or -1 if out of memory. */
static int send_bytes(const void *buf, int count, MPI_Datatype t, uint64_t *bytes, void **tmp, const void **src)
{
	struct mpi_type_info ti;
	*tmp = NULL;
	mpi_type_info(t, 0, &ti);
	*bytes = (uint64_t)count * ti.size;
	*src = buf;
	if (ti.contig || !*bytes)
		return 0;
	if (!(*tmp = malloc(*bytes)))
		return -1;
	mpi_pack(buf, count, t, *tmp);
	*src = *tmp;
	return 0;
}

/* Receive r lands in buf, or in r->tmp (malloc'd) to be unpacked to buf
 * when it completes; its capacity in *bytes. -1 if out of memory. */
static int recv_place(struct torus_mpi_request *r, void *buf, int count, MPI_Datatype t, void **where,
		      uint64_t *bytes)
{
	struct mpi_type_info ti;
	mpi_type_info(t, 0, &ti);
	*bytes = (uint64_t)count * ti.size;
	*where = buf;
	if (ti.contig)
		return 0;
	if (!(r->tmp = malloc(*bytes ? *bytes : 1)))
		return -1;
	r->ubuf = buf;
	r->ucount = count;
	r->utype = t;
	*where = r->tmp;
	return 0;
}

static void request_free(struct torus_mpi_request *r)
{
	free(r->tmp);
	free(r);
}

/* How a send goes: eager up to the eager limit and by rendezvous above
 * it; or always by rendezvous (synchronous sends: the answer proves the
 * receive started). */
enum send_mode { SEND_AUTO, SEND_RZV };

/* Post a message (eager: its parts; rendezvous: its request to send); the
 * request completes when they have left, and for a rendezvous once the
 * receiver cleared it and its data have left too. */
static int post_send_tagged(const void *buf, uint64_t bytes, int dest, int tag, MPI_Comm comm,
			    struct torus_mpi_request *r, uint32_t trace, enum send_mode mode);
static int post_send(const void *buf, uint64_t bytes, int dest, int tag, MPI_Comm comm, struct torus_mpi_request *r,
		     enum send_mode mode)
{
	return post_send_tagged(buf, bytes, dest, tag, comm, r, TORUS_TAG(TORUS_TAG_P2P, 0, 0, 0, 0), mode);
}

/* Post descriptor d, handling arrivals while the FIFO is full. */
int mpi_post_desc(struct dma_desc *d)
{
	int rc;
	while ((rc = dma_injfifo_post(mpi_g.fifo, d, 0)) == -EAGAIN)
		if ((rc = mpi_progress(1)))
			break;
	return rc;
}

static int eager_post(uint32_t node, const struct mpi_env *e, const void *buf, uint64_t bytes, uint32_t trace,
		      char *hdr);

/* (trace: the tag its packets carry in a --trace, TORUS_TAG) */
static int post_send_tagged(const void *buf, uint64_t bytes, int dest, int tag, MPI_Comm comm,
			    struct torus_mpi_request *r, uint32_t trace, enum send_mode mode)
{
	emu_core_t *c = mpi_g.c;
	struct mpi_comm *cm = mpi_comm_of(comm);
	r->env = (struct mpi_env){tag, cm->ctx, cm->rank, tag < 0 ? mpi_g.coll_sig : 0, bytes};
	mpi_g.coll_sent += r->env.sig != 0;
	uint32_t node = node_of(comm, dest);
	struct dma_desc d;
	uint32_t region = DMA_NO_COUNTER;
	int rzv = mode == SEND_RZV || (mode == SEND_AUTO && bytes > mpi_g.eager_limit);
	if (rzv && bytes) {
		/* the receiver gets the data from here (the get only reads).
		 * Sends hold at most half the core's regions: the rest stay for
		 * the receives, else two ranks that each post many large sends
		 * before their receives (osu_bibw's window of 64) hold every
		 * region in sends that wait for the other's gets, and neither can
		 * set up a get */
		uint32_t cap = emu_params(c)->dma_regions / 2;
		int rc = mpi_g.rz_send_regions >= (cap ? cap : 1)
				 ? DMA_ERR_NOSPACE
				 : dma_mem_register(c, (void *)(uintptr_t)buf, bytes, &region);
		if (rc == DMA_ERR_NOSPACE)
			rzv = 0; /* no region for it: eager after all */
		else if (rc)
			return rc;
		else
			mpi_g.rz_send_regions++;
	}
	if (rzv) {
		/* the request to send lives in the request, which lives until
		 * the receiver says it is done (after the request has left) */
		struct mpi_rts h = {r->env, (uint64_t)(uintptr_t)r, region, trace};
		memcpy(r->shortbuf, &h, sizeof(h));
		r->rzv = 1;
		r->region = region;
		r->node = node;
		r->send = 1;
		int rc = dma_counter_add(c, mpi_g.inj, (int64_t)sizeof(h));
		if (rc) {
			if (region != DMA_NO_COUNTER)
				send_region_release(region);
			return rc;
		}
		mpi_g.sends_out = 1;
		rz_append(&mpi_g.rz_wait, r);
		dma_desc_memfifo(&d, node, 0, TORUS_MPI_DISPATCH, 4, r->shortbuf, sizeof(h), mpi_g.inj);
		d.tag = trace;
		if ((rc = mpi_post_desc(&d)) && rz_remove(&mpi_g.rz_wait, r) && region != DMA_NO_COUNTER)
			send_region_release(region);
		return rc;
	}
	r->send = 1;
	return eager_post(node, &r->env, buf, bytes, trace, r->shortbuf);
}

/*
 * An eager message: a short one is one packet, its header and data copied
 * to hdr (at least sizeof(struct mpi_short) + MPI_SHORT_BYTES bytes); a
 * longer one is its envelope, copied to hdr, then its data from buf. hdr
 * and buf must stay until the packets have left (the injection counter).
 */
static int eager_post(uint32_t node, const struct mpi_env *e, const void *buf, uint64_t bytes, uint32_t trace,
		      char *hdr)
{
	struct dma_desc d;
	int is_short = bytes <= MPI_SHORT_BYTES;
	int rc = dma_counter_add(mpi_g.c, mpi_g.inj,
				 (int64_t)((is_short ? sizeof(struct mpi_short) : sizeof(*e)) + bytes));
	if (rc)
		return rc;
	mpi_g.sends_out = 1;
	if (is_short) {
		/* one packet: envelope and data together (a copy of at most a packet) */
		struct mpi_short h = {wire_tag(e), (uint16_t)e->comm, (uint16_t)e->src};
		memcpy(hdr, &h, sizeof(h));
		if (bytes)
			memmove(hdr + sizeof(h), buf, bytes); /* (buf may be in hdr: MPI_Bsend) */
		dma_desc_memfifo(&d, node, 0, TORUS_MPI_DISPATCH, 3, hdr, sizeof(h) + bytes, mpi_g.inj);
		d.tag = trace;
		if (any_order(e->tag, bytes)) {
			d.flags |= DMA_F_ANY_ORDER;
			d.key = ++mpi_g.cur[node].any_sent; /* (never 0: 0 says timed) */
		}
		return mpi_post_desc(&d);
	}
	memcpy(hdr, e, sizeof(*e));
	dma_desc_memfifo(&d, node, 0, TORUS_MPI_DISPATCH, 1, hdr, sizeof(*e), mpi_g.inj);
	d.tag = trace;
	rc = mpi_post_desc(&d);
	if (!rc && bytes) {
		dma_desc_memfifo(&d, node, 0, TORUS_MPI_DISPATCH, 2, buf, bytes, mpi_g.inj);
		d.tag = trace;
		rc = mpi_post_desc(&d);
	}
	return rc;
}

/* Sends complete when everything this rank injected has left (one counter
 * for all its sends: a send waits for the ones before it, which left
 * first anyway, from the same FIFO). */
static int send_done(void)
{
	int zero = 0;
	if (!mpi_g.sends_out)
		return 1; /* seen zero since the last post: no need to ask */
	int rc = dma_counter_test(mpi_g.c, mpi_g.inj, &zero);
	if (!rc && zero)
		sends_left();
	return rc ? rc : zero;
}

static struct torus_mpi_request *new_request(void)
{
	return calloc(1, sizeof(struct torus_mpi_request));
}

static int post_recv(void *buf, uint64_t cap, int src, int tag, MPI_Comm comm, struct torus_mpi_request *r)
{
	r->buf = buf;
	r->cap = cap;
	r->src = src;
	r->tag = tag;
	r->comm = comm;
	r->sig = tag < 0 ? mpi_g.coll_sig : 0;
	r->any = src >= 0 && any_order(tag, cap); /* (not MPI_ANY_SOURCE, nor MPI_PROC_NULL) */
	r->any_key = 0;
	/* the first unexpected message that fits, in arrival order */
	struct mpi_msg **pp = &mpi_g.unexp_head, *prev = NULL;
	while (*pp && ((*pp)->req || ((*pp)->any_key != 0) != r->any || !matches(&(*pp)->env, comm, src, tag))) {
		prev = *pp;
		pp = &(*pp)->next;
	}
	if (*pp) {
		struct mpi_msg *m = *pp;
		*pp = m->next;
		if (mpi_g.unexp_tail == m)
			mpi_g.unexp_tail = prev;
		m->next = NULL;
		m->req = r;
		if (m->complete)
			mpi_take(m);
		/* else: the handler finishes it when its last packet comes */
		return 0;
	}
	struct torus_mpi_request **tail = &mpi_g.posted;
	while (*tail)
		tail = &(*tail)->next;
	*tail = r;
	return 0;
}

/* Is send r complete: its packets (and a rendezvous' data) have left? 1,
 * 0, or a negative error. */
static int send_complete(const struct torus_mpi_request *r)
{
	return r->rzv ? r->fin : send_done();
}

/* This rank's clock meets the arrival of every message from node sent in
 * any order up to the one named key (they arrive in order: the last one's
 * is the latest), each once. */
static int any_meet(uint32_t node, uint64_t key)
{
	struct mpi_cur *cur = &mpi_g.cur[node];
	int rc = 0;
	while (!rc && cur->any_met < key)
		rc = dma_recv_expect(mpi_g.c, node, ++cur->any_met, 0);
	return rc;
}

/*
 * A receive of a message sent in any order. It handles those that are
 * here until one completes it, then meets its arrival. While it waits, it
 * waits (deferred) for the next message from its source, which comes no
 * later than the one it needs: the timekeeper then knows when it may go on
 * without being asked, and the core sleeps in wall-clock time.
 */
static int wait_any_order(struct torus_mpi_request *r)
{
	uint32_t node = node_of(r->comm, r->src);
	struct mpi_cur *cur = &mpi_g.cur[node];
	int rc = 0;
	for (;;) {
		unsigned got = 0;
		if ((rc = dma_recfifo_poll_any_order(mpi_g.c, 64, &got)) || r->done)
			break;
		if (cur->any_met <= cur->any_got && (rc = any_meet(node, cur->any_got + 1)))
			break;
		if (!got && cur->any_got < cur->any_met && (rc = dma_recfifo_wait_any_order(mpi_g.c, -1)))
			break;
	}
	if (!rc && r->any_key)
		rc = any_meet(node, r->any_key);
	r->any_key = 0;
	return rc;
}

/*
 * A request waits while a message is arriving (a receive's own, or another
 * from its source or from the source whose message began last, while its
 * own data come by a get or a send waits to hear that its data were got):
 * with nothing to post meanwhile (no rendezvous set-up to make, no control
 * message to send), the core promises the timekeeper to act on nothing
 * before it has taken the rest of that message's packets (at least as
 * many packets as those bytes fill), so that the simulation need not stop
 * at each of them (dma_recfifo_expect). Rendezvous work
 * waits for the promise to be kept: a get's data that are in by then are
 * seen then, and a request to send that comes meanwhile is set up then.
 * The wait does not return before the promise is kept (wait_request).
 */
static int promise_rest(const struct torus_mpi_request *r)
{
	emu_core_t *c = mpi_g.c;
	if (r->done || !emu_exact(c) || dma_recfifo_expecting(c) || mpi_g.rz_setup || mpi_g.ctl_q)
		return 0;
	/* (cur[node].m: a message partly here, until its last packet) */
	const struct mpi_msg *m = !r->send && r->src >= 0 ? mpi_g.cur[node_of(r->comm, r->src)].m : NULL;
	if (!m && !(m = mpi_g.cur[mpi_g.arriving].m))
		return 0;
	uint64_t pay = torus_params_payload(emu_params(c));
	uint64_t n = (m->env.len - m->got + pay - 1) / pay;
	return n > 1 ? dma_recfifo_expect(c, n) : 0;
}

/* Wait for a request: 0, or an MPI error code. */
static int wait_request(struct torus_mpi_request *r, MPI_Status *status)
{
	int rc = 0;
	if (!r->send && r->any)
		rc = wait_any_order(r);
	if (r->send && !r->rzv && emu_exact(mpi_g.c)) {
		/* the sends have left when the counter is zero, in
		 * virtual time (polling with mpi_progress would wake at the next
		 * arrival, or only after 1 ms of emulated time); they leave
		 * whether or not this core handles its arrivals meanwhile */
		rc = dma_counter_wait(mpi_g.c, mpi_g.inj);
		if (!rc)
			sends_left();
	}
	for (; !rc;) {
		if (r->send) {
			int d = send_complete(r);
			if (d < 0) {
				rc = d;
				break;
			}
			if (d)
				break;
		} else if (r->done) {
			break;
		}
		if ((rc = promise_rest(r)))
			break;
		/* a receive needs what arrives, not the sends' leaving: waking
		 * for that too cost a second sleep per exchange */
		if ((rc = mpi_progress(r->send ? 1 : MPI_PROGRESS_RECV)))
			break;
	}
	/* done while promised (another message's packets, or a send's word
	 * that its data were got): keep the promise before the program may
	 * post again */
	while (!rc && dma_recfifo_expecting(mpi_g.c))
		rc = mpi_progress(MPI_PROGRESS_RECV);
	if (rc)
		return MPI_ERR_INTERN;
	if (r->tmp) {
		/* packed: a receive's bytes to their places; a send's have left */
		if (!r->send)
			mpi_unpack(r->tmp, (uint64_t)(uint32_t)r->st.count_lo_ | (uint64_t)(uint32_t)r->st.count_hi_ << 32,
				   r->ubuf, r->ucount, r->utype);
		free(r->tmp);
		r->tmp = NULL;
	}
	if (status) {
		if (r->send) {
			status->MPI_SOURCE = MPI_ANY_SOURCE;
			status->MPI_TAG = MPI_ANY_TAG;
			status->MPI_ERROR = MPI_SUCCESS;
			status->count_lo_ = status->count_hi_ = 0;
			status->cancelled_ = 0;
		} else {
			*status = r->st;
		}
	}
	return r->send ? MPI_SUCCESS : r->st.MPI_ERROR;
}

/* The status of a receive from MPI_PROC_NULL: that source, any tag, no data. */
static void null_status(MPI_Status *st)
{
	if (st)
		*st = (MPI_Status){.MPI_SOURCE = MPI_PROC_NULL, .MPI_TAG = MPI_ANY_TAG, .MPI_ERROR = MPI_SUCCESS};
}

/* The empty status (MPI_REQUEST_NULL, an inactive persistent request, or no
 * active request at all): any source, any tag, success, no data, not
 * cancelled. */
static void empty_status(MPI_Status *st)
{
	if (st)
		*st = (MPI_Status){.MPI_SOURCE = MPI_ANY_SOURCE, .MPI_TAG = MPI_ANY_TAG, .MPI_ERROR = MPI_SUCCESS};
}

/* A blocking send (fn: the MPI call, for errors). */
static int send_blocking(const char *fn, const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
			 MPI_Comm comm, enum send_mode mode)
{
	int rc = check_p2p(fn, buf, count, datatype, dest, tag, comm, 0);
	if (rc || dest == MPI_PROC_NULL)
		return rc;
	struct torus_mpi_request r;
	memset(&r, 0, sizeof(r));
	uint64_t bytes;
	const void *src;
	if (send_bytes(buf, count, datatype, &bytes, &r.tmp, &src))
		return mpi_error(comm, MPI_ERR_INTERN, fn, "out of memory");
	if (post_send(src, bytes, dest, tag, comm, &r, mode)) {
		free(r.tmp);
		return mpi_error(comm, MPI_ERR_INTERN, fn, "the DMA unit refused the message");
	}
	rc = wait_request(&r, NULL);
	free(r.tmp);
	return rc ? mpi_error(comm, rc, fn, "the send did not complete") : MPI_SUCCESS;
}

int MPI_Send(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm)
{
	MPI_API();
	return send_blocking("MPI_Send", buf, count, datatype, dest, tag, comm, SEND_AUTO);
}

/* Synchronous: always a rendezvous, whose answer says the receive has
 * started; it completes once its data have left. */
int MPI_Ssend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm)
{
	MPI_API();
	return send_blocking("MPI_Ssend", buf, count, datatype, dest, tag, comm, SEND_RZV);
}

/* Ready: the receive is posted, which a standard send assumes nothing about. */
int MPI_Rsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm)
{
	MPI_API();
	return send_blocking("MPI_Rsend", buf, count, datatype, dest, tag, comm, SEND_AUTO);
}

int MPI_Recv(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm, MPI_Status *status)
{
	MPI_API();
	int rc = check_p2p("MPI_Recv", buf, count, datatype, source, tag, comm, 1);
	if (rc)
		return rc;
	if (source == MPI_PROC_NULL) {
		null_status(status);
		return MPI_SUCCESS;
	}
	struct torus_mpi_request r;
	memset(&r, 0, sizeof(r));
	void *where;
	uint64_t cap;
	if (recv_place(&r, buf, count, datatype, &where, &cap))
		return mpi_error(comm, MPI_ERR_INTERN, "MPI_Recv", "out of memory");
	post_recv(where, cap, source, tag, comm, &r);
	rc = wait_request(&r, status);
	free(r.tmp);
	if (rc == MPI_ERR_TRUNCATE)
		return mpi_error(comm, rc, "MPI_Recv", "a message of %llu bytes for a buffer of %llu",
				 (unsigned long long)r.msg_len, (unsigned long long)r.cap);
	return rc ? mpi_error(comm, rc, "MPI_Recv", "the receive failed") : MPI_SUCCESS;
}

static int send_nonblocking(const char *fn, const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
			    MPI_Comm comm, MPI_Request *request, enum send_mode mode)
{
	if (!request)
		return mpi_error(comm, MPI_ERR_REQUEST, fn, "NULL request");
	int rc = check_p2p(fn, buf, count, datatype, dest, tag, comm, 0);
	if (rc)
		return rc;
	struct torus_mpi_request *r = new_request();
	if (!r)
		return mpi_error(comm, MPI_ERR_INTERN, fn, "out of memory");
	uint64_t bytes;
	const void *src = NULL;
	if (dest == MPI_PROC_NULL) {
		r->done = 1;
		r->proc_null = 1;
	} else if (send_bytes(buf, count, datatype, &bytes, &r->tmp, &src)) {
		free(r);
		return mpi_error(comm, MPI_ERR_INTERN, fn, "out of memory");
	} else if (post_send(src, bytes, dest, tag, comm, r, mode)) {
		request_free(r);
		return mpi_error(comm, MPI_ERR_INTERN, fn, "the DMA unit refused the message");
	}
	*request = r;
	return MPI_SUCCESS;
}

int MPI_Isend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
	      MPI_Request *request)
{
	MPI_API();
	return send_nonblocking("MPI_Isend", buf, count, datatype, dest, tag, comm, request, SEND_AUTO);
}

int MPI_Issend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
	       MPI_Request *request)
{
	MPI_API();
	return send_nonblocking("MPI_Issend", buf, count, datatype, dest, tag, comm, request, SEND_RZV);
}

int MPI_Irsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
	       MPI_Request *request)
{
	MPI_API();
	return send_nonblocking("MPI_Irsend", buf, count, datatype, dest, tag, comm, request, SEND_AUTO);
}

int MPI_Irecv(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm, MPI_Request *request)
{
	MPI_API();
	if (!request)
		return mpi_error(comm, MPI_ERR_REQUEST, "MPI_Irecv", "NULL request");
	int rc = check_p2p("MPI_Irecv", buf, count, datatype, source, tag, comm, 1);
	if (rc)
		return rc;
	struct torus_mpi_request *r = new_request();
	if (!r)
		return mpi_error(comm, MPI_ERR_INTERN, "MPI_Irecv", "out of memory");
	void *where;
	uint64_t cap;
	if (source == MPI_PROC_NULL) {
		r->done = 1;
		r->proc_null = 1;
	} else if (recv_place(r, buf, count, datatype, &where, &cap)) {
		free(r);
		return mpi_error(comm, MPI_ERR_INTERN, "MPI_Irecv", "out of memory");
	} else {
		post_recv(where, cap, source, tag, comm, r);
	}
	*request = r;
	return MPI_SUCCESS;
}

int MPI_Wait(MPI_Request *request, MPI_Status *status)
{
	MPI_API();
	if (!request)
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_REQUEST, "MPI_Wait", "NULL request");
	if (*request == MPI_REQUEST_NULL) {
		empty_status(status);
		return MPI_SUCCESS;
	}
	struct torus_mpi_request *r = *request;
	int rc = MPI_SUCCESS;
	if (r->persistent && !r->active) {
		empty_status(status); /* an inactive persistent request */
		return MPI_SUCCESS;
	}
	if (r->proc_null)
		null_status(status);
	else
		rc = wait_request(r, status);
	uint64_t len = r->msg_len, cap = r->cap;
	if (r->persistent) {
		r->active = 0; /* it stays, for the next MPI_Start */
	} else {
		request_free(r);
		*request = MPI_REQUEST_NULL;
	}
	if (rc == MPI_ERR_TRUNCATE)
		return mpi_error(MPI_COMM_WORLD, rc, "MPI_Wait", "a message of %llu bytes for a buffer of %llu",
				 (unsigned long long)len, (unsigned long long)cap);
	return rc ? mpi_error(MPI_COMM_WORLD, rc, "MPI_Wait", "the request failed") : MPI_SUCCESS;
}

int MPI_Waitall(int count, MPI_Request requests[], MPI_Status statuses[])
{
	MPI_API();
	if (count < 0 || (count && !requests))
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Waitall", "bad request array");
	int err = 0;
	struct mpi_comm *wc = mpi_comm_of(MPI_COMM_WORLD);
	MPI_Errhandler eh = wc->eh;
	wc->eh = MPI_ERRORS_RETURN; /* one verdict for the whole call */
	for (int i = 0; i < count; i++) {
		int rc = MPI_Wait(&requests[i], statuses ? &statuses[i] : MPI_STATUS_IGNORE);
		if (rc) {
			err = 1;
			if (statuses)
				statuses[i].MPI_ERROR = rc;
		}
	}
	wc->eh = eh;
	return err ? mpi_error(MPI_COMM_WORLD, MPI_ERR_IN_STATUS, "MPI_Waitall", "a request failed") : MPI_SUCCESS;
}

/* Does the request count in a wait or test for any or some (not null, and
 * not a persistent request that is not started: those are skipped)? */
static int request_active(MPI_Request r)
{
	return r != MPI_REQUEST_NULL && !(r->persistent && !r->active);
}

/* Is the request complete (without waiting)? Progress first. */
static int request_ready(MPI_Request r)
{
	return r == MPI_REQUEST_NULL || (r->persistent && !r->active) || r->proc_null ||
	       (r->send ? send_complete(r) > 0 : r->done);
}

int MPI_Waitany(int count, MPI_Request requests[], int *index, MPI_Status *status)
{
	MPI_API();
	if (count < 0 || (count && !requests) || !index)
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Waitany", "bad request array or index");
	for (;;) {
		int active = 0;
		for (int i = 0; i < count; i++) {
			if (!request_active(requests[i]))
				continue;
			active = 1;
			if (request_ready(requests[i])) {
				*index = i;
				return MPI_Wait(&requests[i], status);
			}
		}
		if (!active) {
			*index = MPI_UNDEFINED;
			empty_status(status);
			return MPI_SUCCESS;
		}
		if (mpi_progress(1))
			return mpi_error(MPI_COMM_WORLD, MPI_ERR_INTERN, "MPI_Waitany", "the reception FIFO failed");
	}
}

int MPI_Testany(int count, MPI_Request requests[], int *index, int *flag, MPI_Status *status)
{
	MPI_API();
	if (count < 0 || (count && !requests) || !index || !flag)
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Testany", "bad request array, index or flag");
	if (mpi_progress(0))
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_INTERN, "MPI_Testany", "the reception FIFO failed");
	int active = 0;
	for (int i = 0; i < count; i++) {
		if (!request_active(requests[i]))
			continue;
		active = 1;
		if (request_ready(requests[i])) {
			*index = i;
			*flag = 1;
			return MPI_Wait(&requests[i], status);
		}
	}
	*index = MPI_UNDEFINED;
	*flag = !active;
	if (!active)
		empty_status(status);
	return MPI_SUCCESS;
}

int MPI_Testsome(int incount, MPI_Request requests[], int *outcount, int indices[], MPI_Status statuses[])
{
	MPI_API();
	if (incount < 0 || (incount && (!requests || !indices)) || !outcount)
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Testsome", "bad arrays or count");
	if (mpi_progress(0))
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_INTERN, "MPI_Testsome", "the reception FIFO failed");
	int n = 0, active = 0, err = 0;
	for (int i = 0; i < incount; i++) {
		if (!request_active(requests[i]))
			continue;
		active = 1;
		if (request_ready(requests[i])) {
			MPI_Status *st = statuses ? &statuses[n] : MPI_STATUS_IGNORE;
			int rc = MPI_Wait(&requests[i], st);
			if (rc && statuses)
				statuses[n].MPI_ERROR = rc;
			err |= rc != 0;
			indices[n++] = i;
		}
	}
	*outcount = active ? n : MPI_UNDEFINED;
	return err ? MPI_ERR_IN_STATUS : MPI_SUCCESS;
}

int MPI_Waitsome(int incount, MPI_Request requests[], int *outcount, int indices[], MPI_Status statuses[])
{
	MPI_API();
	int rc;
	while (!(rc = MPI_Testsome(incount, requests, outcount, indices, statuses)) && *outcount == 0)
		if (mpi_progress(1))
			return mpi_error(MPI_COMM_WORLD, MPI_ERR_INTERN, "MPI_Waitsome", "the reception FIFO failed");
	return rc;
}

int MPI_Testall(int count, MPI_Request requests[], int *flag, MPI_Status statuses[])
{
	MPI_API();
	if (count < 0 || (count && !requests) || !flag)
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Testall", "bad request array or flag");
	if (mpi_progress(0))
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_INTERN, "MPI_Testall", "the reception FIFO failed");
	for (int i = 0; i < count; i++)
		if (!request_ready(requests[i])) {
			*flag = 0;
			return MPI_SUCCESS;
		}
	*flag = 1;
	return MPI_Waitall(count, requests, statuses);
}

/* A receive not yet matched leaves the queue and completes as cancelled;
 * anything else (a send, a matched receive) completes as it would, which
 * MPI allows: MPI_Test_cancelled then says it was not cancelled. */
int MPI_Cancel(MPI_Request *request)
{
	MPI_API();
	if (!request || *request == MPI_REQUEST_NULL)
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_REQUEST, "MPI_Cancel", "no request");
	struct torus_mpi_request *r = *request;
	if (r->send || r->done || r->proc_null || (r->persistent && !r->active))
		return MPI_SUCCESS;
	struct torus_mpi_request **pp = &mpi_g.posted;
	while (*pp && *pp != r)
		pp = &(*pp)->next;
	if (*pp) {
		*pp = r->next;
		r->next = NULL;
		r->st = (MPI_Status){.MPI_SOURCE = MPI_ANY_SOURCE, .MPI_TAG = MPI_ANY_TAG, .cancelled_ = 1};
		r->done = 1;
	}
	return MPI_SUCCESS;
}

int MPI_Test_cancelled(const MPI_Status *status, int *flag)
{
	MPI_API();
	if (!status || !flag)
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Test_cancelled", "NULL status or flag");
	*flag = status->cancelled_ != 0;
	return MPI_SUCCESS;
}

/* The predefined attributes (user keyvals are not there: MPI_Keyval_create
 * and MPI_Comm_create_keyval do not link). */
int MPI_Comm_get_attr(MPI_Comm comm, int keyval, void *attribute_val, int *flag)
{
	MPI_API();
	static const int tag_ub = MPI_TAG_UB_VALUE, host = MPI_PROC_NULL, io = MPI_ANY_SOURCE, wtime_global = 0;
	int size = 0;
	int rc = mpi_comm_check(comm, "MPI_Comm_get_attr", &size);
	if (rc)
		return rc;
	if (!attribute_val || !flag)
		return mpi_error(comm, MPI_ERR_ARG, "MPI_Comm_get_attr", "NULL attribute_val or flag");
	const int *v = keyval == MPI_TAG_UB ? &tag_ub
		       : keyval == MPI_HOST ? &host
		       : keyval == MPI_IO ? &io
		       : keyval == MPI_WTIME_IS_GLOBAL ? &wtime_global
						       : NULL;
	if (!v)
		return mpi_error(comm, MPI_ERR_ARG, "MPI_Comm_get_attr", "keyval %d: only the predefined ones are there",
				 keyval);
	*(const int **)attribute_val = v;
	*flag = 1;
	return MPI_SUCCESS;
}

int MPI_Attr_get(MPI_Comm comm, int keyval, void *attribute_val, int *flag)
{
	MPI_API();
	return MPI_Comm_get_attr(comm, keyval, attribute_val, flag);
}

int MPI_Comm_set_name(MPI_Comm comm, const char *comm_name)
{
	MPI_API();
	int size = 0;
	int rc = mpi_comm_check(comm, "MPI_Comm_set_name", &size);
	if (rc)
		return rc;
	if (!comm_name)
		return mpi_error(comm, MPI_ERR_ARG, "MPI_Comm_set_name", "NULL name");
	struct mpi_comm *cm = mpi_comm_of(comm);
	snprintf(cm->name, sizeof(cm->name), "%s", comm_name);
	return MPI_SUCCESS;
}

int MPI_Comm_get_name(MPI_Comm comm, char *comm_name, int *resultlen)
{
	MPI_API();
	int size = 0;
	int rc = mpi_comm_check(comm, "MPI_Comm_get_name", &size);
	if (rc)
		return rc;
	if (!comm_name || !resultlen)
		return mpi_error(comm, MPI_ERR_ARG, "MPI_Comm_get_name", "NULL name or length");
	const struct mpi_comm *cm = mpi_comm_of(comm);
	const char *n = cm->name[0] ? cm->name
			: comm == MPI_COMM_WORLD ? "MPI_COMM_WORLD"
			: comm == MPI_COMM_SELF	 ? "MPI_COMM_SELF"
						 : "";
	*resultlen = snprintf(comm_name, MPI_MAX_OBJECT_NAME, "%s", n);
	return MPI_SUCCESS;
}

/* Profiling control: there is no profiling layer to tell anything. */
int MPI_Pcontrol(const int level, ...)
{
	MPI_API();
	(void)level;
	return MPI_SUCCESS;
}

/* A request freed: a receive still posted leaves the queue; a send goes on. */
int MPI_Request_free(MPI_Request *request)
{
	MPI_API();
	if (!request || *request == MPI_REQUEST_NULL)
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_REQUEST, "MPI_Request_free", "no request");
	struct torus_mpi_request *r = *request;
	if (r->persistent && !r->active) {
		/* nothing posted */
	} else if (!r->send && !r->done && !r->proc_null) {
		struct torus_mpi_request **pp = &mpi_g.posted;
		while (*pp && *pp != r)
			pp = &(*pp)->next;
		if (!*pp) { /* taken by a message still arriving: let it land first */
			while (!r->done)
				if (mpi_progress(1))
					break;
		} else {
			*pp = r->next;
		}
	} else if (r->send && r->rzv && !r->fin) {
		/* a rendezvous not yet done: it goes on, and the handler frees
		 * the request when the receiver says it has the data */
		r->freed = 1;
		*request = MPI_REQUEST_NULL;
		return MPI_SUCCESS;
	} else if (r->send) {
		/* its envelope lives in the request: wait until it has left */
		while (send_done() == 0)
			if (mpi_progress(1))
				break;
	}
	request_free(r);
	*request = MPI_REQUEST_NULL;
	return MPI_SUCCESS;
}

/* The predefined elements received: whole elements of datatype only (a
 * message that ends inside one gives MPI_UNDEFINED). */
int MPI_Get_elements(const MPI_Status *status, MPI_Datatype datatype, int *count)
{
	MPI_API();
	struct mpi_type_info ti;
	if (!status || !count)
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Get_elements", "NULL status or count");
	if (mpi_type_info(datatype, 0, &ti))
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_TYPE, "MPI_Get_elements", "unknown datatype %d", datatype);
	/* whole elements and the predefined ones of a partial last element */
	uint64_t bytes = (uint64_t)(uint32_t)status->count_lo_ | (uint64_t)(uint32_t)status->count_hi_ << 32;
	int64_t n = mpi_type_elements(datatype, bytes);
	*count = n < 0 || n > INT32_MAX ? MPI_UNDEFINED : (int)n;
	return MPI_SUCCESS;
}

int MPI_Test(MPI_Request *request, int *flag, MPI_Status *status)
{
	MPI_API();
	if (!request || !flag)
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Test", "NULL request or flag");
	if (*request == MPI_REQUEST_NULL) {
		*flag = 1;
		empty_status(status);
		return MPI_SUCCESS;
	}
	struct torus_mpi_request *r = *request;
	if (mpi_progress(0))
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_INTERN, "MPI_Test", "the reception FIFO failed");
	int d = request_ready(r);
	*flag = d;
	return d ? MPI_Wait(request, status) : MPI_SUCCESS;
}

/* A message that fits, arrived (or arriving): its envelope, or NULL. */
static const struct mpi_msg *probe(int source, int tag, MPI_Comm comm)
{
	for (const struct mpi_msg *m = mpi_g.unexp_head; m; m = m->next)
		if (!m->req && matches(&m->env, comm, source, tag))
			return m;
	return NULL;
}

int MPI_Iprobe(int source, int tag, MPI_Comm comm, int *flag, MPI_Status *status)
{
	MPI_API();
	int rc = check_p2p("MPI_Iprobe", NULL, 0, MPI_BYTE, source, tag, comm, 1);
	if (rc)
		return rc;
	if (!flag)
		return mpi_error(comm, MPI_ERR_ARG, "MPI_Iprobe", "NULL flag");
	if (source == MPI_PROC_NULL) {
		*flag = 1;
		null_status(status);
		return MPI_SUCCESS;
	}
	if (mpi_progress(0))
		return mpi_error(comm, MPI_ERR_INTERN, "MPI_Iprobe", "the reception FIFO failed");
	const struct mpi_msg *m = probe(source, tag, comm);
	*flag = m != NULL;
	if (m && status) {
		status->MPI_SOURCE = m->env.src;
		status->MPI_TAG = m->env.tag;
		status->MPI_ERROR = MPI_SUCCESS;
		status->count_lo_ = (int)(uint32_t)m->env.len;
		status->count_hi_ = (int)(uint32_t)(m->env.len >> 32);
		status->cancelled_ = 0;
	}
	return MPI_SUCCESS;
}

int MPI_Probe(int source, int tag, MPI_Comm comm, MPI_Status *status)
{
	MPI_API();
	int flag = 0, rc;
	while (!(rc = MPI_Iprobe(source, tag, comm, &flag, status)) && !flag)
		if (mpi_progress(1))
			return mpi_error(comm, MPI_ERR_INTERN, "MPI_Probe", "the reception FIFO failed");
	return rc;
}

int MPI_Sendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag, void *recvbuf,
		 int recvcount, MPI_Datatype recvtype, int source, int recvtag, MPI_Comm comm, MPI_Status *status)
{
	MPI_API();
	MPI_Request r;
	int rc = MPI_Irecv(recvbuf, recvcount, recvtype, source, recvtag, comm, &r);
	if (rc)
		return rc;
	if ((rc = MPI_Send(sendbuf, sendcount, sendtype, dest, sendtag, comm)))
		return rc;
	return MPI_Wait(&r, status);
}

/* --------------------------------------------- for the collectives (tags < 0) */

/* the trace tag of a collective's own tag (mpi_coll.c's TAG_*) */
uint32_t mpi_coll_trace(int tag)
{
	static const uint32_t by[] = {TORUS_TAG_BCAST, TORUS_TAG_REDUCE, TORUS_TAG_GATHER, TORUS_TAG_SCATTER,
				      TORUS_TAG_ALLTOALL, TORUS_TAG_SCAN, TORUS_TAG_ALLREDUCE};
	if (tag <= -40 && tag >= -43) /* mpi_win.c's: accumulates, then an epoch's own */
		return TORUS_TAG(TORUS_TAG_RMA, 0, tag >= -41 ? TORUS_RMA_ACC : TORUS_RMA_SYNC, 0, 0);
	int k = -10 - tag; /* -10, -11, ... */
	return TORUS_TAG(k >= 0 && k < (int)(sizeof(by) / sizeof(by[0])) ? by[k] : TORUS_TAG_NONE, 0, 0, 0, 0);
}

int mpi_isend_raw(struct torus_mpi_request *r, const void *buf, uint64_t bytes, int dest, int tag, MPI_Comm comm)
{
	memset(r, 0, sizeof(*r));
	return post_send_tagged(buf, bytes, dest, tag, comm, r, mpi_coll_trace(tag), SEND_AUTO) ? MPI_ERR_INTERN : 0;
}

void mpi_irecv_raw(struct torus_mpi_request *r, void *buf, uint64_t bytes, int src, int tag, MPI_Comm comm)
{
	memset(r, 0, sizeof(*r));
	post_recv(buf, bytes, src, tag, comm, r);
}

int mpi_wait_raw(struct torus_mpi_request *r) { return wait_request(r, NULL); }

int mpi_send_raw(const void *buf, uint64_t bytes, int dest, int tag, MPI_Comm comm)
{
	struct torus_mpi_request r;
	int rc = mpi_isend_raw(&r, buf, bytes, dest, tag, comm);
	return rc ? rc : wait_request(&r, NULL);
}

int mpi_recv_raw(void *buf, uint64_t bytes, int src, int tag, MPI_Comm comm)
{
	struct torus_mpi_request r;
	mpi_irecv_raw(&r, buf, bytes, src, tag, comm);
	return wait_request(&r, NULL);
}

int mpi_sendrecv_raw(const void *sbuf, uint64_t sbytes, int dest, void *rbuf, uint64_t rbytes, int src, int tag,
		     MPI_Comm comm)
{
	struct torus_mpi_request rr, sr;
	memset(&rr, 0, sizeof(rr));
	memset(&sr, 0, sizeof(sr));
	post_recv(rbuf, rbytes, src, tag, comm, &rr);
	if (post_send_tagged(sbuf, sbytes, dest, tag, comm, &sr, mpi_coll_trace(tag), SEND_AUTO))
		return MPI_ERR_INTERN;
	/* the receive first: by the time it is in, the send has nearly
	 * always left */
	int b = wait_request(&rr, NULL), a = wait_request(&sr, NULL);
	return a ? a : b;
}

int MPI_Sendrecv_replace(void *buf, int count, MPI_Datatype datatype, int dest, int sendtag, int source, int recvtag,
			 MPI_Comm comm, MPI_Status *status)
{
	MPI_API();
	int rc = check_p2p("MPI_Sendrecv_replace", buf, count, datatype, dest, sendtag, comm, 0);
	if (rc)
		return rc;
	struct mpi_type_info ti;
	mpi_type_info(datatype, 0, &ti);
	uint64_t bytes = (uint64_t)count * ti.size;
	if (bytes > INT32_MAX)
		return mpi_error(comm, MPI_ERR_COUNT, "MPI_Sendrecv_replace", "%llu bytes", (unsigned long long)bytes);
	/* the outgoing copy, packed: what the send reads while the receive
	 * lands in buf */
	void *out = malloc(bytes + 1);
	if (!out)
		return mpi_error(comm, MPI_ERR_INTERN, "MPI_Sendrecv_replace", "out of memory");
	mpi_pack(buf, count, datatype, out);
	rc = MPI_Sendrecv(out, (int)bytes, MPI_BYTE, dest, sendtag, buf, count, datatype, source, recvtag, comm, status);
	free(out);
	return rc;
}

/* ----------------------------------------------------------- buffered sends */

int MPI_Buffer_attach(void *buffer, int size)
{
	MPI_API();
	if (size < 0 || (size && !buffer))
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_BUFFER, "MPI_Buffer_attach", "bad buffer (%d bytes)", size);
	if (mpi_g.bsend_buf)
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_BUFFER, "MPI_Buffer_attach", "a buffer is attached already");
	mpi_g.bsend_buf = buffer;
	mpi_g.bsend_size = size;
	return MPI_SUCCESS;
}

int MPI_Buffer_detach(void *buffer_addr, int *size)
{
	MPI_API();
	if (!buffer_addr || !size)
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Buffer_detach", "NULL argument");
	/* every buffered send has left when detach returns */
	while (mpi_g.state == 1 && send_done() == 0)
		if (mpi_progress(1))
			break;
	*(void **)buffer_addr = mpi_g.bsend_buf;
	*size = mpi_g.bsend_size;
	mpi_g.bsend_buf = NULL;
	mpi_g.bsend_size = 0;
	mpi_g.bsend_used = 0;
	return MPI_SUCCESS;
}

/*
 * A buffered send completes locally: the message, with its envelope, is
 * copied into the attached buffer and goes eager from there, whatever its
 * size; the call returns at once. The buffer's space comes back when
 * everything this rank sent has left (a message takes its size plus at
 * most MPI_BSEND_OVERHEAD): a send that does not fit in what is left then
 * fails with MPI_ERR_BUFFER, as MPI asks.
 */
int MPI_Bsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm)
{
	MPI_API();
	int rc = check_p2p("MPI_Bsend", buf, count, datatype, dest, tag, comm, 0);
	if (rc || dest == MPI_PROC_NULL)
		return rc;
	struct mpi_type_info ti;
	mpi_type_info(datatype, 0, &ti);
	uint64_t bytes = (uint64_t)count * ti.size;
	uint64_t need = (sizeof(struct mpi_env) + bytes + 15) & ~(uint64_t)15, size = (uint64_t)mpi_g.bsend_size;
	if (mpi_g.bsend_used + need > size && mpi_g.bsend_used && send_done() > 0)
		mpi_g.bsend_used = 0; /* every buffered message has left */
	if (mpi_g.bsend_used + need > size)
		return mpi_error(comm, MPI_ERR_BUFFER, "MPI_Bsend", "%llu bytes needed, %llu of %d attached free",
				 (unsigned long long)(bytes + MPI_BSEND_OVERHEAD), (unsigned long long)(size - mpi_g.bsend_used),
				 mpi_g.bsend_size);
	char *chunk = (char *)mpi_g.bsend_buf + mpi_g.bsend_used, *data = chunk + sizeof(struct mpi_env);
	mpi_g.bsend_used += need;
	struct mpi_comm *cm = mpi_comm_of(comm);
	struct mpi_env e = {tag, cm->ctx, cm->rank, tag < 0 ? mpi_g.coll_sig : 0, bytes};
	/* packed into the chunk, after the room for its envelope (a short
	 * one is then copied whole to the chunk's start by eager_post) */
	mpi_pack(buf, count, datatype, data);
	if (eager_post(node_of(comm, dest), &e, data, bytes, TORUS_TAG(TORUS_TAG_P2P, 0, 0, 0, 0), chunk))
		return mpi_error(comm, MPI_ERR_INTERN, "MPI_Bsend", "the DMA unit refused the message");
	return MPI_SUCCESS;
}

int MPI_Ibsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
	       MPI_Request *request)
{
	MPI_API();
	if (!request)
		return mpi_error(comm, MPI_ERR_REQUEST, "MPI_Ibsend", "NULL request");
	int rc = MPI_Bsend(buf, count, datatype, dest, tag, comm);
	if (rc)
		return rc;
	struct torus_mpi_request *r = new_request();
	if (!r)
		return mpi_error(comm, MPI_ERR_INTERN, "MPI_Ibsend", "out of memory");
	r->done = r->proc_null = 1; /* complete: nothing to wait for */
	*request = r;
	return MPI_SUCCESS;
}

/* ------------------------------------------------------ persistent requests */

/* a persistent send's mode: standard (and ready), synchronous, buffered */
enum { PMODE_STD, PMODE_SYNC, PMODE_BUF };

static int persistent(const char *fn, const void *buf, int count, MPI_Datatype datatype, int peer, int tag,
		      MPI_Comm comm, MPI_Request *request, int recv, int mode)
{
	if (!request)
		return mpi_error(comm, MPI_ERR_REQUEST, fn, "NULL request");
	int rc = check_p2p(fn, buf, count, datatype, peer, tag, comm, recv);
	if (rc)
		return rc;
	struct torus_mpi_request *r = new_request();
	if (!r)
		return mpi_error(comm, MPI_ERR_INTERN, fn, "out of memory");
	*r = (struct torus_mpi_request){.persistent = 1, .precv = recv, .pmode = mode, .pbuf = buf, .pcount = count,
					 .ppeer = peer, .ptag = tag, .ptype = datatype, .comm = comm};
	*request = r;
	return MPI_SUCCESS;
}

int MPI_Send_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
		  MPI_Request *request)
{
	MPI_API();
	return persistent("MPI_Send_init", buf, count, datatype, dest, tag, comm, request, 0, PMODE_STD);
}

/* a ready send is a standard one here, as MPI allows */
int MPI_Rsend_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
		   MPI_Request *request)
{
	MPI_API();
	return persistent("MPI_Rsend_init", buf, count, datatype, dest, tag, comm, request, 0, PMODE_STD);
}

int MPI_Ssend_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
		   MPI_Request *request)
{
	MPI_API();
	return persistent("MPI_Ssend_init", buf, count, datatype, dest, tag, comm, request, 0, PMODE_SYNC);
}

int MPI_Bsend_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
		   MPI_Request *request)
{
	MPI_API();
	return persistent("MPI_Bsend_init", buf, count, datatype, dest, tag, comm, request, 0, PMODE_BUF);
}

int MPI_Recv_init(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
		  MPI_Request *request)
{
	MPI_API();
	return persistent("MPI_Recv_init", buf, count, datatype, source, tag, comm, request, 1, PMODE_STD);
}

int MPI_Start(MPI_Request *request)
{
	MPI_API();
	if (!request || *request == MPI_REQUEST_NULL || !(*request)->persistent)
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_REQUEST, "MPI_Start", "not a persistent request");
	struct torus_mpi_request *r = *request;
	if (r->active)
		return mpi_error(r->comm, MPI_ERR_REQUEST, "MPI_Start", "the request is active already");
	struct torus_mpi_request keep = *r;
	memset(r, 0, sizeof(*r));
	r->persistent = 1, r->precv = keep.precv, r->pbuf = keep.pbuf, r->pcount = keep.pcount, r->ppeer = keep.ppeer;
	r->ptag = keep.ptag, r->ptype = keep.ptype, r->comm = keep.comm, r->active = 1, r->pmode = keep.pmode;
	uint64_t bytes;
	void *where;
	const void *src;
	if (r->ppeer == MPI_PROC_NULL) {
		r->proc_null = r->done = 1;
	} else if (r->pmode == PMODE_BUF) {
		/* into the attached buffer, as MPI_Ibsend: complete at once */
		int rc = MPI_Bsend(r->pbuf, r->pcount, r->ptype, r->ppeer, r->ptag, r->comm);
		if (rc) {
			r->active = 0;
			return rc;
		}
		r->proc_null = r->done = 1;
	} else if (r->precv) {
		if (recv_place(r, (void *)(uintptr_t)r->pbuf, r->pcount, r->ptype, &where, &bytes)) {
			r->active = 0;
			return mpi_error(r->comm, MPI_ERR_INTERN, "MPI_Start", "out of memory");
		}
		post_recv(where, bytes, r->ppeer, r->ptag, r->comm, r);
	} else if (send_bytes(r->pbuf, r->pcount, r->ptype, &bytes, &r->tmp, &src) ||
		   post_send(src, bytes, r->ppeer, r->ptag, r->comm, r, r->pmode == PMODE_SYNC ? SEND_RZV : SEND_AUTO)) {
		free(r->tmp);
		r->tmp = NULL;
		r->active = 0;
		return mpi_error(r->comm, MPI_ERR_INTERN, "MPI_Start", "out of memory, or the DMA unit refused the message");
	}
	return MPI_SUCCESS;
}

int MPI_Startall(int count, MPI_Request requests[])
{
	MPI_API();
	if (count < 0 || (count && !requests))
		return mpi_error(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Startall", "bad request array");
	for (int i = 0; i < count; i++) {
		int rc = MPI_Start(&requests[i]);
		if (rc)
			return rc;
	}
	return MPI_SUCCESS;
}
