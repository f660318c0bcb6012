/*
 * ckpt_test.h - helpers shared by the test_ckpt_*.c unit tests.
 */
#ifndef CKPT_TEST_H
#define CKPT_TEST_H

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "spotrun/ckpt.h"

/* A fresh directory under $TMPDIR (or /tmp); caller frees the string. */
static inline char *ct_tmpdir(void)
{
	const char *base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	char *p = malloc(strlen(base) + 32);

	assert_non_null(p);
	sprintf(p, "%s/ckpt-test-XXXXXX", base);
	assert_non_null(mkdtemp(p));
	return p;
}

/* rm -r for the two-level trees the tests create. */
static inline void ct_rmtree(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *de;
	char *sub;

	if (!d) {
		unlink(path);
		return;
	}
	for (de = readdir(d); de; de = readdir(d)) {
		struct stat st;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (asprintf(&sub, "%s/%s", path, de->d_name) < 0)
			continue;
		if (lstat(sub, &st) == 0 && S_ISDIR(st.st_mode))
			ct_rmtree(sub);
		else
			unlink(sub);
		free(sub);
	}
	closedir(d);
	rmdir(path);
}

/* Deterministic bytes for (seed, tensor, step). */
static inline void ct_fill(void *p, size_t n, uint64_t seed)
{
	uint8_t *b = p;
	uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;

	for (size_t i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		b[i] = (uint8_t)x;
	}
}

static inline struct spotckpt *ct_open(const char *dir, int keep)
{
	struct spotckpt_opts o;
	struct spotckpt *e = NULL;

	spotckpt_opts_init(&o);
	o.dir = dir;
	o.keep = keep;
	o.copy_threads = 2;
	assert_int_equal(spotckpt_open(&o, &e), 0);
	return e;
}

static inline void ct_flip_bit(const char *path, long off)
{
	FILE *f = fopen(path, "r+b");
	int c;

	assert_non_null(f);
	if (off < 0) {
		fseek(f, 0, SEEK_END);
		off += ftell(f);
	}
	fseek(f, off, SEEK_SET);
	c = fgetc(f);
	assert_true(c != EOF);
	fseek(f, off, SEEK_SET);
	fputc(c ^ 0x10, f);
	fclose(f);
}

static inline int ct_exists(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));
static inline int ct_exists(const char *fmt, ...)
{
	char p[4096];
	va_list ap;
	struct stat st;

	va_start(ap, fmt);
	vsnprintf(p, sizeof p, fmt, ap);
	va_end(ap);
	return stat(p, &st) == 0;
}

#endif
