/* Unit tests: the workload environment the agent builds (src/agent/envp.c)
 * - the torch.distributed launch contract beside SPOTRUN_* and SKYPILOT_*,
 * and the rendezvous port that changes with every attempt.
 *
 * envp.c belongs to the spotrun-agent program, not to a library, so it is
 * compiled into this test directly. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/agent/envp.c"

static const char *get(char **envp, const char *name)
{
	size_t n = strlen(name);

	for (char **p = envp; *p; p++)
		if (!strncmp(*p, name, n) && (*p)[n] == '=')
			return *p + n + 1;
	return NULL;
}

static char **build(struct assignment *a, int attempt)
{
	struct sr_err e;
	char **envp;

	sr_err_clear(&e);
	envp = envp_build(a, 7, attempt, &(struct envp_files){
				  .node_dir = "/nd", .status_file = "/nd/status",
				  .progress_file = "/nd/progress.json",
				  .notice_file = "/nd/notice",
				  .python_dir = "/opt/spotrun/python" }, &e);
	assert_non_null(envp);
	return envp;
}

static void test_torch_contract(void **state)
{
	struct assignment a;
	char **envp;
	char port[16];

	(void)state;
	memset(&a, 0, sizeof a);
	a.job_id = 42;
	a.rank = 2;
	a.num_nodes = 4;
	a.spot = -1;
	/* the job cannot override the contract */
	a.envs = json_pack("{s:s,s:s}", "RANK", "9", "MY_VAR", "x");
	envp = build(&a, 3);
	assert_string_equal(get(envp, "MASTER_ADDR"), "127.0.0.1");
	snprintf(port, sizeof port, "%u", envp_master_port(42, 3));
	assert_string_equal(get(envp, "MASTER_PORT"), port);
	assert_string_equal(get(envp, "WORLD_SIZE"), "4");
	assert_string_equal(get(envp, "RANK"), "2");
	assert_string_equal(get(envp, "NODE_RANK"), "2");
	assert_string_equal(get(envp, "NNODES"), "4");
	assert_string_equal(get(envp, "LOCAL_RANK"), "0");
	assert_string_equal(get(envp, "LOCAL_WORLD_SIZE"), "1");
	assert_string_equal(get(envp, "MY_VAR"), "x");
	/* beside SkyPilot's and spotrun's own */
	assert_string_equal(get(envp, "SKYPILOT_NODE_RANK"), "2");
	assert_string_equal(get(envp, "SKYPILOT_NUM_NODES"), "4");
	assert_string_equal(get(envp, "SPOTRUN_ATTEMPT"), "3");
	assert_null(get(envp, "SKYPILOT_TASK_ID")); /* no task id given */
	envp_free(envp);
	/* a master address given by the control plane is used as it is */
	a.master_addr = strdup("10.1.2.3");
	assert_non_null(a.master_addr);
	envp = build(&a, 3);
	assert_string_equal(get(envp, "MASTER_ADDR"), "10.1.2.3");
	assert_string_equal(get(envp, "SPOTRUN_MASTER_ADDR"), "10.1.2.3");
	assert_string_equal(get(envp, "SKYPILOT_NODE_IPS"),
			    "10.1.2.3\n10.1.2.3\n10.1.2.3\n10.1.2.3");
	envp_free(envp);
	/* the gang's addresses from the run directive, rank 0 first */
	a.node_ips = strdup("10.1.2.3\n10.1.2.4\n10.1.2.5\n10.1.2.6");
	assert_non_null(a.node_ips);
	envp = build(&a, 3);
	assert_string_equal(get(envp, "SKYPILOT_NODE_IPS"),
			    "10.1.2.3\n10.1.2.4\n10.1.2.5\n10.1.2.6");
	/* SkyPilot's older names, and the managed job's task id (issue 30) */
	assert_string_equal(get(envp, "SKY_NODE_IPS"),
			    "10.1.2.3\n10.1.2.4\n10.1.2.5\n10.1.2.6");
	assert_string_equal(get(envp, "SKY_NODE_RANK"), "2");
	envp_free(envp);
	a.task_id = strdup("sky-managed-2026-12-02-09-00-00-000001_t_42-0");
	assert_non_null(a.task_id);
	envp = build(&a, 3);
	assert_string_equal(get(envp, "SKYPILOT_TASK_ID"), a.task_id);
	assert_string_equal(get(envp, "SKYPILOT_JOB_ID"), a.task_id);
	assert_string_equal(get(envp, "SKYPILOT_SPOT_RUN_ID"), a.task_id);
	envp_free(envp);
	free(a.task_id);
	a.task_id = NULL;
	/* spotrund's port for the attempt (run directive) wins */
	a.master_port = 23456;
	envp = build(&a, 3);
	assert_string_equal(get(envp, "MASTER_PORT"), "23456");
	envp_free(envp);
	free(a.node_ips);
	free(a.master_addr);
	json_decref(a.envs);
}

static void test_port_fresh_per_attempt(void **state)
{
	(void)state;
	for (int64_t job = 1; job < 300; job += 37) {
		for (int at = 1; at < 50; at++) {
			unsigned p = envp_master_port(job, at);

			assert_true(p >= ENVP_PORT_BASE);
			assert_true(p < ENVP_PORT_BASE + ENVP_PORT_SPAN);
			/* no earlier attempt of the job within the span shares
			 * the port: its ranks cannot join this rendezvous */
			for (int old = 1; old < at; old++)
				assert_int_not_equal(envp_master_port(job, old), p);
			/* every node of the gang derives the same one */
			assert_int_equal(envp_master_port(job, at), p);
		}
	}
	/* two jobs on one host get different ports for the same attempt */
	assert_int_not_equal(envp_master_port(1, 1), envp_master_port(2, 1));
}

/* Jobs find the library: the agent's spotrun package goes first on
 * PYTHONPATH, before what the agent inherited, unless the job sets its
 * own; the library's progress report has its file. */
static void test_python_path(void **state)
{
	struct assignment a;
	char **envp;

	(void)state;
	memset(&a, 0, sizeof a);
	a.job_id = 1;
	a.num_nodes = 1;
	a.spot = -1;
	unsetenv("PYTHONPATH");
	envp = build(&a, 1);
	assert_string_equal(get(envp, "PYTHONPATH"), "/opt/spotrun/python");
	assert_string_equal(get(envp, "SPOTRUN_PROGRESS_FILE"), "/nd/progress.json");
	envp_free(envp);
	setenv("PYTHONPATH", "/site/extra", 1);
	envp = build(&a, 1);
	assert_string_equal(get(envp, "PYTHONPATH"),
			    "/opt/spotrun/python:/site/extra");
	envp_free(envp);
	a.envs = json_pack("{s:s}", "PYTHONPATH", "/mine");
	envp = build(&a, 1);
	assert_string_equal(get(envp, "PYTHONPATH"), "/mine");
	envp_free(envp);
	unsetenv("PYTHONPATH");
	json_decref(a.envs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_torch_contract),
		cmocka_unit_test(test_python_path),
		cmocka_unit_test(test_port_fresh_per_attempt),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
