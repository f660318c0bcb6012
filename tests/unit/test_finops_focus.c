/*
 * test_finops_focus.c - the FOCUS 1.2 export: every value rule we
 * implement is checked on every row, and the cost columns add up to the
 * report totals that `spotrun cost --json` prints.
 */
#include <sqlite3.h>
#include <ctype.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "store_bridge.h"

#include "common/timeutil.h"
#include "finops/billed.h"
#include "finops/focus.h"
#include "finops/ledger.h"
#include "finops/report.h"
#include "finops_fixture.h"


static char *export(sqlite3 *db, const struct finops_filter *f, size_t *n)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&buf, &len);
	struct finops_focus_opts o = { "acct-1", "Research" };
	struct sr_err e;

	assert_non_null(mem);
	assert_int_equal(ON_STORE(db, st_, finops_focus_write(st_, f, &o, mem, n, &e)), 0);
	fclose(mem);
	return buf;
}

static void test_columns(void **state)
{
	static const char *const mandatory[] = {
		"BilledCost", "BillingAccountId", "BillingAccountName",
		"BillingCurrency", "BillingPeriodStart", "BillingPeriodEnd",
		"ChargeCategory", "ChargeClass", "ChargeDescription",
		"ChargePeriodStart", "ChargePeriodEnd", "ContractedCost",
		"EffectiveCost", "InvoiceIssuerName", "ListCost",
		"PricingQuantity", "PricingUnit", "ProviderName",
		"PublisherName", "ServiceCategory", "ServiceName",
	};
	static const char *const extra[] = {
		"PricingCategory", "RegionId", "RegionName", "ResourceId",
		"ResourceType", "ConsumedQuantity", "ConsumedUnit",
		"ListUnitPrice", "SkuId", "Tags",
	};
	size_t n = finops_focus_ncolumns(), nmand = sizeof mandatory / sizeof mandatory[0];
	int seen_custom = 0;

	(void)state;
	/* the 21 mandatory columns come first */
	for (size_t i = 0; i < nmand; i++)
		assert_string_equal(finops_focus_columns[i], mandatory[i]);
	for (size_t i = 0; i < sizeof extra / sizeof extra[0]; i++) {
		size_t j;

		for (j = 0; j < n && strcmp(finops_focus_columns[j], extra[i]); j++)
			;
		assert_true(j < n);
	}
	for (size_t i = 0; i < n; i++) {
		const char *c = finops_focus_columns[i];

		/* custom columns last, x_ prefixed; all ids alphanumeric
		 * PascalCase (after the prefix), unique, <= 50 chars */
		if (!strncmp(c, "x_", 2)) {
			seen_custom = 1;
			c += 2;
		} else {
			assert_false(seen_custom);
		}
		assert_true(isupper((unsigned char)c[0]));
		for (const char *p = c; *p; p++)
			assert_true(isalnum((unsigned char)*p));
		assert_true(strlen(finops_focus_columns[i]) <= 50);
		for (size_t j = i + 1; j < n; j++)
			assert_string_not_equal(finops_focus_columns[i],
						finops_focus_columns[j]);
	}
	assert_true(seen_custom);
}

static void test_number_format(void **state)
{
	char b[64];

	(void)state;
	assert_int_equal(finops_fmt_micros(460000, b, sizeof b), 4);
	assert_string_equal(b, "0.46");
	finops_fmt_micros(12000000, b, sizeof b);
	assert_string_equal(b, "12");
	finops_fmt_micros(0, b, sizeof b);
	assert_string_equal(b, "0");
	finops_fmt_micros(-500000, b, sizeof b);
	assert_string_equal(b, "-0.5");
	finops_fmt_micros(1234567890123, b, sizeof b);
	assert_string_equal(b, "1234567.890123"); /* no separators */
	finops_fmt_hours(HOUR_NS / 2, b, sizeof b);
	assert_string_equal(b, "0.5");
	finops_fmt_hours(SR_NS_PER_SEC, b, sizeof b);
	assert_string_equal(b, "0.000277777778");
	finops_fmt_hours(0, b, sizeof b);
	assert_string_equal(b, "0");
	assert_int_equal(finops_fmt_micros(1, b, 3), -ENOSPC);
}

