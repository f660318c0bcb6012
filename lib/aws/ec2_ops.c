/*
 * ec2_ops.c - the EC2 client and its operations (ec2.h): open/close,
 * RunInstances, DescribeInstances, TerminateInstances,
 * DescribeSpotPriceHistory, DescribeInstanceTypeOfferings (the user-data
 * bootstrap script is ec2_userdata.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libxml/parser.h>
#include <openssl/evp.h>

#include "common/log.h"
#include "common/timeutil.h"
#include "common/url.h"
#include "ec2_int.h"

#define MAX_PAGES 1000

static int dup_opt(const char *s, char **out)
{
	*out = NULL;
	if (s == NULL || s[0] == '\0')
		return 0;
	*out = strdup(s);
	return *out != NULL ? 0 : -ENOMEM;
}

/* Authority ("host" or "host:port", IPv6 in brackets) of an http(s)
 * URL, for the Host header SigV4 signs: *out, or NULL with *e saying
 * why (no user:password@, which SigV4 has no use for). */
static int url_host(const char *url, char **out, struct sr_err *e)
{
	struct sr_url u;
	int rc;

	*out = NULL;
	rc = sr_url_parse_http(url, "EC2 endpoint", &u, e);
	if (rc < 0)
		return rc;
	if (u.user != NULL)
		rc = sr_err_set(e, -EINVAL, "EC2 endpoint: user:password@ in the "
				"URL is not used (credentials come from the AWS "
				"chain); remove it");
	else if (u.path[1] != '\0' || u.query != NULL)
		rc = sr_err_set(e, -EINVAL, "EC2 endpoint %s: a path or query is "
				"not supported", url);
	else
		*out = sr_url_authority(&u);
	if (rc == 0 && *out == NULL)
		rc = sr_err_set(e, -ENOMEM, "out of memory");
	sr_url_free(&u);
	return rc;
}

void ec2_close(struct ec2 *c)
{
	if (c == NULL)
		return;
	free(c->region);
	free(c->endpoint);
	free(c->host);
	sr_awscred_cache_close(c->cred);
	free(c->image_id);
	free(c->subnet_id);
	free(c->security_group_id);
	free(c->key_name);
	free(c->instance_profile);
	free(c->api_url);
	free(c->agent_path);
	free(c);
}

int ec2_open(const struct ec2_opts *o, struct ec2 **out, struct sr_err *e)
{
	struct ec2 *c = calloc(1, sizeof(*c));
	int rc;

	*out = NULL;
	if (c == NULL)
		return sr_err_set(e, -ENOMEM, "out of memory");
	xmlInitParser();
	c->timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : 15000;
	c->max_retries = o->max_retries >= 0 ? o->max_retries : 2;
	if (o->region != NULL && o->region[0] != '\0')
		rc = dup_opt(o->region, &c->region);
	else
		rc = sr_aws_region(&c->region, e);
	if (rc < 0)
		goto fail;
	if (o->endpoint != NULL && o->endpoint[0] != '\0') {
		c->endpoint = strdup(o->endpoint);
		rc = c->endpoint != NULL ? 0 : -ENOMEM;
	} else {
		rc = sr_aws_endpoint("EC2", "ec2", c->region, &c->endpoint, NULL, e);
	}
	if (rc < 0)
		goto fail;
	if (!o->allow_remote && !sr_url_is_loopback(c->endpoint)) {
		rc = sr_err_set(e, -EPERM,
				"EC2 endpoint %s is not on loopback: real instances "
				"cost money, so the aws provider must be enabled "
				"(spotrund --providers aws)", c->endpoint);
		goto fail;
	}
	rc = url_host(c->endpoint, &c->host, e);
	if (rc < 0)
		goto fail;
	rc = sr_awscred_cache_open(&c->cred, e);
	if (rc < 0)
		goto fail;
	{
		struct sr_awscred_state st;

		sr_awscred_cache_state(c->cred, &st);
		snprintf(c->cred_source, sizeof(c->cred_source), "%s", st.source);
	}
	if (dup_opt(o->image_id, &c->image_id) < 0 ||
	    dup_opt(o->subnet_id, &c->subnet_id) < 0 ||
	    dup_opt(o->security_group_id, &c->security_group_id) < 0 ||
	    dup_opt(o->key_name, &c->key_name) < 0 ||
	    dup_opt(o->instance_profile, &c->instance_profile) < 0 ||
	    dup_opt(o->api_url, &c->api_url) < 0 ||
	    dup_opt(o->agent_path != NULL ? o->agent_path : EC2_DEFAULT_AGENT,
		    &c->agent_path) < 0) {
		rc = -ENOMEM;
		goto fail;
	}
	*out = c;
	return 0;
fail:
	if (rc == -ENOMEM)
		sr_err_set(e, rc, "out of memory");
	ec2_close(c);
	return rc;
}

