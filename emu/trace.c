/*
 * The node side of `torusrun --trace`: the engine thread records every
 * packet it puts on a link, merging packets sent back to back with the same
 * tag into one record (a "run", include/torus/trace.h), into a small ring
 * of fixed buffers. A full buffer becomes a chunk: the engine claims its
 * place in the shared file with one atomic add on the job's shared
 * counter, submits the write to io_uring and goes on filling the next
 * buffer, so the network never waits for the disk unless every buffer is
 * still being written (counted as a "wait"; virtual time is unaffected
 * either way). Memory is nbuf * buf_bytes per node however long the job
 * runs. Where io_uring is not allowed (old kernels, seccomp), or with
 * TORUS_TRACE_SYNC=1, chunks are written with plain pwrite.
 */
#include "node.h"

#include <torus/trace.h>

#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct trace_buf {
	char *data;                 /* chunk header, then records */
	uint32_t used;              /* bytes of records */
	uint32_t inflight;          /* bytes submitted and not completed; 0 if free */
	uint64_t off;               /* file offset of the submitted chunk */
};

struct emu_trace {
	int fd;
	int uring;                  /* 1: writes go through ring */
	struct io_uring ring;
	struct trace_buf *buf;
	uint32_t nbuf, buf_bytes, cur, inflight;
	uint32_t node, seq;
	int packets;                /* one record per packet */
	struct torus_trace_rec open[2 * TORUS_MAX_DIMS];
	_Atomic uint64_t *file_off; /* the job's shared end-of-file */
	uint64_t records, bytes, waits;
	int error;                  /* first write error (negative errno) */
};

