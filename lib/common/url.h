/*
 * url.h - every URL spotrun reads is split here, by libcurl's URL API
 * (curl_url, CURLU): endpoints (AWS_ENDPOINT_URL*, SPOTRUN_GCS_ENDPOINT,
 * Azure's BlobEndpoint), the daemon's URL as the EC2 bootstrap sees it,
 * webhook URLs, and checkpoint URIs (s3://bucket/prefix, gs://, az://,
 * file:///dir).
 *
 * curl does the parsing (RFC 3986 as curl reads it): IPv6 literals
 * ("http://[::1]:9000"), ports, "user:password@", any scheme.  Paths are
 * kept as written: not percent-decoded, "." and ".." segments and "//"
 * left in (CURLU_PATH_AS_IS), spaces allowed; a host is percent-decoded.
 * This module copies the parts out and says what is wrong in words.
 *
 * A password in a URL is never put in a message: a URL that holds one
 * (or an '@' where curl could not tell) is named without its text.
 */
#ifndef SR_COMMON_URL_H
#define SR_COMMON_URL_H

#include <stddef.h>

#include "common/err.h"

struct sr_url {
	char *scheme;   /* lower case: "https", "s3", "file" */
	char *user;     /* NULL when absent ("" for "http://@h/") */
	char *password; /* NULL when absent */
	char *host;     /* "example.com", "[::1]" (IPv6 in brackets, with
			 * "%25zone" if any); "" for file: URLs */
	int port;       /* as given, 0..65535; -1 when absent */
	char *path;     /* "/" at least, as written; curl reads "file:x"
			 * as the relative path "x" */
	char *query;    /* after '?', NULL when absent */
	char *fragment; /* after '#', NULL when absent (or empty) */
};

/* Split s into *u (owned strings, sr_url_free()).  Errors: -EINVAL with
 * *e saying what is wrong ("bad port", "no host", "not a URL" for a
 * string without "scheme:"...), -ENOMEM.  *u is zeroed on failure. */
int sr_url_parse(const char *s, struct sr_url *u, struct sr_err *e);
void sr_url_free(struct sr_url *u); /* NULL-safe; zeroes *u */

/* sr_url_parse, then an http:// or https:// URL with a host is required.
 * `what` names the setting in the message ("AWS_ENDPOINT_URL_S3"). */
int sr_url_parse_http(const char *s, const char *what, struct sr_url *u,
		      struct sr_err *e);

/* Whether s is a URL: 1 with its scheme in lower case in buf when s is
 * "scheme://..." (even one curl cannot split further: its error comes
 * from sr_url_parse), 0 when s is a plain path or word ("/data",
 * "run:1/x", "bucket"); -ENOMEM.  A scheme longer than n-1 is not one. */
int sr_url_scheme(const char *s, char *buf, size_t n);

/* "host[:port]" (the HTTP Host header) and "scheme://host[:port]" of u.
 * Caller frees; NULL on out-of-memory. */
char *sr_url_authority(const struct sr_url *u);
char *sr_url_origin(const struct sr_url *u);

/* 1 if url's host is loopback (localhost, 127.0.0.0/8, [::1]), else 0
 * (a URL that does not parse included). */
int sr_url_is_loopback(const char *url);

/* 1 if a secret may travel to url: https://, or any scheme to a
 * loopback host; else 0 (a URL that does not parse included). */
int sr_url_tls_or_loopback(const char *url);

#endif
