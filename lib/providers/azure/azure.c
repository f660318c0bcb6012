/*
 * azure.c - the `azure` provider: the provider contract (cloud/provider.h)
 * over Azure Resource Manager (lib/azure/arm.h), one open provider per
 * configured region (an Azure location: eastus, westeurope, ...).
 *
 * Market view.  Pools are the catalog's Azure offerings in the region
 * (the local market's pool numbers).  Prices: the catalog's until the
 * Retail Prices API answers (lib/azure/azprices.h: spot and pay-as-you-go
 * per VM size, every PRICES_S on the reconciler thread's refresh), then
 * the live ones (price_src LIVE, with their age).  Spot capacity is an
 * estimate, "a spot price is quoted", corrected by what launches answer
 * (a capacity error marks the pool).
 *
 * Compute: lib/azure's driver itself (a worker thread per launch: PUT
 * the VM, follow its Azure-AsyncOperation), its list (the resource
 * group's VMs tagged with the cluster: the leak sweep) and delete (the
 * NIC, OS disk and public IP go with the VM: deleteOption Delete),
 * fenced with the host's lease (arm_set_lease).
 *
 * Bootstrap: the node script in customData, cloud-init runs it at first
 * boot: the agent with --notice scheduled-events, its one-time bootstrap
 * secret (traded for the node token at first contact), our URL.
 *
 * Notices: Azure tells only the VM (Scheduled Events, Preempt with a
 * NotBefore >= 30 s ahead); the agent reports it and acknowledges the
 * event after its final checkpoint (notice_ack), so the VM may go early.
 *
 * Configuration keys (docs/providers.md "Azure"): subscription,
 * resource_group, image, subnet, ssh_key, admin_user, public_ip,
 * endpoint, login_endpoint, imds, prices_endpoint.
 *
 * Threading: offerings/describe from any thread; the live prices are
 * under the provider's mutex; refresh on the reconciler thread only.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "aws/ec2.h"
#include "azure/arm.h"
#include "azure/azprices.h"
#include "cloud/localmkt.h"
#include "cloud/provider.h"
#include "common/log.h"

#define PRICES_S 300
#define PRICES_RETRY_S 30

struct azp {
	const struct cloud_host *h;           /* borrowed */
	const struct cloud_conf *conf;        /* borrowed; NULL: none */
	const struct cloud_conf_region *reg;  /* borrowed */
	struct localmkt *m;
	struct arm *arm;                      /* owned by drv */
	struct cloud_driver drv;             /* the ARM driver, the provider's */
	char region[40];
	struct localmkt_place place;         /* azure, region, view */
	pthread_mutex_t mu;                   /* guards the prices */
	struct azprice *prices;
	size_t nprices;
	int64_t prices_at_s, next_fetch_s;
};

static const char *setting(const struct azp *a, const char *key)
{
	return a->conf ? cloud_conf_get(a->conf, a->reg, NULL, key) : NULL;
}

/* The catalog's offering with the live prices when the feed quoted
 * them, spot capacity as an estimate (localmkt_place.view). */
static void view(void *ud, struct cloud_offering *o)
{
	struct azp *a = ud;

	o->price_src = CLOUD_PRICE_CATALOG;
	o->price_age_s = 0;
	pthread_mutex_lock(&a->mu);
	for (size_t i = 0; i < a->nprices; i++) {
		const struct azprice *p = &a->prices[i];

		if (strcmp(p->sku, o->instance_type))
			continue;
		if (p->ondemand_per_h >= 0)
			o->ondemand_per_h = p->ondemand_per_h;
		o->spot_per_h = p->spot_per_h;
		o->price_src = CLOUD_PRICE_LIVE;
		o->price_age_s = (int64_t)time(NULL) - a->prices_at_s;
	}
	pthread_mutex_unlock(&a->mu);
	o->spot_available = o->spot_per_h >= 0;
	o->trace[0] = '\0';
}

static int az_offerings(void *st, const struct cloud_query *q,
			struct cloud_offering **out, size_t *n, struct sr_err *e)
{
	struct azp *a = st;

	return localmkt_offerings_at(a->m, &a->place, q, out, n, e);
}

static int az_describe(void *st, int pool, struct cloud_offering *out)
{
	struct azp *a = st;

	return localmkt_describe_at(a->m, &a->place, pool, out);
}

