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
 *
 * Records are read by the project's RFC 4180 reader (lib/common/csv.c):
 * quoted fields, CRLF line ends and blank lines are accepted, and line
 * numbers count every physical line, blank or not.  Blank or space-only
 * cells around a value are trimmed.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/csv.h"
#include "common/timeutil.h"
#include "sim/trace.h"

/* "YYYY-MM-DD HH:MM:SS", or RFC 3339 ("...T...[.frac](Z|+hh:mm)"), no
 * zone meaning UTC -> whole seconds since the epoch (the trace's
 * resolution); *e says what is wrong. */
static int parse_date(const char *s, int64_t *out, struct sr_err *e)
{
	int64_t ns;
	int rc = sr_time_parse(s, SR_TIME_SPACE | SR_TIME_UTC, &ns, e);

	if (rc)
		return rc;
	*out = ns / SR_NS_PER_SEC - (ns % SR_NS_PER_SEC < 0);
	return 0;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/* Trim spaces and tabs at both ends, in place. */
static char *trim(char *s)
{
	size_t n;

	while (*s == ' ' || *s == '\t')
		s++;
	n = strlen(s);
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
		s[--n] = '\0';
	return s;
}

/* The header: the first record that is not blank. */
static int read_header(struct sr_csv *r, struct trace *t, int *ci_date,
		       int *ci_av, size_t *nfields, struct sr_err *e)
{
	int line = 1, rc;

	do
		rc = sr_csv_next(r, &line, e);
	while (rc == 1 && r->nfields == 1 && !trim(r->fields[0])[0]);
	if (rc < 0)
		return rc;
	if (rc == 0)
		return sr_err_set(e, -SR_EPARSE, "%s: empty CSV trace", t->name);
	for (size_t i = 0; i < r->nfields; i++)
		trim(r->fields[i]);
	*ci_date = sr_csv_col(r->fields, r->nfields, "date");
	*ci_av = sr_csv_col(r->fields, r->nfields, "availability");
	if (*ci_date < 0 || *ci_av < 0)
		return sr_err_set(e, -SR_EPARSE,
				  "%s:%d: expected a header with columns 'date' and 'availability'",
				  t->name, line);
	*nfields = r->nfields;
	return 0;
}

static int grow(struct trace *t, int64_t **when, size_t *cap, struct sr_err *e)
{
	size_t nc = *cap ? *cap * 2 : 1024;
	int64_t *nw = realloc(*when, nc * sizeof *nw);
	uint8_t *na;

	if (!nw)
		return sr_err_set(e, -ENOMEM, "%s: out of memory", t->name);
	*when = nw;
	na = realloc(t->avail, nc);
	if (!na)
		return sr_err_set(e, -ENOMEM, "%s: out of memory", t->name);
	t->avail = na;
	*cap = nc;
	return 0;
}

int trace__parse_csv(const char *buf, size_t len, struct trace *t,
		     struct sr_err *e)
{
	struct sr_csv r;
	int64_t *when = NULL, *diff = NULL;
	size_t cap = 0, n = 0, nfields = 0;
	int ci_date = -1, ci_av = -1, line = 0, rc;

	sr_csv_open(&r, buf, len, t->name);
	if (memchr(buf, '\0', len)) {
		rc = sr_err_set(e, -SR_EPARSE, "%s: binary data in a CSV trace", t->name);
		goto out;
	}
	rc = read_header(&r, t, &ci_date, &ci_av, &nfields, e);
	while (rc == 0) {
		const char *ds, *as;
		int64_t d;
		char *end;
		long v;

		rc = sr_csv_row(&r, nfields, &line, e);
		if (rc <= 0)
			break;
		rc = 0;
		ds = trim(r.fields[ci_date]);
		as = trim(r.fields[ci_av]);
		rc = parse_date(ds, &d, e);
		if (rc) {
			sr_err_prefix(e, "%s:%d: date: expected 'YYYY-MM-DD HH:MM:SS' "
				      "or RFC 3339", t->name, line);
			break;
		}
		errno = 0;
		v = strtol(as, &end, 10);
		if (errno || end == as || *end || (v != 0 && v != 1)) {
			rc = sr_err_set(e, -SR_EPARSE,
					"%s:%d: availability: expected 0 or 1, got '%.40s'",
					t->name, line, as);
			break;
		}
		if (n && d <= when[n - 1]) {
			rc = sr_err_set(e, -SR_EPARSE, "%s:%d: date does not increase",
					t->name, line);
			break;
		}
		if (n == cap)
			rc = grow(t, &when, &cap, e);
		if (rc)
			break;
		when[n] = d;
		t->avail[n] = (uint8_t)v;
		n++;
	}
	if (rc)
		goto out;
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
	sr_csv_close(&r);
	free(when);
	free(diff);
	return rc;
}
