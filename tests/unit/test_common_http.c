/* Unit tests: lib/common/http.c against lib/common/testsrv.c */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/http.h"
#include "common/testsrv.h"
#include "common/timeutil.h"

struct fx {
	struct sr_testsrv *srv;
	struct sr_http_opts o;
	char url[256];
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	if (f == NULL)
		return -1;
	f->srv = sr_testsrv_start(0);
	if (f->srv == NULL) {
		free(f);
		return -1;
	}
	sr_http_opts_default(&f->o);
	f->o.backoff_base_ms = 1; /* keep retries quick */
	f->o.backoff_max_ms = 5;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	sr_testsrv_stop(f->srv);
	free(f);
	return 0;
}

static const char *url(struct fx *f, const char *path)
{
	snprintf(f->url, sizeof(f->url), "%s%s", sr_testsrv_url(f->srv), path);
	return f->url;
}

static void test_get_headers(void **state)
{
	struct fx *f = *state;
	const char *const hdrs[] = { "X-Trace: abc-123", "Accept: application/json", NULL };
	struct sr_http_resp r;
	const struct sr_testsrv_req *q;
	char v[64];

	assert_int_equal(sr_testsrv_port(f->srv) > 0, 1);
	assert_int_equal(sr_testsrv_reply(f->srv, "GET", "/meta", 200,
					  "application/json", "{\"ok\":true}", 0), 0);
	assert_int_equal(sr_http_request("GET", url(f, "/meta?x=1&y=%20"), hdrs,
					 NULL, 0, &f->o, &r, NULL), 0);
	assert_int_equal(r.status, 200);
	assert_int_equal(r.attempts, 1);
	assert_string_equal(r.body, "{\"ok\":true}");
	assert_int_equal(r.body_len, 11);
	assert_int_equal(sr_http_resp_header(&r, "content-type", v, sizeof(v)), 0);
	assert_string_equal(v, "application/json");
	assert_int_equal(sr_http_resp_header(&r, "X-None", v, sizeof(v)), -SR_ENOTFOUND);
	sr_http_resp_free(&r);

	assert_int_equal(sr_testsrv_nreq(f->srv), 1);
	q = sr_testsrv_req(f->srv, 0);
	assert_non_null(q);
	assert_null(sr_testsrv_req(f->srv, 1));
	assert_string_equal(q->method, "GET");
	assert_string_equal(q->path, "/meta");
	assert_string_equal(q->query, "x=1&y=%20");
	assert_int_equal(q->body_len, 0);
	assert_int_equal(sr_testsrv_req_header(q, "x-trace", v, sizeof(v)), 0);
	assert_string_equal(v, "abc-123");
	assert_int_equal(sr_testsrv_req_header(q, "ACCEPT", v, sizeof(v)), 0);
	assert_string_equal(v, "application/json");
	assert_int_equal(sr_testsrv_req_header(q, "x-missing", v, sizeof(v)), -1);
	assert_non_null(strstr(q->headers, "x-trace: abc-123\n"));
}

static void test_post_put_body(void **state)
{
	struct fx *f = *state;
	const char *const hdrs[] = { "Content-Type: application/json", NULL };
	size_t big_len = 3 << 20;
	char *big = malloc(big_len);
	struct sr_http_resp r;
	const struct sr_testsrv_req *q;
	char v[64];

	assert_non_null(big);
	for (size_t i = 0; i < big_len; i++)
		big[i] = (char)('a' + i % 26);
	sr_testsrv_reply(f->srv, "POST", "/hook", 201, "text/plain", "created", 0);
	sr_testsrv_reply(f->srv, "PUT", "/bucket/obj", 200, NULL, "", 0);

	assert_int_equal(sr_http_request("POST", url(f, "/hook"), hdrs,
					 "{\"a\":1}", 7, &f->o, &r, NULL), 0);
	assert_int_equal(r.status, 201);
	assert_string_equal(r.body, "created");
	sr_http_resp_free(&r);

	assert_int_equal(sr_http_request("PUT", url(f, "/bucket/obj"), NULL,
					 big, big_len, &f->o, &r, NULL), 0);
	assert_int_equal(r.status, 200);
	assert_string_equal(r.body, "");
	sr_http_resp_free(&r);

	q = sr_testsrv_req(f->srv, 0);
	assert_string_equal(q->method, "POST");
	assert_int_equal(q->body_len, 7);
	assert_string_equal(q->body, "{\"a\":1}");
	assert_int_equal(sr_testsrv_req_header(q, "content-type", v, sizeof(v)), 0);
	assert_string_equal(v, "application/json");
	q = sr_testsrv_req(f->srv, 1);
	assert_string_equal(q->method, "PUT");
	assert_int_equal(q->body_len, big_len);
	assert_memory_equal(q->body, big, big_len);
	assert_int_equal(sr_testsrv_count(f->srv, "PUT", "/bucket/obj"), 1);
	free(big);
}

