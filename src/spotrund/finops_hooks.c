/*
 * finops_hooks.c - turn committed job events into Slack/PagerDuty alerts.
 *
 * An event hook (lib/ctl/router.h) sees every job event once, after it is
 * committed, on the reconciler thread.  It maps events to alerts, adds the
 * job's figures from the ledger, and posts them to a background sender
 * (lib/finops/alert.h), so the reconciler never waits on the network.
 *
 *   event                                         alert
 *   type "preempted"                              preemption
 *   type "recovered" (training resumed)           recovery
 *   type "deadline_risk" (projected to finish
 *     after the deadline, or the policy fell back
 *     to on-demand to meet it)                    deadline at risk
 *   type "deadline_missed"                        deadline missed
 *   type "checkpoint_failed"                      checkpoint
 *   type "budget"                                 budget
 *   type "credentials" (creds_watch.c: a cloud's
 *     credentials run out and cannot be renewed
 *     unaided; "renewed" resolves it)             credentials
 *   transition -> SUCCEEDED/FAILED/CANCELLED      job done (dollars saved)
 *
 * Channels come from <state-dir>/alerts.json (mode 0600, see alert.h),
 * read once, on the first event.  No file = no alerts.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "ctl/ctl_int.h"
#include "finops/alert.h"
#include "finops/report.h"
#include "router.h"

#include "finops_watch.h"

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static struct ctl *g_ctl;
static struct finops_alerter *g_alerter;

static void alerts_init(void)
{
	struct finops_alert_config cfg;
	struct sr_err e;
	char path[4096];
	int rc;

	snprintf(path, sizeof path, "%s/alerts.json", ctl_state_dir(g_ctl));
	rc = finops_alert_config_load(path, &cfg, &e);
	if (rc) {
		sr_error("finops", "alerts disabled", "err=\"%s\"", sr_err_str(&e, rc));
		return;
	}
	if (!cfg.slack_url && !cfg.pd_url)
		return;
	g_alerter = finops_alerter_start(&cfg);
	if (!g_alerter) {
		sr_error("finops", "alerts disabled", "err=\"%s\"", "cannot start sender");
		finops_alert_config_free(&cfg);
		return;
	}
	sr_info("finops", "alerts enabled", "slack=%s pagerduty=%s",
		cfg.slack_url ? "yes" : "no", cfg.pd_url ? "yes" : "no");
}

static int job_facts(struct store *db, int64_t job, struct finops_alert *a)
{
	struct finops_filter f = { 0, 0, job };
	struct finops_report rep;
	struct store_stmt *st = NULL;
	struct sr_err e = { 0 };
	int rc;

	rc = store_prepare(db, "SELECT name, preemptions FROM jobs WHERE id = ?1",
			   &st, &e);
	if (rc)
		return rc;
	store_bind_i64(st, 1, job);
	rc = store_step(st, &e);
	if (rc == 1) {
		snprintf(a->job_name, sizeof a->job_name, "%s",
			 store_col_text(st, "name"));
		a->preemptions = store_col_i64(st, "preemptions");
		rc = 0;
	} else if (rc == 0) {
		rc = -SR_ENOTFOUND;
	}
	store_done(st);
	if (rc) {
		if (rc != -SR_ENOTFOUND)
			sr_error("finops", "alert: cannot read the job", "job=%lld "
				 "err=\"%s\"", (long long)job, sr_err_str(&e, rc));
		return rc;
	}
	if (finops_report_build(db, &f, FINOPS_BY_TOTAL, &rep, &e) == 0) {
		a->cost = rep.total.cost;
		/* the headline: on-demand for the node-hours used (0 for a
		 * FAILED or CANCELLED job: its cost is waste) */
		a->saved = rep.total.savings_vs_list;
		finops_report_free(&rep);
	}
	return rc;
}

static const char *str(const json_t *ev, const char *key)
{
	const char *s = json_string_value(json_object_get(ev, key));

	return s ? s : "";
}

/* Which alert (if any) an event is: 1 and *k, or 0 = none. */
static int classify(const json_t *ev, enum finops_alert_kind *k,
		    enum finops_severity *sev)
{
	const char *type = str(ev, "type"), *to = str(ev, "to");
	const char *msg = str(ev, "message");

