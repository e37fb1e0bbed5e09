/*
 * torusrun's whole command line (emu_config_parse, emu/config.c): the input
 * is split at '\n' and NUL into arguments after "torusrun". An argument "@@"
 * ends them; the bytes after it are the --config file, held in a memfd, and
 * every --config value becomes that file (/proc/self/fd/N) unless it is one
 * the parser refuses before opening ("", "/", "/dev/null", "/dev/zero",
 * "/nonexistent..."): nothing else on the machine is ever opened. The parser
 * only stat()s --report, --trace and PROGRAM, so no file is created and no
 * job can start.
 *
 * Invariants (abort() when one breaks):
 *  - the result is 0, 1 (only for -h/--help before "--") or negative;
 *  - stdout stays empty unless --help was answered;
 *  - failure: a one-line message (no control bytes), and nothing left
 *    allocated in cfg;
 *  - success: a shape of 1..6 dimensions of 1..4096 with nnodes their
 *    product (at most 65536); cores of every node 1..64, the cores map's when
 *    one is given (last --cores-map, else the file's), else the last --cores,
 *    else the file's, else 1; timeout 0..1e6; trace buffer 64 KiB..64 MiB;
 *    --trace-buffer/--trace-packets only with --trace; a non-empty report
 *    path; parameters torus_params_check accepts; the program an executable
 *    regular file and argv its arguments from "--" on;
 *  - emu_config_free after any result leaves nothing behind.
 */
#include "emu_internal.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_ARGS 64

static int config_fd = -1, out_fd = -1;
static char config_path[64];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	config_fd = memfd_create("fuzz-cli-config", MFD_CLOEXEC);
	out_fd = memfd_create("fuzz-cli-stdout", MFD_CLOEXEC);
	if (config_fd < 0 || out_fd < 0)
		abort();
	snprintf(config_path, sizeof(config_path), "/proc/self/fd/%d", config_fd);
	return 0;
}

static int safe_config(const char *v)
{
	return !*v || !strcmp(v, "/") || !strcmp(v, "/dev/null") || !strcmp(v, "/dev/zero") ||
	       !strncmp(v, "/nonexistent", 12);
}

/* The last value of option `name` before "--", or NULL. */
static const char *last_value(int argc, char **argv, const char *name)
{
	const char *v = NULL;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--"))
			break;
		if (!strcmp(argv[i], "--quiet") || !strcmp(argv[i], "--trace-packets") || !strcmp(argv[i], "--exact"))
			continue;
		if (!strcmp(argv[i], name) && i + 1 < argc)
			v = argv[i + 1];
		i++; /* every other option takes a value */
	}
	return v;
}

/* Where torusrun's loop finds PROGRAM (-1: it stops first); *help if at -h. */
static int find_prog(int argc, char **argv, int *help)
{
	*help = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--"))
			return i + 1;
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			*help = 1;
			return -1;
		}
		if (strcmp(argv[i], "--quiet") && strcmp(argv[i], "--trace-packets") && strcmp(argv[i], "--exact"))
			i++; /* every other option takes a value */
	}
	return -1;
}

