/* Unit tests: lib/common/awscred_cache.c - credentials refreshed before
 * they expire: a credential_process that hands out keys expiring in 10
 * minutes (inside the 15-minute window) and counts its calls; a refresh
 * that fails keeps the old keys while they last and shows up in the
 * health; after the cloud says "expired" signing stops with -EKEYEXPIRED
 * (the caller waits) until a refresh works again. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "awscred_fixture.h"
#include "common/awscred_int.h"

/* Sign a request; returns which access key id signed it (into id). */
static int sign(struct sr_awscred_cache *cc, char *id, size_t n,
		struct sr_err *e)
{
	struct sr_sigv4_req r = {
		.method = "POST", .host = "ec2.example", .path = "/",
		.body = "Action=X", .body_len = 8, .region = "us-east-1",
		.service = "ec2", .when = time(NULL),
	};
	char **sig = NULL;
	int rc = sr_awscred_cache_sign(cc, &r, &sig, e);

	id[0] = '\0';
	if (rc < 0)
		return rc;
	for (int i = 0; sig[i] != NULL; i++) {
		const char *c = strstr(sig[i], "Credential=");

		if (c != NULL)
			snprintf(id, n, "%.*s", (int)strcspn(c + 11, "/"), c + 11);
	}
	sr_sigv4_headers_free(sig);
	return 0;
}

static void test_refresh(void **state)
{
	struct fx *f = *state;
	struct sr_awscred_cache *cc = NULL;
	struct sr_awscred_state st;
	struct sr_err e = { 0 };
	char path[256], cfg[512], id[64], msg[600], broken[256];
	time_t t = time(NULL) + 600;
	char exp[40];

	strftime(exp, sizeof(exp), "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
	snprintf(broken, sizeof(broken), "%s/broken", f->dir);
	snprintf(path, sizeof(path), "%s/creds.sh", f->dir);
	snprintf(cfg, sizeof(cfg),
		 "#!/bin/sh\nd=$(dirname \"$0\")\n"
		 "if [ -e \"$d/broken\" ]; then echo 'login needed' >&2; exit 1; fi\n"
		 "n=$(cat \"$d/n\" 2>/dev/null || echo 0); n=$((n + 1))\n"
		 "echo $n > \"$d/n\"\n"
		 "echo \"{\\\"Version\\\":1,\\\"AccessKeyId\\\":\\\"ASIA$n\\\","
		 "\\\"SecretAccessKey\\\":\\\"s$n-secret\\\",\\\"SessionToken\\\":"
		 "\\\"t$n-token\\\",\\\"Expiration\\\":\\\"%s\\\"}\"\n", exp);
	fx_write(path, cfg);
	chmod(path, 0700);
	snprintf(cfg, sizeof(cfg), "[default]\ncredential_process = %s\n", path);
	fx_put(f, "config", cfg);

	assert_int_equal(sr_awscred_cache_open(&cc, &e), 0);
	sr_awscred__cache_retry(cc, 0);
	/* they expire within the window: the first sign refreshes */
	assert_int_equal(sign(cc, id, sizeof(id), &e), 0);
	assert_string_equal(id, "ASIA2");
	sr_awscred_cache_state(cc, &st);
	assert_int_equal(st.refreshes, 1);
	assert_int_equal(st.kind, SR_AWSCRED_PROCESS);
	assert_int_equal(st.expires_s, (int64_t)t);
	assert_int_equal(sr_awscred_cache_health(cc, time(NULL), msg, sizeof(msg)), 0);

	/* the source breaks: the old keys go on while they last, and the
	 * health warns with the reason */
	fx_write(broken, "");
	assert_int_equal(sign(cc, id, sizeof(id), &e), 0);
	assert_string_equal(id, "ASIA2");
	sr_awscred_cache_state(cc, &st);
	assert_true(st.last_rc < 0);
	assert_non_null(strstr(st.last_err, "exited with status 1: login needed"));
	assert_int_equal(sr_awscred_cache_health(cc, time(NULL), msg, sizeof(msg)), 1);
	assert_non_null(strstr(msg, "expire soon and cannot be refreshed: "));

	/* the cloud says they expired: no more signing, the caller waits */
	sr_awscred_cache_expire(cc);
	assert_int_equal(sign(cc, id, sizeof(id), &e), -EKEYEXPIRED);
	assert_non_null(strstr(e.msg, "expired; refresh: "));
	assert_int_equal(sr_awscred_cache_health(cc, time(NULL), msg, sizeof(msg)), 2);

	/* fixed: the next sign refreshes and goes on */
	unlink(broken);
	assert_int_equal(sign(cc, id, sizeof(id), &e), 0);
	assert_string_equal(id, "ASIA3");
	sr_awscred_cache_state(cc, &st);
	assert_int_equal(st.refreshes, 2);
	assert_int_equal(st.last_rc, 0);
	sr_awscred_cache_close(cc);
	sr_awscred_cache_close(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_refresh, fx_setup, fx_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
