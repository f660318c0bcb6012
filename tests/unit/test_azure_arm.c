/* Unit tests: lib/azure (ARM client and driver, Retail Prices) against
 * sr_testsrv playing Entra and ARM: the client-credentials request and
 * its cache, the spot VM's PUT body, the Azure-AsyncOperation followed
 * with its Retry-After, error classes (sync and from the operation),
 * the list's pages and cluster filter, fencing, and the prices' pages. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "azure/arm.h"
#include "azure/azprices.h"
#include "common/testsrv.h"
#include "common/timeutil.h"

#define TOKEN_PATH "/tenant-1/oauth2/v2.0/token"
#define VMS "/subscriptions/sub/resourceGroups/rg/providers/" \
	"Microsoft.Compute/virtualMachines"
#define OP_PATH "/subscriptions/sub/providers/Microsoft.Compute/locations/" \
	"eastus/operations/op1"
#define SUBNET "/subscriptions/sub/resourceGroups/rg/providers/" \
	"Microsoft.Network/virtualNetworks/v/subnets/default"

struct fx {
	struct sr_testsrv *s;
	struct arm *a;
	bool fenced;
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof *f);
	struct arm_opts o = { .subscription = "sub", .resource_group = "rg",
			      .location = "eastus", .subnet = SUBNET,
			      .ssh_key = "ssh-ed25519 AAAA k", .max_retries = 1,
			      .timeout_ms = 5000 };
	struct sr_err e;

	if (!f)
		return -1;
	f->s = sr_testsrv_start(0);
	if (!f->s)
		return -1;
	setenv("AZURE_TENANT_ID", "tenant-1", 1);
	setenv("AZURE_CLIENT_ID", "client-1", 1);
	setenv("AZURE_CLIENT_SECRET", "s3cret&=", 1);
	unsetenv("AZURE_CLIENT_CERTIFICATE_PATH");
	o.endpoint = o.login = sr_testsrv_url(f->s);
	if (arm_open(&o, &f->a, &e)) {
		print_error("%s\n", e.msg);
		return -1;
	}
	sr_testsrv_reply(f->s, "POST", TOKEN_PATH, 200, "application/json",
			 "{\"token_type\":\"Bearer\",\"expires_in\":3599,"
			 "\"access_token\":\"tok-1\"}", 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	arm_close(f->a);
	sr_testsrv_stop(f->s);
	free(f);
	return 0;
}

static const char vm_json[] =
	"{\"name\":\"sr-c1-7-1\",\"location\":\"eastus\",\"zones\":[\"2\"],"
	"\"tags\":{\"spotrun:cluster\":\"c1\",\"spotrun:job\":\"3\","
	"\"spotrun:node\":\"7\",\"spotrun:attempt\":\"1\"},"
	"\"properties\":{\"provisioningState\":\"Succeeded\",\"priority\":\"Spot\","
	"\"hardwareProfile\":{\"vmSize\":\"Standard_NC6s_v3\"},"
	"\"timeCreated\":\"2026-12-02T10:00:00Z\"}}";

static struct cloud_launch launch(void)
{
	return (struct cloud_launch){
		.idem_key = "sr-c1-7-1", .zone = "eastus-2",
		.instance_type = "Standard_NC6s_v3", .spot = true,
		.tags = { .cluster = "c1", .job_id = 3, .node_id = 7, .attempt = 1 },
		.bootstrap = "#!/bin/sh\necho boot\n",
	};
}

static void token_form_and_cache(void **state)
{
	struct fx *f = *state;
	char tok[256], buf[128];
	int64_t end = 0;
	struct sr_err e;
	const struct sr_testsrv_req *r;

	assert_int_equal(arm_token(f->a, tok, sizeof tok, &end, &e), 0);
	assert_string_equal(tok, "tok-1");
	assert_true(end > 0);
	assert_int_equal(arm_token(f->a, tok, sizeof tok, NULL, &e), 0);
	assert_int_equal(sr_testsrv_count(f->s, "POST", TOKEN_PATH), 1);
	r = sr_testsrv_req(f->s, 0);
	assert_int_equal(sr_testsrv_req_header(r, "Content-Type", buf, sizeof buf), 0);
	assert_string_equal(buf, "application/x-www-form-urlencoded");
	assert_string_equal(r->body, "client_id=client-1&scope=https%3A%2F%2F"
			    "management.azure.com%2F.default&client_secret="
			    "s3cret%26%3D&grant_type=client_credentials");
	assert_non_null(strstr(arm_cred_source(f->a), "AZURE_CLIENT_SECRET"));
	assert_null(strstr(arm_cred_source(f->a), "s3cret"));
}

static void create_follows_operation(void **state)
{
	struct fx *f = *state;
	struct cloud_launch l = launch();
	struct cloud_instance in;
	struct cloud_error err = { 0 };
	char hdr[512], auth[64];
	const struct sr_testsrv_req *put = NULL;
	json_t *doc, *p;

	snprintf(hdr, sizeof hdr, "Azure-AsyncOperation: %s" OP_PATH
		 "?api-version=2024-03-01\nRetry-After: 1", sr_testsrv_url(f->s));
	sr_testsrv_reply_hdrs(f->s, "PUT", VMS "/sr-c1-7-1", 201,
			      "application/json", hdr, vm_json, 0);
	sr_testsrv_reply_hdrs(f->s, "GET", OP_PATH, 200, "application/json",
			      "Retry-After: 1", "{\"status\":\"InProgress\"}", 0);
	sr_testsrv_reply(f->s, "GET", OP_PATH, 200, "application/json",
			 "{\"status\":\"Succeeded\"}", 0);
	sr_testsrv_reply(f->s, "GET", VMS "/sr-c1-7-1", 200, "application/json",
			 vm_json, 0);
	assert_int_equal(arm_vm_create(f->a, &l, &in, &err), 0);
	assert_string_equal(in.id, "sr-c1-7-1");
	assert_string_equal(in.zone, "eastus-2");
	assert_int_equal(in.state, CLOUD_INST_RUNNING);
	assert_true(in.spot);
	assert_int_equal(in.node_id, 7);
	assert_int_equal(sr_testsrv_count(f->s, "GET", OP_PATH), 2);
	for (size_t i = 0; i < sr_testsrv_nreq(f->s); i++)
		if (!strcmp(sr_testsrv_req(f->s, i)->method, "PUT"))
			put = sr_testsrv_req(f->s, i);
	assert_non_null(put);
	assert_string_equal(put->query, "api-version=2024-03-01");
	assert_int_equal(sr_testsrv_req_header(put, "Authorization", auth,
					       sizeof auth), 0);
	assert_string_equal(auth, "Bearer tok-1");
	doc = json_loads(put->body, 0, NULL);
	assert_non_null(doc);
	p = json_object_get(doc, "properties");
	assert_string_equal(json_string_value(json_object_get(p, "priority")), "Spot");
	assert_string_equal(json_string_value(json_object_get(p, "evictionPolicy")),
			    "Delete");
	assert_int_equal(json_integer_value(json_object_get(
		json_object_get(p, "billingProfile"), "maxPrice")), -1);
	assert_string_equal(json_string_value(json_object_get(json_object_get(
		json_object_get(p, "storageProfile"), "osDisk"), "deleteOption")),
		"Delete");
	assert_string_equal(json_string_value(json_object_get(json_object_get(
		json_array_get(json_object_get(json_object_get(p, "networkProfile"),
		"networkInterfaceConfigurations"), 0), "properties"),
		"deleteOption")), "Delete");
	/* customData: the bootstrap, base64 */
	assert_string_equal(json_string_value(json_object_get(json_object_get(
		p, "osProfile"), "customData")), "IyEvYmluL3NoCmVjaG8gYm9vdAo=");
	assert_string_equal(json_string_value(json_array_get(json_object_get(
		doc, "zones"), 0)), "2");
	assert_string_equal(json_string_value(json_object_get(json_object_get(
		doc, "tags"), "spotrun:node")), "7");
	json_decref(doc);
	cloud_instance_clear(&in);
}