static void test_retry_503_then_ok(void **state)
{
	struct fx *f = *state;
	struct sr_http_resp r;

	sr_testsrv_reply(f->srv, "GET", "/flaky", 503, NULL, "busy", 0);
	sr_testsrv_reply(f->srv, "GET", "/flaky", 429, NULL, "slow down", 0);
	sr_testsrv_reply(f->srv, "GET", "/flaky", 200, NULL, "fine", 0);
	assert_int_equal(sr_http_request("GET", url(f, "/flaky"), NULL, NULL, 0,
					 &f->o, &r, NULL), 0);
	assert_int_equal(r.status, 200);
	assert_int_equal(r.attempts, 3);
	assert_string_equal(r.body, "fine");
	assert_int_equal(sr_testsrv_count(f->srv, "GET", "/flaky"), 3);
	sr_http_resp_free(&r);
}

static void test_retries_exhausted(void **state)
{
	struct fx *f = *state;
	struct sr_http_resp r;

	f->o.max_retries = 2;
	sr_testsrv_reply(f->srv, "GET", "/down", 500, NULL, "boom", 0);
	assert_int_equal(sr_http_request("GET", url(f, "/down"), NULL, NULL, 0,
					 &f->o, &r, NULL), 0);
	assert_int_equal(r.status, 500);
	assert_int_equal(r.attempts, 3);
	assert_string_equal(r.body, "boom");
	assert_int_equal(sr_testsrv_count(f->srv, "GET", "/down"), 3);
	sr_http_resp_free(&r);
}

static void test_no_retry_on_4xx(void **state)
{
	struct fx *f = *state;
	struct sr_http_resp r;

	/* unrouted path: the server's 404 */
	assert_int_equal(sr_http_request("GET", url(f, "/missing"), NULL, NULL, 0,
					 &f->o, &r, NULL), 0);
	assert_int_equal(r.status, 404);
	assert_int_equal(r.attempts, 1);
	sr_http_resp_free(&r);
	sr_testsrv_reply(f->srv, "DELETE", "/x", 403, NULL, "no", 0);
	assert_int_equal(sr_http_request("DELETE", url(f, "/x"), NULL, NULL, 0,
					 &f->o, &r, NULL), 0);
	assert_int_equal(r.status, 403);
	assert_int_equal(r.attempts, 1);
	assert_int_equal(sr_testsrv_count(f->srv, "GET", "/missing"), 1);
	assert_int_equal(sr_testsrv_count(f->srv, "DELETE", "/x"), 1);
	sr_http_resp_free(&r);
}

static void test_timeout(void **state)
{
	struct fx *f = *state;
	struct sr_http_resp r;
	struct sr_err e = { 0 };

	f->o.timeout_ms = 200;
	f->o.max_retries = 1;
	sr_testsrv_reply(f->srv, "GET", "/slow", 200, NULL, "late", 3000);
	assert_int_equal(sr_http_request("GET", url(f, "/slow?sig=SECRET"), NULL,
					 NULL, 0, &f->o, &r, &e), -SR_ETIMEOUT);
	assert_int_equal(r.status, 0);
	assert_int_equal(r.attempts, 2);
	assert_null(r.body);
	assert_non_null(strstr(e.msg, "GET "));
	assert_non_null(strstr(e.msg, "/slow"));
	assert_null(strstr(e.msg, "SECRET"));
	assert_non_null(strstr(e.msg, "after 2 attempts"));
	sr_http_resp_free(&r);
}

