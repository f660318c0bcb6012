/*
 * os_int.h - what the objstore backends share (private to lib/objstore).
 */
#ifndef SR_OBJSTORE_INT_H
#define SR_OBJSTORE_INT_H

#include "objstore.h"
#include "common/http.h"

/* Where an upload's bytes come from: [0, size) of fd, or of mem when mem
 * is not NULL (objstore_put_fd / objstore_put_mem). */
struct os_src {
	int fd;
	const uint8_t *mem;
};

struct objstore_ops {
	int (*put)(struct objstore *s, const char *key, const void *buf,
		   size_t len, struct sr_err *e);
	int (*put_src)(struct objstore *s, const char *key,
		       const struct os_src *src, uint64_t size, uint64_t *sent,
		       struct sr_err *e);
	int (*get_range)(struct objstore *s, const char *key, uint64_t off,
			 uint64_t len, void *dst, objstore_sink_fn sink,
			 void *ud, struct sr_err *e);
	int (*get)(struct objstore *s, const char *key, size_t max, char **out,
		   size_t *len, struct sr_err *e);
	int (*list)(struct objstore *s, const char *sub,
		    struct objstore_list *out, struct sr_err *e);
	int (*del)(struct objstore *s, const char *const *keys, size_t n,
		   struct sr_err *e);
	int (*abort_stale)(struct objstore *s, const char *sub,
			   int64_t older_ns, size_t *n, struct sr_err *e);
	void (*free_impl)(void *impl);
};

struct objstore {
	const struct objstore_ops *ops;
	char *uri_str;
	struct objstore_uri u;
	struct objstore_cfg cfg;
	atomic_int *cancel;
	_Atomic int64_t deadline_ns; /* objstore_set_deadline(); 0 = none */
	objstore_gate_fn gate;  /* objstore_set_gate(); NULL = none */
	void *gate_ud;
	objstore_gate_fn pace;  /* objstore_set_pace(); NULL = none */
	void *pace_ud;
	void *impl;           /* backend state, freed by ops->free_impl */
};

/* Backends: fill s->ops and s->impl. */
int objstore__file_open(struct objstore *s, struct sr_err *e);
int objstore__s3_open(struct objstore *s, struct sr_err *e);
int objstore__az_open(struct objstore *s, struct sr_err *e);

int objstore__list_add(struct objstore_list *l, const char *key, size_t klen,
		       uint64_t size);
/* prefix + "/" + key (or key alone for an empty prefix); malloc'd. */
char *objstore__full_key(const struct objstore *s, const char *key);
/* The part of a full key after "prefix/" (borrowed from fk), or NULL
 * when fk is not under the prefix. */
const char *objstore__relative_key(const struct objstore *s, const char *fk);

/* ---- http.c: one request, retried ------------------------------------------
 *
 * A request is described once and performed by the one HTTP layer
 * (lib/common/http.h); `sign` is called before every attempt to
 * (re)build the headers (dates and signatures), so a retry an hour later
 * is still valid.  The body comes from memory or from a range of an fd;
 * the response body goes to a fixed buffer (exact length expected) or to
 * a growing one.  Retries: see http.c. */
struct os_req;
typedef int (*os_sign_fn)(const struct os_req *rq, void *ud,
			  struct sr_http_hdrs *hdrs, struct sr_err *e);

struct os_req {
	const char *method;
	const char *url;       /* full URL, query included */
	const char *what;      /* for messages: "UploadPart shard-0 #3" */
	const void *body;      /* memory body, or NULL */
	size_t body_len;
	int body_fd;           /* -1, or stream body_len bytes from body_off */
	uint64_t body_off;
	void *dst;             /* fixed response buffer, or NULL */
	objstore_sink_fn sink; /* or this, for dst_len bytes */
	void *sink_ud;
	size_t dst_len;
	size_t max_resp;       /* growing buffer's limit (0 = 1 MiB) */
	os_sign_fn sign;
	void *sign_ud;
};

