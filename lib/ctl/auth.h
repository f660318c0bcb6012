/*
 * auth.h - bearer tokens and IMDS session tokens.
 *
 * Tokens are 32 random bytes as 64 lower-case hex characters.  The admin
 * token lives in <state-dir>/api.token (mode 0600); node tokens are
 * stored only as SHA-256 digests.  Comparisons hash both sides and compare
 * the digests in constant time, so neither content nor length leaks.
 *
 * IMDSv2 session tokens are stateless: "<expiry-unix-s>.<hex HMAC-SHA256
 * (key, node-id ":" expiry)>", with the key in <state-dir>/imds.key, so
 * they survive a daemon restart and need no table.
 */
#ifndef SR_CTL_AUTH_H
#define SR_CTL_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

#define CTL_TOKEN_HEX 64
#define CTL_DIGEST_LEN 32

/* Fill out[CTL_TOKEN_HEX + 1] with a fresh random token. */
int ctl_token_new(char out[CTL_TOKEN_HEX + 1]);

/* SHA-256 of s (strlen bytes). */
void ctl_token_digest(const char *s, unsigned char out[CTL_DIGEST_LEN]);

/* Constant-time: does token `s` hash to `digest`? */
bool ctl_token_matches(const char *s, const unsigned char digest[CTL_DIGEST_LEN]);

/* Read the token in `path`, creating it (0600, O_EXCL, durable) with a
 * new random token if absent.  Rejects a file readable by group/other
 * (-EPERM, naming the path) and content that is not a token (-SR_ECORRUPT). */
int ctl_token_load_or_create(const char *path, char out[CTL_TOKEN_HEX + 1],
			     struct sr_err *e);

/* Write `token` + "\n" to path with mode 0600 (durable). */
int ctl_token_write(const char *path, const char *token, struct sr_err *e);

/* IMDS session tokens. key is CTL_DIGEST_LEN bytes. */
int ctl_imds_token_make(const unsigned char *key, int64_t node_id,
			int64_t expiry_s, char *out, size_t n);
bool ctl_imds_token_valid(const unsigned char *key, int64_t node_id,
			  const char *tok, int64_t now_s);

#endif
