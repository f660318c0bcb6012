/*
 * test_market_sky.c - SkyPilot task files (issue 14): every key of the
 * compatibility table parses and maps onto the job model, all problems
 * of a file come back in one pass with hints, the examples in
 * tests/skypilot/ plan on the shipped catalog, and names the catalog does
 * not have (GPU, count, cloud, region, zone) fail with the nearest ones.
 * Also the per-pool preemption rates fitted to data/traces.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "market/plan.h"
#include "jobspec_diag.h"

static struct catalog g_cat;

static int setup(void **state)
{
	struct sr_err e = { 0 };

	(void)state;
	catalog_init(&g_cat);
	if (catalog_load_dir(&g_cat, "data", &e)) {
		fprintf(stderr, "load data: %s\n", e.msg);
		return -1;
	}
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	catalog_free(&g_cat);
	return 0;
}

/* Accelerators as a string, list, dict and set; cloud/region/zone. */
static void test_accelerator_forms(void **state)
{
	struct jobspec js;
	struct jobspec_diag d;
	struct sr_err e = { 0 };

	(void)state;
	assert_int_equal(parse("resources:\n  accelerators: [A100:8, H100:8]\n",
			       &js, &d, &e), 0);
	assert_int_equal(js.n_accels, 2);
	assert_string_equal(js.accels[1].name, "H100");
	assert_string_equal(js.accel, "A100");
	assert_int_equal(js.accel_count, 8);
	jobspec_free(&js);
	jobspec_diag_free(&d);

	assert_int_equal(parse("resources:\n  accelerators: {A100: 8, H100: 4}\n",
			       &js, &d, &e), 0);
	assert_int_equal(js.n_accels, 2);
	assert_int_equal(js.accels[1].count, 4);
	jobspec_free(&js);
	jobspec_diag_free(&d);

	assert_int_equal(parse("resources:\n  accelerators: {L4, V100}\n", &js, &d, &e), 0);
	assert_int_equal(js.n_accels, 2);
	assert_int_equal(js.accels[0].count, 1);
	jobspec_free(&js);
	jobspec_diag_free(&d);

	assert_int_equal(parse("resources:\n  cloud: AWS\n  region: us-east-1\n"
			       "  zone: us-east-1a\n  accelerators: V100\n",
			       &js, &d, &e), 0);
	assert_int_equal(js.n_infra, 1);
	assert_string_equal(js.infra[0].cloud, "aws");
	assert_string_equal(js.infra[0].region, "us-east-1");
	assert_string_equal(js.infra[0].zone, "us-east-1a");
	assert_int_equal(d.n_notes, 1); /* "the shorter form is infra: ..." */
	assert_non_null(strstr(d.notes[0], "infra: aws/us-east-1/us-east-1a"));
	jobspec_free(&js);
	jobspec_diag_free(&d);
}

/* any_of / ordered entries with their own accelerators; the top-level
 * location fills what an entry leaves out. */
static void test_candidates(void **state)
{
	static const char y[] =
		"resources:\n"
		"  cloud: aws\n"
		"  ordered:\n"
		"    - region: us-east-1\n"
		"      accelerators: H100:8\n"
		"    - infra: gcp/us-central1\n"
		"      accelerators: [A100:8, H100:8]\n";
	struct jobspec js;
	struct jobspec_diag d;
	struct sr_err e = { 0 };

	(void)state;
	assert_int_equal(parse(y, &js, &d, &e), 0);
	assert_true(js.infra_ordered);
	assert_int_equal(js.n_infra, 3);
	assert_string_equal(js.infra[0].cloud, "aws");
	assert_string_equal(js.infra[0].region, "us-east-1");
	assert_string_equal(js.infra[0].accel, "H100");
	assert_string_equal(js.infra[1].cloud, "gcp");
	assert_string_equal(js.infra[2].accel, "H100");
	assert_int_equal(js.n_accels, 2); /* H100:8 and A100:8, once each */
	jobspec_free(&js);
	jobspec_diag_free(&d);
}

