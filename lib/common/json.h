/*
 * json.h - thin helpers over jansson: loading with line:column errors and
 * typed getters that name the offending field.
 *
 * Error messages look like
 *     manifest.json:3:14: '}' expected near ','
 *     manifest.json: tensors[2].dtype: expected string
 * where the part before the field is the `ctx` argument.
 */
#ifndef SR_COMMON_JSON_H
#define SR_COMMON_JSON_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include "err.h"

/* Load a file.  Returns a new reference (caller json_decref()s) or NULL
 * with *e set to "path:line:col: reason" (-SR_EPARSE) or an errno code. */
json_t *sr_json_load_file(const char *path, struct sr_err *e);

/* Load from memory; `name` is used in messages (e.g. "request body"). */
json_t *sr_json_load_buf(const char *buf, size_t len, const char *name,
			 struct sr_err *e);

/* Typed getters.  `obj` must be an object; `ctx` prefixes messages.
 * Required getters fail with -SR_EPARSE "<ctx>: <key>: missing" or
 * "<ctx>: <key>: expected <type>".  The _opt forms leave *out untouched
 * (a default the caller set) when the key is absent or null, and still fail
 * on a wrong type.  Returned strings and objects are borrowed from obj. */
int sr_json_get_str(json_t *obj, const char *key, const char **out,
		    const char *ctx, struct sr_err *e);
int sr_json_get_str_opt(json_t *obj, const char *key, const char **out,
			const char *ctx, struct sr_err *e);
int sr_json_get_int(json_t *obj, const char *key, int64_t *out,
		    const char *ctx, struct sr_err *e);
int sr_json_get_int_opt(json_t *obj, const char *key, int64_t *out,
			const char *ctx, struct sr_err *e);
/* Accepts JSON integers and reals. */
int sr_json_get_num(json_t *obj, const char *key, double *out,
		    const char *ctx, struct sr_err *e);
int sr_json_get_num_opt(json_t *obj, const char *key, double *out,
			const char *ctx, struct sr_err *e);
int sr_json_get_bool(json_t *obj, const char *key, bool *out,
		     const char *ctx, struct sr_err *e);
int sr_json_get_bool_opt(json_t *obj, const char *key, bool *out,
			 const char *ctx, struct sr_err *e);
int sr_json_get_obj(json_t *obj, const char *key, json_t **out,
		    const char *ctx, struct sr_err *e);
int sr_json_get_arr(json_t *obj, const char *key, json_t **out,
		    const char *ctx, struct sr_err *e);

/* Reject keys of obj not in the NULL-terminated `allowed` list:
 * -SR_EPARSE "<ctx>: unknown field 'x'". */
int sr_json_check_keys(json_t *obj, const char *const *allowed,
		       const char *ctx, struct sr_err *e);

/* Serialise compactly with sorted keys.  Returns malloc'd string (caller
 * frees) or NULL on out-of-memory. */
char *sr_json_dump(const json_t *v);

/* Durably write v to path (temp file, fsync, rename, fsync dir; see
 * fsutil.h), pretty printed with sorted keys and a final newline, mode
 * 0644.  Loading accepts any top-level value and rejects duplicate keys. */
int sr_json_write_file(const json_t *v, const char *path, struct sr_err *e);

#endif
