/*
 * url.c - URLs split by libcurl's URL API (url.h).
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/url.h"

/* Paths as written ("s3://b/a/../x" must reach the prefix check, not be
 * resolved), any scheme (s3, gs, az), spaces in paths (prefixes). */
#define URL_FLAGS (CURLU_NON_SUPPORT_SCHEME | CURLU_PATH_AS_IS | CURLU_ALLOW_SPACE)

void sr_url_free(struct sr_url *u)
{
	if (!u)
		return;
	free(u->scheme);
	free(u->user);
	if (u->password)
		memset(u->password, 0, strlen(u->password));
	free(u->password);
	free(u->host);
	free(u->path);
	free(u->query);
	free(u->fragment);
	memset(u, 0, sizeof *u);
	u->port = -1;
}

/* s as a message may show it: never a URL that may carry a password. */
static const char *shown(const char *s)
{
	return strchr(s, '@') ? "(a URL with user info, not shown)" : s;
}

static const char *why(CURLUcode rc)
{
	switch (rc) {
	case CURLUE_BAD_SCHEME: return "not a URL (expected scheme://...)";
	case CURLUE_BAD_SLASHES: return "expected '//' after the scheme";
	case CURLUE_NO_HOST: return "no host";
	case CURLUE_BAD_HOSTNAME: return "bad host name";
	case CURLUE_BAD_IPV6: return "bad IPv6 address (write it in brackets: [::1])";
	case CURLUE_BAD_PORT_NUMBER: return "bad port (expected 0..65535)";
	case CURLUE_BAD_FILE_URL:
		return "a file URL needs an absolute path (file:///dir)";
	case CURLUE_MALFORMED_INPUT: return "a control character in it";
	case CURLUE_BAD_LOGIN: case CURLUE_BAD_USER: case CURLUE_BAD_PASSWORD:
		return "bad user name or password";
	default: return curl_url_strerror(rc);
	}
}

/* Part p of h copied into *out (NULL when absent).  0, or -ENOMEM. */
static int part(CURLU *h, CURLUPart p, char **out)
{
	char *v = NULL;
	CURLUcode rc = curl_url_get(h, p, &v, 0);

	*out = NULL;
	if (rc == CURLUE_OUT_OF_MEMORY)
		return -ENOMEM;
	if (rc != CURLUE_OK)
		return 0; /* absent */
	*out = strdup(v);
	curl_free(v);
	return *out ? 0 : -ENOMEM;
}

/* "[fe80::1]" + "eth0" -> "[fe80::1%25eth0]", in place of *host.  A
 * zone is an interface name: RFC 6874's unreserved characters only
 * (curl lets others by); -EINVAL otherwise. */
