/*
 * finops_watch.c - budgets and autostop, enforced from the reconciler.
 *
 * Once a second (on the reconciler thread, through a tick hook), for every
 * job that is not finished and not already being cancelled:
 *
 *   budget   spend so far and the current hourly rate come from the
 *            ledger; finops_budget_decide() gives the verdict.
 *              ALERT, EXCEEDED  -> one `budget` event per verdict
 *              STOP             -> `budget` event, then the same cancel
 *                                  the API does (desired = cancel,
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
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "common/timeutil.h"
#include "ctl/ctl_int.h"
#include "ctl/db.h"
#include "ctl/jobsm.h"
#include "finops/policy.h"
#include "market/jobspec.h"
#include "router.h"

#include "finops_watch.h"

#define TICK_EVERY_NS SR_NS_PER_SEC

static int already_recorded(sqlite3 *db, int64_t job, const char *type,
			    const char *verdict)
{
	sqlite3_stmt *st = NULL;
	int found = 0;

	if (sqlite3_prepare_v2(db, "SELECT 1 FROM events WHERE job_id = ?1 AND"
			       " type = ?2 AND json_extract(data, '$.verdict') = ?3"
			       " LIMIT 1", -1, &st, NULL) != SQLITE_OK)
		return 1; /* cannot tell: stay quiet rather than repeat */
	sqlite3_bind_int64(st, 1, job);
	sqlite3_bind_text(st, 2, type, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, verdict, -1, SQLITE_STATIC);
	found = sqlite3_step(st) == SQLITE_ROW;
	sqlite3_finalize(st);
	return found;
}

/* One transaction: the event, and when `stop`, the cancel. */
static int record(struct ctl *c, sqlite3 *db, int64_t job, const char *type,
		  json_t *data, const char *msg, int stop)
{
	int64_t now = sr_time_real_ns();
	double sim = ctl__sim_at(c, now);
	sqlite3_stmt *st = NULL;
	struct sr_err e = { 0 };
	int rc;

	rc = ctl_db_begin(db, &e);
	if (rc)
		goto out;
	rc = ctl_event_add(db, job, type, NULL, NULL, 0, now, sim, data, msg, &e);
	if (!rc && stop) {
		rc = ctl_db_prepare(db, "UPDATE jobs SET desired = 'cancel'"
				    " WHERE id = ?1 AND desired = 'run'", &st, &e);
		if (!rc) {
			sqlite3_bind_int64(st, 1, job);
			rc = ctl_db_step_done(db, st, &e, "finops cancel");
			sqlite3_finalize(st);
		}
		if (!rc)
			rc = ctl_event_add(db, job, "cancel_requested", NULL, NULL, 0,
					   now, sim, NULL, msg, &e);
	}
	if (!rc)
		rc = ctl_db_commit(db, &e);
	else
		ctl_db_rollback(db);
out:
	if (rc)
		sr_error("finops", "cannot record", "job=%lld type=%s err=\"%s\"",
			 (long long)job, type, sr_err_str(&e, rc));
	else if (stop)
		ctl__wake(c);
	return rc;
}

static void check_budget(struct ctl *c, sqlite3 *db, int64_t job,
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

static void check_autostop(struct ctl *c, sqlite3 *db, int64_t job,
			   const struct finops_policy *p, int64_t now)
{
	sqlite3_stmt *st = NULL;
	int64_t oldest = -1;
	int nodes = 0, idle = 0;
	char dur[32], msg[160];
	json_t *data;

	if (p->autostop_idle_ns <= 0)
		return;
	if (sqlite3_prepare_v2(db, "SELECT id FROM nodes WHERE job_id = ?1 AND"
			       " state NOT IN ('TERMINATED', 'LOST')", -1, &st,
			       NULL) != SQLITE_OK)
		return;
	sqlite3_bind_int64(st, 1, job);
	while (sqlite3_step(st) == SQLITE_ROW) {
		int64_t since = -1;
		struct sr_err e;

		nodes++;
		if (finops_idle_since(db, sqlite3_column_int64(st, 0), &since, &e) ||
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
	sqlite3_finalize(st);
	if (nodes == 0 || idle != nodes)
		return;
	sr_dur_format(p->autostop_idle_ns, dur, sizeof dur);
	snprintf(msg, sizeof msg, "autostop: every node idle for %s: stopping the "
		 "job", dur);
	data = json_pack("{s:s, s:I}", "verdict", "autostop", "autostop_ns",
			 (json_int_t)p->autostop_idle_ns);
	record(c, db, job, "autostop", data, msg, 1);
	json_decref(data);
}

void finops_watch_tick(struct ctl *c, sqlite3 *db)
{
	static int64_t last;
	int64_t now = sr_time_real_ns();
	sqlite3_stmt *st = NULL;

	if (now - last < TICK_EVERY_NS)
		return;
	last = now;
	if (sqlite3_prepare_v2(db, "SELECT id, spec_json FROM jobs WHERE desired = 'run'"
			       " AND state NOT IN ('SUCCEEDED', 'FAILED', 'CANCELLED')",
			       -1, &st, NULL) != SQLITE_OK)
		return;
	while (sqlite3_step(st) == SQLITE_ROW) {
		int64_t job = sqlite3_column_int64(st, 0);
		const char *spec = (const char *)sqlite3_column_text(st, 1);
		json_t *j = spec ? json_loads(spec, 0, NULL) : NULL;
		struct finops_policy p;
		struct jobspec js;
		struct sr_err e;

		if (!j || jobspec_from_json(j, &js, &e)) {
			json_decref(j);
			continue;
		}
		json_decref(j);
		finops_policy_from_jobspec(&js, &p);
		jobspec_free(&js);
		check_budget(c, db, job, &p, now);
		check_autostop(c, db, job, &p, now);
	}
	sqlite3_finalize(st);
}

#ifdef CTL_TICK_HOOK
CTL_TICK_HOOK(finops_watch_tick)
#endif
