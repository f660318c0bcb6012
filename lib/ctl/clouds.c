/*
 * clouds.c - how the reconciler drives every provider through the
 * provider contract (cloud/provider.h, cloud/market.h, cloud/compute.h),
 * the same way for every entry of the registry (lib/providers) and the
 * tests' scripted clouds.  Nothing here names a provider.
 *
 * Opening.  The providers the configuration enables (--providers, else
 * the config file's `providers:` section, else the registry's first) are
 * opened from the registry: a regional one once per configured region
 * (or once, in the region its environment names), the others once.
 *
 * Pools.  Every market view numbers pools the catalog's way (or from
 * CLOUD_POOL_OWN_BASE for offerings of its own), so a pool id means one
 * offering whoever sells it.  A pool belongs to the first cloud whose
 * market describes it: providers without CLOUD_CAP_FALLBACK first (a
 * real cloud's provider sells the catalog's pools of its regions),
 * fallback ones last (a simulation of everything else).  So a job kept
 * to a region lands on the real cloud when its provider is enabled for
 * that region, on the simulation otherwise.
 *
 * A launch.  The node row exists first (REQUESTED).  ctl__launch()
 * sends the cloud its idempotency key, cloud_idem_key(cluster, node, 1),
 * and the bootstrap text of the node (a one-time bootstrap secret issued
 * for it, committed first: nodeboot.h; the control plane's URL) and
 * polls the request at once; a cloud still working answers
 * -EINPROGRESS and its driver wakes the reconciler when it is done, so
 * the next pass polls again.  Once the instance is known, commit()
 * records its id and the driver's blob with the node; if that fails the
 * instance is terminated.  After a crash anywhere in between, the next
 * pass launches again with the same key and the cloud answers with the
 * instance it already started - never a second one.
 *
 * Observation.  Each node pass lists every cloud's instances tagged
 * with this cluster (one call per cloud), matches them to the live
 * nodes by instance id (or by the spotrun:node tag before the id is
 * recorded), and terminates instances that no live node holds (a crash
 * between launch and commit, a lost terminate): the tag-based leak
 * sweep.  It also lets each market view refresh its prices.
 *
 * Threading: the launch table and every driver call but none of the
 * market's are the reconciler thread's; markets answer any thread.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "ctl/ctl_int.h"
#include "ctl/nodeboot.h"
#include "providers/registry.h"

int ctl__cluster_load(struct ctl *c, struct sr_err *e)
{
	struct store *db = ctl__store(c);
	char tok[CTL_TOKEN_HEX + 1];
	int rc;

	if (!db)
		return sr_err_set(e, -EIO, "%s: cannot open", c->db_path);
	rc = store_setting_get(db, "cluster_id", c->cluster, sizeof c->cluster, e);
	if (rc == 0 && c->cluster[0])
		return 0;
	if (rc && rc != -SR_ENOTFOUND)
		return rc;
	rc = ctl_token_new(tok);
	if (rc)
		return sr_err_set(e, rc, "cluster id: no randomness");
	snprintf(c->cluster, sizeof c->cluster, "sr%.12s", tok);
	/* written before this daemon leads (unfenced): another one starting
	 * on the same database at once may have written its own - keep the
	 * first, or the two would tag their instances apart */
	rc = store_setting_add(db, "cluster_id", c->cluster, e);
	if (rc == 0)
		rc = store_setting_get(db, "cluster_id", c->cluster,
				       sizeof c->cluster, e);
	return rc;
}

