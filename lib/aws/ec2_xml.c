/*
 * ec2_xml.c - EC2 Query API answers parsed with libxml2 (ec2.h).
 *
 * Shapes read (element local names; EC2 puts everything in the
 * namespace http://ec2.amazonaws.com/doc/2016-11-15/, which is ignored):
 *
 *   RunInstancesResponse       reservationId, instancesSet/item*
 *   DescribeInstancesResponse  reservationSet/item*(reservationId,
 *                              instancesSet/item*), nextToken
 *   instance item              instanceId, imageId, instanceState/name,
 *                              instanceType, launchTime,
 *                              placement/availabilityZone, subnetId,
 *                              privateIpAddress, instanceLifecycle,
 *                              spotInstanceRequestId, stateReason/code,
 *                              tagSet/item*(key, value)
 *   DescribeSpotPriceHistoryResponse
 *                              spotPriceHistorySet/item*(instanceType,
 *                              productDescription, spotPrice, timestamp,
 *                              availabilityZone), nextToken
 *   DescribeInstanceTypeOfferingsResponse
 *                              instanceTypeOfferingSet/item*(location),
 *                              nextToken
 *   Response (errors)          Errors/Error/(Code, Message), RequestID
 *
 * Documents are parsed by common/xml.h (no network, no entities, no DTD);
 * the size is bounded by the HTTP layer.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <libxml/parser.h>
#include <libxml/tree.h>

#include "common/money.h"
#include "common/xml.h"
#include "common/timeutil.h"
#include "ec2.h"

#define MAX_ITEMS 100000 /* a bound on any one list */

/* Make room for one more element in *v (capacity *cap, length n).
 * Returns 0, or -1 past MAX_ITEMS or on out-of-memory. */
static int grow(void **v, size_t *cap, size_t n, size_t elem)
{
	size_t nc;
	void *t;

	if (n < *cap)
		return 0;
	nc = *cap ? *cap * 2 : 8;
	if (nc > MAX_ITEMS)
		return -1;
	t = realloc(*v, nc * elem);
	if (t == NULL)
		return -1;
	*v = t;
	*cap = nc;
	return 0;
}

static int bad(struct cloud_error *err, const char *what)
{
	cloud_err_set(err, CLOUD_ETRANSIENT, NULL,
		      "EC2 answer: %s", what);
	return -SR_EPARSE;
}

/* Parse xml and check that its root is root_name.  Returns the root, or
 * NULL with *rc set (then *doc is NULL). */
static xmlNode *open_root(const char *xml, size_t len, const char *root_name,
			  xmlDoc **doc, struct cloud_error *err, int *rc)
{
	xmlNode *root;
	char what[96];

	*doc = sr_xml_parse(xml, len);
	if (*doc == NULL) {
		*rc = bad(err, "not well-formed XML");
		return NULL;
	}
	root = xmlDocGetRootElement(*doc);
	if (!sr_xml_is(root, root_name)) {
		snprintf(what, sizeof(what), "expected %s", root_name);
		*rc = bad(err, what);
		xmlFreeDoc(*doc);
		*doc = NULL;
		return NULL;
	}
	return root;
}

static enum cloud_inst_state state_of(const char *name)
{
	if (strcmp(name, "pending") == 0)
		return CLOUD_INST_PENDING;
	if (strcmp(name, "running") == 0)
		return CLOUD_INST_RUNNING;
	if (strcmp(name, "terminated") == 0)
		return CLOUD_INST_GONE;
	return CLOUD_INST_STOPPING; /* shutting-down, stopping, stopped */
}

static int64_t int_or_zero(const char *s)
{
	char *end;
	long long v = strtoll(s, &end, 10);

	return (end != s && *end == '\0' && v >= 0) ? v : 0;
}

/* One instancesSet/item into *out (blob included). */
static int parse_instance(xmlNode *item, const char *region,
			  const char *reservation, struct cloud_instance *out,
			  struct cloud_error *err)
{
	char state[32], life[16], v[256], ip[64], image[64], subnet[64];
	char sir[64], launch[64];
	xmlNode *tags;
	json_t *blob = NULL;
	int64_t ns;

