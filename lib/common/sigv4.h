/*
 * sigv4.h - AWS Signature Version 4 request signing (OpenSSL HMAC/SHA-256).
 *
 * Generic over services: EC2 (Query API), S3, STS... The caller describes
 * the request exactly as it will go on the wire and gets back the headers
 * to add to it:
 *
 *     struct sr_sigv4_req r = {
 *         .method = "POST", .host = "ec2.us-east-1.amazonaws.com",
 *         .path = "/", .query = NULL,
 *         .headers = (const char *const[]){
 *             "Content-Type: application/x-www-form-urlencoded", NULL },
 *         .body = body, .body_len = len,
 *         .region = "us-east-1", .service = "ec2", .when = time(NULL),
 *     };
 *     char **add = NULL;
 *     rc = sr_sigv4_sign(&r, &creds, &add, &err);
 *     ... append add[0..] to the request's headers ...
 *     sr_sigv4_headers_free(add);
 *
 * What is signed: "host", every header in r->headers, "x-amz-date", and
 * "x-amz-security-token" / "x-amz-content-sha256" when they are added.
 * Header names are lower-cased, values trimmed with inner runs of spaces
 * collapsed, repeated names joined with ','.
 *
 * Canonical URI: for every service but S3 (r->s3_path == 0) the path is
 * normalised ("." and ".." segments, repeated slashes) and percent-encoded
 * once more, as the AWS SDKs do; with s3_path the path is used as given
 * (already encoded once by the caller).  The query is parsed, each name and
 * value percent-decoded then encoded with the RFC 3986 unreserved set, and
 * the pairs sorted.
 *
 * Secrets: the secret key is used only inside HMAC; it never appears in
 * an output or an error message.  The session token is copied into the
 * x-amz-security-token header (that is the protocol) and nowhere else.
 *
 * Thread-safe: no global state.
 */
#ifndef SR_COMMON_SIGV4_H
#define SR_COMMON_SIGV4_H

#include <stddef.h>
#include <time.h>
#include "err.h"

/* The literal payload hash for requests whose body is not signed (S3). */
#define SR_SIGV4_UNSIGNED_PAYLOAD "UNSIGNED-PAYLOAD"

/* Credentials, borrowed for the duration of a call. */
struct sr_sigv4_creds {
	const char *access_key_id;     /* required */
	const char *secret_access_key; /* required */
	const char *session_token;     /* NULL or "" when none */
};

struct sr_sigv4_req {
	const char *method;   /* "GET", "POST", "PUT", ... (required) */
	const char *host;     /* Host header value, "host" or "host:port" */
	const char *path;     /* URI path as sent, "/" when NULL or "" */
	const char *query;    /* query as sent, without '?'; NULL or "" none */
	/* Extra headers to sign, "Name: value", NULL-terminated; may be NULL.
	 * Must not contain Host, Authorization or X-Amz-Date. */
	const char *const *headers;
	/* Payload: payload_hash when set (lower-case hex SHA-256 or
	 * SR_SIGV4_UNSIGNED_PAYLOAD), else SHA-256 of body/body_len
	 * (body may be NULL when body_len is 0). */
	const char *payload_hash;
	const void *body;
	size_t body_len;
	const char *region;   /* "us-east-1" (required) */
	const char *service;  /* signing name: "ec2", "s3" (required) */
	time_t when;          /* signing time, seconds since the epoch (UTC) */
	int s3_path;          /* 1: canonical URI is path as given (S3) */
	int add_content_sha256; /* 1: add and sign x-amz-content-sha256 */
};

/*
 * Sign r with c.  On success *out_headers is a malloc'd NULL-terminated
 * array of "Name: value" strings to add to the request, in this order:
 *     X-Amz-Date, [X-Amz-Content-Sha256], [X-Amz-Security-Token],
 *     Authorization
 * The caller frees it with sr_sigv4_headers_free().  On failure
 * *out_headers is NULL and *e names the bad field (-EINVAL) or -ENOMEM.
 */
int sr_sigv4_sign(const struct sr_sigv4_req *r, const struct sr_sigv4_creds *c,
		  char ***out_headers, struct sr_err *e);

void sr_sigv4_headers_free(char **headers); /* NULL-safe */

/*
 * The intermediate strings of the signature, for tests and debugging
 * (they hold no secret).  Each pointer may be NULL if not wanted; each
 * string returned is malloc'd and freed by the caller with free().
 * canonical: the canonical request; sts: the string to sign;
 * signed_headers: "host;x-amz-date;...".  The headers signed are the
 * ones sr_sigv4_sign() would add, so `c` is needed for the token.
 */
int sr_sigv4_canonical(const struct sr_sigv4_req *r,
		       const struct sr_sigv4_creds *c, char **canonical,
		       char **sts, char **signed_headers, struct sr_err *e);

/* Lower-case hex SHA-256 of data into out[65] (NUL-terminated). */
void sr_sigv4_sha256_hex(const void *data, size_t len, char out[65]);

/* "YYYYMMDDTHHMMSSZ" of t (UTC) into out[17]. */
void sr_sigv4_amz_date(time_t t, char out[17]);

/*
 * Percent-encode s with the RFC 3986 unreserved set (A-Z a-z 0-9 - _ . ~);
 * '/' is kept when keep_slash.  Returns a malloc'd string (caller frees)
 * or NULL on out-of-memory.  Used for SigV4 and for form bodies.
 */
char *sr_sigv4_uri_encode(const char *s, size_t len, int keep_slash);

/*
 * Percent-decode s[0..len) (invalid escapes are kept as they are); with
 * form, '+' decodes to a space (application/x-www-form-urlencoded).
 * Returns a malloc'd NUL-terminated string (caller frees), its length in
 * *out_len (may be NULL), or NULL on out-of-memory.
 */
char *sr_sigv4_uri_decode(const char *s, size_t len, int form,
			  size_t *out_len);

#endif