int ctl__clouds_add(struct ctl *c, struct ctl_cloud *cl, struct sr_err *e)
{
	bool fb = cl->caps & CLOUD_CAP_FALLBACK;
	size_t at = c->nclouds;

	for (size_t i = 0; i < c->nclouds; i++) {
		if (strcmp(c->clouds[i].name, cl->name) == 0 &&
		    strcmp(c->clouds[i].p.region, cl->p.region) == 0) {
			cloud_provider_close(&cl->p);
			return sr_err_set(e, -EINVAL, "providers: '%s%s%s' named "
					  "twice", cl->name, cl->p.region[0] ?
					  "/" : "", cl->p.region);
		}
	}
	if (c->nclouds == c->capclouds) {
		size_t nc = c->capclouds ? 2 * c->capclouds : 4;
		struct ctl_cloud *v = realloc(c->clouds, nc * sizeof *v);

		if (!v) {
			cloud_provider_close(&cl->p);
			return sr_err_set(e, -ENOMEM, "out of memory");
		}
		c->clouds = v;
		c->capclouds = nc;
	}
	/* real clouds first, fallback simulations last */
	if (!fb) {
		for (at = 0; at < c->nclouds &&
			     !(c->clouds[at].caps & CLOUD_CAP_FALLBACK); at++)
			;
		memmove(&c->clouds[at + 1], &c->clouds[at],
			(c->nclouds - at) * sizeof c->clouds[0]);
	}
	c->clouds[at] = *cl;
	c->nclouds++;
	return 0;
}

/* Open provider `def` with its configuration (NULL: none) in each of its
 * regions. */
static int open_def(struct ctl *c, const struct cloud_prov_def *def,
		    const struct cloud_conf *conf, struct sr_err *e)
{
	size_t nreg = def->regional && conf && conf->nregions ? conf->nregions : 1;
	int rc = 0;

	if (conf) {
		rc = cloud_conf_check(conf, def->conf_keys, e);
		if (rc)
			return rc;
	}
	for (size_t r = 0; r < nreg && !rc; r++) {
		const struct cloud_conf_region *reg = def->regional && conf &&
			conf->nregions ? &conf->regions[r] : NULL;
		struct ctl_cloud cl = { .def = def, .caps = def->caps };
		struct sr_err oe = { 0 };

		snprintf(cl.name, sizeof cl.name, "%s", def->name);
		rc = def->open(&c->host, conf, reg, &cl.p, &oe);
		if (rc) {
			cloud_provider_close(&cl.p);
			return sr_err_set(e, rc, "provider %s%s%s: %s", def->name,
					  reg ? " region " : "", reg ? reg->name : "",
					  sr_err_str(&oe, rc));
		}
		rc = ctl__clouds_add(c, &cl, e);
	}
	return rc;
}

/* One name of the enabled list. */
static int open_name(struct ctl *c, const char *name, struct sr_err *e)
{
	const struct cloud_prov_def *const *reg = c->cfg.registry;
	const struct cloud_prov_def *def = prov_find(reg, name);
	const struct cloud_conf *conf = NULL;
	char names[256];

	if (!def) {
		prov_names(reg, names, sizeof names);
		return sr_err_set(e, -SR_EUNSUPPORTED, "providers: unknown "
				  "provider '%s' (built: %s)", name, names);
	}
	if (c->cfg.providers)
		conf = cloud_confs_find(c->cfg.providers, name, 0);
	return open_def(c, def, conf, e);
}

int ctl__clouds_open(struct ctl *c, struct sr_err *e)
{
	const char *p = c->cfg.provider;
	const struct cloud_confs *cs = c->cfg.providers;
	char name[64];
	int rc = 0;

	if (p && *p) {
		while (!rc) {
			size_t len = strcspn(p, ",");

			snprintf(name, sizeof name, "%.*s", (int)len, p);
			rc = open_name(c, name, e);
			if (!p[len])
				break;
			p += len + 1;
		}
		return rc;
	}
	/* the config file's providers (a flag's settings alone, line 0,
	 * enable nothing) */
	for (size_t i = 0; cs && i < cs->n && !rc; i++) {
		if (cs->v[i].line)
			rc = open_name(c, cs->v[i].name, e);
	}
	if (!rc && !c->nclouds) /* nothing named: the registry's first */
		rc = open_name(c, (c->cfg.registry ? c->cfg.registry :
				   prov_registry())[0]->name, e);
	return rc;
}

static void inflight_drop(struct ctl *c, size_t k)
{
	struct ctl_cloud *cl = &c->clouds[c->fly[k].cloud];

	cl->p.drv.ops->req_free(cl->p.drv.st, c->fly[k].req); /* waits */
	c->fly[k] = c->fly[--c->nfly];
}