/* The region's sizes' prices, every PRICES_S (reconciler thread). */
static void az_refresh(void *st)
{
	struct azp *a = st;
	size_t np = localmkt_npools(a->m), ns = 0;
	const char **skus = calloc(np + 1, sizeof *skus);
	struct cloud_offering *offs = calloc(np + 1, sizeof *offs);
	struct azprice *v = NULL;
	int64_t now = (int64_t)time(NULL);
	struct sr_err e;
	size_t nv = 0;
	int rc;

	if (now < a->next_fetch_s || !skus || !offs)
		goto out;
	for (size_t p = 0; p < np; p++) {
		bool have = false;

		if (localmkt_describe(a->m, (int)p, 0, &offs[p]) ||
		    strcmp(offs[p].cloud, "azure") ||
		    strcmp(offs[p].region, a->region))
			continue;
		for (size_t i = 0; i < ns; i++)
			have |= strcmp(skus[i], offs[p].instance_type) == 0;
		if (!have)
			skus[ns++] = offs[p].instance_type;
	}
	if (!ns)
		goto out;
	sr_err_clear(&e);
	rc = azprices_fetch(setting(a, "prices_endpoint"), a->region, skus, ns,
			    &v, &nv, &e);
	if (rc) {
		sr_warn("azure", "retail prices unavailable", "region=%s "
			"error=\"%s\"", a->region, sr_err_str(&e, rc));
		a->next_fetch_s = now + PRICES_RETRY_S;
		goto out;
	}
	pthread_mutex_lock(&a->mu);
	free(a->prices);
	a->prices = v;
	a->nprices = nv;
	a->prices_at_s = now;
	pthread_mutex_unlock(&a->mu);
	v = NULL;
	a->next_fetch_s = now + PRICES_S;
out:
	free(v);
	free(skus);
	free(offs);
}

/* The provider's state is released by its own destroy (az_destroy). */
static void az_nop(void *st)
{
	(void)st;
}

static const struct cloud_market_ops az_mkt_ops = {
	.name = "azure",
	.offerings = az_offerings,
	.describe = az_describe,
	/* no .price_history: the Retail Prices feed quotes the price now only */
	.refresh = az_refresh,
	.destroy = az_nop,
};

/* ---- bootstrap, credentials, provider -------------------------------- */

static int az_bootstrap(void *st, const struct cloud_boot *b, char **out,
			struct sr_err *e)
{
	struct azp *a = st;
	const char *priv[] = { a->h->agent_given ? a->h->state_dir : NULL, NULL };

	return ec2_bootstrap_script_notice(a->h->agent_given ? a->h->agent_path
					   : NULL, b->api_url, b->node_id,
					   b->bootstrap, priv, "scheduled-events",
					   out, e);
}

static int az_cred_check(void *st, int64_t *expires_s, struct sr_err *e)
{
	struct azp *a = st;
	char tok[8192];
	int rc = arm_token(a->arm, tok, sizeof tok, expires_s, e);

	explicit_bzero(tok, sizeof tok);
	return rc < 0 ? -EKEYEXPIRED : 0;
}

static void az_destroy(void *st)
{
	struct azp *a = st;

	if (!a)
		return;
	/* the ARM driver (out->drv) was destroyed first by
	 * cloud_provider_close; after a failed open it is still ours */
	if (a->drv.ops)
		a->drv.ops->destroy(a->drv.st);
	localmkt_free(a->m);
	pthread_mutex_destroy(&a->mu);
	free(a->prices);
	free(a);
}

static const struct cloud_provider_ops az_ops = {
	.bootstrap = az_bootstrap,
	.cred_check = az_cred_check,
	.destroy = az_destroy,
};

static void opts_of(const struct cloud_conf *conf,
		    const struct cloud_conf_region *r, struct arm_opts *o)
{
	const char *pip = conf ? cloud_conf_get(conf, r, NULL, "public_ip") : NULL;

	memset(o, 0, sizeof *o);
	o->location = r ? r->name : NULL;
	if (!conf)
		return;
	o->endpoint = cloud_conf_get(conf, r, NULL, "endpoint");
	o->login = cloud_conf_get(conf, r, NULL, "login_endpoint");
	o->imds = cloud_conf_get(conf, r, NULL, "imds");
	o->subscription = cloud_conf_get(conf, r, NULL, "subscription");
	o->resource_group = cloud_conf_get(conf, r, NULL, "resource_group");
	o->image = cloud_conf_get(conf, r, NULL, "image");
	o->subnet = cloud_conf_get(conf, r, NULL, "subnet");
	o->admin_user = cloud_conf_get(conf, r, NULL, "admin_user");
	o->ssh_key = cloud_conf_get(conf, r, NULL, "ssh_key");
	o->public_ip = pip && (!strcmp(pip, "true") || !strcmp(pip, "yes"));
}

