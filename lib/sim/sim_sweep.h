/*
 * sim_sweep.h - run many windows of one market with several policies and
 * summarise them (the engine behind `spotrun sim`).
 */
#ifndef SR_SIM_SWEEP_H
#define SR_SIM_SWEEP_H

#include <jansson.h>
#include <stdint.h>

#include "common/err.h"
#include "sim/sim.h"

#define SIM_SWEEP_MAX_POLICIES 8

struct sim_sweep_opts {
	struct sim_params p;
	double window_h;        /* >= deadline_h; 0 = deadline_h */
	size_t nwindows;        /* sampled windows (when nstarts == 0) */
	uint64_t seed;
	const size_t *starts;   /* explicit window starts (--start-tick) */
	size_t nstarts;
	const char *policies[SIM_SWEEP_MAX_POLICIES]; /* names; "optimal" too */
	int npolicies;
	const char *label;      /* "trace" field of each window row */
	/* Called after each window (all policies); may be NULL. */
	void (*progress)(void *arg, size_t done, size_t total);
	void *progress_arg;
};

/* Sample the window starts: n starts drawn uniformly (with replacement)
 * from [0, m->n - window ticks] by a splitmix64 stream seeded with seed.
 * Deterministic for (seed, n, market length).  Returns 0 or -EINVAL if
 * the market is shorter than one window. */
int sim_sweep_sample(const struct sim_market *m, const struct sim_sweep_opts *o,
		     size_t *starts, size_t n);

/* Run the sweep; *out gets the result document (new reference):
 *   {"params": {...}, "policies": {name: summary}, "windows": [...]}
 * (see docs/simulator.md).  Errors name the window or policy. */
int sim_sweep_run(const struct sim_market *m, const struct sim_sweep_opts *o,
		  json_t **out, struct sr_err *e);

#endif
