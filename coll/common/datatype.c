/* Datatypes and reduction operations (MPI-like) and their local kernels. */
#include "../coll_internal.h"

#include <errno.h>
#include <string.h>

static const char *dtype_names[COLL_DTYPE_COUNT] = {"int32", "int64", "float", "double"};
static const size_t dtype_sizes[COLL_DTYPE_COUNT] = {4, 8, 4, 8};
static const char *op_names[COLL_OP_COUNT] = {"sum", "prod", "min", "max", "band", "bor"};

size_t coll_dtype_size(enum coll_dtype t) { return (unsigned)t < COLL_DTYPE_COUNT ? dtype_sizes[t] : 0; }
const char *coll_dtype_name(enum coll_dtype t) { return (unsigned)t < COLL_DTYPE_COUNT ? dtype_names[t] : "?"; }
const char *coll_op_name(enum coll_op op) { return (unsigned)op < COLL_OP_COUNT ? op_names[op] : "?"; }

int coll_dtype_parse(const char *s, enum coll_dtype *t)
{
	for (int i = 0; s && t && i < COLL_DTYPE_COUNT; i++)
		if (!strcmp(s, dtype_names[i])) {
			*t = (enum coll_dtype)i;
			return 0;
		}
	return -EINVAL;
}

int coll_op_parse(const char *s, enum coll_op *op)
{
	for (int i = 0; s && op && i < COLL_OP_COUNT; i++)
		if (!strcmp(s, op_names[i])) {
			*op = (enum coll_op)i;
			return 0;
		}
	return -EINVAL;
}

int coll_op_valid(enum coll_dtype t, enum coll_op op)
{
	if ((unsigned)t >= COLL_DTYPE_COUNT || (unsigned)op >= COLL_OP_COUNT)
		return 0;
	return !((op == COLL_BAND || op == COLL_BOR) && (t == COLL_FLOAT || t == COLL_DOUBLE));
}

/* One kernel per (type, operation): the compiler vectorises each loop. */
#define ARITH(T)                                                                  \
	do {                                                                      \
		T *a = inout;                                                     \
		const T *b = in;                                                  \
		switch (op) {                                                     \
		case COLL_SUM: for (size_t i = 0; i < n; i++) a[i] += b[i]; break; \
		case COLL_PROD: for (size_t i = 0; i < n; i++) a[i] *= b[i]; break; \
		case COLL_MIN: for (size_t i = 0; i < n; i++) a[i] = b[i] < a[i] ? b[i] : a[i]; break; \
		case COLL_MAX: for (size_t i = 0; i < n; i++) a[i] = b[i] > a[i] ? b[i] : a[i]; break; \
		default: break;                                                   \
		}                                                                 \
	} while (0)

/* Bitwise and/or element by element, in the element's own type (blocks of
 * int32 need not be 8-byte aligned). */
static void bitwise(enum coll_dtype t, enum coll_op op, void *inout, const void *in, size_t n)
{
	if (t == COLL_INT32) {
		uint32_t *a = inout;
		const uint32_t *b = in;
		for (size_t i = 0; i < n; i++)
			a[i] = op == COLL_BAND ? a[i] & b[i] : a[i] | b[i];
	} else {
		uint64_t *a = inout;
		const uint64_t *b = in;
		for (size_t i = 0; i < n; i++)
			a[i] = op == COLL_BAND ? a[i] & b[i] : a[i] | b[i];
	}
}

int coll_reduce_local(enum coll_dtype t, enum coll_op op, void *inout, const void *in, size_t n)
{
	if (!coll_op_valid(t, op) || (n && (!inout || !in)))
		return -EINVAL;
	if (op == COLL_BAND || op == COLL_BOR) {
		bitwise(t, op, inout, in, n);
		return 0;
	}
	switch (t) {
	case COLL_INT32: { /* wrap-around sums and products, as in MPI implementations */
		uint32_t *a = inout;
		const uint32_t *b = in;
		if (op == COLL_SUM)
			for (size_t i = 0; i < n; i++) a[i] += b[i];
		else if (op == COLL_PROD)
			for (size_t i = 0; i < n; i++) a[i] *= b[i];
		else {
			int32_t *sa = inout;
			const int32_t *sb = in;
			for (size_t i = 0; i < n; i++)
				sa[i] = (op == COLL_MIN) == (sb[i] < sa[i]) ? sb[i] : sa[i];
		}
		break;
	}
	case COLL_INT64: {
		uint64_t *a = inout;
		const uint64_t *b = in;
		if (op == COLL_SUM)
			for (size_t i = 0; i < n; i++) a[i] += b[i];
		else if (op == COLL_PROD)
			for (size_t i = 0; i < n; i++) a[i] *= b[i];
		else {
			int64_t *sa = inout;
			const int64_t *sb = in;
			for (size_t i = 0; i < n; i++)
				sa[i] = (op == COLL_MIN) == (sb[i] < sa[i]) ? sb[i] : sa[i];
		}
		break;
	}
	case COLL_FLOAT: ARITH(float); break;
	case COLL_DOUBLE: ARITH(double); break;
	default: return -EINVAL;
	}
	return 0;
}
