/* Unit tests: lib/lambda (the Lambda Cloud client and launch) against
 * sr_testsrv playing the API: a relaunch finds its earlier instance by
 * name and launches nothing, a launch's body and the API key, error
 * classes, the instance-types parser, and a bootstrap over the ssh
 * argument contract (a stand-in script that records what it got). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/testsrv.h"
#include "lambda/lambda.h"

struct fx {
	struct sr_testsrv *s;
	struct lambda *c;
	char dir[64], ssh[128];
};

/* A stand-in ssh: records its arguments and stdin in the fixture's dir. */
static const char stand_in[] =
	"#!/bin/sh\nd=$(dirname \"$0\")\nprintf '%s\\n' \"$@\" > \"$d/args\"\n"
	"cat > \"$d/stdin\"\nexit 0\n";

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof *f);
	struct lambda_opts o = { .api_key = "k-123", .region = "us-east-1",
				 .ssh_key_name = "ops", .ssh_key_file = "/k",
				 .poll_ms = 100, .timeout_ms = 5000 };
	struct sr_err e;
	FILE *fp;

	if (!f)
		return -1;
	snprintf(f->dir, sizeof f->dir, "/tmp/test_lambda_XXXXXX");
	if (!mkdtemp(f->dir))
		return -1;
	snprintf(f->ssh, sizeof f->ssh, "%s/ssh", f->dir);
	fp = fopen(f->ssh, "w");
	if (!fp)
		return -1;
	fputs(stand_in, fp);
	fclose(fp);
	chmod(f->ssh, 0700);
	f->s = sr_testsrv_start(0);
	o.endpoint = sr_testsrv_url(f->s);
	o.ssh = f->ssh;
	if (!f->s || lambda_open(&o, &f->c, &e))
		return -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	char p[160];

	lambda_close(f->c);
	sr_testsrv_stop(f->s);
	snprintf(p, sizeof p, "%s/args", f->dir);
	unlink(p);
	snprintf(p, sizeof p, "%s/stdin", f->dir);
	unlink(p);
	unlink(f->ssh);
	rmdir(f->dir);
	free(f);
	return 0;
}

static struct cloud_launch launch(void)
{
	return (struct cloud_launch){
		.idem_key = "sr-c1-7-2", .instance_type = "gpu_1x_a10",
		.tags = { .cluster = "c1", .job_id = 3, .node_id = 7, .attempt = 2 },
		.bootstrap = "#!/bin/sh\necho boot\n",
	};
}

#define ACTIVE "{\"data\":[{\"id\":\"i-9\",\"name\":\"sr-c1-7-2\",\"ip\":" \
	"\"10.0.0.9\",\"status\":\"active\",\"region\":{\"name\":\"us-east-1\"}," \
	"\"instance_type\":{\"name\":\"gpu_1x_a10\"}},{\"id\":\"i-1\",\"name\":" \
	"\"someone-else\",\"status\":\"active\"}]}"

static void relaunch_finds_by_name(void **state)
{
	struct fx *f = *state;
	struct cloud_launch l = launch();
	struct cloud_instance in;
	struct cloud_error err = { 0 };
	char p[160], buf[512] = "";
	FILE *fp;

	sr_testsrv_reply(f->s, "GET", "/instances", 200, "application/json",
			 ACTIVE, 0);
	assert_int_equal(lambda_launch(f->c, &l, &in, &err), 0);
	assert_string_equal(in.id, "i-9");
	assert_int_equal(in.node_id, 7);
	assert_int_equal(in.attempt, 2);
	assert_int_equal(sr_testsrv_count(f->s, "POST",
					  "/instance-operations/launch"), 0);
	/* the bootstrap: the script on stdin, never on the command line */
	snprintf(p, sizeof p, "%s/args", f->dir);
	fp = fopen(p, "r");
	assert_non_null(fp);
	assert_true(fread(buf, 1, sizeof buf - 1, fp) > 0);
	fclose(fp);
	assert_string_equal(buf, "-i\n/k\n-o\nBatchMode=yes\n-o\n"
			    "StrictHostKeyChecking=accept-new\n-o\n"
			    "ConnectTimeout=10\n--\nubuntu@10.0.0.9\n"
			    "sudo -n sh -s\n");
	cloud_instance_clear(&in);
}

