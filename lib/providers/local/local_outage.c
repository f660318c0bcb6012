/*
 * local_outage.c - outages of the local cloud set by hand (`spotrun cloud
 * outage POOL --for D`, cloud_provider_ops.outage): a pool has no spot
 * capacity until a time on the cloud's clock, whatever its trace says.
 *
 * While a pool is out, local__available() says no: a spot launch into
 * it fails for capacity (local_drv.c) and its running spot instances are
 * reclaimed one at a time, as when the trace runs dry; the market view
 * shows it without spot capacity.
 *
 * The table lives in memory (outage_until[pool], under omu, which the
 * market reads without the driver's mu) and, so that a restarted daemon
 * keeps it, in <state>/outages.json, written durably:
 *     {"outages": [{"pool": 3, "until_s": 86400.5}, ...]}
 * The cloud's clock is the daemon's, which survives a restart.  Ended
 * outages are dropped at the next write.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <jansson.h>

#include "common/json.h"
#include "common/log.h"
#include "providers/local/local_int.h"

static void outage_path(const struct local_prov *l, char *buf, size_t n)
{
	snprintf(buf, n, "%s/outages.json", l->h->state_dir);
}

/* Write the table (under omu). */
static int outage_save(const struct local_prov *l, double now, struct sr_err *e)
{
	char path[LOCAL_PATH_MAX];
	json_t *arr = json_array(), *doc = NULL;
	int rc = -ENOMEM;

	if (!arr)
		goto done;
	for (size_t i = 0; i < l->npools; i++) {
		if (l->outage_until[i] > now &&
		    json_array_append_new(arr, json_pack("{s:I,s:f}", "pool",
							 (json_int_t)i, "until_s",
							 l->outage_until[i])))
			goto done;
	}
	doc = json_pack("{s:O}", "outages", arr);
	if (!doc)
		goto done;
	outage_path(l, path, sizeof path);
	rc = sr_json_write_file(doc, path, e);
	json_decref(doc);
	json_decref(arr);
	return rc;
done:
	json_decref(arr);
	return sr_err_set(e, rc, "out of memory");
}

int local__outage_load(struct local_prov *l, struct sr_err *e)
{
	char path[LOCAL_PATH_MAX];
	json_t *doc = NULL, *arr = NULL, *it;
	size_t i;
	int rc;

	l->npools = localmkt_npools(l->m);
	l->outage_until = calloc(l->npools ? l->npools : 1, sizeof *l->outage_until);
	if (!l->outage_until)
		return sr_err_set(e, -ENOMEM, "out of memory");
	rc = pthread_mutex_init(&l->omu, NULL);
	if (rc)
		return sr_err_set(e, -rc, "outage lock: %s", sr_strerror(-rc));
	l->omu_init = true;
	outage_path(l, path, sizeof path);
	doc = sr_json_load_file(path, e);
	if (!doc && e->code == -ENOENT) {
		sr_err_clear(e); /* never set */
		return 0;
	}
	if (!doc)
		return e->code;
	rc = sr_json_get_arr(doc, "outages", &arr, path, e);
	json_array_foreach(arr, i, it) {
		int64_t pool = -1;
		double until = 0;
		char ctx[LOCAL_PATH_MAX + 32];

		if (rc)
			break;
		snprintf(ctx, sizeof ctx, "%s: outages[%zu]", path, i);
		rc = sr_json_get_int(it, "pool", &pool, ctx, e);
		if (!rc)
			rc = sr_json_get_num(it, "until_s", &until, ctx, e);
		if (!rc && (pool < 0 || (size_t)pool >= l->npools)) {
			/* a catalog changed under a saved outage: forget it */
			sr_warn("local", "outage of a pool the market does not have",
				"file=%s pool=%lld", path, (long long)pool);
			continue;
		}
		if (!rc)
			l->outage_until[pool] = until;
	}
	json_decref(doc);
	return rc;
}

int local__outage_set(void *st, int pool, double for_s, double *until_s,
		      struct sr_err *e)
{
	struct local_prov *l = st;
	double now = local__sim(l), old;
	int rc;

	*until_s = 0;
	if (pool < 0 || (size_t)pool >= l->npools)
		return sr_err_set(e, -SR_ENOTFOUND, "the local cloud has no pool %d "
				  "(0..%zu)", pool, l->npools ? l->npools - 1 : 0);
	if (!isfinite(for_s) || for_s <= 0)
		return sr_err_set(e, -EINVAL, "an outage lasts > 0 s, not %g", for_s);
	pthread_mutex_lock(&l->omu);
	old = l->outage_until[pool];
	l->outage_until[pool] = now + for_s;
	rc = outage_save(l, now, e);
	if (rc)
		l->outage_until[pool] = old; /* nothing promised that was not kept */
	else
		*until_s = now + for_s;
	pthread_mutex_unlock(&l->omu);
	if (!rc)
		sr_info("local", "outage set by hand", "pool=%d for_s=%.0f until_s=%.0f",
			pool, for_s, *until_s);
	return rc;
}

bool local__available(struct local_prov *l, int pool, double sim_s)
{
	bool out = false;

	if (pool >= 0 && (size_t)pool < l->npools) {
		pthread_mutex_lock(&l->omu);
		out = l->outage_until[pool] > sim_s;
		pthread_mutex_unlock(&l->omu);
	}
	return !out && localmkt_available(l->m, pool, sim_s);
}

void local__outage_free(struct local_prov *l)
{
	if (l->omu_init)
		pthread_mutex_destroy(&l->omu);
	free(l->outage_until);
	l->outage_until = NULL;
}
