/*
 * torusrun's command line and --config file: everything is validated here,
 * before anything is started, so a bad job fails with one line and exit 2.
 */
#include "emu_internal.h"

#include <ctype.h>
#include <math.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#define DEFAULT_TIMEOUT_S 60.0
#define DEFAULT_TRACE_BUFFER (256u << 10)

static void usage(FILE *out)
{
	fputs("usage: torusrun --torus DIMS [options] -- PROGRAM [ARGS...]\n"
	      "\n"
	      "Run PROGRAM once per node of an emulated torus, like mpirun. Each node is an\n"
	      "OS process; inside it the library starts one thread per core and the node's\n"
	      "engine thread. Nodes talk only through packets on shared-memory links.\n"
	      "\n"
	      "options:\n"
	      "  --torus AxBx...      torus shape, 1 to 6 dimensions (e.g. 4x4x4, 8, 2x2x2x2x2)\n"
	      "  --cores N            cores (threads) per node, 1..64 (default 1)\n"
	      "  --cores-map A,B,...  cores of each node in rank order (overrides --cores)\n"
	      "  --config FILE        read 'key = value' lines: torus, cores, cores-map, timeout,\n"
	      "                       report, and any machine parameter; the command line wins\n"
	      "  --param NAME=VALUE   set a machine parameter (repeatable); see below\n"
	      "  --report FILE        write a JSON report: times and per-link counters\n"
	      "  --trace FILE         record every link's traffic (when, how much, which\n"
	      "                       collective/color/phase) for torus-trace\n"
	      "  --trace-buffer SIZE  trace memory per node, e.g. 256KiB (default), 64KiB..64MiB\n"
	      "  --trace-packets      one trace record per packet (default: back-to-back runs)\n"
	      "  --timeout S          hang detector: stop the job if no packet moved and no core\n"
	      "                       advanced for S seconds (default 60; 0 disables)\n"
	      "  --quiet              no summary line at the end\n"
	      "  -h, --help           this text\n"
	      "\n"
	      "machine parameters (--param):\n",
	      out);
	torus_params_help(out);
	fputs("\nexit status: the job's 0 on success; 1 a node failed; 2 bad input; 3 the job hung;\n"
	      "130 interrupted.\n",
	      out);
}

static int parse_u32(const char *text, uint32_t lo, uint32_t hi, uint32_t *out)
{
	char *end;
	if (!text || !*text || !isdigit((unsigned char)*text))
		return -EINVAL;
	errno = 0;
	unsigned long v = strtoul(text, &end, 10);
	if (errno || *end || v < lo || v > hi)
		return -EINVAL;
	*out = (uint32_t)v;
	return 0;
}

/* "65536", "64KiB", "64K", "1MiB", "1M" */
static int parse_size(const char *text, uint32_t lo, uint32_t hi, uint32_t *out)
{
	char *end;
	if (!text || !isdigit((unsigned char)*text))
		return -EINVAL;
	errno = 0;
	unsigned long long v = strtoull(text, &end, 10);
	if (!strcmp(end, "K") || !strcmp(end, "KiB") || !strcmp(end, "k"))
		v <<= 10;
	else if (!strcmp(end, "M") || !strcmp(end, "MiB"))
		v <<= 20;
	else if (*end)
		return -EINVAL;
	if (errno || v < lo || v > hi)
		return -EINVAL;
	*out = (uint32_t)v;
	return 0;
}

struct pending {
	const char *torus, *cores, *cores_map, *timeout, *report;
	char *owned[64];
	int nowned;
};

