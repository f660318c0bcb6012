/* Unit tests: adding a provider is a folder plus a registry line.  The
 * `toy` provider (tests/providers/toy/) joins the built-in registry with
 * one line, X(toy); a real spotrund (lib/ctl, manual reconciler passes)
 * started with --providers toy plans a job whose infra names toy's cloud
 * on toy's pools, launches its node through toy's driver with the token
 * toy's bootstrap handed over, and runs it to the end as the test speaks
 * for the node's agent.  Nothing in lib/ctl names toy.  Also: a job that
 * names a cloud no provider sells is refused with the registry's words,
 * and a provider name the registry lacks is refused at start. */
#include "ctl_fixture.h"

#include <errno.h>
#include <inttypes.h>

#include "ctl/ctl_int.h"
#include "ctl/recon.h"
#include "market/jobspec.h"
#include "providers/registry.h"
#include "../providers/toy/toy.h"

/* THE TEST'S REGISTRY: the built-in one plus one line. */
#define ENTRY(n) &prov_##n,
#define TEST_PROVIDERS(X) PROVIDERS(X) X(toy)
#define DECLARE(n) extern const struct cloud_prov_def prov_##n;
PROVIDERS(DECLARE)
static const struct cloud_prov_def *const registry[] = {
	TEST_PROVIDERS(ENTRY) NULL
};

static int start(const char *providers, struct sr_err *e)
{
	struct ctl_config cfg;

	ctl_config_defaults(&cfg);
	cfg.state_dir = dir;
	cfg.listen_port = 0;
	cfg.data_dir = "data";
	cfg.agent_path = "/bin/false"; /* toy starts nothing */
	cfg.provider = providers;
	cfg.registry = registry;
	cfg.provision_ms = 0;
	cfg.manual_reconcile = 1;
	cfg.heartbeat_timeout_ms = 60000;
	cfg.boot_timeout_ms = 60000;
	if (ctl_start(&cfg, &ctl, e))
		return -1;
	snprintf(base, sizeof base, "http://127.0.0.1:%d", ctl_port(ctl));
	return 0;
}

static int tsetup(void **state)
{
	struct sr_err e = { 0 };

	(void)state;
	sr_log_set_level(SR_LOG_ERROR);
	snprintf(dir, sizeof dir, "/tmp/sr-provtoy-XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	if (start("toy", &e)) {
		fprintf(stderr, "ctl_start: %s\n", e.msg);
		return -1;
	}
	return 0;
}

static void pass(void)
{
	assert_int_equal(ctl__reconcile_once(ctl), 0);
}

static const char *state_of(json_t *j)
{
	return json_string_value(json_object_get(j, "state"));
}

/* The node's token: at the first call, the bootstrap secret toy's
 * bootstrap got is traded for it, as the agent does (nodeboot.h). */
static const char *node_token_of(int64_t node)
{
	static int64_t have;
	static char tok[80];
	const char *secret = toy_token(node);
	json_t *v = NULL;
	char p[96];

	if (have == node)
		return tok;
	assert_non_null(secret);
	snprintf(p, sizeof p, "/v1/nodes/%lld/bootstrap", (long long)node);
	assert_int_equal(jreq("POST", p, secret, json_pack("{s:s}", "nonce",
			      "0123456789abcdef0123456789abcdef"), &v), 200);
	snprintf(tok, sizeof tok, "%s", json_string_value(json_object_get(v,
								"token")));
	json_decref(v);
	have = node;
	return tok;
}

static void agent(int64_t node, const char *what, json_t *body)
{
	const char *tok = node_token_of(node);
	json_t *v = NULL;
	char p[96];

	assert_non_null(tok);
	snprintf(p, sizeof p, "/v1/nodes/%lld/%s", (long long)node, what);
	if (jreq("POST", p, tok, body, &v) != 200)
		fail_msg("%s: %s", what, v ? err_msg(v) : "?");
	json_decref(v);
}

