/*
 * sigv4_tool - test helper for tests/conformance/sigv4_vectors.js: signs
 * each request of a JSON array read on stdin with lib/common/sigv4.c and
 * prints a JSON array of {"headers": [...], "canonical": "..."}.
 *
 * Input objects: method, host, path, query, headers (array of
 * "Name: value"), body, payload_hash, region, service, time (epoch s),
 * akid, secret, token, s3_path, content_sha256.  Test-only: the secrets
 * are made-up example values.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/sigv4.h"

static const char *str(json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

static json_t *sign_one(json_t *c)
{
	json_t *hv = json_object_get(c, "headers"), *out = NULL, *arr = NULL;
	const char **hdrs = calloc(json_array_size(hv) + 1, sizeof(*hdrs));
	const char *body = str(c, "body");
	struct sr_sigv4_creds cr = { str(c, "akid"), str(c, "secret"),
				     str(c, "token") };
	struct sr_sigv4_req r = {
		.method = str(c, "method"), .host = str(c, "host"),
		.path = str(c, "path"), .query = str(c, "query"),
		.headers = hdrs, .payload_hash = str(c, "payload_hash"),
		.body = body, .body_len = body != NULL ? strlen(body) : 0,
		.region = str(c, "region"), .service = str(c, "service"),
		.when = (time_t)json_integer_value(json_object_get(c, "time")),
		.s3_path = json_is_true(json_object_get(c, "s3_path")),
		.add_content_sha256 = json_is_true(json_object_get(c, "content_sha256")),
	};
	struct sr_err e = { 0 };
	char **h = NULL, *canon = NULL;
	size_t i;
	json_t *v;

	if (hdrs == NULL)
		return NULL;
	json_array_foreach(hv, i, v)
		hdrs[i] = json_string_value(v);
	if (sr_sigv4_sign(&r, &cr, &h, &e) < 0 ||
	    sr_sigv4_canonical(&r, &cr, &canon, NULL, NULL, &e) < 0) {
		out = json_pack("{ss}", "error", e.msg);
		goto done;
	}
	arr = json_array();
	for (char **p = h; *p != NULL; p++)
		json_array_append_new(arr, json_string(*p));
	out = json_pack("{soss}", "headers", arr, "canonical", canon);
done:
	sr_sigv4_headers_free(h);
	free(canon);
	free(hdrs);
	return out;
}

int main(void)
{
	json_error_t je;
	json_t *in = json_loadf(stdin, 0, &je), *out = json_array(), *c;
	size_t i;

	if (in == NULL || !json_is_array(in)) {
		fprintf(stderr, "sigv4_tool: stdin:%d: %s\n", je.line, je.text);
		return 2;
	}
	json_array_foreach(in, i, c)
		json_array_append_new(out, sign_one(c));
	json_dumpf(out, stdout, JSON_COMPACT);
	putchar('\n');
	json_decref(in);
	json_decref(out);
	return 0;
}
