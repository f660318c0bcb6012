/* Unit tests: lib/ctl/api_body.c (request body parsers) and auth.c
 * (tokens, token files, IMDS session tokens). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctl/api_body.h"
#include "ctl/auth.h"

#define S(x) x, strlen(x)

static void test_job_create(void **state)
{
	struct api_job_create b;
	struct sr_err e = { 0 };
	json_t *root = NULL;

	(void)state;
	assert_int_equal(api_parse_job_create(S("{\"spec_yaml\":\"run: x\","
		"\"workdir\":\"/tmp\",\"max_restarts\":2,\"envs\":{\"A_1\":\"v\"}}"),
		&root, &b, &e), 0);
	assert_string_equal(b.spec_yaml, "run: x");
	assert_int_equal(b.spec_len, 6);
	assert_string_equal(b.spec_name, "job.yaml");
	assert_string_equal(b.workdir, "/tmp");
	assert_int_equal(b.max_restarts, 2);
	assert_non_null(b.envs);
	json_decref(root);

	assert_int_equal(api_parse_job_create(S("{}"), &root, &b, &e), -SR_EPARSE);
	assert_non_null(strstr(e.msg, "spec_yaml: missing"));
	assert_null(root);
	assert_int_equal(api_parse_job_create(S("[1]"), &root, &b, &e), -SR_EPARSE);
	assert_non_null(strstr(e.msg, "expected a JSON object"));
	assert_int_equal(api_parse_job_create(S("{\"spec_yaml\":\"\"}"), &root, &b,
					      &e), -SR_EPARSE);
	assert_int_equal(api_parse_job_create(S("{\"spec_yaml\":\"x\",\"workdir\":"
		"\"rel/path\"}"), &root, &b, &e), -SR_EPARSE);
	assert_non_null(strstr(e.msg, "workdir"));
	assert_int_equal(api_parse_job_create(S("{\"spec_yaml\":\"x\",\"envs\":"
		"{\"1BAD\":\"v\"}}"), &root, &b, &e), -SR_EPARSE);
	assert_non_null(strstr(e.msg, "1BAD"));
	assert_int_equal(api_parse_job_create(S("{\"spec_yaml\":\"x\",\"envs\":"
		"{\"OK\":3}}"), &root, &b, &e), -SR_EPARSE);
	assert_int_equal(api_parse_job_create(S("{\"spec_yaml\":\"x\","
		"\"max_restarts\":-1}"), &root, &b, &e), -SR_EPARSE);
	assert_int_equal(api_parse_job_create(S("{\"spec_yaml\":\"a\\u0000b\"}"),
					      &root, &b, &e), -SR_EPARSE);
	assert_non_null(strstr(e.msg, "NUL"));
	assert_int_equal(api_parse_job_create(S("{\"spec_yaml\":\"x\",\"spec\":1}"),
					      &root, &b, &e), -SR_EPARSE);
	assert_non_null(strstr(e.msg, "unknown field 'spec'"));
}

static void test_heartbeat(void **state)
{
	struct api_heartbeat h;
	struct sr_err e = { 0 };
	json_t *root = NULL;

	(void)state;
	assert_int_equal(api_parse_heartbeat(S("  "), &root, &h, &e), 0);
	assert_int_equal(h.workload, WL_IDLE);
	assert_int_equal(h.step, -1);
	assert_true(h.cpu_util < 0);
	json_decref(root);
	assert_int_equal(api_parse_heartbeat(S("{\"workload\":\"running\",\"attempt\""
		":2,\"step\":7,\"total_steps\":9,\"ckpt_step\":5,\"cpu_util\":0.25,"
		"\"gpu_util\":null,\"workload_pgid\":77}"), &root, &h, &e), 0);
	assert_int_equal(h.workload, WL_RUNNING);
	assert_int_equal(h.attempt, 2);
	assert_int_equal(h.step, 7);
	assert_int_equal(h.ckpt_step, 5);
	assert_true(h.cpu_util > 0.24 && h.cpu_util < 0.26);
	assert_true(h.gpu_util < 0);
	assert_int_equal(h.workload_pgid, 77);
	json_decref(root);
	assert_int_equal(api_parse_heartbeat(S("{\"attempt\":-3}"), &root, &h, &e),
			 -SR_EPARSE);
	assert_int_equal(api_parse_heartbeat(S("{\"step\":\"7\"}"), &root, &h, &e),
			 -SR_EPARSE);
	assert_non_null(strstr(e.msg, "step"));
	assert_int_equal(api_parse_heartbeat(S("{\"gpu_util\":2}"), &root, &h, &e),
			 -SR_EPARSE);
	assert_int_equal(api_parse_heartbeat(S("{\"workload\":\"idle\""), &root, &h,
					     &e), -SR_EPARSE);
}

static void test_report(void **state)
{
	struct api_report r;
	struct sr_err e = { 0 };
	json_t *root = NULL;
	char *big;
	size_t n, off;

	(void)state;
	assert_int_equal(api_parse_report(S("{\"events\":[{\"type\":\"notice\","
		"\"action\":\"terminate\",\"time\":\"2026-11-29T14:20:05Z\"},"
		"{\"type\":\"checkpoint\",\"attempt\":1,\"step\":10,\"stall_ms\":1.5,"
		"\"final\":true,\"durable\":true},{\"type\":\"exit\",\"attempt\":1,"
		"\"exit_code\":null,\"signal\":9,\"cause\":\"preempted\"},{\"type\":"
		"\"log\",\"line\":\"hi\",\"stream\":\"stderr\"}]}"), &root, &r, &e), 0);
	assert_int_equal(r.n, 4);
	assert_int_equal(r.ev[0].type, EV_NOTICE);
	assert_true(r.ev[0].time_ns > 0);
	assert_int_equal(r.ev[1].step, 10);
	assert_true(r.ev[1].final && r.ev[1].durable);
	assert_int_equal(r.ev[2].exit_code, INT64_MIN);
	assert_int_equal(r.ev[2].signal, 9);
	assert_int_equal(r.ev[2].cause, CAUSE_PREEMPTED);
	assert_string_equal(r.ev[3].stream, "stderr");
	api_report_free(&r);
	json_decref(root);

	assert_int_equal(api_parse_report(S("{\"events\":[{\"type\":\"exit\","
		"\"attempt\":1,\"cause\":\"vanished\"}]}"), &root, &r, &e), -SR_EPARSE);
	assert_non_null(strstr(e.msg, "events[0]: cause"));
	assert_int_equal(api_parse_report(S("{\"events\":[{\"type\":\"notice\","
		"\"time\":\"yesterday\"}]}"), &root, &r, &e), -SR_EPARSE);
	assert_non_null(strstr(e.msg, "time"));
	assert_int_equal(api_parse_report(S("{\"events\":[{\"type\":\"util\","
		"\"line\":\"x\"}]}"), &root, &r, &e), -SR_EPARSE);
	assert_non_null(strstr(e.msg, "unknown field 'line'"));
	assert_int_equal(api_parse_report(S("{\"events\":{}}"), &root, &r, &e),
			 -SR_EPARSE);
	/* the agent's isolation event: a known mode and a message */
	assert_int_equal(api_parse_report(S("{\"events\":[{\"type\":\"isolation\","
		"\"mode\":\"userns\",\"message\":\"hidden\"}]}"), &root, &r, &e), 0);
	assert_int_equal(r.ev[0].type, EV_ISOLATION);
	assert_string_equal(r.ev[0].mode, "userns");
	assert_string_equal(r.ev[0].message, "hidden");
	api_report_free(&r);
	json_decref(root);
	assert_int_equal(api_parse_report(S("{\"events\":[{\"type\":\"isolation\","
		"\"mode\":\"chroot\",\"message\":\"x\"}]}"), &root, &r, &e),
		-SR_EPARSE);
	assert_non_null(strstr(e.msg, "events[0]: mode: expected userns"));
	assert_int_equal(api_parse_report(S("{\"events\":[{\"type\":\"isolation\","
		"\"mode\":\"none\"}]}"), &root, &r, &e), -SR_EPARSE);
	assert_non_null(strstr(e.msg, "message"));
	assert_int_equal(api_parse_report(S("{\"events\":[{\"type\":\"exit\","
		"\"attempt\":1,\"exit_code\":999,\"cause\":\"crashed\"}]}"), &root, &r,
		&e), -SR_EPARSE);

	/* 1001 log lines: over the per-report limit */
	n = 64 + 1001 * 40;
	big = malloc(n);
	assert_non_null(big);
	off = (size_t)sprintf(big, "{\"events\":[");
	for (int i = 0; i < 1001; i++)
		off += (size_t)sprintf(big + off, "%s{\"type\":\"log\",\"line\":\"l\"}",
				       i ? "," : "");
	off += (size_t)sprintf(big + off, "]}");
	assert_int_equal(api_parse_report(big, off, &root, &r, &e), -SR_EPARSE);
	assert_non_null(strstr(e.msg, "log lines"));
	free(big);

	/* a long line is truncated, not refused */
	big = malloc(8000);
	assert_non_null(big);
	off = (size_t)sprintf(big, "{\"events\":[{\"type\":\"log\",\"line\":\"");
	memset(big + off, 'a', 5000);
	off += 5000;
	off += (size_t)sprintf(big + off, "\"}]}");
	assert_int_equal(api_parse_report(big, off, &root, &r, &e), 0);
	assert_int_equal(r.ev[0].line_len, CTL_LOG_LINE_MAX);
	assert_true(r.ev[0].truncated);
	api_report_free(&r);
	json_decref(root);
	free(big);
}

