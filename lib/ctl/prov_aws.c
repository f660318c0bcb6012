/*
 * prov_aws.c - the `aws` cloud: provider contract v2 over EC2.
 *
 * Market view (cloud/market.h).  Pools are the catalog's AWS offerings
 * in the driver's region (the same pool numbers as the local market's,
 * so a pool id in the database means one thing).  What a real cloud can
 * tell is all the policy sees: list prices from the catalog, the spot
 * price now from DescribeSpotPriceHistory (refreshed at most once a
 * minute on the reconciler thread; the catalog's spot price until then),
 * and spot capacity as an *estimate* - "a spot price is quoted" -
 * corrected by what launches answer (a capacity error marks the pool,
 * ctl__pool_mark).  EC2 exposes neither past nor present capacity, so
 * nothing here replays a trace.
 *
 * Compute driver: lib/aws's EC2 driver (RunInstances with ClientToken,
 * tags, user-data; DescribeInstances by the cluster tag;
 * TerminateInstances), driven by clouds.c like every cloud.
 *
 * Bootstrap: the user-data script (ec2_bootstrap_script): the agent,
 * its token, the control plane's URL.
 *
 * Notices: EC2 tells the instance (IMDSv2 spot/instance-action), whose
 * agent reports it to the API; list() never reports one.
 *
 * Threading: offerings/describe may be called from HTTP threads; the
 * price cache is under a mutex.  refresh() runs on the reconciler thread.
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
#include "ctl/ctl_int.h"
#include "cloud/localmkt.h"

#define PRICE_REFRESH_NS (60 * SR_NS_PER_SEC)

struct price {
	char zone[40], itype[48];
	sr_micros per_h;
};

struct awsp {
	struct ctl *c;
	struct localmkt *m;          /* the catalog's pools */
	struct ec2 *ec2;             /* borrowed from the driver (its owner) */
	char region[40];
	pthread_mutex_t mu;          /* guards prices */
	struct price *prices;
	size_t nprices;
	int64_t priced_ns;           /* monotonic; 0 never */
	int64_t priced_s;            /* wall clock of the last answer */
};

static bool ours(const struct awsp *a, const struct cloud_offering *o)
{
	return strcmp(o->cloud, "aws") == 0 && strcmp(o->region, a->region) == 0;
}

/* The catalog's offering with the live spot price when one is known, and
 * spot capacity as an estimate. */
static void view(struct awsp *a, struct cloud_offering *o)
{
	o->price_src = CLOUD_PRICE_CATALOG;
	o->price_age_s = 0;
	pthread_mutex_lock(&a->mu);
	for (size_t i = 0; i < a->nprices; i++) {
		if (strcmp(a->prices[i].zone, o->zone) == 0 &&
		    strcmp(a->prices[i].itype, o->instance_type) == 0) {
			o->spot_per_h = a->prices[i].per_h;
			o->price_src = CLOUD_PRICE_LIVE;
			o->price_age_s = (int64_t)time(NULL) - a->priced_s;
			break;
		}
	}
	pthread_mutex_unlock(&a->mu);
	o->spot_available = o->spot_per_h >= 0;
	o->trace[0] = '\0';
}

static int aws_offerings(void *st, const struct cloud_query *q,
			 struct cloud_offering **out, size_t *n, struct sr_err *e)
{
	struct awsp *a = st;
	size_t k = 0;
	int rc = localmkt_offerings(a->m, q, 0, out, n, e);

	if (rc)
		return rc;
	for (size_t i = 0; i < *n; i++) {
		if (!ours(a, &(*out)[i]))
			continue;
		(*out)[k] = (*out)[i];
		view(a, &(*out)[k]);
		k++;
	}
	*n = k;
	return 0;
}

static int aws_describe(void *st, int pool, struct cloud_offering *out)
{
	struct awsp *a = st;
	int rc = localmkt_describe(a->m, pool, 0, out);

	if (rc)
		return rc;
	if (!ours(a, out))
		return -SR_ENOTFOUND;
	view(a, out);
	return 0;
}

/* Spot prices now of every instance type of our pools (one
 * DescribeSpotPriceHistory per type, last hour). */
