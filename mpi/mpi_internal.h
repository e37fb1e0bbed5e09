/* Internals of libtorusmpi (mpi/). */
#ifndef TORUS_MPI_INTERNAL_H
#define TORUS_MPI_INTERNAL_H

#include "mpi.h"
#include "torus/coll.h"
#include "torus/dma.h"
#include "torus/emu.h"
#include "torus/trace.h"

#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#define TORUS_MPI_DISPATCH 200u /* memory-FIFO dispatch id of MPI messages (coll/ uses 250) */

/* What precedes every message. */
struct mpi_env {
	int32_t tag;
	uint32_t comm;
	int32_t src;    /* the sender's rank in comm */
	uint32_t sig;   /* a collective's message: its call's signature (mpi_coll_sig), else 0 */
	uint64_t len;   /* data bytes that follow */
};
/*
 * A collective's signature: its kind (enum mpi_coll_kind) in the top bits,
 * a hash of its operation, root, size and number on the communicator
 * below; never 0. A receive posted inside a collective takes only
 * messages of the same signature: another is a mismatched call
 * (MPI_ERR_OTHER, the two calls named). 23 bits: a short message's header
 * carries it beside its tag (mpi_p2p.c, wire_tag).
 */
enum mpi_coll_kind { MPI_CK_BARRIER = 1, MPI_CK_BCAST, MPI_CK_REDUCE, MPI_CK_ALLREDUCE, MPI_CK_GATHER, MPI_CK_GATHERV,
		     MPI_CK_SCATTER, MPI_CK_SCATTERV, MPI_CK_ALLGATHER, MPI_CK_ALLGATHERV, MPI_CK_ALLTOALL,
		     MPI_CK_ALLTOALLV, MPI_CK_ALLTOALLW, MPI_CK_REDUCE_SCATTER, MPI_CK_REDUCE_SCATTER_BLOCK,
		     MPI_CK_SCAN, MPI_CK_EXSCAN, MPI_CK_COUNT };
#define MPI_SIG_BITS 23u
#define MPI_SIG_KIND_SHIFT 18u

/* A message that arrived before its receive was posted (or is arriving). */
struct mpi_msg {
	struct mpi_env env;
	char *data;                      /* NULL: straight into req's buffer */
	uint64_t got;
	int complete;
	struct torus_mpi_request *req;   /* the receive that took it */
	struct mpi_msg *next;
	uint64_t any_key;                /* sent in any order: its name (per sender), else 0 */
	/* rendezvous: only its request to send came (the data stay at the sender) */
	int rzv;
	uint32_t node, region, trace;    /* the sender's node, its buffer's region, the trace tag */
	uint64_t sreq;                   /* the sender's name for the send */
};

/* Rendezvous (messages over the eager limit, and every synchronous send):
 * the sender registers its buffer and sends a request to send (user header
 * 4): the envelope, the region, and its name for the send. The receive
 * that takes it registers its own buffer, arms a counter with the bytes it
 * takes and gets them from the sender's region (a remote get: the sender's
 * DMA unit answers it without the sender's core); once the counter is zero
 * it tells the sender (user header 5: done), which completes the send. */
struct mpi_rts {
	struct mpi_env env;
	uint64_t sreq;
	uint32_t region, trace;          /* region: DMA_NO_COUNTER for no data */
};
struct mpi_fin {
	uint64_t sreq;
};
/* A control message: to post (node), then on its way out, freed once
 * every send has left. */
struct mpi_ctl {
	struct mpi_fin fin;
	uint32_t node;
	struct mpi_ctl *next;
};
#define MPI_EAGER_LIMIT 16384u          /* default; TORUS_MPI_EAGER_LIMIT sets it */

/* A short message's header: the packet says the source and the length. */
struct mpi_short {
	int32_t tag;
	uint16_t ctx;
	uint16_t src;                    /* the sender's rank in the communicator */
};
/* data bytes a message may carry in the packet of its header */
#define MPI_SHORT_BYTES (240u - sizeof(struct mpi_short))

