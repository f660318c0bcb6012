/*
 * plan.c - placements, governance and ranking (see plan.h).
 *
 * Per placement, with C the gang price (per-node price x num_nodes),
 * R = provisioning + image pull + checkpoint size / restore bandwidth,
 * delta the checkpoint stall and D the deadline in hours:
 *
 *   on-demand, reserved  no preemptions: T = T_train, cost = C * T_train
 *   spot                 cost model with the offering's hazard; tau = the
 *                        job's interval, else Daly's optimum for
 *                        M = 1/(n*lambda) (at least 5 minutes);
 *                        P(meet) = P(T <= D)
 *   spot + fallback      spot until D' = D - R, then on-demand:
 *                        cost = C_spot*(E[T] - E[(T-D')+])
 *                             + C_od*(E[(T-D')+] + R*P(T > D'))
 *                        P(meet) = 1 when on-demand alone finishes in
 *                        time (T_train + R <= D), else P(T <= D).
 *
 * The fallback cost is an approximation: it charges on-demand for the
 * whole spot overrun past D' (preemption losses included, which on-demand
 * would not have) and ignores the uncheckpointed progress the switch
 * loses; the simulator (lib/sim) models the switch tick by tick.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "plan.h"

const char *plan_mode_name(enum plan_mode m)
{
	switch (m) {
	case PLAN_SPOT: return "spot";
	case PLAN_SPOT_FALLBACK: return "spot+od";
	case PLAN_ONDEMAND: return "on-demand";
	case PLAN_RESERVED: return "reserved";
	}
	return "?";
}

const char *plan_risk(const struct plan_result *r, const struct plan_placement *p)
{
	double miss = 1 - p->p_meet;

	if (isinf(r->deadline_h))
		return "n/a";
	if (miss < 0.01)
		return "low";
	return miss < 0.05 ? "medium" : "high";
}

/* Runs of the outage model per placement (cost_outage.c), and their
 * seed: the same plan every time. */
#define PLAN_MC_RUNS 1000
#define PLAN_MC_SEED UINT64_C(0x5907f0aec0575eed)

static sr_micros gang(sr_micros per_node, int nodes)
{
	if (per_node < 0)
		return -1;
	if (per_node > INT64_MAX / nodes)
		return INT64_MAX;
	return per_node * nodes;
}

struct ctx {
	const struct jobspec *js;
	struct plan_result *r;
	size_t cap;
};

static int push(struct ctx *c, const struct plan_placement *p)
{
	if (c->r->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 32;
		struct plan_placement *v = realloc(c->r->items, cap * sizeof *v);

		if (!v)
			return -ENOMEM;
		c->r->items = v;
		c->cap = cap;
	}
	c->r->items[c->r->n++] = *p;
	return 0;
}

static double resume_h(const struct jobspec *js)
{
	return (double)(js->provision_ns + js->image_pull_ns) / 3600e9 +
	       cost_restore_h(js->ckpt_bytes, js->restore_bps);
}

int plan_cost_params(const struct jobspec *js, const struct catalog_offering *o,
		     enum plan_mode mode, struct cost_params *cp)
{
	sr_micros per_node;
	double hazard = 0;

	memset(cp, 0, sizeof *cp);
	switch (mode) {
	case PLAN_SPOT:
	case PLAN_SPOT_FALLBACK:
		per_node = o->spot_per_h;
		hazard = o->hazard_per_h;
		break;
	case PLAN_ONDEMAND:
		per_node = o->ondemand_per_h;
		break;
	case PLAN_RESERVED:
		per_node = o->reserved_per_h;
		break;
	default:
		return -EINVAL;
	}
	if (per_node < 0 || !(js->work_h > 0) || js->num_nodes < 1)
		return -EINVAL;
	cp->work_h = js->work_h;
	cp->nodes = js->num_nodes;
	cp->hazard_per_h = hazard;
	cp->price_per_h = gang(per_node, js->num_nodes);
	cp->ckpt_stall_h = jobspec_stall_h(js);
	cp->resume_h = resume_h(js);
	cp->ckpt_interval_h = (double)js->ckpt_interval_ns / 3600e9;
	if (hazard > 0 && js->ckpt_interval_ns == 0) {
		double tau = cost_daly_interval_h(cp->ckpt_stall_h,
						  1.0 / (hazard * js->num_nodes));

		cp->ckpt_interval_h = fmax(tau, PLAN_MIN_CKPT_INTERVAL_H);
	}
	return cost_params_check(cp);
}

