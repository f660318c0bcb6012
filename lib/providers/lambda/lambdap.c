/*
 * lambdap.c - the `lambda` provider: the provider contract
 * (cloud/provider.h) over Lambda Cloud's API (lib/lambda/lambda.h), one
 * open provider per configured region.
 *
 * Lambda sells on-demand only (no CLOUD_CAP_SPOT) and has no tags (no
 * CLOUD_CAP_TAGS: the leak sweep leaves it alone; its instances are
 * found by name, "sr-<cluster>-<node>-<attempt>").  Market view: the
 * catalog's Lambda offerings in the region, on-demand.  A launch that
 * finds no capacity ("insufficient-capacity") marks its pool.
 *
 * Bootstrap: the node script (the agent with --notice none: on-demand
 * nodes get no notice), run after boot over SSH with the key the user
 * registered with Lambda (ssh_key_name, its private half ssh_key_file).
 *
 * Configuration keys (docs/providers.md "Lambda"): api_key_file,
 * ssh_key_name, ssh_key_file, ssh_user, ssh, endpoint, poll_ms (how
 * often a booting instance is asked about, and ssh retried: 5000).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aws/ec2.h"
#include "cloud/localmkt.h"
#include "cloud/provider.h"
#include "common/log.h"
#include "lambda/lambda.h"

struct lap {
	const struct cloud_host *h;  /* borrowed */
	struct localmkt *m;
	struct localmkt_place place; /* lambda, region */
	char region[40];
};

static int la_offerings(void *st, const struct cloud_query *q,
			struct cloud_offering **out, size_t *n, struct sr_err *e)
{
	struct lap *a = st;

	return localmkt_offerings_at(a->m, &a->place, q, out, n, e);
}

static int la_describe(void *st, int pool, struct cloud_offering *out)
{
	struct lap *a = st;

	return localmkt_describe_at(a->m, &a->place, pool, out);
}

static void la_nop(void *st)
{
	(void)st;
}

static const struct cloud_market_ops la_mkt_ops = {
	.name = "lambda",
	.offerings = la_offerings,
	.describe = la_describe,
	/* no .price_history: on-demand only, no spot price */
	.destroy = la_nop,
};

static int la_bootstrap(void *st, const struct cloud_boot *b, char **out,
			struct sr_err *e)
{
	struct lap *a = st;
	const char *priv[] = { a->h->agent_given ? a->h->state_dir : NULL, NULL };

	return ec2_bootstrap_script_notice(a->h->agent_given ? a->h->agent_path
					   : NULL, b->api_url, b->node_id,
					   b->bootstrap, priv, "none", out, e);
}

static void la_destroy(void *st)
{
	struct lap *a = st;

	if (!a)
		return;
	localmkt_free(a->m);
	free(a);
}

static const struct cloud_provider_ops la_ops = {
	.bootstrap = la_bootstrap,
	.destroy = la_destroy,
};

/* The API key of api_key_file (first line), into a malloc'd string. */
static int read_key(const char *path, char **out, struct sr_err *e)
{
	FILE *f = fopen(path, "r");
	char buf[512];
	size_t n;

	*out = NULL;
	if (!f)
		return sr_err_set(e, -errno, "providers.lambda.api_key_file %s: %s",
				  path, strerror(errno));
	n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	buf[strcspn(buf, "\r\n")] = '\0';
	if (!buf[0])
		return sr_err_set(e, -EINVAL, "providers.lambda.api_key_file %s: "
				  "empty", path);
	*out = strdup(buf);
	explicit_bzero(buf, sizeof buf);
	return *out ? 0 : sr_err_set(e, -ENOMEM, "out of memory");
}

static int client_open(const struct cloud_conf *conf,
		       const struct cloud_conf_region *r, struct lambda **out,
		       struct sr_err *e)
{
	const char *kf = conf ? cloud_conf_get(conf, r, NULL, "api_key_file") : NULL;
	struct lambda_opts o = { .region = r ? r->name : NULL,
				 .allow_remote = true };
	const char *pm = NULL;
	char *key = NULL;
	int rc;

	if (conf) {
		o.endpoint = cloud_conf_get(conf, r, NULL, "endpoint");
		o.ssh_key_name = cloud_conf_get(conf, r, NULL, "ssh_key_name");
		o.ssh_key_file = cloud_conf_get(conf, r, NULL, "ssh_key_file");
		o.ssh_user = cloud_conf_get(conf, r, NULL, "ssh_user");
		o.ssh = cloud_conf_get(conf, r, NULL, "ssh");
		pm = cloud_conf_get(conf, r, NULL, "poll_ms");
	}
	if (pm) {
		char *end = NULL;

		o.poll_ms = strtol(pm, &end, 10);
		if (end == pm || *end || o.poll_ms < 100 || o.poll_ms > 60000)
			return sr_err_set(e, -EINVAL, "providers.lambda.poll_ms "
					  "'%s': expected 100 to 60000", pm);
	}
	if (kf) {
		rc = read_key(kf, &key, e);
		if (rc)
			return rc;
		o.api_key = key;
	}
	rc = lambda_open(&o, out, e);
	if (key) {
		explicit_bzero(key, strlen(key));
		free(key);
	}
	return rc;
}

