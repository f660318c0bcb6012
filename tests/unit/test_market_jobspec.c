/*
 * test_market_jobspec.c - job file parsing: the full format, both
 * accelerator forms, infra/any_of, errors with line numbers, unknown keys,
 * governance conflicts, sizes, and the JSON round trip.
 */
#include <math.h>
#include <signal.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <errno.h>
#include <cmocka.h>

#include "common/timeutil.h"
#include "market/jobspec.h"
#include "market/joblimits.h"

static const char full_yaml[] =
	"name: llama\n"
	"num_nodes: 2\n"
	"resources:\n"
	"  accelerators: H100:8\n"
	"  use_spot: true\n"
	"  any_of:\n"
	"    - infra: aws/us-east-1\n"
	"    - infra: gcp\n"
	"    - infra: AWS/us-west-2/usw2-az1\n"
	"envs:\n"
	"  A: \"1\"\n"
	"  B: two words\n"
	"setup: pip install x\n"
	"run: |\n"
	"  torchrun train.py\n"
	"spotrun:\n"
	"  deadline: 36h\n"
	"  work: 20h\n"
	"  criticality: standard\n"
	"  checkpoint: {size: 40GB, interval: 30m, stall: 20s, restore_bandwidth: 2GiB/s}\n"
	"  max_hourly_cost: $120.50\n"
	"  max_cost: 3000\n"
	"  max_restarts: 12\n"
	"  network: rdma\n"
	"  autostop: 10m\n"
	"  p_target: 0.95\n"
	"  provisioning: 4m\n"
	"  image_pull: 1m\n";

static void check_full(const struct jobspec *js)
{
	assert_string_equal(js->name, "llama");
	assert_int_equal(js->num_nodes, 2);
	assert_string_equal(js->accel, "H100");
	assert_int_equal(js->accel_count, 8);
	assert_int_equal(js->use_spot, 1);
	assert_int_equal(js->n_infra, 3);
	assert_string_equal(js->infra[0].cloud, "aws");
	assert_string_equal(js->infra[0].region, "us-east-1");
	assert_string_equal(js->infra[1].cloud, "gcp");
	assert_string_equal(js->infra[1].region, "");
	assert_string_equal(js->infra[2].cloud, "aws");
	assert_string_equal(js->infra[2].zone, "usw2-az1");
	assert_int_equal(js->n_envs, 2);
	assert_string_equal(js->envs[0].key, "A");
	assert_string_equal(js->envs[0].value, "1");
	assert_string_equal(js->envs[1].value, "two words");
	assert_string_equal(js->setup, "pip install x");
	assert_string_equal(js->run, "torchrun train.py\n");
	assert_int_equal(js->deadline_kind, JOBSPEC_DEADLINE_RELATIVE);
	assert_true(js->deadline_ns == 36 * 3600 * INT64_C(1000000000));
	assert_true(fabs(js->work_h - 20) < 1e-12);
	assert_int_equal(js->criticality, JOBSPEC_CRIT_STANDARD);
	assert_true(js->ckpt_bytes == 40000000000ULL);
	assert_true(js->ckpt_interval_ns == 1800 * INT64_C(1000000000));
	assert_true(js->ckpt_stall_ns == 20 * INT64_C(1000000000));
	assert_true(js->restore_bps == 2.0 * 1073741824.0);
	assert_true(js->max_hourly_cost == 120500000);
	assert_true(js->max_cost == INT64_C(3000000000));
	assert_int_equal(js->max_restarts, 12);
	assert_int_equal(js->network, CATALOG_NET_RDMA);
	assert_true(js->autostop_ns == 600 * INT64_C(1000000000));
	assert_true(fabs(js->p_target - 0.95) < 1e-12);
	assert_true(js->provision_ns == 240 * INT64_C(1000000000));
	assert_true(js->image_pull_ns == 60 * INT64_C(1000000000));
	assert_true(fabs(jobspec_stall_h(js) - 20.0 / 3600) < 1e-12);
	assert_true(fabs(jobspec_deadline_h(js, 12345) - 36) < 1e-12);
}

