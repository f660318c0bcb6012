/*
 * remote.c - the engine's tier 3 (include/spotrun/ckpt.h:
 * spotckpt_set_remote*, spotckpt_remote_wait, spotckpt_remote_stats, and
 * what spotckpt_close waits for), over the storage-backend interface
 * (backend.h; lib/objstore implements it).  Also the choice of restore
 * source and the URI classification lib/ckpt needs.
 *
 * THE GUARANTEE.  After spotckpt_remote_wait(N) returns 0, and after
 * spotckpt_close() returns 0, step N - for close, the newest step tier 2
 * committed - is in the store, whole: its manifest was put after every
 * shard was confirmed.  The uploader only takes steps tier 2 committed
 * (a final save with SPOTCKPT_FINAL_STORE_ONLY puts its own step into
 * the store from memory, final_store.c; remote_wait of that step then
 * returns 0 at once): remote_wait first waits for tier 2's writes of
 * N, and a step tier 2
 * did not commit (skipped by back-pressure, or failed) is an error, not
 * an upload of files that are not there.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "engine.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/url.h"

#define B (&ckpt_remote_backend)

/* URIs are split by lib/common/url.h (libcurl's URL API): a string
 * without "scheme://" is a local path; file:///dir is one too. */
int ckpt__uri_is_remote(const char *s)
{
	char scheme[8];

	return s && sr_url_scheme(s, scheme, sizeof scheme) == 1 &&
	       (!strcmp(scheme, "s3") || !strcmp(scheme, "gs") ||
		!strcmp(scheme, "az"));
}

const char *ckpt__uri_local_path(const char *s)
{
	struct sr_url u;
	char scheme[8];
	const char *p = s;

	if (!s || sr_url_scheme(s, scheme, sizeof scheme) != 1 ||
	    strcmp(scheme, "file") || sr_url_parse(s, &u, NULL))
		return s;
	/* the path as it stands at the end of s ("file:///x" -> "/x") */
	if (!u.query && u.path[0] == '/' && strlen(u.path) <= strlen(s) &&
	    !strcmp(s + strlen(s) - strlen(u.path), u.path))
		p = s + strlen(s) - strlen(u.path);
	sr_url_free(&u);
	return p;
}

SPOTCKPT_API int spotckpt_set_remote_ex(struct spotckpt *e, const char *uri,
				       int32_t keep, uint32_t flags)
{
	/* the progress report's ckpt_step is the store's from now on */
	const struct ckpt_up_watch watch = { ckpt__progress_remote, e };
	struct sr_err err = { 0 };
	int64_t *steps = NULL;
	size_t n = 0;
	void *up = NULL;
	int rc;

	ckpt__errmsg_clear();
	if (!e || !uri)
		return ckpt__fail(-EINVAL, "set_remote: NULL argument");
	if (keep < SPOTCKPT_REMOTE_KEEP_ALL || (flags & ~SPOTCKPT_REMOTE_NO_BACKFILL))
		return ckpt__fail(-EINVAL, "set_remote: keep %" PRId32 " or flags "
				  "0x%" PRIx32 " not valid", keep, flags);
	pthread_mutex_lock(&e->api);
	if (e->up) {
		rc = ckpt__fail(-SR_ECONFLICT, "set_remote: tier 3 is already %s",
				B->up_uri(e->up));
		goto out;
	}
	if (keep == 0)
		keep = e->o.keep;
	else if (keep == SPOTCKPT_REMOTE_KEEP_ALL)
		keep = INT32_MAX; /* the caller prunes committed steps */
	rc = B->up_start(uri, e->dir, keep, &watch, &up, &err);
	if (rc) {
		ckpt__progress_remote_end(e, 1);
		ckpt__fail_err(&err, rc);
		goto out;
	}
	pthread_mutex_lock(&e->mu);
	e->up = up;
	pthread_mutex_unlock(&e->mu);
	/* a committed checkpoint from before (a restart) goes up too */
	if (!(flags & SPOTCKPT_REMOTE_NO_BACKFILL) &&
	    ckpt__scan(e->dir, &steps, &n, 0, NULL) == 0 && n)
		B->up_offer(up, steps[0], sr_time_real_ns());
	free(steps);
out:
	pthread_mutex_unlock(&e->api);
	return rc;
}

SPOTCKPT_API int spotckpt_set_remote(struct spotckpt *e, const char *uri)
{
	return spotckpt_set_remote_ex(e, uri, 0, 0);
}

void ckpt__remote_offer(struct spotckpt *e, int64_t step)
{
	if (e->up)
		B->up_offer(e->up, step, sr_time_real_ns());
}

