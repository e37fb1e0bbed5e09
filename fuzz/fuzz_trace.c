/*
 * Fuzz target: torus-trace's loader and every output it feeds
 * (apps/trace/: tt_load_stream, summary, CSV, Perfetto, SVG, HTML, --color).
 *
 * Input: a trace file, or a mode byte followed by one. An input that starts
 * with the TORUSTRC magic is a trace as it is (so real traces are seeds and
 * crashes replay as files torus-trace reads); otherwise byte 0 is the mode:
 *   bit 0     keep the bytes as they are (the checksum checks)
 *   bits 1-4  --color C (C > 12: none)
 *   bits 5-7  k: --windows 9k, and CSV bins of t_end >> 3k ps (k = 0: default)
 * Random bytes never pass the FNV-1a checksums, so unless bit 0 is set the
 * harness first recomputes the header's and every chunk's, walking the
 * chunks as the loader does: what an attacker rewriting a trace would do,
 * and what lets the fuzzer reach the checks of every field.
 *
 * A trace that loads must keep the loader's promises (trace_tool.h), or
 * the target aborts: every record on a real link, start <= end <= t_end <=
 * TT_MAX_PS, a finished job's records within its end plus the time its
 * traffic can take; the summary's totals and the CSV's bytes equal the
 * records'; no output fails. Outputs go to memory or /dev/null. Tori of
 * more than FUZZ_MAX_NODES nodes are only loaded: their outputs run the
 * same code, slower.
 */
#include "trace_tool.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_MAX_NODES 256u
#define FUZZ_MAX_CSV_ROWS 65536u

#define CHECK(cond)                                                                                    \
	do {                                                                                           \
		if (!(cond)) {                                                                         \
			fprintf(stderr, "fuzz_trace: invariant broken at line %d: %s\n", __LINE__, #cond); \
			abort();                                                                       \
		}                                                                                      \
	} while (0)

/* Recompute the checksums of the header and of every chunk in place. */
static void fix_checksums(uint8_t *b, size_t n)
{
	struct torus_trace_header h;
	struct torus_trace_chunk c;
	static const uint8_t zero[sizeof(c)];

	if (n < sizeof(h))
		return;
	memcpy(&h, b, sizeof(h));
	h.checksum = torus_trace_header_checksum(&h);
	memcpy(b, &h, sizeof(h));
	for (size_t off = sizeof(h); off <= n && n - off >= sizeof(c);) {
		if (!memcmp(b + off, zero, sizeof(c))) {
			/* a hole, skipped as the loader does */
			for (off += sizeof(c); off <= n && n - off >= 16 && !memcmp(b + off, zero, 16); off += 16)
				;
			continue;
		}
		memcpy(&c, b + off, sizeof(c));
		if (c.bytes > n - off - sizeof(c))
			return;
		c.checksum = torus_trace_chunk_checksum(&c, b + off + sizeof(c));
		memcpy(b + off, &c, sizeof(c));
		off += sizeof(c) + c.bytes;
	}
}

static uint64_t sat_add(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

/* The loader's promises about a trace it accepted. */
static void check_loaded(const struct tt_trace *t)
{
	uint64_t t_end = 0, busy = 0, packets = 0;

	CHECK(t->shape.nnodes >= 1 && t->shape.nnodes <= TORUS_MAX_NODES);
	CHECK(t->nlinks == t->shape.nnodes * t->shape.ndims * 2);
	CHECK(t->t_end <= TT_MAX_PS);
	for (size_t i = 0; i < t->nrec; i++) {
		const struct tt_rec *r = &t->rec[i];
		CHECK(r->node < t->shape.nnodes && r->dim < t->shape.ndims && r->dir < 2);
		CHECK(r->link == tt_link_id(t, r->node, r->dim, r->dir) && tt_link_exists(t, r->link));
		CHECK(r->start <= r->end && r->end <= t->t_end && r->busy == r->end - r->start);
		CHECK(r->packets >= 1 && r->wire >= r->payload && r->kind <= TORUS_PKT_KIND_MAX);
		CHECK(i == 0 || r->start >= t->rec[i - 1].start);
		t_end = r->end > t_end ? r->end : t_end;
		busy = sat_add(busy, r->busy);
		packets = sat_add(packets, r->packets);
	}
	CHECK(t_end == t->t_end);
	if (!t->has_end)
		return;
	CHECK(t->end.status <= 3 && t->end.nodes_flushed <= t->shape.nnodes && t->end.emulated_ps <= TT_MAX_PS);
	uint64_t links = 0, cbusy = 0, cpackets = 0;
	for (uint32_t id = 0; id < t->nlinks; id++)
		links += (uint64_t)tt_link_exists(t, id);
	CHECK(t->ncounters == links);
	for (size_t i = 0; i < t->ncounters; i++) {
		const struct torus_trace_counters *k = &t->counters[i];
		CHECK(k->node < t->shape.nnodes && k->dim < t->shape.ndims && k->dir < 2);
		CHECK(torus_dim_has_links(&t->shape, k->dim));
		cbusy = sat_add(cbusy, k->busy_ps);
		cpackets = sat_add(cpackets, k->packets);
	}
	if (t->end.status == 0) {
		/* a finished job's records end by its end plus all its traffic */
		busy = busy > cbusy ? busy : cbusy;
		packets = packets > cpackets ? packets : cpackets;
		long double last = (long double)t->end.emulated_ps + (long double)busy +
				   (long double)packets * (long double)t->hdr.hop_latency_ps;
		CHECK((long double)t->t_end <= last);
	}
}

/* The summary's "total" row equals the records' sums. */
static void check_summary(const struct tt_trace *t, int *status)
{
	char *text = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);
	CHECK(m != NULL);
	int rc = tt_write_summary(t, m);
	CHECK(fclose(m) == 0);
	CHECK(rc == 0 || rc == -EPROTO);
	*status = rc;
	unsigned long long pk = 0, pay = 0, wire = 0, want[3] = {0, 0, 0};
	const char *row = strstr(text, "\n total ");
	CHECK(row && sscanf(row, " total %llu %llu %llu", &pk, &pay, &wire) == 3);
	for (size_t i = 0; i < t->nrec; i++) {
		want[0] += t->rec[i].packets;
		want[1] += t->rec[i].payload;
		want[2] += t->rec[i].wire;
	}
	CHECK(pk == want[0] && pay == want[1] && wire == want[2]);
	/* a trace whose counters disagree says so, and only then fails */
	CHECK(rc == 0 || strstr(text, "differ from the trace"));
	free(text);
}

/* The CSV's payload column adds up to the records' payload; utilisation
 * stays within [0, 1]. */
static void check_csv(const struct tt_trace *t, uint64_t bin_ps)
{
	uint64_t nbins;
	if (tt_csv_bins(t, bin_ps, &nbins)) {
		CHECK(nbins > TT_CSV_MAX_BINS || nbins * t->nlinks > TT_CSV_MAX_ROWS);
		return; /* torus-trace says so and exits 2 */
	}
	if (nbins * t->nlinks > FUZZ_MAX_CSV_ROWS)
		return;
	char *text = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);
	CHECK(m != NULL);
	CHECK(tt_write_csv(t, bin_ps, m) == 0);
	CHECK(fclose(m) == 0);
	double sum = 0, want = 0;
	const char *line = strchr(text, '\n');
	for (; line && line[1]; line = strchr(line + 1, '\n')) {
		double pay, u;
		CHECK(sscanf(line + 1, "%*f,%*f,%*u,%*u,%*[xyzwvu],%*[+-],%lf,%lf", &pay, &u) == 2);
		CHECK(pay >= 0 && u >= 0); /* uncapped: overlapping records add up past 1 */
		sum += pay;
	}
	for (size_t i = 0; i < t->nrec; i++)
		want += t->rec[i].payload;
	/* each bin rounds to a whole byte */
	CHECK(fabs(sum - want) <= 0.5 * (double)(nbins * t->nlinks) + 1e-9 * want);
	free(text);
}

