/*
 * torus-trace: read a trace written by `torusrun --trace FILE` and turn it
 * into a per-link summary, a CSV time series, a CSV list of the records on
 * a link, a Perfetto timeline, an SVG heat map, or a self-contained HTML
 * animation.
 */
#include "trace/trace_tool.h"

#include <errno.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* --png: the SVG, rendered by librsvg's rsvg-convert (a kept Debian package). */
static int write_png(const struct tt_trace *t, const char *path, const struct tt_svg_opts *so, char *err,
		     size_t errlen)
{
	char tmp[4096];
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp.svg", path) >= sizeof(tmp)) {
		snprintf(err, errlen, "--png: path too long");
		return -ENAMETOOLONG;
	}
	int rc = tt_write_svg(t, tmp, so, err, errlen);
	if (rc)
		return rc;
	char *argv[] = {"rsvg-convert", "--background-color=white", "-o", (char *)path, tmp, NULL};
	pid_t pid;
	int st = 0;
	rc = posix_spawnp(&pid, "rsvg-convert", NULL, NULL, argv, environ);
	if (rc == 0 && waitpid(pid, &st, 0) < 0)
		rc = errno;
	unlink(tmp);
	if (rc == ENOENT || (rc == 0 && WIFEXITED(st) && WEXITSTATUS(st) == 127)) {
		snprintf(err, errlen, "--png needs rsvg-convert (Debian: apt-get install librsvg2-bin); --svg works without it");
		return -ENOENT;
	}
	if (rc || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		snprintf(err, errlen, "rsvg-convert could not write %s", path);
		return -EIO;
	}
	return 0;
}

static void usage(FILE *out)
{
	fputs("usage: torus-trace FILE [outputs]\n"
	      "\n"
	      "Read a trace written by `torusrun --trace FILE -- PROGRAM` (every packet a\n"
	      "node put on a link: when, how much, and which collective/color/phase sent it).\n"
	      "\n"
	      "outputs (any combination; none: --summary):\n"
	      "  --summary            per link direction: packets, bytes, busy %, peak utilisation,\n"
	      "                       totals, per dimension/direction and per phase; checked\n"
	      "                       against the link counters (the same as torusrun --report)\n"
	      "  --csv                the per-link time series on stdout, one row per bin and link\n"
	      "  --bin NS             CSV bin width in nanoseconds of virtual time\n"
	      "                       (default: 1/100 of the trace; at most 2^20 bins)\n"
	      "  --packets LINKSPEC   every record on the link direction(s) as CSV on stdout,\n"
	      "                       sorted by link then start (node,coords,link,to,start_ps,\n"
	      "                       end_ps,packets,payload_bytes,wire_bytes,kind,tag,tag_name);\n"
	      "                       LINKSPEC: all, or NODE:LINK such as 5:x+ or 0:y-. With\n"
	      "                       torusrun --trace-packets each record is one packet\n"
	      "  --perfetto OUT.json  Chrome trace-event JSON, one track per link direction\n"
	      "                       (open it at https://ui.perfetto.dev or chrome://tracing)\n"
	      "  --svg OUT.svg        heat map of link utilisation, one panel per phase, and\n"
	      "                       utilisation over time per dimension and direction\n"
	      "  --png OUT.png        the same picture as a PNG (rendered by rsvg-convert)\n"
	      "  --windows K          --svg/--png: K panels of equal time windows instead of phases\n"
	      "                       (1..64; at most 12 are drawn)\n"
	      "  --color C            every output shows only multicolor color C (both of its\n"
	      "                       directions): how one color walks the dimensions\n"
	      "  --html OUT.html      a self-contained page animating link utilisation over\n"
	      "                       virtual time (play / pause / step, time slider)\n"
	      "  -h, --help           this text\n"
	      "\n"
	      "exit status: 0 ok; 1 an output could not be written, or the trace disagrees\n"
	      "with the link counters; 2 bad options or a corrupt, truncated or foreign file.\n",
	      out);
}

static int parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
	char *end;
	if (!s || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}


