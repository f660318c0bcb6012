/*
 * test_finops_focus13.c - the FOCUS 1.3 export run through the checker
 * (focus_check.h: every rule over every row) with shared costs split
 * both ways, a reserved commitment partly used, and the report's shared
 * column agreeing with the allocated rows.
 */
#include <sqlite3.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "finops_fixture.h"
#include "focus_check.h"
#include "finops/alloc.h"
#include "finops/focus13.h"

/* 2027-01-01T00:00:00Z */
#define J0 (INT64_C(1798761600) * SR_NS_PER_SEC)

static const char conf_json[] =
	"{\"shared\": {\"split\": \"%s\"},"
	" \"control_plane\": {\"resource_id\": \"i-0cp\", \"name\": \"spotrund\","
	"  \"hourly_price\": \"0.10\"},"
	" \"commitments\": [{\"id\": \"ri-1\", \"provider\": \"local\","
	"  \"region\": \"local-1\", \"instance_type\": \"gpu.r\", \"gpus\": 8,"
	"  \"count\": 1, \"hourly_price\": \"12\", \"start\": \"2027-01-01\","
	"  \"end\": \"2028-01-01\", \"description\": \"1-year reserved\"}]}";

static void job(sqlite3 *db, int64_t id, const char *team)
{
	char sql[512];

	snprintf(sql, sizeof sql, "INSERT INTO jobs(id, name, state, spec_name, "
		 "spec_yaml, spec_json, num_nodes, max_restarts, created_ns, "
		 "updated_ns, state_since_ns, sim_start_s, team) VALUES(%lld, "
		 "'job%lld', 'RUNNING', 'j.yaml', 'run: x', '{}', 1, 3, 1, 1, 1, 0, "
		 "'%s')", (long long)id, (long long)id, team);
	assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
}

static void row(sqlite3 *db, int64_t j, int64_t node, const char *type, int gpus,
		enum ledger_pricing p, sr_micros price, int64_t at, int64_t len)
{
	struct sr_err e;
	struct ledger_row r = {
		.provider = "local", .region = "local-1", .zone = "local-1a",
		.instance_type = type, .accelerator = "A100", .gpus = gpus,
		.pricing = p, .unit_price = price, .list_price = 2 * price,
		.reserved_price = LEDGER_PRICE_UNKNOWN, .job_id = j,
		.node_id = node, .busy = true, .util_permille = 900,
		.start_ns = J0 + at, .end_ns = J0 + at + len, .billed_ns = len,
	};

	assert_int_equal(ledger_append(db, &r, NULL, &e), 0);
}

struct out {
	struct csv cu, cc;
	char *cub, *ccb;
	struct finops_alloc al;
	struct finops_conf conf;
};

static void export(const char *split, struct out *o)
{
	sqlite3 *db;
	struct store *s = NULL, *tmp = NULL;
	struct sr_err e;
	struct finops_filter f = { .since_ns = J0, .until_ns = J0 + 4 * HOUR_NS };
	char cj[1024];
	json_t *root;
	size_t len, n;
	FILE *mem;

	assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_OK);
	assert_int_equal(ledger_migrate(db, &e), 0);
	job(db, 1, "ml");
	job(db, 2, "ml");
	job(db, 3, "infra");
	row(db, 1, 1, "gpu.x", 8, LEDGER_DYNAMIC, 8000000, 0, 2 * HOUR_NS);
	row(db, 2, 2, "gpu.x", 2, LEDGER_DYNAMIC, 2000000, 0, 2 * HOUR_NS);
	/* one hour on the reserved instance: 3 of its 4 hours are idle */
	row(db, 3, 3, "gpu.r", 8, LEDGER_COMMITTED, 12000000, HOUR_NS, HOUR_NS);
	assert_int_equal(store_bridge(db, &s, &tmp, &e), 0);
	snprintf(cj, sizeof cj, conf_json, split);
	root = json_loads(cj, 0, NULL);
	assert_non_null(root);
	assert_int_equal(finops_conf_from_json(root, "finops.json", &o->conf, &e), 0);
	json_decref(root);
	assert_int_equal(finops_alloc_build(s, &o->conf, &f, 0, &o->al, &e), 0);
	mem = open_memstream(&o->cub, &len);
	assert_int_equal(finops_focus13_write(s, &f, NULL, &o->conf, &o->al, mem,
					      &n, &e), 0);
	fclose(mem);
	mem = open_memstream(&o->ccb, &len);
	assert_int_equal(finops_focus13_cc_write(&o->conf, NULL, mem, NULL, &e), 0);
	fclose(mem);
	csv_parse(o->cub, &o->cu);
	csv_parse(o->ccb, &o->cc);
	assert_int_equal((size_t)o->cu.nrows - 1, n);
	store_close(tmp);
	sqlite3_close(db);
}

