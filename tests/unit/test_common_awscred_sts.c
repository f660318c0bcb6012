/* Unit tests: lib/common/awscred_prof.c + awscred_sts.c - role_arn with
 * source_profile (chains, loops, a profile using its own keys),
 * credential_source, web identity from the variables and from a profile,
 * against a fake STS on 127.0.0.1 (awscred_fixture.h) that records what
 * it was sent. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "awscred_fixture.h"

static void test_assume_role(void **state)
{
	struct fx *f = *state;
	struct sr_awscred c;
	struct sr_err e = { 0 };
	char body[4096], auth[512], v[256];
	int64_t now = (int64_t)time(NULL);

	fx_sts(f);
	setenv("AWS_REGION", "us-west-2", 1);
	fx_put(f, "credentials", "[base]\naws_access_key_id = AKIABASE\n"
				 "aws_secret_access_key = basesecret\n");
	fx_put(f, "config", "[profile ops]\nrole_arn = arn:aws:iam::111:role/admin\n"
			    "source_profile = base\nrole_session_name = ops-sess\n"
			    "external_id = ext 42\nduration_seconds = 1800\n");
	setenv("AWS_PROFILE", "ops", 1);
	assert_int_equal(sr_awscred_resolve(&c, &e), 0);
	assert_string_equal(c.access_key_id, "ASIAadmin");
	assert_string_equal(c.secret_access_key, "sec-admin");
	assert_string_equal(c.session_token, "tok-admin-1");
	assert_int_equal(c.kind, SR_AWSCRED_ASSUME_ROLE);
	assert_true(c.expires_s >= now + 3500 && c.expires_s <= now + 3700);
	assert_int_equal(c.renew_until_s, 0); /* long-term keys renew it */
	assert_non_null(strstr(c.source, "profile ops (role arn:aws:iam::111:role/admin"
					 " via profile base in "));
	sr_awscred_free(&c);
	assert_int_equal(fx_sts_seen(f, body, sizeof(body), auth, sizeof(auth)), 1);
	fx_form(body, "Action", v, sizeof(v));
	assert_string_equal(v, "AssumeRole");
	fx_form(body, "Version", v, sizeof(v));
	assert_string_equal(v, "2011-06-15");
	fx_form(body, "RoleSessionName", v, sizeof(v));
	assert_string_equal(v, "ops-sess");
	fx_form(body, "ExternalId", v, sizeof(v));
	assert_string_equal(v, "ext 42");
	fx_form(body, "DurationSeconds", v, sizeof(v));
	assert_string_equal(v, "1800");
	/* signed with the source profile's keys, for STS in the region */
	assert_non_null(strstr(auth, "Credential=AKIABASE/"));
	assert_non_null(strstr(auth, "/us-west-2/sts/aws4_request"));

	/* STS says no: the code and the role, an auth error */
	fx_sts_set(f, "AccessDenied", 3600);
	assert_int_equal(sr_awscred_resolve(&c, &e), -EACCES);
	assert_non_null(strstr(e.msg, "STS AssumeRole arn:aws:iam::111:role/admin: "
				      "AccessDenied: Not authorized"));
	assert_null(strstr(e.msg, "basesecret"));
}

static void test_chain_and_loops(void **state)
{
	struct fx *f = *state;
	struct sr_awscred c;
	struct sr_err e = { 0 };
	char auth[512], body[4096], v[128];

	fx_sts(f);
	fx_put(f, "config",
	       "[profile a]\nrole_arn = arn:aws:iam::1:role/ra\nsource_profile = b\n"
	       "[profile b]\nrole_arn = arn:aws:iam::1:role/rb\nsource_profile = c\n"
	       "[profile c]\naws_access_key_id = AKIAC\naws_secret_access_key = sc\n"
	       "[profile self]\nrole_arn = arn:aws:iam::1:role/rs\n"
	       "source_profile = self\naws_access_key_id = AKIASELF\n"
	       "aws_secret_access_key = sself\n"
	       "[profile x]\nrole_arn = arn:aws:iam::1:role/rx\nsource_profile = y\n"
	       "[profile y]\nrole_arn = arn:aws:iam::1:role/ry\nsource_profile = x\n"
	       "[profile nosrc]\nrole_arn = arn:aws:iam::1:role/rn\n"
	       "[profile both]\nrole_arn = arn:aws:iam::1:role/r\n"
	       "source_profile = c\ncredential_source = Environment\n"
	       "[profile ghost]\nrole_arn = arn:aws:iam::1:role/r\n"
	       "source_profile = nobody\n"
	       "[profile long]\nrole_arn = arn:aws:iam::1:role/r\n"
	       "source_profile = c\nduration_seconds = 99999\n"
	       "[profile ecs]\nrole_arn = arn:aws:iam::1:role/recs\n"
	       "credential_source = EcsContainer\n");

	/* a -> b -> c: b's role is assumed with c's keys, then a's with b's */
	setenv("AWS_PROFILE", "a", 1);
	assert_int_equal(sr_awscred_resolve(&c, &e), 0);
	assert_string_equal(c.access_key_id, "ASIAra");
	sr_awscred_free(&c);
	assert_int_equal(fx_sts_seen(f, body, sizeof(body), auth, sizeof(auth)), 2);
	assert_non_null(strstr(auth, "Credential=ASIArb/"));
	/* no region anywhere: the global endpoint's signing region */
	assert_non_null(strstr(auth, "/us-east-1/sts/aws4_request"));
	fx_form(body, "RoleSessionName", v, sizeof(v));
	assert_memory_equal(v, "spotrun-", 8);

	/* a profile that assumes its role with its own keys */
	setenv("AWS_PROFILE", "self", 1);
	assert_int_equal(sr_awscred_resolve(&c, &e), 0);
	assert_string_equal(c.access_key_id, "ASIArs");
	sr_awscred_free(&c);
	fx_sts_seen(f, NULL, 0, auth, sizeof(auth));
	assert_non_null(strstr(auth, "Credential=AKIASELF/"));

	setenv("AWS_PROFILE", "x", 1);
	assert_int_equal(sr_awscred_resolve(&c, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "profile x: source_profile loops back to x"));
	setenv("AWS_PROFILE", "nosrc", 1);
	assert_int_equal(sr_awscred_resolve(&c, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "role_arn needs source_profile or "
				      "credential_source"));
	setenv("AWS_PROFILE", "both", 1);
	assert_int_equal(sr_awscred_resolve(&c, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "source_profile and credential_source"));
	setenv("AWS_PROFILE", "ghost", 1);
	assert_int_equal(sr_awscred_resolve(&c, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "source_profile nobody: no such profile"));
	setenv("AWS_PROFILE", "long", 1);
	assert_int_equal(sr_awscred_resolve(&c, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "duration_seconds '99999'"));
	/* credential_source EcsContainer, but no container here */
	setenv("AWS_PROFILE", "ecs", 1);
	assert_int_equal(sr_awscred_resolve(&c, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "credential_source EcsContainer has no "
				      "credentials"));
	/* an STS endpoint on plain http elsewhere would carry secrets */
	setenv("AWS_PROFILE", "a", 1);
	setenv("AWS_ENDPOINT_URL_STS", "http://10.9.9.9", 1);
	assert_int_equal(sr_awscred_resolve(&c, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "plain http"));
}