static void test_full(void **state)
{
	struct jobspec js;
	struct sr_err e = { 0 };

	(void)state;
	assert_int_equal(jobspec_parse_buf(full_yaml, sizeof full_yaml - 1, "job.yaml",
					   &js, &e), 0);
	check_full(&js);
	jobspec_free(&js);
	jobspec_free(NULL);
}

static void test_defaults_and_forms(void **state)
{
	static const char y[] =
		"resources:\n"
		"  accelerators: {A100-80GB: 4}\n"
		"  infra: lambda/us-east-1\n"
		"spotrun:\n"
		"  work: 7.5\n"
		"  deadline: 2026-12-01T12:00:00Z\n"
		"  checkpoint:\n"
		"    size: 8GiB\n";
	struct jobspec js;
	struct sr_err e = { 0 };
	int64_t t;

	(void)state;
	assert_int_equal(jobspec_parse_buf(y, sizeof y - 1, "j.yaml", &js, &e), 0);
	assert_null(js.name);
	assert_string_equal(js.accel, "A100-80GB");
	assert_int_equal(js.accel_count, 4);
	assert_int_equal(js.use_spot, -1);
	assert_int_equal(js.num_nodes, 1);
	assert_int_equal(js.n_infra, 1);
	assert_string_equal(js.infra[0].cloud, "lambda");
	assert_true(fabs(js.work_h - 7.5) < 1e-12);
	assert_int_equal(js.deadline_kind, JOBSPEC_DEADLINE_ABSOLUTE);
	assert_int_equal(sr_time_parse_rfc3339("2026-12-01T00:00:00Z", &t, NULL), 0);
	assert_true(fabs(jobspec_deadline_h(&js, t) - 12) < 1e-9);
	assert_true(js.ckpt_bytes == 8ULL << 30);
	assert_true(js.ckpt_stall_ns == -1);
	/* stall derived from the size at 2 GB/s */
	assert_true(fabs(jobspec_stall_h(&js) - (8.0 * 1073741824 / 2e9 / 3600)) < 1e-12);
	assert_true(fabs(js.p_target - JOBSPEC_DEFAULT_P_TARGET) < 1e-12);
	assert_true(js.max_hourly_cost == -1);
	assert_int_equal(js.network, CATALOG_NET_UNKNOWN);
	jobspec_free(&js);
}

static void expect_err(const char *yaml, const char *msg)
{
	struct jobspec js;
	struct sr_err e = { 0 };
	int rc = jobspec_parse_buf(yaml, strlen(yaml), "job.yaml", &js, &e);

	if (rc != -SR_EPARSE || !strstr(e.msg, msg))
		fail_msg("yaml:\n%s\nwant '%s', got rc %d '%s'", yaml, msg, rc, e.msg);
	/* the struct is left empty */
	assert_null(js.name);
	assert_null(js.envs);
	assert_null(js.infra);
}