static void test_connect_refused(void **state)
{
	struct fx *f = *state;
	struct sr_http_resp r;
	struct sr_err e = { 0 };
	char u[64];
	struct sr_testsrv *tmp = sr_testsrv_start(0);

	/* a port that was just free: start then stop a server on it */
	assert_non_null(tmp);
	snprintf(u, sizeof(u), "%s/", sr_testsrv_url(tmp));
	sr_testsrv_stop(tmp);
	f->o.max_retries = 2;
	assert_int_equal(sr_http_request("GET", u, NULL, NULL, 0, &f->o, &r, &e),
			 -SR_EHTTP);
	assert_int_equal(r.attempts, 3);
	assert_int_equal(e.code, -SR_EHTTP);
	sr_http_resp_free(&r);
	/* malformed URL: not retried */
	assert_int_equal(sr_http_request("GET", "nope://x", NULL, NULL, 0, &f->o,
					 &r, &e), -SR_EHTTP);
	assert_int_equal(r.attempts, 1);
	sr_http_resp_free(&r);
}

static void test_max_body(void **state)
{
	struct fx *f = *state;
	struct sr_http_resp r;
	struct sr_err e = { 0 };

	f->o.max_body = 4;
	sr_testsrv_reply(f->srv, "GET", "/big", 200, NULL, "0123456789", 0);
	assert_int_equal(sr_http_request("GET", url(f, "/big"), NULL, NULL, 0,
					 &f->o, &r, &e), -EFBIG);
	assert_int_equal(r.attempts, 1);
	assert_non_null(strstr(e.msg, "larger than 4 bytes"));
	sr_http_resp_free(&r);
}

static int echo_handler(void *ud, const struct sr_testsrv_req *req,
			int *status, char **ctype, char **body, size_t *len)
{
	int *calls = ud;

	(*calls)++;
	if (strcmp(req->path, "/echo") != 0)
		return -1;
	*status = 202;
	*ctype = strdup("text/plain");
	*body = strdup(req->body);
	*len = req->body_len;
	return 0;
}

static void test_handler_and_queue(void **state)
{
	struct fx *f = *state;
	struct sr_http_resp r;
	int calls = 0;

	sr_testsrv_set_handler(f->srv, echo_handler, &calls);
	assert_int_equal(sr_http_request("POST", url(f, "/echo"), NULL, "ping", 4,
					 &f->o, &r, NULL), 0);
	assert_int_equal(r.status, 202);
	assert_string_equal(r.body, "ping");
	sr_http_resp_free(&r);
	assert_int_equal(sr_http_request("GET", url(f, "/other"), NULL, NULL, 0,
					 &f->o, &r, NULL), 0);
	assert_int_equal(r.status, 404);
	sr_http_resp_free(&r);
	assert_int_equal(calls, 2);

	/* queue: served in order, the last one repeats */
	sr_testsrv_reply(f->srv, "GET", "/q", 200, NULL, "one", 0);
	sr_testsrv_reply(f->srv, "GET", "/q", 200, NULL, "two", 0);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(sr_http_request("GET", url(f, "/q"), NULL, NULL, 0,
						 NULL, &r, NULL), 0);
		assert_string_equal(r.body, i == 0 ? "one" : "two");
		sr_http_resp_free(&r);
	}
	/* HEAD */
	sr_testsrv_reply(f->srv, "HEAD", "/h", 200, "text/plain", "", 0);
	assert_int_equal(sr_http_request("HEAD", url(f, "/h"), NULL, NULL, 0,
					 NULL, &r, NULL), 0);
	assert_int_equal(r.status, 200);
	sr_http_resp_free(&r);
	sr_http_resp_free(NULL);
	sr_testsrv_stop(NULL);
}

/* Issue 10: a POST that may have reached the server is not sent again
 * unless it carries an Idempotency-Key (or the caller opts in). */
