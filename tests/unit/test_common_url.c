/* Unit tests: lib/common/url.h - URLs split by libcurl's URL API: the
 * parts, what the hand-rolled splitting got wrong before (an IPv6 host,
 * a port, user:password@), the messages (never with a password in them),
 * scheme detection, and loopback hosts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/url.h"

static void test_parts(void **state)
{
	struct sr_url u;
	struct sr_err e = { 0 };
	char *a, *o;

	(void)state;
	assert_int_equal(sr_url_parse("https://ec2.us-east-1.amazonaws.com", &u, &e), 0);
	assert_string_equal(u.scheme, "https");
	assert_string_equal(u.host, "ec2.us-east-1.amazonaws.com");
	assert_int_equal(u.port, -1);
	assert_string_equal(u.path, "/");
	assert_null(u.user);
	assert_null(u.query);
	sr_url_free(&u);

	/* an IPv6 host with a port: "[::1]:9000", not "[" and ":1]:9000" */
	assert_int_equal(sr_url_parse("http://[::1]:9000/x/y", &u, &e), 0);
	assert_string_equal(u.host, "[::1]");
	assert_int_equal(u.port, 9000);
	assert_string_equal(u.path, "/x/y");
	a = sr_url_authority(&u);
	o = sr_url_origin(&u);
	assert_string_equal(a, "[::1]:9000");
	assert_string_equal(o, "http://[::1]:9000");
	free(a);
	free(o);
	sr_url_free(&u);

	/* user:password@ is not part of the host */
	assert_int_equal(sr_url_parse("HTTP://user:pw@Host:8080/p?q=1#f", &u, &e), 0);
	assert_string_equal(u.scheme, "http");
	assert_string_equal(u.user, "user");
	assert_string_equal(u.password, "pw");
	assert_string_equal(u.host, "Host");
	assert_int_equal(u.port, 8080);
	assert_string_equal(u.query, "q=1");
	assert_string_equal(u.fragment, "f");
	a = sr_url_authority(&u);
	assert_string_equal(a, "Host:8080");
	free(a);
	sr_url_free(&u);

	/* an IPv6 zone stays with its host; one that is no interface name
	 * (curl lets "@" and "[" by) is refused */
	assert_int_equal(sr_url_parse("http://[fe80::1%25eth0]:80/", &u, &e), 0);
	assert_string_equal(u.host, "[fe80::1%25eth0]");
	assert_int_equal(u.port, 80);
	sr_url_free(&u);
	assert_int_equal(sr_url_parse("http://[fe80::1%25a%40b]/", &u, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "bad IPv6 zone"));

	/* checkpoint URIs: any scheme, the path as written */
	assert_int_equal(sr_url_parse("s3://bucket/a/../b//c d", &u, &e), 0);
	assert_string_equal(u.scheme, "s3");
	assert_string_equal(u.host, "bucket");
	assert_string_equal(u.path, "/a/../b//c d");
	sr_url_free(&u);
	assert_int_equal(sr_url_parse("file:///tmp/ck", &u, &e), 0);
	assert_string_equal(u.host, "");
	assert_string_equal(u.path, "/tmp/ck");
	sr_url_free(&u);
	sr_url_free(NULL);
}

static void test_errors(void **state)
{
	static const struct { const char *url, *msg; } bad[] = {
		{ "http://h:99999/", "bad port" },
		{ "http://[::1/", "bad IPv6 address" },
		{ "nonsense", "not a URL" },
		{ "/tmp/x", "not a URL" },
		{ "http://", "no host" },
		{ "http://a b/", "bad host name" },
		{ "http:/%25e0Y:80/", "bad host name" }, /* fuzz_url: '%' */
		{ "http://a%25b/", "bad host name" },
		{ "http://1%35/", "bad host name" }, /* fuzz_url: "15" */
		{ "file://relative", "absolute path" },
		{ "", "not a URL" },
	};
	struct sr_url u;

	(void)state;
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct sr_err e = { 0 };

		assert_int_equal(sr_url_parse(bad[i].url, &u, &e), -EINVAL);
		if (!strstr(e.msg, bad[i].msg))
			fail_msg("%s: '%s' lacks '%s'", bad[i].url, e.msg, bad[i].msg);
		assert_null(u.scheme);
	}
}

