/*
 * gcp_tool - test helper for tests/conformance_gcp/gce_conformance_test.js:
 * runs one call of the gcp driver's Compute client (lib/gcp/gce.h) or its
 * credentials (lib/gcp/gcpcred.h) against the endpoints the environment
 * names (CLOUDSDK_API_ENDPOINT_OVERRIDES_COMPUTE, a key file whose
 * token_uri is loopback), and prints the result as JSON.
 *
 *   gcp_tool token
 *   gcp_tool insert '{"zone","type","spot","image","accel","accel_count",
 *                     "cluster","job","node","attempt","script","key"}'
 *   gcp_tool list CLUSTER
 *   gcp_tool delete ZONE/NAME
 *   gcp_tool zones REGION
 *
 * Exit 0 with {"ok": ...}; exit 1 with {"error": msg, "class": c}.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "gcp/gce.h"

static int out(json_t *ok)
{
	json_t *d = json_pack("{so}", "ok", ok ? ok : json_null());

	json_dumpf(d, stdout, JSON_COMPACT);
	putchar('\n');
	json_decref(d);
	return 0;
}

static int fail(const char *msg, int cls)
{
	json_t *d = json_pack("{ss si}", "error", msg, "class", cls);

	json_dumpf(d, stdout, JSON_COMPACT);
	putchar('\n');
	json_decref(d);
	return 1;
}

static const char *js(json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

int main(int argc, char **argv)
{
	struct gce_opts o = { .timeout_ms = 10000 };
	struct gce *c = NULL;
	struct sr_err e = { 0 };
	struct cloud_error err = { 0 };
	int rc;

	if (argc < 2)
		return fail("usage: gcp_tool token|insert|list|delete|zones ...", 0);
	rc = gce_open(&o, &c, &e);
	if (rc)
		return fail(e.msg, 0);
	if (!strcmp(argv[1], "token")) {
		char tok[GCPCRED_TOKEN_MAX];

		rc = gcpcred_token(gce_creds(c), tok, sizeof tok, NULL, &e);
		rc = rc ? fail(e.msg, 0) : out(json_string(tok));
	} else if (!strcmp(argv[1], "insert") && argc == 3) {
		json_t *a = json_loads(argv[2], 0, NULL);
		struct cloud_instance in;
		struct gce_insert x = {
			.zone = js(a, "zone"), .machine_type = js(a, "type"),
			.spot = json_is_true(json_object_get(a, "spot")),
			.image = js(a, "image"), .accelerator = js(a, "accel"),
			.accel_count = (int)json_integer_value(json_object_get(
				a, "accel_count")),
			.startup_script = js(a, "script"), .idem_key = js(a, "key"),
			.tags = { .cluster = js(a, "cluster"),
				  .job_id = json_integer_value(json_object_get(a, "job")),
				  .node_id = json_integer_value(json_object_get(a, "node")),
				  .attempt = (int)json_integer_value(json_object_get(
					  a, "attempt")) },
		};

		rc = gce_insert_wait(c, &x, &in, &err);
		rc = rc ? fail(err.msg, err.cls) : out(json_pack(
			"{ss ss si}", "id", in.id, "zone", in.zone, "state",
			(int)in.state));
		cloud_instance_clear(&in);
		json_decref(a);
	} else if (!strcmp(argv[1], "list") && argc == 3) {
		struct cloud_instance *v = NULL;
		size_t n = 0;

		rc = gce_list(c, argv[2], &v, &n, &err);
		if (rc) {
			rc = fail(err.msg, err.cls);
		} else {
			json_t *arr = json_array();

			for (size_t i = 0; i < n; i++)
				json_array_append_new(arr, json_string(v[i].id));
			rc = out(arr);
		}
		cloud_instances_free(v, n);
	} else if (!strcmp(argv[1], "delete") && argc == 3) {
		rc = gce_delete(c, argv[2], 0, &err);
		rc = rc ? fail(err.msg, err.cls) : out(NULL);
	} else if (!strcmp(argv[1], "zones") && argc == 3) {
		char **z = NULL;
		size_t n = 0;

		rc = gce_region_zones(c, argv[2], &z, &n, &err);
		if (rc) {
			rc = fail(err.msg, err.cls);
		} else {
			json_t *arr = json_array();

			for (size_t i = 0; i < n; i++) {
				json_array_append_new(arr, json_string(z[i]));
				free(z[i]);
			}
			rc = out(arr);
		}
		free(z);
	} else {
		rc = fail("unknown command", 0);
	}
	gce_close(c);
	return rc;
}
