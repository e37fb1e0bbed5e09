/*
 * One-sided communication (MPI-2) on the DMA unit, as Blue Gene/P did it:
 * MPI_Put is a direct put into the target's window, MPI_Get a remote get
 * that the target's DMA unit serves without its core, and counters tell
 * completion.
 *
 * A window: its memory registered as a DMA region; a lock area, registered
 * too (below); six counters: puts of fence epochs land on k0, of PSCW
 * epochs on k0 + 1, of lock epochs on k0 + 2 (never waited on), the
 * member's own gets on k0 + 3, its puts' injection on k0 + 4, and the
 * wakes of a member waiting for a lock on k0 + 5. The
 * members learn each other's regions and counters when it is created.
 *
 * Epochs.
 *   fence     each member counts the bytes it put and the accumulates it
 *             sent to every target; MPI_Win_fence completes its own gets
 *             and puts, tells every target its two counts (MPI_Alltoall),
 *             applies the accumulates origin by origin, waits until its
 *             counter has seen every byte, and meets the others
 *             (MPI_Barrier), so that no access of the next epoch can
 *             overtake one of this.
 *   PSCW      MPI_Win_post tells each origin of the group; MPI_Win_start
 *             waits to be told by each target; MPI_Win_complete sends each
 *             target what it put and how many accumulates; MPI_Win_wait
 *             applies those and waits for the bytes.
 *   lock      a lock is Lamport's bakery in the target's lock area
 *             (choosing[p], number[p]), taken with puts and gets alone: the
 *             target's core takes no part, so a target that computes, or
 *             waits in a barrier, never holds up another's lock. A member
 *             behind a smaller ticket sleeps until a release wakes it
 *             (the releaser reads the tickets and puts to each holder's
 *             wake counter), so a lock never released is a hung job. A shared
 *             lock is taken as an exclusive one (a correct program cannot
 *             tell, but for the time it waits). MPI_Win_unlock releases
 *             with a put behind the epoch's data and then gets 4 bytes from
 *             the target: a member's descriptors leave by one injection
 *             FIFO on one route and arrive in order, so when that get's
 *             reply is in, so are the puts before it.
 *
 * Accumulates in fence and PSCW epochs travel as messages (a header, then
 * the data) and the target applies them in its synchronisation call,
 * origin by origin in rank order, each origin's in the order it sent them
 * (the same order on every run). In a lock epoch the origin applies
 * it under the lock: it gets the target's data, combines, puts it back.
 *
 * Gets land in the origin's own buffer, registered for the epoch (a
 * datatype that is not contiguous: a packed copy, unpacked at completion);
 * when no region is left, through the window's bounce buffer, in pieces.
 * Target datatypes must be contiguous. Every DMA descriptor carries the
 * trace tag one-sided put, get, accumulate or sync.
 */
#include "mpi_internal.h"

#include <errno.h>
#include <stdlib.h>

#define MPI_MAX_WINS 64
#define WIN_BOUNCE 65536u /* bytes of the bounce buffer, in the local area */
/* the window's messages between its members (their communicator is the
 * window's own) */
enum { TAG_ACC_HDR = -40, TAG_ACC_DATA = -41, TAG_POST = -42, TAG_DONE = -43 };
enum { K_FENCE, K_PSCW, K_PASSIVE, K_GETS, K_INJ, K_WAKE, K_COUNT };

struct win_peer {
	uint32_t node, region, lregion, k0;
	uint64_t bytes;
	int32_t disp_unit, ok;
};

struct acc_hdr {
	uint64_t off, bytes;
	int32_t type, op;
};

/* what an epoch must finish: a get's landing region, or an accumulate's
 * messages, or memory to free once the puts have left */
struct rma_pending {
	int kind; /* PEND_GET, PEND_ACC, PEND_FREE */
	uint32_t region;
	void *tmp;
	void *ubuf;
	int ucount;
	MPI_Datatype utype;
	struct acc_hdr hdr;
	struct torus_mpi_request hr, dr;
	struct rma_pending *next;
};
enum { PEND_GET = 1, PEND_ACC, PEND_FREE };

struct mpi_win {
	int used;
	MPI_Comm comm;
	int rank, size;
	void *base;
	MPI_Aint bytes;
	int disp_unit;
	uint32_t region, lregion, k0;
	int have_region, have_lregion, have_k;
	/* the lock area: choosing[p], number[p] (the part others read),
	 * snap[2p] (where this member's gets of another's land), then the
	 * words it puts from (one, zero, its number), the 4 bytes a flush
	 * gets, and the bounce buffer */
	uint32_t *larea;
	size_t larea_bytes;
	struct win_peer *peer;
	uint64_t *count; /* per target: bytes put, accumulates sent (fence and PSCW) */
	struct rma_pending *pend;
	int fence;       /* a fence epoch is open */
	int *start, nstart, *post, npost;
	uint8_t *locked; /* per target: 0, 1 locked, 2 without a lock (MPI_MODE_NOCHECK) */
};

static struct mpi_win wins[MPI_MAX_WINS]; /* handle h is wins[h - 1] */

static struct mpi_win *win_of(MPI_Win h) { return h > 0 && h <= MPI_MAX_WINS && wins[h - 1].used ? &wins[h - 1] : NULL; }

static int bad_win(const char *fn) { return mpi_error(MPI_COMM_WORLD, MPI_ERR_WIN, fn, "not a window"); }

