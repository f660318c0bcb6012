/*
 * s3_int.h - what s3.c (requests, objects, listings, opening) and
 * s3_mpu.c (multipart uploads and their cleanup) share.  Private to
 * lib/objstore.
 */
#ifndef SR_OBJSTORE_S3_INT_H
#define SR_OBJSTORE_S3_INT_H

#include "os_int.h"
#include "common/awscred.h"

struct s3 {
	char *base;        /* scheme://host[:port] of the requests */
	char *host;        /* Host header value */
	char *path0;       /* "/BUCKET" for path-style, "" for virtual */
	char *region;
	struct sr_awscred cred;       /* GCS's HMAC key */
	struct sr_awscred_cache *aws; /* S3: the AWS chain, kept fresh */
	int gcs;
	int crc32c;        /* shard data: CRC32C (S3 and GCS headers), else MD5 */
};

/* The user metadata a multipart upload carries: a token of its own, so
 * that a CompleteMultipartUpload whose answer was lost can tell its
 * object from an older one of the same key. */
#define S3_TOKEN_HDR "x-amz-meta-spotrun-upload"
#define GCS_TOKEN_HDR "x-goog-meta-spotrun-upload"

struct call {
	struct s3 *s3;
	const char *path;     /* encoded path, from '/' */
	const char *query;    /* without '?', or "" */
	char md5[25];         /* Content-MD5 or "" */
	char crc[9];          /* x-amz-checksum-crc32c or "" */
	int crc_algo;         /* CreateMultipartUpload with CRC32C parts */
	const char *range;    /* "bytes=A-B" or NULL */
	const char *ctype;    /* Content-Type or NULL */
	objstore_sink_fn sink;/* response body of a range, or NULL */
	void *sink_ud;
	const char *token;    /* x-amz-meta-spotrun-upload, or NULL */
	/* before every attempt after the first: non-zero ends the request
	 * with that code (e.g. the work is found already done) */
	int (*before_retry)(struct call *c);
	void *retry_ud;
	int attempts;
};

/* Path of a bucket-level request: "/BUCKET" path-style (no trailing
 * slash, as the SDKs send it), "/" virtual-hosted.  Borrowed. */
const char *objstore__s3_bucket_path(const struct s3 *s3);
/* Encoded path of an object key (full key, prefix included); malloc'd,
 * NULL on out-of-memory. */
char *objstore__s3_obj_path(const struct s3 *s3, const char *fullkey);
/* Perform method on c's path?query (body from memory, or `blen` bytes of
 * fd from foff; the answer into dst/dlen or a growing buffer of at most
 * max); *resp must be freed by the caller.  0 with a 2xx, else the error
 * (also for other statuses). */
int objstore__s3_do_req(struct objstore *s, struct call *c, const char *method,
			const char *what, const void *body, size_t blen, int fd,
			uint64_t foff, void *dst, size_t dlen, size_t max,
			struct os_resp *resp, struct sr_err *e);

/* s3_mpu.c: objstore_ops.put_src and .abort_stale */
int objstore__s3_put_src(struct objstore *s, const char *key,
			 const struct os_src *src, uint64_t size,
			 uint64_t *sent, struct sr_err *e);
int objstore__s3_abort_stale(struct objstore *s, const char *sub,
			     int64_t older_ns, size_t *n, struct sr_err *e);

#endif
