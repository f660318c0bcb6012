/*
 * cost_rng.h - internal: the cost model's deterministic random stream
 * (splitmix64) for its Monte Carlo runs (cost_mc.c, cost_outage.c), so a
 * seed gives the same figures on any machine.
 */
#ifndef SR_MARKET_COST_RNG_H
#define SR_MARKET_COST_RNG_H

#include <stdint.h>

static inline uint64_t cost__splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* Uniform in (0, 1]. */
static inline double cost__unif(uint64_t *s)
{
	return ((double)(cost__splitmix64(s) >> 11) + 1.0) *
	       (1.0 / 9007199254740992.0);
}

#endif
