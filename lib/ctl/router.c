/*
 * router.c - route table, matching, authentication, response helpers.
 *
 * Matching: a pattern and a path are split on '/'; they match when they
 * have the same number of segments and every literal segment is equal
 * ({name} segments match any non-empty segment; one longer than 127
 * bytes is answered 400 naming the parameter, not 404).  A path
 * that matches some pattern but no route with its method gets 405 with an
 * Allow header; otherwise 404.
 *
 * Authentication (docs/api.md "Authentication"): the bearer token is
 * hashed once; the digest is compared in constant time with the admin
 * token's, then looked up among the node tokens.
 */
#include "ctl/router.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/crypto.h>

#include "common/log.h"
#include "ctl/ctl_int.h"
#include "ctl/teamtok.h"
#include "ctl/recon.h"
#include "ctl/routes.h"
#include "store/store_ctl.h"

static const struct ctl_route *routes[CTL_ROUTES_MAX];
static size_t nroutes;
static ctl_event_fn hooks[16];
static size_t nhooks;
static ctl_tick_fn ticks[8];
static size_t nticks;

void ctl_tick_hook_register(ctl_tick_fn fn)
{
	for (size_t i = 0; i < nticks; i++) {
		if (ticks[i] == fn)
			return;
	}
	if (nticks < sizeof ticks / sizeof ticks[0])
		ticks[nticks++] = fn;
}

void ctl__ticks_call(struct ctl *c, struct store *s)
{
	for (size_t i = 0; s && i < nticks; i++)
		ticks[i](c, s);
}

void ctl_route_register(const struct ctl_route *r)
{
	for (size_t i = 0; i < nroutes; i++) {
		if (routes[i] == r)
			return;
	}
	if (nroutes < CTL_ROUTES_MAX)
		routes[nroutes++] = r;
}

void ctl_event_hook_register(ctl_event_fn fn)
{
	for (size_t i = 0; i < nhooks; i++) {
		if (hooks[i] == fn)
			return;
	}
	if (nhooks < sizeof hooks / sizeof hooks[0])
		hooks[nhooks++] = fn;
}

void ctl__hooks_call(struct ctl *c, const json_t *ev)
{
	for (size_t i = 0; i < nhooks; i++)
		hooks[i](c, ev);
}

size_t ctl__hooks_count(void)
{
	return nhooks;
}

/* ---- matching ---------------------------------------------------------- */

static const char *seg_next(const char *p, size_t *len)
{
	const char *s = p;

	while (*s == '/')
		s++;
	*len = strcspn(s, "/");
	return s;
}

static bool match(const char *pattern, const char *path, struct ctl_req *rq)
{
	const char *p = pattern, *q = path;
	size_t lp, lq;

	rq->nparams = 0;
	rq->long_param = NULL;
	for (;;) {
		p = seg_next(p, &lp);
		q = seg_next(q, &lq);
		if (lp == 0 || lq == 0)
			return lp == 0 && lq == 0;
		if (p[0] == '{' && p[lp - 1] == '}') {
			int k = rq->nparams;
			size_t n = lq;

			if (k >= CTL_MAX_PARAMS)
				return false;
			rq->pname[k] = p + 1; /* ends at '}' */
			if (n >= sizeof rq->pval[0]) {
				if (!rq->long_param)
					rq->long_param = p + 1;
				n = 0;
			}
			memcpy(rq->pval[k], q, n);
			rq->pval[k][n] = '\0';
			rq->nparams++;
		} else if (lp != lq || memcmp(p, q, lp) != 0) {
			return false;
		}
		p += lp;
		q += lq;
	}
}

/* ---- accessors ----------------------------------------------------------- */

const char *ctl_req_method(const struct ctl_req *rq) { return rq->method; }
const char *ctl_req_path(const struct ctl_req *rq) { return rq->path; }
struct ctl *ctl_req_ctl(const struct ctl_req *rq) { return rq->ctl; }
int64_t ctl_req_node(const struct ctl_req *rq) { return rq->node_id; }

struct store *ctl_req_store(const struct ctl_req *rq)
{
	struct store *db = ctl__store(rq->ctl);

