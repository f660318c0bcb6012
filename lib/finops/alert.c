/*
 * alert.c - Slack / PagerDuty alert payloads, config and delivery.
 *
 * Routing per alert kind (PagerDuty):
 *
 *   kind            action    topic           severity
 *   preemption      trigger   preemption      warning
 *   recovery        resolve   preemption      -
 *   deadline_risk   trigger   deadline        error
 *   budget          trigger   budget          warning / critical (stop)
 *   checkpoint      trigger   checkpoint      error
 *   deadline_missed trigger   deadline-missed critical (never resolved
 *                                                     by spotrun: a fact)
 *   job_done        resolve   every topic     -      (resolve_all; not
 *                                                     deadline-missed)
 *   team_budget     trigger   (own key)       warning (80%) / critical
 *                   dedup_key "spotrun/budget/<scope>-<name>/<month>/<level>"
 *
 * dedup_key = "spotrun/job-<id>/<topic>", so a resolve matches its
 * trigger.  Slack gets one message per alert.
 *
 * Delivery: lib/common/http retries transport errors, 429 and 5xx with
 * exponential backoff and jitter, and returns other 4xx at once.  The
 * sender thread delivers alerts in order; a failure is logged (without the
 * URL or key) and counted, and the next alert goes on.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "alert.h"
#include "common/fsutil.h"
#include "common/json.h"
#include "common/log.h"
#include "common/url.h"

#define QUEUE_MAX 256

static const char *const kind_names[FINOPS_ALERT_NKINDS] = {
	"preemption", "recovery", "deadline_risk", "budget", "job_done",
	"checkpoint", "deadline_missed", "credentials", "team_budget",
};
static const char *const kind_titles[FINOPS_ALERT_NKINDS] = {
	"Spot preemption", "Recovered", "Deadline at risk", "Budget",
	"Job done", "Checkpoints not reaching the object store",
	"Deadline missed", "Cloud credentials running out",
	"Budget forecast",
};
static const char *const sev_names[] = { "info", "warning", "error", "critical" };

#define ALL_EVENTS ((1u << FINOPS_ALERT_NKINDS) - 1)

const char *finops_alert_kind_name(enum finops_alert_kind k)
{
	return (unsigned)k < FINOPS_ALERT_NKINDS ? kind_names[k] : NULL;
}

int finops_alert_kind_parse(const char *s, enum finops_alert_kind *out)
{
	for (int i = 0; s && i < FINOPS_ALERT_NKINDS; i++) {
		if (!strcmp(s, kind_names[i])) {
			*out = (enum finops_alert_kind)i;
			return 0;
		}
	}
	return -EINVAL;
}

void finops_alert_config_free(struct finops_alert_config *c)
{
	if (!c)
		return;
	free(c->slack_url);
	free(c->pd_url);
	free(c->pd_routing_key);
	memset(c, 0, sizeof *c);
}

static int parse_events(json_t *ch, const char *ctx, unsigned *mask,
			struct sr_err *e)
{
	json_t *arr = json_object_get(ch, "events"), *v;
	size_t i;

	*mask = ALL_EVENTS;
	if (!arr || json_is_null(arr))
		return 0;
	if (!json_is_array(arr))
		return sr_err_set(e, -SR_EPARSE, "%s.events: expected a list", ctx);
	*mask = 0;
	json_array_foreach(arr, i, v) {
		enum finops_alert_kind k;

		if (!json_is_string(v) ||
		    finops_alert_kind_parse(json_string_value(v), &k))
			return sr_err_set(e, -SR_EPARSE, "%s.events[%zu]: not one of "
					  "preemption, recovery, deadline_risk, "
					  "budget, job_done", ctx, i);
		*mask |= 1u << k;
	}
	return 0;
}

static int check_url(const char *s, const char *ctx, struct sr_err *e)
{
	struct sr_url u;

	/* the message names the field, not the URL: a webhook URL is a secret */
	if (sr_url_parse_http(s, ctx, &u, NULL) < 0)
		return sr_err_set(e, -SR_EPARSE, "%s: expected an http(s) URL with "
				  "a host", ctx);
	sr_url_free(&u);
	return 0;
}

int finops_alert_config_parse(json_t *j, struct finops_alert_config *c,
			      struct sr_err *e)
{
	static const char *const top[] = { "slack", "pagerduty", NULL };
	static const char *const slack_keys[] = { "webhook_url", "events", NULL };
	static const char *const pd_keys[] = { "routing_key", "url", "events", NULL };
	json_t *s, *p;
	const char *str = NULL;
	int rc;

