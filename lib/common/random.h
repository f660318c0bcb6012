/*
 * random.h - secrets from the kernel's CSPRNG as hex text (tokens,
 * Idempotency-Keys, keys).
 */
#ifndef SR_COMMON_RANDOM_H
#define SR_COMMON_RANDOM_H

#include <stddef.h>

/* n bytes as lower-case hex into out (2n + 1 bytes with the NUL).  Returns 0
 * or -errno from getrandom(). */
int sr_random_hex(char *out, size_t n);

/* n bytes of b as lower-case hex into out (2n + 1 bytes). */
void sr_hex(const unsigned char *b, size_t n, char *out);

#endif