static void test_errors(void **state)
{
	(void)state;
	expect_err("name: x\nresources:\n  accelerators: H100:eight\n",
		   "job.yaml:3: resources.accelerators: 'H100:eight' is not NAME:COUNT");
	expect_err("name: x\nresources:\n  gpus: 8\n",
		   "job.yaml:3: resources.gpus: unknown key");
	expect_err("name: x\nservice: {replicas: 2}\n",
		   "job.yaml:2: service: not supported; SkyServe services are not supported");
	expect_err("spotrun:\n  work: 1h\n  colour: blue\n",
		   "job.yaml:3: spotrun.colour: unknown key");
	expect_err("spotrun:\n  checkpoint:\n    size: 40 apples\n",
		   "job.yaml:3: spotrun.checkpoint.size: '40 apples' is not a size");
	expect_err("spotrun:\n  checkpoint:\n    every: 1h\n",
		   "job.yaml:3: spotrun.checkpoint.every: unknown key");
	expect_err("spotrun:\n  deadline: tomorrow\n",
		   "job.yaml:2: spotrun.deadline: 'tomorrow' is not a duration like 36h or an RFC 3339 time");
	expect_err("spotrun:\n  criticality: urgent\n",
		   "job.yaml:2: spotrun.criticality: 'urgent' is not critical, standard or best-effort");
	expect_err("resources:\n  use_spot: maybe\n",
		   "job.yaml:2: resources.use_spot: expected true or false");
	expect_err("num_nodes: 0\n", "job.yaml:1: num_nodes: '0' is not an integer in 1..1024");
	expect_err("spotrun:\n  p_target: 1.5\n", "job.yaml:2: spotrun.p_target: '1.5' is not a probability");
	expect_err("spotrun:\n  spares: 65\n", "job.yaml:2: spotrun.spares:");
	expect_err("spotrun:\n  delay_cost_per_hour: -3\n",
		   "job.yaml:2: spotrun.delay_cost_per_hour: '-3' is not an amount");
	expect_err("spotrun:\n  max_hourly_cost: lots\n",
		   "job.yaml:2: spotrun.max_hourly_cost: 'lots' is not an amount in dollars");
	expect_err("spotrun:\n  network: carrier-pigeon\n",
		   "job.yaml:2: spotrun.network: 'carrier-pigeon' is not any, ethernet, rdma or infiniband");
	expect_err("spotrun:\n  work: -3\n", "job.yaml:2: spotrun.work: '-3' is not compute hours");
	expect_err("spotrun:\n  checkpoint:\n    restore_bandwidth: 1GB\n",
		   "job.yaml:3: spotrun.checkpoint.restore_bandwidth: '1GB' is not a bandwidth");
	expect_err("resources:\n  infra: aws/a/b/c\n",
		   "job.yaml:2: resources.infra: 'aws/a/b/c' is not CLOUD[/REGION[/ZONE]]");
	expect_err("resources:\n  ordered: [{infra: aws}]\n  any_of:\n    - infra: gcp\n",
		   "job.yaml:3: resources.any_of: give any_of or ordered, not both");
	expect_err("resources:\n  any_of:\n    - infra: gcp\n      instance_type: x\n",
		   "job.yaml:4: resources.any_of[0].instance_type: not supported; name the GPU");
	expect_err("spotrun:\n  team: \"ml team\"\n",
		   "job.yaml:2: spotrun.team: 'ml team' is not a label: only letters, digits");
	expect_err("spotrun:\n  project: ''\n",
		   "job.yaml:2: spotrun.project: '' is not a label: empty");
	expect_err("spotrun:\n  cost_center: [a]\n",
		   "job.yaml:2: spotrun.cost_center: expected a value");
	expect_err("spotrun:\n  preempt_signal: KILL\n",
		   "job.yaml:2: spotrun.preempt_signal: 'KILL' is not a signal a "
		   "workload can stop on (TERM, INT, HUP, QUIT, USR1, USR2)");
	expect_err("spotrun:\n  preempt_signal: 15\n",
		   "job.yaml:2: spotrun.preempt_signal: '15' is not a signal");
	expect_err("spotrun:\n  sync_quiet: 20m\n",
		   "job.yaml:2: spotrun.sync_quiet: 1200000 ms: must be 100ms to 10m");
	expect_err("name: a\nname: b\n", "job.yaml:2: duplicate key 'name'");
	expect_err("- a\n- b\n", "job.yaml:1: expected a mapping");
	expect_err("", "job.yaml:1: empty job file");
	expect_err("name: [unclosed\n", "job.yaml:2:");
	expect_err("resources: {accelerators: {H100: 8, A100: x}}\n",
		   "job.yaml:1: resources.accelerators.A100: 'A100:x' is not NAME:COUNT");
}

