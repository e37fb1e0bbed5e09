/*
 * torusrun's command line and --config file: everything is validated here,
 * before anything is started, so a bad job fails with one line and exit 2.
 *
 * The rules (README, "Running a job"): numbers are decimal, units exact-case
 * (torus/params.c); a config file is read whole (any line length, at most
 * EMU_CONFIG_MAX_BYTES) and may give each key once; the command line wins
 * over the file, and on the command line the last of a repeated option wins.
 * Both sources go through the same per-setting parser (setting_parse).
 */
#include "emu_internal.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <unistd.h>

#define DEFAULT_TIMEOUT_S 60.0
#define DEFAULT_TRACE_BUFFER (64u << 10) /* per node, in torusrun: 256 MiB for 4096 nodes */

static void usage(FILE *out)
{
	fputs("usage: torusrun --torus DIMS [options] -- PROGRAM [ARGS...]\n"
	      "       torusrun -np N [options] -- PROGRAM [ARGS...]\n"
	      "\n"
	      "Run PROGRAM once per node of an emulated torus, like mpirun. Each node is an\n"
	      "OS process; inside it the library starts one thread per core and the node's\n"
	      "engine thread. Nodes talk only through packets on shared-memory links.\n"
	      "\n"
	      "options:\n"
	      "  --torus AxBx...      torus shape, 1 to 6 dimensions (e.g. 4x4x4, 8, 2x2x2x2x2)\n"
	      "  -np N, -n N, --np N  N nodes, 1..65536, as mpirun's -np: one MPI rank a node\n"
	      "                       (--cores still sets each node's cores). Without --torus\n"
	      "                       torusrun picks the most cubic torus of N nodes in at\n"
	      "                       most 3 dimensions, largest first, as MPI_Dims_create\n"
	      "                       (12: 3x2x2, 16: 4x2x2, 8: 2x2x2, 6: 3x2, 7: 7) and\n"
	      "                       names it on stderr (not with --quiet); with --torus, or\n"
	      "                       a config file's torus, N must be its number of nodes\n"
	      "  --cores N            cores (threads) per node, 1..64 (default 1)\n"
	      "  --cores-map A,B,...  cores of each node in rank order (overrides --cores)\n"
	      "  --config FILE        read 'key = value' lines: torus, cores, cores-map, timeout,\n"
	      "                       report, and any machine parameter; '#' starts a comment;\n"
	      "                       a key given twice in the file is an error; the command\n"
	      "                       line wins over the file\n"
	      "  --param NAME=VALUE   set a machine parameter (repeatable); see below\n"
	      "  --report FILE        write a JSON report: times and per-link counters\n"
	      "  --trace FILE         record every link's traffic (when, how much, which\n"
	      "                       collective/color/phase) for torus-trace\n"
	      "  --trace-buffer SIZE  trace memory per node, in torusrun, 64KiB..64MiB (default\n"
	      "                       64KiB); units K or KiB, M or MiB\n"
	      "  --trace-packets      one trace record per packet (default: back-to-back runs)\n"
	      "  --timeout S          hang detector: if no packet moved and no core advanced for\n"
	      "                       S seconds (default 60; 0 disables), stop the job, unless\n"
	      "                       its threads are waiting for a CPU (starved: it says so\n"
	      "                       and waits); clocks that only run on in loops that poll\n"
	      "                       or time out are no progress. It names a stopped node.\n"
	      "  --link NODE:DIR:SET  one link direction's own link_bw and/or hop_latency, for a\n"
	      "                       slow link or a long one (repeatable, at most 64; in a config\n"
	      "                       file 'link = ...', repeatable): NODE a rank or coordinates\n"
	      "                       joined by dots, DIR +x -x +y -y +z -z or +D/-D, SET\n"
	      "                       NAME=VALUE[,NAME=VALUE]; e.g. --link 1.0.0:+y:link_bw=100MB/s\n"
	      "  --wtime emulated|wall  what MPI_Wtime reads in an MPI program (mpi.h): the\n"
	      "                       rank's emulated time (the default) or the host's clock\n"
	      "  --compute-speed F    an MPI program's own work between MPI calls takes\n"
	      "                       emulated time: each rank's measured CPU time divided by\n"
	      "                       F (1: a core as fast as this host's; 0.25: four times\n"
	      "                       slower). Measured time varies from run to run, and so do\n"
	      "                       the emulated times then (default: the work is free)\n"
	      "  --compute-cpi C@HZ   the same, from the instructions each rank retires (the\n"
	      "                       host's hardware counter) at C cycles each and HZ, e.g.\n"
	      "                       1.2@850MHz: it repeats; refused where the host has no\n"
	      "                       such counter (most virtual machines)\n"
	      "  --exact              accepted and ignored: every job is timed exactly (the\n"
	      "                       timekeeper simulates every packet in virtual-time\n"
	      "                       order, so times repeat to the picosecond)\n"
	      "  --chaos SEED         perturb the host's scheduling (random yields and short\n"
	      "                       sleeps in engines and cores, from SEED); emulated results\n"
	      "                       must not move (0, the default: off)\n"
	      "  --quiet              no progress lines (once a second on a long job: emulated\n"
	      "                       time reached, packets moved or simulated) and no summary\n"
	      "                       line at the end\n"
	      "  -h, --help           this text\n"
	      "\n"
	      "PROGRAM must be an executable regular file; a name without '/' is searched in\n"
	      "PATH. Given twice on the command line, an option's last value wins. Numbers\n"
	      "are decimal (no sign, hex, inf or nan); units are written exactly as listed,\n"
	      "case included: MB/s is megabytes, Mb/s megabits per second.\n"
	      "\n"
	      "machine parameters (--param):\n",
	      out);
	torus_params_help(out);
	fputs("\nexit status: the job's 0 on success; 1 a node failed; 2 bad input; 3 the job hung;\n"
	      "130 interrupted.\n",
	      out);
}

