/*
 * ec2emu.c - the EC2 emulator's state, its changing actions
 * (RunInstances, TerminateInstances), the clock's transitions and the
 * control calls (ec2emu.h).  Read-only actions: ec2emu_read.c; request
 * parameters and XML answers: ec2emu_xml.c; HTTP and IMDS: ec2emu_http.c.
 *
 * Instance states and what moves them (cloud time, checked by the clock
 * thread every TICK_MS):
 *
 *   pending --(launch + boot_s)--> running
 *   running (spot) --(pool has no capacity | ec2emu_preempt)--> notice set
 *   notice set --(notice + notice_s)--> terminated
 *                          (session killed, Server.SpotInstanceTermination)
 *   pending|running --TerminateInstances--> shutting-down
 *   shutting-down --(next tick: session killed)--> terminated
 *                          (Client.UserInitiatedShutdown)
 *
 * A terminated instance's disk goes with it, as an EBS root volume with
 * DeleteOnTermination: the emulator empties <dir>/root (the node's
 * token, work dir and checkpoints) but for each node dir's agent.log,
 * kept for debugging.
 */
#include <dirent.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/rand.h>

#include "cloud/compute.h"
#include "common/fsutil.h"
#include "common/money.h"
#include "common/sigv4.h"
#include "common/timeutil.h"
#include "common/proc.h"
#include "ec2emu_int.h"

/* ---- pools ------------------------------------------------------------ */

bool ec2emu__spot_capacity(const struct ec2emu *m, const struct emu_pool *p,
			   double sim)
{
	for (size_t i = 0; i < m->ncapov; i++)
		if (strcmp(m->capov[i].zone, p->zone) == 0 &&
		    strcmp(m->capov[i].type, p->type) == 0)
			return m->capov[i].cap == EC2EMU_PLENTY;
	return localmkt_available(m->mkt, p->index, sim);
}

static const struct emu_pool *pool_find(const struct ec2emu *m,
					const char *type, const char *zone)
{
	for (size_t i = 0; i < m->npools; i++)
		if (strcmp(m->pools[i].type, type) == 0 &&
		    (zone == NULL || strcmp(m->pools[i].zone, zone) == 0))
			return &m->pools[i];
	return NULL;
}

sr_micros ec2emu__spot_price(const struct ec2emu *m, const struct emu_pool *p,
			    double sim)
{
	struct cloud_offering o;

	if (localmkt_describe(m->mkt, p->index, sim, &o) < 0)
		return -1;
	return o.spot_per_h;
}

/* ---- RunInstances ----------------------------------------------------- */

static int inst_tags(struct emu_inst *in, const struct emu_params *p)
{
	for (int s = 1; s <= 8; s++) {
		const char *rt = ec2emu__paramf(p, "TagSpecification.%d.ResourceType", s);

		if (rt == NULL)
			break;
		if (strcmp(rt, "instance") != 0)
			continue;
		for (int t = 1; t <= EMU_MAX_TAGS && in->ntags < EMU_MAX_TAGS; t++) {
			const char *k = ec2emu__paramf(p, "TagSpecification.%d.Tag.%d.Key", s, t);
			const char *v = ec2emu__paramf(p, "TagSpecification.%d.Tag.%d.Value", s, t);

			if (k == NULL)
				break;
			in->tag_k[in->ntags] = strdup(k);
			in->tag_v[in->ntags] = strdup(v != NULL ? v : "");
			in->ntags++;
			if (in->tag_k[in->ntags - 1] == NULL ||
			    in->tag_v[in->ntags - 1] == NULL)
				return -ENOMEM;
		}
	}
	return 0;
}

static void inst_free(struct emu_inst *in)
{
	for (size_t t = 0; t < in->ntags; t++) {
		free(in->tag_k[t]);
		free(in->tag_v[t]);
	}
	free(in);
}

static int gate_ok(void *ud, int64_t pid, int64_t start)
{
	(void)ud;
	(void)pid;
	(void)start;
	return 0;
}

