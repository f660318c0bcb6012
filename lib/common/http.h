/*
 * http.h - a small HTTP client over libcurl.
 *
 * One call per request: timeouts, headers, and retries with exponential
 * backoff and full jitter.  A request that never reached a server
 * (connection refused, DNS) is retried for any method.  Other transport
 * errors (reset, timeout), 429 and 5xx are retried only for a request that
 * is safe to repeat: an idempotent method (GET, HEAD, PUT, DELETE,
 * OPTIONS), a request with an `Idempotency-Key:` header, or with
 * opts.retry_unsafe set.  Any other 4xx is returned at once.
 * Thread-safe once sr_http_global_init() has run (it runs on first use).
 */
#ifndef SR_COMMON_HTTP_H
#define SR_COMMON_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include "err.h"

struct sr_http_opts {
	long timeout_ms;        /* whole request; default 10000 */
	long connect_timeout_ms;/* default 2000 */
	int max_retries;        /* extra attempts after the first; default 3 */
	long backoff_base_ms;   /* first backoff ceiling; default 100 */
	long backoff_max_ms;    /* cap; default 5000 */
	size_t max_body;        /* response size limit; default 64 MiB */
	int retry_unsafe;       /* retry POST/PATCH without a key too (a
				   duplicate is harmless, e.g. an alert);
				   default 0 */
	int local_port;         /* bind this source port; 0 = any (tests) */
	const char *ca_file;    /* PEM trust anchors for https instead of the
				   system's; NULL = system CAs */
};

/* Fills *o with the defaults above. */
void sr_http_opts_default(struct sr_http_opts *o);

struct sr_http_resp {
	long status;      /* HTTP status, 0 if none was received */
	char *body;       /* NUL-terminated, owned; free with sr_http_resp_free */
	size_t body_len;
	int attempts;     /* how many requests were made */
	char *headers;    /* raw response header block of the last attempt, owned */
};

/* Perform `method url`.  `headers` is a NULL-terminated array of
 * "Name: value" strings (may be NULL).  body may be NULL.  opts may be
 * NULL for defaults.
 * Returns 0 when a response was received (any status; check resp->status),
 * or a negative code (-SR_EHTTP, -SR_ETIMEOUT, -ENOMEM) with *e set when
 * every attempt failed at the transport level; a response body larger
 * than opts->max_body fails with -EFBIG (not retried).  When retries run
 * out on 429/5xx the last response is returned (rc 0).  Messages name the
 * method and the URL without its query string.  On return *resp is always
 * initialised and must be passed to sr_http_resp_free().
 * A body with GET/DELETE/... is sent as given; POST/PUT without a body
 * send an empty one.  "Expect: 100-continue" is never used. */
int sr_http_request(const char *method, const char *url,
		    const char *const *headers, const void *body,
		    size_t body_len, const struct sr_http_opts *opts,
		    struct sr_http_resp *resp, struct sr_err *e);

/* Value of response header `name` (case-insensitive) copied into buf;
 * returns 0 or -SR_ENOTFOUND. */
int sr_http_resp_header(const struct sr_http_resp *r, const char *name,
			char *buf, size_t n);

void sr_http_resp_free(struct sr_http_resp *r); /* NULL-safe */

/* Backoff before attempt `attempt` (1-based retry number): a uniform
 * random value in [0, min(max, base * 2^(attempt-1))] ms.  Exposed for
 * tests. `seed` may be NULL to use a thread-local generator. */
long sr_http_backoff_ms(const struct sr_http_opts *o, int attempt,
			unsigned *seed);

void sr_http_global_init(void);

/* True for the methods a retry may repeat (GET HEAD PUT DELETE OPTIONS). */
bool sr_http_method_idempotent(const char *method);

/* True when a connection's two ends are the same address and port (a TCP
 * self-connect); exposed for tests. */
bool sr_http__self_connect(const char *local_ip, long local_port,
			   const char *remote_ip, long remote_port);

#endif
