/*
 * Machine parameters: one typed table that the parser, the --help text, the
 * JSON report and the checks all read.
 */
#include "torus/machine.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum param_unit { UNIT_BW, UNIT_TIME, UNIT_BYTES, UNIT_COUNT };

struct param_desc {
	const char *name;
	enum param_unit unit;
	size_t offset;
	int is64;
	uint64_t def, min, max;
	const char *help;
};

#define P32(f) offsetof(struct torus_params, f), 0
#define P64(f) offsetof(struct torus_params, f), 1

static const struct param_desc params[] = {
	{"link_bw", UNIT_BW, P64(link_bw), 425000000ull, 1000ull, 1000000000000ull,
	 "bandwidth of one link direction (bytes: B/s, kB/s, KB/s, MB/s, GB/s, KiB/s, MiB/s, GiB/s; "
	 "bits: b/s, kb/s, Kb/s, Mb/s, Gb/s)"},
	{"hop_latency", UNIT_TIME, P64(hop_latency_ps), 50000ull, 0, 1000000000000ull,
	 "latency added per hop after serialisation (ps, ns, us, ms, s)"},
	{"ack_overhead", UNIT_BYTES, P32(ack_overhead), 14, 0, 4096, "wire bytes per packet for acknowledgments"},
	{"header", UNIT_BYTES, P32(header_bytes), 16, 16, 16, "packet header bytes (8 hardware + 8 software)"},
	{"chunk", UNIT_BYTES, P32(chunk_bytes), 32, 1, 256, "packet size granularity in bytes"},
	{"max_packet", UNIT_BYTES, P32(max_packet), 256, 32, 256, "largest packet in bytes (multiple of chunk)"},
	{"fifo_slots", UNIT_COUNT, P32(fifo_slots), 64, 1, 65536,
	 "packet slots per virtual channel per link direction (power of two; 1 is the smallest flow control allows)"},
	{"inj_slots", UNIT_COUNT, P32(inj_slots), 64, 1, 65536, "slots of each core's injection FIFO (power of two)"},
	{"rx_slots", UNIT_COUNT, P32(rx_slots), 128, 1, 65536, "slots of each core's reception FIFO (power of two)"},
	{"inj_fifos", UNIT_COUNT, P32(inj_fifos), 8, 1, 32, "DMA injection FIFOs per core"},
	{"dma_counters", UNIT_COUNT, P32(dma_counters), 64, 1, 4096, "DMA byte counters per core"},
	{"dma_regions", UNIT_COUNT, P32(dma_regions), 32, 1, 4096, "registered memory regions per core"},
	{"inj_overhead", UNIT_TIME, P64(inj_overhead_ps), 100000ull, 1, 1000000000000ull,
	 "core time to post one DMA descriptor, at least 1ps: every post takes time (ps, ns, us, ms, s)"},
	{"copy_bw", UNIT_BW, P64(copy_bw), 4000000000ull, 1000ull, 1000000000000ull,
	 "bandwidth of a local DMA copy inside a node (units as link_bw)"},
	{"barrier_latency", UNIT_TIME, P64(barrier_latency_ps), 1000000ull, 0, 1000000000000ull,
	 "latency of the global barrier network (ps, ns, us, ms, s)"},
	{"reduce_bw", UNIT_BW, P64(reduce_bw), 2000000000ull, 1000ull, 1000000000000ull,
	 "bytes per second one core combines in a reduction (the gamma of the cost models; units as link_bw)"},
	{"poll_cost", UNIT_TIME, P64(poll_cost_ps), 10000ull, 1, 1000000000000ull,
	 "core time one poll that finds nothing costs (ps, ns, us, ms, s)"},
	{"exact_nice", UNIT_COUNT, P32(exact_nice), 0, 0, 19,
	 "with at most 512 threads, how many steps nicer than torusrun (whose timekeeper "
	 "is the job's serial part) the nodes run (a host-speed knob that changes no result; 0: as torusrun)"},
	{"exact_lead", UNIT_TIME, P64(exact_lead_ps), 0ull, 0, 1000000000000ull,
	 "how far a core's clock may run ahead of the timekeeper's simulation before "
	 "its next post waits for it (a host-speed knob that changes no result; 0: no bound)"},
};
#define NPARAMS (sizeof(params) / sizeof(params[0]))

