/*
 * ec2emu_limits.c - the EC2 emulator behaving like EC2 where it hurts
 * (ec2emu.h, "EC2 where it hurts"): request throttling, eventual
 * consistency, capacity and quota failures, and the request counters and
 * log that measure a client.
 *
 * Throttling.  EC2 meters each account and region with token buckets
 * (docs.aws.amazon.com/ec2/latest/devguide/ec2-api-throttling.html):
 *
 *   request tokens (one per call)              bucket   refill/s
 *     mutating actions (Run, Terminate)             50         5
 *     non-mutating actions (Describe*)             100        20
 *     unfiltered and unpaginated non-mutating       50        10
 *   resource tokens (one per instance)
 *     RunInstances                                1000         2
 *     TerminateInstances                          1000        20
 *
 * A call that finds its bucket empty costs nothing and is answered HTTP
 * 503 RequestLimitExceeded.  Buckets refill on the real (monotonic)
 * clock whatever the cloud clock's scale: a rate limit is per real
 * second.  throttle_scale multiplies sizes and rates (a test makes them
 * small); background_rps drains the non-mutating bucket as the account's
 * other tools would (the bucket is shared by everyone in the account),
 * and bucket_fill starts the buckets part empty, as they left them.
 *
 * Eventual consistency.  A new instance becomes visible to
 * DescribeInstances (and TerminateInstances) only after a delay drawn
 * uniformly from [0, consistency_s) real seconds: until then a filter
 * does not list it and naming its id answers InvalidInstanceID.NotFound.
 *
 * Capacity and quota.  capacity_fail is the probability that a launch
 * into a pool answers InsufficientInstanceCapacity (spot or on-demand)
 * beyond what the trace says; spot_quota / ondemand_quota cap the
 * instances not yet terminated (MaxSpotInstanceCountExceeded,
 * InstanceLimitExceeded: the emulator counts instances, not vCPUs).
 *
 * Randomness comes from one splitmix64 stream seeded with opts.seed, so
 * a run is repeatable given the order of requests.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/timeutil.h"
#include <openssl/evp.h>
#include "ec2emu_int.h"

static const struct {
	double cap, rate;
} bucket_def[EMU_NBUCKETS] = {
	[EMU_B_MUTATING] = { 50, 5 },
	[EMU_B_READ] = { 100, 20 },
	[EMU_B_UNFILTERED] = { 50, 10 },
	[EMU_B_RUN_RES] = { 1000, 2 },
	[EMU_B_TERM_RES] = { 1000, 20 },
};

static const char *const action_names[EC2EMU_NACTIONS] = {
	[EC2EMU_A_RUN] = "RunInstances",
	[EC2EMU_A_DESCRIBE] = "DescribeInstances",
	[EC2EMU_A_TERMINATE] = "TerminateInstances",
	[EC2EMU_A_SPOT_PRICES] = "DescribeSpotPriceHistory",
	[EC2EMU_A_OFFERINGS] = "DescribeInstanceTypeOfferings",
	[EC2EMU_A_OTHER] = "other",
};

const char *ec2emu_action_name(enum ec2emu_action a)
{
	return a < EC2EMU_NACTIONS ? action_names[a] : "other";
}

enum ec2emu_action ec2emu__action_of(const char *name)
{
	for (int i = 0; i < EC2EMU_A_OTHER; i++)
		if (name != NULL && strcmp(name, action_names[i]) == 0)
			return (enum ec2emu_action)i;
	return EC2EMU_A_OTHER;
}

double ec2emu__rand(struct ec2emu *m)
{
	uint64_t z = (m->rng += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	return (double)(z >> 11) / 9007199254740992.0;
}

void ec2emu__limits_init(struct ec2emu *m, const struct ec2emu_opts *o)
{
	double scale = o->throttle_scale > 0 ? o->throttle_scale : 1.0;
	int64_t now = sr_time_mono_ns();

	m->throttle = o->throttle;
	m->background_rps = o->background_rps > 0 ? o->background_rps : 0;
	m->consistency_s = o->consistency_s > 0 ? o->consistency_s : 0;
	m->capacity_fail = o->capacity_fail > 0 ? o->capacity_fail : 0;
	m->spot_quota = o->spot_quota;
	m->ondemand_quota = o->ondemand_quota;
	m->rng = o->seed;
	m->run_latency_ms = o->run_latency_ms > 0 ? o->run_latency_ms : 0;
	for (int i = 0; i < EMU_NBUCKETS; i++) {
		m->bucket[i].cap = bucket_def[i].cap * scale;
		m->bucket[i].rate = bucket_def[i].rate * scale;
		m->bucket[i].tokens = m->bucket[i].cap *
				      (o->bucket_fill > 0 && o->bucket_fill < 1
					       ? o->bucket_fill : 1.0);
		m->bucket[i].at_ns = now;
	}
}

static void refill(struct ec2emu *m, int b, int64_t now)
{
	struct emu_bucket *k = &m->bucket[b];
	double rate = k->rate;

	if (b == EMU_B_READ)
		rate -= m->background_rps;
	if (rate < 0)
		rate = 0;
	k->tokens += rate * (double)(now - k->at_ns) / 1e9;
	if (k->tokens > k->cap)
		k->tokens = k->cap;
	k->at_ns = now;
}

/* Does p filter or paginate (a call EC2 meters as non-mutating rather
 * than unfiltered-and-unpaginated)? */
