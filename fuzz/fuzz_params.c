/*
 * torus_params_set and torus_params_check (torus/params.c) on the input as
 * "name=value" lines (split at '\n' and NUL). Each result is checked against
 * an independent statement of the rules in the README ("### Parameters",
 * "Running a job"): the table below, not the parser's own.
 *
 * Invariants (abort() when one breaks):
 *  - a failed set returns -EINVAL with a message and changes nothing;
 *  - a successful set changes exactly the named field, to a value within
 *    [min, max] that the decimal text and its exact-case unit give;
 *  - a value the rules accept (decimal, known unit, in range; for the
 *    FIFOs' slot counts, a power of two) is accepted;
 *  - the value printed back in its base unit parses to the same struct;
 *  - torus_params_check passes only parameters the machine can use, and
 *    the JSON lines of torus_params_json parse back to the same struct.
 */
#include "torus/machine.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_params_json.h"

enum kind { BW, TIME, BYTES, COUNT };

static const struct spec {
	const char *name;
	size_t off;
	int is64;
	enum kind kind;
	uint64_t min, max;
} specs[] = {
	{"link_bw", offsetof(struct torus_params, link_bw), 1, BW, 1000, 1000000000000ull},
	{"hop_latency", offsetof(struct torus_params, hop_latency_ps), 1, TIME, 0, 1000000000000ull},
	{"ack_overhead", offsetof(struct torus_params, ack_overhead), 0, BYTES, 0, 4096},
	{"header", offsetof(struct torus_params, header_bytes), 0, BYTES, 16, 16},
	{"chunk", offsetof(struct torus_params, chunk_bytes), 0, BYTES, 1, 256},
	{"max_packet", offsetof(struct torus_params, max_packet), 0, BYTES, 32, 256},
	{"fifo_slots", offsetof(struct torus_params, fifo_slots), 0, COUNT, 1, 65536},
	{"inj_slots", offsetof(struct torus_params, inj_slots), 0, COUNT, 1, 65536},
	{"rx_slots", offsetof(struct torus_params, rx_slots), 0, COUNT, 1, 65536},
	{"inj_fifos", offsetof(struct torus_params, inj_fifos), 0, COUNT, 1, 32},
	{"dma_counters", offsetof(struct torus_params, dma_counters), 0, COUNT, 1, 4096},
	{"dma_regions", offsetof(struct torus_params, dma_regions), 0, COUNT, 1, 4096},
	{"inj_overhead", offsetof(struct torus_params, inj_overhead_ps), 1, TIME, 0, 1000000000000ull},
	{"copy_bw", offsetof(struct torus_params, copy_bw), 1, BW, 1000, 1000000000000ull},
	{"barrier_latency", offsetof(struct torus_params, barrier_latency_ps), 1, TIME, 0, 1000000000000ull},
	{"reduce_bw", offsetof(struct torus_params, reduce_bw), 1, BW, 1000, 1000000000000ull},
	{"poll_cost", offsetof(struct torus_params, poll_cost_ps), 1, TIME, 1, 1000000000000ull},
	{"exact_nice", offsetof(struct torus_params, exact_nice), 0, COUNT, 0, 19},
	{"exact_lead", offsetof(struct torus_params, exact_lead_ps), 1, TIME, 0, 1000000000000ull},
};
#define NSPECS (sizeof(specs) / sizeof(specs[0]))

static const struct unit {
	enum kind kind;
	const char *suffix;
	long double mult;
} units[] = {
	{BW, "B/s", 1},	       {BW, "kB/s", 1e3},	   {BW, "KB/s", 1e3},	  {BW, "MB/s", 1e6},
	{BW, "GB/s", 1e9},     {BW, "KiB/s", 1024},	   {BW, "MiB/s", 1048576}, {BW, "GiB/s", 1073741824},
	{BW, "b/s", 0.125L},   {BW, "kb/s", 125},	   {BW, "Kb/s", 125},	  {BW, "Mb/s", 125000},
	{BW, "Gb/s", 125000000}, {TIME, "ps", 1},	   {TIME, "ns", 1e3},	  {TIME, "us", 1e6},
	{TIME, "ms", 1e9},     {TIME, "s", 1e12},	   {BYTES, "", 1},	  {BYTES, "B", 1},
	{COUNT, "", 1},
};

static uint64_t field(const struct torus_params *p, const struct spec *s)
{
	const char *b = (const char *)p + s->off;
	if (s->is64) {
		uint64_t v;
		memcpy(&v, b, 8);
		return v;
	}
	uint32_t v;
	memcpy(&v, b, 4);
	return v;
}

static int isdig(char c) { return c >= '0' && c <= '9'; }

/*
 * The README's rules for one value: 1 accepted (*want set), 0 refused, -1 too
 * close to call (a rounding edge, or a number below what a double holds).
 */
