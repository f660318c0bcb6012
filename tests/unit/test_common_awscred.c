/* Unit tests: lib/common/awscred.c - the AWS credential chain (environment,
 * shared files with profiles, IMDSv2 instance role against the canned
 * test server), region and endpoint resolution. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/awscred.h"
#include "common/testsrv.h"

static const char *const vars[] = {
	"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
	"AWS_PROFILE", "AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE",
	"AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL",
	"AWS_ENDPOINT_URL_EC2", "AWS_ENDPOINT_URL_S3",
	"AWS_IGNORE_CONFIGURED_ENDPOINT_URLS",
	"AWS_EC2_METADATA_SERVICE_ENDPOINT", NULL
};

struct fx {
	char dir[64];
	char home[128];
};

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	if (f == NULL)
		return -1;
	snprintf(f->dir, sizeof(f->dir), "/tmp/sr-awscred-XXXXXX");
	if (mkdtemp(f->dir) == NULL)
		return -1;
	snprintf(f->home, sizeof(f->home), "%s/.aws", f->dir);
	mkdir(f->home, 0700);
	for (int i = 0; vars[i] != NULL; i++)
		unsetenv(vars[i]);
	setenv("HOME", f->dir, 1);
	setenv("AWS_EC2_METADATA_DISABLED", "true", 1);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	char p[256];

	snprintf(p, sizeof(p), "%s/credentials", f->home);
	unlink(p);
	snprintf(p, sizeof(p), "%s/config", f->home);
	unlink(p);
	snprintf(p, sizeof(p), "%s/other", f->dir);
	unlink(p);
	rmdir(f->home);
	rmdir(f->dir);
	free(f);
	return 0;
}

static void put(struct fx *f, const char *name, const char *text)
{
	char p[256];

	snprintf(p, sizeof(p), "%s/%s", f->home, name);
	write_file(p, text);
}

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
	sr_awscred_free(&c);
	assert_null(c.access_key_id);
	sr_awscred_free(NULL);
}

static void test_profiles(void **state)
{
	struct fx *f = *state;
	struct sr_awscred c;
	struct sr_err e = { 0 };
	char *v = NULL;

	put(f, "credentials",
	    "# comment\n[default]\naws_access_key_id = AKIADEF\n"
	    "aws_secret_access_key=defsecret1\n\n"
	    "[dev]\n aws_access_key_id = AKIADEV\n"
	    "aws_access_key_id = AKIADEV\naws_secret_access_key = devsecret2\n"
	    "aws_session_token = devtoken3\n");
	put(f, "config",
	    "[default]\nregion = eu-west-1\n"
	    "[profile dev]\nregion = us-west-2\ns3 =\n  addressing_style = path\n"
	    "[profile cfgonly]\naws_access_key_id = AKIACFG\n"
	    "aws_secret_access_key = cfgsecret4\n"
	    "[profile assume]\nrole_arn = arn:aws:iam::1:role/x\n"
	    "source_profile = default\n"
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
	assert_non_null(strstr(e.msg, "profile assume uses role_arn"));

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
	write_file(v, "[alt]\naws_access_key_id=AKIAALT\n"
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

	put(f, "credentials", "[default]\naws_access_key_id = A\njunk line\n");
	assert_int_equal(sr_awscred_resolve(&c, &e), -SR_EPARSE);
	assert_non_null(strstr(e.msg, "/.aws/credentials:3: expected 'key = value'"));
	put(f, "credentials", "[default\n");
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
	put(f, "config", "[default]\nendpoint_url = http://127.0.0.1:9/\n");
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_env, setup, teardown),
		cmocka_unit_test_setup_teardown(test_profiles, setup, teardown),
		cmocka_unit_test_setup_teardown(test_malformed_and_none, setup, teardown),
		cmocka_unit_test_setup_teardown(test_endpoint, setup, teardown),
		cmocka_unit_test_setup_teardown(test_imds, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
