/*
 * test_market_catalog.c - CSV quoting, each cloud's schema, the GCP join,
 * the offerings overlay, bad rows with file:line, hazards and selection.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "market/catalog.h"
#include "market/catalog_csv.h"

#define USD(x) ((sr_micros)llround((x) * 1000000.0))

static void test_csv_quoting(void **state)
{
	static const char in[] =
		"a,b,c\r\n"
		"\"x, y\",\"say \"\"hi\"\"\",\n"
		"\"multi\nline\",2,3\n"
		"last,,\"\"";
	struct sr_csv r;
	struct sr_err e = { 0 };
	int line = 0;

	(void)state;
	sr_csv_open(&r, in, sizeof in - 1, "t.csv");
	assert_int_equal(sr_csv_next(&r, &line, &e), 1);
	assert_int_equal(line, 1);
	assert_int_equal(r.nfields, 3);
	assert_string_equal(r.fields[2], "c");
	assert_int_equal(sr_csv_next(&r, &line, &e), 1);
	assert_int_equal(line, 2);
	assert_int_equal(r.nfields, 3);
	assert_string_equal(r.fields[0], "x, y");
	assert_string_equal(r.fields[1], "say \"hi\"");
	assert_string_equal(r.fields[2], "");
	assert_int_equal(sr_csv_next(&r, &line, &e), 1);
	assert_int_equal(line, 3);
	assert_string_equal(r.fields[0], "multi\nline");
	assert_int_equal(sr_csv_next(&r, &line, &e), 1);
	assert_int_equal(line, 5); /* the quoted newline counted */
	assert_int_equal(r.nfields, 3);
	assert_string_equal(r.fields[0], "last");
	assert_string_equal(r.fields[2], "");
	assert_int_equal(sr_csv_next(&r, &line, &e), 0);
	sr_csv_close(&r);
}

static void expect_csv_error(const char *in, const char *msg)
{
	struct sr_csv r;
	struct sr_err e = { 0 };
	int line = 0, rc;

	sr_csv_open(&r, in, strlen(in), "bad.csv");
	do
		rc = sr_csv_next(&r, &line, &e);
	while (rc == 1);
	assert_int_equal(rc, -SR_EPARSE);
	assert_non_null(strstr(e.msg, msg));
	sr_csv_close(&r);
}

static void test_csv_errors(void **state)
{
	(void)state;
	expect_csv_error("a,b\n\"open,2\n", "bad.csv:2: unterminated quoted field");
	expect_csv_error("a,b\n\"x\"y,2\n", "bad.csv:2: field 1: text after closing quote");
	expect_csv_error("a,b\n1,x\"y\n", "bad.csv:2: field 2: quote inside unquoted field");
	expect_csv_error("a,b\r1,2\n", "bad.csv:1: bare carriage return");
}

/* Real headers of each cloud's file (v8 AWS/GCP/Lambda, v6 Azure). */
static const char aws_csv[] =
	"InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,GpuInfo,Price,SpotPrice,Region,AvailabilityZone,Arch\n"
	"p5.48xlarge,H100,8.0,192.0,2048.0,\"{'Gpus': [{'Name': 'H100', 'Count': 8}], 'TotalGpuMemoryInMiB': 655360}\",55.04,14.246000,us-east-1,use1-az5,x86_64\n"
	"p5e.48xlarge,H200,8.0,192.0,2048.0,\"{'Gpus': []}\",,8.7348,ap-southeast-3,apse3-az1,x86_64\n"
	"m5.large,,,2.0,8.0,,0.096,0.03,us-east-1,use1-az1,x86_64\n";

static const char azure_csv[] =
	"InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,GpuInfo,Price,SpotPrice,Region,Generation\n"
	"Standard_ND96isr_H100_v5,H100,12,96.0,1900,H100,98.32,98.32,eastus,V2\n"
	"Standard_NC12s_v3,V100,2,12.0,224,V100,6.916,0.788424,centralus,\"V1,V2\"\n";

static const char lambda_csv[] =
	"InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price,Region,GpuInfo,SpotPrice\n"
	"gpu_8x_h100_sxm5,H100,8.0,208.0,1800.0,23.92,us-east-1,\"{'Gpus': [{'Name': 'H100', 'Count': 8.0}]}\",\n";

