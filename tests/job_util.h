/*
 * Helpers for tests that run whole jobs: run a shell command line with $B
 * (the build's bin/) and $T (a scratch folder) exported, capture its exit
 * status, stdout and stderr, and pick numbers out of a torusrun report.
 */
#ifndef JOB_UTIL_H
#define JOB_UTIL_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

static char bin[1024];
static char tmpdir[256];

struct result {
	int status;      /* exit status, or 128+signal */
	char *out, *err; /* captured stdout and stderr */
};

static inline char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return calloc(1, 1);
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	rewind(f);
	char *s = malloc((size_t)n + 1);
	size_t got = s ? fread(s, 1, (size_t)n, f) : 0;
	if (s)
		s[got] = '\0';
	fclose(f);
	return s;
}

static inline void result_free(struct result *r)
{
	free(r->out);
	free(r->err);
	memset(r, 0, sizeof(*r));
}

/* Run a shell command line with $B set to the bin folder. */
static inline struct result run(const char *fmt, ...)
{
	char cmd[8192], full[12288], outp[512], errp[512];
	struct result r = {0};
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	snprintf(outp, sizeof(outp), "%s/out", tmpdir);
	snprintf(errp, sizeof(errp), "%s/err", tmpdir);
	snprintf(full, sizeof(full), "export B='%s' T='%s'; (%s) >'%s' 2>'%s'", bin, tmpdir, cmd, outp, errp);
	int st = system(full);
	r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	r.out = slurp(outp);
	r.err = slurp(errp);
	return r;
}

static inline int count_lines(const char *s, const char *needle)
{
	int n = 0;
	for (const char *line = s; *line;) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);
		char buf[4096];
		snprintf(buf, sizeof(buf), "%.*s", (int)(len < sizeof(buf) ? len : sizeof(buf) - 1), line);
		if (!needle || strstr(buf, needle))
			n++;
		line += len + (nl ? 1 : 0);
	}
	return n;
}

/* First unsigned number after `"key": ` at or after `from` in a JSON text. */
static inline uint64_t json_u64(const char *text, const char *key)
{
	char pat[128];
	snprintf(pat, sizeof(pat), "\"%s\": ", key);
	const char *p = text ? strstr(text, pat) : NULL;
	return p ? strtoull(p + strlen(pat), NULL, 10) : UINT64_MAX;
}

static inline uint64_t json_sum(const char *text, const char *key)
{
	char pat[128];
	uint64_t sum = 0;
	snprintf(pat, sizeof(pat), "\"%s\": ", key);
	for (const char *p = text; (p = strstr(p, pat)); p += strlen(pat))
		sum += strtoull(p + strlen(pat), NULL, 10);
	return sum;
}

static inline char *section(const char *text, const char *key)
{
	const char *p = strstr(text, key);
	const char *e = p ? strchr(p, ']') : NULL;
	if (!p || !e)
		return calloc(1, 1);
	return strndup(p, (size_t)(e - p));
}


/* Set up bin and tmpdir; returns 0 or prints why not. */
static inline int job_util_init(void)
{
	const char *b = getenv("TORUS_BIN");
	snprintf(bin, sizeof(bin), "%s", b ? b : "build/bin");
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/torus-test-job.XXXXXX");
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return -1;
	}
	return 0;
}

static inline void job_util_cleanup(void)
{
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", tmpdir);
}

#endif
