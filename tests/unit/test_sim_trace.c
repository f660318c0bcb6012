/* Unit tests: lib/sim/trace.c, trace_csv.c - formats, polarity, errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "sim/trace.h"

static struct trace *parse(const char *text, enum trace_format fmt)
{
	struct trace *t = NULL;
	struct sr_err e = { 0 };
	int rc = trace_parse(text, strlen(text), "t.json", fmt, &t, &e);

	if (rc)
		fail_msg("unexpected error: %s", e.msg);
	return t;
}

static void bad(const char *text, enum trace_format fmt, const char *needle)
{
	struct trace *t = (struct trace *)1;
	struct sr_err e = { 0 };

	assert_true(trace_parse(text, strlen(text), "bad.json", fmt, &t, &e) < 0);
	assert_null(t);
	if (!strstr(e.msg, needle))
		fail_msg("message '%s' lacks '%s'", e.msg, needle);
	assert_non_null(strstr(e.msg, "bad.json"));
}

/* CBL: value = available instances; > 0 is available. */
static void test_cbl_polarity(void **state)
{
	struct trace *t = parse("{\"metadata\":{\"gap_seconds\":600},\"data\":[0,1,3,0]}",
				TRACE_FMT_AUTO);

	(void)state;
	assert_int_equal(t->format, TRACE_FMT_CBL);
	assert_int_equal(t->gap_s, 600);
	assert_int_equal(t->n, 4);
	assert_int_equal(t->avail[0], 0);
	assert_int_equal(t->avail[1], 1);
	assert_int_equal(t->avail[2], 1);
	assert_int_equal(t->avail[3], 0);
	assert_null(t->price);
	assert_true(t->od_price < 0);
	trace_free(t);
}

/* SkyNomad JSON: 1 = UNAVAILABLE, prices per tick, od from price_info. */
static void test_skynomad_polarity(void **state)
{
	struct trace *t = parse(
		"{\"metadata\":{\"gap_seconds\":600,\"price_info\":{\"price\":0.9,"
		"\"on_demand_price\":3.06}},\"data\":[1,0,0,1],"
		"\"prices\":[0.9,0.8,0.7,0.6]}", TRACE_FMT_AUTO);

	(void)state;
	assert_int_equal(t->format, TRACE_FMT_SKYNOMAD);
	assert_int_equal(t->avail[0], 0);
	assert_int_equal(t->avail[1], 1);
	assert_int_equal(t->avail[2], 1);
	assert_int_equal(t->avail[3], 0);
	assert_float_equal(t->price[2], 0.7, 1e-12);
	assert_float_equal(t->od_price, 3.06, 1e-12);
	trace_free(t);

	/* price_info without per-tick prices: the constant price applies. */
	t = parse("{\"metadata\":{\"gap_seconds\":60,\"price_info\":{\"price\":1.5}},"
		  "\"data\":[0,1]}", TRACE_FMT_AUTO);
	assert_int_equal(t->format, TRACE_FMT_SKYNOMAD);
	assert_float_equal(t->price[1], 1.5, 1e-12);
	assert_int_equal(t->avail[0], 1);
	trace_free(t);
}

/* A CBL file with top-level "prices" but no price_info keeps CBL
 * polarity (as the bundled cbl/preemption files do); the override flips. */
static void test_prices_without_price_info(void **state)
{
	const char *j = "{\"metadata\":{\"gap_seconds\":32},\"data\":[0,1,1],"
			"\"prices\":[0.918,0.918,0.918]}";
	struct trace *t = parse(j, TRACE_FMT_AUTO);

	(void)state;
	assert_int_equal(t->format, TRACE_FMT_CBL);
	assert_int_equal(t->avail[0], 0);
	assert_int_equal(t->avail[1], 1);
	assert_float_equal(t->price[0], 0.918, 1e-12);
	trace_free(t);
	t = parse(j, TRACE_FMT_SKYNOMAD);
	assert_int_equal(t->avail[0], 1);
	assert_int_equal(t->avail[1], 0);
	trace_free(t);
}