const char *ec2_region(const struct ec2 *c)
{
	return c->region;
}

const char *ec2_endpoint(const struct ec2 *c)
{
	return c->endpoint;
}

const char *ec2_cred_source(const struct ec2 *c)
{
	return c->cred_source;
}

struct sr_awscred_cache *ec2_creds(struct ec2 *c)
{
	return c->cred;
}

void ec2_set_fence(struct ec2 *c, bool (*fence)(void *ud, int64_t epoch),
		   void *ud)
{
	c->fence = fence;
	c->fence_ud = ud;
}

/* ---- RunInstances ----------------------------------------------------- */

static char *base64(const char *s)
{
	size_t n = strlen(s);
	char *out = malloc(4 * ((n + 2) / 3) + 1);

	if (out != NULL)
		EVP_EncodeBlock((unsigned char *)out, (const unsigned char *)s,
				(int)n);
	return out;
}

static void add_tags(struct ec2_params *p, int spec, const char *rtype,
		     const struct cloud_tags *t)
{
	char v[32];

	ec2__paramf(p, rtype, "TagSpecification.%d.ResourceType", spec);
	ec2__paramf(p, CLOUD_TAG_CLUSTER, "TagSpecification.%d.Tag.1.Key", spec);
	ec2__paramf(p, t->cluster, "TagSpecification.%d.Tag.1.Value", spec);
	snprintf(v, sizeof(v), "%lld", (long long)t->job_id);
	ec2__paramf(p, CLOUD_TAG_JOB, "TagSpecification.%d.Tag.2.Key", spec);
	ec2__paramf(p, v, "TagSpecification.%d.Tag.2.Value", spec);
	snprintf(v, sizeof(v), "%lld", (long long)t->node_id);
	ec2__paramf(p, CLOUD_TAG_NODE, "TagSpecification.%d.Tag.3.Key", spec);
	ec2__paramf(p, v, "TagSpecification.%d.Tag.3.Value", spec);
	snprintf(v, sizeof(v), "%d", t->attempt);
	ec2__paramf(p, CLOUD_TAG_ATTEMPT, "TagSpecification.%d.Tag.4.Key", spec);
	ec2__paramf(p, v, "TagSpecification.%d.Tag.4.Value", spec);
}

int ec2_run_instances(struct ec2 *c, const struct ec2_run *r,
		      struct cloud_instance *out, struct cloud_error *err)
{
	struct ec2_params p = { 0 };
	struct cloud_instance *v = NULL;
	char *body = NULL, *ud = NULL, price[32];
	size_t len = 0, n = 0;
	int rc;

	const char *image = r->image_id ? r->image_id : c->image_id;
	const char *subnet = r->subnet_id ? r->subnet_id : c->subnet_id;
	const char *group = r->security_group_id ? r->security_group_id :
			    c->security_group_id;

