/*
 * views.c - the JSON objects of jobs and nodes served by the API
 * (shapes in docs/api.md).
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/timeutil.h"
#include "ctl/ctl_int.h"
#include "ctl/deadline.h"
#include "ctl/jobsm.h"
#include "ctl/routes.h"
#include "finops/policy.h"
#include "finops/report.h"
#include "store/store.h"

static json_t *ts_or_null(int64_t ns)
{
	char buf[40];

	if (ns == STORE_NULL_I64 ||
	    sr_time_format_rfc3339(ns, 3, buf, sizeof buf) < 0)
		return json_null();
	return json_string(buf);
}

static json_t *int_or_null(int64_t v)
{
	return v == STORE_NULL_I64 ? json_null() : json_integer(v);
}

static json_t *real_or_null(double v)
{
	return isnan(v) ? json_null() : json_real(v);
}

static json_t *text_or_null(const char *v)
{
	return v ? json_string(v) : json_null();
}

/* Set key to a new reference; NULL (out of memory) is reported by the
 * caller's final check of the object. */
static void put(json_t *j, const char *key, json_t *v)
{
	if (!v || json_object_set_new(j, key, v))
		json_object_set_new(j, "_incomplete", json_true());
}

/* j, or NULL (freed) when a put() ran out of memory. */
static json_t *complete(json_t *j)
{
	if (j && json_object_get(j, "_incomplete")) {
		json_decref(j);
		return NULL;
	}
	return j;
}

/* The API's state of a node: its row's state, refined by the cloud's
 * phase (QUEUED: a launch the cloud is carrying out; PENDING: an
 * instance it still boots). */
static const char *node_api_state(const struct store_node *n)
{
	if (!strcmp(n->state, "REQUESTED") && !strcmp(n->phase, "queued"))
		return "QUEUED";
	if (!strcmp(n->state, "BOOTING") && !strcmp(n->phase, "pending"))
		return "PENDING";
	return n->state;
}

json_t *ctl__node_json(const struct store_node *n)
{
	json_t *j = json_object(), *blob;

	if (!j)
		return NULL;
	put(j, "id", json_integer(n->id));
	put(j, "job_id", json_integer(n->job_id));
	put(j, "rank", json_integer(n->rank));
	/* a warm spare waiting for a rank (its rank is the job's num_nodes,
	 * outside the gang), and when one took a rank */
	put(j, "spare", json_boolean(n->spare && n->adopted_ns == STORE_NULL_I64));
	put(j, "adopted_at", ts_or_null(n->adopted_ns));
	put(j, "setup_exit_code", int_or_null(n->setup_rc));
	put(j, "state", json_string(node_api_state(n)));
	put(j, "provider", json_string(n->provider));
	put(j, "cloud", json_string(n->cloud));
	put(j, "region", json_string(n->region));
	put(j, "zone", json_string(n->zone));
	put(j, "instance_type", json_string(n->instance_type));
	put(j, "spot", json_boolean(n->spot));
	put(j, "price_micros_per_hour", json_integer(n->price_micros));
	put(j, "pid", int_or_null(n->pid));
	put(j, "created_at", ts_or_null(n->created_ns));
	put(j, "last_heartbeat_at", ts_or_null(n->last_hb_ns));
	put(j, "notice_at", ts_or_null(n->notice_ns));
	put(j, "terminate_at", ts_or_null(n->kill_ns));
	put(j, "rebalance_at", ts_or_null(n->rebalance_ns));
	put(j, "terminated_at", ts_or_null(n->terminated_ns));
	put(j, "end_reason", text_or_null(n->end_reason));
	put(j, "cpu_util", real_or_null(n->cpu_util));
	put(j, "gpu_util", real_or_null(n->gpu_util));
	put(j, "workload_state", json_string(n->workload));
	put(j, "workload_attempt", json_integer(n->wl_attempt));
	put(j, "accelerator", json_string(n->accelerator));
	put(j, "accelerator_count", json_real(n->accel_count));
	put(j, "cost_micros", json_integer(n->cost_micros));
	put(j, "pool", json_integer(n->pool));
	put(j, "instance_id", text_or_null(n->instance_id));
	/* a driver's blob: JSON it wrote; anything else is null */
	blob = n->driver_blob ? json_loads(n->driver_blob, 0, NULL) : NULL;
	put(j, "instance", blob ? blob : json_null());
	put(j, "addr", text_or_null(n->addr));
	return complete(j);
}

int ctl__nodes_json(struct store *s, int64_t job, bool live_only,
		    size_t limit, json_t **out, struct sr_err *e)
{
	struct store_node *v = NULL;
	size_t n = 0;
	json_t *arr = NULL, *x;
	int rc;

	*out = NULL;
	rc = store_node_list(s, job, live_only, limit, &v, &n, e);
	if (rc)
		return rc;
	arr = json_array();
	for (size_t i = 0; arr && i < n; i++) {
		x = ctl__node_json(&v[i]);
		if (!x || json_array_append_new(arr, x)) {
			json_decref(arr);
			arr = NULL;
		}
	}
	store_nodes_free(v, n);
	if (!arr)
		return sr_err_set(e, -ENOMEM, "node view: out of memory");
	*out = arr;
	return 0;
}