static int add_fixed(struct ctx *c, const struct catalog_offering *o,
		     enum plan_mode mode)
{
	struct plan_placement p = { .o = *o, .mode = mode };
	struct cost_params cp;

	if (plan_cost_params(c->js, o, mode, &cp) || cost_estimate(&cp, &p.est))
		return -EINVAL;
	p.price_per_h = cp.price_per_h;
	p.ckpt_interval_h = p.est.n_ckpt ? cp.ckpt_interval_h : 0;
	p.expected_cost = p.est.netc;
	p.cost_p95 = p.est.netc;
	p.p_meet = p.est.makespan_h <= c->r->deadline_h ? 1 : 0;
	if (o->committed) {
		/* a cluster's pool: the job waits in its queue first; an
		 * unknown wait promises no deadline */
		p.preferred = c->js->criticality == JOBSPEC_CRIT_CRITICAL;
		if (o->queue_wait_s < 0)
			p.p_meet = isinf(c->r->deadline_h) ? 1 : 0;
		else if (p.est.makespan_h + (double)o->queue_wait_s / 3600 >
			 c->r->deadline_h)
			p.p_meet = 0;
	}
	return push(c, &p);
}

/* The makespan that P(finish by T) reaches q at, by bisection (the
 * probability only grows with T). */
static double makespan_quantile_h(const struct cost_params *cp, double t0, double q)
{
	double lo = t0, hi = t0 > 0 ? t0 * 2 : 1;

	for (int i = 0; i < 60 && cost_p_finish_by(cp, hi) < q; i++)
		hi *= 2;
	for (int i = 0; i < 60 && hi - lo > 1e-6 * hi; i++) {
		double mid = (lo + hi) / 2;

		if (cost_p_finish_by(cp, mid) >= q)
			hi = mid;
		else
			lo = mid;
	}
	return hi;
}

static int add_spot(struct ctx *c, const struct catalog_offering *o, int fallback)
{
	struct plan_placement p = { .o = *o };
	struct cost_params cp;
	double D = c->r->deadline_h;

	p.mode = fallback ? PLAN_SPOT_FALLBACK : PLAN_SPOT;
	if (plan_cost_params(c->js, o, p.mode, &cp) || cost_estimate(&cp, &p.est))
		return -EINVAL;
	p.price_per_h = cp.price_per_h;
	p.ckpt_interval_h = p.est.n_ckpt ? cp.ckpt_interval_h : 0;
	p.expected_cost = p.est.netc;
	p.p_meet = isinf(D) ? 1 : cost_p_finish_by(&cp, D);
	if (fallback && !isinf(D)) {
		sr_micros od = gang(o->ondemand_per_h, c->js->num_nodes);
		double Dp = D - c->r->resume_h;
		double over = Dp > 0 ? cost_expected_overrun_h(&cp, Dp) : p.est.makespan_h;
		double pf = Dp > 0 ? 1 - cost_p_finish_by(&cp, Dp) : 1;

		p.p_fallback = pf;
		p.expected_cost = sr_money_hours(p.est.makespan_h - over, p.price_per_h) +
				  sr_money_hours(over + c->r->resume_h * pf, od);
		if (p.est.t_train_h + c->r->resume_h <= D)
			p.p_meet = 1;
	}
	if (fallback && !isinf(D) && o->outage_h > 0) {
		/* a pool measured to stay down after a loss: the waits use
		 * the slack (cost_outage.c); the plan's figures come from
		 * runs of what the job will do there */
		struct cost_outage ou = { o->outage_h, o->outage_cv,
					  o->hazard_disp, o->up_cv };
		struct cost_mc_result mc;

		if (cost_fallback_mc(&cp, &ou, D, gang(o->ondemand_per_h,
				     c->js->num_nodes), PLAN_MC_RUNS,
				     PLAN_MC_SEED, &mc) == 0) {
			p.expected_cost = mc.mean;
			p.cost_p95 = mc.p95 > mc.mean ? mc.p95 : mc.mean;
			p.p_fallback = mc.p_fallback;
			return push(c, &p);
		}
	}
	{
		double t95 = makespan_quantile_h(&cp, p.est.t_train_h, 0.95);
		double cut = D - c->r->resume_h;

		/* 95th percentile: spot until the fallback point, then the rest
		 * (and one resume) on demand */
		if (p.mode == PLAN_SPOT_FALLBACK && !isinf(D) && t95 > cut && cut > 0)
			p.cost_p95 = sr_money_hours(cut, p.price_per_h) +
				     sr_money_hours(t95 - cut + c->r->resume_h,
					   gang(o->ondemand_per_h, c->js->num_nodes));
		else
			p.cost_p95 = sr_money_hours(t95, p.price_per_h);
		if (p.cost_p95 < p.expected_cost)
			p.cost_p95 = p.expected_cost;
	}
	return push(c, &p);
}