static void put(struct torus_params *p, const struct param_desc *d, uint64_t v)
{
	if (d->is64)
		*(uint64_t *)((char *)p + d->offset) = v;
	else
		*(uint32_t *)((char *)p + d->offset) = (uint32_t)v;
}

static uint64_t get(const struct torus_params *p, const struct param_desc *d)
{
	if (d->is64)
		return *(const uint64_t *)((const char *)p + d->offset);
	return *(const uint32_t *)((const char *)p + d->offset);
}

void torus_params_default(struct torus_params *p)
{
	memset(p, 0, sizeof(*p));
	for (size_t i = 0; i < NPARAMS; i++)
		put(p, &params[i], params[i].def);
}

/*
 * Units are matched exactly, case included: case changes the meaning (B bytes,
 * b bits; ms milli, Ms would be mega), so no spelling is guessed. Each table
 * lists every spelling accepted; the --help text and the README list them too.
 */
struct unit_suffix {
	const char *suffix;
	double mult;
};

static const struct unit_suffix bw_units[] = {
	{"B/s", 1},	     {"kB/s", 1e3},	      {"KB/s", 1e3},	      {"MB/s", 1e6},	{"GB/s", 1e9},
	{"KiB/s", 1024.0},   {"MiB/s", 1048576.0},    {"GiB/s", 1073741824.0}, {"b/s", 0.125}, {"kb/s", 125},
	{"Kb/s", 125},	     {"Mb/s", 125000},	      {"Gb/s", 125000000},     {NULL, 0}};
static const struct unit_suffix time_units[] = {
	{"ps", 1}, {"ns", 1e3}, {"us", 1e6}, {"ms", 1e9}, {"s", 1e12}, {NULL, 0}};
static const struct unit_suffix byte_units[] = {{"", 1}, {"B", 1}, {NULL, 0}};
static const struct unit_suffix count_units[] = {{"", 1}, {NULL, 0}};

static int is_digit(char c) { return c >= '0' && c <= '9'; }

/*
 * Length of the decimal number at the start of s, 0 if there is none: digits,
 * and where a fraction makes sense (frac) an optional .digits and
 * e[+-]digits. No sign, space, hex, inf or nan: strtod would take them all.
 */
static size_t decimal_len(const char *s, int frac)
{
	size_t i = 0, j;
	while (is_digit(s[i]))
		i++;
	if (i == 0 || !frac)
		return i;
	if (s[i] == '.') {
		for (j = i + 1; is_digit(s[j]); j++)
			;
		if (j == i + 1)
			return 0;
		i = j;
	}
	if (s[i] == 'e' || s[i] == 'E') {
		j = i + 1 + (s[i + 1] == '+' || s[i + 1] == '-');
		if (!is_digit(s[j]))
			return 0;
		while (is_digit(s[j]))
			j++;
		i = j;
	}
	return i;
}

static void unit_list(const struct unit_suffix *units, char *buf, size_t len)
{
	size_t used = 0;
	buf[0] = '\0';
	for (size_t i = 0; units[i].suffix && used < len; i++)
		if (units[i].suffix[0])
			used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? ", " : "", units[i].suffix);
}