static int is_digit(char c) { return c >= '0' && c <= '9'; }

/* A whole decimal number of len bytes, digits only (no sign, space or hex), in [lo, hi]. */
static int parse_u32(const char *text, size_t len, uint32_t lo, uint32_t hi, uint32_t *out)
{
	uint64_t v = 0;
	if (len == 0)
		return -EINVAL;
	for (size_t i = 0; i < len; i++) {
		if (!is_digit(text[i]))
			return -EINVAL;
		v = v * 10 + (uint64_t)(text[i] - '0');
		if (v > hi) /* stop before the sum can wrap */
			return -ERANGE;
	}
	if (v < lo)
		return -ERANGE;
	*out = (uint32_t)v;
	return 0;
}

/* --trace-buffer: a size (torus_size_parse) from lo to hi */
static int parse_size(const char *text, uint32_t lo, uint32_t hi, uint32_t *out)
{
	uint64_t v;
	int rc = torus_size_parse(text, hi, &v);
	if (!rc && v < lo)
		rc = -ERANGE;
	if (!rc)
		*out = (uint32_t)v;
	return rc;
}

/* Seconds: digits with an optional .digits; nothing else (no sign, exponent, inf, nan). */
static int parse_seconds(const char *text, double *out)
{
	size_t n = 0;
	while (is_digit(text[n]))
		n++;
	if (n == 0)
		return -EINVAL;
	if (text[n] == '.') {
		size_t f = ++n;
		while (is_digit(text[n]))
			n++;
		if (n == f)
			return -EINVAL;
	}
	if (text[n])
		return -EINVAL;
	*out = strtod(text, NULL);
	return 0;
}

/*
 * -np N without a torus: N nodes as MPI_Dims_create(N, 3) arranges them, the
 * three sizes as close to each other as can be (the smallest difference
 * between the largest and the smallest, then the smallest largest), largest
 * first, trailing 1s dropped: 12 is 3x2x2, 16 4x2x2, 6 3x2, 7 just 7. Every
 * size must be at most TORUS_MAX_DIM_SIZE: -ERANGE when N has a larger prime
 * factor, as then no torus of N nodes exists.
 */
static int np_shape(uint32_t n, struct torus_shape *out)
{
	uint32_t best[3] = {0, 0, 0};
	for (uint32_t c = 1; (uint64_t)c * c * c <= n; c++) {
		if (n % c)
			continue;
		uint32_t m = n / c;
		for (uint32_t b = c; (uint64_t)b * b <= m; b++) {
			uint32_t a = m / b;
			if (m % b || a > TORUS_MAX_DIM_SIZE)
				continue;
			if (!best[0] || a - c < best[0] - best[2] || (a - c == best[0] - best[2] && a < best[0])) {
				best[0] = a;
				best[1] = b;
				best[2] = c;
			}
		}
	}
	if (!best[0])
		return -ERANGE;
	uint32_t nd = 3;
	while (nd > 1 && best[nd - 1] == 1)
		nd--;
	char err[128];
	return torus_shape_init(out, nd, best, err, sizeof(err));
}

static const char *const setting_keys[EMU_SET_COUNT] = {"torus", "cores", "cores-map", "timeout", "report"};
static const char *const setting_opts[EMU_SET_COUNT] = {"--torus", "--cores", "--cores-map", "--timeout",
							 "--report"};

static int parse_cores_map(struct emu_settings *s, const char *val, const char *who, char *err, size_t errlen)
{
	size_t n = 1;
	if (!*val) {
		snprintf(err, errlen, "bad %s: empty", who);
		return -EINVAL;
	}
	for (const char *p = val; *p; p++)
		n += *p == ',';
	if (n > TORUS_MAX_NODES) {
		snprintf(err, errlen, "bad %s: %zu entries, but a torus has at most %u nodes", who, n, TORUS_MAX_NODES);
		return -EINVAL;
	}
	uint32_t *map = malloc(n * sizeof(*map));
	if (!map) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	const char *p = val;
	for (size_t k = 0; k < n; k++) {
		size_t len = strcspn(p, ",");
		if (parse_u32(p, len, 1, TORUS_MAX_CORES, &map[k])) {
			if (len == 0)
				snprintf(err, errlen, "bad %s '%s': no core count for node %zu%s", who, val, k,
					 k + 1 == n ? " (trailing comma)" : "");
			else
				snprintf(err, errlen, "bad %s entry '%.*s' for node %zu: must be 1..%u", who,
					 (int)(len < 40 ? len : 40), p, k, TORUS_MAX_CORES);
			free(map);
			return -EINVAL;
		}
		p += len + (p[len] == ',');
	}
	free(s->cores_map);
	s->cores_map = map;
	s->ncores_map = (uint32_t)n;
	return 0;
}