struct torus_mpi_request {
	int send, done, proc_null;
	struct mpi_env env;              /* send: what goes out */
	char shortbuf[240];              /* send: a short message, envelope and data */
	void *buf;                       /* receive */
	uint64_t cap;
	uint32_t sig;                    /* receive posted in a collective: its signature, else 0 */
	uint64_t msg_len;                /* receive: the matched message's bytes (a truncation's error) */
	int src, tag;
	MPI_Comm comm;
	MPI_Status st;
	struct torus_mpi_request *next;  /* posted receives */
	/* persistent (MPI_Send_init, MPI_Recv_init): what MPI_Start posts */
	int persistent, active, precv, pmode; /* pmode: PMODE_* (mpi_request.c) */
	const void *pbuf;
	int pcount, ppeer, ptag;
	MPI_Datatype ptype;
	/* rendezvous. A send: rzv, its buffer's region; fin once the receiver
	 * has its data; freed (by MPI_Request_free) before that. A receive: rzv
	 * once it took a request to send from (node, sreq) for the sender's
	 * sregion; armed once its own region and counter are set up, asked
	 * once its get is posted; got: the bytes it takes. */
	int rzv, fin, freed, armed, asked;
	uint32_t node, trace, region, sregion, counter;
	uint64_t sreq, got;
	struct torus_mpi_request *rznext; /* the rendezvous list it is on */
	/* a receive of the collectives' own short messages, sent in any order
	 * (any): the name of the message from its source that completed it */
	int any;
	uint64_t any_key;
	/* a datatype that is not contiguous: the packed bytes (tmp); a
	 * receive unpacks them to (ubuf, ucount, utype) when it completes */
	void *tmp, *ubuf;
	int ucount;
	MPI_Datatype utype;
};

/* per node: the message whose data comes next from it. Messages sent in
 * any order are named 1, 2, ... per sender and receiver: the last one sent
 * to it, the last one from it handled here, and the last one from it whose
 * arrival this rank's clock has met (dma_recv_expect) */
struct mpi_cur {
	struct mpi_msg *m;
	uint64_t any_sent, any_got, any_met;
};

/* A communicator: its members (world ranks, i.e. nodes, and their core 0's
 * global core ranks), a context id that every member agreed on (messages
 * match within it), and the team its collectives run on. */
#define MPI_MAX_COMMS 1024
#define MPI_MAX_GROUPS 1024
struct mpi_comm {
	int used;
	uint32_t ctx;
	int size, rank;
	uint32_t *world;                 /* member i's world rank */
	uint32_t *members;               /* member i's global core rank */
	coll_team_t *team;
	/* the node team (its members' cores 0 .. ncores-1 as one member each,
	 * the helpers working with core 0) for large collectives with a
	 * multi-core algorithm; NULL if a member has one core */
	coll_team_t *nteam;
	uint32_t ncores;
	MPI_Errhandler eh;
	uint32_t coll_seq;               /* collective calls made on it */
	/* its topology (mpi_topo.c): MPI_CART (tdims: tn dims, then tn
	 * periods), MPI_GRAPH (tn nodes' index, then tnb edges), or 0 */
	int topo, tn, tnb;
	int *tdims;
	char name[MPI_MAX_OBJECT_NAME];  /* MPI_Comm_set_name */
};

/* What core 0 gives the node's other cores (mpi_help): the command goes
 * through the node's lockbox barrier, the rest here. */
enum mpi_help_cmd { MPI_HELP_NONE, MPI_HELP_QUIT, MPI_HELP_TEAM, MPI_HELP_FREE, MPI_HELP_ALLREDUCE,
		    MPI_HELP_ALLGATHER, MPI_HELP_REDUCE_SCATTER };
struct mpi_help {
	MPI_Comm h;                      /* the communicator */
	const uint32_t *nodes;           /* MPI_HELP_TEAM: its nodes */
	size_t n;
	uint32_t cores;
	const void *send;                /* the collectives: core 0's arguments */
	void *recv;
	size_t count;
	enum coll_dtype dt;
	enum coll_op op;
};
/* Large collectives go to the node's cores from this many bytes on. */
#define MPI_MULTICORE_BYTES 65536u
struct mpi_group {
	int used;
	int n;
	uint32_t *world;                 /* member i's world rank */
};

/* User operations (MPI_Op_create): handles from MPI_USER_OP0 on. */
#define MPI_USER_OP0 100
#define MPI_MAX_USER_OPS 256
struct mpi_user_op {
	MPI_User_function *fn; /* NULL: a free slot */
	int commute;
	/* MPI_PACKED_OP only: the data are packed elements of this derived
	 * type, carried as MPI_BYTE (mpi_combine unpacks them for fn) */
	MPI_Datatype packed;
};
/* The handle of a user operation on a derived type while a reduction runs
 * it on packed bytes (mpi_coll.c's red_derived); not the program's. */
#define MPI_PACKED_OP (MPI_USER_OP0 + MPI_MAX_USER_OPS)

/* User error handlers: handles from MPI_USER_EH0 on. */
#define MPI_USER_EH0 16
#define MPI_MAX_USER_EHS 64