static void test_rows_follow_rules(void **state)
{
	sqlite3 *db = fixture();
	size_t n = 0;
	char *buf = export(db, NULL, &n);
	struct csv c;
	int ncols = (int)finops_focus_ncolumns();

	(void)state;
	csv_parse(buf, &c);
	/* 40 appends; the one crossing midnight Nov 30 -> Dec 1 was split */
	assert_int_equal(n, 41);
	assert_int_equal(c.nrows, 42);
	for (int i = 0; i < ncols; i++)
		assert_string_equal(c.f[0][i], finops_focus_columns[i]);
	for (int r = 1; r < c.nrows; r++) {
		static const char *const numeric[] = {
			"BilledCost", "ContractedCost", "EffectiveCost", "ListCost",
			"PricingQuantity", "ConsumedQuantity", "ListUnitPrice",
			"x_AcceleratorCount", "x_Utilization", "x_ReservedUnitPrice",
			"x_ReservedCost", "x_IdleCost", "x_JobId", "x_NodeId",
		};
		static const char *const dates[] = {
			"BillingPeriodStart", "BillingPeriodEnd",
			"ChargePeriodStart", "ChargePeriodEnd",
		};
		static const char *const not_null[] = {
			"BilledCost", "BillingAccountId", "BillingAccountName",
			"BillingCurrency", "BillingPeriodStart", "BillingPeriodEnd",
			"ChargeCategory", "ChargeDescription", "ChargePeriodStart",
			"ChargePeriodEnd", "ContractedCost", "EffectiveCost",
			"InvoiceIssuerName", "ListCost", "PricingQuantity",
			"PricingUnit", "ProviderName", "PublisherName",
			"ServiceCategory", "ServiceName", "PricingCategory",
			"RegionId", "RegionName", "ResourceId", "ResourceType",
			"ConsumedQuantity", "ConsumedUnit", "ListUnitPrice", "SkuId",
			"Tags", "x_NodeId", "x_UsageState", "x_IdleCost",
		};
		int64_t bps, bpe, cps, cpe;

		assert_int_equal(c.nf[r], ncols);
		/* NullHandling: a value is either absent (empty, unquoted)
		 * or a real value - never whitespace or a placeholder */
		for (int i = 0; i < ncols; i++) {
			const char *v = c.f[r][i];

			if (!*v) {
				assert_false(c.quoted[r][i]);
				continue;
			}
			assert_true(strspn(v, " \t") < strlen(v));
			assert_string_not_equal(v, "NULL");
			assert_string_not_equal(v, "N/A");
			assert_string_not_equal(v, "Not Applicable");
		}
		for (size_t i = 0; i < sizeof not_null / sizeof not_null[0]; i++)
			assert_true(*val(&c, r, not_null[i]));
		for (size_t i = 0; i < sizeof numeric / sizeof numeric[0]; i++) {
			const char *v = val(&c, r, numeric[i]);

			assert_true(!*v || is_focus_number(v));
		}
		for (size_t i = 0; i < sizeof dates / sizeof dates[0]; i++)
			assert_true(is_focus_datetime(val(&c, r, dates[i])));
		/* allowed values */
		assert_string_equal(val(&c, r, "ChargeCategory"), "Usage");
		assert_string_equal(val(&c, r, "ChargeClass"), "");
		assert_string_equal(val(&c, r, "BillingCurrency"), "USD");
		assert_string_equal(val(&c, r, "ServiceCategory"), "Compute");
		assert_string_equal(val(&c, r, "PricingUnit"), "Hours");
		assert_string_equal(val(&c, r, "ConsumedUnit"), "Hours");
		assert_string_equal(val(&c, r, "ProviderName"), "Amazon Web Services");
		assert_string_equal(val(&c, r, "BillingAccountId"), "acct-1");
		assert_true(!strcmp(val(&c, r, "PricingCategory"), "Standard") ||
			    !strcmp(val(&c, r, "PricingCategory"), "Dynamic") ||
			    !strcmp(val(&c, r, "PricingCategory"), "Committed"));
		assert_true(!strcmp(val(&c, r, "x_UsageState"), "Busy") ||
			    !strcmp(val(&c, r, "x_UsageState"), "Idle"));
		/* periods: start < end, charge period inside the billing
		 * period, billing period = one calendar month */
		bps = ts(val(&c, r, "BillingPeriodStart"));
		bpe = ts(val(&c, r, "BillingPeriodEnd"));
		cps = ts(val(&c, r, "ChargePeriodStart"));
		cpe = ts(val(&c, r, "ChargePeriodEnd"));
		assert_true(cps < cpe);
		assert_true(bps <= cps && cpe <= bpe);
		assert_string_equal(val(&c, r, "BillingPeriodStart") + 7, "-01T00:00:00Z");
		assert_string_equal(val(&c, r, "BillingPeriodEnd") + 7, "-01T00:00:00Z");
		/* ListUnitPrice x PricingQuantity = ListCost to the micro-dollar;
		 * ContractedCost = ListCost; EffectiveCost = BilledCost */
		{
			double lup = strtod(val(&c, r, "ListUnitPrice"), NULL);
			double qty = strtod(val(&c, r, "PricingQuantity"), NULL);
			double lc = strtod(val(&c, r, "ListCost"), NULL);

			assert_true(lup * qty - lc < 0.0000005 + 1e-9 &&
				    lc - lup * qty < 0.0000005 + 1e-9);
			assert_string_equal(val(&c, r, "ConsumedQuantity"),
					    val(&c, r, "PricingQuantity"));
		}
		assert_string_equal(val(&c, r, "ContractedCost"), val(&c, r, "ListCost"));
		assert_string_equal(val(&c, r, "EffectiveCost"), val(&c, r, "BilledCost"));
		/* idle cost is the billed cost of idle rows, 0 otherwise */
		if (!strcmp(val(&c, r, "x_UsageState"), "Idle"))
			assert_string_equal(val(&c, r, "x_IdleCost"), val(&c, r, "BilledCost"));
		else
			assert_string_equal(val(&c, r, "x_IdleCost"), "0");
		/* Tags: a JSON object of unique keys with scalar values */
		{
			json_t *t = json_loads(val(&c, r, "Tags"), 0, NULL);
			const char *k;
			json_t *v;

			assert_non_null(t);
			assert_true(json_is_object(t));
			json_object_foreach(t, k, v) {
				assert_false(json_is_object(v) || json_is_array(v));
				assert_int_equal(strncmp(k, "spotrun/", 8), 0);
			}
			json_decref(t);
		}
		/* RegionName filled whenever RegionId is */
		assert_true(!*val(&c, r, "RegionId") == !*val(&c, r, "RegionName"));
	}
	/* the row whose zone needs quoting round-trips exactly */
	{
		int found = 0;

		for (int r = 1; r < c.nrows; r++)
			found |= !strcmp(val(&c, r, "AvailabilityZone"), "zone \"b\", east");
		assert_true(found);
	}
	/* rows crossing into December get December's billing period */
	assert_string_equal(val(&c, 1, "BillingPeriodStart"), "2026-11-01T00:00:00Z");
	assert_string_equal(val(&c, 1, "BillingPeriodEnd"), "2026-12-01T00:00:00Z");
	assert_string_equal(val(&c, 41, "BillingPeriodStart"), "2026-12-01T00:00:00Z");
	assert_string_equal(val(&c, 2, "ChargePeriodEnd"), "2026-12-01T00:00:00Z");
	assert_string_equal(val(&c, 3, "ChargePeriodStart"), "2026-12-01T00:00:00Z");
	assert_string_equal(val(&c, 3, "x_NodeId"), val(&c, 2, "x_NodeId"));
	csv_free(&c);
	free(buf);
	sqlite3_close(db);
}

