/*
 * tier3.h - tier 3 of the checkpoint engine: each checkpoint committed to
 * the local directory (tier 2) is uploaded, in the background, to an
 * object store, and read back from there on a node that never saw it.
 * The protocol and the uploader's states are described at the top of
 * tier3.c; lib/ckpt reaches all of this through its backend interface
 * (lib/ckpt/backend.h, ckpt_backend.c).
 */
#ifndef SR_OBJSTORE_TIER3_H
#define SR_OBJSTORE_TIER3_H

#include <stdint.h>
#include "objstore.h"
#include "ckpt/internal.h"

struct objstore_tier3;

/* The recovery point, in the tier-2 directory (docs/api.md): a JSON
 * object {uri, local_step, local_time_ns, store_step, store_time_ns,
 * behind, retries, last_error, updated_ns}, replaced whole after every
 * change. */
#define OBJSTORE_TIER3_FILE "tier3.json"

struct objstore_tier3_stats {
	int64_t uploaded_step;    /* newest whole step in the store, -1 */
	int64_t store_time_ns;    /* its save time (manifest), wall ns, 0 */
	int64_t local_step;       /* newest step tier 2 committed, -1 */
	int64_t local_time_ns;    /* when it was committed, wall ns, 0 */
	int64_t uploading_step;   /* being uploaded now, -1 */
	int64_t pending_step;     /* waiting for the uploader, -1 */
	uint64_t committed;       /* uploads committed */
	uint64_t failed;          /* upload attempts that failed */
	uint64_t superseded;      /* steps replaced by a newer one */
	uint64_t bytes;           /* bytes confirmed by the store */
	int64_t last_upload_ns;   /* last committed upload: first shard byte
				   * to manifest committed (no retention) */
	uint32_t retries;         /* failed attempts since the last commit */
	uint32_t behind;          /* tier-2 commits newer than uploaded_step
				   * (checkpoint intervals the store lags) */
	int64_t next_retry_ns;    /* CLOCK_MONOTONIC of the next attempt
				   * after a failure, 0 = none waiting */
	int32_t last_error;       /* 0, or the last failure's code */
	char last_msg[SR_ERR_MSG_MAX];
};

/* Told the recovery point after each change (the store's newest whole
 * step, -1 for none; the last failure, "" after a commit) and at the
 * stop; called by the uploader's thread with no lock held. */
typedef void (*objstore_tier3_watch_fn)(void *ud, int64_t store_step,
					const char *error);

/* Start an uploader from local_dir (tier 2) to uri, keeping `keep`
 * committed checkpoints there; watch(watch_ud, ...) may be NULL.  Opens the store and lists it once: a
 * store that refuses (-EACCES credentials, -SR_ENOTFOUND no bucket,
 * -EINVAL a bad request) fails the start with *e saying so; one that
 * does not answer logs a warning and the uploads are retried.  *out
 * owned by the caller (objstore_tier3_stop()).  Errors also as
 * objstore_open(). */
int objstore_tier3_start(const char *uri, const char *local_dir, int keep,
			 objstore_tier3_watch_fn watch, void *watch_ud,
			 struct objstore_tier3 **out, struct sr_err *e);
/* Cancel what is in flight, stop the thread, free.  NULL-safe.  Call
 * objstore_tier3_drain() first to wait for the newest step. */
void objstore_tier3_stop(struct objstore_tier3 *t);
/* Tier 2 committed `step` (save time time_ns): upload it when the
 * uploader is free.  Never blocks.  An older step not yet started is
 * replaced. */
void objstore_tier3_offer(struct objstore_tier3 *t, int64_t step,
			  int64_t time_ns);
/* Make committed `step` reach the store, first: an upload of an older
 * step in progress is cancelled.  Waits until it (or a newer one) is
 * committed there: 0 (*met = 1 if by deadline_mono_ns); with a deadline,
 * failures are retried until it passes (-SR_ETIMEOUT); without one (0)
 * the first failure is returned.  -SR_ENOTFOUND if tier 2 never
 * committed `step` (nothing is started). */
int objstore_tier3_flush(struct objstore_tier3 *t, int64_t step,
			 int64_t deadline_mono_ns, int *met, struct sr_err *e);
/* Upload checkpoint `step` from memory instead of from tier 2 (a final
 * save that skips the node's disk): the shard files of layout l, whose
 * images are at image + img_off, then the manifest mbuf (mlen bytes,
 * save time time_ns) as the commit point - the protocol of the uploads
 * from tier 2, in the caller's thread.  The uploader is held meanwhile:
 * an upload in progress is cancelled first and none starts until this
 * returns.  Requests are retried until deadline_mono_ns (0: the retry
 * count).  cancel (may be NULL), set from another thread, stops it at
 * its next request or chunk (-ECANCELED).  0 once the manifest is in
 * the store: the store's newest whole step is then `step` (stats,
 * tier3.json) and retention has run; a failure is counted as a failed
 * upload, and the store keeps what it had. */
int objstore_tier3_put_image(struct objstore_tier3 *t, int64_t step,
			     const struct ckpt_layout *l, const uint8_t *image,
			     const char *mbuf, size_t mlen, int64_t time_ns,
			     int64_t deadline_mono_ns, atomic_int *cancel,
			     struct sr_err *e);
/* Wait until the newest offered step is in the store, as flush does;
 * the error says which step is where. */
int objstore_tier3_drain(struct objstore_tier3 *t, int64_t deadline_mono_ns,
			 struct sr_err *e);
void objstore_tier3_stats(struct objstore_tier3 *t,
			  struct objstore_tier3_stats *out);
const char *objstore_tier3_uri(const struct objstore_tier3 *t);
/* Newest committed step in the store at or below max_step (< 0: any),
 * by a listing of its own; -1 when none.  A store that does not answer
 * with a listing is an error (-SR_EHTTP for a missing bucket). */
int objstore_tier3_newest(struct objstore_tier3 *t, int64_t max_step,
			  int64_t *step, struct sr_err *e);

/* Test hook: called by the uploader between its steps ("shard",
 * "manifest", "retention"), so tests can kill the process there. */
extern void (*objstore__tier3_test_point)(const char *what, int64_t step);

/* ---- remote.c: reading checkpoints from a store ------------------------------- */
struct objstore_rd;

/* Committed steps in a listing (those with a manifest), newest first
 * (malloc'd *steps). */
int objstore_steps(const struct objstore_list *l, int64_t **steps, size_t *n);
/* The reader: ckpt_backend.rd_open/rd_read/rd_close (lib/ckpt/backend.h)
 * with the types spelled out. */
int objstore_rd_open(const char *uri, int64_t step, int64_t max_step,
		     int verify, struct objstore_rd **out,
		     struct ckpt_manifest *m, char **path, struct sr_err *e);
void objstore_rd_close(struct objstore_rd *r); /* NULL-safe */
int objstore_rd_read(struct objstore_rd *r, const struct ckpt_manifest *m,
		     const struct spotckpt_dest **map, int verify_all,
		     struct ckpt_undo *undo, struct sr_err *e);
/* List a URI's checkpoints like spotckpt_list() (newest first). */
int objstore_rd_list(const char *uri, struct spotckpt_entry *out, size_t cap,
		     size_t *n, struct sr_err *e);
/* Newest committed step at uri at or below max_step (< 0: any), -1 when
 * none, by listing only. */
int objstore_rd_newest(const char *uri, int64_t max_step, int64_t *step,
		       struct sr_err *e);

#endif
