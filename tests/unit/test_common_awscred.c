/* Unit tests: lib/common/awscred.c - the AWS credential chain (environment,
 * shared files with profiles, the container endpoint and the IMDSv2
 * instance role against canned test servers), health, region and
 * endpoint resolution.  Roles, web identity, SSO, credential_process, the
 * INI reader and refreshing have their own test_common_awscred_*.c. */
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
#include "common/awscred.h"
#include "common/testsrv.h"

static void test_env(void **state)
{
	struct sr_awscred c;
	struct sr_err e = { 0 };

	(void)state;
	setenv("AWS_ACCESS_KEY_ID", "AKIAENV", 1);
	assert_int_equal(sr_awscred_resolve(&c, &e), -EINVAL);
	assert_string_equal(e.msg, "aws credentials: AWS_ACCESS_KEY_ID is set "
				   "but AWS_SECRET_ACCESS_KEY is not");
	setenv("AWS_SECRET_ACCESS_KEY", "envsecret123", 1);
	setenv("AWS_SESSION_TOKEN", "envtoken456", 1);
	assert_int_equal(sr_awscred_resolve(&c, &e), 0);
	assert_string_equal(c.access_key_id, "AKIAENV");
	assert_string_equal(c.secret_access_key, "envsecret123");
	assert_string_equal(c.session_token, "envtoken456");
	assert_string_equal(c.source, "environment (AWS_ACCESS_KEY_ID)");
	assert_int_equal(c.kind, SR_AWSCRED_ENV);
	assert_int_equal(c.expires_s, 0);
	sr_awscred_free(&c);
	assert_null(c.access_key_id);
	sr_awscred_free(NULL);

	/* what `aws configure export-credentials --format env` exports */
	setenv("AWS_CREDENTIAL_EXPIRATION", "2026-11-30T20:00:00Z", 1);
	assert_int_equal(sr_awscred_resolve(&c, &e), 0);
	assert_int_equal(c.expires_s, 1796068800);
	assert_int_equal(c.renew_until_s, 1796068800);
	assert_non_null(strstr(c.renew_hint, "cannot be renewed"));
	sr_awscred_free(&c);
	setenv("AWS_CREDENTIAL_EXPIRATION", "tomorrow", 1);
	assert_int_equal(sr_awscred_resolve(&c, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "AWS_CREDENTIAL_EXPIRATION: 'tomorrow'"));
}

/* The warning `spotrun check` prints and the daemon alerts on. */
static void test_health(void **state)
{
	struct sr_awscred c = { 0 };
	char msg[512];

	(void)state;
	snprintf(c.source, sizeof(c.source), "environment (AWS_ACCESS_KEY_ID)");
	snprintf(c.renew_hint, sizeof(c.renew_hint), "log in again");
	c.expires_s = c.renew_until_s = 10000;
	assert_int_equal(sr_awscred_health(&c, 10000 - 2 * 3600, msg, sizeof(msg)), 0);
	assert_int_equal(sr_awscred_health(&c, 10000 - 1800, msg, sizeof(msg)), 1);
	assert_non_null(strstr(msg, "environment (AWS_ACCESS_KEY_ID) expire at "
				    "1970-01-01T02:46:40Z and cannot be renewed "
				    "without you: log in again"));
	assert_int_equal(sr_awscred_health(&c, 10001, msg, sizeof(msg)), 2);
	assert_non_null(strstr(msg, " expired at "));
	/* renewing themselves: fine whatever expires_s says */
	c.renew_until_s = 0;
	assert_int_equal(sr_awscred_health(&c, 10001, NULL, 0), 0);
}

