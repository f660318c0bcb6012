/*
 * test_finops_bills.c - the clouds' billing exports spotrun cost
 * reconcile reads, as their providers document the columns: AWS CUR 2.0
 * (plain and gzipped), the GCP billing export to BigQuery saved as CSV
 * and as newline-delimited JSON, Azure cost details (MCA names).  Each
 * bill holds the instance, its disk, egress, a credit, a leaked instance
 * and a foreign line; the reconcile report must sort them into the parts
 * and explain the whole difference.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include <cmocka.h>

#include "common/timeutil.h"
#include "finops/reconcile.h"

/* Data Exports CUR 2.0: line_item_*, resource_tags as a map with
 * "user_" keys. */
static const char cur[] =
	"bill_payer_account_id,line_item_usage_start_date,line_item_usage_end_date,"
	"line_item_line_item_type,line_item_product_code,line_item_usage_type,"
	"line_item_resource_id,line_item_unblended_cost,resource_tags\n"
	"111,2026-12-02T00:00:00Z,2026-12-02T01:00:00Z,Usage,AmazonEC2,"
	"USE1-SpotUsage:p3.2xlarge,i-0abc,1.0000004,"
	"\"{\"\"user_spotrun:node\"\":\"\"7\"\",\"\"user_spotrun:job\"\":\"\"3\"\"}\"\n"
	"111,2026-12-02T00:00:00Z,2026-12-02T01:00:00Z,Usage,AmazonEC2,"
	"USE1-EBS:VolumeUsage.gp3,vol-01,0.011,"
	"\"{\"\"user_spotrun:node\"\":\"\"7\"\"}\"\n"
	"111,2026-12-02T00:00:00Z,2026-12-02T01:00:00Z,Usage,AWSDataTransfer,"
	"USE1-DataTransfer-Out-Bytes,i-0abc,0.09,{}\n"
	"111,2026-12-02T00:00:00Z,2026-12-02T01:00:00Z,Credit,AmazonEC2,,,-0.5,"
	"\"{\"\"user_spotrun:node\"\":\"\"7\"\"}\"\n"
	"111,2026-12-02T00:00:00Z,2026-12-02T01:00:00Z,Usage,AmazonEC2,"
	"USE1-SpotUsage:p3.2xlarge,i-0leak,0.3,"
	"\"{\"\"user_spotrun:job\"\":\"\"3\"\"}\"\n"
	"111,2026-12-02T00:00:00Z,2026-12-02T01:00:00Z,Tax,AmazonEC2,,,0.05,{}\n";

/* BigQuery standard usage cost export, flattened by bq extract. */
static const char gcp_csv[] =
	"billing_account_id,service.description,sku.description,usage_start_time,"
	"usage_end_time,labels,cost,currency,credits,cost_type,resource.name\n"
	"A-1,Compute Engine,Spot Preemptible Nvidia Tesla V100 GPU running in "
	"Americas,2026-12-02 00:00:00 UTC,2026-12-02 01:00:00 UTC,"
	"\"[{\"\"key\"\":\"\"spotrun-node\"\",\"\"value\"\":\"\"7\"\"}]\",1.0000004,USD,"
	"\"[{\"\"name\"\":\"\"FreeTrial\"\",\"\"amount\"\":-0.5}]\",regular,i-0abc\n"
	"A-1,Compute Engine,Storage PD Capacity,2026-12-02 00:00:00 UTC,"
	"2026-12-02 01:00:00 UTC,"
	"\"[{\"\"key\"\":\"\"spotrun-node\"\",\"\"value\"\":\"\"7\"\"}]\",0.011,USD,[],"
	"regular,disk-01\n"
	"A-1,Compute Engine,Network Internet Egress from Americas to Americas,"
	"2026-12-02 00:00:00 UTC,2026-12-02 01:00:00 UTC,[],0.09,USD,[],regular,"
	"i-0abc\n"
	"A-1,Compute Engine,N1 Predefined Instance Core,2026-12-02 00:00:00 UTC,"
	"2026-12-02 01:00:00 UTC,"
	"\"[{\"\"key\"\":\"\"spotrun-job\"\",\"\"value\"\":\"\"3\"\"}]\",0.3,USD,[],"
	"regular,i-0leak\n"
	"A-1,Cloud Storage,Standard Storage,2026-12-02 00:00:00 UTC,"
	"2026-12-02 01:00:00 UTC,[],0.05,USD,[],regular,bucket-x\n";

