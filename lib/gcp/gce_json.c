/*
 * gce_json.c - Compute Engine JSON (gce.h): the insert body, an Instance
 * read into a cloud_instance, errors classified, and the names derived
 * from a launch (instance name, requestId, label values).
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <openssl/sha.h>

#include "common/timeutil.h"
#include "gcp/gce_int.h"

void gce_label_value(const char *s, char *out, size_t n)
{
	size_t k = 0;

	for (; s && *s && k + 1 < n && k < 63; s++) {
		unsigned char c = (unsigned char)tolower((unsigned char)*s);

		out[k++] = (char)(isalnum(c) || c == '_' || c == '-' ? c : '-');
	}
	out[k] = '\0';
}

void gce_instance_name(const struct cloud_tags *t, char out[GCE_NAME_MAX])
{
	char cl[GCE_NAME_MAX], tail[48];
	size_t room;

	gce_label_value(t->cluster ? t->cluster : "", cl, sizeof cl);
	for (char *p = cl; *p; p++) {
		if (*p == '_')
			*p = '-';
	}
	snprintf(tail, sizeof tail, "-%" PRId64 "-%d", t->node_id, t->attempt);
	/* "sr-" + cluster + tail, at most GCE_ID_NAME_MAX: "zone/name" must
	 * fit a cloud_instance id */
	room = GCE_ID_NAME_MAX - 3 - strlen(tail);
	if (strlen(cl) > room)
		cl[room] = '\0';
	/* fits: 3 + strlen(cl) + strlen(tail) <= GCE_ID_NAME_MAX (built by
	 * hand: gcc's -Wformat-truncation can't see the bound above) */
	memcpy(out, "sr-", 3);
	memcpy(out + 3, cl, strlen(cl));
	memcpy(out + 3 + strlen(cl), tail, strlen(tail) + 1);
}

void gce_request_id(const char *key, char out[37])
{
	unsigned char h[SHA256_DIGEST_LENGTH];
	char hex[33];

	SHA256((const unsigned char *)key, strlen(key), h);
	h[6] = (unsigned char)((h[6] & 0x0f) | 0x50); /* version 5 */
	h[8] = (unsigned char)((h[8] & 0x3f) | 0x80); /* RFC 4122 variant */
	for (int i = 0; i < 16; i++)
		snprintf(hex + 2 * i, 3, "%02x", h[i]);
	snprintf(out, 37, "%.8s-%.4s-%.4s-%.4s-%.12s", hex, hex + 8, hex + 12,
		 hex + 16, hex + 20);
}

static json_t *labels(const struct cloud_tags *t)
{
	char cl[64], v[32];
	json_t *o = json_object();

	gce_label_value(t->cluster, cl, sizeof cl);
	json_object_set_new(o, GCE_LABEL_CLUSTER, json_string(cl));
	snprintf(v, sizeof v, "%" PRId64, t->job_id);
	json_object_set_new(o, GCE_LABEL_JOB, json_string(v));
	snprintf(v, sizeof v, "%" PRId64, t->node_id);
	json_object_set_new(o, GCE_LABEL_NODE, json_string(v));
	snprintf(v, sizeof v, "%d", t->attempt);
	json_object_set_new(o, GCE_LABEL_ATTEMPT, json_string(v));
	return o;
}

static json_t *scheduling(const struct gce_insert *in)
{
	if (in->spot)
		return json_pack("{ss ss ss sb}", "provisioningModel", "SPOT",
				 "instanceTerminationAction", "DELETE",
				 "onHostMaintenance", "TERMINATE",
				 "automaticRestart", 0);
	/* a VM with GPUs cannot live-migrate */
	return json_pack("{ss ss sb}", "provisioningModel", "STANDARD",
			 "onHostMaintenance", in->accel_count > 0 ? "TERMINATE"
			 : "MIGRATE", "automaticRestart", 1);
}

