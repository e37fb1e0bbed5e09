/*
 * torus-trace's text outputs: the per-link summary (checked against the
 * link counters torusrun stored in the trace's end chunk, and for records
 * that overlap on a link), the binned CSV time series, the list of records
 * (--packets), and the Chrome trace-event JSON for the Perfetto UI.
 */
#include "trace_tool.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct link_tot {
	uint64_t packets, payload, wire, busy;
};

static void coords(const struct tt_trace *t, uint32_t node, char *buf, size_t len)
{
	uint32_t c[TORUS_MAX_DIMS];
	size_t used = 0;
	torus_rank_to_coords(&t->shape, node, c);
	buf[0] = '\0';
	for (uint32_t d = 0; d < t->shape.ndims && used + 1 < len; d++)
		used += (size_t)snprintf(buf + used, len - used, d ? ",%u" : "(%u", c[d]);
	if (used + 1 < len)
		snprintf(buf + used, len - used, ")");
}

/* ceil(a / b), b > 0, for any a */
static uint64_t div_up(uint64_t a, uint64_t b) { return a / b + (a % b != 0); }

/* Bins for the peak: the given width, else 1/100 of the trace. */
static uint64_t default_bin(const struct tt_trace *t)
{
	uint64_t b = div_up(t->t_end, 100);
	return b ? b : 1;
}

/* Bins per binning pass: nlinks x bins within TT_BIN_BUDGET doubles. */
static uint32_t bins_per_pass(const struct tt_trace *t, uint32_t nbins)
{
	uint32_t n = TT_BIN_BUDGET / (t->nlinks ? t->nlinks : 1);
	return n < 1 ? 1 : n > nbins ? nbins : n;
}

int tt_csv_bins(const struct tt_trace *t, uint64_t bin_ps, uint64_t *nbins)
{
	uint64_t nb = div_up(t->t_end, bin_ps ? bin_ps : default_bin(t));
	*nbins = nb ? nb : 1;
	return *nbins > TT_CSV_MAX_BINS || *nbins * t->nlinks > TT_CSV_MAX_ROWS ? -E2BIG : 0;
}

