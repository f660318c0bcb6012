/*
 * ckscan.c - newest committed checkpoint step (see ckscan.h).
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

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