static void test_post_not_repeated_without_key(void **state)
{
	struct fx *f = *state;
	const char *key[] = { "Idempotency-Key: 0123456789abcdef", NULL };
	struct sr_http_resp r;
	struct sr_err e = { 0 };

	f->o.max_retries = 2;
	sr_testsrv_reply(f->srv, "POST", "/jobs", 503, NULL, "busy", 0);
	assert_int_equal(sr_http_request("POST", url(f, "/jobs"), NULL, "{}", 2,
					 &f->o, &r, NULL), 0);
	assert_int_equal(r.status, 503);
	assert_int_equal(r.attempts, 1);
	sr_http_resp_free(&r);
	assert_int_equal(sr_testsrv_count(f->srv, "POST", "/jobs"), 1);

	/* a timeout: the server may have acted on it, so no second send */
	f->o.timeout_ms = 200;
	sr_testsrv_reply(f->srv, "POST", "/slow", 200, NULL, "late", 1500);
	assert_int_equal(sr_http_request("POST", url(f, "/slow"), NULL, "{}", 2,
					 &f->o, &r, &e), -SR_ETIMEOUT);
	assert_int_equal(r.attempts, 1);
	sr_http_resp_free(&r);

	/* with a key the same 503 is retried */
	f->o.timeout_ms = 5000;
	sr_testsrv_reply(f->srv, "POST", "/keyed", 503, NULL, "busy", 0);
	sr_testsrv_reply(f->srv, "POST", "/keyed", 201, NULL, "made", 0);
	assert_int_equal(sr_http_request("POST", url(f, "/keyed"), key, "{}", 2,
					 &f->o, &r, NULL), 0);
	assert_int_equal(r.status, 201);
	assert_int_equal(r.attempts, 2);
	sr_http_resp_free(&r);
	/* and so is an opted-in POST (an alert webhook) */
	f->o.retry_unsafe = 1;
	sr_testsrv_reply(f->srv, "POST", "/hook2", 500, NULL, "x", 0);
	sr_testsrv_reply(f->srv, "POST", "/hook2", 200, NULL, "ok", 0);
	assert_int_equal(sr_http_request("POST", url(f, "/hook2"), NULL, "{}", 2,
					 &f->o, &r, NULL), 0);
	assert_int_equal(r.attempts, 2);
	sr_http_resp_free(&r);
	assert_true(sr_http_method_idempotent("PUT"));
	assert_false(sr_http_method_idempotent("POST"));
	assert_false(sr_http_method_idempotent("PATCH"));
}

/* Issue 10: a client bound to the port it connects to (nothing listens)
 * connects to itself (TCP simultaneous open); that is refused. */
static void test_self_connect_refused(void **state)
{
	struct fx *f = *state;
	struct sr_testsrv *tmp = sr_testsrv_start(0);
	struct sr_http_resp r;
	struct sr_err e = { 0 };
	char u[64];
	int port;

	assert_non_null(tmp);
	port = sr_testsrv_port(tmp);
	sr_testsrv_stop(tmp);
	snprintf(u, sizeof(u), "http://127.0.0.1:%d/", port);
	f->o.max_retries = 0;
	f->o.local_port = port;
	assert_int_equal(sr_http_request("GET", u, NULL, NULL, 0, &f->o, &r, &e),
			 -SR_EHTTP);
	assert_non_null(strstr(e.msg, "connected to itself"));
	sr_http_resp_free(&r);
	assert_true(sr_http__self_connect("127.0.0.1", 5, "127.0.0.1", 5));
	assert_false(sr_http__self_connect("127.0.0.1", 5, "127.0.0.1", 6));
	assert_false(sr_http__self_connect("127.0.0.2", 5, "127.0.0.1", 5));
}

