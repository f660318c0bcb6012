/*
 * fold_prior.h - spotrun's prior fitted without a market's own traces,
 * for the bound benches (bench_policy_bound*.c): their markets are drawn
 * from the bundled traces, on which the shipped prior (policy_prior.h)
 * was fitted, so by default spotrun runs there with the prior of every
 * bundled trace outside the market's recording campaign (its folder of
 * data/traces, as scripts/sim-policy-table --folds): leave-one-set-out.
 */
#ifndef SR_BENCH_FOLD_PRIOR_H
#define SR_BENCH_FOLD_PRIOR_H

#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/policy_prior.h"

/* The campaign folder of a bundled trace: its folder, or for SkyNomad's
 * per-zone folders (skynomad/SET/ZONE/full.json) the one above. */
static inline size_t fold_prefix(const char *path)
{
	const char *slash = strrchr(path, '/');
	size_t n = slash ? (size_t)(slash - path) : 0;

	if (strstr(path, "/skynomad/")) {
		while (n && path[n - 1] != '/')
			n--;
		n = n ? n - 1 : 0;
	}
	return n;
}

/* *out = the prior of every bundled trace not in `file`'s campaign (each
 * trace's spells and the pair changes of each market's zones,
 * policy_prior_fit()).  Returns 0, or -1 (a trace did not load, message
 * printed). */
static inline int fold_prior(const char *file, struct policy_prior *out)
{
	size_t n = fold_prefix(file);
	const char **keep = NULL;
	struct sr_err e = { 0 };
	glob_t g;
	int rc = -1, k = 0;

	memset(out, 0, sizeof *out);
	if (glob("data/traces/cbl/*/*/*/*.json", 0, NULL, &g) ||
	    glob("data/traces/skynomad/*/*/full.json", GLOB_APPEND, NULL, &g))
		return -1;
	keep = calloc(g.gl_pathc + 1, sizeof *keep);
	if (!keep)
		goto out;
	for (size_t i = 0; i < g.gl_pathc; i++) {
		const char *f = g.gl_pathv[i];

		if (!(fold_prefix(f) == n && !strncmp(f, file, n)))
			keep[k++] = f;
	}
	if (policy_prior_fit(out, keep, k, &e))
		fprintf(stderr, "fold prior: %s\n", e.msg);
	else
		rc = 0;
out:
	free(keep);
	globfree(&g);
	return rc;
}

#endif
