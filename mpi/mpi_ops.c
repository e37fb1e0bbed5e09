/*
 * libtorusmpi: reduction operations: the predefined ones on the predefined
 * types (mpi_reduce_local), the program's own (MPI_Op_create, MPI_Op_free),
 * combining two operands with either (mpi_combine), and which of them the
 * torus algorithms of coll/ run (mpi_coll_types).
 */
#include "mpi_internal.h"

#include <stdlib.h>

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
