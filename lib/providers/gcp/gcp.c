/*
 * gcp.c - the `gcp` provider: the provider contract (cloud/provider.h)
 * over Compute Engine (lib/gcp/gce.h), one open provider per configured
 * region.
 *
 * Market view: the catalog's GCP offerings in the region (the same pool
 * numbers as the local market's), at the catalog's prices; spot
 * availability is an estimate ("a spot price is listed"), corrected by
 * what launches answer (ZONE_RESOURCE_POOL_EXHAUSTED marks the pool).
 *
 * Compute driver: provision() starts one worker thread per launch
 * (cloud/asynclaunch.h) that inserts the VM (SPOT or STANDARD scheduling, the accelerators an N1
 * machine needs attached, the CLOUD_TAG_* tags as labels, the bootstrap
 * script as its startup-script, requestId from the idempotency key),
 * waits for the zone operation and reads the instance back; list() is
 * an aggregated list by the cluster's label, terminate() deletes.
 * Instance ids are "zone/name".
 *
 * Bootstrap: the EC2 bootstrap script (one script for both clouds: it
 * makes the spotrun user and starts the agent) with `--notice gce`: the
 * agent holds a hanging GET on the metadata server's instance/preempted
 * and instance/maintenance-event (lib/agent/gcemeta.h).  The one-time
 * bootstrap secret is the only secret in it (the startup-script is
 * readable by anyone with compute.instances.get on the project: the
 * secret is worthless once the agent used it, within seconds of boot).
 *
 * Notices: GCE tells the instance only; the agent reports it; list()
 * never reports one.  No acknowledgement.
 *
 * Configuration keys (docs/providers.md): project, image, network,
 * subnetwork, service_account (provider, region or zone), endpoint.
 *
 * Fencing: inserts and deletes carry the lease epoch they were asked
 * under and are checked with the host's fence_ok just before they leave.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "aws/ec2.h"
#include "cloud/asynclaunch.h"
#include "cloud/localmkt.h"
#include "cloud/provider.h"
#include "common/log.h"
#include "gcp/gce.h"
#include "providers/gcp/gcp_int.h"

struct gcpp {
	const struct cloud_host *h;          /* borrowed */
	const struct cloud_conf *conf;       /* borrowed; NULL: none */
	const struct cloud_conf_region *reg; /* borrowed; NULL: none */
	struct localmkt *m;                  /* the catalog's pools */
	struct gce *gce;
	char region[40];
	struct localmkt_place place;         /* gcp pools of region */
};

static int gcp_offerings(void *st, const struct cloud_query *q,
			 struct cloud_offering **out, size_t *n, struct sr_err *e)
{
	struct gcpp *g = st;

	return localmkt_offerings_at(g->m, &g->place, q, out, n, e);
}

static int gcp_describe(void *st, int pool, struct cloud_offering *out)
{
	struct gcpp *g = st;

	return localmkt_describe_at(g->m, &g->place, pool, out);
}

/* The provider's state is released by its own destroy (gcp_destroy). */
static void gcp_nop(void *st)
{
	(void)st;
}

static const struct cloud_market_ops gcp_mkt_ops = {
	.name = "gcp",
	.offerings = gcp_offerings,
	.describe = gcp_describe,
	/* no .price_history: GCE publishes no spot price history */
	.destroy = gcp_nop,
};

/* ---- compute ---------------------------------------------------------- */

static const char *setting(const struct gcpp *g, const char *zone,
			   const char *key)
{
	return g->conf ? cloud_conf_get(g->conf, g->reg, zone, key) : NULL;
}

/* The launch's worker (cloud/asynclaunch.h): the insert, its operation
 * waited on, the instance read back. */
static int launch(void *ud, const struct cloud_launch *l,
		  struct cloud_instance *out, struct cloud_error *err)
{
	struct gcpp *g = ud;
	struct cloud_offering o;
	const char *accel = NULL;
	struct gce_insert in;
	int rc;