static void error_classes(void **state)
{
	struct fx *f = *state;
	struct cloud_launch l = launch();
	struct cloud_instance in;
	struct cloud_error err = { 0 };
	char hdr[512];

	/* from the operation: AllocationFailed -> capacity; then at once:
	 * SkuNotAvailable -> capacity, quota, auth (replies served in
	 * order) */
	snprintf(hdr, sizeof hdr, "Azure-AsyncOperation: %s" OP_PATH,
		 sr_testsrv_url(f->s));
	sr_testsrv_reply_hdrs(f->s, "PUT", VMS "/sr-c1-7-1", 201,
			      "application/json", hdr, vm_json, 0);
	sr_testsrv_reply(f->s, "GET", OP_PATH, 200, "application/json",
			 "{\"status\":\"Failed\",\"error\":{\"code\":"
			 "\"AllocationFailed\",\"message\":\"no room\"}}", 0);
	sr_testsrv_reply(f->s, "PUT", VMS "/sr-c1-7-1", 409, "application/json",
			 "{\"error\":{\"code\":\"SkuNotAvailable\",\"message\":"
			 "\"x\"}}", 0);
	sr_testsrv_reply(f->s, "PUT", VMS "/sr-c1-7-1", 409, "application/json",
			 "{\"error\":{\"code\":\"OperationNotAllowed\",\"message\":"
			 "\"Operation could not be completed as it results in "
			 "exceeding approved standardNCSv3Family Cores quota\"}}", 0);
	sr_testsrv_reply(f->s, "PUT", VMS "/sr-c1-7-1", 403, "application/json",
			 "{\"error\":{\"code\":\"AuthorizationFailed\"}}", 0);
	sr_testsrv_reply(f->s, "DELETE", VMS "/sr-c1-7-1", 202,
			 "application/json", "", 0);
	assert_int_equal(arm_vm_create(f->a, &l, &in, &err), -ENOSPC);
	assert_int_equal(err.cls, CLOUD_ECAPACITY);
	assert_string_equal(err.code, "AllocationFailed");
	/* the Failed VM deleted at once (its NIC, disk and IP with it); a
	 * create refused at the PUT made nothing to delete */
	assert_int_equal(sr_testsrv_count(f->s, "DELETE", VMS "/sr-c1-7-1"), 1);
	assert_int_equal(arm_vm_create(f->a, &l, &in, &err), -ENOSPC);
	assert_int_equal(err.cls, CLOUD_ECAPACITY);
	assert_string_equal(err.code, "SkuNotAvailable");
	assert_int_equal(arm_vm_create(f->a, &l, &in, &err), -EDQUOT);
	assert_int_equal(err.cls, CLOUD_EQUOTA);
	assert_non_null(strstr(err.msg, "Cores quota"));
	assert_int_equal(arm_vm_create(f->a, &l, &in, &err), -EACCES);
	assert_int_equal(err.cls, CLOUD_EAUTH);
	assert_int_equal(sr_testsrv_count(f->s, "DELETE", VMS "/sr-c1-7-1"), 1);
	assert_int_equal(arm_classify(429, NULL), CLOUD_ETHROTTLE);
	assert_int_equal(arm_classify(503, NULL), CLOUD_ETRANSIENT);
	assert_int_equal(arm_classify(400, "InvalidParameter"), CLOUD_EINVALID);
	assert_int_equal(arm_classify(401, "ExpiredAuthenticationToken"),
			 CLOUD_ECREDS);
	assert_int_equal(arm_classify(409, "ZonalAllocationFailed"),
			 CLOUD_ECAPACITY);
}

