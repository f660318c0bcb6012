/*
 * assign.c - the register reply: what this node runs (docs/api.md).
 *
 * Unknown fields are tolerated here (a newer daemon may add some); missing
 * or mistyped required ones are an error naming the field.
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "common/json.h"
#include "common/signame.h"

static int dup_opt(json_t *o, const char *key, char **out, const char *ctx,
		   struct sr_err *e)
{
	const char *v = NULL;
	int rc = sr_json_get_str_opt(o, key, &v, ctx, e);

	*out = NULL;
	if (rc < 0 || !v)
		return rc;
	*out = strdup(v);
	return *out ? 0 : -ENOMEM;
}

/* "bucket_mounts": [{"dst", "uri", "mode", "store"}] (docs/api.md). */
static int buckets_parse(json_t *r, struct assignment *a, struct sr_err *e)
{
	static const char *const modes[] = { "MOUNT", "MOUNT_CACHED", "COPY" };
	json_t *arr = json_object_get(r, "bucket_mounts"), *b;
	size_t i;

	if (!arr || json_is_null(arr))
		return 0;
	if (!json_is_array(arr) || json_array_size(arr) > 64)
		return sr_err_set(e, -SR_EPARSE, "register reply: bucket_mounts: "
				  "expected an array of at most 64 objects");
	a->buckets = calloc(json_array_size(arr) + 1, sizeof *a->buckets);
	if (!a->buckets)
		return -ENOMEM;
	json_array_foreach(arr, i, b) {
		const char *dst, *uri, *mode = "MOUNT";
		struct bucket_mount *m = &a->buckets[i];
		int k;

		if (json_unpack(b, "{s:s, s:s, s?:s}", "dst", &dst, "uri", &uri,
				"mode", &mode) < 0 || !*dst || !*uri)
			return sr_err_set(e, -SR_EPARSE, "register reply: "
					  "bucket_mounts[%zu]: needs dst and uri", i);
		for (k = 0; k < 3 && strcmp(mode, modes[k]); k++)
			;
		if (k == 3)
			return sr_err_set(e, -SR_EPARSE, "register reply: "
					  "bucket_mounts[%zu].mode: '%.32s' is not "
					  "MOUNT, MOUNT_CACHED or COPY", i, mode);
		m->mode = (enum bucket_mode)k;
		m->dst = strdup(dst);
		m->uri = strdup(uri);
		a->nbuckets = i + 1;
		if (!m->dst || !m->uri)
			return -ENOMEM;
	}
	return 0;
}

/* "preempt_signal" (TERM when absent) and "sync_quiet_ms" (2000). */
static int stop_parse(json_t *r, struct assignment *a, struct sr_err *e)
{
	const char *sig = NULL;
	int rc = sr_json_get_str_opt(r, "preempt_signal", &sig,
				     "register reply", e);

	a->stop_signal = SIGTERM;
	if (rc == 0 && sig && (a->stop_signal = sr_stop_signal_parse(sig)) < 0)
		rc = sr_err_set(e, -SR_EPARSE, "register reply: preempt_signal: "
				"'%.16s' is not one of " SR_STOP_SIGNALS, sig);
	a->sync_quiet_ms = 2000;
	if (rc == 0)
		rc = sr_json_get_int_opt(r, "sync_quiet_ms", &a->sync_quiet_ms,
					 "register reply", e);
	if (rc == 0 && (a->sync_quiet_ms < 1 || a->sync_quiet_ms > 3600000))
		rc = sr_err_set(e, -SR_EPARSE, "register reply: sync_quiet_ms: "
				"%lld is not 1..3600000",
				(long long)a->sync_quiet_ms);
	return rc;
}

