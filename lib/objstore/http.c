/*
 * http.c - one object-store request over libcurl, retried.
 *
 * Retry policy (per request):
 *     no response (reset, refused, timeout, short body)   -> retry
 *     408, 429, 500, 502, 503, 504                         -> retry
 *     anything else                                         -> final
 * Before retry k the thread sleeps a uniform random time in
 * [0, min(max, base * 2^(k-1))] ms (full jitter, sr_http_backoff_ms), and
 * at least the server's Retry-After (seconds; capped at backoff_max_ms).
 * Every attempt re-runs the signer, re-reads a file body from its offset
 * and restarts a fixed response buffer at its first byte, so a retried
 * part or range is sent or received whole.  A transfer that moves fewer
 * than 1 byte/s for low_speed_s seconds is abandoned and retried.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "os_int.h"
#include "common/http.h"
#include "common/log.h"

struct xfer {
	const struct os_req *rq;
	struct os_resp *resp;
	size_t cap;           /* growing buffer's capacity */
	size_t sent;          /* body bytes handed to curl */
	long retry_after_s;
	int overflow;
	atomic_int *cancel;
};

static size_t on_body(char *p, size_t sz, size_t nm, void *ud)
{
	struct xfer *x = ud;
	struct os_resp *r = x->resp;
	size_t n = sz * nm;

	if (x->cancel && atomic_load(x->cancel))
		return 0;
	/* error bodies of a ranged GET go to the growing buffer */
	if ((x->rq->dst || x->rq->sink) && r->status / 100 == 2) {
		if (n > x->rq->dst_len - r->len) {
			x->overflow = 1;
			return 0;
		}
		if (x->rq->sink) {
			if (x->rq->sink(x->rq->sink_ud, r->len, p, n))
				return 0;
		} else {
			memcpy((char *)x->rq->dst + r->len, p, n);
		}
		r->len += n;
		return n;
	}
	{
		size_t max = x->rq->max_resp ? x->rq->max_resp : (1u << 20);

		if (r->len + n > max) {
			x->overflow = 1;
			return 0;
		}
		if (r->len + n + 1 > x->cap) {
			size_t nc = x->cap ? x->cap * 2 : 4096;
			char *nb;

			while (nc < r->len + n + 1)
				nc *= 2;
			nb = realloc(r->body, nc);
			if (!nb)
				return 0;
			r->body = nb;
			x->cap = nc;
		}
		memcpy(r->body + r->len, p, n);
		r->len += n;
		r->body[r->len] = 0;
	}
	return n;
}

static size_t on_header(char *p, size_t sz, size_t nm, void *ud)
{
	struct xfer *x = ud;
	size_t n = sz * nm, k;

	if (n > 5 && !strncmp(p, "HTTP/", 5)) {
		/* a new response (after 100-continue, or a redirect) */
		long st = 0;

		if (sscanf(p, "HTTP/%*s %ld", &st) == 1)
			x->resp->status = st;
		return n;
	}
	k = n;
	while (k && (p[k - 1] == '\r' || p[k - 1] == '\n'))
		k--;
	if (k > 5 && !strncasecmp(p, "ETag:", 5)) {
		const char *v = p + 5;
		size_t vl = k - 5;

		while (vl && *v == ' ') {
			v++;
			vl--;
		}
		if (vl >= sizeof x->resp->etag)
			vl = sizeof x->resp->etag - 1;
		memcpy(x->resp->etag, v, vl);
		x->resp->etag[vl] = 0;
	} else if (k > 12 && !strncasecmp(p, "Retry-After:", 12)) {
		char tmp[32];
		size_t vl = k - 12 < sizeof tmp - 1 ? k - 12 : sizeof tmp - 1;

		memcpy(tmp, p + 12, vl);
		tmp[vl] = 0;
		x->retry_after_s = strtol(tmp, NULL, 10);
	}
	return n;
}

static size_t on_read(char *p, size_t sz, size_t nm, void *ud)
{
	struct xfer *x = ud;
	const struct os_req *rq = x->rq;
	size_t want = sz * nm, left = rq->body_len - x->sent;
	ssize_t got;

	if (x->cancel && atomic_load(x->cancel))
		return CURL_READFUNC_ABORT;
	if (want > left)
		want = left;
	if (want == 0)
		return 0;
	if (rq->body_fd < 0) {
		memcpy(p, (const char *)rq->body + x->sent, want);
		x->sent += want;
		return want;
	}
	got = pread(rq->body_fd, p, want, (off_t)(rq->body_off + x->sent));
	if (got <= 0)
		return CURL_READFUNC_ABORT;
	x->sent += (size_t)got;
	return (size_t)got;
}

int os_hdr(struct curl_slist **l, const char *fmt, ...)
{
	char buf[2048];
	struct curl_slist *n;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	n = curl_slist_append(*l, buf);
	if (!n)
		return -ENOMEM;
	*l = n;
	return 0;
}

void os_resp_free(struct os_resp *r)
{
	if (!r)
		return;
	free(r->body);
	r->body = NULL;
}

static int retryable(long st)
{
	return st == 408 || st == 429 || st == 500 || st == 502 ||
	       st == 503 || st == 504;
}

static void parse_error_body(struct os_resp *r)
{
	char *c, *m;

	r->err_code[0] = r->err_msg[0] = 0;
	if (!r->body || r->len == 0 || r->body[0] != '<')
		return;
	c = os_xml_text(r->body, r->len, "Code");
	m = os_xml_text(r->body, r->len, "Message");
	if (c)
		snprintf(r->err_code, sizeof r->err_code, "%s", c);
	if (m)
		snprintf(r->err_msg, sizeof r->err_msg, "%s", m);
	free(c);
	free(m);
}