static const char gcp_json[] =
	"{\"service\":{\"description\":\"Compute Engine\"},\"sku\":{\"description\":"
	"\"Spot Preemptible Nvidia Tesla V100 GPU\"},\"usage_start_time\":"
	"\"2026-12-02 00:00:00 UTC\",\"labels\":[{\"key\":\"spotrun-node\",\"value\":"
	"\"7\"}],\"cost\":1.0000004,\"credits\":[{\"name\":\"FreeTrial\",\"amount\":"
	"-0.5}],\"cost_type\":\"regular\",\"resource\":{\"name\":\"i-0abc\"}}\n"
	"{\"service\":{\"description\":\"Compute Engine\"},\"sku\":{\"description\":"
	"\"Storage PD Capacity\"},\"usage_start_time\":\"2026-12-02 00:00:00 UTC\","
	"\"labels\":[{\"key\":\"spotrun-node\",\"value\":\"7\"}],\"cost\":0.011,"
	"\"credits\":[],\"resource\":{\"name\":\"disk-01\"}}\n"
	"{\"service\":{\"description\":\"Compute Engine\"},\"sku\":{\"description\":"
	"\"Network Internet Egress\"},\"usage_start_time\":\"2026-12-02 00:00:00 UTC\","
	"\"labels\":[],\"cost\":0.09,\"resource\":{\"name\":\"i-0abc\"}}\n"
	"{\"service\":{\"description\":\"Compute Engine\"},\"sku\":{\"description\":"
	"\"N1 Core\"},\"usage_start_time\":\"2026-12-02 00:00:00 UTC\",\"labels\":"
	"[{\"key\":\"spotrun-job\",\"value\":\"3\"}],\"cost\":0.3,\"resource\":"
	"{\"name\":\"i-0leak\"}}\n"
	"{\"service\":{\"description\":\"Cloud Storage\"},\"sku\":{\"description\":"
	"\"Standard Storage\"},\"usage_start_time\":\"2026-12-02 00:00:00 UTC\","
	"\"labels\":[],\"cost\":0.05,\"resource\":{\"name\":\"bucket-x\"}}\n";

/* Cost details, MCA column names; tags as Azure writes them. */
static const char azure[] =
	"date,serviceFamily,meterCategory,meterSubCategory,resourceId,chargeType,"
	"costInBillingCurrency,tags\n"
	"12/02/2026,Compute,Virtual Machines,NCv3 Series,/subscriptions/s/"
	"resourceGroups/rg/providers/Microsoft.Compute/virtualMachines/i-0abc,"
	"Usage,1.0000004,\"\"\"spotrun:node\"\": \"\"7\"\"\"\n"
	"12/02/2026,Storage,Storage,Premium SSD,/subscriptions/s/resourceGroups/rg/"
	"providers/Microsoft.Compute/disks/disk-01,Usage,0.011,"
	"\"\"\"spotrun:node\"\": \"\"7\"\"\"\n"
	"12/02/2026,Networking,Bandwidth,Inter-Region,/subscriptions/s/"
	"resourceGroups/rg/providers/Microsoft.Compute/virtualMachines/i-0abc,"
	"Usage,0.09,\n"
	"12/02/2026,Compute,Virtual Machines,NCv3 Series,/subscriptions/s/"
	"resourceGroups/rg/providers/Microsoft.Compute/virtualMachines/i-0abc,"
	"Refund,-0.5,\"\"\"spotrun:node\"\": \"\"7\"\"\"\n"
	"12/02/2026,Compute,Virtual Machines,NCv3 Series,/subscriptions/s/"
	"resourceGroups/rg/providers/Microsoft.Compute/virtualMachines/i-0leak,"
	"Usage,0.3,\"\"\"spotrun:job\"\": \"\"3\"\"\"\n"
	"12/02/2026,Storage,Storage,Blob,/subscriptions/s/resourceGroups/rg/"
	"providers/Microsoft.Storage/storageAccounts/other,Usage,0.05,\n";