int tt_write_summary(const struct tt_trace *t, FILE *out)
{
	struct link_tot *lt = calloc(t->nlinks, sizeof(*lt));
	uint64_t bin = default_bin(t);
	uint32_t nbins = (uint32_t)div_up(t->t_end, bin), chunk;
	if (!nbins)
		nbins = 1;
	chunk = bins_per_pass(t, nbins);
	double *util = malloc((size_t)t->nlinks * chunk * sizeof(double));
	double *peaks = calloc(t->nlinks, sizeof(double));
	struct tt_overlap_stats ov;
	if (!lt || !util || !peaks || tt_overlaps(t, &ov)) {
		free(lt);
		free(util);
		free(peaks);
		return -ENOMEM;
	}
	for (size_t i = 0; i < t->nrec; i++) {
		struct link_tot *l = &lt[t->rec[i].link];
		l->packets += t->rec[i].packets;
		l->payload += t->rec[i].payload;
		l->wire += t->rec[i].wire;
		l->busy += t->rec[i].busy;
	}
	for (uint32_t b0 = 0; b0 < nbins; b0 += chunk) {
		uint32_t nb = nbins - b0 < chunk ? nbins - b0 : chunk;
		tt_bin(t, (uint64_t)b0 * bin, bin, nb, NULL, NULL, util);
		for (uint32_t id = 0; id < t->nlinks; id++)
			for (uint32_t b = 0; b < nb; b++)
				if (util[(size_t)id * nb + b] > peaks[id])
					peaks[id] = util[(size_t)id * nb + b];
	}
	free(util);

	char shape[64];
	fprintf(out, "trace: torus %s, %u nodes, %u cores; %zu records; emulated time %.3f us\n",
		torus_shape_format(&t->shape, shape, sizeof(shape)), t->shape.nnodes, t->hdr.total_cores, t->nrec,
		t->has_end ? t->end.emulated_ps / 1e6 : t->t_end / 1e6);
	/* the job's command line comes from the file: no line breaks or
	 * terminal escapes from it (bytes other than printable ASCII show as ?) */
	fputs("program: ", out);
	for (const unsigned char *p = (const unsigned char *)t->hdr.program; *p; p++)
		fputc(*p >= 0x20 && *p < 0x7f ? *p : '?', out);
	fputc('\n', out);
	for (uint32_t k = 0; k < t->nown; k++) {
		/* torusrun --link: say which links are not like the others */
		char cs[48], dn[8];
		coords(t, t->own[k].node, cs, sizeof(cs));
		tt_dir_name(t->own[k].dim, t->own[k].dir, dn, sizeof(dn));
		fprintf(out, "link of its own: node %u %s %s: %.3f MB/s, hop latency %.3f ns (the others: %.3f MB/s, %.3f ns)\n",
			t->own[k].node, cs, dn, t->own[k].link_bw / 1e6, t->own[k].hop_latency_ps / 1e3, t->hdr.link_bw / 1e6,
			t->hdr.hop_latency_ps / 1e3);
	}
	fprintf(out, "busy %% = busy time / %.3f us (the last packet's end); peak %% = busy time in the busiest "
		     "%.3f us bin / the bin, over 100 where records overlap\n\n",
		t->t_end / 1e6, bin / 1e6);
	fprintf(out, "%6s %-14s %-4s %6s %12s %14s %14s %7s %7s\n", "node", "coords", "link", "to", "packets",
		"payload B", "wire B", "busy %", "peak %");
	struct link_tot tot = {0};
	for (uint32_t id = 0; id < t->nlinks; id++) {
		if (!tt_link_exists(t, id))
			continue;
		uint32_t node, dim, dir;
		char cs[48], dn[8];
		tt_link_of(t, id, &node, &dim, &dir);
		coords(t, node, cs, sizeof(cs));
		tt_dir_name(dim, dir, dn, sizeof(dn));
		double peak = peaks[id];
		const struct link_tot *l = &lt[id];
		/* busy % may pass 100 too where records overlap: as it is */
		fprintf(out, "%6u %-14s %-4s %6u %12llu %14llu %14llu %7.2f %7.1f%s\n", node, cs, dn,
			torus_neighbor(&t->shape, node, dim, (enum torus_dir)dir), (unsigned long long)l->packets,
			(unsigned long long)l->payload, (unsigned long long)l->wire,
			t->t_end ? 100.0 * (double)l->busy / (double)t->t_end : 0.0, 100.0 * peak,
			tt_link_bw(t, node, dim, dir) != t->hdr.link_bw ||
					tt_link_latency(t, node, dim, dir) != t->hdr.hop_latency_ps
				? "  (its own link_bw/hop_latency)"
				: "");
		tot.packets += l->packets;
		tot.payload += l->payload;
		tot.wire += l->wire;
		tot.busy += l->busy;
	}
	fprintf(out, "%6s %-14s %-4s %6s %12llu %14llu %14llu\n\n", "total", "", "", "", (unsigned long long)tot.packets,
		(unsigned long long)tot.payload, (unsigned long long)tot.wire);

	/* per dimension and direction, and per collective phase */
	fprintf(out, "%-6s %14s %8s\n", "dir", "payload B", "busy %");
	for (uint32_t d = 0; d < t->shape.ndims; d++) {
		if (!torus_dim_has_links(&t->shape, d))
			continue;
		for (uint32_t dir = 0; dir < 2; dir++) {
			uint64_t pay = 0, busy = 0;
			for (uint32_t n = 0; n < t->shape.nnodes; n++) {
				pay += lt[tt_link_id(t, n, d, dir)].payload;
				busy += lt[tt_link_id(t, n, d, dir)].busy;
			}
			char dn[8];
			tt_dir_name(d, dir, dn, sizeof(dn));
			fprintf(out, "%-6s %14llu %8.2f\n", dn, (unsigned long long)pay,
				t->t_end ? 100.0 * (double)busy / ((double)t->t_end * t->shape.nnodes) : 0.0);
		}
	}
	struct tt_phase *ph = NULL;
	int np = tt_phases(t, &ph);
	uint64_t *pay = np > 0 ? calloc(TT_PHASE_KEYS, sizeof(*pay)) : NULL;
	if (pay) {
		for (size_t i = 0; i < t->nrec; i++)
			pay[tt_phase_key(t->rec[i].tag)] += t->rec[i].payload;
		fprintf(out, "\n%-36s %12s %12s %14s\n", "phase", "start us", "end us", "payload B");
		for (int k = 0; k < np; k++)
			fprintf(out, "%-36s %12.3f %12.3f %14llu\n", ph[k].name, ph[k].start / 1e6, ph[k].end / 1e6,
				(unsigned long long)pay[ph[k].coll << 8 | ph[k].stage << 4 | ph[k].phase]);
	}
	free(pay);
	free(ph);

	/* a link serialises one packet at a time: a record that starts before
	 * an earlier one on its link direction has left is time charged twice */
	if (!ov.records) {
		fprintf(out, "\noverlaps: none (no %s starts before the previous one on its link direction has left)\n",
			t->hdr.flags & TORUS_TRACE_F_PACKETS ? "packet" : "run of packets");
	} else {
		const struct tt_rec *r = &t->rec[ov.first];
		char dn[8];
		tt_dir_name(r->dim, r->dir, dn, sizeof(dn));
		/* to the ps: one overlap can be a small part of a packet time */
		fprintf(out, "\noverlaps: %zu records on %u link directions overlap an earlier one on their link "
			     "direction, %.6f us of busy time in all (at most %.6f us at once; the first: node %u %s at "
			     "%.6f us)\n",
			ov.records, ov.links, ov.overlap_ps / 1e6, ov.max_overlap_ps / 1e6, r->node, dn, r->start / 1e6);
	}

	/* the trace against the link counters torusrun kept */
	int rc = 0;
	if (t->filtered) {
		fprintf(out, "\n(only the records of one color: no check against the link counters)\n");
	} else if (!t->has_end) {
		fprintf(out, "\nwarning: no end chunk (the job did not finish): cannot check against the link counters\n");
	} else {
		size_t bad = 0;
		for (size_t i = 0; i < t->ncounters; i++) {
			const struct torus_trace_counters *k = &t->counters[i];
			const struct link_tot *l = &lt[tt_link_id(t, k->node, k->dim, k->dir)];
			if (l->packets != k->packets || l->payload != k->payload_bytes || l->wire != k->wire_bytes ||
			    l->busy != k->busy_ps) {
				if (bad++ < 5)
					fprintf(out, "mismatch: node %u link %s%c: trace %llu packets %llu B, counters %llu packets %llu B\n",
						k->node, tt_dim_name(k->dim), k->dir ? '-' : '+', (unsigned long long)l->packets,
						(unsigned long long)l->payload, (unsigned long long)k->packets,
						(unsigned long long)k->payload_bytes);
			}
		}
		static const char *how[] = {"finished", "failed", "hung", "was interrupted"};
		if (t->end.status)
			fprintf(out, "warning: the job %s (torusrun's status); its trace may be incomplete\n",
				t->end.status < 4 ? how[t->end.status] : "ended abnormally");
		if (t->hole_bytes)
			fprintf(out, "warning: %llu bytes of the file were never written (a node was stopped while "
				     "writing): their records are missing\n",
				(unsigned long long)t->hole_bytes);
		if (t->end.nodes_flushed != t->shape.nnodes)
			fprintf(out, "warning: %u of %u nodes finished their trace\n", t->end.nodes_flushed,
				t->shape.nnodes);
		int partial = t->hole_bytes || t->end.nodes_flushed != t->shape.nnodes || t->end.status;
		if (bad && partial) {
			fprintf(out, "\ncounters: %zu of %zu link directions differ from the trace, as expected of a job "
				     "that did not finish cleanly\n", bad, t->ncounters);
		} else if (bad) {
			fprintf(out, "\ncounters: %zu of %zu link directions differ from the trace\n", bad, t->ncounters);
			rc = -EPROTO;
		} else {
			fprintf(out, "\ncounters: the trace's totals equal the link counters (torusrun --report) on all %zu "
				     "link directions\n", t->ncounters);
		}
	}
	free(lt);
	free(peaks);
	return rc;
}

