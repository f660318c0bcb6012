/*
 * local.c - the `local` provider: a simulated multi-cloud spot market on
 * this machine, behind the provider contract (cloud/provider.h) like any
 * cloud.
 *
 * Market view (cloud/market.h).  Offerings, spot prices and spot
 * availability replay real traces (cloud/localmkt.h) on the cloud clock
 * the daemon lends it (cloud_host.sim_s: accelerated by --time-scale,
 * which only this provider reads).  Price history: the trace's prices.
 * It sells every pool of the catalog (CLOUD_CAP_FALLBACK): a pool a real
 * provider sells goes there first.
 *
 * Compute: local_drv.c (a node is a spotrun-agent process here).
 *
 * Bootstrap: a JSON startup document {"api", "node", "bootstrap"} (the
 * node's one-time bootstrap secret, lib/ctl/nodeboot.h), like a GCE
 * instance's startup metadata.
 *
 * Notice: the cloud schedules an interruption notice_ms ahead (its one
 * setting of that kind: providers.local.notice_ms, --notice-ms) and
 * tells the node through an AWS-style IMDSv2 the daemon serves for it
 * (CLOUD_CAP_HOSTED_META, local__metadata); the agent's source is "imds".
 * No acknowledgement.
 *
 * Driven by hand (`spotrun cloud preempt|outage`): ops.preempt gives one
 * node its notice (local_drv.c), ops.outage takes a pool's spot capacity
 * away for a while (local_outage.c).
 *
 * Credentials: none.
 *
 * Configuration keys: notice_ms (real ms, >= 1; default: the daemon's
 * --notice-ms, 5000).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/fsutil.h"
#include "common/log.h"
#include "providers/local/local_int.h"

#define NOTICE_MS_DEFAULT 5000

/* ---- market view --------------------------------------------------------- */

/* Price source, and no spot capacity in a pool out by hand. */
static void lm_mark(struct local_prov *l, struct cloud_offering *o, double now)
{
	o->price_src = o->trace[0] ? CLOUD_PRICE_TRACE : CLOUD_PRICE_CATALOG;
	o->price_age_s = 0;
	if (o->spot_available)
		o->spot_available = local__available(l, o->pool, now);
}

static int lm_offerings(void *st, const struct cloud_query *q,
			struct cloud_offering **out, size_t *n, struct sr_err *e)
{
	struct local_prov *l = st;
	double now = local__sim(l);
	int rc = localmkt_offerings(l->m, q, now, out, n, e);

	for (size_t i = 0; !rc && i < *n; i++)
		lm_mark(l, &(*out)[i], now);
	return rc;
}

static int lm_describe(void *st, int pool, struct cloud_offering *out)
{
	struct local_prov *l = st;
	double now = local__sim(l);
	int rc = localmkt_describe(l->m, pool, now, out);

	if (!rc)
		lm_mark(l, out, now);
	return rc;
}

static int lm_history(void *st, int pool, double step_s, int n, double *usd_h)
{
	struct local_prov *l = st;
	double now = local__sim(l);
	int known = 0;

	for (int i = 0; i < n; i++) {
		struct cloud_offering o;
		double at = now - (double)(n - i) * step_s;

		usd_h[i] = -1;
		if (at < 0 || localmkt_describe(l->m, pool, at, &o) ||
		    o.spot_per_h < 0)
			continue;
		usd_h[i] = sr_money_to_usd(o.spot_per_h);
		known++;
	}
	return known;
}

/* The provider's state is released by its own destroy (below). */
static void lm_destroy(void *st)
{
	(void)st;
}

static const struct cloud_market_ops lm_ops = {
	.name = "local",
	.offerings = lm_offerings,
	.describe = lm_describe,
	.price_history = lm_history,
	.destroy = lm_destroy,
};

/* ---- bootstrap, provider ---------------------------------------------------- */

static int local_bootstrap(void *st, const struct cloud_boot *b, char **out,
			   struct sr_err *e)
{
	json_t *o = json_pack("{s:s,s:I,s:s}", "api", b->api_url, "node",
			      (json_int_t)b->node_id, "bootstrap", b->bootstrap);

	(void)st;
	*out = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	return *out ? 0 : sr_err_set(e, -ENOMEM, "out of memory");
}