static void check(const char *buf, size_t len, const char *name)
{
	/* 2026-12-02 is day 20789 */
	struct rec_node nodes[] = { { 7, 3, "aws", "i-0abc" } };
	struct rec_ledger led[] = { { 7, 20789, 920000 } };
	struct rec_line *lines = NULL;
	struct rec_report r;
	struct sr_err e = { 0 };
	size_t n = 0;

	if (finops_bill_parse(buf, len, name, &lines, &n, &e))
		fail_msg("%s: %s", name, e.msg);
	assert_int_equal(finops_reconcile(nodes, 1, led, 1, lines, n, &r, &e), 0);
	/* the instance 1.0000004 (rounded to $1.000000) - 0.92 ledger */
	assert_true(r.part[REC_COMPUTE] == 80000);
	assert_true(r.part[REC_DISK] == 11000);
	assert_true(r.part[REC_EGRESS] == 90000);
	assert_true(r.part[REC_CREDIT] == -500000);
	assert_true(r.part[REC_OTHER] == 0);
	assert_true(r.leaked == 300000);
	assert_int_equal(r.nleaks, 1);
	assert_string_equal(r.leaks[0].resource_id, "i-0leak");
	assert_int_equal(r.foreign_lines, 1);
	assert_true(r.foreign_cost == 50000);
	assert_true(r.explained == r.diff);
	assert_true(r.diff == r.bill - 920000);
	assert_int_equal(r.ncells, 1);
	assert_true(r.cells[0].job == 3 && r.cells[0].day == 20789);
	finops_reconcile_free(&r);
	free(lines);
}

static void test_formats(void **state)
{
	(void)state;
	check(cur, sizeof cur - 1, "cur.csv");
	check(gcp_csv, sizeof gcp_csv - 1, "gcp.csv");
	check(gcp_json, sizeof gcp_json - 1, "gcp.json");
	check(azure, sizeof azure - 1, "azure.csv");
}

/* AWS delivers CUR 2.0 as .csv.gz */
static void test_gzip(void **state)
{
	unsigned char out[8192];
	z_stream z = { 0 };

	(void)state;
	assert_int_equal(deflateInit2(&z, 6, Z_DEFLATED, 16 + MAX_WBITS, 8,
				      Z_DEFAULT_STRATEGY), Z_OK);
	z.next_in = (unsigned char *)cur;
	z.avail_in = sizeof cur - 1;
	z.next_out = out;
	z.avail_out = sizeof out;
	assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
	check((const char *)out, z.total_out, "cur.csv.gz");
	deflateEnd(&z);
	/* a cut stream is refused */
	{
		struct rec_line *l = NULL;
		size_t n = 0;
		struct sr_err e = { 0 };

		assert_int_equal(finops_bill_parse((const char *)out, 40, "cut.gz", &l,
						   &n, &e), -SR_EPARSE);
		assert_non_null(strstr(e.msg, "cut.gz: not a whole gzip stream"));
	}
}

static void test_errors(void **state)
{
	static const struct { const char *bill, *msg; } bad[] = {
		{ "a,b\n1,2\n", "x.csv: not a bill spotrun reads" },
		{ "line_item_resource_id,line_item_unblended_cost,line_item_usage_"
		  "start_date\ni-1,lots,2026-12-02T00:00:00Z\n",
		  "x.csv:2: line_item_unblended_cost: 'lots' is not an amount" },
		{ "date,meterCategory,resourceId,costInBillingCurrency\n"
		  "yesterday,Storage,/x/y,1\n",
		  "x.csv:2: Date: 'yesterday' is not a date/time" },
		{ "{\"cost\": 1}\n", "x.csv:1: a row needs cost (a number) and "
		  "usage_start_time" },
	};
	(void)state;
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct rec_line *l = NULL;
		size_t n = 0;
		struct sr_err e = { 0 };

		assert_int_equal(finops_bill_parse(bad[i].bill, strlen(bad[i].bill),
						   "x.csv", &l, &n, &e), -SR_EPARSE);
		if (!strstr(e.msg, bad[i].msg))
			fail_msg("want '%s', got '%s'", bad[i].msg, e.msg);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_formats),
		cmocka_unit_test(test_gzip),
		cmocka_unit_test(test_errors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
