/*
 * http.c - the one HTTP client: one libcurl easy handle per attempt,
 * retried as http.h describes (backoff with full jitter, Retry-After,
 * re-signing, a deadline or a count, cancellation).
 *
 * One attempt:
 *     sign -> headers; perform; on_header tracks the status line (a new
 *     "HTTP/" line starts a new header block: 100 Continue, redirects),
 *     on_body routes a 2xx body to dst / sink (exact length) and any
 *     other body to the growing buffer, on_read streams the request body
 *     from memory or from the file at body_off + sent.
 * Then classify:
 *     local failure (oom, too big, sink error, cancel, overflow) -> final
 *     2xx with a short fixed body                   -> as CURLE_PARTIAL_FILE
 *     a response, not retryable or not repeatable   -> final (rc 0)
 *     a transport error, not transient or (maybe sent and not
 *       repeatable)                                 -> final (rc < 0)
 *     otherwise: retry if the deadline (or the count) allows the wait.
 * A POST that timed out may have been applied by the server: sending it
 * again without a key would apply it twice (issue 10: one `spotrun
 * launch` against a stalled daemon created three jobs).
 *
 * Self-connect: a connection to an unused port of the ephemeral range on
 * this host can connect to itself (TCP simultaneous open, when the kernel
 * picks the destination port as the source port).  That socket then holds
 * the port the daemon wants to bind.  The pre-request callback compares
 * both ends and aborts such a connection (a "connection refused").
 * URLs in error messages are cut at '?' (presigned queries are secrets).
 */
#include "http.h"
#include "log.h"
#include "timeutil.h"

#include <curl/curl.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

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
	memset(o, 0, sizeof *o);
	o->timeout_ms = 10000;
	o->connect_timeout_ms = 2000;
	o->max_retries = 3;
	o->backoff_base_ms = 100;
	o->backoff_max_ms = 5000;
	o->retry_after_max_ms = 60000;
	o->max_body = (size_t)64 << 20;
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

