/*
 * spare.c - the plan's price of a warm spare node (spare.h).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "market/plan.h"
#include "market/spare.h"

/* The cheapest spot offering in p's cloud and region that meets js. */
static const struct catalog_offering *
spare_pool(const struct catalog *cat, const struct jobspec *js,
	   const struct plan_placement *p)
{
	const struct catalog_offering *best = NULL;

	for (size_t i = 0; i < cat->n; i++) {
		const struct catalog_offering *o = &cat->items[i];

		if (o->spot_per_h < 0 || strcmp(o->cloud, p->o.cloud) ||
		    strcmp(o->region, p->o.region) || !jobspec_offer_ok(js, o))
			continue;
		if (!best || o->spot_per_h < best->spot_per_h)
			best = o;
	}
	return best;
}

void plan_spare_price(const struct catalog *cat, const struct jobspec *js,
		      const struct plan_placement *p, double deadline_h,
		      struct plan_spare *out)
{
	const struct catalog_offering *o;
	double saved_h;

	memset(out, 0, sizeof *out);
	out->fixed = js->spares >= 0;
	out->keep = out->fixed ? js->spares : 0;
	out->slack_h = INFINITY;
	if (!p || !p->feasible) {
		snprintf(out->why, sizeof out->why, "no feasible placement");
		return;
	}
	if (p->mode != PLAN_SPOT && p->mode != PLAN_SPOT_FALLBACK) {
		snprintf(out->why, sizeof out->why, "the placement is %s: no "
			 "preemption to recover from", plan_mode_name(p->mode));
		return;
	}
	o = spare_pool(cat, js, p);
	if (!o) {
		snprintf(out->why, sizeof out->why, "no spot pool in %s/%s "
			 "meets the job", p->o.cloud, p->o.region);
		return;
	}
	out->priced = 1;
	out->o = *o;
	out->price_per_h = o->spot_per_h;
	out->kept_h = p->est.makespan_h;
	saved_h = (double)(js->provision_ns + js->image_pull_ns) / 3600e9;
	out->saved_s = saved_h * 3600;
	out->recoveries = p->est.n_preempt;
	out->delay_per_h = js->delay_cost_per_h >= 0 ? js->delay_cost_per_h :
			   p->price_per_h;
	out->cost = sr_money_hours(out->kept_h, out->price_per_h);
	out->value = sr_money_hours(out->recoveries * saved_h, out->delay_per_h);
	if (isfinite(deadline_h))
		out->slack_h = deadline_h - out->kept_h;
	if (out->fixed)
		snprintf(out->why, sizeof out->why, "spotrun.spares");
	else if (out->value > out->cost) {
		out->keep = 1;
		snprintf(out->why, sizeof out->why, "it pays: the delay it saves "
			 "is worth more than its bill");
	} else if (out->slack_h < out->recoveries * saved_h) {
		out->keep = 1;
		snprintf(out->why, sizeof out->why, "the deadline needs it: "
			 "%.2fh of slack, less than the %.2fh of downtime it "
			 "saves", out->slack_h, out->recoveries * saved_h);
	} else {
		snprintf(out->why, sizeof out->why, "it does not pay: its bill "
			 "is more than the delay it saves is worth");
	}
}
