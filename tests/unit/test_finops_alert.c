/*
 * test_finops_alert.c - Slack and PagerDuty alerts against local
 * receivers (lib/common/testsrv): exact payloads, trigger/resolve pairing,
 * retries with backoff, no retry on 4xx, config file permissions, and
 * secrets never logged.
 */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/fsutil.h"
#include "common/log.h"
#include "common/testsrv.h"
#include "finops/alert.h"

#define SLACK_PATH "/services/T000/B000/XXXXsecretXXXX"
#define PD_KEY "R0UTINGKEYsecret0123456789abcdef"

static struct finops_alert sample(enum finops_alert_kind k)
{
	struct finops_alert a = {
		.kind = k, .severity = FINOPS_SEV_WARNING, .job_id = 3,
		.cost = 1234567, .saved = 4500000, .preemptions = 2,
	};

	snprintf(a.job_name, sizeof a.job_name, "demo");
	snprintf(a.summary, sizeof a.summary,
		 "job 3 demo: spot node 9 in aws/us-west-2a preempted");
	snprintf(a.source, sizeof a.source, "spotrund@test");
	return a;
}

static void config(struct finops_alert_config *c, struct sr_testsrv *srv,
		   int slack, int pd)
{
	char url[256];

	memset(c, 0, sizeof *c);
	sr_http_opts_default(&c->http);
	c->http.backoff_base_ms = 1;
	c->http.backoff_max_ms = 5;
	c->http.max_retries = 3;
	if (slack) {
		snprintf(url, sizeof url, "%s%s", sr_testsrv_url(srv), SLACK_PATH);
		c->slack_url = strdup(url);
		c->slack_events = (1u << FINOPS_ALERT_NKINDS) - 1;
	}
	if (pd) {
		snprintf(url, sizeof url, "%s/v2/enqueue", sr_testsrv_url(srv));
		c->pd_url = strdup(url);
		c->pd_routing_key = strdup(PD_KEY);
		c->pd_events = (1u << FINOPS_ALERT_NKINDS) - 1;
	}
}

static void assert_json_body(const struct sr_testsrv_req *r, const char *want)
{
	json_t *got = json_loads(r->body, 0, NULL), *exp = json_loads(want, 0, NULL);
	char ct[64];

	assert_non_null(got);
	assert_non_null(exp);
	if (!json_equal(got, exp))
		fail_msg("payload\n got: %s\nwant: %s", r->body, want);
	assert_int_equal(sr_testsrv_req_header(r, "content-type", ct, sizeof ct), 0);
	assert_string_equal(ct, "application/json");
	json_decref(got);
	json_decref(exp);
}

static void test_slack_exact_payload(void **state)
{
	struct sr_testsrv *srv = sr_testsrv_start(0);
	struct finops_alert_config c;
	struct finops_alert a = sample(FINOPS_ALERT_PREEMPTION);
	struct sr_err e;

	(void)state;
	assert_non_null(srv);
	sr_testsrv_reply(srv, "POST", SLACK_PATH, 200, "text/plain", "ok", 0);
	config(&c, srv, 1, 0);
	assert_int_equal(finops_alert_send(&c, &a, &e), 0);
	assert_int_equal(sr_testsrv_nreq(srv), 1);
	assert_string_equal(sr_testsrv_req(srv, 0)->method, "POST");
	assert_string_equal(sr_testsrv_req(srv, 0)->path, SLACK_PATH);
	assert_json_body(sr_testsrv_req(srv, 0),
		"{\"text\":\"job 3 demo: spot node 9 in aws/us-west-2a preempted\","
		"\"blocks\":["
		"{\"type\":\"header\",\"text\":{\"type\":\"plain_text\","
		"\"text\":\"Spot preemption: job 3 demo\"}},"
		"{\"type\":\"section\",\"text\":{\"type\":\"mrkdwn\","
		"\"text\":\"job 3 demo: spot node 9 in aws/us-west-2a preempted\"}},"
		"{\"type\":\"section\",\"fields\":["
		"{\"type\":\"mrkdwn\",\"text\":\"*Cost so far*\\n$1.23\"},"
		"{\"type\":\"mrkdwn\",\"text\":\"*Saved vs on-demand, hours used*\\n$4.50\"}]},"
		"{\"type\":\"context\",\"elements\":[{\"type\":\"mrkdwn\","
		"\"text\":\"spotrun preemption \xc2\xb7 severity warning \xc2\xb7 spotrund@test\"}]}]}");
	/* 200 with a body other than "ok" is a failure */
	sr_testsrv_reply(srv, "POST", "/other", 200, "text/plain", "invalid_payload", 0);
	free(c.slack_url);
	c.slack_url = NULL;
	{
		char url[128];

		snprintf(url, sizeof url, "%s/other", sr_testsrv_url(srv));
		c.slack_url = strdup(url);
	}
	assert_int_equal(finops_alert_send(&c, &a, &e), -SR_EHTTP);
	assert_non_null(strstr(e.msg, "slack"));
	finops_alert_config_free(&c);
	sr_testsrv_stop(srv);
}