static int oracle(const struct spec *s, const char *v, uint64_t *want)
{
	size_t i = 0;
	int frac = s->kind == BW || s->kind == TIME;
	while (isdig(v[i]))
		i++;
	if (i == 0)
		return 0;
	if (frac && v[i] == '.') {
		size_t j = i + 1;
		while (isdig(v[j]))
			j++;
		if (j == i + 1)
			return 0;
		i = j;
	}
	if (frac && (v[i] == 'e' || v[i] == 'E')) {
		size_t j = i + 1;
		if (v[j] == '+' || v[j] == '-')
			j++;
		if (!isdig(v[j]))
			return 0;
		while (isdig(v[j]))
			j++;
		i = j;
	}
	const struct unit *u = NULL;
	for (size_t k = 0; k < sizeof(units) / sizeof(units[0]); k++)
		if (units[k].kind == s->kind && !strcmp(v + i, units[k].suffix))
			u = &units[k];
	if (!u || (frac && !v[i]))
		return 0;
	if (!frac) {
		uint64_t x = 0;
		for (size_t k = 0; k < i; k++) {
			x = x * 10 + (uint64_t)(v[k] - '0');
			if (x > s->max)
				return 0;
		}
		if (x < s->min)
			return 0;
		*want = x;
		return 1;
	}
	errno = 0;
	long double x = strtold(v, NULL);
	if (errno == ERANGE || !isfinite(x))
		return x > 1 ? 0 : -1;
	if (x != 0 && x < 1e-300L)
		return -1; /* a double has no such number: refusing is as right as zero */
	long double scaled = x * u->mult;
	if (scaled > (long double)s->max + 1 || scaled < (long double)s->min - 1)
		return 0;
	/* the parser computes in double: keep clear of its rounding edges */
	long double slack = 1e-3L + scaled * 1e-14L;
	if (fabsl(scaled - (long double)s->max) <= 1 || fabsl(scaled - (long double)s->min) <= 1 ||
	    fabsl(scaled - floorl(scaled) - 0.5L) < slack)
		return -1;
	*want = (uint64_t)(scaled + 0.5L);
	return 1;
}

static const char *base_unit(enum kind k) { return k == BW ? "B/s" : k == TIME ? "ps" : ""; }

/* fifo_slots, inj_slots, rx_slots: powers of two */
static int slots(const struct spec *s) { return strstr(s->name, "_slots") != NULL; }

static void check_set(struct torus_params *p, const char *line)
{
	struct torus_params before = *p;
	char err[256];
	memset(err, 'x', sizeof(err));
	int rc = torus_params_set(p, line, err, sizeof(err));
	if (rc && !memchr(err, '\0', sizeof(err)))
		abort(); /* message not terminated */
	const char *eq = strchr(line, '=');
	const struct spec *s = NULL;
	for (size_t i = 0; eq && i < NSPECS; i++)
		if (strlen(specs[i].name) == (size_t)(eq - line) && !strncmp(line, specs[i].name, (size_t)(eq - line)))
			s = &specs[i];
	uint64_t want = 0;
	int verdict = s ? oracle(s, eq + 1, &want) : 0;
	if (verdict == 1 && slots(s) && (want & (want - 1)))
		verdict = 0; /* a slot count must be a power of two */
	if (rc) {
		if (rc != -EINVAL || !err[0] || memcmp(p, &before, sizeof(before)))
			abort(); /* a failure must say why and change nothing */
		if (verdict == 1)
			abort(); /* the rules accept this value */
		return;
	}
	if (!s || verdict == 0)
		abort(); /* accepted a name or value the rules refuse */
	uint64_t got = field(p, s);
	if (got < s->min || got > s->max || (verdict == 1 && got != want) || (slots(s) && (got & (got - 1))))
		abort();
	struct torus_params other = *p;
	memcpy((char *)&other + s->off, (char *)&before + s->off, s->is64 ? 8 : 4);
	if (memcmp(&other, &before, sizeof(before)))
		abort(); /* another field changed */
	/* printed back in the base unit, the value parses to the same struct */
	char again[64];
	snprintf(again, sizeof(again), "%s=%llu%s", s->name, (unsigned long long)got, base_unit(s->kind));
	other = before;
	if (torus_params_set(&other, again, err, sizeof(err)) || memcmp(&other, p, sizeof(other)))
		abort();
}

static int is_pow2(uint32_t v) { return v && !(v & (v - 1)); }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct torus_params p;
	char *buf = malloc(size + 1);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	torus_params_default(&p);
	size_t lines = 0;
	for (size_t start = 0; start <= size && lines < 64; lines++) {
		size_t end = start;
		while (end < size && buf[end] != '\n' && buf[end] != '\0')
			end++;
		buf[end] = '\0';
		check_set(&p, buf + start);
		start = end + 1;
	}
	char err[256] = "";
	int rc = torus_params_check(&p, err, sizeof(err));
	if (rc) {
		if (rc != -EINVAL || !err[0])
			abort();
	} else {
		if (!p.chunk_bytes || p.max_packet % p.chunk_bytes || p.max_packet <= p.header_bytes ||
		    p.max_packet > TORUS_SLOT_BYTES || !is_pow2(p.fifo_slots) || !is_pow2(p.inj_slots) ||
		    !is_pow2(p.rx_slots) || !p.link_bw)
			abort(); /* check passed parameters the machine cannot use */
	}
	if (fuzz_check_params_json(&p) != NSPECS)
		abort();
	free(buf);
	return 0;
}
