/*
 * finops_watch.c - budgets and autostop, enforced from the reconciler.
 *
 * Once a second (on the reconciler thread, through a tick hook), for every
 * job that is not finished and not already being cancelled:
 *
 *   budget   spend so far and the current hourly rate come from the
 *            ledger; finops_budget_decide() gives the verdict.
 *              ALERT, EXCEEDED  -> one `budget` event per verdict
 *              STOP             -> `budget` event, then the job state
 *                                  machine's cancel, as the API does
 *                                  (jobsm_cancel: desired = cancel and a
 *                                  `cancel_requested` event), wake the
 *                                  reconciler, which stops the nodes
 *   autostop every live node of the job has been idle (ledger: no workload
 *            running, or utilisation under the threshold) for at least
 *            spotrun.autostop of cloud time -> `autostop` event + cancel
 *
 * The events are what alerts are sent from (finops_hooks.c).  Each
 * verdict is recorded once per job (deduplicated on the event's
 * data.verdict), so a restart does not repeat alerts.  All decisions are
 * in lib/finops/policy.c; this file only reads and writes the database.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/timeutil.h"
#include "ctl/ctl_int.h"
#include "ctl/jobsm.h"
#include "finops/alert.h"
#include "finops/budget.h"
#include "finops/fconf.h"
#include "finops/policy.h"
#include "market/jobspec.h"
#include "router.h"

#include "finops_watch.h"

#define TICK_EVERY_NS SR_NS_PER_SEC
#define BUDGET_EVERY_NS (2 * SR_NS_PER_SEC)

/* Has the job an event of `type` whose data.verdict is `verdict`?  (When
 * the store cannot tell: yes, staying quiet rather than repeating.) */
static int already_recorded(struct store *db, int64_t job, const char *type,
			    const char *verdict)
{
	struct store_stmt *st = NULL;
	struct sr_err e = { 0 };
	int found = 0, rc;

	if (store_prepare(db, "SELECT data FROM events WHERE job_id = ?1 AND"
			  " type = ?2 AND data IS NOT NULL", &st, &e))
		return 1;
	store_bind_i64(st, 1, job);
	store_bind_text(st, 2, type);
	while (!found && (rc = store_step(st, &e)) == 1) {
		json_t *d = json_loads(store_col_text(st, "data"), 0, NULL);
		const char *v = json_string_value(json_object_get(d, "verdict"));

		found = v && strcmp(v, verdict) == 0;
		json_decref(d);
	}
	store_done(st);
	return found || rc < 0;
}

/* One transaction: the event, and when `stop`, the cancel - the job state
 * machine's, as the API's cancel does (jobsm_cancel). */
static int record(struct ctl *c, struct store *db, int64_t job,
		  const char *type, json_t *data, const char *msg, int stop)
{
	int64_t now = sr_time_real_ns();
	double sim = ctl__sim_at(c, now);
	struct sr_err e = { 0 };
	int rc;

	rc = store_begin(db, &e);
	if (rc)
		goto out;
	rc = ctl_event_append(db, job, type, NULL, NULL, 0, now, sim, data, msg, &e);
	if (!rc && stop) {
		rc = jobsm_cancel(db, job, now, sim, msg, &e);
		rc = rc < 0 ? rc : 0;
	}
	rc = store_end(db, rc, &e);
out:
	if (rc)
		sr_error("finops", "cannot record", "job=%lld type=%s err=\"%s\"",
			 (long long)job, type, sr_err_str(&e, rc));
	else if (stop)
		ctl__wake(c);
	return rc;
}

