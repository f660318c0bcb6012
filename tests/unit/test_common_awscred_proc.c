/* Unit tests: lib/common/awscred_proc.c - credential_process: the command
 * line split as the AWS CLI splits it (Python's shlex, compared word for
 * word with what shlex.split printed for the same lines), run without a
 * shell, its JSON read; failures quote the command's status and stderr. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "awscred_fixture.h"
#include "common/awscred_int.h"

/* Expected words from /usr/bin/python3 -c 'import shlex;
 * print(shlex.split(LINE))' for each line. */
static void test_split(void **state)
{
	static const struct {
		const char *line;
		const char *words[6];
	} cases[] = {
		{ "/opt/get creds", { "/opt/get", "creds" } },
		{ "get --role \"ops admin\" --json",
		  { "get", "--role", "ops admin", "--json" } },
		{ "a 'b c' d", { "a", "b c", "d" } },
		{ "a\\ b c", { "a b", "c" } },
		{ "x \"a\\\"b\" \"c\\d\"", { "x", "a\"b", "c\\d" } },
		{ "\"\" e", { "", "e" } },
		{ "a\"b c\"d", { "ab cd" } },
		{ "p ; rm -rf /", { "p", ";", "rm", "-rf", "/" } },
		{ "x 'a\\b' ", { "x", "a\\b" } },
		{ "  lead   trail  ", { "lead", "trail" } },
		{ "$HOME `id` $(id)", { "$HOME", "`id`", "$(id)" } },
	};
	static const char *const bad[] = { "a \"b", "a 'b", "a\\", "   ", NULL };
	struct sr_err e = { 0 };
	char **argv = NULL;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t n = 0;

		assert_int_equal(sr_awscred__split(cases[i].line, &argv, &e), 0);
		for (; cases[i].words[n] != NULL; n++) {
			assert_non_null(argv[n]);
			assert_string_equal(argv[n], cases[i].words[n]);
		}
		assert_null(argv[n]);
		sr_awscred__argv_free(argv);
	}
	for (int i = 0; bad[i] != NULL; i++) {
		assert_int_equal(sr_awscred__split(bad[i], &argv, &e), -EINVAL);
		assert_null(argv);
	}
	sr_awscred__split("a 'b", &argv, &e);
	assert_string_equal(e.msg, "a ' quote is not closed");
}

/* A script at DIR/NAME (mode 0700). */
static void script(struct fx *f, const char *name, const char *body, char *path,
		   size_t n)
{
	snprintf(path, n, "%s/bin dir/%s", f->dir, name);
	fx_write(path, body);
	chmod(path, 0700);
}

