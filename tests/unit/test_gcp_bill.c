/* Unit tests: lib/gcp/gcpbill (the Cloud Billing Catalog's Compute Engine
 * SKUs): which SKUs count (family, usage type, region, description), the
 * GPU and machine-family names, units + nanos as micro-dollars, a
 * machine's price from its parts, the errors naming the field, and the
 * fetch's pages and bearer token against sr_testsrv. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/testsrv.h"
#include "gcp/gcpbill.h"

#define SKUS "/v1/services/6F81-5844-456A/skus"

/* A SKU in the API's shape: description, usageType, region, unit, price. */
#define SKU(desc, use, reg, unit, units, nanos) \
	"{\"name\":\"services/6F81-5844-456A/skus/X\",\"skuId\":\"X\"," \
	"\"description\":\"" desc "\",\"category\":{\"serviceDisplayName\":" \
	"\"Compute Engine\",\"resourceFamily\":\"Compute\",\"resourceGroup\":" \
	"\"GPU\",\"usageType\":\"" use "\"},\"serviceRegions\":[\"" reg "\"]," \
	"\"pricingInfo\":[{\"summary\":\"\",\"pricingExpression\":{" \
	"\"usageUnit\":\"" unit "\",\"displayQuantity\":1,\"tieredRates\":[" \
	"{\"startUsageAmount\":0,\"unitPrice\":{\"currencyCode\":\"USD\"," \
	"\"units\":\"" units "\",\"nanos\":" nanos "}}]},\"currencyConversionRate\"" \
	":1,\"effectiveTime\":\"2026-12-01T00:00:00Z\"}]," \
	"\"serviceProviderName\":\"Google\"}"

static const char page[] = "{\"skus\":["
	SKU("Nvidia L4 GPU running in Americas", "OnDemand", "us-central1",
	    "h", "0", "560000000") ","
	SKU("Spot Preemptible Nvidia L4 GPU running in Americas", "Preemptible",
	    "us-central1", "h", "0", "223600000") ","
	SKU("Nvidia Tesla A100 GPU running in Americas", "OnDemand",
	    "us-central1", "h", "2", "933908000") ","
	SKU("Nvidia H100 80GB GPU running in Americas", "OnDemand",
	    "us-central1", "h", "9", "796550000") ","
	SKU("G2 Instance Core running in Americas", "OnDemand", "us-central1",
	    "h", "0", "24850000") ","
	SKU("Spot Preemptible G2 Instance Core running in Americas",
	    "Preemptible", "us-central1", "h", "0", "9940000") ","
	SKU("G2 Instance Ram running in Americas", "OnDemand", "us-central1",
	    "GiBy.h", "0", "2912000") ","
	SKU("Spot Preemptible G2 Instance Ram running in Americas",
	    "Preemptible", "us-central1", "GiBy.h", "0", "1165000") ","
	/* the same name again: the first one wins */
	SKU("G2 Instance Core running in Americas", "OnDemand", "us-central1",
	    "h", "7", "0") ","
	/* skipped: another region, a commitment, sole tenancy, not Compute */
	SKU("A2 Instance Core running in Europe", "OnDemand", "europe-west4",
	    "h", "0", "1") ","
	SKU("Commitment v1: G2 Cpu in Americas for 1 Year", "Commit1Yr",
	    "us-central1", "h", "0", "1") ","
	SKU("Sole Tenancy Instance Core running in Americas", "OnDemand",
	    "us-central1", "h", "0", "1") ","
	"{\"description\":\"Network Internet Egress\",\"category\":{"
	"\"resourceFamily\":\"Network\",\"usageType\":\"OnDemand\"},"
	"\"serviceRegions\":[\"us-central1\"]}"
	"],\"nextPageToken\":\"tok-2\"}";

static sr_micros find(const struct gcpbill_rate *v, size_t n,
		      enum gcpbill_kind k, const char *name, bool spot)
{
	for (size_t i = 0; i < n; i++) {
		if (v[i].kind == k && v[i].spot == spot && !strcmp(v[i].name, name))
			return v[i].per_h;
	}
	return -2;
}

static void test_parse_page(void **state)
{
	struct gcpbill_rate *v = NULL;
	size_t n = 0, cap = 0;
	char *next = NULL;
	struct sr_err e = { 0 };

	(void)state;
	assert_int_equal(gcpbill_parse_page(page, strlen(page), "us-central1",
					    &v, &n, &cap, &next, &e), 0);
	assert_int_equal(n, 8);
	assert_string_equal(next, "tok-2");
	assert_int_equal(find(v, n, GCPBILL_GPU, "L4", false), 560000);
	assert_int_equal(find(v, n, GCPBILL_GPU, "L4", true), 223600);
	assert_int_equal(find(v, n, GCPBILL_GPU, "A100", false), 2933908);
	assert_int_equal(find(v, n, GCPBILL_GPU, "H100-80GB", false), 9796550);
	assert_int_equal(find(v, n, GCPBILL_CORE, "g2", false), 24850);
	assert_int_equal(find(v, n, GCPBILL_CORE, "g2", true), 9940);
	assert_int_equal(find(v, n, GCPBILL_RAM, "g2", false), 2912);
	assert_int_equal(find(v, n, GCPBILL_RAM, "g2", true), 1165);
	assert_int_equal(find(v, n, GCPBILL_CORE, "a2", false), -2);
	/* g2-standard-4: 4 vCPU, 16 GiB, one L4 */
	assert_int_equal(gcpbill_price(v, n, "g2-standard-4", 4, 16, "L4", 1,
				       true), 4 * 9940 + 16 * 1165 + 223600);
	assert_int_equal(gcpbill_price(v, n, "g2-standard-4", 4, 16, "L4", 1,
				       false), 4 * 24850 + 16 * 2912 + 560000);
	/* no spot rate of A100's family (a2): not priced */
	assert_int_equal(gcpbill_price(v, n, "a2-highgpu-1g", 12, 85, "A100", 1,
				       false), -1);
	/* a GPU without a rate, a type without a family, no shape */
	assert_int_equal(gcpbill_price(v, n, "g2-standard-4", 4, 16, "T4", 1,
				       false), -1);
	assert_int_equal(gcpbill_price(v, n, "g2", 4, 16, NULL, 0, false), -1);
	assert_int_equal(gcpbill_price(v, n, "g2-standard-4", 0, 16, NULL, 0,
				       false), -1);
	free(v);
	free(next);
}