static int parse_value(const struct param_desc *d, const char *text, uint64_t *out, char *err, size_t errlen)
{
	const struct unit_suffix *units = d->unit == UNIT_BW     ? bw_units
					  : d->unit == UNIT_TIME ? time_units
					  : d->unit == UNIT_BYTES ? byte_units
								  : count_units;
	int frac = d->unit == UNIT_BW || d->unit == UNIT_TIME;
	size_t n = decimal_len(text, frac);
	char list[128];

	if (n == 0) {
		snprintf(err, errlen, "parameter %s: '%s' is not a decimal number%s", d->name, text,
			 frac ? " (e.g. 50, 1.5, 2e3)" : " (digits only)");
		return -EINVAL;
	}
	const char *end = text + n;
	const struct unit_suffix *u = NULL;
	for (size_t i = 0; units[i].suffix; i++) {
		if (strcmp(end, units[i].suffix) == 0) {
			u = &units[i];
			break;
		}
	}
	if (frac && *end == '\0') {
		snprintf(err, errlen, "parameter %s: give a unit (e.g. %s)", d->name,
			 d->unit == UNIT_TIME ? "50ns" : "425MB/s");
		return -EINVAL;
	}
	if (!u && !frac) {
		snprintf(err, errlen, "parameter %s: '%s' is not a whole decimal number%s", d->name, text,
			 d->unit == UNIT_BYTES ? " of bytes (e.g. 32 or 32B)" : "");
		return -EINVAL;
	}
	if (!u) {
		unit_list(units, list, sizeof(list));
		snprintf(err, errlen, "parameter %s: unknown unit '%s' (units, case matters: %s)", d->name, end, list);
		return -EINVAL;
	}
	uint64_t iv;
	if (!frac) {
		/* whole numbers: exact, no floating point */
		errno = 0;
		unsigned long long v = strtoull(text, NULL, 10);
		if (errno == ERANGE)
			v = ULLONG_MAX;
		iv = v;
	} else {
		char *dend;
		errno = 0;
		double v = strtod(text, &dend);
		if (dend != end || !isfinite(v) || v < 0) {
			snprintf(err, errlen, "parameter %s: '%s' is not a decimal number", d->name, text);
			return -EINVAL;
		}
		/* compare before converting: a double beyond 2^64 has no integer */
		double scaled = v * u->mult;
		if (errno == ERANGE || scaled > (double)d->max + 0.5)
			iv = UINT64_MAX;
		else
			iv = (uint64_t)(scaled + 0.5);
	}
	if (iv < d->min || iv > d->max) {
		snprintf(err, errlen, "parameter %s: %s is out of range [%llu, %llu]%s", d->name, text,
			 (unsigned long long)d->min, (unsigned long long)d->max,
			 d->unit == UNIT_BW ? " B/s" : d->unit == UNIT_TIME ? " ps" : "");
		return -EINVAL;
	}
	*out = iv;
	return 0;
}

/* The FIFOs' slot counts: powers of two (ring indices wrap by a mask). */
static int pow2_only(const char *name)
{
	return !strcmp(name, "fifo_slots") || !strcmp(name, "inj_slots") || !strcmp(name, "rx_slots");
}

int torus_params_set(struct torus_params *p, const char *assignment, char *err, size_t errlen)
{
	if (!p || !assignment) {
		snprintf(err, errlen, "internal: NULL parameter argument");
		return -EINVAL;
	}
	const char *eq = strchr(assignment, '=');
	if (!eq || eq == assignment) {
		snprintf(err, errlen, "malformed parameter '%s': expected name=value", assignment);
		return -EINVAL;
	}
	size_t nlen = (size_t)(eq - assignment);
	for (size_t i = 0; i < NPARAMS; i++) {
		if (strlen(params[i].name) == nlen && strncmp(params[i].name, assignment, nlen) == 0) {
			uint64_t v;
			int rc = parse_value(&params[i], eq + 1, &v, err, errlen);
			if (rc)
				return rc;
			if (pow2_only(params[i].name) && (v & (v - 1))) {
				snprintf(err, errlen, "parameter %s: %llu is not a power of two (1, 2, 4, ... %llu)",
					 params[i].name, (unsigned long long)v, (unsigned long long)params[i].max);
				return -EINVAL;
			}
			put(p, &params[i], v);
			return 0;
		}
	}
	snprintf(err, errlen, "unknown parameter '%.*s' (see torusrun --help)", (int)nlen, assignment);
	return -EINVAL;
}

static int is_pow2(uint32_t v) { return v && !(v & (v - 1)); }