	memset(out, 0, sizeof(*out));
	if (sr_xml_ctext(item, "instanceId", out->id, sizeof(out->id)) < 0)
		return bad(err, "instance item: instanceId: missing");
	if (sr_xml_ctext(sr_xml_child(item, "instanceState"), "name", state,
			 sizeof(state)) < 0)
		return bad(err, "instance item: instanceState/name: missing");
	out->state = state_of(state);
	sr_xml_ctext(item, "instanceType", out->instance_type,
		     sizeof(out->instance_type));
	sr_xml_ctext(sr_xml_child(item, "placement"), "availabilityZone",
		     out->zone, sizeof(out->zone));
	sr_xml_ctext(item, "instanceLifecycle", life, sizeof(life));
	out->spot = strcmp(life, "spot") == 0;
	sr_xml_ctext(sr_xml_child(item, "stateReason"), "code", out->reason,
		     sizeof(out->reason));
	if (sr_xml_ctext(item, "launchTime", launch, sizeof(launch)) == 0 &&
	    sr_time_parse_rfc3339(launch, &ns, NULL) == 0)
		out->launched_s = ns / 1000000000;
	tags = sr_xml_child(item, "tagSet");
	for (xmlNode *t = sr_xml_child(tags, "item"); t != NULL;
	     t = sr_xml_next(t, "item")) {
		char key[128];

		if (sr_xml_ctext(t, "key", key, sizeof(key)) < 0)
			continue;
		sr_xml_ctext(t, "value", v, sizeof(v));
		if (strcmp(key, CLOUD_TAG_CLUSTER) == 0)
			snprintf(out->cluster, sizeof(out->cluster), "%.*s",
				 (int)sizeof(out->cluster) - 1, v);
		else if (strcmp(key, CLOUD_TAG_JOB) == 0)
			out->job_id = int_or_zero(v);
		else if (strcmp(key, CLOUD_TAG_NODE) == 0)
			out->node_id = int_or_zero(v);
		else if (strcmp(key, CLOUD_TAG_ATTEMPT) == 0)
			out->attempt = (int)int_or_zero(v);
	}
	sr_xml_ctext(item, "privateIpAddress", ip, sizeof(ip));
	sr_xml_ctext(item, "imageId", image, sizeof(image));
	sr_xml_ctext(item, "subnetId", subnet, sizeof(subnet));
	sr_xml_ctext(item, "spotInstanceRequestId", sir, sizeof(sir));
	blob = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s}",
			 "instance_id", out->id, "region", region ? region : "",
			 "zone", out->zone, "reservation_id",
			 reservation ? reservation : "", "private_ip", ip,
			 "image_id", image, "subnet_id", subnet,
			 "spot_request_id", sir);
	if (blob != NULL)
		out->blob = json_dumps(blob, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(blob);
	if (out->blob == NULL)
		return cloud_err_set(err, CLOUD_ETRANSIENT, NULL, "out of memory");
	return 0;
}

/* Append the items of one instancesSet to *v. */
static int add_instances(xmlNode *set, const char *region, const char *resv,
			 struct cloud_instance **v, size_t *n, size_t *cap,
			 struct cloud_error *err)
{
	int rc;

	for (xmlNode *it = sr_xml_child(set, "item"); it != NULL;
	     it = sr_xml_next(it, "item")) {
		if (grow((void **)v, cap, *n, sizeof(**v)) < 0)
			return bad(err, "too many instances (or out of memory)");
		rc = parse_instance(it, region, resv, &(*v)[*n], err);
		if (rc < 0)
			return rc;
		(*n)++;
	}
	return 0;
}

int ec2_xml_instances(const char *xml, size_t len, const char *region,
		      struct cloud_instance **out, size_t *n, char *next_token,
		      size_t next_len, struct cloud_error *err)
{
	xmlDoc *doc = sr_xml_parse(xml, len);
	xmlNode *root;
	struct cloud_instance *v = NULL;
	size_t nv = 0, cap = 0;
	char resv[64];
	int rc = 0;

	*out = NULL;
	*n = 0;
	if (next_token != NULL)
		next_token[0] = '\0';
	if (doc == NULL)
		return bad(err, "not well-formed XML");
	root = xmlDocGetRootElement(doc);
	if (sr_xml_is(root, "RunInstancesResponse")) {
		sr_xml_ctext(root, "reservationId", resv, sizeof(resv));
		rc = add_instances(sr_xml_child(root, "instancesSet"), region,
				   resv, &v, &nv, &cap, err);
	} else if (sr_xml_is(root, "DescribeInstancesResponse")) {
		xmlNode *rs = sr_xml_child(root, "reservationSet");

		for (xmlNode *r = sr_xml_child(rs, "item");
		     r != NULL && rc == 0; r = sr_xml_next(r, "item")) {
			sr_xml_ctext(r, "reservationId", resv, sizeof(resv));
			rc = add_instances(sr_xml_child(r, "instancesSet"),
					   region, resv, &v, &nv, &cap, err);
		}
		if (next_token != NULL)
			sr_xml_ctext(root, "nextToken", next_token, next_len);
	} else {
		rc = bad(err, "expected RunInstancesResponse or "
			      "DescribeInstancesResponse");
	}
	xmlFreeDoc(doc);
	if (rc < 0) {
		cloud_instances_free(v, nv);
		return rc;
	}
	*out = v;
	*n = nv;
	return 0;
}

