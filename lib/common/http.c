/*
 * http.c - one libcurl easy handle per request, retried with backoff.
 *
 * Retry policy, per attempt:
 *     the request never left (DNS, connection refused or self-connected)
 *                                              -> retry, any method
 *     transport error after it may have been sent (send/recv, timeout,
 *       empty reply) or HTTP 429 / 5xx         -> retry only when the
 *       request is safe to repeat: GET, HEAD, PUT, DELETE, OPTIONS, or a
 *       request carrying an Idempotency-Key header, or opts->retry_unsafe
 *     any other status (2xx, 3xx, other 4xx)   -> return at once
 *     local errors (bad URL, out of memory, body over max_body) -> fail
 * A POST that timed out may have been applied by the server: sending it
 * again without a key would apply it twice (issue 10: one `spotrun
 * launch` against a stalled daemon created three jobs).
 *
 * Self-connect: a connection to an unused port of the ephemeral range on
 * this host can connect to itself (TCP simultaneous open, when the kernel
 * picks the destination port as the source port).  That socket then holds
 * the port the daemon wants to bind.  The pre-request callback compares
 * both ends and aborts such a connection (a "connection refused").
 * Before retry k (1-based) we sleep sr_http_backoff_ms(opts, k): full
 * jitter, uniform in [0, min(max, base * 2^(k-1))].  After the last
 * attempt a 429/5xx response is returned as a response (rc 0); a
 * transport failure is returned as -SR_ETIMEOUT or -SR_EHTTP.
 * URLs in error messages are cut at '?' (presigned queries are secrets).
 */
#include "http.h"
#include "timeutil.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

static pthread_once_t http_once = PTHREAD_ONCE_INIT;

static void http_init_once(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
}

void sr_http_global_init(void)
{
	pthread_once(&http_once, http_init_once);
}

void sr_http_opts_default(struct sr_http_opts *o)
{
	o->timeout_ms = 10000;
	o->connect_timeout_ms = 2000;
	o->max_retries = 3;
	o->backoff_base_ms = 100;
	o->backoff_max_ms = 5000;
	o->max_body = (size_t)64 << 20;
	o->retry_unsafe = 0;
	o->local_port = 0;
	o->ca_file = NULL;
}

bool sr_http_method_idempotent(const char *method)
{
	static const char *const safe[] = { "GET", "HEAD", "PUT", "DELETE",
					    "OPTIONS", NULL };

	for (size_t i = 0; safe[i]; i++) {
		if (strcmp(method, safe[i]) == 0)
			return true;
	}
	return false;
}

bool sr_http__self_connect(const char *local_ip, long local_port,
			   const char *remote_ip, long remote_port)
{
	return local_port > 0 && local_port == remote_port && local_ip &&
	       remote_ip && strcmp(local_ip, remote_ip) == 0;
}

long sr_http_backoff_ms(const struct sr_http_opts *o, int attempt,
			unsigned *seed)
{
	static __thread unsigned tl_seed;
	static __thread bool tl_seeded;
	struct sr_http_opts d;
	long ceil_ms;
	uint64_t r;

	if (o == NULL) {
		sr_http_opts_default(&d);
		o = &d;
	}
	if (attempt < 1 || o->backoff_base_ms <= 0 || o->backoff_max_ms <= 0)
		return 0;
	ceil_ms = o->backoff_base_ms;
	for (int i = 1; i < attempt && ceil_ms < o->backoff_max_ms; i++)
		ceil_ms *= 2;
	if (ceil_ms > o->backoff_max_ms)
		ceil_ms = o->backoff_max_ms;
	if (seed == NULL) {
		if (!tl_seeded) {
			tl_seed = (unsigned)sr_time_mono_ns() ^
				  (unsigned)(uintptr_t)&tl_seed;
			tl_seeded = true;
		}
		seed = &tl_seed;
	}
	/* two draws: rand_r gives only 31 bits */
	r = ((uint64_t)rand_r(seed) << 31) | (uint64_t)rand_r(seed);
	return (long)(r % ((uint64_t)ceil_ms + 1));
}

struct buf {
	char *p;
	size_t len, cap, max;
	bool too_big, oom;
};

