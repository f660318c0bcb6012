/*
 * ckscan.c - newest committed checkpoint step (see ckscan.h).
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <jansson.h>

#include "agent/ckscan.h"

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

int64_t ckscan_newest_step(const char *dir)
{
	int64_t best = -1;
	struct dirent *d;
	DIR *dh;

	if (!dir || !*dir)
		return -1;
	dh = opendir(dir);
	if (!dh)
		return -1;
	while ((d = readdir(dh)) != NULL) {
		int64_t s = name_step(d->d_name);
		char path[4096];
		struct stat st;

		if (s <= best)
			continue;
		snprintf(path, sizeof path, "%s/%s/manifest.json", dir, d->d_name);
		if (stat(path, &st) == 0 && S_ISREG(st.st_mode))
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

/* Fold one tier3.json into out (the least of each field). */
static void fold(const char *path, struct ckscan_tier3 *out)
{
	json_t *o = json_load_file(path, JSON_REJECT_DUPLICATES, NULL);
	int64_t ls, ss, st;
	const char *err;

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

	memset(out, 0, sizeof *out);
	out->local_step = out->store_step = -1;
	if (!dir || !*dir)
		return;
	snprintf(path, sizeof path, "%s/tier3.json", dir);
	if (stat(path, &st) == 0) {
		fold(path, out);
		return;
	}
	dh = opendir(dir);
	if (!dh)
		return;
	while ((d = readdir(dh)) != NULL) {
		if (strncmp(d->d_name, "rank-", 5) &&
		    strcmp(d->d_name, "replicated"))
			continue;
		snprintf(path, sizeof path, "%s/%s/tier3.json", dir, d->d_name);
		if (stat(path, &st) == 0)
			fold(path, out);
	}
	closedir(dh);
}