	/* every write of a request carries the lease (lease.c) */
	if (db)
		store_set_fence(db, ctl__lease_fence, rq->ctl);
	return db;
}

const char *ctl_req_param(const struct ctl_req *rq, const char *name)
{
	size_t n = strlen(name);

	for (int i = 0; i < rq->nparams; i++) {
		if (strncmp(rq->pname[i], name, n) == 0 && rq->pname[i][n] == '}')
			return rq->pval[i];
	}
	return NULL;
}

int ctl_req_param_id(const struct ctl_req *rq, const char *name,
		     int64_t *out, struct ctl_resp *rs)
{
	const char *s = ctl_req_param(rq, name);
	int64_t v = 0;

	if (!s || !*s)
		goto bad;
	for (const char *p = s; *p; p++) {
		if (*p < '0' || *p > '9' || v > (INT64_MAX - 9) / 10)
			goto bad;
		v = v * 10 + (*p - '0');
	}
	if (v <= 0)
		goto bad;
	*out = v;
	return 0;
bad:
	ctl_resp_error(rs, 400, "path parameter %s: expected a positive integer",
		       name);
	return -EINVAL;
}

const char *ctl_req_body(const struct ctl_req *rq, size_t *len)
{
	if (len)
		*len = rq->body_len;
	return rq->body ? rq->body : "";
}

/* ---- responses ----------------------------------------------------------- */

int ctl_resp_text(struct ctl_resp *rs, int status, const char *ctype,
		  const char *body, size_t len)
{
	char *b = malloc(len + 1);

	if (!b)
		return -ENOMEM;
	memcpy(b, body, len);
	b[len] = '\0';
	free(rs->body);
	rs->status = status;
	rs->ctype = ctype;
	rs->body = b;
	rs->body_len = len;
	return 0;
}

int ctl_resp_json(struct ctl_resp *rs, int status, json_t *v)
{
	char *s;

	if (!v)
		return -ENOMEM;
	s = json_dumps(v, JSON_COMPACT);
	json_decref(v);
	if (!s)
		return -ENOMEM;
	free(rs->body);
	rs->status = status;
	rs->ctype = "application/json";
	rs->body = s;
	rs->body_len = strlen(s);
	return 0;
}

static const char *code_for(int status)
{
	switch (status) {
	case 400: return "bad_request";
	case 401: return "unauthorized";
	case 403: return "forbidden";
	case 404: return "not_found";
	case 405: return "method_not_allowed";
	case 409: return "conflict";
	case 413: return "payload_too_large";
	case 414: return "uri_too_long";
	case 415: return "unsupported_media_type";
	case 431: return "headers_too_large";
	case 503: return "unavailable";
	default: return status >= 500 ? "internal" : "error";
	}
}

int ctl_resp_error(struct ctl_resp *rs, int status, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return ctl_resp_json(rs, status, json_pack("{s:{s:s,s:s}}", "error",
						   "code", code_for(status),
						   "message", msg));
}

/* ---- authentication ------------------------------------------------------ */

const char *ctl_req_bearer(const struct ctl_req *rq)
{
	static const char pfx[] = "Bearer";
	const char *h = rq->auth_header, *tok = NULL;

	/* RFC 9110 11.1: the scheme name is case-insensitive; one or more
	 * spaces separate it from the token */
	if (h && strncasecmp(h, pfx, sizeof pfx - 1) == 0 &&
	    h[sizeof pfx - 1] == ' ') {
		tok = h + sizeof pfx;
		while (*tok == ' ')
			tok++;
	}
	return tok && *tok ? tok : NULL;
}

/* 0 = ok; else the response is filled. */
static int authenticate(struct ctl_req *rq, const struct ctl_route *r,
			struct ctl_resp *rs)
{
	unsigned char d[CTL_DIGEST_LEN];
	const char *tok;
	struct store *db;
	struct sr_err e = { 0 };
	int64_t node = 0, want = 0;