static void test_backoff_bounds(void **state)
{
	struct sr_http_opts o;
	unsigned seed = 12345;
	long maxseen[8] = { 0 };

	(void)state;
	sr_http_opts_default(&o);
	assert_int_equal(o.timeout_ms, 10000);
	assert_int_equal(o.connect_timeout_ms, 2000);
	assert_int_equal(o.max_retries, 3);
	assert_int_equal(o.backoff_base_ms, 100);
	assert_int_equal(o.backoff_max_ms, 5000);
	assert_int_equal(o.max_body, (size_t)64 << 20);
	for (int i = 0; i < 2000; i++) {
		for (int a = 1; a <= 7; a++) {
			long ceil_ms = 100L << (a - 1);
			long b = sr_http_backoff_ms(&o, a, &seed);

			if (ceil_ms > 5000)
				ceil_ms = 5000;
			assert_true(b >= 0 && b <= ceil_ms);
			if (b > maxseen[a])
				maxseen[a] = b;
		}
	}
	/* jitter spans the range: over 2000 draws the max nears the ceiling */
	assert_true(maxseen[1] >= 90);
	assert_true(maxseen[3] >= 360);
	assert_true(maxseen[7] >= 4500);
	assert_true(sr_http_backoff_ms(&o, 40, NULL) <= 5000);
	assert_int_equal(sr_http_backoff_ms(&o, 0, &seed), 0);
	/* same seed, same sequence */
	{
		unsigned s1 = 7, s2 = 7;

		assert_int_equal(sr_http_backoff_ms(&o, 5, &s1), sr_http_backoff_ms(&o, 5, &s2));
	}
}

/* Issue 26: a server's Retry-After is the least wait before a retry. */
static void test_retry_after_honoured(void **state)
{
	struct fx *f = *state;
	struct sr_http_resp r;
	int64_t t0;

	sr_testsrv_reply_hdrs(f->srv, "GET", "/ra", 503, NULL, "Retry-After: 1",
			      "busy", 0);
	sr_testsrv_reply(f->srv, "GET", "/ra", 200, NULL, "ok", 0);
	t0 = sr_time_mono_ns();
	assert_int_equal(sr_http_request("GET", url(f, "/ra"), NULL, NULL, 0,
					 &f->o, &r, NULL), 0);
	assert_int_equal(r.status, 200);
	assert_int_equal(r.attempts, 2);
	/* a lower bound only: the backoff alone (<= 5 ms here) is shorter */
	assert_true(sr_time_mono_ns() - t0 >= 900 * INT64_C(1000000));
	sr_http_resp_free(&r);

	/* a Retry-After beyond the deadline ends the retries at once */
	sr_testsrv_reply_hdrs(f->srv, "GET", "/ra2", 503, NULL, "Retry-After: 30",
			      "busy", 0);
	f->o.deadline_mono_ns = sr_time_mono_ns() + 2 * SR_NS_PER_SEC;
	assert_int_equal(sr_http_request("GET", url(f, "/ra2"), NULL, NULL, 0,
					 &f->o, &r, NULL), 0);
	assert_int_equal(r.status, 503);
	assert_int_equal(r.attempts, 1);
	sr_http_resp_free(&r);

	assert_int_equal(sr_http_retry_after_ms("3", 0), 3000);
	assert_int_equal(sr_http_retry_after_ms(" 0 ", 0), 0);
	assert_int_equal(sr_http_retry_after_ms("soon", 0), -1);
	assert_int_equal(sr_http_retry_after_ms("-1", 0), -1);
	/* an HTTP-date: Sun, 06 Nov 1994 08:49:37 GMT is 784111777 */
	assert_int_equal(sr_http_retry_after_ms("Sun, 06 Nov 1994 08:49:37 GMT",
						784111770), 7000);
	assert_int_equal(sr_http_retry_after_ms("Sun, 06 Nov 1994 08:49:37 GMT",
						784111999), 0);
}

/* Issue 23: with a deadline, the deadline bounds the retries, not the
 * count (a store answering 503 SlowDown for a while). */
