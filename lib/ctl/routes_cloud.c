/*
 * routes_cloud.c - driving a simulated cloud by hand (`spotrun cloud`;
 * docs/api.md "Driving the local cloud"), through the provider's own
 * operations (cloud_provider_ops.preempt / .outage): a cloud that has
 * none (a real one) answers 409, never a pretend preemption.
 *
 *   POST /v1/cloud/preempt {"node": N, "lead_s": S}
 *       the node's instance gets its interruption notice, S real
 *       seconds ahead (absent: the cloud's own lead), then is reclaimed;
 *       the control plane handles it as any preemption.
 *       202 {"node", "provider", "notice_at", "lead_s"}
 *       404 no such node; 409 the node is gone, has no instance yet, is
 *       on-demand, or its cloud cannot be driven by hand.
 *   POST /v1/cloud/outage {"pool": P, "for_s": D}
 *       P: the pool's number (`spotrun nodes --json`: "pool") or its
 *       place, "cloud/region/zone/type" ("cloud/region/type" without a
 *       zone); D seconds of the cloud's clock (--time-scale).
 *       202 {"pool", "where", "provider", "for_s", "until_s",
 *            "real_s"}
 *       404 no such pool; 409 its cloud cannot be driven by hand.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/timeutil.h"
#include "ctl/ctl_int.h"
#include "ctl/routes.h"
#include "store/store.h"

#define CTX "request body"

/* The body as an object with only `allowed` keys; NULL after a 400. */
static json_t *body_obj(struct ctl_req *rq, struct ctl_resp *rs,
			const char *const *allowed)
{
	struct sr_err e = { 0 };
	size_t len = 0;
	const char *b = ctl_req_body(rq, &len);
	json_t *o = sr_json_load_buf(b, len, CTX, &e);

	if (o && !json_is_object(o)) {
		json_decref(o);
		o = NULL;
		sr_err_set(&e, -SR_EPARSE, CTX ": expected an object");
	}
	if (o && sr_json_check_keys(o, allowed, CTX, &e)) {
		json_decref(o);
		o = NULL;
	}
	if (!o)
		ctl_resp_error(rs, 400, "%s", e.msg);
	return o;
}

/* "cloud/region/zone/type" ("cloud/region/type" without a zone). */
static void pool_where(const struct cloud_offering *o, char *buf, size_t n)
{
	snprintf(buf, n, "%s/%s/%s%s%s", o->cloud, o->region, o->zone,
		 o->zone[0] ? "/" : "", o->instance_type);
}

static int preempt(struct ctl_req *rq, struct ctl_resp *rs)
{
	static const char *const keys[] = { "node", "lead_s", NULL };
	struct ctl *c = ctl_req_ctl(rq);
	struct store_node n = { 0 };
	struct sr_err e = { 0 };
	const struct ctl_cloud *cl = NULL;
	json_t *b = body_obj(rq, rs, keys);
	int64_t node = 0, notice_ns = 0;
	double lead_s = 0;
	char at[40];
	int rc, ci;

	if (!b)
		return 0;
	rc = sr_json_get_int(b, "node", &node, CTX, &e);
	if (!rc)
		rc = sr_json_get_num_opt(b, "lead_s", &lead_s, CTX, &e);
	json_decref(b);
	if (!rc && node <= 0)
		rc = sr_err_set(&e, -EINVAL, CTX ": node: expected a node id >= 1");
	if (!rc && (!isfinite(lead_s) || lead_s < 0 || lead_s > 86400))
		rc = sr_err_set(&e, -EINVAL, CTX ": lead_s: expected 0..86400 "
				"seconds, not %g", lead_s);
	if (rc)
		return ctl_resp_error(rs, 400, "%s", e.msg);
	rc = store_node_load(ctl_req_store(rq), node, &n, &e);
	if (rc == -SR_ENOTFOUND)
		return ctl_resp_error(rs, 404, "no node %" PRId64, node);
	if (rc)
		return ctl_resp_error(rs, 500, "%s", sr_err_str(&e, rc));
	ci = ctl__cloud_of(c, n.pool);
	if (ci >= 0)
		cl = &c->clouds[ci];
	if (!strcmp(n.state, "TERMINATED") || !strcmp(n.state, "LOST"))
		rc = ctl_resp_error(rs, 409, "node %" PRId64 " is %s: only a live "
				    "node can be preempted", node, n.state);
	else if (!cl || !cl->p.ops || !cl->p.ops->preempt)
		rc = ctl_resp_error(rs, 409, "node %" PRId64 " runs on the %s "
				    "provider, which cannot be driven by hand "
				    "(only the local cloud can)", node, n.provider);
	else {
		rc = cl->p.ops->preempt(cl->p.st, node, (int64_t)(lead_s * 1000),
					&notice_ns, &e);
		if (rc == -SR_ENOTFOUND && strcmp(n.state, "READY"))
			rc = ctl_resp_error(rs, 409, "node %" PRId64 " is %s: its "
					    "instance is not running yet", node,
					    n.state);
		else if (rc == -SR_ENOTFOUND || rc == -EINVAL)
			rc = ctl_resp_error(rs, 409, "%s", e.msg);
		else if (rc)
			rc = ctl_resp_error(rs, 500, "%s", sr_err_str(&e, rc));
		else if (sr_time_format_rfc3339(notice_ns, 3, at, sizeof at) < 0)
			rc = ctl_resp_error(rs, 500, "notice time %" PRId64, notice_ns);
		else {
			ctl__wake(c);
			rc = ctl_resp_json(rs, 202, json_pack(
				"{s:I,s:s,s:s,s:f}", "node", (json_int_t)node,
				"provider", cl->name, "notice_at", at, "lead_s",
				(double)(notice_ns - ctl__now(c)) / 1e9));
		}
	}
	store_node_free(&n);
	return rc;
}