static bool fence_no(void *ud, int64_t epoch)
{
	(void)ud;
	return epoch != 9;
}

static void fenced_create_sends_nothing(void **state)
{
	struct fx *f = *state;
	struct cloud_launch l = launch();
	struct cloud_instance in;
	struct cloud_error err = { 0 };

	arm_set_lease(f->a, NULL, fence_no, NULL);
	l.epoch = 9;
	assert_int_equal(arm_vm_create(f->a, &l, &in, &err), -ESTALE);
	assert_int_equal(err.cls, CLOUD_EFENCED);
	assert_int_equal(sr_testsrv_count(f->s, "PUT", VMS "/sr-c1-7-1"), 0);
}

static void list_pages_and_filter(void **state)
{
	struct fx *f = *state;
	struct cloud_instance *v = NULL;
	struct cloud_error err = { 0 };
	char page1[2048];
	size_t n = 0;

	snprintf(page1, sizeof page1, "{\"value\":[%s,{\"name\":\"other\","
		 "\"location\":\"eastus\",\"tags\":{\"spotrun:cluster\":\"c2\"},"
		 "\"properties\":{\"provisioningState\":\"Succeeded\"}}],"
		 "\"nextLink\":\"%s" VMS "?api-version=2024-03-01&$skiptoken=2\"}",
		 vm_json, sr_testsrv_url(f->s));
	sr_testsrv_reply(f->s, "GET", VMS, 200, "application/json", page1, 0);
	sr_testsrv_reply(f->s, "GET", VMS, 200, "application/json",
			 "{\"value\":[{\"name\":\"sr-c1-8-1\",\"tags\":{"
			 "\"spotrun:cluster\":\"c1\",\"spotrun:node\":\"8\"},"
			 "\"properties\":{\"provisioningState\":\"Deleting\"}}]}", 0);
	assert_int_equal(arm_vm_list(f->a, "c1", &v, &n, &err), 0);
	assert_int_equal(n, 2);
	assert_string_equal(v[0].id, "sr-c1-7-1");
	assert_string_equal(v[1].id, "sr-c1-8-1");
	assert_int_equal(v[1].state, CLOUD_INST_STOPPING);
	assert_string_equal(sr_testsrv_req(f->s, sr_testsrv_nreq(f->s) - 1)->query,
			    "api-version=2024-03-01&$skiptoken=2");
	cloud_instances_free(v, n);
}