static void prices_refresh(void *st)
{
	struct awsp *a = st;
	int64_t mono = sr_time_mono_ns();
	struct price *v = NULL;
	size_t nv = 0, cap = 0, np = localmkt_npools(a->m);
	char done[64][48];
	size_t ndone = 0;

	if (a->priced_ns && mono - a->priced_ns < PRICE_REFRESH_NS)
		return;
	a->priced_ns = mono;
	for (size_t p = 0; p < np && ndone < 64; p++) {
		struct cloud_offering o;
		struct ec2_spot_price *h = NULL, *now = NULL;
		struct cloud_error err = { 0 };
		size_t nh = 0, nn = 0;
		bool seen = false;

		if (localmkt_describe(a->m, (int)p, 0, &o) || !ours(a, &o) ||
		    o.spot_per_h < 0)
			continue;
		for (size_t i = 0; i < ndone; i++)
			seen |= strcmp(done[i], o.instance_type) == 0;
		if (seen)
			continue;
		snprintf(done[ndone++], sizeof done[0], "%s", o.instance_type);
		if (ec2_spot_price_history(a->ec2, o.instance_type, NULL,
					   (int64_t)time(NULL) - 3600, 0, &h, &nh,
					   &err)) {
			sr_warn("aws", "spot prices unavailable", "type=%s err=\"%s\":"
				" using the catalog's", o.instance_type, err.msg);
			continue;
		}
		if (ec2_spot_price_latest(h, nh, &now, &nn) == 0) {
			for (size_t i = 0; i < nn; i++) {
				if (nv == cap) {
					size_t nc = cap ? 2 * cap : 32;
					struct price *x = realloc(v, nc * sizeof *x);

					if (!x)
						break;
					v = x;
					cap = nc;
				}
				snprintf(v[nv].zone, sizeof v[nv].zone, "%s", now[i].zone);
				snprintf(v[nv].itype, sizeof v[nv].itype, "%s",
					 now[i].instance_type);
				v[nv].per_h = now[i].price_per_h;
				nv++;
			}
		}
		free(now);
		free(h);
	}
	pthread_mutex_lock(&a->mu);
	free(a->prices);
	a->prices = v;
	a->nprices = nv;
	a->priced_s = (int64_t)time(NULL);
	pthread_mutex_unlock(&a->mu);
}

/* History: what DescribeSpotPriceHistory answered last, as the price of
 * the whole window (the driver keeps no series). */
static int aws_history(void *st, int pool, double step_s, int n, double *usd_h)
{
	struct cloud_offering o;

	(void)step_s;
	if (n <= 0 || aws_describe(st, pool, &o) || o.spot_per_h < 0 ||
	    o.price_src != CLOUD_PRICE_LIVE)
		return 0;
	for (int i = 0; i < n; i++)
		usd_h[i] = sr_money_to_usd(o.spot_per_h);
	return n;
}

static void aws_mkt_destroy(void *st)
{
	struct awsp *a = st;

	if (!a)
		return;
	localmkt_free(a->m);
	free(a->prices);
	pthread_mutex_destroy(&a->mu);
	free(a);
}

static const struct cloud_market_ops aws_mkt_ops = {
	.name = "aws",
	.offerings = aws_offerings,
	.describe = aws_describe,
	.price_history = aws_history,
	.refresh = prices_refresh,
	.destroy = aws_mkt_destroy,
};

/* The user-data script: the agent (the image's, or the daemon's own
 * --agent path when it was given: the emulator), its token, our URL. */
static int aws_bootstrap(struct ctl *c, const struct ctl_boot *b, char **out,
			 struct sr_err *e)
{
	return ec2_bootstrap_script(c->cfg.agent_path && c->cfg.agent_path[0] ?
				    c->cfg.agent_path : NULL, b->api_url, b->node_id,
				    b->token, out, e);
}

int ctl__prov_aws_init(struct ctl *c, struct ctl_cloud *out, struct sr_err *e)
{
	struct awsp *a = calloc(1, sizeof *a);
	struct ec2_opts o = { 0 };
	struct ec2 *ec2 = NULL;
	int rc;

	memset(out, 0, sizeof *out);
	if (!a)
		return sr_err_set(e, -ENOMEM, "out of memory");
	pthread_mutex_init(&a->mu, NULL);
	a->c = c;
	rc = localmkt_load(c->data_dir, &a->m, e);
	if (rc)
		goto fail;
	/* The user enabled the provider (--providers aws): real endpoints
	 * are allowed. */
	o.allow_remote = true;
	o.image_id = c->cfg.aws_image;
	o.subnet_id = c->cfg.aws_subnet;
	o.security_group_id = c->cfg.aws_security_group;
	o.key_name = c->cfg.aws_key_name;
	o.instance_profile = c->cfg.aws_instance_profile;
	rc = ec2_open(&o, &ec2, e);
	if (rc)
		goto fail;
	snprintf(a->region, sizeof a->region, "%s", ec2_region(ec2));
	a->ec2 = ec2;
	rc = ec2_driver_new(ec2, &out->drv, e); /* owns ec2, even on failure */
	if (rc)
		goto fail;
	sr_info("aws", "provider ready", "region=%s endpoint=%s cluster=%s "
		"credentials=\"%s\"", a->region, ec2_endpoint(ec2), c->cluster,
		ec2_cred_source(ec2));
	snprintf(out->name, sizeof out->name, "aws");
	out->shared_disk = false;
	out->mkt = (struct cloud_market){ &aws_mkt_ops, a };
	out->bootstrap = aws_bootstrap;
	return 0;
fail:
	aws_mkt_destroy(a);
	memset(out, 0, sizeof *out);
	return rc;
}