/* Write the user-data and start it in a new session. */
static int launch_process(struct ec2emu *m, struct emu_inst *in,
			  const char *user_data_b64, struct sr_err *e)
{
	char path[700], root[700], log[700], env_root[760], env_imds[200];
	char env_home[760], env_path[] = "PATH=/usr/local/bin:/usr/bin:/bin";
	char env_hide[700];
	unsigned char *ud = NULL;
	size_t b64len = user_data_b64 != NULL ? strlen(user_data_b64) : 0;
	int udlen = 0, rc;
	FILE *f;

	snprintf(in->dir, sizeof(in->dir), "%s/%s", m->work_dir, in->id);
	snprintf(root, sizeof(root), "%s/root", in->dir);
	snprintf(path, sizeof(path), "%s/user-data", in->dir);
	snprintf(log, sizeof(log), "%s/console.log", in->dir);
	if (mkdir(in->dir, 0700) != 0 || mkdir(root, 0700) != 0)
		return sr_err_set(e, -errno, "%s: %s", in->dir, strerror(errno));
	ud = malloc(b64len / 4 * 3 + 4);
	if (ud == NULL)
		return sr_err_set(e, -ENOMEM, "out of memory");
	if (b64len > 0) {
		udlen = EVP_DecodeBlock(ud, (const unsigned char *)user_data_b64,
					(int)b64len);
		if (udlen < 0 || b64len % 4 != 0) {
			free(ud);
			return sr_err_set(e, -EINVAL, "UserData: not base64");
		}
		while (udlen > 0 && b64len >= 1 && user_data_b64[b64len - 1] == '=') {
			udlen--; /* EVP_DecodeBlock counts the padding */
			b64len--;
		}
	}
	f = fopen(path, "w");
	if (f == NULL) {
		free(ud);
		return sr_err_set(e, -errno, "%s: %s", path, strerror(errno));
	}
	if (udlen > 0)
		fwrite(ud, 1, (size_t)udlen, f);
	else
		fputs("#!/bin/sh\nexec sleep 1000000\n", f); /* an idle machine */
	free(ud);
	if (fclose(f) != 0)
		return sr_err_set(e, -EIO, "%s: write failed", path);
	snprintf(env_root, sizeof(env_root), "SPOTRUN_NODE_ROOT=%s", root);
	snprintf(env_imds, sizeof(env_imds), "SPOTRUN_IMDS_URL=%s/imds/%s",
		 m->url, in->id);
	snprintf(env_home, sizeof(env_home), "HOME=%s", root);
	/* an instance sees no other instance's disk (nor its own user-data
	 * file): the bootstrap script hides the emulator's work dir from
	 * the workload */
	snprintf(env_hide, sizeof(env_hide), "SPOTRUN_EMU_HIDE=%s", m->work_dir);
	{
		char *argv[] = { "/bin/sh", path, NULL };
		char *envp[] = { env_path, env_root, env_imds, env_home, env_hide,
				 NULL };

		rc = sr_proc_spawn(argv, envp, in->dir, log, gate_ok, NULL,
				   &in->pid, &in->pid_start, e);
	}
	return rc;
}

static void run_instances(struct ec2emu *m, const struct emu_params *p,
			  struct emu_answer *a)
{
	const char *image = ec2emu__param(p, "ImageId");
	const char *type = ec2emu__param(p, "InstanceType");
	const char *zone = ec2emu__param(p, "Placement.AvailabilityZone");
	const char *token = ec2emu__param(p, "ClientToken");
	const char *market = ec2emu__param(p, "InstanceMarketOptions.MarketType");
	const char *maxp = ec2emu__param(p, "InstanceMarketOptions.SpotOptions.MaxPrice");
	const char *minc = ec2emu__param(p, "MinCount");
	const char *maxc = ec2emu__param(p, "MaxCount");
	const struct emu_pool *pool = NULL;
	struct emu_inst *in = NULL;
	struct sr_err e = { 0 };
	unsigned char digest[EMU_DIGEST_LEN];
	double now = ec2emu__now(m);
	bool spot = market != NULL && strcmp(market, "spot") == 0;
	FILE *f;

