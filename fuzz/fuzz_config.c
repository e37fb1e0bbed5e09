/*
 * The --config file parser (emu_config_read_buf, emu/config.c) on the input
 * bytes as the file's content. No file is read or written.
 *
 * Invariants (abort() when one breaks):
 *  - failure: a message "fuzz.cfg:N: ..." with 1 <= N <= the input's line
 *    count, and neither the settings nor the parameters changed;
 *  - success: every setting within its documented range (shape 1..6
 *    dimensions of 1..4096 and at most 65536 nodes, cores 1..64, each
 *    cores-map entry 1..64, timeout 0..1e6 s, report non-empty and trimmed),
 *    each from a line that names its key, no key but "link" on two lines (the README's
 *    rule, checked by a scan of the text independent of the parser), and
 *    parameters that print and parse back to themselves;
 *  - the same text parses the same way twice.
 */
#include "emu_internal.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_params_json.h"

static const char *const keys[EMU_SET_COUNT] = {"torus", "cores", "cores-map", "timeout", "report"};
#define NAME "fuzz.cfg"

static size_t count_lines(const char *t, size_t n)
{
	size_t lines = 0;
	for (size_t i = 0; i < n; i++)
		lines += t[i] == '\n';
	return lines + (n && t[n - 1] != '\n');
}

/* The text's lines, each with its comment cut; lines[0] is unused. */
static char **split_lines(const char *t, size_t n, size_t nlines)
{
	char **lines = calloc(nlines + 1, sizeof(*lines));
	size_t start = 0;
	for (size_t no = 1; lines && no <= nlines; no++) {
		const char *nl = memchr(t + start, '\n', n - start);
		size_t len = nl ? (size_t)(nl - t) - start : n - start;
		lines[no] = strndup(t + start, len); /* a NUL cuts it: such a file fails anyway */
		if (!lines[no])
			abort();
		char *h = strchr(lines[no], '#');
		if (h)
			*h = '\0';
		start += len + 1;
	}
	return lines;
}

/* The key of a "key = value" line, trimmed, or NULL (the line is changed). */
static char *line_key(char *l)
{
	char *eq = strchr(l, '=');
	if (!eq)
		return NULL;
	*eq = '\0';
	while (isspace((unsigned char)*l))
		l++;
	char *e = l + strlen(l);
	while (e > l && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return l;
}

static void check_ok(const struct emu_settings *st, const char *t, size_t n, size_t nlines)
{
	char **lines = split_lines(t, n, nlines);
	char **key = calloc(nlines + 1, sizeof(*key));
	const char **distinct = calloc(nlines + 1, sizeof(*distinct));
	size_t ndistinct = 0;
	if (!lines || !key || !distinct)
		abort();
	for (size_t no = 1; no <= nlines; no++) {
		key[no] = line_key(lines[no]);
		if (!key[no] || !*key[no] || !strcmp(key[no], "link"))
			continue; /* "link" lines are repeatable */
		/* no other key on two lines: counted here from the text */
		for (size_t i = 0; i < ndistinct; i++)
			if (!strcmp(distinct[i], key[no]))
				abort(); /* accepted a key given twice */
		distinct[ndistinct++] = key[no];
	}
	for (int k = 0; k < EMU_SET_COUNT; k++) {
		if (!(st->given >> k & 1))
			continue;
		if (st->line[k] < 1 || st->line[k] > nlines || !key[st->line[k]] || strcmp(key[st->line[k]], keys[k]))
			abort(); /* the setting does not come from a line with its key */
	}
	for (size_t no = 1; no <= nlines; no++)
		free(lines[no]);
	free(lines);
	free(key);
	free(distinct);
	if (st->given >> EMU_SET_TORUS & 1) {
		const struct torus_shape *s = &st->shape;
		uint64_t nodes = 1;
		if (s->ndims < 1 || s->ndims > TORUS_MAX_DIMS)
			abort();
		for (uint32_t d = 0; d < s->ndims; d++) {
			if (s->dims[d] < 1 || s->dims[d] > TORUS_MAX_DIM_SIZE || s->stride[d] != nodes)
				abort();
			nodes *= s->dims[d];
		}
		if (nodes != s->nnodes || nodes > TORUS_MAX_NODES)
			abort();
	}
	if ((st->given >> EMU_SET_CORES & 1) && (st->cores < 1 || st->cores > TORUS_MAX_CORES))
		abort();
	if (st->given >> EMU_SET_CORES_MAP & 1) {
		if (!st->cores_map || st->ncores_map < 1 || st->ncores_map > TORUS_MAX_NODES)
			abort();
		for (uint32_t i = 0; i < st->ncores_map; i++)
			if (st->cores_map[i] < 1 || st->cores_map[i] > TORUS_MAX_CORES)
				abort();
	} else if (st->cores_map) {
		abort();
	}
	if ((st->given >> EMU_SET_TIMEOUT & 1) && !(st->timeout_s >= 0 && st->timeout_s <= 1e6))
		abort();
	if (st->given >> EMU_SET_REPORT & 1) {
		const char *r = st->report;
		size_t len = r ? strlen(r) : 0;
		if (!len || isspace((unsigned char)r[0]) || isspace((unsigned char)r[len - 1]) || strchr(r, '#') ||
		    strchr(r, '\n'))
			abort();
	} else if (st->report) {
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *t = (const char *)data;
	struct torus_params p, def, p2;
	struct emu_settings st, st2;
	char err[512], err2[512];
	size_t nlines = count_lines(t, size);

	torus_params_default(&def);
	p = def;
	memset(err, 0, sizeof(err));
	int rc = emu_config_read_buf(NAME, t, size, &st, &p, err, sizeof(err));
	if (rc) {
		char *end;
		if (rc >= 0 || strncmp(err, NAME ":", sizeof(NAME)))
			abort(); /* no line named */
		unsigned long no = strtoul(err + sizeof(NAME), &end, 10);
		if (end == err + sizeof(NAME) || *end != ':' || no < 1 || no > nlines)
			abort(); /* a line the input does not have */
		if (memcmp(&p, &def, sizeof(p)) || st.given || st.cores_map || st.report)
			abort(); /* a failed file changed something */
	} else {
		check_ok(&st, t, size, nlines);
		fuzz_check_params_json(&p);
	}
	/* deterministic */
	p2 = def;
	memset(err2, 0, sizeof(err2));
	int rc2 = emu_config_read_buf(NAME, t, size, &st2, &p2, err2, sizeof(err2));
	if (rc2 != rc || memcmp(&p, &p2, sizeof(p)) || (rc && strcmp(err, err2)) || st.given != st2.given)
		abort();
	emu_settings_free(&st);
	emu_settings_free(&st2);
	return 0;
}
