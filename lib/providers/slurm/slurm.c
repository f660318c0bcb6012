/*
 * slurm.c - the `slurm` provider: a team's own Slurm cluster behind the
 * provider contract (cloud/provider.h), the first provider that is not a
 * cloud (docs/slurm.md).
 *
 * Market view (cloud/market.h).  A partition is a pool: its nodes, idle
 * nodes and GPUs per node come from `sinfo`, and its queue estimate for
 * a one-node job (queue_wait_s, slurm_queue.c) from `squeue` (read at
 * open, then at most once a minute on the reconciler's refresh); pools are numbered from
 * CLOUD_POOL_OWN_BASE in the order of the `partitions` setting (else
 * sinfo's, which is slurm.conf's), so a pool id keeps its partition
 * across restarts.  Offering: cloud "slurm", region the `cluster`
 * setting, zone and instance type the partition; its price is the
 * configured amortised $/GPU-hour (`price_per_gpu_h`) times the GPUs of
 * a node, as the on-demand and the reserved price; no spot.
 *
 * Compute: slurm_drv.c (a node is a Slurm batch job running
 * spotrun-agent; a pending job is CLOUD_INST_PENDING and, with
 * CLOUD_CAP_QUEUES, runs no boot timeout).
 *
 * Bootstrap: a JSON document {"api", "node", "bootstrap"}; the driver
 * puts the api and each node's one-time secret on the environment sbatch
 * exports to the job ($SPOTRUN_AGENT_BOOTSTRAP_<i> for the allocation's
 * node i, which the script hands its agent as $SPOTRUN_AGENT_BOOTSTRAP:
 * the agent reads and removes it).  The batch script (written at open
 * into <state dir>/slurm, NODE_SCRIPT below) is fixed text: it reads
 * only those variables.
 *
 * Notice: Slurm's SIGTERM.  Slurm ends a job's steps with SIGTERM, then
 * SIGKILL KillWait seconds later (PreemptMode=REQUEUE, or CANCEL at the
 * end of its GraceTime, whose start signals the steps with SIGTERM or the
 * job's --signal), and the job's --signal, TERM, comes `notice_lead`
 * seconds before its time limit.  Signals go to a job's steps (every
 * process of them, the workload included), not to its batch shell, so
 * the agent runs as the job's step (srun).  Its source is "signal" with
 * SIGTERM as the notice (--notice-signal TERM, lead notice_lead): a final
 * checkpoint, the notice reported, a clean exit; SIGINT alone quits it.
 * notice_lead must not exceed KillWait (or GraceTime).
 *
 * Credentials: none of spotrun's (munge authenticates the commands).
 *
 * Configuration keys (docs/slurm.md): price_per_gpu_h (required),
 * partitions, cluster, accelerator, time, notice_lead, slurm_conf, bin.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/fsutil.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "providers/slurm/slurm_int.h"

#define REFRESH_NS (60 * SR_NS_PER_SEC)
#define LEAD_S_DEFAULT 30

/* The batch script: as the batch shell it starts itself as the job's one
 * step on every node of the allocation (srun, one task a node); as that
 * task it takes its node's settings by the node's index in the
 * allocation ($SLURM_NODEID: a number, checked before eval reads
 * SPOTRUN_SLURM_NODE_<i> and its kin), drops every node's secret from
 * the environment but its own, and becomes spotrun-agent. */
