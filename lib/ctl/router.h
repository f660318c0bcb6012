/*
 * router.h - spotrund's HTTP route table and event hooks.
 *
 * Any file linked into spotrund registers its routes with CTL_ROUTE()
 * (a constructor, like CLI_COMMAND), so the FinOps component adds
 * /metrics, /v1/cost and the dashboard in its own files without editing
 * the daemon.  The daemon dispatches each request to the first route whose
 * method and pattern match; patterns are literal segments and `{name}`
 * segments ("/v1/jobs/{id}/events").  Authentication is done before the
 * handler runs, according to the route's auth level.
 *
 * Handlers run on one of the HTTP server's threads (several at once):
 * they must be thread-safe and use ctl_req_store() - a store connection
 * owned by the calling thread - for all state (lib/store).  A handler fills *rs with one
 * of the ctl_resp_* helpers and returns 0; a negative return with no
 * response set becomes "500 internal".
 */
#ifndef SR_CTL_ROUTER_H
#define SR_CTL_ROUTER_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

struct store;

enum ctl_auth {
	CTL_AUTH_PUBLIC = 0, /* no token (healthz, IMDS, metrics if wanted) */
	CTL_AUTH_ADMIN = 1,  /* the admin token from <state>/api.token */
	CTL_AUTH_NODE = 2,   /* the admin token, or the node token of {id} */
};

struct ctl;      /* the daemon (opaque) */
struct ctl_req;  /* one request (opaque, valid during the handler) */

struct ctl_resp {
	int status;        /* HTTP status */
	const char *ctype; /* static string */
	char *body;        /* malloc'd; the server frees it */
	size_t body_len;
	char allow[64];    /* Allow header for 405, "" if none */
};

typedef int (*ctl_route_fn)(struct ctl_req *rq, struct ctl_resp *rs);

struct ctl_route {
	const char *method;  /* "GET", "POST", ... */
	const char *pattern; /* "/v1/jobs/{id}" */
	enum ctl_auth auth;
	ctl_route_fn fn;
	const char *name;    /* for logs */
};

/* Add a route (called from constructors; not thread-safe, before main).
 * At most CTL_ROUTES_MAX routes. */
#define CTL_ROUTES_MAX 128
void ctl_route_register(const struct ctl_route *r);

#define CTL_ROUTE(METHOD, PATTERN, AUTH, FN)                                \
	static const struct ctl_route ctl__route_##FN = {                   \
		METHOD, PATTERN, AUTH, FN, #FN };                           \
	__attribute__((constructor)) static void ctl__reg_##FN(void)        \
	{                                                                   \
		ctl_route_register(&ctl__route_##FN);                       \
	}

/* --- request accessors (borrowed pointers, valid during the handler) --- */
const char *ctl_req_method(const struct ctl_req *rq);
const char *ctl_req_path(const struct ctl_req *rq);
/* Value of the {name} segment, or NULL. */
const char *ctl_req_param(const struct ctl_req *rq, const char *name);
/* {name} as a positive int64; 0 on success, -EINVAL (and a 400 response
 * in rs naming the parameter) otherwise. */
int ctl_req_param_id(const struct ctl_req *rq, const char *name,
		     int64_t *out, struct ctl_resp *rs);
/* Query-string argument (URL-decoded) or NULL. */
const char *ctl_req_query(const struct ctl_req *rq, const char *key);
/* The token of "Authorization: Bearer <token>" (the scheme in any case),
 * or NULL: for a CTL_AUTH_PUBLIC route that checks a credential of its
 * own (a node's bootstrap secret). */
const char *ctl_req_bearer(const struct ctl_req *rq);
/* Raw body (NUL-terminated; "" if none). */
const char *ctl_req_body(const struct ctl_req *rq, size_t *len);
/* The calling thread's database connection. */
struct store *ctl_req_store(const struct ctl_req *rq);
struct ctl *ctl_req_ctl(const struct ctl_req *rq);
/* Node id the request authenticated as (0 for the admin token). */
int64_t ctl_req_node(const struct ctl_req *rq);

/* --- responses: each sets *rs and returns 0 (or -ENOMEM) --- */
/* Steals `v` (json_decref'd here). */
int ctl_resp_json(struct ctl_resp *rs, int status, json_t *v);
/* Copies `body`. */
int ctl_resp_text(struct ctl_resp *rs, int status, const char *ctype,
		  const char *body, size_t len);
/* {"error":{"code":CODE,"message":MSG}}; CODE derived from status. */
int ctl_resp_error(struct ctl_resp *rs, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* --- event hooks: called after a job event is committed ---------------
 * `ev` is the event object as served by GET /v1/jobs/{id}/events plus
 * "job_id".  Runs on the reconciler or an HTTP thread; must not block for
 * long (queue network work).  At most 16 hooks. */
typedef void (*ctl_event_fn)(struct ctl *c, const json_t *ev);
void ctl_event_hook_register(ctl_event_fn fn);

#define CTL_EVENT_HOOK(FN)                                                  \
	__attribute__((constructor)) static void ctl__hook_##FN(void)       \
	{                                                                   \
		ctl_event_hook_register(FN);                                \
	}

/* --- tick hooks: called once per reconciler pass, on the reconciler
 * thread, outside any transaction and before the event hooks of that pass
 * (so events a tick hook adds are delivered in the same pass).  `s` is
 * the reconciler's store connection.  At most 8 hooks. */
typedef void (*ctl_tick_fn)(struct ctl *c, struct store *s);
void ctl_tick_hook_register(ctl_tick_fn fn);

#define CTL_TICK_HOOK(FN)                                                   \
	__attribute__((constructor)) static void ctl__tick_##FN(void)       \
	{                                                                   \
		ctl_tick_hook_register(FN);                                 \
	}

/* Daemon-wide facts a route may need. */
double ctl_time_scale(const struct ctl *c);     /* cloud s per real s */
const char *ctl_state_dir(const struct ctl *c);
/* The database file, for components that open their own connection
 * (e.g. a background alert sender). */
const char *ctl_db_path(const struct ctl *c);

#endif