static void test_deadline_bounds_retries(void **state)
{
	struct fx *f = *state;
	struct sr_http_resp r;
	struct sr_err e = { 0 };

	f->o.max_retries = 1;
	for (int i = 0; i < 5; i++)
		sr_testsrv_reply(f->srv, "PUT", "/slowdown", 503, NULL,
				 "<Error><Code>SlowDown</Code></Error>", 0);
	sr_testsrv_reply(f->srv, "PUT", "/slowdown", 200, NULL, "", 0);
	f->o.deadline_mono_ns = sr_time_mono_ns() + 60 * SR_NS_PER_SEC;
	assert_int_equal(sr_http_request("PUT", url(f, "/slowdown"), NULL, "x", 1,
					 &f->o, &r, &e), 0);
	assert_int_equal(r.status, 200);
	assert_int_equal(r.attempts, 6);
	sr_http_resp_free(&r);

	/* a store that never recovers: the call returns at the deadline
	 * with the last answer */
	sr_testsrv_reply(f->srv, "GET", "/down", 503, NULL, "busy", 0);
	f->o.deadline_mono_ns = sr_time_mono_ns() + SR_NS_PER_SEC / 2;
	assert_int_equal(sr_http_request("GET", url(f, "/down"), NULL, NULL, 0,
					 &f->o, &r, &e), 0);
	assert_int_equal(r.status, 503);
	assert_true(r.attempts > 2);
	assert_true(sr_time_mono_ns() < f->o.deadline_mono_ns + SR_NS_PER_SEC);
	sr_http_resp_free(&r);

	/* a deadline already passed: a timeout, no request sent */
	f->o.timeout_ms = 5000;
	sr_testsrv_reply(f->srv, "GET", "/late", 200, NULL, "late", 1500);
	f->o.deadline_mono_ns = sr_time_mono_ns() + SR_NS_PER_SEC / 5;
	assert_int_equal(sr_http_request("GET", url(f, "/late"), NULL, NULL, 0,
					 &f->o, &r, &e), -SR_ETIMEOUT);
	sr_http_resp_free(&r);
}

struct signer {
	int calls;
};

static int sign_attempt(void *ud, const struct sr_http_req *rq,
			struct sr_http_hdrs *h, struct sr_err *e)
{
	struct signer *s = ud;

	(void)rq;
	(void)e;
	return sr_http_hdrs_add(h, "X-Signature: attempt-%d", ++s->calls);
}

/* Every attempt is signed again (a retry after a long backoff carries a
 * fresh date and signature). */
static void test_resign_each_attempt(void **state)
{
	struct fx *f = *state;
	struct signer sg = { 0 };
	const char *const fixed[] = { "X-Fixed: 1", NULL };
	struct sr_http_req rq = {
		.method = "DELETE", .url = url(f, "/obj"), .headers = fixed,
		.sign = sign_attempt, .sign_ud = &sg,
	};
	struct sr_http_resp r;
	char v[64];

	sr_testsrv_reply(f->srv, "DELETE", "/obj", 500, NULL, "", 0);
	sr_testsrv_reply(f->srv, "DELETE", "/obj", 502, NULL, "", 0);
	sr_testsrv_reply(f->srv, "DELETE", "/obj", 204, NULL, "", 0);
	assert_int_equal(sr_http_do(&rq, &f->o, &r, NULL), 0);
	assert_int_equal(r.status, 204);
	assert_int_equal(sg.calls, 3);
	for (size_t i = 0; i < 3; i++) {
		const struct sr_testsrv_req *q = sr_testsrv_req(f->srv, i);
		char want[32];

		snprintf(want, sizeof want, "attempt-%zu", i + 1);
		assert_int_equal(sr_testsrv_req_header(q, "x-signature", v,
						       sizeof v), 0);
		assert_string_equal(v, want);
		assert_int_equal(sr_testsrv_req_header(q, "x-fixed", v,
						       sizeof v), 0);
	}
	sr_http_resp_free(&r);
}

static int collect(void *ud, uint64_t pos, const void *p, size_t n)
{
	char *buf = ud;

	memcpy(buf + pos, p, n);
	return 0;
}

static int refuse(void *ud, uint64_t pos, const void *p, size_t n)
{
	(void)ud;
	(void)pos;
	(void)p;
	(void)n;
	return -SR_ECHECKSUM;
}

/* A body from a file range; a fixed-length answer into a buffer or a
 * sink; an answer cut short is retried, then an error. */
