/*
 * Torus shape, coordinates, neighbours, minimal distances and the
 * dimension-order route table. Rank order: dimension 0 varies fastest.
 */
#include "torus/machine.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int torus_shape_init(struct torus_shape *out, uint32_t ndims, const uint32_t *dims, char *err,
		     size_t errlen)
{
	uint64_t n = 1;

	if (!out || !dims) {
		snprintf(err, errlen, "internal: NULL shape argument");
		return -EINVAL;
	}
	if (ndims < 1 || ndims > TORUS_MAX_DIMS) {
		snprintf(err, errlen, "a torus has 1 to %d dimensions, not %u", TORUS_MAX_DIMS, ndims);
		return -EINVAL;
	}
	memset(out, 0, sizeof(*out));
	out->ndims = ndims;
	for (uint32_t d = 0; d < ndims; d++) {
		if (dims[d] < 1 || dims[d] > TORUS_MAX_DIM_SIZE) {
			snprintf(err, errlen, "dimension %u has size %u; sizes must be 1..%u", d, dims[d],
				 TORUS_MAX_DIM_SIZE);
			return -EINVAL;
		}
		out->dims[d] = dims[d];
		out->stride[d] = (uint32_t)n;
		n *= dims[d];
		if (n > TORUS_MAX_NODES) {
			snprintf(err, errlen, "torus has more than %u nodes", TORUS_MAX_NODES);
			return -EINVAL;
		}
	}
	out->nnodes = (uint32_t)n;
	return 0;
}

int torus_size_parse(const char *text, uint64_t max, uint64_t *out)
{
	static const struct {
		const char *suffix;
		unsigned shift;
	} units[] = {{"", 0},  {"B", 0},  {"K", 10}, {"KiB", 10}, {"M", 20},  {"MiB", 20},
		     {"G", 30}, {"GiB", 30}, {"T", 40}, {"TiB", 40}};
	if (!text || !out)
		return -EINVAL;
	uint64_t v = 0;
	size_t n = 0;
	int over = 0;
	for (; text[n] >= '0' && text[n] <= '9'; n++) {
		if (v > (UINT64_MAX - 9) / 10)
			over = 1; /* saturates instead of wrapping */
		else
			v = v * 10 + (uint64_t)(text[n] - '0');
	}
	if (n == 0)
		return -EINVAL;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(text + n, units[i].suffix))
			continue;
		if (over || v > (max >> units[i].shift)) /* before shifting: it could wrap */
			return -ERANGE;
		*out = v << units[i].shift;
		return 0;
	}
	return -EINVAL;
}

int torus_shape_parse(const char *text, struct torus_shape *out, char *err, size_t errlen)
{
	uint32_t dims[TORUS_MAX_DIMS + 1];
	uint32_t nd = 0;
	const char *p = text;

	if (!text || !*text) {
		snprintf(err, errlen, "empty torus shape (expected e.g. 4x4x4)");
		return -EINVAL;
	}
	for (;;) {
		char *end;
		if (*p < '0' || *p > '9') {
			snprintf(err, errlen, "bad torus shape '%s': expected sizes like 4x4x4", text);
			return -EINVAL;
		}
		errno = 0;
		unsigned long v = strtoul(p, &end, 10);
		if (errno || v == 0 || v > TORUS_MAX_DIM_SIZE) {
			snprintf(err, errlen, "bad torus shape '%s': each size must be 1..%u", text,
				 TORUS_MAX_DIM_SIZE);
			return -EINVAL;
		}
		if (nd == TORUS_MAX_DIMS) {
			snprintf(err, errlen, "bad torus shape '%s': more than %d dimensions", text,
				 TORUS_MAX_DIMS);
			return -EINVAL;
		}
		dims[nd++] = (uint32_t)v;
		p = end;
		if (*p == '\0')
			break;
		if (*p != 'x' && *p != 'X') {
			snprintf(err, errlen, "bad torus shape '%s': unexpected '%c'", text, *p);
			return -EINVAL;
		}
		p++;
	}
	return torus_shape_init(out, nd, dims, err, errlen);
}

char *torus_shape_format(const struct torus_shape *s, char *buf, size_t len)
{
	size_t used = 0;
	buf[0] = '\0';
	for (uint32_t d = 0; d < s->ndims && used < len; d++)
		used += (size_t)snprintf(buf + used, len - used, d ? "x%u" : "%u", s->dims[d]);
	return buf;
}

void torus_rank_to_coords(const struct torus_shape *s, uint32_t rank, uint32_t *coords)
{
	for (uint32_t d = 0; d < s->ndims; d++) {
		coords[d] = rank % s->dims[d];
		rank /= s->dims[d];
	}
}

uint32_t torus_coords_to_rank(const struct torus_shape *s, const uint32_t *coords)
{
	uint32_t r = 0;
	for (uint32_t d = 0; d < s->ndims; d++)
		r += (coords[d] % s->dims[d]) * s->stride[d];
	return r;
}

uint32_t torus_neighbor(const struct torus_shape *s, uint32_t rank, uint32_t dim, enum torus_dir dir)
{
	uint32_t n = s->dims[dim];
	uint32_t c = (rank / s->stride[dim]) % n;
	uint32_t nc = dir == TORUS_PLUS ? (c + 1) % n : (c + n - 1) % n;
	return rank - c * s->stride[dim] + nc * s->stride[dim];
}

int32_t torus_ring_delta(uint32_t n, uint32_t a, uint32_t b)
{
	uint32_t fwd = (b + n - a) % n; /* hops going PLUS */
	if (fwd == 0)
		return 0;
	if (2 * fwd < n)
		return (int32_t)fwd;
	if (2 * fwd > n)
		return -(int32_t)(n - fwd);
	return (a % 2 == 0) ? (int32_t)fwd : -(int32_t)fwd; /* tie */
}

uint32_t torus_hops(const struct torus_shape *s, uint32_t a, uint32_t b)
{
	uint32_t ca[TORUS_MAX_DIMS], cb[TORUS_MAX_DIMS], h = 0;
	torus_rank_to_coords(s, a, ca);
	torus_rank_to_coords(s, b, cb);
	for (uint32_t d = 0; d < s->ndims; d++) {
		int32_t delta = torus_ring_delta(s->dims[d], ca[d], cb[d]);
		h += (uint32_t)(delta < 0 ? -delta : delta);
	}
	return h;
}

void torus_route_table(const struct torus_shape *s, uint32_t here, uint8_t *table)
{
	uint32_t ch[TORUS_MAX_DIMS], cd[TORUS_MAX_DIMS];
	torus_rank_to_coords(s, here, ch);
	for (uint32_t d = 0; d < s->ndims; d++)
		cd[d] = 0;
	for (uint32_t dest = 0; dest < s->nnodes; dest++) {
		uint8_t e = TORUS_ROUTE_LOCAL;
		for (uint32_t d = 0; d < s->ndims; d++) {
			int32_t delta = torus_ring_delta(s->dims[d], ch[d], cd[d]);
			if (delta) {
				e = (uint8_t)(2 * d + (delta > 0 ? TORUS_PLUS : TORUS_MINUS));
				break;
			}
		}
		table[dest] = e;
		/* advance cd like an odometer, dimension 0 fastest */
		for (uint32_t d = 0; d < s->ndims; d++) {
			if (++cd[d] < s->dims[d])
				break;
			cd[d] = 0;
		}
	}
}