/* The report totals (what `spotrun cost --json` prints) equal the column
 * sums of the FOCUS rows, for the same filter. */
static void test_sums_match_report(void **state)
{
	sqlite3 *db = fixture();
	struct finops_filter filters[] = {
		{ 0, 0, 0 },
		{ T0 + 10 * SR_NS_PER_SEC, 0, 0 },
		{ 0, 0, 5 },
	};

	(void)state;
	for (size_t k = 0; k < sizeof filters / sizeof filters[0]; k++) {
		struct finops_report rep;
		struct sr_err e;
		size_t n;
		char *buf = export(db, &filters[k], &n);
		struct csv c;
		int64_t billed = 0, eff = 0, list = 0, idle = 0, rcost = 0;

		csv_parse(buf, &c);
		for (int r = 1; r < c.nrows; r++) {
			billed += micros(val(&c, r, "BilledCost"));
			eff += micros(val(&c, r, "EffectiveCost"));
			list += micros(val(&c, r, "ListCost"));
			idle += micros(val(&c, r, "x_IdleCost"));
			if (*val(&c, r, "x_ReservedCost"))
				rcost += micros(val(&c, r, "x_ReservedCost"));
		}
		assert_int_equal(ON_STORE(db, st_, finops_report_build(st_, &filters[k], FINOPS_BY_DAY,
						     &rep, &e)), 0);
		assert_int_equal((int64_t)n, rep.total.rows);
		assert_int_equal(billed, rep.total.cost);
		assert_int_equal(eff, rep.total.cost);
		assert_int_equal(list, rep.total.list_cost);
		assert_int_equal(list - eff, rep.total.savings_vs_list);
		assert_int_equal(idle, rep.total.idle_cost);
		assert_int_equal(rcost, rep.total.reserved_cost);
		assert_true(n > 0);
		finops_report_free(&rep);
		csv_free(&c);
		free(buf);
	}
	sqlite3_close(db);
}