/* Every other key of the table, and the JSON form the daemon stores. */
static void test_other_keys_roundtrip(void **state)
{
	static const char y[] =
		"name: t\n"
		"workdir: ./src\n"
		"resources:\n"
		"  accelerators: [A100:8, H100:8]\n"
		"  cpus: 8+\n"
		"  memory: '64'\n"
		"  disk_size: 512\n"
		"  image_id: docker:pytorch/pytorch\n"
		"  ports: [8080, 10020-10040]\n"
		"  job_recovery: {strategy: failover, max_restarts_on_errors: 2}\n"
		"secrets: {HF_TOKEN: null, KEY: v}\n"
		"file_mounts: {/data: ./data}\n"
		"spotrun: {work: 3h}\n";
	struct jobspec js, back;
	struct jobspec_diag d;
	struct sr_err e = { 0 };
	json_t *j;

	(void)state;
	assert_int_equal(parse(y, &js, &d, &e), 0);
	assert_true(js.cpus == 8 && js.cpus_plus == 1);
	assert_true(js.memory_gib == 64 && js.memory_plus == 0);
	assert_int_equal(js.disk_gb, 512);
	assert_string_equal(js.image_id, "docker:pytorch/pytorch");
	assert_int_equal(js.n_ports, 2);
	assert_string_equal(js.ports[1], "10020-10040");
	assert_string_equal(js.recovery, "FAILOVER");
	assert_int_equal(js.max_restarts_on_errors, 2);
	assert_int_equal(d.n_notes, 1); /* the strategy is recorded */
	assert_int_equal(js.n_secrets, 2);
	assert_null(js.secrets[0].value);
	assert_string_equal(js.workdir, "./src");
	assert_int_equal(js.n_mounts, 1);
	assert_string_equal(js.mounts[0].dst, "/data");
	j = jobspec_to_json(&js);
	assert_non_null(j);
	assert_int_equal(jobspec_from_json(j, &back, &e), 0);
	assert_int_equal(back.n_accels, 2);
	assert_true(back.cpus == 8 && back.cpus_plus == 1);
	assert_int_equal(back.disk_gb, 512);
	assert_int_equal(back.n_ports, 2);
	assert_string_equal(back.recovery, "FAILOVER");
	assert_null(back.secrets[0].value);
	assert_string_equal(back.mounts[0].src, "./data");
	assert_string_equal(back.workdir, "./src");
	json_decref(j);
	jobspec_free(&back);
	jobspec_free(&js);
	jobspec_diag_free(&d);
}

/* A mount source with a scheme (curl reads it as a URL, upper case and a
 * port too) is a bucket (tests/unit/test_market_mounts.c) or refused by
 * name; a local path with a colon is a path. */
static void test_mount_sources(void **state)
{
	static const struct { const char *src, *err; } cases[] = {
		{ "r2://bucket/data", "'r2://bucket/data': r2:// buckets are not supported" },
		{ "HTTPS://[::1]:8443/x", "https:// is not a bucket URL" },
		{ "s3://bad bucket/x", "'s3://bad bucket/x': " },
		{ "./run:1/data", NULL },
		{ "/data/a://b", NULL },
	};

	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct jobspec js;
		struct jobspec_diag d;
		struct sr_err e = { 0 };
		char y[256];
		int rc;

		snprintf(y, sizeof y, "resources: {accelerators: H100:8}\n"
			 "file_mounts: {/data: '%s'}\nspotrun: {work: 3h}\n",
			 cases[i].src);
		rc = parse(y, &js, &d, &e);
		if (cases[i].err) {
			assert_int_equal(rc, -SR_EPARSE);
			if (!has(&d, cases[i].err))
				fail_msg("%s: '%s'", cases[i].src, e.msg);
		} else {
			assert_int_equal(rc, 0);
			assert_string_equal(js.mounts[0].src, cases[i].src);
			jobspec_free(&js);
		}
		jobspec_diag_free(&d);
	}
}

/* tests/skypilot/unsupported.yaml: all ten problems in one run, each with
 * its line and a suggestion. */
