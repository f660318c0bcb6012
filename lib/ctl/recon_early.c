/*
 * recon_early.c - early replacements: a gang node's replacement launched
 * before its notice (issue 33, arm 3; docs/distributed.md "Early
 * signals", docs/design/distributed.md).
 *
 * An early replacement is a warm spare (recon_spare.c) launched because
 * one node of the gang is at risk now: it boots and runs the job's setup
 * as a spare does, and at the notice recon__spares_adopt gives it the
 * rank.  The signal is a rebalance recommendation (AWS; nodes.rebalance_ns,
 * from the agent's report): the cloud says the node's capacity is at
 * elevated risk.  It is priced as a loss to come: a replacement pays as
 * long as the overlap it bills costs less than the downtime it saves,
 *
 *   horizon = saved_h x delay $/h / replacement's spot $/h,
 *
 * so one is kept while the recommendation is younger than the horizon
 * (cloud time) and no notice came; after that it is released, unless
 * the plan keeps a spare anyway (then it is that spare).
 *
 * The market model's hazard (a pool's preemptions per node-hour) prices
 * the standing spare the plan chooses (place_spare.c, market/spare.h):
 * with only the catalog's rate, which does not move while a job runs, a
 * hazard-launched replacement would be that spare again, so none is
 * launched on the hazard alone.
 *
 * saved_h is what a set-up spare saves per recovery (the job's
 * provisioning + image_pull, as the plan prices a spare: market/spare.h);
 * the delay $/h is spotrun.delay_cost_per_hour, else the gang's own $/h.
 *
 * Bounded (one per node at risk, within the horizon) and idempotent: the
 * count is derived from the store at every pass, so a pass run twice, or
 * after a restart, launches nothing more; the pass is the leader's,
 * fenced by its lease (reconcile.c).
 */
#include <string.h>

#include "ctl/recon_int.h"

void recon__early_price(struct ctl *c, const struct rjob *j,
			const struct rnode *gang, size_t n, sr_micros spare_per_h,
			int64_t now, struct recon_early *out)
{
	sr_micros gang_h = 0;

	memset(out, 0, sizeof *out);
	for (size_t i = 0; i < n; i++)
		gang_h += gang[i].price > 0 ? gang[i].price : 0;
	out->delay_per_h = j->plan.delay_per_h >= 0 ? j->plan.delay_per_h : gang_h;
	out->saved_s = j->plan.spare_saved_s;
	if (spare_per_h <= 0 || out->delay_per_h <= 0 || out->saved_s <= 0)
		return;
	out->horizon_s = out->saved_s * (double)out->delay_per_h /
			 (double)spare_per_h;
	for (size_t i = 0; i < n; i++) {
		const struct rnode *x = &gang[i];
		double age;

		if (!x->spot || !x->rebalance_ns || x->notice_ns || x->retire ||
		    x->rank < 0 || x->rank >= j->num_nodes)
			continue;
		age = (double)(now - x->rebalance_ns) / 1e9 * c->cfg.time_scale;
		if (age >= out->horizon_s)
			continue;
		out->want++;
		if (!out->node) {
			out->node = x->id;
			out->age_s = age < 0 ? 0 : age;
		}
	}
	if (out->want > j->num_nodes)
		out->want = j->num_nodes;
}

int recon__early_avoid(const struct rnode *gang, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (gang[i].rebalance_ns && !gang[i].notice_ns && gang[i].spot)
			return gang[i].pool;
	}
	return -1;
}