static const char gcp_csv[] =
	"InstanceType,vCPUs,MemoryGiB,AcceleratorName,AcceleratorCount,GpuInfo,Region,AvailabilityZone,Price,SpotPrice,Derived\n"
	"a3-highgpu-8g,208.0,1872.0,H100,8,,us-central1,us-central1-a,9.46006,2.75246,1\n"
	"a3-megagpu-8g,208.0,1872.0,H100,8,,us-east4,us-east4-a,10.0,2.0,1\n"
	"a2-highgpu-1g,12.0,85.0,A100,1,,us-central1,us-central1-a,0.73948,0.3,1\n"
	"a2-highgpu-1g,12.0,85.0,A100,1,,europe-west4,europe-west4-a,0.8,0.3,1\n"
	",,,H100,8,{'Gpus': [{'MemoryInfo': {'SizeInMiB': 81920}}]},us-central1,us-central1-a,33.60609,22.8008,0\n"
	",,,H100-MEGA,8,{'Gpus': []},us-east4,us-east4-a,35.0,,0\n"
	",,,H100,8,{'Gpus': []},us-east4,us-east4-a,99.0,9.0,0\n"
	",,,A100,1,{'Gpus': []},us-central1,us-central1-a,2.93391,1.0,0\n"
	",,,V100,1,{'Gpus': []},us-central1,us-central1-a,2.48,0.8,0\n";

static const struct catalog_offering *find(const struct catalog *c,
					   const char *type, const char *region)
{
	for (size_t i = 0; i < c->n; i++) {
		if (!strcmp(c->items[i].instance_type, type) &&
		    !strcmp(c->items[i].region, region))
			return &c->items[i];
	}
	return NULL;
}

static void test_schemas(void **state)
{
	struct catalog c;
	struct sr_err e = { 0 };
	const struct catalog_offering *o;

	(void)state;
	catalog_init(&c);
	assert_int_equal(catalog_load_skypilot_buf(&c, aws_csv, sizeof aws_csv - 1,
						   "aws.csv", "aws", &e), 0);
	assert_int_equal(c.n, 2); /* the CPU row is skipped */
	o = find(&c, "p5.48xlarge", "us-east-1");
	assert_non_null(o);
	assert_string_equal(o->cloud, "aws");
	assert_string_equal(o->zone, "use1-az5");
	assert_string_equal(o->accelerator, "H100");
	assert_true(o->accel_count == 8);
	assert_int_equal(o->ondemand_per_h, USD(55.04));
	assert_int_equal(o->spot_per_h, USD(14.246));
	assert_int_equal(o->reserved_per_h, -1);
	assert_string_equal(o->source, "aws.csv:2");
	o = find(&c, "p5e.48xlarge", "ap-southeast-3");
	assert_int_equal(o->ondemand_per_h, -1); /* empty Price */
	assert_int_equal(o->spot_per_h, USD(8.7348));

	assert_int_equal(catalog_load_skypilot_buf(&c, azure_csv, sizeof azure_csv - 1,
						   "azure.csv", "azure", &e), 0);
	o = find(&c, "Standard_NC12s_v3", "centralus");
	assert_non_null(o);
	assert_string_equal(o->zone, "");
	assert_int_equal(o->spot_per_h, USD(0.788424));
	assert_true(find(&c, "Standard_ND96isr_H100_v5", "eastus")->accel_count == 12);

	assert_int_equal(catalog_load_skypilot_buf(&c, lambda_csv, sizeof lambda_csv - 1,
						   "lambda.csv", "lambda", &e), 0);
	o = find(&c, "gpu_8x_h100_sxm5", "us-east-1");
	assert_non_null(o);
	assert_int_equal(o->ondemand_per_h, USD(23.92));
	assert_int_equal(o->spot_per_h, -1);
	assert_int_equal(c.n, 5);
	catalog_free(&c);
	catalog_free(NULL);
}