	if (!l->zone)
		return cloud_err_set(err, CLOUD_EINVALID, NULL, "gcp provision: "
				     "a zone is required");
	/* N1 machines take their GPUs as guest accelerators; A2/A3/G2 have
	 * theirs built in */
	if (strncmp(l->instance_type, "n1-", 3) == 0 &&
	    localmkt_describe(g->m, l->pool, 0, &o) == 0 && o.accel_count > 0)
		accel = gcp__accel_type(o.accelerator);
	in = (struct gce_insert){
		.zone = l->zone, .machine_type = l->instance_type,
		.spot = l->spot, .accelerator = accel,
		.accel_count = accel ? (int)o.accel_count : 0,
		.image = l->image ? l->image : setting(g, l->zone, "image"),
		.network = setting(g, l->zone, "network"),
		.subnetwork = l->subnet ? l->subnet
			      : setting(g, l->zone, "subnetwork"),
		.service_account = setting(g, l->zone, "service_account"),
		.tags = l->tags, .startup_script = l->bootstrap,
		.idem_key = l->idem_key, .epoch = l->epoch,
	};
	rc = gce_insert_wait(g->gce, &in, out, err);
	if (rc == 0) /* labels hold the cluster lower-cased: ours */
		snprintf(out->cluster, sizeof out->cluster, "%s", l->tags.cluster);
	return rc;
}

static int gcp_provision(void *st, const struct cloud_launch *l,
			 struct cloud_req **req, struct cloud_error *err)
{
	struct gcpp *g = st;
	struct cloud_launch x = *l;

	x.epoch = g->h->lease_epoch ? g->h->lease_epoch(g->h->ud) : 0;
	return cloud_async_start("gcp provision", launch, g, &x, req, err);
}

static int gcp_terminate(void *st, const char *const *ids, size_t n,
			 struct cloud_error *err)
{
	struct gcpp *g = st;
	int64_t epoch = g->h->lease_epoch ? g->h->lease_epoch(g->h->ud) : 0;
	int rc = 0;

	for (size_t i = 0; i < n; i++) {
		struct cloud_error e1 = { 0 };
		int r1 = gce_delete(g->gce, ids[i], epoch, &e1);

		if (r1 && !rc) {
			rc = r1;
			*err = e1;
		}
	}
	return rc;
}

static int gcp_list(void *st, const char *cluster, struct cloud_instance **out,
		    size_t *n, struct cloud_error *err)
{
	struct gcpp *g = st;
	char want[64];
	int rc = gce_list(g->gce, cluster, out, n, err);

	if (rc)
		return rc;
	/* the label holds the cluster as a label value: give back ours */
	gce_label_value(cluster, want, sizeof want);
	for (size_t i = 0; i < *n; i++) {
		if (strcmp((*out)[i].cluster, want) == 0)
			snprintf((*out)[i].cluster, sizeof (*out)[i].cluster,
				 "%s", cluster);
	}
	return 0;
}

static const struct cloud_driver_ops gcp_drv_ops = {
	.name = "gcp",
	.provision = gcp_provision,
	.poll = cloud_async_poll,
	.req_free = cloud_async_free,
	.terminate = gcp_terminate,
	.list = gcp_list,
	.destroy = gcp_nop,
};

/* ---- bootstrap, credentials, provider ---------------------------------- */

static int gcp_bootstrap(void *st, const struct cloud_boot *b, char **out,
			 struct sr_err *e)
{
	struct gcpp *g = st;
	const char *priv[] = { g->h->agent_given ? g->h->state_dir : NULL, NULL };

	return ec2_bootstrap_script_notice(g->h->agent_given ? g->h->agent_path
					   : NULL, b->api_url, b->node_id,
					   b->bootstrap, priv, "gce", out, e);
}

static void gcp_destroy(void *st)
{
	struct gcpp *g = st;

	if (!g)
		return;
	gce_close(g->gce);
	localmkt_free(g->m);
	free(g);
}

