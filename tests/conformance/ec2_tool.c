/*
 * ec2_tool - test helper for tests/conformance/ec2_conformance_test.js:
 * runs one operation of the EC2 driver (lib/aws) against the endpoint the
 * environment names (AWS_ENDPOINT_URL_EC2, which must be loopback) and
 * prints the parsed result as JSON.
 *
 *   ec2_tool run '{"image":..,"subnet":..,"sg":..,"key":..,"profile":..,
 *                  "token":..,"type":..,"zone":..,"spot":true,
 *                  "max_price_micros":N,"cluster":..,"job":N,"node":N,
 *                  "attempt":N,"user_data":..}'
 *   ec2_tool describe CLUSTER [ID...]
 *   ec2_tool terminate ID...
 *   ec2_tool spot TYPE ZONE|- SINCE_EPOCH_S MAX
 *   ec2_tool zones TYPE
 *   ec2_tool driver '{...same as run...}'   (through cloud/compute.h)
 *
 * Exit 0 with {"ok": ...}; exit 1 with {"error": msg, "class": c, "code": x}.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "aws/ec2.h"

static const char *js(json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

static json_t *inst_json(const struct cloud_instance *i)
{
	json_t *blob = i->blob != NULL ? json_loads(i->blob, 0, NULL) : json_null();

	return json_pack("{ss si ss ss sb ss sI sI si ss sI so}", "id", i->id,
			 "state", (int)i->state, "zone", i->zone, "type",
			 i->instance_type, "spot", i->spot, "cluster", i->cluster,
			 "job", (json_int_t)i->job_id, "node", (json_int_t)i->node_id,
			 "attempt", i->attempt, "reason", i->reason, "launched",
			 (json_int_t)i->launched_s, "blob",
			 blob != NULL ? blob : json_null());
}

static int fail(const struct cloud_error *err)
{
	json_t *o = json_pack("{ss ss ss}", "error", err->msg, "class",
			      cloud_err_class_str(err->cls), "code", err->code);

	json_dumpf(o, stdout, JSON_COMPACT);
	putchar('\n');
	json_decref(o);
	return 1;
}

static int ok(json_t *v)
{
	json_t *o = json_pack("{so}", "ok", v);

	json_dumpf(o, stdout, JSON_COMPACT);
	putchar('\n');
	json_decref(o);
	return 0;
}

static void on_done(void *ud)
{
	(void)ud;
}

static int run(struct ec2 *c, json_t *a, bool via_driver)
{
	struct cloud_instance inst;
	struct cloud_error err = { 0 };
	struct cloud_tags tags = {
		.cluster = js(a, "cluster"),
		.job_id = json_integer_value(json_object_get(a, "job")),
		.node_id = json_integer_value(json_object_get(a, "node")),
		.attempt = (int)json_integer_value(json_object_get(a, "attempt")),
	};
	int rc;

	if (!via_driver) {
		struct ec2_run r = {
			.client_token = js(a, "token"), .instance_type = js(a, "type"),
			.zone = js(a, "zone"),
			.spot = json_is_true(json_object_get(a, "spot")),
			.max_price_per_h = json_integer_value(
				json_object_get(a, "max_price_micros")),
			.tags = tags, .user_data = js(a, "user_data"),
		};

		rc = ec2_run_instances(c, &r, &inst, &err);
		ec2_close(c);
	} else {
		struct cloud_driver d;
		struct cloud_req *req = NULL;
		struct sr_err e = { 0 };
		struct cloud_launch l = {
			.idem_key = js(a, "token"), .zone = js(a, "zone"),
			.instance_type = js(a, "type"),
			.spot = json_is_true(json_object_get(a, "spot")),
			.max_price_per_h = json_integer_value(
				json_object_get(a, "max_price_micros")),
			.tags = tags, .bootstrap = js(a, "user_data"),
			.done = on_done,
		};

		if (ec2_driver_new(c, &d, &e) < 0) {
			fprintf(stderr, "ec2_tool: %s\n", e.msg);
			return 2;
		}
		rc = d.ops->provision(d.st, &l, &req, &err);
		if (rc == 0) {
			while ((rc = d.ops->poll(d.st, req, &inst, &err)) == -EAGAIN)
				usleep(2000);
		}
		d.ops->req_free(d.st, req);
		d.ops->destroy(d.st);
	}
	if (rc < 0)
		return fail(&err);
	rc = ok(inst_json(&inst));
	cloud_instance_clear(&inst);
	return rc;
}

int main(int argc, char **argv)
{
	struct ec2_opts o = { .max_retries = 0, .timeout_ms = 10000 };
	struct ec2 *c = NULL;
	struct cloud_error err = { 0 };
	struct sr_err e = { 0 };
	json_t *a = NULL, *arr;
	const char *op = argc > 1 ? argv[1] : "";
	int rc;

	if (argc < 3) {
		fprintf(stderr, "usage: ec2_tool run|driver|describe|terminate|"
				"spot|zones ARGS (see the source)\n");
		return 2;
	}
	if (strcmp(op, "run") == 0 || strcmp(op, "driver") == 0) {
		a = json_loads(argv[2], 0, NULL);
		if (a == NULL) {
			fprintf(stderr, "ec2_tool: bad JSON argument\n");
			return 2;
		}
		o.image_id = js(a, "image");
		o.subnet_id = js(a, "subnet");
		o.security_group_id = js(a, "sg");
		o.key_name = js(a, "key");
		o.instance_profile = js(a, "profile");
	}
	rc = ec2_open(&o, &c, &e);
	if (rc < 0) {
		fprintf(stderr, "ec2_tool: %s\n", e.msg);
		json_decref(a);
		return 2;
	}
	if (a != NULL) {
		rc = run(c, a, strcmp(op, "driver") == 0);
		json_decref(a);
		return rc;
	}
	if (strcmp(op, "describe") == 0) {
		struct cloud_instance *v = NULL;
		size_t n = 0;

		rc = ec2_describe_instances(c, argv[2],
					    argc > 3 ? (const char *const *)argv + 3
						     : NULL, &v, &n, &err);
		if (rc == 0) {
			arr = json_array();
			for (size_t i = 0; i < n; i++)
				json_array_append_new(arr, inst_json(&v[i]));
			cloud_instances_free(v, n);
			rc = ok(arr);
		}
	} else if (strcmp(op, "terminate") == 0) {
		rc = ec2_terminate_instances(c, (const char *const *)argv + 2,
					     (size_t)(argc - 2), &err);
		if (rc == 0)
			rc = ok(json_true());
	} else if (strcmp(op, "spot") == 0 && argc == 6) {
		struct ec2_spot_price *v = NULL;
		size_t n = 0;

		rc = ec2_spot_price_history(c, argv[2],
					    strcmp(argv[3], "-") ? argv[3] : NULL,
					    atoll(argv[4]), (size_t)atol(argv[5]),
					    &v, &n, &err);
		if (rc == 0) {
			arr = json_array();
			for (size_t i = 0; i < n; i++)
				json_array_append_new(arr, json_pack(
					"{ss ss ss sI sI}", "zone", v[i].zone,
					"type", v[i].instance_type, "product",
					v[i].product, "micros",
					(json_int_t)v[i].price_per_h, "at",
					(json_int_t)v[i].at_s));
			free(v);
			rc = ok(arr);
		}
	} else if (strcmp(op, "zones") == 0) {
		char **z = NULL;
		size_t n = 0;

		rc = ec2_instance_type_zones(c, argv[2], &z, &n, &err);
		if (rc == 0) {
			arr = json_array();
			for (size_t i = 0; i < n; i++)
				json_array_append_new(arr, json_string(z[i]));
			ec2_strv_free(z, n);
			rc = ok(arr);
		}
	} else {
		fprintf(stderr, "ec2_tool: unknown operation '%s'\n", op);
		ec2_close(c);
		return 2;
	}
	ec2_close(c);
	return rc < 0 ? fail(&err) : rc;
}