static void test_gcp_join(void **state)
{
	struct catalog c;
	struct sr_err e = { 0 };
	const struct catalog_offering *o;

	(void)state;
	catalog_init(&c);
	assert_int_equal(catalog_load_skypilot_buf(&c, gcp_csv, sizeof gcp_csv - 1,
						   "gcp.csv", "gcp", &e), 0);
	/* three machine rows find their accelerator row; europe-west4 has
	 * none; accelerator-only rows (V100) are not offerings */
	assert_int_equal(c.n, 3);
	o = find(&c, "a3-highgpu-8g", "us-central1");
	assert_int_equal(o->ondemand_per_h, USD(9.46006 + 33.60609));
	assert_int_equal(o->spot_per_h, USD(2.75246 + 22.8008));
	assert_string_equal(o->source, "gcp.csv:2+6");
	o = find(&c, "a2-highgpu-1g", "us-central1");
	assert_int_equal(o->ondemand_per_h, USD(0.73948 + 2.93391));
	/* a3-megagpu joins H100-MEGA, not the H100 row; no spot there */
	o = find(&c, "a3-megagpu-8g", "us-east4");
	assert_int_equal(o->ondemand_per_h, USD(45.0));
	assert_int_equal(o->spot_per_h, -1);
	assert_string_equal(o->accelerator, "H100");
	assert_null(find(&c, "a2-highgpu-1g", "europe-west4"));
	catalog_free(&c);
}

static void expect_load_error(const char *csv, const char *msg)
{
	struct catalog c;
	struct sr_err e = { 0 };

	catalog_init(&c);
	assert_int_equal(catalog_load_skypilot_buf(&c, csv, strlen(csv), "aws.csv",
						   "aws", &e), -SR_EPARSE);
	assert_non_null(strstr(e.msg, msg));
	assert_int_equal(c.n, 0); /* nothing from a failed file is kept */
	catalog_free(&c);
}

static void test_bad_rows(void **state)
{
	static const char hdr[] =
		"InstanceType,AcceleratorName,AcceleratorCount,Price,SpotPrice,Region\n"
		"p4d.24xlarge,A100,8,32.77,10,us-east-1\n";
	char buf[512];

	(void)state;
	snprintf(buf, sizeof buf, "%sp5,H100,8,abc,1,us-east-1\n", hdr);
	expect_load_error(buf, "aws.csv:3: column Price: 'abc' is not a price");
	snprintf(buf, sizeof buf, "%sp5,H100,8,1,-2,us-east-1\n", hdr);
	expect_load_error(buf, "aws.csv:3: column SpotPrice: '-2' is not a price");
	snprintf(buf, sizeof buf, "%sp5,H100,0,1,1,us-east-1\n", hdr);
	expect_load_error(buf, "aws.csv:3: column AcceleratorCount: '0'");
	snprintf(buf, sizeof buf, "%sp5,H100,8,1,1\n", hdr);
	expect_load_error(buf, "aws.csv:3: expected 6 fields, got 5");
	snprintf(buf, sizeof buf, "%sp5,H100,8,1,1,\n", hdr);
	expect_load_error(buf, "aws.csv:3: column Region: empty");
	snprintf(buf, sizeof buf, "%s,H100,8,1,1,us-east-1\n", hdr);
	expect_load_error(buf, "aws.csv:3: column InstanceType: empty");
	snprintf(buf, sizeof buf, "%s\"p5,H100,8,1,1,us-east-1\n", hdr);
	expect_load_error(buf, "aws.csv:3: unterminated quoted field");
	expect_load_error("InstanceType,AcceleratorName,Price\n", "aws.csv:1: header: no column AcceleratorCount");
	expect_load_error("", "aws.csv:1: empty file");
}

static const char offer_hdr[] =
	"cloud,region,zone,instance_type,accelerator,accel_count,ondemand_per_h,spot_per_h,reserved_per_h,preempt_per_24h,preempt_band,network,src_ondemand,src_spot,src_reserved,src_preempt,src_network\n";

