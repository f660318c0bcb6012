/*
 * ckpt_remote.c - the public tier-3 calls of libspotckpt
 * (include/spotrun/ckpt.h: spotckpt_set_remote, spotckpt_remote_wait,
 * spotckpt_remote_stats) and the choice of restore source.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tier3.h"
#include "ckpt/engine.h"
#include "common/log.h"

SPOTCKPT_API int spotckpt_set_remote_ex(struct spotckpt *e, const char *uri,
				       int32_t keep, uint32_t flags)
{
	struct objstore_tier3 *t = NULL;
	struct sr_err err = { 0 };
	int64_t *steps = NULL;
	size_t n = 0;
	int rc;

	ckpt__errmsg_clear();
	if (!e || !uri)
		return ckpt__fail(-EINVAL, "set_remote: NULL argument");
	if (keep < SPOTCKPT_REMOTE_KEEP_ALL || (flags & ~SPOTCKPT_REMOTE_NO_BACKFILL))
		return ckpt__fail(-EINVAL, "set_remote: keep %" PRId32 " or flags "
				  "0x%" PRIx32 " not valid", keep, flags);
	pthread_mutex_lock(&e->api);
	if (e->t3) {
		rc = ckpt__fail(-SR_ECONFLICT, "set_remote: tier 3 is already %s",
				objstore_tier3_uri(e->t3));
		goto out;
	}
	if (keep == 0)
		keep = e->o.keep;
	else if (keep == SPOTCKPT_REMOTE_KEEP_ALL)
		keep = INT32_MAX; /* the caller prunes committed steps */
	rc = objstore_tier3_start(uri, e->dir, keep, &t, &err);
	if (rc) {
		ckpt__fail_err(&err, rc);
		goto out;
	}
	pthread_mutex_lock(&e->mu);
	e->t3 = t;
	pthread_mutex_unlock(&e->mu);
	/* a committed checkpoint from before (a restart) goes up too */
	if (!(flags & SPOTCKPT_REMOTE_NO_BACKFILL) &&
	    ckpt__scan(e->dir, &steps, &n, 0, NULL) == 0 && n)
		objstore_tier3_offer(t, steps[0]);
	free(steps);
out:
	pthread_mutex_unlock(&e->api);
	return rc;
}

SPOTCKPT_API int spotckpt_set_remote(struct spotckpt *e, const char *uri)
{
	return spotckpt_set_remote_ex(e, uri, 0, 0);
}

SPOTCKPT_API int spotckpt_remote_wait(struct spotckpt *e, int64_t step,
				      int64_t deadline_mono_ns, int32_t *met)
{
	struct sr_err err = { 0 };
	int m = 0, rc;

	ckpt__errmsg_clear();
	if (met)
		*met = 0;
	if (!e)
		return ckpt__fail(-EINVAL, "remote_wait: NULL engine");
	if (!e->t3)
		return ckpt__fail(-SR_ECONFLICT, "remote_wait: no tier 3 "
				  "(spotckpt_set_remote)");
	if (step < 0)
		step = spotckpt_last_saved_step(e);
	if (step < 0)
		return ckpt__fail(-SR_ENOTFOUND, "remote_wait: nothing committed "
				  "to upload");
	rc = objstore_tier3_flush(e->t3, step, deadline_mono_ns, &m, &err);
	if (met)
		*met = m;
	return rc ? ckpt__fail_err(&err, rc) : 0;
}

SPOTCKPT_API int spotckpt_remote_stats(struct spotckpt *e,
				       struct spotckpt_remote_stats *out,
				       char *msg, size_t n)
{
	struct objstore_tier3_stats st;

	if (!e || !out)
		return -EINVAL;
	memset(out, 0, sizeof *out);
	out->uploaded_step = out->uploading_step = out->pending_step = -1;
	if (msg && n)
		msg[0] = 0;
	if (!e->t3)
		return 0;
	objstore_tier3_stats(e->t3, &st);
	out->enabled = 1;
	out->uploaded_step = st.uploaded_step;
	out->uploading_step = st.uploading_step;
	out->pending_step = st.pending_step;
	out->uploads_committed = st.committed;
	out->uploads_failed = st.failed;
	out->uploads_superseded = st.superseded;
	out->bytes_uploaded = st.bytes;
	out->last_upload_ns = st.last_upload_ns;
	out->last_error = st.last_error;
	if (msg && n)
		snprintf(msg, n, "%s", st.last_msg);
	return 0;
}

const char *objstore_tier3_source(struct objstore_tier3 *t,
				  const char *local_dir, int64_t max_step)
{
	struct objstore_list l = { 0 };
	struct sr_err e = { 0 };
	int64_t *ls = NULL, *rs = NULL, lbest = -1, rbest = -1;
	size_t ln = 0, rn = 0;
	const char *src = local_dir;
	struct objstore *s = NULL;

	if (!t)
		return local_dir;
	if (ckpt__scan(local_dir, &ls, &ln, 0, NULL) == 0) {
		for (size_t i = 0; i < ln && lbest < 0; i++)
			if (max_step < 0 || ls[i] <= max_step)
				lbest = ls[i];
	}
	if (objstore_open(objstore_tier3_uri(t), NULL, &s, &e) == 0 &&
	    objstore_list(s, "step-", &l, &e) == 0 &&
	    objstore_steps(&l, &rs, &rn) == 0) {
		for (size_t i = 0; i < rn && rbest < 0; i++)
			if (max_step < 0 || rs[i] <= max_step)
				rbest = rs[i];
	} else if (e.code) {
		sr_warn("objstore", "cannot list tier 3; restoring from tier 2",
			"uri=%s err=\"%s\"", objstore_tier3_uri(t), e.msg);
	}
	if (rbest > lbest)
		src = objstore_tier3_uri(t);
	sr_info("ckpt", "restore source", "tier2_step=%" PRId64 " tier3_step=%"
		PRId64 " from=%s", lbest, rbest, src);
	free(ls);
	free(rs);
	objstore_list_free(&l);
	objstore_close(s);
	return src;
}