static void test_tokens(void **state)
{
	char a[CTL_TOKEN_HEX + 1], b[CTL_TOKEN_HEX + 1], c[CTL_TOKEN_HEX + 1];
	unsigned char d[CTL_DIGEST_LEN];
	char dir[64], path[128];
	struct sr_err e = { 0 };
	struct stat sb;

	(void)state;
	assert_int_equal(ctl_token_new(a), 0);
	assert_int_equal(ctl_token_new(b), 0);
	assert_int_equal(strlen(a), CTL_TOKEN_HEX);
	assert_string_not_equal(a, b);
	ctl_token_digest(a, d);
	assert_true(ctl_token_matches(a, d));
	assert_false(ctl_token_matches(b, d));
	assert_false(ctl_token_matches("", d));
	assert_false(ctl_token_matches(NULL, d));

	snprintf(dir, sizeof dir, "/tmp/sr-ctltok-XXXXXX");
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/api.token", dir);
	assert_int_equal(ctl_token_load_or_create(path, a, &e), 0);
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0600);
	assert_int_equal(ctl_token_load_or_create(path, c, &e), 0);
	assert_string_equal(a, c);              /* stable across starts */
	chmod(path, 0644);
	assert_int_equal(ctl_token_load_or_create(path, c, &e), -EPERM);
	assert_non_null(strstr(e.msg, "chmod 600"));
	chmod(path, 0600);
	assert_int_equal(ctl_token_write(path, "nothex", &e), 0);
	assert_int_equal(ctl_token_load_or_create(path, c, &e), -SR_ECORRUPT);
	unlink(path);
	rmdir(dir);
}