static int la_open(const struct cloud_host *h, const struct cloud_conf *conf,
		   const struct cloud_conf_region *region,
		   struct cloud_provider *out, struct sr_err *e)
{
	struct lap *a = calloc(1, sizeof *a);
	struct lambda *c = NULL;
	int rc;

	memset(out, 0, sizeof *out);
	if (!a)
		return sr_err_set(e, -ENOMEM, "out of memory");
	a->h = h;
	if (!region) {
		rc = sr_err_set(e, -EINVAL, "providers.lambda: regions: name at "
				"least one (us-east-1, ...)");
		goto fail;
	}
	snprintf(a->region, sizeof a->region, "%s", region->name);
	a->place = (struct localmkt_place){ "lambda", a->region, NULL, NULL };
	rc = localmkt_load(h->data_dir, &a->m, e);
	if (!rc)
		rc = client_open(conf, region, &c, e);
	if (rc)
		goto fail;
	lambda_driver_init(c, &out->drv);
	sr_info("lambda", "provider ready", "region=%s endpoint=%s", a->region,
		lambda_endpoint(c));
	out->mkt = (struct cloud_market){ &la_mkt_ops, a };
	out->ops = &la_ops;
	out->st = a;
	snprintf(out->region, sizeof out->region, "%s", a->region);
	return 0;
fail:
	la_destroy(a);
	return rc;
}

/* spotrun check: the key found, one cheap read (instance types). */
static int la_check(const struct cloud_conf *conf,
		    const struct cloud_conf_region *region,
		    struct cloud_check *out, struct sr_err *e)
{
	struct lambda *c = NULL;
	struct lambda_type *t = NULL;
	struct cloud_error err = { 0 };
	size_t n = 0;
	int rc;

	memset(out, 0, sizeof *out);
	rc = client_open(conf, region, &c, e);
	if (rc)
		return rc;
	snprintf(out->credentials, sizeof out->credentials, "API key (%s)",
		 conf && cloud_conf_get(conf, region, NULL, "api_key_file") ?
		 "providers.lambda.api_key_file" : "LAMBDA_API_KEY");
	snprintf(out->endpoint, sizeof out->endpoint, "%s", lambda_endpoint(c));
	if (region)
		snprintf(out->region, sizeof out->region, "%s", region->name);
	rc = lambda_types(c, &t, &n, &err);
	if (rc)
		sr_err_set(e, err.cls == CLOUD_EAUTH ? -EACCES : rc, "%s", err.msg);
	else
		snprintf(out->detail, sizeof out->detail, "%zu instance types "
			 "offered", n);
	lambda_types_free(t, n);
	lambda_close(c);
	return rc;
}

/* spotrun plan / gpus: on-demand prices from /instance-types. */
static int la_live_prices(const struct cloud_conf *conf,
			  const struct cloud_conf_region *region,
			  const struct cloud_price_ask *ask, size_t nask,
			  struct cloud_price_quote **out, size_t *n,
			  char *feed, size_t feedcap, struct sr_err *e)
{
	struct lambda *c = NULL;
	struct lambda_type *t = NULL;
	struct cloud_price_quote *q = NULL;
	struct cloud_error err = { 0 };
	size_t nt = 0, k = 0;
	int rc;

	*out = NULL;
	*n = 0;
	rc = client_open(conf, region, &c, e);
	if (rc)
		return rc;
	snprintf(feed, feedcap, "Lambda instance-types %s", lambda_endpoint(c));
	rc = lambda_types(c, &t, &nt, &err);
	if (rc) {
		sr_err_set(e, rc, "%s", err.msg);
		goto out;
	}
	q = calloc(nask + 1, sizeof *q);
	if (!q) {
		rc = sr_err_set(e, -ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < nask; i++) {
		for (size_t j = 0; j < nt; j++) {
			if (strcmp(t[j].name, ask[i].instance_type))
				continue;
			snprintf(q[k].region, sizeof q[k].region, "%s", ask[i].region);
			snprintf(q[k].zone, sizeof q[k].zone, "%s", ask[i].zone);
			snprintf(q[k].instance_type, sizeof q[k].instance_type, "%s",
				 t[j].name);
			q[k].spot_per_h = -1;
			q[k].ondemand_per_h = t[j].price_per_h;
			k++;
		}
	}
	*out = q;
	*n = k;
	q = NULL;
out:
	free(q);
	lambda_types_free(t, nt);
	lambda_close(c);
	return rc;
}

static const char *const la_keys[] = {
	"api_key_file", "ssh_key_name", "ssh_key_file", "ssh_user", "ssh",
	"endpoint", "poll_ms", NULL
};

const struct cloud_prov_def prov_lambda = {
	.name = "lambda",
	.summary = "Lambda Cloud on-demand GPU instances (LAMBDA_API_KEY; "
		   "bootstrapped over SSH)",
	.caps = 0,
	.regional = true,
	.conf_keys = la_keys,
	.notice_source = "none",
	.notice_ack = false,
	.open = la_open,
	.check = la_check,
	.live_prices = la_live_prices,
};