void ctl__clouds_free(struct ctl *c)
{
	while (c->nfly)
		inflight_drop(c, 0);
	for (size_t i = 0; i < c->nclouds; i++)
		cloud_provider_close(&c->clouds[i].p);
	free(c->clouds);
	c->clouds = NULL;
	c->nclouds = c->capclouds = 0;
}

void ctl__clouds_names(const struct ctl *c, char *out, size_t cap)
{
	out[0] = '\0';
	for (size_t i = 0; i < c->nclouds; i++) {
		size_t l = strlen(out);

		snprintf(out + l, cap - l, "%s%s%s%s", i ? "," : "",
			 c->clouds[i].name, c->clouds[i].p.region[0] ? "/" : "",
			 c->clouds[i].p.region);
	}
}

int ctl__cloud_of(const struct ctl *c, int pool)
{
	struct cloud_offering o;

	for (size_t i = 0; i < c->nclouds; i++) {
		const struct cloud_market *m = &c->clouds[i].p.mkt;

		if (m->ops->describe(m->st, pool, &o) == 0)
			return (int)i;
	}
	return -1;
}

const char *ctl__prov_name(const struct ctl *c, int pool)
{
	int i = ctl__cloud_of(c, pool);

	if (i >= 0)
		return c->clouds[i].name;
	return c->nclouds ? c->clouds[0].name : "none";
}

unsigned ctl__prov_caps(const struct ctl *c, int pool)
{
	int i = ctl__cloud_of(c, pool);

	return i >= 0 ? c->clouds[i].caps : 0;
}

int ctl__node_meta(struct ctl *c, int64_t node, struct cloud_meta *out)
{
	for (size_t i = 0; i < c->nclouds; i++) {
		const struct ctl_cloud *cl = &c->clouds[i];

		if ((cl->caps & CLOUD_CAP_HOSTED_META) && cl->p.ops &&
		    cl->p.ops->metadata &&
		    cl->p.ops->metadata(cl->p.st, node, out) == 0)
			return 0;
	}
	return -SR_ENOTFOUND;
}

int ctl__offerings(struct ctl *c, const struct cloud_query *q,
		   struct cloud_offering **out, size_t *n, struct sr_err *e)
{
	struct cloud_offering *all = NULL;
	size_t k = 0;
	int rc = 0;

	*out = NULL;
	*n = 0;
	for (size_t i = 0; i < c->nclouds && !rc; i++) {
		const struct cloud_market *m = &c->clouds[i].p.mkt;
		struct cloud_offering *v = NULL, *grown;
		size_t nv = 0;

		rc = m->ops->offerings(m->st, q, &v, &nv, e);
		if (rc)
			break;
		grown = realloc(all, (k + nv + 1) * sizeof *all);
		if (!grown) {
			free(v);
			rc = sr_err_set(e, -ENOMEM, "out of memory");
			break;
		}
		all = grown;
		for (size_t j = 0; j < nv; j++) {
			if (ctl__cloud_of(c, v[j].pool) == (int)i)
				all[k++] = v[j];
		}
		free(v);
	}
	if (rc) {
		free(all);
		return rc;
	}
	if (k > 1)
		qsort(all, k, sizeof *all, cloud_offering_cmp); /* cheapest spot first */
	*out = all;
	*n = k;
	return 0;
}

int ctl__describe(struct ctl *c, int pool, struct cloud_offering *out)
{
	int i = ctl__cloud_of(c, pool);

	if (i < 0)
		return -SR_ENOTFOUND;
	return c->clouds[i].p.mkt.ops->describe(c->clouds[i].p.mkt.st, pool, out);
}

int ctl__price_history(struct ctl *c, int pool, double step_s, int n,
		       double *usd_h)
{
	int i = ctl__cloud_of(c, pool);
	const struct cloud_market *m;

	for (int k = 0; k < n; k++)
		usd_h[k] = -1;
	if (i < 0)
		return 0;
	m = &c->clouds[i].p.mkt;
	return m->ops->price_history ? m->ops->price_history(m->st, pool, step_s,
							     n, usd_h) : 0;
}

/* ---- launches ---------------------------------------------------------------- */

