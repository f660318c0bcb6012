/*
 * sim_sweep.c - windows x policies, then per-policy statistics.
 *
 * For every window, od and optimal are always computed (they are the
 * denominators of ratio_to_od and ratio_to_optimal) even when not asked
 * for; only the requested policies appear in the output.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/rng.h"
#include "sim/sim_sweep.h"

struct agg {
	double *cost;     /* [nwin] */
	double r_opt, r_od;
	double preempt;
	int64_t spot_ticks, held_ticks;
	int misses;
};

static size_t window_ticks(const struct sim_market *m,
			   const struct sim_sweep_opts *o)
{
	double wh = o->window_h > o->p.deadline_h ? o->window_h : o->p.deadline_h;

	return (size_t)ceil(wh * 3600 / (double)m->gap_s - 1e-9);
}

int sim_sweep_sample(const struct sim_market *m, const struct sim_sweep_opts *o,
		     size_t *starts, size_t n)
{
	size_t wt = window_ticks(m, o);
	uint64_t x = o->seed;

	if (wt > m->n)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		starts[i] = (size_t)(sim__splitmix64(&x) % (uint64_t)(m->n - wt + 1));
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Nearest-rank percentile of a sorted array. */
static double pct(const double *s, size_t n, double p)
{
	size_t k = (size_t)ceil(p / 100.0 * (double)n);

	return s[k ? k - 1 : 0];
}

static double usd(double v)
{
	return isfinite(v) ? round(v * 1e6) / 1e6 : v;
}

static json_t *params_json(const struct sim_market *m,
			   const struct sim_sweep_opts *o, size_t nwin)
{
	json_t *regions = json_array();

	for (int r = 0; r < m->nregions; r++)
		json_array_append_new(regions, json_string(m->name[r]));
	return json_pack("{s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:I,s:I,s:I,s:o,s:f,s:s}",
			 "work_hours", o->p.work_h, "deadline_hours", o->p.deadline_h,
			 "restart_hours", o->p.restart_h,
			 "ckpt_interval_hours", o->p.ckpt_interval_h,
			 "ckpt_gb", o->p.ckpt_gb, "egress_per_gb", o->p.egress_per_gb,
			 "window_hours", o->window_h > o->p.deadline_h ? o->window_h : o->p.deadline_h,
			 "windows", (json_int_t)nwin, "seed", (json_int_t)o->seed,
			 "gap_seconds", (json_int_t)m->gap_s, "regions", regions,
			 "od_price", m->od_price, "trace", o->label ? o->label : "");
}

static json_t *summary_json(struct agg *a, size_t nwin, int online)
{
	double mean = 0;
	json_t *j;

	for (size_t w = 0; w < nwin; w++)
		mean += a->cost[w];
	mean /= (double)nwin;
	qsort(a->cost, nwin, sizeof *a->cost, cmp_double);
	j = json_pack("{s:f,s:f,s:f,s:f,s:f,s:i,s:I}",
		      "mean_cost", usd(mean), "median_cost", usd(pct(a->cost, nwin, 50)),
		      "p95_cost", usd(pct(a->cost, nwin, 95)),
		      "ratio_to_optimal", a->r_opt / (double)nwin,
		      "ratio_to_od", a->r_od / (double)nwin, "misses", a->misses,
		      "windows", (json_int_t)nwin);
	if (!j)
		return NULL;
	if (online) {
		json_object_set_new(j, "mean_preemptions", json_real(a->preempt / (double)nwin));
		json_object_set_new(j, "spot_fraction",
				    json_real(a->held_ticks ? (double)a->spot_ticks /
								  (double)a->held_ticks : 0));
	} else {
		json_object_set_new(j, "mean_preemptions", json_null());
		json_object_set_new(j, "spot_fraction", json_null());
	}
	return j;
}

int sim_sweep_run(const struct sim_market *m, const struct sim_sweep_opts *o,
		  json_t **out, struct sr_err *e)
{
	const struct policy_ops *ops[SIM_SWEEP_MAX_POLICIES] = { 0 };
	struct agg agg[SIM_SWEEP_MAX_POLICIES];
	size_t nwin = o->nstarts ? o->nstarts : o->nwindows, wt;
	size_t *starts = NULL, state_max = 1;
	void *state = NULL;
	json_t *doc = NULL, *rows = NULL, *pols = NULL;
	int rc = 0;

	*out = NULL;
	memset(agg, 0, sizeof agg);
	if (nwin == 0 || o->npolicies < 1 || o->npolicies > SIM_SWEEP_MAX_POLICIES)
		return sr_err_set(e, -EINVAL, "need at least one window and 1..%d policies",
				  SIM_SWEEP_MAX_POLICIES);
	rc = sim_params_check(&o->p, e);
	if (rc)
		return rc;
	for (int i = 0; i < o->npolicies; i++) {
		if (strcmp(o->policies[i], "optimal")) {
			ops[i] = policy_find(o->policies[i]);
			if (!ops[i])
				return sr_err_set(e, -EINVAL, "unknown policy '%s'", o->policies[i]);
			if (ops[i]->state_size > state_max)
				state_max = ops[i]->state_size;
		}
	}
	if (policy_od.state_size > state_max)
		state_max = policy_od.state_size;
	wt = window_ticks(m, o);
	if (wt > m->n)
		return sr_err_set(e, -EINVAL,
				  "%s: %zu ticks (%.1f h) is shorter than one %.1f h window",
				  o->label ? o->label : "trace", m->n,
				  (double)m->n * (double)m->gap_s / 3600.0,
				  (double)wt * (double)m->gap_s / 3600.0);
	starts = calloc(nwin, sizeof *starts);
	state = malloc(state_max);
	for (int i = 0; i < o->npolicies; i++)
		agg[i].cost = calloc(nwin, sizeof(double));
	rows = json_array();
	if (!starts || !state || !rows) {
		rc = sr_err_set(e, -ENOMEM, "out of memory");
		goto out;
	}
	for (int i = 0; i < o->npolicies; i++) {
		if (!agg[i].cost) {
			rc = sr_err_set(e, -ENOMEM, "out of memory");
			goto out;
		}
	}
	if (o->nstarts) {
		for (size_t w = 0; w < nwin; w++) {
			if (o->starts[w] > m->n - wt) {
				rc = sr_err_set(e, -EINVAL,
						"--start-tick %zu: a %zu-tick window does not fit %s (%zu ticks)",
						o->starts[w], wt, o->label ? o->label : "the trace", m->n);
				goto out;
			}
			starts[w] = o->starts[w];
		}
	} else {
		sim_sweep_sample(m, o, starts, nwin);
	}

	for (size_t w = 0; w < nwin; w++) {
		struct sim_result od_r;
		double opt;

		rc = sim_run(m, starts[w], &o->p, &policy_od, state, &od_r, NULL, 0);
		if (!rc)
			rc = sim_optimal(m, starts[w], &o->p, &opt);
		if (rc) {
			rc = sr_err_set(e, rc, "window at tick %zu: %s", starts[w],
					rc == -E2BIG ? "slack too large for the optimal DP at this tick length"
						     : sr_strerror(rc));
			goto out;
		}
		for (int i = 0; i < o->npolicies; i++) {
			struct sim_result r = { 0 };

			if (ops[i]) {
				rc = sim_run(m, starts[w], &o->p, ops[i], state, &r, NULL, 0);
				if (rc) {
					rc = sr_err_set(e, rc, "window at tick %zu: %s", starts[w],
							sr_strerror(rc));
					goto out;
				}
			} else {
				r.cost = opt;
				r.met = isfinite(opt);
			}
			agg[i].cost[w] = r.cost;
			agg[i].r_opt += isfinite(opt) && opt > 0 ? r.cost / opt : 1;
			agg[i].r_od += r.cost / od_r.cost;
			agg[i].misses += !r.met;
			agg[i].preempt += r.preemptions;
			agg[i].spot_ticks += r.spot_ticks;
			agg[i].held_ticks += r.spot_ticks + r.od_ticks;
			json_array_append_new(rows, json_pack("{s:s,s:I,s:s,s:f,s:b,s:i}",
				"trace", o->label ? o->label : "", "start_tick", (json_int_t)starts[w],
				"policy", o->policies[i], "cost", usd(r.cost), "met", r.met,
				"preemptions", r.preemptions));
		}
		if (o->progress)
			o->progress(o->progress_arg, w + 1, nwin);
	}
	pols = json_object();
	for (int i = 0; pols && i < o->npolicies; i++)
		json_object_set_new(pols, o->policies[i],
				    summary_json(&agg[i], nwin, ops[i] != NULL));
	doc = json_object();
	if (!pols || !doc) {
		rc = sr_err_set(e, -ENOMEM, "out of memory");
		goto out;
	}
	json_object_set_new(doc, "params", params_json(m, o, nwin));
	json_object_set_new(doc, "policies", pols);
	pols = NULL;
	json_object_set(doc, "windows", rows);
	*out = doc;
	doc = NULL;
out:
	for (int i = 0; i < o->npolicies; i++)
		free(agg[i].cost);
	free(starts);
	free(state);
	json_decref(rows);
	json_decref(pols);
	json_decref(doc);
	return rc;
}
