/* Unit tests: lib/agent/imds.c (IMDSv2 spot notices) against sr_testsrv,
 * which plays the EC2 metadata service and records what the agent sent. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/imds.h"
#include "common/testsrv.h"
#include "common/timeutil.h"

#define TOKEN_PATH "/latest/api/token"
#define ACTION_PATH "/latest/meta-data/spot/instance-action"

struct fx {
	struct sr_testsrv *srv;
	struct imds *c;
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof *f);

	if (!f)
		return -1;
	f->srv = sr_testsrv_start(0);
	if (!f->srv) {
		free(f);
		return -1;
	}
	f->c = imds_create(sr_testsrv_url(f->srv), 1000);
	if (!f->c) {
		sr_testsrv_stop(f->srv);
		free(f);
		return -1;
	}
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	imds_destroy(f->c);
	sr_testsrv_stop(f->srv);
	free(f);
	return 0;
}

static void reply(struct fx *f, const char *method, const char *path,
		  int status, const char *body)
{
	assert_int_equal(sr_testsrv_reply(f->srv, method, path, status,
					  "text/plain", body, 0), 0);
}

/* PUT for a token with a TTL header, then GET with that token; a second
 * poll reuses the token instead of asking again. */
static void test_token_flow(void **state)
{
	struct fx *f = *state;
	const struct sr_testsrv_req *q;
	struct imds_notice n;
	struct sr_err e;
	char v[128];

	reply(f, "PUT", TOKEN_PATH, 200, "AQAEAFake-Token_123==\n");
	reply(f, "GET", ACTION_PATH, 404, "Not Found");
	sr_err_clear(&e);
	assert_int_equal(imds_poll(f->c, &n, &e), 0);
	assert_int_equal(n.action, IMDS_NONE);
	assert_int_equal(imds_poll(f->c, &n, &e), 0);
	assert_int_equal(n.action, IMDS_NONE);

	assert_int_equal(sr_testsrv_count(f->srv, "PUT", TOKEN_PATH), 1);
	assert_int_equal(sr_testsrv_count(f->srv, "GET", ACTION_PATH), 2);
	q = sr_testsrv_req(f->srv, 0);
	assert_non_null(q);
	assert_string_equal(q->method, "PUT");
	assert_int_equal(sr_testsrv_req_header(q, "X-aws-ec2-metadata-token-ttl-seconds",
					       v, sizeof v), 0);
	assert_string_equal(v, "21600");
	q = sr_testsrv_req(f->srv, 1);
	assert_string_equal(q->method, "GET");
	assert_int_equal(sr_testsrv_req_header(q, "X-aws-ec2-metadata-token",
					       v, sizeof v), 0);
	assert_string_equal(v, "AQAEAFake-Token_123==");
	q = sr_testsrv_req(f->srv, 2);
	assert_int_equal(sr_testsrv_req_header(q, "X-aws-ec2-metadata-token",
					       v, sizeof v), 0);
	assert_string_equal(v, "AQAEAFake-Token_123==");
}

/* 404 means "no notice", every time, without an error. */
static void test_404_is_no_notice(void **state)
{
	struct fx *f = *state;
	struct imds_notice n;

	reply(f, "PUT", TOKEN_PATH, 200, "tok");
	reply(f, "GET", ACTION_PATH, 404, "");
	for (int i = 0; i < 3; i++) {
		memset(&n, 0xff, sizeof n);
		assert_int_equal(imds_poll(f->c, &n, NULL), 0);
		assert_int_equal(n.action, IMDS_NONE);
		assert_int_equal(n.time_ns, 0);
	}
}

/* The notice: action and time parsed exactly. */
static void test_notice(void **state)
{
	struct fx *f = *state;
	struct imds_notice n;
	int64_t want;

	reply(f, "PUT", TOKEN_PATH, 200, "tok");
	reply(f, "GET", ACTION_PATH, 404, "");
	reply(f, "GET", ACTION_PATH, 200,
	      "{\"action\": \"terminate\", \"time\": \"2026-11-29T14:20:05Z\"}");
	assert_int_equal(imds_poll(f->c, &n, NULL), 0);
	assert_int_equal(n.action, IMDS_NONE);
	assert_int_equal(imds_poll(f->c, &n, NULL), 0);
	assert_int_equal(n.action, IMDS_TERMINATE);
	assert_int_equal(sr_time_parse_rfc3339("2026-11-29T14:20:05Z", &want, NULL), 0);
	assert_true(n.time_ns == want);
	assert_string_equal(imds_action_name(n.action), "terminate");
}

