/*
 * The fuzz targets of binary inputs (dma, tkevents): the input read as
 * big-endian fields, one field per statement (docs/testing.md, "Fuzzing": the decoding
 * order). Past its end the input reads as zeros.
 */
#ifndef FUZZ_READER_H
#define FUZZ_READER_H

#include <stddef.h>
#include <stdint.h>

struct reader {
	const uint8_t *p;
	size_t n;
};

static inline uint64_t rd(struct reader *r, unsigned bytes)
{
	uint64_t v = 0;
	for (unsigned i = 0; i < bytes; i++) {
		v = v << 8 | (r->n ? *r->p : 0);
		if (r->n) {
			r->p++;
			r->n--;
		}
	}
	return v;
}

#endif
