/* The tests' random numbers: xorshift64, seeded by setting rng_state, so
 * every run of a test draws the same scenarios. */
#ifndef TEST_RNG_H
#define TEST_RNG_H

#include <stdint.h>

static uint64_t rng_state;
static inline uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

#endif