/* CSV: 1 = available; gap = median interval of the dates. */
static void test_csv_polarity_and_gap(void **state)
{
	struct trace *t = parse("date,availability\n"
				"2023-02-15 22:08:16,0\n"
				"2023-02-15 22:11:31,1\r\n"
				"2023-02-15 22:14:46,1\n"
				"2023-02-15 22:18:02,0\n", TRACE_FMT_AUTO);

	(void)state;
	assert_int_equal(t->format, TRACE_FMT_CSV);
	assert_int_equal(t->n, 4);
	assert_int_equal(t->gap_s, 195);
	assert_int_equal(t->avail[0], 0);
	assert_int_equal(t->avail[1], 1);
	assert_int_equal(t->avail[3], 0);
	trace_free(t);
	/* Columns by header name, in any order. */
	t = parse("availability,zone,date\n1,a,2023-01-01 00:00:00\n0,a,2023-01-01 00:10:00\n",
		  TRACE_FMT_CSV);
	assert_int_equal(t->gap_s, 600);
	assert_int_equal(t->avail[0], 1);
	assert_int_equal(t->avail[1], 0);
	trace_free(t);
	/* RFC 3339 dates through the one parser: fractional seconds and
	 * offsets (the sscanf before took neither) mixed with the plain form */
	t = parse("date,availability\n"
		  "2023-01-01 00:00:00,1\n"
		  "2023-01-01T00:10:00.250Z,1\n"
		  "2023-01-01T01:20:00+01:00,0\n"
		  "2022-12-31T20:00:00.9-04:30,1\n", TRACE_FMT_CSV);
	assert_int_equal(t->n, 4);
	assert_int_equal(t->gap_s, 600);
	trace_free(t);
}

/* RFC 4180 through the shared reader: blank lines, quoted fields, CRLF,
 * and errors that name the physical line. */
static void test_csv_rfc4180(void **state)
{
	struct trace *t = parse("\r\n"
				"\"date\",\"availability\",\"note\"\r\n"
				"\r\n"
				"\"2023-01-01 00:00:00\",\"1\",\"a, b\"\r\n"
				"\n"
				"2023-01-01 00:10:00, 0 ,\"say \"\"hi\"\"\"\r\n"
				"2023-01-01 00:20:00,1,\"two\nlines\"\n", TRACE_FMT_AUTO);

	(void)state;
	assert_int_equal(t->n, 3);
	assert_int_equal(t->gap_s, 600);
	assert_int_equal(t->avail[0], 1);
	assert_int_equal(t->avail[1], 0);
	assert_int_equal(t->avail[2], 1);
	trace_free(t);
	/* Line numbers count blank lines and the lines inside quotes. */
	bad("date,availability\n\n\n2023-01-01 00:00:00,1\n\n2023-01-01 00:01:00,7\n",
	    TRACE_FMT_AUTO, "bad.json:6: availability: expected 0 or 1, got '7'");
	bad("date,availability,x\n2023-01-01 00:00:00,1,\"a\nb\"\n2023-01-01 00:01:00,x,\n",
	    TRACE_FMT_AUTO, "bad.json:4: availability");
	bad("date,availability\r\n2023-01-01 00:00:00,1\r\n\r\n2023-01-01 00:01:00,1,9\r\n",
	    TRACE_FMT_AUTO, "bad.json:4: expected 2 fields, got 3");
	bad("date,availability\n2023-01-01 00:00:00,\"1\n", TRACE_FMT_AUTO,
	    "bad.json:2: unterminated quoted field");
	bad("date,availability\n2023-01-01 00:00:00,1\"x\n", TRACE_FMT_AUTO,
	    "bad.json:2: field 2: quote inside unquoted field");
}

