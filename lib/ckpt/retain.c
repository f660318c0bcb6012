/*
 * retain.c - the names in a checkpoint directory, listing them, removing
 * what a crash left behind, and retention.
 *
 *   step-NNNNNNNN/         committed (N in decimal, at least 8 digits)
 *   step-NNNNNNNN.<x>/     anything with a suffix is uncommitted scratch:
 *                          .tmp (being written), .del.tmp (being deleted)
 *
 * Retention keeps the newest `keep` committed steps: a victim is renamed
 * to step-M.del.tmp, the directory fsync'ed, then its files deleted, so a
 * half-deleted checkpoint is never visible as committed (commit.c tells
 * why the whole protocol is crash-safe).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "common/log.h"

int ckpt__parse_dirname(const char *s, int64_t *step, int *tmp)
{
	int64_t v = 0;
	const char *p = s + 5;

	if (strncmp(s, "step-", 5) || *p < '0' || *p > '9')
		return -1;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (v > (INT64_MAX - 9) / 10)
			return -1;
		v = v * 10 + (*p - '0');
	}
	if (*p != '\0' && *p != '.')
		return -1;
	*step = v;
	*tmp = *p == '.';
	return 0;
}

DIR *ckpt__opendir_at(int parentfd, const char *name, int *rc)
{
	int fd = openat(parentfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d;

	*rc = 0;
	if (fd < 0) {
		*rc = errno == ENOENT ? 0 : -errno;
		return NULL;
	}
	d = fdopendir(fd);
	if (!d) {
		*rc = -errno;
		close(fd);
	}
	return d;
}

int ckpt__rmdir_flat(int parentfd, const char *name)
{
	struct dirent *de;
	int rc = 0, fd;
	DIR *d = ckpt__opendir_at(parentfd, name, &rc);

	if (!d)
		return rc;
	fd = dirfd(d);
	for (de = readdir(d); de; de = readdir(d)) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (unlinkat(fd, de->d_name, 0) != 0 && errno != ENOENT)
			rc = -errno;
	}
	closedir(d);
	if (unlinkat(parentfd, name, AT_REMOVEDIR) != 0 && errno != ENOENT)
		rc = -errno;
	return rc;
}

static int cmp_desc(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? 1 : x > y ? -1 : 0;
}

int ckpt__scan(const char *dir, int64_t **steps, size_t *n, int with_tmp,
	       int **tmpflags)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int64_t *v = NULL;
	size_t cnt = 0, cap = 0;

	*steps = NULL;
	*n = 0;
	if (tmpflags)
		*tmpflags = NULL;
	if (!d)
		return -errno;
	for (de = readdir(d); de; de = readdir(d)) {
		int64_t s;
		int tmp;

		if (ckpt__parse_dirname(de->d_name, &s, &tmp) || (tmp && !with_tmp))
			continue;
		if (cnt == cap) {
			int64_t *nv = realloc(v, (cap = cap ? cap * 2 : 16) * sizeof *v);

			if (!nv) {
				free(v);
				closedir(d);
				return -ENOMEM;
			}
			v = nv;
		}
		/* encode the tmp flag in the low bit of a doubled step */
		v[cnt++] = s * 2 + (tmp ? 0 : 1);
	}
	closedir(d);
	if (cnt > 1)
		qsort(v, cnt, sizeof *v, cmp_desc);
	if (tmpflags && cnt) {
		*tmpflags = calloc(cnt, sizeof **tmpflags);
		if (!*tmpflags) {
			free(v);
			return -ENOMEM;
		}
	}
	for (size_t i = 0; i < cnt; i++) {
		if (tmpflags)
			(*tmpflags)[i] = !(v[i] & 1);
		v[i] /= 2;
	}
	*steps = v;
	*n = cnt;
	return 0;
}

void ckpt__cleanup_tmp(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int dfd;

	if (!d)
		return;
	dfd = dirfd(d);
	for (de = readdir(d); de; de = readdir(d)) {
		int64_t s;
		int tmp;

		if (ckpt__parse_dirname(de->d_name, &s, &tmp) == 0 && tmp) {
			sr_info("ckpt", "removing incomplete checkpoint",
				"dir=%s name=%s", dir, de->d_name);
			ckpt__rmdir_flat(dfd, de->d_name);
		}
	}
	fsync(dfd);
	closedir(d);
}

void ckpt__retention(const char *dir, int keep, int64_t protect)
{
	int64_t *steps = NULL;
	size_t n = 0;
	int dfd = -1, kept = 0;

	if (ckpt__scan(dir, &steps, &n, 0, NULL))
		return;
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	for (size_t i = 0; dfd >= 0 && i < n; i++) {
		char name[48], del[64];

		if (kept < keep || steps[i] == protect) {
			kept++;
			continue;
		}
		snprintf(name, sizeof name, "step-%08" PRId64, steps[i]);
		snprintf(del, sizeof del, "%s.del.tmp", name);
		if (renameat(dfd, name, dfd, del) != 0)
			continue;
		fsync(dfd);
		ckpt__rmdir_flat(dfd, del);
		sr_debug("ckpt", "retention removed checkpoint", "dir=%s step=%"
			 PRId64, dir, steps[i]);
	}
	if (dfd >= 0)
		close(dfd);
	free(steps);
}