/* Governance conflicts are caught with the line of use_spot. */
static void test_governance_conflicts(void **state)
{
	(void)state;
	expect_err("resources:\n  use_spot: true\nspotrun:\n  criticality: critical\n",
		   "job.yaml:2: resources.use_spot: spot is not allowed for criticality critical");
	expect_err("resources:\n  use_spot: false\nspotrun:\n  criticality: best-effort\n",
		   "job.yaml:2: resources.use_spot: best-effort jobs run on spot only");
}

static void test_sizes(void **state)
{
	uint64_t v;

	(void)state;
	assert_int_equal(jobspec_parse_size("40GB", &v), 0);
	assert_true(v == 40000000000ULL);
	assert_int_equal(jobspec_parse_size("1.5TB", &v), 0);
	assert_true(v == 1500000000000ULL);
	assert_int_equal(jobspec_parse_size("512MiB", &v), 0);
	assert_true(v == 512ULL << 20);
	assert_int_equal(jobspec_parse_size("4096", &v), 0);
	assert_true(v == 4096);
	assert_int_equal(jobspec_parse_size("40 GB", &v), 0);
	assert_int_equal(jobspec_parse_size("GB", &v), -EINVAL);
	assert_int_equal(jobspec_parse_size("4gb", &v), -EINVAL);
	assert_int_equal(jobspec_parse_size("1.5B", &v), -EINVAL);
	assert_int_equal(jobspec_parse_size("99999999999TB", &v), -EINVAL);
}