static void test_process(void **state)
{
	struct fx *f = *state;
	struct sr_awscred c;
	struct sr_err e = { 0 };
	char path[256], cfg[1024], args[1024], pwned[256];
	char *got = NULL;

	script(f, "creds",
	       "#!/bin/sh\n"
	       "printf '%s|' \"$@\" > \"$(dirname \"$0\")/args\"\n"
	       "echo '{\"Version\": 1, \"AccessKeyId\": \"ASIAPROC\",'\n"
	       "echo ' \"SecretAccessKey\": \"procsecret\", \"SessionToken\": \"proctok\",'\n"
	       "echo ' \"Expiration\": \"2026-11-30T20:00:00Z\"}'\n",
	       path, sizeof(path));
	snprintf(pwned, sizeof(pwned), "%s/pwned", f->dir);
	/* quotes keep the space in the path; ';' and $(...) are words */
	snprintf(cfg, sizeof(cfg), "[profile p]\ncredential_process = \"%s\" "
		 "--role 'ops admin' ; touch %s $(touch %s)\n", path, pwned, pwned);
	fx_put(f, "config", cfg);
	setenv("AWS_PROFILE", "p", 1);
	assert_int_equal(sr_awscred_resolve(&c, &e), 0);
	assert_string_equal(c.access_key_id, "ASIAPROC");
	assert_string_equal(c.secret_access_key, "procsecret");
	assert_string_equal(c.session_token, "proctok");
	assert_int_equal(c.expires_s, 1796068800);
	assert_int_equal(c.kind, SR_AWSCRED_PROCESS);
	assert_int_equal(c.renew_until_s, 0);
	assert_non_null(strstr(c.source, "profile p (credential_process "));
	sr_awscred_free(&c);
	snprintf(args, sizeof(args), "%s/bin dir/args", f->dir);
	assert_int_equal(sr_fs_read_file(args, 4096, &got, NULL, &e), 0);
	snprintf(args, sizeof(args), "--role|ops admin|;|touch|%s|$(touch|%s)|",
		 pwned, pwned);
	assert_string_equal(got, args);
	free(got);
	assert_int_equal(access(pwned, F_OK), -1); /* no shell ran it */

	/* keys in the credentials file come before the process */
	fx_put(f, "credentials", "[p]\naws_access_key_id = AKIAFILE\n"
				 "aws_secret_access_key = filesecret\n");
	assert_int_equal(sr_awscred_resolve(&c, &e), 0);
	assert_string_equal(c.access_key_id, "AKIAFILE");
	sr_awscred_free(&c);
	fx_put(f, "credentials", "");

	/* a failing command: its status and stderr's first line */
	script(f, "fail", "#!/bin/sh\necho 'token expired: log in' >&2\n"
			  "echo 'second line' >&2\nexit 3\n", path, sizeof(path));
	snprintf(cfg, sizeof(cfg), "[profile p]\ncredential_process = '%s'\n", path);
	fx_put(f, "config", cfg);
	assert_int_equal(sr_awscred_resolve(&c, &e), -EACCES);
	assert_non_null(strstr(e.msg, "credential_process of profile p: "));
	assert_non_null(strstr(e.msg, "exited with status 3: token expired: log in"));
	assert_null(strstr(e.msg, "second line"));

	/* wrong version, not JSON, missing secret */
	script(f, "v2", "#!/bin/sh\necho '{\"Version\": 2, \"AccessKeyId\": \"A\","
			" \"SecretAccessKey\": \"leak123\"}'\n", path, sizeof(path));
	snprintf(cfg, sizeof(cfg), "[profile p]\ncredential_process = '%s'\n", path);
	fx_put(f, "config", cfg);
	assert_int_equal(sr_awscred_resolve(&c, &e), -EACCES);
	assert_non_null(strstr(e.msg, "expected \"Version\": 1"));
	script(f, "junk", "#!/bin/sh\necho hello\n", path, sizeof(path));
	snprintf(cfg, sizeof(cfg), "[profile p]\ncredential_process = '%s'\n", path);
	fx_put(f, "config", cfg);
	assert_int_equal(sr_awscred_resolve(&c, &e), -EACCES);
	assert_non_null(strstr(e.msg, "the output is not JSON"));
	script(f, "half", "#!/bin/sh\necho '{\"Version\": 1, \"AccessKeyId\": "
			  "\"A\", \"SessionToken\": \"leak456\"}'\n", path, sizeof(path));
	snprintf(cfg, sizeof(cfg), "[profile p]\ncredential_process = '%s'\n", path);
	fx_put(f, "config", cfg);
	assert_int_equal(sr_awscred_resolve(&c, &e), -EACCES);
	assert_non_null(strstr(e.msg, "unusable answer"));
	assert_null(strstr(e.msg, "leak456"));

	/* a command that does not exist; an unclosed quote */
	fx_put(f, "config", "[profile p]\ncredential_process = /nonexistent/x\n");
	assert_int_equal(sr_awscred_resolve(&c, &e), -EACCES);
	assert_non_null(strstr(e.msg, "cannot run /nonexistent/x"));
	fx_put(f, "config", "[profile p]\ncredential_process = get 'oops\n");
	assert_int_equal(sr_awscred_resolve(&c, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "a ' quote is not closed"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_split),
		cmocka_unit_test_setup_teardown(test_process, fx_setup, fx_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
