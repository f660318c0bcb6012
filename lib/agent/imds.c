/*
 * imds.c - IMDSv2 spot interruption polling (protocol in imds.h).
 *
 * Token life cycle:
 *
 *   NO_TOKEN --PUT ok--> HAVE_TOKEN --age > ttl-margin--> NO_TOKEN
 *                            |
 *                            +--GET answers 401--> NO_TOKEN, retry once
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent/imds.h"
#include "common/http.h"
#include "common/json.h"
#include "common/timeutil.h"

#define TOKEN_MAX 512
#define TOKEN_REFRESH_MARGIN_S 60
#define NOTICE_MAX_BODY 4096

struct imds {
	char *bases;   /* as given: one URL or a comma-separated list */
	char *base;    /* the one in use (a copy, owned) */
	long timeout_ms;
	size_t cur;    /* index of base in bases */
	char token[TOKEN_MAX];
	int64_t token_at_ns; /* monotonic; 0 = no token */
	int ttl_s;           /* asked for with each token */
	int64_t rebalance_ns; /* the recommendation seen, 0 none yet */
};

/* Use the k-th URL of the list (wrapping), without a trailing '/'; the
 * daemons sharing a store each serve the IMDS (lease.c): on a failure
 * the agent moves to the next. */
static int use_base(struct imds *c, size_t k)
{
	const char *p = c->bases;
	size_t n = 1, len;

	for (const char *q = p; *q; q++)
		n += *q == ',';
	k %= n;
	for (size_t i = 0; i < k; i++)
		p += strcspn(p, ",") + 1;
	len = strcspn(p, ",");
	while (len > 0 && p[len - 1] == '/')
		len--;
	free(c->base);
	c->base = strndup(p, len);
	c->cur = k;
	return c->base ? 0 : -ENOMEM;
}

struct imds *imds_create(const char *base_url, long timeout_ms)
{
	struct imds *c = calloc(1, sizeof *c);

	if (!c)
		return NULL;
	c->bases = strdup(base_url ? base_url : IMDS_DEFAULT_URL);
	if (!c->bases || use_base(c, 0)) {
		imds_destroy(c);
		return NULL;
	}
	c->timeout_ms = timeout_ms > 0 ? timeout_ms : 1000;
	c->ttl_s = IMDS_TOKEN_TTL_S;
	return c;
}

void imds_set_token_ttl(struct imds *c, int ttl_s)
{
	c->ttl_s = ttl_s >= 1 && ttl_s <= IMDS_TOKEN_TTL_S ? ttl_s : IMDS_TOKEN_TTL_S;
	c->token_at_ns = 0;
}

void imds_destroy(struct imds *c)
{
	if (!c)
		return;
	free(c->base);
	free(c->bases);
	free(c);
}

int64_t imds_kill_deadline_mono(int64_t notice_ns, int64_t real_now_ns,
				int64_t mono_now_ns)
{
	int64_t lead = notice_ns - real_now_ns, margin;

	if (lead <= 0)
		return mono_now_ns;
	margin = lead / 5 < SR_NS_PER_SEC ? lead / 5 : SR_NS_PER_SEC;
	return mono_now_ns + lead - margin;
}

const char *imds_action_name(enum imds_action a)
{
	switch (a) {
	case IMDS_TERMINATE: return "terminate";
	case IMDS_STOP: return "stop";
	case IMDS_HIBERNATE: return "hibernate";
	case IMDS_NONE: break;
	}
	return "none";
}

static void opts_init(const struct imds *c, struct sr_http_opts *o)
{
	sr_http_opts_default(o);
	o->timeout_ms = c->timeout_ms;
	o->connect_timeout_ms = c->timeout_ms;
	o->max_retries = 0; /* the poll loop is the retry */
	o->max_body = NOTICE_MAX_BODY;
}