static void test_profiles(void **state)
{
	struct fx *f = *state;
	struct sr_awscred c;
	struct sr_err e = { 0 };
	char *v = NULL;

	fx_put(f, "credentials",
	    "# comment\n[default]\naws_access_key_id = AKIADEF\n"
	    "aws_secret_access_key=defsecret1\n\n"
	    "[dev]\n aws_access_key_id = AKIADEV\n"
	    "aws_secret_access_key = devsecret2\n"
	    "aws_session_token = devtoken3\n");
	fx_put(f, "config",
	    "[default]\nregion = eu-west-1\n"
	    "[profile dev]\nregion = us-west-2\ns3 =\n  addressing_style = path\n"
	    "[profile cfgonly]\naws_access_key_id = AKIACFG\n"
	    "aws_secret_access_key = cfgsecret4\n"
	    "[profile assume]\nrole_arn = arn:aws:iam::1:role/x\n"
	    "source_profile = default\nmfa_serial = arn:aws:iam::1:mfa/u\n"
	    "[profile nosecret]\naws_access_key_id = AKIANS\n");

	assert_int_equal(sr_awscred_resolve(&c, &e), 0);
	assert_string_equal(c.access_key_id, "AKIADEF");
	assert_null(c.session_token);
	assert_non_null(strstr(c.source, "profile default in "));
	sr_awscred_free(&c);
	assert_int_equal(sr_aws_region(&v, &e), 0);
	assert_string_equal(v, "eu-west-1");
	free(v);

	setenv("AWS_PROFILE", "dev", 1);
	assert_int_equal(sr_awscred_resolve(&c, &e), 0);
	assert_string_equal(c.access_key_id, "AKIADEV");
	assert_string_equal(c.secret_access_key, "devsecret2");
	assert_string_equal(c.session_token, "devtoken3");
	sr_awscred_free(&c);
	assert_int_equal(sr_aws_region(&v, &e), 0);
	assert_string_equal(v, "us-west-2");
	free(v);
	setenv("AWS_REGION", "ap-south-1", 1);
	assert_int_equal(sr_aws_region(&v, &e), 0);
	assert_string_equal(v, "ap-south-1");
	free(v);

	setenv("AWS_PROFILE", "cfgonly", 1);
	assert_int_equal(sr_awscred_resolve(&c, &e), 0);
	assert_string_equal(c.access_key_id, "AKIACFG");
	assert_non_null(strstr(c.source, "/.aws/config"));
	sr_awscred_free(&c);

	setenv("AWS_PROFILE", "assume", 1);
	assert_int_equal(sr_awscred_resolve(&c, &e), -SR_EUNSUPPORTED);
	assert_non_null(strstr(e.msg, "profile assume uses mfa_serial"));

	setenv("AWS_PROFILE", "nosecret", 1);
	assert_int_equal(sr_awscred_resolve(&c, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "profile nosecret in "));
	assert_non_null(strstr(e.msg, "aws_secret_access_key: missing"));
	assert_null(strstr(e.msg, "AKIANS"));

	setenv("AWS_PROFILE", "nope", 1);
	assert_int_equal(sr_awscred_resolve(&c, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "AWS_PROFILE=nope: no such profile in "));

	/* the variables that move the files */
	snprintf(v = calloc(1, 256), 256, "%s/other", f->dir);
	fx_write(v, "[alt]\naws_access_key_id=AKIAALT\n"
		      "aws_secret_access_key=altsecret5\n");
	setenv("AWS_SHARED_CREDENTIALS_FILE", v, 1);
	setenv("AWS_PROFILE", "alt", 1);
	assert_int_equal(sr_awscred_resolve(&c, &e), 0);
	assert_string_equal(c.access_key_id, "AKIAALT");
	sr_awscred_free(&c);
	free(v);
}

static void test_malformed_and_none(void **state)
{
	struct fx *f = *state;
	struct sr_awscred c;
	struct sr_err e = { 0 };
	char *v = NULL;

	assert_int_equal(sr_awscred_resolve(&c, &e), -SR_ENOTFOUND);
	assert_non_null(strstr(e.msg, "none found: set AWS_ACCESS_KEY_ID"));
	assert_int_equal(sr_aws_region(&v, &e), -SR_ENOTFOUND);
	assert_null(v);
	assert_non_null(strstr(e.msg, "export AWS_REGION"));

	fx_put(f, "credentials", "[default]\naws_access_key_id = A\njunk line\n");
	assert_int_equal(sr_awscred_resolve(&c, &e), -SR_EPARSE);
	assert_non_null(strstr(e.msg, "/.aws/credentials:3: expected 'key = value'"));
	fx_put(f, "credentials", "[default\n");
	assert_int_equal(sr_awscred_resolve(&c, &e), -SR_EPARSE);
	assert_non_null(strstr(e.msg, ":1: section header: missing ']'"));
}