static bool filtered(const struct emu_params *p)
{
	return ec2emu__param(p, "Filter.1.Name") != NULL ||
	       ec2emu__param(p, "InstanceId.1") != NULL ||
	       ec2emu__param(p, "InstanceType.1") != NULL ||
	       ec2emu__param(p, "MaxResults") != NULL ||
	       ec2emu__param(p, "NextToken") != NULL;
}

static int count_ids(const struct emu_params *p)
{
	int n = 0;

	while (ec2emu__paramf(p, "InstanceId.%d", n + 1) != NULL)
		n++;
	return n;
}

bool ec2emu__throttled(struct ec2emu *m, enum ec2emu_action act,
		       const struct emu_params *p)
{
	int64_t now;
	int req, res = -1;
	double need = 1;

	if (!m->throttle)
		return false;
	now = sr_time_mono_ns();
	switch (act) {
	case EC2EMU_A_RUN:
		req = EMU_B_MUTATING;
		res = EMU_B_RUN_RES;
		break;
	case EC2EMU_A_TERMINATE:
		req = EMU_B_MUTATING;
		res = EMU_B_TERM_RES;
		need = count_ids(p) > 0 ? count_ids(p) : 1;
		break;
	case EC2EMU_A_DESCRIBE:
	case EC2EMU_A_SPOT_PRICES:
	case EC2EMU_A_OFFERINGS:
		req = filtered(p) ? EMU_B_READ : EMU_B_UNFILTERED;
		break;
	default:
		req = EMU_B_MUTATING;
		break;
	}
	refill(m, req, now);
	if (res >= 0)
		refill(m, res, now);
	if (m->bucket[req].tokens < 1 ||
	    (res >= 0 && m->bucket[res].tokens < need))
		return true;
	m->bucket[req].tokens -= 1;
	if (res >= 0)
		m->bucket[res].tokens -= need;
	return false;
}

void ec2emu__visible_from(struct ec2emu *m, struct emu_inst *in)
{
	double d = m->consistency_s > 0 ? ec2emu__rand(m) * m->consistency_s : 0;

	in->visible_ns = sr_time_mono_ns() + (int64_t)(d * 1e9);
}

bool ec2emu__visible(const struct emu_inst *in)
{
	return in->visible_ns <= sr_time_mono_ns();
}

bool ec2emu__capacity_fails(struct ec2emu *m)
{
	return m->capacity_fail > 0 && ec2emu__rand(m) < m->capacity_fail;
}

