/* torusrun --report: the job's times and per-link counters as JSON (schema
 * in the README, "Report format"). */
#include "emu_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void json_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch < 0x20)
			fprintf(f, "\\u%04x", ch);
		else
			fputc(ch, f);
	}
	fputc('"', f);
}

struct link_out {
	FILE *f;
	const struct emu_shm *m;
	int first;
	struct torus_link_counters tot;
};

static void link_json(void *arg, uint32_t node, uint32_t dim, uint32_t dir, const struct torus_link *l,
		      const struct torus_link_counters *c)
{
	struct link_out *o = arg;
	const struct emu_shm_hdr *h = o->m->hdr;
	struct torus_params lp;
	const struct torus_link_set *ls = NULL;
	for (uint32_t k = 0; k < h->nlinks; k++)
		if (h->links[k].node == node && h->links[k].link == 2 * dim + dir)
			ls = &h->links[k];
	torus_link_params(&h->params, ls, &lp);
	o->tot.packets += c->packets;
	o->tot.payload_bytes += c->payload_bytes;
	o->tot.wire_bytes += c->wire_bytes;
	o->tot.busy_ps += c->busy_ps;
	fprintf(o->f,
		"%s    {\"from\": %u, \"to\": %u, \"dim\": %u, \"dir\": \"%c\", \"packets\": %llu, "
		"\"payload_bytes\": %llu, \"wire_bytes\": %llu, \"busy_ps\": %llu, \"free_at_ps\": %llu, "
		"\"link_bw\": %llu, \"hop_latency_ps\": %llu, \"own_settings\": %s}",
		o->first ? "" : ",\n", l->from, l->to, dim, dir == TORUS_PLUS ? '+' : '-', (unsigned long long)c->packets,
		(unsigned long long)c->payload_bytes, (unsigned long long)c->wire_bytes, (unsigned long long)c->busy_ps,
		(unsigned long long)c->free_at, (unsigned long long)lp.link_bw, (unsigned long long)lp.hop_latency_ps,
		ls ? "true" : "false");
	o->first = 0;
}

int emu_open_output(const char *path, const char *what, int offsets, char *err, size_t errlen)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NONBLOCK, 0644);
	if (fd < 0) {
		int e = errno;
		if (e == ENXIO)
			snprintf(err, errlen, "cannot write %s %s: it is a FIFO that no process reads", what, path);
		else
			snprintf(err, errlen, "cannot write %s %s: %s", what, path, strerror(e));
		return -e;
	}
	struct stat st;
	if (offsets && fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode)) {
		close(fd);
		snprintf(err, errlen, "cannot write %s %s: it is a FIFO, and a %s is written at offsets (give a file)", what,
			 path, what);
		return -ESPIPE;
	}
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0) {
		int e = errno;
		close(fd);
		snprintf(err, errlen, "cannot write %s %s: %s", what, path, strerror(e));
		return -e;
	}
	return fd;
}

int emu_report_write(const char *path, const struct emu_job_config *cfg, const struct emu_shm *m,
		     const char *status, double wall_s, char *err, size_t errlen)
{
	const struct torus_shape *s = &m->hdr->shape;
	char shape[64];
	torus_vt_t vt = 0;
	struct torus_link_counters tot = {0};
	int fd = emu_open_output(path, "report", 0, err, errlen);
	if (fd < 0)
		return fd;
	FILE *f = fdopen(fd, "w");
	if (!f) {
		int e = errno;
		close(fd);
		snprintf(err, errlen, "cannot write report %s: %s", path, strerror(e));
		return -e;
	}
	for (uint32_t r = 0; r < s->nnodes; r++) {
		struct emu_node_shm *n = emu_shm_node(m, r);
		for (uint32_t c = 0; c < n->ncores; c++) {
			torus_vt_t v = atomic_load(&emu_shm_core(m, n, c)->vt);
			if (v > vt)
				vt = v;
		}
	}
	fprintf(f, "{\n  \"schema\": \"torusrun-report/1\",\n  \"status\": ");
	json_string(f, status);
	fprintf(f, ",\n  \"torus\": \"%s\",\n  \"dims\": [", torus_shape_format(s, shape, sizeof(shape)));
	for (uint32_t d = 0; d < s->ndims; d++)
		fprintf(f, d ? ", %u" : "%u", s->dims[d]);
	fprintf(f, "],\n  \"nodes\": %u,\n  \"total_cores\": %u,\n  \"program\": [", s->nnodes, m->hdr->total_cores);
	for (int i = 0; i < cfg->argc; i++) {
		if (i)
			fputs(", ", f);
		json_string(f, cfg->argv[i]);
	}
	fprintf(f, "],\n  \"params\": {\n");
	torus_params_json(&m->hdr->params, f, "    ");
	fprintf(f, "  },\n  \"emulated_time_ps\": %llu,\n  \"wall_time_s\": %.6f,\n  \"links\": [\n",
		(unsigned long long)vt, wall_s);
	struct link_out lo = {f, m, 1, {0}};
	emu_shm_each_link(m, link_json, &lo);
	tot = lo.tot;
	fprintf(f, "\n  ],\n  \"totals\": {\"packets\": %llu, \"payload_bytes\": %llu, \"wire_bytes\": %llu, "
		   "\"busy_ps\": %llu},\n  \"node_list\": [\n",
		(unsigned long long)tot.packets, (unsigned long long)tot.payload_bytes,
		(unsigned long long)tot.wire_bytes, (unsigned long long)tot.busy_ps);
	for (uint32_t r = 0; r < s->nnodes; r++) {
		struct emu_node_shm *n = emu_shm_node(m, r);
		fprintf(f, "    {\"rank\": %u, \"cores\": %u, \"final_vt_ps\": %llu, \"delivered\": %llu, \"orphaned\": %llu}%s\n",
			r, n->ncores, (unsigned long long)atomic_load(&n->final_vt),
			(unsigned long long)atomic_load(&n->delivered), (unsigned long long)atomic_load(&n->orphaned),
			r + 1 < s->nnodes ? "," : "");
	}
	fprintf(f, "  ]\n}\n");
	if (fclose(f)) {
		snprintf(err, errlen, "cannot write report %s: %s", path, strerror(errno));
		return -EIO;
	}
	return 0;
}