static void test_endpoint(void **state)
{
	struct fx *f = *state;
	struct sr_err e = { 0 };
	char *u = NULL;
	int custom = -1;

	assert_int_equal(sr_aws_endpoint("EC2", "ec2", "us-east-1", &u, &custom, &e), 0);
	assert_string_equal(u, "https://ec2.us-east-1.amazonaws.com");
	assert_int_equal(custom, 0);
	free(u);
	/* the profile's services section wins over its endpoint_url */
	fx_put(f, "config", "[default]\nendpoint_url = http://127.0.0.1:9/\n"
	       "services = local\n[services local]\nsts =\n"
	       "  endpoint_url = http://127.0.0.1:7/\n"
	       "ec2 =\n  region = x\n  endpoint_url = http://127.0.0.2:8\n");
	assert_int_equal(sr_aws_endpoint("STS", "sts", "r", &u, &custom, &e), 0);
	assert_string_equal(u, "http://127.0.0.1:7");
	assert_int_equal(custom, 1);
	free(u);
	assert_int_equal(sr_aws_endpoint("EC2", "ec2", "r", &u, &custom, &e), 0);
	assert_string_equal(u, "http://127.0.0.2:8");
	free(u);
	fx_put(f, "config", "[default]\nendpoint_url = http://127.0.0.1:9/\n");
	assert_int_equal(sr_aws_endpoint("EC2", "ec2", "r", &u, &custom, &e), 0);
	assert_string_equal(u, "http://127.0.0.1:9");
	assert_int_equal(custom, 1);
	free(u);
	setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:1000/", 1);
	assert_int_equal(sr_aws_endpoint("EC2", "ec2", "r", &u, NULL, &e), 0);
	assert_string_equal(u, "http://127.0.0.1:1000");
	free(u);
	setenv("AWS_ENDPOINT_URL_EC2", "http://localhost:2000", 1);
	assert_int_equal(sr_aws_endpoint("EC2", "ec2", "r", &u, NULL, &e), 0);
	assert_string_equal(u, "http://localhost:2000");
	free(u);
	assert_int_equal(sr_aws_endpoint("S3", "s3", "r", &u, NULL, &e), 0);
	assert_string_equal(u, "http://127.0.0.1:1000");
	free(u);
	setenv("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "true", 1);
	assert_int_equal(sr_aws_endpoint("EC2", "ec2", "r", &u, &custom, &e), 0);
	assert_string_equal(u, "https://ec2.r.amazonaws.com");
	assert_int_equal(custom, 0);
	free(u);
	unsetenv("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS");
	setenv("AWS_ENDPOINT_URL_EC2", "ftp://x", 1);
	assert_int_equal(sr_aws_endpoint("EC2", "ec2", "r", &u, NULL, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "expected an http:// or https:// URL"));

	assert_true(sr_aws_url_is_loopback("http://127.0.0.1:80/x"));
	assert_true(sr_aws_url_is_loopback("http://127.9.9.9"));
	assert_true(sr_aws_url_is_loopback("http://[::1]:9/"));
	assert_true(sr_aws_url_is_loopback("http://LOCALHOST:9"));
	assert_false(sr_aws_url_is_loopback("https://ec2.us-east-1.amazonaws.com"));
	assert_false(sr_aws_url_is_loopback("http://127.0.0.1.evil.com/"));
	assert_false(sr_aws_url_is_loopback("http://127.0.0.1@evil.com/"));
	assert_false(sr_aws_url_is_loopback("http://10.0.0.1/"));
	assert_false(sr_aws_url_is_loopback("nonsense"));
}

static void test_imds(void **state)
{
	struct sr_testsrv *s = sr_testsrv_start(0);
	struct sr_awscred c;
	struct sr_err e = { 0 };
	const struct sr_testsrv_req *q;
	char v[128];

	(void)state;
	assert_non_null(s);
	unsetenv("AWS_EC2_METADATA_DISABLED");
	setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", sr_testsrv_url(s), 1);
	sr_testsrv_reply(s, "PUT", "/latest/api/token", 200, "text/plain",
			 "imdstoken789", 0);
	sr_testsrv_reply(s, "GET", "/latest/meta-data/iam/security-credentials/",
			 200, "text/plain", "web-role\n", 0);
	sr_testsrv_reply(s, "GET",
			 "/latest/meta-data/iam/security-credentials/web-role",
			 200, "application/json",
			 "{\"Code\":\"Success\",\"AccessKeyId\":\"ASIAROLE\","
			 "\"SecretAccessKey\":\"rolesecret6\",\"Token\":\"roletok7\","
			 "\"Expiration\":\"2026-11-30T20:00:00Z\"}", 0);
	assert_int_equal(sr_awscred_resolve(&c, &e), 0);
	assert_string_equal(c.access_key_id, "ASIAROLE");
	assert_string_equal(c.session_token, "roletok7");
	assert_int_equal(c.expires_s, 1796068800);
	assert_string_equal(c.source, "instance role web-role (IMDSv2)");
	sr_awscred_free(&c);
	q = sr_testsrv_req(s, 0);
	assert_string_equal(q->method, "PUT");
	assert_int_equal(sr_testsrv_req_header(q, "x-aws-ec2-metadata-token-ttl-seconds",
					       v, sizeof(v)), 0);
	q = sr_testsrv_req(s, 1);
	assert_int_equal(sr_testsrv_req_header(q, "x-aws-ec2-metadata-token", v,
					       sizeof(v)), 0);
	assert_string_equal(v, "imdstoken789");

	/* an answer without the secret: named, but never quoted */
	sr_testsrv_stop(s);
	s = sr_testsrv_start(0);
	setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", sr_testsrv_url(s), 1);
	sr_testsrv_reply(s, "PUT", "/latest/api/token", 200, "text/plain", "t0k3n", 0);
	sr_testsrv_reply(s, "GET", "/latest/meta-data/iam/security-credentials/",
			 200, "text/plain", "r", 0);
	sr_testsrv_reply(s, "GET", "/latest/meta-data/iam/security-credentials/r",
			 200, "application/json",
			 "{\"Code\":\"Success\",\"AccessKeyId\":\"ASIAX\","
			 "\"Token\":\"leakme99\"}", 0);
	assert_int_equal(sr_awscred_resolve(&c, &e), -SR_EHTTP);
	assert_non_null(strstr(e.msg, "instance role r: unusable answer"));
	assert_null(strstr(e.msg, "leakme99"));

	/* no role attached: the chain ends with "none found" */
	sr_testsrv_stop(s);
	s = sr_testsrv_start(0);
	setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", sr_testsrv_url(s), 1);
	sr_testsrv_reply(s, "PUT", "/latest/api/token", 200, "text/plain", "t0k3n", 0);
	assert_int_equal(sr_awscred_resolve(&c, &e), -SR_ENOTFOUND);
	sr_testsrv_stop(s);
}

static void test_container(void **state)
{
	struct fx *f = *state;
	struct sr_testsrv *s = sr_testsrv_start(0);
	const struct sr_testsrv_req *q;
	struct sr_awscred c;
	struct sr_err e = { 0 };
	char url[256], tokf[256], v[128];

	assert_non_null(s);
	sr_testsrv_reply(s, "GET", "/v2/credentials/abc", 200, "application/json",
			 "{\"AccessKeyId\":\"ASIATASK\",\"SecretAccessKey\":"
			 "\"tasksecret\",\"Token\":\"tasktoken\",\"Expiration\":"
			 "\"2026-11-30T20:00:00Z\",\"RoleArn\":\"arn:x\"}", 0);
	snprintf(url, sizeof(url), "%s/v2/credentials/abc", sr_testsrv_url(s));
	setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", url, 1);
	/* EKS Pod Identity: the token file wins over the variable */
	snprintf(tokf, sizeof(tokf), "%s/eks-token", f->dir);
	fx_write(tokf, "podtoken123\n");
	setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", tokf, 1);
	setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN", "ignored", 1);
	assert_int_equal(sr_awscred_resolve(&c, &e), 0);
	assert_string_equal(c.access_key_id, "ASIATASK");
	assert_string_equal(c.session_token, "tasktoken");
	assert_int_equal(c.expires_s, 1796068800);
	assert_int_equal(c.kind, SR_AWSCRED_CONTAINER);
	assert_int_equal(c.renew_until_s, 0);
	sr_awscred_free(&c);
	q = sr_testsrv_req(s, 0);
	assert_int_equal(sr_testsrv_req_header(q, "authorization", v, sizeof(v)), 0);
	assert_string_equal(v, "podtoken123");

	/* the endpoint refuses: named, the job's error class */
	sr_testsrv_reply(s, "GET", "/v2/credentials/gone", 403, "text/plain",
			 "no", 0);
	snprintf(url, sizeof(url), "%s/v2/credentials/gone", sr_testsrv_url(s));
	setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", url, 1);
	assert_int_equal(sr_awscred_resolve(&c, &e), -EACCES);
	assert_non_null(strstr(e.msg, "container endpoint"));
	assert_non_null(strstr(e.msg, "HTTP 403"));

	/* a plain-http host that is neither loopback nor ECS's: refused */
	setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://10.1.2.3/creds", 1);
	assert_int_equal(sr_awscred_resolve(&c, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "must be https, loopback"));
	/* ECS's address as a user name (the prefix check let ":80@" by):
	 * the host is evil.example */
	setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI",
	       "http://169.254.170.2:80@evil.example/creds", 1);
	assert_int_equal(sr_awscred_resolve(&c, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "must be https, loopback"));
	/* a token with a line break would forge a header */
	fx_write(tokf, "a\r\nX-Evil: 1");
	snprintf(url, sizeof(url), "%s/v2/credentials/abc", sr_testsrv_url(s));
	setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", url, 1);
	assert_int_equal(sr_awscred_resolve(&c, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "line break"));
	sr_testsrv_stop(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_env, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_health, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_container, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_profiles, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_malformed_and_none, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_endpoint, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_imds, fx_setup, fx_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
