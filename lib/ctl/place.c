/*
 * place.c - the policy adapter (see place.h).
 */
#include "ctl/place.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/money.h"
#include "ctl/ctl_int.h"
#include "ctl/recon.h"
#include "market/joblimits.h"
#include "market/spare.h"

#define NODEADLINE_FACTOR 3.0 /* horizon of a job without a deadline, x work */

/* Without spotrun.spares the job keeps what the plan chooses; a job the
 * planner cannot price (no spotrun.work, a name it does not know) keeps
 * none, and the plan says why. */
static void plan_spares(const struct jobspec *js, const struct cloud_offering *v,
			size_t n, int64_t now_ns, struct place_plan *p)
{
	struct plan_spare s;
	struct sr_err e = { 0 };
	int rc = place_spare_choose(js, v, n, p->deadline_s, now_ns, &s, &e);

	p->spares_planned = true;
	if (rc) {
		snprintf(p->spares_why, sizeof p->spares_why, "the plan cannot "
			 "price a spare: %.120s", sr_err_str(&e, rc));
		return;
	}
	p->spares = s.keep;
	if (s.priced)
		p->delay_per_h = s.delay_per_h;
	snprintf(p->spares_why, sizeof p->spares_why, "the plan: %.140s", s.why);
}

int place_plan_init(struct ctl *c, const struct jobspec *js, int64_t now_ns,
		    struct place_plan *p, struct sr_err *e)
{
	struct cloud_offering *v = NULL;
	struct cloud_query q = { 0 };
	const char *clouds[17] = { 0 }, *regions[17] = { 0 };
	size_t n = 0, k;
	int slow = -1; /* a committed pool whose queue misses the deadline */
	bool od_pref = false;
	double scale = c->cfg.time_scale;
	int rc;

