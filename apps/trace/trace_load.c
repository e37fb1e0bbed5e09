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
	if (h->version != TORUS_TRACE_VERSION)
		return fail(err, errlen, -EINVAL, "trace format version %u; this torus-trace reads version %u",
			    h->version, TORUS_TRACE_VERSION);
	if (h->header_bytes != sizeof(*h) || h->record_bytes != sizeof(struct torus_trace_rec))
		return fail(err, errlen, -EINVAL, "corrupt header: header %u / record %u bytes, expected %zu / %zu",
			    h->header_bytes, h->record_bytes, sizeof(*h), sizeof(struct torus_trace_rec));
	if (torus_trace_header_checksum(h) != h->checksum)
		return fail(err, errlen, -EINVAL, "corrupt header: checksum mismatch");
	if (h->ndims < 1 || h->ndims > TORUS_MAX_DIMS)
		return fail(err, errlen, -EINVAL, "corrupt header: %u dimensions", h->ndims);
	if (h->link_bw == 0 || h->max_packet == 0 || h->max_packet > TORUS_SLOT_BYTES)
		return fail(err, errlen, -EINVAL, "corrupt header: machine parameters out of range");
	if (memchr(h->program, '\0', sizeof(h->program)) == NULL)
		return fail(err, errlen, -EINVAL, "corrupt header: program name not terminated");
	char text[96];
	size_t used = 0;
	for (uint32_t d = 0; d < h->ndims; d++) {
		if (h->dims[d] < 1 || h->dims[d] > 65536)
			return fail(err, errlen, -EINVAL, "corrupt header: dimension %u has size %u", d, h->dims[d]);
		used += (size_t)snprintf(text + used, sizeof(text) - used, d ? "x%u" : "%u", h->dims[d]);
	}
	char why[128];
	if (torus_shape_parse(text, s, why, sizeof(why)))
		return fail(err, errlen, -EINVAL, "corrupt header: torus %s: %s", text, why);
	if (s->nnodes != h->nnodes)
		return fail(err, errlen, -EINVAL, "corrupt header: %u nodes for torus %s", h->nnodes, text);
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