static void test_web_identity(void **state)
{
	struct fx *f = *state;
	struct sr_awscred c;
	struct sr_err e = { 0 };
	char body[4096], auth[512], v[512], tokf[256];

	fx_sts(f);
	snprintf(tokf, sizeof(tokf), "%s/irsa/token", f->dir);
	fx_write(tokf, "eyJhbGciOiJSUzI1NiJ9.first.sig\n");
	setenv("AWS_WEB_IDENTITY_TOKEN_FILE", tokf, 1);
	setenv("AWS_ROLE_ARN", "arn:aws:iam::222:role/pod", 1);
	setenv("AWS_ROLE_SESSION_NAME", "trainer-0", 1);
	assert_int_equal(sr_awscred_resolve(&c, &e), 0);
	assert_string_equal(c.access_key_id, "ASIApod");
	assert_int_equal(c.kind, SR_AWSCRED_WEB_IDENTITY);
	assert_int_equal(c.renew_until_s, 0);
	sr_awscred_free(&c);
	fx_sts_seen(f, body, sizeof(body), auth, sizeof(auth));
	assert_string_equal(auth, ""); /* the token is the proof: unsigned */
	fx_form(body, "Action", v, sizeof(v));
	assert_string_equal(v, "AssumeRoleWithWebIdentity");
	fx_form(body, "WebIdentityToken", v, sizeof(v));
	assert_string_equal(v, "eyJhbGciOiJSUzI1NiJ9.first.sig");
	fx_form(body, "RoleSessionName", v, sizeof(v));
	assert_string_equal(v, "trainer-0");

	/* the platform rotates the file: the next resolve sends the new one */
	fx_write(tokf, "eyJhbGciOiJSUzI1NiJ9.second.sig");
	assert_int_equal(sr_awscred_resolve(&c, &e), 0);
	sr_awscred_free(&c);
	fx_sts_seen(f, body, sizeof(body), NULL, 0);
	fx_form(body, "WebIdentityToken", v, sizeof(v));
	assert_string_equal(v, "eyJhbGciOiJSUzI1NiJ9.second.sig");

	/* STS rejects the token: no token in the message */
	fx_sts_set(f, "InvalidIdentityToken", 3600);
	assert_int_equal(sr_awscred_resolve(&c, &e), -EACCES);
	assert_non_null(strstr(e.msg, "AssumeRoleWithWebIdentity "
				      "arn:aws:iam::222:role/pod: InvalidIdentityToken"));
	assert_null(strstr(e.msg, "second.sig"));
	fx_sts_set(f, NULL, 3600);

	/* a token file but no role */
	unsetenv("AWS_ROLE_ARN");
	assert_int_equal(sr_awscred_resolve(&c, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "no role: set AWS_ROLE_ARN"));

	/* the same from a profile */
	unsetenv("AWS_WEB_IDENTITY_TOKEN_FILE");
	unsetenv("AWS_ROLE_SESSION_NAME");
	snprintf(v, sizeof(v), "[profile k8s]\nweb_identity_token_file = %s\n"
		 "role_arn = arn:aws:iam::222:role/prof\n", tokf);
	fx_put(f, "config", v);
	setenv("AWS_PROFILE", "k8s", 1);
	assert_int_equal(sr_awscred_resolve(&c, &e), 0);
	assert_string_equal(c.access_key_id, "ASIAprof");
	sr_awscred_free(&c);

	/* a missing token file is the profile's error, not "none found" */
	snprintf(v, sizeof(v), "[profile k8s]\nweb_identity_token_file = "
		 "%s/nope\nrole_arn = arn:aws:iam::222:role/prof\n", f->dir);
	fx_put(f, "config", v);
	assert_int_equal(sr_awscred_resolve(&c, &e), -EACCES);
	assert_non_null(strstr(e.msg, "web identity token: "));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_assume_role, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_chain_and_loops, fx_setup,
						fx_teardown),
		cmocka_unit_test_setup_teardown(test_web_identity, fx_setup,
						fx_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
