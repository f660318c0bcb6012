/*
 * prov_aws.c - the `aws` provider: the reconciler's provider interface
 * (provider.h) over the EC2 compute driver (cloud/compute.h, lib/aws).
 *
 * Market view.  Pools are the catalog's AWS offerings in the driver's
 * region (the same pool numbers as the local market's, so a pool id in
 * the database means one thing).  What a real cloud can tell is all the
 * policy sees: list prices from the catalog, the spot price now from
 * DescribeSpotPriceHistory (refreshed at most once a minute on the
 * reconciler thread; the catalog's spot price until then), and spot
 * capacity as an *estimate* - "available" - corrected by what launches
 * answer (a capacity error marks the pool, ctl__pool_mark).  EC2 does
 * not expose past or present capacity, so nothing here replays a trace.
 *
 * Compute.  A node is one instance tagged with the cluster id (a random
 * id kept in the database settings), job, node and attempt 1.  Its
 * identity is the spotrun:node tag, so nothing else is stored with the
 * node: terminate and list find instances by tag.  Launch:
 * RunInstances with ClientToken = cloud_idem_key(cluster, node, 1) and
 * the bootstrap script (ec2_bootstrap_script: the agent, its token
 * through user-data, the control plane's URL) - a retry after a crash
 * gets the instance already started, never a second one.  The launch
 * runs on the driver's worker thread: provision() starts it and answers
 * -EINPROGRESS (the node stays REQUESTED), the driver wakes the
 * reconciler when RunInstances answers, and the next provision() of the
 * node commits the instance.  An instance EC2 still boots ("pending") is
 * reported as such, so no boot timeout runs on the cloud's slowness.
 *
 * Notices: EC2 tells the instance (IMDSv2 spot/instance-action), whose
 * agent reports it to the API; list() therefore never reports `reclaim`.
 * An instance EC2 no longer runs is reported gone.
 *
 * Leaks: every list() (each node pass) terminates the instances tagged
 * with this cluster whose node the database does not hold live (a crash
 * between RunInstances and the commit, a lost terminate).
 *
 * Threading: offerings/describe may be called from HTTP threads; the
 * price cache is under a mutex.  Everything else runs on the reconciler
 * thread.
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
#include "ctl/localmkt.h"

#define PRICE_REFRESH_NS (60 * SR_NS_PER_SEC)

struct price {
	char zone[40], itype[48];
	sr_micros per_h;
};

#define AWS_MAX_INFLIGHT 64

struct inflight {
	int64_t node;
	struct cloud_req *req;       /* the driver's; req_free'd on drop */
};

struct awsp {
	struct ctl *c;
	struct localmkt *m;          /* the catalog's pools */
	struct ec2 *ec2;             /* borrowed from drv (which owns it) */
	struct cloud_driver drv;
	char region[40];
	char cluster[32];
	char agent[4200];            /* agent path on the image; "" default */
	pthread_mutex_t mu;          /* guards prices */
	struct price *prices;
	size_t nprices;
	int64_t priced_ns;           /* monotonic; 0 never */
	struct inflight fly[AWS_MAX_INFLIGHT]; /* reconciler thread only */
	size_t nfly;
};

static bool ours(const struct awsp *a, const struct prov_offering *o)
{
	return strcmp(o->cloud, "aws") == 0 && strcmp(o->region, a->region) == 0;
}

/* The catalog's offering with the live spot price when one is known, and
 * spot capacity as an estimate. */
static void view(struct awsp *a, struct prov_offering *o)
{
	pthread_mutex_lock(&a->mu);
	for (size_t i = 0; i < a->nprices; i++) {
		if (strcmp(a->prices[i].zone, o->zone) == 0 &&
		    strcmp(a->prices[i].itype, o->instance_type) == 0) {
			o->spot_per_h = a->prices[i].per_h;
			break;
		}
	}
	pthread_mutex_unlock(&a->mu);
	o->spot_available = o->spot_per_h >= 0;
	o->trace[0] = '\0';
}