static const char NODE_SCRIPT[] =
	"#!/bin/sh\n"
	"# spotrun (lib/providers/slurm): spotrun-agent as this job's step, one\n"
	"# a node.  Every value comes from the environment sbatch exported.\n"
	"if [ -z \"$SPOTRUN_SLURM_TASK\" ]; then\n"
	"\texport SPOTRUN_SLURM_TASK=1\n"
	"\texec srun --ntasks-per-node=1 --kill-on-bad-exit=0 /bin/sh "
	"\"$SPOTRUN_SLURM_SCRIPT\"\n"
	"fi\n"
	"i=\"${SLURM_NODEID:-0}\"\n"
	"case \"$i\" in ''|*[!0-9]*) echo \"spotrun: SLURM_NODEID '$i'\" >&2; "
	"exit 1;; esac\n"
	"eval \"node=\\${SPOTRUN_SLURM_NODE_$i:-} "
	"wd=\\${SPOTRUN_SLURM_WORKDIR_$i:-} "
	"boot=\\${SPOTRUN_AGENT_BOOTSTRAP_$i:-}\"\n"
	"k=0\n"
	"while [ \"$k\" -lt \"${SPOTRUN_SLURM_NNODES:-0}\" ]; do\n"
	"\tunset \"SPOTRUN_AGENT_BOOTSTRAP_$k\"\n"
	"\tk=$((k + 1))\n"
	"done\n"
	"[ -n \"$node\" ] || { echo \"spotrun: no node $i\" >&2; exit 1; }\n"
	"mkdir -p \"$wd\" || exit 1\n"
	"export SPOTRUN_AGENT_BOOTSTRAP=\"$boot\"\n"
	"exec \"$SPOTRUN_SLURM_AGENT\" --api \"$SPOTRUN_SLURM_API\" "
	"--node-id \"$node\" --workdir \"$wd\" --notice signal "
	"--notice-signal TERM --notice-lead \"$SPOTRUN_SLURM_LEAD\" "
	"--private \"$SPOTRUN_SLURM_PRIVATE\"\n";

/* ---- market view ------------------------------------------------------------ */

static void offering(const struct slurm_prov *p, int i, struct cloud_offering *o)
{
	const struct slurm_part *pt = &p->parts[i];
	int g = pt->gpus > 0 ? pt->gpus : 1;

	memset(o, 0, sizeof *o);
	o->pool = CLOUD_POOL_OWN_BASE + i;
	snprintf(o->cloud, sizeof o->cloud, "slurm");
	snprintf(o->region, sizeof o->region, "%s", p->cluster);
	snprintf(o->zone, sizeof o->zone, "%s", pt->name);
	snprintf(o->instance_type, sizeof o->instance_type, "%s", pt->name);
	if (p->accelerator[0]) {
		snprintf(o->accelerator, sizeof o->accelerator, "%s",
			 p->accelerator);
	} else {
		snprintf(o->accelerator, sizeof o->accelerator, "%s",
			 pt->gpu_type[0] ? pt->gpu_type : "GPU");
		for (char *c = o->accelerator; *c; c++)
			*c = (char)toupper((unsigned char)*c);
	}
	o->accel_count = pt->gpus;
	o->ondemand_per_h = p->gpu_h * g;
	o->reserved_per_h = p->gpu_h * g;
	o->spot_per_h = -1;
	o->spot_available = false;
	o->committed = true;
	o->committed_count = pt->nodes;
	o->queue_wait_s = pt->wait_s;
	snprintf(o->queue_basis, sizeof o->queue_basis, "%s", pt->wait_basis);
	o->price_src = CLOUD_PRICE_LIVE;
}

static bool in_list(const char *const *list, const char *s)
{
	if (!list || !list[0])
		return true;
	for (; *list; list++)
		if (!strcasecmp(*list, s))
			return true;
	return false;
}

static int m_offerings(void *st, const struct cloud_query *q,
		       struct cloud_offering **out, size_t *n, struct sr_err *e)
{
	struct slurm_prov *p = st;

	*n = 0;
	*out = calloc(SLURM_PARTS_MAX, sizeof **out);
	if (!*out)
		return sr_err_set(e, -ENOMEM, "out of memory");
	pthread_mutex_lock(&p->mu);
	for (int i = 0; i < p->nparts; i++) {
		struct cloud_offering *o = &(*out)[*n];

		if (!p->parts[i].up)
			continue;
		offering(p, i, o);
		if (q && q->accelerator && strcasecmp(q->accelerator, o->accelerator))
			continue;
		if (q && q->accel_count > 0 && q->accel_count != o->accel_count)
			continue;
		if (q && (!in_list(q->clouds, o->cloud) ||
			  !in_list(q->regions, o->region)))
			continue;
		(*n)++;
	}
	pthread_mutex_unlock(&p->mu);
	return 0;
}

static int m_describe(void *st, int pool, struct cloud_offering *out)
{
	struct slurm_prov *p = st;
	int i = pool - CLOUD_POOL_OWN_BASE, rc = -SR_ENOTFOUND;

	pthread_mutex_lock(&p->mu);
	if (i >= 0 && i < p->nparts) {
		offering(p, i, out);
		rc = 0;
	}
	pthread_mutex_unlock(&p->mu);
	return rc;
}

