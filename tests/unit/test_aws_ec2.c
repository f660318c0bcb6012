/* Unit tests: lib/aws (the EC2 driver) and lib/cloud/compute.c against the
 * canned test server: request parameters, signing headers, answers,
 * error classes, pagination, terminate of unknown ids, the asynchronous
 * driver, the user-data script, and the loopback guard.  The SDK
 * conformance suite (tests/conformance) checks the same requests against
 * the official AWS SDK. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "aws/ec2.h"
#include "common/testsrv.h"
#include "common/timeutil.h"

#define NS "xmlns=\"http://ec2.amazonaws.com/doc/2016-11-15/\""

static const char run_ok[] =
	"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	"<RunInstancesResponse " NS "><requestId>r</requestId>"
	"<reservationId>r-1</reservationId><instancesSet><item>"
	"<instanceId>i-0123</instanceId><imageId>ami-9</imageId>"
	"<instanceState><code>0</code><name>pending</name></instanceState>"
	"<instanceType>g5.xlarge</instanceType>"
	"<launchTime>2026-11-30T17:00:00.000Z</launchTime>"
	"<placement><availabilityZone>us-east-1b</availabilityZone></placement>"
	"<instanceLifecycle>spot</instanceLifecycle>"
	"<spotInstanceRequestId>sir-1</spotInstanceRequestId>"
	"<tagSet><item><key>spotrun:cluster</key><value>cl</value></item>"
	"<item><key>spotrun:job</key><value>5</value></item>"
	"<item><key>spotrun:node</key><value>9</value></item>"
	"<item><key>spotrun:attempt</key><value>2</value></item></tagSet>"
	"</item></instancesSet></RunInstancesResponse>";

static const char *const env_vars[] = {
	"AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL", "AWS_REGION",
	"AWS_DEFAULT_REGION", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE",
	NULL
};

/* The canned server's own queue repeats its last reply, so a sequence of
 * single answers is served by this handler instead: a FIFO of replies,
 * the last one repeating. */
#define NREPLY 8
struct canned {
	int status;
	int delay_ms;
	char *body;
};

struct fx {
	struct sr_testsrv *srv;
	struct ec2 *c;
	pthread_mutex_t mu;
	struct canned q[NREPLY];
	size_t head, n;
};

static int handler(void *ud, const struct sr_testsrv_req *req, int *status,
		   char **ctype, char **body, size_t *body_len)
{
	struct fx *f = ud;
	struct canned c = { 404, 0, NULL };

	(void)req;
	pthread_mutex_lock(&f->mu);
	if (f->n > 0) {
		c = f->q[f->head];
		c.body = strdup(c.body);
		if (f->n > 1) {
			free(f->q[f->head].body);
			f->head = (f->head + 1) % NREPLY;
			f->n--;
		}
	}
	pthread_mutex_unlock(&f->mu);
	if (c.delay_ms > 0)
		usleep((useconds_t)c.delay_ms * 1000);
	*status = c.status;
	*ctype = strdup("text/xml");
	*body = c.body != NULL ? c.body : strdup("");
	*body_len = strlen(*body);
	return 0;
}

static void reply_delayed(struct fx *f, int status, const char *body,
			  int delay_ms)
{
	size_t at;

	pthread_mutex_lock(&f->mu);
	assert_true(f->n < NREPLY);
	at = (f->head + f->n) % NREPLY;
	f->q[at] = (struct canned){ status, delay_ms, strdup(body) };
	f->n++;
	pthread_mutex_unlock(&f->mu);
}

/* Replace whatever is queued by this one reply. */
static void reply(struct fx *f, int status, const char *body)
{
	pthread_mutex_lock(&f->mu);
	while (f->n > 0) {
		free(f->q[f->head].body);
		f->head = (f->head + 1) % NREPLY;
		f->n--;
	}
	pthread_mutex_unlock(&f->mu);
	reply_delayed(f, status, body, 0);
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	struct ec2_opts o = { .image_id = "ami-9", .key_name = "k",
			      .security_group_id = "sg-1", .max_retries = 0,
			      .timeout_ms = 5000 };
	struct sr_err e = { 0 };

	if (f == NULL)
		return -1;
	for (int i = 0; env_vars[i] != NULL; i++)
		unsetenv(env_vars[i]);
	setenv("HOME", "/nonexistent-sr-home", 1);
	setenv("AWS_EC2_METADATA_DISABLED", "true", 1);
	setenv("AWS_ACCESS_KEY_ID", "AKIATEST", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "testsecretkey", 1);
	setenv("AWS_REGION", "us-east-1", 1);
	setenv("SPOTRUN_LOG_LEVEL", "off", 1);
	pthread_mutex_init(&f->mu, NULL);
	f->srv = sr_testsrv_start(0);
	if (f->srv == NULL)
		return -1;
	sr_testsrv_set_handler(f->srv, handler, f);
	setenv("AWS_ENDPOINT_URL_EC2", sr_testsrv_url(f->srv), 1);
	if (ec2_open(&o, &f->c, &e) < 0) {
		fprintf(stderr, "ec2_open: %s\n", e.msg);
		return -1;
	}
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	ec2_close(f->c);
	sr_testsrv_stop(f->srv);
	for (size_t i = 0; i < f->n; i++)
		free(f->q[(f->head + i) % NREPLY].body);
	pthread_mutex_destroy(&f->mu);
	free(f);
	return 0;
}