	if (image == NULL || type == NULL || minc == NULL || maxc == NULL) {
		ec2emu__fail(a, 400, "MissingParameter", "ImageId, InstanceType, MinCount "
		     "and MaxCount are required");
		return;
	}
	if (strcmp(minc, "1") != 0 || strcmp(maxc, "1") != 0) {
		ec2emu__fail(a, 400, "InvalidParameterValue", "the emulator starts exactly "
		     "one instance per call (MinCount=MaxCount=1)");
		return;
	}
	if (token != NULL && strlen(token) >= CLOUD_IDEM_MAX) {
		ec2emu__fail(a, 400, "InvalidParameterValue", "ClientToken: at most 64 "
		     "characters");
		return;
	}
	ec2emu__params_digest(p, digest);
	for (size_t i = 0; token != NULL && i < m->ninst; i++) {
		if (strcmp(m->inst[i]->token, token) != 0)
			continue;
		if (memcmp(m->inst[i]->params, digest, sizeof(digest)) != 0) {
			ec2emu__fail(a, 400, "IdempotentParameterMismatch",
				     "Arguments on this idempotent request are "
				     "inconsistent with arguments used in previous "
				     "request(s).");
			return;
		}
		in = m->inst[i]; /* idempotent repeat */
		goto answer;
	}
	if (zone != NULL) {
		pool = pool_find(m, type, zone);
		if (pool == NULL) {
			ec2emu__fail(a, 400, "Unsupported", "Your requested instance type "
			     "(%s) is not supported in your requested Availability "
			     "Zone (%s).", type, zone);
			return;
		}
	} else {
		for (size_t i = 0; i < m->npools && pool == NULL; i++)
			if (strcmp(m->pools[i].type, type) == 0 &&
			    (!spot || ec2emu__spot_capacity(m, &m->pools[i], now)))
				pool = &m->pools[i];
		if (pool == NULL)
			pool = pool_find(m, type, NULL);
		if (pool == NULL) {
			ec2emu__fail(a, 400, "InvalidParameterValue", "Value (%s) for "
			     "parameter instanceType is invalid in region %s.",
			     type, m->region);
			return;
		}
	}
	if ((spot && !ec2emu__spot_capacity(m, pool, now)) ||
	    ec2emu__capacity_fails(m)) {
		ec2emu__fail(a, 500, "InsufficientInstanceCapacity", "We currently do not "
		     "have sufficient %s capacity in the Availability Zone you "
		     "requested (%s).", type, pool->zone);
		return;
	}
	if (spot && maxp != NULL) {
		sr_micros cap = 0, price = ec2emu__spot_price(m, pool, now);

		if (sr_money_parse(maxp, &cap, NULL) < 0) {
			ec2emu__fail(a, 400, "InvalidParameterValue", "MaxPrice: '%s' is "
			     "not a price", maxp);
			return;
		}
		if (price > cap) {
			ec2emu__fail(a, 400, "SpotMaxPriceTooLow", "Your Spot request price "
			     "of %s is lower than the minimum required Spot request "
			     "fulfillment price of %lld.%06lld.", maxp,
			     (long long)(price / SR_MICROS_PER_USD),
			     (long long)(price % SR_MICROS_PER_USD));
			return;
		}
	}
	if (ec2emu__over_quota(m, spot)) {
		if (spot)
			ec2emu__fail(a, 400, "MaxSpotInstanceCountExceeded", "Max spot "
			     "instance count exceeded");
		else
			ec2emu__fail(a, 400, "InstanceLimitExceeded", "You have "
			     "requested more instances (%d) than your current "
			     "instance limit of %d allows.", m->ondemand_quota + 1,
			     m->ondemand_quota);
		return;
	}
	if (m->ninst == m->capinst) {
		size_t nc = m->capinst ? m->capinst * 2 : 16;
		struct emu_inst **t = realloc(m->inst, nc * sizeof(*t));

		if (t == NULL) {
			ec2emu__fail(a, 500, "InternalError", "out of memory");
			return;
		}
		m->inst = t;
		m->capinst = nc;
	}
	in = calloc(1, sizeof(*in));
	if (in == NULL || inst_tags(in, p) < 0) {
		if (in != NULL)
			inst_free(in);
		ec2emu__fail(a, 500, "InternalError", "out of memory");
		return;
	}
	in->seq = ++m->seq;
	snprintf(in->id, sizeof(in->id), "i-%05x%012x", m->id_salt & 0xfffff,
		 in->seq);
	snprintf(in->token, sizeof(in->token), "%s", token != NULL ? token : "");
	memcpy(in->params, digest, sizeof(digest));
	snprintf(in->image, sizeof(in->image), "%.*s", (int)sizeof(in->image) - 1,
		 image);
	snprintf(in->type, sizeof(in->type), "%s", pool->type);
	snprintf(in->zone, sizeof(in->zone), "%s", pool->zone);
	snprintf(in->subnet, sizeof(in->subnet), "subnet-emu-%s", pool->zone);
	in->spot = spot;
	in->pool = pool;
	in->launch_sim = now;
	in->notice_sim = -1;
	in->state = EMU_PENDING;
	ec2emu__visible_from(m, in);
	snprintf(in->reason, sizeof(in->reason), "pending");
	RAND_bytes((unsigned char *)&in->imds_salt, sizeof(in->imds_salt));
	if (launch_process(m, in, ec2emu__param(p, "UserData"), &e) < 0) {
		inst_free(in);
		ec2emu__fail(a, 500, "InternalError", "could not start the instance: %s",
		     e.msg);
		return;
	}
	m->inst[m->ninst++] = in;
answer:
	f = ec2emu__begin(a, "RunInstancesResponse");
	if (f == NULL)
		return;
	fprintf(f, "  <reservationId>r-emu%012x</reservationId>\n"
		   "  <ownerId>000000000000</ownerId>\n  <groupSet/>\n"
		   "  <instancesSet>\n", in->seq);
	ec2emu__put_instance(m, f, in);
	fputs("  </instancesSet>\n", f);
	ec2emu__end(a, f, "RunInstancesResponse");
}