int main(int argc, char **argv)
{
	const char *file = NULL, *perfetto = NULL, *svg = NULL, *png = NULL, *html = NULL, *packets = NULL;
	struct tt_linkspec ls = {0};
	int summary = 0, csv = 0;
	uint64_t bin_ns = 0, windows = 0, color = UINT64_MAX;
	char err[512];

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *next = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return 0;
		}
		if (!strcmp(a, "--summary")) {
			summary = 1;
		} else if (!strcmp(a, "--csv")) {
			csv = 1;
		} else if (!strcmp(a, "--bin") || !strcmp(a, "--windows") || !strcmp(a, "--color") ||
			   !strcmp(a, "--perfetto") || !strcmp(a, "--packets") ||
			   !strcmp(a, "--svg") || !strcmp(a, "--png") || !strcmp(a, "--html")) {
			if (!next) {
				fprintf(stderr, "torus-trace: %s needs a value (see --help)\n", a);
				return 2;
			}
			i++;
			if (!strcmp(a, "--bin") && parse_u64(next, 1, 1000000000000ull, &bin_ns)) {
				fprintf(stderr, "torus-trace: bad --bin '%s': nanoseconds, 1 or more\n", next);
				return 2;
			}
			if (!strcmp(a, "--color") && parse_u64(next, 0, 2 * TORUS_MAX_DIMS, &color)) {
				fprintf(stderr, "torus-trace: bad --color '%s': a color number, 0..%u\n", next,
					2 * TORUS_MAX_DIMS);
				return 2;
			}
			if (!strcmp(a, "--windows") && parse_u64(next, 1, 64, &windows)) {
				fprintf(stderr, "torus-trace: bad --windows '%s': 1..64\n", next);
				return 2;
			}
			if (!strcmp(a, "--packets")) {
				if (tt_linkspec_parse(next, &ls)) {
					fprintf(stderr, "torus-trace: bad --packets '%s': all, or NODE:LINK such as 5:x+\n",
						next);
					return 2;
				}
				packets = next;
			}
			if (!strcmp(a, "--perfetto"))
				perfetto = next;
			else if (!strcmp(a, "--svg"))
				svg = next;
			else if (!strcmp(a, "--png"))
				png = next;
			else if (!strcmp(a, "--html"))
				html = next;
		} else if (a[0] == '-' && a[1]) {
			fprintf(stderr, "torus-trace: unknown option '%s' (see --help)\n", a);
			return 2;
		} else if (file) {
			fprintf(stderr, "torus-trace: one trace file at a time ('%s' and '%s')\n", file, a);
			return 2;
		} else {
			file = a;
		}
	}
	if (!file) {
		fprintf(stderr, "torus-trace: no trace file given (see --help)\n");
		return 2;
	}
	/* two kinds of CSV, or a table, on one stdout would not parse */
	if (packets && (summary || csv)) {
		fprintf(stderr, "torus-trace: --packets writes CSV to stdout: not with %s\n",
			summary ? "--summary" : "--csv");
		return 2;
	}
	if (!summary && !csv && !perfetto && !svg && !png && !html && !packets)
		summary = 1;

	struct tt_trace t;
	int rc = tt_load(file, &t, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "torus-trace: %s: %s\n", file, err);
		return 2;
	}
	/* --bin against this trace's length, before any output starts */
	uint64_t nbins;
	if (csv && tt_csv_bins(&t, bin_ns * 1000, &nbins)) {
		fprintf(stderr, "torus-trace: --bin %llu ns cuts the trace's %.3f us into %llu bins for %u link directions; "
				"at most %u bins and %u rows: give a wider --bin\n",
			(unsigned long long)bin_ns, t.t_end / 1e6, (unsigned long long)nbins, t.nlinks, TT_CSV_MAX_BINS,
			TT_CSV_MAX_ROWS);
		tt_free(&t);
		return 2;
	}
	uint32_t link = UINT32_MAX;
	if (packets && tt_linkspec_link(&t, &ls, &link, err, sizeof(err))) {
		fprintf(stderr, "torus-trace: bad --packets '%s': %s\n", packets, err);
		tt_free(&t);
		return 2;
	}
	int status = 0;
	if (color != UINT64_MAX && !tt_keep_color(&t, (uint32_t)color)) {
		fprintf(stderr, "torus-trace: %s: no multicolor traffic of color %llu in this trace\n", file,
			(unsigned long long)color);
		tt_free(&t);
		return 1;
	}
	if (summary) {
		rc = tt_write_summary(&t, stdout);
		if (rc) {
			if (rc != -EPROTO)
				fprintf(stderr, "torus-trace: summary: %s\n", strerror(-rc));
			status = 1;
		}
	}
	if (csv && (rc = tt_write_csv(&t, bin_ns * 1000, stdout))) {
		fprintf(stderr, "torus-trace: csv: %s%s\n", strerror(-rc),
			rc == -E2BIG ? " (too many bins: give a wider --bin)" : "");
		status = 1;
	}
	if (packets && (rc = tt_write_packets(&t, link, stdout))) {
		fprintf(stderr, "torus-trace: packets: %s\n", strerror(-rc));
		status = 1;
	}
	if (perfetto && tt_write_perfetto(&t, perfetto, err, sizeof(err))) {
		fprintf(stderr, "torus-trace: %s\n", err);
		status = 1;
	}
	struct tt_svg_opts so = {(uint32_t)windows};
	if (svg && tt_write_svg(&t, svg, &so, err, sizeof(err))) {
		fprintf(stderr, "torus-trace: %s\n", err);
		status = 1;
	}
	if (png && write_png(&t, png, &so, err, sizeof(err))) {
		fprintf(stderr, "torus-trace: %s\n", err);
		status = 1;
	}
	if (html && tt_write_html(&t, html, err, sizeof(err))) {
		fprintf(stderr, "torus-trace: %s\n", err);
		status = 1;
	}
	if (fflush(stdout)) {
		fprintf(stderr, "torus-trace: cannot write to stdout\n");
		status = 1;
	}
	tt_free(&t);
	return status;
}