static int64_t lease_epoch(void *ud)
{
	struct azp *a = ud;

	return a->h->lease_epoch ? a->h->lease_epoch(a->h->ud) : 0;
}

static bool fence_ok(void *ud, int64_t epoch)
{
	struct azp *a = ud;

	return !a->h->fence_ok || a->h->fence_ok(a->h->ud, epoch);
}

static int az_open(const struct cloud_host *h, const struct cloud_conf *conf,
		   const struct cloud_conf_region *region,
		   struct cloud_provider *out, struct sr_err *e)
{
	struct azp *a = calloc(1, sizeof *a);
	struct arm_opts o;
	int rc;

	memset(out, 0, sizeof *out);
	if (!a)
		return sr_err_set(e, -ENOMEM, "out of memory");
	pthread_mutex_init(&a->mu, NULL);
	a->h = h;
	a->conf = conf;
	a->reg = region;
	if (!region) {
		rc = sr_err_set(e, -EINVAL, "providers.azure: regions: name at "
				"least one Azure location (eastus, ...)");
		goto fail;
	}
	snprintf(a->region, sizeof a->region, "%s", region->name);
	a->place = (struct localmkt_place){ "azure", a->region, view, a };
	rc = localmkt_load(h->data_dir, &a->m, e);
	if (rc)
		goto fail;
	opts_of(conf, region, &o);
	o.allow_remote = true; /* the user enabled the provider */
	rc = arm_open(&o, &a->arm, e);
	if (rc)
		goto fail;
	arm_set_lease(a->arm, lease_epoch, fence_ok, a);
	arm_driver_init(a->arm, &a->drv);
	sr_info("azure", "provider ready", "region=%s endpoint=%s cluster=%s "
		"credentials=\"%s\"", a->region, arm_endpoint(a->arm),
		h->cluster, arm_cred_source(a->arm));
	out->mkt = (struct cloud_market){ &az_mkt_ops, a };
	out->drv = a->drv; /* the provider's from here (destroyed with it) */
	a->drv = (struct cloud_driver){ 0 };
	out->ops = &az_ops;
	out->st = a;
	snprintf(out->region, sizeof out->region, "%s", a->region);
	return 0;
fail:
	az_destroy(a);
	return rc;
}

/* spotrun check: credentials found, a token fetched, and one cheap
 * signed read (the resource group's VM list).  Starts nothing. */
static int az_check(const struct cloud_conf *conf,
		    const struct cloud_conf_region *region,
		    struct cloud_check *out, struct sr_err *e)
{
	struct arm_opts o;
	struct arm *a = NULL;
	struct cloud_instance *v = NULL;
	struct cloud_error err = { 0 };
	char tok[8192];
	size_t n = 0;
	int rc;

	memset(out, 0, sizeof *out);
	opts_of(conf, region, &o);
	o.allow_remote = true; /* a read call starts nothing */
	o.timeout_ms = 10000;
	o.max_retries = 1;
	rc = arm_open(&o, &a, e);
	if (rc)
		return rc;
	snprintf(out->credentials, sizeof out->credentials, "%s",
		 arm_cred_source(a));
	snprintf(out->region, sizeof out->region, "%s", arm_location(a));
	snprintf(out->endpoint, sizeof out->endpoint, "%s", arm_endpoint(a));
	rc = arm_token(a, tok, sizeof tok, &out->expires_s, e);
	explicit_bzero(tok, sizeof tok);
	if (rc < 0 && rc != -EACCES && arm_cred_is_mi(a))
		rc = sr_err_set(e, -SR_ENOTFOUND, "no Azure credentials: set "
				"AZURE_TENANT_ID, AZURE_CLIENT_ID and "
				"AZURE_CLIENT_SECRET (or AZURE_CLIENT_CERTIFICATE_"
				"PATH), or run on an Azure VM with a managed "
				"identity (IMDS: %s)", e->msg);
	if (rc == 0) {
		rc = arm_vm_list(a, "", &v, &n, &err);
		if (rc)
			sr_err_set(e, rc, "signed call failed (%s): %s",
				   cloud_err_class_str(err.cls), err.msg);
		else
			snprintf(out->detail, sizeof out->detail, "resource group "
				 "readable");
	}
	cloud_instances_free(v, n);
	arm_close(a);
	return rc;
}

