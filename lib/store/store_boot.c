/*
 * store_boot.c - node tokens and one-time bootstrap secrets (tables
 * nodes.token_hash and node_boot; store_ctl.h): the statements of
 * lib/ctl/router.c and lib/ctl/nodeboot.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "store/store.h"
#include "store/store_ctl.h"

int store_node_by_token(struct store *s, const unsigned char *d,
			int64_t *node, struct sr_err *e)
{
	struct store_stmt *st = NULL;
	int rc = store_prepare(s, "SELECT id FROM nodes WHERE token_hash=?1",
			       &st, e);

	if (rc)
		return rc;
	store_bind_blob(st, 1, d, STORE_DIGEST_LEN);
	rc = store_step(st, e);
	if (rc == 1)
		*node = store_col_i64(st, "id");
	store_done(st);
	return rc < 0 ? sr_err_prefix(e, "node token") : rc;
}

/* Run sql bound with ?1 = the digest a, ?2 = x and (unless NULL) ?3 =
 * the digest b: 0 or < 0. */
static int run(struct store *s, const char *sql, const unsigned char *a,
	       int64_t x, const unsigned char *b, struct sr_err *e)
{
	struct store_stmt *st = NULL;
	int rc = store_prepare(s, sql, &st, e);

	if (rc)
		return rc;
	store_bind_blob(st, 1, a, STORE_DIGEST_LEN);
	store_bind_i64(st, 2, x);
	if (b)
		store_bind_blob(st, 3, b, STORE_DIGEST_LEN);
	rc = store_run(st, e);
	store_done(st);
	return rc < 0 ? rc : 0;
}

int store_boot_issue(struct store *s, const unsigned char *hash, int64_t node,
		     int64_t now_ns, int64_t expires_ns, struct sr_err *e)
{
	struct store_stmt *st = NULL;
	int rc = store_begin(s, e);

	if (!rc)
		rc = store_prepare(s, "DELETE FROM node_boot WHERE expires_ns<?1",
				   &st, e);
	if (!rc) {
		store_bind_i64(st, 1, now_ns);
		rc = store_run(st, e);
		store_done(st);
	}
	if (rc >= 0)
		rc = store_prepare(s, "INSERT INTO node_boot(hash, node_id,"
				   " expires_ns) VALUES(?1, ?2, ?3)", &st, e);
	if (rc >= 0) {
		store_bind_blob(st, 1, hash, STORE_DIGEST_LEN);
		store_bind_i64(st, 2, node);
		store_bind_i64(st, 3, expires_ns);
		rc = store_run(st, e);
		store_done(st);
	}
	return store_end(s, rc < 0 ? sr_err_prefix(e, "bootstrap secret") : 0, e);
}

int store_boot_get(struct store *s, const unsigned char *hash,
		   struct store_boot *out, struct sr_err *e)
{
	struct store_stmt *st = NULL;
	const void *nonce;
	size_t n = 0;
	int rc = store_prepare(s, "SELECT b.node_id, b.expires_ns, b.nonce_hash,"
			       " n.state FROM node_boot b JOIN nodes n ON"
			       " n.id=b.node_id WHERE b.hash=?1", &st, e);

	if (rc)
		return rc;
	store_bind_blob(st, 1, hash, STORE_DIGEST_LEN);
	rc = store_step(st, e);
	if (rc == 1) {
		memset(out, 0, sizeof *out);
		out->node = store_col_i64(st, "node_id");
		out->expires_ns = store_col_i64(st, "expires_ns");
		nonce = store_col_null(st, "nonce_hash") ? NULL :
			store_col_blob(st, "nonce_hash", &n);
		out->used = nonce != NULL;
		out->nonce_len = nonce ? n : 0;
		if (nonce && n == STORE_DIGEST_LEN)
			memcpy(out->nonce, nonce, n);
		snprintf(out->state, sizeof out->state, "%s",
			 store_col_text(st, "state"));
	}
	store_done(st);
	return rc < 0 ? sr_err_prefix(e, "bootstrap secret") : rc;
}

int store_boot_use(struct store *s, int64_t node, const unsigned char *hash,
		   const unsigned char *nonce, const unsigned char *token,
		   int64_t now_ns, struct sr_err *e)
{
	int rc = run(s, "UPDATE node_boot SET used_ns=?2, nonce_hash=?3"
		     " WHERE hash=?1", hash, now_ns, nonce, e);

	if (!rc)
		rc = run(s, "DELETE FROM node_boot WHERE hash<>?1 AND node_id=?2",
			 hash, node, NULL, e);
	if (!rc)
		rc = run(s, "UPDATE nodes SET token_hash=?1 WHERE id=?2", token,
			 node, NULL, e);
	return rc < 0 ? sr_err_prefix(e, "node %" PRId64 ": bootstrap", node)
		      : 0;
}
