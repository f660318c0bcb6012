/* Unit tests: lib/providers/slurm/slurm_burst.c - spot bursting's text:
 * node names, `scontrol show hostnames`, a job comment's deadline=,
 * squeue's lines of a node's jobs, --deadline options, where a node's
 * deadline comes from, the spot job's file (parsed back as a job file)
 * and sinfo's node line.  (Against a real Slurm:
 * tests/py/test_slurm_burst.py.) */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "market/jobspec.h"
#include "providers/slurm/slurm_burst.h"

static void test_names(void **state)
{
	char n[SLURM_BURST_NAME_MAX][SLURM_BURST_NAME_MAX];
	char longname[SLURM_BURST_NAME_MAX + 1];
	struct sr_err e = { 0 };

	(void)state;
	assert_true(slurm_burst_name_ok("b1"));
	assert_true(slurm_burst_name_ok("gpu-burst_2.eu"));
	assert_false(slurm_burst_name_ok(""));
	assert_false(slurm_burst_name_ok("-b1"));
	assert_false(slurm_burst_name_ok(".b1"));
	assert_false(slurm_burst_name_ok("b 1"));
	assert_false(slurm_burst_name_ok("b1;rm"));
	assert_false(slurm_burst_name_ok("b$(x)"));
	memset(longname, 'a', SLURM_BURST_NAME_MAX);
	longname[SLURM_BURST_NAME_MAX] = '\0';
	assert_false(slurm_burst_name_ok(longname));

	assert_int_equal(slurm_burst_parse_hostnames("b1\nb2\n\nb10\r\n", n, 8, &e), 3);
	assert_string_equal(n[0], "b1");
	assert_string_equal(n[2], "b10");
	assert_int_equal(slurm_burst_parse_hostnames("", n, 8, &e), 0);
	assert_int_equal(slurm_burst_parse_hostnames("b1\nb 2\n", n, 8, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "line 2"));
	assert_int_equal(slurm_burst_parse_hostnames("b1\nb2\nb3\n", n, 2, &e), -E2BIG);
}

static void test_comment_deadline(void **state)
{
	struct sr_err e = { 0 };
	int64_t s = 0;

	(void)state;
	assert_int_equal(slurm_burst_comment_deadline("deadline=2h", &s, &e), 1);
	assert_int_equal(s, 7200);
	assert_int_equal(slurm_burst_comment_deadline("team=nlp, deadline=90m;x",
						      &s, &e), 1);
	assert_int_equal(s, 5400);
	assert_int_equal(slurm_burst_comment_deadline("", &s, &e), 0);
	assert_int_equal(slurm_burst_comment_deadline("nodeadline=2h", &s, &e), 0);
	assert_int_equal(slurm_burst_comment_deadline("deadline=soon", &s, &e),
			 -EINVAL);
	assert_non_null(strstr(e.msg, "deadline=soon"));
	assert_int_equal(slurm_burst_comment_deadline("deadline=0s", &s, &e),
			 -EINVAL);
	/* under a second (found by fuzz_slurm_parsers) */
	assert_int_equal(slurm_burst_comment_deadline("deadline=099ms", &s, &e),
			 -EINVAL);
}

static void test_jobs_and_need(void **state)
{
	struct slurm_burst_job v[4];
	struct slurm_burst_deadline d[3];
	struct slurm_burst_need need;
	struct sr_err e = { 0 };
	int n;

	(void)state;
	n = slurm_burst_parse_jobs("12|burst|10:00|deadline=2h\n"
				   "13|burst|UNLIMITED|(null)\n"
				   "14|other|1:00:00|a|b deadline=30m\n", v, 4, &e);
	assert_int_equal(n, 3);
	assert_int_equal(v[0].id, 12);
	assert_string_equal(v[0].partition, "burst");
	assert_int_equal(v[0].limit_s, 600);
	assert_int_equal(v[1].limit_s, -1);
	assert_string_equal(v[1].comment, "");
	assert_string_equal(v[2].comment, "a|b deadline=30m");
	assert_int_equal(slurm_burst_parse_jobs("x|p|1|c\n", v, 4, &e), -EINVAL);
	assert_int_equal(slurm_burst_parse_jobs("12|p\n", v, 4, &e), -EINVAL);
	assert_int_equal(slurm_burst_parse_jobs("12|p|never|c\n", v, 4, &e), -EINVAL);

	assert_int_equal(slurm_burst_parse_deadline_opt("12h", &d[0], &e), 0);
	assert_string_equal(d[0].partition, "");
	assert_int_equal(d[0].s, 43200);
	assert_int_equal(slurm_burst_parse_deadline_opt("burst=2d", &d[1], &e), 0);
	assert_string_equal(d[1].partition, "burst");
	assert_int_equal(d[1].s, 172800);
	assert_int_equal(slurm_burst_parse_deadline_opt("=2h", &d[2], &e), -EINVAL);
	assert_int_equal(slurm_burst_parse_deadline_opt("burst=", &d[2], &e), -EINVAL);
	assert_int_equal(slurm_burst_parse_deadline_opt("b b=1h", &d[2], &e), -EINVAL);

	/* the earliest comment wins; the work is the longest limit */
	assert_int_equal(slurm_burst_need_of(v, 3, d, 2, &need, &e), 0);
	assert_int_equal(need.deadline_s, 1800);
	assert_string_equal(need.why, "job 14's comment");
	assert_int_equal(need.work_s, 3600);
	/* no comment: the partition's default before the one of all */
	assert_int_equal(slurm_burst_need_of(&v[1], 1, d, 2, &need, &e), 0);
	assert_int_equal(need.deadline_s, 172800);
	assert_string_equal(need.why, "partition burst's default");
	/* no job: the default of all, work unknown */
	assert_int_equal(slurm_burst_need_of(v, 0, d, 2, &need, &e), 0);
	assert_int_equal(need.deadline_s, 43200);
	assert_int_equal(need.work_s, -1);
	assert_int_equal(slurm_burst_need_of(v, 0, d, 0, &need, &e), 0);
	assert_int_equal(need.deadline_s, -1);
	/* a bad comment names the job */
	strcpy(v[0].comment, "deadline=soon");
	assert_int_equal(slurm_burst_need_of(v, 1, d, 2, &need, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "Slurm job 12"));
}

