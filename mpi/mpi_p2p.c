/*
 * libtorusmpi: point-to-point messaging: the send paths (eager and
 * rendezvous, buffered sends), matching messages with receives, the
 * handler and the progress engine, probes, and the collectives' own sends
 * and receives (tags < 0).
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
#include <stdlib.h>
#include <string.h>

/* A rendezvous send's region, given back (post_send_tagged counts them). */
static void send_region_release(uint32_t region)
{
	dma_mem_deregister(mpi_g.c, region);
	mpi_g.rz_send_regions--;
}

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
int mpi_on_packet(emu_core_t *c, const struct dma_recv_info *info, const void *payload, void *arg)
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
			mpi_request_free(r); /* MPI_Request_free'd while it went on */
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

int mpi_check_p2p(const char *fn, const void *buf, int count, MPI_Datatype t, int peer, int tag, MPI_Comm comm,
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
int mpi_send_bytes(const void *buf, int count, MPI_Datatype t, uint64_t *bytes, void **tmp, const void **src)
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
int mpi_recv_place(struct torus_mpi_request *r, void *buf, int count, MPI_Datatype t, void **where,
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

/* Post a message (eager: its parts; rendezvous: its request to send); the
 * request completes when they have left, and for a rendezvous once the
 * receiver cleared it and its data have left too. */
static int post_send_tagged(const void *buf, uint64_t bytes, int dest, int tag, MPI_Comm comm,
			    struct torus_mpi_request *r, uint32_t trace, enum send_mode mode);

int mpi_post_send(const void *buf, uint64_t bytes, int dest, int tag, MPI_Comm comm, struct torus_mpi_request *r,
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
int mpi_send_done(void)
{
	int zero = 0;
	if (!mpi_g.sends_out)
		return 1; /* seen zero since the last post: no need to ask */
	int rc = dma_counter_test(mpi_g.c, mpi_g.inj, &zero);
	if (!rc && zero)
		sends_left();
	return rc ? rc : zero;
}

int mpi_post_recv(void *buf, uint64_t cap, int src, int tag, MPI_Comm comm, struct torus_mpi_request *r)
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
int mpi_send_complete(const struct torus_mpi_request *r)
{
	return r->rzv ? r->fin : mpi_send_done();
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
 * The wait does not return before the promise is kept (mpi_wait_request).
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
int mpi_wait_request(struct torus_mpi_request *r, MPI_Status *status)
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
			int d = mpi_send_complete(r);
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
void mpi_null_status(MPI_Status *st)
{
	if (st)
		*st = (MPI_Status){.MPI_SOURCE = MPI_PROC_NULL, .MPI_TAG = MPI_ANY_TAG, .MPI_ERROR = MPI_SUCCESS};
}

/* A blocking send (fn: the MPI call, for errors). */
static int send_blocking(const char *fn, const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
			 MPI_Comm comm, enum send_mode mode)
{
	int rc = mpi_check_p2p(fn, buf, count, datatype, dest, tag, comm, 0);
	if (rc || dest == MPI_PROC_NULL)
		return rc;
	struct torus_mpi_request r;
	memset(&r, 0, sizeof(r));
	uint64_t bytes;
	const void *src;
	if (mpi_send_bytes(buf, count, datatype, &bytes, &r.tmp, &src))
		return mpi_error(comm, MPI_ERR_INTERN, fn, "out of memory");
	if (mpi_post_send(src, bytes, dest, tag, comm, &r, mode)) {
		free(r.tmp);
		return mpi_error(comm, MPI_ERR_INTERN, fn, "the DMA unit refused the message");
	}
	rc = mpi_wait_request(&r, NULL);
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
	int rc = mpi_check_p2p("MPI_Recv", buf, count, datatype, source, tag, comm, 1);
	if (rc)
		return rc;
	if (source == MPI_PROC_NULL) {
		mpi_null_status(status);
		return MPI_SUCCESS;
	}
	struct torus_mpi_request r;
	memset(&r, 0, sizeof(r));
	void *where;
	uint64_t cap;
	if (mpi_recv_place(&r, buf, count, datatype, &where, &cap))
		return mpi_error(comm, MPI_ERR_INTERN, "MPI_Recv", "out of memory");
	mpi_post_recv(where, cap, source, tag, comm, &r);
	rc = mpi_wait_request(&r, status);
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
	int rc = mpi_check_p2p(fn, buf, count, datatype, dest, tag, comm, 0);
	if (rc)
		return rc;
	struct torus_mpi_request *r = mpi_request_new();
	if (!r)
		return mpi_error(comm, MPI_ERR_INTERN, fn, "out of memory");
	uint64_t bytes;
	const void *src = NULL;
	if (dest == MPI_PROC_NULL) {
		r->done = 1;
		r->proc_null = 1;
	} else if (mpi_send_bytes(buf, count, datatype, &bytes, &r->tmp, &src)) {
		free(r);
		return mpi_error(comm, MPI_ERR_INTERN, fn, "out of memory");
	} else if (mpi_post_send(src, bytes, dest, tag, comm, r, mode)) {
		mpi_request_free(r);
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
	int rc = mpi_check_p2p("MPI_Irecv", buf, count, datatype, source, tag, comm, 1);
	if (rc)
		return rc;
	struct torus_mpi_request *r = mpi_request_new();
	if (!r)
		return mpi_error(comm, MPI_ERR_INTERN, "MPI_Irecv", "out of memory");
	void *where;
	uint64_t cap;
	if (source == MPI_PROC_NULL) {
		r->done = 1;
		r->proc_null = 1;
	} else if (mpi_recv_place(r, buf, count, datatype, &where, &cap)) {
		free(r);
		return mpi_error(comm, MPI_ERR_INTERN, "MPI_Irecv", "out of memory");
	} else {
		mpi_post_recv(where, cap, source, tag, comm, r);
	}
	*request = r;
	return MPI_SUCCESS;
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
	int rc = mpi_check_p2p("MPI_Iprobe", NULL, 0, MPI_BYTE, source, tag, comm, 1);
	if (rc)
		return rc;
	if (!flag)
		return mpi_error(comm, MPI_ERR_ARG, "MPI_Iprobe", "NULL flag");
	if (source == MPI_PROC_NULL) {
		*flag = 1;
		mpi_null_status(status);
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
	mpi_post_recv(buf, bytes, src, tag, comm, r);
}

int mpi_wait_raw(struct torus_mpi_request *r) { return mpi_wait_request(r, NULL); }

int mpi_send_raw(const void *buf, uint64_t bytes, int dest, int tag, MPI_Comm comm)
{
	struct torus_mpi_request r;
	int rc = mpi_isend_raw(&r, buf, bytes, dest, tag, comm);
	return rc ? rc : mpi_wait_request(&r, NULL);
}

int mpi_recv_raw(void *buf, uint64_t bytes, int src, int tag, MPI_Comm comm)
{
	struct torus_mpi_request r;
	mpi_irecv_raw(&r, buf, bytes, src, tag, comm);
	return mpi_wait_request(&r, NULL);
}

int mpi_sendrecv_raw(const void *sbuf, uint64_t sbytes, int dest, void *rbuf, uint64_t rbytes, int src, int tag,
		     MPI_Comm comm)
{
	struct torus_mpi_request rr, sr;
	memset(&rr, 0, sizeof(rr));
	memset(&sr, 0, sizeof(sr));
	mpi_post_recv(rbuf, rbytes, src, tag, comm, &rr);
	if (post_send_tagged(sbuf, sbytes, dest, tag, comm, &sr, mpi_coll_trace(tag), SEND_AUTO))
		return MPI_ERR_INTERN;
	/* the receive first: by the time it is in, the send has nearly
	 * always left */
	int b = mpi_wait_request(&rr, NULL), a = mpi_wait_request(&sr, NULL);
	return a ? a : b;
}

int MPI_Sendrecv_replace(void *buf, int count, MPI_Datatype datatype, int dest, int sendtag, int source, int recvtag,
			 MPI_Comm comm, MPI_Status *status)
{
	MPI_API();
	int rc = mpi_check_p2p("MPI_Sendrecv_replace", buf, count, datatype, dest, sendtag, comm, 0);
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
	while (mpi_g.state == 1 && mpi_send_done() == 0)
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
	int rc = mpi_check_p2p("MPI_Bsend", buf, count, datatype, dest, tag, comm, 0);
	if (rc || dest == MPI_PROC_NULL)
		return rc;
	struct mpi_type_info ti;
	mpi_type_info(datatype, 0, &ti);
	uint64_t bytes = (uint64_t)count * ti.size;
	uint64_t need = (sizeof(struct mpi_env) + bytes + 15) & ~(uint64_t)15, size = (uint64_t)mpi_g.bsend_size;
	if (mpi_g.bsend_used + need > size && mpi_g.bsend_used && mpi_send_done() > 0)
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
	struct torus_mpi_request *r = mpi_request_new();
	if (!r)
		return mpi_error(comm, MPI_ERR_INTERN, "MPI_Ibsend", "out of memory");
	r->done = r->proc_null = 1; /* complete: nothing to wait for */
	*request = r;
	return MPI_SUCCESS;
}
