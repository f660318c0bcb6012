/*
 * sigv4.c - AWS Signature Version 4 (see sigv4.h).
 *
 * The four steps, as AWS documents them:
 *
 *   1. canonical request =
 *          METHOD '\n' canonical-uri '\n' canonical-query '\n'
 *          (lower-name ':' trimmed-value '\n')* '\n'
 *          signed-headers '\n' payload-hash
 *   2. string to sign =
 *          "AWS4-HMAC-SHA256" '\n' amz-date '\n'
 *          yyyymmdd '/' region '/' service "/aws4_request" '\n'
 *          hex(sha256(canonical request))
 *   3. signing key = HMAC(HMAC(HMAC(HMAC("AWS4" secret, yyyymmdd),
 *                                   region), service), "aws4_request")
 *   4. signature = hex(HMAC(signing key, string to sign))
 *
 * Strings are built with open_memstream(); a failed fclose() is the one
 * out-of-memory check for a whole string.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>

#include "sigv4.h"

#define ALGO "AWS4-HMAC-SHA256"

struct hdr {
	char *name;  /* lower-case, malloc'd */
	char *value; /* trimmed, collapsed, malloc'd */
};

void sr_sigv4_sha256_hex(const void *data, size_t len, char out[65])
{
	unsigned char md[SHA256_DIGEST_LENGTH];
	static const char hx[] = "0123456789abcdef";

	SHA256(data != NULL ? data : (const void *)"", len, md);
	for (int i = 0; i < SHA256_DIGEST_LENGTH; i++) {
		out[2 * i] = hx[md[i] >> 4];
		out[2 * i + 1] = hx[md[i] & 15];
	}
	out[64] = '\0';
}

void sr_sigv4_amz_date(time_t t, char out[17])
{
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(out, 17, "%Y%m%dT%H%M%SZ", &tm);
}

static int unreserved(unsigned char c)
{
	return isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~';
}

char *sr_sigv4_uri_encode(const char *s, size_t len, int keep_slash)
{
	static const char hx[] = "0123456789ABCDEF";
	char *out = malloc(len * 3 + 1);
	size_t o = 0;

	if (out == NULL)
		return NULL;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (unreserved(c) || (keep_slash && c == '/')) {
			out[o++] = (char)c;
		} else {
			out[o++] = '%';
			out[o++] = hx[c >> 4];
			out[o++] = hx[c & 15];
		}
	}
	out[o] = '\0';
	return out;
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

char *sr_sigv4_uri_decode(const char *s, size_t len, int form,
			  size_t *out_len)
{
	char *out = malloc(len + 1);
	size_t o = 0;

	if (out == NULL)
		return NULL;
	for (size_t i = 0; i < len; i++) {
		int hi, lo;

		if (s[i] == '%' && i + 2 < len) {
			hi = hexval((unsigned char)s[i + 1]);
			lo = hexval((unsigned char)s[i + 2]);
			if (hi >= 0 && lo >= 0) {
				out[o++] = (char)(hi * 16 + lo);
				i += 2;
				continue;
			}
		}
		out[o++] = (form && s[i] == '+') ? ' ' : s[i];
	}
	out[o] = '\0';
	if (out_len != NULL)
		*out_len = o;
	return out;
}

/* ---- canonical URI ---------------------------------------------------- */

static char *canonical_uri(const struct sr_sigv4_req *r)
{
	const char *p = (r->path != NULL && r->path[0] != '\0') ? r->path : "/";
	size_t n = strlen(p), nseg = 0, o = 0;
	const char **seg = NULL;
	size_t *seglen = NULL;
	char *norm = NULL, *out = NULL;

	if (r->s3_path)
		return strdup(p);
	seg = calloc(n + 1, sizeof(*seg));
	seglen = calloc(n + 1, sizeof(*seglen));
	norm = malloc(n + 2);
	if (seg == NULL || seglen == NULL || norm == NULL)
		goto out;
	for (size_t i = 0; i < n;) {
		size_t j = i;

		while (j < n && p[j] != '/')
			j++;
		if (j == i || (j - i == 1 && p[i] == '.')) {
			/* empty or "." segment: dropped */
		} else if (j - i == 2 && p[i] == '.' && p[i + 1] == '.') {
			if (nseg > 0)
				nseg--;
		} else {
			seg[nseg] = p + i;
			seglen[nseg++] = j - i;
		}
		i = j + 1;
	}
	if (p[0] == '/')
		norm[o++] = '/';
	for (size_t k = 0; k < nseg; k++) {
		if (k > 0)
			norm[o++] = '/';
		memcpy(norm + o, seg[k], seglen[k]);
		o += seglen[k];
	}
	if (nseg > 0 && p[n - 1] == '/')
		norm[o++] = '/';
	norm[o] = '\0';
	out = sr_sigv4_uri_encode(norm, o, 1);
out:
	free(seg);
	free(seglen);
	free(norm);
	return out;
}