static int aws_offerings(void *st, const struct prov_query *q, double sim_s,
			 struct prov_offering **out, size_t *n, struct sr_err *e)
{
	struct awsp *a = st;
	size_t k = 0;
	int rc = localmkt_offerings(a->m, q, sim_s, out, n, e);

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

static int aws_describe(void *st, int pool, double sim_s,
			struct prov_offering *out)
{
	struct awsp *a = st;
	int rc = localmkt_describe(a->m, pool, sim_s, out);

	if (rc)
		return rc;
	if (!ours(a, out))
		return -SR_ENOTFOUND;
	view(a, out);
	return 0;
}

/* Spot prices now of every instance type of our pools (one
 * DescribeSpotPriceHistory per type, last hour). */
static void prices_refresh(struct awsp *a)
{
	int64_t mono = sr_time_mono_ns();
	struct price *v = NULL;
	size_t nv = 0, cap = 0, np = localmkt_npools(a->m);
	char done[64][48];
	size_t ndone = 0;

	if (a->priced_ns && mono - a->priced_ns < PRICE_REFRESH_NS)
		return;
	a->priced_ns = mono;
	for (size_t p = 0; p < np && ndone < 64; p++) {
		struct prov_offering o;
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
	pthread_mutex_unlock(&a->mu);
}

/* Map a driver error onto the reconciler's codes: capacity -ENOSPC
 * (marks the pool), the rest keep compute.h's codes. */
static int launch_error(const struct cloud_error *ce, int rc, struct sr_err *e)
{
	return sr_err_set(e, ce->cls == CLOUD_ECAPACITY ? -ENOSPC : rc,
			  "%s (%s)", ce->msg, cloud_err_class_str(ce->cls));
}

static int aws_terminate_ids(struct awsp *a, const char *const *ids, size_t n)
{
	struct cloud_error err = { 0 };
	int rc;

	if (n == 0)
		return 0;
	rc = a->drv.ops->terminate(a->drv.st, ids, n, &err);
	if (rc)
		sr_warn("aws", "terminate failed", "n=%zu err=\"%s\"", n, err.msg);
	return rc;
}

/* A launch in flight: the driver's request for node `node`. */
static struct inflight *inflight_of(struct awsp *a, int64_t node)
{
	for (size_t i = 0; i < a->nfly; i++) {
		if (a->fly[i].node == node)
			return &a->fly[i];
	}
	return NULL;
}

static void inflight_drop(struct awsp *a, struct inflight *f)
{
	a->drv.ops->req_free(a->drv.st, f->req); /* waits for its worker */
	*f = a->fly[--a->nfly];
}

static void launch_done(void *ud)
{
	ctl__wake(ud); /* the reconciler polls the request at once */
}

/* Start the launch of node n on the driver's worker thread. */
static int launch_start(struct awsp *a, const struct prov_node *n,
			struct sr_err *e)
{
	struct prov_offering o;
	struct cloud_launch l = { 0 };
	struct cloud_req *req = NULL;
	struct cloud_error err = { 0 };
	char key[CLOUD_IDEM_MAX], *boot = NULL;
	int rc;

	if (a->nfly == AWS_MAX_INFLIGHT)
		return -EINPROGRESS; /* as many in flight as we allow: later */
	rc = aws_describe(a, n->pool, 0, &o);
	if (rc)
		return sr_err_set(e, rc, "pool %d: not an AWS %s offering", n->pool,
				  a->region);
	l.tags = (struct cloud_tags){ a->cluster, n->job_id, n->id, 1 };
	cloud_idem_key(&l.tags, key);
	/* c->url is set once the HTTP server listens (before any pass) */
	rc = ec2_bootstrap_script(a->agent[0] ? a->agent : NULL, a->c->url,
				  n->id, n->token, &boot, e);
	if (rc)
		return rc;
	l.idem_key = key;
	l.zone = o.zone;
	l.instance_type = o.instance_type;
	l.spot = n->spot;
	l.bootstrap = boot;
	l.done = launch_done;
	l.done_ud = a->c;
	rc = a->drv.ops->provision(a->drv.st, &l, &req, &err);
	explicit_bzero(boot, strlen(boot));
	free(boot);
	if (rc)
		return launch_error(&err, rc, e);
	a->fly[a->nfly++] = (struct inflight){ n->id, req };
	return -EINPROGRESS;
}

/* First call: RunInstances starts on the driver's thread (-EINPROGRESS).
 * Later calls poll it; once the instance is known it is committed. */
static int aws_provision(void *st, struct prov_node *n,
			 int (*commit)(void *ud, const struct prov_node *n),
			 void *ud, struct sr_err *e)
{
	struct awsp *a = st;
	struct inflight *f = inflight_of(a, n->id);
	struct cloud_instance inst = { 0 };
	struct cloud_error err = { 0 };
	int rc;

	if (!f)
		return launch_start(a, n, e);
	rc = a->drv.ops->poll(a->drv.st, f->req, &inst, &err);
	if (rc == -EAGAIN)
		return -EINPROGRESS;
	inflight_drop(a, f);
	if (rc) {
		cloud_instance_clear(&inst);
		return launch_error(&err, rc, e);
	}
	n->pid = 0;
	n->pid_start = 0;
	sr_info("aws", "instance launched", "node=%" PRId64 " instance=%s zone=%s"
		" type=%s spot=%d", n->id, inst.id, inst.zone, inst.instance_type,
		n->spot);
	rc = commit(ud, n);
	if (rc) {
		const char *id = inst.id;

		/* not recorded: it must not run */
		aws_terminate_ids(a, &id, 1);
		sr_err_set(e, rc, "node %" PRId64 ": instance %s not recorded;"
			   " terminated", n->id, inst.id);
	}
	cloud_instance_clear(&inst);
	return rc;
}

static bool running(const struct cloud_instance *x)
{
	return x->state == CLOUD_INST_PENDING || x->state == CLOUD_INST_RUNNING;
}

static int aws_terminate(void *st, const struct prov_node *n)
{
	struct awsp *a = st;
	struct inflight *f = inflight_of(a, n->id);
	struct cloud_instance *v = NULL;
	struct cloud_error err = { 0 };
	const char *ids[16];
	size_t nv = 0, k = 0;
	int rc;

	if (f)
		inflight_drop(a, f); /* its instance, if any, is listed below */
	rc = a->drv.ops->list(a->drv.st, a->cluster, &v, &nv, &err);
	if (rc) {
		sr_warn("aws", "cannot list instances", "err=\"%s\"", err.msg);
		return rc;
	}
	for (size_t i = 0; i < nv && k < 16; i++) {
		if (v[i].node_id == n->id && running(&v[i]))
			ids[k++] = v[i].id;
	}
	rc = aws_terminate_ids(a, ids, k);
	cloud_instances_free(v, nv);
	return rc;
}

static int aws_list(void *st, const struct prov_node *nodes, size_t n,
		    double sim_s, struct prov_obs *obs)
{
	struct awsp *a = st;
	struct cloud_instance *v = NULL;
	struct cloud_error err = { 0 };
	const char *leak[64];
	size_t nv = 0, nleak = 0;
	int rc;

	(void)sim_s;
	prices_refresh(a);
	rc = a->drv.ops->list(a->drv.st, a->cluster, &v, &nv, &err);
	if (rc) {
		sr_warn("aws", "cannot list instances", "err=\"%s\"", err.msg);
		return rc;
	}
	for (size_t i = 0; i < n; i++) {
		obs[i].alive = obs[i].pending = false;
		obs[i].reclaim = false; /* EC2 tells the instance, not us */
		for (size_t j = 0; j < nv; j++) {
			if (v[j].node_id != nodes[i].id || !running(&v[j]))
				continue;
			obs[i].alive = true;
			obs[i].pending = v[j].state == CLOUD_INST_PENDING;
		}
	}
	/* instances of this cluster whose node is not live here: leaked */
	for (size_t j = 0; j < nv && nleak < 64; j++) {
		bool known = false;

		if (!running(&v[j]))
			continue;
		for (size_t i = 0; i < n && !known; i++)
			known = v[j].node_id == nodes[i].id;
		known |= inflight_of(a, v[j].node_id) != NULL;
		if (!known) {
			sr_warn("aws", "leaked instance: terminating", "instance=%s"
				" node=%" PRId64 " job=%" PRId64, v[j].id,
				v[j].node_id, v[j].job_id);
			leak[nleak++] = v[j].id;
		}
	}
	aws_terminate_ids(a, leak, nleak);
	cloud_instances_free(v, nv);
	return 0;
}

static void aws_destroy(void *st)
{
	struct awsp *a = st;

	if (!a)
		return;
	while (a->nfly)
		inflight_drop(a, &a->fly[0]);
	if (a->drv.ops)
		a->drv.ops->destroy(a->drv.st);
	localmkt_free(a->m);
	free(a->prices);
	pthread_mutex_destroy(&a->mu);
	free(a);
}

static const struct prov_ops aws_ops = {
	.name = "aws",
	.destroy = aws_destroy,
	.offerings = aws_offerings,
	.describe = aws_describe,
	.provision = aws_provision,
	.terminate = aws_terminate,
	.list = aws_list,
};

/* This control plane's cluster id (the spotrun:cluster tag): made once,
 * kept in the settings. */
static int cluster_id(struct ctl *c, char *out, size_t cap, struct sr_err *e)
{
	struct store *db = ctl__store(c);
	char tok[CTL_TOKEN_HEX + 1];
	int rc;

	if (!db)
		return sr_err_set(e, -EIO, "%s: cannot open", c->db_path);
	rc = store_setting_get(db, "cluster_id", out, cap, e);
	if (rc == 0 && out[0])
		return 0;
	if (rc && rc != -SR_ENOTFOUND)
		return rc;
	rc = ctl_token_new(tok);
	if (rc)
		return sr_err_set(e, rc, "cluster id: no randomness");
	snprintf(out, cap, "sr%.12s", tok);
	return store_setting_set(db, "cluster_id", out, e);
}

int ctl__prov_aws_init(struct ctl *c, struct sr_err *e)
{
	struct awsp *a = calloc(1, sizeof *a);
	struct ec2_opts o = { 0 };
	struct ec2 *ec2 = NULL;
	int rc;

	if (!a)
		return sr_err_set(e, -ENOMEM, "out of memory");
	pthread_mutex_init(&a->mu, NULL);
	a->c = c;
	rc = cluster_id(c, a->cluster, sizeof a->cluster, e);
	if (!rc)
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
	/* the image's agent (ec2.h's default unless configured); the
	 * daemon's own --agent path when it was given (the emulator) */
	snprintf(a->agent, sizeof a->agent, "%s", c->cfg.agent_path ?
		 c->cfg.agent_path : "");
	rc = ec2_open(&o, &ec2, e);
	if (rc)
		goto fail;
	snprintf(a->region, sizeof a->region, "%s", ec2_region(ec2));
	a->ec2 = ec2;
	rc = ec2_driver_new(ec2, &a->drv, e); /* owns ec2, even on failure */
	if (rc)
		goto fail;
	sr_info("aws", "provider ready", "region=%s endpoint=%s cluster=%s "
		"credentials=\"%s\"", a->region, ec2_endpoint(ec2), a->cluster,
		ec2_cred_source(ec2));
	c->prov.ops = &aws_ops;
	c->prov.st = a;
	return 0;
fail:
	a->drv.ops = NULL;
	aws_destroy(a);
	return rc;
}
