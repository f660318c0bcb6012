/*
 * store_files.c - a job's uploaded files (table uploads, jobs.files;
 * store_ctl.h): the statements of lib/ctl/routes_files.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include "store/store.h"
#include "store/store_ctl.h"

int store_upload_put(struct store *s, const char *id, const void *data,
		     size_t n, int64_t now_ns, int64_t drop_before_ns,
		     struct sr_err *e)
{
	struct store_stmt *st = NULL;
	int rc = store_begin(s, e);

	if (!rc)
		rc = store_prepare(s, "DELETE FROM uploads WHERE created_ns<?1 AND"
				   " id NOT IN (SELECT files FROM jobs WHERE files IS"
				   " NOT NULL AND state NOT IN ('SUCCEEDED','FAILED',"
				   "'CANCELLED'))", &st, e);
	if (!rc) {
		store_bind_i64(st, 1, drop_before_ns);
		rc = store_run(st, e);
		store_done(st);
	}
	if (rc >= 0)
		rc = store_prepare(s, "INSERT INTO uploads(id, bytes, created_ns,"
				   " data) VALUES(?1, ?2, ?3, ?4) ON CONFLICT(id) DO"
				   " UPDATE SET created_ns=excluded.created_ns", &st, e);
	if (rc >= 0) {
		store_bind_text(st, 1, id);
		store_bind_i64(st, 2, (int64_t)n);
		store_bind_i64(st, 3, now_ns);
		store_bind_blob(st, 4, data, n);
		rc = store_run(st, e);
		store_done(st);
	}
	return store_end(s, rc < 0 ? sr_err_prefix(e, "upload %s", id) : 0, e);
}

/* The first row's blob column "data" of st (bound) to fn. */
static int read_blob(struct store_stmt *st, store_blob_fn fn, void *ud,
		     struct sr_err *e)
{
	const void *data;
	size_t n = 0;
	int rc = store_step(st, e);

	if (rc == 1) {
		data = store_col_blob(st, "data", &n);
		rc = fn(ud, data, n, e);
	}
	store_done(st);
	return rc;
}

int store_upload_read(struct store *s, const char *id, store_blob_fn fn,
		      void *ud, struct sr_err *e)
{
	struct store_stmt *st = NULL;
	int rc = store_prepare(s, "SELECT data FROM uploads WHERE id=?1", &st, e);

	if (rc)
		return rc;
	store_bind_text(st, 1, id);
	return read_blob(st, fn, ud, e);
}

int store_node_files(struct store *s, int64_t node, store_blob_fn fn,
		     void *ud, struct sr_err *e)
{
	struct store_stmt *st = NULL;
	int rc = store_prepare(s, "SELECT u.data FROM nodes n JOIN jobs j ON"
			       " j.id=n.job_id JOIN uploads u ON u.id=j.files"
			       " WHERE n.id=?1", &st, e);

	if (rc)
		return rc;
	store_bind_i64(st, 1, node);
	return read_blob(st, fn, ud, e);
}
