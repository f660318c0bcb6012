/*
 * crypt.c - the digests the object-store protocols need: Content-MD5,
 * base64 and HMAC-SHA256 for Azure Shared Key (OpenSSL), and CRC32C
 * (Castagnoli) for x-amz-checksum-crc32c, with the SSE4.2 instruction
 * where the CPU has it (about 20 times cheaper than MD5 per byte) and a
 * table otherwise.  SigV4 lives in lib/common/sigv4.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <pthread.h>
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

/* ---- CRC32C ------------------------------------------------------------------ */
static uint32_t crc_tab[256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;
static int crc_hw;

static void crc_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
		crc_tab[i] = c;
	}
#if defined(__x86_64__)
	__builtin_cpu_init();
	crc_hw = __builtin_cpu_supports("sse4.2");
#endif
}

#if defined(__x86_64__)
__attribute__((target("sse4.2")))
static uint32_t crc_sse42(uint32_t c, const unsigned char *p, size_t n)
{
	uint64_t c64;

	while (n && ((uintptr_t)p & 7)) {
		c = __builtin_ia32_crc32qi(c, *p++);
		n--;
	}
	c64 = c;
	for (; n >= 8; n -= 8, p += 8) {
		uint64_t v;

		memcpy(&v, p, 8);
		c64 = __builtin_ia32_crc32di(c64, v);
	}
	c = (uint32_t)c64;
	while (n--)
		c = __builtin_ia32_crc32qi(c, *p++);
	return c;
}
#endif

uint32_t os_crc32c(uint32_t crc, const void *data, size_t len)
{
	const unsigned char *p = data;
	uint32_t c = ~crc;

	pthread_once(&crc_once, crc_init);
#if defined(__x86_64__)
	if (crc_hw)
		return ~crc_sse42(c, p, len);
#endif
	while (len--)
		c = crc_tab[(c ^ *p++) & 0xff] ^ (c >> 8);
	return ~c;
}

void os_crc32c_b64(uint32_t crc, char out[9])
{
	unsigned char be[4] = { crc >> 24, crc >> 16, crc >> 8, crc };

	EVP_EncodeBlock((unsigned char *)out, be, 4);
}

int os_crc32c_b64_fd(int fd, uint64_t off, uint64_t len, char out[9])
{
	char *buf = malloc(1u << 20);
	uint64_t done = 0;
	uint32_t crc = 0;
	int rc = 0;

	out[0] = 0;
	if (!buf)
		return -ENOMEM;
	while (done < len) {
		size_t want = len - done > (1u << 20) ? (1u << 20)
						      : (size_t)(len - done);
		ssize_t got = pread(fd, buf, want, (off_t)(off + done));

		if (got <= 0) {
			rc = got < 0 ? -errno : -EIO;
			goto out;
		}
		crc = os_crc32c(crc, buf, (size_t)got);
		done += (uint64_t)got;
	}
	os_crc32c_b64(crc, out);
out:
	free(buf);
	return rc;
}

int os_md5_b64_src(const struct os_src *src, uint64_t off, uint64_t len,
		   char out[25])
{
	if (!src->mem)
		return os_md5_b64_fd(src->fd, off, len, out);
	os_md5_b64(src->mem + off, (size_t)len, out);
	return out[0] ? 0 : -ENOMEM;
}

int os_crc32c_b64_src(const struct os_src *src, uint64_t off, uint64_t len,
		      char out[9])
{
	if (!src->mem)
		return os_crc32c_b64_fd(src->fd, off, len, out);
	os_crc32c_b64(os_crc32c(0, src->mem + off, (size_t)len), out);
	return 0;
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