/* sinfo, kept to the `partitions` setting in its order; with queues,
 * each partition's queue estimate for one node (squeue; unknown where it
 * fails). */
int slurm__refresh(struct slurm_prov *p, bool queues, struct sr_err *e)
{
	const char *argv[] = { "sinfo", "-h", "-a", "-o", "%R|%D|%a|%l|%G|%t",
			       NULL };
	struct slurm_part got[SLURM_PARTS_MAX], keep[SLURM_PARTS_MAX];
	struct cloud_error err = { 0 };
	char *out = NULL;
	int n, k = 0, rc;

	rc = slurm__run(p, argv, NULL, &out, &err);
	if (rc)
		return sr_err_set(e, rc, "%s", err.msg);
	n = slurm__parse_sinfo(out, got, SLURM_PARTS_MAX, e);
	free(out);
	if (n < 0)
		return n;
	for (int i = 0; i < (p->nonly ? p->nonly : n); i++) {
		int j = i;

		if (p->nonly) {
			for (j = 0; j < n && strcmp(got[j].name, p->only[i]); j++)
				;
			if (j == n)
				return sr_err_set(e, -EINVAL, "providers.slurm."
						  "partitions: '%s' is not a "
						  "partition of the cluster",
						  p->only[i]);
		}
		keep[k++] = got[j];
	}
	for (int i = 0; i < k; i++) {
		struct sr_err qe = { 0 };

		keep[i].wait_s = -1;
		keep[i].wait_basis[0] = '\0';
		if (queues && slurm__queue_read(p, &keep[i], 1, &keep[i].wait_s,
						keep[i].wait_basis,
						sizeof keep[i].wait_basis, &qe))
			snprintf(keep[i].wait_basis, sizeof keep[i].wait_basis,
				 "squeue failed: %.100s", qe.msg);
	}
	pthread_mutex_lock(&p->mu);
	memcpy(p->parts, keep, sizeof keep[0] * (size_t)k);
	p->nparts = k;
	p->refreshed_ns = sr_time_mono_ns();
	pthread_mutex_unlock(&p->mu);
	return 0;
}

static void m_refresh(void *st)
{
	struct slurm_prov *p = st;
	struct sr_err e = { 0 };
	int64_t at;
	int rc;

	pthread_mutex_lock(&p->mu);
	at = p->refreshed_ns;
	pthread_mutex_unlock(&p->mu);
	if (sr_time_mono_ns() - at < REFRESH_NS)
		return;
	rc = slurm__refresh(p, true, &e);
	if (rc) {
		sr_warn("slurm", "cannot read the partitions", "err=\"%s\"",
			sr_err_str(&e, rc));
		pthread_mutex_lock(&p->mu);
		p->refreshed_ns = sr_time_mono_ns(); /* next try in a minute */
		pthread_mutex_unlock(&p->mu);
	}
}

static void nop(void *st)
{
	(void)st;
}

static const struct cloud_market_ops slurm_mkt = {
	.name = "slurm", .offerings = m_offerings, .describe = m_describe,
	.refresh = m_refresh, .destroy = nop,
};

/* ---- bootstrap, provider ------------------------------------------------------- */

static int p_bootstrap(void *st, const struct cloud_boot *b, char **out,
		       struct sr_err *e)
{
	json_t *d = json_pack("{s:s, s:I, s:s}", "api", b->api_url, "node",
			      (json_int_t)b->node_id, "bootstrap", b->bootstrap);

	(void)st;
	*out = d ? json_dumps(d, JSON_COMPACT) : NULL;
	json_decref(d);
	return *out ? 0 : sr_err_set(e, -ENOMEM, "out of memory");
}

static void p_destroy(void *st)
{
	struct slurm_prov *p = st;

	if (!p)
		return;
	if (p->mu_init)
		pthread_mutex_destroy(&p->mu);
	free(p);
}

static const struct cloud_provider_ops slurm_ops = {
	.bootstrap = p_bootstrap, .destroy = p_destroy,
};

static int setting(const char *key, const char *v, char *dst, size_t cap,
		   struct sr_err *e)
{
	if (strlen(v) >= cap || strchr(v, '\n'))
		return sr_err_set(e, -EINVAL, "providers.slurm.%s: '%.60s' is "
				  "too long or holds a line break", key, v);
	snprintf(dst, cap, "%s", v);
	return 0;
}