static void prices_pages(void **state)
{
	struct fx *f = *state;
	struct azprice *v = NULL;
	const char *skus[] = { "Standard_NC6s_v3" };
	char page1[2048];
	struct sr_err e;
	size_t n = 0;

	snprintf(page1, sizeof page1, "{\"Items\":[{\"armSkuName\":"
		 "\"Standard_NC6s_v3\",\"armRegionName\":\"eastus\","
		 "\"retailPrice\":0.306,\"unitOfMeasure\":\"1 Hour\","
		 "\"skuName\":\"NC6s v3 Spot\",\"productName\":\"Virtual Machines "
		 "NCSv3 Series\"},{\"armSkuName\":\"Standard_NC6s_v3\","
		 "\"armRegionName\":\"eastus\",\"retailPrice\":9.9,"
		 "\"unitOfMeasure\":\"1 Hour\",\"skuName\":\"NC6s v3 Spot\","
		 "\"productName\":\"Virtual Machines NCSv3 Series Windows\"}],"
		 "\"NextPageLink\":\"%s/api/retail/prices?$skip=2\"}",
		 sr_testsrv_url(f->s));
	sr_testsrv_reply(f->s, "GET", "/api/retail/prices", 200,
			 "application/json", page1, 0);
	sr_testsrv_reply(f->s, "GET", "/api/retail/prices", 200,
			 "application/json", "{\"Items\":[{\"armSkuName\":"
			 "\"Standard_NC6s_v3\",\"armRegionName\":\"eastus\","
			 "\"retailPrice\":3.06,\"unitOfMeasure\":\"1 Hour\","
			 "\"skuName\":\"NC6s v3\",\"productName\":\"Virtual "
			 "Machines NCSv3 Series\"},{\"armSkuName\":"
			 "\"Standard_NC6s_v3\",\"armRegionName\":\"eastus\","
			 "\"retailPrice\":0.6,\"unitOfMeasure\":\"1 Hour\","
			 "\"skuName\":\"NC6s v3 Low Priority\"}],"
			 "\"NextPageLink\":null}", 0);
	sr_err_clear(&e);
	assert_int_equal(azprices_fetch(sr_testsrv_url(f->s), "eastus", skus, 1,
					&v, &n, &e), 0);
	assert_int_equal(n, 1);
	assert_int_equal(v[0].spot_per_h, 306000);     /* Linux, not Windows */
	assert_int_equal(v[0].ondemand_per_h, 3060000); /* not Low Priority */
	assert_non_null(strstr(sr_testsrv_req(f->s, 0)->query, "$filter="
			       "serviceName%20eq%20%27Virtual%20Machines%27"));
	free(v);
}

static void bad_settings(void **state)
{
	struct arm_opts o = { .resource_group = "rg", .location = "eastus",
			      .allow_remote = true };
	struct arm *a = NULL;
	struct sr_err e;

	(void)state;
	unsetenv("AZURE_SUBSCRIPTION_ID");
	sr_err_clear(&e);
	assert_int_equal(arm_open(&o, &a, &e), -SR_ENOTFOUND);
	assert_non_null(strstr(e.msg, "AZURE_SUBSCRIPTION_ID"));
	o.subscription = "sub";
	setenv("AZURE_CLIENT_SECRET", "x", 1);
	unsetenv("AZURE_TENANT_ID");
	assert_int_equal(arm_open(&o, &a, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "AZURE_TENANT_ID is not set"));
	setenv("AZURE_TENANT_ID", "t", 1);
	o.endpoint = "https://management.example.com";
	o.allow_remote = false;
	assert_int_equal(arm_open(&o, &a, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "not on loopback"));
	assert_null(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(token_form_and_cache, setup, teardown),
		cmocka_unit_test_setup_teardown(create_follows_operation, setup,
						teardown),
		cmocka_unit_test_setup_teardown(error_classes, setup, teardown),
		cmocka_unit_test_setup_teardown(fenced_create_sends_nothing, setup,
						teardown),
		cmocka_unit_test_setup_teardown(list_pages_and_filter, setup,
						teardown),
		cmocka_unit_test_setup_teardown(prices_pages, setup, teardown),
		cmocka_unit_test(bad_settings),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