/* A job kept to infra: toy is planned on toy's pools, launched through
 * toy's driver and runs to its end there. */
static void test_job_plans_and_launches_on_toy(void **state)
{
	json_t *j, *n;
	int64_t id, node;
	int before = toy_provisions();

	(void)state;
	id = create_job("name: t\nresources:\n  accelerators: V100:1\n"
			"  use_spot: true\n  infra: toy\nrun: echo hi\n"
			"spotrun:\n  deadline: 100h\n  work: 2h\n");
	assert_true(id > 0);
	pass();
	pass();
	j = get_job(id);
	assert_string_equal(state_of(j), "PROVISIONING");
	n = json_array_get(json_object_get(j, "nodes"), 0);
	assert_non_null(n);
	node = json_integer_value(json_object_get(n, "id"));
	assert_string_equal(json_string_value(json_object_get(n, "provider")), "toy");
	assert_string_equal(json_string_value(json_object_get(n, "cloud")), "toy");
	assert_string_equal(json_string_value(json_object_get(n, "region")),
			    "toy-1");
	/* the cheapest spot pool of the two */
	assert_string_equal(json_string_value(json_object_get(n, "zone")),
			    "toy-1a");
	assert_true(json_is_true(json_object_get(n, "spot")));
	assert_string_equal(json_string_value(json_object_get(n, "instance_id")),
			    "toy-0");
	json_decref(j);
	assert_int_equal(toy_provisions(), before + 1);
	/* the test is the node's agent, with the token toy's bootstrap got */
	agent(node, "register", json_object());
	pass();
	j = get_job(id);
	assert_string_equal(state_of(j), "RUNNING");
	json_decref(j);
	agent(node, "report", json_pack("{s:[{s:s,s:i,s:i,s:s}]}", "events",
		  "type", "exit", "attempt", 1, "exit_code", 0, "cause", "completed"));
	pass();
	pass();
	j = get_job(id);
	assert_string_equal(state_of(j), "SUCCEEDED");
	json_decref(j);
	assert_true(toy_terminations() >= 1); /* the node's instance went */
}

/* A job naming a cloud that neither the catalog nor a provider of the
 * registry sells is refused, in the registry's words; toy's is known. */
static void test_infra_asks_the_registry(void **state)
{
	json_t *v = NULL;
	long st;

	(void)state;
	st = jreq("POST", "/v1/jobs", ctl_admin_token(ctl),
		  json_pack("{s:s}", "spec_yaml", "name: t\nresources:\n"
			    "  accelerators: V100:1\n  infra: nimbus\n"
			    "run: echo hi\n"), &v);
	assert_int_equal(st, 400);
	assert_non_null(strstr(err_msg(v), "unknown cloud 'nimbus': no catalog "
			       "cloud and no provider sells it"));
	assert_non_null(strstr(err_msg(v), "from providers: slurm, toy"));
	json_decref(v);
	assert_int_equal(jobspec_cloud_known("toy"), 1);
	assert_int_equal(jobspec_cloud_known("nimbus"), 0);
}

/* A provider name the registry does not list fails the start, naming
 * the registry's providers; one it lists twice too. */
static void test_unknown_provider_name(void **state)
{
	struct sr_err e = { 0 };

	(void)state;
	ctl_stop(ctl);
	ctl = NULL;
	assert_int_equal(start("toy,nimbus", &e), -1);
	/* the built-in providers, then the test's own */
	assert_non_null(strstr(e.msg, "unknown provider 'nimbus' (built: local, "
			       "aws, "));
	assert_non_null(strstr(e.msg, ", toy)"));
	assert_int_equal(start("toy,toy", &e), -1);
	assert_non_null(strstr(e.msg, "'toy' named twice"));
	assert_int_equal(start("toy", &e), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_job_plans_and_launches_on_toy),
		cmocka_unit_test(test_infra_asks_the_registry),
		cmocka_unit_test(test_unknown_provider_name),
	};

	return cmocka_run_group_tests(tests, tsetup, teardown);
}