static void test_all_problems_at_once(void **state)
{
	struct jobspec js;
	struct jobspec_diag d;
	struct sr_err e = { 0 };

	(void)state;
	assert_int_equal(jobspec_parse_file_diag("tests/skypilot/unsupported.yaml",
						 &js, &d, &e), -SR_EPARSE);
	assert_int_equal(d.n_errors, 10);
	assert_true(has(&d, "unsupported.yaml:5: resources.cloud: unknown cloud "
			"'kubernetes'"));
	assert_true(has(&d, "(clouds: aws, gcp, azure, lambda, coreweave)"));
	assert_true(has(&d, ":6: resources.instance_type: not supported; name the GPU"));
	assert_true(has(&d, ":7: resources.accelerators[1]: 'tpu-v4-8': TPUs"));
	assert_true(has(&d, ":8: resources.disk_tier"));
	assert_true(has(&d, ":9: resources.labels"));
	assert_true(has(&d, ":10: resources.ports: '99999'"));
	assert_true(has(&d, ":11: resources.job_recovery: unknown strategy 'RETRY_FOREVER'; expected one of:"));
	assert_true(has(&d, ":14: file_mounts./ckpt.source: 'r2://my-bucket': r2:// "
			"buckets are not supported"));
	assert_true(has(&d, ":16: service: not supported"));
	assert_true(has(&d, ":19: workdir: a git workdir"));
	assert_non_null(strstr(e.msg, "(and 9 more problems)"));
	jobspec_diag_free(&d);

	/* a typo gets the nearest key */
	assert_int_equal(parse("resources:\n  acelerators: H100:8\n", &js, &d, &e),
			 -SR_EPARSE);
	assert_true(has(&d, "resources.acelerators: unknown key; expected one of: accelerators"));
	jobspec_diag_free(&d);
	/* infra: k8s is an error, not an empty plan: no provider sells it */
	assert_int_equal(parse("resources:\n  infra: k8s\n", &js, &d, &e), -SR_EPARSE);
	assert_true(has(&d, "unknown cloud 'k8s': no catalog cloud and no provider "
			"sells it"));
	jobspec_diag_free(&d);
	assert_int_equal(parse("resources:\n  infra: oracle/us-ashburn-1\n", &js, &d, &e),
			 -SR_EPARSE);
	assert_true(has(&d, "unknown cloud 'oracle'"));
	jobspec_diag_free(&d);
}

static int plan_file(const char *path, double work_h, struct plan_result *r,
		     struct sr_err *e)
{
	struct jobspec js;
	int rc = jobspec_parse_file(path, &js, e);

	if (rc)
		return rc;
	if (work_h > 0)
		js.work_h = work_h;
	rc = plan_make(&g_cat, &js, 0, r, e);
	jobspec_free(&js);
	return rc;
}

/* The four examples parse and plan, with feasible placements that honour
 * their resources. */
static void test_examples_plan(void **state)
{
	static const char *const files[] = {
		"tests/skypilot/minimal.yaml", "tests/skypilot/multi_node.yaml",
		"tests/skypilot/managed_job.yaml", "tests/skypilot/every_key.yaml",
	};
	struct plan_result r;
	struct sr_err e = { 0 };

	(void)state;
	for (size_t i = 0; i < 4; i++) {
		if (plan_file(files[i], 10, &r, &e))
			fail_msg("%s: %s", files[i], e.msg);
		assert_true(r.n_feasible > 0);
		if (i == 2) { /* A100:8 or H100:8, aws us-east-1/us-west-2 or gcp us-central1 */
			int h100 = 0;

			for (size_t k = 0; k < r.n; k++) {
				const struct catalog_offering *o = &r.items[k].o;

				assert_true(!strcmp(o->region, "us-east-1") ||
					    !strcmp(o->region, "us-west-2") ||
					    !strcmp(o->region, "us-central1"));
				h100 |= !strcmp(o->accelerator, "H100");
			}
			assert_true(h100);
		}
		if (i == 3) { /* ordered zones by name: us-east-1a/b -> use1-az1/az2 */
			for (size_t k = 0; k < r.n; k++) {
				const struct catalog_offering *o = &r.items[k].o;

				assert_true(!strcmp(o->zone, "use1-az1") ||
					    !strcmp(o->zone, "use1-az2") ||
					    !strcmp(o->region, "us-west-2"));
				assert_true(o->vcpus >= 8);
			}
		}
		plan_result_free(&r);
	}
}

static void expect_plan_err(const char *y, const char *msg)
{
	struct jobspec js;
	struct plan_result r;
	struct sr_err e = { 0 };
	int rc;

	assert_int_equal(jobspec_parse_buf(y, strlen(y), "t.yaml", &js, &e), 0);
	rc = plan_make(&g_cat, &js, 0, &r, &e);
	if (rc != -EINVAL || !strstr(e.msg, msg))
		fail_msg("want -EINVAL '%s', got %d '%s'", msg, rc, e.msg);
	jobspec_free(&js);
}

