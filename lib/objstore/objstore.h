/*
 * objstore.h - checkpoint storage backends: a local directory, S3 (and the
 * S3-compatible GCS XML API), Azure Blob.  Private to spotrun; the public
 * surface is include/spotrun/ckpt.h (spotckpt_set_remote(), and the
 * reader / list / verify functions, which accept URIs).
 *
 * URIS
 *     file:///abs/dir             a directory (tier 2; or tier 3 on a
 *                                 shared file system)
 *     s3://bucket[/prefix]        Amazon S3 or an S3-compatible store
 *     gs://bucket[/prefix]        Google Cloud Storage, XML API, HMAC keys
 *     az://account/container[/prefix]   Azure Blob Storage, block blobs
 *
 * KEYS.  A store is opened on a URI; keys are relative to its prefix and
 * use '/' as separator.  A checkpoint uses the same names as on disk:
 *     <prefix>/step-NNNNNNNN/shard-00000.safetensors ...
 *     <prefix>/step-NNNNNNNN/manifest.json          (the commit point)
 *
 * CONFIGURATION (environment; see docs/checkpoint.md):
 *   S3   credentials and endpoint from the AWS chain (lib/common/awscred):
 *        AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN,
 *        ~/.aws files with AWS_PROFILE, IMDSv2; AWS_ENDPOINT_URL_S3, then
 *        AWS_ENDPOINT_URL; AWS_REGION.  SPOTRUN_S3_ADDRESSING=path|virtual
 *        (default: virtual on AWS, path with an endpoint override).
 *   GCS  SPOTRUN_GCS_HMAC_ACCESS_KEY_ID, SPOTRUN_GCS_HMAC_SECRET,
 *        SPOTRUN_GCS_ENDPOINT (default https://storage.googleapis.com).
 *   Azure AZURE_STORAGE_CONNECTION_STRING (AccountKey=, BlobEndpoint=), or
 *        AZURE_STORAGE_KEY and AZURE_STORAGE_BLOB_ENDPOINT (default
 *        https://ACCOUNT.blob.core.windows.net).
 *   All  SPOTRUN_OBJSTORE_PART_MB (multipart part size, default 16),
 *        SPOTRUN_OBJSTORE_PARALLEL (parts / ranges in flight, default 8),
 *        SPOTRUN_OBJSTORE_RETRIES (default 6: a request's retries when no
 *        deadline bounds them, see objstore_set_deadline),
 *        SPOTRUN_OBJSTORE_CHECKSUM=crc32c|md5 (S3/GCS part checksums,
 *        default crc32c).
 *
 * ERRORS follow lib/common: 0 or a negative code, with *e naming the
 * method, the object and the service's own error code and message.
 * -SR_ENOTFOUND: no such object / bucket; -EACCES: credentials refused;
 * -SR_EHTTP: anything else after the retries ran out.
 *
 * THREADS.  A store may be used from several threads at once; each call
 * uses its own connections.
 */
#ifndef SR_OBJSTORE_H
#define SR_OBJSTORE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

enum objstore_kind {
	OBJSTORE_FILE = 0,
	OBJSTORE_S3 = 1,
	OBJSTORE_GCS = 2,
	OBJSTORE_AZURE = 3,
};

struct objstore_uri {
	int kind;             /* enum objstore_kind */
	char *account;        /* Azure storage account; NULL otherwise */
	char *bucket;         /* S3/GCS bucket, Azure container; NULL: file */
	char *prefix;         /* key prefix without leading or trailing '/'
			       * ("" for none); for file: the directory */
};

/* Parse `s` into *u (owned strings; objstore_uri_free()); libcurl splits
 * it (common/url.h).  Bucket and container names are checked against the
 * services' rules, the prefix must not contain "..", "//" or control
 * characters; a port, user:password@, '?' or '#' is refused.  A plain
 * path (no scheme://, sr_url_scheme) is a file URI.  Errors: -EINVAL with
 * *e naming the part at fault; -ENOMEM.  *u is zeroed on failure. */