/* words of the lock area past the two exposed arrays and snap */
static uint32_t *word(struct mpi_win *w, int k) { return w->larea + 4 * (size_t)w->size + k; }
enum { W_ONE, W_ZERO, W_NUMBER, W_FLUSH, W_WAKE, W_WORDS = 8 };
static uint64_t snap_off(const struct mpi_win *w) { return 2 * (uint64_t)w->size * 4; }
static uint64_t bounce_off(const struct mpi_win *w) { return (4 * (uint64_t)w->size + W_WORDS) * 4; }

static uint32_t rma_tag(int what) { return TORUS_TAG(TORUS_TAG_RMA, 0, what, 0, 0); }

/* ------------------------------------------------------------ waiting */

/* Wait until counter id is zero, handling what arrives meanwhile (the
 * get replies we wait for may queue behind messages for us). */
static int wait_counter(uint32_t id)
{
	for (;;) {
		int zero = 0, rc = dma_counter_test(mpi_g.c, id, &zero);
		if (rc || zero)
			return rc;
		if ((rc = mpi_progress(0)))
			return rc;
		rc = dma_recfifo_wait_counter(mpi_g.c, id, -1, &zero);
		if (rc && rc != -ETIMEDOUT)
			return rc;
		if (zero)
			return 0;
	}
}

static int post(struct dma_desc *d, int what)
{
	d->tag = rma_tag(what);
	return mpi_post_desc(d);
}

/* A put of len bytes from src to (target, region, off), counted on the
 * target's counter k and on our injection counter. */
static int put_to(struct mpi_win *w, int t, const void *src, uint64_t len, uint32_t region, uint64_t off, int k,
		  int what)
{
	if (!len)
		return 0;
	struct dma_desc d;
	int rc = dma_counter_add(mpi_g.c, w->k0 + K_INJ, (int64_t)len);
	if (rc)
		return rc;
	dma_desc_put(&d, w->peer[t].node, src, len, region, off, w->peer[t].k0 + (uint32_t)k, w->k0 + K_INJ);
	if ((rc = post(&d, what)))
		dma_counter_add(mpi_g.c, w->k0 + K_INJ, -(int64_t)len);
	return rc;
}

/* A get of len bytes from (target, region, off) into our (lregion, loff),
 * waited for. */
static int get_now(struct mpi_win *w, int t, uint32_t region, uint64_t off, uint64_t len, uint32_t lregion,
		   uint64_t loff, int what)
{
	struct dma_desc d;
	int rc = dma_counter_add(mpi_g.c, w->k0 + K_GETS, (int64_t)len);
	if (rc)
		return rc;
	dma_desc_get(&d, w->peer[t].node, region, off, len, lregion, loff, w->k0 + K_GETS);
	if ((rc = post(&d, what))) {
		dma_counter_add(mpi_g.c, w->k0 + K_GETS, -(int64_t)len);
		return rc;
	}
	return wait_counter(w->k0 + K_GETS);
}

/* Finish what this member started in the epoch: its gets are in (and
 * unpacked), its accumulate messages and puts have left. */
static int complete_local(struct mpi_win *w)
{
	int rc = wait_counter(w->k0 + K_GETS);
	for (struct rma_pending *q = w->pend; q; q = q->next)
		if (q->kind == PEND_ACC) {
			int r1 = mpi_wait_raw(&q->hr), r2 = mpi_wait_raw(&q->dr);
			rc = rc ? rc : r1 ? r1 : r2;
		}
	int wr = wait_counter(w->k0 + K_INJ);
	rc = rc ? rc : wr;
	while (w->pend) {
		struct rma_pending *q = w->pend;
		w->pend = q->next;
		if (q->kind == PEND_GET) {
			dma_mem_deregister(mpi_g.c, q->region);
			if (q->tmp && !rc)
				mpi_unpack(q->tmp, (uint64_t)-1, q->ubuf, q->ucount, q->utype);
		}
		free(q->tmp);
		free(q);
	}
	return rc;
}

/* ------------------------------------------------------------ creation */