int tt_load(const char *path, struct tt_trace *t, char *err, size_t errlen)
{
	memset(t, 0, sizeof(*t));
	FILE *f = fopen(path, "rb");
	if (!f)
		return fail(err, errlen, -errno, "cannot open %s: %s", path, strerror(errno));
	struct stat st;
	if (fstat(fileno(f), &st) || !S_ISREG(st.st_mode)) {
		fclose(f);
		return fail(err, errlen, -EINVAL, "%s: not a regular file", path);
	}
	uint64_t size = (uint64_t)st.st_size;
	t->file_bytes = size;
	int rc;
	size_t got = size < sizeof(t->hdr) ? (size_t)size : sizeof(t->hdr);
	if (read_at(f, 0, &t->hdr, got)) {
		fclose(f);
		return fail(err, errlen, -EIO, "cannot read %s", path);
	}
	if (got < sizeof(t->hdr)) {
		fclose(f);
		if (got >= 8 && !memcmp(t->hdr.magic, TORUS_TRACE_MAGIC, 8))
			return fail(err, errlen, -EINVAL, "truncated trace: %llu bytes, the header alone is %zu",
				    (unsigned long long)size, sizeof(t->hdr));
		return fail(err, errlen, -EINVAL, "not a torus trace (%llu bytes, no header)", (unsigned long long)size);
	}
	if ((rc = check_header(&t->hdr, size, &t->shape, err, errlen))) {
		fclose(f);
		return rc;
	}
	t->nlinks = t->shape.nnodes * t->shape.ndims * 2;

	/* first pass: walk the chunks, count records */
	uint64_t off = t->hdr.header_bytes, nrec = 0;
	uint32_t *next_seq = calloc(t->shape.nnodes, sizeof(uint32_t));
	void *buf = NULL;
	size_t bufcap = 0;
	if (!next_seq) {
		fclose(f);
		return fail(err, errlen, -ENOMEM, "out of memory");
	}
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
		off += sizeof(c);
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
		if (want != c.bytes || (c.kind == TORUS_TRACE_CHUNK_RECORDS && c.node >= t->shape.nnodes)) {
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
			rc = fail(err, errlen, -EIO, "cannot read %s", path);
			break;
		}
		if (torus_trace_chunk_checksum(&c, buf) != c.checksum) {
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
			for (size_t i = 0; i < t->ncounters && !rc; i++) {
				const struct torus_trace_counters *k = &t->counters[i];
				if (k->node >= t->shape.nnodes || k->dim >= t->shape.ndims || k->dir > 1 ||
				    !torus_dim_has_links(&t->shape, k->dim))
					rc = fail(err, errlen, -EINVAL, "corrupt trace: end chunk names link %zu out of the torus", i);
			}
			if (rc)
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
				if (r->dim >= t->shape.ndims || r->dir > 1 || !torus_dim_has_links(&t->shape, r->dim) ||
				    r->end_ps < r->start_ps || r->busy_ps > r->end_ps - r->start_ps || r->packets == 0 ||
				    r->wire_bytes < r->payload_bytes) {
					rc = fail(err, errlen, -EINVAL,
						  "corrupt trace: record %u of node %u's chunk %u is impossible "
						  "(link %u%c, %llu..%llu ps, %u packets)",
						  i, c.node, c.seq, r->dim, r->dir ? '-' : '+', (unsigned long long)r->start_ps,
						  (unsigned long long)r->end_ps, r->packets);
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
	fclose(f);
	if (rc) {
		tt_free(t);
		return rc;
	}
	t->nrec = nrec;
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
	case TORUS_TAG_CONTROL: return "control";
	default: return "untagged";
	}
}

static const char *stage_name(uint32_t s)
{
	return s == TORUS_STAGE_RS ? "RS" : s == TORUS_STAGE_AG ? "AG" : "";
}

void tt_tag_name(uint32_t tag, char *buf, size_t len)
{
	static const char *algos[] = {"", "multicolor ", "ring ", "direct "};
	uint32_t c = torus_tag_coll(tag), s = torus_tag_stage(tag), st = torus_tag_stream(tag), a = torus_tag_algo(tag);
	if (c == TORUS_TAG_NONE || c == TORUS_TAG_CONTROL) {
		snprintf(buf, len, "%s", coll_name(c));
		return;
	}
	if (a == TORUS_ALGO_MULTICOLOR)
		snprintf(buf, len, "%s multicolor %s%sphase %u color %u%c", coll_name(c), stage_name(s), s ? " " : "",
			 torus_tag_phase(tag), st / 2, st % 2 ? '-' : '+');
	else
		snprintf(buf, len, "%s %s%s%s", coll_name(c), a < 4 ? algos[a] : "", stage_name(s), "");
}

int tt_bin(const struct tt_trace *t, uint64_t t0, uint64_t bin_ps, uint32_t nbins,
	   int (*keep)(const struct tt_rec *, void *), void *arg, double *util)
{
	if (!t || !util || bin_ps == 0 || nbins == 0)
		return -EINVAL;
	memset(util, 0, (size_t)t->nlinks * nbins * sizeof(double));
	uint64_t t1 = t0 + bin_ps * nbins;
	for (size_t i = 0; i < t->nrec; i++) {
		const struct tt_rec *r = &t->rec[i];
		if (r->end <= t0 || r->start >= t1 || (keep && !keep(r, arg)))
			continue;
		double *u = util + (size_t)r->link * nbins;
		uint64_t span = r->end - r->start;
		if (span == 0)
			continue;
		double rate = (double)r->busy / (double)span; /* busy per ps of the record's span */
		uint64_t a = r->start > t0 ? r->start : t0, b = r->end < t1 ? r->end : t1;
		for (uint64_t k = (a - t0) / bin_ps; k < nbins && t0 + k * bin_ps < b; k++) {
			uint64_t lo = t0 + k * bin_ps, hi = lo + bin_ps;
			uint64_t x = a > lo ? a : lo, y = b < hi ? b : hi;
			if (y > x)
				u[k] += rate * (double)(y - x) / (double)bin_ps;
		}
	}
	/* where the shared-link approximation (README, "When links are
	 * shared") lets a late packet overlap a stretch, a bin can add up to a
	 * little over 1: a link is at most fully busy */
	for (size_t i = 0; i < (size_t)t->nlinks * nbins; i++)
		if (util[i] > 1)
			util[i] = 1;
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
	if (!p)
		return -ENOMEM;
	for (size_t i = 0; i < t->nrec; i++) {
		const struct tt_rec *r = &t->rec[i];
		uint32_t c = torus_tag_coll(r->tag);
		if (c == TORUS_TAG_NONE || c == TORUS_TAG_CONTROL)
			continue;
		size_t k;
		for (k = 0; k < n; k++)
			if (tt_in_phase(r, &p[k]))
				break;
		if (k == n) {
			if (n == cap) {
				struct tt_phase *q = realloc(p, 2 * cap * sizeof(*p));
				if (!q) {
					free(p);
					return -ENOMEM;
				}
				p = q;
				cap *= 2;
			}
			p[n] = (struct tt_phase){c, torus_tag_stage(r->tag), torus_tag_phase(r->tag), r->start, r->end, ""};
			snprintf(p[n].name, sizeof(p[n].name), "%s %s%sphase %u", coll_name(c), stage_name(p[n].stage),
				 p[n].stage ? " " : "", p[n].phase);
			n++;
		}
		if (r->start < p[k].start)
			p[k].start = r->start;
		if (r->end > p[k].end)
			p[k].end = r->end;
	}
	*out = p;
	return (int)n;
}