static void check_ok(const struct emu_job_config *cfg, int argc, char **argv, int prog, int file_has_map)
{
	const struct torus_shape *s = &cfg->shape;
	uint64_t nodes = 1;
	if (s->ndims < 1 || s->ndims > TORUS_MAX_DIMS)
		abort();
	for (uint32_t d = 0; d < s->ndims; d++) {
		if (s->dims[d] < 1 || s->dims[d] > TORUS_MAX_DIM_SIZE)
			abort();
		nodes *= s->dims[d];
	}
	if (nodes != s->nnodes || nodes > TORUS_MAX_NODES || !cfg->cores)
		abort();
	if (cfg->default_cores < 1 || cfg->default_cores > TORUS_MAX_CORES)
		abort();
	/* the command line wins, and its last value */
	const char *torus = last_value(argc, argv, "--torus");
	struct torus_shape want_shape;
	char err[256];
	if (torus && (torus_shape_parse(torus, &want_shape, err, sizeof(err)) ||
		      memcmp(&want_shape, s, sizeof(want_shape))))
		abort();
	const char *cores = last_value(argc, argv, "--cores");
	const char *map = last_value(argc, argv, "--cores-map");
	if (cores && strtoul(cores, NULL, 10) != cfg->default_cores)
		abort();
	for (uint32_t r = 0; r < s->nnodes; r++)
		if (cfg->cores[r] < 1 || cfg->cores[r] > TORUS_MAX_CORES ||
		    (!map && !file_has_map && cfg->cores[r] != cfg->default_cores))
			abort();
	if (map) {
		/* the last --cores-map, entry by entry */
		const char *p = map;
		for (uint32_t r = 0; r < s->nnodes; r++) {
			char *end;
			unsigned long v = strtoul(p, &end, 10);
			if (v != cfg->cores[r] || (*end != ',' && *end != '\0'))
				abort();
			p = end + (*end == ',');
		}
		if (*p)
			abort();
	}
	if (!(cfg->timeout_s >= 0 && cfg->timeout_s <= 1e6))
		abort();
	if (cfg->trace_buf_bytes < (64u << 10) || cfg->trace_buf_bytes > (64u << 20))
		abort();
	if (cfg->params.inj_overhead_ps == 0) /* every post takes time */
		abort();
	if ((cfg->trace_packets || last_value(argc, argv, "--trace-buffer")) && !cfg->trace_path)
		abort();
	if (cfg->report_path && !cfg->report_path[0])
		abort();
	if (cfg->trace_path && !cfg->trace_path[0])
		abort();
	if (torus_params_check(&cfg->params, err, sizeof(err)))
		abort();
	struct stat st;
	if (!cfg->program_path[0] || stat(cfg->program_path, &st) || !S_ISREG(st.st_mode) ||
	    access(cfg->program_path, X_OK))
		abort();
	if (cfg->argv != argv + prog || cfg->argc != argc - prog)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = malloc(size + 1), *args[MAX_ARGS + 2];
	int argc = 0, prog = -1, help = 0;
	const char *text = NULL;
	size_t text_len = 0;

	if (!buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	args[argc++] = "torusrun";
	for (size_t start = 0; start <= size && argc < MAX_ARGS;) {
		size_t end = start;
		while (end < size && buf[end] != '\n' && buf[end] != '\0')
			end++;
		buf[end] = '\0';
		if (!strcmp(buf + start, "@@")) {
			text = buf + end + 1;
			text_len = end < size ? size - end - 1 : 0;
			break;
		}
		args[argc++] = buf + start;
		start = end + 1;
	}
	args[argc] = NULL;
	/* every argument after any "--config", wherever the parser stops */
	for (int i = 1; i + 1 < argc; i++)
		if (!strcmp(args[i], "--config") && !safe_config(args[i + 1]))
			args[i + 1] = config_path;
	prog = find_prog(argc, args, &help);
	if (ftruncate(config_fd, 0) || (text_len && pwrite(config_fd, text, text_len, 0) != (ssize_t)text_len))
		abort();

	/* stdout into a memfd: only --help may print */
	fflush(stdout);
	int saved = dup(STDOUT_FILENO);
	if (saved < 0 || ftruncate(out_fd, 0) || lseek(out_fd, 0, SEEK_SET) || dup2(out_fd, STDOUT_FILENO) < 0)
		abort();
	struct emu_job_config cfg;
	char err[512];
	memset(err, 0x55, sizeof(err));
	int rc = emu_config_parse(argc, args, &cfg, err, sizeof(err));
	fflush(stdout);
	off_t printed = lseek(out_fd, 0, SEEK_CUR);
	if (dup2(saved, STDOUT_FILENO) < 0)
		abort();
	close(saved);

	if (rc == 1) {
		if (!help || printed <= 0)
			abort();
	} else if (printed != 0) {
		abort(); /* printed without --help */
	} else if (rc == 0) {
		if (prog < 0 || prog >= argc)
			abort();
		check_ok(&cfg, argc, args, prog, text && memmem(text, text_len, "cores-map", 9) != NULL);
	} else {
		if (!memchr(err, '\0', sizeof(err)) || !err[0])
			abort();
		for (const char *c = err; *c; c++)
			if ((unsigned char)*c < 0x20 || *c == 0x7f)
				abort(); /* not one line */
		if (cfg.cores || cfg.report_path)
			abort(); /* left allocated after a failure */
	}
	emu_config_free(&cfg);
	if (rc == 0 && (cfg.cores || cfg.report_path))
		abort();
	free(buf);
	return 0;
}
