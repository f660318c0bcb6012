/*
 * fuzz_check.h - invariants the fuzz targets share.  Each one aborts, so
 * libFuzzer keeps the input that broke it.
 */
#ifndef SR_FUZZ_CHECK_H
#define SR_FUZZ_CHECK_H

#include <stdlib.h>
#include <string.h>

/* A parsed string field is NUL-terminated within its cap bytes. */
static inline void fuzz_check_str(const char *s, size_t cap)
{
	if (memchr(s, '\0', cap) == NULL)
		abort();
}

#endif