static int parse_conf(struct slurm_prov *p, const struct cloud_conf *c,
		      struct sr_err *e)
{
	const char *v;
	int64_t ns;
	int rc = 0;

	v = c ? cloud_conf_get(c, NULL, NULL, "price_per_gpu_h") : NULL;
	if (!v)
		return sr_err_set(e, -EINVAL, "providers.slurm.price_per_gpu_h: "
				  "required: the cluster's amortised (reserved) "
				  "price of one GPU-hour, e.g. 1.85");
	if (sr_money_parse(v, &p->gpu_h, NULL) || p->gpu_h < 0)
		return sr_err_set(e, -EINVAL, "providers.slurm.price_per_gpu_h: "
				  "'%s' is not a price in USD", v);
	v = c ? cloud_conf_get(c, NULL, NULL, "notice_lead") : NULL;
	p->lead_s = LEAD_S_DEFAULT;
	if (v && (sr_dur_parse(v, &ns, NULL) || ns < SR_NS_PER_SEC))
		return sr_err_set(e, -EINVAL, "providers.slurm.notice_lead: '%s' "
				  "is not a duration of 1 s or more", v);
	if (v)
		p->lead_s = ns / SR_NS_PER_SEC;
	v = c ? cloud_conf_get(c, NULL, NULL, "time") : NULL;
	if (v && (sr_dur_parse(v, &ns, NULL) || ns <= 0))
		return sr_err_set(e, -EINVAL, "providers.slurm.time: '%s' is not "
				  "a duration", v);
	if (v)
		p->time_s = ns / SR_NS_PER_SEC;
	if (v && p->time_s <= p->lead_s)
		return sr_err_set(e, -EINVAL, "providers.slurm.time: %s is too "
				  "short: a node's notice comes notice_lead "
				  "(%" PRId64 " s) before its time limit", v,
				  p->lead_s);
	snprintf(p->cluster, sizeof p->cluster, "slurm");
	v = c ? cloud_conf_get(c, NULL, NULL, "cluster") : NULL;
	if (v)
		rc = setting("cluster", v, p->cluster, sizeof p->cluster, e);
	v = c ? cloud_conf_get(c, NULL, NULL, "accelerator") : NULL;
	if (!rc && v)
		rc = setting("accelerator", v, p->accelerator,
			     sizeof p->accelerator, e);
	v = c ? cloud_conf_get(c, NULL, NULL, "slurm_conf") : NULL;
	if (!rc && v)
		rc = setting("slurm_conf", v, p->slurm_conf, sizeof p->slurm_conf, e);
	v = c ? cloud_conf_get(c, NULL, NULL, "bin") : NULL;
	if (!rc && v)
		rc = setting("bin", v, p->bin, sizeof p->bin, e);
	snprintf(p->workdir, sizeof p->workdir, "%s/slurm",
		 p->h ? p->h->state_dir : "");
	v = c ? cloud_conf_get(c, NULL, NULL, "partitions") : NULL;
	while (!rc && v && *v) {
		size_t len = strcspn(v, ", ");

		if (len && p->nonly == SLURM_PARTS_MAX)
			return sr_err_set(e, -EINVAL, "providers.slurm.partitions:"
					  " more than %d", SLURM_PARTS_MAX);
		if (len >= sizeof p->only[0])
			return sr_err_set(e, -EINVAL, "providers.slurm.partitions:"
					  " '%.*s' is too long", (int)len, v);
		if (len)
			snprintf(p->only[p->nonly++], sizeof p->only[0], "%.*s",
				 (int)len, v);
		v += len + (v[len] != '\0');
	}
	return rc;
}

static int p_open(const struct cloud_host *h, const struct cloud_conf *conf,
		  const struct cloud_conf_region *region,
		  struct cloud_provider *out, struct sr_err *e)
{
	struct slurm_prov *p = calloc(1, sizeof *p);
	int rc;