int gce_insert_body(const struct gce_insert *in, const char *project,
		    char **out, struct sr_err *e)
{
	char name[GCE_NAME_MAX], mt[256], at[256];
	json_t *doc = NULL, *nic, *v;
	int rc = -ENOMEM;

	(void)project;
	*out = NULL;
	if (!in->zone || !in->machine_type || !in->image)
		return sr_err_set(e, -EINVAL, "gce insert: %s missing",
				  !in->zone ? "zone" : !in->machine_type ?
				  "machine type" : "image (providers.gcp.image)");
	gce_instance_name(&in->tags, name);
	snprintf(mt, sizeof mt, "zones/%s/machineTypes/%s", in->zone,
		 in->machine_type);
	nic = in->subnetwork ?
	      json_pack("{ss}", "subnetwork", in->subnetwork) :
	      json_pack("{ss}", "network", in->network ? in->network
			: "global/networks/default");
	if (nic)
		json_object_set_new(nic, "accessConfigs", json_pack(
			"[{ss ss}]", "name", "External NAT", "type",
			"ONE_TO_ONE_NAT"));
	doc = json_pack("{ss ss so so s{s[{ss ss}]} s[{sb sb s{ss}}] s[o]}",
			"name", name, "machineType", mt,
			"scheduling", scheduling(in), "labels", labels(&in->tags),
			"metadata", "items", "key", "startup-script", "value",
			in->startup_script ? in->startup_script : "",
			"disks", "boot", 1, "autoDelete", 1, "initializeParams",
			"sourceImage", in->image, "networkInterfaces", nic);
	if (!doc)
		goto out;
	if (in->accelerator && in->accel_count > 0) {
		snprintf(at, sizeof at, "zones/%s/acceleratorTypes/%s", in->zone,
			 in->accelerator);
		v = json_pack("[{ss si}]", "acceleratorType", at,
			      "acceleratorCount", in->accel_count);
		if (!v || json_object_set_new(doc, "guestAccelerators", v))
			goto out;
	}
	if (in->service_account) {
		v = json_pack("[{ss s[s]}]", "email", in->service_account,
			      "scopes", GCPCRED_SCOPE);
		if (!v || json_object_set_new(doc, "serviceAccounts", v))
			goto out;
	}
	*out = json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS);
	rc = *out ? 0 : -ENOMEM;
out:
	json_decref(doc);
	if (rc)
		sr_err_set(e, rc, "out of memory");
	return rc;
}

/* The last path segment of a URL ("…/zones/us-central1-a" -> the zone). */
static const char *last_seg(const char *s)
{
	const char *p = s ? strrchr(s, '/') : NULL;

	return p ? p + 1 : s ? s : "";
}

static int64_t label_int(json_t *lab, const char *key)
{
	const char *s = json_string_value(json_object_get(lab, key));

	return s ? strtoll(s, NULL, 10) : 0;
}

static enum cloud_inst_state state_of(const char *s)
{
	if (!strcmp(s, "PROVISIONING") || !strcmp(s, "STAGING") ||
	    !strcmp(s, "PENDING"))
		return CLOUD_INST_PENDING;
	if (!strcmp(s, "RUNNING"))
		return CLOUD_INST_RUNNING;
	return CLOUD_INST_STOPPING;
}

static int parse_obj(json_t *doc, struct cloud_instance *out, struct sr_err *e)
{
	const char *name = json_string_value(json_object_get(doc, "name"));
	const char *zone = json_string_value(json_object_get(doc, "zone"));
	const char *st = json_string_value(json_object_get(doc, "status"));
	const char *mt = json_string_value(json_object_get(doc, "machineType"));
	const char *ts = json_string_value(json_object_get(doc,
							   "creationTimestamp"));
	json_t *lab = json_object_get(doc, "labels");
	json_t *sch = json_object_get(doc, "scheduling");
	const char *pm = json_string_value(json_object_get(sch,
							   "provisioningModel"));
	const char *cl = json_string_value(json_object_get(lab,
							   GCE_LABEL_CLUSTER));
	int64_t ns = 0;

	memset(out, 0, sizeof *out);
	if (!name || !zone || !st)
		return sr_err_set(e, -SR_EPARSE, "gce instance: \"%s\": expected "
				  "a string", !name ? "name" : !zone ? "zone" :
				  "status");
	if (strlen(last_seg(zone)) >= sizeof out->zone ||
	    strlen(last_seg(zone)) + 1 + strlen(name) >= sizeof out->id)
		return sr_err_set(e, -SR_EPARSE, "gce instance: \"zone\" and "
				  "\"name\": longer than %zu bytes together",
				  sizeof out->id - 1);
	snprintf(out->zone, sizeof out->zone, "%s", last_seg(zone));
	memcpy(out->id, out->zone, strlen(out->zone)); /* "zone/name", fits */
	out->id[strlen(out->zone)] = '/';
	memcpy(out->id + strlen(out->zone) + 1, name, strlen(name) + 1);
	snprintf(out->instance_type, sizeof out->instance_type, "%s",
		 last_seg(mt));
	out->state = state_of(st);
	out->spot = pm && strcmp(pm, "SPOT") == 0;
	snprintf(out->cluster, sizeof out->cluster, "%s", cl ? cl : "");
	out->job_id = label_int(lab, GCE_LABEL_JOB);
	out->node_id = label_int(lab, GCE_LABEL_NODE);
	out->attempt = (int)label_int(lab, GCE_LABEL_ATTEMPT);
	snprintf(out->reason, sizeof out->reason, "%s",
		 json_string_value(json_object_get(doc, "statusMessage")) ?
		 json_string_value(json_object_get(doc, "statusMessage")) : "");
	if (ts && sr_time_parse_rfc3339(ts, &ns, NULL) == 0)
		out->launched_s = ns / SR_NS_PER_SEC;
	return 0;
}

