/*
 * Load a trace file into memory, checking everything: a corrupt,
 * truncated or foreign file gives a one-line reason, never a crash or a
 * silent wrong picture. Plus the helpers every writer shares (names,
 * binning, phases).
 */
#include "trace_tool.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int fail(char *err, size_t errlen, int rc, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return rc;
}

static int read_at(FILE *f, uint64_t off, void *buf, size_t n)
{
	if (fseeko(f, (off_t)off, SEEK_SET))
		return -1;
	return fread(buf, 1, n, f) == n ? 0 : -1;
}

static int check_header(const struct torus_trace_header *h, uint64_t size, struct torus_shape *s, char *err,
			size_t errlen)
{
	if (memcmp(h->magic, TORUS_TRACE_MAGIC, 8))
		return fail(err, errlen, -EINVAL, "not a torus trace (no TORUSTRC magic)");
	if (h->endian != TORUS_TRACE_ENDIAN)
		return fail(err, errlen, -EINVAL, "trace written with another byte order");
	if (h->version < 1 || h->version > TORUS_TRACE_VERSION)
		return fail(err, errlen, -EINVAL, "trace format version %u; this torus-trace reads versions 1 to %u",
			    h->version, TORUS_TRACE_VERSION);
	if (h->header_bytes != sizeof(*h) || h->record_bytes != sizeof(struct torus_trace_rec))
		return fail(err, errlen, -EINVAL, "corrupt header: header %u / record %u bytes, expected %zu / %zu",
			    h->header_bytes, h->record_bytes, sizeof(*h), sizeof(struct torus_trace_rec));
	if (torus_trace_header_checksum(h) != h->checksum)
		return fail(err, errlen, -EINVAL, "corrupt header: checksum mismatch");
	if (h->ndims < 1 || h->ndims > TORUS_MAX_DIMS)
		return fail(err, errlen, -EINVAL, "corrupt header: %u dimensions", h->ndims);
	/* the machine parameters, through the same table and checks as
	 * torusrun --param: the loader's link model relies on them */
	const struct {
		const char *name, *unit;
		uint64_t v;
	} par[] = {{"link_bw", "B/s", h->link_bw},   {"hop_latency", "ps", h->hop_latency_ps},
		   {"ack_overhead", "", h->ack_overhead}, {"header", "", h->pkt_header_bytes},
		   {"chunk", "", h->chunk_bytes},       {"max_packet", "", h->max_packet}};
	struct torus_params p;
	char why[160], assign[80];
	torus_params_default(&p);
	for (size_t i = 0; i < sizeof(par) / sizeof(par[0]); i++) {
		snprintf(assign, sizeof(assign), "%s=%llu%s", par[i].name, (unsigned long long)par[i].v, par[i].unit);
		if (torus_params_set(&p, assign, why, sizeof(why)))
			return fail(err, errlen, -EINVAL, "corrupt header: %s", why);
	}
	if (torus_params_check(&p, why, sizeof(why)))
		return fail(err, errlen, -EINVAL, "corrupt header: %s", why);
	if (h->flags & ~TORUS_TRACE_F_PACKETS)
		return fail(err, errlen, -EINVAL, "corrupt header: unknown flags 0x%x", h->flags);
	if (memchr(h->program, '\0', sizeof(h->program)) == NULL)
		return fail(err, errlen, -EINVAL, "corrupt header: program name not terminated");
	for (size_t i = 0; i < sizeof(h->reserved); i++)
		if (h->reserved[i])
			return fail(err, errlen, -EINVAL, "corrupt header: reserved byte %zu is set", i);
	for (uint32_t d = h->ndims; d < TORUS_MAX_DIMS; d++)
		if (h->dims[d])
			return fail(err, errlen, -EINVAL, "corrupt header: size %u given for unused dimension %u", h->dims[d], d);
	char text[96];
	size_t used = 0;
	for (uint32_t d = 0; d < h->ndims; d++) {
		if (h->dims[d] < 1 || h->dims[d] > 65536)
			return fail(err, errlen, -EINVAL, "corrupt header: dimension %u has size %u", d, h->dims[d]);
		used += (size_t)snprintf(text + used, sizeof(text) - used, d ? "x%u" : "%u", h->dims[d]);
	}
	if (torus_shape_parse(text, s, why, sizeof(why)))
		return fail(err, errlen, -EINVAL, "corrupt header: torus %s: %s", text, why);
	if (s->nnodes != h->nnodes)
		return fail(err, errlen, -EINVAL, "corrupt header: %u nodes for torus %s", h->nnodes, text);
	if (h->total_cores < h->nnodes || h->total_cores > (uint64_t)h->nnodes * TORUS_MAX_CORES)
		return fail(err, errlen, -EINVAL, "corrupt header: %u cores on %u nodes", h->total_cores, h->nnodes);
	if (size < h->header_bytes)
		return fail(err, errlen, -EINVAL, "truncated trace: %llu bytes", (unsigned long long)size);
	return 0;
}

