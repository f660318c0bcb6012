/*
 * azure_tool - test helper for tests/conformance_azure/arm_conformance_test.js:
 * runs one call of the azure driver's ARM client (lib/azure/arm.h) with
 * the client options OPTS names, against the endpoints they and the
 * environment name (AZURE_AUTHORITY_HOST, AZURE_TENANT_ID,
 * AZURE_CLIENT_ID, AZURE_CLIENT_SECRET, AZURE_SUBSCRIPTION_ID), and
 * prints the result as JSON.
 *
 *   azure_tool OPTS token
 *   azure_tool OPTS create '{"key","size","spot","zone","image","cluster",
 *                           "job","node","attempt","script"}'
 *   azure_tool OPTS list CLUSTER
 *   azure_tool OPTS delete NAME
 *
 * OPTS: {"endpoint","resource_group","location","subnet","ssh_key",
 * "public_ip"} (struct arm_opts).
 * Exit 0 with {"ok": ...}; exit 1 with {"error": msg, "class": c}.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "../conformance/conftool.h"

#include "azure/arm.h"

static int64_t ji(json_t *o, const char *k)
{
	return json_integer_value(json_object_get(o, k));
}

static int create(struct arm *a, json_t *x)
{
	struct cloud_instance in;
	struct cloud_error err = { 0 };
	struct cloud_launch l = {
		.idem_key = conf_js(x, "key"), .zone = conf_js(x, "zone"),
		.instance_type = conf_js(x, "size"),
		.spot = json_is_true(json_object_get(x, "spot")),
		.image = conf_js(x, "image"), .bootstrap = conf_js(x, "script"),
		.tags = { .cluster = conf_js(x, "cluster"), .job_id = ji(x, "job"),
			  .node_id = ji(x, "node"),
			  .attempt = (int)ji(x, "attempt") },
	};
	int rc = arm_vm_create(a, &l, &in, &err);

	rc = rc ? conf_fail(err.msg, err.cls) : conf_out(json_pack(
		"{ss ss ss si sb}", "id", in.id, "zone", in.zone, "type",
		in.instance_type, "state", (int)in.state, "spot", in.spot));
	cloud_instance_clear(&in);
	return rc;
}

static int list(struct arm *a, const char *cluster)
{
	struct cloud_instance *v = NULL;
	struct cloud_error err = { 0 };
	size_t n = 0;
	int rc = arm_vm_list(a, cluster, &v, &n, &err);

	return conf_list(rc, &err, v, n);
}

int main(int argc, char **argv)
{
	json_t *oj = argc > 2 ? json_loads(argv[1], 0, NULL) : NULL;
	struct arm *a = NULL;
	struct sr_err e = { 0 };
	struct cloud_error err = { 0 };
	const char *cmd = argc > 2 ? argv[2] : "";
	int rc;

	if (!oj)
		return conf_fail("usage: azure_tool OPTS token|create|list|delete ...",
			    0);
	struct arm_opts o = {
		.endpoint = conf_js(oj, "endpoint"),
		.resource_group = conf_js(oj, "resource_group"),
		.location = conf_js(oj, "location"), .subnet = conf_js(oj, "subnet"),
		.ssh_key = conf_js(oj, "ssh_key"),
		.public_ip = json_is_true(json_object_get(oj, "public_ip")),
		.timeout_ms = 10000, .max_retries = 1,
		.create_timeout_ms = 60000,
	};
	rc = arm_open(&o, &a, &e);
	if (rc) {
		json_decref(oj);
		return conf_fail(e.msg, 0);
	}
	if (!strcmp(cmd, "token")) {
		char tok[8192];

		rc = arm_token(a, tok, sizeof tok, NULL, &e);
		rc = rc ? conf_fail(e.msg, 0) : conf_out(json_string(tok));
	} else if (!strcmp(cmd, "create") && argc == 4) {
		json_t *x = json_loads(argv[3], 0, NULL);

		rc = x ? create(a, x) : conf_fail("create: not JSON", 0);
		json_decref(x);
	} else if (!strcmp(cmd, "list") && argc == 4) {
		rc = list(a, argv[3]);
	} else if (!strcmp(cmd, "delete") && argc == 4) {
		const char *names[] = { argv[3] };

		rc = arm_vm_delete(a, names, 1, &err);
		rc = rc ? conf_fail(err.msg, err.cls) : conf_out(NULL);
	} else {
		rc = conf_fail("unknown command", 0);
	}
	arm_close(a);
	json_decref(oj);
	return rc;
}