int MPI_Win_create(void *base, MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, MPI_Win *win)
{
	MPI_API();
	int n = 0, rc = mpi_comm_check(comm, "MPI_Win_create", &n);
	if (rc)
		return rc;
	if (!win || size < 0 || disp_unit <= 0 || (size > 0 && !base))
		return mpi_error(comm, size < 0 ? MPI_ERR_SIZE : disp_unit <= 0 ? MPI_ERR_DISP : MPI_ERR_ARG,
				 "MPI_Win_create", "size %lld, disp_unit %d, base %p, win %p", (long long)size, disp_unit,
				 base, (void *)win);
	(void)info; /* hints: none read */
	struct mpi_win *w = NULL, spare;
	for (int i = 0; i < MPI_MAX_WINS && !w; i++)
		if (!wins[i].used)
			w = &wins[i];
	/* every member goes through the same collective steps, whatever fails
	 * locally, and all fail alike */
	int err = 0;
	MPI_Comm wc = MPI_COMM_NULL;
	if ((rc = MPI_Comm_dup(comm, &wc)))
		return rc;
	if (!w) {
		err = MPI_ERR_OTHER; /* all windows in use */
		w = &spare; /* (to go through the steps with) */
	}
	memset(w, 0, sizeof(*w));
	w->comm = wc;
	w->rank = mpi_comm_of(wc)->rank;
	w->size = n;
	w->base = base;
	w->bytes = size;
	w->disp_unit = disp_unit;
	w->larea_bytes = bounce_off(w) + WIN_BOUNCE;
	w->larea = calloc(1, w->larea_bytes);
	w->peer = calloc((size_t)n, sizeof(*w->peer));
	w->count = calloc(2 * (size_t)n, sizeof(uint64_t));
	w->locked = calloc((size_t)n, 1);
	if (!err && (!w->larea || !w->peer || !w->count || !w->locked))
		err = MPI_ERR_NO_MEM;
	emu_core_t *c = mpi_g.c;
	if (!err && size > 0) {
		if (dma_mem_register(c, base, (size_t)size, &w->region))
			err = MPI_ERR_OTHER;
		else
			w->have_region = 1;
	}
	if (!err) {
		if (dma_mem_register(c, w->larea, w->larea_bytes, &w->lregion))
			err = MPI_ERR_OTHER;
		else
			w->have_lregion = 1;
	}
	if (!err) {
		if (dma_counter_alloc_n(c, K_COUNT, &w->k0))
			err = MPI_ERR_OTHER;
		else
			w->have_k = 1;
	}
	if (!err) {
		*word(w, W_ONE) = 1;
		*word(w, W_ZERO) = 0;
	}
	struct win_peer mine = {emu_node_rank(c), w->have_region ? w->region : DMA_NO_COUNTER, w->lregion, w->k0,
				(uint64_t)size, disp_unit, !err};
	struct win_peer *all = w->peer ? w->peer : calloc((size_t)n, sizeof(*all));
	if (!all)
		return mpi_error(comm, MPI_ERR_NO_MEM, "MPI_Win_create", "out of memory");
	rc = MPI_Allgather(&mine, (int)sizeof(mine), MPI_BYTE, all, (int)sizeof(mine), MPI_BYTE, wc);
	int bad = rc != 0;
	for (int i = 0; !bad && i < n; i++)
		bad = !all[i].ok;
	if (all != w->peer)
		free(all);
	if (bad || err) {
		if (w->have_k)
			dma_counter_free_n(c, w->k0, K_COUNT);
		if (w->have_lregion)
			dma_mem_deregister(c, w->lregion);
		if (w->have_region)
			dma_mem_deregister(c, w->region);
		free(w->larea);
		free(w->peer);
		free(w->count);
		free(w->locked);
		memset(w, 0, sizeof(*w));
		MPI_Comm_free(&wc);
		return mpi_error(comm, err ? err : MPI_ERR_OTHER, "MPI_Win_create",
				 err == MPI_ERR_NO_MEM ? "out of memory"
				 : err		     ? "no window, DMA region or counter left for it (here)"
						     : "another member could not create its part");
	}
	w->used = 1;
	*win = (MPI_Win)(w - wins) + 1;
	/* a window's errors go to its own handler, MPI_ERRORS_ARE_FATAL until
	 * MPI_Win_set_errhandler (its private communicator carries it) */
	mpi_comm_of(wc)->eh = MPI_ERRORS_ARE_FATAL;
	return MPI_SUCCESS;
}

int MPI_Win_set_errhandler(MPI_Win win, MPI_Errhandler errhandler)
{
	MPI_API();
	struct mpi_win *w = win_of(win);
	if (!w)
		return bad_win("MPI_Win_set_errhandler");
	return MPI_Comm_set_errhandler(w->comm, errhandler);
}

int MPI_Win_get_errhandler(MPI_Win win, MPI_Errhandler *errhandler)
{
	MPI_API();
	struct mpi_win *w = win_of(win);
	if (!w)
		return bad_win("MPI_Win_get_errhandler");
	return MPI_Comm_get_errhandler(w->comm, errhandler);
}

int MPI_Win_free(MPI_Win *win)
{
	MPI_API();
	struct mpi_win *w = win ? win_of(*win) : NULL;
	if (!w)
		return bad_win("MPI_Win_free");
	if (w->nstart || w->npost)
		return mpi_error(w->comm, MPI_ERR_RMA_SYNC, "MPI_Win_free", "a PSCW epoch is still open");
	for (int t = 0; t < w->size; t++)
		if (w->locked[t])
			return mpi_error(w->comm, MPI_ERR_RMA_SYNC, "MPI_Win_free", "rank %d is still locked", t);
	int rc = complete_local(w);
	/* nobody may still read or write this member's memory */
	int brc = MPI_Barrier(w->comm);
	emu_core_t *c = mpi_g.c;
	dma_counter_free_n(c, w->k0, K_COUNT);
	dma_mem_deregister(c, w->lregion);
	if (w->have_region)
		dma_mem_deregister(c, w->region);
	MPI_Comm wc = w->comm;
	free(w->larea);
	free(w->peer);
	free(w->count);
	free(w->locked);
	free(w->start);
	free(w->post);
	memset(w, 0, sizeof(*w));
	MPI_Comm_free(&wc);
	*win = MPI_WIN_NULL;
	return rc ? mpi_error(MPI_COMM_WORLD, MPI_ERR_INTERN, "MPI_Win_free", "a transfer failed") : brc;
}

int MPI_Win_get_attr(MPI_Win win, int keyval, void *attribute_val, int *flag)
{
	MPI_API();
	struct mpi_win *w = win_of(win);
	if (!w)
		return bad_win("MPI_Win_get_attr");
	if (!attribute_val || !flag)
		return mpi_error(w->comm, MPI_ERR_ARG, "MPI_Win_get_attr", "NULL attribute_val or flag");
	*flag = 1;
	if (keyval == MPI_WIN_BASE)
		memcpy(attribute_val, &w->base, sizeof(void *)); /* the base itself */
	else if (keyval == MPI_WIN_SIZE)
		*(MPI_Aint **)attribute_val = &w->bytes; /* pointers to the values */
	else if (keyval == MPI_WIN_DISP_UNIT)
		*(int **)attribute_val = &w->disp_unit;
	else
		*flag = 0;
	return MPI_SUCCESS;
}

