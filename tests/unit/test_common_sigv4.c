/* Unit tests: lib/common/sigv4.c against AWS's published example vectors.
 *
 * The vectors are the ones AWS documents for Signature Version 4 (the
 * "get-vanilla" case of its SigV4 test suite and the IAM ListUsers
 * example of the signing guide): access key AKIDEXAMPLE, the example
 * secret, 2015-08-30T12:36:00Z.  tests/conformance/sigv4_vectors.js checks
 * many more requests against the official JavaScript signer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/sigv4.h"

#define AKID "AKIDEXAMPLE"
#define SECRET "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
#define WHEN 1440938160 /* 2015-08-30T12:36:00Z */

static const struct sr_sigv4_creds creds = { AKID, SECRET, NULL };

static const char *find(char **h, const char *prefix)
{
	for (; h != NULL && *h != NULL; h++)
		if (strncmp(*h, prefix, strlen(prefix)) == 0)
			return *h + strlen(prefix);
	return NULL;
}

static void test_get_vanilla(void **state)
{
	struct sr_sigv4_req r = {
		.method = "GET", .host = "example.amazonaws.com", .path = "/",
		.region = "us-east-1", .service = "service", .when = WHEN,
	};
	char **h = NULL, *canon = NULL, *sts = NULL;
	struct sr_err e = { 0 };

	(void)state;
	assert_int_equal(sr_sigv4_sign(&r, &creds, &h, &e), 0);
	assert_string_equal(find(h, "X-Amz-Date: "), "20150830T123600Z");
	assert_string_equal(find(h, "Authorization: "),
		"AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/"
		"service/aws4_request, SignedHeaders=host;x-amz-date, "
		"Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31");
	assert_null(find(h, "X-Amz-Security-Token: "));
	assert_int_equal(sr_sigv4_canonical(&r, &creds, &canon, &sts, NULL, &e), 0);
	assert_string_equal(canon,
		"GET\n/\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\n"
		"host;x-amz-date\n"
		"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	assert_string_equal(sts,
		"AWS4-HMAC-SHA256\n20150830T123600Z\n20150830/us-east-1/service/"
		"aws4_request\n"
		"bb579772317eb040ac9ed261061d46c1f17a8133879d6129b6e1c25292927e63");
	free(canon);
	free(sts);
	sr_sigv4_headers_free(h);
}

static void test_iam_list_users(void **state)
{
	const char *const hdrs[] = {
		"Content-Type: application/x-www-form-urlencoded; charset=utf-8",
		NULL
	};
	struct sr_sigv4_req r = {
		.method = "GET", .host = "iam.amazonaws.com", .path = "/",
		.query = "Action=ListUsers&Version=2010-05-08", .headers = hdrs,
		.region = "us-east-1", .service = "iam", .when = WHEN,
	};
	char **h = NULL;
	struct sr_err e = { 0 };

	(void)state;
	assert_int_equal(sr_sigv4_sign(&r, &creds, &h, &e), 0);
	assert_string_equal(find(h, "Authorization: "),
		"AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/iam/"
		"aws4_request, SignedHeaders=content-type;host;x-amz-date, "
		"Signature=5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7");
	sr_sigv4_headers_free(h);
}

/* Query order, encoding and repeated keys; path normalisation and double
 * encoding; header trimming and joining. */
static void test_canonical_forms(void **state)
{
	const char *const hdrs[] = { "My-Header1:  a   b  ", "my-header1: c",
				     NULL };
	struct sr_sigv4_req r = {
		.method = "GET", .host = "h", .path = "/a/./b/../c%20d//e/",
		.query = "z=1&a=b%20c&a=a&sp=x+y&e", .headers = hdrs,
		.region = "r", .service = "s", .when = WHEN,
	};
	char *canon = NULL, *sh = NULL;
	struct sr_err e = { 0 };

	(void)state;
	assert_int_equal(sr_sigv4_canonical(&r, &creds, &canon, NULL, &sh, &e), 0);
	assert_string_equal(sh, "host;my-header1;x-amz-date");
	assert_non_null(strstr(canon, "GET\n/a/c%2520d/e/\n"
				      "a=a&a=b%20c&e=&sp=x%2By&z=1\n"));
	assert_non_null(strstr(canon, "my-header1:a b,c\n"));
	free(canon);
	free(sh);

	/* S3: the path is taken as given, no normalisation */
	r.s3_path = 1;
	r.path = "/bucket/a%20b/../k";
	r.query = NULL;
	r.headers = NULL;
	assert_int_equal(sr_sigv4_canonical(&r, &creds, &canon, NULL, NULL, &e), 0);
	assert_non_null(strstr(canon, "GET\n/bucket/a%20b/../k\n\n"));
	free(canon);
}

