/*
 * routes_imds.c - an AWS-style IMDSv2 the daemon serves the nodes of a
 * provider whose nodes have no metadata service of their own
 * (CLOUD_CAP_HOSTED_META: the local cloud), one base URL per instance:
 * /imds/{node id}/latest/...  (docs/api.md "Local IMDSv2").  It answers
 * from the provider's own view of its instances (cloud_provider_ops.
 * metadata, through ctl__node_meta), never from the control plane's
 * database; the daemon's HTTP server only carries it.  An instance of
 * another cloud has that cloud's IMDS (EC2's, or the EC2 emulator's).
 *
 * Protocol as AWS documents it: PUT /latest/api/token with header
 * X-aws-ec2-metadata-token-ttl-seconds (1..21600) returns a session token
 * as text; every GET must carry it in X-aws-ec2-metadata-token or gets
 * 401.  /latest/meta-data/spot/instance-action is 404 until the cloud
 * has scheduled the instance's interruption, then
 *     {"action": "terminate", "time": "2026-11-29T14:20:05Z"}
 * /latest/meta-data/events/recommendations/rebalance is 404 until the
 * cloud recommends rebalancing it, then
 *     {"noticeTime": "2026-11-29T14:18:00Z"}
 * Answers are text/plain like the real service, not the API's JSON errors.
 * A session token's expiry is on the real clock, as the instance's own
 * (the reconciler never compares it; its times come from ctl__now).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/timeutil.h"
#include "ctl/auth.h"
#include "ctl/ctl_int.h"
#include "ctl/routes.h"

#define TEXT "text/plain"

static int text(struct ctl_resp *rs, int status, const char *s)
{
	return ctl_resp_text(rs, status, TEXT, s, strlen(s));
}

struct imds_node {
	int64_t id;
	struct cloud_meta m;
};

static int find(struct ctl_req *rq, struct imds_node *n)
{
	const char *s = ctl_req_param(rq, "id");
	char *end = NULL;

	memset(n, 0, sizeof *n);
	n->id = s ? strtoll(s, &end, 10) : 0;
	if (!s || *end || n->id <= 0)
		return -1;
	return ctl__node_meta(ctl_req_ctl(rq), n->id, &n->m) ? -1 : 0;
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

/* A document {"<head>": ..., "<key>": "<the cloud's time>"} (whole
 * seconds, as EC2 writes them): 404 while there is none.  head: a
 * leading '"action": "terminate", ' or "". */
static int timed(struct ctl_resp *rs, int64_t at_ns, const char *head,
		 const char *key)
{
	char t[40], buf[128];

	if (!at_ns)
		return text(rs, 404, "Not Found");
	if (sr_time_format_rfc3339(at_ns, 0, t, sizeof t) < 0)
		return text(rs, 500, "Internal Error");
	snprintf(buf, sizeof buf, "{%s\"%s\": \"%s\"}", head, key, t);
	return ctl_resp_text(rs, 200, "application/json", buf, strlen(buf));
}

static int imds_get(struct ctl_req *rq, struct ctl_resp *rs, const char *what)
{
	struct imds_node n;
	char buf[128];

	if (find(rq, &n))
		return text(rs, 404, "Not Found");
	if (!authorized(rq, &n))
		return text(rs, 401, "Unauthorized");
	if (strcmp(what, "instance-action") == 0)
		return timed(rs, n.m.notice_ns, "\"action\": \"terminate\", ",
			     "time");
	if (strcmp(what, "rebalance") == 0)
		return timed(rs, n.m.rebalance_ns, "", "noticeTime");
	if (strcmp(what, "instance-id") == 0)
		snprintf(buf, sizeof buf, "%s", n.m.instance_id);
	else if (strcmp(what, "availability-zone") == 0)
		snprintf(buf, sizeof buf, "%s", n.m.zone);
	else if (strcmp(what, "instance-type") == 0)
		snprintf(buf, sizeof buf, "%s", n.m.instance_type);
	else
		snprintf(buf, sizeof buf, "%s", n.m.spot ? "spot" : "on-demand");
	return text(rs, 200, buf);
}

static int imds_action(struct ctl_req *rq, struct ctl_resp *rs)
{
	return imds_get(rq, rs, "instance-action");
}

static int imds_rebalance(struct ctl_req *rq, struct ctl_resp *rs)
{
	return imds_get(rq, rs, "rebalance");
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
	{ "GET", "/imds/{id}/latest/meta-data/events/recommendations/rebalance",
	  CTL_AUTH_PUBLIC, imds_rebalance, "imds_rebalance" },
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
