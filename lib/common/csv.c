/*
 * csv.c - the project's one RFC 4180 record reader (see csv.h).
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
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/csv.h"

void sr_csv_open(struct sr_csv *r, const char *buf, size_t len,
		 const char *name)
{
	memset(r, 0, sizeof *r);
	r->buf = buf;
	r->p = buf;
	r->end = buf + len;
	r->name = name;
	r->line = 1;
}

void sr_csv_close(struct sr_csv *r)
{
	if (!r)
		return;
	free(r->fields);
	free(r->store);
	r->fields = NULL;
	r->store = NULL;
	r->nfields = r->capfields = r->storelen = r->storecap = 0;
}

static int store_byte(struct sr_csv *r, char ch)
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
static int push_field(struct sr_csv *r, size_t start)
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

int sr_csv_next(struct sr_csv *r, int *line, struct sr_err *e)
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

int sr_csv_col(char *const *hdr, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++) {
		if (!strcmp(hdr[i], name))
			return (int)i;
	}
	return -1;
}

int sr_csv_header(struct sr_csv *r, const char *const *names, int n,
		  unsigned optional_mask, int *col, size_t *nfields,
		  struct sr_err *e)
{
	int line = 1, rc = sr_csv_next(r, &line, e);

	if (rc == 0)
		return sr_err_set(e, -SR_EPARSE, "%s:1: empty file, expected a header",
				  r->name);
	if (rc < 0)
		return rc;
	*nfields = r->nfields;
	for (int k = 0; k < n; k++) {
		col[k] = sr_csv_col(r->fields, r->nfields, names[k]);
		if (col[k] < 0 && !(optional_mask & (1u << k)))
			return sr_err_set(e, -SR_EPARSE, "%s:%d: header: no column %s",
					  r->name, line, names[k]);
	}
	return 0;
}

int sr_csv_row(struct sr_csv *r, size_t nfields, int *line,
	       struct sr_err *e)
{
	int rc;

	do
		rc = sr_csv_next(r, line, e);
	while (rc == 1 && r->nfields == 1 && !r->fields[0][0]);
	if (rc == 1 && r->nfields != nfields)
		return sr_err_set(e, -SR_EPARSE, "%s:%d: expected %zu fields, got %zu",
				  r->name, *line, nfields, r->nfields);
	return rc;
}
