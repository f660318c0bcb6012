/* Unit tests: lib/common/awscred_sso.c - SSO profiles (sso_session and the
 * legacy sso_start_url form): the token cache named as the AWS CLI names
 * it (the SHA-1 values below were printed by Python's hashlib), the
 * portal's GetRoleCredentials on a fake on 127.0.0.1, and the errors that
 * name the login command. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "awscred_fixture.h"

#define CORP_SHA1 "ee0bfd2552fbd840c02cc48b6e823320543c450f"
#define URL_SHA1 "c7aaaf71fcc8777ae2475525ed049d39fe16c484"

static void cache(struct fx *f, const char *sha, const char *tok,
		  const char *expires)
{
	char p[256], doc[512];

	snprintf(p, sizeof(p), "%s/sso/cache/%s.json", f->aws, sha);
	snprintf(doc, sizeof(doc), "{\"startUrl\": \"https://my-sso-portal."
		 "awsapps.com/start\", \"region\": \"eu-west-1\", "
		 "\"accessToken\": \"%s\", \"expiresAt\": \"%s\"}", tok, expires);
	fx_write(p, doc);
}

static void test_sso(void **state)
{
	struct fx *f = *state;
	struct sr_testsrv *s = sr_testsrv_start(0);
	const struct sr_testsrv_req *q;
	struct sr_awscred c;
	struct sr_err e = { 0 };
	char v[256];
	int64_t exp_ms = ((int64_t)time(NULL) + 3600) * 1000;

	assert_non_null(s);
	setenv("AWS_ENDPOINT_URL_SSO", sr_testsrv_url(s), 1);
	snprintf(v, sizeof(v), "{\"roleCredentials\": {\"accessKeyId\": "
		 "\"ASIASSO\", \"secretAccessKey\": \"ssosecret\", "
		 "\"sessionToken\": \"ssotoken\", \"expiration\": %lld}}",
		 (long long)exp_ms);
	sr_testsrv_reply(s, "GET", "/federation/credentials", 200,
			 "application/json", v, 0);
	fx_put(f, "config", "[profile dev]\nsso_session = corp\n"
			    "sso_account_id = 111122223333\n"
			    "sso_role_name = Admin Role\n"
			    "[sso-session corp]\nsso_start_url = https://my-sso-"
			    "portal.awsapps.com/start\nsso_region = eu-west-1\n"
			    "[profile old]\nsso_start_url = https://my-sso-portal."
			    "awsapps.com/start\nsso_region = eu-west-1\n"
			    "sso_account_id = 444455556666\nsso_role_name = Dev\n"
			    "[profile partial]\nsso_session = corp\n"
			    "sso_role_name = Admin\n");
	setenv("AWS_PROFILE", "dev", 1);

	/* not logged in yet */
	assert_int_equal(sr_awscred_resolve(&c, &e), -EACCES);
	assert_non_null(strstr(e.msg, "no SSO token"));
	assert_non_null(strstr(e.msg, "run `aws sso login --sso-session corp`"));

	cache(f, CORP_SHA1, "bearer-corp", "2099-01-01T00:00:00Z");
	assert_int_equal(sr_awscred_resolve(&c, &e), 0);
	assert_string_equal(c.access_key_id, "ASIASSO");
	assert_string_equal(c.session_token, "ssotoken");
	assert_int_equal(c.expires_s, exp_ms / 1000);
	assert_int_equal(c.kind, SR_AWSCRED_SSO);
	/* renewable until the login runs out, and the hint says how */
	assert_int_equal(c.renew_until_s, 4070908800);
	assert_string_equal(c.renew_hint, "run `aws sso login --sso-session corp`");
	assert_string_equal(c.source, "profile dev (SSO role Admin Role in account "
				      "111122223333)");
	sr_awscred_free(&c);
	q = sr_testsrv_req(s, 0);
	assert_string_equal(q->query, "role_name=Admin%20Role&account_id=111122223333");
	assert_int_equal(sr_testsrv_req_header(q, "x-amz-sso_bearer_token", v,
					       sizeof(v)), 0);
	assert_string_equal(v, "bearer-corp");

	/* the legacy form keys the cache by the start URL; older CLIs wrote
	 * "...UTC" */
	setenv("AWS_PROFILE", "old", 1);
	cache(f, URL_SHA1, "bearer-url", "2099-01-01T00:00:00UTC");
	assert_int_equal(sr_awscred_resolve(&c, &e), 0);
	assert_string_equal(c.renew_hint, "run `aws sso login --profile old`");
	sr_awscred_free(&c);
	q = sr_testsrv_req(s, 1);
	assert_int_equal(sr_testsrv_req_header(q, "x-amz-sso_bearer_token", v,
					       sizeof(v)), 0);
	assert_string_equal(v, "bearer-url");

	/* an expired login */
	cache(f, URL_SHA1, "bearer-url", "2020-01-01T00:00:00Z");
	assert_int_equal(sr_awscred_resolve(&c, &e), -EACCES);
	assert_non_null(strstr(e.msg, "the SSO token expired at 2020-01-01T00:00:00Z:"
				      " run `aws sso login --profile old`"));

	/* the portal refuses the token */
	setenv("AWS_PROFILE", "dev", 1);
	sr_testsrv_stop(s);
	s = sr_testsrv_start(0);
	setenv("AWS_ENDPOINT_URL_SSO", sr_testsrv_url(s), 1);
	sr_testsrv_reply(s, "GET", "/federation/credentials", 401,
			 "application/json", "{\"message\":\"Session token not found"
			 " or invalid\"}", 0);
	assert_int_equal(sr_awscred_resolve(&c, &e), -EACCES);
	assert_non_null(strstr(e.msg, "refused the token (HTTP 401): run `aws sso "
				      "login --sso-session corp`"));
	assert_null(strstr(e.msg, "bearer-corp"));

	setenv("AWS_PROFILE", "partial", 1);
	assert_int_equal(sr_awscred_resolve(&c, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "SSO profile without sso_account_id"));
	sr_testsrv_stop(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_sso, fx_setup, fx_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
