/*
 * conftool.h - what the SDK conformance suites' C helpers share
 * (tests/conformance_gcp/gcp_tool.c, tests/conformance_azure/azure_tool.c):
 * their one line of JSON answer on stdout, {"ok": ...} or {"error": msg,
 * "class": c}, a list's answer, and reading a string member of a JSON
 * argument.
 */
#ifndef SR_TESTS_CONFTOOL_H
#define SR_TESTS_CONFTOOL_H

#include <stdio.h>

#include <jansson.h>

#include "cloud/compute.h"

/* Print {"ok": ok} (ok taken; NULL: null).  Returns 0, the exit status. */
static inline int conf_out(json_t *ok)
{
	json_t *d = json_pack("{so}", "ok", ok ? ok : json_null());

	json_dumpf(d, stdout, JSON_COMPACT);
	putchar('\n');
	json_decref(d);
	return 0;
}

/* Print {"error": msg, "class": cls}.  Returns 1, the exit status. */
static inline int conf_fail(const char *msg, int cls)
{
	json_t *d = json_pack("{ss si}", "error", msg, "class", cls);

	json_dumpf(d, stdout, JSON_COMPACT);
	putchar('\n');
	json_decref(d);
	return 1;
}

/* A driver list's answer: the ids of v[0..n) (freed here), or the error
 * when rc < 0.  Returns the exit status. */
static inline int conf_list(int rc, const struct cloud_error *err,
			    struct cloud_instance *v, size_t n)
{
	if (rc) {
		rc = conf_fail(err->msg, err->cls);
	} else {
		json_t *arr = json_array();

		for (size_t i = 0; i < n; i++)
			json_array_append_new(arr, json_string(v[i].id));
		rc = conf_out(arr);
	}
	cloud_instances_free(v, n);
	return rc;
}

/* o's string member k, or NULL. */
static inline const char *conf_js(json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

#endif