	memset(p, 0, sizeof *p);
	p->od = -1;
	p->crit = js->criticality;
	p->use_spot = js->use_spot;
	p->spares = js->spares > 0 ? js->spares : 0;
	p->spare_saved_s = (double)(js->provision_ns + js->image_pull_ns) / 1e9;
	p->delay_per_h = js->delay_cost_per_h;
	if (js->spares >= 0)
		snprintf(p->spares_why, sizeof p->spares_why, "spotrun.spares");
	p->train_through = js->train_through_notice != 0;
	p->has_setup = js->setup && *js->setup;
	p->gap_s = PLACE_GAP_S;
	q.accelerator = js->accel[0] ? js->accel : NULL;
	q.accel_count = js->accel_count;
	for (k = 0; k < js->n_infra && k < 16; k++) {
		if (js->infra[k].cloud[0])
			clouds[k] = js->infra[k].cloud;
		if (js->infra[k].region[0])
			regions[k] = js->infra[k].region;
	}
	q.clouds = clouds[0] ? clouds : NULL;
	q.regions = regions[0] ? regions : NULL;
	/* Deadlines are in cloud time: a relative one is a cloud duration; an
	 * absolute one is converted through the wall-clock gap to it. */
	p->deadline_s = INFINITY;
	if (js->deadline_kind == JOBSPEC_DEADLINE_RELATIVE)
		p->deadline_s = (double)js->deadline_ns / 1e9;
	else if (js->deadline_kind == JOBSPEC_DEADLINE_ABSOLUTE)
		p->deadline_s = (double)(js->deadline_ns - now_ns) / 1e9 * scale;
	if (p->deadline_s <= 0)
		return sr_err_set(e, -EINVAL, "spotrun.deadline: already past");
	p->work_s = js->work_h * 3600.0;
	if (p->work_s <= 0)
		p->work_s = isfinite(p->deadline_s) ? p->deadline_s / 2 : 3600.0;
	rc = ctl__offerings(c, &q, &v, &n, e);
	if (rc)
		return rc;
	for (k = 0; k < n; k++) {
		/* a critical job's on-demand pool is a committed one (a
		 * reserved cluster) when there is one, at any price: its
		 * capacity is paid for whether used or not - unless its
		 * queue (the provider's estimate, real seconds) would keep
		 * the job past its deadline: then on-demand elsewhere */
		bool fits = !v[k].committed || isinf(p->deadline_s) ||
			    (v[k].queue_wait_s >= 0 &&
			     (double)v[k].queue_wait_s * scale + p->work_s <=
			     p->deadline_s);
		bool pref = js->criticality == JOBSPEC_CRIT_CRITICAL &&
			    v[k].committed && fits;

		if (!fits && v[k].ondemand_per_h >= 0 && slow < 0)
			slow = (int)k;
		if (v[k].spot_per_h >= 0 && p->nspot < SIM_MAX_REGIONS)
			p->spot[p->nspot++] = v[k].pool;
		if (v[k].ondemand_per_h >= 0 && fits &&
		    (p->od < 0 || (pref && !od_pref) ||
		     (pref == od_pref && sr_money_to_usd(v[k].ondemand_per_h) <
		      p->od_price_usd))) {
			p->od = v[k].pool;
			p->od_price_usd = sr_money_to_usd(v[k].ondemand_per_h);
			od_pref = pref;
		}
	}
	if (p->od < 0 && slow >= 0) { /* no other on-demand pool: wait */
		p->od = v[slow].pool;
		p->od_price_usd = sr_money_to_usd(v[slow].ondemand_per_h);
	}
	if (js->spares < 0)
		plan_spares(js, v, n, now_ns, p);
	free(v);
	if (p->nspot == 0 && p->od < 0)
		return sr_err_set(e, -SR_ENOTFOUND, "resources.accelerators: no "
				  "offering of %s:%d in the %s market%s",
				  js->accel[0] ? js->accel : "(any)", js->accel_count,
				  "enabled", js->n_infra ? " within infra" : "");
	if (p->od < 0 && (js->criticality == JOBSPEC_CRIT_CRITICAL || js->use_spot == 0))
		return sr_err_set(e, -SR_ENOTFOUND, "resources: no on-demand "
				  "offering of %s:%d, which this job requires",
				  js->accel, js->accel_count);
	if (p->nspot == 0 && js->criticality == JOBSPEC_CRIT_BEST_EFFORT)
		return sr_err_set(e, -SR_ENOTFOUND, "resources: best-effort needs "
				  "spot, and no %s:%d offering has a spot price",
				  js->accel, js->accel_count);
	/* A restart costs the provisioning delay plus the agent's and
	 * workload's start, in real time, times the scale; the job's own
	 * figure (provision + image_pull) is used when larger on a provider
	 * whose provisioning time is not its own known setting (without
	 * CLOUD_CAP_KNOWN_BOOT: a real cloud). */
	p->restart_s = (double)(c->cfg.provision_ms + c->cfg.restart_guess_ms) /
		       1000.0 * scale;
	if ((double)(js->provision_ns + js->image_pull_ns) / 1e9 > p->restart_s &&
	    !(ctl__prov_caps(c, p->od >= 0 ? p->od : p->spot[0]) &
	      CLOUD_CAP_KNOWN_BOOT))
		p->restart_s = (double)(js->provision_ns + js->image_pull_ns) / 1e9;
	return 0;
}

char *place_plan_json(const struct place_plan *p)
{
	json_t *o, *a = json_array();
	char *s;

	for (int i = 0; i < p->nspot; i++)
		json_array_append_new(a, json_integer(p->spot[i]));
	/* "train_through":true is matched as text by store_node_ctx_load */
	o = json_pack("{s:o,s:i,s:f,s:f,s:I,s:i,s:i,s:i,s:b,s:b,s:b,s:s,s:f,s:I}",
		      "spot", a, "od", p->od, "od_price_usd", p->od_price_usd,
		      "restart_s", p->restart_s, "gap_s", (json_int_t)p->gap_s,
		      "crit", p->crit, "use_spot", p->use_spot, "spares", p->spares,
		      "train_through", p->train_through, "has_setup", p->has_setup,
		      "spares_planned", p->spares_planned, "spares_why",
		      p->spares_why, "spare_saved_s", p->spare_saved_s,
		      "delay_per_h_micros", (json_int_t)p->delay_per_h);
	if (!o)
		return NULL;
	s = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	return s;
}