bool ec2emu__over_quota(const struct ec2emu *m, bool spot)
{
	int quota = spot ? m->spot_quota : m->ondemand_quota, n = 0;

	if (quota <= 0)
		return false;
	for (size_t i = 0; i < m->ninst; i++)
		n += m->inst[i]->spot == spot && m->inst[i]->state != EMU_TERMINATED;
	return n >= quota;
}

/* qsort of parameter indices by name. */
static const struct emu_params *sort_p;

static int by_name(const void *a, const void *b)
{
	return strcmp(sort_p->kv[2 * *(const size_t *)a],
		      sort_p->kv[2 * *(const size_t *)b]);
}

void ec2emu__params_digest(const struct emu_params *p,
			   unsigned char out[EMU_DIGEST_LEN])
{
	size_t *ix = calloc(p->n + 1, sizeof(*ix)), k = 0;
	EVP_MD_CTX *x = EVP_MD_CTX_new();

	memset(out, 0, EMU_DIGEST_LEN);
	if (ix == NULL || x == NULL)
		goto out;
	for (size_t i = 0; i < p->n; i++)
		if (strcmp(p->kv[2 * i], "ClientToken") != 0)
			ix[k++] = i;
	sort_p = p; /* called with m->mu held: one at a time */
	qsort(ix, k, sizeof(*ix), by_name);
	EVP_DigestInit_ex(x, EVP_sha256(), NULL);
	for (size_t i = 0; i < k; i++) {
		EVP_DigestUpdate(x, p->kv[2 * ix[i]], strlen(p->kv[2 * ix[i]]) + 1);
		EVP_DigestUpdate(x, p->kv[2 * ix[i] + 1],
				 strlen(p->kv[2 * ix[i] + 1]) + 1);
	}
	EVP_DigestFinal_ex(x, out, NULL);
out:
	EVP_MD_CTX_free(x);
	free(ix);
}

void ec2emu__count(struct ec2emu *m, enum ec2emu_action act,
		   const struct emu_params *p, const struct emu_answer *a)
{
	/* what a RunInstances carried, for a test to check (never the
	 * user-data) */
	static const char *const keys[] = {
		"ImageId", "InstanceType", "SubnetId", "SecurityGroupId.1", NULL
	};
	struct ec2emu_action_stats *s = &m->stats.action[act];

	s->calls++;
	if (strcmp(a->code, "RequestLimitExceeded") == 0)
		s->throttled++;
	else if (strncmp(a->code, "InvalidInstanceID.NotFound", 26) == 0)
		s->not_found++;
	else if (strcmp(a->code, "InsufficientInstanceCapacity") == 0)
		s->capacity++;
	else if (strcmp(a->code, "IdempotentParameterMismatch") == 0)
		s->mismatch++;
	else if (strcmp(a->code, "MaxSpotInstanceCountExceeded") == 0 ||
		 strcmp(a->code, "InstanceLimitExceeded") == 0)
		s->quota++;
	else if (a->code[0] != '\0')
		s->other_errors++;
	if (m->log != NULL) {
		fprintf(m->log, "%" PRId64 " %s %d %s", sr_time_real_ns(),
			action_names[act], a->status, a->code[0] ? a->code : "-");
		if (p->epoch > 0)
			fprintf(m->log, " epoch=%" PRId64, p->epoch);
		for (int k = 1; act == EC2EMU_A_TERMINATE; k++) {
			const char *id = ec2emu__paramf(p, "InstanceId.%d", k);

			if (id == NULL)
				break;
			fprintf(m->log, " InstanceId=%s", id);
		}
		for (size_t i = 0; act == EC2EMU_A_RUN && keys[i] != NULL; i++) {
			const char *v = ec2emu__param(p, keys[i]);

			if (v != NULL)
				fprintf(m->log, " %s=%s", keys[i], v);
		}
		fputc('\n', m->log);
		fflush(m->log);
	}
}

void ec2emu_stats(struct ec2emu *m, struct ec2emu_stats *out)
{
	pthread_mutex_lock(&m->mu);
	*out = m->stats;
	pthread_mutex_unlock(&m->mu);
}