/* Parse one setting into s; `who` names it in messages ("--cores", or "cores" in a file). */
static int setting_parse(struct emu_settings *s, enum emu_setting k, const char *val, const char *who, char *err,
			 size_t errlen)
{
	struct torus_shape shape;
	int rc = 0;

	switch (k) {
	case EMU_SET_TORUS:
		rc = torus_shape_parse(val, &shape, err, errlen);
		if (!rc)
			s->shape = shape;
		break;
	case EMU_SET_CORES:
		if (parse_u32(val, strlen(val), 1, TORUS_MAX_CORES, &s->cores)) {
			snprintf(err, errlen, "bad %s '%s': must be 1..%u", who, val, TORUS_MAX_CORES);
			rc = -EINVAL;
		}
		break;
	case EMU_SET_CORES_MAP:
		rc = parse_cores_map(s, val, who, err, errlen);
		break;
	case EMU_SET_TIMEOUT:
		if (parse_seconds(val, &s->timeout_s) || s->timeout_s > 1e6) {
			snprintf(err, errlen, "bad %s '%s': seconds (decimal, e.g. 2.5), 0 to disable, at most 1000000",
				 who, val);
			rc = -EINVAL;
		}
		break;
	case EMU_SET_REPORT: {
		if (!*val) {
			snprintf(err, errlen, "%s needs a file name", who);
			return -EINVAL;
		}
		char *d = strdup(val);
		if (!d) {
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
		free(s->report);
		s->report = d;
		break;
	}
	default:
		snprintf(err, errlen, "internal: setting %d", (int)k);
		return -EINVAL;
	}
	if (!rc)
		s->given |= 1u << k;
	return rc;
}

void emu_settings_free(struct emu_settings *s)
{
	for (uint32_t i = 0; i < s->nlink; i++)
		free(s->link[i]);
	free(s->cores_map);
	free(s->report);
	memset(s, 0, sizeof(*s));
}

static char *trim(char *s)
{
	while (isspace((unsigned char)*s))
		s++;
	char *e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

/* Keys a config file has set so far, for "set twice"; only valid keys get here. */
#define SEEN_MAX 64
struct seen_key {
	char key[32];
	size_t line;
};

static int config_line(const char *name, size_t lineno, char *line, struct emu_settings *out, struct torus_params *p,
		       struct seen_key *seen, size_t *nseen, char *err, size_t errlen)
{
	char msg[320];
	int rc, k;
	char *hash = strchr(line, '#');
	if (hash)
		*hash = '\0';
	char *s = trim(line);
	if (!*s)
		return 0;
	char *eq = strchr(s, '=');
	if (!eq || eq == s) {
		snprintf(err, errlen, "%s:%zu: expected 'key = value'", name, lineno);
		return -EINVAL;
	}
	*eq = '\0';
	char *key = trim(s), *val = trim(eq + 1);
	for (size_t i = 0; i < *nseen; i++) {
		if (!strcmp(seen[i].key, key)) {
			snprintf(err, errlen, "%s:%zu: key '%s' set twice (lines %zu and %zu)", name, lineno, key,
				 seen[i].line, lineno);
			return -EINVAL;
		}
	}
	if (!*val) {
		snprintf(err, errlen, "%s:%zu: '%s' has no value", name, lineno, key);
		return -EINVAL;
	}
	if (!strcmp(key, "link")) {
		/* repeatable, one link direction each; parsed with the shape */
		if (out->nlink == TORUS_MAX_LINK_SETS) {
			snprintf(err, errlen, "%s:%zu: more than %u link lines", name, lineno, TORUS_MAX_LINK_SETS);
			return -EINVAL;
		}
		if (!(out->link[out->nlink] = strdup(val))) {
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
		out->link_line[out->nlink++] = lineno;
		return 0;
	}
	for (k = 0; k < EMU_SET_COUNT && strcmp(key, setting_keys[k]); k++)
		;
	if (k < EMU_SET_COUNT) {
		rc = setting_parse(out, (enum emu_setting)k, val, key, msg, sizeof(msg));
		if (!rc)
			out->line[k] = lineno;
	} else {
		size_t klen = strlen(key), vlen = strlen(val);
		char *assign = malloc(klen + vlen + 2);
		if (!assign) {
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
		memcpy(assign, key, klen);
		assign[klen] = '=';
		memcpy(assign + klen + 1, val, vlen + 1);
		rc = torus_params_set(p, assign, msg, sizeof(msg));
		free(assign);
	}
	if (rc) {
		snprintf(err, errlen, "%s:%zu: %s", name, lineno, msg);
		return rc;
	}
	if (*nseen < SEEN_MAX && strlen(key) < sizeof(seen->key)) {
		strcpy(seen[*nseen].key, key);
		seen[(*nseen)++].line = lineno;
	}
	return 0;
}

int emu_config_read_buf(const char *name, const char *text, size_t len, struct emu_settings *out,
			struct torus_params *params, char *err, size_t errlen)
{
	struct torus_params p = *params;
	struct seen_key seen[SEEN_MAX];
	size_t nseen = 0, lineno = 0, pos = 0;
	char *line = NULL;
	int rc = 0;

	memset(out, 0, sizeof(*out));
	/* whole lines of any length: a long comment stays a comment */
	while (pos < len) {
		const char *start = text + pos, *nl = memchr(start, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - start) : len - pos;
		pos += n + 1;
		lineno++;
		if (memchr(start, '\0', n)) {
			snprintf(err, errlen, "%s:%zu: NUL byte in the line (not a text file?)", name, lineno);
			rc = -EINVAL;
			break;
		}
		char *l = realloc(line, n + 1);
		if (!l) {
			snprintf(err, errlen, "%s:%zu: out of memory", name, lineno);
			rc = -ENOMEM;
			break;
		}
		line = l;
		memcpy(line, start, n);
		line[n] = '\0';
		rc = config_line(name, lineno, line, out, &p, seen, &nseen, err, errlen);
		if (rc)
			break;
	}
	free(line);
	if (rc) {
		emu_settings_free(out);
		return rc;
	}
	*params = p;
	return 0;
}

/* A regular file or a pipe (--config <(...)) of at most EMU_CONFIG_MAX_BYTES:
 * a device like /dev/zero never ends, a directory reads as nothing. */
static int read_config(const char *path, struct emu_settings *out, struct torus_params *params, char *err,
		       size_t errlen)
{
	struct stat st;
	char *buf = NULL;
	size_t len = 0;
	int fd = -1, rc = -EINVAL;

	memset(out, 0, sizeof(*out));
	if (!*path) {
		snprintf(err, errlen, "--config needs a file name");
		return -EINVAL;
	}
	/* before open: opening a device can have effects of its own */
	if (stat(path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode))
		goto not_a_file;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		snprintf(err, errlen, "cannot read config file %s: %s", path, strerror(errno));
		return -EINVAL;
	}
	if (fstat(fd, &st) || (!S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode)))
		goto not_a_file;
	buf = malloc(EMU_CONFIG_MAX_BYTES + 1);
	if (!buf) {
		snprintf(err, errlen, "out of memory");
		rc = -ENOMEM;
		goto out;
	}
	while (len <= EMU_CONFIG_MAX_BYTES) {
		ssize_t r = read(fd, buf + len, EMU_CONFIG_MAX_BYTES + 1 - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			snprintf(err, errlen, "cannot read config file %s: %s", path, strerror(errno));
			goto out;
		}
		if (r == 0)
			break;
		len += (size_t)r;
	}
	if (len > EMU_CONFIG_MAX_BYTES) {
		snprintf(err, errlen, "config file %s is larger than %u KiB", path, EMU_CONFIG_MAX_BYTES >> 10);
		goto out;
	}
	rc = emu_config_read_buf(path, buf, len, out, params, err, errlen);
	goto out;
not_a_file:
	snprintf(err, errlen, "config file %s is %s, not a regular file", path,
		 S_ISDIR(st.st_mode) ? "a directory" : "a device or socket");
out:
	free(buf);
	if (fd >= 0)
		close(fd);
	return rc;
}

/* Can `path` be executed as a node's program? */
static int program_check(const char *path)
{
	struct stat st;
	if (stat(path, &st))
		return -errno;
	if (S_ISDIR(st.st_mode))
		return -EISDIR;
	if (!S_ISREG(st.st_mode))
		return -ENOEXEC;
	return access(path, X_OK) ? -errno : 0;
}

/*
 * The program must be an executable regular file: a directory or an empty
 * name would only fail in every node, after the job started. A name without
 * '/' is searched in PATH as execvp does, skipping directories and files that
 * cannot be run; an empty PATH entry is the current directory.
 */
static int find_program(const char *name, char *out, size_t len)
{
	if (!*name)
		return -EINVAL;
	if (strchr(name, '/')) {
		if (strlen(name) >= len)
			return -ENAMETOOLONG;
		snprintf(out, len, "%s", name);
		return program_check(name);
	}
	const char *path = getenv("PATH");
	int unusable = 0;
	if (!path)
		path = "/usr/bin:/bin";
	for (;;) {
		const char *colon = strchr(path, ':');
		size_t n = colon ? (size_t)(colon - path) : strlen(path);
		int w = snprintf(out, len, "%.*s/%s", (int)n, n ? path : ".", name);
		if (w > 0 && (size_t)w < len) {
			int rc = program_check(out);
			if (rc == 0)
				return 0;
			if (rc != -ENOENT && rc != -ENOTDIR && !unusable)
				unusable = rc; /* as execvp: report it if nothing better turns up */
		}
		if (!colon)
			break;
		path = colon + 1;
	}
	out[0] = '\0';
	return unusable ? unusable : -ENOENT;
}

static const char *program_problem(int rc, int searched)
{
	switch (rc) {
	case -EINVAL:
		return "empty name";
	case -EISDIR:
		return "is a directory";
	case -ENOEXEC:
		return "not a regular file";
	case -EACCES:
		return "not executable";
	case -ENOENT:
		return searched ? "not found in PATH" : "no such file";
	default:
		return strerror(-rc);
	}
}

/*
 * --report and --trace: refuse a path the job could not write, before anything
 * starts. Nothing is created, opened or truncated here: an existing file keeps
 * its content until the job writes it, and a failed validation leaves no file.
 */
static int check_output(const char *opt, const char *verb, const char *what, const char *path, char *err,
			size_t errlen)
{
	struct stat st;
	char dir[4096];
	const char *why = NULL;

	if (!*path) {
		snprintf(err, errlen, "%s needs a file name", opt);
		return -EINVAL;
	}
	if (stat(path, &st) == 0) {
		if (S_ISDIR(st.st_mode))
			why = "is a directory";
		else if (access(path, W_OK))
			why = strerror(errno);
	} else if (errno != ENOENT) {
		why = strerror(errno);
	} else {
		/* a new file: its directory must exist and let us create it */
		const char *slash = strrchr(path, '/');
		size_t n = !slash ? 0 : slash == path ? 1 : (size_t)(slash - path);
		if (slash && !slash[1])
			why = "is a directory";
		else if (n >= sizeof(dir))
			why = strerror(ENAMETOOLONG);
		else {
			memcpy(dir, slash ? path : ".", slash ? n : 1);
			dir[slash ? n : 1] = '\0';
			if (access(dir, W_OK | X_OK))
				why = strerror(errno);
		}
	}
	if (!why)
		return 0;
	snprintf(err, errlen, "cannot %s %s %s: %s", verb, what, path, why);
	return -EINVAL;
}

/* One line on stderr: no byte of the user's input may break it. */
static void one_line(char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			*s = '?';
}

int emu_instr_counter_open(char *why, size_t len)
{
	if (!why && len)
		return -EINVAL;
	struct perf_event_attr a;
	memset(&a, 0, sizeof(a));
	a.type = PERF_TYPE_HARDWARE;
	a.size = sizeof(a);
	a.config = PERF_COUNT_HW_INSTRUCTIONS;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	long fd = syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
	if (fd < 0) {
		int e = errno;
		snprintf(why, len, "%s%s", strerror(e),
			 e == ENOENT || e == EOPNOTSUPP ? ": this host has no hardware performance counters (as most "
							  "virtual machines)"
			 : e == EACCES || e == EPERM	 ? ": see /proc/sys/kernel/perf_event_paranoid"
							 : "");
		return -e;
	}
	return (int)fd;
}

/* --compute-speed F and --compute-cpi C@HZ (at most one). */
static int compute_parse(struct emu_job_config *cfg, const char *speed, const char *cpi, char *err, size_t errlen)
{
	char *end = NULL;
	if (speed && cpi) {
		snprintf(err, errlen, "--compute-speed and --compute-cpi: give one of them");
		return -EINVAL;
	}
	if (speed) {
		errno = 0;
		double f = strtod(speed, &end);
		if (errno || end == speed || *end || !(f >= 1e-6 && f <= 1e6)) {
			snprintf(err, errlen, "bad --compute-speed '%s': a factor from 1e-6 to 1e6 (1: this host's speed)",
				 speed);
			return -EINVAL;
		}
		cfg->compute_speed = f;
	}
	if (cpi) {
		errno = 0;
		double c = strtod(cpi, &end);
		double hz = end && *end == '@' ? strtod(end + 1, &end) : 0;
		double unit = !strcmp(end, "Hz") || !*end ? 1 : !strcmp(end, "kHz") ? 1e3 : !strcmp(end, "MHz") ? 1e6
			      : !strcmp(end, "GHz") ? 1e9 : 0;
		if (errno || !(c > 0 && c <= 1e6) || !unit || !(hz * unit >= 1e3 && hz * unit <= 1e12)) {
			snprintf(err, errlen, "bad --compute-cpi '%s': CYCLES_PER_INSTRUCTION@CLOCK, e.g. 1.2@850MHz", cpi);
			return -EINVAL;
		}
		char why[160];
		int fd = emu_instr_counter_open(why, sizeof(why));
		if (fd >= 0)
			close(fd);
		else {
			snprintf(err, errlen, "--compute-cpi: cannot count instructions here: %s; --compute-speed charges "
				 "measured CPU time instead", why);
			return -ENOTSUP;
		}
		cfg->compute_cpi = c;
		cfg->compute_hz = (uint64_t)(hz * unit + 0.5);
	}
	return 0;
}

int emu_config_parse(int argc, char **argv, struct emu_job_config *cfg, char *err, size_t errlen)
{
	/* command line: the last of a repeated option wins */
	const char *opt[EMU_SET_COUNT] = {0};
	struct emu_settings cli, file;
	const char *config_path = NULL, *trace_buffer = NULL, *chaos = NULL, *wtime = NULL, *np = NULL;
	const char *cspeed = NULL, *ccpi = NULL;
	char perr[256];
	int i, rc = -EINVAL;
	/* parameters: config file first, then --param in order */
	const char *param_args[256];
	int nparam = 0;
	const char *link_args[TORUS_MAX_LINK_SETS];
	uint32_t nlinkarg = 0;

	memset(cfg, 0, sizeof(*cfg));
	memset(&cli, 0, sizeof(cli));
	memset(&file, 0, sizeof(file));
	if (errlen)
		err[0] = '\0';
	cfg->timeout_s = DEFAULT_TIMEOUT_S;
	cfg->trace_buf_bytes = DEFAULT_TRACE_BUFFER;
	torus_params_default(&cfg->params);
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *next = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--")) {
			i++;
			break;
		}
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return 1;
		}
		if (!strcmp(a, "--quiet")) {
			cfg->quiet = 1;
			continue;
		}
		if (!strcmp(a, "--trace-packets")) {
			cfg->trace_packets = 1;
			continue;
		}
		if (!strcmp(a, "--exact")) /* every job is exact: accepted, changes nothing */
			continue;
		const char **slot = !strcmp(a, "--config")	   ? &config_path
				    : !strcmp(a, "--param")	   ? &param_args[nparam]
				    : !strcmp(a, "--trace")	   ? &cfg->trace_path
				    : !strcmp(a, "--trace-buffer") ? &trace_buffer
				    : !strcmp(a, "--chaos")	   ? &chaos
				    : !strcmp(a, "--wtime")	   ? &wtime
				    : !strcmp(a, "--compute-speed") ? &cspeed
				    : !strcmp(a, "--compute-cpi") ? &ccpi
				    : !strcmp(a, "-np") || !strcmp(a, "-n") || !strcmp(a, "--np") ? &np
				    : !strcmp(a, "--link")	   ? &link_args[nlinkarg < TORUS_MAX_LINK_SETS ? nlinkarg : 0]
								   : NULL;
		for (int k = 0; k < EMU_SET_COUNT && !slot; k++)
			if (!strcmp(a, setting_opts[k]))
				slot = &opt[k];
		if (!slot) {
			if (a[0] == '-')
				snprintf(err, errlen, "unknown option '%s' (see torusrun --help)", a);
			else
				snprintf(err, errlen, "expected '--' before the program '%s'", a);
			goto out;
		}
		/* a count is never "--": "-np -- PROGRAM" forgot it */
		if (!next || (slot == &np && !strcmp(next, "--"))) {
			snprintf(err, errlen, "option %s needs a value", a);
			goto out;
		}
		if (!strcmp(a, "--link")) {
			if (nlinkarg == TORUS_MAX_LINK_SETS) {
				snprintf(err, errlen, "more than %u --link options", TORUS_MAX_LINK_SETS);
				goto out;
			}
			nlinkarg++;
		}
		if (slot == &param_args[nparam]) {
			if (nparam == 255) {
				snprintf(err, errlen, "too many --param options");
				goto out;
			}
			nparam++;
		}
		if (slot == &np)
			cfg->np_opt = a;
		*slot = next;
		i++;
	}
	if (i >= argc) {
		snprintf(err, errlen, "no program given: torusrun [options] -- PROGRAM [ARGS...]");
		goto out;
	}
	cfg->argv = &argv[i];
	cfg->argc = argc - i;

	if (config_path && (rc = read_config(config_path, &file, &cfg->params, err, errlen)))
		goto out;
	rc = -EINVAL;
	for (int k = 0; k < nparam; k++) {
		if (torus_params_set(&cfg->params, param_args[k], perr, sizeof(perr))) {
			snprintf(err, errlen, "%s", perr);
			goto out;
		}
	}
	if (torus_params_check(&cfg->params, perr, sizeof(perr))) {
		snprintf(err, errlen, "%s", perr);
		goto out;
	}
	for (int k = 0; k < EMU_SET_COUNT; k++)
		if (opt[k] && (rc = setting_parse(&cli, (enum emu_setting)k, opt[k], setting_opts[k], err, errlen)))
			goto out;
	rc = -EINVAL;
	if (trace_buffer && parse_size(trace_buffer, 64u << 10, 64u << 20, &cfg->trace_buf_bytes)) {
		snprintf(err, errlen, "bad --trace-buffer '%s': bytes per node, 64KiB..64MiB (units K, KiB, M, MiB)",
			 trace_buffer);
		goto out;
	}
	if (wtime && strcmp(wtime, "wall") && strcmp(wtime, "emulated")) {
		snprintf(err, errlen, "bad --wtime '%s': emulated (the default) or wall", wtime);
		goto out;
	}
	cfg->wtime_wall = wtime && !strcmp(wtime, "wall");
	if ((rc = compute_parse(cfg, cspeed, ccpi, err, errlen)))
		goto out;
	rc = -EINVAL;
	if (chaos && parse_u32(chaos, strlen(chaos), 0, UINT32_MAX, &cfg->chaos_seed)) {
		snprintf(err, errlen, "bad --chaos '%s': a seed, 1..4294967295 (0: off)", chaos);
		goto out;
	}
	if (np && parse_u32(np, strlen(np), 1, TORUS_MAX_NODES, &cfg->np)) {
		snprintf(err, errlen, "bad %s '%s': the number of nodes, 1..%u", cfg->np_opt, np, TORUS_MAX_NODES);
		goto out;
	}
	if ((trace_buffer || cfg->trace_packets) && !cfg->trace_path) {
		snprintf(err, errlen, "%s needs --trace FILE", trace_buffer ? "--trace-buffer" : "--trace-packets");
		goto out;
	}
	/* the command line wins over the file */
	struct emu_settings *src[EMU_SET_COUNT];
	for (int k = 0; k < EMU_SET_COUNT; k++)
		src[k] = cli.given >> k & 1 ? &cli : file.given >> k & 1 ? &file : NULL;
	if (src[EMU_SET_TORUS]) {
		cfg->shape = src[EMU_SET_TORUS]->shape;
	} else if (np) {
		/* -np alone: torusrun picks the shape */
		if (np_shape(cfg->np, &cfg->shape)) {
			snprintf(err, errlen,
				 "bad %s %u: no torus has %u nodes (it has a prime factor larger than %u, the largest "
				 "size of a dimension)",
				 cfg->np_opt, cfg->np, cfg->np, TORUS_MAX_DIM_SIZE);
			goto out;
		}
		cfg->np_chose_shape = 1;
	} else {
		snprintf(err, errlen, "no torus shape: give --torus (e.g. --torus 4x4x4) or -np N");
		goto out;
	}
	if (np && cfg->shape.nnodes != cfg->np) {
		char dims[96];
		torus_shape_format(&cfg->shape, dims, sizeof(dims));
		if (src[EMU_SET_TORUS] == &cli)
			snprintf(err, errlen,
				 "%s %u but --torus %s has %u nodes (give either, or both with the same node count)",
				 cfg->np_opt, cfg->np, dims, cfg->shape.nnodes);
		else
			snprintf(err, errlen, "%s %u but %s:%zu: torus %s has %u nodes", cfg->np_opt, cfg->np,
				 config_path, file.line[EMU_SET_TORUS], dims, cfg->shape.nnodes);
		goto out;
	}
	/* per-link settings: the file's, then the command line's; a later
	 * setting of the same link direction wins field by field */
	for (uint32_t k = 0; k < file.nlink + nlinkarg; k++) {
		struct torus_link_set ls;
		const char *text = k < file.nlink ? file.link[k] : link_args[k - file.nlink];
		if (torus_link_set_parse(&cfg->shape, text, &ls, perr, sizeof(perr))) {
			if (k < file.nlink)
				snprintf(err, errlen, "%s:%zu: %s", config_path, file.link_line[k], perr);
			else
				snprintf(err, errlen, "bad --link '%s': %s", text, perr);
			goto out;
		}
		uint32_t j = 0;
		while (j < cfg->nlinks && (cfg->links[j].node != ls.node || cfg->links[j].link != ls.link))
			j++;
		if (j == cfg->nlinks) {
			if (cfg->nlinks == TORUS_MAX_LINK_SETS) {
				snprintf(err, errlen, "more than %u link directions set", TORUS_MAX_LINK_SETS);
				goto out;
			}
			cfg->links[cfg->nlinks++] = ls;
			continue;
		}
		if (ls.link_bw)
			cfg->links[j].link_bw = ls.link_bw;
		if (ls.hop_latency_ps != UINT64_MAX)
			cfg->links[j].hop_latency_ps = ls.hop_latency_ps;
	}
	cfg->default_cores = src[EMU_SET_CORES] ? src[EMU_SET_CORES]->cores : 1;
	if (src[EMU_SET_TIMEOUT])
		cfg->timeout_s = src[EMU_SET_TIMEOUT]->timeout_s;
	if (src[EMU_SET_REPORT]) {
		cfg->report_path = src[EMU_SET_REPORT]->report; /* handed over */
		src[EMU_SET_REPORT]->report = NULL;
		cfg->report_owned = 1;
	}
	uint32_t n = cfg->shape.nnodes;
	cfg->cores = malloc(n * sizeof(uint32_t));
	if (!cfg->cores) {
		snprintf(err, errlen, "out of memory");
		rc = -ENOMEM;
		goto out;
	}
	for (uint32_t r = 0; r < n; r++)
		cfg->cores[r] = cfg->default_cores;
	const struct emu_settings *cm = src[EMU_SET_CORES_MAP];
	if (cm && cm->ncores_map != n) {
		if (cm == &file)
			snprintf(err, errlen, "%s:%zu: cores-map has %u entries for %u nodes", config_path,
				 file.line[EMU_SET_CORES_MAP], cm->ncores_map, n);
		else
			snprintf(err, errlen, "bad --cores-map: %u entries for %u nodes", cm->ncores_map, n);
		goto out;
	}
	if (cm)
		memcpy(cfg->cores, cm->cores_map, n * sizeof(uint32_t));
	uint32_t maxc = 0;
	for (uint32_t r = 0; r < n; r++)
		if (cfg->cores[r] > maxc)
			maxc = cfg->cores[r];
	/* region and counter ids are node-wide and travel in 16-bit packet fields */
	if ((uint64_t)maxc * cfg->params.dma_regions > 65535 || (uint64_t)maxc * cfg->params.dma_counters > 65535) {
		snprintf(err, errlen, "%u cores x %u regions or %u counters exceeds the 65535 ids a node can have", maxc,
			 cfg->params.dma_regions, cfg->params.dma_counters);
		goto out;
	}
	rc = find_program(cfg->argv[0], cfg->program_path, sizeof(cfg->program_path));
	if (rc) {
		snprintf(err, errlen, "program '%s': %s (PROGRAM must be an executable regular file)", cfg->argv[0],
			 program_problem(rc, !strchr(cfg->argv[0], '/')));
		rc = -EINVAL;
		goto out;
	}
	rc = emu_config_check_limits(cfg, err, errlen);
	if (rc)
		goto out;
	if (cfg->report_path && (rc = check_output("--report", "write", "report", cfg->report_path, err, errlen)))
		goto out;
	if (cfg->trace_path && (rc = check_output("--trace", "create", "trace", cfg->trace_path, err, errlen)))
		goto out;
