/*
 * aws.c - the `aws` provider: the provider contract (cloud/provider.h)
 * over EC2, one open provider per configured region.
 *
 * Market view (cloud/market.h).  Pools are the catalog's AWS offerings
 * in the provider's region (the same pool numbers as the local market's,
 * so a pool id in the database means one thing).  What a real cloud can
 * tell is all the policy sees: list prices from the catalog, the spot
 * price and its history from DescribeSpotPriceHistory (every type and
 * zone of our pools in one paginated call every 5 minutes, on the EC2
 * thread of the region: the catalog's spot price until the first answer),
 * and spot capacity as an *estimate* - "a spot price is quoted" -
 * corrected by what launches answer (a capacity error marks the pool,
 * ctl__pool_mark).  EC2 exposes neither past nor present capacity, so
 * nothing here replays a trace.
 *
 * Compute driver: lib/aws's EC2 driver for launches (RunInstances with
 * ClientToken, tags, user-data, on a worker thread each), and the
 * region's EC2 thread (ec2_watch, lib/aws/ec2_watch.c) for the rest:
 * list() answers from its listing (DescribeInstances by the cluster tag
 * every describe_interval seconds, 5 by default, plus the launches made
 * here it does not show yet), terminate() queues for it.  The reconciler
 * never waits on EC2.  A thin layer fills each launch's
 * image, subnet and security group from the configuration for its zone
 * (zone, region, then provider settings; flags win) unless the launch
 * names them (the task's resources.image_id).
 *
 * Bootstrap: the user-data script (ec2_bootstrap_script): the agent,
 * its token, the control plane's URL.
 *
 * Notices: EC2 tells the instance (IMDSv2 spot/instance-action, and
 * events/recommendations/rebalance), whose agent reports them to the
 * API; list() never reports one.  No acknowledgement.
 *
 * Configuration keys (docs/providers.md): image, subnet, security_group
 * (provider, region or zone), key_name, instance_profile, endpoint.
 *
 * Fencing: launches and terminations carry the lease epoch they were
 * asked under (the host's lease_epoch) and are checked with the host's
 * fence_ok just before EC2 is called (lib/aws ec2_set_fence).
 *
 * Threading: offerings/describe may be called from HTTP threads; the
 * listing and prices are the watch's, under its mutex.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "aws/ec2.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "cloud/localmkt.h"
#include "cloud/provider.h"

#define DESCRIBE_S_DEFAULT 5

struct awsp {
	const struct cloud_host *h;  /* borrowed */
	const struct cloud_conf *conf; /* borrowed; NULL: none */
	const struct cloud_conf_region *reg; /* borrowed; NULL: none */
	struct localmkt *m;          /* the catalog's pools */
	struct ec2 *ec2;             /* borrowed from the driver (its owner) */
	struct cloud_driver ec2drv;  /* the EC2 driver (owns ec2) */
	char region[40];
	struct ec2_watch *w;         /* the region's EC2 thread */
	struct localmkt_place place; /* aws, region, view */
};

static bool ours(const struct awsp *a, const struct cloud_offering *o)
{
	return strcmp(o->cloud, "aws") == 0 && strcmp(o->region, a->region) == 0;
}

/* The catalog's offering with the live spot price when one is known, and
 * spot capacity as an estimate (localmkt_place.view). */
static void view(void *ud, struct cloud_offering *o)
{
	struct awsp *a = ud;
	sr_micros p;
	int64_t at;

	o->price_src = CLOUD_PRICE_CATALOG;
	o->price_age_s = 0;
	if (ec2_watch_price_now(a->w, o->zone, o->instance_type, &p, &at) == 0) {
		o->spot_per_h = p;
		o->price_src = CLOUD_PRICE_LIVE;
		o->price_age_s = (int64_t)time(NULL) - at;
	}
	o->spot_available = o->spot_per_h >= 0;
	o->trace[0] = '\0';
}

static int aws_offerings(void *st, const struct cloud_query *q,
			 struct cloud_offering **out, size_t *n, struct sr_err *e)
{
	struct awsp *a = st;

	return localmkt_offerings_at(a->m, &a->place, q, out, n, e);
}

