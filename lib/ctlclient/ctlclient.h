/*
 * ctlclient.h - a small client of spotrund's REST API (docs/api.md), used
 * by the `spotrun` CLI (admin token) and by spotrun-agent (node token).
 *
 * Every call sends `Authorization: Bearer <token>`, a JSON body when one
 * is given, and returns the parsed JSON reply.  A call with a method that
 * is not idempotent (POST, PATCH) carries a fresh random
 * `Idempotency-Key`, the same on each retry, so a request that reached a
 * stalled daemon is applied once however often it is retried.  Errors come back as one
 * clear message:
 *   - the daemon cannot be reached: "cannot reach spotrund at URL: ...
 *     (is it running?  start it with 'spotrun daemon start')";
 *   - a 4xx/5xx: the daemon's own error message ("HTTP 400 bad_request:
 *     job.yaml:3: resources: unknown field 'gpus'"), code mapped below.
 *
 *   400 -> -EINVAL   401/403 -> -EACCES   404 -> -SR_ENOTFOUND
 *   409 -> -SR_ECONFLICT   413 -> -E2BIG   other -> -SR_EHTTP
 *
 * An https URL is verified against the system CAs, or against the PEM
 * file named by $SPOTRUN_CA_CERT (a self-signed spotrund certificate).
 *
 * Prefix ctlc_ (the daemon library owns ctl_).  Thread-safe: a client is
 * immutable after creation.
 */
#ifndef SR_CTLCLIENT_H
#define SR_CTLCLIENT_H

#include <jansson.h>

#include "common/err.h"

#define CTLC_DEFAULT_URL "http://127.0.0.1:7077"

struct ctlc;

#define CTLC_IDEM_KEY_LEN 32 /* hex characters */

/* A fresh random Idempotency-Key (CTLC_IDEM_KEY_LEN hex characters and a
 * NUL).  Returns 0 or -errno from getrandom(). */
int ctlc_idem_key(char out[CTLC_IDEM_KEY_LEN + 1]);

struct ctlc_opts {
	long timeout_ms;   /* per request; default 10000 */
	int max_retries;   /* transport/5xx retries; default 2 */
	int failover_rounds; /* with several endpoints: rounds over them
				while none answers or each is a standby
				(503 not_leader); default 20 (about a
				minute) */
};

/* Create a client for `url` ("http://host:port", no trailing path; or a
 * comma-separated list of the endpoints of daemons sharing one store,
 * tried in turn, docs/store.md) with
 * bearer `token` (both copied).  opts may be NULL.  Returns NULL on
 * out-of-memory.  Caller owns; ctlc_destroy(). */
struct ctlc *ctlc_create(const char *url, const char *token,
				     const struct ctlc_opts *opts);
void ctlc_destroy(struct ctlc *c); /* NULL-safe */
const char *ctlc_url(const struct ctlc *c);

/* `method path` with body (may be NULL; not consumed).  On 2xx returns 0
 * and, when reply is non-NULL, a new reference in *reply (caller
 * json_decref()s).  On any failure *reply is NULL and *e says why.
 * status (may be NULL) gets the HTTP status, 0 if none arrived. */
int ctlc_call(const struct ctlc *c, const char *method, const char *path,
	     json_t *body, json_t **reply, long *status, struct sr_err *e);

/* GET path with `Accept: accept` ("text/csv"); on 2xx returns 0 and the
 * body in *out (malloc'd, NUL-terminated, *len bytes; caller frees).
 * Errors as ctlc_call. */
int ctlc_get_text(const struct ctlc *c, const char *path, const char *accept,
		  char **out, size_t *len, struct sr_err *e);
/* The same with a timeout of its own (ms; 0: the client's): a large
 * body (a job's files). */
int ctlc_get_raw(const struct ctlc *c, const char *path, const char *accept,
		 long timeout_ms, char **out, size_t *len, struct sr_err *e);
/* POST a body that is not JSON (Content-Type: ctype; a job's files as
 * application/x-tar), with a timeout of its own (ms; 0: the client's);
 * the JSON reply in *reply as ctlc_call. */
int ctlc_post_raw(const struct ctlc *c, const char *path, const char *ctype,
		  const void *data, size_t len, long timeout_ms, json_t **reply,
		  struct sr_err *e);

/* ---- locating the daemon (CLI) ---------------------------------------- */

/* The state dir: `flag` if non-NULL, else $SPOTRUN_STATE_DIR, else
 * $XDG_STATE_HOME/spotrun, else $HOME/.local/state/spotrun.  Returns a
 * malloc'd string (caller frees), or NULL with *e set (-ENOMEM, or -EINVAL
 * saying which variables or flag would name one). */
char *ctlc_state_dir(const char *flag, struct sr_err *e);

/* The API URL: `flag`, else $SPOTRUN_API, else the first line of
 * <state_dir>/api.url (written by spotrund after it binds), else
 * CTLC_DEFAULT_URL.  Returns malloc'd (caller frees) or NULL on OOM. */
char *ctlc_api_url(const char *flag, const char *state_dir);

/* The admin token: $SPOTRUN_TOKEN, else <state_dir>/api.token.  Returns 0
 * and a malloc'd string in *out, or a negative code with *e saying which
 * file is missing and how to start the daemon. */
int ctlc_admin_token(const char *state_dir, char **out, struct sr_err *e);

/* Read a token file (first line; 16..256 printable characters).  Returns
 * 0 and a malloc'd string, or a negative code naming the file. */
int ctlc_read_token_file(const char *path, char **out, struct sr_err *e);

/* Create a CLI client: state dir + URL + admin token, as above.  `api`
 * and `state_dir` are the command-line flags (may be NULL).
 * $SPOTRUN_API_TIMEOUT (a duration) overrides the per-request timeout. */
int ctlc_open_cli(const char *api, const char *state_dir,
			struct ctlc **out, struct sr_err *e);

#endif