struct mpi_state {
	int state;                       /* 0 before MPI_Init, 1 running, 2 finalized */
	emu_core_t *c;
	int rank, size, wall;            /* in MPI_COMM_WORLD */
	struct mpi_comm comms[MPI_MAX_COMMS]; /* by handle: 1 WORLD, 2 SELF */
	struct mpi_group groups[MPI_MAX_GROUPS]; /* by handle: 1 MPI_GROUP_EMPTY */
	uint32_t next_ctx;               /* context ids below it are taken here */
	dma_injfifo_t *fifo;
	uint32_t inj;
	int sends_out;                   /* inj may be nonzero: sends posted since it was seen zero */
	struct mpi_cur *cur;
	uint32_t nsrc;
	uint32_t arriving;               /* the source whose message began arriving last */
	struct mpi_msg *unexp_head, *unexp_tail;
	struct torus_mpi_request *posted;
	void *bsend_buf;                 /* MPI_Buffer_attach */
	int bsend_size;
	uint64_t bsend_used;             /* bytes of it holding messages not known to have left */
	uint64_t eager_limit;            /* larger messages go by rendezvous */
	uint32_t rz_send_regions;        /* regions rendezvous sends hold (at most half) */
	/* rendezvous lists, in order: sends waiting to be done; receives to
	 * set up (region, counter, get); receives waiting for their data */
	struct torus_mpi_request *rz_wait, *rz_setup, *rz_recv;
	struct mpi_ctl *ctl;             /* control messages not known to have left */
	struct mpi_ctl *ctl_q, **ctl_tail; /* control messages to post, in order */
	struct mpi_user_op ops[MPI_MAX_USER_OPS]; /* MPI_Op_create */
	struct mpi_user_op packed_op;    /* MPI_PACKED_OP */
	MPI_Comm_errhandler_function *ehs[MPI_MAX_USER_EHS]; /* MPI_Comm_create_errhandler */
	uint32_t ncores;                 /* this node's cores: 1 + its helpers */
	uint64_t multicore_bytes;        /* TORUS_MPI_MULTICORE_BYTES */
	/* command k's arguments in help[k % 2]: core 0 writes command k + 1's
	 * while the helpers may still read command k's, and cannot write
	 * k + 2's before every helper has come back for k + 1 */
	struct mpi_help help[2];
	uint64_t help_seq;
	/* the collective call under way (its signature; depth: calls inside
	 * it, which keep it), and the last mismatch a receive found */
	uint32_t coll_sig, coll_depth;
	uint32_t bad_sig, bad_mine;
	int bad_src;
	/* collectives' messages (a signature) sent, and taken by a receive:
	 * equal over the job at MPI_Finalize, or some call did not match */
	uint64_t coll_sent, coll_taken;
};
extern struct mpi_state mpi_g;

static inline struct mpi_comm *mpi_comm_of(MPI_Comm c)
{
	return c > 0 && c < MPI_MAX_COMMS && mpi_g.comms[c].used ? &mpi_g.comms[c] : NULL;
}

int mpi_type_size(MPI_Datatype t); /* a predefined type's, else 0 */
/* n bytes from s to d, which may overlap; nothing (and either may be NULL,
 * as a zero-count buffer may) when n is 0 */
static inline void mpi_copy(void *d, const void *s, size_t n)
{
	if (n)
		memmove(d, s, n);
}
/* Derived datatypes (mpi_type.c): handles from MPI_TYPE0 on. */
#define MPI_TYPE0 1000
#define MPI_MAX_TYPES 1024
struct mpi_type_info {
	uint64_t size;    /* data bytes of one element */
	MPI_Aint extent;
	int contig;       /* elements are contiguous bytes: no packing */
	uint64_t nbasic;  /* predefined elements in one element */
	MPI_Datatype basic; /* the predefined type of all of them, or MPI_DATATYPE_NULL (mixed, or none) */
};
/* Any type (committed, if asked): 0 and *out, or -1. */
int mpi_type_info(MPI_Datatype t, int committed, struct mpi_type_info *out);
/* count elements of t at buf to count * size packed bytes at out, and back
 * (at most `bytes` of them: a truncated message) */
void mpi_pack(const void *buf, int count, MPI_Datatype t, void *out);
void mpi_unpack(const void *in, uint64_t bytes, void *buf, int count, MPI_Datatype t);
/* The predefined elements in `bytes` bytes of a run of elements of t (the
 * last one possibly partial), or -1 if they end inside one. */
