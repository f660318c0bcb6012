/*
 * polcache.c - the live policy state of each unfinished job.
 *
 * A policy's state is `ops->state_size` bytes that may point at memory
 * the policy allocated (spotrun's plan table), released by ops->destroy.
 * Such a state is only meaningful inside the process that built it, so
 * the reconciler keeps it here, keyed by job id, and releases it when the
 * job ends (ctl__pol_prune from each reconcile pass) or the daemon stops.
 * After a restart the state is rebuilt from the market's recorded past
 * (recon_place.c); states that own nothing are also kept in the jobs
 * table so a restart resumes them exactly.
 */
#include <errno.h>
#include <stdlib.h>

#include "ctl/ctl_int.h"
#include "ctl/recon.h"
#include "ctl/place.h"

struct ctl_pol *ctl__pol_get(struct ctl *c, int64_t job)
{
	for (size_t i = 0; i < c->npols; i++) {
		if (c->pols[i].job == job)
			return &c->pols[i];
	}
	return NULL;
}

int ctl__pol_put(struct ctl *c, int64_t job, void *state, size_t len)
{
	struct ctl_pol *p = ctl__pol_get(c, job);

	if (p) {
		if (p->state != state)
			place_state_free(c->cfg.policy, p->state, p->len);
		p->state = state;
		p->len = len;
		return 0;
	}
	if (c->npols == c->cappols) {
		size_t cap = c->cappols ? 2 * c->cappols : 16;
		struct ctl_pol *n = realloc(c->pols, cap * sizeof *n);

		if (!n)
			return -ENOMEM;
		c->pols = n;
		c->cappols = cap;
	}
	c->pols[c->npols++] = (struct ctl_pol){ job, state, len, -1 };
	return 0;
}

static bool has(const int64_t *ids, size_t n, int64_t id)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ids[mid] == id)
			return true;
		if (ids[mid] < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

void ctl__pol_prune(struct ctl *c, const int64_t *live, size_t n)
{
	size_t k = 0;

	for (size_t i = 0; i < c->npols; i++) {
		if (has(live, n, c->pols[i].job))
			c->pols[k++] = c->pols[i];
		else
			place_state_free(c->cfg.policy, c->pols[i].state,
					 c->pols[i].len);
	}
	c->npols = k;
}

void ctl__pol_clear(struct ctl *c)
{
	ctl__pol_prune(c, NULL, 0);
	free(c->pols);
	c->pols = NULL;
	c->npols = c->cappols = 0;
}
