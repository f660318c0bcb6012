/*
 * ckscan.c - newest committed checkpoint step (see ckscan.h).
 */
#include <dirent.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <jansson.h>

#include "agent/ckscan.h"
#include "common/fsutil.h"

/* a recovery point is a few hundred bytes */
#define TIER3_MAX_BYTES (64 * 1024)

/* Step of a "step-<digits>" name, -1 for anything else. */
static int64_t name_step(const char *n)
{
	int64_t v = 0;
	const char *p;

	if (strncmp(n, "step-", 5) != 0 || !n[5])
		return -1;
	for (p = n + 5; *p; p++) {
		if (*p < '0' || *p > '9' || v > INT64_MAX / 10 - 9)
			return -1;
		v = v * 10 + (*p - '0');
	}
	return v;
}

/* Is dfd/name a real step-N directory (not a link: a workload could plant
 * one pointing out of the checkpoint dir) holding a regular
 * manifest.json?  Shard files inside may be links (striped checkpoints
 * link theirs from another disk); the step dir and its manifest may not. */
static bool committed_step_at(int dfd, const char *name)
{
	struct stat st;
	bool ok;
	int sfd;

	sfd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (sfd < 0)
		return false;
	ok = fstatat(sfd, "manifest.json", &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	     S_ISREG(st.st_mode);
	close(sfd);
	return ok;
}

int64_t ckscan_newest_step(const char *dir)
{
	int64_t best = -1;
	struct dirent *d;
	DIR *dh;
	int dfd;

	if (!dir || !*dir)
		return -1;
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -1;
	dh = fdopendir(dfd);
	if (!dh) {
		close(dfd);
		return -1;
	}
	while ((d = readdir(dh)) != NULL) {
		int64_t s = name_step(d->d_name);

		if (s > best && committed_step_at(dfd, d->d_name))
			best = s;
	}
	closedir(dh);
	return best;
}

static int64_t get_i64(json_t *o, const char *k, int64_t def)
{
	json_t *v = json_object_get(o, k);

	return json_is_integer(v) ? (int64_t)json_integer_value(v) : def;
}

/* Fold dfd's tier3.json into out (the least of each field).  The
 * workload writes in the checkpoint dir: a link or a FIFO planted as the
 * file is not read (sr_fs_read_regular_at). */
static void fold(int dfd, const char *path, struct ckscan_tier3 *out)
{
	char *buf = NULL;
	size_t len = 0;
	json_t *o = NULL;
	int64_t ls, ss, st;
	const char *err;

	if (sr_fs_read_regular_at(dfd, "tier3.json", path, TIER3_MAX_BYTES,
				  &buf, &len, NULL) == 0)
		o = json_loadb(buf, len, JSON_REJECT_DUPLICATES, NULL);
	free(buf);
	if (!json_is_object(o)) {
		json_decref(o);
		return;
	}
	ls = get_i64(o, "local_step", -1);
	ss = get_i64(o, "store_step", -1);
	st = get_i64(o, "store_time_ns", 0);
	err = json_string_value(json_object_get(o, "last_error"));
	if (!out->found || ls < out->local_step)
		out->local_step = ls;
	if (!out->found || ss < out->store_step) {
		out->store_step = ss;
		out->store_time_ns = st;
	}
	if (get_i64(o, "retries", 0) > out->retries)
		out->retries = get_i64(o, "retries", 0);
	if (get_i64(o, "behind", 0) > out->behind)
		out->behind = get_i64(o, "behind", 0);
	if (err && *err && !out->last_error[0])
		snprintf(out->last_error, sizeof out->last_error, "%s", err);
	out->found = 1;
	json_decref(o);
}

void ckscan_tier3(const char *dir, struct ckscan_tier3 *out)
{
	char path[4200];
	struct dirent *d;
	struct stat st;
	DIR *dh;
	int fd;

	memset(out, 0, sizeof *out);
	out->local_step = out->store_step = -1;
	if (!dir || !*dir)
		return;
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return;
	if (fstatat(fd, "tier3.json", &st, AT_SYMLINK_NOFOLLOW) == 0) {
		snprintf(path, sizeof path, "%s/tier3.json", dir);
		fold(fd, path, out);
		close(fd);
		return;
	}
	dh = fdopendir(fd);
	if (!dh) {
		close(fd);
		return;
	}
	while ((d = readdir(dh)) != NULL) {
		int pfd;

		if (strncmp(d->d_name, "rank-", 5) &&
		    strcmp(d->d_name, "replicated"))
			continue;
		/* a part is a directory of the checkpoint dir, never a link */
		pfd = openat(dirfd(dh), d->d_name, O_RDONLY | O_DIRECTORY |
			     O_NOFOLLOW | O_CLOEXEC);
		if (pfd < 0)
			continue;
		snprintf(path, sizeof path, "%s/%s/tier3.json", dir, d->d_name);
		if (fstatat(pfd, "tier3.json", &st, AT_SYMLINK_NOFOLLOW) == 0)
			fold(pfd, path, out);
		close(pfd);
	}
	closedir(dh);
}
