/*
 * http.h - the one HTTP client of spotrun, over libcurl: every cloud API
 * call and every object-store request goes through sr_http_do() (or its
 * short form sr_http_request()), so that all of them retry the same way.
 *
 * A request is described once (struct sr_http_req) and performed as
 * many times as the retry policy allows:
 *
 *   RE-SIGNING  `sign` (optional) is called before every attempt to add
 *               the headers that depend on the time (SigV4, Shared Key,
 *               a fresh token), so a retry after a long backoff is still
 *               valid.  Fixed headers go in `headers`.
 *   BODIES      from memory, or `body_len` bytes of a file from an offset
 *               (re-read from that offset by every attempt; a file
 *               body may be paced: body_pace).
 *   RESPONSES   a growing buffer (up to opts.max_body), or - for a 2xx -
 *               a fixed buffer / a sink expecting exactly dst_len bytes:
 *               a shorter body is a transport error (retried), and every
 *               attempt delivers from byte 0 again.
 *
 * RETRY POLICY (per attempt):
 *   the request never left (DNS, connection refused, self-connect)
 *                                              -> retry, any method
 *   a transport error after it may have been sent (reset, timeout, a
 *     cut body, a stall), or HTTP 408, 429, 5xx except 501/505
 *                                              -> retry when the request
 *     is safe to repeat: GET HEAD PUT DELETE OPTIONS, an Idempotency-Key
 *     header, or opts.retry_unsafe (the caller knows a repeat is harmless)
 *   any other status                           -> final, returned
 *   local errors (bad URL, out of memory, body over max_body, a sink's
 *     error, cancellation)                     -> final, an error code
 * Before retry k (1-based) the thread sleeps sr_http_backoff_ms(opts, k)
 * - exponential backoff with full jitter, uniform in
 * [0, min(backoff_max_ms, backoff_base_ms * 2^(k-1))] - and at least the
 * server's Retry-After (delta-seconds or an HTTP-date), capped at
 * opts.retry_after_max_ms.
 *
 * BOUND.  With opts.deadline_mono_ns (CLOCK_MONOTONIC) set, the deadline
 * alone bounds the retries: attempts go on until it, no backoff sleeps
 * past it (a Retry-After beyond it ends the retries at once), and each
 * attempt's time limit is cut to what is left.  Without one,
 * opts.max_retries bounds them.  opts.cancel (optional) stops a request
 * within ~50 ms (-ECANCELED).
 *
 * RESULT.  0 when a final response arrived, whatever its status (check
 * resp->status; after the retries ran out on 429/5xx the last answer is
 * returned), or a negative code with *e set: -SR_EHTTP (no answer),
 * -SR_ETIMEOUT (the last attempt timed out, or the deadline passed before
 * any answer), -ECANCELED, -EFBIG (body over max_body), -ENOMEM, or a
 * sink's own code.  Messages name the request (`what`, else METHOD and
 * the URL without its query string: presigned queries are secrets) and
 * the number of attempts.
 *
 * Thread-safe once sr_http_global_init() has run (it runs on first use).
 */
#ifndef SR_COMMON_HTTP_H
#define SR_COMMON_HTTP_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "err.h"

struct sr_http_opts {
	long timeout_ms;        /* one attempt, whole; default 10000; 0 =
				   no limit (use low_speed_s for transfers
				   of any size) */
	long connect_timeout_ms;/* default 2000 */
	long low_speed_s;       /* abandon (and retry) an attempt moving
				   less than 1 byte/s for this long; 0 =
				   off (default) */
	int max_retries;        /* extra attempts after the first when no
				   deadline is given; default 3 */
	int64_t deadline_mono_ns; /* CLOCK_MONOTONIC; 0 = none (default).
				   When set it alone bounds the retries. */
	long backoff_base_ms;   /* first backoff ceiling; default 100 */
	long backoff_max_ms;    /* cap; default 5000 */
	long retry_after_max_ms;/* cap on a server's Retry-After; default
				   60000 */
	size_t max_body;        /* growing response limit; default 64 MiB */
	int retry_unsafe;       /* retry POST/PATCH without a key too (a
				   duplicate is harmless, e.g. an alert or
				   an object-store call); default 0 */
	atomic_int *cancel;     /* borrowed; non-zero stops the request */
	int local_port;         /* bind this source port; 0 = any (tests) */
	const char *ca_file;    /* PEM trust anchors for https instead of the
				   system's; NULL = system CAs */
};

/* Fills *o with the defaults above. */
void sr_http_opts_default(struct sr_http_opts *o);