static void test_password_never_in_a_message(void **state)
{
	struct sr_err e = { 0 };
	struct sr_url u;

	(void)state;
	assert_int_equal(sr_url_parse("http://user:s3cret@h:99999/", &u, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "bad port"));
	assert_null(strstr(e.msg, "s3cret"));
	assert_int_equal(sr_url_parse_http("ftp://user:s3cret@h/", "AWS_ENDPOINT_URL",
					   &u, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "AWS_ENDPOINT_URL"));
	assert_non_null(strstr(e.msg, "expected an http:// or https:// URL"));
	assert_null(strstr(e.msg, "s3cret"));
}

static void test_http(void **state)
{
	struct sr_err e = { 0 };
	struct sr_url u;

	(void)state;
	assert_int_equal(sr_url_parse_http("https://[2001:db8::1]:8443", "x", &u, &e), 0);
	assert_string_equal(u.host, "[2001:db8::1]");
	assert_int_equal(u.port, 8443);
	sr_url_free(&u);
	assert_int_equal(sr_url_parse_http("s3://bucket", "the endpoint", &u, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "the endpoint: 's3://bucket': expected an http"));
	assert_int_equal(sr_url_parse_http("localhost:9000", "the endpoint", &u, &e),
			 -EINVAL);
	assert_non_null(strstr(e.msg, "the endpoint"));
}

static void test_scheme(void **state)
{
	static const struct { const char *s, *scheme; } cases[] = {
		{ "s3://bucket/x", "s3" },
		{ "S3://bucket/x", "s3" },
		{ "s3://bad bucket/x", "s3" },   /* a URL, with an error */
		{ "gs://b\001/x", "gs" },
		{ "file:///x", "file" },
		{ "https://[::1]:1/", "https" },
		{ "postgresql://u:p@h1:5432,h2:5432/db", "postgresql" }, /* libpq's */
		{ "/tmp/x", NULL },
		{ "./run:1/x", NULL },
		{ "run:1/x", NULL },
		{ "s3:bucket", NULL },
		{ "/data/a://b", NULL },
		{ "bucket", NULL },
		{ "", NULL },
	};
	char buf[16];

	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		int rc = sr_url_scheme(cases[i].s, buf, sizeof buf);

		if (rc != (cases[i].scheme != NULL))
			fail_msg("%s: %d", cases[i].s, rc);
		if (cases[i].scheme)
			assert_string_equal(buf, cases[i].scheme);
	}
	assert_int_equal(sr_url_scheme("https://h/", buf, 4), 0); /* no room */
	assert_int_equal(sr_url_scheme(NULL, buf, sizeof buf), 0);
}

static void test_loopback(void **state)
{
	(void)state;
	assert_true(sr_url_is_loopback("http://127.0.0.1:80/x"));
	assert_true(sr_url_is_loopback("http://127.9.9.9"));
	assert_true(sr_url_is_loopback("http://[::1]:9/"));
	assert_true(sr_url_is_loopback("http://LOCALHOST:9"));
	assert_true(sr_url_is_loopback("http://user:pw@127.0.0.1:9/"));
	assert_false(sr_url_is_loopback("https://ec2.us-east-1.amazonaws.com"));
	assert_false(sr_url_is_loopback("http://127.0.0.1.evil.com/"));
	assert_false(sr_url_is_loopback("http://127.0.0.1@evil.com/"));
	assert_false(sr_url_is_loopback("http://127.0.0.1:80@evil.com/"));
	assert_false(sr_url_is_loopback("http://[::1]@evil.com/"));
	assert_false(sr_url_is_loopback("http://10.0.0.1/"));
	assert_false(sr_url_is_loopback("http://[::2]/"));
	assert_false(sr_url_is_loopback("nonsense"));
	assert_false(sr_url_is_loopback(NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parts),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_password_never_in_a_message),
		cmocka_unit_test(test_http),
		cmocka_unit_test(test_scheme),
		cmocka_unit_test(test_loopback),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
