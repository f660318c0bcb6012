/* Unit tests: lib/providers/slurm/slurm_cmd.c - what the slurm provider
 * reads from Slurm's commands: sinfo lines into partitions (GPUs per
 * node from the gres, idle nodes, MaxTime), Slurm's time formats, the
 * error class of a command's message, and the driver's squeue lines
 * (slurm_drv.c) into instances.  (The provider against a real
 * Slurm: tests/py/test_slurm_provider.py.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "providers/slurm/slurm_int.h"

static void test_sinfo_partitions(void **state)
{
	struct slurm_part p[4];
	struct sr_err e = { 0 };
	/* sinfo groups a partition's nodes by state: one line each */
	const char *text =
		"low|1|up|1:00:00|gpu:2|idle\n"
		"low|1|up|1:00:00|gpu:2|alloc\n"
		"high|2|up|1-00:00:00|gpu:a100:8(S:0-1)|mix\n"
		"cpu|4|down|infinite|(null)|idle\n";
	int n;

	(void)state;
	n = slurm__parse_sinfo(text, p, 4, &e);
	assert_int_equal(n, 3);
	assert_string_equal(p[0].name, "low");
	assert_int_equal(p[0].nodes, 2);
	assert_int_equal(p[0].idle, 1);
	assert_int_equal(p[0].gpus, 2);
	assert_string_equal(p[0].gpu_type, "");
	assert_int_equal(p[0].max_time_s, 3600);
	assert_true(p[0].up);
	assert_int_equal(p[1].gpus, 8);
	assert_string_equal(p[1].gpu_type, "a100");
	assert_int_equal(p[1].max_time_s, 86400);
	assert_int_equal(p[2].gpus, 0);
	assert_int_equal(p[2].max_time_s, -1);
	assert_false(p[2].up);
	/* bounded by max: the rest is left out, not overrun */
	assert_int_equal(slurm__parse_sinfo(text, p, 1, &e), 1);
}

static void test_sinfo_bad_lines(void **state)
{
	struct slurm_part p[2];
	struct sr_err e = { 0 };

	(void)state;
	assert_int_equal(slurm__parse_sinfo("low|1|up\n", p, 2, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "sinfo: line 1"));
	assert_int_equal(slurm__parse_sinfo("low|1|up|1:00:00|gpu:1|idle\n"
					    "x|1|up|soon|gpu:1|idle\n", p, 2, &e),
			 -EINVAL);
	assert_non_null(strstr(e.msg, "line 2: time limit 'soon'"));
}

static void test_times(void **state)
{
	int64_t s;

	(void)state;
	assert_int_equal(slurm__parse_time("60", &s), 0);
	assert_int_equal(s, 3600); /* bare minutes */
	assert_int_equal(slurm__parse_time("05:30", &s), 0);
	assert_int_equal(s, 330);  /* min:sec */
	assert_int_equal(slurm__parse_time("02:00:01", &s), 0);
	assert_int_equal(s, 7201);
	assert_int_equal(slurm__parse_time("2-03", &s), 0);
	assert_int_equal(s, (2 * 24 + 3) * 3600);
	assert_int_equal(slurm__parse_time("1-00:00:10", &s), 0);
	assert_int_equal(s, 86410);
	assert_int_equal(slurm__parse_time("UNLIMITED", &s), 0);
	assert_int_equal(s, -1);
	assert_int_equal(slurm__parse_time("", &s), -EINVAL);
	assert_int_equal(slurm__parse_time("1:x", &s), -EINVAL);
	assert_int_equal(slurm__parse_time("-5", &s), -EINVAL);
	/* fields whose product would overflow (fuzz_slurm_parsers found it) */
	assert_int_equal(slurm__parse_time("299999999999999901", &s), -EINVAL);
	assert_int_equal(slurm__parse_time("2999999999999999999-1", &s), -EINVAL);
	assert_int_equal(slurm__parse_time("1-00:99999999999:10", &s), -EINVAL);
}

static void test_classes(void **state)
{
	(void)state;
	assert_int_equal(slurm__classify("sbatch: error: Batch job submission "
					 "failed: Invalid partition name "
					 "specified"), CLOUD_EINVALID);
	assert_int_equal(slurm__classify("sbatch: error: Batch job submission "
					 "failed: Requested time limit is "
					 "invalid (missing or exceeds some "
					 "limit)"), CLOUD_EINVALID);
	assert_int_equal(slurm__classify("squeue: error: Unable to contact "
					 "slurm controller (connect failure)"),
			 CLOUD_ETRANSIENT);
	assert_int_equal(slurm__classify("sbatch: error: Batch job submission "
					 "failed: Requested node configuration "
					 "is not available"), CLOUD_ECAPACITY);
	assert_int_equal(slurm__classify("sbatch: error: QOSMaxSubmitJobPer"
					 "UserLimit"), CLOUD_EQUOTA);
	assert_int_equal(slurm__classify("sbatch: error: Access/permission "
					 "denied"), CLOUD_EAUTH);
}