static char *keep(struct pending *pd, const char *s)
{
	if (pd->nowned == 64)
		return NULL;
	char *d = strdup(s);
	if (d)
		pd->owned[pd->nowned++] = d;
	return d;
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

static int read_config(const char *path, struct pending *pd, struct torus_params *p, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	char line[1024];
	int lineno = 0, rc = 0;

	if (!f) {
		snprintf(err, errlen, "cannot read config file %s: %s", path, strerror(errno));
		return -EINVAL;
	}
	while (fgets(line, sizeof(line), f)) {
		lineno++;
		char *hash = strchr(line, '#');
		if (hash)
			*hash = '\0';
		char *s = trim(line);
		if (!*s)
			continue;
		char *eq = strchr(s, '=');
		if (!eq) {
			snprintf(err, errlen, "%s:%d: expected 'key = value'", path, lineno);
			rc = -EINVAL;
			break;
		}
		*eq = '\0';
		char *key = trim(s), *val = trim(eq + 1);
		const char **slot = !strcmp(key, "torus")       ? &pd->torus
				    : !strcmp(key, "cores")     ? &pd->cores
				    : !strcmp(key, "cores-map") ? &pd->cores_map
				    : !strcmp(key, "timeout")   ? &pd->timeout
				    : !strcmp(key, "report")    ? &pd->report
								: NULL;
		if (slot) {
			if (!*slot && !(*slot = keep(pd, val))) {
				snprintf(err, errlen, "%s:%d: too many settings", path, lineno);
				rc = -EINVAL;
				break;
			}
			continue;
		}
		char assign[1100], perr[200];
		snprintf(assign, sizeof(assign), "%s=%s", key, val);
		if (torus_params_set(p, assign, perr, sizeof(perr))) {
			snprintf(err, errlen, "%s:%d: %s", path, lineno, perr);
			rc = -EINVAL;
			break;
		}
	}
	fclose(f);
	return rc;
}

static int find_program(const char *name, char *out, size_t len)
{
	if (strchr(name, '/')) {
		if (access(name, X_OK))
			return -errno;
		snprintf(out, len, "%s", name);
		return 0;
	}
	const char *path = getenv("PATH");
	if (!path)
		path = "/usr/bin:/bin";
	while (*path) {
		const char *colon = strchr(path, ':');
		size_t n = colon ? (size_t)(colon - path) : strlen(path);
		snprintf(out, len, "%.*s/%s", (int)n, n ? path : ".", name);
		if (!access(out, X_OK))
			return 0;
		path += n + (colon ? 1 : 0);
	}
	return -ENOENT;
}

int emu_config_parse(int argc, char **argv, struct emu_job_config *cfg, char *err, size_t errlen)
{
	struct pending cli = {0}, file = {0};
	struct torus_params cli_params;
	const char *config_path = NULL, *trace_buffer = NULL;
	char perr[256];
	int i, rc = -EINVAL;
	/* parameters: config file first, then --param in order */
	const char *param_args[256];
	int nparam = 0;

	memset(cfg, 0, sizeof(*cfg));
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
		const char **slot = !strcmp(a, "--torus")       ? &cli.torus
				    : !strcmp(a, "--cores")     ? &cli.cores
				    : !strcmp(a, "--cores-map") ? &cli.cores_map
				    : !strcmp(a, "--timeout")   ? &cli.timeout
				    : !strcmp(a, "--report")    ? &cli.report
				    : !strcmp(a, "--config")    ? &config_path
				    : !strcmp(a, "--param")     ? &param_args[nparam]
				    : !strcmp(a, "--trace")     ? &cfg->trace_path
				    : !strcmp(a, "--trace-buffer") ? &trace_buffer
								: NULL;
		if (!slot) {
			if (a[0] == '-')
				snprintf(err, errlen, "unknown option '%s' (see torusrun --help)", a);
			else
				snprintf(err, errlen, "expected '--' before the program '%s'", a);
			goto out;
		}
		if (!next) {
			snprintf(err, errlen, "option %s needs a value", a);
			goto out;
		}
		if (slot == &param_args[nparam]) {
			if (nparam == 255) {
				snprintf(err, errlen, "too many --param options");
				goto out;
			}
			nparam++;
		}
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
	cli_params = cfg->params;
	for (int k = 0; k < nparam; k++) {
		if (torus_params_set(&cli_params, param_args[k], perr, sizeof(perr))) {
			snprintf(err, errlen, "%s", perr);
			goto out;
		}
	}
	cfg->params = cli_params;
	if (torus_params_check(&cfg->params, perr, sizeof(perr))) {
		snprintf(err, errlen, "%s", perr);
		goto out;
	}
	const char *torus = cli.torus ? cli.torus : file.torus;
	const char *cores = cli.cores ? cli.cores : file.cores;
	const char *cmap = cli.cores_map ? cli.cores_map : file.cores_map;
	const char *timeout = cli.timeout ? cli.timeout : file.timeout;
	cfg->report_path = cli.report ? cli.report : file.report;
	if (cfg->report_path && !cli.report) {
		cfg->report_path = strdup(cfg->report_path);
		cfg->report_owned = 1;
	}
	if (trace_buffer && parse_size(trace_buffer, 64u << 10, 64u << 20, &cfg->trace_buf_bytes)) {
		snprintf(err, errlen, "bad --trace-buffer '%s': bytes per node, 64KiB..64MiB (e.g. 1MiB)", trace_buffer);
		goto out;
	}
	if ((trace_buffer || cfg->trace_packets) && !cfg->trace_path) {
		snprintf(err, errlen, "%s needs --trace FILE", trace_buffer ? "--trace-buffer" : "--trace-packets");
		goto out;
	}
	if (!torus) {
		snprintf(err, errlen, "no torus shape: give --torus (e.g. --torus 4x4x4)");
		goto out;
	}
	if (torus_shape_parse(torus, &cfg->shape, perr, sizeof(perr))) {
		snprintf(err, errlen, "%s", perr);
		goto out;
	}
	cfg->default_cores = 1;
	if (cores && parse_u32(cores, 1, TORUS_MAX_CORES, &cfg->default_cores)) {
		snprintf(err, errlen, "bad --cores '%s': must be 1..%u", cores, TORUS_MAX_CORES);
		goto out;
	}
	if (timeout) {
		char *end;
		errno = 0;
		cfg->timeout_s = strtod(timeout, &end);
		if (errno || end == timeout || *end || !isfinite(cfg->timeout_s) || cfg->timeout_s < 0 ||
		    cfg->timeout_s > 1e6) {
			snprintf(err, errlen, "bad --timeout '%s': seconds, 0 to disable", timeout);
			goto out;
		}
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
	if (cmap) {
		const char *p = cmap;
		uint32_t k = 0;
		if (!*cmap || cmap[strlen(cmap) - 1] == ',') {
			snprintf(err, errlen, "bad --cores-map '%s': %s", cmap, *cmap ? "trailing comma" : "empty");
			goto out;
		}
		while (*p) {
			char item[32];
			size_t len = strcspn(p, ",");
			if (len == 0 || len >= sizeof(item) || k >= n) {
				snprintf(err, errlen, "bad --cores-map: need %u comma-separated core counts, one per node",
					 n);
				goto out;
			}
			memcpy(item, p, len);
			item[len] = '\0';
			if (parse_u32(item, 1, TORUS_MAX_CORES, &cfg->cores[k])) {
				snprintf(err, errlen, "bad --cores-map entry '%s' for node %u: must be 1..%u", item, k,
					 TORUS_MAX_CORES);
				goto out;
			}
			k++;
			p += len;
			if (*p == ',')
				p++;
		}
		if (k != n) {
			snprintf(err, errlen, "bad --cores-map: %u entries for %u nodes", k, n);
			goto out;
		}
	}
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
		snprintf(err, errlen, "program '%s': %s", cfg->argv[0], strerror(-rc));
		rc = -EINVAL;
		goto out;
	}
	rc = emu_config_check_limits(cfg, err, errlen);
out:
	for (int k = 0; k < cli.nowned; k++)
		free(cli.owned[k]);
	for (int k = 0; k < file.nowned; k++)
		free(file.owned[k]);
	if (rc)
		emu_config_free(cfg);
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

static uint64_t mem_available(void)
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
	uint64_t shm = emu_shm_layout(&cfg->shape, &cfg->params, cfg->cores, NULL);
	uint64_t need = shm + n * NODE_PROCESS_BYTES + cores * CORE_THREAD_BYTES;
	uint64_t avail = mem_available();
	if (avail && need > avail) {
		snprintf(err, errlen,
			 "job needs about %.1f GiB of memory (links %.1f GiB) but %.1f GiB is available; smaller link "
			 "FIFOs need less (--param fifo_slots=%u, now %u)",
			 need / 1073741824.0, shm / 1073741824.0, avail / 1073741824.0,
			 cfg->params.fifo_slots > 8 ? cfg->params.fifo_slots / 4 : 1, cfg->params.fifo_slots);
		return -E2BIG;
	}
	return 0;
}