static void test_stop_and_hibernate(void **state)
{
	struct imds_notice n;
	struct sr_err e;
	const char *stop = "{\"action\":\"stop\",\"time\":\"2026-01-02T03:04:05.5Z\"}";
	const char *hib = "{\"action\":\"hibernate\",\"time\":\"2026-01-02T03:04:05Z\","
			  "\"extra\":1}";

	(void)state;
	assert_int_equal(imds_parse_notice(stop, strlen(stop), &n, &e), 0);
	assert_int_equal(n.action, IMDS_STOP);
	assert_true(n.time_ns % 1000000000 == 500000000);
	/* fields AWS may add later are tolerated */
	assert_int_equal(imds_parse_notice(hib, strlen(hib), &n, &e), 0);
	assert_int_equal(n.action, IMDS_HIBERNATE);
}

/* A 200 that is not a valid notice is an error that says what is wrong;
 * it is neither "no notice" nor a notice with an invented time. */
static void test_malformed_reply(void **state)
{
	struct fx *f = *state;
	struct imds_notice n;
	struct sr_err e;
	static const struct {
		const char *body;
		const char *needle;
	} cases[] = {
		{ "not json", "spot/instance-action" },
		{ "[1,2]", "expected a JSON object" },
		{ "{\"time\":\"2026-11-29T14:20:05Z\"}", "action" },
		{ "{\"action\":\"terminate\"}", "time" },
		{ "{\"action\":\"explode\",\"time\":\"2026-11-29T14:20:05Z\"}",
		  "unknown value 'explode'" },
		{ "{\"action\":\"terminate\",\"time\":\"soon\"}", "time" },
		{ "{\"action\":7,\"time\":\"2026-11-29T14:20:05Z\"}", "action" },
	};

	reply(f, "PUT", TOKEN_PATH, 200, "tok");
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct sr_testsrv *s = f->srv;

		assert_int_equal(sr_testsrv_reply(s, "GET", ACTION_PATH, 200,
						  "application/json",
						  cases[i].body, 0), 0);
	}
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		sr_err_clear(&e);
		memset(&n, 0xff, sizeof n);
		int rc = imds_poll(f->c, &n, &e);

		if (rc != -SR_EPARSE || !strstr(e.msg, cases[i].needle))
			print_error("case %zu: rc=%d msg=%s\n", i, rc, e.msg);
		assert_int_equal(rc, -SR_EPARSE);
		assert_non_null(strstr(e.msg, cases[i].needle));
		assert_non_null(strstr(e.msg, "imds"));
		assert_int_equal(n.action, IMDS_NONE);
		assert_int_equal(n.time_ns, 0);
	}
}

/* 401: the token expired; fetch a new one and ask again, once. */
static void test_401_refreshes_token(void **state)
{
	struct fx *f = *state;
	struct imds_notice n;
	char v[64];

	reply(f, "PUT", TOKEN_PATH, 200, "old-token");
	reply(f, "PUT", TOKEN_PATH, 200, "new-token");
	reply(f, "GET", ACTION_PATH, 404, "");
	reply(f, "GET", ACTION_PATH, 401, "");
	reply(f, "GET", ACTION_PATH, 404, "");
	assert_int_equal(imds_poll(f->c, &n, NULL), 0); /* old token: 404 */
	assert_int_equal(imds_poll(f->c, &n, NULL), 0); /* 401, new, 404 */
	assert_int_equal(n.action, IMDS_NONE);
	assert_int_equal(sr_testsrv_count(f->srv, "PUT", TOKEN_PATH), 2);
	assert_int_equal(sr_testsrv_count(f->srv, "GET", ACTION_PATH), 3);
	/* PUT, GET action, GET rebalance; GET action (401), PUT, GET action */
	assert_int_equal(sr_testsrv_req_header(sr_testsrv_req(f->srv, 5),
					       "x-aws-ec2-metadata-token", v,
					       sizeof v), 0);
	assert_string_equal(v, "new-token");
}

static void test_401_forever_is_error(void **state)
{
	struct fx *f = *state;
	struct imds_notice n;
	struct sr_err e;

	reply(f, "PUT", TOKEN_PATH, 200, "tok");
	reply(f, "GET", ACTION_PATH, 401, "");
	sr_err_clear(&e);
	assert_int_equal(imds_poll(f->c, &n, &e), -SR_EHTTP);
	assert_non_null(strstr(e.msg, "401"));
	assert_int_equal(sr_testsrv_count(f->srv, "GET", ACTION_PATH), 2);
	assert_int_equal(sr_testsrv_count(f->srv, "PUT", TOKEN_PATH), 2);
}