static void test_pagerduty_trigger_resolve(void **state)
{
	struct sr_testsrv *srv = sr_testsrv_start(0);
	struct finops_alert_config c;
	struct finops_alert a = sample(FINOPS_ALERT_PREEMPTION);
	struct sr_err e;
	char want[1024];

	(void)state;
	sr_testsrv_reply(srv, "POST", "/v2/enqueue", 202, "application/json",
			 "{\"status\":\"success\",\"message\":\"Event processed\"}", 0);
	config(&c, srv, 0, 1);
	assert_int_equal(finops_alert_send(&c, &a, &e), 0);
	snprintf(want, sizeof want,
		 "{\"routing_key\":\"%s\",\"event_action\":\"trigger\","
		 "\"dedup_key\":\"spotrun/job-3/preemption\","
		 "\"payload\":{\"summary\":\"job 3 demo: spot node 9 in aws/us-west-2a preempted\","
		 "\"source\":\"spotrund@test\",\"severity\":\"warning\","
		 "\"component\":\"spotrun\",\"class\":\"preemption\","
		 "\"custom_details\":{\"job_id\":3,\"job_name\":\"demo\","
		 "\"cost_usd\":1.234567,\"saved_usd\":4.5,\"preemptions\":2}}}", PD_KEY);
	assert_int_equal(sr_testsrv_nreq(srv), 1);
	assert_json_body(sr_testsrv_req(srv, 0), want);
	/* the recovery resolves the same dedup_key */
	a = sample(FINOPS_ALERT_RECOVERY);
	assert_int_equal(finops_alert_send(&c, &a, &e), 0);
	snprintf(want, sizeof want,
		 "{\"routing_key\":\"%s\",\"event_action\":\"resolve\","
		 "\"dedup_key\":\"spotrun/job-3/preemption\"}", PD_KEY);
	assert_json_body(sr_testsrv_req(srv, 1), want);
	/* deadline risk triggers its own incident, error severity */
	a = sample(FINOPS_ALERT_DEADLINE_RISK);
	a.severity = FINOPS_SEV_ERROR;
	assert_int_equal(finops_alert_send(&c, &a, &e), 0);
	{
		json_t *j = json_loads(sr_testsrv_req(srv, 2)->body, 0, NULL);

		assert_string_equal(json_string_value(json_object_get(j, "dedup_key")),
				    "spotrun/job-3/deadline");
		assert_string_equal(json_string_value(json_object_get(
			json_object_get(j, "payload"), "severity")), "error");
		json_decref(j);
	}
	/* job done resolves every topic the job may have opened */
	a = sample(FINOPS_ALERT_JOB_DONE);
	a.resolve_all = true;
	assert_int_equal(finops_alert_send(&c, &a, &e), 0);
	assert_int_equal(sr_testsrv_nreq(srv), 8);
	for (size_t i = 3; i < 8; i++) {
		json_t *j = json_loads(sr_testsrv_req(srv, i)->body, 0, NULL);

		assert_string_equal(json_string_value(json_object_get(j, "event_action")),
				    "resolve");
		json_decref(j);
	}
	finops_alert_config_free(&c);
	sr_testsrv_stop(srv);
}