out:
	emu_settings_free(&cli);
	emu_settings_free(&file);
	if (rc) {
		emu_config_free(cfg);
		if (errlen)
			one_line(err);
	}
	return rc;
}

void emu_config_free(struct emu_job_config *cfg)
{
	free(cfg->cores);
	cfg->cores = NULL;
	if (cfg->report_owned)
		free((char *)cfg->report_path);
	cfg->report_path = NULL;
	cfg->report_owned = 0;
}

static uint64_t read_u64_file(const char *path)
{
	FILE *f = fopen(path, "r");
	unsigned long long v = 0;
	if (f) {
		if (fscanf(f, "%llu", &v) != 1)
			v = 0;
		fclose(f);
	}
	return v;
}

uint64_t emu_host_mem_available(void)
{
	FILE *f = fopen("/proc/meminfo", "r");
	char line[256];
	unsigned long long kb = 0;
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
			break;
	fclose(f);
	return kb * 1024;
}

/* Resident bytes a node process needs beyond the shared memory (measured
 * at about 1 MiB on Debian 12; stacks touch little). */
#define NODE_PROCESS_BYTES (1536u * 1024u)
#define CORE_THREAD_BYTES (96u * 1024u)

/* Address space a process maps besides the job memory: its program,
 * libraries, heap and thread stacks (a core's and the engine's, 8 MiB each
 * by default, reserved whole), generously. */