static void test_h100_matches_its_80gb_sku(void **state)
{
	struct gcpbill_rate v[] = {
		{ GCPBILL_GPU, "H100-80GB", false, 9796550 },
		{ GCPBILL_CORE, "a3", false, 30000 },
		{ GCPBILL_RAM, "a3", false, 4000 },
	};

	(void)state;
	assert_int_equal(gcpbill_price(v, 3, "a3-highgpu-1g", 26, 234, "H100", 1,
				       false), 26 * 30000 + 234 * 4000 + 9796550);
}

static void expect_error(const char *body, const char *what)
{
	struct gcpbill_rate *v = NULL;
	size_t n = 0, cap = 0;
	char *next = NULL;
	struct sr_err e = { 0 };

	assert_int_equal(gcpbill_parse_page(body, strlen(body), "us-central1",
					    &v, &n, &cap, &next, &e),
			 -SR_EPARSE);
	if (!strstr(e.msg, what))
		fail_msg("'%s' does not name '%s'", e.msg, what);
	free(v);
	free(next);
}

static void test_errors_name_the_field(void **state)
{
	(void)state;
	expect_error("{\"skus\": [", "gcp billing: line 1");
	expect_error("[]", "expected an object");
	expect_error("{\"skus\": {}}", "skus: expected an array");
	expect_error("{\"skus\": [{\"description\": \"x\"}]}",
		     "skus[0]: expected description and category");
	expect_error("{\"skus\":[" SKU("Nvidia L4 GPU running in Americas",
				       "OnDemand", "us-central1", "GiBy.h", "0",
				       "1") "]}",
		     "skus[0].pricingInfo[0].pricingExpression.usageUnit 'GiBy.h'");
	expect_error("{\"skus\":[" SKU("Nvidia L4 GPU running in Americas",
				       "OnDemand", "us-central1", "h", "x", "1")
		     "]}", "skus[0] unitPrice: expected units");
	expect_error("{\"skus\":[" SKU("Nvidia L4 GPU running in Americas",
				       "OnDemand", "us-central1", "h", "0",
				       "-5") "]}", "nanos 0..999999999");
}

static void test_fetch_follows_pages_with_the_token(void **state)
{
	struct sr_testsrv *s = sr_testsrv_start(0);
	struct gcpbill_rate *v = NULL;
	size_t n = 0;
	struct sr_err e = { 0 };
	char auth[64];
	const char last[] = "{\"skus\":["
		SKU("Spot Preemptible Nvidia Tesla A100 GPU running in Americas",
		    "Preemptible", "us-central1", "h", "1", "0") "]}";

	(void)state;
	assert_non_null(s);
	sr_testsrv_reply(s, "GET", SKUS, 200, "application/json", page, 0);
	sr_testsrv_reply(s, "GET", SKUS, 200, "application/json", last, 0);
	assert_int_equal(gcpbill_fetch(sr_testsrv_url(s), "ya29.tok",
				       "us-central1", &v, &n, &e), 0);
	assert_int_equal(n, 9);
	assert_int_equal(find(v, n, GCPBILL_GPU, "A100", true), 1000000);
	assert_int_equal(sr_testsrv_nreq(s), 2);
	assert_string_equal(sr_testsrv_req(s, 0)->query,
			    "currencyCode=USD&pageSize=5000");
	assert_string_equal(sr_testsrv_req(s, 1)->query,
			    "currencyCode=USD&pageSize=5000&pageToken=tok-2");
	assert_int_equal(sr_testsrv_req_header(sr_testsrv_req(s, 1),
					       "Authorization", auth,
					       sizeof auth), 0);
	assert_string_equal(auth, "Bearer ya29.tok");
	free(v);
	/* refused: -EACCES naming the endpoint */
	sr_testsrv_stop(s);
	s = sr_testsrv_start(0);
	sr_testsrv_reply(s, "GET", SKUS, 403, "application/json", "{}", 0);
	assert_int_equal(gcpbill_fetch(sr_testsrv_url(s), "t", "us-central1", &v,
				       &n, &e), -EACCES);
	assert_non_null(strstr(e.msg, "HTTP 403"));
	sr_testsrv_stop(s);
	/* a token never leaves on plain http off loopback */
	assert_int_equal(gcpbill_fetch("http://prices.example", "t",
				       "us-central1", &v, &n, &e), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_page),
		cmocka_unit_test(test_h100_matches_its_80gb_sku),
		cmocka_unit_test(test_errors_name_the_field),
		cmocka_unit_test(test_fetch_follows_pages_with_the_token),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