	*sev = FINOPS_SEV_WARNING;
	if (!strcmp(type, "preempted")) {
		*k = FINOPS_ALERT_PREEMPTION;
		return 1;
	}
	if (!strcmp(type, "recovered")) {
		*k = FINOPS_ALERT_RECOVERY;
		*sev = FINOPS_SEV_INFO;
		return 1;
	}
	if (!strcmp(type, "checkpoint_failed")) {
		*k = FINOPS_ALERT_CHECKPOINT;
		*sev = FINOPS_SEV_ERROR;
		return 1;
	}
	if (!strcmp(type, "credentials")) {
		*k = FINOPS_ALERT_CREDENTIALS;
		*sev = !strncmp(msg, "renewed", 7) ? FINOPS_SEV_INFO :
		       strstr(msg, "expired") ? FINOPS_SEV_ERROR : FINOPS_SEV_WARNING;
		return 1;
	}
	if (!strcmp(type, "deadline_risk")) {
		*k = FINOPS_ALERT_DEADLINE_RISK;
		*sev = FINOPS_SEV_ERROR;
		return 1;
	}
	if (!strcmp(type, "deadline_missed")) {
		*k = FINOPS_ALERT_DEADLINE_MISSED;
		*sev = FINOPS_SEV_CRITICAL;
		return 1;
	}
	if (!strcmp(type, "budget") || !strcmp(type, "autostop")) {
		*k = FINOPS_ALERT_BUDGET;
		*sev = strstr(msg, "stop") ? FINOPS_SEV_CRITICAL : FINOPS_SEV_WARNING;
		return 1;
	}
	if (strcmp(type, "transition"))
		return 0;
	if (!strcmp(to, "SUCCEEDED") || !strcmp(to, "FAILED") ||
	    !strcmp(to, "CANCELLED")) {
		*k = FINOPS_ALERT_JOB_DONE;
		*sev = strcmp(to, "SUCCEEDED") ? FINOPS_SEV_WARNING : FINOPS_SEV_INFO;
		return 1;
	}
	return 0;
}

void finops_hooks_alert(struct ctl *c, struct finops_alert *a)
{
	char host[64] = "localhost";

	g_ctl = c;
	pthread_once(&g_once, alerts_init);
	if (!g_alerter)
		return;
	gethostname(host, sizeof host - 1);
	snprintf(a->source, sizeof a->source, "spotrund@%s", host);
	if (finops_alerter_post(g_alerter, a))
		sr_warn("finops", "alert dropped: queue full", "kind=%s",
			finops_alert_kind_name(a->kind));
}

static void on_event(struct ctl *c, const json_t *ev)
{
	struct finops_alert a;
	enum finops_alert_kind k;
	enum finops_severity sev;
	struct store *db;
	char host[64] = "localhost";

	g_ctl = c;
#ifndef CTL_TICK_HOOK
	/* no tick hook in this daemon: check budgets as events flow */
	if (ctl__store(c))
		finops_watch_tick(c, ctl__store(c));
#endif
	pthread_once(&g_once, alerts_init);
	if (!g_alerter)
		return;
	if (!classify(ev, &k, &sev))
		return;
	memset(&a, 0, sizeof a);
	a.kind = k;
	a.severity = sev;
	a.job_id = json_integer_value(json_object_get(ev, "job_id"));
	db = ctl__store(c);
	if (!db || job_facts(db, a.job_id, &a))
		return;
	gethostname(host, sizeof host - 1);
	snprintf(a.source, sizeof a.source, "spotrund@%s", host);
	a.resolve_all = k == FINOPS_ALERT_JOB_DONE;
	if (k == FINOPS_ALERT_JOB_DONE && strcmp(str(ev, "to"), "SUCCEEDED"))
		snprintf(a.summary, sizeof a.summary,
			 "job %lld %s %s: cost $%.2f, all of it waste (no saving), "
			 "%lld preemption(s)", (long long)a.job_id, a.job_name,
			 str(ev, "to"), sr_money_to_usd(a.cost),
			 (long long)a.preemptions);
	else if (k == FINOPS_ALERT_JOB_DONE)
		snprintf(a.summary, sizeof a.summary,
			 "job %lld %s %s: cost $%.2f, saved %s$%.2f vs on-demand "
			 "for the hours used, %lld preemption(s)", (long long)a.job_id,
			 a.job_name, str(ev, "to"), sr_money_to_usd(a.cost),
			 a.saved < 0 ? "-" : "", sr_money_to_usd(a.saved < 0 ?
			 -a.saved : a.saved), (long long)a.preemptions);
	else
		snprintf(a.summary, sizeof a.summary, "job %lld %s: %s",
			 (long long)a.job_id, a.job_name, str(ev, "message"));
	if (finops_alerter_post(g_alerter, &a))
		sr_warn("finops", "alert dropped: queue full", "job=%lld",
			(long long)a.job_id);
}

CTL_EVENT_HOOK(on_event)
