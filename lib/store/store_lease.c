/*
 * store_lease.c - the leader's lease and the members (tables lease and
 * members, schema component "ha"; store_ctl.h): the statements of
 * lib/ctl/lease.c, which holds the lease's states and fencing.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include "store/store.h"
#include "store/store_ctl.h"

int store_lease_get(struct store *s, struct store_lease *out,
		    struct sr_err *e)
{
	struct store_stmt *st = NULL;
	int rc = store_prepare(s, "SELECT holder, url, epoch, expires_ns FROM"
			       " lease WHERE id=1", &st, e);

	if (rc)
		return rc;
	rc = store_step(st, e);
	if (rc == 1) {
		snprintf(out->holder, sizeof out->holder, "%s",
			 store_col_text(st, "holder"));
		snprintf(out->url, sizeof out->url, "%s",
			 store_col_text(st, "url"));
		out->epoch = store_col_i64(st, "epoch");
		out->expires_ns = store_col_i64(st, "expires_ns");
		rc = 0;
	} else if (rc == 0) {
		rc = sr_err_set(e, -EIO, "the lease row is missing");
	}
	store_done(st);
	return rc;
}

int store_lease_held(struct store *s, const char *holder, int64_t epoch,
		     int64_t now_ns, struct sr_err *e)
{
	struct store_stmt *st = NULL;
	int rc = store_prepare(s, "SELECT epoch FROM lease WHERE id=1 AND"
			       " holder=?1 AND epoch=?2 AND expires_ns>?3", &st, e);

	if (rc)
		return rc;
	store_bind_text(st, 1, holder);
	store_bind_i64(st, 2, epoch);
	store_bind_i64(st, 3, now_ns);
	rc = store_step(st, e);
	store_done(st);
	return rc;
}

int store_lease_take(struct store *s, const char *holder, const char *url,
		     int64_t epoch, int64_t expires_ns, struct sr_err *e)
{
	struct store_stmt *st = NULL;
	int rc = store_prepare(s, "UPDATE lease SET holder=?1, url=?2, epoch=?3,"
			       " expires_ns=?4 WHERE id=1 AND epoch=?5", &st, e);

	if (rc)
		return rc;
	store_bind_text(st, 1, holder);
	store_bind_text(st, 2, url);
	store_bind_i64(st, 3, epoch + 1);
	store_bind_i64(st, 4, expires_ns);
	store_bind_i64(st, 5, epoch);
	rc = store_run(st, e);
	store_done(st);
	return rc < 0 ? rc : rc > 0;
}

int store_lease_renew(struct store *s, const char *holder, int64_t epoch,
		      int64_t expires_ns, struct sr_err *e)
{
	struct store_stmt *st = NULL;
	int rc = store_prepare(s, "UPDATE lease SET expires_ns=?3 WHERE id=1 AND"
			       " holder=?1 AND epoch=?2", &st, e);

	if (rc)
		return rc;
	store_bind_text(st, 1, holder);
	store_bind_i64(st, 2, epoch);
	store_bind_i64(st, 3, expires_ns);
	rc = store_run(st, e);
	store_done(st);
	return rc < 0 ? rc : rc > 0;
}

int store_member_seen(struct store *s, const char *holder, const char *url,
		      int64_t now_ns, int64_t forget_before_ns,
		      struct sr_err *e)
{
	struct store_stmt *st = NULL;
	int rc = store_begin(s, e);

	if (!rc)
		rc = store_prepare(s, "INSERT INTO members(holder, url, seen_ns)"
				   " VALUES(?1, ?2, ?3) ON CONFLICT(holder) DO"
				   " UPDATE SET url=excluded.url,"
				   " seen_ns=excluded.seen_ns", &st, e);
	if (!rc) {
		store_bind_text(st, 1, holder);
		store_bind_text(st, 2, url);
		store_bind_i64(st, 3, now_ns);
		rc = store_run(st, e);
		store_done(st);
	}
	if (rc >= 0)
		rc = store_prepare(s, "DELETE FROM members WHERE seen_ns<?2 AND"
				   " holder<>?1", &st, e);
	if (rc >= 0) {
		store_bind_text(st, 1, holder);
		store_bind_i64(st, 2, forget_before_ns);
		rc = store_run(st, e);
		store_done(st);
	}
	return store_end(s, rc < 0 ? rc : 0, e);
}

int store_members(struct store *s, int64_t since_ns,
		  void (*fn)(void *ud, const char *url), void *ud,
		  struct sr_err *e)
{
	struct store_stmt *st = NULL;
	int rc = store_prepare(s, "SELECT url FROM members WHERE seen_ns>?1"
			       " ORDER BY holder", &st, e);

	if (rc)
		return rc;
	store_bind_i64(st, 1, since_ns);
	while ((rc = store_step(st, e)) == 1)
		fn(ud, store_col_text(st, "url"));
	store_done(st);
	return rc;
}