/* ---- TerminateInstances ----------------------------------------------- */

static struct emu_inst *inst_by_id(struct ec2emu *m, const char *id)
{
	for (size_t i = 0; i < m->ninst; i++)
		if (strcmp(m->inst[i]->id, id) == 0)
			return m->inst[i];
	return NULL;
}

static void terminate_instances(struct ec2emu *m, const struct emu_params *p,
				struct emu_answer *a)
{
	FILE *f;

	if (ec2emu__paramf(p, "InstanceId.1") == NULL) {
		ec2emu__fail(a, 400, "MissingParameter", "The request must contain the "
		     "parameter InstanceId");
		return;
	}
	for (int k = 1;; k++) {
		const char *id = ec2emu__paramf(p, "InstanceId.%d", k);

		if (id == NULL)
			break;
		if (inst_by_id(m, id) == NULL || !ec2emu__visible(inst_by_id(m, id))) {
			ec2emu__fail(a, 400, "InvalidInstanceID.NotFound", "The instance ID "
			     "'%s' does not exist", id);
			return;
		}
	}
	f = ec2emu__begin(a, "TerminateInstancesResponse");
	if (f == NULL)
		return;
	fputs("  <instancesSet>\n", f);
	for (int k = 1;; k++) {
		const char *id = ec2emu__paramf(p, "InstanceId.%d", k);
		struct emu_inst *in;
		int prev;

		if (id == NULL)
			break;
		in = inst_by_id(m, id);
		prev = in->state;
		if (in->state < EMU_SHUTTING_DOWN) {
			in->state = EMU_SHUTTING_DOWN;
			snprintf(in->reason, sizeof(in->reason),
				 "Client.UserInitiatedShutdown");
		}
		fprintf(f, "    <item><instanceId>%s</instanceId><currentState><code>%d"
			   "</code><name>%s</name></currentState><previousState><code>"
			   "%d</code><name>%s</name></previousState></item>\n", in->id,
			ec2emu__state_code(in->state), ec2emu__state_name(in->state),
			ec2emu__state_code(prev), ec2emu__state_name(prev));
	}
	fputs("  </instancesSet>\n", f);
	ec2emu__end(a, f, "TerminateInstancesResponse");
}

/* ---- dispatch, clock, control ----------------------------------------- */

void ec2emu__action(struct ec2emu *m, const struct emu_params *p,
		    struct emu_answer *a)
{
	const char *action = ec2emu__param(p, "Action");
	const char *version = ec2emu__param(p, "Version");
	enum ec2emu_action act;

