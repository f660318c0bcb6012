/*
 * store_launch.c - a launch's sealed parameters (table node_launch,
 * store.h): kept from the first attempt, read by every later one, dropped
 * once the instance is recorded.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store.h"

int store_launch_put(struct store *s, int64_t node, const char *key,
		     const void *sealed, size_t n, int64_t now_ns,
		     struct sr_err *e)
{
	struct store_stmt *st = NULL;
	int rc;

	rc = store_prepare(s, "INSERT INTO node_launch(node_id, idem_key, sealed,"
			   " created_ns) VALUES(?1, ?2, ?3, ?4)"
			   " ON CONFLICT(node_id) DO NOTHING", &st, e);
	if (rc)
		return rc;
	store_bind_i64(st, 1, node);
	store_bind_text(st, 2, key);
	store_bind_blob(st, 3, sealed, n);
	store_bind_i64(st, 4, now_ns);
	rc = store_run(st, e);
	store_done(st);
	if (rc < 0)
		return sr_err_prefix(e, "node %" PRId64 ": keep its launch", node);
	return rc > 0 ? 1 : 0;
}

int store_launch_get(struct store *s, int64_t node, char *key, size_t keylen,
		     void **sealed, size_t *n, struct sr_err *e)
{
	struct store_stmt *st = NULL;
	const void *b;
	int rc;

	*sealed = NULL;
	*n = 0;
	rc = store_prepare(s, "SELECT idem_key, sealed FROM node_launch"
			   " WHERE node_id = ?1", &st, e);
	if (rc)
		return rc;
	store_bind_i64(st, 1, node);
	rc = store_step(st, e);
	if (rc == 1) {
		snprintf(key, keylen, "%s", store_col_text(st, "idem_key"));
		b = store_col_blob(st, "sealed", n);
		*sealed = malloc(*n > 0 ? *n : 1);
		if (*sealed == NULL)
			rc = sr_err_set(e, -ENOMEM, "out of memory");
		else
			memcpy(*sealed, b, *n);
	}
	store_done(st);
	return rc;
}

int store_launch_del(struct store *s, int64_t node, struct sr_err *e)
{
	struct store_stmt *st = NULL;
	int rc;

	rc = store_prepare(s, "DELETE FROM node_launch WHERE node_id = ?1", &st,
			   e);
	if (rc)
		return rc;
	store_bind_i64(st, 1, node);
	rc = store_run(st, e);
	store_done(st);
	return rc < 0 ? rc : 0;
}