static void check_budget(struct ctl *c, struct store *db, int64_t job,
			 const struct finops_policy *p, int64_t now)
{
	enum finops_budget_verdict v;
	sr_micros spent = 0, hourly = 0;
	struct sr_err e;
	char why[200], msg[256];
	const char *name;
	json_t *data;

	if (p->max_cost <= 0 && p->max_hourly_cost <= 0)
		return;
	if (finops_job_spend(db, job, now, 3 * c->cfg.bill_interval_ms * 1000000,
			     &spent, &hourly, &e))
		return;
	v = finops_budget_decide(p, spent, hourly, why, sizeof why);
	if (v == FINOPS_BUDGET_OK)
		return;
	name = finops_budget_verdict_name(v);
	if (already_recorded(db, job, "budget", name))
		return;
	snprintf(msg, sizeof msg, "budget: %s%s", why,
		 v == FINOPS_BUDGET_STOP ? ": stopping the job" :
		 v == FINOPS_BUDGET_EXCEEDED ? ": over the limit" : "");
	data = json_pack("{s:s, s:I, s:I, s:I, s:I}", "verdict", name,
			 "spent_micros", (json_int_t)spent,
			 "hourly_micros", (json_int_t)hourly,
			 "max_cost_micros", (json_int_t)p->max_cost,
			 "max_hourly_cost_micros", (json_int_t)p->max_hourly_cost);
	record(c, db, job, "budget", data, msg, v == FINOPS_BUDGET_STOP);
	json_decref(data);
}

static void check_autostop(struct ctl *c, struct store *db, int64_t job,
			   const struct finops_policy *p, int64_t now)
{
	struct store_stmt *st = NULL;
	struct sr_err e = { 0 };
	int64_t oldest = -1;
	int nodes = 0, idle = 0, rc;
	char dur[32], msg[160];
	json_t *data;

	if (p->autostop_idle_ns <= 0)
		return;
	/* the gang's nodes: a warm spare idles by design (recon_spare.c) */
	if (store_prepare(db, "SELECT id FROM nodes WHERE job_id = ?1 AND"
			  " state NOT IN ('TERMINATED', 'LOST') AND"
			  " (spare = 0 OR adopted_ns IS NOT NULL)", &st, &e))
		return;
	store_bind_i64(st, 1, job);
	while ((rc = store_step(st, &e)) == 1) {
		int64_t since = -1;

		nodes++;
		if (finops_idle_since(db, store_col_i64(st, "id"), &since, &e) ||
		    since < 0)
			break;
		/* idle time in cloud ns (the ledger is wall clock) */
		if (!finops_autostop_due(p, 0, (int64_t)((double)(now - since) *
							 c->cfg.time_scale)))
			break;
		idle++;
		if (oldest < 0 || since < oldest)
			oldest = since;
	}
	store_done(st);
	if (rc < 0)
		sr_error("finops", "autostop check failed", "job=%lld err=\"%s\"",
			 (long long)job, sr_err_str(&e, rc));
	if (rc < 0 || nodes == 0 || idle != nodes)
		return;
	sr_dur_format(p->autostop_idle_ns, dur, sizeof dur);
	snprintf(msg, sizeof msg, "autostop: every node idle for %s: stopping the "
		 "job", dur);
	data = json_pack("{s:s, s:I}", "verdict", "autostop", "autostop_ns",
			 (json_int_t)p->autostop_idle_ns);
	record(c, db, job, "autostop", data, msg, 1);
	json_decref(data);
}

/* One budget: its forecast, and an alert for each level newly reached
 * (budget_alerts records it first, so each crossing alerts once, also
 * across restarts and daemons sharing the store). */