SPOTCKPT_API int spotckpt_remote_wait(struct spotckpt *e, int64_t step,
				      int64_t deadline_mono_ns, int32_t *met)
{
	struct sr_err err = { 0 };
	int m = 0, rc;
	int64_t saved;

	ckpt__errmsg_clear();
	if (met)
		*met = 0;
	if (!e)
		return ckpt__fail(-EINVAL, "remote_wait: NULL engine");
	if (!e->up)
		return ckpt__fail(-SR_ECONFLICT, "remote_wait: no tier 3 "
				  "(spotckpt_set_remote)");
	pthread_mutex_lock(&e->mu);
	saved = e->stored_step;
	pthread_mutex_unlock(&e->mu);
	if (step >= 0 && step == saved) {
		/* a final save put it into the store itself (final_store.c) */
		if (met)
			*met = 1;
		return 0;
	}
	saved = spotckpt_last_saved_step(e);
	if (step < 0 || step > saved) {
		/* tier 2 first: the uploader only takes committed steps */
		pthread_mutex_lock(&e->api);
		ckpt__engine_wait_all(e);
		pthread_mutex_unlock(&e->api);
		saved = spotckpt_last_saved_step(e);
	}
	if (step < 0)
		step = saved;
	if (step < 0)
		return ckpt__fail(-SR_ENOTFOUND, "remote_wait: nothing committed "
				  "to upload");
	if (step > saved)
		return ckpt__fail(-SR_ENOTFOUND, "remote_wait: step %" PRId64
				  " was not committed to %s (skipped by "
				  "back-pressure, or its write failed); the "
				  "newest there is %" PRId64, step, e->dir, saved);
	/* no deadline given: the engine's commit timeout bounds the wait
	 * (failed attempts are retried meanwhile) */
	rc = B->up_flush(e->up, step, deadline_mono_ns ? deadline_mono_ns :
			 sr_time_mono_ns() + e->o.commit_timeout_ms * 1000000,
			 &m, &err);
	if (met)
		*met = rc == 0 && (m || !deadline_mono_ns);
	return rc ? ckpt__fail_err(&err, rc) : 0;
}

SPOTCKPT_API int spotckpt_remote_stats(struct spotckpt *e,
				       struct spotckpt_remote_stats *out,
				       char *msg, size_t n)
{
	int64_t saved = spotckpt_last_saved_step(e);

	if (!e || !out)
		return -EINVAL;
	memset(out, 0, sizeof *out);
	out->uploaded_step = out->uploading_step = out->pending_step = -1;
	out->local_step = -1;
	if (msg && n)
		msg[0] = 0;
	if (e->up) {
		B->up_stats(e->up, out, msg, n);
		out->enabled = 1;
	}
	if (saved > out->local_step)
		out->local_step = saved;
	return 0;
}

int ckpt__remote_drain(struct spotckpt *e, int64_t timeout_ms)
{
	struct sr_err err = { 0 };
	int rc;

	if (!e->up)
		return 0;
	rc = B->up_drain(e->up, timeout_ms > 0 ? sr_time_mono_ns() +
			 timeout_ms * 1000000 : sr_time_mono_ns() + 1, &err);
	return rc ? ckpt__fail_err(&err, rc) : 0;
}

void ckpt__remote_stop(struct spotckpt *e)
{
	if (e->up) {
		B->up_stop(e->up);
		ckpt__progress_remote_end(e, 0);
	}
	e->up = NULL;
}

int ckpt__restore_source(struct spotckpt *e, int64_t max_step,
			 const char **src)
{
	struct sr_err err = { 0 };
	int64_t *ls = NULL, lbest = -1, rbest = -1;
	size_t ln = 0;
	int rc;

	*src = e->dir;
	if (!e->up)
		return 0;
	if (ckpt__scan(e->dir, &ls, &ln, 0, NULL) == 0) {
		for (size_t i = 0; i < ln && lbest < 0; i++)
			if (max_step < 0 || ls[i] <= max_step)
				lbest = ls[i];
	}
	free(ls);
	/* a store that does not answer is an error: restoring tier 2's
	 * older step as if it were the newest would lose work silently */
	rc = B->up_newest(e->up, max_step, &rbest, &err);
	if (rc)
		return ckpt__fail_err(&err, rc);
	if (rbest > lbest)
		*src = B->up_uri(e->up);
	sr_info("ckpt", "restore source", "tier2_step=%" PRId64 " tier3_step=%"
		PRId64 " from=%s", lbest, rbest, *src);
	return 0;
}
