/* The multicolor bucket engine (multicolor.c), driven by the three
 * collectives' multicolor files. */
#ifndef COLL_MULTICOLOR_H
#define COLL_MULTICOLOR_H

#include "../coll_internal.h"

#include <errno.h>
#include <stdint.h>

enum { MC_RS = 1, MC_AG = 2 };

struct mc_job {
	enum coll_kind kind;
	enum coll_dtype dtype;
	enum coll_op op;
	uint64_t check;                  /* coll_args.check */
	const struct coll_blocks *blocks;/* every node's block of the vector (user layout) */
	const void *send;                /* reduce-scatter input: every block */
	void *rs_out;                    /* where this node's reduced block goes */
	void *result;                    /* allgather output: every block (user layout) */
	size_t result_bytes;
	const void *ag_send;             /* allgather only: this node's block, copied in first */
};

/* Run the job on a team of every node in node order (coll_team_fits). */
int coll_multicolor(coll_team_t *t, const struct mc_job *job);

#endif