/* ---- canonical query -------------------------------------------------- */

struct qpair {
	char *k; /* encoded */
	char *v; /* encoded */
};

static int qpair_cmp(const void *a, const void *b)
{
	const struct qpair *x = a, *y = b;
	int c = strcmp(x->k, y->k);

	return c != 0 ? c : strcmp(x->v, y->v);
}

static char *encode_decoded(const char *s, size_t len)
{
	size_t dl = 0;
	char *d = sr_sigv4_uri_decode(s, len, 0, &dl);
	char *enc;

	if (d == NULL)
		return NULL;
	enc = sr_sigv4_uri_encode(d, dl, 0);
	free(d);
	return enc;
}

static char *canonical_query(const char *q)
{
	struct qpair *pv = NULL;
	size_t np = 0, cap = 0;
	char *buf = NULL;
	size_t blen = 0;
	FILE *f = NULL;
	int ok = 0;

	if (q == NULL || q[0] == '\0')
		return strdup("");
	for (const char *s = q; *s != '\0';) {
		const char *amp = strchr(s, '&');
		size_t len = amp != NULL ? (size_t)(amp - s) : strlen(s);
		const char *eq = memchr(s, '=', len);
		size_t kl = eq != NULL ? (size_t)(eq - s) : len;

		if (len > 0) {
			if (np == cap) {
				size_t nc = cap ? cap * 2 : 8;
				struct qpair *t = realloc(pv, nc * sizeof(*pv));

				if (t == NULL)
					goto out;
				pv = t;
				cap = nc;
			}
			pv[np].k = encode_decoded(s, kl);
			pv[np].v = eq != NULL ? encode_decoded(eq + 1, len - kl - 1)
					      : strdup("");
			np++;
			if (pv[np - 1].k == NULL || pv[np - 1].v == NULL)
				goto out;
		}
		s += len;
		if (*s == '&')
			s++;
	}
	qsort(pv, np, sizeof(*pv), qpair_cmp);
	f = open_memstream(&buf, &blen);
	if (f == NULL)
		goto out;
	for (size_t i = 0; i < np; i++)
		fprintf(f, "%s%s=%s", i ? "&" : "", pv[i].k, pv[i].v);
	ok = fclose(f) == 0;
	f = NULL;
out:
	for (size_t i = 0; i < np; i++) {
		free(pv[i].k);
		free(pv[i].v);
	}
	free(pv);
	if (!ok) {
		free(buf);
		buf = NULL;
	}
	return buf;
}

/* ---- headers ---------------------------------------------------------- */

static int hdr_cmp(const void *a, const void *b)
{
	const struct hdr *x = a, *y = b;

	return strcmp(x->name, y->name);
}

/* Trim and collapse runs of whitespace into one space.  Caller frees. */
static char *clean_value(const char *v)
{
	char *out = malloc(strlen(v) + 1);
	size_t o = 0;
	int sp = 0;

	if (out == NULL)
		return NULL;
	while (isspace((unsigned char)*v))
		v++;
	for (; *v != '\0'; v++) {
		if (isspace((unsigned char)*v)) {
			sp = 1;
			continue;
		}
		if (sp && o > 0)
			out[o++] = ' ';
		sp = 0;
		out[o++] = *v;
	}
	out[o] = '\0';
	return out;
}

static int hdr_add(struct hdr *h, size_t *n, const char *name, size_t nlen,
		   const char *value)
{
	char *nm = strndup(name, nlen);
	char *v = clean_value(value);

	if (nm == NULL || v == NULL) {
		free(nm);
		free(v);
		return -ENOMEM;
	}
	for (char *c = nm; *c != '\0'; c++)
		*c = (char)tolower((unsigned char)*c);
	h[*n].name = nm;
	h[*n].value = v;
	(*n)++;
	return 0;
}

static void hdrs_free(struct hdr *h, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(h[i].name);
		free(h[i].value);
	}
	free(h);
}

/* Everything signing needs, derived once from the request. */
struct signing {
	char date[17];          /* amz date */
	char payload[65 + 32];  /* payload hash or UNSIGNED-PAYLOAD */
	char *canonical;
	char *signed_headers;
	char *sts;
	char scope[160];
};

static void signing_free(struct signing *s)
{
	free(s->canonical);
	free(s->signed_headers);
	free(s->sts);
}

