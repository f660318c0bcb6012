/*
 * http.c - one object-store request: the store's settings turned into a
 * request of the one HTTP layer (lib/common/http.h: retries with
 * exponential backoff and full jitter, Retry-After, re-signing before
 * every attempt, a deadline or a count), and the answer into struct
 * os_resp with the service's own error code and message.
 *
 * The store's retry bound: a deadline set by objstore_set_deadline()
 * (a final upload, close()) bounds every request by that time alone;
 * without one, SPOTRUN_OBJSTORE_RETRIES (cfg.retries) does.  Every
 * request is safe to repeat (PUTs of whole objects or parts, GETs,
 * DELETEs; a repeated CreateMultipartUpload leaves an orphan upload
 * that retention aborts; CompleteMultipartUpload and DeleteObjects are
 * idempotent).  A transfer that moves less than 1 byte/s for
 * low_speed_s seconds is abandoned and retried.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "os_int.h"
#include "common/log.h"

void os_resp_free(struct os_resp *r)
{
	if (!r)
		return;
	free(r->body);
	r->body = NULL;
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
	else if (r->status == 416)
		code = -SR_ECORRUPT; /* the object is shorter than the range */
	return sr_err_set(e, code, "%s: HTTP %ld%s%s%s%s", rq->what, r->status,
			  r->err_code[0] ? " " : "", r->err_code,
			  r->err_msg[0] ? ": " : "", r->err_msg);
}

static int sign_adapter(void *ud, const struct sr_http_req *hr,
			struct sr_http_hdrs *h, struct sr_err *e)
{
	const struct os_req *rq = ud;

	(void)hr;
	return rq->sign(rq, rq->sign_ud, h, e);
}

void objstore__http_opts(const struct objstore *s, struct sr_http_opts *o)
{
	sr_http_opts_default(o);
	o->timeout_ms = 0; /* parts of any size: the stall limit instead */
	o->low_speed_s = s->cfg.low_speed_s;
	o->connect_timeout_ms = s->cfg.connect_timeout_ms;
	o->max_retries = s->cfg.retries;
	o->backoff_base_ms = s->cfg.backoff_base_ms;
	o->backoff_max_ms = s->cfg.backoff_max_ms;
	o->retry_unsafe = 1;
	o->cancel = s->cancel;
	o->deadline_mono_ns = atomic_load(&((struct objstore *)s)->deadline_ns);
}

int os_http(struct objstore *s, const struct os_req *rq, struct os_resp *resp,
	    struct sr_err *e)
{
	struct sr_http_opts o;
	struct sr_http_resp r;
	struct sr_http_req hr = {
		.method = rq->method, .url = rq->url, .what = rq->what,
		.sign = rq->sign ? sign_adapter : NULL, .sign_ud = (void *)rq,
		.body = rq->body, .body_len = rq->body_len,
		.body_from_fd = rq->body_fd >= 0, .body_fd = rq->body_fd,
		.body_off = rq->body_off, .dst = rq->dst, .sink = rq->sink,
		.sink_ud = rq->sink_ud, .dst_len = rq->dst_len,
		.body_pace = rq->body_fd >= 0 ? s->pace : NULL,
		.body_pace_ud = s->pace_ud,
	};
	int rc;

	memset(resp, 0, sizeof *resp);
	objstore__http_opts(s, &o);
	o.max_body = rq->max_resp ? rq->max_resp : (1u << 20);
	rc = sr_http_do(&hr, &o, &r, e);
	resp->attempts = r.attempts;
	if (rc) {
		sr_http_resp_free(&r);
		return rc;
	}
	resp->status = r.status;
	resp->body = r.body;
	resp->len = r.body_len;
	r.body = NULL;
	if (sr_http_resp_header(&r, "ETag", resp->etag, sizeof resp->etag))
		resp->etag[0] = 0;
	if (sr_http_resp_header(&r, "x-amz-meta-spotrun-upload", resp->token,
				sizeof resp->token) &&
	    sr_http_resp_header(&r, "x-goog-meta-spotrun-upload", resp->token,
				sizeof resp->token))
		resp->token[0] = 0;
	sr_http_resp_free(&r);
	if (resp->status / 100 != 2) {
		/* a final answer: rc 0, the caller reads the status; a
		 * non-2xx one is also described in *e */
		parse_error_body(resp);
		os_status_err(rq, resp, e);
	}
	return 0;
}
