/*
 * testsrv.h - a canned-reply HTTP server for tests (libmicrohttpd).
 *
 * Listens on 127.0.0.1 on an ephemeral port, answers each (method, path)
 * from a queue of canned replies, and records every request it received
 * so a test can assert exactly what was sent.  Used for the HTTP client's
 * tests, cloud metadata endpoints, webhooks and S3.
 *
 * Routes: sr_testsrv_reply() appends a reply to the queue of (method,
 * path).  Replies are served in order; the last one repeats.  An
 * unmatched request gets the handler's answer if one is set, else 404.
 * Thread-safe: the server runs its own thread.
 */
#ifndef SR_COMMON_TESTSRV_H
#define SR_COMMON_TESTSRV_H

#include <stddef.h>

struct sr_testsrv;

struct sr_testsrv_req {
	char method[16];
	char path[512];     /* without the query string */
	char query[512];    /* raw query string, "" if none */
	char *headers;      /* "name: value\n" lines, names lower-cased */
	char *body;         /* NUL-terminated */
	size_t body_len;
};

/* Optional dynamic handler: fill status/ctype/body (body malloc'd, the
 * server frees it).  Return 0 if handled, -1 to fall through to 404. */
typedef int (*sr_testsrv_fn)(void *ud, const struct sr_testsrv_req *req,
			     int *status, char **ctype, char **body,
			     size_t *body_len);

/* Start on 127.0.0.1:port (0 = ephemeral).  Returns NULL on failure. Caller
 * owns the server and must sr_testsrv_stop() it. */
struct sr_testsrv *sr_testsrv_start(int port);
int sr_testsrv_port(const struct sr_testsrv *s);
/* "http://127.0.0.1:PORT" (borrowed, valid until stop). */
const char *sr_testsrv_url(const struct sr_testsrv *s);

/* Queue a canned reply.  delay_ms > 0 sleeps before answering (timeout
 * tests).  Strings are copied. */
int sr_testsrv_reply(struct sr_testsrv *s, const char *method,
		     const char *path, int status, const char *ctype,
		     const char *body, int delay_ms);
/* The same with extra response headers: "Name: value" lines separated
 * by '\n' (may be NULL), e.g. "Retry-After: 1". */
int sr_testsrv_reply_hdrs(struct sr_testsrv *s, const char *method,
			  const char *path, int status, const char *ctype,
			  const char *hdrs, const char *body, int delay_ms);
void sr_testsrv_set_handler(struct sr_testsrv *s, sr_testsrv_fn fn, void *ud);

/* Requests received so far, in arrival order. */
size_t sr_testsrv_nreq(struct sr_testsrv *s);
/* Borrowed; valid until stop.  NULL if idx out of range. */
const struct sr_testsrv_req *sr_testsrv_req(struct sr_testsrv *s, size_t idx);
/* Count of received requests matching method and path. */
size_t sr_testsrv_count(struct sr_testsrv *s, const char *method,
			const char *path);
/* Header value of a recorded request (case-insensitive name), copied
 * into buf; returns 0 or -1 if absent. */
int sr_testsrv_req_header(const struct sr_testsrv_req *r, const char *name,
			  char *buf, size_t n);

void sr_testsrv_stop(struct sr_testsrv *s); /* NULL-safe; frees all */

#endif