	memset(a, 0, sizeof(*a));
	if (action == NULL) {
		ec2emu__fail(a, 400, "MissingAction", "The request must contain the "
		     "parameter Action");
		return;
	}
	if (version == NULL || strcmp(version, "2016-11-15") != 0) {
		ec2emu__fail(a, 400, "InvalidParameterValue", "Version: expected "
		     "2016-11-15");
		return;
	}
	pthread_mutex_lock(&m->mu);
	act = ec2emu__action_of(action);
	if (ec2emu__throttled(m, act, p))
		ec2emu__fail(a, 503, "RequestLimitExceeded", "Request limit "
		     "exceeded.");
	else if (strcmp(action, "RunInstances") == 0)
		run_instances(m, p, a);
	else if (strcmp(action, "DescribeInstances") == 0)
		ec2emu__describe_instances(m, p, a);
	else if (strcmp(action, "TerminateInstances") == 0)
		terminate_instances(m, p, a);
	else if (strcmp(action, "DescribeSpotPriceHistory") == 0)
		ec2emu__spot_price_history(m, p, a);
	else if (strcmp(action, "DescribeInstanceTypeOfferings") == 0)
		ec2emu__type_offerings(m, p, a);
	else
		ec2emu__fail(a, 400, "InvalidAction", "The action %s is not valid for "
		     "this web service.", action);
	ec2emu__count(m, act, p, a);
	pthread_mutex_unlock(&m->mu);
}

/* rm -r every entry of `dir` but files named `keep`; with `descend`,
 * a subdirectory is emptied that way instead (one level). */
static void empty_dir(const char *dir, const char *keep, bool descend)
{
	char path[1000];
	struct dirent *de;
	DIR *d = opendir(dir);

	if (d == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (descend && de->d_type == DT_DIR)
			empty_dir(path, keep, false);
		else if (strcmp(de->d_name, keep) != 0)
			sr_fs_rm_tree(path);
	}
	closedir(d);
}

/* The instance's disk goes (see the top of this file). */
static void drop_disk(const struct emu_inst *in)
{
	char root[700];

	snprintf(root, sizeof(root), "%s/root", in->dir);
	empty_dir(root, "agent.log", true);
}

static void kill_inst(struct emu_inst *in, const char *reason)
{
	if (in->pid > 0)
		sr_proc_kill_session(in->pid, in->pid_start);
	drop_disk(in);
	in->pid = 0;
	in->state = EMU_TERMINATED;
	snprintf(in->reason, sizeof(in->reason), "%s", reason);
}

void ec2emu__tick(struct ec2emu *m)
{
	double now;

	pthread_mutex_lock(&m->mu);
	now = ec2emu__now(m);
	for (size_t i = 0; i < m->ninst; i++) {
		struct emu_inst *in = m->inst[i];

		if (in->state == EMU_PENDING && now >= in->launch_sim + m->boot_s) {
			in->state = EMU_RUNNING;
			in->reason[0] = '\0';
		}
		if (in->state == EMU_RUNNING && in->spot && in->notice_sim < 0 &&
		    !ec2emu__spot_capacity(m, in->pool, now))
			in->notice_sim = now;
		if (in->state == EMU_RUNNING && in->notice_sim >= 0 &&
		    now >= in->notice_sim + m->notice_s)
			kill_inst(in, "Server.SpotInstanceTermination");
		if (in->state == EMU_SHUTTING_DOWN)
			kill_inst(in, "Client.UserInitiatedShutdown");
	}
	pthread_mutex_unlock(&m->mu);
	sr_proc_reap();
}

int ec2emu_preempt(struct ec2emu *m, const char *id)
{
	struct emu_inst *in;
	int rc = -SR_ENOTFOUND;

	pthread_mutex_lock(&m->mu);
	in = inst_by_id(m, id);
	if (in != NULL && in->spot && in->state <= EMU_RUNNING) {
		if (in->notice_sim < 0)
			in->notice_sim = ec2emu__now(m);
		rc = 0;
	}
	pthread_mutex_unlock(&m->mu);
	return rc;
}

int ec2emu_reveal(struct ec2emu *m, const char *id)
{
	struct emu_inst *in;
	int rc = -SR_ENOTFOUND;

	pthread_mutex_lock(&m->mu);
	in = inst_by_id(m, id);
	if (in != NULL) {
		in->visible_ns = sr_time_mono_ns();
		rc = 0;
	}
	pthread_mutex_unlock(&m->mu);
	return rc;
}