/* The queue estimate (slurm_queue.c) from squeue's lines. */
static void test_queue_wait(void **state)
{
	struct slurm_part pt = { .name = "low", .nodes = 4, .idle = 1 };
	struct slurm_qjob q[8];
	struct sr_err e = { 0 };
	char basis[160];
	int n;

	(void)state;
	n = slurm__parse_squeue_queue("RUNNING|2|30:00\nRUNNING|1|10:00\n"
				      "PENDING|1|1:00:00\n", q, 8, &e);
	assert_int_equal(n, 3);
	assert_true(q[2].pending);
	assert_int_equal(q[0].left_s, 1800);
	/* 1 idle; 1 ahead of us: the 10-minute job's node gives 2 free */
	assert_int_equal(slurm__queue_wait(&pt, q, n, 1, basis, sizeof basis), 600);
	assert_non_null(strstr(basis, "1 of 4 nodes idle, 2 running, 1 pending "
			       "(1 nodes)"));
	assert_non_null(strstr(basis, "time limits"));
	/* idle nodes enough for the pending job and ours: now */
	pt.idle = 2;
	n = slurm__parse_squeue_queue("PENDING|1|5\n", q, 8, &e);
	assert_int_equal(slurm__queue_wait(&pt, q, n, 1, basis, sizeof basis), 0);
	assert_non_null(strstr(basis, "starts now"));
	/* a running job without a limit in the way: unknown */
	pt.idle = 0;
	n = slurm__parse_squeue_queue("RUNNING|4|UNLIMITED\n", q, 8, &e);
	assert_int_equal(slurm__queue_wait(&pt, q, n, 1, basis, sizeof basis), -1);
	assert_non_null(strstr(basis, "no time limit"));
	/* more nodes than the partition has: unknown */
	assert_int_equal(slurm__queue_wait(&pt, q, 0, 5, basis, sizeof basis), -1);
	/* NOT_SET time left is no limit; a bad node count names the line */
	assert_int_equal(slurm__parse_squeue_queue("RUNNING|1|NOT_SET\n", q, 8,
						   &e), 1);
	assert_int_equal(q[0].left_s, -1);
	assert_int_equal(slurm__parse_squeue_queue("RUNNING|1|1\nRUNNING|x|1\n",
						   q, 8, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "squeue: line 2: node count 'x'"));
	assert_int_equal(slurm__parse_squeue_queue("RUNNING|1\n", q, 8, &e),
			 -EINVAL);
	/* lines past max are not kept */
	assert_int_equal(slurm__parse_squeue_queue("RUNNING|1|1\nRUNNING|1|1\n",
						   q, 1, &e), 1);
}

/* The driver's list (slurm_drv.c, STATES): a squeue line into its
 * nodes' instances.  A preempted job is SIGNALING while Slurm delivers
 * the preemption's TERM - its agents' notice - and still runs: read as
 * stopping, the control plane ended the noticed nodes before their
 * agents reported the final checkpoint and the exit. */
static void test_squeue_line_states(void **state)
{
	struct cloud_instance x[4];

	(void)state;
	assert_int_equal(slurm__parse_squeue_line(
		"7|sr-c1-1-1|SIGNALING|spotrun:c1:3:1,2:1|low", "c1", x, 4), 2);
	assert_string_equal(x[0].id, "slurm-7.0");
	assert_string_equal(x[1].id, "slurm-7.1");
	assert_int_equal(x[0].node_id, 1);
	assert_int_equal(x[1].node_id, 2);
	assert_int_equal(x[0].job_id, 3);
	assert_int_equal(x[1].attempt, 1);
	assert_int_equal(x[0].state, CLOUD_INST_RUNNING);
	assert_int_equal(x[1].state, CLOUD_INST_RUNNING);
	assert_string_equal(x[0].zone, "low");
	assert_int_equal(slurm__parse_squeue_line(
		"8|k|RUNNING|spotrun:c1:3:4:2|low", "c1", x, 4), 1);
	assert_string_equal(x[0].id, "slurm-8");
	assert_int_equal(x[0].state, CLOUD_INST_RUNNING);
	assert_int_equal(slurm__parse_squeue_line(
		"8|k|CONFIGURING|spotrun:c1:3:4:2|low", "c1", x, 4), 1);
	assert_int_equal(x[0].state, CLOUD_INST_PENDING);
	/* its steps are being killed (KillWait): stopping */
	assert_int_equal(slurm__parse_squeue_line(
		"8|k|COMPLETING|spotrun:c1:3:4:2|low", "c1", x, 4), 1);
	assert_int_equal(x[0].state, CLOUD_INST_STOPPING);
	assert_int_equal(slurm__parse_squeue_line(
		"8|k|PREEMPTED|spotrun:c1:3:4:2|low", "c1", x, 4), 1);
	assert_int_equal(x[0].state, CLOUD_INST_GONE);
	assert_string_equal(x[0].reason, "PREEMPTED");
	/* another cluster's, a comment not ours, a short line: none */
	assert_int_equal(slurm__parse_squeue_line(
		"8|k|RUNNING|spotrun:c2:3:4:2|low", "c1", x, 4), 0);
	assert_int_equal(slurm__parse_squeue_line(
		"8|k|RUNNING|(null)|low", NULL, x, 4), 0);
	assert_int_equal(slurm__parse_squeue_line("8|k|RUNNING", NULL, x, 4), 0);
	/* bounded by max */
	assert_int_equal(slurm__parse_squeue_line(
		"7|k|RUNNING|spotrun:c1:3:1,2,5:1|low", NULL, x, 2), 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sinfo_partitions),
		cmocka_unit_test(test_sinfo_bad_lines),
		cmocka_unit_test(test_times),
		cmocka_unit_test(test_classes),
		cmocka_unit_test(test_queue_wait),
		cmocka_unit_test(test_squeue_line_states),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