int MPI_Win_get_group(MPI_Win win, MPI_Group *group)
{
	MPI_API();
	struct mpi_win *w = win_of(win);
	if (!w)
		return bad_win("MPI_Win_get_group");
	return MPI_Comm_group(w->comm, group);
}

/* ------------------------------------------------------------ access */

/* Which counter of t's an access lands on now (K_FENCE, K_PSCW,
 * K_PASSIVE), or -1 outside every access epoch to t. */
static int epoch_of(const struct mpi_win *w, int t)
{
	if (w->locked[t])
		return K_PASSIVE;
	for (int i = 0; i < w->nstart; i++)
		if (w->start[i] == t)
			return K_PSCW;
	return w->fence ? K_FENCE : -1;
}

/* The checks every access shares: the window, the target, the epoch, the
 * types (the target's contiguous, the sizes equal) and the range. 0 and
 * the access in *a, or an MPI error (handled); a->k = -1 for
 * MPI_PROC_NULL. */
struct access {
	struct mpi_win *w;
	struct mpi_type_info oi, ti;
	int k; /* the target's counter (K_FENCE, K_PSCW, K_PASSIVE), -1: nothing to do */
	uint64_t off, len;
};

static int access_check(const char *fn, MPI_Win win, int ocount, MPI_Datatype otype, int t, MPI_Aint disp, int tcount,
			MPI_Datatype ttype, struct access *a)
{
	struct mpi_win *w = a->w = win_of(win);
	struct mpi_type_info *oi = &a->oi, *ti = &a->ti;
	int *k = &a->k;
	uint64_t *off = &a->off, *len = &a->len;
	*k = -1;
	if (!w)
		return bad_win(fn);
	if (t == MPI_PROC_NULL)
		return 0;
	if (t < 0 || t >= w->size)
		return mpi_error(w->comm, MPI_ERR_RANK, fn, "target %d of %d", t, w->size);
	if (ocount < 0 || tcount < 0)
		return mpi_error(w->comm, MPI_ERR_COUNT, fn, "counts %d and %d", ocount, tcount);
	if (mpi_type_info(otype, 1, oi) || mpi_type_info(ttype, 1, ti))
		return mpi_error(w->comm, MPI_ERR_TYPE, fn, "an unknown or uncommitted datatype");
	if (!ti->contig)
		return mpi_error(w->comm, MPI_ERR_TYPE, fn, "the target's datatype must be contiguous");
	*len = (uint64_t)ocount * oi->size;
	/* the type signatures: one predefined type on each side must be the
	 * same one (MPI_BYTE goes with anything) */
	if (oi->basic != MPI_DATATYPE_NULL && ti->basic != MPI_DATATYPE_NULL && oi->basic != ti->basic &&
	    oi->basic != MPI_BYTE && ti->basic != MPI_BYTE && *len)
		return mpi_error(w->comm, MPI_ERR_TYPE, fn, "the origin's and the target's types differ");
	if (*len != (uint64_t)tcount * ti->size)
		return mpi_error(w->comm, MPI_ERR_TYPE, fn, "%llu bytes from the origin, %llu at the target",
				 (unsigned long long)*len, (unsigned long long)((uint64_t)tcount * ti->size));
	if (disp < 0)
		return mpi_error(w->comm, MPI_ERR_DISP, fn, "displacement %lld", (long long)disp);
	*off = (uint64_t)disp * (uint64_t)w->peer[t].disp_unit;
	if (*off > w->peer[t].bytes || *len > w->peer[t].bytes - *off)
		return mpi_error(w->comm, MPI_ERR_RMA_RANGE, fn, "bytes %llu to %llu of a window of %llu at rank %d",
				 (unsigned long long)*off, (unsigned long long)(*off + *len),
				 (unsigned long long)w->peer[t].bytes, t);
	*k = epoch_of(w, t);
	if (*k < 0)
		return mpi_error(w->comm, MPI_ERR_RMA_SYNC, fn, "no access epoch to rank %d is open", t);
	return 0;
}

/* The origin's bytes, contiguous: the buffer itself, or a packed copy
 * (*tmp, kept until the epoch ends). */
static const void *origin_bytes(const void *buf, int count, MPI_Datatype t, const struct mpi_type_info *oi,
				uint64_t len, void **tmp)
{
	*tmp = NULL;
	if (oi->contig)
		return buf;
	if (!(*tmp = malloc(len ? len : 1)))
		return NULL;
	mpi_pack(buf, count, t, *tmp);
	return *tmp;
}

static int keep(struct mpi_win *w, struct rma_pending *q)
{
	q->next = w->pend;
	w->pend = q;
	return 0;
}

int MPI_Put(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank,
	    MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Win win)
{
	MPI_API();
	struct access a;
	int rc = access_check("MPI_Put", win, origin_count, origin_datatype, target_rank, target_disp, target_count,
			      target_datatype, &a);
	if (rc || a.k < 0 || !a.len)
		return rc;
	struct mpi_win *w = a.w;
	int k = a.k;
	uint64_t off = a.off, len = a.len;
	const struct mpi_type_info oi = a.oi;
	void *tmp;
	const void *src = origin_bytes(origin_addr, origin_count, origin_datatype, &oi, len, &tmp);
	struct rma_pending *q = tmp ? calloc(1, sizeof(*q)) : NULL;
	if (!src || (tmp && !q)) {
		free(tmp);
		return mpi_error(w->comm, MPI_ERR_NO_MEM, "MPI_Put", "out of memory");
	}
	if (q) {
		q->kind = PEND_FREE;
		q->tmp = tmp;
		keep(w, q);
	}
	if ((rc = put_to(w, target_rank, src, len, w->peer[target_rank].region, off, k, TORUS_RMA_PUT)))
		return mpi_error(w->comm, MPI_ERR_INTERN, "MPI_Put", "the DMA unit refused the put (%d)", rc);
	if (k != K_PASSIVE)
		w->count[2 * target_rank] += len;
	return MPI_SUCCESS;
}