static bool buf_put(struct buf *b, const char *s, size_t n)
{
	if (b->len + n > b->max) {
		b->too_big = true;
		return false;
	}
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 1024;
		char *np;

		while (cap < b->len + n + 1)
			cap *= 2;
		np = realloc(b->p, cap);
		if (np == NULL) {
			b->oom = true;
			return false;
		}
		b->p = np;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
	return true;
}

static size_t on_body(char *ptr, size_t size, size_t nmemb, void *ud)
{
	size_t n = size * nmemb;

	return buf_put(ud, ptr, n) ? n : 0;
}

static size_t on_header(char *ptr, size_t size, size_t nmemb, void *ud)
{
	struct buf *b = ud;
	size_t n = size * nmemb;

	/* a new status line starts a new block (100 Continue, redirects) */
	if (n >= 5 && memcmp(ptr, "HTTP/", 5) == 0)
		b->len = 0;
	return buf_put(b, ptr, n) ? n : 0;
}

/* The request cannot have reached a server. */
static bool never_sent(CURLcode c)
{
	return c == CURLE_COULDNT_RESOLVE_HOST || c == CURLE_COULDNT_CONNECT;
}

static bool transient(CURLcode c)
{
	switch (c) {
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_CONNECT:
	case CURLE_OPERATION_TIMEDOUT:
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_GOT_NOTHING:
	case CURLE_PARTIAL_FILE:
	case CURLE_SSL_CONNECT_ERROR:
		return true;
	default:
		return false;
	}
}

struct prereq {
	bool self_connect;
};

static int on_prereq(void *ud, char *rip, char *lip, int rport, int lport)
{
	struct prereq *p = ud;

	if (sr_http__self_connect(lip, lport, rip, rport)) {
		p->self_connect = true;
		return CURL_PREREQFUNC_ABORT;
	}
	return CURL_PREREQFUNC_OK;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static void resp_reset(struct sr_http_resp *r)
{
	free(r->body);
	free(r->headers);
	r->body = NULL;
	r->headers = NULL;
	r->body_len = 0;
	r->status = 0;
}

/* One attempt.  Fills resp; returns the curl code, or -ENOMEM / -EFBIG
 * (negative) for local failures that must not be retried. */
static int attempt_once(const char *method, const char *url,
			struct curl_slist *hdrs, const void *body,
			size_t body_len, const struct sr_http_opts *o,
			struct sr_http_resp *resp, char *errbuf)
{
	struct buf bb = { .max = o->max_body }, hb = { .max = 1 << 20 };
	struct prereq pq = { false };
	CURL *c = curl_easy_init();
	int rc;

	if (c == NULL)
		return -ENOMEM;
	errbuf[0] = '\0';
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, o->timeout_ms);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, o->connect_timeout_ms);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &bb);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, &hb);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(c, CURLOPT_USERAGENT, "spotrun");
	curl_easy_setopt(c, CURLOPT_PREREQFUNCTION, on_prereq);
	curl_easy_setopt(c, CURLOPT_PREREQDATA, &pq);
	if (o->ca_file)
		curl_easy_setopt(c, CURLOPT_CAINFO, o->ca_file);
	if (o->local_port > 0)
		curl_easy_setopt(c, CURLOPT_LOCALPORT, (long)o->local_port);
	if (strcmp(method, "HEAD") == 0) {
		curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
	} else if (strcmp(method, "GET") != 0 || body != NULL) {
		curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body != NULL ? body : "");
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE,
				 (curl_off_t)(body != NULL ? body_len : 0));
	}
	rc = (int)curl_easy_perform(c);
	if (pq.self_connect) {
		rc = CURLE_COULDNT_CONNECT;
		snprintf(errbuf, CURL_ERROR_SIZE, "connected to itself (no "
			 "server on that port)");
	}
	if (bb.oom || hb.oom)
		rc = -ENOMEM;
	else if (bb.too_big)
		rc = -EFBIG;
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &resp->status);
	curl_easy_cleanup(c);
	if (rc == CURLE_OK && bb.p == NULL && !buf_put(&bb, "", 0))
		rc = -ENOMEM;
	resp->body = bb.p;
	resp->body_len = bb.len;
	resp->headers = hb.p;
	return rc;
}