/* A bill applied to job-days (billed.h): BilledCost = EffectiveCost is
 * each row's share, the rows of a job-day sum to its billed figure to the
 * micro-dollar (odd ratios, more rows than the cents), x_EstimatedCost
 * keeps the estimate, and a day no bill covers keeps it too. */
static void test_billed_spread(void **state)
{
	sqlite3 *db = fixture();
	size_t n;
	char *buf = export(db, NULL, &n);
	struct csv c;
	/* the estimate per (job, day) from the export before the bill */
	struct { int64_t job, day, est, billed, got, got_est; } cell[8];
	size_t nc = 0;
	struct finops_billed v[8];
	struct sr_err e;

	(void)state;
	csv_parse(buf, &c);
	for (int r = 1; r < c.nrows; r++) {
		int64_t t = 0, job = atoll(val(&c, r, "x_JobId")), day;
		size_t k;

		assert_int_equal(sr_time_parse_rfc3339(val(&c, r, "ChargePeriodStart"),
						       &t, NULL), 0);
		day = t / (INT64_C(86400) * SR_NS_PER_SEC);
		assert_string_equal(val(&c, r, "x_EstimatedCost"), val(&c, r, "BilledCost"));
		for (k = 0; k < nc && (cell[k].job != job || cell[k].day != day); k++)
			;
		if (k == nc) {
			assert_true(nc < 8);
			memset(&cell[nc++], 0, sizeof cell[0]);
			cell[k].job = job;
			cell[k].day = day;
		}
		cell[k].est += micros(val(&c, r, "BilledCost"));
	}
	csv_free(&c);
	free(buf);
	assert_true(nc >= 3); /* jobs 0, 4 and 5, two days */
	/* bill every cell but the last: at 7/3 of the estimate, minus 1 */
	for (size_t k = 0; k + 1 < nc; k++) {
		cell[k].billed = cell[k].est * 7 / 3 - 1;
		v[k] = (struct finops_billed){ .job_id = cell[k].job, .day = cell[k].day,
					       .provider = "aws", .estimate = cell[k].est,
					       .billed = cell[k].billed };
	}
	cell[nc - 1].billed = cell[nc - 1].est;
	assert_int_equal(ON_STORE(db, st_, finops_billed_add(st_, v, nc - 1, "bill.csv",
							     T0, &e)), 0);
	buf = export(db, NULL, &n);
	csv_parse(buf, &c);
	for (int r = 1; r < c.nrows; r++) {
		int64_t t = 0, job = atoll(val(&c, r, "x_JobId")), day;
		size_t k;

		assert_string_equal(val(&c, r, "EffectiveCost"), val(&c, r, "BilledCost"));
		assert_int_equal(sr_time_parse_rfc3339(val(&c, r, "ChargePeriodStart"),
						       &t, NULL), 0);
		day = t / (INT64_C(86400) * SR_NS_PER_SEC);
		for (k = 0; cell[k].job != job || cell[k].day != day; k++)
			;
		cell[k].got += micros(val(&c, r, "BilledCost"));
		cell[k].got_est += micros(val(&c, r, "x_EstimatedCost"));
	}
	for (size_t k = 0; k < nc; k++) {
		assert_int_equal(cell[k].got, cell[k].billed);
		assert_int_equal(cell[k].got_est, cell[k].est);
	}
	csv_free(&c);
	free(buf);
	sqlite3_close(db);
}