/* A get straight into the origin's memory (registered for the epoch), or,
 * with no region left, through the bounce buffer in pieces, waited for. */
static int get_into(struct mpi_win *w, int t, uint64_t off, uint64_t len, void *dst, struct rma_pending *q)
{
	emu_core_t *c = mpi_g.c;
	int rc = dma_mem_register(c, dst, len, &q->region);
	if (rc == DMA_ERR_NOSPACE && !(rc = complete_local(w)))
		rc = dma_mem_register(c, dst, len, &q->region); /* the epoch's gets gave theirs back */
	if (!rc) {
		struct dma_desc d;
		if ((rc = dma_counter_add(c, w->k0 + K_GETS, (int64_t)len)))
			return rc;
		dma_desc_get(&d, w->peer[t].node, w->peer[t].region, off, len, q->region, 0, w->k0 + K_GETS);
		if ((rc = post(&d, TORUS_RMA_GET))) {
			dma_counter_add(c, w->k0 + K_GETS, -(int64_t)len);
			dma_mem_deregister(c, q->region);
			return rc;
		}
		q->kind = PEND_GET;
		return keep(w, q);
	}
	if (rc != DMA_ERR_NOSPACE)
		return rc;
	for (uint64_t at = 0; at < len; at += WIN_BOUNCE) {
		uint64_t n = len - at < WIN_BOUNCE ? len - at : WIN_BOUNCE;
		if ((rc = get_now(w, t, w->peer[t].region, off + at, n, w->lregion, bounce_off(w), TORUS_RMA_GET)))
			return rc;
		memcpy((char *)dst + at, (char *)w->larea + bounce_off(w), n);
	}
	q->kind = PEND_FREE; /* done: only its copy to unpack and free */
	if (q->tmp)
		mpi_unpack(q->tmp, len, q->ubuf, q->ucount, q->utype);
	free(q->tmp);
	q->tmp = NULL;
	return keep(w, q);
}

int MPI_Get(void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank,
	    MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Win win)
{
	MPI_API();
	struct access a;
	int rc = access_check("MPI_Get", win, origin_count, origin_datatype, target_rank, target_disp, target_count,
			      target_datatype, &a);
	if (rc || a.k < 0 || !a.len)
		return rc;
	struct mpi_win *w = a.w;
	uint64_t off = a.off, len = a.len;
	const struct mpi_type_info oi = a.oi;
	struct rma_pending *q = calloc(1, sizeof(*q));
	void *dst = origin_addr;
	if (q && !oi.contig) {
		/* lands packed, unpacked at completion */
		if ((q->tmp = malloc(len))) {
			dst = q->tmp;
			q->ubuf = origin_addr;
			q->ucount = origin_count;
			q->utype = origin_datatype;
		}
	}
	if (!q || (!oi.contig && !q->tmp)) {
		free(q);
		return mpi_error(w->comm, MPI_ERR_NO_MEM, "MPI_Get", "out of memory");
	}
	if ((rc = get_into(w, target_rank, off, len, dst, q))) {
		free(q->tmp);
		free(q);
		return mpi_error(w->comm, MPI_ERR_INTERN, "MPI_Get", "the DMA unit refused the get (%d)", rc);
	}
	return MPI_SUCCESS;
}

/* Apply an accumulate's data (n elements of the predefined type t) at p. */
static int apply(void *p, const void *data, uint64_t bytes, MPI_Datatype t, MPI_Op op)
{
	if (op == MPI_REPLACE) {
		mpi_copy(p, data, bytes);
		return 0;
	}
	int sz = mpi_type_size(t);
	return sz > 0 ? mpi_reduce_local(t, op, p, data, bytes / (uint64_t)sz) : -1;
}

