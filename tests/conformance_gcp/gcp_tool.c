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

#include "../conformance/conftool.h"

#include "gcp/gce.h"

int main(int argc, char **argv)
{
	struct gce_opts o = { .timeout_ms = 10000 };
	struct gce *c = NULL;
	struct sr_err e = { 0 };
	struct cloud_error err = { 0 };
	int rc;

	if (argc < 2)
		return conf_fail("usage: gcp_tool token|insert|list|delete|zones ...", 0);
	rc = gce_open(&o, &c, &e);
	if (rc)
		return conf_fail(e.msg, 0);
	if (!strcmp(argv[1], "token")) {
		char tok[GCPCRED_TOKEN_MAX];

		rc = gcpcred_token(gce_creds(c), tok, sizeof tok, NULL, &e);
		rc = rc ? conf_fail(e.msg, 0) : conf_out(json_string(tok));
	} else if (!strcmp(argv[1], "insert") && argc == 3) {
		json_t *a = json_loads(argv[2], 0, NULL);
		struct cloud_instance in;
		struct gce_insert x = {
			.zone = conf_js(a, "zone"), .machine_type = conf_js(a, "type"),
			.spot = json_is_true(json_object_get(a, "spot")),
			.image = conf_js(a, "image"), .accelerator = conf_js(a, "accel"),
			.accel_count = (int)json_integer_value(json_object_get(
				a, "accel_count")),
			.startup_script = conf_js(a, "script"), .idem_key = conf_js(a, "key"),
			.tags = { .cluster = conf_js(a, "cluster"),
				  .job_id = json_integer_value(json_object_get(a, "job")),
				  .node_id = json_integer_value(json_object_get(a, "node")),
				  .attempt = (int)json_integer_value(json_object_get(
					  a, "attempt")) },
		};

		rc = gce_insert_wait(c, &x, &in, &err);
		rc = rc ? conf_fail(err.msg, err.cls) : conf_out(json_pack(
			"{ss ss si}", "id", in.id, "zone", in.zone, "state",
			(int)in.state));
		cloud_instance_clear(&in);
		json_decref(a);
	} else if (!strcmp(argv[1], "list") && argc == 3) {
		struct cloud_instance *v = NULL;
		size_t n = 0;

		rc = gce_list(c, argv[2], &v, &n, &err);
		rc = conf_list(rc, &err, v, n);
	} else if (!strcmp(argv[1], "delete") && argc == 3) {
		rc = gce_delete(c, argv[2], 0, &err);
		rc = rc ? conf_fail(err.msg, err.cls) : conf_out(NULL);
	} else if (!strcmp(argv[1], "zones") && argc == 3) {
		char **z = NULL;
		size_t n = 0;

		rc = gce_region_zones(c, argv[2], &z, &n, &err);
		if (rc) {
			rc = conf_fail(err.msg, err.cls);
		} else {
			json_t *arr = json_array();

			for (size_t i = 0; i < n; i++) {
				json_array_append_new(arr, json_string(z[i]));
				free(z[i]);
			}
			rc = conf_out(arr);
		}
		free(z);
	} else {
		rc = conf_fail("unknown command", 0);
	}
	gce_close(c);
	return rc;
}