static int gcp_cred_check(void *st, int64_t *expires_s, struct sr_err *e)
{
	struct gcpp *g = st;
	char tok[GCPCRED_TOKEN_MAX];
	int rc = gcpcred_token(gce_creds(g->gce), tok, sizeof tok, expires_s, e);

	memset(tok, 0, sizeof tok);
	return rc;
}

static int gcp_cred_refresh(void *st, struct sr_err *e)
{
	return gcp_cred_check(st, NULL, e);
}

static const struct cloud_provider_ops gcp_ops = {
	.bootstrap = gcp_bootstrap,
	.cred_check = gcp_cred_check,
	.cred_refresh = gcp_cred_refresh,
	.destroy = gcp_destroy,
};

int gcp__open_client(const struct cloud_conf *conf,
		     const struct cloud_conf_region *r, long timeout_ms,
		     struct gce **out, char *region, size_t rcap,
		     struct sr_err *e)
{
	struct gce_opts o = { .timeout_ms = timeout_ms };
	const char *reg = r ? r->name : getenv("CLOUDSDK_COMPUTE_REGION");

	if (!reg || !*reg)
		return sr_err_set(e, -SR_ENOTFOUND, "gcp region: none set: add "
				  "providers.gcp.regions to the configuration, "
				  "or export CLOUDSDK_COMPUTE_REGION");
	snprintf(region, rcap, "%s", reg);
	if (conf) {
		o.project = cloud_conf_get(conf, r, NULL, "project");
		o.endpoint = cloud_conf_get(conf, r, NULL, "endpoint");
	}
	return gce_open(&o, out, e);
}

static bool fence_ok(void *ud, int64_t epoch)
{
	struct gcpp *g = ud;

	return !g->h->fence_ok || g->h->fence_ok(g->h->ud, epoch);
}

static int gcp_open(const struct cloud_host *h, const struct cloud_conf *conf,
		    const struct cloud_conf_region *region,
		    struct cloud_provider *out, struct sr_err *e)
{
	struct gcpp *g = calloc(1, sizeof *g);
	int rc;

	memset(out, 0, sizeof *out);
	if (!g)
		return sr_err_set(e, -ENOMEM, "out of memory");
	g->h = h;
	g->conf = conf;
	g->reg = region;
	rc = localmkt_load(h->data_dir, &g->m, e);
	if (rc)
		goto fail;
	rc = gcp__open_client(conf, region, 0, &g->gce, g->region,
			      sizeof g->region, e);
	if (rc)
		goto fail;
	gce_set_fence(g->gce, fence_ok, g);
	/* the catalog's prices; spot capacity estimated as "listed" */
	g->place = (struct localmkt_place){ .cloud = "gcp", .region = g->region };
	sr_info("gcp", "provider ready", "region=%s project=%s endpoint=%s "
		"cluster=%s credentials=\"%s\"", g->region, gce_project(g->gce),
		gce_endpoint(g->gce), h->cluster, gcpcred_source(gce_creds(g->gce)));
	out->mkt = (struct cloud_market){ &gcp_mkt_ops, g };
	out->drv = (struct cloud_driver){ &gcp_drv_ops, g };
	out->ops = &gcp_ops;
	out->st = g;
	snprintf(out->region, sizeof out->region, "%s", g->region);
	return 0;
fail:
	gcp_destroy(g);
	return rc;
}

static const char *const gcp_keys[] = {
	"project", "image", "network", "subnetwork", "service_account",
	"endpoint", "billing_endpoint", NULL
};

const struct cloud_prov_def prov_gcp = {
	.name = "gcp",
	.summary = "Google Compute Engine (application default credentials, "
		   "as gcloud and the client libraries find them)",
	.caps = CLOUD_CAP_SPOT | CLOUD_CAP_TAGS,
	.regional = true,
	.conf_keys = gcp_keys,
	.notice_source = "gce",
	.notice_ack = false,
	.open = gcp_open,
	.check = gcp__check,
	.live_prices = gcp__live_prices,
};