bool sr_http_status_retryable(long st)
{
	return st == 408 || st == 429 ||
	       (st >= 500 && st <= 599 && st != 501 && st != 505);
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

long sr_http_retry_after_ms(const char *v, int64_t now_real_s)
{
	char *end;
	long long s;
	time_t t;

	while (v && (*v == ' ' || *v == '\t'))
		v++;
	if (!v || !*v)
		return -1;
	if (*v >= '0' && *v <= '9') {
		s = strtoll(v, &end, 10);
		while (*end == ' ' || *end == '\t' || *end == '\r')
			end++;
		if (*end || s < 0)
			return -1;
		return s > 86400 ? 86400000L : (long)s * 1000;
	}
	t = curl_getdate(v, NULL);
	if (t == (time_t)-1)
		return -1;
	if ((int64_t)t <= now_real_s)
		return 0;
	s = (long long)t - now_real_s;
	return s > 86400 ? 86400000L : (long)s * 1000;
}

/* ---- buffers and headers ------------------------------------------------ */
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

struct sr_http_hdrs {
	struct curl_slist *l;
};

int sr_http_hdrs_add(struct sr_http_hdrs *h, const char *fmt, ...)
{
	char buf[4096];
	struct curl_slist *n;
	va_list ap;
	int k;

	va_start(ap, fmt);
	k = vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	if (k < 0 || (size_t)k >= sizeof buf)
		return -EINVAL;
	n = curl_slist_append(h->l, buf);
	if (!n)
		return -ENOMEM;
	h->l = n;
	return 0;
}

/* ---- one attempt -------------------------------------------------------- */
struct xfer {
	const struct sr_http_req *rq;
	const struct sr_http_opts *o;
	struct buf body, hdr;
	long status;          /* of the current header block */
	size_t got;           /* 2xx bytes delivered to dst / sink */
	size_t sent;          /* request body bytes handed to curl */
	int sink_rc;          /* a sink's error */
	bool overflow;        /* more 2xx bytes than dst_len */
	bool read_failed;     /* the body file could not be read */
	bool self_connect;
};

static bool cancelled(const struct sr_http_opts *o)
{
	return o->cancel && atomic_load(o->cancel);
}

static bool to_dst(const struct xfer *x)
{
	return (x->rq->dst || x->rq->sink) && x->status / 100 == 2;
}

static size_t on_body(char *p, size_t sz, size_t nm, void *ud)
{
	struct xfer *x = ud;
	size_t n = sz * nm;

	if (cancelled(x->o))
		return 0;
	if (!to_dst(x))
		return buf_put(&x->body, p, n) ? n : 0;
	if (n > x->rq->dst_len - x->got) {
		x->overflow = true;
		return 0;
	}
	if (x->rq->sink) {
		int rc = x->rq->sink(x->rq->sink_ud, x->got, p, n);

		if (rc) {
			x->sink_rc = rc;
			return 0;
		}
	} else {
		memcpy((char *)x->rq->dst + x->got, p, n);
	}
	x->got += n;
	return n;
}

static size_t on_header(char *p, size_t sz, size_t nm, void *ud)
{
	struct xfer *x = ud;
	size_t n = sz * nm;

	if (n >= 5 && memcmp(p, "HTTP/", 5) == 0) {
		/* a new status line starts a new block (100 Continue,
		 * redirects); its status decides where the body goes */
		long st = 0;

		x->hdr.len = 0;
		if (sscanf(p, "HTTP/%*s %ld", &st) == 1)
			x->status = st;
	}
	return buf_put(&x->hdr, p, n) ? n : 0;
}

static size_t on_read(char *p, size_t sz, size_t nm, void *ud)
{
	struct xfer *x = ud;
	const struct sr_http_req *rq = x->rq;
	size_t want = sz * nm, left = rq->body_len - x->sent;
	ssize_t got;

	if (cancelled(x->o))
		return CURL_READFUNC_ABORT;
	if (want > left)
		want = left;
	if (want == 0)
		return 0;
	if (!rq->body_from_fd) {
		memcpy(p, (const char *)rq->body + x->sent, want);
		x->sent += want;
		return want;
	}
	if (rq->body_pace) {
		rq->body_pace(rq->body_pace_ud);
		if (cancelled(x->o))
			return CURL_READFUNC_ABORT;
	}
	got = pread(rq->body_fd, p, want, (off_t)(rq->body_off + x->sent));
	if (got <= 0) {
		x->read_failed = true;
		return CURL_READFUNC_ABORT;
	}
	x->sent += (size_t)got;
	return (size_t)got;
}

static int on_progress(void *ud, curl_off_t dt, curl_off_t dn, curl_off_t ut,
		       curl_off_t un)
{
	struct xfer *x = ud;

	(void)dt;
	(void)dn;
	(void)ut;
	(void)un;
	return cancelled(x->o) ? 1 : 0;
}

static int on_prereq(void *ud, char *rip, char *lip, int rport, int lport)
{
	struct xfer *x = ud;

	if (sr_http__self_connect(lip, lport, rip, rport)) {
		x->self_connect = true;
		return CURL_PREREQFUNC_ABORT;
	}
	return CURL_PREREQFUNC_OK;
}

/* A paced body's socket keeps at most PACE_UNSENT bytes it has not sent
 * yet (TCP_NOTSENT_LOWAT; the congestion window is not limited), so that
 * once body_pace holds the body, what still goes out is that much per
 * request rather than the whole autotuned send buffer (~3 MiB each on
 * loopback, measured).  Best effort: an older kernel keeps its default. */
#define PACE_UNSENT (256 << 10)

static int on_sockopt(void *ud, curl_socket_t fd, curlsocktype purpose)
{
	int v = PACE_UNSENT;

	(void)ud;
	if (purpose == CURLSOCKTYPE_IPCXN)
		(void)setsockopt(fd, IPPROTO_TCP, TCP_NOTSENT_LOWAT, &v, sizeof v);
	return CURL_SOCKOPT_OK;
}

/* Time limit of the next attempt in ms (0 = none). */
static long attempt_limit_ms(const struct sr_http_opts *o)
{
	long t = o->timeout_ms;

	if (o->deadline_mono_ns) {
		int64_t left = (o->deadline_mono_ns - sr_time_mono_ns()) / 1000000;

		if (left < 1)
			left = 1;
		if (t <= 0 || left < t)
			t = (long)left;
	}
	return t;
}

static bool has_body(const struct sr_http_req *rq)
{
	return rq->body || rq->body_from_fd || !strcmp(rq->method, "PUT") ||
	       !strcmp(rq->method, "POST") || !strcmp(rq->method, "PATCH");
}

/* One attempt; returns the curl code (x says what else happened). */
static CURLcode attempt(struct xfer *x, struct curl_slist *hdrs,
			char *errbuf)
{
	const struct sr_http_req *rq = x->rq;
	const struct sr_http_opts *o = x->o;
	CURL *c = curl_easy_init();
	CURLcode cc;

	if (c == NULL)
		return CURLE_OUT_OF_MEMORY;
	errbuf[0] = '\0';
	curl_easy_setopt(c, CURLOPT_URL, rq->url);
	/* the path is sent as written: "/../" is never squashed (an object
	 * key is not a file path, and its signature covers it as is) */
	curl_easy_setopt(c, CURLOPT_PATH_AS_IS, 1L);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, attempt_limit_ms(o));
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, o->connect_timeout_ms);
	if (o->low_speed_s > 0) {
		curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
		curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, o->low_speed_s);
	}
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, x);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, x);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(c, CURLOPT_USERAGENT, "spotrun");
	curl_easy_setopt(c, CURLOPT_TCP_NODELAY, 1L);
	curl_easy_setopt(c, CURLOPT_PREREQFUNCTION, on_prereq);
	curl_easy_setopt(c, CURLOPT_PREREQDATA, x);
	if (o->cancel) {
		curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
		curl_easy_setopt(c, CURLOPT_XFERINFODATA, x);
		curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
	}
	if (o->ca_file)
		curl_easy_setopt(c, CURLOPT_CAINFO, o->ca_file);
	if (o->local_port > 0)
		curl_easy_setopt(c, CURLOPT_LOCALPORT, (long)o->local_port);
	if (strcmp(rq->method, "HEAD") == 0) {
		curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
	} else {
		curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, rq->method);
		if (has_body(rq)) {
			/* streamed from on_read: no Content-Type is added (it
			 * is signed by some stores), the length is exact */
			curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
			curl_easy_setopt(c, CURLOPT_READFUNCTION, on_read);
			curl_easy_setopt(c, CURLOPT_READDATA, x);
			curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE,
					 (curl_off_t)rq->body_len);
			if (rq->body_from_fd && rq->body_pace)
				curl_easy_setopt(c, CURLOPT_SOCKOPTFUNCTION,
						 on_sockopt);
		}
	}
	cc = curl_easy_perform(c);
	if (x->self_connect) {
		cc = CURLE_COULDNT_CONNECT;
		snprintf(errbuf, CURL_ERROR_SIZE, "connected to itself (no "
			 "server on that port)");
	}
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &x->status);
	curl_easy_cleanup(c);
	return cc;
}