int tt_write_csv(const struct tt_trace *t, uint64_t bin_ps, FILE *out)
{
	uint64_t nb;
	int rc = tt_csv_bins(t, bin_ps, &nb);
	if (rc)
		return rc;
	if (!bin_ps)
		bin_ps = default_bin(t);
	/* rows go out bin by bin: bin a slice of bins at a time */
	uint32_t nbins = (uint32_t)nb, chunk = bins_per_pass(t, nbins);
	double *util = malloc((size_t)t->nlinks * chunk * sizeof(double));
	double *pay = malloc((size_t)t->nlinks * chunk * sizeof(double));
	if (!util || !pay) {
		free(util);
		free(pay);
		return -ENOMEM;
	}
	fprintf(out, "bin_start_ns,bin_ns,node,to,dim,dir,payload_bytes,utilisation\n");
	for (uint32_t b0 = 0; b0 < nbins; b0 += chunk) {
		uint32_t n = nbins - b0 < chunk ? nbins - b0 : chunk;
		tt_bin(t, (uint64_t)b0 * bin_ps, bin_ps, n, NULL, NULL, util);
		tt_bin_payload(t, (uint64_t)b0 * bin_ps, bin_ps, n, pay);
		for (uint32_t b = 0; b < n; b++)
			for (uint32_t id = 0; id < t->nlinks; id++) {
				if (!tt_link_exists(t, id))
					continue;
				uint32_t node, dim, dir;
				tt_link_of(t, id, &node, &dim, &dir);
				fprintf(out, "%.3f,%.3f,%u,%u,%s,%c,%.0f,%.4f\n", (double)(b0 + b) * bin_ps / 1e3,
					bin_ps / 1e3, node, torus_neighbor(&t->shape, node, dim, (enum torus_dir)dir),
					tt_dim_name(dim), dir ? '-' : '+', pay[(size_t)id * n + b], util[(size_t)id * n + b]);
			}
	}
	free(util);
	free(pay);
	return 0;
}

