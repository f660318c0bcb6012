/*
 * prov_multi.c - several providers behind the one interface the
 * reconciler speaks (`spotrund --providers local,aws`).
 *
 * Every provider here numbers pools the same way (the catalog's, through
 * localmkt), so a pool id means one offering whoever sells it.  A pool
 * belongs to the first provider, in the order below, whose describe()
 * knows it: the real clouds first (aws sells the catalog's AWS pools of
 * its region), the local cloud last (it simulates everything else).  So
 * `infra: aws/us-east-1` in a job file lands on EC2 when aws is enabled
 * for us-east-1, and on the local cloud's simulation of it otherwise.
 *
 * Every call is routed by pool; list() splits the nodes by owner and
 * fails if any owner's list() fails (nothing is then ended or noticed).
 * Threading: as the providers it holds (read-only after init).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ctl/ctl_int.h"

#define MULTI_MAX 4

struct multi {
	struct ctl_provider p[MULTI_MAX]; /* owned; in ownership order */
	size_t n;
	char name[64];
};

static int owner(const struct multi *m, int pool)
{
	struct prov_offering o;

	for (size_t i = 0; i < m->n; i++) {
		if (m->p[i].ops->describe(m->p[i].st, pool, 0, &o) == 0)
			return (int)i;
	}
	return -1;
}

static void multi_destroy(void *st)
{
	struct multi *m = st;

	if (!m)
		return;
	for (size_t i = 0; i < m->n; i++)
		m->p[i].ops->destroy(m->p[i].st);
	free(m);
}

static int cmp_spot(const void *a, const void *b)
{
	const struct prov_offering *x = a, *y = b;
	sr_micros px = x->spot_per_h >= 0 ? x->spot_per_h : INT64_MAX;
	sr_micros py = y->spot_per_h >= 0 ? y->spot_per_h : INT64_MAX;

	if (px != py)
		return px < py ? -1 : 1;
	return x->pool - y->pool;
}

static int multi_offerings(void *st, const struct prov_query *q, double sim_s,
			   struct prov_offering **out, size_t *n, struct sr_err *e)
{
	struct multi *m = st;
	struct prov_offering *all = NULL;
	size_t k = 0;
	int rc = 0;

	*out = NULL;
	*n = 0;
	for (size_t i = 0; i < m->n && !rc; i++) {
		struct prov_offering *v = NULL, *grown;
		size_t nv = 0;

		rc = m->p[i].ops->offerings(m->p[i].st, q, sim_s, &v, &nv, e);
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
			if (owner(m, v[j].pool) == (int)i)
				all[k++] = v[j];
		}
		free(v);
	}
	if (rc) {
		free(all);
		return rc;
	}
	qsort(all, k, sizeof *all, cmp_spot); /* cheapest spot first */
	*out = all;
	*n = k;
	return 0;
}

static int multi_describe(void *st, int pool, double sim_s,
			  struct prov_offering *out)
{
	struct multi *m = st;
	int i = owner(m, pool);

	if (i < 0)
		return -SR_ENOTFOUND;
	return m->p[i].ops->describe(m->p[i].st, pool, sim_s, out);
}

static int multi_provision(void *st, struct prov_node *n,
			   int (*commit)(void *ud, const struct prov_node *n),
			   void *ud, struct sr_err *e)
{
	struct multi *m = st;
	int i = owner(m, n->pool);

	if (i < 0)
		return sr_err_set(e, -EINVAL, "pool %d: no enabled provider sells "
				  "it", n->pool);
	return m->p[i].ops->provision(m->p[i].st, n, commit, ud, e);
}

static int multi_terminate(void *st, const struct prov_node *n)
{
	struct multi *m = st;
	int i = owner(m, n->pool);

	return i < 0 ? -SR_ENOTFOUND : m->p[i].ops->terminate(m->p[i].st, n);
}

static int multi_list(void *st, const struct prov_node *nodes, size_t n,
		      double sim_s, struct prov_obs *obs)
{
	struct multi *m = st;
	struct prov_node *sub = calloc(n + 1, sizeof *sub);
	struct prov_obs *so = calloc(n + 1, sizeof *so);
	int *own = calloc(n + 1, sizeof *own);
	int rc = 0;

	if (!sub || !so || !own) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t j = 0; j < n; j++)
		own[j] = owner(m, nodes[j].pool);
	/* each provider lists its own nodes (and sweeps its own leaks,
	 * so it is called even with none) */
	for (size_t i = 0; i < m->n && !rc; i++) {
		size_t k = 0;

		for (size_t j = 0; j < n; j++) {
			if (own[j] == (int)i)
				sub[k++] = nodes[j];
		}
		rc = m->p[i].ops->list(m->p[i].st, sub, k, sim_s, so);
		for (size_t j = 0, x = 0; !rc && j < n; j++) {
			if (own[j] == (int)i)
				obs[j] = so[x++];
		}
	}
	for (size_t j = 0; !rc && j < n; j++) {
		if (own[j] < 0)
			obs[j] = (struct prov_obs){ 0 }; /* nobody sells it: gone */
	}
out:
	free(sub);
	free(so);
	free(own);
	return rc;
}

static const char *multi_pool_provider(void *st, int pool)
{
	struct multi *m = st;
	int i = owner(m, pool);

	return i < 0 ? m->name : m->p[i].ops->name;
}

static bool multi_pool_shared(void *st, int pool)
{
	struct multi *m = st;
	int i = owner(m, pool);

	return i >= 0 && m->p[i].ops->shared_disk;
}

static const struct prov_ops multi_ops = {
	.name = "multi",
	.destroy = multi_destroy,
	.offerings = multi_offerings,
	.describe = multi_describe,
	.provision = multi_provision,
	.terminate = multi_terminate,
	.list = multi_list,
	.pool_provider = multi_pool_provider,
	.pool_shared = multi_pool_shared,
};

int ctl__prov_multi_init(struct ctl *c, const struct ctl_provider *v, size_t n,
			 struct sr_err *e)
{
	struct multi *m;
	size_t k = 0;

	if (n > MULTI_MAX)
		return sr_err_set(e, -EINVAL, "--providers: at most %d", MULTI_MAX);
	m = calloc(1, sizeof *m);
	if (!m)
		return sr_err_set(e, -ENOMEM, "out of memory");
	/* real clouds first, the local simulation last */
	for (size_t i = 0; i < n; i++) {
		if (!v[i].ops->shared_disk)
			m->p[k++] = v[i];
	}
	for (size_t i = 0; i < n; i++) {
		if (v[i].ops->shared_disk)
			m->p[k++] = v[i];
	}
	m->n = k;
	for (size_t i = 0; i < k; i++) {
		size_t l = strlen(m->name);

		snprintf(m->name + l, sizeof m->name - l, "%s%s", i ? "," : "",
			 m->p[i].ops->name);
	}
	c->prov.ops = &multi_ops;
	c->prov.st = m;
	return 0;
}