static int token_fetch(struct imds *c, struct sr_err *e)
{
	struct sr_http_opts o;
	struct sr_http_resp r;
	char url[1024];
	char ttl[64];
	const char *hdr[] = { ttl, NULL };
	int64_t t0 = sr_time_mono_ns(); /* its age counts from the ask */
	int rc;

	opts_init(c, &o);
	snprintf(url, sizeof url, "%s/latest/api/token", c->base);
	snprintf(ttl, sizeof ttl, "X-aws-ec2-metadata-token-ttl-seconds: %d",
		 c->ttl_s);
	rc = sr_http_request("PUT", url, hdr, "", 0, &o, &r, e);
	if (rc < 0) {
		sr_err_prefix(e, "imds: PUT /latest/api/token");
		goto out;
	}
	if (r.status != 200) {
		rc = sr_err_set(e, -SR_EHTTP,
				"imds: PUT /latest/api/token: HTTP %ld", r.status);
		goto out;
	}
	/* A token is printable ASCII without spaces; anything else would be
	 * pasted into a header, so refuse it. */
	size_t n = r.body_len;
	while (n > 0 && (r.body[n - 1] == '\n' || r.body[n - 1] == '\r'))
		n--;
	if (n == 0 || n >= TOKEN_MAX) {
		rc = sr_err_set(e, -SR_EPARSE,
				"imds: token reply: length %zu not in 1..%d", n,
				TOKEN_MAX - 1);
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)r.body[i];
		if (ch <= ' ' || ch >= 0x7f) {
			rc = sr_err_set(e, -SR_EPARSE,
					"imds: token reply: byte %zu is not a "
					"printable character", i);
			goto out;
		}
	}
	memcpy(c->token, r.body, n);
	c->token[n] = '\0';
	c->token_at_ns = t0;
	rc = 0;
out:
	sr_http_resp_free(&r);
	return rc;
}

/* A token younger than its TTL less a margin: 60 s, or a quarter of a
 * TTL shorter than 4 min (the age is taken from before the PUT, so the
 * server's clock started later than ours). */
static int token_fresh(const struct imds *c)
{
	int64_t ttl_ns = (int64_t)c->ttl_s * SR_NS_PER_SEC;
	int64_t margin = (int64_t)TOKEN_REFRESH_MARGIN_S * SR_NS_PER_SEC;

	if (c->token_at_ns == 0)
		return 0;
	if (margin > ttl_ns / 4)
		margin = ttl_ns / 4;
	return sr_time_mono_ns() - c->token_at_ns < ttl_ns - margin;
}

int imds_parse_notice(const char *body, size_t len, struct imds_notice *out,
		      struct sr_err *e)
{
	const char *ctx = "imds: spot/instance-action";
	const char *action = NULL, *when = NULL;
	json_t *j = NULL;
	int rc;

	memset(out, 0, sizeof *out);
	j = sr_json_load_buf(body, len, ctx, e);
	if (!j) {
		rc = e ? e->code : -SR_EPARSE;
		if (rc == 0)
			rc = -SR_EPARSE;
		goto out;
	}
	if (!json_is_object(j)) {
		rc = sr_err_set(e, -SR_EPARSE, "%s: expected a JSON object", ctx);
		goto out;
	}
	/* AWS may add fields in future: unknown keys are tolerated. */
	rc = sr_json_get_str(j, "action", &action, ctx, e);
	if (rc < 0)
		goto out;
	rc = sr_json_get_str(j, "time", &when, ctx, e);
	if (rc < 0)
		goto out;
	if (!strcmp(action, "terminate")) {
		out->action = IMDS_TERMINATE;
	} else if (!strcmp(action, "stop")) {
		out->action = IMDS_STOP;
	} else if (!strcmp(action, "hibernate")) {
		out->action = IMDS_HIBERNATE;
	} else {
		rc = sr_err_set(e, -SR_EPARSE,
				"%s: action: unknown value '%.64s' (expected "
				"terminate, stop or hibernate)", ctx, action);
		goto out;
	}
	rc = sr_time_parse_rfc3339(when, &out->time_ns, e);
	if (rc < 0) {
		sr_err_prefix(e, "%s: time", ctx);
		goto out;
	}
	rc = 0;
out:
	if (rc < 0)
		memset(out, 0, sizeof *out);
	json_decref(j);
	return rc;
}

