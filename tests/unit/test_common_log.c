/* Unit tests: lib/common/log.c (lines captured through a pipe) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"

static int pfd[2];
static char got[8192];

static int setup(void **state)
{
	(void)state;
	if (pipe2(pfd, O_NONBLOCK) < 0)
		return -1;
	sr_log_set_fd(pfd[1]);
	sr_log_set_level(SR_LOG_DEBUG);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	sr_log_set_fd(-1);
	close(pfd[0]);
	close(pfd[1]);
	return 0;
}

/* Everything logged since the last call. */
static const char *drain(void)
{
	ssize_t n = read(pfd[0], got, sizeof(got) - 1);

	got[n > 0 ? n : 0] = '\0';
	return got;
}

static void test_format(void **state)
{
	const char *l;

	(void)state;
	drain();
	sr_info("ckpt", "saved", "step=%d bytes=%zu", 12, (size_t)4096);
	l = drain();
	assert_memory_equal(l, "ts=", 3);
	/* ts=YYYY-MM-DDTHH:MM:SS.mmmZ */
	assert_int_equal(l[3 + 4], '-');
	assert_int_equal(l[3 + 23], 'Z');
	assert_non_null(strstr(l, " level=info mod=ckpt msg=\"saved\" step=12 bytes=4096\n"));
	assert_int_equal(strchr(l, '\n')[1], '\0'); /* exactly one line */
}

static void test_levels(void **state)
{
	enum sr_log_level lv;

	(void)state;
	drain();
	sr_log_set_level(SR_LOG_WARN);
	assert_int_equal(sr_log_get_level(), SR_LOG_WARN);
	sr_info("m", "hidden", "%s", "");
	sr_debug("m", "hidden", "%s", "");
	assert_string_equal(drain(), "");
	sr_warn("m", "shown", "%s", "");
	assert_non_null(strstr(drain(), "level=warn"));
	sr_error("m", "shown", "%s", "");
	assert_non_null(strstr(drain(), "level=error mod=m msg=\"shown\"\n"));
	sr_log_set_level(SR_LOG_OFF);
	sr_error("m", "hidden", "%s", "");
	assert_string_equal(drain(), "");
	sr_log_set_level(SR_LOG_DEBUG);

	assert_int_equal(sr_log_level_parse("debug", &lv), 0);
	assert_int_equal(lv, SR_LOG_DEBUG);
	assert_int_equal(sr_log_level_parse("WARN", &lv), 0);
	assert_int_equal(lv, SR_LOG_WARN);
	assert_int_equal(sr_log_level_parse("off", &lv), 0);
	assert_int_equal(lv, SR_LOG_OFF);
	assert_int_equal(sr_log_level_parse("loud", &lv), -EINVAL);
	assert_int_equal(sr_log_level_parse("", &lv), -EINVAL);
	assert_int_equal(sr_log_level_parse(NULL, &lv), -EINVAL);
}

static void test_redact_keys(void **state)
{
	const char *l;

	(void)state;
	drain();
	sr_info("http", "call", "url=%s token=%s password=\"%s\" n=1 api_key=%s",
		"http://x/", "tok-123456", "pa ss word", "AKIA999");
	l = drain();
	assert_null(strstr(l, "tok-123456"));
	assert_null(strstr(l, "pa ss"));
	assert_null(strstr(l, "ss word"));
	assert_null(strstr(l, "AKIA999"));
	assert_non_null(strstr(l, "token=[REDACTED] password=[REDACTED] n=1 api_key=[REDACTED]\n"));
	assert_non_null(strstr(l, "url=http://x/"));

	sr_info("s3", "put", "aws_secret=%s Authorization=\"Bearer %s\" tokens=%d",
		"shhhh", "abc.def", 3);
	l = drain();
	assert_null(strstr(l, "shhhh"));
	assert_null(strstr(l, "abc.def"));
	assert_non_null(strstr(l, "tokens=3")); /* not a sensitive key */
}

static void test_redact_registered(void **state)
{
	const char *l;

	(void)state;
	drain();
	sr_log_secret("hunter2-secret-value");
	sr_log_secret("abc"); /* too short: ignored */
	sr_log_secret(NULL);
	sr_info("agent", "got hunter2-secret-value from metadata",
		"hdr=\"x-hunter2-secret-valuex\" abc=abc");
	l = drain();
	assert_null(strstr(l, "hunter2"));
	assert_non_null(strstr(l, "msg=\"got [REDACTED] from metadata\""));
	assert_non_null(strstr(l, "hdr=\"x-[REDACTED]x\""));
	assert_non_null(strstr(l, "abc=abc"));
}

static void test_escaping(void **state)
{
	const char *l;

	(void)state;
	drain();
	sr_info("m", "a \"quoted\"\nline", "v=\"x\ny\"");
	l = drain();
	assert_non_null(strstr(l, "msg=\"a \\\"quoted\\\"\\nline\" v=\"x\\ny\"\n"));
	assert_int_equal(strchr(l, '\n')[1], '\0');
	sr_info(NULL, NULL, NULL);
	assert_non_null(strstr(drain(), "mod=- msg=\"\"\n"));
}

static void test_long_line(void **state)
{
	static char big[6000];
	const char *l;

	(void)state;
	memset(big, 'x', sizeof(big) - 1);
	drain();
	sr_info("m", "big", "v=%s", big);
	l = drain();
	assert_non_null(strstr(l, big));
	assert_int_equal(l[strlen(l) - 1], '\n');
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_format),
		cmocka_unit_test(test_levels),
		cmocka_unit_test(test_redact_keys),
		cmocka_unit_test(test_redact_registered),
		cmocka_unit_test(test_escaping),
		cmocka_unit_test(test_long_line),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
