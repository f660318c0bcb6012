/*
 * toy.c - the `toy` provider (toy.h): every operation of the contract,
 * as small as it can be.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "toy.h"

#define TOY_POOLS 2
#define TOY_MAX 64

struct cloud_req {
	int slot;
};

static struct {
	pthread_mutex_t mu;
	struct {
		char id[32];
		int64_t job, node;
		int attempt, pool;
		char cluster[64];
		char token[300];
		bool spot, gone;
	} inst[TOY_MAX];
	int n, provisions, terminations;
} toy = { .mu = PTHREAD_MUTEX_INITIALIZER };

/* ---- market ------------------------------------------------------------------ */

static void offering(int i, struct cloud_offering *o)
{
	memset(o, 0, sizeof *o);
	o->pool = CLOUD_POOL_OWN_BASE + i;
	snprintf(o->cloud, sizeof o->cloud, "toy");
	snprintf(o->region, sizeof o->region, "toy-1");
	snprintf(o->zone, sizeof o->zone, "toy-1%c", 'a' + i);
	snprintf(o->instance_type, sizeof o->instance_type, "toy.v100");
	snprintf(o->accelerator, sizeof o->accelerator, "V100");
	o->accel_count = 1;
	o->ondemand_per_h = 1000000;
	o->spot_per_h = 300000 + 10000 * i;
	o->reserved_per_h = -1;
	o->hazard_per_h = 0.01;
	o->spot_available = true;
	o->price_src = CLOUD_PRICE_LIVE;
}

static int t_offerings(void *st, const struct cloud_query *q,
		       struct cloud_offering **out, size_t *n, struct sr_err *e)
{
	(void)st;
	*n = 0;
	*out = calloc(TOY_POOLS, sizeof **out);
	if (!*out)
		return sr_err_set(e, -ENOMEM, "out of memory");
	for (int i = 0; i < TOY_POOLS; i++) {
		offering(i, &(*out)[*n]);
		if (q && q->accelerator && strcmp(q->accelerator, "V100"))
			continue;
		(*n)++;
	}
	return 0;
}

static int t_describe(void *st, int pool, struct cloud_offering *out)
{
	(void)st;
	if (pool < CLOUD_POOL_OWN_BASE || pool >= CLOUD_POOL_OWN_BASE + TOY_POOLS)
		return -SR_ENOTFOUND;
	offering(pool - CLOUD_POOL_OWN_BASE, out);
	return 0;
}

static void nop(void *st)
{
	(void)st;
}

static const struct cloud_market_ops t_mkt = {
	.name = "toy", .offerings = t_offerings, .describe = t_describe,
	.destroy = nop,
};

/* ---- compute ----------------------------------------------------------------- */

static void fill(int k, struct cloud_instance *x)
{
	memset(x, 0, sizeof *x);
	snprintf(x->id, sizeof x->id, "%s", toy.inst[k].id);
	x->state = toy.inst[k].gone ? CLOUD_INST_GONE : CLOUD_INST_RUNNING;
	snprintf(x->zone, sizeof x->zone, "toy-1%c", 'a' + toy.inst[k].pool -
		 CLOUD_POOL_OWN_BASE);
	snprintf(x->instance_type, sizeof x->instance_type, "toy.v100");
	x->spot = toy.inst[k].spot;
	snprintf(x->cluster, sizeof x->cluster, "%s", toy.inst[k].cluster);
	x->job_id = toy.inst[k].job;
	x->node_id = toy.inst[k].node;
	x->attempt = toy.inst[k].attempt;
}

static int t_provision(void *st, const struct cloud_launch *l,
		       struct cloud_req **req, struct cloud_error *err)
{
	struct cloud_req *q = calloc(1, sizeof *q);
	int k = -1;

	(void)st;
	*req = NULL;
	if (!q)
		return cloud_err_set(err, CLOUD_ETRANSIENT, NULL, "out of memory");
	pthread_mutex_lock(&toy.mu);
	toy.provisions++;
	for (int i = 0; i < toy.n; i++) { /* the same key, the same one */
		if (toy.inst[i].node == l->tags.node_id &&
		    toy.inst[i].attempt == l->tags.attempt)
			k = i;
	}
	if (k < 0 && toy.n < TOY_MAX) {
		k = toy.n++;
		snprintf(toy.inst[k].id, sizeof toy.inst[k].id, "toy-%d", k);
		toy.inst[k].job = l->tags.job_id;
		toy.inst[k].node = l->tags.node_id;
		toy.inst[k].attempt = l->tags.attempt;
		toy.inst[k].pool = l->pool;
		toy.inst[k].spot = l->spot;
		snprintf(toy.inst[k].cluster, sizeof toy.inst[k].cluster, "%s",
			 l->tags.cluster);
		snprintf(toy.inst[k].token, sizeof toy.inst[k].token, "%s",
			 l->bootstrap);
	}
	pthread_mutex_unlock(&toy.mu);
	if (k < 0) {
		free(q);
		return cloud_err_set(err, CLOUD_EQUOTA, "toy.full", "toy: full");
	}
	q->slot = k;
	*req = q;
	return 0;
}