static void local_destroy(void *st)
{
	struct local_prov *l = st;

	if (!l)
		return;
	local__outage_free(l);
	localmkt_free(l->m);
	if (l->mu_init)
		pthread_mutex_destroy(&l->mu);
	free(l);
}

static const struct cloud_provider_ops local_ops = {
	.bootstrap = local_bootstrap,
	.metadata = local__metadata,
	.preempt = local__preempt,
	.outage = local__outage_set,
	.destroy = local_destroy,
};

/* A count of milliseconds >= 1. */
static int parse_ms(const char *s, int64_t *out)
{
	char *end = NULL;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || end == s || *end || v < 1)
		return -EINVAL;
	*out = v;
	return 0;
}

static int local_open(const struct cloud_host *h, const struct cloud_conf *conf,
		      const struct cloud_conf_region *region,
		      struct cloud_provider *out, struct sr_err *e)
{
	struct local_prov *l = calloc(1, sizeof *l);
	const char *v = conf ? cloud_conf_get(conf, NULL, NULL, "notice_ms") : NULL;
	int rc;

	(void)region;
	memset(out, 0, sizeof *out);
	if (!l)
		return sr_err_set(e, -ENOMEM, "out of memory");
	l->h = h;
	l->notice_ms = h->notice_ms > 0 ? h->notice_ms : NOTICE_MS_DEFAULT;
	if (v && parse_ms(v, &l->notice_ms)) {
		rc = sr_err_set(e, -EINVAL, "providers.local.notice_ms: '%s' is "
				"not a count of milliseconds >= 1", v);
		goto fail;
	}
	/* the cloud's records, and the folders a test drops a file into to
	 * interrupt a node or recommend moving off it (local_drv.c; a user
	 * runs `spotrun cloud preempt`): there from the start */
	for (int i = 0; i < 3; i++) {
		static const char *const sub[] = { "localcloud", "interrupts",
						   "rebalance" };
		char p[sizeof l->dir];

		snprintf(p, sizeof p, "%s/%s", h->state_dir, sub[i]);
		rc = sr_fs_mkdir_p(p, 0700);
		if (rc) {
			sr_err_set(e, rc, "%s: %s", p, sr_strerror(rc));
			goto fail;
		}
	}
	snprintf(l->dir, sizeof l->dir, "%s/localcloud", h->state_dir);
	rc = localmkt_load(h->data_dir, &l->m, e);
	if (!rc)
		rc = local__outage_load(l, e);
	if (rc)
		goto fail;
	pthread_mutex_init(&l->mu, NULL);
	l->mu_init = true;
	local__catch_up(l);
	sr_info("local", "market loaded", "data=%s pools=%zu notice_ms=%" PRId64,
		h->data_dir, localmkt_npools(l->m), l->notice_ms);
	out->mkt = (struct cloud_market){ &lm_ops, l };
	out->drv = (struct cloud_driver){ &local__drv_ops, l };
	out->ops = &local_ops;
	out->st = l;
	return 0;
fail:
	local_destroy(l);
	return rc;
}

static int local_check(const struct cloud_conf *conf,
		       const struct cloud_conf_region *region,
		       struct cloud_check *out, struct sr_err *e)
{
	(void)conf;
	(void)region;
	(void)e;
	memset(out, 0, sizeof *out);
	out->cred = CLOUD_CRED_NONE;
	snprintf(out->detail, sizeof out->detail,
		 "the built-in local spot cloud (trace replay)");
	return 0;
}

static const char *const local_keys[] = { "notice_ms", NULL };

const struct cloud_prov_def prov_local = {
	.name = "local",
	.summary = "the built-in spot cloud: agents on this machine, markets "
		   "replayed from traces",
	.caps = CLOUD_CAP_SPOT | CLOUD_CAP_TAGS | CLOUD_CAP_SHARED_DISK |
		CLOUD_CAP_FALLBACK | CLOUD_CAP_KNOWN_BOOT | CLOUD_CAP_HOSTED_META,
	.regional = false,
	.conf_keys = local_keys,
	.notice_source = "imds",
	.notice_ack = false,
	.open = local_open,
	.check = local_check,
};