static void test_token_and_content_sha(void **state)
{
	const struct sr_sigv4_creds c = { AKID, SECRET, "TOKEN/abc=" };
	struct sr_sigv4_req r = {
		.method = "PUT", .host = "b.s3.amazonaws.com", .path = "/k",
		.body = "hello", .body_len = 5, .region = "us-east-1",
		.service = "s3", .when = WHEN, .s3_path = 1,
		.add_content_sha256 = 1,
	};
	char **h = NULL;
	struct sr_err e = { 0 };
	const char *auth;

	(void)state;
	assert_int_equal(sr_sigv4_sign(&r, &c, &h, &e), 0);
	assert_string_equal(find(h, "X-Amz-Content-Sha256: "),
		"2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824");
	assert_string_equal(find(h, "X-Amz-Security-Token: "), "TOKEN/abc=");
	auth = find(h, "Authorization: ");
	assert_non_null(strstr(auth, "SignedHeaders=host;x-amz-content-sha256;"
				     "x-amz-date;x-amz-security-token,"));
	assert_null(strstr(auth, SECRET));
	sr_sigv4_headers_free(h);

	r.payload_hash = SR_SIGV4_UNSIGNED_PAYLOAD;
	assert_int_equal(sr_sigv4_sign(&r, &c, &h, &e), 0);
	assert_string_equal(find(h, "X-Amz-Content-Sha256: "), "UNSIGNED-PAYLOAD");
	sr_sigv4_headers_free(h);
}

static void test_bad_input(void **state)
{
	const char *const bad[] = { "NoColon", NULL };
	const char *const host[] = { "Host: x", NULL };
	struct sr_sigv4_req r = {
		.method = "GET", .host = "h", .region = "r", .service = "s",
	};
	const struct sr_sigv4_creds nosecret = { AKID, NULL, NULL };
	char **h = (char **)1;
	struct sr_err e = { 0 };

	(void)state;
	r.headers = bad;
	assert_int_equal(sr_sigv4_sign(&r, &creds, &h, &e), -EINVAL);
	assert_null(h);
	assert_string_equal(e.msg, "sigv4: header 0: expected 'Name: value'");
	r.headers = host;
	assert_int_equal(sr_sigv4_sign(&r, &creds, &h, &e), -EINVAL);
	assert_string_equal(e.msg, "sigv4: header 'host': set by the signer");
	r.headers = NULL;
	assert_int_equal(sr_sigv4_sign(&r, &nosecret, &h, &e), -EINVAL);
	assert_string_equal(e.msg, "sigv4: secret access key: missing");
	r.region = NULL;
	assert_int_equal(sr_sigv4_sign(&r, &creds, &h, &e), -EINVAL);
	assert_string_equal(e.msg, "sigv4: region: missing");
	sr_sigv4_headers_free(NULL);
}

static void test_uri_encode(void **state)
{
	size_t n = 0;
	char *s;

	(void)state;
	s = sr_sigv4_uri_encode("a b/c~-_.*+é", strlen("a b/c~-_.*+é"), 0);
	assert_string_equal(s, "a%20b%2Fc~-_.%2A%2B%C3%A9");
	free(s);
	s = sr_sigv4_uri_encode("a b/c", 5, 1);
	assert_string_equal(s, "a%20b/c");
	free(s);
	s = sr_sigv4_uri_decode("a%20b+c%2Fd%zz%4", 16, 1, &n);
	assert_string_equal(s, "a b c/d%zz%4");
	assert_int_equal(n, 12);
	free(s);
	s = sr_sigv4_uri_decode("a+b", 3, 0, NULL);
	assert_string_equal(s, "a+b");
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_get_vanilla),
		cmocka_unit_test(test_iam_list_users),
		cmocka_unit_test(test_canonical_forms),
		cmocka_unit_test(test_token_and_content_sha),
		cmocka_unit_test(test_bad_input),
		cmocka_unit_test(test_uri_encode),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