/* spotrun plan / gpus: the Retail Prices API's spot and pay-as-you-go
 * prices of the catalog's sizes, per region of ask (or `region`).  The
 * feed is public, but a provider nobody configured (no subscription in
 * the configuration or AZURE_SUBSCRIPTION_ID) answers -SR_ENOTFOUND: the
 * catalog then, without a network call. */
static int az_live_prices(const struct cloud_conf *conf,
			  const struct cloud_conf_region *region,
			  const struct cloud_price_ask *ask, size_t nask,
			  struct cloud_price_quote **out, size_t *n,
			  char *feed, size_t feedcap, struct sr_err *e)
{
	const char *base = conf ? cloud_conf_get(conf, region, NULL,
						 "prices_endpoint") : NULL;
	const char *sub = conf ? cloud_conf_get(conf, region, NULL,
						"subscription") : NULL;
	const char **skus = calloc(nask + 1, sizeof *skus);
	struct cloud_price_quote *q = calloc(nask + 1, sizeof *q);
	size_t nq = 0;
	int rc = 0;

	*out = NULL;
	*n = 0;
	if (!skus || !q) {
		rc = sr_err_set(e, -ENOMEM, "out of memory");
		goto out;
	}
	if (!sub && !getenv("AZURE_SUBSCRIPTION_ID")) {
		rc = sr_err_set(e, -SR_ENOTFOUND, "azure not configured: set "
				"AZURE_SUBSCRIPTION_ID or providers.azure."
				"subscription");
		goto out;
	}
	snprintf(feed, feedcap, "Azure Retail Prices API %s",
		 base ? base : AZPRICES_DEFAULT_URL);
	/* one fetch per region of ask (the first row of each region) */
	for (size_t i = 0; i < nask && rc == 0; i++) {
		const char *reg = ask[i].region;
		struct azprice *v = NULL;
		size_t ns = 0, nv = 0;
		bool seen = false;

		if (region && strcmp(reg, region->name))
			continue;
		for (size_t k = 0; k < i; k++)
			seen |= strcmp(ask[k].region, reg) == 0;
		if (seen)
			continue;
		for (size_t k = i; k < nask; k++) {
			bool have = false;

			if (strcmp(ask[k].region, reg))
				continue;
			for (size_t j = 0; j < ns; j++)
				have |= strcmp(skus[j], ask[k].instance_type) == 0;
			if (!have)
				skus[ns++] = ask[k].instance_type;
		}
		rc = azprices_fetch(base, reg, skus, ns, &v, &nv, e);
		for (size_t k = 0; rc == 0 && k < nv && nq < nask; k++) {
			struct cloud_price_quote *x = &q[nq++];

			memset(x, 0, sizeof *x);
			snprintf(x->region, sizeof x->region, "%s", reg);
			snprintf(x->instance_type, sizeof x->instance_type, "%s",
				 v[k].sku);
			x->spot_per_h = v[k].spot_per_h;
			x->ondemand_per_h = v[k].ondemand_per_h;
		}
		free(v);
	}
out:
	free(skus);
	if (rc) {
		free(q);
		return rc;
	}
	*out = q;
	*n = nq;
	return 0;
}

static const char *const az_keys[] = {
	"subscription", "resource_group", "image", "subnet", "ssh_key",
	"admin_user", "public_ip", "endpoint", "login_endpoint", "imds",
	"prices_endpoint", NULL
};

const struct cloud_prov_def prov_azure = {
	.name = "azure",
	.summary = "Azure spot VMs through ARM (Entra client credentials or a "
		   "managed identity; AZURE_SUBSCRIPTION_ID)",
	.caps = CLOUD_CAP_SPOT | CLOUD_CAP_TAGS,
	.regional = true,
	.conf_keys = az_keys,
	.notice_source = "scheduled-events",
	.notice_ack = true,
	.open = az_open,
	.check = az_check,
	.live_prices = az_live_prices,
};
