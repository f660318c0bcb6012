/*
 * names.c - the clouds the catalog models, and "did you mean": the valid
 * names nearest to a bad one.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "catalog.h"

const char *const catalog_clouds[] = { "aws", "gcp", "azure", "lambda",
				       "coreweave" };
const size_t catalog_n_clouds = sizeof catalog_clouds / sizeof catalog_clouds[0];

const char *catalog_cloud_store(const char *cloud)
{
	static const char *const store[][2] = {
		{ "aws", "s3" }, { "gcp", "gs" }, { "azure", "az" },
	};

	for (size_t i = 0; cloud && i < sizeof store / sizeof store[0]; i++)
		if (!strcasecmp(cloud, store[i][0]))
			return store[i][1];
	return NULL;
}

/* Levenshtein distance, case-insensitive, capped at 64 characters. */
static size_t dist(const char *a, const char *b)
{
	size_t la = strnlen(a, 64), lb = strnlen(b, 64), row[65];

	for (size_t j = 0; j <= lb; j++)
		row[j] = j;
	for (size_t i = 1; i <= la; i++) {
		size_t diag = row[0];

		row[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t up = row[j];
			size_t sub = diag + (tolower((unsigned char)a[i - 1]) !=
					     tolower((unsigned char)b[j - 1]));
			size_t best = sub;

			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			diag = up;
		}
	}
	return row[lb];
}

void catalog_nearest(const char *s, const char *const *names, size_t n,
		     char *out, size_t outn)
{
	size_t best[3] = { (size_t)-1, (size_t)-1, (size_t)-1 };
	size_t bd[3] = { (size_t)-1, (size_t)-1, (size_t)-1 };
	size_t len = 0;

	if (outn)
		out[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		size_t d = dist(s, names[i]);
		int dup = 0;

		for (int k = 0; k < 3; k++)
			dup |= best[k] != (size_t)-1 && !strcmp(names[best[k]], names[i]);
		if (dup)
			continue;
		for (int k = 0; k < 3; k++) {
			if (d < bd[k]) {
				for (int m = 2; m > k; m--) {
					bd[m] = bd[m - 1];
					best[m] = best[m - 1];
				}
				bd[k] = d;
				best[k] = i;
				break;
			}
		}
	}
	for (int k = 0; k < 3 && best[k] != (size_t)-1; k++) {
		int w = snprintf(out + len, outn - len, "%s%s", k ? ", " : "",
				 names[best[k]]);

		if (w < 0 || (size_t)w >= outn - len)
			break;
		len += (size_t)w;
	}
}
