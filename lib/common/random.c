/*
 * random.c - CSPRNG bytes as hex (see random.h).
 */
#include "random.h"

#include <errno.h>
#include <string.h>
#include <sys/random.h>

void sr_hex(const unsigned char *b, size_t n, char *out)
{
	static const char d[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = d[b[i] >> 4];
		out[2 * i + 1] = d[b[i] & 15];
	}
	out[2 * n] = '\0';
}

int sr_random_hex(char *out, size_t n)
{
	unsigned char b[64];
	size_t done = 0;

	while (done < n) {
		size_t want = n - done < sizeof b ? n - done : sizeof b, got = 0;

		while (got < want) {
			ssize_t r = getrandom(b + got, want - got, 0);

			if (r < 0) {
				if (errno == EINTR)
					continue;
				explicit_bzero(b, sizeof b);
				return -errno;
			}
			got += (size_t)r;
		}
		sr_hex(b, want, out + 2 * done);
		done += want;
	}
	if (n == 0)
		out[0] = '\0';
	explicit_bzero(b, sizeof b);
	return 0;
}