static int cmp_place(const void *a, const void *b)
{
	const struct plan_placement *x = a, *y = b;
	int r;

	if (x->feasible != y->feasible)
		return x->feasible ? -1 : 1;
	if (x->preferred != y->preferred)
		return x->preferred ? -1 : 1;
	if (x->expected_cost != y->expected_cost)
		return x->expected_cost < y->expected_cost ? -1 : 1;
	if (x->mode != y->mode)
		return x->mode < y->mode ? -1 : 1;
	r = strcmp(x->o.cloud, y->o.cloud);
	if (!r)
		r = strcmp(x->o.region, y->o.region);
	if (!r)
		r = strcmp(x->o.zone, y->o.zone);
	return r ? r : strcmp(x->o.instance_type, y->o.instance_type);
}

static void judge(struct ctx *c, struct plan_placement *p)
{
	const struct jobspec *js = c->js;

	p->feasible = 0;
	if (p->p_meet < js->p_target && p->o.committed)
		snprintf(p->why, sizeof p->why, "its queue wait (%s) leaves too "
			 "little time before the deadline", p->o.queue_wait_s < 0 ?
			 "unknown" : "estimated");
	else if (p->p_meet < js->p_target)
		snprintf(p->why, sizeof p->why, "P(meet deadline) %.3f < %.3f",
			 p->p_meet, js->p_target);
	else if (js->max_cost >= 0 && p->expected_cost > js->max_cost)
		snprintf(p->why, sizeof p->why, "expected cost above max_cost");
	else if (js->max_restarts >= 0 && p->est.n_preempt > js->max_restarts)
		snprintf(p->why, sizeof p->why, "expected preemptions %.1f > max_restarts %d",
			 p->est.n_preempt, js->max_restarts);
	else
		p->feasible = 1;
	p->savings_vs_od = c->r->baseline_od > 0 ?
		1 - (double)p->expected_cost / (double)c->r->baseline_od : NAN;
	p->savings_vs_reserved = c->r->baseline_reserved > 0 ?
		1 - (double)p->expected_cost / (double)c->r->baseline_reserved : NAN;
}

/* Which modes governance allows for js. */
static void allowed_modes(const struct jobspec *js, int allow[4])
{
	memset(allow, 0, 4 * sizeof allow[0]);
	switch (js->criticality) {
	case JOBSPEC_CRIT_CRITICAL:
		allow[PLAN_RESERVED] = allow[PLAN_ONDEMAND] = 1;
		break;
	case JOBSPEC_CRIT_STANDARD:
		allow[PLAN_SPOT_FALLBACK] = js->use_spot != 0;
		allow[PLAN_ONDEMAND] = js->use_spot != 1;
		break;
	case JOBSPEC_CRIT_BEST_EFFORT:
		allow[PLAN_SPOT] = 1;
		break;
	}
}

