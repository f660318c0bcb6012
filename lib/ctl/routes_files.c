/*
 * routes_files.c - a job's files (issue 24): the workdir and file_mounts
 * `spotrun launch` read as its user and upload as one archive
 * (lib/bundle), kept by the daemon and handed to the job's nodes.
 * Neither spotrund nor an agent reads a path of its own filesystem on a
 * job's behalf.
 *
 *   POST /v1/uploads (admin; application/x-tar, up to BUNDLE_MAX_BYTES)
 *        -> 201 {"upload": "sha256:<hex>", "bytes": N, "entries": K}
 *        (200 when those bytes were uploaded before: the same id)
 *   POST /v1/jobs {"files": "sha256:<hex>", ...}  (routes_jobs.c; checked
 *        here: ctl__files_check)
 *   GET  /v1/nodes/{id}/files (that node's token) -> the archive of its
 *        job, application/x-tar; 404 when the job brings none
 *
 * An upload no unfinished job uses is deleted an hour after it came (on
 * the next upload).
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "bundle/bundle.h"
#include "common/log.h"
#include "common/random.h"
#include "common/timeutil.h"
#include "ctl/api_body.h"
#include "ctl/ctl_int.h"
#include "ctl/routes.h"
#include "market/jobspec.h"
#include "store/store.h"
#include "store/store_ctl.h"

#define UPLOAD_KEEP_NS (3600 * SR_NS_PER_SEC)

static int count_fn(void *ud, const struct bundle_entry *en, struct sr_err *e)
{
	(void)en;
	(void)e;
	(*(size_t *)ud)++;
	return 0;
}

static int upload_post(struct ctl_req *rq, struct ctl_resp *rs)
{
	struct ctl *c = ctl_req_ctl(rq);
	struct store *db = ctl_req_store(rq);
	unsigned char d[32];
	unsigned int dl = sizeof d;
	char id[7 + 65];
	struct sr_err e = { 0 };
	size_t len, entries = 0;
	const char *body = ctl_req_body(rq, &len);
	int64_t now = ctl__now(c);
	int rc;

	if (!len)
		return ctl_resp_error(rs, 400, "no body: a job's files, as a tar "
				      "archive (Content-Type: application/x-tar)");
	rc = bundle_scan(body, len, count_fn, &entries, &e);
	if (rc)
		return ctl_resp_error(rs, rc == -EFBIG ? 413 : 400, "%s",
				      sr_err_str(&e, rc));
	EVP_Digest(body, len, d, &dl, EVP_sha256(), NULL);
	memcpy(id, "sha256:", 7);
	sr_hex(d, sizeof d, id + 7);
	if (!db)
		return ctl_resp_error(rs, 503, "no store connection");
	rc = store_upload_put(db, id, body, len, now, now - UPLOAD_KEEP_NS, &e);
	if (rc)
		return ctl_resp_error(rs, 500, "upload: %s", sr_err_str(&e, rc));
	sr_info("api", "files uploaded", "upload=%s bytes=%zu entries=%zu", id,
		len, entries);
	return ctl_resp_json(rs, 201, json_pack("{s:s,s:I,s:I}", "upload", id,
						"bytes", (json_int_t)len, "entries",
						(json_int_t)entries));
}

/* The archive as the response (1; fn of store_node_files). */
static int files_reply(void *ud, const void *data, size_t n, struct sr_err *e)
{
	int rc = ctl_resp_text(ud, 200, "application/x-tar", data, n);

	return rc < 0 ? sr_err_set(e, rc, "out of memory") : 1;
}

static int node_files(struct ctl_req *rq, struct ctl_resp *rs)
{
	struct store *db = ctl_req_store(rq);
	struct sr_err e = { 0 };
	int64_t id;
	int rc;

	if (ctl_req_param_id(rq, "id", &id, rs))
		return 0;
	if (!db)
		return ctl_resp_error(rs, 503, "no store connection");
	rc = store_node_files(db, id, files_reply, rs, &e);
	if (rc == 0)
		return ctl_resp_error(rs, 404, "node %" PRId64 ": its job brings no "
				      "files", id);
	if (rc < 0)
		return ctl_resp_error(rs, 500, "%s", sr_err_str(&e, rc));
	return 0;
}

/* path is dir or below it (both absolute). */
static int under(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	return !strncmp(path, dir, n) && (path[n] == '/' || path[n] == '\0');
}

struct files_want {
	const struct jobspec *js;
	const char *files;
};

/* The upload holds what the job names (1; fn of store_upload_read). */
static int files_hold(void *ud, const void *data, size_t n, struct sr_err *e)
{
	const struct files_want *w = ud;
	const struct jobspec *js = w->js;
	int rc = js->workdir ? bundle_has(data, n, "workdir", e) : 1;

	if (rc == 0)
		rc = sr_err_set(e, -EINVAL, "workdir: the upload %s has no "
				"workdir/ (what spotrun launch puts there)",
				w->files);
	for (size_t i = 0; rc == 1 && i < js->n_mounts; i++) {
		const char *name = bundle_mount_name(js->mounts[i].dst);

		rc = bundle_name_ok(name) ? bundle_has(data, n, name, e) : 0;
		if (rc == 0)
			rc = sr_err_set(e, -EINVAL, "file_mounts.%s: the "
					"upload %s has no %s", js->mounts[i].dst,
					w->files, name);
	}
	return rc;
}

int ctl__files_check(struct ctl *c, struct store *db, const struct jobspec *js,
		     const char *files, const char *workdir, struct sr_err *e)
{
	struct files_want w = { js, files };
	char state[PATH_MAX], wd[PATH_MAX];
	int rc;

	/* the API workdir (where a shared-disk node runs the job in place)
	 * is never spotrund's own state dir: the workload would see it */
	if (workdir && realpath(c->state_dir, state) &&
	    (under(workdir, state) || under(workdir, c->state_dir) ||
	     (realpath(workdir, wd) && under(wd, state))))
		return sr_err_set(e, -EPERM, "workdir: %s is inside spotrund's "
				  "state dir; a job never runs there", workdir);
	if (!files) {
		if (js->workdir || js->n_mounts)
			return sr_err_set(e, -EINVAL, "%s names files the request "
					  "does not carry: spotrun launch uploads "
					  "them (POST /v1/uploads, then \"files\" "
					  "in POST /v1/jobs); spotrund never reads "
					  "a path on a job's behalf (docs/api.md)",
					  js->workdir ? "workdir:" : "file_mounts:");
		return 0;
	}
	rc = store_upload_read(db, files, files_hold, &w, e);
	if (rc == 0)
		rc = sr_err_set(e, -EINVAL, "files: no upload %s (POST it to "
				"/v1/uploads first; an unused upload is kept an "
				"hour)", files);
	return rc == 1 ? 0 : rc;
}

static const struct ctl_route routes[] = {
	{ "POST", "/v1/uploads", CTL_AUTH_ADMIN, upload_post, "upload_post" },
	{ "GET", "/v1/nodes/{id}/files", CTL_AUTH_NODE, node_files, "node_files" },
};

void ctl__routes_files(void)
{
	for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++)
		ctl_route_register(&routes[i]);
}