static void test_register_addr(void **state)
{
	struct api_register b;
	struct sr_err e = { 0 };
	json_t *root = NULL;

	(void)state;
	assert_int_equal(api_parse_register(S("{\"pid\":7}"), &root, &b, &e), 0);
	assert_string_equal(b.addr, "");   /* spotrund takes the peer's */
	json_decref(root);
	assert_int_equal(api_parse_register(S("{\"addr\":\"10.0.3.17\"}"),
					    &root, &b, &e), 0);
	assert_string_equal(b.addr, "10.0.3.17");
	json_decref(root);
	assert_int_equal(api_parse_register(S("{\"addr\":\"fd00::1\"}"),
					    &root, &b, &e), 0);
	json_decref(root);
	/* a literal only: a host name or anything else is refused */
	assert_int_equal(api_parse_register(S("{\"addr\":\"node-1; rm\"}"),
					    &root, &b, &e), -SR_EPARSE);
	assert_non_null(strstr(e.msg, "addr: expected an IPv4 or IPv6 address"));
	assert_null(root);
	assert_int_equal(api_parse_register(S("{\"addr\":5}"), &root, &b, &e),
			 -SR_EPARSE);
}

static void test_imds_tokens(void **state)
{
	unsigned char key[CTL_DIGEST_LEN] = { 1, 2, 3 }, other[CTL_DIGEST_LEN] = { 9 };
	char t[128], bad[128];

	(void)state;
	assert_int_equal(ctl_imds_token_make(key, 7, 1000, t, sizeof t), 0);
	assert_true(ctl_imds_token_valid(key, 7, t, 999));
	assert_true(ctl_imds_token_valid(key, 7, t, 1000));
	assert_false(ctl_imds_token_valid(key, 7, t, 1001));   /* expired */
	assert_false(ctl_imds_token_valid(key, 8, t, 999));    /* other node */
	assert_false(ctl_imds_token_valid(other, 7, t, 999));  /* other key */
	snprintf(bad, sizeof bad, "2000%s", strchr(t, '.'));    /* longer TTL */
	assert_false(ctl_imds_token_valid(key, 7, bad, 999));
	assert_false(ctl_imds_token_valid(key, 7, "1000.", 999));
	assert_false(ctl_imds_token_valid(key, 7, NULL, 999));
	assert_int_equal(ctl_imds_token_make(key, 7, 1000, t, 10), -ENOSPC);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_job_create),
		cmocka_unit_test(test_heartbeat),
		cmocka_unit_test(test_report),
		cmocka_unit_test(test_tokens),
		cmocka_unit_test(test_imds_tokens),
		cmocka_unit_test(test_register_addr),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
