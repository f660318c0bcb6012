/*
 * place_spare.c - the plan's warm-spare choice, applied by the control
 * plane (place.h place_spare_choose; issue 33).
 *
 * A job without `spotrun.spares` keeps what `spotrun plan` would choose:
 * the same planner (market/plan.h plan_make, whose plan_spare_price
 * prices one spare of the first placement), run over the offerings this
 * daemon's clouds sell now instead of the bundled catalog.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cloud/market.h"
#include "ctl/place.h"
#include "market/plan.h"

/* A provider's offering as a catalog row: what the planner reads. */
static void row_of(const struct cloud_offering *v, struct catalog_offering *o)
{
	memset(o, 0, sizeof *o);
	snprintf(o->cloud, sizeof o->cloud, "%s", v->cloud);
	snprintf(o->region, sizeof o->region, "%s", v->region);
	snprintf(o->zone, sizeof o->zone, "%s", v->zone);
	snprintf(o->instance_type, sizeof o->instance_type, "%s",
		 v->instance_type);
	snprintf(o->accelerator, sizeof o->accelerator, "%s", v->accelerator);
	o->accel_count = v->accel_count;
	o->ondemand_per_h = v->ondemand_per_h;
	o->spot_per_h = v->spot_per_h;
	o->reserved_per_h = v->reserved_per_h;
	o->hazard_per_h = v->spot_per_h >= 0 ? v->hazard_per_h : 0;
	o->hazard_src = v->spot_per_h < 0 ? CATALOG_HAZARD_NONE :
			CATALOG_HAZARD_TABLE;
	snprintf(o->hazard_from, sizeof o->hazard_from, "the provider's market");
	o->committed = v->committed;
	o->queue_wait_s = v->committed ? v->queue_wait_s : 0;
	snprintf(o->queue_basis, sizeof o->queue_basis, "%s", v->queue_basis);
	snprintf(o->source, sizeof o->source, "pool %d", v->pool);
}

int place_spare_choose(const struct jobspec *js, const struct cloud_offering *v,
		       size_t n, double deadline_s, int64_t now_ns,
		       struct plan_spare *out, struct sr_err *e)
{
	struct jobspec view = *js; /* shallow: the deadline in cloud time */
	struct catalog cat;
	struct plan_result r = { 0 };
	int rc = 0;

	memset(out, 0, sizeof *out);
	catalog_init(&cat);
	for (size_t i = 0; i < n && !rc; i++) {
		struct catalog_offering o;

		row_of(&v[i], &o);
		rc = catalog_add(&cat, &o);
	}
	if (rc) {
		catalog_free(&cat);
		return sr_err_set(e, rc, "spotrun.spares: out of memory");
	}
	/* the planner reads a deadline from the submit; the control plane's
	 * is cloud time (place_plan.deadline_s) */
	if (isfinite(deadline_s)) {
		view.deadline_kind = JOBSPEC_DEADLINE_RELATIVE;
		view.deadline_ns = (int64_t)(deadline_s * 1e9);
	}
	rc = plan_make(&cat, &view, now_ns, &r, e);
	if (!rc)
		*out = r.spare;
	plan_result_free(&r);
	catalog_free(&cat);
	return rc;
}