/* Write a whole buffer at off with pwrite (the fallback, and short writes). */
static int write_all(int fd, const char *p, size_t n, uint64_t off)
{
	while (n) {
		ssize_t w = pwrite(fd, p, n, (off_t)off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		p += w;
		n -= (size_t)w;
		off += (uint64_t)w;
	}
	return 0;
}

/* Reap one completion (waiting for it if wait); 1 if one was reaped. */
static int reap(struct emu_trace *t, int wait)
{
	struct io_uring_cqe *cqe;
	int rc = wait ? io_uring_wait_cqe(&t->ring, &cqe) : io_uring_peek_cqe(&t->ring, &cqe);
	if (rc)
		return 0;
	uint64_t which = io_uring_cqe_get_data64(cqe);
	int res = cqe->res;
	io_uring_cqe_seen(&t->ring, cqe);
	if (which >= t->nbuf)
		return 1; /* a write that failed to submit, done by hand */
	struct trace_buf *b = &t->buf[which];
	if (res < 0 && !t->error)
		t->error = res;
	else if (res >= 0 && (uint32_t)res < b->inflight) /* short: finish it by hand */
		rc = write_all(t->fd, b->data + res, b->inflight - (uint32_t)res, b->off + (uint64_t)res);
	if (rc && !t->error)
		t->error = rc;
	b->inflight = 0;
	b->used = 0;
	t->inflight--;
	return 1;
}

/* Turn the current buffer into a chunk and send it to the file. */
static void submit(struct emu_trace *t)
{
	struct trace_buf *b = &t->buf[t->cur];
	if (!b->used)
		return;
	struct torus_trace_chunk *c = (struct torus_trace_chunk *)b->data;
	*c = (struct torus_trace_chunk){TORUS_TRACE_CHUNK_RECORDS, t->node,
					b->used / (uint32_t)sizeof(struct torus_trace_rec), t->seq++, b->used, 0, 0};
	c->checksum = torus_trace_chunk_checksum(c, b->data + sizeof(*c));
	uint32_t n = (uint32_t)sizeof(*c) + b->used;
	b->off = atomic_fetch_add_explicit(t->file_off, n, memory_order_relaxed);
	t->bytes += n;
	t->records += c->count;
	struct io_uring_sqe *sqe = t->uring ? io_uring_get_sqe(&t->ring) : NULL;
	if (sqe) {
		io_uring_prep_write(sqe, t->fd, b->data, n, b->off);
		io_uring_sqe_set_data64(sqe, t->cur);
		b->inflight = n;
		t->inflight++;
		int rc = io_uring_submit(&t->ring);
		if (rc < 0) {
			/* not submitted after all: write it here */
			io_uring_prep_nop(sqe);
			io_uring_sqe_set_data64(sqe, UINT64_MAX);
			b->inflight = 0;
			t->inflight--;
			rc = write_all(t->fd, b->data, n, b->off);
			if (rc && !t->error)
				t->error = rc;
			b->used = 0;
		}
	} else {
		int rc = write_all(t->fd, b->data, n, b->off);
		if (rc && !t->error)
			t->error = rc;
		b->used = 0;
	}
	/* the next free buffer; wait for the disk only if none is */
	t->cur = (t->cur + 1) % t->nbuf;
	if (t->buf[t->cur].inflight) {
		while (reap(t, 0))
			;
		if (t->buf[t->cur].inflight) {
			t->waits++;
			while (t->buf[t->cur].inflight && reap(t, 1))
				;
		}
	}
}

static void append(struct emu_trace *t, const struct torus_trace_rec *r)
{
	struct trace_buf *b = &t->buf[t->cur];
	if (b->used + sizeof(*r) > t->buf_bytes - sizeof(struct torus_trace_chunk)) {
		submit(t);
		b = &t->buf[t->cur];
	}
	memcpy(b->data + sizeof(struct torus_trace_chunk) + b->used, r, sizeof(*r));
	b->used += (uint32_t)sizeof(*r);
}

/* Close the link's open run and start a new one with this packet. */
static void new_run(struct emu_trace *t, uint32_t link, torus_vt_t start, torus_vt_t ser, uint32_t payload, uint32_t wire,
		    uint32_t kind, uint32_t tag)
{
	struct torus_trace_rec *r = &t->open[link];
	if (r->packets)
		append(t, r);
	*r = (struct torus_trace_rec){.start_ps = start, .end_ps = start + ser, .busy_ps = ser, .packets = 1,
				      .payload_bytes = payload, .wire_bytes = wire, .tag = tag,
				      .dim = (uint8_t)(link >> 1), .dir = (uint8_t)(link & 1), .kind = (uint8_t)kind};
}

void emu_trace_packet(struct emu_trace *t, uint32_t link, torus_vt_t start, torus_vt_t end, uint32_t payload,
		      uint32_t wire, uint32_t kind, uint32_t tag)
{
	struct torus_trace_rec *r = &t->open[link];
	if (r->end_ps == start && r->tag == tag && r->kind == kind && r->packets && !t->packets &&
	    r->packets < (1u << 30) && r->wire_bytes < (1u << 30)) {
		r->end_ps = end;
		r->busy_ps += end - start;
		r->packets++;
		r->payload_bytes += payload;
		r->wire_bytes += wire;
		return;
	}
	new_run(t, link, start, end - start, payload, wire, kind, tag);
}

struct emu_trace *emu_trace_writer(int fd, uint32_t node, uint32_t nbuf, uint32_t buf_bytes, int packets,
				   _Atomic uint64_t *file_off, int uring, char *err, size_t errlen)
{
	if (nbuf < 2 || buf_bytes < 4096) {
		snprintf(err, errlen, "trace: bad buffer set-up (%u buffers of %u bytes)", nbuf, buf_bytes);
		return NULL;
	}
	struct emu_trace *t = calloc(1, sizeof(*t));
	if (!t) {
		snprintf(err, errlen, "trace: out of memory");
		return NULL;
	}
	t->fd = fd;
	t->node = node;
	t->nbuf = nbuf;
	t->buf_bytes = buf_bytes;
	t->packets = packets;
	t->file_off = file_off;
	t->buf = calloc(t->nbuf, sizeof(*t->buf));
	for (uint32_t i = 0; t->buf && i < t->nbuf; i++)
		if (!(t->buf[i].data = malloc(t->buf_bytes)))
			break;
	if (!t->buf || !t->buf[t->nbuf - 1].data) {
		emu_trace_writer_close(t, NULL, NULL, NULL);
		snprintf(err, errlen, "trace: cannot allocate %u buffers of %u bytes", nbuf, buf_bytes);
		return NULL;
	}
	const char *sync = getenv("TORUS_TRACE_SYNC");
	if (uring && !(sync && *sync && strcmp(sync, "0")) && io_uring_queue_init(t->nbuf, &t->ring, 0) == 0)
		t->uring = 1;
	return t;
}

int emu_trace_writer_close(struct emu_trace *t, uint64_t *records, uint64_t *bytes, uint64_t *waits)
{
	if (!t)
		return 0;
	if (t->buf && t->buf[t->nbuf - 1].data) {
		for (uint32_t l = 0; l < 2 * TORUS_MAX_DIMS; l++)
			if (t->open[l].packets)
				append(t, &t->open[l]);
		submit(t);
		while (t->inflight && reap(t, 1))
			;
	} else if (!t->error) {
		t->error = -ENOMEM;
	}
	if (t->uring)
		io_uring_queue_exit(&t->ring);
	int rc = t->error;
	if (records)
		*records = t->records;
	if (bytes)
		*bytes = t->bytes;
	if (waits)
		*waits = t->waits;
	for (uint32_t i = 0; t->buf && i < t->nbuf; i++)
		free(t->buf[i].data);
	free(t->buf);
	free(t);
	return rc;
}

void emu_trace_publish(struct emu_node_shm *me, uint64_t records, uint64_t bytes, uint64_t waits, int rc)
{
	atomic_store(&me->trace_records, records);
	atomic_store(&me->trace_bytes, bytes);
	atomic_store(&me->trace_waits, waits);
	atomic_store(&me->trace_status, rc ? rc : 1);
}

/* ------------------------------------------------------------ torusrun */

int emu_trace_create(const struct emu_job_config *cfg, struct emu_shm *m, int *fd_out, char *err, size_t errlen)
{
	const struct torus_shape *s = &cfg->shape;
	const struct torus_params *p = &cfg->params;
	struct torus_trace_header h;

	*fd_out = -1;
	/* inherited by the nodes (no O_CLOEXEC); they write at offsets they claim */
	int fd = emu_open_output(cfg->trace_path, "trace", 1, err, errlen);
	if (fd < 0)
		return fd;
	memset(&h, 0, sizeof(h));
	memcpy(h.magic, TORUS_TRACE_MAGIC, 8);
	h.version = TORUS_TRACE_VERSION;
	h.header_bytes = sizeof(h);
	h.record_bytes = sizeof(struct torus_trace_rec);
	h.endian = TORUS_TRACE_ENDIAN;
	h.ndims = s->ndims;
	for (uint32_t d = 0; d < s->ndims; d++)
		h.dims[d] = s->dims[d];
	h.nnodes = s->nnodes;
	h.total_cores = m->hdr->total_cores;
	h.flags = cfg->trace_packets ? TORUS_TRACE_F_PACKETS : 0;
	h.link_bw = p->link_bw;
	h.hop_latency_ps = p->hop_latency_ps;
	h.pkt_header_bytes = p->header_bytes;
	h.chunk_bytes = p->chunk_bytes;
	h.ack_overhead = p->ack_overhead;
	h.max_packet = p->max_packet;
	h.created_unix = (uint64_t)time(NULL);
	size_t used = 0;
	for (int i = 0; i < cfg->argc && used + 1 < sizeof(h.program); i++)
		used += (size_t)snprintf(h.program + used, sizeof(h.program) - used, i ? " %s" : "%s", cfg->argv[i]);
	h.checksum = torus_trace_header_checksum(&h);
	int rc = write_all(fd, (const char *)&h, sizeof(h), 0);
	if (rc) {
		snprintf(err, errlen, "cannot write trace %s: %s", cfg->trace_path, strerror(-rc));
		close(fd);
		return rc;
	}
	uint64_t off = sizeof(h);
	if (cfg->nlinks) {
		/* the links with their own settings, before any record */
		struct {
			struct torus_trace_chunk c;
			struct torus_trace_link l[TORUS_MAX_LINK_SETS];
		} lk;
		memset(&lk, 0, sizeof(lk));
		for (uint32_t k = 0; k < cfg->nlinks; k++) {
			struct torus_params lp;
			torus_link_params(p, &cfg->links[k], &lp);
			lk.l[k] = (struct torus_trace_link){cfg->links[k].node, cfg->links[k].link >> 1, cfg->links[k].link & 1, 0,
							    lp.link_bw, lp.hop_latency_ps};
		}
		uint32_t body = cfg->nlinks * (uint32_t)sizeof(struct torus_trace_link);
		lk.c = (struct torus_trace_chunk){TORUS_TRACE_CHUNK_LINKS, 0, cfg->nlinks, 0, body, 0, 0};
		lk.c.checksum = torus_trace_chunk_checksum(&lk.c, lk.l);
		if ((rc = write_all(fd, (const char *)&lk, sizeof(lk.c) + body, off))) {
			snprintf(err, errlen, "cannot write trace %s: %s", cfg->trace_path, strerror(-rc));
			close(fd);
			return rc;
		}
		off += sizeof(lk.c) + body;
	}
	atomic_store(&m->hdr->trace_off, off);
	/* the timekeeper's writer of each node: two buffers, one fills while
	 * the other is written */
	m->hdr->trace_nbuf = 2;
	m->hdr->trace_buf_bytes = cfg->trace_buf_bytes / m->hdr->trace_nbuf;
	m->hdr->trace_flags = h.flags;
	*fd_out = fd;
	return 0;
}

static void end_counters(void *arg, uint32_t node, uint32_t dim, uint32_t dir, const struct torus_link *l,
			 const struct torus_link_counters *c)
{
	struct torus_trace_counters **k = arg;
	*(*k)++ = (struct torus_trace_counters){node, dim, dir, l->to, c->packets, c->payload_bytes, c->wire_bytes,
						c->busy_ps};
}

int emu_trace_finish(const struct emu_job_config *cfg, struct emu_shm *m, int fd, uint32_t status, double wall_s,
		     torus_vt_t vt, int quiet, char *err, size_t errlen)
{
	const struct torus_shape *s = &m->hdr->shape;
	uint64_t links = 0, records = 0, waits = 0;
	uint32_t flushed = 0;
	int rc = 0;

	links = emu_shm_each_link(m, NULL, NULL);
	for (uint32_t r = 0; r < s->nnodes; r++) {
		struct emu_node_shm *n = emu_shm_node(m, r);
		int32_t st = atomic_load(&n->trace_status);
		records += atomic_load(&n->trace_records);
		waits += atomic_load(&n->trace_waits);
		if (st == 1)
			flushed++;
		else if (st < 0 && !rc) {
			snprintf(err, errlen, "trace %s: node %u could not write: %s", cfg->trace_path, r, strerror(-st));
			rc = st;
		}
	}
	size_t nbytes = sizeof(struct torus_trace_chunk) + sizeof(struct torus_trace_end) +
			links * sizeof(struct torus_trace_counters);
	char *buf = calloc(1, nbytes);
	if (!buf) {
		close(fd);
		snprintf(err, errlen, "trace %s: out of memory", cfg->trace_path);
		return -ENOMEM;
	}
	struct torus_trace_chunk *c = (struct torus_trace_chunk *)buf;
	struct torus_trace_end *e = (struct torus_trace_end *)(c + 1);
	struct torus_trace_counters *k = (struct torus_trace_counters *)(e + 1);
	*e = (struct torus_trace_end){.emulated_ps = vt, .wall_s = wall_s, .status = status,
				      .nodes_flushed = flushed, .records = records};
	emu_shm_each_link(m, end_counters, &k);
	uint32_t body = (uint32_t)(nbytes - sizeof(*c));
	*c = (struct torus_trace_chunk){TORUS_TRACE_CHUNK_END, 0, (uint32_t)links, 0, body, 0, 0};
	c->checksum = torus_trace_chunk_checksum(c, c + 1);
	int wrc = write_all(fd, buf, nbytes, atomic_load(&m->hdr->trace_off));
	free(buf);
	if (close(fd) && !wrc)
		wrc = -errno;
	if (wrc && !rc) {
		snprintf(err, errlen, "cannot write trace %s: %s", cfg->trace_path, strerror(-wrc));
		rc = wrc;
	}
	/* the file's size: every chunk written, a node's unflushed ones too */
	double mb = (double)(atomic_load(&m->hdr->trace_off) + nbytes) / 1e6;
	if (!quiet && !rc && flushed == s->nnodes)
		fprintf(stderr, "torusrun: trace %s: %llu records, %.1f MB, %u of %u nodes flushed, %llu waits for the disk\n",
			cfg->trace_path, (unsigned long long)records, mb, flushed, s->nnodes, (unsigned long long)waits);
	else if (!quiet && !rc)
		fprintf(stderr,
			"torusrun: trace %s: %.1f MB; %u of %u nodes flushed their last records (%llu records); the others "
			"stopped before that, and what they wrote until then is in the file (torus-trace reads it)\n",
			cfg->trace_path, mb, flushed, s->nnodes, (unsigned long long)records);
	return rc;
}
