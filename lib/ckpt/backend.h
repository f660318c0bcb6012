/*
 * backend.h - the storage-backend interface of lib/ckpt: what the engine
 * and the reader need from a checkpoint store they do not implement
 * themselves (tier 3: s3://, gs://, az://, and file:// used as tier 3).
 *
 * lib/ckpt never includes a backend's headers.  The backend
 * (lib/objstore/ckpt_backend.c) includes this one and defines
 * ckpt_remote_backend; lib/ckpt calls it only through these pointers.
 * Tier 2, the engine's own directory, is not behind this interface.
 *
 * Errors follow lib/common: 0 or a negative code with *e naming the
 * store, the request and the service's answer.  A store that does not
 * answer is an error (never "no checkpoint"): only -SR_ENOTFOUND says
 * that the store answered and holds no committed step.
 *
 * THE UPLOADER (tier 3).  up_start() opens the store on a URI and makes
 * one listing: a configuration the store refuses (no such bucket,
 * credentials refused, a bad request) fails here; a store that does not
 * answer only logs a warning - the uploads are retried.  up_offer(N)
 * says that tier 2 committed step N (never called for anything else):
 * the newest committed step is uploaded in the background, whole, shards
 * then manifest; a failed upload is retried with backoff until it
 * commits or a newer step replaces it.  up_flush(N, deadline) makes a
 * committed step N go first and waits for it; up_put_image(N) uploads
 * step N from staging memory instead (a final save that skips tier 2);
 * up_drain(deadline) waits
 * until the newest committed step is in the store; up_stop() cancels
 * what is in flight and frees.  Threads: any, concurrently.
 */
#ifndef SPOTCKPT_BACKEND_H
#define SPOTCKPT_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "internal.h"

/* Who hears of the uploader's recovery point: changed() is called with
 * the store's newest whole step (-1: none) and the last upload failure
 * ("" once an upload commits) after each change, and once more at
 * up_stop; from any thread, with no lock of the backend held. */
struct ckpt_up_watch {
	void (*changed)(void *ud, int64_t store_step, const char *error);
	void *ud;
};

struct ckpt_backend {
	const char *name;

	/* ---- tier 3 ---------------------------------------------------------- */
	/* Start uploading from local_dir to uri, keeping `keep` committed
	 * checkpoints in the store (INT32_MAX: none deleted).  *up owned by
	 * the caller (up_stop).  watch (may be NULL) hears of the recovery
	 * point. */
	int (*up_start)(const char *uri, const char *local_dir, int keep,
			const struct ckpt_up_watch *watch, void **up,
			struct sr_err *e);
	/* Tier 2 committed `step` (its save time: time_ns, wall clock).
	 * Never blocks. */
	void (*up_offer)(void *up, int64_t step, int64_t time_ns);
	/* Wait until committed step `step` (or a newer one) is in the store,
	 * it first; bounded by deadline_mono_ns (0: none, and then the first
	 * failure is returned).  *met = 1 if it was in by the deadline.
	 * -SR_ENOTFOUND when tier 2 never committed `step`. */
	int (*up_flush)(void *up, int64_t step, int64_t deadline_mono_ns,
			int *met, struct sr_err *e);
	/* Upload `step` from memory in the caller's thread, tier 2 never
	 * written (a final save straight to the store): the shard files of
	 * layout l (images at image + img_off), then the manifest mbuf as
	 * the commit point; the background uploads wait meanwhile.
	 * Requests retried until deadline_mono_ns (0: the retry count);
	 * cancel (may be NULL) stops it from another thread (-ECANCELED).
	 * 0 once the step is in the store, whole. */
	int (*up_put_image)(void *up, int64_t step,
			    const struct ckpt_layout *l, const uint8_t *image,
			    const char *mbuf, size_t mlen, int64_t time_ns,
			    int64_t deadline_mono_ns, atomic_int *cancel,
			    struct sr_err *e);
	/* Wait until the newest offered step is in the store (0 when there
	 * is none), bounded by deadline_mono_ns (0: none).  The error says
	 * which step is where. */
	int (*up_drain)(void *up, int64_t deadline_mono_ns, struct sr_err *e);
	void (*up_stop)(void *up); /* NULL-safe */
	/* Counters and the recovery point (never waits for an upload). */
	void (*up_stats)(void *up, struct spotckpt_remote_stats *out,
			 char *msg, size_t n);
	const char *(*up_uri)(const void *up);
	/* Newest committed step in the store at or below max_step (< 0:
	 * any), by listing: *step = -1 when it holds none. */
	int (*up_newest)(void *up, int64_t max_step, int64_t *step,
			 struct sr_err *e);

	/* ---- reading --------------------------------------------------------- */
	/* Open the checkpoint at uri: exactly `step` when >= 0, else the
	 * newest with step <= max_step (any when < 0) that is whole (manifest
	 * sound and of that step, every shard present with its recorded size
	 * and header checksum); damaged ones are skipped with a log line.
	 * With verify every byte is checked too.  Fills *m (freed with
	 * ckpt__manifest_free) and *path (malloc'd "URI/step-N"); *rd owned
	 * by the caller (rd_close). */
	int (*rd_open)(const char *uri, int64_t step, int64_t max_step,
		       int verify, void **rd, struct ckpt_manifest *m,
		       char **path, struct sr_err *e);
	/* Read the tensors with a destination in map[0..nt-1] (NULL = skip),
	 * verifying each one's XXH3; verify_all: the others too.  Before the
	 * first byte of a tensor is written, ckpt__undo_save(undo, index)
	 * (undo may be NULL); the caller rolls back on failure.  A missing
	 * or short object is -SR_ECORRUPT (the step is not whole). */
	int (*rd_read)(void *rd, const struct ckpt_manifest *m,
		       const struct spotckpt_dest **map, int verify_all,
		       struct ckpt_undo *undo, struct sr_err *e);
	void (*rd_close)(void *rd); /* NULL-safe */
	/* spotckpt_list() of a URI (newest first); *n entries in total. */
	int (*rd_list)(const char *uri, struct spotckpt_entry *out, size_t cap,
		       size_t *n, struct sr_err *e);
	/* Newest committed step at uri (-1 when none), by listing only. */
	int (*rd_newest)(const char *uri, int64_t *step, struct sr_err *e);
};

/* The backend of every remote URI; defined by lib/objstore. */
extern const struct ckpt_backend ckpt_remote_backend;

/* 1 if s names a store behind the backend (s3://, gs://, az://), 0 for
 * a local directory (a path, or file:///path). */
int ckpt__uri_is_remote(const char *s);
/* If s is file:///x, a pointer to "/x" inside s; else s itself. */
const char *ckpt__uri_local_path(const char *s);

#endif