static void test_json_roundtrip(void **state)
{
	struct jobspec js, back;
	struct sr_err e = { 0 };
	json_t *j, *j2;
	char *s1, *s2;

	(void)state;
	assert_int_equal(jobspec_parse_buf(full_yaml, sizeof full_yaml - 1, "job.yaml",
					   &js, &e), 0);
	j = jobspec_to_json(&js);
	assert_non_null(j);
	assert_int_equal(jobspec_from_json(j, &back, &e), 0);
	check_full(&back);
	j2 = jobspec_to_json(&back);
	s1 = json_dumps(j, JSON_SORT_KEYS);
	s2 = json_dumps(j2, JSON_SORT_KEYS);
	assert_string_equal(s1, s2);
	free(s1);
	free(s2);
	json_decref(j2);
	jobspec_free(&back);

	/* unknown keys and wrong types are refused */
	json_object_set_new(j, "colour", json_string("blue"));
	assert_int_equal(jobspec_from_json(j, &back, &e), -SR_EPARSE);
	assert_non_null(strstr(e.msg, "job: unknown field 'colour'"));
	json_object_del(j, "colour");
	json_object_set_new(json_object_get(j, "spotrun"), "work_h", json_string("x"));
	assert_int_equal(jobspec_from_json(j, &back, &e), -SR_EPARSE);
	assert_non_null(strstr(e.msg, "spotrun: work_h: expected number"));
	json_decref(j);
	jobspec_free(&js);

	/* chargeback labels survive; a bad one in JSON is refused */
	static const char yl[] = "spotrun:\n  team: ml-research\n"
				 "  project: llama/8b\n  cost_center: CC-1234\n";
	assert_int_equal(jobspec_parse_buf(yl, sizeof yl - 1, "j", &js, &e), 0);
	j = jobspec_to_json(&js);
	assert_int_equal(jobspec_from_json(j, &back, &e), 0);
	assert_string_equal(back.team, "ml-research");
	assert_string_equal(back.project, "llama/8b");
	assert_string_equal(back.cost_center, "CC-1234");
	jobspec_free(&back);
	json_object_set_new(json_object_get(j, "spotrun"), "team",
			    json_string("a\"b"));
	assert_int_equal(jobspec_from_json(j, &back, &e), -SR_EPARSE);
	assert_non_null(strstr(e.msg, "spotrun.team: not a label"));
	json_decref(j);
	jobspec_free(&js);

	/* warm spares and the delay's price (issue 33) survive; defaults */
	assert_int_equal(js.spares, -1);
	assert_int_equal(js.delay_cost_per_h, -1);
	static const char ys[] = "spotrun:\n  spares: 2\n"
				 "  delay_cost_per_hour: $40.5\n";
	assert_int_equal(jobspec_parse_buf(ys, sizeof ys - 1, "j", &js, &e), 0);
	assert_int_equal(js.spares, 2);
	assert_int_equal(js.delay_cost_per_h, 40500000);
	j = jobspec_to_json(&js);
	assert_int_equal(jobspec_from_json(j, &back, &e), 0);
	assert_int_equal(back.spares, 2);
	assert_int_equal(back.delay_cost_per_h, 40500000);
	jobspec_free(&back);
	json_object_set_new(json_object_get(j, "spotrun"), "spares",
			    json_integer(65));
	assert_int_equal(jobspec_from_json(j, &back, &e), -SR_EPARSE);
	assert_non_null(strstr(e.msg, "spotrun.spares: out of range"));
	json_decref(j);
	jobspec_free(&js);

	/* the workload's stop signal and the sync's quiet time (issue 30):
	 * defaults TERM and 2 s, left out of the JSON; set, they survive */
	assert_int_equal(js.preempt_signal, SIGTERM);
	assert_true(js.sync_quiet_ns == 2000 * INT64_C(1000000));
	j = jobspec_to_json(&js);
	assert_null(json_object_get(json_object_get(j, "spotrun"), "preempt_signal"));
	assert_null(json_object_get(json_object_get(j, "spotrun"), "sync_quiet_ms"));
	json_decref(j);
	static const char ysig[] = "spotrun:\n  preempt_signal: sigusr1\n"
				   "  sync_quiet: 500ms\n";
	assert_int_equal(jobspec_parse_buf(ysig, sizeof ysig - 1, "j", &js, &e), 0);
	assert_int_equal(js.preempt_signal, SIGUSR1);
	j = jobspec_to_json(&js);
	assert_string_equal(json_string_value(json_object_get(
		json_object_get(j, "spotrun"), "preempt_signal")), "USR1");
	assert_int_equal(jobspec_from_json(j, &back, &e), 0);
	assert_int_equal(back.preempt_signal, SIGUSR1);
	assert_true(back.sync_quiet_ns == 500 * INT64_C(1000000));
	jobspec_free(&back);
	json_object_set_new(json_object_get(j, "spotrun"), "preempt_signal",
			    json_string("STOP"));
	assert_int_equal(jobspec_from_json(j, &back, &e), -SR_EPARSE);
	assert_non_null(strstr(e.msg, "spotrun.preempt_signal: expected one of"));
	json_decref(j);
	jobspec_free(&js);

	/* an absolute deadline survives too */
	static const char y[] = "spotrun:\n  deadline: 2026-12-01T12:00:00Z\n";
	assert_int_equal(jobspec_parse_buf(y, sizeof y - 1, "j", &js, &e), 0);
	j = jobspec_to_json(&js);
	assert_int_equal(jobspec_from_json(j, &back, &e), 0);
	assert_int_equal(back.deadline_kind, JOBSPEC_DEADLINE_ABSOLUTE);
	assert_true(back.deadline_ns == js.deadline_ns);
	json_decref(j);
	jobspec_free(&js);
	jobspec_free(&back);
}

static void test_example_files(void **state)
{
	static const char *const good[] = {
		"examples/jobs/demo.yaml", "examples/jobs/h100x8.yaml",
		"examples/jobs/critical.yaml", "examples/jobs/best-effort.yaml",
	};
	struct jobspec js;
	struct sr_err e = { 0 };

	(void)state;
	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
		if (jobspec_parse_file(good[i], &js, &e))
			fail_msg("%s: %s", good[i], e.msg);
		jobspec_free(&js);
	}
	assert_int_equal(jobspec_parse_file("examples/jobs/bad.yaml", &js, &e), -SR_EPARSE);
	assert_non_null(strstr(e.msg, "examples/jobs/bad.yaml:4: resources.accelerators"));
	assert_true(jobspec_parse_file("examples/jobs/nope.yaml", &js, &e) < 0);
}