#define PROCESS_MAPPINGS ((uint64_t)512 << 20)

/*
 * A job's links and FIFOs do not fit in `room` bytes: which parameter to
 * lower, in hint. Of fifo_slots, rx_slots and inj_slots, the one whose
 * smallest value saves the most, with the largest power of two at which
 * the job fits, if one does; else that none alone is enough.
 */
static void mem_hint(const struct emu_job_config *cfg, uint64_t room, char *hint, size_t len)
{
	static const char *const names[3] = {"fifo_slots", "rx_slots", "inj_slots"};
	struct torus_params p = cfg->params;
	uint32_t *field[3] = {&p.fifo_slots, &p.rx_slots, &p.inj_slots};
	uint64_t best_saved = 0;
	int best = 0;
	for (int i = 0; i < 3; i++) {
		uint32_t keep = *field[i];
		*field[i] = 1;
		uint64_t saved = emu_shm_layout(&cfg->shape, &cfg->params, cfg->cores, NULL, NULL) -
				 emu_shm_layout(&cfg->shape, &p, cfg->cores, NULL, NULL);
		*field[i] = keep;
		if (saved > best_saved) {
			best_saved = saved;
			best = i;
		}
	}
	uint32_t now = *field[best], v = now;
	while (v > 1) {
		v /= 2;
		*field[best] = v;
		if (emu_shm_layout(&cfg->shape, &p, cfg->cores, NULL, NULL) <= room) {
			snprintf(hint, len, "--param %s=%u (now %u) would fit", names[best], v, now);
			return;
		}
	}
	snprintf(hint, len, "%s (now %u) takes the most, but no value of it alone fits: fewer nodes or cores",
		 names[best], now);
}