static int aws_describe(void *st, int pool, struct cloud_offering *out)
{
	struct awsp *a = st;

	return localmkt_describe_at(a->m, &a->place, pool, out);
}

/* History: the price in effect at each step, from the region's
 * DescribeSpotPriceHistory answers (24 hours are kept). */
static int aws_history(void *st, int pool, double step_s, int n, double *usd_h)
{
	struct awsp *a = st;
	struct cloud_offering o;

	if (n <= 0 || localmkt_describe(a->m, pool, 0, &o) || !ours(a, &o))
		return 0;
	return ec2_watch_price_history(a->w, o.zone, o.instance_type,
				       (int64_t)time(NULL), step_s, n, usd_h);
}

/* The provider's state is released by its own destroy (aws_destroy). */
static void aws_nop(void *st)
{
	(void)st;
}

static const struct cloud_market_ops aws_mkt_ops = {
	.name = "aws",
	.offerings = aws_offerings,
	.describe = aws_describe,
	.price_history = aws_history,
	.destroy = aws_nop,
};

/* ---- compute: the EC2 driver with the configuration's settings ---------- */

static const char *setting(const struct awsp *a, const char *zone,
			   const char *key)
{
	return a->conf ? cloud_conf_get(a->conf, a->reg, zone, key) : NULL;
}

static int aws_provision(void *st, const struct cloud_launch *l,
			 struct cloud_req **req, struct cloud_error *err)
{
	struct awsp *a = st;
	struct cloud_launch x = *l;

	if (!x.image)
		x.image = setting(a, l->zone, "image");
	if (!x.subnet)
		x.subnet = setting(a, l->zone, "subnet");
	if (!x.security_group)
		x.security_group = setting(a, l->zone, "security_group");
	x.epoch = a->h->lease_epoch ? a->h->lease_epoch(a->h->ud) : 0;
	return a->ec2drv.ops->provision(a->ec2drv.st, &x, req, err);
}

static int aws_poll(void *st, struct cloud_req *req, struct cloud_instance *out,
		    struct cloud_error *err)
{
	struct awsp *a = st;
	int rc = a->ec2drv.ops->poll(a->ec2drv.st, req, out, err);

	if (rc == 0) /* listed from now on, whatever EC2 lists yet */
		ec2_watch_launched(a->w, out);
	return rc;
}

static void aws_req_free(void *st, struct cloud_req *req)
{
	struct awsp *a = st;

	a->ec2drv.ops->req_free(a->ec2drv.st, req);
}

static int aws_terminate(void *st, const char *const *ids, size_t n,
			 struct cloud_error *err)
{
	struct awsp *a = st;
	int64_t epoch = a->h->lease_epoch ? a->h->lease_epoch(a->h->ud) : 0;

	/* queued: the EC2 thread sends it, fenced by this epoch */
	return ec2_watch_terminate(a->w, ids, n, epoch, err);
}

static int aws_list(void *st, const char *cluster, struct cloud_instance **out,
		    size_t *n, struct cloud_error *err)
{
	struct awsp *a = st;

	(void)cluster; /* the host's: the watch lists it */
	return ec2_watch_list(a->w, out, n, err);
}

static const struct cloud_driver_ops aws_drv_ops = {
	.name = "aws",
	.provision = aws_provision,
	.poll = aws_poll,
	.req_free = aws_req_free,
	.terminate = aws_terminate,
	.list = aws_list,
	.destroy = aws_nop,
};

/* ---- bootstrap, provider ------------------------------------------------------ */

/* The user-data script: the agent (the image's, or the daemon's own
 * --agent path when it was given: the emulator, whose instances share
 * this host - then the state dir is theirs to hide too), its one-time
 * bootstrap secret, our URL. */
static int aws_bootstrap(void *st, const struct cloud_boot *b, char **out,
			 struct sr_err *e)
{
	struct awsp *a = st;
	const char *priv[] = { a->h->agent_given ? a->h->state_dir : NULL, NULL };

	return ec2_bootstrap_script(a->h->agent_given ? a->h->agent_path : NULL,
				    b->api_url, b->node_id, b->bootstrap, priv,
				    out, e);
}