int ec2_xml_error(const char *xml, size_t len, char *code, size_t code_len,
		  char *msg, size_t msg_len)
{
	return sr_xml_error(xml, len, code, code_len, msg, msg_len) == 0
		       ? 0
		       : -SR_EPARSE;
}

static sr_micros price_of(const char *s)
{
	sr_micros m;

	if (sr_money_parse(s, &m, NULL) == 0)
		return m;
	return sr_money_from_usd(strtod(s, NULL)); /* > 6 decimals */
}

int ec2_xml_spot_prices(const char *xml, size_t len,
			struct ec2_spot_price **out, size_t *n,
			char *next_token, size_t next_len,
			struct cloud_error *err)
{
	xmlDoc *doc = NULL;
	xmlNode *root, *set;
	struct ec2_spot_price *v = NULL;
	size_t nv = 0, cap = 0;
	int rc = 0;

	*out = NULL;
	*n = 0;
	if (next_token != NULL)
		next_token[0] = '\0';
	root = open_root(xml, len, "DescribeSpotPriceHistoryResponse", &doc, err, &rc);
	if (root == NULL)
		return rc;
	set = sr_xml_child(root, "spotPriceHistorySet");
	for (xmlNode *it = sr_xml_child(set, "item"); it != NULL;
	     it = sr_xml_next(it, "item")) {
		struct ec2_spot_price *p;
		char price[64], ts[64];
		int64_t ns;

		if (grow((void **)&v, &cap, nv, sizeof(*v)) < 0) {
			rc = bad(err, "too many prices (or out of memory)");
			goto out;
		}
		p = &v[nv];
		memset(p, 0, sizeof(*p));
		if (sr_xml_ctext(it, "spotPrice", price, sizeof(price)) < 0 ||
		    sr_xml_ctext(it, "timestamp", ts, sizeof(ts)) < 0 ||
		    sr_time_parse_rfc3339(ts, &ns, NULL) < 0) {
			rc = bad(err, "spotPriceHistorySet item: spotPrice or "
				      "timestamp missing or malformed");
			goto out;
		}
		p->price_per_h = price_of(price);
		p->at_s = ns / 1000000000;
		sr_xml_ctext(it, "availabilityZone", p->zone, sizeof(p->zone));
		sr_xml_ctext(it, "instanceType", p->instance_type,
			     sizeof(p->instance_type));
		sr_xml_ctext(it, "productDescription", p->product,
			     sizeof(p->product));
		nv++;
	}
	if (next_token != NULL)
		sr_xml_ctext(root, "nextToken", next_token, next_len);
out:
	xmlFreeDoc(doc);
	if (rc < 0) {
		free(v);
		return rc;
	}
	*out = v;
	*n = nv;
	return 0;
}

void ec2_strv_free(char **v, size_t n)
{
	if (v == NULL)
		return;
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

int ec2_xml_offerings(const char *xml, size_t len, char ***zones, size_t *n,
		      char *next_token, size_t next_len,
		      struct cloud_error *err)
{
	xmlDoc *doc = NULL;
	xmlNode *root, *set;
	char **v = NULL, loc[64];
	size_t nv = 0, cap = 0;
	int rc = 0;

	*zones = NULL;
	*n = 0;
	if (next_token != NULL)
		next_token[0] = '\0';
	root = open_root(xml, len, "DescribeInstanceTypeOfferingsResponse", &doc,
			 err, &rc);
	if (root == NULL)
		return rc;
	set = sr_xml_child(root, "instanceTypeOfferingSet");
	for (xmlNode *it = sr_xml_child(set, "item"); it != NULL;
	     it = sr_xml_next(it, "item")) {
		if (sr_xml_ctext(it, "location", loc, sizeof(loc)) < 0) {
			rc = bad(err, "instanceTypeOfferingSet item: location: "
				      "missing");
			goto out;
		}
		if (grow((void **)&v, &cap, nv, sizeof(*v)) < 0) {
			rc = bad(err, "too many offerings (or out of memory)");
			goto out;
		}
		v[nv] = strdup(loc);
		if (v[nv] == NULL)
			goto oom;
		nv++;
	}
	if (next_token != NULL)
		sr_xml_ctext(root, "nextToken", next_token, next_len);
	goto out;
oom:
	rc = cloud_err_set(err, CLOUD_ETRANSIENT, NULL, "out of memory");
out:
	xmlFreeDoc(doc);
	if (rc < 0) {
		ec2_strv_free(v, nv);
		return rc;
	}
	*zones = v;
	*n = nv;
	return 0;
}