/* Pool `v` (a number, or a place) into *pool and its offering: 0, or a
 * 404 already answered (-SR_ENOTFOUND). */
static int pool_find(struct ctl *c, json_t *v, int *pool,
		     struct cloud_offering *o, struct ctl_resp *rs)
{
	struct cloud_query q = { 0 };
	struct cloud_offering *all = NULL;
	struct sr_err e = { 0 };
	size_t n = 0;
	char w[256];
	int rc;

	if (json_is_integer(v)) {
		json_int_t p = json_integer_value(v);

		*pool = p >= 0 && p <= INT32_MAX ? (int)p : -1;
		if (*pool >= 0 && ctl__describe(c, *pool, o) == 0)
			return 0;
		ctl_resp_error(rs, 404, "no pool %" JSON_INTEGER_FORMAT
			       " (spotrun nodes --json shows each node's)", p);
		return -SR_ENOTFOUND;
	}
	rc = ctl__offerings(c, &q, &all, &n, &e);
	if (rc) {
		ctl_resp_error(rs, 500, "%s", sr_err_str(&e, rc));
		return rc;
	}
	rc = -SR_ENOTFOUND;
	for (size_t i = 0; i < n && rc; i++) {
		pool_where(&all[i], w, sizeof w);
		if (!strcmp(w, json_string_value(v))) {
			*pool = all[i].pool;
			*o = all[i];
			rc = 0;
		}
	}
	free(all);
	if (rc)
		ctl_resp_error(rs, 404, "no pool '%s' (expected a pool number or "
			       "cloud/region/zone/type, as aws/us-east-1/"
			       "us-east-1a/p3.2xlarge)", json_string_value(v));
	return rc;
}

static int outage(struct ctl_req *rq, struct ctl_resp *rs)
{
	static const char *const keys[] = { "pool", "for_s", NULL };
	struct ctl *c = ctl_req_ctl(rq);
	struct cloud_offering o;
	struct sr_err e = { 0 };
	const struct ctl_cloud *cl;
	json_t *b = body_obj(rq, rs, keys), *pv;
	double for_s = 0, until_s = 0;
	char w[256];
	int rc, pool = -1;

	if (!b)
		return 0;
	pv = json_object_get(b, "pool");
	rc = sr_json_get_num(b, "for_s", &for_s, CTX, &e);
	if (!rc && !json_is_integer(pv) && !json_is_string(pv))
		rc = sr_err_set(&e, -SR_EPARSE, CTX ": pool: %s", pv ?
				"expected a pool number or cloud/region/zone/type" :
				"missing");
	if (!rc && (!isfinite(for_s) || for_s <= 0 || for_s > 365 * 86400.0))
		rc = sr_err_set(&e, -EINVAL, CTX ": for_s: expected > 0 seconds "
				"(a year at most), not %g", for_s);
	if (rc) {
		json_decref(b);
		return ctl_resp_error(rs, 400, "%s", e.msg);
	}
	rc = pool_find(c, pv, &pool, &o, rs);
	json_decref(b);
	if (rc)
		return 0;
	pool_where(&o, w, sizeof w);
	cl = &c->clouds[ctl__cloud_of(c, pool)];
	if (!cl->p.ops || !cl->p.ops->outage)
		return ctl_resp_error(rs, 409, "pool %d (%s) is sold by the %s "
				      "provider, which cannot be driven by hand "
				      "(only the local cloud can)", pool, w, cl->name);
	rc = cl->p.ops->outage(cl->p.st, pool, for_s, &until_s, &e);
	if (rc)
		return ctl_resp_error(rs, rc == -SR_ENOTFOUND ? 404 : 500, "%s",
				      sr_err_str(&e, rc));
	ctl__wake(c);
	return ctl_resp_json(rs, 202, json_pack(
		"{s:i,s:s,s:s,s:f,s:f,s:f}", "pool", pool, "where", w,
		"provider", cl->name, "for_s", for_s, "until_s", until_s,
		"real_s", for_s / ctl_time_scale(c)));
}

static const struct ctl_route routes[] = {
	{ "POST", "/v1/cloud/preempt", CTL_AUTH_ADMIN, preempt, "cloud_preempt" },
	{ "POST", "/v1/cloud/outage", CTL_AUTH_ADMIN, outage, "cloud_outage" },
};

void ctl__routes_cloud(void)
{
	for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++)
		ctl_route_register(&routes[i]);
}