static struct ctl_inflight *inflight_of(struct ctl *c, int64_t node, size_t *k)
{
	for (size_t i = 0; i < c->nfly; i++) {
		if (c->fly[i].node == node) {
			*k = i;
			return &c->fly[i];
		}
	}
	return NULL;
}

bool ctl__launch_pending(const struct ctl *c, int64_t node)
{
	for (size_t i = 0; i < c->nfly; i++) {
		if (c->fly[i].node == node)
			return true;
	}
	return false;
}

void ctl__launch_drop(struct ctl *c, int64_t node)
{
	size_t k = 0;

	if (inflight_of(c, node, &k))
		inflight_drop(c, k);
}

static void launch_done(void *ud)
{
	ctl__wake(ud); /* the reconciler polls the request at once */
}

static int cloud_fail(const struct cloud_error *ce, int rc, struct sr_err *e)
{
	if (ce->code[0] && !strstr(ce->msg, ce->code))
		return sr_err_set(e, rc, "%s: %s (%s)", ce->code, ce->msg,
				  cloud_err_class_str(ce->cls));
	return sr_err_set(e, rc, "%s (%s)", ce->msg, cloud_err_class_str(ce->cls));
}

static int terminate_ids(struct ctl_cloud *cl, const char *const *ids, size_t n)
{
	struct cloud_error err = { 0 };
	int rc;

	if (n == 0)
		return 0;
	rc = cl->p.drv.ops->terminate(cl->p.drv.st, ids, n, &err);
	if (rc)
		sr_warn("clouds", "terminate failed", "provider=%s n=%zu err=\"%s\"",
			cl->name, n, err.msg);
	return rc;
}

/* The launch of node n as its first attempt makes it: *boot is the
 * bootstrap text (malloc'd; the caller wipes and frees it). */
static int launch_make(struct ctl *c, struct ctl_cloud *cl,
		       const struct ctl_node_ref *n, const char *key,
		       struct cloud_launch *l, char **boot, struct sr_err *e)
{
	char eps[1024], secret[CTL_TOKEN_HEX + 1];
	struct cloud_boot b = { n->id, n->job_id, secret, eps };
	struct cloud_offering o;
	int rc;

	/* the agent gets every daemon sharing the store, the leader first
	 * (lease.c) */
	ctl__endpoints(c, eps, sizeof eps);
	rc = cl->p.mkt.ops->describe(cl->p.mkt.st, n->pool, &o);
	if (rc)
		return sr_err_set(e, rc, "pool %d: not sold by %s", n->pool,
				  cl->name);
	/* the database first: the secret is valid before the instance that
	 * carries it exists (the reconciler's fenced connection); a later
	 * attempt resends this text, and the secret stays valid until used
	 * or the node ends (nodeboot.h) */
	rc = ctl__boot_issue(c, ctl__store(c), n->id, secret, e);
	if (!rc)
		rc = cl->p.ops->bootstrap(cl->p.st, &b, boot, e);
	explicit_bzero(secret, sizeof secret);
	if (rc)
		return rc;
	l->idem_key = key;
	l->zone = o.zone[0] ? strdup(o.zone) : NULL;
	l->instance_type = strdup(o.instance_type);
	l->spot = n->spot;
	l->bootstrap = *boot;
	l->image = n->image && n->image[0] ? n->image : NULL;
	if (!l->instance_type || (o.zone[0] && !l->zone))
		return sr_err_set(e, -ENOMEM, "out of memory");
	/* written down before it is sent (launchrec.c) */
	return ctl__launch_keep(c, n->id, l, e);
}

/* Start the launch of node n (its request joins the launch table).  The
 * first attempt makes it and keeps its parameters; every later one -
 * after a crash, or on another daemon after a failover - sends exactly
 * what was kept, under the same key (launchrec.c). */
static int launch_start(struct ctl *c, int i, const struct ctl_node_ref *n,
			struct sr_err *e)
{
	struct ctl_cloud *cl = &c->clouds[i];
	struct cloud_launch l = { 0 };
	struct cloud_req *req = NULL;
	struct cloud_error err = { 0 };
	struct cloud_tags tags = { c->cluster, n->job_id, n->id, 1 };
	struct cloud_tags gtags = { c->cluster, n->job_id, n->group_first, 1 };
	char key[CLOUD_IDEM_MAX], gkey[CLOUD_IDEM_MAX], *boot = NULL;
	json_t *kept = NULL;
	int rc;