int imds_parse_rebalance(const char *body, size_t len, int64_t *time_ns,
			 struct sr_err *e)
{
	const char *ctx = "imds: events/recommendations/rebalance";
	const char *when = NULL;
	json_t *j = sr_json_load_buf(body, len, ctx, e);
	int rc;

	*time_ns = 0;
	if (!j)
		return e && e->code ? e->code : -SR_EPARSE;
	if (!json_is_object(j)) {
		rc = sr_err_set(e, -SR_EPARSE, "%s: expected a JSON object", ctx);
		goto out;
	}
	rc = sr_json_get_str(j, "noticeTime", &when, ctx, e);
	if (rc < 0)
		goto out;
	rc = sr_time_parse_rfc3339(when, time_ns, e);
	if (rc < 0) {
		sr_err_prefix(e, "%s: noticeTime", ctx);
		*time_ns = 0;
	}
out:
	json_decref(j);
	return rc < 0 ? rc : 0;
}

/* GET <base>/latest/meta-data/<what> with the token: *status (0 when no
 * answer came), and on 200 the parse of its body into out (notice) or
 * *rebalance_ns. */
static int meta_get(struct imds *c, const char *what, struct imds_notice *out,
		    long *status, struct sr_err *e)
{
	struct sr_http_opts o;
	struct sr_http_resp r;
	char url[1024];
	char tok[TOKEN_MAX + 64];
	const char *hdr[] = { tok, NULL };
	int rc;

	opts_init(c, &o);
	snprintf(url, sizeof url, "%s/latest/meta-data/%s", c->base, what);
	snprintf(tok, sizeof tok, "X-aws-ec2-metadata-token: %s", c->token);
	*status = 0;
	rc = sr_http_request("GET", url, hdr, NULL, 0, &o, &r, e);
	if (rc < 0) {
		sr_err_prefix(e, "imds: GET %s", what);
		goto out;
	}
	*status = r.status;
	if (r.status == 404) {
		rc = 0;
	} else if (r.status == 200 && out) {
		rc = imds_parse_notice(r.body, r.body_len, out, e);
	} else if (r.status == 200) {
		rc = imds_parse_rebalance(r.body, r.body_len, &c->rebalance_ns, e);
	} else {
		rc = sr_err_set(e, -SR_EHTTP, "imds: GET %s: HTTP %ld", what,
				r.status);
	}
out:
	sr_http_resp_free(&r);
	return rc;
}

/* After a failure to reach c->base: the next poll asks the next URL of
 * the list (with a new token). */
static int next_base(struct imds *c, int rc)
{
	if (strchr(c->bases, ',') && use_base(c, c->cur + 1) == 0)
		c->token_at_ns = 0;
	return rc;
}

/* One GET of `what` with a valid token (a 401 fetches a new one and
 * asks again, once). */
static int poll_one(struct imds *c, const char *what, struct imds_notice *out,
		    struct sr_err *e)
{
	long status = 0;
	int rc;

	for (int attempt = 0; attempt < 2; attempt++) {
		if (!token_fresh(c)) {
			rc = token_fetch(c, e);
			if (rc < 0)
				return next_base(c, rc);
		}
		rc = meta_get(c, what, out, &status, e);
		if (status == 0 && rc < 0)
			return next_base(c, rc);
		if (status != 401)
			return rc;
		c->token_at_ns = 0; /* expired or revoked: fetch a new one */
	}
	return sr_err_set(e, -SR_EHTTP, "imds: GET %s: HTTP 401 with a fresh "
			  "token", what);
}

int imds_poll(struct imds *c, struct imds_notice *out, struct sr_err *e)
{
	int rc;

	memset(out, 0, sizeof *out);
	rc = poll_one(c, "spot/instance-action", out, e);
	if (rc < 0)
		return rc;
	/* the early warning, until it came (an IMDS without the path
	 * answers 404: none) */
	if (!c->rebalance_ns) {
		rc = poll_one(c, "events/recommendations/rebalance", NULL, e);
		if (rc < 0 && out->action == IMDS_NONE)
			return rc;
		/* else: a notice seen is what matters now */
	}
	out->rebalance_ns = c->rebalance_ns;
	return 0;
}
