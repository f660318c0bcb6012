/*
 * json.c - jansson loading with "name:line:col: reason" errors, typed
 * getters whose errors name the field, and durable JSON writes.
 */
#include "json.h"
#include "fsutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LOAD_FLAGS (JSON_DECODE_ANY | JSON_REJECT_DUPLICATES)

static json_t *load_fail(const json_error_t *je, const char *name,
			 struct sr_err *e)
{
	sr_err_set(e, -SR_EPARSE, "%s:%d:%d: %s", name, je->line, je->column,
		   je->text);
	return NULL;
}

json_t *sr_json_load_buf(const char *buf, size_t len, const char *name,
			 struct sr_err *e)
{
	json_error_t je;
	json_t *v;

	if (name == NULL)
		name = "<json>";
	if (buf == NULL) {
		sr_err_set(e, -EINVAL, "%s: no data", name);
		return NULL;
	}
	v = json_loadb(buf, len, LOAD_FLAGS, &je);
	if (v == NULL)
		return load_fail(&je, name, e);
	return v;
}

json_t *sr_json_load_file(const char *path, struct sr_err *e)
{
	json_error_t je;
	json_t *v;
	FILE *f;
	int rc;

	f = fopen(path, "re");
	if (f == NULL) {
		rc = -errno;
		sr_err_set(e, rc, "%s: %s", path, sr_strerror(rc));
		return NULL;
	}
	v = json_loadf(f, LOAD_FLAGS, &je);
	fclose(f);
	if (v == NULL)
		return load_fail(&je, path, e);
	return v;
}

static const char *type_name(json_type t)
{
	switch (t) {
	case JSON_OBJECT: return "object";
	case JSON_ARRAY: return "array";
	case JSON_STRING: return "string";
	case JSON_INTEGER: return "integer";
	case JSON_REAL: return "number";
	case JSON_TRUE:
	case JSON_FALSE: return "boolean";
	default: return "null";
	}
}

static int field_err(struct sr_err *e, const char *ctx, const char *key,
		     const char *what, const json_t *got)
{
	const char *sep = ctx != NULL && ctx[0] != '\0' ? ": " : "";

	if (got == NULL)
		return sr_err_set(e, -SR_EPARSE, "%s%s%s: %s", ctx ? ctx : "",
				  sep, key, what);
	return sr_err_set(e, -SR_EPARSE, "%s%s%s: expected %s, got %s",
			  ctx ? ctx : "", sep, key, what,
			  type_name(json_typeof(got)));
}

/* Look up key; 1 = found (non-null), 0 = absent/null, <0 = error. */
static int lookup(json_t *obj, const char *key, bool required,
		  const char *ctx, struct sr_err *e, json_t **v)
{
	*v = NULL;
	if (!json_is_object(obj)) {
		const char *sep = ctx != NULL && ctx[0] != '\0' ? ": " : "";

		return sr_err_set(e, -SR_EPARSE, "%s%sexpected an object holding '%s'",
				  ctx ? ctx : "", sep, key);
	}
	*v = json_object_get(obj, key);
	if (*v == NULL || json_is_null(*v)) {
		if (required)
			return field_err(e, ctx, key, "missing", NULL);
		return 0;
	}
	return 1;
}

static int get_str(json_t *obj, const char *key, const char **out,
		   bool req, const char *ctx, struct sr_err *e)
{
	json_t *v;
	int rc = lookup(obj, key, req, ctx, e, &v);

	if (rc <= 0)
		return rc;
	if (!json_is_string(v))
		return field_err(e, ctx, key, "string", v);
	*out = json_string_value(v);
	return 0;
}

static int get_int(json_t *obj, const char *key, int64_t *out,
		   bool req, const char *ctx, struct sr_err *e)
{
	json_t *v;
	int rc = lookup(obj, key, req, ctx, e, &v);

	if (rc <= 0)
		return rc;
	if (!json_is_integer(v))
		return field_err(e, ctx, key, "integer", v);
	*out = (int64_t)json_integer_value(v);
	return 0;
}

static int get_num(json_t *obj, const char *key, double *out,
		   bool req, const char *ctx, struct sr_err *e)
{
	json_t *v;
	int rc = lookup(obj, key, req, ctx, e, &v);

	if (rc <= 0)
		return rc;
	if (!json_is_number(v))
		return field_err(e, ctx, key, "number", v);
	*out = json_number_value(v);
	return 0;
}

