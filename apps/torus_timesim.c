/*
 * torus-timesim: a traffic pattern timed by the exact model alone, with no
 * emulation: the timing simulator (torus/timesim.h) that torusrun's exact
 * engine is built on, run sequentially in this process. It gives the
 * figure the emulator's emulated times are held to, and measures how fast
 * the simulator is (hops per second of wall time).
 *
 *   torus-timesim --torus 8x8x8 --pattern stress --packets 4
 *
 * Patterns:
 *   stress    torus-stress's traffic: every core sends K raw packets to every
 *             other core, in its order (round by round, each round rotated
 *             by the sender's index) and with its payload sizes
 *   alltoall  every node's core 0 puts B bytes to every other node, node a's
 *             k-th put going to node a + k, round-robin over its DMA FIFOs
 *   hotspot   every node's core 0 puts B bytes to node 0
 *
 * A core posts one packet or descriptor every inj_overhead (the model's
 * posting cost), from time 0.
 */
#include "../torus/timesim.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct options {
	struct torus_shape shape;
	struct torus_params params;
	uint32_t cores;
	const char *pattern;
	uint32_t packets;
	int size;         /* stress: payload bytes, -1: torus-stress's varying sizes */
	uint64_t bytes;   /* alltoall, hotspot */
	int quiet;
};

struct tally {
	uint64_t *wire;   /* per node and link */
	torus_vt_t last;  /* the last deposit */
	uint64_t deposits;
	uint32_t stress_total; /* stress: cores in the job (cookies name sender and round) */
	torus_vt_t last0; /* stress: the last deposit for core 0, what torus-stress prints */
};

static void on_hop(void *arg, uint32_t node, uint32_t link, torus_vt_t start, torus_vt_t end, uint32_t wire,
		   uint32_t payload, uint64_t cookie, int request)
{
	(void)start, (void)end, (void)payload, (void)cookie, (void)request;
	struct tally *t = arg;
	t->wire[(size_t)node * 2 * TORUS_MAX_DIMS + link] += wire;
}

static void on_deposit(void *arg, uint32_t node, uint64_t cookie, uint64_t index, uint32_t len, torus_vt_t at)
{
	(void)node, (void)cookie, (void)index, (void)len;
	struct tally *t = arg;
	if (at > t->last)
		t->last = at;
	t->deposits++;
	if (t->stress_total) {
		/* cookie i * total + me: sender me's post i, to (me + i % (total - 1) + 1) % total */
		uint64_t total = t->stress_total, me = cookie % total, i = cookie / total;
		if ((me + i % (total - 1) + 1) % total == 0 && at > t->last0)
			t->last0 = at;
	}
}

static double wall_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* torus-stress's payload sizes (apps/torus_stress.c: payload_len). */
static uint32_t stress_mix(uint32_t a, uint32_t b, uint32_t c)
{
	uint32_t h = a * 0x9E3779B1u ^ (b + 0x7F4A7C15u) * 0x85EBCA77u ^ (c + 1u) * 0xC2B2AE3Du;
	h ^= h >> 15;
	return h * 0x2C1B3C6Du;
}
static uint32_t stress_len(const struct options *o, uint32_t src, uint32_t dst, uint32_t seq)
{
	uint32_t maxp = torus_params_payload(&o->params), hdr = 16;
	if (o->size >= 0)
		return (uint32_t)o->size;
	return hdr + stress_mix(src, dst, seq) % (maxp - hdr + 1);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: torus-timesim --torus SHAPE [--cores N] [--param NAME=VALUE]...\n"
		"                     [--pattern stress|alltoall|hotspot] [--packets K] [--size B]\n"
		"                     [--bytes B] [--quiet]\n\n"
		"Times a traffic pattern with the exact time model alone (no emulation):\n"
		"the sequential timing simulator that torusrun's timekeeper runs. Prints\n"
		"the emulated time (the last packet deposited), the link-load bound (the\n"
		"busiest link direction's wire bytes over the link bandwidth), and the\n"
		"simulator's speed.\n\n"
		"  --torus SHAPE        e.g. 4x4x4 (required)\n"
		"  --cores N            cores per node (default 1)\n"
		"  --param NAME=VALUE   a machine parameter, as for torusrun (repeatable)\n"
		"  --pattern P          stress (default): torus-stress's traffic, K raw packets\n"
		"                       from every core to every other core; alltoall: every\n"
		"                       node puts B bytes to every other node; hotspot: every\n"
		"                       node puts B bytes to node 0\n"
		"  --packets K          stress: packets per ordered pair of cores (default 4)\n"
		"  --size B             stress: payload bytes, 0..240 (default: torus-stress's\n"
		"                       varying sizes)\n"
		"  --bytes B            alltoall, hotspot: bytes per transfer (default 65536)\n"
		"  --quiet              no progress lines on stderr\n"
		"  -h, --help           this help\n");
}

static int parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
	char *end;
	if (!s || !*s || *s == '-')
		return -1;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