static const struct sr_testsrv_req *last(struct fx *f)
{
	return sr_testsrv_req(f->srv, sr_testsrv_nreq(f->srv) - 1);
}

static void test_run_instances(void **state)
{
	struct fx *f = *state;
	struct ec2_run r = {
		.client_token = "sr-cl-9-2", .instance_type = "g5.xlarge",
		.zone = "us-east-1b", .spot = true, .max_price_per_h = 1500000,
		.tags = { .cluster = "cl", .job_id = 5, .node_id = 9, .attempt = 2 },
		.user_data = "#!/bin/sh\necho hi\n",
	};
	struct cloud_instance in;
	struct cloud_error err = { 0 };
	const struct sr_testsrv_req *q;
	char v[512];

	reply(f, 200, run_ok);
	assert_int_equal(ec2_run_instances(f->c, &r, &in, &err), 0);
	assert_string_equal(in.id, "i-0123");
	assert_int_equal(in.state, CLOUD_INST_PENDING);
	assert_string_equal(in.zone, "us-east-1b");
	assert_true(in.spot);
	assert_string_equal(in.cluster, "cl");
	assert_int_equal(in.job_id, 5);
	assert_int_equal(in.node_id, 9);
	assert_int_equal(in.attempt, 2);
	assert_int_equal(in.launched_s, 1796058000);
	assert_non_null(strstr(in.blob, "\"reservation_id\":\"r-1\""));
	assert_non_null(strstr(in.blob, "\"spot_request_id\":\"sir-1\""));
	cloud_instance_clear(&in);

	q = last(f);
	assert_non_null(strstr(q->body, "Action=RunInstances&Version=2016-11-15&"));
	assert_non_null(strstr(q->body, "&ClientToken=sr-cl-9-2&"));
	assert_non_null(strstr(q->body, "&Placement.AvailabilityZone=us-east-1b&"));
	assert_non_null(strstr(q->body, "&SecurityGroupId.1=sg-1&"));
	assert_non_null(strstr(q->body, "&KeyName=k&"));
	assert_non_null(strstr(q->body, "&UserData=IyEvYmluL3NoCmVjaG8gaGkK&"));
	assert_non_null(strstr(q->body, "&InstanceMarketOptions.MarketType=spot&"));
	assert_non_null(strstr(q->body,
		"&InstanceMarketOptions.SpotOptions.SpotInstanceType=one-time&"));
	assert_non_null(strstr(q->body, "&InstanceMarketOptions.SpotOptions."
					"InstanceInterruptionBehavior=terminate&"));
	assert_non_null(strstr(q->body,
		"&InstanceMarketOptions.SpotOptions.MaxPrice=1.500000&"));
	assert_non_null(strstr(q->body, "&TagSpecification.1.ResourceType=instance&"
					"TagSpecification.1.Tag.1.Key=spotrun%3Acluster&"
					"TagSpecification.1.Tag.1.Value=cl&"));
	assert_non_null(strstr(q->body, "&TagSpecification.2.ResourceType=volume&"));
	assert_non_null(strstr(q->body, "TagSpecification.1.Tag.4.Value=2"));
	assert_int_equal(sr_testsrv_req_header(q, "authorization", v, sizeof(v)), 0);
	assert_non_null(strstr(v, "AWS4-HMAC-SHA256 Credential=AKIATEST/"));
	assert_non_null(strstr(v, "/us-east-1/ec2/aws4_request, SignedHeaders="
				  "content-type;host;x-amz-date, Signature="));
	assert_null(strstr(v, "testsecretkey"));
	assert_int_equal(sr_testsrv_req_header(q, "x-amz-date", v, sizeof(v)), 0);

	/* on-demand: no market options */
	r.spot = false;
	reply(f, 200, run_ok);
	assert_int_equal(ec2_run_instances(f->c, &r, &in, &err), 0);
	cloud_instance_clear(&in);
	assert_null(strstr(last(f)->body, "InstanceMarketOptions"));
}