int64_t mpi_type_elements(MPI_Datatype t, uint64_t bytes);
/* The bytes count elements of t at buf touch: [buf + *lo, buf + *hi). 0, or -1. */
int mpi_type_span(MPI_Datatype t, int count, MPI_Aint *lo, MPI_Aint *hi);
int mpi_reduce_local(MPI_Datatype t, MPI_Op op, void *inout, const void *in, size_t n);
/* op's user operation, or NULL (a predefined or unknown op). */
const struct mpi_user_op *mpi_user_op(MPI_Op op);
/* right = left op right (left: the lower ranks' part), n elements of t;
 * predefined operations commute. 0, or -1 if op is not defined on t. */
int mpi_combine(MPI_Datatype t, MPI_Op op, const void *left, void *right, size_t n);
/* Does op commute (predefined ones do)? */
int mpi_op_commutes(MPI_Op op);
int mpi_coll_types(MPI_Datatype t, MPI_Op op, enum coll_dtype *dt, enum coll_op *cop);
/* The error handler of comm (fatal: prints, aborts the job); returns code. */
int mpi_error(MPI_Comm comm, int code, const char *fn, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
int mpi_comm_check(MPI_Comm comm, const char *fn, int *size);
/* A new communicator of these members (world ranks, my rank `rank` among
 * them), with the context id ctx: its handle, or MPI_COMM_NULL. */
MPI_Comm mpi_comm_new(const uint32_t *world, int n, int rank, uint32_t ctx, MPI_Errhandler eh);
void mpi_comm_release(struct mpi_comm *cm);
/* Give `to` a copy of from's topology (MPI_Comm_dup). 0, or -1. */
int mpi_topo_copy(MPI_Comm from, MPI_Comm to);
/* Handle what has arrived; may_sleep: 0 never, 1 until something arrives
 * or the sends have left, MPI_PROGRESS_RECV until something arrives. */
#define MPI_PROGRESS_RECV 2
int mpi_progress(int may_sleep);
/* Core 0: give the helpers a command and its arguments (job: NULL for none). */
int mpi_help(enum mpi_help_cmd cmd, const struct mpi_help *job);
void mpi_take(struct mpi_msg *m);
/* Point-to-point and requests (mpi_p2p.c, mpi_request.c). */
/* The handler of MPI's packets (registered by MPI_Init): envelopes and
 * data, in order per source; requests to send and their answers. */
int mpi_on_packet(emu_core_t *c, const struct dma_recv_info *info, const void *payload, void *arg);
/* Have all this rank's sends left (one injection counter)? 1, 0, or a
 * negative error. */
int mpi_send_done(void);
/* Is send r complete (its packets, and a rendezvous' data, have left)? 1,
 * 0, or a negative error. */
int mpi_send_complete(const struct torus_mpi_request *r);
/* How a send goes: eager up to the eager limit and by rendezvous above
 * it; or always by rendezvous (synchronous sends: the answer proves the
 * receive started). */
enum send_mode { SEND_AUTO, SEND_RZV };
/* Post a message of `bytes` bytes at buf to dest; r completes when it has
 * left (a rendezvous: once the receiver has its data). 0, or an error. */
int mpi_post_send(const void *buf, uint64_t bytes, int dest, int tag, MPI_Comm comm, struct torus_mpi_request *r,
		  enum send_mode mode);
/* Post receive r: it takes the first unexpected message that fits, or
 * waits on the posted queue. 0. */
int mpi_post_recv(void *buf, uint64_t cap, int src, int tag, MPI_Comm comm, struct torus_mpi_request *r);
/* A point-to-point call's arguments checked (fn: the call, for errors;
 * recv: wildcards allowed): MPI_SUCCESS, or the handler's code. */
int mpi_check_p2p(const char *fn, const void *buf, int count, MPI_Datatype t, int peer, int tag, MPI_Comm comm,
		  int recv);
/* count elements of t to send: their bytes, and where they are contiguous
 * (*src: buf, or *tmp, malloc'd and packed, which the caller frees). 0, or
 * -1 out of memory. */
int mpi_send_bytes(const void *buf, int count, MPI_Datatype t, uint64_t *bytes, void **tmp, const void **src);
/* Where receive r lands (buf, or r->tmp to unpack at completion), and its
 * capacity in *bytes. 0, or -1 out of memory. */
int mpi_recv_place(struct torus_mpi_request *r, void *buf, int count, MPI_Datatype t, void **where,
		   uint64_t *bytes);
/* Wait for request r (a send or a receive) and fill status: 0, or an MPI
 * error code. */
int mpi_wait_request(struct torus_mpi_request *r, MPI_Status *status);
/* The status of a receive from MPI_PROC_NULL (st may be NULL). */
void mpi_null_status(MPI_Status *st);
/* A new request, zeroed (NULL: out of memory); mpi_request_free frees one
 * and its packing buffer. */
struct torus_mpi_request *mpi_request_new(void);
void mpi_request_free(struct torus_mpi_request *r);
/* Blocking point-to-point for the collectives, any tag (theirs are < 0):
 * MPI_SUCCESS or an MPI error code, no handler called. */
/* A collective call starts (kind, its operation or 0, root or 0, the data
 * bytes every rank gives alike or 0): the returned depth goes to
 * mpi_coll_leave when it returns (MPI_COLL_CALL does both). */
uint32_t mpi_coll_enter(MPI_Comm comm, enum mpi_coll_kind kind, MPI_Op op, int root, uint64_t bytes);
void mpi_coll_leave(uint32_t *depth);
#define MPI_COLL_CALL(comm, kind, op, root, bytes)                                                                \
	__attribute__((cleanup(mpi_coll_leave))) uint32_t mpi_coll_depth_ = mpi_coll_enter(comm, kind, op, root, bytes); \
	(void)mpi_coll_depth_
/* The call a signature names ("MPI_Bcast"). */
const char *mpi_coll_name(uint32_t sig);
int mpi_send_raw(const void *buf, uint64_t bytes, int dest, int tag, MPI_Comm comm);
int mpi_recv_raw(void *buf, uint64_t bytes, int src, int tag, MPI_Comm comm);
/* The same, not blocking: r (the caller's, alive until mpi_wait_raw
 * returns) is posted; mpi_wait_raw waits for it. Messages between two
 * ranks with one tag match in the order they were posted. */
int mpi_isend_raw(struct torus_mpi_request *r, const void *buf, uint64_t bytes, int dest, int tag, MPI_Comm comm);
void mpi_irecv_raw(struct torus_mpi_request *r, void *buf, uint64_t bytes, int src, int tag, MPI_Comm comm);
int mpi_wait_raw(struct torus_mpi_request *r);
/* Compute time (mpi_compute.c): every public MPI function starts with
 * MPI_API(), which charges the rank's clock for the program's work since
 * the last call returned (torusrun --compute-speed, --compute-cpi). */
struct mpi_api {
	int outer;
};
/* (free work, the default: nothing but this test on every call) */
extern int mpi_compute_mode;
struct mpi_api mpi_api_charge(void);
void mpi_api_stamp(void);
static inline struct mpi_api mpi_api_enter(void)
{
	return mpi_compute_mode ? mpi_api_charge() : (struct mpi_api){0};
}
static inline void mpi_api_leave(struct mpi_api *a)
{
	if (a->outer)
		mpi_api_stamp();
}
#define MPI_API()                                                                                                \
	__attribute__((cleanup(mpi_api_leave))) struct mpi_api mpi_api_ = mpi_api_enter();                          \
	(void)mpi_api_
/* TORUS_MPI_COMPUTE read at MPI_Init: 0, or a negative errno and why. */
int mpi_compute_init(char *why, size_t len);
/* Post a DMA descriptor on the rank's injection FIFO (every descriptor
 * of the rank goes there, so those for one node arrive in order),
 * handling arrivals while it is full. */
int mpi_post_desc(struct dma_desc *d);
/* The trace tag (TORUS_TAG) of a collective's own message tag (mpi_coll.c's TAG_*). */
uint32_t mpi_coll_trace(int tag);
/* mpi_rooted.c: gather and scatter through relays on the root's axes.
 * via[i] (p entries) gets the member that carries member i's block to the
 * root (out = 0: a gather) or from it (out = 1: a scatter): i itself, or a
 * relay. 0, or -1 out of memory. */
int mpi_rooted_plan(MPI_Comm comm, int root, int out, int *via);
/* Blocks of `block` bytes: the root's recv holds p of them, its own
 * already in place, the others send `mine`; and the reverse (the root
 * copies its own). MPI_SUCCESS or an MPI error code, no handler called. */
int mpi_gather_torus(const void *mine, void *recv, uint64_t block, int root, int tag, MPI_Comm comm);
int mpi_scatter_torus(const void *send, void *mine, uint64_t block, int root, int tag, MPI_Comm comm);
int mpi_sendrecv_raw(const void *sbuf, uint64_t sbytes, int dest, void *rbuf, uint64_t rbytes, int src, int tag,
		     MPI_Comm comm);

#endif
