/*
 * jobspec_diag.h - helpers of the job-file tests (test_market_sky.c,
 * test_market_mounts.c): parse a YAML string as "t.yaml", and look for
 * an error among the diagnostics.
 */
#ifndef SR_TEST_JOBSPEC_DIAG_H
#define SR_TEST_JOBSPEC_DIAG_H

#include <string.h>

#include "market/jobspec.h"

static inline int parse(const char *y, struct jobspec *js,
			struct jobspec_diag *d, struct sr_err *e)
{
	return jobspec_parse_buf_diag(y, strlen(y), "t.yaml", js, d, e);
}

static inline int has(const struct jobspec_diag *d, const char *needle)
{
	for (size_t i = 0; i < d->n_errors; i++) {
		if (strstr(d->errors[i], needle))
			return 1;
	}
	return 0;
}

#endif