static int place_offering(struct ctx *c, const struct catalog_offering *o,
			  const int allow[4])
{
	int rc = 0;

	if (o->committed) /* paid for: its committed price, whoever may
			     buy on demand may use it */
		return (allow[PLAN_ONDEMAND] || allow[PLAN_RESERVED]) &&
		       o->reserved_per_h >= 0 ? add_fixed(c, o, PLAN_RESERVED) : 0;
	if (allow[PLAN_ONDEMAND] && o->ondemand_per_h >= 0)
		rc = add_fixed(c, o, PLAN_ONDEMAND);
	if (!rc && allow[PLAN_RESERVED] && o->reserved_per_h >= 0)
		rc = add_fixed(c, o, PLAN_RESERVED);
	if (!rc && o->spot_per_h >= 0) {
		if (allow[PLAN_SPOT])
			rc = add_spot(c, o, 0);
		else if (allow[PLAN_SPOT_FALLBACK])
			rc = add_spot(c, o, o->ondemand_per_h >= 0);
	}
	return rc;
}

static void baselines(const struct catalog *cat, const struct jobspec *js,
		      struct plan_result *r)
{
	r->baseline_od = r->baseline_reserved = -1;
	for (size_t i = 0; i < cat->n; i++) {
		const struct catalog_offering *o = &cat->items[i];
		/* a committed pool is not bought on demand */
		sr_micros od = o->committed ? -1 : gang(o->ondemand_per_h,
							js->num_nodes);
		sr_micros rs = gang(o->reserved_per_h, js->num_nodes);
		double t = js->work_h;

		if (!jobspec_offer_ok(js, o))
			continue;
		if (od >= 0 && (r->baseline_od < 0 || sr_money_hours(t, od) < r->baseline_od))
			r->baseline_od = sr_money_hours(t, od);
		if (rs >= 0 && (r->baseline_reserved < 0 ||
				sr_money_hours(t, rs) < r->baseline_reserved))
			r->baseline_reserved = sr_money_hours(t, rs);
	}
}

/* Every name the job gives must exist in the catalog: the GPUs (with
 * their counts), the clouds, regions and zones.  Zone names become zone
 * IDs in `infra` (a copy of js->infra the caller owns). */
static int check_names(const struct catalog *cat, const struct jobspec *js,
		       struct jobspec_infra *infra, struct sr_err *e)
{
	int rc = 0;

	for (size_t i = 0; i < js->n_accels && !rc; i++)
		rc = catalog_check_gpu(cat, js->accels[i].name, js->accels[i].count, e);
	if (!js->n_accels && !rc)
		rc = catalog_check_gpu(cat, js->accel, js->accel_count, e);
	if (rc)
		return sr_err_prefix(e, "resources.accelerators");
	for (size_t i = 0; i < js->n_infra && !rc; i++) {
		struct jobspec_infra *in = &infra[i];
		char buf[160], zone[sizeof in->zone];

		memcpy(zone, in->zone, sizeof zone);
		if (in->accel[0])
			rc = catalog_check_gpu(cat, in->accel, in->accel_count, e);
		if (!rc)
			rc = catalog_check_place(cat, in->cloud, in->region, zone,
						 in->zone, sizeof in->zone, e);
		if (rc)
			return sr_err_prefix(e, "resources.%s[%zu] (%s)",
					     js->n_infra > 1 ? "any_of" : "infra", i,
					     jobspec_infra_format(&js->infra[i], buf,
								  sizeof buf));
	}
	return 0;
}

/* Drop placements whose price, or whose on-demand fallback's price, is
 * above max_hourly_cost. */
static void drop_over_budget(const struct jobspec *js, struct plan_result *out)
{
	size_t k = 0;

	if (js->max_hourly_cost < 0)
		return;
	for (size_t i = 0; i < out->n; i++) {
		const struct plan_placement *p = &out->items[i];
		sr_micros fb = gang(p->o.ondemand_per_h, js->num_nodes);

		if (p->price_per_h > js->max_hourly_cost)
			continue;
		if (p->mode == PLAN_SPOT_FALLBACK && fb > js->max_hourly_cost)
			continue;
		out->items[k++] = *p;
	}
	out->n = k;
}