static void launch_body_and_key(void **state)
{
	struct fx *f = *state;
	struct cloud_launch l = launch();
	struct cloud_instance in;
	struct cloud_error err = { 0 };
	const struct sr_testsrv_req *r = NULL;
	char auth[64];
	json_t *b;

	sr_testsrv_reply(f->s, "GET", "/instances", 200, "application/json",
			 "{\"data\":[]}", 0);
	sr_testsrv_reply(f->s, "GET", "/instances", 200, "application/json",
			 ACTIVE, 0);
	sr_testsrv_reply(f->s, "POST", "/instance-operations/launch", 200,
			 "application/json",
			 "{\"data\":{\"instance_ids\":[\"i-9\"]}}", 0);
	assert_int_equal(lambda_launch(f->c, &l, &in, &err), 0);
	for (size_t i = 0; i < sr_testsrv_nreq(f->s); i++)
		if (!strcmp(sr_testsrv_req(f->s, i)->method, "POST"))
			r = sr_testsrv_req(f->s, i);
	assert_non_null(r);
	assert_int_equal(sr_testsrv_req_header(r, "Authorization", auth,
					       sizeof auth), 0);
	assert_string_equal(auth, "Bearer k-123");
	b = json_loads(r->body, 0, NULL);
	assert_string_equal(json_string_value(json_object_get(b, "name")),
			    "sr-c1-7-2");
	assert_string_equal(json_string_value(json_object_get(b, "region_name")),
			    "us-east-1");
	assert_string_equal(json_string_value(json_array_get(json_object_get(
		b, "ssh_key_names"), 0)), "ops");
	assert_int_equal(json_integer_value(json_object_get(b, "quantity")), 1);
	json_decref(b);
	cloud_instance_clear(&in);
}

static void perr(long status, const char *body, struct cloud_error *err)
{
	lambda_parse_error(status, body, strlen(body), "x", err);
}

static void error_classes_and_types(void **state)
{
	static const char types[] =
		"{\"data\":{\"gpu_1x_a10\":{\"instance_type\":{\"name\":"
		"\"gpu_1x_a10\",\"price_cents_per_hour\":75},"
		"\"regions_with_capacity_available\":[{\"name\":\"us-east-1\"}]}}}";
	struct fx *f = *state;
	struct cloud_launch l = launch();
	struct cloud_instance in;
	struct cloud_error err = { 0 };
	struct lambda_type *t = NULL;
	struct sr_err e;
	size_t n = 0;

	sr_testsrv_reply(f->s, "GET", "/instances", 200, "application/json",
			 "{\"data\":[]}", 0);
	sr_testsrv_reply(f->s, "POST", "/instance-operations/launch", 400,
			 "application/json", "{\"error\":{\"code\":\"instance-"
			 "operations/launch/insufficient-capacity\",\"message\":"
			 "\"Not enough capacity\"}}", 0);
	assert_int_equal(lambda_launch(f->c, &l, &in, &err), -ENOSPC);
	assert_int_equal(err.cls, CLOUD_ECAPACITY);
	perr(401, "{\"error\":{\"code\":\"global/invalid-api-key\"}}", &err);
	assert_int_equal(err.cls, CLOUD_EAUTH);
	perr(429, "", &err);
	assert_int_equal(err.cls, CLOUD_ETHROTTLE);
	perr(400, "{\"error\":{\"code\":\"global/quota-exceeded\"}}", &err);
	assert_int_equal(err.cls, CLOUD_EQUOTA);
	assert_int_equal(lambda_parse_types(types, strlen(types), &t, &n, &e), 0);
	assert_int_equal(n, 1);
	assert_int_equal(t[0].price_per_h, 750000);
	assert_string_equal(t[0].regions[0], "us-east-1");
	lambda_types_free(t, n);
	assert_int_equal(lambda_parse_types("{\"data\":{\"x\":{}}}", 17, &t, &n,
					    &e), -SR_EPARSE);
	assert_non_null(strstr(e.msg, "x: expected"));
}

static void no_key(void **state)
{
	struct lambda_opts o = { .region = "us-east-1" };
	struct lambda *c = NULL;
	struct sr_err e;

	(void)state;
	unsetenv("LAMBDA_API_KEY");
	assert_int_equal(lambda_open(&o, &c, &e), -SR_ENOTFOUND);
	assert_non_null(strstr(e.msg, "LAMBDA_API_KEY"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(relaunch_finds_by_name, setup,
						teardown),
		cmocka_unit_test_setup_teardown(launch_body_and_key, setup,
						teardown),
		cmocka_unit_test_setup_teardown(error_classes_and_types, setup,
						teardown),
		cmocka_unit_test(no_key),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