static void check_team_budget(struct ctl *c, struct store *db,
			      const struct finops_conf *conf,
			      const struct finops_budget *b, int64_t now)
{
	static const int levels[] = { 80, 100 };
	struct finops_forecast f;
	struct sr_err e = { 0 };
	int rc = finops_budget_forecast(db, conf, b, now, c->cfg.time_scale, &f, &e);

	if (rc) {
		sr_error("finops", "budget forecast failed", "err=\"%s\"",
			 sr_err_str(&e, rc));
		return;
	}
	for (size_t i = 0; i < sizeof levels / sizeof levels[0]; i++) {
		struct finops_alert a;

		if (f.level < levels[i])
			continue;
		rc = finops_budget_crossed(db, b, &f, levels[i], now, &e);
		if (rc <= 0) {
			if (rc < 0)
				sr_error("finops", "budget alert not recorded",
					 "err=\"%s\"", sr_err_str(&e, rc));
			continue;
		}
		memset(&a, 0, sizeof a);
		a.kind = FINOPS_ALERT_TEAM_BUDGET;
		a.severity = levels[i] >= 100 ? FINOPS_SEV_CRITICAL : FINOPS_SEV_WARNING;
		snprintf(a.budget, sizeof a.budget, "%s %s",
			 finops_budget_scope_name(b->scope), b->name);
		snprintf(a.month, sizeof a.month, "%s", f.month);
		a.level = levels[i];
		a.cost = f.spent;
		a.forecast = f.forecast;
		a.budget_micros = f.budget;
		snprintf(a.summary, sizeof a.summary, "%s: month-end forecast $%.2f "
			 "is %d%% of its $%.2f budget for %s (spent $%.2f, shared "
			 "$%.2f, running jobs' plans $%.2f, run rate $%.2f)", a.budget,
			 sr_money_to_usd(f.forecast),
			 (int)(100 * (double)f.forecast / (double)f.budget),
			 sr_money_to_usd(f.budget), f.month, sr_money_to_usd(f.spent),
			 sr_money_to_usd(f.shared + f.shared_rest),
			 sr_money_to_usd(f.planned), sr_money_to_usd(f.run_rate_rest));
		sr_info("finops", "budget crossed", "budget=\"%s\" level=%d",
			a.budget, a.level);
		finops_hooks_alert(c, &a);
	}
}

void finops_watch_budgets(struct ctl *c, struct store *db, int64_t now_ns)
{
	struct finops_conf conf;
	struct sr_err e = { 0 };
	char path[2200];
	int rc;

	snprintf(path, sizeof path, "%s/finops.json", ctl_state_dir(c));
	rc = finops_conf_load(path, &conf, &e);
	if (rc) {
		sr_error("finops", "budgets not checked", "err=\"%s\"",
			 sr_err_str(&e, rc));
		return;
	}
	for (size_t i = 0; i < conf.nbudgets; i++)
		check_team_budget(c, db, &conf, &conf.budgets[i], now_ns);
	finops_conf_free(&conf);
}

void finops_watch_tick(struct ctl *c, struct store *db)
{
	static int64_t last_budget;
	static int64_t last;
	int64_t now = sr_time_real_ns();
	struct store_stmt *st = NULL;
	struct sr_err e = { 0 };
	struct watch_job {
		int64_t id;
		struct finops_policy p;
	} *jobs = NULL, *v;
	size_t n = 0;
	int rc;

	if (now - last < TICK_EVERY_NS)
		return;
	last = now;
	if (now - last_budget >= BUDGET_EVERY_NS) {
		last_budget = now;
		finops_watch_budgets(c, db, now);
	}
	if (store_prepare(db, "SELECT id, spec_json FROM jobs WHERE desired = 'run'"
			  " AND state NOT IN ('SUCCEEDED', 'FAILED', 'CANCELLED')",
			  &st, &e))
		return;
	/* collect first: the checks write, and a write must not run under
	 * an open read of the same rows */
	while ((rc = store_step(st, &e)) == 1) {
		json_t *j = json_loads(store_col_text(st, "spec_json"), 0, NULL);
		struct jobspec js;

		if (!j || jobspec_from_json(j, &js, &e)) {
			json_decref(j);
			continue;
		}
		json_decref(j);
		v = realloc(jobs, (n + 1) * sizeof *jobs);
		if (!v) {
			jobspec_free(&js);
			rc = sr_err_set(&e, -ENOMEM, "out of memory");
			break;
		}
		jobs = v;
		jobs[n].id = store_col_i64(st, "id");
		finops_policy_from_jobspec(&js, &jobs[n].p);
		jobspec_free(&js);
		n++;
	}
	store_done(st);
	if (rc < 0)
		sr_error("finops", "cannot list the jobs to watch", "err=\"%s\"",
			 sr_err_str(&e, rc));
	for (size_t i = 0; i < n; i++) {
		check_budget(c, db, jobs[i].id, &jobs[i].p, now);
		check_autostop(c, db, jobs[i].id, &jobs[i].p, now);
	}
	free(jobs);
}

#ifdef CTL_TICK_HOOK
CTL_TICK_HOOK(finops_watch_tick)
#endif