int place_plan_parse(const char *s, double deadline_s, double work_s,
		     struct place_plan *p)
{
	json_t *o = json_loads(s, 0, NULL), *a;
	int rc = -SR_ECORRUPT;

	memset(p, 0, sizeof *p);
	if (!o)
		return rc;
	a = json_object_get(o, "spot");
	if (!json_is_array(a) || json_array_size(a) > SIM_MAX_REGIONS)
		goto out;
	p->nspot = (int)json_array_size(a);
	for (int i = 0; i < p->nspot; i++)
		p->spot[i] = (int)json_integer_value(json_array_get(a, (size_t)i));
	p->od = (int)json_integer_value(json_object_get(o, "od"));
	p->od_price_usd = json_number_value(json_object_get(o, "od_price_usd"));
	p->restart_s = json_number_value(json_object_get(o, "restart_s"));
	p->gap_s = json_integer_value(json_object_get(o, "gap_s"));
	p->crit = (int)json_integer_value(json_object_get(o, "crit"));
	p->use_spot = (int)json_integer_value(json_object_get(o, "use_spot"));
	/* absent before warm spares: none */
	p->spares = (int)json_integer_value(json_object_get(o, "spares"));
	if (p->spares < 0 || p->spares > SR_LIMIT_SPARES_MAX)
		goto out;
	p->train_through = json_is_true(json_object_get(o, "train_through"));
	p->has_setup = json_is_true(json_object_get(o, "has_setup"));
	/* absent before the plan's own choice (issue 33): the job's
	 * defaults */
	p->spares_planned = json_is_true(json_object_get(o, "spares_planned"));
	snprintf(p->spares_why, sizeof p->spares_why, "%s",
		 json_string_value(json_object_get(o, "spares_why")) ?: "");
	p->spare_saved_s = json_is_number(json_object_get(o, "spare_saved_s")) ?
			   json_number_value(json_object_get(o, "spare_saved_s")) :
			   JOBSPEC_DEFAULT_PROVISION_S + JOBSPEC_DEFAULT_IMAGE_PULL_S;
	p->delay_per_h = json_is_integer(json_object_get(o, "delay_per_h_micros")) ?
			 json_integer_value(json_object_get(o, "delay_per_h_micros")) :
			 -1;
	if (!(p->spare_saved_s >= 0) || p->delay_per_h < -1)
		goto out;
	p->deadline_s = deadline_s;
	p->work_s = work_s;
	rc = p->gap_s > 0 ? 0 : -SR_ECORRUPT;
out:
	json_decref(o);
	return rc;
}

static int region_of(const struct place_plan *p, int pool)
{
	for (int i = 0; i < p->nspot; i++) {
		if (p->spot[i] == pool)
			return i;
	}
	return -1;
}

/* The policy's view of the job.  A job without a deadline has no deadline
 * pressure, but the policies plan against one (spotrun sizes its plan
 * steps from the slack), so it gets a horizon: NODEADLINE_FACTOR times
 * its work from its start - spot while that allows, then on-demand,
 * never a wait without end. */
static void job_of(const struct place_plan *p, struct policy_job *job)
{
	/* Zeroed: the bundled prior and, across pools, --zone-pairs auto
	 * (SIM_PAIRS_AUTO is 0), as `spotrun sim` plans by default. */
	memset(job, 0, sizeof *job);
	job->work_s = p->work_s;
	job->deadline_s = isfinite(p->deadline_s) ? p->deadline_s :
			  NODEADLINE_FACTOR * p->work_s;
	job->restart_s = p->restart_s;
	job->gap_s = p->gap_s;
	job->nregions = p->nspot;
	job->od_price = p->od >= 0 ? p->od_price_usd : 1e9;
	job->od_region = 0;
}