int assignment_parse(json_t *r, struct assignment *a, struct sr_err *e)
{
	const char *ctx = "register reply";
	json_t *envs = NULL, *pl;
	int64_t hb = 1000, ip = 500;
	const char *run = NULL;
	int rc;

	memset(a, 0, sizeof *a);
	a->spot = -1;
	rc = sr_json_get_int(r, "job_id", &a->job_id, ctx, e);
	if (rc == 0)
		rc = sr_json_get_int(r, "rank", &a->rank, ctx, e);
	if (rc == 0)
		rc = sr_json_get_int(r, "num_nodes", &a->num_nodes, ctx, e);
	if (rc == 0)
		rc = sr_json_get_str(r, "run", &run, ctx, e);
	if (rc == 0)
		rc = dup_opt(r, "setup", &a->setup, ctx, e);
	if (rc == 0)
		rc = dup_opt(r, "workdir", &a->workdir, ctx, e);
	if (rc == 0)
		rc = dup_opt(r, "ckpt_dir", &a->ckpt_dir, ctx, e);
	if (rc == 0)
		rc = dup_opt(r, "ckpt_uri", &a->ckpt_uri, ctx, e);
	a->ckpt_alert_intervals = 3;
	if (rc == 0)
		rc = sr_json_get_int_opt(r, "ckpt_alert_intervals",
					 &a->ckpt_alert_intervals, ctx, e);
	if (rc == 0 && a->ckpt_alert_intervals < 1)
		rc = sr_err_set(e, -SR_EPARSE, "%s: ckpt_alert_intervals: must be "
				">= 1", ctx);
	if (rc == 0)
		rc = sr_json_get_int_opt(r, "heartbeat_ms", &hb, ctx, e);
	if (rc == 0)
		rc = sr_json_get_int_opt(r, "imds_poll_ms", &ip, ctx, e);
	if (rc < 0)
		goto fail;
	a->spare = json_is_true(json_object_get(r, "spare"));
	a->setup_ahead = json_is_true(json_object_get(r, "setup_ahead"));
	a->train_through = json_is_true(json_object_get(r,
							"train_through_notice"));
	if (a->num_nodes < 1 || a->rank < 0 ||
	    a->rank >= a->num_nodes + (a->spare ? 1 : 0)) {
		rc = sr_err_set(e, -SR_EPARSE, "%s: rank %lld of %lld nodes",
				ctx, (long long)a->rank, (long long)a->num_nodes);
		goto fail;
	}
	a->run = strdup(run);
	if (!a->run) {
		rc = -ENOMEM;
		goto fail;
	}
	/* clamp: heartbeats 100 ms..60 s, IMDS polls 50 ms..1 s (<= 1 s is
	 * the agent's promise, whatever the daemon asks) */
	a->heartbeat_ms = hb < 100 ? 100 : hb > 60000 ? 60000 : (long)hb;
	a->imds_poll_ms = ip < 50 ? 50 : ip > 1000 ? 1000 : (long)ip;
	envs = json_object_get(r, "envs");
	if (envs && !json_is_null(envs)) {
		const char *k;
		json_t *v;

		if (!json_is_object(envs)) {
			rc = sr_err_set(e, -SR_EPARSE, "%s: envs: expected an "
					"object", ctx);
			goto fail;
		}
		json_object_foreach(envs, k, v) {
			if (!json_is_string(v)) {
				rc = sr_err_set(e, -SR_EPARSE, "%s: envs.%s: "
						"expected a string", ctx, k);
				goto fail;
			}
		}
		a->envs = json_incref(envs);
	}
	pl = json_object_get(r, "placement");
	if (json_is_object(pl)) {
		json_t *sp = json_object_get(pl, "spot");

		rc = dup_opt(pl, "cloud", &a->cloud, ctx, e);
		if (rc == 0)
			rc = dup_opt(pl, "region", &a->region, ctx, e);
		if (rc == 0)
			rc = dup_opt(pl, "zone", &a->zone, ctx, e);
		if (rc == 0)
			rc = dup_opt(pl, "instance_type", &a->instance_type, ctx, e);
		if (rc < 0)
			goto fail;
		if (json_is_boolean(sp))
			a->spot = json_is_true(sp);
	}
	rc = dup_opt(r, "master_addr", &a->master_addr, ctx, e);
	if (rc == 0)
		rc = dup_opt(r, "task_id", &a->task_id, ctx, e);
	if (rc < 0)
		goto fail;
	if (json_is_object(json_object_get(r, "file_mounts")) &&
	    json_object_size(json_object_get(r, "file_mounts")))
		a->mounts = json_incref(json_object_get(r, "file_mounts"));
	a->sync_workdir = json_is_true(json_object_get(r, "sync_workdir"));
	a->shared_disk = json_is_string(json_object_get(r, "node_dir"));
	a->files = json_is_true(json_object_get(r, "files"));
	rc = sr_json_get_int_opt(r, "gpus_per_node", &a->gpus_per_node, ctx, e);
	if (rc == 0)
		rc = buckets_parse(r, a, e);
	if (rc == 0)
		rc = stop_parse(r, a, e);
	if (rc < 0)
		goto fail;
	return 0;
fail:
	assignment_free(a);
	return rc;
}

void assignment_free(struct assignment *a)
{
	if (!a)
		return;
	free(a->setup);
	free(a->run);
	json_decref(a->envs);
	free(a->workdir);
	free(a->ckpt_dir);
	free(a->ckpt_uri);
	free(a->cloud);
	free(a->region);
	free(a->zone);
	free(a->instance_type);
	free(a->master_addr);
	free(a->task_id);
	free(a->home);
	free(a->node_ips);
	json_decref(a->mounts);
	for (size_t i = 0; i < a->nbuckets; i++) {
		free(a->buckets[i].dst);
		free(a->buckets[i].uri);
	}
	free(a->buckets);
	memset(a, 0, sizeof *a);
}