int os_status_err(const struct os_req *rq, const struct os_resp *r,
		  struct sr_err *e)
{
	int code = -SR_EHTTP;

	if (r->status == 404)
		code = -SR_ENOTFOUND;
	else if (r->status == 401 || r->status == 403)
		code = -EACCES;
	return sr_err_set(e, code, "%s: HTTP %ld%s%s%s%s", rq->what, r->status,
			  r->err_code[0] ? " " : "", r->err_code,
			  r->err_msg[0] ? ": " : "", r->err_msg);
}

static void sleep_ms(long ms, atomic_int *cancel)
{
	while (ms > 0 && !(cancel && atomic_load(cancel))) {
		long step = ms > 50 ? 50 : ms;
		struct timespec ts = { step / 1000, (step % 1000) * 1000000L };

		nanosleep(&ts, NULL);
		ms -= step;
	}
}

/* One attempt.  Returns the CURLcode. */
static CURLcode attempt(struct objstore *s, struct xfer *x,
			struct curl_slist *hdrs)
{
	const struct os_req *rq = x->rq;
	CURL *c = curl_easy_init();
	CURLcode cc;

	if (!c)
		return CURLE_OUT_OF_MEMORY;
	curl_easy_setopt(c, CURLOPT_URL, rq->url);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, rq->method);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, s->cfg.connect_timeout_ms);
	curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, s->cfg.low_speed_s);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, x);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, x);
	curl_easy_setopt(c, CURLOPT_TCP_NODELAY, 1L);
	if (!strcmp(rq->method, "HEAD"))
		curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
	if (rq->body || rq->body_fd >= 0 || !strcmp(rq->method, "PUT") ||
	    !strcmp(rq->method, "POST")) {
		curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
		curl_easy_setopt(c, CURLOPT_READFUNCTION, on_read);
		curl_easy_setopt(c, CURLOPT_READDATA, x);
		curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE,
				 (curl_off_t)rq->body_len);
	}
	cc = curl_easy_perform(c);
	curl_easy_cleanup(c);
	return cc;
}

int os_http(struct objstore *s, const struct os_req *rq, struct os_resp *resp,
	    struct sr_err *e)
{
	struct curl_slist *hdrs = NULL;
	struct sr_http_opts bo;
	struct xfer x;
	int rc = 0;

	memset(resp, 0, sizeof *resp);
	sr_http_global_init();
	sr_http_opts_default(&bo);
	bo.backoff_base_ms = s->cfg.backoff_base_ms;
	bo.backoff_max_ms = s->cfg.backoff_max_ms;
	for (int a = 0;; a++) {
		CURLcode cc;
		long wait;

		if (s->cancel && atomic_load(s->cancel)) {
			rc = sr_err_set(e, -ECANCELED, "%s: cancelled", rq->what);
			goto out;
		}
		memset(&x, 0, sizeof x);
		x.rq = rq;
		x.resp = resp;
		x.cancel = s->cancel;
		free(resp->body);
		resp->body = NULL;
		resp->len = 0;
		resp->status = 0;
		resp->etag[0] = 0;
		resp->attempts = a + 1;
		curl_slist_free_all(hdrs);
		hdrs = NULL;
		rc = rq->sign ? rq->sign(rq, rq->sign_ud, &hdrs, e) : 0;
		if (rc)
			goto out;
		/* curl adds "Expect: 100-continue" to large uploads; the
		 * round trip costs more than it saves on a signed request */
		rc = os_hdr(&hdrs, "Expect:");
		if (rc)
			goto out;
		cc = attempt(s, &x, hdrs);
		if (cc == CURLE_OK && x.overflow == 0 && resp->status / 100 == 2 &&
		    (rq->dst || rq->sink) && resp->len != rq->dst_len &&
		    resp->status != 204) {
			/* a body cut short; the proxy or server reset it */
			cc = CURLE_PARTIAL_FILE;
		}
		if (cc == CURLE_OK && !retryable(resp->status)) {
			/* a final response: rc 0, the caller reads the status;
			 * a non-2xx one is also described in *e */
			if (resp->status / 100 != 2) {
				parse_error_body(resp);
				os_status_err(rq, resp, e);
			}
			rc = 0;
			goto out;
		}
		if (x.overflow && cc != CURLE_OK && !retryable(resp->status)) {
			rc = sr_err_set(e, -SR_EHTTP, "%s: response larger than "
					"expected", rq->what);
			goto out;
		}
		if (s->cancel && atomic_load(s->cancel)) {
			rc = sr_err_set(e, -ECANCELED, "%s: cancelled", rq->what);
			goto out;
		}
		if (a >= s->cfg.retries) {
			if (cc == CURLE_OK) {
				parse_error_body(resp);
				os_status_err(rq, resp, e);
				rc = 0;
			} else {
				rc = sr_err_set(e, -SR_EHTTP, "%s: %s (after %d "
						"attempts)", rq->what,
						curl_easy_strerror(cc), a + 1);
			}
			goto out;
		}
		wait = sr_http_backoff_ms(&bo, a + 1, NULL);
		if (x.retry_after_s > 0) {
			long ra = x.retry_after_s * 1000;

			if (ra > s->cfg.backoff_max_ms)
				ra = s->cfg.backoff_max_ms;
			if (ra > wait)
				wait = ra;
		}
		sr_debug("objstore", "retrying", "what=\"%s\" attempt=%d status=%ld "
			 "curl=\"%s\" wait_ms=%ld", rq->what, a + 1, resp->status,
			 curl_easy_strerror(cc), wait);
		sleep_ms(wait, s->cancel);
	}
out:
	curl_slist_free_all(hdrs);
	return rc;
}
