/*
 * tier3.h - tier 3 of the checkpoint engine: each checkpoint committed to
 * the local directory (tier 2) is uploaded, in the background, to an
 * object store, and read back from there on a node that never saw it.
 * The protocol is described at the top of tier3.c.
 */
#ifndef SR_OBJSTORE_TIER3_H
#define SR_OBJSTORE_TIER3_H

#include <stdint.h>
#include "objstore.h"
#include "ckpt/internal.h"

struct objstore_tier3;

struct objstore_tier3_stats {
	int64_t uploaded_step;    /* newest step whose manifest landed, -1 */
	int64_t uploading_step;   /* being uploaded now, -1 */
	int64_t pending_step;     /* offered, not started, -1 */
	uint64_t committed;       /* uploads committed */
	uint64_t failed;          /* uploads that failed */
	uint64_t superseded;      /* offers replaced by a newer one unstarted */
	uint64_t bytes;           /* bytes confirmed by the store */
	int64_t last_upload_ns;   /* last committed upload: first shard byte
				   * to manifest committed (no retention) */
	int32_t last_error;       /* code of the last upload (0 = committed) */
	char last_msg[SR_ERR_MSG_MAX];
};

/* Start an uploader from local_dir (tier 2) to uri, keeping `keep`
 * committed checkpoints there.  Opens the store (credentials are read
 * here, checked by the first request).  *out owned by the caller
 * (objstore_tier3_stop()).  Errors as objstore_open(). */
int objstore_tier3_start(const char *uri, const char *local_dir, int keep,
			 struct objstore_tier3 **out, struct sr_err *e);
/* Stop: waits for the upload in progress and the pending one (each
 * bounded by the store's retries), then frees.  NULL-safe. */
void objstore_tier3_stop(struct objstore_tier3 *t);
/* Step N of local_dir was committed: upload it when the uploader is free.
 * Never blocks.  A pending offer not yet started is replaced. */
void objstore_tier3_offer(struct objstore_tier3 *t, int64_t step);
/* Make `step` reach the store by deadline_mono_ns (0 = no deadline): an
 * upload of an older step in progress is cancelled, `step` is uploaded
 * next.  Returns 0 once step (or a newer one) is committed there,
 * -SR_ETIMEOUT when the deadline passed first (the upload goes on), or
 * the upload's error.  *met (may be NULL): 1 if committed in time. */
int objstore_tier3_flush(struct objstore_tier3 *t, int64_t step,
			 int64_t deadline_mono_ns, int *met, struct sr_err *e);
void objstore_tier3_stats(struct objstore_tier3 *t,
			  struct objstore_tier3_stats *out);
const char *objstore_tier3_uri(const struct objstore_tier3 *t);

/* Where the engine restores from: local_dir, or the tier-3 URI when the
 * store holds a newer committed step (at or below max_step) than
 * local_dir.  t may be NULL (returns local_dir).  Borrowed strings. */
const char *objstore_tier3_source(struct objstore_tier3 *t,
				  const char *local_dir, int64_t max_step);

/* Test hook: called by the uploader between its steps ("part", "shard",
 * "manifest", "retention"), so tests can kill the process there. */
extern void (*objstore__tier3_test_point)(const char *what, int64_t step);

/* ---- remote.c: reading checkpoints from a store ------------------------------- */
struct objstore_rd;

/* Committed steps in a listing (those with a manifest), newest first
 * (malloc'd *steps). */
int objstore_steps(const struct objstore_list *l, int64_t **steps, size_t *n);
/* Open the checkpoint of uri: exactly `step` when >= 0, else the newest
 * with step <= max_step (any when max_step < 0) whose manifest parses
 * and whose shards exist with the recorded sizes and header checksums;
 * others are skipped with a log line.  With verify, every byte is read
 * and checked too.  Fills *m (the caller frees it with
 * ckpt__manifest_free) and *path (malloc'd "URI/step-N").  *out owned by
 * the caller (objstore_rd_close). */
int objstore_rd_open(const char *uri, int64_t step, int64_t max_step,
		     int verify, struct objstore_rd **out,
		     struct ckpt_manifest *m, char **path, struct sr_err *e);
void objstore_rd_close(struct objstore_rd *r); /* NULL-safe */
/* Read the tensors with a destination in map[0..nt-1] (NULL = skip)
 * straight into it, with parallel ranged GETs, then verify each one's
 * XXH3.  verify_all: also fetch and check the tensors without one. */
int objstore_rd_read(struct objstore_rd *r, const struct ckpt_manifest *m,
		     const struct spotckpt_dest **map, int verify_all,
		     struct sr_err *e);
/* List a URI's checkpoints like spotckpt_list() (newest first). */
int objstore_rd_list(const char *uri, struct spotckpt_entry *out, size_t cap,
		     size_t *n, struct sr_err *e);
/* Newest committed step at uri (-1 when none), by listing only. */
int objstore_rd_newest(const char *uri, int64_t *step, struct sr_err *e);

#endif