static int parse(int argc, char **argv, struct options *o)
{
	char err[256];
	int have_shape = 0;
	memset(o, 0, sizeof(*o));
	torus_params_default(&o->params);
	o->cores = 1;
	o->pattern = "stress";
	o->packets = 4;
	o->size = -1;
	o->bytes = 65536;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		uint64_t n;
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout);
			return 1;
		}
		if (!strcmp(a, "--quiet")) {
			o->quiet = 1;
			continue;
		}
		if (!v) {
			fprintf(stderr, "torus-timesim: %s needs a value (or is not an option; see --help)\n", a);
			return -1;
		}
		i++;
		if (!strcmp(a, "--torus")) {
			if (torus_shape_parse(v, &o->shape, err, sizeof(err))) {
				fprintf(stderr, "torus-timesim: --torus: %s\n", err);
				return -1;
			}
			have_shape = 1;
		} else if (!strcmp(a, "--cores")) {
			if (parse_u64(v, 1, TORUS_MAX_CORES, &n)) {
				fprintf(stderr, "torus-timesim: bad --cores '%s' (1..%u)\n", v, TORUS_MAX_CORES);
				return -1;
			}
			o->cores = (uint32_t)n;
		} else if (!strcmp(a, "--param")) {
			if (torus_params_set(&o->params, v, err, sizeof(err))) {
				fprintf(stderr, "torus-timesim: --param: %s\n", err);
				return -1;
			}
		} else if (!strcmp(a, "--pattern")) {
			if (strcmp(v, "stress") && strcmp(v, "alltoall") && strcmp(v, "hotspot")) {
				fprintf(stderr, "torus-timesim: bad --pattern '%s' (stress, alltoall or hotspot)\n", v);
				return -1;
			}
			o->pattern = v;
		} else if (!strcmp(a, "--packets")) {
			if (parse_u64(v, 1, 1u << 20, &n)) {
				fprintf(stderr, "torus-timesim: bad --packets '%s' (1..1048576)\n", v);
				return -1;
			}
			o->packets = (uint32_t)n;
		} else if (!strcmp(a, "--size")) {
			if (parse_u64(v, 0, TORUS_MAX_PAYLOAD, &n)) {
				fprintf(stderr, "torus-timesim: bad --size '%s' (0..%u)\n", v, TORUS_MAX_PAYLOAD);
				return -1;
			}
			o->size = (int)n;
		} else if (!strcmp(a, "--bytes")) {
			if (parse_u64(v, 0, 1ull << 40, &n)) {
				fprintf(stderr, "torus-timesim: bad --bytes '%s' (0..2^40)\n", v);
				return -1;
			}
			o->bytes = n;
		} else {
			fprintf(stderr, "torus-timesim: unknown option '%s' (see --help)\n", a);
			return -1;
		}
	}
	if (!have_shape) {
		fprintf(stderr, "torus-timesim: --torus SHAPE is required (see --help)\n");
		return -1;
	}
	if (torus_params_check(&o->params, err, sizeof(err))) {
		fprintf(stderr, "torus-timesim: %s\n", err);
		return -1;
	}
	if (o->size > (int)torus_params_payload(&o->params)) {
		fprintf(stderr, "torus-timesim: --size %d is more than a packet's payload (%u)\n", o->size,
			torus_params_payload(&o->params));
		return -1;
	}
	return 0;
}

/* Progress, at most every two seconds. */
struct progress {
	double start, next;
	int quiet;
};
static void progress(struct progress *p, struct timesim *ts, uint64_t posted, uint64_t total)
{
	if (p->quiet)
		return;
	double now = wall_now();
	if (now < p->next)
		return;
	p->next = now + 2.0;
	struct timesim_stats st;
	timesim_stats(ts, &st);
	fprintf(stderr, "torus-timesim: %.0f s: %llu of %llu transfers posted, %llu hops, virtual time %.3f us\n",
		now - p->start, (unsigned long long)posted, (unsigned long long)total, (unsigned long long)st.hops,
		timesim_now(ts) / 1e6);
}