static void run_outputs(const struct tt_trace *t, uint32_t k)
{
	char err[512];
	int status;
	struct tt_svg_opts so = {9 * k};

	check_summary(t, &status);
	check_csv(t, k ? (t->t_end >> (3 * k)) : 0);
	CHECK(tt_write_perfetto(t, "/dev/null", err, sizeof(err)) == 0);
	CHECK(tt_write_svg(t, "/dev/null", &so, err, sizeof(err)) == 0);
	CHECK(tt_write_html(t, "/dev/null", err, sizeof(err)) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t mode = 0;
	if (size >= 8 && !memcmp(data, TORUS_TRACE_MAGIC, 8)) {
		mode = 0;
	} else if (size) {
		mode = data[0];
		data++;
		size--;
	}
	/* a copy to fix up; one byte at least, as fmemopen wants */
	uint8_t *b = malloc(size ? size : 1);
	CHECK(b != NULL);
	if (size)
		memcpy(b, data, size);
	if (!(mode & 1))
		fix_checksums(b, size);
	FILE *f = fmemopen(b, size ? size : 1, "rb");
	CHECK(f != NULL);
	struct tt_trace t;
	char err[512] = "";
	int rc = tt_load_stream(f, size, "input", &t, err, sizeof(err));
	fclose(f);
	if (rc) {
		/* one line, as torus-trace prints it */
		CHECK(rc == -EINVAL && err[0] && !strchr(err, '\n'));
		free(b);
		return 0;
	}
	check_loaded(&t);
	uint32_t color = (mode >> 1) & 15, k = mode >> 5;
	if (t.shape.nnodes <= FUZZ_MAX_NODES) {
		run_outputs(&t, k);
		if (color <= 2 * TORUS_MAX_DIMS) {
			size_t n = tt_keep_color(&t, color);
			CHECK(n == t.nrec && t.filtered);
			for (size_t i = 0; i < t.nrec; i++)
				CHECK(torus_tag_algo(t.rec[i].tag) == TORUS_ALGO_MULTICOLOR &&
				      torus_tag_stream(t.rec[i].tag) / 2 == color);
			if (n)
				run_outputs(&t, k);
		}
	}
	tt_free(&t);
	free(b);
	return 0;
}