static void out_free(struct out *o)
{
	csv_free(&o->cu);
	csv_free(&o->cc);
	free(o->cub);
	free(o->ccb);
	finops_alloc_free(&o->al);
	finops_conf_free(&o->conf);
}

static void test_checker_passes(void **state)
{
	static const char *const splits[] = { "gpu_hours", "even" };

	(void)state;
	for (size_t i = 0; i < 2; i++) {
		struct out o = { 0 };
		sr_micros cp = 0, idle = 0;

		export(splits[i], &o);
		fc_check_cc(&o.cc);
		fc_check_cu(&o.cu, &o.cc);
		/* 3 usage rows, 2 origin charges x 3 jobs */
		assert_int_equal(o.cu.nrows - 1, 3 + 6);
		for (int r = 1; r < o.cu.nrows; r++) {
			if (!strcmp(val(&o.cu, r, "ResourceId"), "i-0cp"))
				cp += micros(val(&o.cu, r, "BilledCost"));
			if (!strcmp(val(&o.cu, r, "ResourceId"), "ri-1"))
				idle += micros(val(&o.cu, r, "BilledCost"));
		}
		/* 4 h of control plane at $0.10; 3 idle reserved hours at $12 */
		assert_true(cp == 400000);
		assert_true(idle == 36000000);
		/* the Committed usage row is applied to its commitment */
		assert_non_null(strstr(o.cub, "ContractCommitmentId\"\":\"\"ri-1"));
		out_free(&o);
	}
}

static void test_split_methods(void **state)
{
	struct out o = { 0 };
	sr_micros team_ml = 0;

	(void)state;
	/* GPU-hours: job 1 16, job 2 4, job 3 8 of 28 */
	export("gpu_hours", &o);
	assert_int_equal(o.al.nitems, 2);
	for (size_t i = 0; i < o.al.nshares; i++)
		if (o.al.shares[i].item == 0 && o.al.shares[i].job_id == 1)
			assert_true(o.al.shares[i].cost == 228571); /* 0.4 x 16/28 */
	out_free(&o);
	/* even: ml and infra get half each */
	export("even", &o);
	for (size_t i = 0; i < o.al.nshares; i++)
		if (o.al.shares[i].item == 0 && !strcmp(o.al.shares[i].team, "ml"))
			team_ml += o.al.shares[i].cost;
	assert_true(team_ml == 200000);
	out_free(&o);
}

static void test_conf_errors(void **state)
{
	static const struct { const char *json, *msg; } bad[] = {
		{ "{\"shared\": {\"split\": \"random\"}}",
		  "finops.json: shared.split: 'random' is not gpu_hours or even" },
		{ "{\"commitments\": [{\"id\": \"a\", \"provider\": \"aws\","
		  " \"region\": \"r\", \"instance_type\": \"t\","
		  " \"hourly_price\": \"lots\", \"start\": \"2027-01-01\","
		  " \"end\": \"2028-01-01\"}]}",
		  "finops.json: commitments[0].hourly_price: 'lots' is not an amount" },
		{ "{\"budgets\": [{\"team\": \"ml\", \"project\": \"x\","
		  " \"monthly\": 5}]}", "finops.json: budgets[0]: give team or project" },
		{ "{\"colour\": 1}", "finops.json: unknown field 'colour'" },
		{ "{\"tokens\": [{\"name\": \"../x\"}]}",
		  "finops.json: tokens[0].name: '../x': only letters, digits" },
		{ "{\"tokens\": [{\"name\": \"a\", \"team\": \"a b\"}]}",
		  "finops.json: tokens[0].team: not a label" },
	};
	(void)state;
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct finops_conf c;
		struct sr_err e = { 0 };
		json_t *root = json_loads(bad[i].json, 0, NULL);

		assert_non_null(root);
		assert_int_equal(finops_conf_from_json(root, "finops.json", &c, &e),
				 -SR_EPARSE);
		if (!strstr(e.msg, bad[i].msg))
			fail_msg("want '%s', got '%s'", bad[i].msg, e.msg);
		finops_conf_free(&c);
		json_decref(root);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_checker_passes),
		cmocka_unit_test(test_split_methods),
		cmocka_unit_test(test_conf_errors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