int MPI_Accumulate(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank,
		   MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Op op, MPI_Win win)
{
	MPI_API();
	struct access a;
	int rc = access_check("MPI_Accumulate", win, origin_count, origin_datatype, target_rank, target_disp,
			      target_count, target_datatype, &a);
	if (rc || a.k < 0)
		return rc;
	struct mpi_win *w = a.w;
	int k = a.k;
	uint64_t off = a.off, len = a.len;
	const struct mpi_type_info oi = a.oi, ti = a.ti;
	/* one predefined type on both sides, and an operation defined on it */
	char probe[64] = {0}, probe2[64] = {0};
	MPI_Datatype bt = ti.basic;
	if (bt == MPI_DATATYPE_NULL || (oi.basic != bt && len))
		return mpi_error(w->comm, MPI_ERR_TYPE, "MPI_Accumulate",
				 "the origin and target must be of one and the same predefined type");
	if (op != MPI_REPLACE && (op <= MPI_OP_NULL || op >= TORUS_MPI_NOPS_ ||
				  (mpi_type_size(bt) <= 32 && mpi_reduce_local(bt, op, probe, probe2, 1))))
		return mpi_error(w->comm, MPI_ERR_OP, "MPI_Accumulate", "operation %d: a predefined one (or MPI_REPLACE) "
				 "defined on the type", op);
	if (!len)
		return MPI_SUCCESS;
	void *tmp;
	const void *src = origin_bytes(origin_addr, origin_count, origin_datatype, &oi, len, &tmp);
	struct rma_pending *q = calloc(1, sizeof(*q));
	if (!src || !q) {
		free(tmp);
		free(q);
		return mpi_error(w->comm, MPI_ERR_NO_MEM, "MPI_Accumulate", "out of memory");
	}
	q->tmp = tmp;
	if (k == K_PASSIVE) {
		/* under the lock: get, combine here, put back */
		char *cur = malloc(len);
		struct rma_pending *g = calloc(1, sizeof(*g));
		if (!cur || !g)
			rc = -ENOMEM;
		if (!rc && (rc = get_into(w, target_rank, off, len, cur, g)))
			free(g);
		else if (!rc)
			rc = complete_local(w); /* the get is in (and g freed) */
		else
			free(g);
		if (!rc && apply(cur, src, len, bt, op))
			rc = -EINVAL;
		if (!rc)
			rc = put_to(w, target_rank, cur, len, w->peer[target_rank].region, off, K_PASSIVE, TORUS_RMA_ACC);
		/* cur lives until the put has left */
		q->kind = PEND_FREE;
		free(q->tmp);
		q->tmp = cur;
		keep(w, q);
		return rc ? mpi_error(w->comm, MPI_ERR_INTERN, "MPI_Accumulate", "the transfer failed (%d)", rc) : 0;
	}
	q->kind = PEND_ACC;
	q->hdr = (struct acc_hdr){off, len, bt, op};
	if ((rc = mpi_isend_raw(&q->hr, &q->hdr, sizeof(q->hdr), target_rank, TAG_ACC_HDR, w->comm)) ||
	    (rc = mpi_isend_raw(&q->dr, src, len, target_rank, TAG_ACC_DATA, w->comm))) {
		free(q->tmp);
		free(q);
		return mpi_error(w->comm, rc, "MPI_Accumulate", "the message failed");
	}
	keep(w, q);
	w->count[2 * target_rank + 1]++;
	return MPI_SUCCESS;
}

/* Apply the n accumulates that src sent, in the order it sent them. */
static int take_accs(struct mpi_win *w, uint64_t n, int src)
{
	for (uint64_t i = 0; i < n; i++) {
		struct acc_hdr h;
		struct torus_mpi_request r;
		mpi_irecv_raw(&r, &h, sizeof(h), src, TAG_ACC_HDR, w->comm);
		int rc = mpi_wait_raw(&r);
		if (rc)
			return rc;
		if (h.off > (uint64_t)w->bytes || h.bytes > (uint64_t)w->bytes - h.off)
			return MPI_ERR_INTERN;
		void *data = malloc(h.bytes ? h.bytes : 1);
		if (!data)
			return MPI_ERR_NO_MEM;
		if (!(rc = mpi_recv_raw(data, h.bytes, src, TAG_ACC_DATA, w->comm)) &&
		    apply((char *)w->base + h.off, data, h.bytes, h.type, h.op))
			rc = MPI_ERR_OP;
		free(data);
		if (rc)
			return rc;
	}
	return 0;
}

/* ------------------------------------------------------------ fence */

#define ASSERT_BITS (MPI_MODE_NOCHECK | MPI_MODE_NOSTORE | MPI_MODE_NOPUT | MPI_MODE_NOPRECEDE | MPI_MODE_NOSUCCEED)

int MPI_Win_fence(int assert, MPI_Win win)
{
	MPI_API();
	struct mpi_win *w = win_of(win);
	if (!w)
		return bad_win("MPI_Win_fence");
	if (assert & ~ASSERT_BITS)
		return mpi_error(w->comm, MPI_ERR_ASSERT, "MPI_Win_fence", "assertion %#x", assert);
	if (w->nstart || w->npost)
		return mpi_error(w->comm, MPI_ERR_RMA_SYNC, "MPI_Win_fence", "a PSCW epoch is open");
	int rc = complete_local(w);
	uint64_t *in = calloc(2 * (size_t)w->size, sizeof(uint64_t)), bytes = 0;
	if (!in)
		rc = rc ? rc : MPI_ERR_NO_MEM;
	/* what each origin sent here (the alltoall runs whatever failed, so
	 * that nobody waits for us in vain) */
	int crc = MPI_Alltoall(w->count, 2, MPI_UINT64_T, in ? in : w->count, 2, MPI_UINT64_T, w->comm);
	memset(w->count, 0, 2 * (size_t)w->size * sizeof(uint64_t));
	for (int o = 0; !rc && !crc && o < w->size; o++) {
		bytes += in[2 * o];
		rc = take_accs(w, in[2 * o + 1], o);
	}
	free(in);
	if (!rc && !crc && bytes && !(rc = dma_counter_add(mpi_g.c, w->k0 + K_FENCE, (int64_t)bytes)))
		rc = wait_counter(w->k0 + K_FENCE);
	int brc = MPI_Barrier(w->comm);
	w->fence = !(assert & MPI_MODE_NOSUCCEED);
	if (crc || brc)
		return crc ? crc : brc;
	return rc ? mpi_error(w->comm, rc > 0 ? rc : MPI_ERR_INTERN, "MPI_Win_fence", "completing the epoch failed (%d)", rc)
		  : MPI_SUCCESS;
}

/* ------------------------------------------------------------ PSCW */

