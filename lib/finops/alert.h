/*
 * alert.h - FinOps alerts to Slack incoming webhooks and PagerDuty Events
 * API v2, delivered by a background sender with retries and backoff.
 *
 * Events: preemption, recovery, deadline at risk, budget (alert/exceeded/
 * stop), job done (with the dollars saved).  Each channel subscribes to a
 * set of events.  PagerDuty incidents are keyed by dedup_key
 * "spotrun/job-<id>/<topic>": a preemption triggers topic "preemption"
 * and the recovery resolves it; deadline risk and budget trigger their own
 * topics, and the job's end resolves every topic it opened.
 *
 * Config file (JSON, must be mode 0600 - it holds secrets):
 *
 *   {"slack": {"webhook_url": "https://hooks.slack.com/services/...",
 *              "events": ["preemption", "recovery", ...]},      optional
 *    "pagerduty": {"routing_key": "R0...",
 *                  "url": "https://events.pagerduty.com/v2/enqueue", optional
 *                  "events": [...]}}                             optional
 *
 * Webhook URLs and routing keys are registered with sr_log_secret() when
 * loaded, so they never appear in a log line.
 */
#ifndef SR_FINOPS_ALERT_H
#define SR_FINOPS_ALERT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/err.h"
#include "common/http.h"
#include "common/money.h"

enum finops_alert_kind {
	FINOPS_ALERT_PREEMPTION = 0,
	FINOPS_ALERT_RECOVERY,
	FINOPS_ALERT_DEADLINE_RISK,
	FINOPS_ALERT_BUDGET,
	FINOPS_ALERT_JOB_DONE,
	FINOPS_ALERT_CHECKPOINT,  /* checkpoints not reaching the object store */
	FINOPS_ALERT_DEADLINE_MISSED, /* the deadline passed, the job not done */
	FINOPS_ALERT_CREDENTIALS, /* a cloud's credentials run out unrenewed */
	FINOPS_ALERT_TEAM_BUDGET, /* a team's or project's month-end forecast
				     crossed 80% or 100% of its budget
				     (budget.h); job_id 0, `budget` says whose */
	FINOPS_ALERT_NKINDS
};

/* "preemption", "recovery", "deadline_risk", "budget", "job_done",
 * "checkpoint", "deadline_missed", "credentials", "team_budget". */
const char *finops_alert_kind_name(enum finops_alert_kind k);
int finops_alert_kind_parse(const char *s, enum finops_alert_kind *out);

enum finops_severity { FINOPS_SEV_INFO, FINOPS_SEV_WARNING, FINOPS_SEV_ERROR,
		       FINOPS_SEV_CRITICAL };

struct finops_alert {
	enum finops_alert_kind kind;
	enum finops_severity severity;
	int64_t job_id;
	char job_name[128];
	char summary[512];       /* one line; PagerDuty truncates at 1024 */
	char source[128];        /* e.g. "spotrund@host" */
	/* figures (shown in Slack blocks and PagerDuty custom_details) */
	sr_micros cost;
	sr_micros saved;         /* vs on-demand for the node-hours used
	                            (report.h savings_vs_list; 0 for a FAILED
	                            or CANCELLED job); negative = over */
	int64_t preemptions;
	bool resolve_all;        /* job ended: resolve every open PD topic */
	/* FINOPS_ALERT_TEAM_BUDGET: whose ("team ml"), the month, the level
	 * crossed (80, 100), the forecast and the budget; PagerDuty dedup
	 * key "spotrun/budget/<scope>-<name>/<month>/<level>" */
	char budget[80];
	char month[8];
	int level;
	sr_micros forecast, budget_micros;
};

#define FINOPS_PD_URL_DEFAULT "https://events.pagerduty.com/v2/enqueue"

struct finops_alert_config {
	char *slack_url;             /* NULL = no Slack */
	unsigned slack_events;       /* bit per enum finops_alert_kind */
	char *pd_url;                /* NULL = no PagerDuty */
	char *pd_routing_key;
	unsigned pd_events;
	struct sr_http_opts http;    /* timeouts, retries, backoff */
};

/* Load the config file.  A missing file is an empty config (no channel).
 * A file readable or writable by group/others is refused (-EPERM), and
 * every bad field is -SR_EPARSE naming it.  Free with
 * finops_alert_config_free. */
int finops_alert_config_load(const char *path, struct finops_alert_config *c,
			     struct sr_err *e);
/* Parse from a JSON object (no permission check). */
int finops_alert_config_parse(json_t *j, struct finops_alert_config *c,
			      struct sr_err *e);
/* Durably write `j` (validated first) to path with mode 0600. */
int finops_alert_config_save(const char *path, json_t *j, struct sr_err *e);
void finops_alert_config_free(struct finops_alert_config *c); /* NULL-safe */

/* The exact request bodies (new references; NULL on ENOMEM).  `action`
 * for PagerDuty is "trigger" or "resolve"; `topic` picks the dedup key. */
json_t *finops_alert_slack_body(const struct finops_alert *a);
json_t *finops_alert_pd_body(const struct finops_alert *a,
			     const char *routing_key, const char *action,
			     const char *topic);

/* Deliver one alert now, synchronously, to every subscribed channel.
 * Returns 0 when every channel accepted it (Slack: 200 with body "ok";
 * PagerDuty: 202), else the first failure with *e set (no secret in it). */
int finops_alert_send(const struct finops_alert_config *c,
		      const struct finops_alert *a, struct sr_err *e);

/* Background sender: a thread draining a bounded queue. */
struct finops_alerter;

/* Takes ownership of *c (zeroed on return).  NULL on ENOMEM. */
struct finops_alerter *finops_alerter_start(struct finops_alert_config *c);
/* Queue a copy; never blocks.  -ENOBUFS when the queue is full (the alert
 * is dropped and counted). */
int finops_alerter_post(struct finops_alerter *s, const struct finops_alert *a);
/* Wait until the queue is empty and nothing is in flight, up to
 * timeout_ms.  0 or -SR_ETIMEOUT. */
int finops_alerter_flush(struct finops_alerter *s, long timeout_ms);
/* Counters: delivered alerts, failed alerts, dropped alerts. */
void finops_alerter_stats(struct finops_alerter *s, uint64_t *sent,
			  uint64_t *failed, uint64_t *dropped);
/* Flush (bounded) and stop; NULL-safe. */
void finops_alerter_stop(struct finops_alerter *s);

#endif