/* A job's secrets are never served back (only agents get them, in their
 * register reply): their values become "<redacted>". */
static void redact_secrets(json_t *spec)
{
	json_t *sec = json_object_get(spec, "secrets"), *v;
	const char *k;

	json_object_foreach(sec, k, v) {
		if (json_is_string(v))
			json_object_set_new(sec, k, json_string("<redacted>"));
	}
}

/* The wall-clock instant the cloud clock reads `sim`, as JSON. */
static json_t *sim_ts(struct ctl *c, double sim)
{
	if (!isfinite(sim) || c->cfg.time_scale <= 0)
		return json_null();
	return ts_or_null(c->real0_ns + (int64_t)((sim - c->sim0_s) /
						  c->cfg.time_scale * 1e9));
}

/* {"at", "state", "projected_finish_at", "late_s"}: what the job is told
 * about its deadline (lib/ctl/deadline.h; recon_deadline.c records the
 * same verdicts as events), or null without a deadline. */
static json_t *deadline_json(struct ctl *c, const struct store_job *r)
{
	enum job_state st = JOB_PENDING;
	bool ended, running;
	double now, total, run;
	struct ctl_deadline d;

	if (isnan(r->deadline_s))
		return json_null();
	jobsm_parse(r->state, &st);
	ended = jobsm_terminal(st);
	running = st == JOB_RUNNING && r->run_started_ns != STORE_NULL_I64;
	now = ended && r->finished_ns != STORE_NULL_I64 ?
	      ctl__sim_at(c, r->finished_ns) : ctl__sim_now(c);
	total = r->est_work_s > 0 ? r->est_work_s : r->work_s;
	run = r->run_s + (running ? (double)(ctl__now(c) - r->run_started_ns) /
			  1e9 * c->cfg.time_scale : 0);
	ctl_deadline_eval(&(struct ctl_deadline_in){
		.now_s = now, .start_s = r->sim_start_s, .deadline_s = r->deadline_s,
		.work_total_s = total,
		.work_done_s = ctl_deadline_work_done(total, r->step == STORE_NULL_I64 ?
			-1 : r->step, r->total_steps == STORE_NULL_I64 ? -1 :
			r->total_steps, run),
		.restart_s = r->est_restart_s, .running = running, .ended = ended,
		.succeeded = st == JOB_SUCCEEDED }, &d);
	/* a miss recorded while the job ran stays one, whatever came after */
	if (r->deadline_state == 2 && d.state != CTL_DEADLINE_MISSED) {
		d.state = CTL_DEADLINE_MISSED;
		d.late_s = fmax(0, now - (r->sim_start_s + r->deadline_s));
	}
	return json_pack("{s:o,s:s,s:o,s:f}", "at",
			 sim_ts(c, r->sim_start_s + r->deadline_s), "state",
			 ctl_deadline_name(d.state), "projected_finish_at",
			 ended ? json_null() : sim_ts(c, d.projected_s),
			 "late_s", d.late_s);
}

/* The job's figures as the ledger has them (lib/finops/report.h): the
 * one source of its cost, preemptions, downtime and lost work. */
static json_t *ledger_json(const struct finops_totals *t)
{
	return json_pack("{s:I,s:I,s:I,s:I,s:f,s:I,s:f,s:I,s:I,s:f}",
			 "cost_micros", (json_int_t)t->cost,
			 "list_cost_micros", (json_int_t)t->list_cost,
			 "preemptions", (json_int_t)t->preemptions,
			 "recoveries", (json_int_t)t->recoveries,
			 "downtime_s", (double)t->downtime_ns / 1e9,
			 "lost_attempts", (json_int_t)t->lost_attempts,
			 "lost_work_s", (double)t->lost_work_ns / 1e9,
			 "lost_work_micros", (json_int_t)t->lost_work_cost,
			 "idle_cost_micros", (json_int_t)t->idle_cost,
			 "idle_fraction", t->cost > 0 ? (double)t->idle_cost /
			 (double)t->cost : 0.0);
}

json_t *ctl__job_json(struct ctl *c, struct store *s, int64_t id,
		     bool with_nodes, struct sr_err *e)
{
	return ctl__job_json_with(c, s, id, with_nodes, NULL, e);
}

json_t *ctl__job_json_with(struct ctl *c, struct store *s, int64_t id,
			   bool with_nodes, const struct finops_totals *t,
			   struct sr_err *e)
{
	struct store_job r;
	struct finops_report rep = { 0 };
	json_t *j = NULL, *spec, *pl;
	double elapsed;

	if (!t) {
		struct finops_filter f = { 0, 0, id };

		if (finops_report_build(s, &f, FINOPS_BY_TOTAL, &rep, e))
			return NULL;
		t = &rep.total;
	}
	if (store_job_load(s, id, STORE_JOB_SPEC, &r, e))
		return NULL;