/* IMDSv1-only or broken token endpoint, and bad tokens. */
static void test_token_errors(void **state)
{
	struct fx *f = *state;
	struct imds_notice n;
	struct sr_err e;

	/* queued up front: the testsrv repeats the last reply of a route */
	reply(f, "PUT", TOKEN_PATH, 403, "Forbidden");
	reply(f, "PUT", TOKEN_PATH, 200, "abc\r\nX-Evil: 1");
	reply(f, "PUT", TOKEN_PATH, 200, "");
	sr_err_clear(&e);
	assert_int_equal(imds_poll(f->c, &n, &e), -SR_EHTTP);
	assert_non_null(strstr(e.msg, "api/token"));
	assert_non_null(strstr(e.msg, "403"));
	assert_int_equal(sr_testsrv_count(f->srv, "GET", ACTION_PATH), 0);

	/* a token that would inject a header line is refused */
	sr_err_clear(&e);
	assert_int_equal(imds_poll(f->c, &n, &e), -SR_EPARSE);
	assert_non_null(strstr(e.msg, "token"));
	assert_int_equal(imds_poll(f->c, &n, &e), -SR_EPARSE);
	assert_int_equal(sr_testsrv_count(f->srv, "GET", ACTION_PATH), 0);
}

/* Unexpected statuses on the notice path are errors naming the status. */
static void test_unexpected_status(void **state)
{
	struct fx *f = *state;
	struct imds_notice n;
	struct sr_err e;

	reply(f, "PUT", TOKEN_PATH, 200, "tok");
	reply(f, "GET", ACTION_PATH, 500, "oops");
	sr_err_clear(&e);
	assert_int_equal(imds_poll(f->c, &n, &e), -SR_EHTTP);
	assert_non_null(strstr(e.msg, "HTTP 500"));
	assert_int_equal(n.action, IMDS_NONE);
}

/* Nothing listening: a transport error, quickly, no notice. */
static void test_no_server(void **state)
{
	struct imds *c;
	struct imds_notice n;
	struct sr_err e;
	char url[64];
	int port;

	(void)state;
	{
		struct sr_testsrv *s = sr_testsrv_start(0);

		assert_non_null(s);
		port = sr_testsrv_port(s);
		sr_testsrv_stop(s);
	}
	snprintf(url, sizeof url, "http://127.0.0.1:%d/", port);
	c = imds_create(url, 300);
	assert_non_null(c);
	sr_err_clear(&e);
	assert_true(imds_poll(c, &n, &e) < 0);
	assert_non_null(strstr(e.msg, "imds"));
	assert_int_equal(n.action, IMDS_NONE);
	imds_destroy(c);
	imds_destroy(NULL);
}

/* The notice's wall-clock deadline becomes a monotonic one, once: the
 * result depends on the lead only, not on where either clock stands. */
static void test_kill_deadline_is_monotonic(void **state)
{
	const int64_t S = SR_NS_PER_SEC, real = INT64_C(1767225600) * S;

	(void)state;
	/* 10 s of lead: kill at +9 s (1 s kept to report) */
	assert_int_equal(imds_kill_deadline_mono(real + 10 * S, real, 5 * S), 14 * S);
	/* 2 s: a fifth (0.4 s) kept */
	assert_int_equal(imds_kill_deadline_mono(real + 2 * S, real, 5 * S),
			 5 * S + 1600 * (S / 1000));
	/* the same lead read an hour later on both clocks: the same wait */
	assert_int_equal(imds_kill_deadline_mono(real + 3610 * S, real + 3600 * S,
						 777 * S) - 777 * S, 9 * S);
	/* already past: at once */
	assert_int_equal(imds_kill_deadline_mono(real - S, real, 5 * S), 5 * S);
}


#define REBALANCE_PATH "/latest/meta-data/events/recommendations/rebalance"

/* A rebalance recommendation: its noticeTime, asked for until seen and
 * not after; a malformed one is an error naming the field. */