int objstore_uri_parse(const char *s, struct objstore_uri *u, struct sr_err *e);
void objstore_uri_free(struct objstore_uri *u); /* NULL-safe */
/* (Whether a URI is remote, and the path of a file URI: ckpt__uri_*
 * in lib/ckpt/backend.h.) */

/* KEY RULES.  Every call naming keys checks them (objstore_key_check):
 * 1..OBJSTORE_KEY_MAX bytes, no control character, no empty, "." or
 * ".." segment (so no leading '/' and no "//"): a key can never reach
 * outside the store's prefix, whatever a listing returned.  Any other
 * byte is allowed and travels as S3 and Azure define: percent-encoded
 * in URLs, XML-escaped in request bodies; listings are made under the
 * prefix with its trailing '/', and a listed key outside it is
 * ignored. */
#define OBJSTORE_KEY_MAX 512
/* 0, or -EINVAL with *e naming the rule broken. */
int objstore_key_check(const char *key, struct sr_err *e);

/* One object of a listing; key relative to the store's prefix. */
struct objstore_obj {
	char *key;
	uint64_t size;
};
struct objstore_list {
	struct objstore_obj *v;
	size_t n, cap;
};
void objstore_list_free(struct objstore_list *l); /* NULL-safe */

struct objstore_cfg {
	uint64_t part_bytes;  /* multipart part / ranged GET size */
	int parallel;         /* requests in flight per transfer */
	int retries;          /* extra attempts per request */
	long backoff_base_ms, backoff_max_ms;
	long connect_timeout_ms;
	long low_speed_s;     /* abort a request stalled this long */
};
/* Defaults, then the SPOTRUN_OBJSTORE_* environment. */
void objstore_cfg_default(struct objstore_cfg *c);

struct objstore;

/* Open a store on uri.  Reads credentials (not validated until the first
 * request).  On success *out is owned by the caller (objstore_close()).
 * Errors: -EINVAL (bad URI), -EACCES (no credentials found, *e says
 * where they were looked for), -ENOMEM. */
int objstore_open(const char *uri, const struct objstore_cfg *cfg,
		  struct objstore **out, struct sr_err *e);
void objstore_close(struct objstore *s); /* NULL-safe */
/* The URI it was opened with (borrowed). */
const char *objstore_uri(const struct objstore *s);
int objstore_kind(const struct objstore *s);
/* Transfers in progress stop with -ECANCELED while *flag is non-zero
 * (borrowed; NULL to detach). */
void objstore_set_cancel(struct objstore *s, atomic_int *flag);
/* Bound every request's retries by deadline_mono_ns (CLOCK_MONOTONIC)
 * instead of SPOTRUN_OBJSTORE_RETRIES; 0 returns to the count.  Takes
 * effect at the next request; may be called from any thread. */
void objstore_set_deadline(struct objstore *s, int64_t deadline_mono_ns);
/* A gate: fn(ud) is called before each part of a multipart upload (S3
 * UploadPart, Azure Put Block) and before its completion (which has the
 * store join the parts) and may block, to hold the upload back
 * while something more urgent runs (a bucket mount's syncer yields to the
 * training writing its checkpoint, lib/dirsync/watch.c).  The caller
 * bounds how long fn blocks; a request already sent is held only by a
 * pace (objstore_set_pace).  fn NULL: no gate.  Set it before the
 * transfers start. */
typedef void (*objstore_gate_fn)(void *ud);
void objstore_set_gate(struct objstore *s, objstore_gate_fn fn, void *ud);
/* A pace: fn(ud) is called before each read of a body streamed from a
 * file (an upload's part or whole object, every 64 KiB) and may block,
 * to hold back the parts already on the wire too (a gate holds only the
 * next one).  fn must bound each call well under the store's idle limit
 * (S3 ends a request idle for ~20 s); a cancel is seen once it returns.
 * NULL: none.  Set it before the transfers start. */
void objstore_set_pace(struct objstore *s, objstore_gate_fn fn, void *ud);

