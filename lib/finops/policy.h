/*
 * policy.h - the FinOps decisions spotrund's reconciler asks for each tick:
 * is this node busy, should this idle node be torn down (autostop), and
 * what does the job's budget say (ok / alert / stop).
 *
 * The functions are pure (no I/O) except the *_from_ledger helpers, which
 * read the ledger.  State needed across ticks (how long a node has been
 * idle, how much a job has spent) is derived from the ledger, so the
 * daemon keeps none outside its database.
 *
 * Job YAML (the `spotrun:` section; parsed from JSON here):
 *
 *   spotrun:
 *     autostop: {idle_minutes: 30}          tear a node down after 30 min idle
 *     idle_util_threshold: 0.10             busy means utilisation >= 10 %
 *     budget:
 *       max_cost: "$50"                     whole job
 *       max_hourly_cost: "$4.50"            current burn rate of its nodes
 *       alert_at: 0.8                       first alert at 80 % of a limit
 *       on_exceed: stop                     alert (default) | stop
 */
#ifndef SR_FINOPS_POLICY_H
#define SR_FINOPS_POLICY_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/err.h"
#include "common/money.h"
#include "store/store.h"

#define FINOPS_IDLE_UTIL_DEFAULT_PERMILLE 100 /* 10 % */

struct finops_policy {
	int64_t autostop_idle_ns;      /* 0 = never tear down for idleness */
	int idle_util_permille;        /* busy iff utilisation >= this */
	sr_micros max_cost;            /* 0 = no limit */
	sr_micros max_hourly_cost;     /* 0 = no limit */
	int alert_at_permille;         /* first alert at this share; default 800 */
	bool stop_on_exceed;           /* on_exceed: stop */
};

/* Defaults: no autostop, 10 % threshold, no budget, alert at 80 %. */
void finops_policy_default(struct finops_policy *p);

/* Parse the `spotrun` object of a job spec (as JSON; keys above).  Missing
 * keys keep their defaults; unknown keys inside autostop/budget and bad
 * values are -SR_EPARSE naming the field ("spotrun.budget.max_cost: ..."). */
int finops_policy_parse(json_t *spotrun, struct finops_policy *p,
			struct sr_err *e);

struct jobspec;

/* From a parsed job file (lib/market/jobspec.h): spotrun.max_cost,
 * spotrun.max_hourly_cost and spotrun.autostop.  Limits given there are
 * hard: alert at alert_at (80 %), stop at 100 %. */
void finops_policy_from_jobspec(const struct jobspec *js, struct finops_policy *p);

/* A node is busy when a workload runs on it and its utilisation sample
 * (permille, -1 unknown) is at least the threshold.  The samples are the
 * GPU's where the node reports it (NVML), else the workload's progress
 * (1 while a training step came in the last FINOPS_IDLE_PROGRESS_S, 0
 * after: lib/agent/stepstat.h, lib/store store_hb), never CPU load.
 * Unknown utilisation with a running workload counts as busy. */
bool finops_node_is_busy(bool workload_running, int util_permille,
			 int threshold_permille);

/* = STEPSTAT_IDLE_S (lib/agent/stepstat.h; tests/unit/test_agent_stepstat.c
 * checks they agree) */
#define FINOPS_IDLE_PROGRESS_S 60

/* Where a node's busy/idle comes from, and the rule in words (shown by
 * spotrun status, spotrun cost and the dashboard). */
enum finops_idle_src { FINOPS_IDLE_NONE, FINOPS_IDLE_PROGRESS, FINOPS_IDLE_GPU };
const char *finops_idle_src_name(enum finops_idle_src s); /* "gpu" ... */
const char *finops_idle_rule(enum finops_idle_src s);
/* The rule for every node, in one line. */
extern const char finops_idle_rule_all[];

/* Autostop: true when the node has been idle for at least the policy's
 * idle time.  idle_since_ns is when its current idle streak began (see
 * finops_idle_since); -1 = not idle. */
bool finops_autostop_due(const struct finops_policy *p, int64_t idle_since_ns,
			 int64_t now_ns);

/* From the ledger: the end of the node's last busy interval, or the start
 * of its first interval if it was never busy; -1 if its last interval
 * was busy or it has none. */
int finops_idle_since(struct store *db, int64_t node_id,
		      int64_t *idle_since_ns, struct sr_err *e);

enum finops_budget_verdict {
	FINOPS_BUDGET_OK = 0,
	FINOPS_BUDGET_ALERT,     /* passed alert_at of a limit: send a warning */
	FINOPS_BUDGET_EXCEEDED,  /* over a limit, on_exceed alert: alert only */
	FINOPS_BUDGET_STOP,      /* over a limit, on_exceed stop: alert, stop */
};

const char *finops_budget_verdict_name(enum finops_budget_verdict v);

/* Budget decision for a job that has spent `spent` so far and whose live
 * nodes cost `hourly` per hour now.  *why (may be NULL) gets a sentence
 * naming the limit, e.g. "cost $41.20 reached 82% of max_cost $50.00". */
enum finops_budget_verdict
finops_budget_decide(const struct finops_policy *p, sr_micros spent,
		     sr_micros hourly, char *why, size_t why_len);

/* From the ledger: a job's spend so far and its current hourly rate (sum
 * of unit prices of its rows in the latest billed interval of each of
 * its nodes that ended within `live_window_ns` of now). */
int finops_job_spend(struct store *db, int64_t job_id, int64_t now_ns,
		     int64_t live_window_ns, sr_micros *spent,
		     sr_micros *hourly, struct sr_err *e);

#endif