int torus_params_check(const struct torus_params *p, char *err, size_t errlen)
{
	if (!p) {
		snprintf(err, errlen, "internal: NULL parameters");
		return -EINVAL;
	}
	if (p->chunk_bytes == 0 || p->max_packet % p->chunk_bytes) {
		snprintf(err, errlen, "max_packet (%u) must be a multiple of a non-zero chunk (%u)", p->max_packet,
			 p->chunk_bytes);
		return -EINVAL;
	}
	if (p->max_packet <= p->header_bytes || p->max_packet > TORUS_SLOT_BYTES) {
		snprintf(err, errlen, "max_packet must be in (%u, %u]", p->header_bytes, TORUS_SLOT_BYTES);
		return -EINVAL;
	}
	if (!is_pow2(p->fifo_slots) || !is_pow2(p->inj_slots) || !is_pow2(p->rx_slots)) {
		snprintf(err, errlen, "fifo_slots (%u), inj_slots (%u) and rx_slots (%u) must be powers of two",
			 p->fifo_slots, p->inj_slots, p->rx_slots);
		return -EINVAL;
	}
	if (p->link_bw == 0) {
		snprintf(err, errlen, "link_bw must be positive");
		return -EINVAL;
	}
	return 0;
}

static const char *unit_name(enum param_unit u)
{
	return u == UNIT_BW ? "B/s" : u == UNIT_TIME ? "ps" : u == UNIT_BYTES ? "bytes" : "";
}

void torus_params_help(FILE *out)
{
	for (size_t i = 0; i < NPARAMS; i++)
		fprintf(out, "  %-13s default %llu %-6s %s\n", params[i].name,
			(unsigned long long)params[i].def, unit_name(params[i].unit), params[i].help);
}

void torus_params_json(const struct torus_params *p, FILE *out, const char *indent)
{
	for (size_t i = 0; i < NPARAMS; i++)
		fprintf(out, "%s\"%s%s\": %llu%s\n", indent, params[i].name,
			params[i].unit == UNIT_BW ? "_Bps" : params[i].unit == UNIT_TIME ? "_ps" : "",
			(unsigned long long)get(p, &params[i]), i + 1 < NPARAMS ? "," : "");
}

/* ------------------------------------------------------- per-link settings */

const char *torus_link_name(uint32_t link, char buf[8])
{
	uint32_t dim = link >> 1;
	buf[0] = link & 1 ? '-' : '+';
	buf[1] = dim < 3 ? (char)('x' + dim) : (char)('0' + dim % 10); /* at most 6 dimensions */
	buf[2] = '\0';
	return buf;
}

void torus_link_params(const struct torus_params *p, const struct torus_link_set *ls, struct torus_params *out)
{
	*out = *p;
	if (!ls)
		return;
	if (ls->link_bw)
		out->link_bw = ls->link_bw;
	if (ls->hop_latency_ps != UINT64_MAX)
		out->hop_latency_ps = ls->hop_latency_ps;
}

/* The node part: a rank, or coordinates joined by dots. */
static int link_node(const struct torus_shape *s, const char *t, size_t len, uint32_t *node, char *err, size_t errlen)
{
	uint32_t c[TORUS_MAX_DIMS], n = 0;
	uint64_t v = 0;
	int digits = 0;
	for (size_t i = 0; i <= len; i++) {
		if (i < len && t[i] >= '0' && t[i] <= '9') {
			v = v * 10 + (uint64_t)(t[i] - '0');
			digits++;
			if (v > UINT32_MAX)
				break;
			continue;
		}
		if ((i < len && t[i] != '.') || !digits || n == TORUS_MAX_DIMS) {
			snprintf(err, errlen, "bad node '%.*s': a rank or coordinates like 1.0.2", (int)(len < 40 ? len : 40), t);
			return -EINVAL;
		}
		c[n++] = (uint32_t)v;
		v = 0;
		digits = 0;
	}
	if (n == 1) {
		if (c[0] >= s->nnodes) {
			snprintf(err, errlen, "node %u out of range: the torus has %u nodes", c[0], s->nnodes);
			return -EINVAL;
		}
		*node = c[0];
		return 0;
	}
	if (n != s->ndims) {
		snprintf(err, errlen, "node '%.*s' has %u coordinates, the torus %u dimensions", (int)(len < 40 ? len : 40), t,
			 n, s->ndims);
		return -EINVAL;
	}
	for (uint32_t d = s->ndims; d-- > 0;) {
		if (c[d] >= s->dims[d]) {
			snprintf(err, errlen, "coordinate %u of dimension %u out of range (0..%u)", c[d], d, s->dims[d] - 1);
			return -EINVAL;
		}
	}
	*node = torus_coords_to_rank(s, c);
	return 0;
}