static void test_offerings_overlay(void **state)
{
	char buf[2048];
	struct catalog c;
	struct sr_err e = { 0 };
	const struct catalog_offering *o;

	(void)state;
	catalog_init(&c);
	assert_int_equal(catalog_load_skypilot_buf(&c, azure_csv, sizeof azure_csv - 1,
						   "azure.csv", "azure", &e), 0);
	snprintf(buf, sizeof buf, "%s"
		 "azure,eastus,,Standard_ND96isr_H100_v5,H100,8,98.32,,49.16,2.4,,infiniband,s1,,est,est,doc\n"
		 "coreweave,us-east,,gd-8xh100ib-i128,H100,8,49.24,,,,,infiniband,list,,,,doc\n"
		 "aws,us-east-1,,p3.2xlarge,V100,1,3.06,1.0,,,5-10%%,ethernet,a,b,,advisor,doc\n",
		 offer_hdr);
	assert_int_equal(catalog_load_offerings_buf(&c, buf, strlen(buf), "offerings.csv", &e), 0);
	o = find(&c, "Standard_ND96isr_H100_v5", "eastus");
	assert_true(o->accel_count == 8);              /* corrected */
	assert_int_equal(o->reserved_per_h, USD(49.16)); /* half of on-demand */
	assert_true(fabs(o->hazard_per_h - 0.1) < 1e-12);
	assert_int_equal(o->hazard_src, CATALOG_HAZARD_TABLE);
	assert_int_equal(o->net, CATALOG_NET_INFINIBAND);
	o = find(&c, "Standard_NC12s_v3", "centralus"); /* untouched */
	assert_int_equal(o->reserved_per_h, -1);
	assert_int_equal(o->net, CATALOG_NET_UNKNOWN);
	o = find(&c, "gd-8xh100ib-i128", "us-east");   /* added */
	assert_non_null(o);
	assert_int_equal(o->ondemand_per_h, USD(49.24));
	assert_string_equal(o->source, "offerings.csv:3");
	o = find(&c, "p3.2xlarge", "us-east-1");
	double h;
	assert_int_equal(catalog_hazard_from_band("5-10%", &h), 0);
	assert_true(fabs(o->hazard_per_h - h) < 1e-15);

	/* a value without its source is refused, and c is left as it was */
	size_t n = c.n;
	snprintf(buf, sizeof buf, "%saws,us-east-1,,x,H100,8,10,,,,,ethernet,,,,,doc\n", offer_hdr);
	assert_int_equal(catalog_load_offerings_buf(&c, buf, strlen(buf), "offerings.csv", &e),
			 -SR_EPARSE);
	assert_non_null(strstr(e.msg, "offerings.csv:2: column src_ondemand: value has no source"));
	snprintf(buf, sizeof buf, "%saws,us-east-1,,x,H100,8,10,,,,40%%,ethernet,a,,,s,doc\n", offer_hdr);
	assert_int_equal(catalog_load_offerings_buf(&c, buf, strlen(buf), "offerings.csv", &e),
			 -SR_EPARSE);
	assert_non_null(strstr(e.msg, "offerings.csv:2: column preempt_band"));
	snprintf(buf, sizeof buf, "%saws,us-east-1,,x,H100,8,10,,,,,fast,a,,,,doc\n", offer_hdr);
	assert_int_equal(catalog_load_offerings_buf(&c, buf, strlen(buf), "offerings.csv", &e),
			 -SR_EPARSE);
	assert_non_null(strstr(e.msg, "column network: 'fast'"));
	assert_int_equal(c.n, n);
	catalog_free(&c);
}

static void test_hazards(void **state)
{
	static const int trace[] = { 1, 1, 1, 0, 0, 1, 1, 0, 1, 1 };
	static const int down[] = { 0, 0, 0 };
	double h;

	(void)state;
	assert_true(fabs(catalog_hazard_from_per24h(2.4) - 0.1) < 1e-15);
	/* 7 up ticks of 30 min = 3.5 h, 2 losses */
	assert_int_equal(catalog_hazard_from_trace(trace, 10, 1800, &h), 0);
	assert_true(fabs(h - 2 / 3.5) < 1e-12);
	assert_int_equal(catalog_hazard_from_trace(down, 3, 600, &h), -EINVAL);
	assert_int_equal(catalog_hazard_from_trace(trace, 10, 0, &h), -EINVAL);
	assert_int_equal(catalog_hazard_from_band("<5%", &h), 0);
	assert_true(fabs(h - (-log(1 - 0.025) / 720)) < 1e-15);
	assert_int_equal(catalog_hazard_from_band(">20%", &h), 0);
	assert_true(fabs(h - (-log(0.75) / 720)) < 1e-15);
	assert_int_equal(catalog_hazard_from_band("lots", &h), -EINVAL);
}

/* The shipped data loads, every headline offering is present, and the
 * list comes out cheapest first. */