	j = json_object();
	if (!j) {
		sr_err_set(e, -ENOMEM, "job view: out of memory");
		goto out;
	}
	put(j, "id", json_integer(r.id));
	put(j, "name", json_string(r.name));
	put(j, "state", json_string(r.state));
	put(j, "desired", json_string(r.desired));
	put(j, "created_at", ts_or_null(r.created_ns));
	put(j, "updated_at", ts_or_null(r.updated_ns));
	put(j, "finished_at", ts_or_null(r.finished_ns));
	put(j, "num_nodes", json_integer(r.num_nodes));
	put(j, "attempt", json_integer(r.attempt));
	put(j, "restarts", json_integer(r.restarts));
	put(j, "max_restarts", json_integer(r.max_restarts));
	/* counts and money from the ledger, as every other surface */
	put(j, "preemptions", json_integer(t->preemptions));
	put(j, "moves", json_integer(r.moves));
	put(j, "recoveries", json_integer(t->recoveries));
	put(j, "ledger", ledger_json(t));
	put(j, "exit_code", int_or_null(r.exit_code));
	put(j, "step", int_or_null(r.step));
	put(j, "total_steps", int_or_null(r.total_steps));
	put(j, "ckpt_step", int_or_null(r.ckpt_step));
	/* tier 3's recovery point: the newest step on rank 0's disk, and
	 * how old the store's newest (ckpt_step) is */
	put(j, "ckpt_local_step", int_or_null(r.ckpt_local_step));
	put(j, "ckpt_store_age_s", r.ckpt_store_ns == STORE_NULL_I64 ?
	    json_null() : json_real((ctl__now(c) - r.ckpt_store_ns) / 1e9));
	put(j, "message", json_string(r.message));
	put(j, "sim_deadline_s", real_or_null(r.deadline_s));
	put(j, "cost_micros", json_integer(t->cost));
	put(j, "spec_name", json_string(r.spec_name));
	put(j, "workdir", text_or_null(r.workdir));
	put(j, "list_cost_micros", json_integer(t->list_cost));
	spec = json_loads(r.spec_json, 0, NULL);
	redact_secrets(spec);
	pl = r.placement ? json_loads(r.placement, 0, NULL) : NULL;
	elapsed = ctl__sim_now(c) - r.sim_start_s;
	if (r.finished_ns != STORE_NULL_I64)
		elapsed = ctl__sim_at(c, r.finished_ns) - r.sim_start_s;
	put(j, "placement", pl ? pl : json_null());
	put(j, "sim_elapsed_s", json_real(elapsed));
	put(j, "spec", spec ? spec : json_null());
	/* wall-clock moment the cloud clock reaches the deadline */
	put(j, "deadline_at", isnan(r.deadline_s) ? json_null() :
	    sim_ts(c, r.sim_start_s + r.deadline_s));
	put(j, "deadline", deadline_json(c, &r));
	if (spec) {
		json_t *rs = json_object_get(spec, "resources");
		json_t *us = rs ? json_object_get(rs, "use_spot") : NULL;
		json_t *crit = json_object_get(json_object_get(spec, "spotrun"),
					       "criticality");

		put(j, "use_spot", json_incref(us ? us : json_null()));
		put(j, "criticality", json_incref(crit ? crit : json_null()));
	}
	/* null when some node's offering has no reserved price */
	put(j, "reserved_cost_micros", r.reserved_unknown ? json_null() :
	    json_integer(r.reserved_cost_micros));
	/* measured pace, cloud seconds per step */
	put(j, "sim_step_s", isnan(r.step_ns) ? json_null() :
	    json_real(r.step_ns / 1e9 * c->cfg.time_scale));
	/* declared work and the bounded estimate (workest.h) */
	put(j, "sim_work_s", json_real(r.work_s));
	put(j, "sim_work_estimate_s", json_real(r.est_work_s > 0 ? r.est_work_s :
						r.work_s));
	if (with_nodes) {
		json_t *n = NULL, *x;
		enum finops_idle_src src = r.step != STORE_NULL_I64 ?
					   FINOPS_IDLE_PROGRESS : FINOPS_IDLE_NONE;
		size_t i;

		if (ctl__nodes_json(s, id, false, 0, &n, e)) {
			json_decref(j);
			j = NULL;
			goto out;
		}
		/* where its nodes' idle comes from (recon_nodes.c bill) */
		json_array_foreach(n, i, x) {
			if (json_is_number(json_object_get(x, "gpu_util")))
				src = FINOPS_IDLE_GPU;
		}
		put(j, "nodes", n);
		put(j, "idle", json_pack("{s:s,s:s}", "source",
					 finops_idle_src_name(src), "rule",
					 finops_idle_rule(src)));
	}
	j = complete(j);
	if (!j)
		sr_err_set(e, -ENOMEM, "job view: out of memory");
out:
	store_job_free(&r);
	finops_report_free(&rep);
	return j;
}
