/*
 * routes.h - the API as lib/ctl serves it: one request (struct ctl_req,
 * read through router.h's accessors), dispatch, the route tables of
 * lib/ctl's own routes, the job/node views, the node directive and the
 * HTTP server.
 */
#ifndef SR_CTL_ROUTES_H
#define SR_CTL_ROUTES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "common/err.h"
#include "ctl/router.h"

struct ctl;
struct store;
struct store_node;

/* Route registration of lib/ctl's own routes (static tables, since a
 * constructor in a static library is dropped unless referenced). */
void ctl__routes_jobs(void);
void ctl__routes_nodes(void);
/* The IMDSv2 the daemon serves the nodes of a provider with
 * CLOUD_CAP_HOSTED_META (routes_imds.c; registered when one is open). */
void ctl__routes_imds(void);
/* routes_cloud.c: POST /v1/cloud/preempt, /v1/cloud/outage (a cloud
 * driven by hand) */
void ctl__routes_cloud(void);
/* routes_files.c: POST /v1/uploads, GET /v1/nodes/{id}/files */
void ctl__routes_files(void);
struct jobspec;
/* A job's files, checked at POST /v1/jobs: a spec with workdir: or
 * file_mounts: needs an upload (`files`), which must hold workdir/ and
 * every mount's destination; an API workdir is never inside the state
 * dir.  0, or -EINVAL / -EPERM (a 400) / a store error with e. */
int ctl__files_check(struct ctl *c, struct store *db, const struct jobspec *js,
		     const char *files, const char *workdir, struct sr_err *e);


/* HTTP server (server.c).  _prepare checks the listen address against
 * the TLS settings and loads the certificate (before anything slow);
 * _start binds and serves. */
int ctl__http_prepare(struct ctl *c, struct sr_err *e);
int ctl__http_start(struct ctl *c, struct sr_err *e);
void ctl__http_stop(struct ctl *c);

/* The job/node JSON views (views.c), shapes in docs/api.md.
 * ctl__job_json: a new reference, or NULL with *e set (-SR_ENOTFOUND: no
 * such job; a store error is reported, never read as "no job").
 * ctl__node_json: a node row as the API serves it (a new reference), or
 * NULL when out of memory.
 * ctl__nodes_json: *out = the JSON array of store_node_list(s, job,
 * live_only, limit); 0 or an error. */
json_t *ctl__job_json(struct ctl *c, struct store *s, int64_t id,
		      bool with_nodes, struct sr_err *e);
/* The same with the job's ledger totals given (t; NULL: read them):
 * a list reads every job's at once (finops_report_build by job). */
struct finops_totals;
json_t *ctl__job_json_with(struct ctl *c, struct store *s, int64_t id,
			   bool with_nodes, const struct finops_totals *t,
			   struct sr_err *e);
struct store_node;
json_t *ctl__node_json(const struct store_node *n);
int ctl__nodes_json(struct store *s, int64_t job, bool live_only,
		    size_t limit, json_t **out, struct sr_err *e);

/* Directive for a node, from the database (routes_nodes.c). */
json_t *ctl__directive(struct store *db, int64_t node_id);

/* One request, built by server.c, read through router.h's accessors. */
#define CTL_MAX_PARAMS 4
struct ctl_req {
	struct ctl *ctl;
	const char *method;
	const char *path;
	const char *auth_header;  /* Authorization, or NULL */
	const char *ctype;        /* Content-Type, or NULL */
	char *body;               /* NUL-terminated */
	size_t body_len;
	void *conn;               /* struct MHD_Connection * */
	int nparams;
	const char *pname[CTL_MAX_PARAMS];
	char pval[CTL_MAX_PARAMS][128];
	const char *long_param;   /* a {name} whose segment was too long */
	int64_t node_id;          /* authenticated node, 0 = admin/public */
	int team_token;           /* 1 + index of the team token used, 0 none
				     (teamtok.h) */
};

/* Route and authenticate rq, run the handler, fill rs (router.c). */
void ctl__dispatch(struct ctl_req *rq, struct ctl_resp *rs);
/* Header value of the request (server.c). */
const char *ctl__req_header(const struct ctl_req *rq, const char *name);

#endif