static void test_rebalance(void **state)
{
	struct fx *f = *state;
	struct imds_notice n;
	struct sr_err e;
	int64_t want = 0;

	reply(f, "PUT", TOKEN_PATH, 200, "tok");
	reply(f, "GET", ACTION_PATH, 404, "");
	reply(f, "GET", REBALANCE_PATH, 404, "");
	reply(f, "GET", ACTION_PATH, 404, "");
	reply(f, "GET", REBALANCE_PATH, 200,
	      "{\"noticeTime\": \"2026-11-29T14:18:00Z\"}");
	reply(f, "GET", ACTION_PATH, 404, "");
	assert_int_equal(imds_poll(f->c, &n, NULL), 0);
	assert_int_equal(n.rebalance_ns, 0);
	assert_int_equal(imds_poll(f->c, &n, NULL), 0);
	assert_int_equal(sr_time_parse_rfc3339("2026-11-29T14:18:00Z", &want,
					       NULL), 0);
	assert_int_equal(n.rebalance_ns, want);
	assert_int_equal(n.action, IMDS_NONE);
	assert_int_equal(imds_poll(f->c, &n, NULL), 0); /* kept, not asked */
	assert_int_equal(n.rebalance_ns, want);
	assert_int_equal(sr_testsrv_count(f->srv, "GET", REBALANCE_PATH), 2);
	sr_err_clear(&e);
	assert_int_equal(imds_parse_rebalance("{\"noticeTime\": 5}", 17, &want,
					      &e), -SR_EPARSE);
	assert_non_null(strstr(e.msg, "noticeTime"));
	assert_int_equal(want, 0);
}

/* A metadata service that enforces its tokens' TTL, as EC2's does: a GET
 * with an expired token is answered 401. */
struct ttl_srv {
	_Atomic int ttl_s;
	_Atomic int issued, expired_gets, gets; /* read by the test thread */
	int64_t at_ns[64];                      /* the server thread's */
};

static int ttl_handler(void *ud, const struct sr_testsrv_req *req, int *status,
		       char **ctype, char **body, size_t *body_len)
{
	struct ttl_srv *t = ud;
	char v[64];
	int k;

	*ctype = strdup("text/plain");
	if (!strcmp(req->method, "PUT") && t->issued < 64) {
		sr_testsrv_req_header(req, "x-aws-ec2-metadata-token-ttl-seconds",
				      v, sizeof v);
		t->ttl_s = atoi(v);
		t->at_ns[t->issued] = sr_time_mono_ns();
		*body = malloc(32);
		snprintf(*body, 32, "tok-%d", t->issued++);
		*body_len = strlen(*body);
		*status = 200;
		return 0;
	}
	t->gets++;
	*body = strdup("");
	*body_len = 0;
	if (sr_testsrv_req_header(req, "x-aws-ec2-metadata-token", v, sizeof v) ||
	    sscanf(v, "tok-%d", &k) != 1 || k < 0 || k >= t->issued ||
	    sr_time_mono_ns() - t->at_ns[k] >= (int64_t)t->ttl_s * SR_NS_PER_SEC) {
		t->expired_gets++;
		*status = 401;
		return 0;
	}
	*status = 404;
	return 0;
}

/* Tokens are fetched again before they expire: polling for three TTLs
 * of a 2 s token, no GET ever carries an expired one. */
static void test_token_refreshed_before_expiry(void **state)
{
	struct fx *f = *state;
	struct ttl_srv t = { 0 };
	struct imds_notice n;
	int64_t end;

	sr_testsrv_set_handler(f->srv, ttl_handler, &t);
	imds_set_token_ttl(f->c, 2);
	end = sr_time_mono_ns() + 6 * SR_NS_PER_SEC;
	while (sr_time_mono_ns() < end) {
		assert_int_equal(imds_poll(f->c, &n, NULL), 0);
		usleep(50000);
	}
	assert_int_equal(t.ttl_s, 2);
	assert_true(t.issued >= 3);
	assert_true(t.gets > 10);
	assert_int_equal(t.expired_gets, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_token_flow, setup, teardown),
		cmocka_unit_test_setup_teardown(test_404_is_no_notice, setup, teardown),
		cmocka_unit_test_setup_teardown(test_notice, setup, teardown),
		cmocka_unit_test(test_stop_and_hibernate),
		cmocka_unit_test(test_kill_deadline_is_monotonic),
		cmocka_unit_test_setup_teardown(test_malformed_reply, setup, teardown),
		cmocka_unit_test_setup_teardown(test_401_refreshes_token, setup, teardown),
		cmocka_unit_test_setup_teardown(test_401_forever_is_error, setup, teardown),
		cmocka_unit_test_setup_teardown(test_token_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unexpected_status, setup, teardown),
		cmocka_unit_test(test_no_server),
		cmocka_unit_test_setup_teardown(test_rebalance, setup, teardown),
		cmocka_unit_test_setup_teardown(test_token_refreshed_before_expiry,
						setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