static int check_req(const struct sr_sigv4_req *r,
		     const struct sr_sigv4_creds *c, struct sr_err *e)
{
	if (r == NULL || c == NULL)
		return sr_err_set(e, -EINVAL, "sigv4: no request or credentials");
	if (r->method == NULL || r->method[0] == '\0')
		return sr_err_set(e, -EINVAL, "sigv4: method: missing");
	if (r->host == NULL || r->host[0] == '\0')
		return sr_err_set(e, -EINVAL, "sigv4: host: missing");
	if (r->region == NULL || r->region[0] == '\0')
		return sr_err_set(e, -EINVAL, "sigv4: region: missing");
	if (r->service == NULL || r->service[0] == '\0')
		return sr_err_set(e, -EINVAL, "sigv4: service: missing");
	if (c->access_key_id == NULL || c->access_key_id[0] == '\0')
		return sr_err_set(e, -EINVAL, "sigv4: access key id: missing");
	if (c->secret_access_key == NULL || c->secret_access_key[0] == '\0')
		return sr_err_set(e, -EINVAL, "sigv4: secret access key: missing");
	if (r->payload_hash != NULL && strlen(r->payload_hash) > 64)
		return sr_err_set(e, -EINVAL, "sigv4: payload hash: too long");
	return 0;
}

static int build_signing(const struct sr_sigv4_req *r,
			 const struct sr_sigv4_creds *c, struct signing *s,
			 struct sr_err *e)
{
	struct hdr *h = NULL;
	size_t nh = 0, cap = 4;
	char *uri = NULL, *query = NULL, *buf = NULL;
	size_t blen = 0;
	char ymd[9], crh[65];
	FILE *f = NULL;
	int rc;

	memset(s, 0, sizeof(*s));
	rc = check_req(r, c, e);
	if (rc < 0)
		goto out;
	sr_sigv4_amz_date(r->when, s->date);
	if (r->payload_hash != NULL)
		snprintf(s->payload, sizeof(s->payload), "%s", r->payload_hash);
	else
		sr_sigv4_sha256_hex(r->body, r->body_len, s->payload);
	memcpy(ymd, s->date, 8);
	ymd[8] = '\0';
	snprintf(s->scope, sizeof(s->scope), "%s/%s/%s/aws4_request", ymd,
		 r->region, r->service);

	for (const char *const *p = r->headers; p != NULL && *p != NULL; p++)
		cap++;
	rc = -ENOMEM;
	h = calloc(cap, sizeof(*h));
	if (h == NULL)
		goto oom;
	if (hdr_add(h, &nh, "host", 4, r->host) < 0 ||
	    hdr_add(h, &nh, "x-amz-date", 10, s->date) < 0)
		goto oom;
	if (r->add_content_sha256 &&
	    hdr_add(h, &nh, "x-amz-content-sha256", 20, s->payload) < 0)
		goto oom;
	if (c->session_token != NULL && c->session_token[0] != '\0' &&
	    hdr_add(h, &nh, "x-amz-security-token", 20, c->session_token) < 0)
		goto oom;
	for (const char *const *p = r->headers; p != NULL && *p != NULL; p++) {
		const char *colon = strchr(*p, ':');

		if (colon == NULL || colon == *p) {
			rc = sr_err_set(e, -EINVAL,
					"sigv4: header %zu: expected 'Name: value'",
					(size_t)(p - r->headers));
			goto out;
		}
		if (hdr_add(h, &nh, *p, (size_t)(colon - *p), colon + 1) < 0)
			goto oom;
		if (strcmp(h[nh - 1].name, "host") == 0 ||
		    strcmp(h[nh - 1].name, "authorization") == 0 ||
		    strcmp(h[nh - 1].name, "x-amz-date") == 0) {
			rc = sr_err_set(e, -EINVAL,
					"sigv4: header '%s': set by the signer",
					h[nh - 1].name);
			goto out;
		}
	}
	qsort(h, nh, sizeof(*h), hdr_cmp);

	uri = canonical_uri(r);
	query = canonical_query(r->query);
	if (uri == NULL || query == NULL)
		goto oom;

	/* signed headers: names, repeated ones once */
	f = open_memstream(&buf, &blen);
	if (f == NULL)
		goto oom;
	for (size_t i = 0; i < nh; i++) {
		if (i > 0 && strcmp(h[i].name, h[i - 1].name) == 0)
			continue;
		fprintf(f, "%s%s", i ? ";" : "", h[i].name);
	}
	if (fclose(f) != 0) {
		f = NULL;
		goto oom;
	}
	f = NULL;
	s->signed_headers = buf;
	buf = NULL;

	f = open_memstream(&buf, &blen);
	if (f == NULL)
		goto oom;
	fprintf(f, "%s\n%s\n%s\n", r->method, uri, query);
	for (size_t i = 0; i < nh; i++) {
		if (i > 0 && strcmp(h[i].name, h[i - 1].name) == 0) {
			fprintf(f, ",%s", h[i].value);
			continue;
		}
		fprintf(f, "%s%s:%s", i ? "\n" : "", h[i].name, h[i].value);
	}
	fprintf(f, "\n\n%s\n%s", s->signed_headers, s->payload);
	if (fclose(f) != 0) {
		f = NULL;
		goto oom;
	}
	f = NULL;
	s->canonical = buf;
	buf = NULL;