static void test_export_file(void **state)
{
	sqlite3 *db = fixture();
	char dir[] = "/tmp/focus-XXXXXX", path[64];
	struct sr_err e;
	size_t n = 0;
	FILE *f;
	char head[32];

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/out.csv", dir);
	assert_int_equal(ON_STORE(db, st_, finops_focus_export(st_, NULL, NULL, path, &n, &e)), 0);
	assert_int_equal(n, 41);
	f = fopen(path, "r");
	assert_non_null(f);
	assert_non_null(fgets(head, sizeof head, f));
	assert_int_equal(strncmp(head, "BilledCost,BillingAccountId", 27), 0);
	fclose(f);
	unlink(path);
	/* an unwritable destination is an error naming the path */
	snprintf(path, sizeof path, "%s/missing/out.csv", dir);
	assert_true(ON_STORE(db, st_, finops_focus_export(st_, NULL, NULL, path, &n, &e)) < 0);
	assert_non_null(strstr(e.msg, "missing"));
	rmdir(dir);
	sqlite3_close(db);
}

/* Billing rows of one node with boundaries inside a second (and one row
 * shorter than a second): the ChargePeriods of that resource, in whole
 * seconds, never overlap, and each is non-empty. */
static void test_periods_of_a_node_do_not_overlap(void **state)
{
	static const int64_t cuts_ms[] = { 500, 1500, 2700, 2900, 4200, 5999 };
	sqlite3 *db = NULL;
	struct sr_err e;
	struct ledger_row r = {
		.provider = "aws", .region = "us-east-1", .zone = "us-east-1a",
		.instance_type = "p3.2xlarge", .accelerator = "V100", .gpus = 1,
		.pricing = LEDGER_DYNAMIC, .unit_price = 918700,
		.list_price = 3060000, .reserved_price = 1950000, .job_id = 4,
		.node_id = 9, .busy = true, .util_permille = 873,
	};
	struct csv c;
	char *buf;
	size_t n = 0;
	int64_t prev_end = 0;

	(void)state;
	assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_OK);
	assert_int_equal(ledger_migrate(db, &e), 0);
	for (size_t i = 0; i + 1 < sizeof cuts_ms / sizeof cuts_ms[0]; i++) {
		r.start_ns = T0 + cuts_ms[i] * 1000000;
		r.end_ns = T0 + cuts_ms[i + 1] * 1000000;
		r.billed_ns = (r.end_ns - r.start_ns) * 3600;
		assert_int_equal(ledger_append(db, &r, NULL, &e), 0);
	}
	buf = export(db, NULL, &n);
	csv_parse(buf, &c);
	assert_int_equal(n, 5);
	for (int k = 1; k < c.nrows; k++) {
		int64_t cps = ts(val(&c, k, "ChargePeriodStart"));
		int64_t cpe = ts(val(&c, k, "ChargePeriodEnd"));

		assert_true(cps < cpe);
		if (k > 1)
			assert_true(cps >= prev_end);
		prev_end = cpe;
	}
	csv_free(&c);
	free(buf);
	sqlite3_close(db);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_columns),
		cmocka_unit_test(test_number_format),
		cmocka_unit_test(test_rows_follow_rules),
		cmocka_unit_test(test_sums_match_report),
		cmocka_unit_test(test_billed_spread),
		cmocka_unit_test(test_export_file),
		cmocka_unit_test(test_periods_of_a_node_do_not_overlap),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