static void test_real_data(void **state)
{
	struct catalog c;
	struct sr_err e = { 0 };
	struct catalog_filter f = { .accelerator = "h100", .accel_count = 8,
				    .spot_only = 1 };
	size_t *idx = NULL, n = 0;
	static const char *const clouds[] = { "aws", "gcp", "azure", "lambda", "coreweave" };

	(void)state;
	catalog_init(&c);
	assert_int_equal(catalog_load_dir(&c, "data", &e), 0);
	assert_true(c.n > 1000);
	for (size_t k = 0; k < 5; k++) {
		struct catalog_filter g = { .accelerator = "H100", .accel_count = 8,
					    .cloud = clouds[k] };
		assert_int_equal(catalog_select(&c, &g, &idx, &n), 0);
		assert_true(n > 0);
		free(idx);
	}
	assert_int_equal(catalog_select(&c, &f, &idx, &n), 0);
	assert_true(n > 10);
	for (size_t i = 0; i < n; i++) {
		const struct catalog_offering *o = &c.items[idx[i]];

		assert_true(o->spot_per_h >= 0);
		assert_true(o->hazard_per_h > 0);
		if (i)
			assert_true(c.items[idx[i - 1]].spot_per_h <= o->spot_per_h);
	}
	free(idx);
	/* a3-highgpu-8g us-central1-a: host 9.46006 + H100x8 33.60609 */
	const struct catalog_offering *o = NULL;
	for (size_t i = 0; i < c.n; i++)
		if (!strcmp(c.items[i].instance_type, "a3-highgpu-8g") &&
		    !strcmp(c.items[i].zone, "us-central1-a"))
			o = &c.items[i];
	assert_non_null(o);
	assert_int_equal(o->ondemand_per_h, USD(43.06615));
	assert_int_equal(o->net, CATALOG_NET_ETHERNET);
	/* the traced pools carry their outages, their up spells' spread and
	 * their day-to-day spread (the bundled V100 traces: 0.8-1.3 h after a
	 * loss, wider than exponential); the others none */
	{
		size_t traced = 0;

		for (size_t i = 0; i < c.n; i++) {
			const struct catalog_offering *x = &c.items[i];

			if (x->hazard_src != CATALOG_HAZARD_TRACE) {
				assert_true(x->outage_h == 0 && x->hazard_disp == 0 &&
					    x->up_cv == 0);
				continue;
			}
			traced++;
			assert_true(x->outage_h > 0.5 && x->outage_h < 3);
			assert_true(x->outage_cv > 1 && x->outage_cv < 4);
			assert_true(x->hazard_disp > 0 && x->hazard_disp < 3);
			/* losses come in bursts: up spells wider than
			 * exponential (1.4-4.4 in these traces) */
			assert_true(x->up_cv > 1.2 && x->up_cv < 6);
		}
		assert_true(traced >= 5);
	}
	catalog_free(&c);
}

static void test_parse_accel_net(void **state)
{
	char name[24];
	double n;
	enum catalog_net net;

	(void)state;
	assert_int_equal(catalog_parse_accel("H100:8", name, sizeof name, &n), 0);
	assert_string_equal(name, "H100");
	assert_true(n == 8);
	assert_int_equal(catalog_parse_accel("A100-80GB", name, sizeof name, &n), 0);
	assert_true(n == 1);
	assert_int_equal(catalog_parse_accel(":8", name, sizeof name, &n), -EINVAL);
	assert_int_equal(catalog_parse_accel("H100:x", name, sizeof name, &n), -EINVAL);
	assert_int_equal(catalog_parse_accel("H100:0", name, sizeof name, &n), -EINVAL);
	assert_int_equal(catalog_net_parse("EFA", &net), 0);
	assert_int_equal(net, CATALOG_NET_RDMA);
	assert_int_equal(catalog_net_parse("infiniband", &net), 0);
	assert_int_equal(net, CATALOG_NET_INFINIBAND);
	assert_int_equal(catalog_net_parse("carrier-pigeon", &net), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_csv_quoting),
		cmocka_unit_test(test_csv_errors),
		cmocka_unit_test(test_schemas),
		cmocka_unit_test(test_gcp_join),
		cmocka_unit_test(test_bad_rows),
		cmocka_unit_test(test_offerings_overlay),
		cmocka_unit_test(test_hazards),
		cmocka_unit_test(test_real_data),
		cmocka_unit_test(test_parse_accel_net),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