/* Issue 10: the job file's limits are the table's (joblimits.h), the ones
 * the API and the schema use: the last value in is accepted, one past it
 * refused with the range. */
static void test_limits_table(void **state)
{
	struct jobspec js;
	struct sr_err e = { 0 };
	char y[128];

	(void)state;
	snprintf(y, sizeof y, "num_nodes: %d\nrun: x\n", SR_LIMIT_NUM_NODES_MAX);
	assert_int_equal(jobspec_parse_buf(y, strlen(y), "job.yaml", &js, &e), 0);
	assert_int_equal(js.num_nodes, 1024);
	jobspec_free(&js);
	expect_err("num_nodes: 1025\n", "job.yaml:1: num_nodes: '1025' is not an "
		   "integer in 1..1024");
	expect_err("num_nodes: 4096\n", "in 1..1024");
	snprintf(y, sizeof y, "run: x\nspotrun:\n  max_restarts: %d\n",
		 SR_LIMIT_MAX_RESTARTS_MAX);
	assert_int_equal(jobspec_parse_buf(y, strlen(y), "job.yaml", &js, &e), 0);
	assert_int_equal(js.max_restarts, 1000);
	jobspec_free(&js);
	expect_err("spotrun:\n  max_restarts: 1001\n",
		   "job.yaml:2: spotrun.max_restarts: '1001' is not an integer in 0..1000");
	expect_err("spotrun:\n  max_restarts: 1000000\n", "in 0..1000");
}

/* Issue 10: deep nesting is refused while reading, at the first level
 * past the cap, with the line; 64 levels are still fine for libyaml. */
static void test_yaml_depth(void **state)
{
	struct jobspec js;
	struct sr_err e = { 0 };
	size_t n = 120000;
	char *y = malloc(2 * n + 64);
	int rc;

	(void)state;
	assert_non_null(y);
	/* 120k nested flow sequences under envs (the 240 KB file) */
	strcpy(y, "name: x\nrun: x\nenvs:\n  A: ");
	memset(y + strlen(y), '[', n);
	y[strlen("name: x\nrun: x\nenvs:\n  A: ") + n] = '\0';
	memset(y + strlen(y), ']', n);
	y[strlen("name: x\nrun: x\nenvs:\n  A: ") + 2 * n] = '\0';
	rc = jobspec_parse_buf(y, strlen(y), "deep.yaml", &js, &e);
	assert_int_equal(rc, -SR_EPARSE);
	assert_string_equal(e.msg, "deep.yaml:4: nested deeper than 64 levels");
	/* a block mapping 65 deep is refused the same way */
	{
		size_t off = 0;

		for (int d = 0; d < 66; d++)
			off += (size_t)sprintf(y + off, "%*sk%d:\n", d, "", d);
		sprintf(y + off, "%*sv\n", 66, "");
		sr_err_clear(&e);
		rc = jobspec_parse_buf(y, strlen(y), "block.yaml", &js, &e);
		assert_int_equal(rc, -SR_EPARSE);
		assert_non_null(strstr(e.msg, "nested deeper than 64 levels"));
	}
	free(y);
}

/* Issue 24: one size cap on every reader, duplicate keys found in one
 * pass, and names that hide what they are refused. */
