/*
 * routes_imds.c - the local cloud's AWS IMDSv2 endpoint, one base URL per
 * node: /imds/{id}/latest/...  (docs/api.md "Local IMDSv2").
 *
 * Protocol as AWS documents it: PUT /latest/api/token with header
 * X-aws-ec2-metadata-token-ttl-seconds (1..21600) returns a session token
 * as text; every GET must carry it in X-aws-ec2-metadata-token or gets
 * 401.  /latest/meta-data/spot/instance-action is 404 until the instance
 * is scheduled for interruption, then
 *     {"action": "terminate", "time": "2026-11-29T14:20:05Z"}
 * Answers are text/plain like the real service, not the API's JSON errors.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/timeutil.h"
#include "ctl/auth.h"
#include "ctl/ctl_int.h"

#define TEXT "text/plain"

static int text(struct ctl_resp *rs, int status, const char *s)
{
	return ctl_resp_text(rs, status, TEXT, s, strlen(s));
}

struct imds_node {
	int64_t id;
	bool notice;
	int64_t kill_ns;
	char zone[40], itype[48];
	bool spot;
};

static int find(struct ctl_req *rq, struct imds_node *n)
{
	struct store_stmt *st = NULL;
	struct store *db = ctl_req_store(rq);
	struct sr_err e = { 0 };
	const char *s = ctl_req_param(rq, "id");
	char *end = NULL;
	int rc = -1;

	memset(n, 0, sizeof *n);
	n->id = s ? strtoll(s, &end, 10) : 0;
	if (!s || *end || n->id <= 0 || !db)
		return -1;
	if (store_prepare(db, "SELECT CASE WHEN notice_ns IS NULL THEN 0 ELSE 1"
			  " END AS noticed, coalesce(kill_ns, 0) AS kill_ns,"
			  " zone, region, instance_type, spot FROM nodes WHERE id=?",
			  &st, &e))
		return -1;
	store_bind_i64(st, 1, n->id);
	if (store_step(st, &e) == 1) {
		const char *zone = store_col_text(st, "zone");

		n->notice = store_col_i64(st, "noticed");
		n->kill_ns = store_col_i64(st, "kill_ns");
		snprintf(n->zone, sizeof n->zone, "%s",
			 *zone ? zone : store_col_text(st, "region"));
		snprintf(n->itype, sizeof n->itype, "%s",
			 store_col_text(st, "instance_type"));
		n->spot = store_col_i64(st, "spot");
		rc = 0;
	}
	store_done(st);
	return rc;
}

static int imds_token(struct ctl_req *rq, struct ctl_resp *rs)
{
	struct ctl *c = ctl_req_ctl(rq);
	const char *ttl = ctl__req_header(rq, "X-aws-ec2-metadata-token-ttl-seconds");
	struct imds_node n;
	char tok[128], *end = NULL;
	long long t;

	if (find(rq, &n))
		return text(rs, 404, "Not Found");
	if (!ttl)
		return text(rs, 400, "Bad Request: missing "
			    "X-aws-ec2-metadata-token-ttl-seconds");
	t = strtoll(ttl, &end, 10);
	if (end == ttl || *end || t < 1 || t > 21600)
		return text(rs, 400, "Bad Request: "
			    "X-aws-ec2-metadata-token-ttl-seconds must be 1..21600");
	if (ctl_imds_token_make(c->imds_key, n.id,
				sr_time_real_ns() / SR_NS_PER_SEC + t, tok, sizeof tok))
		return text(rs, 500, "Internal Error");
	return text(rs, 200, tok);
}

static int authorized(struct ctl_req *rq, const struct imds_node *n)
{
	struct ctl *c = ctl_req_ctl(rq);

	return ctl_imds_token_valid(c->imds_key, n->id,
				    ctl__req_header(rq, "X-aws-ec2-metadata-token"),
				    sr_time_real_ns() / SR_NS_PER_SEC);
}

static int imds_get(struct ctl_req *rq, struct ctl_resp *rs, const char *what)
{
	struct imds_node n;
	char buf[128];

	if (find(rq, &n))
		return text(rs, 404, "Not Found");
	if (!authorized(rq, &n))
		return text(rs, 401, "Unauthorized");
	if (strcmp(what, "instance-action") == 0) {
		char t[40];

		if (!n.notice)
			return text(rs, 404, "Not Found");
		if (sr_time_format_rfc3339(n.kill_ns, 0, t, sizeof t) < 0)
			return text(rs, 500, "Internal Error");
		snprintf(buf, sizeof buf, "{\"action\": \"terminate\", \"time\": "
			 "\"%s\"}", t);
		return ctl_resp_text(rs, 200, "application/json", buf, strlen(buf));
	}
	if (strcmp(what, "instance-id") == 0)
		snprintf(buf, sizeof buf, "i-local%015" PRId64, n.id);
	else if (strcmp(what, "availability-zone") == 0)
		snprintf(buf, sizeof buf, "%s", n.zone);
	else if (strcmp(what, "instance-type") == 0)
		snprintf(buf, sizeof buf, "%s", n.itype);
	else
		snprintf(buf, sizeof buf, "%s", n.spot ? "spot" : "on-demand");
	return text(rs, 200, buf);
}

static int imds_action(struct ctl_req *rq, struct ctl_resp *rs)
{
	return imds_get(rq, rs, "instance-action");
}

static int imds_id(struct ctl_req *rq, struct ctl_resp *rs)
{
	return imds_get(rq, rs, "instance-id");
}

static int imds_az(struct ctl_req *rq, struct ctl_resp *rs)
{
	return imds_get(rq, rs, "availability-zone");
}

static int imds_type(struct ctl_req *rq, struct ctl_resp *rs)
{
	return imds_get(rq, rs, "instance-type");
}

static int imds_life(struct ctl_req *rq, struct ctl_resp *rs)
{
	return imds_get(rq, rs, "instance-life-cycle");
}

static const struct ctl_route routes[] = {
	{ "PUT", "/imds/{id}/latest/api/token", CTL_AUTH_PUBLIC, imds_token,
	  "imds_token" },
	{ "GET", "/imds/{id}/latest/meta-data/spot/instance-action",
	  CTL_AUTH_PUBLIC, imds_action, "imds_action" },
	{ "GET", "/imds/{id}/latest/meta-data/instance-id", CTL_AUTH_PUBLIC,
	  imds_id, "imds_id" },
	{ "GET", "/imds/{id}/latest/meta-data/placement/availability-zone",
	  CTL_AUTH_PUBLIC, imds_az, "imds_az" },
	{ "GET", "/imds/{id}/latest/meta-data/instance-type", CTL_AUTH_PUBLIC,
	  imds_type, "imds_type" },
	{ "GET", "/imds/{id}/latest/meta-data/instance-life-cycle",
	  CTL_AUTH_PUBLIC, imds_life, "imds_life" },
};

void ctl__routes_imds(void)
{
	for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++)
		ctl_route_register(&routes[i]);
}