static void test_fd_body_sink_and_short_answer(void **state)
{
	struct fx *f = *state;
	char path[] = "/tmp/spotrun-http-XXXXXX", got[16] = { 0 };
	int fd = mkstemp(path);
	struct sr_http_resp r;
	struct sr_err e = { 0 };
	const struct sr_testsrv_req *q;

	assert_true(fd >= 0);
	unlink(path);
	assert_int_equal(write(fd, "0123456789", 10), 10);
	{
		struct sr_http_req rq = {
			.method = "PUT", .url = url(f, "/part"),
			.body_from_fd = true, .body_fd = fd, .body_off = 3,
			.body_len = 5,
		};

		sr_testsrv_reply(f->srv, "PUT", "/part", 503, NULL, "", 0);
		sr_testsrv_reply(f->srv, "PUT", "/part", 200, NULL, "", 0);
		assert_int_equal(sr_http_do(&rq, &f->o, &r, NULL), 0);
		assert_int_equal(r.attempts, 2);
		sr_http_resp_free(&r);
		/* each attempt re-read the range from its offset */
		for (size_t i = 0; i < 2; i++) {
			q = sr_testsrv_req(f->srv, i);
			assert_int_equal(q->body_len, 5);
			assert_memory_equal(q->body, "34567", 5);
		}
	}
	close(fd);
	{
		struct sr_http_req rq = {
			.method = "GET", .url = url(f, "/range"), .dst = got,
			.dst_len = 6,
		};

		sr_testsrv_reply(f->srv, "GET", "/range", 206, NULL, "abcdef", 0);
		assert_int_equal(sr_http_do(&rq, &f->o, &r, NULL), 0);
		assert_int_equal(r.status, 206);
		assert_null(r.body);
		assert_int_equal(r.body_len, 6);
		assert_memory_equal(got, "abcdef", 6);
		sr_http_resp_free(&r);
		rq.dst = NULL;
		rq.sink = collect;
		rq.sink_ud = got;
		memset(got, 0, sizeof got);
		assert_int_equal(sr_http_do(&rq, &f->o, &r, NULL), 0);
		assert_memory_equal(got, "abcdef", 6);
		sr_http_resp_free(&r);
		/* a sink's own error stops the request, not retried */
		rq.sink = refuse;
		assert_int_equal(sr_http_do(&rq, &f->o, &r, &e), -SR_ECHECKSUM);
		assert_int_equal(r.attempts, 1);
		sr_http_resp_free(&r);
		/* an error status is not written to dst: it is the answer */
		rq.sink = NULL;
		rq.dst = got;
		sr_testsrv_reply(f->srv, "GET", "/gone", 416, NULL, "<Error/>", 0);
		rq.url = url(f, "/gone");
		assert_int_equal(sr_http_do(&rq, &f->o, &r, NULL), 0);
		assert_int_equal(r.status, 416);
		assert_string_equal(r.body, "<Error/>");
		sr_http_resp_free(&r);
		/* too short: retried, then an error naming the bytes */
		f->o.max_retries = 2;
		sr_testsrv_reply(f->srv, "GET", "/short", 206, NULL, "abc", 0);
		rq.url = url(f, "/short");
		assert_int_equal(sr_http_do(&rq, &f->o, &r, &e), -SR_EHTTP);
		assert_int_equal(r.attempts, 3);
		assert_non_null(strstr(e.msg, "3 of 6 bytes"));
		sr_http_resp_free(&r);
	}
}

/* A file body is paced: body_pace runs before every read of it, and
 * while it blocks nothing more of the body goes out (the server has not
 * got the request); released, the whole body arrives intact. */
struct pace {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int calls, held, released;
};

static void pace_fn(void *ud)
{
	struct pace *p = ud;

	pthread_mutex_lock(&p->mu);
	p->calls++;
	p->held = 1;
	pthread_cond_broadcast(&p->cv);
	while (!p->released)
		pthread_cond_wait(&p->cv, &p->mu);
	pthread_mutex_unlock(&p->mu);
}

struct paced_put {
	struct fx *f;
	struct sr_http_req rq;
	int rc;
};

static void *paced_put_thread(void *arg)
{
	struct paced_put *pp = arg;
	struct sr_http_resp r;

	pp->rc = sr_http_do(&pp->rq, &pp->f->o, &r, NULL);
	if (pp->rc == 0 && r.status != 200)
		pp->rc = -1;
	sr_http_resp_free(&r);
	return NULL;
}