	sr_sigv4_sha256_hex(s->canonical, strlen(s->canonical), crh);
	if (asprintf(&s->sts, ALGO "\n%s\n%s\n%s", s->date, s->scope, crh) < 0) {
		s->sts = NULL;
		goto oom;
	}
	rc = 0;
	goto out;
oom:
	rc = sr_err_set(e, -ENOMEM, "sigv4: out of memory");
out:
	if (f != NULL)
		fclose(f);
	free(buf);
	free(uri);
	free(query);
	hdrs_free(h, nh);
	if (rc < 0)
		signing_free(s);
	return rc;
}

int sr_sigv4_canonical(const struct sr_sigv4_req *r,
		       const struct sr_sigv4_creds *c, char **canonical,
		       char **sts, char **signed_headers, struct sr_err *e)
{
	struct signing s;
	int rc = build_signing(r, c, &s, e);

	if (rc < 0)
		return rc;
	if (canonical != NULL) {
		*canonical = s.canonical;
		s.canonical = NULL;
	}
	if (sts != NULL) {
		*sts = s.sts;
		s.sts = NULL;
	}
	if (signed_headers != NULL) {
		*signed_headers = s.signed_headers;
		s.signed_headers = NULL;
	}
	signing_free(&s);
	return 0;
}

static void hmac(const void *key, size_t klen, const char *msg,
		 unsigned char out[32])
{
	unsigned int olen = 32;

	HMAC(EVP_sha256(), key, (int)klen, (const unsigned char *)msg,
	     strlen(msg), out, &olen);
}

void sr_sigv4_headers_free(char **headers)
{
	if (headers == NULL)
		return;
	for (char **p = headers; *p != NULL; p++)
		free(*p);
	free(headers);
}

int sr_sigv4_sign(const struct sr_sigv4_req *r, const struct sr_sigv4_creds *c,
		  char ***out_headers, struct sr_err *e)
{
	struct signing s;
	unsigned char k[32], k2[32];
	char *kdate = NULL, ymd[9], sig[65];
	char **out = NULL;
	size_t n = 0;
	static const char hx[] = "0123456789abcdef";
	int rc;

	*out_headers = NULL;
	rc = build_signing(r, c, &s, e);
	if (rc < 0)
		return rc;
	rc = -ENOMEM;
	if (asprintf(&kdate, "AWS4%s", c->secret_access_key) < 0) {
		kdate = NULL;
		goto oom;
	}
	memcpy(ymd, s.date, 8);
	ymd[8] = '\0';
	hmac(kdate, strlen(kdate), ymd, k);
	hmac(k, 32, r->region, k2);
	hmac(k2, 32, r->service, k);
	hmac(k, 32, "aws4_request", k2);
	hmac(k2, 32, s.sts, k);
	for (int i = 0; i < 32; i++) {
		sig[2 * i] = hx[k[i] >> 4];
		sig[2 * i + 1] = hx[k[i] & 15];
	}
	sig[64] = '\0';

	out = calloc(5, sizeof(*out));
	if (out == NULL)
		goto oom;
	if (asprintf(&out[n], "X-Amz-Date: %s", s.date) < 0)
		goto oom_n;
	n++;
	if (r->add_content_sha256) {
		if (asprintf(&out[n], "X-Amz-Content-Sha256: %s", s.payload) < 0)
			goto oom_n;
		n++;
	}
	if (c->session_token != NULL && c->session_token[0] != '\0') {
		if (asprintf(&out[n], "X-Amz-Security-Token: %s",
			     c->session_token) < 0)
			goto oom_n;
		n++;
	}
	if (asprintf(&out[n], "Authorization: " ALGO
		     " Credential=%s/%s, SignedHeaders=%s, Signature=%s",
		     c->access_key_id, s.scope, s.signed_headers, sig) < 0)
		goto oom_n;
	n++;
	*out_headers = out;
	out = NULL;
	rc = 0;
	goto out;
oom_n:
	out[n] = NULL; /* asprintf leaves it undefined on failure */
oom:
	rc = sr_err_set(e, -ENOMEM, "sigv4: out of memory");
out:
	if (kdate != NULL) {
		OPENSSL_cleanse(kdate, strlen(kdate));
		free(kdate);
	}
	OPENSSL_cleanse(k, sizeof(k));
	OPENSSL_cleanse(k2, sizeof(k2));
	sr_sigv4_headers_free(out);
	signing_free(&s);
	return rc;
}
