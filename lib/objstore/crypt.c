/*
 * crypt.c - the digests the object-store protocols need (OpenSSL):
 * Content-MD5, base64, and HMAC-SHA256 for Azure Shared Key.  SigV4 lives
 * in lib/common/sigv4.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "os_int.h"

void os_md5_b64(const void *data, size_t len, char out[25])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int ml = 0;

	out[0] = 0;
	if (!EVP_Digest(data, len, md, &ml, EVP_md5(), NULL) || ml != 16)
		return;
	EVP_EncodeBlock((unsigned char *)out, md, 16);
}

int os_md5_b64_fd(int fd, uint64_t off, uint64_t len, char out[25])
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int ml = 0;
	char *buf = malloc(1u << 20);
	uint64_t done = 0;
	int rc = 0;

	out[0] = 0;
	if (!ctx || !buf || !EVP_DigestInit_ex(ctx, EVP_md5(), NULL)) {
		rc = -ENOMEM;
		goto out;
	}
	while (done < len) {
		size_t want = len - done > (1u << 20) ? (1u << 20)
						      : (size_t)(len - done);
		ssize_t got = pread(fd, buf, want, (off_t)(off + done));

		if (got <= 0) {
			rc = got < 0 ? -errno : -EIO;
			goto out;
		}
		EVP_DigestUpdate(ctx, buf, (size_t)got);
		done += (uint64_t)got;
	}
	if (!EVP_DigestFinal_ex(ctx, md, &ml) || ml != 16) {
		rc = -EINVAL;
		goto out;
	}
	EVP_EncodeBlock((unsigned char *)out, md, 16);
out:
	free(buf);
	EVP_MD_CTX_free(ctx);
	return rc;
}

char *os_b64_enc(const void *data, size_t len)
{
	char *o = malloc(4 * ((len + 2) / 3) + 1);

	if (o)
		EVP_EncodeBlock((unsigned char *)o, data, (int)len);
	return o;
}

unsigned char *os_b64_dec(const char *s, size_t *len)
{
	size_t sl = strlen(s);
	unsigned char *o;
	int n;

	if (sl % 4)
		return NULL;
	o = malloc(sl / 4 * 3 + 1);
	if (!o)
		return NULL;
	n = EVP_DecodeBlock(o, (const unsigned char *)s, (int)sl);
	if (n < 0) {
		free(o);
		return NULL;
	}
	/* EVP_DecodeBlock counts the padding as zero bytes */
	while (sl && s[sl - 1] == '=') {
		sl--;
		n--;
	}
	*len = (size_t)n;
	return o;
}

int os_hmac_sha256_b64(const void *key, size_t klen, const char *msg,
		       size_t mlen, char out[45])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int ml = 0;

	out[0] = 0;
	if (!HMAC(EVP_sha256(), key, (int)klen, (const unsigned char *)msg,
		  mlen, md, &ml) || ml != 32)
		return -EINVAL;
	EVP_EncodeBlock((unsigned char *)out, md, 32);
	return 0;
}