static void aws_destroy(void *st)
{
	struct awsp *a = st;

	if (!a)
		return;
	ec2_watch_stop(a->w); /* before the client it borrows */
	if (a->ec2drv.ops)
		a->ec2drv.ops->destroy(a->ec2drv.st); /* closes a->ec2 */
	else
		ec2_close(a->ec2);
	localmkt_free(a->m);
	free(a);
}

/* Health of credentials (common/awscred.h): 0 good, 1 running out
 * unrenewable (*e says what to do), -EKEYEXPIRED gone. */
static int cred_health(struct sr_awscred_cache *cc, int64_t *expires_s,
		       struct sr_err *e)
{
	struct sr_awscred_state st;
	char msg[SR_ERR_MSG_MAX];
	int lvl = sr_awscred_cache_health(cc, (int64_t)time(NULL), msg,
					  sizeof msg);

	sr_awscred_cache_state(cc, &st);
	if (expires_s)
		*expires_s = st.expires_s;
	if (lvl == 0)
		return 0;
	sr_err_set(e, lvl == 2 ? -EKEYEXPIRED : 1, "%s", msg);
	return lvl == 2 ? -EKEYEXPIRED : 1;
}

static int aws_cred_check(void *st, int64_t *expires_s, struct sr_err *e)
{
	struct awsp *a = st;

	return cred_health(ec2_creds(a->ec2), expires_s, e);
}

static int aws_cred_refresh(void *st, struct sr_err *e)
{
	struct awsp *a = st;

	return sr_awscred_cache_refresh(ec2_creds(a->ec2), e);
}

static const struct cloud_provider_ops aws_ops = {
	.bootstrap = aws_bootstrap,
	.cred_check = aws_cred_check,
	.cred_refresh = aws_cred_refresh,
	.destroy = aws_destroy,
};

/* The client's options from the configuration (strings borrowed). */
static void opts_of(const struct cloud_conf *conf,
		    const struct cloud_conf_region *r, struct ec2_opts *o)
{
	memset(o, 0, sizeof *o);
	o->region = r ? r->name : NULL;
	if (!conf)
		return;
	o->endpoint = cloud_conf_get(conf, r, NULL, "endpoint");
	o->image_id = cloud_conf_get(conf, r, NULL, "image");
	o->subnet_id = cloud_conf_get(conf, r, NULL, "subnet");
	o->security_group_id = cloud_conf_get(conf, r, NULL, "security_group");
	o->key_name = cloud_conf_get(conf, r, NULL, "key_name");
	o->instance_profile = cloud_conf_get(conf, r, NULL, "instance_profile");
}

static bool fence_ok(void *ud, int64_t epoch)
{
	struct awsp *a = ud;

	return !a->h->fence_ok || a->h->fence_ok(a->h->ud, epoch);
}

/* The region's EC2 thread: the cluster's instances every
 * describe_interval seconds, and the spot prices of every type and zone
 * our pools sell. */
static int watch_start(struct awsp *a, struct sr_err *e)
{
	const char *iv = setting(a, NULL, "describe_interval");
	size_t np = localmkt_npools(a->m), nt = 0, nz = 0;
	const char **types = calloc(np + 1, sizeof *types);
	const char **zones = calloc(np + 1, sizeof *zones);
	struct cloud_offering *offs = calloc(np + 1, sizeof *offs);
	struct ec2_watch_opts o = { .cluster = a->h->cluster };
	double secs = DESCRIBE_S_DEFAULT;
	char *end = NULL;
	int rc;

	if (!types || !zones || !offs) {
		rc = sr_err_set(e, -ENOMEM, "out of memory");
		goto out;
	}
	if (iv) {
		secs = strtod(iv, &end);
		if (end == iv || *end || secs < 1 || secs > 300) {
			rc = sr_err_set(e, -EINVAL, "providers.aws.describe_interval"
					" '%s': expected 1 to 300 seconds", iv);
			goto out;
		}
	}
	for (size_t p = 0; p < np; p++) {
		struct cloud_offering *x = &offs[p];
		bool have_t = false, have_z = false;

		if (localmkt_describe(a->m, (int)p, 0, x) || !ours(a, x) ||
		    x->spot_per_h < 0)
			continue;
		for (size_t i = 0; i < nt; i++)
			have_t |= strcmp(types[i], x->instance_type) == 0;
		for (size_t i = 0; i < nz; i++)
			have_z |= strcmp(zones[i], x->zone) == 0;
		if (!have_t)
			types[nt++] = x->instance_type;
		if (!have_z && x->zone[0])
			zones[nz++] = x->zone;
	}
	o.period_ns = (int64_t)(secs * 1e9);
	o.types = types;
	o.ntypes = nt;
	o.zones = zones;
	o.nzones = nz;
	rc = ec2_watch_start(a->ec2, &o, &a->w, e);
out:
	free(types);
	free(zones);
	free(offs);
	return rc;
}