int plan_make(const struct catalog *cat, const struct jobspec *js,
	      int64_t now_ns, struct plan_result *out, struct sr_err *e)
{
	struct jobspec view = *js; /* shallow: same arrays but resolved zones */
	struct jobspec_infra *infra = NULL;
	struct ctx c = { &view, out, 0 };
	int allow[4], rc = 0;

	memset(out, 0, sizeof *out);
	if (!js->accel[0] || js->accel_count < 1)
		return sr_err_set(e, -SR_EPARSE, "resources.accelerators: required for planning");
	if (!(js->work_h > 0))
		return sr_err_set(e, -SR_EPARSE, "spotrun.work: required for planning "
				  "(add spotrun: {work: 20h}, or give plan --work-hours)");
	out->deadline_h = jobspec_deadline_h(js, now_ns);
	if (!(out->deadline_h > 0))
		return sr_err_set(e, -SR_EPARSE, "spotrun.deadline: already passed");
	if (js->work_h > out->deadline_h)
		return sr_err_set(e, -EINVAL, "spotrun.work: %.1fh of work cannot finish "
				  "within the %.1fh deadline; raise spotrun.deadline or "
				  "lower spotrun.work", js->work_h, out->deadline_h);
	if (js->n_infra) {
		infra = malloc(js->n_infra * sizeof *infra);
		if (!infra)
			return sr_err_set(e, -ENOMEM, "plan: out of memory");
		memcpy(infra, js->infra, js->n_infra * sizeof *infra);
	}
	rc = check_names(cat, js, infra, e);
	if (rc) {
		free(infra);
		return rc;
	}
	view.infra = infra;
	js = &view;
	out->stall_h = jobspec_stall_h(js);
	out->resume_h = resume_h(js);
	baselines(cat, js, out);
	allowed_modes(js, allow);
	for (size_t i = 0; i < cat->n && !rc; i++) {
		const struct catalog_offering *o = &cat->items[i];

		if (!jobspec_offer_ok(js, o))
			continue;
		rc = place_offering(&c, o, allow);
	}
	if (rc) {
		free(infra);
		plan_result_free(out);
		return sr_err_set(e, rc, "plan: %s", sr_strerror(rc));
	}
	drop_over_budget(js, out);
	for (size_t i = 0; i < out->n; i++) {
		judge(&c, &out->items[i]);
		out->n_feasible += (size_t)out->items[i].feasible;
	}
	qsort(out->items, out->n, sizeof *out->items, cmp_place);
	plan_spare_price(cat, js, out->n ? &out->items[0] : NULL,
			 out->deadline_h, &out->spare);
	free(infra);
	return 0;
}

void plan_result_free(struct plan_result *r)
{
	if (!r)
		return;
	free(r->items);
	memset(r, 0, sizeof *r);
}