static void test_error_classes(void **state)
{
	static const struct {
		const char *code;
		int status;
		enum cloud_err_class cls;
		int rc;
	} cases[] = {
		{ "InsufficientInstanceCapacity", 500, CLOUD_ECAPACITY, -ENOSPC },
		{ "SpotMaxPriceTooLow", 400, CLOUD_ECAPACITY, -ENOSPC },
		{ "MaxSpotInstanceCountExceeded", 400, CLOUD_EQUOTA, -EDQUOT },
		{ "RequestLimitExceeded", 503, CLOUD_ETHROTTLE, -EBUSY },
		{ "UnauthorizedOperation", 403, CLOUD_EAUTH, -EACCES },
		{ "AuthFailure", 401, CLOUD_EAUTH, -EACCES },
		{ "InvalidParameterValue", 400, CLOUD_EINVALID, -EINVAL },
		{ "InvalidAMIID.NotFound", 400, CLOUD_EINVALID, -EINVAL },
		{ "InternalError", 500, CLOUD_ETRANSIENT, -SR_EHTTP },
	};
	struct fx *f = *state;
	struct ec2_run r = { .client_token = "t", .instance_type = "g5.xlarge",
			     .tags = { .cluster = "cl" } };
	struct cloud_instance in;
	struct cloud_error err;
	char body[512], want[256];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(body, sizeof(body),
			 "<?xml version=\"1.0\"?><Response><Errors><Error><Code>%s"
			 "</Code><Message>no &amp; no</Message></Error></Errors>"
			 "<RequestID>x</RequestID></Response>", cases[i].code);
		reply(f, cases[i].status, body);
		assert_int_equal(ec2_run_instances(f->c, &r, &in, &err), cases[i].rc);
		assert_int_equal(err.cls, cases[i].cls);
		assert_string_equal(err.code, cases[i].code);
		snprintf(want, sizeof(want), "EC2 RunInstances: %s: no & no",
			 cases[i].code);
		assert_string_equal(err.msg, want);
	}
	/* not XML at all: the status decides */
	reply(f, 502, "<html>bad gateway");
	assert_int_equal(ec2_run_instances(f->c, &r, &in, &err), -SR_EHTTP);
	assert_int_equal(err.cls, CLOUD_ETRANSIENT);
	assert_string_equal(err.msg, "EC2 RunInstances: HTTP 502");
	/* a 200 that is not the expected document */
	reply(f, 200, "<x/>");
	assert_int_equal(ec2_run_instances(f->c, &r, &in, &err), -SR_EPARSE);
	assert_non_null(strstr(err.msg, "expected RunInstancesResponse"));

	assert_true(cloud_err_retryable(CLOUD_ETHROTTLE));
	assert_true(cloud_err_retryable(CLOUD_ETRANSIENT));
	assert_false(cloud_err_retryable(CLOUD_ECAPACITY));
	assert_false(cloud_err_retryable(CLOUD_EAUTH));
	assert_string_equal(cloud_err_class_str(CLOUD_EQUOTA), "quota");
	assert_int_equal(ec2_err_class("", 429), CLOUD_ETHROTTLE);
	assert_int_equal(ec2_err_class(NULL, 403), CLOUD_EAUTH);
}

static void test_describe_pages(void **state)
{
	struct fx *f = *state;
	struct cloud_instance *v = NULL;
	struct cloud_error err;
	size_t n = 0;

	reply(f, 200,
	      "<DescribeInstancesResponse " NS "><reservationSet><item>"
	      "<reservationId>r-1</reservationId><instancesSet><item>"
	      "<instanceId>i-1</instanceId><instanceState><name>running</name>"
	      "</instanceState></item><item><instanceId>i-2</instanceId>"
	      "<instanceState><name>terminated</name></instanceState>"
	      "<stateReason><code>Server.SpotInstanceTermination</code></stateReason>"
	      "</item></instancesSet></item></reservationSet>"
	      "<nextToken>tok+/=</nextToken></DescribeInstancesResponse>");
	reply_delayed(f, 200,
	      "<DescribeInstancesResponse " NS "><reservationSet><item>"
	      "<instancesSet><item><instanceId>i-3</instanceId><instanceState>"
	      "<name>stopping</name></instanceState></item></instancesSet></item>"
	      "</reservationSet></DescribeInstancesResponse>", 0);
	assert_int_equal(ec2_describe_instances(f->c, "cl", NULL, &v, &n, &err), 0);
	assert_int_equal(n, 3);
	assert_string_equal(v[0].id, "i-1");
	assert_int_equal(v[0].state, CLOUD_INST_RUNNING);
	assert_int_equal(v[1].state, CLOUD_INST_GONE);
	assert_string_equal(v[1].reason, "Server.SpotInstanceTermination");
	assert_int_equal(v[2].state, CLOUD_INST_STOPPING);
	cloud_instances_free(v, n);
	assert_int_equal(sr_testsrv_nreq(f->srv), 2);
	assert_non_null(strstr(sr_testsrv_req(f->srv, 0)->body,
			       "Filter.1.Name=tag%3Aspotrun%3Acluster&"
			       "Filter.1.Value.1=cl&MaxResults=1000"));
	assert_non_null(strstr(sr_testsrv_req(f->srv, 1)->body,
			       "&NextToken=tok%2B%2F%3D"));
}

