/*
 * trace_csv.c - the SkyNomad CSV trace format.
 *
 *     date,availability
 *     2023-02-15 22:08:16,0
 *     2023-02-15 22:11:31,1
 *
 * Columns are found by header name (other columns are ignored).
 * availability: 1 = spot available, 0 = not (the opposite of SkyNomad
 * JSON).  Rows are consecutive ticks; the probes behind these files are
 * not perfectly periodic (195 s +- 1 s), so gap_s is the median interval
 * between successive dates, rounded to whole seconds.  Dates must
 * increase strictly.  Errors name the line.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sim/trace.h"

#define CSV_MAX_COLS 32

/* Split one line (no newline) in place at commas.  Returns column count. */
static int split(char *line, char **cols)
{
	int n = 0;

	cols[n++] = line;
	for (char *p = line; *p; p++) {
		if (*p == ',') {
			*p = '\0';
			if (n == CSV_MAX_COLS)
				return -1;
			cols[n++] = p + 1;
		}
	}
	return n;
}

/* "YYYY-MM-DD HH:MM:SS" or "YYYY-MM-DDTHH:MM:SS[Z]" -> seconds since epoch. */
static int parse_date(const char *s, int64_t *out)
{
	struct tm tm;
	char sep, tail[4] = "";
	int n = 0;

	memset(&tm, 0, sizeof tm);
	if (sscanf(s, "%4d-%2d-%2d%c%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon,
		   &tm.tm_mday, &sep, &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &n) != 7)
		return -1;
	if (sep != ' ' && sep != 'T')
		return -1;
	if (s[n] && (sscanf(s + n, "%3s", tail) != 1 || strcmp(tail, "Z")))
		return -1;
	if (tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 || tm.tm_mday > 31 ||
	    tm.tm_hour > 23 || tm.tm_min > 59 || tm.tm_sec > 60)
		return -1;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	*out = (int64_t)timegm(&tm);
	return 0;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

static void strip(char *s)
{
	size_t n = strlen(s);

	while (n && (s[n - 1] == '\r' || s[n - 1] == ' ' || s[n - 1] == '\t'))
		s[--n] = '\0';
}

int trace__parse_csv(const char *buf, size_t len, struct trace *t,
		     struct sr_err *e)
{
	char *copy = NULL, *line, *save = NULL;
	char *cols[CSV_MAX_COLS];
	int64_t *when = NULL, *diff = NULL;
	size_t cap = 0, n = 0, lineno = 0;
	int ci_date = -1, ci_av = -1, ncols, rc = 0;

	copy = malloc(len + 1);
	if (!copy)
		return sr_err_set(e, -ENOMEM, "%s: out of memory", t->name);
	memcpy(copy, buf, len);
	copy[len] = '\0';
	if (memchr(copy, '\0', len)) {
		rc = sr_err_set(e, -SR_EPARSE, "%s: binary data in a CSV trace", t->name);
		goto out;
	}
	for (line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		int64_t d;
		char *end;
		long v;

		lineno++;
		strip(line);
		if (!*line)
			continue;
		ncols = split(line, cols);
		if (ncols < 0) {
			rc = sr_err_set(e, -SR_EPARSE, "%s:%zu: more than %d columns",
					t->name, lineno, CSV_MAX_COLS);
			goto out;
		}
		if (ci_date < 0) {
			for (int i = 0; i < ncols; i++) {
				if (!strcmp(cols[i], "date"))
					ci_date = i;
				else if (!strcmp(cols[i], "availability"))
					ci_av = i;
			}
			if (ci_date < 0 || ci_av < 0) {
				rc = sr_err_set(e, -SR_EPARSE,
						"%s:%zu: expected a header with columns 'date' and 'availability'",
						t->name, lineno);
				goto out;
			}
			continue;
		}
		if (ncols <= ci_date || ncols <= ci_av) {
			rc = sr_err_set(e, -SR_EPARSE, "%s:%zu: %d columns, header has more",
					t->name, lineno, ncols);
			goto out;
		}
		if (parse_date(cols[ci_date], &d)) {
			rc = sr_err_set(e, -SR_EPARSE,
					"%s:%zu: date: expected 'YYYY-MM-DD HH:MM:SS', got '%.40s'",
					t->name, lineno, cols[ci_date]);
			goto out;
		}
		errno = 0;
		v = strtol(cols[ci_av], &end, 10);
		if (errno || end == cols[ci_av] || *end || (v != 0 && v != 1)) {
			rc = sr_err_set(e, -SR_EPARSE,
					"%s:%zu: availability: expected 0 or 1, got '%.40s'",
					t->name, lineno, cols[ci_av]);
			goto out;
		}
		if (n && d <= when[n - 1]) {
			rc = sr_err_set(e, -SR_EPARSE, "%s:%zu: date does not increase",
					t->name, lineno);
			goto out;
		}
		if (n == cap) {
			size_t nc = cap ? cap * 2 : 1024;
			int64_t *nw = realloc(when, nc * sizeof *nw);
			uint8_t *na;

			if (!nw) {
				rc = sr_err_set(e, -ENOMEM, "%s: out of memory", t->name);
				goto out;
			}
			when = nw;
			na = realloc(t->avail, nc);
			if (!na) {
				rc = sr_err_set(e, -ENOMEM, "%s: out of memory", t->name);
				goto out;
			}
			t->avail = na;
			cap = nc;
		}
		when[n] = d;
		t->avail[n] = (uint8_t)v;
		n++;
	}
	if (ci_date < 0) {
		rc = sr_err_set(e, -SR_EPARSE, "%s: empty CSV trace", t->name);
		goto out;
	}
	if (n < 2) {
		rc = sr_err_set(e, -SR_EPARSE,
				"%s: need at least 2 rows to know the tick length, got %zu",
				t->name, n);
		goto out;
	}
	diff = malloc((n - 1) * sizeof *diff);
	if (!diff) {
		rc = sr_err_set(e, -ENOMEM, "%s: out of memory", t->name);
		goto out;
	}
	for (size_t i = 1; i < n; i++)
		diff[i - 1] = when[i] - when[i - 1];
	qsort(diff, n - 1, sizeof *diff, cmp_i64);
	t->gap_s = diff[(n - 1) / 2];
	t->n = n;
out:
	free(copy);
	free(when);
	free(diff);
	return rc;
}
