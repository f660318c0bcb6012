/*
 * finops_fixture.h - shared by the FinOps unit tests: a minimal RFC 4180
 * CSV parser, FOCUS value-format predicates and a ledger fixture.
 * Header-only (static functions); include after cmocka.h.
 */
#ifndef FINOPS_FIXTURE_H
#define FINOPS_FIXTURE_H

#include <sqlite3.h>
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "common/money.h"
#include "common/timeutil.h"
#include "finops/ledger.h"

/* every helper may go unused in one test file */
#define FX static __attribute__((unused))

#define HOUR_NS (INT64_C(3600) * SR_NS_PER_SEC)
/* 2026-11-30T23:59:58.5Z: rows start just before a month boundary */
#define T0 (INT64_C(1796083198) * SR_NS_PER_SEC + 500000000)

#define MAXF 64
#ifndef MAXR
#define MAXR 64
#endif

struct csv {
	int nrows;            /* including the header */
	int nf[MAXR];
	char *f[MAXR][MAXF];  /* NULL-free; "" for empty */
	int quoted[MAXR][MAXF];
};

/* Minimal RFC 4180 parser; requires CRLF line ends. */
FX void csv_parse(const char *s, struct csv *c)
{
	memset(c, 0, sizeof *c);
	while (*s) {
		int r = c->nrows++;

		assert_true(r < MAXR);
		for (;;) {
			char buf[1024];
			size_t n = 0;
			int q = 0;

			if (*s == '"') {
				q = 1;
				s++;
				for (;;) {
					assert_true(*s != '\0');
					if (*s == '"' && s[1] == '"') {
						buf[n++] = '"';
						s += 2;
					} else if (*s == '"') {
						s++;
						break;
					} else {
						buf[n++] = *s++;
					}
					assert_true(n < sizeof buf);
				}
			} else {
				while (*s && *s != ',' && *s != '\r' && *s != '\n') {
					assert_true(*s != '"');
					buf[n++] = *s++;
					assert_true(n < sizeof buf);
				}
			}
			buf[n] = '\0';
			assert_true(c->nf[r] < MAXF);
			c->quoted[r][c->nf[r]] = q;
			c->f[r][c->nf[r]++] = strdup(buf);
			if (*s == ',') {
				s++;
				continue;
			}
			assert_true(s[0] == '\r' && s[1] == '\n'); /* CRLF */
			s += 2;
			break;
		}
	}
}

FX void csv_free(struct csv *c)
{
	for (int r = 0; r < c->nrows; r++)
		for (int i = 0; i < c->nf[r]; i++)
			free(c->f[r][i]);
}

FX int col(const struct csv *c, const char *name)
{
	for (int i = 0; i < c->nf[0]; i++)
		if (!strcmp(c->f[0][i], name))
			return i;
	fail_msg("no column %s", name);
	return -1;
}

FX const char *val(const struct csv *c, int r, const char *name)
{
	return c->f[r][col(c, name)];
}

/* NumericFormat: optional '-', digits, optional '.digits'; no '+', no
 * separators, exponent, currency or unit. */
FX int is_focus_number(const char *s)
{
	const char *p = s;

	if (*p == '-')
		p++;
	if (!isdigit((unsigned char)*p))
		return 0;
	while (isdigit((unsigned char)*p))
		p++;
	if (*p == '.') {
		p++;
		if (!isdigit((unsigned char)*p))
			return 0;
		while (isdigit((unsigned char)*p))
			p++;
	}
	return *p == '\0';
}

/* DateTimeFormat: exactly YYYY-MM-DDTHH:mm:ssZ. */
FX int is_focus_datetime(const char *s)
{
	static const char pat[] = "dddd-dd-ddTdd:dd:ddZ";

	if (strlen(s) != sizeof pat - 1)
		return 0;
	for (size_t i = 0; pat[i]; i++) {
		if (pat[i] == 'd' ? !isdigit((unsigned char)s[i]) : s[i] != pat[i])
			return 0;
	}
	return 1;
}

FX int64_t ts(const char *s)
{
	int64_t ns = 0;

	assert_int_equal(sr_time_parse_rfc3339(s, &ns, NULL), 0);
	return ns;
}

/* Decimal string to micro-units exactly (up to 6 decimals) - only for
 * money columns. */
FX int64_t micros(const char *s)
{
	sr_micros m = 0;

	assert_int_equal(sr_money_parse(s, &m, NULL), 0);
	return m;
}

FX sqlite3 *fixture_at(const char *path)
{
	sqlite3 *db = NULL;
	struct sr_err e;
	struct ledger_row r = {
		.provider = "aws", .region = "us-east-1", .zone = "us-east-1a",
		.instance_type = "p3.2xlarge", .accelerator = "V100", .gpus = 1,
		.pricing = LEDGER_DYNAMIC, .unit_price = 918700,
		.list_price = 3060000, .reserved_price = 1950000, .job_id = 4,
		.node_id = 9, .busy = true, .util_permille = 873,
		.start_ns = T0, .end_ns = T0 + 1 * SR_NS_PER_SEC,
		.billed_ns = HOUR_NS,
	};

	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(ledger_migrate(db, &e), 0);
	/* 40 one-second intervals, time-scaled to odd durations, crossing
	 * into December; a mix of pricing categories, idle rows, a node
	 * with no job, a CPU-only node, unknown reserved price/utilisation,
	 * and a zone name that needs CSV quoting. */
	for (int i = 0; i < 40; i++) {
		r.start_ns = T0 + (int64_t)i * SR_NS_PER_SEC;
		r.end_ns = r.start_ns + SR_NS_PER_SEC - (i % 3) * 1000;
		r.billed_ns = HOUR_NS + (int64_t)i * 1234567891;
		r.node_id = 9 + i % 4;
		r.busy = i % 5 != 0;
		r.pricing = (enum ledger_pricing)(i % 3);
		r.unit_price = r.pricing == LEDGER_DYNAMIC ? 918700 + i :
			       r.pricing == LEDGER_COMMITTED ? 1950000 : 3060000;
		r.job_id = i % 7 == 0 ? 0 : 4 + i % 2;
		r.reserved_price = i % 6 == 0 ? LEDGER_PRICE_UNKNOWN : 1950000;
		r.util_permille = i % 4 == 0 ? -1 : 10 * i;
		r.accelerator = i % 8 == 3 ? NULL : "V100";
		r.gpus = r.accelerator ? 1 + i % 2 : 0;
		r.zone = i % 9 == 4 ? "zone \"b\", east" : (i % 10 == 5 ? NULL : "us-east-1a");
		assert_int_equal(ledger_append(db, &r, NULL, &e), 0);
	}
	return db;
}

FX sqlite3 *fixture(void)
{
	return fixture_at(":memory:");
}

#endif
