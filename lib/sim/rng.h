/*
 * rng.h - internal: the simulator's deterministic random stream
 * (splitmix64), shared by window sampling and the trace generator so that
 * a (seed, parameters) pair always gives the same result on any machine.
 */
#ifndef SR_SIM_RNG_H
#define SR_SIM_RNG_H

#include <stdint.h>

static inline uint64_t sim__splitmix64(uint64_t *x)
{
	uint64_t z = (*x += UINT64_C(0x9E3779B97F4A7C15));

	z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
	return z ^ (z >> 31);
}

/* Uniform in (0, 1): never 0, never 1. */
static inline double sim__uniform(uint64_t *x)
{
	return ((double)(sim__splitmix64(x) >> 11) + 0.5) / 9007199254740992.0;
}

#endif
