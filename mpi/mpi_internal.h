/* Internals of libtorusmpi (mpi/). */
#ifndef TORUS_MPI_INTERNAL_H
#define TORUS_MPI_INTERNAL_H

#include "mpi.h"
#include "torus/coll.h"
#include "torus/dma.h"
#include "torus/emu.h"
#include "torus/trace.h"

#include <stdarg.h>

#define TORUS_MPI_DISPATCH 200u /* memory-FIFO dispatch id of MPI messages (coll/ uses 250) */

/* What precedes every message. */
struct mpi_env {
	int32_t tag;
	uint32_t comm;
	int32_t src;    /* the sender's rank in comm */
	uint64_t len;   /* data bytes that follow */
};

/* A message that arrived before its receive was posted (or is arriving). */
struct mpi_msg {
	struct mpi_env env;
	char *data;                      /* NULL: straight into req's buffer */
	uint64_t got;
	int complete;
	struct torus_mpi_request *req;   /* the receive that took it */
	struct mpi_msg *next;
};

/* A short message's header: the packet says the source and the length. */
struct mpi_short {
	int32_t tag;
	uint32_t comm;
};
/* data bytes a message may carry in the packet of its header */
#define MPI_SHORT_BYTES (240u - sizeof(struct mpi_short))

struct torus_mpi_request {
	int send, done, proc_null;
	struct mpi_env env;              /* send: what goes out */
	char shortbuf[240];              /* send: a short message, envelope and data */
	void *buf;                       /* receive */
	uint64_t cap;
	int src, tag;
	MPI_Comm comm;
	MPI_Status st;
	struct torus_mpi_request *next;  /* posted receives */
	/* persistent (MPI_Send_init, MPI_Recv_init): what MPI_Start posts */
	int persistent, active, precv;
	const void *pbuf;
	int pcount, ppeer, ptag;
	MPI_Datatype ptype;
};

/* per source node: the message whose data comes next */
struct mpi_cur {
	struct mpi_msg *m;
};

struct mpi_state {
	int state;                       /* 0 before MPI_Init, 1 running, 2 finalized */
	emu_core_t *c;
	int rank, size, wall;
	MPI_Errhandler eh[2];            /* WORLD, SELF */
	coll_team_t *world, *self;
	uint32_t *world_members;
	dma_injfifo_t *fifo;
	uint32_t inj;
	struct mpi_cur *cur;
	uint32_t nsrc;
	struct mpi_msg *unexp_head, *unexp_tail;
	struct torus_mpi_request *posted;
	void *bsend_buf;                 /* MPI_Buffer_attach */
	int bsend_size;
};
extern struct mpi_state mpi_g;

int mpi_type_size(MPI_Datatype t);
int mpi_reduce_local(MPI_Datatype t, MPI_Op op, void *inout, const void *in, size_t n);
int mpi_coll_types(MPI_Datatype t, MPI_Op op, enum coll_dtype *dt, enum coll_op *cop);
/* The error handler of comm (fatal: prints, aborts the job); returns code. */
int mpi_error(MPI_Comm comm, int code, const char *fn, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
int mpi_comm_check(MPI_Comm comm, const char *fn, int *size);
int mpi_progress(int may_sleep);
void mpi_take(struct mpi_msg *m);
/* Blocking point-to-point for the collectives, any tag (theirs are < 0):
 * MPI_SUCCESS or an MPI error code, no handler called. */
int mpi_send_raw(const void *buf, uint64_t bytes, int dest, int tag, MPI_Comm comm);
int mpi_recv_raw(void *buf, uint64_t bytes, int src, int tag, MPI_Comm comm);
int mpi_sendrecv_raw(const void *sbuf, uint64_t sbytes, int dest, void *rbuf, uint64_t rbytes, int src, int tag,
		     MPI_Comm comm);

#endif
