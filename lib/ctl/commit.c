/*
 * commit.c - committed pools as FinOps commitments (see commit.h).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl/commit.h"
#include "ctl/ctl_int.h"

static bool named(const struct finops_conf *fc, const struct cloud_offering *o)
{
	for (size_t i = 0; i < fc->ncommitments; i++) {
		const struct finops_commitment *m = &fc->commitments[i];

		if (!strcmp(m->provider, o->cloud) && !strcmp(m->region, o->region) &&
		    !strcmp(m->instance_type, o->instance_type))
			return true;
	}
	return false;
}

int ctl_commitments_add(struct ctl *c, struct finops_conf *fc, int64_t lo,
			int64_t hi, struct sr_err *e)
{
	struct cloud_offering *v = NULL;
	struct cloud_query any = { 0 };
	size_t n = 0;
	int rc;

	if (hi <= lo)
		return 0;
	rc = ctl__offerings(c, &any, &v, &n, e);
	if (rc)
		return sr_err_prefix(e, "committed pools");
	for (size_t i = 0; i < n && !rc; i++) {
		const struct cloud_offering *o = &v[i];
		struct finops_commitment m = { 0 };

		if (!o->committed || o->committed_count < 1 ||
		    o->reserved_per_h < 0 || named(fc, o))
			continue;
		snprintf(m.id, sizeof m.id, "%.15s-%.20s-%.20s", o->cloud,
			 o->region, o->instance_type);
		memcpy(m.contract_id, m.id, sizeof m.id);
		snprintf(m.provider, sizeof m.provider, "%s", o->cloud);
		snprintf(m.region, sizeof m.region, "%s", o->region);
		snprintf(m.instance_type, sizeof m.instance_type, "%s",
			 o->instance_type);
		snprintf(m.description, sizeof m.description, "%.15s pool "
			 "%.30s of %.30s: %d node(s), committed, amortised",
			 o->cloud, o->instance_type, o->region,
			 o->committed_count);
		m.gpus = (int)ceil(o->accel_count);
		m.count = o->committed_count;
		m.hourly_price = o->reserved_per_h;
		m.start_ns = lo;
		m.end_ns = hi;
		if (finops_conf_add_commitment(fc, &m))
			rc = sr_err_set(e, -ENOMEM, "committed pools: out of memory");
	}
	free(v);
	return rc;
}