	memset(out, 0, sizeof(*out));
	if (image == NULL) {
		rc = cloud_err_set(err, CLOUD_EINVALID, NULL,
				   "EC2 RunInstances: no image: set the AMI (the "
				   "task's resources.image_id, the config file's "
				   "providers.aws image, or spotrund --aws-image "
				   "ami-...)");
		goto out;
	}
	if (r->client_token == NULL || r->client_token[0] == '\0' ||
	    strlen(r->client_token) >= CLOUD_IDEM_MAX || r->instance_type == NULL ||
	    r->tags.cluster == NULL) {
		rc = cloud_err_set(err, CLOUD_EINVALID, NULL,
				   "EC2 RunInstances: client token, instance type "
				   "and cluster tag are required");
		goto out;
	}
	ec2__param(&p, "ImageId", image);
	ec2__param(&p, "InstanceType", r->instance_type);
	ec2__param(&p, "MinCount", "1");
	ec2__param(&p, "MaxCount", "1");
	ec2__param(&p, "ClientToken", r->client_token);
	if (c->key_name != NULL)
		ec2__param(&p, "KeyName", c->key_name);
	if (subnet != NULL)
		ec2__param(&p, "SubnetId", subnet); /* pins the zone */
	else if (r->zone != NULL && r->zone[0] != '\0')
		ec2__param(&p, "Placement.AvailabilityZone", r->zone);
	if (group != NULL)
		ec2__param(&p, "SecurityGroupId.1", group);
	if (c->instance_profile != NULL)
		ec2__param(&p, "IamInstanceProfile.Name", c->instance_profile);
	if (r->user_data != NULL) {
		ud = base64(r->user_data);
		if (ud == NULL)
			p.oom = 1;
		else
			ec2__param(&p, "UserData", ud);
	}
	ec2__param(&p, "InstanceInitiatedShutdownBehavior", "terminate");
	ec2__param(&p, "MetadataOptions.HttpTokens", "required");
	ec2__param(&p, "MetadataOptions.HttpEndpoint", "enabled");
	if (r->spot) {
		ec2__param(&p, "InstanceMarketOptions.MarketType", "spot");
		ec2__param(&p, "InstanceMarketOptions.SpotOptions.SpotInstanceType",
			   "one-time");
		ec2__param(&p, "InstanceMarketOptions.SpotOptions."
			       "InstanceInterruptionBehavior", "terminate");
		if (r->max_price_per_h > 0) {
			snprintf(price, sizeof(price), "%lld.%06lld",
				 (long long)(r->max_price_per_h / SR_MICROS_PER_USD),
				 (long long)(r->max_price_per_h % SR_MICROS_PER_USD));
			ec2__param(&p, "InstanceMarketOptions.SpotOptions.MaxPrice",
				   price);
		}
	}
	add_tags(&p, 1, "instance", &r->tags);
	add_tags(&p, 2, "volume", &r->tags);
	p.epoch = r->epoch;
	rc = ec2__call(c, "RunInstances", &p, &body, &len, err);
	if (rc < 0)
		goto out;
	rc = ec2_xml_instances(body, len, c->region, &v, &n, NULL, 0, err);
	if (rc < 0)
		goto out;
	if (n != 1) {
		rc = cloud_err_set(err, CLOUD_ETRANSIENT, NULL,
				   "EC2 RunInstances: answer lists %zu instances, "
				   "expected 1", n);
		goto out;
	}
	*out = v[0];
	v[0].blob = NULL;
	sr_info("aws", "instance launched", "id=%s type=%s zone=%s spot=%d node=%lld",
		out->id, out->instance_type, out->zone, r->spot,
		(long long)r->tags.node_id);
out:
	cloud_instances_free(v, n);
	ec2__params_free(&p);
	free(body);
	free(ud);
	return rc;
}

/* ---- pagination ------------------------------------------------------- */

/* Append np elements of `elem` bytes from page to *all (length *nall).
 * Returns 0 or -ENOMEM (then *all is unchanged). */
static int append_page(void **all, size_t *nall, const void *page, size_t np,
		       size_t elem)
{
	char *t;

	if (np == 0)
		return 0;
	t = realloc(*all, (*nall + np) * elem);
	if (t == NULL)
		return -ENOMEM;
	memcpy(t + *nall * elem, page, np * elem);
	*all = t;
	*nall += np;
	return 0;
}

/* ---- DescribeInstances ------------------------------------------------ */

int ec2_describe_instances(struct ec2 *c, const char *cluster,
			   const char *const *ids, struct cloud_instance **out,
			   size_t *n, struct cloud_error *err)
{
	return ec2__describe(c, cluster, ids, false, out, n, err);
}

int ec2__describe(struct ec2 *c, const char *cluster, const char *const *ids,
		  bool once, struct cloud_instance **out, size_t *n,
		  struct cloud_error *err)
{
	struct cloud_instance *all = NULL, *page = NULL;
	size_t nall = 0, np = 0;
	char next[2048] = "", tagf[128];
	int rc = 0;

