/*
 * arm_cert.c - the client assertion of the Entra certificate credential
 * (arm.h, CREDENTIALS): a JWT
 *
 *   header  {"alg":"PS256","typ":"JWT","x5t#S256":base64url(SHA-256 of
 *            the DER certificate)}
 *   claims  {"aud":<token endpoint>,"iss":<client id>,"sub":<client id>,
 *            "jti":<random hex>,"nbf":now,"iat":now,"exp":now+600}
 *
 * signed PS256 (RSASSA-PSS, SHA-256, salt of the digest's length) with the
 * private key of AZURE_CLIENT_CERTIFICATE_PATH (a PEM file holding the key
 * and the certificate, as the Azure SDKs read it), as MSAL signs it
 * (tests/conformance_azure compares the two and verifies the signature).
 * The key is read for each assertion and freed at once.
 */
#include <jansson.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <openssl/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "arm_int.h"
#include "common/random.h"

/* base64url without padding of p[0..n) into a malloc'd string. */
static char *b64url(const unsigned char *p, size_t n)
{
	char *s = malloc(4 * ((n + 2) / 3) + 1);
	int len;

	if (!s)
		return NULL;
	len = EVP_EncodeBlock((unsigned char *)s, p, (int)n);
	while (len > 0 && s[len - 1] == '=')
		len--;
	s[len] = '\0';
	for (char *q = s; *q; q++)
		*q = *q == '+' ? '-' : *q == '/' ? '_' : *q;
	return s;
}

static char *b64url_json(json_t *v)
{
	char *txt = json_dumps(v, JSON_COMPACT);
	char *s = txt ? b64url((const unsigned char *)txt, strlen(txt)) : NULL;

	free(txt);
	return s;
}

int arm__cert_assertion(const struct arm *a, const char *aud, char **out,
			struct sr_err *e)
{
	FILE *f = fopen(a->cert_path, "r");
	EVP_PKEY *key = NULL;
	X509 *cert = NULL;
	EVP_MD_CTX *md = NULL;
	EVP_PKEY_CTX *pctx = NULL; /* md's: freed with it */
	unsigned char *der = NULL, thumb[32], sig[1024];
	char jti[33], *h = NULL, *c = NULL, *s = NULL, *signing = NULL;
	json_t *hj = NULL, *cj = NULL;
	size_t siglen = sizeof sig;
	int64_t now = (int64_t)time(NULL);
	int dlen, rc = 0;

	*out = NULL;
	if (!f)
		return sr_err_set(e, -errno, "AZURE_CLIENT_CERTIFICATE_PATH %s: %s",
				  a->cert_path, strerror(errno));
	key = PEM_read_PrivateKey(f, NULL, NULL, NULL);
	rewind(f);
	cert = PEM_read_X509(f, NULL, NULL, NULL);
	fclose(f);
	if (!key || !cert) {
		rc = sr_err_set(e, -EINVAL, "AZURE_CLIENT_CERTIFICATE_PATH %s: "
				"expected a PEM private key and certificate",
				a->cert_path);
		goto out;
	}
	dlen = i2d_X509(cert, &der);
	if (dlen <= 0 || !EVP_Digest(der, (size_t)dlen, thumb, NULL,
				     EVP_sha256(), NULL) ||
	    sr_random_hex(jti, 16)) {
		rc = sr_err_set(e, -EIO, "azure certificate credential: cannot "
				"hash the certificate");
		goto out;
	}
	h = b64url(thumb, sizeof thumb);
	hj = json_pack("{s:s, s:s, s:s}", "alg", "PS256", "typ", "JWT",
		       "x5t#S256", h ? h : "");
	cj = json_pack("{s:s, s:s, s:s, s:s, s:I, s:I, s:I}", "aud", aud,
		       "iss", a->client_id, "sub", a->client_id, "jti", jti,
		       "nbf", (json_int_t)now, "iat", (json_int_t)now,
		       "exp", (json_int_t)(now + 600));
	free(h);
	h = hj ? b64url_json(hj) : NULL;
	c = cj ? b64url_json(cj) : NULL;
	if (!h || !c || !(signing = malloc(strlen(h) + strlen(c) + 2))) {
		rc = sr_err_set(e, -ENOMEM, "out of memory");
		goto out;
	}
	sprintf(signing, "%s.%s", h, c);
	md = EVP_MD_CTX_new();
	if (!md || EVP_DigestSignInit(md, &pctx, EVP_sha256(), NULL, key) != 1 ||
	    EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PSS_PADDING) != 1 ||
	    EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx, RSA_PSS_SALTLEN_DIGEST) != 1 ||
	    EVP_DigestSign(md, sig, &siglen, (const unsigned char *)signing,
			   strlen(signing)) != 1 || !(s = b64url(sig, siglen))) {
		rc = sr_err_set(e, -EINVAL, "AZURE_CLIENT_CERTIFICATE_PATH %s: "
				"cannot sign with its key (RSA expected)",
				a->cert_path);
		goto out;
	}
	*out = malloc(strlen(signing) + strlen(s) + 2);
	if (!*out) {
		rc = sr_err_set(e, -ENOMEM, "out of memory");
		goto out;
	}
	sprintf(*out, "%s.%s", signing, s);
out:
	EVP_MD_CTX_free(md);
	EVP_PKEY_free(key);
	X509_free(cert);
	OPENSSL_free(der);
	json_decref(hj);
	json_decref(cj);
	free(h);
	free(c);
	free(s);
	free(signing);
	return rc;
}