static void state_release(const struct policy_ops *ops, void *state,
			  size_t len)
{
	/* Only a state of this policy's size was built by it. */
	if (state && ops && ops->destroy && len == ops->state_size)
		ops->destroy(state);
	free(state);
}

void place_state_free(const char *policy, void *state, size_t len)
{
	state_release(policy_find(policy ? policy : "spotrun"), state, len);
}

/* Header of a persisted state: magic, format version, the policy's name
 * and state size, then the state's bytes. */
#define STATE_MAGIC "SRPS"
#define STATE_HDR (4 + 4 + 24 + 8)

int place_state_pack(const char *policy, const void *state, size_t len,
		     void **out, size_t *out_len)
{
	const char *name = policy ? policy : "spotrun";
	unsigned char *b;
	uint32_t ver = PLACE_STATE_VERSION;
	uint64_t n = len;

	*out = NULL;
	*out_len = 0;
	if (strlen(name) >= 24)
		return -EINVAL;
	b = calloc(1, STATE_HDR + len);
	if (!b)
		return -ENOMEM;
	memcpy(b, STATE_MAGIC, 4);
	memcpy(b + 4, &ver, 4);
	memcpy(b + 8, name, strlen(name));
	memcpy(b + 32, &n, 8);
	if (len)
		memcpy(b + STATE_HDR, state, len);
	*out = b;
	*out_len = STATE_HDR + len;
	return 0;
}

int place_state_unpack(const char *policy, const void *data, size_t n,
		       void **state, size_t *len)
{
	const struct policy_ops *ops = policy_find(policy ? policy : "spotrun");
	const unsigned char *b = data;
	char name[25] = { 0 };
	uint32_t ver;
	uint64_t sz;

	*state = NULL;
	*len = 0;
	if (!ops || n < STATE_HDR || memcmp(b, STATE_MAGIC, 4) != 0)
		return -SR_ECORRUPT;
	memcpy(&ver, b + 4, 4);
	memcpy(name, b + 8, 24);
	memcpy(&sz, b + 32, 8);
	if (ver != PLACE_STATE_VERSION || strcmp(name, ops->name) != 0 ||
	    sz != ops->state_size || n - STATE_HDR != sz)
		return -SR_ECORRUPT;
	*state = malloc(sz ? sz : 1);
	if (!*state)
		return -ENOMEM;
	memcpy(*state, b + STATE_HDR, sz);
	*len = sz;
	return 0;
}

bool place_state_owns(const char *policy)
{
	const struct policy_ops *ops = policy_find(policy ? policy : "spotrun");

	return ops && ops->destroy;
}

/* Replace *state by a fresh one, reset for `job`.  The old one is released
 * (destroy op included); on -ENOMEM *state is NULL. */
static int state_new(const struct policy_ops *ops, const struct policy_job *job,
		     void **state, size_t *state_len)
{
	state_release(ops, *state, *state_len);
	*state_len = 0;
	*state = calloc(1, ops->state_size ? ops->state_size : 1);
	if (!*state)
		return -ENOMEM;
	*state_len = ops->state_size;
	if (ops->reset)
		ops->reset(*state, job);
	return 0;
}

int place_decide(struct ctl *c, const struct place_plan *p, const char *policy,
		 const struct place_now *now, void **state, size_t *state_len,
		 struct place_choice *out, struct sr_err *e)
{
	const struct policy_ops *ops = policy_find(policy ? policy : "spotrun");
	struct policy_job job = { 0 };
	struct policy_obs obs = { 0 };
	struct policy_choice ch;
	uint8_t avail[SIM_MAX_REGIONS];
	double price[SIM_MAX_REGIONS];
	bool od_only = p->crit == JOBSPEC_CRIT_CRITICAL || p->use_spot == 0 ||
		       p->nspot == 0;
	int any = -1;