int sr_http_request(const char *method, const char *url,
		    const char *const *headers, const void *body,
		    size_t body_len, const struct sr_http_opts *opts,
		    struct sr_http_resp *resp, struct sr_err *e)
{
	char errbuf[CURL_ERROR_SIZE];
	struct curl_slist *hdrs = NULL, *t;
	struct sr_http_opts d;
	int ulen, rc = 0, cc = 0;
	bool may_repeat;

	memset(resp, 0, sizeof(*resp));
	if (opts == NULL) {
		sr_http_opts_default(&d);
		opts = &d;
	}
	ulen = (int)strcspn(url, "?");
	may_repeat = opts->retry_unsafe || sr_http_method_idempotent(method);
	for (size_t i = 0; headers != NULL && headers[i] != NULL; i++) {
		if (strncasecmp(headers[i], "Idempotency-Key:", 16) == 0)
			may_repeat = true;
	}
	sr_http_global_init();
	/* no "Expect: 100-continue" round trip for large bodies */
	t = curl_slist_append(hdrs, "Expect:");
	if (t == NULL)
		goto oom;
	hdrs = t;
	for (size_t i = 0; headers != NULL && headers[i] != NULL; i++) {
		t = curl_slist_append(hdrs, headers[i]);
		if (t == NULL)
			goto oom;
		hdrs = t;
	}
	for (int a = 0; a <= opts->max_retries; a++) {
		if (a > 0)
			sleep_ms(sr_http_backoff_ms(opts, a, NULL));
		resp_reset(resp);
		resp->attempts = a + 1;
		cc = attempt_once(method, url, hdrs, body, body_len, opts, resp,
				  errbuf);
		if (cc == -ENOMEM)
			goto oom;
		if (cc == -EFBIG) {
			rc = sr_err_set(e, -EFBIG, "%s %.*s: response larger than %zu bytes",
					method, ulen, url, opts->max_body);
			goto out;
		}
		if (cc == CURLE_OK) {
			if ((resp->status == 429 || resp->status >= 500) &&
			    may_repeat)
				continue;
			goto out;
		}
		if (!transient((CURLcode)cc) ||
		    (!may_repeat && !never_sent((CURLcode)cc)))
			break;
	}
	if (cc == CURLE_OK) /* retries exhausted on 429/5xx: hand it back */
		goto out;
	rc = cc == CURLE_OPERATION_TIMEDOUT ? -SR_ETIMEOUT : -SR_EHTTP;
	sr_err_set(e, rc, "%s %.*s: %s (after %d attempt%s)", method, ulen, url,
		   errbuf[0] ? errbuf : curl_easy_strerror((CURLcode)cc),
		   resp->attempts, resp->attempts == 1 ? "" : "s");
	resp_reset(resp);
	goto out;
oom:
	resp_reset(resp);
	rc = sr_err_set(e, -ENOMEM, "%s %.*s: out of memory", method, ulen, url);
out:
	curl_slist_free_all(hdrs);
	return rc;
}

int sr_http_resp_header(const struct sr_http_resp *r, const char *name,
			char *buf, size_t n)
{
	size_t nl = strlen(name);
	const char *p = r != NULL ? r->headers : NULL;

	while (p != NULL && *p != '\0') {
		const char *eol = strchr(p, '\n');
		size_t ll = eol != NULL ? (size_t)(eol - p) : strlen(p);

		if (ll > nl && p[nl] == ':' && strncasecmp(p, name, nl) == 0) {
			const char *v = p + nl + 1, *end = p + ll;

			while (v < end && (*v == ' ' || *v == '\t'))
				v++;
			while (end > v && (end[-1] == '\r' || end[-1] == ' '))
				end--;
			if (n > 0) {
				size_t k = (size_t)(end - v) < n - 1 ? (size_t)(end - v) : n - 1;

				memcpy(buf, v, k);
				buf[k] = '\0';
			}
			return 0;
		}
		p = eol != NULL ? eol + 1 : NULL;
	}
	return -SR_ENOTFOUND;
}

void sr_http_resp_free(struct sr_http_resp *r)
{
	if (r == NULL)
		return;
	resp_reset(r);
}