	(void)region;
	memset(out, 0, sizeof *out);
	if (!p)
		return sr_err_set(e, -ENOMEM, "out of memory");
	p->h = h;
	pthread_mutex_init(&p->mu, NULL);
	p->mu_init = true;
	rc = parse_conf(p, conf, e);
	if (rc)
		goto fail;
	rc = sr_fs_mkdir_p(p->workdir, 0700);
	if (rc) {
		sr_err_set(e, rc, "%s: %s", p->workdir, sr_strerror(rc));
		goto fail;
	}
	snprintf(p->script, sizeof p->script, "%s/spotrun-node.sh", p->workdir);
	rc = sr_fs_write_atomic(p->script, NODE_SCRIPT, sizeof NODE_SCRIPT - 1,
				0700, e);
	if (rc)
		goto fail;
	rc = slurm__refresh(p, true, e);
	if (rc)
		goto fail;
	sr_info("slurm", "cluster read", "partitions=%d workdir=%s",
		p->nparts, p->workdir);
	out->mkt = (struct cloud_market){ &slurm_mkt, p };
	out->drv = (struct cloud_driver){ &slurm__drv_ops, p };
	out->ops = &slurm_ops;
	out->st = p;
	return 0;
fail:
	p_destroy(p);
	return rc;
}

/* A provider state of conf's settings, outside the daemon (no state
 * dir), with the cluster's partitions read: spotrun check and plan.
 * *out: p_destroy() it, also after an error. */
static int read_cluster(const struct cloud_conf *conf, struct slurm_prov **out,
			struct sr_err *e)
{
	struct slurm_prov *p = calloc(1, sizeof *p);
	int rc;

	*out = p;
	if (!p)
		return sr_err_set(e, -ENOMEM, "out of memory");
	pthread_mutex_init(&p->mu, NULL);
	p->mu_init = true;
	rc = parse_conf(p, conf, e);
	return rc ? rc : slurm__refresh(p, false, e);
}

static int p_check(const struct cloud_conf *conf,
		   const struct cloud_conf_region *region,
		   struct cloud_check *out, struct sr_err *e)
{
	struct slurm_prov *p = NULL;
	size_t k = 0;
	int rc;

	(void)region;
	memset(out, 0, sizeof *out);
	rc = read_cluster(conf, &p, e);
	if (!rc) {
		k = (size_t)snprintf(out->detail, sizeof out->detail,
				     "controller answers; partitions:");
		for (int i = 0; i < p->nparts && k < sizeof out->detail; i++)
			k += (size_t)snprintf(out->detail + k, sizeof out->detail
					      - k, " %s (%d nodes, %d idle)",
					      p->parts[i].name, p->parts[i].nodes,
					      p->parts[i].idle);
	}
	p_destroy(p);
	return rc;
}

/* spotrun plan: the partitions now, each with its queue estimate for a
 * job of `nodes` nodes (slurm_queue.c). */
static int p_own_offerings(const struct cloud_conf *conf, int nodes,
			   struct cloud_offering **out, size_t *n,
			   struct sr_err *e)
{
	struct slurm_prov *p = NULL;
	int rc = read_cluster(conf, &p, e);

	*out = NULL;
	*n = 0;
	if (!rc && !(*out = calloc((size_t)p->nparts + 1, sizeof **out)))
		rc = sr_err_set(e, -ENOMEM, "out of memory");
	for (int i = 0; !rc && i < p->nparts; i++) {
		struct slurm_part *pt = &p->parts[i];

		if (!pt->up)
			continue;
		rc = slurm__queue_read(p, pt, nodes > 0 ? nodes : 1, &pt->wait_s,
				       pt->wait_basis, sizeof pt->wait_basis, e);
		if (!rc)
			offering(p, i, &(*out)[(*n)++]);
	}
	p_destroy(p);
	if (rc) {
		free(*out);
		*out = NULL;
		*n = 0;
	}
	return rc;
}

static const char *const slurm_keys[] = {
	"price_per_gpu_h", "partitions", "cluster", "accelerator", "time",
	"notice_lead", "slurm_conf", "bin", NULL
};
static const char *const slurm_infra[] = { "slurm", NULL };

const struct cloud_prov_def prov_slurm = {
	.name = "slurm",
	.summary = "a Slurm cluster: partitions as pools, nodes as batch jobs",
	.caps = CLOUD_CAP_TAGS | CLOUD_CAP_QUEUES | CLOUD_CAP_SHARED_DISK |
		CLOUD_CAP_GROUP_ALLOC,
	.regional = false,
	.conf_keys = slurm_keys,
	.infra = slurm_infra,
	.notice_source = "signal",
	.notice_ack = false,
	.open = p_open,
	.check = p_check,
	.own_offerings = p_own_offerings,
};