int ec2emu_reclaim_all(struct ec2emu *m)
{
	struct { char zone[40], type[48]; } pools[EMU_MAX_NOCAP];
	size_t np = 0;
	int n = 0;

	pthread_mutex_lock(&m->mu);
	for (size_t i = 0; i < m->ninst; i++) {
		struct emu_inst *in = m->inst[i];

		if (!in->spot || in->state > EMU_RUNNING)
			continue;
		if (in->notice_sim < 0)
			in->notice_sim = ec2emu__now(m);
		n++;
		if (np < EMU_MAX_NOCAP) {
			snprintf(pools[np].zone, sizeof(pools[np].zone), "%s", in->zone);
			snprintf(pools[np].type, sizeof(pools[np].type), "%s", in->type);
			np++;
		}
	}
	pthread_mutex_unlock(&m->mu);
	for (size_t i = 0; i < np; i++)
		ec2emu_set_capacity(m, pools[i].zone, pools[i].type, EC2EMU_NONE);
	return n;
}

int ec2emu_set_capacity(struct ec2emu *m, const char *zone,
			const char *instance_type, enum ec2emu_capacity c)
{
	size_t i;
	int rc = 0;

	pthread_mutex_lock(&m->mu);
	for (i = 0; i < m->ncapov; i++)
		if (strcmp(m->capov[i].zone, zone) == 0 &&
		    strcmp(m->capov[i].type, instance_type) == 0)
			break;
	if (c == EC2EMU_TRACE) {
		if (i < m->ncapov)
			m->capov[i] = m->capov[--m->ncapov];
		goto out;
	}
	if (i == m->ncapov) {
		if (m->ncapov == EMU_MAX_NOCAP) {
			rc = -ENOSPC;
			goto out;
		}
		m->ncapov++;
	}
	snprintf(m->capov[i].zone, sizeof(m->capov[i].zone), "%s", zone);
	snprintf(m->capov[i].type, sizeof(m->capov[i].type), "%s", instance_type);
	m->capov[i].cap = (int)c;
out:
	pthread_mutex_unlock(&m->mu);
	return rc;
}

int ec2emu__imds_notice(struct ec2emu *m, const char *id, char *json,
			size_t len)
{
	struct emu_inst *in;
	int rc = -SR_ENOTFOUND;
	char ts[40];

	pthread_mutex_lock(&m->mu);
	in = inst_by_id(m, id);
	if (in != NULL && in->notice_sim >= 0 && in->state <= EMU_RUNNING) {
		/* the instance's clock is the wall clock: at time_scale
		 * 1800 the notice still reads notice_s / 1800 ahead */
		sr_time_format_rfc3339(ec2emu__real_ns(m, in->notice_sim +
						       m->notice_s), 0, ts,
				       sizeof(ts));
		snprintf(json, len, "{\"action\":\"terminate\",\"time\":\"%s\"}", ts);
		rc = 0;
	}
	pthread_mutex_unlock(&m->mu);
	return rc;
}

bool ec2emu__imds_token_ok(struct ec2emu *m, const char *id, const char *tok,
			   char *issue, size_t len)
{
	struct emu_inst *in;
	bool ok = false;
	char want[48];

	pthread_mutex_lock(&m->mu);
	in = inst_by_id(m, id);
	if (in != NULL) {
		snprintf(want, sizeof(want), "emu-%s-%08x", in->id, in->imds_salt);
		if (issue != NULL)
			snprintf(issue, len, "%s", want);
		ok = tok != NULL && strcmp(tok, want) == 0;
		if (issue != NULL)
			ok = true;
	}
	pthread_mutex_unlock(&m->mu);
	return ok;
}

void ec2emu__free_state(struct ec2emu *m)
{
	for (size_t i = 0; i < m->ninst; i++) {
		struct emu_inst *in = m->inst[i];

		if (in->pid > 0)
			sr_proc_kill_session(in->pid, in->pid_start);
		inst_free(in);
	}
	free(m->inst);
	free(m->pools);
	localmkt_free(m->mkt);
	sr_proc_reap();
}