int torus_link_set_parse(const struct torus_shape *s, const char *text, struct torus_link_set *out, char *err,
			 size_t errlen)
{
	if (!s || !text || !out) {
		snprintf(err, errlen, "internal: NULL link argument");
		return -EINVAL;
	}
	/* a one-line message never echoes a control character */
	for (const char *q = text; *q; q++)
		if ((unsigned char)*q < 0x20 || *q == 0x7f) {
			snprintf(err, errlen, "bad link setting: a control character at byte %zu", (size_t)(q - text));
			return -EINVAL;
		}
	const char *c1 = strchr(text, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
	if (!c1 || !c2) {
		snprintf(err, errlen, "bad link '%.60s': expected NODE:DIR:NAME=VALUE[,NAME=VALUE] (e.g. 5:+x:link_bw=100MB/s)",
			 text);
		return -EINVAL;
	}
	struct torus_link_set ls = {.hop_latency_ps = UINT64_MAX};
	if (link_node(s, text, (size_t)(c1 - text), &ls.node, err, errlen))
		return -EINVAL;
	const char *d = c1 + 1;
	size_t dl = (size_t)(c2 - d);
	/* +x or x+ (torus-trace's order), +D or D+ for dimension D */
	uint32_t dim = UINT32_MAX;
	char sign = 0, axis = 0;
	if (dl == 2 && (d[0] == '+' || d[0] == '-'))
		sign = d[0], axis = d[1];
	else if (dl == 2 && (d[1] == '+' || d[1] == '-'))
		sign = d[1], axis = d[0];
	if (axis >= 'x' && axis <= 'z')
		dim = (uint32_t)(axis - 'x');
	else if (axis >= '0' && axis <= '9')
		dim = (uint32_t)(axis - '0');
	if (dim == UINT32_MAX || dim >= s->ndims) {
		snprintf(err, errlen, "bad link direction '%.*s': +x, -x, +y, -y, +z, -z (or x+, ...) or +D/-D, D a "
				      "dimension < %u", (int)(dl < 20 ? dl : 20), d, s->ndims);
		return -EINVAL;
	}
	if (!torus_dim_has_links(s, dim)) {
		snprintf(err, errlen, "dimension %u has size 1: no links to set", dim);
		return -EINVAL;
	}
	ls.link = 2 * dim + (sign == '-');
	/* name=value pairs, through the parameter parser (units, ranges) */
	const char *p = c2 + 1;
	if (!*p) {
		snprintf(err, errlen, "bad link '%.60s': no setting (link_bw=... or hop_latency=...)", text);
		return -EINVAL;
	}
	while (*p) {
		size_t len = strcspn(p, ",");
		char one[128];
		if (len == 0 || len >= sizeof(one)) {
			snprintf(err, errlen, "bad link setting '%.*s'", (int)(len < 60 ? len : 60), p);
			return -EINVAL;
		}
		memcpy(one, p, len);
		one[len] = '\0';
		struct torus_params tmp;
		torus_params_default(&tmp);
		int is_bw = !strncmp(one, "link_bw=", 8), is_lat = !strncmp(one, "hop_latency=", 12);
		if (!is_bw && !is_lat) {
			snprintf(err, errlen, "bad link setting '%s': a link takes link_bw and hop_latency", one);
			return -EINVAL;
		}
		if (torus_params_set(&tmp, one, err, errlen))
			return -EINVAL;
		if (is_bw)
			ls.link_bw = tmp.link_bw;
		else
			ls.hop_latency_ps = tmp.hop_latency_ps;
		p += len + (p[len] == ',');
	}
	*out = ls;
	return 0;
}