/* The window-communicator ranks of group's members (-1: not members). */
static int ranks_of(struct mpi_win *w, MPI_Group group, const char *fn, int **out, int *n)
{
	int gn = 0, rc = MPI_Group_size(group, &gn);
	if (rc)
		return rc;
	MPI_Group wg;
	if ((rc = MPI_Comm_group(w->comm, &wg)))
		return rc;
	int *in = malloc(((size_t)gn + 1) * sizeof(int)), *r = malloc(((size_t)gn + 1) * sizeof(int));
	if (!in || !r) {
		free(in);
		free(r);
		MPI_Group_free(&wg);
		return mpi_error(w->comm, MPI_ERR_NO_MEM, fn, "out of memory");
	}
	for (int i = 0; i < gn; i++)
		in[i] = i;
	rc = MPI_Group_translate_ranks(group, gn, in, wg, r);
	MPI_Group_free(&wg);
	free(in);
	for (int i = 0; !rc && i < gn; i++)
		if (r[i] == MPI_UNDEFINED)
			rc = mpi_error(w->comm, MPI_ERR_GROUP, fn, "member %d of the group is not in the window", i);
	if (rc) {
		free(r);
		return rc;
	}
	*out = r;
	*n = gn;
	return 0;
}

int MPI_Win_post(MPI_Group group, int assert, MPI_Win win)
{
	MPI_API();
	struct mpi_win *w = win_of(win);
	if (!w)
		return bad_win("MPI_Win_post");
	if (assert & ~ASSERT_BITS)
		return mpi_error(w->comm, MPI_ERR_ASSERT, "MPI_Win_post", "assertion %#x", assert);
	if (w->npost)
		return mpi_error(w->comm, MPI_ERR_RMA_SYNC, "MPI_Win_post", "an exposure epoch is open already");
	int rc = ranks_of(w, group, "MPI_Win_post", &w->post, &w->npost);
	char one = 1;
	for (int i = 0; !rc && i < w->npost; i++)
		rc = mpi_send_raw(&one, 1, w->post[i], TAG_POST, w->comm);
	return rc;
}

int MPI_Win_start(MPI_Group group, int assert, MPI_Win win)
{
	MPI_API();
	struct mpi_win *w = win_of(win);
	if (!w)
		return bad_win("MPI_Win_start");
	if (assert & ~ASSERT_BITS)
		return mpi_error(w->comm, MPI_ERR_ASSERT, "MPI_Win_start", "assertion %#x", assert);
	if (w->nstart)
		return mpi_error(w->comm, MPI_ERR_RMA_SYNC, "MPI_Win_start", "an access epoch is open already");
	int rc = ranks_of(w, group, "MPI_Win_start", &w->start, &w->nstart);
	char one;
	for (int i = 0; !rc && i < w->nstart; i++)
		rc = mpi_recv_raw(&one, 1, w->start[i], TAG_POST, w->comm);
	return rc;
}

int MPI_Win_complete(MPI_Win win)
{
	MPI_API();
	struct mpi_win *w = win_of(win);
	if (!w)
		return bad_win("MPI_Win_complete");
	if (!w->start)
		return mpi_error(w->comm, MPI_ERR_RMA_SYNC, "MPI_Win_complete", "no access epoch was started");
	int rc = complete_local(w);
	for (int i = 0; i < w->nstart; i++) {
		int t = w->start[i];
		int src = mpi_send_raw(&w->count[2 * t], 2 * sizeof(uint64_t), t, TAG_DONE, w->comm);
		rc = rc ? rc : src;
		w->count[2 * t] = w->count[2 * t + 1] = 0;
	}
	free(w->start);
	w->start = NULL;
	w->nstart = 0;
	return rc ? mpi_error(w->comm, rc > 0 ? rc : MPI_ERR_INTERN, "MPI_Win_complete", "the epoch failed (%d)", rc) : 0;
}

int MPI_Win_wait(MPI_Win win)
{
	MPI_API();
	struct mpi_win *w = win_of(win);
	if (!w)
		return bad_win("MPI_Win_wait");
	if (!w->post)
		return mpi_error(w->comm, MPI_ERR_RMA_SYNC, "MPI_Win_wait", "no exposure epoch was posted");
	int rc = 0;
	uint64_t bytes = 0;
	for (int i = 0; !rc && i < w->npost; i++) {
		uint64_t got[2];
		if (!(rc = mpi_recv_raw(got, sizeof(got), w->post[i], TAG_DONE, w->comm)))
			rc = take_accs(w, got[1], w->post[i]);
		bytes += got[0];
	}
	if (!rc && bytes && !(rc = dma_counter_add(mpi_g.c, w->k0 + K_PSCW, (int64_t)bytes)))
		rc = wait_counter(w->k0 + K_PSCW);
	free(w->post);
	w->post = NULL;
	w->npost = 0;
	return rc ? mpi_error(w->comm, rc > 0 ? rc : MPI_ERR_INTERN, "MPI_Win_wait", "the epoch failed (%d)", rc) : 0;
}

/* ------------------------------------------------------------ locks */