static int add_zone(char **host, const char *zone)
{
	size_t n = strlen(*host);
	char *h = NULL;

	if (!zone[0] || zone[strspn(zone, "abcdefghijklmnopqrstuvwxyz"
				    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~")])
		return -EINVAL;
	if (n < 2 || (*host)[n - 1] != ']')
		return 0;
	if (asprintf(&h, "%.*s%%25%s]", (int)(n - 1), *host, zone) < 0)
		return -ENOMEM;
	free(*host);
	*host = h;
	return 0;
}

static int copy_parts(CURLU *h, struct sr_url *u)
{
	char *port = NULL, *zone = NULL;
	int rc;

	rc = part(h, CURLUPART_SCHEME, &u->scheme);
	rc = rc ? rc : part(h, CURLUPART_USER, &u->user);
	rc = rc ? rc : part(h, CURLUPART_PASSWORD, &u->password);
	rc = rc ? rc : part(h, CURLUPART_HOST, &u->host);
	rc = rc ? rc : part(h, CURLUPART_ZONEID, &zone);
	rc = rc ? rc : part(h, CURLUPART_PORT, &port);
	rc = rc ? rc : part(h, CURLUPART_PATH, &u->path);
	rc = rc ? rc : part(h, CURLUPART_QUERY, &u->query);
	rc = rc ? rc : part(h, CURLUPART_FRAGMENT, &u->fragment);
	if (rc == 0 && !u->host)
		u->host = strdup("");
	if (rc == 0 && !u->path)
		u->path = strdup("/");
	if (rc == 0 && (!u->host || !u->path || !u->scheme))
		rc = -ENOMEM;
	if (rc == 0 && zone)
		rc = add_zone(&u->host, zone);
	if (rc == 0 && port)
		u->port = atoi(port); /* curl checked it: 0..65535 */
	free(port);
	free(zone);
	return rc;
}

/* Whether host, as curl gave it back, is what curl reads again when an
 * origin carries it: curl decodes a host's %XX after its numeric IPv4
 * check, so "1%35" is the host "15", which reads back as "0.0.0.15", and
 * "%25" decodes to a '%' that would be decoded a second time (fuzz_url).
 * A bracketed IPv6 host (its zone is "%25" on purpose) is curl's own
 * form.  1 stable, 0 not, -ENOMEM. */
static int host_stable(const char *host)
{
	CURLU *h;
	char *url = NULL, *back = NULL;
	int rc = 0;

	if (!host[0] || host[0] == '[')
		return 1;
	if (strchr(host, '%'))
		return 0;
	h = curl_url();
	if (!h || asprintf(&url, "http://%s/", host) < 0) {
		url = NULL;
		rc = -ENOMEM;
		goto out;
	}
	if (curl_url_set(h, CURLUPART_URL, url, URL_FLAGS) == CURLUE_OK &&
	    curl_url_get(h, CURLUPART_HOST, &back, 0) == CURLUE_OK)
		rc = !strcmp(back, host);
out:
	curl_free(back);
	free(url);
	curl_url_cleanup(h);
	return rc;
}

int sr_url_parse(const char *s, struct sr_url *u, struct sr_err *e)
{
	CURLU *h = NULL;
	CURLUcode cu;
	int rc, stable;

	memset(u, 0, sizeof *u);
	u->port = -1;
	if (!s)
		return sr_err_set(e, -EINVAL, "URL: missing");
	h = curl_url();
	if (!h)
		return sr_err_set(e, -ENOMEM, "out of memory");
	cu = curl_url_set(h, CURLUPART_URL, s, URL_FLAGS);
	if (cu == CURLUE_OUT_OF_MEMORY) {
		rc = sr_err_set(e, -ENOMEM, "out of memory");
	} else if (cu != CURLUE_OK) {
		rc = sr_err_set(e, -EINVAL, "'%.200s': %s", shown(s), why(cu));
	} else {
		rc = copy_parts(h, u);
		stable = rc ? 1 : host_stable(u->host);
		if (stable < 0)
			rc = stable;
		if (rc == 0 && !stable) /* a host written in %XX */
			rc = sr_err_set(e, -EINVAL, "'%.200s': %s", shown(s),
					why(CURLUE_BAD_HOSTNAME));
		else if (rc == -EINVAL)
			sr_err_set(e, rc, "'%.200s': bad IPv6 zone (an interface "
				   "name)", shown(s));
		else if (rc)
			sr_err_set(e, rc, "out of memory");
	}
	curl_url_cleanup(h);
	if (rc)
		sr_url_free(u);
	return rc;
}

int sr_url_parse_http(const char *s, const char *what, struct sr_url *u,
		      struct sr_err *e)
{
	int rc = sr_url_parse(s, u, e);

	if (rc) {
		sr_err_prefix(e, "%s", what);
		return rc;
	}
	if (strcmp(u->scheme, "http") && strcmp(u->scheme, "https")) {
		sr_url_free(u);
		return sr_err_set(e, -EINVAL, "%s: '%.200s': expected an http:// or "
				  "https:// URL", what, shown(s));
	}
	if (!u->host[0]) {
		sr_url_free(u);
		return sr_err_set(e, -EINVAL, "%s: '%.200s': no host", what, shown(s));
	}
	return 0;
}

int sr_url_scheme(const char *s, char *buf, size_t n)
{
	struct sr_url u;
	size_t k = 0;
	int rc;

	if (n)
		buf[0] = '\0';
	if (!s)
		return 0;
	rc = sr_url_parse(s, &u, NULL);
	if (rc == -ENOMEM)
		return rc;
	if (rc == 0) {
		rc = strlen(u.scheme) < n;
		if (rc)
			memcpy(buf, u.scheme, strlen(u.scheme) + 1);
		sr_url_free(&u);
		return rc;
	}
	/* curl refused it; "scheme://" (RFC 3986: ALPHA *( ALPHA / DIGIT /
	 * "+" / "-" / "." )) still makes it a URL, one with an error */
	if (!isalpha((unsigned char)s[0]))
		return 0;
	while (isalnum((unsigned char)s[k]) || s[k] == '+' || s[k] == '-' ||
	       s[k] == '.')
		k++;
	if (strncmp(s + k, "://", 3) != 0 || k >= n)
		return 0;
	for (size_t i = 0; i < k; i++)
		buf[i] = (char)tolower((unsigned char)s[i]);
	buf[k] = '\0';
	return 1;
}

char *sr_url_authority(const struct sr_url *u)
{
	char *out = NULL;

	if (u->port >= 0 ? asprintf(&out, "%s:%d", u->host, u->port) < 0
			 : asprintf(&out, "%s", u->host) < 0)
		return NULL;
	return out;
}

char *sr_url_origin(const struct sr_url *u)
{
	char *auth = sr_url_authority(u), *out = NULL;

	if (auth && asprintf(&out, "%s://%s", u->scheme, auth) < 0)
		out = NULL;
	free(auth);
	return out;
}

int sr_url_is_loopback(const char *url)
{
	struct sr_url u;
	struct in_addr a4;
	int yes = 0;

	if (sr_url_parse(url, &u, NULL))
		return 0;
	if (!strcasecmp(u.host, "localhost") || !strcmp(u.host, "[::1]"))
		yes = 1;
	else if (inet_pton(AF_INET, u.host, &a4) == 1)
		yes = (ntohl(a4.s_addr) >> 24) == 127;
	sr_url_free(&u);
	return yes;
}

int sr_url_tls_or_loopback(const char *url)
{
	struct sr_url u;
	int yes;

	if (sr_url_parse(url, &u, NULL))
		return 0;
	yes = !strcmp(u.scheme, "https") && u.host[0];
	sr_url_free(&u);
	return yes || sr_url_is_loopback(url);
}