/* The headers of one attempt, filled by a signer (opaque). */
struct sr_http_hdrs;
/* Append "Name: value" (printf-style) to h.  0 or -ENOMEM. */
int sr_http_hdrs_add(struct sr_http_hdrs *h, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

struct sr_http_req;
/* Called before every attempt; adds the attempt's signed headers to h.
 * A non-zero return ends the request with that code (and its *e). */
typedef int (*sr_http_sign_fn)(void *ud, const struct sr_http_req *rq,
			       struct sr_http_hdrs *h, struct sr_err *e);
/* Receives a 2xx body in order: `pos` is the offset of p in the body
 * (0 again at each attempt).  A non-zero return stops the request with
 * that code, not retried. */
typedef int (*sr_http_sink_fn)(void *ud, uint64_t pos, const void *p,
			       size_t n);

struct sr_http_req {
	const char *method;
	const char *url;            /* full URL, query included */
	const char *what;           /* names it in messages (may be NULL) */
	const char *const *headers; /* "Name: value", NULL-terminated, or
				       NULL */
	sr_http_sign_fn sign;       /* or NULL */
	void *sign_ud;
	const void *body;           /* memory body (NULL: none, or a file) */
	size_t body_len;
	bool body_from_fd;          /* body: body_len bytes of body_fd ... */
	int body_fd;
	uint64_t body_off;          /* ... from this offset */
	void (*body_pace)(void *ud);/* a file body: called before each read
				       of it (curl's buffer, 64 KiB) and may
				       block to hold the body back (a
				       bucket mount's upload pauses while
				       the training writes).  The caller
				       bounds each call well under a
				       server's idle limit (S3: ~20 s) and
				       a cancel is seen only after it
				       returns.  Its socket keeps at most
				       256 KiB unsent, so a hold stops
				       the wire that soon; NULL none */
	void *body_pace_ud;
	void *dst;                  /* 2xx body into dst, exactly dst_len */
	sr_http_sink_fn sink;       /* or to sink, exactly dst_len bytes */
	void *sink_ud;
	size_t dst_len;
};

struct sr_http_resp {
	long status;      /* HTTP status, 0 if none was received */
	char *body;       /* NUL-terminated, owned (NULL when a 2xx body went
			     to dst or sink); free with sr_http_resp_free */
	size_t body_len;  /* bytes received (into whichever buffer) */
	int attempts;     /* how many requests were made */
	char *headers;    /* raw response header block of the last attempt, owned */
};

/* Perform rq under opts (NULL = defaults) with the policy above.  On
 * return *resp is always initialised and must be sr_http_resp_free()d. */
int sr_http_do(const struct sr_http_req *rq, const struct sr_http_opts *opts,
	       struct sr_http_resp *resp, struct sr_err *e);

/* The short form: `method url` with fixed headers (NULL-terminated,
 * may be NULL) and a memory body (may be NULL; POST/PUT without one send
 * an empty body).  "Expect: 100-continue" is never used. */
int sr_http_request(const char *method, const char *url,
		    const char *const *headers, const void *body,
		    size_t body_len, const struct sr_http_opts *opts,
		    struct sr_http_resp *resp, struct sr_err *e);

/* Value of response header `name` (case-insensitive) copied into buf;
 * returns 0 or -SR_ENOTFOUND. */
int sr_http_resp_header(const struct sr_http_resp *r, const char *name,
			char *buf, size_t n);

void sr_http_resp_free(struct sr_http_resp *r); /* NULL-safe */

/* True for 408, 429 and 5xx other than 501 and 505: the answers a
 * repeat may change. */
bool sr_http_status_retryable(long status);

/* Backoff before attempt `attempt` (1-based retry number): a uniform
 * random value in [0, min(max, base * 2^(attempt-1))] ms.  Exposed for
 * tests. `seed` may be NULL to use a thread-local generator. */
long sr_http_backoff_ms(const struct sr_http_opts *o, int attempt,
			unsigned *seed);

/* A Retry-After value (delta-seconds or an HTTP-date, as of now_real_s)
 * in ms, or -1 when it does not parse.  Exposed for tests. */
long sr_http_retry_after_ms(const char *value, int64_t now_real_s);

void sr_http_global_init(void);

/* True for the methods a retry may repeat (GET HEAD PUT DELETE OPTIONS). */
bool sr_http_method_idempotent(const char *method);

/* True when a connection's two ends are the same address and port (a TCP
 * self-connect); exposed for tests. */
bool sr_http__self_connect(const char *local_ip, long local_port,
			   const char *remote_ip, long remote_port);

#endif
