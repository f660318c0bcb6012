/*
 * catalog_csv.c - RFC 4180 record reader (see catalog_csv.h).
 *
 * Grammar accepted (RFC 4180 plus LF-only line ends):
 *   record = field *("," field) (CRLF | LF | EOF)
 *   field  = quoted | bare
 *   quoted = '"' *(any byte except '"' | '""') '"'
 *   bare   = *(any byte except ',' '"' CR LF)
 * A quote inside a bare field, or anything but ',' or a line end after a
 * closing quote, is an error.  A blank line is a record with one empty
 * field; callers skip it.  Field texts are NUL-terminated copies.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "catalog_csv.h"

void catalog__csv_open(struct catalog__csv *r, const char *buf, size_t len,
		       const char *name)
{
	memset(r, 0, sizeof *r);
	r->buf = buf;
	r->p = buf;
	r->end = buf + len;
	r->name = name;
	r->line = 1;
}

void catalog__csv_close(struct catalog__csv *r)
{
	if (!r)
		return;
	free(r->fields);
	free(r->store);
	r->fields = NULL;
	r->store = NULL;
	r->nfields = r->capfields = r->storelen = r->storecap = 0;
}

static int store_byte(struct catalog__csv *r, char ch)
{
	if (r->storelen == r->storecap) {
		size_t cap = r->storecap ? r->storecap * 2 : 256;
		char *s = realloc(r->store, cap);

		if (!s)
			return -ENOMEM;
		r->store = s;
		r->storecap = cap;
	}
	r->store[r->storelen++] = ch;
	return 0;
}

/* Field starts are kept as offsets while the store may move, then turned
 * into pointers once the record is complete. */
static int push_field(struct catalog__csv *r, size_t start)
{
	if (r->nfields == r->capfields) {
		size_t cap = r->capfields ? r->capfields * 2 : 16;
		char **f = realloc(r->fields, cap * sizeof *f);

		if (!f)
			return -ENOMEM;
		r->fields = f;
		r->capfields = cap;
	}
	r->fields[r->nfields++] = (char *)(uintptr_t)start;
	return store_byte(r, '\0');
}

int catalog__csv_next(struct catalog__csv *r, int *line, struct sr_err *e)
{
	int rc = 0;

	r->nfields = 0;
	r->storelen = 0;
	if (r->p >= r->end)
		return 0;
	*line = r->line;
	for (;;) {
		size_t start = r->storelen;

		if (r->p < r->end && *r->p == '"') {
			int qline = r->line;

			r->p++;
			for (;;) {
				if (r->p >= r->end) {
					rc = sr_err_set(e, -SR_EPARSE,
							"%s:%d: unterminated quoted field",
							r->name, qline);
					goto out;
				}
				if (*r->p == '"') {
					if (r->p + 1 < r->end && r->p[1] == '"') {
						r->p += 2;
						rc = store_byte(r, '"');
					} else {
						r->p++;
						break;
					}
				} else {
					if (*r->p == '\n')
						r->line++;
					rc = store_byte(r, *r->p++);
				}
				if (rc)
					goto out;
			}
			if (r->p < r->end && *r->p != ',' && *r->p != '\n' &&
			    *r->p != '\r') {
				rc = sr_err_set(e, -SR_EPARSE,
						"%s:%d: field %zu: text after closing quote",
						r->name, r->line, r->nfields + 1);
				goto out;
			}
		} else {
			while (r->p < r->end && *r->p != ',' && *r->p != '\n' &&
			       *r->p != '\r') {
				if (*r->p == '"') {
					rc = sr_err_set(e, -SR_EPARSE,
							"%s:%d: field %zu: quote inside unquoted field",
							r->name, r->line, r->nfields + 1);
					goto out;
				}
				rc = store_byte(r, *r->p++);
				if (rc)
					goto out;
			}
		}
		rc = push_field(r, start);
		if (rc)
			goto out;
		if (r->p >= r->end)
			break;
		if (*r->p == ',') {
			r->p++;
			continue;
		}
		if (*r->p == '\r') {
			if (r->p + 1 < r->end && r->p[1] == '\n') {
				r->p++;
			} else {
				rc = sr_err_set(e, -SR_EPARSE,
						"%s:%d: bare carriage return",
						r->name, r->line);
				goto out;
			}
		}
		r->p++; /* '\n' */
		r->line++;
		break;
	}
	for (size_t i = 0; i < r->nfields; i++)
		r->fields[i] = r->store + (uintptr_t)r->fields[i];
	rc = 1;
out:
	if (rc < 0)
		r->p = r->end; /* no resynchronisation after an error */
	return rc;
}

int catalog__csv_col(char *const *hdr, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++) {
		if (!strcmp(hdr[i], name))
			return (int)i;
	}
	return -1;
}

int catalog__csv_header(struct catalog__csv *r, const char *const *names,
			int n, unsigned optional_mask, int *col, size_t *nfields,
			struct sr_err *e)
{
	int line = 1, rc = catalog__csv_next(r, &line, e);

	if (rc == 0)
		return sr_err_set(e, -SR_EPARSE, "%s:1: empty file, expected a header",
				  r->name);
	if (rc < 0)
		return rc;
	*nfields = r->nfields;
	for (int k = 0; k < n; k++) {
		col[k] = catalog__csv_col(r->fields, r->nfields, names[k]);
		if (col[k] < 0 && !(optional_mask & (1u << k)))
			return sr_err_set(e, -SR_EPARSE, "%s:%d: header: no column %s",
					  r->name, line, names[k]);
	}
	return 0;
}

int catalog__csv_row(struct catalog__csv *r, size_t nfields, int *line,
		     struct sr_err *e)
{
	int rc;

	do
		rc = catalog__csv_next(r, line, e);
	while (rc == 1 && r->nfields == 1 && !r->fields[0][0]);
	if (rc == 1 && r->nfields != nfields)
		return sr_err_set(e, -SR_EPARSE, "%s:%d: expected %zu fields, got %zu",
				  r->name, *line, nfields, r->nfields);
	return rc;
}

const char *catalog__basename(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

int catalog__parse_num(const char *s, double *out)
{
	char *end = NULL;
	double v;

	if (!*s || !((*s >= '0' && *s <= '9') || *s == '.'))
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno || *end || !isfinite(v) || v < 0)
		return -EINVAL;
	*out = v;
	return 0;
}

int catalog__read_file(const char *path, char **buf, size_t *len,
		       struct sr_err *e)
{
	int rc = 0, fd = -1;
	char *b = NULL;
	struct stat st;
	size_t got = 0;

	*buf = NULL;
	*len = 0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		rc = sr_err_set(e, -errno, "%s: %s", path, strerror(errno));
		goto out;
	}
	if (fstat(fd, &st) < 0) {
		rc = sr_err_set(e, -errno, "%s: %s", path, strerror(errno));
		goto out;
	}
	b = malloc((size_t)st.st_size + 1);
	if (!b) {
		rc = sr_err_set(e, -ENOMEM, "%s: out of memory", path);
		goto out;
	}
	while (got < (size_t)st.st_size) {
		ssize_t k = read(fd, b + got, (size_t)st.st_size - got);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			rc = sr_err_set(e, -errno, "%s: %s", path, strerror(errno));
			goto out;
		}
		if (k == 0)
			break;
		got += (size_t)k;
	}
	b[got] = '\0';
	*buf = b;
	*len = got;
	b = NULL;
out:
	free(b);
	if (fd >= 0)
		close(fd);
	return rc;
}