	memset(out, 0, sizeof *out);
	out->pool = -1;
	if (!ops)
		return sr_err_set(e, -EINVAL, "unknown policy '%s'", policy);
	for (int i = 0; i < p->nspot; i++) {
		struct cloud_offering o;

		avail[i] = 0;
		price[i] = 0;
		if (ctl__describe(c, p->spot[i], &o) == 0) {
			/* what the market says, less the pools where a
			 * launch just failed for lack of capacity */
			avail[i] = o.spot_available &&
				   ctl__spot_open(c, p->spot[i]);
			price[i] = sr_money_to_usd(o.spot_per_h);
		}
		if (avail[i] && any < 0)
			any = i;
	}
	if (od_only) {
		out->hold = SIM_OD;
		out->pool = p->od;
		snprintf(out->why, sizeof out->why, "%s: on-demand only",
			 p->crit == JOBSPEC_CRIT_CRITICAL ? "criticality critical" :
			 p->nspot == 0 ? "no spot offering" : "use_spot false");
		return 0;
	}
	job_of(p, &job);
	if (*state_len != ops->state_size || !*state) {
		int rc = state_new(ops, &job, state, state_len);

		if (rc)
			return sr_err_set(e, rc, "policy state");
	}
	obs.tick = now->tick;
	obs.work_done_s = now->work_done_s;
	obs.work_left_s = fmax(0, p->work_s - now->work_done_s);
	obs.time_left_s = isfinite(p->deadline_s) ? now->time_left_s :
			  job.deadline_s - now->elapsed_s;
	obs.hold = now->held_pool < 0 ? SIM_NONE : now->held_spot ? SIM_SPOT : SIM_OD;
	obs.region = now->held_spot ? region_of(p, now->held_pool) : -1;
	if (obs.hold == SIM_SPOT && obs.region < 0)
		obs.hold = SIM_NONE;
	obs.ckpt_region = region_of(p, now->ckpt_pool);
	obs.preempted = now->preempted;
	obs.avail = avail;
	obs.spot_price = price;
	ch = ops->decide(*state, &job, &obs);
	if (ch.hold == SIM_SPOT && (ch.region < 0 || ch.region >= p->nspot ||
				    !avail[ch.region]))
		ch = (struct policy_choice){ SIM_NONE, -1 };
	/* A choice of spot in another pool while the live nodes hold spot
	 * in one that is still up is a move of the running gang to a
	 * cheaper pool (spotrun's move_region(), where it pays): the
	 * reconciler carries it out for the whole gang (reconcile.c
	 * maybe_migrate) and places a missing rank beside its gang
	 * (recon_place.c). */
	/* The deadline guard the simulator applies to every policy but
	 * greedy: never a choice that could make the deadline unreachable
	 * by on-demand. */
	if (!ops->self_guarded)
		ch = policy_guard(&job, &obs, ch);
	if (p->crit == JOBSPEC_CRIT_BEST_EFFORT && ch.hold == SIM_OD) {
		ch.hold = any >= 0 ? SIM_SPOT : SIM_NONE;
		ch.region = any;
	}
	if (ch.hold == SIM_OD && p->od < 0) {
		ch.hold = any >= 0 ? SIM_SPOT : SIM_NONE;
		ch.region = any;
	}
	if (ch.hold == SIM_SPOT && (ch.region < 0 || ch.region >= p->nspot ||
				    !avail[ch.region])) {
		ch.hold = any >= 0 ? SIM_SPOT : SIM_NONE;
		ch.region = any;
	}
	out->hold = ch.hold;
	switch (ch.hold) {
	case SIM_SPOT:
		out->pool = p->spot[ch.region];
		out->spot = true;
		snprintf(out->why, sizeof out->why, "%s: spot in pool %d "
			 "(%.0f s of work left, %.0f s to the deadline)",
			 ops->name, out->pool, obs.work_left_s, obs.time_left_s);
		break;
	case SIM_OD:
		out->pool = p->od;
		snprintf(out->why, sizeof out->why, "%s: on-demand (%.0f s of "
			 "work left, %.0f s to the deadline: spot is too risky)",
			 ops->name, obs.work_left_s, obs.time_left_s);
		break;
	default:
		snprintf(out->why, sizeof out->why, "%s: wait for spot capacity",
			 ops->name);
		break;
	}
	return 0;
}