	memset(c, 0, sizeof *c);
	sr_http_opts_default(&c->http);
	if (!json_is_object(j))
		return sr_err_set(e, -SR_EPARSE, "alerts: expected an object");
	rc = sr_json_check_keys(j, top, "alerts", e);
	if (rc)
		return rc;
	s = json_object_get(j, "slack");
	if (s && !json_is_null(s)) {
		rc = sr_json_check_keys(s, slack_keys, "alerts.slack", e);
		if (!rc)
			rc = sr_json_get_str(s, "webhook_url", &str, "alerts.slack", e);
		if (!rc)
			rc = check_url(str, "alerts.slack.webhook_url", e);
		if (!rc)
			rc = parse_events(s, "alerts.slack", &c->slack_events, e);
		if (rc)
			goto fail;
		c->slack_url = strdup(str);
		if (!c->slack_url)
			goto oom;
	}
	p = json_object_get(j, "pagerduty");
	if (p && !json_is_null(p)) {
		const char *url = FINOPS_PD_URL_DEFAULT;

		rc = sr_json_check_keys(p, pd_keys, "alerts.pagerduty", e);
		if (!rc)
			rc = sr_json_get_str(p, "routing_key", &str, "alerts.pagerduty", e);
		if (!rc && !*str)
			rc = sr_err_set(e, -SR_EPARSE, "alerts.pagerduty.routing_key: empty");
		if (!rc)
			rc = sr_json_get_str_opt(p, "url", &url, "alerts.pagerduty", e);
		if (!rc)
			rc = check_url(url, "alerts.pagerduty.url", e);
		if (!rc)
			rc = parse_events(p, "alerts.pagerduty", &c->pd_events, e);
		if (rc)
			goto fail;
		c->pd_url = strdup(url);
		c->pd_routing_key = strdup(str);
		if (!c->pd_url || !c->pd_routing_key)
			goto oom;
	}
	if (c->slack_url)
		sr_log_secret(c->slack_url);
	if (c->pd_routing_key)
		sr_log_secret(c->pd_routing_key);
	return 0;
oom:
	rc = sr_err_set(e, -ENOMEM, "alerts: out of memory");
fail:
	finops_alert_config_free(c);
	sr_http_opts_default(&c->http);
	return rc;
}

int finops_alert_config_load(const char *path, struct finops_alert_config *c,
			     struct sr_err *e)
{
	struct stat sb;
	json_t *j;
	int rc;

	memset(c, 0, sizeof *c);
	sr_http_opts_default(&c->http);
	if (stat(path, &sb) != 0) {
		if (errno == ENOENT)
			return 0;
		return sr_err_set(e, -errno, "%s: %s", path, sr_strerror(-errno));
	}
	if (sb.st_mode & 077)
		return sr_err_set(e, -EPERM, "%s: holds secrets but has mode %03o; "
				  "chmod 600 it", path, (unsigned)(sb.st_mode & 0777));
	j = sr_json_load_file(path, e);
	if (!j)
		return e ? e->code : -SR_EPARSE;
	rc = finops_alert_config_parse(j, c, e);
	json_decref(j);
	if (rc)
		sr_err_prefix(e, "%s", path);
	return rc;
}

int finops_alert_config_save(const char *path, json_t *j, struct sr_err *e)
{
	struct finops_alert_config c;
	char *text;
	int rc;

	rc = finops_alert_config_parse(j, &c, e);
	finops_alert_config_free(&c);
	if (rc)
		return rc;
	text = json_dumps(j, JSON_INDENT(2) | JSON_SORT_KEYS);
	if (!text)
		return sr_err_set(e, -ENOMEM, "alerts: out of memory");
	rc = sr_fs_write_atomic(path, text, strlen(text), 0600, e);
	free(text);
	return rc;
}

static void usd(char *buf, size_t n, sr_micros m)
{
	if (m < 0)
		snprintf(buf, n, "-$%.2f", sr_money_to_usd(-m));
	else
		snprintf(buf, n, "$%.2f", sr_money_to_usd(m));
}

static json_t *mrkdwn(const char *text)
{
	return json_pack("{s:s, s:s}", "type", "mrkdwn", "text", text);
}