struct os_resp {
	long status;
	char *body;            /* growing buffer, NUL-terminated (or NULL) */
	size_t len;            /* bytes received (either buffer) */
	char etag[160];        /* ETag header, quotes kept */
	char token[64];        /* x-amz-meta-spotrun-upload (or x-goog-) */
	char err_code[64];     /* <Code> of an XML error body */
	char err_msg[256];     /* <Message> */
	int attempts;
};

/* Perform rq.  Returns 0 when a final HTTP response arrived (check
 * resp->status; a non-2xx is also described in *e), or a negative code
 * when no response came (-SR_EHTTP, -ECANCELED).  resp->body is freed by
 * os_resp_free(). */
int os_http(struct objstore *s, const struct os_req *rq, struct os_resp *resp,
	    struct sr_err *e);
void os_resp_free(struct os_resp *r);
/* Turn a non-2xx response into a code and message naming what failed:
 * 404 -> -SR_ENOTFOUND, 401/403 -> -EACCES, else -SR_EHTTP. */
int os_status_err(const struct os_req *rq, const struct os_resp *r,
		  struct sr_err *e);
/* The store's settings as options of the HTTP layer (its deadline and
 * cancel flag included). */
void objstore__http_opts(const struct objstore *s, struct sr_http_opts *o);

/* ---- crypt.c ---------------------------------------------------------------- */
/* base64 of MD5(data) into out[25]. */
void os_md5_b64(const void *data, size_t len, char out[25]);
/* The same over bytes [off, off+len) of fd, read in 1 MiB pieces (a part
 * is hashed before it is sent, without holding it in memory).  Returns 0
 * or a negative errno (-EIO for a short file). */
int os_md5_b64_fd(int fd, uint64_t off, uint64_t len, char out[25]);
/* CRC32C (Castagnoli, as x-amz-checksum-crc32c and GCS use it) of data,
 * continuing from crc (0 to start). */
uint32_t os_crc32c(uint32_t crc, const void *data, size_t len);
/* base64 of the CRC's 4 bytes, big-endian (the x-amz-checksum-crc32c
 * form), into out[9]. */
void os_crc32c_b64(uint32_t crc, char out[9]);
/* CRC32C of bytes [off, off+len) of fd, base64 into out[9]; 0 or a
 * negative errno (-EIO for a short file). */
int os_crc32c_b64_fd(int fd, uint64_t off, uint64_t len, char out[9]);
/* The two checksums of bytes [off, off+len) of an upload's source: from
 * memory, or as the _fd functions. */
int os_md5_b64_src(const struct os_src *src, uint64_t off, uint64_t len,
		   char out[25]);
int os_crc32c_b64_src(const struct os_src *src, uint64_t off, uint64_t len,
		      char out[9]);
/* base64 encode / decode (malloc'd, NUL-terminated; NULL on error). */
char *os_b64_enc(const void *data, size_t len);
unsigned char *os_b64_dec(const char *s, size_t *len);
/* HMAC-SHA256 of msg under key, base64 into out[45]. */
int os_hmac_sha256_b64(const void *key, size_t klen, const char *msg,
		       size_t mlen, char out[45]);

/* ---- xml.c ------------------------------------------------------------------- */
/* s with & < > " ' escaped for an XML text or attribute (malloc'd). */
char *os_xml_escape(const char *s);
/* Text of the first element called `name` anywhere in doc (malloc'd) or
 * NULL. */
char *os_xml_text(const char *doc, size_t len, const char *name);
/* For every element called `item`, call fn with the texts of its
 * first descendants `a` and `b` (either may be NULL when absent).  Returns 0,
 * fn's non-zero value, or -SR_EPARSE for a document that does not parse. */
int os_xml_each(const char *doc, size_t len, const char *item, const char *a,
		const char *b, int (*fn)(void *ud, const char *va,
					 const char *vb),
		void *ud);

/* ---- parts.c: run jobs 0..n-1 over `parallel` threads ------------------------- */
typedef int (*os_job_fn)(void *ud, size_t i, struct sr_err *e);
/* Stops handing out jobs at the first failure; returns it with *e. */
int os_run_parallel(int parallel, size_t n, os_job_fn fn, void *ud,
		    atomic_int *cancel, struct sr_err *e);

#endif