static void test_retries_and_4xx(void **state)
{
	struct sr_testsrv *srv = sr_testsrv_start(0);
	struct finops_alert_config c;
	struct finops_alert a = sample(FINOPS_ALERT_BUDGET);
	struct sr_err e;

	(void)state;
	/* 500, 503, then ok: delivered on the third attempt */
	sr_testsrv_reply(srv, "POST", SLACK_PATH, 500, "text/plain", "oops", 0);
	sr_testsrv_reply(srv, "POST", SLACK_PATH, 503, "text/plain", "busy", 0);
	sr_testsrv_reply(srv, "POST", SLACK_PATH, 200, "text/plain", "ok", 0);
	config(&c, srv, 1, 0);
	assert_int_equal(finops_alert_send(&c, &a, &e), 0);
	assert_int_equal(sr_testsrv_count(srv, "POST", SLACK_PATH), 3);
	finops_alert_config_free(&c);
	sr_testsrv_stop(srv);

	/* 400: not retried, reported with the status, no secret in it */
	srv = sr_testsrv_start(0);
	sr_testsrv_reply(srv, "POST", "/v2/enqueue", 400, "application/json",
			 "{\"status\":\"invalid event\"}", 0);
	config(&c, srv, 0, 1);
	assert_int_equal(finops_alert_send(&c, &a, &e), -SR_EHTTP);
	assert_int_equal(sr_testsrv_count(srv, "POST", "/v2/enqueue"), 1);
	assert_non_null(strstr(e.msg, "HTTP 400"));
	assert_null(strstr(e.msg, PD_KEY));
	finops_alert_config_free(&c);
	sr_testsrv_stop(srv);
}

static void test_event_filter(void **state)
{
	struct sr_testsrv *srv = sr_testsrv_start(0);
	struct finops_alert_config c;
	struct finops_alert a = sample(FINOPS_ALERT_PREEMPTION);
	struct sr_err e;

	(void)state;
	sr_testsrv_reply(srv, "POST", SLACK_PATH, 200, "text/plain", "ok", 0);
	config(&c, srv, 1, 0);
	c.slack_events = 1u << FINOPS_ALERT_JOB_DONE;
	assert_int_equal(finops_alert_send(&c, &a, &e), 0);
	assert_int_equal(sr_testsrv_nreq(srv), 0);
	a = sample(FINOPS_ALERT_JOB_DONE);
	assert_int_equal(finops_alert_send(&c, &a, &e), 0);
	assert_int_equal(sr_testsrv_nreq(srv), 1);
	finops_alert_config_free(&c);
	sr_testsrv_stop(srv);
}

static void test_alerter_async_and_no_secret_in_logs(void **state)
{
	struct sr_testsrv *srv = sr_testsrv_start(0);
	struct finops_alert_config c;
	struct finops_alerter *s;
	char logpath[] = "/tmp/alertlog-XXXXXX", *log = NULL;
	int fd = mkstemp(logpath);
	uint64_t sent, failed, dropped;

	(void)state;
	assert_true(fd >= 0);
	sr_log_set_fd(fd);
	sr_testsrv_reply(srv, "POST", SLACK_PATH, 200, "text/plain", "ok", 0);
	sr_testsrv_reply(srv, "POST", "/v2/enqueue", 403, "application/json", "{}", 0);
	config(&c, srv, 1, 1);
	/* what the daemon does when it loads a config: register the secrets */
	sr_log_secret(c.slack_url);
	sr_log_secret(c.pd_routing_key);
	s = finops_alerter_start(&c);
	assert_non_null(s);
	assert_null(c.slack_url); /* ownership moved */
	for (int k = 0; k < FINOPS_ALERT_NKINDS; k++) {
		struct finops_alert a = sample((enum finops_alert_kind)k);

		a.job_id = 10 + k;
		assert_int_equal(finops_alerter_post(s, &a), 0);
	}
	assert_int_equal(finops_alerter_flush(s, 20000), 0);
	finops_alerter_stats(s, &sent, &failed, &dropped);
	/* Slack took every kind; PagerDuty refused (403) every one it was
	 * sent (job_done without resolve_all sends nothing) */
	assert_int_equal(sent + failed, FINOPS_ALERT_NKINDS);
	assert_int_equal(failed, FINOPS_ALERT_NKINDS - 1);
	assert_int_equal(dropped, 0);
	assert_int_equal(sr_testsrv_count(srv, "POST", SLACK_PATH),
			 FINOPS_ALERT_NKINDS);
	/* delivered in order */
	for (size_t i = 0, n = 0; i < sr_testsrv_nreq(srv); i++) {
		const struct sr_testsrv_req *r = sr_testsrv_req(srv, i);
		json_t *j;
		char want[32];

		if (strcmp(r->path, SLACK_PATH))
			continue;
		j = json_loads(r->body, 0, NULL);
		if (n == FINOPS_ALERT_TEAM_BUDGET) /* about a team, not a job */
			snprintf(want, sizeof want, "Budget forecast: ");
		else
			snprintf(want, sizeof want, "job %zu demo", 10 + n);
		n++;
		/* blocks[0] is the header: "<title>: job N demo" */
		assert_non_null(strstr(json_string_value(json_object_get(
			json_object_get(json_array_get(json_object_get(j, "blocks"), 0),
					"text"), "text")), want));
		json_decref(j);
	}
	finops_alerter_stop(s);
	sr_log_set_fd(-1);
	close(fd);
	assert_int_equal(sr_fs_read_file(logpath, 1 << 20, &log, NULL, NULL), 0);
	unlink(logpath);
	assert_non_null(strstr(log, "alert not delivered")); /* failures logged */
	assert_null(strstr(log, PD_KEY));
	assert_null(strstr(log, "XXXXsecretXXXX"));
	free(log);
	sr_testsrv_stop(srv);
	finops_alerter_stop(NULL);
}

