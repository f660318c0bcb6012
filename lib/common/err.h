/*
 * err.h - the one error convention of spotrun's C code.
 *
 * Every fallible function returns an int: 0 on success, or a negative
 * code on failure.  Codes are negative errno values (-ENOMEM, -EINVAL, ...)
 * or one of the spotrun-specific codes below, which live above the errno
 * range.  sr_strerror() turns any code into words.
 *
 * Functions that can say more than a code take a `struct sr_err *` (which
 * may be NULL) and fill it with a human message that names the file,
 * line, field or request at fault, e.g.
 *
 *     job.yaml:12: resources.accelerators: expected NAME:COUNT
 *
 * The usual shape:
 *
 *     rc = sr_err_set(err, -EINVAL, "%s:%d: %s: expected NAME:COUNT",
 *                     file, line, key);
 *     goto out;
 */
#ifndef SR_COMMON_ERR_H
#define SR_COMMON_ERR_H

#include <errno.h>
#include <stddef.h>

enum {
	SR_E_BASE = 10000,
	SR_EPARSE,      /* malformed input (JSON, YAML, CSV, trace, ...) */
	SR_ECHECKSUM,   /* data read back does not match its checksum */
	SR_ECORRUPT,    /* structurally invalid file or object */
	SR_EHTTP,       /* HTTP transport failure or unexpected status */
	SR_ETIMEOUT,    /* a deadline passed */
	SR_ENOTFOUND,   /* a named thing does not exist */
	SR_ECONFLICT,   /* a state transition that is not allowed now */
	SR_EUNSUPPORTED,/* valid request this build cannot do */
	SR_E_LAST
};

#define SR_ERR_MSG_MAX 512

struct sr_err {
	int code;                 /* last code set, 0 if none */
	char msg[SR_ERR_MSG_MAX]; /* NUL-terminated, "" if none */
};

/* Words for a code: accepts 0, -errno and -SR_E*.  Never NULL.  The
 * returned string is static (thread-safe for the spotrun codes, and uses
 * strerror_r for errno values into thread-local storage). */
const char *sr_strerror(int code);

/* Reset *e to "no error".  NULL-safe. */
void sr_err_clear(struct sr_err *e);

/* Set e->code = code and format e->msg.  NULL-safe (e may be NULL).
 * Returns `code`, so it can be used as `return sr_err_set(...)`. */
int sr_err_set(struct sr_err *e, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Prepend "<prefix>: " to an existing message, e.g. the file name when a
 * lower layer only knew the line.  Returns e->code (or 0 if e is NULL). */
int sr_err_prefix(struct sr_err *e, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* The message if one is set, else sr_strerror(code).  Never NULL. */
const char *sr_err_str(const struct sr_err *e, int code);

#endif
