/*
 * coll/ — collectives written only against the DMA API (torus/dma.h).
 *
 * A team is a list of cores (global core ranks, emu_core_global), like an
 * MPI communicator; every member calls the collective with the same
 * arguments. Data is a typed vector (MPI-like datatypes and reduction
 * operations). Semantics follow MPI:
 *
 *   coll_reduce_scatter  MPI_Reduce_scatter_block: send holds size*count
 *                        elements, recv gets the count reduced elements of
 *                        this member's block (block i to member i);
 *   coll_allgather       MPI_Allgather: send holds count elements, recv
 *                        gets size*count, member i's at block i;
 *   coll_allreduce       MPI_Allreduce: send and recv hold count elements.
 *
 * Algorithms are chosen by name from one catalogue per collective (the
 * `algo` argument, NULL for the default; coll_catalogue lists them).
 */
#ifndef TORUS_COLL_H
#define TORUS_COLL_H

#include "torus/dma.h"

#ifdef __cplusplus
extern "C" {
#endif

enum coll_dtype { COLL_INT32, COLL_INT64, COLL_FLOAT, COLL_DOUBLE, COLL_DTYPE_COUNT };
enum coll_op { COLL_SUM, COLL_PROD, COLL_MIN, COLL_MAX, COLL_BAND, COLL_BOR, COLL_OP_COUNT };

size_t coll_dtype_size(enum coll_dtype t);
const char *coll_dtype_name(enum coll_dtype t);
const char *coll_op_name(enum coll_op op);
/* Parse "int32", "double", "sum", "bor", ...; 0 or -EINVAL. */
int coll_dtype_parse(const char *s, enum coll_dtype *t);
int coll_op_parse(const char *s, enum coll_op *op);
/* Is op defined on t? (bitwise operations only on integers) */
int coll_op_valid(enum coll_dtype t, enum coll_op op);
/* inout[i] = inout[i] op in[i] for count elements; -EINVAL if undefined. */
int coll_reduce_local(enum coll_dtype t, enum coll_op op, void *inout, const void *in, size_t count);

typedef struct coll_team coll_team_t;
/* A team of the given cores; the caller must be one of them. Collective:
 * every member must create it (it exchanges nothing yet). */
int coll_team_create(emu_core_t *c, const uint32_t *members, size_t n, coll_team_t **out);
/* Every core of the job, in global rank order. */
int coll_team_world(emu_core_t *c, coll_team_t **out);
void coll_team_free(coll_team_t *t);
uint32_t coll_team_size(const coll_team_t *t);
uint32_t coll_team_rank(const coll_team_t *t);

int coll_reduce_scatter(coll_team_t *t, const void *send, void *recv, size_t count, enum coll_dtype dtype,
			enum coll_op op, const char *algo);
int coll_allgather(coll_team_t *t, const void *send, void *recv, size_t count, enum coll_dtype dtype,
		   const char *algo);
int coll_allreduce(coll_team_t *t, const void *send, void *recv, size_t count, enum coll_dtype dtype,
		   enum coll_op op, const char *algo);

/* ------------------------------------------------------------- catalogue */

enum coll_kind { COLL_REDUCE_SCATTER, COLL_ALLGATHER, COLL_ALLREDUCE, COLL_KIND_COUNT };

struct coll_args {
	coll_team_t *team;
	const void *send;
	void *recv;
	size_t count;
	enum coll_dtype dtype;
	enum coll_op op;
};

struct coll_algorithm {
	const char *name;          /* what a user types to select it */
	enum coll_kind kind;
	int (*run)(const struct coll_args *a);
	const char *restrictions;  /* when it applies */
	const char *description;   /* steps and the paper section */
};

/* The algorithms for one collective; *n gets their number. */
const struct coll_algorithm *coll_catalogue(enum coll_kind kind, size_t *n);
const char *coll_kind_name(enum coll_kind kind);

#ifdef __cplusplus
}
#endif
#endif