static int aws_open(const struct cloud_host *h, const struct cloud_conf *conf,
		    const struct cloud_conf_region *region,
		    struct cloud_provider *out, struct sr_err *e)
{
	struct awsp *a = calloc(1, sizeof *a);
	struct ec2_opts o;
	struct ec2 *ec2 = NULL;
	int rc;

	memset(out, 0, sizeof *out);
	if (!a)
		return sr_err_set(e, -ENOMEM, "out of memory");
	a->h = h;
	a->conf = conf;
	a->reg = region;
	rc = localmkt_load(h->data_dir, &a->m, e);
	if (rc)
		goto fail;
	opts_of(conf, region, &o);
	/* The user enabled the provider (--providers aws or the config
	 * file): real endpoints are allowed. */
	o.allow_remote = true;
	rc = ec2_open(&o, &ec2, e);
	if (rc)
		goto fail;
	snprintf(a->region, sizeof a->region, "%s", ec2_region(ec2));
	a->place = (struct localmkt_place){ "aws", a->region, view, a };
	a->ec2 = ec2;
	ec2_set_fence(ec2, fence_ok, a);
	rc = ec2_driver_new(ec2, &a->ec2drv, e); /* owns ec2, even on failure */
	if (rc) {
		a->ec2 = NULL;
		goto fail;
	}
	rc = watch_start(a, e);
	if (rc)
		goto fail;
	sr_info("aws", "provider ready", "region=%s endpoint=%s cluster=%s "
		"credentials=\"%s\"", a->region, ec2_endpoint(ec2), h->cluster,
		ec2_cred_source(ec2));
	out->mkt = (struct cloud_market){ &aws_mkt_ops, a };
	out->drv = (struct cloud_driver){ &aws_drv_ops, a };
	out->ops = &aws_ops;
	out->st = a;
	snprintf(out->region, sizeof out->region, "%s", a->region);
	return 0;
fail:
	aws_destroy(a);
	memset(out, 0, sizeof *out);
	return rc;
}

#define PROBE_TYPE "m5.large"

/* spotrun check: credentials found and valid - one cheap signed read
 * call, DescribeInstanceTypeOfferings, which also says which zones of
 * the region sell the probe type.  Nothing is started. */
static int aws_check(const struct cloud_conf *conf,
		     const struct cloud_conf_region *region,
		     struct cloud_check *out, struct sr_err *e)
{
	struct ec2_opts o;
	struct ec2 *c = NULL;
	struct cloud_error err = { 0 };
	int rc;

	memset(out, 0, sizeof *out);
	opts_of(conf, region, &o);
	/* a read call starts nothing, so any endpoint may be asked */
	o.allow_remote = true;
	o.timeout_ms = 10000;
	o.max_retries = 1;
	rc = ec2_open(&o, &c, e);
	if (rc)
		return rc;
	snprintf(out->credentials, sizeof out->credentials, "%s",
		 ec2_cred_source(c));
	rc = cred_health(ec2_creds(c), &out->expires_s, e);
	if (rc < 0) {
		ec2_close(c);
		return rc;
	}
	if (rc == 1)
		snprintf(out->warning, sizeof out->warning, "%s", e->msg);
	snprintf(out->region, sizeof out->region, "%s", ec2_region(c));
	snprintf(out->endpoint, sizeof out->endpoint, "%s", ec2_endpoint(c));
	snprintf(out->probe, sizeof out->probe, "%s", PROBE_TYPE);
	rc = ec2_instance_type_zones(c, PROBE_TYPE, &out->zones, &out->nzones,
				     &err);
	if (rc)
		sr_err_set(e, rc, "signed call failed (%s): %s",
			   cloud_err_class_str(err.cls), err.msg);
	ec2_close(c);
	return rc;
}

