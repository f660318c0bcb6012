/*
 * auth.c - token generation, storage and constant-time checks.
 */
#include "ctl/auth.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "common/fsutil.h"
#include "common/random.h"

int ctl_token_new(char out[CTL_TOKEN_HEX + 1])
{
	return sr_random_hex(out, CTL_TOKEN_HEX / 2);
}

void ctl_token_digest(const char *s, unsigned char out[CTL_DIGEST_LEN])
{
	unsigned int len = CTL_DIGEST_LEN;

	EVP_Digest(s, strlen(s), out, &len, EVP_sha256(), NULL);
}

bool ctl_token_matches(const char *s, const unsigned char digest[CTL_DIGEST_LEN])
{
	unsigned char d[CTL_DIGEST_LEN];

	if (!s)
		return false;
	ctl_token_digest(s, d);
	return CRYPTO_memcmp(d, digest, CTL_DIGEST_LEN) == 0;
}

static bool is_token(const char *s)
{
	size_t i;

	for (i = 0; s[i]; i++) {
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	}
	return i == CTL_TOKEN_HEX;
}

int ctl_token_write(const char *path, const char *token, struct sr_err *e)
{
	char line[CTL_TOKEN_HEX + 2];

	snprintf(line, sizeof line, "%s\n", token);
	return sr_fs_write_atomic(path, line, strlen(line), 0600, e);
}

int ctl_token_load_or_create(const char *path, char out[CTL_TOKEN_HEX + 1],
			     struct sr_err *e)
{
	char *buf = NULL;
	struct stat sb;
	int rc;

	if (stat(path, &sb) != 0) {
		if (errno != ENOENT)
			return sr_err_set(e, -errno, "%s: %s", path, strerror(errno));
		rc = ctl_token_new(out);
		if (rc)
			return sr_err_set(e, rc, "%s: no randomness", path);
		return ctl_token_write(path, out, e);
	}
	if (sb.st_mode & 077)
		return sr_err_set(e, -EPERM, "%s: mode %03o is readable by "
				  "others; chmod 600 it", path,
				  (unsigned)(sb.st_mode & 0777));
	rc = sr_fs_read_file(path, 4096, &buf, NULL, e);
	if (rc)
		return rc;
	buf[strcspn(buf, "\r\n")] = '\0';
	if (!is_token(buf)) {
		rc = sr_err_set(e, -SR_ECORRUPT, "%s: not a %d-hex-digit token",
				path, CTL_TOKEN_HEX);
		goto out;
	}
	memcpy(out, buf, CTL_TOKEN_HEX + 1);
out:
	free(buf);
	return rc;
}

static void imds_mac(const unsigned char *key, int64_t node_id,
		     int64_t expiry_s, char out[2 * CTL_DIGEST_LEN + 1])
{
	unsigned char mac[EVP_MAX_MD_SIZE];
	unsigned int len = 0;
	char msg[64];

	snprintf(msg, sizeof msg, "%" PRId64 ":%" PRId64, node_id, expiry_s);
	HMAC(EVP_sha256(), key, CTL_DIGEST_LEN, (const unsigned char *)msg,
	     strlen(msg), mac, &len);
	sr_hex(mac, CTL_DIGEST_LEN, out);
}

int ctl_imds_token_make(const unsigned char *key, int64_t node_id,
			int64_t expiry_s, char *out, size_t n)
{
	char mac[2 * CTL_DIGEST_LEN + 1];
	int len;

	imds_mac(key, node_id, expiry_s, mac);
	len = snprintf(out, n, "%" PRId64 ".%s", expiry_s, mac);
	return (len < 0 || (size_t)len >= n) ? -ENOSPC : 0;
}

bool ctl_imds_token_valid(const unsigned char *key, int64_t node_id,
			  const char *tok, int64_t now_s)
{
	char mac[2 * CTL_DIGEST_LEN + 1];
	char *end = NULL;
	long long exp;

	if (!tok)
		return false;
	errno = 0;
	exp = strtoll(tok, &end, 10);
	if (errno || end == tok || *end != '.' || exp < now_s)
		return false;
	if (strlen(end + 1) != 2 * CTL_DIGEST_LEN)
		return false;
	imds_mac(key, node_id, exp, mac);
	return CRYPTO_memcmp(mac, end + 1, 2 * CTL_DIGEST_LEN) == 0;
}