int tt_write_packets(const struct tt_trace *t, uint32_t link, FILE *out)
{
	size_t *idx = tt_by_link(t);
	if (!idx)
		return -ENOMEM;
	/* coords hold commas: quoted, as CSV quotes a field; tag_name never
	 * holds a comma or a quote (tt_tag_name) */
	fprintf(out, "node,coords,link,to,start_ps,end_ps,packets,payload_bytes,wire_bytes,kind,tag,tag_name\n");
	for (size_t k = 0; k < t->nrec; k++) {
		const struct tt_rec *r = &t->rec[idx[k]];
		if (link != UINT32_MAX && r->link != link)
			continue;
		char cs[48], dn[8], name[96];
		coords(t, r->node, cs, sizeof(cs));
		tt_dir_name(r->dim, r->dir, dn, sizeof(dn));
		tt_tag_name(r->tag, name, sizeof(name));
		fprintf(out, "%u,\"%s\",%s,%u,%llu,%llu,%u,%u,%u,%u,%u,%s\n", r->node, cs, dn,
			torus_neighbor(&t->shape, r->node, r->dim, (enum torus_dir)r->dir), (unsigned long long)r->start,
			(unsigned long long)r->end, r->packets, r->payload, r->wire, r->kind, r->tag, name);
	}
	free(idx);
	return 0;
}

int tt_write_perfetto(const struct tt_trace *t, const char *path, char *err, size_t errlen)
{
	FILE *f = fopen(path, "w");
	if (!f) {
		snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
		return -errno;
	}
	/* one process per node, one thread (track) per link direction; times
	 * in microseconds of virtual time */
	fprintf(f, "{\"displayTimeUnit\": \"ns\", \"otherData\": {\"program\": \"");
	for (const char *p = t->hdr.program; *p; p++) {
		unsigned char ch = (unsigned char)*p;
		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch >= 0x20 && ch < 0x7f)
			fputc(ch, f);
	}
	fprintf(f, "\"},\n\"traceEvents\": [\n");
	int first = 1;
	for (uint32_t n = 0; n < t->shape.nnodes; n++) {
		char cs[48];
		coords(t, n, cs, sizeof(cs));
		fprintf(f, "%s{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": %u, \"args\": {\"name\": \"node %u %s\"}}",
			first ? "" : ",\n", n, n, cs);
		first = 0;
		for (uint32_t d = 0; d < t->shape.ndims; d++) {
			if (!torus_dim_has_links(&t->shape, d))
				continue;
			for (uint32_t dir = 0; dir < 2; dir++) {
				char dn[8];
				tt_dir_name(d, dir, dn, sizeof(dn));
				fprintf(f, ",\n{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": %u, \"tid\": %u, "
					   "\"args\": {\"name\": \"link %s to node %u\"}}",
					n, 2 * d + dir + 1, dn, torus_neighbor(&t->shape, n, d, (enum torus_dir)dir));
			}
		}
	}
	for (size_t i = 0; i < t->nrec; i++) {
		const struct tt_rec *r = &t->rec[i];
		char name[96];
		tt_tag_name(r->tag, name, sizeof(name));
		fprintf(f, ",\n{\"ph\": \"X\", \"name\": \"%s\", \"cat\": \"link\", \"pid\": %u, \"tid\": %u, "
			   "\"ts\": %.6f, \"dur\": %.6f, \"args\": {\"packets\": %u, \"payload_bytes\": %u, "
			   "\"wire_bytes\": %u, \"busy_ps\": %llu, \"tag\": %u, \"kind\": %u}}",
			name, r->node, 2u * r->dim + r->dir + 1, r->start / 1e6, (r->end - r->start) / 1e6, r->packets,
			r->payload, r->wire, (unsigned long long)r->busy, r->tag, r->kind);
	}
	fprintf(f, "\n]}\n");
	if (ferror(f) | fclose(f)) {
		snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
		return -EIO;
	}
	return 0;
}