static void test_job_yaml(void **state)
{
	struct slurm_burst_spec s = {
		.name = "slurm-hpc-b1", .node = "b1", .accelerators = "V100:1",
		.spotrun = "/usr/bin/spotrun", .slurmd = "/usr/sbin/slurmd",
		.bin = "", .slurm_conf = "/etc/slurm/a \"b\".conf",
		.need = { .deadline_s = 7200, .work_s = 600 },
	};
	struct jobspec js;
	struct sr_err e = { 0 };
	char *y = NULL;

	(void)state;
	assert_int_equal(slurm_burst_job_yaml(&s, &y, &e), 0);
	assert_non_null(strstr(y, "use_spot: true"));
	assert_non_null(strstr(y, "run: exec \"$SPOTRUN_SLURM_SPOTRUN\" slurm node "
			       "\"$SPOTRUN_SLURM_NODE\"\n"));
	/* it is a job file spotrund takes */
	jobspec_init(&js);
	assert_int_equal(jobspec_parse_buf(y, strlen(y), "burst.yaml", &js, &e), 0);
	assert_string_equal(js.name, "slurm-hpc-b1");
	assert_int_equal(js.use_spot, 1);
	assert_int_equal(js.deadline_kind, JOBSPEC_DEADLINE_RELATIVE);
	assert_true(js.deadline_ns == INT64_C(7200) * 1000000000);
	assert_true(js.work_h > 0.16 && js.work_h < 0.17);
	for (size_t i = 0; i < js.n_envs; i++)
		if (!strcmp(js.envs[i].key, "SLURM_CONF"))
			assert_string_equal(js.envs[i].value, "/etc/slurm/a \"b\".conf");
	jobspec_free(&js);
	free(y);

	/* no deadline: no spotrun: section */
	s.need.deadline_s = -1;
	s.need.work_s = -1;
	assert_int_equal(slurm_burst_job_yaml(&s, &y, &e), 0);
	assert_null(strstr(y, "spotrun:\n"));
	free(y);
	s.node = "b1;x";
	assert_int_equal(slurm_burst_job_yaml(&s, &y, &e), -EINVAL);
	assert_null(y);
	s.node = "b1";
	s.spotrun = "spotrun";
	assert_int_equal(slurm_burst_job_yaml(&s, &y, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "spotrun"));
}

static void test_node_line(void **state)
{
	bool up = false, ours = false;

	(void)state;
	assert_int_equal(slurm_burst_node_line("drained|" SLURM_BURST_REASON, &up,
					       &ours), 0);
	assert_true(up);
	assert_true(ours);
	assert_int_equal(slurm_burst_node_line("drained*|" SLURM_BURST_REASON,
					       &up, &ours), 0);
	assert_false(up);
	assert_int_equal(slurm_burst_node_line("draining|maintenance", &up, &ours), 0);
	assert_true(up);
	assert_false(ours);
	assert_int_equal(slurm_burst_node_line("mixed#|none", &up, &ours), 0);
	assert_false(up);
	assert_int_equal(slurm_burst_node_line("idle~|none", &up, &ours), 0);
	assert_false(up);
	assert_int_equal(slurm_burst_node_line("idle", &up, &ours), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_comment_deadline),
		cmocka_unit_test(test_jobs_and_need),
		cmocka_unit_test(test_job_yaml),
		cmocka_unit_test(test_node_line),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
