/* Unit tests: lib/common/awscred_ini.c - the shared files read with libinih
 * as the AWS CLI's configparser reads them: 2 KB session-token lines whole
 * (Debian's libinih would cut them at 199 bytes), continuation lines as
 * nested values, no inline comments, duplicate keys and sections refused
 * with file:line, profile headers split as the CLI splits them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "awscred_fixture.h"

/* A token of n base64-ish characters ending in "==", as STS writes them. */
static char *long_token(size_t n)
{
	char *t = malloc(n + 1);

	assert_non_null(t);
	for (size_t i = 0; i < n; i++)
		t[i] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
			[(i * 7) % 64];
	t[n - 2] = t[n - 1] = '=';
	t[n] = '\0';
	return t;
}

static void test_long_lines(void **state)
{
	struct fx *f = *state;
	struct sr_awscred c;
	struct sr_err e = { 0 };
	char *tok = long_token(2048), *text = NULL, *big = NULL, *v = NULL;
	char path[256];

	assert_true(asprintf(&text, "[default]\naws_access_key_id = ASIALONG\n"
				    "aws_secret_access_key = longsecret\n"
				    "aws_session_token = %s\nregion = eu-north-1\n",
			     tok) > 0);
	fx_put(f, "credentials", text);
	assert_int_equal(sr_awscred_resolve(&c, &e), 0);
	assert_int_equal(strlen(c.session_token), 2048);
	assert_string_equal(c.session_token, tok);
	sr_awscred_free(&c);
	snprintf(path, sizeof(path), "%s/credentials", f->aws);
	assert_int_equal(sr_aws_ini_get(path, 0, "default", "region", &v, &e), 0);
	assert_string_equal(v, "eu-north-1"); /* the line after it is intact */
	free(v);
	free(text);

	/* past 64 KiB a line is refused, never cut */
	big = long_token(70000);
	assert_true(asprintf(&text, "[default]\naws_access_key_id = A\n"
				    "aws_secret_access_key = %s\n", big) > 0);
	fx_put(f, "credentials", text);
	assert_int_equal(sr_awscred_resolve(&c, &e), -SR_EPARSE);
	assert_non_null(strstr(e.msg, "/.aws/credentials:3: line longer than 65536"
				      " bytes"));
	free(text);
	free(big);
	free(tok);
}

static void test_syntax(void **state)
{
	struct fx *f = *state;
	struct sr_awscred c;
	struct sr_err e = { 0 };
	char path[256], *v = NULL;

	snprintf(path, sizeof(path), "%s/config", f->aws);
	fx_put(f, "config",
	       "\xef\xbb\xbf# a BOM, then comments\n; another\n"
	       "[profile dev]\n"
	       "REGION: ap-east-1\n"
	       "s3 =\n"
	       "  endpoint_url = http://nested.example\n"
	       "  addressing_style = path\n"
	       "credential_process = get-creds ; not a comment\n"
	       "[profile   spaced]\nregion = sa-east-1\n"
	       "[profile 'my dev']\nregion = me-south-1\n");
	assert_int_equal(sr_aws_ini_get(path, 1, "dev", "region", &v, &e), 0);
	assert_string_equal(v, "ap-east-1");
	free(v);
	/* the nested block is one value of s3, not top-level keys */
	assert_int_equal(sr_aws_ini_get(path, 1, "dev", "endpoint_url", &v, &e),
			 -SR_ENOTFOUND);
	assert_int_equal(sr_aws_ini_get(path, 1, "dev", "s3", &v, &e), 0);
	assert_string_equal(v, "\nendpoint_url = http://nested.example\n"
			       "addressing_style = path");
	free(v);
	assert_int_equal(sr_aws_ini_get(path, 1, "dev", "credential_process", &v,
					&e), 0);
	assert_string_equal(v, "get-creds ; not a comment");
	free(v);
	assert_int_equal(sr_aws_ini_get(path, 1, "spaced", "region", &v, &e), 0);
	assert_string_equal(v, "sa-east-1");
	free(v);
	assert_int_equal(sr_aws_ini_get(path, 1, "my dev", "region", &v, &e), 0);
	assert_string_equal(v, "me-south-1");
	free(v);
	setenv("AWS_PROFILE", "dev", 1);
	assert_int_equal(sr_aws_region(&v, &e), 0);
	assert_string_equal(v, "ap-east-1");
	free(v);
	unsetenv("AWS_PROFILE");
	/* a credentials file's header is the profile name as written, as
	 * the CLI reads it: "[ spaced ]" is " spaced " (fuzz_awscred_parsers
	 * found the lookup trimming the name it was asked for) */
	snprintf(path, sizeof(path), "%s/credentials", f->aws);
	fx_put(f, "credentials", "[ spaced ]\nregion = us-west-1\n");
	assert_int_equal(sr_aws_ini_get(path, 0, " spaced ", "region", &v, &e), 0);
	assert_string_equal(v, "us-west-1");
	free(v);
	assert_int_equal(sr_aws_ini_get(path, 0, "spaced", "region", &v, &e),
			 -SR_ENOTFOUND);
	snprintf(path, sizeof(path), "%s/config", f->aws);

	/* what configparser's strict mode (the CLI's) refuses */
	fx_put(f, "credentials", "[default]\naws_access_key_id = A\n"
				 "aws_access_key_id = B\n");
	assert_int_equal(sr_awscred_resolve(&c, &e), -SR_EPARSE);
	assert_non_null(strstr(e.msg, "/.aws/credentials:3: key 'aws_access_key_id' "
				      "given twice in [default]"));
	fx_put(f, "credentials", "[a]\nx = 1\n[b]\ny = 2\n[a]\nz = 3\n");
	assert_int_equal(sr_awscred_resolve(&c, &e), -SR_EPARSE);
	assert_non_null(strstr(e.msg, "/.aws/credentials:6: section [a] given twice"));
	fx_put(f, "credentials", "[default]\njunk\n");
	assert_int_equal(sr_awscred_resolve(&c, &e), -SR_EPARSE);
	assert_non_null(strstr(e.msg, "/.aws/credentials:2: expected 'key = value'"));
	fx_put(f, "credentials", "");
	fx_write(path, "[default]\nk = a");
	{
		FILE *o = fopen(path, "a");

		assert_non_null(o);
		fputc('\0', o);
		fputs("b\n", o);
		fclose(o);
	}
	assert_int_equal(sr_awscred_resolve(&c, &e), -SR_EPARSE);
	assert_non_null(strstr(e.msg, "/.aws/config: a NUL byte"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_long_lines, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_syntax, fx_setup, fx_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