static void test_bad_files(void **state)
{
	(void)state;
	bad("{\"metadata\":{\"gap_seconds\":60},\"data\":[0,1,", TRACE_FMT_AUTO, "bad.json:1:");
	bad("{\"data\":[0,1]}", TRACE_FMT_AUTO, "metadata");
	bad("{\"metadata\":{},\"data\":[0,1]}", TRACE_FMT_AUTO, "gap_seconds: missing");
	bad("{\"metadata\":{\"gap_seconds\":-5},\"data\":[0]}", TRACE_FMT_AUTO, "gap_seconds");
	bad("{\"metadata\":{\"gap_seconds\":1.5},\"data\":[0]}", TRACE_FMT_AUTO, "whole number");
	bad("{\"metadata\":{\"gap_seconds\":60},\"data\":[0,1,1,\"x\"]}", TRACE_FMT_AUTO, "data[3]");
	bad("{\"metadata\":{\"gap_seconds\":60},\"data\":[0,-1]}", TRACE_FMT_AUTO, "data[1]");
	bad("{\"metadata\":{\"gap_seconds\":60},\"data\":[]}", TRACE_FMT_AUTO, "empty");
	bad("{\"metadata\":{\"gap_seconds\":60},\"data\":[0,1],\"prices\":[1]}",
	    TRACE_FMT_AUTO, "prices: 1 entries but data has 2");
	bad("{\"metadata\":{\"gap_seconds\":60},\"data\":[0,1],\"prices\":[1,\"a\"]}",
	    TRACE_FMT_AUTO, "prices[1]");
	bad("{\"metadata\":{\"gap_seconds\":60,\"price_info\":{\"price\":1}},\"data\":[0,2]}",
	    TRACE_FMT_AUTO, "data[1]: expected 0 (available) or 1 (unavailable)");
	bad("{\"metadata\":{\"gap_seconds\":60,\"price_info\":{\"on_demand_price\":0}},\"data\":[0]}",
	    TRACE_FMT_AUTO, "on_demand_price");
	bad("date,availability\n2023-01-01 00:00:00,1\n2023-01-01 00:01:00,2\n",
	    TRACE_FMT_AUTO, "bad.json:3: availability");
	bad("date,availability\n2023-01-01 00:00:00,1\nyesterday,1\n",
	    TRACE_FMT_AUTO, "bad.json:3: date");
	bad("date,availability\n2023-01-01 00:00:00,1\n2023-02-30 00:00:00,1\n",
	    TRACE_FMT_AUTO, "bad.json:3: date: expected 'YYYY-MM-DD HH:MM:SS' or RFC "
	    "3339: time '2023-02-30 00:00:00': field out of range");
	bad("date,availability\n2023-01-01 00:00:00,1\n2023-01-01 00:01:00+0100,1\n",
	    TRACE_FMT_AUTO, "bad.json:3: date");
	bad("date,availability\n2023-01-01 00:00:00.3,1\n2023-01-01 00:00:00.7,1\n",
	    TRACE_FMT_AUTO, "bad.json:3: date does not increase");
	bad("date,availability\n2023-01-01 00:01:00,1\n2023-01-01 00:00:00,1\n",
	    TRACE_FMT_AUTO, "bad.json:3: date does not increase");
	bad("time,avail\n", TRACE_FMT_AUTO, "bad.json:1: expected a header");
	bad("date,availability\n2023-01-01 00:01:00,1\n", TRACE_FMT_AUTO, "at least 2 rows");
	bad("", TRACE_FMT_AUTO, "empty CSV");
}

static void test_load_missing_file(void **state)
{
	struct trace *t = NULL;
	struct sr_err e = { 0 };

	(void)state;
	assert_int_equal(trace_load("/nonexistent/x.json", TRACE_FMT_AUTO, &t, &e), -ENOENT);
	assert_non_null(strstr(e.msg, "/nonexistent/x.json"));
	assert_null(t);
}

/* The bundled traces load with the documented polarity. */
static void test_bundled_traces(void **state)
{
	struct trace *t = NULL;
	struct sr_err e = { 0 };
	size_t up = 0;

	(void)state;
	assert_int_equal(trace_load("data/traces/skynomad/v100_4node_600s/us-east-1f_v100_1/full.json",
				    TRACE_FMT_AUTO, &t, &e), 0);
	assert_int_equal(t->format, TRACE_FMT_SKYNOMAD);
	assert_int_equal(t->n, 1578);
	for (size_t i = 0; i < t->n; i++)
		up += t->avail[i];
	assert_int_equal(up, 613); /* 613 zeros in the file = available */
	assert_float_equal(t->od_price, 3.06, 1e-9);
	trace_free(t);

	assert_int_equal(trace_load("data/traces/cbl/preemption/1-node/gcp-04-30-2023/us-central1-a_c3-88.json",
				    TRACE_FMT_AUTO, &t, &e), 0);
	assert_int_equal(t->format, TRACE_FMT_CBL);
	up = 0;
	for (size_t i = 0; i < t->n; i++)
		up += t->avail[i];
	assert_int_equal(up, t->n - 1); /* only tick 0, before launch, is 0 */
	trace_free(t);
}

static void test_format_names(void **state)
{
	enum trace_format f;

	(void)state;
	assert_int_equal(trace_format_parse("skynomad", &f), 0);
	assert_int_equal(f, TRACE_FMT_SKYNOMAD);
	assert_int_equal(trace_format_parse("csv", &f), 0);
	assert_int_equal(f, TRACE_FMT_CSV);
	assert_int_equal(trace_format_parse("xml", &f), -EINVAL);
	assert_string_equal(trace_format_name(TRACE_FMT_CBL), "cbl");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cbl_polarity),
		cmocka_unit_test(test_skynomad_polarity),
		cmocka_unit_test(test_prices_without_price_info),
		cmocka_unit_test(test_csv_polarity_and_gap),
		cmocka_unit_test(test_csv_rfc4180),
		cmocka_unit_test(test_bad_files),
		cmocka_unit_test(test_load_missing_file),
		cmocka_unit_test(test_bundled_traces),
		cmocka_unit_test(test_format_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