static void test_config_file(void **state)
{
	char dir[] = "/tmp/alertcfg-XXXXXX", path[64];
	struct finops_alert_config c;
	struct sr_err e;
	struct stat sb;
	json_t *j;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/alerts.json", dir);
	/* missing file: no channels */
	assert_int_equal(finops_alert_config_load(path, &c, &e), 0);
	assert_null(c.slack_url);
	assert_null(c.pd_url);
	j = json_loads("{\"slack\":{\"webhook_url\":\"https://hooks.slack.com/services/T/B/Z\","
		       "\"events\":[\"budget\",\"job_done\"]},"
		       "\"pagerduty\":{\"routing_key\":\"abc123\"}}", 0, NULL);
	assert_int_equal(finops_alert_config_save(path, j, &e), 0);
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0600);
	assert_int_equal(finops_alert_config_load(path, &c, &e), 0);
	assert_string_equal(c.slack_url, "https://hooks.slack.com/services/T/B/Z");
	assert_int_equal(c.slack_events, (1u << FINOPS_ALERT_BUDGET) |
					 (1u << FINOPS_ALERT_JOB_DONE));
	assert_string_equal(c.pd_url, FINOPS_PD_URL_DEFAULT);
	assert_string_equal(c.pd_routing_key, "abc123");
	assert_int_equal(c.pd_events, (1u << FINOPS_ALERT_NKINDS) - 1);
	finops_alert_config_free(&c);
	/* a world-readable secrets file is refused */
	assert_int_equal(chmod(path, 0644), 0);
	assert_int_equal(finops_alert_config_load(path, &c, &e), -EPERM);
	assert_non_null(strstr(e.msg, "chmod 600"));
	unlink(path);
	json_decref(j);
	/* bad fields are named */
	{
		static const struct {
			const char *json, *needle;
		} bad[] = {
			{ "{\"slack\":{}}", "webhook_url" },
			{ "{\"slack\":{\"webhook_url\":\"ftp://x\"}}", "webhook_url" },
			/* "http://" passed a prefix check; it has no host */
			{ "{\"slack\":{\"webhook_url\":\"https://\"}}", "webhook_url" },
			{ "{\"pagerduty\":{\"routing_key\":\"k\",\"url\":\"http://h:99999/x\"}}",
			  "pagerduty.url: expected an http(s) URL" },
			{ "{\"slack\":{\"webhook_url\":\"https://x\",\"events\":[\"lunch\"]}}",
			  "events[0]" },
			{ "{\"pagerduty\":{\"routing_key\":\"\"}}", "routing_key" },
			{ "{\"teams\":{}}", "teams" },
		};

		for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
			json_t *b = json_loads(bad[i].json, 0, NULL);

			assert_int_equal(finops_alert_config_save(path, b, &e), -SR_EPARSE);
			if (!strstr(e.msg, bad[i].needle))
				fail_msg("%s: '%s' lacks '%s'", bad[i].json, e.msg,
					 bad[i].needle);
			json_decref(b);
		}
		assert_int_equal(access(path, F_OK), -1); /* nothing written */
	}
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_slack_exact_payload),
		cmocka_unit_test(test_pagerduty_trigger_resolve),
		cmocka_unit_test(test_retries_and_4xx),
		cmocka_unit_test(test_event_filter),
		cmocka_unit_test(test_alerter_async_and_no_secret_in_logs),
		cmocka_unit_test(test_config_file),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