	*out = NULL;
	*n = 0;
	snprintf(tagf, sizeof(tagf), "tag:%s", CLOUD_TAG_CLUSTER);
	for (int pg = 0; pg < MAX_PAGES; pg++) {
		struct ec2_params p = { .once = once };
		char *body = NULL;
		size_t len = 0;

		ec2__param(&p, "Filter.1.Name", tagf);
		ec2__param(&p, "Filter.1.Value.1", cluster);
		for (size_t i = 0; ids != NULL && ids[i] != NULL; i++)
			ec2__paramf(&p, ids[i], "InstanceId.%zu", i + 1);
		if (ids == NULL)
			ec2__param(&p, "MaxResults", "1000");
		if (next[0] != '\0')
			ec2__param(&p, "NextToken", next);
		rc = ec2__call(c, "DescribeInstances", &p, &body, &len, err);
		ec2__params_free(&p);
		if (rc == 0)
			rc = ec2_xml_instances(body, len, c->region, &page, &np,
					       next, sizeof(next), err);
		free(body);
		if (rc < 0)
			goto out;
		if (append_page((void **)&all, &nall, page, np, sizeof(*page)) < 0) {
			cloud_instances_free(page, np);
			rc = cloud_err_set(err, CLOUD_ETRANSIENT, NULL,
					   "EC2 DescribeInstances: out of memory");
			goto out;
		}
		free(page);
		page = NULL;
		np = 0;
		if (next[0] == '\0')
			break;
	}
out:
	if (rc < 0) {
		cloud_instances_free(all, nall);
		return rc;
	}
	*out = all;
	*n = nall;
	return 0;
}

/* ---- TerminateInstances ----------------------------------------------- */

static int terminate_some(struct ec2 *c, const char *const *ids, size_t n,
			  int64_t epoch, struct cloud_error *err)
{
	struct ec2_params p = { .epoch = epoch };
	char *body = NULL;
	size_t len = 0;
	int rc;

	for (size_t i = 0; i < n; i++)
		ec2__paramf(&p, ids[i], "InstanceId.%zu", i + 1);
	rc = ec2__call(c, "TerminateInstances", &p, &body, &len, err);
	ec2__params_free(&p);
	free(body);
	return rc;
}

int ec2_terminate_instances(struct ec2 *c, const char *const *ids, size_t n,
			    struct cloud_error *err)
{
	return ec2_terminate_at(c, ids, n, 0, err);
}

int ec2_terminate_at(struct ec2 *c, const char *const *ids, size_t n,
		     int64_t epoch, struct cloud_error *err)
{
	int rc;

	if (n == 0)
		return 0;
	rc = terminate_some(c, ids, n, epoch, err);
	if (rc == 0 || err == NULL ||
	    strcmp(err->code, "InvalidInstanceID.NotFound") != 0)
		return rc;
	/* One unknown id fails the whole call: go one by one, and an id
	 * EC2 does not know is already gone. */
	for (size_t i = 0; i < n; i++) {
		rc = terminate_some(c, &ids[i], 1, epoch, err);
		if (rc < 0 && strcmp(err->code, "InvalidInstanceID.NotFound") != 0)
			return rc;
	}
	memset(err, 0, sizeof(*err));
	return 0;
}

/* ---- DescribeSpotPriceHistory ----------------------------------------- */

int ec2_spot_prices(struct ec2 *c, const struct ec2_price_query *q,
		    struct ec2_spot_price **out, size_t *n,
		    struct cloud_error *err)
{
	struct ec2_spot_price *all = NULL, *page = NULL;
	size_t nall = 0, np = 0, max_items = q->max_items ? q->max_items : 1000;
	char next[2048] = "", start[40], mr[16];
	int rc = 0;

	*out = NULL;
	*n = 0;
	sr_time_format_rfc3339(q->since_s * 1000000000LL, 0, start, sizeof(start));
	for (int pg = 0; pg < MAX_PAGES && nall < max_items; pg++) {
		struct ec2_params p = { .once = q->once };
		char *body = NULL;
		size_t len = 0, want = max_items - nall;

		for (size_t i = 0; i < q->ntypes; i++)
			ec2__paramf(&p, q->types[i], "InstanceType.%zu", i + 1);
		ec2__param(&p, "ProductDescription.1", "Linux/UNIX");
		ec2__param(&p, "StartTime", start);
		if (q->nzones == 1) {
			ec2__param(&p, "AvailabilityZone", q->zones[0]);
		} else if (q->nzones > 1) {
			ec2__param(&p, "Filter.1.Name", "availability-zone");
			for (size_t i = 0; i < q->nzones; i++)
				ec2__paramf(&p, q->zones[i], "Filter.1.Value.%zu",
					    i + 1);
		}
		snprintf(mr, sizeof(mr), "%zu", want > 1000 ? (size_t)1000 : want);
		ec2__param(&p, "MaxResults", mr);
		if (next[0] != '\0')
			ec2__param(&p, "NextToken", next);
		rc = ec2__call(c, "DescribeSpotPriceHistory", &p, &body, &len, err);
		ec2__params_free(&p);
		if (rc == 0)
			rc = ec2_xml_spot_prices(body, len, &page, &np, next,
						 sizeof(next), err);
		free(body);
		if (rc < 0)
			goto out;
		if (np > max_items - nall)
			np = max_items - nall;
		if (append_page((void **)&all, &nall, page, np, sizeof(*page)) < 0) {
			rc = cloud_err_set(err, CLOUD_ETRANSIENT, NULL,
					   "EC2 DescribeSpotPriceHistory: out of memory");
			goto out;
		}
		free(page);
		page = NULL;
		if (next[0] == '\0')
			break;
	}
out:
	free(page);
	if (rc < 0) {
		free(all);
		return rc;
	}
	*out = all;
	*n = nall;
	return 0;
}