int main(int argc, char **argv)
{
	struct options o;
	int pr = parse(argc, argv, &o);
	if (pr)
		return pr > 0 ? 0 : 2;
	const uint32_t N = o.shape.nnodes, total = N * o.cores;
	uint32_t *cores = malloc(N * sizeof(*cores));
	struct tally t = {calloc((size_t)N * 2 * TORUS_MAX_DIMS, sizeof(uint64_t)), 0, 0, 0, 0};
	if (!cores || !t.wire) {
		fprintf(stderr, "torus-timesim: out of memory\n");
		return 1;
	}
	for (uint32_t i = 0; i < N; i++)
		cores[i] = o.cores;
	struct timesim_config cfg = {&o.shape, &o.params, cores, 64, NULL, {.hop = on_hop, .deposit = on_deposit, .arg = &t}};
	struct timesim *ts;
	int rc = timesim_create(&cfg, &ts);
	if (rc) {
		fprintf(stderr, "torus-timesim: %s\n", strerror(-rc));
		return 1;
	}
	const torus_vt_t o_ps = o.params.inj_overhead_ps;
	struct progress pg = {wall_now(), wall_now() + 2.0, o.quiet};
	double w0 = wall_now();
	uint64_t posted = 0, expect = 0;
	if (!strcmp(o.pattern, "stress")) {
		/* post number i of every core is ready at (i + 1) * o */
		const uint64_t per = (uint64_t)o.packets * (total - 1);
		expect = per * total;
		t.stress_total = total;
		for (uint64_t i = 0; i < per && rc == 0; i++) {
			uint32_t seq = (uint32_t)(i / (total - 1)), k = (uint32_t)(i % (total - 1)) + 1;
			torus_vt_t ready = (i + 1) * o_ps;
			for (uint32_t me = 0; me < total && rc == 0; me++) {
				uint32_t dst = (me + k) % total;
				struct timesim_xfer x = {TIMESIM_RAW, me / o.cores, me % o.cores, 0, dst / o.cores,
							 stress_len(&o, me, dst, seq), ready, 0, posted++};
				rc = timesim_post(ts, &x);
			}
			if (rc == 0 && i % 16 == 15) {
				rc = timesim_run(ts, ready + o_ps);
				progress(&pg, ts, posted, expect);
			}
		}
	} else {
		int hot = !strcmp(o.pattern, "hotspot");
		uint64_t pkts = o.bytes / torus_params_payload(&o.params) +
				(o.bytes % torus_params_payload(&o.params) || o.bytes == 0);
		expect = hot ? N - 1 : (uint64_t)N * (N - 1);
		for (uint32_t k = 1; k < N && rc == 0; k++) {
			for (uint32_t a = 0; a < N && rc == 0; a++) {
				if (hot && (a == 0 || k > 1))
					continue;
				struct timesim_xfer x = {TIMESIM_PUT, a, 0, (k - 1) % o.params.inj_fifos,
							 hot ? 0 : (a + k) % N, o.bytes, (hot ? 1 : k) * o_ps, 0, posted++};
				rc = timesim_post(ts, &x);
			}
			progress(&pg, ts, posted, expect);
		}
		expect *= pkts;
	}
	while (rc == 0 && timesim_next(ts) != TIMESIM_NEVER) {
		torus_vt_t next = timesim_next(ts);
		rc = timesim_run(ts, next + 1000000); /* a microsecond at a time, for the progress lines */
		progress(&pg, ts, posted, posted);
	}
	double wall = wall_now() - w0;
	if (rc) {
		fprintf(stderr, "torus-timesim: simulation failed: %s\n", strerror(-rc));
		timesim_destroy(ts);
		return 1;
	}
	struct timesim_stats st;
	timesim_stats(ts, &st);
	uint64_t maxw = 0;
	size_t maxl = 0;
	for (size_t i = 0; i < (size_t)N * 2 * TORUS_MAX_DIMS; i++)
		if (t.wire[i] > maxw) {
			maxw = t.wire[i];
			maxl = i;
		}
	double bound_us = (double)maxw * 1e6 / (double)o.params.link_bw;
	char shape[64], link[8];
	torus_shape_format(&o.shape, shape, sizeof(shape));
	printf("torus-timesim: %s, %u cores, pattern %s: %llu packets deposited (%s)\n", shape, total, o.pattern,
	       (unsigned long long)t.deposits, o.pattern[0] == 's' ? "raw" : "DMA puts");
	printf("  emulated time      %.3f us (the last deposit, at %llu ps)\n", t.last / 1e6, (unsigned long long)t.last);
	if (t.stress_total)
		printf("  core 0             %.3f us (its last arrival, the figure torus-stress prints)\n", t.last0 / 1e6);
	if (maxw)
		printf("  link-load bound    %.3f us (node %zu %s: %llu wire bytes); ratio %.3f\n", bound_us,
		       maxl / (2 * TORUS_MAX_DIMS), torus_link_name((uint32_t)(maxl % (2 * TORUS_MAX_DIMS)), link),
		       (unsigned long long)maxw, bound_us > 0 ? t.last / 1e6 / bound_us : 0.0);
	printf("  simulator          %llu hops, %llu events (%llu stale heap entries, at most %llu at once, %llu past "
	       "the timing wheel) in %.3f s wall (%.2f M hops/s)\n",
	       (unsigned long long)st.hops, (unsigned long long)st.events, (unsigned long long)st.stale,
	       (unsigned long long)st.heap_max, (unsigned long long)st.beyond, wall,
	       wall > 0 ? st.hops / wall / 1e6 : 0.0);
	timesim_destroy(ts);
	free(t.wire);
	free(cores);
	if (t.deposits != expect) {
		fprintf(stderr, "torus-timesim: %llu packets deposited, %llu sent\n", (unsigned long long)t.deposits,
			(unsigned long long)expect);
		return 1;
	}
	return 0;
}