static int cmp_rec(const void *a, const void *b)
{
	const struct tt_rec *x = a, *y = b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->link < y->link ? -1 : x->link > y->link;
}

static uint64_t sat_add(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

/*
 * 1 if `packets` packets can add up to these totals in the header's link
 * model (torus_wire_bytes, torus_ser_ps): each packet carries at most
 * TORUS_MAX_PAYLOAD bytes; its wire bytes are header + payload rounded up
 * to whole chunks, plus the ack overhead; its serialisation time is
 * ceil(wire * 1e12 / link_bw) ps. The sum of those ceilings lies between
 * the ceiling of the sum and the sum plus one per packet.
 */
static int run_consistent(const struct torus_trace_header *h, uint64_t link_bw, uint64_t packets, uint64_t payload,
			  uint64_t wire, uint64_t busy)
{
	typedef unsigned __int128 u128;
	u128 k = packets;
	if (packets == 0)
		return payload == 0 && wire == 0 && busy == 0;
	if (payload > k * TORUS_MAX_PAYLOAD)
		return 0;
	u128 acks = k * h->ack_overhead, lo = k * h->pkt_header_bytes + payload + acks;
	if (wire < lo || wire > lo + k * (h->chunk_bytes - 1) || (wire - acks) % h->chunk_bytes)
		return 0;
	u128 ps = (u128)wire * 1000000000000u;
	return busy >= (ps + link_bw - 1) / link_bw && busy <= ps / link_bw + k;
}

static const struct torus_trace_link *own_link(const struct tt_trace *t, uint32_t node, uint32_t dim, uint32_t dir)
{
	for (uint32_t k = 0; k < t->nown; k++)
		if (t->own[k].node == node && t->own[k].dim == dim && t->own[k].dir == dir)
			return &t->own[k];
	return NULL;
}
uint64_t tt_link_bw(const struct tt_trace *t, uint32_t node, uint32_t dim, uint32_t dir)
{
	const struct torus_trace_link *l = own_link(t, node, dim, dir);
	return l ? l->link_bw : t->hdr.link_bw;
}
uint64_t tt_link_latency(const struct tt_trace *t, uint32_t node, uint32_t dim, uint32_t dir)
{
	const struct torus_trace_link *l = own_link(t, node, dim, dir);
	return l ? l->hop_latency_ps : t->hdr.hop_latency_ps;
}

/* Why record r (of node `node`) cannot have come from the writer (emu/trace.c), or NULL. */
static const char *rec_impossible(const struct tt_trace *t, uint32_t node, const struct torus_trace_rec *r)
{
	static const uint8_t zero[sizeof(r->reserved)];
	if (r->dim >= t->shape.ndims || r->dir > 1 || !torus_dim_has_links(&t->shape, r->dim))
		return "no such link";
	if (r->kind > TORUS_PKT_KIND_MAX)
		return "unknown packet kind";
	if (memcmp(r->reserved, zero, sizeof(zero)))
		return "reserved bytes set";
	if (r->end_ps < r->start_ps)
		return "it ends before it starts";
	if (r->end_ps > TT_MAX_PS)
		return "it ends after 2^62 ps, later than any job runs";
	/* a run's packets leave back to back (emu_trace_hop) */
	if (r->busy_ps != r->end_ps - r->start_ps)
		return "its busy time is not its span";
	if (r->packets == 0 || ((t->hdr.flags & TORUS_TRACE_F_PACKETS) && r->packets != 1))
		return "impossible packet count";
	if (!run_consistent(&t->hdr, tt_link_bw(t, node, r->dim, r->dir), r->packets, r->payload_bytes, r->wire_bytes,
			    r->busy_ps))
		return "its packets, bytes and busy time do not fit the link model";
	return NULL;
}

/* The end chunk: the job's end and every link direction's counters once. */
static int check_end(const struct tt_trace *t, char *err, size_t errlen)
{
	const struct torus_trace_end *e = &t->end;
	if (e->status > 3 || e->nodes_flushed > t->shape.nnodes || e->emulated_ps > TT_MAX_PS ||
	    !(e->wall_s >= 0 && e->wall_s < 1e12) || e->reserved[0] || e->reserved[1] || e->reserved[2] || e->reserved[3])
		return fail(err, errlen, -EINVAL, "corrupt trace: impossible end chunk (status %u, %u nodes flushed, %llu ps)",
			    e->status, e->nodes_flushed, (unsigned long long)e->emulated_ps);
	unsigned char *seen = calloc(t->nlinks, 1);
	if (!seen)
		return fail(err, errlen, -ENOMEM, "out of memory");
	int rc = 0;
	for (size_t i = 0; i < t->ncounters && !rc; i++) {
		const struct torus_trace_counters *k = &t->counters[i];
		if (k->node >= t->shape.nnodes || k->dim >= t->shape.ndims || k->dir > 1 ||
		    !torus_dim_has_links(&t->shape, k->dim) ||
		    k->to != torus_neighbor(&t->shape, k->node, k->dim, (enum torus_dir)k->dir))
			rc = fail(err, errlen, -EINVAL, "corrupt trace: end chunk names link %zu out of the torus", i);
		else if (seen[tt_link_id(t, k->node, k->dim, k->dir)]++)
			rc = fail(err, errlen, -EINVAL, "corrupt trace: end chunk counts node %u link %s%c twice", k->node,
				  tt_dim_name(k->dim), k->dir ? '-' : '+');
		/* a killed node may leave a counter half updated: only a
		 * finished job's must add up */
		else if (e->status == 0 && !run_consistent(&t->hdr, tt_link_bw(t, k->node, k->dim, k->dir), k->packets,
							   k->payload_bytes, k->wire_bytes, k->busy_ps))
			rc = fail(err, errlen, -EINVAL,
				  "corrupt trace: node %u link %s%c's counters do not fit the header's link model", k->node,
				  tt_dim_name(k->dim), k->dir ? '-' : '+');
	}
	free(seen);
	return rc;
}

/*
 * The span a finished job's records lie in. emulated_ps is the cores'
 * clock when the last one finished, not the links': they may still be
 * draining what was posted without waiting (torus-linkbench --mode post
 * ends its records at twice emulated_ps). A packet starts serialising when
 * it is ready (posted by a core, by emulated_ps, or arrived a hop latency
 * after its previous serialisation ended) or when an earlier packet on its
 * link ends; following that chain back to a core, no record ends later
 * than emulated_ps plus every serialisation time and one hop latency per
 * packet. The counters hold the packets whose records a node lost. A job
 * that did not finish has only TT_MAX_PS: a core stopped in the middle of
 * emu_core_set_clock may leave its clock behind.
 */
static int check_span(const struct tt_trace *t, char *err, size_t errlen)
{
	if (!t->has_end || t->end.status != 0)
		return 0;
	uint64_t busy = 0, packets = 0, cbusy = 0, cpackets = 0;
	for (size_t i = 0; i < t->nrec; i++) {
		busy = sat_add(busy, t->rec[i].busy);
		packets = sat_add(packets, t->rec[i].packets);
	}
	for (size_t i = 0; i < t->ncounters; i++) {
		cbusy = sat_add(cbusy, t->counters[i].busy_ps);
		cpackets = sat_add(cpackets, t->counters[i].packets);
	}
	busy = busy > cbusy ? busy : cbusy;
	packets = packets > cpackets ? packets : cpackets;
	uint64_t lat = t->hdr.hop_latency_ps;
	for (uint32_t k = 0; k < t->nown; k++)
		lat = t->own[k].hop_latency_ps > lat ? t->own[k].hop_latency_ps : lat;
	uint64_t hops = packets && lat > UINT64_MAX / packets ? UINT64_MAX : packets * lat;
	uint64_t drain = sat_add(busy, hops), last = sat_add(t->end.emulated_ps, drain);
	if (t->t_end <= last)
		return 0;
	for (size_t i = 0; i < t->nrec; i++)
		if (t->rec[i].end > last)
			return fail(err, errlen, -EINVAL,
				    "corrupt trace: a record of node %u link %s%c ends at %llu ps, after the job's end "
				    "(%llu ps) and all its traffic (%llu ps more)",
				    t->rec[i].node, tt_dim_name(t->rec[i].dim), t->rec[i].dir ? '-' : '+',
				    (unsigned long long)t->rec[i].end, (unsigned long long)t->end.emulated_ps,
				    (unsigned long long)drain);
	return 0;
}

int tt_load(const char *path, struct tt_trace *t, char *err, size_t errlen)
{
	memset(t, 0, sizeof(*t));
	FILE *f = fopen(path, "rb");
	if (!f)
		return fail(err, errlen, -errno, "cannot open %s: %s", path, strerror(errno));
	struct stat st;
	int rc;
	if (fstat(fileno(f), &st) || !S_ISREG(st.st_mode))
		rc = fail(err, errlen, -EINVAL, "%s: not a regular file", path);
	else
		rc = tt_load_stream(f, (uint64_t)st.st_size, path, t, err, errlen);
	fclose(f);
	return rc;
}

int tt_load_stream(FILE *f, uint64_t size, const char *name, struct tt_trace *t, char *err, size_t errlen)
{
	memset(t, 0, sizeof(*t));
	t->file_bytes = size;
	int rc;
	size_t got = size < sizeof(t->hdr) ? (size_t)size : sizeof(t->hdr);
	if (read_at(f, 0, &t->hdr, got))
		return fail(err, errlen, -EIO, "cannot read %s", name);
	if (got < sizeof(t->hdr)) {
		if (got >= 8 && !memcmp(t->hdr.magic, TORUS_TRACE_MAGIC, 8))
			return fail(err, errlen, -EINVAL, "truncated trace: %llu bytes, the header alone is %zu",
				    (unsigned long long)size, sizeof(t->hdr));
		return fail(err, errlen, -EINVAL, "not a torus trace (%llu bytes, no header)", (unsigned long long)size);
	}
	if ((rc = check_header(&t->hdr, size, &t->shape, err, errlen)))
		return rc;
	t->nlinks = t->shape.nnodes * t->shape.ndims * 2;

	/* first pass: walk the chunks, count records */
	uint64_t off = t->hdr.header_bytes, nrec = 0;
	uint32_t *next_seq = calloc(t->shape.nnodes, sizeof(uint32_t));
	void *buf = NULL;
	size_t bufcap = 0;
	if (!next_seq)
		return fail(err, errlen, -ENOMEM, "out of memory");
	size_t cap = 0;
	rc = 0;
	while (off < size) {
		struct torus_trace_chunk c;
		if (size - off < sizeof(c) || read_at(f, off, &c, sizeof(c))) {
			rc = fail(err, errlen, -EINVAL, "truncated trace: a chunk header at offset %llu is cut short",
				  (unsigned long long)off);
			break;
		}
		static const struct torus_trace_chunk zero;
		if (!memcmp(&c, &zero, sizeof(c))) {
			/* a hole: space a node claimed and never wrote (it was killed
			 * mid-write). Chunks start 16-byte aligned: skip the zeros to
			 * the next one, which must then check out like any other */
			uint64_t from = off;
			unsigned char blk[16];
			off += sizeof(c);
			while (off + sizeof(blk) <= size && !read_at(f, off, blk, sizeof(blk)) &&
			       !memcmp(blk, &zero, sizeof(blk)))
				off += sizeof(blk);
			if (off >= size) {
				rc = fail(err, errlen, -EINVAL, "truncated trace: zeros from offset %llu to the end",
					  (unsigned long long)from);
				break;
			}
			t->hole_bytes += off - from;
			continue;
		}
		if (t->has_end) {
			/* torusrun writes it after every node has stopped writing */
			rc = fail(err, errlen, -EINVAL, "corrupt trace: data after the end chunk, at offset %llu",
				  (unsigned long long)off);
			break;
		}
		off += sizeof(c);
		if (c.kind == TORUS_TRACE_CHUNK_LINKS) {
			/* version 2, only right after the header, once */
			uint64_t want = (uint64_t)c.count * sizeof(struct torus_trace_link);
			struct torus_trace_link l[TORUS_MAX_LINK_SETS];
			if (t->hdr.version < 2 || off - sizeof(c) != t->hdr.header_bytes || c.count == 0 ||
			    c.count > TORUS_MAX_LINK_SETS || c.bytes != want || c.bytes > size - off || c.node || c.seq ||
			    c.reserved || read_at(f, off, l, c.bytes) || torus_trace_chunk_checksum(&c, l) != c.checksum) {
				rc = fail(err, errlen, -EINVAL, "corrupt trace: bad links chunk at offset %llu",
					  (unsigned long long)(off - sizeof(c)));
				break;
			}
			for (uint32_t k = 0; k < c.count && !rc; k++) {
				if (l[k].node >= t->shape.nnodes || l[k].dim >= t->shape.ndims || l[k].dir > 1 || l[k].reserved ||
				    !torus_dim_has_links(&t->shape, l[k].dim) || !l[k].link_bw ||
				    own_link(t, l[k].node, l[k].dim, l[k].dir))
					rc = fail(err, errlen, -EINVAL, "corrupt trace: links chunk entry %u is impossible", k);
				else
					t->own[t->nown++] = l[k];
			}
			if (rc)
				break;
			off += c.bytes;
			continue;
		}
		if (c.kind != TORUS_TRACE_CHUNK_RECORDS && c.kind != TORUS_TRACE_CHUNK_END) {
			rc = fail(err, errlen, -EINVAL, "corrupt trace: unknown chunk kind 0x%08x at offset %llu", c.kind,
				  (unsigned long long)(off - sizeof(c)));
			break;
		}
		if (c.bytes > size - off) {
			rc = fail(err, errlen, -EINVAL, "truncated trace: a chunk at offset %llu needs %u bytes, %llu left",
				  (unsigned long long)(off - sizeof(c)), c.bytes, (unsigned long long)(size - off));
			break;
		}
		uint64_t want = c.kind == TORUS_TRACE_CHUNK_RECORDS
					? (uint64_t)c.count * sizeof(struct torus_trace_rec)
					: sizeof(struct torus_trace_end) + (uint64_t)c.count * sizeof(struct torus_trace_counters);
		int records = c.kind == TORUS_TRACE_CHUNK_RECORDS;
		if (want != c.bytes || c.reserved || (records && (c.node >= t->shape.nnodes || c.count == 0)) ||
		    (!records && (c.node || c.seq))) {
			rc = fail(err, errlen, -EINVAL, "corrupt trace: chunk at offset %llu (node %u, %u entries, %u bytes)",
				  (unsigned long long)(off - sizeof(c)), c.node, c.count, c.bytes);
			break;
		}
		if (c.bytes > bufcap) {
			void *nb = realloc(buf, c.bytes);
			if (!nb) {
				rc = fail(err, errlen, -ENOMEM, "out of memory");
				break;
			}
			buf = nb;
			bufcap = c.bytes;
		}
		if (read_at(f, off, buf, c.bytes)) {
			rc = fail(err, errlen, -EIO, "cannot read %s", name);
			break;
		}
		if (torus_trace_chunk_checksum(&c, buf) != c.checksum) {
			/* a node killed while its chunk was being written leaves
			 * the start written and the rest zeros (space it claimed,
			 * never written): the last record all zeros, which no
			 * record is (it has packets). Its records are missing, as
			 * a hole's are */
			static const struct torus_trace_rec zrec;
			if (records && !memcmp((const char *)buf + c.bytes - sizeof(zrec), &zrec, sizeof(zrec))) {
				t->hole_bytes += sizeof(c) + c.bytes;
				off += c.bytes;
				continue;
			}
			rc = fail(err, errlen, -EINVAL, "corrupt trace: checksum mismatch in the chunk at offset %llu",
				  (unsigned long long)(off - sizeof(c)));
			break;
		}
		if (c.kind == TORUS_TRACE_CHUNK_END) {
			if (t->has_end) {
				rc = fail(err, errlen, -EINVAL, "corrupt trace: two end chunks");
				break;
			}
			uint64_t links = 0;
			for (uint32_t d = 0; d < t->shape.ndims; d++)
				links += torus_dim_has_links(&t->shape, d) ? 2ull * t->shape.nnodes : 0;
			if (c.count != links) {
				rc = fail(err, errlen, -EINVAL, "corrupt trace: end chunk has %u link counters, the torus has %llu",
					  c.count, (unsigned long long)links);
				break;
			}
			memcpy(&t->end, buf, sizeof(t->end));
			t->counters = malloc(c.count ? c.count * sizeof(*t->counters) : 1);
			if (!t->counters) {
				rc = fail(err, errlen, -ENOMEM, "out of memory");
				break;
			}
			memcpy(t->counters, (char *)buf + sizeof(t->end), (size_t)c.count * sizeof(*t->counters));
			t->ncounters = c.count;
			if ((rc = check_end(t, err, errlen)))
				break;
			t->has_end = 1;
		} else {
			if (c.seq != next_seq[c.node]++) {
				rc = fail(err, errlen, -EINVAL, "corrupt trace: node %u chunk %u out of sequence", c.node, c.seq);
				break;
			}
			const struct torus_trace_rec *r = buf;
			if (nrec + c.count > cap) {
				size_t ncap = cap ? cap : 4096;
				while (ncap < nrec + c.count)
					ncap *= 2;
				struct tt_rec *nr = realloc(t->rec, ncap * sizeof(*nr));
				if (!nr) {
					rc = fail(err, errlen, -ENOMEM, "out of memory");
					break;
				}
				t->rec = nr;
				cap = ncap;
			}
			for (uint32_t i = 0; i < c.count; i++, r++) {
				const char *why = rec_impossible(t, c.node, r);
				if (why) {
					rc = fail(err, errlen, -EINVAL,
						  "corrupt trace: record %u of node %u's chunk %u is impossible: %s "
						  "(link %u%c, %llu..%llu ps, busy %llu ps, %u packets, %u/%u bytes)",
						  i, c.node, c.seq, why, r->dim, r->dir ? '-' : '+', (unsigned long long)r->start_ps,
						  (unsigned long long)r->end_ps, (unsigned long long)r->busy_ps, r->packets,
						  r->payload_bytes, r->wire_bytes);
					break;
				}
				struct tt_rec *o = &t->rec[nrec++];
				*o = (struct tt_rec){r->start_ps, r->end_ps, r->busy_ps, r->packets, r->payload_bytes,
						     r->wire_bytes, r->tag, c.node, 0, r->dim, r->dir, r->kind};
				o->link = tt_link_id(t, c.node, r->dim, r->dir);
				if (r->end_ps > t->t_end)
					t->t_end = r->end_ps;
			}
			if (rc)
				break;
		}
		off += c.bytes;
	}
	free(buf);
	free(next_seq);
	t->nrec = nrec;
	/* every node wrote all it counted: the file holds exactly that */
	if (!rc && t->has_end && t->end.status == 0 && t->end.nodes_flushed == t->shape.nnodes && !t->hole_bytes &&
	    t->end.records != nrec)
		rc = fail(err, errlen, -EINVAL, "corrupt trace: the end chunk counts %llu records, the file holds %llu",
			  (unsigned long long)t->end.records, (unsigned long long)nrec);
	if (!rc)
		rc = check_span(t, err, errlen);
	if (rc) {
		tt_free(t);
		return rc;
	}
	if (nrec)
		qsort(t->rec, nrec, sizeof(*t->rec), cmp_rec);
	return 0;
}

void tt_free(struct tt_trace *t)
{
	free(t->rec);
	free(t->counters);
	t->rec = NULL;
	t->counters = NULL;
	t->nrec = t->ncounters = 0;
}

size_t tt_keep_color(struct tt_trace *t, uint32_t c)
{
	size_t n = 0;
	for (size_t i = 0; i < t->nrec; i++) {
		uint32_t tag = t->rec[i].tag;
		if (torus_tag_algo(tag) == TORUS_ALGO_MULTICOLOR && torus_tag_coll(tag) != TORUS_TAG_NONE &&
		    torus_tag_coll(tag) != TORUS_TAG_CONTROL && torus_tag_stream(tag) / 2 == c)
			t->rec[n++] = t->rec[i];
	}
	t->nrec = n;
	t->filtered = 1;
	return n;
}

const char *tt_dim_name(uint32_t dim)
{
	static const char *names[] = {"x", "y", "z", "w", "v", "u"};
	return dim < 6 ? names[dim] : "?";
}

void tt_dir_name(uint32_t dim, uint32_t dir, char *buf, size_t len)
{
	snprintf(buf, len, "%s%c", tt_dim_name(dim), dir ? '-' : '+');
}

static const char *coll_name(uint32_t c)
{
	switch (c) {
	case TORUS_TAG_REDUCE_SCATTER: return "reduce-scatter";
	case TORUS_TAG_ALLGATHER: return "allgather";
	case TORUS_TAG_ALLREDUCE: return "allreduce";
	case TORUS_TAG_ALLTOALL: return "alltoall";
	case TORUS_TAG_ALLTOALLV: return "alltoallv";
	case TORUS_TAG_BCAST: return "bcast";
	case TORUS_TAG_REDUCE: return "reduce";
	case TORUS_TAG_GATHER: return "gather";
	case TORUS_TAG_SCATTER: return "scatter";
	case TORUS_TAG_SCAN: return "scan";
	case TORUS_TAG_P2P: return "point-to-point";
	case TORUS_TAG_RMA: return "one-sided";
	case TORUS_TAG_CONTROL: return "control";
	default: return "untagged";
	}
}

static const char *stage_name(uint32_t s)
{
	return s == TORUS_STAGE_RS ? "RS" : s == TORUS_STAGE_AG ? "AG" : "";
}

/* one-sided traffic's kind (the stage field of its tag) */
static const char *rma_name(uint32_t s)
{
	static const char *kinds[] = {"", "put", "get", "accumulate", "sync"};
	return s < 5 ? kinds[s] : "";
}

void tt_tag_name(uint32_t tag, char *buf, size_t len)
{
	uint32_t c = torus_tag_coll(tag), s = torus_tag_stage(tag), st = torus_tag_stream(tag), a = torus_tag_algo(tag);
	const char *an = torus_tag_algo_name(a), *sp = *an ? " " : "";
	if (c == TORUS_TAG_NONE || c == TORUS_TAG_CONTROL) {
		snprintf(buf, len, "%s", coll_name(c));
		return;
	}
	if (c == TORUS_TAG_RMA) {
		snprintf(buf, len, "%s %s", coll_name(c), rma_name(s));
		return;
	}
	if (a == TORUS_ALGO_MULTICOLOR)
		snprintf(buf, len, "%s multicolor %s%sphase %u color %u%c", coll_name(c), stage_name(s), s ? " " : "",
			 torus_tag_phase(tag), st / 2, st % 2 ? '-' : '+');
	else if (c == TORUS_TAG_ALLTOALL)
		snprintf(buf, len, "%s %s%sphase %u", coll_name(c), an, sp, torus_tag_phase(tag));
	else
		snprintf(buf, len, "%s %s%s%s", coll_name(c), a < 4 ? an : "", a < 4 ? sp : "", stage_name(s));
}

/*
 * Spread every kept record's `amount` (busy time as a fraction of a bin,
 * or payload bytes) evenly over its [start, end) into bins of bin_ps from
 * t0. Bins a record covers whole get the same share: a difference array
 * per link, summed at the end, so the cost is one step per record and per
 * bin however long or overlapping the records are.
 */
static int spread(const struct tt_trace *t, uint64_t t0, uint64_t bin_ps, uint32_t nbins,
		  int (*keep)(const struct tt_rec *, void *), void *arg, double *out, int payload)
{
	if (!t || !out || bin_ps == 0 || nbins == 0)
		return -EINVAL;
	size_t cells = (size_t)t->nlinks * nbins;
	memset(out, 0, cells * sizeof(double));
	/* saturated: a window at the end of time does not wrap */
	uint64_t t1 = bin_ps > (UINT64_MAX - t0) / nbins ? UINT64_MAX : t0 + bin_ps * nbins;
	for (int pass = 0; pass < 2; pass++) {
		/* pass 0: whole bins, as differences; pass 1: the partial bins at
		 * either end, once the differences are summed */
		for (size_t i = 0; i < t->nrec; i++) {
			const struct tt_rec *r = &t->rec[i];
			if (r->link >= t->nlinks || r->end <= t0 || r->start >= t1 || (keep && !keep(r, arg)))
				continue;
			double *u = out + (size_t)r->link * nbins;
			uint64_t span = r->end - r->start;
			if (span == 0) {
				if (pass && payload)
					u[(r->start - t0) / bin_ps] += r->payload;
				continue;
			}
			/* a whole bin's share: for busy time the fraction busy / span,
			 * exactly 1 for a run (so the sums below are exact) */
			double whole = payload ? (double)r->payload * (double)bin_ps / (double)span
					       : (double)r->busy / (double)span;
			uint64_t a = r->start > t0 ? r->start : t0, b = r->end < t1 ? r->end : t1;
			uint64_t ka = (a - t0) / bin_ps, kb = (b - 1 - t0) / bin_ps; /* kb < nbins */
			if (pass == 0) {
				if (kb > ka + 1) {
					u[ka + 1] += whole;
					u[kb] -= whole;
				}
			} else if (ka == kb) {
				u[ka] += whole * (double)(b - a) / (double)bin_ps;
			} else {
				uint64_t end_a = t0 + (ka + 1) * bin_ps, start_b = t0 + kb * bin_ps;
				u[ka] += whole * (double)(end_a - a) / (double)bin_ps;
				u[kb] += whole * (double)(b - start_b) / (double)bin_ps;
			}
		}
		if (pass == 0)
			for (uint32_t l = 0; l < t->nlinks; l++)
				for (uint32_t k = 1; k < nbins; k++)
					out[(size_t)l * nbins + k] += out[(size_t)l * nbins + k - 1];
	}
	/* Summed differences may leave a rounding residue below 0, and a
	 * fully busy bin one a little above 1. Anything more is reported as it
	 * is: records that overlap on one link direction (tt_overlaps) add up
	 * to more than the link can carry, and hiding that at 1 would hide
	 * the engine's error. */
	for (size_t i = 0; i < cells; i++) {
		if (out[i] < 0)
			out[i] = 0;
		else if (!payload && out[i] > 1 && out[i] < 1 + 1e-9)
			out[i] = 1;
	}
	return 0;
}

int tt_bin(const struct tt_trace *t, uint64_t t0, uint64_t bin_ps, uint32_t nbins,
	   int (*keep)(const struct tt_rec *, void *), void *arg, double *util)
{
	return spread(t, t0, bin_ps, nbins, keep, arg, util, 0);
}

int tt_bin_payload(const struct tt_trace *t, uint64_t t0, uint64_t bin_ps, uint32_t nbins, double *bytes)
{
	return spread(t, t0, bin_ps, nbins, NULL, NULL, bytes, 1);
}

size_t *tt_by_link(const struct tt_trace *t)
{
	/* the records are sorted by start: a stable counting sort on the
	 * link keeps that order within each link direction */
	size_t *first = calloc((size_t)t->nlinks + 1, sizeof(*first));
	size_t *idx = malloc((t->nrec ? t->nrec : 1) * sizeof(*idx));
	if (!first || !idx) {
		free(first);
		free(idx);
		return NULL;
	}
	for (size_t i = 0; i < t->nrec; i++)
		first[t->rec[i].link + 1]++;
	for (uint32_t l = 0; l < t->nlinks; l++)
		first[l + 1] += first[l];
	for (size_t i = 0; i < t->nrec; i++)
		idx[first[t->rec[i].link]++] = i;
	free(first);
	return idx;
}

int tt_overlaps(const struct tt_trace *t, struct tt_overlap_stats *out)
{
	memset(out, 0, sizeof(*out));
	size_t *idx = tt_by_link(t);
	if (!idx)
		return -ENOMEM;
	/* against the latest end of the earlier records on the link, not
	 * only the one just before: a record inside a long one would
	 * otherwise hide the next that overlaps the long one too */
	uint64_t reach = 0;
	uint32_t link = UINT32_MAX, counted = UINT32_MAX;
	for (size_t k = 0; k < t->nrec; k++) {
		const struct tt_rec *r = &t->rec[idx[k]];
		if (r->link != link) {
			link = r->link;
			reach = r->end;
			continue;
		}
		if (r->start < reach) {
			uint64_t lap = (r->end < reach ? r->end : reach) - r->start;
			/* rec is sorted by start: the lowest index is the earliest */
			if (out->records++ == 0 || idx[k] < out->first)
				out->first = idx[k];
			if (counted != link) {
				counted = link;
				out->links++;
			}
			out->overlap_ps += lap;
			if (lap > out->max_overlap_ps)
				out->max_overlap_ps = lap;
		}
		if (r->end > reach)
			reach = r->end;
	}
	free(idx);
	return 0;
}

int tt_in_phase(const struct tt_rec *r, void *arg)
{
	const struct tt_phase *p = arg;
	return torus_tag_coll(r->tag) == p->coll && torus_tag_stage(r->tag) == p->stage &&
	       torus_tag_phase(r->tag) == p->phase;
}

int tt_phases(const struct tt_trace *t, struct tt_phase **out)
{
	size_t n = 0, cap = 8;
	struct tt_phase *p = malloc(cap * sizeof(*p));
	uint16_t *at = calloc(TT_PHASE_KEYS, sizeof(*at)); /* phase key -> index + 1 */
	if (!p || !at) {
		free(p);
		free(at);
		return -ENOMEM;
	}
	for (size_t i = 0; i < t->nrec; i++) {
		const struct tt_rec *r = &t->rec[i];
		uint32_t c = torus_tag_coll(r->tag);
		if (c == TORUS_TAG_NONE || c == TORUS_TAG_CONTROL)
			continue;
		size_t k = at[tt_phase_key(r->tag)];
		if (k-- == 0) {
			if (n == cap) {
				struct tt_phase *q = realloc(p, 2 * cap * sizeof(*p));
				if (!q) {
					free(p);
					free(at);
					return -ENOMEM;
				}
				p = q;
				cap *= 2;
			}
			k = n++;
			at[tt_phase_key(r->tag)] = (uint16_t)n;
			p[k] = (struct tt_phase){c, torus_tag_stage(r->tag), torus_tag_phase(r->tag), r->start, r->end, ""};
			if (c == TORUS_TAG_RMA)
				snprintf(p[k].name, sizeof(p[k].name), "%s %s", coll_name(c), rma_name(p[k].stage));
			else
				snprintf(p[k].name, sizeof(p[k].name), "%s %s%sphase %u", coll_name(c),
					 stage_name(p[k].stage), p[k].stage ? " " : "", p[k].phase);
		}
		if (r->start < p[k].start)
			p[k].start = r->start;
		if (r->end > p[k].end)
			p[k].end = r->end;
	}
	free(at);
	*out = p;
	return (int)n;
}

int tt_linkspec_parse(const char *s, struct tt_linkspec *ls)
{
	static const char dims[] = "xyzwvu"; /* tt_dim_name's letters */
	*ls = (struct tt_linkspec){0};
	if (!strcmp(s, "all")) {
		ls->all = 1;
		return 0;
	}
	const char *colon = strchr(s, ':');
	if (!colon || colon == s || colon - s > 23 || !colon[1] || !strchr(dims, colon[1]) ||
	    (colon[2] != '+' && colon[2] != '-') || colon[3])
		return -1;
	uint64_t node = 0;
	for (const char *p = s; p < colon; p++) {
		if (*p < '0' || *p > '9')
			return -1;
		node = node * 10 + (uint64_t)(*p - '0');
		if (node > UINT32_MAX)
			return -1;
	}
	ls->node = node;
	ls->dim = (uint32_t)(strchr(dims, colon[1]) - dims);
	ls->dir = colon[2] == '-';
	return 0;
}

int tt_linkspec_link(const struct tt_trace *t, const struct tt_linkspec *ls, uint32_t *id, char *err, size_t errlen)
{
	char shape[64];
	torus_shape_format(&t->shape, shape, sizeof(shape));
	if (ls->all) {
		*id = UINT32_MAX;
		return 0;
	}
	if (ls->node >= t->shape.nnodes) {
		snprintf(err, errlen, "no node %llu in the torus %s (nodes 0..%u)", (unsigned long long)ls->node, shape,
			 t->shape.nnodes - 1);
		return -1;
	}
	if (ls->dim >= t->shape.ndims) {
		snprintf(err, errlen, "the torus %s has no dimension %s", shape, tt_dim_name(ls->dim));
		return -1;
	}
	if (!torus_dim_has_links(&t->shape, ls->dim)) {
		snprintf(err, errlen, "dimension %s of the torus %s has size 1: no links", tt_dim_name(ls->dim), shape);
		return -1;
	}
	*id = tt_link_id(t, (uint32_t)ls->node, ls->dim, ls->dir);
	return 0;
}