static json_t *num_or_null(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

static json_t *spare_json(const struct plan_spare *s)
{
	json_t *j = json_object();

	if (!j)
		return NULL;
	json_object_set_new(j, "keep", json_integer(s->keep));
	json_object_set_new(j, "fixed", json_boolean(s->fixed));
	json_object_set_new(j, "priced", json_boolean(s->priced));
	json_object_set_new(j, "why", json_string(s->why));
	if (!s->priced)
		return j;
	json_object_set_new(j, "pool", json_pack("{s:s, s:s, s:s, s:s}",
		"cloud", s->o.cloud, "region", s->o.region, "zone", s->o.zone,
		"instance_type", s->o.instance_type));
	json_object_set_new(j, "price_per_h_micros", json_integer(s->price_per_h));
	json_object_set_new(j, "cost_micros", json_integer(s->cost));
	json_object_set_new(j, "kept_h", json_real(s->kept_h));
	json_object_set_new(j, "saved_s_per_recovery", json_real(s->saved_s));
	json_object_set_new(j, "recoveries", json_real(s->recoveries));
	json_object_set_new(j, "downtime_saved_h",
			    json_real(s->recoveries * s->saved_s / 3600));
	json_object_set_new(j, "delay_cost_per_h_micros",
			    json_integer(s->delay_per_h));
	json_object_set_new(j, "value_micros", json_integer(s->value));
	json_object_set_new(j, "slack_h", num_or_null(s->slack_h));
	return j;
}

static json_t *place_json(const struct plan_result *r, const struct plan_placement *p)
{
	json_t *j = json_object();

	if (!j)
		return NULL;
	json_object_set_new(j, "mode", json_string(plan_mode_name(p->mode)));
	json_object_set_new(j, "cloud", json_string(p->o.cloud));
	json_object_set_new(j, "region", json_string(p->o.region));
	json_object_set_new(j, "zone", json_string(p->o.zone));
	json_object_set_new(j, "instance_type", json_string(p->o.instance_type));
	json_object_set_new(j, "price_per_h_micros", json_integer(p->price_per_h));
	json_object_set_new(j, "expected_cost_micros", json_integer(p->expected_cost));
	json_object_set_new(j, "cost_p95_micros", json_integer(p->cost_p95));
	json_object_set_new(j, "savings_vs_od", num_or_null(p->savings_vs_od));
	json_object_set_new(j, "savings_vs_reserved", num_or_null(p->savings_vs_reserved));
	json_object_set_new(j, "expected_preemptions", json_real(p->est.n_preempt));
	json_object_set_new(j, "ckpt_interval_h", json_real(p->ckpt_interval_h));
	json_object_set_new(j, "expected_makespan_h", json_real(p->est.makespan_h));
	json_object_set_new(j, "p_meet", json_real(p->p_meet));
	json_object_set_new(j, "p_fallback", json_real(p->p_fallback));
	json_object_set_new(j, "risk", json_string(plan_risk(r, p)));
	json_object_set_new(j, "network", json_string(catalog_net_name(p->o.net)));
	json_object_set_new(j, "hazard_per_h", json_real(p->o.hazard_per_h));
	json_object_set_new(j, "hazard_source",
			    json_string(catalog_hazard_src_name(p->o.hazard_src)));
	json_object_set_new(j, "hazard_from", json_string(p->o.hazard_from));
	json_object_set_new(j, "feasible", json_boolean(p->feasible));
	json_object_set_new(j, "why", json_string(p->why));
	json_object_set_new(j, "source", json_string(p->o.source));
	json_object_set_new(j, "committed", json_boolean(p->o.committed));
	if (p->o.committed) {
		json_object_set_new(j, "queue_wait_s", p->o.queue_wait_s < 0 ?
				    json_null() : json_integer(p->o.queue_wait_s));
		json_object_set_new(j, "queue_basis", json_string(p->o.queue_basis));
	}
	return j;
}

json_t *plan_to_json(const struct plan_result *r, const struct jobspec *js)
{
	json_t *o = json_object(), *arr = json_array();

	if (!o || !arr) {
		json_decref(o);
		json_decref(arr);
		return NULL;
	}
	json_object_set_new(o, "job", js->name ? json_string(js->name) : json_null());
	json_object_set_new(o, "criticality", json_string(jobspec_crit_name(js->criticality)));
	json_object_set_new(o, "deadline_h", num_or_null(r->deadline_h));
	json_object_set_new(o, "p_target", json_real(js->p_target));
	json_object_set_new(o, "resume_h", json_real(r->resume_h));
	json_object_set_new(o, "ckpt_stall_h", json_real(r->stall_h));
	json_object_set_new(o, "baseline_od_micros",
			    r->baseline_od < 0 ? json_null() : json_integer(r->baseline_od));
	json_object_set_new(o, "baseline_reserved_micros",
			    r->baseline_reserved < 0 ? json_null() : json_integer(r->baseline_reserved));
	json_object_set_new(o, "n_feasible", json_integer((json_int_t)r->n_feasible));
	json_object_set_new(o, "spare", spare_json(&r->spare));
	for (size_t i = 0; i < r->n; i++)
		json_array_append_new(arr, place_json(r, &r->items[i]));
	json_object_set_new(o, "placements", arr);
	return o;
}