int gce_parse_instance(const char *body, size_t len, struct cloud_instance *out,
		       struct sr_err *e)
{
	json_t *doc = json_loadb(body, len, 0, NULL);
	int rc;

	if (!json_is_object(doc)) {
		json_decref(doc);
		memset(out, 0, sizeof *out);
		return sr_err_set(e, -SR_EPARSE, "gce instance: expected a JSON "
				  "object");
	}
	rc = parse_obj(doc, out, e);
	json_decref(doc);
	return rc;
}

/* Instances of an aggregatedList page ({"items": {"zones/z":
 * {"instances": [...]}}}) appended to *v. */
int gce__parse_list(json_t *doc, struct cloud_instance **v, size_t *n,
		    struct sr_err *e)
{
	json_t *items = json_object_get(doc, "items"), *scope;
	const char *key;

	if (items && !json_is_object(items))
		return sr_err_set(e, -SR_EPARSE, "gce aggregated list: \"items\":"
				  " expected an object");
	json_object_foreach(items, key, scope) {
		json_t *arr = json_object_get(scope, "instances"), *it;
		size_t i;

		json_array_foreach(arr, i, it) {
			struct cloud_instance *nv = realloc(*v, (*n + 1) * sizeof **v);
			int rc;

			if (!nv)
				return sr_err_set(e, -ENOMEM, "out of memory");
			*v = nv;
			rc = parse_obj(it, &nv[*n], e);
			if (rc)
				return rc;
			(*n)++;
		}
	}
	return 0;
}

static enum cloud_err_class class_of(long status, const char *code)
{
	static const char *const cap[] = {
		"ZONE_RESOURCE_POOL_EXHAUSTED",
		"ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS",
		"resourcePoolExhausted", NULL };

	for (size_t i = 0; code && cap[i]; i++) {
		if (strcmp(code, cap[i]) == 0)
			return CLOUD_ECAPACITY;
	}
	if (code && (!strcmp(code, "QUOTA_EXCEEDED") ||
		     !strcmp(code, "quotaExceeded")))
		return CLOUD_EQUOTA;
	if (status == 429 || (code && (!strcmp(code, "rateLimitExceeded") ||
				       !strcmp(code, "userRateLimitExceeded"))))
		return CLOUD_ETHROTTLE;
	if (status == 401 || status == 403)
		return CLOUD_EAUTH;
	if (status >= 500 || status == 0)
		return CLOUD_ETRANSIENT;
	if (status == 409 && code && !strcmp(code, "alreadyExists"))
		return CLOUD_ECONFLICT;
	return status >= 400 ? CLOUD_EINVALID : CLOUD_ETRANSIENT;
}

int gce_classify(long status, const char *body, size_t len, const char *what,
		 struct cloud_error *err)
{
	json_t *doc = body ? json_loadb(body, len, 0, NULL) : NULL;
	json_t *er = json_object_get(doc, "error");
	json_t *first = json_array_get(json_object_get(er, "errors"), 0);
	const char *code = json_string_value(json_object_get(first, "reason"));
	const char *msg = json_string_value(json_object_get(er, "message"));
	int rc;

	if (!code) /* an Operation's error: errors[].code */
		code = json_string_value(json_object_get(first, "code"));
	if (!msg)
		msg = json_string_value(json_object_get(first, "message"));
	rc = cloud_err_set(err, class_of(status, code), code,
			   "%s: %s%s%s (HTTP %ld)", what, code ? code : "error",
			   msg ? ": " : "", msg ? msg : "", status);
	json_decref(doc);
	return rc;
}