	rq->node_id = 0;
	rq->team_token = 0;
	if (r->auth == CTL_AUTH_PUBLIC)
		return 0;
	tok = ctl_req_bearer(rq);
	if (!tok) {
		ctl_resp_error(rs, 401, "missing bearer token "
			       "(Authorization: Bearer <token>)");
		return -1;
	}
	ctl_token_digest(tok, d);
	if (CRYPTO_memcmp(d, rq->ctl->admin_digest, CTL_DIGEST_LEN) == 0)
		return 0;
	/* a team token (finops.json "tokens") may do what the admin token
	 * does; its jobs get its labels */
	rq->team_token = ctl__team_token_find(rq->ctl, d);
	if (rq->team_token)
		return 0;
	db = ctl__store(rq->ctl);
	if (!db || store_node_by_token(db, d, &node, &e) < 0) {
		ctl_resp_error(rs, 503, "cannot check the token: %s",
			       sr_err_str(&e, -EIO));
		return -1;
	}
	if (node == 0) {
		ctl_resp_error(rs, 401, "invalid token");
		return -1;
	}
	if (r->auth == CTL_AUTH_NODE) {
		const char *id = ctl_req_param(rq, "id");

		want = id ? strtoll(id, NULL, 10) : 0;
		if (want == node) {
			rq->node_id = node;
			return 0;
		}
	}
	ctl_resp_error(rs, 403, "this node token may only call /v1/nodes/%"
		       PRId64 "/...", node);
	return -1;
}

/* 503 "not_leader" naming the leader as last seen: the client tries its
 * next endpoint (lease.c). */
static void not_leader(struct ctl_req *rq, struct ctl_resp *rs)
{
	char url[128];

	atomic_fetch_add(&rq->ctl->lease.writes_refused, 1);
	ctl__leader_url(rq->ctl, url, sizeof url);
	ctl_resp_json(rs, 503, json_pack("{s:{s:s,s:s,s:s}}", "error", "code",
					 "not_leader", "message", "this spotrund "
					 "is a standby: writes go to the leader",
					 "leader", url));
}

/* A standby serves reads; a write (any method but GET/HEAD, except the
 * IMDS token PUT, which changes nothing) gets 503 "not_leader" before it
 * touches the store - also from a leader whose lease is past on its own
 * clock (paused past it: ctl__lease_valid). */
static int standby_refuses(struct ctl_req *rq, struct ctl_resp *rs)
{
	if (ctl__lease_valid(rq->ctl) || !strcmp(rq->method, "GET") ||
	    !strcmp(rq->method, "HEAD") || !strncmp(rq->path, "/imds/", 6))
		return 0;
	not_leader(rq, rs);
	return -1;
}

void ctl__dispatch(struct ctl_req *rq, struct ctl_resp *rs)
{
	char allow[64] = "";
	bool path_hit = false;
	int rc;

	for (size_t i = 0; i < nroutes; i++) {
		const struct ctl_route *r = routes[i];

		if (!match(r->pattern, rq->path, rq))
			continue;
		if (strcmp(r->method, rq->method) != 0) {
			size_t l = strlen(allow);

			path_hit = true;
			snprintf(allow + l, sizeof allow - l, "%s%s",
				 l ? ", " : "", r->method);
			continue;
		}
		if (standby_refuses(rq, rs))
			return;
		if (authenticate(rq, r, rs))
			return;
		if (rq->long_param) {
			int l = (int)strcspn(rq->long_param, "}");

			ctl_resp_error(rs, 400, "path parameter %.*s: longer than "
				       "%zu bytes", l, rq->long_param,
				       sizeof rq->pval[0] - 1);
			return;
		}
		ctl__fenced_clear();
		rc = r->fn(rq, rs);
		/* the lease moved on under this request: none of its writes
		 * was applied; the client goes to the leader */
		if (ctl__fenced())
			not_leader(rq, rs);
		else if (rs->status == 0)
			ctl_resp_error(rs, 500, "%s: %s", r->name, sr_strerror(rc));
		return;
	}
	if (path_hit) {
		ctl_resp_error(rs, 405, "%s not allowed on %s (allowed: %s)",
			       rq->method, rq->path, allow);
		snprintf(rs->allow, sizeof rs->allow, "%s", allow);
		return;
	}
	ctl_resp_error(rs, 404, "no route for %s %s", rq->method, rq->path);
}