/* Slack's message: header, the summary, two fields, a context line. */
static json_t *slack_blocks(const char *summary, const char *title,
			    const char *f0, const char *f1, const char *ctx)
{
	return json_pack("{s:s, s:[{s:s, s:{s:s, s:s}}, {s:s, s:o},"
			 " {s:s, s:[o, o]}, {s:s, s:[o]}]}",
			 "text", summary,
			 "blocks",
			 "type", "header", "text", "type", "plain_text", "text", title,
			 "type", "section", "text", mrkdwn(summary),
			 "type", "section", "fields", mrkdwn(f0), mrkdwn(f1),
			 "type", "context", "elements", mrkdwn(ctx));
}

/* A budget's forecast crossing: who, the forecast against the budget. */
static json_t *budget_slack_body(const struct finops_alert *a)
{
	char title[192], fields[2][160], amount[48], budget[48], ctx[256];

	snprintf(title, sizeof title, "%s: %s, %s, %d%%", kind_titles[a->kind],
		 a->budget, a->month, a->level);
	usd(amount, sizeof amount, a->cost);
	snprintf(fields[0], sizeof fields[0], "*Spent this month*\n%s", amount);
	usd(amount, sizeof amount, a->forecast);
	usd(budget, sizeof budget, a->budget_micros);
	snprintf(fields[1], sizeof fields[1], "*Month-end forecast / budget*\n%s%s"
		 " / %s", a->level >= 100 ? ":red_circle: " : "", amount, budget);
	snprintf(ctx, sizeof ctx, "spotrun team_budget · severity %s · %s",
		 sev_names[a->severity], a->source);
	return slack_blocks(a->summary, title, fields[0], fields[1], ctx);
}

json_t *finops_alert_slack_body(const struct finops_alert *a)
{
	char title[192], fields[2][96], amount[48], ctx[256];
	const char *kind = finops_alert_kind_name(a->kind);

	if (!kind)
		return NULL;
	if (a->kind == FINOPS_ALERT_TEAM_BUDGET)
		return budget_slack_body(a);
	snprintf(title, sizeof title, "%s: job %lld%s%s", kind_titles[a->kind],
		 (long long)a->job_id, a->job_name[0] ? " " : "", a->job_name);
	usd(amount, sizeof amount, a->cost);
	snprintf(fields[0], sizeof fields[0], "*Cost so far*\n%s", amount);
	usd(amount, sizeof amount, a->saved);
	/* Slack text has no colour: a negative saving gets a red marker */
	snprintf(fields[1], sizeof fields[1], "*Saved vs on-demand, hours used*\n%s%s",
		 a->saved < 0 ? ":red_circle: " : "", amount);
	snprintf(ctx, sizeof ctx, "spotrun %s · severity %s · %s", kind,
		 sev_names[a->severity], a->source);
	return slack_blocks(a->summary, title, fields[0], fields[1], ctx);
}

json_t *finops_alert_pd_body(const struct finops_alert *a,
			     const char *routing_key, const char *action,
			     const char *topic)
{
	char dedup[160];

	if (a->kind == FINOPS_ALERT_TEAM_BUDGET) {
		char who[80];

		snprintf(who, sizeof who, "%s", a->budget);
		for (char *p = who; *p; p++)
			if (*p == ' ')
				*p = '-';
		snprintf(dedup, sizeof dedup, "spotrun/budget/%s/%s/%d", who,
			 a->month, a->level);
		return json_pack("{s:s, s:s, s:s, s:{s:s, s:s, s:s, s:s, s:s,"
				 " s:{s:s, s:s, s:i, s:f, s:f, s:f}}}",
				 "routing_key", routing_key, "event_action", action,
				 "dedup_key", dedup,
				 "payload",
				 "summary", a->summary, "source", a->source,
				 "severity", sev_names[a->severity],
				 "component", "spotrun", "class", "team_budget",
				 "custom_details",
				 "budget", a->budget, "month", a->month,
				 "level_percent", a->level,
				 "spent_usd", sr_money_to_usd(a->cost),
				 "forecast_usd", sr_money_to_usd(a->forecast),
				 "budget_usd", sr_money_to_usd(a->budget_micros));
	}
	snprintf(dedup, sizeof dedup, "spotrun/job-%lld/%s", (long long)a->job_id,
		 topic);
	if (!strcmp(action, "resolve"))
		return json_pack("{s:s, s:s, s:s}", "routing_key", routing_key,
				 "event_action", "resolve", "dedup_key", dedup);
	return json_pack("{s:s, s:s, s:s, s:{s:s, s:s, s:s, s:s, s:s,"
			 " s:{s:I, s:s, s:f, s:f, s:I}}}",
			 "routing_key", routing_key, "event_action", action,
			 "dedup_key", dedup,
			 "payload",
			 "summary", a->summary, "source", a->source,
			 "severity", sev_names[a->severity],
			 "component", "spotrun", "class", finops_alert_kind_name(a->kind),
			 "custom_details",
			 "job_id", (json_int_t)a->job_id, "job_name", a->job_name,
			 "cost_usd", sr_money_to_usd(a->cost),
			 "saved_usd", sr_money_to_usd(a->saved),
			 "preemptions", (json_int_t)a->preemptions);
}