/* Lamport's bakery at target t, by puts and gets only. */
static int bakery(struct mpi_win *w, int t)
{
	int p = w->size, me = w->rank, rc;
	uint32_t lr = w->peer[t].lregion, *snap = w->larea + 2 * (size_t)p;
	/* choosing[me] = 1, then everyone's number */
	if ((rc = put_to(w, t, word(w, W_ONE), 4, lr, (uint64_t)me * 4, K_PASSIVE, TORUS_RMA_SYNC)) ||
	    (rc = get_now(w, t, lr, (uint64_t)p * 4, (uint64_t)p * 4, w->lregion, snap_off(w), TORUS_RMA_SYNC)))
		return rc;
	uint32_t mine = 0;
	for (int j = 0; j < p; j++)
		mine = snap[j] > mine ? snap[j] : mine;
	/* the previous number's put left in the last unlock's flush */
	*word(w, W_NUMBER) = mine + 1;
	if ((rc = put_to(w, t, word(w, W_NUMBER), 4, lr, ((uint64_t)p + me) * 4, K_PASSIVE, TORUS_RMA_SYNC)) ||
	    (rc = put_to(w, t, word(w, W_ZERO), 4, lr, (uint64_t)me * 4, K_PASSIVE, TORUS_RMA_SYNC)))
		return rc;
	/* wait for every member that is choosing, or holds a smaller ticket:
	 * one get reads all of choosing[], then all of number[]. Choosing
	 * lasts a get and two puts: look again 1 us later. A smaller ticket
	 * lasts until its lock is released, and whoever releases a lock
	 * wakes every member with a ticket (MPI_Win_unlock): sleep until
	 * then, on the wake counter (no wake is lost: a release after the
	 * look sees our ticket, which went before it) */
	for (;;) {
		if ((rc = get_now(w, t, lr, 0, 2 * (uint64_t)p * 4, w->lregion, snap_off(w), TORUS_RMA_SYNC)))
			return rc;
		int choosing = 0, behind = 0;
		for (int j = 0; j < p; j++) {
			uint32_t nj = snap[p + j];
			choosing |= j != me && snap[j];
			behind |= j != me && nj && (nj < mine + 1 || (nj == mine + 1 && j < me));
		}
		if (!choosing && !behind)
			return 0;
		if (choosing) {
			if ((rc = emu_core_compute(mpi_g.c, 1000000)))
				return rc;
			continue;
		}
		/* the counter is 0 between sleeps, each wake takes 4 off it: below
		 * 0, wakes came since the last sleep (look again at once, and
		 * count them taken); else sleep until the next one */
		int64_t v = 0;
		if ((rc = dma_counter_get(mpi_g.c, w->k0 + K_WAKE, &v)))
			return rc;
		if (v < 0)
			rc = dma_counter_add(mpi_g.c, w->k0 + K_WAKE, -v);
		else if (!(rc = dma_counter_add(mpi_g.c, w->k0 + K_WAKE, 4)))
			rc = wait_counter(w->k0 + K_WAKE);
		if (rc)
			return rc;
	}
}

int MPI_Win_lock(int lock_type, int rank, int assert, MPI_Win win)
{
	MPI_API();
	struct mpi_win *w = win_of(win);
	if (!w)
		return bad_win("MPI_Win_lock");
	if (lock_type != MPI_LOCK_EXCLUSIVE && lock_type != MPI_LOCK_SHARED)
		return mpi_error(w->comm, MPI_ERR_LOCKTYPE, "MPI_Win_lock", "lock type %d", lock_type);
	if (assert & ~MPI_MODE_NOCHECK)
		return mpi_error(w->comm, MPI_ERR_ASSERT, "MPI_Win_lock", "assertion %#x", assert);
	if (rank == MPI_PROC_NULL)
		return MPI_SUCCESS;
	if (rank < 0 || rank >= w->size)
		return mpi_error(w->comm, MPI_ERR_RANK, "MPI_Win_lock", "rank %d of %d", rank, w->size);
	if (w->locked[rank])
		return mpi_error(w->comm, MPI_ERR_RMA_SYNC, "MPI_Win_lock", "rank %d is locked already", rank);
	if (assert & MPI_MODE_NOCHECK) {
		w->locked[rank] = 2;
		return MPI_SUCCESS;
	}
	int rc = bakery(w, rank);
	if (rc)
		return mpi_error(w->comm, MPI_ERR_INTERN, "MPI_Win_lock", "taking the lock failed (%d)", rc);
	w->locked[rank] = 1;
	return MPI_SUCCESS;
}

int MPI_Win_unlock(int rank, MPI_Win win)
{
	MPI_API();
	struct mpi_win *w = win_of(win);
	if (!w)
		return bad_win("MPI_Win_unlock");
	if (rank == MPI_PROC_NULL)
		return MPI_SUCCESS;
	if (rank < 0 || rank >= w->size || !w->locked[rank])
		return mpi_error(w->comm, MPI_ERR_RMA_SYNC, "MPI_Win_unlock", "rank %d is not locked", rank);
	int rc = complete_local(w);
	uint32_t lr = w->peer[rank].lregion;
	if (!rc && w->locked[rank] == 1)
		rc = put_to(w, rank, word(w, W_ZERO), 4, lr, ((uint64_t)w->size + w->rank) * 4, K_PASSIVE,
			    TORUS_RMA_SYNC);
	/* a get behind the epoch's puts on the same route: when it is in, so
	 * are they. After a release it reads the tickets, and wakes every
	 * member that holds one (they sleep in bakery) */
	int p = w->size;
	if (!rc && w->locked[rank] == 1)
		rc = get_now(w, rank, lr, (uint64_t)p * 4, (uint64_t)p * 4, w->lregion, snap_off(w), TORUS_RMA_SYNC);
	else if (!rc)
		rc = get_now(w, rank, lr, 0, 4, w->lregion, (uint64_t)((char *)word(w, W_FLUSH) - (char *)w->larea),
			     TORUS_RMA_SYNC);
	const uint32_t *tickets = w->larea + 2 * (size_t)p;
	for (int j = 0; !rc && w->locked[rank] == 1 && j < p; j++)
		if (j != w->rank && tickets[j])
			rc = put_to(w, j, word(w, W_ONE), 4, w->peer[j].lregion,
				    (uint64_t)((char *)word(w, W_WAKE) - (char *)w->larea), K_WAKE, TORUS_RMA_SYNC);
	if (!rc)
		rc = wait_counter(w->k0 + K_INJ);
	w->locked[rank] = 0;
	return rc ? mpi_error(w->comm, MPI_ERR_INTERN, "MPI_Win_unlock", "completing the epoch failed (%d)", rc) : 0;
}
