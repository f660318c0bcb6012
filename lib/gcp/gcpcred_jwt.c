/*
 * gcpcred_jwt.c - a service account's JWT assertion (RFC 7519, RS256 =
 * RSASSA-PKCS1-v1_5 with SHA-256 through OpenSSL), as Google's client
 * libraries build it:
 *
 *   base64url({"alg":"RS256","typ":"JWT","kid":KEY_ID})
 *   "." base64url({"iss":EMAIL,"scope":SCOPE,"aud":TOKEN_URI,
 *                  "iat":NOW,"exp":NOW+3600})
 *   "." base64url(RS256(first two parts, private_key))
 *
 * base64url: the URL-safe alphabet, no padding.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include "gcp/gcpcred.h"

#define JWT_LIFE_S 3600

/* base64url of p[0..n) appended to *buf at *len (grown). */
static int b64url(const unsigned char *p, size_t n, char **buf, size_t *len)
{
	size_t need = 4 * ((n + 2) / 3) + 1;
	char *nb = realloc(*buf, *len + need + 1);
	int w;

	if (!nb)
		return -ENOMEM;
	*buf = nb;
	w = EVP_EncodeBlock((unsigned char *)nb + *len, p, (int)n);
	for (int i = 0; i < w; i++) {
		char *c = &nb[*len + (size_t)i];

		if (*c == '+')
			*c = '-';
		else if (*c == '/')
			*c = '_';
	}
	while (w > 0 && nb[*len + (size_t)w - 1] == '=')
		w--;
	*len += (size_t)w;
	nb[*len] = '\0';
	return 0;
}

static int b64url_json(json_t *v, char **buf, size_t *len)
{
	char *s = json_dumps(v, JSON_COMPACT | JSON_PRESERVE_ORDER);
	int rc;

	if (!s)
		return -ENOMEM;
	rc = b64url((const unsigned char *)s, strlen(s), buf, len);
	free(s);
	return rc;
}

int gcpcred_jwt(const char *email, const char *key_id, const char *pem,
		const char *aud, const char *scope, int64_t now_s, char **out,
		struct sr_err *e)
{
	json_t *hdr = json_pack("{ss ss}", "alg", "RS256", "typ", "JWT");
	json_t *cl = json_pack("{ss ss ss sI sI}", "iss", email, "scope", scope,
			       "aud", aud, "iat", (json_int_t)now_s,
			       "exp", (json_int_t)(now_s + JWT_LIFE_S));
	BIO *bio = NULL;
	EVP_PKEY *key = NULL;
	EVP_MD_CTX *md = NULL;
	unsigned char sig[1024];
	size_t siglen = sizeof sig, len = 0;
	char *buf = NULL;
	int rc = -ENOMEM;

	*out = NULL;
	if (!hdr || !cl)
		goto fail;
	if (key_id && *key_id && json_object_set_new(hdr, "kid",
						     json_string(key_id)))
		goto fail;
	if (b64url_json(hdr, &buf, &len))
		goto fail;
	buf[len++] = '.';
	buf[len] = '\0';
	if (b64url_json(cl, &buf, &len))
		goto fail;
	bio = BIO_new_mem_buf(pem, -1);
	if (!bio)
		goto fail;
	key = PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL);
	if (!key || EVP_PKEY_base_id(key) != EVP_PKEY_RSA) {
		rc = sr_err_set(e, -SR_EPARSE, "service account %s: "
				"\"private_key\": expected an RSA private key "
				"in PEM", email);
		goto out;
	}
	md = EVP_MD_CTX_new();
	if (!md || EVP_DigestSignInit(md, NULL, EVP_sha256(), NULL, key) != 1 ||
	    EVP_DigestSign(md, sig, &siglen, (unsigned char *)buf, len) != 1) {
		rc = sr_err_set(e, -EIO, "service account %s: RS256 signing "
				"failed", email);
		goto out;
	}
	buf[len++] = '.';
	buf[len] = '\0';
	if (b64url(sig, siglen, &buf, &len))
		goto fail;
	*out = buf;
	buf = NULL;
	rc = 0;
	goto out;
fail:
	rc = sr_err_set(e, -ENOMEM, "out of memory");
out:
	free(buf);
	EVP_MD_CTX_free(md);
	EVP_PKEY_free(key);
	BIO_free(bio);
	json_decref(hdr);
	json_decref(cl);
	return rc;
}
