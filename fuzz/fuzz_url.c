/*
 * fuzz_url - libFuzzer target for lib/common/url.h: what the wrapper does
 * around libcurl's URL parser (copying the parts out, the "scheme://"
 * scan when curl refuses, authority/origin, loopback).  Invariants: no
 * crash or leak; a URL that parses has a lower-case scheme that
 * sr_url_scheme() reports too, a path starting with '/' (but in
 * curl's "file:relative"), a port in
 * -1..65535; its origin parses back to the same host and port; a URL
 * with user info (a password, perhaps) never appears in an error.
 */
#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/url.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_parsed(const char *s, struct sr_url *u)
{
	char scheme[64], *auth, *origin;
	struct sr_url back;

	if (!u->scheme[0] || !u->path[0] || u->port < -1 || u->port > 65535)
		abort();
	if (u->path[0] != '/' && strcmp(u->scheme, "file")) /* "file:x" is "x" */
		abort();
	for (const char *p = u->scheme; *p; p++)
		if (isupper((unsigned char)*p))
			abort();
	if (strlen(u->scheme) < sizeof scheme &&
	    (sr_url_scheme(s, scheme, sizeof scheme) != 1 || strcmp(scheme, u->scheme)))
		abort();
	auth = sr_url_authority(u);
	origin = sr_url_origin(u);
	if (!auth || !origin)
		abort();
	if (u->host[0] && sr_url_parse(origin, &back, NULL) == 0) {
		if (strcmp(back.host, u->host) || back.port != u->port)
			abort();
		sr_url_free(&back);
	}
	free(auth);
	free(origin);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sr_err e = { 0 };
	struct sr_url u;
	char *s = malloc(size + 1), scheme[16];

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	if (sr_url_parse(s, &u, &e) == 0) {
		check_parsed(s, &u);
		sr_url_free(&u);
	} else if (strchr(s, '@') && strchr(e.msg, '@')) {
		abort(); /* a URL with user info is never echoed */
	}
	if (sr_url_parse_http(s, "x", &u, &e) == 0)
		sr_url_free(&u);
	else if (strchr(s, '@') && strchr(e.msg, '@'))
		abort();
	(void)sr_url_scheme(s, scheme, sizeof scheme);
	(void)sr_url_is_loopback(s);
	(void)sr_url_tls_or_loopback(s);
	free(s);
	return 0;
}