	if (c->nfly == CTL_INFLIGHT_MAX)
		return -EINPROGRESS; /* as many in flight as we allow: later */
	cloud_idem_key(&tags, key);
	rc = ctl__launch_recall(c, n->id, key, &l, &kept, e);
	if (rc == 0)
		rc = launch_make(c, cl, n, key, &l, &boot, e);
	else if (rc == 1)
		rc = 0;
	if (rc)
		goto out;
	l.tags = tags;
	if (n->group_size > 1) {
		cloud_idem_key(&gtags, gkey);
		l.group = (struct cloud_group){ gkey, n->group_size,
						n->group_index };
	}
	l.pool = n->pool;
	l.done = launch_done;
	l.done_ud = c;
	rc = cl->p.drv.ops->provision(cl->p.drv.st, &l, &req, &err);
	if (rc) {
		rc = cloud_fail(&err, rc, e);
		goto out;
	}
	c->fly[c->nfly++] = (struct ctl_inflight){ n->id, i, req };
out:
	if (!kept) { /* made here: the strings are ours */
		free((char *)l.zone);
		free((char *)l.instance_type);
	}
	if (boot) {
		explicit_bzero(boot, strlen(boot));
		free(boot);
	}
	json_decref(kept);
	return rc;
}

int ctl__launch(struct ctl *c, const struct ctl_node_ref *n,
		int (*commit)(void *ud, const char *id, const char *blob,
			      bool pending),
		void *ud, struct sr_err *e)
{
	int i = ctl__cloud_of(c, n->pool);
	struct ctl_inflight *f;
	struct cloud_instance inst = { 0 };
	struct cloud_error err = { 0 };
	struct ctl_cloud *cl;
	size_t k = 0;
	int rc;

	if (i < 0)
		return sr_err_set(e, -EINVAL, "pool %d: no enabled provider sells "
				  "it", n->pool);
	cl = &c->clouds[i];
	f = inflight_of(c, n->id, &k);
	if (!f) {
		rc = launch_start(c, i, n, e);
		if (rc)
			return rc;
		f = inflight_of(c, n->id, &k);
	}
	rc = cl->p.drv.ops->poll(cl->p.drv.st, f->req, &inst, &err);
	if (rc == -EAGAIN)
		return -EINPROGRESS;
	inflight_drop(c, k);
	if (rc) {
		cloud_instance_clear(&inst);
		return cloud_fail(&err, rc, e);
	}
	sr_info("clouds", "instance launched", "node=%" PRId64 " provider=%s"
		" instance=%s zone=%s type=%s spot=%d", n->id, cl->name, inst.id,
		inst.zone, inst.instance_type, n->spot);
	rc = commit(ud, inst.id, inst.blob, inst.state == CLOUD_INST_PENDING);
	if (rc == 0)
		ctl__launch_forget(c, n->id); /* recorded: no repeat needed */
	if (rc) {
		const char *id = inst.id;

		terminate_ids(cl, &id, 1); /* not recorded: it must not run */
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

int ctl__terminate(struct ctl *c, const struct ctl_node_ref *n)
{
	int i = ctl__cloud_of(c, n->pool);
	struct cloud_instance *v = NULL;
	struct cloud_error err = { 0 };
	struct ctl_cloud *cl;
	const char *ids[16];
	size_t nv = 0, k = 0;
	int rc;

	if (i < 0)
		return -SR_ENOTFOUND;
	cl = &c->clouds[i];
	if (inflight_of(c, n->id, &k))
		inflight_drop(c, k); /* its instance, if any, is found below */
	if (n->instance_id && n->instance_id[0]) {
		ids[0] = n->instance_id;
		return terminate_ids(cl, ids, 1);
	}
	/* no id recorded (a crash before the commit): by the node's tag */
	rc = cl->p.drv.ops->list(cl->p.drv.st, c->cluster, &v, &nv, &err);
	if (rc) {
		sr_warn("clouds", "cannot list instances", "provider=%s err=\"%s\"",
			cl->name, err.msg);
		return rc;
	}
	k = 0;
	for (size_t j = 0; j < nv && k < 16; j++) {
		if (v[j].node_id == n->id && running(&v[j]))
			ids[k++] = v[j].id;
	}
	rc = terminate_ids(cl, ids, k);
	cloud_instances_free(v, nv);
	return rc;
}

static bool holds(const struct ctl_node_ref *r, const struct cloud_instance *x)
{
	if (r->instance_id && r->instance_id[0])
		return strcmp(r->instance_id, x->id) == 0;
	return x->node_id == r->id;
}

/* Observe cloud i's nodes among v[0..n) and sweep its leaks. */
static int observe_one(struct ctl *c, int i, const struct ctl_node_ref *v,
		       size_t n, const int *own, struct ctl_node_obs *obs)
{
	struct ctl_cloud *cl = &c->clouds[i];
	struct cloud_instance *x = NULL;
	struct cloud_error err = { 0 };
	const char *leak[64];
	size_t nx = 0, nleak = 0, k;
	int rc;

	if (cl->p.mkt.ops->refresh)
		cl->p.mkt.ops->refresh(cl->p.mkt.st);
	rc = cl->p.drv.ops->list(cl->p.drv.st, c->cluster, &x, &nx, &err);
	if (rc) {
		sr_warn("clouds", "cannot list instances", "provider=%s err=\"%s\"",
			cl->name, err.msg);
		return rc;
	}
	for (size_t j = 0; j < n; j++) {
		if (own[j] != i)
			continue;
		obs[j] = (struct ctl_node_obs){ .unlisted = true };
		for (size_t q = 0; q < nx; q++) {
			if (!holds(&v[j], &x[q]))
				continue;
			obs[j].unlisted = false;
			if (x[q].state == CLOUD_INST_STOPPING)
				obs[j].stopping = true;
			if (x[q].state == CLOUD_INST_GONE)
				obs[j].gone = true;
			if (!running(&x[q]))
				continue;
			obs[j].alive = true;
			obs[j].pending = x[q].state == CLOUD_INST_PENDING;
			obs[j].notice_ns = x[q].notice_ns;
			if (!(v[j].instance_id && v[j].instance_id[0]) &&
			    !obs[j].found[0])
				snprintf(obs[j].found, sizeof obs[j].found, "%s",
					 x[q].id);
		}
	}
	/* running instances of this cluster that no live node holds (a
	 * provider without tags cannot tell ours: left alone) */
	for (size_t q = 0; q < nx && nleak < 64 && (cl->caps & CLOUD_CAP_TAGS);
	     q++) {
		bool known = inflight_of(c, x[q].node_id, &k) != NULL;

		if (!running(&x[q]))
			continue;
		for (size_t j = 0; j < n && !known; j++)
			known = own[j] == i && holds(&v[j], &x[q]);
		if (!known) {
			sr_warn("clouds", "leaked instance: terminating", "provider=%s"
				" instance=%s node=%" PRId64 " job=%" PRId64, cl->name,
				x[q].id, x[q].node_id, x[q].job_id);
			leak[nleak++] = x[q].id;
		}
	}
	terminate_ids(cl, leak, nleak);
	cloud_instances_free(x, nx);
	return 0;
}

int ctl__observe(struct ctl *c, const struct ctl_node_ref *v, size_t n,
		 struct ctl_node_obs *obs)
{
	int *own = calloc(n + 1, sizeof *own);
	int rc = 0;

	if (!own)
		return -ENOMEM;
	for (size_t j = 0; j < n; j++) {
		own[j] = ctl__cloud_of(c, v[j].pool);
		obs[j] = (struct ctl_node_obs){ 0 }; /* nobody sells it: gone */
	}
	/* every cloud is listed, also with no node (its leaks are swept) */
	for (size_t i = 0; i < c->nclouds && !rc; i++)
		rc = observe_one(c, (int)i, v, n, own, obs);
	free(own);
	return rc;
}