static int get_bool(json_t *obj, const char *key, bool *out,
		    bool req, const char *ctx, struct sr_err *e)
{
	json_t *v;
	int rc = lookup(obj, key, req, ctx, e, &v);

	if (rc <= 0)
		return rc;
	if (!json_is_boolean(v))
		return field_err(e, ctx, key, "boolean", v);
	*out = json_is_true(v);
	return 0;
}

int sr_json_get_str(json_t *obj, const char *key, const char **out,
		    const char *ctx, struct sr_err *e)
{
	return get_str(obj, key, out, true, ctx, e);
}

int sr_json_get_str_opt(json_t *obj, const char *key, const char **out,
			const char *ctx, struct sr_err *e)
{
	return get_str(obj, key, out, false, ctx, e);
}

int sr_json_get_int(json_t *obj, const char *key, int64_t *out,
		    const char *ctx, struct sr_err *e)
{
	return get_int(obj, key, out, true, ctx, e);
}

int sr_json_get_int_opt(json_t *obj, const char *key, int64_t *out,
			const char *ctx, struct sr_err *e)
{
	return get_int(obj, key, out, false, ctx, e);
}

int sr_json_get_num(json_t *obj, const char *key, double *out,
		    const char *ctx, struct sr_err *e)
{
	return get_num(obj, key, out, true, ctx, e);
}

int sr_json_get_num_opt(json_t *obj, const char *key, double *out,
			const char *ctx, struct sr_err *e)
{
	return get_num(obj, key, out, false, ctx, e);
}

int sr_json_get_bool(json_t *obj, const char *key, bool *out,
		     const char *ctx, struct sr_err *e)
{
	return get_bool(obj, key, out, true, ctx, e);
}

int sr_json_get_bool_opt(json_t *obj, const char *key, bool *out,
			 const char *ctx, struct sr_err *e)
{
	return get_bool(obj, key, out, false, ctx, e);
}

int sr_json_get_obj(json_t *obj, const char *key, json_t **out,
		    const char *ctx, struct sr_err *e)
{
	json_t *v;
	int rc = lookup(obj, key, true, ctx, e, &v);

	if (rc < 0)
		return rc;
	if (!json_is_object(v))
		return field_err(e, ctx, key, "object", v);
	*out = v;
	return 0;
}

int sr_json_get_arr(json_t *obj, const char *key, json_t **out,
		    const char *ctx, struct sr_err *e)
{
	json_t *v;
	int rc = lookup(obj, key, true, ctx, e, &v);

	if (rc < 0)
		return rc;
	if (!json_is_array(v))
		return field_err(e, ctx, key, "array", v);
	*out = v;
	return 0;
}

int sr_json_check_keys(json_t *obj, const char *const *allowed,
		       const char *ctx, struct sr_err *e)
{
	const char *key, *sep = ctx != NULL && ctx[0] != '\0' ? ": " : "";
	json_t *v;

	if (!json_is_object(obj))
		return sr_err_set(e, -SR_EPARSE, "%s%sexpected an object",
				  ctx ? ctx : "", sep);
	json_object_foreach(obj, key, v) {
		size_t i;

		for (i = 0; allowed != NULL && allowed[i] != NULL; i++) {
			if (strcmp(allowed[i], key) == 0)
				break;
		}
		if (allowed == NULL || allowed[i] == NULL)
			return sr_err_set(e, -SR_EPARSE, "%s%sunknown field '%s'",
					  ctx ? ctx : "", sep, key);
	}
	return 0;
}

char *sr_json_dump(const json_t *v)
{
	return json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
}

int sr_json_write_file(const json_t *v, const char *path, struct sr_err *e)
{
	char *s;
	size_t n;
	int rc;

	s = json_dumps(v, JSON_INDENT(2) | JSON_SORT_KEYS | JSON_ENCODE_ANY);
	if (s == NULL)
		return sr_err_set(e, -ENOMEM, "%s: cannot serialise JSON", path);
	n = strlen(s);
	s[n] = '\n'; /* jansson allocates exactly n+1: replace NUL, write n+1 */
	rc = sr_fs_write_atomic(path, s, n + 1, 0644, e);
	free(s);
	return rc;
}