bool place_spot_pays(const struct place_plan *p, const struct place_now *now,
		     int pool, double spot_usd_h, double step_s)
{
	struct policy_job job;
	struct policy_obs obs = { 0 };
	struct policy_choice sp;
	double margin, left, gain, cost;
	int r = region_of(p, pool);

	if (r < 0 || p->od < 0)
		return false;
	job_of(p, &job);
	obs.tick = now->tick;
	obs.work_done_s = now->work_done_s;
	obs.work_left_s = fmax(0, p->work_s - now->work_done_s);
	obs.hold = SIM_OD;
	obs.region = -1;
	obs.ckpt_region = region_of(p, now->ckpt_pool);
	/* Hysteresis: spot must stay safe with one more restart and one
	 * more policy tick of slack than the guard asks, so a job that just
	 * went to on-demand on the guard does not bounce straight back. */
	margin = p->restart_s + (double)p->gap_s + step_s;
	obs.time_left_s = (isfinite(p->deadline_s) ? now->time_left_s :
			   job.deadline_s - now->elapsed_s) - margin;
	sp = (struct policy_choice){ SIM_SPOT, r };
	if (!policy_safe_after(&job, &obs, policy_tick_progress(&job, &obs, sp)))
		return false;
	/* What the move saves over the work left, against what it costs:
	 * the restart overhead and a lost partial step (paid at the spot
	 * price, the work redone), and moving the checkpoint (egress). */
	left = obs.work_left_s;
	gain = (p->od_price_usd - spot_usd_h) * left / 3600.0;
	cost = spot_usd_h * (p->restart_s + step_s) / 3600.0 + job.egress_usd;
	return gain > 2.0 * cost;
}

int place_warmup(struct ctl *c, const struct place_plan *p, const char *policy,
		 int ticks, const uint8_t *avail, const double *price,
		 void **state, size_t *state_len, struct sr_err *e)
{
	const struct policy_ops *ops = policy_find(policy ? policy : "spotrun");
	struct policy_job job = { 0 };
	struct policy_obs obs = { 0 };
	uint8_t av[SIM_MAX_REGIONS];
	double pr[SIM_MAX_REGIONS];
	int rc;

	(void)c;
	if (!ops)
		return sr_err_set(e, -EINVAL, "unknown policy '%s'", policy);
	if (p->nspot == 0)
		return 0;
	/* Reset with the job itself: a policy fixes job-derived constants
	 * there (spotrun: its plan step, from the slack). */
	job_of(p, &job);
	rc = state_new(ops, &job, state, state_len);
	if (rc)
		return sr_err_set(e, rc, "policy state");
	for (int t = 0; t < ticks; t++) {
		/* copies: the policy's observation takes mutable arrays */
		memcpy(av, avail + (size_t)t * (size_t)p->nspot, (size_t)p->nspot);
		memcpy(pr, price + (size_t)t * (size_t)p->nspot,
		       (size_t)p->nspot * sizeof pr[0]);
		if (ops->observe) {
			ops->observe(*state, &job, av, pr);
			continue;
		}
		/* No observe op: a decision with all the time in the world,
		 * whose choice is ignored, records the observation. */
		obs.tick = t;
		obs.work_left_s = p->work_s;
		obs.time_left_s = 1e15;
		obs.hold = SIM_NONE;
		obs.region = -1;
		obs.ckpt_region = -1;
		obs.avail = av;
		obs.spot_price = pr;
		ops->decide(*state, &job, &obs);
	}
	return 0;
}
