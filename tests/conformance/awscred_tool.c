/*
 * awscred_tool - test helper for tests/conformance/sts_conformance_test.js:
 * resolves AWS credentials with spotrun's chain (common/awscred.h) in the
 * environment the test sets up (HOME with ~/.aws files, AWS_PROFILE,
 * AWS_ENDPOINT_URL_STS on loopback, ...) and prints them as JSON.  The
 * values are the suite's fakes.
 *
 *   awscred_tool resolve
 *
 * Exit 0 with {"ok": {"akid", "secret", "token", "expires", "kind",
 * "source"}}; exit 1 with {"error": msg, "code": rc}.
 */
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "common/awscred.h"

int main(int argc, char **argv)
{
	struct sr_awscred c;
	struct sr_err e = { 0 };
	json_t *o;
	int rc;

	if (argc != 2 || strcmp(argv[1], "resolve") != 0) {
		fprintf(stderr, "usage: awscred_tool resolve\n");
		return 2;
	}
	rc = sr_awscred_resolve(&c, &e);
	if (rc < 0)
		o = json_pack("{ss si}", "error", e.msg, "code", rc);
	else
		o = json_pack("{s{ss ss ss? sI ss ss}}", "ok", "akid",
			      c.access_key_id, "secret", c.secret_access_key,
			      "token", c.session_token, "expires",
			      (json_int_t)c.expires_s, "kind",
			      sr_awscred_kind_str(c.kind), "source", c.source);
	json_dumpf(o, stdout, JSON_COMPACT);
	putchar('\n');
	json_decref(o);
	sr_awscred_free(&c);
	return rc < 0 ? 1 : 0;
}