static int t_poll(void *st, struct cloud_req *req, struct cloud_instance *out,
		  struct cloud_error *err)
{
	(void)st;
	(void)err;
	pthread_mutex_lock(&toy.mu);
	fill(req->slot, out);
	pthread_mutex_unlock(&toy.mu);
	return 0;
}

static void t_req_free(void *st, struct cloud_req *req)
{
	(void)st;
	free(req);
}

static int t_terminate(void *st, const char *const *ids, size_t n,
		       struct cloud_error *err)
{
	(void)st;
	(void)err;
	pthread_mutex_lock(&toy.mu);
	toy.terminations++;
	for (size_t i = 0; i < n; i++) {
		for (int k = 0; k < toy.n; k++) {
			if (!strcmp(toy.inst[k].id, ids[i]))
				toy.inst[k].gone = true;
		}
	}
	pthread_mutex_unlock(&toy.mu);
	return 0;
}

static int t_list(void *st, const char *cluster, struct cloud_instance **out,
		  size_t *n, struct cloud_error *err)
{
	(void)st;
	*n = 0;
	pthread_mutex_lock(&toy.mu);
	*out = calloc((size_t)toy.n + 1, sizeof **out);
	for (int k = 0; *out && k < toy.n; k++) {
		if (!strcmp(toy.inst[k].cluster, cluster))
			fill(k, &(*out)[(*n)++]);
	}
	pthread_mutex_unlock(&toy.mu);
	return *out ? 0 : cloud_err_set(err, CLOUD_ETRANSIENT, NULL, "oom");
}

static const struct cloud_driver_ops t_drv = {
	.name = "toy", .provision = t_provision, .poll = t_poll,
	.req_free = t_req_free, .terminate = t_terminate, .list = t_list,
	.destroy = nop,
};

/* ---- bootstrap, provider ------------------------------------------------------- */

/* The bootstrap secret alone: the test is the node's agent. */
static int t_bootstrap(void *st, const struct cloud_boot *b, char **out,
		       struct sr_err *e)
{
	(void)st;
	*out = strdup(b->bootstrap);
	return *out ? 0 : sr_err_set(e, -ENOMEM, "out of memory");
}

static const struct cloud_provider_ops t_ops = { .bootstrap = t_bootstrap };

static int t_open(const struct cloud_host *h, const struct cloud_conf *conf,
		  const struct cloud_conf_region *region,
		  struct cloud_provider *out, struct sr_err *e)
{
	(void)h;
	(void)conf;
	(void)region;
	(void)e;
	memset(out, 0, sizeof *out);
	out->mkt = (struct cloud_market){ &t_mkt, NULL };
	out->drv = (struct cloud_driver){ &t_drv, NULL };
	out->ops = &t_ops;
	return 0;
}

static int t_check(const struct cloud_conf *conf,
		   const struct cloud_conf_region *region,
		   struct cloud_check *out, struct sr_err *e)
{
	(void)conf;
	(void)region;
	(void)e;
	memset(out, 0, sizeof *out);
	snprintf(out->detail, sizeof out->detail, "the test provider");
	return 0;
}

static const char *const toy_infra[] = { "toy", NULL };

const struct cloud_prov_def prov_toy = {
	.name = "toy",
	.summary = "a test provider: two pools, records for instances",
	.caps = CLOUD_CAP_SPOT | CLOUD_CAP_TAGS,
	.infra = toy_infra,
	.notice_source = "imds",
	.open = t_open,
	.check = t_check,
};

const char *toy_token(int64_t node)
{
	const char *t = NULL;

	pthread_mutex_lock(&toy.mu);
	for (int k = 0; k < toy.n; k++) {
		if (toy.inst[k].node == node)
			t = toy.inst[k].token;
	}
	pthread_mutex_unlock(&toy.mu);
	return t;
}

int toy_provisions(void)
{
	return toy.provisions;
}

int toy_terminations(void)
{
	return toy.terminations;
}