/* spotrun plan / gpus: the spot price now of every catalog type and
 * zone of the region, from one paginated DescribeSpotPriceHistory of
 * the last hour (the newest point of each).  EC2 has no on-demand price
 * feed here (the Pricing API is another service): the catalog's stays. */
static int aws_live_prices(const struct cloud_conf *conf,
			   const struct cloud_conf_region *region,
			   const struct cloud_price_ask *ask, size_t nask,
			   struct cloud_price_quote **out, size_t *n,
			   char *feed, size_t feedcap, struct sr_err *e)
{
	const char **types = calloc(nask + 1, sizeof *types);
	const char **zones = calloc(nask + 1, sizeof *zones);
	struct ec2_spot_price *v = NULL, *lat = NULL;
	struct cloud_error err = { 0 };
	struct ec2_price_query q = { 0 };
	struct ec2_opts o;
	struct ec2 *c = NULL;
	size_t nv = 0, nl = 0;
	int rc;

	*out = NULL;
	*n = 0;
	if (!types || !zones) {
		rc = sr_err_set(e, -ENOMEM, "out of memory");
		goto out;
	}
	opts_of(conf, region, &o);
	o.allow_remote = true; /* a read call starts nothing */
	o.timeout_ms = 10000;
	o.max_retries = 1;
	rc = ec2_open(&o, &c, e);
	if (rc)
		goto out;
	snprintf(feed, feedcap, "EC2 DescribeSpotPriceHistory %s",
		 ec2_region(c));
	for (size_t i = 0; i < nask; i++) {
		bool have_t = false, have_z = false;

		if (strcmp(ask[i].region, ec2_region(c)))
			continue;
		for (size_t k = 0; k < q.ntypes; k++)
			have_t |= strcmp(types[k], ask[i].instance_type) == 0;
		for (size_t k = 0; k < q.nzones; k++)
			have_z |= strcmp(zones[k], ask[i].zone) == 0;
		if (!have_t)
			types[q.ntypes++] = ask[i].instance_type;
		if (!have_z && ask[i].zone[0])
			zones[q.nzones++] = ask[i].zone;
	}
	if (q.ntypes == 0)
		goto out; /* the catalog sells nothing here */
	q.types = types;
	q.zones = zones;
	q.since_s = (int64_t)time(NULL) - 3600;
	q.max_items = 100000;
	rc = ec2_spot_prices(c, &q, &v, &nv, &err);
	if (rc) {
		sr_err_set(e, rc, "%s", err.msg);
		goto out;
	}
	rc = ec2_spot_price_latest(v, nv, &lat, &nl);
	if (rc) {
		sr_err_set(e, rc, "out of memory");
		goto out;
	}
	*out = calloc(nl + 1, sizeof **out);
	if (!*out) {
		rc = sr_err_set(e, -ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < nl; i++) {
		struct cloud_price_quote *x = &(*out)[i];

		snprintf(x->region, sizeof x->region, "%s", ec2_region(c));
		snprintf(x->zone, sizeof x->zone, "%s", lat[i].zone);
		snprintf(x->instance_type, sizeof x->instance_type, "%s",
			 lat[i].instance_type);
		x->spot_per_h = lat[i].price_per_h;
		x->ondemand_per_h = -1;
	}
	*n = nl;
out:
	free(types);
	free(zones);
	free(v);
	free(lat);
	ec2_close(c);
	return rc;
}

static const char *const aws_keys[] = {
	"image", "subnet", "security_group", "key_name", "instance_profile",
	"endpoint", "describe_interval", NULL
};

const struct cloud_prov_def prov_aws = {
	.name = "aws",
	.summary = "AWS EC2 (credentials, region and endpoint as the AWS CLI "
		   "finds them)",
	.caps = CLOUD_CAP_SPOT | CLOUD_CAP_TAGS,
	.regional = true,
	.conf_keys = aws_keys,
	.notice_source = "imds",
	.notice_ack = false,
	.open = aws_open,
	.check = aws_check,
	.live_prices = aws_live_prices,
};