int ec2_spot_price_history(struct ec2 *c, const char *instance_type,
			   const char *zone, int64_t since_s, size_t max_items,
			   struct ec2_spot_price **out, size_t *n,
			   struct cloud_error *err)
{
	const char *types[1] = { instance_type }, *zones[1] = { zone };
	struct ec2_price_query q = {
		.types = types, .ntypes = 1, .zones = zones,
		.nzones = zone != NULL && zone[0] != '\0' ? 1 : 0,
		.since_s = since_s, .max_items = max_items,
	};

	return ec2_spot_prices(c, &q, out, n, err);
}

static int price_cmp(const void *a, const void *b)
{
	const struct ec2_spot_price *x = a, *y = b;

	if (x->price_per_h != y->price_per_h)
		return x->price_per_h < y->price_per_h ? -1 : 1;
	return strcmp(x->zone, y->zone);
}

int ec2_spot_price_latest(const struct ec2_spot_price *v, size_t n,
			  struct ec2_spot_price **out, size_t *nout)
{
	struct ec2_spot_price *r = malloc((n > 0 ? n : 1) * sizeof(*r));
	size_t m = 0;

	*out = NULL;
	*nout = 0;
	if (r == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		size_t k;

		for (k = 0; k < m; k++)
			if (strcmp(r[k].zone, v[i].zone) == 0 &&
			    strcmp(r[k].instance_type, v[i].instance_type) == 0)
				break;
		if (k == m)
			r[m++] = v[i];
		else if (v[i].at_s > r[k].at_s)
			r[k] = v[i];
	}
	qsort(r, m, sizeof(*r), price_cmp);
	*out = r;
	*nout = m;
	return 0;
}

/* ---- DescribeInstanceTypeOfferings ------------------------------------ */

static int str_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int ec2_instance_type_zones(struct ec2 *c, const char *instance_type,
			    char ***zones, size_t *n, struct cloud_error *err)
{
	char **all = NULL, **page = NULL;
	size_t nall = 0, np = 0;
	char next[2048] = "";
	int rc = 0;

	*zones = NULL;
	*n = 0;
	for (int pg = 0; pg < MAX_PAGES; pg++) {
		struct ec2_params p = { 0 };
		char *body = NULL;
		size_t len = 0;

		ec2__param(&p, "LocationType", "availability-zone");
		ec2__param(&p, "Filter.1.Name", "instance-type");
		ec2__param(&p, "Filter.1.Value.1", instance_type);
		ec2__param(&p, "MaxResults", "1000");
		if (next[0] != '\0')
			ec2__param(&p, "NextToken", next);
		rc = ec2__call(c, "DescribeInstanceTypeOfferings", &p, &body,
			       &len, err);
		ec2__params_free(&p);
		if (rc == 0)
			rc = ec2_xml_offerings(body, len, &page, &np, next,
					       sizeof(next), err);
		free(body);
		if (rc < 0)
			goto out;
		if (append_page((void **)&all, &nall, page, np, sizeof(*page)) < 0) {
			ec2_strv_free(page, np);
			rc = cloud_err_set(err, CLOUD_ETRANSIENT, NULL,
					   "EC2 DescribeInstanceTypeOfferings: "
					   "out of memory");
			goto out;
		}
		free(page);
		page = NULL;
		np = 0;
		if (next[0] == '\0')
			break;
	}
	if (nall > 1)
		qsort(all, nall, sizeof(*all), str_cmp);
out:
	if (rc < 0) {
		ec2_strv_free(all, nall);
		return rc;
	}
	*zones = all;
	*n = nall;
	return 0;
}