static int post_json(const struct finops_alert_config *c, const char *url,
		     json_t *body, const char *channel, long want_status,
		     const char *want_body, struct sr_err *e)
{
	static const char *const hdrs[] = { "Content-Type: application/json", NULL };
	struct sr_http_resp resp;
	struct sr_http_opts ho = c->http;
	struct sr_err he;
	char *text = body ? json_dumps(body, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	int rc;

	/* an alert sent twice beats one lost: retry the POST on 5xx too */
	ho.retry_unsafe = 1;
	json_decref(body);
	if (!text)
		return sr_err_set(e, -ENOMEM, "%s: out of memory", channel);
	sr_err_clear(&he);
	rc = sr_http_request("POST", url, hdrs, text, strlen(text), &ho,
			     &resp, &he);
	free(text);
	if (rc) {
		/* the transport message may quote the URL: don't pass it on */
		rc = sr_err_set(e, rc, "%s: delivery failed after %d attempt(s): %s",
				channel, resp.attempts, sr_strerror(rc));
	} else if (resp.status != want_status ||
		   (want_body && (!resp.body || strcmp(resp.body, want_body)))) {
		rc = sr_err_set(e, -SR_EHTTP, "%s: HTTP %ld after %d attempt(s)",
				channel, resp.status, resp.attempts);
	}
	sr_http_resp_free(&resp);
	return rc;
}

static int send_pd(const struct finops_alert_config *c,
		   const struct finops_alert *a, struct sr_err *e)
{
	static const char *const all_topics[] = { "preemption", "deadline", "budget",
						  "checkpoint", "credentials" };
	const char *topic = "preemption", *action = "trigger";
	int rc = 0;

	switch (a->kind) {
	case FINOPS_ALERT_PREEMPTION:
		break;
	case FINOPS_ALERT_RECOVERY:
		action = "resolve";
		break;
	case FINOPS_ALERT_DEADLINE_RISK:
		topic = "deadline";
		break;
	case FINOPS_ALERT_BUDGET:
		topic = "budget";
		break;
	case FINOPS_ALERT_CHECKPOINT:
		topic = "checkpoint";
		break;
	case FINOPS_ALERT_DEADLINE_MISSED:
		topic = "deadline-missed";
		break;
	case FINOPS_ALERT_TEAM_BUDGET:
		topic = "budget";
		break;
	case FINOPS_ALERT_CREDENTIALS:
		topic = "credentials";
		if (a->severity == FINOPS_SEV_INFO)
			action = "resolve"; /* renewed */
		break;
	case FINOPS_ALERT_JOB_DONE:
	default:
		action = NULL;
		break;
	}
	if (action)
		return post_json(c, c->pd_url,
				 finops_alert_pd_body(a, c->pd_routing_key, action, topic),
				 "pagerduty", 202, NULL, e);
	if (!a->resolve_all)
		return 0;
	for (size_t i = 0; i < sizeof all_topics / sizeof all_topics[0]; i++) {
		int r = post_json(c, c->pd_url,
				  finops_alert_pd_body(a, c->pd_routing_key, "resolve",
						       all_topics[i]),
				  "pagerduty", 202, NULL, e);
		if (r && !rc)
			rc = r;
	}
	return rc;
}

int finops_alert_send(const struct finops_alert_config *c,
		      const struct finops_alert *a, struct sr_err *e)
{
	int rc = 0, r;

	if (c->slack_url && (c->slack_events & (1u << a->kind))) {
		rc = post_json(c, c->slack_url, finops_alert_slack_body(a), "slack",
			       200, "ok", e);
	}
	if (c->pd_url && (c->pd_events & (1u << a->kind))) {
		struct sr_err pe;

		r = send_pd(c, a, &pe);
		if (r && !rc) {
			rc = r;
			if (e)
				*e = pe;
		}
	}
	return rc;
}

/* ---- background sender ------------------------------------------------ */

struct finops_alerter {
	struct finops_alert_config cfg;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;       /* queue changed */
	struct finops_alert q[QUEUE_MAX];
	size_t head, len;
	int busy, stopping;
	uint64_t sent, failed, dropped;
};

static void *sender_main(void *arg)
{
	struct finops_alerter *s = arg;

	pthread_mutex_lock(&s->mu);
	for (;;) {
		struct finops_alert a;
		struct sr_err e;
		int rc;

		while (s->len == 0 && !s->stopping)
			pthread_cond_wait(&s->cv, &s->mu);
		if (s->len == 0)
			break;
		a = s->q[s->head];
		s->head = (s->head + 1) % QUEUE_MAX;
		s->len--;
		s->busy = 1;
		pthread_mutex_unlock(&s->mu);
		sr_err_clear(&e);
		rc = finops_alert_send(&s->cfg, &a, &e);
		if (rc)
			sr_warn("finops", "alert not delivered", "kind=%s job=%lld err=\"%s\"",
				finops_alert_kind_name(a.kind), (long long)a.job_id,
				sr_err_str(&e, rc));
		pthread_mutex_lock(&s->mu);
		s->busy = 0;
		if (rc)
			s->failed++;
		else
			s->sent++;
		pthread_cond_broadcast(&s->cv);
	}
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

struct finops_alerter *finops_alerter_start(struct finops_alert_config *c)
{
	struct finops_alerter *s = calloc(1, sizeof *s);
	pthread_condattr_t ca;

	if (!s)
		return NULL;
	s->cfg = *c;
	pthread_mutex_init(&s->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* drain's timeout */
	pthread_cond_init(&s->cv, &ca);
	pthread_condattr_destroy(&ca);
	if (pthread_create(&s->thread, NULL, sender_main, s) != 0) {
		pthread_mutex_destroy(&s->mu);
		pthread_cond_destroy(&s->cv);
		free(s);
		return NULL;
	}
	memset(c, 0, sizeof *c);
	return s;
}

int finops_alerter_post(struct finops_alerter *s, const struct finops_alert *a)
{
	int rc = 0;

	pthread_mutex_lock(&s->mu);
	if (s->len == QUEUE_MAX || s->stopping) {
		s->dropped++;
		rc = -ENOBUFS;
	} else {
		s->q[(s->head + s->len) % QUEUE_MAX] = *a;
		s->len++;
		pthread_cond_broadcast(&s->cv);
	}
	pthread_mutex_unlock(&s->mu);
	return rc;
}

int finops_alerter_flush(struct finops_alerter *s, long timeout_ms)
{
	struct timespec dl;
	int rc = 0;

	clock_gettime(CLOCK_MONOTONIC, &dl);
	dl.tv_sec += timeout_ms / 1000;
	dl.tv_nsec += (timeout_ms % 1000) * 1000000L;
	if (dl.tv_nsec >= 1000000000L) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&s->mu);
	while ((s->len > 0 || s->busy) && rc == 0)
		rc = pthread_cond_timedwait(&s->cv, &s->mu, &dl);
	rc = (s->len > 0 || s->busy) ? -SR_ETIMEOUT : 0;
	pthread_mutex_unlock(&s->mu);
	return rc;
}

void finops_alerter_stats(struct finops_alerter *s, uint64_t *sent,
			  uint64_t *failed, uint64_t *dropped)
{
	pthread_mutex_lock(&s->mu);
	if (sent)
		*sent = s->sent;
	if (failed)
		*failed = s->failed;
	if (dropped)
		*dropped = s->dropped;
	pthread_mutex_unlock(&s->mu);
}

void finops_alerter_stop(struct finops_alerter *s)
{
	if (!s)
		return;
	finops_alerter_flush(s, 10000);
	pthread_mutex_lock(&s->mu);
	s->stopping = 1;
	s->len = 0; /* anything still queued after the flush is abandoned */
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
	pthread_join(s->thread, NULL);
	pthread_mutex_destroy(&s->mu);
	pthread_cond_destroy(&s->cv);
	finops_alert_config_free(&s->cfg);
	free(s);
}