static void test_terminate_unknown(void **state)
{
	struct fx *f = *state;
	const char *ids[] = { "i-1", "i-gone" };
	static const char nf[] =
		"<Response><Errors><Error><Code>InvalidInstanceID.NotFound</Code>"
		"<Message>The instance ID 'i-gone' does not exist</Message>"
		"</Error></Errors></Response>";
	static const char ok[] =
		"<TerminateInstancesResponse " NS "><instancesSet/>"
		"</TerminateInstancesResponse>";
	struct cloud_error err;

	reply(f, 400, nf);                /* both at once */
	reply_delayed(f, 200, ok, 0);     /* i-1 alone */
	reply_delayed(f, 400, nf, 0);     /* i-gone alone */
	assert_int_equal(ec2_terminate_instances(f->c, ids, 2, &err), 0);
	assert_int_equal(sr_testsrv_nreq(f->srv), 3);
	assert_non_null(strstr(sr_testsrv_req(f->srv, 0)->body,
			       "InstanceId.1=i-1&InstanceId.2=i-gone"));
	assert_non_null(strstr(sr_testsrv_req(f->srv, 2)->body, "InstanceId.1=i-gone"));
	assert_int_equal(ec2_terminate_instances(f->c, ids, 0, &err), 0);
}

static void test_prices_and_zones(void **state)
{
	struct fx *f = *state;
	struct ec2_spot_price *p = NULL;
	struct cloud_error err;
	char **z = NULL;
	size_t n = 0;

	reply(f, 200,
	      "<DescribeSpotPriceHistoryResponse " NS "><spotPriceHistorySet>"
	      "<item><instanceType>p4d.24xlarge</instanceType><productDescription>"
	      "Linux/UNIX</productDescription><spotPrice>9.832100</spotPrice>"
	      "<timestamp>2026-11-30T16:00:00.000Z</timestamp><availabilityZone>"
	      "us-east-1a</availabilityZone></item></spotPriceHistorySet>"
	      "<nextToken/></DescribeSpotPriceHistoryResponse>");
	assert_int_equal(ec2_spot_price_history(f->c, "p4d.24xlarge", NULL,
						1796054400, 0, &p, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_int_equal(p[0].price_per_h, 9832100);
	assert_int_equal(p[0].at_s, 1796054400);
	assert_string_equal(p[0].zone, "us-east-1a");
	free(p);
	assert_non_null(strstr(last(f)->body, "InstanceType.1=p4d.24xlarge&"
				"ProductDescription.1=Linux%2FUNIX&StartTime="
				"2026-11-30T16%3A00%3A00Z&MaxResults=1000"));

	reply(f, 200,
	      "<DescribeInstanceTypeOfferingsResponse " NS "><instanceTypeOfferingSet>"
	      "<item><location>us-east-1f</location></item>"
	      "<item><location>us-east-1a</location></item>"
	      "</instanceTypeOfferingSet></DescribeInstanceTypeOfferingsResponse>");
	assert_int_equal(ec2_instance_type_zones(f->c, "p5.48xlarge", &z, &n, &err), 0);
	assert_int_equal(n, 2);
	assert_string_equal(z[0], "us-east-1a");
	assert_string_equal(z[1], "us-east-1f");
	ec2_strv_free(z, n);
	assert_non_null(strstr(last(f)->body, "LocationType=availability-zone&"
				"Filter.1.Name=instance-type&Filter.1.Value.1=p5.48xlarge"));
}

static void test_price_latest(void **state)
{
	const struct ec2_spot_price v[] = {
		{ "a", "g5", "Linux/UNIX", 500000, 100 },
		{ "b", "g5", "Linux/UNIX", 450000, 90 },
		{ "a", "g5", "Linux/UNIX", 400000, 200 },  /* newer: wins */
		{ "b", "g5", "Linux/UNIX", 990000, 10 },   /* older: ignored */
		{ "c", "g5", "Linux/UNIX", 450000, 50 },
	};
	struct ec2_spot_price *r = NULL;
	size_t n = 0;

	(void)state;
	assert_int_equal(ec2_spot_price_latest(v, 5, &r, &n), 0);
	assert_int_equal(n, 3);
	assert_string_equal(r[0].zone, "a");
	assert_int_equal(r[0].price_per_h, 400000);
	assert_string_equal(r[1].zone, "b");
	assert_int_equal(r[1].price_per_h, 450000);
	assert_string_equal(r[2].zone, "c");
	free(r);
	assert_int_equal(ec2_spot_price_latest(NULL, 0, &r, &n), 0);
	assert_int_equal(n, 0);
	free(r);
}

static pthread_mutex_t done_mu = PTHREAD_MUTEX_INITIALIZER;
static int done_calls;

static void on_done(void *ud)
{
	pthread_mutex_lock(&done_mu);
	done_calls += *(int *)ud;
	pthread_mutex_unlock(&done_mu);
}

static void test_driver_async(void **state)
{
	struct fx *f = *state;
	struct cloud_driver d;
	struct cloud_req *req = NULL;
	struct cloud_instance in;
	struct cloud_error err = { 0 };
	struct sr_err e = { 0 };
	char key[CLOUD_IDEM_MAX];
	int one = 1, rc, calls;
	struct cloud_launch l = {
		.instance_type = "g5.xlarge", .spot = true,
		.tags = { .cluster = "cl", .job_id = 5, .node_id = 9, .attempt = 2 },
		.bootstrap = "#!/bin/sh\n", .done = on_done, .done_ud = &one,
	};
	const char *ids[] = { "i-0123" };

	cloud_idem_key(&l.tags, key);
	assert_string_equal(key, "sr-cl-9-2");
	l.idem_key = key;
	/* the answer is delayed: provision must return before it */
	reply_delayed(f, 200, run_ok, 300);
	assert_int_equal(ec2_driver_new(f->c, &d, &e), 0);
	f->c = NULL; /* owned by the driver now */
	assert_string_equal(d.ops->name, "aws");
	assert_int_equal(d.ops->provision(d.st, &l, &req, &err), 0);
	assert_int_equal(d.ops->poll(d.st, req, &in, &err), -EAGAIN);
	while ((rc = d.ops->poll(d.st, req, &in, &err)) == -EAGAIN)
		usleep(5000);
	assert_int_equal(rc, 0);
	assert_string_equal(in.id, "i-0123");
	cloud_instance_clear(&in);
	d.ops->req_free(d.st, req);
	pthread_mutex_lock(&done_mu);
	calls = done_calls;
	pthread_mutex_unlock(&done_mu);
	assert_int_equal(calls, 1);
	assert_non_null(strstr(last(f)->body, "ClientToken=sr-cl-9-2"));

	/* a capacity error comes back through poll */
	reply(f, 500, "<Response><Errors><Error><Code>InsufficientInstanceCapacity"
		      "</Code><Message>none</Message></Error></Errors></Response>");
	assert_int_equal(d.ops->provision(d.st, &l, &req, &err), 0);
	while ((rc = d.ops->poll(d.st, req, &in, &err)) == -EAGAIN)
		usleep(5000);
	assert_int_equal(rc, -ENOSPC);
	assert_int_equal(err.cls, CLOUD_ECAPACITY);
	d.ops->req_free(d.st, req);

	/* bad launch: refused up front, no request */
	l.idem_key = NULL;
	assert_int_equal(d.ops->provision(d.st, &l, &req, &err), -EINVAL);
	assert_null(req);

	reply(f, 200, "<TerminateInstancesResponse " NS "/>");
	assert_int_equal(d.ops->terminate(d.st, ids, 1, &err), 0);
	d.ops->req_free(d.st, NULL);
	d.ops->destroy(d.st);
}

static void test_idem_key_fits(void **state)
{
	struct cloud_tags t = {
		.cluster = "a-very-long-cluster-identifier-that-goes-on-and-on-"
			   "and-on-forever", .node_id = 123456789, .attempt = 17 };
	char key[CLOUD_IDEM_MAX];

	(void)state;
	cloud_idem_key(&t, key);
	assert_true(strlen(key) <= CLOUD_IDEM_MAX - 1);
	assert_int_equal(strncmp(key, "sr-a-very-long", 14), 0);
	assert_string_equal(key + strlen(key) - 13, "-123456789-17");
}

/* Every occurrence of v in script s is a whole single-quoted word, or
 * (quoted_line) the double-quoted path on that line of the quoted
 * here-document: no caller's value reaches the shell unquoted. */
static void assert_quoted(const char *s, const char *v, const char *quoted_line)
{
	size_t n = strlen(v);
	int seen = 0;

	for (const char *p = strstr(s, v); p != NULL; p = strstr(p + 1, v)) {
		const char *bol = p;

		seen++;
		while (bol > s && bol[-1] != '\n')
			bol--;
		if (p > s && p[-1] == '\'' && p[n] == '\'')
			continue;
		assert_non_null(quoted_line);
		assert_int_equal(strncmp(bol, quoted_line, strlen(quoted_line)), 0);
		assert_true(p[-1] == '"' && p[n] == '"');
		/* inside <<'SPOTRUN_EOF' ... SPOTRUN_EOF: no expansion */
		assert_non_null(strstr(s, "<<'SPOTRUN_EOF'\n"));
		assert_true(strstr(s, "<<'SPOTRUN_EOF'\n") < bol);
		assert_true(strstr(s, "\nSPOTRUN_EOF\n") > p);
	}
	assert_true(seen > 0);
}

static void test_bootstrap_user(void **state)
{
	const char *priv[] = { "/srv/spotrun-state", NULL };
	struct sr_err e = { 0 };
	char *s = NULL;
	const char *start;

	(void)state;
	assert_int_equal(ec2_bootstrap_script("/opt/sr/bin/spotrun-agent",
					      "https://a.example:7077,"
					      "https://b.example", 42,
					      "tok_ABC-123-456789", priv, &s, &e), 0);
	assert_quoted(s, "tok_ABC-123-456789", NULL);
	assert_quoted(s, "https://a.example:7077,https://b.example", NULL);
	assert_quoted(s, "/srv/spotrun-state", NULL);
	assert_quoted(s, "/opt/sr/bin/spotrun-agent",
		      "profile spotrun-agent \"");
	/* a real instance makes the user and hands it the node dir and the
	 * bootstrap file; root never runs the agent: the only plain exec is
	 * the emulator's ($u empty) */
	assert_non_null(strstr(s, "  u=spotrun\n"));
	assert_non_null(strstr(s, "useradd --system --user-group "));
	assert_non_null(strstr(s, "chown -R \"$u:$u\" \"$d\"\n"));
	assert_non_null(strstr(s, "chmod 600 \"$d/bootstrap\"\n"));
	assert_non_null(strstr(s, "if [ -z \"$u\" ]; then\n"
				  "  exec \"$@\" >>\"$d/agent.log\" 2>&1\nfi\n"));
	start = strstr(s, "chown -R ");
	assert_non_null(strstr(start, "exec systemd-run --unit=spotrun-agent-42"
				      " --uid=\"$u\" --gid=\"$u\" "));
	assert_non_null(strstr(start, "set -- setpriv --reuid=\"$uid\" "
				      "--regid=\"$gid\" --init-groups -- \"$@\""));
	assert_non_null(strstr(start, "set -- runuser -u \"$u\" -- \"$@\""));
	/* user namespaces for the unprivileged agent */
	assert_non_null(strstr(s, "/proc/sys/kernel/unprivileged_userns_clone"));
	assert_non_null(strstr(s, "/proc/sys/user/max_user_namespaces"));
	assert_non_null(strstr(s, "  userns,\n"));
	free(s);
	/* AppArmor globs, quotes and shell characters in the agent path */
	assert_int_equal(ec2_bootstrap_script("/opt/a*b/agent", "http://127.0.0.1",
					      1, "tok_ABC-123-456789", NULL, &s,
					      &e), -EINVAL);
	assert_non_null(strstr(e.msg, "agent path"));
	assert_int_equal(ec2_bootstrap_script("/opt/a\"b", "http://127.0.0.1",
					      1, "tok_ABC-123-456789", NULL, &s,
					      &e), -EINVAL);
	assert_int_equal(ec2_bootstrap_script("/opt/a{b,c}", "http://127.0.0.1",
					      1, "tok_ABC-123-456789", NULL, &s,
					      &e), -EINVAL);
	assert_null(s);
}

static void test_bootstrap(void **state)
{
	const char *priv[] = { "/srv/spotrun-state", NULL };
	const char *bad[] = { "/tmp/x y", NULL };
	struct sr_err e = { 0 };
	char *s = NULL;

	(void)state;
	assert_int_equal(ec2_bootstrap_script(NULL, "https://ctl.example:7077", 42,
					      "tok_ABC-123-456789", priv, &s, &e), 0);
	/* a one-time bootstrap secret, never a node token (issue 24) */
	assert_non_null(strstr(s, "printf '%s\\n' 'tok_ABC-123-456789' >"
				  "\"$d/bootstrap\""));
	assert_non_null(strstr(s, "set -- '/usr/local/bin/spotrun-agent' --api "
				  "'https://ctl.example:7077' --node-id 42 "
				  "--bootstrap-file \"$d/bootstrap\""));
	/* isolation as on every provider: the node's own dir, cloud-init's
	 * copies of the user-data, the given paths, the emulator's disks */
	assert_non_null(strstr(s, " --private \"$d\" --private /var/lib/cloud"
				  " --private '/srv/spotrun-state'\n"));
	assert_non_null(strstr(s, "--private \"$SPOTRUN_EMU_HIDE\""));
	assert_null(strstr(s, "token"));
	/* the secret is never on the agent's command line */
	assert_null(strstr(strstr(s, "set -- "), "tok_ABC"));
	free(s);
	assert_int_equal(ec2_bootstrap_script(NULL, "http://127.0.0.1", 1,
					      "a'; rm -rf / #################",
					      NULL, &s, &e), -EINVAL);
	assert_null(s);
	assert_string_equal(e.msg, "bootstrap: secret: expected 16..256 "
				   "printable characters without quotes");
	assert_int_equal(ec2_bootstrap_script(NULL, "http://127.0.0.1", 1,
					      "short", NULL, &s, &e), -EINVAL);
	assert_int_equal(ec2_bootstrap_script(NULL, "http://x $(id)", 1, "t",
					      NULL, &s, &e), -EINVAL);
	assert_int_equal(ec2_bootstrap_script("rel/agent", "http://x", 1, "t",
					      NULL, &s, &e), -EINVAL);
	assert_int_equal(ec2_bootstrap_script(NULL, "ftp://x", 1, "t", NULL, &s,
					      &e), -EINVAL);
	assert_int_equal(ec2_bootstrap_script(NULL, "http://127.0.0.1", 1,
					      "tok_ABC-123-456789", bad, &s, &e),
			 -EINVAL);
	assert_non_null(strstr(e.msg, "private path '/tmp/x y'"));
	assert_int_equal(ec2_bootstrap_script(NULL, "http://10.0.0.5:7077", 1,
					      "tok_ABC-123-456789", NULL, &s, &e),
			 -EINVAL);
	assert_non_null(strstr(e.msg, "would send the node's bootstrap secret"));
	assert_int_equal(ec2_bootstrap_script(NULL, "http://127.0.0.1:7077", 1,
					      "tok_ABC-123-456789", NULL, &s, &e), 0);
	free(s);
	/* every daemon sharing the store, leader first: each URL checked */
	assert_int_equal(ec2_bootstrap_script(NULL, "http://127.0.0.1:7077,"
					      "https://b.example:7077", 1,
					      "tok_ABC-123-456789", NULL, &s, &e), 0);
	assert_non_null(strstr(s, "--api 'http://127.0.0.1:7077,"
				  "https://b.example:7077'"));
	free(s);
	assert_int_equal(ec2_bootstrap_script(NULL, "https://a.example,"
					      "http://10.0.0.5:7077", 1,
					      "tok_ABC-123-456789", NULL, &s, &e),
			 -EINVAL);
	assert_non_null(strstr(e.msg, "'http://10.0.0.5:7077': http:// to a host"));
	assert_int_equal(ec2_bootstrap_script(NULL, "https://a.example,,", 1,
					      "tok_ABC-123-456789", NULL, &s, &e),
			 -EINVAL);
	/* the host is curl's: an IPv6 loopback is loopback, a user name
	 * that looks like one is not the host */
	assert_int_equal(ec2_bootstrap_script(NULL, "http://[::1]:7077", 1,
					      "tok_ABC-123-456789", NULL, &s, &e), 0);
	free(s);
	assert_int_equal(ec2_bootstrap_script(NULL, "http://127.0.0.1@10.0.0.5:7077",
					      1, "tok_ABC-123-456789", NULL, &s, &e),
			 -EINVAL);
	assert_non_null(strstr(e.msg, "would send the node's bootstrap secret"));
	assert_int_equal(ec2_bootstrap_script(NULL, "http://", 1,
					      "tok_ABC-123-456789", NULL, &s, &e),
			 -EINVAL);
}

/* Instance-role credentials close to expiry are fetched again before a
 * call is signed. */
static void test_cred_refresh(void **state)
{
	struct fx *f = *state;
	struct sr_testsrv *imds = sr_testsrv_start(0);
	struct ec2_opts o = { .max_retries = 0 };
	const char *ids[] = { "i-1" };
	struct cloud_error err;
	struct sr_err e = { 0 };
	struct ec2 *c = NULL;
	char exp[40], doc[256], v[512];
	const char *role = "/latest/meta-data/iam/security-credentials/r";

	assert_non_null(imds);
	sr_time_format_rfc3339((sr_time_real_ns() / 1000000000 + 60) * 1000000000LL,
			       0, exp, sizeof(exp));
	snprintf(doc, sizeof(doc), "{\"Code\":\"Success\",\"AccessKeyId\":"
		 "\"ASIAROLE1\",\"SecretAccessKey\":\"rolesecret\",\"Token\":"
		 "\"roletoken\",\"Expiration\":\"%s\"}", exp);
	sr_testsrv_reply(imds, "PUT", "/latest/api/token", 200, "text/plain",
			 "tok", 0);
	sr_testsrv_reply(imds, "GET", "/latest/meta-data/iam/security-credentials/",
			 200, "text/plain", "r", 0);
	sr_testsrv_reply(imds, "GET", role, 200, "application/json", doc, 0);
	unsetenv("AWS_ACCESS_KEY_ID");
	unsetenv("AWS_SECRET_ACCESS_KEY");
	unsetenv("AWS_EC2_METADATA_DISABLED");
	setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", sr_testsrv_url(imds), 1);
	assert_int_equal(ec2_open(&o, &c, &e), 0);
	assert_string_equal(ec2_cred_source(c), "instance role r (IMDSv2)");
	assert_int_equal(sr_testsrv_count(imds, "GET", role), 1);
	reply(f, 200, "<TerminateInstancesResponse " NS "/>");
	assert_int_equal(ec2_terminate_instances(c, ids, 1, &err), 0);
	assert_int_equal(sr_testsrv_count(imds, "GET", role), 2);
	assert_int_equal(sr_testsrv_req_header(last(f), "authorization", v,
					       sizeof(v)), 0);
	assert_non_null(strstr(v, "Credential=ASIAROLE1/"));
	assert_non_null(strstr(v, "x-amz-security-token"));
	assert_int_equal(sr_testsrv_req_header(last(f), "x-amz-security-token", v,
					       sizeof(v)), 0);
	assert_string_equal(v, "roletoken");
	ec2_close(c);
	sr_testsrv_stop(imds);
	unsetenv("AWS_EC2_METADATA_SERVICE_ENDPOINT");
}

static void test_loopback_guard(void **state)
{
	struct ec2_opts o = { .endpoint = "https://ec2.us-east-1.amazonaws.com",
			      .region = "us-east-1" };
	struct ec2 *c = (struct ec2 *)1;
	struct sr_err e = { 0 };

	(void)state;
	assert_int_equal(ec2_open(&o, &c, &e), -EPERM);
	assert_null(c);
	assert_non_null(strstr(e.msg, "is not on loopback"));
	unsetenv("AWS_REGION");
	o.region = NULL;
	o.endpoint = "http://127.0.0.1:9";
	assert_int_equal(ec2_open(&o, &c, &e), -SR_ENOTFOUND);
	assert_non_null(strstr(e.msg, "AWS_REGION"));
	ec2_close(NULL);
	/* user:password@ would have gone into the signed Host header */
	o.region = "us-east-1";
	o.endpoint = "http://key:s3cret@127.0.0.1:9";
	assert_int_equal(ec2_open(&o, &c, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "user:password@"));
	assert_null(strstr(e.msg, "s3cret"));
	o.endpoint = "http://127.0.0.1:9/ec2";
	assert_int_equal(ec2_open(&o, &c, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "a path or query is not supported"));
}

static void test_xml_malformed(void **state)
{
	static const char xxe[] =
		"<!DOCTYPE r [<!ENTITY x SYSTEM \"file:///etc/passwd\">]>"
		"<Response><Errors><Error><Code>&x;</Code></Error></Errors>"
		"</Response>";
	struct cloud_instance *v = (void *)1;
	struct cloud_error err;
	char code[32], msg[32];
	size_t n = 5;

	(void)state;
	assert_int_equal(ec2_xml_instances("<a", 2, "r", &v, &n, NULL, 0, &err),
			 -SR_EPARSE);
	assert_null(v);
	assert_int_equal(n, 0);
	assert_string_equal(err.msg, "EC2 answer: not well-formed XML");
	assert_int_equal(ec2_xml_instances(
		"<RunInstancesResponse><instancesSet><item><instanceId>i-1"
		"</instanceId></item></instancesSet></RunInstancesResponse>",
		strlen("<RunInstancesResponse><instancesSet><item><instanceId>i-1"
		       "</instanceId></item></instancesSet></RunInstancesResponse>"),
		"r", &v, &n, NULL, 0, &err), -SR_EPARSE);
	assert_string_equal(err.msg, "EC2 answer: instance item: "
				     "instanceState/name: missing");
	/* an external entity is neither fetched nor expanded */
	assert_int_equal(ec2_xml_error(xxe, strlen(xxe), code, sizeof(code), msg,
				       sizeof(msg)), -SR_EPARSE);
	assert_string_equal(code, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_run_instances, setup, teardown),
		cmocka_unit_test_setup_teardown(test_error_classes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_describe_pages, setup, teardown),
		cmocka_unit_test_setup_teardown(test_terminate_unknown, setup, teardown),
		cmocka_unit_test_setup_teardown(test_prices_and_zones, setup, teardown),
		cmocka_unit_test_setup_teardown(test_driver_async, setup, teardown),
		cmocka_unit_test(test_idem_key_fits),
		cmocka_unit_test(test_price_latest),
		cmocka_unit_test(test_bootstrap),
		cmocka_unit_test(test_bootstrap_user),
		cmocka_unit_test_setup_teardown(test_cred_refresh, setup, teardown),
		cmocka_unit_test_setup_teardown(test_loopback_guard, setup, teardown),
		cmocka_unit_test(test_xml_malformed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