static void test_fd_body_paced(void **state)
{
	struct fx *f = *state;
	enum { LEN = 1 << 20 };
	char path[] = "/tmp/spotrun-http-XXXXXX";
	char *data = malloc(LEN);
	int fd = mkstemp(path);
	struct pace p = { .calls = 0 };
	struct paced_put pp = { .f = f };
	const struct sr_testsrv_req *q;
	pthread_t th;

	assert_non_null(data);
	assert_true(fd >= 0);
	unlink(path);
	for (size_t i = 0; i < LEN; i++)
		data[i] = (char)(i * 7 + i / 4096);
	assert_int_equal(write(fd, data, LEN), LEN);
	pthread_mutex_init(&p.mu, NULL);
	pthread_cond_init(&p.cv, NULL);
	sr_testsrv_reply(f->srv, "PUT", "/paced", 200, NULL, "", 0);
	pp.rq = (struct sr_http_req){
		.method = "PUT", .url = url(f, "/paced"), .body_from_fd = true,
		.body_fd = fd, .body_len = LEN, .body_pace = pace_fn,
		.body_pace_ud = &p,
	};
	assert_int_equal(pthread_create(&th, NULL, paced_put_thread, &pp), 0);
	pthread_mutex_lock(&p.mu);
	while (!p.held)
		pthread_cond_wait(&p.cv, &p.mu);
	pthread_mutex_unlock(&p.mu);
	/* held before its first read: a while later, still nothing */
	nanosleep(&(struct timespec){ 0, 200000000 }, NULL);
	assert_int_equal(sr_testsrv_nreq(f->srv), 0);
	pthread_mutex_lock(&p.mu);
	p.released = 1;
	pthread_cond_broadcast(&p.cv);
	pthread_mutex_unlock(&p.mu);
	pthread_join(th, NULL);
	assert_int_equal(pp.rc, 0);
	q = sr_testsrv_req(f->srv, 0);
	assert_non_null(q);
	assert_int_equal(q->body_len, LEN);
	assert_memory_equal(q->body, data, LEN);
	/* one call per read: a 1 MiB body takes more than one */
	assert_true(p.calls > 1);
	/* a memory body is not paced */
	p.calls = 0;
	sr_testsrv_reply(f->srv, "PUT", "/paced", 200, NULL, "", 0);
	pp.rq.body_from_fd = false;
	pp.rq.body = data;
	paced_put_thread(&pp);
	assert_int_equal(pp.rc, 0);
	assert_int_equal(p.calls, 0);
	pthread_cond_destroy(&p.cv);
	pthread_mutex_destroy(&p.mu);
	close(fd);
	free(data);
}

static void test_cancelled(void **state)
{
	struct fx *f = *state;
	atomic_int flag;
	struct sr_http_resp r;
	struct sr_err e = { 0 };

	atomic_init(&flag, 1);
	f->o.cancel = &flag;
	assert_int_equal(sr_http_request("GET", url(f, "/x"), NULL, NULL, 0,
					 &f->o, &r, &e), -ECANCELED);
	assert_int_equal(sr_testsrv_nreq(f->srv), 0);
	sr_http_resp_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_get_headers, setup, teardown),
		cmocka_unit_test_setup_teardown(test_post_put_body, setup, teardown),
		cmocka_unit_test_setup_teardown(test_retry_503_then_ok, setup, teardown),
		cmocka_unit_test_setup_teardown(test_retries_exhausted, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_retry_on_4xx, setup, teardown),
		cmocka_unit_test_setup_teardown(test_post_not_repeated_without_key, setup, teardown),
		cmocka_unit_test_setup_teardown(test_self_connect_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_timeout, setup, teardown),
		cmocka_unit_test_setup_teardown(test_connect_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_max_body, setup, teardown),
		cmocka_unit_test_setup_teardown(test_handler_and_queue, setup, teardown),
		cmocka_unit_test(test_backoff_bounds),
		cmocka_unit_test_setup_teardown(test_retry_after_honoured, setup, teardown),
		cmocka_unit_test_setup_teardown(test_deadline_bounds_retries, setup, teardown),
		cmocka_unit_test_setup_teardown(test_resign_each_attempt, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fd_body_sink_and_short_answer, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fd_body_paced, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cancelled, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