int emu_config_check_limits(const struct emu_job_config *cfg, char *err, size_t errlen)
{
	uint64_t n = cfg->shape.nnodes, threads = 0, cores = 0;
	for (uint32_t r = 0; r < n; r++)
		cores += cfg->cores[r];
	threads = cores + 2 * n; /* cores, engine and main thread of each node */
	uint64_t tmax = read_u64_file("/proc/sys/kernel/threads-max");
	uint64_t pmax = read_u64_file("/proc/sys/kernel/pid_max");
	struct rlimit rl;
	if (getrlimit(RLIMIT_NPROC, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && geteuid() != 0 &&
	    threads + 64 > rl.rlim_cur) {
		snprintf(err, errlen, "job needs %llu threads but RLIMIT_NPROC allows %llu (ulimit -u)",
			 (unsigned long long)threads, (unsigned long long)rl.rlim_cur);
		return -E2BIG;
	}
	uint64_t lim = tmax && pmax ? (tmax < pmax ? tmax : pmax) : (tmax ? tmax : pmax);
	if (lim && threads + 256 > lim) {
		snprintf(err, errlen, "job needs %llu threads but the kernel allows %llu (threads-max, pid_max)",
			 (unsigned long long)threads, (unsigned long long)lim);
		return -E2BIG;
	}
	uint64_t shm = emu_shm_layout(&cfg->shape, &cfg->params, cfg->cores, NULL, NULL);
	uint64_t fixed = n * NODE_PROCESS_BYTES + cores * CORE_THREAD_BYTES, need = shm + fixed;
	uint64_t avail = emu_host_mem_available();
	if (avail && need > avail) {
		char hint[160];
		mem_hint(cfg, avail > fixed ? avail - fixed : 0, hint, sizeof(hint));
		snprintf(err, errlen, "job needs about %.1f GiB of memory (links and FIFOs %.1f GiB) but %.1f GiB is available; %s",
			 need / 1073741824.0, shm / 1073741824.0, avail / 1073741824.0, hint);
		return -E2BIG;
	}
	/* each process maps the whole job memory: ulimit -v must allow it */
	struct rlimit as;
	if (getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY && shm + PROCESS_MAPPINGS > as.rlim_cur) {
		snprintf(err, errlen,
			 "each process maps the job's %.1f GiB of links and FIFOs, but its address space is limited to "
			 "%.1f GiB (ulimit -v)",
			 shm / 1073741824.0, (double)as.rlim_cur / 1073741824.0);
		return -E2BIG;
	}
	return 0;
}