static void test_input_limits(void **state)
{
	struct jobspec js;
	struct sr_err e = { 0 };
	size_t cap = SR_LIMIT_JOB_BYTES + 64, off;
	char *y = malloc(cap + 1), path[] = "/tmp/spotrun-jobspec-XXXXXX";
	FILE *f;
	int fd, rc, i;

	(void)state;
	assert_non_null(y);
	/* envs with 20,000 keys and the duplicate last: found, by line */
	off = (size_t)sprintf(y, "name: x\nrun: x\nenvs:\n");
	for (i = 0; i < 20000; i++)
		off += (size_t)sprintf(y + off, "  K%d: v\n", i);
	off += (size_t)sprintf(y + off, "  K7: again\n");
	assert_true(off <= SR_LIMIT_JOB_BYTES);
	rc = jobspec_parse_buf(y, off, "keys.yaml", &js, &e);
	assert_int_equal(rc, -SR_EPARSE);
	assert_string_equal(e.msg, "keys.yaml:20004: envs: duplicate key 'K7'");
	/* without it, all 20,000 are kept */
	sr_err_clear(&e);
	rc = jobspec_parse_buf(y, off - strlen("  K7: again\n"), "keys.yaml", &js,
			       &e);
	assert_int_equal(rc, 0);
	assert_int_equal(js.n_envs, 20000);
	assert_string_equal(js.envs[19999].key, "K19999");
	jobspec_free(&js);
	/* one byte over the cap: refused before parsing, buffer and file */
	memset(y, '#', cap);
	y[cap] = '\0';
	sr_err_clear(&e);
	rc = jobspec_parse_buf(y, SR_LIMIT_JOB_BYTES + 1, "big.yaml", &js, &e);
	assert_int_equal(rc, -EFBIG);
	assert_non_null(strstr(e.msg, "big.yaml: 262145 bytes; a job file may "
				      "have at most 256 KiB"));
	fd = mkstemp(path);
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	for (i = 0; i < 16; i++) /* 4 MiB */
		fwrite(y, 1, cap, f);
	fclose(f);
	sr_err_clear(&e);
	rc = jobspec_parse_file(path, &js, &e);
	unlink(path);
	assert_int_equal(rc, -EFBIG);
	assert_non_null(strstr(e.msg, "larger than 256 KiB"));
	/* a NUL in the text, or inside a quoted value, is refused; the
	 * name is never stored cut at it */
	sr_err_clear(&e);
	rc = jobspec_parse_buf("name: a\0b\nrun: x\n", 17, "nul.yaml", &js, &e);
	assert_int_equal(rc, -SR_EPARSE);
	assert_non_null(strstr(e.msg, "NUL"));
	sr_err_clear(&e);
	strcpy(y, "name: \"nul\\0after\"\nrun: x\n");
	rc = jobspec_parse_buf(y, strlen(y), "q.yaml", &js, &e);
	assert_int_equal(rc, -SR_EPARSE);
	assert_string_equal(e.msg, "q.yaml:1: name: contains a NUL character");
	/* line separators and the byte-order mark in a name */
	{
		static const char *const bad[] = { "a\xe2\x80\xa8" "b", "a\xe2\x80\xa9" "b",
						   "\xef\xbb\xbfname" };
		static const unsigned cps[] = { 0x2028, 0x2029, 0xfeff };

		for (i = 0; i < 3; i++) {
			char msg[64];

			off = (size_t)sprintf(y, "name: \"%s\"\nrun: x\n", bad[i]);
			sr_err_clear(&e);
			rc = jobspec_parse_buf(y, off, "n.yaml", &js, &e);
			assert_int_equal(rc, -SR_EPARSE);
			snprintf(msg, sizeof msg, "character U+%04X", cps[i]);
			assert_non_null(strstr(e.msg, msg));
		}
	}
	free(y);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_full),
		cmocka_unit_test(test_defaults_and_forms),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_limits_table),
		cmocka_unit_test(test_yaml_depth),
		cmocka_unit_test(test_input_limits),
		cmocka_unit_test(test_governance_conflicts),
		cmocka_unit_test(test_sizes),
		cmocka_unit_test(test_json_roundtrip),
		cmocka_unit_test(test_example_files),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