/* ---- the retry loop ----------------------------------------------------- */
/* The request cannot have reached a server. */
static bool never_sent(CURLcode c)
{
	return c == CURLE_COULDNT_RESOLVE_HOST || c == CURLE_COULDNT_CONNECT ||
	       c == CURLE_COULDNT_RESOLVE_PROXY;
}

static bool transient(CURLcode c)
{
	switch (c) {
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_RESOLVE_PROXY:
	case CURLE_COULDNT_CONNECT:
	case CURLE_OPERATION_TIMEDOUT:
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_GOT_NOTHING:
	case CURLE_PARTIAL_FILE:
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_HTTP2:
	case CURLE_HTTP2_STREAM:
	case CURLE_WEIRD_SERVER_REPLY:
		return true;
	default:
		return false;
	}
}

/* Sleep ms in slices, so that cancellation is prompt. */
static void sleep_ms(long ms, const struct sr_http_opts *o)
{
	while (ms > 0 && !cancelled(o)) {
		long step = ms > 50 ? 50 : ms;
		struct timespec ts = { step / 1000, (step % 1000) * 1000000L };

		while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
			;
		ms -= step;
	}
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

/* The wait before retry `a` (1-based), or -1 when no retry is allowed. */
static long retry_wait(const struct sr_http_opts *o, int a,
		       const struct sr_http_resp *resp)
{
	long wait = sr_http_backoff_ms(o, a, NULL);
	char v[128];

	if (resp->status && sr_http_resp_header(resp, "Retry-After", v,
						 sizeof v) == 0) {
		long ra = sr_http_retry_after_ms(v, sr_time_real_ns() /
						    SR_NS_PER_SEC);

		if (ra > o->retry_after_max_ms)
			ra = o->retry_after_max_ms;
		if (ra > wait)
			wait = ra;
	}
	if (o->deadline_mono_ns) {
		if (sr_time_mono_ns() + (int64_t)wait * 1000000 >=
		    o->deadline_mono_ns)
			return -1;
	} else if (a > o->max_retries) {
		return -1;
	}
	return wait;
}

int sr_http_do(const struct sr_http_req *rq, const struct sr_http_opts *opts,
	       struct sr_http_resp *resp, struct sr_err *e)
{
	char errbuf[CURL_ERROR_SIZE], what[600];
	struct sr_http_hdrs h = { NULL };
	struct sr_http_resp prev = { 0 }; /* the last retryable answer */
	struct sr_http_opts d;
	CURLcode cc = CURLE_OK;
	bool may_repeat;
	int rc = 0;

	memset(resp, 0, sizeof(*resp));
	if (opts == NULL) {
		sr_http_opts_default(&d);
		opts = &d;
	}
	if (rq->what)
		snprintf(what, sizeof what, "%s", rq->what);
	else
		snprintf(what, sizeof what, "%s %.*s", rq->method,
			 (int)strcspn(rq->url, "?"), rq->url);
	may_repeat = opts->retry_unsafe || sr_http_method_idempotent(rq->method);
	for (size_t i = 0; rq->headers != NULL && rq->headers[i] != NULL; i++) {
		if (strncasecmp(rq->headers[i], "Idempotency-Key:", 16) == 0)
			may_repeat = true;
	}
	sr_http_global_init();
	for (int a = 0;; a++) {
		struct xfer x = { .rq = rq, .o = opts };
		long wait;

		x.body.max = opts->max_body;
		x.hdr.max = 1 << 20;
		if (cancelled(opts)) {
			rc = sr_err_set(e, -ECANCELED, "%s: cancelled", what);
			goto out;
		}
		if (resp->status && sr_http_status_retryable(resp->status)) {
			/* kept: if the next attempts get no answer at all
			 * before the bound, this one is the result */
			resp_reset(&prev);
			prev = *resp;
			memset(resp, 0, sizeof *resp);
		}
		resp_reset(resp);
		resp->attempts = a + 1;
		curl_slist_free_all(h.l);
		h.l = NULL;
		/* no "Expect: 100-continue" round trip for large bodies */
		rc = sr_http_hdrs_add(&h, "Expect:");
		for (size_t i = 0; rc == 0 && rq->headers && rq->headers[i]; i++)
			rc = sr_http_hdrs_add(&h, "%s", rq->headers[i]);
		if (rc == 0 && rq->sign)
			rc = rq->sign(rq->sign_ud, rq, &h, e);
		if (rc) {
			if (rc == -ENOMEM)
				sr_err_set(e, rc, "%s: out of memory", what);
			goto out;
		}
		cc = attempt(&x, h.l, errbuf);
		resp->status = x.status;
		resp->body = x.body.p;
		resp->headers = x.hdr.p;
		resp->body_len = to_dst(&x) ? x.got : x.body.len;
		if (x.body.oom || x.hdr.oom || cc == CURLE_OUT_OF_MEMORY) {
			rc = sr_err_set(e, -ENOMEM, "%s: out of memory", what);
			goto fail;
		}
		if (x.body.too_big) {
			rc = sr_err_set(e, -EFBIG, "%s: response larger than %zu "
					"bytes", what, opts->max_body);
			goto fail;
		}
		if (x.sink_rc) {
			rc = x.sink_rc;
			if (!e || !e->code)
				sr_err_set(e, rc, "%s: %s", what, sr_strerror(rc));
			goto fail;
		}
		if (cancelled(opts)) {
			rc = sr_err_set(e, -ECANCELED, "%s: cancelled", what);
			goto fail;
		}
		if (x.overflow) {
			rc = sr_err_set(e, -SR_EHTTP, "%s: response longer than the "
					"%zu bytes asked for", what, rq->dst_len);
			goto fail;
		}
		if (x.read_failed) {
			rc = sr_err_set(e, -EIO, "%s: cannot read the request "
					"body from its file", what);
			goto fail;
		}
		if (cc == CURLE_OK && to_dst(&x) && x.got != rq->dst_len &&
		    x.status != 204) {
			/* a body cut short (a reset proxy or server) */
			cc = CURLE_PARTIAL_FILE;
			snprintf(errbuf, CURL_ERROR_SIZE, "%zu of %zu bytes "
				 "received", x.got, rq->dst_len);
		}
		if (cc == CURLE_OK) {
			if (!sr_http_status_retryable(x.status) || !may_repeat)
				goto ok;
		} else if (!transient(cc) || (!may_repeat && !never_sent(cc))) {
			break;
		}
		if (cancelled(opts)) {
			rc = sr_err_set(e, -ECANCELED, "%s: cancelled", what);
			goto fail;
		}
		wait = retry_wait(opts, a + 1, resp);
		if (wait < 0)
			break;
		sr_debug("http", "retrying", "what=\"%s\" attempt=%d status=%ld "
			 "curl=\"%s\" wait_ms=%ld", what, a + 1, x.status,
			 cc == CURLE_OK ? "" : curl_easy_strerror(cc), wait);
		sleep_ms(wait, opts);
	}
	if (cc == CURLE_OK) /* retries over on 429/5xx: hand it back */
		goto ok;
	if (prev.status) {
		/* the last attempts got no answer: the last answer stands */
		int n = resp->attempts;

		resp_reset(resp);
		*resp = prev;
		memset(&prev, 0, sizeof prev);
		resp->attempts = n;
		goto ok;
	}
	rc = cc == CURLE_OPERATION_TIMEDOUT ? -SR_ETIMEOUT : -SR_EHTTP;
	sr_err_set(e, rc, "%s: %s (after %d attempt%s)", what,
		   errbuf[0] ? errbuf : curl_easy_strerror(cc),
		   resp->attempts, resp->attempts == 1 ? "" : "s");
fail:
	{
		int n = resp->attempts;

		resp_reset(resp);
		resp->attempts = n;
	}
	goto out;
ok:
	if (resp->body == NULL &&
	    !((rq->dst || rq->sink) && resp->status / 100 == 2)) {
		resp->body = strdup("");
		if (resp->body == NULL) {
			rc = sr_err_set(e, -ENOMEM, "%s: out of memory", what);
			goto fail;
		}
	}
	rc = 0;
out:
	resp_reset(&prev);
	curl_slist_free_all(h.l);
	return rc;
}

int sr_http_request(const char *method, const char *url,
		    const char *const *headers, const void *body,
		    size_t body_len, const struct sr_http_opts *opts,
		    struct sr_http_resp *resp, struct sr_err *e)
{
	struct sr_http_req rq = {
		.method = method, .url = url, .headers = headers,
		.body = body, .body_len = body ? body_len : 0, .body_fd = -1,
	};

	return sr_http_do(&rq, opts, resp, e);
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
