/*
 * ckpt_backend.c - lib/objstore as the checkpoint engine's storage backend
 * (lib/ckpt/backend.h): the uploader of tier3.c and the reader of
 * remote.c behind the interface lib/ckpt calls.  lib/ckpt never includes
 * lib/objstore; this file is the only bridge.
 */
#include <string.h>
#include <stdio.h>

#include "tier3.h"
#include "ckpt/backend.h"

static int up_start(const char *uri, const char *local_dir, int keep,
		    const struct ckpt_up_watch *w, void **up, struct sr_err *e)
{
	struct objstore_tier3 *t = NULL;
	int rc = objstore_tier3_start(uri, local_dir, keep,
				      w ? w->changed : NULL, w ? w->ud : NULL,
				      &t, e);

	*up = t;
	return rc;
}

static void up_offer(void *up, int64_t step, int64_t time_ns)
{
	objstore_tier3_offer(up, step, time_ns);
}

static int up_flush(void *up, int64_t step, int64_t deadline, int *met,
		    struct sr_err *e)
{
	return objstore_tier3_flush(up, step, deadline, met, e);
}

static int up_put_image(void *up, int64_t step, const struct ckpt_layout *l,
			const uint8_t *image, const char *mbuf, size_t mlen,
			int64_t time_ns, int64_t deadline, atomic_int *cancel,
			struct sr_err *e)
{
	return objstore_tier3_put_image(up, step, l, image, mbuf, mlen, time_ns,
					deadline, cancel, e);
}

static int up_drain(void *up, int64_t deadline, struct sr_err *e)
{
	return objstore_tier3_drain(up, deadline, e);
}

static void up_stop(void *up)
{
	objstore_tier3_stop(up);
}

static void up_stats(void *up, struct spotckpt_remote_stats *out, char *msg,
		     size_t n)
{
	struct objstore_tier3_stats st;

	objstore_tier3_stats(up, &st);
	out->uploaded_step = st.uploaded_step;
	out->uploading_step = st.uploading_step;
	out->pending_step = st.pending_step;
	out->uploads_committed = st.committed;
	out->uploads_failed = st.failed;
	out->uploads_superseded = st.superseded;
	out->bytes_uploaded = st.bytes;
	out->last_upload_ns = st.last_upload_ns;
	out->last_error = st.last_error;
	out->local_step = st.local_step;
	out->local_time_ns = st.local_time_ns;
	out->store_time_ns = st.store_time_ns;
	out->next_retry_ns = st.next_retry_ns;
	out->retries = st.retries;
	out->behind = st.behind;
	if (msg && n)
		snprintf(msg, n, "%s", st.last_msg);
}

static const char *up_uri(const void *up)
{
	return objstore_tier3_uri(up);
}

static int up_newest(void *up, int64_t max_step, int64_t *step,
		     struct sr_err *e)
{
	return objstore_tier3_newest(up, max_step, step, e);
}

static int rd_open(const char *uri, int64_t step, int64_t max_step,
		   int verify, void **rd, struct ckpt_manifest *m, char **path,
		   struct sr_err *e)
{
	struct objstore_rd *r = NULL;
	int rc = objstore_rd_open(uri, step, max_step, verify, &r, m, path, e);

	*rd = r;
	return rc;
}

static int rd_read(void *rd, const struct ckpt_manifest *m,
		   const struct spotckpt_dest **map, int verify_all,
		   struct ckpt_undo *undo, struct sr_err *e)
{
	return objstore_rd_read(rd, m, map, verify_all, undo, e);
}

static void rd_close(void *rd)
{
	objstore_rd_close(rd);
}

static int rd_newest(const char *uri, int64_t *step, struct sr_err *e)
{
	return objstore_rd_newest(uri, -1, step, e);
}

const struct ckpt_backend ckpt_remote_backend = {
	.name = "objstore",
	.up_start = up_start, .up_offer = up_offer, .up_flush = up_flush,
	.up_put_image = up_put_image, .up_drain = up_drain,
	.up_stop = up_stop, .up_stats = up_stats,
	.up_uri = up_uri, .up_newest = up_newest,
	.rd_open = rd_open, .rd_read = rd_read, .rd_close = rd_close,
	.rd_list = objstore_rd_list, .rd_newest = rd_newest,
};