/* issue 9: names the catalog lacks and impossible work are errors. */
static void test_plan_validation(void **state)
{
	(void)state;
	expect_plan_err("resources: {accelerators: H1000:8}\nspotrun: {work: 1h}\n",
			"unknown GPU 'H1000'; nearest: H100");
	expect_plan_err("resources: {accelerators: H100:3}\nspotrun: {work: 1h}\n",
			"H100:3 is not offered; H100 comes in counts of 1, 2, 4, 8");
	expect_plan_err("resources: {accelerators: H100:8, infra: aws/us-est-1}\n"
			"spotrun: {work: 1h}\n", "unknown region 'us-est-1' for aws; nearest: us-east-1");
	expect_plan_err("resources: {accelerators: H100:8, infra: aws/us-east-1/us-east-1q}\n"
			"spotrun: {work: 1h}\n", "unknown zone 'us-east-1q' in us-east-1; nearest:");
	expect_plan_err("resources: {accelerators: H100:8}\n"
			"spotrun: {work: 60h, deadline: 52h}\n",
			"60.0h of work cannot finish within the 52.0h deadline");
}

/* issue 9: the on-demand fallback must fit max_hourly_cost too. */
static void test_fallback_over_budget(void **state)
{
	/* p5.48xlarge spot ~$14/h, on-demand $55.04/h: a $40/h cap keeps no
	 * spot+od placement of it */
	static const char y[] =
		"resources: {accelerators: H100:8, use_spot: true, infra: aws/us-east-1}\n"
		"spotrun: {work: 10h, deadline: 30h, max_hourly_cost: 40}\n";
	struct jobspec js;
	struct plan_result r;
	struct sr_err e = { 0 };

	(void)state;
	assert_int_equal(jobspec_parse_buf(y, sizeof y - 1, "t.yaml", &js, &e), 0);
	assert_int_equal(plan_make(&g_cat, &js, 0, &r, &e), 0);
	for (size_t i = 0; i < r.n; i++)
		assert_true(r.items[i].mode != PLAN_SPOT_FALLBACK ||
			    r.items[i].o.ondemand_per_h <= 40000000);
	assert_int_equal(r.n, 0);
	plan_result_free(&r);
	jobspec_free(&js);
}

/* Rates differ per pool where a trace exists, and say where they came from. */
static void test_trace_rates(void **state)
{
	int seen = 0, dflt = 0;

	(void)state;
	for (size_t i = 0; i < g_cat.n; i++) {
		const struct catalog_offering *o = &g_cat.items[i];

		if (o->hazard_src == CATALOG_HAZARD_DEFAULT)
			dflt++;
		if (strcmp(o->zone, "usw2-az1") || strcmp(o->instance_type, "p3.2xlarge"))
			continue;
		/* us-west-2a_v100_1.json: 126 losses in 3087 ticks of 600 s up */
		assert_int_equal(o->hazard_src, CATALOG_HAZARD_TRACE);
		assert_true(fabs(o->hazard_per_h - 126.0 / (3087 * 600 / 3600.0)) < 1e-9);
		assert_non_null(strstr(o->hazard_from, "cbl/availability"));
		seen = 1;
	}
	assert_true(seen);
	assert_true(dflt > 0);
}

static void test_nearest_and_zone_ids(void **state)
{
	static const char *const names[] = { "H100", "H200", "A100", "L4", "V100" };
	char out[64], id[40];
	struct sr_err e = { 0 };

	(void)state;
	catalog_nearest("h10", names, 5, out, sizeof out);
	assert_string_equal(out, "H100, H200, A100");
	assert_int_equal(catalog_check_place(&g_cat, "aws", "us-east-1", "us-east-1a", id,
					     sizeof id, &e), 0);
	assert_string_equal(id, "use1-az1");
	assert_int_equal(catalog_check_place(&g_cat, "aws", NULL, "use1-az4", id,
					     sizeof id, &e), 0);
	assert_string_equal(id, "use1-az4");
	assert_int_equal(catalog_check_place(&g_cat, "oracle", NULL, NULL, NULL, 0, &e),
			 -EINVAL);
	assert_non_null(strstr(e.msg, "unknown cloud 'oracle'; the catalog has: aws"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_accelerator_forms),
		cmocka_unit_test(test_candidates),
		cmocka_unit_test(test_other_keys_roundtrip),
		cmocka_unit_test(test_mount_sources),
		cmocka_unit_test(test_all_problems_at_once),
		cmocka_unit_test(test_examples_plan),
		cmocka_unit_test(test_plan_validation),
		cmocka_unit_test(test_fallback_over_budget),
		cmocka_unit_test(test_trace_rates),
		cmocka_unit_test(test_nearest_and_zone_ids),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