/* Whether rc (of objstore_open or a request) means the store refused the
 * configuration - -EACCES credentials missing or refused, -SR_ENOTFOUND
 * no such bucket, -EINVAL a bad URI or request, -ENOMEM - as opposed to
 * a store that did not answer (refused connections, timeouts, 5xx: worth
 * retrying). */
int objstore_refused(int rc);
/* Open uri and list its checkpoints once, every request bounded by
 * timeout_ns: what tier 3 does when it starts, for a caller that wants
 * to know before a job runs.  0, or the error (objstore_refused() says
 * which kind) with *e naming the URI and what failed. */
int objstore_check(const char *uri, int64_t timeout_ns, struct sr_err *e);

/* Write an object from memory in one request (small objects: manifests).
 * On S3-compatible stores and Azure the body carries Content-MD5. */
int objstore_put(struct objstore *s, const char *key, const void *buf,
		 size_t len, struct sr_err *e);
/* Write an object from bytes [0, size) of fd: one PUT when it fits one
 * part, else a multipart upload (S3: Create/UploadPart/Complete; Azure:
 * Put Block/Put Block List) with `parallel` parts in flight, each with
 * a checksum the store checks (CRC32C on S3 and GCS, Content-MD5 on
 * Azure or with SPOTRUN_OBJSTORE_CHECKSUM=md5).  Nothing becomes visible under `key` unless every part was
 * confirmed; on failure the upload is aborted.  *sent (may be NULL)
 * accumulates the bytes confirmed. */
int objstore_put_fd(struct objstore *s, const char *key, int fd,
		    uint64_t size, uint64_t *sent, struct sr_err *e);
/* objstore_put_fd() from bytes [0, size) of memory (a checkpoint's image
 * in staging memory): the same parts, checksums and all-or-nothing
 * visibility.  buf must stay valid and unchanged until it returns. */
int objstore_put_mem(struct objstore *s, const char *key, const void *buf,
		     uint64_t size, uint64_t *sent, struct sr_err *e);
/* Read bytes [off, off+len) of an object into dst, exactly.  Errors:
 * -SR_ENOTFOUND, -SR_ECORRUPT (short object). */
int objstore_get_range(struct objstore *s, const char *key, uint64_t off,
		       uint64_t len, void *dst, struct sr_err *e);
/* The same, handing the bytes to sink in order (pos = offset within the
 * range) instead of one buffer: a range that covers several tensors
 * scatters them to their destinations.  A retried request calls sink
 * again from pos 0.  A non-zero return stops the request with that
 * code. */
typedef int (*objstore_sink_fn)(void *ud, uint64_t pos, const void *p,
				size_t n);
int objstore_get_range_to(struct objstore *s, const char *key, uint64_t off,
			  uint64_t len, objstore_sink_fn sink, void *ud,
			  struct sr_err *e);
/* Read a whole small object (at most max bytes) into a malloc'd,
 * NUL-terminated buffer (*out, caller frees). */
int objstore_get(struct objstore *s, const char *key, size_t max, char **out,
		 size_t *len, struct sr_err *e);
/* Append every object whose key starts with `sub` to *out (sorted by key
 * by the services; the file backend sorts too). */
int objstore_list(struct objstore *s, const char *sub, struct objstore_list *out,
		  struct sr_err *e);
/* Delete objects (missing ones are not an error). */
int objstore_del(struct objstore *s, const char *const *keys, size_t n,
		 struct sr_err *e);
/* Abort the multipart uploads of keys that start with `sub` (relative,
 * like objstore_list's; listed with the prefix's trailing '/', and each
 * listed key checked to be under it before its abort is sent) that were
 * started before `older_than_ns` (wall clock); *n (may be NULL)
 * receives how many.  Stores without the notion (Azure: uncommitted
 * blocks expire by themselves; file) return 0. */
int objstore_abort_stale(struct objstore *s, const char *sub,
			 int64_t older_than_ns, size_t *n, struct sr_err *e);

#endif
